"""What validated data is (:class:`Data`), and the rules its labels and weights
follow, said once for rows in memory and on a cluster.

The readers of :mod:`kerndwd._inputs.rows` ask these rules for the labels
(two for binary DWD, at least two discrete ones for a classifier, none
missing) and for the weights (finite, non-negative, some positive, every
class keeping a positive weight), so that the same bad labels or weights
get the same message from every face and every storage.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["Data", "targets_of", "check_positive_classes", "is_missing", "label_levels", "check_levels",
           "check_class_levels", "per_class_weights", "check_weight_values"]


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
        shown = f": {[v.item() if isinstance(v, np.generic) else v for v in list(levels)[:5]]}" if len(levels) else ""
        several = (" (kerndwd.DWDClassifier fits several classes, one-vs-rest)" if len(levels) > 2 else "")
        raise ValueError(f"{name} must hold exactly two distinct labels for binary DWD, got {len(levels)}{shown}"
                         f"{several}")
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
