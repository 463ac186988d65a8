"""plot_path and plot_cv draw what R's plot(fit) and plot(cvfit) draw: checked
on the Agg backend through the artists placed on the Axes."""

import sys

import numpy as np
import pytest

matplotlib = pytest.importorskip("matplotlib")
matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

import kerndwd  # noqa: E402
from kerndwd.kernels import kernel_from_spec  # noqa: E402
from reference.fixtures import load_fixture  # noqa: E402

LAMS = 10.0 ** np.linspace(0, -3, 7)


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


def data(n=30, p=3, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, p))
    y = np.where(X[:, 0] + 0.5 * rng.standard_normal(n) > 0, 1, -1)
    return X, y


def test_plot_path_linear_draws_one_line_per_coefficient():
    X, y = data(p=3)
    path = kerndwd.fit(X, y, LAMS, kern=kerndwd.vanilladot(), stop="kkt", eps=1e-8)
    ax = kerndwd.plot_path(path)
    lines = ax.get_lines()
    assert len(lines) == path.alpha.shape[0] - 1 == 3
    for line, row in zip(lines, path.alpha[1:]):
        np.testing.assert_array_equal(line.get_xdata(), np.log(path.lambda_))
        np.testing.assert_array_equal(line.get_ydata(), row)
    assert ax.get_xlabel() == "log(lambda)"
    assert "beta" in ax.get_ylabel()


def test_plot_path_kernel_draws_alpha_paths_on_given_axes():
    X, y = data(n=25, p=2)
    path = kerndwd.fit(X, y, LAMS, kern=kerndwd.rbfdot(sigma=1.0))
    fig, ax = plt.subplots()
    out = kerndwd.plot_path(path, ax=ax, color="k")
    assert out is ax
    lines = ax.get_lines()
    assert len(lines) == 25  # one per observation: the kernel coefficients alpha_i
    np.testing.assert_array_equal(lines[7].get_ydata(), path.alpha[8])
    assert all(matplotlib.colors.to_rgb(line.get_color()) == (0.0, 0.0, 0.0) for line in lines)
    assert "alpha" in ax.get_ylabel()


def test_plot_cv_draws_points_bars_and_markers():
    d = load_fixture("cv_rbf")
    res = kerndwd.cv(d["x"], d["y"], d["lambda_input"], kern=kernel_from_spec(d["kernel"]), foldid=d["foldid"])
    ax = kerndwd.plot_cv(res)
    containers = ax.containers
    assert len(containers) == 1
    data_line, _caps, (bars,) = containers[0].lines
    loglam = np.log(res.lambda_)
    np.testing.assert_allclose(data_line.get_xdata(), loglam)
    np.testing.assert_allclose(data_line.get_ydata(), res.cvm)
    segments = bars.get_segments()
    assert len(segments) == res.lambda_.size == 10
    np.testing.assert_allclose([s[0][1] for s in segments], res.cvlower, atol=1e-15)
    np.testing.assert_allclose([s[1][1] for s in segments], res.cvupper, atol=1e-15)
    markers = {line.get_label(): line for line in ax.get_lines() if line.get_label().startswith("lambda.")}
    assert set(markers) == {"lambda.min", "lambda.1se"}
    np.testing.assert_allclose(markers["lambda.min"].get_xdata(), [np.log(d["lambda.min"])] * 2)
    np.testing.assert_allclose(markers["lambda.1se"].get_xdata(), [np.log(d["lambda.1se"])] * 2)
    # the two markers are distinct here (R: lambda.min < lambda.1se on this fixture)
    assert d["lambda.min"] < d["lambda.1se"]
    assert ax.get_ylabel() == "Misclassification Error"


def test_plot_cv_of_tune_result_uses_chosen_q():
    X, y = data()
    res = kerndwd.tune(X, y, LAMS, qvals=[0.5, 4.0], kern=kerndwd.vanilladot(), nfolds=3, random_state=0)
    ax = kerndwd.plot_cv(res, sign_lambda=-1)
    markers = [line for line in ax.get_lines() if line.get_label() == "lambda.1se"]
    np.testing.assert_allclose(markers[0].get_xdata(), [-np.log(res.lam_tune)] * 2)
    assert f"q = {res.q_tune:g}" in ax.get_title()


def test_plot_bad_input():
    X, y = data()
    path = kerndwd.fit(X, y, LAMS, kern=kerndwd.vanilladot(), stop="kkt", eps=1e-8)
    with pytest.raises(TypeError, match="CVResult"):
        kerndwd.plot_cv(path)
    with pytest.raises(TypeError, match="DWDPath"):
        kerndwd.plot_path({"alpha": path.alpha})
    res = kerndwd.cv(X, y, LAMS, kern=kerndwd.vanilladot(), nfolds=3, random_state=0)
    with pytest.raises(ValueError, match="sign_lambda"):
        kerndwd.plot_cv(res, sign_lambda=2)
    with pytest.warns(kerndwd.DWDConvergenceWarning):
        empty = kerndwd.fit(X, y, LAMS, kern=kerndwd.vanilladot(), maxit=1)
    with pytest.raises(ValueError, match="no fitted columns"):
        kerndwd.plot_path(empty)


def test_missing_matplotlib_gives_clear_error(monkeypatch):
    X, y = data()
    path = kerndwd.fit(X, y, LAMS, kern=kerndwd.vanilladot(), stop="kkt", eps=1e-8)
    monkeypatch.setitem(sys.modules, "matplotlib.pyplot", None)
    with pytest.raises(ImportError, match="plotting needs matplotlib"):
        kerndwd.plot_path(path)
