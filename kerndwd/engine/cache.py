"""Work shared between the fits of one problem: kernel matrices and decompositions.

One :class:`FactorCache` belongs to one set of rows.  The cache of the whole
problem forms the ``n x n`` kernel matrix at most once; the cache of a
cross-validation fold (:meth:`FactorCache.fold`) slices its training block
and its held-out cross-kernel out of that matrix, and keeps the fold's
decompositions (the eigendecomposition of its kernel matrix, of its Gram
matrix, its features) for every q and every one-vs-rest class fitted on it.
A fold's cache is dropped when the fold is done, so only one fold's
decompositions are held at a time.
"""

from __future__ import annotations

import os

import numpy as np
from scipy import linalg

from .kernel_checks import check_kernel_diagonal, check_kernel_matrix, check_semidefinite, kernel_diagonal, quiet_kernel

__all__ = ["FactorCache", "MEMORY_FRACTION", "available_memory", "memory_budget", "single_kernel_matrix"]

#: A kernel matrix kept in memory (``solver="cg"``, a cached ``solver="bcd"``,
#: ``solver="auto"``'s choice) may take this fraction of the memory available
#: when the fit starts, unless the caller sets a budget.
MEMORY_FRACTION = 0.5


def available_memory():
    """Bytes of memory available to a new allocation (``MemAvailable`` of
    ``/proc/meminfo``; elsewhere the free physical pages), or None when unknown.

    Returns
    -------
    int or None
    """
    try:
        with open("/proc/meminfo") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    try:  # systems without /proc
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return None


def gib(nbytes):
    """``nbytes`` in GiB, two significant digits, for messages ("3.7 GiB")."""
    return f"{nbytes / 2**30:.2g} GiB"


def memory_budget(memory=None, unknown=None):
    """Bytes a kernel matrix may take: ``memory`` when given, else
    :data:`MEMORY_FRACTION` of :func:`available_memory` (``unknown`` when that is not known).

    Returns
    -------
    float or None
    """
    if memory is not None:
        return float(memory)
    avail = available_memory()
    return MEMORY_FRACTION * avail if avail is not None else unknown


def keeps(asked, nbytes, memory=None):
    """Whether to keep ``nbytes`` in memory: ``asked`` when the caller said
    (True or False), else whether they fit the memory budget
    (:func:`memory_budget` of ``memory``; False where the memory is not known)."""
    if asked is not None:
        return asked
    budget = memory_budget(memory)
    return budget is not None and nbytes <= budget


def single_kernel_matrix(kern, X):
    """The kernel matrix of the rows ``X`` held in float32 (``kern(X,
    dtype=np.float32)``: formed by blocks of rows in double precision and
    rounded block by block, the float64 matrix never held whole), with
    :func:`~kerndwd.engine.kernel_checks.check_kernel_matrix`'s checks: the
    diagonal on the double values, finiteness on the rounded ones.

    Parameters
    ----------
    kern : Kernel
    X : ndarray, shape (n, p)

    Returns
    -------
    ndarray, shape (n, n), float32
        Equal to ``kern(X).astype(np.float32)``.
    """
    check_kernel_diagonal(kernel_diagonal(kern, X), kern)
    out = quiet_kernel(kern, X, dtype=np.float32)  # an entry beyond float32's range: named below
    if not np.isfinite(out).all():  # an overflow of float32's range, too
        raise ValueError(f"kern={kern!r} overflows on these data: the kernel matrix has entries beyond "
                         "float32's range; use smaller kernel parameters (degree, scale) or rescale X")
    return out


class FactorCache:
    """Memoised work on the rows of one problem.

    Parameters
    ----------
    X : array, shape (n, p), or None
        The problem's rows (None for a fold: its matrices come from the parent).
    kern : Kernel
    parent : FactorCache, optional
        The cache of all rows, when this one holds the subset ``rows`` of it.
    rows : ndarray of int, optional
        The rows of the parent this cache holds.

    Examples
    --------
    >>> import numpy as np, kerndwd
    >>> from kerndwd.engine import FactorCache
    >>> X = np.random.default_rng(0).standard_normal((10, 2))
    >>> cache = FactorCache(X, kerndwd.rbfdot(sigma=1))
    >>> K = cache.kernel_matrix()
    >>> K.shape, cache.kernel_matrix() is K  # formed once, then remembered
    ((10, 10), True)
    >>> fold = cache.fold(np.arange(6))  # a fold's rows: sliced from the parent
    >>> bool(np.array_equal(fold.kernel_matrix(), K[:6, :6]))
    True
    """

    def __init__(self, X, kern, parent=None, rows=None):
        self.X = X
        self.kern = kern
        self.n = X.shape[0] if rows is None else len(rows)
        self._parent = parent
        self._rows = rows
        self._memo = {}

    def memo(self, key, compute):
        """``compute()`` the first time ``key`` is asked for, the stored value after.

        Parameters
        ----------
        key : hashable
            Names the work.
        compute : callable
            Called with no arguments, once.

        Returns
        -------
        object
            What ``compute()`` returned.
        """
        if key not in self._memo:
            self._memo[key] = compute()
        return self._memo[key]

    def kernel_matrix(self, single=False):
        """The kernel matrix of these rows (sliced from the parent's, when there is one).

        Parameters
        ----------
        single : bool, default False
            The matrix in float32: rounded from the float64 one where that is
            already held, else formed without it (:func:`single_kernel_matrix`).

        Returns
        -------
        ndarray, shape (n, n)
        """
        key = "kernel_matrix_float32" if single else "kernel_matrix"
        if single and "kernel_matrix" in self._memo:
            return self.memo(key, lambda: self._memo["kernel_matrix"].astype(np.float32))
        if self._parent is not None:
            rows = self._rows
            return self.memo(key, lambda: self._parent.kernel_matrix(single)[np.ix_(rows, rows)])
        if not single:
            return self.memo(key, lambda: check_kernel_matrix(quiet_kernel(self.kern, self.X), self.kern))
        return self.memo(key, lambda: single_kernel_matrix(self.kern, self.X))

    @property
    def is_fold(self):
        """Whether these rows are a subset of a parent's (a fold's training part)."""
        return self._parent is not None

    def single_only(self):
        """Whether the kernel matrix of all rows (the parent's, for a fold) is held
        in float32 alone, so that a fold's slices are float32 too.

        Returns
        -------
        bool
        """
        root = self._parent if self._parent is not None else self
        return "kernel_matrix_float32" in root._memo and "kernel_matrix" not in root._memo

    def cross_kernel(self, test):
        """A callable returning ``K(X_parent[test], X[rows])`` from the parent's matrix
        (sliced once; the float64 one where it is held, else the float32
        one), or None when no kernel matrix has been formed for these rows
        (their fit needs none).  A fold holds one ``test`` set.

        Parameters
        ----------
        test : ndarray of int
            The parent's held-out rows.

        Returns
        -------
        callable or None
        """
        parent = self._parent
        if parent is None:
            return None
        for single, key in ((False, "kernel_matrix"), (True, "kernel_matrix_float32")):
            if key in self._memo:
                return lambda: self.memo("cross_kernel",
                                         lambda: parent.kernel_matrix(single)[np.ix_(test, self._rows)])
        return None

    def kernel_eigh(self):
        """``linalg.eigh`` of :meth:`kernel_matrix`, checked to be semi-definite.

        Returns
        -------
        eigenvalues, eigenvectors : ndarray
        """
        return self.memo("kernel_eigh", lambda: check_semidefinite(linalg.eigh(self.kernel_matrix()), self.kern))

    def fold(self, rows):
        """The cache of the subset ``rows`` of these rows (a fold's training part).

        Parameters
        ----------
        rows : ndarray of int
            Row indices into these rows.

        Returns
        -------
        FactorCache
        """
        return FactorCache(None, self.kern, parent=self, rows=rows)

    def release(self):
        """Forget the memoised work (a fold is done)."""
        self._memo.clear()
