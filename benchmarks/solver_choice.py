"""``solver="auto"`` against every exact-kernel solver it chooses from, on one 10-lambda path.

R's circle data (``benchmarks._shared.circle``) at n = 500, 2000, 5000 and
20 000, rbf kernel (sigma = 1), ``stop="kkt"``, ``eps = 1e-5``, lambda from
1e-1 to 1e-5; then UCI letter (16 000 training rows, ``benchmarks.letter``'s
split and its path: ``rbfdot(sigest)``, lambda from 1e-3 to 1e-7,
``eps = 1e-4``).  Each solver fits the same path, ``solver="auto"`` too, and
the script prints each time and auto / best.  The eigen solver is left out
above 5000 rows (its ``10 n^3`` decomposition: about an hour at 20 000 on
one core), BCD above 5000 when it would form its columns on every sweep.
One BLAS thread.

    OPENBLAS_NUM_THREADS=1 python -m benchmarks.solver_choice [--sizes 500,2000,5000,20000] [--no-letter]
"""

from __future__ import annotations

import argparse
import gc
import os
import sys
import time

import numpy as np

import kerndwd

from ._shared import Report, circle

LIMIT = 1.3
LAMBDAS = 10.0 ** np.linspace(-1, -5, 10)
EIGEN_MAX = 5000


def fit(X, y, solver, kern=None, lambdas=LAMBDAS, eps=1e-5):
    t0 = time.perf_counter()
    path = kerndwd.fit(X, y, lambdas, kern=kern or kerndwd.rbfdot(1.0), solver=solver, stop="kkt", eps=eps)
    return time.perf_counter() - t0, path


def cases(sizes, with_letter):
    """``(label, X, y, fit options)`` of every row of the table."""
    for n in sizes:
        X, y = circle(n, 0)
        yield f"{n} (circle)", X, y, {}
    if with_letter:
        from . import letter

        X, y = letter.letter()[:2]
        kern = kerndwd.rbfdot(kerndwd.sigest(X, random_state=0))
        yield f"{X.shape[0]} (letter)", X, y, dict(kern=kern, lambdas=letter.PATH, eps=letter.EPS)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="500,2000,5000,20000")
    parser.add_argument("--no-letter", action="store_true", help="leave out the row on UCI letter")
    args = parser.parse_args(argv)
    rep = Report("solver_choice", "solver='auto' against the exact-kernel solvers it chooses from",
                 argv=sys.argv[1:] if argv is None else argv)
    rep.add(f"10-lambda rbf paths on the circle data (sigma = 1, lambda 1e-1 to 1e-5, eps=1e-5) and on UCI letter "
            f"(sigma = sigest, lambda 1e-3 to 1e-7, eps=1e-4), stop='kkt'; OPENBLAS_NUM_THREADS="
            f"{os.environ.get('OPENBLAS_NUM_THREADS', 'unset')}. Seconds (passes: Newton iterations or sweeps).", "")
    rows, met = [], True
    sizes = [int(v) for v in args.sizes.split(",") if v]
    for label, X, y, options in cases(sizes, not args.no_letter):
        n = X.shape[0]
        times = {}
        cells = {}
        for solver in ("exact", "cg", "bcd", "auto"):
            if solver == "exact" and n > EIGEN_MAX:
                cells[solver] = "(not run)"
                continue
            t, path = fit(X, y, solver, **options)
            times[solver] = t
            cells[solver] = f"{t:.2f} ({int(path.npass.sum())})" + ("" if path.jerr == 0 else f", jerr {path.jerr}")
            if solver == "auto":
                cells[solver] += f" = {path.design}"
            del path
            gc.collect()
        best = min(t for s, t in times.items() if s != "auto")
        ratio = times["auto"] / best
        met &= ratio <= LIMIT
        rows.append([label, cells["exact"], cells["cg"], cells["bcd"], cells["auto"], f"{ratio:.2f}"])
        rep.add(f"n = {label} done")
    rep.add("")
    rep.table(["n", "exact (eigen + Newton)", "cg (Newton-CG on K)", "bcd (K cached where it fits)", "auto",
               "auto / best"], rows)
    rep.add("", f"Bound: auto / best <= {LIMIT} at every size: {'met' if met else 'NOT met'}.")
    rep.write()
    return 0 if met else 1


if __name__ == "__main__":
    raise SystemExit(main())
