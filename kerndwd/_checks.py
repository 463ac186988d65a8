"""Validation of user input, done once where it enters (fit, cv, tune, the estimator).

Every error names the argument and what was wrong with it.  Nothing here
modifies its input: arrays are converted (and copied where a conversion is
needed), never written to.
"""

from __future__ import annotations

import numbers
import warnings

import numpy as np

from .kernels import Kernel


class DWDConvergenceWarning(UserWarning):
    """The MM iteration ran out of its ``maxit`` budget before the path ended."""


def _is_real_scalar(v):
    return isinstance(v, numbers.Real) and not isinstance(v, (bool, np.bool_))


def check_matrix(X, name="X"):
    """A finite 2-D float array from an array, list or pandas DataFrame."""
    if hasattr(X, "iloc") and hasattr(X, "dtypes"):  # pandas DataFrame
        bad = [str(c) for c, t in zip(X.columns, X.dtypes) if not (np.issubdtype(t, np.number) or t == bool)]
        if bad:
            raise TypeError(f"{name} must be numeric; non-numeric columns: {', '.join(bad)}")
        X = X.to_numpy(dtype=float)
    try:
        arr = np.asarray(X)
    except Exception as exc:  # ragged lists and the like
        raise TypeError(f"{name} must be a 2-D numeric array: {exc}") from None
    if arr.dtype == object or not (np.issubdtype(arr.dtype, np.number) or arr.dtype == bool):
        try:
            arr = arr.astype(float)
        except (TypeError, ValueError):
            raise TypeError(f"{name} must be numeric, got an array of dtype {arr.dtype}") from None
    if np.issubdtype(arr.dtype, np.complexfloating):
        raise TypeError(f"{name} must be real, got complex values")
    if arr.ndim != 2:
        raise ValueError(
            f"{name} must be a 2-D array (rows are observations), got {arr.ndim}-D; "
            "use X.reshape(-1, 1) for a single feature"
        )
    if arr.shape[0] == 0 or arr.shape[1] == 0:
        raise ValueError(f"{name} must have at least one row and one column, got shape {arr.shape}")
    # C order: the same numbers whatever the input's layout (BLAS sums in memory order)
    arr = np.ascontiguousarray(arr, dtype=float)
    if not np.isfinite(arr).all():
        raise ValueError(f"{name} contains NaN or infinite values")
    return arr


def encode_labels(y, n=None, name="y"):
    """Map two labels to -1/+1 in sorted order, as R orders factor levels.

    Returns ``(y_pm, classes)`` where ``classes[0]`` maps to -1 and
    ``classes[1]`` to +1.  A pandas Categorical keeps its category order.
    """
    categories = None
    if hasattr(y, "cat") and hasattr(y, "dtype") and str(y.dtype) == "category":
        categories = list(y.cat.categories)
        y = np.asarray(y.astype(object))
    elif hasattr(y, "to_numpy"):
        y = y.to_numpy()
    arr = np.asarray(y)
    if arr.ndim == 2 and arr.shape[1] == 1:
        arr = arr[:, 0]
    if arr.ndim != 1:
        raise ValueError(f"{name} must be 1-D, got shape {arr.shape}")
    if n is not None and arr.shape[0] != n:
        raise ValueError(f"{name} has {arr.shape[0]} entries but X has {n} rows")
    if arr.dtype == object:
        missing = [v is None or (isinstance(v, float) and np.isnan(v)) for v in arr]
        if any(missing):
            raise ValueError(f"{name} contains missing values (None or NaN)")
    elif np.issubdtype(arr.dtype, np.number) and not np.isfinite(arr.astype(float)).all():
        raise ValueError(f"{name} contains NaN or infinite values")
    try:
        levels = np.unique(arr)
    except TypeError:
        raise TypeError(f"{name} mixes labels of types that cannot be ordered") from None
    if categories is not None:
        levels = np.array([c for c in categories if c in set(levels.tolist())], dtype=object)
    if len(levels) != 2:
        raise ValueError(
            f"{name} must hold exactly two distinct labels for binary DWD, got {len(levels)}"
            + (f": {levels.tolist()[:5]}" if len(levels) else "")
        )
    y_pm = np.where(arr == levels[1], 1.0, -1.0)
    return y_pm, levels


def check_lambdas(lambdas, n, name="lambdas"):
    """Positive finite lambdas, sorted decreasing; R's default grid when None."""
    if lambdas is None:
        if n <= 10000:
            return 10.0 ** np.linspace(3, -3, 100)
        return 10.0 ** np.linspace(0, -7, 100)
    try:
        arr = np.atleast_1d(np.asarray(lambdas, dtype=float))
    except (TypeError, ValueError):
        raise TypeError(f"{name} must be a sequence of positive numbers") from None
    if arr.ndim != 1 or arr.size == 0:
        raise ValueError(f"{name} must be a non-empty 1-D sequence")
    if not np.isfinite(arr).all() or (arr <= 0).any():
        raise ValueError(f"{name} must be positive and finite, got {arr[~(np.isfinite(arr) & (arr > 0))][:3].tolist()}")
    return np.sort(arr)[::-1].copy()


def check_positive(value, name):
    if not _is_real_scalar(value):
        raise TypeError(f"{name} must be a positive number, got {value!r}")
    value = float(value)
    if not np.isfinite(value) or value <= 0:
        raise ValueError(f"{name} must be positive and finite, got {value!r}")
    return value


def check_qval(qval, name="qval"):
    # R resets qval <= 0 to 1 with a warning; we refuse, so that a typo never
    # silently fits a different model.
    return check_positive(qval, name)


def check_maxit(maxit, name="maxit"):
    if not _is_real_scalar(maxit) or not float(maxit).is_integer():
        raise TypeError(f"{name} must be a positive integer, got {maxit!r}")
    if maxit < 1:
        raise ValueError(f"{name} must be at least 1, got {maxit!r}")
    return int(maxit)


def check_weights(wt, n, name="wt"):
    if wt is None:
        return None
    try:
        arr = np.asarray(wt, dtype=float)
    except (TypeError, ValueError):
        raise TypeError(f"{name} must be a sequence of non-negative numbers") from None
    if arr.ndim != 1 or arr.shape[0] != n:
        raise ValueError(f"{name} must have one entry per row of X ({n}), got shape {arr.shape}")
    if not np.isfinite(arr).all():
        raise ValueError(f"{name} contains NaN or infinite values")
    if (arr < 0).any():
        raise ValueError(f"{name} must be non-negative; found {int((arr < 0).sum())} negative entries")
    if not (arr > 0).any():
        raise ValueError(f"{name} must have at least one positive entry")
    return arr.copy()


def check_kernel(kern, name="kern"):
    if not isinstance(kern, Kernel):
        raise TypeError(
            f"{name} must be a kernel object such as kerndwd.rbfdot(sigma=1) or kerndwd.vanilladot(), "
            f"got {type(kern).__name__}"
        )
    return kern


def warn_not_converged(jerr, lambdas, maxit):
    l = -jerr
    warnings.warn(
        f"maxit={maxit} MM passes (a budget for the whole path) ran out while fitting "
        f"lambda #{l} = {lambdas[l - 1]:.6g}; the {l - 1} finished lambda(s) are returned (jerr={jerr})",
        DWDConvergenceWarning,
        stacklevel=3,
    )
