"""Linear and feature designs on a row-chunked Dask array: the rows stay on the workers.

* the basis ``B``: ``X`` itself for linear DWD, or the features
  ``Phi = phi(X)`` of a feature design, formed chunk by chunk by the fitted
  map's ``transform`` and persisted (:func:`dask_feature_matrix`); never
  gathered;
* :class:`DaskLinearForm` gives the linear-form methods of
  :mod:`kerndwd.engine.forms`: products that yield ``k + 1`` (or
  ``(k + 1)^2``) numbers are reductions over the row chunks, computed at
  once; products that yield ``n`` numbers are
  :class:`~kerndwd.engine.chunked.ChunkedRows`.  Its :meth:`~DaskLinearForm.keep_rows`,
  which the MM iteration calls on each new iterate's ``f``, stores it on the
  workers by the next reduction that reads it.  A pass under R's rule is
  thus one task per chunk (``f = f + Z step``, stored, and the partial sums
  of ``Z'z`` at it), run on the worker that holds the chunk, and a tree sum:
  the coefficients travel to the workers inside the tasks, and ``k + 1``
  numbers per chunk travel back.  The linear majorisers solve their
  ``(k + 1)`` system on the client, unchanged: a fit on a cluster runs the
  MM iteration of a fit in memory, and only the order of the floating-point
  sums differs;
* :func:`dask_decision`: decision values at Dask rows, lazy, one task per row chunk.
"""

from __future__ import annotations

import warnings

import numpy as np

from ..chunked import ChunkedRows, row_expression, is_dask_collection, reduce_rows, require_dask
from ..forms import LinearForm

__all__ = ["DaskLinearForm", "DaskRowsView", "dask_feature_matrix", "map_input", "dask_decision"]


# --------------------------------------------------------------------------
# the linear form of a Dask basis
# --------------------------------------------------------------------------
def _ztz_block(b, z):
    """``[sum(z); b'z]`` of one chunk (one column per column of ``z``)."""
    out = np.empty((b.shape[1] + 1,) + np.shape(z)[1:])
    out[0] = z.sum(axis=0)
    out[1:] = b.T @ z
    return out


def _gram_block(b, w=None):
    """``[1, b]' W [1, b]`` of one chunk (``W = I`` when ``w`` is None)."""
    b = np.asarray(b, dtype=float)
    k = b.shape[1]
    G = np.empty((k + 1, k + 1))
    if w is None:
        G[0, 0] = b.shape[0]
        G[0, 1:] = b.sum(axis=0)
        G[1:, 1:] = b.T @ b
    else:
        wb = b * w[:, None]
        G[0, 0] = w.sum()
        G[0, 1:] = wb.sum(axis=0)
        G[1:, 1:] = b.T @ wb
    G[1:, 0] = G[0, 1:]
    return G


def _sq_norms_block(b, w):
    """``[sum(w); sum_i w_i b_ij^2]`` of one chunk."""
    b = np.asarray(b, dtype=float)
    return np.concatenate(([w.sum()], (b * b).T @ w))


class DaskLinearForm(LinearForm):
    """``f = b0 + B theta``, ``||f||^2 = theta' theta``, for a row-chunked Dask array ``B``.

    Every product that yields ``k + 1`` (or ``(k + 1)^2``) numbers is a
    reduction over the row chunks, computed at once (one task per chunk and
    a tree sum of the partials); every product that yields ``n`` numbers is
    a :class:`ChunkedRows` (nothing computed).  ``B`` should be persisted (every
    pass reads it) and must have one column chunk and known row chunks.

    Parameters
    ----------
    B : dask.array.Array, shape (n, k)
        The basis: the validated ``X`` (linear DWD) or the features ``phi(X)``
        (any float dtype; each chunk is upcast to float64 in its own task).

    Raises
    ------
    ValueError
        ``B`` has unknown row chunks or more than one column chunk.
    ImportError
        Dask is not installed.

    Examples
    --------
    >>> import numpy as np, dask.array as da
    >>> form = DaskLinearForm(da.from_array(np.arange(6.0).reshape(3, 2), chunks=(2, 2)))
    >>> form.ztmul(ChunkedRows.from_dask(da.ones(3, chunks=2)))
    array([3., 6., 9.])
    >>> form.zmul(np.array([1.0, 1.0, 0.0])).compute()
    array([1., 3., 5.])
    """

    def __init__(self, B):
        require_dask()
        if len(B.chunks[1]) != 1 or any(np.isnan(c) for c in B.chunks[0]):
            raise ValueError("DaskLinearForm needs B with known row chunks and a single column chunk")
        super().__init__(B)
        self._leaves = {B.name: B}
        self._basis = ("leaf", B.name)
        self.chunks = tuple(int(c) for c in B.chunks[0])

    def _rows(self, v):
        """``(expr, leaves)`` of a per-row vector with the basis among the leaves."""
        expr, leaves, _ = row_expression(v, dict(self._leaves), self.n)
        return expr, leaves

    def apply(self, theta):
        """``B theta`` as :class:`ChunkedRows` (nothing computed)."""
        theta = np.asarray(theta, dtype=float)
        return ChunkedRows(("matvec", self.B.name, theta), self._leaves, self.chunks,
                           ncols=None if theta.ndim == 1 else theta.shape[1])

    def apply_t(self, z):
        """``B' z`` (computed)."""
        return self.ztmul(z)[1:]

    def ztmul(self, z):
        """``Z' z = [sum(z); B' z]`` (computed: one task per chunk evaluates ``z`` and
        its partial sums)."""
        expr, leaves = self._rows(z)
        return reduce_rows(_ztz_block, (self._basis, expr), leaves, self.chunks, prefix="ztz")

    def gram(self, weights=None):
        """``Z'WZ`` (computed: ``(k+1)^2`` partial sums per chunk)."""
        if weights is None:
            return reduce_rows(_gram_block, (self._basis,), self._leaves, self.chunks, prefix="gram")
        expr, leaves = self._rows(weights)
        return reduce_rows(_gram_block, (self._basis, expr), leaves, self.chunks, prefix="gram")

    def weighted_sq_norms(self, weights):
        """Diagonal of ``Z'WZ`` (computed)."""
        expr, leaves = self._rows(weights)
        return reduce_rows(_sq_norms_block, (self._basis, expr), leaves, self.chunks, prefix="sqnorms")

    def keep_rows(self, v):
        """Keep the per-row vector ``v`` on the workers: the MM loop calls this on
        each new iterate's decision values, so that the expression they came from
        is evaluated once and never grows.  They are stored by the next
        reduction that reads them (the next pass's ``Z'z``, or the objective),
        inside its task per chunk: a pass is one task per chunk."""
        return v.keep()


# --------------------------------------------------------------------------
# feature maps on a cluster
# --------------------------------------------------------------------------
class DaskRowsView:
    """What a feature design's ``fitted_map`` receives for a Dask ``X``.

    It offers ``shape``, ``ndim``, ``dtype``, ``len()`` and row indexing:
    ``view[rows]`` (an integer array, a slice or a boolean mask) gathers just
    those rows to the client as a numpy array, which is how a map is fitted
    "from what it needs" (landmarks drawn from the rows, say).  Converting
    the whole view to an array (``np.asarray(view)``) gathers every row and
    warns, since that defeats keeping the rows on the cluster.

    Parameters
    ----------
    X : dask.array.Array, shape (n, p)
        The validated rows (on the cluster).

    Examples
    --------
    >>> import numpy as np, dask.array as da
    >>> view = DaskRowsView(da.from_array(np.arange(8.0).reshape(4, 2), chunks=(2, 2)))
    >>> view[np.array([3, 0])]
    array([[6., 7.],
           [0., 1.]])
    """

    def __init__(self, X):
        self._X = X  # the validated Dask array (see the class docstring for the parameter)
        self.shape = X.shape
        self.ndim = X.ndim
        self.dtype = X.dtype
        self.size = X.size

    def __len__(self):
        return self.shape[0]

    def __getitem__(self, key):
        rows = key[0] if isinstance(key, tuple) else key
        rest = key[1:] if isinstance(key, tuple) else ()
        if np.isscalar(rows):  # one row: a vector, indexed by the rest as it is
            out = self._X[rows].compute()
            return out[rest] if rest else out
        if isinstance(rows, slice):
            out = self._X[rows].compute()
        else:
            rows = np.asarray(rows)
            if rows.dtype == bool:
                rows = np.flatnonzero(rows)
            # dask slices sorted indices chunk by chunk; restore the asked order afterwards
            order, inverse = np.unique(rows, return_inverse=True)
            out = self._X[order].compute()[inverse.reshape(-1)]
        return out[(slice(None),) + rest] if rest else out

    def __array__(self, dtype=None, copy=None):
        warnings.warn(
            f"a feature map was fitted on all {self.shape[0]} rows of a Dask X gathered to the client; "
            "fit it from a sample of the rows to keep them on the cluster", UserWarning, stacklevel=2)
        out = self._X.compute()
        return out if dtype is None else out.astype(dtype, copy=False)


def map_input(X):
    """What a feature design's ``fitted_map`` receives for the rows ``X``.

    Parameters
    ----------
    X : ndarray, sparse matrix or dask.array.Array
        The problem's rows.

    Returns
    -------
    ndarray, sparse matrix or DaskRowsView
        ``X`` itself, or a :class:`DaskRowsView` of a Dask ``X``.

    Examples
    --------
    >>> import numpy as np
    >>> X = np.ones((2, 2))
    >>> map_input(X) is X
    True
    """
    return DaskRowsView(X) if is_dask_collection(X) else X


def _transform_block(block, fmap):
    return fmap.transform(block)


def dask_feature_matrix(fmap, X):
    """The features ``Phi = fmap.transform(X)``, formed chunk by chunk on the workers and kept there.

    The fitted map enters the graph once, as one shared value, not once per
    chunk; its ``transform`` is probed on one row for the number of features
    and their dtype.

    Parameters
    ----------
    fmap : object
        A fitted feature map: ``transform(rows)`` returns shape (len(rows), m).
    X : dask.array.Array, shape (n, p)
        Validated rows, one column chunk.

    Returns
    -------
    dask.array.Array, shape (n, m)
        Persisted, chunked like ``X``'s rows, in the map's dtype.

    Raises
    ------
    ValueError
        The transform does not return one row of features per row.

    Examples
    --------
    >>> import numpy as np, dask.array as da
    >>> class Squares:
    ...     def transform(self, rows):
    ...         return rows ** 2
    >>> dask_feature_matrix(Squares(), da.from_array(np.arange(4.0).reshape(2, 2), chunks=(1, 2))).compute()
    array([[0., 1.],
           [4., 9.]])
    """
    import dask

    require_dask()
    probe = np.asarray(fmap.transform(X[:1].compute()))
    if probe.ndim != 2 or probe.shape[0] != 1:
        raise ValueError(f"the feature map's transform returned shape {probe.shape} for one row; expected (1, m)")
    shared_map = dask.delayed(fmap, pure=True)
    Phi = X.map_blocks(_transform_block, shared_map, chunks=(X.chunks[0], (probe.shape[1],)), dtype=probe.dtype,
                       meta=np.empty((0, 0), dtype=probe.dtype))
    return Phi.persist()


# --------------------------------------------------------------------------
# prediction on Dask rows
# --------------------------------------------------------------------------
def _decision_block(block, predictor, alpha):
    return predictor.decision(block, alpha)


def dask_decision(predictor, newx, alpha):
    """Decision values at Dask rows: ``predictor.decision`` applied chunk by chunk.

    Parameters
    ----------
    predictor : Predictor
        What a fitted path stores (:class:`kerndwd.engine.predictors.Predictor`);
        it enters the graph once, as one shared value.
    newx : dask.array.Array, shape (m, p)
    alpha : ndarray, shape (ncoef, L)
        Intercept-first coefficients, one column per lambda.

    Returns
    -------
    dask.array.Array, shape (m, L)
        Lazy, one task per row chunk of ``newx``, chunked like its rows.

    Examples
    --------
    >>> import numpy as np, dask.array as da
    >>> from kerndwd.engine.predictors import LinearPredictor
    >>> newx = da.from_array(np.array([[1.0, 2.0], [3.0, 4.0]]), chunks=(1, 2))
    >>> dask_decision(LinearPredictor(2), newx, np.array([[0.5], [1.0], [-1.0]])).compute()
    array([[-0.5],
           [-0.5]])
    """
    import dask

    require_dask()
    alpha = np.asarray(alpha, dtype=float)
    shared = dask.delayed(predictor, pure=True)
    return newx.map_blocks(_decision_block, shared, alpha, chunks=(newx.chunks[0], (alpha.shape[1],)),
                           dtype=float, meta=np.empty((0, 0)))
