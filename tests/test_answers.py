"""Answers that were once silently wrong (NaN predictions, dropped classes, huge weights),
the state a path keeps (its own copy of the rows, one fold at a time), and the
probabilities of a path and of the estimator."""

import pickle
import tracemalloc

import numpy as np
import pytest

import kerndwd


from test_inputs import data  # noqa: F401 (the 40 x 3 rows these tests share)


LIN = kerndwd.vanilladot()


# --------------------------------------------------------------------------
# answers that were silently wrong
# --------------------------------------------------------------------------
def test_prediction_below_a_repeated_smallest_lambda_is_finite_and_warned(data):
    X, y = data
    path = kerndwd.fit(X, y, [1.0, 0.1, 0.1], kern=kerndwd.rbfdot(0.5))
    with pytest.warns(UserWarning, match="outside the fitted path"):
        link = path.predict(X, "link", lambdas=[0.01, 0.05])
    assert np.isfinite(link).all()
    np.testing.assert_array_equal(link[:, 0], path.predict(X, "link")[:, 1])  # the end column
    mid = path.predict(X, "link", lambdas=[0.55])[:, 0]
    ends = path.predict(X, "link")
    np.testing.assert_allclose(mid, 0.5 * ends[:, 0] + 0.5 * ends[:, 1], rtol=1e-12, atol=1e-14)


def test_negative_class_weight_is_refused_not_a_dropped_class():
    pytest.importorskip("sklearn")
    from kerndwd import DWDClassifier

    rng = np.random.default_rng(0)
    X = rng.standard_normal((60, 2))
    y = np.digitize(X[:, 0], [-0.4, 0.4])
    with pytest.raises(ValueError, match="class_weight must be non-negative"):
        DWDClassifier(class_weight={0: 1.0, 1: -1.0, 2: 1.0}).fit(X, y)
    with pytest.raises(ValueError, match=r"give class\(es\) \[.*1.*\] no positive weight"):
        DWDClassifier(class_weight={0: 1.0, 1: 0.0, 2: 1.0}).fit(X, y)


def test_huge_sample_weights_give_the_unweighted_model():
    pytest.importorskip("sklearn")
    from kerndwd import DWDClassifier

    rng = np.random.default_rng(1)
    X = rng.standard_normal((50, 2))
    y = np.where(X[:, 0] > 0.1, 1, 0)
    ref = DWDClassifier(lambd=0.1).fit(X, y, sample_weight=np.ones(50))
    big = DWDClassifier(lambd=0.1).fit(X, y, sample_weight=np.full(50, 1e300))
    assert np.abs(ref.coef_).max() > 0.1  # not the all-zero model
    np.testing.assert_allclose(big.decision_function(X), ref.decision_function(X), rtol=1e-9, atol=1e-9)


# --------------------------------------------------------------------------
# state and resources
# --------------------------------------------------------------------------
def test_a_path_owns_its_training_rows(data):
    X, y = data
    X = X.copy()
    newx = X[:5].copy()
    path = kerndwd.fit(X, y, [0.1], kern=kerndwd.rbfdot(0.5))
    before = path.predict(newx, "link")
    clone = pickle.loads(pickle.dumps(path))
    X *= 7.0  # the caller reuses the array
    np.testing.assert_array_equal(path.predict(newx, "link"), before)
    np.testing.assert_array_equal(clone.predict(newx, "link"), before)


def test_leave_one_out_tune_holds_one_fold_at_a_time():
    """tune streams the folds: one fold's kernel block and eigenbasis at a time,
    not n of them (n folds x n^2 doubles would be 80 x 51 kB here)."""
    rng = np.random.default_rng(2)
    n = 80
    X = rng.standard_normal((n, 2))
    y = np.where((X**2).sum(axis=1) > 1.4, 1, -1)
    tracemalloc.start()
    kerndwd.tune(X, y, [0.5], qvals=(1.0, 2.0), kern=kerndwd.rbfdot(1.0), foldid=np.arange(1, n + 1))
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert peak < 12 * n * n * 8  # a few n x n matrices, not n of them


def test_loaders_hash_a_candidate_file_in_chunks(tmp_path):
    from kerndwd import datasets

    big = tmp_path / "sonar.csv"
    with open(big, "wb") as fh:
        fh.write(b"x" * (32 << 20))  # 32 MB of the wrong content
    tracemalloc.start()
    with pytest.raises(ValueError, match="sha256"):
        datasets.load_sonar(data_home=tmp_path, download=False)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert peak < 4 << 20


# --------------------------------------------------------------------------
# probabilities
# --------------------------------------------------------------------------
def test_probabilities_of_the_path(data):
    X, y = data
    lam = [1.0, 0.1, 0.01]
    path = kerndwd.fit(X, y, lam, kern=kerndwd.rbfdot(0.5), qval=2.0)
    link = path.predict(X, "link")
    prob = path.predict(X, "prob")
    np.testing.assert_array_equal(prob, kerndwd.conditional_probability(link, 2.0))
    assert ((prob >= 0) & (prob <= 1)).all()
    res = kerndwd.cv(X, y, lam, kern=kerndwd.rbfdot(0.5), qval=2.0, nfolds=4, random_state=0)
    cal = path.predict(X, "prob", calibration=res)
    # Platt's sigmoid is increasing in the decision value, column by column
    for j in range(3):
        order = np.argsort(link[:, j])
        assert (np.diff(cal[order, j]) >= 0).all()
    with pytest.raises(ValueError, match="not among the cross-validated lambdas"):
        path.predict(X, "prob", lambdas=[0.5], calibration=res)
    with pytest.raises(ValueError, match="calibration is used only with type='prob'"):
        path.predict(X, "link", calibration=res)


def test_inverse_of_the_population_minimiser_is_exact_outside_the_band():
    eta = np.linspace(0.02, 0.98, 49)
    eta = eta[np.abs(eta - 0.5) > 1e-9]
    for q in (0.5, 1.0, 4.0):
        f = kerndwd.population_minimizer(eta, q)
        np.testing.assert_allclose(kerndwd.conditional_probability(f, q), eta, atol=1e-12)
        t = q / (q + 1.0)
        np.testing.assert_array_equal(kerndwd.conditional_probability([-t, 0.0, 0.3 * t, t], q), 0.5)


def test_estimator_probabilities_agree_with_its_labels():
    pytest.importorskip("sklearn")
    from kerndwd import DWDClassifier, DWDClassifierCV

    rng = np.random.default_rng(3)
    X = rng.standard_normal((120, 2))
    y3 = np.digitize(X[:, 0] + 0.3 * rng.standard_normal(120), [-0.5, 0.5])
    for y in (np.where(y3 > 0, "b", "a"), y3):
        est = DWDClassifier(lambd=0.05, kernel="rbf", probability=True, random_state=0).fit(X, y)
        P = est.predict_proba(X)
        np.testing.assert_allclose(P.sum(axis=1), 1.0, rtol=1e-12)
        np.testing.assert_array_equal(est.classes_[np.argmax(P, axis=1)], est.predict(X))
        assert not hasattr(DWDClassifier(), "predict_proba")
    cvest = DWDClassifierCV(lambdas=[0.1, 0.01], kernel="rbf", cv=3, probability=True, random_state=0).fit(X, y3)
    P = cvest.predict_proba(X)
    np.testing.assert_array_equal(cvest.classes_[np.argmax(P, axis=1)], cvest.predict(X))
