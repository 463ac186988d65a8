"""Kernel approximations by block coordinate descent: ``approx=`` with ``solver="bcd"``.

The models are those of the in-memory designs (random Fourier features with
the same frequencies; Nystrom's functions and penalty on the same
landmarks), so the fits are compared with them, and with the exact kernel
fit where Nystrom takes every row as a landmark.  Tolerances: decision
values of two fits stopped at ``||grad F|| <= 1e-9`` at lambda >= 1e-3 differ
by at most about ``1e-9 / (2 lambda)`` times the conditioning (Lemma 2's
strong convexity); ``1e-6`` leaves that room.
"""

import pickle
import tracemalloc

import numpy as np
import pytest
from scipy import sparse

import kerndwd
from kerndwd import engine
from kerndwd.engine.designs.feature_bcd import FourierBlockDesign, NystroemBlockDesign, feature_block_design
from kerndwd.engine.majorisers.feature_blocks import FourierBlockForm, LandmarkBlockForm, column_blocks
from _engine import majoriser_of, mm_path

LAMBDAS = [1.0, 0.1, 0.01]


def _data(n=150, p=2, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, p))
    y = np.where(X[:, 0] * X[:, 1] + 0.3 * rng.standard_normal(n) > 0, 1, -1)
    return X, y, rng


def _links(path, X):
    return kerndwd.predict(path, X, type="link")


@pytest.mark.parametrize("weighted,q", [(False, 1.0), (True, 1.0), (False, 2.5)])
def test_nystroem_with_every_row_as_landmark_is_the_exact_fit(weighted, q):
    X, y, rng = _data()
    wt = rng.uniform(0.5, 2.0, y.size) if weighted else None
    kern = kerndwd.rbfdot(1.0)
    exact = kerndwd.fit(X, y, LAMBDAS, kern=kern, wt=wt, qval=q, stop="kkt", eps=1e-10)
    blocks = kerndwd.fit(X, y, LAMBDAS, kern=kern, wt=wt, qval=q, stop="kkt", eps=1e-10, approx="nystroem",
                         solver="bcd", n_components=X.shape[0], block_size=32, maxit=3000)
    assert blocks.solver == "bcd" and blocks.jerr == 0 and blocks.alpha.shape == (X.shape[0] + 1, 3)
    newx = rng.standard_normal((20, 2))
    for rows in (X, newx):
        np.testing.assert_allclose(_links(blocks, rows), _links(exact, rows), atol=1e-6, rtol=0)
    # the landmark coefficients are the kernel coefficients (rows in the landmarks' order: all of them)
    np.testing.assert_allclose(blocks.objective, exact.objective, rtol=1e-9)


@pytest.mark.parametrize("weighted,q", [(False, 1.0), (True, 0.5)])
def test_random_features_by_blocks_are_the_in_memory_fit(weighted, q):
    X, y, rng = _data(n=200, p=3, seed=1)
    wt = rng.uniform(0.5, 2.0, y.size) if weighted else None
    kw = dict(kern=kerndwd.rbfdot(0.5), wt=wt, qval=q, stop="kkt", eps=1e-9, approx="rff", n_components=120,
              random_state=4)
    whole = kerndwd.fit(X, y, LAMBDAS, **kw)
    blocks = kerndwd.fit(X, y, LAMBDAS, solver="bcd", block_size=25, maxit=3000, **kw)
    assert blocks.jerr == 0 and (blocks.kkt <= 1e-9).all()
    # the same frequencies, so the same feature weights, not only the same decision values
    np.testing.assert_allclose(blocks.alpha, whole.alpha, atol=1e-6, rtol=0)
    newx = rng.standard_normal((30, 3))
    np.testing.assert_allclose(_links(blocks, newx), _links(whole, newx), atol=1e-6, rtol=0)


@pytest.mark.parametrize("eps", [1e-11, 1e-13])
def test_random_feature_blocks_reach_the_in_memory_designs_gradient(eps):
    """60 x 3 rows, 40 features, lambda = 1: the blocks certify a gradient norm of
    1e-11 and 1e-13 (as the in-memory design does, in tens of sweeps, not the
    whole budget) and reach its objective."""
    rng = np.random.default_rng(0)
    X = rng.standard_normal((60, 3))
    y = np.where(X[:, 0] + 0.5 * rng.standard_normal(60) > 0, 1, -1)
    args = dict(kern=kerndwd.rbfdot(0.5), approx="rff", n_components=40, random_state=0, stop="kkt", eps=eps)
    blocks = kerndwd.fit(X, y, [1.0], maxit=3000, solver="bcd", **args)
    in_memory = kerndwd.fit(X, y, [1.0], **args)
    assert blocks.jerr == 0 and blocks.kkt[0] <= eps and blocks.npass[0] <= 100
    np.testing.assert_allclose(blocks.objective, in_memory.objective, rtol=1e-12)


def test_nystroem_by_blocks_is_the_in_memory_nystroem_fit_on_the_same_landmarks():
    X, y, rng = _data(n=200, seed=2)
    kw = dict(kern=kerndwd.rbfdot(1.0), stop="kkt", eps=1e-10, approx="nystroem", n_components=60, random_state=7)
    whole = kerndwd.fit(X, y, LAMBDAS, **kw)
    # blocks of 16 of 60 landmarks: the landmark basis is redundant, and the sweeps rely on
    # the direction in K_LL's metric to converge
    blocks = kerndwd.fit(X, y, LAMBDAS, solver="bcd", block_size=16, maxit=2000, **kw)
    assert blocks.jerr == 0 and blocks.alpha.shape == (61, 3)
    assert blocks.npass.max() < 400
    newx = rng.standard_normal((30, 2))
    np.testing.assert_allclose(_links(blocks, newx), _links(whole, newx), atol=1e-6, rtol=0)
    np.testing.assert_allclose(blocks.objective, whole.objective, rtol=1e-8)


@pytest.mark.parametrize("approx", ["rff", "nystroem"])
def test_cached_and_formed_columns_give_the_same_fit(approx):
    X, y, _ = _data(n=120, seed=3)
    kw = dict(kern=kerndwd.rbfdot(0.7), stop="kkt", eps=1e-9, approx=approx, solver="bcd", n_components=40,
              block_size=12, random_state=0)
    formed = kerndwd.fit(X, y, LAMBDAS, cache_features=False, **kw)
    cached = kerndwd.fit(X, y, LAMBDAS, cache_features=True, **kw)
    np.testing.assert_allclose(cached.alpha, formed.alpha, atol=1e-9, rtol=0)
    # float32 storage of the cache: the columns rounded to 6e-8, the fit within that of the float64 one
    single = kerndwd.fit(X, y, LAMBDAS, cache_features=True, dtype="float32", **kw)
    np.testing.assert_allclose(_links(single, X), _links(formed, X), atol=1e-4, rtol=0)
    assert (single.kkt <= 1e-9).all()
    # formed with dtype float32: random features by a float32 cosine, the numbers the float32
    # cache holds; Nystrom's kernel columns in float64 (the dtype is the cache's storage)
    formed_single = kerndwd.fit(X, y, LAMBDAS, cache_features=False, dtype="float32", **kw)
    same = single if approx == "rff" else formed
    np.testing.assert_allclose(formed_single.alpha, same.alpha, atol=1e-9, rtol=0)


def test_r_step_rule_runs_and_is_certified():
    X, y, _ = _data(n=120, seed=5)
    kw = dict(kern=kerndwd.rbfdot(1.0), approx="nystroem", solver="bcd", n_components=50, block_size=16,
              random_state=1)
    step = kerndwd.fit(X, y, LAMBDAS, stop="step", eps=1e-12, maxit=3000, **kw)
    kkt = kerndwd.fit(X, y, LAMBDAS, eps=1e-9, maxit=3000, **kw)  # the gradient rule is this design's default
    assert step.jerr == 0 and kkt.jerr == 0 and kkt.stop == "kkt" and step.stop == "step"
    # the certified bound of R's rule: finite, small, and above the true gap
    gap = step.objective - kkt.objective
    assert np.isfinite(step.gap_bound).all() and (step.gap_bound >= gap - 1e-12).all()
    assert (step.gap_bound < 1e-3 * step.objective).all()
    np.testing.assert_allclose(_links(step, X), _links(kkt, X), atol=1e-3, rtol=0)


@pytest.mark.parametrize("approx", ["rff", "nystroem"])
def test_each_lambda_starts_from_the_last_ones_fit(approx):
    X, y, _ = _data(n=150, seed=6)
    design = feature_block_design(approx, {"n_components": 60, "block_size": 20}, random_state=0)
    kern = kerndwd.rbfdot(1.0)

    def first_sweeps(lambdas):
        problem = engine.Problem.from_arrays(X, np.where(y > 0, 1.0, -1.0), lambdas, kern=kern, design=design,
                                             stop="kkt", eps=1e-8)
        majoriser = majoriser_of(problem)
        objective = engine.Objective(majoriser.form, problem.y, problem.loss)
        seen = {}

        def record(l, lam, coord, f):
            seen.setdefault(l, objective.value(f, majoriser.penalty_at(coord, f), lam))

        result = mm_path(majoriser, problem, record)
        return seen, result

    path, result = first_sweeps([0.105, 0.1])
    cold, alone = first_sweeps([0.1])
    assert result.jerr == 0 and alone.jerr == 0
    optimum = alone.objective[0]
    # one sweep from the fit at 0.105 is far closer to the optimum at 0.1 than one sweep from zero
    assert path[1] - optimum < 0.1 * (cold[0] - optimum)


def test_formed_columns_never_take_the_whole_feature_matrix():
    X, y, _ = _data(n=400, p=3, seed=8)
    m = 2000
    kw = dict(kern=kerndwd.rbfdot(0.5), approx="rff", solver="bcd", n_components=m, block_size=32,
              cache_features=False, random_state=0, eps=1e-4, maxit=30)
    tracemalloc.start()
    try:
        path = kerndwd.fit(X, y, [1.0], **kw)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    whole = X.shape[0] * m * 8  # the feature matrix in float64: 6.4 MB
    assert path.alpha.shape == (m + 1, 1)
    assert peak < 0.5 * whole, peak


def test_forms_agree_with_the_dense_products():
    X, _, rng = _data(n=50, p=3, seed=9)
    fmap = engine.FourierDesign(random_state=0, n_components=23).fitted_map(X, kerndwd.rbfdot(0.5))
    form = FourierBlockForm(fmap, X, block_size=5, tile_rows=7)
    Phi = fmap.transform(X)
    theta, z = rng.standard_normal((23, 2)), rng.standard_normal((50, 2))
    np.testing.assert_allclose(form.apply(theta), Phi @ theta, atol=1e-12)
    np.testing.assert_allclose(form.apply_t(z), Phi.T @ z, atol=1e-12)
    kern = kerndwd.laplacedot(0.3)
    rows = np.array([1, 4, 9, 20, 33, 41, 47])
    landmarks = LandmarkBlockForm(kern, X, rows, block_size=3)
    C = kern(X, X[rows])
    beta = rng.standard_normal(rows.size)
    applied = landmarks.apply(beta)
    np.testing.assert_allclose(applied, C @ beta, atol=1e-12)
    np.testing.assert_allclose(landmarks.penalty(beta, applied), beta @ kern(X[rows]) @ beta, rtol=1e-10)
    # the dual norm of a gradient C'v in the penalty's metric: g' K_LL^-1 g
    v = rng.standard_normal(50)
    g = C.T @ (v + 2 * 0.1 * landmarks.scatter(beta))
    expected = g @ np.linalg.solve(kern(X[rows]), g)
    assert landmarks.dual_norm_sq(v, beta, 0.1) == pytest.approx(expected, rel=1e-8)
    assert column_blocks(7, 3) == [(0, 2), (2, 5), (5, 7)] and column_blocks(3, 10) == [(0, 3)]


def test_every_face_takes_the_block_designs():
    X, y, _ = _data(n=90, seed=10)
    labels = np.where(y > 0, "b", "a")
    kern = kerndwd.rbfdot(1.0)
    opts = dict(approx="rff", solver="bcd", n_components=30, block_size=8, random_state=0)
    res = kerndwd.cv(X, labels, [0.5, 0.05], kern=kern, nfolds=3, eps=1e-8, **opts)
    assert res.fit_args["solver"] == "bcd" and res.fit_args["block_size"] == 8
    refit = kerndwd.fit(X, labels, res.lambdas, **res.fit_args)  # fit_args reproduce the design
    assert refit.solver == "bcd" and refit.design == "rff"
    tuned = kerndwd.tune(X, labels, [0.5, 0.05], qvals=(1.0, 2.0), kern=kern, nfolds=3, eps=1e-8, **opts)
    assert np.isfinite(tuned.lam_tune)
    est = kerndwd.DWDClassifier(kernel=kern, lambd=0.05, approx="nystroem", solver="bcd", n_components=40,
                                design_options={"block_size": 10}, random_state=0).fit(X, labels)
    assert est.solver_ == "bcd" and (est.predict(X) == labels).mean() > 0.8
    clone = pickle.loads(pickle.dumps(est))
    np.testing.assert_array_equal(clone.decision_function(X[:5]), est.decision_function(X[:5]))
    pd = pytest.importorskip("pandas")
    frame = pd.DataFrame(X, columns=["u", "v"])
    path = kerndwd.fit(frame, labels, [0.05], kern=kern, eps=1e-8, **opts)
    np.testing.assert_allclose(_links(path, X), _links(kerndwd.fit(X, labels, [0.05], kern=kern, eps=1e-8, **opts),
                                                       X), atol=1e-12)


def test_what_the_block_designs_refuse_is_named():
    X, y, _ = _data(n=40, seed=11)
    kern = kerndwd.rbfdot(1.0)
    with pytest.raises(TypeError, match=r"^X: sparse rows .* approx='rff' with solver='bcd'"):
        kerndwd.fit(sparse.csr_matrix(X), y, [0.1], kern=kern, approx="rff", solver="bcd")
    with pytest.raises(TypeError, match=r"^X: sparse rows"):
        kerndwd.fit(sparse.csr_matrix(X), y, [0.1], kern=kern, approx="nystroem", solver="bcd")
    with pytest.raises(ValueError, match=r"method='newton' cannot fit the approx='nystroem' with solver='bcd'"):
        kerndwd.fit(X, y, [0.1], kern=kern, approx="nystroem", solver="bcd", method="newton")
    with pytest.raises(ValueError, match=r"approx='rff' with solver='bcd' serves kern in"):
        kerndwd.fit(X, y, [0.1], kern=kerndwd.polydot(2), approx="rff", solver="bcd")
    with pytest.raises(ValueError, match=r"approx must be one of \['nystroem', 'rff'\] with solver='bcd'"):
        kerndwd.fit(X, y, [0.1], kern=kern, approx="fastfood", solver="bcd")
    with pytest.raises(ValueError, match="give approx or solver, not both"):
        kerndwd.fit(X, y, [0.1], kern=kern, approx="rff", solver="cg")
    with pytest.raises(ValueError, match="block_size"):
        kerndwd.fit(X, y, [0.1], kern=kern, approx="rff", solver="bcd", block_size=0)
    with pytest.raises(TypeError, match="cache_features"):
        kerndwd.fit(X, y, [0.1], kern=kern, approx="rff", solver="bcd", cache_features="yes")
    with pytest.raises(TypeError, match="does not accept landmarks"):
        kerndwd.fit(X, y, [0.1], kern=kern, approx="rff", solver="bcd", landmarks="uniform")
    with pytest.raises(ValueError, match="n_components=50 exceeds the number of rows"):
        kerndwd.fit(X, y, [0.1], kern=kern, approx="nystroem", solver="bcd", n_components=50)
    with pytest.raises(ValueError, match="dtype"):
        kerndwd.fit(X, y, [0.1], kern=kern, approx="nystroem", solver="bcd", dtype="float16")


def test_the_design_records_how_it_was_selected():
    design = feature_block_design("nystroem", {"n_components": 5, "block_size": 2}, random_state=3)
    assert isinstance(design, NystroemBlockDesign) and design.name == "nystroem" and design.selected_by == "approx"
    assert design.options == {"n_components": 5, "block_size": 2, "solver": "bcd"}
    caps = design.capabilities(kerndwd.rbfdot(1.0), "dense")
    assert caps.storage == ("dense",) and caps.solvers == ("mm",) and caps.default_stop == "kkt" and caps.weights
    assert isinstance(feature_block_design("rff", {}), FourierBlockDesign)
    assert feature_block_design("rff", {}).block_size == 256
    assert "nystroem" in engine.design_names("approx")  # the registered names are unchanged


def test_duplicated_rows_leave_the_landmark_system_singular_and_the_fit_converges():
    X, y, _ = _data(n=60, seed=12)
    X = np.vstack([X, X[:20]])
    y = np.concatenate([y, y[:20]])
    kw = dict(kern=kerndwd.rbfdot(1.0), stop="kkt", eps=1e-8, maxit=3000)
    exact = kerndwd.fit(X, y, [0.1, 0.01], **kw)
    blocks = kerndwd.fit(X, y, [0.1, 0.01], approx="nystroem", solver="bcd", n_components=80, block_size=16, **kw)
    assert blocks.jerr == 0
    np.testing.assert_allclose(_links(blocks, X), _links(exact, X), atol=1e-5, rtol=0)


# --------------------------------------------------------------------------
# approx= with solver="auto": the one system or the blocks
# --------------------------------------------------------------------------
def test_auto_picks_the_system_or_the_blocks_by_m_and_says_why():
    from kerndwd.engine.designs.feature_bcd import FEATURE_SYSTEM_MAX, FeatureAutoDesign

    rbf = kerndwd.rbfdot(1.0)
    small = FeatureAutoDesign("nystroem", n_components=50).for_rows(1000, 3, rbf, "dense", False)
    assert type(small).__name__ == "NystroemDesign" and "one (m + 1) x (m + 1) system" in small.chosen
    large = FeatureAutoDesign("rff", n_components=FEATURE_SYSTEM_MAX + 1).for_rows(1000, 3, rbf, "dense", False)
    assert isinstance(large, FourierBlockDesign) and f"more than {FEATURE_SYSTEM_MAX}" in large.chosen
    asked = FeatureAutoDesign("nystroem", n_components=50, block_size=8).for_rows(1000, 3, rbf, "dense", False)
    assert isinstance(asked, NystroemBlockDesign) and asked.block_size == 8
    remote = FeatureAutoDesign("rff", n_components=FEATURE_SYSTEM_MAX + 1).for_rows(1000, 3, rbf, "remote", False)
    assert isinstance(remote, FourierBlockDesign) and f"more than {FEATURE_SYSTEM_MAX}" in remote.chosen
    with pytest.raises(ValueError, match="approx must be one of"):
        FeatureAutoDesign("fastfood")
    with pytest.raises(TypeError, match="block_sizes"):
        FeatureAutoDesign("rff", block_sizes=8)


@pytest.mark.parametrize("approx", ["rff", "nystroem"])
def test_auto_fits_what_the_design_it_picks_fits(approx):
    X, y, _ = _data()
    kw = dict(kern=kerndwd.rbfdot(1.0), stop="kkt", eps=1e-9, n_components=40, random_state=3)
    auto = kerndwd.fit(X, y, LAMBDAS, approx=approx, solver="auto", **kw)
    plain = kerndwd.fit(X, y, LAMBDAS, approx=approx, **kw)
    assert auto.chosen.startswith(f"approx={approx!r} with solver='auto': m = 40") and plain.chosen is None
    np.testing.assert_allclose(_links(auto, X), _links(plain, X), atol=1e-6)
    blocks = kerndwd.fit(X, y, LAMBDAS, approx=approx, solver="auto", block_size=16, **kw)
    assert blocks.design == approx and blocks.solver != plain.solver and "blocks of 16" in blocks.chosen
    np.testing.assert_allclose(_links(blocks, X), _links(plain, X), atol=1e-6)
    clf = kerndwd.DWDClassifier(kernel="rbf", gamma=1.0, lambd=0.1, approx=approx, n_components=40,
                                solver="auto", random_state=3).fit(X, y)
    assert clf.solver_chosen_.startswith(f"approx={approx!r} with solver='auto'")
    with pytest.raises(ValueError, match=r"^stop='step' is R's rule"):
        kerndwd.fit(X, y, LAMBDAS, approx=approx, solver="auto", kern=kw["kern"], stop="step", n_components=40)


def test_a_feature_system_beyond_the_memory_available_is_refused_naming_n_components(monkeypatch):
    from kerndwd.engine.designs import features

    X, y, _ = _data()
    monkeypatch.setattr(features, "available_memory", lambda: 1e6)  # 1 MB: 150 x 400 features and a 401^2 system
    with pytest.raises(ValueError, match=r"^n_components: approx='rff' with m = 400 columns on 150 rows takes "
                                         r"0.004 GiB.*solver='bcd'"):
        kerndwd.fit(X, y, [0.1], kern=kerndwd.rbfdot(1.0), approx="rff", n_components=400)
    blocks = kerndwd.fit(X, y, [0.1], kern=kerndwd.rbfdot(1.0), approx="rff", n_components=400, solver="bcd")
    assert blocks.jerr == 0 and blocks.kkt[0] <= blocks.eps
