"""The one majorization-minimization (MM) loop behind every DWD fit.

:func:`mm_path` runs any :class:`kerndwd.engine.contract.Majoriser` along
the problem's decreasing lambdas and follows the R package's iteration
exactly: zero start, warm starts along the path, stop a lambda when the
squared norm of the step is below ``eps``, and ``maxit`` as a budget on the
total passes of the whole path.  Options beyond R: a stopping rule on the
gradient norm (``stop="kkt"``) and Nesterov momentum with restarts.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np

__all__ = ["PathResult", "mm_path", "evaluate", "run_path", "register_method", "method_names", "default_method",
           "runs_on_remote_rows", "method_settings", "STOP_RULES", "DIVERGED", "diverged_jerr", "jerr_lambda",
           "jerr_diverged", "all_finite"]

#: Stopping rules: R's (squared norm of the MM step below ``eps``) and a real
#: optimality criterion (norm of the gradient of ``F`` below ``eps``).
STOP_RULES = ("step", "kkt")

#: ``jerr = -(DIVERGED + l)``: the iteration at the ``l``-th lambda (1-based) left
#: the finite numbers (an objective, coefficient or decision value overflowed:
#: lambdas near the underflow of 2 n lambda, weights or scales at the edges of
#: double precision) and was abandoned; ``jerr = -l`` is the budget running out.
#: The offset follows glmnet's ``-10000 - k`` for its other non-fatal path errors.
DIVERGED = 10000


def diverged_jerr(l):
    """``jerr`` for the ``l``-th lambda (0-based) abandoned as non-finite."""
    return -(DIVERGED + l + 1)


def jerr_lambda(jerr):
    """The 1-based index of the lambda a nonzero ``jerr`` stopped on."""
    l = -int(jerr)
    return l - DIVERGED if l > DIVERGED else l


def jerr_diverged(jerr):
    """Whether ``jerr`` says the iteration left the finite numbers (not the budget)."""
    return -int(jerr) > DIVERGED


def stable_norm(v):
    """The 2-norm of ``v``, without overflow for entries beyond 1e154 (numpy's
    ``norm`` squares them first); exactly ``np.linalg.norm`` otherwise."""
    with np.errstate(over="ignore"):
        out = float(np.linalg.norm(v))
    if out == np.inf and np.isfinite(v).all():
        top = float(np.abs(v).max())
        out = top * float(np.linalg.norm(np.asarray(v) / top))
    return out


#: MM and Newton never raise the objective: a lambda that ends above its start by
#: more than this (relative) was carried off by rounding (a majoriser whose
#: coupling of the intercept cancels, at scales near the edge of double precision)
CLIMB_TOLERANCE = 1e-6


def climbed(end, start):
    """Whether the objective ``end`` of a lambda lies above its ``start`` beyond rounding."""
    return end > start + CLIMB_TOLERANCE * abs(start)


def all_finite(*parts):
    """Whether every number of the scalars and arrays ``parts`` is finite."""
    return all(bool(np.isfinite(x).all()) for x in parts)


#: Path solvers by name: ``fn(majoriser, problem) -> PathResult``.  Every one
#: runs on a majoriser (its form, loss and predictor) along the problem's
#: lambdas; ``"mm"`` is the MM iteration itself.
_METHODS = {}
#: name -> (the stopping rules it implements, whether it reads ``problem.accelerate``)
_SETTINGS = {}
#: path solvers that run on rows held elsewhere (a Dask cluster: ``form.keep_rows``)
_REMOTE = set()


def register_method(name, fn, stop_rules=STOP_RULES, accelerates=True, remote_rows=False):
    """Make ``fn(majoriser, problem) -> PathResult`` selectable as ``method=name``;
    ``stop_rules`` are the stopping rules it implements, ``accelerates`` whether
    it takes the momentum option ``accelerate``, ``remote_rows`` whether it
    runs on rows that stay on a Dask cluster (per-row vectors as
    :class:`kerndwd.engine.distributed.ChunkedRows`).

    Parameters
    ----------
    name : str
        The name the faces accept as ``method=``.
    fn : callable
        ``fn(majoriser, problem) -> PathResult``.
    stop_rules : tuple of str, default ("step", "kkt")
        The stopping rules ``fn`` implements.
    accelerates : bool, default True
        Whether ``fn`` takes the momentum option ``accelerate``.
    remote_rows : bool, default False
        Whether ``fn`` runs on rows held by a Dask cluster.

    Returns
    -------
    callable
        ``fn`` itself.

    Examples
    --------
    A path solver that runs the MM iteration and reports its passes:

    >>> import numpy as np
    >>> from kerndwd import engine
    >>> rng = np.random.default_rng(0)
    >>> X = rng.standard_normal((40, 3)); y = np.where(X[:, 0] > 0, 1.0, -1.0)
    >>> def mm_counted(majoriser, problem):
    ...     result = engine.mm_path(majoriser, problem)
    ...     print("passes:", result.npass.tolist())
    ...     return result
    >>> engine.register_method("mm_counted", mm_counted, accelerates=False)  # doctest: +SKIP

    (Registered, ``kerndwd.fit(..., method="mm_counted")`` would use it;
    here it is called directly.)

    >>> problem = engine.Problem.from_arrays(X, y, [1.0, 0.1])
    >>> majoriser = engine.build_majoriser(problem, engine.FactorCache(X, problem.kern))
    >>> result = mm_counted(majoriser, problem)
    passes: [12, 26]
    """
    _METHODS[name] = fn
    _SETTINGS[name] = (tuple(stop_rules), bool(accelerates))
    if remote_rows:
        _REMOTE.add(name)
    else:
        _REMOTE.discard(name)
    return fn


def runs_on_remote_rows(name):
    """Whether the path solver ``name`` runs on rows held by a Dask cluster.

    Parameters
    ----------
    name : str
        A registered path solver.

    Returns
    -------
    bool

    Examples
    --------
    >>> from kerndwd import engine
    >>> engine.runs_on_remote_rows("mm"), engine.runs_on_remote_rows("newton")
    (True, False)
    """
    return name in _REMOTE


def method_names():
    """Names of the registered path solvers (``method=``).

    Returns
    -------
    list of str
        Sorted.

    Examples
    --------
    >>> from kerndwd import engine
    >>> [m for m in engine.method_names() if m in ("mm", "newton")]
    ['mm', 'newton']
    """
    return sorted(_METHODS)


def method_settings(name):
    """``(stop_rules, accelerates)`` of a registered path solver (see :func:`register_method`).

    Parameters
    ----------
    name : str
        A registered path solver.

    Returns
    -------
    stop_rules : tuple of str
    accelerates : bool

    Raises
    ------
    KeyError
        When ``name`` is not registered.

    Examples
    --------
    >>> from kerndwd import engine
    >>> engine.method_settings("newton")
    (('kkt',), False)
    """
    return _SETTINGS[name]


def default_method(stop, design=None, remote_rows=False):
    """The path solver used when the caller names none: second-order Newton
    with the gradient rule (``stop="kkt"``), the MM iteration under R's rule
    (R's iterates, pass for pass).  A design whose ``path_methods`` (see
    :class:`kerndwd.engine.designs.Design`) leaves Newton out, and rows on a
    Dask cluster (``remote_rows``), get the MM iteration.

    Parameters
    ----------
    stop : {"step", "kkt"}
        The stopping rule.
    design : Design, optional
        The problem's design.
    remote_rows : bool, default False
        Whether the rows stay on a Dask cluster.

    Returns
    -------
    str
        A registered path solver.

    Examples
    --------
    >>> from kerndwd import engine
    >>> engine.default_method("kkt"), engine.default_method("step")
    ('newton', 'mm')
    """
    chosen = "newton" if stop == "kkt" else "mm"
    allowed = getattr(design, "path_methods", None)
    if (allowed is not None and chosen not in allowed) or (remote_rows and chosen not in _REMOTE):
        return "mm"
    return chosen


#: The largest lambda a path solver is run at (kerndwd._checks.MAX_LAMBDA checks the
#: caller's lambdas against the same bound; rescaled weights can carry them past it)
MAX_INNER_LAMBDA = 1e200


def run_path(majoriser, problem):
    """Fit ``problem`` along its lambdas with its path solver (``problem.method``).

    When the loss holds rescaled weights (``loss.scale != 1``, see
    :class:`kerndwd.engine.loss.DWDLoss`) the path is solved at
    ``lambda / scale`` (the gradient tolerance likewise) and the result is
    reported at the caller's lambdas, objective and gradient norm; the
    scale is a power of two, so both conversions are exact.

    Parameters
    ----------
    majoriser : Majoriser
        From :func:`build_majoriser`.
    problem : Problem
        The problem it was built for.

    Returns
    -------
    PathResult
        At the caller's lambdas.

    Raises
    ------
    ValueError
        When rescaled weights move a lambda out of the range the engine
        solves in (below the smallest normal double, or above
        ``MAX_INNER_LAMBDA``); the message says how to rescale.

    Examples
    --------
    >>> import numpy as np
    >>> from kerndwd import engine
    >>> rng = np.random.default_rng(0)
    >>> X = rng.standard_normal((40, 3)); y = np.where(X[:, 0] > 0, 1.0, -1.0)
    >>> problem = engine.Problem.from_arrays(X, y, [1.0, 0.1])  # method="mm"
    >>> majoriser = engine.build_majoriser(problem, engine.FactorCache(X, problem.kern))
    >>> result = engine.run_path(majoriser, problem)
    >>> result.lambdas.tolist(), result.jerr
    ([1.0, 0.1], 0)
    """
    scale = majoriser.loss.scale
    if scale == 1.0:
        return _METHODS[problem.method](majoriser, problem)
    with np.errstate(over="ignore", under="ignore"):
        inner_lambdas = problem.lambdas / scale
    if not (inner_lambdas >= np.finfo(float).tiny).all():
        raise ValueError(f"lambdas down to {problem.lambdas.min():.3g} with weights of scale {scale:.3g} (their "
                         f"geometric mean) act as lambdas down to {inner_lambdas.min():.3g}, below the smallest "
                         "normal double (2.2e-308): use larger lambdas or rescale the weights (only ratios of "
                         "weights to lambdas matter)")
    if not (inner_lambdas <= MAX_INNER_LAMBDA).all():
        raise ValueError(f"lambdas up to {problem.lambdas.max():.3g} with weights of scale {scale:.3g} (their "
                         f"geometric mean) act as lambdas up to {inner_lambdas.max():.3g}, beyond "
                         f"{MAX_INNER_LAMBDA:g} where 2 n lambda overflows (any lambda that large gives the "
                         "intercept-only fit): use smaller lambdas or rescale the weights (only ratios of "
                         "weights to lambdas matter)")
    inner = replace(problem, lambdas=inner_lambdas,
                    eps=problem.eps / scale if problem.stop == "kkt" else problem.eps)
    result = _METHODS[problem.method](majoriser, inner)
    result.lambdas = result.lambdas * scale
    result.objective = result.objective * scale
    result.kkt = result.kkt * scale
    if result.unfinished is not None:
        alpha, value, grad_norm = result.unfinished
        result.unfinished = (alpha, value * scale, grad_norm * scale)
    return result


@dataclass
class PathResult:
    """What :func:`mm_path` returns (coefficients intercept first, one column per
    finished lambda).

    Every path solver returns one; :class:`kerndwd.DWDPath` is built from it.

    Parameters
    ----------
    alpha : ndarray, shape (ncoef, L)
        Intercept first, one column per finished lambda.
    lambdas : ndarray, shape (L,)
        The finished lambdas.
    npass : ndarray of int, shape (nlambda,)
        Iterations per requested lambda.
    jerr : int
        0, or ``-l`` when the budget ran out on the ``l``-th lambda (1-based).
    objective, kkt : ndarray, shape (L,)
        The objective and its gradient norm at each column.
    unfinished : tuple or None
        When ``jerr != 0``: ``(alpha, objective, kkt)`` of the last iterate at
        the lambda the budget ran out on.

    Examples
    --------
    >>> import numpy as np
    >>> from kerndwd import engine
    >>> rng = np.random.default_rng(0)
    >>> X = rng.standard_normal((40, 3)); y = np.where(X[:, 0] > 0, 1.0, -1.0)
    >>> problem = engine.Problem.from_arrays(X, y, [1.0, 0.1], maxit=20)
    >>> result, _ = engine.fit_path(problem)  # 20 passes do not reach the second lambda
    >>> result.jerr, result.alpha.shape, result.unfinished is not None
    (-2, (4, 1), True)
    """

    alpha: np.ndarray
    lambdas: np.ndarray
    npass: np.ndarray
    jerr: int
    objective: np.ndarray = field(default_factory=lambda: np.zeros(0))
    kkt: np.ndarray = field(default_factory=lambda: np.zeros(0))
    #: when ``jerr != 0``: ``(alpha, objective, kkt)`` of the last iterate at the
    #: lambda the budget ran out on (R drops it; scikit-learn-style callers keep it)
    unfinished: tuple | None = None

    @classmethod
    def collect(cls, finished, lambdas, npass, jerr, ncoef, unfinished=None):
        """The result of a path solver from its finished columns, each
        ``(alpha, objective, gradient)`` evaluated exactly, in lambda order;
        ``unfinished`` is the same triple for the lambda it stopped on."""
        kkt = [stable_norm(g) for _, _, g in finished]
        return cls(alpha=np.column_stack([a for a, _, _ in finished]) if finished else np.zeros((ncoef, 0)),
                   lambdas=np.asarray(lambdas[:len(finished)], dtype=float), npass=npass, jerr=jerr,
                   objective=np.asarray([v for _, v, _ in finished]), kkt=np.asarray(kkt),
                   unfinished=None if unfinished is None else
                   (unfinished[0], unfinished[1], stable_norm(unfinished[2])))


    def followed_by(self, rest):
        """This result's finished lambdas, then ``rest``: the same path continued
        by another solver from the lambda this one stopped on.

        Parameters
        ----------
        rest : PathResult
            The result for the lambdas from the one this result stopped on.

        Returns
        -------
        PathResult
            Both results' columns; ``npass`` of the lambda this one stopped on
            adds both solvers' iterations; ``jerr`` and ``unfinished`` are
            ``rest``'s, with ``jerr`` counted along the whole path.
        """
        done = self.lambdas.size
        npass = np.concatenate((self.npass[:done], rest.npass))
        npass[done] += self.npass[done]
        jerr = rest.jerr
        if jerr:
            shifted = done + jerr_lambda(jerr) - 1  # 0-based, along the whole path
            jerr = diverged_jerr(shifted) if jerr_diverged(jerr) else -(shifted + 1)
        return PathResult(alpha=np.hstack((self.alpha, rest.alpha)),
                          lambdas=np.concatenate((self.lambdas, rest.lambdas)), npass=npass, jerr=jerr,
                          objective=np.concatenate((self.objective, rest.objective)),
                          kkt=np.concatenate((self.kkt, rest.kkt)), unfinished=rest.unfinished)


def evaluate(form, alpha, y, loss, lam):
    """Decision values ``f``, the objective ``F`` and its gradient with respect to
    ``(b0, theta)`` at intercept-first coefficients ``alpha``, with one product
    by the form each way.

    Parameters
    ----------
    form : Form
        The problem's form (``majoriser.form``).
    alpha : ndarray, shape (ncoef,)
        Intercept first.
    y : ndarray, shape (n,)
        Labels in {-1, +1}.
    loss : DWDLoss
        The loss, with any weights.
    lam : float
        The penalty.

    Returns
    -------
    f : ndarray, shape (n,)
        Decision values.
    value : float
        The objective ``(1/n) sum w_i V_q(y_i f_i) + lam ||f||^2``.
    grad : ndarray, shape (ncoef,)
        Its gradient.

    Examples
    --------
    >>> import numpy as np
    >>> from kerndwd import engine
    >>> rng = np.random.default_rng(0)
    >>> X = rng.standard_normal((40, 3)); y = np.where(X[:, 0] > 0, 1.0, -1.0)
    >>> problem = engine.Problem.from_arrays(X, y, [0.1], stop="kkt", eps=1e-9)
    >>> result, majoriser = engine.fit_path(problem)
    >>> f, value, grad = engine.evaluate(majoriser.form, result.alpha[:, 0], y, majoriser.loss, 0.1)
    >>> bool(np.linalg.norm(grad) <= 1e-9), bool(np.isclose(value, result.objective[0]))
    (True, True)
    """
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


def mm_path(majoriser, problem, callback=None, start=None):
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

    A lambda whose iterate leaves the finite numbers (a non-finite step, or
    objective, coefficients or gradient at its end: an overflow at the edges
    of double precision), or ends with an objective above the one it started
    from (which MM never does; rounding did) is abandoned with ``jerr = -(DIVERGED + l)``; the
    finished lambdas are returned and ``unfinished`` holds the lambda's
    (finite) starting point.  Overflow inside the loop is therefore expected
    and silenced here, never returned.

    Parameters
    ----------
    majoriser : Majoriser
        From :func:`build_majoriser`.
    problem : Problem
        The problem it was built for.
    callback : callable, optional
        ``callback(l, lam, coord, f)`` after each pass.
    start : ndarray, optional
        Intercept-first coefficients to start the first lambda from (a warm
        start, e.g. where another path solver stopped); default zero.

    Returns
    -------
    PathResult

    Examples
    --------
    >>> import numpy as np
    >>> from kerndwd import engine
    >>> rng = np.random.default_rng(0)
    >>> X = rng.standard_normal((40, 3)); y = np.where(X[:, 0] > 0, 1.0, -1.0)
    >>> problem = engine.Problem.from_arrays(X, y, [1.0, 0.1])
    >>> majoriser = engine.build_majoriser(problem, engine.FactorCache(X, problem.kern))
    >>> passes = []
    >>> result = engine.mm_path(majoriser, problem, callback=lambda l, lam, coord, f: passes.append(l))
    >>> result.npass.tolist(), len(passes) <= int(result.npass.sum())
    ([12, 26], True)
    """
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        return _mm_path(majoriser, problem, callback, start)


def _mm_path(majoriser, problem, callback, start_alpha=None):
    loss, form = majoriser.loss, majoriser.form
    # a form whose rows live elsewhere (a Dask cluster) stores each new iterate's f there
    keep_rows = getattr(form, "keep_rows", _where_it_is)
    y, lambdas, eps, maxit = problem.y, problem.lambdas, problem.eps, problem.maxit
    check_gradient, accelerate = problem.stop == "kkt", problem.accelerate
    needs_decisions = majoriser.needs_decisions
    nlam = len(lambdas)
    wy = loss.weighted_labels(y)
    if start_alpha is None:
        coord = majoriser.zero()
        f = np.zeros_like(y, dtype=float)  # chunked like y when the rows are a Dask array
    else:
        coord = majoriser.from_alpha(start_alpha)
        f = keep_rows(start_alpha[0] + form.apply(start_alpha[1:]))
    npass = np.zeros(nlam, dtype=int)
    finished = []
    total = 0
    jerr = 0
    unfinished = None

    def current_objective(c, fv, lam):
        return loss.mean(y * fv) + lam * majoriser.penalty_at(c, fv)

    for l, lam in enumerate(lambdas):
        step_fn = majoriser.at_lambda(lam)
        start = coord.copy()  # finite: what is reported should this lambda leave the finite numbers
        start_objective = current_objective(coord, f, lam)
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
            if needs_decisions:
                step, df, grad_sq = step_fn(z, base, f=f_base, y=y)
            else:
                step, df, grad_sq = step_fn(z, base)
            npass[l] += 1
            total += 1
            if not np.isfinite(step).all():
                jerr = diverged_jerr(l)
                break
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
        if done is None and not (jerr and jerr_diverged(jerr)):
            alpha = majoriser.to_alpha(coord)
            _, value, g = evaluate(form, alpha, y, loss, lam)
            done = (alpha, value, g)
            if not all_finite(alpha, value, g):
                jerr = diverged_jerr(l)
        if not (jerr and jerr_diverged(jerr)) and climbed(done[1], start_objective):
            jerr = diverged_jerr(l)
        if jerr and jerr_diverged(jerr):
            alpha = majoriser.to_alpha(start)
            done = (alpha,) + evaluate(form, alpha, y, loss, lam)[1:]
        if jerr:
            unfinished = done
            break
        finished.append(done)
    return PathResult.collect(finished, lambdas, npass, jerr, majoriser.ncoef, unfinished)


register_method("mm", mm_path, remote_rows=True)
