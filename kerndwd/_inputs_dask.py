"""The input layer's Dask half: validation of rows, labels and weights held by a cluster.

``kerndwd.fit``, ``kerndwd.predict`` and both estimators' ``fit`` accept a
row-chunked ``dask.array`` or a ``dask.dataframe`` of numeric columns (see
:mod:`kerndwd.engine.chunked` for how the engine keeps the rows on the
cluster).  The input layer (:mod:`kerndwd._inputs`) sends any Dask
collection here; this module imports Dask only when called.

For a fit the rows, the labels and the weights are validated lazily (what
must be computed, the distinct labels or the weights' signs, is computed
from their sources, each in one computation), and placed on the workers once,
at the end (:func:`place`): ``X`` as float64, chunked by rows with one column
chunk, persisted (it is read by every MM pass) and checked for NaN and
infinite values; the labels and the weights as
:class:`~kerndwd.engine.chunked.ChunkedRows`, each chunk stored beside its
chunk of ``X``, all in one computation.  Every error names the argument with
the words of the in-memory checks (:mod:`kerndwd._data`).
"""

from __future__ import annotations

import numpy as np

from ._data import (Data, check_class_levels, check_levels, check_positive_classes, check_weight_values,
                    check_weights, encode_labels, feature_names, is_missing, label_array, label_levels,
                    per_class_weights)
from .engine.chunked import ChunkedRows, is_dask_collection, require_dask

__all__ = ["check_dask_matrix", "place", "dask_binary_data", "dask_classifier_data"]


def _is_dataframe(obj):
    return hasattr(obj, "dtypes") and hasattr(obj, "columns") and hasattr(obj, "to_dask_array")


def _finite_block(block, name):
    if not np.isfinite(block).all():
        raise ValueError(f"{name} contains NaN or infinite values")
    return block


def check_dask_matrix(X, name="X", fit=False):
    """A validated Dask array of float64, shape (n, p), one column chunk.

    Parameters
    ----------
    X : dask.array.Array or dask.dataframe.DataFrame
        Numeric predictors (a DataFrame's columns must all be numeric or bool).
    name : str
        The argument's name, for the errors.
    fit : bool
        True for the rows of a fit: the row count of every chunk must be known
        (a DataFrame is persisted, one read of its partitions, and their
        lengths are counted in memory); the values are checked for NaN and
        infinite values where the rows are placed (:func:`place`).  False
        (``newx`` of a prediction): everything stays lazy, and the finite
        check runs in each chunk's task when it is computed.

    Returns
    -------
    dask.array.Array

    Raises
    ------
    TypeError
        Non-numeric or complex data, naming the DataFrame's offending columns.
    ValueError
        Not 2-D, empty, unknown chunk sizes (a Dask array with NaN in
        ``X.chunks``; a fit needs the row count of every chunk), or NaN or
        infinite values.

    Examples
    --------
    >>> import numpy as np, dask.array as da
    >>> X = da.from_array(np.ones((4, 2), dtype=np.float32), chunks=(2, 1))
    >>> check_dask_matrix(X, fit=True).chunks
    ((2, 2), (2,))
    """
    da = require_dask()
    from_frame = _is_dataframe(X)
    if from_frame:
        bad = [str(c) for c, t in zip(X.columns, X.dtypes) if not _is_numeric_dtype(t)]
        if bad:
            raise TypeError(f"{name} must be numeric; non-numeric columns: {', '.join(bad)}")
        if fit:
            # one read of the partitions; their lengths then come from memory
            X = X.astype(float).persist().to_dask_array()
        else:
            X = X.to_dask_array()
    elif not isinstance(X, da.Array):
        raise TypeError(f"{name} must be a Dask array or DataFrame (or an in-memory array), "
                        f"got {type(X).__module__}.{type(X).__name__}")
    if X.ndim != 2:
        raise ValueError(f"{name} must be a 2-D array (rows are observations), got {X.ndim}-D; "
                         "use X.reshape(-1, 1) for a single feature")
    if X.dtype == bool:
        X = X.astype(float)
    if np.issubdtype(X.dtype, np.complexfloating):
        raise TypeError(f"{name} must be real, got complex values")
    if not np.issubdtype(X.dtype, np.number):
        raise TypeError(f"{name} must be numeric, got a Dask array of dtype {X.dtype}")
    if any(np.isnan(c) for c in X.chunks[1]):
        raise ValueError(f"{name} has unknown column chunk sizes")
    if from_frame and fit:
        X = X.compute_chunk_sizes()
    if fit and any(np.isnan(c) for c in X.chunks[0]):
        raise ValueError(f"{name} has unknown chunk sizes (NaN in {name}.chunks): a fit needs the rows of every "
                         f"chunk; call {name}.compute_chunk_sizes() first, or build it with known lengths "
                         "(e.g. DataFrame.to_dask_array(lengths=True))")
    if not any(np.isnan(c) for c in X.chunks[0]) and (X.shape[0] == 0 or X.shape[1] == 0):
        raise ValueError(f"{name} must have at least one row and one column, got shape {X.shape}")
    if len(X.chunks[1]) > 1:
        X = X.rechunk({1: -1})
    if X.dtype != np.float64:
        X = X.astype(np.float64)
    if fit:
        return X
    return X.map_blocks(_finite_block, name, dtype=np.float64, meta=np.empty((0, 0)))


def place(X, vectors, name="X"):
    """``(X, vectors)`` placed on the workers, once, at the end of a fit's checks:
    ``X`` persisted and checked for NaN and infinite values (one pass over the
    persisted chunks), then each of ``vectors`` (ChunkedRows, or None) stored
    beside the chunk of ``X`` it belongs to, all in one computation, so that no
    pass moves them."""
    da = require_dask()
    X = X.persist()
    if not bool(da.isfinite(X).all().compute()):
        raise ValueError(f"{name} contains NaN or infinite values")
    return X, ChunkedRows.place(vectors, X)


def _is_numeric_dtype(t):
    """A DataFrame column dtype that converts to float: numbers and booleans
    (not strings, categories, dates or objects)."""
    try:
        t = np.dtype(t)
    except TypeError:  # pandas extension dtypes (category, string, nullable ints...)
        return False
    return t == bool or (np.issubdtype(t, np.number) and not np.issubdtype(t, np.complexfloating))


def _as_row_vector(v, name, n, rows):
    """A Dask vector given as a 1-D array, a (n, 1) array or a Series, chunked like ``rows``."""
    da = require_dask()
    if hasattr(v, "to_dask_array"):  # a Dask Series
        if str(v.dtype) == "category":
            raise TypeError(f"{name}: a categorical Dask Series is not accepted; pass its values or codes")
        v = v.to_dask_array()  # lengths: computed below, from the array's own chunks
    if not isinstance(v, da.Array):
        raise TypeError(f"{name} must be a Dask array or Series, or an in-memory array, got {type(v).__name__}")
    if v.ndim == 2 and v.shape[1] == 1:
        v = v[:, 0]
    if v.ndim != 1:
        raise ValueError(f"{name} must be 1-D, got shape {v.shape}")
    if any(np.isnan(c) for c in v.chunks[0]):
        v = v.compute_chunk_sizes()
    if v.shape[0] != n:
        raise ValueError(f"{name} has {v.shape[0]} entries but X has {n} rows")
    return v.rechunk((rows,))


def _on_rows(values, rows):
    """An in-memory vector as a Dask array chunked like ``rows`` (sent to the
    workers when it is placed)."""
    da = require_dask()
    return da.from_array(np.asarray(values), chunks=(rows,))


def dask_levels(y, n, rows, name="y"):
    """``(y, levels)``: the Dask labels as a vector chunked like ``rows`` and their
    sorted distinct values (one computation), with missing and non-finite
    labels refused in the words of the in-memory checks."""
    da = require_dask()
    y = _as_row_vector(y, name, n, rows)
    numeric = np.issubdtype(y.dtype, np.number) or y.dtype == bool
    levels, finite = da.compute(da.unique(y), da.isfinite(y).all() if numeric and y.dtype != bool else True)
    if not finite:
        raise ValueError(f"{name} contains NaN or infinite values")
    if not numeric and any(is_missing(v) for v in levels.tolist()):
        raise ValueError(f"{name} contains missing values (None or NaN)")
    return y, levels


def dask_binary_labels(y, n, rows, name="y"):
    """``(y_pm, classes)`` of Dask labels: the two sorted labels, mapped to -1 and +1."""
    da = require_dask()
    y, levels = dask_levels(y, n, rows, name)
    check_levels(levels, name)
    return ChunkedRows.from_dask(da.where(y == levels[1], 1.0, -1.0)), levels


def _class_index_block(block, classes):
    return np.searchsorted(classes, block)


def dask_class_index(y, classes):
    """The index in ``classes`` of every label of the Dask vector ``y`` (lazy)."""
    return y.map_blocks(_class_index_block, classes, dtype=np.intp)


def dask_class_counts(y_idx, n_classes, weights=None):
    """``(counts, positive)``: the weighted count of each class and the number of its
    rows of positive weight (all rows when unweighted), in one computation."""
    da = require_dask()
    w = None if weights is None else weights.to_dask()
    counts = da.bincount(y_idx, weights=w, minlength=n_classes)
    positive = counts if w is None else da.bincount(y_idx, weights=(w > 0).astype(float), minlength=n_classes)
    return tuple(np.asarray(v, dtype=float) for v in da.compute(counts, positive))


def dask_weights(wt, n, rows, name="wt"):
    """Non-negative finite weights as :class:`ChunkedRows`, checked in one computation."""
    da = require_dask()
    w = _as_row_vector(wt, name, n, rows).astype(float)
    finite, negative, positive = da.compute(da.isfinite(w).all(), (w < 0).sum(), (w > 0).any())
    check_weight_values(finite, negative, positive, name)
    return ChunkedRows.from_dask(w)


def _take_block(block, values):
    return values[block]


def dask_map_rows(y_idx, values):
    """``values[y_idx]`` for a Dask vector of indices (lazy, :class:`ChunkedRows`)."""
    return ChunkedRows.from_dask(y_idx.map_blocks(_take_block, values, dtype=float))


def _row_weights(values, n, rows, name):
    """Weights given as a Dask collection (checked in one computation) or in memory
    (checked), as :class:`ChunkedRows` chunked like ``rows``."""
    if is_dask_collection(values):
        return dask_weights(values, n, rows, name)
    return ChunkedRows.from_dask(_on_rows(check_weights(values, n, name), rows))


def dask_binary_data(X, y, wt, names):
    """:class:`~kerndwd._data.Data` of ``fit`` for a Dask ``X``: the labels as -1/+1
    and the weights, checked, then placed with the rows (:func:`place`)."""
    X = check_dask_matrix(X, names["X"], fit=True)
    n, rows = X.shape[0], X.chunks[0]
    if is_dask_collection(y):
        y_pm, classes = dask_binary_labels(y, n, rows, names["y"])
    else:
        y_np, classes = encode_labels(y, n, names["y"])
        y_pm = ChunkedRows.from_dask(_on_rows(y_np, rows))
    w = None if wt is None else _row_weights(wt, n, rows, names["wt"])
    X, (y_pm, w) = place(X, (y_pm, w), names["X"])
    return Data(X, classes, (y_pm,), w, w)


def dask_classifier_data(X, y, sample_weight, class_weight):
    """:class:`~kerndwd._data.Data` of the estimators for a Dask ``X`` (see
    :func:`kerndwd._inputs.check_classifier_data`); rows of zero weight are kept,
    the weights ``s n / sum(s)`` over all ``n`` rows.  Labels and weights are
    checked first, then placed with the rows, once (:func:`place`)."""
    da = require_dask()
    rows_of_X = check_dask_matrix(X, "X", fit=True)
    n, rows = rows_of_X.shape[0], rows_of_X.chunks[0]
    if n < 2:
        raise ValueError(f"X needs at least 2 samples (one sample cannot hold two classes), got n_samples = {n}")
    if is_dask_collection(y):
        y_rows, levels = dask_levels(y, n, rows, "y")
        classes = check_class_levels(levels, "y")
        y_idx = dask_class_index(y_rows, classes)
    else:
        arr, _ = label_array(y, n, "y")
        classes = check_class_levels(label_levels(arr, None, "y"), "y")
        y_idx = _on_rows(np.searchsorted(classes, arr), rows)
    sw = None if sample_weight is None else _row_weights(sample_weight, n, rows, "sample_weight")
    s = sw
    if class_weight is not None:
        counts, _ = dask_class_counts(y_idx, classes.size, sw)
        by_row = dask_map_rows(y_idx, per_class_weights(class_weight, classes, counts))
        s = by_row if sw is None else sw * by_row
    weights = None
    if s is not None:
        _, positive = dask_class_counts(y_idx, classes.size, s)
        check_positive_classes(positive, classes)
        weights = s * (n / s.sum())
    targets = tuple(ChunkedRows.from_dask(da.where(y_idx == k, 1.0, -1.0))
                    for k in ((1,) if classes.size == 2 else range(classes.size)))
    placed_X, placed = place(rows_of_X, targets + (weights, sw))
    return Data(placed_X, classes, placed[:-2], placed[-2], placed[-1], feature_names=feature_names(X))
