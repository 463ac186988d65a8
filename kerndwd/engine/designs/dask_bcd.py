"""The exact kernel by block coordinate descent on rows held by a Dask cluster
(``solver="bcd"`` with a Dask ``X``).

The sweeps are those of :class:`kerndwd.engine.majorisers.blocks.BlockCoordinateKernel`
(same blocks, same block step, same global step, same order of moves); only
where each number is formed changes, and with it the order of some
floating-point sums.  Everything with ``n`` entries stays on the workers:

* each row chunk ``c`` keeps, on the worker that holds it, a :class:`ChunkState`:
  its rows ``X_c``, labels and weights, and its rows of every per-row vector
  of a sweep (``f``, ``z``, the residuals, the sweep's moves of ``alpha``,
  ``K d`` and the previous sweep's directions);
* the rows never come to the client.  Each block's rows ``X_I`` are put
  together on the cluster once per fit (each chunk cuts its part, one task
  joins them: :meth:`~kerndwd.engine.row_chunks.RowChunks.take`), and the workers pass them among
  themselves (Dask fetches a task's inputs from any worker holding a copy);
  the client keeps only the handles;
* for the block ``I`` the client has ``X_I`` copied to every worker by a
  broadcast tree (:meth:`~kerndwd.engine.row_chunks.RowChunks.broadcast`), and sends every chunk the
  previous block's move (``2 b + 1`` numbers) with the handle of ``X_I``;
  the chunk applies that move to its ``f_c`` (with the columns ``K_cI'`` of the
  previous block, kept from its last task), forms ``K_cI = k(X_c, X_I)``
  where it lives and returns ``sum(z_c)``, ``K_cI' [r0_c, r_c]`` and its rows
  of ``r`` in ``I``: ``3 b + 1`` numbers at most, plus, on the first sweep
  only, its ``(b + 1)^2`` partial sums of the block's Gram matrix and its
  rows of ``K_II`` (read off ``K_cI``), which the client keeps for every later
  sweep and lambda;
* the client adds the partials, solves the ``(b + 1)`` system and sends the
  move with the next block.

Per sweep a chunk thus receives its ``n / chunks`` entries of ``alpha`` and
the blocks' moves from the client (``2 n`` numbers), the blocks' rows from
its peers (``n p`` numbers, the same for every chunk), and returns ``3 n +
O(1)`` numbers; ``f``, ``z`` and the kernel columns never move.  One round
trip per block, plus one at the start of a sweep for the global step's inner
products (a ``3 x 3`` system).  The client keeps what the in-memory sweeps
keep besides the kernel columns: the coefficients and the blocks' Grams,
``K_II`` and factors (about ``3 n b`` numbers).  The kernel's checks run where
the rows live (:func:`check_kernel_on_chunks`), and a fitted path fetches
the training rows (``n p`` numbers) when it first predicts.

Each chunk's state is one future, made by a task on the worker that holds
the chunk; every later task of the fit takes it, updates it in place and
returns only the numbers the client needs (one task per chunk and round).
Those tasks are pinned to the state's worker (a copy made elsewhere would
not be the one updated), and the client waits for each round before the
next, so they run in order.  Releasing the futures (the fit ends) frees the
workers.  Without a ``distributed`` cluster (Dask's local schedulers)
the same tasks run in the client's process on the persisted chunks.
"""

from __future__ import annotations

from functools import partial

import numpy as np

from ..chunk_tasks import require_dask
from ..chunked import ChunkedRows
from ..forms import Form
from ..kernel_checks import check_kernel_parts, kernel_diagonal
from ..loss import loss_derivs
from ..majorisers.blocks import TILE_ENTRIES, bordered_gram, global_coefficients, partition_rows
from ..majorisers.contract import Majoriser
from ..majorisers.linear import spd_solver
from ..predictors import KernelPredictor
from ..row_chunks import RowChunks, gather_rows

__all__ = ["check_kernel_on_chunks", "ChunkState", "ChunkSweeps", "DaskKernelForm", "DaskBlockCoordinateKernel"]


def check_kernel_on_chunks(chunks, kern):
    """The exact solver's checks of ``kern`` on the rows (as
    :func:`~kerndwd.engine.kernel_checks.check_kernel_rows`), made where the
    rows live: each chunk returns its ``k(x_i, x_i)``, and the sampled rows of
    the definiteness check are put together on the cluster and fetched."""
    n = int(chunks.bounds[-1])
    diagonal = np.concatenate(chunks.gather([chunks.submit(i, kernel_diagonal, kern, x)
                                             for i, x in enumerate(chunks.X)]))
    check_kernel_parts(kern, diagonal, lambda rows: chunks.gather([chunks.take(rows)])[0], n)


# --------------------------------------------------------------------------
# what a worker keeps of its chunk, and the tasks that update it
# --------------------------------------------------------------------------
def _cross_kernel(kern, rows, XI, out=None):
    """``k(rows, XI)``, formed :data:`~kerndwd.engine.majorisers.blocks.TILE_ENTRIES`
    values at a time (the kernel's temporaries stay in cache)."""
    out = np.empty((rows.shape[0], XI.shape[0])) if out is None else out
    step = max(1, TILE_ENTRIES // max(1, XI.shape[0]))
    for start in range(0, rows.shape[0], step):
        stop = min(start + step, rows.shape[0])
        out[start:stop] = kern(rows[start:stop], XI)
    return out


class ChunkState:
    """What the worker holding one row chunk keeps between the tasks of a sweep.

    Parameters
    ----------
    X : ndarray, shape (n_c, p)
        The chunk's rows (not copied).
    y : ndarray, shape (n_c,)
        Its labels in {-1, +1}.
    w : ndarray or None
        Its weights (the loss's, rescaled), or None.
    kern : Kernel
    q : float
        The loss's exponent.
    start : int
        The index of its first row among all ``n``.
    """

    def __init__(self, X, y, w, kern, q, start):
        self.X, self.y, self.w, self.kern, self.q = X, y, w, kern, float(q)
        self.wy = y if w is None else w * y  # DWDLoss.weighted_labels
        self.start, self.stop = int(start), int(start) + X.shape[0]
        self.directions = None
        self.columns = None

    def derivative(self, f):
        """``z = w y V_q'(y f)`` on the chunk (as :meth:`kerndwd.engine.objective.Objective.derivative`)."""
        return self.wy * loss_derivs(self.y * f, self.q)

    def local(self, block):
        """``(rows of the chunk, positions in block)`` of the block's rows that the chunk holds."""
        lo, hi = np.searchsorted(block, [self.start, self.stop])
        return block[lo:hi] - self.start, slice(lo, hi)


def _init_state(X, y, w, kern, q, start):
    return ChunkState(np.asarray(X, dtype=float), np.asarray(y, dtype=float),
                      None if w is None else np.asarray(w, dtype=float), kern, q, start)


def _begin(state, f, alpha, two_n_lam, with_directions, moves0, *after):
    """Start a sweep from the decision values ``f`` and coefficients ``alpha`` (the
    chunk's rows); returns ``sum(z)`` and, when the last sweep left its
    directions, the partial sums of the global step's system.  ``after``: the
    last sweep's results, which must be read before the state changes."""
    f = np.asarray(f, dtype=float)
    state.f, state.f_now = f, f.copy()
    state.z = state.derivative(f)
    state.alpha, state.two_n_lam = alpha, two_n_lam
    state.step = np.zeros(f.size)
    state.residual0 = state.z + two_n_lam * alpha  # r at coord, for the gradient there
    out = [state.z.sum()]
    if with_directions:
        d, Kd, moves, image = state.directions
        residual = state.residual0
        weights = np.ones(f.size) if state.w is None else state.w
        images = np.column_stack((np.ones(f.size), Kd, image))
        curvature = images.T @ (weights[:, None] * images)
        out += [(Kd - 0.0) @ residual, (image - moves0) @ residual, *curvature.ravel(),
                d @ (Kd - 0.0), d @ (image - moves0), moves @ (Kd - 0.0), moves @ (image - moves0)]
    return np.array(out)


def _apply(state, pending):
    """Apply the client's last decision to the chunk: the global step's
    coefficients, or the previous block's move (with its columns, kept)."""
    kind = pending[0]
    if kind == "global":
        coef = pending[1]
        if coef is not None:  # in the order of BlockCoordinateKernel._global_step
            d, Kd, moves, image = state.directions
            state.f_now += coef[0] * np.ones(state.f_now.size)
            state.step += coef[1] * d
            state.f_now += coef[1] * Kd
            state.step += coef[2] * moves
            state.f_now += coef[2] * image
            state.z_now = state.derivative(state.f_now)
        else:
            state.z_now = state.z
        state.step_after, state.f_after = state.step.copy(), state.f_now.copy()
        state.d, state.Kd = np.empty(state.f_now.size), np.zeros(state.f_now.size)
        return
    _, move0, move, d_block = pending
    rows, positions = state.columns_rows
    state.step[rows] += move[positions]
    changes = state.columns @ np.column_stack((move, d_block))  # K_cI v_I, and K_cI d_I
    state.f_now += move0
    state.f_now += changes[:, 0]
    state.Kd += changes[:, 1]
    state.z_now = state.derivative(state.f_now)


def _block(state, pending, XI, block, with_gram):
    """One block on the chunk: apply ``pending``, form ``K_cI``, and return
    ``([sum(z), K_cI' r0, K_cI' r], the chunk's rows of r in I, None)``; with
    ``with_gram`` the last is ``(its Gram partial sums, its rows of K_cI in
    I)``: the client's ``K_II``, as the in-memory sweep reads it off its columns."""
    _apply(state, pending)
    residual = state.z_now + state.two_n_lam * (state.alpha + state.step)
    columns = _cross_kernel(state.kern, state.X, XI, state.columns if state.columns is not None
                            and state.columns.shape[1] == XI.shape[0] else None)
    products = columns.T @ np.column_stack((state.residual0, residual))
    rows, positions = state.local(block)
    state.d[rows] = residual[rows] / -state.two_n_lam
    state.columns, state.columns_rows = columns, (rows, positions)
    # the in-memory sweep's Gram, on the chunk's rows, and its rows of K_II
    firsts = (bordered_gram(columns, state.w), columns[rows]) if with_gram else None
    return np.concatenate(([state.z_now.sum()], products[:, 0], products[:, 1])), residual[rows], firsts


def _finish(state, pending):
    """End a sweep: apply the last block's move and keep the directions the next
    sweep's global step starts along; returns the change of ``f``."""
    _apply(state, pending)
    state.directions = (state.d, state.Kd, state.step - state.step_after, state.f_now - state.f_after)
    df = state.f_now - state.f
    state.columns = state.columns_rows = None
    # what only the sweep needed
    state.f = state.z = state.z_now = state.residual0 = state.f_now = state.f_after = None
    state.step = state.step_after = None
    return df


def _apply_chunk(X, block_rows, blocks, theta, kern):
    """``K[chunk rows, :] theta``: ``sum over blocks of k(X, X[block]) theta[block]``
    (the order of :meth:`BlockKernelForm.apply`), a tile at a time;
    ``block_rows``: the rows of each block."""
    out = np.zeros((X.shape[0],) + theta.shape[1:])
    for block, XI in zip(blocks, block_rows):
        coef = theta[block]
        step = max(1, TILE_ENTRIES // max(1, len(block)))
        for start in range(0, X.shape[0], step):
            stop = min(start + step, X.shape[0])
            out[start:stop] += kern(X[start:stop], XI) @ coef
    return out


# --------------------------------------------------------------------------
# the form and the majoriser
# --------------------------------------------------------------------------
class DaskKernelForm(Form):
    """``f = b0 + K alpha``, ``||f||^2 = alpha' K alpha``, for rows held by a Dask
    cluster: ``K alpha`` is formed on the workers, each chunk's rows of it
    from its rows and the rows of every block (which the workers pass among
    themselves), a block of columns at a time.

    :meth:`apply` returns :class:`~kerndwd.engine.chunked.ChunkedRows` (the
    decision values stay on the workers); the products that yield
    coefficients (:meth:`apply_t`, :meth:`penalty_grad`, :meth:`dual_norm_sq`)
    gather ``n`` numbers per column.  They serve the objective's evaluation
    when a lambda ends (and the gap bound), not the sweeps.

    Parameters
    ----------
    chunks : RowChunks
        The row chunks of ``X``.
    kern : Kernel
    blocks : list of ndarray of int
        A partition of ``range(n)``: the order in which columns are added.
    block_rows : callable
        Returns the handle of each block's rows (:meth:`~kerndwd.engine.row_chunks.RowChunks.take`).
    """

    def __init__(self, chunks, kern, blocks, block_rows):
        self.chunks, self.kern, self.blocks, self.block_rows = chunks, kern, blocks, block_rows
        self.n = int(chunks.bounds[-1])

    def apply(self, theta):
        """``K theta`` as :class:`ChunkedRows` (``theta`` of shape (n,) or (n, k))."""
        theta = np.asarray(theta, dtype=float)
        chunks, rows = self.chunks, self.block_rows()
        return chunks.rows_from(_apply_chunk, lambda i: (chunks.X[i], rows, self.blocks, theta, self.kern),
                                ncols=None if theta.ndim == 1 else theta.shape[1])[0]

    def apply_t(self, z):
        """``K z`` (``K`` is symmetric), gathered: ``z`` comes to the client, ``K z`` back."""
        return _gathered(self.apply(_gathered(z)))

    def penalty(self, theta, applied=None):
        applied = self.apply(theta) if applied is None else applied
        return float(theta @ _gathered(applied))

    def penalty_grad(self, theta, applied=None):
        return 2.0 * _gathered(self.apply(theta) if applied is None else applied)

    def dual_norm_sq(self, u, theta, lam):
        """``v' K v`` with ``v = u + 2 lam theta`` (as :meth:`BlockKernelForm.dual_norm_sq`)."""
        v = _gathered(u) + 2.0 * lam * theta
        return (v * _gathered(self.apply(v))).sum(axis=0)

    def keep_rows(self, v):
        """New decision values, stored on the workers by the next reduction that reads them."""
        return v.keep() if isinstance(v, ChunkedRows) else v


def _gathered(rows):
    """Per-row values (ChunkedRows, a vector or a matrix of rows, or an array) on the client as a float array."""
    return np.asarray(rows, dtype=float)


class ChunkSweeps:
    """What the sweeps on a cluster share: one state per row chunk, made on the
    worker that holds the chunk, and rounds of one task per state.

    A subclass sets ``chunks`` (:class:`~kerndwd.engine.row_chunks.RowChunks`),
    ``loss``, and ``_states = _labels = None``, ``_last = ()``, and gives
    :meth:`_new_state`.
    """

    def _new_state(self, i, labels, weights):
        """The handle of chunk ``i``'s state, from its labels and weights (None: unweighted)."""
        raise NotImplementedError

    def _chunk_states(self, y):
        """The chunks' states for the labels ``y`` (made on the first sweep, again for other labels)."""
        if self._states is None or self._labels is not y:
            chunks = self.chunks
            labels = chunks.place(y)
            weights = None if self.loss.weights is None else chunks.place(self.loss.weights)
            self._states = [self._new_state(i, labels[i], None if weights is None else weights[i])
                            for i in range(len(chunks))]
            # every later task updates its chunk's state in place, where it lives
            self._pinned = chunks.holders(self._states)
            self._labels = y
            self._last = ()
        return self._states

    @staticmethod
    def _take(coef, directions, step):
        """Add the global step's coefficients ``coef`` (None: no move) times the
        directions' moves ``(v0, v)`` (``v`` None: the intercept alone) to
        ``step``; returns ``coef``."""
        if coef is not None:
            for c, (v0, v) in zip(coef, directions):
                step[0] += c * v0
                if v is not None:
                    step[1:] += c * v
        return coef

    def _round(self, fn, args_of=lambda i: ()):
        """``fn(state, *args_of(i))`` on the state of every chunk ``i``, where it
        lives; the results on the client."""
        chunks = self.chunks
        return chunks.gather([chunks.submit(i, fn, s, *args_of(i), pinned=self._pinned[i])
                              for i, s in enumerate(self._states)])


class DaskBlockCoordinateKernel(ChunkSweeps, Majoriser):
    """:class:`~kerndwd.engine.majorisers.blocks.BlockCoordinateKernel`'s sweeps on
    rows held by a Dask cluster (module docstring): the same blocks (for the
    same ``block_size`` and ``random_state``), the same moves in the same
    order; only the order of some sums differs.

    Parameters
    ----------
    kern : Kernel
    X : dask.array.Array, shape (n, p)
        The validated rows, persisted (one column chunk).  They stay on the
        workers: each block's rows are put together there once
        (:meth:`~kerndwd.engine.row_chunks.RowChunks.take`), and the predictor fetches the rows when it
        first predicts.
    loss : DWDLoss
        Its weights, if any, are :class:`~kerndwd.engine.chunked.ChunkedRows`.
    gam : float
        The ridge of each block system.
    block_size : int
    random_state : int, Generator or None
        Seeds the partition of the rows into blocks.
    """

    solver = "bcd"
    needs_decisions = True
    pass_name = "sweeps"

    def __init__(self, kern, X, loss, gam, block_size, random_state=None):
        n = X.shape[0]
        self.n, self.ncoef = n, n + 1
        self.kern, self.loss, self.gam = kern, loss, float(gam)
        self.predictor = KernelPredictor(kern, partial(gather_rows, X), n_features=X.shape[1])
        self.blocks = partition_rows(n, min(int(block_size), n), random_state)
        self.block_size = max(len(b) for b in self.blocks)
        self.chunks = RowChunks(X)
        self.form = DaskKernelForm(self.chunks, kern, self.blocks, self.block_rows)
        self._block_rows = None
        self._block_kernels = [None] * len(self.blocks)
        self._grams = [None] * len(self.blocks)
        self._directions = None
        self._states = None
        self._labels = None
        self._last = ()
        self._pinned = None

    def block_rows(self):
        """The handle of each block's rows, put together on the cluster once per
        fit (about ``n p`` numbers spread over the workers)."""
        if self._block_rows is None:
            self._block_rows = [self.chunks.take(block) for block in self.blocks]
        return self._block_rows

    def start(self, alpha=None):
        self._directions = None  # a new path: forget the last sweep's directions
        return super().start(alpha)

    def penalty_at(self, coord, f):
        """``alpha' K alpha = alpha' (f - b0)``, one reduction over the chunks."""
        da = require_dask()
        alpha = ChunkedRows.from_dask(da.from_array(coord[1:], chunks=(self.chunks.rows,)))
        return float(alpha @ (f - coord[0]))

    def _new_state(self, i, labels, weights):
        return self.chunks.submit(i, _init_state, self.chunks.X[i], labels, weights, self.kern, self.loss.q,
                                  self.chunks.bounds[i])

    def _global_step(self, outs, step, two_n_lam):
        """The global step's coefficients from the chunks' partial sums (None: no
        move); ``step`` is updated as ``BlockCoordinateKernel._global_step`` does."""
        total = np.sum([o[1:] for o in outs], axis=0)
        z_sum = sum(o[0] for o in outs)
        d, moves0, moves = self._directions
        directions = ((1.0, None), (0.0, d), (moves0, moves))
        gradient = np.array([1.0 * z_sum + 0.0, 0.0 * z_sum + total[0], moves0 * z_sum + total[1]])
        curvature = self.loss.lipschitz * total[2:11].reshape(3, 3)
        curvature[1:, 1:] += two_n_lam * total[11:15].reshape(2, 2)
        return self._take(global_coefficients(curvature, gradient), directions, step)

    def at_lambda(self, lam):
        n, M, blocks, chunks = self.n, self.loss.lipschitz, self.blocks, self.chunks
        two_n_lam = 2.0 * n * lam
        c = two_n_lam / M
        solvers = [None] * len(blocks)
        bounds = chunks.bounds

        def solver(k, gram):
            if solvers[k] is None:
                P = gram.copy()
                P[1:, 1:] += c * self._block_kernels[k]  # the penalty's curvature: (2 n lambda / M) K_II
                solvers[k] = spd_solver(P)
            return solvers[k]

        def step_fn(z, coord, *, f, y):
            """One sweep from ``coord`` (decision values ``f``, labels ``y``; ``z``
            at ``f`` is formed again on each chunk from them)."""
            states = self._chunk_states(y)
            f_rows = chunks.place(f)
            with_directions = self._directions is not None
            moves0 = self._directions[1] if with_directions else 0.0
            outs = self._round(_begin, lambda i: (f_rows[i], coord[1 + bounds[i]:1 + bounds[i + 1]].copy(), two_n_lam,
                                                  with_directions, moves0, *self._last[i:i + 1]))
            z_sum = sum(o[0] for o in outs)
            step = np.zeros(self.ncoef)
            coef = self._global_step(outs, step, two_n_lam) if with_directions else None
            after_global = step.copy()
            pending = ("global", coef)
            d = np.empty(n)
            grad_sq = (z_sum / n) ** 2
            rows = self.block_rows()
            for k, block in enumerate(blocks):
                XI = chunks.broadcast(rows[k])
                first = self._grams[k] is None
                outs = self._round(_block, lambda i: (pending, XI, block, first))
                sums = np.sum([o[0] for o in outs], axis=0)
                b = len(block)
                KIr0, KIr = sums[1:1 + b], sums[1 + b:]
                if first:  # kept for every later sweep and lambda
                    gram = np.sum([o[2][0] for o in outs], axis=0)
                    gram[np.diag_indices(b + 1)] += self.gam
                    self._grams[k] = gram
                    self._block_kernels[k] = np.concatenate([o[2][1] for o in outs])  # chunks in row order
                grad_sq += (KIr0 @ KIr0) / (n * n)
                rhs = np.empty(b + 1)
                rhs[0] = sums[0]
                rhs[1:] = KIr
                move = solver(k, self._grams[k])(rhs)
                move *= -1.0 / M
                step[0] += move[0]
                step[1 + block] += move[1:]
                d[block] = np.concatenate([o[1] for o in outs]) / -two_n_lam
                pending = ("block", move[0], move[1:], d[block])
            # the next sweep's first tasks wait for these (they read the state this sweep left)
            df, self._last = chunks.rows_from(_finish, lambda i: (states[i], pending), pinned=self._pinned)
            block_moves = step - after_global
            self._directions = (d, block_moves[0], block_moves[1:])
            return step, df, grad_sq

        return step_fn
