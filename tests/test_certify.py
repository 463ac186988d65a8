"""The certified gap bound and the warning it drives under R's stopping rule.

``path.gap_bound`` must never be below the true distance to the optimum
(measured against a tight fit), must vanish at an optimal fit, and the
warning must fire on the cases where R's rule is known to stop far away
(q = 100, separable data at a small lambda, n << p, Table 1's outliers) and
stay silent on an ordinary path.
"""

import warnings

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import kerndwd
from kerndwd.engine import FactorCache, Problem, build_majoriser
from kerndwd.engine import Objective
from kerndwd.engine.certify import GAP_WARNING, objective_gap_bounds

coords = st.floats(-2.0, 2.0, allow_nan=False, width=32)


def _quiet_fit(*args, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", kerndwd.DWDConvergenceWarning)
        return kerndwd.fit(*args, **kw)


@given(st.integers(6, 14), st.integers(1, 4), st.data(),
       st.sampled_from([kerndwd.vanilladot(), kerndwd.rbfdot(0.7), kerndwd.polydot(2, 0.5, 1.0)]),
       st.sampled_from([0.5, 1.0, 4.0, 30.0]), st.booleans())
@settings(max_examples=max(10, settings().max_examples // 3))
def test_bound_is_never_below_the_true_gap(n, p, data, kern, q, weighted):
    X = data.draw(hnp.arrays(np.float64, (n, p), elements=coords))
    n_pos = data.draw(st.integers(1, n - 1))
    y = np.where(np.arange(n) < n_pos, 1.0, -1.0)
    w = data.draw(hnp.arrays(np.float64, n, elements=st.floats(0.5, 2.0))) if weighted else None
    lams = [1.0, 0.1, 0.01]
    loose = _quiet_fit(X, y, lams, kern=kern, qval=q, wt=w, eps=1e-3)
    # the reference optimum to eps = 1e-11: Newton, else MM with momentum.  At q = 30 on
    # nearly separable draws both can stop short of 1e-11 (Newton on its rounding guard,
    # MM on its budget); such a draw has no certified reference and is not checked
    tight = _quiet_fit(X, y, lams, kern=kern, qval=q, wt=w, stop="kkt", eps=1e-11, maxit=500000)
    if tight.jerr:
        tight = _quiet_fit(X, y, lams, kern=kern, qval=q, wt=w, stop="kkt", eps=1e-11, maxit=200000,
                           method="mm")
    assume(tight.jerr == 0)
    k = min(loose.lambda_.size, tight.lambda_.size)
    gap = loose.objective[:k] - tight.objective[:k]
    # the tight fit is itself within its own bound of the optimum
    problem = Problem.from_arrays(X, y, tight.lambda_, q=q, weights=w, kern=kern)
    maj = build_majoriser(problem, FactorCache(X, kern))
    tight_bound = objective_gap_bounds(Objective(maj.form, y, maj.loss), tight.alpha, tight.lambda_)
    slack = 1e-10 * np.abs(tight.objective[:k]) + tight_bound[:k]
    assert (gap <= loose.gap_bound[:k] + slack).all(), (gap, loose.gap_bound)
    assert (tight_bound <= 1e-8 * np.maximum(tight.objective, 1.0)).all()


def _far(path):
    return path.far_from_optimal.size > 0


@pytest.mark.parametrize("case", ["q=100", "separable", "n<<p", "outliers"])
def test_warning_fires_where_r_rule_stops_far_away(case):
    rng = np.random.default_rng(0)
    if case == "q=100":
        X = rng.standard_normal((100, 5))
        y = np.where(X[:, 0] + 0.5 * rng.standard_normal(100) > 0, 1, -1)
        args = dict(lambdas=[0.1, 0.01], kern=kerndwd.vanilladot(), qval=100.0)
    elif case == "separable":
        X = rng.standard_normal((100, 5))
        y = np.where(X[:, 0] > 0, 1, -1)
        args = dict(lambdas=[0.1, 0.001], kern=kerndwd.vanilladot())
    elif case == "n<<p":
        X = rng.standard_normal((20, 5000))
        y = np.repeat([1, -1], 10)
        X[:, 0] += y
        args = dict(lambdas=[1.0, 0.1], kern=kerndwd.vanilladot())
    else:
        X, y = kerndwd.datasets.make_table1_example(3, random_state=3)
        args = dict(lambdas=[1.0, 0.01], kern=kerndwd.vanilladot())
    with pytest.warns(kerndwd.DWDConvergenceWarning, match=r"possibly far from the optimum.*stop='kkt'"):
        path = kerndwd.fit(X, y, **args)
    assert _far(path) and "possibly far from optimal" in repr(path)
    bad = path.far_from_optimal
    assert (path.gap_bound[bad] > GAP_WARNING * path.objective[bad]).all()


def test_no_warning_on_an_ordinary_path():
    X, y = kerndwd.datasets.make_table1_example(1, random_state=1)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        path = kerndwd.fit(X, y, [100.0, 10.0, 1.0, 0.1], kern=kerndwd.vanilladot())
    assert not _far(path) and "possibly far" not in repr(path)
    assert (path.gap_bound < 0.05 * path.objective).all()
    tight = kerndwd.fit(X, y, [0.1], kern=kerndwd.vanilladot(), stop="kkt", eps=1e-8)
    assert np.isnan(tight.gap_bound).all()


@pytest.mark.parametrize("kern", [kerndwd.vanilladot(), kerndwd.rbfdot(0.5)], ids=["linear", "rbf"])
def test_at_the_best_intercepts_the_bound_is_the_dual_norm_of_the_gradient(kern):
    """Columns at their best intercepts (slopes below rounding) have a bound of
    ``||grad h||_*^2 / (4 lambda)`` alone; a linear form reads it from the
    gradient, a kernel form from a pass over the rows: both are that number."""
    X, y = kerndwd.datasets.make_table1_example(1, random_state=2)
    X, y = X[::4], y[::4]  # both classes, 125 rows
    lams = np.array([10.0, 0.5])
    path = _quiet_fit(X, y, lams, kern=kern, eps=1e-4)
    objective, maj = _objective(X, y, kern)
    evaluated = [objective.evaluate(path.alpha[:, j], lams[j]) for j in range(2)]
    decisions = np.column_stack([f for f, _, _ in evaluated])
    gradients = np.column_stack([g for _, _, g in evaluated])
    theta = path.alpha[1:]
    z = objective.derivative(decisions)
    want = np.array([maj.form.dual_norm_sq(z[:, j] / maj.form.n, theta[:, j], lams[j]) for j in range(2)])
    want = want / (4.0 * lams)
    assert (want > 0).all()
    at_best = gradients.copy()
    at_best[0] = 0.0  # slopes at the best intercepts
    got = objective_gap_bounds(objective, path.alpha, lams, decisions=decisions, gradients=at_best)
    np.testing.assert_allclose(got, want, rtol=1e-9)
    linear = maj.form.gradient_dual_norm_sq(gradients[1:])
    if kern.is_linear:
        np.testing.assert_allclose(linear, (gradients[1:] ** 2).sum(axis=0), rtol=1e-15)
    else:
        assert linear is None
    # slopes above rounding: the intercepts are searched, as without the gradients
    assert (np.abs(gradients[0]) > 1e-12).any()
    np.testing.assert_array_equal(
        objective_gap_bounds(objective, path.alpha, lams, decisions=decisions, gradients=gradients),
        objective_gap_bounds(objective, path.alpha, lams, decisions=decisions))



def _objective(X, y, kern=kerndwd.vanilladot(), q=1.0, weights=None):
    """``(F on the rows, its majoriser)``."""
    problem = Problem.from_arrays(X, y, np.array([1.0]), q=q, weights=weights, kern=kern)
    maj = build_majoriser(problem, FactorCache(X, kern))
    return Objective(maj.form, y, maj.loss), maj


def _rows(n=40, seed=4):
    X = np.random.default_rng(seed).standard_normal((n, 2))
    return X, np.where(X[:, 0] > 0, 1.0, -1.0)


class _Counting:
    """An objective that records the name of every method called (a pass over the rows each)."""

    def __init__(self, objective):
        self._objective, self.calls = objective, []
        self.form, self.loss = objective.form, objective.loss

    def __getattr__(self, name):
        method = getattr(self._objective, name)

        def counted(*args, **kwargs):
            self.calls.append(name)
            return method(*args, **kwargs)

        return counted


def test_slopes_up_to_the_tolerance_take_the_bound_from_the_gradient_alone():
    """Intercept slopes at most 1e-14 (times the mean weight) count as at the
    best intercepts: the linear form's bound is read from the gradient, with
    no pass over the rows; a slope above it searches the intercepts."""
    counting = _Counting(_objective(*_rows())[0])
    alpha = np.array([[0.1, 0.2], [0.5, -0.3], [0.0, 0.4]])
    lams = np.array([1.0, 0.25])
    gradients = np.array([[1e-14, -1e-14], [0.3, 0.0], [0.4, 2.0]])
    got = objective_gap_bounds(counting, alpha, lams, gradients=gradients)
    np.testing.assert_allclose(got, [0.25 / 4.0, 4.0 / 1.0], rtol=1e-15)
    assert counting.calls == []
    gradients[0, 1] = 2e-14
    objective_gap_bounds(counting, alpha, lams, gradients=gradients)
    assert "derivatives_and_curvatures" in counting.calls


@pytest.mark.parametrize("kern", [kerndwd.vanilladot(), kerndwd.rbfdot(1.0)], ids=["linear", "rbf"])
def test_coefficients_at_the_edge_of_double_precision_give_inf_without_a_warning(kern):
    """Decision values near the largest double overflow the data term (inf - inf
    between two intercepts) and a gradient of 1e200 overflows its square: the
    bound is inf, quietly (the caller reports it)."""
    objective, maj = _objective(*_rows(30, seed=0), kern)
    lams = np.array([0.1])
    huge = np.full((maj.ncoef, 1), 1e308)
    huge[0] = 0.0
    gradient = np.full_like(huge, 1e200)
    gradient[0] = 0.0
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert objective_gap_bounds(objective, huge, lams).tolist() == [np.inf]
        assert objective_gap_bounds(objective, huge, lams, gradients=gradient).tolist() == [np.inf]
        moderate = objective_gap_bounds(objective, huge / 1e158, lams)
    assert np.isfinite(moderate).all() and (moderate > 0).all()


def test_intercepts_the_search_leaves_in_place_evaluate_the_data_term_once():
    """Balanced labels at theta = 0, b = 0: the intercept's slope is exactly 0,
    the search returns the intercept given, and the data term there is the one
    already evaluated (no second pass over the rows)."""
    X, _ = _rows()
    objective, _ = _objective(X, np.repeat([1.0, -1.0], 20))
    counting = _Counting(objective)
    bound = objective_gap_bounds(counting, np.zeros((3, 1)), np.array([0.5]))
    assert "data_term" not in counting.calls and counting.calls.count("data_term_and_derivative") == 1
    z = objective.derivative(np.zeros((40, 1)))
    want = objective.form.dual_norm_sq(z[:, 0] / 40, np.zeros(2), 0.5) / 2.0
    np.testing.assert_allclose(bound, [want], rtol=1e-12)
    assert want > 0


@pytest.mark.parametrize("q", [0.5, 1.0, 4.0, 100.0])
@pytest.mark.parametrize("scale", [None, 1e6], ids=["unweighted", "weights-1e6"])
@pytest.mark.parametrize("majority", [1.0, -1.0], ids=["more-positive", "more-negative"])
def test_the_intercept_search_finds_each_minimiser_from_near_and_far(q, scale, majority):
    """Columns started at, near, and 1e4 away on either side of their best
    intercept, and on the loss's flat piece (reached by doubling outwards, then
    bisection and Newton): each ends at the minimiser found by 300 bisections
    of the slope's sign, within rounding, in a bounded number of evaluations."""
    from kerndwd.engine.certify import _best_intercepts

    X, _ = _rows(seed=5)
    y = majority * np.where(np.arange(40) < 26, 1.0, -1.0)  # unbalanced: a unique minimiser
    w = None if scale is None else np.linspace(0.5, 2.0, 40) * scale
    objective, _ = _objective(X, y, q=q, weights=w)
    applied = X @ np.array([[0.0, 1.0, 3.0, -2.0, 0.1], [0.0, 0.5, -1.0, 4.0, 0.0]])
    # two columns that misclassify every row by 10: no curvature near b = 0 (every
    # row on the loss's linear piece), so the search steps out by doubling
    wrong = -10.0 * y + 0.1 * X[:, 0]
    # and two columns whose best intercepts lie 5 and 40 from the start, at q = 100 on the loss's
    # far tail, where Newton's step is long (it once left the search without a minimiser)
    applied = np.column_stack([applied, wrong, -wrong[::-1], X @ [0.01, 0.0] - 5.0, X @ [1.0, 2.0] + 40.0])
    start = np.array([0.0, 1e4, -1e4, 30.0, -0.3, 0.0, 0.5, 0.0, 0.0])

    def slope(b, a):
        return objective.derivatives_and_curvatures(b + a[:, None])[0].mean()

    want = []
    for a in applied.T:
        lo, hi = -1e7, 1e7
        for _ in range(300):
            mid = 0.5 * (lo + hi)
            lo, hi = (lo, mid) if slope(mid, a) > 0 else (mid, hi)
        want.append(0.5 * (lo + hi))
    for columns in (slice(None), slice(2, 3)):  # together, and a column alone
        counting = _Counting(objective)
        with np.errstate(over="ignore", invalid="ignore"):  # as its caller: the tail of V_100 overflows
            got = _best_intercepts(start[columns].copy(), applied[:, columns], counting)
        if q < 100:
            np.testing.assert_allclose(got, np.array(want)[columns], rtol=1e-9, atol=1e-9)
        # at q = 100 the data term can be flat to 1e-100 over a range (the tail of V_q): there the
        # search ends anywhere in it, and the value is what must be the minimum's
        with np.errstate(over="ignore", invalid="ignore"):
            at_got = objective.data_term(got[None, :] + applied[:, columns])
            at_best = objective.data_term(np.array(want)[None, columns] + applied[:, columns])
        assert (at_got <= at_best + 1e-12 * np.maximum(1.0, np.abs(at_best))).all()
        assert len(counting.calls) <= 120


def _search_trace(start, applied, objective, monkeypatch):
    """Run the intercept search and return, per column, the intercepts it
    evaluated with the slope and curvature found there, and its result."""
    from kerndwd.engine import certify

    trace = [[] for _ in range(applied.shape[1])]
    inner = certify._slope_and_curvature

    def recording(b, cols, obj):
        slope, curv = inner(b, cols, obj)
        for k in range(cols.shape[1]):
            j = next(j for j in range(applied.shape[1]) if np.array_equal(applied[:, j], cols[:, k]))
            trace[j].append((float(b[k]), float(slope[k]), float(curv[k])))
        return slope, curv

    monkeypatch.setattr(certify, "_slope_and_curvature", recording)
    return trace, certify._best_intercepts(start.copy(), applied, objective)


@pytest.mark.parametrize("weights", [None, 1e6], ids=["unweighted", "weights-1e6"])
@pytest.mark.parametrize("majority", [1.0, -1.0], ids=["more-positive", "more-negative"])
def test_the_intercept_search_follows_its_rules_step_by_step(weights, majority, monkeypatch):
    """Every move of the search, column by column, is the one its docstring
    states: from the current point, Newton's point where the curvature is
    positive and the point lies strictly inside the bracket (the largest
    intercept of negative slope, the smallest of positive slope) and, while a
    side of the bracket is open, no farther than a step out; otherwise the
    bracket's midpoint once both ends exist; otherwise a step against the slope
    by the distance from the start, at least 1 (which doubles that distance).
    On the loss's linear piece the slope's sign is the minority class's, so
    either majority steps out the other way.  A column stops, and is
    evaluated no more, at the first point whose slope is at most the tolerance
    or whose bracket is below rounding; the others go on."""
    from kerndwd.engine.certify import _slope_tolerance

    X, _ = _rows(seed=5)
    y = majority * np.where(np.arange(40) < 26, 1.0, -1.0)
    w = None if weights is None else np.linspace(0.5, 2.0, 40) * weights
    objective, _ = _objective(X, y, q=1.0, weights=w)
    wrong = -10.0 * y + 0.1 * X[:, 0]  # every row on the loss's linear piece near b = 0
    # the last column's best intercept lies 1000 away, where Newton's step from 0 (on the loss's tail) is far longer
    applied = np.column_stack([X @ [1.0, 0.5], X @ [3.0, -1.0], wrong, -wrong[::-1], X @ [-2.0, 4.0],
                               X @ [0.01, 0.0] - 1000.0])
    start = np.array([0.0, 1e4, 0.0, 0.5, -30.0, 0.0])
    tol = _slope_tolerance(objective)
    held = objective.loss.weights  # the weights as the loss holds them (rescaled)
    assert tol == (1e-14 if weights is None else 1e-14 * np.mean(held)) and (weights is None or np.ptp(held) > 0)
    trace, got = _search_trace(start, applied, objective, monkeypatch)
    moves = {"newton": 0, "midpoint": 0, "outward": 0, "up": 0, "down": 0, "newton too far": 0}
    for j, steps in enumerate(trace):
        assert steps[0][0] == start[j]
        lo, hi = -np.inf, np.inf
        for k, (x, slope, curv) in enumerate(steps):
            if slope < 0:
                lo = max(lo, x)
            if slope > 0:
                hi = min(hi, x)
            done = abs(slope) <= tol or hi - lo <= 1e-15 * max(1.0, abs(x))
            assert done == (k == len(steps) - 1), (j, k)  # the last evaluation, and only it, settles
            if done:
                break
            following = steps[k + 1][0]
            newton = x - slope / curv if curv > 0 else np.nan
            bracketed = np.isfinite(lo) and np.isfinite(hi)
            reach = max(1.0, abs(x - start[j]))
            if np.isfinite(newton) and lo < newton < hi and (bracketed or abs(newton - x) <= reach):
                assert following == newton, (j, k)
                moves["newton"] += 1
            elif bracketed:
                assert following == 0.5 * (lo + hi), (j, k)
                moves["midpoint"] += 1
            else:
                assert following == x - np.sign(slope) * reach, (j, k)
                moves["outward"] += 1
                if j in (2, 3):  # the columns on the linear piece: the direction is the minority's
                    moves["down" if slope > 0 else "up"] += 1
                moves["newton too far"] += bool(np.isfinite(newton) and lo < newton < hi)
        assert got[j] == steps[-1][0]
    assert all(moves[rule] > 0 for rule in ("newton", "midpoint", "outward", "newton too far")), moves  # every rule
    assert moves["up" if majority > 0 else "down"] > 0, moves  # steps out either way
    assert len(trace[1]) > len(trace[0])  # the far start took more steps (the columns are not moved together)


@pytest.mark.parametrize("q", [1.0, 100.0])
@pytest.mark.parametrize("shift", [5.0, -40.0, 1000.0])
def test_an_intercept_far_from_its_best_is_bounded_at_large_q(q, shift):
    """The optimum of a fit with its intercept moved by ``shift``: the true gap
    is F there less F*, and the bound must not fall below it (at q = 100 the
    search once ran off along the loss's tail and the bound fell to 1 % of the gap)."""
    X, y = _rows(seed=5)
    lam = np.array([0.5])
    tight = _quiet_fit(X, y, lam, kern=kerndwd.vanilladot(), qval=q, stop="kkt", eps=1e-11, maxit=100000)
    assert tight.jerr == 0
    objective, _ = _objective(X, y, q=q)
    moved = tight.alpha.copy()
    moved[0] += shift
    gap = objective.evaluate(moved[:, 0], lam[0])[1] - tight.objective[0]
    bound = objective_gap_bounds(objective, moved, lam)
    assert gap > 1.0
    assert bound[0] >= gap - 1e-10 * abs(tight.objective[0])
    assert bound[0] <= 1.01 * gap  # theta is optimal: the bound is the intercept's gap, to rounding
