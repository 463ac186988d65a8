"""Exact kernel DWD against scikit-learn's SVC at n = 5 10^4: Figure 1's mixture.

The data: the two-class Gaussian mixture of Figure 1 (2 features; its Bayes
error estimated by Monte Carlo in the run), 50 000 training,
10 000 validation and 20 000 test rows, each from its own seed; the rbf
kernel with ``sigma = sigest(training rows)`` (scikit-learn's ``gamma`` is
the same number).  One BLAS thread.

At this size the float64 kernel matrix takes 20 GB, more than the default
memory budget (half the memory available) of a 24 GiB machine, so
``solver="auto"`` holds it in float32 (10 GB) for Newton-CG; the run prints
its choice and the budget.

The cases, all in one run:

* DWD, ``solver="auto"``, ``stop="kkt"``, ``eps=1e-4``: a 10-lambda path
  with warm starts, lambda chosen on the validation rows, then one fit at
  the chosen lambda from zero;
* ``SVC`` at C in (0.1, 1, 10, 100), C chosen on the validation rows
  (``cache_size`` 2000 MB: more kernel cache than its default helps it at
  this size);
* McNemar's comparison of the two chosen models on the test rows.

Model selection by a validation set rather than cross-validation: at this
size one path per fold would repeat the path three times for both methods
alike.  Before any timing the run writes to 4 GiB of fresh memory once
(:func:`benchmarks.letter.first_touch`).

    OPENBLAS_NUM_THREADS=1 python -m benchmarks.mixture_large [--n 50000]
"""

from __future__ import annotations

import argparse
import os
import sys

import numpy as np

import kerndwd
from kerndwd.engine import make_design
from kerndwd.engine.cache import gib, memory_budget

from ._shared import (BAYES_SEED, TEST_SEED, VALIDATION_SEED, Report, held_out_rows, mixture, training_rows)
from .letter import first_touch, mcnemar, timed

PATH = 10.0 ** np.linspace(-2, -6, 10)
C_GRID = (0.1, 1.0, 10.0, 100.0)
EPS = 1e-4


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=50000, help="training rows")
    parser.add_argument("--validation", type=int, default=10000, help="validation rows")
    parser.add_argument("--test", type=int, default=20000, help="test rows")
    args = parser.parse_args(argv)
    from sklearn.svm import SVC

    Xtr, ytr = training_rows(args.n)
    Xva, yva = held_out_rows(args.validation, VALIDATION_SEED)
    Xte, yte = held_out_rows(args.test, TEST_SEED)
    bayes, bayes_se = mixture().bayes_error(random_state=BAYES_SEED)
    sigma = kerndwd.sigest(Xtr, random_state=0)
    kern = kerndwd.rbfdot(sigma)
    rep = Report("mixture_large", f"Exact kernel DWD and SVC on Figure 1's mixture, n = {args.n}",
                 argv=sys.argv[1:] if argv is None else argv)
    touch = first_touch()
    picked = make_design("auto", {}).for_rows(args.n, Xtr.shape[1], kern, "dense", False)
    rep.add(f"{args.n} training, {args.validation} validation and {args.test} test rows of Figure 1's mixture "
            f"(2 features); Bayes error {bayes:.4f} (Monte Carlo, standard error {bayes_se:.4f}); rbf sigma = "
            f"sigest = {sigma:.4g} (SVC gamma the same); OPENBLAS_NUM_THREADS="
            f"{os.environ.get('OPENBLAS_NUM_THREADS', 'unset')}.",
            f"Writing 4 GiB of fresh memory before the timings: {touch[0]:.1f} s the first time, "
            f"{touch[1]:.1f} s again.",
            f"Memory budget at the start: {gib(memory_budget())}; {picked.chosen}.", "")

    rep.add("## DWD: a 10-lambda path (warm starts), lambda chosen on the validation rows", "")
    t_path, path = timed(lambda: kerndwd.fit(Xtr, ytr, PATH, kern=kern, stop="kkt", eps=EPS))
    val = np.mean(path.predict(Xva) != yva[:, None], axis=0)
    test = np.mean(path.predict(Xte) != yte[:, None], axis=0)
    rep.table(["lambda", "Newton iterations", "kkt", "validation error", "test error"],
              [[f"{lam:.3g}", int(k), f"{g:.1e}", f"{v:.4f}", f"{e:.4f}"] for lam, k, g, v, e in
               zip(path.lambda_, path.npass, path.kkt, val, test)])
    best = int(np.flatnonzero(val == val.min())[0])
    lam = float(path.lambda_[best])
    rep.add("", f"Path: {t_path:.1f} s ({path.design}, jerr = {path.jerr}); {path.chosen}.", "")
    t_one, one = timed(lambda: kerndwd.fit(Xtr, ytr, [lam], kern=kern, stop="kkt", eps=EPS))
    dwd_wrong = one.predict(Xte)[:, 0] != yte
    rep.add(f"One fit at the chosen lambda = {lam:.3g} from zero: {t_one:.1f} s, {int(one.npass[0])} Newton "
            f"iterations, kkt {one.kkt[0]:.1e}, test error {dwd_wrong.mean():.4f}.", "")

    rep.add("## SVC, C chosen on the validation rows", "")
    rows, fits = [], {}
    for C in C_GRID:
        t, svc = timed(lambda C=C: SVC(C=C, gamma=sigma, cache_size=2000).fit(Xtr, ytr))
        fits[C] = (t, svc, float(np.mean(svc.predict(Xva) != yva)))
        rows.append([f"{C:g}", f"{t:.1f}", int(svc.n_support_.sum()), f"{fits[C][2]:.4f}",
                     f"{np.mean(svc.predict(Xte) != yte):.4f}"])
    rep.table(["C", "seconds", "support vectors", "validation error", "test error"], rows)
    C_best = min(C_GRID, key=lambda C: (fits[C][2], C))
    t_svc_all = sum(f[0] for f in fits.values())
    svc_wrong = fits[C_best][1].predict(Xte) != yte
    diff, se = mcnemar(dwd_wrong, svc_wrong)
    rep.add("", "## Ratios (same run)", "")
    rep.table(["comparison", "DWD s", "SVC s", "ratio"], [
        [f"one fit: DWD at lambda = {lam:.3g} against SVC at C = {C_best:g}", f"{t_one:.1f}",
         f"{fits[C_best][0]:.1f}", f"{t_one / fits[C_best][0]:.2f}x"],
        [f"model selection: DWD's 10-lambda path against SVC's {len(C_GRID)} fits", f"{t_path:.1f}",
         f"{t_svc_all:.1f}", f"{t_path / t_svc_all:.2f}x"]])
    rep.add("", f"Test error: DWD {dwd_wrong.mean():.4f}, SVC {svc_wrong.mean():.4f}, Bayes {bayes:.4f}; DWD minus "
                f"SVC, paired on the {yte.size} test rows (McNemar): {diff:+.4f}, standard error {se:.4f}.")
    rep.write()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
