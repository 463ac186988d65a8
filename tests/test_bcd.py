"""The exact kernel by block coordinate majorization (``solver="bcd"``).

The block sweep must reach the optimum of the exact kernel problem, the
same one the eigen (unweighted) and Cholesky (weighted) solvers reach, while
never forming the ``n x n`` kernel matrix.  Data: the circle data of the R
timing cases (``x`` standard normal in 2-D, ``y = +1`` where
``|x|^2 + 0.4 N(0, 1) > 1.4``), ``rbfdot(sigma = 1)``.

Tolerance on decision values.  Near the optimum ``u* = (b0*, alpha*)`` the
gradient is linear in the coefficients, ``g(u) = H (u - u*)`` with the
Hessian ``H = (1/n) Z'DZ + 2 lambda diag(0, K)``, ``Z = [1, K]``,
``D = diag(w_i V_q''(y_i f_i*))``.  Writing ``H = diag(1, K) T`` with
``T = (1/n) [1, K]' D [1, I] + 2 lambda diag(0, I)`` gives
``f - f* = Z H^-1 g = [1, I] T^-1 g``: no inverse of the ill-conditioned
``K`` appears, and two fits whose gradient norms are ``e1`` and ``e2`` have
``||f1 - f2|| <= ||[1, I] T^-1||_2 (e1 + e2)``, to first order.  The tests
allow twice that bound for the second-order terms (``V_q''`` jumps at the
knot).
"""

import tracemalloc
import warnings

import numpy as np
import pytest
from test_engine_contract import assert_honours_contract

import kerndwd
from kerndwd.engine import FactorCache, Problem, build_majoriser, make_design
from _engine import first_order_bound, evaluate, mm_path

N = 300
LAMS = 10.0 ** np.linspace(-1, -3, 10)
BLOCK = 100
EPS_BCD = 1e-8
EPS_EXACT = 1e-10
KERN = kerndwd.rbfdot(sigma=1.0)


def circle(n, seed):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, 2))
    y = np.where((X ** 2).sum(axis=1) + 0.4 * rng.standard_normal(n) > 1.4, 1, -1)
    return X, y, rng


def fit_both(n, weighted, block_size, seed=1):
    """(X, y, wt, exact fit, bcd fit) of the path LAMS on the circle data."""
    X, y, rng = circle(n, seed)
    wt = rng.uniform(0.5, 2.0, n) if weighted else None
    kw = dict(kern=KERN, wt=wt, stop="kkt", maxit=10 ** 6)
    exact = kerndwd.fit(X, y, LAMS, eps=EPS_EXACT, **kw)
    bcd = kerndwd.fit(X, y, LAMS, eps=EPS_BCD, solver="bcd", block_size=block_size, **kw)
    return X, y, wt, exact, bcd


def assert_same_optimum(X, y, wt, exact, bcd):
    n = X.shape[0]
    assert exact.jerr == 0 and bcd.jerr == 0
    assert bcd.design == "bcd" and bcd.predictor.coef_space == "kernel" and bcd.alpha.shape == (n + 1, LAMS.size)
    assert (bcd.kkt <= EPS_BCD).all()
    np.testing.assert_array_equal(bcd.lambda_, exact.lambda_)
    gap = (bcd.objective - exact.objective) / exact.objective
    # the exact fit is the optimum to ~1e-14: bcd may not fall below it, and is within 1e-8 above
    assert (gap >= -1e-12).all() and (gap <= 1e-8).all(), gap


def assert_decisions_within_the_gradient_bound(X, y, wt, exact, bcd):
    f_exact = exact.predict(X, type="link")
    f_bcd = bcd.predict(X, type="link")
    for j, lam in enumerate(LAMS):
        bound = 2.0 * first_order_bound(KERN, X, y, wt, f_exact[:, j], lam) * (bcd.kkt[j] + exact.kkt[j])
        assert np.linalg.norm(f_bcd[:, j] - f_exact[:, j]) <= bound, (lam, bound)
    # and on new rows, through the stored predictor
    newx = np.random.default_rng(5).standard_normal((40, 2))
    assert np.abs(bcd.predict(newx, type="link") - exact.predict(newx, type="link")).max() <= 1e-3


@pytest.fixture(scope="module", params=[False, True], ids=["unweighted", "weighted"])
def fits(request):
    return fit_both(N, request.param, BLOCK)


def test_bcd_reaches_the_exact_optimum_along_the_path(fits):
    assert_same_optimum(*fits)


def test_decision_values_agree_within_the_gradient_bound(fits):
    assert_decisions_within_the_gradient_bound(*fits)


@pytest.mark.slow
@pytest.mark.parametrize("weighted", [False, True], ids=["unweighted", "weighted"])
def test_bcd_reaches_the_exact_optimum_at_n_2000(weighted):
    """The same checks at n = 2000 with the default block size."""
    both = fit_both(2000, weighted, None)
    assert_same_optimum(*both)
    assert_decisions_within_the_gradient_bound(*both)


def _problem(X, y, lams, block_size, **settings):
    design = make_design("bcd", {"block_size": block_size})
    return Problem.from_arrays(X, np.where(y > 0, 1.0, -1.0), lams, kern=KERN, design=design, **settings)


@pytest.mark.parametrize("weighted", [False, True])
def test_one_block_sweep_is_the_exact_weighted_mm_step(weighted):
    """With one block of all rows the block majoriser is the whole majoriser of
    the weighted kernel solver (unit weights when unweighted): one sweep is its step."""
    X, y, rng = circle(40, 3)
    w = rng.uniform(0.5, 2.0, 40) if weighted else np.ones(40)
    bcd = _problem(X, y, [0.05], 10 ** 6, weights=None if not weighted else w)
    maj = build_majoriser(bcd, FactorCache(X, KERN))
    assert len(maj.blocks) == 1 and maj.block_size == 40
    exact = Problem.from_arrays(X, bcd.y, [0.05], kern=KERN, weights=w)
    ref = build_majoriser(exact, FactorCache(X, KERN))
    coord = 0.2 * rng.standard_normal(41)
    f = coord[0] + KERN(X) @ coord[1:]
    z = maj.loss.weighted_labels(bcd.y) * maj.loss.deriv(bcd.y * f)
    step, df, grad_sq = maj.at_lambda(0.05)(z, coord, f=f, y=bcd.y)
    step_ref, df_ref, grad_sq_ref = ref.at_lambda(0.05)(z, coord)
    np.testing.assert_allclose(step, step_ref, rtol=1e-7, atol=1e-9)
    np.testing.assert_allclose(df, df_ref, rtol=1e-7, atol=1e-9)
    assert grad_sq == pytest.approx(grad_sq_ref, rel=1e-10)


@pytest.mark.parametrize("weighted", [False, True])
def test_several_blocks_honour_the_engine_contract(weighted):
    X, y, rng = circle(30, 4)
    w = rng.uniform(0.5, 2.0, 30) if weighted else None
    problem = _problem(X, y, [0.1], 7, weights=w)
    assert len(build_majoriser(problem, FactorCache(X, KERN)).blocks) == 5
    assert_honours_contract(problem)


@pytest.mark.parametrize("weighted", [False, True])
def test_sweeps_after_the_first_keep_the_step_contract(weighted):
    """From the second sweep on, a sweep starts with the global step along the
    last sweep's directions: the change of ``f`` it reports, the gradient at
    its start and its descent stay exact."""
    X, y, rng = circle(60, 12)
    w = rng.uniform(0.5, 2.0, 60) if weighted else None
    problem = _problem(X, y, [0.01], 16, weights=w)
    maj = build_majoriser(problem, FactorCache(X, KERN))
    step_fn = maj.at_lambda(0.01)
    coord, f = maj.start(), np.zeros(60)
    labels, loss = problem.y, maj.loss
    for _ in range(4):
        z = loss.weighted_labels(labels) * loss.deriv(labels * f)
        step, df, grad_sq = step_fn(z, coord, f=f, y=labels)
        _, before, grad = evaluate(maj.form, maj.to_alpha(coord), labels, loss, 0.01)
        f_next, after, _ = evaluate(maj.form, maj.to_alpha(coord + step), labels, loss, 0.01)
        np.testing.assert_allclose(f + df, f_next, rtol=1e-9, atol=1e-9)
        assert grad_sq == pytest.approx(grad @ grad, rel=1e-8)
        assert after <= before + 1e-12 * abs(before)
        previous = (coord, f, z, step)
        coord, f = coord + step, f_next
    # the last sweep did take a global step: a fresh majoriser (no directions yet) moves elsewhere
    start, f_start, z_start, last_step = previous
    fresh = build_majoriser(problem, FactorCache(X, KERN))
    plain_step, _, _ = fresh.at_lambda(0.01)(z_start, start, f=f_start, y=labels)
    assert np.abs(plain_step - last_step).max() > 1e-6


@pytest.mark.parametrize("weighted", [False, True])
def test_sweeps_never_raise_the_objective(weighted):
    """Each block step minimises a quadratic above ``n F`` (Lemma 2), so ``F``
    never rises along plain sweeps, over seven decades of lambda and weights
    spanning four."""
    X, y, rng = circle(80, 6)
    w = 10.0 ** rng.uniform(-2, 2, 80) if weighted else None
    lams = [100.0, 1.0, 1e-2, 1e-5]
    problem = _problem(X, y, lams, 16, weights=w, stop="step", eps=1e-12, maxit=200, accelerate=False)
    maj = build_majoriser(problem, FactorCache(X, KERN))
    trace = []

    def record(l, lam, coord, f):
        alpha = maj.to_alpha(coord)
        trace.append((l, evaluate(maj.form, alpha, problem.y, maj.loss, lam)[1]))

    mm_path(maj, problem, callback=record)  # runs out of its 200 sweeps: no convergence needed
    assert len(trace) > 50
    for (l0, v0), (l1, v1) in zip(trace, trace[1:]):
        if l0 == l1:
            assert v1 <= v0 + 1e-12 * abs(v0)


def test_step_rule_stops_on_the_squared_change_of_a_sweep():
    X, y, _ = circle(120, 7)
    eps = 1e-4
    problem = _problem(X, y, [0.05, 0.01], 32, stop="step", eps=eps)
    maj = build_majoriser(problem, FactorCache(X, KERN))
    coords = []
    result = mm_path(maj, problem, callback=lambda l, lam, coord, f: coords.append((l, coord.copy())))
    assert result.jerr == 0
    start = maj.start()
    for l in range(2):
        mine = [c for k, c in coords if k == l]
        assert len(mine) == result.npass[l]
        changes = [float(np.sum((b - a) ** 2)) for a, b in zip([start] + mine[:-1], mine)]
        assert changes[-1] < eps and min(changes[:-1], default=eps) >= eps
        start = mine[-1]


def test_fit_never_forms_an_n_by_n_array():
    """At n = 5000 one kernel matrix takes 200 MB; without ``cache_kernel``
    the whole fit (a sweep and the final evaluation) stays under a tenth of that."""
    n, block = 5000, 100
    X, y, _ = circle(n, 8)
    tracemalloc.start()
    try:
        path = kerndwd.fit(X, y, [0.01], kern=KERN, solver="bcd", block_size=block, stop="step", eps=1e6,
                           cache_kernel=False)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert path.npass[0] == 1 and np.isfinite(path.objective).all()
    assert peak < n * n * 8 / 10, f"peak {peak / 1e6:.1f} MB"


@pytest.mark.parametrize("bad", [0, -3])
def test_block_size_below_one_is_refused(bad):
    X, y, _ = circle(20, 9)
    with pytest.raises(ValueError, match="block_size must be at least 1"):
        kerndwd.fit(X, y, [0.1], kern=KERN, solver="bcd", block_size=bad)


@pytest.mark.parametrize("bad", [2.5, "8", True, np.nan])
def test_block_size_that_is_not_an_integer_is_refused(bad):
    X, y, _ = circle(20, 9)
    with pytest.raises(TypeError, match="block_size must be an integer"):
        kerndwd.fit(X, y, [0.1], kern=KERN, solver="bcd", block_size=bad)


def test_block_size_above_n_is_clipped_to_n():
    X, y, _ = circle(60, 10)
    big = kerndwd.fit(X, y, [0.1, 0.01], kern=KERN, solver="bcd", block_size=10 ** 6, stop="kkt", eps=1e-8)
    exact_n = kerndwd.fit(X, y, [0.1, 0.01], kern=KERN, solver="bcd", block_size=60, stop="kkt", eps=1e-8)
    np.testing.assert_array_equal(big.alpha, exact_n.alpha)
    np.testing.assert_array_equal(big.npass, exact_n.npass)
    assert kerndwd.fit(X, y, [0.1], kern=KERN, solver="bcd", block_size=8.0).jerr == 0  # 8.0 is an integer


def test_cv_tune_and_the_estimator_take_the_solver():
    """The faces pass ``solver="bcd"`` and ``block_size`` through unchanged; the
    held-out decision values match the exact kernel's."""
    X, y, _ = circle(90, 11)
    X_before, y_before = X.copy(), y.copy()
    lams = [0.1, 0.01]
    kw = dict(kern=KERN, nfolds=3, random_state=0, stop="kkt", eps=1e-9)
    exact = kerndwd.cv(X, y, lams, **kw)
    bcd = kerndwd.cv(X, y, lams, solver="bcd", block_size=16, **kw)
    np.testing.assert_array_equal(X, X_before)
    np.testing.assert_array_equal(y, y_before)
    assert np.abs(bcd.predmat - exact.predmat).max() <= 1e-4
    np.testing.assert_array_equal(bcd.cvm, exact.cvm)
    tuned = kerndwd.tune(X, y, lams, qvals=(0.5, 2.0), solver="bcd", block_size=16, **kw)
    tuned_exact = kerndwd.tune(X, y, lams, qvals=(0.5, 2.0), **kw)
    assert tuned.q_tune == tuned_exact.q_tune
    pytest.importorskip("sklearn")
    from kerndwd import DWDClassifier

    y3 = np.digitize(X[:, 1], [-0.5, 0.5])
    exact_est = DWDClassifier(lambd=0.05, kernel=KERN, tol=1e-9).fit(X, y3)
    bcd_est = DWDClassifier(lambd=0.05, kernel=KERN, tol=1e-9, solver="bcd",
                            design_options={"block_size": 16}).fit(X, y3)
    assert bcd_est.solver_ == "bcd"
    assert np.abs(bcd_est.decision_function(X) - exact_est.decision_function(X)).max() <= 1e-4


def test_the_gradient_rule_fits_bcd_by_mm_and_newton_is_refused_by_name():
    X, y, _ = circle(80, 3)
    path = kerndwd.fit(X, y, [0.1], kern=KERN, solver="bcd", stop="kkt", eps=1e-7)
    assert path.jerr == 0 and path.kkt[0] <= 1e-7
    with pytest.raises(ValueError, match="method='newton' cannot fit the solver='bcd' design"):
        kerndwd.fit(X, y, [0.1], kern=KERN, solver="bcd", stop="kkt", method="newton")


@pytest.mark.parametrize("weighted", [False, True], ids=["unweighted", "weighted"])
def test_a_cached_kernel_matrix_gives_the_same_sweeps(weighted):
    """``cache_kernel=True`` reads the sweeps' columns from the kernel matrix
    instead of forming them: the same sweeps to 1e-12, the same counts, and
    the kernel is evaluated once (by the cache), not once a sweep."""
    X, y, _ = circle(400, 3)
    wt = np.where(y > 0, 2.0, 0.5) if weighted else None
    lam = [0.1, 0.01, 0.001]
    kw = dict(kern=KERN, wt=wt, solver="bcd", block_size=64, stop="kkt", eps=1e-8)
    formed = kerndwd.fit(X, y, lam, cache_kernel=False, **kw)
    cached = kerndwd.fit(X, y, lam, cache_kernel=True, **kw)
    assert formed.jerr == cached.jerr == 0
    np.testing.assert_array_equal(formed.npass, cached.npass)
    # the kernel values agree to rounding, which sweeps carry into alpha (K is
    # ill-conditioned) but not into the decision values or the objective
    np.testing.assert_allclose(cached.predict(X, type="link"), formed.predict(X, type="link"), rtol=0, atol=1e-7)
    np.testing.assert_allclose(cached.objective, formed.objective, rtol=1e-10)
    calls = []

    class Counting(type(KERN)):
        def __call__(self, x, y=None):
            calls.append(1)
            return super().__call__(x, y)

    counting = Counting(sigma=KERN.sigma)
    kerndwd.fit(X, y, lam, **{**kw, "kern": counting, "cache_kernel": True})
    during_cached = len(calls)
    calls.clear()
    kerndwd.fit(X, y, lam, **{**kw, "kern": counting, "cache_kernel": False})
    assert during_cached < len(calls) / 10


def test_cache_kernel_is_checked_by_name():
    X, y, _ = circle(40, 3)
    with pytest.raises(TypeError, match="cache_kernel must be True, False or None"):
        kerndwd.fit(X, y, [0.1], kern=KERN, solver="bcd", cache_kernel="yes")


def test_the_kernel_is_formed_before_the_folds_only_where_it_is_kept():
    """``prepare`` (before cross-validation splits the rows) forms the kernel
    matrix where the design keeps it, so every fold slices it; where it is not
    kept, or the rows are on a cluster, nothing n x n is formed."""
    from types import SimpleNamespace

    X, y, _ = circle(30, 3)
    for cache_kernel, storage, formed in [(True, "dense", True), (False, "dense", False), (None, "dense", True),
                                          (True, "remote", False)]:
        design = make_design("bcd", {"cache_kernel": cache_kernel})
        cache = FactorCache(X, KERN)
        design.prepare(SimpleNamespace(storage=storage, n=30), cache, folds=None)
        assert ("kernel_matrix" in cache._memo) is formed, (cache_kernel, storage)
    assert make_design("bcd", {}).keeps_kernel(30)  # 7 KiB fits any memory budget


def test_the_design_keeps_its_options_its_seed_and_its_budget(monkeypatch):
    """The options as given (the faces pass them on to the final fit of cv, and
    print them); the seed that orders the blocks; the kernel kept where its
    8 n^2 bytes fit the budget; no BLAS threads asked for rows on a cluster."""
    from types import SimpleNamespace

    from kerndwd.engine import cache

    design = make_design("bcd", {"block_size": 7, "cache_kernel": False}, random_state=5)
    assert design.options == {"block_size": 7, "cache_kernel": False} and design.random_state == 5
    assert repr(design) == "BlockCoordinateDesign(block_size=7, cache_kernel=False)"
    monkeypatch.setattr(cache, "available_memory", lambda: 2 * 8.0 * 1000 ** 2)  # a budget of 8e6 bytes
    auto = make_design("bcd", {})
    assert auto.keeps_kernel(1000) and not auto.keeps_kernel(1001)
    assert auto.blas_work(SimpleNamespace(storage="remote", n=10 ** 6, p=50)) == (0.0, 0.0)
    assert auto.blas_work(SimpleNamespace(storage="dense", n=1000, p=5)) == (2.0 * 1000 ** 2 * 5, 0.0)
    assert auto.blas_work(SimpleNamespace(storage="dense", n=1001, p=5)) == (0.0, 2.0 * 1001 ** 2 * 5)


def test_solver_auto_memory_is_the_budget_of_the_kernel_bcd_keeps(monkeypatch):
    """``solver="auto", memory=1e5`` on 400 rows picks BCD (``K`` takes 1.3 MB);
    BCD then forms kernel columns by blocks and never the ``n x n`` matrix,
    whatever the machine's budget (here room for it).  A budget with room for
    ``K`` on a BCD named by the caller keeps it."""
    from kerndwd.engine import cache as cache_module

    monkeypatch.setattr(cache_module, "available_memory", lambda: 1e12)
    X, y, _ = circle(400, 3)
    formed = []
    original = cache_module.FactorCache.kernel_matrix
    monkeypatch.setattr(cache_module.FactorCache, "kernel_matrix",
                        lambda self, single=False: formed.append(single) or original(self, single))
    with pytest.warns(UserWarning, match="block coordinate descent"):
        path = kerndwd.fit(X, y, [0.1], kern=KERN, solver="auto", memory=1e5, stop="kkt", eps=1e-6)
    assert path.design == "bcd" and path.jerr == 0 and formed == []
    bcd = make_design("bcd", {})
    assert bcd.keeps_kernel(400) and not bcd.within(1e5).keeps_kernel(400)
    assert bcd.within(None).memory == 1e5 and bcd.within(8.0 * 400 ** 2).keeps_kernel(400)


def test_the_seed_orders_the_blocks():
    X, y, _ = circle(200, 3)
    kw = dict(kern=KERN, solver="bcd", block_size=16, stop="kkt", eps=1e-3)
    one = kerndwd.fit(X, y, [0.01], random_state=1, **kw)
    again = kerndwd.fit(X, y, [0.01], random_state=1, **kw)
    other = kerndwd.fit(X, y, [0.01], random_state=2, **kw)
    np.testing.assert_array_equal(one.alpha, again.alpha)
    assert not np.array_equal(one.alpha, other.alpha)


class _NoSweeps(Exception):
    pass


def _refuse_sweeps(monkeypatch):
    """Make building BCD's majoriser raise: what was warned by then was warned before any sweep."""
    from kerndwd.engine.designs.bcd import BlockCoordinateDesign

    def refuse(self, problem, cache):
        raise _NoSweeps
    monkeypatch.setattr(BlockCoordinateDesign, "majoriser", refuse)


@pytest.mark.parametrize("q", [1e-4, 3e-3])
def test_a_named_bcd_warns_before_any_sweep_at_a_tiny_q(monkeypatch, q):
    X, y, _ = circle(60, 1)
    _refuse_sweeps(monkeypatch)
    message = (f"solver='bcd' at q = {q:g}: block coordinate sweeps majorise the loss with curvature "
               f"M = (q+1)^2/q = {(q + 1) ** 2 / q:.3g}, and below q = 0.01 a path takes tens to hundreds of "
               "times the sweeps it takes at q = 1 (it may spend maxit); Newton on the kernel matrix "
               "(solver='exact' or 'cg') reaches the same optimum in tens of iterations")
    with pytest.warns(kerndwd.DWDConvergenceWarning) as record, pytest.raises(_NoSweeps):
        kerndwd.fit(X, y, [1.0], kern=KERN, qval=q, solver="bcd", block_size=16, stop="kkt", eps=1e-9)
    assert [str(w.message) for w in record] == [message]
    assert record[0].filename == __file__  # it names the caller's line


@pytest.mark.parametrize("q", [0.01, 1.0])
def test_a_named_bcd_at_q_from_one_hundredth_warns_nothing(q):
    X, y, _ = circle(60, 1)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        path = kerndwd.fit(X, y, [1.0], kern=KERN, qval=q, solver="bcd", stop="kkt", eps=1e-6)
    assert path.jerr == 0


def test_tune_warns_for_its_smallest_q_before_any_sweep(monkeypatch):
    """tune checks its problem at the first q; a smaller one later in qvals is
    named too, before the folds."""
    X, y, _ = circle(60, 1)
    _refuse_sweeps(monkeypatch)
    with pytest.warns(kerndwd.DWDConvergenceWarning) as record, pytest.raises(_NoSweeps):
        kerndwd.tune(X, y, [1.0], kern=KERN, qvals=[1.0, 2e-3, 0.5], solver="bcd", stop="kkt", eps=1e-6,
                     random_state=0)
    assert [str(w.message)[:26] for w in record] == ["solver='bcd' at q = 0.002:"]
