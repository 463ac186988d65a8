"""The exact kernel by Newton-CG on the kernel matrix (``solver="cg"``) and ``solver="auto"``.

* ``solver="cg"`` reaches the eigen solver's optimum, to 1e-8 in the
  objective, on every kernel fit recorded from the R package and on
  hypothesis-drawn problems (the Newton tests' strategies: several kernels,
  weights over four decades, q over four, lambda over seven).
* Its pieces do what the module says: the bordered system solves Newton's
  equations, the Woodbury preconditioner inverts ``C W^+ C' + L``, block
  conjugate gradients solve each column, the pivoted landmarks are distinct.
* ``solver="auto"`` picks by the rows and the memory budget, says so, and
  is the default under the gradient rule; R's rule keeps R's solver.
"""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import kerndwd
from kerndwd.engine import FactorCache, Problem, build_majoriser, make_design
from kerndwd.engine.kernel_cg import (NystromPreconditioner, block_pcg, bordered_solve, pivoted_landmarks)
from kerndwd.engine.loss import loss_derivs_and_curvatures
from kerndwd.kernels import kernel_from_spec
from reference.fixtures import fixture_names, load_fixture
from test_newton import lams_wide, problems, qs, wide_weights

EPS = 1e-9
KERNEL_CASES = [c for c in fixture_names("kerndwd_fit")
                if load_fixture(c)["kernel"]["name"] not in ("vanilladot",)]


def circle(n, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, 2))
    return X, np.where((X ** 2).sum(axis=1) + 0.4 * rng.standard_normal(n) > 1.4, 1.0, -1.0)


def _fit(d, solver, **kw):
    lam = np.sort(np.asarray(d["lambda"], dtype=float))[::-1]
    return kerndwd.fit(d["x"], d["y"], lam, kern=kernel_from_spec(d["kernel"]), qval=d["qval"], wt=d["wt"],
                       eps=EPS, maxit=10**5, stop="kkt", solver=solver, **kw)


def test_the_fixtures_hold_kernel_cases():
    assert len(KERNEL_CASES) >= 5


@pytest.mark.parametrize("case", KERNEL_CASES)
def test_cg_reaches_the_eigen_solvers_optimum_on_every_r_kernel_fixture(case):
    """Both stop at ``||grad F|| <= 1e-9``; their objectives agree to 1e-8
    relative and their decision values at the rows to the first-order
    bound of two such points (small here)."""
    d = load_fixture(case)
    eig = _fit(d, "exact")
    try:
        cg = _fit(d, "cg")
    except ValueError as exc:  # a kernel matrix the sampled definiteness check refuses
        assert "kern" in str(exc) and ("definite" in str(exc) or "semi" in str(exc))
        pytest.skip(f"solver='cg' refuses {d['kernel']['name']} by name: {exc}")
    assert eig.jerr == 0 and cg.jerr == 0
    assert cg.design == "cg" and cg.solver == "kdwd-cg"
    assert (cg.kkt <= EPS).all()
    np.testing.assert_allclose(cg.objective, eig.objective, rtol=1e-8, atol=0)
    np.testing.assert_allclose(cg.predict(d["x"], type="link"), eig.predict(d["x"], type="link"),
                               rtol=0, atol=1e-4)


KERNELS = {"rbf": kerndwd.rbfdot(0.5), "poly": kerndwd.polydot(2, 0.5, 1.0), "laplace": kerndwd.laplacedot(1.0),
           "linear": kerndwd.vanilladot()}


@given(problems(), qs, st.lists(lams_wide, min_size=1, max_size=3, unique=True),
       st.sampled_from(sorted(KERNELS)), wide_weights)
@settings(max_examples=max(10, settings().max_examples // 3), deadline=None)
def test_cg_and_eigen_newton_agree_on_drawn_problems(data, q, lambdas, kname, wts):
    """On the Newton tests' problems both solvers end at ``||grad F|| <= 1e-8``
    (or give a lambda up at the same rounding floor: then nothing is
    compared); where both finish, the objectives agree to 1e-8 relative."""
    _cg_agrees_with_eigen(data, q, lambdas, kname, wts)


def _cg_agrees_with_eigen(data, q, lambdas, kname, wts):
    X, y = data
    w = None if wts is None else wts[:X.shape[0]]
    lam = np.sort(np.asarray(lambdas))[::-1]
    kw = dict(kern=KERNELS[kname], qval=q, wt=w, stop="kkt", eps=1e-8, maxit=5000)
    eig = kerndwd.fit(X, y, lam, solver="exact", **kw)
    try:
        cg = kerndwd.fit(X, y, lam, solver="cg", **kw)
    except ValueError as exc:  # duplicated rows make a Laplace matrix indefinite beyond rounding
        assert "kern" in str(exc)
        return
    done = min(eig.lambda_.size, cg.lambda_.size)
    assert done >= 1 or eig.jerr != 0
    np.testing.assert_allclose(cg.objective[:done], eig.objective[:done], rtol=1e-8, atol=1e-14)


@given(problems(), qs, st.lists(lams_wide, min_size=1, max_size=3, unique=True),
       st.sampled_from(sorted(KERNELS)), wide_weights)
@settings(max_examples=10, deadline=None)
def test_cg_on_a_float32_copy_and_eigen_newton_agree_on_drawn_problems(data, q, lambdas, kname, wts):
    """The same problems with the directions' conjugate gradients on a float32
    copy of ``K`` (forced at every size): the copy changes the directions,
    never the optimum, so the objectives agree to 1e-8 relative."""
    from unittest import mock

    from kerndwd.engine.designs import cg as cg_design

    with mock.patch.object(cg_design, "SINGLE_MIN_ROWS", 1):
        _cg_agrees_with_eigen(data, q, lambdas, kname, wts)


# --------------------------------------------------------------------------
# the pieces
# --------------------------------------------------------------------------
def _kernel(n=60, seed=1):
    X, y = circle(n, seed)
    return X, y, kerndwd.rbfdot(1.0)(X)


def test_the_bordered_system_solves_newtons_equations():
    """``(Z'DZ + 2 lambda diag(0, K)) s = -grad F`` with ``Z = [1, K]``, checked
    against a dense solve of the full (n + 1) system."""
    X, y, K = _kernel()
    n = K.shape[0]
    rng = np.random.default_rng(2)
    alpha = rng.standard_normal(n) * 0.05
    b0, lam, M = 0.1, 1e-3, 4.0
    f = b0 + K @ alpha
    derivs, curv = loss_derivs_and_curvatures(y * f, 1.0)
    z = y * derivs / n
    d = curv / n + 0.3 * M / n  # damped: every d_i > 0
    Z = np.column_stack((np.ones(n), K))
    H = Z.T @ (d[:, None] * Z)
    H[1:, 1:] += 2.0 * lam * K
    g = np.concatenate(([z.sum()], K @ (z + 2.0 * lam * alpha)))
    precond = NystromPreconditioner(K, pivoted_landmarks(K, 20))
    step, df, its = bordered_solve(K, d, lam, z + 2.0 * lam * alpha, alpha, precond, 1e-12)
    assert its >= 1
    np.testing.assert_allclose(H @ step, -g, rtol=0, atol=1e-9 * np.abs(g).max())
    np.testing.assert_allclose(df, step[0] + K @ step[1:], rtol=0, atol=1e-10 * np.abs(df).max())


def test_the_preconditioner_inverts_its_nystrom_matrix():
    """``P^-1 (C W^-1 C' + L) v = v`` for vectors and matrices of them; with
    every row a landmark the Nystrom matrix is ``K`` itself."""
    X, y, K = _kernel(40)
    rng = np.random.default_rng(3)
    l = rng.uniform(0.1, 2.0, 40)
    landmarks = np.arange(40)
    P = NystromPreconditioner(K, landmarks)
    P.set_diagonal(l)
    V = rng.standard_normal((40, 3))
    np.testing.assert_allclose(P((K + np.diag(l)) @ V), V, atol=1e-6)
    np.testing.assert_allclose(P((K + np.diag(l)) @ V[:, 0]), V[:, 0], atol=1e-6)
    S = pivoted_landmarks(K, 8)
    few = NystromPreconditioner(K, S)
    few.set_diagonal(l)
    nystrom = K[:, S] @ np.linalg.pinv(K[np.ix_(S, S)]) @ K[S]
    np.testing.assert_allclose(few((nystrom + np.diag(l)) @ V), V, atol=1e-5)


def test_block_cg_solves_each_column_and_accumulates_the_products():
    X, y, K = _kernel(80)
    rng = np.random.default_rng(4)
    l = rng.uniform(1e-3, 1e-1, 80)
    B = rng.standard_normal((80, 2))
    P = NystromPreconditioner(K, pivoted_landmarks(K, 10))
    P.set_diagonal(l)
    Xs, KX, its = block_pcg(K, l, P, B, 1e-12)
    np.testing.assert_allclose((K + np.diag(l)) @ Xs, B, atol=1e-9)
    np.testing.assert_allclose(KX, K @ Xs, atol=1e-9)
    # the preconditioner earns its keep: far fewer iterations than without it
    class Identity:
        def __call__(self, R):
            return R.copy()
    _, _, plain = block_pcg(K, l, Identity(), B, 1e-12)
    assert its < plain


def test_block_cg_stops_each_column_at_its_weighted_tolerance_and_lowers_its_quadratic():
    """The stopping rule as documented: every column ends with ``||w * residual||
    <= rtol ||w * B_j||`` and one iteration fewer leaves some column above it;
    every iterate lowers each column's quadratic (strictly, for some column)."""
    X, y, K = _kernel(80)
    rng = np.random.default_rng(7)
    l = rng.uniform(1e-3, 1e-1, 80)
    w = rng.uniform(0.01, 1.0, 80)
    B = np.column_stack((rng.standard_normal(80), np.ones(80)))
    P = NystromPreconditioner(K, pivoted_landmarks(K, 4))
    P.set_diagonal(l)
    A = K + np.diag(l)
    rtol = 1e-4

    def weighted_residuals(Xs):
        return np.linalg.norm(w[:, None] * (B - A @ Xs), axis=0) / np.linalg.norm(w[:, None] * B, axis=0)

    Xs, KX, its = block_pcg(K, l, P, B, rtol, weights=w)
    assert its >= 3 and (weighted_residuals(Xs) <= rtol * (1 + 1e-9)).all()
    early, _, early_its = block_pcg(K, l, P, B, rtol, weights=w, maxiter=its - 1)
    assert early_its == its - 1 and (weighted_residuals(early) > rtol).any()
    quadratic = [np.einsum("ij,ij->j", Z, 0.5 * A @ Z - B) for Z in
                 (block_pcg(K, l, P, B, rtol, weights=w, maxiter=k)[0] for k in range(1, its + 1))]
    assert all((b <= a + 1e-12 * np.abs(a)).all() for a, b in zip(quadratic, quadratic[1:]))
    assert all((b < a).any() for a, b in zip(quadratic, quadratic[1:]))


def test_pivoted_landmarks_are_distinct_and_stop_at_the_rank():
    X = np.repeat(np.arange(5.0)[:, None], 4, axis=0)  # 5 distinct rows, 4 copies each
    K = kerndwd.rbfdot(0.5)(X)
    chosen = pivoted_landmarks(K, 12)
    assert len(set(X[chosen, 0].tolist())) == len(chosen) == 5


@pytest.mark.parametrize("n, m, block", [(60, 12, 4), (300, 40, 64), (300, 150, 16)])
def test_each_pivot_is_within_the_slack_of_the_greedy_choice(n, m, block):
    """Pivoted Cholesky's defining property, checked against the residual formed
    directly: when the ``k``-th landmark is taken, its diagonal of ``K - C W^+ C'``
    (over the ``k`` landmarks before it) is at least half the largest one (the
    documented factor 2 of ``PIVOT_SLACK``), and taken landmarks are distinct."""
    rng = np.random.default_rng(n + m)
    X = rng.standard_normal((n, 3)) * np.array([3.0, 1.0, 0.3])
    K = kerndwd.rbfdot(0.5)(X, X)
    chosen = pivoted_landmarks(K, m, block=block)
    assert chosen.size == m and np.unique(chosen).size == m

    def residual_diagonal(S):
        if len(S) == 0:
            return np.diag(K).copy()
        C = K[:, S]
        return np.diag(K) - np.einsum("ij,ji->i", C, np.linalg.pinv(K[np.ix_(S, S)], rcond=1e-13) @ C.T)

    for k in range(m):
        resid = residual_diagonal(chosen[:k])
        assert resid[chosen[k]] >= 0.5 * resid.max() - 1e-10


def test_the_preconditioner_rank_changes_the_work_not_the_fit():
    X, y = circle(400, 5)
    lam = [0.1, 0.001]
    small = kerndwd.fit(X, y, lam, kern=kerndwd.rbfdot(1.0), solver="cg", rank=5, stop="kkt", eps=1e-9)
    large = kerndwd.fit(X, y, lam, kern=kerndwd.rbfdot(1.0), solver="cg", rank=200, stop="kkt", eps=1e-9)
    np.testing.assert_allclose(small.objective, large.objective, rtol=1e-10)
    with pytest.raises(ValueError, match="rank"):
        kerndwd.fit(X, y, lam, kern=kerndwd.rbfdot(1.0), solver="cg", rank=0)


def _cg_newton(X, y, lam, **options):
    """The cg design's Newton path at ``lam`` on ``(X, y)``: ``(result, its Newton system)``."""
    from kerndwd.engine import fit_path

    problem = Problem.from_arrays(X, y, lam, kern=kerndwd.rbfdot(1.0), stop="kkt", eps=1e-9, method="newton",
                                  design=make_design("cg", options))
    result, maj = fit_path(problem)
    return result, maj.newton_system()


def test_the_preconditioner_cuts_the_conjugate_gradient_iterations():
    """The work, not only the answer: with the Nystrom preconditioner on enough
    landmarks to hold K's effective dimension, conjugate gradients need a few
    iterations per Newton step, many times fewer than with a preconditioner
    of 2 landmarks (little more than the diagonal), at the same optimum."""
    X, y = circle(400, 5)
    lam = [0.01, 0.0001]
    weak, weak_system = _cg_newton(X, y, lam, rank=2)
    strong, strong_system = _cg_newton(X, y, lam, rank=150)
    np.testing.assert_allclose(weak.objective, strong.objective, rtol=1e-10)
    steps = int(strong.npass.sum())
    assert strong_system.cg_iterations <= 3 * steps  # 14 for 14 Newton steps when written
    assert 4 * strong_system.cg_iterations <= weak_system.cg_iterations  # 14 against 171


def test_the_kernel_matrix_system_reads_its_penalty_from_the_decision_values_or_from_k():
    """``penalty``, ``penalty_direction`` and ``cross_penalty`` give the same numbers
    from the decision values (as the Newton iteration calls them) and without
    them (from ``K``), as the Newton system's contract allows."""
    X, y = circle(60, 9)
    _, system = _cg_newton(X, y, [0.1], rank=20)
    rng = np.random.default_rng(0)
    x, step = rng.standard_normal(61), rng.standard_normal(61)
    f = system.decision(x)
    df = system.decision(step) - 0.0
    K = system.K
    assert system.penalty(x) == pytest.approx(x[1:] @ K @ x[1:], rel=1e-12)
    assert system.penalty(x, f) == pytest.approx(system.penalty(x), rel=1e-12)
    np.testing.assert_allclose(system.penalty_direction(x, f), system.penalty_direction(x), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(system.penalty_direction(x), K @ x[1:], rtol=1e-12, atol=0)
    np.testing.assert_allclose(system.cross_penalty(x, step, f, df), system.cross_penalty(x, step), rtol=1e-12)
    np.testing.assert_allclose(system.cross_penalty(x, step), (x[1:] @ K @ step[1:], step[1:] @ K @ step[1:]),
                               rtol=1e-12)


def test_the_mm_step_of_the_cg_majoriser_lowers_the_objective_to_the_optimum():
    """``method="mm"`` on ``solver="cg"``: every pass lowers ``F`` (recomputed from
    the coefficients), and the path reaches the Newton path's optimum."""
    X, y = circle(150, 6)
    lam = [0.05, 0.005]
    mm = kerndwd.fit(X, y, lam, kern=kerndwd.rbfdot(1.0), solver="cg", method="mm", stop="kkt", eps=1e-7,
                     maxit=20000)
    newton = kerndwd.fit(X, y, lam, kern=kerndwd.rbfdot(1.0), solver="cg", stop="kkt", eps=1e-9)
    assert mm.jerr == 0 and newton.jerr == 0
    np.testing.assert_allclose(mm.objective, newton.objective, rtol=1e-8)
    problem = Problem.from_arrays(X, y, [lam[0]], kern=kerndwd.rbfdot(1.0), stop="kkt", eps=1e-7, method="mm",
                                  design=make_design("cg", {}))
    maj = build_majoriser(problem, FactorCache(X, problem.kern))
    values = []
    from kerndwd.engine import fit_path
    from _engine import evaluate
    fit_path(problem, callback=lambda step: values.append(evaluate(maj.form, step.alpha, y, maj.loss, lam[0])[1]))
    assert len(values) > 3
    assert all(b <= a + 1e-14 for a, b in zip(values, values[1:]))


def test_cg_is_refused_by_name_where_it_does_not_fit():
    X, y = circle(30, 7)
    from scipy import sparse
    with pytest.raises(TypeError, match="X: sparse rows"):
        kerndwd.fit(sparse.csr_matrix(X), y, [0.1], kern=kerndwd.vanilladot(), solver="cg")
    with pytest.raises(ValueError, match="method='newton'.*stop"):
        kerndwd.fit(X, y, [0.1], kern=kerndwd.rbfdot(1.0), solver="cg", method="newton", stop="step")


# --------------------------------------------------------------------------
# solver="auto"
# --------------------------------------------------------------------------
def test_auto_picks_by_rows_and_memory_and_says_why():
    auto = make_design("auto", {"memory": 1e9})
    rbf = kerndwd.rbfdot(1.0)
    assert auto.for_rows(200, 3, rbf, "dense", False).name == "exact"
    assert auto.for_rows(201, 3, rbf, "dense", False).name == "cg"
    cg = auto.for_rows(5000, 3, rbf, "dense", True)
    assert cg.name == "cg" and "conjugate gradients" in cg.chosen and "5000" in cg.chosen
    bcd = auto.for_rows(20000, 3, rbf, "dense", False)  # 3.2 GB of K > 1 GB
    assert bcd.name == "bcd" and "memory budget" in bcd.chosen
    assert auto.for_rows(10**6, 3, kerndwd.vanilladot(), "dense", False).name == "exact"
    assert auto.for_rows(10**6, 3, kerndwd.vanilladot(), "remote", False).name == "exact"
    on_cluster = auto.for_rows(10**6, 3, rbf, "remote", False)
    assert on_cluster.name == "bcd" and "Dask" in on_cluster.chosen
    with pytest.raises(ValueError, match="memory"):
        make_design("auto", {"memory": -1})


def test_auto_is_the_default_under_the_gradient_rule_and_r_keeps_rs_solver():
    X, y = circle(400, 8)
    rbf = kerndwd.rbfdot(1.0)
    kkt = kerndwd.fit(X, y, [0.1], kern=rbf, stop="kkt")
    assert kkt.design == "cg" and kkt.chosen.startswith("solver='auto'")
    assert "chosen by solver='auto'" in repr(kkt)
    r = kerndwd.fit(X[:150], y[:150], [0.1], kern=rbf)
    assert r.design == "exact" and r.chosen is None and r.stop == "step"
    explicit = kerndwd.fit(X[:150], y[:150], [0.1], kern=rbf, solver="auto")
    assert explicit.design == "exact" and explicit.stop == "kkt" and explicit.method == "newton"
    eig = kerndwd.fit(X, y, [0.1], kern=rbf, stop="kkt", solver="exact")
    np.testing.assert_allclose(kkt.objective, eig.objective, rtol=1e-8)


def test_rs_rule_asked_of_a_picked_design_other_than_rs_is_refused_naming_stop():
    X, y = circle(400, 8)
    rbf = kerndwd.rbfdot(1.0)
    with pytest.raises(ValueError, match=r"^stop='step' is R's rule.*solver='cg'"):
        kerndwd.fit(X, y, [0.1], kern=rbf, solver="auto", stop="step")
    named = kerndwd.fit(X, y, [0.1], kern=rbf, solver="cg", stop="step")  # named: R's rule on it
    small = kerndwd.fit(X[:150], y[:150], [0.1], kern=rbf, solver="auto", stop="step")  # the pick is R's
    assert named.stop == small.stop == "step" and small.design == "exact"


def test_auto_runs_through_cv_and_the_estimator():
    X, y = circle(600, 9)
    lam = [0.1, 0.01]
    cvres = kerndwd.cv(X, y, lam, kern=kerndwd.rbfdot(1.0), solver="auto", nfolds=3, random_state=0)
    ref = kerndwd.cv(X, y, lam, kern=kerndwd.rbfdot(1.0), solver="exact", stop="kkt", nfolds=3, random_state=0)
    np.testing.assert_allclose(cvres.cvm, ref.cvm, atol=1.5 / 600)
    clf = kerndwd.DWDClassifier(kernel="rbf", gamma=1.0, lambd=0.01, solver="auto").fit(X, y)
    assert clf.solver_ == "kdwd-cg" and clf.path_.design == "cg"
    assert clf.solver_chosen_.startswith("solver='auto': n = 600 rows")
    assert (clf.predict(X) == np.where(clf.decision_function(X) > 0, 1.0, -1.0)).all()


def test_the_mm_step_of_the_cg_majoriser_is_the_weighted_kernel_solvers_step():
    """The MM step of ``solver="cg"`` minimises the same quadratic as R's weighted
    kernel solver (``wkdwd``: curvature ``(M/n) Z'WZ + 2 lambda diag(0, K)``):
    from one point and one set of loss derivatives both move ``f`` alike (to
    the conjugate-gradient tolerance)."""
    X, y = circle(60, 11)
    w = np.random.default_rng(3).uniform(0.2, 3.0, y.size)
    kern = kerndwd.rbfdot(1.0)
    steps = {}
    for design in ("cg", "exact"):
        problem = Problem.from_arrays(X, y, [0.05], kern=kern, weights=w, stop="kkt", eps=1e-7, method="mm",
                                      design=make_design(design, {}))
        maj = build_majoriser(problem, FactorCache(X, kern))
        rng = np.random.default_rng(5)
        coord = rng.standard_normal(maj.ncoef) * 0.1
        z = rng.standard_normal(y.size) * w / y.size
        step, df, _ = maj.at_lambda(0.05)(z, coord)
        steps[maj.solver] = df
    assert set(steps) == {"kdwd-cg", "wkdwd"}
    scale = np.abs(steps["wkdwd"]).max()
    assert scale > 0.0
    assert np.abs(steps["kdwd-cg"] - steps["wkdwd"]).max() <= 1e-4 * scale


@pytest.mark.parametrize("columns", [1, 3])
def test_block_cg_solves_any_number_of_columns_without_weights(columns):
    X, y, K = _kernel(50)
    rng = np.random.default_rng(11)
    l = rng.uniform(1e-2, 1e-1, 50)
    B = rng.standard_normal((50, columns))
    P = NystromPreconditioner(K, pivoted_landmarks(K, 6))
    P.set_diagonal(l)
    Xs, KX, its = block_pcg(K, l, P, B, 1e-10)
    assert Xs.shape == B.shape and its > 0
    np.testing.assert_allclose((K + np.diag(l)) @ Xs, B, atol=1e-7)
    np.testing.assert_allclose(KX, K @ Xs, atol=1e-7)
    zero, Kzero, none = block_pcg(K, l, P, np.zeros((50, columns)), 1e-10)
    assert none == 0 and not zero.any() and not Kzero.any()


def test_the_preconditioner_keeps_its_factor_while_the_diagonal_stays(monkeypatch):
    from kerndwd.engine import kernel_cg

    X, y, K = _kernel(30)
    l = np.linspace(0.1, 1.0, 30)
    P = NystromPreconditioner(K, pivoted_landmarks(K, 5))
    calls = []
    real = kernel_cg.linalg.lapack.dpotrf
    monkeypatch.setattr(kernel_cg.linalg.lapack, "dpotrf", lambda *a, **k: calls.append(1) or real(*a, **k))
    P.set_diagonal(l)
    P.set_diagonal(l.copy())
    assert len(calls) == 1
    l[0] = 0.2  # the caller's array changed: a new factor
    P.set_diagonal(l)
    assert len(calls) == 2


def test_the_preconditioner_without_landmarks_is_the_diagonal_and_with_duplicates_still_inverts():
    X, y, K = _kernel(30)
    rng = np.random.default_rng(12)
    l = rng.uniform(0.1, 1.0, 30)
    R = rng.standard_normal((30, 2))
    empty = NystromPreconditioner(K, np.array([], dtype=int))
    empty.set_diagonal(l)
    assert empty.rank == 0
    np.testing.assert_allclose(empty(R), R / l[:, None], rtol=1e-15)
    np.testing.assert_allclose(empty(R[:, 0]), R[:, 0] / l, rtol=1e-15)
    S = pivoted_landmarks(K, 6)
    twice = NystromPreconditioner(K, np.r_[S, S[:2]])  # a singular W: its factor needs the ridge
    twice.set_diagonal(l)
    nystrom = K[:, S] @ np.linalg.pinv(K[np.ix_(S, S)]) @ K[S]
    np.testing.assert_allclose(twice((nystrom + np.diag(l)) @ R), R, atol=1e-6)


def test_rows_of_vanishing_curvature_drop_out_of_the_preconditioner():
    """Entries of ``l`` beyond 1e12 times the smallest contribute nothing to
    ``C' L^-1 C``: the preconditioner still inverts ``C W^-1 C' + L`` on
    the other rows, and leaves those rows at ``r / l``."""
    X, y, K = _kernel(30)
    rng = np.random.default_rng(13)
    l = rng.uniform(0.1, 1.0, 30)
    l[:5] = 1e20
    S = pivoted_landmarks(K, 30)
    P = NystromPreconditioner(K, S)
    P.set_diagonal(l)
    v = rng.standard_normal(30)
    v[:5] = 0.0
    out = P((K + np.diag(l)) @ v)
    np.testing.assert_allclose(out[5:], v[5:], atol=1e-6)
    assert np.abs(out[:5]).max() < 1e-12


@pytest.mark.parametrize("m", [1, 7, 25])
def test_one_pivot_a_round_is_exactly_greedy_pivoted_cholesky(m):
    """With ``block=1`` each round takes the row of largest residual diagonal
    (the first of equal ones), the residual formed directly here."""
    rng = np.random.default_rng(m)
    X = rng.standard_normal((40, 2)) * np.array([2.0, 0.5])
    K = kerndwd.rbfdot(0.7)(X, X)
    chosen = pivoted_landmarks(K, m, block=1)
    expected, resid = [], np.diag(K).copy()
    for _ in range(m):
        j = int(np.argmax(resid))
        expected.append(j)
        S = np.array(expected)
        C = K[:, S]
        resid = np.diag(K) - np.einsum("ij,ji->i", C, np.linalg.solve(K[np.ix_(S, S)], C.T))
        resid[S] = 0.0
    assert chosen.tolist() == expected


@pytest.mark.parametrize("weighted", [False, True])
def test_the_kernel_matrix_system_s_scales_and_its_damped_direction(weighted):
    """``w_n = w / n``, ``pen = diag(K)``, ``scale = (M/n) [sum w, sum_i w_i K_ij^2]``;
    the direction solves the bordered system with curvatures
    ``d + mu M w / n`` (floored), and counts its CG iterations."""
    from kerndwd.engine.forms import KernelForm
    from kerndwd.engine.kernel_cg import KernelMatrixNewton

    X, y, K = _kernel(30)
    rng = np.random.default_rng(14)
    w = rng.uniform(0.5, 2.0, 30) if weighted else None
    W = np.ones(30) if w is None else w
    M = 4.0
    P = NystromPreconditioner(K, pivoted_landmarks(K, 30))
    system = KernelMatrixNewton(KernelForm(K), w, M, P)
    np.testing.assert_allclose(system.w_n, W / 30, rtol=1e-15)
    np.testing.assert_array_equal(system.pen, np.diag(K))
    np.testing.assert_allclose(system.scale, (M / 30) * np.r_[W.sum(), (K * K * W[:, None]).sum(axis=0)],
                               rtol=1e-13)
    assert system.cg_iterations == 0
    x = np.r_[0.2, 0.01 * rng.standard_normal(30)]
    z = rng.standard_normal(30) / 30
    d = rng.uniform(0.0, 1.0, 30)
    d[:4] = 0.0
    lam, mu = 0.01, 0.5
    with pytest.raises(ValueError) as info:
        system.direction(x, None, d, lam, mu, 1e-12)
    assert str(info.value) == "the kernel-matrix Newton system needs the loss derivatives z"
    step, df = system.direction(x, None, d, lam, mu, 1e-12, z=z)
    first = system.cg_iterations
    assert first > 0
    dd = d + mu * M * W / 30
    expected, expected_df, _ = bordered_solve(K, dd, lam, z + 2 * lam * x[1:], x[1:], P, 1e-12)
    np.testing.assert_allclose(step, expected, rtol=1e-8, atol=1e-10)
    np.testing.assert_allclose(df, step[0] + K @ step[1:], rtol=1e-7, atol=1e-9)
    system.direction(x, None, d, lam, mu, 1e-12, z=z)
    assert system.cg_iterations > first  # accumulated
    # no damping: the rows without curvature get the floor 1e-16 M max(w) / n, a finite step
    step, df = system.direction(x, None, d, lam, 0.0, 1e-12, z=z)
    floored = np.maximum(d, 1e-300 + 1e-16 * M * W.max() / 30)
    expected, _, _ = bordered_solve(K, floored, lam, z + 2 * lam * x[1:], x[1:], P, 1e-12)
    assert np.isfinite(step).all()
    np.testing.assert_allclose(step, expected, rtol=1e-6, atol=1e-9 * np.abs(expected).max())


def test_the_default_rank_is_a_fraction_of_the_rows_within_its_range():
    from kerndwd.engine.kernel_cg import RANK_FRACTION, RANK_RANGE, default_rank

    assert RANK_FRACTION == 0.075 and RANK_RANGE == (100, 1500)
    for n, rank in [(1, 1), (50, 50), (100, 100), (1333, 100), (1334, 100), (1341, 101), (2000, 150),
                    (19999, 1500), (10 ** 7, 1500)]:
        assert default_rank(n) == rank and type(default_rank(n)) is int


def _preconditioned(n=80, seed=1, rank=6, low=1e-3, high=1e-1):
    X, y, K = _kernel(n, seed)
    l = np.random.default_rng(seed + 20).uniform(low, high, n)
    P = NystromPreconditioner(K, pivoted_landmarks(K, rank))
    P.set_diagonal(l)
    return K, l, P


def test_block_cg_counts_its_iterations_from_one():
    """No iteration allowed: nothing moves and the count is 0; with every row a
    landmark the preconditioner is ``(K + L)^-1`` and one iteration solves."""
    K, l, P = _preconditioned(40, rank=6)
    B = np.random.default_rng(5).standard_normal((40, 2))
    Xs, KX, its = block_pcg(K, l, P, B, 1e-8, maxiter=0)
    assert its == 0 and not Xs.any() and not KX.any()
    exact = NystromPreconditioner(K, np.arange(40))
    l = np.random.default_rng(5).uniform(0.5, 1.0, 40)
    exact.set_diagonal(l)
    Xs, KX, its = block_pcg(K, l, exact, B, 1e-8)
    assert its == 1
    np.testing.assert_allclose((K + np.diag(l)) @ Xs, B, rtol=0, atol=1e-10 * np.abs(B).max())


def test_block_cg_columns_of_different_scales_stop_on_their_own_norms():
    """Each column is conjugate gradients on its own: the block takes as many
    iterations as its slowest column alone, and each column is that column's
    solve, even where one column is 1e8 times the other.  With ``rtol = 1`` the
    start already meets every column's tolerance."""
    K, l, P = _preconditioned(rank=20, low=1e-2)
    rng = np.random.default_rng(9)
    B = np.column_stack((rng.standard_normal(80), 1e8 * rng.standard_normal(80)))
    alone = [block_pcg(K, l, P, B[:, [j]], 1e-8) for j in range(2)]
    Xs, KX, its = block_pcg(K, l, P, B, 1e-8)
    # (the block's products round differently from one column's: a stop may move by an iteration)
    assert 3 <= its <= max(a[2] for a in alone) + 1
    for j in range(2):
        np.testing.assert_allclose(Xs[:, j], alone[j][0][:, 0], rtol=0, atol=1e-8 * np.abs(alone[j][0]).max())
    Xs, KX, its = block_pcg(K, l, P, B, 1.0)
    assert its == 0 and not Xs.any()


def test_block_cg_leaves_a_zero_column_at_zero_while_the_others_iterate():
    K, l, P = _preconditioned()
    B = np.column_stack((np.zeros(80), np.random.default_rng(10).standard_normal(80)))
    Xs, KX, its = block_pcg(K, l, P, B, 1e-10)
    assert its >= 2
    assert np.array_equal(Xs[:, 0], np.zeros(80)) and np.array_equal(KX[:, 0], np.zeros(80))
    np.testing.assert_allclose((K + np.diag(l)) @ Xs[:, 1], B[:, 1], rtol=0, atol=1e-8 * np.abs(B).max())


def test_the_bordered_solve_stops_on_the_curvature_weighted_residual():
    """Rows of vanishing curvature (``d = 1e-12 / n``) have right-hand sides
    ``-r / d`` a trillion times the others'; measured without the weights
    ``d`` they would end conjugate gradients while the rows that carry the
    Newton equations are unsolved.  The step solves the full (n + 1) Newton
    equations to a relative residual of 1e-4 at ``rtol = 1e-6``."""
    X, y, K = _kernel(60)
    n = 60
    rng = np.random.default_rng(2)
    alpha = rng.standard_normal(n) * 0.05
    lam = 1e-3
    d = rng.uniform(0.5, 1.5, n) / n
    d[:10] = 1e-12 / n
    r = rng.standard_normal(n) / n  # r = z + 2 lam alpha
    Z = np.column_stack((np.ones(n), K))
    H = Z.T @ (d[:, None] * Z)
    H[1:, 1:] += 2.0 * lam * K
    g = np.concatenate((((r - 2.0 * lam * alpha).sum(),), K @ r))
    step, df, its = bordered_solve(K, d, lam, r, alpha, NystromPreconditioner(K, pivoted_landmarks(K, 8)), 1e-6)
    assert its >= 2
    assert np.linalg.norm(H @ step + g) <= 1e-4 * np.linalg.norm(g)


@pytest.mark.parametrize("scale", [1e-15, 1.0, 1e6])
def test_pivoted_landmarks_do_not_depend_on_the_kernels_scale(scale):
    """Pivoted Cholesky of ``c K`` takes the rows it takes for ``K``: its floor
    scales with the largest diagonal.  Five distinct rows, four copies each:
    five landmarks, one of each, at every scale."""
    X = np.repeat(np.arange(5.0)[:, None], 4, axis=0)
    K = kerndwd.rbfdot(0.5)(X)
    chosen = pivoted_landmarks(scale * K, 12)
    assert len(chosen) == 5 and sorted(X[chosen, 0].tolist()) == [0.0, 1.0, 2.0, 3.0, 4.0]


@pytest.mark.parametrize("scale", [1e-10, 1e14])
def test_the_preconditioner_of_a_scaled_kernel_is_scaled(scale):
    """``(c C W^-1 C' + c L)^-1 = (C W^-1 C' + L)^-1 / c``: the rows left out of
    ``C' L^-1 C`` are those whose ``1/l`` is negligible against the largest,
    whatever the scale of the kernel and of ``l`` (at ``c = 1e14`` every
    ``1/l`` is below 1e-12, and none of them is negligible)."""
    X, y, K = _kernel(30)
    S = pivoted_landmarks(K, 6)
    rng = np.random.default_rng(14)
    l = rng.uniform(0.5, 1.0, 30)
    v = rng.standard_normal(30)
    P = NystromPreconditioner(K, S)
    P.set_diagonal(l)
    Pc = NystromPreconditioner(scale * K, S)
    Pc.set_diagonal(scale * l)
    np.testing.assert_allclose(scale * Pc(v), P(v), rtol=0, atol=1e-10 * np.abs(P(v)).max())


def test_the_cg_majorisers_newton_system_carries_the_loss_weights():
    """The Levenberg-Marquardt damping of the Newton system is ``mu (M/n) W``:
    with no curvature of its own (``d = 0``, ``mu = 1``) its step is the
    bordered solve with ``d = M w / n``."""
    X, y = circle(50, 12)
    w = np.random.default_rng(4).uniform(0.2, 3.0, y.size)
    kern = kerndwd.rbfdot(1.0)
    problem = Problem.from_arrays(X, y, [0.05], kern=kern, weights=w, stop="kkt", eps=1e-7, method="newton",
                                  design=make_design("cg", {}))
    maj = build_majoriser(problem, FactorCache(X, kern))
    system = maj.newton_system()
    n, M = y.size, maj.loss.lipschitz
    np.testing.assert_allclose(system.w_n, w / n, rtol=1e-15)
    rng = np.random.default_rng(6)
    x = rng.standard_normal(n + 1) * 0.1
    z = rng.standard_normal(n) * w / n
    step, df = system.direction(x, None, np.zeros(n), 0.05, 1.0, 1e-10, z=z)
    K = maj.form.K
    P = NystromPreconditioner(K, pivoted_landmarks(K, 10))
    expected, _, _ = bordered_solve(K, M * w / n, 0.05, z + 0.1 * x[1:], x[1:], P, 1e-10)
    np.testing.assert_allclose(step, expected, rtol=0, atol=1e-6 * np.abs(expected).max())


def _newton_case(n=60, seed=2, lam=1e-3):
    X, y, K = _kernel(n)
    rng = np.random.default_rng(seed)
    alpha = rng.standard_normal(n) * 0.05
    f = 0.1 + K @ alpha
    derivs, curv = loss_derivs_and_curvatures(y * f, 1.0)
    z = y * derivs / n
    d = curv / n + 0.3 * 4.0 / n
    return K, alpha, z + 2.0 * lam * alpha, d, lam


@pytest.mark.parametrize("rtol", [1e-2, 1e-4])
def test_block_cg_on_a_float32_copy_solves_the_double_system_to_its_tolerance(rtol):
    """Conjugate gradients on a float32 copy of ``K`` round each direction for
    its product and keep everything else in double precision: the solution
    meets the weighted tolerance against ``K`` itself (the copy differs from
    ``K`` by ``1e-7`` relative, far below ``rtol``), and the products it
    accumulates are ``K X`` to single precision."""
    K, alpha, r, d, lam = _newton_case()
    l = 2.0 * lam / d
    P = NystromPreconditioner(K, pivoted_landmarks(K, 8))
    P.set_diagonal(l)
    B = np.column_stack((-r / d, np.ones_like(r)))
    K32 = K.astype(np.float32)
    Xs, KX, its = block_pcg(K32, l, P, B, rtol, weights=d)
    assert its >= 1 and Xs.dtype == KX.dtype == np.float64
    resid = d[:, None] * (B - (K @ Xs + l[:, None] * Xs))
    assert (np.linalg.norm(resid, axis=0) <= 1.01 * rtol * np.linalg.norm(d[:, None] * B, axis=0)).all()
    np.testing.assert_allclose(KX, K @ Xs, rtol=0, atol=1e-5 * np.abs(KX).max())
    # in double precision about as many iterations, to the same tolerance (the
    # copy's rounding costs a few where the tolerance nears it)
    Xd, _, its_d = block_pcg(K, l, P, B, rtol, weights=d)
    assert its_d <= its <= 1.5 * its_d + 1
    np.testing.assert_allclose(Xs, Xd, rtol=0, atol=10 * rtol * np.abs(Xd).max())


def test_the_bordered_solve_on_a_float32_copy_changes_f_by_k_itself():
    """With ``products`` the change of ``f`` is one product with ``K`` (double),
    not the float32 products accumulated, so ``f`` stays ``b0 + K alpha``."""
    K, alpha, r, d, lam = _newton_case()
    P = NystromPreconditioner(K, pivoted_landmarks(K, 8))
    step, df, its = bordered_solve(K, d, lam, r, alpha, P, 1e-3, products=K.astype(np.float32))
    assert its >= 1
    np.testing.assert_allclose(df, step[0] + K @ step[1:], rtol=0, atol=1e-13 * np.abs(df).max())
    exact, _, _ = bordered_solve(K, d, lam, r, alpha, P, 1e-13)
    assert np.linalg.norm(step - exact) <= 0.05 * np.linalg.norm(exact)


def test_the_newton_system_uses_the_float32_copy_only_for_loose_directions(monkeypatch):
    """Directions solved to :data:`SINGLE_RTOL` or looser run on the copy;
    tighter ones on ``K`` itself."""
    from kerndwd.engine import kernel_cg
    from kerndwd.engine.forms import KernelForm
    from kerndwd.engine.kernel_cg import SINGLE_RTOL, KernelMatrixNewton

    K, alpha, r, d, lam = _newton_case(30)
    P = NystromPreconditioner(K, pivoted_landmarks(K, 8))
    K32 = K.astype(np.float32)
    system = KernelMatrixNewton(KernelForm(K), None, 4.0, P, products=K32)
    seen = []
    real = kernel_cg.bordered_solve
    monkeypatch.setattr(kernel_cg, "bordered_solve",
                        lambda *a, products=None: seen.append(products) or real(*a, products=products))
    x = np.r_[0.1, alpha]
    for rtol in (0.1, SINGLE_RTOL, 0.99 * SINGLE_RTOL, 1e-12):
        system.direction(x, None, d, lam, 0.5, rtol, z=r - 2.0 * lam * alpha)
    assert [p is K32 for p in seen] == [True, True, False, False]
    plain = KernelMatrixNewton(KernelForm(K), None, 4.0, P)
    plain.direction(x, None, d, lam, 0.5, 0.1, z=r - 2.0 * lam * alpha)
    assert seen[-1] is None


def test_the_preconditioner_reuses_its_scaled_rows_without_mixing_diagonals():
    """The scaled copy of ``C`` is kept between diagonals; a factor for a new
    diagonal is the one a fresh preconditioner computes for it."""
    X, y, K = _kernel(40)
    rng = np.random.default_rng(21)
    S = pivoted_landmarks(K, 12)
    used = NystromPreconditioner(K, S)
    first, second = rng.uniform(0.01, 1.0, 40), rng.uniform(0.01, 1.0, 40)
    used.set_diagonal(first)
    buffer = used._scaled
    assert buffer is not None and buffer.shape == (12, 40)
    used.set_diagonal(second)
    assert used._scaled is buffer
    # it holds C' with its columns scaled by l^(-1/2), written in place
    np.testing.assert_allclose(buffer, used.Ct / np.sqrt(second)[None, :], rtol=1e-15)
    fresh = NystromPreconditioner(K, S)
    fresh.set_diagonal(second)
    R = rng.standard_normal((40, 2))
    np.testing.assert_allclose(used(R), fresh(R), rtol=1e-12, atol=1e-12)
    np.testing.assert_array_equal(used.C, K[S].T)  # C itself untouched


def test_a_system_not_solved_on_the_float32_copy_is_solved_on_k(monkeypatch):
    """Where conjugate gradients reach their cap on the copy, the bordered solve
    runs them again on ``K`` itself and counts both runs' iterations."""
    from kerndwd.engine import kernel_cg

    K, alpha, r, d, lam = _newton_case()
    P = NystromPreconditioner(K, pivoted_landmarks(K, 8))
    K32 = K.astype(np.float32)
    real = kernel_cg.block_pcg
    calls = []

    def capped(A, *a, **k):
        calls.append(A.dtype)
        assert k["weights"] is d  # both runs stop on the curvature-weighted residual
        out = real(A, *a, **k)
        return (out[0] * 0.5, out[1], kernel_cg.CG_MAXITER) if A.dtype == np.float32 else out

    monkeypatch.setattr(kernel_cg, "block_pcg", capped)
    step, df, its = bordered_solve(K, d, lam, r, alpha, P, 1e-3, products=K32)
    assert calls == [np.float32, np.float64]
    exact, exact_df, exact_its = bordered_solve(K, d, lam, r, alpha, P, 1e-3)  # on K from the start
    assert its == kernel_cg.CG_MAXITER + exact_its
    np.testing.assert_allclose(step, exact, rtol=0, atol=1e-14 * np.abs(exact).max())
    np.testing.assert_allclose(df, exact_df, rtol=0, atol=1e-12 * np.abs(exact_df).max())
    # on K from the start, a system at the cap is not solved again
    calls.clear()
    monkeypatch.setattr(kernel_cg, "block_pcg", lambda A, *a, **k: calls.append(A.dtype) or
                        real(A, *a, **k)[:2] + (kernel_cg.CG_MAXITER,))
    _, _, its = bordered_solve(K, d, lam, r, alpha, P, 1e-3)
    assert calls == [np.float64] and its == kernel_cg.CG_MAXITER


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("block", [1, 3, 10 ** 6])
@pytest.mark.parametrize("columns", [1, 2, 3])
def test_products_by_blocks_of_rows_are_the_matrix_product(monkeypatch, dtype, block, columns):
    """``times`` reads ``K`` by blocks of rows (the last one short) and writes
    ``K P`` into ``out``; a float32 ``K`` multiplies the columns rounded to
    float32, and the result is returned in float64."""
    from kerndwd.engine import kernel_cg

    rng = np.random.default_rng(31)
    K = rng.standard_normal((7, 7)).astype(dtype)
    P = rng.standard_normal((7, columns))
    monkeypatch.setattr(kernel_cg, "PRODUCT_BLOCK_BYTES", block * K.itemsize * 7)
    out = np.full((7, columns), np.nan)
    got = kernel_cg.times(K, P, out)
    assert got is out and out.dtype == np.float64
    expected = (K @ P.astype(dtype)).astype(np.float64)
    tol = 1e-13 if dtype == np.float64 else 1e-5
    np.testing.assert_allclose(out, expected, rtol=0, atol=tol * np.abs(expected).max())
    assert np.abs(out - K.astype(np.float64) @ P).max() <= (1e-13 if dtype == np.float64 else 1e-5) * 10


def test_the_preconditioner_applies_to_a_vector_as_to_its_column():
    """``P^-1`` of a vector is that of the one-column matrix; ``C'`` is kept as
    the transpose of ``C``."""
    X, y, K = _kernel(40)
    rng = np.random.default_rng(23)
    P = NystromPreconditioner(K, pivoted_landmarks(K, 9))
    np.testing.assert_array_equal(P.Ct, P.C.T)
    P.set_diagonal(rng.uniform(0.01, 1.0, 40))
    r = rng.standard_normal(40)
    single = P(r)
    assert single.shape == (40,)
    np.testing.assert_allclose(single, P(r[:, None])[:, 0], rtol=1e-14, atol=1e-14)
    both = P(np.column_stack((r, 2 * r)))
    np.testing.assert_allclose(both[:, 1], 2 * single, rtol=1e-13, atol=1e-13)


@pytest.mark.parametrize("shape", [(7, 3), (3, 7)])
def test_products_by_blocks_of_rows_of_a_rectangular_factor(monkeypatch, shape):
    """The preconditioner multiplies its ``n x m`` and ``m x n`` factors the same
    way: every row of the product is written, whatever the columns."""
    from kerndwd.engine import kernel_cg

    rng = np.random.default_rng(32)
    A = rng.standard_normal(shape)
    P = rng.standard_normal((shape[1], 2))
    monkeypatch.setattr(kernel_cg, "PRODUCT_BLOCK_BYTES", 2 * 8 * shape[1])
    out = kernel_cg.times(A, P, np.full((shape[0], 2), np.nan))
    np.testing.assert_allclose(out, A @ P, rtol=1e-14, atol=1e-14)


def test_a_float32_product_rounds_the_columns_first():
    """A float32 ``K`` multiplies the columns rounded to float32, in float32:
    ``1 + (2^-24 + 2^-50)`` is ``1`` there (the second term rounds to
    ``2^-24``, and the sum ties to even), where a double sum rounded after
    would give ``1 + 2^-23``."""
    from kerndwd.engine import kernel_cg

    K = np.ones((1, 2), dtype=np.float32)
    P = np.array([[1.0], [2.0 ** -24 + 2.0 ** -50]])
    out = kernel_cg.times(K, P, np.empty((1, 1)))
    assert out[0, 0] == 1.0
    np.testing.assert_array_equal(out, (K @ P.astype(np.float32)).astype(np.float64))


# --------------------------------------------------------------------------
# the kernel matrix held in float32 alone (precision="single")
# --------------------------------------------------------------------------
@pytest.mark.parametrize("block", [1, 3, 10 ** 6])
def test_unrounded_products_of_a_float32_matrix_are_its_double_products(monkeypatch, block):
    """``times(..., rounded=False)`` multiplies ``K``'s float32 values by the
    float64 columns unrounded (``double_product``): the float64 product of the
    widened matrix, where the rounded product is off by float32's rounding."""
    from kerndwd.engine import forms, kernel_cg

    rng = np.random.default_rng(33)
    K = rng.standard_normal((9, 9)).astype(np.float32)
    P = rng.standard_normal((9, 2))
    monkeypatch.setattr(forms, "_WIDEN_BLOCK_BYTES", block * 8 * 9)
    out = np.full((9, 2), np.nan)
    assert kernel_cg.times(K, P, out, rounded=False) is out
    expected = K.astype(np.float64) @ P
    np.testing.assert_allclose(out, expected, rtol=1e-13, atol=1e-14)
    rounded = kernel_cg.times(K, P, np.empty((9, 2)))
    assert np.abs(rounded - expected).max() > 1e-9  # the columns were rounded there
    K64 = K.astype(np.float64)  # a float64 K ignores the flag
    np.testing.assert_array_equal(kernel_cg.times(K64, P, np.empty((9, 2)), rounded=False),
                                  kernel_cg.times(K64, P, np.empty((9, 2))))


def test_block_cg_unrounded_on_a_float32_matrix_solves_it_as_double():
    """Block CG with ``rounded=False`` on a float32 ``K`` is block CG on its
    widened values: same solution, same products, same iterations."""
    K, alpha, r, d, lam = _newton_case()
    K32 = K.astype(np.float32)
    K64 = K32.astype(np.float64)
    l = 2.0 * lam / d
    B = np.column_stack((-r / d, np.ones_like(r)))
    out = []
    for A, rounded in [(K32, False), (K64, True)]:
        P = NystromPreconditioner(A, pivoted_landmarks(K64, 8))
        P.set_diagonal(l)
        out.append(block_pcg(A, l, P, B, 1e-10, weights=d, rounded=rounded))
    (X, KX, its), (X64, KX64, its64) = out
    assert its == its64 > 1
    np.testing.assert_allclose(X, X64, rtol=1e-9, atol=1e-9 * np.abs(X64).max())
    np.testing.assert_allclose(KX, K64 @ X, rtol=1e-9, atol=1e-9 * np.abs(KX).max())


def test_the_preconditioner_of_a_float32_matrix_keeps_its_factors_in_float32():
    """On a float32 ``K`` the preconditioner keeps ``C`` and ``C'`` in float32 (two
    thirds of its memory), ``W`` and the scaled rows in float64, and applies
    the same operator as on the widened matrix."""
    X, y, K = _kernel(40)
    K32 = K.astype(np.float32)
    S = pivoted_landmarks(K, 9)
    single, double = NystromPreconditioner(K32, S), NystromPreconditioner(K32.astype(np.float64), S)
    assert single.Ct.dtype == single.C.dtype == np.float32 and single.W.dtype == np.float64
    np.testing.assert_array_equal(single.W, double.W)
    rng = np.random.default_rng(34)
    diag = rng.uniform(0.01, 1.0, 40)
    single.set_diagonal(diag)
    double.set_diagonal(diag)
    assert single._scaled.dtype == np.float64
    R = rng.standard_normal((40, 2))
    np.testing.assert_allclose(single(R), double(R), rtol=1e-12, atol=1e-12)


def test_a_float32_matrix_at_the_cap_is_solved_again_unrounded(monkeypatch):
    """Held in float32, ``K`` is its own ``products``: conjugate gradients run
    rounded first, and a system at the cap runs again on the same matrix
    unrounded; the change of ``f`` is always the unrounded product."""
    from kerndwd.engine import kernel_cg

    K, alpha, r, d, lam = _newton_case()
    K32 = K.astype(np.float32)
    P = NystromPreconditioner(K32, pivoted_landmarks(K, 8))
    real = kernel_cg.block_pcg
    calls = []

    def capped(A, *a, **k):
        rounded = k.get("rounded", True)
        calls.append((A is K32, rounded))
        out = real(A, *a, **k)
        return (out[0] * 0.5, out[1], kernel_cg.CG_MAXITER) if rounded else out

    monkeypatch.setattr(kernel_cg, "block_pcg", capped)
    step, df, its = bordered_solve(K32, d, lam, r, alpha, P, 1e-3, products=K32)
    assert calls == [(True, True), (True, False)]
    calls.clear()
    exact, exact_df, exact_its = bordered_solve(K32, d, lam, r, alpha, P, 1e-3)  # unrounded from the start
    assert calls == [(True, False)] and its == kernel_cg.CG_MAXITER + exact_its
    np.testing.assert_allclose(step, exact, rtol=0, atol=1e-14 * np.abs(exact).max())
    np.testing.assert_allclose(df, exact_df, rtol=0, atol=1e-12 * np.abs(exact_df).max())
    monkeypatch.setattr(kernel_cg, "block_pcg", real)
    step, df, _ = bordered_solve(K32, d, lam, r, alpha, P, 1e-3, products=K32)
    np.testing.assert_allclose(df, step[0] + K32.astype(np.float64) @ step[1:], rtol=1e-13, atol=1e-13)


def test_the_newton_system_of_a_float32_matrix_takes_its_double_products():
    """Decision values, gradient and penalty of a float32 ``K`` are the float64
    products of its values, never rounded through float32; its scale and
    diagonal are float64."""
    from kerndwd.engine.forms import KernelForm
    from kerndwd.engine.kernel_cg import KernelMatrixNewton

    K, alpha, r, d, lam = _newton_case()
    K32 = K.astype(np.float32)
    K64 = K32.astype(np.float64)
    P = NystromPreconditioner(K32, pivoted_landmarks(K, 8))
    single = KernelMatrixNewton(KernelForm(K32), None, 4.0, P, products=K32)
    double = KernelMatrixNewton(KernelForm(K64), None, 4.0, P)
    x = np.concatenate(([0.3], alpha))
    step = np.random.default_rng(35).standard_normal(x.size)
    np.testing.assert_allclose(single.decision(x), 0.3 + K64 @ alpha, rtol=1e-13)
    np.testing.assert_allclose(single.data_gradient(r), np.concatenate(([r.sum()], K64 @ r)), rtol=1e-13)
    assert single.penalty(x) == pytest.approx(alpha @ K64 @ alpha, rel=1e-12)
    np.testing.assert_allclose(single.penalty_direction(x), K64 @ alpha, rtol=1e-13)
    np.testing.assert_allclose(single.cross_penalty(x, step), double.cross_penalty(x, step), rtol=1e-12)
    assert single.pen.dtype == single.scale.dtype == np.float64
    np.testing.assert_allclose(single.scale, double.scale, rtol=1e-12)
    np.testing.assert_array_equal(single.pen, double.pen)


def test_block_cg_rounds_its_products_unless_told_not_to(monkeypatch):
    """Block CG takes single-precision products of a float32 matrix by default
    (the Newton directions' copy) and double ones when ``rounded=False``."""
    from kerndwd.engine import kernel_cg

    K, alpha, r, d, lam = _newton_case()
    K32 = K.astype(np.float32)
    l = 2.0 * lam / d
    P = NystromPreconditioner(K, pivoted_landmarks(K, 8))
    P.set_diagonal(l)
    flags = []
    real = kernel_cg.times
    monkeypatch.setattr(kernel_cg, "times",
                        lambda *a, **k: (a[0] is K32 and flags.append(k.get("rounded"))) or real(*a, **k))
    B = np.column_stack((-r / d, np.ones_like(r)))
    block_pcg(K32, l, P, B, 1e-3, weights=d)
    assert flags and set(flags) == {True}
    flags.clear()
    block_pcg(K32, l, P, B, 1e-3, weights=d, rounded=False)
    assert flags and set(flags) == {False}
