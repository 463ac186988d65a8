"""The exact kernel's block coordinate descent on a Dask cluster under weak
scaling: per-block costs measured on a 2-worker LocalCluster, extrapolated to
Tu et al.'s setting (16 384 rows per worker, d = 440, 1 to 128 workers).

``python -m benchmarks.bench_dask_bcd_scaling [--rows 4096 8192 16384] [--rows-per-worker 16384]
[--block-sizes 64 2048] [--wide 4096] [--fit-rows-per-worker 16384] [--fit-maxit 1] [--reps 3]
[--out benchmarks/output/dask_bcd_scaling.md]``

What one block costs (kerndwd/engine/designs/dask_bcd.py): the block's rows
``X_I`` (``b x d`` numbers, put together on the cluster once per fit) are
copied to every worker by Dask's broadcast tree (``Client.replicate``), and
the client sends every row chunk, inside that chunk's task, the handle of
``X_I`` and the previous block's move (``2 b + 1``); the task, pinned to the
worker that holds the chunk's state, applies the move, forms
``K_cI = k(X_c, X_I)`` and returns ``3 b + 1`` numbers (plus its rows of the
residual in ``I``, and on the first sweep only the ``(b + 1)^2`` partial
sums of the block's Gram); the client adds them and solves the ``(b + 1)``
system.  With ``M`` workers of one chunk of ``r`` rows each, the model of one
block is

    T_block(M) = t_task(r, b, d) + T_round(M) + T_send(M) + T_gather(M) + t_solve(b)

* ``t_task``: the chunk's task (``_block``, the package's own function) on a
  worker, of which ``t_kernel`` is forming ``K_cI`` (``_cross_kernel``):
  measured on both workers at once, the slower counted; constant in weak
  scaling (the rows per worker are fixed).
* ``T_round(M)``: a round of ``M`` pinned tasks that do nothing, submitted
  and gathered as the fit's rounds are, measured for ``M`` = 1 to 32 tasks
  spread over the two workers (the client and the scheduler handle each
  task in turn, so the round grows with its tasks); beyond 32,
  ``T_round(32) + (M - 32) s`` with ``s`` the slope over 8 to 32 tasks.
* ``T_send(M)``: ``X_I`` reaching every worker.  As implemented, by a
  broadcast tree, as Tu et al. assume: one request to the scheduler and
  ``ceil(log2 M)`` hops of ``h + B beta_hop`` (``B = 8 b d`` bytes;
  worker-to-worker transfers of ``B`` bytes, measured at two sizes: latency
  ``h`` and seconds per byte ``beta_hop``), so ``(ceil(log2 M) + 1) h +
  ceil(log2 M) B beta_hop`` (nothing with one worker).  Beside it, what a
  copy in each chunk's task would cost (the client and the scheduler pass
  ``M`` copies): ``M B beta_task`` (``beta_task`` measured as the extra
  seconds per byte of rounds whose tasks carry ``B`` bytes).  Both are
  given; the per-sweep model uses the implemented one.
* ``T_gather(M) = 8 (M (2 b + 1) + b) beta_task``: the numbers coming back
  (each chunk's ``2 b + 1`` sums and its rows of the residual in ``I``).
* ``t_solve``: the client's ``(b + 1)`` solve by the cached Cholesky factor
  (``spd_solver``), plus, on each lambda's first sweep, the factorisation.

A sweep is ``n / b`` blocks, ``n = r M``: in weak scaling the blocks of a
sweep grow with ``M``, so the time per sweep grows at least linearly in
``M`` even where the time per block stays flat.  One more round per sweep
carries the global step.  The model is checked against a short real fit on
the same cluster (``kerndwd.fit(..., solver="bcd")`` on Dask rows, each
sweep timed by wrapping the majoriser's sweep function from outside).

The extrapolation is a model fitted to a shared 2-core machine, where the
two workers, the scheduler and the client share two cores: it says which
term grows and when it takes over, not what a given cluster will do.  A
timing script, not a test.
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # before numpy; the workers inherit it
os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("MKL_NUM_THREADS", "1")

import argparse  # noqa: E402
import math  # noqa: E402
import statistics  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402

import numpy as np  # noqa: E402

from ._shared import OUTPUT, Report, median_seconds, traffic, traffic_delta, two_gaussians  # noqa: E402

#: Tu et al.'s weak-scaling setting (Section 5, Figure 5): rows per machine, and TIMIT's size
TU_ROWS_PER_MACHINE = 16_384
TIMIT_ROWS = 2.25e6
TU_SOURCE = ("Tu, Roelofs, Venkataraman and Recht, \"Large Scale Kernel Learning using Block Coordinate "
             "Descent\" (2016), Section 5, the paragraph on Figure 5")
TU_QUOTE = ("\"In the weak scaling scenario, ideal scaling implies that the time to generate a block of the "
            "kernel matrix remains constant as we increase both the data and the number of machines. However, "
            "computing a block of the RBF kernel involves broadcasting a b x d matrix to all the machines in the "
            "cluster. This causes a slight decrease in performance as we go from 8 to 128 machines. As broadcast "
            "routines scale as O(log M), we believe that our kernel block generation methods will continue to "
            "scale well for larger datasets.\"")


# --------------------------------------------------------------------------
# on a worker
# --------------------------------------------------------------------------
def _chunk_block_costs(r, d, b, reps, seed, sigma):
    """On the worker that runs it: seconds of ``_cross_kernel`` (``K_cI`` for ``r``
    chunk rows and ``b`` block rows of ``d`` features), of the chunk's whole
    block task ``_block`` on a later sweep, and of its first-sweep task (the
    Gram's partial sums added).  The fastest of ``reps`` after one warm-up:
    the flops are the same every time, and on a shared machine the slower
    runs measure the other work on its cores."""
    import kerndwd
    from kerndwd.engine.designs.dask_bcd import _begin, _block, _cross_kernel, _init_state

    rng = np.random.default_rng(seed)
    X = rng.standard_normal((r, d))
    y = np.where(rng.random(r) < 0.5, 1.0, -1.0)
    XI = rng.standard_normal((b, d))
    kern = kerndwd.rbfdot(sigma)
    state = _init_state(X, y, None, kern, 1.0, 0)
    _begin(state, np.zeros(r), np.zeros(r), 2.0 * r * 0.1, False, 0.0)
    block = np.arange(min(b, r))  # the block's rows that this chunk holds (here its first b)
    zeros = np.zeros(b)

    def timed(call):
        call()
        out = []
        for _ in range(reps):
            t0 = time.perf_counter()
            call()
            out.append(time.perf_counter() - t0)
        return min(out)

    kernel = timed(lambda: _cross_kernel(kern, X, XI))
    t0 = time.perf_counter()
    _block(state, ("global", None), XI, block, True)
    first = time.perf_counter() - t0
    task = timed(lambda: _block(state, ("block", 0.0, zeros, zeros), XI, block, False))
    return {"kernel": kernel, "task": task, "first": first,
            "blas": os.environ.get("OPENBLAS_NUM_THREADS", "default")}


class _State:
    """A stand-in for a chunk's state: a future pinned to one worker."""


def _make_state():
    return _State()


def _touch(state, *args):
    return 0.0


def _stub_block(state, pending, XI, block, first, rows):
    """A block task that computes nothing but returns what ``_block`` returns
    (``2 b + 1`` sums, the chunk's ``rows`` of the residual in the block, no Gram)."""
    return np.zeros(2 * XI.shape[0] + 1), np.zeros(rows), None


def _size(payload):
    return payload.nbytes


# --------------------------------------------------------------------------
# on the cluster, from the client
# --------------------------------------------------------------------------
def chunk_costs(client, workers, r, d, b, reps, sigma):
    """:func:`_chunk_block_costs` on every worker at once (as the fit's rounds run
    them); the slower worker's figures."""
    futures = [client.submit(_chunk_block_costs, r, d, b, reps, i, sigma, workers=[w], allow_other_workers=False,
                             pure=False) for i, w in enumerate(workers)]
    results = client.gather(futures)
    return {k: max(res[k] for res in results) for k in ("kernel", "task", "first")}, results[0]["blas"]


def round_seconds(client, states, pinned, payload=None, reps=25):
    """Median seconds of a round of pinned tasks that do nothing, one per state,
    submitted and gathered as ``DaskBlockCoordinateKernel._round`` does (each
    task carrying ``payload``, if given, as each block task carries ``X_I``)."""
    from kerndwd.engine.chunk_tasks import fresh_name

    args = () if payload is None else (payload,)

    def one():
        return client.gather([client.submit(_touch, s, *args, key=fresh_name("touch"), pure=False, workers=w,
                                            allow_other_workers=False) for s, w in zip(states, pinned)])

    return median_seconds(one, reps)[0]


def block_round_seconds(client, states, pinned, b, d, reps=15):
    """Median seconds of a round shaped like a block's (the same arguments: the
    previous move, ``X_I``, the block's indices; the same results back) whose
    tasks compute nothing."""
    from kerndwd.engine.chunk_tasks import fresh_name

    pending = ("block", 0.0, np.zeros(b), np.zeros(b))
    XI, block = np.ones((b, d)), np.arange(b)
    share = b // len(states)

    def one():
        return client.gather([client.submit(_stub_block, s, pending, XI, block, False, share,
                                            key=fresh_name("stub"), pure=False, workers=w,
                                            allow_other_workers=False) for s, w in zip(states, pinned)])

    return median_seconds(one, reps)[0]


def hop_seconds(client, workers, nbytes, reps=10):
    """Median seconds for ``nbytes`` held by one worker to reach the other (a task
    there that reads them), less the same task beside the data: one hop of a
    broadcast tree.  Fresh data each time (scattered untimed), so every remote
    read transfers."""
    def one(where):
        data = client.scatter(np.ones(nbytes // 8), workers=[workers[0]], broadcast=False, hash=False)
        distributed_wait(data)
        t0 = time.perf_counter()
        client.submit(_size, data, workers=[where], allow_other_workers=False, pure=False).result()
        return time.perf_counter() - t0

    remote, local = [], []
    one(workers[1])
    for _ in range(reps):
        local.append(one(workers[0]))
        remote.append(one(workers[1]))
    return max(statistics.median(remote) - statistics.median(local), 0.0)


def distributed_wait(future):
    import distributed

    distributed.wait(future)


def solve_seconds(b, reps=200):
    """Seconds of the client's ``(b + 1)`` solve by a cached factor, and of the factorisation."""
    from kerndwd.engine.majorisers.linear import spd_solver

    rng = np.random.default_rng(0)
    A = rng.standard_normal((b + 1, 4 * (b + 1)))
    P = A @ A.T / A.shape[1] + np.eye(b + 1)
    rhs = rng.standard_normal(b + 1)
    t0 = time.perf_counter()
    for _ in range(20):
        solver = spd_solver(P)
    factor = (time.perf_counter() - t0) / 20
    solver(rhs)
    t0 = time.perf_counter()
    for _ in range(reps):
        solver(rhs)
    return (time.perf_counter() - t0) / reps, factor


def fit_sweeps(client, n, d, chunk_rows, b, sweeps, sigma, lam):
    """A real fit on Dask rows (``kerndwd.fit(..., solver="bcd")``), stopped by
    ``maxit`` after ``sweeps`` sweeps: the seconds of each sweep (the
    majoriser's sweep function, timed by a wrapper from outside), the whole
    fit, its solve (the MM loop, evaluations included) and the traffic."""
    import distributed

    import kerndwd
    from kerndwd.engine.designs import dask_bcd

    from ._shared import timed_mm

    X, y = two_gaussians(n, d, chunk_rows, seed=3)
    X, y = client.persist([X, y])
    distributed.wait([X, y])
    who = client.who_has(client.futures_of(X))
    holders = sorted({tuple(sorted(v)) for v in who.values()})
    sweep_times, rounds = [], []
    original = dask_bcd.DaskBlockCoordinateKernel.at_lambda

    def at_lambda(self, lam_):
        step_fn = original(self, lam_)

        def timed(*args, **kwargs):
            before = traffic(client)
            t0 = time.perf_counter()
            out = step_fn(*args, **kwargs)
            sweep_times.append(time.perf_counter() - t0)
            rounds.append((len(self.blocks) + 1, traffic_delta(before, traffic(client))))
            return out

        return timed

    record = {}
    dask_bcd.DaskBlockCoordinateKernel.at_lambda = at_lambda
    try:
        with warnings.catch_warnings(), timed_mm(record, client), distributed.get_task_stream(client) as stream:
            warnings.simplefilter("ignore")
            t0 = time.perf_counter()
            path = kerndwd.fit(X, y, [lam], kern=kerndwd.rbfdot(sigma), solver="bcd", stop="kkt", eps=1e-12,
                               maxit=sweeps)
            total = time.perf_counter() - t0
    finally:
        dask_bcd.DaskBlockCoordinateKernel.at_lambda = original
    block_tasks = [ss["stop"] - ss["start"] for rec in stream.data if "kerndwd-block-" in str(rec["key"])
                   for ss in rec["startstops"] if ss["action"] == "compute"]
    return {"sweeps": sweep_times, "rounds": rounds, "total": total, "solve": record.get("seconds"),
            "passes": int(path.npass.sum()), "holders": holders, "chunks": len(who),
            "block_task": statistics.median(block_tasks) if block_tasks else None}


# --------------------------------------------------------------------------
# the model
# --------------------------------------------------------------------------
def round_model(M, c):
    """A round of ``M`` tasks: measured up to the largest count, then that plus ``s`` per further task."""
    rounds = c["rounds"]
    if M in rounds:
        return rounds[M]
    top = max(rounds)
    if M > top:
        return rounds[top] + (M - top) * c["s"]
    return float(np.interp(M, sorted(rounds), [rounds[k] for k in sorted(rounds)]))


def model(M, r, b, d, c, first=False):
    """The terms of one block, and of a sweep, with ``M`` workers of ``r`` rows
    (``c``: the measured constants)."""
    B = 8.0 * b * d
    task = c["first"][(r, b, d)] if first else c["task"][(r, b, d)]
    kernel = c["kernel"][(r, b, d)]
    terms = {
        "kernel": kernel,
        "task": task,
        "round": round_model(M, c),
        "send": M * B * c["beta_task"],
        "tree": ((math.ceil(math.log2(M)) + 1) * c["h"] + math.ceil(math.log2(M)) * B * c["beta_hop"]
                 if M > 1 else 0.0),
        "gather": 8.0 * (M * (2 * b + 1) + b + (M * (b + 1) ** 2 if first else 0)) * c["beta_task"],
        "solve": c["solve"][b] + (c["factor"][b] if first else 0.0),
    }
    terms["block"] = terms["task"] + terms["round"] + terms["tree"] + terms["gather"] + terms["solve"]
    terms["block_copies"] = terms["block"] - terms["tree"] + terms["send"]
    n = r * M
    terms["blocks"] = math.ceil(n / b)
    terms["sweep"] = terms["blocks"] * terms["block"] + terms["round"]  # + the global step's round
    terms["sweep_copies"] = terms["blocks"] * terms["block_copies"] + terms["round"]
    terms["kernel_block"] = kernel + terms["tree"]  # Tu et al.'s Figure 5 quantity, with a broadcast tree
    terms["kernel_block_copies"] = kernel + terms["send"]  # ... with a copy of X_I in each chunk's task
    return terms


def main(argv=None):
    import dask
    import distributed
    import matplotlib

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, nargs="+", default=[4096, 8192, 16384],
                        help="rows of a chunk for the kernel-block timings")
    parser.add_argument("--rows-per-worker", type=int, default=TU_ROWS_PER_MACHINE)
    parser.add_argument("--block-sizes", type=int, nargs="+", default=None,
                        help="default: the solver's default block size and 2048")
    parser.add_argument("--wide", type=int, default=4096, help="the second d (CIFAR-10's), timed at the default b")
    parser.add_argument("--fit-rows-per-worker", type=int, default=16384)
    parser.add_argument("--fit-maxit", type=int, default=1,
                        help="maxit of the checking fit (it takes one sweep more: the pass past maxit is taken)")
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--out", default=str(OUTPUT / "dask_bcd_scaling.md"))
    args = parser.parse_args(argv)

    from kerndwd.engine.majorisers.blocks import DEFAULT_BLOCK_SIZE

    b0 = DEFAULT_BLOCK_SIZE
    bs = args.block_sizes or [b0, 2048]
    d = 440
    R = args.rows_per_worker
    sigma = 1.0 / (2.0 * d)  # exp(-1) at the typical squared distance 2 d of standard normal rows
    rep = Report("bench_dask_bcd_scaling",
                 "Exact-kernel BCD on Dask under weak scaling: measured per-block costs and a model", argv)
    rep.add(f"Libraries: dask {dask.__version__}, distributed {distributed.__version__}, "
            f"matplotlib {matplotlib.__version__}; BLAS threads in the workers: OPENBLAS_NUM_THREADS="
            f"{os.environ['OPENBLAS_NUM_THREADS']}.  ", "")
    rep.add("Everything below the measured tables is a **model, not a measurement**: per-block costs measured on "
            "a `LocalCluster(n_workers=2, threads_per_worker=1, processes=True)` of this machine (two worker "
            "processes, the scheduler and the client on 2 cores), extrapolated to Tu et al.'s weak-scaling "
            f"setting ({TU_ROWS_PER_MACHINE:,} rows per worker, d = 440, up to 128 workers; TIMIT has "
            f"{TIMIT_ROWS:.3g} rows).", "")

    c = {"kernel": {}, "task": {}, "first": {}, "solve": {}, "factor": {}}
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, memory_limit="4GiB",
                                  dashboard_address=None) as cluster, distributed.Client(cluster) as client:
        workers = sorted(client.scheduler_info()["workers"])
        # (a) one chunk's block task, and forming K_cI, on the workers
        cases = [(r, b, d) for b in bs for r in args.rows if not (b > r)]
        cases += [(R, b0, args.wide)] if args.wide else []
        if R not in args.rows:
            cases += [(R, b, d) for b in bs]
        blas = None
        for case in cases:
            r, b, dd = case
            reps = args.reps if r * b * dd <= 16384 * 2048 * 440 else 1
            costs, blas = chunk_costs(client, workers, r, dd, b, reps, 1.0 / (2.0 * dd))
            for k in ("kernel", "task", "first"):
                c[k][case] = costs[k]
            print(f"chunk {case}: {costs}", flush=True)

        # (b) rounds of pinned tasks that do nothing: one worker, two, and more tasks
        states_all = [client.submit(_make_state, workers=[workers[i % 2]], allow_other_workers=False, pure=False)
                      for i in range(32)]
        distributed.wait(states_all)
        pinned_all = [[workers[i % 2]] for i in range(32)]
        counts = [1, 2, 4, 8, 16, 32]
        rounds = {k: round_seconds(client, states_all[:k], pinned_all[:k]) for k in counts}
        one_worker_two = round_seconds(client, states_all[0:4:2], pinned_all[0:4:2])  # 2 tasks, both on worker 0
        tail = [k for k in counts if k >= 8]
        slope, intercept = np.polyfit(tail, [rounds[k] for k in tail], 1)
        c["s"], c["rounds"] = max(float(slope), 0.0), rounds
        print(f"rounds: {rounds}", flush=True)

        # (c) bytes: X_I inside each task, and worker-to-worker hops
        payload_rounds = {}
        for b in bs:
            XI = np.ones((b, d))
            payload_rounds[b] = round_seconds(client, states_all[:2], pinned_all[:2], payload=XI, reps=15)
        b_big = max(bs)
        c["beta_task"] = max(payload_rounds[b_big] - rounds[2], 0.0) / (2 * 8.0 * b_big * d)
        block_round = block_round_seconds(client, states_all[:2], pinned_all[:2], b0, d)
        hops = {nb: hop_seconds(client, workers, nb) for nb in (8, 8 * b0 * d, 8 * b_big * d)}
        c["h"] = hops[8]
        c["beta_hop"] = max(hops[8 * b_big * d] - hops[8], 0.0) / (8.0 * b_big * d - 8)
        print(f"payload rounds {payload_rounds}, block round {block_round}, hops {hops}", flush=True)

        # (d) the client's solve
        for b in bs:
            c["solve"][b], c["factor"][b] = solve_seconds(b)

        # the check: a real short fit on two chunks, one per worker
        rf = args.fit_rows_per_worker
        fit = fit_sweeps(client, 2 * rf, d, rf, b0, args.fit_maxit, sigma, 0.1) if args.fit_maxit else None
        if fit is not None and (rf, b0, d) not in c["task"]:
            costs, _ = chunk_costs(client, workers, rf, d, b0, args.reps, sigma)
            for k in ("kernel", "task", "first"):
                c[k][(rf, b0, d)] = costs[k]

    # ---------------------------------------------------------------- report
    ms = lambda x: f"{x * 1e3:.1f} ms"  # noqa: E731
    rep.add("## Measured on the 2-worker LocalCluster", "",
            f"(a) One chunk's block task on a worker (both workers at once, the slower one; the fastest of "
            f"{args.reps} after a warm-up, one run for the largest cases: the flops do not change, other work on "
            f"the shared cores does), RBF kernel, BLAS threads {blas}. "
            f"`K_cI`: forming the kernel block alone (`_cross_kernel`); task: the whole later-sweep task "
            "(`_block`: apply the last move, form `K_cI`, the products); first sweep: the same with the block "
            "Gram's partial sums. `K_cI` alone is written to a new array, the task into the one its last block "
            "used, which spares the page faults of a fresh allocation: the task can take less than `K_cI` alone. "
            f"The solver's default block size is {b0} "
            "(`kerndwd.engine.majorisers.blocks.DEFAULT_BLOCK_SIZE`).", "")
    rep.table(["rows r", "block b", "d", "form K_cI", "task, later sweep", "task, first sweep",
               "K_cI Gflop/s"],
              [[f"{r:,}", b, dd, ms(c["kernel"][(r, b, dd)]), ms(c["task"][(r, b, dd)]), ms(c["first"][(r, b, dd)]),
                f"{2.0 * r * b * dd / c['kernel'][(r, b, dd)] / 1e9:.1f}"] for (r, b, dd) in sorted(c["kernel"])])
    rep.add("", "(b) A round of pinned tasks that do nothing, submitted and gathered as the fit's rounds are "
            "(median of 25):", "")
    rep.table(["tasks in the round", "workers", "seconds"],
              [[1, 1, ms(rounds[1])], [2, "1 (both tasks on one)", ms(one_worker_two)]]
              + [[k, 2, ms(rounds[k])] for k in counts[1:]])
    rep.add("", f"From 1 worker (1 task) to 2 workers (a task each) a round grows by "
            f"{ms(rounds[2] - rounds[1])} ({rounds[2] / rounds[1]:.2f}x); two tasks on one worker take "
            f"{ms(one_worker_two)}. The client and the scheduler handle each task of a round in turn, so a round "
            "over M chunks is modelled as the measured round of M tasks up to 32, and beyond as that plus "
            f"s = {ms(c['s'])} per further task (the least-squares slope over 8 to 32 tasks; intercept "
            f"{ms(intercept)}). This machine's client, scheduler and workers share 2 cores and talk over "
            "loopback: a cluster's network adds its latency to every round.", "")
    rep.add("(c) Bytes. Each chunk's block task carries its own copy of `X_I`: "
            + ", ".join(f"{8 * b * d / 1024:,.0f} KiB at b = {b}" for b in bs)
            + f", d = {d}, with the previous block's move (2b + 1 numbers) and the block's b indices; the chunk "
            f"returns 2b + 1 sums plus its rows of the residual in I (at most 3b + 1 numbers, "
            f"{8 * (3 * b0 + 1):,} bytes at b = {b0}), and on the first sweep the Gram's (b + 1)^2 partial sums "
            f"({8 * (b0 + 1) ** 2:,} bytes).", "")
    rep.table(["transfer", "measured", "per byte"],
              [[f"round of 2 tasks, each carrying X_I (b = {b})", ms(payload_rounds[b]),
                f"{max(payload_rounds[b] - rounds[2], 0) / (2 * 8 * b * d) * 2**20 * 1e3:.2f} ms per MiB"]
               for b in bs]
              + [[f"round of 2 tasks shaped like a block's (b = {b0}: the move, X_I, the indices in; the sums and "
                  "residual rows out), computing nothing", ms(block_round),
                  f"{ms(block_round - rounds[2])} over the empty round"]]
              + [["worker to worker, 8 bytes (latency h of one hop of a broadcast tree)", ms(hops[8]), ""],
                 [f"worker to worker, {8 * b0 * d / 1024:,.0f} KiB", ms(hops[8 * b0 * d]), ""],
                 [f"worker to worker, {8 * b_big * d / 1024:,.0f} KiB", ms(hops[8 * b_big * d]),
                  f"{c['beta_hop'] * 2**20 * 1e3:.2f} ms per MiB over h"]])
    rep.add("", f"The model takes beta_task = {c['beta_task'] * 2**20 * 1e3:.2f} ms per MiB (the b = {b_big} "
            "round, the larger payload: the smaller ones are within the rounds' noise) for bytes through the "
            f"client and the scheduler, and h = {ms(c['h'])}"
            + (" (a remote read took no longer than a local one here: below this loopback's resolution; a "
               "network adds its latency to each hop)" if c["h"] == 0 else "")
            + f", beta_hop = {c['beta_hop'] * 2**20 * 1e3:.2f} ms per "
            "MiB for a hop of a tree (worker to worker, the scheduler telling the receiver where the data is).",
            "")
    rep.add("(d) The client's solve of the (b + 1) system: "
            + "; ".join(f"b = {b}: {c['solve'][b] * 1e6:.0f} us by the cached factor, factorisation "
                        f"{ms(c['factor'][b])} (each lambda's first sweep)" for b in bs) + ".", "")

    if fit is not None:
        blocks = math.ceil(2 * rf / b0)
        later = fit["sweeps"][1:] or fit["sweeps"]
        measured = statistics.median(later)
        m_later = model(2, rf, b0, d, c)
        m_first = model(2, rf, b0, d, c, first=True)
        rep.add(f"## The check: a real fit on 2 workers ({2 * rf:,} rows, d = {d}, b = {b0})", "",
                f"`kerndwd.fit(X, y, [0.1], kern=rbfdot({sigma:.3g}), solver=\"bcd\", stop=\"kkt\", eps=1e-12, "
                f"maxit={args.fit_maxit})` on a Dask array of two gaussian classes in {fit['chunks']} chunks of "
                f"{rf:,} rows (held by {len(fit['holders'])} distinct workers), {blocks} blocks per sweep "
                f"({blocks + 1} rounds with the global step's). Each sweep is timed by wrapping the majoriser's "
                f"sweep function; the fit took {fit['total']:.0f} s in all ({fit['passes']} sweeps; gathering the "
                "rows to the client, the kernel check and the evaluations at the end are outside the sweeps).", "")
        rep.table(["sweep", "measured", "model", "model / measured"],
                  [[i + 1, f"{t:.2f} s", f"{(m_first if i == 0 else m_later)['sweep']:.2f} s",
                    f"{(m_first if i == 0 else m_later)['sweep'] / t:.2f}"] for i, t in enumerate(fit["sweeps"])])
        val_ratio = m_later["sweep"] / measured
        rep.add("", f"**Validation:** modelled / measured time per later sweep on 2 workers = {val_ratio:.2f} "
                f"(median of the later sweeps, {measured:.2f} s measured against {m_later['sweep']:.2f} s "
                f"modelled); per block {measured / (blocks + 1) * 1e3:.1f} ms measured against "
                f"{m_later['block'] * 1e3:.1f} ms modelled.", "")
        gap = measured / (blocks + 1) - m_later["block"]
        if fit["block_task"]:
            in_fit = dict(c, task={**c["task"], (rf, b0, d): fit["block_task"]})
            m_in = model(2, rf, b0, d, in_fit)
            rep.add(f"Inside the fit the workers' block tasks computed for {ms(fit['block_task'])} each (median, "
                    f"Dask's task stream, all sweeps) against {ms(m_later['task'])} measured alone above. With "
                    f"that task time in place of the one measured alone, the model gives {m_in['sweep']:.2f} s "
                    f"per sweep: modelled / measured = {m_in['sweep'] / measured:.2f}, which checks the "
                    "communication terms apart from the load on the cores.", "")
        if gap >= 0:
            rep.add(f"Measured less modelled, {gap * 1e3:.1f} ms per block, is what the terms leave out (with the "
                    "task as measured alone): the client's own work "
                    "per block (indexing X_I, adding the chunks' sums, keeping the step), the real task's messages "
                    "beyond the stub round's, and the processes' contention for this machine's 2 cores.", "")
        else:
            rep.add(f"The model is {-gap * 1e3:.1f} ms per block above the fit: its terms were measured under "
                    "heavier load from other work on the machine than the fit ran in.", "")
        shares = {k: m_later[k] * m_later["blocks"] / m_later["sweep"] for k in ("task", "round", "tree", "gather",
                                                                                "solve")}
        rep.add("Each term's share of the modelled later sweep on 2 workers: "
                + ", ".join(f"{k} {v:.0%}" for k, v in shares.items()) + ".", "")
        if fit["rounds"]:
            nr, tr = fit["rounds"][-1]
            rep.add(f"Bytes per round in the fit's last sweep (traffic counters, {nr} rounds): "
                    + ", ".join(f"{k} {v / nr:,.0f}" for k, v in tr.items())
                    + f"; X_I is {8 * b0 * d:,} bytes, copied worker to worker.", "")
        solve_per_sweep = fit["solve"] / max(fit["passes"], 1) if fit["solve"] else None
        if solve_per_sweep:
            rep.add(f"The whole MM loop (sweeps, momentum's evaluations, the final checks on recomputed decision "
                    f"values) took {fit['solve']:.1f} s, {solve_per_sweep:.1f} s per sweep.", "")
    else:
        val_ratio = None

    # ------------------------------------------------------------- the model
    Ms = [2 ** k for k in range(8)]
    M_timit = math.ceil(TIMIT_ROWS / R)
    Ms_all = Ms + [M_timit]
    curves = {b: [model(M, R, b, d, c) for M in Ms_all] for b in bs if (R, b, d) in c["task"]}
    wide = [model(M, R, b0, args.wide, c) for M in Ms_all] if (R, b0, args.wide) in c["task"] else None
    rep.add("## The model at Tu et al.'s setting", "",
            f"Modelled per block and per sweep at {R:,} rows per worker, d = {d} (a model, not a measurement):", "")
    header = ["workers M", "rows n"]
    for b in curves:
        header += [f"b = {b}: form K_cI (tree / copies)", f"b = {b}: per block", f"b = {b}: blocks per sweep",
                   f"b = {b}: per sweep"]
    rows = []
    for i, M in enumerate(Ms_all):
        row = [f"{M}" + (" (TIMIT)" if M == M_timit else ""), f"{R * M:,}"]
        for b, curve in curves.items():
            t = curve[i]
            row += [f"{ms(t['kernel_block'])} / {ms(t['kernel_block_copies'])}", ms(t["block"]), f"{t['blocks']:,}",
                    _duration(t["sweep"])]
        rows.append(row)
    rep.table(header, rows)
    rep.add("", "'form K_cI' is Tu et al.'s Figure 5 quantity, the time to generate a kernel block: forming "
            "K_cI on one worker's rows plus X_I reaching every worker, by a broadcast tree (as implemented: a "
            "request to the scheduler and ceil(log2 M) hops) / by a copy in each chunk's task (the alternative). "
            "'per block' and 'per sweep' are the implementation's: task + round + tree + gather + solve; a sweep "
            "adds one round for the global step.", "")
    if wide:
        rep.add(f"At d = {args.wide} (CIFAR-10's), b = {b0}: forming K_cI takes {ms(wide[0]['kernel'])} per "
                "block; with the tree " + ", ".join(f"M = {M}: {ms(t['kernel_block'])}" for M, t in
                                                   zip(Ms_all, wide) if M in (8, 128))
                + "; per sweep " + ", ".join(f"M = {M}: {_duration(t['sweep'])}" for M, t in zip(Ms_all, wide)
                                              if M in (2, 8, 32, 128)) + ".", "")
    t_b0 = curves[b0]
    rep.add("Each term per block at b = %d (ms):" % b0, "")
    rep.table(["workers M", "task (of it K_cI)", "round", "X_I copies", "X_I by a tree", "gather", "solve",
               "per block", "per sweep"],
              [[M, f"{t['task'] * 1e3:.1f} ({t['kernel'] * 1e3:.1f})", f"{t['round'] * 1e3:.1f}",
                f"{t['send'] * 1e3:.2f}", f"{t['tree'] * 1e3:.2f}", f"{t['gather'] * 1e3:.3f}",
                f"{t['solve'] * 1e3:.3f}", f"{t['block'] * 1e3:.1f}", _duration(t["sweep"])]
               for M, t in zip(Ms_all, t_b0)])
    rep.add("")

    # what bounds it
    cross = next((M for M, t in zip(Ms_all, t_b0) if t["round"] > t["task"]), None)
    last = t_b0[Ms.index(128)]
    rep.add("## What bounds it", "")
    rep.add(f"- **One worker to a few:** the kernel block. At b = {b0} a worker's task takes "
            f"{ms(t_b0[0]['task'])} ({ms(t_b0[0]['kernel'])} of it forming K_cI, "
            f"{2 * R * b0 * d / t_b0[0]['kernel'] / 1e9:.1f} Gflop/s on one core) against a round trip of "
            f"{ms(t_b0[0]['round'])}; it is constant in weak scaling.")
    rep.add("- **Many workers:** the client's round trip. Each block is one blocking round over every chunk, and "
            f"the client and the scheduler handle its M tasks in turn ({ms(c['s'])} each here), so the round "
            + (f"passes the task at M = {cross} and " if cross else "")
            + f"reaches {ms(last['round'])} at M = 128 against {ms(last['task'])} of compute: the time per block "
            f"grows {last['block'] / t_b0[0]['block']:.1f}x from 1 to 128 workers. Larger blocks amortise it "
            + (f"(b = {max(bs)}: {curves[max(bs)][Ms.index(128)]['block'] / curves[max(bs)][0]['block']:.2f}x)"
               if max(bs) in curves and max(bs) != b0 else "") + ".")
    rep.add(f"- **The broadcast of X_I:** by the tree, as implemented, it adds {ms(last['tree'])} at M = 128 "
            f"(b = {b0}); with a copy in every chunk's task it would add {ms(last['send'])}"
            + (f", and at b = {max(bs)} {ms(curves[max(bs)][Ms.index(128)]['send'])} by copies against "
               f"{ms(curves[max(bs)][Ms.index(128)]['tree'])} by a tree" if max(bs) in curves and max(bs) != b0
               else "")
            + ": the copies grow linearly in M, the tree as log2 M (Tu et al.'s O(log M)).")
    rep.add(f"- **A sweep:** n / b blocks, and n = {R:,} M, so a sweep's blocks grow linearly with M even where "
            f"a block's time is flat: at b = {b0}, {t_b0[0]['blocks']:,} blocks at M = 1 and "
            f"{last['blocks']:,} at M = 128, where a sweep is modelled at {_duration(last['sweep'])} "
            f"({_duration(t_b0[-1]['sweep'])} at TIMIT's {R * M_timit:,} rows). Weak scaling of the time per "
            "block is not weak scaling of the time per sweep: the work per sweep is n^2 d, so its time per worker "
            "grows as n.")
    rep.add(f"- **The client's memory** (not timed): no rows (they stay on the workers until a fitted path "
            f"first predicts, 8 n d bytes: {8 * R * 128 * d / 2**30:.1f} GiB at M = 128); the blocks' Grams, "
            f"K_II and factors (about 3 n b numbers: {24 * R * 128 * b0 / 2**30:.1f} GiB at b = {b0}"
            + (f", {24 * R * 128 * max(bs) / 2**30:.0f} GiB at b = {max(bs)}" if max(bs) != b0 else "") + ").")
    rep.add("", "## Beside Tu et al.'s Figure 5", "",
            f"The paper's text gives no numbers for Figure 5, only this ({TU_SOURCE}):", "", "> " + TU_QUOTE, "",
            f"Its block size is not given in the text. Ours, modelled: forming a kernel block at b = {b0}, d = {d} "
            + ", ".join(f"M = {M}: {ms(t['kernel_block'])}" for M, t in zip(Ms_all, t_b0) if M in (8, 128))
            + f" with the broadcast tree ({last['kernel_block'] / t_b0[Ms.index(8)]['kernel_block']:.2f}x from 8 "
            "to 128 workers: a slight rise, as Tu et al. describe), "
            + ", ".join(f"M = {M}: {ms(t['kernel_block_copies'])}" for M, t in zip(Ms_all, t_b0) if M in (8, 128))
            + " with a copy in each chunk's task instead. For the whole epoch the text gives one figure: the "
            "exact method \"takes the longest to complete a full epoch (around 2.5 hours)\" on TIMIT "
            "(Section 5; square loss, their cluster and block size, which the text does not state); the model "
            f"gives {_duration(t_b0[-1]['sweep'])} per sweep at b = {b0}"
            + (f" and {_duration(curves[max(bs)][-1]['sweep'])} at b = {max(bs)}" if max(bs) in curves
               and max(bs) != b0 else "")
            + f" on {M_timit} workers of this machine's cores.", "")
    rep.add("![kernel block time against workers](dask_bcd_scaling.png)")
    summary = {"val_ratio": val_ratio}
    path = rep.write(args.out)
    _plot(Ms_all, M_timit, curves, wide, b0, d, args.wide, R, path.with_suffix(".png"))
    return summary


def _duration(seconds):
    if seconds < 120:
        return f"{seconds:.1f} s"
    if seconds < 7200:
        return f"{seconds / 60:.1f} min"
    return f"{seconds / 3600:.1f} h"


def _plot(Ms, M_timit, curves, wide, b0, d, d_wide, R, png):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(12, 4.5))
    ax = axes[0]
    order = np.argsort(Ms)
    xs = np.array(Ms)[order]
    styles = iter(["C0", "C1", "C2", "C3"])
    for b, curve in curves.items():
        col = next(styles)
        ys = np.array([t["kernel_block"] for t in curve])[order]
        ax.plot(xs, ys, "-o", color=col, ms=3, label=f"d = {d}, b = {b}: K_cI + broadcast tree (as implemented)")
        ax.plot(xs, np.array([t["kernel_block_copies"] for t in curve])[order], "--", color=col,
                label=f"d = {d}, b = {b}: K_cI + a copy per chunk")
    if wide:
        col = next(styles)
        ax.plot(xs, np.array([t["kernel_block"] for t in wide])[order], "-o", color=col, ms=3,
                label=f"d = {d_wide}, b = {b0}: K_cI + broadcast tree")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel(f"workers M ({R:,} rows each)")
    ax.set_ylabel("seconds to form a kernel block")
    ax.set_title("Figure 5's quantity, modelled (Tu et al.'s text gives no numbers)", fontsize=9)
    ax.axvspan(8, 128, color="0.9", zorder=0)
    ax.text(9, ax.get_ylim()[0] * 1.3, "Tu et al.: 'slight decrease in\nperformance from 8 to 128 machines'",
            fontsize=7)
    ax.legend(fontsize=6)
    ax = axes[1]
    curve = curves[b0]
    for key, label in (("task", "worker task (forms K_cI)"), ("round", "round trip"), ("send", "X_I copies (alternative)"),
                       ("tree", "X_I by a tree (implemented)"), ("block", "per block (implemented)")):
        ys = np.array([t[key] for t in curve])[order]
        ax.plot(xs[ys > 0], ys[ys > 0], label=label)  # no tree below 2 workers
    ax2 = ax.twinx()
    for (b, curve_b), col in zip(curves.items(), ("C7", "C8", "C9")):
        ax2.plot(xs, np.array([t["sweep"] for t in curve_b])[order] / 3600, ":", color=col,
                 label=f"per sweep, b = {b} (h)")
    ax2.set_ylabel("hours per sweep (dotted)")
    ax2.set_yscale("log")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("workers M")
    ax.set_ylabel(f"seconds per block, b = {b0}")
    ax.set_title(f"terms of a block (b = {b0}) and a sweep, modelled; TIMIT: M = {M_timit}", fontsize=9)
    h1, l1 = ax.get_legend_handles_labels()
    h2, l2 = ax2.get_legend_handles_labels()
    ax.legend(h1 + h2, l1 + l2, fontsize=6, loc="upper left")
    fig.tight_layout()
    fig.savefig(png, dpi=120)
    plt.close(fig)


if __name__ == "__main__":
    main()
