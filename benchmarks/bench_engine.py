"""Where the time of one linear DWD fit goes, and how it compares with the
cone-programming baseline measured in the same run.

``python benchmarks/bench_engine.py [--reps 20]``

Prints, for Table 1's example 1 (n = 500, p = 50, q = 1) and each lambda:
the median seconds of ``kerndwd.fit`` (one lambda), of its parts (input
checks, the majoriser's eigendecomposition, the MM passes, the per-column
objective and gradient), the cost of one MM pass, and the ratio of the
fastest installed cvxpy SOCP solver's time to ours.  Ratios, not absolute
times, are the point: both sides run on the same machine in the same run.
This is a timing script, not a test.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import kerndwd  # noqa: E402
from kerndwd import _mm, datasets  # noqa: E402
from kerndwd._checks import check_matrix, encode_labels  # noqa: E402
from kerndwd.path import build_majorizer  # noqa: E402

LAMBDAS = (0.01, 0.1, 1.0, 10.0, 100.0)


def _median_time(fn, reps):
    out = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t0)
    return float(np.median(out))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args(argv)
    X, y = datasets.make_table1_example(1, random_state=args.seed)
    vanilla = kerndwd.vanilladot()
    try:
        from reference import cone

        solvers = cone.available_solvers()
    except ImportError:
        cone, solvers = None, []
    print(f"example 1, n={X.shape[0]}, p={X.shape[1]}, q=1; medians of {args.reps} calls; seconds")
    head = (f"{'lambda':>7} {'fit':>9} {'checks':>9} {'eigh':>9} {'passes':>9} {'post':>9} "
            f"{'npass':>6} {'s/pass':>9} {'best SOCP':>10} {'ratio':>7}")
    print(head)
    for lam in LAMBDAS:
        t_fit = _median_time(lambda: kerndwd.fit(X, y, [lam], kern=vanilla, qval=1), args.reps)
        t_chk = _median_time(lambda: (check_matrix(X), encode_labels(y, X.shape[0])), args.reps)
        Xc = check_matrix(X)
        y_pm, _ = encode_labels(y, X.shape[0])
        t_eig = _median_time(lambda: build_majorizer(Xc, vanilla, 1.0), args.reps)
        maj = build_majorizer(Xc, vanilla, 1.0)
        lam_arr = np.array([lam])
        res = _mm.mm_path(maj, y_pm, None, 1.0, lam_arr, 1e-5, 100000)
        t_path = _median_time(lambda: _mm.mm_path(maj, y_pm, None, 1.0, lam_arr, 1e-5, 100000), args.reps)
        alpha = res.alpha[:, 0]
        t_post = _median_time(lambda: (_mm.objective(maj.design, alpha, y_pm, None, 1.0, lam),
                                       _mm.gradient(maj.design, alpha, y_pm, None, 1.0, lam)), args.reps)
        npass = int(res.npass[0])
        best = None
        if solvers:
            C = cone.remark4_c(float(np.linalg.norm(alpha[1:])), 1.0)
            times = []
            for s in solvers:
                opts = {"eps_abs": 1e-7, "eps_rel": 1e-7} if s == "SCS" else None
                times.append(min(cone.solve_socp(X, y, C, solver=s, solver_opts=opts)["seconds"]
                                 for _ in range(3)))
            best = min(times)
        per_pass = (t_path - t_post) / max(npass, 1)
        print(f"{lam:>7g} {t_fit:9.5f} {t_chk:9.5f} {t_eig:9.5f} {t_path - t_post:9.5f} {t_post:9.5f} "
              f"{npass:6d} {per_pass:9.2e} {best if best is not None else float('nan'):10.4f} "
              f"{(best / t_fit) if best else float('nan'):7.1f}")
    print("passes = mm_path minus the objective/gradient it computes per finished column (post);")
    print("ratio = fastest SOCP solve (best of 3, per installed solver) / median kerndwd.fit.")


if __name__ == "__main__":
    main()
