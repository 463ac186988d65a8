"""The objective of a fit on its training rows, evaluated in one place.

For decision values ``f = b0 + B theta`` on the rows of a form,

    F(b0, theta) = (1/n) sum_i w_i V_q(y_i f_i) + lambda ||f||^2,          (3.1), (4.2), (6.2)

:class:`Objective` gives its value, its gradient with respect to
``(b0, theta)``, the first and second derivatives of the data term in ``f``
(the MM step and the Newton system are built from them), and its value and
slope along a step (the line search).  The MM iteration, semismooth Newton
and the certified gap bound all use it, so the objective has one definition.

Every method accepts decision values of shape ``(n,)`` or ``(n, L)`` (one
column per lambda, as the certificates use them) where it says so, and works
on per-row vectors held by a Dask cluster
(:class:`kerndwd.engine.chunked.ChunkedRows`) as on numpy arrays.
"""

from __future__ import annotations

import numpy as np

__all__ = ["Objective"]


def _mean(values, n):
    """The mean of the ``n`` rows of ``values`` (a float for a vector, one per column
    for a matrix): numpy's ``mean``, the same sum and division, without its dispatch."""
    if values.ndim == 1:
        return float(values.sum()) / n
    return values.sum(axis=0) / n


class Objective:
    """``F`` on the rows of ``form`` for the labels ``y`` and the loss ``loss``.

    Parameters
    ----------
    form : Form
        ``f = b0 + B theta`` and the penalty of its basis.
    y : ndarray or ChunkedRows, shape (n,)
        Labels in {-1, +1}.
    loss : DWDLoss
        The exponent and the observation weights.

    Examples
    --------
    >>> import numpy as np
    >>> from kerndwd import engine
    >>> from kerndwd.engine.forms import DenseLinearForm
    >>> X = np.array([[1.0], [-1.0]]); y = np.array([1.0, -1.0])
    >>> objective = engine.Objective(DenseLinearForm(X), y, engine.DWDLoss(1.0))
    >>> f, value, grad = objective.evaluate(np.array([0.0, 1.0]), lam=0.5)
    >>> f.tolist(), value, grad.tolist()   # margins 1: V_1(1) = 1/4; penalty 0.5 * 1
    ([1.0, -1.0], 0.75, [0.0, 0.75])
    """

    def __init__(self, form, y, loss):
        self.form = form
        self.y = y
        self.loss = loss
        self.n = form.n
        #: ``w * y``, the factor of ``V_q'`` in the derivative of the data term
        self.wy = loss.weighted_labels(y)

    def _margins(self, f):
        return self.y * f if f.ndim == 1 else self.y[:, None] * f

    def _weighted(self, values):
        w = self.loss.weights
        if w is None:
            return values
        return w * values if values.ndim == 1 else w[:, None] * values

    def data_term(self, f):
        """``(1/n) sum_i w_i V_q(y_i f_i)``.

        Parameters
        ----------
        f : ndarray, shape (n,) or (n, L)
            Decision values.

        Returns
        -------
        float or ndarray of shape (L,)
        """
        values = self._weighted(self.loss.value(self._margins(f)))
        return _mean(values, self.n)

    def value(self, f, penalty, lam):
        """``F`` from the decision values and the penalty at them.

        Parameters
        ----------
        f : ndarray, shape (n,)
            Decision values.
        penalty : float
            ``||f||^2``.
        lam : float

        Returns
        -------
        float
        """
        return self.data_term(f) + lam * penalty

    def value_at_zero(self):
        """``F`` at ``b0 = 0, theta = 0``, where every path starts: every margin is
        0, where ``V_q = 1``, so ``F`` is the mean weight (1 unweighted) whatever
        lambda, the same number :meth:`value` gives there, without a pass over the rows.

        Returns
        -------
        float
        """
        weights = self.loss.weights
        return 1.0 if weights is None else _mean(weights, self.n)

    def derivative(self, f):
        """``z_i = w_i y_i V_q'(y_i f_i)``: the data term's derivative in ``f``, times ``n``.

        Parameters
        ----------
        f : ndarray, shape (n,) or (n, L)

        Returns
        -------
        ndarray, the shape of ``f``
        """
        if f.ndim == 1:
            return self.wy * self.loss.deriv(self.y * f)
        return self._weighted(self.y[:, None] * self.loss.deriv(self._margins(f)))

    def data_term_and_derivative(self, f):
        """:meth:`data_term` and :meth:`derivative` at once (``V_q`` and ``V_q'``
        from one power).

        Parameters
        ----------
        f : ndarray, shape (n,) or (n, L)

        Returns
        -------
        value : float or ndarray of shape (L,)
        z : ndarray, the shape of ``f``
        """
        values, derivs = self.loss.values_and_derivs(self._margins(f))
        if f.ndim == 1:
            return _mean(self._weighted(values), self.n), self.wy * derivs
        return _mean(self._weighted(values), self.n), self._weighted(self.y[:, None] * derivs)

    def derivatives_and_curvatures(self, f):
        """``(z, d)``: ``z`` as :meth:`derivative`, and ``d_i = w_i V_q''(y_i f_i)``, the
        data term's (generalized) second derivative in ``f_i``, times ``n``.

        Parameters
        ----------
        f : ndarray, shape (n,) or (n, L)

        Returns
        -------
        z, d : ndarray, the shape of ``f``
        """
        d1, d2 = self.loss.derivs_and_curvatures(self._margins(f))
        if f.ndim == 1:
            return self.wy * d1, self._weighted(d2)
        return self._weighted(self.y[:, None] * d1), self._weighted(d2)

    def along(self, f, df, t):
        """The data term at ``f + t df`` and its derivative in ``t`` there (a
        line search along a step that changes ``f`` by ``df``).

        Parameters
        ----------
        f, df : ndarray, shape (n,)
        t : float

        Returns
        -------
        value, slope : float
        """
        values, derivs = self.loss.values_and_derivs(self.y * (f + t * df))
        slope = float(derivs @ (self.wy * df)) / self.n
        return float(np.mean(self._weighted(values))), slope

    def evaluate(self, alpha, lam):
        """Decision values ``f``, the objective ``F`` and its gradient with respect
        to ``(b0, theta)`` at intercept-first coefficients ``alpha``, with one
        product by the form each way.

        Parameters
        ----------
        alpha : ndarray, shape (ncoef,)
            Intercept first.
        lam : float
            The penalty.

        Returns
        -------
        f : ndarray, shape (n,)
        value : float
        grad : ndarray, shape (ncoef,)
        """
        form, loss = self.form, self.loss
        theta = alpha[1:]
        applied = form.apply(theta)
        f = alpha[0] + applied
        values, z = loss.values_and_derivs(self.y * f)
        z *= self.y
        if loss.weights is not None:
            values = loss.weights * values
            z = loss.weights * z
        n = form.n
        value = _mean(values, n) + lam * form.penalty(theta, applied)
        grad = np.empty(alpha.shape[0])
        grad[0] = z.sum() / n
        grad[1:] = form.apply_t(z) / n + lam * form.penalty_grad(theta, applied)
        return f, value, grad
