"""The one compatibility check: does this design, with this path solver, fit these rows?

:func:`resolve` reads the capabilities that each design and each path
solver declares (:mod:`kerndwd.engine.capabilities`), fills in the defaults
the caller left out, and refuses what the declarations do not allow with an
error that names the argument and lists what would work.  Every face
reaches it through the input layer's ``build_problem``, so the same request
gets the same answer (or the same refusal) from ``fit``, ``cv``, ``tune``
and both estimators.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..kernels import vanilladot
from .capabilities import DEFAULT_EPS, STOP_RULES
from .designs import design_class, design_names
from .solvers import solver_capabilities, solver_names

__all__ = ["Resolved", "resolve", "default_solver", "PREFERENCE"]

#: The order in which a default path solver is chosen: the first of these that
#: the design supports and that runs the stopping rule on the rows (Newton
#: where it can, the MM iteration elsewhere).
PREFERENCE = ("newton", "mm")

#: How the messages name rows of each storage kind
_ROWS = {"dense": "dense rows in memory", "sparse": "sparse rows (scipy.sparse)", "remote": "rows held by a Dask cluster"}


@dataclass(frozen=True)
class Resolved:
    """The settings a problem is fitted with, defaults filled in.

    Parameters
    ----------
    stop : str
        The stopping rule.
    eps : float
        Its tolerance.
    method : str
        The path solver.
    accelerate : bool
        Momentum (MM only).

    Examples
    --------
    >>> from kerndwd.engine import Resolved
    >>> Resolved("kkt", 1e-8, "newton", False).method
    'newton'
    """

    stop: str
    eps: float
    method: str
    accelerate: bool


def _serving(kern, storage):
    """``selected_by=name`` of every registered design that serves ``kern`` on ``storage`` rows."""
    out = []
    for name in design_names():
        cls = design_class(name)
        try:
            caps = cls().capabilities(kern, storage)
        except TypeError:  # a design that needs options to be built
            continue
        if storage in caps.storage and (caps.kernels is None or kern.name in caps.kernels):
            out.append(f"{cls.selected_by}={name!r}")
    return out


def default_solver(caps, stop, storage):
    """The path solver used when the caller names none (see :data:`PREFERENCE`),
    or None when no registered one fits."""
    registered = solver_names()
    for name in PREFERENCE + tuple(registered):
        if name in caps.solvers and name in registered:
            solver = solver_capabilities(name)
            if stop in solver.stop_rules and storage in solver.storage:
                return name
    return None


def resolve(design, kern, storage, *, stop=None, eps=None, method=None, accelerate=None, weighted=False,
            names=None):
    """Check that ``design`` serves ``kern`` on rows stored as ``storage`` with the
    path solver ``method`` and the stopping rule ``stop``, and fill in what the
    caller left as None.

    Parameters
    ----------
    design : Design
    kern : Kernel
    storage : str
        One of :data:`kerndwd.engine.capabilities.STORAGE_KINDS`.
    stop, eps, method, accelerate
        The caller's settings; None for the default.  ``stop`` defaults to the
        design's (R's rule where R fits the same model, the gradient rule
        elsewhere), ``eps`` to :data:`~kerndwd.engine.capabilities.DEFAULT_EPS`
        of the rule, ``method`` to the first of :data:`PREFERENCE` that fits,
        ``accelerate`` to momentum under the gradient rule.
    weighted : bool
        Whether the loss has observation weights.
    names : dict, optional
        How the face calls each argument (``{"stop": "cv_stop", "eps": "tol"}``, say).

    Returns
    -------
    Resolved

    Raises
    ------
    TypeError
        Rows whose storage the design does not take (the message names ``X``).
    ValueError
        A kernel the design does not serve, a stopping rule, path solver or
        momentum option that does not fit; each names its argument.

    Examples
    --------
    >>> import kerndwd
    >>> from kerndwd import engine
    >>> exact = engine.make_design(None, {})
    >>> engine.resolve(exact, kerndwd.rbfdot(1.0), "dense")  # R's rule and R's iteration
    Resolved(stop='step', eps=1e-05, method='mm', accelerate=False)
    >>> engine.resolve(exact, kerndwd.rbfdot(1.0), "dense", stop="kkt").method
    'newton'
    >>> engine.resolve(exact, kerndwd.rbfdot(1.0), "sparse")
    Traceback (most recent call last):
    ...
    TypeError: X: sparse rows (scipy.sparse) are not supported by solver='exact' with kern=rbfdot(sigma=1.0), which takes dense rows in memory; such rows are taken only by solver='auto' with kern=vanilladot(), solver='exact' with kern=vanilladot(). Pass X.toarray() for the others.
    """
    words = {"stop": "stop", "method": "method", "accelerate": "accelerate"}  # (no message names eps)
    words.update(names or {})
    which = design.described
    caps = design.capabilities(kern, storage)
    if caps.kernels is not None and kern.name not in caps.kernels:
        others = [d for d in _serving(kern, storage) if d != which]
        raise ValueError(f"{which} serves kern in {list(caps.kernels)}, got kern={kern!r}; "
                         f"designs that serve it: {', '.join(others) or 'none'}")
    if storage not in caps.storage:
        takers = _serving(kern, storage)
        where = "with this kernel"
        if not takers:
            takers, where = [f"{t} with kern=vanilladot()" for t in _serving(vanilladot(), storage)], "only"
        way = {"sparse": " Pass X.toarray() for the others.", "remote": " Or fit a sample that fits in memory."}
        listed = ", ".join(takers) or "none"
        raise TypeError(f"X: {_ROWS[storage]} are not supported by {which} with kern={kern!r}, "
                        f"which takes {' or '.join(_ROWS[s] for s in caps.storage)}; "
                        + (f"designs that take such rows {where}: {listed}." if where != "only"
                           else f"such rows are taken only by {listed}.") + way.get(storage, ""))
    if weighted and not caps.weights:
        raise ValueError(f"{which} does not fit observation weights; fit without them")
    if stop is None:  # a design a chooser picked (solver="auto") is not R's: the gradient rule
        stop = caps.default_stop if design.chosen is None else "kkt"
    elif not isinstance(stop, str) or stop not in STOP_RULES:
        raise ValueError(f"{words['stop']} must be one of {list(STOP_RULES)}, got {stop!r}")
    elif stop == "step" and design.chosen is not None and design.name != "exact":
        # R's rule stops wherever R's iteration takes a small step: on another iteration it
        # stops elsewhere, so the answer would depend on what the chooser picked
        raise ValueError(f"{words['stop']}='step' is R's rule, for R's own iteration; {design.chosen.split(':')[0]} "
                         f"picked {which} for these rows, whose iterates are not R's: pass {words['stop']}='kkt' "
                         f"(the default of a picked design), or name the solver ({which}) to run it under "
                         "R's rule")
    if eps is None:
        eps = DEFAULT_EPS[stop]
    chosen = default_solver(caps, stop, storage) if method is None else method
    if chosen is None:
        raise ValueError(f"no path solver fits {which} under {words['stop']}={stop!r} on "
                         f"{_ROWS[storage]}; {which} supports {words['method']} in {list(caps.solvers)}")
    if not isinstance(chosen, str) or chosen not in solver_names():
        raise ValueError(f"{words['method']} must be one of {solver_names()} or None, got {method!r}")
    solver = solver_capabilities(chosen)
    said = f"{words['method']}={chosen!r}" + (f" (the default for {words['stop']}={stop!r})" if method is None else "")
    if chosen not in caps.solvers:
        raise ValueError(f"{said} cannot fit the {which} design; it supports {words['method']} in "
                         f"{list(caps.solvers)}")
    if storage not in solver.storage:
        takers = [m for m in caps.solvers if storage in solver_capabilities(m).storage]
        raise ValueError(f"{said} does not run on {_ROWS[storage]}; use {words['method']} in {takers}")
    if stop not in solver.stop_rules:
        others = [m for m in caps.solvers if stop in solver_capabilities(m).stop_rules]
        raise ValueError(f"{said} implements {words['stop']} in {list(solver.stop_rules)}, got "
                         f"{words['stop']}={stop!r}; for {words['stop']}={stop!r} use {words['method']} in {others}")
    if accelerate is not None:
        if not isinstance(accelerate, (bool, np.bool_)):
            raise TypeError(f"{words['accelerate']} must be True, False or None, got {accelerate!r}")
        if not solver.momentum:
            takers = [m for m in solver_names() if solver_capabilities(m).momentum]
            raise ValueError(f"{words['accelerate']} (momentum) is an option of {words['method']} in {takers}; "
                             f"{said} has none: leave {words['accelerate']}=None or pass "
                             f"{words['method']}={takers[0]!r}")
    else:
        accelerate = stop == "kkt"  # momentum with the gradient rule; R's plain iteration with R's rule
    return Resolved(stop=stop, eps=float(eps), method=chosen, accelerate=bool(accelerate))
