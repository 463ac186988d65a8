"""The engine as the tests drive it: one path solver at a time, with a callback
that sees each iterate in the solver's own coordinates.

These are the engine's public pieces (:func:`kerndwd.engine.run_path`, the
:class:`~kerndwd.engine.Objective`), with the path solver fixed and the
:class:`~kerndwd.engine.Step` a callback receives unpacked the way the tests
record it.
"""

from dataclasses import replace

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
