"""Validation of user input, done once where it enters (fit, cv, tune, the estimator).

Every error names the argument and what was wrong with it.  Nothing here
modifies its input: arrays are converted (and copied where a conversion is
needed), never written to.
"""

from __future__ import annotations

import numbers
import warnings

import numpy as np

from ._scalars import check_integer, check_real
from .engine import GAM_FIT, STOP_RULES, DWDLoss, Problem, default_method, make_design, method_names
from .engine.distributed import is_dask_collection
from .kernels import Kernel, rbfdot, sigest


class DWDConvergenceWarning(UserWarning):
    """The MM iteration ran out of its ``maxit`` budget before the path ended."""


def check_matrix(X, name="X"):
    """A finite 2-D float array from an array, list or pandas DataFrame."""
    if is_dask_collection(X):  # validated lazily and kept on the cluster: kerndwd/_dask.py
        from ._dask import check_dask_matrix
        return check_dask_matrix(X, name)
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


def check_positive_sequence(values, name, what="positive numbers"):
    """A non-empty 1-D float array of positive finite entries (a copy, order kept)."""
    try:
        arr = np.atleast_1d(np.asarray(values, dtype=float))
    except (TypeError, ValueError):
        raise TypeError(f"{name} must be a sequence of {what}, got {values!r}") from None
    if arr.ndim != 1 or arr.size == 0:
        raise ValueError(f"{name} must be a non-empty 1-D sequence of {what}")
    if not np.isfinite(arr).all() or (arr <= 0).any():
        bad = arr[~(np.isfinite(arr) & (arr > 0))]
        raise ValueError(f"{name} must be positive and finite, got {bad[:3].tolist()}")
    return arr.copy()


def check_lambdas(lambdas, n, name="lambdas"):
    """Positive finite lambdas, sorted decreasing; R's default grid when None."""
    if lambdas is None:
        if n <= 10000:
            return 10.0 ** np.linspace(3, -3, 100)
        return 10.0 ** np.linspace(0, -7, 100)
    return np.sort(check_positive_sequence(lambdas, name))[::-1].copy()


def check_positive(value, name):
    return check_real(value, name, "positive")


def check_qval(qval, name="qval"):
    # R resets qval <= 0 to 1 with a warning; we refuse, so that a typo never
    # silently fits a different model.
    return check_real(qval, name, "positive")


def check_maxit(maxit, name="maxit"):
    return check_integer(maxit, name, 1)


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


def check_stop(stop, name="stop"):
    if not isinstance(stop, str) or stop not in STOP_RULES:
        raise ValueError(f"{name} must be one of {list(STOP_RULES)}, got {stop!r}")
    return stop


def check_method(method, stop, name="method"):
    """The path solver: a registered name, or None for the default of ``stop``."""
    if method is None:
        return default_method(stop)
    if not isinstance(method, str) or method not in method_names():
        raise ValueError(f"{name} must be one of {method_names()} or None, got {method!r}")
    return method


def check_n_jobs(n_jobs):
    if n_jobs is None:
        return 1
    if not isinstance(n_jobs, numbers.Integral) or isinstance(n_jobs, bool) or n_jobs == 0:
        raise ValueError(f"n_jobs must be None or a non-zero integer (-1 = all cores), got {n_jobs!r}")
    return int(n_jobs)


def check_qvals(qvals, name="qvals"):
    """Loss exponents q > 0, in the order given."""
    return check_positive_sequence(qvals, name, "positive numbers (the loss needs q > 0)")


def default_kernel(kern, X, random_state, name="kern"):
    """R's default kernel ``rbfdot(sigma = sigest(x))`` when ``kern`` is None."""
    if kern is None:
        if is_dask_collection(X):
            raise TypeError(f"{name} must be given for a Dask X: the default rbfdot(sigma=sigest(X)) draws pairs "
                            "from all rows; pass a kernel, e.g. rbfdot(sigma=sigest(sample)) or vanilladot()")
        kern = rbfdot(sigma=sigest(X, random_state=random_state))
    return check_kernel(kern, name)


def check_design(approx, solver, kern, options, random_state):
    """The design named by ``approx`` (a kernel approximation) or ``solver`` (an
    exact-kernel solver), with its keyword options."""
    if approx is not None and solver is not None:
        raise ValueError(f"give approx or solver, not both (got approx={approx!r}, solver={solver!r})")
    if approx is None and solver is None and options:
        raise TypeError(f"unexpected keyword argument(s) {', '.join(sorted(options))}: "
                        "design options are accepted only together with approx= or solver=")
    argument, name = ("approx", approx) if approx is not None else ("solver", solver)
    return make_design(name, kern, options, argument=argument, random_state=random_state)


def check_data(X, y, wt):
    """The data of ``fit``, ``cv`` and ``tune``: ``(X, y_pm, classes, w)`` validated."""
    if is_dask_collection(X):  # X persisted on the cluster, y and wt chunked like it: kerndwd/_dask.py
        from ._dask import check_dask_data
        return check_dask_data(X, y, wt)
    X = check_matrix(X, "X")
    n = X.shape[0]
    y_pm, classes = encode_labels(y, n, "y")
    return X, y_pm, classes, check_weights(wt, n, "wt")


def build_problem(data, lambdas, kern, qval, eps, maxit, stop, accelerate, *, random_state=None,
                  approx=None, solver=None, design_options=None, gam=GAM_FIT, linear_rule="kerndwd",
                  method=None):
    """One :class:`Problem` from the output of :func:`check_data` and the other
    arguments of ``fit``, ``cv`` and ``tune`` (validated here).  The default
    kernel's ``sigest`` draws from ``random_state`` (cv draws its folds first)."""
    X, y_pm, classes, w = data
    stop = check_stop(stop)
    lam = check_lambdas(lambdas, X.shape[0], "lambdas")
    eps = check_positive(eps, "eps")
    maxit = check_maxit(maxit, "maxit")
    q = check_qval(qval, "qval")
    if accelerate is None:
        accelerate = stop == "kkt"  # momentum with the gradient rule; R's plain iteration with R's rule
    elif not isinstance(accelerate, (bool, np.bool_)):
        raise TypeError(f"accelerate must be True, False or None, got {accelerate!r}")
    method = check_method(method, stop)
    kern = default_kernel(kern, X, random_state)
    design = check_design(approx, solver, kern, design_options or {}, random_state)
    return Problem(X=X, y=y_pm, classes=classes, lambdas=lam, loss=DWDLoss(q, w), kern=kern, stop=stop,
                   eps=eps, maxit=maxit, accelerate=bool(accelerate), gam=gam, linear_rule=linear_rule,
                   design=design, method=method)


def warn_not_converged(jerr, lambdas, maxit):
    l = -jerr
    warnings.warn(
        f"maxit={maxit} MM passes (a budget for the whole path) ran out while fitting "
        f"lambda #{l} = {lambdas[l - 1]:.6g}; the {l - 1} finished lambda(s) are returned (jerr={jerr})",
        DWDConvergenceWarning,
        stacklevel=3,
    )


def warn_folds(jerr, lambdas, maxit, q=None, stacklevel=3):
    """One warning naming every fold whose path ran out of ``maxit``."""
    bad = np.flatnonzero(jerr)
    if bad.size:
        where = "" if q is None else f" (q={q:g})"
        detail = ", ".join(f"fold {k + 1} at lambda #{-jerr[k]} = {lambdas[-jerr[k] - 1]:.6g}" for k in bad)
        warnings.warn(
            f"maxit={maxit} MM passes ran out{where}: {detail}; their held-out predictions at "
            "that lambda and smaller ones are missing and left out of cvm and cvsd",
            DWDConvergenceWarning,
            stacklevel=stacklevel,
        )
