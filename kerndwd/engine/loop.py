"""The one majorization-minimization (MM) loop behind every DWD fit.

:func:`mm_path` runs any :class:`kerndwd.engine.contract.Majoriser` along
the problem's decreasing lambdas and follows the R package's iteration
exactly: zero start, warm starts along the path, stop a lambda when the
squared norm of the step is below ``eps``, and ``maxit`` as a budget on the
total passes of the whole path.  Options beyond R: a stopping rule on the
gradient norm (``stop="kkt"``) and Nesterov momentum with restarts.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

__all__ = ["PathResult", "mm_path", "evaluate", "run_path", "register_method", "method_names", "default_method",
           "STOP_RULES"]

#: Stopping rules: R's (squared norm of the MM step below ``eps``) and a real
#: optimality criterion (norm of the gradient of ``F`` below ``eps``).
STOP_RULES = ("step", "kkt")

#: Path solvers by name: ``fn(majoriser, problem) -> PathResult``.  Every one
#: runs on a majoriser (its form, loss and predictor) along the problem's
#: lambdas; ``"mm"`` is the MM iteration itself.
_METHODS = {}


def register_method(name, fn):
    """Make ``fn(majoriser, problem) -> PathResult`` selectable as ``method=name``."""
    _METHODS[name] = fn
    return fn


def method_names():
    return sorted(_METHODS)


def default_method(stop):
    """The path solver used when the caller names none: the MM iteration (R's
    iterates under R's rule)."""
    return "mm"


def run_path(majoriser, problem):
    """Fit ``problem`` along its lambdas with its path solver (``problem.method``)."""
    return _METHODS[problem.method](majoriser, problem)


@dataclass
class PathResult:
    """What :func:`mm_path` returns (coefficients intercept first, one column per
    finished lambda)."""

    alpha: np.ndarray
    lambdas: np.ndarray
    npass: np.ndarray
    jerr: int
    objective: np.ndarray = field(default_factory=lambda: np.zeros(0))
    kkt: np.ndarray = field(default_factory=lambda: np.zeros(0))
    #: when ``jerr != 0``: ``(alpha, objective, kkt)`` of the last iterate at the
    #: lambda the budget ran out on (R drops it; scikit-learn-style callers keep it)
    unfinished: tuple | None = None


def evaluate(form, alpha, y, loss, lam):
    """Decision values ``f``, the objective ``F`` and its gradient with respect to
    ``(b0, theta)`` at intercept-first coefficients ``alpha``, with one product
    by the form each way."""
    theta = alpha[1:]
    applied = form.apply(theta)
    f = alpha[0] + applied
    margins = y * f
    values = loss.value(margins)
    z = y * loss.deriv(margins)
    if loss.weights is not None:
        values = loss.weights * values
        z = loss.weights * z
    n = form.n
    value = float(np.mean(values)) + lam * form.penalty(theta, applied)
    grad = np.concatenate(([z.sum() / n], form.apply_t(z) / n + lam * form.penalty_grad(theta, applied)))
    return f, value, grad


def _where_it_is(rows):
    """The default of a form's ``keep_rows``: per-row vectors in memory stay as they are."""
    return rows


def mm_path(majoriser, problem, callback=None):
    """Run the MM iteration of ``majoriser`` along ``problem.lambdas``.

    From ``problem`` it reads the labels ``y`` (+-1), the lambdas (sorted
    decreasing), ``eps``, ``maxit``, the stopping rule ``stop`` and
    ``accelerate``; the loss comes from ``majoriser.loss``.

    ``stop="step"`` is the R package's test (``||step||^2 < eps``), applied
    after the step; ``stop="kkt"`` stops as soon as ``||grad F|| <= eps`` at
    the current point (the extrapolated one under momentum) and returns that
    point, so the returned columns satisfy the test they were stopped by.

    ``accelerate`` adds Nesterov momentum to the MM step (each pass is a
    majoriser step from the extrapolated point ``theta + beta (theta -
    theta_prev)``; decision values extrapolate linearly, so a pass costs the
    same), with a restart whenever the objective would rise: the objective
    never increases, and the number of passes falls roughly from the
    condition number of the problem to its square root.  It changes the
    iterates, so it is off for R's iteration.

    ``callback(l, lam, coord, f)``, when given, is called after each pass
    that moves to a new iterate (for tests that record the objective).
    """
    loss, form = majoriser.loss, majoriser.form
    # a form whose rows live elsewhere (a Dask cluster) stores each new iterate's f there
    keep_rows = getattr(form, "keep_rows", _where_it_is)
    y, lambdas, eps, maxit = problem.y, problem.lambdas, problem.eps, problem.maxit
    check_gradient, accelerate = problem.stop == "kkt", problem.accelerate
    nlam = len(lambdas)
    wy = loss.weighted_labels(y)
    coord = majoriser.zero()
    f = np.zeros_like(y, dtype=float)  # chunked like y when the rows are a Dask array
    npass = np.zeros(nlam, dtype=int)
    cols, objs, kkts = [], [], []
    total = 0
    jerr = 0
    unfinished = None

    def current_objective(c, fv, lam):
        return loss.mean(y * fv) + lam * majoriser.penalty_at(c, fv)

    for l, lam in enumerate(lambdas):
        step_fn = majoriser.at_lambda(lam)
        if accelerate:
            coord_prev, f_prev, t = coord.copy(), f.copy(), 1.0
            obj = current_objective(coord, f, lam)
        done = None  # (alpha, objective, gradient) when already evaluated at the end
        while True:
            if accelerate:
                t_next = 0.5 * (1.0 + np.sqrt(1.0 + 4.0 * t * t))
                beta = (t - 1.0) / t_next
                base = coord + beta * (coord - coord_prev)
                f_base = f + beta * (f - f_prev)
            else:
                base, f_base = coord, f
            z = wy * loss.deriv(y * f_base)
            step, df, grad_sq = step_fn(z, base)
            npass[l] += 1
            total += 1
            if check_gradient and grad_sq <= eps * eps:
                # Confirm on decision values recomputed from the coefficients: the
                # running ones drift by rounding over many passes, which matters
                # when eps is near that floor.  A confirmed point is returned as
                # it is (not the step from it), so it satisfies the test.
                alpha = majoriser.to_alpha(base)
                f_exact, value, g = evaluate(form, alpha, y, loss, lam)
                coord, f = base, keep_rows(f_exact)
                if g @ g <= eps * eps:
                    done = (alpha, value, g)
                    break
                if accelerate:  # go on from the refreshed point without momentum
                    coord_prev, f_prev, t = coord, f, 1.0
                    obj = current_objective(coord, f, lam)
                if total > maxit:
                    jerr = -(l + 1)
                    break
                continue
            if accelerate:
                new_coord, new_f = base + step, keep_rows(f_base + df)
                new_obj = current_objective(new_coord, new_f, lam)
                if new_obj > obj and beta > 0.0:
                    # momentum overshot: restart from the last iterate with a plain MM step
                    coord_prev, f_prev, t = coord, f, 1.0
                    if total > maxit:
                        jerr = -(l + 1)
                        break
                    continue
                coord_prev, f_prev = coord, f
                coord, f, obj, t = new_coord, new_f, new_obj, t_next
            else:
                coord += step
                f += df
                f = keep_rows(f)
            if callback is not None:
                callback(l, lam, coord, f)
            if total > maxit:
                jerr = -(l + 1)
                break
            if not check_gradient and step @ step < eps:
                break
        if done is None:
            alpha = majoriser.to_alpha(coord)
            _, value, g = evaluate(form, alpha, y, loss, lam)
            done = (alpha, value, g)
        if jerr:
            unfinished = (done[0], done[1], float(np.linalg.norm(done[2])))
            break
        cols.append(done[0])
        objs.append(done[1])
        kkts.append(float(np.linalg.norm(done[2])))
    ncol = len(cols)
    alpha = np.column_stack(cols) if cols else np.zeros((majoriser.ncoef, 0))
    return PathResult(
        alpha=alpha,
        lambdas=np.asarray(lambdas[:ncol], dtype=float),
        npass=npass,
        jerr=jerr,
        objective=np.asarray(objs),
        kkt=np.asarray(kkts),
        unfinished=unfinished,
    )


register_method("mm", mm_path)
