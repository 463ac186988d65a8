"""The exact kernel by block coordinate descent (``solver="bcd"``) on Dask rows:
the same sweeps as in memory (same blocks, same moves; only the order of
sums differs), on a 2-worker LocalCluster and on Dask's local scheduler;
prediction from the gathered rows; the workers freed after the fit; the
refusals by name."""

import gc
import pickle
import time

import numpy as np
import pytest

import kerndwd

da = pytest.importorskip("dask.array")
dask = pytest.importorskip("dask")
distributed = pytest.importorskip("distributed")

from _cluster import client, cluster_client  # noqa: E402,F401  (fixtures)
from _sweeps import agree as _agree, circle  # noqa: E402

RBF = kerndwd.rbfdot(1.0)


def _circle(n=240, seed=0):
    return circle(n, seed)


#: few sweeps (each block one round trip to the workers): R's rule, a loose eps, three blocks
SETTINGS = dict(kern=RBF, solver="bcd", block_size=80, random_state=3, stop="step", eps=1e-4)


def test_weighted_bcd_on_a_cluster_equals_bcd_in_memory(client):
    X, y, w = _circle(n=160)
    lam = [0.1]
    path = kerndwd.fit(X, y, lam, wt=w, **SETTINGS)
    on_cluster = kerndwd.fit(da.from_array(X, chunks=(80, 2)), y, lam, wt=da.from_array(w, chunks=80), **SETTINGS)
    assert on_cluster.alpha.shape == (161, 1) and on_cluster.predictor.coef_space == "kernel"
    _agree(on_cluster, path, X)
    # prediction: numpy in, numpy out; Dask in, a lazy Dask array chunked like the rows
    newx = np.random.default_rng(5).standard_normal((30, 2))
    np.testing.assert_allclose(on_cluster.predict(newx, type="link"), path.predict(newx, type="link"),
                               rtol=0, atol=1e-8)
    link = on_cluster.predict(da.from_array(newx, chunks=(15, 2)), type="link")
    assert isinstance(link, da.Array) and link.chunks == ((15, 15), (1,))
    np.testing.assert_allclose(link.compute(), path.predict(newx, type="link"), rtol=0, atol=1e-8)


def test_the_gradient_rule_with_momentum_on_a_cluster_certifies_the_same_point(client):
    X, y, _ = _circle(n=120, seed=1)
    kw = dict(SETTINGS, block_size=60, stop="kkt", eps=1e-5)
    path = kerndwd.fit(X, y, [0.1], **kw)
    on_cluster = kerndwd.fit(da.from_array(X, chunks=(60, 2)), y, [0.1], **kw)
    _agree(on_cluster, path, X)
    assert on_cluster.kkt[0] <= 1e-5 and on_cluster.solver == path.solver


def test_the_workers_hold_nothing_of_a_fit_once_it_is_dropped(client):
    X, y, _ = _circle(n=120, seed=2)
    Xd = da.from_array(X, chunks=(60, 2)).persist()
    before = set(client.who_has())
    path = kerndwd.fit(Xd, y, [0.1], **dict(SETTINGS, block_size=60))
    assert path.jerr == 0
    gc.collect()
    left = None
    for _ in range(50):  # the client releases its futures by messages to the scheduler
        left = [k for k in set(client.who_has()) - before if "kerndwd" in str(k)]
        if not left:
            break
        time.sleep(0.1)
    assert left == [], left


def test_the_rows_stay_on_the_workers_until_the_first_prediction(client, monkeypatch):
    """No row comes to the client during the fit (each block's rows are put
    together on the cluster); the path fetches them once, when it first predicts."""
    from kerndwd.engine import row_chunks
    from kerndwd.engine.designs import dask_bcd

    X, y, _ = _circle(n=160, seed=7)
    received, fetched = [], []
    gather, gather_rows = row_chunks.RowChunks.gather, row_chunks.gather_rows

    def counting_gather(self, handles):
        values = gather(self, handles)
        def flat(v):  # a block's task returns arrays in tuples (its first-sweep parts None later)
            return [a for part in v for a in flat(part)] if isinstance(v, tuple) else [] if v is None else [v]
        received.extend(np.asarray(a) for v in values for a in flat(v))
        return values

    def counting_rows(X):
        fetched.append(X.shape)
        return gather_rows(X)

    monkeypatch.setattr(row_chunks.RowChunks, "gather", counting_gather)
    monkeypatch.setattr(dask_bcd, "gather_rows", counting_rows)
    kw = dict(SETTINGS, block_size=40)
    path = kerndwd.fit(X, y, [0.1], **kw)
    on_cluster = kerndwd.fit(da.from_array(X, chunks=(80, 2)), y, [0.1], **kw)
    assert received and fetched == []
    # what came back: sums, products with the kernel columns, residuals, Grams and K_II, never rows
    assert not any(v.ndim == 2 and v.shape[1] == X.shape[1] for v in received)
    assert max(v.size for v in received) <= (40 + 1) ** 2
    _agree(on_cluster, path, X)  # predicts: the rows are fetched now, once
    copied = pickle.loads(pickle.dumps(on_cluster))  # a copy carries the rows
    np.testing.assert_array_equal(copied.predict(X[:5], type="link"), on_cluster.predict(X[:5], type="link"))
    assert fetched == [X.shape]


def test_a_block_s_rows_are_put_together_and_broadcast_on_the_cluster(client):
    from kerndwd.engine.row_chunks import RowChunks

    X = np.arange(40.0).reshape(20, 2)
    first, second = sorted(client.scheduler_info()["workers"])
    parts = [client.scatter(X[lo:hi], workers=[w]) for lo, hi, w in ((0, 8, first), (8, 16, second), (16, 20, first))]
    # persisted where the parts are (a chunk's task runs beside its one input)
    array = da.concatenate([da.from_delayed(part, (len(part.result()), 2), float) for part in parts])
    chunks = RowChunks(array.persist())
    rows = np.array([1, 7, 8, 19])  # from each of the three chunks
    handle = chunks.broadcast(chunks.take(rows))
    assert chunks.workers == [[first], [second], [first]]
    assert set(client.who_has([handle])[handle.key]) == {first, second}
    np.testing.assert_array_equal(handle.result(), X[rows])


def test_the_kernel_is_checked_where_the_rows_live(client):
    """The exact solver's refusals, made by tasks beside the chunks."""
    _assert_kernel_refusals()


def test_the_kernel_is_checked_on_the_chunks_without_a_cluster():
    with dask.config.set(scheduler="synchronous"):
        _assert_kernel_refusals()


def _assert_kernel_refusals():
    X, y, _ = _circle(n=120, seed=8)
    with pytest.raises(ValueError, match=r"kern=rbfdot\(sigma=1.0\) cannot be formed accurately"):
        kerndwd.fit(da.from_array(X * 1e8, chunks=(60, 2)), y, [0.1], kern=RBF, solver="bcd")
    with pytest.raises(ValueError, match=r"kern=splinedot\(\) on these data is not positive semi-definite"):
        kerndwd.fit(da.from_array(X * 3, chunks=(60, 2)), y, [0.1], kern=kerndwd.splinedot(), solver="bcd")


@pytest.mark.parametrize("weighted", [False, True], ids=["unweighted", "weighted"])
def test_bcd_on_the_local_scheduler_equals_bcd_in_memory(weighted):
    """Without a cluster the same tasks run in the client's process, on the chunks."""
    X, y, w = _circle(n=300, seed=4)
    wt = w if weighted else None
    lam = [0.1, 0.01]
    # 22 to 29 sweeps a lambda: a budget of 200 makes a wrong step fail, not run on
    kw = dict(kern=RBF, solver="bcd", block_size=64, random_state=1, stop="kkt", eps=1e-6, maxit=200)
    path = kerndwd.fit(X, y, lam, wt=wt, **kw)
    with dask.config.set(scheduler="synchronous"):
        on_dask = kerndwd.fit(da.from_array(X, chunks=(70, 2)), y, lam, wt=wt, **kw)
    _agree(on_dask, path, X)
    assert (on_dask.kkt <= 1e-6).all()


def test_r_rule_gap_bound_on_dask_rows_matches_memory():
    X, y, _ = _circle(n=200, seed=5)
    kw = dict(SETTINGS, eps=1e-6, maxit=300)  # 42 and 21 sweeps
    path = kerndwd.fit(X, y, [0.1, 0.03], **kw)
    with dask.config.set(scheduler="synchronous"):
        on_dask = kerndwd.fit(da.from_array(X, chunks=(100, 2)), y, [0.1, 0.03], **kw)
    _agree(on_dask, path, X)
    assert np.isfinite(on_dask.gap_bound).all()
    np.testing.assert_allclose(on_dask.gap_bound, path.gap_bound, rtol=1e-6, atol=1e-12)


def test_the_estimator_with_three_classes_on_dask_rows_equals_memory():
    pytest.importorskip("sklearn")
    from kerndwd import DWDClassifier

    rng = np.random.default_rng(6)
    X = rng.standard_normal((150, 2))
    y = np.select([X[:, 0] > 0.5, X[:, 1] > 0.0], ["a", "b"], "c")
    params = dict(kernel=RBF, lambd=0.1, solver="bcd", stop="kkt", tol=1e-6, random_state=0, max_iter=150,
                  design_options={"block_size": 50})  # 17 to 20 sweeps a class
    in_memory = DWDClassifier(**params).fit(X, y)
    with dask.config.set(scheduler="synchronous"):
        on_dask = DWDClassifier(**params).fit(da.from_array(X, chunks=(75, 2)), y)
    f, g = in_memory.decision_function(X), on_dask.decision_function(X)
    assert g.shape == (150, 3) and np.abs(g - f).max() <= 1e-7 * np.abs(f).max()
    np.testing.assert_array_equal(on_dask.predict(X), in_memory.predict(X))


def test_refusals_name_the_argument():
    X, y, _ = _circle(n=40)
    Xd = da.from_array(X, chunks=(20, 2))
    with dask.config.set(scheduler="synchronous"):
        with pytest.raises(ValueError, match=r"^cache_kernel=True keeps the n x n kernel matrix in memory, which rows "
                                             r"held by a Dask cluster never form; leave cache_kernel=None or False$"):
            kerndwd.fit(Xd, y, [0.1], kern=RBF, solver="bcd", cache_kernel=True)
        with pytest.raises(ValueError, match="^method="):
            kerndwd.fit(Xd, y, [0.1], kern=RBF, solver="bcd", method="newton", stop="kkt")
        with pytest.raises(TypeError, match="^X: cv and tune"):
            kerndwd.cv(Xd, y, [0.1], kern=RBF, solver="bcd", nfolds=2)
    X_copy = X.copy()
    assert np.array_equal(X, X_copy)
