"""The engine as the tests drive it: one path solver at a time, with a callback
that sees each iterate in the solver's own coordinates.

These are the engine's public pieces (:func:`kerndwd.engine.run_path`, the
:class:`~kerndwd.engine.Objective`), with the path solver fixed and the
:class:`~kerndwd.engine.Step` a callback receives unpacked the way the tests
record it.
"""

from dataclasses import replace

import numpy as np

from kerndwd.engine import FactorCache, Objective, build_majoriser, run_path


def evaluate(form, alpha, y, loss, lam):
    """``(f, F, grad F)`` at intercept-first ``alpha`` (the template's own evaluation)."""
    return Objective(form, y, loss).evaluate(alpha, lam)


def majoriser_of(problem):
    """The majoriser the problem's design builds, with a fresh cache."""
    return build_majoriser(problem, FactorCache(problem.X, problem.kern))


def mm_path(majoriser, problem, callback=None):
    """The path by the MM iteration; ``callback(l, lam, coord, f)`` after each pass,
    ``coord`` in the majoriser's coordinates."""
    hook = None if callback is None else (lambda step: callback(step.l, step.lam, step.iteration.coord, step.f))
    return run_path(majoriser, replace(problem, method="mm"), hook)


def newton_path(majoriser, problem, callback=None):
    """The path by semismooth Newton (the template hands a stalled lambda to MM);
    ``callback(l, lam, alpha, f, kind)`` after each move of either solver."""
    hook = None if callback is None else (lambda step: callback(step.l, step.lam, step.alpha, step.f, step.kind))
    return run_path(majoriser, replace(problem, method="newton"), hook)


def first_order_bound(kern, X, y, wt, f_opt, lam, q=1.0):
    """``||[1, I] T^-1||_2`` at the optimum ``f_opt`` of kernel DWD with ``kern``:
    the decision values of two fits whose gradient norms are ``g1`` and ``g2``
    differ by at most twice this times ``g1 + g2`` (to first order; see
    tests/test_bcd.py)."""
    n = X.shape[0]
    knot = q / (q + 1.0)
    margins = np.where(y > 0, 1.0, -1.0) * f_opt
    curvature = np.where(margins > knot, (q + 1.0) * knot ** (q + 1.0) / np.maximum(margins, knot) ** (q + 2.0), 0.0)
    d = curvature * (1.0 if wt is None else wt) / n
    Z = np.hstack([np.ones((n, 1)), kern(X)])
    ones_eye = np.hstack([np.ones((n, 1)), np.eye(n)])
    T = Z.T @ (d[:, None] * ones_eye)
    T[1:, 1:] += 2.0 * lam * np.eye(n)
    return np.linalg.norm(np.linalg.solve(T.T, ones_eye.T).T, 2)
