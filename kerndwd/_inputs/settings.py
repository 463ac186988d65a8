"""The arguments of a face other than its data (:class:`Settings`, the estimators'
named kernels :class:`KernelSpec`), and the one validated
:class:`~kerndwd.engine.Problem` built from them and the data
(:func:`build_problem`)."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from scipy import sparse

from .._scalars import check_integer, check_real
from .._warnings import warn_slow_design
from ..engine import GAM_FIT, DWDLoss, Problem, make_design, resolve
from ..engine.capabilities import storage_of
from ..engine.chunked import ChunkedRows, is_dask_collection
from ..engine.designs.feature_bcd import FeatureAutoDesign, feature_block_design
from ..kernels import Kernel, kernel_from_spec, rbfdot, sigest
from .arguments import check_kernel, check_lambdas, check_qval, seed_of

__all__ = ["KERNELS", "KernelSpec", "Settings", "build_problem"]


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
