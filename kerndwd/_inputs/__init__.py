"""The input layer: every face's input is validated here, once, into one :class:`Problem`.

``kerndwd.fit``, ``cv``, ``tune``, ``predict`` and both estimators validate
their data with :func:`check_data` or :func:`check_classifier_data` (or
:func:`check_matrix` for new rows) and their other arguments with
:func:`build_problem`, which reads the declared capabilities of the design
and the path solver through the engine's one compatibility check
(:func:`kerndwd.engine.resolve`).  The same bad input therefore gets the same message
from every face.  Each entry sends rows in memory (dense, sparse or
pandas) and a Dask collection to their readers in :mod:`.rows` (which
checks a Dask collection's rows, labels and weights lazily and places them
on the workers once), whose labels and weights follow the rules of
:mod:`.data`; the scalar arguments are checked by :mod:`.arguments`, the
kernel, the design and the problem by :mod:`.settings`.

Every error names the argument, with the face's own name for it (``lambd``
and ``max_iter`` for the estimators).  Nothing here modifies its input:
arrays are converted (and copied where a conversion is needed), never
written to.
"""

from __future__ import annotations

from .arguments import (MAX_LAMBDA, QVAL_RANGE, check_flag, check_kernel, check_lambdas, check_n_jobs,
                        check_positive_sequence, check_qval, check_qvals, seed_of)
from .data import Data
from .rows import (MAX_ABS_X, binary_data, check_classifier_data, check_dask_matrix, check_weights,
                   dask_binary_data, encode_labels, float_matrix)
from ..engine.chunked import is_dask_collection
from .settings import KERNELS, KernelSpec, Settings, build_problem, is_precomputed, precomputed_rows

__all__ = ["check_matrix", "check_data", "encode_labels", "check_weights", "check_lambdas", "check_qval",
           "check_qvals", "check_n_jobs", "check_flag", "check_kernel", "check_positive_sequence", "Data", "Settings",
           "KernelSpec", "build_problem", "check_classifier_data", "seed_of", "MAX_ABS_X",
           "MAX_LAMBDA", "QVAL_RANGE", "KERNELS", "is_precomputed", "precomputed_rows"]


def check_matrix(X, name="X"):
    """Validated rows: a finite 2-D float64 array (C order) from an array, a list or
    a pandas DataFrame; a CSR matrix of floats from a scipy sparse matrix (which
    designs take it is the compatibility check's: the message names ``X``); a
    lazy Dask array from a Dask collection (new rows to predict: their values
    are checked in each chunk's task).

    Parameters
    ----------
    X : array_like, DataFrame, sparse matrix or Dask collection
    name : str
        The argument's name, for the errors.

    Returns
    -------
    ndarray, scipy.sparse.csr_matrix or dask.array.Array
    """
    if not is_dask_collection(X):
        return float_matrix(X, name)
    return check_dask_matrix(X, name)


def check_data(X, y, wt=None, *, names=None):
    """The data of ``fit``, ``cv`` and ``tune`` (binary DWD): rows, two labels
    mapped to -1/+1 in R's order, and optional weights.

    Parameters
    ----------
    X : array_like, DataFrame, sparse matrix or Dask collection, shape (n, p)
    y : array_like, Series or Dask collection, shape (n,)
    wt : array_like, Dask collection or None
    names : dict, optional
        The face's names for ``"X"``, ``"y"``, ``"wt"``.

    Returns
    -------
    Data
    """
    names = {"X": "X", "y": "y", "wt": "wt", **(names or {})}
    if not is_dask_collection(X):
        return binary_data(X, y, wt, names)
    return dask_binary_data(X, y, wt, names)
