"""A problem where the number of features matters (Tu et al.'s Figure 2 for
DWD): test error and time against m for Nystrom and random-feature DWD,
beside the exact kernel by block coordinate descent and scikit-learn's
``Nystroem`` + ``LinearSVC``, on a noisy checkerboard whose Bayes error is
known exactly.

``python -m benchmarks.features_matter [--full] [--n 20000] [--m 100 300 1000 3000 10000] [--out DIR]
[--pieces DIR [--only PIECE ... | --report-only]]``

Data: ``x`` uniform on ``[0, 1)^d`` (``--d``, default 3), cut into ``k``
cells per axis (``--cells``, default 4: 64 cells); the label is +1 where the
sum of the cell indices is odd, else -1, flipped with probability 0.1
(``--noise``).  The parity rule errs exactly on the flipped labels, and no
rule can do better, since the flip is independent of ``x``: the Bayes error
is ``noise`` = 0.10 exactly.  The generator is a seeded numpy Generator
(training, validation, test and sigma-selection rows from separate seeds).

Kernel ``rbfdot(sigma)`` (``exp(-sigma ||x - x'||^2)``), sigma chosen once
from ``--sigma-grid`` by the exact kernel's validation error on
``--sigma-rows`` training rows (``sigest``'s median heuristic is far too wide
for 64 small cells).  Every DWD fit takes the lambdas
``10^seq(-2, -6, length = 5)`` (``--lambda-min``: the last exponent; -8
with ``--full``), ``stop="kkt"`` and ``eps`` (default 1e-4);
lambda is chosen by the smallest validation error and the test error read
there; the time is that of the whole path (the fit, not the predictions).
The approximations run by blocks of features (``solver="bcd"``) from
``--bcd-from`` (2000) and with ``solver="auto"`` below (its ``(m + 1)``
system up to ``FEATURE_SYSTEM_MAX``); features are stored
as float32 where n m float64 numbers would exceed ``--float32-above-gib``.
The exact kernel is ``solver="bcd"`` on the same n rows.  scikit-learn:
``Nystroem(kernel="rbf", gamma=sigma)`` (the same kernel) on the same
number of landmarks, then ``LinearSVC`` (squared hinge, primal) at
``C = 1 / (2 n lambda)`` for the same lambdas (the same penalty weight),
C chosen on validation; run at each m where the n x m float64 features take
at most ``--sklearn-max-gib`` (default 4 GiB).  A fit of one C that runs
longer than the exact kernel's whole path (``--svc-budget``) is stopped and
its C left out of the choice.

``--full`` is the full setting: n = 10^5, m = 10^2 ... 5 10^4, 10^5 test
rows: hours on one core (Nystrom at m = 5 10^4 alone, the seven lambdas,
took 35 minutes beside another job).  With ``--pieces DIR`` each
piece (``sigma``, ``exact``, ``nystroem:M``, ``rff:M``, and scikit-learn's
path at one m by C, ``sklearn:M:C0`` ... ``sklearn:M:C6``, the index of the
lambda whose C it takes) is kept in ``DIR`` as it finishes and a rerun reads
the pieces of the same setting instead of running them again; ``--only`` runs
the named pieces alone (``sklearn:M`` all its C's), so that two processes
share the cores::

    python -m benchmarks.features_matter --full --pieces P --only exact rff:50000 ... &
    python -m benchmarks.features_matter --full --pieces P --only nystroem:50000 ... &
    wait; python -m benchmarks.features_matter --full --pieces P   # the rest, then the report

The report lists each piece's load and machine.  ``--report-only`` writes it
from the pieces in ``DIR`` alone, naming at the top those not there yet.
"""

from __future__ import annotations

import argparse
import json
import time
import warnings
from pathlib import Path

import numpy as np

from . import _shared
from kerndwd.engine.designs.feature_bcd import FEATURE_SYSTEM_MAX

NAME = "features_matter"
MODULE = f"benchmarks.{NAME}"
LAMBDAS = 10.0 ** np.linspace(-2, -6, 5)
SEEDS = dict(train=11, validation=22, test=33, sigma=44)
PREDICT_ROWS = 5000
REDUCED = dict(n=20_000, m=[100, 300, 1000, 3000, 10_000], n_test=50_000, lambda_min=-6)
# at n = 20 000 every method chose lambda = 1e-6, the reduced grid's last: the full run's n needs smaller ones
FULL = dict(n=100_000, m=[100, 300, 1000, 3000, 10_000, 30_000, 50_000], n_test=100_000, lambda_min=-8)


def checkerboard(n, seed, d=3, cells=4, noise=0.1):
    """``n`` rows uniform on ``[0, 1)^d``; the label is the parity of the sum
    of the cell indices (``cells`` per axis) as -1/+1, flipped with
    probability ``noise``.  Returns ``(X, y, y_bayes)`` where ``y_bayes`` is
    the Bayes rule's label (the parity before the flip)."""
    rng = np.random.default_rng([seed, n, d, cells])
    X = rng.random((n, d))
    parity = np.floor(X * cells).astype(np.int64).sum(axis=1) % 2
    y_bayes = np.where(parity == 1, 1.0, -1.0)
    flip = rng.random(n) < noise
    return X, np.where(flip, -y_bayes, y_bayes), y_bayes


def _in_chunks(fn, X):
    return np.concatenate([fn(X[i:i + PREDICT_ROWS]) for i in range(0, X.shape[0], PREDICT_ROWS)], axis=0)


def _dwd(X, y, Xv, yv, Xt, yt, eps, **fit_args):
    """Fit the path, choose lambda on validation, read the test error there."""
    import kerndwd

    start = time.perf_counter()
    path = kerndwd.fit(X, y, LAMBDAS, stop="kkt", eps=eps, **fit_args)
    fit_s = time.perf_counter() - start
    start = time.perf_counter()
    val = _shared.error_rates(_in_chunks(path.predict, Xv), yv)
    best = _shared.choose_on_validation(val)
    test = _shared.error_rates(_in_chunks(lambda Z: path.predict(Z, lambdas=[LAMBDAS[best]]), Xt), yt)[0]
    predict_s = time.perf_counter() - start
    chosen = getattr(path, "chosen", None)
    return dict(fit_s=fit_s, predict_s=predict_s, npass=[int(v) for v in path.npass],
                kkt=[float(v) for v in path.kkt], lambda_best=float(LAMBDAS[best]), best_index=best,
                val_errors=[float(v) for v in val], val_error=float(val[best]), test_error=float(test),
                chosen=None if chosen is None else str(chosen))


def _svc_fit(Z, y, c, conn):
    """In a forked child: fit ``LinearSVC`` on ``Z`` and send back the model and the
    number of convergence warnings."""
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.svm import LinearSVC

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ConvergenceWarning)
        model = LinearSVC(C=c, dual=False, tol=1e-4, max_iter=1000).fit(Z, y)
    conn.send((model, int(sum(issubclass(w.category, ConvergenceWarning) for w in caught))))
    conn.close()


def _sklearn_one(X, y, Xv, yv, Xt, yt, sigma, m, seed, index, budget=None):
    """Nystroem + LinearSVC at the C matching ``LAMBDAS[index]``: the time of the
    features and of the fit, and the validation and test errors.  The fit runs in
    a forked process (the features shared, not copied); one that runs past
    ``budget`` seconds is stopped and the result says so (``stopped_after_s``), with
    no errors."""
    import multiprocessing

    from sklearn.kernel_approximation import Nystroem

    c = _shared.svm_cost(LAMBDAS[index], X.shape[0])
    start = time.perf_counter()
    feats = Nystroem(kernel="rbf", gamma=sigma, n_components=m, random_state=seed).fit(X)
    Z = feats.transform(X)
    features_s = time.perf_counter() - start
    context = multiprocessing.get_context("fork")
    receive, send = context.Pipe(duplex=False)
    child = context.Process(target=_svc_fit, args=(Z, y, c, send))
    start = time.perf_counter()
    child.start()
    send.close()
    done = receive.poll(budget)  # None: wait for it, however long
    svc_s = time.perf_counter() - start
    if not done:
        child.kill()
        child.join()
        return dict(C=float(c), features_s=features_s, svc_s=svc_s, stopped_after_s=float(budget),
                    predict_s=0.0, val_error=None, test_error=None, unconverged=0)
    try:
        model, unconverged = receive.recv()
    except EOFError:  # the child ended without a model (killed for memory, say)
        child.join()
        raise RuntimeError(f"the LinearSVC fit at C = {c:g} (m = {m}) ended with exit code {child.exitcode} "
                           "and no model") from None
    child.join()
    del Z
    start = time.perf_counter()

    def labels(Xnew):
        return model.predict(feats.transform(Xnew))[:, None]

    val = _shared.error_rates(_in_chunks(labels, Xv), yv)[0]
    test = _shared.error_rates(_in_chunks(labels, Xt), yt)[0]
    return dict(C=float(c), features_s=features_s, svc_s=svc_s, predict_s=time.perf_counter() - start,
                val_error=float(val), test_error=float(test), unconverged=unconverged)


def _sklearn_combine(m, parts):
    """The path of C's from its fits, one a piece: the time is the features once (the
    mean over the pieces, which each made them) and every C's fit, a stopped one
    for the time it ran; C chosen on validation among the fits that finished, the
    test error read there."""
    done = [i for i, p in enumerate(parts) if p.get("stopped_after_s") is None]
    if not done:
        raise RuntimeError(f"sklearn:{m}: no C's fit finished within its time budget")
    val = np.array([parts[i]["val_error"] for i in done])
    best = done[_shared.choose_on_validation(val)]
    return dict(method="sklearn", m=m, fit_s=float(np.mean([p["features_s"] for p in parts])
                                                  + sum(p["svc_s"] for p in parts)),
                predict_s=float(sum(p["predict_s"] for p in parts)), C_best=parts[best]["C"], best_index=int(best),
                lambda_equivalent=float(LAMBDAS[best]), val_errors=[p["val_error"] for p in parts],
                val_error=float(parts[best]["val_error"]), test_error=float(parts[best]["test_error"]),
                unconverged=int(sum(p["unconverged"] for p in parts)), by_piece=True,
                svc_s=[p["svc_s"] for p in parts],
                stopped=[dict(C=p["C"], after_s=p["stopped_after_s"]) for p in parts
                         if p.get("stopped_after_s") is not None])


def _choose_sigma(grid, rows, n_val, d, cells, noise, eps):
    """The sigma of ``grid`` whose exact-kernel (BCD) path on ``rows`` rows has
    the smallest validation error (over the lambdas)."""
    import kerndwd

    X, y, _ = checkerboard(rows, SEEDS["sigma"], d, cells, noise)
    Xv, yv, _ = checkerboard(n_val, SEEDS["validation"], d, cells, noise)
    out = []
    for sigma in grid:
        start = time.perf_counter()
        path = kerndwd.fit(X, y, LAMBDAS, kern=kerndwd.rbfdot(sigma), solver="bcd", stop="kkt", eps=eps)
        val = _shared.error_rates(_in_chunks(path.predict, Xv), yv)
        out.append(dict(sigma=float(sigma), val_error=float(val.min()), lambda_best=float(LAMBDAS[int(val.argmin())]),
                        fit_s=time.perf_counter() - start))
        print(f"sigma {sigma:g}: {out[-1]}", flush=True)
    best = min(range(len(out)), key=lambda i: (out[i]["val_error"], i))
    return float(grid[best]), out


class _Pieces:
    """Runs the pieces of the benchmark (the sigma selection, the exact kernel,
    each method at each m), and with ``--pieces DIR`` keeps each result in
    ``DIR/<piece>.json`` as it finishes, with the machine, the load at its start
    and end and the setting it ran in: a piece already there from the same
    setting is read instead of run again, so the pieces of a long setting can
    run in several processes at once (``--only``) and the report be written
    from them."""

    def __init__(self, directory, settings):
        self.dir = None if directory is None else Path(directory)
        self.settings = settings
        self.log = []  # (name, machine, load at the start, load at the end, read from DIR)
        if self.dir is not None:
            self.dir.mkdir(parents=True, exist_ok=True)

    def _path(self, name):
        return None if self.dir is None else self.dir / (name.replace(":", "_") + ".json")

    def _kept(self, name, **extra):
        """The record of the piece ``name`` kept in ``DIR`` from this setting (with its
        machine and loads), or None: one reading for ``has``, ``read`` and ``run``."""
        path = self._path(name)
        if path is None or not path.exists():
            return None
        kept = json.loads(path.read_text())
        return kept if kept["setting"] == json.loads(json.dumps(dict(self.settings, **extra))) else None

    def read(self, name, **extra):
        """The result of the piece ``name`` kept in ``DIR`` from this setting, or None."""
        kept = self._kept(name, **extra)
        return None if kept is None else kept["result"]

    def has(self, name, **extra):
        """Whether ``DIR`` holds the piece ``name`` from this setting."""
        return self._kept(name, **extra) is not None

    def run(self, name, compute, **extra):
        import os

        setting = dict(self.settings, **extra)
        path = self._path(name)
        kept = self._kept(name, **extra)
        if kept is not None:
            self.log.append((name, kept["machine"], kept["load_start"], kept["load_end"], True))
            return kept["result"]
        load_start = list(os.getloadavg())
        result = compute()
        load_end = list(os.getloadavg())
        machine = _shared.machine_description()
        self.log.append((name, machine, load_start, load_end, False))
        if path is not None:
            path.write_text(json.dumps(dict(piece=name, setting=setting, machine=machine, load_start=load_start,
                                            load_end=load_end, result=result), indent=1))
        return result


def _ratio(num, den):
    return f"{num / den:.2g}x"


def _label(r):
    if r["method"] == "exact":
        return "DWD, exact kernel (BCD)"
    if r["method"] == "sklearn":
        return "Nystroem + LinearSVC (scikit-learn)"
    return {"nystroem": "DWD, Nystrom", "rff": "DWD, random features"}[r["method"]]


def _plot(rows, exact, bayes, n, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (ax_e, ax_t) = plt.subplots(1, 2, figsize=(12, 4.6))
    styles = (("nystroem", "C0", "o"), ("rff", "C1", "s"), ("sklearn", "C2", "^"))
    for method, colour, marker in styles:
        sel = sorted((r for r in rows if r["method"] == method), key=lambda r: r["m"])
        if not sel:
            continue
        ms = [r["m"] for r in sel]
        ax_e.plot(ms, [100 * r["test_error"] for r in sel], marker=marker, color=colour, label=_label(sel[0]))
        ax_t.plot(ms, [r["fit_s"] for r in sel], marker=marker, color=colour, label=_label(sel[0]))
    ax_e.axhline(100 * exact["test_error"], color="k", ls="--", label=f"DWD, exact kernel (BCD), n = {n}")
    ax_e.axhline(100 * bayes, color="grey", lw=1, label="Bayes error (exact)")
    ax_t.axhline(exact["fit_s"], color="k", ls="--", label="DWD, exact kernel (BCD)")
    for ax in (ax_e, ax_t):
        ax.set_xscale("log")
        ax.set_xlabel("number of features m (landmarks or random features)")
        ax.grid(alpha=0.3)
    ax_t.set_yscale("log")
    ax_e.set_ylabel("test error (%) at the validation-chosen lambda or C")
    ax_t.set_ylabel("seconds for the whole path (fit only)")
    ax_e.set_title(f"Noisy checkerboard, n = {n}: test error against m")
    ax_t.set_title("time against m")
    ax_e.legend(fontsize=8)
    ax_t.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main(argv=None):
    parser = argparse.ArgumentParser(prog=f"python -m {MODULE}", description=__doc__.splitlines()[0])
    parser.add_argument("--full", action="store_true",
                        help=f"the full setting: n = {FULL['n']}, m = {FULL['m']}, {FULL['n_test']} test rows")
    parser.add_argument("--n", type=int, default=None, help=f"training rows (default {REDUCED['n']})")
    parser.add_argument("--m", type=int, nargs="+", default=None, help=f"numbers of features (default {REDUCED['m']})")
    parser.add_argument("--n-test", type=int, default=None, help=f"test rows (default {REDUCED['n_test']})")
    parser.add_argument("--n-val", type=int, default=10_000, help="validation rows (lambda, C and sigma chosen there)")
    parser.add_argument("--d", type=int, default=3)
    parser.add_argument("--cells", type=int, default=4, help="cells per axis")
    parser.add_argument("--noise", type=float, default=0.1, help="label-flip probability (the Bayes error)")
    parser.add_argument("--eps", type=float, default=1e-4)
    parser.add_argument("--lambda-min", type=int, default=None,
                        help="lambdas 10^-2, 10^-3, ..., 10^lambda_min (default -6; -8 with --full)")
    parser.add_argument("--sigma", type=float, default=None, help="skip the selection and use this sigma")
    parser.add_argument("--sigma-grid", type=float, nargs="+", default=[12.5, 25.0, 50.0, 100.0, 200.0])
    parser.add_argument("--sigma-rows", type=int, default=5000)
    parser.add_argument("--sklearn-max-gib", type=float, default=4.0)
    parser.add_argument("--float32-above-gib", type=float, default=4.0)
    parser.add_argument("--bcd-from", type=int, default=2000,
                        help="approximations with m at least this run solver='bcd'; below, solver='auto'")
    parser.add_argument("--no-sklearn", action="store_true")
    parser.add_argument("--svc-budget", default="exact", metavar="SECONDS",
                        help="stop a LinearSVC fit after this many seconds and leave its C out of the choice "
                             "(default 'exact': the exact kernel's whole path; 'none': no limit)")
    parser.add_argument("--out", default=None)
    parser.add_argument("--pieces", default=None, metavar="DIR",
                        help="keep each piece's result in DIR as it finishes and reuse those of the same setting")
    parser.add_argument("--only", nargs="+", default=None, metavar="PIECE",
                        help="run only these pieces (exact, nystroem:M, rff:M, sklearn:M, sklearn:M:C<i>) "
                             "into --pieces, no report")
    parser.add_argument("--report-only", action="store_true",
                        help="write the report from the pieces in --pieces alone, naming those not there yet")
    args = parser.parse_args(argv)
    if args.only and not args.pieces:
        parser.error("--only needs --pieces DIR, where the pieces are kept")
    if args.report_only and (not args.pieces or args.only):
        parser.error("--report-only needs --pieces DIR, and no --only")
    if args.svc_budget not in ("exact", "none"):
        try:
            if not float(args.svc_budget) > 0:
                raise ValueError
        except ValueError:
            parser.error(f"--svc-budget must be a positive number of seconds, 'exact' or 'none', "
                         f"got {args.svc_budget!r}")
    setting = FULL if args.full else REDUCED
    n = args.n or setting["n"]
    ms = args.m or setting["m"]
    n_test = args.n_test or setting["n_test"]
    global LAMBDAS
    lambda_min = setting["lambda_min"] if args.lambda_min is None else args.lambda_min
    LAMBDAS = 10.0 ** np.arange(-2.0, lambda_min - 0.5, -1.0)
    is_full = n >= FULL["n"] and max(ms) >= max(FULL["m"])

    import kerndwd

    out_dir = _shared.OUTPUT if args.out is None else Path(args.out)
    out_dir.mkdir(parents=True, exist_ok=True)
    rep = _shared.Report(NAME, "A problem where the features matter: a noisy checkerboard, test error and time "
                         "against m (Tu et al.'s Figure 2 for DWD)", argv)
    board = dict(d=args.d, cells=args.cells, noise=args.noise)
    X, y, _ = checkerboard(n, SEEDS["train"], **board)
    Xv, yv, _ = checkerboard(args.n_val, SEEDS["validation"], **board)
    Xt, yt, yt_bayes = checkerboard(n_test, SEEDS["test"], **board)
    bayes = args.noise
    bayes_rule_test = float((yt_bayes != yt).mean())

    store = _Pieces(args.pieces, dict(n=n, n_val=args.n_val, n_test=n_test, board=board, eps=args.eps,
                                      lambdas=LAMBDAS.tolist(), float32_above_gib=args.float32_above_gib,
                                      bcd_from=args.bcd_from))
    if args.sigma is None:
        sigma, sigma_rows = store.run("sigma", lambda: _choose_sigma(args.sigma_grid, args.sigma_rows, args.n_val,
                                                                     args.d, args.cells, args.noise, args.eps),
                                      grid=args.sigma_grid, rows=args.sigma_rows)
    else:
        sigma, sigma_rows = args.sigma, []
    store.settings["sigma"] = sigma
    kern = kerndwd.rbfdot(sigma)

    def svc_budget():
        """Seconds a LinearSVC fit may take: ``--svc-budget``, or by default the exact kernel's whole
        path (a fit of one C that takes longer has lost an approximation's reason to be); None: no limit."""
        if args.svc_budget == "none":
            return None
        if args.svc_budget != "exact":
            return float(args.svc_budget)
        kept = store.read("exact") if args.pieces else None
        return kept["fit_s"] if kept is not None else exact_in_run.get("fit_s")

    exact_in_run = {}

    def piece(name):
        """The result of one piece: ``exact``, ``nystroem:M``, ``rff:M`` or ``sklearn:M``."""
        if name == "exact":
            return dict(method="exact", m=None, **_dwd(X, y, Xv, yv, Xt, yt, args.eps, kern=kern, solver="bcd"))
        method, m = name.split(":")
        m = int(m)
        if method == "sklearn":
            # one piece per C (``sklearn:M:C<i>``, i the lambda's index), so that two processes share them
            # and a stopped run keeps the fits it finished
            return _sklearn_combine(m, [store.run(f"{name}:C{i}", lambda i=i: _sklearn_one(
                X, y, Xv, yv, Xt, yt, sigma, m, 0, i, svc_budget())) for i in range(LAMBDAS.size)])
        extra = {"dtype": "float32"} if 8.0 * n * m > args.float32_above_gib * 2**30 else {}
        solver = "bcd" if m >= args.bcd_from else "auto"
        r = _dwd(X, y, Xv, yv, Xt, yt, args.eps, kern=kern, approx=method, n_components=m, solver=solver,
                 random_state=0, **extra)
        return dict(method=method, m=m, solver=solver, dtype=extra.get("dtype", "float64"), **r)

    def run_piece(name):
        """A piece from ``DIR`` or run; scikit-learn's path, where ``DIR`` lacks it whole, is made of its
        pieces by C and not kept whole, so that the pieces table shows where and when each C ran."""
        if name.startswith("sklearn:") and not store.has(name):
            return piece(name)
        return store.run(name, lambda: piece(name))

    names = ["exact"]
    for m in ms:
        names += [f"{approx}:{m}" for approx in ("nystroem", "rff") if not (approx == "nystroem" and m > n)]
        if not args.no_sklearn and m <= n and 8.0 * n * m <= args.sklearn_max_gib * 2**30:
            names.append(f"sklearn:{m}")
    if args.only:
        by_c = [f"{name}:C{i}" for name in names if name.startswith("sklearn:") for i in range(LAMBDAS.size)]
        unknown = sorted(set(args.only) - set(names) - set(by_c))
        if unknown:
            parser.error(f"--only: {unknown} not among this setting's pieces {names}")
        for name in args.only:
            if name.count(":") == 2:  # one C of scikit-learn's path
                m, i = int(name.split(":")[1]), int(name.split(":")[2][1:])
                result = store.run(name, lambda m=m, i=i: _sklearn_one(X, y, Xv, yv, Xt, yt, sigma, m, 0, i,
                                                                       svc_budget()))
            else:
                result = run_piece(name)
            print(f"{name}: {result}", flush=True)
        print(f"pieces written to {args.pieces}; run without --only to write the report")
        return
    def there(name):
        return store.has(name) or (name.startswith("sklearn:") and
                                   all(store.has(f"{name}:C{i}") for i in range(LAMBDAS.size)))

    missing = [name for name in names if not there(name)] if args.report_only else []
    if "exact" in missing:
        parser.error(f"--report-only: the exact kernel's piece is not in {args.pieces}")
    exact = store.run("exact", lambda: piece("exact"))
    exact_in_run.update(exact)
    print(f"exact: {exact}", flush=True)
    rows = []
    for name in names[1:]:
        if name in missing:
            continue
        rows.append(run_piece(name))
        print(rows[-1], flush=True)

    # ----------------------------------------------------------------- report
    rep.add("## Setting", "")
    if missing:
        done = {name: [i for i in range(LAMBDAS.size) if store.has(f"{name}:C{i}")] for name in missing
                if name.startswith("sklearn:")}
        rep.add("**Not all of this setting's pieces have run: " + "; ".join(
            name + (f" (its C's {', '.join(f'C{i}' for i in done[name])} done, the others not)" if done.get(name)
                    else "") for name in missing)
            + ". The tables and verdicts below hold the pieces that ran; the command without `--report-only` "
            "runs the rest and writes the report again.**", "")
    if is_full:
        rep.add(f"The full setting (`--full`): n = {n}, m = {', '.join(map(str, ms))}.", "")
    else:
        rep.add(f"**A reduced setting ran: n = {n} training rows, m = {', '.join(map(str, ms))}, {n_test} test "
                f"rows.** The full setting (n = 10^5, m = 10^2 ... 5 10^4, the exact kernel by BCD at "
                f"n = 10^5, 10^5 test rows) was not run here: it takes hours on two cores. Its command is "
                f"`OPENBLAS_NUM_THREADS=1 python -m {MODULE} --full`.", "")
    rep.add(f"- Data: a checkerboard of {args.cells}^{args.d} = {args.cells ** args.d} cells on [0, 1)^{args.d}, "
            f"the label the parity of the sum of the cell indices, flipped with probability {args.noise:g}: "
            f"the Bayes error is {bayes:.2f} exactly (the parity rule errs on {bayes_rule_test:.4f} of these test "
            f"rows). {n} training, {args.n_val} validation (lambda, C and sigma chosen there), {n_test} test rows, "
            f"each from its own seed.",
            *([f"- Why {args.cells}^{args.d}: in a first look at n = 3000 and 10 000 (lambdas to 1e-7), Nystrom DWD "
            f"with m = 100 landmarks erred at 38-41% on validation where the exact kernel erred at 17-22%, and "
            f"m = 1000 was at the exact kernel's error: 64 cells need many features, so the problem was kept."]
              if (args.d, args.cells) == (3, 4) else []),
            f"- Kernel `rbfdot(sigma = {sigma:g})`, i.e. exp(-{sigma:g} ||x - x'||^2) (scikit-learn's "
            f"`gamma = {sigma:g}`)" + (", chosen from the grid below by the exact kernel's validation error on "
                                      f"{args.sigma_rows} training rows (their own draw)." if sigma_rows else
                                      ", given on the command line."),
            f"- DWD: lambdas 10^seq(-2, {lambda_min}, length = {LAMBDAS.size}), `stop=\"kkt\"`, "
            f"eps = {args.eps:g}, lambda chosen by validation error. The approximations take `solver=\"bcd\"` "
            f"(blocks of features) for m >= {args.bcd_from} and `solver=\"auto\"` below (which picks the "
            f"(m + 1) system up to m = {FEATURE_SYSTEM_MAX}; its pick is in the JSON); a first look at "
            f"n = 20 000, m = 3000 (Nystrom, under load) took 212 s by the system and 47 s by blocks. "
            f"One draw of landmarks or frequencies "
            f"(`random_state=0`); the exact kernel is `solver=\"bcd\"` on the same {n} rows.",
            f"- scikit-learn: `Nystroem(kernel=\"rbf\", gamma={sigma:g}, n_components=m)` and "
            f"`LinearSVC(C, dual=False)` (squared hinge, L2) at C = 1/(2 n lambda) for the same "
            f"{'five' if LAMBDAS.size == 5 else LAMBDAS.size} lambdas, "
            f"C chosen on validation; run at each m where n m float64 numbers take at most "
            f"{args.sklearn_max_gib:g} GiB. "
            + ("Each fit runs with no time limit." if args.svc_budget == "none" else
               f"A fit of one C that runs past {args.svc_budget} s is stopped and its C left out of the choice."
               if args.svc_budget != "exact" else
               f"A fit of one C that runs past the exact kernel's whole path "
               f"({_shared.seconds(exact['fit_s'])} s) is stopped and its C left out of the choice: at that "
               f"point it has lost an approximation's reason to be."),
            "- Times are the whole path (all lambdas or all C's, features included), not the predictions.", "")
    if sigma_rows:
        rep.add("Sigma by the exact kernel's validation error (the smallest over the lambdas) on "
                f"{args.sigma_rows} rows:", "")
        rep.table(["sigma", "validation error", "at lambda", "path s"],
                  [[f"{s['sigma']:g}", f"{s['val_error']:.4f}", f"{s['lambda_best']:.0e}",
                    _shared.seconds(s["fit_s"])] for s in sigma_rows])
        rep.add("")

    def pp(err):
        return f"{100 * (err - exact['test_error']):+.2f}"

    if any(kept for *_, kept in store.log):
        rep.add("Test error and time against m (ratios and gaps against the exact kernel; the pieces ran apart, at "
                "the loads listed below the verdicts):", "")
    else:
        rep.add("Test error and time against m (one run; ratios and gaps against the exact kernel measured in it):",
                "")
    table = [[_label(exact), "—", _shared.seconds(exact["fit_s"]), "1.0x", f"lambda {exact['lambda_best']:.0e}",
              f"{exact['val_error']:.4f}", f"{exact['test_error']:.4f}", "0",
              f"{100 * (exact['test_error'] - bayes):+.2f}"]]
    for r in sorted(rows, key=lambda r: (["nystroem", "rff", "sklearn"].index(r["method"]), r["m"])):
        choice = f"C {r['C_best']:.3g}" if r["method"] == "sklearn" else f"lambda {r['lambda_best']:.0e}"
        table.append([_label(r), r["m"], _shared.seconds(r["fit_s"]), _ratio(r["fit_s"], exact["fit_s"]),
                      choice, f"{r['val_error']:.4f}", f"{r['test_error']:.4f}", pp(r["test_error"]),
                      f"{100 * (r['test_error'] - bayes):+.2f}"])
    rep.table(["method", "m", "path s", "time / exact", "chosen", "validation error", "test error",
               "minus exact (pp)", "minus Bayes (pp)"], table)
    rep.add("")
    for r in sorted((r for r in rows if r.get("stopped")), key=lambda r: r["m"]):
        rep.add(f"- scikit-learn at m = {r['m']}: the LinearSVC fit at " + ", ".join(
            f"C = {stop['C']:.3g} (stopped after {_shared.seconds(stop['after_s'])} s)" for stop in r["stopped"])
            + " did not finish within the budget; its path time counts the time it ran, and C was chosen among "
            "the others.")
    if any(r.get("stopped") for r in rows):
        rep.add("")

    # the properties checked: error falls with m, and at the largest m within 0.5 pp of the exact kernel.
    # A rise is set against the binomial standard error of the difference of two error rates, each read on
    # n_test rows, at the exact kernel's rate: sqrt(2 p (1 - p) / n_test).  The two models are read on the
    # same rows, so the paired error is smaller still; this one is an upper bound on it.
    p_exact = exact["test_error"]
    se_pp = 100 * float(np.sqrt(2 * p_exact * (1 - p_exact) / n_test))
    rep.add(f"Each test error is read on {n_test} rows: the standard error of a difference of two of them, at the "
            f"exact kernel's rate, is at most {se_pp:.2f} pp (sqrt(2 p (1 - p) / n_test), p = {p_exact:.4f}; "
            f"the paired error of two models read on the same rows is smaller).", "")
    verdicts = {}
    for method in ("nystroem", "rff", "sklearn"):
        sel = sorted((r for r in rows if r["method"] == method), key=lambda r: r["m"])
        if not sel:
            continue
        errs = [r["test_error"] for r in sel]
        rises = [(sel[i]["m"], sel[i + 1]["m"], 100 * (errs[i + 1] - errs[i]))
                 for i in range(len(sel) - 1) if errs[i + 1] > errs[i]]
        gap = 100 * (errs[-1] - p_exact)
        # the smallest m from which on every error is within one standard error of the exact kernel's
        near = [100 * (e - p_exact) <= se_pp for e in errs]
        reached = next((sel[i]["m"] for i in range(len(sel)) if all(near[i:])), None)
        verdicts[method] = dict(falls=not rises, rises=[list(r) for r in rises],
                                rises_within_se=all(d <= se_pp for _, _, d in rises), se_pp=se_pp,
                                reaches_exact_at_m=reached, largest_m=sel[-1]["m"], gap_pp=gap,
                                within_half_pp=gap <= 0.5)
        rep.add(f"- {_label(sel[0])}: test error {' -> '.join(f'{100 * e:.2f}' for e in errs)} % over m = "
                f"{', '.join(str(r['m']) for r in sel)}; "
                + ("it falls at every step" if not rises else
                   "it falls, except from m = " + ", ".join(f"{a} to {b} ({d:+.2f} pp)" for a, b, d in rises)
                   + (", within the standard error" if verdicts[method]["rises_within_se"] else
                      ", beyond the standard error"))
                + (f"; it is within one standard error of the exact kernel from m = {reached} on"
                   if reached is not None else "; it does not come within one standard error of the exact kernel")
                + f"; at m = {sel[-1]['m']} it is {gap:+.2f} pp from the exact kernel "
                + ("(within 0.5 pp)." if verdicts[method]["within_half_pp"] else "(not within 0.5 pp)."))
    rep.add("")
    if args.pieces:
        machines = sorted({m for _, m, _, _, _ in store.log})
        rep.add("The pieces ran as separate steps (`--pieces`), some in other processes beside one another; each "
                "took the time in the table on the machine and under the load (1, 5, 15 min) below:", "")
        rep.table(["piece", "in this process", "load at its start", "load at its end", "machine, commit"],
                  [[name, "no" if kept else "yes", ", ".join(f"{v:.2f}" for v in start),
                    ", ".join(f"{v:.2f}" for v in end), machines.index(machine) + 1]
                   for name, machine, start, end, kept in store.log])
        rep.add("", *(f"Machine and commit {i + 1}: {m}." for i, m in enumerate(machines)), "")
    rep.add("![test error and time against m](features_matter.png)")
    json_path = out_dir / f"{NAME}.json"
    json_path.write_text(json.dumps(dict(command=rep.command, full=is_full, n=n, m=ms, n_val=args.n_val,
                                         n_test=n_test, board=board, bayes=bayes, bayes_rule_test=bayes_rule_test,
                                         sigma=sigma, sigma_selection=sigma_rows, eps=args.eps,
                                         lambdas=LAMBDAS.tolist(), exact=exact, rows=rows, verdicts=verdicts,
                                         missing=missing,
                                         pieces=[dict(piece=name, machine=machine, load_start=start, load_end=end,
                                                      in_this_process=not kept)
                                                 for name, machine, start, end, kept in store.log]),
                                    indent=1))
    _plot(rows, exact, bayes, n, out_dir / f"{NAME}.png")
    rep.write(out_dir / f"{NAME}.md")
    print(f"wrote {json_path} and {out_dir / (NAME + '.png')}")


if __name__ == "__main__":
    main()
