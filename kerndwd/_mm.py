"""The one majorization-minimization (MM) engine behind every DWD fit.

Every solver minimises, for each ``lambda`` of a decreasing path,

    F(b0, theta) = (1/n) sum_i w_i V_q(y_i f(x_i)) + lambda ||f||^2,        (3.1), (4.2), (6.2)

with ``f = b0 + X theta`` (linear, ``||f||^2 = theta' theta``) or
``f = b0 + K theta`` (kernel, ``||f||^2 = theta' K theta``).  Lemma 2 bounds
``V_q''`` by ``M = (q+1)^2/q``, so ``n F`` is majorised at the current point by
a quadratic whose Hessian is ``M Z'WZ + 2 n lambda diag(0, Omega)``; one MM
pass moves to the minimiser of that quadratic (Algorithms 1 and 2).

What varies between solvers is only how that quadratic is solved, which is
the job of a *majoriser* object (one per design x weighting):

* :class:`LinearEigen`    -- unweighted linear: eigenbasis of ``Z'Z`` once,
  a rank-one (Sherman-Morrison) correction for the unpenalised intercept;
* :class:`LinearCholesky` -- weighted linear: Cholesky of the system per lambda;
* :class:`KernelEigen`    -- unweighted kernel: eigenbasis of ``K`` once; the
  iterate is kept in that basis so a pass costs two ``n x n`` products;
* :class:`KernelCholesky` -- weighted kernel: Cholesky of the ``(n+1)^2``
  system per lambda.

A majoriser exposes ``at_lambda(lam) -> step_fn`` where
``step_fn(z, coef) -> (step, df, grad_sq)`` returns the MM step in the
majoriser's own coordinates, the change it makes in the decision values
``f``, and the squared norm of the gradient of ``F`` at ``coef`` (a by-product
of forming the step, so a gradient-based stopping rule costs nothing); plus
``to_alpha(coef)`` for the intercept-first coefficients users see.  Later
scale-out solvers (Nystrom or random features: a linear design on new
columns; block coordinate descent: another ``step_fn``) plug in here.

The loop itself (:func:`mm_path`) follows the R package's iteration exactly:
zero start, warm starts along the path, a tiny ridge ``gam`` on the
majoriser, stop a lambda when the squared norm of the step is below ``eps``,
and ``maxit`` as a budget on the total passes of the whole path.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from scipy import linalg

from .loss import _deriv, _loss

#: Ridge the R package adds to the majoriser (eigenvalues or diagonal) in
#: ``kerndwd()``; it keeps singular ``Z'Z`` or ``K`` invertible.
GAM_FIT = 1e-7
#: The ridge R's ``tunedwd()`` uses instead.
GAM_TUNE = 1e-6


# --------------------------------------------------------------------------
# designs: how coefficients become decision values, and the penalty
# --------------------------------------------------------------------------
class LinearDesign:
    """``f = b0 + X beta``, ``||f||^2 = beta' beta``."""

    kind = "linear"

    def __init__(self, X):
        self.X = X
        self.n = X.shape[0]

    def apply(self, theta):
        return self.X @ theta

    def apply_t(self, z):
        return self.X.T @ z

    def penalty(self, theta, applied=None):
        return float(theta @ theta)

    def penalty_grad(self, theta, applied=None):
        return 2.0 * theta


class KernelDesign:
    """``f = b0 + K alpha``, ``||f||^2 = alpha' K alpha``."""

    kind = "kernel"

    def __init__(self, K):
        self.K = K
        self.n = K.shape[0]

    def apply(self, theta):
        return self.K @ theta

    def apply_t(self, z):
        return self.K @ z  # K is symmetric

    # ``applied`` = K theta when the caller has it already (it is f - b0)
    def penalty(self, theta, applied=None):
        return float(theta @ (self.K @ theta if applied is None else applied))

    def penalty_grad(self, theta, applied=None):
        return 2.0 * (self.K @ theta if applied is None else applied)


def evaluate(design, alpha, y, w, q, lam):
    """Decision values ``f``, the objective ``F`` and its gradient with respect to
    ``(b0, theta)`` at intercept-first coefficients ``alpha``, with one product
    by the design each way."""
    theta = alpha[1:]
    applied = design.apply(theta)
    f = alpha[0] + applied
    margins = y * f
    loss = _loss(margins, q)
    z = y * _deriv(margins, q)
    if w is not None:
        loss = w * loss
        z = w * z
    n = design.n
    value = float(np.mean(loss)) + lam * design.penalty(theta, applied)
    grad = np.concatenate(([z.sum() / n], design.apply_t(z) / n + lam * design.penalty_grad(theta, applied)))
    return f, value, grad


def objective(design, alpha, y, w, q, lam):
    """``F`` of the module docstring at intercept-first coefficients ``alpha``."""
    return evaluate(design, alpha, y, w, q, lam)[1]


def gradient(design, alpha, y, w, q, lam):
    """Gradient of ``F`` with respect to ``(b0, theta)``."""
    return evaluate(design, alpha, y, w, q, lam)[2]


# --------------------------------------------------------------------------
# majorisers
# --------------------------------------------------------------------------
class LinearPenaltyMixin:
    """``||f||^2 = beta' beta`` read straight off the coefficients (any linear majoriser)."""

    def penalty_at(self, coef, f):
        return float(coef[1:] @ coef[1:])


class LinearEigen(LinearPenaltyMixin):
    """Unweighted linear DWD (Algorithm 1)."""

    solver = "ldwd"

    def __init__(self, X, q, gam=GAM_FIT):
        self.design = LinearDesign(X)
        n, p = X.shape
        self.n, self.ncoef = n, p + 1
        self.M = (q + 1.0) ** 2 / q
        colsum = X.sum(axis=0)
        G = np.empty((p + 1, p + 1))
        G[0, 0] = n
        G[0, 1:] = colsum
        G[1:, 0] = colsum
        G[1:, 1:] = X.T @ X
        self.evals, self.evecs = linalg.eigh(G)
        self.evals = self.evals + gam
        # Z = [1, X]: one product gives [sum(z); X'z], one gives b0 + X beta
        self.Z = np.empty((n, p + 1))
        self.Z[:, 0] = 1.0
        self.Z[:, 1:] = X

    def to_alpha(self, coef):
        return coef.copy()

    def zero(self):
        return np.zeros(self.ncoef)

    def at_lambda(self, lam):
        n, M, V, Z = self.n, self.M, self.evecs, self.Z
        c = 2.0 * n * lam / M
        dq = 1.0 / (self.evals + c)
        Qe0 = V @ (dq * V[0])
        sm = c / (1.0 - c * Qe0[0])  # Sherman-Morrison factor for the unpenalised intercept
        # -(1/M) P^-1 as one small matrix: the eigenbasis (no refactorisation
        # per lambda) plus the rank-one correction for the intercept
        step_matrix = (V * dq) @ V.T
        step_matrix += sm * np.outer(Qe0, Qe0)
        step_matrix *= -1.0 / M
        penalty_scale = np.full(self.ncoef, 2.0 * n * lam)
        penalty_scale[0] = 0.0
        inv_n2 = 1.0 / (n * n)

        def step_fn(z, coef):
            rhs = Z.T @ z
            rhs += penalty_scale * coef
            step = step_matrix @ rhs
            return step, Z @ step, (rhs @ rhs) * inv_n2

        return step_fn


class LinearCholesky(LinearPenaltyMixin):
    """Weighted linear DWD: a Cholesky factor of the majoriser per lambda."""

    solver = "wldwd"

    def __init__(self, X, w, q, gam=GAM_FIT):
        self.design = LinearDesign(X)
        n, p = X.shape
        self.n, self.ncoef = n, p + 1
        self.M = (q + 1.0) ** 2 / q
        wX = X * w[:, None]
        A = np.empty((p + 1, p + 1))
        A[0, 0] = w.sum()
        A[0, 1:] = wX.sum(axis=0)
        A[1:, 0] = A[0, 1:]
        A[1:, 1:] = X.T @ wX
        A[np.diag_indices(p + 1)] += gam
        self.A = A

    def to_alpha(self, coef):
        return coef.copy()

    def zero(self):
        return np.zeros(self.ncoef)

    def at_lambda(self, lam):
        n, M, X = self.n, self.M, self.design.X
        P = self.A.copy()
        P[np.arange(1, self.ncoef), np.arange(1, self.ncoef)] += 2.0 * n * lam / M
        factor = linalg.cho_factor(P, lower=False, check_finite=False)
        two_n_lam = 2.0 * n * lam

        def step_fn(z, coef):
            rhs = np.empty(self.ncoef)
            rhs[0] = z.sum()
            rhs[1:] = X.T @ z + two_n_lam * coef[1:]
            step = -linalg.cho_solve(factor, rhs, check_finite=False) / M
            return step, step[0] + X @ step[1:], rhs @ rhs / (n * n)

        return step_fn


class KernelEigen:
    """Unweighted kernel DWD (Algorithm 2), iterating in the eigenbasis of ``K``.

    The coefficient vector is ``[b0, U' alpha]``; :meth:`to_alpha` maps back.
    """

    solver = "kdwd"

    def __init__(self, K, q, gam=GAM_FIT, eig=None):
        self.design = KernelDesign(K)
        n = K.shape[0]
        self.n, self.ncoef = n, n + 1
        self.M = (q + 1.0) ** 2 / q
        # the eigenbasis depends on K alone: callers fitting several q on one
        # K (tune) pass eig=linalg.eigh(K) once instead of refactorising
        self.e, self.U = linalg.eigh(K) if eig is None else eig
        self.e_gam = self.e + gam
        self.U1 = self.U.T @ np.ones(n)

    def to_alpha(self, coef):
        return np.concatenate(([coef[0]], self.U @ coef[1:]))

    def penalty_at(self, coef, f):
        return float(coef[1:] @ (self.e * coef[1:]))  # alpha' K alpha in the eigenbasis

    def zero(self):
        return np.zeros(self.ncoef)

    def at_lambda(self, lam):
        n, M, U, e = self.n, self.M, self.U, self.e
        two_n_lam = 2.0 * n * lam
        d = 1.0 / (self.e_gam + two_n_lam / M)  # eigenvalues of S = (K + gam I + c I)^-1
        s_e = d * self.U1  # S 1 in the eigenbasis
        v_e = self.e_gam * s_e  # (K + gam I) S 1
        g = 1.0 / (n - self.U1 @ v_e)

        def step_fn(z, coef):
            gamma_e = U.T @ z + two_n_lam * coef[1:]
            zsum = z.sum()
            h = zsum - v_e @ gamma_e
            step0 = -g * h / M
            step_e = -step0 * s_e - (d * gamma_e) / M
            step = np.concatenate(([step0], step_e))
            grad_e = e * gamma_e  # K (z + 2 n lam alpha) in the eigenbasis
            return step, step0 + U @ (e * step_e), (zsum * zsum + grad_e @ grad_e) / (n * n)

        return step_fn


class KernelCholesky:
    """Weighted kernel DWD: a Cholesky factor of the ``(n+1)^2`` majoriser per lambda."""

    solver = "wkdwd"

    def __init__(self, K, w, q, gam=GAM_FIT):
        self.design = KernelDesign(K)
        n = K.shape[0]
        self.n, self.ncoef = n, n + 1
        self.M = (q + 1.0) ** 2 / q
        Kw = K @ w
        A = np.empty((n + 1, n + 1))
        A[0, 0] = w.sum()
        A[0, 1:] = Kw
        A[1:, 0] = Kw
        A[1:, 1:] = K @ (w[:, None] * K)
        A[np.diag_indices(n + 1)] += gam
        self.A = A
        self.B = (2.0 * n / self.M) * K

    def penalty_at(self, coef, f):
        return float(coef[1:] @ (f - coef[0]))  # alpha' K alpha, with K alpha = f - b0

    def to_alpha(self, coef):
        return coef.copy()

    def zero(self):
        return np.zeros(self.ncoef)

    def at_lambda(self, lam):
        n, M, K = self.n, self.M, self.design.K
        P = self.A.copy()
        P[1:, 1:] += lam * self.B
        factor = linalg.cho_factor(P, lower=False, check_finite=False)
        two_n_lam = 2.0 * n * lam

        def step_fn(z, coef):
            rhs = np.empty(self.ncoef)
            rhs[0] = z.sum()
            rhs[1:] = K @ (z + two_n_lam * coef[1:])
            step = -linalg.cho_solve(factor, rhs, check_finite=False) / M
            return step, step[0] + K @ step[1:], rhs @ rhs / (n * n)

        return step_fn


# --------------------------------------------------------------------------
# the loop
# --------------------------------------------------------------------------
@dataclass
class PathResult:
    """What :func:`mm_path` returns (coefficients intercept first, one column per
    finished lambda)."""

    alpha: np.ndarray
    lambdas: np.ndarray
    npass: np.ndarray
    jerr: int
    objective: np.ndarray = field(default_factory=lambda: np.zeros(0))
    kkt: np.ndarray = field(default_factory=lambda: np.zeros(0))
    #: when ``jerr != 0``: ``(alpha, objective, kkt)`` of the last iterate at the
    #: lambda the budget ran out on (R drops it; scikit-learn-style callers keep it)
    unfinished: tuple | None = None


#: Stopping rules: R's (squared norm of the MM step below ``eps``) and a real
#: optimality criterion (norm of the gradient of ``F`` below ``eps``).
STOP_RULES = ("step", "kkt")


def _penalty_fn(majorizer):
    """``coef, f -> ||f||^2`` in the majoriser's coordinates, cheaply when it can."""
    own = getattr(majorizer, "penalty_at", None)
    if own is not None:
        return own
    return lambda coef, f: majorizer.design.penalty(majorizer.to_alpha(coef)[1:])


def mm_path(majorizer, y, w, q, lambdas, eps, maxit, callback=None, rule="step", accelerate=False):
    """Run the MM iteration along ``lambdas`` (already sorted decreasing).

    ``rule="step"`` is the R package's test (``||step||^2 < eps``), applied
    after the step; ``rule="kkt"`` stops as soon as ``||grad F|| <= eps`` at
    the current point (the extrapolated one under momentum) and returns that
    point, so the returned columns satisfy the test they were stopped by.

    ``accelerate=True`` adds Nesterov momentum to the MM step (each pass is
    a majoriser step from the extrapolated point ``theta + beta (theta -
    theta_prev)``; decision values extrapolate linearly, so a pass costs the
    same), with a restart whenever the objective would rise: the objective
    never increases, and the number of passes falls roughly from the
    condition number of the problem to its square root.  It changes the
    iterates, so it is off for R's iteration (``rule="step"`` in ``fit``).

    ``callback(l, lam, alpha_internal, f)``, when given, is called after each
    pass that moves to a new iterate (for tests that record the objective);
    it is never called otherwise.
    """
    n = majorizer.n
    nlam = len(lambdas)
    wy = y if w is None else w * y
    coef = majorizer.zero()
    f = np.zeros(n)
    npass = np.zeros(nlam, dtype=int)
    cols, objs, kkts = [], [], []
    total = 0
    jerr = 0
    unfinished = None
    penalty = _penalty_fn(majorizer) if accelerate else None

    def current_objective(c, fv, lam):
        loss = _loss(y * fv, q)
        return float(np.mean(loss if w is None else w * loss)) + lam * penalty(c, fv)

    for l, lam in enumerate(lambdas):
        step_fn = majorizer.at_lambda(lam)
        if accelerate:
            coef_prev, f_prev, t = coef.copy(), f.copy(), 1.0
            obj = current_objective(coef, f, lam)
        done = None  # (alpha, objective, gradient) when already evaluated at the end
        while True:
            if accelerate:
                t_next = 0.5 * (1.0 + np.sqrt(1.0 + 4.0 * t * t))
                beta = (t - 1.0) / t_next
                base = coef + beta * (coef - coef_prev)
                f_base = f + beta * (f - f_prev)
            else:
                base, f_base = coef, f
            z = wy * _deriv(y * f_base, q)
            step, df, grad_sq = step_fn(z, base)
            npass[l] += 1
            total += 1
            if rule == "kkt" and grad_sq <= eps * eps:
                # Confirm on decision values recomputed from the coefficients: the
                # running ones drift by rounding over many passes, which matters
                # when eps is near that floor.  A confirmed point is returned as
                # it is (not the step from it), so it satisfies the test.
                alpha = majorizer.to_alpha(base)
                f_exact, value, g = evaluate(majorizer.design, alpha, y, w, q, lam)
                coef, f = base, f_exact
                if g @ g <= eps * eps:
                    done = (alpha, value, g)
                    break
                if accelerate:  # go on from the refreshed point without momentum
                    coef_prev, f_prev, t = coef, f, 1.0
                    obj = current_objective(coef, f, lam)
                if total > maxit:
                    jerr = -(l + 1)
                    break
                continue
            if accelerate:
                new_coef, new_f = base + step, f_base + df
                new_obj = current_objective(new_coef, new_f, lam)
                if new_obj > obj and beta > 0.0:
                    # momentum overshot: restart from the last iterate with a plain MM step
                    coef_prev, f_prev, t = coef, f, 1.0
                    if total > maxit:
                        jerr = -(l + 1)
                        break
                    continue
                coef_prev, f_prev = coef, f
                coef, f, obj, t = new_coef, new_f, new_obj, t_next
            else:
                coef += step
                f += df
            if callback is not None:
                callback(l, lam, coef, f)
            if total > maxit:
                jerr = -(l + 1)
                break
            if rule == "step" and step @ step < eps:
                break
        if done is None:
            alpha = majorizer.to_alpha(coef)
            _, value, g = evaluate(majorizer.design, alpha, y, w, q, lam)
            done = (alpha, value, g)
        if jerr:
            unfinished = (done[0], done[1], float(np.linalg.norm(done[2])))
            break
        cols.append(done[0])
        objs.append(done[1])
        kkts.append(float(np.linalg.norm(done[2])))
    ncol = len(cols)
    alpha = np.column_stack(cols) if cols else np.zeros((majorizer.ncoef, 0))
    return PathResult(
        alpha=alpha,
        lambdas=np.asarray(lambdas[:ncol], dtype=float),
        npass=npass,
        jerr=jerr,
        objective=np.asarray(objs),
        kkt=np.asarray(kkts),
        unfinished=unfinished,
    )
