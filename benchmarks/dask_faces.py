"""DWDClassifier on Dask rows against kerndwd.fit with the same settings, on
a 2-worker LocalCluster of this machine: the same rows, lambda, loss, stopping
rule and tolerance; alternated fits, medians and their ratio (the estimator
also finds the classes of y, which fit is handed as +-1).

    python -m benchmarks.dask_faces [--rows 1000000] [--repeat 3]
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

from ._shared import write_report

LIMIT = 1.2


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--cols", type=int, default=20)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args(argv)
    import dask.array as da
    from dask.distributed import Client, LocalCluster

    import kerndwd

    t_start = time.perf_counter()
    settings = dict(lam=0.01, stop="kkt", eps=1e-10)
    with LocalCluster(n_workers=2, threads_per_worker=1, memory_limit="4GiB", processes=True,
                      dashboard_address=None) as cluster, Client(cluster):
        rng = da.random.default_rng(0)
        chunk = max(args.rows // 8, 1)
        y = da.where(rng.random(args.rows, chunks=chunk) < 0.5, 1.0, -1.0).persist()
        X = (rng.standard_normal((args.rows, args.cols), chunks=(chunk, args.cols)) + 0.3 * y[:, None]).persist()

        def fit():
            return kerndwd.fit(X, y, [settings["lam"]], kern=kerndwd.vanilladot(), stop=settings["stop"],
                               eps=settings["eps"])

        def estimator():
            return kerndwd.DWDClassifier(lambd=settings["lam"], kernel="linear", stop=settings["stop"],
                                         tol=settings["eps"]).fit(X, y)

        path, clf = fit(), estimator()  # warm: the workers import, the graphs are built once
        agree = float(np.abs(clf.coef_.ravel() - path.coef[:, 0]).max())
        times = {"fit": [], "DWDClassifier": []}
        for _ in range(args.repeat):
            for name, call in (("fit", fit), ("DWDClassifier", estimator)):
                t0 = time.perf_counter()
                call()
                times[name].append(time.perf_counter() - t0)
        load = os.getloadavg()
    med = {k: float(np.median(v)) for k, v in times.items()}
    ratio = med["DWDClassifier"] / med["fit"]
    met = ratio <= LIMIT
    body = [f"{args.rows} x {args.cols} rows in 8 chunks on a LocalCluster of 2 worker processes (1 thread each); "
            f"lambda = {settings['lam']}, stop = {settings['stop']!r}, eps = tol = {settings['eps']:g}; medians of "
            f"{args.repeat} alternated fits after one warm-up each; load average at the end: {load[0]:.2f}.", "",
            "| face | seconds | passes |", "|---|---|---|",
            f"| `kerndwd.fit` | {med['fit']:.2f} | {int(path.npass.sum())} |",
            f"| `DWDClassifier.fit` | {med['DWDClassifier']:.2f} | {int(np.sum(clf.n_iter_))} |", "",
            f"Ratio DWDClassifier / fit: {ratio:.3f} (bound {LIMIT}: {'met' if met else 'NOT met'}); largest "
            f"coefficient difference between the two: {agree:.1e}."]
    return write_report("dask_faces", "DWDClassifier on Dask rows against kerndwd.fit", body, met,
                        sys.argv[1:] if argv is None else argv, time.perf_counter() - t_start)


if __name__ == "__main__":
    raise SystemExit(main())
