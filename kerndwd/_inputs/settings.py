"""The arguments of a face other than its data (:class:`Settings`, the estimators'
named kernels :class:`KernelSpec`), and the one validated
:class:`~kerndwd.engine.Problem` built from them and the data
(:func:`build_problem`)."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from scipy import linalg, sparse

from .._scalars import check_integer, check_real
from .._warnings import warn_slow_design
from ..engine import GAM_FIT, DWDLoss, Problem, make_design, resolve
from ..engine.capabilities import storage_of
from ..engine.chunked import ChunkedRows, is_dask_collection
from ..engine.designs.feature_bcd import FeatureAutoDesign, feature_block_design
from ..engine.kernel_checks import DEFINITENESS_SAMPLE, NEGATIVE_EIGENVALUE_RTOL
from ..kernels import SYMMETRY_RTOL, Kernel, _Precomputed, asymmetry, kernel_from_spec, rbfdot, sigest, userdot
from .arguments import check_kernel, check_lambdas, check_qval, seed_of
from .rows import float_matrix

__all__ = ["KERNELS", "KernelSpec", "Settings", "build_problem", "is_precomputed", "precomputed_rows"]


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


def is_precomputed(kernel):
    """Whether an estimator's ``kernel`` is ``"precomputed"`` (X is a Gram matrix)."""
    return isinstance(kernel, str) and kernel == "precomputed"


def precomputed_rows(K, n_train=None):
    """The rows that ``kernel="precomputed"`` fits and predicts on: each row of the
    Gram matrix ``K`` after its index among the training rows (-1 for new rows),
    which the precomputed kernel reads (:class:`kerndwd.kernels._Precomputed`).

    At fit (``n_train`` None) ``K`` must be square, finite, symmetric to
    :data:`kerndwd.kernels.SYMMETRY_RTOL` and positive semi-definite to
    rounding (on a principal submatrix of up to
    :data:`~kerndwd.engine.kernel_checks.DEFINITENESS_SAMPLE` rows spread
    evenly, as the designs check kernels); at predict it holds the kernel
    values of new rows against the ``n_train`` training rows.
    """
    what = "kernel='precomputed' takes X as"
    if sparse.issparse(K) or is_dask_collection(K):
        raise TypeError(f"{what} a dense Gram matrix in memory: sparse and Dask input are not supported (got "
                        f"{type(K).__name__}); pass a numpy array")
    K = float_matrix(K, "X")
    n = K.shape[0]
    if n_train is not None:
        if K.shape[1] != n_train:
            raise ValueError(f"{what} the kernel values of each row against the {n_train} training rows, shape "
                             f"(n_samples, {n_train}); got shape {K.shape}")
        return np.column_stack([np.full(n, -1.0), K])
    if K.shape[1] != n:
        raise ValueError(f"{what} the square Gram matrix of the training rows, shape (n_samples, n_samples); got "
                         f"shape {K.shape}")
    if asymmetry(K) > SYMMETRY_RTOL:
        raise ValueError(f"{what} a Gram matrix, which is symmetric; X[i, j] and X[j, i] differ by "
                         f"{asymmetry(K):.3g} of the largest entry")
    rows = np.unique(np.linspace(0, n - 1, min(n, DEFINITENESS_SAMPLE)).astype(int))
    e = linalg.eigvalsh(K[np.ix_(rows, rows)])
    if e.min() < -NEGATIVE_EIGENVALUE_RTOL * max(float(np.abs(e).max()), np.finfo(float).tiny):
        raise ValueError(f"{what} the Gram matrix of a positive semi-definite kernel; X has the eigenvalue "
                         f"{e.min():.3g} (largest {e.max():.3g}): DWD's penalty would be unbounded below")
    return np.column_stack([np.arange(n, dtype=float), K])


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

    @property
    def is_own(self):
        """Whether the kernel is the user's: ``"precomputed"`` or a function."""
        return is_precomputed(self.kernel) or (callable(self.kernel) and not isinstance(self.kernel, Kernel))

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
        if not isinstance(self.kernel, Kernel) and not self.is_own and (
                not isinstance(self.kernel, str) or self.kernel not in KERNELS):
            raise ValueError(f"kernel must be one of {list(KERNELS) + ['precomputed']}, a function kernel(X, Y) "
                             f"or a kernel object from kerndwd.kernels, got {self.kernel!r}")

    def resolve(self, X, sample_weight=None):
        """The kernlab kernel object on the rows ``X`` (for ``"precomputed"``, the rows
        of :func:`precomputed_rows`)."""
        self.check()
        if isinstance(self.kernel, Kernel):
            return self.kernel
        if is_precomputed(self.kernel):
            return _Precomputed()
        if callable(self.kernel):
            return userdot(self.kernel)
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
    if "verbose" in options:  # other libraries' name for it: not an option of any design
        raise TypeError("unexpected keyword argument verbose: to report the progress of a fit, "
                        f"pass {settings.name('progress')}=True")
    if approx is not None and solver == "bcd":  # the approximation by sweeps over blocks of its columns
        return feature_block_design(approx, options, random_state=seed_of(settings.random_state))
    if approx is not None and solver == "auto":  # its one system or its blocks, picked for the rows
        return FeatureAutoDesign(approx, random_state=seed_of(settings.random_state), **options)
    if approx is not None and solver is not None:
        raise ValueError(f"give approx or solver, not both, except solver='bcd' or 'auto' with approx (got "
                         f"approx={approx!r}, solver={solver!r})")
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
    named = _design(settings)
    # a chooser's memory= is the budget of what its pick keeps (a cached K, a float32 copy of it)
    design = named.for_rows(data.n, data.X.shape[1], kern, storage_of(data.X), data.weights is not None).within(
        named.memory)
    resolved = resolve(design, kern, storage_of(data.X), stop=settings.stop, eps=eps, method=settings.method,
                       accelerate=settings.accelerate, weighted=data.weights is not None,
                       names={k: settings.name(k) for k in ("stop", "eps", "method", "accelerate")})
    warn_slow_design(design, q, data.n, storage_of(data.X))  # before any pass
    return Problem(X=data.X, y=data.y, classes=data.classes, lambdas=lam, loss=DWDLoss(q, data.weights), kern=kern,
                   stop=resolved.stop, eps=resolved.eps, maxit=maxit, accelerate=resolved.accelerate,
                   gam=settings.gam, linear_rule=settings.linear_rule, design=design, method=resolved.method)
