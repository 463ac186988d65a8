"""Reading the data of a fit once: rows, labels and weights, in memory or on a Dask cluster.

Rows in memory (dense, sparse or pandas) become a finite float64 array or
a CSR matrix (:func:`float_matrix`); a Dask array or DataFrame stays lazy,
row-chunked with one column chunk (:func:`check_dask_matrix`).  The data
of ``kerndwd.fit``, ``cv`` and ``tune`` (:func:`binary_data`,
:func:`dask_binary_data`) and of the estimators (:func:`classifier_data`,
:func:`dask_classifier_data`) are read here, the labels and weights with
the same functions for both storages and the rules of
:mod:`kerndwd._inputs.data`, so that the same bad rows, labels or weights
get the same message from every face and every storage.

On a cluster the labels and the weights are validated lazily (what must be
computed, the distinct labels or the weights' signs, is computed from their
sources, each in one computation) as Dask vectors chunked like ``X``, and
everything is placed on the workers once, at the end (:func:`place`):
``X`` persisted and checked for NaN and infinite values, the vectors as
:class:`~kerndwd.engine.chunked.ChunkedRows`, each chunk stored beside its
chunk of ``X``, all in one computation.  Dask is imported only when a Dask
collection is seen.  Nothing here modifies its input: arrays are converted
(and copied where a conversion is needed), never written to.
"""

from __future__ import annotations

import numbers
import warnings

import numpy as np
from scipy import sparse

from ..engine.chunk_tasks import persist_beside
from ..engine.chunked import ChunkedRows, is_dask_collection, require_dask
from .data import (Data, check_class_levels, check_levels, check_positive_classes, check_weight_values, is_missing,
                   label_levels, per_class_weights, targets_of)

__all__ = ["MAX_ABS_X", "is_pandas", "numeric_dtype", "as_float_array", "label_array", "encode_labels",
           "check_weights", "feature_names", "float_matrix", "binary_data", "classifier_data", "check_dask_matrix",
           "place", "dask_binary_data", "dask_classifier_data", "check_classifier_data"]

#: Largest magnitude accepted in X: inner products of rows (p terms of up to
#: MAX_ABS_X^2) must stay far below the largest double (1.8e308).
MAX_ABS_X = 1e150

def is_pandas(obj):
    return type(obj).__module__.split(".")[0] == "pandas"


def numeric_dtype(dtype):
    import pandas as pd

    return pd.api.types.is_numeric_dtype(dtype) or pd.api.types.is_bool_dtype(dtype)


def as_float_array(values, name, what="numbers"):
    """``values`` as a float ndarray, refusing anything that is not numeric.

    Numbers, booleans, numeric object arrays and pandas' nullable numeric
    types (``Int64``, ``Float64``; ``pd.NA`` becomes NaN for the caller's
    finiteness check) are accepted; strings, numeric strings included, are
    a ``TypeError``: a column of text is never silently parsed.  Complex
    values are a ``ValueError`` ("Complex data not supported").
    """
    if is_pandas(values) and hasattr(values, "to_numpy"):
        dtype = getattr(values, "dtype", None)
        if dtype is not None and not numeric_dtype(dtype):
            raise TypeError(f"{name} must be {what}, got pandas dtype {dtype}")
        values = values.to_numpy(dtype=float, na_value=np.nan)
    try:
        arr = np.asarray(values)
    except Exception as exc:  # ragged lists and the like
        raise TypeError(f"{name} must be an array of {what}: {exc}") from None
    if arr.dtype.kind in "biuf":
        return arr.astype(float, copy=False)
    if arr.dtype.kind == "c":
        raise ValueError(f"{name}: Complex data not supported; {name} must be real")
    if arr.dtype.kind == "O" and all(isinstance(v, numbers.Real) for v in arr.flat):
        return arr.astype(float)
    if arr.dtype.kind in "USO":
        raise TypeError(f"{name} must be {what}, got strings: each argument must be a number, not a string "
                        "standing for a number")
    raise TypeError(f"{name} must be {what}, got dtype {arr.dtype}")


def label_array(y, n, name, column_warning=None, stacklevel=2):
    """``(values, categories)``: the labels as a 1-D array with missing labels
    refused first (None, NaN, ``pd.NA``), and a Categorical's category order.
    A column vector is taken as a vector (with a warning of class
    ``column_warning`` when given, ``stacklevel`` as :func:`warnings.warn`
    takes it)."""
    if y is None:
        raise ValueError(f"{name}: the fit requires y to be passed, but the target y is None")
    categories = None
    if hasattr(y, "cat") and hasattr(y, "dtype") and str(y.dtype) == "category":
        categories = list(y.cat.categories)
        y = np.asarray(y.astype(object))
    elif hasattr(y, "to_numpy"):
        y = y.to_numpy()
    if isinstance(y, (list, tuple)):
        y = np.array(y, dtype=object)
    arr = np.asarray(y)
    if arr.ndim == 2 and arr.shape[1] == 1:
        arr = arr[:, 0]
        if column_warning is not None:
            warnings.warn(f"A column-vector {name} was passed when a 1d array was expected; its one column is used "
                          f"({name}.ravel() avoids this warning)", column_warning, stacklevel=stacklevel)
    if arr.ndim != 1:
        raise ValueError(f"{name} must be 1-D, got shape {arr.shape}")
    if n is not None and arr.shape[0] != n:
        raise ValueError(f"{name} has {arr.shape[0]} entries but X has {n} rows")
    if arr.dtype == object:
        if any(is_missing(v) for v in arr):
            raise ValueError(f"{name} contains missing values (None or NaN)")
        text = [isinstance(v, (str, bytes)) for v in arr]
        if any(text) and not all(text):
            kinds = sorted({type(v).__name__ for v in arr})
            raise TypeError(f"{name} mixes labels of different types ({', '.join(kinds)}); use labels of one type")
        if not any(text):
            if not all(isinstance(v, (numbers.Number, np.bool_)) for v in arr):
                kinds = sorted({type(v).__name__ for v in arr})
                raise TypeError(f"{name} must hold numbers or strings, got {', '.join(kinds)}")
            arr = np.array(arr.tolist())  # numbers (bools included) get a numeric dtype
    if issubclass(arr.dtype.type, np.number) and not np.isfinite(arr.astype(float, copy=False)).all():
        raise ValueError(f"{name} contains NaN or infinite values")
    return arr, categories


def encode_labels(y, n=None, name="y"):
    """Map two labels to -1/+1 in sorted order, as R orders factor levels.

    Returns ``(y_pm, classes)`` where ``classes[0]`` maps to -1 and
    ``classes[1]`` to +1.  A pandas Categorical keeps its category order.
    """
    arr, categories = label_array(y, n, name)
    levels = check_levels(label_levels(arr, categories, name), name)
    return np.where(arr == levels[1], 1.0, -1.0), levels


def check_weights(wt, n, name="wt", y=None, classes=None):
    """Non-negative finite weights, one per row; with labels ``y`` (+-1) every
    class must keep a positive total weight."""
    if wt is None:
        return None
    arr = as_float_array(wt, name, "a sequence of non-negative numbers")
    if arr.ndim != 1 or arr.shape[0] != n:
        raise ValueError(f"{name} must have one entry per row of X ({n}), got shape {arr.shape}")
    check_weight_values(bool(np.isfinite(arr).all()), int((arr < 0).sum()), bool((arr > 0).any()), name)
    if y is not None:
        for label, sign in zip(classes, (-1.0, 1.0)):
            if not (arr[y == sign] > 0).any():
                label = label.item() if hasattr(label, "item") else label
                raise ValueError(f"{name} gives class {label!r} no positive weight: DWD needs both classes")
    return arr.copy()


# --------------------------------------------------------------------------
# rows in memory, and the data of a fit in memory
# --------------------------------------------------------------------------
#: A sum of squares up to this bounds every entry by MAX_ABS_X / 2 (rounding included).
_SAFE_SQUARES = 0.25 * MAX_ABS_X ** 2


def _check_finite_and_scale(values, name):
    # one product usually settles it: a sum of squares that is finite and at most _SAFE_SQUARES
    # (NaN is neither) has every entry finite and within MAX_ABS_X
    flat = np.ravel(values)
    with np.errstate(over="ignore", invalid="ignore"):
        if flat @ flat <= _SAFE_SQUARES:
            return
    if values.size:  # the extremes propagate NaN: two reductions, no temporary array
        _check_extremes(float(values.max()), float(values.min()), name)


def _check_extremes(largest, smallest, name):
    """Refuse rows whose largest and smallest entries (NaN when any is) are not
    finite, or of a magnitude above :data:`MAX_ABS_X`: the same words for rows
    in memory and on a cluster."""
    largest = max(largest, -smallest)
    if not np.isfinite(largest):
        raise ValueError(f"{name} contains NaN or infinite values")
    if largest > MAX_ABS_X:
        raise ValueError(f"{name} has entries of magnitude up to {largest:.3g}: products of rows overflow double "
                         f"precision above about {MAX_ABS_X:g}; rescale {name} (e.g. standardise its columns)")


def _check_not_empty(shape, name):
    if shape[0] == 0 or shape[1] == 0:
        raise ValueError(f"{name} must have at least one row and one column: found {shape[0]} sample(s) and "
                         f"{shape[1]} feature(s) (shape={shape}) while a minimum of 1 is required.")


def feature_names(X):
    """The column names of a DataFrame whose names are all strings, else None."""
    columns = getattr(X, "columns", None) if hasattr(X, "dtypes") else None
    if columns is None or not all(isinstance(c, str) for c in columns):
        return None
    return np.asarray(list(columns), dtype=object)


def float_matrix(X, name="X"):
    """Rows in memory, validated: a finite 2-D float64 array (C order) from an array,
    a list or a pandas DataFrame; a CSR matrix of floats from a scipy sparse
    matrix."""
    if sparse.issparse(X):
        if np.issubdtype(X.dtype, np.complexfloating):
            raise ValueError(f"{name}: Complex data not supported; {name} must be real")
        X = sparse.csr_matrix(X, dtype=float, copy=True)
        _check_not_empty(X.shape, name)
        _check_finite_and_scale(X.data, name)
        return X
    if is_pandas(X) and hasattr(X, "dtypes") and hasattr(X, "columns"):  # DataFrame
        bad = [str(c) for c, t in zip(X.columns, X.dtypes) if not numeric_dtype(t)]
        if bad:
            raise TypeError(f"{name} must be numeric; non-numeric columns: {', '.join(bad)}")
        X = X.to_numpy(dtype=float, na_value=np.nan)
    arr = as_float_array(X, name, "numeric")
    if arr.ndim != 2:
        raise ValueError(
            f"{name} must be a 2-D array (rows are observations), got {arr.ndim}-D; Reshape your data: "
            f"{name}.reshape(-1, 1) for a single feature, {name}.reshape(1, -1) for a single row"
        )
    _check_not_empty(arr.shape, name)
    # C order: the same numbers whatever the input's layout (BLAS sums in memory order)
    arr = np.ascontiguousarray(arr, dtype=float)
    _check_finite_and_scale(arr, name)
    return arr


def binary_data(X, y, wt, names):
    """:class:`Data` of ``fit``, ``cv`` and ``tune`` for rows in memory (see
    :func:`kerndwd._inputs.check_data`)."""
    X = float_matrix(X, names["X"])
    y_pm, classes = encode_labels(y, X.shape[0], names["y"])
    w = check_weights(wt, X.shape[0], names["wt"], y=y_pm, classes=classes)
    return Data(X, classes, (y_pm,), w, w)


def classifier_data(X, y, sample_weight, class_weight, column_warning, stacklevel):
    """:class:`Data` of the estimators for rows in memory (see
    :func:`kerndwd._inputs.check_classifier_data`): rows of zero weight are
    dropped, the weights ``s n / sum(s)`` over the ``n`` rows kept.  A column
    vector ``y`` is taken with a warning of class ``column_warning``, which
    names the frame ``stacklevel`` counts from here."""
    names = feature_names(X)
    X = float_matrix(X, "X")
    n = X.shape[0]
    if n < 2:
        raise ValueError(f"X needs at least 2 samples (one sample cannot hold two classes), got n_samples = {n}")
    arr, categories = label_array(y, n, "y", column_warning=column_warning, stacklevel=stacklevel + 1)
    classes = check_class_levels(label_levels(arr, categories, "y"), "y")
    y_idx = np.searchsorted(classes, arr) if categories is None else np.array(
        [categories.index(v) for v in arr.tolist()])
    sw = None if sample_weight is None else check_weights(sample_weight, n, "sample_weight")
    s = sw
    if class_weight is not None:
        counts = np.bincount(y_idx, weights=sw, minlength=classes.size)
        per_class = per_class_weights(class_weight, classes, counts)
        with np.errstate(over="ignore"):
            s = per_class[y_idx] if sw is None else sw * per_class[y_idx]
        if not np.isfinite(s).all():
            raise ValueError("sample_weight times class_weight overflows double precision (a product above "
                             "1.8e308); rescale sample_weight or class_weight (only their ratios matter)")
    if s is None:
        return Data(X, classes, targets_of(y_idx, classes.size), feature_names=names)
    check_positive_classes(np.bincount(y_idx, weights=(s > 0).astype(float), minlength=classes.size), classes)
    keep = s > 0
    kept = None
    if not keep.all():
        X, y_idx, s, kept = X[keep], y_idx[keep], s[keep], keep
        sw = None if sw is None else sw[keep]
    s = s / s.max()  # first to order 1: the sum below cannot overflow, whatever the scale
    return Data(X, classes, targets_of(y_idx, classes.size), s * (s.size / s.sum()), sw, kept, names)


def _is_dataframe(obj):
    return hasattr(obj, "dtypes") and hasattr(obj, "columns") and hasattr(obj, "to_dask_array")


def _checked_block(block, name):
    _check_finite_and_scale(block, name)
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
        lengths are counted in memory); the values are checked as rows in
        memory are where the rows are placed (:func:`place`).  False
        (``newx`` of a prediction): everything stays lazy, and the checks of
        rows in memory run in each chunk's task when it is computed.

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
            from dask import persist

            (frame,) = persist(X.astype(float))
            X = frame.to_dask_array()
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
    return X.map_blocks(_checked_block, name, dtype=np.float64, meta=np.empty((0, 0)))


def place(X, vectors, name="X"):
    """``(X, vectors)`` placed on the workers, once, at the end of a fit's checks:
    ``X`` persisted and checked as rows in memory are, for NaN, infinite values
    and entries beyond :data:`MAX_ABS_X` (one pass over the persisted chunks), then each of ``vectors`` (Dask vectors chunked like
    ``X``, or None) stored beside the chunk of ``X`` it belongs to
    (:func:`kerndwd.engine.chunk_tasks.persist_beside`), all in one
    computation, so that no pass moves them, and returned as
    :class:`~kerndwd.engine.chunked.ChunkedRows`."""
    import dask
    from dask import persist

    (X,) = persist(X)
    _check_extremes(*(float(v) for v in dask.compute(X.max(), X.min())), name)  # one pass over the chunks
    stored = persist_beside(X, vectors)
    return X, tuple(None if v is None else ChunkedRows.from_dask(v) for v in stored)


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
    return da.where(y == levels[1], 1.0, -1.0), levels


def _class_index_block(block, classes):
    return np.searchsorted(classes, block)


def dask_class_index(y, classes):
    """The index in ``classes`` of every label of the Dask vector ``y`` (lazy)."""
    return y.map_blocks(_class_index_block, classes, dtype=np.intp)


def dask_class_counts(y_idx, n_classes, weights=None):
    """``(counts, positive)``: the weighted count of each class and the number of its
    rows of positive weight (all rows when unweighted), in one computation."""
    da = require_dask()
    w = weights
    counts = da.bincount(y_idx, weights=w, minlength=n_classes)
    positive = counts if w is None else da.bincount(y_idx, weights=(w > 0).astype(float), minlength=n_classes)
    return tuple(np.asarray(v, dtype=float) for v in da.compute(counts, positive))


def dask_weights(wt, n, rows, name="wt"):
    """Non-negative finite weights as a Dask vector, checked in one computation."""
    da = require_dask()
    w = _as_row_vector(wt, name, n, rows).astype(float)
    finite, negative, positive = da.compute(da.isfinite(w).all(), (w < 0).sum(), (w > 0).any())
    check_weight_values(finite, negative, positive, name)
    return w


def _take_block(block, values):
    return values[block]


def dask_map_rows(y_idx, values):
    """``values[y_idx]`` for a Dask vector of indices (lazy)."""
    return y_idx.map_blocks(_take_block, values, dtype=float)


def _row_weights(values, n, rows, name):
    """Weights given as a Dask collection (checked in one computation) or in memory
    (checked), as a Dask vector chunked like ``rows``."""
    if is_dask_collection(values):
        return dask_weights(values, n, rows, name)
    return _on_rows(check_weights(values, n, name), rows)


def dask_binary_data(X, y, wt, names):
    """:class:`~kerndwd._inputs.data.Data` of ``fit`` for a Dask ``X``: the labels as -1/+1
    and the weights, checked, then placed with the rows (:func:`place`)."""
    X = check_dask_matrix(X, names["X"], fit=True)
    n, rows = X.shape[0], X.chunks[0]
    if is_dask_collection(y):
        y_pm, classes = dask_binary_labels(y, n, rows, names["y"])
    else:
        y_np, classes = encode_labels(y, n, names["y"])
        y_pm = _on_rows(y_np, rows)
    w = None if wt is None else _row_weights(wt, n, rows, names["wt"])
    X, (y_pm, w) = place(X, (y_pm, w), names["X"])
    return Data(X, classes, (y_pm,), w, w)


def dask_classifier_data(X, y, sample_weight, class_weight):
    """:class:`~kerndwd._inputs.data.Data` of the estimators for a Dask ``X`` (see
    :func:`kerndwd._inputs.check_classifier_data`); rows of zero weight are kept,
    the weights ``s n / sum(s)`` over all ``n`` rows.  Labels and weights are
    checked first, then placed with the rows, once (:func:`place`)."""
    da = require_dask()
    names = feature_names(X)
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
        total = ChunkedRows.from_dask(s).sum()  # summed as every pass of the engine sums rows
        weights = s * (n / total)
    targets = tuple(da.where(y_idx == k, 1.0, -1.0) for k in ((1,) if classes.size == 2 else range(classes.size)))
    placed_X, placed = place(rows_of_X, targets + (weights, sw))
    return Data(placed_X, classes, placed[:-2], placed[-2], placed[-1], feature_names=names)


def check_classifier_data(X, y, sample_weight=None, class_weight=None, *, stacklevel=2):
    """The data of the estimators: rows, any number (two or more) of classes, and
    the weights ``sample_weight`` times ``class_weight`` in R's scaling.

    The R package minimises ``(1/n) sum_i w_i V_q + lambda ||f||^2``; the
    weights ``w = s n / sum(s)`` (``s`` the product of the two weights) turn
    it into ``(1/sum(s)) sum_i s_i V_q + ...``, in which repeating a row and
    doubling its weight are the same problem.  In memory, rows of zero weight
    (which add nothing to the objective and whose kernel coefficients vanish
    at the optimum) are dropped first; on a cluster they are kept, which
    gives the same objective.  A column vector ``y`` in memory is taken with
    scikit-learn's ``DataConversionWarning``, which names the frame
    ``stacklevel`` counts from here (as :func:`warnings.warn` counts).

    Returns
    -------
    Data
        ``targets`` are one-vs-rest for more than two classes, one target
        (``classes[1]`` is +1) for two.
    """
    from sklearn.exceptions import DataConversionWarning  # the estimators need scikit-learn anyway

    if not is_dask_collection(X):
        return classifier_data(X, y, sample_weight, class_weight, DataConversionWarning, stacklevel + 1)
    return dask_classifier_data(X, y, sample_weight, class_weight)
