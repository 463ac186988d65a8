"""No silent wrong answer: every input family either works, fails at the entry
with an error naming the argument, or warns.

Each test names the family it guards: inputs of other types (pandas,
sparse, strings), scales that overflow double precision, answers that were
silently wrong (NaN predictions, dropped classes, clamped lambdas), state
shared with the caller, and the first contact with the package.
"""

import os
import pickle
import re
import subprocess
import sys
import tracemalloc
import warnings

import numpy as np
import pytest
from scipy import sparse

import kerndwd


@pytest.fixture
def data():
    rng = np.random.default_rng(4)
    X = rng.standard_normal((40, 3))
    y = np.where(X[:, 0] + 0.5 * rng.standard_normal(40) > 0, 1, -1)
    return X, y


LIN = kerndwd.vanilladot()


# --------------------------------------------------------------------------
# pandas and other input types
# --------------------------------------------------------------------------
def test_nullable_pandas_columns_fit_like_floats(data):
    pd = pytest.importorskip("pandas")
    X, y = data
    Xi = np.round(X * 10)
    frame = pd.DataFrame({"a": pd.array(Xi[:, 0].astype(int), dtype="Int64"),
                          "b": pd.array(X[:, 1], dtype="Float64"), "c": X[:, 2]})
    ref = kerndwd.fit(np.column_stack([Xi[:, 0], X[:, 1:]]), y, [0.1], kern=LIN)
    got = kerndwd.fit(frame, y, [0.1], kern=LIN)
    np.testing.assert_array_equal(got.alpha, ref.alpha)
    with_na = frame.copy()
    with_na.loc[3, "a"] = pd.NA
    with pytest.raises(ValueError, match="X contains NaN"):
        kerndwd.fit(with_na, y, [0.1], kern=LIN)


@pytest.mark.parametrize("column", ["string", "category", "object"])
def test_text_columns_are_named(data, column):
    pd = pytest.importorskip("pandas")
    X, y = data
    frame = pd.DataFrame(X, columns=["a", "b", "c"])
    text = np.where(y > 0, "1.5", "2.5")
    frame["t"] = pd.Series(text, dtype=column) if column != "object" else text.astype(object)
    with pytest.raises(TypeError, match="non-numeric columns: t"):
        kerndwd.fit(frame, y, [0.1], kern=LIN)


def test_numeric_strings_are_refused(data):
    X, y = data
    with pytest.raises(TypeError, match="X must be numeric, got strings"):
        kerndwd.fit(X.astype(str), y, [0.1], kern=LIN)
    with pytest.raises(TypeError, match="lambdas must be a sequence of positive numbers, got strings"):
        kerndwd.fit(X, y, ["0.1", "0.01"], kern=LIN)
    with pytest.raises(TypeError, match="lambdas .* got a string"):
        kerndwd.fit(X, y, "0.1", kern=LIN)
    path = kerndwd.fit(X, y, [0.1], kern=LIN)
    with pytest.raises(TypeError, match="newx must be numeric"):
        path.predict(X.astype(str))


def test_sparse_X_fits_with_the_linear_kernel_and_is_refused_otherwise(data):
    X, y = data
    Xs = sparse.csr_matrix(np.where(np.abs(X) > 0.7, X, 0.0))
    tight = dict(kern=LIN, stop="kkt", eps=1e-10)
    sp = kerndwd.fit(Xs, y, [1.0, 0.1], **tight)
    de = kerndwd.fit(Xs.toarray(), y, [1.0, 0.1], **tight)
    np.testing.assert_allclose(sp.predict(Xs, "link"), de.predict(Xs.toarray(), "link"), atol=1e-8)
    np.testing.assert_allclose(sp.predict(Xs.toarray(), "link"), sp.predict(Xs.tocsc(), "link"), atol=1e-12)
    with pytest.raises(TypeError, match="X: sparse .* not supported .*kern=vanilladot"):
        kerndwd.fit(Xs, y, [0.1], kern=kerndwd.rbfdot(1.0))


def test_mixed_label_types_are_refused(data):
    X, _ = data
    with pytest.raises(TypeError, match="y mixes labels of different types"):
        kerndwd.fit(X, [1, "a"] * 20, [0.1], kern=LIN)
    with pytest.raises(TypeError, match="y mixes labels of different types"):
        kerndwd.fit(X, np.array([1.0, "b"] * 20, dtype=object), [0.1], kern=LIN)


# --------------------------------------------------------------------------
# scales beyond double precision: an error at the entry, naming the argument
# --------------------------------------------------------------------------
@pytest.mark.parametrize("override, exc, match", [
    (dict(qval=1e200), ValueError, "qval must lie in"),
    (dict(qval=1e-320), ValueError, "qval must lie in"),
    (dict(lambdas=[1e308]), ValueError, "lambdas must be at most"),
    (dict(X="scaled"), ValueError, "X has entries of magnitude"),
    (dict(kern=kerndwd.rbfdot(sigma=1e20)), ValueError, "kern=rbfdot\\(sigma=1e\\+20\\)"),
    (dict(kern=kerndwd.polydot(degree=1000)), ValueError, "kern=polydot\\(degree=1000.*overflows"),
    (dict(kern=kerndwd.splinedot()), ValueError, "splinedot\\(\\) on these data is not positive semi-definite"),
])
def test_scales_that_overflow_fail_at_the_entry(data, override, exc, match):
    X, y = data
    args = dict(X=X, y=y, lambdas=[0.1], kern=LIN)
    args.update(override)
    if args["X"] == "scaled" if isinstance(args["X"], str) else False:
        args["X"] = X * 1e160
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no numpy overflow warning on the way to the error
        with pytest.raises(exc, match=match):
            kerndwd.fit(**args)


def test_weights_of_any_scale_fit_the_scaled_problem(data):
    """Weights c w at lambda are the weights w at lambda / c, objective times c.
    A power-of-two c far from 1 is divided out exactly, so the two fits are
    the same to the bit; c = 1e300 fits too (it used to give an all-zero model)."""
    X, y = data
    w = np.linspace(0.5, 2.0, 40)
    kw = dict(kern=kerndwd.rbfdot(0.5), stop="kkt", eps=1e-9)
    ref = kerndwd.fit(X, y, [0.5, 0.05], wt=w, **kw)
    c = 2.0**60
    big = kerndwd.fit(X, y, [0.5 * c, 0.05 * c], wt=w * c, **dict(kw, eps=1e-9 * c))
    np.testing.assert_array_equal(big.alpha, ref.alpha)
    np.testing.assert_array_equal(big.lambda_, [0.5 * c, 0.05 * c])
    np.testing.assert_array_equal(big.objective, ref.objective * c)
    np.testing.assert_array_equal(big.kkt, ref.kkt * c)
    huge = kerndwd.fit(X, y, [0.1], wt=w * 1e300, kern=LIN)
    assert huge.jerr == 0 and np.isfinite(huge.alpha).all() and np.abs(huge.alpha[1:]).max() > 0.1


def test_weights_that_remove_a_class_are_refused(data):
    X, y = data
    with pytest.raises(ValueError, match="wt gives class -1 no positive weight"):
        kerndwd.fit(X, y, [0.1], kern=LIN, wt=(y > 0).astype(float))


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


# --------------------------------------------------------------------------
# first contact
# --------------------------------------------------------------------------
def test_module_help_prints_usage_and_runs_nothing():
    # a wide terminal, so that argparse keeps the usage on one line
    env = {**os.environ, "COLUMNS": "200"}
    out = subprocess.run([sys.executable, "-m", "kerndwd", "--help"], capture_output=True, text=True, timeout=120,
                         env=env)
    assert out.returncode == 0 and out.stderr == ""
    lines = out.stdout.splitlines()
    assert lines[0] == "usage: python -m kerndwd [-h] [--n N] [--sigma SIGMA] [--q Q] [--seed SEED]"
    # the options of kerndwd/__main__.py, each with its help text
    options = {
        r"-h, --help": "show this help message and exit",
        r"--n N": "number of simulated points (default 200)",
        r"--sigma SIGMA": "rbfdot's sigma (default 1)",
        r"--q Q": "the loss exponent q > 0 (default 1)",
        r"--seed SEED": "seed of the simulated data (default 0)",
    }
    for flag, text in options.items():
        assert any(re.fullmatch(rf"\s+{re.escape(flag)}\s+{re.escape(text)}", line) for line in lines), flag
    # the description, and nothing of the demo: no intro, no path, no table
    assert "a first DWD fit on simulated data" in out.stdout
    assert "DWDPath" not in out.stdout and "training error" not in out.stdout and "MM passes" not in out.stdout


def test_demo_explains_the_gradient_norm(capsys):
    from kerndwd.__main__ import main

    path, tight = main(["--n", "60"])
    text = capsys.readouterr().out
    assert "||grad||" in text and 'stop="kkt"' in text
    assert (tight.kkt <= 1e-8).all() and path.jerr == 0


def test_validation_writes_to_a_temporary_folder_by_default(monkeypatch, tmp_path):
    import validation.__main__ as vmain
    from validation import checks

    for name in ("check_fixtures", "check_port_vs_cone", "check_socp", "check_default_eps", "check_live_r"):
        monkeypatch.setattr(checks, name, lambda *a, **k: [])
    monkeypatch.setattr(checks, "grid_data", lambda: None)
    monkeypatch.setattr(checks, "solve_grid", lambda *a, **k: None)
    written = []
    monkeypatch.setattr(vmain, "write_reports", lambda rows, out, *a: written.append(out) or (out / "r.md", out))
    assert vmain.main(["--quiet"]) == 0
    committed = vmain.Path(vmain.__file__).resolve().parent
    assert written[-1] != committed and "kerndwd-validation-" in str(written[-1])
    vmain.main(["--quiet", "--out", str(tmp_path)])
    assert written[-1] == tmp_path
    vmain.main(["--quiet", "--refresh"])
    assert written[-1] == committed
