"""Majorisers for linear forms ``f = b0 + X beta`` with dense ``X`` (the
predictors themselves, or a feature matrix ``Phi``).

* :class:`LinearEigen`: unweighted (Algorithm 1).  ``G = Z'Z`` (``Z = [1, X]``)
  is eigendecomposed once; every lambda's system is applied through that
  basis plus a rank-one (Sherman-Morrison) correction for the unpenalised
  intercept, as one precomputed ``(p+1)^2`` step matrix (at a penalty far
  above the spectrum of ``Z'Z``, from a Cholesky factor of the bordered
  matrix instead: :data:`LARGE_PENALTY`).
* :class:`LinearCholesky`: weighted.  ``P = Z'WZ + gam I + c diag(0, I)`` is
  factorised by Cholesky once per lambda.

With ``z_i = w_i y_i V_q'(y_i f_i)`` both take the step
``-(1/M) P^-1 [sum(z); X'z + 2 n lambda beta]``, ``c = 2 n lambda / M``.
"""

from __future__ import annotations

import numpy as np
from scipy import linalg
from scipy.linalg import lapack

from ..newton_systems import LinearNewton, add_to_diagonal
from ..predictors import LinearPredictor
from .contract import LinearPenalty, Majoriser

__all__ = ["LinearEigen", "LinearCholesky", "LARGE_PENALTY", "spd_solver", "check_finite_majoriser"]

#: :class:`LinearEigen` factorises the bordered majoriser directly once
#: ``c = 2 n lambda / M`` exceeds this multiple of the largest eigenvalue of
#: ``Z'Z`` (there the Sherman-Morrison route would carry a relative error of
#: about ``1e-16 c / ||Z'Z||`` in the intercept's coupling); below it, as on
#: every path R's default grid reaches, the eigenbasis route is used.
LARGE_PENALTY = 1e6


def check_finite_majoriser(A):
    """Refuse a weighted majoriser ``Z'WZ`` (or ``K W K``) that overflowed."""
    if not np.isfinite(A).all():
        raise ValueError("X (its squared entries, or its kernel matrix's) times the weights overflows double "
                         "precision in the majoriser Z'WZ: the weights span too many decades for this scale of X; "
                         "rescale X or the weights (wt, sample_weight, class_weight: only their ratios matter)")


def spd_solver(P, explicit=False):
    """``rhs -> P^-1 rhs`` for a symmetric majoriser ``P`` that should be
    positive definite: by Cholesky, or, when rounding has left ``P``
    semidefinite or slightly indefinite (duplicated rows, zero weights,
    rank-deficient or numerically indefinite kernel matrices, scales at the
    edge of double precision), by its eigendecomposition with the eigenvalues
    raised to a floor ``(size) * 2.2e-16 * max|eigenvalue|`` of rounding.  The
    floored matrix lies above ``P``, so it still majorises: the MM step
    stays a descent step.  The fallback is taken only where Cholesky fails,
    so the iterates of well-posed problems are untouched.

    With ``explicit=True`` a successful factor is turned into the full
    inverse (LAPACK ``potri``), as R's weighted linear solver forms it once
    per lambda: each call is then one matrix-vector product instead of two
    triangular solves.  The fallback stays the eigenbasis route, whose
    order of operations keeps a floored near-null direction from
    amplifying rounding (an explicit floored inverse would not)."""
    factor, info = lapack.dpotrf(P, lower=False, clean=True)
    if info == 0 and explicit:
        inv, info = lapack.dpotri(factor, lower=False, overwrite_c=True)  # the factor is not read again
        if info == 0:
            # potri fills the upper triangle; the lower one is the clean factor's zeros: mirror
            inv = np.add(inv, inv.T, order="C")  # C order: its flat view holds the diagonal
            inv.reshape(-1)[::inv.shape[0] + 1] *= 0.5
            return lambda rhs: inv @ rhs
    if info == 0:
        return lambda rhs: linalg.cho_solve((factor, False), rhs, check_finite=False)
    evals, evecs = linalg.eigh(0.5 * (P + P.T), check_finite=False)
    top = float(np.abs(evals).max())
    floor = max(P.shape[0] * np.finfo(float).eps * top, np.finfo(float).tiny)
    inv = 1.0 / np.maximum(evals, floor)
    return lambda rhs: evecs @ (inv * (evecs.T @ rhs))


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
        self._eig = None

    def at_lambda(self, lam):
        n, M, form = self.n, self.loss.lipschitz, self.form
        c = 2.0 * n * lam / M
        if c > LARGE_PENALTY * self.evals[-1]:
            step_matrix = self._bordered_step_matrix(c)
        else:
            step_matrix = self._eigen_step_matrix(c)
        penalty_scale = np.full(self.ncoef, 2.0 * n * lam)
        penalty_scale[0] = 0.0
        inv_n2 = 1.0 / (n * n)

        def step_fn(z, coord):
            rhs = form.ztmul(z)
            rhs += penalty_scale * coord
            step = step_matrix @ rhs
            return step, form.zmul(step), (rhs @ rhs) * inv_n2

        return step_fn

    def newton_system(self):
        return LinearNewton(self.form, self.loss.weights, self.loss.lipschitz)

    def _eigen_step_matrix(self, c):
        """``-(1/M) P^-1`` through the eigenbasis of ``Z'Z`` and a Sherman-Morrison
        correction for the intercept (no factorisation per lambda)."""
        M, V = self.loss.lipschitz, self.evecs
        dq = 1.0 / (self.evals + c)
        # Rounding leaves eigenvalues of size max(n, p) eps ||Z'Z|| in the null space of
        # Z'Z (rows of 1e8 leave hundreds, of either sign).  Where that noise reaches half
        # of gam + c the majoriser's curvature there is unknown (below zero its step would
        # climb): those directions, and any eigenvalue below -(gam + c)/2, are left where
        # they are; the majoriser restricted to the others still majorises, and the
        # Sherman-Morrison identity below holds on that subspace with the frozen
        # directions' share of e0 added to its denominator.  Ordinary data (noise ~1e-12
        # against gam = 1e-7) never come near.
        raw, ridge = self.evals - self._gam, self._gam + c
        noise = max(self.n, self.ncoef) * np.finfo(float).eps * float(np.abs(raw).max(initial=0.0))
        frozen = raw < -0.5 * ridge
        if noise >= 0.5 * ridge:
            frozen |= np.abs(raw) <= noise
        if frozen.any():
            dq[frozen] = 0.0
            frozen_share = float((V[0, frozen] * V[0, frozen]).sum())
            sm = c / ((V[0] * V[0]) @ (self.evals * dq) + frozen_share)
        else:
            # Sherman-Morrison factor for the unpenalised intercept, c / (1 - c e0'Q e0):
            # the denominator is sum_i V0i^2 evals_i / (evals_i + c) (the rows of V
            # have unit norm), a sum of positive terms, so no cancellation at large c
            sm = c / ((V[0] * V[0]) @ (self.evals * dq))
        Qe0 = V @ (dq * V[0])
        # -(1/M) P^-1 as one small matrix: the eigenbasis (no refactorisation
        # per lambda) plus the rank-one correction for the intercept
        step_matrix = (V * dq) @ V.T
        step_matrix += sm * np.outer(Qe0, Qe0)
        step_matrix *= -1.0 / M
        return step_matrix

    def _bordered_step_matrix(self, c):
        """``-(1/M) P^-1`` from a Cholesky factor of the bordered matrix
        ``P = G + c diag(0, I)`` itself (``G = Z'Z + gam I`` rebuilt from its
        eigenbasis), for a penalty ``c`` far above the spectrum of ``G``.

        There the eigenbasis route loses the coupling of the intercept with
        the coefficients: it is a difference of terms of size ``1/c`` whose
        value is of size ``1/c^2``, so its relative error grows like
        ``c / ||G||`` (all of it from lambda ~ 1e16 on), and the MM iteration,
        no longer majorising, runs away.  ``P`` is then a block of size ``c``
        bordered by the intercept's row, whose Cholesky factor (the Schur
        complement ``G00 - g'(G11 + c I)^-1 g`` of the dominant block, a
        difference without cancellation) is accurate whatever ``c``; the
        rounding of the rebuilt ``G`` is far below ``c``.
        """
        M, V, evals = self.loss.lipschitz, self.evecs, self.evals
        P = (V * evals) @ V.T
        P = 0.5 * (P + P.T)
        P[np.arange(1, self.ncoef), np.arange(1, self.ncoef)] += c
        factor = linalg.cho_factor(P, lower=False, check_finite=False)
        inverse = linalg.cho_solve(factor, np.eye(self.ncoef), check_finite=False)
        return (-0.5 / M) * (inverse + inverse.T)

    @property
    def evals(self):
        """Eigenvalues of ``Z'Z`` plus the ridge ``gam``."""
        return self._decomposition()[0]

    @property
    def evecs(self):
        """Eigenvectors of ``Z'Z``."""
        return self._decomposition()[1]

    def _decomposition(self):
        if self._eig is None:
            given = self._gram_eig() if callable(self._gram_eig) else self._gram_eig
            evals, evecs = linalg.eigh(self.form.gram()) if given is None else given
            self._eig = (evals + self._gam, evecs)
        return self._eig


class LinearCholesky(LinearPenalty, Majoriser):
    """Linear DWD with a Cholesky factor of the majoriser per lambda: the weighted
    solver (R's ``wldwd``), and the unweighted one on a path of a single lambda,
    where one eigendecomposition of ``Z'Z`` (about ten factorisations' work)
    would serve no other lambda.  Each lambda's factor is kept, so the
    one-vs-rest classes fitted at it share it."""

    def __init__(self, form, loss, gam, predictor=None):
        self.n, self.ncoef = form.n, form.p + 1
        self.loss = loss
        self.form = form
        self.solver = "wldwd" if loss.weighted else "ldwd"
        self.predictor = LinearPredictor(form.p) if predictor is None else predictor
        self._solves = {}
        with np.errstate(over="ignore", invalid="ignore"):
            A = form.gram(loss.weights)
        check_finite_majoriser(A)
        add_to_diagonal(A, gam)
        self.A = A

    def newton_system(self):
        return LinearNewton(self.form, self.loss.weights, self.loss.lipschitz)

    def at_lambda(self, lam):
        n, M, form = self.n, self.loss.lipschitz, self.form
        solve = self._solves.get(lam)
        if solve is None:
            P = self.A.copy()
            add_to_diagonal(P, 2.0 * n * lam / M, start=1)
            solve = self._solves[lam] = spd_solver(P, explicit=True)  # R's explicit inverse, once per lambda
        penalty_scale = np.empty(self.ncoef)
        penalty_scale.fill(2.0 * n * lam)
        penalty_scale[0] = 0.0

        def step_fn(z, coord):
            rhs = form.ztmul(z)
            rhs += penalty_scale * coord
            step = -solve(rhs) / M
            return step, form.zmul(step), rhs @ rhs / (n * n)

        return step_fn
