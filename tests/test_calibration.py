"""Platt scaling (:mod:`kerndwd.calibration`) against its definition,
scikit-learn's sigmoid calibration, and the true class probability.

The definition, written out here: with ``N+`` and ``N-`` the class counts,
targets ``t_i = (N+ + 1)/(N+ + 2)`` for ``y_i = +1`` and ``1/(N- + 2)`` for
``y_i = -1`` (Platt 1999's smoothing), ``(a, b)`` minimises

    F(a, b) = sum_i t_i log(1 + exp(z_i)) + (1 - t_i) log(1 + exp(-z_i)),  z_i = a f_i + b,

the log-loss of ``P(+1 | f) = 1 / (1 + exp(a f + b))``; ``centred=True``
fixes ``b = 0``.
"""

import numpy as np
import pytest
from scipy.optimize import minimize

import kerndwd
from kerndwd.calibration import fit_platt, platt_probability
from kerndwd.datasets import make_mixture


def smoothed_targets(y):
    n_pos = np.sum(y > 0)
    n_neg = y.size - n_pos
    return np.where(y > 0, (n_pos + 1.0) / (n_pos + 2.0), 1.0 / (n_neg + 2.0))


def platt_loss(ab, f, t):
    z = ab[0] * f + ab[1]
    return np.sum(t * np.logaddexp(0.0, z) + (1.0 - t) * np.logaddexp(0.0, -z))


def platt_gradient(ab, f, t):
    # dF/dz_i = t_i - 1 / (1 + exp(z_i))
    z = ab[0] * f + ab[1]
    r = t - 1.0 / (1.0 + np.exp(z))
    return np.array([f @ r, r.sum()])


def sigmoid(f, a, b):
    return 1.0 / (1.0 + np.exp(a * f + b))


def noisy_decisions(n, scale, seed, separable=False):
    rng = np.random.default_rng(seed)
    f = scale * rng.standard_normal(n)
    eta = 1.0 / (1.0 + np.exp(-1.7 * f / scale + 0.3))
    y = np.where(rng.random(n) < eta, 1, -1)
    if separable:
        y = np.where(f > 0, 1, -1)
    return f, y


CASES = [(50, 1.0, 0, False), (300, 3.0, 1, False), (1000, 0.5, 2, False), (2000, 10.0, 3, False),
         (40, 2.0, 4, True)]


# ------------------------------------------------------------------- (a) scikit-learn
@pytest.mark.parametrize("n, scale, seed, separable", CASES)
def test_probabilities_agree_with_scikit_learns_sigmoid_calibration(n, scale, seed, separable):
    calibration = pytest.importorskip("sklearn.calibration")
    f, y = noisy_decisions(n, scale, seed, separable)
    a, b = fit_platt(f, y)
    # scikit-learn: the same sigmoid 1 / (1 + exp(A f + B)) and the same
    # smoothed targets, minimised by L-BFGS (gtol 1e-6)
    A, B = calibration._sigmoid_calibration(f, y)
    grid = np.linspace(f.min(), f.max(), 201)
    np.testing.assert_allclose(platt_probability(grid, a, b), sigmoid(grid, A, B), atol=1e-4, rtol=0)
    np.testing.assert_allclose(platt_probability(f, a, b), sigmoid(f, A, B), atol=1e-4, rtol=0)


def test_the_package_sigmoid_agrees_with_calibrated_classifier_cv():
    sklearn = pytest.importorskip("sklearn")
    from sklearn.calibration import CalibratedClassifierCV
    from sklearn.base import BaseEstimator, ClassifierMixin

    class Fixed(ClassifierMixin, BaseEstimator):
        """A fitted classifier whose decision value is the first column."""

        def fit(self, X, y):
            self.classes_ = np.array([-1, 1])
            return self

        def decision_function(self, X):
            return np.asarray(X)[:, 0]

        def predict(self, X):
            return np.where(self.decision_function(X) > 0, 1, -1)

    try:
        from sklearn.frozen import FrozenEstimator
    except ImportError:  # scikit-learn < 1.6
        pytest.skip(f"no FrozenEstimator in scikit-learn {sklearn.__version__}")
    f, y = noisy_decisions(400, 2.0, 7)
    X = f[:, None]
    cal = CalibratedClassifierCV(FrozenEstimator(Fixed().fit(X, y)), method="sigmoid").fit(X, y)
    a, b = fit_platt(f, y)
    np.testing.assert_allclose(platt_probability(f, a, b), cal.predict_proba(X)[:, 1], atol=1e-4, rtol=0)


# ------------------------------------------------------------------- (b) the optimum
@pytest.mark.parametrize("n, scale, seed, separable", CASES)
def test_the_fit_is_a_stationary_point_of_the_smoothed_log_loss(n, scale, seed, separable):
    # a Newton loop that stops early (one step, or a line search that cannot
    # see decreases below the objective's rounding) leaves a gradient far
    # above the module's 1e-10; unsmoothed targets (0/1) move the stationary
    # point of this objective, and on separable data send a to -infinity
    f, y = noisy_decisions(n, scale, seed, separable)
    t = smoothed_targets(y)
    a, b = fit_platt(f, y)
    assert np.isfinite([a, b]).all()
    assert np.abs(platt_gradient([a, b], f, t)).max() < 1e-9


@pytest.mark.parametrize("n, scale, seed, separable", CASES)
def test_the_fit_matches_a_general_minimiser_of_the_written_out_objective(n, scale, seed, separable):
    f, y = noisy_decisions(n, scale, seed, separable)
    t = smoothed_targets(y)
    a, b = fit_platt(f, y)
    ref = minimize(platt_loss, [0.0, 0.0], args=(f, t), jac=platt_gradient, method="BFGS",
                   options={"gtol": 1e-9, "maxiter": 500})
    # F is strictly convex; at BFGS's gtol the minimiser is known to about
    # gtol / (smallest Hessian eigenvalue), well under 1e-6 here
    np.testing.assert_allclose([a, b], ref.x, atol=1e-6, rtol=0)
    assert platt_loss([a, b], f, t) <= ref.fun + 1e-9 * abs(ref.fun)


@pytest.mark.parametrize("n, scale, seed, separable", CASES)
def test_centred_fit_minimises_over_the_slope_alone(n, scale, seed, separable):
    f, y = noisy_decisions(n, scale, seed, separable)
    t = smoothed_targets(y)
    a, b = fit_platt(f, y, centred=True)
    assert b == 0.0
    assert abs(platt_gradient([a, 0.0], f, t)[0]) < 1e-9
    ref = minimize(lambda v: platt_loss([v[0], 0.0], f, t), [0.0],
                   jac=lambda v: platt_gradient([v[0], 0.0], f, t)[:1], method="BFGS", options={"gtol": 1e-9})
    assert a == pytest.approx(ref.x[0], abs=1e-6)


def test_separable_decision_values_give_a_finite_slope():
    # without smoothing the likelihood of separable data has no maximum; with
    # it the optimum is finite: every point keeps probability t_i, not 0 / 1
    f = np.array([-3.0, -2.0, -1.0, 1.0, 2.0, 3.0])
    y = np.array([-1, -1, -1, 1, 1, 1])
    a, b = fit_platt(f, y)
    p = platt_probability(f, a, b)
    assert a < 0
    # at the optimum the mean probability matches the mean target (dF/db = 0)
    assert p.sum() == pytest.approx(smoothed_targets(y).sum(), abs=1e-9)
    assert p.max() < 1 - 1e-3 and p.min() > 1e-3


# ------------------------------------------------------------------- (c) the true eta
def test_calibrated_probabilities_on_the_figure1_mixture_track_the_true_eta():
    # the paper's Figure 1 mixture (centres seed 1), 300 points per class; Platt
    # is fitted to the 5-fold held-out decision values at lambda_min.  Brier
    # score and reliability are measured on 20000 fresh points against the
    # mixture's exact eta = P(Y = +1 | x).  Measured over training seeds 0-3:
    # Brier gap 0.006-0.013 (a constant 1/2 is 0.13 off), largest bin gap
    # 0.05-0.075, ECE 0.015-0.032; the bounds leave room above those
    X, y, model = make_mixture(300, random_state=0)
    kern = kerndwd.rbfdot(kerndwd.sigest(X, random_state=0))
    lambdas = 10.0 ** np.linspace(-1, -4, 8)
    res = kerndwd.cv(X, y, lambdas, kern=kern, nfolds=5, random_state=0)
    path = kerndwd.fit(X, y, lambdas, kern=kern)
    Xt, yt = model.sample(10_000, random_state=100)
    p = path.predict(Xt, "prob", lambdas=[res.lambda_min], calibration=res)[:, 0]
    eta = model.posterior(Xt)
    hit = (yt > 0).astype(float)

    brier, brier_eta = np.mean((p - hit) ** 2), np.mean((eta - hit) ** 2)
    assert brier - brier_eta < 0.02
    assert np.mean((p - eta) ** 2) < 0.02

    bins = np.minimum((p * 10).astype(int), 9)
    gaps, weights = [], []
    for k in range(10):
        inside = bins == k
        if inside.sum() >= 200:
            gaps.append(abs(p[inside].mean() - hit[inside].mean()))
            weights.append(inside.sum())
    assert len(gaps) >= 6  # the probabilities spread over the unit interval
    assert max(gaps) < 0.12
    assert np.average(gaps, weights=weights) < 0.05


def test_the_estimators_sigmoid_pools_the_problems_and_drops_what_is_missing():
    """``fit_heldout_platt`` is the centred fit of every problem's held-out values
    pooled, NaN (rows a problem did not hold out) left out."""
    from kerndwd.calibration import fit_heldout_platt

    rng = np.random.default_rng(4)
    f1, f2 = rng.standard_normal(30), rng.standard_normal(20)
    y1 = np.where(f1 + 0.7 * rng.standard_normal(30) > 0, 1.0, -1.0)
    y2 = np.where(f2 + 0.7 * rng.standard_normal(20) > 0, 1.0, -1.0)
    f2[[3, 11]] = np.nan
    a, b = fit_heldout_platt([f1, f2], [y1, y2])
    keep = ~np.isnan(f2)
    a_ref, b_ref = fit_platt(np.concatenate([f1, f2[keep]]), np.concatenate([y1, y2[keep]]), centred=True)
    assert (a, b) == (a_ref, b_ref) and b == 0.0 and a < 0


def test_a_held_out_slope_of_the_wrong_sign_is_returned_with_a_warning_at_the_caller(monkeypatch):
    """The warning says what happened and what ``predict_proba`` does instead, and
    is issued at the stack level the caller asks for (2, its caller, by default)."""
    import warnings

    from kerndwd import calibration
    from kerndwd.calibration import fit_heldout_platt

    f = np.linspace(-2.0, 2.0, 40)
    y = np.where(f < 0, 1.0, -1.0)  # the decision values point the wrong way
    with pytest.warns(UserWarning, match=r"^Platt's sigmoid fitted to the held-out decision values has slope "
                                         r"a = [0-9.e+]+ >= 0 \(probabilities would fall as the decision value "
                                         r"rises\); predict_proba inverts the population minimiser \(4\.4\) "
                                         r"instead$"):
        a, b = fit_heldout_platt([f], [y])
    assert a > 0 and b == 0.0
    rng = np.random.default_rng(0)  # weakly the wrong way: a small positive slope warns too
    g = rng.standard_normal(400)
    t = np.where(-0.3 * g + rng.standard_normal(400) > 0, 1.0, -1.0)
    with pytest.warns(UserWarning, match=r"^Platt's sigmoid .* has slope a = 0\.[0-9]+ >= 0"):
        a, _ = fit_heldout_platt([g], [t])
    assert 0.0 < a < 1.0
    levels = []
    monkeypatch.setattr(calibration.warnings, "warn",
                        lambda message, category, stacklevel=1: levels.append((category, stacklevel)))
    fit_heldout_platt([f], [y])
    fit_heldout_platt([f], [y], stacklevel=3)
    assert levels == [(UserWarning, 2), (UserWarning, 3)]
    assert calibration.warnings is warnings


def test_a_calibration_of_rows_permuted_against_the_labels_is_refused():
    """Same shape, column sums, labels and weights: only the rows' order differs."""
    rng = np.random.default_rng(1)
    X = rng.integers(0, 10, (60, 3)).astype(float)
    y = np.where(X[:, 0] + rng.normal(0, 2, 60) > 4.5, 1, -1)
    lam = 10.0 ** np.linspace(1, -3, 8)
    k = kerndwd.rbfdot(0.1)
    cv = kerndwd.cv(X, y, lam, kern=k, random_state=0)
    path = kerndwd.fit(X[rng.permutation(60)], y, lam, kern=k)
    theirs, ours = cv.fingerprint["rows"], path.fingerprint["rows"]
    assert theirs != ours
    message = ("calibration: this cross-validation was not fitted on what the path was: "
               f"rows ({theirs!r} against the path's {ours!r}); "
               "calibrate with kerndwd.cv on the same X, y, weights, kern, qval and design")
    with pytest.raises(ValueError) as err:
        path.predict(X[:3], type="prob", calibration=cv, lambdas=cv.lambda_min)
    assert str(err.value) == message
    same = kerndwd.fit(X, y, lam, kern=k)  # the rows cv saw: accepted
    prob = same.predict(X[:3], type="prob", calibration=cv, lambdas=cv.lambda_min)
    assert ((prob > 0) & (prob < 1)).all()


@pytest.mark.parametrize("centred", [False, True])
@pytest.mark.parametrize("value", [0.0, 0.3, 1.0, -3.0, 50.0, 1e4])
def test_held_out_values_all_equal_give_finite_coefficients_at_the_smoothed_frequency(value, centred):
    """Every held-out value the same: only ``z = a f + b`` is identified and the
    Newton matrix is singular.  The coefficients are finite and the sigmoid
    gives the smoothed targets' mean, the minimiser of F over a constant ``z``:
    ``1 / (1 + exp(z)) = mean(t)`` (``centred`` at ``f = 0``: ``z = 0``)."""
    y = np.array([1, -1, 1, 1, -1, -1, 1, -1, 1, 1])
    f = np.full(y.size, value)
    a, b = fit_platt(f, y, centred=centred)
    assert np.isfinite(a) and np.isfinite(b)
    if centred and value == 0.0:
        assert (a, b) == (0.0, 0.0)
        return
    mean = smoothed_targets(y).mean()
    assert abs((a * value + b) - np.log((1.0 - mean) / mean)) <= 1e-9
    np.testing.assert_allclose(platt_probability(f, a, b), mean, rtol=1e-9)
    if centred:
        assert b == 0.0
