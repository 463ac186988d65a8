"""scikit-learn estimators over the DWD engine: :class:`DWDClassifier` and
:class:`DWDClassifierCV`.

They only validate and dispatch: each builds one validated
:class:`kerndwd.engine.Problem`; every fit is one run of the engine's path solver
on the majoriser the problem's design builds (shared by all one-vs-rest
classes), on a path of a single lambda; cross-validation is the engine's
core that :func:`kerndwd.cv` and :func:`kerndwd.tune` use.  No solver loop,
and no choice of solver, lives here.

Pickles of fitted estimators (and of :class:`kerndwd.DWDPath` objects)
restore identical predictions.  Unpickling runs arbitrary code: load pickles
only from sources you trust.
"""

from __future__ import annotations

import numbers
import warnings
from dataclasses import dataclass

import numpy as np
from scipy import sparse

from ._checks import (
    DIVERGED_WHY,
    _check_finite_and_scale,
    DWDConvergenceWarning,
    check_design,
    check_lambdas,
    check_method,
    check_n_jobs,
    check_qvals,
    check_stop,
    warn_folds,
)
from .engine import GAM_FIT, DWDLoss, FactorCache, Problem, build_majoriser, jerr_diverged, run_path
from .calibration import fit_platt, platt_probability
from .engine import crossval as core
from .engine.distributed import is_dask_collection
from ._scalars import check_integer, check_real
from .kernels import Kernel, kernel_from_spec, sigest

try:  # scikit-learn is an optional dependency (extra "sklearn")
    from sklearn.base import BaseEstimator, ClassifierMixin
    from sklearn.model_selection import check_cv
    from sklearn.utils._available_if import available_if
    from sklearn.utils.class_weight import compute_class_weight
    from sklearn.utils.multiclass import check_classification_targets
    from sklearn.utils.validation import _check_sample_weight, check_is_fitted, validate_data
except ImportError as exc:  # pragma: no cover - depends on the environment
    raise ImportError(
        "kerndwd's estimators need scikit-learn: pip install scikit-learn (or 'kerndwd[sklearn]')"
    ) from exc

__all__ = ["DWDClassifier", "DWDClassifierCV"]

#: Folds of the held-out decision values that ``probability=True`` calibrates on
#: (fewer when a class has fewer samples).
CALIBRATION_FOLDS = 5

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
KERNEL_NAMES = tuple(KERNELS)


# --------------------------------------------------------------------------
# shared pieces
# --------------------------------------------------------------------------
def _kernel_is_linear(kernel):
    if isinstance(kernel, Kernel):
        return bool(kernel.is_linear)
    return isinstance(kernel, str) and kernel == "linear"


def _seed(random_state):
    """``random_state`` for numpy's ``default_rng``: ints, Generators and None
    pass through (so the numbers equal :func:`kerndwd.cv`/``sigest`` with the
    same seed); a legacy ``RandomState`` gives a seed drawn from it."""
    if isinstance(random_state, np.random.RandomState):
        return int(random_state.randint(np.iinfo(np.int32).max))
    return random_state


def _weighted_var(X, rw):
    """The variance of all entries of ``X``, rows weighted by the column ``rw``."""
    mean = float((rw * X).sum() / (rw.sum() * X.shape[1]))
    return float((rw * (X - mean) ** 2).sum() / (rw.sum() * X.shape[1]))


def _gamma(est, X, sample_weight):
    """``est.gamma`` as a number: ``"scale"`` is ``1 / (p var(X))``, with the
    variance of all entries of ``X`` weighted by ``sample_weight`` per row
    when given (so that an integer weight and a repeated row give the same
    kernel); ``"sigest"`` is the R package's data-driven value."""
    if isinstance(est.gamma, str) and est.gamma == "scale":
        if sample_weight is None:
            var = float(X.var())
        else:
            rw = (sample_weight if is_dask_collection(sample_weight) else np.asarray(sample_weight, dtype=float))[:, None]
            with np.errstate(over="ignore", invalid="ignore"):
                var = _weighted_var(X, rw)
                if not np.isfinite(var):  # weights times X beyond double precision: only their ratios matter
                    var = _weighted_var(X, rw / rw.max())
        if not var > 0:
            return 1.0
        gamma = 1.0 / (X.shape[1] * var)
        if not (np.isfinite(gamma) and gamma > 0):  # a spread beyond double precision either way
            raise ValueError(f"gamma='scale' is 1 / (n_features * X.var()) with X.var() = {var:.3g}: its reciprocal is "
                             "beyond double precision; rescale X (e.g. standardise its columns) or give gamma as a number")
        return gamma
    if isinstance(est.gamma, str) and est.gamma == "sigest":
        return sigest(X, random_state=_seed(est.random_state)) if X.shape[0] >= 2 else 1.0
    if isinstance(est.gamma, str):
        raise TypeError(f"gamma must be a real number or one of ['scale', 'sigest'], got {est.gamma!r}")
    return check_real(est.gamma, "gamma", "positive")


def _kernel_from_params(est, X, sample_weight=None):
    """The kernlab kernel object for ``est.kernel`` and its scikit-learn parameters."""
    kernel = est.kernel
    if isinstance(kernel, Kernel):
        return kernel
    if not isinstance(kernel, str) or kernel not in KERNELS:
        raise ValueError(
            f"kernel must be one of {list(KERNEL_NAMES)} or a kernel object from kerndwd.kernels, got {kernel!r}"
        )
    name, params = KERNELS[kernel]
    spec = {"name": name}
    for kernlab_name, own_name in params:
        if own_name == "gamma":
            spec[kernlab_name] = _gamma(est, X, sample_weight)
        elif own_name == "degree":
            spec[kernlab_name] = check_integer(est.degree, "degree")
        else:  # coef0 (polydot's offset) and order are non-negative
            spec[kernlab_name] = check_real(getattr(est, own_name), own_name, "nonneg")
    return kernel_from_spec(spec)


def _validate_fit_input(est, X, y, sample_weight):
    """Validate the data of ``fit``.

    Returns ``(X, y, y_idx, classes, sw)`` with ``sw`` the per-row weights
    (``sample_weight`` times ``class_weight``; None when neither is given).
    Rows are not dropped here.
    """
    linear = _kernel_is_linear(est.kernel) and not isinstance(est, DWDClassifierCV)
    if sparse.issparse(X) and not linear:
        raise TypeError(
            f"{type(est).__name__} with kernel={est.kernel!r} does not support sparse input: "
            "sparse X is supported only by DWDClassifier with the linear kernel (a non-linear kernel "
            "needs the dense n x n kernel matrix anyway); pass X.toarray()"
        )
    X, y = validate_data(est, X, y, accept_sparse=("csr", "csc") if linear else False, dtype=np.float64,
                         ensure_min_samples=2)
    _check_finite_and_scale(X.data if sparse.issparse(X) else X, "X")
    check_classification_targets(y)
    classes, y_idx = np.unique(y, return_inverse=True)
    if classes.size < 2:
        raise ValueError(
            f"{type(est).__name__} needs samples of at least 2 classes in the data, but the data "
            f"contains only one class: {classes[0]!r}"
        )
    if sample_weight is None and est.class_weight is None:
        return X, y, y_idx, classes, None
    try:
        sw = _check_sample_weight(sample_weight, X, dtype=np.float64, ensure_non_negative=True, copy=True)
    except ValueError as exc:  # scikit-learn's words ("Sample weights must ...") name no argument
        raise ValueError(f"sample_weight: {exc}") from None
    if est.class_weight is not None:
        per_class = compute_class_weight(est.class_weight, classes=classes, y=y, sample_weight=sample_weight)
        if not (np.isfinite(per_class).all() and (per_class >= 0).all()):
            bad = {c: w for c, w in zip(classes.tolist(), per_class.tolist()) if not (np.isfinite(w) and w >= 0)}
            raise ValueError(f"class_weight must be non-negative and finite, got {bad}")
        with np.errstate(over="ignore"):
            sw = sw * per_class[y_idx]
        if not np.isfinite(sw).all():
            raise ValueError("sample_weight times class_weight overflows double precision (a product above "
                             "1.8e308); rescale sample_weight or class_weight (only their ratios matter)")
    return X, y, y_idx, classes, sw


def _drop_zero_weights(est, X, y_idx, classes, sw):
    """Drop rows of zero weight and map the weights to R's scaling.

    Zero-weight rows add nothing to the objective and their kernel
    coefficients vanish at the optimum.  The remaining weights become
    ``wt = sw * n_kept / sum(sw)`` (see ``DWDClassifier`` Notes).
    Returns ``(X, y_idx, wt, keep)``; ``keep`` is None when no row was dropped.
    """
    if sw is None:
        return X, y_idx, None, None
    if not (sw > 0).any():
        raise ValueError(f"{type(est).__name__} needs positive weight on some samples: sample_weight times "
                         "class_weight is zero everywhere")
    keep = sw > 0
    if keep.all():
        keep = None
    else:
        X, y_idx, sw = X[keep], y_idx[keep], sw[keep]
        present = np.unique(y_idx)
        if present.size < 2:
            raise ValueError(
                f"{type(est).__name__} needs samples of at least 2 classes with positive weight, "
                f"but only class {classes[present[0]]!r} has positive sample_weight"
            )
        if present.size < classes.size:
            missing = [classes[k] for k in range(classes.size) if k not in set(present.tolist())]
            raise ValueError(f"sample_weight and class_weight give class(es) {missing!r} no positive weight; "
                             "drop those classes from y or give them weight")
    sw = sw / sw.max()  # first to order 1: the sum below cannot overflow, whatever the scale
    return X, y_idx, sw * (sw.size / sw.sum()), keep


def _binary_targets(y_idx, n_classes):
    """+-1 labels of the binary problems: one for two classes (``classes_[1]``
    is +1, as R orders levels), else one-vs-rest per class."""
    if n_classes == 2:
        return [np.where(y_idx == 1, 1.0, -1.0)]
    return [np.where(y_idx == k, 1.0, -1.0) for k in range(n_classes)]


@dataclass
class _Data:
    """What ``_prepare`` returns: the validated rows (``X_all``, ``y_all``, before
    rows of zero weight are dropped, and ``X`` after), the classes, the +-1
    targets, R-scaled weights, the kernel and the design."""

    X_all: object
    y_all: np.ndarray
    X: object
    classes: np.ndarray
    targets: list
    weights: np.ndarray | None
    keep: np.ndarray | None
    kern: Kernel
    design: object


def _prepare(est, X, y, sample_weight):
    """Validate the data and the kernel and design parameters of ``est``, once."""
    if is_dask_collection(X):  # rows, labels and weights kept on the cluster: kerndwd/_dask.py
        from ._dask import prepare_dask_fit
        return prepare_dask_fit(est, X, y, sample_weight)
    X_all, y_all, y_idx, classes, sw = _validate_fit_input(est, X, y, sample_weight)
    raw_sw = None
    if sample_weight is not None:
        raw_sw = _check_sample_weight(sample_weight, X_all, dtype=np.float64)
    X, y_idx, w, keep = _drop_zero_weights(est, X_all, y_idx, classes, sw)
    if raw_sw is not None and keep is not None:
        raw_sw = raw_sw[keep]
    kern = _kernel_from_params(est, X, raw_sw)
    options = dict(est.design_options or {})
    if est.n_components is not None and est.approx is not None:  # like degree for rbf: ignored otherwise
        options["n_components"] = est.n_components
    design = check_design(est.approx, est.solver, kern, options, _seed(est.random_state))
    return _Data(X_all, y_all, X, classes, _binary_targets(y_idx, classes.size), w, keep, kern, design)


def _problem(est, data, lambdas, q, eps, stop, maxit, stop_name="stop"):
    """The validated problem of the first target (the others by ``with_labels``).
    ``accelerate`` (momentum) is read by the MM iteration only."""
    return Problem(X=data.X, y=data.targets[0], classes=data.classes, lambdas=np.asarray(lambdas, dtype=float),
                   loss=DWDLoss(q, data.weights), kern=data.kern, stop=stop, eps=eps, maxit=maxit,
                   accelerate=stop == "kkt", gam=GAM_FIT, design=data.design,
                   method=check_method(est.method, stop, stop_name=stop_name, design=data.design,
                                       remote_rows=is_dask_collection(data.X)))


# --------------------------------------------------------------------------
# DWDClassifier
# --------------------------------------------------------------------------
class DWDClassifier(ClassifierMixin, BaseEstimator):
    """Distance weighted discrimination at one ``lambda``, as a scikit-learn classifier.

    Minimises, for each binary problem,

        (1 / sum_i s_i) sum_i s_i V_q(y_i f(x_i)) + lambd ||f||^2,

    ``V_q`` the DWD loss of exponent ``q`` (Wang & Zou 2018, (2.3)),
    ``f = b + x'beta`` (linear kernel; ``||f||^2 = ||beta||^2``) or
    ``f = b + sum_j alpha_j k(x_j, x)`` (``||f||^2 = alpha'K alpha``), and
    ``s_i = sample_weight_i * class_weight[y_i]`` (all ones by default).

    Parameters
    ----------
    lambd : float, default 0.01
        The penalty ``lambda > 0`` (R's ``lambda``; larger = smoother).
    q : float, default 1.0
        The loss exponent ``q > 0`` (1 is classical DWD).
    kernel : str or Kernel, default "linear"
        ``"linear"`` (kernlab's ``vanilladot``), ``"rbf"`` (``rbfdot(sigma=gamma)``:
        ``exp(-gamma ||x - y||^2)``, as scikit-learn's), ``"poly"``
        (``polydot(degree, scale=gamma, offset=coef0)``: ``(gamma <x, y> + coef0)^degree``),
        ``"laplace"`` (``laplacedot(sigma=gamma)``: ``exp(-gamma ||x - y||)``,
        the Euclidean norm as in kernlab, not scikit-learn's L1 laplacian),
        ``"bessel"`` (``besseldot(sigma=gamma, order, degree)``), ``"anova"``
        (``anovadot(sigma=gamma, degree)``), ``"spline"`` (``splinedot()``), or
        a kernel object from :mod:`kerndwd.kernels` used as given.
    gamma : float, "scale" or "sigest", default "scale"
        Kernel scale.  ``"scale"``: ``1 / (n_features * X.var())`` (1 when
        ``X`` is constant), scikit-learn's SVC default.  ``"sigest"``: the R
        package's data-driven ``sigest(X)``, random unless ``random_state``
        is set.  Ignored by ``"linear"`` and ``"spline"``.
    degree : int, default 3
        Degree of ``"poly"``, ``"bessel"``, ``"anova"``.
    coef0 : float, default 0.0
        ``"poly"`` offset (kernlab's ``offset``, must be >= 0).
    order : float, default 1.0
        ``"bessel"`` order.
    class_weight : dict, "balanced" or None, default None
        Multiplies the sample weights per class; ``"balanced"`` uses
        ``n_samples / (n_classes * weighted class count)`` (weighted DWD for
        unequal class sizes and costs, Qiao et al. 2010).
    tol : float, default 1e-10
        Stopping tolerance.  With ``stop="kkt"`` (default) a fit stops when
        the Euclidean norm of the objective's gradient is ``<= tol``: a real
        optimality criterion, tight enough that integer sample weights and
        repeated rows give decision values equal to ~1e-9.  With
        ``stop="step"`` it is R's rule: stop when the squared norm of the MM
        step is ``< tol`` (R's default ``eps`` is 1e-5, which stops far from
        the optimum at small lambda).
    stop : {"kkt", "step"}, default "kkt"
        The stopping rule, see ``tol``.
    max_iter : int, default 100000
        Iterations allowed per binary problem (Newton iterations, or MM
        passes with ``method="mm"`` or ``stop="step"``).  When they run out
        (or Newton's gradient stalls above ``tol`` at the precision the data
        allow) a :class:`kerndwd.DWDConvergenceWarning` is issued and the
        last iterate is kept.
    random_state : int, numpy Generator or None
        Seeds ``gamma="sigest"`` and any random kernel approximation.
    method : str or None, default None
        The path solver (:func:`kerndwd.engine.method_names`): ``"newton"``
        (semismooth Newton, the default with ``stop="kkt"``; it refuses
        ``stop="step"`` with a ``ValueError`` at ``fit``) or ``"mm"`` (the
        MM iteration with momentum under ``stop="kkt"``; R's plain
        iteration, the default, under ``stop="step"``).
    approx : str or None, default None
        A kernel approximation registered with the engine
        (:func:`kerndwd.engine.design_names`), fitted instead of the exact
        kernel: ``"nystroem"`` (Nystrom features, any kernel) or ``"rff"``
        (random Fourier features, ``kernel="rbf"`` or ``"laplace"``).
    n_components : int or None, default None
        Size of the approximation (None: its default); ignored without ``approx``.
    solver : str or None, default None
        A registered solver of the exact kernel; default the R package's choice.
    design_options : dict or None, default None
        Further options of the ``approx`` or ``solver`` design, e.g.
        ``{"dtype": "float32", "landmarks": "kmeans++"}``.
    probability : bool, default False
        Enable :meth:`predict_proba`: at ``fit``, decision values of every
        sample are also computed by a model that did not see it (stratified
        5-fold cross-validation at the same ``lambd`` and ``q``, five more
        fits), and Platt's sigmoid is fitted to them
        (:mod:`kerndwd.calibration`), as ``SVC(probability=True)`` does.

    Attributes
    ----------
    classes_ : ndarray, shape (n_classes,)
        Sorted labels; in the binary case ``classes_[1]`` is the positive
        class (R's second factor level).
    coef_ : ndarray, shape (1, n_features) or (n_classes, n_features)
        ``beta`` (linear kernel only).
    intercept_ : ndarray, shape (1,) or (n_classes,)
    dual_coef_ : ndarray, shape (1, n_fit) or (n_classes, n_fit)
        Kernel coefficients ``alpha`` (kernel solver only: non-linear kernels,
        and the linear kernel on dense data with fewer rows than columns,
        where R switches to the kernel solver).
    X_fit_ : ndarray, shape (n_fit, n_features)
        The training rows the kernel expansion uses (rows with zero weight
        are dropped).  Kernel solver only.
    kernel_ : Kernel
        The kernlab kernel that was fitted (e.g. ``rbfdot(sigma=...)``).
    solver_ : str
        Which majoriser solved the fit, for information: R's ``"ldwd"``,
        ``"wldwd"``, ``"kdwd"``, ``"wkdwd"``, or ``"cgldwd"`` (sparse X,
        conjugate gradients), or another of the engine's.
    predictor_ : object
        Turns the fitted coefficients into decision values
        (:class:`kerndwd.engine.contract.Predictor`).
    n_iter_ : ndarray of int, shape (n_problems,)
        Iterations per binary problem (Newton iterations, or MM passes).
    kkt_ : ndarray, shape (n_problems,)
        Gradient norm of the objective at the returned fit (how far from optimal).
    objective_ : ndarray, shape (n_problems,)
        The objective, in R's scaling (see Notes).
    probA_, probB_ : ndarray, shape (n_problems,) or None
        Platt's sigmoid ``1 / (1 + exp(A f + B))`` per binary problem
        (``probability=True``; None otherwise).  ``B = 0`` (probability 1/2 on
        the decision boundary), and with several classes one sigmoid, fitted
        on the pooled one-vs-rest held-out values, serves all: the most
        probable class is always ``predict``'s.
    n_features_in_, feature_names_in_
        As in scikit-learn.

    Notes
    -----
    **Weights.**  ``sample_weight`` has scikit-learn's meaning: an integer
    weight equals repeating the row.  The R package minimises
    ``(1/n) sum_i wt_i V_q + lambda ||f||^2`` with ``n`` the number of rows;
    the estimator passes ``wt = s * n / sum(s)`` (after dropping rows of zero
    weight), which turns it into the objective above, in which repeating a
    row and doubling its weight are the same problem.  Without
    ``sample_weight`` and ``class_weight`` the unweighted R problem is
    solved (``wt = None``).

    **Binary = R.**  With two classes this is exactly R's ``kerndwd`` at
    ``lambda = lambd``: ``DWDClassifier(lambd=l, stop="step", tol=1e-5)``
    gives the decision values of ``kerndwd.predict(kerndwd.fit(X, y, [l],
    kern), X, type="link")`` (the same solver, iteration and ridge).  The
    path is the single lambda (the zero start of R's first lambda): a warm
    start from larger lambdas does not reduce the total number of passes.

    **Multiclass: one-vs-rest.**  ``n_classes`` binary DWD problems, class
    ``k`` against the rest.  The MM majoriser depends on ``X``, the weights
    and ``q`` but not on the labels, so all problems share one majoriser:
    one eigendecomposition of ``Z'Z`` or of the kernel matrix (one Cholesky
    factor when weighted) serves every class, and each class costs only its
    own iterations.  One-vs-one would need ``n_classes (n_classes - 1) / 2``
    factorisations of different row subsets.  ``decision_function`` returns
    the ``n_classes`` one-vs-rest decision values; ``predict`` their argmax.

    **Sparse X** (CSR/CSC) is supported with the linear kernel without ever
    densifying ``X`` or forming ``X'X``: the majoriser system is solved by
    conjugate gradients (:class:`kerndwd.engine.iterative.LinearCG`).  Non-linear
    kernels with sparse X raise a ``TypeError`` (their kernel matrix is dense
    ``n x n`` anyway; pass ``X.toarray()``).

    **Persistence.**  Fitted estimators pickle and unpickle to identical
    predictions.  Unpickling can execute arbitrary code: only load pickles
    from trusted sources.

    See Also
    --------
    DWDClassifierCV : lambda (and q) chosen by cross-validation.
    kerndwd.fit : the whole path, with R's names.

    Examples
    --------
    >>> from sklearn.datasets import load_iris
    >>> from kerndwd import DWDClassifier
    >>> X, y = load_iris(return_X_y=True)
    >>> clf = DWDClassifier(lambd=0.01, kernel="rbf").fit(X, y)  # one-vs-rest
    >>> clf.classes_.tolist(), clf.decision_function(X[:3]).shape
    ([0, 1, 2], (3, 3))
    >>> round(clf.score(X, y), 2)
    0.95

    Two classes, with probabilities from held-out folds:

    >>> two = y > 0
    >>> clf = DWDClassifier(lambd=0.01, probability=True, random_state=0).fit(X[two], y[two])
    >>> clf.predict_proba(X[two][:2]).round(2).tolist()
    [[0.94, 0.06], [0.94, 0.06]]
    """

    def __init__(self, lambd=0.01, *, q=1.0, kernel="linear", gamma="scale", degree=3, coef0=0.0, order=1.0,
                 class_weight=None, tol=1e-10, stop="kkt", max_iter=100000, random_state=None, method=None,
                 approx=None, n_components=None, solver=None, design_options=None, probability=False):
        self.lambd = lambd
        self.q = q
        self.kernel = kernel
        self.gamma = gamma
        self.degree = degree
        self.coef0 = coef0
        self.order = order
        self.class_weight = class_weight
        self.tol = tol
        self.stop = stop
        self.max_iter = max_iter
        self.random_state = random_state
        self.method = method
        self.approx = approx
        self.n_components = n_components
        self.solver = solver
        self.design_options = design_options
        self.probability = probability

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = _kernel_is_linear(self.kernel) and self.approx is None
        return tags

    def _check_params(self):
        lam = check_real(self.lambd, "lambd")
        q = check_real(self.q, "q")
        tol = check_real(self.tol, "tol")
        check_stop(self.stop)
        max_iter = check_integer(self.max_iter, "max_iter")
        return lam, q, tol, max_iter

    def fit(self, X, y, sample_weight=None):
        """Fit the DWD classifier.

        Parameters
        ----------
        X : array_like, DataFrame, sparse matrix, Dask array or Dask DataFrame, shape (n_samples, n_features)
            Sparse (CSR/CSC) only with the linear kernel.  Dask input (the
            linear kernel or ``approx=``) stays on the cluster with ``y`` and
            ``sample_weight``; ``decision_function`` and ``predict`` on Dask
            rows then return lazy Dask arrays.
        y : array_like, shape (n_samples,)
            Class labels (any number of classes >= 2; strings allowed).
        sample_weight : array_like, shape (n_samples,), optional
            Non-negative weights; an integer weight equals repeating the row.

        Returns
        -------
        self
        """
        lam, q, tol, max_iter = self._check_params()
        data = _prepare(self, X, y, sample_weight)
        problem = _problem(self, data, [lam], q, tol, self.stop, max_iter)
        cache = FactorCache(problem.X, problem.kern)
        self._fit_problem(problem, data.targets, cache)
        self._calibrate(problem, data.targets, cache)
        return self

    def _calibrate(self, problem, targets, cache):
        """Platt's sigmoid per binary target from held-out decision values
        (``probability=True``): stratified folds drawn from ``random_state``."""
        if not isinstance(self.probability, (bool, np.bool_)):
            raise TypeError(f"probability must be True or False, got {self.probability!r}")
        if not self.probability:
            self.probA_ = self.probB_ = None
            return
        y_idx = np.argmax(np.column_stack(targets), axis=1) if len(targets) > 1 else (targets[0] > 0).astype(int)
        counts = np.bincount(y_idx)
        if counts.min() < 2:
            warnings.warn(f"probability=True: a class has {counts.min()} sample, too few to hold out; Platt's "
                          "sigmoid is fitted to the training decision values instead (over-confident)",
                          UserWarning, stacklevel=3)
            alpha = np.vstack([self.intercept_, (self.coef_ if self.predictor_.coef_space == "beta"
                                                 else self.dual_coef_).T])
            self._set_platt(self.predictor_.decision(problem.X, alpha).T, targets)
            return
        nfolds = int(min(CALIBRATION_FOLDS, counts.min()))
        rng = np.random.default_rng(_seed(self.random_state))
        foldid = np.empty(y_idx.size, dtype=int)
        for k in np.unique(y_idx):  # stratified: every training part keeps every class
            rows = np.flatnonzero(y_idx == k)
            foldid[rows] = rng.permutation(np.resize(np.arange(1, nfolds + 1), rows.size))
        predmat, _ = core.heldout_decisions(problem, cache, foldid, [problem.loss.q], targets)
        self._set_platt(predmat[0, :, :, 0], targets)

    def _set_platt(self, heldout, targets):
        """Platt's coefficients from held-out decision values, shape (n_targets, n).

        The sigmoid is centred on the decision boundary (probability 1/2 at
        ``f = 0``), and one sigmoid serves every one-vs-rest problem, fitted
        on their pooled values: the most probable class is then always the
        predicted one."""
        f, t = np.concatenate(list(heldout)), np.concatenate(targets)
        keep = ~np.isnan(f)
        a, b = fit_platt(f[keep], t[keep], centred=True)
        self.probA_ = np.full(len(targets), a)
        self.probB_ = np.full(len(targets), b)

    def _fit_problem(self, problem, targets, cache):
        """Fit every binary target of a validated problem with one majoriser."""
        majoriser = build_majoriser(problem, cache)
        cols, npass, kkt, obj = [], [], [], []
        for y_pm in targets:
            res = run_path(majoriser, problem.with_labels(y_pm))
            if res.jerr and jerr_diverged(res.jerr):
                # the iteration overflowed: unfinished holds the (finite) starting point
                alpha, value, grad_norm = res.unfinished
                warnings.warn(
                    f"DWD was abandoned at lambd={problem.lambdas[0]:g}: {DIVERGED_WHY}; the starting point "
                    "(the zero model) is kept. Rescale X or sample_weight, or increase lambd.",
                    DWDConvergenceWarning, stacklevel=3,
                )
            elif res.jerr:
                # the budget ran out: keep the last iterate, as scikit-learn's solvers do
                alpha, value, grad_norm = res.unfinished
                warnings.warn(
                    f"DWD did not reach tol={problem.eps:g} (stop={problem.stop!r}) within "
                    f"max_iter={problem.maxit} iterations at lambd={problem.lambdas[0]:g}; the last iterate is "
                    "kept. Increase max_iter or tol.",
                    DWDConvergenceWarning, stacklevel=3,
                )
            else:
                alpha, value, grad_norm = res.alpha[:, 0], float(res.objective[0]), float(res.kkt[0])
            kkt.append(grad_norm)
            obj.append(value)
            cols.append(alpha)
            npass.append(int(res.npass[0]))
        A = np.vstack(cols)  # one row per binary problem, intercept first
        predictor = majoriser.predictor
        self.classes_ = problem.classes
        self.kernel_ = problem.kern
        self.solver_ = majoriser.solver
        self.predictor_ = predictor
        self.intercept_ = A[:, 0].copy()
        if predictor.coef_space == "beta":
            self.coef_ = A[:, 1:].copy()
        else:
            self.dual_coef_ = A[:, 1:].copy()
            if predictor.coef_space == "kernel":
                self.X_fit_ = predictor.x
            beta = predictor.beta(A.T)
            if beta is not None:
                self.coef_ = beta.T
        self.n_iter_ = np.array(npass)
        self.kkt_ = np.array(kkt)
        self.objective_ = np.array(obj)
        return self

    def decision_function(self, X):
        """Decision values: shape (n,) for two classes (positive = ``classes_[1]``),
        (n, n_classes) one-vs-rest values otherwise.

        Parameters
        ----------
        X : array_like, sparse matrix or Dask collection, shape (n, n_features)
            Rows to evaluate (sparse only where ``fit`` accepted it).

        Returns
        -------
        ndarray, shape (n,) or (n, n_classes)
            A lazy Dask array for Dask ``X``.
        """
        check_is_fitted(self)
        if is_dask_collection(X):  # lazy, chunked like X's rows
            from ._dask import dask_estimator_decision
            return dask_estimator_decision(self, X)
        sparse_ok = self.__sklearn_tags__().input_tags.sparse
        X = validate_data(self, X, reset=False, accept_sparse=("csr", "csc") if sparse_ok else False,
                          dtype=np.float64)
        if sparse.issparse(X):  # only fits linear in x get here: f = b + X beta, X never densified
            D = np.asarray(X @ self.coef_.T) + self.intercept_
        else:
            coef = self.coef_ if self.predictor_.coef_space == "beta" else self.dual_coef_
            D = self.predictor_.decision(X, np.vstack([self.intercept_, coef.T]))
        return D[:, 0] if self.classes_.size == 2 else D

    def predict(self, X):
        """Class labels: ``classes_[1]`` where the decision value is > 0 (two
        classes, R's rule), else the argmax of the one-vs-rest values.

        Parameters
        ----------
        X : array_like, sparse matrix or Dask collection, shape (n, n_features)
            Rows to classify.

        Returns
        -------
        ndarray, shape (n,)
            Labels from ``classes_`` (a lazy Dask array for Dask ``X``).
        """
        D = self.decision_function(X)
        if is_dask_collection(D):
            from ._dask import dask_estimator_labels
            return dask_estimator_labels(self.classes_, D)
        if D.ndim == 1:
            return self.classes_[(D > 0).astype(int)]
        return self.classes_[np.argmax(D, axis=1)]

    @available_if(lambda self: bool(self.probability))
    def predict_proba(self, X):
        """Class probabilities (``probability=True``): Platt's sigmoid of each
        binary decision value, fitted on held-out folds at ``fit``; one-vs-rest
        probabilities are normalised to sum to 1.  Shape (n, n_classes)."""
        D = self.decision_function(X)
        P = platt_probability(D if D.ndim == 2 else D[:, None], self.probA_, self.probB_)
        if self.classes_.size == 2:
            return np.column_stack([1.0 - P[:, 0], P[:, 0]])
        total = P.sum(axis=1, keepdims=True)
        return np.where(total > 0, P / np.where(total > 0, total, 1.0), 1.0 / P.shape[1])

    @available_if(lambda self: bool(self.probability))
    def predict_log_proba(self, X):
        """``log`` of :meth:`predict_proba`."""
        with np.errstate(divide="ignore"):
            return np.log(self.predict_proba(X))


# --------------------------------------------------------------------------
# DWDClassifierCV
# --------------------------------------------------------------------------
#: Default lambda grid of DWDClassifierCV: 20 values from 10 to 1e-4 (R's
#: default 100 values from 1e3 to 1e-3 is available as lambdas="R").
DEFAULT_CV_LAMBDAS = 10.0 ** np.linspace(1, -4, 20)


def _foldid(cv, X, y, random_state):
    """1-based fold labels from a scikit-learn ``cv`` argument.

    An integer draws R's assignment (a random permutation of
    ``1..cv, 1..cv, ...``), as :func:`kerndwd.cv` does; a splitter or an
    iterable of ``(train, test)`` pairs must have test sets that partition
    the rows (each row held out exactly once), as path CV needs.
    """
    if cv is None:
        cv = 5
    if isinstance(cv, numbers.Integral) and not isinstance(cv, bool):
        nfolds = core.check_nfolds(cv, X.shape[0], name="cv")
        return core.draw_foldid(nfolds, X.shape[0], np.random.default_rng(_seed(random_state)))
    splits = list(check_cv(cv, y, classifier=True).split(X, y))
    foldid = np.zeros(X.shape[0], dtype=int)
    for k, (_, test) in enumerate(splits, start=1):
        if (foldid[test] != 0).any():
            raise ValueError("cv: the test sets overlap; path cross-validation needs each row held out exactly once")
        foldid[test] = k
    if (foldid == 0).any():
        raise ValueError("cv: some rows are in no test set; path cross-validation needs each row held out exactly once")
    return foldid


class DWDClassifierCV(ClassifierMixin, BaseEstimator):
    """DWD with lambda (and optionally q) chosen by path cross-validation.

    For each ``q`` in ``qvals``, :func:`kerndwd.cv` fits one warm-started
    path over ``lambdas`` per fold (R's ``cv.kerndwd``) and records the
    held-out misclassification rate ``cvm`` and its standard error ``cvsd``
    per lambda; ``lambda_`` is R's ``lambda.min`` or ``lambda.1se`` of that
    curve.  With several ``q`` the one with the smallest ``cvm`` at its own
    chosen lambda wins (ties: the last in ``qvals`` order, as R's
    ``tunedwd``; with ``choose="lambda_1se"`` this is ``tunedwd``'s rule,
    except that the folds are fitted as :func:`kerndwd.cv` fits them, with
    ``kerndwd``'s ridge 1e-7 and solver rule rather than ``tunedwd``'s 1e-6
    and strict ``n > p``).
    Then a :class:`DWDClassifier` is refitted on all data at ``(lambda_,
    q_)`` and serves predictions.

    With more than two classes each one-vs-rest problem is cross-validated
    on the same folds and ``cvm``/``cvsd`` are the means over the classes
    (the average one-vs-rest error), so a single lambda is chosen.

    Parameters
    ----------
    lambdas : array_like, "R" or None
        Candidate lambdas.  None: :data:`DEFAULT_CV_LAMBDAS` (20 values, 10
        to 1e-4); ``"R"``: R's default grid.
    qvals : sequence of float, default (1,)
    kernel, gamma, degree, coef0, order, class_weight, tol, stop, max_iter, random_state
        As in :class:`DWDClassifier`, for the refit.  ``class_weight`` and
        ``sample_weight`` also weight the fold fits (the held-out error
        counts each observation once, as in R).
    cv : int, splitter or iterable, default 5
        Folds: an integer draws R's random assignment from ``random_state``;
        a scikit-learn splitter or list of ``(train, test)`` must hold out
        each row exactly once.
    choose : {"lambda_min", "lambda_1se"}, default "lambda_min"
    cv_tol, cv_stop : default 1e-5, "step"
        Stopping rule of the fold paths (R's default: the CV error only needs
        the sign of held-out decision values).  ``method`` applies to the
        folds and the refit alike: ``method="newton"`` needs
        ``cv_stop="kkt"``; ``method=None`` fits the folds by MM under
        ``cv_stop="step"`` and the refit by Newton under ``stop="kkt"``.
    n_jobs : int, optional
        Folds in parallel (joblib); results do not depend on it.

    Attributes
    ----------
    lambda_ : float
    q_ : float
    cv_results_ : dict of ndarrays
        ``"lambdas"`` (L,), ``"qvals"`` (Q,), ``"cvm"`` and ``"cvsd"`` (Q, L),
        ``"lambda_min"``, ``"lambda_1se"`` (Q,), ``"foldid"`` (n,).
    best_estimator_ : DWDClassifier
        The refit; ``classes_``, ``coef_``/``dual_coef_``, ``intercept_`` are
        read from it.
    classes_, n_features_in_, feature_names_in_
        As in scikit-learn.

    See Also
    --------
    DWDClassifier, kerndwd.cv, kerndwd.tune

    Examples
    --------
    >>> from sklearn.datasets import load_iris
    >>> from kerndwd import DWDClassifierCV
    >>> X, y = load_iris(return_X_y=True)
    >>> two = y > 0  # versicolor against virginica
    >>> clf = DWDClassifierCV(qvals=[0.5, 1, 2], cv=5, random_state=0).fit(X[two], y[two])
    >>> clf.cv_results_["cvm"].shape  # (q values, lambdas)
    (3, 20)
    >>> bool(clf.lambda_ in clf.cv_results_["lambdas"]), clf.q_ in (0.5, 1.0, 2.0)
    (True, True)
    >>> round(clf.score(X[two], y[two]), 2)
    0.97
    """

    def __init__(self, lambdas=None, *, qvals=(1.0,), kernel="linear", gamma="scale", degree=3, coef0=0.0,
                 order=1.0, cv=5, choose="lambda_min", class_weight=None, tol=1e-10, stop="kkt",
                 max_iter=100000, cv_tol=1e-5, cv_stop="step", n_jobs=None, random_state=None, method=None,
                 approx=None, n_components=None, solver=None, design_options=None, probability=False):
        self.lambdas = lambdas
        self.qvals = qvals
        self.kernel = kernel
        self.gamma = gamma
        self.degree = degree
        self.coef0 = coef0
        self.order = order
        self.cv = cv
        self.choose = choose
        self.class_weight = class_weight
        self.tol = tol
        self.stop = stop
        self.max_iter = max_iter
        self.cv_tol = cv_tol
        self.cv_stop = cv_stop
        self.n_jobs = n_jobs
        self.random_state = random_state
        self.method = method
        self.approx = approx
        self.n_components = n_components
        self.solver = solver
        self.design_options = design_options
        self.probability = probability

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = False  # path cross-validation works on dense arrays
        return tags

    def _estimator(self, lam, q):
        return DWDClassifier(lambd=lam, q=q, kernel=self.kernel, gamma=self.gamma, degree=self.degree,
                             coef0=self.coef0, order=self.order, class_weight=self.class_weight, tol=self.tol,
                             stop=self.stop, max_iter=self.max_iter, random_state=self.random_state,
                             method=self.method, approx=self.approx, n_components=self.n_components,
                             solver=self.solver, design_options=self.design_options, probability=self.probability)

    def fit(self, X, y, sample_weight=None):
        """Cross-validate, choose ``(lambda_, q_)``, refit on all data; returns self.

        Parameters
        ----------
        X : array_like or DataFrame, shape (n_samples, n_features)
            Training rows.
        y : array_like, shape (n_samples,)
            Class labels (two or more classes).
        sample_weight : array_like, shape (n_samples,), optional
            Non-negative weights, for the fold fits and the refit.

        Returns
        -------
        self

        Raises
        ------
        ValueError
            For invalid parameters or data, e.g. ``choose`` not
            ``"lambda_min"``/``"lambda_1se"``, a q that is not positive, or
            ``cv`` splits that do not hold each row out exactly once.
        """
        if self.choose not in ("lambda_min", "lambda_1se"):
            raise ValueError(f"choose must be 'lambda_min' or 'lambda_1se', got {self.choose!r}")
        qs = check_qvals(self.qvals)
        n_jobs = check_n_jobs(self.n_jobs)
        refit = self._estimator(1.0, float(qs[0]))
        _, _, tol, max_iter = refit._check_params()
        cv_tol = check_real(self.cv_tol, "cv_tol")
        check_stop(self.cv_stop, "cv_stop")
        data = _prepare(self, X, y, sample_weight)
        foldid = _foldid(self.cv, data.X_all, data.y_all, self.random_state)
        if data.keep is not None:
            # fold labels must stay 1..K without gaps
            foldid = np.unique(foldid[data.keep], return_inverse=True)[1] + 1
        foldid = core.check_foldid(foldid, data.X.shape[0])
        if self.lambdas is None:
            lambdas = DEFAULT_CV_LAMBDAS
        elif isinstance(self.lambdas, str) and self.lambdas == "R":
            lambdas = None
        else:
            lambdas = self.lambdas
        lambdas = check_lambdas(lambdas, data.X.shape[0], "lambdas")
        problem = _problem(self, data, lambdas, qs[0], cv_tol, self.cv_stop, max_iter, stop_name="cv_stop")
        cache = FactorCache(problem.X, problem.kern)
        predmat, jerr = core.heldout_decisions(problem, cache, foldid, qs, data.targets, n_jobs=n_jobs)
        cvm = np.empty((qs.size, lambdas.size))
        cvsd = np.empty((qs.size, lambdas.size))
        for iq, q in enumerate(qs):
            for it, target in enumerate(data.targets):
                warn_folds(jerr[iq, it], lambdas, max_iter, q=q)
            # the average one-vs-rest error (the binary error with two classes)
            per_target = [core.cv_error(predmat[iq, it], t, foldid) for it, t in enumerate(data.targets)]
            cvm[iq] = np.mean([m for m, _ in per_target], axis=0)
            cvsd[iq] = np.mean([sd for _, sd in per_target], axis=0)
        picks = np.array([core.select_lambda(m, sd) for m, sd in zip(cvm, cvsd)])  # (Q, 2): index_min, index_1se
        which = 0 if self.choose == "lambda_min" else 1
        iq = core.choose_last_minimum(cvm[np.arange(qs.size), picks[:, which]])
        self.q_ = float(qs[iq])
        self.lambda_ = float(lambdas[picks[iq, which]])
        self.cv_results_ = {
            "lambdas": lambdas, "qvals": qs, "cvm": cvm, "cvsd": cvsd,
            "lambda_min": lambdas[picks[:, 0]], "lambda_1se": lambdas[picks[:, 1]], "foldid": foldid,
        }
        # the refit shares the cache: the kernel matrix of all rows is not formed again
        best = self._estimator(self.lambda_, self.q_)
        best_problem = _problem(best, data, [self.lambda_], self.q_, tol, self.stop, max_iter)
        self.best_estimator_ = best._fit_problem(best_problem, data.targets, cache)
        if self.probability:
            # Platt's sigmoid from the cross-validation's own held-out decision
            # values at the chosen (lambda, q): no further fits
            best._set_platt(predmat[iq, :, :, picks[iq, which]], data.targets)
        else:
            best.probA_ = best.probB_ = None
        for attr in ("n_features_in_", "feature_names_in_"):
            if hasattr(self, attr):
                setattr(self.best_estimator_, attr, getattr(self, attr))
        self.classes_ = self.best_estimator_.classes_
        self.n_iter_ = self.best_estimator_.n_iter_
        return self

    @property
    def coef_(self):
        return self.best_estimator_.coef_

    @property
    def intercept_(self):
        return self.best_estimator_.intercept_

    def decision_function(self, X):
        """Decision values of :attr:`best_estimator_`.

        Parameters
        ----------
        X : array_like, shape (n, n_features)
            Rows to evaluate.

        Returns
        -------
        ndarray, shape (n,) or (n, n_classes)
            As :meth:`DWDClassifier.decision_function`.
        """
        check_is_fitted(self)
        if not is_dask_collection(X):
            validate_data(self, X, reset=False, dtype=np.float64)
        return self.best_estimator_.decision_function(X)

    def predict(self, X):
        """Class labels from :attr:`best_estimator_`.

        Parameters
        ----------
        X : array_like, shape (n, n_features)
            Rows to classify.

        Returns
        -------
        ndarray, shape (n,)
            Labels from ``classes_``.
        """
        check_is_fitted(self)
        if not is_dask_collection(X):
            validate_data(self, X, reset=False, dtype=np.float64)
        return self.best_estimator_.predict(X)

    @available_if(lambda self: bool(self.probability))
    def predict_proba(self, X):
        """Class probabilities of :attr:`best_estimator_` (``probability=True``),
        calibrated on the cross-validation's held-out decision values."""
        check_is_fitted(self)
        validate_data(self, X, reset=False, dtype=np.float64)
        return self.best_estimator_.predict_proba(X)

    @available_if(lambda self: bool(self.probability))
    def predict_log_proba(self, X):
        """``log`` of :meth:`predict_proba`."""
        with np.errstate(divide="ignore"):
            return np.log(self.predict_proba(X))
