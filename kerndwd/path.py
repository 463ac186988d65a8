"""``fit()`` and ``predict()``: the R-like entry points (``kerndwd()`` and
``predict.kerndwd()`` of the R package), and the path object they share."""

from __future__ import annotations

import numpy as np

from . import _mm
from ._checks import (
    check_kernel,
    check_lambdas,
    check_matrix,
    check_maxit,
    check_positive,
    check_qval,
    check_weights,
    encode_labels,
    warn_not_converged,
)
from ._rnames import RNamed
from .kernels import rbfdot, sigest

__all__ = ["fit", "predict", "DWDPath"]

# Rows of newx per block when forming K(newx, x) in predict: bounds memory
# at about 8 * _PREDICT_BLOCK * n bytes.
_PREDICT_BLOCK = 2048


def uses_linear_solver(kern, n, p, weighted, strict=False):
    """R's rule: the linear solver for ``vanilladot`` when ``n >= p``
    (unweighted) or ``n > p`` (weighted, and always in ``tunedwd``)."""
    if not kern.is_linear:
        return False
    return n > p if (weighted or strict) else n >= p


def build_majorizer(X, kern, q, w=None, gam=_mm.GAM_FIT, strict=False, K=None, eig=None):
    """The engine's majoriser for these data (R's choice of solver).

    ``K``, when given, is the precomputed kernel matrix of ``X`` (cv reuses
    one matrix for all folds); ``eig``, its eigendecomposition ``(e, U)``
    (used by the unweighted kernel solver; tune shares it across q).
    """
    n, p = X.shape
    if uses_linear_solver(kern, n, p, w is not None, strict):
        if w is None:
            return _mm.LinearEigen(X, q, gam)
        return _mm.LinearCholesky(X, w, q, gam)
    if K is None:
        K = kern(X)
    if w is None:
        return _mm.KernelEigen(K, q, gam, eig=eig)
    return _mm.KernelCholesky(K, w, q, gam)


class DWDPath(RNamed):
    """A fitted DWD path: one solution per lambda, like R's ``kerndwd`` object.

    Attributes (R's names; ``lambda`` is a Python keyword, so it is also
    readable as ``lambda_`` and ``path["lambda"]``)

    alpha : ndarray, shape (p + 1, L) or (n + 1, L)
        Intercept first, then ``beta`` (linear solver) or the kernel
        coefficients ``alpha`` (kernel solver); one column per lambda.
    lambda_ : ndarray, shape (L,)
        The lambdas of the returned columns, decreasing.
    npass : ndarray of int, shape (nlambda,)
        MM passes per requested lambda (0 after a failure).
    jerr : int
        0, or ``-l`` when ``maxit`` ran out on the ``l``-th lambda (1-based).
    kern, qval, wt, eps, maxit, solver
        What was fitted and how (``solver`` is R's routine name:
        ``ldwd``, ``wldwd``, ``kdwd`` or ``wkdwd``).
    classes : ndarray, shape (2,)
        The labels mapped to -1 and +1 (R's level order).
    objective : ndarray, shape (L,)
        The objective ``(1/n) sum w_i V_q(y_i f_i) + lambda ||f||^2`` at each column.
    kkt : ndarray, shape (L,)
        Norm of the gradient of that objective at each column: how far from
        optimal the default stopping rule left the fit.
    """

    _R_NAMES = ("alpha", "lambda", "npass", "jerr", "kkt", "objective")

    def __init__(self, result, *, kern, qval, wt, eps, maxit, solver, classes, x, gam, rule):
        self.alpha = result.alpha
        self.lambda_ = result.lambdas
        self.__dict__["lambda"] = self.lambda_
        self.npass = result.npass
        self.jerr = int(result.jerr)
        self.objective = result.objective
        self.kkt = result.kkt
        self.kern = kern
        self.qval = float(qval)
        self.wt = wt
        self.eps = float(eps)
        self.maxit = int(maxit)
        self.solver = solver
        self.classes = classes
        self.gam = float(gam)
        self.rule = rule
        self.x = x
        self.n_features = x.shape[1]

    @property
    def lambdas(self):
        return self.lambda_

    @property
    def is_linear(self):
        """True when ``alpha`` holds ``(b0, beta)`` of a linear fit."""
        return self.solver in ("ldwd", "wldwd")

    @property
    def intercept(self):
        return self.alpha[0]

    @property
    def coef(self):
        """``beta``, shape (p, L), for either solver with the linear kernel
        (``x' alpha`` when the kernel solver was used)."""
        if self.is_linear:
            return self.alpha[1:]
        if self.kern.is_linear:
            return self.x.T @ self.alpha[1:]
        raise AttributeError("coef exists only for the linear kernel; use alpha")

    def __repr__(self):
        lam = self.lambda_
        rng = f"{lam[0]:.3g}..{lam[-1]:.3g}" if lam.size else "none"
        return (
            f"DWDPath(kern={self.kern!r}, qval={self.qval:g}, solver={self.solver!r}, "
            f"n={self.x.shape[0]}, p={self.n_features}, nlambda={lam.size} ({rng}), "
            f"jerr={self.jerr}, total passes={int(self.npass.sum())})"
        )

    def decision_function(self, newx, lambdas=None):
        """Shorthand for ``predict(newx, type="link", lambdas=lambdas)``."""
        return self.predict(newx, type="link", lambdas=lambdas)

    def predict(self, newx, type="class", lambdas=None):
        """See :func:`kerndwd.predict`."""
        return predict(self, newx, type=type, lambdas=lambdas)

    def coef_at(self, lambdas):
        """Columns of ``alpha`` at arbitrary lambdas, by linear interpolation in
        lambda between the two neighbouring path columns (clamped to the ends)."""
        s = np.atleast_1d(np.asarray(lambdas, dtype=float))
        if not np.isfinite(s).all() or (s <= 0).any():
            raise ValueError("lambdas must be positive and finite")
        lam = self.lambda_
        if lam.size == 0:
            raise ValueError("the path has no fitted columns (jerr=%d)" % self.jerr)
        if lam.size == 1:
            return np.repeat(self.alpha, s.size, axis=1)
        # lam is decreasing; work on the increasing reversed copy
        lam_inc = lam[::-1]
        a_inc = self.alpha[:, ::-1]
        s_c = np.clip(s, lam_inc[0], lam_inc[-1])
        hi = np.clip(np.searchsorted(lam_inc, s_c, side="left"), 1, lam_inc.size - 1)
        lo = hi - 1
        frac = (s_c - lam_inc[lo]) / (lam_inc[hi] - lam_inc[lo])
        out = a_inc[:, lo] * (1.0 - frac) + a_inc[:, hi] * frac
        exact = np.isin(s, lam)
        for j in np.flatnonzero(exact):  # exact path lambdas: the column itself, no rounding
            out[:, j] = self.alpha[:, np.flatnonzero(lam == s[j])[0]]
        return out


def check_path_inputs(X, y, lambdas, wt, eps, maxit, stop):
    """The checks ``fit``, ``cv`` and ``tune`` share; returns
    ``(X, y_pm, classes, lambdas, wt, eps, maxit)`` validated."""
    if stop not in _mm.STOP_RULES:
        raise ValueError(f"stop must be one of {_mm.STOP_RULES}, got {stop!r}")
    X = check_matrix(X, "X")
    n = X.shape[0]
    y_pm, classes = encode_labels(y, n, "y")
    lam = check_lambdas(lambdas, n, "lambdas")
    w = check_weights(wt, n, "wt")
    eps = check_positive(eps, "eps")
    maxit = check_maxit(maxit, "maxit")
    return X, y_pm, classes, lam, w, eps, maxit


def resolve_kernel(kern, X, random_state):
    """R's default kernel ``rbfdot(sigma = sigest(x))`` when ``kern`` is None."""
    if kern is None:
        kern = rbfdot(sigma=sigest(X, random_state=random_state))
    return check_kernel(kern, "kern")


def fit_prepared(X, y_pm, classes, lam, q, w, eps, maxit, kern, *, gam=_mm.GAM_FIT, strict=False,
                 K=None, rule="step", warn=True, callback=None, accelerate=None, eig=None):
    """Fit on validated input (used by ``fit``, ``cv``, ``tune`` and the estimator).

    ``accelerate=None`` means: momentum with the gradient rule, R's plain
    iteration with R's rule.
    """
    if accelerate is None:
        accelerate = rule == "kkt"
    maj = build_majorizer(X, kern, q, w, gam, strict, K, eig)
    result = _mm.mm_path(maj, y_pm, w, q, lam, eps, maxit, callback=callback, rule=rule,
                         accelerate=accelerate)
    if result.jerr and warn:
        warn_not_converged(result.jerr, lam, maxit)
    return DWDPath(result, kern=kern, qval=q, wt=w, eps=eps, maxit=maxit, solver=maj.solver,
                   classes=classes, x=X, gam=gam, rule=rule)


def fit(X, y, lambdas=None, kern=None, qval=1.0, wt=None, eps=1e-5, maxit=100000, *,
        random_state=None, stop="step", accelerate=None):
    """Fit a DWD path, as ``kerndwd(x, y, kern, lambda, qval, wt, eps, maxit)`` in R.

    Minimises ``(1/n) sum_i wt_i V_q(y_i f(x_i)) + lambda ||f||^2`` for each
    lambda, by majorization-minimization with warm starts along the
    decreasing path (Wang & Zou 2018, Algorithms 1 and 2).

    Parameters
    ----------
    X : array_like or pandas DataFrame, shape (n, p)
        Numeric predictors.
    y : array_like, shape (n,)
        Exactly two distinct labels (numbers, strings, booleans, a pandas
        Series or Categorical).  They are mapped to -1/+1 in sorted order (a
        Categorical keeps its category order), as R orders factor levels;
        ``predict(type="class")`` answers in these labels.
    lambdas : array_like, optional
        Positive penalties, sorted decreasing before fitting.  Default: R's
        ``10^seq(3, -3, length=100)`` (``10^seq(0, -7, length=100)`` when
        ``n > 10000``).
    kern : Kernel, optional
        A kernel from :mod:`kerndwd.kernels`.  Default, as in R:
        ``rbfdot(sigma=sigest(X))``, random unless ``random_state`` is set.
        With ``vanilladot()`` and ``n >= p`` (``n > p`` when weighted) the
        linear solver is used and ``alpha`` holds ``(b0, beta)``; otherwise
        the kernel solver, and ``alpha`` holds ``(b0, alpha_1..alpha_n)``.
    qval : float, default 1
        The loss exponent ``q > 0``.  R silently replaces ``qval <= 0`` by 1;
        here it is an error.
    wt : array_like, optional
        Non-negative observation weights (weighted DWD, Qiao et al. 2010);
        the objective divides by ``n``, not by ``sum(wt)``, as in R.
    eps : float, default 1e-5
        Stopping tolerance.  With ``stop="step"`` (R's rule) a lambda stops
        when the squared norm of the MM step is below ``eps``; this default
        is loose at small lambda (see ``path.kkt``).  With ``stop="kkt"``
        it stops when the norm of the objective's gradient is ``<= eps``.
    maxit : int, default 100000
        Budget of MM passes for the **whole path**, as in R.  When it runs
        out on the ``l``-th lambda a :class:`DWDConvergenceWarning` is issued,
        ``jerr = -l`` and the ``l - 1`` finished columns are returned.
    random_state : int or numpy Generator, optional
        Seeds ``sigest`` when ``kern`` is omitted.
    stop : {"step", "kkt"}, default "step"
        The stopping rule, see ``eps``.
    accelerate : bool, optional
        Add Nesterov momentum (with a restart whenever the objective would
        rise) to the MM passes.  Default: on with ``stop="kkt"``, off with
        ``stop="step"`` so that R's iterates, ``npass`` included, are
        reproduced exactly.  On ill-conditioned problems it cuts the passes
        needed for a tight fit by 10 to 100 times.

    Returns
    -------
    DWDPath
    """
    X, y_pm, classes, lam, w, eps, maxit = check_path_inputs(X, y, lambdas, wt, eps, maxit, stop)
    q = check_qval(qval, "qval")
    kern = resolve_kernel(kern, X, random_state)
    return fit_prepared(X, y_pm, classes, lam, q, w, eps, maxit, kern, rule=stop, accelerate=accelerate)


def kernel_expansion(kern, newx, x, intercept, coef):
    """``intercept + K(newx, x) coef`` (``coef`` of shape (n, L)), forming the
    cross-kernel in blocks of rows so memory stays bounded for large ``newx``."""
    out = np.empty((newx.shape[0], coef.shape[1]))
    for start in range(0, newx.shape[0], _PREDICT_BLOCK):
        block = newx[start:start + _PREDICT_BLOCK]
        out[start:start + _PREDICT_BLOCK] = intercept + kern(block, x) @ coef
    return out


def link_values(path, newx, alpha):
    """``b0 + newx beta`` (linear fits) or ``b0 + K(newx, x) alpha``."""
    if path.is_linear:
        return alpha[0] + newx @ alpha[1:]
    return kernel_expansion(path.kern, newx, path.x, alpha[0], alpha[1:])


def predict(fit, newx, type="class", lambdas=None):
    """Predict from a fitted path, as ``predict.kerndwd`` in R.

    Parameters
    ----------
    fit : DWDPath
    newx : array_like or DataFrame, shape (m, p)
    type : {"class", "link"}
        ``"link"``: decision values ``b0 + newx beta`` (linear solver) or
        ``b0 + K(newx, x) alpha`` (kernel solver).  ``"class"``: the second
        label where the link is positive, else the first.
    lambdas : array_like, optional
        Lambdas to predict at.  Default: every column of the path.  A lambda
        that is not on the path is served by **linear interpolation in
        lambda** between the two neighbouring columns; lambdas beyond the
        ends of the path use the nearest end column.

    Returns
    -------
    ndarray, shape (m, L): one column per lambda, like R.

    Notes
    -----
    For ``n == p`` with the linear kernel, R fits the linear form but its
    ``predict`` takes the kernel branch (``b0 + newx x' beta``); we return the
    intended ``b0 + newx beta``.
    """
    if not isinstance(fit, DWDPath):
        raise TypeError(f"fit must be a DWDPath returned by kerndwd.fit, got {fit.__class__.__name__}")
    if type not in ("class", "link"):
        raise ValueError(f"type must be 'class' or 'link', got {type!r}")
    newx = check_matrix(newx, "newx")
    if newx.shape[1] != fit.n_features:
        raise ValueError(f"newx has {newx.shape[1]} columns but the model was fitted on {fit.n_features}")
    alpha = fit.alpha if lambdas is None else fit.coef_at(lambdas)
    link = link_values(fit, newx, alpha)
    if type == "link":
        return link
    return np.where(link > 0, fit.classes[1], fit.classes[0])
