"""Input families at the entry: pandas columns (nullable, text, numeric strings), sparse rows,
mixed label types, and scales beyond double precision; each fits, or fails at the entry
with an error naming the argument."""

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
    tight = dict(kern=LIN, stop="kkt", eps=1e-8)  # optimal columns: R's rule would warn at this lambda
    ref = kerndwd.fit(np.column_stack([Xi[:, 0], X[:, 1:]]), y, [0.1], **tight)
    got = kerndwd.fit(frame, y, [0.1], **tight)
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


def test_weights_of_any_scale_fit_the_scaled_problem(data, r_rule_fit):
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
    huge = r_rule_fit(X, y, [0.1], wt=w * 1e300, kern=LIN)
    assert huge.jerr == 0 and np.isfinite(huge.alpha).all() and np.abs(huge.alpha[1:]).max() > 0.1


def test_weights_that_remove_a_class_are_refused(data):
    X, y = data
    with pytest.raises(ValueError, match="wt gives class -1 no positive weight"):
        kerndwd.fit(X, y, [0.1], kern=LIN, wt=(y > 0).astype(float))


def test_weights_whose_products_underflow_everywhere_are_refused_by_name():
    """``sample_weight`` times ``class_weight`` below the smallest double on every
    row leaves no sample of positive weight: a ``ValueError`` naming both,
    not an ``IndexError`` from the message that names the one class left
    (found by the randomized property step, seed 1619534692)."""
    X = np.zeros((4, 1))
    y = np.array([1, -1, -1, -1])
    clf = kerndwd.DWDClassifier(kernel="linear", class_weight={1: 1e-300, -1: 1.0})
    with pytest.raises(ValueError, match="sample_weight and class_weight leave no sample of positive weight"):
        clf.fit(X, y, sample_weight=np.array([1e-24, 0.0, 0.0, 0.0]))
    with pytest.raises(ValueError, match="sample_weight must have at least one positive entry"):
        kerndwd.DWDClassifier(kernel="linear").fit(X, y, sample_weight=np.zeros(4))
