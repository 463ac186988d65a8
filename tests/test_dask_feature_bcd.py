"""Kernel approximations by blocks of columns (``approx=`` with ``solver="bcd"``) on
Dask rows: the same sweeps as in memory (same blocks, same moves; only the
order of sums differs), on a 2-worker LocalCluster and on Dask's local
scheduler; columns kept on the workers or formed every sweep, float32 or
float64; nothing of length n moves during a sweep; the workers freed after
the fit; the gap bound, the estimator and the refusals."""

import gc
import time

import numpy as np
import pytest

import kerndwd
from kerndwd.engine.designs.dask_feature_bcd import ChunkLandmarkForm, DaskFeatureBlockCoordinate, keeps_on_workers
from kerndwd.engine import cache as cache_module
from kerndwd.engine.majorisers import feature_blocks
from kerndwd.engine.row_chunks import RowChunks

da = pytest.importorskip("dask.array")
dask = pytest.importorskip("dask")
distributed = pytest.importorskip("distributed")

from _cluster import client, cluster_client  # noqa: E402,F401  (fixtures)
from _sweeps import agree, circle  # noqa: E402

RBF = kerndwd.rbfdot(1.0)


def _circle(n=160, seed=0):
    return circle(n, seed)


def _agree(on_dask, path, X):
    """As in memory (:func:`_sweeps.agree`), and the coefficients too."""
    agree(on_dask, path, X)
    np.testing.assert_allclose(on_dask.alpha, path.alpha, rtol=0, atol=1e-6 * np.abs(path.alpha).max())


#: three or four blocks; Nystrom with fewer landmarks than rows (its sweeps add the
#: K_LL^+ direction) and with every row a landmark (the exact kernel's problem)
DESIGNS = {"rff": dict(approx="rff", n_components=50), "nystroem": dict(approx="nystroem", n_components=40),
           "nystroem-all": dict(approx="nystroem", n_components=160)}
#: R's rule with a loose eps and the gradient rule: a few sweeps each, so that
#: only the rounding of the sums differs
STOPS = {"step": dict(stop="step", eps=1e-4), "kkt": dict(stop="kkt", eps=1e-5)}


def _settings(design, stop, **extra):
    return dict(kern=RBF, solver="bcd", block_size=16, random_state=1, **DESIGNS[design], **STOPS[stop], **extra)


@pytest.mark.parametrize("design", list(DESIGNS))
def test_weighted_feature_blocks_on_a_cluster_equal_blocks_in_memory(client, design):
    X, y, w = _circle()
    lambdas = [0.1, 0.01]
    kw = _settings(design, "step")
    path = kerndwd.fit(X, y, lambdas, wt=w, **kw)
    on_cluster = kerndwd.fit(da.from_array(X, chunks=(60, 2)), y, lambdas, wt=da.from_array(w, chunks=60), **kw)
    assert on_cluster.solver == path.solver == "bcd" and on_cluster.alpha.shape == path.alpha.shape
    assert on_cluster.predictor.coef_space == path.predictor.coef_space
    _agree(on_cluster, path, X)
    newx = np.random.default_rng(5).standard_normal((30, 2))
    link = on_cluster.predict(da.from_array(newx, chunks=(15, 2)), type="link")
    assert isinstance(link, da.Array) and link.chunks == ((15, 15), (2,))
    np.testing.assert_allclose(link.compute(), path.predict(newx, type="link"), rtol=0, atol=1e-8)


@pytest.mark.parametrize("approx", ["rff", "nystroem"])
def test_columns_kept_on_the_workers_in_float32_under_the_gradient_rule(client, approx):
    X, y, _ = _circle(seed=1)
    kw = _settings(approx, "kkt", dtype="float32", cache_features=True)
    path = kerndwd.fit(X, y, [0.1, 0.01], **kw)
    on_cluster = kerndwd.fit(da.from_array(X, chunks=(80, 2)), y, [0.1, 0.01], **kw)
    _agree(on_cluster, path, X)
    assert (on_cluster.kkt <= 1e-5).all()


def test_the_workers_hold_nothing_of_a_fit_once_it_is_dropped(client):
    X, y, _ = _circle(n=120, seed=2)
    Xd = da.from_array(X, chunks=(60, 2)).persist()
    before = set(client.who_has())
    path = kerndwd.fit(Xd, y, [0.1], **_settings("nystroem", "step", cache_features=True))
    assert path.jerr == 0
    del path
    gc.collect()
    left = None
    for _ in range(50):  # the client releases its futures by messages to the scheduler
        left = [k for k in set(client.who_has()) - before if "kerndwd" in str(k) or "columns" in str(k)]
        if not left:
            break
        time.sleep(0.1)
    assert left == []


def test_whether_the_columns_are_kept_reads_each_worker_s_memory_limit(client):
    chunks = RowChunks(da.from_array(np.zeros((160, 2)), chunks=(80, 2)).persist())
    limit = 2 ** 30  # the test cluster's workers: 1 GiB each, a chunk of 80 rows on each
    fits = 0.5 * limit / 80
    assert keeps_on_workers(None, chunks, fits) is True
    assert keeps_on_workers(None, chunks, fits * 1.01) is False
    assert keeps_on_workers(True, chunks, 1e12) is True and keeps_on_workers(False, chunks, 1.0) is False


class _OldClient:
    """A client from before ``scheduler_info``'s ``n_workers`` (it reports every worker)."""

    def __init__(self, limits):
        self.limits = limits

    def scheduler_info(self, **kwargs):
        if kwargs:
            raise TypeError("scheduler_info() got an unexpected keyword argument 'n_workers'")
        return {"workers": {a: {"memory_limit": v} for a, v in self.limits.items()}}


class _NewClient(_OldClient):
    """A client whose ``scheduler_info`` reports the first ``n_workers`` workers (-1: all)."""

    def scheduler_info(self, n_workers=5):
        workers = list(super().scheduler_info()["workers"].items())
        return {"workers": dict(workers if n_workers == -1 else workers[:n_workers])}


class _Chunks:
    def __init__(self, limits, workers, client=_OldClient):
        self.client, self.rows, self.workers = client(limits), (10, 10), workers
        self.bounds = np.array([0, 10, 20])


@pytest.mark.parametrize("client_type", [_OldClient, _NewClient])
def test_keeping_the_columns_on_workers_without_a_memory_limit_or_chunks(client_type):
    def keeps(limits, workers, row_bytes):
        return keeps_on_workers(None, _Chunks(limits, workers, client_type), row_bytes)

    assert keeps({"a": 1000, "b": 1000}, [["a"], ["b"]], 50.0) is True
    assert keeps({"a": 1000, "b": 1000}, [["a"], ["a"]], 50.0) is False  # both chunks on a: 1000 bytes
    assert keeps({"c": 1000, "a": 1, "b": 1000}, [["a"], ["b"]], 0.01) is True  # a limit of one byte is one
    assert keeps({"a": 1000, "b": 0}, [["a"], ["b"]], 0.01) is False  # b: no limit
    assert keeps({"a": 1000}, [["a"], ["b"]], 0.01) is False  # b: unknown
    assert keeps({"a": 1000}, [None, None], 0.01) is False  # held nowhere known


def test_without_a_cluster_the_columns_are_kept_within_the_memory_budget(monkeypatch):
    monkeypatch.setattr(cache_module, "memory_budget", lambda *a: 100.0)
    local = RowChunks(da.from_array(np.zeros((20, 2)), chunks=(10, 2)).persist())
    assert local.client is None
    assert keeps_on_workers(None, local, 5.0) is True  # 20 rows of 5 bytes
    assert keeps_on_workers(None, local, 6.0) is False
    assert keeps_on_workers(True, local, 6.0) is True and keeps_on_workers(False, local, 1.0) is False


@pytest.mark.parametrize("design", list(DESIGNS))
@pytest.mark.parametrize("stop", list(STOPS))
@pytest.mark.parametrize("weighted", [False, True])
def test_feature_blocks_on_the_local_scheduler_equal_blocks_in_memory(design, stop, weighted):
    X, y, w = _circle(seed=3)
    kw = _settings(design, stop)
    weights = dict(wt=w) if weighted else {}
    path = kerndwd.fit(X, y, [0.1, 0.01], **weights, **kw)
    with dask.config.set(scheduler="synchronous"):
        on_dask = kerndwd.fit(da.from_array(X, chunks=(70, 2)), y, [0.1, 0.01],
                              **({"wt": da.from_array(w, chunks=70)} if weighted else {}), **kw)
    _agree(on_dask, path, X)
    if stop == "kkt":
        assert (on_dask.kkt <= 1e-5).all()


@pytest.mark.parametrize("design", list(DESIGNS))
@pytest.mark.parametrize("cache", [True, False])
def test_kept_and_formed_columns_in_float32_on_the_local_scheduler(design, cache):
    X, y, _ = _circle(seed=4)
    kw = _settings(design, "kkt", dtype="float32", cache_features=cache)
    path = kerndwd.fit(X, y, [0.05], **kw)
    with dask.config.set(scheduler="synchronous"):
        on_dask = kerndwd.fit(da.from_array(X, chunks=(50, 2)), y, [0.05], **kw)
    _agree(on_dask, path, X)


@pytest.mark.parametrize("design", list(DESIGNS))
def test_r_rule_gap_bound_on_dask_rows_matches_memory(design):
    X, y, _ = _circle(seed=5)
    kw = _settings(design, "step")
    path = kerndwd.fit(X, y, [0.1, 0.01], **kw)
    with dask.config.set(scheduler="synchronous"):
        on_dask = kerndwd.fit(da.from_array(X, chunks=(80, 2)), y, [0.1, 0.01], **kw)
    assert np.isfinite(path.gap_bound).all() and (path.gap_bound > 0).all()
    np.testing.assert_allclose(on_dask.gap_bound, path.gap_bound, rtol=1e-6, atol=1e-12)


def test_without_room_for_k_ll_the_gap_bound_takes_the_kernel_on_the_workers(monkeypatch):
    """Where ``K_LL`` and its eigenvectors pass the memory budget, Nystrom's sweeps
    have no ``K_LL^+`` direction and its dual norm is bounded by ``v'Kv``: both
    formed from the rows where they live, equal to the in-memory ones."""
    built = []
    original = DaskFeatureBlockCoordinate.at_lambda

    def recording(self, lam):
        built.append(self)
        return original(self, lam)

    monkeypatch.setattr(DaskFeatureBlockCoordinate, "at_lambda", recording)
    X, y, _ = _circle(seed=6)
    kw = _settings("nystroem", "step")
    with dask.config.set(scheduler="synchronous"):
        with_room = kerndwd.fit(da.from_array(X, chunks=(80, 2)), y, [0.1], **kw)
    assert with_room.jerr == 0 and built[-1]._ready is not None  # the K_LL^+ direction of the last sweep
    monkeypatch.setattr(feature_blocks, "memory_budget", lambda *a: 1.0)
    path = kerndwd.fit(X, y, [0.1], **kw)
    with dask.config.set(scheduler="synchronous"):
        on_dask = kerndwd.fit(da.from_array(X, chunks=(80, 2)), y, [0.1], **kw)
    assert built[-1]._ready is None and built[-1]._dual.landmark_solve() is None
    _agree(on_dask, path, X)
    np.testing.assert_allclose(on_dask.gap_bound, path.gap_bound, rtol=1e-6, atol=1e-12)
    assert not np.allclose(on_dask.gap_bound, with_room.gap_bound, rtol=1e-3)  # v'Kv bounds g' K_LL^+ g


def test_nothing_of_length_n_moves_during_a_sweep(monkeypatch):
    X, y, _ = _circle(n=400, seed=7)
    seen = []
    original = DaskFeatureBlockCoordinate._round

    def recording(self, fn, args_of):
        outs = original(self, fn, args_of)
        seen.extend(np.size(a) for o in outs for a in _arrays(o))
        # what the client sends (_begin's first and last arguments are handles of the chunk's f and of the
        # last sweep's change of f, kept on its worker)
        sent = (lambda i: args_of(i)[1:4]) if fn.__name__ == "_begin" else args_of
        seen.extend(np.size(a) for i in range(len(outs)) for a in _arrays(sent(i)))
        return outs

    monkeypatch.setattr(DaskFeatureBlockCoordinate, "_round", recording)
    with dask.config.set(scheduler="synchronous"):
        path = kerndwd.fit(da.from_array(X, chunks=(200, 2)), y, [0.1], kern=RBF, approx="nystroem",
                           n_components=40, solver="bcd", block_size=8, stop="kkt", eps=1e-6)
    assert path.jerr == 0 and path.npass[0] > 3
    assert seen and max(seen) <= 81  # the (b + 1)^2 Gram partial sums of the first sweep; n = 400


def _arrays(value):
    if isinstance(value, np.ndarray):
        yield value
    elif isinstance(value, (tuple, list)):
        for v in value:
            yield from _arrays(v)


def test_the_chunk_s_landmark_columns_are_its_kernel_values():
    X = np.random.default_rng(0).standard_normal((30, 2))
    landmarks = X[[2, 14, 25, 7]]
    held, local = np.array([1, 2]), np.array([14 - 10, 25 - 10])  # the chunk holds rows 10:30
    for dtype, cache in ((np.float64, False), (np.float32, True), (np.float64, True)):
        form = ChunkLandmarkForm(RBF, X[10:], landmarks, held, local, block_size=2, dtype=dtype, cache=cache)
        full = np.hstack([form.block(k).copy() for k in range(len(form.blocks))])
        np.testing.assert_allclose(full, RBF(X[10:], landmarks), rtol=0, atol=1e-7 if dtype == np.float32 else 0)
        np.testing.assert_array_equal(full[local], RBF(landmarks[held], landmarks))  # K_LL, in float64


def test_the_estimator_with_three_classes_on_dask_rows_equals_memory():
    pytest.importorskip("sklearn")
    from kerndwd import DWDClassifier

    rng = np.random.default_rng(6)
    X = rng.standard_normal((150, 2))
    y = np.select([X[:, 0] > 0.5, X[:, 1] > 0.0], ["a", "b"], "c")
    params = dict(kernel=RBF, lambd=0.1, approx="nystroem", solver="bcd", stop="kkt", tol=1e-6, random_state=0,
                  design_options={"block_size": 16, "n_components": 50})
    in_memory = DWDClassifier(**params).fit(X, y)
    with dask.config.set(scheduler="synchronous"):
        on_dask = DWDClassifier(**params).fit(da.from_array(X, chunks=(75, 2)), y)
    f, g = in_memory.decision_function(X), on_dask.decision_function(X)
    assert g.shape == (150, 3) and np.abs(g - f).max() <= 1e-7 * np.abs(f).max()
    np.testing.assert_array_equal(on_dask.predict(X), in_memory.predict(X))


def test_auto_takes_the_blocks_on_dask_rows_beyond_the_system_s_columns():
    X, y, _ = _circle(n=60, seed=8)
    with dask.config.set(scheduler="synchronous"):
        path = kerndwd.fit(da.from_array(X, chunks=(30, 2)), y, [0.1], kern=RBF, approx="rff", solver="auto",
                           n_components=40, block_size=8, random_state=0)
    assert path.solver == "bcd" and "block options given" in path.chosen


def test_refusals_name_the_argument():
    X, y, _ = _circle(n=40)
    Xd = da.from_array(X, chunks=(20, 2))
    with dask.config.set(scheduler="synchronous"):
        with pytest.raises(ValueError, match="^method="):
            kerndwd.fit(Xd, y, [0.1], kern=RBF, approx="rff", solver="bcd", method="newton", stop="kkt")
        with pytest.raises(TypeError, match="^X: cv and tune"):
            kerndwd.cv(Xd, y, [0.1], kern=RBF, approx="nystroem", solver="bcd", n_components=10, nfolds=2)
        with pytest.raises(TypeError, match="^X: cv and tune"):
            kerndwd.tune(Xd, y, [0.1], kern=RBF, approx="rff", solver="bcd", nfolds=2)
        with pytest.raises(ValueError, match="^approx='rff'"):
            kerndwd.fit(Xd, y, [0.1], kern=kerndwd.polydot(2), approx="rff", solver="bcd")
        with pytest.raises(ValueError, match="n_components=50 exceeds the number of rows"):
            kerndwd.fit(Xd, y, [0.1], kern=RBF, approx="nystroem", solver="bcd", n_components=50)
    X_copy = X.copy()
    assert np.array_equal(X, X_copy)

