"""The memory of kernel approximations by blocks of features at m = 5 10^4, n = 10^5.

``python -m benchmarks.feature_blocks_memory [--n 100000] [--m 50000] [--sweeps 20]``

Each case runs in a fresh process (:func:`benchmarks._shared.run_case`), so
its peak resident memory (``ru_maxrss``) is its own: random features and
Nystrom landmarks, ``solver="bcd"`` with blocks of 256 features,
``dtype="float32"``, ``rbfdot(0.5)`` on ``n`` rows of 4 uniform features,
one lambda (1), ``stop="kkt"``, ``eps=1e-3``, at most ``--sweeps``
sweeps (the memory does not grow with the sweeps: every sweep forms its
blocks again into the same buffers; a lambda whose sweeps run out is not
returned, so the lambda is one that converges in a few). Beside each, what the in-memory
design (``solver="auto"`` below 2048 features, the ``(m + 1)`` system)
would hold: the ``n x m`` features and the ``m x m`` system in float64.

The ``n x m`` features (20 GB in float32) exceed the memory budget here, so
the blocks are formed again at every sweep; the time is reported, not
compared.
"""

from __future__ import annotations

import argparse
import json
import sys
import time

import numpy as np

from . import _shared

NAME = "feature_blocks_memory"
MODULE = f"benchmarks.{NAME}"
LIMIT_GIB = 6.0


def worker(spec):
    import kerndwd

    rng = np.random.default_rng(0)
    X = rng.uniform(size=(spec["n"], 4))
    y = np.where(np.sin(6.0 * X[:, 0]) + X[:, 1] > 0.8, 1, -1)
    t0 = time.perf_counter()
    path = kerndwd.fit(X, y, [1.0], kern=kerndwd.rbfdot(0.5), approx=spec["approx"], solver="bcd",
                       n_components=spec["m"], block_size=256, dtype="float32", stop="kkt", eps=1e-3,
                       maxit=spec["sweeps"], random_state=0)
    _shared.write_result(spec, {**spec, "fit_s": time.perf_counter() - t0, "sweeps": int(path.npass[0]),
                                "kkt": float(path.kkt[0]), "design": path.design})


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=100_000)
    parser.add_argument("--m", type=int, default=50_000)
    parser.add_argument("--sweeps", type=int, default=20)
    parser.add_argument("--timeout", type=float, default=3600.0)
    parser.add_argument("--worker", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        worker(json.loads(args.worker))
        return 0
    rep = _shared.Report(NAME, f"Kernel approximations by blocks of features: memory at m = {args.m}, n = {args.n}",
                         argv=sys.argv[1:] if argv is None else argv)
    rows, met = [], True
    in_memory = 8.0 * args.n * args.m + 8.0 * args.m ** 2
    for approx in ("rff", "nystroem"):
        r = _shared.run_case(MODULE, dict(approx=approx, n=args.n, m=args.m, sweeps=args.sweeps), args.timeout)
        if "error" in r:
            rows.append([approx, "—", "—", "—", r["error"], "—", "—"])
            met = False
            continue
        met &= r["peak_rss_gib"] <= LIMIT_GIB
        rows.append([approx, r["sweeps"], f"{r['kkt']:.1e}", f"{r['fit_s']:.0f}", f"{r['peak_rss_gib']:.2f}",
                     f"{in_memory / 2**30:.0f}", f"{in_memory / 2**30 / r['peak_rss_gib']:.0f}x"])
    rep.table(["approximation", "sweeps", "kkt", "fit s", "peak resident GiB (whole process)",
               "in-memory design's features and system, GiB", "ratio"], rows)
    rep.add("", f"Every case within {LIMIT_GIB:g} GiB: {'yes' if met else 'no'}.")
    rep.write()
    return 0 if met else 1


if __name__ == "__main__":
    raise SystemExit(main())
