"""``python -m kerndwd``: a first DWD fit on simulated data, explained as it runs.

``python -m kerndwd --help`` lists the options.
"""

from __future__ import annotations

import argparse
import sys

import numpy as np

import kerndwd


def not_the_package(module):
    """Why ``module`` (what ``import kerndwd`` gave) is not the package, or None
    when it is.  From the folder above a clone named ``kerndwd``, the clone (no
    ``__init__.py`` at its top) is found first on ``sys.path`` and imported as an
    empty namespace package, while an editable install still finds this file."""
    if getattr(module, "__file__", None) is not None and hasattr(module, "fit"):
        return None
    where = ", ".join(str(p) for p in getattr(module, "__path__", [])) or "?"
    return (f"python -m kerndwd: the 'kerndwd' imported here is the folder {where}, a namespace package (a folder "
            "without __init__.py, e.g. a clone of the repository), not the kerndwd package: Python looks in the "
            "current directory first. Run it from another directory (e.g. inside the clone), or rename that folder.")

INTRO = """\
A kernel DWD path on simulated data: {n} points in 2-D, labelled +1 outside a
noisy circle of radius about 1.2 and -1 inside, with the Gaussian kernel
rbfdot(sigma={sigma:g}) and q = {q:g}.  kerndwd.fit fits one decision function
per lambda (largest first, each warm-started from the previous one), as the R
package kerndwd does, with R's stopping rule.
"""

EXPLAIN = """\
How to read the columns:
- training error: the share of the {n} training points on the wrong side.
  It falls as lambda falls, since a smaller penalty lets the fit bend more.
- ||grad||: the norm of the gradient of the DWD objective at the returned
  fit; 0 at the optimum.  R's default rule (stop="step", eps=1e-5) stops when
  a step gets small, which at small lambda can be far from 0.  For fits that
  are optimal to a tolerance you choose, use
      kerndwd.fit(X, y, lambdas, kern, stop="kkt", eps=1e-8)
  (right below: the same path with that rule).
"""


def _table(path, X, y):
    err = (kerndwd.predict(path, X) != y[:, None]).mean(axis=0)
    lines = [f"{'lambda':>10} {'training error':>15} {'||grad||':>10} {'MM passes':>10}"]
    for lam, e, k, p in zip(path.lambda_, err, path.kkt, path.npass):
        lines.append(f"{lam:10.4g} {e:15.3f} {k:10.2e} {p:10d}")
    return "\n".join(lines)


def main(argv=None):
    why = not_the_package(kerndwd)
    if why is not None:
        sys.exit(why)
    ap = argparse.ArgumentParser(prog="python -m kerndwd", description=__doc__.split("\n")[0])
    ap.add_argument("--n", type=int, default=200, help="number of simulated points (default 200)")
    ap.add_argument("--sigma", type=float, default=1.0, help="rbfdot's sigma (default 1)")
    ap.add_argument("--q", type=float, default=1.0, help="the loss exponent q > 0 (default 1)")
    ap.add_argument("--seed", type=int, default=0, help="seed of the simulated data (default 0)")
    args = ap.parse_args(argv)
    if args.n < 4:
        ap.error("--n must be at least 4")
    rng = np.random.default_rng(args.seed)
    X = rng.standard_normal((args.n, 2))
    y = np.where((X**2).sum(axis=1) + 0.4 * rng.standard_normal(args.n) > 1.4, 1, -1)
    lambdas = 10.0 ** np.linspace(1, -3, 10)
    kern = kerndwd.rbfdot(sigma=args.sigma)
    print(INTRO.format(n=args.n, sigma=args.sigma, q=args.q))
    path = kerndwd.fit(X, y, lambdas, kern=kern, qval=args.q)
    print(path)
    print(_table(path, X, y))
    print()
    print(EXPLAIN.format(n=args.n))
    tight = kerndwd.fit(X, y, lambdas, kern=kern, qval=args.q, stop="kkt", eps=1e-8)
    print('The same path with stop="kkt", eps=1e-8:')
    print(_table(tight, X, y))
    return path, tight


if __name__ == "__main__":
    main()
