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

from .kernel_checks import check_kernel_matrix, check_semidefinite, quiet_kernel

__all__ = ["FactorCache", "MEMORY_FRACTION", "available_memory", "memory_budget"]

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


def keeps(asked, nbytes):
    """Whether to keep ``nbytes`` in memory: ``asked`` when the caller said
    (True or False), else whether they fit the memory budget
    (:func:`memory_budget`; False where the memory is not known)."""
    if asked is not None:
        return asked
    budget = memory_budget()
    return budget is not None and nbytes <= budget


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

    def kernel_matrix(self):
        """The kernel matrix of these rows (sliced from the parent's, when there is one).

        Returns
        -------
        ndarray, shape (n, n)
        """
        if self._parent is None:
            return self.memo("kernel_matrix", lambda: check_kernel_matrix(quiet_kernel(self.kern, self.X), self.kern))
        rows = self._rows
        return self.memo("kernel_matrix", lambda: self._parent.kernel_matrix()[np.ix_(rows, rows)])

    def cross_kernel(self, test):
        """A callable returning ``K(X_parent[test], X[rows])`` from the parent's matrix
        (sliced once), or None when no kernel matrix has been formed for these
        rows (their fit needs none).  A fold holds one ``test`` set.

        Parameters
        ----------
        test : ndarray of int
            The parent's held-out rows.

        Returns
        -------
        callable or None
        """
        parent = self._parent
        if parent is None or "kernel_matrix" not in self._memo:
            return None
        return lambda: self.memo("cross_kernel", lambda: parent.kernel_matrix()[np.ix_(test, self._rows)])

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
