"""Majorisers for kernel forms ``f = b0 + K alpha`` with the ``n x n`` kernel matrix.

* :class:`KernelEigen`: unweighted (Algorithm 2).  ``K = U diag(e) U'`` once
  (shared across q and classes through the engine's cache); the iterate is
  kept in that basis, so a pass costs two ``n x n`` products.  With
  ``S = (K + gam I + c I)^-1``, ``s = S 1``, ``v = (K + gam I) S 1`` and
  ``g = 1 / (n - 1'v)``, the step is
  ``step_0 = -(1/M) g (sum(z) - v'gamma)``,
  ``step_alpha = -step_0 s - (1/M) S gamma``, ``gamma = z + 2 n lambda alpha``.
* :class:`KernelCholesky`: weighted.  ``P = A + lambda B`` with
  ``A = [[sum w, (Kw)'], [Kw, K W K]] + gam I`` and ``B = (2n/M) diag(0, K)``,
  factorised by Cholesky once per lambda; the step is
  ``-(1/M) P^-1 [sum(z); K (z + 2 n lambda alpha)]``.
"""

from __future__ import annotations

import numpy as np
from scipy import linalg

from ..forms import KernelForm
from ..newton_systems import KernelNewton
from .contract import Majoriser
from .linear import check_finite_majoriser, spd_solver

__all__ = ["KernelEigen", "KernelCholesky"]


class KernelEigen(Majoriser):
    """Unweighted kernel DWD (Algorithm 2), iterating in the eigenbasis of ``K``.

    The coordinates are ``[b0, U' alpha]``; :meth:`to_alpha` maps back.
    ``eig``, when given, is ``linalg.eigh(K)`` computed once and shared.
    """

    solver = "kdwd"

    def __init__(self, K, loss, gam, predictor, eig=None):
        n = K.shape[0]
        self.n, self.ncoef = n, n + 1
        self.loss = loss
        self.form = KernelForm(K)
        self.predictor = predictor
        self.e, self.U = linalg.eigh(K) if eig is None else eig
        self.e_gam = self.e + gam
        self.gam = gam
        #: the rounding level of the eigenvalues of K
        self.noise = n * np.finfo(float).eps * float(np.abs(self.e).max(initial=0.0))
        self.U1 = self.U.T @ np.ones(n)

    def to_alpha(self, coord):
        return np.concatenate(([coord[0]], self.U @ coord[1:]))

    def start(self, alpha=None):
        if alpha is None:
            return np.zeros(self.ncoef)
        return np.concatenate(([alpha[0]], self.U.T @ alpha[1:]))

    def penalty_at(self, coord, f):
        return float(coord[1:] @ (self.e * coord[1:]))  # alpha' K alpha in the eigenbasis

    def at_lambda(self, lam):
        n, M, U, e = self.n, self.loss.lipschitz, self.U, self.e
        two_n_lam = 2.0 * n * lam
        ridge = self.gam + two_n_lam / M  # gam + c
        d = 1.0 / (self.e_gam + two_n_lam / M)  # eigenvalues of S = (K + gam I + c I)^-1
        # Rounding leaves eigenvalues of size n eps max|e| in the null space of a semidefinite
        # K (entries of 1e24 leave +-1e8).  Where that noise reaches half of gam + c, the
        # majoriser's curvature there is unknown (and below zero it would climb): those
        # directions, and any eigenvalue below -(gam + c)/2, are left where they are (the
        # majoriser restricted to the others still majorises).  Ordinary kernel matrices
        # (noise ~1e-12 against gam = 1e-7) never come near.
        frozen = self.e < -0.5 * ridge
        if self.noise >= 0.5 * ridge:
            frozen |= np.abs(self.e) <= self.noise
        if frozen.any():
            d[frozen] = 0.0
        s_e = d * self.U1  # S 1 in the eigenbasis
        v_e = self.e_gam * s_e  # (K + gam I) S 1
        # g = 1 / (n - 1'v) = 1 / (sum_i U1_i^2 c d_i) with c = 2 n lambda / M
        # (1'1 = n = |U'1|^2): a sum of positive terms, exact even as c -> 0
        g = 1.0 / ((self.U1 * self.U1) @ ((two_n_lam / M) * d))

        def step_fn(z, coord):
            gamma_e = U.T @ z + two_n_lam * coord[1:]
            zsum = z.sum()
            h = zsum - v_e @ gamma_e
            step0 = -g * h / M
            step_e = -step0 * s_e - (d * gamma_e) / M
            step = np.concatenate(([step0], step_e))
            grad_e = e * gamma_e  # K (z + 2 n lam alpha) in the eigenbasis
            return step, step0 + U @ (e * step_e), (zsum * zsum + grad_e @ grad_e) / (n * n)

        return step_fn

    def newton_system(self):
        """Newton-CG in the eigenbasis this majoriser iterates in (no second decomposition)."""
        return KernelNewton(self.form, (self.e, self.U), self.loss.weights, self.loss.lipschitz)


class KernelCholesky(Majoriser):
    """Weighted kernel DWD: a Cholesky factor of the ``(n+1)^2`` majoriser per lambda."""

    solver = "wkdwd"

    def __init__(self, K, loss, gam, predictor):
        n = K.shape[0]
        self.n, self.ncoef = n, n + 1
        self.loss = loss
        self.form = KernelForm(K)
        self.predictor = predictor
        w = loss.weights
        A = np.empty((n + 1, n + 1))
        with np.errstate(over="ignore", invalid="ignore"):
            Kw = K @ w
            A[0, 0] = w.sum()
            A[0, 1:] = Kw
            A[1:, 0] = Kw
            A[1:, 1:] = K @ (w[:, None] * K)
        check_finite_majoriser(A)
        A[np.diag_indices(n + 1)] += gam
        self.A = A
        self.B = (2.0 * n / loss.lipschitz) * K

    def newton_system(self):
        """Newton-CG in the eigenbasis of ``K``, decomposed once and kept on the form."""
        return KernelNewton(self.form, self.form.eigh(), self.loss.weights, self.loss.lipschitz)

    def penalty_at(self, coord, f):
        return float(coord[1:] @ (f - coord[0]))  # alpha' K alpha, with K alpha = f - b0

    def at_lambda(self, lam):
        n, M, K = self.n, self.loss.lipschitz, self.form.K
        P = self.A.copy()
        P[1:, 1:] += lam * self.B
        solve = spd_solver(P)
        two_n_lam = 2.0 * n * lam

        def step_fn(z, coord):
            rhs = np.empty(self.ncoef)
            rhs[0] = z.sum()
            rhs[1:] = K @ (z + two_n_lam * coord[1:])
            step = -solve(rhs) / M
            return step, step[0] + K @ step[1:], rhs @ rhs / (n * n)

        return step_fn
