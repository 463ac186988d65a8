"""An adversarial fuzz suite over inputs and scales.

Each draw builds a small problem whose pieces are pushed towards the edges
of double precision and of the model (scales of X from 1e-200 to 1e200,
duplicated and constant rows, lambdas, q values and weights over hundreds of
decades, zero weights, kernel parameters from 1e-30 to 1e30, tiny budgets)
and asserts that :func:`kerndwd.fit`, :func:`kerndwd.predict` and the
estimator end in exactly one of three ways:

* a ``ValueError`` or ``TypeError`` whose message names the argument at fault;
* a finite result: every column finite, ``jerr = 0``, finite predictions;
* a :class:`kerndwd.DWDConvergenceWarning` that says why (with ``jerr``
  reporting the failed lambda, and what was returned still finite).

Anything else fails: another exception (``LinAlgError``, ``ZeroDivisionError``,
an overflow turned into an error by the test configuration), NaN or inf in
a result, or a warning of another kind.  ``HYPOTHESIS_PROFILE=dev`` runs it
for as long as one likes.
"""

import re
import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import kerndwd
from kerndwd.engine import jerr_diverged, jerr_lambda

#: the arguments a fit can be wrong about: an error must name one of them
ARGUMENTS = ("X", "y", "lambdas", "kern", "qval", "wt", "eps", "maxit", "stop", "newx", "sample_weight",
             "class_weight", "lambd", "q", "tol", "max_iter")
#: passes allowed per path: enough for easy problems, small enough to keep a draw fast
MAXIT = 3000

#: half the profile's examples: ``ci`` (60) keeps the file under two minutes, ``dev`` runs 1000 a test
EXAMPLES = max(30, settings().max_examples // 2)

decades = st.integers(-200, 200)
unit = st.floats(-2.0, 2.0, allow_nan=False, width=32)


@st.composite
def designs(draw):
    n = draw(st.integers(4, 14))
    p = draw(st.integers(1, 4))
    X = draw(hnp.arrays(np.float64, (n, p), elements=unit))
    if draw(st.booleans()):  # duplicated rows
        k = draw(st.integers(1, n - 1))
        X[k] = X[0] + draw(st.sampled_from([0.0, 1e-12, 1e-6]))
    if draw(st.booleans()):  # a constant column
        X[:, 0] = draw(st.sampled_from([0.0, 1.0, -3.0]))
    X = X * 10.0 ** draw(st.sampled_from([0, 0, 0, -8, 8, -100, 100, -200, 160]))
    n_pos = draw(st.integers(1, n - 1))
    y = np.where(np.arange(n) < n_pos, 1, -1)
    y = y[draw(st.permutations(range(n)))]
    return X, y


def kernels():
    scale = st.sampled_from([1e-30, 1e-6, 0.01, 1.0, 10.0, 1e6, 1e20, 1e30])
    return st.one_of(
        st.just(kerndwd.vanilladot()),
        scale.map(lambda s: kerndwd.rbfdot(sigma=s)),
        scale.map(lambda s: kerndwd.laplacedot(sigma=s)),
        st.tuples(st.sampled_from([1, 2, 3, 50, 1000]), scale).map(lambda a: kerndwd.polydot(a[0], a[1], 1.0)),
        scale.map(lambda s: kerndwd.besseldot(sigma=s)),
        scale.map(lambda s: kerndwd.anovadot(sigma=s, degree=2)),
        st.just(kerndwd.splinedot()),
    )


@st.composite
def fit_arguments(draw):
    X, y = draw(designs())
    n = X.shape[0]
    lambdas = [10.0 ** draw(st.integers(-300, 300)) for _ in range(draw(st.integers(1, 3)))]
    if draw(st.booleans()):
        lambdas = [10.0 ** draw(st.integers(-4, 2))]
    args = dict(X=X, y=y, lambdas=lambdas, kern=draw(kernels()),
                qval=draw(st.sampled_from([1.0, 0.5, 4.0, 1e-5, 1e-4, 100.0, 1e4, 1e200, 1e-320])),
                stop=draw(st.sampled_from(["step", "kkt"])), maxit=MAXIT)
    if draw(st.booleans()):
        w = draw(hnp.arrays(np.float64, n, elements=st.floats(0.0, 2.0, width=32)))
        args["wt"] = w * 10.0 ** draw(decades)
    args["eps"] = draw(st.sampled_from([1e-5, 1e-8, 1e-12, 1e-300, 1.0]))
    return args


def _names_an_argument(message):
    return any(re.search(rf"(^|[^\w]){re.escape(a)}([^\w]|$)", message) for a in ARGUMENTS)


def _classify(call):
    """Run ``call`` and say which of the three allowed endings it reached."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            result = call()
        except (ValueError, TypeError) as exc:
            assert _names_an_argument(str(exc)), f"error names no argument: {exc!r}"
            return "error", None, caught
    kinds = {type(w.message) for w in caught}
    unexpected = kinds - {kerndwd.DWDConvergenceWarning, UserWarning}
    assert not unexpected, [str(w.message) for w in caught]
    for w in caught:
        if isinstance(w.message, kerndwd.DWDConvergenceWarning):
            assert len(str(w.message)) > 20, "a convergence warning must say why"
    warned = kerndwd.DWDConvergenceWarning in kinds
    return ("warning" if warned else "result"), result, caught


@given(fit_arguments())
@settings(max_examples=EXAMPLES, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
def test_fit_ends_in_an_error_a_finite_result_or_a_warning(args):
    ending, path, _ = _classify(lambda: kerndwd.fit(**args))
    if ending == "error":
        return
    assert np.isfinite(path.alpha).all() and np.isfinite(path.objective).all() and np.isfinite(path.kkt).all()
    if ending == "result":
        assert path.jerr == 0
        assert path.lambda_.size == len(args["lambdas"])
    else:  # a budget run out (jerr = -l) or an overflow (jerr = -(10000 + l)) keeps the l - 1 finished lambdas
        assert path.jerr == 0 or path.lambda_.size == jerr_lambda(path.jerr) - 1
    if path.lambda_.size:
        link = path.predict(args["X"][:3], "link")
        assert np.isfinite(link).all()
        # every path starts at f = 0 and never raises F, and F falls with lambda: no column is
        # worse than the zero model, whose objective is the mean weight (V_q(0) = 1).  The
        # slack is rounding: a kernel matrix with entries of 1e24 (splinedot at 1e8) moves
        # F by 1e-6 between f computed through its eigenbasis and through K itself
        zero_model = float(np.mean(args["wt"])) if "wt" in args else 1.0
        assert (path.objective <= zero_model * (1.0 + 1e-5)).all(), (path.objective, zero_model)
        if args["stop"] == "kkt":  # each column was confirmed to satisfy its gradient test
            assert (path.kkt <= args["eps"] * (1.0 + 1e-9)).all(), (path.kkt, args["eps"])


@st.composite
def estimator_arguments(draw):
    X, y = draw(designs())
    n = X.shape[0]
    params = dict(lambd=10.0 ** draw(st.integers(-6, 3)), q=draw(st.sampled_from([0.5, 1.0, 8.0])),
                  kernel=draw(st.sampled_from(["linear", "rbf", "laplace", "poly"])), max_iter=MAXIT,
                  class_weight=draw(st.sampled_from([None, "balanced", {1: 1e-300, -1: 1.0}, {1: 1e300, -1: 1.0}])))
    sw = None
    if draw(st.booleans()):
        sw = draw(hnp.arrays(np.float64, n, elements=st.floats(0.0, 2.0, width=32))) * 10.0 ** draw(decades)
    return X, y, params, sw


@given(estimator_arguments())
@settings(max_examples=max(15, EXAMPLES // 2), suppress_health_check=[HealthCheck.too_slow])
def test_estimator_ends_in_an_error_a_finite_result_or_a_warning(case):
    pytest.importorskip("sklearn")
    from kerndwd import DWDClassifier

    X, y, params, sw = case
    est = DWDClassifier(**params)
    ending, fitted, _ = _classify(lambda: est.fit(X, y, sample_weight=sw))
    if ending == "error":
        return
    assert np.isfinite(fitted.intercept_).all() and np.isfinite(fitted.kkt_).all()
    assert np.isfinite(fitted.decision_function(X)).all()
    assert set(np.unique(fitted.predict(X))) <= set(fitted.classes_.tolist())


# --------------------------------------------------------------------------
# the known edges, pinned: each with a reference or the specific warning
# --------------------------------------------------------------------------
def _constant_column_data():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(10, 3))
    X[:, 0] = 1.0
    return X, np.where(np.arange(10) < 4, 1, -1)


@pytest.mark.parametrize("lam", [1e17, 1e33, 1e100])
@pytest.mark.parametrize("stop", ["step", "kkt"])
def test_linear_majoriser_is_accurate_at_huge_lambda(lam, stop):
    """The unweighted linear majoriser (eigenbasis + intercept correction) against
    the weighted one with unit weights (a Cholesky factor per lambda), and both
    against the limit: beta of order 1/lambda, the intercept the intercept-only fit."""
    X, y = _constant_column_data()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        plain = kerndwd.fit(X, y, lambdas=[lam], kern=kerndwd.vanilladot(), qval=1.0, stop=stop, eps=1e-12,
                            method="mm")
        unit = kerndwd.fit(X, y, lambdas=[lam], kern=kerndwd.vanilladot(), qval=1.0, stop=stop, eps=1e-12,
                           wt=np.ones(10), method="mm")
    assert plain.solver == "ldwd" and unit.solver == "wldwd"
    assert plain.jerr == 0 and unit.jerr == 0
    np.testing.assert_allclose(plain.alpha[0], unit.alpha[0], rtol=1e-6)
    np.testing.assert_allclose(plain.alpha[1:], unit.alpha[1:], rtol=1e-4, atol=1e-12 / lam)
    assert np.abs(plain.alpha[1:]).max() < 10.0 / lam
    # the intercept-only optimum of V_1 with 4 positives and 6 negatives: b0 = -sqrt(1.5)/2 (kkt)
    if stop == "kkt":
        np.testing.assert_allclose(plain.alpha[0, 0], -np.sqrt(1.5) / 2, rtol=1e-8)


def test_weighted_majorisers_accept_semidefinite_matrices():
    """Duplicated rows and zero weights make Z'WZ (K W K) singular; where the
    majoriser's ridge is lost in rounding Cholesky fails.  The solver falls back
    to a floored eigendecomposition: a finite step that solves the system on the
    range of P and is still a descent step (P floored lies above P)."""
    from kerndwd.engine import DWDLoss
    from kerndwd.engine.forms import LinearForm
    from kerndwd.engine.majorisers.kernel import KernelCholesky
    from kerndwd.engine.majorisers.linear import LinearCholesky, spd_solver

    rng = np.random.default_rng(1)
    X = rng.normal(size=(6, 2))
    Xd = np.vstack([X, X[:2], X[:2]])
    w = np.r_[np.ones(6), 0.0, 0.0, 1.0, 1.0]
    loss = DWDLoss(1.0, w)
    # a rank-one semidefinite matrix and one made slightly indefinite by rounding
    v = rng.normal(size=4)
    for P in (np.outer(v, v), np.outer(v, v) - 1e-14 * np.eye(4)):
        with pytest.raises(np.linalg.LinAlgError):
            np.linalg.cholesky(P)
        for x in (spd_solver(P)(v), spd_solver(P, explicit=True)(v)):  # a solve, or R's explicit inverse
            assert np.isfinite(x).all() and x @ v > 0  # -x is a descent direction for gradient v
            np.testing.assert_allclose(P @ x, v, rtol=1e-6)
    # a positive definite matrix: the explicit inverse is symmetric and inverts it
    A = rng.normal(size=(5, 5))
    P = A @ A.T + np.eye(5)
    inv = np.column_stack([spd_solver(P, explicit=True)(e) for e in np.eye(5)])
    assert np.array_equal(inv, inv.T)
    np.testing.assert_allclose(inv @ P, np.eye(5), atol=1e-12)
    # gam = 0 and lambda far below the data: the majorisers' matrices are singular
    lin = LinearCholesky(LinearForm(np.c_[Xd[:, :1], Xd[:, :1]]), loss, gam=0.0)
    K = Xd @ Xd.T
    ker = KernelCholesky(K, loss, 0.0, predictor=None)
    for majoriser in (lin, ker):
        step_fn = majoriser.at_lambda(1e-300)
        z = np.where(np.arange(10) % 2 == 0, -1.0, 1.0) * w
        step, df, grad_sq = step_fn(z, majoriser.start())
        assert np.isfinite(step).all() and np.isfinite(df).all() and grad_sq > 0
        # a descent step: along it the majoriser's quadratic (and so F) falls
        assert df @ z < 0


@pytest.mark.parametrize("method", ["mm", "newton"])
def test_overflow_at_tiny_lambda_is_reported_not_returned(method):
    """At lambda = 1e-299 the iteration leaves the finite numbers: the lambda is
    abandoned with jerr = -(10000 + l) and a DWDConvergenceWarning that says so,
    the finished lambdas come back finite; or the fit simply succeeds."""
    rng = np.random.default_rng(2)
    X = rng.normal(size=(10, 3))
    y = np.where(np.arange(10) < 4, 1, -1)
    stop = "step" if method == "mm" else "kkt"
    ending, path, caught = _classify(lambda: kerndwd.fit(X, y, lambdas=[1.0, 1e-299], kern=kerndwd.rbfdot(1.0),
                                                         stop=stop, method=method, maxit=3000))
    assert ending in ("result", "warning")
    assert np.isfinite(path.alpha).all() and path.lambda_.size >= 1
    if jerr_diverged(path.jerr):
        assert path.jerr == -10002 and path.lambda_.size == 1
        assert any("left the finite numbers" in str(w.message) for w in caught)
