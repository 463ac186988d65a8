"""The input layer: every face's input is validated here, once, into one :class:`Problem`.

``kerndwd.fit``, ``cv``, ``tune``, ``predict`` and both estimators validate
their data with :func:`check_data` (or :func:`check_matrix` for new rows)
and their other arguments with :func:`build_problem`, which reads the
declared capabilities of the design and the path solver through the
engine's one compatibility check (:func:`kerndwd.engine.resolve`).  The
same bad input therefore gets the same message from every face.  Each entry
sends a Dask collection to :mod:`kerndwd._inputs_dask` (which checks the
rows, labels and weights lazily and places them on the workers once) and
rows in memory, dense, sparse or pandas, to :mod:`kerndwd._data`, whose
checks of labels and weights both use, in the same words.

Every error names the argument, with the face's own name for it (``lambd``
and ``max_iter`` for the estimators).  Nothing here modifies its input:
arrays are converted (and copied where a conversion is needed), never
written to.
"""

from __future__ import annotations

import numbers
import warnings
from dataclasses import dataclass, field

import numpy as np
from scipy import sparse

from . import _inputs_dask as dask_inputs
from ._data import (MAX_ABS_X, Data, as_float_array, binary_data, check_weights, classifier_data, encode_labels,
                    float_matrix)
from ._scalars import check_integer, check_real
from .engine import GAM_FIT, DWDLoss, Problem, make_design, resolve
from .engine.designs.feature_bcd import feature_block_design
from .engine.capabilities import storage_of
from .engine.chunked import ChunkedRows, is_dask_collection
from .kernels import Kernel, kernel_from_spec, rbfdot, sigest

__all__ = ["check_matrix", "check_data", "encode_labels", "check_weights", "check_lambdas", "check_qval",
           "check_qvals", "check_n_jobs", "check_flag", "check_kernel", "check_positive_sequence", "Data", "Settings",
           "KernelSpec", "build_problem", "check_classifier_data", "seed_of", "MAX_ABS_X", "MAX_LAMBDA", "QVAL_RANGE", "KERNELS"]

#: Largest lambda accepted: ``2 n lambda`` must stay finite.  Far below it
#: every lambda already gives the intercept-only fit (beta = 0).
MAX_LAMBDA = 1e200

#: Range of q the engine fits.  Outside it the curvature bound of Lemma 2,
#: M = (q+1)^2/q, exceeds 1e4, so each MM step moves the fit by less than
#: 1e-4 of the gradient and a path would end where it started; the loss is
#: then within 1e-4 of its limits (the hinge as q grows).
QVAL_RANGE = (1e-4, 1e4)

#: The smallest normal double, the smallest lambda accepted.
_TINY = float(np.finfo(float).tiny)


# --------------------------------------------------------------------------
# arrays
# --------------------------------------------------------------------------
def _held_by_dask(obj):
    """Whether ``obj`` is a Dask collection (Dask's own test, without importing Dask)."""
    graph = getattr(type(obj), "__dask_graph__", None)
    return callable(graph) and obj.__dask_graph__() is not None


def check_matrix(X, name="X"):
    """Validated rows: a finite 2-D float64 array (C order) from an array, a list or
    a pandas DataFrame; a CSR matrix of floats from a scipy sparse matrix (which
    designs take it is the compatibility check's: the message names ``X``); a
    lazy Dask array from a Dask collection (new rows to predict: their values
    are checked in each chunk's task).

    Parameters
    ----------
    X : array_like, DataFrame, sparse matrix or Dask collection
    name : str
        The argument's name, for the errors.

    Returns
    -------
    ndarray, scipy.sparse.csr_matrix or dask.array.Array
    """
    if _held_by_dask(X):
        return dask_inputs.check_dask_matrix(X, name)
    return float_matrix(X, name)


# --------------------------------------------------------------------------
# the data of a fit
# --------------------------------------------------------------------------
def check_data(X, y, wt=None, *, names=None):
    """The data of ``fit``, ``cv`` and ``tune`` (binary DWD): rows, two labels
    mapped to -1/+1 in R's order, and optional weights.

    Parameters
    ----------
    X : array_like, DataFrame, sparse matrix or Dask collection, shape (n, p)
    y : array_like, Series or Dask collection, shape (n,)
    wt : array_like, Dask collection or None
    names : dict, optional
        The face's names for ``"X"``, ``"y"``, ``"wt"``.

    Returns
    -------
    Data
    """
    names = {"X": "X", "y": "y", "wt": "wt", **(names or {})}
    if _held_by_dask(X):
        return dask_inputs.dask_binary_data(X, y, wt, names)
    return binary_data(X, y, wt, names)


def check_classifier_data(X, y, sample_weight=None, class_weight=None):
    """The data of the estimators: rows, any number (two or more) of classes, and
    the weights ``sample_weight`` times ``class_weight`` in R's scaling.

    The R package minimises ``(1/n) sum_i w_i V_q + lambda ||f||^2``; the
    weights ``w = s n / sum(s)`` (``s`` the product of the two weights) turn
    it into ``(1/sum(s)) sum_i s_i V_q + ...``, in which repeating a row and
    doubling its weight are the same problem.  In memory, rows of zero weight
    (which add nothing to the objective and whose kernel coefficients vanish
    at the optimum) are dropped first; on a cluster they are kept, which
    gives the same objective.

    Returns
    -------
    Data
        ``targets`` are one-vs-rest for more than two classes, one target
        (``classes[1]`` is +1) for two.
    """
    from sklearn.exceptions import DataConversionWarning  # the estimators need scikit-learn anyway

    if _held_by_dask(X):
        return dask_inputs.dask_classifier_data(X, y, sample_weight, class_weight)
    return classifier_data(X, y, sample_weight, class_weight, DataConversionWarning)


# --------------------------------------------------------------------------
# scalars and sequences
# --------------------------------------------------------------------------
def check_positive_sequence(values, name, what="positive numbers"):
    """A non-empty 1-D float array of positive finite entries (a copy, order kept).
    Booleans are refused: ``True`` is not a lambda."""
    if isinstance(values, (str, bytes)):
        raise TypeError(f"{name} must be a sequence of {what}, got a string")
    if isinstance(values, (bool, np.bool_)) or (isinstance(values, np.ndarray) and values.dtype == bool) or (
            isinstance(values, (list, tuple)) and any(isinstance(v, (bool, np.bool_)) for v in values)):
        raise TypeError(f"{name} must be a sequence of {what}, got booleans")
    arr = as_float_array(values, name, f"a sequence of {what}")
    if arr.ndim == 0:
        arr = arr.reshape(1)
    if arr.ndim != 1 or arr.size == 0:
        raise ValueError(f"{name} must be a non-empty 1-D sequence of {what}")
    if not (arr.min() > 0 and arr.max() < np.inf):  # NaN fails both
        bad = arr[~(np.isfinite(arr) & (arr > 0))]
        raise ValueError(f"{name} must be positive and finite, got {bad[:3].tolist()}")
    return arr.copy()


def check_lambdas(lambdas, n, name="lambdas"):
    """Positive finite lambdas, sorted decreasing (with a warning when they came in
    another order: the path's columns follow the sorted order); R's default grid
    when None."""
    if lambdas is None:
        if n <= 10000:
            return 10.0 ** np.linspace(3, -3, 100)
        return 10.0 ** np.linspace(0, -7, 100)
    lam = check_positive_sequence(lambdas, name)  # a copy: returned as it is when already decreasing
    decreasing = lam.size == 1 or bool((lam[:-1] >= lam[1:]).all())
    ordered = lam if decreasing else np.sort(lam)[::-1].copy()
    if ordered[0] > MAX_LAMBDA:
        raise ValueError(f"{name} must be at most {MAX_LAMBDA:g} (got {ordered[0]:.3g}): 2 n lambda would overflow, "
                         "and any lambda that large gives the intercept-only fit")
    if ordered[-1] < _TINY:
        raise ValueError(f"{name} must be at least {_TINY:.3g} (the smallest normal double), "
                         f"got {ordered[-1]:.3g}: below it lambda carries no precision")
    if not decreasing:
        warnings.warn(f"{name} were sorted decreasing, as the path is fitted (warm starts from large to small "
                      f"lambda): column j of the result is at path.lambda_[j], not at the j-th lambda given",
                      UserWarning, stacklevel=4)
    return ordered


def check_qval(qval, name="qval"):
    # R resets qval <= 0 to 1 with a warning; we refuse, so that a typo never
    # silently fits a different model.
    q = check_real(qval, name, "positive")
    if not QVAL_RANGE[0] <= q <= QVAL_RANGE[1]:
        raise ValueError(f"{name} must lie in [{QVAL_RANGE[0]:g}, {QVAL_RANGE[1]:g}], got {q:g}: beyond it "
                         "M = (q+1)^2/q makes the majoriser's steps vanish (and V_q is within 1e-4 of its limit)")
    return q


def check_qvals(qvals, name="qvals"):
    """Loss exponents q, each in :data:`QVAL_RANGE`, in the order given."""
    qs = check_positive_sequence(qvals, name, "positive numbers (the loss needs q > 0)")
    for q in qs:
        check_qval(float(q), name)
    return qs


def check_n_jobs(n_jobs):
    if n_jobs is None:
        return 1
    if not isinstance(n_jobs, numbers.Integral) or isinstance(n_jobs, bool) or n_jobs == 0:
        raise ValueError(f"n_jobs must be None or a non-zero integer (-1 = all cores), got {n_jobs!r}")
    return int(n_jobs)


def check_flag(value, name):
    """``value`` as a bool: True or False (numpy's included), else ``TypeError`` naming it."""
    if not isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{name} must be True or False, got {value!r}")
    return bool(value)


def check_kernel(kern, name="kern"):
    if not isinstance(kern, Kernel):
        raise TypeError(
            f"{name} must be a kernel object such as kerndwd.rbfdot(sigma=1) or kerndwd.vanilladot(), "
            f"got {type(kern).__name__}"
        )
    return kern


# --------------------------------------------------------------------------
# kernels named as scikit-learn names them
# --------------------------------------------------------------------------
#: scikit-learn-style kernel names -> (kernlab's name, the estimator's
#: parameters that kernel takes, as (kernlab's name, estimator's name))
KERNELS = {
    "linear": ("vanilladot", ()),
    "rbf": ("rbfdot", (("sigma", "gamma"),)),
    "laplace": ("laplacedot", (("sigma", "gamma"),)),
    "poly": ("polydot", (("degree", "degree"), ("scale", "gamma"), ("offset", "coef0"))),
    "bessel": ("besseldot", (("sigma", "gamma"), ("order", "order"), ("degree", "degree"))),
    "anova": ("anovadot", (("sigma", "gamma"), ("degree", "degree"))),
    "spline": ("splinedot", ()),
}


def seed_of(random_state):
    """``random_state`` for numpy's ``default_rng``: ints, Generators and None
    pass through (so the numbers equal :func:`kerndwd.cv`/``sigest`` with the
    same seed); a legacy ``RandomState`` gives a seed drawn from it."""
    if isinstance(random_state, np.random.RandomState):
        return int(random_state.randint(np.iinfo(np.int32).max))
    return random_state


def _weighted_var(X, rw):
    """The variance of all entries of ``X``, rows weighted by the column ``rw``."""
    if sparse.issparse(X):  # E[x^2] - E[x]^2, never densified
        total = rw.sum() * X.shape[1]
        mean = float(X.multiply(rw).sum() / total)
        return float(X.multiply(X).multiply(rw).sum() / total - mean * mean)
    mean = float((rw * X).sum() / (rw.sum() * X.shape[1]))
    return float((rw * (X - mean) ** 2).sum() / (rw.sum() * X.shape[1]))


@dataclass(frozen=True)
class KernelSpec:
    """A kernel as the estimators name it (``kernel="rbf", gamma="scale"``),
    resolved to a kernlab kernel on the rows it is fitted on."""

    kernel: object = "linear"
    gamma: object = "scale"
    degree: object = 3
    coef0: object = 0.0
    order: object = 1.0
    random_state: object = None

    @property
    def is_linear(self):
        if isinstance(self.kernel, Kernel):
            return bool(self.kernel.is_linear)
        return isinstance(self.kernel, str) and self.kernel == "linear"

    def _gamma(self, X, sample_weight):
        """``gamma`` as a number: ``"scale"`` is ``1 / (p var(X))``, with the variance
        of all entries of ``X`` weighted by ``sample_weight`` per row when given (so
        that an integer weight and a repeated row give the same kernel);
        ``"sigest"`` is the R package's data-driven value."""
        if isinstance(self.gamma, str) and self.gamma == "scale":
            if sample_weight is None:
                var = _weighted_var(X, np.ones((X.shape[0], 1))) if sparse.issparse(X) else float(X.var())
            else:
                rw = (sample_weight.to_dask() if isinstance(sample_weight, ChunkedRows) else sample_weight)[:, None]
                with np.errstate(over="ignore", invalid="ignore"):
                    var = _weighted_var(X, rw)
                    if not np.isfinite(var):  # weights times X beyond double precision: only their ratios matter
                        var = _weighted_var(X, rw / rw.max())
            if not var > 0:
                return 1.0
            gamma = 1.0 / (X.shape[1] * var)
            if not (np.isfinite(gamma) and gamma > 0):  # a spread beyond double precision either way
                raise ValueError(f"gamma='scale' is 1 / (n_features * X.var()) with X.var() = {var:.3g}: its "
                                 "reciprocal is beyond double precision; rescale X (e.g. standardise its columns) "
                                 "or give gamma as a number")
            return gamma
        if isinstance(self.gamma, str) and self.gamma == "sigest":
            if is_dask_collection(X):
                raise ValueError("gamma='sigest' reads pairs of rows from all of X, which a Dask X keeps on the "
                                 "cluster; give gamma a number (e.g. sigest of a sample) or 'scale'")
            return sigest(X, random_state=seed_of(self.random_state))
        if isinstance(self.gamma, str):
            raise TypeError(f"gamma must be a real number or one of ['scale', 'sigest'], got {self.gamma!r}")
        return check_real(self.gamma, "gamma", "positive")

    def check(self):
        """Refuse an unknown kernel name before any data is read."""
        if not isinstance(self.kernel, Kernel) and (not isinstance(self.kernel, str) or self.kernel not in KERNELS):
            raise ValueError(f"kernel must be one of {list(KERNELS)} or a kernel object from kerndwd.kernels, "
                             f"got {self.kernel!r}")

    def resolve(self, X, sample_weight=None):
        """The kernlab kernel object on the rows ``X``."""
        self.check()
        if isinstance(self.kernel, Kernel):
            return self.kernel
        name, params = KERNELS[self.kernel]
        spec = {"name": name}
        for kernlab_name, own_name in params:
            if own_name == "gamma":
                spec[kernlab_name] = self._gamma(X, sample_weight)
            elif own_name == "degree":
                spec[kernlab_name] = check_integer(self.degree, "degree")
            else:  # coef0 (polydot's offset) and order are non-negative
                spec[kernlab_name] = check_real(getattr(self, own_name), own_name, "nonneg")
        return kernel_from_spec(spec)


# --------------------------------------------------------------------------
# the problem
# --------------------------------------------------------------------------
@dataclass(frozen=True)
class Settings:
    """The arguments of a face other than its data, as given (None: the default).

    ``kern`` is a kernel object, None (R's default ``rbfdot(sigma = sigest(x))``)
    or a :class:`KernelSpec`; ``names`` maps each argument to the face's own
    name for it (``{"lambdas": "lambd", "qval": "q", ...}``), for the errors.
    """

    lambdas: object = None
    kern: object = None
    qval: object = 1.0
    eps: object = None
    maxit: object = 100000
    stop: object = None
    accelerate: object = None
    method: object = None
    approx: object = None
    solver: object = None
    design_options: dict = field(default_factory=dict)
    random_state: object = None
    gam: float = GAM_FIT
    linear_rule: str = "kerndwd"
    names: dict = field(default_factory=dict)

    def name(self, argument):
        return self.names.get(argument, argument)


def _design(settings):
    approx, solver, options = settings.approx, settings.solver, settings.design_options or {}
    if approx is not None and solver == "bcd":  # the approximation by sweeps over blocks of its columns
        return feature_block_design(approx, options, random_state=seed_of(settings.random_state))
    if approx is not None and solver is not None:
        raise ValueError(f"give approx or solver, not both, except solver='bcd' with approx (got approx={approx!r}, "
                         f"solver={solver!r})")
    if approx is None and solver is None and options:
        raise TypeError(f"unexpected keyword argument(s) {', '.join(sorted(options))}: "
                        "design options are accepted only together with approx= or solver=")
    if approx is None and solver is None and settings.stop == "kkt":
        solver = "auto"  # R's solver keeps R's rule; asked for the gradient rule, the fastest exact route
    argument, name = ("approx", approx) if approx is not None else ("solver", solver)
    return make_design(name, options, argument=argument, random_state=seed_of(settings.random_state))


def _kernel(settings, data):
    kern = settings.kern
    if isinstance(kern, KernelSpec):
        return kern.resolve(data.X, data.sample_weight)
    if kern is None:  # R's default kernel: rbfdot(sigma = sigest(x))
        if is_dask_collection(data.X):
            raise TypeError(f"{settings.name('kern')} must be given for a Dask X: the default "
                            "rbfdot(sigma=sigest(X)) draws pairs from all rows; pass a kernel, e.g. "
                            "rbfdot(sigma=sigest(sample)) or vanilladot()")
        if sparse.issparse(data.X):
            raise TypeError(f"{settings.name('kern')} must be given for a sparse X (the default rbf kernel needs "
                            "dense rows): pass kern=vanilladot() for linear DWD on the sparse rows")
        return rbfdot(sigma=sigest(data.X, random_state=settings.random_state))
    return check_kernel(kern, settings.name("kern"))


def build_problem(data, settings):
    """One validated :class:`~kerndwd.engine.Problem` from the face's data and settings.

    The scalar arguments are checked and the design is built; the kernel is
    resolved on the rows (R's default ``rbfdot(sigma=sigest(X))``, drawn from
    ``settings.random_state``, or the estimators' named kernels); then the
    engine's compatibility check (:func:`kerndwd.engine.resolve`) reads the
    design's and the path solver's declared capabilities, fills in the
    defaults (R's rule where R fits the same model) and refuses by argument
    name what they do not allow.

    Parameters
    ----------
    data : Data
    settings : Settings

    Returns
    -------
    Problem
    """
    lam = check_lambdas(settings.lambdas, data.n, settings.name("lambdas"))
    q = check_qval(settings.qval, settings.name("qval"))
    eps = None if settings.eps is None else check_real(settings.eps, settings.name("eps"), "positive")
    maxit = check_integer(settings.maxit, settings.name("maxit"), 1)
    kern = _kernel(settings, data)  # first: R's default kernel draws sigest's pairs before a design draws
    design = _design(settings).for_rows(data.n, data.X.shape[1], kern, storage_of(data.X), data.weights is not None)
    resolved = resolve(design, kern, storage_of(data.X), stop=settings.stop, eps=eps, method=settings.method,
                       accelerate=settings.accelerate, weighted=data.weights is not None,
                       names={k: settings.name(k) for k in ("stop", "eps", "method", "accelerate")})
    return Problem(X=data.X, y=data.y, classes=data.classes, lambdas=lam, loss=DWDLoss(q, data.weights), kern=kern,
                   stop=resolved.stop, eps=resolved.eps, maxit=maxit, accelerate=resolved.accelerate,
                   gam=settings.gam, linear_rule=settings.linear_rule, design=design, method=resolved.method)
