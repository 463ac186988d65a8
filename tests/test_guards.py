"""Guards of the path solvers that ordinary fits never reach.

* Newton's rounding guards (``kerndwd/engine/solvers/newton.py`` and the
  template it runs in, ``engine/solvers/template.py``): a lambda whose
  objective ends above the one it started from ("rounding carried it off":
  neither Newton nor MM ever raises it) is abandoned with
  ``jerr = -(DIVERGED + l)`` and its finite starting point reported; a
  Newton iteration that can no longer lower ``F`` nor the gradient
  (``STALL_LIMIT`` iterations in a row) reports "stalled" and the lambda is
  handed to the MM iteration.
* BCD's global step (``engine/majorisers/blocks.py``) is skipped when its
  minimiser promises no decrease of the majoriser (``decrease <= 0``):
  ``step`` and ``f`` are left as they were and the sweep goes on with its
  block steps.
"""

import warnings
from unittest import mock

import numpy as np
import pytest

import kerndwd
from kerndwd.engine import FactorCache, Problem, build_majoriser, results
from kerndwd.engine.majorisers import blocks
from kerndwd.engine.solvers import STALLED, newton
from _engine import evaluate, newton_path

LAMS = [1.0, 0.1, 0.01]


def linear_data(seed=3, n=60, p=4):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, p))
    y = np.where(X[:, 0] + 0.5 * rng.standard_normal(n) > 0, 1.0, -1.0)
    return X, y


def dwd_objective(X, y, alpha, lam, q=1.0):
    """``(1/n) sum V_q(y f) + lam ||beta||^2`` of a linear fit, from the loss's
    definition: ``V_q(u) = 1 - u`` for ``u <= q/(q+1)``, else
    ``(1/u^q) q^q / (q+1)^(q+1)``."""
    f = alpha[0] + X @ alpha[1:]
    u = y * f
    knot = q / (q + 1.0)
    V = np.where(u <= knot, 1.0 - u, q ** q / (q + 1.0) ** (q + 1.0) / np.maximum(u, knot) ** q)
    return V.mean() + lam * alpha[1:] @ alpha[1:]


def uphill_line_search(at_lam):
    """``newton.line_search``, except at ``at_lam``: there it takes the step
    backwards (``t = -1``), which raises the convex ``F``, and reports the
    true value and penalty there, as rounding that "accepted" it would."""
    real = newton.line_search

    def search(objective, f, df, F, slope, lam, pen0, pen1, pen2):
        if lam != at_lam:
            return real(objective, f, df, F, slope, lam, pen0, pen1, pen2)
        t = -1.0
        data, _ = objective.along(f, df, t)
        pen = pen0 + t * (2.0 * pen1 + t * pen2)
        return t, data + lam * pen, pen

    return search


def test_a_newton_lambda_that_ends_above_its_start_is_abandoned():
    X, y = linear_data()
    clean_problem = Problem.from_arrays(X, y, LAMS, stop="kkt", eps=1e-10, method="newton")
    maj = build_majoriser(clean_problem, FactorCache(X, clean_problem.kern))
    clean = newton_path(maj, clean_problem)
    assert clean.jerr == 0
    # the budget runs out two Newton steps into the second lambda, both uphill
    problem = Problem.from_arrays(X, y, LAMS, stop="kkt", eps=1e-10, method="newton",
                                  maxit=int(clean.npass[0]) + 1)
    maj = build_majoriser(problem, FactorCache(X, problem.kern))
    with mock.patch.object(newton, "line_search", uphill_line_search(LAMS[1])):
        res = newton_path(maj, problem)
    assert res.jerr == -(results.DIVERGED + 2)
    assert results.jerr_diverged(res.jerr) and results.jerr_lambda(res.jerr) == 2
    # the finished first lambda is kept, and the abandoned one reports its start
    assert res.alpha.shape == (X.shape[1] + 1, 1)
    np.testing.assert_allclose(res.alpha[:, 0], clean.alpha[:, 0], rtol=1e-12, atol=1e-14)
    alpha, value, grad_norm = res.unfinished
    np.testing.assert_allclose(alpha, clean.alpha[:, 0], rtol=1e-12, atol=1e-14)
    assert value == pytest.approx(dwd_objective(X, y, alpha, LAMS[1]), rel=1e-10)
    _, _, g = evaluate(maj.form, alpha, problem.y, problem.loss, LAMS[1])
    assert grad_norm == pytest.approx(np.linalg.norm(g), rel=1e-9)


def test_the_abandoned_newton_lambda_is_named_in_the_warning():
    X, y = linear_data()
    clean = kerndwd.fit(X, y, LAMS, kern=kerndwd.vanilladot(), stop="kkt", eps=1e-10, method="newton")
    with mock.patch.object(newton, "line_search", uphill_line_search(LAMS[1])):
        with pytest.warns(kerndwd.DWDConvergenceWarning) as caught:
            path = kerndwd.fit(X, y, LAMS, kern=kerndwd.vanilladot(), stop="kkt", eps=1e-10, method="newton",
                               maxit=int(clean.npass[0]) + 1)
    text = " ".join(str(w.message) for w in caught)
    assert "lambda #2 = 0.1 was abandoned" in text and "raised the objective it must lower" in text
    assert f"jerr={-(results.DIVERGED + 2)}" in text
    assert path.jerr == -(results.DIVERGED + 2) and path.lambda_.size == 1


def test_newton_stalled_by_rounding_hands_the_lambda_to_mm():
    # eps = 1e-300 is below what rounding lets the gradient reach: Newton's own
    # counter (no decrease of F beyond rounding, no halving of the gradient for
    # STALL_LIMIT iterations) must stop it, and MM continue to the budget
    X, y = linear_data(seed=4, n=50, p=3)
    problem = Problem.from_arrays(X, y, [0.1], stop="kkt", eps=1e-300, method="newton", maxit=300)
    maj = build_majoriser(problem, FactorCache(X, problem.kern))
    real_run = newton.NewtonIteration.run
    seen = []

    def spy(self, l, lam, remaining, callback):
        status, passes = real_run(self, l, lam, remaining, callback)
        seen.append((status, passes, self.alpha()))
        return status, passes

    with mock.patch.object(newton.NewtonIteration, "run", spy):
        res = newton_path(maj, problem)
    assert [s for s, _, _ in seen] == [STALLED]
    status, passes, alpha_at_stall = seen[0]
    assert newton.STALL_LIMIT <= passes < 300
    # it stalled at the optimum, at the floor rounding sets on the gradient
    _, _, g = evaluate(maj.form, alpha_at_stall, problem.y, problem.loss, 0.1)
    assert np.linalg.norm(g) < 1e-12
    assert res.solvers == ("newton", "mm")
    assert res.jerr == -1 and int(res.npass.sum()) == 301  # one budget across the hand-over


# ---------------------------------------------------------------- BCD's global step
def circle(n=300, seed=3):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, 2))
    y = np.where((X ** 2).sum(axis=1) + 0.4 * rng.standard_normal(n) > 1.4, 1, -1)
    return X, y


def test_a_global_step_without_descent_is_skipped_and_moves_nothing():
    """With the minimiser of the 3 x 3 model replaced by a small negative multiple (so the
    model promises an increase, ``decrease < 0``), ``_global_step`` must say it
    did not move and leave ``step`` and ``f`` unchanged; the block steps alone
    still reach the optimum."""
    X, y = circle()
    kern = kerndwd.rbfdot(1.0)
    reference = kerndwd.fit(X, y, [0.05], kern=kern, stop="kkt", eps=1e-10, maxit=1000)
    real_minimise = blocks._minimise
    real_global = blocks.BlockCoordinateKernel._global_step
    calls = []

    def backwards(*args, **kwargs):
        # small, so that no coefficient reaches the bounds the step holds them to
        return -1e-3 * real_minimise(*args, **kwargs)

    def recording(self, step, coord, f_now, z, two_n_lam, weights):
        step0, f0 = step.copy(), f_now.copy()
        moved = real_global(self, step, coord, f_now, z, two_n_lam, weights)
        calls.append((moved, np.array_equal(step, step0) and np.array_equal(f_now, f0)))
        return moved

    with mock.patch.object(blocks, "_minimise", backwards), \
            mock.patch.object(blocks.BlockCoordinateKernel, "_global_step", recording):
        with warnings.catch_warnings():
            warnings.simplefilter("error", kerndwd.DWDConvergenceWarning)
            path = kerndwd.fit(X, y, [0.05], kern=kern, stop="kkt", eps=1e-6, maxit=3000, solver="bcd",
                               block_size=32)
    assert len(calls) >= 5
    assert all(moved is False and untouched for moved, untouched in calls), calls[:5]
    assert path.jerr == 0 and path.kkt[0] <= 1e-6
    # a gradient norm of 1e-6 leaves the objective 3e-8 (relative) above the optimum here
    assert reference.objective[0] <= path.objective[0] <= reference.objective[0] * (1 + 1e-6)


def test_at_the_rounding_floor_the_global_step_declines_and_sweeps_never_climb():
    """An unreachable eps keeps BCD sweeping at the optimum, where the model's
    decrease is rounding: the guard declines some global steps (measured: 15 of
    150 sweeps here) and the objective of the sweeps' iterates never rises."""
    X, y = circle()
    kern = kerndwd.rbfdot(1.0)
    real_global = blocks.BlockCoordinateKernel._global_step
    moved = []

    def recording(self, *args):
        out = real_global(self, *args)
        moved.append(out)
        return out

    values = []
    problem = Problem.from_arrays(X, np.where(y > 0, 1.0, -1.0), [0.05], kern=kern, stop="kkt", eps=1e-300,
                                  maxit=150, design=kerndwd.engine.make_design("bcd", {"block_size": 32}))
    maj = build_majoriser(problem, FactorCache(X, kern))

    def on_pass(step):
        values.append(step.iteration.value(0.05))

    with mock.patch.object(blocks.BlockCoordinateKernel, "_global_step", recording):
        res = kerndwd.engine.run_path(maj, problem, on_pass)
    assert res.jerr == -1
    assert moved.count(False) >= 5 and moved.count(True) >= 5
    values = np.array(values)
    assert (np.diff(values) <= 1e-12 * values[0]).all()
