"""The forms ``f = b0 + B theta`` of the engine (see :class:`kerndwd.engine.contract.Form`).

A *linear* form (``||f||^2 = theta' theta``) also offers the products with
the intercept-augmented basis ``Z = [1, B]`` that the linear majorisers use
(:meth:`LinearForm.zmul`, :meth:`LinearForm.ztmul`) and the weighted Gram
matrix ``Z'WZ`` (:meth:`LinearForm.gram`).  The dense form keeps ``Z`` so
that each is one BLAS call; other storage (sparse matrices, feature
matrices formed in row chunks, arrays spread over a cluster) supplies its
own form with the same methods, and every linear majoriser runs on it.
"""

from __future__ import annotations

import numpy as np
from scipy import linalg

__all__ = ["LinearForm", "DenseLinearForm", "SparseLinearForm", "KernelForm", "weighted_col_sq_sums"]


class LinearForm:
    """``f = b0 + B beta``, ``||f||^2 = beta' beta``, for any ``B`` with ``@`` and ``.T``.

    Subclasses may override the products for their storage; the defaults
    apply ``B`` directly.
    """

    def __init__(self, B):
        self.B = B
        self.n, self.p = B.shape

    # --- what evaluate() uses: theta without the intercept
    def apply(self, theta):
        return self.B @ theta

    def apply_t(self, z):
        return self.B.T @ z

    def penalty(self, theta, applied=None):
        return float(theta @ theta)

    def penalty_grad(self, theta, applied=None):
        return 2.0 * theta

    def dual_norm_sq(self, u, theta, lam):
        """Squared dual norm of ``B'u + 2 lam theta`` (the gradient in ``theta`` of
        ``mean-term + lam ||f||^2`` when ``u`` is its derivative in ``f``): the
        penalty's norm is Euclidean, so is its dual.  ``u`` and ``theta`` may
        hold one column per lambda (then ``lam`` is an array): one value each."""
        g = self.apply_t(u) + 2.0 * lam * theta
        return (g * g).sum(axis=0)

    # --- what the linear majorisers use: Z = [1, B]
    def zmul(self, coef):
        """``Z coef = coef[0] + B coef[1:]``, shape (n,)."""
        return coef[0] + self.apply(coef[1:])

    def ztmul(self, z):
        """``Z' z = [sum(z); B' z]``, shape (p + 1,)."""
        out = np.empty(self.p + 1)
        out[0] = z.sum()
        out[1:] = self.apply_t(z)
        return out

    def gram(self, weights=None):
        """``Z'WZ`` (``W = I`` when ``weights`` is None), shape (p+1, p+1)."""
        B, p = self.B, self.p
        G = np.empty((p + 1, p + 1))
        if weights is None:
            colsum = B.sum(axis=0)
            G[0, 0] = self.n
            G[0, 1:] = colsum
            G[1:, 0] = colsum
            G[1:, 1:] = B.T @ B
        else:
            rows = np.flatnonzero(weights)
            if rows.size < self.n:  # rows of zero weight add nothing (a Hessian's inactive margins)
                B, weights = B[rows], weights[rows]
            wB = B * weights[:, None]
            G[0, 0] = weights.sum()
            G[0, 1:] = wB.sum(axis=0)
            G[1:, 0] = G[0, 1:]
            G[1:, 1:] = B.T @ wB
        return G

    def weighted_sq_norms(self, weights):
        """Diagonal of ``Z'WZ`` (a preconditioner of the iterative majoriser)."""
        return np.concatenate(([weights.sum()], (self.B * self.B).T @ weights))


#: Rows per block when a dense form accumulates a weighted Gram matrix (bounds
#: the scratch memory at ``8 GRAM_BLOCK (p + 1)`` bytes).
GRAM_BLOCK = 16384


class DenseLinearForm(LinearForm):
    """A dense ``B``, with ``Z = [1, B]`` formed once so that each product with
    ``Z`` or ``Z'`` is a single BLAS call (two per MM pass)."""

    def __init__(self, B):
        super().__init__(B)
        self.Z = np.empty((self.n, self.p + 1))
        self.Z[:, 0] = 1.0
        self.Z[:, 1:] = B

    def zmul(self, coef):
        return self.Z @ coef

    def ztmul(self, z):
        return self.Z.T @ z

    def weighted_sq_norms(self, weights):
        return np.einsum("i,ij,ij->j", weights, self.Z, self.Z)

    def gram(self, weights=None):
        """``Z'WZ``; with non-negative ``weights`` (the curvatures of a Newton
        step) only the rows of positive weight are used, scaled by the square
        root of their weight in blocks of :data:`GRAM_BLOCK` rows, each block
        one symmetric rank-k update."""
        if weights is None:
            return super().gram()
        root = np.sqrt(weights)
        rows = np.flatnonzero(root)
        dense = 2 * rows.size > self.n  # most rows count: scaling them all beats gathering them
        count = self.n if dense else rows.size
        G = np.zeros((self.p + 1, self.p + 1))
        for start in range(0, count, GRAM_BLOCK):
            block = slice(start, start + GRAM_BLOCK) if dense else rows[start:start + GRAM_BLOCK]
            scaled = self.Z[block] * root[block][:, None]
            G += scaled.T @ scaled
        return G


def weighted_col_sq_sums(X, w):
    """``sum_i w_i x_ij^2`` for each column ``j`` of a sparse ``X`` without densifying it."""
    # the squared entries share X's index arrays: one extra array of nnz floats
    Xc = X.tocsr() if X.format != "csc" else X
    squared = type(Xc)((Xc.data * Xc.data, Xc.indices, Xc.indptr), shape=Xc.shape)
    return np.asarray(squared.T @ w, dtype=float).reshape(-1)


class SparseLinearForm(LinearForm):
    """``f = b0 + X beta`` for a ``scipy.sparse`` ``X`` (never densified).

    Products always come back as flat float arrays, whatever the sparse
    container (``spmatrix`` products can return ``np.matrix``).
    """

    def __init__(self, X):
        super().__init__(X)
        self._Xt = X.T  # a transposed view (CSR <-> CSC), no copy of the data

    def apply(self, theta):
        return np.asarray(self.B @ theta, dtype=float).reshape(-1)

    def apply_t(self, z):
        return np.asarray(self._Xt @ z, dtype=float).reshape(-1)

    def weighted_sq_norms(self, weights):
        return np.concatenate(([weights.sum()], weighted_col_sq_sums(self.B, weights)))


class KernelForm:
    """``f = b0 + K alpha``, ``||f||^2 = alpha' K alpha``."""

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

    def dual_norm_sq(self, u, theta, lam):
        """The gradient in ``alpha`` is ``K v``, ``v = u + 2 lam alpha``; in the
        penalty's norm ``alpha' K alpha`` its squared dual norm is ``v' K v``."""
        v = u + 2.0 * lam * theta
        return (v * (self.K @ v)).sum(axis=0)

    def eigh(self):
        """``(e, U)`` with ``K = U diag(e) U'`` (``scipy.linalg.eigh``), computed on
        the first call and kept: every fit that shares this form shares it."""
        eig = getattr(self, "_eigh", None)
        if eig is None:
            eig = self._eigh = linalg.eigh(self.K)
        return eig
