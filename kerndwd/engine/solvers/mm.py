"""The majorization-minimization (MM) iteration: Algorithms 1 and 2 of the paper.

Each pass moves to the minimiser of the quadratic majoriser of ``n F`` at
the current point (the majoriser's step function, see
:class:`kerndwd.engine.majorisers.Majoriser`).  At one lambda the iteration
follows the R package exactly: stop when the squared norm of the step is
below ``eps`` (``stop="step"``), tested after the step.  Beyond R:

* ``stop="kkt"`` stops as soon as ``||grad F|| <= eps`` at the current point
  (the extrapolated one under momentum), a by-product of the step; the
  template confirms it on recomputed decision values and returns that
  point, so every returned column satisfies the test it was stopped by;
* ``accelerate`` adds Nesterov momentum: each pass is a majoriser step from
  the extrapolated point ``theta + beta (theta - theta_prev)`` (decision
  values extrapolate linearly, so a pass costs the same), with a restart
  from the last iterate whenever the objective would rise, so the objective
  never increases, and the passes fall roughly from the condition number of
  the problem to its square root.  It changes the iterates, so it is off for
  R's iteration.

The iteration runs on any majoriser, rows in memory or on a Dask cluster
(the form keeps each new iterate's decision values where the rows are:
:meth:`kerndwd.engine.forms.Form.keep_rows`).
"""

from __future__ import annotations

import numpy as np

from ..capabilities import STOP_RULES, STORAGE_KINDS, SolverCapabilities
from .template import BUDGET, CONVERGED, DIVERGED_STATUS, Iteration, Step, register_solver

__all__ = ["MMIteration"]


class MMIteration(Iteration):
    """MM passes at one lambda (module docstring)."""

    name = "mm"
    capabilities = SolverCapabilities(stop_rules=STOP_RULES, storage=STORAGE_KINDS, momentum=True)

    def penalty(self):
        return self.majoriser.penalty_at(self.coord, self.f)

    def run(self, l, lam, remaining, callback):
        majoriser, objective, problem = self.majoriser, self.objective, self.problem
        keep_rows = majoriser.form.keep_rows
        step_fn = majoriser.at_lambda(lam)
        y, eps = problem.y, problem.eps
        check_gradient, accelerate = problem.stop == "kkt", problem.accelerate
        needs_decisions = majoriser.needs_decisions
        coord, f = self.coord, self.f
        passes = 0
        if accelerate:
            coord_prev, f_prev, t = coord.copy(), f.copy(), 1.0
            obj = objective.value(f, majoriser.penalty_at(coord, f), lam)
        while True:
            if accelerate:
                t_next = 0.5 * (1.0 + np.sqrt(1.0 + 4.0 * t * t))
                beta = (t - 1.0) / t_next
                base = coord + beta * (coord - coord_prev)
                f_base = f + beta * (f - f_prev)
            else:
                base, f_base = coord, f
            z = objective.derivative(f_base)
            if needs_decisions:
                step, df, grad_sq = step_fn(z, base, f=f_base, y=y)
            else:
                step, df, grad_sq = step_fn(z, base)
            passes += 1
            step_sq = step @ step  # finite: every entry is (and R's rule reads it below)
            if not (step_sq < np.inf or np.isfinite(step).all()):
                self.coord, self.f = coord, f
                return DIVERGED_STATUS, passes
            if check_gradient and grad_sq <= eps * eps:
                # the point the gradient was taken at is returned as it is (not the step
                # from it), so it satisfies the test; the template confirms it
                self.coord, self.f = base, f_base
                return CONVERGED, passes
            if accelerate:
                new_coord, new_f = base + step, keep_rows(f_base + df)
                new_obj = objective.value(new_f, majoriser.penalty_at(new_coord, new_f), lam)
                if new_obj > obj and beta > 0.0:
                    # momentum overshot: restart from the last iterate with a plain MM step
                    coord_prev, f_prev, t = coord, f, 1.0
                    if passes > remaining:
                        self.coord, self.f = coord, f
                        return BUDGET, passes
                    continue
                coord_prev, f_prev = coord, f
                coord, f, obj, t = new_coord, new_f, new_obj, t_next
            else:
                coord += step
                f += df
                f = keep_rows(f)
            if callback is not None:
                self.coord, self.f = coord, f
                callback(Step(l, lam, "mm", f, self))
            if passes > remaining:
                self.coord, self.f = coord, f
                return BUDGET, passes
            if not check_gradient and step_sq < eps:
                self.coord, self.f = coord, f
                return CONVERGED, passes


register_solver(MMIteration)
