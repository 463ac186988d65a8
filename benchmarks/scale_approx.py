"""Kernel DWD at scale: time, peak memory and test error against n for
Nystrom and random-feature DWD, with scikit-learn's Nystroem + LinearSVC on
the same landmarks measured in the same run.

``python -m benchmarks.scale_approx [--sizes 1e4 1e5 1e6] [--nystroem-m 500 1000 2000] [--rff-m 1000]
[--sklearn-m 1000] [--sklearn-max-n 1e5] [--out DIR]``

Data: Figure 1's two-class Gaussian mixture (``kerndwd.datasets``, centres of
the Figure 1 vignette), ``n`` training rows, and 10^5 validation and 10^5
test rows drawn independently.  Each case runs in its own process, so its
peak resident memory is its own (``ru_maxrss``); its time is measured
inside it, from the training rows in memory to the fitted path.

Settings, as a user of kernel DWD would choose them:

* the Gaussian kernel ``rbfdot(sigma)``, ``sigma = sigest`` (the R package's
  default kernel) computed once on 10^4 training rows, so every n and method
  fits the same kernel;
* 10 lambdas, ``10^seq(0, -7, length = 10)``: the range of the R package's
  default grid for ``n > 10000``, thinned to ten values;
* ``stop="kkt"`` with ``eps = 1e-3`` on the gradient norm (with momentum):
  the run also fits n = 10^5 at ``eps = 1e-4`` to show that the tighter
  tolerance changes no test error while costing several times the passes;
* lambda (or ``C``) chosen by the smallest error on the validation rows;
  the test error is reported at that choice;
* Nystrom landmarks uniform (the default), features stored in float64
  (fewer than m survive the eigenvalue cutoff on this two-dimensional
  problem); random features stored in float32 (m = 1000 float64 features of
  10^6 rows would take 8 GB);
* scikit-learn: ``Nystroem(kernel="rbf", gamma=sigma)`` fitted on the very
  landmark rows the DWD fit drew (checked by a digest), then ``LinearSVC``
  with its defaults (squared hinge) at ``C = 1 / (2 n lambda)``, the ``C``
  of the same penalty ``lambda ||w||^2`` on the mean loss.
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import json
import sys
import time
import warnings

import numpy as np

from . import _shared

MODULE = "benchmarks.scale_approx"
LAMBDAS = 10.0 ** np.linspace(0, -7, 10)
EPS = 1e-3
N_HELD_OUT = 100_000
SEED = 0
ACCEPT_N, ACCEPT_M = 1_000_000, 1000
ACCEPT_SECONDS, ACCEPT_GIB, ACCEPT_PP = 600.0, 12.0, 0.5


def _digest(rows):
    return hashlib.sha256(np.ascontiguousarray(rows).tobytes()).hexdigest()[:16]


def _pack(labels):
    """+-1 test labels as a base64 bit string (for paired comparisons in the parent)."""
    return base64.b64encode(np.packbits(np.asarray(labels) > 0).tobytes()).decode()


def _unpack(text, n):
    bits = np.unpackbits(np.frombuffer(base64.b64decode(text), dtype=np.uint8))[:n]
    return np.where(bits == 1, 1.0, -1.0)


def paired_difference(pred_a, pred_b, truth):
    """Difference of the error rates of two classifiers on the same rows and its
    standard error from their disagreements (McNemar): with ``b`` rows only
    ``a`` gets wrong and ``c`` rows only ``b`` gets wrong, ``(b - c) / N`` and
    ``sqrt(b + c - (b - c)^2 / N) / N``."""
    wrong_a, wrong_b = pred_a != truth, pred_b != truth
    b, c, N = int(np.sum(wrong_a & ~wrong_b)), int(np.sum(wrong_b & ~wrong_a)), truth.size
    return (b - c) / N, np.sqrt(max(b + c - (b - c) ** 2 / N, 0.0)) / N


# --------------------------------------------------------------------------
# the cases (each in its own process)
# --------------------------------------------------------------------------
def _dwd_case(spec):
    import kerndwd
    from kerndwd.engine import features

    X, y = _shared.training_rows(spec["n"], spec.get("train_seed", _shared.TRAIN_SEED))
    Xv, yv = _shared.held_out_rows(N_HELD_OUT, _shared.VALIDATION_SEED)
    Xt, yt = _shared.held_out_rows(N_HELD_OUT, _shared.TEST_SEED)
    spent = {"map": 0.0, "features": 0.0}
    design_cls = features.NystroemDesign if spec["approx"] == "nystroem" else features.FourierDesign

    def timed(name, fn):
        def wrapper(*args, **kwargs):
            start = time.perf_counter()
            out = fn(*args, **kwargs)
            spent[name] += time.perf_counter() - start
            return out
        return wrapper

    design_cls.fitted_map = timed("map", design_cls.fitted_map)
    design_cls.feature_form = timed("features", design_cls.feature_form)
    start = time.perf_counter()
    path = kerndwd.fit(X, y, LAMBDAS, kern=kerndwd.rbfdot(spec["sigma"]), approx=spec["approx"],
                       n_components=spec["m"], random_state=SEED, stop="kkt", eps=spec["eps"], dtype=spec["dtype"])
    fit_s = time.perf_counter() - start
    start = time.perf_counter()
    val = _shared.error_rates(path.predict(Xv), yv)
    test_labels = path.predict(Xt)
    test = _shared.error_rates(test_labels, yt)
    predict_s = time.perf_counter() - start
    best = _shared.choose_on_validation(val)
    fmap = path.predictor.feature_map
    return dict(spec, fit_s=fit_s, map_s=spent["map"], features_s=spent["features"], predict_s=predict_s,
                solve_s=fit_s - spent["map"] - spent["features"], npass=int(path.npass.sum()),
                kkt_max=float(path.kkt.max()), jerr=path.jerr, n_features=int(fmap.n_components),
                val=val.tolist(), test=test.tolist(), best=best, lambda_best=float(LAMBDAS[best]),
                test_error=float(test[best]), test_labels=_pack(test_labels[:, best]),
                landmarks=_digest(fmap.landmarks) if spec["approx"] == "nystroem" else None)


def _sklearn_case(spec):
    import kerndwd
    from kerndwd.engine.feature_maps import uniform_landmarks
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.kernel_approximation import Nystroem
    from sklearn.svm import LinearSVC

    X, y = _shared.training_rows(spec["n"], spec.get("train_seed", _shared.TRAIN_SEED))
    Xv, yv = _shared.held_out_rows(N_HELD_OUT, _shared.VALIDATION_SEED)
    Xt, yt = _shared.held_out_rows(N_HELD_OUT, _shared.TEST_SEED)
    n, m = X.shape[0], spec["m"]
    # the landmarks NystroemDesign(random_state=SEED) draws
    rows = uniform_landmarks(X, kerndwd.rbfdot(spec["sigma"]), m, np.random.default_rng(SEED))
    landmarks = X[rows]
    start = time.perf_counter()
    ny = Nystroem(kernel="rbf", gamma=spec["sigma"], n_components=m, random_state=0).fit(landmarks)
    F = ny.transform(X)
    features_s = time.perf_counter() - start
    fits, val, test, labels, unconverged = [], [], [], [], 0
    Fv, Ft = ny.transform(Xv), ny.transform(Xt)
    predict_s = 0.0
    for lam in LAMBDAS:
        start = time.perf_counter()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", ConvergenceWarning)
            clf = LinearSVC(C=1.0 / (2.0 * n * lam), random_state=0).fit(F, y)
        fits.append(time.perf_counter() - start)
        unconverged += any(issubclass(w.category, ConvergenceWarning) for w in caught)
        start = time.perf_counter()
        val.append(float(np.mean(clf.predict(Fv) != yv)))
        labels.append(clf.predict(Ft))
        test.append(float(np.mean(labels[-1] != yt)))
        predict_s += time.perf_counter() - start
    best = _shared.choose_on_validation(val)
    extra = {}
    if spec.get("dwd_on_features"):
        # DWD itself (the linear kernel) on scikit-learn's features: separates the
        # features from the loss in a difference of test errors
        own = kerndwd.fit(F, y, LAMBDAS, kern=kerndwd.vanilladot(), stop="kkt", eps=spec["eps"])
        own_val = _shared.error_rates(own.predict(Fv), yv)
        own_test = _shared.error_rates(own.predict(Ft), yt)
        extra["dwd_on_features_error"] = float(own_test[_shared.choose_on_validation(own_val)])
    return dict(spec, **extra, fit_s=features_s + sum(fits), features_s=features_s, map_s=0.0, solve_s=sum(fits),
                fit_per_C=fits, unconverged=unconverged, predict_s=predict_s, n_features=m, val=val, test=test,
                best=best, lambda_best=float(LAMBDAS[best]), test_error=float(test[best]),
                test_labels=_pack(labels[best]), landmarks=_digest(landmarks))


def worker(spec):
    result = _sklearn_case(spec) if spec["kind"] == "sklearn" else _dwd_case(spec)
    _shared.write_result(spec, result)


# --------------------------------------------------------------------------
# the run
# --------------------------------------------------------------------------
def _label(r):
    if r["kind"] == "sklearn":
        return f"scikit-learn Nystroem + LinearSVC, m={r['m']}"
    name = "Nystrom" if r["approx"] == "nystroem" else "random features"
    tol = "" if r["eps"] == EPS else f", eps={r['eps']:g}"
    return f"DWD {name}, m={r['m']}{tol}"


def _plot(results, bayes, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 3, figsize=(15, 4.4))
    groups = {}
    for r in results:
        if "error" in r or r["eps"] != EPS:
            continue
        groups.setdefault(_label(r), []).append(r)
    for label, rows in groups.items():
        rows.sort(key=lambda r: r["n"])
        ns = [r["n"] for r in rows]
        style = "--" if rows[0]["kind"] == "sklearn" else "-"
        axes[0].plot(ns, [r["fit_s"] for r in rows], style, marker="o", label=label)
        axes[1].plot(ns, [r["peak_rss_gib"] for r in rows], style, marker="o", label=label)
        axes[2].plot(ns, [100 * r["test_error"] for r in rows], style, marker="o", label=label)
    axes[2].axhline(100 * bayes, color="k", lw=1, label=f"Bayes error {100 * bayes:.2f}%")
    axes[0].set_ylabel("seconds: features + 10-lambda path (or 10 C)")
    axes[1].set_ylabel("peak resident memory (GiB)")
    axes[2].set_ylabel("test error (%) at the validation-chosen lambda")
    for ax in axes:
        ax.set_xscale("log")
        ax.set_xlabel("training rows n")
        ax.grid(alpha=0.3)
    axes[0].set_yscale("log")
    axes[1].set_yscale("log")
    axes[2].legend(fontsize=7)
    fig.suptitle("Kernel DWD with Nystrom and random features on the Figure 1 mixture")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def _markdown(results, info):
    lines = [
        "# Kernel DWD at scale: Nystrom and random features against n",
        "",
        f"- Command: `{info['command']}`",
        f"- Machine: {info['machine']}; run took {info['total_s'] / 60:.1f} min.",
        f"- Data: Figure 1's mixture (centres seed 1), n training rows, {N_HELD_OUT} validation and "
        f"{N_HELD_OUT} test rows.",
        f"- Bayes error: {info['bayes_mc']:.4f} (Monte Carlo, se {info['bayes_se']:.4f}); the paper's "
        f"{info['bayes_paper']:.4f}; the Bayes rule's error on these test rows: {info['bayes_test']:.4f}.",
        f"- Kernel `rbfdot(sigma={info['sigma']:.4f})` (sigest on 10^4 training rows); lambdas "
        "10^seq(0, -7, length=10); `stop=\"kkt\"`, eps as listed; lambda (C) chosen on the validation rows.",
        "- Time: inside the case's own process, from training rows in memory to the fitted path (features "
        "included); `per lambda` is the solve alone divided by 10. Peak: `ru_maxrss` of the case's process "
        "(data, features, fit and predictions).",
        "",
        "| n | method | features kept | dtype | features s | solve s | total s | solve s per lambda | passes "
        "| peak GiB | lambda chosen | test error | minus Bayes (pp) |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in results:
        if "error" in r:
            lines.append(f"| {r['n']:.0e} | {_label(r)} | | | | | | | | | | failed: {r['error']} | |")
            continue
        dtype = r.get("dtype", "float64")
        passes = r.get("npass", "")
        extra = f" ({r['unconverged']} of 10 C hit max_iter)" if r.get("unconverged") else ""
        lines.append(
            f"| {r['n']:.0e} | {_label(r)}{extra} | {r['n_features']} | {dtype} | {r['features_s'] + r['map_s']:.1f} "
            f"| {r['solve_s']:.1f} | {r['fit_s']:.1f} | {r['solve_s'] / len(LAMBDAS):.2f} | {passes} "
            f"| {r['peak_rss_gib']:.2f} | {r['lambda_best']:.1e} | {r['test_error']:.4f} "
            f"| {100 * (r['test_error'] - info['bayes_mc']):+.2f} |")
    lines += ["", *info["notes"], "", "## Acceptance", "", *info["acceptance"], ""]
    return "\n".join(lines)


def _acceptance(results, info, truth, bayes_labels):
    """The acceptance statements, each with its measured figure."""
    out = []
    key = [r for r in results if r.get("kind") == "dwd" and r["approx"] == "nystroem" and r["n"] == ACCEPT_N
           and r["m"] == ACCEPT_M and r["eps"] == EPS]
    if not key or "error" in key[0]:
        return [f"- The n = {ACCEPT_N:.0e}, m = {ACCEPT_M} Nystrom case did not run or failed."]
    r = key[0]
    ok = r["fit_s"] < ACCEPT_SECONDS
    out.append(f"- 10-lambda Nystrom (m = {ACCEPT_M}) path on n = {ACCEPT_N:.0e}, features included: "
               f"{r['fit_s']:.0f} s ({'met' if ok else 'NOT met'}: under {ACCEPT_SECONDS:.0f} s); "
               f"peak memory {r['peak_rss_gib']:.2f} GiB ({'met' if r['peak_rss_gib'] < ACCEPT_GIB else 'NOT met'}: "
               f"under {ACCEPT_GIB:.0f} GiB).")
    gap = 100 * (r["test_error"] - info["bayes_mc"])
    excess, excess_se = paired_difference(_unpack(r["test_labels"], truth.size), bayes_labels, truth)
    out.append(f"- Test error at the validation-chosen lambda ({r['lambda_best']:.1e}): {r['test_error']:.4f}, "
               f"{gap:+.2f} percentage points from the Bayes error {info['bayes_mc']:.4f} "
               f"({'met' if abs(gap) <= ACCEPT_PP else 'NOT met'}: within {ACCEPT_PP}); on the same test rows "
               f"the Bayes rule errs {info['bayes_test']:.4f}, so the excess error is {100 * excess:+.2f} pp "
               f"(paired se {100 * excess_se:.2f} pp).")
    sk = sorted((s for s in results if s.get("kind") == "sklearn" and s["m"] == ACCEPT_M and "error" not in s),
                key=lambda s: s["n"])
    for s in sk:
        d = [x for x in results if x.get("kind") == "dwd" and x["approx"] == "nystroem" and x["n"] == s["n"]
             and x["m"] == ACCEPT_M and x["eps"] == EPS and "error" not in x][0]
        diff, se = paired_difference(_unpack(d["test_labels"], truth.size), _unpack(s["test_labels"], truth.size),
                                     truth)
        acc = d["test_error"] <= s["test_error"]
        per_dwd, per_svc = d["solve_s"] / len(LAMBDAS), s["solve_s"] / len(LAMBDAS)
        tot_dwd, tot_svc = d["fit_s"] / len(LAMBDAS), s["fit_s"] / len(LAMBDAS)
        fast = per_dwd <= per_svc and tot_dwd <= tot_svc
        out.append(f"- n = {s['n']:.0e}, m = {ACCEPT_M}, the same landmarks (digest {s['landmarks']}): test error "
                   f"DWD {d['test_error']:.4f}, LinearSVC {s['test_error']:.4f}, difference {100 * diff:+.2f} pp "
                   f"(paired se {100 * se:.2f} pp) ({'met' if acc else 'NOT met'}: at least as accurate); "
                   f"solve per regularisation value {per_dwd:.2f} s against {per_svc:.2f} s ({per_svc / per_dwd:.0f}x), "
                   f"features included {tot_dwd:.2f} s against {tot_svc:.2f} s ({tot_svc / tot_dwd:.0f}x) "
                   f"({'met' if fast else 'NOT met'}: at least as fast).")
    if sk and not any(s["n"] == ACCEPT_N for s in sk):
        largest = sk[-1]
        if len(sk) > 1:
            slope = (largest["peak_rss_gib"] - sk[-2]["peak_rss_gib"]) / (largest["n"] - sk[-2]["n"])
            estimate = largest["peak_rss_gib"] + slope * (ACCEPT_N - largest["n"])
            how = (f"measured {sk[-2]['peak_rss_gib']:.1f} GiB at n = {sk[-2]['n']:.0e} and "
                   f"{largest['peak_rss_gib']:.1f} GiB at n = {largest['n']:.0e}; linear in n, about "
                   f"{estimate:.0f} GiB at n = {ACCEPT_N:.0e}")
        else:
            how = f"measured {largest['peak_rss_gib']:.1f} GiB at n = {largest['n']:.0e}"
        out.append(f"- scikit-learn at n = {ACCEPT_N:.0e} was not run: its peak memory ({how}) is the dense "
                   f"float64 features ({ACCEPT_N * ACCEPT_M * 8 / 2**30:.0f} GiB) plus LinearSVC's copy of them "
                   f"as liblinear's 16-byte (index, value) nodes ({ACCEPT_N * (ACCEPT_M + 1) * 16 / 2**30:.0f} GiB), "
                   f"beyond the {ACCEPT_GIB:.0f} GiB budget and this machine's 24 GiB. The accuracy and speed "
                   "comparison stands at the n where it runs, in the same run.")
    return out


def main(argv=None):
    parser = argparse.ArgumentParser(prog=f"python -m {MODULE}", description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=float, nargs="+", default=[1e4, 1e5, 1e6])
    parser.add_argument("--nystroem-m", type=int, nargs="+", default=[500, 1000, 2000])
    parser.add_argument("--rff-m", type=int, nargs="+", default=[1000])
    parser.add_argument("--rff-max-n", type=float, default=1e6,
                        help="largest n for random features (their m features are all kept: no eigenvalue cutoff)")
    parser.add_argument("--sklearn-m", type=int, nargs="+", default=[ACCEPT_M])
    parser.add_argument("--sklearn-max-n", type=float, default=1e5)
    parser.add_argument("--tolerance-check-n", type=float, default=1e5,
                        help="n at which Nystrom m=1000 is also fitted with eps=1e-4 (0: skip)")
    parser.add_argument("--timeout", type=float, default=3600, help="seconds per case")
    parser.add_argument("--reuse", default=None,
                        help="a scale_approx.json of an interrupted run of this script: its finished cases are "
                             "kept (the output says so) and only the others run")
    parser.add_argument("--out", default=None)
    parser.add_argument("--worker", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker is not None:
        return worker(json.loads(args.worker))

    import kerndwd
    from kerndwd import datasets

    out_dir = _shared.OUTPUT if args.out is None else __import__("pathlib").Path(args.out)
    out_dir.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    model = _shared.mixture()
    bayes_mc, bayes_se = model.bayes_error(200_000, random_state=_shared.BAYES_SEED)
    Xt, yt = _shared.held_out_rows(N_HELD_OUT, _shared.TEST_SEED)
    bayes_test = float(np.mean(model.bayes_rule(Xt) != yt))
    sigma = kerndwd.sigest(_shared.training_rows(10_000)[0], random_state=0)
    sizes = sorted(int(v) for v in args.sizes)
    specs = []  # every DWD case first, then scikit-learn's (much slower per case)
    for n in sizes:
        for m in args.nystroem_m:
            specs.append(dict(kind="dwd", approx="nystroem", n=n, m=m, dtype="float64", sigma=sigma, eps=EPS))
        if int(args.tolerance_check_n) == n and ACCEPT_M in args.nystroem_m:
            specs.append(dict(kind="dwd", approx="nystroem", n=n, m=ACCEPT_M, dtype="float64", sigma=sigma,
                              eps=EPS / 10))
        for m in args.rff_m if n <= args.rff_max_n else ():
            specs.append(dict(kind="dwd", approx="rff", n=n, m=m, dtype="float32", sigma=sigma, eps=EPS))
    for n in sizes:
        if n <= args.sklearn_max_n:
            for m in args.sklearn_m:
                specs.append(dict(kind="sklearn", n=n, m=m, sigma=sigma, eps=EPS))
    results = []
    reused = []
    if args.reuse:
        earlier = json.loads(__import__("pathlib").Path(args.reuse).read_text())["results"]
        keys = ("kind", "approx", "n", "m", "dtype", "eps", "sigma")
        reused = [r for r in earlier if "error" not in r and "test_labels" in r
                  and any(all(r.get(k) == spec.get(k) for k in keys) for spec in specs)]
    for spec in specs:
        same = [r for r in reused if all(r.get(k) == spec.get(k) for k in ("kind", "approx", "n", "m", "dtype", "eps"))]
        if same:
            print(f"reusing {spec}", file=sys.stderr, flush=True)
            results.append(dict(same[0], reused=True))
            continue
        print(f"running {spec}", file=sys.stderr, flush=True)
        r = _shared.run_case(MODULE, spec, args.timeout)
        print(f"  -> {({k: v for k, v in r.items() if k not in ('val', 'test', 'fit_per_C', 'test_labels')})}", file=sys.stderr,
              flush=True)
        results.append(r)
        # what has finished so far, in case the run is stopped
        (out_dir / "scale_approx.json").write_text(json.dumps({"results": results}, indent=1))
    results.sort(key=lambda r: (r["n"], r["kind"] == "sklearn"))
    notes = []
    for n in sorted({r["n"] for r in results}):
        dw = {r["m"]: r.get("landmarks") for r in results if r.get("kind") == "dwd" and r["approx"] == "nystroem"
              and r["n"] == n and r["eps"] == EPS}
        sk = {r["m"]: r.get("landmarks") for r in results if r.get("kind") == "sklearn" and r["n"] == n}
        for m, digest in sk.items():
            if digest != dw.get(m):
                notes.append(f"- WARNING: n = {n:.0e}, m = {m}: scikit-learn's landmarks differ from DWD's.")
    tol = [r for r in results if r.get("eps") == EPS / 10 and "error" not in r]
    for r in tol:
        base = [x for x in results if x.get("kind") == "dwd" and x["approx"] == "nystroem" and x["n"] == r["n"]
                and x["m"] == r["m"] and x["eps"] == EPS and "error" not in x]
        if base:
            b = base[0]
            notes.append(f"- Tolerance check at n = {r['n']:.0e}, m = {r['m']}: eps = {r['eps']:g} takes "
                         f"{r['npass']} passes ({r['solve_s']:.0f} s of solve) against {b['npass']} ({b['solve_s']:.0f} s) "
                         f"at eps = {EPS:g}; largest change of the test error over the 10 lambdas "
                         f"{np.abs(np.subtract(r['test'], b['test'])).max():.4f}, at the chosen lambda "
                         f"{r['test_error']:.4f} against {b['test_error']:.4f}.")
    info = dict(command=_shared.command_line(MODULE, argv), machine=_shared.machine_description(), total_s=0.0,
                sigma=sigma, bayes_mc=bayes_mc, bayes_se=bayes_se, bayes_paper=datasets.PAPER_BAYES_ERROR,
                bayes_test=bayes_test, notes=notes)
    if any(r.get("reused") for r in results):
        notes.append(f"- {sum(bool(r.get('reused')) for r in results)} of the {len(results)} cases were measured "
                     f"by an earlier, interrupted run of the same script on this machine and kept ({args.reuse}); "
                     "the others ran in this run.")
    sk_skipped = [n for n in sizes if n > args.sklearn_max_n]
    sk_done = sorted((r for r in results if r.get("kind") == "sklearn" and "error" not in r), key=lambda r: r["n"])
    if sk_skipped and sk_done:
        r = sk_done[-1]
        notes.append(f"- scikit-learn was not run at n = {', '.join(f'{n:.0e}' for n in sk_skipped)} "
                     f"(--sklearn-max-n {args.sklearn_max_n:.0e}): at n = {r['n']:.0e} its 10 LinearSVC fits took "
                     f"{r['solve_s']:.0f} s ({', '.join(f'{t:.0f}' for t in r['fit_per_C'])} s from the smallest C "
                     "to the largest; liblinear's solver needs more iterations as C grows), and each "
                     "epoch is linear in n.")
    skipped = [n for n in sizes if n > args.rff_max_n]
    if skipped and args.rff_m:
        rff = sorted((r for r in results if r.get("approx") == "rff" and "error" not in r), key=lambda r: r["n"])
        grow = (f"; measured {rff[-1]['fit_s']:.0f} s at n = {rff[-1]['n']:.0e}, linear in n" if rff else "")
        notes.append(f"- Random features were not fitted at n = {', '.join(f'{n:.0e}' for n in skipped)} "
                     f"(--rff-max-n {args.rff_max_n:.0e}): all m features are kept (Nystrom drops the directions "
                     f"below its eigenvalue cutoff), so each pass and each Newton system costs m / (kept Nystrom "
                     f"features) times more{grow}.")
    info["acceptance"] = _acceptance(results, info, yt, model.bayes_rule(Xt))
    info["total_s"] = time.perf_counter() - started
    kept = [{k: v for k, v in r.items() if k not in ("test_labels", "result_file")} for r in results]
    (out_dir / "scale_approx.json").write_text(json.dumps({"info": info, "results": kept}, indent=1))
    md = _markdown(results, info)
    (out_dir / "scale_approx.md").write_text(md)
    _plot(results, bayes_mc, out_dir / "scale_approx.png")
    print(md)
    print(f"wrote {out_dir / 'scale_approx.md'} and {out_dir / 'scale_approx.png'}")


if __name__ == "__main__":
    main()
