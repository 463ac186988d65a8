"""Call R from Python (rpy2): kernlab's kernels and SVM, and the R package kerndwd.

Everything goes in as numpy arrays and comes back as numpy arrays (or dicts
of them).  Nothing here imports :mod:`kerndwd` (the Python port): the bridge
is a second, independent source of numbers.

Kernels are given as the fixtures give them, ``{"name": "rbfdot",
"sigma": 0.5}``, with R's constructor names and parameter names.

When a piece is missing -- the Python package rpy2, a working R, or one of
the R packages -- every entry point raises :class:`RBridgeUnavailable`,
whose ``missing`` attribute names that piece; callers (the validation
suite, the tests) report the check as skipped with that reason.
"""

from __future__ import annotations

import functools
import os

import numpy as np

__all__ = [
    "KERNLAB_KERNELS",
    "RBridgeUnavailable",
    "kerndwd_cv",
    "kerndwd_fit",
    "kerndwd_predict",
    "kerndwd_tunedwd",
    "kernlab_kernel_matrix",
    "ksvm_fit",
    "ksvm_predict",
    "ksvm_seconds",
    "r_package_version",
    "require",
]

#: kernlab's kernel constructors and their parameters (R's names and defaults).
KERNLAB_KERNELS = {
    "vanilladot": {},
    "rbfdot": {"sigma": 1.0},
    "laplacedot": {"sigma": 1.0},
    "polydot": {"degree": 1, "scale": 1.0, "offset": 1.0},
    "besseldot": {"sigma": 1.0, "order": 1, "degree": 1},
    "anovadot": {"sigma": 1.0, "degree": 1},
    "splinedot": {},
}
# Parameters R wants as integers.
_INTEGER_PARAMS = {"degree", "order"}


class RBridgeUnavailable(RuntimeError):
    """A piece the R bridge needs is missing.

    ``missing`` is one of ``"rpy2"``, ``"R"`` or ``"R package <name>"``;
    the message says how to install it.
    """

    def __init__(self, missing, detail=""):
        self.missing = missing
        hints = {
            "rpy2": "pip install 'rpy2<3.6'",
            "R": "install R (Debian: apt-get install r-base-core)",
        }
        if missing.startswith("R package "):
            pkg = missing[len("R package "):]
            hint = ("apt-get install r-cran-kernlab" if pkg == "kernlab"
                    else f'in R: install.packages("{pkg}")')
        else:
            hint = hints.get(missing, "")
        msg = f"R bridge unavailable: {missing} is missing"
        if hint:
            msg += f" ({hint})"
        if detail:
            msg += f": {detail}"
        super().__init__(msg)


@functools.lru_cache(maxsize=None)
def _robjects():
    try:
        import rpy2  # noqa: F401
    except ImportError as exc:
        raise RBridgeUnavailable("rpy2", str(exc)) from None
    # Starting R sets R_HOME and LD_LIBRARY_PATH in this process's environment;
    # R needs them only while it loads.  Put the environment back, so that a
    # Python started later as a subprocess does not pick up R's libraries
    # (a system libpython among them) instead of its own.
    saved = dict(os.environ)
    try:
        import rpy2.robjects as ro
    except Exception as exc:  # rpy2 raises various errors when libR cannot be found
        raise RBridgeUnavailable("R", f"{type(exc).__name__}: {exc}") from None
    finally:
        for key in set(os.environ) - set(saved):
            del os.environ[key]
        os.environ.update(saved)
    return ro


class _Namespace:
    """An attached R package: ``ns("kernelMatrix")`` is its exported function."""

    def __init__(self, name):
        self.name = name

    def __call__(self, fname):
        ro = _robjects()
        return ro.r["getExportedValue"](self.name, fname)


@functools.lru_cache(maxsize=None)
def _package(name):
    ro = _robjects()
    # system.file() answers quietly (rpy2's isinstalled()/importr() make R
    # print warnings about empty site libraries)
    if not ro.r["nzchar"](ro.r["system.file"](package=name))[0]:
        raise RBridgeUnavailable(f"R package {name}")
    try:
        ro.r(f'suppressWarnings(suppressPackageStartupMessages(library("{name}", character.only=TRUE)))')
    except Exception as exc:
        raise RBridgeUnavailable(f"R package {name}", f"it failed to load: {exc}") from None
    return _Namespace(name)


def require(package=None):
    """Check that rpy2 and R (and the R ``package``, when named) are usable.

    Raises :class:`RBridgeUnavailable` naming the first missing piece;
    returns the R version string otherwise.
    """
    ro = _robjects()
    if package is not None:
        _package(package)
    return str(ro.r("R.version.string")[0])


# --------------------------------------------------------------------------
# conversions
# --------------------------------------------------------------------------
def _matrix(x):
    ro = _robjects()
    x = np.asarray(x, dtype=float)
    if x.ndim == 1:
        x = x[:, None]
    if x.ndim != 2:
        raise ValueError(f"expected a 2-D array, got shape {x.shape}")
    return ro.r["matrix"](ro.FloatVector(x.ravel(order="F")), nrow=x.shape[0], ncol=x.shape[1])


def _vector(v):
    ro = _robjects()
    return ro.FloatVector(np.asarray(v, dtype=float).ravel())


def _to_numpy(obj):
    """An R numeric vector or matrix as a float ndarray (matrices keep their shape)."""
    ro = _robjects()
    dim = ro.r["dim"](obj)
    values = np.array(ro.r["as.numeric"](obj), dtype=float)
    if dim is ro.NULL or len(dim) == 0:
        return values
    return values.reshape(tuple(int(d) for d in dim), order="F")


def _to_python(obj):
    """An R value (list, vector, matrix, NULL) as Python: dicts, ndarrays, scalars."""
    ro = _robjects()
    if obj is ro.NULL:
        return None
    rclass = list(ro.r["class"](obj))
    if isinstance(obj, ro.vectors.ListVector) or "list" in rclass:
        names = ro.r["names"](obj)
        keys = list(names) if names is not ro.NULL else [str(i) for i in range(len(obj))]
        return {k: _to_python(v) for k, v in zip(keys, obj)}
    if isinstance(obj, ro.vectors.StrVector):
        vals = list(obj)
        return vals[0] if len(vals) == 1 else vals
    try:
        arr = _to_numpy(obj)
    except Exception:
        return str(obj)
    return arr


def _kernel_args(spec):
    spec = dict(spec)
    name = spec.pop("name", None)
    if name not in KERNLAB_KERNELS:
        raise ValueError(f"kernel name must be one of {sorted(KERNLAB_KERNELS)}, got {name!r}")
    unknown = set(spec) - set(KERNLAB_KERNELS[name])
    if unknown:
        raise ValueError(f"{name} has no parameter(s) {sorted(unknown)}; it takes {sorted(KERNLAB_KERNELS[name])}")
    args = {}
    for key, value in spec.items():
        args[key] = int(value) if key in _INTEGER_PARAMS else float(value)
    return name, args


def _kernel(package, spec):
    """The R kernel object ``package::name(...)`` for a kernel spec."""
    name, args = _kernel_args(spec)
    pkg = _package(package)
    return pkg(name)(**args)


def _labels(y):
    ro = _robjects()
    y = np.asarray(y, dtype=float).ravel()
    if not np.isin(y, (-1.0, 1.0)).all():
        raise ValueError("y must hold labels -1 and +1")
    return ro.r["factor"](ro.FloatVector(y), levels=ro.FloatVector([-1.0, 1.0]))


# --------------------------------------------------------------------------
# kernlab
# --------------------------------------------------------------------------
def kernlab_kernel_matrix(spec, x, y=None):
    """``kernlab::kernelMatrix(kern, x[, y])`` as an (n, m) ndarray.

    ``spec`` is ``{"name": <kernlab constructor>, ...parameters}``; every one
    of kernlab's seven kernels in :data:`KERNLAB_KERNELS` is accepted.
    """
    kernlab = _package("kernlab")
    kern = _kernel("kernlab", spec)
    if y is None:
        K = kernlab("kernelMatrix")(kern, _matrix(x))
    else:
        K = kernlab("kernelMatrix")(kern, _matrix(x), _matrix(y))
    return _to_numpy(K)


class KsvmModel:
    """A fitted ``kernlab::ksvm`` (C-svc); pass it to :func:`ksvm_predict`.

    ``sign`` orients kernlab's decision values so that positive means +1:
    kernlab's own orientation follows its internal class order, so it is
    read off once, at fit time, from the training predictions.
    """

    def __init__(self, robj, spec, C, sign=1.0):
        self.robj = robj
        self.spec = dict(spec)
        self.C = C
        self.sign = sign

    @property
    def n_support(self):
        return int(_to_numpy(_robjects().r["nSV"](self.robj))[0])

    def __repr__(self):
        return f"KsvmModel(kernel={self.spec}, C={self.C:g}, nSV={self.n_support})"


def _ksvm_raw(robj, newx, type):
    ro = _robjects()
    out = ro.r["predict"](robj, _matrix(newx), type=type)
    if type == "response":
        return np.array(ro.r["as.character"](out), dtype=float)
    return _to_numpy(out).ravel()


def ksvm_fit(X, y, spec, C=1.0, scaled=False, tol=1e-3):
    """Fit kernlab's C-classification SVM, ``ksvm(type="C-svc")``: (4.3).

    ``y`` in {-1, +1}; ``scaled=False`` by default so that the kernel sees
    the data as given (kernlab scales by default).  Returns a
    :class:`KsvmModel`.
    """
    kernlab = _package("kernlab")
    ro = _robjects()
    kern = _kernel("kernlab", spec)
    X = np.asarray(X, dtype=float)
    C = float(C)
    if not np.isfinite(C) or C <= 0:
        raise ValueError(f"C must be positive and finite, got {C!r}")
    model = kernlab("ksvm")(x=_matrix(X), y=_labels(y), type="C-svc", kernel=kern, C=C,
                            scaled=ro.BoolVector([bool(scaled)]), tol=float(tol))
    dec = _ksvm_raw(model, X, "decision")
    resp = _ksvm_raw(model, X, "response")
    nz = dec != 0
    sign = 1.0 if not nz.any() or np.mean(np.sign(dec[nz]) == resp[nz]) >= 0.5 else -1.0
    return KsvmModel(model, spec, C, sign)


def ksvm_seconds(X, y, spec, costs, class_weights=None, train_sets=None):
    """Seconds R itself spends fitting kernlab's SVM at every cost.

    ``ksvm(type="C-svc", scaled=FALSE)`` is fitted at each cost in turn,
    timed by R's ``proc.time`` (1 ms resolution); the inputs are converted
    once, before the clock starts, so no rpy2 conversion is timed.

    Parameters
    ----------
    X : array_like, shape (n, p)
    y : array_like, shape (n,)
        Labels -1 and +1.
    spec : dict
        A kernlab kernel, ``{"name": ..., **parameters}`` (see :data:`KERNLAB_KERNELS`).
    costs : sequence of float
        Positive costs ``C``.
    class_weights : tuple of float, optional
        ``(weight of -1, weight of +1)``, passed as ``class.weights``.
    train_sets : list of array_like of int, optional
        Row indices (0-based) of training sets, each fitted at every cost
        (cross-validation folds); default all rows.

    Returns
    -------
    float
        Elapsed seconds of the whole loop.

    Raises
    ------
    RBridgeUnavailable
        When rpy2, R or kernlab is missing.
    ValueError
        When a cost is not positive and finite.

    Examples
    --------
    >>> import numpy as np
    >>> X = np.random.default_rng(0).standard_normal((40, 2))
    >>> y = np.where(X[:, 0] > 0, 1.0, -1.0)
    >>> ksvm_seconds(X, y, {"name": "rbfdot", "sigma": 1.0}, [0.1, 1.0]) >= 0  # doctest: +SKIP
    True
    """
    ro = _robjects()
    _package("kernlab")
    costs = [float(c) for c in np.atleast_1d(costs)]
    if not costs or not all(np.isfinite(c) and c > 0 for c in costs):
        raise ValueError("costs must be positive and finite")
    n = np.asarray(X).shape[0]
    sets = [np.arange(n)] if train_sets is None else [np.asarray(t, dtype=int) for t in train_sets]
    weights = ro.NULL
    if class_weights is not None:
        weights = ro.FloatVector([float(w) for w in class_weights])
        weights.names = ro.StrVector(["-1", "1"])
    timer = ro.r("""function(x, y, kern, costs, sets, weights) {
        start <- proc.time()[["elapsed"]]
        for (rows in sets) for (C in costs)
            kernlab::ksvm(x[rows, , drop = FALSE], y[rows], type = "C-svc", kernel = kern, C = C,
                          scaled = FALSE, class.weights = weights)
        proc.time()[["elapsed"]] - start
    }""")
    rsets = ro.r["list"](*[ro.IntVector((t + 1).tolist()) for t in sets])
    out = timer(_matrix(X), _labels(y), _kernel("kernlab", spec), ro.FloatVector(costs), rsets, weights)
    return float(_to_numpy(out)[0])


def ksvm_predict(model, newx, type="decision"):
    """Predictions of a :class:`KsvmModel` on ``newx``.

    ``type="decision"``: decision values, positive meaning +1, shape (m,);
    ``type="response"``: labels -1/+1.
    """
    if not isinstance(model, KsvmModel):
        raise TypeError(f"model must come from ksvm_fit, got {type(model).__name__}")
    if type not in ("decision", "response"):
        raise ValueError(f"type must be 'decision' or 'response', got {type!r}")
    _package("kernlab")
    out = _ksvm_raw(model.robj, newx, type)
    return out if type == "response" else model.sign * out


# --------------------------------------------------------------------------
# the R package kerndwd
# --------------------------------------------------------------------------
def _dwd_common(x, y, spec, lambdas):
    _package("kerndwd")
    ro = _robjects()
    kern = _kernel("kerndwd", spec)
    return _matrix(x), ro.FloatVector(np.asarray(y, dtype=float).ravel()), kern, _vector(lambdas)


def _wt(wt):
    ro = _robjects()
    return ro.NULL if wt is None else _vector(wt)


def kerndwd_fit(x, y, spec, lambdas, qval=1.0, wt=None, eps=1e-5, maxit=100000):
    """``kerndwd(x, y, kern, lambda, qval, wt, eps, maxit)`` in R.

    Returns ``dict(alpha, lambda, npass, jerr, r_fit)``: ``alpha`` as a
    ``(p+1) x L`` or ``(n+1) x L`` ndarray (intercept first), R's own
    ``lambda`` (see the fixture README for its one-element quirk),
    ``npass`` (int array), ``jerr`` (int), and the R object for
    :func:`kerndwd_predict`.
    """
    kerndwd = _package("kerndwd")
    ro = _robjects()
    rx, ry, kern, rlam = _dwd_common(x, y, spec, lambdas)
    fit = kerndwd("kerndwd")(rx, ry, kern, rlam, qval=float(qval), wt=_wt(wt), eps=float(eps),
                          maxit=float(maxit))
    get = functools.partial(ro.r["[["], fit)
    alpha = _to_numpy(get("alpha"))
    if alpha.ndim == 1:
        alpha = alpha[:, None]
    return dict(
        alpha=alpha,
        **{"lambda": np.atleast_1d(_to_numpy(get("lambda")))},
        npass=np.atleast_1d(_to_numpy(get("npass"))).astype(int),
        jerr=int(_to_numpy(get("jerr"))[0]),
        r_fit=fit,
    )


def kerndwd_predict(fit, x, newx, spec, type="link"):
    """``predict(fit, kern, x, newx, type)`` in R: an (m, L) ndarray.

    ``fit`` is the dict returned by :func:`kerndwd_fit`; ``x`` the training
    rows it was fitted on.
    """
    if type not in ("link", "class"):
        raise ValueError(f"type must be 'link' or 'class', got {type!r}")
    _package("kerndwd")
    ro = _robjects()
    kern = _kernel("kerndwd", spec)
    out = ro.r["predict"](fit["r_fit"], kern, _matrix(x), _matrix(newx), type=type)
    arr = _to_numpy(out)
    if arr.ndim == 1:
        arr = arr.reshape(np.asarray(newx).shape[0], -1)
    return arr


def kerndwd_cv(x, y, spec, lambdas, foldid, qval=1.0, wt=None, eps=1e-5, maxit=100000):
    """``cv.kerndwd(x, y, kern, lambda, foldid=foldid, wt, qval, eps, maxit)`` in R.

    ``foldid`` is 1-based, as in R.  Returns a dict with ``lambda``,
    ``cvm``, ``cvsd``, ``cvupper``, ``cvlower`` (ndarrays) and
    ``lambda.min``, ``lambda.1se``, ``cvm.min``, ``cvm.1se`` (floats).
    """
    kerndwd = _package("kerndwd")
    ro = _robjects()
    rx, ry, kern, rlam = _dwd_common(x, y, spec, lambdas)
    folds = ro.IntVector(np.asarray(foldid, dtype=int).ravel().tolist())
    res = kerndwd("cv.kerndwd")(rx, ry, kern, rlam, foldid=folds, wt=_wt(wt), qval=float(qval),
                             eps=float(eps), maxit=float(maxit))
    get = functools.partial(ro.r["[["], res)
    out = {k: np.atleast_1d(_to_numpy(get(k))) for k in ("lambda", "cvm", "cvsd", "cvupper", "cvlower")}
    for k in ("lambda.min", "lambda.1se"):
        out[k] = float(_to_numpy(get(k))[0])
    for k, lam_key in (("cvm.min", "lambda.min"), ("cvm.1se", "lambda.1se")):
        val = get(k)
        if val is ro.NULL:  # older versions do not return it: read it off the curve
            out[k] = float(out["cvm"][np.flatnonzero(out["lambda"] == out[lam_key])[0]])
        else:
            out[k] = float(_to_numpy(val)[0])
    return out


def kerndwd_tunedwd(x, y, spec, lambdas, qvals, foldid, eps=1e-5, maxit=100000):
    """``tunedwd(x, y, kern, lambda, qvals, eps, maxit, foldid=foldid)`` in R.

    Returns ``dict(lam.tune, q.tune, result)`` where ``result`` is the
    whole R return value converted to Python (nested dicts of ndarrays)
    for whatever per-q cross-validation results it carries.
    """
    kerndwd = _package("kerndwd")
    ro = _robjects()
    rx, ry, kern, rlam = _dwd_common(x, y, spec, lambdas)
    folds = ro.IntVector(np.asarray(foldid, dtype=int).ravel().tolist())
    res = kerndwd("tunedwd")(rx, ry, kern, rlam, qvals=_vector(qvals), eps=float(eps), maxit=float(maxit),
                          foldid=folds)
    get = functools.partial(ro.r["[["], res)
    return {
        "lam.tune": float(_to_numpy(get("lam.tune"))[0]),
        "q.tune": float(_to_numpy(get("q.tune"))[0]),
        "result": _to_python(res),
    }


def r_package_version(name):
    """The installed version of the R package ``name`` (raises if it is missing)."""
    _package(name)
    ro = _robjects()
    return str(ro.r["as.character"](ro.r["packageVersion"](name))[0])
