"""The conjugate-gradient majoriser (:mod:`kerndwd.engine.majorisers.iterative`):
its system ``(Z'WZ + gam I + c diag(0, I)) step = -rhs / M``, the Jacobi
preconditioner, the warm start from the last step (reset by ``start``), the
descent check that re-solves from zero, and the settings it hands to SciPy's
``cg``.
"""

import numpy as np
import pytest
from scipy import sparse

from kerndwd.engine import DWDLoss
from kerndwd.engine.forms import SparseLinearForm
from kerndwd.engine.majorisers import iterative
from kerndwd.engine.majorisers.iterative import CG_RTOL, LinearCG
from kerndwd.engine.newton_systems import SparseLinearNewton


def _data(weighted=False, seed=0):
    rng = np.random.default_rng(seed)
    X = sparse.random(40, 6, density=0.4, format="csr", random_state=seed) * 3.0
    z = rng.normal(size=40)
    coord = rng.normal(size=7)
    w = rng.uniform(0.3, 2.0, size=40) if weighted else None
    return X, z, coord, w


def _system(X, w, lam, M, gam):
    n, p = X.shape
    Z = np.column_stack([np.ones(n), X.toarray()])
    W = np.ones(n) if w is None else w
    c = 2.0 * n * lam / M
    return Z.T @ (W[:, None] * Z) + gam * np.eye(p + 1) + c * np.diag(np.r_[0.0, np.ones(p)]), Z


@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("lam", [1e-3, 0.5])
def test_the_step_solves_the_majoriser_system(weighted, lam):
    X, z, coord, w = _data(weighted)
    loss = DWDLoss(1.0, w, scale=1.0)
    maj = LinearCG(SparseLinearForm(X), loss, 1e-6, rtol=1e-12)
    assert maj.solver == "cgldwd" and CG_RTOL == 1e-6
    step, df, grad_sq = maj.at_lambda(lam)(z, coord)
    A, Z = _system(X, w, lam, loss.lipschitz, 1e-6)
    rhs = Z.T @ z + 2.0 * 40 * lam * np.r_[0.0, coord[1:]]
    np.testing.assert_allclose(step, -np.linalg.solve(A, rhs) / loss.lipschitz, rtol=1e-8, atol=1e-12)
    np.testing.assert_allclose(df, Z @ step, rtol=1e-12, atol=1e-14)
    assert grad_sq == pytest.approx(rhs @ rhs / 1600.0, rel=1e-12)
    assert type(maj.newton_system()) is SparseLinearNewton


def test_cg_gets_the_tolerance_the_cap_and_the_jacobi_preconditioner(monkeypatch):
    X, z, coord, w = _data(weighted=True)
    loss = DWDLoss(1.0, w, scale=1.0)
    calls = []
    real = iterative.cg

    def spy(A, b, **kw):
        calls.append(kw)
        return real(A, b, **kw)

    monkeypatch.setattr(iterative, "cg", spy)
    maj = LinearCG(SparseLinearForm(X), loss, 1e-6, rtol=1e-5, cg_maxiter=9)
    lam = 0.2
    maj.at_lambda(lam)(z, coord)
    kw = calls[0]
    assert kw["rtol"] == 1e-5 and kw["atol"] == 0.0 and kw["maxiter"] == 9
    assert not kw["x0"].any()  # the first solve of a path starts from zero
    A, _ = _system(X, w, lam, loss.lipschitz, 1e-6)
    np.testing.assert_allclose(kw["M"].matvec(np.ones(7)), 1.0 / np.diag(A), rtol=1e-12)
    assert maj.cg_iterations > 0 and maj.cg_iterations <= 9


def test_each_solve_starts_from_the_last_step_until_a_new_path(monkeypatch):
    X, z, coord, _ = _data()
    starts = []
    real = iterative.cg

    def spy(A, b, x0=None, **kw):
        starts.append(None if x0 is None else np.array(x0))
        return real(A, b, x0=x0, **kw)

    monkeypatch.setattr(iterative, "cg", spy)
    maj = LinearCG(SparseLinearForm(X), DWDLoss(1.0), 1e-6)
    step_fn = maj.at_lambda(0.1)
    first = step_fn(z, coord)[0]
    step_fn(z, coord + 0.01)
    np.testing.assert_array_equal(starts[1], first)
    maj.start()
    step_fn(z, coord)
    assert not starts[2].any()


def test_a_warm_start_that_does_not_descend_is_solved_again_from_zero(monkeypatch):
    """With one CG iteration allowed, a warm start far from the solution
    leaves ``Q(s) = s'As/2 - b's > 0``: the step is solved again from zero
    (``x0=None``), which descends."""
    X, z, coord, _ = _data()
    loss = DWDLoss(1.0)
    starts = []
    real = iterative.cg

    def spy(A, b, x0=None, **kw):
        starts.append(x0)
        return real(A, b, x0=x0, **kw)

    monkeypatch.setattr(iterative, "cg", spy)
    maj = LinearCG(SparseLinearForm(X), loss, 1e-6, cg_maxiter=1)
    step_fn = maj.at_lambda(0.1)
    maj._warm = np.full(7, 1e6)
    step, _, _ = step_fn(z, coord)
    assert len(starts) == 2 and starts[1] is None
    A, Z = _system(X, None, 0.1, loss.lipschitz, 1e-6)
    b = -(Z.T @ z + 2.0 * 40 * 0.1 * np.r_[0.0, coord[1:]]) / loss.lipschitz
    assert step @ (0.5 * A @ step - b) <= 0.0
    np.testing.assert_array_equal(maj._warm, step)
    # a warm start that descends is kept: one solve
    starts.clear()
    step_fn(z, coord)
    assert len(starts) == 1 and starts[0] is not None


def test_the_operator_is_the_ridged_weighted_gram_matrix():
    X, _, _, w = _data(weighted=True, seed=3)
    loss = DWDLoss(1.0, w, scale=1.0)
    maj = LinearCG(SparseLinearForm(X), loss, 0.25)
    A, _ = _system(X, w, 0.0, loss.lipschitz, 0.25)
    A[1:, 1:] += 3.0 * np.eye(6)
    op = maj._gram(3.0)
    np.testing.assert_allclose(np.column_stack([op.matvec(e) for e in np.eye(7)]), A, rtol=1e-12, atol=1e-12)
    assert maj.gam == 0.25 and maj.rtol == CG_RTOL and maj.cg_maxiter is None
    np.testing.assert_array_equal(LinearCG(SparseLinearForm(X), DWDLoss(1.0), 0.0).w, np.ones(40))


def test_cg_iterations_count_every_iteration_of_every_solve(monkeypatch):
    """``cg_iterations`` starts at 0 and adds each solve's iterations (the
    callbacks SciPy makes), across passes and lambdas."""
    X, z, coord, w = _data(weighted=True, seed=5)
    seen = []
    real = iterative.cg

    def spy(A, b, callback=None, **kw):
        def both(xk):
            seen.append(1)
            callback(xk)
        return real(A, b, callback=both, **kw)

    monkeypatch.setattr(iterative, "cg", spy)
    loss = DWDLoss(1.0, w, scale=1.0)
    maj = LinearCG(SparseLinearForm(X), loss, 1e-6)
    assert maj.cg_iterations == 0
    maj.at_lambda(0.2)(z, coord)
    maj.at_lambda(0.2)(z, coord + 0.5)
    maj.at_lambda(0.05)(z, coord)
    assert maj.cg_iterations == len(seen) and len(seen) > 3
    system = maj.newton_system()
    np.testing.assert_allclose(system.scale[0], loss.lipschitz / 40 * w.sum(), rtol=1e-13)  # the weights handed on


@pytest.mark.parametrize("s, again", [(0.5, False), (1.0, False), (1.9, False), (2.0 + 1e-3, True),
                                      (2.2, True), (40.0, True)])
def test_the_descent_check_is_q_of_the_step_against_zero(s, again):
    """With no CG iteration allowed (``cg_maxiter=0``) the warm start is the
    step: at ``s`` times the solution ``x*``, ``Q(s x*) = (s^2/2 - s) b'x*``,
    below zero for ``0 < s < 2`` (kept) and above it beyond (solved again from
    zero, which gives the zero step).  Scaled so that ``b'x* = 1``, the values
    just past ``s = 2`` lie in (0, 1)."""
    X, z, coord, _ = _data()
    loss = DWDLoss(1.0)
    maj = LinearCG(SparseLinearForm(X), loss, 1e-6, cg_maxiter=0)
    step_fn = maj.at_lambda(0.1)
    A, Z = _system(X, None, 0.1, loss.lipschitz, 1e-6)
    b = -(Z.T @ z + 2.0 * 40 * 0.1 * np.r_[0.0, coord[1:]]) / loss.lipschitz
    x_star = np.linalg.solve(A, b)
    scale = 1.0 / np.sqrt(b @ x_star)  # z and coord scaled by it: b'x* = 1
    x_star *= scale
    maj._warm = s * x_star
    step, df, _ = step_fn(z * scale, coord * scale)
    q = s * s / 2.0 - s
    assert (s * x_star) @ (0.5 * A @ (s * x_star) - b * scale) == pytest.approx(q, rel=1e-9, abs=1e-12)
    if again:
        assert not step.any() and not np.asarray(df).any()
    else:
        np.testing.assert_allclose(step, s * x_star, rtol=1e-12)
