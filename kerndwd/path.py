"""``fit()`` and ``predict()``: the R-like entry points (``kerndwd()`` and
``predict.kerndwd()`` of the R package), and the path object they share."""

from __future__ import annotations

import warnings
from functools import cached_property
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray

from . import _predict
from ._inputs import Settings, build_problem, check_data, check_flag, check_positive_sequence
from ._rnames import RNamed
from ._warnings import gap_words, warn_far_from_optimal, warn_not_converged
from .engine import fit_path
from .cv import CVResult
from .engine.certify import GAP_WARNING
from .engine.chunked import is_dask_collection, require_dask
from .engine.progress import Progress, reporting

if TYPE_CHECKING:
    from .engine import FactorCache, PathResult, Problem
    from .engine.predictors import Predictor
    from .kernels import Kernel

__all__ = ["fit", "predict", "DWDPath"]


class DWDPath(RNamed):
    """A fitted DWD path: one solution per lambda, like R's ``kerndwd`` object.

    The attributes carry R's names; ``lambda`` is a Python keyword, so that
    one is readable as ``lambda_`` and ``path["lambda"]``.

    Parameters
    ----------
    result, problem, majoriser
        The engine's output; a path is built by :func:`kerndwd.fit`, not by
        hand.

    Attributes
    ----------
    alpha : ndarray, shape (ncoef, L)
        Intercept first, then the coefficients of the fitted form, one column
        per lambda: ``beta`` (``p`` rows) when the linear kernel was solved in
        the linear form, the kernel coefficients ``alpha_1..alpha_n`` when it
        was solved in the kernel form, the weights of the features for a
        kernel approximation (``predictor.coef_space`` says which).
    lambda_ : ndarray, shape (L,)
        The lambdas of the returned columns, decreasing.
    npass : ndarray of int, shape (nlambda,)
        Iterations per requested lambda (0 after a failure): MM passes, or
        Newton iterations with ``method="newton"``.
    jerr : int
        0, or ``-l`` when ``maxit`` ran out on the ``l``-th lambda (1-based),
        or ``-(10000 + l)`` when the iteration at the ``l``-th lambda left the
        finite numbers (an objective, coefficient or decision value overflowed:
        a lambda, weights or a scale of ``X`` at the edge of double precision)
        and was abandoned (glmnet's range for its other path errors).  Either
        way a :class:`DWDConvergenceWarning` says which, and the ``l - 1``
        finished columns are returned, all finite.
    kern, qval, wt, eps, maxit, stop
        What was fitted and how.
    solver : str
        Which majoriser solved it, for information: R's routine names
        ``ldwd``, ``wldwd`` (linear, unweighted or weighted), ``kdwd``,
        ``wkdwd`` (kernel), or the engine's other solvers (``kdwd-cg``:
        ``solver="cg"``).
    chosen : str or None
        Why ``solver="auto"`` picked the design, or None when it was named.
    design : str
        The design: ``"exact"``, or the kernel approximation or solver named.
    predictor : object
        Turns ``alpha`` into decision values at new rows
        (:class:`kerndwd.engine.predictors.Predictor`); it holds its own copy
        of any training rows it needs.
    classes : ndarray, shape (2,)
        The labels mapped to -1 and +1 (R's level order).
    objective : ndarray, shape (L,)
        The objective ``(1/n) sum w_i V_q(y_i f_i) + lambda ||f||^2`` at each column.
    kkt : ndarray, shape (L,)
        Norm of the gradient of that objective at each column: how far from
        optimal the default stopping rule left the fit.
    gap_bound : ndarray, shape (L,)
        Under R's stopping rule, a certified upper bound on
        ``objective - optimum`` at each column, formed from the gradient
        (:mod:`kerndwd.engine.certify`); NaN under ``stop="kkt"``, where
        ``kkt <= eps`` is the certificate.

    See Also
    --------
    fit, predict, kerndwd.plot_path

    Examples
    --------
    >>> import numpy as np, kerndwd
    >>> rng = np.random.default_rng(0)
    >>> X = rng.standard_normal((50, 3)); y = np.where(X[:, 0] > 0, 1, -1)
    >>> path = kerndwd.fit(X, y, [1.0, 0.1, 0.01], kern=kerndwd.vanilladot())
    >>> path.alpha.shape, path.lambda_.tolist(), path.solver
    ((4, 3), [1.0, 0.1, 0.01], 'ldwd')
    >>> path["lambda"] is path.lambda_, path.jerr
    (True, 0)
    >>> path.coef.shape  # beta, without the intercept
    (3, 3)
    """

    _R_NAMES = ("alpha", "lambda", "npass", "jerr", "kkt", "objective")

    alpha: NDArray[np.float64]
    lambda_: NDArray[np.float64]
    npass: NDArray[np.int_]
    jerr: int
    objective: NDArray[np.float64]
    kkt: NDArray[np.float64]
    gap_bound: NDArray[np.float64]
    kern: Kernel
    qval: float
    eps: float
    maxit: int
    stop: str
    classes: NDArray[Any]
    n: int
    design: str
    chosen: str | None
    method: str
    solver: str
    predictor: Predictor
    n_features: int

    def __init__(self, result: PathResult, problem: Any, majoriser: Any) -> None:
        self.alpha = result.alpha
        self.lambda_ = result.lambdas
        self.__dict__["lambda"] = self.lambda_
        self.npass = result.npass
        self.jerr = int(result.jerr)
        self.objective = result.objective
        self.kkt = result.kkt
        self.gap_bound = result.gap_bound
        # kern, qval, classes, stop, method, design, chosen (why solver="auto" picked the
        # design, else None), solver, predictor
        self.__dict__.update(problem.fitted_with(majoriser))
        self.wt = problem.loss.weights
        self.eps = problem.eps
        self.maxit = problem.maxit
        self.gam = problem.gam
        self.n = problem.n
        self.n_features = self.predictor.n_features
        self._fingerprint_later = problem.fingerprint_later()

    @cached_property
    def fingerprint(self) -> dict[str, Any]:
        """What the path is a fit of (kernel, q, design, a digest of the rows, the
        labels and the weights): a calibration must come from a cross-validation
        of the same.  Formed when first read."""
        return self.__dict__.pop("_fingerprint_later")()

    @property
    def lambdas(self) -> NDArray[np.float64]:
        return self.lambda_

    @property
    def is_linear(self) -> bool:
        """True when ``alpha`` holds ``(b0, beta)``: the fit is linear in ``x`` and
        was solved in the linear form."""
        return self.predictor.coef_space == "beta"

    @property
    def intercept(self) -> NDArray[np.float64]:
        return self.alpha[0]

    @property
    def coef(self) -> NDArray[np.float64]:
        """``beta``, shape (p, L), for a fit that is linear in ``x`` (``x' alpha``
        when the linear kernel was solved in the kernel form)."""
        beta = self.predictor.beta(self.alpha)
        if beta is None:
            raise AttributeError("coef exists only for the linear kernel; use alpha")
        return beta

    @property
    def far_from_optimal(self) -> NDArray[np.intp]:
        """Columns whose certified gap bound exceeds ``GAP_WARNING`` (10%) of
        their objective: R's rule stopped there possibly far from the optimum
        (a NaN bound, under the gradient rule, is never above it)."""
        return np.nonzero(self.gap_bound > GAP_WARNING * self.objective)[0]

    def __repr__(self) -> str:
        lam = self.lambda_
        rng = f"{lam[0]:.3g}..{lam[-1]:.3g}" if lam.size else "none"
        design = "" if self.design == "exact" and self.chosen is None else f"design={self.design!r}, "
        far = self.far_from_optimal
        note = ""
        if far.size:
            worst = float(np.max(self.gap_bound[far] / self.objective[far]))
            note = (f"; {far.size} column(s) possibly far from optimal (optimal objective "
                    f"{gap_words(worst)}): refit with stop='kkt'")
        return (
            f"DWDPath(kern={self.kern!r}, qval={self.qval:g}, {design}solver={self.solver!r}, "
            f"method={self.method!r}, stop={self.stop!r}, n={self.n}, p={self.n_features}, "
            f"nlambda={lam.size} ({rng}), jerr={self.jerr}, total passes={int(self.npass.sum())}{note})"
            + ("" if self.chosen is None else f"\n  chosen by {self.chosen}")
        )

    def decision_function(self, newx: ArrayLike, lambdas: ArrayLike | None = None) -> NDArray[np.float64]:
        """Shorthand for ``predict(newx, type="link", lambdas=lambdas)``.

        Parameters
        ----------
        newx : array_like, shape (m, p)
            Rows to evaluate, as in :func:`kerndwd.predict`.
        lambdas : array_like, optional
            Lambdas to evaluate at; default every column of the path.

        Returns
        -------
        ndarray, shape (m, L)
            Decision values, one column per lambda.

        Examples
        --------
        >>> import numpy as np, kerndwd
        >>> rng = np.random.default_rng(0)
        >>> X = rng.standard_normal((50, 3)); y = np.where(X[:, 0] > 0, 1, -1)
        >>> path = kerndwd.fit(X, y, [1.0, 0.1], kern=kerndwd.rbfdot(sigma=0.5))
        >>> path.decision_function(X[:5]).shape
        (5, 2)
        """
        return self.predict(newx, type="link", lambdas=lambdas)

    def predict(self, newx: ArrayLike, type: Literal["class", "link", "prob"] = "class",
                lambdas: ArrayLike | None = None, calibration: CVResult | None = None) -> NDArray[Any]:
        """Predict from this path: ``kerndwd.predict(self, newx, ...)``.

        Parameters
        ----------
        newx, type, lambdas, calibration
            As in :func:`kerndwd.predict`.

        Returns
        -------
        ndarray, shape (m, L)
            As :func:`kerndwd.predict` returns it.

        Examples
        --------
        >>> import numpy as np, kerndwd
        >>> X = np.array([[-2.0], [-1.0], [1.0], [2.0]]); y = ["no", "no", "yes", "yes"]
        >>> path = kerndwd.fit(X, y, [0.1], kern=kerndwd.vanilladot())
        >>> path.predict(np.array([[-3.0], [3.0]])).ravel().tolist()
        ['no', 'yes']
        """
        return predict(self, newx, type=type, lambdas=lambdas, calibration=calibration)

    def coef_at(self, lambdas: ArrayLike) -> NDArray[np.float64]:
        """Columns of ``alpha`` at arbitrary lambdas, by linear interpolation in
        lambda between the two neighbouring path columns.

        A lambda on the path gets its column exactly (the first, when the path
        holds it twice).  Lambdas beyond the ends of the path get the nearest
        end column, with a ``UserWarning``: the path says nothing there.

        Parameters
        ----------
        lambdas : float or array_like of float
            Positive lambdas, in any order.

        Returns
        -------
        ndarray, shape (ncoef, len(lambdas))
            One column of ``alpha`` (intercept first) per lambda.

        Raises
        ------
        ValueError
            When a lambda is not positive and finite, or the path has no
            fitted columns.

        Examples
        --------
        >>> import numpy as np, kerndwd
        >>> rng = np.random.default_rng(0)
        >>> X = rng.standard_normal((50, 3)); y = np.where(X[:, 0] > 0, 1, -1)
        >>> path = kerndwd.fit(X, y, [1.0, 0.1], kern=kerndwd.vanilladot())
        >>> mid = path.coef_at([0.55])  # halfway between the two columns
        >>> bool(np.allclose(mid[:, 0], path.alpha.mean(axis=1)))
        True
        """
        s = np.atleast_1d(check_positive_sequence(lambdas, "lambdas"))
        lam = self.lambda_
        if lam.size == 0:
            raise ValueError("the path has no fitted columns (jerr=%d)" % self.jerr)
        outside = (s < lam.min()) | (s > lam.max())
        if outside.any():
            warnings.warn(
                f"lambdas {s[outside][:3].tolist()} lie outside the fitted path [{lam.min():.6g}, "
                f"{lam.max():.6g}]: they get the nearest end column (no extrapolation)",
                UserWarning, stacklevel=3,
            )
        # one column per distinct lambda (the first where the path repeats one), increasing
        lam_inc, first = np.unique(lam, return_index=True)
        a_inc = self.alpha[:, first]
        if lam_inc.size == 1:
            return np.repeat(a_inc, s.size, axis=1)
        s_c = np.clip(s, lam_inc[0], lam_inc[-1])
        hi = np.clip(np.searchsorted(lam_inc, s_c, side="left"), 1, lam_inc.size - 1)
        lo = hi - 1
        frac = (s_c - lam_inc[lo]) / (lam_inc[hi] - lam_inc[lo])
        out = a_inc[:, lo] * (1.0 - frac) + a_inc[:, hi] * frac
        exact = np.flatnonzero(np.isin(s, lam_inc))
        out[:, exact] = a_inc[:, np.searchsorted(lam_inc, s[exact])]  # path lambdas: the column itself
        return out


def fit(X: ArrayLike, y: ArrayLike, lambdas: ArrayLike | None = None, kern: Kernel | None = None,
        qval: float = 1.0, wt: ArrayLike | None = None, eps: float | None = None, maxit: int = 100000, *,
        random_state: int | np.random.Generator | None = None, stop: Literal["step", "kkt"] | None = None,
        accelerate: bool | None = None, method: str | None = None, approx: str | None = None,
        solver: str | None = None, progress: bool = False, **design_options: Any) -> DWDPath:
    """Fit a DWD path, as ``kerndwd(x, y, kern, lambda, qval, wt, eps, maxit)`` in R.

    Minimises ``(1/n) sum_i wt_i V_q(y_i f(x_i)) + lambda ||f||^2`` for each
    lambda, with warm starts along the decreasing path: by
    majorization-minimization (Wang & Zou 2018, Algorithms 1 and 2) under
    R's stopping rule, by semismooth Newton (``docs/solvers.md``) under the
    gradient rule ``stop="kkt"``.

    Parameters
    ----------
    X : array_like, pandas DataFrame, Dask array or Dask DataFrame, shape (n, p)
        Numeric predictors.  A row-chunked Dask array (or a Dask DataFrame of
        numeric columns) stays on the cluster, with the labels and weights
        (in memory or Dask): the linear kernel, the ``approx=`` designs
        (in memory by blocks, ``solver="bcd"``, they take rows in memory
        only) and the exact kernel by ``solver="bcd"`` (its rows stay on the
        workers; the fitted path fetches them when it first predicts),
        ``kern`` given (see ``docs/scaling.md``).
    y : array_like, shape (n,)
        Exactly two distinct labels (numbers, strings, booleans, a pandas
        Series or Categorical).  They are mapped to -1/+1 in sorted order (a
        Categorical keeps its category order), as R orders factor levels;
        ``predict(type="class")`` answers in these labels.
    lambdas : array_like, optional
        Positive penalties, sorted decreasing before fitting.  Default: R's
        ``10^seq(3, -3, length=100)`` (``10^seq(0, -7, length=100)`` when
        ``n > 10000``).
    kern : Kernel, optional
        A kernel from :mod:`kerndwd.kernels`.  Default, as in R:
        ``rbfdot(sigma=sigest(X))``, random unless ``random_state`` is set.
        With ``vanilladot()`` and ``n >= p`` (``n > p`` when weighted) the
        linear solver is used and ``alpha`` holds ``(b0, beta)``; otherwise
        the kernel solver, and ``alpha`` holds ``(b0, alpha_1..alpha_n)``.
    qval : float, default 1
        The loss exponent ``q > 0``.  R silently replaces ``qval <= 0`` by 1;
        here it is an error.
    wt : array_like, optional
        Non-negative observation weights (weighted DWD, Qiao et al. 2010);
        the objective divides by ``n``, not by ``sum(wt)``, as in R.
    eps : float, optional
        Stopping tolerance, default 1e-5.  With ``stop="step"`` (R's rule) a
        lambda stops when the squared norm of the MM step is below ``eps``;
        this default is loose at small lambda (see ``path.kkt``).  With
        ``stop="kkt"`` it stops when the norm of the objective's gradient is
        ``<= eps``.
    maxit : int, default 100000
        Budget of iterations (MM passes, or Newton iterations) for the
        **whole path**, as in R.  When it runs out on the ``l``-th lambda a
        :class:`DWDConvergenceWarning` is issued, ``jerr = -l`` and the
        ``l - 1`` finished columns are returned.  Newton also stops there
        when rounding keeps the gradient above ``eps`` (an ``eps`` below
        the precision the data allow).
    random_state : int or numpy Generator, optional
        Seeds ``sigest`` when ``kern`` is omitted.
    stop : {"step", "kkt"}, optional
        The stopping rule, see ``eps``.  Default: R's ``"step"`` where R fits
        the same model (the exact kernel, rows in memory), so that R's
        numbers are reproduced; the gradient rule ``"kkt"`` for what R does
        not have (``approx=``, ``solver="bcd"``, Dask rows), where a column
        certified near the optimum is what one wants (see ``docs/solvers.md``).
    accelerate : bool, optional
        Add Nesterov momentum (with a restart whenever the objective would
        rise) to the MM passes; an option of ``method="mm"`` only (passing
        it with Newton raises ``ValueError``).  Default: on with
        ``stop="kkt"``, off with ``stop="step"`` so that R's iterates,
        ``npass`` included, are reproduced exactly.  On ill-conditioned
        problems it cuts the passes needed for a tight fit by 10 to 100
        times.
    method : {None, "newton", "mm"} or another registered name
        The path solver (:func:`kerndwd.engine.method_names`).
        ``"newton"``: semismooth Newton with a monotone line search, a few
        iterations per lambda to any ``eps``; it implements the gradient
        rule only (``stop="step"`` with it raises ``ValueError``).
        ``"mm"``: the MM iteration of the paper and of R, either rule.
        Default (None): ``"newton"`` with ``stop="kkt"``, ``"mm"`` with
        ``stop="step"`` (R's iterates).
    approx : str, optional
        A kernel approximation registered with the engine (see
        :func:`kerndwd.engine.design_names`), fitted instead of the exact
        kernel: ``"nystroem"`` (Nystrom features, any kernel) or ``"rff"``
        (random Fourier features, ``rbfdot`` and ``laplacedot``).  Its
        options (``n_components``, ``dtype``, ``chunk_size``, Nystrom's
        ``landmarks``) are passed as further keyword arguments, and
        ``random_state`` seeds it (see ``docs/solvers.md``).
    solver : str, optional
        A registered solver of the exact kernel: ``"exact"`` (R's iteration,
        on the eigendecomposition of ``K`` for a kernel), ``"cg"`` (Newton
        with Nystrom-preconditioned conjugate gradients on ``K``, no
        decomposition), ``"bcd"`` (block coordinate descent, ``O(n b)``
        memory) or ``"auto"`` (one of them, picked from ``n`` and the
        memory: ``path.chosen`` and ``print(path)`` say which and why).
        With ``approx=``, ``solver="bcd"`` fits the approximation by blocks
        of features (``block_size``, ``cache_features``) instead of solving
        its ``(m + 1) x (m + 1)`` system.
        Default: ``"auto"`` under ``stop="kkt"``, R's choice under R's rule.
    progress : bool, default False
        Show the lambdas done, the passes and the gradient norm while the
        path is fitted (with ``tqdm`` when installed; plain lines on standard
        error otherwise), and the feature chunks formed or the Dask tasks run
        where the design has them.
    **design_options
        Options of the ``approx`` or ``solver`` design.

    Returns
    -------
    DWDPath

    Raises
    ------
    ValueError
        For invalid arguments, including ``method="newton"`` with
        ``stop="step"`` and ``accelerate`` with a method that has no momentum.

    Examples
    --------
    >>> import numpy as np, kerndwd
    >>> rng = np.random.default_rng(0)
    >>> X = rng.standard_normal((100, 3)); y = np.where(X[:, 0] > 0, "a", "b")
    >>> tight = kerndwd.fit(X, y, [1.0, 0.01], kern=kerndwd.vanilladot(), stop="kkt", eps=1e-10)
    >>> bool((tight.kkt <= 1e-10).all()), int(tight.npass.sum()) < 30
    (True, True)
    """
    settings = Settings(lambdas=lambdas, kern=kern, qval=qval, eps=eps, maxit=maxit, stop=stop,
                        accelerate=accelerate, method=method, approx=approx, solver=solver,
                        design_options=design_options, random_state=random_state)
    show = check_flag(progress, "progress")
    problem = build_problem(check_data(X, y, wt), settings)
    if not show:
        return fit_problem(problem)
    with reporting(Progress("fit")):
        return fit_problem(problem)


def fit_problem(problem: Problem, cache: FactorCache | None = None, warn: bool = True) -> DWDPath:
    """Fit a validated :class:`kerndwd.engine.Problem` into a :class:`DWDPath`.

    Under R's stopping rule every column comes with a certified bound on its
    distance from the optimum (:mod:`kerndwd.engine.certify`); one warning
    names the columns whose bound exceeds ``GAP_WARNING`` of their objective.
    """
    result, majoriser = fit_path(problem, cache)
    if result.jerr and warn:
        warn_not_converged(result.jerr, problem.lambdas, problem.maxit)
    path = DWDPath(result, problem, majoriser)
    if warn:
        warn_far_from_optimal(path)
    return path


def predict(fit: DWDPath, newx: ArrayLike, type: Literal["class", "link", "prob"] = "class",
            lambdas: ArrayLike | None = None, calibration: CVResult | None = None) -> NDArray[Any]:
    """Predict from a fitted path, as ``predict.kerndwd`` in R.

    Parameters
    ----------
    fit : DWDPath
        A path from :func:`kerndwd.fit`.
    newx : array_like, DataFrame, Dask array or Dask DataFrame, shape (m, p)
        Rows to predict, with the columns the path was fitted on.
    type : {"class", "link", "prob"}
        ``"prob"``: the probability of the second label (``fit.classes[1]``).
        Without ``calibration`` it inverts the population minimiser (4.4)
        (:func:`kerndwd.conditional_probability`): exact for an optimal
        decision function in the population, but 1/2 wherever
        ``|f| <= q/(q+1)``, a band a penalised fit often fills.  With
        ``calibration`` it is Platt's sigmoid fitted to held-out decision
        values (:mod:`kerndwd.calibration`), monotone everywhere.
        ``"link"``: decision values ``b0 + newx beta`` (linear form),
        ``b0 + K(newx, x) alpha`` (kernel form) or ``b0 + phi(newx) theta``
        (a kernel approximation).  ``"class"``: the second
        label where the link is positive, else the first.
    lambdas : array_like, optional
        Lambdas to predict at.  Default: every column of the path.  A lambda
        that is not on the path is served by **linear interpolation in
        lambda** between the two neighbouring columns; lambdas beyond the
        ends of the path use the nearest end column, with a warning.
    calibration : CVResult, optional
        With ``type="prob"``: a result of :func:`kerndwd.cv` on the same data
        and settings; at each lambda predicted, Platt's sigmoid is fitted to
        its held-out decision values (the lambdas must be cross-validated ones).

    Returns
    -------
    ndarray, shape (m, L)
        One column per lambda, like R: labels for ``type="class"``, decision
        values for ``"link"``, probabilities of ``fit.classes[1]`` for
        ``"prob"``.  For a Dask ``newx``, a lazy Dask array of the same
        shape, one task per row chunk of ``newx`` (a chunk with NaN raises
        ValueError naming newx when computed).

    Raises
    ------
    TypeError
        When ``fit`` is not a :class:`DWDPath`, or ``calibration`` not a
        :class:`~kerndwd.CVResult`.
    ValueError
        For an unknown ``type``, ``calibration`` without ``type="prob"``,
        ``newx`` with NaN or the wrong number of columns, and calibration at
        a lambda that was not cross-validated.

    Notes
    -----
    For ``n == p`` with the linear kernel, R fits the linear form but its
    ``predict`` takes the kernel branch (``b0 + newx x' beta``); we return the
    intended ``b0 + newx beta``.

    Examples
    --------
    >>> import numpy as np, kerndwd
    >>> rng = np.random.default_rng(0)
    >>> X = rng.standard_normal((80, 2)); y = np.where(X[:, 0] - X[:, 1] > 0, "up", "down")
    >>> path = kerndwd.fit(X, y, [0.1, 0.01], kern=kerndwd.rbfdot(sigma=0.5))
    >>> newx = np.array([[1.0, -1.0], [-1.0, 1.0]])
    >>> kerndwd.predict(path, newx).tolist()  # one column per lambda
    [['up', 'up'], ['down', 'down']]
    >>> link = kerndwd.predict(path, newx, type="link")
    >>> bool(link[0, 1] > 0 > link[1, 1])
    True
    >>> prob = kerndwd.predict(path, newx, type="prob", lambdas=[0.01])
    >>> prob.shape, bool(prob[0, 0] > 0.5 > prob[1, 0])
    ((2, 1), True)
    """
    if not isinstance(fit, DWDPath):
        raise TypeError(f"fit must be a DWDPath returned by kerndwd.fit, got {fit.__class__.__name__}")
    if type not in ("class", "link", "prob"):
        raise ValueError(f"type must be 'class', 'link' or 'prob', got {type!r}")
    if calibration is not None and type != "prob":
        raise ValueError("calibration is used only with type='prob'")
    if type == "prob" and calibration is not None:
        _check_calibration(fit, calibration)
    newx = _predict.new_rows(newx, fit.predictor)
    alpha = fit.alpha if lambdas is None else fit.coef_at(lambdas)
    link = _predict.links(fit.predictor, newx, alpha)
    if type == "link":
        return link
    if type == "class":
        return _predict.sign_labels(link, fit.classes)
    if calibration is None:
        return _predict.population_probability(link, fit.qval)
    cols = fit.lambda_ if lambdas is None else np.atleast_1d(np.asarray(lambdas, dtype=float))
    parts = []
    for j, lam in enumerate(cols):
        a, b = calibration.platt_coefficients(lam)
        parts.append(_predict.calibrated(link[:, j:j + 1], a, b, fit.qval, f"at lambda {lam:g}"))
    if len(parts) == 1:
        return parts[0]
    return require_dask().concatenate(parts, axis=1) if is_dask_collection(link) else np.hstack(parts)


def _check_calibration(fit: DWDPath, calibration: CVResult) -> None:
    """Refuse a calibration that is not a cross-validation of what ``fit`` fitted."""
    if not isinstance(calibration, CVResult):
        raise TypeError(f"calibration must be a CVResult from kerndwd.cv, got {type(calibration).__name__}")
    theirs = calibration.fingerprint
    differ = [k for k in ("kern", "qval", "design", "rows") if theirs.get(k) != fit.fingerprint.get(k)]
    if differ or fit.fingerprint.get("rows") is None:
        what = ", ".join(f"{k} ({theirs.get(k)!r} against the path's {fit.fingerprint.get(k)!r})"
                         for k in differ) or "rows (the path's rows are on a Dask cluster)"
        raise ValueError(f"calibration: this cross-validation was not fitted on what the path was: {what}; "
                         "calibrate with kerndwd.cv on the same X, y, weights, kern, qval and design")
