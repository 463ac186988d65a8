"""Validated data (:class:`Data`): what rows, labels and weights must be, said once
for rows in memory and on a cluster, and the data of a fit in memory.

The input layer (:mod:`kerndwd._inputs`) sends rows in memory (dense,
sparse or pandas) here (:func:`float_matrix`, :func:`binary_data`,
:func:`classifier_data`) and a Dask collection to its Dask half
(:mod:`kerndwd._inputs_dask`), which validates labels and weights with the
same functions (a Dask ``y`` finds its distinct labels with one computation
and then asks the same checks), so that the same bad rows, labels or
weights get the same message from every face and every storage.  Nothing
here modifies its input: arrays are converted (and copied where a
conversion is needed), never written to.
"""

from __future__ import annotations

import numbers
import warnings
from dataclasses import dataclass

import numpy as np
from scipy import sparse

__all__ = ["Data", "targets_of", "check_positive_classes", "is_missing", "is_pandas", "numeric_dtype", "as_float_array", "label_array", "label_levels",
           "encode_labels", "check_weights", "check_levels", "check_class_levels", "per_class_weights",
           "check_weight_values", "feature_names", "float_matrix", "binary_data", "classifier_data", "MAX_ABS_X"]

#: Largest magnitude accepted in X: inner products of rows (p terms of up to
#: MAX_ABS_X^2) must stay far below the largest double (1.8e308).
MAX_ABS_X = 1e150


def is_missing(value):
    """Whether one label is missing: None, a float NaN, or pandas' ``NA``/``NaT``."""
    if value is None:
        return True
    if isinstance(value, (float, np.floating)) and np.isnan(value):
        return True
    return type(value).__name__ in ("NAType", "NaTType")


def check_levels(levels, name="y"):
    """``levels`` (the sorted distinct labels) when there are exactly two, else
    ``ValueError`` naming ``name``: binary DWD maps them to -1 and +1."""
    if len(levels) != 2:
        shown = f": {list(levels)[:5]}" if len(levels) else ""
        raise ValueError(f"{name} must hold exactly two distinct labels for binary DWD, got {len(levels)}{shown}")
    return levels


def check_class_levels(levels, name="y"):
    """The distinct labels of a classifier's ``y`` (scikit-learn's rules): at least
    two, and not continuous values."""
    if len(levels) and np.asarray(levels).dtype.kind == "f" and not np.all(levels == np.round(levels)):
        raise ValueError("Unknown label type: continuous. Maybe you are trying to fit a classifier, which expects "
                         "discrete classes on a regression target with continuous values.")
    if len(levels) < 2:
        raise ValueError(f"{name} needs samples of at least 2 classes in the data, but the data contains only one "
                         f"class: {list(levels)[0]!r}")
    return levels


def per_class_weights(class_weight, classes, counts, name="class_weight"):
    """Weights per class: scikit-learn's ``"balanced"`` rule (the total weight over
    ``n_classes`` times each class's weight, ``counts`` being the weighted class
    counts) or a dict ``{label: weight}`` (classes it omits weigh 1).

    Raises
    ------
    ValueError
        An unknown mode, a label not among the classes, or a weight that is
        negative or not finite.
    """
    if isinstance(class_weight, str):
        if class_weight != "balanced":
            raise ValueError(f"{name} must be 'balanced', a dict or None, got {class_weight!r}")
        with np.errstate(divide="ignore"):
            out = counts.sum() / (len(classes) * np.asarray(counts, dtype=float))
    elif isinstance(class_weight, dict):
        unknown = [k for k in class_weight if k not in set(np.asarray(classes).tolist())]
        if unknown:
            raise ValueError(f"{name}: the label(s) {unknown!r} are not among the classes {list(classes)!r}")
        out = np.array([class_weight.get(c, 1.0) for c in np.asarray(classes).tolist()], dtype=float)
    else:
        raise TypeError(f"{name} must be 'balanced', a dict or None, got {type(class_weight).__name__}")
    if not (np.isfinite(out).all() and (out >= 0).all()):
        bad = {c: w for c, w in zip(np.asarray(classes).tolist(), out.tolist()) if not (np.isfinite(w) and w >= 0)}
        raise ValueError(f"{name} must be non-negative and finite, got {bad}")
    return out


def check_weight_values(finite, negative, positive, name):
    """The messages of a weight vector's checks from three facts about it: whether
    all are finite, how many are negative, and whether any is positive."""
    if not finite:
        raise ValueError(f"{name} contains NaN or infinite values")
    if negative:
        raise ValueError(f"{name} must be non-negative; found {int(negative)} negative entries")
    if not positive:
        raise ValueError(f"{name} must have at least one positive entry (all weights are zero)")


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


def label_array(y, n, name, column_warning=None):
    """``(values, categories)``: the labels as a 1-D array with missing labels
    refused first (None, NaN, ``pd.NA``), and a Categorical's category order.
    A column vector is taken as a vector (with a warning of class
    ``column_warning`` when given)."""
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
                          f"({name}.ravel() avoids this warning)", column_warning, stacklevel=4)
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


def label_levels(arr, categories, name):
    """The sorted distinct labels of ``arr`` (a Categorical's in category order)."""
    if categories is None and arr.dtype.kind in "biuf" and arr.size:
        # numbers: when every label is the smallest or the largest, those are the levels, found
        # without a sort (where a float zero could carry either sign, np.unique decides as always)
        lo, hi = arr.min(), arr.max()
        if ((arr == lo) | (arr == hi)).all() and not (arr.dtype.kind == "f" and (lo == 0 or hi == 0)):
            return np.array([lo] if lo == hi else [lo, hi], dtype=arr.dtype)
    try:
        levels = np.unique(arr)
    except TypeError:
        raise TypeError(f"{name} mixes labels of types that cannot be ordered") from None
    if categories is not None:
        present = set(levels.tolist())
        levels = np.array([c for c in categories if c in present], dtype=object)
    return levels


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


@dataclass(frozen=True)
class Data:
    """Validated data of a fit.

    Attributes
    ----------
    X : ndarray, csr_matrix or dask.array.Array, shape (n, p)
        The rows.
    classes : ndarray
        The labels: two for binary DWD (``classes[0]`` is -1), all classes for
        a classifier.
    targets : tuple of ndarray or ChunkedRows, shape (n,)
        +-1 labels of each binary problem: one, or one per class (one-vs-rest).
    weights : ndarray, ChunkedRows or None
        The observation weights of the loss.
    sample_weight : ndarray, ChunkedRows or None
        The caller's sample weights alone (for ``gamma="scale"``).
    kept : ndarray of bool or None
        For a classifier, the rows kept (those of positive weight), None when
        all were.
    feature_names : ndarray of str or None
        The columns' names of a DataFrame ``X`` whose names are all strings.
    """

    X: object
    classes: np.ndarray
    targets: tuple
    weights: object = None
    sample_weight: object = None
    kept: object = None
    feature_names: object = None

    @property
    def y(self):
        return self.targets[0]

    @property
    def n(self):
        return self.X.shape[0]


def targets_of(y_idx, n_classes):
    """+-1 labels of the binary problems: one for two classes (``classes[1]`` is
    +1, as R orders levels), else one-vs-rest per class."""
    if n_classes == 2:
        return (np.where(y_idx == 1, 1.0, -1.0),)
    return tuple(np.where(y_idx == k, 1.0, -1.0) for k in range(n_classes))


def check_positive_classes(positive, classes):
    """``ValueError`` unless every class keeps rows of positive weight (``positive``
    counts them per class)."""
    present = np.flatnonzero(positive)
    if present.size == 0:  # every product underflowed to zero, or every weight was zero
        raise ValueError("sample_weight and class_weight leave no sample of positive weight (their products are "
                         "zero, or below the smallest double); DWD needs samples of at least 2 classes with "
                         "positive weight: rescale sample_weight or class_weight (only their ratios matter)")
    if present.size < 2:
        raise ValueError(f"sample_weight and class_weight leave positive weight on one class only "
                         f"({classes[present[0]]!r}); DWD needs samples of at least 2 classes with positive weight")
    if present.size < classes.size:
        missing = [classes[k] for k in range(classes.size) if k not in set(present.tolist())]
        raise ValueError(f"sample_weight and class_weight give class(es) {missing!r} no positive weight; "
                         "drop those classes from y or give them weight")


# --------------------------------------------------------------------------
# rows in memory, and the data of a fit in memory
# --------------------------------------------------------------------------
#: A sum of squares up to this bounds every entry by MAX_ABS_X / 2 (rounding included).
_SAFE_SQUARES = 0.25 * MAX_ABS_X ** 2


def _check_finite_and_scale(values, name):
    # one product usually settles it: a sum of squares that is finite and at most _SAFE_SQUARES
    # (NaN is neither) has every entry finite and within MAX_ABS_X
    flat = values.reshape(-1)
    with np.errstate(over="ignore", invalid="ignore"):
        if flat @ flat <= _SAFE_SQUARES:
            return
    # the extremes propagate NaN: two reductions, no temporary array
    largest = max(float(values.max()), -float(values.min())) if values.size else 0.0
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


def classifier_data(X, y, sample_weight, class_weight, column_warning):
    """:class:`Data` of the estimators for rows in memory (see
    :func:`kerndwd._inputs.check_classifier_data`): rows of zero weight are
    dropped, the weights ``s n / sum(s)`` over the ``n`` rows kept."""
    names = feature_names(X)
    X = float_matrix(X, "X")
    n = X.shape[0]
    if n < 2:
        raise ValueError(f"X needs at least 2 samples (one sample cannot hold two classes), got n_samples = {n}")
    arr, categories = label_array(y, n, "y", column_warning=column_warning)
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
