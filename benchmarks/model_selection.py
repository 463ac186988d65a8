"""Model selection of kernel DWD against GridSearchCV(SVC), and against one path fit.

Each case, in one run, on one BLAS thread:

* ``digits``: scikit-learn's ``load_digits`` (10 classes), a stratified
  75/25 split (seed 0), standardised on the training rows;
  ``DWDClassifierCV(kernel="rbf", cv=3)`` with its defaults against
  ``GridSearchCV(SVC(), {"C": [1, 10, 100]}, cv=3)``;
* ``binary``: Figure 1's two-class mixture, 5 000 training rows (seed of
  ``benchmarks._shared.training_rows``) and 20 000 test rows, rbf with
  ``sigma = sigest``; ``kerndwd.cv`` over 10 lambdas (1e-1 to 1e-6), 3
  folds, ``stop="kkt"``, then one fit at ``lambda_min``, against
  ``GridSearchCV(SVC(gamma=sigma), C in (0.1, 1, 10, 100), cv=3)``;
* ``letter``: UCI letter, A-M against N-Z (``benchmarks.letter``: 16 000
  training and 4 000 test rows), ``kerndwd.cv`` over ``benchmarks.letter``'s
  10 lambdas with ``eps=1e-4``, then one fit, against ``GridSearchCV(SVC)``
  over ``benchmarks.letter``'s four C.

For each case it also fits one path over the same lambdas on all training
rows (the cost of model selection divided by that is the structure of the
cost), and splits the model selection's time by cProfile into the products
with the kernel matrix, the factorisations (the preconditioner's factors,
its landmarks, eigendecompositions), forming the kernel matrix, and the
rest.

    OPENBLAS_NUM_THREADS=1 python -m benchmarks.model_selection [--cases digits,binary,letter]
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import sys
import time

import numpy as np

import kerndwd

from ._shared import Report, held_out_rows, training_rows

BINARY_LAMBDAS = 10.0 ** np.linspace(-1, -6, 10)
BINARY_C = (0.1, 1.0, 10.0, 100.0)
#: cProfile's functions of each part of the cost (tottime, so nothing counts twice)
PARTS = {
    "products with K": ("times", "double_product"),
    "factorisations": ("set_diagonals", "set_diagonal", "pivoted_landmarks", "eigh", "dpotrf", "cholesky"),
    "kernel matrix": ("__call__", "_matrix", "_half_sq_dist_neg", "check_kernel_matrix", "quiet_kernel",
                      "single_kernel_matrix"),
}


def profiled(call):
    """``(seconds, result, parts)``: the call's wall time and its cost split by :data:`PARTS`."""
    profile = cProfile.Profile()
    t0 = time.perf_counter()
    profile.enable()
    out = call()
    profile.disable()
    total = time.perf_counter() - t0
    stats = pstats.Stats(profile).stats
    parts = {}
    for part, names in PARTS.items():
        parts[part] = sum(v[2] for (path, _, name), v in stats.items()
                          if name in names and ("kerndwd" in path or "linalg" in path or part != "kernel matrix"))
    parts["everything else"] = total - sum(parts.values())
    return total, out, parts


def timed(call):
    t0 = time.perf_counter()
    out = call()
    return time.perf_counter() - t0, out


def parts_line(parts, total):
    return ", ".join(f"{name} {sec:.2f} s ({100 * sec / total:.0f}%)" for name, sec in parts.items())


def digits_case(rep):
    from sklearn.datasets import load_digits
    from sklearn.model_selection import GridSearchCV, train_test_split
    from sklearn.preprocessing import StandardScaler
    from sklearn.svm import SVC

    from kerndwd import DWDClassifierCV
    from kerndwd.estimator_cv import default_cv_lambdas

    X, y = load_digits(return_X_y=True)
    Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.25, random_state=0, stratify=y)
    scaler = StandardScaler().fit(Xtr)
    Xtr, Xte = scaler.transform(Xtr), scaler.transform(Xte)
    t_svc, svc = timed(lambda: GridSearchCV(SVC(), {"C": [1, 10, 100]}, cv=3).fit(Xtr, ytr))
    t_dwd, dwd, parts = profiled(lambda: DWDClassifierCV(kernel="rbf", cv=3, random_state=0).fit(Xtr, ytr))
    lam = default_cv_lambdas(Xtr.shape[0])
    gamma = 1.0 / (Xtr.shape[1] * Xtr.var())
    from kerndwd.estimator import DWDClassifier

    # one path over the same lambdas on all rows, every class: the estimator's fit at each lambda
    # shares nothing across lambdas, so the path is kerndwd.fit per class with warm starts
    def one_path():
        for c in np.unique(ytr):
            kerndwd.fit(Xtr, np.where(ytr == c, 1, -1), lam, kern=kerndwd.rbfdot(gamma), stop="kkt")
    t_path, _ = timed(one_path)
    acc_svc, acc_dwd = svc.score(Xte, yte), dwd.score(Xte, yte)
    rep.add("## digits (1347 training rows, 10 classes, 3 folds)", "")
    rep.table(["method", "seconds", "chosen", "test accuracy"], [
        ["GridSearchCV(SVC(), C in [1, 10, 100], cv=3)", f"{t_svc:.2f}", f"C = {svc.best_params_['C']:g}",
         f"{acc_svc:.4f}"],
        ["DWDClassifierCV(kernel='rbf', cv=3), defaults", f"{t_dwd:.2f}", f"lambda = {dwd.lambda_:.3g}",
         f"{acc_dwd:.4f}"],
        ["one 11-lambda path per class on all rows (kerndwd.fit, stop='kkt')", f"{t_path:.2f}", "", ""]])
    rep.add("", f"DWD against SVC: {t_dwd / t_svc:.1f}x the time (bound: 3x); test accuracy "
                f"{100 * (acc_dwd - acc_svc):+.2f} pp (bound: no more than 1 pp below).",
            f"Model selection against one path on all rows: {t_dwd / t_path:.2f}x (bound: 1.5x).",
            f"Where DWD's time goes: {parts_line(parts, t_dwd)}.", "")


def binary_case(rep):
    from sklearn.model_selection import GridSearchCV
    from sklearn.svm import SVC

    X, y = training_rows(5000)
    Xte, yte = held_out_rows(20000, 5)
    sigma = kerndwd.sigest(X, random_state=0)
    kern = kerndwd.rbfdot(sigma)
    t_svc, svc = timed(lambda: GridSearchCV(SVC(gamma=sigma), {"C": list(BINARY_C)}, cv=3).fit(X, y))

    def select():
        res = kerndwd.cv(X, y, BINARY_LAMBDAS, kern=kern, nfolds=3, random_state=0, stop="kkt")
        return res, kerndwd.fit(X, y, [res.lambda_min], kern=kern, stop="kkt")
    t_dwd, (res, best), parts = profiled(select)
    t_path, _ = timed(lambda: kerndwd.fit(X, y, BINARY_LAMBDAS, kern=kern, stop="kkt"))
    err_svc = float(np.mean(svc.predict(Xte) != yte))
    err_dwd = float(np.mean(best.predict(Xte)[:, 0] != yte))
    rep.add("## Figure 1's mixture, 5000 training rows, two classes, 3 folds", "")
    rep.table(["method", "seconds", "chosen", "test error"], [
        [f"GridSearchCV(SVC), C in {list(BINARY_C)}, cv=3", f"{t_svc:.2f}", f"C = {svc.best_params_['C']:g}",
         f"{err_svc:.4f}"],
        ["kerndwd.cv, 10 lambdas, 3 folds, stop='kkt', then one fit", f"{t_dwd:.2f}",
         f"lambda = {res.lambda_min:.3g}", f"{err_dwd:.4f}"],
        ["one 10-lambda path on all rows", f"{t_path:.2f}", "", ""]])
    rep.add("", f"DWD against SVC: {t_dwd / t_svc:.1f}x the time (bound: 3x); test error "
                f"{100 * (err_dwd - err_svc):+.2f} pp (bound: within 0.5 pp).",
            f"Model selection against one path on all rows: {t_dwd / t_path:.2f}x.",
            f"Where DWD's time goes: {parts_line(parts, t_dwd)}.", "")


def letter_case(rep):
    from sklearn.model_selection import GridSearchCV
    from sklearn.svm import SVC

    from .letter import C_GRID, EPS, PATH, letter, mcnemar

    Xtr, ytr, Xte, yte = letter()
    sigma = kerndwd.sigest(Xtr, random_state=0)
    kern = kerndwd.rbfdot(sigma)
    t_svc, svc = timed(lambda: GridSearchCV(SVC(gamma=sigma), {"C": list(C_GRID)}, cv=3).fit(Xtr, ytr))

    def select():
        res = kerndwd.cv(Xtr, ytr, PATH, kern=kern, nfolds=3, random_state=0, stop="kkt", eps=EPS)
        return res, kerndwd.fit(Xtr, ytr, [res.lambda_min], kern=kern, stop="kkt", eps=EPS)
    t_dwd, (res, best), parts = profiled(select)
    t_path, _ = timed(lambda: kerndwd.fit(Xtr, ytr, PATH, kern=kern, stop="kkt", eps=EPS))
    svc_wrong = svc.predict(Xte) != yte
    dwd_wrong = best.predict(Xte)[:, 0] != yte
    diff, se = mcnemar(dwd_wrong, svc_wrong)
    rep.add("## UCI letter, A-M against N-Z (16000 training rows, 3 folds)", "")
    rep.table(["method", "seconds", "chosen", "test error"], [
        [f"GridSearchCV(SVC), C in {list(C_GRID)}, cv=3", f"{t_svc:.1f}", f"C = {svc.best_params_['C']:g}",
         f"{svc_wrong.mean():.4f}"],
        [f"kerndwd.cv, 10 lambdas, 3 folds, stop='kkt', eps={EPS:g}, then one fit", f"{t_dwd:.1f}",
         f"lambda = {res.lambda_min:.3g}", f"{dwd_wrong.mean():.4f}"],
        ["one 10-lambda path on all rows", f"{t_path:.1f}", "", ""]])
    rep.add("", f"DWD against SVC: {t_dwd / t_svc:.1f}x the time (bound: 3x); test error, DWD minus SVC "
                f"(McNemar, paired): {diff:+.4f}, standard error {se:.4f}.",
            f"Model selection against one path on all rows: {t_dwd / t_path:.2f}x (bound: 1.5x).",
            f"Where DWD's time goes: {parts_line(parts, t_dwd)}.", "")


CASES = {"digits": digits_case, "binary": binary_case, "letter": letter_case}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", default="digits,binary,letter", help="comma-separated: " + ", ".join(CASES))
    args = parser.parse_args(argv)
    cases = args.cases.split(",")
    unknown = sorted(set(cases) - set(CASES))
    if unknown:
        parser.error(f"unknown cases {unknown}; choose from {sorted(CASES)}")
    rep = Report("model_selection", "Model selection: kernel DWD against GridSearchCV(SVC)",
                 argv=sys.argv[1:] if argv is None else argv)
    for case in cases:
        CASES[case](rep)
    rep.write()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
