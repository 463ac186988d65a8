"""fit() and predict(): labels, input checks, interpolation, no in-place changes."""

import warnings
from dataclasses import replace

import numpy as np
import pytest

import kerndwd


@pytest.fixture
def data():
    rng = np.random.default_rng(1)
    X = rng.standard_normal((40, 3))
    y = np.where(X[:, 0] + 0.5 * rng.standard_normal(40) > 0, 1, -1)
    return X, y


LAMS = [1.0, 0.1, 0.01]


def test_labels_map_in_sorted_order_and_come_back(data):
    X, y = data
    ref = kerndwd.fit(X, y, LAMS, kern=kerndwd.vanilladot())
    for labels in (["a", "b"], [False, True], [3.5, 7.0]):
        yy = np.where(y > 0, labels[1], labels[0])
        path = kerndwd.fit(X, yy, LAMS, kern=kerndwd.vanilladot())
        np.testing.assert_array_equal(path.alpha, ref.alpha)
        cls = path.predict(X[:5])
        assert set(np.unique(cls)) <= set(labels)
        np.testing.assert_array_equal(cls == labels[1], ref.predict(X[:5]) == 1)


def test_reversed_label_order_negates_the_fit(data):
    X, y = data
    ref = kerndwd.fit(X, y, LAMS, kern=kerndwd.vanilladot())
    flipped = kerndwd.fit(X, np.where(y > 0, "a", "b"), LAMS, kern=kerndwd.vanilladot())
    np.testing.assert_allclose(flipped.alpha, -ref.alpha, atol=1e-12)


def test_pandas_inputs(data):
    pd = pytest.importorskip("pandas")
    X, y = data
    ref = kerndwd.fit(X, y, LAMS, kern=kerndwd.rbfdot(0.5))
    df = pd.DataFrame(X, columns=["a", "b", "c"])
    ys = pd.Series(np.where(y > 0, "yes", "no"))
    path = kerndwd.fit(df, ys, LAMS, kern=kerndwd.rbfdot(0.5))
    np.testing.assert_array_equal(path.alpha, ref.alpha)
    # a Categorical keeps its category order: "yes" first means "yes" -> -1
    cat = pd.Series(pd.Categorical(ys, categories=["yes", "no"]))
    path2 = kerndwd.fit(df, cat, LAMS, kern=kerndwd.rbfdot(0.5))
    np.testing.assert_allclose(path2.alpha, -ref.alpha, atol=1e-12)
    assert list(path2.classes) == ["yes", "no"]


def test_r_names_and_lambda_sorting(data):
    X, y = data
    with pytest.warns(UserWarning, match="lambdas were sorted decreasing"):
        path = kerndwd.fit(X, y, [0.01, 1.0, 0.1], kern=kerndwd.vanilladot())
    np.testing.assert_array_equal(path["lambda"], [1.0, 0.1, 0.01])
    np.testing.assert_array_equal(getattr(path, "lambda"), path.lambda_)
    assert path["alpha"].shape == (4, 3)
    assert path["jerr"] == 0 and path["npass"].shape == (3,)
    assert "kdwd" not in repr(path) and "ldwd" in repr(path)


def test_default_lambda_grid_is_rs(data):
    X, y = data
    path = kerndwd.fit(X, y, kern=kerndwd.vanilladot())
    np.testing.assert_allclose(path.lambda_, 10.0 ** np.linspace(3, -3, 100))


def test_default_kernel_is_rbf_with_sigest(data):
    X, y = data
    path = kerndwd.fit(X, y, LAMS, random_state=0)
    assert path.kern.name == "rbfdot"
    assert path.kern.sigma == pytest.approx(kerndwd.sigest(X, random_state=0))


def test_interpolation_between_columns(data):
    X, y = data
    path = kerndwd.fit(X, y, LAMS, kern=kerndwd.vanilladot())
    mid = 0.55
    frac = (mid - 0.1) / (1.0 - 0.1)
    expected = path.alpha[:, 1] * (1 - frac) + path.alpha[:, 0] * frac
    np.testing.assert_allclose(path.coef_at(mid)[:, 0], expected, rtol=1e-14)
    with pytest.warns(UserWarning, match=r"lambdas \[50.0, 1e-09\] lie outside the fitted path"):
        link = kerndwd.predict(path, X, type="link", lambdas=[mid, 0.1, 50.0, 1e-9])
    np.testing.assert_allclose(link[:, 0], expected[0] + X @ expected[1:], rtol=1e-12)
    np.testing.assert_array_equal(link[:, 1], path.predict(X, "link")[:, 1])
    np.testing.assert_array_equal(link[:, 2], path.predict(X, "link")[:, 0])  # clamped above
    np.testing.assert_array_equal(link[:, 3], path.predict(X, "link")[:, 2])  # clamped below


def test_kernel_predict_equals_kernel_matrix_product(data):
    X, y = data
    k = kerndwd.laplacedot(0.7)
    path = kerndwd.fit(X, y, LAMS, kern=k)
    newx = X[:7] + 0.1
    expected = path.alpha[0] + k(newx, X) @ path.alpha[1:]
    np.testing.assert_allclose(path.predict(newx, "link"), expected, rtol=1e-13)


def test_inputs_not_modified(data):
    X, y = data
    X0, y0 = X.copy(), y.copy()
    w = np.linspace(0.5, 2, len(y))
    w0 = w.copy()
    lam = np.array([0.01, 1.0, 0.1])
    lam0 = lam.copy()
    with pytest.warns(UserWarning, match="lambdas were sorted decreasing"):
        path = kerndwd.fit(X, y, lam, kern=kerndwd.vanilladot(), wt=w)
    path.predict(X)
    np.testing.assert_array_equal(X, X0)
    np.testing.assert_array_equal(y, y0)
    np.testing.assert_array_equal(w, w0)
    np.testing.assert_array_equal(lam, lam0)


def test_maxit_warning_names_lambda_and_budget(data):
    X, y = data
    with pytest.warns(kerndwd.DWDConvergenceWarning, match=r"maxit=3 .*lambda #2"):
        path = kerndwd.fit(X, y, [10.0, 1e-3], kern=kerndwd.vanilladot(), maxit=3)
    assert path.jerr == -2 and path.alpha.shape[1] == 1


def test_kkt_stopping_converges_further(data):
    X, y = data
    loose = kerndwd.fit(X, y, LAMS, kern=kerndwd.vanilladot())
    tight = kerndwd.fit(X, y, LAMS, kern=kerndwd.vanilladot(), eps=1e-10, stop="kkt")
    assert (tight.kkt <= 1e-10).all()
    assert (tight.objective <= loose.objective + 1e-15).all()
    assert (loose.kkt > tight.kkt).all()


BAD_FIT_ARGS = [
    (dict(y=np.ones(40)), ValueError, "y must hold exactly two"),
    (dict(y=np.arange(40) % 3), ValueError, "y must hold exactly two"),
    (dict(y=np.r_[np.nan, np.ones(39)]), ValueError, "y contains NaN"),
    (dict(y=np.ones(39)), ValueError, "y has 39 entries"),
    (dict(X=np.full((40, 3), np.nan)), ValueError, "X contains NaN"),
    (dict(X=np.r_[[[np.inf, 0, 0]], np.zeros((39, 3))]), ValueError, "X contains NaN or infinite"),
    (dict(X=np.zeros(40)), ValueError, "X must be a 2-D"),
    (dict(X=np.array([["a", "b", "c"]] * 40)), TypeError, "X must be numeric"),
    (dict(wt=np.ones(39)), ValueError, "wt must have one entry per row"),
    (dict(wt=np.r_[-1.0, np.ones(39)]), ValueError, "wt must be non-negative"),
    (dict(wt=np.zeros(40)), ValueError, "wt must have at least one positive"),
    (dict(qval=0), ValueError, "qval must be positive"),
    (dict(qval=-2.0), ValueError, "qval must be positive"),
    (dict(qval="1"), TypeError, "qval must be a real number"),
    (dict(lambdas=[1.0, -0.1]), ValueError, "lambdas must be positive"),
    (dict(lambdas=[1.0, np.inf]), ValueError, "lambdas must be positive"),
    (dict(lambdas=[]), ValueError, "lambdas must be a non-empty"),
    (dict(eps=0.0), ValueError, "eps must be positive"),
    (dict(maxit=0), ValueError, "maxit must be at least 1"),
    (dict(maxit=2.5), TypeError, "maxit must be an integer"),
    (dict(kern="rbf"), TypeError, "kern must be a kernel object"),
    (dict(stop="gradient"), ValueError, "stop must be one of"),
]


@pytest.mark.parametrize("override, exc, msg", BAD_FIT_ARGS)
def test_bad_input_is_refused_with_a_named_argument(data, override, exc, msg):
    X, y = data
    args = dict(X=X, y=y, lambdas=LAMS, kern=kerndwd.vanilladot())
    args.update(override)
    with pytest.raises(exc, match=msg):
        kerndwd.fit(**args)


def test_bad_predict_input(data):
    X, y = data
    path = kerndwd.fit(X, y, LAMS, kern=kerndwd.vanilladot())
    with pytest.raises(ValueError, match="newx has 2 columns"):
        path.predict(X[:, :2])
    with pytest.raises(ValueError, match="type must be"):
        path.predict(X, type="response")
    with pytest.raises(ValueError, match="newx contains NaN"):
        path.predict(np.full((2, 3), np.nan))
    with pytest.raises(ValueError, match="lambdas must be positive"):
        path.predict(X, lambdas=[-1.0])
    with pytest.raises(TypeError, match="fit must be a DWDPath"):
        kerndwd.predict("not a fit", X)


@pytest.mark.parametrize(
    "make, msg",
    [
        (lambda: kerndwd.rbfdot(sigma=0), "sigma must be positive"),
        (lambda: kerndwd.rbfdot(sigma=-1), "sigma must be positive"),
        (lambda: kerndwd.laplacedot(sigma=np.nan), "sigma must be positive"),
        (lambda: kerndwd.polydot(degree=0), "degree must be at least 1"),
        (lambda: kerndwd.polydot(scale=0), "scale must be positive"),
        (lambda: kerndwd.besseldot(order=-1), "order must be non-negative"),
        (lambda: kerndwd.anovadot(degree=-2), "degree must be at least 1"),
    ],
)
def test_bad_kernel_parameters(make, msg):
    with pytest.raises(ValueError, match=msg):
        make()
    with pytest.raises(TypeError, match="polydot: degree must be an integer"):
        kerndwd.polydot(degree=1.5)


def test_kernel_repr_is_r_like():
    assert repr(kerndwd.rbfdot(0.5)) == "rbfdot(sigma=0.5)"
    assert repr(kerndwd.polydot(2, 1, 0)) == "polydot(degree=2, scale=1.0, offset=0.0)"
    assert repr(kerndwd.vanilladot()) == "vanilladot()"


def test_rbf_matrix_is_blas_sized_work():
    """A 2000 x 2000 rbf matrix equals the direct formula (the 5000-row case is
    timed by benchmarks/, not here)."""
    rng = np.random.default_rng(0)
    X = rng.standard_normal((2000, 5))
    K = kerndwd.rbfdot(0.3)(X)
    i, j = rng.integers(0, 2000, 50), rng.integers(0, 2000, 50)
    direct = np.exp(-0.3 * ((X[i] - X[j]) ** 2).sum(1))
    np.testing.assert_allclose(K[i, j], direct, rtol=1e-12)


def test_loss_is_stable_for_extreme_q_and_margins():
    u = np.array([-1e300, -5.0, 0.0, 0.5, 1.0, 1e10, 1e300, np.inf])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for q in (0.01, 1.0, 100.0):
            v = kerndwd.dwd_loss(u, q)
            d = kerndwd.dwd_loss_deriv(u, q)
            assert np.isfinite(v[1:]).all() and np.isfinite(d).all()
            assert v[-1] == 0.0 and d[-1] == 0.0
            assert (v >= 0).all()
    with pytest.raises(ValueError, match="q must be positive"):
        kerndwd.dwd_loss(1.0, 0)
    with pytest.raises(ValueError, match="u contains NaN"):
        kerndwd.dwd_loss([np.nan], 1)


def test_momentum_reaches_the_same_optimum_in_fewer_passes_without_raising_the_objective():
    """Accelerated MM (restart on any rise) keeps the objective monotone and
    stops at the same optimum as plain MM, in far fewer passes on an
    ill-conditioned design."""
    from kerndwd.engine import FactorCache, Problem, build_majoriser
    from _engine import evaluate, mm_path

    rng = np.random.default_rng(3)
    X = rng.standard_normal((200, 10))
    y = np.where(rng.random(200) < 0.5, 1.0, -1.0)
    X[:, 0] += 2.0 * y
    X[:40, 0] *= 10.0  # a few far-out rows make the problem ill-conditioned
    lams = np.array([1.0, 0.01])
    problem = Problem.from_arrays(X, y, lams, stop="kkt", eps=1e-7, maxit=10**6)
    maj = build_majoriser(problem, FactorCache(X, problem.kern))
    plain = mm_path(maj, problem)
    seen = []

    def record(l, lam, coord, f):
        seen.append((l, evaluate(maj.form, maj.to_alpha(coord), y, problem.loss, lam)[1]))

    fast = mm_path(maj, replace(problem, accelerate=True), callback=record)
    assert fast.npass.sum() * 5 < plain.npass.sum()
    np.testing.assert_allclose(fast.objective, plain.objective, rtol=1e-10)
    for l in (0, 1):
        objs = np.array([o for ll, o in seen if ll == l])
        assert (np.diff(objs) <= 1e-15 * np.abs(objs[:-1])).all()
    assert (fast.kkt < 1e-6).all()


def test_fit_accelerates_only_with_the_gradient_rule(data):
    X, y = data
    r_like = kerndwd.fit(X, y, LAMS, kern=kerndwd.vanilladot())
    plain = kerndwd.fit(X, y, LAMS, kern=kerndwd.vanilladot(), accelerate=False)
    np.testing.assert_array_equal(r_like.alpha, plain.alpha)
    np.testing.assert_array_equal(r_like.npass, plain.npass)
    tight = kerndwd.fit(X, y, LAMS, kern=kerndwd.rbfdot(0.5), eps=1e-10, stop="kkt", method="mm")
    slow = kerndwd.fit(X, y, LAMS, kern=kerndwd.rbfdot(0.5), eps=1e-10, stop="kkt", method="mm", accelerate=False)
    assert tight.npass.sum() < slow.npass.sum()
    np.testing.assert_allclose(tight.predict(X, "link"), slow.predict(X, "link"), rtol=1e-6, atol=1e-8)


def test_engine_hands_back_the_unfinished_iterate_when_the_budget_runs_out(data):
    """R drops the column of the lambda where maxit ran out; the engine still
    reports that last iterate (the estimator keeps it), evaluated exactly."""
    from kerndwd.engine import FactorCache, Problem, build_majoriser
    from _engine import evaluate, mm_path

    X, y = data
    yf = np.where(y > 0, 1.0, -1.0)
    problem = Problem.from_arrays(X, yf, [1.0, 0.001], stop="kkt", eps=1e-8, maxit=100, accelerate=True)
    maj = build_majoriser(problem, FactorCache(X, problem.kern))
    res = mm_path(maj, problem)
    assert res.jerr == -2 and res.alpha.shape[1] == 1
    alpha, value, grad_norm = res.unfinished
    _, expected_value, expected_grad = evaluate(maj.form, alpha, yf, problem.loss, 0.001)
    assert value == expected_value and grad_norm == pytest.approx(np.linalg.norm(expected_grad), rel=1e-14)
    assert grad_norm > 1e-8
    assert value < 1.0  # below the objective of f = 0
    done = mm_path(maj, problem.with_lambdas([1.0]))
    assert done.unfinished is None


def test_three_classes_are_refused_with_the_estimator_that_fits_them(data):
    X, _ = data
    y3 = np.array(["a", "b", "c"] * 13 + ["a"])
    with pytest.raises(ValueError) as info:
        kerndwd.fit(X, y3, LAMS, kern=kerndwd.vanilladot())
    assert str(info.value) == ("y must hold exactly two distinct labels for binary DWD, got 3: ['a', 'b', 'c'] "
                               "(kerndwd.DWDClassifier fits several classes, one-vs-rest)")
    with pytest.raises(ValueError) as info:
        kerndwd.fit(X, np.zeros(40), LAMS, kern=kerndwd.vanilladot())
    assert str(info.value) == "y must hold exactly two distinct labels for binary DWD, got 1: [0.0]"
