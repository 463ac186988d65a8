"""What a path solver returns: :class:`PathResult`, and the meaning of ``jerr``.

``jerr = 0``: every lambda finished.  ``jerr = -l``: the ``maxit`` budget ran
out (or rounding held the gradient above ``eps``) on the ``l``-th lambda
(1-based).  ``jerr = -(DIVERGED + l)``: the iteration at the ``l``-th lambda
left the finite numbers, or raised the objective it must lower, and was
abandoned.  Either way the ``l - 1`` finished columns are returned.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

__all__ = ["PathResult", "DIVERGED", "diverged_jerr", "jerr_lambda", "jerr_diverged", "stable_norm", "all_finite",
           "climbed", "columns", "CLIMB_TOLERANCE"]

#: ``jerr = -(DIVERGED + l)``: the iteration at the ``l``-th lambda (1-based) left
#: the finite numbers (an objective, coefficient or decision value overflowed:
#: lambdas near the underflow of 2 n lambda, weights or scales at the edges of
#: double precision) and was abandoned; ``jerr = -l`` is the budget running out.
#: The offset follows glmnet's ``-10000 - k`` for its other non-fatal path errors.
DIVERGED = 10000

#: MM and Newton never raise the objective: a lambda that ends above its start by
#: more than this (relative) was carried off by rounding (a majoriser whose
#: coupling of the intercept cancels, at scales near the edge of double precision)
CLIMB_TOLERANCE = 1e-6


def diverged_jerr(l):
    """``jerr`` for the ``l``-th lambda (0-based) abandoned as non-finite.

    Parameters
    ----------
    l : int
        The lambda's index, 0-based.

    Returns
    -------
    int
        ``-(DIVERGED + l + 1)``.

    Examples
    --------
    >>> diverged_jerr(0)
    -10001
    """
    return -(DIVERGED + l + 1)


def jerr_lambda(jerr):
    """The 1-based index of the lambda a nonzero ``jerr`` stopped on.

    Parameters
    ----------
    jerr : int
        Nonzero.

    Returns
    -------
    int

    Examples
    --------
    >>> jerr_lambda(-3), jerr_lambda(diverged_jerr(2))
    (3, 3)
    """
    l = -int(jerr)
    return l - DIVERGED if l > DIVERGED else l


def jerr_diverged(jerr):
    """Whether ``jerr`` says the iteration left the finite numbers (not the budget).

    Parameters
    ----------
    jerr : int

    Returns
    -------
    bool

    Examples
    --------
    >>> jerr_diverged(-3), jerr_diverged(-10003)
    (False, True)
    """
    return -int(jerr) > DIVERGED


def stable_norm(v):
    """The 2-norm of ``v``, without overflow for entries beyond 1e154 (numpy's
    ``norm`` squares them first); exactly ``np.linalg.norm`` otherwise."""
    with np.errstate(over="ignore"):
        if type(v) is np.ndarray and v.ndim == 1 and v.dtype == np.float64:
            squared = float(v.dot(v))  # what np.linalg.norm forms for a float vector, without its dispatch
            if squared < math.inf:
                return math.sqrt(squared)
        out = float(np.linalg.norm(v))
    if out == np.inf and np.isfinite(v).all():
        top = float(np.abs(v).max())
        out = top * float(np.linalg.norm(np.asarray(v) / top))
    return out


def columns(vectors):
    """The 1-D arrays ``vectors`` side by side, one column each: ``np.column_stack``
    of vectors (the same C-ordered array), without its per-array dispatch."""
    out = np.empty((len(vectors[0]), len(vectors)), dtype=np.result_type(*vectors))
    for j, v in enumerate(vectors):
        out[:, j] = v
    return out


def climbed(end, start):
    """Whether the objective ``end`` of a lambda lies above its ``start`` beyond rounding."""
    return end > start + CLIMB_TOLERANCE * abs(start)


def all_finite(*parts):
    """Whether every number of the scalars and arrays ``parts`` is finite."""
    return all(math.isfinite(x) if isinstance(x, float) else bool(np.isfinite(x).all()) for x in parts)


@dataclass
class PathResult:
    """What the path-solver template returns (coefficients intercept first, one
    column per finished lambda); :class:`kerndwd.DWDPath` is built from it.

    Parameters
    ----------
    alpha : ndarray, shape (ncoef, L)
        Intercept first, one column per finished lambda.
    lambdas : ndarray, shape (L,)
        The finished lambdas.
    npass : ndarray of int, shape (nlambda,)
        Iterations per requested lambda, whichever path solver ran them.
    jerr : int
        See the module docstring.
    objective, kkt : ndarray, shape (L,)
        The objective and its gradient norm at each column.
    gap_bound : ndarray, shape (L,)
        Under R's stopping rule, a certified upper bound on ``objective -
        optimum`` (:mod:`kerndwd.engine.certify`); NaN under the gradient rule,
        where ``kkt <= eps`` is the certificate.
    unfinished : tuple or None
        When ``jerr != 0``: ``(alpha, objective, kkt)`` of the last iterate at
        the lambda the path stopped on (its finite starting point when it was
        abandoned as non-finite).
    solvers : tuple of str
        The path solvers that ran, in the order they first ran (the fallback
        after the primary one where it took over a lambda).

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
    gap_bound: np.ndarray = field(default_factory=lambda: np.zeros(0))
    unfinished: tuple | None = None
    solvers: tuple = ()

    @classmethod
    def collect(cls, finished, lambdas, npass, jerr, ncoef, unfinished=None, solvers=()):
        """The result from the finished columns, each ``(alpha, objective,
        gradient)`` evaluated exactly, in lambda order; ``unfinished`` is the
        same triple for the lambda the path stopped on."""
        return cls(alpha=columns([a for a, _, _ in finished]) if finished else np.zeros((ncoef, 0)),
                   lambdas=np.asarray(lambdas[:len(finished)], dtype=float), npass=npass, jerr=jerr,
                   objective=np.asarray([v for _, v, _ in finished], dtype=float),
                   kkt=np.asarray([stable_norm(g) for _, _, g in finished], dtype=float),
                   gap_bound=np.full(len(finished), np.nan),
                   unfinished=None if unfinished is None else
                   (unfinished[0], unfinished[1], stable_norm(unfinished[2])),
                   solvers=tuple(solvers))
