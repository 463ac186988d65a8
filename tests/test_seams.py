"""The seams between designs, path solvers and faces: each case once crashed or
gave a silent wrong answer on a documented path; each must now give the
reference answer or a refusal that names the argument."""

import warnings

import numpy as np
import pytest
from scipy import sparse

import kerndwd
from kerndwd import rbfdot, splinedot, vanilladot


@pytest.fixture
def data():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((60, 3))
    y = np.where(X[:, 0] + 0.3 * rng.standard_normal(60) > 0, 1, -1)
    return X, y


# ------------------------------------------------------------- R's rule's gap bound on every form
@pytest.mark.parametrize("lambdas", [[1.0, 0.1], [1.0]])
def test_the_gap_bound_of_sparse_rows_is_the_dense_rows_one(data, lambdas):
    X, y = data
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no spurious "far from the optimum" warning either
        got = kerndwd.fit(sparse.csr_matrix(X), y, lambdas, kern=vanilladot())
        want = kerndwd.fit(X, y, lambdas, kern=vanilladot())
    assert got.gap_bound.shape == (len(lambdas),)
    np.testing.assert_allclose(got.gap_bound, want.gap_bound, rtol=1e-6)
    np.testing.assert_allclose(got.objective, want.objective, rtol=1e-9)


@pytest.mark.parametrize("approx", ["nystroem", "rff"])
def test_float32_features_take_the_default_rule_and_r_s_rule(data, approx):
    X, y = data
    for stop in (None, "step"):
        f32 = kerndwd.fit(X, y, [1.0, 0.1], kern=rbfdot(0.5), approx=approx, n_components=20, dtype="float32",
                          random_state=0, stop=stop)
        f64 = kerndwd.fit(X, y, [1.0, 0.1], kern=rbfdot(0.5), approx=approx, n_components=20, random_state=0,
                          stop=stop)
        assert f32.stop == f64.stop == (stop or "kkt")
        np.testing.assert_allclose(f32.objective, f64.objective, rtol=1e-5)
        if stop == "step":
            assert f32.gap_bound.shape == (2,) and np.isfinite(f32.gap_bound).all()


# ------------------------------------------------------------- the designs' own defaults
def test_r_s_rule_is_the_default_only_where_r_fits_the_same_model(data):
    X, y = data
    assert kerndwd.fit(X, y, [0.1], kern=vanilladot()).stop == "step"
    assert kerndwd.fit(X, y, [0.1], kern=rbfdot(0.5)).stop == "step"
    for kw in (dict(approx="nystroem", n_components=20), dict(approx="rff", n_components=20), dict(solver="bcd")):
        path = kerndwd.fit(X, y, [0.1], kern=rbfdot(0.5), random_state=0, **kw)
        assert path.stop == "kkt" and (path.kkt <= 1e-5).all() and np.isnan(path.gap_bound).all()


# ------------------------------------------------------------- one budget, one count
def test_an_unreachable_tolerance_spends_the_one_budget_and_says_so(data):
    X, y = data
    with pytest.warns(kerndwd.DWDConvergenceWarning, match="maxit=1000"):
        path = kerndwd.fit(X, y, [0.1], kern=vanilladot(), stop="kkt", eps=1e-300, maxit=1000)
    assert int(path.npass.sum()) == 1001 and path.jerr == -1


# ------------------------------------------------------------- faces that agreed with each other
@pytest.mark.parametrize("kw", [dict(solver="bcd"), dict(approx="nystroem", n_components=10)])
def test_sparse_rows_are_refused_by_the_design_on_every_face(data, kw):
    pytest.importorskip("sklearn")
    from kerndwd import DWDClassifier

    X, y = data
    Xs = sparse.csr_matrix(X)
    with pytest.raises(TypeError, match=r"X: sparse rows .* not supported by .*Pass X.toarray"):
        kerndwd.fit(Xs, y, [0.1], kern=vanilladot(), **kw)
    with pytest.raises(TypeError, match=r"X: sparse rows .* not supported by .*Pass X.toarray"):
        kerndwd.cv(Xs, y, [0.1], kern=vanilladot(), nfolds=3, **kw)
    est_kw = dict(kw)
    est_kw.pop("n_components", None)
    with pytest.raises(TypeError, match=r"X: sparse rows .* not supported by .*Pass X.toarray"):
        DWDClassifier(kernel="linear", n_components=kw.get("n_components"), **est_kw).fit(Xs, y)


def test_q_out_of_range_is_refused_by_name_on_every_face(data):
    pytest.importorskip("sklearn")
    from kerndwd import DWDClassifier, DWDClassifierCV

    X, y = data
    with pytest.raises(ValueError, match=r"qval must lie in \[0.0001, 10000\]"):
        kerndwd.fit(X, y, [0.1], kern=vanilladot(), qval=1e200)
    with pytest.raises(ValueError, match=r"q must lie in \[0.0001, 10000\]"):
        DWDClassifier(q=1e200).fit(X, y)
    with pytest.raises(ValueError, match=r"qvals must lie in \[0.0001, 10000\]"):
        DWDClassifierCV(qvals=[1.0, 1e200]).fit(X, y)
    assert kerndwd.lipschitz(1e200) == pytest.approx(1e200, rel=1e-12)  # no OverflowError


def test_dask_rows_are_refused_by_name_where_a_face_needs_them_in_memory(data):
    pytest.importorskip("sklearn")
    da = pytest.importorskip("dask.array")
    from kerndwd import DWDClassifier

    X, y = data
    Xd, yd = da.from_array(X, chunks=(20, 3)), da.from_array(y, chunks=20)
    with pytest.raises(ValueError, match="probability=True calibrates on held-out folds"):
        DWDClassifier(probability=True).fit(Xd, yd)
    with pytest.raises(TypeError, match=r"X: rows held by a Dask cluster are not supported by solver='cg'"):
        kerndwd.fit(Xd, yd, [0.1], kern=rbfdot(0.5), solver="cg")


# ------------------------------------------------------------- every design checks the kernel it evaluates
@pytest.mark.parametrize("kw", [dict(solver="bcd"), dict(solver="bcd", cache_kernel=False),
                                dict(approx="nystroem", n_components=20), {}])
def test_a_kernel_beyond_double_precision_is_refused_by_every_design_that_evaluates_it(data, kw):
    X, y = data
    with pytest.raises(ValueError, match=r"kern=rbfdot\(sigma=1.0\) cannot be formed accurately"):
        kerndwd.fit(X * 1e8, y, [0.1], kern=rbfdot(1.0), random_state=0, **kw)


@pytest.mark.parametrize("kw", [dict(solver="bcd"), dict(solver="bcd", cache_kernel=False),
                                dict(approx="nystroem", n_components=30), {}, dict(wt=np.linspace(0.5, 2.0, 60))])
def test_an_indefinite_kernel_is_refused_by_every_design_that_evaluates_it(data, kw):
    X, y = data
    with pytest.raises(ValueError, match=r"kern=splinedot\(\) on these data is not positive semi-definite"):
        kerndwd.fit(X * 3, y, [0.1], kern=splinedot(), random_state=0, **kw)


# ------------------------------------------------------------- calibration bound to its path
def test_a_calibration_from_another_fit_is_refused_by_name(data):
    X, y = data
    path = kerndwd.fit(X, y, [0.1], kern=rbfdot(0.5))
    same = kerndwd.cv(X, y, [0.1], kern=rbfdot(0.5), random_state=0)
    prob = kerndwd.predict(path, X[:5], type="prob", calibration=same)
    assert ((prob > 0) & (prob < 1)).all()
    for other, what in ((kerndwd.cv(X, y, [0.1], kern=rbfdot(1.5), random_state=0), "kern"),
                        (kerndwd.cv(X, y, [0.1], kern=rbfdot(0.5), qval=2.0, random_state=0), "qval"),
                        (kerndwd.cv(X[::-1], y[::-1], [0.1], kern=rbfdot(0.5), random_state=0), "rows"),
                        (kerndwd.cv(X, y, [0.1], kern=rbfdot(0.5), approx="nystroem", n_components=20,
                                    random_state=0, stop="step"), "design")):
        with pytest.raises(ValueError, match=f"calibration: .*not fitted on what the path was: {what}"):
            kerndwd.predict(path, X[:5], type="prob", calibration=other)


def test_a_platt_slope_of_the_wrong_sign_falls_back_to_the_population_inversion(data):
    X, y = data
    path = kerndwd.fit(X, y, [0.1], kern=vanilladot())
    cvres = kerndwd.cv(X, y, [0.1], kern=vanilladot(), random_state=0)
    cvres.predmat = -cvres.predmat  # held-out values that rank the classes backwards
    with pytest.warns(UserWarning, match="slope a = .* >= 0"):
        prob = kerndwd.predict(path, X, type="prob", calibration=cvres)
    np.testing.assert_array_equal(prob, kerndwd.conditional_probability(path.predict(X, type="link"), 1.0))
    link = path.predict(X, type="link")[:, 0]
    order = np.argsort(link)
    assert (np.diff(prob[order, 0]) >= 0).all()  # never falls as the decision value rises


def test_probabilities_on_dask_rows_stay_lazy(data):
    da = pytest.importorskip("dask.array")
    X, y = data
    path = kerndwd.fit(X, y, [0.1, 0.01], kern=vanilladot())
    cvres = kerndwd.cv(X, y, [0.1, 0.01], kern=vanilladot(), random_state=0)
    Xd = da.from_array(X, chunks=(20, 3))
    for kw in ({}, {"calibration": cvres}):
        lazy = kerndwd.predict(path, Xd, type="prob", **kw)
        assert isinstance(lazy, da.Array)
        np.testing.assert_allclose(lazy.compute(), kerndwd.predict(path, X, type="prob", **kw), rtol=1e-12)


# ------------------------------------------------------------- budgets sized to the problem
def test_bcd_on_a_singular_kernel_matrix_reaches_the_exact_optimum(data):
    """The linear kernel on 60 x 3 rows: K has rank 3, and the global step's
    direction lies mostly in its null space, where nothing bounds its
    coefficient but the rule that keeps alpha between itself and the
    representer point (before, the null part grew without bound and the
    path was abandoned as non-finite after the whole budget)."""
    X, y = data
    lams = 10.0 ** np.linspace(3, -3, 30)
    bcd = kerndwd.fit(X, y, lams, kern=vanilladot(), solver="bcd", stop="kkt", eps=1e-8, maxit=20000)
    exact = kerndwd.fit(X, y, lams, kern=vanilladot(), stop="kkt", eps=1e-8)
    assert bcd.jerr == 0 and np.isfinite(bcd.alpha).all()
    np.testing.assert_allclose(bcd.objective, exact.objective, rtol=1e-9)


# ------------------------------------------------------------- messages
@pytest.mark.parametrize("labels", [[1, None, 1, 2], [1.0, np.nan, 1.0, 2.0], ["a", None, "b", "a"]])
def test_a_missing_label_is_called_missing(data, labels):
    X, _ = data
    with pytest.raises(ValueError, match="y contains missing values|y contains NaN"):
        kerndwd.fit(X[:4], labels, [0.1], kern=vanilladot())


def test_a_boolean_label_with_pandas_na_is_called_missing(data):
    pd = pytest.importorskip("pandas")
    X, _ = data
    with pytest.raises(ValueError, match="y contains missing values"):
        kerndwd.fit(X[:4], pd.array([True, pd.NA, False, True], dtype="boolean"), [0.1], kern=vanilladot())


@pytest.mark.parametrize("bad", [True, [True, False], np.array([True])])
def test_booleans_are_not_lambdas(data, bad):
    X, y = data
    with pytest.raises(TypeError, match="lambdas must be a sequence of positive numbers, got booleans"):
        kerndwd.fit(X, y, bad, kern=vanilladot())


def test_lambdas_given_increasing_are_sorted_with_a_warning(data):
    X, y = data
    with pytest.warns(UserWarning, match="lambdas were sorted decreasing"):
        path = kerndwd.fit(X, y, [0.01, 0.1, 1.0], kern=vanilladot())
    assert path.lambda_.tolist() == [1.0, 0.1, 0.01]
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        kerndwd.fit(X, y, [1.0, 0.1, 0.01], kern=vanilladot())  # already decreasing: no warning
