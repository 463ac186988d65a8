"""The port against every baseline installed, measured in the same run.

``python -m benchmarks.baselines [--parts table1 rbf cv] [--reps 21] [--cone-reps 3] [--out FILE]``

Baselines, each where installed:

* cvxpy with Clarabel, ECOS and SCS (``reference/cone.py``): the same
  problem, (3.1), (4.2) or (6.2), as a cone program; both the total time
  (cvxpy's compilation included) and the solver's own time are reported;
* scikit-learn's ``LinearSVC`` (hinge loss, ``dual=True``) and ``SVC``
  (libsvm) at the cost ``C = 1 / (2 n lambda)``, which gives the SVM the same
  penalty weight: a different loss, so these are timings of a neighbour,
  not of the same answer;
* kernlab's ``ksvm`` (C-svc, ``scaled=FALSE``) through rpy2, timed by R's
  own clock after one warm-up call (``reference/rbridge.py``);
* R kerndwd: not installable here; R's recorded figures are quoted (see
  ``python -m benchmarks.faithful``).

Parts:

* ``table1``: Table 1's four examples (n = 500, p = 50) at the five
  lambdas, one fit per lambda as in the paper, with R's stopping rule
  (``stop="step"``, ``eps=1e-5``) and with the gradient rule
  (``stop="kkt"``, ``eps=1e-6``, the default path solver).  The relative
  gap of each fit's objective to the cone program's optimum says how exact
  each answer is.
* ``rbf``: rbf paths (sigma = 1, circle data) at n = 200 (100 lambdas),
  1000 and 2000 (10 lambdas), weighted (2 on class +1, 0.5 on class -1) and
  not, in R's faithful mode; the SVMs fit every cost of the path.  Cone
  programs on a kernel of n = 200 take seconds per lambda: they are timed on
  ``--cone-lambdas`` evenly spaced lambdas of the path and the path time is
  that median times the number of lambdas (marked "est."); at n >= 1000 one
  lambda is timed (several seconds each), at n = 2000 with Clarabel only.
* ``cv``: 5-fold cross-validation over 100 lambdas at n = 500 (Table 1
  example 1, R's default grid); the SVMs fit the same folds at the 100
  costs; the cone programs are timed on ``--cone-lambdas`` (fold, lambda)
  pairs and scaled to the 500 fits (marked "est.").

A timing script, not a test: nothing here asserts a time.
"""

from __future__ import annotations

import argparse
import warnings

import numpy as np

import kerndwd

from ._shared import (FIT_CASES, R_RECORDED, TABLE1_LAMBDAS, Report, median_seconds, r_package_status, ratio, seconds,
                      svm_cost, table1)

EXAMPLES = (1, 2, 3, 4)
RBF_CASES = ("rbf200-path100", "rbf200-path100-weighted", "rbf1000-path10", "rbf1000-path10-weighted",
             "rbf2000-path10", "rbf2000-path10-weighted")
KKT_EPS = 1e-6


# --------------------------------------------------------------------------
# what is installed
# --------------------------------------------------------------------------
def cone_solvers():
    try:
        from reference import cone

        return cone.available_solvers()
    except ImportError:
        return []


def have_sklearn():
    try:
        import sklearn  # noqa: F401
    except ImportError:
        return False
    return True


# --------------------------------------------------------------------------
# the baselines, one call each
# --------------------------------------------------------------------------
def time_cone(A, y, lam, solver, reps, w=None, kernel=False):
    """Median total and solver seconds of the cone program, and its objective
    re-evaluated at the solver's point."""
    from reference import cone

    totals, own, objective = [], [], None
    for _ in range(reps):
        out = cone.solve_generalized(A, y, lam, 1.0, w=w, kernel=kernel, solver=solver)
        totals.append(out["seconds"])
        own.append(out["solver_seconds"])
        objective = out["objective_eval"]
    return float(np.median(totals)), float(np.median(own)), objective


def time_linear_svc(X, y, costs, reps, train_sets=None):
    """Median seconds of LinearSVC (hinge loss) fitted at every cost (on every training set)."""
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.svm import LinearSVC

    sets = [np.arange(len(y))] if train_sets is None else train_sets

    def run():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            for rows in sets:
                for C in costs:
                    LinearSVC(C=C, loss="hinge", dual=True, max_iter=100000).fit(X[rows], y[rows])

    return median_seconds(run, reps)[0]


def time_svc(X, y, sigma, costs, reps, weighted=False):
    """Median seconds of SVC (libsvm, rbf with gamma = sigma) fitted at every cost."""
    from sklearn.svm import SVC

    weights = {-1.0: 0.5, 1.0: 2.0} if weighted else None

    def run():
        for C in costs:
            SVC(C=C, kernel="rbf", gamma=sigma, class_weight=weights).fit(X, y)

    return median_seconds(run, reps)[0]


def time_ksvm(X, y, spec, costs, reps, weighted=False, train_sets=None):
    """Median of R's own seconds for ksvm at every cost, after one warm-up call."""
    from reference import rbridge

    weights = (0.5, 2.0) if weighted else None
    warm = np.r_[np.flatnonzero(y > 0)[:10], np.flatnonzero(y < 0)[:10]]  # both classes
    rbridge.ksvm_seconds(X[warm], y[warm], spec, costs[:1], class_weights=weights)
    return float(np.median([rbridge.ksvm_seconds(X, y, spec, costs, class_weights=weights, train_sets=train_sets)
                            for _ in range(reps)]))


def _gap(value, optimum):
    return (value - optimum) / abs(optimum)


# --------------------------------------------------------------------------
# parts
# --------------------------------------------------------------------------
def part_table1(report, args, solvers, sklearn_ok, kernlab_ok):
    report.add("## Table 1: four examples, five lambdas, one fit per lambda", "",
               f"Ours: `kerndwd.fit(X, y, [lambda], kern=vanilladot())`, R's rule (`eps=1e-5` on the squared step) "
               f"and the gradient rule (`stop=\"kkt\", eps={KKT_EPS:g}`). Gap: (our objective - cone optimum) / optimum, "
               "the optimum being the least of the cone solvers' objectives re-evaluated at their points. Baseline columns: seconds "
               "(cone programs: total / solver's own). Ratios: baseline / ours.", "")
    summary = []
    for example in EXAMPLES:
        X, y = table1(example)
        n = X.shape[0]
        kern = kerndwd.vanilladot()
        rows, ratios = [], {}
        for lam in TABLE1_LAMBDAS:
            t_step, fit_step = median_seconds(lambda: kerndwd.fit(X, y, [lam], kern=kern), args.reps)
            t_kkt, fit_kkt = median_seconds(lambda: kerndwd.fit(X, y, [lam], kern=kern, stop="kkt", eps=KKT_EPS),
                                       args.reps)
            cells, objectives = {}, []
            for solver in solvers:
                total, own, objective = time_cone(X, y, lam, solver, args.cone_reps)
                cells[solver] = (total, own)
                objectives.append(objective)
            optimum = min(objectives) if objectives else None  # each is an upper bound on the optimum
            if sklearn_ok:
                cells["LinearSVC"] = (time_linear_svc(X, y, [svm_cost(lam, n)], args.cone_reps), None)
            if kernlab_ok:
                cells["ksvm"] = (time_ksvm(X, y, {"name": "vanilladot"}, [svm_cost(lam, n)], args.cone_reps), None)
            for name, (total, own) in cells.items():
                for rule, ours in (("step", t_step), ("kkt", t_kkt)):
                    ratios.setdefault((name, rule, "total"), []).append(total / ours)
                    if own is not None:
                        ratios.setdefault((name, rule, "solver"), []).append(own / ours)
            gaps = ("—", "—") if optimum is None else (f"{_gap(fit_step.objective[0], optimum):.1e}",
                                                       f"{_gap(fit_kkt.objective[0], optimum):.1e}")
            rows.append([f"{lam:g}", f"{t_step * 1e3:.3g}", int(fit_step.npass[0]), gaps[0], f"{t_kkt * 1e3:.3g}",
                         int(fit_kkt.npass[0]), gaps[1]]
                        + [f"{seconds(t)} / {seconds(o)}" if o is not None else seconds(t)
                           for t, o in cells.values()])
        report.add(f"### Example {example}", "")
        report.table(["lambda", "ours, R's rule (ms)", "passes", "gap", "ours, kkt (ms)", "passes", "gap"]
                     + [f"{c} (s)" for c in cells], rows)
        report.add("")
        columns = list(dict.fromkeys((name, which) for name, _, which in ratios))
        for rule in ("step", "kkt"):
            summary.append([f"example {example}", "R's" if rule == "step" else f"kkt <= {KKT_EPS:g}"]
                           + [f"{np.mean(ratios[(name, rule, which)]):.1f}x" for name, which in columns])
    report.add("### Mean over the five lambdas of baseline / ours", "")
    report.table(["data", "our rule"] + [name if name in ("LinearSVC", "ksvm") else f"{name} {which}"
                                         for name, which in columns], summary)
    report.add("")


def part_rbf(report, args, solvers, sklearn_ok, kernlab_ok):
    report.add("## rbf paths in R's faithful mode", "",
               "Ours: `kerndwd.fit` along the path with R's defaults. SVMs: one fit per cost of the path, "
               "`C = 1/(2 n lambda)`. Cone programs: per-lambda median times the number of lambdas (est.). "
               "Ratios: baseline / ours.", "")
    rows = []
    for name in RBF_CASES:
        case = FIT_CASES[name]
        X, y, wt, lambdas = case.data()
        n = X.shape[0]
        reps = max(1, args.reps // (1 if n <= 200 else 4 if n <= 1000 else 7))
        ours, path = median_seconds(case.call(kerndwd), reps)
        costs = [svm_cost(lam, n) for lam in lambdas]
        cells = []
        if name in R_RECORDED:
            cells.append(("R kerndwd (recorded)", R_RECORDED[name][0], ""))
        if sklearn_ok:
            cells.append(("SVC", time_svc(X, y, case.sigma, costs, max(1, reps // 2), case.weighted), ""))
        if kernlab_ok:
            cells.append(("ksvm", time_ksvm(X, y, {"name": "rbfdot", "sigma": case.sigma}, costs,
                                            max(1, reps // 2), case.weighted), ""))
        K = kerndwd.rbfdot(sigma=case.sigma)(X)
        use = solvers if n <= 1000 else [s for s in solvers if s == "CLARABEL"]
        picks = lambdas[np.linspace(0, lambdas.size - 1, min(args.cone_lambdas if n <= 200 else 1,
                                                             lambdas.size)).round().astype(int)]
        for solver in use:
            totals, owns = zip(*[time_cone(K, y, lam, solver, 1, w=wt, kernel=True)[:2] for lam in picks])
            cells.append((f"{solver} total", float(np.median(totals)) * lambdas.size,
                          f" (est. from {picks.size} lambda{'s' if picks.size > 1 else ''})"))
            cells.append((f"{solver} solver", float(np.median(owns)) * lambdas.size, " (est.)"))
        for label, value, note in cells:
            rows.append([name, f"{seconds(ours)}", int(path.npass.sum()), label, f"{seconds(value)}{note}",
                         ratio(value, ours)])
    report.table(["case", "ours (s)", "our passes", "baseline", "baseline (s)", "baseline / ours"], rows)
    report.add("")


def part_cv(report, args, solvers, sklearn_ok, kernlab_ok):
    report.add("## Cross-validation: 5 folds, 100 lambdas, n = 500 (Table 1 example 1, linear)", "")
    X, y = table1(1)
    n = X.shape[0]
    lambdas = 10.0 ** np.linspace(3, -3, 100)
    ours, res = median_seconds(lambda: kerndwd.cv(X, y, lambdas, kern=kerndwd.vanilladot(), nfolds=5, random_state=0),
                          max(1, args.reps // 4))
    foldid = res.foldid
    train_sets = [np.flatnonzero(foldid != k) for k in range(1, 6)]
    costs = [svm_cost(lam, int(0.8 * n)) for lam in lambdas]
    rows = []
    if sklearn_ok:
        value = time_linear_svc(X, y, costs, 1, train_sets=train_sets)
        rows.append(["LinearSVC, 5 folds x 100 costs", seconds(value), ratio(value, ours)])
    if kernlab_ok:
        value = time_ksvm(X, y, {"name": "vanilladot"}, costs, 1, train_sets=train_sets)
        rows.append(["ksvm, 5 folds x 100 costs", seconds(value), ratio(value, ours)])
    rng = np.random.default_rng(0)
    pairs = [(train_sets[rng.integers(5)], lambdas[rng.integers(100)]) for _ in range(args.cone_lambdas)]
    for solver in solvers:
        totals, owns = zip(*[time_cone(X[rows_], y[rows_], lam, solver, 1)[:2] for rows_, lam in pairs])
        for which, values in (("total", totals), ("solver", owns)):
            value = float(np.median(values)) * 500
            rows.append([f"{solver} {which}, 500 fits (est. from {len(pairs)})", seconds(value), ratio(value, ours)])
    report.add(f"Ours: `kerndwd.cv(X, y, 100 lambdas, nfolds=5)`: {seconds(ours)} s "
               f"({res.cvm.size} lambdas, lambda.min = {res.lambda_min:.3g}).", "")
    report.table(["baseline", "seconds", "baseline / ours"], rows)
    report.add("")


PARTS = {"table1": part_table1, "rbf": part_rbf, "cv": part_cv}


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python -m benchmarks.baselines", description=__doc__.split("\n")[0])
    ap.add_argument("--parts", nargs="*", default=list(PARTS), choices=list(PARTS))
    ap.add_argument("--reps", type=int, default=21, help="repeats of our fits (fewer on the large cases)")
    ap.add_argument("--cone-reps", type=int, default=3, help="repeats of each cone program and SVM on Table 1")
    ap.add_argument("--cone-lambdas", type=int, default=5,
                    help="lambdas (or fold-lambda pairs) timed per cone solver on the rbf and cv parts")
    ap.add_argument("--out")
    args = ap.parse_args(argv)
    report = Report("baselines", "The port against the installed baselines")
    solvers = cone_solvers()
    sklearn_ok = have_sklearn()
    kernlab_ok, kernlab_note = r_package_status("kernlab")
    report.add(f"cvxpy solvers: {', '.join(solvers) or 'none (pip install cvxpy clarabel ecos scs)'}; "
               f"scikit-learn: {'yes' if sklearn_ok else 'no'}; kernlab: "
               f"{'kernlab ' + kernlab_note if kernlab_ok else 'no (' + kernlab_note + ')'}; R kerndwd: not "
               "installed (recorded figures quoted).", "")
    for part in args.parts:
        PARTS[part](report, args, solvers, sklearn_ok, kernlab_ok)
    report.write(args.out)


if __name__ == "__main__":
    main()
