"""Kernel approximations by block coordinate majorization over blocks of features.

``approx="rff"`` or ``approx="nystroem"`` with ``solver="bcd"`` fit

    F(b0, theta) = (1/n) sum_i w_i V_q(y_i f_i) + lambda theta' Omega theta,   f = b0 + C theta,

for a basis ``C`` (``n x m``) of ``m`` columns and a penalty matrix ``Omega``:

* random Fourier features: ``C = Phi`` (``Phi_ij = sqrt(2/m) cos(w_j'x_i + b_j)``)
  and ``Omega = I``: linear DWD on the features, the model of ``approx="rff"``;
* Nystrom: ``C = k(X, L)`` over ``m`` landmark rows ``L`` of ``X`` and
  ``Omega = K_LL``: the kernel model restricted to the span of the
  landmarks' kernel functions, ``f = b0 + sum_j beta_j k(., l_j)`` with
  ``||f||^2 = beta' K_LL beta`` (the same functions and the same penalty as
  the Nystrom features ``k(x, L) K_LL^(-1/2)``, without the ``m x m``
  eigendecomposition; with ``L = X`` it is the exact kernel problem).

The columns are split into blocks of ``b`` consecutive columns.  A *sweep*
visits every block once: it forms the block's columns ``C_J`` (``n x b``,
from the rows, or read from a cache of all of them), solves one
``(b+1) x (b+1)`` system and keeps ``f`` up to date.  Nothing of size
``n x m`` is formed unless the caller lets it be cached; nothing of size
``m x m`` ever.

The block step
--------------
With ``z_i = w_i y_i V_q'(y_i f_i)``, ``M = (q+1)^2/q`` (Lemma 2) and
``W = diag(w)``, ``n F`` is majorised at the current point, for a move
``v = (v0, v_theta)`` that changes ``f`` by ``Z v = v0 + C v_theta``, by

    n F + z'Z v + 2 n lambda theta' Omega v_theta
        + (1/2) v'(M Z'WZ + 2 n lambda diag(0, Omega)) v.                    (*)

Restricted to the intercept and the block ``J`` it is minimised by

    P_J (v0, v_J) = -(1/M) (sum(z), g_J),    g_J = C_J' z + 2 n lambda (Omega theta)_J,
    P_J = [[sum w, w'C_J], [C_J'w, C_J'WC_J]] + gam I + (2 n lambda / M) diag(0, Omega_JJ).

``g_J`` is ``n`` times the block of the gradient of ``F``.  For the
features ``(Omega theta)_J = theta_J`` and ``Omega_JJ = I``.  For Nystrom
the landmarks are rows of ``X``, so ``K_LL beta`` is read off the decision
values (``(f - b0)`` at the landmark rows) and ``g_J = C_J' r`` with
``r = z + 2 n lambda S beta`` (``S`` scatters ``beta`` to the landmark rows);
``Omega_JJ = K_{L_J L_J}`` is the block's own rows of ``C_J``.  The Gram part
of ``P_J`` is formed once (on the first sweep) and ``P_J`` is factorised
once per lambda.

As the exact kernel's sweeps (:mod:`kerndwd.engine.majorisers.blocks`), a
sweep starts with a global step: (*) minimised over the intercept, the
direction ``d`` and the previous sweep's block moves, from inner products
of length-``n`` vectors (``C d`` is accumulated from the columns the sweep
forms anyway).  For the features ``d_J = -g_J / (2 n lambda)``, the
gradient.  For Nystrom ``d_J = -(beta_J + (n/m) z_J / (2 n lambda))`` at the
landmark rows: towards the representer point with the sum over the rows
estimated from the landmarks (a uniform sample of them); with ``m = n`` it
is the exact kernel's direction, and the sweeps converge as fast.

With ``m < n`` landmark coefficients are a redundant basis (the kernel
functions of nearby landmarks nearly coincide, ``K_LL`` is very
ill-conditioned), and block steps alone, or with ``d``, stall: on 200 rows,
50 landmarks in blocks of 16, the gradient norm was still ``1e-4`` after 400
sweeps.  The direction that removes the redundancy is the gradient in the
penalty's own metric, ``D = -K_LL^+ (n grad F) / (2 n lambda)`` (the
functional gradient projected on the landmarks' span): where ``K_LL`` and its
eigenvectors fit the memory budget the sweep gathers ``n grad F`` at its
starting point (block by block, as it forms the columns), forms ``D`` at the
end, and one more pass over the columns gives ``C D``; the next sweep's
global step includes it (from the point the sweep ended at, towards
``beta - K_LL^+ grad F / (2 lambda)``).  The same case then reaches
``1e-10`` in 50 sweeps.  Beyond that budget (``m`` above about
``sqrt(budget / 24)``, some 16 000 landmarks with a 6 GB budget) there is no
``D``: use blocks as large as the memory allows, or the random features.

Costs and memory
----------------
Per sweep: every column once (``n m p`` for the features' products and
cosines, ``n m`` kernel values for Nystrom, twice with ``D``), two passes over each block
(``C_J' [r_0, r]`` and ``C_J [v_J, d_J]``), ``m / b`` small solves.
Memory: one ``n x b`` block per thread, the ``m / b`` Grams and factors
(about ``2 m b`` numbers) and vectors of length ``n`` and ``m``; plus
``n m`` numbers of the cache's dtype when the columns are cached.
"""

from __future__ import annotations

import threading
from abc import ABC, abstractmethod

import numpy as np
from scipy import linalg

from ..cache import memory_budget
from ..feature_maps import nystroem_cutoff
from ..forms import Form
from ..kernel_checks import quiet_kernel
from ..threads import over_ranges, row_ranges
from .blocks import POOL_NAME, BlockKernelForm, bordered_gram, global_step, partition_rows
from .contract import Majoriser
from .linear import spd_solver

__all__ = ["ColumnBlocks", "ColumnBlockForm", "FourierBlockForm", "LandmarkBlockForm", "FeatureBlockCoordinate",
           "DEFAULT_FEATURE_BLOCK", "column_blocks"]

#: Default columns per block (features or landmarks).
DEFAULT_FEATURE_BLOCK = 256
#: Entries of one tile of rows when a block of columns is formed (512 KB of float64).
TILE_ENTRIES = 1 << 16


def column_blocks(m, block_size):
    """``(start, stop)`` of ``ceil(m / block_size)`` consecutive blocks of nearly
    equal sizes (within one) covering ``range(m)``.

    Examples
    --------
    >>> column_blocks(10, 4)
    [(0, 3), (3, 7), (7, 10)]
    """
    count = -(-m // max(1, min(int(block_size), m)))
    bounds = np.linspace(0, m, count + 1).round().astype(int)
    return [(int(a), int(b)) for a, b in zip(bounds[:-1], bounds[1:])]


class ColumnBlocks(ABC):
    """The columns of an ``n x m`` matrix ``C``, formed a block of columns at a time.

    Subclasses give :meth:`_tile` (the columns ``start:stop`` of some rows).  A block is formed in tiles of rows of about
    :data:`TILE_ENTRIES` entries, split between worker threads; with
    ``cache=True`` every block is formed once, stored as ``dtype`` (float32
    halves the memory; products are still accumulated in float64) and read
    back on each use.

    Parameters
    ----------
    n, m : int
        Rows and columns of ``C``.
    block_size : int
        Columns per block (clipped to ``m``; blocks of nearly equal sizes).
    dtype : numpy dtype, default float64
        Storage of the cached blocks.
    cache : bool, default False
        Keep every block in memory (``n m`` numbers of ``dtype``).
    tile_rows : int, optional
        Rows per tile when blocks are formed (default: about
        :data:`TILE_ENTRIES` entries).
    threads : int, optional
        Worker threads forming a block (default: the usable cores).
    """

    def __init__(self, n, m, block_size, dtype=np.float64, cache=False, tile_rows=None, threads=None):
        self.n, self.m = int(n), int(m)
        self.blocks = column_blocks(self.m, block_size)
        self.width = max(b - a for a, b in self.blocks)
        self.dtype = np.dtype(dtype)
        self._tile_rows = tile_rows or max(1, TILE_ENTRIES // self.width)
        self._ranges = row_ranges(self.n, threads)
        self._local = threading.local()  # one block buffer per thread (fits may share a form)
        self.stored = None
        if cache:
            self.stored = [self._form(a, b, np.empty((self.n, b - a), dtype=self.dtype)) for a, b in self.blocks]

    def __getstate__(self):
        state = self.__dict__.copy()
        state["_local"] = None
        for key in ("_dual", "_solve"):  # closures: a copy forms its own
            if key in state:
                state[key] = None
        return state

    def __setstate__(self, state):
        self.__dict__.update(state)
        self._local = threading.local()

    @property
    def cached(self):
        """Whether every block is kept in memory."""
        return self.stored is not None

    @abstractmethod
    def _tile(self, lo, hi, start, stop):
        """Columns ``start:stop`` of ``C`` at the rows ``lo:hi``, float64."""

    def _form(self, start, stop, out):
        """Columns ``start:stop`` of every row, into ``out`` (``n x (stop - start)``)."""
        step = self._tile_rows

        def work(lo, hi):
            for a in range(lo, hi, step):
                b = min(a + step, hi)
                out[a:b] = self._tile(a, b, start, stop)

        over_ranges(self._ranges, work, POOL_NAME)
        return out

    def _buffer(self, width):
        buffer = getattr(self._local, "buffer", None)
        if buffer is None:
            buffer = self._local.buffer = np.empty((self.n, self.width))
        return buffer[:, :width]

    def block(self, k):
        """The columns of block ``k``, float64, shape (n, b): a buffer that the
        next call on this thread overwrites (or the cached block itself when it is
        float64)."""
        a, b = self.blocks[k]
        if self.stored is not None:
            stored = self.stored[k]
            if stored.dtype == np.float64:
                return stored
            out = self._buffer(b - a)
            np.copyto(out, stored)
            return out
        return self._form(a, b, self._buffer(b - a))

    def columns(self, k, vectors):
        """``C_J`` of block ``k`` and ``C_J' vectors`` (``vectors`` of shape (n, j))."""
        CJ = self.block(k)
        return CJ, CJ.T @ vectors

    def apply(self, theta):
        theta = np.asarray(theta, dtype=float)
        out = np.zeros((self.n,) + theta.shape[1:])
        for k, (a, b) in enumerate(self.blocks):
            out += self.block(k) @ theta[a:b]
        return out

    def apply_t(self, z):
        z = np.asarray(z, dtype=float)
        out = np.empty((self.m,) + z.shape[1:])
        for k, (a, b) in enumerate(self.blocks):
            out[a:b] = self.block(k).T @ z
        return out



class ColumnBlockForm(ColumnBlocks, Form):
    """``f = b0 + C theta`` with ``C`` (``n x m``) formed a block of columns at a
    time (:class:`ColumnBlocks`); subclasses give the columns and the penalty."""

    # --- what the sweeps need of the penalty theta' Omega theta
    #: None for Omega = I; the landmark rows for Omega = K_LL
    landmark_rows = None


class FourierBlockForm(ColumnBlockForm):
    """Random Fourier features by blocks: ``C = phi(X)`` for a
    :class:`~kerndwd.engine.feature_maps.FourierMap`, ``||f||^2 = theta' theta``.

    Parameters
    ----------
    fmap : FourierMap
    X : ndarray, shape (n, p)
        The training rows (not copied; kept unchanged by the caller).
    block_size, dtype, cache, tile_rows, threads
        As :class:`ColumnBlockForm`.

    Examples
    --------
    >>> import numpy as np
    >>> from kerndwd.engine.feature_maps import FourierMap
    >>> rng = np.random.default_rng(0)
    >>> fmap = FourierMap(rng.standard_normal((2, 30)), rng.uniform(0, 6, 30))
    >>> X = rng.standard_normal((40, 2))
    >>> form = FourierBlockForm(fmap, X, block_size=8)
    >>> theta = rng.standard_normal(30)
    >>> bool(np.allclose(form.apply(theta), fmap.transform(X) @ theta))
    True
    """

    def __init__(self, fmap, X, block_size, dtype=np.float64, cache=False, tile_rows=None, threads=None):
        self.fmap, self.X = fmap, X
        super().__init__(X.shape[0], fmap.n_components, block_size, dtype, cache, tile_rows, threads)

    def _tile(self, lo, hi, start, stop):
        # float32 features are formed to float32 precision (a float32 cosine, vectorised),
        # cached or not: the same numbers either way
        return self.fmap.transform_columns(self.X[lo:hi], start, stop, dtype=self.dtype)

    def penalty(self, theta, applied=None):
        return float(theta @ theta)

    def penalty_grad(self, theta, applied=None):
        return 2.0 * theta

    def dual_norm_sq(self, u, theta, lam):
        """``|C'u + 2 lam theta|^2``: the penalty's norm is Euclidean."""
        g = self.apply_t(u) + 2.0 * lam * theta
        return (g * g).sum(axis=0)


class LandmarkBlockForm(ColumnBlockForm):
    """Nystrom's model by blocks of landmarks: ``C = k(X, L)`` over landmark rows
    ``L = X[rows]``, ``||f||^2 = beta' K_LL beta``.

    ``K_LL beta`` is ``C beta`` at the landmark rows, so the penalty and its
    gradient come from the decision values.  The squared dual norm of a
    gradient ``g = C'v`` in that penalty's norm, ``g' K_LL^+ g`` (the
    certified gap bound of R's rule), is formed from the eigendecomposition of
    ``K_LL`` where ``m x m`` numbers fit the memory budget; beyond, it is
    bounded by ``v'Kv`` (the RKHS norm of ``sum_i v_i k(., x_i)``, of which the
    gradient is the projection onto the landmarks' span), from the kernel
    by tiles (``n^2`` kernel values).

    Parameters
    ----------
    kern : Kernel
    X : ndarray, shape (n, p)
        The training rows (not copied).
    rows : ndarray of int, shape (m,)
        The landmark rows, distinct.
    block_size, dtype, cache, tile_rows, threads
        As :class:`ColumnBlockForm`.

    Examples
    --------
    >>> import numpy as np, kerndwd
    >>> X = np.random.default_rng(0).standard_normal((40, 2))
    >>> form = LandmarkBlockForm(kerndwd.rbfdot(1.0), X, np.arange(0, 40, 2), block_size=8)
    >>> beta = np.ones(20)
    >>> bool(np.allclose(form.apply(beta), kerndwd.rbfdot(1.0)(X, X[::2]) @ beta))
    True
    """

    def __init__(self, kern, X, rows, block_size, dtype=np.float64, cache=False, tile_rows=None, threads=None):
        self.kern, self.X = kern, X
        self.landmark_rows = np.asarray(rows, dtype=np.intp)
        self.landmarks = np.ascontiguousarray(X[self.landmark_rows], dtype=float)
        self._dual = None
        self._solve = None
        super().__init__(X.shape[0], self.landmark_rows.size, block_size, dtype, cache, tile_rows, threads)

    def _tile(self, lo, hi, start, stop):
        return quiet_kernel(self.kern, self.X[lo:hi], self.landmarks[start:stop])

    def block(self, k):
        """As :meth:`ColumnBlockForm.block`; from a float32 cache, the landmark rows
        are formed again in float64: they are ``K_LL``, the penalty's matrix, whose
        rounding to float32 (``6e-8``) would leave it indefinite and the problem
        without a minimiser (``m b`` kernel values per block)."""
        out = super().block(k)
        if self.stored is not None and self.dtype != np.float64:
            a, b = self.blocks[k]
            out[self.landmark_rows] = quiet_kernel(self.kern, self.landmarks, self.landmarks[a:b])
        return out

    def scatter(self, beta):
        """``S beta``: ``beta`` at the landmark rows, zero elsewhere (shape (n,) + beta's columns)."""
        beta = np.asarray(beta, dtype=float)
        out = np.zeros((self.n,) + beta.shape[1:])
        out[self.landmark_rows] = beta
        return out

    def penalty(self, theta, applied=None):
        applied = self.apply(theta) if applied is None else applied
        return float(theta @ applied[self.landmark_rows])

    def penalty_grad(self, theta, applied=None):
        applied = self.apply(theta) if applied is None else applied
        return 2.0 * applied[self.landmark_rows]

    def landmark_solve(self):
        """``h -> K_LL^+ h`` (eigenvalues of ``K_LL`` below
        :func:`~kerndwd.engine.feature_maps.nystroem_cutoff` dropped, as the
        Nystrom features drop them) where ``K_LL`` and its eigenvectors fit the
        memory budget; None beyond.  Formed once (``m^2`` kernel values and an
        ``m x m`` eigendecomposition)."""
        if self._solve is None:
            budget = memory_budget()
            if budget is not None and 24.0 * self.m * self.m <= budget:
                evals, evecs = linalg.eigh(quiet_kernel(self.kern, self.landmarks))
                top = evals[-1] if evals.size else 0.0
                keep = evals > nystroem_cutoff(self.m) * max(top, 0.0)
                root = evecs[:, keep] / np.sqrt(evals[keep])
                self._solve = (lambda h: root @ (root.T @ h), root)
            else:
                self._solve = (None, None)
        return self._solve[0]

    def _dual_metric(self):
        """``v -> g' K_LL^+ g`` with ``g = C'v`` (eigenvalues of ``K_LL`` below
        :func:`~kerndwd.engine.feature_maps.nystroem_cutoff` dropped, as the
        Nystrom features drop them), or ``v -> v'Kv`` where ``K_LL`` does not fit."""
        if self._dual is None:
            if self.landmark_solve() is not None:
                root = self._solve[1]

                def metric(v):
                    h = root.T @ self.apply_t(v)
                    return (h * h).sum(axis=0)
            else:
                full = BlockKernelForm(self.kern, self.X, partition_rows(self.n, min(self.n, self.width)))

                def metric(v):
                    return (v * full.apply(v)).sum(axis=0)
            self._dual = metric
        return self._dual

    def dual_norm_sq(self, u, theta, lam):
        """``g' K_LL^+ g`` for the gradient ``g = C'v``, ``v = u + 2 lam S theta``
        (or its bound ``v'Kv``; see the class docstring)."""
        v = np.asarray(u, dtype=float) + 2.0 * lam * self.scatter(theta)
        return self._dual_metric()(v)


class FeatureBlockCoordinate(Majoriser):
    """Block coordinate majorization over blocks of columns of a
    :class:`ColumnBlockForm`: one sweep per pass (see the module docstring).

    The coordinates are ``(b0, theta)`` themselves (``theta`` the feature
    weights, or Nystrom's landmark coefficients ``beta``).

    Parameters
    ----------
    form : ColumnBlockForm
        The columns and the penalty.
    loss : DWDLoss
    gam : float
        The ridge added to each block system.
    predictor : Predictor
        Decision values at new rows from ``(b0, theta)``.
    """

    solver = "bcd"
    needs_decisions = True
    pass_name = "sweeps"

    def __init__(self, form, loss, gam, predictor):
        self.form = form
        self.n, self.ncoef = form.n, form.m + 1
        self.loss = loss
        self.gam = float(gam)
        self.predictor = predictor
        self.blocks = form.blocks
        self.block_size = form.width
        self._grams = [None] * len(self.blocks)
        self._directions = None
        self._ready = None

    def start(self, alpha=None):
        self._directions = None  # a new path: forget the last sweep's directions
        self._ready = None
        return super().start(alpha)

    def penalty_at(self, coord, f):
        rows = self.form.landmark_rows
        if rows is None:
            return float(coord[1:] @ coord[1:])
        return float(coord[1:] @ (f[rows] - coord[0]))  # beta' K_LL beta, K_LL beta = (f - b0) at L

    def _gram(self, k, CJ):
        """``[[sum w, w'C_J], [C_J'w, C_J'WC_J]] + gam I`` of block ``k`` (formed once)."""
        if self._grams[k] is None:
            gram = bordered_gram(CJ, self.loss.weights)
            if not np.isfinite(gram).all():
                kern = getattr(self.form, "kern", None)
                raise ValueError(f"kern={kern!r}: kernel values between the rows and the landmarks are not "
                                 "finite (overflow); rescale X or choose another kernel")
            gram[np.diag_indices_from(gram)] += self.gam
            self._grams[k] = gram
        return self._grams[k]

    def at_lambda(self, lam):
        n, M, loss, form, blocks = self.n, self.loss.lipschitz, self.loss, self.form, self.blocks
        rows = form.landmark_rows
        two_n_lam = 2.0 * n * lam
        c = two_n_lam / M
        weights = np.ones(n) if loss.weights is None else loss.weights
        ratio = n / form.m  # rows per landmark
        solve = None if rows is None or form.m == n else form.landmark_solve()
        solvers = [None] * len(blocks)

        def solver(k, CJ):
            """The block's majoriser solve, factorised once per lambda (Cholesky, or
            the eigen fallback of :func:`~kerndwd.engine.majorisers.linear.spd_solver`)."""
            if solvers[k] is None:
                P = self._gram(k, CJ).copy()
                if rows is None:
                    P[np.diag_indices_from(P)] += c
                    P[0, 0] -= c
                else:
                    a, b = blocks[k]
                    omega = CJ[rows[a:b]]
                    P[1:, 1:] += (0.5 * c) * (omega + omega.T)  # K_{L_J L_J}
                solvers[k] = spd_solver(P)
            return solvers[k]

        def step_fn(z, coord, *, f, y):
            """One sweep from ``coord``: the change of ``(b0, theta)``, the change of
            ``f``, and ``||grad F(coord)||^2``."""
            wy = loss.weighted_labels(y)
            f_now = f.copy()
            step = np.zeros(self.ncoef)
            extra = () if self._ready is None else (self._ready,)
            if self._directions is not None and self._global_step(step, coord, f_now, z, two_n_lam, weights, extra):
                z_now = wy * loss.deriv(y * f_now)
            else:
                z_now = z
            after_global, f_after_global = step.copy(), f_now.copy()
            theta0 = coord[1:]
            residuals = np.empty((n, 2))
            residuals[:, 0] = z  # r at coord (Nystrom: z + 2 n lambda S beta), for the gradient there
            if rows is not None:
                residuals[rows, 0] += two_n_lam * theta0
                spread = np.zeros(n)  # S beta at the current point
                spread[rows] = theta0 + step[1:]
            d = np.empty(form.m)
            Cd = np.zeros(n)
            if solve is not None:
                seen = np.empty(form.m)  # n grad F(coord), block by block
            grad_sq = (z.sum() / n) ** 2
            for k, (a, b) in enumerate(blocks):
                residuals[:, 1] = z_now
                if rows is not None:
                    residuals[:, 1] += two_n_lam * spread
                CJ, CJr = form.columns(k, residuals)
                g0, g = CJr[:, 0], CJr[:, 1]
                if rows is None:
                    g0 = g0 + two_n_lam * theta0[a:b]
                    g = g + two_n_lam * (theta0[a:b] + step[1 + a:1 + b])
                    d[a:b] = g / -two_n_lam
                else:
                    d[a:b] = -(spread[rows[a:b]] + ratio * z_now[rows[a:b]] / two_n_lam)
                grad_sq += (g0 @ g0) / (n * n)
                rhs = np.empty(b - a + 1)
                rhs[0] = z_now.sum()
                rhs[1:] = g
                move = solver(k, CJ)(rhs)
                move *= -1.0 / M
                step[0] += move[0]
                step[1 + a:1 + b] += move[1:]
                if rows is not None:
                    spread[rows[a:b]] += move[1:]
                if solve is not None:
                    seen[a:b] = g0
                changes = CJ @ np.column_stack((move[1:], d[a:b]))  # C_J v_J, and C_J d_J
                f_now += move[0]
                f_now += changes[:, 0]
                Cd += changes[:, 1]
                z_now = wy * loss.deriv(y * f_now)
            block_moves = step - after_global
            if solve is not None:  # towards coord - K_LL^+ grad / (2 lambda), from where the sweep ends
                D = solve(seen) / -two_n_lam
                D -= step[1:]
                self._ready = (0.0, D, form.apply(D))  # one more pass over the columns
            self._directions = ((0.0, d, Cd), (block_moves[0], block_moves[1:], f_now - f_after_global))
            return step, f_now - f, grad_sq

        return step_fn

    def _global_step(self, step, coord, f_now, z, two_n_lam, weights, extra=()):
        """Minimise the majoriser (*) at ``coord`` over the intercept and the
        directions kept from the last sweep (:func:`global_step`: the penalty's
        metric ``K_LL`` for landmarks, the identity for features).  The
        coefficients are held as the exact kernel's sweeps hold them: ``K_LL``
        may be singular (duplicated rows), and with features, near the optimum,
        ``d`` and the last sweep's moves turn nearly parallel, where the free
        minimiser's coefficients grow to tens of opposite signs and the sweeps
        stall at a gradient of about 1e-9 instead of converging."""
        directions = [(1.0, None, np.ones(self.n))] + list(self._directions) + list(extra)
        rows = self.form.landmark_rows
        return global_step(directions, step, coord, f_now, z, two_n_lam, weights, self.loss.lipschitz, rows)
