"""Class probabilities from DWD decision values by Platt scaling.

``P(Y = +1 | f) = 1 / (1 + exp(a f + b))`` with ``(a, b)`` fitted by
maximum likelihood on *held-out* decision values (decision values of the
training points themselves are over-confident), with Platt's smoothed
targets ``(N+ + 1)/(N+ + 2)`` and ``1/(N- + 2)`` so that a separable set
does not drive ``a`` to infinity (Platt 1999; the Newton iteration with a
backtracking line search of Lin, Lin & Weng 2007).

The estimators fit the slope alone (``centred=True``: ``b = 0``), so that
probability 1/2 falls on DWD's decision boundary ``f = 0`` and
``predict_proba`` never contradicts ``predict``; the R-like
:func:`kerndwd.predict` fits both.

:func:`kerndwd.conditional_probability` is the other route, exact in the
population but flat (``1/2``) for ``|f| <= q/(q+1)``; see its docstring.
"""

from __future__ import annotations

import warnings

import numpy as np

__all__ = ["fit_platt", "platt_probability"]

#: Newton iterations and the smallest step of the line search.
_MAX_ITER = 100
_MIN_STEP = 1e-10
#: Newton stops when the gradient's largest entry falls below this (or, at
#: the rounding limit, when a full step no longer lowers it).
_GRAD_TOL = 1e-10
#: Relative rounding of the objective (a sum of n terms): a predicted
#: decrease below this share of it cannot be seen by comparing values.
_ROUNDING = 1e-12


def _objective(a, b, f, t):
    z = a * f + b
    # log(1 + exp(z)) and log(1 + exp(-z)) without overflow
    log1pexp = np.logaddexp(0.0, z)
    return float(np.sum(t * log1pexp + (1.0 - t) * (log1pexp - z)))


def fit_platt(f, y, centred=False):
    """``(a, b)`` of the sigmoid ``1 / (1 + exp(a f + b))`` fitted to held-out
    decision values ``f`` and labels ``y`` in {-1, +1}; ``centred=True`` fixes
    ``b = 0`` (probability 1/2 at ``f = 0``).

    Parameters
    ----------
    f : array_like of float, shape (n,)
        Decision values, ideally held out (from cross-validation): those of
        the training points themselves are over-confident.
    y : array_like, shape (n,)
        Labels, +1 (``y > 0``) or -1.
    centred : bool, default False
        Fix ``b = 0``, so that probability 1/2 falls on ``f = 0``.

    Returns
    -------
    a, b : float
        The fitted sigmoid; ``a < 0`` when larger ``f`` means +1 more often.

    See Also
    --------
    platt_probability, kerndwd.CVResult.platt_coefficients

    Examples
    --------
    >>> import numpy as np
    >>> from kerndwd.calibration import fit_platt, platt_probability
    >>> f = np.array([-2.0, -1.0, -0.5, 0.3, 0.8, 2.0])
    >>> y = np.array([-1, -1, 1, -1, 1, 1])
    >>> a, b = fit_platt(f, y)
    >>> bool(a < 0)
    True
    >>> p = platt_probability(f, a, b)
    >>> bool(np.all(np.diff(p) > 0))
    True
    """
    f = np.asarray(f, dtype=float)
    y = np.asarray(y)
    n_pos = int((y > 0).sum())
    n_neg = y.size - n_pos
    t = np.where(y > 0, (n_pos + 1.0) / (n_pos + 2.0), 1.0 / (n_neg + 2.0))
    a, b = 0.0, 0.0 if centred else float(np.log((n_neg + 1.0) / (n_pos + 1.0)))
    value = _objective(a, b, f, t)
    for _ in range(_MAX_ITER):
        z = a * f + b
        p = 0.5 * (1.0 + np.tanh(-0.5 * z))  # 1 / (1 + exp(z)), stable
        d1 = t - p  # derivative of the loss with respect to z
        d2 = np.maximum(p * (1.0 - p), 1e-12)
        g = np.array([f @ d1, 0.0 if centred else d1.sum()])
        if np.abs(g).max() < _GRAD_TOL:
            break
        H = np.array([[f @ (d2 * f), f @ d2], [f @ d2, d2.sum()]]) + 1e-12 * np.eye(2)
        if centred:
            step = np.array([-g[0] / H[0, 0], 0.0])
        else:
            step = -np.linalg.solve(H, g)
        if -(g @ step) <= _ROUNDING * max(abs(value), 1.0):
            # the full step's predicted decrease is below the objective's
            # rounding, so comparing objective values cannot accept it (the
            # line search would halve down to _MIN_STEP and stop with a
            # gradient far above _GRAD_TOL); this close to the optimum
            # Newton's full step is safe, judged by the gradient it leaves
            na, nb = a + step[0], b + step[1]
            p = 0.5 * (1.0 + np.tanh(-0.5 * (na * f + nb)))
            d1 = t - p
            g_new = np.array([f @ d1, 0.0 if centred else d1.sum()])
            if np.abs(g_new).max() >= np.abs(g).max():
                break
            a, b, value = na, nb, _objective(na, nb, f, t)
            continue
        s = 1.0
        while s >= _MIN_STEP:
            na, nb = a + s * step[0], b + s * step[1]
            new = _objective(na, nb, f, t)
            if new < value + 1e-4 * s * (g @ step):
                a, b, value = na, nb, new
                break
            s /= 2.0
        else:
            break
    return float(a), float(b)


def fit_heldout_platt(heldout, targets, stacklevel=2):
    """Platt's centred sigmoid ``(a, b)`` (``b = 0``) of held-out decision values,
    as the estimators fit it.

    One sigmoid serves every one-vs-rest problem, fitted on their pooled
    values: the most probable class is then always the predicted one.  A
    slope of the wrong sign (probabilities falling as the decision value
    rises) is returned with a warning: the estimators then invert the
    population minimiser (4.4) instead.

    Parameters
    ----------
    heldout : sequence of array_like, shape (n,) each
        The held-out decision values of each binary problem, NaN where missing.
    targets : sequence of array_like, shape (n,) each
        Their labels, +1 or -1.
    stacklevel : int, default 2
        Of the warning, as :func:`warnings.warn` takes it (2: the caller).

    Returns
    -------
    a, b : float

    Examples
    --------
    >>> import numpy as np
    >>> f = np.array([[-2.0, -1.0, np.nan, 0.3, 0.8, 2.0]])
    >>> y = np.array([[-1, -1, 1, -1, 1, 1]])
    >>> a, b = fit_heldout_platt(f, y)
    >>> bool(a < 0), b
    (True, 0.0)
    """
    f, t = np.concatenate(list(heldout)), np.concatenate(list(targets))
    keep = ~np.isnan(f)
    a, b = fit_platt(f[keep], t[keep], centred=True)
    if not a < 0:
        warnings.warn(f"Platt's sigmoid fitted to the held-out decision values has slope a = {a:.3g} >= 0 "
                      "(probabilities would fall as the decision value rises); predict_proba inverts the "
                      "population minimiser (4.4) instead", UserWarning, stacklevel=stacklevel)
    return a, b


def platt_probability(f, a, b):
    """``1 / (1 + exp(a f + b))``, computed without overflow.

    Parameters
    ----------
    f : array_like of float
        Decision values.
    a, b : float
        The sigmoid, from :func:`fit_platt`.

    Returns
    -------
    ndarray of float, shape of ``f``
        The probability of +1 at each decision value.

    Examples
    --------
    >>> import numpy as np
    >>> from kerndwd.calibration import platt_probability
    >>> platt_probability(np.array([-1000.0, 0.0, 1000.0]), a=-2.0, b=0.0).tolist()
    [0.0, 0.5, 1.0]
    """
    z = a * np.asarray(f, dtype=float) + b
    return 0.5 * (1.0 + np.tanh(-0.5 * z))
