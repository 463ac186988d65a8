"""The checks every design that evaluates a kernel applies to it.

A kernel matrix is usable when its entries are finite, when a stationary
kernel's diagonal ``k(x, x) = 1`` is computed to within
:data:`UNIT_DIAGONAL_RTOL` (else the scale of the rows defeats double
precision and every entry carries an error of that size), and when it is
positive semi-definite to rounding (DWD's penalty ``alpha' K alpha`` is
unbounded below otherwise).  The exact solver checks the full matrix it
forms; designs that never form it (block coordinate descent, Nystrom
features) check the diagonal on every row and definiteness on a principal
submatrix (:func:`check_kernel_rows`): a principal submatrix of a positive
semi-definite matrix is positive semi-definite, so an indefinite one proves
the whole matrix indefinite.
"""

from __future__ import annotations

import numpy as np
from scipy import linalg

__all__ = ["quiet_kernel", "check_kernel_matrix", "check_semidefinite", "check_kernel_rows", "check_kernel_parts",
           "check_sampled_definite", "check_definite", "check_kernel_diagonal", "kernel_diagonal",
           "UNIT_DIAGONAL_RTOL", "NEGATIVE_EIGENVALUE_RTOL", "DEFINITENESS_SAMPLE"]

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


def quiet_kernel(kern, x, y=None, dtype=np.float64):
    """``kern(x, y, dtype=dtype)`` with numpy's overflow warnings held back: the
    result is checked (:func:`check_kernel_matrix`, or the predictor's
    finiteness test) and a clear error names the kernel instead."""
    with np.errstate(over="ignore", invalid="ignore", under="ignore"):
        # a Kernel subclass with a __call__ of its own may not take dtype: asked only for float32
        return kern(x, y) if dtype == np.float64 else kern(x, y, dtype=dtype)


def check_kernel_matrix(K, kern):
    """Raise ``ValueError`` naming ``kern`` when its matrix on these data is not
    usable: non-finite entries (overflow), or a stationary kernel whose
    diagonal is not 1 (the data's scale defeats double precision)."""
    if not np.isfinite(K).all():
        raise ValueError(f"kern={kern!r} overflows on these data: the kernel matrix has non-finite entries; "
                         "use smaller kernel parameters (degree, scale) or rescale X")
    check_kernel_diagonal(np.diagonal(K), kern)
    return K


def check_kernel_diagonal(diag, kern):
    """The diagonal half of :func:`check_kernel_matrix`, on ``k(x_i, x_i)`` alone:
    finite, and 1 to :data:`UNIT_DIAGONAL_RTOL` for a stationary kernel."""
    if not np.isfinite(diag).all():
        raise ValueError(f"kern={kern!r} overflows on these data: k(x, x) is not finite on some rows; "
                         "use smaller kernel parameters (degree, scale) or rescale X")
    if kern.unit_diagonal:
        err = float(np.abs(diag - 1.0).max())
        if err > UNIT_DIAGONAL_RTOL:
            raise ValueError(f"kern={kern!r} cannot be formed accurately on these data: k(x, x) should be 1 "
                             f"but is off by {err:.2g} (sigma times the squared norms of the rows is beyond what "
                             "double precision resolves); use a smaller sigma or rescale X")


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


#: Rows of the principal submatrix whose definiteness :func:`check_kernel_rows`
#: checks (an eigendecomposition of that size, about 0.1 s).
DEFINITENESS_SAMPLE = 1000


def kernel_diagonal(kern, X, rows=128):
    """``k(x_i, x_i)`` for every row of ``X``, from small diagonal blocks of the kernel
    (the same arithmetic as the diagonal of the full matrix)."""
    n = X.shape[0]
    out = np.empty(n)
    for start in range(0, n, rows):
        block = X[start:start + rows]
        out[start:start + len(block)] = np.diagonal(quiet_kernel(kern, block))
    return out


def _sample(n):
    """Rows spread evenly over ``range(n)``, at most :data:`DEFINITENESS_SAMPLE` of them."""
    return np.unique(np.linspace(0, n - 1, min(n, DEFINITENESS_SAMPLE)).astype(int))


def check_definite(K, kern):
    """``ValueError`` naming ``kern`` when the kernel matrix ``K`` (or its principal
    submatrix on :data:`DEFINITENESS_SAMPLE` rows spread evenly over it) is
    indefinite beyond rounding; nothing for a kernel that is positive
    semi-definite on every input (``kern.always_psd``).

    Parameters
    ----------
    K : ndarray, shape (m, m)
        A kernel matrix of ``kern`` (already checked finite).
    kern : Kernel
    """
    if kern.always_psd:
        return
    rows = _sample(K.shape[0])
    # in double precision, whatever K's (a float32 matrix's eigenvalues would carry 1e-7 of rounding)
    check_semidefinite((linalg.eigvalsh(np.asarray(K[np.ix_(rows, rows)], dtype=float)), None), kern)


def check_kernel_rows(kern, X):
    """The checks of :func:`check_kernel_matrix` and :func:`check_definite` for a
    design that does not form the whole kernel matrix of the rows ``X``: the
    diagonal on every row (finite, and 1 for a stationary kernel), and
    definiteness on the principal submatrix of :data:`DEFINITENESS_SAMPLE`
    rows spread evenly over ``X``.

    Parameters
    ----------
    kern : Kernel
    X : ndarray, shape (n, p)
        The rows (in memory).

    Raises
    ------
    ValueError
        Naming ``kern``, as the exact solver's checks do.
    """
    check_kernel_parts(kern, kernel_diagonal(kern, X), lambda rows: X[rows], X.shape[0])


def check_kernel_parts(kern, diagonal, rows_at, n):
    """:func:`check_kernel_rows` from its parts, for rows that live elsewhere (a
    Dask cluster): ``diagonal``, ``k(x_i, x_i)`` on all ``n`` rows, and
    ``rows_at(indices)``, the rows at sorted indices (only the sampled ones
    are asked for, and only for a kernel that is not always positive
    semi-definite).

    Parameters
    ----------
    kern : Kernel
    diagonal : ndarray, shape (n,)
    rows_at : callable
    n : int

    Raises
    ------
    ValueError
        Naming ``kern``, as :func:`check_kernel_rows`.
    """
    check_kernel_diagonal(diagonal, kern)
    if not kern.always_psd:
        check_definite(check_kernel_matrix(quiet_kernel(kern, rows_at(_sample(n))), kern), kern)


def check_sampled_definite(K, kern):
    """The definiteness part of :func:`check_kernel_rows` for a kernel matrix
    already formed (and checked by :func:`check_kernel_matrix`): on its
    principal submatrix of :data:`DEFINITENESS_SAMPLE` rows spread evenly,
    without evaluating the kernel again.

    Parameters
    ----------
    K : ndarray, shape (n, n)
    kern : Kernel

    Raises
    ------
    ValueError
        Naming ``kern``, as the exact solver's checks do.
    """
    if not kern.always_psd:
        rows = _sample(K.shape[0])
        check_definite(K[np.ix_(rows, rows)], kern)

