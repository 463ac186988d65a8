"""What every part of the engine promises: the majoriser, the predictor and
the linear form of the decision values.

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

* a :class:`Form` turns ``theta`` into ``B theta`` and back (``B' z``) and
  gives the penalty ``||f||^2``; it is what the objective and the gradient
  are evaluated with;
* a :class:`Majoriser` solves the quadratic majoriser in its own
  coordinates (an eigenbasis, say) and knows how to map them back to the
  intercept-first coefficients ``alpha = (b0, theta)`` users see;
* a :class:`Predictor` turns ``alpha`` into decision values at new rows.
  The fitted path stores it, so no caller needs to know which majoriser
  produced a fit in order to predict from it.

A majoriser is built by a registered *design* (:mod:`kerndwd.engine.designs`)
from a validated :class:`kerndwd.engine.problem.Problem`; the MM loop
(:func:`kerndwd.engine.loop.mm_path`) runs any majoriser that honours
:class:`Majoriser`.  The conformance test ``tests/test_engine_contract.py``
holds every registered design to these contracts.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Callable, Protocol, runtime_checkable

import numpy as np

__all__ = ["Form", "Predictor", "Majoriser", "StepFn", "COEF_SPACES", "check_majoriser"]

#: ``step_fn(z, coord) -> (step, df, grad_sq)``: the MM step from ``coord`` in
#: the majoriser's coordinates, the change it makes in ``f``, and the squared
#: norm of the gradient of ``F`` at ``coord`` (a by-product of the step).
#: A majoriser with ``needs_decisions = True`` takes two more keyword
#: arguments, ``step_fn(z, coord, f=f, y=y)``: the decision values at ``coord``
#: and the labels (a block sweep re-evaluates the loss after each block).
StepFn = Callable[..., tuple]

#: What the rows after the intercept of a fitted ``alpha`` are:
#: ``"beta"``: coefficients of the input columns (``f = b0 + x' beta``);
#: ``"kernel"``: coefficients of the training rows (``f = b0 + sum_j alpha_j k(x_j, x)``);
#: ``"features"``: coefficients of a feature map (``f = b0 + phi(x)' theta``).
COEF_SPACES = ("beta", "kernel", "features")


@runtime_checkable
class Form(Protocol):
    """``f = b0 + B theta`` and the penalty ``||f||^2`` of the basis ``B``."""

    n: int

    def apply(self, theta) -> np.ndarray:
        """``B theta``, shape (n,)."""

    def apply_t(self, z) -> np.ndarray:
        """``B' z``."""

    def penalty(self, theta, applied=None) -> float:
        """``||f||^2`` at ``theta``; ``applied = B theta`` when the caller has it."""

    def penalty_grad(self, theta, applied=None) -> np.ndarray:
        """Gradient of ``||f||^2`` with respect to ``theta``."""

    def dual_norm_sq(self, u, theta, lam) -> float:
        """Squared dual norm, in the penalty's norm, of the gradient in ``theta``
        of ``(data term) + lam ||f||^2`` when ``u`` is the data term's derivative
        in ``f`` (see :mod:`kerndwd.engine.certify`)."""


@runtime_checkable
class Predictor(Protocol):
    """Decision values at new rows from intercept-first coefficients."""

    #: number of input columns a new row must have
    n_features: int
    #: one of :data:`COEF_SPACES`
    coef_space: str

    def decision(self, newx, alpha, cross=None) -> np.ndarray:
        """``b0 + ...`` at the rows of ``newx`` for each column of ``alpha``
        (shape (ncoef, L)); returns shape (m, L).  ``cross``, when given, is a
        zero-argument callable returning the kernel between ``newx`` and the
        training rows, already formed (cross-validation slices it from one
        kernel matrix); predictors that need no kernel ignore it."""

    def beta(self, alpha) -> np.ndarray | None:
        """Coefficients ``beta`` (shape (p, L)) of the input columns when the fit
        is linear in ``x``, else None."""


class Majoriser(ABC):
    """The quadratic majoriser of ``n F`` at one lambda, solved in the
    majoriser's own coordinates ``coord`` (length :attr:`ncoef`).

    Subclasses set, in ``__init__``: :attr:`n`, :attr:`ncoef`, :attr:`loss`
    (the :class:`kerndwd.engine.loss.DWDLoss` it was built with),
    :attr:`form` (a :class:`Form`), :attr:`predictor` (a :class:`Predictor`)
    and :attr:`solver` (a short label for users, e.g. R's routine name; no
    code branches on it).
    """

    n: int
    ncoef: int
    solver: str = "?"
    #: True when :meth:`at_lambda`'s step function also needs the decision
    #: values at ``coord`` and the labels (``step_fn(z, coord, f=f, y=y)``):
    #: a step made of several moves that each re-evaluate the loss
    needs_decisions: bool = False

    def zero(self) -> np.ndarray:
        """The starting point of a path (all coefficients zero)."""
        return np.zeros(self.ncoef)

    def to_alpha(self, coord) -> np.ndarray:
        """Intercept-first coefficients ``(b0, theta)`` from ``coord`` (a copy)."""
        return coord.copy()

    def from_alpha(self, alpha) -> np.ndarray:
        """The majoriser's coordinates of intercept-first coefficients (a copy):
        the inverse of :meth:`to_alpha`, to start a path from a given point."""
        return np.array(alpha, dtype=float)

    @abstractmethod
    def penalty_at(self, coord, f) -> float:
        """``||f||^2`` at ``coord``; ``f`` are the current decision values."""

    @abstractmethod
    def at_lambda(self, lam) -> StepFn:
        """The step function of the majoriser at ``lam`` (see :data:`StepFn`)."""

    def eigenbasis(self):
        """``(e, U)`` with ``form.K = U diag(e) U'`` when the majoriser holds the
        eigendecomposition of a kernel form's matrix, else None.

        Second-order path solvers (:mod:`kerndwd.engine.newton`) work in that
        basis; a majoriser that has it shares it here (never modify it), and
        the solver decomposes ``form.K`` itself otherwise.

        Returns
        -------
        tuple of (ndarray of shape (n,), ndarray of shape (n, n)), or None
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
                        "(apply, apply_t, penalty, penalty_grad, n)")
    predictor = majoriser.predictor
    if not isinstance(predictor, Predictor) or predictor.coef_space not in COEF_SPACES:
        raise TypeError(f"design {design_name!r}: {type(majoriser).__name__}.predictor is not a Predictor "
                        f"(decision, beta, n_features, coef_space in {COEF_SPACES})")
    _CONFORMING.add(key)
    return majoriser
