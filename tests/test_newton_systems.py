"""The Newton systems (:mod:`kerndwd.engine.newton_systems`) against dense
solves of their equations ``(H + mu S) step = -g``,

    H = Z~' diag(d) Z~ + 2 lambda diag(0, pen),   S = (M/n) diag(Z~' W Z~),

in each system's coordinates, and their helpers: the Cholesky factor that
floors a singular system, preconditioned CG (the image it accumulates, the
stop at ``rtol``), the kernel system's head of coupled eigen-directions and
its move of concave directions to their stationary point.
"""

import numpy as np
import pytest
from scipy import sparse

import kerndwd
from kerndwd.engine.forms import DenseLinearForm, KernelForm, SparseLinearForm
from kerndwd.engine.newton_systems import (HEAD_FRACTION, HEAD_MAX, KernelNewton, LinearNewton, SparseLinearNewton,
                                           _cholesky, _pcg)


def _linear(seed=0, n=30, p=5):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, p))
    d = rng.uniform(0.0, 0.2, size=n)
    d[::4] = 0.0  # margins on the linear piece: no curvature
    g = rng.normal(size=p + 1)
    w = rng.uniform(0.5, 2.0, size=n)
    return X, d, g, w


def _dense_direction(Z, d, g, lam, mu, scale, pen):
    H = Z.T @ (d[:, None] * Z)
    H[1:, 1:] += 2.0 * lam * np.diag(pen)
    H += mu * np.diag(scale)
    return -np.linalg.solve(H, g)


@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("mu", [0.0, 0.3])
def test_linear_direction_is_the_damped_newton_step(weighted, mu):
    X, d, g, w = _linear()
    M = 4.0
    system = LinearNewton(DenseLinearForm(X), w if weighted else None, M)
    Z = np.column_stack([np.ones(30), X])
    W = w if weighted else np.ones(30)
    np.testing.assert_allclose(system.scale, (M / 30) * np.einsum("i,ij,ij->j", W, Z, Z), rtol=1e-13)
    step, df = system.direction(np.zeros(6), g, d, 0.1, mu, 1e-3)
    expected = _dense_direction(Z, d, g, 0.1, mu, system.scale, np.ones(5))
    np.testing.assert_allclose(step, expected, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(df, Z @ step, rtol=1e-12, atol=1e-13)
    x = np.arange(6.0)
    np.testing.assert_allclose(system.decision(x), Z @ x, rtol=1e-13)
    np.testing.assert_allclose(system.data_gradient(w), Z.T @ w, rtol=1e-13)
    assert system.penalty(x) == pytest.approx(x[1:] @ x[1:])
    np.testing.assert_array_equal(system.penalty_direction(x), x[1:])
    assert system.cross_penalty(x, 2 * x) == pytest.approx((2 * x[1:] @ x[1:], 4 * x[1:] @ x[1:]))
    start = system.start(x)
    assert np.array_equal(start, x) and start is not x and not system.start().any()
    assert system.stationary(x, None, g, 0.1, 1e-8) is None


@pytest.mark.parametrize("mu", [0.0, 0.3])
def test_sparse_direction_solves_the_same_system_by_cg(mu):
    X, d, g, w = _linear(seed=1)
    X[np.abs(X) < 0.7] = 0.0
    system = SparseLinearNewton(SparseLinearForm(sparse.csr_array(X)), w, 4.0)
    dense = LinearNewton(DenseLinearForm(X), w, 4.0)
    np.testing.assert_allclose(system.scale, dense.scale, rtol=1e-13)
    step, df = system.direction(np.zeros(6), g, d, 0.05, mu, 1e-12)
    expected = dense.direction(np.zeros(6), g, d, 0.05, mu, 1e-12)[0]
    np.testing.assert_allclose(step, expected, rtol=1e-8, atol=1e-10)
    Z = np.column_stack([np.ones(30), X])
    np.testing.assert_allclose(df, Z @ step, rtol=1e-12, atol=1e-13)
    # a loose tolerance stops early: a descent direction all the same
    rough, _ = system.direction(np.zeros(6), g, d, 0.05, mu, 0.5)
    assert rough @ g < 0.0


def test_cholesky_floors_a_singular_system_and_refuses_a_non_finite_one():
    F = _cholesky(np.diag([4.0, 9.0]), np.ones(2))
    np.testing.assert_allclose(np.triu(F), np.diag([2.0, 3.0]))
    singular = np.zeros((2, 2))
    F = _cholesky(singular, np.array([1.0, 2.0]))
    # the floor goes in with weight 1e-12: the factor of diag(1e-12, 2e-12)
    np.testing.assert_allclose(np.diag(F), np.sqrt([1e-12, 2e-12]), rtol=1e-12)
    np.testing.assert_array_equal(singular, np.diag([1e-12, 2e-12]))  # the system is overwritten
    # indefinite beyond one weight: the weight grows tenfold until it factorises
    F = _cholesky(np.diag([1.0, -1e-9]), np.ones(2))
    assert np.isfinite(F).all() and np.diag(F)[1] > 0.0
    with pytest.raises(FloatingPointError, match="the Newton system is not finite"):
        _cholesky(np.array([[np.inf, 0.0], [0.0, -1.0]]), np.ones(2))


def test_pcg_stops_at_the_relative_residual_and_accumulates_the_image():
    rng = np.random.default_rng(2)
    A = rng.normal(size=(8, 8))
    A = A @ A.T + np.eye(8)
    C = rng.normal(size=(3, 8))
    rhs = rng.normal(size=8)
    x, image, its = _pcg(lambda v: (A @ v, C @ v), lambda r: r / np.diag(A), rhs, 1e-10, 100)
    assert np.linalg.norm(A @ x - rhs) <= 1e-10 * np.linalg.norm(rhs)
    np.testing.assert_allclose(image, C @ x, rtol=1e-9, atol=1e-12)
    assert 1 <= its <= 8 + 2
    x1, image1, its1 = _pcg(lambda v: A @ v, lambda r: r, rhs, 1e-10, 1)
    assert its1 == 1 and image1 is None
    r = rhs
    np.testing.assert_allclose(x1, (r @ r) / (r @ A @ r) * r, rtol=1e-12)  # one steepest-descent step
    # no curvature along the first direction: no iteration, the preconditioned residual is returned
    x0, image0, its0 = _pcg(lambda v: (np.zeros_like(v), C @ v), lambda r: 2.0 * r, rhs, 1e-10, 10)
    assert its0 == 0 and image0 is None
    np.testing.assert_array_equal(x0, 2.0 * rhs)


def _kernel_system(weights=None, n=25, seed=3):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 2))
    K = kerndwd.rbfdot(0.5)(X)
    form = KernelForm(K)
    return KernelNewton(form, np.linalg.eigh(K), weights, 4.0), K, rng


def rng_weights():
    return np.random.default_rng(9).uniform(0.5, 2.0, size=25)


def system_weights_max(weighted):
    return rng_weights().max() if weighted else 1.0


@pytest.mark.parametrize("lam", [1e-4, 0.1])
@pytest.mark.parametrize("weighted", [False, True])
def test_kernel_direction_solves_the_system_in_the_eigenbasis(lam, weighted):
    """On the live eigen-directions (null ones carry no step), to the CG
    tolerance; ``f``'s change is ``Z~ step``."""
    system, K, rng = _kernel_system(weights=rng_weights() if weighted else None)
    n = 25
    d = rng.uniform(0.0, 0.1, size=n)
    d[::3] = 0.0
    g = rng.normal(size=n + 1)
    system.set_lambda(lam, 4.0 / n * (system_weights_max(weighted)))
    step, df = system.direction(np.zeros(n + 1), g, d, lam, 0.2, 1e-12)
    e_m, U, live = system.model_e, system.U, system.live
    Zt = np.column_stack([np.ones(n), U * e_m])
    expected = np.zeros(n + 1)
    sub = np.flatnonzero(live)
    H = Zt.T @ (d[:, None] * Zt)
    H[1:, 1:] += 2.0 * lam * np.diag(e_m)
    H += 0.2 * np.diag(system.scale)
    expected[sub] = -np.linalg.solve(H[np.ix_(sub, sub)], g[sub])
    np.testing.assert_allclose(step, expected, rtol=1e-7, atol=1e-9 * np.abs(expected).max())
    np.testing.assert_allclose(df, Zt @ step, rtol=1e-9, atol=1e-11 * np.abs(df).max())
    assert np.all(step[~live] == 0.0)


def test_the_kernel_head_factor_floors_with_the_head_s_scale(monkeypatch):
    """Where rounding breaks the head's Cholesky factor, it is floored by the
    head directions' own entries of ``scale`` (as ``_cholesky`` floors any
    system); the direction is still the solution of the floored system."""
    from kerndwd.engine import newton_systems

    system, K, rng = _kernel_system()
    n = 25
    system.set_lambda(1e-3, 4.0 / n)
    floors = []
    real = newton_systems._cholesky
    monkeypatch.setattr(newton_systems, "_cholesky", lambda H, floor: floors.append(floor) or real(H, floor))
    d = rng.uniform(0.0, 0.1, size=n)
    system.direction(np.zeros(n + 1), rng.normal(size=n + 1), d, 1e-3, 0.2, 1e-12)
    head = system._head[0]
    assert floors and all(np.array_equal(f, system.scale[head]) for f in floors)


def test_kernel_head_is_the_coupled_eigen_directions():
    """``set_lambda`` keeps the eigen-directions with ``e_j`` above
    ``HEAD_FRACTION 2 lambda / bound``, at most ``HEAD_MAX``, largest first,
    with the intercept; the same size keeps the same head."""
    system, K, _ = _kernel_system()
    assert HEAD_FRACTION == 5e-4 and HEAD_MAX == 600
    bound = 4.0 / 25
    for lam in (1e-6, 1e-2, 10.0):
        system.set_lambda(lam, bound)
        cut = HEAD_FRACTION * 2.0 * lam / bound
        size = int(np.count_nonzero(system.model_e > cut))
        head, Zh = system._head
        assert head.size == size + 1 and head[0] == 0
        np.testing.assert_array_equal(head[1:] - 1, np.argsort(-system.model_e)[:size])
        np.testing.assert_allclose(Zh[:, 1:], system.U[:, head[1:] - 1] * system.model_e[head[1:] - 1])
        assert np.all(Zh[:, 0] == 1.0)
    kept = system._head
    system.set_lambda(10.0 * (1 + 1e-12), bound)
    assert system._head is kept


def test_kernel_coordinates_map_back_and_forth():
    system, K, rng = _kernel_system()
    alpha = rng.normal(size=26)
    x = system.start(alpha)
    np.testing.assert_allclose(system.to_alpha(x), alpha, rtol=1e-12, atol=1e-13)
    np.testing.assert_allclose(system.decision(x), alpha[0] + K @ alpha[1:], rtol=1e-10, atol=1e-12)
    z = rng.normal(size=25)
    np.testing.assert_allclose(system.to_alpha(system.data_gradient(z))[1:], K @ z, rtol=1e-10, atol=1e-12)
    assert system.data_gradient(z)[0] == pytest.approx(z.sum())
    assert not system.start().any() and system.start().shape == (26,)


def test_concave_directions_move_to_their_stationary_point():
    """An indefinite kernel matrix: once the rest of the gradient is below
    ``eps / 2`` and the concave part above ``1e-4 eps``, those coordinates
    are set to ``-U_c' z / (2 lambda)``; otherwise nothing moves."""
    rng = np.random.default_rng(4)
    Q, _ = np.linalg.qr(rng.normal(size=(6, 6)))
    e = np.array([-0.5, 0.1, 0.5, 1.0, 2.0, 3.0])
    K = (Q * e) @ Q.T
    system = KernelNewton(KernelForm(K), (e, Q), None, 4.0)
    np.testing.assert_array_equal(system.concave, [0])
    z = rng.normal(size=6)
    x = rng.normal(size=7)
    eps = 1e-6
    g = np.zeros(7)
    g[1] = 1e-3  # the concave coordinate's gradient, the rest zero
    moved, df = system.stationary(x, z, g, 0.2, eps)
    assert moved[1] == pytest.approx(-(Q[:, 0] @ z) / 0.4)
    np.testing.assert_array_equal(np.delete(moved, 1), np.delete(x, 1))
    np.testing.assert_allclose(df, Q[:, 0] * e[0] * (moved[1] - x[1]), rtol=1e-12)
    g[3] = eps  # the rest above eps / 2: not yet
    assert system.stationary(x, z, g, 0.2, eps) is None
    g[3] = 0.0
    g[1] = 1e-11  # the concave part already below 1e-4 eps
    assert system.stationary(x, z, g, 0.2, eps) is None
    psd = KernelNewton(KernelForm(np.eye(3)), (np.ones(3), np.eye(3)), None, 4.0)
    assert psd.stationary(np.zeros(4), np.ones(3), np.r_[0.0, 1.0, 0, 0], 0.2, eps) is None


def test_cholesky_raises_the_floors_weight_tenfold_from_1e_12():
    """An eigenvalue of -1e-9: the floor goes in with weights 1e-12, 1e-11,
    2e-10, then 4e-9 (each the weight so far, at least 1e-12, which then
    grows tenfold), and the factorisation succeeds on the fourth."""
    H = np.diag([1.0, -1e-9])
    _cholesky(H, np.array([1.0, 2.0]))
    added = 1e-12 + 1e-11 + 2e-10 + 4e-9
    np.testing.assert_allclose(np.diag(H), [1.0 + added, -1e-9 + 2.0 * added], rtol=1e-12)
    with pytest.raises(FloatingPointError) as info:
        _cholesky(np.array([[np.inf, 0.0], [0.0, -1.0]]), np.ones(2))
    assert str(info.value) == "the Newton system is not finite"


def test_pcg_without_iterations_returns_the_preconditioned_residual():
    rhs = np.array([1.0, -2.0])
    x, image, its = _pcg(lambda v: 2.0 * v, lambda r: 3.0 * r, rhs, 1e-10, 0)
    assert its == 0 and image is None
    np.testing.assert_array_equal(x, 3.0 * rhs)


def test_kernel_scale_and_null_levels_follow_the_eigenvalues():
    """``S = (M/n) [sum w, e_j^2 sum_i U_ij^2 w_i]`` on the eigenvalues above
    the rounding level ``n eps max|e|``; below ``-n eps max|e|`` a direction
    is concave.  Eigenvalues at half and twice that level, on a matrix whose
    largest eigenvalue is 1e-3 (so the level is not taken from 1)."""
    rng = np.random.default_rng(5)
    Q, _ = np.linalg.qr(rng.normal(size=(6, 6)))
    level = 6 * np.finfo(float).eps * 1e-3
    e = np.array([-2.0 * level, -0.5 * level, 0.5 * level, 2.0 * level, 5e-4, 1e-3])
    w = rng.uniform(0.5, 2.0, size=6)
    for weights in (None, w):
        system = KernelNewton(KernelForm((Q * e) @ Q.T), (e, Q), weights, 4.0)
        np.testing.assert_array_equal(system.model_e, [0.0, 0.0, 0.0, 2.0 * level, 5e-4, 1e-3])
        np.testing.assert_array_equal(system.concave, [0])
        W = np.ones(6) if weights is None else weights
        expected = (4.0 / 6) * np.r_[W.sum(), system.model_e ** 2 * ((Q * Q).T @ W)]
        np.testing.assert_allclose(system.scale, expected, rtol=1e-13)


def test_a_singular_newton_system_is_floored_not_refused():
    """No curvature, no penalty, no damping (d = 0, lambda = 0, mu = 0): the
    matrix is zero; the factor takes the majoriser's diagonal as its floor and
    the step still descends."""
    X, _, g, w = _linear(seed=6)
    linear = LinearNewton(DenseLinearForm(X), w, 4.0)
    step, df = linear.direction(np.zeros(6), g, np.zeros(30), 0.0, 0.0, 1e-8)
    assert np.isfinite(step).all() and step @ g < 0.0


def test_a_zero_gradient_gives_a_zero_step_and_its_change_of_f():
    """Nothing to solve: CG takes no iteration, and the change of ``f`` is
    computed from the (zero) step."""
    system, K, rng = _kernel_system()
    system.set_lambda(0.1, 4.0 / 25)
    step, df = system.direction(np.zeros(26), np.zeros(26), rng.uniform(0, 0.1, 25), 0.1, 0.0, 1e-8)
    assert not step.any() and isinstance(df, np.ndarray) and df.shape == (25,) and not df.any()


def test_start_makes_a_float_copy():
    X, _, _, _ = _linear()
    system = LinearNewton(DenseLinearForm(X), None, 4.0)
    x = system.start([1, 2, 3, 4, 5, 6])
    assert x.dtype == np.float64 and x.tolist() == [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]


def test_cholesky_factors_the_floored_system_whatever_its_memory_order():
    """A system that fails to factorise, held in Fortran order (which LAPACK
    could overwrite in place): each retry factorises the system plus the
    floor, never a partly factorised copy, so the factor's ``R'R`` is the
    floored system the caller sees."""
    rng = np.random.default_rng(11)
    B = rng.normal(size=(5, 3))
    H0 = B @ B.T  # rank 3 of 5: Cholesky breaks down
    H0[4, 4] -= 1e-6
    floor = rng.uniform(0.5, 2.0, size=5)
    for H in (np.asfortranarray(H0), H0.copy()):
        F = _cholesky(H, floor)
        R = np.triu(F)
        np.testing.assert_allclose(R.T @ R, H, rtol=1e-10, atol=1e-12)
        added = np.diag(H - H0) / floor
        assert added[0] > 0.0 and np.allclose(added, added[0], rtol=1e-9)
        np.testing.assert_array_equal(H - np.diag(np.diag(H)), H0 - np.diag(np.diag(H0)))
