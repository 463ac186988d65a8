"""The kernel majorisers (:mod:`kerndwd.engine.majorisers.kernel`) against the
formulas of their docstrings, computed densely here.

* ``KernelEigen`` (Algorithm 2): with ``S = (K + gam I + c I)^-1``,
  ``s = S 1``, ``v = (K + gam I) S 1``, ``g = 1 / (n - 1'v)`` and
  ``gamma = z + 2 n lambda alpha``: ``step_0 = -(1/M) g (sum z - v'gamma)``,
  ``step_alpha = -step_0 s - (1/M) S gamma``; directions rounding leaves
  undetermined, or with an eigenvalue below ``-(gam + c)/2``, frozen.
* ``KernelCholesky``: ``-(1/M) P^-1 [sum z; K gamma]`` with
  ``P = [[sum w, (Kw)'], [Kw, K W K]] + gam I + lambda (2n/M) diag(0, K)``.
"""

import numpy as np
import pytest

import kerndwd
from kerndwd.engine import DWDLoss
from kerndwd.engine.majorisers.kernel import KernelCholesky, KernelEigen
from kerndwd.engine.newton_systems import KernelNewton


def _kernel(n=12, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 2))
    K = kerndwd.rbfdot(0.7)(X)
    z = rng.normal(size=n)
    alpha = np.r_[0.3, rng.normal(size=n)]
    return K, z, alpha


def _eigen_step(K, z, alpha, lam, M, gam):
    n = K.shape[0]
    c = 2.0 * n * lam / M
    S = np.linalg.inv(K + (gam + c) * np.eye(n))
    one = np.ones(n)
    s = S @ one
    v = (K + gam * np.eye(n)) @ s
    g = 1.0 / (n - one @ v)
    gamma = z + 2.0 * n * lam * alpha[1:]
    step0 = -g * (z.sum() - v @ gamma) / M
    step_alpha = -step0 * s - S @ gamma / M
    return step0, step_alpha, gamma


@pytest.mark.parametrize("lam", [1e-3, 0.1, 5.0])
@pytest.mark.parametrize("q", [0.5, 1.0, 8.0])
def test_kernel_eigen_step_is_algorithm_2s(lam, q):
    K, z, alpha = _kernel()
    loss = DWDLoss(q)
    gam = 1e-6
    maj = KernelEigen(K, loss, gam, predictor=None)
    coord = maj.start(alpha)
    np.testing.assert_allclose(maj.to_alpha(coord), alpha, rtol=1e-12, atol=1e-14)
    step, df, grad_sq = maj.at_lambda(lam)(z, coord)
    step0, step_alpha, gamma = _eigen_step(K, z, alpha, lam, loss.lipschitz, gam)
    assert step[0] == pytest.approx(step0, rel=1e-9, abs=1e-12)
    np.testing.assert_allclose(maj.to_alpha(step)[1:], step_alpha, rtol=1e-8, atol=1e-10 * np.abs(step_alpha).max())
    np.testing.assert_allclose(df, step0 + K @ step_alpha, rtol=1e-8, atol=1e-10 * np.abs(df).max())
    Kg = K @ gamma
    assert grad_sq == pytest.approx((z.sum() ** 2 + Kg @ Kg) / 144.0, rel=1e-10)
    assert maj.penalty_at(coord, None) == pytest.approx(alpha[1:] @ K @ alpha[1:], rel=1e-10)
    assert maj.start().shape == (13,) and not maj.start().any()


def test_kernel_eigen_shares_the_given_decomposition_with_its_newton_system():
    K, _, _ = _kernel()
    eig = np.linalg.eigh(K)
    maj = KernelEigen(K, DWDLoss(1.0), 0.0, predictor=None, eig=eig)
    assert maj.e is eig[0] and maj.U is eig[1]
    system = maj.newton_system()
    assert type(system) is KernelNewton and system.e is eig[0] and system.U is eig[1]
    assert maj.noise == 12 * np.finfo(float).eps * np.abs(eig[0]).max()
    np.testing.assert_allclose(maj.U1, eig[1].T @ np.ones(12), rtol=1e-14)


def test_kernel_eigen_freezes_directions_rounding_leaves_undetermined():
    """A rank-2 kernel matrix of entries 1e24: its computed null eigenvalues
    are rounding noise of about 1e9, far above ``gam + c``; the step has no
    component along them, and along the others it is Algorithm 2's step on
    the subspace they span."""
    rng = np.random.default_rng(1)
    B = 1e12 * rng.normal(size=(8, 2))
    K = B @ B.T
    maj = KernelEigen(K, DWDLoss(1.0), 1e-7, predictor=None)
    frozen = np.abs(maj.e) <= maj.noise
    assert frozen.sum() == 6
    z = rng.normal(size=8)
    step, df, _ = maj.at_lambda(1e-3)(z, maj.start())
    assert np.all(step[1:][frozen] == 0.0)
    assert np.isfinite(step).all() and np.isfinite(df).all()
    # the intercept is still moved: the frozen directions' share of 1 enters g
    assert step[0] != 0.0


@pytest.mark.parametrize("lam, frozen", [(0.6333, True), (0.7, False)])
def test_kernel_eigen_freezes_the_noise_level_once_it_reaches_half_the_ridge(lam, frozen):
    """With the rounding level set to 1 and an eigenvalue of 0.5 (inside it):
    at ``c = 2 n lambda / M`` = 1.9 the level reaches half the ridge and the
    directions inside it are frozen; at 2.1 they are not."""
    K, z, _ = _kernel(n=6, seed=6)
    maj = KernelEigen(K, DWDLoss(1.0), 0.0, predictor=None)
    e = maj.e.copy()
    e[0] = 0.5
    maj.e, maj.e_gam, maj.noise = e, e, 1.0
    step = maj.at_lambda(lam)(z, maj.start())[0]
    assert bool(step[1] == 0.0) is frozen and step[-1] != 0.0  # (the largest eigenvalue is kept)


def test_kernel_eigen_noise_level_is_n_eps_times_the_largest_eigenvalue():
    """Also for a kernel matrix whose eigenvalues are all below 1."""
    for scale in (1e-3, 1.0, 1e6):
        K = scale * _kernel(n=9, seed=8)[0]
        maj = KernelEigen(K, DWDLoss(1.0), 0.0, predictor=None)
        assert maj.noise == pytest.approx(9 * np.finfo(float).eps * np.abs(maj.e).max(), rel=1e-12, abs=0.0)


def test_kernel_eigen_freezes_both_kinds_at_once():
    """Where the noise reaches half the ridge, an eigenvalue below minus half
    the ridge (and outside the noise) stays frozen beside the noise's."""
    K, z, _ = _kernel(n=6, seed=2)
    maj = KernelEigen(K, DWDLoss(1.0), 0.0, predictor=None)
    e = maj.e.copy()
    e[0], e[1] = -3.0, 0.5  # -3: below -ridge/2 and outside the noise; 0.5: inside it
    maj.e, maj.e_gam, maj.noise = e, e, 1.0
    step = maj.at_lambda(1.0 / 12)(z, maj.start())[0]  # ridge = c = 2 n lambda / M = 1/4
    frozen = (e < -0.125) | (np.abs(e) <= 1.0)
    assert frozen[0] and frozen[1] and not frozen.all()
    np.testing.assert_array_equal(step[1:] == 0.0, frozen)


def test_kernel_eigen_freezes_an_eigenvalue_below_half_the_ridge():
    K, z, _ = _kernel(n=6, seed=2)
    maj = KernelEigen(K, DWDLoss(1.0), 1e-6, predictor=None)
    e = maj.e.copy()
    e[0] = -3.0
    maj.e, maj.e_gam = e, e + 1e-6
    lam = 1.0 / (2 * 6)  # c = 2 n lambda / M = 1 / 4: ridge 0.25, so -3 < -0.125
    step, _, _ = maj.at_lambda(lam)(z, maj.start())
    assert step[1] == 0.0 and np.all(step[2:] != 0.0)
    e[0] = -0.2  # below -ridge/2 = -0.125 (but above -1.5 ridge and -0.5 / ridge): frozen
    maj.e, maj.e_gam = e, e + 1e-6
    assert maj.at_lambda(lam)(z, maj.start())[0][1] == 0.0
    e[0] = -0.1  # above -ridge/2: kept
    maj.e, maj.e_gam = e, e + 1e-6
    assert maj.at_lambda(lam)(z, maj.start())[0][1] != 0.0


def _cholesky_step(K, w, z, alpha, lam, M, gam):
    n = K.shape[0]
    A = np.empty((n + 1, n + 1))
    A[0, 0] = w.sum()
    A[0, 1:] = A[1:, 0] = K @ w
    A[1:, 1:] = K @ np.diag(w) @ K
    P = A + gam * np.eye(n + 1)
    P[1:, 1:] += lam * (2.0 * n / M) * K
    rhs = np.r_[z.sum(), K @ (z + 2.0 * n * lam * alpha[1:])]
    return -np.linalg.solve(P, rhs) / M, rhs


@pytest.mark.parametrize("lam", [1e-3, 0.2])
def test_kernel_cholesky_step_is_the_weighted_majorisers(lam):
    K, z, alpha = _kernel(seed=3)
    w = np.random.default_rng(4).uniform(0.2, 3.0, size=12)
    loss = DWDLoss(1.0, w, scale=1.0)
    maj = KernelCholesky(K, loss, 1e-6, predictor=None)
    assert maj.solver == "wkdwd"
    A = np.block([[np.array([[w.sum()]]), (K @ w)[None, :]], [(K @ w)[:, None], K @ np.diag(w) @ K]])
    np.testing.assert_allclose(maj.A, A + 1e-6 * np.eye(13), rtol=1e-12, atol=1e-14)  # both triangles
    step, df, grad_sq = maj.at_lambda(lam)(z, alpha)
    expected, rhs = _cholesky_step(K, w, z, alpha, lam, loss.lipschitz, 1e-6)
    np.testing.assert_allclose(step, expected, rtol=1e-7, atol=1e-9 * np.abs(expected).max())
    np.testing.assert_allclose(df, expected[0] + K @ expected[1:], rtol=1e-7, atol=1e-9 * np.abs(df).max())
    assert grad_sq == pytest.approx(rhs @ rhs / 144.0, rel=1e-12)
    f = alpha[0] + K @ alpha[1:]
    assert maj.penalty_at(alpha, f) == pytest.approx(alpha[1:] @ K @ alpha[1:], rel=1e-10)


def test_kernel_cholesky_refuses_an_overflowed_majoriser_and_shares_its_eigenbasis():
    K, _, _ = _kernel(seed=5)
    w = np.full(12, 1e300)
    X = np.random.default_rng(7).normal(size=(12, 3))
    signed = 1e10 * (X @ X.T)  # entries of both signs: the overflowed products meet as inf - inf (invalid)
    for state in ("ignore", "raise"):  # also where the caller has numpy raise on overflow and invalid values
        for big in (1e10 * K, signed):
            with np.errstate(all=state), pytest.raises(ValueError, match="overflows double precision in the "
                                                                          "majoriser"):
                KernelCholesky(big, DWDLoss(1.0, w, scale=1.0), 0.0, predictor=None)
    wts = np.random.default_rng(6).uniform(0.5, 2.0, size=12)
    system = KernelCholesky(K, DWDLoss(1.0, wts, scale=1.0), 0.0, predictor=None).newton_system()
    np.testing.assert_allclose(system.scale[0], (4.0 / 12) * wts.sum(), rtol=1e-13)  # the weights are handed on
    maj = KernelCholesky(K, DWDLoss(1.0, np.ones(12), scale=1.0), 0.0, predictor=None)
    first, second = maj.newton_system(), maj.newton_system()
    assert first.e is second.e and first.U is second.U
    np.testing.assert_allclose((first.U * first.e) @ first.U.T, K, atol=1e-12)
    np.testing.assert_allclose(maj.B, (2.0 * 12 / 4.0) * K, rtol=1e-15)
