"""Exact-kernel DWD by block coordinate majorization, without the ``n x n`` kernel matrix.

``solver="bcd"`` fits the exact kernel problem

    F(b0, alpha) = (1/n) sum_i w_i V_q(y_i f_i) + lambda alpha' K alpha,   f = b0 + K alpha   (4.2), (6.2)

in the spirit of Tu et al. ("Large Scale Kernel Learning using Block
Coordinate Descent", 2016): the coefficients are split into blocks of ``b``
rows; a *sweep* visits every block once, forms the kernel columns
``K_I = K[:, I]`` (``n x b``) from the rows, solves one small system per
block and keeps the decision values ``f`` up to date.  Nothing of size
``n x n`` is ever formed.

Every move is the minimiser of a quadratic majoriser of ``n F`` built from
Lemma 2, so ``F`` never increases.  With ``z_i = w_i y_i V_q'(y_i f_i)`` at
the current point, ``M = (q+1)^2/q`` and ``W = diag(w)``, (3.6) gives for a
move ``v = (v0, v_alpha)`` of the coefficients, which changes ``f`` by
``Z v = v0 + K v_alpha``,

    n F(u + v) <= n F(u) + z'Z v + 2 n lambda v_alpha' K alpha
                  + (1/2) v'(M Z'WZ + 2 n lambda diag(0, K)) v.              (*)

The block step
--------------
For the block ``I`` (the intercept moves with every block, being
unpenalised and coupled to all of them) (*) restricted to ``(v0, v_I)``
is minimised by the ``(b+1) x (b+1)`` system

    P_I (v0, v_I) = -(1/M) (sum(z), K_I' r),       r = z + 2 n lambda alpha,
    P_I = [[sum w, w'K_I], [K_I'w, K_I'WK_I]] + gam I + (2 n lambda / M) diag(0, K_II),

(``K_I' r = K_I' z + 2 n lambda (K alpha)_I``, the block of the gradient).
``gam`` is the engine's ridge: it keeps ``P_I`` positive definite and the
quadratic above ``n F``.  The Gram part of ``P_I`` depends on the rows and weights
only and is formed once (``n b^2`` flops per block, on the first sweep);
each lambda factorises the ``P_I`` by Cholesky on its first sweep.

The global step
---------------
Block steps alone converge slowly: the kernel columns of different blocks
span nearly the same functions (``K`` is very ill-conditioned), and moving
weight from one block's coefficients to another's, which the penalty asks
for, takes many sweeps.  The gradient of ``F`` is ``(sum(z), K r) / n`` with
``r = z + 2 n lambda alpha``, so the optimum has ``alpha = -z / (2 n
lambda)``: the direction ``d = -r / (2 n lambda)`` (the functional gradient
of ``F`` in the reproducing kernel Hilbert space, written in coefficients)
points at it whatever the blocks.  A sweep records ``d_I`` as it reaches
block ``I`` and accumulates ``K d = sum_I K_I d_I`` from the columns it
forms anyway.  The next sweep starts by minimising (*) over three
directions: ``e_0`` (the intercept), ``(0, d)`` and the previous sweep's
block moves ``s``; a ``3 x 3`` system whose terms are inner products of
vectors of length ``n``, because ``Z v`` is known for each direction (``1``,
``K d``, and the change of ``f`` the moves made) and ``K v_alpha = Z v -
v_0``.  The coefficient of ``d`` is held in ``[0, 1]``: ``d`` moves ``alpha``
towards the representer point ``-z / (2 n lambda)``, and where ``K`` is
singular (the linear kernel with ``n > p``) most of ``d`` lies in its null
space, where nothing in ``f`` bounds the coefficient; a coefficient outside
``[0, 1]`` multiplied that null part sweep after sweep until it overflowed.
The coefficient of the previous sweep's moves is held in ``[-1, 1]`` for the
same reason: those moves carry a null-space part of their own, and a larger
coefficient grew it until the rounding of ``K r`` (with ``r`` as large as
that part) held the gradient norm above ``1e-8``.
The gradient along ``v`` is formed as ``v_0 sum(z) + (K v_alpha)'
r``, which, unlike ``z'Z v + 2 n lambda alpha'K v``, loses nothing to
cancellation near the optimum (the block steps use ``K_I' r`` for the same
reason).  On the circle data this cuts the sweeps to a gradient norm of
``1e-8`` from hundreds or thousands to a few tens (docs/solvers.md).

Costs and memory
----------------
Per sweep: one evaluation of every kernel value (``n^2``; the dominant
cost), two passes over each ``n x b`` block of columns (``K_I' [r_0, r]``
as it is formed; ``K_I [v_I, d_I]`` after the solve), ``n / b`` small solves
and a few vectors.  Memory: one ``n x b`` block, the ``n / b`` Grams and
Cholesky factors (about ``2 n b`` numbers) and vectors of length ``n``.

The engine's loop
-----------------
:class:`BlockCoordinateKernel` is a majoriser whose step function is one
sweep, so the MM iteration (:mod:`kerndwd.engine.solvers.mm`) runs it unchanged: warm starts
along the path, the ``maxit`` budget (in sweeps), momentum across sweeps and
both stopping rules.  A sweep re-evaluates the loss after each block, so it
needs the decision values and the labels, not only ``z``: it declares
``needs_decisions``, and the loop passes them (see
:class:`kerndwd.engine.majorisers.Majoriser`).

* ``stop="kkt"``: the gradient of ``F`` at the point the sweep starts from,
  ``(sum(z), K r_0) / n``, is assembled block by block from the same kernel
  columns (``K_I' r_0`` beside ``K_I' r``) at no extra cost; the loop
  confirms it on decision values recomputed from the coefficients (two more
  passes over the kernel, :class:`BlockKernelForm`).
* ``stop="step"``: R's rule applied to a sweep: stop when the squared norm
  of the change a whole sweep (global step included) makes to
  ``(b0, alpha)`` is below ``eps``.
"""

from __future__ import annotations

import numpy as np

from ..forms import Form
from ..predictors import KernelPredictor
from ..threads import over_ranges, row_ranges
from .contract import Majoriser
from .linear import spd_solver

__all__ = ["BlockKernelForm", "BlockCoordinateKernel", "DEFAULT_BLOCK_SIZE", "TILE_ENTRIES", "partition_rows",
           "bordered_gram", "global_coefficients", "global_step", "POOL_NAME"]

#: Default coefficients per block (measured: see docs/solvers.md).
DEFAULT_BLOCK_SIZE = 64

#: Kernel values per tile: a block of columns ``K[:, I]`` (and every product
#: with ``K``) is formed a tile of about this many entries (512 KB) at a time,
#: so that the kernel's temporaries stay in cache, and each BLAS call on a tile
#: is small enough to run on the worker thread that makes it.
TILE_ENTRIES = 1 << 16


#: The shared thread pool (:func:`kerndwd.engine.threads.shared_pool`) on which
#: the blocks of kernel columns and of features are formed, a range of rows each.
POOL_NAME = "kerndwd-bcd"


def partition_rows(n, block_size, random_state=None):
    """Blocks of ``ceil(n / block_size)`` nearly equal sizes (within one) over a
    random permutation of ``range(n)``, each sorted; ``random_state`` seeds the
    permutation (None: seed 0, so that a fit is reproducible)."""
    nblocks = -(-n // block_size)
    rng = np.random.default_rng(0 if random_state is None else random_state)
    return [np.sort(block) for block in np.array_split(rng.permutation(n), nblocks)]


def bordered_gram(C, weights=None):
    """``[1, C]' W [1, C]``: ``[[sum w, w'C], [C'w, C'WC]]`` (``W = I`` when
    ``weights`` is None), the data part of a block step's system.

    Examples
    --------
    >>> bordered_gram(np.array([[1.0], [2.0]]), np.array([1.0, 3.0])).tolist()
    [[4.0, 7.0], [7.0, 13.0]]
    """
    size = C.shape[1] + 1
    gram = np.empty((size, size))
    if weights is None:
        gram[0, 0] = C.shape[0]
        gram[0, 1:] = C.sum(axis=0)
        gram[1:, 1:] = C.T @ C
    else:
        gram[0, 0] = weights.sum()
        gram[0, 1:] = weights @ C
        gram[1:, 1:] = C.T @ (weights[:, None] * C)
    gram[1:, 0] = gram[0, 1:]
    return gram


class BlockKernelForm(Form):
    """``f = b0 + K alpha``, ``||f||^2 = alpha' K alpha``, with ``K`` formed a
    block of columns at a time (a :class:`kerndwd.engine.forms.Form`).

    Kernel values are formed in tiles of about :data:`TILE_ENTRIES` entries,
    the rows split between ``threads`` worker threads; no array larger than
    ``n x max block size`` is ever formed.

    Parameters
    ----------
    kern : Kernel
        The kernel.
    X : ndarray, shape (n, p)
        The training rows (not copied; the caller keeps them unchanged).
    blocks : list of ndarray of int
        A partition of ``range(n)``: the column blocks.
    threads : int, optional
        Worker threads (default: the usable cores).

    Examples
    --------
    >>> import numpy as np, kerndwd
    >>> from kerndwd.engine.majorisers.blocks import BlockKernelForm, partition_rows
    >>> X = np.random.default_rng(0).standard_normal((50, 2))
    >>> form = BlockKernelForm(kerndwd.rbfdot(1.0), X, partition_rows(50, 16))
    >>> theta = np.ones(50)
    >>> bool(np.allclose(form.apply(theta), kerndwd.rbfdot(1.0)(X) @ theta))
    True
    """

    def __init__(self, kern, X, blocks, threads=None):
        self.kern = kern
        self.X = X
        self.n = n = X.shape[0]
        self.blocks = blocks
        self._buffer = np.empty((n, max(len(b) for b in blocks)))
        self._ranges = row_ranges(n, threads)  # a thread gets at least a few tiles' worth of rows

    def _over_rows(self, work):
        """``work(lo, hi)`` for each range of rows, in parallel threads; the results in order."""
        return over_ranges(self._ranges, work, POOL_NAME)

    def _tiles(self, lo, hi, XI):
        """``(start, stop, K(X[start:stop], XI))`` over the rows ``lo:hi``."""
        X, kern = self.X, self.kern
        step = max(1, TILE_ENTRIES // XI.shape[0])
        for start in range(lo, hi, step):
            stop = min(start + step, hi)
            yield start, stop, kern(X[start:stop], XI)

    def columns(self, block, vectors):
        """``K[:, block]`` (shape (n, len(block)); a view of a buffer that the
        next call overwrites) and ``K[:, block]' vectors`` (``vectors`` of shape
        (n, k)), formed together in one pass."""
        out = self._buffer[:, :len(block)]
        XI = self.X[block]

        def work(lo, hi):
            product = np.zeros((len(block), vectors.shape[1]))
            for start, stop, tile in self._tiles(lo, hi, XI):
                out[start:stop] = tile
                product += tile.T @ vectors[start:stop]
            return product

        return out, sum(self._over_rows(work))

    def times(self, columns, coef):
        """``columns @ coef`` for columns from :meth:`columns` (shape (n, b)) and
        ``coef`` of shape (b, k), by tiles of rows in the worker threads."""
        out = np.empty((self.n, coef.shape[1]))
        step = max(1, TILE_ENTRIES // columns.shape[1])

        def work(lo, hi):
            for start in range(lo, hi, step):
                stop = min(start + step, hi)
                out[start:stop] = columns[start:stop] @ coef

        self._over_rows(work)
        return out

    def apply(self, theta):
        """``K theta`` (``theta`` of shape (n,) or (n, k)), one pass over the kernel's tiles."""
        out = np.zeros((self.n,) + np.shape(theta)[1:])

        def work(lo, hi):
            for block in self.blocks:
                coef = theta[block]
                for start, stop, tile in self._tiles(lo, hi, self.X[block]):
                    out[start:stop] += tile @ coef

        self._over_rows(work)
        return out

    def apply_t(self, z):
        """``K' z = K z`` (``K`` is symmetric)."""
        return self.apply(z)

    def penalty(self, theta, applied=None):
        return float(theta @ (self.apply(theta) if applied is None else applied))

    def penalty_grad(self, theta, applied=None):
        return 2.0 * (self.apply(theta) if applied is None else applied)

    def dual_norm_sq(self, u, theta, lam):
        """``v' K v`` with ``v = u + 2 lam theta``, one pass over the tiles for
        all columns (the squared dual norm of the gradient ``K v`` in the penalty's
        norm, as :meth:`KernelForm.dual_norm_sq`)."""
        v = u + 2.0 * lam * theta
        return (v * self.apply(v)).sum(axis=0)


class MatrixBlockForm(BlockKernelForm):
    """:class:`BlockKernelForm` over a kernel matrix kept in memory: a block's
    columns are read from ``K`` (its rows, contiguous, transposed: ``K`` is
    symmetric) instead of being formed from the rows, and ``K theta`` is one
    product.  Same numbers as forming them, with no kernel evaluation per sweep.

    Parameters
    ----------
    kern : Kernel
    X : ndarray, shape (n, p)
    blocks : list of ndarray of int
    K : ndarray, shape (n, n)
        The kernel matrix of ``X`` (read, never written).
    """

    def __init__(self, kern, X, blocks, K):
        super().__init__(kern, X, blocks, threads=1)
        self.K = K

    def columns(self, block, vectors):
        rows = self.K[block]  # b x n, a copy of contiguous rows
        return rows.T, rows @ vectors

    def times(self, columns, coef):
        return columns @ coef

    def apply(self, theta):
        return self.K @ theta


class BlockCoordinateKernel(Majoriser):
    """Exact-kernel DWD, one block coordinate majorization sweep per pass.

    The coordinates are ``(b0, alpha)`` themselves.  See the module docstring
    for the block step; the step function is a whole sweep and needs the
    decision values and labels (``needs_decisions``).

    Parameters
    ----------
    kern : Kernel
    X : ndarray, shape (n, p)
        Training rows; the predictor keeps its own copy.
    loss : DWDLoss
    gam : float
        The ridge added to each block system (:data:`kerndwd.engine.problem.GAM_FIT`).
    block_size : int
        Coefficients per block (at most ``n``; blocks are nearly equal).
    random_state : int, Generator or None
        Seeds the partition of the rows into blocks.
    K : ndarray, shape (n, n), optional
        The kernel matrix, when it is kept in memory: the sweeps read their
        columns from it (:class:`MatrixBlockForm`).
    """

    solver = "bcd"
    needs_decisions = True
    pass_name = "sweeps"

    def __init__(self, kern, X, loss, gam, block_size=DEFAULT_BLOCK_SIZE, random_state=None, K=None):
        n = X.shape[0]
        self.n, self.ncoef = n, n + 1
        self.loss = loss
        self.gam = float(gam)
        self.predictor = KernelPredictor(kern, X)
        self.blocks = partition_rows(n, min(int(block_size), n), random_state)
        self.form = (BlockKernelForm(kern, self.predictor.x, self.blocks) if K is None
                     else MatrixBlockForm(kern, self.predictor.x, self.blocks, K))
        self.block_size = max(len(b) for b in self.blocks)
        self._grams = [None] * len(self.blocks)
        self._directions = None

    def start(self, alpha=None):
        self._directions = None  # a new path: forget the last sweep's directions
        return super().start(alpha)

    def penalty_at(self, coord, f):
        return float(coord[1:] @ (f - coord[0]))  # alpha' K alpha, with K alpha = f - b0

    def _gram(self, k, KI):
        """``[[sum w, w'K_I], [K_I'w, K_I'WK_I]] + gam I`` of block ``k`` (formed once)."""
        if self._grams[k] is None:
            gram = bordered_gram(KI, self.loss.weights)
            gram[np.diag_indices_from(gram)] += self.gam
            self._grams[k] = gram
        return self._grams[k]

    def at_lambda(self, lam):
        n, M, loss, form, blocks = self.n, self.loss.lipschitz, self.loss, self.form, self.blocks
        two_n_lam = 2.0 * n * lam
        c = two_n_lam / M
        weights = np.ones(n) if loss.weights is None else loss.weights
        solvers = [None] * len(blocks)

        def solver(k, block, KI):
            """The block's majoriser solve, factorised once per lambda by the engine's
            :func:`~kerndwd.engine.linear.spd_solver` (Cholesky, or its eigen fallback
            where duplicated rows leave the block semidefinite)."""
            if solvers[k] is None:
                P = self._gram(k, KI).copy()
                P[1:, 1:] += c * KI[block]  # the penalty's curvature: (2 n lambda / M) K_II
                solvers[k] = spd_solver(P)
            return solvers[k]

        def step_fn(z, coord, *, f, y):
            """One sweep from ``coord`` (decision values ``f``, labels ``y``, and
            ``z`` at ``f``): the change of ``(b0, alpha)``, the change of ``f``,
            and ``||grad F(coord)||^2``."""
            wy = loss.weighted_labels(y)
            f_now = f.copy()
            step = np.zeros(self.ncoef)
            if self._directions is not None and self._global_step(step, coord, f_now, z, two_n_lam, weights):
                z_now = wy * loss.deriv(y * f_now)
            else:
                z_now = z
            after_global, f_after_global = step.copy(), f_now.copy()
            residuals = np.empty((n, 2))
            residuals[:, 0] = z + two_n_lam * coord[1:]  # r at coord, for the gradient there
            d = np.empty(n)
            Kd = np.zeros(n)
            grad_sq = (z.sum() / n) ** 2
            for k, block in enumerate(blocks):
                # K_I' z + 2 n lambda (K alpha)_I = K_I' r: r is small near the optimum,
                # so this loses nothing to cancellation
                residuals[:, 1] = z_now + two_n_lam * (coord[1:] + step[1:])
                KI, KIr = form.columns(block, residuals)
                grad_sq += (KIr[:, 0] @ KIr[:, 0]) / (n * n)
                rhs = np.empty(len(block) + 1)
                rhs[0] = z_now.sum()
                rhs[1:] = KIr[:, 1]
                move = solver(k, block, KI)(rhs)
                move *= -1.0 / M
                step[0] += move[0]
                step[1 + block] += move[1:]
                d[block] = residuals[block, 1] / -two_n_lam
                changes = form.times(KI, np.column_stack((move[1:], d[block])))  # K_I v_I, and K_I d_I
                f_now += move[0]
                f_now += changes[:, 0]
                Kd += changes[:, 1]
                z_now = wy * loss.deriv(y * f_now)
            # the next sweep starts with a step along d and along this sweep's block moves
            block_moves = step - after_global
            self._directions = ((0.0, d, Kd), (block_moves[0], block_moves[1:], f_now - f_after_global))
            return step, f_now - f, grad_sq

        return step_fn

    def _global_step(self, step, coord, f_now, z, two_n_lam, weights):
        """Minimise the majoriser (*) at ``coord`` over the intercept and the
        directions kept from the last sweep (:func:`global_step`, the penalty's
        metric ``K``)."""
        directions = [(1.0, None, np.ones(self.n))] + list(self._directions)
        return global_step(directions, step, coord, f_now, z, two_n_lam, weights, self.loss.lipschitz,
                           rows=slice(None))


def global_step(directions, step, coord, f_now, z, two_n_lam, weights, M, rows, hold=True):
    """Minimise the majoriser (*) at ``coord`` over ``directions``
    (``(v0, v, image)``: a move of the intercept and the coefficients, and the
    change of ``f`` it makes, ``Z v``); updates ``step`` and ``f_now`` in place
    and says whether it moved (not when no descent beyond rounding is to be
    had).

    The penalty's metric is the kernel of the rows ``rows`` (``K`` itself
    with ``slice(None)``; ``K_LL`` for landmark rows), read off the images
    (``K v = Z v - v0`` at those rows), or the identity when ``rows`` is None
    (features).  With a kernel metric the gradient of ``n F`` along ``v`` is
    ``v_0 sum(z) + (Z v - v0)' r`` with ``r = z + 2 n lambda alpha`` at the
    rows: ``r`` is small near the optimum, so no large terms cancel (as
    ``z'K v + 2 n lambda alpha'K v`` would).  ``hold``: see
    :func:`global_coefficients`.
    """
    k = len(directions)
    images = np.column_stack([image for _, _, image in directions])  # Z v, the changes of f
    theta = coord[1:]
    z_sum = z.sum()
    if rows is None:  # z'C v + 2 n lambda theta'v
        gradient = np.array([v0 * z_sum + (0.0 if v is None else (image - v0) @ z + two_n_lam * (theta @ v))
                             for v0, v, image in directions])
    else:
        residual = z.copy()
        residual[rows] += two_n_lam * theta
        gradient = np.array([v0 * z_sum + (0.0 if v is None else (image - v0) @ residual)
                             for v0, v, image in directions])
    curvature = M * (images.T @ (weights[:, None] * images))
    for i in range(1, k):
        for j in range(1, k):  # v_i' Omega v_j
            vi, (v0j, vj, imj) = directions[i][1], directions[j]
            curvature[i, j] += two_n_lam * (vi @ vj if rows is None else vi @ (imj[rows] - v0j))
    coef = global_coefficients(curvature, gradient, hold=hold)
    if coef is None:
        return False
    for c, (v0, v, image) in zip(coef, directions):
        step[0] += c * v0
        if v is not None:
            step[1:] += c * v
        f_now += c * image
    return True


def global_coefficients(curvature, gradient, hold=True):
    """The coefficients of a sweep's global step: the minimiser of the
    quadratic ``c' gradient + c' curvature c / 2`` over the directions (the
    intercept, ``d``, then the last sweep's moves), or None where it promises
    no descent beyond rounding.

    It is solved on a unit diagonal, and a direction without curvature (a
    zero one) is dropped.  With ``hold`` the coefficients are held as the
    exact kernel's sweeps need them: ``d`` moves ``alpha`` towards the
    representer point ``-z / (2 n lambda)``, and a coefficient in ``[0, 1]``
    keeps ``alpha`` between the two, where ``K`` is singular along
    directions that change nothing in ``f`` (and so have no curvature to
    bound the coefficient); the previous sweep's moves carry their part in
    ``K``'s null space along, which nothing in ``f`` bounds, so their
    coefficient is held in ``[-1, 1]``.

    Examples
    --------
    >>> global_coefficients(np.eye(2), np.array([-1.0, -3.0])).tolist()  # d's coefficient held at 1
    [1.0, 1.0]
    >>> global_coefficients(np.eye(2), np.array([-1.0, -3.0]), hold=False).tolist()
    [1.0, 3.0]
    """
    k = gradient.size
    curvature = 0.5 * (curvature + curvature.T)
    scale = np.sqrt(np.maximum(np.diag(curvature), 0.0))
    keep = scale > 0.0
    if not (np.isfinite(curvature).all() and np.isfinite(gradient).all()):
        return None
    coef = _minimise(curvature, gradient, keep, scale)
    if hold:
        if keep[1] and not 0.0 <= coef[1] <= 1.0:
            coef = _minimise(curvature, gradient, keep, scale, fixed=(1, min(max(coef[1], 0.0), 1.0)))
        if k > 2 and keep[2] and abs(coef[2]) > 1.0:
            coef = _minimise(curvature, gradient, keep, scale, fixed=(2, np.clip(coef[2], -1.0, 1.0)))
            if keep[1] and not 0.0 <= coef[1] <= 1.0:
                coef[1] = min(max(coef[1], 0.0), 1.0)
    decrease = -(coef @ gradient + 0.5 * coef @ curvature @ coef)
    if not np.isfinite(coef).all() or decrease <= 0.0:
        return None
    return coef


def _minimise(curvature, gradient, keep, scale, fixed=None):
    """The coefficients minimising ``c'g + c'Hc / 2`` over the directions ``keep``,
    solved on a unit diagonal (``scale``), with ``fixed = (i, value)`` holding one
    coefficient at a value."""
    coef = np.zeros(gradient.size)
    free = keep.copy()
    g = gradient.astype(float)
    if fixed is not None:
        i, value = fixed
        coef[i] = value
        free[i] = False
        g = g + curvature[:, i] * value
    if free.any():
        scaled = curvature[np.ix_(free, free)] / np.outer(scale[free], scale[free])
        coef[free] = -np.linalg.lstsq(scaled, g[free] / scale[free], rcond=1e-12)[0] / scale[free]
    return coef
