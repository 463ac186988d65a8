"""What ``progress=True`` costs a fit: the same fits with and without it,
alternated in one run, and the ratio of the medians.

Cases where the report is most frequent for the work done: a linear path of
100 lambdas on 500 x 50 rows (a few microseconds a pass, every pass counted),
an rbf path on 1000 rows, BCD sweeps on 1000 rows and a Nystrom path whose
feature chunks are reported.  The bar is tqdm's (installed with the test
extra), drawn to a discarded stream so that terminal speed is not measured.

    OPENBLAS_NUM_THREADS=1 python -m benchmarks.progress_overhead [--repeat 15]
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import sys
import time

import numpy as np

import kerndwd

from ._shared import write_report

LIMIT = 1.02  #: what the issue allows: at most 2% slower with progress shown


def cases():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((1000, 10))
    y = np.where(X[:, 0] + 0.5 * rng.standard_normal(1000) > 0, 1, -1)
    Xl = rng.standard_normal((500, 50))
    yl = np.where(Xl[:, :3].sum(1) + rng.standard_normal(500) > 0, 1, -1)
    lam100 = 10.0 ** np.linspace(0, -4, 100)
    lam10 = 10.0 ** np.linspace(0, -3, 10)
    rbf = kerndwd.rbfdot(0.1)
    return [
        ("linear path, 500 x 50, 100 lambdas", lambda p: kerndwd.fit(Xl, yl, lam100, kern=kerndwd.vanilladot(),
                                                                    progress=p)),
        ("rbf path, n = 1000, 10 lambdas", lambda p: kerndwd.fit(X, y, lam10, kern=rbf, progress=p)),
        ("BCD, n = 1000, 3 lambdas, kkt 1e-4", lambda p: kerndwd.fit(X, y, lam10[:3], kern=rbf, solver="bcd",
                                                                     eps=1e-4, random_state=0, progress=p)),
        ("Nystrom m = 200, n = 1000, chunks of 100, 10 lambdas",
         lambda p: kerndwd.fit(X, y, lam10, kern=rbf, approx="nystroem", n_components=200, chunk_size=100,
                               random_state=0, progress=p)),
    ]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=15, help="alternated pairs of fits per case")
    args = parser.parse_args(argv)
    t_start = time.perf_counter()
    load = os.getloadavg()
    rows, met = [], True
    sink = io.StringIO()
    for name, fit in cases():
        fit(False)
        with contextlib.redirect_stderr(sink):
            fit(True)
        off, on = [], []
        for _ in range(args.repeat):  # alternated, so drifts of the machine touch both alike
            t0 = time.perf_counter()
            fit(False)
            off.append(time.perf_counter() - t0)
            with contextlib.redirect_stderr(sink):
                t0 = time.perf_counter()
                fit(True)
                on.append(time.perf_counter() - t0)
            sink.seek(0)
            sink.truncate()
        ratio = float(np.median(on) / np.median(off))
        met &= ratio <= LIMIT
        rows.append(f"| {name} | {1e3 * np.median(off):.2f} | {1e3 * np.median(on):.2f} | {ratio:.3f} |")
    try:
        import tqdm
        shown = f"tqdm {tqdm.__version__} bar"
    except ImportError:
        shown = "plain lines (tqdm not installed)"
    body = [f"Medians of {args.repeat} alternated pairs; progress shown as a {shown} to a discarded stream. "
            f"Load average at the start: {load[0]:.2f}, {load[1]:.2f}, {load[2]:.2f}; at the end: "
            + ", ".join(f"{v:.2f}" for v in os.getloadavg()) + ".", "",
            "| case | ms, progress=False | ms, progress=True | ratio |", "|---|---|---|---|", *rows, "",
            f"Bound: ratio <= {LIMIT} in every case: {'met' if met else 'NOT met'}."]
    threads = f"OPENBLAS_NUM_THREADS={os.environ.get('OPENBLAS_NUM_THREADS', 'unset')}"
    return write_report("progress_overhead", "What progress=True costs a fit", body, met, sys.argv[1:] if argv is None
                        else argv, time.perf_counter() - t_start, threads=threads)


if __name__ == "__main__":
    raise SystemExit(main())
