"""Kernel approximations by blocks of features on a Dask cluster, against the same fit in memory.

``python -m benchmarks.dask_feature_blocks [--n 100000] [--m 2000] [--block-size 256] [--lambdas 1e-3 1e-4]
[--eps 1e-3] [--memory-limit 4GiB] [--out benchmarks/output/dask_feature_blocks.md]``

Data: the checkerboard of ``benchmarks.features_matter`` (4^3 cells in
``[0, 1)^3``, 10% of the labels flipped), ``rbfdot(sigma = 25)`` (the
sigma that benchmark chose on its validation rows), ``n`` training rows in
two row chunks, one per worker of a 2-worker ``LocalCluster`` (one thread
each, the given memory limit).  For each approximation (random features,
Nystrom) ``kerndwd.fit(X, y, lambdas, approx=..., solver="bcd",
n_components=m, block_size=b, stop="kkt", eps=eps, random_state=0)`` runs
twice in this process: on the rows in memory (the baseline, one BLAS
thread) and on the Dask rows, whose sweeps run beside the chunks.

Reported: both wall times and their ratio, the sweeps of each lambda (the
same for both: the same moves in the same order), the largest difference of
the decision values at 5000 held-out rows relative to their largest value,
the test error of both, and the bytes the workers sent out (to each other
and to the client) during the Dask fit, per chunk: in the sweeps' rounds
less the first sweep's partial sums of the blocks' Gram matrices (per
sweep), those Grams (``8 (b + 1)^2`` bytes per block, once per fit), and
the rest, at the end of each lambda (the objective and the certificate;
per lambda), beside ``8 n / chunks``, the bytes of one per-row vector of a
chunk; and the workers' peak resident memory.  The rounds' bytes come from
a third fit, not timed, whose rounds are each wrapped in a reading of the
cluster's counters.  A timing script, not a test: nothing here asserts a
time.
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # before numpy; the workers inherit it

import argparse  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402

from ._shared import Report, peak_rss, traffic, traffic_delta  # noqa: E402
from .features_matter import checkerboard  # noqa: E402

SIGMA = 25.0
TEST_ROWS = 5000


def _sent_in_rounds(client, fit):
    """Bytes the workers sent during the rounds of the sweeps of ``fit()``: each
    round of the Dask sweeps wrapped in a reading of the cluster's counters."""
    from kerndwd.engine.designs.dask_feature_bcd import DaskFeatureBlockCoordinate

    total, original = [0], DaskFeatureBlockCoordinate._round

    def counted(self, fn, args_of):
        before = traffic(client)
        out = original(self, fn, args_of)
        total[0] += traffic_delta(before, traffic(client))["data_sent_by_workers"]
        return out

    DaskFeatureBlockCoordinate._round = counted
    try:
        fit()
    finally:
        DaskFeatureBlockCoordinate._round = original
    return total[0]


def main(argv=None):
    import dask.array as da
    import distributed

    import kerndwd

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=100_000)
    parser.add_argument("--m", type=int, default=2000)
    parser.add_argument("--block-size", type=int, default=256)
    parser.add_argument("--lambdas", type=float, nargs="+", default=[1e-3, 1e-4])
    parser.add_argument("--eps", type=float, default=1e-3)
    parser.add_argument("--memory-limit", default="4GiB")
    parser.add_argument("--out", default=None)
    args = parser.parse_args(argv)

    rep = Report("dask_feature_blocks", "Kernel approximations by blocks of features: a 2-worker Dask cluster "
                 "against memory", argv)
    n, chunks = args.n, 2
    X, y, _ = checkerboard(n, 1)
    Xt, yt, _ = checkerboard(TEST_ROWS, 2)
    rep.add(f"Checkerboard, 4^3 cells, 10% label noise; n = {n:,} training rows in {chunks} chunks, "
            f"{TEST_ROWS} test rows; rbfdot(sigma = {SIGMA:g}), m = {args.m}, block_size = {args.block_size}, "
            f"lambdas {args.lambdas}, stop='kkt', eps = {args.eps:g}; a LocalCluster of 2 workers, one thread "
            f"and {args.memory_limit} each; OPENBLAS_NUM_THREADS=1.", "")
    kw = dict(kern=kerndwd.rbfdot(SIGMA), solver="bcd", n_components=args.m, block_size=args.block_size,
              stop="kkt", eps=args.eps, random_state=0)
    rows, ok = [], True
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  memory_limit=args.memory_limit, dashboard_address=None) as cluster, \
            distributed.Client(cluster) as client:
        Xd = client.persist(da.from_array(X, chunks=((n + 1) // 2, X.shape[1])))
        distributed.wait(Xd)
        for approx in ("rff", "nystroem"):
            t0 = time.perf_counter()
            path = kerndwd.fit(X, y, args.lambdas, approx=approx, **kw)
            memory_s = time.perf_counter() - t0
            before = traffic(client)
            t0 = time.perf_counter()
            on_dask = kerndwd.fit(Xd, y, args.lambdas, approx=approx, **kw)
            dask_s = time.perf_counter() - t0
            sent = traffic_delta(before, traffic(client))["data_sent_by_workers"]
            in_rounds = _sent_in_rounds(client, lambda: kerndwd.fit(Xd, y, args.lambdas, approx=approx, **kw))
            f, g = path.predict(Xt, type="link"), on_dask.predict(Xt, type="link")
            gap = float(np.abs(g - f).max() / np.abs(f).max())
            errors = [float((np.where(v[:, -1] > 0, 1, -1) != yt).mean()) for v in (f, g)]
            sweeps = int(np.sum(on_dask.npass))
            same = bool(np.array_equal(path.npass, on_dask.npass)) and path.jerr == on_dask.jerr == 0
            ok = ok and same and gap <= 1e-8
            blocks = -(-args.m // args.block_size)
            grams = 8.0 * blocks * (args.block_size + 1) ** 2  # bytes per chunk, first sweep only
            rows.append([approx, f"{memory_s:.1f}", f"{dask_s:.1f}", f"{dask_s / memory_s:.2f}x",
                         " + ".join(str(int(s)) for s in path.npass),
                         " + ".join(str(int(s)) for s in on_dask.npass), f"{gap:.1e}",
                         f"{errors[0]:.4f} / {errors[1]:.4f}",
                         f"{(in_rounds - chunks * grams) / (sweeps * chunks) / 1e3:.1f}", f"{grams / 1e3:.0f}",
                         f"{(sent - in_rounds) / (len(args.lambdas) * chunks) / 1e3:.0f}"])
        peaks = peak_rss(client)
    rep.table(["approx", "memory, s", "Dask, s", "Dask / memory", "sweeps (memory)", "sweeps (Dask)",
               "largest |f_dask - f| / max |f|", "test error (memory / Dask)",
               "sent in the sweeps less the Grams, kB per sweep and chunk", "the Grams, kB per chunk (once)",
               "sent at a lambda's end, kB per lambda and chunk"], rows)
    rep.add("", f"One per-row vector of a chunk: {8 * n / chunks / 1e3:.0f} kB. Workers' peak resident memory: "
            + ", ".join(f"{v / 2**30:.2f} GiB" for v in peaks.values()) + f", against {args.memory_limit} each.")
    rep.add("", f"The same sweeps and decision values within 1e-8 of the fit in memory: {'yes' if ok else 'no'}.")
    rep.write(args.out)
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
