"""Rounding bounds shared by the property tests."""

import numpy as np

from _engine import evaluate


def objective_rounding(maj, alpha, y, lam):
    """A bound on the rounding of ``F`` evaluated at ``alpha``: each ``f_i`` is a
    sum of ``n`` or ``p`` products, so it carries an error up to
    ``n eps_machine (|b0| + |B| |theta|)_i``, which moves ``F`` through
    ``w_i |V_q'| / n``; the penalty likewise (``|theta|' |Omega| |theta|``),
    and the sums over the rows add ``n eps_machine |F|``."""
    form = maj.form
    theta = np.abs(alpha[1:])
    if hasattr(form, "K"):
        K = np.abs(form.K)
        fa, pen = abs(alpha[0]) + K @ theta, theta @ K @ theta
    else:
        B = abs(form.B)
        fa, pen = abs(alpha[0]) + np.asarray(B @ theta).ravel(), theta @ theta
    w = np.ones(form.n) if maj.loss.weights is None else maj.loss.weights
    _, value, _ = evaluate(form, alpha, y, maj.loss, lam)
    f = alpha[0] + form.apply(alpha[1:])
    slope = np.abs(maj.loss.deriv(y * f))
    return 4 * form.n * np.finfo(float).eps * (np.mean(w * slope * fa) + lam * pen + abs(value))
