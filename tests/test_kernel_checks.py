"""The kernel checks every design applies (:mod:`kerndwd.engine.kernel_checks`)
against their documented thresholds and messages.

* Non-finite entries or diagonal: ``ValueError`` naming the kernel and the
  remedy.
* A stationary kernel's diagonal must be 1 to ``UNIT_DIAGONAL_RTOL``
  (exactly at the threshold passes); other kernels' diagonals are free.
* Definiteness: the smallest eigenvalue may reach
  ``-NEGATIVE_EIGENVALUE_RTOL`` times the largest magnitude (exactly there
  passes); kernels positive semi-definite on every input are not checked;
  the others are checked on ``DEFINITENESS_SAMPLE`` rows spread evenly.
"""

import warnings

import numpy as np
import pytest

import kerndwd
from kerndwd.engine import kernel_checks as kc
from kerndwd.engine.kernel_checks import (DEFINITENESS_SAMPLE, NEGATIVE_EIGENVALUE_RTOL, UNIT_DIAGONAL_RTOL,
                                          check_definite, check_kernel_diagonal, check_kernel_matrix,
                                          check_kernel_parts, check_kernel_rows, check_sampled_definite,
                                          check_semidefinite, kernel_diagonal, quiet_kernel)


def test_quiet_kernel_holds_back_overflow_warnings_and_returns_the_matrix():
    """``polydot(3)`` at entries of 1e120 overflows: no warning escapes (the
    caller's check names the kernel instead), and the matrix is returned."""
    X = np.array([[1e120, 1.0], [1.0, 2.0]])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        K = quiet_kernel(kerndwd.polydot(3), X)
        K2 = quiet_kernel(kerndwd.polydot(3), X, X[:1])
    assert np.isinf(K[0, 0]) and K[1, 1] == pytest.approx((5.0 + 1.0) ** 3)
    assert K2.shape == (2, 1) and np.isinf(K2[0, 0])
    with pytest.warns(RuntimeWarning):
        kerndwd.polydot(3)(X)  # what it holds back
    # where the caller has numpy raise on every floating-point event, underflow (exp(-2e4) under
    # a Gaussian kernel on rows far apart) and overflow stay quiet inside
    far = np.array([[0.0], [100.0]])
    with np.errstate(all="raise"):
        K3 = quiet_kernel(kerndwd.rbfdot(2.0), far)
        K4 = quiet_kernel(kerndwd.polydot(3), X)
    assert K3[0, 1] == 0.0 and K3[0, 0] == 1.0 and np.isinf(K4[0, 0])
    with np.errstate(all="raise"), pytest.raises(FloatingPointError):
        kerndwd.rbfdot(2.0)(far)


def test_a_non_finite_kernel_matrix_is_refused_naming_the_kernel():
    kern = kerndwd.polydot(3)
    K = np.eye(3)
    assert check_kernel_matrix(K, kern) is K
    K[0, 2] = np.inf
    with pytest.raises(ValueError, match=r"kern=polydot\(degree=3.*overflows on these data: the kernel matrix "
                                         r"has non-finite entries; use smaller kernel parameters \(degree, "
                                         r"scale\) or rescale X"):
        check_kernel_matrix(K, kern)


def test_a_non_finite_diagonal_is_refused_naming_the_kernel():
    with pytest.raises(ValueError, match=r"^kern=vanilladot\(\) overflows on these data: k\(x, x\) is not finite "
                                         r"on some rows; use smaller kernel parameters \(degree, scale\) or "
                                         r"rescale X$"):
        check_kernel_diagonal(np.array([1.0, np.nan]), kerndwd.vanilladot())


def test_a_stationary_diagonal_must_be_one_to_the_documented_tolerance():
    """Off by 2^-27 (7.5e-9, below ``UNIT_DIAGONAL_RTOL``) passes, by 2e-8
    fails with the size of the error in the message; a kernel without a unit
    diagonal (polydot) passes with any finite diagonal; the check of the
    full matrix reads its diagonal."""
    kern = kerndwd.rbfdot(0.5)
    check_kernel_diagonal(np.array([1.0, 1.0 - 2.0 ** -27, 1.0 + 2.0 ** -27]), kern)
    with pytest.raises(ValueError, match=r"kern=rbfdot\(sigma=0.5\) cannot be formed accurately on these data: "
                                         r"k\(x, x\) should be 1 but is off by 2e-08 \(sigma times the squared "
                                         r"norms of the rows is beyond what double precision resolves\); use a "
                                         r"smaller sigma or rescale X"):
        check_kernel_diagonal(np.array([1.0, 1.0 - 2e-8]), kern)
    with pytest.raises(ValueError, match="off by 3e-08"):
        check_kernel_diagonal(np.array([1.0 + 3e-8, 1.0]), kern)
    check_kernel_diagonal(np.array([5.0, 0.25]), kerndwd.polydot(2))
    with pytest.raises(ValueError, match="should be 1"):
        check_kernel_matrix(np.diag([1.0, 0.5]), kern)
    assert UNIT_DIAGONAL_RTOL == 1e-8 and NEGATIVE_EIGENVALUE_RTOL == 1e-6


def test_semidefinite_to_rounding_passes_and_beyond_it_is_refused():
    """The smallest eigenvalue may be ``-1e-6`` times the largest magnitude
    (passes, the decomposition returned as it was); below that the message
    names the kernel and both eigenvalues."""
    kern = kerndwd.splinedot()
    eig = (np.array([-NEGATIVE_EIGENVALUE_RTOL * 10.0, 1.0, 10.0]), "U")
    assert check_semidefinite(eig, kern) is eig
    with pytest.raises(ValueError, match=r"the kernel matrix of kern=splinedot\(\) on these data is not positive "
                                         r"semi-definite \(smallest eigenvalue -2e-05, largest 10\): DWD needs a "
                                         r"positive semi-definite kernel. splinedot\(\) is one only for data in "
                                         r"\[0, 1\]; check the kernel and the scale of X"):
        check_semidefinite((np.array([-2e-5, 1.0, 10.0]), None), kern)
    # the scale is the largest magnitude, a negative eigenvalue's included
    with pytest.raises(ValueError, match="smallest eigenvalue -10, largest 1"):
        check_semidefinite((np.array([-10.0, 1.0]), None), kern)
    # all zero: semidefinite
    zeros = (np.zeros(3), None)
    assert check_semidefinite(zeros, kern) is zeros


def test_kernel_diagonal_is_the_diagonal_of_the_full_matrix_block_by_block():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 3))
    for kern in (kerndwd.polydot(2, 0.5, 1.0), kerndwd.rbfdot(0.3)):
        full = np.diagonal(kern(X))
        for rows in (128, 7, 300):  # (BLAS may round a product differently by the size of the call)
            np.testing.assert_allclose(kernel_diagonal(kern, X, rows=rows), full, rtol=1e-13, atol=1e-13)


def test_the_sample_spreads_at_most_definiteness_sample_rows_evenly():
    assert DEFINITENESS_SAMPLE == 1000
    np.testing.assert_array_equal(kc._sample(5), np.arange(5))
    rows = kc._sample(2500)
    assert rows.size == 1000 and rows[0] == 0 and rows[-1] == 2499
    assert np.all(np.diff(rows) >= 2) and np.all(np.diff(rows) <= 3)
    np.testing.assert_array_equal(kc._sample(1000), np.arange(1000))


def _indefinite_at(n, rows):
    """The identity of size ``n`` with the 2x2 block of ``rows`` made
    ``[[1, 2], [2, 1]]`` (eigenvalues 3 and -1)."""
    K = np.eye(n)
    i, j = rows
    K[i, j] = K[j, i] = 2.0
    return K


def test_definiteness_is_checked_on_the_sampled_rows_only_for_kernels_that_need_it():
    """An indefinite block on two sampled rows is found (splinedot, a kernel
    positive semi-definite only on [0, 1]); one on rows the sample skips is
    not; a kernel positive semi-definite on every input (rbfdot) is not
    checked at all."""
    n = 2500
    sampled = kc._sample(n)
    skipped = np.setdiff1d(np.arange(n), sampled)[:2]
    with pytest.raises(ValueError, match="not positive semi-definite"):
        check_definite(_indefinite_at(n, sampled[[3, 700]]), kerndwd.splinedot())
    check_definite(_indefinite_at(n, skipped), kerndwd.splinedot())
    check_definite(_indefinite_at(10, (0, 1)), kerndwd.rbfdot(1.0))
    with pytest.raises(ValueError, match="not positive semi-definite"):
        check_sampled_definite(_indefinite_at(n, sampled[[3, 700]]), kerndwd.splinedot())
    with pytest.raises(ValueError, match="not positive semi-definite"):  # two sampled rows near the start
        check_sampled_definite(_indefinite_at(n, sampled[[3, 5]]), kerndwd.splinedot())
    check_sampled_definite(_indefinite_at(n, skipped), kerndwd.splinedot())
    check_sampled_definite(_indefinite_at(10, (0, 1)), kerndwd.rbfdot(1.0))


def test_the_parts_check_asks_for_the_sampled_rows_only_when_needed():
    """``check_kernel_parts``: the diagonal first (any kernel), then, for a
    kernel that is not always positive semi-definite, the kernel on the rows
    at the sampled indices (finite, unit diagonal where stationary,
    semidefinite)."""
    rng = np.random.default_rng(1)
    X = rng.uniform(0.0, 1.0, size=(1500, 2))
    asked = []

    def rows_at(idx):
        asked.append(np.asarray(idx))
        return X[idx]

    check_kernel_parts(kerndwd.rbfdot(1.0), kernel_diagonal(kerndwd.rbfdot(1.0), X), rows_at, 1500)
    assert asked == []
    spline = kerndwd.splinedot()
    check_kernel_parts(spline, kernel_diagonal(spline, X), rows_at, 1500)
    assert len(asked) == 1
    np.testing.assert_array_equal(asked[0], kc._sample(1500))
    with pytest.raises(ValueError, match="is not finite"):
        check_kernel_parts(spline, np.r_[np.nan, np.ones(1499)], rows_at, 1500)
    assert len(asked) == 1  # the diagonal failed first: no rows asked for
    # splinedot on data outside [0, 1]: indefinite on the sample
    far = 5.0 * rng.normal(size=(40, 2))
    with pytest.raises(ValueError, match=r"kern=splinedot\(\) on these data is not positive semi-definite"):
        check_kernel_rows(spline, far)
    # rows in [0, 1] first and far outside after: the sample spans all the rows, not the first p
    mixed = np.vstack([X[:2], far])
    with pytest.raises(ValueError, match="not positive semi-definite"):
        check_kernel_rows(spline, mixed)
    check_kernel_rows(spline, X[:2])
    # besseldot: stationary and not always semidefinite; its sampled matrix is checked
    bessel = kerndwd.besseldot(1.0, 1.0, 1)
    check_kernel_rows(bessel, X[:50])
    overflow = np.full(2, np.inf)
    with pytest.raises(ValueError, match="overflows"):
        check_kernel_parts(bessel, np.ones(2), lambda idx: overflow[idx, None] * np.ones((len(idx), 1)), 2)


class _Fake:
    """A stationary kernel whose diagonal is off by 1e-6 at the row whose first
    entry is 7 (the rounding of a row at the edge of double precision)."""

    unit_diagonal = True
    always_psd = True

    def __call__(self, x, y=None):
        K = np.exp(-((x[:, None, :] - (x if y is None else y)[None, :, :]) ** 2).sum(axis=2))
        if y is None:
            K[np.diag_indices_from(K)] += 1e-6 * (x[:, 0] == 7.0)
        return K

    def __repr__(self):
        return "fake()"


def test_check_kernel_rows_checks_every_rows_diagonal():
    """The diagonal is checked on every row (in blocks), wherever the bad
    one sits."""
    X = np.zeros((300, 2))
    X[257, 0] = 7.0
    with pytest.raises(ValueError, match=r"kern=fake\(\) cannot be formed accurately.*off by 1e-06"):
        check_kernel_rows(_Fake(), X)
    check_kernel_rows(_Fake(), X[:200])


def test_a_float32_matrix_is_checked_for_definiteness_in_double_precision(monkeypatch):
    """The sampled block of a float32 kernel matrix is widened before its
    eigenvalues are taken, and the verdicts are those of the double matrix."""
    seen = []
    real = kc.linalg.eigvalsh
    monkeypatch.setattr(kc.linalg, "eigvalsh", lambda A: seen.append(A.dtype) or real(A))
    n = 50
    bad = _indefinite_at(n, (3, 7))
    with pytest.raises(ValueError, match="not positive semi-definite"):
        check_definite(bad.astype(np.float32), kerndwd.splinedot())
    X = np.random.default_rng(2).uniform(0.0, 1.0, size=(n, 2))
    check_sampled_definite(kerndwd.splinedot()(X).astype(np.float32), kerndwd.splinedot())
    assert seen == [np.float64, np.float64]


def test_quiet_kernel_in_float32_takes_both_sets_of_rows():
    """``quiet_kernel(kern, x, y, dtype=np.float32)`` is ``kern(x, y)`` rounded
    to float32, rectangular as asked; in float64 it is ``kern(x, y)`` itself."""
    rng = np.random.default_rng(3)
    x, y = rng.standard_normal((5, 2)), rng.standard_normal((3, 2))
    kern = kerndwd.rbfdot(0.7)
    single = quiet_kernel(kern, x, y, dtype=np.float32)
    assert single.dtype == np.float32 and single.shape == (5, 3)
    np.testing.assert_array_equal(single, kern(x, y).astype(np.float32))
    np.testing.assert_array_equal(quiet_kernel(kern, x, y), kern(x, y))
