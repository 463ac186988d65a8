"""Per-row vectors on a Dask cluster: :class:`ChunkedRows`, the algebra that lets the
path solvers' numpy code run where the rows are.

When a problem's ``X`` is a ``dask.array`` (validated by the input layer:
float64, row-chunked with one column chunk, known chunk sizes, persisted on
the cluster), every vector with ``n`` entries stays where the chunks are:
the labels ``y``, the weights, the decision values ``f`` and
``z_i = w_i y_i V_q'(y_i f_i)``.  The MM iteration writes its per-row work
in numpy (``f + beta * (f - f_prev)``, ``wy * loss.deriv(y * f)``,
``np.mean(loss.value(...))``); on :class:`ChunkedRows` those operations only
record an expression over persisted chunks.  The expression is evaluated
chunk by chunk, inside the one task per chunk that needs it: the partial
sums of ``Z'z`` (:class:`kerndwd.engine.designs.dask.DaskLinearForm`), of the
objective, or the stored values of a new iterate.  :meth:`ChunkedRows.keep`
marks a new iterate's ``f`` to be stored by the next reduction that reads
it, inside that reduction's task per chunk, so that no expression outlives
its pass.  The Dask forms, feature matrices and prediction are in
:mod:`kerndwd.engine.designs.dask`.

Nothing here starts a scheduler: computations run on whatever
``distributed.Client`` is current, or on Dask's default scheduler.  Dask is
imported only when a Dask collection is seen; kerndwd imports and runs
without it.
"""

from __future__ import annotations

import numbers
from functools import partialmethod

import numpy as np

from .chunk_tasks import (REDUCE_FAN_IN, SLICE_ROWS, Stored, is_dask_collection, persist_beside, reduce_rows,
                          require_dask, row_chunks, rows_array, sum_and_count_block)

__all__ = ["is_dask_collection", "require_dask", "ChunkedRows", "reduce_rows", "row_expression", "REDUCE_FAN_IN",
           "SLICE_ROWS"]

def row_expression(value, leaves, n):
    """``(expr, leaves, columns)`` of an operand of rows of length ``n``: rows, a Dask
    vector, a scalar, or a small numpy array that broadcasts along the columns.
    ``columns`` is None for a vector of rows, the number of columns of a matrix
    of rows or of a broadcast row, and ``"scalar"`` for a scalar."""
    if isinstance(value, ChunkedRows):
        return value._expr, {**leaves, **value._leaves}, value._ncols
    if is_dask_collection(value) and getattr(value, "ndim", None) in (1, 2):
        return ("leaf", value.name), {**leaves, value.name: value}, None if value.ndim == 1 else value.shape[1]
    if isinstance(value, (numbers.Number, np.number, np.bool_)):
        return ("const", value), leaves, "scalar"
    if isinstance(value, np.ndarray):
        if value.ndim == 0:
            return ("const", value[()]), leaves, "scalar"
        if value.ndim == 2 and value.shape[0] == 1:  # b[None, :]: one value per column
            return ("const", value), leaves, value.shape[1]
        if value.ndim == 1 and value.size != n:  # broadcasts along the columns
            return ("const", value), leaves, value.size
        if value.ndim == 1 and value.size and (value == value[0]).all():  # np.ones(n), say: a constant
            return ("const", value[0]), leaves, "scalar"
    raise TypeError(f"ChunkedRows combine with scalars, Dask vectors chunked like them and other ChunkedRows; "
                    f"got {type(value).__name__}" + (f" of shape {value.shape}" if hasattr(value, "shape") else ""))


def _dot_block(a, b):
    return np.asarray(a) @ np.asarray(b)


def _binary(self, ufunc, reflected, other):
    """``self <op> other`` (``other <op> self`` when ``reflected``) by ``ufunc``,
    which :meth:`ChunkedRows.__array_ufunc__` takes: the operators of
    :class:`ChunkedRows` are this function with ``ufunc`` and ``reflected``
    bound (``functools.partialmethod``), so no code of theirs runs at import."""
    return ufunc(other, self) if reflected else ufunc(self, other)


class ChunkedRows:
    """A vector (or a matrix of a few columns) of ``n`` rows held on the workers,
    chunked like ``X``.

    Arithmetic and numpy ufuncs on it (``+``, ``*``, ``np.maximum``, ``np.power``,
    ``np.where``, ``out=`` included) record an expression over its leaves
    (persisted Dask arrays) without computing anything; reductions
    (``np.mean``, ``.sum(axis=0)``, ``w @ rows``, and :class:`DaskLinearForm`
    products) evaluate the expression chunk by chunk, inside the task that
    reduces the chunk, and return numbers; :meth:`persist` stores its values on
    the workers, one task per chunk.  A boolean selection ``rows[rows > 0]``
    takes ufuncs and reductions, evaluated on the selected rows alone; a
    vector becomes a column with ``v[:, None]``, and a matrix of rows (one
    column per lambda, say) takes ``m[:, columns]``.  This is how the MM
    loop's numpy code runs on a cluster unchanged.

    Parameters
    ----------
    expr : tuple
        The expression (``("leaf", name)``, ``("const", value)``,
        ``("ufunc", ufunc, *args)``, ``("where", c, a, b)``,
        ``("matvec", basis_name, theta)``, ...).
    leaves : dict
        Dask arrays by name, all chunked like ``chunks`` along their rows.
    chunks : tuple of int
        Rows per chunk.
    mask : tuple, optional
        An expression of booleans: the rows a selection keeps.
    ncols : int, optional
        The number of columns of a matrix of rows (None: a vector).

    Examples
    --------
    >>> import numpy as np, dask.array as da
    >>> y = ChunkedRows.from_dask(da.from_array(np.array([1.0, -1.0, 1.0]), chunks=2))
    >>> u = np.maximum(y * 2.0, 0.5)       # nothing is computed yet
    >>> float(np.mean(u)), u.sum()
    (1.5, 4.5)
    >>> (y[:, None] * np.array([[1.0, 10.0]])).mean(axis=0)
    array([0.33333333, 3.33333333])
    """

    __array_priority__ = 1000  # numpy scalars and arrays defer to these operators

    def __init__(self, expr, leaves, chunks, mask=None, ncols=None):
        self._expr = expr
        self._leaves = dict(leaves)
        self.chunks = tuple(int(c) for c in chunks)
        self._mask = mask  # an expression of booleans: the rows selected (None: all)
        self._ncols = ncols

    dtype = np.dtype(np.float64)

    @property
    def shape(self):
        n = sum(self.chunks)
        return (n,) if self._ncols is None else (n, self._ncols)

    @property
    def ndim(self):
        return 1 if self._ncols is None else 2

    @classmethod
    def from_dask(cls, array):
        """The rows of a Dask vector, or of a matrix with one column chunk, with
        known chunk sizes (not copied)."""
        if array.ndim not in (1, 2) or (array.ndim == 2 and len(array.chunks[1]) != 1):
            raise ValueError(f"ChunkedRows hold 1-D Dask arrays or 2-D ones with one column chunk, "
                             f"got chunks {array.chunks}")
        return cls(("leaf", array.name), {array.name: array}, array.chunks[0],
                   ncols=None if array.ndim == 1 else array.shape[1])

    def __len__(self):
        return self.shape[0] if self._mask is None else int(self._sum_and_count()[1])

    def __repr__(self):
        return f"ChunkedRows(shape={self.shape}, chunks={len(self.chunks)}, leaves={len(self._leaves)})"

    # --- building expressions
    def _combine(self, node, *operands):
        leaves, exprs, columns = dict(self._leaves), [], []
        for value in operands:
            expr, leaves, ncols = row_expression(value, leaves, self.shape[0])
            exprs.append(expr)
            columns.append(ncols)
        for leaf in leaves.values():
            if row_chunks(leaf) != self.chunks:
                raise ValueError(f"ChunkedRows with row chunks {self.chunks} met a Dask array chunked "
                                 f"{row_chunks(leaf)}")
        masks = [v._mask for v in operands if isinstance(v, ChunkedRows)]
        if any(m is not masks[0] for m in masks):
            raise ValueError("ChunkedRows: the operands select different rows")
        widths = [c for c in columns if c not in (None, "scalar")]
        ncols = None
        if widths:
            if None in columns:
                raise ValueError("ChunkedRows: a vector of rows meets a matrix of rows; make the vector a "
                                 "column with v[:, None]")
            ncols = max(widths)
            if any(w not in (1, ncols) for w in widths):
                raise ValueError(f"ChunkedRows: columns {sorted(set(widths))} do not broadcast")
        return ChunkedRows(node + tuple(exprs), leaves, self.chunks, masks[0] if masks else None, ncols)

    def __getitem__(self, key):
        """``rows[mask]`` for boolean rows ``mask`` (a selection, which takes ufuncs and
        reductions but has no known length per chunk); ``v[:, None]`` (a vector
        as a column); ``m[:, columns]`` (columns of a matrix of rows)."""
        if isinstance(key, ChunkedRows) and key._mask is None and self._mask is None and self._ncols is None:
            selected = self._combine(("where",), key, self, 0.0)  # checks the chunks, merges the leaves
            return ChunkedRows(self._expr, selected._leaves, self.chunks, mask=key._expr)
        if isinstance(key, tuple) and len(key) == 2 and key[0] == slice(None) and self._mask is None:
            if key[1] is None and self._ncols is None:
                return ChunkedRows(("expand", self._expr), self._leaves, self.chunks, ncols=1)
            if self._ncols is not None and key[1] is not None:
                columns = np.arange(self._ncols)[key[1]]
                return ChunkedRows(("columns", self._expr, columns), self._leaves, self.chunks,
                                   ncols=None if columns.ndim == 0 else columns.size)
        raise TypeError("ChunkedRows take a boolean ChunkedRows mask, [:, None] or [:, columns] as an index")

    def reshape(self, *shape):
        """``(n, -1)``: a vector as a one-column matrix (a matrix is returned as it is)."""
        shape = shape[0] if len(shape) == 1 and isinstance(shape[0], tuple) else shape
        if len(shape) == 2 and shape[0] in (self.shape[0], -1) and self._mask is None:
            if self._ncols is not None and shape[1] in (-1, self._ncols):
                return self
            if self._ncols is None and shape[1] in (-1, 1):
                return ChunkedRows(("reshape", self._expr), self._leaves, self.chunks, ncols=1)
        raise ValueError(f"ChunkedRows of shape {self.shape} cannot take shape {shape}")

    def __array_ufunc__(self, ufunc, method, *inputs, out=None, **kwargs):
        if method != "__call__" or ufunc.nout != 1 or set(kwargs) - {"dtype"}:
            return NotImplemented
        if ufunc is np.matmul:
            return self._matmul(*inputs)
        result = self._combine(("ufunc", ufunc), *inputs)
        if out is not None:  # numpy's out=: the output object takes the new expression
            (target,) = out
            if not isinstance(target, ChunkedRows):
                return NotImplemented
            target._expr, target._leaves = result._expr, result._leaves
            target._mask, target._ncols = result._mask, result._ncols
            return target
        return result

    def _matmul(self, left, right):
        """``w @ m``: the sum over the rows of ``w`` (a vector) times ``m`` (computed)."""
        if not isinstance(right, ChunkedRows) or any(getattr(v, "_mask", None) is not None for v in (left, right)):
            return NotImplemented
        expr_left, leaves, columns = row_expression(left, dict(self._leaves), self.shape[0])
        if columns not in (None, "scalar"):
            return NotImplemented
        expr_right, leaves, _ = row_expression(right, leaves, self.shape[0])
        for leaf in leaves.values():
            if row_chunks(leaf) != self.chunks:
                raise ValueError(f"ChunkedRows with row chunks {self.chunks} met a Dask array chunked "
                                 f"{row_chunks(leaf)}")
        return reduce_rows(_dot_block, (expr_left, expr_right), leaves, self.chunks, prefix="dot")

    def __array_function__(self, func, types, args, kwargs):
        if func in (np.zeros_like, np.empty_like, np.ones_like):
            return ChunkedRows(("const", 1.0 if func is np.ones_like else 0.0), {}, self.chunks)
        if func is np.where and len(args) == 3 and not kwargs:
            return self._combine(("where",), *args)
        if func in (np.sum, np.mean) and len(args) == 1 and set(kwargs) <= {"axis"}:
            return args[0].sum(**kwargs) if func is np.sum else args[0].mean(**kwargs)
        if func is np.copy:
            return args[0].copy()
        return NotImplemented

    __add__, __radd__ = partialmethod(_binary, np.add, False), partialmethod(_binary, np.add, True)
    __sub__, __rsub__ = partialmethod(_binary, np.subtract, False), partialmethod(_binary, np.subtract, True)
    __mul__, __rmul__ = partialmethod(_binary, np.multiply, False), partialmethod(_binary, np.multiply, True)
    __truediv__ = partialmethod(_binary, np.true_divide, False)
    __rtruediv__ = partialmethod(_binary, np.true_divide, True)
    __pow__, __rpow__ = partialmethod(_binary, np.power, False), partialmethod(_binary, np.power, True)
    __lt__, __le__ = partialmethod(_binary, np.less, False), partialmethod(_binary, np.less_equal, False)
    __gt__, __ge__ = partialmethod(_binary, np.greater, False), partialmethod(_binary, np.greater_equal, False)
    __matmul__, __rmatmul__ = partialmethod(_binary, np.matmul, False), partialmethod(_binary, np.matmul, True)

    def __neg__(self):
        return np.negative(self)

    def copy(self):
        """The same rows (a new object: ``out=`` on one leaves the other alone)."""
        return ChunkedRows(self._expr, self._leaves, self.chunks, self._mask, self._ncols)

    # --- evaluating
    def to_dask(self, near=None):
        """The rows as a lazy Dask array: one task per chunk evaluates the expression.
        With ``near`` (a Dask array chunked like the rows, ``X`` say), each task
        also depends on ``near``'s chunk, so the scheduler runs it, and keeps its
        result, on the worker that holds that chunk."""
        require_dask()
        if self._mask is not None:
            raise TypeError("a selection of ChunkedRows has no known length per chunk: reduce it (sum, mean)")
        leaf = self._leaves.get(self._expr[1]) if self._expr[0] == "leaf" else None
        if leaf is not None and not isinstance(leaf, Stored) and near is None:
            return leaf
        return rows_array(self._expr, self._leaves, self.chunks, self._ncols, near)

    def persist(self, near=None):
        """The rows stored on the workers now (one task per chunk), as a leaf;
        ``near``: see :meth:`to_dask`."""
        return ChunkedRows.place((self,), near)[0]

    @staticmethod
    def place(vectors, near=None):
        """Each of ``vectors`` (ChunkedRows, or None) stored on the workers now, in one
        computation: with ``near`` (see :meth:`to_dask`), each chunk beside the
        chunk of ``near`` it belongs to."""
        stored = persist_beside(near, [None if v is None else v.to_dask() for v in vectors])
        return tuple(None if a is None else ChunkedRows.from_dask(a) for a in stored)

    def keep(self):
        """The rows, to be stored on the workers by the first reduction that reads
        them, inside its own tasks (no task, no round trip of their own)."""
        if self._expr[0] == "leaf" and self._mask is None:
            return self
        if self._mask is not None:
            raise TypeError("a selection of ChunkedRows has no known length per chunk: reduce it (sum, mean)")
        holder = Stored(self._expr, self._leaves, self.chunks)
        return ChunkedRows(("leaf", holder.name), {holder.name: holder}, self.chunks, ncols=self._ncols)

    def sum(self, axis=None):
        """The sum of the rows: a number, or one per column with ``axis=0``
        (computed: one task per chunk and a tree sum)."""
        sums, count = self._sum_and_count()
        return float(sums[0]) if self._ncols is None else (sums if axis == 0 else float(sums.sum()))

    def mean(self, axis=None):
        """The mean of the rows: a number, or one per column with ``axis=0`` (computed)."""
        sums, count = self._sum_and_count()
        if self._ncols is None:
            return float(sums[0] / count)
        return sums / count if axis == 0 else float(sums.sum() / (count * self._ncols))

    def _sum_and_count(self):
        """The sums of the (selected) rows, one per column, and how many rows, in one
        reduction; a selection's expression is evaluated on the selected rows
        alone, as numpy evaluates ``f(x[mask])``."""
        if self._mask is None:
            out = reduce_rows(sum_and_count_block, (self._expr, ("const", True)), self._leaves, self.chunks,
                          prefix="sum")
        elif self._expr[0] == "const":  # a constant over the selection
            count = reduce_rows(sum_and_count_block, (("const", 0.0), self._mask), self._leaves, self.chunks,
                            prefix="sum")[-1]
            out = np.array([self._expr[1] * count, count])
        else:
            out = reduce_rows(sum_and_count_block, (("select", self._mask, self._expr), self._mask), self._leaves,
                          self.chunks, prefix="sum")
        return out[:-1], out[-1]

    def compute(self):
        """The rows gathered to the client as a numpy array."""
        return np.asarray(self.to_dask().compute(optimize_graph=False), dtype=float)

    def __array__(self, dtype=None, copy=None):
        out = self.compute()
        return out if dtype is None else out.astype(dtype, copy=False)

    def __reduce__(self):
        # a pickle holds the values, not a reference to the cluster
        return (np.asarray, (self.compute(),))
