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
from .predictors import LinearPredictor

__all__ = ["LinearEigen", "LinearCholesky"]


class LinearEigen(LinearPenalty, Majoriser):
    """Unweighted linear DWD (Algorithm 1) on a linear form (see
    :mod:`kerndwd.engine.forms`; the dense one keeps ``Z = [1, X]``).

    ``gram_eig``, when given, is ``linalg.eigh(form.gram())``, computed once
    and shared (it depends on the rows alone, not on q or y), or a
    zero-argument callable returning it.  The decomposition is made on first
    use (``evals``, ``evecs``): a path solver that never takes an MM step
    (:mod:`kerndwd.engine.newton`) never pays for it.
    """

    solver = "ldwd"

    def __init__(self, form, loss, gam, predictor=None, gram_eig=None):
        self.n, self.ncoef = form.n, form.p + 1
        self.loss = loss
        self.form = form
        self.predictor = LinearPredictor(form.p) if predictor is None else predictor
        self._gram_eig, self._gam = gram_eig, gam

    def at_lambda(self, lam):
        n, M, V, form = self.n, self.loss.lipschitz, self.evecs, self.form
        c = 2.0 * n * lam / M
        dq = 1.0 / (self.evals + c)
        Qe0 = V @ (dq * V[0])
        # Sherman-Morrison factor for the unpenalised intercept, c / (1 - c e0'Q e0):
        # the denominator is sum_i V0i^2 evals_i / (evals_i + c) (the rows of V
        # have unit norm), a sum of positive terms, so no cancellation at large c
        sm = c / ((V[0] * V[0]) @ (self.evals * dq))
        # -(1/M) P^-1 as one small matrix: the eigenbasis (no refactorisation
        # per lambda) plus the rank-one correction for the intercept
        step_matrix = (V * dq) @ V.T
        step_matrix += sm * np.outer(Qe0, Qe0)
        step_matrix *= -1.0 / M
        penalty_scale = np.full(self.ncoef, 2.0 * n * lam)
        penalty_scale[0] = 0.0
        inv_n2 = 1.0 / (n * n)

        def step_fn(z, coord):
            rhs = form.ztmul(z)
            rhs += penalty_scale * coord
            step = step_matrix @ rhs
            return step, form.zmul(step), (rhs @ rhs) * inv_n2

        return step_fn

    @property
    def evals(self):
        """Eigenvalues of ``Z'Z`` plus the ridge ``gam``."""
        return self._decomposition()[0]

    @property
    def evecs(self):
        """Eigenvectors of ``Z'Z``."""
        return self._decomposition()[1]

    def _decomposition(self):
        eig = getattr(self, "_eig", None)
        if eig is None:
            given = self._gram_eig() if callable(self._gram_eig) else self._gram_eig
            evals, evecs = linalg.eigh(self.form.gram()) if given is None else given
            eig = self._eig = (evals + self._gam, evecs)
        return eig


class LinearCholesky(LinearPenalty, Majoriser):
    """Weighted linear DWD: a Cholesky factor of the majoriser per lambda."""

    solver = "wldwd"

    def __init__(self, form, loss, gam, predictor=None):
        self.n, self.ncoef = form.n, form.p + 1
        self.loss = loss
        self.form = form
        self.predictor = LinearPredictor(form.p) if predictor is None else predictor
        A = form.gram(loss.weights)
        A[np.diag_indices(self.ncoef)] += gam
        self.A = A

    def at_lambda(self, lam):
        n, M, form = self.n, self.loss.lipschitz, self.form
        P = self.A.copy()
        P[np.arange(1, self.ncoef), np.arange(1, self.ncoef)] += 2.0 * n * lam / M
        factor = linalg.cho_factor(P, lower=False, check_finite=False)
        penalty_scale = np.full(self.ncoef, 2.0 * n * lam)
        penalty_scale[0] = 0.0

        def step_fn(z, coord):
            rhs = form.ztmul(z)
            rhs += penalty_scale * coord
            step = -linalg.cho_solve(factor, rhs, check_finite=False) / M
            return step, form.zmul(step), rhs @ rhs / (n * n)

        return step_fn
