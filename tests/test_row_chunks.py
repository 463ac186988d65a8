"""The row chunks of Dask rows (:mod:`kerndwd.engine.row_chunks`): what each
call asks of a ``distributed`` client (checked against a recording stand-in,
so that no cluster is started), and the same calls on Dask's local
scheduler, where they run at once in this process.
"""

import re
from contextlib import contextmanager

import numpy as np
import pytest

da = pytest.importorskip("dask.array")

from kerndwd.engine import row_chunks as row_chunks_module  # noqa: E402
from kerndwd.engine.chunked import ChunkedRows  # noqa: E402
from kerndwd.engine.row_chunks import RowChunks, _is_future, chunk_handles, gather_rows  # noqa: E402


class _Future:
    """What the module reads of a ``distributed.Future``: its client and key."""

    def __init__(self, client, key, value=None):
        self.client, self.key, self.value = client, key, value


class _Client:
    """Records the calls; ``submit`` runs the function at once."""

    def __init__(self, who_has=None):
        self.calls = []
        self._who_has = who_has or {}

    def submit(self, fn, *args, **kw):
        self.calls.append(("submit", fn, args, kw))
        return _Future(self, kw.get("key"), fn(*[a.value if isinstance(a, _Future) else a for a in args]))

    def gather(self, handles):
        self.calls.append(("gather", handles))
        return [h.value for h in handles]

    def replicate(self, handles, workers=None):
        self.calls.append(("replicate", handles, workers))

    def who_has(self, handles):
        self.calls.append(("who_has", handles))
        return {h.key: self._who_has[h.key] for h in handles}

    @contextmanager
    def as_current(self):
        self.calls.append(("as_current",))
        yield


def _chunks(client, workers):
    """RowChunks over three chunks of 2, 3 and 1 rows held by ``client``."""
    X = np.arange(12.0).reshape(6, 2)
    chunks = RowChunks.__new__(RowChunks)
    chunks.array = None
    chunks.rows = (2, 3, 1)
    chunks.bounds = np.array([0, 2, 5, 6])
    chunks.X = [_Future(client, f"x-{i}", X[a:b]) for i, (a, b) in enumerate([(0, 2), (2, 5), (5, 6)])]
    chunks.client = client
    chunks.workers = workers
    return chunks, X


def test_a_future_is_what_has_a_client_and_a_key():
    client = _Client()
    assert _is_future(_Future(client, "k"))
    assert not _is_future(np.ones(2))

    class OnlyKey:
        key = "k"

    class OnlyClient:
        client = None

    assert not _is_future(OnlyKey()) and not _is_future(OnlyClient())


def test_submit_runs_beside_its_chunk_under_a_fresh_key_unless_pinned():
    client = _Client()
    chunks, X = _chunks(client, [["w1"], ["w2"], ["w1"]])
    f = chunks.submit(1, np.sum, chunks.X[1])
    assert f.value == X[2:5].sum()
    _, fn, args, kw = client.calls[-1]
    assert fn is np.sum and args == (chunks.X[1],)
    assert re.fullmatch(r"kerndwd-sum-[0-9a-f]{32}", kw["key"])
    assert kw["pure"] is False and kw["workers"] == ["w2"] and kw["allow_other_workers"] is True
    chunks.submit(0, _private_name, 1.0, key="given", pinned=["w9"])
    _, _, args, kw = client.calls[-1]
    assert args == (1.0,) and kw == dict(key="given", pure=False, workers=["w9"], allow_other_workers=False)
    chunks.submit(0, _private_name, 1.0)
    assert re.fullmatch(r"kerndwd-private_name-[0-9a-f]{32}", client.calls[-1][3]["key"])  # underscores stripped


def _private_name(x):
    return 2.0 * x


def test_anywhere_and_gather_and_take():
    client = _Client()
    chunks, X = _chunks(client, [["w1"], ["w2"], ["w1"]])
    f = chunks.anywhere(_private_name, 3.0)
    _, fn, args, kw = client.calls[-1]
    assert f.value == 6.0 and fn is _private_name and args == (3.0,)
    assert set(kw) == {"key", "pure"} and kw["pure"] is False
    assert re.fullmatch(r"kerndwd-private_name-[0-9a-f]{32}", kw["key"])
    handles = (chunks.X[2], chunks.X[0])
    assert [h.tolist() for h in chunks.gather(handles)] == [X[5:6].tolist(), X[0:2].tolist()]
    assert client.calls[-1] == ("gather", [chunks.X[2], chunks.X[0]])
    joined = chunks.take(np.array([1, 4, 5]))
    np.testing.assert_array_equal(joined.value, X[[1, 4, 5]])
    parts = [c for c in client.calls if c[0] == "submit" and c[1] is row_chunks_module._rows_of]
    assert [p[3]["workers"] for p in parts] == [["w1"], ["w2"], ["w1"]]
    client.calls.clear()
    np.testing.assert_array_equal(chunks.take(np.array([0, 5])).value, X[[0, 5]])
    parts = [c for c in client.calls if c[0] == "submit" and c[1] is row_chunks_module._rows_of]
    assert [p[2][0] for p in parts] == [chunks.X[0], chunks.X[2]]  # no task for the chunk with no row taken


def test_broadcast_copies_to_every_holder_when_there_are_several():
    client = _Client()
    chunks, _ = _chunks(client, [["w2"], ["w1", "w3"], None])
    handle = _Future(client, "b")
    assert chunks.broadcast(handle) is handle
    assert client.calls == [("replicate", [handle], ["w1", "w2", "w3"])]
    two = _Client()
    chunks, _ = _chunks(two, [["w2"], ["w1"], ["w2"]])
    assert chunks.broadcast(handle) is handle and two.calls == [("replicate", [handle], ["w1", "w2"])]
    one = _Client()
    chunks, _ = _chunks(one, [["w1"], ["w1"], ["w1"]])
    assert chunks.broadcast(handle) is handle and one.calls == []


def test_holders_are_one_worker_each_after_waiting(monkeypatch):
    import distributed

    client = _Client(who_has={"a": ["w3", "w1"], "b": ["w2"]})
    chunks, _ = _chunks(client, [["w1"], ["w2"], ["w1"]])
    handles = [_Future(client, "a"), _Future(client, "b")]
    waited = []
    monkeypatch.setattr(distributed, "wait", lambda hs: waited.append(list(hs)))
    assert chunks.holders(handles) == [["w1"], ["w2"]]
    assert waited == [handles] and client.calls == [("as_current",), ("who_has", handles)]


def _no_persist(*arrays):
    raise AssertionError("stored again")


def test_rows_from_submits_each_chunk_under_the_arrays_keys(monkeypatch):
    monkeypatch.setattr(row_chunks_module, "persist_unoptimised", _no_persist)
    client = _Client()
    chunks, X = _chunks(client, [["w1"], ["w2"], ["w1"]])
    rows, handles = chunks.rows_from(lambda i: np.full(chunks.rows[i], float(i)), lambda i: (i,),
                                     pinned=[["p0"], ["p1"], ["p2"]])
    submits = [c for c in client.calls if c[0] == "submit"]
    keys = [c[3]["key"] for c in submits]
    name = keys[0][0]
    assert keys == [(name, 0), (name, 1), (name, 2)] and re.fullmatch(r"kerndwd-bcd-rows-[0-9a-f]{32}", name)
    assert [c[3]["workers"] for c in submits] == [["p0"], ["p1"], ["p2"]]
    assert all(c[3]["allow_other_workers"] is False for c in submits)
    assert isinstance(rows, ChunkedRows) and [h.value.tolist() for h in handles] == [[0.0, 0.0], [1.0] * 3, [2.0]]
    leaf = rows._leaves[rows._expr[1]]  # the Dask array over the submitted handles
    assert leaf.dtype == np.float64 and leaf.chunks == ((2, 3, 1),) and leaf._meta.shape == (0,)
    assert leaf.name == name and not leaf.dask.dependencies[name]
    client.calls.clear()
    placed = chunks.place(rows)  # futures already beside their chunks: read where they are
    assert len(placed) == 3 and all(p is h for p, h in zip(placed, handles)) and client.calls == []
    rows, handles = chunks.rows_from(lambda i: np.ones((chunks.rows[i], 4)), lambda i: (i,), ncols=4)
    leaf = rows._leaves[rows._expr[1]]
    assert leaf.chunks == ((2, 3, 1), (4,)) and leaf._meta.shape == (0, 0)
    keys = [c[3]["key"] for c in client.calls if c[0] == "submit"]
    assert [k[1:] for k in keys] == [(0, 0), (1, 0), (2, 0)]
    assert [c[3]["workers"] for c in client.calls if c[0] == "submit"] == [["w1"], ["w2"], ["w1"]]


def test_on_the_local_scheduler_the_same_calls_run_here():
    X = np.arange(12.0).reshape(6, 2)
    arr = da.from_array(X, chunks=(4, 2)).persist()
    chunks = RowChunks(arr)
    assert chunks.client is None and chunks.workers == [None, None] and chunks.rows == (4, 2)
    assert [h.tolist() for h in chunk_handles(arr)] == [X[:4].tolist(), X[4:].tolist()]
    assert chunks.submit(1, np.sum, chunks.X[1]) == X[4:].sum()
    assert chunks.anywhere(np.sum, chunks.X[0]) == X[:4].sum()
    assert chunks.holders([1, 2]) == [None, None]
    assert chunks.broadcast("h") == "h"
    np.testing.assert_array_equal(chunks.take(np.array([0, 5])), X[[0, 5]])
    ints = da.from_array(np.arange(6).reshape(3, 2), chunks=(2, 2)).persist()
    out = gather_rows(ints)
    assert out.dtype == np.float64 and out.tolist() == [[0.0, 1.0], [2.0, 3.0], [4.0, 5.0]]
    rows, handles = chunks.rows_from(lambda i: np.full(chunks.rows[i], i + 1.0), lambda i: (i,))
    np.testing.assert_array_equal(np.concatenate(handles), [1.0] * 4 + [2.0] * 2)
    placed = chunks.place(rows)
    assert [np.asarray(h).tolist() for h in placed] == [[1.0] * 4, [2.0] * 2]
    assert all(p is h for p, h in zip(placed, handles))  # a stored leaf is read where it is, not stored again
    placed = chunks.place(rows * 2.0)
    assert [np.asarray(h).tolist() for h in placed] == [[2.0] * 4, [4.0] * 2]


def test_take_within_one_chunk_gives_float64_rows():
    ints = np.arange(12).reshape(6, 2)
    chunks = RowChunks(da.from_array(ints, chunks=(4, 2)).persist())
    for rows in (np.array([4, 5]), np.array([1]), np.array([2, 4])):
        out = chunks.take(rows)
        assert out.dtype == np.float64
        np.testing.assert_array_equal(out, ints[rows])


def test_an_expression_is_placed_beside_the_chunks_of_x(monkeypatch):
    seen, real = [], row_chunks_module.persist_unoptimised
    monkeypatch.setattr(row_chunks_module, "persist_unoptimised", lambda *arrays: seen.extend(arrays) or real(*arrays))
    X = da.from_array(np.arange(12.0).reshape(6, 2), chunks=(4, 2)).persist()
    chunks = RowChunks(X)
    rows = ChunkedRows.from_dask(da.from_array(np.arange(6.0), chunks=4)) * 2.0
    placed = chunks.place(rows)
    assert [np.asarray(h).tolist() for h in placed] == [[0.0, 2.0, 4.0, 6.0], [8.0, 10.0]]
    (lazy,) = seen
    assert X.name in lazy.dask.dependencies[lazy.name]
