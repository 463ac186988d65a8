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

import numpy as np
from scipy import linalg

__all__ = ["FactorCache", "check_kernel_matrix", "check_semidefinite"]

#: How far from 1 the computed diagonal of a stationary kernel (k(x, x) = 1)
#: may be.  The squared distance of a row to itself is formed as
#: |x|^2 + |x|^2 - 2 <x, x> (kernlab's order), which rounds to about
#: eps |x|^2; times sigma that must stay negligible, or every entry of the
#: matrix carries an error of the same size.
UNIT_DIAGONAL_RTOL = 1e-8

#: Smallest eigenvalue, relative to the largest in magnitude, that still
#: counts as rounding of a positive semi-definite matrix.  Measured: near-
#: duplicate rows under kernlab's rounding of distances (Laplace, Bessel
#: kernels) reach -4e-9; an indefinite kernel (splinedot() on data outside
#: [0, 1]) reaches -0.2.
NEGATIVE_EIGENVALUE_RTOL = 1e-6


def quiet_kernel(kern, x, y=None):
    """``kern(x, y)`` with numpy's overflow warnings held back: the result is
    checked (:func:`check_kernel_matrix`, or the predictor's finiteness test)
    and a clear error names the kernel instead."""
    with np.errstate(over="ignore", invalid="ignore", under="ignore"):
        return kern(x, y)


def check_kernel_matrix(K, kern):
    """Raise ``ValueError`` naming ``kern`` when its matrix on these data is not
    usable: non-finite entries (overflow), or a stationary kernel whose
    diagonal is not 1 (the data's scale defeats double precision)."""
    if not np.isfinite(K).all():
        raise ValueError(f"kern={kern!r} overflows on these data: the kernel matrix has non-finite entries; "
                         "use smaller kernel parameters (degree, scale) or rescale X")
    if getattr(kern, "unit_diagonal", False):
        err = float(np.abs(np.diagonal(K) - 1.0).max())
        if err > UNIT_DIAGONAL_RTOL:
            raise ValueError(f"kern={kern!r} cannot be formed accurately on these data: k(x, x) should be 1 "
                             f"but is off by {err:.2g} (sigma times the squared norms of the rows is beyond what "
                             "double precision resolves); use a smaller sigma or rescale X")
    return K


def check_semidefinite(eig, kern):
    """``eig = (e, U)`` unchanged, or ``ValueError`` naming ``kern`` when the
    kernel matrix is indefinite (DWD's penalty ``alpha' K alpha`` would be
    unbounded below)."""
    e = eig[0]
    scale = max(float(np.abs(e).max()), np.finfo(float).tiny)
    if e.min() < -NEGATIVE_EIGENVALUE_RTOL * scale:
        raise ValueError(f"the kernel matrix of kern={kern!r} on these data is not positive semi-definite "
                         f"(smallest eigenvalue {e.min():.3g}, largest {e.max():.3g}): DWD needs a positive "
                         "semi-definite kernel. splinedot() is one only for data in [0, 1]; check the kernel "
                         "and the scale of X")
    return eig


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
