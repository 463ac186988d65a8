"""BLAS threads: the engine's choice (kerndwd/engine/threads.py) against every
fixed thread count, at 100 to 20 000 rows, linear and rbf, on an idle machine
and beside a competing load (a second process running the same fits).

For each case and load the script times the fit with the engine's choice
("default") and inside ``kerndwd.threads(k)`` for k = 1 .. cores, alternating
the settings, and reports each median and default / best.  The bound it
checks: default / best <= 1.2 everywhere.  The rbf cases use the exact kernel
up to 3000 rows (its n x n eigendecomposition) and Nystrom features
(m = 1000) beyond, as a user at that size would.

    python -m benchmarks.threads [--repeat 3] [--quick]

(no OPENBLAS_NUM_THREADS: threads are what it measures).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time

import numpy as np

import kerndwd

from ._shared import write_report

LIMIT = 1.2


def _data(n, p, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, p))
    y = np.where(X[:, 0] + X[:, 1] ** 2 - 1 + 0.5 * rng.standard_normal(n) > 0, 1, -1)
    return X, y


def cases(quick=False):
    """(name, call) pairs; each call fits once."""
    out = []
    lam = 10.0 ** np.linspace(0, -3, 10)
    for n in (100, 1000, 5000, 20000) if not quick else (100, 1000):
        X, y = _data(n, 30)
        out.append((f"linear, n = {n}, p = 30, 10 lambdas",
                    lambda X=X, y=y: kerndwd.fit(X, y, lam, kern=kerndwd.vanilladot())))
    for n in (100, 333, 1000, 3000) if not quick else (100, 333):
        X, y = _data(n, 10)
        out.append((f"rbf exact, n = {n}, p = 10, 5 lambdas",
                    lambda X=X, y=y: kerndwd.fit(X, y, lam[:5], kern=kerndwd.rbfdot(0.05))))
    for n in (5000, 20000) if not quick else ():
        X, y = _data(n, 10)
        out.append((f"rbf Nystrom m = 1000, n = {n}, p = 10, 10 lambdas",
                    lambda X=X, y=y: kerndwd.fit(X, y, lam, kern=kerndwd.rbfdot(0.05), approx="nystroem",
                                                 n_components=1000, random_state=0, stop="kkt", eps=1e-3)))
    return out


def _load(quick):
    """The competing load: the same fits, with the engine's choice, until killed."""
    calls = [call for _, call in cases(quick)]
    while True:
        for call in calls:
            call()


def measure(call, settings, repeat, min_seconds=1.5, max_repeat=300):
    """Medians per setting of alternated runs: at least ``repeat`` each, and
    for fast cases as many as make ``min_seconds`` per setting (a single run
    of a few milliseconds is mostly scheduling noise on a shared machine)."""
    t0 = time.perf_counter()
    call()
    single = time.perf_counter() - t0
    count = int(min(max_repeat, max(repeat, np.ceil(min_seconds / max(single, 1e-6)))))
    times = {s: [] for s in settings}
    settings = list(settings)
    for k in range(count):
        # alternated, so a drift of the machine touches every setting alike, and rotated, so
        # that each setting follows each other one equally often: BLAS threads left spinning by
        # a multi-threaded run slow whatever runs next beside a competing job
        for s in settings[k % len(settings):] + settings[:k % len(settings)]:
            if s == "default":
                t0 = time.perf_counter()
                call()
            else:
                with kerndwd.threads(s):
                    t0 = time.perf_counter()
                    call()
            times[s].append(time.perf_counter() - t0)
    return {s: float(np.median(v)) for s, v in times.items()}, count


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="the small cases only")
    parser.add_argument("--load", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    import warnings
    warnings.simplefilter("ignore")  # R's rule warns of columns far from the optimum; timing only
    if args.load:
        _load(args.quick)
        return 0
    if "OPENBLAS_NUM_THREADS" in os.environ or "OMP_NUM_THREADS" in os.environ:
        print("unset OPENBLAS_NUM_THREADS and OMP_NUM_THREADS: threads are what this measures", file=sys.stderr)
        return 2
    t_start = time.perf_counter()
    cores = len(os.sched_getaffinity(0))
    settings = ["default"] + list(range(1, cores + 1))
    all_cases = cases(args.quick)
    for _, call in all_cases:  # warm up (imports, first-call costs)
        call()
    body, met = [], True
    for load in ("none", "competing"):
        proc = None
        if load == "competing":
            proc = subprocess.Popen([sys.executable, "-m", "benchmarks.threads", "--load"]
                                    + (["--quick"] if args.quick else []),
                                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            time.sleep(5.0)
        try:
            la0 = os.getloadavg()
            rows = []
            for name, call in all_cases:
                med, count = measure(call, settings, args.repeat)
                best = min(med[s] for s in settings[1:])
                ratio = med["default"] / best
                met &= ratio <= LIMIT
                rows.append(f"| {name} | {count} | " + " | ".join(f"{1e3 * med[s]:.1f}" for s in settings)
                            + f" | {ratio:.2f} |")
            la1 = os.getloadavg()
        finally:
            if proc is not None:
                proc.kill()
                proc.wait()
        body += [f"## Load: {load}", "",
                 f"Load average at the start: {la0[0]:.2f}; at the end: {la1[0]:.2f}. Medians of alternated runs "
                 f"(runs: at least {args.repeat}, and 1.5 s of each setting for fast cases), in ms.", "",
                 "| case | runs | default | " + " | ".join(f"{k} thread{'s' if k > 1 else ''}" for k in settings[1:])
                 + " | default / best |",
                 "|---|---|" + "---|" * (len(settings) + 1), *rows, ""]
    body.append(f"Bound: default / best <= {LIMIT} in every case and load: {'met' if met else 'NOT met'}.")
    return write_report("threads", "BLAS threads: the engine's choice against fixed counts", body, met,
                        sys.argv[1:] if argv is None else argv, time.perf_counter() - t_start,
                        threads=f"{cores} cores, BLAS threads set per case")


if __name__ == "__main__":
    raise SystemExit(main())
