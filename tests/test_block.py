"""Folds, classes and the refit as the columns of one Newton-CG solve (kerndwd/engine/block.py).

Every column must be its own fit's optimum: the held-out decision values of
a fold's column equal those of the fold's path fitted alone, on R's fixture
data, with weights (zeros included), duplicated rows and several classes.
"""

import warnings
from unittest import mock

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

import kerndwd
from kerndwd.engine import FactorCache, Problem
from kerndwd.engine import crossval as core
from kerndwd.engine.block import BLOCK_STALLED, BlockColumns, block_newton_path
from kerndwd.engine.kernel_cg import default_rank, pivoted_landmarks
from kerndwd.kernels import kernel_from_spec
from reference.fixtures import load_fixture

#: The decision values of a column against its fit alone, relative to their largest,
#: both solved to ||grad F|| <= TIGHT.
TIGHT = 1e-10
AGREE = 1e-6


def relerr(a, b):
    return float(np.abs(a - b).max() / max(np.abs(b).max(), 1e-300))


def alone_heldout(X, y, lambdas, kern, foldid, q=1.0, wt=None):
    """Held-out decision values of each fold fitted alone (cg design, gradient rule)."""
    out = np.full((y.size, len(lambdas)), np.nan)
    for k in np.unique(foldid):
        train, test = foldid != k, foldid == k
        path = kerndwd.fit(X[train], y[train], lambdas, kern=kern, qval=q, stop="kkt", eps=TIGHT, solver="cg",
                           wt=None if wt is None else wt[train])
        assert path.jerr == 0
        out[test] = path.predict(X[test], type="link")
    return out


def block_heldout(X, y, lambdas, kern, foldid, q=1.0, wt=None, targets=None):
    problem = Problem.from_arrays(X, y, lambdas, q=q, weights=wt, kern=kern, stop="kkt", eps=TIGHT,
                                  method="newton", design=kerndwd.engine.make_design("cg", {}))
    assert core.takes_block(problem)
    targets = [y] if targets is None else targets
    return core.heldout_decisions(problem, FactorCache(X, kern), foldid, [q], targets, refit_eps=TIGHT,
                                  block=True)


def test_fold_columns_on_an_r_fixture_equal_the_folds_fitted_alone():
    d = load_fixture("weighted_rbf_q1")  # 70 rows, weights 1 and 3
    X, y, wt = np.asarray(d["x"]), np.asarray(d["y"], dtype=float), np.asarray(d["wt"], dtype=float)
    kern = kernel_from_spec(d["kernel"])
    lambdas = np.asarray(d["lambda"])[:7]
    foldid = np.random.default_rng(3).permutation(np.resize(np.arange(1, 4), y.size))
    predmat, jerr, refits = block_heldout(X, y, lambdas, kern, foldid, wt=wt)
    assert (jerr == 0).all()
    assert relerr(predmat[0, 0], alone_heldout(X, y, lambdas, kern, foldid, wt=wt)) < AGREE
    # the refit column is the path on all rows
    path = kerndwd.fit(X, y, lambdas, kern=kern, wt=wt, stop="kkt", eps=TIGHT, solver="cg")
    alpha = refits.alpha[0, 0]
    assert relerr(alpha[0] + kern(X) @ alpha[1:], path.predict(X, type="link")) < AGREE
    assert (refits.kkt[0, 0] <= TIGHT).all()


def test_one_vs_rest_classes_are_columns_of_the_same_solve():
    rng = np.random.default_rng(5)
    X = rng.standard_normal((90, 2))
    labels = np.digitize(np.arctan2(X[:, 1], X[:, 0]), [-1.0, 1.0])
    targets = [np.where(labels == c, 1.0, -1.0) for c in range(3)]
    kern = kerndwd.rbfdot(0.8)
    lambdas = np.array([0.1, 0.01, 0.001])
    foldid = np.random.default_rng(0).permutation(np.resize(np.arange(1, 4), 90))
    predmat, jerr, _ = block_heldout(X, targets[0], lambdas, kern, foldid, targets=targets)
    assert predmat.shape == (1, 3, 90, 3) and (jerr == 0).all()
    for it, t in enumerate(targets):
        assert relerr(predmat[0, it], alone_heldout(X, t, lambdas, kern, foldid)) < AGREE


@settings(max_examples=12)
@given(seed=st.integers(0, 2 ** 16), n=st.integers(24, 60), q=st.sampled_from([0.5, 1.0, 4.0]),
       zeros=st.integers(0, 5), duplicates=st.integers(0, 5))
def test_block_columns_equal_their_fits_alone_with_zero_weights_and_duplicated_rows(seed, n, q, zeros,
                                                                                 duplicates):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, 2))
    X[:duplicates] = X[n - duplicates:] if duplicates else X[:0]
    y = np.where(X[:, 0] + 0.7 * rng.standard_normal(n) > 0, 1.0, -1.0)
    y[:2] = [1.0, -1.0]
    y[-2:] = [1.0, -1.0]
    wt = rng.uniform(0.5, 2.0, n)
    wt[rng.choice(np.arange(2, n - 2), zeros, replace=False)] = 0.0
    foldid = np.resize(np.arange(1, 4), n)
    for k in range(1, 4):  # each training part keeps both classes with positive weight
        assume({1.0, -1.0} <= set(y[(foldid != k) & (wt > 0)]))
    kern = kerndwd.rbfdot(0.5)
    lambdas = np.array([0.3, 0.03, 0.003])
    predmat, jerr, _ = block_heldout(X, y, lambdas, kern, foldid, q=q, wt=wt)
    assert (jerr == 0).all()
    assert relerr(predmat[0, 0], alone_heldout(X, y, lambdas, kern, foldid, q=q, wt=wt)) < AGREE


def test_columns_leave_the_block_when_they_converge_and_report_their_own_stop():
    rng = np.random.default_rng(1)
    n = 80
    X = rng.standard_normal((n, 2))
    y = np.where((X ** 2).sum(axis=1) > 1.4, 1.0, -1.0)
    K = kerndwd.rbfdot(1.0)(X)
    rows = np.ones((n, 2), dtype=bool)
    rows[:20, 0] = False
    columns = BlockColumns(rows, np.column_stack([y, y]), np.ones((n, 2)), np.array([1e-3, 1e-10]))
    res = block_newton_path(K, columns, np.array([0.1, 0.01]), 1.0, 1000, pivoted_landmarks(K, default_rank(n)))
    assert res.status == ["converged", "converged"]
    assert (res.kkt[0] <= 1e-3).all() and (res.kkt[1] <= 1e-10).all()
    assert res.npass[0].sum() < res.npass[1].sum()  # the loose column stopped first
    assert (res.alpha[1:21, 0] == 0).all()  # rows that are not the column's keep zero coefficients
    # the held-out decision values are b0 + K alpha on those rows
    np.testing.assert_allclose(res.decisions[:20, 0, -1], res.alpha[0, 0, -1] + K[:20] @ res.alpha[1:, 0, -1])
    # a column out of budget stops and says so; the path budget counts Newton iterations
    short = block_newton_path(K, columns, np.array([0.1, 0.01]), 1.0, 3, pivoted_landmarks(K, default_rank(n)))
    assert short.status == ["budget", "budget"]
    for j, stop in enumerate(short.stopped_at):
        assert np.isnan(short.decisions[:, j, stop:]).all() and np.isfinite(short.decisions[:, j, :stop]).all()


def test_a_stalled_column_is_fitted_again_alone_and_the_others_are_kept():
    rng = np.random.default_rng(2)
    X = rng.standard_normal((60, 2))
    y = np.where(X[:, 0] > 0, 1.0, -1.0)
    kern = kerndwd.rbfdot(1.0)
    lambdas = np.array([0.1, 0.01])
    foldid = np.resize(np.arange(1, 4), 60)
    real = block_newton_path

    def stall_first(*args, **kwargs):
        res = real(*args, **kwargs)
        res.status[0] = BLOCK_STALLED
        res.decisions[:, 0] = 123.0  # never read: the column is fitted again alone
        return res

    with mock.patch.object(core, "block_newton_path", stall_first), \
            mock.patch.object(core, "_fit_fold", wraps=core._fit_fold) as alone:
        predmat, jerr, _ = block_heldout(X, y, lambdas, kern, foldid)
    assert alone.call_count == 1 and (jerr == 0).all()
    assert relerr(predmat[0, 0], alone_heldout(X, y, lambdas, kern, foldid)) < AGREE


def test_the_block_route_is_taken_by_default_from_six_columns():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((60, 2))
    y = np.where(X[:, 0] > 0, 1.0, -1.0)
    kern = kerndwd.rbfdot(1.0)
    problem = Problem.from_arrays(X, y, [0.1, 0.01], kern=kern, stop="kkt", method="newton",
                                  design=kerndwd.engine.make_design("cg", {}))
    for nfolds, refit, block in ((3, None, False), (3, 1e-5, False), (5, 1e-5, True), (6, None, True)):
        foldid = np.resize(np.arange(1, nfolds + 1), 60)
        with mock.patch.object(core, "block_newton_path", wraps=block_newton_path) as solve:
            core.heldout_decisions(problem, FactorCache(X, kern), foldid, [1.0], [y], refit_eps=refit)
        assert solve.called == block


def test_the_block_route_is_taken_under_the_gradient_rule_with_a_nonlinear_kernel_only():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((30, 2))
    y = np.where(X[:, 0] > 0, 1.0, -1.0)
    cg = kerndwd.engine.make_design("cg", {})
    kkt = dict(stop="kkt", method="newton")
    assert core.takes_block(Problem.from_arrays(X, y, [0.1], kern=kerndwd.rbfdot(1.0), design=cg, **kkt))
    assert not core.takes_block(Problem.from_arrays(X, y, [0.1], kern=kerndwd.rbfdot(1.0), design=cg))  # R's rule
    assert not core.takes_block(Problem.from_arrays(X, y, [0.1], kern=kerndwd.vanilladot(), **kkt))
    assert not core.takes_block(Problem.from_arrays(X, y, [0.1], kern=kerndwd.rbfdot(1.0), design=cg,
                                                    stop="kkt", method="mm"))


def test_classifier_cv_refit_starts_from_its_column_and_is_the_fit_from_zero():
    pytest.importorskip("sklearn")
    from kerndwd import DWDClassifier, DWDClassifierCV

    rng = np.random.default_rng(4)
    X = rng.standard_normal((240, 2))
    y = np.digitize(np.arctan2(X[:, 1], X[:, 0]), [-1.0, 1.0])
    lambdas = [1e-2, 1e-3, 1e-4]
    with mock.patch.object(core, "_fit_fold", side_effect=AssertionError("a fold fitted alone")):
        est = DWDClassifierCV(lambdas=lambdas, kernel="rbf", cv=3, random_state=0).fit(X, y)
    cold = DWDClassifier(lambd=est.lambda_, kernel="rbf").fit(X, y)
    assert relerr(est.decision_function(X), cold.decision_function(X)) < AGREE
    assert (est.best_estimator_.path_.n_iter < cold.path_.n_iter).all()  # warm: fewer Newton iterations


def test_a_warm_start_at_the_optimum_takes_no_step():
    rng = np.random.default_rng(6)
    X = rng.standard_normal((250, 2))
    y = np.where((X ** 2).sum(axis=1) > 1.4, 1.0, -1.0)
    kern = kerndwd.rbfdot(1.0)
    problem = Problem.from_arrays(X, y, [0.01], kern=kern, stop="kkt", eps=1e-8, method="newton",
                                  design=kerndwd.engine.make_design("cg", {}))
    majoriser = kerndwd.engine.build_majoriser(problem, FactorCache(X, kern))
    cold = kerndwd.engine.run_path(majoriser, problem)
    warm = kerndwd.engine.run_path(majoriser, problem, start=cold.alpha[:, 0])
    assert cold.npass[0] > 3 and warm.npass[0] == 0
    np.testing.assert_array_equal(warm.alpha, cold.alpha)


GRID_WORDS = ("the chosen lambda {lam} is the {end} of the grid: the optimum may lie beyond it; "
              "extend lambdas to {way} values")


def test_a_chosen_lambda_at_the_end_of_the_grid_is_said_by_every_face():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((60, 2))
    y = np.where(X[:, 0] > 0, 1, -1)
    words = GRID_WORDS.format(lam="1000", end="largest", way="larger")
    with pytest.warns(kerndwd.DWDGridWarning) as caught:
        res = kerndwd.cv(X, y, [1e3, 1e2], kern=kerndwd.vanilladot(), random_state=0)
    assert [str(w.message) for w in caught] == [f"lambda_min: {words}"]
    assert repr(res).endswith(f"\n  lambda_min: {words}")
    with pytest.warns(kerndwd.DWDGridWarning, match="^lam_tune: the chosen lambda 1000 is the largest"):
        kerndwd.tune(X, y, [1e3, 1e2], kern=kerndwd.vanilladot(), random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("error", kerndwd.DWDGridWarning)
        inside = kerndwd.cv(X, y, 10.0 ** np.linspace(1, -3, 9), kern=kerndwd.vanilladot(), random_state=0)
    assert 0 < inside.index_min < 8 and "grid" not in repr(inside)
    pytest.importorskip("sklearn")
    from kerndwd import DWDClassifierCV

    with pytest.warns(kerndwd.DWDGridWarning) as caught:
        DWDClassifierCV(lambdas=[1e3, 1e2], cv=3, random_state=0).fit(X, y)
    assert [str(w.message) for w in caught] == [f"lambda_: {words}"]


def test_the_default_grid_is_svc_s_c_from_a_hundredth_to_a_thousand():
    from kerndwd.estimator_cv import DEFAULT_CV_C, default_cv_lambdas

    lam = default_cv_lambdas(1347)
    np.testing.assert_allclose(1.0 / (2 * 1347 * lam), DEFAULT_CV_C[::-1] if lam[0] < lam[-1] else DEFAULT_CV_C)
    assert (np.diff(lam) < 0).all() and lam.size == 11
