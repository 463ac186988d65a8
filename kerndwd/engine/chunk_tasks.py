"""The task graphs behind :class:`~kerndwd.engine.chunked.ChunkedRows`: one task per
chunk evaluates an expression over persisted chunks, stores what must be
kept, and returns partial sums that a tree of tasks adds up.

An expression is a nested tuple (``("leaf", name)``, ``("const", v)``,
``("ufunc", f, *args)``, ...) evaluated block by block; values marked to be
kept (:class:`Stored`) are computed by the first reduction that reads them,
inside its own tasks, so storing a new iterate costs no task of its own.  On
a ``distributed`` cluster each chunk's task prefers the worker that holds the
chunk (:func:`chunk_graph`).  Dask is imported only when a Dask collection is
seen (:func:`require_dask`).
"""

from __future__ import annotations

import operator
import uuid

import numpy as np

from .progress import current as current_progress

__all__ = ["is_dask_collection", "require_dask", "Stored", "row_chunks", "chunk_layer", "rows_array", "persist_beside",
           "persist_unoptimised",
           "leaf_arrays", "chunk_graph", "reduce_rows", "fresh_name", "as_float", "sum_and_count_block",
           "DASK_EXTRA", "SLICE_ROWS", "REDUCE_FAN_IN"]

#: What to install for Dask input (named in every ImportError).
DASK_EXTRA = "pip install 'kerndwd[dask]'"

#: Rows of a chunk that its task evaluates at a time: the slice of the basis
#: (``SLICE_ROWS x k`` floats) stays in cache from the product that updates ``f``
#: to the one that forms ``Z'z``, so a pass reads each chunk from memory once
#: (it halves the task's time at 250,000 x 20 here).
SLICE_ROWS = 8192

#: Partial sums added by one task of a reduction tree: a reduction over ``c``
#: chunks takes ``ceil(log(c) / log(REDUCE_FAN_IN))`` levels after the chunk tasks.
REDUCE_FAN_IN = 32


def is_dask_collection(obj) -> bool:
    """Whether ``obj`` is a Dask collection (array, DataFrame, Series), without importing Dask.

    Parameters
    ----------
    obj : object

    Returns
    -------
    bool
        True when ``obj`` has a Dask task graph (Dask's own test).

    Examples
    --------
    >>> import numpy as np
    >>> is_dask_collection(np.ones(3))
    False
    """
    graph = getattr(type(obj), "__dask_graph__", None)
    return callable(graph) and obj.__dask_graph__() is not None


def require_dask():
    """Import ``dask.array`` for a Dask input.

    Returns
    -------
    module
        ``dask.array``.

    Raises
    ------
    ImportError
        Dask is not installed; the message names the extra,
        ``pip install 'kerndwd[dask]'``.

    Examples
    --------
    >>> require_dask().__name__
    'dask.array'
    """
    try:
        import dask.array as da
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError(f"Dask input needs dask[array]: {DASK_EXTRA}") from exc
    return da


def fresh_name(prefix):
    """A unique key prefix for a graph.  Naming graphs ourselves spares Dask
    from hashing their functions and arguments on every MM pass; nothing is
    shared between passes, so nothing is lost."""
    return f"kerndwd-{prefix}-{uuid.uuid4().hex}"


# --------------------------------------------------------------------------
# per-row vectors: expressions over chunks, evaluated in one task per chunk
# --------------------------------------------------------------------------
def _evaluate(expr, env):
    """The value of ``expr`` on one chunk (``env``: leaf name -> its block)."""
    kind = expr[0]
    if kind == "leaf":
        return env[expr[1]]
    if kind == "const":
        return expr[1]
    if kind == "ufunc":
        return expr[1](*(_evaluate(a, env) for a in expr[2:]))
    if kind == "where":
        return np.where(*(_evaluate(a, env) for a in expr[1:]))
    if kind == "select":  # the rows where expr[1] holds, and expr[2] evaluated on them alone
        selected = np.asarray(_evaluate(expr[1], env), dtype=bool)
        if selected.ndim == 0:
            return _evaluate(expr[2], env)
        return _evaluate(expr[2], {name: block[selected] for name, block in env.items()})
    if kind == "matvec":
        block = env[expr[1]]
        return block @ expr[2] if block.dtype == np.float64 else block.astype(np.float64) @ expr[2]
    if kind == "expand":  # v[:, None]
        return np.asarray(_evaluate(expr[1], env))[:, None]
    if kind == "columns":  # v[:, columns]
        return _evaluate(expr[1], env)[:, expr[2]]
    if kind == "reshape":  # v.reshape(len(v), -1)
        value = np.asarray(_evaluate(expr[1], env))
        return value.reshape(value.shape[0], -1)
    raise ValueError(f"unknown expression {kind!r}")  # pragma: no cover


class Stored:
    """Per-row values that the first task needing them computes and keeps.

    Pending, it is an expression ``expr`` over ``leaves``.  The first
    reduction whose expression reaches it evaluates it inside its own task
    per chunk and returns it with the partial sums, so storing a new iterate
    costs no task of its own; from then on chunk ``i`` is element ``index`` of
    the tuple held under key ``(array.name, i)``.
    """

    ndim = 1

    def __init__(self, expr, leaves, chunks):
        self.name = fresh_name("stored")
        self.expr, self.leaves, self.chunks = expr, dict(leaves), tuple(chunks)
        self.array, self.index = None, None

    @property
    def pending(self):
        return self.array is None


def row_chunks(leaf):
    return leaf.chunks if isinstance(leaf, Stored) else tuple(leaf.chunks[0])


def _plan(leaves):
    """``(pending, inputs)``: the pending stores reachable from ``leaves``, each
    after the leaves it needs, and the materialised leaves a chunk's task reads."""
    pending, inputs, seen = [], {}, set()

    def visit(name, leaf):
        if name in seen:
            return
        seen.add(name)
        if isinstance(leaf, Stored) and leaf.pending:
            for inner_name, inner in leaf.leaves.items():
                visit(inner_name, inner)
            pending.append(leaf)
        else:
            inputs[name] = leaf

    for name, leaf in leaves.items():
        visit(name, leaf)
    return pending, inputs


def _slot(leaf, i):
    """The key of chunk ``i`` of a materialised leaf, and which element of it to read."""
    if isinstance(leaf, Stored):
        return (leaf.array.name, i), leaf.index
    return ((leaf.name, i) if leaf.ndim == 1 else (leaf.name, i, 0)), None


def _full(value, rows):
    # an expression without leaves (zeros_like, say) is a scalar: give it the chunk's length
    return np.full(rows, value, dtype=float) if np.ndim(value) == 0 else value


def _chunk_task(fn, exprs, pending, names, indexes, rows, store, additive, errstate, *blocks):
    """One chunk's task (``rows`` rows): evaluate the pending stores, then ``exprs``,
    then ``fn`` of them, :data:`SLICE_ROWS` rows at a time, under the client's
    ``np.errstate`` of when the work was asked for; ``fn``'s values are added
    (``additive``: partial sums) or joined (rows).  With ``store``, return the
    result and the stores' values."""
    blocks = [block if index is None else block[index] for index, block in zip(indexes, blocks)]
    stored = {name: [] for name, _ in pending}
    total, pieces = None, []
    with np.errstate(**errstate):
        for start in range(0, rows, SLICE_ROWS) or [0]:
            stop = min(start + SLICE_ROWS, rows)
            env = {name: block[start:stop] for name, block in zip(names, blocks)}
            for name, expr in pending:
                env[name] = _full(_evaluate(expr, env), stop - start)
                stored[name].append(env[name])
            value = fn(*(_full(_evaluate(e, env), stop - start) for e in exprs))
            if additive:
                total = value if total is None else total + value
            else:
                pieces.append(value)
    result = total if additive else np.concatenate(pieces)
    return (result, *(np.concatenate(v) for v in stored.values())) if store else result


def as_float(v):
    return np.asarray(v, dtype=float)


def sum_and_count_block(values, selected):
    """``[column sums of the (already selected) values, how many rows]`` of one chunk."""
    return np.append(np.ravel(np.sum(values, axis=0)), np.count_nonzero(selected)).astype(float)


def _add_partials(*partials):
    return np.sum(partials, axis=0)


def chunk_layer(name, fn, exprs, leaves, chunks, store):
    """``(dsk, pending, inputs)``: one task per chunk computing ``fn`` of ``exprs``
    (and, with ``store``, the pending stores they reach)."""
    pending, inputs = _plan(leaves)
    pending_specs = tuple((h.name, h.expr) for h in pending)  # without store: evaluated inline, not kept
    names = tuple(inputs)
    dsk = {}
    for i, rows in enumerate(chunks):
        slots = [_slot(inputs[k], i) for k in names]
        dsk[(name, i)] = (_chunk_task, fn, exprs, pending_specs, names, tuple(ix for _, ix in slots), rows,
                          store and bool(pending), store, np.geterr(), *[key for key, _ in slots])
    return dsk, pending, inputs


def rows_array(expr, leaves, chunks, ncols=None, near=None):
    """A lazy Dask array of the rows ``expr`` over ``leaves`` (``chunks`` rows per
    chunk; ``ncols`` columns, None for a vector): one task per chunk evaluates it.
    With ``near`` (a persisted Dask array chunked like the rows, ``X`` say), each
    task also depends on ``near``'s chunk, so the scheduler runs it, and keeps
    its result, on the worker that holds that chunk."""
    da = require_dask()
    leaves = leaves if near is None else {**leaves, near.name: near}
    name = fresh_name("rows")
    dsk, _, inputs = chunk_layer(name, as_float, (expr,), leaves, chunks, store=False)
    if ncols is not None:  # a matrix's chunk i is the block (i, 0)
        dsk = {(name, i, 0): task for (_, i), task in dsk.items()}
    graph = chunk_graph(name, dsk, leaf_arrays(inputs), inputs, chunk_layer=name)
    shape = (chunks,) if ncols is None else (chunks, (ncols,))
    return da.Array(graph, name, chunks=shape, dtype=np.float64, meta=np.empty((0,) * len(shape)))


def persist_beside(near, arrays):
    """Each of ``arrays`` (Dask vectors or one-column-chunk matrices chunked like
    the rows of ``near``, or None) computed and stored on the workers now, in
    one computation, each chunk beside the chunk of ``near`` it belongs to
    (:func:`rows_array`): the persisted arrays, None where None was given."""
    lazy = [rows_array(("leaf", a.name), {a.name: a}, tuple(a.chunks[0]), None if a.ndim == 1 else a.shape[1], near)
            for a in arrays if a is not None]
    stored = iter(persist_unoptimised(*lazy) if lazy else ())
    return tuple(None if a is None else next(stored) for a in arrays)


def persist_unoptimised(*arrays):
    """``arrays`` persisted in one computation (a tuple, in their order), without
    Dask's array optimisation, which would rebuild our one-task-per-chunk layers
    and drop the workers they are meant to run on."""
    import dask

    return dask.persist(*arrays, optimize_graph=False)


def leaf_arrays(inputs):
    return [leaf.array if isinstance(leaf, Stored) else leaf for leaf in inputs.values()]


#: (array name, client id) -> the workers holding each of the array's row
#: chunks; looked up once per persisted basis or vector and cluster.
_OWNERS = {}


def _owners(array):
    """The workers that hold each row chunk of a persisted Dask array, or None
    when it is not held by a ``distributed`` cluster."""
    graph = array.__dask_graph__()
    keys = [row[0] if isinstance(row, list) else row for row in array.__dask_keys__()]
    futures = [graph.get(key) for key in keys]
    if not futures or not all(hasattr(f, "client") and hasattr(f, "key") for f in futures):
        return None
    client = futures[0].client
    cache_key = (array.name, client.id)
    if cache_key not in _OWNERS:
        import distributed

        if len(_OWNERS) > 256:
            _OWNERS.clear()
        with client.as_current():  # the futures' own client, default or not
            distributed.wait(futures)
        who = client.who_has(futures)
        _OWNERS[cache_key] = [list(who.get(f.key, ())) or None for f in futures]
    return _OWNERS[cache_key]


def chunk_graph(name, dsk, dependencies, inputs=None, chunk_layer=None):
    """The high-level graph of ``dsk``.  On a distributed cluster, each task of
    ``chunk_layer`` (keys ``(chunk_layer, i)``) prefers the worker holding chunk
    ``i`` of the basis (or of another persisted input): the scheduler would
    otherwise balance a busy moment by moving a chunk of ``X`` to an idle
    worker, and the next pass's values with it."""
    from dask.highlevelgraph import HighLevelGraph

    candidates = [leaf for leaf in (inputs or {}).values() if not isinstance(leaf, Stored)]
    candidates.sort(key=lambda leaf: -leaf.ndim)  # the basis first
    owners = _owners(candidates[0]) if candidates else None
    if not owners:
        return HighLevelGraph.from_collections(name, dsk, dependencies=dependencies)
    import dask

    def where(key):
        return owners[key[1]] if isinstance(key, tuple) and key[0] == chunk_layer else None

    with dask.annotate(workers=where, allow_other_workers=True):
        return HighLevelGraph.from_collections(name, dsk, dependencies=dependencies)


def reduce_rows(fn, exprs, leaves, chunks, prefix="reduce"):
    """``sum over chunks of fn(*exprs evaluated on the chunk)``, computed: one task
    per chunk, then a tree of sums (:data:`REDUCE_FAN_IN` partials per task).
    Pending stores the expressions reach are computed in the same tasks and
    kept on the workers."""
    da = require_dask()
    from dask.delayed import Delayed

    name = fresh_name(prefix)
    dsk, pending, inputs = chunk_layer(name, fn, exprs, leaves, chunks, store=True)
    dependencies = leaf_arrays(inputs)
    if pending:
        # the chunk tasks' results (partial sums and stored values) stay on the workers
        layer = chunk_graph(name, dsk, dependencies, inputs, chunk_layer=name)
        kept, = persist_unoptimised(da.Array(layer, name, chunks=((1,) * len(chunks),), dtype=object,
                                 meta=np.empty((0,), dtype=object)))
        for j, holder in enumerate(pending):
            holder.array, holder.index = kept, j + 1
            holder.expr = holder.leaves = None
        # the tree reads each chunk's partial sums alone (a task beside the kept
        # values), not the stored rows that share their tuple
        partials = fresh_name(f"{prefix}-partial")
        dsk = {(partials, i): (operator.getitem, (name, i), 0) for i in range(len(chunks))}
        dependencies, name = [kept], partials
    tree = fresh_name(f"{prefix}-sum")
    level, keys = 0, [(name, i) for i in range(len(chunks))]
    while True:
        level += 1
        groups = [keys[j:j + REDUCE_FAN_IN] for j in range(0, len(keys), REDUCE_FAN_IN)]
        if len(groups) == 1:  # the root: its key is the graph's name
            dsk[tree] = (_add_partials, *groups[0])
            break
        keys = []
        for j, group in enumerate(groups):
            dsk[(tree, level, j)] = (_add_partials, *group)
            keys.append((tree, level, j))
    graph = chunk_graph(tree, dsk, dependencies, None if pending else inputs, chunk_layer=name)
    out = np.asarray(Delayed(tree, graph).compute(optimize_graph=False), dtype=float)
    monitor = current_progress()
    if monitor is not None:
        monitor.tasks_run(len(dsk) + (len(chunks) if pending else 0))
    return out


