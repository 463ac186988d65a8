"""The scikit-learn estimators: conventions, R equivalence, weights, multiclass, persistence."""

import pickle
import warnings

import numpy as np
import pytest

sklearn = pytest.importorskip("sklearn")

from sklearn.datasets import load_iris, make_classification  # noqa: E402
from sklearn.model_selection import GridSearchCV, cross_val_score  # noqa: E402
from sklearn.pipeline import make_pipeline  # noqa: E402
from sklearn.preprocessing import StandardScaler  # noqa: E402
from sklearn.utils.estimator_checks import parametrize_with_checks  # noqa: E402

import kerndwd  # noqa: E402
from kerndwd import DWDClassifier, DWDClassifierCV, DWDConvergenceWarning  # noqa: E402
from kerndwd.cv import cv as path_cv  # noqa: E402

# The check instances use lambd=0.1 (fewer MM passes than the default 0.01
# at tol=1e-10; the checks test the API, not the choice of lambda) and a 2-value,
# 3-fold CV grid, to keep the suite fast.  The defaults (lambd=0.01, 20
# lambdas, 5 folds) pass every check too, in about three times the time.
CHECKED = [
    DWDClassifier(lambd=0.1),
    # seeds: without one, sigest's sample, the calibration's folds and the CV folds are
    # drawn afresh each run (on the checks' small unbalanced data a CV training part
    # can then hold one class, refused, and not as sparse input)
    DWDClassifier(lambd=0.1, kernel="rbf", random_state=0),
    DWDClassifier(lambd=0.1, kernel="rbf", probability=True, random_state=0),
    DWDClassifierCV(lambdas=[1.0, 0.1], cv=3, random_state=0),
]


def _expected_failed_checks(estimator):
    # Every check of the installed scikit-learn passes (check_array_api_input
    # is skipped by scikit-learn itself unless SCIPY_ARRAY_API is set), except,
    # with probability=True, the two that compare weights with repeated rows:
    # the held-out folds of the calibration differ between the two data sets,
    # so predict_proba does too (scikit-learn's SVC(probability=True) fails
    # them for the same reason).  Decision values and labels still pass.
    if getattr(estimator, "probability", False):
        why = "calibration folds differ between weighted and repeated rows"
        return {"check_sample_weight_equivalence_on_dense_data": why,
                "check_sample_weight_equivalence_on_sparse_data": why}
    return {}


@parametrize_with_checks(CHECKED, expected_failed_checks=_expected_failed_checks)
def test_sklearn_compatible(estimator, check):
    with warnings.catch_warnings():
        # the checks' data are tiny and arbitrary: fits may stop short, and with
        # probability=True a class may have one sample to hold out, or held-out
        # decision values that do not order the classes (each said by a warning)
        warnings.simplefilter("ignore", DWDConvergenceWarning)
        warnings.filterwarnings("ignore", "probability=True: a class has 1 sample", UserWarning)
        warnings.filterwarnings("ignore", "Platt's sigmoid fitted to the held-out decision values has slope",
                                UserWarning)
        check(estimator)


@pytest.fixture(scope="module")
def binary():
    X, y = make_classification(n_samples=80, n_features=5, n_informative=3, random_state=0)
    return X, y


KERNELS = [
    ({"kernel": "linear"}, kerndwd.vanilladot()),
    ({"kernel": "rbf", "gamma": 0.3}, kerndwd.rbfdot(sigma=0.3)),
    ({"kernel": "poly", "gamma": 0.5, "degree": 2, "coef0": 1.0}, kerndwd.polydot(degree=2, scale=0.5, offset=1.0)),
]


@pytest.mark.parametrize("params,kern", KERNELS)
@pytest.mark.parametrize("lam", [1.0, 0.02])
def test_binary_is_the_r_path(binary, params, kern, lam, r_rule_fit):
    X, y = binary
    # R's stopping rule and tolerance
    est = DWDClassifier(lambd=lam, stop="step", tol=1e-5, **params).fit(X, y)
    ref = kerndwd.predict(r_rule_fit(X, y, [lam], kern), X, type="link")[:, 0]
    np.testing.assert_allclose(est.decision_function(X), ref, rtol=0, atol=1e-12)
    # the default (gradient) rule, passed to fit as well
    est = DWDClassifier(lambd=lam, **params).fit(X, y)
    path = kerndwd.fit(X, y, [lam], kern, eps=1e-10, stop="kkt")
    ref = kerndwd.predict(path, X, type="link")[:, 0]
    np.testing.assert_allclose(est.decision_function(X), ref, rtol=0, atol=1e-12)
    assert est.kkt_[0] <= 1e-10
    assert est.kernel_ == kern
    assert est.solver_ == path.solver


def test_linear_attributes(binary):
    X, y = binary
    est = DWDClassifier(lambd=0.1).fit(X, y)
    assert est.coef_.shape == (1, X.shape[1]) and est.intercept_.shape == (1,)
    np.testing.assert_allclose(est.decision_function(X), X @ est.coef_[0] + est.intercept_[0], atol=1e-12)
    # fewer rows than columns: R's kernel solver, coef_ still available
    Xw = np.hstack([X[:10], X[:10] ** 2, X[:10] ** 3])
    est = DWDClassifier(lambd=0.1).fit(Xw, y[:10])
    assert est.solver_ == "kdwd" and est.X_fit_.shape == Xw.shape
    np.testing.assert_allclose(est.decision_function(Xw), Xw @ est.coef_[0] + est.intercept_[0], atol=1e-10)


def test_kernel_attributes(binary):
    X, y = binary
    est = DWDClassifier(lambd=0.1, kernel="rbf", gamma=0.2).fit(X, y)
    K = kerndwd.rbfdot(0.2)(X, est.X_fit_)
    np.testing.assert_allclose(est.decision_function(X), K @ est.dual_coef_[0] + est.intercept_[0], atol=1e-12)
    assert not hasattr(est, "coef_")


def test_gamma_scale_and_sigest(binary):
    X, y = binary
    est = DWDClassifier(kernel="rbf").fit(X, y)
    assert est.kernel_ == kerndwd.rbfdot(1.0 / (X.shape[1] * X.var()))
    est = DWDClassifier(kernel="rbf", gamma="sigest", random_state=3).fit(X, y)
    assert est.kernel_ == kerndwd.rbfdot(kerndwd.sigest(X, random_state=3))
    est = DWDClassifier(kernel=kerndwd.laplacedot(0.7)).fit(X, y)
    assert est.kernel_ == kerndwd.laplacedot(0.7)


def test_sample_weight_is_repetition(binary):
    X, y = binary
    sw = np.random.default_rng(0).integers(0, 4, size=y.size)
    for params in ({}, {"kernel": "rbf"}):
        a = DWDClassifier(lambd=0.05, **params).fit(X, y, sample_weight=sw)
        b = DWDClassifier(lambd=0.05, **params).fit(np.repeat(X, sw, axis=0), np.repeat(y, sw))
        np.testing.assert_allclose(a.decision_function(X), b.decision_function(X), rtol=1e-7, atol=1e-9)
    # the weight scale does not matter (R's wt is rescaled to mean 1)
    c = DWDClassifier(lambd=0.05).fit(X, y, sample_weight=2.5 * sw)
    a = DWDClassifier(lambd=0.05).fit(X, y, sample_weight=sw)
    np.testing.assert_allclose(c.decision_function(X), a.decision_function(X), rtol=1e-7, atol=1e-9)


def test_weights_map_to_r_wt(binary):
    """sample_weight s gives R's weighted fit with wt = s * n / sum(s)."""
    X, y = binary
    sw = np.random.default_rng(1).uniform(0.5, 3.0, size=y.size)
    est = DWDClassifier(lambd=0.1, stop="step", tol=1e-5).fit(X, y, sample_weight=sw)
    ref = kerndwd.fit(X, y, [0.1], kerndwd.vanilladot(), wt=sw * y.size / sw.sum())
    np.testing.assert_allclose(est.decision_function(X), kerndwd.predict(ref, X, type="link")[:, 0], atol=1e-12)


def test_class_weight_balanced(binary):
    X, y = binary
    X, y = X[:60], np.where(np.arange(60) < 45, 0, 1)  # 45 / 15
    bal = DWDClassifier(lambd=0.1, class_weight="balanced").fit(X, y)
    manual = DWDClassifier(lambd=0.1).fit(X, y, sample_weight=np.where(y == 0, 60 / (2 * 45), 60 / (2 * 15)))
    np.testing.assert_allclose(bal.decision_function(X), manual.decision_function(X), rtol=1e-9, atol=1e-12)
    plain = DWDClassifier(lambd=0.1).fit(X, y)
    # up-weighting the minority class moves the boundary towards the majority
    assert (bal.predict(X) == 1).sum() > (plain.predict(X) == 1).sum()


def test_iris_multiclass_is_one_vs_rest():
    X, y = load_iris(return_X_y=True)
    X = StandardScaler().fit_transform(X)
    est = DWDClassifier(lambd=0.05).fit(X, y)
    D = est.decision_function(X)
    assert D.shape == (150, 3) and est.coef_.shape == (3, 4)
    assert est.score(X, y) > 0.9  # versicolor is not linearly separable from the rest
    np.testing.assert_array_equal(est.predict(X), est.classes_[D.argmax(axis=1)])
    for k in range(3):  # column k is the binary fit of class k against the rest
        binary_k = DWDClassifier(lambd=0.05).fit(X, y == k)
        np.testing.assert_allclose(D[:, k], binary_k.decision_function(X), rtol=0, atol=1e-12)


def test_pipeline_gridsearch_cross_val_score():
    X, y = load_iris(return_X_y=True)
    pipe = make_pipeline(StandardScaler(), DWDClassifier(lambd=0.1))
    pipe.fit(X, y)
    assert pipe.score(X, y) > 0.85
    scores = cross_val_score(pipe, X, y, cv=3)
    assert scores.shape == (3,) and scores.mean() > 0.8
    grid = GridSearchCV(pipe, {"dwdclassifier__lambd": [1.0, 0.1], "dwdclassifier__q": [0.5, 1.0]}, cv=3)
    grid.fit(X, y)
    assert grid.best_params_["dwdclassifier__lambd"] in (1.0, 0.1)
    assert len(grid.cv_results_["mean_test_score"]) == 4


def test_dataframe_and_string_labels(binary):
    pd = pytest.importorskip("pandas")
    X, y = binary
    df = pd.DataFrame(X, columns=[f"f{j}" for j in range(X.shape[1])])
    labels = np.where(y == 1, "spam", "ham")
    est = DWDClassifier(lambd=0.1).fit(df, pd.Series(labels))
    assert list(est.feature_names_in_) == list(df.columns)
    assert list(est.classes_) == ["ham", "spam"]
    assert set(est.predict(df)) <= {"ham", "spam"}
    # "spam" is classes_[1]: positive decision values, as R's second level
    np.testing.assert_array_equal(est.predict(df) == "spam", est.decision_function(df) > 0)
    ref = DWDClassifier(lambd=0.1).fit(X, y)
    np.testing.assert_allclose(est.decision_function(df), ref.decision_function(X), atol=1e-12)


def test_pickle_round_trip(binary):
    X, y = binary
    Xi, yi = load_iris(return_X_y=True)
    for est, (A, b) in [
        (DWDClassifier(lambd=0.1), (X, y)),
        (DWDClassifier(lambd=0.1, kernel="rbf"), (Xi, yi)),
        (DWDClassifierCV(lambdas=[1.0, 0.1], cv=3, random_state=0), (X, y)),
    ]:
        est.fit(A, b)
        again = pickle.loads(pickle.dumps(est))
        np.testing.assert_array_equal(again.decision_function(A), est.decision_function(A))
        np.testing.assert_array_equal(again.predict(A), est.predict(A))
    path = kerndwd.fit(X, y, [1.0, 0.1], kerndwd.rbfdot(0.2))
    again = pickle.loads(pickle.dumps(path))
    np.testing.assert_array_equal(kerndwd.predict(again, X, type="link"), kerndwd.predict(path, X, type="link"))
    np.testing.assert_array_equal(again.lambda_, path.lambda_)


def test_max_iter_warns_and_keeps_last_iterate(binary):
    X, y = binary
    with pytest.warns(DWDConvergenceWarning, match="max_iter=5"):
        est = DWDClassifier(lambd=0.001, max_iter=5).fit(X, y)
    assert est.n_iter_[0] == 6  # mm_path counts the pass that exceeded the budget
    assert est.kkt_[0] > 1e-10 and np.isfinite(est.decision_function(X)).all()


@pytest.mark.parametrize("params,exc,match", [
    ({"kernel": "sigmoid"}, ValueError, "kernel must be one of"),
    ({"lambd": 0.0}, ValueError, "lambd must be positive"),
    ({"lambd": "big"}, TypeError, "lambd must be a real number"),
    ({"q": -1.0}, ValueError, "q must be positive"),
    ({"stop": "never"}, ValueError, "stop must be one of"),
    ({"max_iter": 0}, ValueError, "max_iter must be at least 1"),
    ({"kernel": "rbf", "gamma": "auto"}, TypeError, "gamma must be a real number"),
    ({"kernel": "poly", "coef0": -1.0}, ValueError, "coef0 must be non-negative"),
])
def test_bad_parameters(binary, params, exc, match):
    X, y = binary
    with pytest.raises(exc, match=match):
        DWDClassifier(**params).fit(X, y)


def test_sparse_with_nonlinear_kernel_is_refused(binary):
    from scipy import sparse

    X, y = binary
    with pytest.raises(TypeError, match="X: sparse rows .* are not supported"):
        DWDClassifier(kernel="rbf").fit(sparse.csr_matrix(X), y)


def test_one_class_after_zero_weights(binary):
    X, y = binary
    with pytest.raises(ValueError, match="at least 2 classes with positive weight"):
        DWDClassifier().fit(X, y, sample_weight=(y == 1).astype(float))


# --------------------------------------------------------------------------
# DWDClassifierCV
# --------------------------------------------------------------------------
def test_cv_binary_matches_kerndwd_cv(binary):
    X, y = binary
    lams = [1.0, 0.3, 0.1, 0.03, 0.01]
    est = DWDClassifierCV(lambdas=lams, cv=5, random_state=7).fit(X, y)
    ref = path_cv(X, y, lams, kerndwd.vanilladot(), nfolds=5, random_state=7, stop="kkt")  # cv_stop="kkt" default
    np.testing.assert_array_equal(est.cv_results_["foldid"], ref.foldid)
    np.testing.assert_allclose(est.cv_results_["cvm"][0], ref.cvm)
    np.testing.assert_allclose(est.cv_results_["cvsd"][0], ref.cvsd)
    assert est.lambda_ == ref.lambda_min and est.q_ == 1.0
    est1 = DWDClassifierCV(lambdas=lams, cv=5, random_state=7, choose="lambda_1se").fit(X, y)
    assert est1.lambda_ == ref.lambda_1se
    refit = DWDClassifier(lambd=ref.lambda_min).fit(X, y)
    np.testing.assert_allclose(est.decision_function(X), refit.decision_function(X), atol=1e-12)
    assert est.best_estimator_.lambd == est.lambda_


def test_cv_over_q_and_multiclass():
    X, y = load_iris(return_X_y=True)
    X = StandardScaler().fit_transform(X)
    est = DWDClassifierCV(lambdas=[1.0, 0.1, 0.01], qvals=(0.5, 1.0, 2.0), cv=3, random_state=0).fit(X, y)
    res = est.cv_results_
    assert res["cvm"].shape == (3, 3) and res["cvsd"].shape == (3, 3)
    # the chosen q has the smallest cvm at its own lambda_min (ties: the last q)
    at_choice = np.array([res["cvm"][k, list(res["lambdas"]).index(res["lambda_min"][k])] for k in range(3)])
    assert est.q_ == res["qvals"][np.flatnonzero(at_choice == at_choice.min())[-1]]
    assert est.decision_function(X).shape == (150, 3) and est.score(X, y) > 0.85


def test_cv_splitter_folds(binary):
    from sklearn.model_selection import KFold

    X, y = binary
    splits = KFold(4).split(X, y)
    est = DWDClassifierCV(lambdas=[1.0, 0.1], cv=splits).fit(X, y)
    np.testing.assert_array_equal(est.cv_results_["foldid"], np.repeat([1, 2, 3, 4], 20))
    with pytest.raises(ValueError, match="held out exactly once"):
        DWDClassifierCV(lambdas=[1.0], cv=[(np.arange(40), np.arange(40, 60))]).fit(X, y)


def test_the_default_solver_says_before_any_sweep_that_it_chose_bcd(monkeypatch):
    """Where the kernel matrix exceeds the memory budget (here made small), the
    default route is block coordinate descent: the estimator says so, and what a
    sweep costs, before the first sweep."""
    from kerndwd.engine import cache
    from kerndwd.engine.designs.bcd import BlockCoordinateDesign

    class NoSweeps(Exception):
        pass

    def refuse(self, problem, cache):
        raise NoSweeps
    monkeypatch.setattr(cache, "available_memory", lambda: 2e5)  # a budget of 1e5 bytes
    monkeypatch.setattr(BlockCoordinateDesign, "majoriser", refuse)
    rng = np.random.default_rng(0)
    X = rng.standard_normal((300, 2))
    y = np.where((X ** 2).sum(axis=1) > 1.4, 1, -1)
    message = ("solver='auto': the 300 x 300 kernel matrix (0.00034 GiB in float32) exceeds the memory budget "
               "(9.3e-05 GiB): block coordinate descent, O(n b) memory (approx='nystroem' is much faster at this "
               "size); each sweep forms all 300^2 = 9e+04 kernel entries and a path takes hundreds of sweeps or "
               "more: progress=True shows them")
    with pytest.warns(UserWarning) as record, pytest.raises(NoSweeps):
        DWDClassifier(kernel="rbf").fit(X, y)
    assert [str(w.message) for w in record] == [message]
    monkeypatch.setattr(cache, "available_memory", lambda: 1e12)  # K fits: no warning, no BCD
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert DWDClassifier(kernel="rbf").fit(X, y).solver_chosen_.startswith("solver='auto': n = 300 rows")


def test_predict_proba_without_probability_names_the_parameter():
    X, y = make_classification(n_samples=40, n_features=4, random_state=0)
    for est in (DWDClassifier(lambd=0.1).fit(X, y), DWDClassifierCV(lambdas=[1.0, 0.1], cv=3, random_state=0)):
        cls = type(est).__name__
        for method in ("predict_proba", "predict_log_proba"):
            assert not hasattr(est, method)
            with pytest.raises(AttributeError) as info:
                getattr(est, method)(X)
            assert str(info.value) == (
                f"This {cls!r} has no attribute {method!r}: probabilities need probability=True "
                f"({cls}(probability=True) fits Platt's sigmoid on held-out decision values at fit)")
    assert hasattr(DWDClassifier(probability=True), "predict_proba")
