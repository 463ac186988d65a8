"""The loss object of the engine: ``V_q`` with its weights, passed once.

:class:`DWDLoss` bundles the exponent ``q`` and the observation weights of
the data term ``(1/n) sum_i w_i V_q(y_i f_i)`` of (3.1), (4.2) and (6.2).
It is built where input enters (the problem object), handed to the
majoriser, and the MM loop reads it from there; no other part of the engine
receives ``q`` or the weights.

The elementwise kernels :func:`loss_values` and :func:`loss_derivs` work on
validated float input and never raise; the public, checked versions are
:func:`kerndwd.dwd_loss` and :func:`kerndwd.dwd_loss_deriv`.
"""

from __future__ import annotations

import numpy as np

__all__ = [
    "DWDLoss", "loss_values", "loss_derivs", "loss_values_and_derivs", "loss_derivs_and_curvatures",
    "weight_scale", "WEIGHT_OCTAVES",
]


def loss_values(u, q):
    """``V_q(u)`` (3.1): ``1 - u`` up to the knot ``t = q/(q+1)``, then
    ``(t/u)^q / (q+1)``, a form whose powers cannot overflow (``t/u < 1``).

    The linear piece is held at or above ``1/(q+1)`` as computed, the largest
    value the other piece can take in floating point: ``t`` is rounded, and
    ``1 - t`` may fall an ulp below ``1/(q+1)`` (q = 0.0274 does), which
    would let ``V_q`` rise by an ulp across the knot.  Only margins within
    the rounding of ``t`` are affected."""
    t = q / (q + 1.0)
    top = 1.0 / (q + 1.0)
    ratio = t / np.maximum(u, t)
    return np.where(u <= t, np.maximum(1.0 - u, top), ratio**q / (q + 1.0))


def loss_derivs(u, q):
    """``V_q'(u)`` (3.5): ``-1`` up to the knot, then ``-(t/u)^(q+1)``."""
    t = q / (q + 1.0)
    # at or below the knot the ratio is exactly 1.0, and 1.0 ** (q + 1) is
    # exactly 1.0: no branch is needed (this runs once per MM pass)
    out = np.maximum(u, t, out=np.empty_like(u, dtype=float))
    np.divide(t, out, out=out)
    np.power(out, q + 1.0, out=out)
    return np.negative(out, out=out)


#: Weights whose geometric mean lies outside [2^-WEIGHT_OCTAVES, 2^WEIGHT_OCTAVES]
#: are rescaled by a power of two (see :class:`DWDLoss`); R's weights of a few
#: units are never touched.
WEIGHT_OCTAVES = 10


def weight_scale(weights):
    """The power of two nearest the geometric mean of the positive weights, or
    1 when that mean is within ``2^-WEIGHT_OCTAVES .. 2^WEIGHT_OCTAVES``."""
    if weights is None:
        return 1.0
    positive = weights[weights > 0]
    octave = int(np.round(np.mean(np.log2(positive))))  # the geometric mean: no overflow at any scale
    return 1.0 if abs(octave) <= WEIGHT_OCTAVES else float(2.0**octave)


def loss_values_and_derivs(u, q):
    """``V_q(u)`` and ``V_q'(u)`` from one power: beyond the knot
    ``V_q = r^q / (q+1)`` and ``V_q' = -r^(q+1)`` with ``r = t/u``."""
    t = q / (q + 1.0)
    ratio = np.maximum(u, t)
    np.divide(t, ratio, out=ratio)
    power = ratio ** q
    values = np.where(u <= t, np.maximum(1.0 - u, 1.0 / (q + 1.0)), power / (q + 1.0))  # see loss_values
    power *= ratio
    return values, np.negative(power, out=power)


def loss_derivs_and_curvatures(u, q):
    """``V_q'(u)`` and the generalized second derivative ``V_q''(u)`` in one pass.

    ``V_q`` is C^1 with a piecewise-smooth derivative (Lemma 2): ``V_q'' = 0``
    up to the knot ``t = q/(q+1)`` and ``(q+1) t^(q+1) u^(-q-2) = -(q+1) V_q'(u) / u``
    beyond it, where it is at most ``M = (q+1)^2/q`` (its value just above the
    knot).  At the knot itself the generalized derivative is the interval
    ``[0, M]``; the lower end, 0, is returned there.
    """
    t = q / (q + 1.0)
    ratio = np.maximum(u, t)
    curv = np.divide(q + 1.0, ratio)
    np.divide(t, ratio, out=ratio)
    np.power(ratio, q + 1.0, out=ratio)
    curv *= ratio
    curv = np.where(u <= t, 0.0, curv)
    return np.negative(ratio, out=ratio), curv


class DWDLoss:
    """``u -> w_i V_q(u_i)`` for exponent ``q > 0`` and weights ``w`` (None: all ones).

    Weights ``c w`` at penalty ``lambda`` give the fit of ``w`` at
    ``lambda / c`` with the objective times ``c``.  When the mean weight is
    far from 1 (beyond :data:`WEIGHT_OCTAVES` powers of two) the loss keeps
    ``w / scale`` for the power of two ``scale`` nearest the geometric mean
    of the positive weights (an exact division), and
    :func:`kerndwd.engine.run_path` solves at ``lambda / scale`` and
    reports in the caller's units: the majoriser's fixed ridge then keeps its
    usual weight, where otherwise weights of 1e50 would swamp it and weights
    of 1e-50 would leave nothing but it.

    Attributes
    ----------
    q : float
    weights : ndarray of shape (n,) or None
        Observation weights (weighted DWD, (6.2)), divided by ``scale``; None
        for the unweighted problem.
    scale : float
        The power of two the given weights were divided by (1: none).
    lipschitz : float
        ``M = (q + 1)^2 / q``, the bound of Lemma 2 on ``V_q''``: the curvature
        of every quadratic majoriser of the engine.

    Parameters
    ----------
    q : float
        The exponent, ``> 0`` (validated by the faces, not here).
    weights : ndarray of shape (n,), optional
        Observation weights as given; None for the unweighted problem.
    scale : float, optional
        The power of two to divide the weights by; default chosen from them.

    Examples
    --------
    >>> import numpy as np
    >>> from kerndwd.engine import DWDLoss
    >>> loss = DWDLoss(1.0)
    >>> loss.lipschitz, loss.value(np.array([-1.0, 0.5, 2.0])).tolist()
    (4.0, [2.0, 0.5, 0.125])
    >>> heavy = DWDLoss(1.0, np.full(3, 1e6))  # far from 1: kept divided by 2**20
    >>> heavy.scale, heavy.weights.tolist() == [1e6 / 2**20] * 3
    (1048576.0, True)
    """

    __slots__ = ("q", "weights", "lipschitz", "scale")

    def __init__(self, q, weights=None, scale=None):
        self.q = float(q)
        self.scale = weight_scale(weights) if scale is None else float(scale)
        self.weights = weights if self.scale == 1.0 else weights / self.scale
        self.lipschitz = (self.q + 1.0) ** 2 / self.q

    @property
    def weighted(self):
        return self.weights is not None

    def value(self, margins):
        """``V_q`` elementwise (unweighted).

        Parameters
        ----------
        margins : ndarray
            ``u_i = y_i f_i``.

        Returns
        -------
        ndarray, shape of ``margins``
        """
        return loss_values(margins, self.q)

    def deriv(self, margins):
        """``V_q'`` elementwise (unweighted).

        Parameters
        ----------
        margins : ndarray
            ``u_i = y_i f_i``.

        Returns
        -------
        ndarray, shape of ``margins``
        """
        return loss_derivs(margins, self.q)

    def values_and_derivs(self, margins):
        """``(V_q, V_q')`` elementwise (unweighted): see :func:`loss_values_and_derivs`.

        Parameters
        ----------
        margins : ndarray
            ``u_i = y_i f_i``.

        Returns
        -------
        values, derivs : ndarray, shape of ``margins``
        """
        return loss_values_and_derivs(margins, self.q)

    def derivs_and_curvatures(self, margins):
        """``(V_q', V_q'')`` elementwise (unweighted): see :func:`loss_derivs_and_curvatures`.

        Parameters
        ----------
        margins : ndarray
            ``u_i = y_i f_i``.

        Returns
        -------
        derivs, curvatures : ndarray, shape of ``margins``
        """
        return loss_derivs_and_curvatures(margins, self.q)

    def mean(self, margins):
        """The data term ``(1/n) sum_i w_i V_q(u_i)`` (divided by ``n``, not by the
        total weight, as the R package does).

        Parameters
        ----------
        margins : ndarray
            ``u_i = y_i f_i``.

        Returns
        -------
        float
        """
        values = loss_values(margins, self.q)
        if self.weights is not None:
            values = self.weights * values
        return float(np.mean(values))

    def weighted_labels(self, y):
        """``w * y`` (``y`` itself when unweighted): the factor of ``V_q'`` in the
        derivative of the data term with respect to ``f``.

        Parameters
        ----------
        y : ndarray, shape (n,)
            Labels in {-1, +1}.

        Returns
        -------
        ndarray, shape (n,)
        """
        return y if self.weights is None else self.weights * y

    def _same_scale(self, q, weights):
        out = DWDLoss(q, None)
        out.weights, out.scale = weights, self.scale
        return out

    def subset(self, rows):
        """The same loss on a subset of the observations (a CV fold), at the same scale.

        Parameters
        ----------
        rows : ndarray of int
            The observations kept.

        Returns
        -------
        DWDLoss
        """
        return self._same_scale(self.q, None if self.weights is None else self.weights[rows])

    def with_q(self, q):
        """The same weights and scale with another exponent.

        Parameters
        ----------
        q : float
            The new exponent.

        Returns
        -------
        DWDLoss
        """
        return self._same_scale(q, self.weights)

    def __repr__(self):
        return f"DWDLoss(q={self.q:g}, weighted={self.weighted})"

    def __getstate__(self):
        return (self.q, self.weights, self.scale)

    def __setstate__(self, state):
        q, weights, scale = state
        self.__init__(q, None)
        self.weights, self.scale = weights, scale
