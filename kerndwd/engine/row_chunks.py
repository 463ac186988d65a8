"""Rows held by a Dask cluster, chunk by chunk: where each chunk lives, tasks run
beside it, rows put together on the cluster and copied to every worker.

:class:`RowChunks` is what the exact kernel's block coordinate descent on
Dask rows (:mod:`kerndwd.engine.designs.dask_bcd`) runs its tasks through:
on a ``distributed`` cluster each task goes to the worker that holds its
chunk (or the state a task keeps there); on Dask's local schedulers the same
calls run at once in this process, on the persisted chunks.
"""

from __future__ import annotations

import numpy as np

from .chunk_tasks import _owners, fresh_name, persist_unoptimised, require_dask
from .chunked import ChunkedRows

__all__ = ["RowChunks", "chunk_handles", "gather_rows"]


def _is_future(value):
    return hasattr(value, "client") and hasattr(value, "key")


def chunk_handles(array):
    """The future (on a ``distributed`` cluster) or the value (Dask's local
    schedulers) of each row chunk of a persisted Dask array, in order."""
    graph = array.__dask_graph__()
    keys = [key[0] if isinstance(key, list) else key for key in array.__dask_keys__()]
    return [graph[key] for key in keys]


def gather_rows(X):
    """The rows of a persisted Dask ``X`` on the client, chunk by chunk, from
    whichever scheduler holds them.

    Parameters
    ----------
    X : dask.array.Array, shape (n, p)
        Persisted, one column chunk.

    Returns
    -------
    ndarray, shape (n, p)
        float64.

    Examples
    --------
    >>> import numpy as np, dask.array as da
    >>> gather_rows(da.from_array(np.eye(3), chunks=(2, 3)).persist()).tolist()
    [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]]
    """
    chunks = RowChunks(X)
    return np.concatenate([np.asarray(c, dtype=float) for c in chunks.gather(chunks.X)])


class RowChunks:
    """The row chunks of a persisted Dask ``X``: where each lives, and how to run a
    task beside it.

    On a ``distributed`` cluster (the chunks are futures) a task is submitted
    to the client that holds them, on the worker that holds its chunk; on
    Dask's local schedulers (the chunks are arrays in this process) it runs
    at once, in this process.

    Parameters
    ----------
    X : dask.array.Array, shape (n, p)
        Persisted, one column chunk, known row chunks.

    Examples
    --------
    >>> import numpy as np, dask.array as da
    >>> chunks = RowChunks(da.from_array(np.arange(6.0).reshape(3, 2), chunks=(2, 2)).persist())
    >>> sums = chunks.gather([chunks.submit(i, np.sum, x) for i, x in enumerate(chunks.X)])
    >>> chunks.rows, [float(v) for v in sums]
    ((2, 1), [6.0, 9.0])
    """

    def __init__(self, X):
        self.array = X
        self.rows = tuple(int(c) for c in X.chunks[0])
        self.bounds = np.concatenate(([0], np.cumsum(self.rows))).astype(int)
        self.X = chunk_handles(X)
        remote = [_is_future(h) for h in self.X]
        if any(remote) and not all(remote):
            raise ValueError("X must be persisted on one scheduler: some of its chunks are futures, some are not")
        self.client = self.X[0].client if remote[0] else None
        owners = _owners(X) if self.client is not None else None
        self.workers = owners if owners else [None] * len(self.rows)

    def __len__(self):
        return len(self.rows)

    def submit(self, i, fn, *args, key=None, pinned=None):
        """``fn(*args)`` beside chunk ``i``: a future on a cluster, the value otherwise.
        ``pinned``: the workers it must run on (where a state it updates in place lives)."""
        if self.client is None:
            return fn(*args)
        return self.client.submit(fn, *args, key=key or fresh_name(fn.__name__.strip("_")), pure=False,
                                  workers=self.workers[i] if pinned is None else pinned,
                                  allow_other_workers=pinned is None)

    def holders(self, handles):
        """One worker holding each of ``handles`` (futures, once computed), as a
        list to pin tasks to; None each without a cluster."""
        if self.client is None:
            return [None] * len(handles)
        import distributed

        with self.client.as_current():  # the chunks' own client, default or not
            distributed.wait(handles)
        who = self.client.who_has(handles)
        return [sorted(who[h.key])[:1] for h in handles]

    def gather(self, handles):
        """The values of ``handles`` (from :meth:`submit`) on the client."""
        return list(handles) if self.client is None else self.client.gather(list(handles))

    def anywhere(self, fn, *args):
        """``fn(*args)`` on any worker (its arguments' handles are read where they
        are): a future on a cluster, the value otherwise."""
        if self.client is None:
            return fn(*args)
        return self.client.submit(fn, *args, key=fresh_name(fn.__name__.strip("_")), pure=False)

    def take(self, rows):
        """The rows ``X[rows]`` (``rows`` sorted) as one handle, put together on the
        cluster: each chunk cuts its part where it lives, and one task joins
        the parts; no row passes through the client.  The array itself without
        a cluster.

        Examples
        --------
        >>> import numpy as np, dask.array as da
        >>> chunks = RowChunks(da.from_array(np.arange(10.0).reshape(5, 2), chunks=(2, 2)).persist())
        >>> chunks.take(np.array([1, 4])).tolist()
        [[2.0, 3.0], [8.0, 9.0]]
        """
        rows = np.asarray(rows, dtype=int)
        cuts = np.searchsorted(rows, self.bounds)
        parts = [self.submit(i, _rows_of, self.X[i], rows[cuts[i]:cuts[i + 1]] - self.bounds[i])
                 for i in range(len(self)) if cuts[i + 1] > cuts[i]]
        return self.anywhere(_joined, *parts)

    def broadcast(self, handle):
        """``handle`` copied to every worker that holds a chunk, by Dask's tree copy
        (``Client.replicate``: each worker holding it passes it to two more per
        round, so ``M`` workers have it after about ``log2 M`` rounds), before
        the chunks' tasks read it; ``handle`` itself."""
        if self.client is not None:
            holders = sorted({w for owners in self.workers if owners for w in owners})
            if len(holders) > 1:
                self.client.replicate([handle], workers=holders)
        return handle

    def place(self, rows):
        """The handles of each chunk of ``rows`` (:class:`ChunkedRows` chunked like
        ``X``), stored beside the chunks of ``X`` (a persisted leaf is read as it
        is; an expression is evaluated there, one task per chunk)."""
        if rows._expr[0] == "leaf" and rows._mask is None:
            leaf = rows._leaves[rows._expr[1]]
            if hasattr(leaf, "__dask_graph__"):
                handles = chunk_handles(leaf)
                if all(_is_future(h) or isinstance(h, np.ndarray) for h in handles):
                    return handles
        stored, = persist_unoptimised(rows.to_dask(near=self.array))
        return chunk_handles(stored)

    def rows_from(self, fn, args_of, ncols=None, pinned=None):
        """``(rows, handles)``: :class:`ChunkedRows` whose chunk ``i`` is
        ``fn(*args_of(i))``, run beside chunk ``i`` (nothing is waited for on a
        cluster), and the handle of each chunk; ``pinned``: the workers each must
        run on (see :meth:`submit`)."""
        da = require_dask()
        from dask.highlevelgraph import HighLevelGraph

        name = fresh_name("bcd-rows")
        keys = [(name, i) if ncols is None else (name, i, 0) for i in range(len(self))]
        handles = [self.submit(i, fn, *args_of(i), key=key, pinned=None if pinned is None else pinned[i])
                   for i, key in enumerate(keys)]
        chunks = (self.rows,) if ncols is None else (self.rows, (ncols,))
        meta = np.empty((0,) * len(chunks))
        array = da.Array(HighLevelGraph.from_collections(name, dict(zip(keys, handles)), dependencies=()), name,
                         chunks=chunks, dtype=np.float64, meta=meta)
        return ChunkedRows.from_dask(array), handles


def _rows_of(X, rows):
    return np.asarray(X[rows], dtype=float)


def _joined(*parts):
    return parts[0] if len(parts) == 1 else np.concatenate(parts)
