"""Tu et al.'s Figure 2 for DWD: test error against the number of features m
for Nystrom and random-feature DWD, with exact-kernel DWD as the line they
approach.

``python -m benchmarks.approx_vs_m [--n 10000] [--m 10 20 50 100 200 500 1000 2000] [--draws 3] [--out DIR]``

Data: Figure 1's mixture (``kerndwd.datasets``), n training rows, 2 x 10^4
validation rows to choose lambda and 10^5 test rows.  Every fit uses the
Gaussian kernel ``rbfdot(sigma)`` with ``sigma = sigest`` on 10^4 training
rows (as in ``benchmarks.scale_approx``), the lambdas
``10^seq(0, -7, length = 10)`` and ``stop="kkt"`` (``eps = 1e-3``, momentum);
lambda is chosen by the smallest validation error, and the test error is
read at that lambda.  Exact-kernel DWD is the R package's eigen solver
(Algorithm 2) on the n x n kernel matrix.  Each m is fitted with ``--draws``
independent seeds (landmarks, or frequencies and phases): the plot shows
their mean and range.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np

from . import _shared

MODULE = "benchmarks.approx_vs_m"
LAMBDAS = 10.0 ** np.linspace(0, -7, 10)
EPS = 1e-3
N_VALIDATION, N_TEST = 20_000, 100_000


def _fit_and_score(X, y, Xv, yv, Xt, yt, **fit_args):
    import kerndwd

    start = time.perf_counter()
    path = kerndwd.fit(X, y, LAMBDAS, stop="kkt", eps=EPS, **fit_args)
    fit_s = time.perf_counter() - start
    val = _shared.error_rates(path.predict(Xv), yv)
    best = _shared.choose_on_validation(val)
    test = _shared.error_rates(path.predict(Xt, lambdas=[LAMBDAS[best]]), yt)[0]
    fmap = getattr(path.predictor, "feature_map", None)
    return dict(fit_s=fit_s, npass=int(path.npass.sum()), lambda_best=float(LAMBDAS[best]),
                val_error=float(val[best]), test_error=float(test),
                n_features=None if fmap is None else int(fmap.n_components))


def _plot(rows, exact, bayes, n, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4.6))
    for approx, label, colour in (("nystroem", "Nystrom DWD", "C0"), ("rff", "random-feature DWD", "C1")):
        ms = sorted({r["m"] for r in rows if r["approx"] == approx})
        errs = [[100 * r["test_error"] for r in rows if r["approx"] == approx and r["m"] == m] for m in ms]
        ax.plot(ms, [np.mean(e) for e in errs], marker="o", color=colour, label=label)
        ax.fill_between(ms, [min(e) for e in errs], [max(e) for e in errs], color=colour, alpha=0.2)
    ax.axhline(100 * exact["test_error"], color="k", ls="--", label=f"exact-kernel DWD, n={n}")
    ax.axhline(100 * bayes, color="grey", lw=1, label="Bayes error")
    ax.set_xscale("log")
    ax.set_xlabel("number of features m (landmarks or random features)")
    ax.set_ylabel("test error (%) at the validation-chosen lambda")
    ax.set_title("DWD on the Figure 1 mixture: approximations against m")
    ax.grid(alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main(argv=None):
    parser = argparse.ArgumentParser(prog=f"python -m {MODULE}", description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=10_000)
    parser.add_argument("--m", type=int, nargs="+", default=[10, 20, 50, 100, 200, 500, 1000, 2000])
    parser.add_argument("--draws", type=int, default=3)
    parser.add_argument("--out", default=None)
    args = parser.parse_args(argv)

    import kerndwd

    out_dir = _shared.OUTPUT if args.out is None else Path(args.out)
    out_dir.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    X, y = _shared.training_rows(args.n)
    Xv, yv = _shared.held_out_rows(N_VALIDATION, _shared.VALIDATION_SEED)
    Xt, yt = _shared.held_out_rows(N_TEST, _shared.TEST_SEED)
    bayes, bayes_se = _shared.mixture().bayes_error(200_000, random_state=_shared.BAYES_SEED)
    sigma = kerndwd.sigest(_shared.training_rows(10_000)[0], random_state=0)
    kern = kerndwd.rbfdot(sigma)
    exact = _fit_and_score(X, y, Xv, yv, Xt, yt, kern=kern)
    print(f"exact: {exact}", flush=True)
    rows = []
    for approx in ("nystroem", "rff"):
        for m in args.m:
            if approx == "nystroem" and m > args.n:
                continue
            for seed in range(args.draws):
                r = _fit_and_score(X, y, Xv, yv, Xt, yt, kern=kern, approx=approx, n_components=m, random_state=seed)
                rows.append(dict(approx=approx, m=m, seed=seed, **r))
                print(rows[-1], flush=True)
    total = time.perf_counter() - started
    lines = [
        "# Tu et al.'s Figure 2 for DWD: test error against the number of features",
        "",
        f"- Command: `{_shared.command_line(MODULE, argv)}`",
        f"- Machine: {_shared.machine_description()}; run took {total / 60:.1f} min.",
        f"- Data: Figure 1's mixture, n = {args.n} training rows, {N_VALIDATION} validation rows (lambda "
        f"chosen there), {N_TEST} test rows. Bayes error {bayes:.4f} (Monte Carlo, se {bayes_se:.4f}).",
        f"- Kernel `rbfdot(sigma={sigma:.4f})`; lambdas 10^seq(0, -7, length=10); `stop=\"kkt\"`, eps = {EPS:g}; "
        f"{args.draws} independent draws per m (mean, and range in brackets).",
        f"- Exact-kernel DWD (eigen solver on the {args.n} x {args.n} kernel matrix): test error "
        f"{exact['test_error']:.4f} at lambda {exact['lambda_best']:.1e}, {exact['fit_s']:.0f} s, "
        f"{exact['npass']} passes.",
        "",
        "| m | Nystrom: features kept | Nystrom test error | Nystrom s per path | random features test error "
        "| random features s per path |",
        "|---|---|---|---|---|---|",
    ]

    def summary(approx, m, key):
        vals = [r[key] for r in rows if r["approx"] == approx and r["m"] == m]
        return vals

    for m in args.m:
        ny, rf = summary("nystroem", m, "test_error"), summary("rff", m, "test_error")
        kept = summary("nystroem", m, "n_features")
        ny_s, rf_s = summary("nystroem", m, "fit_s"), summary("rff", m, "fit_s")
        ny_txt = f"{np.mean(ny):.4f} [{min(ny):.4f}, {max(ny):.4f}]" if ny else "(m > n)"
        kept_txt = f"{min(kept)}-{max(kept)}" if kept else ""
        ny_time = f"{np.mean(ny_s):.1f}" if ny_s else ""
        lines.append(f"| {m} | {kept_txt} | {ny_txt} | {ny_time} | {np.mean(rf):.4f} [{min(rf):.4f}, {max(rf):.4f}] "
                     f"| {np.mean(rf_s):.1f} |")
    lines.append("")
    (out_dir / "approx_vs_m.md").write_text("\n".join(lines))
    (out_dir / "approx_vs_m.json").write_text(json.dumps({"exact": exact, "rows": rows, "bayes": bayes,
                                                          "sigma": sigma}, indent=1))
    _plot(rows, exact, bayes, args.n, out_dir / "approx_vs_m.png")
    print("\n".join(lines))
    print(f"wrote {out_dir / 'approx_vs_m.md'} and {out_dir / 'approx_vs_m.png'}")


if __name__ == "__main__":
    main()
