"""Linear and feature designs on a row-chunked Dask array: the rows stay on the workers.

When a problem's ``X`` is a ``dask.array`` (validated by the faces: float,
row-chunked with one column chunk, known chunk sizes, persisted on the
cluster), the engine keeps everything with ``n`` entries where the chunks
are:

* the basis ``B`` (``X`` itself for linear DWD, the features
  ``Phi = phi(X)`` of a feature design, formed per chunk by
  ``map_blocks`` of the fitted map's ``transform`` and persisted), never
  gathered;
* the per-row vectors of the MM loop: the labels ``y``, the weights, the
  decision values ``f`` (persisted once per iterate through
  :meth:`DaskLinearForm.keep_rows`, the one hook the loop calls) and
  ``z_i = w_i y_i V_q'(y_i f_i)`` (never stored: its expression is fused
  into the task that reduces it).

:class:`DaskLinearForm` gives the linear-form methods of
:mod:`kerndwd.engine.forms` as Dask reductions over the row chunks: each
product ``Z'z`` (``Z = [1, B]``), the Gram matrix ``Z'WZ`` and the column
norms are one blockwise task per chunk that returns a small partial sum,
followed by a tree sum; only those partial sums, ``(k + 1)`` or
``(k + 1)^2`` floats per chunk, travel.  ``Z coef`` is lazy and chunked
like ``X``.  The linear majorisers solve their ``(k + 1)`` system on the
client, unchanged, so a fit on a cluster runs the same MM iteration as one
in memory; only the order of the floating-point sums differs.

Nothing here starts a scheduler: computations run on whatever
``distributed.Client`` is current, or on Dask's default scheduler.  Dask is
imported only when a Dask collection is seen; kerndwd imports and runs
without it.
"""

from __future__ import annotations

import warnings

import numpy as np

from .forms import LinearForm

__all__ = ["is_dask_collection", "require_dask", "DaskLinearForm", "DaskRowsView", "dask_feature_matrix",
           "map_input", "row_reduce"]

#: What to install for Dask input (named in every ImportError).
DASK_EXTRA = "pip install 'kerndwd[dask]'"


def is_dask_collection(obj) -> bool:
    """True for a Dask collection (array, DataFrame, Series), without importing Dask."""
    graph = getattr(type(obj), "__dask_graph__", None)
    return callable(graph) and obj.__dask_graph__() is not None


def require_dask():
    """``dask.array``, or an ImportError naming the extra that provides it."""
    try:
        import dask.array as da
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError(f"Dask input needs dask[array]: {DASK_EXTRA}") from exc
    return da


# --------------------------------------------------------------------------
# reductions over row chunks
# --------------------------------------------------------------------------
def _stack_block(block_fn, out_shape):
    """``block_fn`` with its result given a leading axis of length 1 (one
    partial result per row chunk)."""

    def stacked(*blocks, **kwargs):
        return np.asarray(block_fn(*blocks, **kwargs), dtype=float).reshape((1,) + out_shape)

    return stacked


def row_reduce(block_fn, out_shape, *arrays, **kwargs):
    """``sum over row chunks c of block_fn(a1[c], a2[c], ...)`` as a numpy array.

    ``arrays`` share their row chunks; each is 1-D or 2-D with a single
    column chunk.  Every chunk yields one partial result of ``out_shape``
    (in the task that also evaluates any lazy elementwise expression the
    arrays carry: Dask fuses blockwise layers), and the partials are added
    by a tree reduction; only the partials leave the workers.
    """
    da = require_dask()
    out_shape = tuple(int(s) for s in out_shape)
    letters = "abcdefgh"[:len(out_shape)]
    args = []
    for a in arrays:
        args += [a, "i" if a.ndim == 1 else "ij"]
    partial = da.blockwise(_stack_block(block_fn, out_shape), "i" + letters, *args,
                           new_axes=dict(zip(letters, out_shape)), adjust_chunks={"i": 1}, concatenate=True,
                           dtype=float, meta=np.empty((0,) * (1 + len(out_shape))), **kwargs)
    return np.asarray(partial.sum(axis=0).compute(), dtype=float)


def _ztz_block(b, z):
    """``[sum(z); b'z]`` of one chunk."""
    out = np.empty(b.shape[1] + 1)
    out[0] = z.sum()
    out[1:] = b.T @ z
    return out


def _gram_block(b, w=None):
    """``[1, b]' W [1, b]`` of one chunk (``W = I`` when ``w`` is None)."""
    b = np.asarray(b, dtype=float)
    k = b.shape[1]
    G = np.empty((k + 1, k + 1))
    if w is None:
        G[0, 0] = b.shape[0]
        G[0, 1:] = b.sum(axis=0)
        G[1:, 1:] = b.T @ b
    else:
        wb = b * w[:, None]
        G[0, 0] = w.sum()
        G[0, 1:] = wb.sum(axis=0)
        G[1:, 1:] = b.T @ wb
    G[1:, 0] = G[0, 1:]
    return G


def _sq_norms_block(b, w):
    """``[sum(w); sum_i w_i b_ij^2]`` of one chunk."""
    return np.concatenate(([w.sum()], (b * b).T @ w))


def _matvec_block(b, theta):
    return b @ theta


class DaskLinearForm(LinearForm):
    """``f = b0 + B theta``, ``||f||^2 = theta' theta``, for a row-chunked Dask array ``B``.

    Every product that yields ``k + 1`` (or ``(k + 1)^2``) numbers is a Dask
    reduction over the row chunks, computed at once; every product that
    yields ``n`` numbers is lazy and chunked like ``B``.  ``B`` must be
    persisted (it is read by every pass) and have one column chunk.

    Parameters
    ----------
    B : dask.array.Array, shape (n, k)
        The basis: the validated ``X`` (linear DWD) or the features ``phi(X)``
        (any float dtype; chunks are upcast to float64 one at a time).

    Examples
    --------
    >>> import numpy as np, dask.array as da
    >>> B = da.from_array(np.arange(6.0).reshape(3, 2), chunks=(2, 2))
    >>> form = DaskLinearForm(B)
    >>> form.ztmul(da.ones(3, chunks=2))
    array([3., 6., 9.])
    """

    def __init__(self, B):
        require_dask()
        if len(B.chunks[1]) != 1:
            raise ValueError("DaskLinearForm needs B with a single column chunk (rechunk({1: -1}))")
        super().__init__(B)

    def apply(self, theta):
        """``B theta``: lazy, chunked like ``B``."""
        return self.B.map_blocks(_matvec_block, np.asarray(theta, dtype=float), drop_axis=1, dtype=float,
                                 meta=np.empty((0,)))

    def apply_t(self, z):
        """``B' z`` (computed)."""
        return self.ztmul(z)[1:]

    def ztmul(self, z):
        """``Z' z = [sum(z); B' z]`` (computed: one reduction over the row chunks)."""
        return row_reduce(_ztz_block, (self.p + 1,), self.B, z)

    def gram(self, weights=None):
        """``Z'WZ`` (computed: one reduction, ``(k+1)^2`` floats per chunk)."""
        if weights is None:
            return row_reduce(_gram_block, (self.p + 1, self.p + 1), self.B)
        return row_reduce(_gram_block, (self.p + 1, self.p + 1), self.B, weights)

    def weighted_sq_norms(self, weights):
        """Diagonal of ``Z'WZ`` (computed)."""
        return row_reduce(_sq_norms_block, (self.p + 1,), self.B, weights)

    def keep_rows(self, v):
        """Store the per-row vector ``v`` on the workers (``persist``): the MM loop
        calls this on each new iterate's decision values, so that the passes
        after it read them instead of recomputing the expression they came from."""
        return v.persist()


# --------------------------------------------------------------------------
# feature maps on a cluster
# --------------------------------------------------------------------------
class DaskRowsView:
    """What a feature design's ``fitted_map`` receives for a Dask ``X``.

    It offers ``shape``, ``ndim``, ``dtype``, ``len()`` and row indexing:
    ``view[rows]`` (an integer array, a slice or a boolean mask) gathers just
    those rows to the client as a numpy array, which is how a map is fitted
    "from what it needs" (landmarks drawn from the rows, say).  Converting
    the whole view to an array (``np.asarray(view)``) gathers every row and
    warns, since that defeats keeping the rows on the cluster.
    """

    def __init__(self, X):
        self._X = X
        self.shape = X.shape
        self.ndim = X.ndim
        self.dtype = X.dtype
        self.size = X.size

    def __len__(self):
        return self.shape[0]

    def __getitem__(self, key):
        rows = key[0] if isinstance(key, tuple) else key
        rest = key[1:] if isinstance(key, tuple) else ()
        if isinstance(rows, slice) or np.isscalar(rows):
            out = self._X[rows].compute()
        else:
            rows = np.asarray(rows)
            if rows.dtype == bool:
                rows = np.flatnonzero(rows)
            # dask slices sorted indices chunk by chunk; restore the asked order afterwards
            order, inverse = np.unique(rows, return_inverse=True)
            out = self._X[order].compute()[inverse.reshape(-1)]
        return out[(slice(None),) + rest] if rest else out

    def __array__(self, dtype=None, copy=None):
        warnings.warn(
            f"a feature map was fitted on all {self.shape[0]} rows of a Dask X gathered to the client; "
            "fit it from a sample of the rows to keep them on the cluster", UserWarning, stacklevel=2)
        out = self._X.compute()
        return out if dtype is None else out.astype(dtype, copy=False)


def map_input(X):
    """What ``fitted_map`` receives: ``X`` itself, or a :class:`DaskRowsView` of a Dask ``X``."""
    return DaskRowsView(X) if is_dask_collection(X) else X


def _transform_block(block, fmap):
    return fmap.transform(block)


def dask_feature_matrix(fmap, X):
    """``Phi = fmap.transform(X)`` formed chunk by chunk on the workers and
    persisted there (chunked like ``X``, its dtype the map's).  The fitted map
    enters the graph once, as one shared value, not once per chunk."""
    import dask

    require_dask()
    probe = np.asarray(fmap.transform(X[:1].compute()))
    if probe.ndim != 2 or probe.shape[0] != 1:
        raise ValueError(f"the feature map's transform returned shape {probe.shape} for one row; expected (1, m)")
    shared_map = dask.delayed(fmap, pure=True)
    Phi = X.map_blocks(_transform_block, shared_map, chunks=(X.chunks[0], (probe.shape[1],)), dtype=probe.dtype,
                       meta=np.empty((0, 0), dtype=probe.dtype))
    return Phi.persist()


# --------------------------------------------------------------------------
# prediction on Dask rows
# --------------------------------------------------------------------------
def _decision_block(block, predictor, alpha):
    return predictor.decision(block, alpha)


def dask_decision(predictor, newx, alpha):
    """``predictor.decision(newx, alpha)`` for a Dask ``newx``: lazy, one task per
    row chunk, shape (m, L) chunked like the rows of ``newx``."""
    import dask

    require_dask()
    alpha = np.asarray(alpha, dtype=float)
    shared = dask.delayed(predictor, pure=True)
    return newx.map_blocks(_decision_block, shared, alpha, chunks=(newx.chunks[0], (alpha.shape[1],)),
                           dtype=float, meta=np.empty((0, 0)))
