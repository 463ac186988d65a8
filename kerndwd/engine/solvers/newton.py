"""A second-order iteration: semismooth (generalized) Newton on ``F``.

At one lambda the iteration minimises

    F(b0, theta) = (1/n) sum_i w_i V_q(y_i f_i) + lambda ||f||^2,          (3.1), (4.2), (6.2)

``f = b0 + B theta``, by Newton steps on the generalized Hessian

    H = Z' diag(d) Z + 2 lambda diag(0, Omega),    d_i = w_i V_q''(y_i f_i) / n,

with ``Z = [1, B]`` and ``||f||^2 = theta' Omega theta``.  ``V_q`` is C^1
and ``V_q'`` is piecewise smooth: ``V_q'' = 0`` up to the knot
``t = q/(q+1)`` and ``(q+1) t^(q+1) u^(-q-2) <= M = (q+1)^2/q`` beyond it
(Lemma 2), so ``H`` is an element of the generalized (Clarke) Hessian of
``F`` and the iteration is the semismooth Newton method.  The systems are
solved by the majoriser's form (:mod:`kerndwd.engine.newton_systems`).

Damping.  ``H`` is singular when no margin lies beyond the knot (the
intercept direction then has no curvature: every path starts there, at
``f = 0``), and nearly so at tiny lambda where few margins do.  Each step
solves the Levenberg-Marquardt system

    (H + mu S) step = -grad F,

with ``S`` the diagonal of the MM majoriser's data curvature
``(M/n) Z'WZ`` (the floor that majoriser puts under every direction, Lemma 2)
and ``mu = min(1, c nu)``, ``nu = sqrt(grad' P^-1 grad)`` for ``P = S + 2
lambda diag(0, Omega)``: the norm of the gradient in the majoriser's
metric, which is dimensionless like ``F``.  ``H + mu S`` is positive
definite whenever ``grad F != 0``; ``mu`` vanishes like ``||grad F||`` at
the optimum, which keeps the local convergence of Newton's method (the
regularised Newton method of Li, Fukushima, Qi & Yamashita, 2004).  ``c``
is adapted as a trust region is (:data:`LM_START`, :data:`LM_SHRINK`,
:data:`LM_GROW`).

Line search.  The step length is the first trial (from 1, following the
secant of the derivative) that satisfies Armijo's condition, certified
either by values of ``F`` or, since ``F`` is convex along the step, by its
derivative (:func:`line_search`), so the objective decreases at every
accepted iteration even where its decrease is below the rounding of ``F``.
The change of ``f`` along the step is one product with the basis, after
which each trial length costs ``O(n)``.

``stop="kkt"`` only (R's step rule belongs to the MM iteration).  When
rounding holds the gradient above ``eps`` the iteration reports that it
stalled, and the template hands the lambda to the MM iteration with
momentum (:mod:`kerndwd.engine.solvers.template`).
"""

from __future__ import annotations

import numpy as np

from ..capabilities import SolverCapabilities
from ..results import stable_norm
from .template import BUDGET, CONVERGED, DIVERGED_STATUS, STALLED, Iteration, Step, register_solver

__all__ = ["NewtonIteration", "line_search", "LM_START", "ARMIJO", "CURVATURE", "STALL_LIMIT"]

#: The damping is ``mu = min(1, c nu)`` (module docstring), with ``c``
#: adapted as a trust region is: it starts at ``LM_START``, shrinks by
#: ``LM_SHRINK`` after a full step (the Newton model was trusted) and grows
#: by ``LM_GROW`` after a shortened one, within ``[LM_MIN, LM_MAX]``.
LM_START = 0.1
LM_SHRINK = 0.25
LM_GROW = 4.0
LM_MIN = 1e-6
LM_MAX = 100.0
#: Armijo's constant: a step of length ``t`` must lower ``F`` by at least
#: ``ARMIJO t |grad' step|``.
ARMIJO = 1e-4
#: A shortened step is long enough once ``phi'`` has risen to ``CURVATURE phi'(0)``
#: (the curvature condition of Wolfe's conditions; see :func:`line_search`).
CURVATURE = 0.9
#: Backtracking gives up after this many trial lengths (the last is below
#: ``0.5^(MAX_BACKTRACK - 1)``): the direction cannot lower ``F`` at this precision.
MAX_BACKTRACK = 60
_EPS = float(np.finfo(float).eps)
#: A lambda is reported stalled after this many Newton iterations in a row
#: that neither lower ``F`` beyond its rounding nor halve the smallest
#: gradient norm seen: the gradient has reached the floor that rounding sets,
#: above ``eps``.
STALL_LIMIT = 8
#: Moves of the concave coordinates to their stationary point per lambda, at most
#: (:meth:`kerndwd.engine.newton_systems.KernelNewton.stationary`; one is usually enough).
STATIONARY_LIMIT = 4


def line_search(objective, f, df, F, slope, lam, pen0, pen1, pen2):
    """A step length along ``step`` that lowers ``F`` by Armijo's rule, or None.

    With ``phi(t) = F(x + t step)`` (``f + t df``; penalty
    ``pen0 + 2 t pen1 + t^2 pen2``), ``t`` is accepted when
    ``phi(t) <= phi(0) + ARMIJO t phi'(0)``, or when
    ``phi'(t) <= ARMIJO phi'(0)``: ``phi`` is convex, so
    ``phi(t) <= phi(0) + t phi'(t)`` and the second test certifies the
    first.  Near the optimum the decrease falls below the rounding of ``F``
    (a gradient of 1e-9 lowers ``F`` by about 1e-18) while ``phi'`` is
    still computed accurately, so the second test keeps certifying full
    Newton steps there.

    Trial lengths start at 1.  While every trial fails they follow a secant
    of ``phi'`` towards the root of ``phi'(t) - ARMIJO phi'(0)``: through
    the last two trials, or from ``(0, phi'(0))`` after the first (and
    where ``phi'`` took one value at both).  A shortened length that passes
    is returned once ``phi'`` has risen there to ``CURVATURE phi'(0)``
    (Wolfe's curvature condition); short of that, the search goes on
    between it and the shortest failed trial (by the secant through two
    failed trials when it falls inside, else by bisection) and returns the
    first length in that window, or the longest that passed.  That matters
    where ``phi'`` has a kink: ``V_q'`` is constant up to the knot, so
    along a step that carries a margin across it ``phi'`` keeps its
    initial value up to the crossing and rises steeply after it, and the
    first passing trial lies anywhere short of the crossing.  Taking it
    moved the margin a fraction of the way per iteration (found at q = 27
    on five rows: a gradient of 1e-10, all of it along the intercept,
    crept towards the knot for 300000 passes); the window lies just past
    the crossing, where the margin gains the curvature that Newton's
    model lacked.

    Returns ``(t, phi(t), penalty at t)`` or None when no trial passed.
    """
    t = 1.0
    target = ARMIJO * slope
    floor = CURVATURE * slope
    passed = None  # (t, phi(t), penalty) of the longest passing trial short of the window
    failed = []  # (t, phi'(t)) of the trials that failed, the last one the shortest
    for _ in range(MAX_BACKTRACK):
        data, data_slope = objective.along(f, df, t)
        pen = pen0 + t * (2.0 * pen1 + t * pen2)
        value = data + lam * pen
        deriv = data_slope + 2.0 * lam * (pen1 + t * pen2)
        if value <= F + target * t or deriv <= target:
            if deriv >= floor or not failed:
                return t, value, pen
            passed = (t, value, pen)
        else:
            failed.append((t, deriv))
        t = _next_trial(failed, passed, slope, target)
    return passed


def _next_trial(failed, passed, slope, target):
    """The next trial length of :func:`line_search`.  Every failed trial has
    ``phi' > target > phi'(0) = slope`` and ``phi'`` is nondecreasing, so the
    root of ``phi' - target`` lies below the shortest failed trial ``b``."""
    b, db = failed[-1]
    if len(failed) > 1 and failed[-2][1] > db:
        a, da = failed[-2]
    else:  # one failed trial, or phi' flat between the last two: the secant from the origin
        a, da = 0.0, slope
    if passed is None:
        # each trial at least 1/100 of the last and at most half of it (0.9 after the first),
        # so MAX_BACKTRACK trials reach any length
        guess = b - (b - a) * (db - target) / (db - da)
        return min(max(guess, 0.01 * b), (0.9 if b == 1.0 else 0.5) * b)
    # towards the middle of the window, CURVATURE phi'(0) <= phi' <= ARMIJO phi'(0)
    middle = 0.5 * (CURVATURE * slope + target)
    guess = b - (b - a) * (db - middle) / (db - da)
    low = passed[0]
    if a == 0.0 or not low < guess < b:  # no secant through two failed trials inside the window
        guess = 0.5 * (low + b)
    return guess


class NewtonIteration(Iteration):
    """Semismooth Newton at one lambda (module docstring), in the coordinates of
    the majoriser's Newton system."""

    name = "newton"
    capabilities = SolverCapabilities(stop_rules=("kkt",), storage=("dense", "sparse"), momentum=False,
                                      fallback="mm")

    def __init__(self, majoriser, problem, objective):
        system = majoriser.newton_system()
        super().__init__(majoriser, problem, objective, space=system)
        self.system = system
        loss, n = majoriser.loss, majoriser.n
        w_n = (np.ones(n) if loss.weights is None else loss.weights) / n
        self.curvature_bound = loss.lipschitz * max(float(w_n.max()), np.finfo(float).tiny)
        self.damping = LM_START

    def penalty(self):
        return self.system.penalty(self.coord, self.f)

    def _state(self, x, f, lam):
        """``(z, d, g)``: the data term's first and second derivatives in ``f`` (over
        ``n``) and ``grad F`` in the system's coordinates."""
        n = self.majoriser.n
        z, d = self.objective.derivatives_and_curvatures(f)
        z /= n
        g = self.system.data_gradient(z)
        g[1:] += 2.0 * lam * self.system.penalty_direction(x, f)
        return z, d / n, g

    def run(self, l, lam, remaining, callback):
        system, objective, eps = self.system, self.objective, self.problem.eps
        system.set_lambda(lam, self.curvature_bound)
        metric = system.scale.copy()  # the diagonal of the majoriser's Hessian (divided by n)
        metric[1:] += 2.0 * lam * np.maximum(system.pen, 0.0)
        live = metric > 0.0  # null directions of K (and an indefinite diagonal) carry no metric
        inv_metric = np.zeros_like(metric)
        inv_metric[live] = 1.0 / metric[live]
        x, f = self.coord, self.f
        pen = system.penalty(x, f)
        F = objective.value(f, pen, lam)
        z, d, g = self._state(x, f, lam)
        best, stalled, settled, passes = np.inf, 0, 0, 0
        status = None
        while True:
            gnorm = stable_norm(g)
            if not (np.isfinite(gnorm) and np.isfinite(F)):
                status = DIVERGED_STATUS
                break
            moved = system.stationary(x, z, g, lam, eps) if settled < STATIONARY_LIMIT else None
            if moved is not None:  # coordinates along which F is concave: to their stationary point
                settled += 1
                x, f = moved[0], f + moved[1]
                pen = system.penalty(x, f)
                F = objective.value(f, pen, lam)
                z, d, g = self._state(x, f, lam)
                if callback is not None:
                    self.coord, self.f = x, f
                    callback(Step(l, lam, "stationary", f, self))
                continue
            if gnorm <= eps and not self._must_step:
                status = CONVERGED
                break
            self._must_step = False
            passes += 1
            nu = float(np.sqrt((g * g) @ inv_metric))
            mu = min(1.0, self.damping * nu)
            try:
                step, df = system.direction(x, g, d, lam, mu, min(0.1, np.sqrt(gnorm)), z=z)
            except FloatingPointError:  # the curvature overflowed
                status = DIVERGED_STATUS
                break
            slope = float(g @ step)
            pen1, pen2 = system.cross_penalty(x, step, f, df)
            found = line_search(objective, f, df, F, slope, lam, pen, pen1, pen2) if slope < 0.0 else None
            if found is None:
                found = (0.0, F, pen)  # no length passes: counts as a stalled iteration
            self.damping = (max(self.damping * LM_SHRINK, LM_MIN) if found[0] == 1.0
                            else min(self.damping * LM_GROW, LM_MAX))
            progress = found[1] < F - 8.0 * _EPS * abs(F) or gnorm < 0.5 * best
            best = min(best, gnorm)
            stalled = 0 if progress else stalled + 1
            if stalled >= STALL_LIMIT:
                status = STALLED
                break
            t, F, pen = found
            x = x + t * step
            f = f + t * df
            z, d, g = self._state(x, f, lam)
            if callback is not None:
                self.coord, self.f = x, f
                callback(Step(l, lam, "newton", f, self))
            if passes > remaining:
                status = BUDGET
                break
        self.coord, self.f = x, f
        return status, passes


register_solver(NewtonIteration)
