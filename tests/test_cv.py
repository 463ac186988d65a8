"""cv() and tune() against R's cv.kerndwd and tunedwd (fixtures recorded from
kerndwd 2.0.3, see reference/fixtures/kerndwd-r-2.0.3/README.md), and their
fold, error and tie rules (docs/r-behaviour.md)."""

import sys

import numpy as np
import pytest

import kerndwd
from kerndwd.engine import GAM_TUNE, Problem
from kerndwd.engine.crossval import select_lambda
from kerndwd.kernels import kernel_from_spec
from kerndwd.path import fit_problem
from reference.fixtures import load_fixture

CV_CASES = ["cv_linear", "cv_rbf"]
TUNE_CASES = ["tunedwd_linear", "tunedwd_rbf"]


def col_relerr(a, b):
    scale = np.maximum(np.abs(b).max(axis=0), np.finfo(float).tiny)
    return float((np.abs(a - b).max(axis=0) / scale).max())


def small_data(n=40, p=2, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, p))
    y = np.where(X[:, 0] + 0.7 * rng.standard_normal(n) > 0, 1, -1)
    return X, y


LAMS = 10.0 ** np.linspace(0, -3, 6)


# --------------------------------------------------------------------------
# R fixtures
# --------------------------------------------------------------------------
@pytest.mark.parametrize("case", CV_CASES)
def test_cv_matches_r(case):
    d = load_fixture(case)
    res = kerndwd.cv(d["x"], d["y"], d["lambda_input"], kern=kernel_from_spec(d["kernel"]),
                     foldid=d["foldid"], qval=d["qval"], eps=d["eps"], maxit=int(d["maxit"]))
    np.testing.assert_array_equal(res.lambda_, d["lambda"])
    np.testing.assert_allclose(res.cvm, d["cvm"], rtol=0, atol=1e-12)
    np.testing.assert_allclose(res.cvsd, d["cvsd"], rtol=0, atol=1e-12)
    np.testing.assert_allclose(res.cvupper, d["cvupper"], rtol=0, atol=1e-12)
    np.testing.assert_allclose(res.cvlower, d["cvlower"], rtol=0, atol=1e-12)
    assert res.lambda_min == d["lambda.min"]
    assert res.lambda_1se == d["lambda.1se"]
    assert res.cvm_min == pytest.approx(d["cvm.min"], abs=1e-12)
    assert res.cvm_1se == pytest.approx(d["cvm.1se"], abs=1e-12)
    # R's dotted names
    assert res["lambda.min"] == res.lambda_min and res["lambda.1se"] == res.lambda_1se
    assert res["lambda"] is res.lambda_ and res["cvm"] is res.cvm and res["cvm.1se"] == res.cvm_1se
    assert set(res.keys()) >= {"lambda", "cvm", "cvsd", "cvupper", "cvlower", "lambda.min", "lambda.1se"}
    with pytest.raises(KeyError, match="no component"):
        res["lambda_min"]
    assert res.nfolds == int(d["nfolds"])
    np.testing.assert_array_equal(res.foldid, d["foldid"].astype(int))
    assert (res.fold_jerr == 0).all()


@pytest.mark.parametrize("case", TUNE_CASES)
def test_tune_matches_r(case):
    d = load_fixture(case)
    res = kerndwd.tune(d["x"], d["y"], d["lambda_input"], qvals=d["qvals"], kern=kernel_from_spec(d["kernel"]),
                       foldid=d["foldid"], eps=d["eps"], maxit=int(d["maxit"]))
    assert res.lam_tune == d["lam.tune"] and res["lam.tune"] == d["lam.tune"]
    assert res.q_tune == d["q.tune"] and res["q.tune"] == d["q.tune"]
    assert len(res.cvres) == len(d["cvres"]) == len(res["cvres"])
    for ours, r in zip(res.cvres, d["cvres"]):
        assert ours.qval == r["qval"] and ours["qval"] == r["qval"]
        np.testing.assert_array_equal(ours.lambda_, r["lambda"])
        np.testing.assert_allclose(ours.cvm, r["cvm"], rtol=0, atol=1e-12)
        np.testing.assert_allclose(ours.cvsd, r["cvsd"], rtol=0, atol=1e-12)
        assert ours["lambda.min"] == r["lambda.min"]
        assert ours["lambda.1se"] == r["lambda.1se"]
        assert ours["cvm.min"] == pytest.approx(r["cvm.min"], abs=1e-12)
        assert ours["cvm.1se"] == pytest.approx(r["cvm.1se"], abs=1e-12)
        # held-out decision values, per lambda column
        assert ours["predmat"].shape == r["predmat"].shape
        assert col_relerr(ours["predmat"], r["predmat"]) <= 1e-8
    assert res.fit_args["qval"] == res.q_tune


def test_tune_tie_goes_to_last_q():
    """tunedwd_linear: q = 1 and q = 4 tie on cvm at lambda.1se; R picks the later one."""
    d = load_fixture("tunedwd_linear")
    res = kerndwd.tune(d["x"], d["y"], d["lambda_input"], qvals=d["qvals"], kern=kerndwd.vanilladot(),
                       foldid=d["foldid"])
    assert res.cvm_1se[1] == res.cvm_1se[2] == res.cvm_1se.min()
    assert res.q_tune == 4.0 and res.index_tune == 2
    # the same q values in another order: the tie now goes to q = 1
    rev = kerndwd.tune(d["x"], d["y"], d["lambda_input"], qvals=[4.0, 1.0], kern=kerndwd.vanilladot(),
                       foldid=d["foldid"])
    assert rev.q_tune == 1.0


def test_select_rules_on_known_curve():
    cvm = np.array([0.4, 0.14, 0.1, 0.1, 0.15, 0.1])
    cvsd = np.array([0.01, 0.01, 0.05, 0.01, 0.01, 0.01])
    i_min, i_1se = select_lambda(cvm, cvsd)
    assert i_min == 2  # largest lambda among the three minima
    assert i_1se == 1  # largest lambda with cvm <= 0.1 + 0.05
    # NaN (no fold reached the lambda) is ignored
    i_min, i_1se = select_lambda(np.array([0.3, 0.2, np.nan]), np.array([0.1, 0.01, np.nan]))
    assert (i_min, i_1se) == (1, 1)


# --------------------------------------------------------------------------
# solver rules and engine reuse
# --------------------------------------------------------------------------
def test_solver_rule_cv_vs_tune_at_n_train_equal_p(r_rule_fit):
    """n_train == p: cv (kerndwd's rule, n >= p) fits the linear solver; tune
    (tunedwd's rule, n > p, ridge 1e-6) the kernel solver.  Each fold's held-out
    links equal those of a direct fit on the training rows."""
    rng = np.random.default_rng(3)
    n, p = 15, 12
    X = rng.standard_normal((n, p))
    y = np.where(X[:, 0] + 0.5 * rng.standard_normal(n) > 0, 1.0, -1.0)
    foldid = np.resize(np.arange(1, 6), n)  # 5 folds of 3: n_train = 12 = p
    lam = 10.0 ** np.linspace(0, -2, 4)
    kern = kerndwd.vanilladot()
    res_cv = kerndwd.cv(X, y, lam, kern=kern, foldid=foldid)
    res_tune = kerndwd.tune(X, y, lam, qvals=[1.0], kern=kern, foldid=foldid)
    for k in range(1, 6):
        test, train = foldid == k, foldid != k
        direct = r_rule_fit(X[train], y[train], lam, kern=kern)
        assert direct.solver == "ldwd"
        np.testing.assert_allclose(res_cv.predmat[test], direct.predict(X[test], type="link"), rtol=1e-10,
                                   atol=1e-12)
        strict = r_rule_fit(Problem.from_arrays(X[train], y[train], lam, gam=GAM_TUNE, linear_rule="tunedwd"),
                            via=fit_problem)
        assert strict.solver == "kdwd"
        np.testing.assert_allclose(res_tune.cvres[0].predmat[test], strict.predict(X[test], type="link"),
                                   rtol=1e-10, atol=1e-12)


def test_kernel_folds_slice_one_kernel_matrix(monkeypatch):
    """For a kernel fit the kernel matrix of X is formed once; held-out links
    from its slices equal a direct fit and predict on each fold."""
    X, y = small_data(n=30)
    kern = kerndwd.rbfdot(sigma=0.7)
    calls = []
    original = type(kern).__call__

    def counting(self, x, y=None):
        calls.append((np.shape(x), None if y is None else np.shape(y)))
        return original(self, x, y)

    monkeypatch.setattr(type(kern), "__call__", counting)
    res = kerndwd.cv(X, y, LAMS, kern=kern, nfolds=3, random_state=1)
    assert calls == [((30, 2), None)]
    monkeypatch.undo()
    for k in range(1, 4):
        test, train = res.foldid == k, res.foldid != k
        direct = kerndwd.fit(X[train], y[train], LAMS, kern=kern)
        np.testing.assert_allclose(res.predmat[test], direct.predict(X[test], type="link"), rtol=1e-9,
                                   atol=1e-12)


def test_weighted_cv_matches_weighted_fold_fits(r_rule_fit):
    X, y = small_data(n=30, seed=5)
    wt = np.linspace(0.5, 2.0, 30)
    res = kerndwd.cv(X, y, LAMS, kern=kerndwd.vanilladot(), wt=wt, nfolds=3, random_state=2)
    assert res.fit_args["wt"] is not None
    for k in range(1, 4):
        test, train = res.foldid == k, res.foldid != k
        direct = r_rule_fit(X[train], y[train], LAMS, kern=kerndwd.vanilladot(), wt=wt[train])
        assert direct.solver == "wldwd"
        np.testing.assert_allclose(res.predmat[test], direct.predict(X[test], type="link"), rtol=1e-10,
                                   atol=1e-12)


# --------------------------------------------------------------------------
# error measure: both branches
# --------------------------------------------------------------------------
def _misclassified(res, y):
    return (np.where(res.predmat > 0, 1, -1) != y[:, None]).astype(float)


def test_fold_mean_branch_formula():
    X, y = small_data(n=40)
    res = kerndwd.cv(X, y, LAMS, kern=kerndwd.vanilladot(), nfolds=4, random_state=0)
    err = _misclassified(res, y)
    fold_means = np.array([err[res.foldid == k].mean(axis=0) for k in range(1, 5)])
    np.testing.assert_allclose(res.cvm, fold_means.mean(axis=0), rtol=0, atol=1e-15)
    sd = np.sqrt(((fold_means - fold_means.mean(axis=0)) ** 2).mean(axis=0) / 3)
    np.testing.assert_allclose(res.cvsd, sd, rtol=0, atol=1e-15)


def test_raw_error_branch_when_folds_are_small():
    """n / nfolds < 3: the raw 0/1 errors, N = number of predictions."""
    X, y = small_data(n=20, seed=1)
    res = kerndwd.cv(X, y, LAMS, kern=kerndwd.vanilladot(), nfolds=10, random_state=0)
    err = _misclassified(res, y)
    np.testing.assert_allclose(res.cvm, err.mean(axis=0), rtol=0, atol=1e-15)
    np.testing.assert_allclose(res.cvsd, np.sqrt(err.var(axis=0) / 19), rtol=0, atol=1e-15)
    assert np.bincount(res.foldid).tolist() == [0] + [2] * 10


def test_non_converged_fold_is_left_out():
    """A fold whose path runs out of maxit contributes nothing at the lambdas it
    did not reach (NaN predictions), and cv still returns a result."""
    X, y = small_data(n=45, seed=2)
    lam = 10.0 ** np.linspace(0, -4, 8)
    full = kerndwd.cv(X, y, lam, kern=kerndwd.rbfdot(sigma=1.0), nfolds=3, random_state=0)
    budget = 60
    with pytest.warns(kerndwd.DWDConvergenceWarning, match="left out of cvm"):
        res = kerndwd.cv(X, y, lam, kern=kerndwd.rbfdot(sigma=1.0), nfolds=3, random_state=0, maxit=budget)
    assert (res.fold_jerr < 0).any()
    missing = np.isnan(res.predmat)
    assert missing.any() and not missing.all()
    err = _misclassified(res, y)
    for j in range(lam.size):
        means = [err[res.foldid == k, j].mean() for k in range(1, 4) if not missing[res.foldid == k, j].any()]
        if means:
            assert res.cvm[j] == pytest.approx(np.mean(means), abs=1e-15)
        else:
            assert np.isnan(res.cvm[j])
        if len(means) < 2:
            assert np.isnan(res.cvsd[j])
    # columns every fold reached are the same as without the budget
    complete = ~missing.any(axis=0)
    np.testing.assert_array_equal(res.cvm[complete], full.cvm[complete])
    assert np.isfinite(res.lambda_min) and not np.isnan(res.cvm[res.index_min])


def test_no_fold_finishing_is_an_error():
    X, y = small_data(n=30)
    with pytest.warns(kerndwd.DWDConvergenceWarning), pytest.raises(RuntimeError, match="increase maxit"):
        kerndwd.cv(X, y, LAMS, kern=kerndwd.rbfdot(1.0), nfolds=3, random_state=0, maxit=1)


# --------------------------------------------------------------------------
# folds, reproducibility, parallelism
# --------------------------------------------------------------------------
def test_random_state_reproduces_folds_and_numbers():
    X, y = small_data(n=37)
    a = kerndwd.cv(X, y, LAMS, kern=kerndwd.vanilladot(), nfolds=4, random_state=11)
    b = kerndwd.cv(X, y, LAMS, kern=kerndwd.vanilladot(), nfolds=4, random_state=11)
    c = kerndwd.cv(X, y, LAMS, kern=kerndwd.vanilladot(), nfolds=4, random_state=12)
    np.testing.assert_array_equal(a.foldid, b.foldid)
    np.testing.assert_array_equal(a.cvm, b.cvm)
    np.testing.assert_array_equal(a.cvsd, b.cvsd)
    assert a.lambda_min == b.lambda_min and a.lambda_1se == b.lambda_1se
    assert not np.array_equal(a.foldid, c.foldid)
    # R's fold sizes: a permutation of rep(1:nfolds, length = n)
    np.testing.assert_array_equal(np.sort(a.foldid), np.sort(np.resize(np.arange(1, 5), 37)))
    # a Generator works too and the default kernel is drawn from it reproducibly
    d1 = kerndwd.cv(X, y, LAMS, nfolds=3, random_state=np.random.default_rng(5))
    d2 = kerndwd.cv(X, y, LAMS, nfolds=3, random_state=np.random.default_rng(5))
    assert d1.fit_args["kern"].params() == d2.fit_args["kern"].params()
    np.testing.assert_array_equal(d1.cvm, d2.cvm)


def test_n_jobs_gives_identical_numbers():
    X, y = small_data(n=36)
    kern = kerndwd.rbfdot(sigma=0.5)
    one = kerndwd.cv(X, y, LAMS, kern=kern, nfolds=3, random_state=4, n_jobs=1)
    two = kerndwd.cv(X, y, LAMS, kern=kern, nfolds=3, random_state=4, n_jobs=2)
    np.testing.assert_array_equal(one.predmat, two.predmat)
    np.testing.assert_array_equal(one.cvm, two.cvm)
    np.testing.assert_array_equal(one.cvsd, two.cvsd)
    t1 = kerndwd.tune(X, y, LAMS, qvals=[0.5, 2.0], kern=kern, foldid=one.foldid, n_jobs=1)
    t2 = kerndwd.tune(X, y, LAMS, qvals=[0.5, 2.0], kern=kern, foldid=one.foldid, n_jobs=2)
    for a, b in zip(t1.cvres, t2.cvres):
        np.testing.assert_array_equal(a.predmat, b.predmat)
    assert (t1.q_tune, t1.lam_tune) == (t2.q_tune, t2.lam_tune)


def test_foldid_wins_over_nfolds_and_random_state():
    X, y = small_data(n=30)
    foldid = np.resize([3, 1, 2], 30)
    a = kerndwd.cv(X, y, LAMS, kern=kerndwd.vanilladot(), nfolds=10, foldid=foldid, random_state=1)
    b = kerndwd.cv(X, y, LAMS, kern=kerndwd.vanilladot(), foldid=list(foldid), random_state=2)
    np.testing.assert_array_equal(a.foldid, foldid)
    assert a.nfolds == 3
    np.testing.assert_array_equal(a.cvm, b.cvm)


def test_inputs_are_not_modified():
    X, y = small_data(n=30)
    foldid = np.resize(np.arange(1, 4), 30).astype(float)
    wt = np.ones(30)
    copies = [X.copy(), y.copy(), foldid.copy(), wt.copy()]
    kerndwd.cv(X, y, LAMS, kern=kerndwd.rbfdot(1.0), foldid=foldid, wt=wt)
    kerndwd.tune(X, y, LAMS, qvals=[1.0, 2.0], kern=kerndwd.vanilladot(), foldid=foldid)
    for before, after in zip(copies, [X, y, foldid, wt]):
        np.testing.assert_array_equal(before, after)


def test_fit_args_refit_on_all_data():
    X, y = small_data(n=30)
    res = kerndwd.cv(X, y, LAMS, kern=kerndwd.vanilladot(), nfolds=3, random_state=0, qval=2.0)
    path = kerndwd.fit(X, y, [res.lambda_1se], **res.fit_args)
    assert path.qval == 2.0 and path.lambda_.tolist() == [res.lambda_1se]


def test_string_labels_and_progress_bar(monkeypatch, capsys):
    monkeypatch.setattr("kerndwd.engine.progress.MIN_INTERVAL", 0.0)  # a quick cv shows nothing otherwise
    X, y = small_data(n=30)
    labels = np.where(y > 0, "yes", "no")
    res = kerndwd.cv(X, labels, LAMS, kern=kerndwd.vanilladot(), nfolds=3, random_state=0, progress=True)
    ref = kerndwd.cv(X, y, LAMS, kern=kerndwd.vanilladot(), nfolds=3, random_state=0)
    np.testing.assert_array_equal(res.cvm, ref.cvm)
    err = capsys.readouterr().err
    assert "cv folds" in err and "3/3" in err


def test_progress_without_tqdm_writes_plain_lines(monkeypatch, capsys):
    X, y = small_data(n=30)
    monkeypatch.setitem(sys.modules, "tqdm.auto", None)
    monkeypatch.setattr("kerndwd.engine.progress.MIN_INTERVAL", 0.0)
    res = kerndwd.cv(X, y, LAMS, kern=kerndwd.vanilladot(), nfolds=3, random_state=0, progress=True)
    ref = kerndwd.cv(X, y, LAMS, kern=kerndwd.vanilladot(), nfolds=3, random_state=0)
    np.testing.assert_array_equal(res.cvm, ref.cvm)
    lines = capsys.readouterr().err.splitlines()
    assert lines[-1].startswith("cv folds: fold 3/3")
    with pytest.raises(TypeError, match="progress must be True or False"):
        kerndwd.cv(X, y, LAMS, kern=kerndwd.vanilladot(), nfolds=3, progress="yes")


def test_missing_optional_dependencies_give_clear_errors(monkeypatch):
    X, y = small_data(n=30)
    monkeypatch.setitem(sys.modules, "joblib", None)
    with pytest.raises(ImportError, match="joblib"):
        kerndwd.cv(X, y, LAMS, kern=kerndwd.vanilladot(), nfolds=3, n_jobs=2)


# --------------------------------------------------------------------------
# bad input
# --------------------------------------------------------------------------
@pytest.mark.parametrize(
    "kwargs, exc, match",
    [
        (dict(nfolds=2), ValueError, "nfolds must be at least 3"),
        (dict(nfolds=31), ValueError, "exceeds the number of observations"),
        (dict(nfolds=3.5), TypeError, "nfolds must be an integer"),
        (dict(foldid=np.resize([1, 2, 3], 29)), ValueError, "one entry per row"),
        (dict(foldid=np.resize([1, 2, 4], 30)), ValueError, r"fold\(s\) \[3\] empty"),
        (dict(foldid=np.resize([0, 1, 2], 30)), ValueError, "1-based"),
        (dict(foldid=np.resize([1.0, 2.5, 3.0], 30)), ValueError, "whole numbers"),
        (dict(foldid=np.resize([1, 2], 30)), ValueError, "at least 3"),
        (dict(foldid=np.resize(["a", "b", "c"], 30)), TypeError, "foldid must hold integers"),
        (dict(n_jobs=0), ValueError, "n_jobs"),
        (dict(stop="never"), ValueError, "stop must be"),
        (dict(qval=0.0), ValueError, "qval"),
        (dict(lambdas=[1.0, -1.0]), ValueError, "lambdas"),
        (dict(wt=np.ones(5)), ValueError, "wt"),
        (dict(kern="rbf"), TypeError, "kern"),
    ],
)
def test_cv_bad_input(kwargs, exc, match):
    X, y = small_data(n=30)
    args = dict(lambdas=LAMS, kern=kerndwd.vanilladot())
    args.update(kwargs)
    with pytest.raises(exc, match=match):
        kerndwd.cv(X, y, **args)


@pytest.mark.parametrize(
    "qvals, exc, match",
    [
        ([1.0, 0.0], ValueError, "qvals must be positive"),
        ([-1.0], ValueError, "qvals must be positive"),
        ([1.0, np.nan], ValueError, "qvals must be positive"),
        ([], ValueError, "non-empty"),
        (["a"], TypeError, "qvals"),
    ],
)
def test_tune_bad_qvals(qvals, exc, match):
    X, y = small_data(n=30)
    with pytest.raises(exc, match=match):
        kerndwd.tune(X, y, LAMS, qvals=qvals, kern=kerndwd.vanilladot(), nfolds=3)


def test_single_class_training_fold_is_an_error():
    X, _ = small_data(n=30)
    y = np.r_[np.ones(10), -np.ones(20)]
    foldid = np.r_[np.ones(10), np.resize([2, 3], 20)]  # fold 1 holds every +1
    with pytest.raises(ValueError, match="only one class"):
        kerndwd.cv(X, y, LAMS, kern=kerndwd.vanilladot(), foldid=foldid)


def test_tune_factorises_each_fold_kernel_once_for_all_q():
    """The eigenbasis of a fold's kernel matrix depends on neither q nor y:
    tune forms it once per fold, not once per (fold, q)."""
    from unittest import mock

    from scipy import linalg

    rng = np.random.default_rng(5)
    X = rng.standard_normal((60, 2))
    y = np.where(X[:, 0] * X[:, 1] + 0.3 * rng.standard_normal(60) > 0, 1, -1)
    lam = [1.0, 0.1, 0.01]
    real_eigh = linalg.eigh
    with mock.patch.object(linalg, "eigh", side_effect=real_eigh) as counted:
        res = kerndwd.tune(X, y, lam, qvals=(0.5, 1, 4), kern=kerndwd.rbfdot(1.0), nfolds=5, random_state=0)
    assert counted.call_count == 5
    # the shared factorisation gives the same folds' numbers as fitting each q alone
    for r in res.cvres:
        alone = kerndwd.tune(X, y, lam, qvals=(r.qval,), kern=kerndwd.rbfdot(1.0), foldid=res.foldid)
        np.testing.assert_array_equal(alone.cvres[0].predmat, r.predmat)


@pytest.mark.parametrize("design", [{}, {"solver": "bcd"}, {"approx": "nystroem"}])
def test_verbose_is_refused_with_a_pointer_to_progress(design):
    """Other libraries' ``verbose`` is no design option of any design: the refusal
    names the argument that reports the progress, on every face."""
    rng = np.random.default_rng(0)
    X = rng.standard_normal((30, 2))
    y = np.where(X[:, 0] > 0, 1, -1)
    message = "unexpected keyword argument verbose: to report the progress of a fit, pass progress=True"
    for face in (kerndwd.cv, kerndwd.fit):
        with pytest.raises(TypeError) as err:
            face(X, y, [1.0], verbose=True, **design)
        assert str(err.value) == message
    with pytest.raises(TypeError) as err:
        kerndwd.DWDClassifier(design_options={"verbose": True}).fit(X, y)
    assert str(err.value) == message
