"""Kernels of the user's own: a function as a kernel (kerndwd.userdot, a callable
``kernel``) and the estimators' ``kernel="precomputed"``; each gives the
decision values of the same kernel given by name, and is checked where it enters."""

import pickle

import numpy as np
import pytest

import kerndwd

SIGMA = 0.3


def gaussian(x, y):
    """rbfdot(sigma=SIGMA) written by hand: exp(-SIGMA |x - y|^2)."""
    d2 = (x * x).sum(axis=1)[:, None] + (y * y).sum(axis=1)[None, :] - 2.0 * x @ y.T
    return np.exp(-SIGMA * np.maximum(d2, 0.0))


@pytest.fixture
def data():
    rng = np.random.default_rng(4)
    X = rng.standard_normal((70, 3))
    y = np.where(X[:, 0] * X[:, 1] + 0.3 * rng.standard_normal(70) > 0, 1, -1)
    return X[:50], y[:50], X[50:]


TIGHT = dict(stop="kkt", eps=1e-10)
LAMS = [0.1, 0.01]


# --------------------------------------------------------------------------
# kerndwd.userdot in the R-like faces
# --------------------------------------------------------------------------
def test_a_function_kernel_fits_and_predicts_as_the_kernel_by_name(data):
    X, y, X_new = data
    mine = kerndwd.fit(X, y, LAMS, kern=kerndwd.userdot(gaussian), **TIGHT)
    named = kerndwd.fit(X, y, LAMS, kern=kerndwd.rbfdot(sigma=SIGMA), **TIGHT)
    np.testing.assert_allclose(mine.predict(X_new, type="link"), named.predict(X_new, type="link"), rtol=0,
                               atol=1e-8)
    res_mine = kerndwd.cv(X, y, LAMS, kern=kerndwd.userdot(gaussian), nfolds=3, random_state=0, **TIGHT)
    res_named = kerndwd.cv(X, y, LAMS, kern=kerndwd.rbfdot(sigma=SIGMA), nfolds=3, random_state=0, **TIGHT)
    np.testing.assert_allclose(res_mine.predmat, res_named.predmat, rtol=0, atol=1e-8)
    np.testing.assert_array_equal(res_mine.cvm, res_named.cvm)


def test_nystroem_takes_a_function_kernel_and_random_features_refuse_it(data):
    X, y, X_new = data
    opts = dict(approx="nystroem", n_components=20, random_state=0, **TIGHT)
    mine = kerndwd.fit(X, y, LAMS, kern=kerndwd.userdot(gaussian), **opts)
    named = kerndwd.fit(X, y, LAMS, kern=kerndwd.rbfdot(sigma=SIGMA), **opts)
    np.testing.assert_allclose(mine.predict(X_new, type="link"), named.predict(X_new, type="link"), rtol=0,
                               atol=1e-8)
    with pytest.raises(ValueError, match=r"^approx='rff' serves kern in \['laplacedot', 'rbfdot'\], got "
                                         r"kern=userdot\(gaussian\); designs that serve it: .*approx='nystroem'"):
        kerndwd.fit(X, y, LAMS, kern=kerndwd.userdot(gaussian), approx="rff")


def test_a_function_kernel_is_checked(data):
    X, y, _ = data
    with pytest.raises(ValueError) as info:
        kerndwd.fit(X, y, LAMS, kern=kerndwd.userdot(lambda a, b: gaussian(a, b)[:, :-1]))
    assert str(info.value) == ("kernel userdot(test_a_function_kernel_is_checked.<locals>.<lambda>) returned "
                               "shape (50, 49) for 50 and 50 rows; it must return the (50, 50) matrix of k(x_i, y_j)")
    with pytest.raises(ValueError, match=r"^kernel userdot\(.*\) returned non-finite values \(NaN or infinite\) "
                                         r"on these rows$"):
        kerndwd.fit(X, y, LAMS, kern=kerndwd.userdot(lambda a, b: np.log(gaussian(a, b) - 0.5)))
    with pytest.raises(ValueError, match=r"^kernel userdot\(.*\) is not symmetric on these rows: k\(x_i, x_j\) "
                                         r"and k\(x_j, x_i\) differ by 0\.\d+ of the largest value; DWD needs a "
                                         r"symmetric positive semi-definite kernel$"):
        kerndwd.fit(X, y, LAMS, kern=kerndwd.userdot(lambda a, b: a @ b.T + a[:, :1]))
    with pytest.raises(ValueError, match=r"^the kernel matrix of kern=userdot\(.*\) on these data is not positive "
                                         r"semi-definite"):
        kerndwd.fit(X, y, LAMS, kern=kerndwd.userdot(lambda a, b: -gaussian(a, b)))
    with pytest.raises(TypeError) as info:
        kerndwd.fit(X, y, LAMS, kern=gaussian)
    assert str(info.value) == ("kern must be a kernel object such as kerndwd.rbfdot(sigma=1) or kerndwd.vanilladot(), "
                               "got function; kerndwd.userdot(func) makes one from a function func(x, y)")
    with pytest.raises(TypeError) as info:
        kerndwd.userdot(3)
    assert str(info.value) == "func must be a function func(x, y) returning the kernel matrix, got int"


def test_a_fitted_path_of_a_module_level_function_pickles(data):
    X, y, X_new = data
    path = kerndwd.fit(X, y, LAMS, kern=kerndwd.userdot(gaussian), **TIGHT)
    again = pickle.loads(pickle.dumps(path))
    np.testing.assert_array_equal(again.predict(X_new, type="link"), path.predict(X_new, type="link"))
    assert repr(again.kern) == "userdot(gaussian)"


# --------------------------------------------------------------------------
# the estimators: kernel="precomputed" and a callable kernel
# --------------------------------------------------------------------------
@pytest.fixture
def three():
    sk = pytest.importorskip("sklearn.datasets")
    X, y = sk.make_classification(n_samples=90, n_features=5, n_informative=3, n_classes=3, random_state=0)
    return X, y


@pytest.mark.parametrize("weighted", [False, True])
def test_precomputed_and_callable_kernels_give_the_decision_values_by_name(three, weighted):
    from kerndwd import DWDClassifier

    X, y = three
    Xt, yt, X_new = X[:60], y[:60], X[60:]
    # zero weights drop rows: the Gram matrix's columns still follow the rows given
    sw = np.r_[np.zeros(4), np.linspace(0.5, 2.0, 56)] if weighted else None
    named = DWDClassifier(lambd=0.05, kernel="rbf", gamma=SIGMA).fit(Xt, yt, sample_weight=sw)
    pre = DWDClassifier(lambd=0.05, kernel="precomputed").fit(gaussian(Xt, Xt), yt, sample_weight=sw)
    fun = DWDClassifier(lambd=0.05, kernel=gaussian).fit(Xt, yt, sample_weight=sw)
    ref = named.decision_function(X_new)
    np.testing.assert_allclose(pre.decision_function(gaussian(X_new, Xt)), ref, rtol=0, atol=1e-8)
    np.testing.assert_allclose(fun.decision_function(X_new), ref, rtol=0, atol=1e-8)
    assert pre.n_features_in_ == 60 and fun.n_features_in_ == 5
    assert repr(pre.kernel_) == "precomputed()" and repr(fun.kernel_) == "userdot(gaussian)"


def test_precomputed_probabilities_and_nystroem_follow_the_kernel_by_name(three):
    from kerndwd import DWDClassifier

    X, y = three
    Xt, yt, X_new = X[:60], y[:60], X[60:]
    for opts in (dict(probability=True, random_state=0), dict(approx="nystroem", n_components=25, random_state=0)):
        named = DWDClassifier(lambd=0.05, kernel="rbf", gamma=SIGMA, **opts).fit(Xt, yt)
        pre = DWDClassifier(lambd=0.05, kernel="precomputed", **opts).fit(gaussian(Xt, Xt), yt)
        np.testing.assert_allclose(pre.decision_function(gaussian(X_new, Xt)), named.decision_function(X_new),
                                   rtol=0, atol=1e-8)
        if "probability" in opts:
            np.testing.assert_allclose(pre.predict_proba(gaussian(X_new, Xt)), named.predict_proba(X_new), rtol=0,
                                       atol=1e-8)


def test_model_selection_cuts_both_sides_of_a_precomputed_kernel(three):
    ms = pytest.importorskip("sklearn.model_selection")
    from kerndwd import DWDClassifier, DWDClassifierCV

    X, y = three
    K = gaussian(X, X)
    assert DWDClassifier(kernel="precomputed").__sklearn_tags__().input_tags.pairwise
    assert not DWDClassifier(kernel="rbf").__sklearn_tags__().input_tags.pairwise
    folds = ms.StratifiedKFold(3, shuffle=True, random_state=0)
    pre = ms.cross_val_score(DWDClassifier(lambd=0.05, kernel="precomputed"), K, y, cv=folds)
    named = ms.cross_val_score(DWDClassifier(lambd=0.05, kernel="rbf", gamma=SIGMA), X, y, cv=folds)
    np.testing.assert_array_equal(pre, named)
    grid = {"lambd": [0.1, 0.01, 0.001]}
    pre = ms.GridSearchCV(DWDClassifier(kernel="precomputed"), grid, cv=folds).fit(K, y)
    named = ms.GridSearchCV(DWDClassifier(kernel="rbf", gamma=SIGMA), grid, cv=folds).fit(X, y)
    np.testing.assert_array_equal(pre.cv_results_["mean_test_score"], named.cv_results_["mean_test_score"])
    assert pre.best_params_ == named.best_params_
    # DWDClassifierCV: its folds and refit on the Gram matrix
    pre = DWDClassifierCV(lambdas=[0.1, 0.01], kernel="precomputed", cv=3, random_state=0).fit(K[:60, :60], y[:60])
    named = DWDClassifierCV(lambdas=[0.1, 0.01], kernel="rbf", gamma=SIGMA, cv=3, random_state=0).fit(X[:60], y[:60])
    np.testing.assert_array_equal(pre.cv_results_["cvm"], named.cv_results_["cvm"])
    np.testing.assert_allclose(pre.decision_function(K[60:, :60]), named.decision_function(X[60:]), rtol=0,
                               atol=1e-8)


def test_a_precomputed_kernel_is_checked_where_it_enters(three):
    from scipy import sparse

    from kerndwd import DWDClassifier

    X, y = three
    K = gaussian(X, X)
    est = DWDClassifier(kernel="precomputed")
    cases = [
        (K[:, :50], ValueError, "kernel='precomputed' takes X as the square Gram matrix of the training rows, shape "
                                "(n_samples, n_samples); got shape (90, 50)"),
        (np.eye(90) + 0.5 * np.eye(90, k=1), ValueError,
         "kernel='precomputed' takes X as a Gram matrix, which is symmetric; X[i, j] and X[j, i] differ by 0.5 "
         "of the largest entry"),
        (K - 2.0 * np.eye(90), ValueError, None),
        (sparse.csr_matrix(K), TypeError, "kernel='precomputed' takes X as a dense Gram matrix in memory: sparse "
                                          "and Dask input are not supported (got csr_matrix); pass a numpy array"),
    ]
    for bad, error, message in cases:
        with pytest.raises(error) as info:
            est.fit(bad, y)
        if message is not None:
            assert str(info.value) == message
        else:
            assert str(info.value).startswith("kernel='precomputed' takes X as the Gram matrix of a positive "
                                              "semi-definite kernel; X has the eigenvalue -")
            assert str(info.value).endswith("DWD's penalty would be unbounded below")
    with pytest.raises(ValueError, match="^kernel='precomputed' takes X as the square Gram matrix"):
        DWDClassifier(kernel="precomputed", approx="rff").fit(K[:, :50], y)
    with pytest.raises(ValueError, match=r"^approx='rff' serves kern in \['laplacedot', 'rbfdot'\], got "
                                         r"kern=precomputed\(\)"):
        DWDClassifier(kernel="precomputed", approx="rff").fit(K, y)
    fitted = DWDClassifier(lambd=0.05, kernel="precomputed").fit(K[:60, :60], y[:60])
    with pytest.raises(ValueError, match="X has 5 features, but DWDClassifier is expecting 60 features"):
        fitted.predict(X[60:])
    with pytest.raises(ValueError) as info:
        DWDClassifier(kernel="sigmoid").fit(X, y)
    assert str(info.value) == ("kernel must be one of ['linear', 'rbf', 'laplace', 'poly', 'bessel', 'anova', "
                               "'spline', 'precomputed'], a function kernel(X, Y) or a kernel object from "
                               "kerndwd.kernels, got 'sigmoid'")
