"""Linear and feature DWD on Dask arrays: a fit on a 2-worker LocalCluster
equals the in-memory fit, the rows stay on the workers, and bad Dask input
is refused at the entry with the argument named."""

import pickle
import subprocess
import sys

import numpy as np
import pytest

import kerndwd
from kerndwd.engine.designs import base as designs_module
from kerndwd.engine import FeatureDesign, register_design

da = pytest.importorskip("dask.array")
dd = pytest.importorskip("dask.dataframe")
distributed = pytest.importorskip("distributed")

from test_engine_contract import PlainFeatures  # noqa: E402  (the toy design phi(x) = x)

LIN = kerndwd.vanilladot()


from _cluster import client, cluster_client  # noqa: E402,F401  (fixtures)


@pytest.fixture
def plain():
    saved = dict(designs_module._REGISTRY)
    register_design(PlainFeatures)
    yield "plain"
    designs_module._REGISTRY.clear()
    designs_module._REGISTRY.update(saved)


def _data(n=400, p=3, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, p))
    y = np.where(X[:, 0] + 0.5 * rng.standard_normal(n) > 0.2, "yes", "no")
    w = rng.uniform(0.5, 2.0, n)
    return X, y, w


def _same_fit(dask_path, path, tol=1e-10):
    np.testing.assert_array_equal(dask_path.npass, path.npass)
    assert dask_path.solver == path.solver and dask_path.design == path.design
    assert np.abs(dask_path.alpha - path.alpha).max() <= tol
    assert np.abs(dask_path.objective - path.objective).max() <= tol
    assert np.abs(dask_path.kkt - path.kkt).max() <= tol


# --------------------------------------------------------------------------
# on the cluster: the same fit as in memory
# --------------------------------------------------------------------------
#: R's rule with a loose eps: few passes (each one a round trip to the cluster),
#: the same iterates as in memory, pass for pass
FAST = dict(eps=1e-3, stop="step")


@pytest.mark.parametrize("weighted", [False, True], ids=["unweighted", "weighted"])
def test_linear_path_on_a_cluster_equals_the_in_memory_path(client, weighted):
    X, y, w = _data()
    wt = w if weighted else None
    lam = [1.0, 0.3]
    path = kerndwd.fit(X, y, lam, kern=LIN, wt=wt, **FAST)
    Xd = da.from_array(X, chunks=(100, 2))  # two column chunks: rechunked to one
    on_cluster = kerndwd.fit(Xd, da.from_array(y, chunks=150), lam, kern=LIN,
                             wt=None if wt is None else da.from_array(w, chunks=80), **FAST)
    _same_fit(on_cluster, path)
    # prediction: numpy in, numpy out; Dask in, a lazy Dask array chunked like the rows out
    newx = np.random.default_rng(5).standard_normal((50, 3))
    np.testing.assert_allclose(on_cluster.predict(newx, type="link"), path.predict(newx, type="link"),
                               rtol=0, atol=1e-10)
    link = on_cluster.predict(Xd, type="link")
    assert isinstance(link, da.Array) and link.chunks == ((100,) * 4, (2,))
    np.testing.assert_allclose(link.compute(), path.predict(X, type="link"), rtol=0, atol=1e-10)
    np.testing.assert_array_equal(on_cluster.predict(Xd).compute(), path.predict(X))


def test_feature_design_on_a_cluster_equals_the_in_memory_path(client, plain):
    X, y, w = _data(seed=1)
    lam = [1.0, 0.3]
    path = kerndwd.fit(X, y, lam, kern=LIN, wt=w, approx=plain, **FAST)
    on_cluster = kerndwd.fit(da.from_array(X, chunks=(100, 3)), y, lam, kern=LIN, wt=w, approx=plain, **FAST)
    assert on_cluster.predictor.coef_space == "features"
    _same_fit(on_cluster, path)


@pytest.mark.parametrize("weighted", [False, True], ids=["unweighted", "weighted"])
def test_nystroem_on_a_cluster_equals_the_in_memory_path(client, weighted):
    """The landmarks are drawn from the rows on the cluster exactly as from the
    rows in memory, and the fit matches it to 1e-10."""
    X, y, w = _data(seed=2)
    w = w if weighted else None
    kern, lam = kerndwd.rbfdot(0.5), [1.0, 0.1, 0.01]
    kw = dict(kern=kern, wt=w, approx="nystroem", n_components=40, random_state=3, **FAST)
    path = kerndwd.fit(X, y, lam, **kw)
    on_cluster = kerndwd.fit(da.from_array(X, chunks=(100, 3)), y, lam, **kw)
    assert on_cluster.predictor.coef_space == "features"
    _same_fit(on_cluster, path)
    newx = np.random.default_rng(9).standard_normal((50, 3))
    np.testing.assert_allclose(on_cluster.predict(newx, type="link"), path.predict(newx, type="link"),
                               rtol=0, atol=1e-10)


def test_dask_dataframe_with_a_label_column_on_a_cluster(client):
    pd = pytest.importorskip("pandas")
    X, y, _ = _data(seed=3)
    frame = pd.DataFrame(X, columns=["a", "b", "c"]).assign(flag=X[:, 2] > 0, label=np.where(y == "yes", 1, 0))
    ddf = dd.from_pandas(frame, npartitions=3)
    lam = [1.0, 0.3]
    Xm = frame[["a", "b", "c", "flag"]].to_numpy(dtype=float)
    path = kerndwd.fit(Xm, frame["label"], lam, kern=LIN, **FAST)
    on_cluster = kerndwd.fit(ddf[["a", "b", "c", "flag"]], ddf["label"], lam, kern=LIN, **FAST)
    _same_fit(on_cluster, path)


def test_estimator_on_dask_input_on_a_cluster(client):
    pytest.importorskip("sklearn")
    from kerndwd import DWDClassifier

    X, y, w = _data(seed=4)
    Xd = da.from_array(X, chunks=(100, 3))
    settings = dict(lambd=0.3, stop="step", tol=1e-3)
    ref = DWDClassifier(**settings).fit(X, y, sample_weight=w)
    est = DWDClassifier(**settings).fit(Xd, y, sample_weight=da.from_array(w, chunks=100))
    np.testing.assert_array_equal(est.n_iter_, ref.n_iter_)
    assert np.abs(est.coef_ - ref.coef_).max() <= 1e-10 and np.abs(est.intercept_ - ref.intercept_).max() <= 1e-10
    D = est.decision_function(Xd)
    assert isinstance(D, da.Array) and D.shape == (400,)
    np.testing.assert_allclose(D.compute(), ref.decision_function(X), rtol=0, atol=1e-10)
    np.testing.assert_array_equal(est.predict(Xd).compute(), ref.predict(X))


@pytest.mark.slow
def test_momentum_one_vs_rest_and_many_chunks_on_a_cluster(client):
    """The heavier cluster cases: the gradient rule with momentum (two
    reductions per pass), one-vs-rest with weights, 3,000 rows in 60 chunks."""
    pytest.importorskip("sklearn")
    from kerndwd import DWDClassifier

    X, y, w = _data(n=3000, p=5, seed=9)
    Xd = da.from_array(X, chunks=(50, 5))
    path = kerndwd.fit(X, y, [1.0, 0.1], kern=LIN, wt=w, stop="kkt", eps=1e-8)
    on_cluster = kerndwd.fit(Xd, y, [1.0, 0.1], kern=LIN, wt=w, stop="kkt", eps=1e-8)
    assert (on_cluster.kkt <= 1e-8).all()
    assert np.abs(on_cluster.objective - path.objective).max() <= 1e-12 * path.objective.max()
    y3 = np.digitize(X[:, 1], [-0.5, 0.5])
    settings = dict(lambd=0.05, stop="step", tol=1e-5, class_weight="balanced")
    ref = DWDClassifier(**settings).fit(X, y3, sample_weight=w)
    est = DWDClassifier(**settings).fit(Xd, da.from_array(y3, chunks=50), sample_weight=da.from_array(w, chunks=50))
    np.testing.assert_array_equal(est.n_iter_, ref.n_iter_)
    assert np.abs(est.coef_ - ref.coef_).max() <= 1e-10
    np.testing.assert_array_equal(est.predict(Xd).compute(), ref.predict(X))


# --------------------------------------------------------------------------
# the same on Dask's default scheduler (no cluster: fast), where the MM
# loop's other branches run
# --------------------------------------------------------------------------
def test_gradient_rule_with_momentum_on_dask_reaches_the_same_optimum():
    """stop="kkt" takes the loop's momentum, restart and confirmation branches;
    both fits certify the gradient norm, and their optima agree."""
    X, y, w = _data(seed=2)
    for wt in (None, w):
        path = kerndwd.fit(X, y, [0.3], kern=LIN, wt=wt, stop="kkt", eps=1e-9)
        on_dask = kerndwd.fit(da.from_array(X, chunks=(100, 3)), y, [0.3], kern=LIN, wt=wt, stop="kkt", eps=1e-9)
        assert (on_dask.kkt <= 1e-9).all() and (path.kkt <= 1e-9).all()
        assert np.abs(on_dask.objective - path.objective).max() <= 1e-12 * path.objective.max()
        # F is 2 lambda strongly convex in beta: gradients of 1e-9 pin beta to about 1e-8
        assert np.abs(on_dask.alpha[1:] - path.alpha[1:]).max() <= 1e-8


def test_one_vs_rest_estimator_with_balanced_classes_on_dask():
    pytest.importorskip("sklearn")
    from kerndwd import DWDClassifier

    X, _, w = _data(seed=4)
    y3 = np.digitize(X[:, 1], [-0.5, 0.5])
    settings = dict(lambd=0.05, stop="step", tol=1e-5, class_weight="balanced")
    ref = DWDClassifier(**settings).fit(X, y3, sample_weight=w)
    est = DWDClassifier(**settings).fit(da.from_array(X, chunks=(100, 3)), da.from_array(y3, chunks=100),
                                        sample_weight=w)
    np.testing.assert_array_equal(est.classes_, ref.classes_)
    np.testing.assert_array_equal(est.n_iter_, ref.n_iter_)
    assert np.abs(est.coef_ - ref.coef_).max() <= 1e-10 and np.abs(est.intercept_ - ref.intercept_).max() <= 1e-10
    D = est.decision_function(da.from_array(X, chunks=(100, 3)))
    assert D.shape == (400, 3)
    np.testing.assert_array_equal(est.predict(da.from_array(X, chunks=(100, 3))).compute(), ref.predict(X))
    np.testing.assert_allclose(est.decision_function(X), ref.decision_function(X), rtol=0, atol=1e-10)


class LandmarkFeatures(FeatureDesign):
    """A toy map fitted from a few rows drawn at random: ``phi(x) = k(x, landmarks)``."""

    name = "landmarks"

    def fitted_map(self, X, kern):
        rows = np.random.default_rng(self.random_state).choice(len(X), size=6, replace=False)
        self.landmarks, self.kern = X[rows], kern  # X[rows]: just these rows, in this order
        return self

    def transform(self, rows):
        return self.kern(rows, self.landmarks)


class WholeMatrixFeatures(FeatureDesign):
    """A toy map that reads every row (the column means): fitted on all rows gathered."""

    name = "centred"

    def fitted_map(self, X, kern):
        self.means = np.asarray(X).mean(axis=0)
        return self

    def transform(self, rows):
        return rows - self.means


@pytest.fixture
def toy_maps():
    saved = dict(designs_module._REGISTRY)
    register_design(LandmarkFeatures)
    register_design(WholeMatrixFeatures)
    yield
    designs_module._REGISTRY.clear()
    designs_module._REGISTRY.update(saved)


def test_feature_maps_are_fitted_on_the_client_from_the_rows_they_ask_for(toy_maps):
    X, y, w = _data(seed=8)
    Xd = da.from_array(X, chunks=(100, 3))
    rbf = kerndwd.rbfdot(0.5)
    path = kerndwd.fit(X, y, [0.3], kern=rbf, wt=w, approx="landmarks", random_state=3, **FAST)
    on_dask = kerndwd.fit(Xd, y, [0.3], kern=rbf, wt=w, approx="landmarks", random_state=3, **FAST)
    _same_fit(on_dask, path)
    np.testing.assert_array_equal(on_dask.predictor.feature_map.landmarks, path.predictor.feature_map.landmarks)
    # a map that reads every row gets them all, with a warning that they left the cluster
    path = kerndwd.fit(X, y, [0.3], kern=LIN, approx="centred", **FAST)
    with pytest.warns(UserWarning, match="gathered to the client"):
        on_dask = kerndwd.fit(Xd, y, [0.3], kern=LIN, approx="centred", **FAST)
    _same_fit(on_dask, path)


# --------------------------------------------------------------------------
# the rows stay where they are; results hold no reference to the cluster
# --------------------------------------------------------------------------
@pytest.mark.parametrize("slice_rows", [8192, 16], ids=["whole-chunks", "sliced-chunks"])
def test_per_pass_products_return_k_plus_one_numbers_and_leave_n_vectors_lazy(slice_rows, monkeypatch):
    from kerndwd.engine import chunk_tasks as distributed_module
    from kerndwd.engine.chunked import ChunkedRows
    from kerndwd.engine.designs.dask import DaskLinearForm
    from kerndwd.engine.forms import DenseLinearForm

    monkeypatch.setattr(distributed_module, "SLICE_ROWS", slice_rows)  # chunks of 70 rows: 5 slices each

    rng = np.random.default_rng(6)
    B, z, w = rng.standard_normal((300, 4)), rng.standard_normal(300), rng.uniform(0.5, 2.0, 300)
    form, dense = DaskLinearForm(da.from_array(B, chunks=(70, 4))), DenseLinearForm(B)
    zd, wd = da.from_array(z, chunks=70), da.from_array(w, chunks=70)
    assert isinstance(form.ztmul(zd), np.ndarray) and form.ztmul(zd).shape == (5,)
    np.testing.assert_allclose(form.ztmul(zd), dense.ztmul(z), rtol=1e-13, atol=1e-12)
    np.testing.assert_allclose(form.gram(), dense.gram(), rtol=1e-13, atol=1e-12)
    np.testing.assert_allclose(form.gram(wd), dense.gram(w), rtol=1e-13, atol=1e-12)
    np.testing.assert_allclose(form.weighted_sq_norms(wd), dense.weighted_sq_norms(w), rtol=1e-13, atol=1e-12)
    coef = rng.standard_normal(5)
    f = form.zmul(coef)
    assert isinstance(f, ChunkedRows) and f.chunks == (70, 70, 70, 70, 20)
    np.testing.assert_allclose(f.compute(), dense.zmul(coef), rtol=1e-13, atol=1e-12)
    # the MM loop's numpy arithmetic on the rows is recorded, then evaluated chunk by chunk
    y = ChunkedRows.from_dask(da.from_array(np.sign(z), chunks=70))
    u = y * (f + 0.5 * (f - 2.0))
    out = np.maximum(u, 0.5, out=np.empty_like(u))
    np.power(out, 2.0, out=out)
    expected = np.maximum(np.sign(z) * (1.5 * dense.zmul(coef) - 1.0), 0.5) ** 2
    np.testing.assert_allclose(out.compute(), expected, rtol=1e-13, atol=1e-12)
    assert np.mean(out) == pytest.approx(expected.mean(), rel=1e-13)
    np.testing.assert_allclose(form.ztmul(np.where(u <= 0.5, 1.0 - u, out)),
                               dense.ztmul(np.where(u.compute() <= 0.5, 1.0 - u.compute(), expected)), rtol=1e-12)
    with pytest.raises(TypeError, match="ChunkedRows combine with scalars"):
        y * z  # an in-memory n-vector is never shipped with the graph
    # a boolean selection takes ufuncs and reductions: the geometric mean of the positive weights
    wz = ChunkedRows.from_dask(da.from_array(np.where(z > 0, w, 0.0), chunks=70))
    positive = wz[wz > 0]
    assert np.mean(np.log2(positive)) == pytest.approx(np.mean(np.log2(w[z > 0])), rel=1e-13)
    assert len(positive) == int((z > 0).sum())
    with pytest.raises(ValueError, match="select different rows"):
        positive + wz
    # a kept vector is stored by the first reduction that reads it, and reads back the same
    kept = form.keep_rows(u)
    np.testing.assert_allclose(form.ztmul(kept * 2.0), 2.0 * dense.ztmul(u.compute()), rtol=1e-12)
    np.testing.assert_allclose(kept.compute(), u.compute(), rtol=0, atol=0)


def test_a_fitted_path_pickles_without_the_cluster():
    X, y, w = _data(n=120, seed=7)
    path = kerndwd.fit(da.from_array(X, chunks=(40, 3)), y, [0.5], kern=LIN, wt=w)
    clone = pickle.loads(pickle.dumps(path))
    np.testing.assert_array_equal(clone.predict(X, type="link"), path.predict(X, type="link"))
    assert isinstance(clone.wt, np.ndarray) and np.array_equal(clone.wt, w)  # values, not a handle on the cluster


def test_rows_with_one_column_per_lambda_reduce_like_numpy():
    """Per-column work on all lambdas at once (as a certificate of a whole path
    does): matrices of rows from a 2-D theta, v[:, None], broadcast rows,
    column selections, axis-0 means, w @ m, and the form's Z'u per column."""
    from kerndwd.engine.chunked import ChunkedRows
    from kerndwd.engine.designs.dask import DaskLinearForm
    from kerndwd.engine.forms import DenseLinearForm
    from kerndwd.engine.loss import loss_derivs, loss_values

    rng = np.random.default_rng(10)
    B, theta, b = rng.standard_normal((250, 3)), rng.standard_normal((3, 4)), rng.standard_normal(4)
    y, w = np.sign(rng.standard_normal(250)), rng.uniform(0.5, 2.0, 250)
    form, dense = DaskLinearForm(da.from_array(B, chunks=(60, 3))), DenseLinearForm(B)
    yd, wd = (ChunkedRows.from_dask(da.from_array(v, chunks=60)) for v in (y, w))
    applied = form.apply(theta).reshape(form.n, -1)
    assert applied.shape == (250, 4)
    u, u_np = yd[:, None] * (b[None, :] + applied), y[:, None] * (b[None, :] + B @ theta)
    np.testing.assert_allclose((wd[:, None] * loss_derivs(u, 1.0)).mean(axis=0),
                               (w[:, None] * loss_derivs(u_np, 1.0)).mean(axis=0), rtol=1e-12)
    np.testing.assert_allclose(wd @ loss_values(u, 2.0), w @ loss_values(u_np, 2.0), rtol=1e-12)
    np.testing.assert_allclose(np.ones(250) @ u[:, [0, 2]], u_np[:, [0, 2]].sum(axis=0), rtol=1e-12)
    curv = np.where(u > 0.5, (0.5 / np.maximum(u, 0.5)) ** 3, 0.0)
    np.testing.assert_allclose(np.mean(curv, axis=0), np.where(u_np > 0.5, (0.5 / np.maximum(u_np, 0.5)) ** 3,
                                                                0.0).mean(axis=0), rtol=1e-12)
    np.testing.assert_allclose(form.apply_t(u), dense.apply_t(u_np), rtol=1e-12)
    with pytest.raises(ValueError, match="make the vector a column"):
        yd * applied


# --------------------------------------------------------------------------
# bad input, refused at the entry with the argument named
# --------------------------------------------------------------------------
def test_unknown_chunk_sizes_are_refused_by_name():
    X, y, _ = _data(n=60)
    Xd = da.from_array(X, chunks=(20, 3))
    masked = Xd[Xd[:, 0] > -10]  # a boolean mask: the row count of each chunk is unknown
    assert np.isnan(masked.chunks[0][0])
    with pytest.raises(ValueError, match=r"X has unknown chunk sizes .*compute_chunk_sizes"):
        kerndwd.fit(masked, y, [0.5], kern=LIN)


def test_nan_and_infinite_values_are_refused_by_name():
    X, y, _ = _data(n=60)
    for bad in (np.nan, np.inf):
        Xb = X.copy()
        Xb[37, 1] = bad
        with pytest.raises(ValueError, match="X contains NaN or infinite values"):
            kerndwd.fit(da.from_array(Xb, chunks=(20, 3)), y, [0.5], kern=LIN)
    path = kerndwd.fit(da.from_array(X, chunks=(20, 3)), y, [0.5], kern=LIN)
    Xb = X.copy()
    Xb[3, 0] = np.nan
    with pytest.raises(ValueError, match="newx contains NaN or infinite values"):
        path.predict(da.from_array(Xb, chunks=(20, 3))).compute()
    yb = np.where(y == "yes", 1.0, 0.0)
    yb[5] = np.nan
    with pytest.raises(ValueError, match="y contains NaN"):
        kerndwd.fit(da.from_array(X, chunks=(20, 3)), da.from_array(yb, chunks=20), [0.5], kern=LIN)
    with pytest.raises(ValueError, match="wt must be non-negative"):
        kerndwd.fit(da.from_array(X, chunks=(20, 3)), y, [0.5], kern=LIN, wt=da.from_array(-np.ones(60), chunks=20))


def test_rows_beyond_the_safe_scale_are_refused_on_a_cluster_as_in_memory(client, monkeypatch):
    """Entries of 1e150 and more: the in-memory message, before any pass."""
    X, y, _ = _data(n=60)
    big = X * 1e150
    with pytest.raises(ValueError) as in_memory:
        kerndwd.fit(big, y, [1.0], kern=LIN)
    assert str(in_memory.value) == (f"X has entries of magnitude up to {np.abs(big).max():.3g}: products of rows "
                                    "overflow double precision above about 1e+150; rescale X (e.g. standardise "
                                    "its columns)")
    from kerndwd.engine import chunk_tasks

    def no_pass(*args, **kwargs):
        raise AssertionError("the rows were placed for a pass")

    monkeypatch.setattr(chunk_tasks, "persist_beside", no_pass)
    monkeypatch.setattr("kerndwd._inputs.rows.persist_beside", no_pass)
    with pytest.raises(ValueError) as on_cluster:
        kerndwd.fit(da.from_array(big, chunks=(15, 3)), da.from_array(np.where(y == "yes", 1, -1), chunks=15),
                    [1.0], kern=LIN)
    assert str(on_cluster.value) == str(in_memory.value)
    monkeypatch.undo()
    path = kerndwd.fit(da.from_array(X, chunks=(15, 3)), y, [1.0], kern=LIN)
    newx = da.from_array(big[:30], chunks=(15, 3))
    with pytest.raises(ValueError, match=r"^newx has entries of magnitude up to .*rescale newx"):
        path.predict(newx).compute()


def test_non_numeric_dataframe_columns_are_named():
    pd = pytest.importorskip("pandas")
    X, y, _ = _data(n=60)
    frame = pd.DataFrame(X, columns=["a", "b", "c"]).assign(city=np.where(y == "yes", "Oslo", "Rome"),
                                                            kind=pd.Categorical(y))
    with pytest.raises(TypeError, match="X must be numeric; non-numeric columns: city, kind"):
        kerndwd.fit(dd.from_pandas(frame, npartitions=2), y, [0.5], kern=LIN)


def test_other_bad_dask_input_is_refused_by_name():
    X, y, _ = _data(n=60)
    Xd = da.from_array(X, chunks=(20, 3))
    with pytest.raises(ValueError, match="y has 59 entries but X has 60 rows"):
        kerndwd.fit(Xd, da.from_array(np.ones(59), chunks=20), [0.5], kern=LIN)
    with pytest.raises(ValueError, match="y must hold exactly two distinct labels"):
        kerndwd.fit(Xd, da.from_array(np.arange(60) % 3, chunks=20), [0.5], kern=LIN)
    with pytest.raises(ValueError, match="X must be a 2-D array"):
        kerndwd.fit(Xd[:, 0], y, [0.5], kern=LIN)
    with pytest.raises(TypeError, match="X must be numeric"):
        kerndwd.fit(da.from_array(np.full((60, 2), "a"), chunks=20), y, [0.5], kern=LIN)
    with pytest.raises(TypeError, match="kern must be given for a Dask X"):
        kerndwd.fit(Xd, y, [0.5])
    with pytest.raises(TypeError, match="X: rows held by a Dask cluster are not supported by solver='exact'"):
        kerndwd.fit(Xd, y, [0.5], kern=kerndwd.rbfdot(1.0))
    for face in (kerndwd.cv, kerndwd.tune):
        with pytest.raises(TypeError, match="X: cv and tune cannot take Dask input"):
            face(Xd, y, [0.5], kern=LIN)
    pytest.importorskip("sklearn")
    from kerndwd import DWDClassifierCV

    with pytest.raises(TypeError, match="X: DWDClassifierCV cannot take Dask input"):
        DWDClassifierCV(lambdas=[0.5]).fit(Xd, y)


# --------------------------------------------------------------------------
# dask is optional
# --------------------------------------------------------------------------
def test_kerndwd_imports_and_fits_without_dask(tmp_path):
    script = (
        "import sys\n"
        "for name in ('dask', 'dask.array', 'distributed'):\n"
        "    sys.modules[name] = None\n"
        "import numpy as np, kerndwd\n"
        "from kerndwd.engine.chunked import require_dask\n"
        "rng = np.random.default_rng(0); X = rng.standard_normal((40, 2)); y = np.sign(X[:, 0] + 0.1)\n"
        "print(kerndwd.fit(X, y, [0.5], kern=kerndwd.vanilladot()).npass[0] > 0)\n"
        "try:\n"
        "    require_dask()\n"
        "except ImportError as exc:\n"
        "    print(exc)\n"
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True,
                         cwd=str(__import__("pathlib").Path(kerndwd.__file__).parent.parent))
    lines = out.stdout.splitlines()
    assert lines[0] == "True"
    assert "pip install 'kerndwd[dask]'" in lines[1]


def test_newton_is_refused_by_name_on_dask_rows():
    rng = np.random.default_rng(5)
    y = np.where(rng.random(200) < 0.5, 1.0, -1.0)
    X = rng.standard_normal((200, 3)) + 0.5 * y[:, None]
    Xd = da.from_array(X, chunks=(50, 3))
    with pytest.raises(ValueError, match="method='newton' does not run on rows held by a Dask cluster"):
        kerndwd.fit(Xd, da.from_array(y, chunks=50), [0.1], kern=kerndwd.vanilladot(), stop="kkt", method="newton")
