"""Class probabilities on Figure 1's mixture: the Brier score of DWD's
probabilities beside an SVC with Platt scaling.

``python -m vignettes.probabilities [--draws 10] [--n-per-class 100] [--seed 0]``

On the two-class Gaussian mixture of Figure 1 (``kerndwd.datasets``) the
true class probability ``eta(x) = P(Y = +1 | x)`` is known, so the Brier
score ``mean (p - 1{y = +1})^2`` of each method can be set against that of
``eta`` itself (the smallest any method can reach) and the mean squared
distance to ``eta`` read directly.  Each draw trains on ``2 n-per-class``
rows and scores on 10^4 test rows drawn once.  Every method uses the
Gaussian kernel ``exp(-||x - x'||^2)`` (``rbfdot(1)``, ``gamma = 1``) and
chooses its regularisation by 5-fold cross-validation on the training rows:

* DWD, Platt: ``DWDClassifierCV(probability=True)`` -- lambda by
  cross-validated misclassification over its default grid, then Platt's
  sigmoid fitted to held-out decision values (5 folds);
* DWD, inverse of (4.4): the same chosen fit, its decision values mapped by
  the inverse of the population minimiser (``kerndwd.conditional_probability``);
* SVC, Platt: ``CalibratedClassifierCV(GridSearchCV(SVC(), C in 10^(-2..3)),
  method="sigmoid", ensemble=False)`` -- C by 5-fold cross-validated accuracy,
  Platt's sigmoid fitted to 5-fold held-out decision values (scikit-learn's
  replacement for ``SVC(probability=True)``).

Writes ``vignettes/output/probabilities.md``.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

import kerndwd
from kerndwd import DWDClassifierCV, datasets

from . import command_line, machine_description, output_dir

N_TEST = 10_000
METHODS = ("DWD, Platt", "DWD, inverse of (4.4)", "SVC, Platt", "true eta")


def one_draw(model, n_per_class, seed, X_test):
    from sklearn.calibration import CalibratedClassifierCV
    from sklearn.model_selection import GridSearchCV
    from sklearn.svm import SVC

    X, y = model.sample(n_per_class, random_state=seed)
    dwd = DWDClassifierCV(kernel="rbf", gamma=1.0, probability=True, random_state=seed).fit(X, y)
    p_platt = dwd.predict_proba(X_test)[:, list(dwd.classes_).index(1)]
    link = dwd.decision_function(X_test)
    p_inverse = kerndwd.conditional_probability(link, dwd.q_)
    search = GridSearchCV(SVC(kernel="rbf", gamma=1.0), {"C": 10.0 ** np.arange(-2, 4)}, cv=5)
    svc = CalibratedClassifierCV(search, method="sigmoid", cv=5, ensemble=False).fit(X, y)
    p_svc = svc.predict_proba(X_test)[:, list(svc.classes_).index(1)]
    best_C = svc.calibrated_classifiers_[0].estimator.best_params_["C"]
    return {"DWD, Platt": p_platt, "DWD, inverse of (4.4)": p_inverse, "SVC, Platt": p_svc,
            "lambda": dwd.lambda_, "C": float(best_C)}


def run(draws, n_per_class, seed):
    model = datasets.GaussianMixture(datasets.FIGURE1_CENTRES_SEED)
    X_test, y_test = model.sample(N_TEST // 2, random_state=seed + 10_000)
    eta = model.posterior(X_test)
    truth = (y_test > 0).astype(float)
    scores = {name: [] for name in METHODS}
    distance = {name: [] for name in METHODS}
    chosen = []
    for r in range(draws):
        probs = one_draw(model, n_per_class, seed + r, X_test)
        probs["true eta"] = eta
        for name in METHODS:
            scores[name].append(float(np.mean((probs[name] - truth) ** 2)))
            distance[name].append(float(np.mean((probs[name] - eta) ** 2)))
        chosen.append((probs["lambda"], probs["C"]))
    return scores, distance, chosen


def markdown(scores, distance, chosen, header):
    def mean_se(v):
        v = np.asarray(v)
        return v.mean(), v.std(ddof=1) / np.sqrt(v.size) if v.size > 1 else float("nan")

    platt, svc = np.asarray(scores["DWD, Platt"]), np.asarray(scores["SVC, Platt"])
    inverse = np.asarray(scores["DWD, inverse of (4.4)"])
    diff, diff_se = mean_se(platt - svc)
    floor = np.mean(scores["true eta"])
    lines = ["# Class probabilities: Brier scores on Figure 1's mixture", "", "## In short", "",
             f"Over {len(platt)} training draws, DWD's Platt-scaled probabilities scored a mean Brier score of "
             f"{platt.mean():.4f} against {svc.mean():.4f} for an SVC with Platt scaling (paired difference "
             f"{diff:+.4f}, standard error {diff_se:.4f}); the true probability scores {floor:.4f}, the floor "
             "no method can pass. The inverse of (4.4), which maps the band |f| <= q/(q+1) to 1/2, scored "
             f"{inverse.mean():.4f}, {'worse' if inverse.mean() > platt.mean() else 'no worse'} than Platt's "
             "sigmoid on the same fits.", "",
             "## How it was run", ""] + header + ["",
             "| method | mean Brier score | se | mean squared distance to eta | se |", "|---|---|---|---|---|"]
    for name in METHODS:
        b, bse = mean_se(scores[name])
        d, dse = mean_se(distance[name])
        lines.append(f"| {name} | {b:.4f} | {bse:.4f} | {d:.4f} | {dse:.4f} |")
    lam = [c[0] for c in chosen]
    C = [c[1] for c in chosen]
    lines += ["", f"Chosen lambda (DWD) per draw: {', '.join(f'{v:.3g}' for v in lam)}; "
              f"chosen C (SVC): {', '.join(f'{v:g}' for v in C)}."]
    return "\n".join(lines) + "\n"


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python -m vignettes.probabilities", description=__doc__.split("\n")[0])
    ap.add_argument("--draws", type=int, default=10)
    ap.add_argument("--n-per-class", type=int, default=100)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", default=None, help="output folder (default vignettes/output)")
    args = ap.parse_args(argv)
    t0 = time.perf_counter()
    scores, distance, chosen = run(args.draws, args.n_per_class, args.seed)
    header = [f"- Command: `{command_line('vignettes.probabilities', argv)}`",
              f"- Machine: {machine_description()}; took {time.perf_counter() - t0:.0f} s.",
              f"- Data: {2 * args.n_per_class} training rows per draw (seeds {args.seed}..{args.seed + args.draws - 1}), "
              f"{N_TEST} test rows (seed {args.seed + 10_000}); kernel exp(-||x - x'||^2) for both methods."]
    text = markdown(scores, distance, chosen, header)
    md = output_dir(args.out) / "probabilities.md"
    md.write_text(text)
    print(text)
    print(f"wrote {md}")


if __name__ == "__main__":
    main()
