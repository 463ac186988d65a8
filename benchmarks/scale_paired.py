"""Nystrom DWD against scikit-learn's Nystroem + LinearSVC on the same
landmarks, over several independent training draws.

``python -m benchmarks.scale_paired [--n 1e4] [--m 1000] [--draws 5] [--dwd-on-features] [--out DIR]``

One training draw decides the accuracy comparison of ``scale_approx`` on a
difference of a few test rows in 10^5.  This script repeats that comparison
on ``--draws`` independent training sets of the Figure 1 mixture (training
seeds 101, 102, ...; the first is ``scale_approx``'s draw), with the same
10^5 validation and 10^5 test rows, the same kernel, lambdas, tolerance and
validation rule as ``scale_approx`` (each case in its own process, through
the same worker).  It reports, per draw, both test errors and their paired
difference, then the mean difference over draws with its standard error
across draws.  With ``--dwd-on-features`` it also fits DWD (the linear
kernel, the same lambdas and rule) on scikit-learn's own Nystroem features,
which tells a difference of features from a difference of losses.
"""

from __future__ import annotations

import argparse
import json
import sys
import time

import numpy as np

from . import _shared
from . import scale_approx as sa

MODULE = "benchmarks.scale_approx"


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m benchmarks.scale_paired", description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=float, default=1e4)
    parser.add_argument("--m", type=int, default=sa.ACCEPT_M)
    parser.add_argument("--draws", type=int, default=5)
    parser.add_argument("--timeout", type=float, default=3600, help="seconds per case")
    parser.add_argument("--dwd-on-features", action="store_true",
                        help="also fit linear DWD on scikit-learn's Nystroem features")
    parser.add_argument("--name", default="scale_paired", help="output file name (without .md)")
    parser.add_argument("--out", default=None)
    args = parser.parse_args(argv)

    import kerndwd

    out_dir = _shared.OUTPUT if args.out is None else __import__("pathlib").Path(args.out)
    out_dir.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    n, m = int(args.n), args.m
    Xt, yt = _shared.held_out_rows(sa.N_HELD_OUT, _shared.TEST_SEED)
    sigma = kerndwd.sigest(_shared.training_rows(10_000)[0], random_state=0)
    rows = []
    for k in range(args.draws):
        seed = _shared.TRAIN_SEED + k
        pair = {}
        for kind in ("dwd", "sklearn"):
            spec = dict(kind=kind, approx="nystroem", n=n, m=m, dtype="float64", sigma=sigma, eps=sa.EPS,
                        train_seed=seed, dwd_on_features=args.dwd_on_features)
            print(f"running {spec}", file=sys.stderr, flush=True)
            r = _shared.run_case(MODULE, spec, args.timeout)
            if "error" in r:
                raise SystemExit(f"case {spec} failed: {r['error']}")
            pair[kind] = r
        d, s = pair["dwd"], pair["sklearn"]
        if d["landmarks"] != s["landmarks"]:
            raise SystemExit(f"draw {seed}: the landmarks differ")
        diff, se = sa.paired_difference(sa._unpack(d["test_labels"], yt.size), sa._unpack(s["test_labels"], yt.size),
                                        yt)
        rows.append(dict(seed=seed, dwd=d["test_error"], svc=s["test_error"], diff=diff, se=se,
                         dwd_lambda=d["lambda_best"], svc_lambda=s["lambda_best"], dwd_kept=d["n_features"],
                         dwd_solve=d["solve_s"] / len(sa.LAMBDAS), svc_solve=s["solve_s"] / len(sa.LAMBDAS),
                         dwd_total=d["fit_s"] / len(sa.LAMBDAS), svc_total=s["fit_s"] / len(sa.LAMBDAS),
                         dwd_sk=s.get("dwd_on_features_error")))
        print(f"  -> {rows[-1]}", file=sys.stderr, flush=True)
        (out_dir / f"{args.name}.json").write_text(json.dumps(rows, indent=1))
    diffs = np.array([r["diff"] for r in rows])
    mean = float(diffs.mean())
    se_draws = float(diffs.std(ddof=1) / np.sqrt(diffs.size)) if diffs.size > 1 else float("nan")
    dwd_mean = float(np.mean([r["dwd"] for r in rows]))
    svc_mean = float(np.mean([r["svc"] for r in rows]))
    lines = [
        "# Nystrom DWD against Nystroem + LinearSVC over independent training draws",
        "",
        f"- Command: `{_shared.command_line('benchmarks.scale_paired', argv)}`",
        f"- Machine: {_shared.machine_description()}; run took {(time.perf_counter() - started) / 60:.1f} min.",
        f"- n = {n} training rows of Figure 1's mixture per draw (training seeds {rows[0]['seed']} to "
        f"{rows[-1]['seed']}), m = {m} uniform landmarks shared by both methods (checked by digest), the same "
        f"{sa.N_HELD_OUT} validation and {sa.N_HELD_OUT} test rows; `rbfdot(sigma={sigma:.4f})`; lambdas "
        "10^seq(0, -7, length=10) and C = 1 / (2 n lambda); each method's lambda (C) chosen on the validation rows; "
        f"DWD with `stop=\"kkt\"`, eps = {sa.EPS:g}; LinearSVC with its defaults.",
        "- Paired difference: DWD's test error minus LinearSVC's on the same test rows, with its McNemar "
        "standard error within the draw.",
        "",
        "| training seed | DWD test error | LinearSVC test error | difference (pp) | paired se (pp) | DWD lambda "
        "| LinearSVC lambda | DWD features kept | DWD s per lambda (solve / with features) "
        "| LinearSVC s per C (solve / with features) |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(f"| {r['seed']} | {r['dwd']:.4f} | {r['svc']:.4f} | {100 * r['diff']:+.3f} | {100 * r['se']:.3f} "
                     f"| {r['dwd_lambda']:.1e} | {r['svc_lambda']:.1e} | {r['dwd_kept']} "
                     f"| {r['dwd_solve']:.2f} / {r['dwd_total']:.2f} | {r['svc_solve']:.2f} / {r['svc_total']:.2f} |")
    if args.dwd_on_features:
        sk = [r["dwd_sk"] for r in rows]
        lines += ["", "DWD on scikit-learn's own Nystroem features (linear kernel, the same lambdas, rule and "
                  "validation): test error per draw " + ", ".join(f"{v:.4f}" for v in sk)
                  + f"; mean {np.mean(sk):.4f} against DWD on its own features {np.mean([r['dwd'] for r in rows]):.4f} "
                  f"and LinearSVC {np.mean([r['svc'] for r in rows]):.4f}."]
    verdict = "met" if mean <= 0 else "NOT met"
    lines += [
        "",
        f"- Mean over {len(rows)} draws: DWD {dwd_mean:.4f}, LinearSVC {svc_mean:.4f}; difference "
        f"{100 * mean:+.3f} pp, standard error across draws {100 * se_draws:.3f} pp "
        f"({verdict}: DWD at least as accurate on average).",
        f"- Time per regularisation value, median over draws: DWD {np.median([r['dwd_solve'] for r in rows]):.2f} s "
        f"against LinearSVC {np.median([r['svc_solve'] for r in rows]):.2f} s (solve alone), "
        f"{np.median([r['dwd_total'] for r in rows]):.2f} s against {np.median([r['svc_total'] for r in rows]):.2f} s "
        "(features included).",
        "",
    ]
    md = "\n".join(lines)
    (out_dir / f"{args.name}.md").write_text(md)
    print(md)


if __name__ == "__main__":
    main()
