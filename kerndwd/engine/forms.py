"""The forms ``f = b0 + B theta`` of the engine, and the contract they honour (:class:`Form`).

A *linear* form (``||f||^2 = theta' theta``) also offers the products with
the intercept-augmented basis ``Z = [1, B]`` that the linear majorisers use
(:meth:`LinearForm.zmul`, :meth:`LinearForm.ztmul`) and the weighted Gram
matrix ``Z'WZ`` (:meth:`LinearForm.gram`).  The dense form keeps ``Z`` so
that each is one BLAS call; other storage (sparse matrices, feature
matrices formed in row chunks, arrays spread over a cluster) supplies its
own form with the same methods, and every linear majoriser runs on it.
"""

from __future__ import annotations

from abc import ABC, abstractmethod

import numpy as np
from scipy import linalg, sparse

from .threads import shared_pool, usable_cores

__all__ = ["Form", "LinearForm", "DenseLinearForm", "SparseLinearForm", "FeatureMatrixForm", "KernelForm",
           "weighted_col_sq_sums", "row_blocks", "double_product", "BLOCK_ELEMENTS"]

#: Numbers of one block when features or Gram matrices are formed by rows
#: (about 16 MB of float64).
BLOCK_ELEMENTS = 1 << 21
#: Rows per block of a product with a float32 feature matrix: the float64
#: copy of a block (``m`` columns) stays in a core's cache.
_PRODUCT_BLOCK_BYTES = 1 << 19
#: Bytes of the float64 copy of one block of rows in :func:`double_product`
#: (a few rows of a kernel matrix; within a core's cache).
_WIDEN_BLOCK_BYTES = 1 << 21


def row_blocks(n, rows):
    """``(start, stop)`` of consecutive blocks of ``rows`` rows covering ``range(n)``."""
    return [(start, min(start + rows, n)) for start in range(0, n, rows)]


def double_product(B, theta, out=None):
    """``B @ theta`` in double precision, for a float64 or a float32 ``B``.

    A float32 ``B`` is never widened whole (numpy's mixed product would copy
    it to float64): each block of rows is widened in a core's cache and
    multiplied there, so the product reads ``B``'s four bytes a number once
    and its result is the float64 product of ``B``'s values (no rounding of
    ``theta``).

    Parameters
    ----------
    B : ndarray, shape (n, k), float64 or float32
    theta : ndarray, shape (k,) or (k, c), float64
    out : ndarray, optional
        Where to write the result, of the result's shape.

    Returns
    -------
    ndarray, shape (n,) or (n, c)

    Examples
    --------
    >>> import numpy as np
    >>> B = np.array([[1.0, 2.0], [3.0, 4.0]], dtype=np.float32)
    >>> double_product(B, np.array([1.0, 0.5])).tolist()
    [2.0, 5.0]
    """
    if out is None:
        out = np.empty((B.shape[0],) + np.shape(theta)[1:])
    if B.dtype == np.float64:
        return np.matmul(B, theta, out=out)
    rows = max(1, _WIDEN_BLOCK_BYTES // (8 * max(B.shape[1], 1)))
    for start, stop in row_blocks(B.shape[0], rows):
        np.matmul(B[start:stop].astype(np.float64), theta, out=out[start:stop])
    return out


class Form(ABC):
    """``f = b0 + B theta`` and the penalty ``||f||^2`` of the basis ``B``: what the
    objective, the MM step and the certificates are evaluated with.

    Every product takes one vector or a matrix of them (one column per
    lambda): ``apply(theta)`` with ``theta`` of shape ``(k,)`` or ``(k, L)``
    returns shape ``(n,)`` or ``(n, L)``, and ``apply_t`` likewise.
    ``tests/test_engine_contract.py`` holds every form a design builds to
    that.
    """

    n: int

    @abstractmethod
    def apply(self, theta):
        """``B theta``."""

    @abstractmethod
    def apply_t(self, z):
        """``B' z``."""

    @abstractmethod
    def penalty(self, theta, applied=None):
        """``||f||^2`` at ``theta`` (a vector); ``applied = B theta`` when the caller has it."""

    @abstractmethod
    def penalty_grad(self, theta, applied=None):
        """Gradient of ``||f||^2`` with respect to ``theta``."""

    @abstractmethod
    def dual_norm_sq(self, u, theta, lam):
        """Squared dual norm, in the penalty's norm, of the gradient in ``theta``
        of ``(data term) + lam ||f||^2`` when ``u`` is the data term's derivative
        in ``f`` (see :mod:`kerndwd.engine.certify`); one value per column."""

    def gradient_dual_norm_sq(self, grad):
        """:meth:`dual_norm_sq` read from the objective's gradient in ``theta``
        itself (``grad``, shape ``(k,)`` or ``(k, L)``), where the penalty's
        norm makes that possible without a pass over the rows; None where it
        does not (then the certificates take :meth:`dual_norm_sq`)."""
        return None

    def keep_rows(self, v):
        """Where the per-row vector ``v`` (new decision values) is kept: in memory,
        ``v`` itself; a form whose rows live on a cluster stores it there."""
        return v


class LinearForm(Form):
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

    def gradient_dual_norm_sq(self, grad):
        """The norm is Euclidean: ``grad' grad``, one value per column."""
        return (grad * grad).sum(axis=0)

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
            return self.Z.T @ self.Z  # one BLAS call (the column sums and n with it)
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
        return np.asarray(self.B @ theta, dtype=float).reshape((self.n,) + np.shape(theta)[1:])

    def apply_t(self, z):
        return np.asarray(self._Xt @ z, dtype=float).reshape((self.p,) + np.shape(z)[1:])

    def weighted_sq_norms(self, weights):
        return np.concatenate(([weights.sum()], weighted_col_sq_sums(self.B, weights)))

    def gram(self, weights=None):
        """``Z'WZ`` as a dense ``(p + 1) x (p + 1)`` array, from sparse products
        (``X`` itself is never densified)."""
        w = np.ones(self.n) if weights is None else np.asarray(weights, dtype=float)
        wX = sparse.csr_matrix(self._Xt.multiply(w[None, :]))  # X'W, sparse
        G = np.empty((self.p + 1, self.p + 1))
        G[0, 0] = w.sum()
        G[1:, 0] = G[0, 1:] = np.asarray(wX.sum(axis=1), dtype=float).reshape(-1)
        G[1:, 1:] = (wX @ self.B).toarray()
        return G


class FeatureMatrixForm(LinearForm):
    """``f = b0 + Phi theta`` with ``Phi`` stored once, float64 or float32.

    Unlike :class:`~kerndwd.engine.forms.DenseLinearForm` no copy
    ``Z = [1, Phi]`` is kept: the intercept is added to (or summed out of)
    each product.  A float64 ``Phi`` is multiplied by BLAS directly.  A
    float32 ``Phi`` is multiplied block by block: each block of rows is
    copied into a float64 buffer that fits in cache and multiplied there, so
    every sum is accumulated in float64 and memory grows by one buffer per
    thread.  The blocks are shared among ``n_threads`` threads (numpy
    releases the GIL in the copy and in BLAS).

    Parameters
    ----------
    Phi : ndarray, shape (n, m), float64 or float32
        The features of the training rows (not copied; never modified).
    n_threads : int, optional
        Threads for the float32 products (default: the cores this process may
        run on, :func:`~kerndwd.engine.threads.usable_cores`, at most one a block).
    block_rows : int, optional
        Rows per block of the float32 products (default: a float64 block of
        about 512 KB, which stays in a core's cache).

    Examples
    --------
    >>> import numpy as np
    >>> Phi = np.arange(6.0).reshape(3, 2)
    >>> form = FeatureMatrixForm(Phi.astype(np.float32))
    >>> form.zmul(np.array([1.0, 1.0, -1.0]))
    array([0., 0., 0.])
    >>> form.ztmul(np.ones(3))
    array([3., 6., 9.])
    """

    def __init__(self, Phi, n_threads=None, block_rows=None):
        if Phi.dtype not in (np.float64, np.float32) or Phi.ndim != 2:
            raise TypeError(f"Phi must be a 2-D float64 or float32 array, got {Phi.dtype} of shape {Phi.shape}")
        super().__init__(Phi)
        self.upcast = Phi.dtype != np.float64
        rows = block_rows or max(16, _PRODUCT_BLOCK_BYTES // (8 * max(self.p, 1)))
        self._blocks = row_blocks(self.n, rows)
        self.n_threads = max(1, min(usable_cores(), len(self._blocks))) if n_threads is None else int(n_threads)

    def _map_blocks(self, work):
        """``work(start, stop, buffer)`` over every block, the blocks split into
        one contiguous run per thread; returns the per-thread results."""
        runs = np.array_split(np.arange(len(self._blocks)), self.n_threads)

        def run(indices):
            if indices.size == 0:
                return None
            rows = max(self._blocks[i][1] - self._blocks[i][0] for i in indices)
            buffer = np.empty((rows, self.p))
            out = None
            for i in indices:
                start, stop = self._blocks[i]
                block = buffer[:stop - start]
                block[...] = self.B[start:stop]
                res = work(start, stop, block)
                if res is None:
                    continue
                if out is None:
                    out = res
                else:
                    out += res
            return out

        if self.n_threads == 1:
            return [run(runs[0])]
        return list(shared_pool(self.n_threads, "kerndwd-features").map(run, runs))

    def apply(self, theta):
        if not self.upcast:
            return self.B @ theta
        out = np.empty((self.n,) + np.shape(theta)[1:])

        def work(start, stop, block):
            np.dot(block, theta, out=out[start:stop])

        self._map_blocks(work)
        return out

    def apply_t(self, z):
        if not self.upcast:
            return self.B.T @ z
        parts = self._map_blocks(lambda start, stop, block: block.T @ z[start:stop])
        return sum(p for p in parts if p is not None)

    def gram(self, weights=None):
        p = self.p
        G = np.zeros((p + 1, p + 1))
        w = np.ones(self.n) if weights is None else weights
        G[0, 0] = w.sum()
        # BLAS-3 sized blocks (float64 copies only when upcasting)
        rows = max(256, BLOCK_ELEMENTS // max(p, 1))
        for start, stop in row_blocks(self.n, rows):
            block = np.asarray(self.B[start:stop], dtype=float)
            wb = block if weights is None else block * w[start:stop, None]
            G[0, 1:] += w[start:stop] @ block
            G[1:, 1:] += block.T @ wb
        G[1:, 0] = G[0, 1:]
        return G

    def weighted_sq_norms(self, weights):
        out = np.empty(self.p + 1)
        out[0] = weights.sum()
        out[1:] = 0.0
        rows = max(256, BLOCK_ELEMENTS // max(self.p, 1))
        for start, stop in row_blocks(self.n, rows):
            block = np.asarray(self.B[start:stop], dtype=float)
            out[1:] += weights[start:stop] @ (block * block)
        return out


class KernelForm(Form):
    """``f = b0 + K alpha``, ``||f||^2 = alpha' K alpha``.

    ``K`` may be held in float32 (``solver="cg"`` where the float64 matrix
    does not fit): its products are then the double-precision products of
    its values (:func:`double_product`).
    """

    def __init__(self, K):
        self.K = K
        self.n = K.shape[0]
        self._eigh = None

    def apply(self, theta):
        return double_product(self.K, theta)

    def apply_t(self, z):
        return double_product(self.K, z)  # K is symmetric

    # ``applied`` = K theta when the caller has it already (it is f - b0)
    def penalty(self, theta, applied=None):
        return float(theta @ (self.apply(theta) if applied is None else applied))

    def penalty_grad(self, theta, applied=None):
        return 2.0 * (self.apply(theta) if applied is None else applied)

    def dual_norm_sq(self, u, theta, lam):
        """The gradient in ``alpha`` is ``K v``, ``v = u + 2 lam alpha``; in the
        penalty's norm ``alpha' K alpha`` its squared dual norm is ``v' K v``."""
        v = u + 2.0 * lam * theta
        return (v * self.apply(v)).sum(axis=0)

    def eigh(self):
        """``(e, U)`` with ``K = U diag(e) U'`` (``scipy.linalg.eigh``), computed on
        the first call and kept: every fit that shares this form shares it."""
        if self._eigh is None:
            self._eigh = linalg.eigh(self.K)
        return self._eigh
