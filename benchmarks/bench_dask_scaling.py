"""Beyond one machine, on paper: time per MM pass against the number of workers
at a fixed number of rows per worker (weak scaling, as Tu et al.'s Figure 5),
modelled from costs measured on a LocalCluster.

``python -m benchmarks.bench_dask_scaling [--rows-per-worker 1000000] [--chunk-rows 125000]
[--features 500] [--feature-rows-per-worker 200000] [--passes 12] [--out benchmarks/output/dask_scaling.md]``

What a pass does on a cluster (kerndwd/engine/distributed.py): the client
builds a graph of one task per row chunk (the new decision values
``f + Z step``, stored, and the partial sums of ``Z'z`` at them), a getitem
beside each that hands the partial sums on, and a tree of sums (32 partials
per task); the scheduler sends each task to the worker that holds its
chunk, the coefficients inside the task; the workers compute; ``k + 1``
numbers per chunk travel up the tree; the client solves the ``(k + 1)``
system.  The model of one pass with ``W`` workers and ``c``
chunks per worker (``C = W c`` chunks in all) is

    T(W) = T_fixed + T_client(C) + max(T_workers, T_scheduler(C)) + T_tree(C) + T_coef(C)

* ``T_workers = c * t_chunk``: each chunk's task and getitem, run by the worker
  that holds it, measured (task stream) on this machine; constant in weak
  scaling.  Regenerating features every pass instead of storing them adds
  ``c * t_features`` (measured for an RBF map against ``m`` landmarks).
* ``T_scheduler(C) = s * tasks(C)``: the scheduler is one process and spends
  ``s`` per task (measured with tasks that do nothing); the workers compute
  while it dispatches, hence the max.
* ``T_client(C) = g * C``: building and sending the pass's graph, measured per chunk.
* ``T_tree(C) = levels(C) * h``: each level of the sum tree is one more hop
  (worker to worker, and the scheduler in between), ``h`` measured on a
  chain of dependent tasks.
* ``T_coef(C) = C * 8 (k + 1) * b``: the coefficients ride inside each
  chunk's task; ``b``, the extra seconds per byte a task carries, measured
  with tasks carrying 800 kB against empty ones.
* ``T_fixed``: one blocking round trip (submit, schedule, fetch the result),
  measured with a single task.

The measured passes at 1 and 2 workers are printed beside the model's.  This
is a model fitted to one small machine: it says which term grows and when
it takes over, not what a given cluster will do.  A timing script, not a test.
"""

from __future__ import annotations

import argparse
import math
import statistics
import time

import numpy as np

from ._shared import OUTPUT, command_line, machine_description, traffic, traffic_delta, write_markdown


class RBFLandmarkFeatures:
    """A stand-in feature map with the cost of Nystrom features: the RBF kernel
    against ``m`` landmarks, times an ``m x m`` projection (``O(r p m + r m^2)``
    per chunk of ``r`` rows).  Here only its cost matters."""

    def __init__(self, p, m, seed=0):
        rng = np.random.default_rng(seed)
        self.landmarks = rng.standard_normal((m, p))
        self.projection = np.linalg.qr(rng.standard_normal((m, m)))[0] / np.sqrt(m)
        self.sigma = 1.0 / p

    def transform(self, rows):
        sq = (rows * rows).sum(axis=1)[:, None] + (self.landmarks * self.landmarks).sum(axis=1)[None, :]
        K = np.exp(-self.sigma * np.maximum(sq - 2.0 * rows @ self.landmarks.T, 0.0))
        return K @ self.projection


def run_passes(client, B, y, passes):
    """``passes`` MM passes of the distributed work (the client's solve is a
    (k+1)-vector operation and left out): returns wall seconds per pass, the
    compute seconds per task of each kind, and the traffic per pass."""
    from distributed import get_task_stream

    from kerndwd.engine.chunked import ChunkedRows
    from kerndwd.engine.designs.dask import DaskLinearForm
    from kerndwd.engine.loss import loss_derivs

    form = DaskLinearForm(B)
    rows = ChunkedRows.from_dask(y).persist(near=B)  # each chunk of y beside its chunk of B, as a fit places it
    f = np.zeros_like(rows)
    step = np.full(B.shape[1] + 1, 1e-3)
    # one warm-up pass
    form.ztmul(rows * loss_derivs(rows * f, 1.0))
    f = form.keep_rows(f + form.zmul(step))
    before = traffic(client)
    with get_task_stream(client) as ts:
        start = time.perf_counter()
        for _ in range(passes):
            form.ztmul(rows * loss_derivs(rows * f, 1.0))
            f = form.keep_rows(f + form.zmul(step))
        form.ztmul(rows * f)  # wait for the last stored f
        wall = (time.perf_counter() - start) / passes
    delta = traffic_delta(before, traffic(client))
    durations = {}
    for rec in ts.data:
        key = rec["key"][0] if isinstance(rec["key"], tuple) else rec["key"]
        # the pass's task per chunk, the getitem beside it that hands the partial
        # sums to the tree, and the tree's sums
        kind = ("partial" if "kerndwd-ztz-partial" in key else "sum" if "kerndwd-ztz-sum" in key
                else "chunk" if "kerndwd-ztz" in key else "other")
        for ss in rec["startstops"]:
            if ss["action"] == "compute":
                durations.setdefault(kind, []).append(ss["stop"] - ss["start"])
    return wall, {k: statistics.median(v) for k, v in durations.items()}, {k: v / passes for k, v in delta.items()}


def _nothing(*args):
    return 0.0


def scheduler_cost_per_task(client, tasks=2000):
    """Seconds the cluster spends per task when tasks do nothing (scheduler and messaging)."""
    from dask.delayed import Delayed
    from dask.highlevelgraph import HighLevelGraph

    best = math.inf
    for rep in range(3):
        name = f"noop-{rep}-{time.time_ns()}"
        dsk = {(name, i): (_nothing,) for i in range(tasks)}
        dsk[name] = (_nothing, *[(name, i) for i in range(tasks)])
        start = time.perf_counter()
        Delayed(name, HighLevelGraph.from_collections(name, dsk, dependencies=[])).compute()
        best = min(best, (time.perf_counter() - start) / (tasks + 1))
    return best


def hop_latency(client, depth=20):
    """Seconds per level of a chain of dependent tiny tasks (one hop each)."""
    from dask.delayed import Delayed
    from dask.highlevelgraph import HighLevelGraph

    best = math.inf
    for rep in range(3):
        name = f"chain-{rep}-{time.time_ns()}"
        dsk = {(name, 0): (_nothing,)}
        for i in range(1, depth):
            dsk[(name, i)] = (_nothing, (name, i - 1))
        dsk[name] = (_nothing, (name, depth - 1))
        start = time.perf_counter()
        Delayed(name, HighLevelGraph.from_collections(name, dsk, dependencies=[])).compute()
        best = min(best, (time.perf_counter() - start) / (depth + 1))
    return best


def round_trip(client, reps=10):
    """Seconds of one compute of a single task that does nothing: the fixed cost
    of a blocking round trip (graph submission, scheduling, result back)."""
    from dask.delayed import Delayed
    from dask.highlevelgraph import HighLevelGraph

    times = []
    for rep in range(reps):
        name = f"one-{rep}-{time.time_ns()}"
        start = time.perf_counter()
        Delayed(name, HighLevelGraph.from_collections(name, {name: (_nothing,)}, dependencies=[])).compute()
        times.append(time.perf_counter() - start)
    return min(times)


def seconds_per_task_byte(client, tasks=500, payload=100_000):
    """Extra seconds per byte carried inside a task (``payload`` float64 numbers in
    each of ``tasks`` tasks, against tasks that carry nothing): what embedding the
    coefficients in each chunk's task costs the scheduler and the messages."""
    from dask.delayed import Delayed
    from dask.highlevelgraph import HighLevelGraph

    def run(size):
        best = math.inf
        for rep in range(3):
            name = f"payload-{size}-{rep}-{time.time_ns()}"
            dsk = {(name, i): (_nothing, np.full(size, float(i))) for i in range(tasks)}
            dsk[name] = (_nothing, *[(name, i) for i in range(tasks)])
            start = time.perf_counter()
            Delayed(name, HighLevelGraph.from_collections(name, dsk, dependencies=[])).compute()
            best = min(best, time.perf_counter() - start)
        return best

    return max(run(payload) - run(1), 0.0) / (tasks * 8.0 * (payload - 1))


def client_cost_per_chunk(B, y, reps=20):
    """Seconds of client work per chunk to build a pass's graphs (without sending them)."""
    from kerndwd.engine.chunk_tasks import chunk_layer as _chunk_layer
    from kerndwd.engine.chunked import ChunkedRows
    from kerndwd.engine.designs.dask import DaskLinearForm, _ztz_block

    form = DaskLinearForm(B)
    rows = ChunkedRows.from_dask(y)
    z = rows * rows
    expr, leaves = form._rows(z)
    start = time.perf_counter()
    for _ in range(reps):
        _chunk_layer("x", _ztz_block, (form._basis, expr), leaves, form.chunks, store=True)
        (rows + form.zmul(np.ones(B.shape[1] + 1))).to_dask().__dask_graph__()
    return (time.perf_counter() - start) / reps / len(form.chunks)


def feature_seconds_per_chunk(p, m, rows, reps=3):
    fmap = RBFLandmarkFeatures(p, m)
    X = np.random.default_rng(1).standard_normal((rows, p))
    fmap.transform(X)
    start = time.perf_counter()
    for _ in range(reps):
        fmap.transform(X)
    return (time.perf_counter() - start) / reps


def levels(chunks, fan_in=32):
    return max(1, math.ceil(math.log(max(chunks, 2)) / math.log(fan_in)))


def model(W, c, t_chunk, s, g, h, fixed, coef_bytes, per_byte, t_features=0.0):
    """The terms of one pass with ``W`` workers of ``c`` chunks (see the module docstring)."""
    C = W * c
    tasks = 2 * C + math.ceil(C / 31)
    terms = {"fixed": fixed, "client": g * C, "workers": c * (t_chunk + t_features), "scheduler": s * tasks,
             "tree": levels(C) * h, "coefficients": C * coef_bytes * per_byte}
    terms["total"] = (terms["fixed"] + terms["client"] + max(terms["workers"], terms["scheduler"]) + terms["tree"]
                      + terms["coefficients"])
    return terms


def main(argv=None):
    import dask.array as da
    import distributed

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows-per-worker", type=float, default=1e6)
    parser.add_argument("--chunk-rows", type=int, default=125_000)
    parser.add_argument("--cols", type=int, default=20)
    parser.add_argument("--features", type=int, default=500)
    parser.add_argument("--feature-rows-per-worker", type=float, default=2e5)
    parser.add_argument("--feature-chunk-rows", type=int, default=25_000)
    parser.add_argument("--passes", type=int, default=12)
    parser.add_argument("--out", default=str(OUTPUT / "dask_scaling.md"))
    args = parser.parse_args(argv)
    command = command_line("benchmarks.bench_dask_scaling", argv)
    R, r, d, m = int(args.rows_per_worker), args.chunk_rows, args.cols, args.features
    Rf, rf = int(args.feature_rows_per_worker), args.feature_chunk_rows
    measured = {}
    params = {}
    for W in (1, 2):
        with distributed.LocalCluster(n_workers=W, threads_per_worker=1, processes=True, memory_limit="4GiB",
                                      dashboard_address=None) as cluster, distributed.Client(cluster) as client:
            rng = da.random.default_rng(W)
            n = W * R
            X = rng.standard_normal((n, d), chunks=(r, d)).persist()
            y = da.where(rng.random(n, chunks=r) < 0.5, 1.0, -1.0).persist()
            wall, per_task, per_pass = run_passes(client, X, y, args.passes)
            measured[("linear", W)] = wall
            params[("linear", W)] = (per_task, per_pass)
            nf = W * Rf
            Xf = rng.standard_normal((nf, d), chunks=(rf, d))
            fmap = RBFLandmarkFeatures(d, m)
            Phi = Xf.map_blocks(fmap.transform, chunks=(Xf.chunks[0], (m,)), dtype=float).persist()
            yf = da.where(rng.random(nf, chunks=rf) < 0.5, 1.0, -1.0).persist()
            wall_f, per_task_f, per_pass_f = run_passes(client, Phi, yf, args.passes)
            measured[("features", W)] = wall_f
            params[("features", W)] = (per_task_f, per_pass_f)
            if W == 2:
                s = scheduler_cost_per_task(client)
                h = hop_latency(client)
                g = client_cost_per_chunk(X, y)
                fixed = round_trip(client)
                per_byte = seconds_per_task_byte(client)
            del X, y, Phi, yf
    t_feat = feature_seconds_per_chunk(d, m, rf)
    c_lin, c_feat = R // r, Rf // rf

    def chunk_seconds(kind):
        per_task = params[(kind, 2)][0]
        return per_task.get("chunk", 0.0) + per_task.get("partial", 0.0)

    def coef_bytes(kind, k):
        # bytes per chunk task beyond a linear pass's: the coefficients ride in the "rows" task
        return 8.0 * (k + 1)

    cases = {
        f"linear, d = {d}, {R:,} rows per worker ({c_lin} chunks)":
            dict(c=c_lin, t_chunk=chunk_seconds("linear"), coef_bytes=coef_bytes("linear", d)),
        f"features stored, m = {m}, {Rf:,} rows per worker ({c_feat} chunks)":
            dict(c=c_feat, t_chunk=chunk_seconds("features"), coef_bytes=coef_bytes("features", m)),
        f"features regenerated every pass, m = {m}, {Rf:,} rows per worker":
            dict(c=c_feat, t_chunk=chunk_seconds("features"), coef_bytes=coef_bytes("features", m),
                 t_features=t_feat),
    }
    Ws = [2 ** k for k in range(0, 13)]
    common = dict(s=s, g=g, h=h, fixed=fixed, per_byte=per_byte)
    curves = {name: [model(W, **common, **kw) for W in Ws] for name, kw in cases.items()}
    lines = [
        "# Dask: time per MM pass against workers at a fixed number of rows per worker (a model)",
        "",
        f"Machine: {machine_description('dask', 'distributed')}.",
        f"Command: `{command}` (run under `flock -x /tmp/kerndwd-cpu.lock`).",
        "",
        "Measured on LocalClusters of 1 and 2 worker processes (1 thread each) on this machine:",
        "",
        "| quantity | measured |",
        "|---|---|",
        f"| one chunk's pass (its task and the getitem beside it), linear ({r:,} x {d}) | "
        f"{chunk_seconds('linear') * 1e3:.1f} ms |",
        f"| one chunk's pass, stored features ({rf:,} x {m}) | {chunk_seconds('features') * 1e3:.1f} ms |",
        f"| generating one chunk's features ({rf:,} rows, RBF against {m} landmarks, {m} x {m} projection) | "
        f"{t_feat * 1e3:.1f} ms |",
        f"| scheduler and messaging per task (`s`, tasks that do nothing) | {s * 1e3:.2f} ms |",
        f"| one level of the sum tree (`h`, a chain of dependent tiny tasks) | {h * 1e3:.1f} ms |",
        f"| client work per chunk to build a pass's graphs (`g`) | {g * 1e6:.0f} us |",
        f"| one blocking round trip (a single task that does nothing) | {fixed * 1e3:.1f} ms |",
        f"| extra cost per byte carried inside a task | {per_byte * 2**20 * 1e3:.1f} ms per MiB |",
        "",
        "| case | workers | measured per pass | model per pass |",
        "|---|---|---|---|",
    ]
    for (kind, W), wall in sorted(measured.items()):
        kw = cases[next(k for k in cases if k.startswith("linear" if kind == "linear" else "features stored"))]
        predicted = model(W, **common, **kw)["total"]
        lines.append(f"| {kind} | {W} | {wall * 1e3:.0f} ms | {predicted * 1e3:.0f} ms |")
    lines += ["", "Bytes per pass on each link (measured, 2 workers):", "",
              "| link | linear | stored features |", "|---|---|---|"]
    for key in params[("linear", 2)][1]:
        lines.append(f"| {key} | {params[('linear', 2)][1][key]:,.0f} | {params[('features', 2)][1][key]:,.0f} |")
    lines += ["", "Modelled time per pass (seconds) at a fixed number of rows per worker:", "",
              "| workers | " + " | ".join(cases) + " |", "|---|" + "---|" * len(cases)]
    for i, W in enumerate(Ws):
        lines.append(f"| {W} | " + " | ".join(f"{curves[name][i]['total']:.3f}" for name in cases) + " |")
    lines += ["", "What bounds it:", ""]
    for name in cases:
        over = [W for W, c in zip(Ws, curves[name]) if c["scheduler"] + c["client"] > c["workers"]]
        first = curves[name][0]
        if not over:
            lines.append(f"- {name}: the workers' compute, to 4096 workers.")
        elif over[0] == 1:
            lines.append(f"- {name}: the scheduler from one worker on: a chunk's pass computes in "
                         f"{first['workers'] / cases[name]['c'] * 1e3:.1f} ms against {2 * s * 1e3:.1f} ms of "
                         "scheduling; larger chunks move the crossover out.")
        else:
            lines.append(f"- {name}: the workers' compute up to about {over[0] // 2} workers; beyond, the "
                         "scheduler's and the client's work per task, which grow with the number of chunks, "
                         "take over and the time per pass grows linearly with the workers.")
    lines += [
        "- The reduction costs one hop per level of a 32-way tree: "
        f"{levels(Ws[-1] * c_lin)} levels ({levels(Ws[-1] * c_lin) * h * 1e3:.0f} ms) at 4096 workers; it "
        "never dominates.",
        f"- The coefficients ({8 * (d + 1)} bytes for the linear form, {8 * (m + 1):,} for m = {m} features) "
        "ride inside each chunk's task, so the scheduler sends them once per chunk: at 4096 workers that is "
        f"{Ws[-1] * c_feat * 8 * (m + 1) / 2**20:.0f} MiB per pass for the features, "
        f"{curves[list(cases)[1]][-1]['coefficients']:.2f} s at the measured cost per byte. Sending them once "
        "per worker (a broadcast tree, O(log W), as Tu et al. note for their b x d blocks) would remove this "
        "term.",
        f"- Regenerating the features every pass costs {t_feat / chunk_seconds('features'):.1f} times the pass "
        "itself per chunk; it scales perfectly (it is per chunk), but it multiplies the time per pass, so "
        "features are stored when they fit in the workers' memory.",
        "",
        "![time per pass against workers](dask_scaling.png)",
    ]
    _plot(Ws, curves, measured, cases, write_markdown(lines, args.out).with_suffix(".png"))


def _plot(Ws, curves, measured, cases, png):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(11, 4))
    ax = axes[0]
    for (name, curve), style in zip(curves.items(), ("-", "--", ":")):
        ax.plot(Ws, [c["total"] for c in curve], style, label=name)
    for (kind, W), wall in measured.items():
        ax.plot(W, wall, "o", color="C0" if kind == "linear" else "C1")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("workers (rows per worker fixed)")
    ax.set_ylabel("seconds per MM pass")
    ax.set_title("model (lines) and LocalCluster (dots)")
    ax.legend(fontsize=7)
    ax = axes[1]
    name = list(cases)[1]
    for part in ("workers", "scheduler", "client", "fixed", "tree", "coefficients"):
        ax.plot(Ws, [c[part] for c in curves[name]], label=part)
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("workers")
    ax.set_title("terms of the model: " + name.split(",")[0] + f", m = {name.split('m = ')[1].split(',')[0]}")
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(png, dpi=120)


if __name__ == "__main__":
    main()
