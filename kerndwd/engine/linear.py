"""Majorisers for linear forms ``f = b0 + X beta`` with dense ``X`` (the
predictors themselves, or a feature matrix ``Phi``).

* :class:`LinearEigen`: unweighted (Algorithm 1).  ``G = Z'Z`` (``Z = [1, X]``)
  is eigendecomposed once; every lambda's system is applied through that
  basis plus a rank-one (Sherman-Morrison) correction for the unpenalised
  intercept, as one precomputed ``(p+1)^2`` step matrix.
* :class:`LinearCholesky`: weighted.  ``P = Z'WZ + gam I + c diag(0, I)`` is
  factorised by Cholesky once per lambda.

With ``z_i = w_i y_i V_q'(y_i f_i)`` both take the step
``-(1/M) P^-1 [sum(z); X'z + 2 n lambda beta]``, ``c = 2 n lambda / M``.
"""

from __future__ import annotations

import numpy as np
from scipy import linalg

from .contract import LinearPenalty, Majoriser
from .forms import LinearForm
from .predictors import LinearPredictor

__all__ = ["LinearEigen", "LinearCholesky", "gram_with_intercept"]


def gram_with_intercept(X, w=None):
    """``Z'WZ`` for ``Z = [1, X]`` (``W = I`` when ``w`` is None)."""
    p = X.shape[1]
    G = np.empty((p + 1, p + 1))
    if w is None:
        colsum = X.sum(axis=0)
        G[0, 0] = X.shape[0]
        G[0, 1:] = colsum
        G[1:, 0] = colsum
        G[1:, 1:] = X.T @ X
    else:
        wX = X * w[:, None]
        G[0, 0] = w.sum()
        G[0, 1:] = wX.sum(axis=0)
        G[1:, 0] = G[0, 1:]
        G[1:, 1:] = X.T @ wX
    return G


class LinearEigen(LinearPenalty, Majoriser):
    """Unweighted linear DWD (Algorithm 1).

    ``gram_eig``, when given, is ``linalg.eigh(gram_with_intercept(X))``,
    computed once and shared (it depends on ``X`` alone, not on q or y).
    """

    solver = "ldwd"

    def __init__(self, X, loss, gam, predictor=None, gram_eig=None):
        n, p = X.shape
        self.n, self.ncoef = n, p + 1
        self.loss = loss
        self.form = LinearForm(X)
        self.predictor = LinearPredictor(p) if predictor is None else predictor
        evals, self.evecs = linalg.eigh(gram_with_intercept(X)) if gram_eig is None else gram_eig
        self.evals = evals + gam
        # Z = [1, X]: one product gives [sum(z); X'z], one gives b0 + X beta
        self.Z = np.empty((n, p + 1))
        self.Z[:, 0] = 1.0
        self.Z[:, 1:] = X

    def at_lambda(self, lam):
        n, M, V, Z = self.n, self.loss.lipschitz, self.evecs, self.Z
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

        def step_fn(z, coord):
            rhs = Z.T @ z
            rhs += penalty_scale * coord
            step = step_matrix @ rhs
            return step, Z @ step, (rhs @ rhs) * inv_n2

        return step_fn


class LinearCholesky(LinearPenalty, Majoriser):
    """Weighted linear DWD: a Cholesky factor of the majoriser per lambda."""

    solver = "wldwd"

    def __init__(self, X, loss, gam, predictor=None):
        n, p = X.shape
        self.n, self.ncoef = n, p + 1
        self.loss = loss
        self.form = LinearForm(X)
        self.predictor = LinearPredictor(p) if predictor is None else predictor
        A = gram_with_intercept(X, loss.weights)
        A[np.diag_indices(p + 1)] += gam
        self.A = A

    def at_lambda(self, lam):
        n, M, X = self.n, self.loss.lipschitz, self.form.X
        P = self.A.copy()
        P[np.arange(1, self.ncoef), np.arange(1, self.ncoef)] += 2.0 * n * lam / M
        factor = linalg.cho_factor(P, lower=False, check_finite=False)
        two_n_lam = 2.0 * n * lam

        def step_fn(z, coord):
            rhs = np.empty(self.ncoef)
            rhs[0] = z.sum()
            rhs[1:] = X.T @ z + two_n_lam * coord[1:]
            step = -linalg.cho_solve(factor, rhs, check_finite=False) / M
            return step, step[0] + X @ step[1:], rhs @ rhs / (n * n)

        return step_fn
