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
from .engine import (GAM_FIT, STOP_RULES, DWDLoss, Problem, default_method, jerr_diverged, jerr_lambda,
                     make_design, method_names, method_settings, runs_on_remote_rows)
from .engine.distributed import is_dask_collection
from .kernels import Kernel, rbfdot, sigest


class DWDConvergenceWarning(UserWarning):
    """A path stopped before its tolerance: the ``maxit`` budget ran out, or
    rounding held the gradient above ``eps`` (an ``eps`` tighter than the
    data's precision allows), both ``jerr = -l``; or the iteration left the
    finite numbers and the lambda was abandoned (``jerr = -(10000 + l)``).

    A subclass of :class:`UserWarning`; the path keeps the columns fitted
    before the stop, and ``jerr`` says where it stopped.

    Examples
    --------
    >>> import warnings
    >>> import numpy as np, kerndwd
    >>> rng = np.random.default_rng(0)
    >>> X = rng.standard_normal((40, 2)); y = np.where(X[:, 0] > 0, 1, -1)
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     path = kerndwd.fit(X, y, [1.0, 0.1], kern=kerndwd.rbfdot(sigma=1), maxit=2)
    >>> any(issubclass(w.category, kerndwd.DWDConvergenceWarning) for w in caught)
    True
    >>> path.jerr < 0  # maxit ran out on a lambda
    True

    To fail instead of warn:

    >>> warnings.simplefilter("error", kerndwd.DWDConvergenceWarning)  # doctest: +SKIP
    """


#: Largest magnitude accepted in X: inner products of rows (p terms of up to
#: MAX_ABS_X^2) must stay far below the largest double (1.8e308).
MAX_ABS_X = 1e150


def _is_sparse(obj):
    from scipy import sparse

    return sparse.issparse(obj)


def _is_pandas(obj):
    return type(obj).__module__.split(".")[0] == "pandas"


def as_float_array(values, name, what="numbers"):
    """``values`` as a float ndarray, refusing anything that is not numeric.

    Numbers, booleans, numeric object arrays and pandas' nullable numeric
    types (``Int64``, ``Float64``; ``pd.NA`` becomes NaN for the caller's
    finiteness check) are accepted; strings, numeric strings included, are
    a ``TypeError``: a column of text is never silently parsed.
    """
    if _is_pandas(values) and hasattr(values, "to_numpy"):
        dtype = getattr(values, "dtype", None)
        if dtype is not None and not _numeric_dtype(dtype):
            raise TypeError(f"{name} must be {what}, got pandas dtype {dtype}")
        values = values.to_numpy(dtype=float, na_value=np.nan)
    try:
        arr = np.asarray(values)
    except Exception as exc:  # ragged lists and the like
        raise TypeError(f"{name} must be an array of {what}: {exc}") from None
    if arr.dtype.kind in "biuf":
        return arr.astype(float, copy=False)
    if arr.dtype.kind == "c":
        raise TypeError(f"{name} must be real, got complex values")
    if arr.dtype.kind == "O" and all(isinstance(v, numbers.Real) for v in arr.flat):
        return arr.astype(float)
    kind = "strings" if arr.dtype.kind in "USO" else f"dtype {arr.dtype}"
    raise TypeError(f"{name} must be {what}, got {kind}")


def _numeric_dtype(dtype):
    import pandas as pd

    return pd.api.types.is_numeric_dtype(dtype) or pd.api.types.is_bool_dtype(dtype)


def check_matrix(X, name="X", accept_sparse=False):
    """A finite 2-D float array (C order) from an array, list or pandas DataFrame;
    a CSR matrix of floats from a scipy sparse matrix when ``accept_sparse``."""
    from scipy import sparse

    if is_dask_collection(X):  # validated lazily and kept on the cluster: kerndwd/_dask.py
        from ._dask import check_dask_matrix
        return check_dask_matrix(X, name)
    if sparse.issparse(X):
        if not accept_sparse:
            raise TypeError(f"sparse {name} is supported only with the linear kernel (vanilladot()); "
                            f"pass {name}.toarray() for other kernels")
        X = sparse.csr_matrix(X, dtype=float, copy=True)
        if X.ndim != 2 or X.shape[0] == 0 or X.shape[1] == 0:
            raise ValueError(f"{name} must have at least one row and one column, got shape {X.shape}")
        _check_finite_and_scale(X.data, name)
        return X
    if _is_pandas(X) and hasattr(X, "dtypes") and hasattr(X, "columns"):  # DataFrame
        bad = [str(c) for c, t in zip(X.columns, X.dtypes) if not _numeric_dtype(t)]
        if bad:
            raise TypeError(f"{name} must be numeric; non-numeric columns: {', '.join(bad)}")
        X = X.to_numpy(dtype=float, na_value=np.nan)
    arr = as_float_array(X, name, "numeric")
    if arr.ndim != 2:
        raise ValueError(
            f"{name} must be a 2-D array (rows are observations), got {arr.ndim}-D; "
            "use X.reshape(-1, 1) for a single feature"
        )
    if arr.shape[0] == 0 or arr.shape[1] == 0:
        raise ValueError(f"{name} must have at least one row and one column, got shape {arr.shape}")
    # C order: the same numbers whatever the input's layout (BLAS sums in memory order)
    arr = np.ascontiguousarray(arr, dtype=float)
    _check_finite_and_scale(arr, name)
    return arr


def _check_finite_and_scale(values, name):
    if not np.isfinite(values).all():
        raise ValueError(f"{name} contains NaN or infinite values")
    largest = float(np.abs(values).max()) if values.size else 0.0
    if largest > MAX_ABS_X:
        raise ValueError(f"{name} has entries of magnitude up to {largest:.3g}: products of rows overflow double "
                         f"precision above about {MAX_ABS_X:g}; rescale {name} (e.g. standardise its columns)")


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
    if isinstance(y, (list, tuple)):
        kinds = {"text" if isinstance(v, (str, bytes)) else "number" if isinstance(v, numbers.Number) else "other"
                 for v in y}
        if len(kinds) > 1:
            raise TypeError(f"{name} mixes labels of different types ({', '.join(sorted(kinds))}); "
                            "use labels of one type")
        if kinds == {"text"} or kinds == {"number"}:
            y = np.array(y, dtype=object if kinds == {"text"} else None)
    arr = np.asarray(y)
    if arr.dtype == object and len({type(v) for v in arr.flat} - {type(None)}) > 1:
        types = {type(v) for v in arr.flat if v is not None}
        if not all(isinstance(v, numbers.Number) for v in arr.flat if v is not None) and \
                not all(isinstance(v, str) for v in arr.flat if v is not None):
            raise TypeError(f"{name} mixes labels of different types "
                            f"({', '.join(sorted(t.__name__ for t in types))}); use labels of one type")
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
    if isinstance(values, (str, bytes)):
        raise TypeError(f"{name} must be a sequence of {what}, got a string")
    arr = np.atleast_1d(as_float_array(values, name, f"a sequence of {what}"))
    if arr.ndim != 1 or arr.size == 0:
        raise ValueError(f"{name} must be a non-empty 1-D sequence of {what}")
    if not np.isfinite(arr).all() or (arr <= 0).any():
        bad = arr[~(np.isfinite(arr) & (arr > 0))]
        raise ValueError(f"{name} must be positive and finite, got {bad[:3].tolist()}")
    return arr.copy()


#: Largest lambda accepted: ``2 n lambda`` must stay finite.  Far below it
#: every lambda already gives the intercept-only fit (beta = 0).
MAX_LAMBDA = 1e200


def check_lambdas(lambdas, n, name="lambdas"):
    """Positive finite lambdas, sorted decreasing; R's default grid when None."""
    if lambdas is None:
        if n <= 10000:
            return 10.0 ** np.linspace(3, -3, 100)
        return 10.0 ** np.linspace(0, -7, 100)
    lam = check_positive_sequence(lambdas, name)
    if lam.max() > MAX_LAMBDA:
        raise ValueError(f"{name} must be at most {MAX_LAMBDA:g} (got {lam.max():.3g}): 2 n lambda would overflow, "
                         "and any lambda that large gives the intercept-only fit")
    if lam.min() < np.finfo(float).tiny:
        raise ValueError(f"{name} must be at least {np.finfo(float).tiny:.3g} (the smallest normal double), "
                         f"got {lam.min():.3g}: below it lambda carries no precision")
    return np.sort(lam)[::-1].copy()


def check_positive(value, name):
    return check_real(value, name, "positive")


#: Range of q the engine fits.  Outside it the curvature bound of Lemma 2,
#: M = (q+1)^2/q, exceeds 1e4, so each MM step moves the fit by less than
#: 1e-4 of the gradient and a path would end where it started; the loss is
#: then within 1e-4 of its limits (the hinge as q grows).
QVAL_RANGE = (1e-4, 1e4)


def check_qval(qval, name="qval"):
    # R resets qval <= 0 to 1 with a warning; we refuse, so that a typo never
    # silently fits a different model.
    q = check_real(qval, name, "positive")
    if not QVAL_RANGE[0] <= q <= QVAL_RANGE[1]:
        raise ValueError(f"{name} must lie in [{QVAL_RANGE[0]:g}, {QVAL_RANGE[1]:g}], got {q:g}: beyond it "
                         "M = (q+1)^2/q makes the majoriser's steps vanish (and V_q is within 1e-4 of its limit)")
    return q


def check_maxit(maxit, name="maxit"):
    return check_integer(maxit, name, 1)


def check_weights(wt, n, name="wt", y=None, classes=None):
    """Non-negative finite weights, one per row; with labels ``y`` (+-1) every
    class must keep a positive total weight."""
    if wt is None:
        return None
    arr = as_float_array(wt, name, "a sequence of non-negative numbers")
    if arr.ndim != 1 or arr.shape[0] != n:
        raise ValueError(f"{name} must have one entry per row of X ({n}), got shape {arr.shape}")
    if not np.isfinite(arr).all():
        raise ValueError(f"{name} contains NaN or infinite values")
    if (arr < 0).any():
        raise ValueError(f"{name} must be non-negative; found {int((arr < 0).sum())} negative entries")
    if not (arr > 0).any():
        raise ValueError(f"{name} must have at least one positive entry")
    if y is not None:
        for label, sign in zip(classes, (-1.0, 1.0)):
            if not (arr[y == sign] > 0).any():
                label = label.item() if hasattr(label, "item") else label
                raise ValueError(f"{name} gives class {label!r} no positive weight: DWD needs both classes")
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


def check_method(method, stop, accelerate=None, name="method", stop_name="stop", design=None, remote_rows=False):
    """The path solver: a registered name, or None for the engine's default for
    ``stop``, ``design`` and where the rows are (``remote_rows``: on a Dask
    cluster); it must implement the stopping rule ``stop``, be one the design
    supports and run where the rows are, and take the momentum option when
    ``accelerate`` is given (not None)."""
    chosen = default_method(stop, design, remote_rows) if method is None else method
    if not isinstance(chosen, str) or chosen not in method_names():
        raise ValueError(f"{name} must be one of {method_names()} or None, got {method!r}")
    if remote_rows and not runs_on_remote_rows(chosen):
        takers = [m for m in method_names() if runs_on_remote_rows(m)]
        raise ValueError(f"{name}={chosen!r} does not run on rows held by a Dask cluster; use {name} in {takers}")
    allowed = getattr(design, "path_methods", None)
    if allowed is not None and chosen not in allowed:
        raise ValueError(f"{name}={chosen!r} cannot fit the {design.selected_by}={design.name!r} design; "
                         f"it supports {name} in {list(allowed)}")
    rules, accelerates = method_settings(chosen)
    which = f"{name}={chosen!r}" + (f" (the default for {stop_name}={stop!r})" if method is None else "")
    if stop not in rules:
        others = [m for m in method_names() if stop in method_settings(m)[0]]
        raise ValueError(f"{which} implements {stop_name} in {list(rules)}, got {stop_name}={stop!r}; "
                         f"for {stop_name}={stop!r} use {name} in {others}")
    if accelerate is not None and not accelerates:
        takers = [m for m in method_names() if method_settings(m)[1]]
        raise ValueError(f"accelerate (momentum) is an option of {name} in {takers}; {which} has none: "
                         f"leave accelerate=None or pass {name}={takers[0]!r}")
    return chosen


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


def check_data(X, y, wt, accept_sparse=False):
    """The data of ``fit``, ``cv`` and ``tune``: ``(X, y_pm, classes, w)`` validated."""
    if is_dask_collection(X):  # X persisted on the cluster, y and wt chunked like it: kerndwd/_dask.py
        from ._dask import check_dask_data
        return check_dask_data(X, y, wt)
    X = check_matrix(X, "X", accept_sparse=accept_sparse)
    n = X.shape[0]
    y_pm, classes = encode_labels(y, n, "y")
    return X, y_pm, classes, check_weights(wt, n, "wt", y=y_pm, classes=classes)


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
    if accelerate is not None and not isinstance(accelerate, (bool, np.bool_)):
        raise TypeError(f"accelerate must be True, False or None, got {accelerate!r}")
    kern = default_kernel(kern, X, random_state)
    design = check_design(approx, solver, kern, design_options or {}, random_state)
    method = check_method(method, stop, accelerate, design=design, remote_rows=is_dask_collection(X))
    if accelerate is None:
        accelerate = stop == "kkt"  # momentum with the gradient rule; R's plain iteration with R's rule
    if _is_sparse(X) and not (kern.is_linear and design.name == "exact"):
        raise TypeError("sparse X is supported only by the exact linear kernel (vanilladot(), no approx or "
                        "solver): the other kernels form dense matrices anyway; pass X.toarray()")
    return Problem(X=X, y=y_pm, classes=classes, lambdas=lam, loss=DWDLoss(q, w), kern=kern, stop=stop,
                   eps=eps, maxit=maxit, accelerate=bool(accelerate), gam=gam, linear_rule=linear_rule,
                   design=design, method=method)


#: Why a lambda was abandoned with ``jerr = -(DIVERGED + l)`` (kerndwd.engine.loop.DIVERGED)
DIVERGED_WHY = ("the iteration left the finite numbers or raised the objective it must lower (an objective, "
                "coefficient or decision value overflowed, or rounding took over: the lambda, the weights or the "
                "scale of X or of the kernel are at the edge of double precision)")


def warn_not_converged(jerr, lambdas, maxit):
    l = jerr_lambda(jerr)
    if jerr_diverged(jerr):
        warnings.warn(
            f"fitting lambda #{l} = {lambdas[l - 1]:.6g} was abandoned: {DIVERGED_WHY}; "
            f"the {l - 1} finished lambda(s) are returned (jerr={jerr}). Rescale X or the weights, "
            "or use larger lambdas",
            DWDConvergenceWarning,
            stacklevel=3,
        )
        return
    warnings.warn(
        f"maxit={maxit} iterations (a budget for the whole path) ran out while fitting "
        f"lambda #{l} = {lambdas[l - 1]:.6g}, or rounding held the gradient above eps there; "
        f"the {l - 1} finished lambda(s) are returned (jerr={jerr})",
        DWDConvergenceWarning,
        stacklevel=3,
    )


def warn_folds(jerr, lambdas, maxit, q=None, stacklevel=3):
    """One warning naming every fold whose path ran out of ``maxit``."""
    bad = np.flatnonzero(jerr)
    if bad.size:
        where = "" if q is None else f" (q={q:g})"
        detail = ", ".join(f"fold {k + 1} at lambda #{jerr_lambda(jerr[k])} = {lambdas[jerr_lambda(jerr[k]) - 1]:.6g}"
                           + (" (non-finite: abandoned)" if jerr_diverged(jerr[k]) else "") for k in bad)
        warnings.warn(
            f"maxit={maxit} iterations ran out (or rounding held the gradient above eps, or the iteration "
            f"overflowed){where}: {detail}; "
            "their held-out predictions at "
            "that lambda and smaller ones are missing and left out of cvm and cvsd",
            DWDConvergenceWarning,
            stacklevel=stacklevel,
        )


def gap_words(rel):
    """``"up to 35% lower"`` for a gap bound that is 0.35 of the objective."""
    if rel >= 1.0:
        return "up to 100% lower (the bound does not exclude an optimum near 0)"
    return f"up to {100 * rel:.2g}% lower"


def warn_far_from_optimal(path):
    """One warning per path when R's rule left columns possibly far from optimal."""
    far = path.far_from_optimal
    if far.size:
        rel = path.gap_bound[far] / path.objective[far]
        worst = int(far[np.argmax(rel)])
        warnings.warn(
            f"R's stopping rule (stop='step', eps={path.eps:g}) returned {far.size} of {path.lambda_.size} "
            f"columns possibly far from the optimum: at lambda={path.lambda_[worst]:.4g} the optimal "
            f"objective may be {gap_words(rel.max())} than the returned one (a bound from the gradient: "
            "path.gap_bound). Fit with stop='kkt' (e.g. eps=1e-8) for optimal columns",
            DWDConvergenceWarning,
            stacklevel=4,
        )
