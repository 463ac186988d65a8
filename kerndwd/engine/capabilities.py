"""What each design and each path solver supports, declared once.

A design declares a :class:`DesignCapabilities` (for the kernel and the
storage of the rows it is asked to fit), a path solver a
:class:`SolverCapabilities`.  The one compatibility check,
:func:`kerndwd.engine.compatibility.resolve`, reads both, fills in the
defaults the caller left out and refuses, naming the argument, what the
declarations do not allow; no other part of the engine or of the faces
decides whether a combination runs.  The combination test
(``tests/test_combinations.py``) generates its grid from the same
declarations, so a new design or solver is covered the day it is registered.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import sparse

from .chunked import is_dask_collection

__all__ = ["STORAGE_KINDS", "STOP_RULES", "DEFAULT_EPS", "DesignCapabilities", "SolverCapabilities", "storage_of"]

#: How the rows of ``X`` are held: a dense array in memory (float32, pandas and
#: lists of numbers are converted to float64 where they enter), a scipy
#: sparse matrix, or a Dask array whose chunks stay on a cluster.
STORAGE_KINDS = ("dense", "sparse", "remote")

#: Stopping rules: R's (squared norm of the MM step below ``eps``) and a real
#: optimality criterion (norm of the gradient of ``F`` below ``eps``).
STOP_RULES = ("step", "kkt")

#: ``eps`` when the caller gives none, by stopping rule.
DEFAULT_EPS = {"step": 1e-5, "kkt": 1e-5}


def storage_of(X):
    """The storage kind of validated rows ``X`` (one of :data:`STORAGE_KINDS`).

    Examples
    --------
    >>> import numpy as np
    >>> storage_of(np.ones((2, 2)))
    'dense'
    """
    if type(X) is np.ndarray:  # what the input layer makes of rows in memory, found at once
        return "dense"
    if sparse.issparse(X):
        return "sparse"
    if is_dask_collection(X):
        return "remote"
    return "dense"


@dataclass(frozen=True)
class DesignCapabilities:
    """What a design can fit (for one kernel and one storage of the rows).

    Attributes
    ----------
    storage : tuple of str
        The storage kinds of ``X`` it takes (:data:`STORAGE_KINDS`).
    solvers : tuple of str
        The path solvers its majorisers support (their Newton system, say).
    kernels : tuple of str or None
        The kernel names it serves (None: every kernel).
    weights : bool
        Whether it fits observation weights.
    float32 : bool
        Whether it can store its basis in float32 (the ``dtype`` option).
    kernel_checks : bool
        Whether it evaluates the kernel on the rows, and so applies the exact
        solver's checks to it (:mod:`kerndwd.engine.kernel_checks`).
    default_stop : str
        The stopping rule when the caller names none: R's ``"step"`` where R
        fits the same model, the gradient rule ``"kkt"`` elsewhere.

    Examples
    --------
    >>> import kerndwd
    >>> from kerndwd import engine
    >>> caps = engine.make_design("bcd", {}).capabilities(kerndwd.rbfdot(1.0), "dense")
    >>> caps.storage, caps.solvers, caps.default_stop
    (('dense',), ('mm',), 'kkt')
    """

    storage: tuple = ("dense",)
    solvers: tuple = ("newton", "mm")
    kernels: tuple | None = None
    weights: bool = True
    float32: bool = False
    kernel_checks: bool = False
    default_stop: str = "kkt"


@dataclass(frozen=True)
class SolverCapabilities:
    """What a path solver can run.

    Attributes
    ----------
    stop_rules : tuple of str
        The stopping rules it implements.
    storage : tuple of str
        The storage kinds of the rows it runs on.
    momentum : bool
        Whether it takes the momentum option ``accelerate``.
    fallback : str or None
        The path solver the template hands a lambda to when this one stops
        short of ``eps`` (its rounding guard); it continues from this one's
        last iterate, within the same budget.

    Examples
    --------
    >>> from kerndwd import engine
    >>> caps = engine.solver_capabilities("newton")
    >>> caps.stop_rules, caps.storage, caps.fallback
    (('kkt',), ('dense', 'sparse'), 'mm')
    """

    stop_rules: tuple = STOP_RULES
    storage: tuple = STORAGE_KINDS
    momentum: bool = False
    fallback: str | None = None
