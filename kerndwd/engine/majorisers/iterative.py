"""A majoriser for sparse or very wide linear designs, solved by conjugate gradients.

The dense linear majorisers of :mod:`kerndwd.engine.linear` form ``Z'WZ`` (``p+1``
square) and the kernel majorisers form ``K`` (``n`` square); for text-style
data (``n`` and ``p`` around 1e5, 0.1% non-zeros) neither fits in memory.
:class:`LinearCG` never forms either: it solves the same majoriser system as
:class:`kerndwd.engine.linear.LinearCholesky`,

    (M Z'WZ + 2 n lambda diag(0, I) + M gam I) step = -rhs,
    rhs = (sum_i z_i, X'z + 2 n lambda beta),

(``Z = [1, X]``, ``W = diag(w)``, ``M = (q+1)^2/q`` the bound of Lemma 2,
``z_i = w_i y_i V_q'(y_i f_i)``) by preconditioned conjugate gradients, with
the matrix applied as ``v -> Z'(w * (Z v))``: two products with the sparse
``X`` per CG iteration, memory ``O(nnz(X) + n + p)``.  Each solve starts
from the previous MM step (successive steps of a linearly converging MM
iteration point in similar directions).

Exactness of the majoriser step is not needed for convergence, only
descent: with ``Q(s) = rhs's + (M/2) s'(Z'WZ + gam I + c diag(0, I))s`` the
quadratic upper bound of ``n F(coef + s) - n F(coef)``, any ``s`` with
``Q(s) <= Q(0) = 0`` decreases ``F``.  CG from zero decreases ``Q``
monotonically; from a warm start it need not, so a warm-started solution
with ``Q > 0`` is discarded and the system re-solved from zero.  At a fixed
point the step vanishes, and with a relative CG residual below 1 so does
``rhs``: the limit is the exact optimum, the same as the dense solvers'.

The MM iteration (:mod:`kerndwd.engine.solvers.mm`) runs this majoriser unchanged (both stopping
rules; ``grad_sq`` is ``||rhs||^2 / n^2`` as in the dense majorisers).
"""

from __future__ import annotations

import numpy as np
from scipy.sparse.linalg import LinearOperator, cg

from ..newton_systems import SparseLinearNewton
from ..predictors import LinearPredictor
from .contract import LinearPenalty, Majoriser

__all__ = ["LinearCG", "CG_RTOL"]

#: Relative residual at which each CG solve of the majoriser system stops.
#: The MM iteration only needs a descent step; 1e-6 makes the inexact step
#: indistinguishable from the exact one in the number of MM passes, while a
#: much looser value costs extra passes near the optimum.
CG_RTOL = 1e-6


class LinearCG(LinearPenalty, Majoriser):
    """Weighted or unweighted linear DWD, the majoriser solved by conjugate gradients.

    Parameters
    ----------
    form : LinearForm
        ``f = b0 + X beta`` (:class:`kerndwd.engine.forms.SparseLinearForm` for
        sparse ``X``, never densified, never modified).
    loss : DWDLoss
        The loss (exponent and weights; unweighted: all ones).
    gam : float
        The ridge on the majoriser (:data:`kerndwd.engine.problem.GAM_FIT`).
    rtol : float
        Relative residual of each CG solve (:data:`CG_RTOL`).
    cg_maxiter : int, optional
        Cap on CG iterations per MM pass (default ``10 (p + 1)``, SciPy's).

    Attributes
    ----------
    cg_iterations : int
        Total CG iterations so far (all passes, all lambdas): the cost measure.
    """

    solver = "cgldwd"

    def __init__(self, form, loss, gam, predictor=None, rtol=CG_RTOL, cg_maxiter=None):
        self.form = form
        n, p = form.n, form.p
        self.n, self.ncoef = n, p + 1
        self.loss = loss
        self.predictor = LinearPredictor(p) if predictor is None else predictor
        self.w = np.ones(n) if loss.weights is None else loss.weights
        self.gam = float(gam)
        self.rtol = float(rtol)
        self.cg_maxiter = cg_maxiter
        # diagonal of Z'WZ + gam I (Jacobi preconditioner, plus c on the penalised part per lambda)
        self._diag = form.weighted_sq_norms(self.w) + self.gam
        self._warm = np.zeros(self.ncoef)
        self.cg_iterations = 0

    def start(self, alpha=None):
        self._warm = np.zeros(self.ncoef)  # a new path: forget the last step
        return super().start(alpha)

    def newton_system(self):
        return SparseLinearNewton(self.form, self.loss.weights, self.loss.lipschitz)

    def _gram(self, c):
        """``v -> (Z'WZ + gam I + c diag(0, I)) v`` as a LinearOperator."""
        form, w, gam, ncoef = self.form, self.w, self.gam, self.ncoef

        shift = np.full(ncoef, gam + c)
        shift[0] = gam

        def matvec(v):
            v = np.asarray(v, dtype=float).reshape(-1)
            return form.ztmul(w * form.zmul(v)) + shift * v

        return LinearOperator((ncoef, ncoef), matvec=matvec, dtype=float)

    def at_lambda(self, lam):
        n, M, form = self.n, self.loss.lipschitz, self.form
        c = 2.0 * n * lam / M
        A = self._gram(c)
        dinv = 1.0 / (self._diag + np.concatenate(([0.0], np.full(self.ncoef - 1, c))))
        precond = LinearOperator(A.shape, matvec=lambda v: dinv * np.asarray(v).reshape(-1), dtype=float)
        two_n_lam = 2.0 * n * lam
        counter = [0]

        def count(_xk):
            counter[0] += 1

        def solve(b, x0):
            counter[0] = 0
            sol, _info = cg(A, b, x0=x0, rtol=self.rtol, atol=0.0, maxiter=self.cg_maxiter, M=precond,
                            callback=count)
            self.cg_iterations += counter[0]
            return sol

        penalty_scale = np.full(self.ncoef, two_n_lam)
        penalty_scale[0] = 0.0

        def step_fn(z, coord):
            rhs = form.ztmul(z)
            rhs += penalty_scale * coord
            b = -rhs / M  # step solves A step = b
            step = solve(b, self._warm)
            # descent check: Q(s)/M = s'As/2 - b's must not exceed Q(0) = 0
            if step @ (0.5 * A.matvec(step) - b) > 0.0:
                step = solve(b, None)
            self._warm = step.copy()
            return step, form.zmul(step), rhs @ rhs / (n * n)

        return step_fn
