"""A certified bound on how far a returned fit is from the optimum.

For intercept-first coefficients ``(b, theta)`` at penalty ``lambda``, let
``h(theta) = min_b F(b, theta)``.  The data term of (3.1)/(4.2)/(6.2) is
convex, and the penalty ``lambda ||f||^2`` is ``2 lambda``-strongly convex in
the norm it defines (``theta' theta``, or ``theta' K theta``), so ``h`` is
``2 lambda``-strongly convex in that norm too, and

    F(b, theta) - F*  <=  [F(b, theta) - h(theta)]  +  ||grad h(theta)||_*^2 / (4 lambda),

where ``||.||_*`` is the dual norm (``g' g`` for the linear form;
``v' K v`` when ``g = K v`` for the kernel form) and ``grad h(theta)`` is the
gradient in ``theta`` at the best intercept ``b*(theta)``.  Both terms are
computable in one pass over the data after a one-dimensional search for
``b*``: the bound costs about two MM passes, whatever the solver.

It is an upper bound, never an estimate: a large value says "possibly far",
a small one "certainly close".  The R package's stopping rule (a small
squared step) gives no such guarantee; ``kerndwd.fit`` reports this bound
for every column and warns when it is large (see :data:`GAP_WARNING`).
"""

from __future__ import annotations

import numpy as np

__all__ = ["objective_gap_bounds", "GAP_WARNING"]

#: Relative bound (to the returned objective) above which a fit stopped by
#: R's rule is reported as possibly far from optimal.  Measured on the R
#: fixtures, Table 1's examples and random designs (q from 0.5 to 100,
#: lambda from 10 to 1e-3): every column whose true gap exceeded 10% had a
#: bound above 0.1, and the bound exceeded 0.1 with a true gap below 0.5%
#: only at the smallest lambdas of ordinary paths (the bound grows like
#: 1/lambda), so the warning does not fire on fits that are merely
#: R-accurate.
GAP_WARNING = 0.1

#: Newton steps of the search for the best intercepts (each O(n L)); the
#: search keeps a bracket of each minimiser and bisects when Newton would
#: leave it, so it ends in far fewer steps than this.
_MAX_STEPS = 200


def _slope_and_curvature(b, applied, objective):
    """First and second derivatives in the intercepts ``b`` (one per column of
    ``applied``) of the data term."""
    z, d = objective.derivatives_and_curvatures(b[None, :] + applied)
    return z.mean(axis=0), d.mean(axis=0)


def _slope_tolerance(objective):
    """Below this slope in the intercept, an intercept is taken as its minimiser."""
    weights = objective.loss.weights
    return 1e-14 * (1.0 if weights is None else float(np.mean(weights)))


def _best_intercepts(b, applied, objective):
    """The minimisers over the intercept of the (convex) data term, one per
    column, ``theta`` fixed.  Newton's method from the returned intercepts,
    kept inside the bracket the slope's sign has established (the slope is
    non-decreasing in ``b``): outside it, bisect, or, while one side is still
    open, step against the slope by the distance from the start (at least 1),
    which doubles that distance; while a side is open Newton's step is taken
    only when it is no longer than that.  Only the columns not yet settled
    are evaluated.  Called inside :func:`objective_gap_bounds`, whose
    ``np.errstate`` covers the overflow of extreme decision values."""
    x = b.copy()  # float: a row of the coefficients
    lo = np.full_like(x, -np.inf)
    hi = np.full_like(x, np.inf)
    active = np.arange(x.size)
    tol = _slope_tolerance(objective)
    for _ in range(_MAX_STEPS):  # ``active`` stays non-empty: all done ends the loop
        xa = x[active]
        slope, curv = _slope_and_curvature(xa, applied[:, active], objective)
        lo_a, hi_a = lo[active], hi[active]
        lo_a = np.where(slope < 0, xa, lo_a)
        hi_a = np.where(slope > 0, xa, hi_a)
        lo[active], hi[active] = lo_a, hi_a
        done = (np.abs(slope) <= tol) | (hi_a - lo_a <= 1e-15 * np.maximum(1.0, np.abs(xa)))
        if done.all():
            break
        newton = xa - slope / np.where(curv > 0, curv, np.nan)
        bracketed = np.isfinite(lo_a) & np.isfinite(hi_a)
        reach = np.maximum(1.0, np.abs(xa - b[active]))
        # Newton's point inside the bracket; while a side is open, no farther than a step out
        # (on the loss's far tail a tiny curvature would send it beyond any bisection's reach)
        inside = np.isfinite(newton) & (newton > lo_a) & (newton < hi_a) & (bracketed | (np.abs(newton - xa) <= reach))
        outward = xa - np.sign(slope) * reach
        x[active] = np.where(done, xa, np.where(inside, newton, np.where(bracketed, 0.5 * (lo_a + hi_a),
                                                                          outward)))
        active = active[~done]
    return x


def objective_gap_bounds(objective, alpha, lambdas, decisions=None, gradients=None):
    """Upper bounds on ``F(alpha_j) - F*`` at ``lambdas[j]``, one per column of
    ``alpha`` (see the module docstring).

    Parameters
    ----------
    objective : Objective
        ``F`` on the training rows (its form's ``dual_norm_sq`` gives the dual norm).
    alpha : ndarray of float, shape (ncoef, L)
        Intercept-first coefficients, one column per lambda (``L >= 1``).
    lambdas : ndarray of float, shape (L,)
    decisions : ndarray, shape (n, L), optional
        The decision values of the columns, when the caller has them.
    gradients : ndarray, shape (ncoef, L), optional
        The objective's gradient at each column (intercept first), when the
        caller has it.  When every intercept slope (the first row) is already
        below rounding, the columns are at their best intercepts: the search
        is skipped, and where the form reads the dual norm from the gradient
        (:meth:`kerndwd.engine.forms.Form.gradient_dual_norm_sq`) the bound
        takes no pass over the rows.

    Returns
    -------
    ndarray, shape (L,)
        ``>= 0``; ``inf`` where the bound cannot be formed in double precision.
    """
    form = objective.form
    theta = alpha[1:]
    b = alpha[0]
    at_start = gradients is not None and np.abs(gradients[0]).max() <= _slope_tolerance(objective)
    with np.errstate(over="ignore", invalid="ignore"):
        dual = form.gradient_dual_norm_sq(gradients[1:]) if at_start else None
        if dual is not None:  # at the best intercepts, and the gradient gives the dual norm
            return _finite_or_inf(dual / (4.0 * lambdas))
        if decisions is None:
            applied = form.apply(theta)
            decisions = b[None, :] + applied
        if at_start:  # every column is at its best intercept: the first term is 0
            gap, z = 0.0, objective.derivative(decisions)
        else:
            applied = decisions - b[None, :]
            b_star = _best_intercepts(b, applied, objective)
            at_best, z = objective.data_term_and_derivative(b_star[None, :] + applied)
            values = at_best if np.array_equal(b_star, b) else objective.data_term(b[None, :] + applied)
            gap = np.maximum(values - at_best, 0.0)
        if alpha.shape[1] == 1 and isinstance(z, np.ndarray):  # one column in memory: as vectors
            dual = form.dual_norm_sq(z[:, 0] / form.n, theta[:, 0], lambdas[0])  # broadcast by lambdas
        else:
            dual = form.dual_norm_sq(z / form.n, theta, lambdas)
        bound = gap + dual / (4.0 * lambdas)
    return _finite_or_inf(bound)


def _finite_or_inf(bound):
    """The bounds, with ``inf`` wherever rounding left one not finite (NaN included)."""
    return np.where(np.isfinite(bound), bound, np.inf)
