"""What labels and weights must be, said once for rows in memory and on a cluster.

The input layer (:mod:`kerndwd._inputs`) and its Dask half
(:mod:`kerndwd._inputs_dask`) both find the distinct labels of ``y`` their own
way (``np.unique`` or one Dask computation) and then ask these functions,
so that the same bad labels or weights get the same message from every face
and every storage.
"""

from __future__ import annotations

import numbers

import numpy as np

__all__ = ["is_missing", "check_levels", "check_class_levels", "per_class_weights", "check_weight_values"]


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


def is_label_scalar(value):
    """Whether ``value`` is a label of a kind ``y`` may hold (text or a number)."""
    return isinstance(value, (str, bytes, numbers.Number, np.bool_))
