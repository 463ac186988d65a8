"""The path-solver template: the one lambda loop behind every fit.

:func:`run_path` fits a problem along its decreasing lambdas.  What is the
same for every path solver lives here, once:

* the zero start and the warm start of each lambda from the previous one;
* one ``maxit`` budget for the whole path, whoever spends it: a lambda may
  take passes while the path's total is at most ``maxit``, and the pass
  that carries the total past ``maxit`` is taken, then reported
  (``jerr = -l``), as the R package counts;
* ``npass``, the passes of every lambda, whichever solver ran them;
* the confirmation of the gradient rule on decision values recomputed from
  the coefficients (the running ones drift by rounding over many passes),
  and the evaluation of each returned column, by one
  :class:`~kerndwd.engine.objective.Objective`;
* the guards: a lambda whose iterate leaves the finite numbers, or ends with
  an objective above the one it started from (which neither MM nor Newton
  does; rounding did), is abandoned with ``jerr = -(DIVERGED + l)`` and its
  finite starting point reported;
* the fallback: a solver that stops short of ``eps`` on a lambda (Newton's
  rounding guard) hands that lambda to the solver its capabilities name
  (the MM iteration with momentum), which continues from its last iterate
  within the same budget; the next lambda goes back to the first solver;
* the certified gap bound of every column under R's rule
  (:mod:`kerndwd.engine.certify`), and the units of rescaled weights.

A path solver supplies only its iteration at one lambda: a subclass of
:class:`Iteration` (:mod:`.mm`, :mod:`.newton`), registered with
:func:`kerndwd.engine.solvers.register_solver`.  The learned-from anchor is
scikit-learn's ``NewtonSolver`` template (``sklearn/linear_model/_glm``),
whose fallback also lives inside the template.
"""

from __future__ import annotations

import time
from abc import ABC, abstractmethod
from dataclasses import dataclass, replace

import numpy as np

from ..capabilities import SolverCapabilities
from ..certify import objective_gap_bounds
from ..objective import Objective
from ..progress import current as current_progress
from ..threads import blas_threads
from ..results import PathResult, all_finite, climbed, columns, diverged_jerr

__all__ = ["Iteration", "Step", "run_path", "solve_path", "register_solver", "solver_names", "solver_capabilities",
           "CONVERGED", "BUDGET", "STALLED", "DIVERGED_STATUS", "MAX_INNER_LAMBDA"]

#: What :meth:`Iteration.run` reports: its own stopping test was met at its
#: current point (R's rule after a step, or the running gradient norm)
CONVERGED = "converged"
#: ... it took the pass that carried the path past ``maxit``
BUDGET = "budget"
#: ... it cannot get closer to ``eps`` at this precision (rounding)
STALLED = "stalled"
#: ... its iterate left the finite numbers
DIVERGED_STATUS = "diverged"

#: The largest lambda a path solver is run at (the input layer checks the
#: caller's lambdas against the same bound; rescaled weights can carry them past it)
MAX_INNER_LAMBDA = 1e200


@dataclass
class Step:
    """What a callback sees after each move of an iteration.

    Attributes
    ----------
    l : int
        The lambda's index (0-based).
    lam : float
        The lambda.
    kind : str
        ``"mm"`` (an MM pass), ``"newton"`` (an accepted Newton step, which never
        raises ``F``) or ``"stationary"`` (coordinates along which an indefinite
        kernel matrix makes ``F`` concave moved to their stationary point).
    f : ndarray
        The running decision values.
    iteration : Iteration
        The iteration (its :meth:`~Iteration.alpha` gives the coefficients).

    Examples
    --------
    >>> import numpy as np
    >>> from kerndwd import engine
    >>> rng = np.random.default_rng(0)
    >>> X = rng.standard_normal((40, 3)); y = np.where(X[:, 0] > 0, 1.0, -1.0)
    >>> steps = []
    >>> result, _ = engine.fit_path(engine.Problem.from_arrays(X, y, [1.0]), callback=steps.append)
    >>> len(steps) == int(result.npass[0]), steps[0].kind, steps[0].alpha.shape
    (True, 'mm', (4,))
    """

    l: int
    lam: float
    kind: str
    f: object
    iteration: object

    @property
    def alpha(self):
        """Intercept-first coefficients of the current iterate."""
        return self.iteration.alpha()


class Iteration(ABC):
    """A path solver's iteration at one lambda, run by :func:`solve_path`.

    It holds the current point (in its own coordinates) and its running
    decision values between lambdas (the warm start).

    Parameters
    ----------
    majoriser : Majoriser
        From the problem's design.
    problem : Problem
        The problem (its ``stop``, ``eps``, ``accelerate`` ...).
    objective : Objective
        ``F`` on the training rows.

    See Also
    --------
    kerndwd.engine.solvers.mm.MMIteration, kerndwd.engine.solvers.newton.NewtonIteration

    Examples
    --------
    A path solver that runs MM with momentum whatever the problem says,
    registered under its own name (:func:`register_solver`):

    >>> import numpy as np
    >>> from dataclasses import replace
    >>> from kerndwd import engine
    >>> from kerndwd.engine.solvers.mm import MMIteration
    >>> class Fast(MMIteration):
    ...     name = "fast"
    ...     def __init__(self, majoriser, problem, objective):
    ...         super().__init__(majoriser, replace(problem, accelerate=True), objective)
    >>> _ = engine.register_solver(Fast)
    >>> rng = np.random.default_rng(0)
    >>> X = rng.standard_normal((40, 3)); y = np.where(X[:, 0] > 0, 1.0, -1.0)
    >>> problem = engine.Problem.from_arrays(X, y, [0.1], stop="kkt", eps=1e-8, method="fast")
    >>> result, _ = engine.fit_path(problem)
    >>> result.solvers, bool(result.kkt[0] <= 1e-8)
    (('fast',), True)
    >>> del engine.solvers.SOLVERS["fast"]
    """

    name = "?"
    capabilities = SolverCapabilities()

    def __init__(self, majoriser, problem, objective, space=None):
        self.majoriser = majoriser
        self.problem = problem
        self.objective = objective
        #: the coordinates iterated in: an object with ``start(alpha)`` and
        #: ``to_alpha(coord)`` (the majoriser, or a Newton system)
        self.space = majoriser if space is None else space
        self.coord = self.f = None
        self._must_step = False

    def reset(self, alpha=None, f=None):
        """Start from zero, or from intercept-first ``alpha`` whose decision
        values are ``f``.

        Parameters
        ----------
        alpha : ndarray, shape (ncoef,), optional
        f : ndarray, shape (n,), optional
        """
        self.coord = self.space.start(alpha)
        if alpha is None:
            y = self.problem.y  # f is chunked like y when the rows are remote
            self.f = np.zeros(y.shape[0]) if type(y) is np.ndarray else np.zeros_like(y, dtype=float)
        else:
            self.f = self.majoriser.form.keep_rows(f)
        self._must_step = False

    def alpha(self):
        """Intercept-first coefficients of the current point (a copy).

        Returns
        -------
        ndarray, shape (ncoef,)
        """
        return self.space.to_alpha(self.coord)

    def snapshot(self):
        """The current point, kept aside (see :meth:`alpha_of`).

        Returns
        -------
        ndarray
            A copy of the coordinates.
        """
        return self.coord.copy()

    def alpha_of(self, snapshot):
        """Intercept-first coefficients of a point kept by :meth:`snapshot`.

        Parameters
        ----------
        snapshot : object
            What :meth:`snapshot` returned.

        Returns
        -------
        ndarray, shape (ncoef,)
        """
        return self.space.to_alpha(snapshot)

    @abstractmethod
    def penalty(self):
        """``||f||^2`` at the current point."""

    def value(self, lam):
        """``F`` at the current point, from the running decision values.

        Parameters
        ----------
        lam : float

        Returns
        -------
        float
        """
        return self.objective.value(self.f, self.penalty(), lam)

    def refresh(self, f):
        """Replace the running decision values by ``f``, recomputed from the
        coefficients; the next :meth:`run` takes at least one step before it
        reports its test met again.

        Parameters
        ----------
        f : ndarray, shape (n,)
        """
        self.f = f
        self._must_step = True

    @abstractmethod
    def run(self, l, lam, remaining, callback):
        """Iterate at ``lam`` from the current point.

        Parameters
        ----------
        l : int
            The lambda's index.
        lam : float
        remaining : int
            Passes left to the path: the run reports :data:`BUDGET` after the
            pass that makes its count exceed ``remaining``.
        callback : callable or None
            ``callback(Step)`` after each move.

        Returns
        -------
        status : str
            :data:`CONVERGED`, :data:`BUDGET`, :data:`STALLED` or :data:`DIVERGED_STATUS`.
        passes : int
            The passes taken.
        """


#: Path solvers by name: their :class:`Iteration` subclass
SOLVERS: dict[str, type] = {}


def register_solver(cls):
    """Make the :class:`Iteration` subclass ``cls`` selectable as ``method=cls.name``
    (usable as a class decorator); its ``capabilities`` say what it runs.

    Parameters
    ----------
    cls : type
        An :class:`Iteration` subclass with ``name`` and ``capabilities``.

    Returns
    -------
    type
        ``cls`` itself.

    Raises
    ------
    TypeError
        When ``cls`` is not an :class:`Iteration` subclass.

    Examples
    --------
    >>> from kerndwd import engine
    >>> engine.register_solver(object)
    Traceback (most recent call last):
    ...
    TypeError: register_solver takes an Iteration subclass, got <class 'object'>

    See :class:`Iteration` for a registered solver.
    """
    if not (isinstance(cls, type) and issubclass(cls, Iteration)):
        raise TypeError(f"register_solver takes an Iteration subclass, got {cls!r}")
    SOLVERS[cls.name] = cls
    return cls


def solver_names():
    """Names of the registered path solvers (``method=``), sorted.

    Returns
    -------
    list of str

    Examples
    --------
    >>> from kerndwd import engine
    >>> engine.solver_names()
    ['mm', 'newton']
    """
    return sorted(SOLVERS)


def solver_capabilities(name):
    """The :class:`~kerndwd.engine.capabilities.SolverCapabilities` of a registered path solver.

    Parameters
    ----------
    name : str
        A registered path solver.

    Returns
    -------
    SolverCapabilities

    Raises
    ------
    KeyError
        When ``name`` is not registered.

    Examples
    --------
    >>> from kerndwd import engine
    >>> engine.solver_capabilities("newton").stop_rules
    ('kkt',)
    """
    return SOLVERS[name].capabilities


def solve_path(majoriser, problem, callback=None, start=None):
    """The lambda loop (module docstring) at the problem's own lambdas and units.

    Parameters
    ----------
    majoriser : Majoriser
    problem : Problem
    callback : callable, optional
        ``callback(Step)`` after each move of any iteration (a test hook; it
        never changes the algorithm).
    start : ndarray, shape (ncoef,), optional
        Intercept-first coefficients the first lambda starts from (zero when None).

    Returns
    -------
    PathResult
    """
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"), \
            blas_threads(problem.design.blas_work(problem)):  # one BLAS thread for small work
        return _solve_path(majoriser, problem, callback, start)


def _solve_path(majoriser, problem, callback, start=None):
    solvers = SOLVERS
    rules = solvers[problem.method].capabilities.stop_rules
    if problem.stop not in rules:  # the faces resolve this; an engine caller may not have
        raise ValueError(f"method={problem.method!r} implements stop in {list(rules)}, got stop={problem.stop!r}")
    objective = Objective(majoriser.form, problem.y, majoriser.loss)
    primary = solvers[problem.method](majoriser, problem, objective)
    monitor = current_progress()
    if monitor is not None:  # what a long fit shows (engine/progress.py); nothing is added without it
        monitor.path_started(len(problem.lambdas), primary.name, majoriser.pass_name)
        live, slow = _counting(monitor, callback), True
    fallback = None
    lambdas, maxit, eps, step_rule = problem.lambdas, problem.maxit, problem.eps, problem.stop == "step"
    keep_rows = majoriser.form.keep_rows
    npass = np.zeros(len(lambdas), dtype=int)
    finished, unfinished, ran, decisions = [], None, [primary.name], []
    total, jerr = 0, 0
    it = primary
    if start is None:
        it.reset()
    else:
        it.reset(start, keep_rows(objective.evaluate(start, lambdas[0])[0]))
    cold = start is None
    for l, lam in enumerate(lambdas):
        # a cold first lambda starts from zero (the reset above), where F is known without a pass
        start, start_value = it.snapshot(), objective.value_at_zero() if l == 0 and cold else it.value(lam)
        limit = maxit - total
        used = 0
        if monitor is not None:  # passes counted as they go only where a lambda is slow to show
            began = time.perf_counter()
        while True:
            status, passes = it.run(l, lam, limit - used, live if monitor is not None and slow else callback)
            used += passes
            if monitor is not None:
                monitor.passes_done(passes)
            if status == CONVERGED:
                alpha = it.alpha()
                f, value, grad = objective.evaluate(alpha, lam)
                if step_rule or grad @ grad <= eps * eps:
                    break
                it.refresh(keep_rows(f))  # the running gradient drifted: go on from recomputed values
                if used > limit:
                    status = BUDGET
                    break
                continue
            if status == STALLED and it.capabilities.fallback is not None and it is not fallback:
                if fallback is None:
                    fallback = solvers[it.capabilities.fallback](majoriser, replace(problem, accelerate=True),
                                                                 objective)
                alpha = it.alpha()
                fallback.reset(alpha, keep_rows(objective.evaluate(alpha, lam)[0]))
                it = fallback
                if fallback.name not in ran:
                    ran.append(fallback.name)
                continue
            if status != DIVERGED_STATUS:
                alpha = it.alpha()
                f, value, grad = objective.evaluate(alpha, lam)
            break
        npass[l] = used
        total += used
        if status != DIVERGED_STATUS and not (all_finite(alpha, value, grad) and not climbed(value, start_value)):
            status = DIVERGED_STATUS
        if status == DIVERGED_STATUS:
            jerr = diverged_jerr(l)
            alpha = it.alpha_of(start)
            unfinished = (alpha,) + objective.evaluate(alpha, lam)[1:]
            break
        if status != CONVERGED:  # the budget ran out, or rounding held the gradient above eps
            jerr = -(l + 1)
            unfinished = (alpha, value, grad)
            break
        finished.append((alpha, value, grad))
        decisions.append(f)
        if monitor is not None:
            monitor.lambda_done(l, lam, used, float(np.sqrt(grad @ grad)))
            slow = time.perf_counter() - began > _SLOW_LAMBDA
        if it is not primary:  # the next lambda goes back to the first solver, from here
            primary.reset(alpha, keep_rows(f))
            it = primary
    result = PathResult.collect(finished, lambdas, npass, jerr, majoriser.ncoef, unfinished, ran)
    if step_rule and finished:  # the decision values each column was evaluated at serve the bound (in memory)
        in_memory = problem.storage != "remote"
        result.gap_bound = objective_gap_bounds(
            objective, result.alpha, result.lambdas, decisions=columns(decisions) if in_memory else None,
            gradients=columns([g for _, _, g in finished]))
    return result


#: Seconds a lambda takes for the next one's passes to be counted as they go
#: (a fast lambda's count, shown when it ends, is enough; a slow one, BCD at a
#: small lambda, is watched pass by pass)
_SLOW_LAMBDA = 0.01


def _counting(monitor, callback, every=32):
    """``callback`` (or nothing), with the moves counted as passes for
    ``monitor`` in batches of ``every`` (a call of the monitor costs more than
    a pass of a small fit; the template settles the count after each run)."""
    moves = [0]

    def count(step):
        if step.kind != "stationary":
            moves[0] += 1
            if moves[0] == every:
                monitor.passes(every)
                moves[0] = 0
        if callback is not None:
            callback(step)
    return count


def run_path(majoriser, problem, callback=None, start=None):
    """Fit ``problem`` along its lambdas with its path solver (``problem.method``).

    When the loss holds rescaled weights (``loss.scale != 1``, see
    :class:`kerndwd.engine.loss.DWDLoss`) the path is solved at
    ``lambda / scale`` (the gradient tolerance likewise) and the result is
    reported at the caller's lambdas, objective, gradient norm and gap
    bound; the scale is a power of two, so both conversions are exact.

    Parameters
    ----------
    majoriser : Majoriser
        From :func:`kerndwd.engine.build_majoriser`.
    problem : Problem
        The problem it was built for.
    callback : callable, optional
        ``callback(Step)`` after each move (see :class:`Step`).
    start : ndarray, shape (ncoef,), optional
        Intercept-first coefficients to start the first lambda from (a warm
        start; zero when None).

    Returns
    -------
    PathResult
        At the caller's lambdas.

    Raises
    ------
    ValueError
        When rescaled weights move a lambda out of the range the engine
        solves in (below the smallest normal double, or above
        :data:`MAX_INNER_LAMBDA`); the message says how to rescale.

    Examples
    --------
    >>> import numpy as np
    >>> from kerndwd import engine
    >>> rng = np.random.default_rng(0)
    >>> X = rng.standard_normal((40, 3)); y = np.where(X[:, 0] > 0, 1.0, -1.0)
    >>> problem = engine.Problem.from_arrays(X, y, [1.0, 0.1])  # method="mm", R's rule
    >>> majoriser = engine.build_majoriser(problem, engine.FactorCache(X, problem.kern))
    >>> result = engine.run_path(majoriser, problem)
    >>> result.lambdas.tolist(), result.jerr, result.npass.tolist()
    ([1.0, 0.1], 0, [12, 26])
    """
    scale = majoriser.loss.scale
    if scale == 1.0:
        return solve_path(majoriser, problem, callback, start)
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
    result = solve_path(majoriser, inner, callback, start)
    result.lambdas = result.lambdas * scale
    result.objective = result.objective * scale
    result.kkt = result.kkt * scale
    with np.errstate(over="ignore"):  # a bound beyond the largest double is inf: "not excluded"
        result.gap_bound = result.gap_bound * scale
    if result.unfinished is not None:
        alpha, value, grad_norm = result.unfinished
        result.unfinished = (alpha, value * scale, grad_norm * scale)
    return result
