"""Properties of the MM loop (``kerndwd/engine/loop.py``) and of the loss
(``kerndwd/engine/loss.py``) that a mutation run showed the rest of the suite
leaves unchecked (tests/README.md, "Mutation testing").

Each test states a promise of a docstring or of the paper (Wang & Zou 2018):
the two pieces of ``V_q`` (3.2) and of ``V_q'`` (3.4), the curvature bound of
Lemma 2, the weight rescaling of :class:`DWDLoss`, the ``jerr`` codes, the
stopping rules and the budget of :func:`mm_path`, and the units of
:func:`run_path`.  Tolerances are many orders above rounding.
"""

import pickle
import warnings
from dataclasses import replace

import numpy as np
import pytest

from kerndwd.engine import FactorCache, Problem, build_majoriser, results, solvers
from _engine import evaluate, mm_path
from kerndwd.engine.loss import (WEIGHT_OCTAVES, DWDLoss, loss_derivs, loss_derivs_and_curvatures, loss_values,
                                 loss_values_and_derivs, weight_scale)

QS = (0.05, 0.5, 1.0, 2.0, 7.0, 40.0)


def margins_for(q):
    """Margins on both sides of the knot ``t = q/(q+1)``, the knot itself included."""
    t = q / (q + 1.0)
    return np.concatenate([np.linspace(-3.0, 3.0, 61), t * (1.0 + np.array([-1e-3, -1e-7, 0.0, 1e-7, 1e-3])),
                           t + np.geomspace(1e-3, 1e5, 17)])


def v_direct(u, q):
    """``V_q`` of (3.2) written independently (logs for the power piece)."""
    t = q / (q + 1.0)
    out = 1.0 - u
    hi = u > t
    out[hi] = np.exp(q * (np.log(t) - np.log(u[hi]))) / (q + 1.0)
    return out


def dv_direct(u, q):
    """``V_q'`` of (3.4) written independently."""
    t = q / (q + 1.0)
    out = -np.ones_like(u)
    hi = u > t
    out[hi] = -np.exp((q + 1.0) * (np.log(t) - np.log(u[hi])))
    return out


# ---------------------------------------------------------------- the loss V_q


@pytest.mark.parametrize("q", QS)
def test_loss_and_derivative_follow_the_two_pieces_of_the_paper(q):
    u = margins_for(q)
    t = q / (q + 1.0)
    np.testing.assert_allclose(loss_values(u, q), v_direct(u, q), rtol=1e-10, atol=0)
    np.testing.assert_allclose(loss_derivs(u, q), dv_direct(u, q), rtol=1e-10, atol=0)
    low = u <= t
    np.testing.assert_allclose(loss_values(u[low], q), 1.0 - u[low], rtol=1e-13)
    assert (loss_derivs(u[low], q) == -1.0).all()
    # continuous and differentiable at the knot: V_q(t) = 1/(q+1), V_q'(t) = -1
    at = np.array([t])
    assert loss_values(at, q)[0] == pytest.approx(1.0 / (q + 1.0), rel=1e-13)
    assert loss_derivs(at, q)[0] == pytest.approx(-1.0, rel=1e-13)


@pytest.mark.parametrize("q", QS)
def test_fused_kernels_agree_with_the_separate_ones(q):
    u = margins_for(q)
    values, derivs = loss_values_and_derivs(u, q)
    np.testing.assert_allclose(values, loss_values(u, q), rtol=1e-13, atol=0)
    np.testing.assert_allclose(derivs, loss_derivs(u, q), rtol=1e-13, atol=0)
    derivs2, _ = loss_derivs_and_curvatures(u, q)
    np.testing.assert_allclose(derivs2, loss_derivs(u, q), rtol=1e-13, atol=0)
    # shapes are kept, the input is not written to
    grid = u[:60].reshape(6, 10).copy()
    before = grid.copy()
    for out in (loss_values(grid, q), loss_derivs(grid, q), *loss_values_and_derivs(grid, q),
                *loss_derivs_and_curvatures(grid, q)):
        assert out.shape == grid.shape
    np.testing.assert_array_equal(grid, before)


@pytest.mark.parametrize("q", QS)
def test_loss_is_convex_decreasing_and_one_lipschitz(q):
    u = np.sort(margins_for(q))
    v, d = loss_values(u, q), loss_derivs(u, q)
    assert (np.diff(v) <= 1e-15).all()  # nonincreasing
    assert (d <= 0).all() and (d >= -1.0).all()  # 1-Lipschitz
    assert (np.diff(d) >= -1e-15).all()  # V' nondecreasing: convex
    assert (v > 0).all()


@pytest.mark.parametrize("q", QS)
def test_curvature_is_zero_up_to_the_knot_and_bounded_by_lemma_2(q):
    t = q / (q + 1.0)
    u = margins_for(q)
    derivs, curv = loss_derivs_and_curvatures(u, q)
    M = (q + 1.0) ** 2 / q
    assert (curv[u <= t] == 0.0).all()
    assert (curv[u > t] > 0.0).all()
    assert (curv <= M * (1.0 + 1e-9)).all()
    # beyond the knot: (q+1) t^(q+1) u^(-q-2) = -(q+1) V'(u) / u
    hi = u > t
    np.testing.assert_allclose(curv[hi], -(q + 1.0) * dv_direct(u, q)[hi] / u[hi], rtol=1e-10)
    # the bound is attained just above the knot
    just_above = np.array([t * (1.0 + 1e-9)])
    assert loss_derivs_and_curvatures(just_above, q)[1][0] == pytest.approx(M, rel=1e-6)
    # and it is the derivative of V': central differences away from the knot
    w = t * np.array([1.5, 2.0, 4.0, 10.0])
    h = 1e-6 * w
    fd = (loss_derivs(w + h, q) - loss_derivs(w - h, q)) / (2.0 * h)
    np.testing.assert_allclose(loss_derivs_and_curvatures(w, q)[1], fd, rtol=1e-5)


# ------------------------------------------------------- weights and DWDLoss


def test_weight_scale_is_one_near_unit_weights_and_the_nearest_power_of_two_beyond():
    assert weight_scale(None) == 1.0
    assert weight_scale(np.array([0.5, 1.0, 3.0])) == 1.0
    for octave in (-WEIGHT_OCTAVES, WEIGHT_OCTAVES):  # the edges of the band are inside it
        assert weight_scale(np.full(4, 2.0**octave)) == 1.0
    for octave in (-40, -WEIGHT_OCTAVES - 1, WEIGHT_OCTAVES + 1, 40, 900):
        assert weight_scale(np.full(4, 2.0**octave)) == 2.0**octave
    # the geometric mean, not the arithmetic one: 2^30 and 2^10 -> 2^20
    assert weight_scale(np.array([2.0**30, 2.0**10])) == 2.0**20
    # nearest power of two: 1.3e6 (2^20.3) -> 2^20, 1.6e6 (2^20.6) -> 2^21
    assert weight_scale(np.full(3, 1.3e6)) == 2.0**20
    assert weight_scale(np.full(3, 1.6e6)) == 2.0**21
    # zero weights leave the mean alone
    w = np.array([2.0**25, 0.0, 2.0**25, 0.0])
    assert weight_scale(w) == 2.0**25


@pytest.mark.parametrize("q", (0.5, 1.0, 3.0))
def test_loss_object_divides_weights_by_their_scale_and_keeps_lemma_2s_constant(q):
    plain = DWDLoss(q)
    assert plain.q == q and plain.scale == 1.0 and plain.weights is None and not plain.weighted
    assert plain.lipschitz == pytest.approx((q + 1.0) ** 2 / q, rel=1e-15)
    w = np.array([1.0, 2.0, 0.5, 4.0])
    near = DWDLoss(q, w)
    assert near.scale == 1.0 and near.weighted
    np.testing.assert_array_equal(near.weights, w)
    heavy = DWDLoss(q, w * 2.0**40)
    assert heavy.scale == 2.0**40
    np.testing.assert_array_equal(heavy.weights, w)
    given = DWDLoss(q, w, scale=4.0)
    assert given.scale == 4.0
    np.testing.assert_array_equal(given.weights, w / 4.0)
    assert DWDLoss(q, w, scale=1.0).weights is w
    assert "weighted=True" in repr(near) and "weighted=False" in repr(plain) and f"q={q:g}" in repr(plain)


@pytest.mark.parametrize("q", (0.5, 1.0, 3.0))
def test_loss_object_methods_are_the_kernels_at_its_q(q):
    rng = np.random.default_rng(4)
    u = rng.normal(0.5, 2.0, 30)
    loss = DWDLoss(q)
    np.testing.assert_allclose(loss.value(u), v_direct(u, q), rtol=1e-10)
    np.testing.assert_allclose(loss.deriv(u), dv_direct(u, q), rtol=1e-10)
    for a, b in zip(loss.values_and_derivs(u), (v_direct(u, q), dv_direct(u, q))):
        np.testing.assert_allclose(a, b, rtol=1e-10)
    d, c = loss.derivs_and_curvatures(u)
    np.testing.assert_allclose(d, dv_direct(u, q), rtol=1e-10)
    np.testing.assert_array_equal(c, loss_derivs_and_curvatures(u, q)[1])


def test_data_term_is_divided_by_n_not_by_the_total_weight():
    rng = np.random.default_rng(5)
    u = rng.normal(0.5, 2.0, 12)
    y = np.where(rng.random(12) < 0.5, -1.0, 1.0)
    w = rng.uniform(0.1, 5.0, 12)
    plain, weighted = DWDLoss(2.0), DWDLoss(2.0, w)
    assert plain.mean(u) == pytest.approx(v_direct(u, 2.0).sum() / 12, rel=1e-12)
    assert weighted.mean(u) == pytest.approx((w * v_direct(u, 2.0)).sum() / 12, rel=1e-12)
    assert isinstance(weighted.mean(u), float)
    assert plain.weighted_labels(y) is y
    np.testing.assert_array_equal(weighted.weighted_labels(y), w * y)


def test_subset_with_q_and_pickling_keep_weights_and_scale():
    w = np.arange(1.0, 7.0) * 2.0**30
    loss = DWDLoss(2.0, w)
    rows = np.array([0, 2, 5])
    sub = loss.subset(rows)
    assert sub.q == 2.0 and sub.scale == loss.scale == 2.0**32
    np.testing.assert_array_equal(sub.weights, loss.weights[rows])
    assert DWDLoss(2.0).subset(rows).weights is None
    other = loss.with_q(0.5)
    assert other.q == 0.5 and other.scale == loss.scale
    assert other.lipschitz == pytest.approx(1.5**2 / 0.5)
    np.testing.assert_array_equal(other.weights, loss.weights)
    back = pickle.loads(pickle.dumps(loss))
    assert back.q == 2.0 and back.scale == loss.scale and back.lipschitz == loss.lipschitz
    np.testing.assert_array_equal(back.weights, loss.weights)  # not divided a second time
    plain = pickle.loads(pickle.dumps(DWDLoss(0.5)))
    assert plain.weights is None and plain.scale == 1.0 and plain.q == 0.5


# ------------------------------------------------------------- jerr and helpers


def test_jerr_codes_name_the_lambda_and_tell_divergence_from_the_budget():
    for l in (0, 1, 4, 99, 12345):
        code = results.diverged_jerr(l)
        assert code == -(results.DIVERGED + l + 1)
        assert results.jerr_lambda(code) == l + 1 and results.jerr_diverged(code)
    for l in (0, 1, 4, 99, results.DIVERGED - 1):  # budget codes, on paths shorter than DIVERGED lambdas
        assert results.jerr_lambda(-(l + 1)) == l + 1 and not results.jerr_diverged(-(l + 1))
    assert not results.jerr_diverged(0)


def test_stable_norm_survives_entries_beyond_1e154():
    assert results.stable_norm(np.array([3.0, 4.0])) == pytest.approx(5.0, rel=1e-15)
    assert results.stable_norm(np.array([3e200, -4e200])) == pytest.approx(5e200, rel=1e-14)
    assert results.stable_norm(np.array([1e300, 1e300, 0.0])) == pytest.approx(np.sqrt(2.0) * 1e300, rel=1e-14)
    assert results.stable_norm(np.array([np.inf, 1.0])) == np.inf
    assert np.isnan(results.stable_norm(np.array([np.nan, 1.0])))
    assert isinstance(results.stable_norm(np.array([1.0])), float)


def test_climbed_allows_rounding_only():
    for start in (1e-3, 0.7, 1e8):
        assert not results.climbed(start, start)
        assert not results.climbed(start * (1.0 - 1e-3), start)
        assert not results.climbed(start * (1.0 + 1e-9), start)
        assert results.climbed(start * (1.0 + 1e-4), start)
    assert not results.climbed(0.0, 0.0) and results.climbed(1e-300, 0.0)


def test_all_finite_looks_at_every_part():
    assert results.all_finite(1.0, np.ones(3), np.zeros((2, 2)))
    assert not results.all_finite(1.0, np.array([1.0, np.inf]))
    assert not results.all_finite(np.nan, np.ones(3))
    assert not results.all_finite(np.ones(2), np.ones(2), np.array([-np.inf]))


@pytest.fixture
def scratch_solver():
    name = "_scratch"
    yield name
    solvers.SOLVERS.pop(name, None)


def test_register_solver_records_the_iteration_and_its_capabilities(scratch_solver):
    from kerndwd.engine import SolverCapabilities
    from kerndwd.engine.solvers.mm import MMIteration

    class Counted(MMIteration):
        name = scratch_solver
        capabilities = SolverCapabilities(stop_rules=("kkt",), storage=("dense",), momentum=False)
        runs = []

        def run(self, l, lam, remaining, callback):
            self.runs.append(l)
            return super().run(l, lam, remaining, callback)

    assert solvers.register_solver(Counted) is Counted
    assert scratch_solver in solvers.solver_names() and solvers.solver_names() == sorted(solvers.solver_names())
    assert solvers.solver_capabilities(scratch_solver).stop_rules == ("kkt",)
    assert solvers.solver_capabilities("mm").momentum and "remote" in solvers.solver_capabilities("mm").storage
    assert "remote" not in solvers.solver_capabilities("newton").storage
    with pytest.raises(TypeError, match="Iteration subclass"):
        solvers.register_solver(object)
    # a registered solver is what run_path runs, lambda by lambda, with the template's bookkeeping
    X, y = _data()
    problem = Problem.from_arrays(X, y, [1.0, 0.1], stop="kkt", eps=1e-8, method=scratch_solver)
    maj = _majoriser(problem)
    res = solvers.run_path(maj, problem)
    assert Counted.runs[:2] == [0, 1] and res.solvers == (scratch_solver,)
    np.testing.assert_array_equal(res.alpha, mm_path(maj, problem).alpha)


@pytest.mark.parametrize("storage,stop,solver,expected", [
    ("dense", "kkt", "exact", "newton"), ("dense", "step", "exact", "mm"), ("sparse", "kkt", "exact", "newton"),
    ("remote", "kkt", "exact", "mm"), ("remote", "step", "exact", "mm"), ("dense", "kkt", "bcd", "mm"),
    ("dense", "step", "bcd", "mm")])
def test_the_default_solver_is_newton_for_the_gradient_rule_where_the_design_and_rows_allow(storage, stop, solver,
                                                                                             expected):
    import kerndwd
    from kerndwd.engine import make_design, resolve

    kern = kerndwd.vanilladot() if solver == "exact" else kerndwd.rbfdot(1.0)
    assert resolve(make_design(solver, {}), kern, storage, stop=stop).method == expected


def test_collect_evaluates_norms_and_keeps_lambda_order():
    g1, g2 = np.array([3.0, 4.0]), np.array([0.0, 1e-3])
    finished = [(np.array([1.0, 2.0]), 0.5, g1), (np.array([3.0, 4.0]), 0.25, g2)]
    res = results.PathResult.collect(finished, np.array([1.0, 0.1, 0.01]), np.array([3, 4, 5]), -3, 2,
                                  unfinished=(np.array([5.0, 6.0]), 0.2, np.array([0.0, 2.0])))
    np.testing.assert_array_equal(res.alpha, [[1.0, 3.0], [2.0, 4.0]])
    np.testing.assert_array_equal(res.lambdas, [1.0, 0.1])
    np.testing.assert_allclose(res.kkt, [5.0, 1e-3])
    np.testing.assert_array_equal(res.objective, [0.5, 0.25])
    assert res.jerr == -3 and res.unfinished[1] == 0.2 and res.unfinished[2] == pytest.approx(2.0)
    empty = results.PathResult.collect([], np.array([1.0]), np.array([7]), -1, 4)
    assert empty.alpha.shape == (4, 0) and empty.lambdas.shape == (0,) and empty.unfinished is None


# ------------------------------------------------------------------ problems


def _data(n=40, p=3, seed=1):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, p))
    y = np.where(X[:, 0] + 0.5 * rng.standard_normal(n) > 0, 1.0, -1.0)
    return X, y


def _majoriser(problem):
    return build_majoriser(problem, FactorCache(problem.X, problem.kern))


@pytest.mark.parametrize("weighted", (False, True))
@pytest.mark.parametrize("kernel", (False, True))
def test_evaluate_returns_the_objective_and_its_gradient(weighted, kernel):
    import kerndwd

    X, y = _data(n=12, p=3, seed=2)
    w = np.random.default_rng(3).uniform(0.2, 3.0, 12) if weighted else None
    kern = kerndwd.rbfdot(0.7) if kernel else None
    problem = Problem.from_arrays(X, y, [0.05], q=2.0, weights=w, kern=kern)
    maj = _majoriser(problem)
    rng = np.random.default_rng(6)
    alpha = rng.normal(0.0, 0.3, maj.ncoef)
    lam = 0.05
    f, value, grad = evaluate(maj.form, alpha, y, problem.loss, lam)
    if not kernel:  # the linear form: f = b0 + X beta, F = mean(w V) + lam |beta|^2
        np.testing.assert_allclose(f, alpha[0] + X @ alpha[1:], rtol=1e-12)
        ww = np.ones(12) if w is None else w
        expected = np.mean(ww * v_direct(y * f, 2.0)) + lam * alpha[1:] @ alpha[1:]
        assert value == pytest.approx(expected, rel=1e-12)
    assert value == pytest.approx(problem.loss.mean(y * f) + lam * maj.form.penalty(alpha[1:]), rel=1e-12)
    h = 1e-6
    fd = np.array([(evaluate(maj.form, alpha + h * e, y, problem.loss, lam)[1]
                    - evaluate(maj.form, alpha - h * e, y, problem.loss, lam)[1]) / (2 * h)
                   for e in np.eye(maj.ncoef)])
    np.testing.assert_allclose(grad, fd, rtol=1e-5, atol=1e-8)


def test_step_rule_stops_at_the_first_pass_whose_step_is_below_eps():
    X, y = _data()
    eps = 1e-5
    problem = Problem.from_arrays(X, y, [1.0, 0.1, 0.01], eps=eps)
    maj = _majoriser(problem)
    seen = []
    res = mm_path(maj, problem, callback=lambda l, lam, coord, f: seen.append((l, lam, coord.copy(), f.copy())))
    assert res.jerr == 0 and res.unfinished is None and res.alpha.shape == (maj.ncoef, 3)
    assert [l for l, *_ in seen] == [l for l in range(3) for _ in range(res.npass[l])]
    assert all(lam == problem.lambdas[l] for l, lam, *_ in seen)
    coords = [maj.start()] + [c for _, _, c, _ in seen]
    steps = [float(np.sum((b - a) ** 2)) for a, b in zip(coords[:-1], coords[1:])]
    ends = np.cumsum(res.npass) - 1
    for k, s in enumerate(steps):
        assert (s < eps) == (k in ends)
    for l, end in enumerate(ends):  # warm start: each column is the last iterate of its lambda
        np.testing.assert_allclose(res.alpha[:, l], maj.to_alpha(coords[end + 1]), rtol=1e-12, atol=1e-15)
        f, value, g = evaluate(maj.form, res.alpha[:, l], y, problem.loss, problem.lambdas[l])
        np.testing.assert_allclose(seen[end][3], f, rtol=1e-9, atol=1e-12)  # running decision values
        assert res.objective[l] == pytest.approx(value, rel=1e-12)
        assert res.kkt[l] == pytest.approx(np.linalg.norm(g), rel=1e-9)
    # MM never raises the objective
    for l in range(3):
        objs = [evaluate(maj.form, maj.to_alpha(c), y, problem.loss, lam)[1] for ll, lam, c, _ in seen if ll == l]
        assert (np.diff(objs) <= 1e-12 * np.abs(objs[:-1])).all()


def test_warm_started_path_reaches_each_lambdas_own_optimum():
    X, y = _data()
    problem = Problem.from_arrays(X, y, [1.0, 0.1, 0.01], stop="kkt", eps=1e-9, maxit=10**5)
    maj = _majoriser(problem)
    path = mm_path(maj, problem)
    assert path.jerr == 0 and (path.kkt <= 1e-9).all()
    alone = mm_path(maj, problem.with_lambdas([0.01]))
    assert alone.kkt[0] <= 1e-9
    np.testing.assert_allclose(path.alpha[:, -1], alone.alpha[:, 0], rtol=1e-6, atol=1e-8)
    assert path.npass[-1] < alone.npass[0]  # the warm start saves passes


@pytest.mark.parametrize("accelerate", (False, True))
def test_gradient_rule_returns_points_that_pass_it(accelerate):
    X, y = _data()
    eps = 1e-7
    problem = Problem.from_arrays(X, y, [1.0, 0.1, 0.01], stop="kkt", eps=eps, accelerate=accelerate)
    maj = _majoriser(problem)
    res = mm_path(maj, problem)
    assert res.jerr == 0 and (res.kkt <= eps).all()
    for l, lam in enumerate(problem.lambdas):
        _, value, g = evaluate(maj.form, res.alpha[:, l], y, problem.loss, lam)
        assert np.linalg.norm(g) <= eps and res.objective[l] == pytest.approx(value, rel=1e-12)
    looser = mm_path(maj, replace(problem, eps=1e-3))
    assert looser.npass.sum() < res.npass.sum() and (looser.kkt > eps).any()


@pytest.mark.parametrize("stop,accelerate", [("step", False), ("kkt", False), ("kkt", True)])
def test_budget_counts_every_pass_of_the_path(stop, accelerate):
    """``maxit`` bounds the passes of the whole path.  Under R's rule every pass
    is held to it: the budget runs out on the first lambda that needs more than
    ``maxit`` passes in all, jerr = -l and npass sums to maxit + 1 (R's count:
    the pass that went over).  Under the gradient rule the last pass of a
    lambda only confirms the rule (it takes no step) and is not held to the
    budget, so a lambda finishing on pass maxit + 1 still counts.  Either way
    the earlier lambdas are finished as in the full run and the last iterate
    is kept."""
    X, y = _data()
    lams = [1.0, 0.1, 0.01]
    base = Problem.from_arrays(X, y, lams, stop=stop, eps=1e-9 if stop == "kkt" else 1e-8, accelerate=accelerate)
    maj = _majoriser(base)
    full = mm_path(maj, base)
    assert full.jerr == 0
    bounds = np.cumsum(full.npass)
    free = 1 if stop == "kkt" else 0  # the confirming pass
    tried = sorted({1, 2, 3, 5, *(int(b) + d for b in bounds for d in (-2, -1, 0, 1, 2))})
    if accelerate:  # every budget: some run out on a pass that restarts the momentum
        tried = range(1, int(bounds[-1]) + 2)
    for maxit in tried:
        res = mm_path(maj, replace(base, maxit=maxit))
        if bounds[-1] <= maxit + free:
            assert res.jerr == 0 and res.unfinished is None
            np.testing.assert_array_equal(res.npass, full.npass)
            continue
        l = int(np.argmax(bounds > maxit + free))  # the lambda the budget runs out on
        assert res.jerr == -(l + 1) and not results.jerr_diverged(res.jerr)
        before = int(bounds[l - 1]) if l else 0
        assert res.npass.sum() == max(maxit + 1, before + 1)
        assert res.alpha.shape == (maj.ncoef, l) and len(res.lambdas) == l
        np.testing.assert_array_equal(res.npass[:l], full.npass[:l])
        np.testing.assert_allclose(res.alpha, full.alpha[:, :l], rtol=1e-12, atol=1e-15)
        assert (res.npass[l + 1:] == 0).all()
        alpha, value, grad_norm = res.unfinished
        _, v, g = evaluate(maj.form, alpha, y, base.loss, lams[l])
        assert value == pytest.approx(v, rel=1e-12) and grad_norm == pytest.approx(np.linalg.norm(g), rel=1e-9)


def _three_lambdas(**options):
    """A three-lambda problem, its majoriser and its unperturbed path."""
    X, y = _data()
    problem = Problem.from_arrays(X, y, [1.0, 0.1, 0.01], **options)
    maj = _majoriser(problem)
    return problem, maj, mm_path(maj, problem)


class _Wrapped:
    """A real majoriser whose step at one lambda is replaced by ``steps(l, k, step, df, grad_sq)``."""

    def __init__(self, inner, lambdas, steps):
        self._inner, self._lambdas, self._steps = inner, list(lambdas), steps
        self.bases = []

    def __getattr__(self, name):
        return getattr(self._inner, name)

    def at_lambda(self, lam):
        l = self._lambdas.index(lam)
        inner_fn = self._inner.at_lambda(lam)
        calls = [0]

        def step_fn(z, base, **kw):
            self.bases.append((l, base.copy()))
            step, df, grad_sq = inner_fn(z, base, **kw)
            calls[0] += 1
            return self._steps(l, calls[0], step, df, grad_sq)

        return step_fn


def _abandoned_at_second_lambda(res, maj, problem, clean):
    lams = problem.lambdas
    assert res.jerr == results.diverged_jerr(1) == -(results.DIVERGED + 2)
    assert results.jerr_diverged(res.jerr) and results.jerr_lambda(res.jerr) == 2
    assert res.alpha.shape == (maj.ncoef, 1)
    np.testing.assert_array_equal(res.alpha[:, 0], clean.alpha[:, 0])
    alpha, value, grad_norm = res.unfinished  # the lambda's finite starting point
    np.testing.assert_allclose(alpha, clean.alpha[:, 0], rtol=1e-12, atol=1e-15)
    _, v, g = evaluate(maj.form, alpha, problem.y, problem.loss, lams[1])
    assert np.isfinite(value) and value == pytest.approx(v, rel=1e-12)
    assert grad_norm == pytest.approx(np.linalg.norm(g), rel=1e-9)


def test_a_non_finite_step_abandons_the_lambda_with_the_divergence_code():
    problem, maj, clean = _three_lambdas()

    def steps(l, k, step, df, grad_sq):
        return (step * np.inf, df, grad_sq) if l == 1 and k == 2 else (step, df, grad_sq)

    res = mm_path(_Wrapped(maj, problem.lambdas, steps), problem)
    _abandoned_at_second_lambda(res, maj, problem, clean)
    assert res.npass[1] == 2 and res.npass[2] == 0


@pytest.mark.parametrize("stop", ("step", "kkt"))
def test_an_overflowing_iterate_abandons_the_lambda_quietly(stop):
    problem, maj, clean = _three_lambdas(stop=stop, eps=1e-8 if stop == "kkt" else 1e-5)

    def steps(l, k, step, df, grad_sq):
        if l == 1 and k == 1:  # a finite step too large to square
            return np.full_like(step, 1e300), np.full_like(df, 1e300), grad_sq
        if l == 1:
            return np.zeros_like(step), np.zeros_like(df), 1.0
        return step, df, grad_sq

    res = mm_path(_Wrapped(maj, problem.lambdas, steps), replace(problem, maxit=clean.npass[0] + 30))
    _abandoned_at_second_lambda(res, maj, problem, clean)


def test_a_lambda_whose_objective_rises_is_abandoned():
    problem, maj, clean = _three_lambdas()

    def steps(l, k, step, df, grad_sq):
        if l == 1 and k == 1:  # uphill: the MM step reversed
            return -step, -df, grad_sq
        if l == 1:
            return np.zeros_like(step), np.zeros_like(df), grad_sq
        return step, df, grad_sq

    res = mm_path(_Wrapped(maj, problem.lambdas, steps), problem)
    _abandoned_at_second_lambda(res, maj, problem, clean)


@pytest.mark.parametrize("accelerate", (False, True))
def test_a_gradient_estimate_that_the_exact_gradient_refutes_is_not_returned(accelerate):
    """The gradient rule confirms a pass's estimate on exact decision values;
    an estimate 1e4 times too small stalls the lambda on the budget instead
    of ending it at a point that fails the rule."""
    X, y = _data()
    eps = 1e-6
    problem = Problem.from_arrays(X, y, [1.0, 0.1], stop="kkt", eps=eps, maxit=400, accelerate=accelerate)
    maj = _majoriser(problem)

    def steps(l, k, step, df, grad_sq):
        return step, df, grad_sq * 1e-8

    res = mm_path(_Wrapped(maj, problem.lambdas, steps), problem)
    assert (res.kkt <= eps).all()
    assert res.jerr == -(res.alpha.shape[1] + 1) and res.npass.sum() == 401
    alpha, _, grad_norm = res.unfinished
    assert grad_norm > eps


def test_momentum_starts_from_rest_and_follows_nesterovs_sequence():
    """Under ``accelerate`` each pass is taken at ``theta + beta (theta - theta_prev)``
    with ``beta = (t_k - 1) / t_(k+1)`` and ``t_(k+1) = (1 + sqrt(1 + 4 t_k^2)) / 2``;
    ``t = 1`` (no momentum) at the start of a lambda and after a restart, the
    pass that follows a pass without a move."""
    X, y = _data()
    problem = Problem.from_arrays(X, y, [1.0, 0.01], stop="kkt", eps=1e-8, accelerate=True)
    maj = _majoriser(problem)
    events = []

    class Recording(_Wrapped):
        def at_lambda(self, lam):
            fn = maj.at_lambda(lam)
            l = list(problem.lambdas).index(lam)

            def step_fn(z, base, **kw):
                events.append(("pass", l, base.copy()))
                return fn(z, base, **kw)

            return step_fn

    res = mm_path(Recording(maj, problem.lambdas, None), problem,
                  callback=lambda l, lam, coord, f: events.append(("move", l, coord.copy())))
    assert res.jerr == 0 and (res.kkt <= 1e-8).all()
    assert sum(kind == "pass" for kind, *_ in events) == res.npass.sum()
    theta, lam_now, last_base = maj.start(), 0, None
    prev, t = theta, 1.0
    extrapolated = restarts = 0
    for k, (kind, l, vec) in enumerate(events):
        if kind == "move":
            continue
        if l != lam_now:  # a new lambda starts at rest from the point the last one returned
            theta, lam_now = last_base, l
            prev, t = theta, 1.0
        t_next = 0.5 * (1.0 + np.sqrt(1.0 + 4.0 * t * t))
        beta = (t - 1.0) / t_next
        np.testing.assert_allclose(vec, theta + beta * (theta - prev), rtol=1e-9, atol=1e-12)
        extrapolated += beta > 0
        last_base = vec
        following = events[k + 1] if k + 1 < len(events) else None
        if following is not None and following[0] == "move":
            prev, theta, t = theta, following[2], t_next
        elif following is not None and following[1] == l:  # no move: a restart from theta
            prev, t = theta, 1.0
            restarts += 1
    assert extrapolated > 20 and restarts >= 1


# ------------------------------------------------------- run_path and weight scale


def _unit_weights(n, seed=7):
    w = np.exp(np.random.default_rng(seed).normal(0.0, 0.4, n))
    return w / np.exp(np.mean(np.log(w)))  # geometric mean 1: scale 1


@pytest.mark.parametrize("stop", ("step", "kkt"))
def test_heavy_weights_give_the_fit_of_light_ones_at_lambda_over_their_scale(stop):
    """Weights ``c w`` at ``lambda`` are the fit of ``w`` at ``lambda / c`` with the
    objective (and gradient) times ``c``; run_path solves the former as the
    latter and reports in the caller's units, gradient tolerance included."""
    X, y = _data()
    w = _unit_weights(len(y))
    c = 2.0**12
    lams = np.array([4.0, 0.4, 0.04])
    eps = 1e-6 if stop == "kkt" else 1e-5
    heavy = Problem.from_arrays(X, y, lams, weights=w * c, stop=stop, eps=eps)
    assert heavy.loss.scale == c
    light = Problem.from_arrays(X, y, lams / c, weights=w, stop=stop, eps=eps / c if stop == "kkt" else eps)
    assert light.loss.scale == 1.0
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no warning of any kind on a valid problem
        got = solvers.run_path(_majoriser(heavy), heavy)
    ref = solvers.run_path(_majoriser(light), light)
    assert got.jerr == ref.jerr == 0
    np.testing.assert_array_equal(got.npass, ref.npass)
    np.testing.assert_allclose(got.lambdas, lams, rtol=1e-15)
    np.testing.assert_allclose(got.alpha, ref.alpha, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(got.objective, c * ref.objective, rtol=1e-9)
    np.testing.assert_allclose(got.kkt, c * ref.kkt, rtol=1e-6, atol=1e-12)
    if stop == "kkt":
        assert (got.kkt <= eps).all()
    # the budget running out: the unfinished iterate in the caller's units too
    short_h = solvers.run_path(_majoriser(heavy), replace(heavy, maxit=int(ref.npass[0]) + 3))
    short_l = solvers.run_path(_majoriser(light), replace(light, maxit=int(ref.npass[0]) + 3))
    assert short_h.jerr == short_l.jerr == -2
    np.testing.assert_allclose(short_h.unfinished[0], short_l.unfinished[0], rtol=1e-9, atol=1e-12)
    assert short_h.unfinished[1] == pytest.approx(c * short_l.unfinished[1], rel=1e-9)
    assert short_h.unfinished[2] == pytest.approx(c * short_l.unfinished[2], rel=1e-6)


def test_any_power_of_two_scale_gives_the_same_fit():
    """``DWDLoss(q, w, scale=s)`` keeps ``w / s`` and run_path solves at ``lambda / s``:
    the fit, objective and gradient norm are those of the unscaled loss."""
    X, y = _data()
    w = _unit_weights(len(y))
    lams = [1.0, 0.1]
    ref = Problem.from_arrays(X, y, lams, weights=w, stop="kkt", eps=1e-8, method="mm")
    want = solvers.run_path(_majoriser(ref), ref)
    for s in (2.0, 0.5, 2.0**20):
        problem = replace(ref, loss=DWDLoss(1.0, w, scale=s))
        got = solvers.run_path(_majoriser(problem), problem)
        assert got.jerr == 0
        np.testing.assert_allclose(got.lambdas, lams, rtol=1e-15)
        np.testing.assert_allclose(got.alpha, want.alpha, rtol=1e-7, atol=1e-9)
        np.testing.assert_allclose(got.objective, want.objective, rtol=1e-9)
        assert (got.kkt <= 1e-8).all()


def test_rescaled_lambdas_outside_the_solvable_range_are_refused():
    """Refused with a ValueError, with no floating-point warning on the way, even
    where lambda / scale under- or overflows."""
    X, y = _data()
    # the message names both arguments involved and the way out
    cases = [([1e-20], 1e300, "below the smallest"),    # 1e-20 / 2^997: subnormal
             ([1e-300], 1e300, "below the smallest"),   # 1e-300 / 2^997: underflows to 0
             ([1.0], 1e-300, "use smaller lambdas"),    # 1 * 2^997 > 1e200
             ([1e10], 1e-300, "use smaller lambdas")]   # 1e10 * 2^997 overflows
    for lams, weight, words in cases:
        problem = Problem.from_arrays(X, y, lams, weights=np.full(len(y), weight))
        maj = _majoriser(problem)
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            with pytest.raises(ValueError, match=r"(?s)^lambdas .*weights.*" + words + r".*rescale the weights"):
                solvers.run_path(maj, problem)
    inside = Problem.from_arrays(X, y, [1e-150], weights=np.full(len(y), 1e-300))  # ~1e150: solvable
    res = solvers.run_path(_majoriser(inside), inside)
    np.testing.assert_allclose(res.lambdas, [1e-150])
