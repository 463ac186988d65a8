"""The generalized DWD loss ``V_q`` of Wang & Zou (2018), eq. (3.1)-(3.5).

For ``q > 0`` and the knot ``t_q = q / (q + 1)``::

    V_q(u) = 1 - u                               if u <= t_q
    V_q(u) = u^(-q) q^q / (q + 1)^(q + 1)        if u >  t_q

:func:`dwd_loss` evaluates the power tail as ``t_q^q u^(-q) / (q + 1)``
and :func:`dwd_loss_deriv` its derivative ``-(t_q / u)^(q + 1)`` as
``-t_q^q u^(-q) (t_q / u)``, with ``t_q^q = exp(-q log(1 + 1/q))`` (an
exponent in ``(-1, 0)`` for every q), and both decide the branch by an
exact comparison with ``q / (q + 1)``: the rounded knot and the rounded
ratio ``t_q / u`` raised to ``q`` would cost ``q`` ulps, and for ``q``
above about ``1e16`` (where ``q / (q + 1)`` rounds to 1) a factor ``e``.
No factor can overflow (``u^(-q) <= t_q^(-q) < e`` above the knot); they
only underflow to zero, the correct limit.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ._scalars import check_real
from .engine.loss import DWDLoss

__all__ = [
    "dwd_loss",
    "dwd_loss_deriv",
    "lipschitz",
    "knot",
    "hinge_loss",
    "population_minimizer",
    "conditional_probability",
]


def _check_q(q: float) -> float:
    return check_real(q, "q", "positive")


def knot(q: float) -> float:
    """Where ``V_q`` changes from linear to the power tail: ``q / (q + 1)``.

    Parameters
    ----------
    q : float
        ``> 0``.

    Returns
    -------
    float

    Raises
    ------
    ValueError, TypeError
        When ``q`` is not a positive finite number.

    Examples
    --------
    >>> from kerndwd.loss import knot
    >>> knot(1.0)
    0.5
    """
    q = _check_q(q)
    return q / (q + 1.0)


def lipschitz(q: float) -> float:
    """Lipschitz constant of ``V_q'`` (Lemma 2): ``M = (q + 1)^2 / q``, the
    curvature of every quadratic majoriser of the MM iteration.

    Parameters
    ----------
    q : float
        ``> 0``.

    Returns
    -------
    float

    Raises
    ------
    ValueError, TypeError
        When ``q`` is not a positive finite number.

    Examples
    --------
    >>> import kerndwd
    >>> kerndwd.lipschitz(1.0)
    4.0
    >>> kerndwd.lipschitz(1e200)  # (q + 1)^2 alone would overflow
    1e+200
    """
    q = _check_q(q)
    if q > 1e100:  # (q + 1)^2 would overflow near 1e154; (q + 1)^2 / q = q + 2 + 1/q rounds to q
        return q
    return DWDLoss(q).lipschitz


def _as_margins(u: ArrayLike) -> NDArray[np.float64]:
    arr = np.asarray(u, dtype=float)
    if np.isnan(arr).any():
        raise ValueError("u contains NaN")
    return arr


def _log_tail_scale(q: float) -> float:
    """``-log(t_q^q) = q log(1 + 1/q)``, in ``(0, 1)``, to a few ulps: through
    ``log1p(1/q)`` for ``q >= 1``, ``q (log1p(q) - log(q))`` (two positive
    terms) below, where ``1/q`` may overflow."""
    if q >= 1.0:
        return q * np.log1p(1.0 / q)
    return q * (np.log1p(q) - np.log(q))


def _above_knot(u: NDArray[np.float64], q: float) -> NDArray[np.bool_]:
    """``u > q / (q + 1)`` for a 1-d ``u``, decided exactly: in floating point,
    and in rational arithmetic for the margins within a few ulps of the
    rounded knot."""
    t = q / (q + 1.0)
    above = u > t
    exact_q = Fraction(q)
    for i in np.flatnonzero(np.abs(u - t) <= 4.0 * np.spacing(t)).tolist():
        above[i] = Fraction(float(u[i])) * (exact_q + 1) > exact_q
    return above


def _loss_exact(u: NDArray[np.float64], q: float) -> NDArray[np.float64]:
    """``V_q(u)`` to a few ulps for every ``q > 0``; the pieces meet at the
    computed ``1/(q + 1)``, so the result is non-increasing in ``u`` as
    computed too."""
    flat = u.reshape(-1)
    top = 1.0 / (q + 1.0)
    tail = np.exp(-_log_tail_scale(q)) * top  # t_q^q / (q + 1)
    above = _above_knot(flat, q)
    with np.errstate(divide="ignore", over="ignore", under="ignore", invalid="ignore"):
        power = np.minimum(tail * np.power(np.where(above, flat, 1.0), -q), top)
    return np.where(above, power, np.maximum(1.0 - flat, top)).reshape(u.shape)


def _deriv_exact(u: NDArray[np.float64], q: float) -> NDArray[np.float64]:
    """``V_q'(u)`` to a few ulps for every ``q > 0``: ``-t_q^q u^(-q) (t_q / u)``
    above the exact knot (each factor at most 1 or ``e``), ``-1`` up to it."""
    flat = u.reshape(-1)
    t = q / (q + 1.0)
    above = _above_knot(flat, q)
    with np.errstate(divide="ignore", over="ignore", under="ignore", invalid="ignore"):
        at = np.where(above, flat, 1.0)
        power = np.minimum(np.exp(-_log_tail_scale(q)) * np.power(at, -q) * np.minimum(t / at, 1.0), 1.0)
    return np.negative(np.where(above, power, 1.0)).reshape(u.shape)


def dwd_loss(u: ArrayLike, q: float = 1.0) -> NDArray[np.float64] | float:
    """The generalized DWD loss ``V_q(u)`` (paper eq. 3.1), elementwise.

    Parameters
    ----------
    u : array_like
        Margins ``y f(x)``; any shape. ``+inf`` gives 0 and ``-inf`` gives
        ``+inf``; NaN is refused.
    q : float, default 1
        Positive exponent; ``q = 1`` is the standard DWD loss of Marron,
        Todd & Ahn (2007).

    Returns
    -------
    ndarray or float
        ``V_q(u)``, the shape of ``u``.

    Raises
    ------
    ValueError, TypeError
        For NaN margins or a ``q`` that is not a positive finite number.

    Examples
    --------
    >>> import kerndwd
    >>> [float(v) for v in kerndwd.dwd_loss([-1.0, 0.5, 2.0], q=1.0)]
    [2.0, 0.5, 0.125]
    """
    q = _check_q(q)
    arr = _as_margins(u)
    out = _loss_exact(arr, q)  # finite or +-inf for every margin and q, without a floating-point warning
    return out if out.ndim else float(out)


def dwd_loss_deriv(u: ArrayLike, q: float = 1.0) -> NDArray[np.float64] | float:
    """The derivative ``V_q'(u)`` (paper eq. 3.5), elementwise, in ``[-1, 0)``.

    Parameters
    ----------
    u : array_like
        Margins; NaN is refused.
    q : float, default 1
        ``> 0``.

    Returns
    -------
    ndarray or float

    Raises
    ------
    ValueError, TypeError
        For NaN margins or a ``q`` that is not a positive finite number.

    Examples
    --------
    >>> import kerndwd
    >>> [float(v) for v in kerndwd.dwd_loss_deriv([0.0, 1.0, 2.0], q=1.0)]
    [-1.0, -0.25, -0.0625]
    """
    q = _check_q(q)
    arr = _as_margins(u)
    out = _deriv_exact(arr, q)  # in [-1, 0] for every margin and q, without a floating-point warning
    return out if out.ndim else float(out)


def hinge_loss(u: ArrayLike) -> NDArray[np.float64] | float:
    """The SVM hinge ``max(0, 1 - u)``, the ``q -> inf`` limit of ``V_q``.

    Parameters
    ----------
    u : array_like
        Margins; NaN is refused.

    Returns
    -------
    ndarray or float

    Raises
    ------
    ValueError
        For NaN margins.

    Examples
    --------
    >>> from kerndwd.loss import hinge_loss
    >>> [float(v) for v in hinge_loss([-1.0, 0.5, 2.0])]
    [2.0, 0.5, 0.0]
    """
    arr = _as_margins(u)
    out = np.maximum(0.0, 1.0 - arr)
    return out if out.ndim else float(out)


def population_minimizer(eta: ArrayLike, q: float = 1.0) -> NDArray[np.float64] | float:
    """Minimiser of ``eta V_q(f) + (1 - eta) V_q(-f)`` over ``f`` (Lemma 3, eq. 4.4).

    ``f~ = t_q (eta / (1 - eta))^(1/(q+1))`` when ``eta > 1/2``,
    ``-t_q ((1 - eta) / eta)^(1/(q+1))`` when ``eta < 1/2`` and ``0`` at
    ``eta = 1/2``; it has the sign of ``eta - 1/2`` (Fisher consistency).
    ``eta`` must lie strictly between 0 and 1.

    Parameters
    ----------
    eta : array_like
        ``P(Y = +1 | x)``, strictly between 0 and 1.
    q : float, default 1
        ``> 0``.

    Returns
    -------
    ndarray or float

    Raises
    ------
    ValueError
        When ``eta`` is outside ``(0, 1)`` or NaN.

    Examples
    --------
    >>> import kerndwd
    >>> [round(float(v), 4) for v in kerndwd.population_minimizer([0.2, 0.5, 0.8], q=1.0)]
    [-1.0, 0.0, 1.0]
    """
    q = _check_q(q)
    e = np.asarray(eta, dtype=float)
    if np.isnan(e).any() or (e <= 0).any() or (e >= 1).any():
        raise ValueError("eta must lie strictly between 0 and 1")
    t = q / (q + 1.0)
    odds = np.where(e >= 0.5, e / (1.0 - e), (1.0 - e) / e)
    mag = t * odds ** (1.0 / (q + 1.0))
    out = np.where(e > 0.5, mag, np.where(e < 0.5, -mag, 0.0))
    return out if out.ndim else float(out)


def conditional_probability(f: ArrayLike, q: float = 1.0) -> NDArray[np.float64] | float:
    """``eta = P(Y = +1 | x)`` from a decision value, inverting (4.4).

    By Lemma 3 the population minimiser of the DWD risk is
    ``f = t (eta / (1 - eta))^(1/(q+1))`` for ``eta > 1/2`` and its mirror
    below, ``t = q/(q+1)``: it never falls inside ``(-t, t)``, and every value
    there minimises the risk at ``eta = 1/2``.  The inverse is therefore

    * ``eta = r / (1 + r)`` with ``r = (f / t)^(q+1)`` for ``f > t``,
    * its mirror ``1 - eta(-f)`` for ``f < -t``,
    * ``1/2`` for ``|f| <= t``: the value is not identified there.

    A fitted (penalised) decision function is shrunk towards 0, so many
    points fall in the flat band; :mod:`kerndwd.calibration` fits a sigmoid
    on held-out decision values instead (Platt scaling), which is monotone
    everywhere.

    Parameters
    ----------
    f : array_like
        Decision values.
    q : float, default 1
        The loss exponent the decision values were fitted with.

    Returns
    -------
    ndarray or float
        ``eta`` in ``[0, 1]``, the shape of ``f``.

    Examples
    --------
    >>> import kerndwd
    >>> eta = kerndwd.conditional_probability([-2.0, 0.2, 2.0], q=1.0)
    >>> [round(float(v), 4) for v in eta]
    [0.0588, 0.5, 0.9412]
    >>> round(float(kerndwd.population_minimizer(0.9412, q=1.0)), 3)
    2.0
    """
    q = _check_q(q)
    arr = _as_margins(f)
    t = q / (q + 1.0)
    mag = np.abs(arr)
    with np.errstate(divide="ignore", over="ignore", under="ignore"):
        r = (t / np.maximum(mag, t)) ** (q + 1.0)  # in (0, 1]; 1 inside the band
    upper = 1.0 / (1.0 + r)  # eta for f > t (r = 1 gives 1/2 at the band's edge)
    out = np.where(arr > t, upper, np.where(arr < -t, 1.0 - upper, 0.5))
    return out if out.ndim else float(out)
