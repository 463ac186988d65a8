"""The majoriser of ``f = b0 + K alpha`` with ``K`` in memory and no decomposition of it.

:class:`KernelMatrixCG` iterates in the coefficients themselves.  Its MM
step minimises the quadratic majoriser of ``F`` with the data curvature
``(M/n) Z'WZ`` of Lemma 2 (``Z = [1, K]``) and the penalty's
``2 lambda diag(0, K)``; that is the bordered system of
:mod:`kerndwd.engine.kernel_cg` with ``d = M w / n``, solved by
Nystrom-preconditioned conjugate gradients (the preconditioner is factored
once per lambda, the curvature being fixed).  Every conjugate-gradient
iterate lowers the quadratic, so an inexact solve still lowers ``F``.  Its
Newton system (:class:`kerndwd.engine.kernel_cg.KernelMatrixNewton`) shares
the preconditioner's landmarks.
"""

from __future__ import annotations

import numpy as np

from ..forms import KernelForm
from ..kernel_cg import KernelMatrixNewton, NystromPreconditioner, bordered_solve
from .contract import Majoriser

__all__ = ["KernelMatrixCG", "MM_RTOL"]

#: Relative residual (in the curvature-weighted norm) of an MM step's solve.
MM_RTOL = 1e-6


class KernelMatrixCG(Majoriser):
    """Kernel DWD on the kernel matrix by conjugate gradients (module docstring).

    Parameters
    ----------
    K : ndarray, shape (n, n), float64 or float32
        The checked kernel matrix (read, never written); held in float32,
        every product with it is taken in double precision, and it is also
        ``products``.
    loss : DWDLoss
    predictor : KernelPredictor
    landmarks : ndarray of int
        The rows of the Nystrom preconditioner.
    products : ndarray of float32 or None
        A float32 copy of ``K`` (or ``K`` itself, held in float32) for the
        Newton directions' single-precision conjugate gradients
        (:class:`kerndwd.engine.kernel_cg.KernelMatrixNewton`); the MM step,
        solved to :data:`MM_RTOL`, takes ``K``'s double-precision products.
    """

    solver = "kdwd-cg"

    def __init__(self, K, loss, predictor, landmarks, products=None):
        n = K.shape[0]
        self.n, self.ncoef = n, n + 1
        self.loss = loss
        self.form = KernelForm(K)
        self.predictor = predictor
        self.precond = NystromPreconditioner(K, landmarks)
        self.products = products
        self.w_n = (np.ones(n) if loss.weights is None else np.asarray(loss.weights, dtype=float)) / n
        self._system = None

    def penalty_at(self, coord, f):
        return float(coord[1:] @ (f - coord[0]))  # alpha' K alpha, with K alpha = f - b0

    def at_lambda(self, lam):
        n, K, M = self.n, self.form.K, self.loss.lipschitz
        dd = np.maximum(M * self.w_n, 1e-300)  # zero weights: no curvature, a large finite diagonal

        def step_fn(z, coord):
            r = (z + 2.0 * n * lam * coord[1:]) / n
            zsum = z.sum() / n
            Kr = self.form.apply(r)
            step, df, _ = bordered_solve(K, dd, lam, r, coord[1:], self.precond, MM_RTOL)
            return step, df, zsum * zsum + Kr @ Kr

        return step_fn

    def newton_system(self):
        """Newton's equations in the coefficients, by the same conjugate gradients."""
        if self._system is None:
            self._system = KernelMatrixNewton(self.form, self.loss.weights, self.loss.lipschitz, self.precond,
                                              products=self.products)
        return self._system
