"""The exact kernel by block coordinate descent on a Dask cluster, certified,
at a size whose kernel matrix no machine here holds.

``python -m benchmarks.dask_bcd_large [--n 200000] [--lambdas 0.1 0.03] [--eps 1e-4] [--block-size 64]
[--memory-limit 4GiB] [--out benchmarks/output/dask_bcd_large.md]``

Data: the circle data of R's timing cases (``x`` standard normal in 2-D,
``y = +1`` where ``|x|^2 + 0.4 N(0, 1) > 1.4``, else -1), ``rbfdot(sigma =
1)``, ``q = 1``, generated in this process and split into two row chunks,
one per worker of a 2-worker ``LocalCluster`` (one thread each, the given
memory limit per worker).  ``kerndwd.fit(X, y, lambdas, solver="bcd",
stop="kkt", eps=eps)`` runs on the Dask rows: the rows stay on the workers,
each block's rows are broadcast to them, and every returned column is
certified by ``||grad F|| <= eps`` on decision values recomputed from its
coefficients.  The kernel matrix would take ``8 n^2`` bytes (320 GB at
``n = 2 10^5``); no process forms it.

Reported: the wall time of the fit, the sweeps and the gradient norm of
each column, and the workers' peak memory (sampled every two seconds from
the scheduler) beside their limit.  A timing script, not a test: nothing here asserts a time.
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # before numpy; the workers inherit it

import argparse  # noqa: E402
import threading  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402

from ._shared import Report, circle  # noqa: E402


def _peak_memory(client, stop, peaks, every=2.0):
    """Keep in ``peaks`` the largest memory each worker reported, until ``stop`` is set."""
    while not stop.wait(every):
        try:
            workers = client.scheduler_info()["workers"]
        except Exception:  # the cluster is closing
            return
        for address, info in workers.items():
            peaks[address] = max(peaks.get(address, 0), int(info.get("metrics", {}).get("memory", 0)))


def main(argv=None):
    import dask.array as da
    import distributed

    import kerndwd

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=200_000)
    parser.add_argument("--lambdas", type=float, nargs="+", default=[0.1, 0.03])
    parser.add_argument("--eps", type=float, default=1e-4)
    parser.add_argument("--block-size", type=int, default=64)
    parser.add_argument("--memory-limit", default="4GiB")
    parser.add_argument("--out", default=None)
    args = parser.parse_args(argv)

    rep = Report("dask_bcd_large", "The exact kernel by BCD on a 2-worker Dask cluster, certified", argv)
    n = args.n
    rep.add(f"Circle data, n = {n:,} rows in 2 chunks, rbfdot(sigma = 1), lambdas {args.lambdas}, "
            f"stop='kkt', eps = {args.eps:g}, block_size = {args.block_size}; a LocalCluster of 2 workers, one "
            f"thread and {args.memory_limit} each; OPENBLAS_NUM_THREADS=1. The kernel matrix would take "
            f"{8 * n * n / 1e9:,.0f} GB.", "")
    X, y = circle(n, 2024)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  memory_limit=args.memory_limit, dashboard_address=None) as cluster, \
            distributed.Client(cluster) as client:
        Xd = client.persist(da.from_array(X, chunks=((n + 1) // 2, 2)))
        distributed.wait(Xd)
        peaks, stop = {}, threading.Event()
        sampler = threading.Thread(target=_peak_memory, args=(client, stop, peaks), daemon=True)
        sampler.start()
        t0 = time.perf_counter()
        path = kerndwd.fit(Xd, y, args.lambdas, kern=kerndwd.rbfdot(1.0), solver="bcd", stop="kkt",
                           eps=args.eps, block_size=args.block_size)
        elapsed = time.perf_counter() - t0
        stop.set()
        sampler.join()
    rep.add(f"Fit: {elapsed:.0f} s ({elapsed / 60:.1f} min), jerr = {path.jerr}.", "")
    rep.table(["lambda", "sweeps", "gradient norm (kkt)", "certified (<= eps)"],
              [[f"{lam:g}", int(npass), f"{kkt:.2e}", "yes" if kkt <= args.eps else "no"]
               for lam, npass, kkt in zip(path.lambda_, path.npass, path.kkt)])
    if peaks:
        rep.add("", "Workers' peak memory (sampled every 2 s): "
                + ", ".join(f"{v / 2**30:.2f} GiB" for v in peaks.values())
                + f", against a limit of {args.memory_limit} each.")
    certified = path.jerr == 0 and bool((path.kkt <= args.eps).all())
    rep.add("", f"Every column certified to kkt <= {args.eps:g}: {'yes' if certified else 'no'}.")
    rep.write(args.out)
    return 0 if certified else 1


if __name__ == "__main__":
    raise SystemExit(main())
