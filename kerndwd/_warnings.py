"""The warnings of a fit: a path that stopped before its tolerance, or that R's rule
left possibly far from the optimum, and lambdas given in another order."""

from __future__ import annotations

import functools
import os
import sys
import warnings
from typing import TYPE_CHECKING

import numpy as np

from .engine import jerr_diverged, jerr_lambda

__all__ = ["DWDConvergenceWarning", "convergence_warning", "DWDGridWarning", "grid_edge_words", "warn_grid_edge",
           "DIVERGED_WHY", "warn_not_converged", "warn_folds", "warn_far_from_optimal",
           "gap_words"]


def _convergence_bases():
    """``(sklearn.exceptions.ConvergenceWarning,)`` where scikit-learn imports, else
    ``(UserWarning,)``: ConvergenceWarning is itself a UserWarning."""
    try:
        from sklearn.exceptions import ConvergenceWarning
    except ImportError:
        return (UserWarning,)
    return (ConvergenceWarning,)


_DOC = """A path stopped before its tolerance: the ``maxit`` budget ran out, or
    rounding held the gradient above ``eps`` (an ``eps`` tighter than the
    data's precision allows), both ``jerr = -l``; or the iteration left the
    finite numbers and the lambda was abandoned (``jerr = -(10000 + l)``).

    A :class:`sklearn.exceptions.ConvergenceWarning` where scikit-learn
    imports (so that scikit-learn's filters catch it), a :class:`UserWarning`
    in any case; the path keeps the columns fitted before the stop, and
    ``jerr`` says where it stopped.  The class is made on first use, so that
    ``import kerndwd`` does not import scikit-learn.

    Examples
    --------
    >>> import warnings
    >>> import numpy as np, kerndwd
    >>> rng = np.random.default_rng(0)
    >>> X = rng.standard_normal((40, 2)); y = np.where(X[:, 0] > 0, 1, -1)
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     path = kerndwd.fit(X, y, [1.0, 0.1], kern=kerndwd.rbfdot(sigma=1), maxit=2)
    >>> any(issubclass(w.category, kerndwd.DWDConvergenceWarning) for w in caught)
    True
    >>> path.jerr < 0  # maxit ran out on a lambda
    True

    To fail instead of warn:

    >>> warnings.simplefilter("error", kerndwd.DWDConvergenceWarning)  # doctest: +SKIP
    """


@functools.cache
def convergence_warning():
    """The one :class:`DWDConvergenceWarning` class, made on first use: importing
    scikit-learn for its base takes a second, which ``import kerndwd`` does not pay."""
    cls = type("DWDConvergenceWarning", _convergence_bases(), {"__doc__": _DOC, "__module__": __name__})
    globals()["DWDConvergenceWarning"] = cls  # later lookups find it without __getattr__
    return cls


#: the class's examples, collected by doctest before the class is made
__test__ = {"DWDConvergenceWarning": _DOC}


if TYPE_CHECKING:
    class DWDConvergenceWarning(UserWarning):  # what type checkers read; at run time, convergence_warning()
        pass


def __getattr__(name):
    if name == "DWDConvergenceWarning":
        return convergence_warning()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


#: Why a lambda was abandoned with ``jerr = -(DIVERGED + l)`` (kerndwd.engine.results.DIVERGED)
DIVERGED_WHY = ("the iteration left the finite numbers or raised the objective it must lower (an objective, "
                "coefficient or decision value overflowed, or rounding took over: the lambda, the weights or the "
                "scale of X or of the kernel are at the edge of double precision)")


def warn_not_converged(jerr, lambdas, maxit):
    l = jerr_lambda(jerr)
    if jerr_diverged(jerr):
        warnings.warn(
            f"fitting lambda #{l} = {lambdas[l - 1]:.6g} was abandoned: {DIVERGED_WHY}; "
            f"the {l - 1} finished lambda(s) are returned (jerr={jerr}). Rescale X or the weights, "
            "or use larger lambdas",
            convergence_warning(),
            stacklevel=3,
        )
        return
    warnings.warn(
        f"maxit={maxit} iterations (a budget for the whole path) ran out while fitting "
        f"lambda #{l} = {lambdas[l - 1]:.6g}, or rounding held the gradient above eps there; "
        f"the {l - 1} finished lambda(s) are returned (jerr={jerr})",
        convergence_warning(),
        stacklevel=3,
    )


def warn_folds(jerr, lambdas, maxit, q=None, stacklevel=3):
    """One warning naming every fold whose path ran out of ``maxit``."""
    bad = np.flatnonzero(jerr)
    if bad.size:
        where = "" if q is None else f" (q={q:g})"
        detail = ", ".join(f"fold {k + 1} at lambda #{jerr_lambda(jerr[k])} = {lambdas[jerr_lambda(jerr[k]) - 1]:.6g}"
                           + (" (non-finite: abandoned)" if jerr_diverged(jerr[k]) else "") for k in bad)
        warnings.warn(
            f"maxit={maxit} iterations ran out (or rounding held the gradient above eps, or the iteration "
            f"overflowed){where}: {detail}; "
            "their held-out predictions at "
            "that lambda and smaller ones are missing and left out of cvm and cvsd",
            convergence_warning(),
            stacklevel=stacklevel,
        )


def gap_words(rel):
    """``"up to 35% lower"`` for a gap bound that is 0.35 of the objective."""
    if rel >= 1.0:
        return "up to 100% lower (the bound does not exclude an optimum near 0)"
    return f"up to {100 * rel:.2g}% lower"


def warn_far_from_optimal(path):
    """One warning per path when R's rule left columns possibly far from optimal."""
    far = path.far_from_optimal
    if far.size:
        rel = path.gap_bound[far] / path.objective[far]
        worst = int(far[np.argmax(rel)])
        warnings.warn(
            f"R's stopping rule (stop='step', eps={path.eps:g}) returned {far.size} of {path.lambda_.size} "
            f"columns possibly far from the optimum: at lambda={path.lambda_[worst]:.4g} the optimal "
            f"objective may be {gap_words(rel.max())} than the returned one (a bound from the gradient: "
            "path.gap_bound). Fit with stop='kkt' (e.g. eps=1e-8) for optimal columns",
            convergence_warning(),
            stacklevel=4,
        )


class DWDGridWarning(UserWarning):
    """The lambda chosen by cross-validation is the first or last of its grid: the
    optimum may lie beyond it, so extend ``lambdas`` past that end.

    Examples
    --------
    >>> import warnings
    >>> import numpy as np, kerndwd
    >>> rng = np.random.default_rng(0)
    >>> X = rng.standard_normal((60, 2)); y = np.where(X[:, 0] > 0, 1, -1)
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     cvres = kerndwd.cv(X, y, [1e3, 1e2], kern=kerndwd.vanilladot(), random_state=0)
    >>> [issubclass(w.category, kerndwd.DWDGridWarning) for w in caught]
    [True]
    """


def grid_edge_words(index, lambdas):
    """What to say of a chosen lambda at ``index`` of the decreasing ``lambdas``, or
    None when it lies inside the grid."""
    if lambdas.size < 2 or 0 < index < lambdas.size - 1:
        return None
    end, way = ("largest", "larger") if index == 0 else ("smallest", "smaller")
    return (f"the chosen lambda {lambdas[index]:.4g} is the {end} of the grid: the optimum may lie beyond it; "
            f"extend lambdas to {way} values")


def warn_grid_edge(index, lambdas, name="lambda_min", stacklevel=3):
    """A :class:`DWDGridWarning` when the chosen lambda (``name``) is an end of the grid."""
    words = grid_edge_words(index, lambdas)
    if words is not None:
        warnings.warn(f"{name}: {words}", DWDGridWarning, stacklevel=stacklevel + 1)


#: Below this q, block coordinate sweeps (``solver="bcd"``) majorise ``V_q`` with the
#: curvature ``M = (q+1)^2/q`` above 100, and a path takes many times the sweeps of
#: q = 1: measured on 200 rows, 10 lambdas, rbf, eps = 1e-9: 330 sweeps at q = 1,
#: 2 259 at 0.01, 14 017 at 1e-3, more than 20 000 at 1e-4 (Newton on the kernel
#: matrix: about 50 iterations at every q).
BCD_SLOW_Q = 1e-2


def _outside_the_package():
    """The ``stacklevel`` that makes a warning raised by the caller of this
    function name the first frame outside kerndwd (the user's call)."""
    root = os.path.dirname(os.path.abspath(__file__)) + os.sep
    frame, level = sys._getframe(1), 1
    while frame is not None and os.path.abspath(frame.f_code.co_filename).startswith(root):
        frame, level = frame.f_back, level + 1
    return level


def warn_slow_design(design, q, n, storage):
    """Before any sweep: a warning when block coordinate descent is what will fit
    ``n`` rows at ``q`` and it will be slow: named by the caller at a q below
    :data:`BCD_SLOW_Q`, or picked by ``solver="auto"`` for rows in memory (where
    the kernel matrix does not fit, so each sweep forms all ``n^2`` kernel entries)."""
    if design.name != "bcd" or design.selected_by != "solver":
        return
    if design.chosen is None and q < BCD_SLOW_Q:
        warnings.warn(f"solver='bcd' at q = {q:g}: block coordinate sweeps majorise the loss with curvature "
                      f"M = (q+1)^2/q = {(q + 1.0) ** 2 / q:.3g}, and below q = {BCD_SLOW_Q:g} a path takes "
                      "tens to hundreds of times the sweeps it takes at q = 1 (it may spend maxit); Newton on "
                      "the kernel matrix (solver='exact' or 'cg') reaches the same optimum in tens of iterations",
                      DWDConvergenceWarning, stacklevel=_outside_the_package())
    elif design.chosen is not None and storage != "remote":
        warnings.warn(f"{design.chosen}; each sweep forms all {n}^2 = {float(n) * n:.3g} kernel entries and a "
                      "path takes hundreds of sweeps or more: progress=True shows them",
                      UserWarning, stacklevel=_outside_the_package())
