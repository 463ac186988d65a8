"""Prediction where the kernel overflows: a clear error, never NaN links or a
class read off them.

``polydot(3)`` at a new row of 1e120 gives ``(1e120 <x, x_j> + 1)^3``, about
1e360 > the largest double, so the kernel row is +-inf and ``b0 + sum_j
alpha_j k(x_j, x)`` is inf or NaN (inf - inf).  ``sign(NaN)`` would be read as
the class -1, so the predictor must refuse to return these values
(``kerndwd/engine/predictors.py`` raises ``ValueError`` naming the kernel and
``newx``).
"""

import warnings

import numpy as np
import pytest

import kerndwd

OVERFLOW = "overflow: the decision values at newx are not finite"


@pytest.fixture(scope="module")
def poly_path():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((40, 2))
    y = np.where(X[:, 0] + 0.3 * rng.standard_normal(40) > 0, 1, -1)
    path = kerndwd.fit(X, y, [0.1, 0.01], kern=kerndwd.polydot(3), stop="kkt", eps=1e-6, maxit=2000)
    # the coefficients are finite and of both signs: terms +-inf cancel to NaN
    alpha = path.alpha[1:]
    assert np.isfinite(path.alpha).all() and (alpha > 0).any() and (alpha < 0).any()
    return X, path


def huge_rows():
    return np.array([[1e120, 1e120], [-1e120, 1e120], [1e120, 0.0]])


def test_the_overflow_is_real():
    # independent of the package: the cubic kernel between such a row and an
    # ordinary one is not a finite double
    with np.errstate(over="ignore"):
        k = (1e120 * np.array([1e120, 1e120]) @ np.array([0.5, 0.3]) + 1.0) ** 3
    assert not np.isfinite(k)


@pytest.mark.parametrize("type", ["class", "link", "prob"])
def test_predict_at_huge_rows_raises_naming_the_kernel(poly_path, type):
    _, path = poly_path
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)  # no numpy overflow warning escapes instead
        with pytest.raises(ValueError, match=OVERFLOW) as info:
            path.predict(huge_rows(), type)
    assert "polydot(degree=3" in str(info.value) and "rescale newx" in str(info.value)


def test_one_huge_row_among_ordinary_ones_is_not_predicted_silently(poly_path):
    X, path = poly_path
    mixed = np.vstack([X[:5], [[1e120, -1e120]]])
    with pytest.raises(ValueError, match=OVERFLOW):
        kerndwd.predict(path, mixed, "class")
    # the ordinary rows alone still predict finite links and +-1 classes
    link = kerndwd.predict(path, X[:5], "link")
    assert np.isfinite(link).all()
    assert set(np.unique(kerndwd.predict(path, X[:5], "class"))) <= {-1.0, 1.0}


def test_the_estimator_refuses_too(poly_path):
    pytest.importorskip("sklearn")
    X, _ = poly_path
    y = np.where(X[:, 0] > 0, 1, -1)
    est = kerndwd.DWDClassifier(kernel="poly", degree=3, gamma=1.0, coef0=1.0, lambd=0.01, tol=1e-6,
                                max_iter=2000).fit(X, y)
    for method in (est.predict, est.decision_function):
        with pytest.raises(ValueError, match=OVERFLOW):
            method(huge_rows())
