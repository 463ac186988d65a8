"""Validation of Dask input for the faces, and the faces' Dask paths.

``kerndwd.fit``, ``kerndwd.predict`` and ``DWDClassifier`` accept a
row-chunked ``dask.array`` or a ``dask.dataframe`` of numeric columns (see
:mod:`kerndwd.engine.distributed` for how the engine keeps the rows on the
cluster).  The checks of :mod:`kerndwd._checks` send any Dask collection
here; this module is imported only then, and imports Dask only then.

For a fit the validated ``X`` is float64, chunked by rows with one column
chunk, and persisted on the workers (it is read by every MM pass); the
labels and the weights become Dask arrays chunked like it.  Every error
names the argument, as the in-memory checks do.
"""

from __future__ import annotations

import numpy as np

from ._checks import check_weights, encode_labels
from .engine.distributed import ChunkedRows, dask_decision, is_dask_collection, require_dask

__all__ = ["check_dask_matrix", "check_dask_data", "refuse_dask", "dask_predict_labels", "prepare_dask_fit",
           "dask_estimator_decision"]


def _is_dataframe(obj):
    return hasattr(obj, "dtypes") and hasattr(obj, "columns") and hasattr(obj, "to_dask_array")


def _finite_block(block, name):
    if not np.isfinite(block).all():
        raise ValueError(f"{name} contains NaN or infinite values")
    return block


def check_dask_matrix(X, name="X", persist=False):
    """A validated Dask array of float64, shape (n, p), one column chunk.

    Parameters
    ----------
    X : dask.array.Array or dask.dataframe.DataFrame
        Numeric predictors (a DataFrame's columns must all be numeric or bool).
    name : str
        The argument's name, for the errors.
    persist : bool
        True for the rows of a fit: ``X`` is persisted on the workers and checked
        for NaN and infinite values at once (one pass over the data), and a
        DataFrame's partition lengths are computed from the persisted
        partitions.  False (``newx`` of a prediction): everything stays lazy,
        and the finite check runs in each chunk's task when it is computed.

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
    >>> check_dask_matrix(X, persist=True).chunks
    ((2, 2), (2,))
    """
    da = require_dask()
    from_frame = _is_dataframe(X)
    if from_frame:
        bad = [str(c) for c, t in zip(X.columns, X.dtypes) if not _is_numeric_dtype(t)]
        if bad:
            raise TypeError(f"{name} must be numeric; non-numeric columns: {', '.join(bad)}")
        if persist:
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
    if from_frame and persist:
        X = X.compute_chunk_sizes()
    if persist and any(np.isnan(c) for c in X.chunks[0]):
        raise ValueError(f"{name} has unknown chunk sizes (NaN in {name}.chunks): a fit needs the rows of every "
                         f"chunk; call {name}.compute_chunk_sizes() first, or build it with known lengths "
                         "(e.g. DataFrame.to_dask_array(lengths=True))")
    if not any(np.isnan(c) for c in X.chunks[0]) and (X.shape[0] == 0 or X.shape[1] == 0):
        raise ValueError(f"{name} must have at least one row and one column, got shape {X.shape}")
    if len(X.chunks[1]) > 1:
        X = X.rechunk({1: -1})
    if X.dtype != np.float64:
        X = X.astype(np.float64)
    if not persist:
        return X.map_blocks(_finite_block, name, dtype=np.float64, meta=np.empty((0, 0)))
    X = X.persist()
    if not bool(da.isfinite(X).all().compute()):
        raise ValueError(f"{name} contains NaN or infinite values")
    return X


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


def _dask_labels(y, n, rows, name="y"):
    """``(y_pm, classes)`` of Dask labels: the two sorted labels, mapped to -1 and +1."""
    da = require_dask()
    y = _as_row_vector(y, name, n, rows)
    numeric = np.issubdtype(y.dtype, np.number) or y.dtype == bool
    levels, finite = da.compute(da.unique(y), da.isfinite(y).all() if numeric and y.dtype != bool else True)
    if not finite:
        raise ValueError(f"{name} contains NaN or infinite values")
    if not numeric and any(v is None or (isinstance(v, float) and np.isnan(v)) for v in levels.tolist()):
        raise ValueError(f"{name} contains missing values (None or NaN)")
    if len(levels) != 2:
        raise ValueError(f"{name} must hold exactly two distinct labels for binary DWD, got {len(levels)}"
                         + (f": {levels.tolist()[:5]}" if len(levels) else ""))
    return ChunkedRows.from_dask(da.where(y == levels[1], 1.0, -1.0).persist()), levels


def _dask_weights(wt, n, rows, name="wt"):
    da = require_dask()
    w = _as_row_vector(wt, name, n, rows).astype(float)
    finite, negative, positive = da.compute(da.isfinite(w).all(), (w < 0).sum(), (w > 0).any())
    if not finite:
        raise ValueError(f"{name} contains NaN or infinite values")
    if negative:
        raise ValueError(f"{name} must be non-negative; found {int(negative)} negative entries")
    if not positive:
        raise ValueError(f"{name} must have at least one positive entry")
    return w.persist()


def _on_rows(values, rows):
    """An in-memory vector sent to the workers, chunked like ``rows`` (a Dask array)."""
    da = require_dask()
    return da.from_array(np.asarray(values), chunks=(rows,)).persist()


def check_dask_data(X, y, wt):
    """The data of ``fit`` for a Dask ``X``, validated and placed on the workers.

    Parameters
    ----------
    X : dask.array.Array or dask.dataframe.DataFrame, shape (n, p)
        Validated and persisted by :func:`check_dask_matrix`.
    y : array_like, Dask array or Dask Series, shape (n,)
        Two distinct labels.  In memory it is checked as for in-memory ``X``
        and sent to the workers; a Dask one is checked with one computation
        and never gathered.
    wt : array_like, Dask array, Dask Series or None
        Non-negative weights, checked the same way.

    Returns
    -------
    X : dask.array.Array
    y_pm : ChunkedRows
        The labels as -1/+1, each chunk on the worker holding its chunk of ``X``.
    classes : ndarray, shape (2,)
        The labels mapped to -1 and +1 (sorted).
    w : ChunkedRows or None
        The weights, placed like ``y_pm``.

    Raises
    ------
    ValueError, TypeError
        As :func:`check_dask_matrix` for ``X``; for ``y`` and ``wt``, the
        in-memory checks' errors (wrong length, not two labels, NaN, negative
        weights), naming the argument.

    Examples
    --------
    >>> import numpy as np, dask.array as da
    >>> X = da.from_array(np.arange(8.0).reshape(4, 2), chunks=(2, 2))
    >>> X, y_pm, classes, w = check_dask_data(X, ["a", "b", "b", "a"], None)
    >>> y_pm.compute().tolist(), classes.tolist()
    ([-1.0, 1.0, 1.0, -1.0], ['a', 'b'])
    """
    X = check_dask_matrix(X, "X", persist=True)
    n, rows = X.shape[0], X.chunks[0]
    if is_dask_collection(y):
        y_pm, classes = _dask_labels(y, n, rows)
    else:
        y_pm, classes = encode_labels(y, n, "y")
        y_pm = ChunkedRows.from_dask(_on_rows(y_pm, rows))
    if wt is None:
        w = None
    elif is_dask_collection(wt):
        w = ChunkedRows.from_dask(_dask_weights(wt, n, rows))
    else:
        w = ChunkedRows.from_dask(_on_rows(check_weights(wt, n, "wt"), rows))
    # each chunk of the labels and weights on the worker holding the chunk of X: no pass moves them
    return X, y_pm.persist(near=X), classes, None if w is None else w.persist(near=X)


def refuse_dask(X, what):
    """Refuse a Dask ``X`` in a face that needs every row in memory.

    Parameters
    ----------
    X : object
        The face's ``X``.
    what : str
        The face's name, for the message.

    Raises
    ------
    TypeError
        ``X`` is a Dask collection; the message names ``X`` and the face.

    Examples
    --------
    >>> refuse_dask([[1.0]], "cv and tune")  # in memory: nothing happens
    """
    if is_dask_collection(X):
        raise TypeError(
            f"X: {what} cannot take Dask input (cross-validation collects held-out decision values "
            "for every row); fit the path with kerndwd.fit or DWDClassifier on the Dask array and choose "
            "lambda on a held-out split, or cross-validate on a sample that fits in memory")


def _label_block(block, classes):
    return classes[(block > 0).astype(int)]


def dask_predict_labels(link, classes):
    """Labels from Dask decision values by R's sign rule.

    Parameters
    ----------
    link : dask.array.Array
        Decision values.
    classes : array_like, shape (2,)

    Returns
    -------
    dask.array.Array
        ``classes[1]`` where ``link > 0``, else ``classes[0]``; lazy, chunked like ``link``.

    Examples
    --------
    >>> import numpy as np, dask.array as da
    >>> dask_predict_labels(da.from_array(np.array([-0.5, 2.0]), chunks=1), ["no", "yes"]).compute()
    array(['no', 'yes'], dtype='<U3')
    """
    classes = np.asarray(classes)
    return link.map_blocks(_label_block, classes, dtype=classes.dtype, meta=np.empty((0,) * link.ndim,
                                                                                         dtype=classes.dtype))


# --------------------------------------------------------------------------
# the scikit-learn estimator on Dask input
# --------------------------------------------------------------------------
def _class_index_block(block, classes):
    return np.searchsorted(classes, block)


def _class_weights(est, classes, y_idx, sw):
    """``class_weight`` per class, scikit-learn's rule (``"balanced"``: the total
    weight over ``n_classes`` times each class's weight), with Dask counts."""
    from sklearn.utils.class_weight import compute_class_weight

    da = require_dask()
    if isinstance(est.class_weight, str) and est.class_weight == "balanced":
        counts = da.bincount(y_idx, weights=sw, minlength=classes.size).compute()
        return counts.sum() / (classes.size * counts)
    return compute_class_weight(est.class_weight, classes=classes, y=classes)


def prepare_dask_fit(est, X, y, sample_weight):
    """What ``DWDClassifier._prepare`` builds, for a Dask ``X``.

    Rows of zero weight are kept (they add nothing to the objective), so the
    weights given to the engine are ``s * n / sum(s)`` over all ``n`` rows:
    the same objective as the in-memory estimator's, which drops those rows
    and rescales by the rows it keeps.

    Parameters
    ----------
    est : DWDClassifier
        Its ``n_features_in_`` (and ``feature_names_in_`` for a DataFrame with
        string column names) are set here, as scikit-learn's checks would.
    X : dask.array.Array or dask.dataframe.DataFrame, shape (n, p)
    y : array_like, Dask array or Dask Series, shape (n,)
        Class labels (two or more classes).
    sample_weight : array_like, Dask array or None

    Returns
    -------
    _Data
        The validated rows, the classes, the +-1 targets and the weights
        (:class:`ChunkedRows` on the workers), the kernel and the design.

    Raises
    ------
    TypeError
        ``est`` is a ``DWDClassifierCV``, or bad input as in :func:`check_dask_data`.
    ValueError
        Fewer than two classes (with positive weight), continuous labels,
        ``gamma="sigest"``, or bad input as in :func:`check_dask_data`.
    """
    from sklearn.utils.multiclass import check_classification_targets

    from . import estimator as est_module
    from ._checks import check_design

    da = require_dask()
    if isinstance(est, est_module.DWDClassifierCV):
        refuse_dask(X, "DWDClassifierCV")
    frame_columns = list(X.columns) if _is_dataframe(X) else None
    X = check_dask_matrix(X, "X", persist=True)
    n, rows = X.shape[0], X.chunks[0]
    if n < 2:
        raise ValueError(f"{type(est).__name__} needs at least 2 samples, got {n}")
    est.n_features_in_ = X.shape[1]
    if frame_columns is not None and all(isinstance(c, str) for c in frame_columns):
        est.feature_names_in_ = np.asarray(frame_columns, dtype=object)
    elif hasattr(est, "feature_names_in_"):
        del est.feature_names_in_
    if is_dask_collection(y):
        y = _as_row_vector(y, "y", n, rows)
        classes = da.unique(y).compute()
        if np.issubdtype(classes.dtype, np.floating) and not np.all(classes == np.round(classes)):
            raise ValueError("Unknown label type: continuous. Maybe you are trying to fit a classifier, "
                             "which expects discrete classes on a regression target with continuous values.")
        y_idx = y.map_blocks(_class_index_block, classes, dtype=np.intp).persist()
    else:
        y = np.asarray(y.to_numpy() if hasattr(y, "to_numpy") else y)
        if y.ndim == 2 and y.shape[1] == 1:
            y = y[:, 0]
        if y.ndim != 1 or y.shape[0] != n:
            raise ValueError(f"y must be 1-D with one label per row of X ({n}), got shape {y.shape}")
        check_classification_targets(y)
        classes, y_idx = np.unique(y, return_inverse=True)
        y_idx = _on_rows(y_idx, rows)
    if classes.size < 2:
        raise ValueError(f"{type(est).__name__} needs samples of at least 2 classes in the data, but the data "
                         f"contains only one class: {classes[0]!r}")
    raw_sw = None
    if sample_weight is not None:
        if is_dask_collection(sample_weight):
            raw_sw = _dask_weights(sample_weight, n, rows, "sample_weight")
        else:
            raw_sw = _on_rows(check_weights(sample_weight, n, "sample_weight"), rows)
    weights = None
    if raw_sw is not None or est.class_weight is not None:
        sw = raw_sw
        if est.class_weight is not None:
            per_class = np.asarray(_class_weights(est, classes, y_idx, raw_sw), dtype=float)
            by_row = y_idx.map_blocks(_take_block, per_class, dtype=float)
            sw = by_row if sw is None else sw * by_row
        positive = da.bincount(y_idx, weights=(sw > 0).astype(float), minlength=classes.size)
        total, positive = da.compute(sw.sum(), positive)
        present = np.flatnonzero(positive)
        if present.size < 2:
            raise ValueError(f"{type(est).__name__} needs samples of at least 2 classes with positive weight, "
                             f"but only class {classes[present[0]]!r} has positive sample_weight")
        weights = ChunkedRows.from_dask(sw * (n / total)).persist(near=X)
    if (isinstance(est.gamma, str) and est.gamma == "sigest" and not est_module._kernel_is_linear(est.kernel)
            and not isinstance(est.kernel, est_module.Kernel)):
        raise ValueError("gamma='sigest' reads pairs of rows from all of X, which a Dask X keeps on the "
                         "cluster; give gamma a number (e.g. sigest of a sample) or 'scale'")
    kern = est_module._kernel_from_params(est, X, raw_sw)
    options = dict(est.design_options or {})
    if est.n_components is not None and est.approx is not None:
        options["n_components"] = est.n_components
    design = check_design(est.approx, est.solver, kern, options, est_module._seed(est.random_state))
    targets = [ChunkedRows.from_dask(t).persist(near=X) for t in est_module._binary_targets(y_idx, classes.size)]
    return est_module._Data(X, y, X, classes, targets, weights, None, kern, design)


def _take_block(block, values):
    return values[block]


def dask_estimator_decision(est, X):
    """``est.decision_function(X)`` for a Dask ``X``.

    Parameters
    ----------
    est : DWDClassifier
        Fitted.
    X : dask.array.Array or dask.dataframe.DataFrame, shape (m, p)

    Returns
    -------
    dask.array.Array
        Lazy, shape (m,) for two classes and (m, n_classes) otherwise,
        chunked like ``X``'s rows.

    Raises
    ------
    ValueError
        ``X`` has another number of columns than the fit.
    """
    X = check_dask_matrix(X, "X")
    if X.shape[1] != est.n_features_in_:
        raise ValueError(f"X has {X.shape[1]} features, but {type(est).__name__} is expecting "
                         f"{est.n_features_in_} features as input")
    coef = est.coef_ if est.predictor_.coef_space == "beta" else est.dual_coef_
    D = dask_decision(est.predictor_, X, np.vstack([est.intercept_, coef.T]))
    return D[:, 0] if est.classes_.size == 2 else D


def _argmax_block(block, classes):
    return classes[np.argmax(block, axis=1)]


def dask_estimator_labels(classes, D):
    """Labels from the estimator's Dask decision values.

    Parameters
    ----------
    classes : ndarray, shape (n_classes,)
    D : dask.array.Array, shape (m,) or (m, n_classes)

    Returns
    -------
    dask.array.Array, shape (m,)
        R's sign rule for two classes, the argmax of the one-vs-rest values
        otherwise; lazy.

    Examples
    --------
    >>> import numpy as np, dask.array as da
    >>> D = da.from_array(np.array([[0.1, 0.9, -1.0], [2.0, 0.0, 0.0]]), chunks=(1, 3))
    >>> dask_estimator_labels(np.array([10, 20, 30]), D).compute()
    array([20, 10])
    """
    classes = np.asarray(classes)
    if D.ndim == 1:
        return dask_predict_labels(D, classes)
    return D.map_blocks(_argmax_block, classes, drop_axis=1, dtype=classes.dtype,
                        meta=np.empty((0,), dtype=classes.dtype))
