"""Kernel approximations: Nystrom features (approx="nystroem") and random
Fourier features (approx="rff") as designs of the engine.

What is checked: Nystrom with every training row as a landmark is the exact
kernel fit; random features approach the exact fit at the Monte-Carlo rate
over independent draws; the Laplace kernel's Cauchy frequencies reproduce
kernlab's Euclidean Laplace kernel; float32 storage changes the fit only at
float32 rounding; fitted paths and estimators pickle without the feature
matrix; each cross-validation fold fits its own map, exactly as a fit on the
fold's rows would; no kernel matrix larger than n x m is ever formed; and bad
options are refused by name.
"""

import pickle
from unittest import mock

import numpy as np
import pytest

import kerndwd
from kerndwd.engine.forms import FeatureMatrixForm
from kerndwd.engine.feature_maps import (FourierMap, NystroemMap, kmeanspp_landmarks,
                                     laplace_frequencies, leverage_landmarks, rbf_frequencies, uniform_landmarks)

TIGHT = dict(stop="kkt", eps=1e-10)


def _xor(n, seed=0, noise=0.3):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, 2))
    y = np.where(X[:, 0] * X[:, 1] + noise * rng.standard_normal(n) > 0, 1, -1)
    return X, y, rng


def _max_abs(a, b):
    return float(np.abs(np.asarray(a) - np.asarray(b)).max())


# --------------------------------------------------------------------------
# Nystrom with all the training rows is the exact kernel fit
# --------------------------------------------------------------------------
@pytest.mark.parametrize("kern, weighted", [(kerndwd.rbfdot(0.7), False), (kerndwd.rbfdot(0.7), True),
                                            (kerndwd.laplacedot(0.5), False), (kerndwd.polydot(2, 0.5, 1.0), False)],
                         ids=["rbf", "rbf-weighted", "laplace", "poly"])
def test_nystroem_with_every_training_row_as_landmark_is_the_exact_fit(kern, weighted):
    X, y, rng = _xor(90)
    wt = rng.uniform(0.5, 2.0, y.size) if weighted else None
    lam = [0.1, 0.01, 0.001]
    exact = kerndwd.fit(X, y, lam, kern=kern, wt=wt, **TIGHT)
    nys = kerndwd.fit(X, y, lam, kern=kern, wt=wt, approx="nystroem", n_components=X.shape[0], random_state=0,
                      **TIGHT)
    assert exact.jerr == 0 and nys.jerr == 0
    assert nys.predictor.coef_space == "features"
    # the landmarks are the training rows themselves, each once
    landmarks = nys.predictor.feature_map.landmarks
    np.testing.assert_array_equal(np.sort(landmarks, axis=0), np.sort(X, axis=0))
    assert np.unique(landmarks, axis=0).shape[0] == X.shape[0]
    assert _max_abs(nys.decision_function(X), exact.decision_function(X)) <= 1e-6
    newx = rng.standard_normal((40, 2))
    # at new rows both are the same RKHS function, but the exact fit's alpha is
    # determined only up to rounding along eigenvectors of K with eigenvalues
    # near 1e-16 e_max (the Nystrom map drops those): 1e-5 there
    assert _max_abs(nys.decision_function(newx), exact.decision_function(newx)) <= 1e-5
    np.testing.assert_allclose(nys.objective, exact.objective, rtol=1e-8)


def test_nystroem_map_reproduces_the_kernel_on_its_landmarks_and_drops_rounding_eigenvalues():
    X, _, _ = _xor(60)
    kern = kerndwd.rbfdot(0.2)  # smooth: K has eigenvalues far below the rounding level
    fmap = NystroemMap(kern, X)
    Phi = fmap.transform(X)
    K = kern(X)
    assert fmap.n_components < X.shape[0]
    assert fmap.eigenvalues.min() > 60 * np.finfo(float).eps * fmap.eigenvalues.max()
    assert np.all(np.diff(fmap.eigenvalues) <= 0)
    assert _max_abs(Phi @ Phi.T, K) <= 1e-10
    # features of the landmarks are orthogonal with squared norms e_j
    np.testing.assert_allclose(Phi.T @ Phi, np.diag(fmap.eigenvalues), atol=1e-8 * fmap.eigenvalues[0])


# --------------------------------------------------------------------------
# random features converge to the exact fit
# --------------------------------------------------------------------------
@pytest.mark.parametrize("kern", [kerndwd.rbfdot(0.7), kerndwd.laplacedot(0.7)], ids=["rbf", "laplace"])
def test_random_features_approach_the_exact_fit_at_the_monte_carlo_rate(kern):
    """Over 6 independent draws per m, the mean of the largest error of the
    decision values (relative to their largest value) falls with m, by at
    least a quarter for each four-fold m (Monte-Carlo rate: a half), and stays
    below 4 / sqrt(m) (measured: 1.7 / sqrt(m) to 2.3 / sqrt(m)).  A gradient
    tolerance of 1e-7 leaves optimisation errors far below these."""
    X, y, rng = _xor(80, seed=2)
    newx = rng.standard_normal((40, 2))
    lam = [0.1]
    settings = dict(stop="kkt", eps=1e-7)
    exact = kerndwd.fit(X, y, lam, kern=kern, **settings)
    both = np.vstack([X, newx])
    f_exact = exact.decision_function(both)
    scale = np.abs(f_exact).max()
    sizes = [16, 64, 256]
    mean_error = []
    for m in sizes:
        errs = []
        for seed in range(6):
            path = kerndwd.fit(X, y, lam, kern=kern, approx="rff", n_components=m, random_state=seed, **settings)
            errs.append(_max_abs(path.decision_function(both), f_exact) / scale)
        mean_error.append(np.mean(errs))
    mean_error = np.array(mean_error)
    assert np.all(np.diff(mean_error) < 0), mean_error
    # four times the features: the error roughly halves (Monte-Carlo rate m^-1/2)
    assert np.all(mean_error[1:] / mean_error[:-1] < 0.75), mean_error
    assert np.all(mean_error <= 4.0 / np.sqrt(sizes)), mean_error * np.sqrt(sizes)


@pytest.mark.parametrize("kern, sampler", [(kerndwd.rbfdot(0.8), rbf_frequencies),
                                           (kerndwd.laplacedot(0.8), laplace_frequencies)], ids=["rbf", "laplace"])
def test_sampled_frequencies_reproduce_the_kernel(kern, sampler):
    """E[phi(x)'phi(y)] = k(x, y): with m = 200000 features every entry is within
    5 standard errors (each term of the average has variance <= 1)."""
    rng = np.random.default_rng(5)
    X = rng.standard_normal((6, 3))
    m = 200_000
    fmap = FourierMap(sampler(kern.sigma, 3, m, rng), rng.uniform(0, 2 * np.pi, m))
    Phi = fmap.transform(X)
    assert _max_abs(Phi @ Phi.T, kern(X)) <= 5.0 / np.sqrt(m)


def test_laplace_frequencies_are_multivariate_cauchy():
    """The norm of w / sigma has the distribution of |g| / |h| (g ~ N(0, I_p),
    h ~ N(0, 1)): for p = 1 a standard Cauchy, whose median of |w| / sigma is 1
    and whose quartiles of w / sigma are -1 and 1."""
    rng = np.random.default_rng(1)
    w = laplace_frequencies(2.5, 1, 400_000, rng)[0] / 2.5
    assert abs(np.median(np.abs(w)) - 1.0) < 0.01
    np.testing.assert_allclose(np.quantile(w, [0.25, 0.75]), [-1.0, 1.0], atol=0.015)


# --------------------------------------------------------------------------
# float32 storage
# --------------------------------------------------------------------------
@pytest.mark.parametrize("approx", ["nystroem", "rff"])
def test_float32_features_agree_with_float64_to_float32_rounding(approx):
    """Storing Phi in float32 perturbs it by about 6e-8 relative; the fitted
    decision values move by less than 1e-5 of their largest value (measured:
    about 2e-8)."""
    X, y, rng = _xor(300, seed=4)
    lam = [0.1, 0.01, 0.001]
    kw = dict(kern=kerndwd.rbfdot(0.7), approx=approx, n_components=60, random_state=1, **TIGHT)
    f64 = kerndwd.fit(X, y, lam, **kw)
    f32 = kerndwd.fit(X, y, lam, dtype="float32", **kw)
    newx = rng.standard_normal((50, 2))
    d64 = f64.decision_function(newx)
    assert _max_abs(f32.decision_function(newx), d64) <= 1e-5 * np.abs(d64).max()
    np.testing.assert_allclose(f32.objective, f64.objective, rtol=1e-6)


def test_feature_matrix_form_matches_dense_products_in_any_blocking():
    rng = np.random.default_rng(3)
    Phi32 = rng.standard_normal((1001, 7)).astype(np.float32)
    Phi = Phi32.astype(float)
    Z = np.hstack([np.ones((1001, 1)), Phi])
    coef, z, w = rng.standard_normal(8), rng.standard_normal(1001), rng.uniform(0.5, 2, 1001)
    for B in (Phi, Phi32):
        for threads, rows in ((1, None), (2, 64), (3, 100)):
            form = FeatureMatrixForm(B, n_threads=threads, block_rows=rows)
            np.testing.assert_allclose(form.zmul(coef), Z @ coef, rtol=1e-12, atol=1e-12)
            np.testing.assert_allclose(form.ztmul(z), Z.T @ z, rtol=1e-12, atol=1e-11)
            np.testing.assert_allclose(form.gram(), Z.T @ Z, rtol=1e-12, atol=1e-10)
            np.testing.assert_allclose(form.gram(w), Z.T @ (w[:, None] * Z), rtol=1e-12, atol=1e-10)
            np.testing.assert_allclose(form.weighted_sq_norms(w), (Z * Z).T @ w, rtol=1e-12)
            assert form.B is B  # stored as given: no float64 copy, no [1, Phi]


# --------------------------------------------------------------------------
# what a fit stores, pickling, memory
# --------------------------------------------------------------------------
@pytest.mark.parametrize("approx", ["nystroem", "rff"])
def test_a_fitted_path_pickles_small_and_predicts_identically(approx):
    X, y, rng = _xor(4000, seed=6)
    path = kerndwd.fit(X, y, [0.1, 0.01], kern=kerndwd.rbfdot(0.7), approx=approx, n_components=40,
                       random_state=0)
    blob = pickle.dumps(path)
    # the map (landmarks and projection, or frequencies and phases), not the n x m features
    assert len(blob) < 4000 * 40 * 8 / 10
    clone = pickle.loads(blob)
    newx = rng.standard_normal((300, 2))
    np.testing.assert_array_equal(clone.decision_function(newx), path.decision_function(newx))
    np.testing.assert_array_equal(clone.predict(newx), path.predict(newx))


def test_no_kernel_matrix_beyond_n_by_m_is_formed():
    X, y, _ = _xor(1500, seed=7)
    kern = kerndwd.rbfdot(0.7)
    m = 30
    shapes = []
    original = type(kern).__call__

    def recording(self, x, z=None):
        shapes.append((np.shape(x)[0], np.shape(x if z is None else z)[0]))
        return original(self, x, z)

    with mock.patch.object(type(kern), "__call__", recording):
        for landmarks in ("uniform", "kmeans++", "leverage"):
            path = kerndwd.fit(X, y, [0.1], kern=kern, approx="nystroem", n_components=m, landmarks=landmarks,
                               random_state=0)
            path.predict(X)
    assert shapes
    assert max(a * b for a, b in shapes) <= X.shape[0] * m


def test_fit_predict_and_the_estimator_leave_the_input_untouched():
    pytest.importorskip("sklearn")
    X, y, _ = _xor(200, seed=8)
    X0, y0 = X.copy(), y.copy()
    scratch = X.copy()
    path = kerndwd.fit(scratch, y, [0.05], kern=kerndwd.rbfdot(0.7), approx="nystroem", n_components=20,
                       random_state=0)
    before = path.decision_function(X0)
    scratch += 1.0  # the map holds its own landmarks
    np.testing.assert_array_equal(path.decision_function(X0), before)
    est = kerndwd.DWDClassifier(kernel="rbf", gamma=0.7, approx="rff", n_components=30, random_state=0).fit(X, y)
    est.predict(X)
    np.testing.assert_array_equal(X, X0)
    np.testing.assert_array_equal(y, y0)


# --------------------------------------------------------------------------
# landmark choice
# --------------------------------------------------------------------------
def _cluster_and_outliers(seed):
    rng = np.random.default_rng(seed)
    X = np.vstack([0.1 * rng.standard_normal((600, 2)), [5.0, 5.0] + 0.1 * rng.standard_normal((6, 2))])
    return X, rng


@pytest.mark.parametrize("method", [uniform_landmarks, kmeanspp_landmarks, leverage_landmarks])
def test_landmark_methods_return_distinct_training_rows(method):
    X, rng = _cluster_and_outliers(0)
    rows = method(X, kerndwd.rbfdot(1.0), 25, rng)
    assert rows.shape == (25,) and np.unique(rows).size == 25
    assert rows.min() >= 0 and rows.max() < X.shape[0]


def test_kmeanspp_and_leverage_landmarks_find_a_small_far_cluster_that_uniform_misses():
    """Six of 606 rows sit far from the rest.  Twelve uniform landmarks miss
    them with probability about 0.89; k-means++ (D^2 sampling) and ridge
    leverage scores, which weight rows the other landmarks explain badly,
    find them in every one of 10 draws, and approximate K better."""
    kern = kerndwd.rbfdot(1.0)
    found = {"uniform": 0, "kmeans++": 0, "leverage": 0}
    residual = {k: [] for k in found}
    for seed in range(10):
        X, _ = _cluster_and_outliers(seed)
        K = kern(X)
        for name, method in (("uniform", uniform_landmarks), ("kmeans++", kmeanspp_landmarks),
                             ("leverage", leverage_landmarks)):
            rows = method(X, kern, 12, np.random.default_rng(seed))
            found[name] += bool((rows >= 600).any())
            Phi = NystroemMap(kern, X[rows]).transform(X)
            residual[name].append(np.trace(K - Phi @ Phi.T))
    assert found["kmeans++"] == 10 and found["leverage"] == 10
    assert found["uniform"] <= 5
    assert np.mean(residual["kmeans++"]) < 0.5 * np.mean(residual["uniform"])
    assert np.mean(residual["leverage"]) < 0.5 * np.mean(residual["uniform"])


# --------------------------------------------------------------------------
# bad input
# --------------------------------------------------------------------------
def test_bad_options_are_refused_by_name():
    X, y, _ = _xor(50)
    rbf = kerndwd.rbfdot(1.0)
    for bad in (0, -3):
        for approx in ("nystroem", "rff"):
            with pytest.raises(ValueError, match="n_components must be at least 1"):
                kerndwd.fit(X, y, [0.1], kern=rbf, approx=approx, n_components=bad)
    with pytest.raises(TypeError, match="n_components must be an integer"):
        kerndwd.fit(X, y, [0.1], kern=rbf, approx="nystroem", n_components=2.5)
    with pytest.raises(ValueError, match="n_components=51 exceeds the number of rows of the fit \\(50\\)"):
        kerndwd.fit(X, y, [0.1], kern=rbf, approx="nystroem", n_components=51)
    # random features may outnumber the rows
    assert kerndwd.fit(X, y, [0.1], kern=rbf, approx="rff", n_components=51, random_state=0).alpha.shape == (52, 1)
    for kern in (kerndwd.polydot(2), kerndwd.vanilladot(), kerndwd.besseldot()):
        with pytest.raises(ValueError, match=f"approx='rff' serves kern in .*got kern={kern.name}"):
            kerndwd.fit(X, y, [0.1], kern=kern, approx="rff")
    with pytest.raises(TypeError, match="approx='nystroem' does not accept landmark \\(its options: .*landmarks"):
        kerndwd.fit(X, y, [0.1], kern=rbf, approx="nystroem", landmark="uniform")
    with pytest.raises(TypeError, match="approx='rff' does not accept landmarks"):
        kerndwd.fit(X, y, [0.1], kern=rbf, approx="rff", landmarks="uniform")
    with pytest.raises(ValueError, match="landmarks must be one of"):
        kerndwd.fit(X, y, [0.1], kern=rbf, approx="nystroem", landmarks="random")
    with pytest.raises(ValueError, match="dtype must be one of \\['float64', 'float32'\\]"):
        kerndwd.fit(X, y, [0.1], kern=rbf, approx="rff", dtype="float16")
    with pytest.raises(ValueError, match="chunk_size must be at least 1"):
        kerndwd.fit(X, y, [0.1], kern=rbf, approx="rff", chunk_size=0)
    with pytest.raises(TypeError, match="random_state must be"):
        kerndwd.fit(X, y, [0.1], kern=rbf, approx="rff", random_state="seed")


def test_a_fold_too_small_for_n_components_is_refused_before_any_fit():
    X, y, _ = _xor(60)
    with pytest.raises(ValueError, match="n_components=50 exceeds the number of rows of the fit \\(40\\)"):
        kerndwd.cv(X, y, [0.1], kern=kerndwd.rbfdot(1.0), nfolds=3, random_state=0, approx="nystroem",
                   n_components=50)


def test_estimator_refuses_a_kernel_rff_cannot_approximate():
    pytest.importorskip("sklearn")
    X, y, _ = _xor(50)
    with pytest.raises(ValueError, match="approx='rff' serves kern in"):
        kerndwd.DWDClassifier(kernel="poly", approx="rff").fit(X, y)
    with pytest.raises(TypeError, match="does not accept tolerance"):
        kerndwd.DWDClassifier(kernel="rbf", approx="nystroem", design_options={"tolerance": 1}).fit(X, y)


# --------------------------------------------------------------------------
# the faces: cv, tune and the estimators
# --------------------------------------------------------------------------
@pytest.mark.parametrize("approx", ["nystroem", "rff"])
def test_cv_fits_each_fold_its_own_map_exactly_as_a_fit_on_the_fold(approx):
    X, y, _ = _xor(150, seed=9)
    lam = [0.1, 0.01, 0.001]
    kern = kerndwd.rbfdot(0.7)
    res = kerndwd.cv(X, y, lam, kern=kern, nfolds=3, random_state=11, approx=approx, n_components=30)
    assert res.fit_args["approx"] == approx and res.fit_args["n_components"] == 30
    seed = res.fit_args["random_state"]
    maps = []
    for k in range(1, 4):
        train, test = res.foldid != k, res.foldid == k
        fold = kerndwd.fit(X[train], y[train], lam, **res.fit_args)
        assert _max_abs(fold.decision_function(X[test]), res.predmat[test]) <= 1e-10
        maps.append(fold.predictor.feature_map)
        if approx == "nystroem":  # landmarks from the fold's training rows only
            held_out = {tuple(r) for r in X[test]}
            assert not any(tuple(r) in held_out for r in fold.predictor.feature_map.landmarks)
    if approx == "nystroem":
        assert not np.array_equal(maps[0].landmarks, maps[1].landmarks)
    assert isinstance(seed, int)
    again = kerndwd.cv(X, y, lam, kern=kern, nfolds=3, random_state=11, approx=approx, n_components=30)
    np.testing.assert_array_equal(again.predmat, res.predmat)


@pytest.mark.processes
def test_cv_folds_in_parallel_give_the_same_numbers():
    pytest.importorskip("joblib")
    X, y, _ = _xor(120, seed=12)
    kw = dict(kern=kerndwd.rbfdot(0.7), nfolds=3, random_state=2, approx="nystroem", n_components=20)
    serial = kerndwd.cv(X, y, [0.1, 0.01], **kw)
    parallel = kerndwd.cv(X, y, [0.1, 0.01], n_jobs=2, **kw)
    np.testing.assert_array_equal(parallel.predmat, serial.predmat)


def test_tune_fits_each_fold_and_q_on_the_folds_own_map():
    X, y, _ = _xor(120, seed=13)
    lam = [0.1, 0.01]
    kern = kerndwd.rbfdot(0.7)
    res = kerndwd.tune(X, y, lam, qvals=(0.5, 2.0), kern=kern, nfolds=3, random_state=4, approx="rff",
                       n_components=25, dtype="float32", **TIGHT)
    for iq, q in enumerate((0.5, 2.0)):
        args = res.cvres[iq].fit_args
        assert args["qval"] == q and args["dtype"] == "float32"
        for k in range(1, 4):
            train, test = res.foldid != k, res.foldid == k
            # tune's folds use tunedwd's ridge on the majoriser (fit's is smaller): other
            # iterates, the same optimum
            fold = kerndwd.fit(X[train], y[train], lam, **args)
            assert _max_abs(fold.decision_function(X[test]), res.cvres[iq].predmat[test]) <= 1e-6


def test_the_estimators_take_approx_n_components_and_design_options():
    pytest.importorskip("sklearn")
    from kerndwd import DWDClassifier, DWDClassifierCV

    X, y, rng = _xor(200, seed=14)
    labels = np.where(y > 0, "b", "a")
    newx = rng.standard_normal((30, 2))
    est = DWDClassifier(lambd=0.01, kernel="rbf", gamma=0.7, approx="nystroem", n_components=40, random_state=3,
                        design_options={"landmarks": "kmeans++", "dtype": "float32"}).fit(X, labels)
    ref = kerndwd.fit(X, labels, [0.01], kern=kerndwd.rbfdot(0.7), approx="nystroem", n_components=40,
                      landmarks="kmeans++", dtype="float32", random_state=3, stop="kkt", eps=1e-10)
    assert est.dual_coef_.shape == (1, 40)
    assert _max_abs(est.decision_function(newx), ref.decision_function(newx)[:, 0]) <= 1e-8
    clone = pickle.loads(pickle.dumps(est))
    np.testing.assert_array_equal(clone.decision_function(newx), est.decision_function(newx))
    np.testing.assert_array_equal(clone.predict(newx), est.predict(newx))
    # three classes: one map serves every one-vs-rest problem
    y3 = np.digitize(X[:, 0], [-0.5, 0.5])
    est3 = DWDClassifier(lambd=0.01, kernel="laplace", gamma=0.5, approx="rff", n_components=50,
                         random_state=0).fit(X, y3)
    assert est3.decision_function(newx).shape == (30, 3)
    # cross-validation: each fold is the fit of its rows with the estimator's seed
    lam = [0.1, 0.01, 0.001]
    cvest = DWDClassifierCV(lambdas=lam, kernel="rbf", gamma=0.7, cv=3, random_state=5, approx="rff",
                            n_components=30).fit(X, labels)
    foldid = cvest.cv_results_["foldid"]
    fold_errors = []
    for k in range(1, 4):
        train, test = foldid != k, foldid == k
        fold = kerndwd.fit(X[train], labels[train], lam, kern=kerndwd.rbfdot(0.7), approx="rff", n_components=30,
                           random_state=5, stop="kkt")  # the estimator's cv_stop
        fold_errors.append((fold.predict(X[test]) != labels[test][:, None]).mean(axis=0))
    np.testing.assert_allclose(cvest.cv_results_["cvm"][0], np.mean(fold_errors, axis=0), rtol=1e-12)
    assert cvest.best_estimator_.dual_coef_.shape == (1, 30)
