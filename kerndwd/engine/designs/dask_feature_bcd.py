"""Kernel approximations by blocks of columns on rows held by a Dask cluster
(``approx="rff"`` or ``approx="nystroem"`` with ``solver="bcd"`` and a Dask ``X``).

The sweeps are those of
:class:`kerndwd.engine.majorisers.feature_blocks.FeatureBlockCoordinate`
(the same blocks of columns, block step, global step and order of moves);
only where each number is formed changes, and with it the order of some
floating-point sums.  Everything with ``n`` entries stays on the workers,
as in the exact kernel's sweeps on a cluster (:mod:`.dask_bcd`):

* the fitted map (random features: the frequencies and phases; Nystrom: the
  ``m`` landmark rows, drawn from the rows and fetched) goes to every worker
  once; each row chunk ``c`` keeps there its own
  :class:`~kerndwd.engine.majorisers.feature_blocks.ColumnBlocks`, which
  forms the chunk's rows of a block of columns, ``C_cJ`` (``n_c x b``), when
  a sweep needs them, or keeps all ``n_c m`` of them (``cache_features``);
* each chunk keeps a :class:`FeatureChunkState` beside it: its labels and
  weights and its rows of every per-row vector of a sweep (``f``, ``z``, the
  residuals, ``C d``, the images of the previous sweep's directions);
* for the block ``J`` the client sends every chunk the previous block's move
  (``2 b + 1`` numbers); the chunk applies it to its ``f_c`` with the columns
  it kept from its last task, forms ``C_cJ`` and returns ``sum(z_c)`` and
  ``C_cJ' [r0_c, r_c]`` (``2 b + 1`` numbers), for Nystrom its ``z`` at the
  block's landmarks that it holds, and on the first sweep only its
  ``(b + 1)^2`` partial sums of the block's Gram matrix (and for Nystrom its
  rows of ``K_{L_J L_J}``), which the client keeps for every later sweep and
  lambda;
* the client adds the partials, solves the ``(b + 1)`` system and sends the
  move with the next block.

Per sweep a chunk receives the blocks' moves (``2 m`` numbers), for Nystrom
its landmarks' coefficients, and returns ``2 m + O(m / b)`` numbers: nothing
of length ``n`` moves, and ``f``, ``z`` and the columns never do.  Memory on
a worker: one ``n_c x b`` block per chunk it holds, or ``n_c m`` numbers of
``dtype`` when the columns are kept there; on the client, the ``m / b``
Grams and factors (about ``2 m b`` numbers) and vectors of length ``m``.

Whether the columns are kept (``cache_features=None``): where every worker's
chunks' columns take at most :data:`~kerndwd.engine.cache.MEMORY_FRACTION` of
its memory limit (``distributed``), or of the memory available (Dask's local
schedulers, which run the tasks in this process).
"""

from __future__ import annotations

import numpy as np

from ..cache import MEMORY_FRACTION, keeps
from ..chunk_tasks import require_dask
from ..chunked import ChunkedRows
from ..forms import Form
from ..kernel_checks import quiet_kernel
from ..majorisers.blocks import bordered_gram, global_coefficients, partition_rows
from ..majorisers.contract import Majoriser
from ..majorisers.feature_blocks import ColumnBlocks, FourierBlockForm, LandmarkBlockForm, column_blocks
from ..majorisers.linear import spd_solver
from ..row_chunks import RowChunks
from .dask_bcd import ChunkState, ChunkSweeps, DaskKernelForm

__all__ = ["ChunkLandmarkForm", "FeatureChunkState", "DaskColumnForm", "DaskFeatureBlockCoordinate",
           "keeps_on_workers"]


class ChunkLandmarkForm(ColumnBlocks):
    """Nystrom's columns ``k(X_c, L)`` on one row chunk ``X_c``, by blocks of
    landmarks ``L`` (which need not be rows of the chunk).

    Parameters
    ----------
    kern : Kernel
    X : ndarray, shape (n_c, p)
        The chunk's rows.
    landmarks : ndarray, shape (m, p)
    held : ndarray of int, shape (m_c,)
        The landmarks that are rows of this chunk (their indices among the ``m``).
    local_rows : ndarray of int, shape (m_c,)
        Their rows within the chunk.
    block_size, dtype, cache, tile_rows, threads
        As :class:`~kerndwd.engine.majorisers.feature_blocks.ColumnBlocks`.

    Examples
    --------
    >>> import numpy as np, kerndwd
    >>> X = np.random.default_rng(0).standard_normal((10, 2))
    >>> rbf = kerndwd.rbfdot(1.0)
    >>> form = ChunkLandmarkForm(rbf, X[5:], X[[1, 6]], np.array([1]), np.array([1]), block_size=1)
    >>> bool(np.allclose(form.block(1), rbf(X[5:], X[[6]])))
    True
    """

    def __init__(self, kern, X, landmarks, held, local_rows, block_size, dtype=np.float64, cache=False,
                 tile_rows=None, threads=None):
        self.kern, self.X, self.landmarks = kern, X, landmarks
        self.held, self.local_rows = held, local_rows
        super().__init__(X.shape[0], landmarks.shape[0], block_size, dtype, cache, tile_rows, threads)

    _tile = LandmarkBlockForm._tile  # k(X[lo:hi], L[start:stop])

    def block(self, k):
        """As :meth:`LandmarkBlockForm.block`: from a float32 cache, the chunk's
        landmark rows (``K_LL``, the penalty's matrix) are formed again in float64."""
        out = super().block(k)
        if self.stored is not None and self.dtype != np.float64 and self.held.size:
            a, b = self.blocks[k]
            out[self.local_rows] = quiet_kernel(self.kern, self.landmarks[self.held], self.landmarks[a:b])
        return out


# --------------------------------------------------------------------------
# what a worker keeps of its chunk, and the tasks that update it
# --------------------------------------------------------------------------
# the chunk's rows are float64 (the input layer's Dask rows); one thread: the worker's own
def _fourier_columns(X, fmap, block_size, dtype, cache, tile_rows):
    return FourierBlockForm(fmap, X, block_size, dtype=dtype, cache=cache, tile_rows=tile_rows, threads=1)


def _landmark_columns(X, kern, landmarks, held, local_rows, block_size, dtype, cache, tile_rows):
    return ChunkLandmarkForm(kern, X, landmarks, held, local_rows, block_size, dtype=dtype, cache=cache,
                             tile_rows=tile_rows, threads=1)


class FeatureChunkState:
    """What the worker holding one row chunk keeps between the tasks of a sweep.

    Parameters
    ----------
    columns : ColumnBlocks
        The chunk's columns.
    y : ndarray, shape (n_c,)
        Its labels in {-1, +1}.
    w : ndarray or None
        Its weights (the loss's, rescaled), or None.
    q : float
        The loss's exponent.
    held, local_rows : ndarray of int or None
        Nystrom: the landmarks that are rows of the chunk, and those rows (None
        for random features).
    """

    def __init__(self, columns, y, w, q, held=None, local_rows=None):
        self.columns, self.y, self.w, self.q = columns, y, w, float(q)
        self.wy = y if w is None else w * y  # DWDLoss.weighted_labels
        self.held, self.local_rows = held, local_rows
        # set by the sweeps: images (C d, the previous sweep's move of f, C D: the
        # next global step's directions), current (the last block's columns)

    derivative = ChunkState.derivative  # z = w y V_q'(y f) on the chunk, as the exact kernel's chunks form it

    def in_block(self, a, b):
        """``(positions among the held landmarks, their indices in the block)`` of
        the landmarks ``a:b`` that the chunk holds (Nystrom)."""
        inside = (self.held >= a) & (self.held < b)
        return np.flatnonzero(inside), self.held[inside] - a


def _begin(state, f, theta_held, two_n_lam, v0s, *after):
    """Start a sweep from the decision values ``f`` (the chunk's rows); for Nystrom
    ``theta_held`` holds the coefficients of the chunk's landmarks.  Returns
    ``sum(z)``, and where the last sweep left its directions (``v0s``: their
    intercept moves, the intercept's own first) the partial sums of the global
    step: ``(image - v0)' r`` per direction, ``images' W images``, and the
    images at the chunk's landmarks less ``v0`` (Nystrom).  ``after``: the
    last sweep's results, which must be read before the state changes."""
    state.f, state.f_now = f, f.copy()
    state.z = state.derivative(f)
    state.two_n_lam = two_n_lam
    state.residual0 = state.z.copy()  # r at coord, for the gradient there
    if state.held is not None:
        state.residual0[state.local_rows] += two_n_lam * theta_held
    if v0s is None:
        return state.z.sum(), None
    images = np.column_stack([np.ones(f.size)] + [im for im in state.images if im is not None])
    weights = np.ones(f.size) if state.w is None else state.w
    residual = state.z if state.held is None else state.residual0
    lessened = images[:, 1:] - np.asarray(v0s[1:])[None, :]
    sums = (lessened.T @ residual, images.T @ (weights[:, None] * images))
    at_landmarks = None if state.held is None else lessened[state.local_rows]
    return state.z.sum(), (sums, at_landmarks)


def _apply(state, pending):
    """Apply the client's last decision to the chunk: the global step's
    coefficients (and, for Nystrom, the coefficients of its landmarks after
    it), or the previous block's move (with its columns, kept)."""
    kind = pending[0]
    if kind == "global":
        _, coef, spread = pending
        if coef is not None:  # in the order of global_step: the intercept, then each direction
            images = [im for im in state.images if im is not None]
            state.f_now += coef[0]
            for c, image in zip(coef[1:], images):
                state.f_now += c * image
            state.z_now = state.derivative(state.f_now)
        else:
            state.z_now = state.z
        state.f_after = state.f_now.copy()
        state.Cd = np.zeros(state.f_now.size)
        state.spread = spread  # S theta at the chunk's landmarks (Nystrom)
        return
    _, k, move0, move, d_block = pending
    changes = state.current @ np.column_stack((move, d_block))  # C_J v_J, and C_J d_J
    state.f_now += move0
    state.f_now += changes[:, 0]
    state.Cd += changes[:, 1]
    state.z_now = state.derivative(state.f_now)
    if state.held is not None:
        a, b = state.columns.blocks[k]
        positions, inside = state.in_block(a, b)
        state.spread[positions] += move[inside]


def _block(state, pending, k, with_gram):
    """One block on the chunk: apply ``pending``, form ``C_cJ``, and return
    ``([sum(z), C_cJ' r0, C_cJ' r], z at the block's landmarks held here,
    firsts)``; with ``with_gram`` ``firsts`` is the chunk's partial sums of the
    block's bordered Gram matrix and (Nystrom) its rows of ``K_{L_J L_J}``."""
    _apply(state, pending)
    residual = state.z_now
    if state.held is not None:
        residual = residual.copy()
        residual[state.local_rows] += state.two_n_lam * state.spread
    columns = state.columns.block(k)
    products = columns.T @ np.column_stack((state.residual0, residual))
    state.current = columns
    z_rows, omega = None, None
    if state.held is not None:
        a, b = state.columns.blocks[k]
        positions, inside = state.in_block(a, b)
        rows = state.local_rows[positions]
        z_rows = (inside, state.z_now[rows])
        if with_gram:
            omega = (inside, columns[rows])
    firsts = (bordered_gram(columns, state.w), omega) if with_gram else None
    return np.concatenate(([state.z_now.sum()], products[:, 0], products[:, 1])), z_rows, firsts


def _finish(state, pending, D):
    """End a sweep: apply the last block's move, keep the images of the next
    sweep's directions (``C d``, this sweep's move of ``f`` after the global
    step, and ``C D`` where the client sends ``D``); returns the change of ``f``."""
    _apply(state, pending)
    state.images = (state.Cd, state.f_now - state.f_after, None if D is None else state.columns.apply(D))
    df = state.f_now - state.f
    state.current = None
    state.f = state.z = state.z_now = state.residual0 = state.f_now = state.f_after = state.Cd = None
    return df


def _apply_columns(columns, theta):
    return columns.apply(theta)


def _apply_t_columns(columns, z):
    return columns.apply_t(z)


def _split(v, bounds):
    """The chunks' parts of a per-row array ``v`` (on the client)."""
    return [v[bounds[i]:bounds[i + 1]] for i in range(len(bounds) - 1)]


def keeps_on_workers(asked, chunks, row_bytes):
    """Whether the row chunks' columns are kept where the chunks live.

    ``asked`` when the caller said (True or False); else whether each
    worker's chunks take at most :data:`~kerndwd.engine.cache.MEMORY_FRACTION`
    of its memory limit (``distributed``; False where a worker has none), or
    fit the memory budget (:func:`~kerndwd.engine.cache.keeps`) on Dask's
    local schedulers.

    Parameters
    ----------
    asked : bool or None
    chunks : RowChunks
    row_bytes : float
        Bytes of one row's columns.

    Returns
    -------
    bool
    """
    if asked is not None or chunks.client is None:
        return keeps(asked, row_bytes * float(chunks.bounds[-1]))
    try:
        workers = chunks.client.scheduler_info(n_workers=-1)["workers"]  # every worker, not the first few
    except TypeError:  # distributed before the argument: every worker
        workers = chunks.client.scheduler_info()["workers"]
    limits = {address: info.get("memory_limit") or 0 for address, info in workers.items()}
    held = {}
    for rows, owners in zip(chunks.rows, chunks.workers):
        for address in owners or ():
            held[address] = held.get(address, 0.0) + rows * row_bytes
    return bool(held) and all(limits.get(a, 0) > 0 and b <= MEMORY_FRACTION * limits[a] for a, b in held.items())


# --------------------------------------------------------------------------
# the form and the majoriser
# --------------------------------------------------------------------------
class DaskColumnForm(Form):
    """``f = b0 + C theta`` with the penalty of the in-memory
    :class:`~kerndwd.engine.majorisers.feature_blocks.ColumnBlockForm`
    (``theta' theta``, or Nystrom's ``beta' K_LL beta``), for rows held by a
    Dask cluster: each chunk's rows of ``C theta`` are formed beside it from
    its columns.

    :meth:`apply` returns :class:`~kerndwd.engine.chunked.ChunkedRows`;
    :meth:`apply_t` returns ``m`` numbers per chunk, summed on the client.
    They serve the objective's evaluation when a lambda ends (and the gap
    bound), not the sweeps.

    Parameters
    ----------
    chunks : RowChunks
    columns : list
        The handle of each chunk's :class:`ColumnBlocks`.
    pinned : list
        The worker holding each (None each without a cluster).
    m : int
        Columns.
    landmark_rows : ndarray of int or None
        Nystrom's landmark rows (None: random features, ``Omega = I``).
    held : list of (ndarray, ndarray) or None
        Nystrom: for each chunk, the landmarks it holds and their rows in it.
    dual_metric : LandmarkBlockForm or None
        Nystrom: the landmarks' own form, for ``K_LL^+``.
    kern : Kernel or None
        Nystrom: the kernel, for the bound ``v'Kv`` where ``K_LL`` does not fit.
    """

    def __init__(self, chunks, columns, pinned, m, landmark_rows=None, held=None, dual_metric=None, kern=None):
        self.chunks, self.columns, self.pinned = chunks, columns, pinned
        self.n, self.m = int(chunks.bounds[-1]), int(m)
        self.landmark_rows, self.held = landmark_rows, held
        self._landmarks, self._kern = dual_metric, kern
        self._full = None

    def apply(self, theta):
        """``C theta`` as :class:`ChunkedRows` (``theta`` of shape (m,) or (m, k))."""
        theta = np.asarray(theta)
        return self.chunks.rows_from(_apply_columns, lambda i: (self.columns[i], theta), pinned=self.pinned,
                                     ncols=None if theta.ndim == 1 else theta.shape[1])[0]

    def apply_t(self, z):
        """``C' z``: ``m`` numbers per chunk, summed on the client."""
        chunks = self.chunks
        parts = chunks.place(z) if isinstance(z, ChunkedRows) else _split(np.asarray(z), chunks.bounds)
        return np.sum(chunks.gather([chunks.submit(i, _apply_t_columns, c, parts[i], pinned=self.pinned[i])
                                     for i, c in enumerate(self.columns)]), axis=0)

    def _at_landmarks(self, rows):
        """Per-row values (:class:`ChunkedRows`, ``n`` or ``n x k``) at the landmark
        rows, in the landmarks' order: each chunk returns those it holds."""
        chunks = self.chunks
        parts = chunks.place(rows)
        values = chunks.gather([chunks.submit(i, _rows_at, parts[i], local, pinned=self.pinned[i])
                                for i, (_, local) in enumerate(self.held)])
        out = np.empty((self.m,) + rows.shape[1:])
        for (held, _), v in zip(self.held, values):
            out[held] = v
        return out

    def penalty(self, theta, applied=None):
        if self.landmark_rows is None:
            return float(theta @ theta)
        return float(theta @ self._at_landmarks(self.apply(theta) if applied is None else applied))

    def penalty_grad(self, theta, applied=None):
        if self.landmark_rows is None:
            return 2.0 * theta
        return 2.0 * self._at_landmarks(self.apply(theta) if applied is None else applied)

    def dual_norm_sq(self, u, theta, lam):
        """As the in-memory forms: ``|C'u + 2 lam theta|^2`` for random features;
        for Nystrom ``g' K_LL^+ g`` with ``g = C'v``, ``v = u + 2 lam S theta``
        (``C'S theta = K_LL theta``, read off ``C theta`` at the landmarks), or
        its bound ``v'Kv`` where ``K_LL`` does not fit the memory budget (``v``
        gathered to the client)."""
        if self.landmark_rows is None:
            g = self.apply_t(u) + 2.0 * lam * theta
            return (g * g).sum(axis=0)
        if self._landmarks.landmark_solve() is not None:
            g = self.apply_t(u) + 2.0 * lam * self._at_landmarks(self.apply(theta))
            h = self._landmarks._solve[1].T @ g
            return (h * h).sum(axis=0)
        v = np.array(u, dtype=float)  # a copy, on the client
        v[self.landmark_rows] += 2.0 * lam * theta
        if self._full is None:
            chunks, n = self.chunks, self.n
            blocks = partition_rows(n, min(n, self._landmarks.width))
            handles = []

            def block_rows():
                if not handles:
                    handles.extend(chunks.take(b) for b in blocks)
                return handles

            self._full = DaskKernelForm(chunks, self._kern, blocks, block_rows)
        return (v * np.asarray(self._full.apply(v))).sum(axis=0)

    def keep_rows(self, v):
        """New decision values, stored on the workers by the next reduction that reads them."""
        return v.keep() if isinstance(v, ChunkedRows) else v


def _rows_at(rows, local):
    return rows[local]


class DaskFeatureBlockCoordinate(ChunkSweeps, Majoriser):
    """:class:`~kerndwd.engine.majorisers.feature_blocks.FeatureBlockCoordinate`'s
    sweeps on rows held by a Dask cluster (module docstring): the same blocks,
    the same moves in the same order; only the order of some sums differs.

    Parameters
    ----------
    X : dask.array.Array, shape (n, p)
        The validated rows, persisted (one column chunk).
    loss : DWDLoss
        Its weights, if any, are :class:`~kerndwd.engine.chunked.ChunkedRows`.
    gam : float
        The ridge of each block system.
    predictor : Predictor
    block_size : int
        Columns per block.
    cache_features : bool or None
        Keep each chunk's columns on its worker (None: where they fit, :func:`keeps_on_workers`).
    dtype : numpy dtype
        Of the kept columns (and of random features as they are formed).
    tile_rows : int or None
        Rows per tile when a block is formed.
    fmap : FourierMap, optional
        Random features: the fitted map.
    kern, landmarks, landmark_rows : optional
        Nystrom: the kernel, the landmarks (``m x p``, on the client) and their rows of ``X``.
    """

    solver = "bcd"
    needs_decisions = True
    pass_name = "sweeps"

    def __init__(self, X, loss, gam, predictor, block_size, cache_features, dtype, tile_rows, fmap=None,
                 kern=None, landmarks=None, landmark_rows=None):
        require_dask()
        self.chunks = chunks = RowChunks(X)
        self.n = n = int(chunks.bounds[-1])
        self.loss, self.gam, self.predictor = loss, float(gam), predictor
        dtype = np.dtype(dtype)
        if landmark_rows is None:
            m = fmap.n_components
            self.landmark_rows, self._held = None, [(None, None)] * len(chunks)
            self.kept = keeps_on_workers(cache_features, chunks, m * dtype.itemsize)
            columns = [chunks.submit(i, _fourier_columns, x, fmap, block_size, dtype, self.kept, tile_rows)
                       for i, x in enumerate(chunks.X)]
            dual = None
        else:
            rows = np.asarray(landmark_rows, dtype=np.intp)
            m = rows.size
            self.landmark_rows = rows
            self._held = []
            for i in range(len(chunks)):
                held = np.flatnonzero((rows >= chunks.bounds[i]) & (rows < chunks.bounds[i + 1]))
                self._held.append((held, rows[held] - chunks.bounds[i]))
            self.kept = keeps_on_workers(cache_features, chunks, m * dtype.itemsize)
            columns = [chunks.submit(i, _landmark_columns, x, kern, landmarks, *self._held[i], block_size, dtype,
                                     self.kept, tile_rows)
                       for i, x in enumerate(chunks.X)]
            # the landmarks' own form: K_LL^+ for the sweeps' direction and the certificates
            dual = LandmarkBlockForm(kern, landmarks, np.arange(m), block_size)
        self._dual = dual
        self._pinned = chunks.holders(columns)  # each chunk's columns and state live beside it
        self.form = DaskColumnForm(chunks, columns, self._pinned, m, self.landmark_rows, self._held, dual, kern)
        self.ncoef = m + 1
        self.blocks = column_blocks(m, block_size)
        self.block_size = max(b - a for a, b in self.blocks)
        self._grams = [None] * len(self.blocks)
        self._omegas = [None] * len(self.blocks)
        self._directions = None
        self._ready = None
        self._states = None
        self._labels = None
        self._last = ()

    def start(self, alpha=None):
        self._directions = None  # a new path: forget the last sweep's directions
        self._ready = None
        return super().start(alpha)

    def penalty_at(self, coord, f):
        """``theta' theta``, or for Nystrom ``beta' K_LL beta = beta' (f - b0)`` at
        the landmark rows (each chunk returns its landmarks' ``f``)."""
        if self.landmark_rows is None:
            return float(coord[1:] @ coord[1:])
        return float(coord[1:] @ (self.form._at_landmarks(f) - coord[0]))

    def _new_state(self, i, labels, weights):
        return self.chunks.submit(i, FeatureChunkState, self.form.columns[i], labels, weights, self.loss.q,
                                  *self._held[i], pinned=self._pinned[i])

    def _held_values(self, values):
        """The entries of an ``m``-vector at each chunk's landmarks (Nystrom; None each for features)."""
        return [None if held is None else values[held] for held, _ in self._held]

    def _global_step(self, outs, step, coord, z_sum, two_n_lam):
        """The global step's coefficients from the chunks' partial sums (None: no
        move); ``step`` is updated as :func:`~kerndwd.engine.majorisers.blocks.global_step`
        updates it."""
        directions = [(1.0, None)] + [(v0, v) for v0, v, _ in self._directions + self._extra()]
        k = len(directions)
        products = np.sum([o[1][0][0] for o in outs], axis=0)
        gradient = np.array([v0 * z_sum + (0.0 if v is None else products[i - 1])
                             for i, (v0, v) in enumerate(directions)])
        curvature = self.loss.lipschitz * np.sum([o[1][0][1] for o in outs], axis=0)
        theta = coord[1:]
        if self.landmark_rows is None:
            for i in range(1, k):
                gradient[i] += two_n_lam * (theta @ directions[i][1])
        else:
            at_landmarks = np.empty((self.ncoef - 1, k - 1))
            for (held, _), o in zip(self._held, outs):
                at_landmarks[held] = o[1][1]
        for i in range(1, k):
            for j in range(1, k):  # v_i' Omega v_j
                vi, vj = directions[i][1], directions[j][1]
                curvature[i, j] += two_n_lam * (vi @ vj if self.landmark_rows is None else vi @ at_landmarks[:, j - 1])
        coef = global_coefficients(curvature, gradient)  # held, as in memory
        return self._take(coef, directions, step)

    def _extra(self):
        return [] if self._ready is None else [self._ready]

    def _gram(self, k, outs, width):
        """The block's bordered Gram matrix plus ``gam I`` (and Nystrom's
        ``K_{L_J L_J}``), from the chunks' partial sums on the first sweep."""
        if self._grams[k] is None:
            gram = np.sum([o[2][0] for o in outs], axis=0)
            if not np.isfinite(gram).all():
                raise ValueError(f"kern={self._dual.kern if self._dual is not None else None!r}: kernel values "
                                 "between the rows and the landmarks are not finite (overflow); rescale X or "
                                 "choose another kernel")
            gram[np.diag_indices_from(gram)] += self.gam
            self._grams[k] = gram
            if self.landmark_rows is not None:
                omega = np.empty((width, width))
                for o in outs:
                    inside, rows = o[2][1]
                    omega[inside] = rows
                self._omegas[k] = omega
        return self._grams[k]

    def at_lambda(self, lam):
        n, M, blocks, chunks = self.n, self.loss.lipschitz, self.blocks, self.chunks
        rows = self.landmark_rows
        m = self.ncoef - 1
        two_n_lam = 2.0 * n * lam
        c = two_n_lam / M
        ratio = n / m  # rows per landmark
        solve = None if rows is None or m == n else self._dual.landmark_solve()
        solvers = [None] * len(blocks)

        def solver(k, gram):
            if solvers[k] is None:
                P = gram.copy()
                if rows is None:
                    P[np.diag_indices_from(P)] += c
                    P[0, 0] -= c
                else:
                    omega = self._omegas[k]
                    P[1:, 1:] += (0.5 * c) * (omega + omega.T)  # K_{L_J L_J}
                solvers[k] = spd_solver(P)
            return solvers[k]

        def step_fn(z, coord, *, f, y):
            """A sweep from ``coord``, as the in-memory sweep; the chunks form
            ``z`` again from their rows of ``f``."""
            states, f_rows, theta0 = self._chunk_states(y), chunks.place(f), coord[1:]
            held_theta = self._held_values(theta0)
            v0s = None
            if self._directions is not None:
                v0s = [1.0] + [v0 for v0, _, _ in self._directions + self._extra()]
            outs = self._round(_begin, lambda i: (f_rows[i], held_theta[i], two_n_lam, v0s, *self._last[i:i + 1]))
            z_sum = sum(o[0] for o in outs)
            step = np.zeros(self.ncoef)
            coef = None if v0s is None else self._global_step(outs, step, coord, z_sum, two_n_lam)
            after_global = step.copy()
            pending = ("global", coef, self._held_values(theta0 + step[1:]))
            d = np.empty(m)
            if solve is not None:
                seen = np.empty(m)  # n grad F(coord), block by block
            grad_sq = (z_sum / n) ** 2
            for k, (a, b) in enumerate(blocks):
                first = self._grams[k] is None
                outs = self._round(_block, lambda i: (pending if pending[0] != "global" else
                                                      ("global", pending[1], pending[2][i]), k, first))
                sums = np.sum([o[0] for o in outs], axis=0)
                g0, g = sums[1:1 + b - a], sums[1 + b - a:]
                if rows is None:
                    g0 = g0 + two_n_lam * theta0[a:b]
                    g = g + two_n_lam * (theta0[a:b] + step[1 + a:1 + b])
                    d[a:b] = g / -two_n_lam
                else:
                    z_at = np.empty(b - a)
                    for o in outs:
                        inside, values = o[1]
                        z_at[inside] = values
                    d[a:b] = -(theta0[a:b] + step[1 + a:1 + b] + ratio * z_at / two_n_lam)
                grad_sq += (g0 @ g0) / (n * n)
                rhs = np.empty(b - a + 1)
                rhs[0] = sums[0]
                rhs[1:] = g
                move = solver(k, self._gram(k, outs, b - a))(rhs)
                move *= -1.0 / M
                step[0] += move[0]
                step[1 + a:1 + b] += move[1:]
                if solve is not None:
                    seen[a:b] = g0
                pending = ("block", k, move[0], move[1:], d[a:b])
            block_moves = step - after_global
            D = None
            if solve is not None:  # towards coord - K_LL^+ grad / (2 lambda), from where the sweep ends
                D = solve(seen) / -two_n_lam
                D -= step[1:]
            # the next sweep's first tasks wait for these (they read the state this sweep left)
            df, self._last = chunks.rows_from(_finish, lambda i: (states[i], pending, D), pinned=self._pinned)
            self._ready = None if D is None else (0.0, D, None)
            self._directions = [(0.0, d, None), (block_moves[0], block_moves[1:], None)]
            return step, df, grad_sq

        return step_fn
