"""Property tests of the kernels: the RKHS formulation of Section 4 (eq. 4.1,
4.2) needs a symmetric positive semidefinite kernel matrix ``K``.

Points are drawn by hypothesis (``n <= 20`` rows, ``p <= 6`` columns, on
``[-3, 3]``; the spline kernel, meant for scaled data, on ``[0, 1]``),
including repeated and nearly repeated rows.  "Positive semidefinite" is
checked as ``min eigenvalue >= -1e-10 * max eigenvalue``: the eigenvalues
of a symmetric matrix are computed to about ``1e-16 * ||K||``, so this is
six orders of magnitude above rounding.
"""

from unittest import mock

import numpy as np
import pytest
from hypothesis import example, given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from scipy.spatial import distance

import kerndwd
from kerndwd import kernels

sigmas = st.floats(min_value=-2.0, max_value=1.0).map(lambda e: float(10.0**e))
degrees = st.integers(1, 4)


@st.composite
def points(draw, lo=-3.0, hi=3.0, n_max=20, p_max=6):
    n = draw(st.integers(1, n_max))
    p = draw(st.integers(1, p_max))
    return draw(hnp.arrays(np.float64, (n, p), elements=st.floats(lo, hi, allow_nan=False)))


@st.composite
def psd_kernels(draw, p):
    """One of the kernels that are positive definite functions on ``R^p``.

    The Bessel kernel ``J_nu(sigma d) / (sigma d)^nu`` is positive definite on
    ``R^p`` when ``nu >= (p - 2)/2`` (Schoenberg); its ``degree``-th power is then
    too (Schur product), so the order is drawn from that range."""
    which = draw(st.sampled_from(["rbf", "laplace", "anova", "bessel"]))
    sigma = draw(sigmas)
    if which == "rbf":
        return kerndwd.rbfdot(sigma)
    if which == "laplace":
        return kerndwd.laplacedot(sigma)
    if which == "anova":
        return kerndwd.anovadot(sigma, draw(degrees))
    order = max(0.0, (p - 2) / 2) + draw(st.sampled_from([0.0, 0.5, 1.0, 2.5]))
    return kerndwd.besseldot(sigma, order, draw(degrees))


def all_kernels(draw):
    return draw(st.sampled_from([
        kerndwd.vanilladot(), kerndwd.rbfdot(draw(sigmas)), kerndwd.laplacedot(draw(sigmas)),
        kerndwd.polydot(draw(degrees), draw(sigmas), draw(st.floats(0.0, 2.0))),
        kerndwd.besseldot(draw(sigmas), draw(st.sampled_from([0.0, 0.5, 1.0, 3.0])), draw(degrees)),
        kerndwd.anovadot(draw(sigmas), draw(degrees)), kerndwd.splinedot(),
    ]))


def assert_psd(K):
    ev = np.linalg.eigvalsh(K)
    assert ev[0] >= -1e-10 * max(ev[-1], 0.0), (ev[0], ev[-1])


def rounding_tol(kern, X):
    """Largest absolute difference two evaluations of one kernel entry may show
    when the same numbers are combined in a different order (``x y'`` by a
    different BLAS call, ``|x|^2 + |y|^2`` summed the other way round):

    * rbf: an error of a few ulp of ``|x|^2`` in the exponent, times ``2 sigma``;
    * laplace, Bessel: kernlab rounds ``d^2`` to 9 decimals, so a last-bit
      difference can move ``d^2`` by ``1e-9`` and ``d`` by up to ``sqrt(1e-9)``;
      both kernels are ``sigma``-Lipschitz in ``d`` (per power of ``degree``);
    * vanilla, polynomial: a few ulp of ``p |x| |y|`` through ``(.)^degree``;
    * anova, spline: elementwise in each pair, the same order either way: 0.
    """
    eps = np.finfo(float).eps
    r2 = float(np.max(np.sum(X * X, axis=1)))
    p = X.shape[1]
    name = kern.name
    if name == "rbfdot":
        return 16 * eps * (1 + 2 * kern.sigma * r2)
    if name in ("laplacedot", "besseldot"):
        return getattr(kern, "degree", 1) * kern.sigma * np.sqrt(1.1e-9) + 16 * eps
    if name == "vanilladot":
        return 8 * p * eps * (1 + r2)
    if name == "polydot":
        base = kern.scale * r2 + kern.offset
        return 8 * p * eps * kern.degree * (1 + base) ** kern.degree
    return 0.0


@given(points(), st.data())
def test_kernel_matrix_symmetric(X, data):
    """Section 4: ``K(x, x') = K(x', x)``.  Every kernel matrix ``K(X, X)`` is
    exactly symmetric except the Gaussian one, whose exponent is formed as
    ``<x, y> - |x|^2/2 - |y|^2/2`` in kernlab's order (R's matrix is not
    exactly symmetric either), so it is symmetric to :func:`rounding_tol`;
    the cross matrices satisfy ``K(A, B) = K(B, A)'`` to the same tolerance."""
    kern = all_kernels(data.draw)
    if kern.name == "splinedot":
        X = np.abs(X) / 3.0
    K = kern(X)
    tol = rounding_tol(kern, X)
    assert K.shape == (X.shape[0], X.shape[0])
    if kern.name == "rbfdot":
        assert np.abs(K - K.T).max() <= tol
    else:
        np.testing.assert_array_equal(K, K.T)
    A, B = X, X[::-1][: max(1, X.shape[0] // 2)] * 0.5
    assert np.abs(kern(A, B) - kern(B, A).T).max() <= tol


@st.composite
def points_and_psd_kernel(draw):
    X = draw(points())
    return X, draw(psd_kernels(X.shape[1]))


def _sq_dist_unrounded(x, y, y_half_sq):
    """Squared distances from the differences (no cancellation to round away);
    ``y_half_sq``, the norms the rounded distances use, is not needed."""
    return distance.cdist(x, y, "sqeuclidean")


@given(points_and_psd_kernel())
@example(args=(np.array([[1.0], [6.103515625e-05], [0.0]]), kerndwd.besseldot(1.0, 0.0, 1)))
@example(args=(np.array([[0.0], [0.0625], [1e-5]]), kerndwd.laplacedot(1.0)))
@example(args=(np.full((4, 4), 0.82900091), kerndwd.laplacedot(1.0)))  # duplicates: |x|^2 + |y|^2 - 2 x'y != 0
def test_kernel_matrix_psd(args):
    """Mercer's condition behind (4.1)-(4.2): the rbf, laplace, anova and Bessel
    kernel matrices are positive semidefinite on any points (smallest
    eigenvalue ``>= -1e-10`` times the largest).  The first explicit example
    is a Bessel matrix that was indefinite (-3e-10 relative) while the kernel
    replaced ``J_nu(t) t^-nu`` by its value at 0 for ``0 < t < 1e-4``.

    The Laplace and Bessel kernels round squared distances to 9 decimals
    before the square root, as kernlab does (so that the matrices equal R's):
    the second example's rows 0 and 1e-5 become one point to each other but
    not to the row 0.0625, and the matrix is indefinite by 1.3e-10 of its
    largest eigenvalue.  For them the same kernel without that rounding must
    be positive semidefinite (distances formed from the differences, which
    leave no cancellation for the square root to amplify), and the rounded
    matrix may fall below it by no more than the rounding moved it (its
    spectral norm)."""
    X, kern = args
    K = kern(X)
    slack = 0.0
    if kern.name in ("laplacedot", "besseldot"):
        with mock.patch.object(kernels, "_sq_dist_rounded", _sq_dist_unrounded):
            unrounded = kern(X)
        assert_psd(unrounded)
        slack = float(np.linalg.norm(K - unrounded, 2))
    ev = np.linalg.eigvalsh(K)
    assert ev[0] >= -1e-10 * max(ev[-1], 0.0) - slack, (ev[0], ev[-1], slack)


@given(points(lo=0.0, hi=1.0))
def test_spline_kernel_psd_on_unit_cube(X):
    """Mercer's condition for the spline kernel on ``[0, 1]^p`` (the domain it is
    meant for): its matrix is positive semidefinite there."""
    assert_psd(kerndwd.splinedot()(X))


@given(points(), sigmas, st.sampled_from(["rbf", "laplace"]))
@example(X=np.full((1, 5), 2.9456158), sigma=10.0, which="rbf")
def test_rbf_laplace_unit_diagonal_and_bounded(X, sigma, which):
    """``exp(-sigma ||x - x||^2) = exp(-sigma ||x - x||) = 1``: the Gaussian and
    Laplace kernels have unit diagonal and all entries in ``[0, 1]``.  Exact
    for Laplace (kernlab's rounding of ``d^2`` to 9 decimals maps the diagonal
    to 0); for the Gaussian kernel, whose ``d^2`` is ``|x|^2 + |y|^2 - 2 <x, y>``
    as in kernlab (R's diagonal is not exactly 1 either), to
    :func:`rounding_tol` (the explicit example: ``|x|^2 = 43``, ``sigma = 10``,
    diagonal ``1 + 1.4e-13``)."""
    kern = kerndwd.rbfdot(sigma) if which == "rbf" else kerndwd.laplacedot(sigma)
    K = kern(X)
    tol = rounding_tol(kern, X) if which == "rbf" else 0.0
    assert np.abs(np.diag(K) - 1.0).max() <= tol
    assert K.min() >= 0.0 and K.max() <= 1.0 + tol


@given(points(n_max=12), st.data())
def test_kernel_matrix_of_subset_is_submatrix(X, data):
    """``K(X[I], X[J])`` is the ``(I, J)`` block of ``K(X, X)``: cross-validation
    slices one kernel matrix instead of recomputing it per fold.  Equal up to
    the order of floating-point operations (:func:`rounding_tol`)."""
    kern = all_kernels(data.draw)
    if kern.name == "splinedot":
        X = np.abs(X) / 3.0
    n = X.shape[0]
    I = np.asarray(data.draw(st.lists(st.integers(0, n - 1), min_size=1, max_size=n)))
    J = np.asarray(data.draw(st.lists(st.integers(0, n - 1), min_size=1, max_size=n)))
    K = kern(X)
    sub = kern(X[I], X[J])
    assert np.abs(sub - K[np.ix_(I, J)]).max() <= rounding_tol(kern, X)


@given(points(n_max=12), st.data(), st.integers(1, 5))
def test_kernel_matrix_by_blocks_of_rows_is_the_whole(X, data, rows):
    """A large kernel matrix is formed by blocks of rows (each within a core's
    cache): the blocks put together are the matrix formed whole, the last
    block short included, up to the order of floating-point operations."""
    kern = all_kernels(data.draw)
    if kern.name == "splinedot":
        X = np.abs(X) / 3.0
    Y = X[::-1][: max(1, X.shape[0] - 1)]
    whole = kern(X, Y)
    with mock.patch.object(kernels, "_BLOCK_BYTES", 8 * Y.shape[0] * rows):
        blocked = kern(X, Y)
    assert blocked.shape == (X.shape[0], Y.shape[0])
    assert np.abs(blocked - whole).max() <= rounding_tol(kern, X)
    # held in float32: the same blocks, each rounded (and the whole matrix, rounded once)
    with mock.patch.object(kernels, "_BLOCK_BYTES", 8 * Y.shape[0] * rows), np.errstate(over="ignore"):
        single = kern(X, Y, dtype=np.float32)
    with np.errstate(over="ignore"):
        assert single.dtype == np.float32 and np.array_equal(single, blocked.astype(np.float32))
        assert np.array_equal(kern(X, Y, dtype=np.float32), whole.astype(np.float32))
    seen = []
    original = type(kern)._matrix

    def record(self, x, y, y_half_sq):
        seen.append(x.shape[0])
        # the norms of y, computed once for all the blocks
        np.testing.assert_allclose(y_half_sq, 0.5 * (y * y).sum(axis=1), rtol=1e-14, atol=0)
        return original(self, x, y, y_half_sq)

    with mock.patch.object(kernels, "_BLOCK_BYTES", 8 * Y.shape[0] * rows), \
            mock.patch.object(type(kern), "_matrix", record):
        kern(X, Y)
    # blocks of `rows` rows each, the last one what is left
    assert seen == [min(rows, X.shape[0] - start) for start in range(0, X.shape[0], rows)]


def _bessel_series(t, order, terms=6):
    """``Gamma(order+1) (2/t)^order J_order(t) = sum_k (-t^2/4)^k / (k! (order+1)_k)``,
    the kernel at ``t`` for degree 1: for ``t <= 1e-3`` six terms are exact to rounding."""
    total, term = 0.0, 1.0
    for k in range(terms):
        total += term
        term *= -(t * t / 4.0) / ((k + 1) * (order + k + 1))
    return total


@pytest.mark.parametrize("order", [0.0, 0.5, 1.0, 2.5, 7.0])
@pytest.mark.parametrize("degree", [1, 3])
def test_the_bessel_kernel_is_continuous_across_its_series_switch(order, degree):
    """At ``t = sigma |x - y|`` beside ``1e-4``, where the kernel switches from its
    series to ``J_order``: both branches agree with the series written out to
    1e-13 relative, and with each other across the switch."""
    ts = [1e-4 * (1.0 + s) for s in (-1e-3, -1e-9, 0.0, 1e-9, 1e-3, 0.5)] + [5e-5, 3e-4]
    rows = np.array([[0.0], [1.0]])  # distance 1 (squared distances are rounded): t = sigma
    values = np.array([kerndwd.besseldot(sigma=t, order=order, degree=degree)(rows)[0, 1] for t in ts])
    want = np.array([_bessel_series(t, order) ** degree for t in ts])
    np.testing.assert_allclose(values, want, rtol=1e-13, atol=0.0)
    below, above = values[1], values[3]  # 2e-13 apart in t
    assert abs(below - above) <= 1e-13 * above
