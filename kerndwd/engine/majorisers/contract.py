"""What a majoriser promises (:class:`Majoriser`), and the check every build passes.

The engine minimises, for each ``lambda`` of a decreasing path,

    F(b0, theta) = (1/n) sum_i w_i V_q(y_i f_i) + lambda ||f||^2,          (3.1), (4.2), (6.2)

with decision values ``f = b0 + B theta`` for some *basis* ``B``: the
predictors ``X`` (linear DWD, ``||f||^2 = theta' theta``), the kernel matrix
``K`` (kernel DWD, ``||f||^2 = theta' K theta``), or a feature matrix
``Phi`` (Nystrom or random features, ``||f||^2 = theta' theta``).  Lemma 2
bounds ``V_q''`` by ``M = (q+1)^2/q``, so ``n F`` is majorised at the current
point by a quadratic with Hessian ``M Z'WZ + 2 n lambda diag(0, Omega)``
(``Z = [1, B]``); one MM pass moves to the minimiser of that quadratic.

Three roles, each a small contract:

* a :class:`~kerndwd.engine.forms.Form` turns ``theta`` into ``B theta`` and
  back and gives the penalty; the objective is evaluated with it;
* a :class:`Majoriser` solves the quadratic majoriser in its own
  coordinates (an eigenbasis, say), maps them to the intercept-first
  coefficients ``alpha = (b0, theta)`` users see and back, and gives the
  Newton system of its form to the second-order path solver;
* a :class:`~kerndwd.engine.predictors.Predictor` turns ``alpha`` into
  decision values at new rows.

A majoriser is built by a registered design (:mod:`kerndwd.engine.designs`)
from a validated :class:`~kerndwd.engine.problem.Problem`; the path solvers
(:mod:`kerndwd.engine.solvers`) run any majoriser that honours
:class:`Majoriser`.  ``tests/test_engine_contract.py`` holds every
registered design to these contracts.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Callable

import numpy as np

from ..forms import Form
from ..predictors import COEF_SPACES, Predictor

__all__ = ["Majoriser", "LinearPenalty", "StepFn", "check_majoriser"]

#: ``step_fn(z, coord) -> (step, df, grad_sq)``: the MM step from ``coord`` in
#: the majoriser's coordinates, the change it makes in ``f``, and the squared
#: norm of the gradient of ``F`` at ``coord`` (a by-product of the step).
#: A majoriser with ``needs_decisions = True`` takes two more keyword
#: arguments, ``step_fn(z, coord, f=f, y=y)``: the decision values at ``coord``
#: and the labels (a block sweep re-evaluates the loss after each block).
StepFn = Callable[..., tuple]


class Majoriser(ABC):
    """The quadratic majoriser of ``n F`` at one lambda, solved in the
    majoriser's own coordinates ``coord`` (length :attr:`ncoef`).

    Subclasses set, in ``__init__``: :attr:`n`, :attr:`ncoef`, :attr:`loss`
    (the :class:`kerndwd.engine.loss.DWDLoss` it was built with),
    :attr:`form` (a :class:`~kerndwd.engine.forms.Form`), :attr:`predictor`
    (a :class:`~kerndwd.engine.predictors.Predictor`) and :attr:`solver` (a
    short label for users, e.g. R's routine name; no code branches on it).
    """

    n: int
    ncoef: int
    solver: str = "?"
    #: True when :meth:`at_lambda`'s step function also needs the decision
    #: values at ``coord`` and the labels (``step_fn(z, coord, f=f, y=y)``):
    #: a step made of several moves that each re-evaluate the loss
    needs_decisions: bool = False
    #: What one pass of the step function is called where progress is shown
    #: (:mod:`kerndwd.engine.progress`)
    pass_name: str = "passes"

    def start(self, alpha=None) -> np.ndarray:
        """The coordinates a path starts from: zero, or those of the
        intercept-first coefficients ``alpha`` (a warm start); a copy.  A
        majoriser that keeps state between passes (a warm-started inner
        solver, the directions of the last sweep) forgets it here."""
        return np.zeros(self.ncoef) if alpha is None else np.array(alpha, dtype=float)

    def to_alpha(self, coord) -> np.ndarray:
        """Intercept-first coefficients ``(b0, theta)`` from ``coord`` (a copy)."""
        return coord.copy()

    @abstractmethod
    def penalty_at(self, coord, f) -> float:
        """``||f||^2`` at ``coord``; ``f`` are the current decision values."""

    @abstractmethod
    def at_lambda(self, lam) -> StepFn:
        """The step function of the majoriser at ``lam`` (see :data:`StepFn`)."""

    def newton_system(self):
        """The Newton system of the majoriser's form
        (:class:`kerndwd.engine.newton_systems.NewtonSystem`), for the
        second-order path solver; None when there is none.  A design lists
        ``"newton"`` among its path solvers only when its majorisers have one.

        Returns
        -------
        NewtonSystem or None
        """
        return None


class LinearPenalty:
    """``||f||^2 = theta' theta``, read straight off the coordinates (any
    majoriser whose coordinates are ``(b0, theta)`` on a Euclidean basis)."""

    def penalty_at(self, coord, f):
        return float(coord[1:] @ coord[1:])


#: attributes a majoriser must carry, with what each is (for the error message)
_REQUIRED = (
    ("n", "the number of rows"),
    ("ncoef", "the length of its coordinate vector"),
    ("loss", "the DWDLoss it was built with"),
    ("form", "a Form: f = b0 + B theta"),
    ("predictor", "a Predictor"),
    ("solver", "a label for users"),
)


#: (majoriser, form, predictor) classes already held to the contract
_CONFORMING = set()


def check_majoriser(majoriser, design_name="?"):
    """Raise ``TypeError`` naming what is missing when ``majoriser`` does not
    honour the contract.  Run on every build; each combination of classes is
    inspected once, later builds cost a set look-up."""
    if not isinstance(majoriser, Majoriser):
        raise TypeError(f"design {design_name!r} built {type(majoriser).__name__}, which is not a Majoriser")
    missing = [f"{name} ({what})" for name, what in _REQUIRED if not hasattr(majoriser, name)]
    if missing:
        raise TypeError(f"design {design_name!r}: {type(majoriser).__name__} lacks {', '.join(missing)}")
    key = (type(majoriser), type(majoriser.form), type(majoriser.predictor))
    if key in _CONFORMING:
        return majoriser
    if not isinstance(majoriser.form, Form):
        raise TypeError(f"design {design_name!r}: {type(majoriser).__name__}.form is not a Form "
                        "(kerndwd.engine.forms.Form: apply, apply_t, penalty, penalty_grad, dual_norm_sq)")
    predictor = majoriser.predictor
    if not isinstance(predictor, Predictor) or predictor.coef_space not in COEF_SPACES:
        raise TypeError(f"design {design_name!r}: {type(majoriser).__name__}.predictor is not a Predictor "
                        f"(decision, beta, n_features, coef_space in {COEF_SPACES})")
    _CONFORMING.add(key)
    return majoriser
