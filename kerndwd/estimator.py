"""The scikit-learn face: :class:`DWDClassifier`.

It only dispatches: it hands its data as given and its parameters as the
input layer's :class:`~kerndwd._inputs.Settings` to the model layer once
(:func:`kerndwd._model.fit_model`), which has the input layer validate them
into one :class:`kerndwd.engine.Problem`
(:func:`kerndwd._inputs.check_classifier_data`, :func:`kerndwd._inputs.build_problem`) and runs the engine's
path-solver template once per binary target, on the one majoriser the
problem's design builds, on a path of a single lambda, with Platt's
calibration when asked.  What comes back is kept in
:attr:`DWDClassifier.path_` (:class:`kerndwd._model.DWDModel`), through which
decision values, labels and probabilities go, and from which every fitted
attribute is read.  No solver loop, and no choice of solver, lives here.
:class:`~kerndwd.estimator_cv.DWDClassifierCV` chooses lambda and q by
cross-validation.

Pickles of fitted estimators (and of :class:`kerndwd.DWDPath` objects)
restore identical predictions.  Unpickling runs arbitrary code: load pickles
only from sources you trust.
"""

from __future__ import annotations

import types
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Literal, cast

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ._inputs import KernelSpec, Settings, check_matrix, is_precomputed, precomputed_rows
from ._model import CALIBRATION_FOLDS, fit_model
from ._scalars import check_real
from .engine import make_design
from .engine.chunked import is_dask_collection
from .kernels import Kernel, rbfdot, vanilladot

if TYPE_CHECKING:
    from typing_extensions import Self

    from ._model import DWDModel
    from .engine.predictors import KernelPredictor

try:  # scikit-learn is an optional dependency (extra "sklearn")
    from sklearn.base import BaseEstimator, ClassifierMixin
    from sklearn.utils.validation import check_is_fitted, validate_data
except ImportError as exc:  # pragma: no cover - depends on the environment
    raise ImportError(
        "kerndwd's estimators need scikit-learn: pip install scikit-learn (or 'kerndwd[sklearn]')"
    ) from exc

__all__ = ["DWDClassifier", "FittedModelFaces", "CALIBRATION_FOLDS", "estimator_settings", "fit_rows"]

#: The estimators' names for the arguments of the input layer (for the errors)
NAMES = {"lambdas": "lambd", "qval": "q", "eps": "tol", "maxit": "max_iter"}


def estimator_settings(est: Any, lambdas: ArrayLike | None, q: float, tol: float, stop: str, max_iter: int,
                       names: dict[str, str] | None = None) -> Settings:
    """The input layer's :class:`~kerndwd._inputs.Settings` of an estimator's
    parameters, at the lambdas and stopping rule given."""
    options = dict(est.design_options or {})
    if est.n_components is not None and est.approx is not None:  # like degree for rbf: ignored otherwise
        options["n_components"] = est.n_components
    return Settings(lambdas=lambdas, qval=q, eps=tol, maxit=max_iter, stop=stop, method=est.method,
                    approx=est.approx, solver=est.solver, design_options=options, random_state=est.random_state,
                    kern=KernelSpec(est.kernel, est.gamma, est.degree, est.coef0, est.order, est.random_state),
                    names={**NAMES, **(names or {})})


def takes_sparse(est: Any) -> bool:
    """Whether the estimator's design takes sparse rows with its kernel (read off
    the design's declared capabilities)."""
    spec = KernelSpec(est.kernel)
    if spec.is_own:  # a Gram matrix or a function's kernel: dense rows
        return False
    try:
        spec.check()
        design = make_design(est.approx if est.approx is not None else est.solver, {},
                             argument="approx" if est.approx is not None else "solver")
    except (TypeError, ValueError):
        return False
    kern = spec.kernel if isinstance(spec.kernel, Kernel) else vanilladot() if spec.is_linear else rbfdot()
    return "sparse" in design.capabilities(kern, "sparse").storage


def fit_rows(est: Any, X: ArrayLike) -> Any:
    """The rows an estimator fits: with ``kernel="precomputed"`` the Gram matrix's
    rows after their index (:func:`kerndwd._inputs.precomputed_rows`, which checks
    it), else ``X`` as given."""
    return precomputed_rows(X) if is_precomputed(est.kernel) else X


def check_new_rows(est: Any, X: ArrayLike) -> Any:
    """scikit-learn's checks of new rows against the fit (feature names and
    count); the values are checked by the model."""
    check_is_fitted(est)
    rows = check_matrix(X, "X")
    if not is_dask_collection(X):
        validate_data(est, X, skip_check_array=True, reset=False)
    if est.path_.kern.name == "precomputed":  # kernel values against the training rows
        rows = precomputed_rows(rows, est.n_features_in_)
    return rows


class _probability_method:
    """A method that exists only with ``probability=True``, as scikit-learn's
    ``available_if`` makes it (``hasattr`` is False otherwise), with an
    ``AttributeError`` that names the parameter."""

    def __init__(self, method: Any) -> None:
        self.method = method
        self.__doc__ = method.__doc__

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    def __get__(self, obj: Any, owner: type | None = None) -> Any:
        if obj is None:
            return self.method
        if not bool(obj.probability):
            cls = type(obj).__name__
            raise AttributeError(f"This {cls!r} has no attribute {self.name!r}: probabilities need "
                                 f"probability=True ({cls}(probability=True) fits Platt's sigmoid on held-out "
                                 "decision values at fit)")
        return types.MethodType(self.method, obj)


class FittedModelFaces:
    """What both estimators share once fitted: predictions through
    :attr:`path_` (a :class:`kerndwd._model.DWDModel`), the fitted attributes
    read from it (properties: before a fit they are absent, and a refit
    replaces them all at once), and scikit-learn tags read off the design's
    capabilities (sparse input where the design takes it)."""

    path_: DWDModel

    @property
    def classes_(self) -> NDArray[Any]:
        """The sorted labels (``classes_[1]`` is the positive class of two)."""
        return self.path_.classes

    @property
    def n_features_in_(self) -> int:
        """The number of columns fitted on."""
        return self.path_.n_features

    @property
    def feature_names_in_(self) -> NDArray[Any]:
        """The column names of a DataFrame whose names are all strings (absent otherwise)."""
        names = self.path_.feature_names
        if names is None:
            raise AttributeError("feature_names_in_: X had no column names that are all strings")
        return names

    @property
    def n_iter_(self) -> NDArray[np.int_]:
        """Iterations per binary problem."""
        return self.path_.n_iter

    @property
    def intercept_(self) -> NDArray[np.float64]:
        """The intercept per binary problem."""
        return self.path_.alpha[0].copy()

    @property
    def coef_(self) -> NDArray[np.float64]:
        """``beta`` per binary problem (fits with a linear predictor: the linear kernel)."""
        model = self.path_
        if model.predictor.coef_space == "beta":
            return model.alpha[1:].T.copy()
        beta = model.predictor.beta(model.alpha)
        if beta is None:
            raise AttributeError("coef_: a non-linear kernel has no coefficients per feature (see dual_coef_)")
        return beta.T

    def __sklearn_tags__(self) -> Any:
        tags = super().__sklearn_tags__()  # type: ignore[misc]  # scikit-learn's, next in the estimators' MRO
        tags.input_tags.sparse = takes_sparse(self)
        # scikit-learn's splitters then cut X[train][:, train] and X[test][:, train]
        tags.input_tags.pairwise = is_precomputed(getattr(self, "kernel", None))
        return tags

    def decision_function(self, X: ArrayLike) -> NDArray[np.float64]:
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
        X = check_new_rows(self, X)
        return self.path_.decision_function(X)

    def predict(self, X: ArrayLike) -> NDArray[Any]:
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
        X = check_new_rows(self, X)
        return self.path_.predict(X)

    @_probability_method
    def predict_proba(self, X: ArrayLike) -> NDArray[np.float64]:
        """Class probabilities (``probability=True``): Platt's sigmoid of each
        binary decision value, fitted on held-out folds at ``fit``; one-vs-rest
        probabilities are normalised to sum to 1.  Shape (n, n_classes); a lazy
        Dask array for Dask ``X``."""
        X = check_new_rows(self, X)
        return self.path_.predict_proba(X)

    @_probability_method
    def predict_log_proba(self, X: ArrayLike) -> NDArray[np.float64]:
        """``log`` of :meth:`predict_proba`."""
        with np.errstate(divide="ignore"):
            return np.log(self.predict_proba(X))


class DWDClassifier(FittedModelFaces, ClassifierMixin, BaseEstimator):
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
    kernel : str, callable or Kernel, default "linear"
        ``"linear"`` (kernlab's ``vanilladot``), ``"rbf"`` (``rbfdot(sigma=gamma)``:
        ``exp(-gamma ||x - y||^2)``, as scikit-learn's), ``"poly"``
        (``polydot(degree, scale=gamma, offset=coef0)``: ``(gamma <x, y> + coef0)^degree``),
        ``"laplace"`` (``laplacedot(sigma=gamma)``: ``exp(-gamma ||x - y||)``,
        the Euclidean norm as in kernlab, not scikit-learn's L1 laplacian),
        ``"bessel"`` (``besseldot(sigma=gamma, order, degree)``), ``"anova"``
        (``anovadot(sigma=gamma, degree)``), ``"spline"`` (``splinedot()``),
        a kernel object from :mod:`kerndwd.kernels` used as given, a function
        ``kernel(X, Y)`` returning the matrix ``[k(x_i, y_j)]``
        (:func:`kerndwd.userdot`), or ``"precomputed"``: ``X`` is then the
        ``n x n`` Gram matrix of the training rows at ``fit`` and the
        ``m x n`` matrix of new rows against them at ``predict``, as in
        scikit-learn's SVC (the estimator is tagged pairwise, so that
        ``cross_val_score`` and ``GridSearchCV`` cut both sides).  Your own
        kernels are checked (finite, symmetric, positive semi-definite) and
        refused, naming the kernel, by ``approx="rff"``.
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
        A registered solver of the exact kernel: ``"exact"`` (R's iteration on
        the eigendecomposition), ``"cg"`` (Newton with preconditioned
        conjugate gradients on the kernel matrix), ``"bcd"`` (block
        coordinate descent, without the kernel matrix) or ``"auto"`` (picked
        from the rows and the memory, :attr:`solver_chosen_` says which).
        None: ``"auto"`` under ``stop="kkt"``, R's choice under R's rule.
    design_options : dict or None, default None
        Further options of the ``approx`` or ``solver`` design, e.g.
        ``{"dtype": "float32", "landmarks": "kmeans++"}``.
    progress : bool, default False
        Show the binary problems done, the passes and the gradient norm while
        fitting (with ``tqdm`` when installed), and the feature chunks or the
        Dask tasks where the design has them.
    probability : bool, default False
        Enable :meth:`predict_proba`: at ``fit``, decision values of every
        sample are also computed by a model that did not see it (stratified
        5-fold cross-validation at the same ``lambd`` and ``q``, five more
        fits), and Platt's sigmoid is fitted to them
        (:mod:`kerndwd.calibration`), as ``SVC(probability=True)`` does.

    Attributes
    ----------
    path_ : DWDModel
        What was fitted (:class:`kerndwd._model.DWDModel`): every binary
        problem's coefficients at ``lambd``, the predictor, the classes and
        Platt's calibration; ``decision_function``, ``predict`` and
        ``predict_proba`` go through it.  The attributes below are read from it.
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
        are dropped).  Kernel solver only.  With ``kernel="precomputed"``,
        each such row's index followed by its row of the Gram matrix.
    kernel_ : Kernel
        The kernlab kernel that was fitted (e.g. ``rbfdot(sigma=...)``).
    solver_ : str
        Which majoriser solved the fit, for information: R's ``"ldwd"``,
        ``"wldwd"``, ``"kdwd"``, ``"wkdwd"``, or ``"cgldwd"`` (sparse X,
        conjugate gradients), or another of the engine's (``"kdwd-cg"``:
        ``solver="cg"``).
    solver_chosen_ : str or None
        Why ``solver="auto"`` picked the design it fitted with (which one,
        for how many rows, within which memory budget); None when the
        solver was named.
    predictor_ : object
        Turns the fitted coefficients into decision values
        (:class:`kerndwd.engine.predictors.Predictor`).
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
    conjugate gradients (:class:`kerndwd.engine.majorisers.iterative.LinearCG`).  Non-linear
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

    def __init__(self, lambd: float = 0.01, *, q: float = 1.0, kernel: str | Kernel | Callable[..., Any] = "linear",
                 gamma: float | Literal["scale", "sigest"] = "scale", degree: int = 3, coef0: float = 0.0,
                 order: float = 1.0, class_weight: Mapping[Any, float] | Literal["balanced"] | None = None,
                 tol: float = 1e-10, stop: Literal["kkt", "step"] = "kkt", max_iter: int = 100000,
                 random_state: int | np.random.Generator | None = None, method: str | None = None,
                 approx: str | None = None, n_components: int | None = None, solver: str | None = None,
                 design_options: dict[str, Any] | None = None, probability: bool = False,
                 progress: bool = False) -> None:
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
        self.progress = progress

    def fit(self, X: ArrayLike, y: ArrayLike, sample_weight: ArrayLike | None = None) -> Self:
        """Fit the DWD classifier.

        Parameters
        ----------
        X : array_like, DataFrame, sparse matrix, Dask array or Dask DataFrame, shape (n_samples, n_features)
            Sparse (CSR/CSC) only where the design takes it (the linear kernel
            of the exact solver).  With ``kernel="precomputed"``, the Gram
            matrix, shape (n_samples, n_samples).  Dask input (the linear kernel or
            ``approx=``) stays on the cluster with ``y`` and ``sample_weight``;
            ``decision_function``, ``predict`` and ``predict_proba`` on Dask
            rows then return lazy Dask arrays.
        y : array_like, shape (n_samples,)
            Class labels (any number of classes >= 2; strings allowed).
        sample_weight : array_like, shape (n_samples,), optional
            Non-negative weights; an integer weight equals repeating the row.

        Returns
        -------
        self

        Raises
        ------
        ValueError, TypeError
            For invalid parameters or data, naming the argument (as
            :func:`kerndwd.fit` does), and ``probability=True`` on Dask rows.
        """
        return self._fit(X, y, sample_weight)

    def _fit(self, X: ArrayLike, y: ArrayLike, sample_weight: ArrayLike | None, start: Any = None) -> Self:
        """:meth:`fit`, each target's fit started from ``start`` (``(ncoef, n_targets)``, or None)."""
        lambd = check_real(self.lambd, "lambd", "positive")  # one number here, not a path
        settings = estimator_settings(self, [lambd], self.q, self.tol, self.stop, self.max_iter)
        rows = fit_rows(self, X)
        self.path_ = fit_model(rows, y, sample_weight, self.class_weight, settings, type(self).__name__,
                               probability=self.probability, random_state=self.random_state,
                               progress=self.progress, start=start)
        if rows is not X:  # the Gram matrix's columns, without the index before them
            self.path_.n_features = rows.shape[1] - 1
        return self

    @property
    def kernel_(self) -> Kernel:
        """The kernel that was fitted."""
        return self.path_.kern

    @property
    def solver_(self) -> str:
        """The majoriser that solved the fit."""
        return self.path_.solver

    @property
    def solver_chosen_(self) -> str | None:
        """Why ``solver="auto"`` picked the design it fitted with (None: named)."""
        return self.path_.chosen

    @property
    def predictor_(self) -> Any:
        """Turns the fitted coefficients into decision values."""
        return self.path_.predictor

    @property
    def dual_coef_(self) -> NDArray[np.float64]:
        """Kernel coefficients ``alpha`` (kernel and feature solvers only)."""
        if self.path_.predictor.coef_space == "beta":
            raise AttributeError("dual_coef_: a linear fit has coef_ only")
        return self.path_.alpha[1:].T.copy()

    @property
    def X_fit_(self) -> NDArray[np.float64]:
        """The training rows of the kernel expansion (kernel solver only)."""
        if self.path_.predictor.coef_space != "kernel":
            raise AttributeError("X_fit_: only a kernel expansion keeps its training rows")
        return cast("KernelPredictor", self.path_.predictor).x

    @property
    def kkt_(self) -> NDArray[np.float64]:
        """Gradient norm of the objective per binary problem."""
        return self.path_.kkt

    @property
    def objective_(self) -> NDArray[np.float64]:
        """The objective per binary problem, in R's scaling."""
        return self.path_.objective

    @property
    def probA_(self) -> NDArray[np.float64] | None:
        """Platt's slope per binary problem (``probability=True``; None otherwise)."""
        platt = self.path_.platt
        return None if platt is None else np.full(self.path_.n_targets, platt[0])

    @property
    def probB_(self) -> NDArray[np.float64] | None:
        """Platt's offset per binary problem (0: probability 1/2 on the boundary; None without calibration)."""
        platt = self.path_.platt
        return None if platt is None else np.full(self.path_.n_targets, platt[1])
