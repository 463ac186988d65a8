"""The baselines in reference/: cone programs against the port on tiny
problems, the R bridge's kernlab kernels against ours, and the bridge's
missing-piece behaviour."""

import sys

import numpy as np
import pytest

import kerndwd
from reference import cone, rbridge

pytest.importorskip("cvxpy")


def _linear_data(n=40, p=3, seed=0):
    rng = np.random.default_rng(seed)
    y = np.where(rng.random(n) < 0.4, 1.0, -1.0)
    X = rng.standard_normal((n, p))
    X[:, 0] += 0.9 * y
    return X, y


def _ring_data(n=36, seed=1):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, 2))
    y = np.where((X ** 2).sum(axis=1) > 1.2, 1.0, -1.0)
    if y.sum() == 0:  # keep the minimiser unique (see validation.checks.grid_data)
        y[0] = -y[0]
    return X, y


def _tight_fit(X, y, lams, kern, q, w=None):
    return kerndwd.fit(X, y, lams, kern=kern, qval=q, wt=w, eps=1e-12, maxit=10 ** 6, stop="kkt")


def test_loss_written_twice_agrees():
    u = np.linspace(-2, 4, 241)
    for q in (0.25, 1.0, 3.0, 8.0):
        np.testing.assert_allclose(cone.dwd_loss(u, q), kerndwd.dwd_loss(u, q), rtol=1e-14, atol=0)
        np.testing.assert_allclose(cone.dwd_loss_deriv(u, q), kerndwd.dwd_loss_deriv(u, q), rtol=1e-14, atol=0)


@pytest.mark.parametrize("q", [0.5, 1.0, 4.0])
@pytest.mark.parametrize("weighted", [False, True])
def test_generalized_cone_matches_linear_port(q, weighted):
    X, y = _linear_data()
    w = np.where(y > 0, 2.5, 1.0) if weighted else None
    lams = [0.1, 0.01]
    path = _tight_fit(X, y, lams, kerndwd.vanilladot(), q, w)
    for j, lam in enumerate(lams):
        r = cone.solve_generalized(X, y, lam, q, w=w)
        a = path.alpha[:, j]
        f = a[0] + X @ a[1:]
        F = cone.generalized_objective(f, y, lam, q, a[1:] @ a[1:], w)
        assert abs(F - r["objective_eval"]) <= 1e-7 * r["objective_eval"]
        assert F >= r["objective_eval"] * (1 - 1e-9)
        assert np.isclose(F, path.objective[j], rtol=1e-12)
        assert np.abs(f - r["f"]).max() <= 1e-4 * np.abs(r["f"]).max()
        np.testing.assert_allclose(r["theta"], a[1:], rtol=0, atol=1e-4 * np.abs(a).max())


@pytest.mark.parametrize("q,weighted", [(1.0, False), (2.0, True)])
def test_generalized_cone_matches_kernel_port(q, weighted):
    X, y = _ring_data()
    w = np.where(y > 0, 3.0, 1.0) if weighted else None
    kern = kerndwd.rbfdot(sigma=1.0)
    K = kern(X)
    lams = [0.1, 0.01]
    path = _tight_fit(X, y, lams, kern, q, w)
    for j, lam in enumerate(lams):
        r = cone.solve_generalized(K, y, lam, q, w=w, kernel=True)
        a = path.alpha[:, j]
        f = a[0] + K @ a[1:]
        F = cone.generalized_objective(f, y, lam, q, a[1:] @ K @ a[1:], w)
        assert abs(F - r["objective_eval"]) <= 1e-7 * r["objective_eval"]
        assert np.abs(f - r["f"]).max() <= 1e-4 * np.abs(r["f"]).max()
        # the factor's penalty is alpha' K alpha for the matching coordinates
        assert np.isclose(r["penalty"], a[1:] @ K @ a[1:], rtol=1e-4)


@pytest.mark.parametrize("weighted", [False, True])
def test_socp_is_remark4_image_of_port(weighted):
    X, y = _linear_data(n=50, p=4, seed=3)
    w = np.where(y > 0, 2.0, 1.0) if weighted else None
    lams = [0.5, 0.05]
    path = _tight_fit(X, y, lams, kerndwd.vanilladot(), 1.0, w)
    for j in range(len(lams)):
        a = path.alpha[:, j]
        m = cone.lambda_fit_to_socp(a[0], a[1:], 1.0)
        assert np.isclose(m["c"], 4.0 * (a[1:] @ a[1:]), rtol=1e-14)  # Remark 4 at q = 1
        r = cone.solve_socp(X, y, m["c"], w=w)
        cosine = r["w"] @ m["omega"] / np.linalg.norm(r["w"])
        assert cosine >= 1 - 1e-8
        assert abs(r["b"] - m["omega0"]) <= 1e-4 * max(1.0, abs(r["b"]))
        assert np.isclose(np.linalg.norm(r["w"]), 1.0, atol=1e-8)  # ||omega|| <= 1 is active
        f = a[0] + X @ a[1:]
        implied = cone.socp_value_from_fit(f, y, m["scale"], 1.0, w)
        assert np.isclose(implied, r["objective_eval"], rtol=1e-7)
        assert np.isclose(r["objective"], r["objective_eval"], rtol=1e-7)
        back = cone.socp_to_lambda(r["b"], r["w"], X, y, m["c"], 1.0, w)  # Remark 4 the other way
        assert np.isclose(back["lam"], lams[j], rtol=1e-6)
        # Clarabel at its tightest tolerances can end "optimal_inaccurate" (it does on some
        # CPUs for this case): its direction is then good to about 1e-6, hence 1e-5 here
        np.testing.assert_allclose(back["beta"], a[1:], rtol=0, atol=1e-5 * np.abs(a[1:]).max())


def test_kernel_socp_decision_values_match_scaled_port():
    X, y = _ring_data(n=30, seed=4)
    kern = kerndwd.rbfdot(sigma=0.7)
    K = kern(X)
    path = _tight_fit(X, y, [0.05], kern, 1.0)
    a = path.alpha[:, 0]
    t = np.sqrt(a[1:] @ K @ a[1:])
    r = cone.solve_socp_kernel(K, y, cone.remark4_c(t, 1.0))
    f_port = (a[0] + K @ a[1:]) / t
    assert np.abs(r["f"] - f_port).max() <= 1e-4 * np.abs(f_port).max()


def test_kernel_factor_handles_singular_kernel():
    X, _ = _linear_data(n=12, p=3)
    K = X @ X.T  # rank 3, with rounding-level negative eigenvalues
    Phi = cone.kernel_factor(K)
    assert Phi.shape == (12, 3)
    np.testing.assert_allclose(Phi @ Phi.T, K, atol=1e-12 * np.abs(K).max())


def test_other_solvers_agree_with_clarabel():
    X, y = _linear_data()
    ref = cone.solve_generalized(X, y, 0.05, 1.0)
    assert ref["solver"] == "CLARABEL" and ref["seconds"] > 0
    if "ECOS" in cone.available_solvers():
        r = cone.solve_generalized(X, y, 0.05, 1.0, solver="ecos")
        assert r["solver"] == "ECOS"
        assert np.isclose(r["objective_eval"], ref["objective_eval"], rtol=1e-7)
        s = cone.solve_socp(X, y, 2.0, solver="ECOS")
        s_ref = cone.solve_socp(X, y, 2.0)
        assert np.isclose(s["objective"], s_ref["objective"], rtol=1e-7)


def test_cone_inputs_are_checked_and_not_modified():
    X, y = _linear_data()
    X0, y0 = X.copy(), y.copy()
    cone.solve_generalized(X, y, 0.1, 2.0)
    np.testing.assert_array_equal(X, X0)
    np.testing.assert_array_equal(y, y0)
    with pytest.raises(ValueError, match="lam"):
        cone.solve_generalized(X, y, -1.0, 1.0)
    with pytest.raises(ValueError, match="q"):
        cone.solve_generalized(X, y, 0.1, 0.0)
    with pytest.raises(ValueError, match="y"):
        cone.solve_generalized(X, (y > 0).astype(float), 0.1, 1.0)
    with pytest.raises(ValueError, match="solver"):
        cone.solve_socp(X, y, 1.0, solver="nosuch")
    with pytest.raises(ValueError, match="kernel matrix"):
        cone.solve_generalized(X, y, 0.1, 1.0, kernel=True)
    with pytest.raises(ValueError, match="w"):
        cone.solve_socp(X, y, 1.0, w=-np.ones(y.size))


@pytest.mark.parametrize("q", [0.5, 4.0])
def test_remark4_round_trip_for_any_q(q):
    X, y = _linear_data(n=50, p=4, seed=6)
    path = _tight_fit(X, y, [0.2, 0.02], kerndwd.vanilladot(), q)
    for j, lam in enumerate(path.lambda_):
        a = path.alpha[:, j]
        m = cone.lambda_fit_to_socp(a[0], a[1:], q)
        back = cone.socp_to_lambda(m["omega0"], m["omega"], X, y, m["c"], q)
        assert np.isclose(back["lam"], lam, rtol=1e-9)
        assert np.isclose(back["t"], m["scale"], rtol=1e-12)


def test_remark4_map_is_what_the_paper_says():
    for q in (0.5, 1.0, 4.0):
        assert np.isclose(cone.remark4_c(2.0, q), (q + 1) ** (q + 1) / q ** q * 2.0 ** (q + 1), rtol=1e-15)
    m = cone.lambda_fit_to_socp(0.6, np.array([3.0, 4.0]), 1.0)
    assert m["scale"] == 5.0 and m["omega0"] == pytest.approx(0.12)
    np.testing.assert_allclose(m["omega"], [0.6, 0.8])


# --------------------------------------------------------------------------
# the R bridge
# --------------------------------------------------------------------------
def _require(pkg):
    try:
        rbridge.require(pkg)
    except rbridge.RBridgeUnavailable as exc:
        pytest.skip(str(exc))


KERNEL_SPECS = [
    {"name": "vanilladot"},
    {"name": "rbfdot", "sigma": 0.7},
    {"name": "laplacedot", "sigma": 1.3},
    {"name": "polydot", "degree": 3, "scale": 0.5, "offset": 2.0},
    {"name": "besseldot", "sigma": 0.8, "order": 2, "degree": 2},
    {"name": "anovadot", "sigma": 0.6, "degree": 2},
    {"name": "splinedot"},
]


@pytest.mark.parametrize("spec", KERNEL_SPECS, ids=[s["name"] for s in KERNEL_SPECS])
def test_kernlab_kernel_matrices_match_ours(spec):
    _require("kernlab")
    rng = np.random.default_rng(11)
    if spec["name"] == "splinedot":
        x, x2 = rng.random((15, 3)), rng.random((6, 3))
    else:
        x, x2 = rng.standard_normal((15, 3)), rng.standard_normal((6, 3))
    ours = kerndwd.kernels.kernel_from_spec(spec)
    K = rbridge.kernlab_kernel_matrix(spec, x)
    Kc = rbridge.kernlab_kernel_matrix(spec, x, x2)
    assert K.shape == (15, 15) and Kc.shape == (15, 6)
    assert np.abs(ours(x) - K).max() <= 1e-12 * np.abs(K).max()
    assert np.abs(ours(x, x2) - Kc).max() <= 1e-12 * np.abs(Kc).max()


def test_ksvm_fit_and_predict():
    _require("kernlab")
    rng = np.random.default_rng(5)
    y = np.repeat([-1.0, 1.0], 20)
    X = rng.standard_normal((40, 2)) + 3.0 * y[:, None]
    model = rbridge.ksvm_fit(X, y, {"name": "rbfdot", "sigma": 0.5}, C=10.0)
    dec = rbridge.ksvm_predict(model, X)
    cls = rbridge.ksvm_predict(model, X, type="response")
    np.testing.assert_array_equal(cls, y)  # well separated: every training point right
    np.testing.assert_array_equal(np.sign(dec), cls)  # positive decision value means +1
    assert 0 < model.n_support < 40
    with pytest.raises(ValueError, match="type"):
        rbridge.ksvm_predict(model, X, type="probabilities")


def test_bridge_rejects_unknown_kernels():
    with pytest.raises(ValueError, match="kernel name"):
        rbridge._kernel_args({"name": "tanhdot"})
    with pytest.raises(ValueError, match="no parameter"):
        rbridge._kernel_args({"name": "rbfdot", "gamma": 1.0})


def test_missing_r_package_is_one_clear_exception():
    _require(None)  # needs rpy2 and R; the package below does not exist
    with pytest.raises(rbridge.RBridgeUnavailable, match="noSuchPkgForKerndwd") as info:
        rbridge.require("noSuchPkgForKerndwd")
    assert info.value.missing == "R package noSuchPkgForKerndwd"
    assert 'install.packages("noSuchPkgForKerndwd")' in str(info.value)


def test_missing_rpy2_is_one_clear_exception(monkeypatch):
    rbridge._robjects.cache_clear()
    rbridge._package.cache_clear()
    monkeypatch.setitem(sys.modules, "rpy2", None)  # makes "import rpy2" fail
    try:
        with pytest.raises(rbridge.RBridgeUnavailable) as info:
            rbridge.kernlab_kernel_matrix({"name": "vanilladot"}, np.eye(3))
        assert info.value.missing == "rpy2"
        assert "pip install" in str(info.value)
    finally:
        rbridge._robjects.cache_clear()
        rbridge._package.cache_clear()


def test_regenerate_script_stops_clearly_without_kerndwd(tmp_path, capsys):
    from reference import regenerate_fixtures

    try:
        rbridge.require("kerndwd")
    except rbridge.RBridgeUnavailable as exc:
        assert regenerate_fixtures.main([str(tmp_path / "out")]) == 2
        assert str(exc) in capsys.readouterr().err
        assert not (tmp_path / "out").exists()
    else:
        pytest.skip("the R package kerndwd is installed here, so nothing is missing")
