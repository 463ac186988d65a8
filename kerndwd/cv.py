"""Cross-validation of the DWD path: ``cv()`` and ``tune()``.

``cv`` chooses ``lambda`` as the R package's ``cv.kerndwd`` does, and
``tune`` chooses ``lambda`` together with the loss exponent ``q`` as its
``tunedwd`` does.  Both use the held-out misclassification rate and R's
fold, standard-error and tie rules, number for number.

Each fold costs one warm-started path (the same MM engine as
:func:`kerndwd.fit`, through :func:`kerndwd.engine.crossval.heldout_decisions`), never one
fit per lambda.  For the kernel form the kernel matrix of all of ``X`` is
formed once; every fold slices its training block and its held-out
cross-kernel out of it, and in ``tune`` one eigendecomposition of the fold's
matrix serves every q.  Folds are independent tasks: ``n_jobs`` runs them in
parallel with joblib, and the numbers do not depend on it.

``kerndwd.cv`` names the function (as ``kerndwd.fit`` does); the module
itself is ``importlib.import_module("kerndwd.cv")`` or ``from kerndwd.cv
import ...``.
"""

from __future__ import annotations

import numbers
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ._inputs import Settings, build_problem, check_data, check_flag, check_n_jobs, check_qvals
from ._rnames import RNamed
from ._warnings import grid_edge_words, warn_folds, warn_grid_edge, warn_slow_design
from .engine import GAM_TUNE, FactorCache
from .engine import crossval as core
from .engine.chunked import is_dask_collection

if TYPE_CHECKING:
    from .engine import Problem
    from .kernels import Kernel

__all__ = ["cv", "tune", "CVResult", "TuneResult"]

#: What the CV error measures (R's ``name`` component, the y-label of the plot).
ERROR_NAME = "Misclassification Error"


# --------------------------------------------------------------------------
# results
# --------------------------------------------------------------------------
class CVResult(RNamed):
    """Cross-validated error along a lambda path, like R's ``cv.kerndwd`` object.

    The attributes use Python names; R's dotted names are readable through
    mapping access (``res["lambda.min"]``, ``res["cvm"]``, ...; ``keys()``
    lists them).

    Attributes
    ----------
    lambda_ : ndarray, shape (L,)
        The lambdas, sorted decreasing (R's ``lambda``).
    cvm : ndarray, shape (L,)
        Mean cross-validated misclassification rate per lambda.
    cvsd : ndarray, shape (L,)
        Its estimated standard error.
    cvupper, cvlower : ndarray, shape (L,)
        ``cvm + cvsd`` and ``cvm - cvsd``.
    lambda_min : float
        The largest lambda attaining the smallest ``cvm`` (R's ``lambda.min``).
    lambda_1se : float
        The largest lambda whose ``cvm`` is at most ``cvm`` + ``cvsd`` at
        ``lambda_min`` (R's ``lambda.1se``).
    cvm_min, cvm_1se : float
        ``cvm`` at ``lambda_min`` and at ``lambda_1se``.
    index_min, index_1se : int
        Positions of ``lambda_min`` and ``lambda_1se`` in ``lambda_``.
    predmat : ndarray, shape (n, L)
        Held-out decision values: row ``i`` comes from the fold that left
        observation ``i`` out.  NaN where that fold's path stopped early
        (``maxit`` ran out) before reaching the lambda.
    foldid : ndarray of int, shape (n,)
        The fold of each observation, 1-based as in R.
    y : ndarray, shape (n,)
        The labels as -1/+1 (``classes[0]`` / ``classes[1]`` of the fit): with
        ``predmat`` they calibrate probabilities (``kerndwd.predict(...,
        type="prob", calibration=res)``).
    nfolds : int
        Number of folds (``foldid.max()``).
    fold_jerr : ndarray of int, shape (nfolds,)
        ``jerr`` of each fold's path (0 when it finished).
    qval : float
        The loss exponent used.
    name : str
        What ``cvm`` measures (``"Misclassification Error"``).
    fit_args : dict
        Keyword arguments of :func:`kerndwd.fit` that reproduce the fitting
        settings on all the data (``kern``, ``qval``, ``wt``, ``eps``,
        ``maxit``, ``stop``, ``method``, and any ``approx`` or ``solver``
        with its options and, for a randomised design, the integer
        ``random_state`` its folds were fitted with), e.g.
        ``kerndwd.fit(X, y, res.lambda_, **res.fit_args)``.

    Parameters
    ----------
    lambdas, cvm, cvsd, predmat, foldid, fold_jerr, qval, fit_args, y
        The attributes of the same names; a result is built by :func:`cv`
        and :func:`tune`, not by hand.

    See Also
    --------
    cv, tune, kerndwd.plot_cv

    Examples
    --------
    >>> import numpy as np, kerndwd
    >>> rng = np.random.default_rng(0)
    >>> X = rng.standard_normal((60, 2))
    >>> y = np.where(X[:, 0] + 0.5 * rng.standard_normal(60) > 0, 1, -1)
    >>> res = kerndwd.cv(X, y, 10.0 ** np.linspace(0, -3, 8), kern=kerndwd.vanilladot(),
    ...                  random_state=1)
    >>> res.cvm.shape, res.nfolds
    ((8,), 5)
    >>> bool(res.lambda_1se >= res.lambda_min), res["lambda.min"] == res.lambda_min
    (True, True)
    """

    _R_NAMES = ("lambda", "cvm", "cvsd", "cvupper", "cvlower", "lambda.min", "lambda.1se",
                "cvm.min", "cvm.1se", "qval", "predmat", "foldid", "name")

    lambda_: NDArray[np.float64]
    cvm: NDArray[np.float64]
    cvsd: NDArray[np.float64]
    cvupper: NDArray[np.float64]
    cvlower: NDArray[np.float64]
    index_min: int
    index_1se: int
    lambda_min: float
    lambda_1se: float
    cvm_min: float
    cvm_1se: float
    predmat: NDArray[np.float64]
    y: NDArray[np.float64] | None
    foldid: NDArray[np.int_]
    nfolds: int
    fold_jerr: NDArray[np.int_]
    qval: float
    name: str
    fit_args: dict[str, Any]
    fingerprint: dict[str, Any]

    def __init__(self, *, lambdas: NDArray[np.float64], cvm: NDArray[np.float64], cvsd: NDArray[np.float64],
                 predmat: NDArray[np.float64], foldid: NDArray[np.int_], fold_jerr: NDArray[np.int_], qval: float,
                 fit_args: dict[str, Any], y: NDArray[np.float64] | None = None,
                 fingerprint: dict[str, Any] | None = None) -> None:
        self.lambda_ = lambdas
        self.cvm = cvm
        self.cvsd = cvsd
        self.cvupper = cvm + cvsd
        self.cvlower = cvm - cvsd
        self.index_min, self.index_1se = core.select_lambda(cvm, cvsd)
        self.lambda_min = float(lambdas[self.index_min])
        self.lambda_1se = float(lambdas[self.index_1se])
        self.cvm_min = float(cvm[self.index_min])
        self.cvm_1se = float(cvm[self.index_1se])
        self.predmat = predmat
        self.y = y
        self.foldid = foldid
        self.nfolds = int(foldid.max())
        self.fold_jerr = fold_jerr
        self.qval = float(qval)
        self.name = ERROR_NAME
        self.fit_args = fit_args
        #: what was cross-validated (kernel, q, design, a digest of the rows): a
        #: path calibrated with this result must be a fit of the same
        self.fingerprint = {} if fingerprint is None else fingerprint

    @property
    def lambdas(self) -> NDArray[np.float64]:
        return self.lambda_

    def platt_coefficients(self, lam: float) -> tuple[float, float]:
        """``(a, b)`` of Platt's sigmoid fitted to the held-out decision values at
        the lambda ``lam`` of this result (see :mod:`kerndwd.calibration`).

        Parameters
        ----------
        lam : float
            One of the cross-validated lambdas (``self.lambda_``), e.g.
            ``self.lambda_min``.

        Returns
        -------
        a, b : float
            The sigmoid ``1 / (1 + exp(a f + b))``, as
            :func:`kerndwd.calibration.fit_platt` returns it.

        Raises
        ------
        ValueError
            When ``lam`` is not among the cross-validated lambdas, or when
            fewer than two held-out decision values (or only one class) are
            left at it.

        Examples
        --------
        >>> import numpy as np, kerndwd
        >>> rng = np.random.default_rng(0)
        >>> X = rng.standard_normal((60, 2))
        >>> y = np.where(X[:, 0] + 0.5 * rng.standard_normal(60) > 0, 1, -1)
        >>> res = kerndwd.cv(X, y, 10.0 ** np.linspace(0, -3, 8), kern=kerndwd.vanilladot(),
        ...                  random_state=1)
        >>> a, b = res.platt_coefficients(res.lambda_min)
        >>> bool(a < 0)  # larger decision values, higher probability of +1
        True
        """
        from .calibration import fit_platt

        hits = np.flatnonzero(np.isclose(self.lambda_, lam, rtol=1e-12, atol=0.0))
        if hits.size == 0:
            raise ValueError(f"lambda {lam:g} is not among the cross-validated lambdas; calibrate at those")
        f = self.predmat[:, hits[0]]
        keep = ~np.isnan(f)
        if keep.sum() < 2 or np.unique(self.y[keep]).size < 2:  # type: ignore[index]  # cv and tune set y
            raise ValueError(f"too few held-out decision values at lambda {lam:g} to calibrate (maxit ran out?)")
        return fit_platt(f[keep], self.y[keep])  # type: ignore[index]

    def __repr__(self) -> str:
        edge = grid_edge_words(self.index_min, self.lambda_)
        return (
            f"CVResult(qval={self.qval:g}, nfolds={self.nfolds}, nlambda={self.lambda_.size}, "
            f"lambda_min={self.lambda_min:.6g} (cvm {self.cvm_min:.4g}), "
            f"lambda_1se={self.lambda_1se:.6g} (cvm {self.cvm_1se:.4g}))"
            + ("" if edge is None else f"\n  lambda_min: {edge}")
        )


class TuneResult(RNamed):
    """Joint choice of lambda and q, like R's ``tunedwd`` result.

    R's dotted names are readable through mapping access (``res["lam.tune"]``,
    ``res["q.tune"]``, ``res["cvres"]``).

    Attributes
    ----------
    lam_tune : float
        The chosen lambda: ``lambda_1se`` of the chosen q (R's ``lam.tune``).
    q_tune : float
        The chosen q: the one with the smallest ``cvm_1se``; ties go to the
        last such q in ``qvals`` order, as in R (R's ``q.tune``).
    qvals : ndarray, shape (Q,)
        The q values, in the order given.
    cvres : list of CVResult
        One cross-validation result per q, in ``qvals`` order.
    cvm_1se : ndarray, shape (Q,)
        ``cvres[k].cvm_1se`` for each q: the criterion that picks ``q_tune``.
    index_tune : int
        Position of ``q_tune`` in ``qvals``.
    foldid : ndarray of int, shape (n,)
        The folds (1-based), shared by every q.
    lambda_ : ndarray, shape (L,)
        The lambdas, sorted decreasing.
    fit_args : dict
        Keyword arguments of :func:`kerndwd.fit` for a refit on all the data
        at the chosen q (``qval=q_tune``), e.g.
        ``kerndwd.fit(X, y, [res.lam_tune], **res.fit_args)``.  Note that
        ``fit`` uses R's ``kerndwd`` ridge 1e-7 while the tuning folds used
        ``tunedwd``'s 1e-6, as in R.

    Parameters
    ----------
    qvals, cvres, foldid, lambdas, fit_args
        The attributes of the same names; a result is built by :func:`tune`,
        not by hand.

    See Also
    --------
    tune, CVResult

    Examples
    --------
    >>> import numpy as np, kerndwd
    >>> rng = np.random.default_rng(0)
    >>> X = rng.standard_normal((60, 2))
    >>> y = np.where(X[:, 0] + 0.5 * rng.standard_normal(60) > 0, 1, -1)
    >>> res = kerndwd.tune(X, y, 10.0 ** np.linspace(0, -3, 8), qvals=[0.5, 1, 2],
    ...                    kern=kerndwd.vanilladot(), random_state=1)
    >>> len(res.cvres), bool(res.q_tune in res.qvals)
    (3, True)
    >>> res.lam_tune == res.best.lambda_1se
    True
    """

    _R_NAMES = ("lam.tune", "q.tune", "cvres", "qvals", "foldid", "lambda")

    qvals: NDArray[np.float64]
    cvres: list[CVResult]
    cvm_1se: NDArray[np.float64]
    index_tune: int
    q_tune: float
    lam_tune: float
    foldid: NDArray[np.int_]
    lambda_: NDArray[np.float64]
    fit_args: dict[str, Any]

    def __init__(self, *, qvals: NDArray[np.float64], cvres: list[CVResult], foldid: NDArray[np.int_],
                 lambdas: NDArray[np.float64], fit_args: dict[str, Any] | None = None) -> None:
        self.qvals = qvals
        self.cvres = cvres
        self.cvm_1se = np.array([r.cvm_1se for r in cvres])
        self.index_tune = core.choose_last_minimum(self.cvm_1se)
        self.q_tune = float(qvals[self.index_tune])
        self.lam_tune = cvres[self.index_tune].lambda_1se
        self.foldid = foldid
        self.lambda_ = lambdas
        self.fit_args = dict(cvres[self.index_tune].fit_args) if fit_args is None else fit_args

    @property
    def best(self) -> CVResult:
        """The :class:`CVResult` of the chosen q."""
        return self.cvres[self.index_tune]

    def __repr__(self) -> str:
        return (
            f"TuneResult(q_tune={self.q_tune:g}, lam_tune={self.lam_tune:.6g}, "
            f"qvals={self.qvals.tolist()}, cvm_1se={np.round(self.cvm_1se, 4).tolist()})"
        )


# --------------------------------------------------------------------------
# shared set-up of cv and tune
# --------------------------------------------------------------------------
def _setup(X: ArrayLike, y: ArrayLike, lambdas: ArrayLike | None, kern: Kernel | None, nfolds: int,
           foldid: Any, wt: ArrayLike | None, qval: float, eps: float | None, maxit: int,
           stop: str | None, random_state: int | np.random.Generator | None,
           **settings: Any) -> tuple[Problem, NDArray[np.int_], FactorCache]:
    """Validate once: the problem, its folds (R's random draw unless ``foldid``
    is given) and the cache of its rows.  The default kernel's ``sigest``
    draws from the same generator, after the folds."""
    if is_dask_collection(X):
        raise TypeError(
            "X: cv and tune cannot take Dask input (cross-validation collects held-out decision values "
            "for every row); fit the path with kerndwd.fit or DWDClassifier on the Dask array and choose "
            "lambda on a held-out split, or cross-validate on a sample that fits in memory")
    data = check_data(X, y, wt)
    n = data.n
    rng = np.random.default_rng(random_state)
    if foldid is None:
        foldid = core.draw_foldid(core.check_nfolds(nfolds, n), n, rng)
    else:
        foldid = core.check_foldid(foldid, n)
    problem = build_problem(data, Settings(lambdas=lambdas, kern=kern, qval=qval, eps=eps, maxit=maxit, stop=stop,
                                           random_state=rng, **settings))
    return problem, foldid, FactorCache(problem.X, problem.kern)


def _cv_result(problem: Any, predmat: NDArray[np.float64], jerr: NDArray[np.int_], foldid: NDArray[np.int_],
               q: float | None) -> CVResult:
    """One :class:`CVResult` from the held-out decision values of one q."""
    warn_folds(jerr, problem.lambdas, problem.maxit, q=q, stacklevel=4)
    cvm, cvsd = core.cv_error(predmat, problem.y, foldid)
    fit_args = dict(kern=problem.kern, qval=problem.loss.q if q is None else float(q), wt=problem.loss.weights,
                    eps=problem.eps, maxit=problem.maxit, stop=problem.stop, method=problem.method)
    design = problem.design
    if design.name != "exact":  # the approximation or solver, with its options
        fit_args[design.selected_by] = design.name
        fit_args.update(design.options)
        if isinstance(design.random_state, numbers.Integral):  # the seed its folds used
            fit_args["random_state"] = int(design.random_state)
    fingerprint = (problem if q is None else problem.with_q(q)).fingerprint()
    return CVResult(lambdas=problem.lambdas, cvm=cvm, cvsd=cvsd, predmat=predmat, foldid=foldid,
                    fold_jerr=jerr, qval=fit_args["qval"], fit_args=fit_args, y=problem.y, fingerprint=fingerprint)


# --------------------------------------------------------------------------
# public entry points
# --------------------------------------------------------------------------
def cv(X: ArrayLike, y: ArrayLike, lambdas: ArrayLike | None = None, kern: Kernel | None = None, nfolds: int = 5,
       foldid: ArrayLike | None = None, wt: ArrayLike | None = None, *, qval: float = 1.0, eps: float | None = None,
       maxit: int = 100000, stop: Literal["step", "kkt"] | None = None,
       random_state: int | np.random.Generator | None = None, n_jobs: int | None = None, progress: bool = False,
       method: str | None = None, approx: str | None = None, solver: str | None = None,
       **design_options: Any) -> CVResult:
    """K-fold cross-validation of the DWD path, as ``cv.kerndwd`` in R.

    Each fold is left out in turn; the path is fitted on the other folds with
    the whole ``lambdas`` vector (one warm-started path per fold, with the
    settings of :func:`kerndwd.fit`) and the held-out observations are
    classified at every lambda.

    Parameters
    ----------
    X : array_like or pandas DataFrame, shape (n, p)
        Numeric predictors.
    y : array_like, shape (n,)
        Exactly two distinct labels (see :func:`kerndwd.fit`).
    lambdas : array_like, optional
        Positive penalties, sorted decreasing.  Default: R's grid of
        :func:`kerndwd.fit` (R's ``cv.kerndwd`` fails without ``lambda``;
        here the default is allowed).
    kern : Kernel, optional
        Default ``rbfdot(sigma=sigest(X))``, drawn from ``random_state``
        after the folds.  With ``vanilladot()`` each fold uses the linear
        solver when its training size is ``>= p`` (``> p`` when weighted),
        R's rule in ``kerndwd``; otherwise the kernel solver.
    nfolds : int, default 5
        Number of folds, at least 3 (R's rule).  Ignored when ``foldid`` is given.
    foldid : array_like of int, shape (n,), optional
        The fold of each observation, **1-based as in R** (labels
        ``1..nfolds``, each used at least once, at least 3 folds).  Wins over
        ``nfolds`` and ``random_state``.  For 0-based labels (e.g. from
        scikit-learn splitters) pass ``foldid + 1``.
    wt : array_like, shape (n,), optional
        Observation weights for fitting each fold (weighted DWD).  The CV
        error itself counts each held-out observation once.
    qval : float, default 1
        The loss exponent ``q > 0``.
    eps, maxit, stop
        As in :func:`kerndwd.fit` (``maxit`` is a budget per fold path).
        With ``stop="kkt"`` the folds are fitted by semismooth Newton unless
        ``method="mm"``.
    random_state : int or numpy.random.Generator, optional
        Seeds the fold assignment, a random permutation of
        ``1, 2, ..., nfolds, 1, 2, ...`` (length ``n``), as R builds it; then
        ``sigest`` when ``kern`` is omitted.  The same seed gives the same
        folds and numbers.
    n_jobs : int, optional
        Folds fitted in parallel with joblib (``-1``: all cores).  The
        results do not depend on it.
    progress : bool, default False
        Show the folds done (with ``n_jobs=1`` also each fold's passes and
        gradient norm), with ``tqdm`` when installed.
    method, approx, solver, **design_options
        The path solver (``"newton"`` needs ``stop="kkt"``; default: Newton
        with ``stop="kkt"``, MM with ``stop="step"``), and a kernel
        approximation or exact-kernel solver with its options, as in
        :func:`kerndwd.fit`; each fold fits its own approximation (e.g. its
        own landmarks).

    Returns
    -------
    CVResult
        ``lambda_``, ``cvm``, ``cvsd``, ``cvupper``, ``cvlower``,
        ``lambda_min``, ``lambda_1se`` (R's dotted names through
        ``res["lambda.min"]`` etc.), ``predmat``, ``foldid`` and ``fit_args``.

    Notes
    -----
    The error is the misclassification rate (class +1 where the held-out
    link is > 0).  When ``n / nfolds >= 3``, ``cvm`` is the mean over folds
    of the per-fold error rates and ``cvsd = sqrt(mean((e_k - cvm)^2) /
    (K - 1))`` over the ``K`` fold rates ``e_k``; otherwise the same is
    computed from the raw 0/1 errors with ``K`` the number of predictions.
    ``lambda_min`` is the largest lambda attaining ``min(cvm)``, and
    ``lambda_1se`` the largest lambda with ``cvm <= cvm_min + cvsd`` at
    ``lambda_min``.

    A fold whose path runs out of ``maxit`` returns fewer lambdas; its
    held-out predictions at the missing lambdas are NaN in ``predmat`` and
    are left out of ``cvm`` and ``cvsd`` at those lambdas (with a
    :class:`DWDConvergenceWarning`); ``fold_jerr`` records which fold stopped.

    Unlike R, held-out decision values always use the intended
    ``b0 + K(x_new, x) alpha`` (``b0 + x_new beta`` for the linear solver):
    R's ``predict`` bugs for ``anovadot``, ``splinedot`` and ``n == p``
    (see :func:`kerndwd.predict`) would otherwise leak into the CV error.

    Raises
    ------
    ValueError
        For invalid arguments: labels that are not exactly two classes,
        ``nfolds`` below 3 or above ``n``, a ``foldid`` that is not ``1..K``
        with ``K >= 3``, and whatever :func:`kerndwd.fit` refuses.

    See Also
    --------
    tune, kerndwd.plot_cv, CVResult

    Examples
    --------
    >>> import numpy as np, kerndwd
    >>> rng = np.random.default_rng(0)
    >>> X = rng.standard_normal((60, 2))
    >>> y = np.where(X[:, 0] + 0.5 * rng.standard_normal(60) > 0, 1, -1)
    >>> lambdas = 10.0 ** np.linspace(0, -3, 8)
    >>> res = kerndwd.cv(X, y, lambdas, kern=kerndwd.vanilladot(), nfolds=5, random_state=1)
    >>> res.predmat.shape  # one held-out decision value per row and lambda
    (60, 8)
    >>> bool(res.lambda_min in lambdas), round(res.cvm_min, 3)
    (True, 0.1)

    Refit on all the data at the chosen lambda:

    >>> path = kerndwd.fit(X, y, [res.lambda_1se], **res.fit_args)
    >>> bool(np.mean(path.predict(X).ravel() == y) > 0.8)  # training accuracy
    True
    """
    n_jobs = check_n_jobs(n_jobs)
    problem, foldid, cache = _setup(X, y, lambdas, kern, nfolds, foldid, wt, qval, eps, maxit, stop, random_state,
                                    approx=approx, solver=solver, design_options=design_options, method=method)
    with core.fold_report("cv folds", foldid, check_flag(progress, "progress")) as monitor:
        predmat, jerr = core.heldout_decisions(problem, cache, foldid, [problem.loss.q], [problem.y],
                                               n_jobs=n_jobs, monitor=monitor)
    result = _cv_result(problem, predmat[0, 0], jerr[0, 0], foldid, None)
    warn_grid_edge(result.index_min, problem.lambdas, "lambda_min", stacklevel=2)
    return result


def tune(X: ArrayLike, y: ArrayLike, lambdas: ArrayLike | None = None, qvals: ArrayLike = (1.0,),
         kern: Kernel | None = None, nfolds: int = 5, foldid: ArrayLike | None = None, wt: ArrayLike | None = None,
         *, eps: float | None = None, maxit: int = 100000, stop: Literal["step", "kkt"] | None = None,
         random_state: int | np.random.Generator | None = None, n_jobs: int | None = None, progress: bool = False,
         method: str | None = None, approx: str | None = None, solver: str | None = None,
         **design_options: Any) -> TuneResult:
    """Choose lambda and q together by cross-validation, as ``tunedwd`` in R.

    For every q in ``qvals`` the path is cross-validated as in :func:`cv`
    on the same folds; each q is scored by its ``cvm`` at its own
    ``lambda_1se``, and the q with the smallest score wins (ties: the last
    such q in ``qvals`` order); ``lam_tune`` is that q's ``lambda_1se``.

    As R's ``tunedwd`` does, the fold fits use the ridge
    ``kerndwd.engine.GAM_TUNE = 1e-6`` on the majoriser (``kerndwd`` uses
    1e-7) and, with ``vanilladot()``, the linear solver only when a fold's
    training size is strictly greater than ``p``.

    Parameters
    ----------
    X, y, lambdas, kern, nfolds, foldid, wt, eps, maxit, stop, random_state
        As in :func:`cv`.  ``wt`` is an addition (R's ``tunedwd`` has no
        weights).
    qvals : sequence of float, default (1,)
        Loss exponents to compare, each ``> 0``.
    n_jobs : int, optional
        Folds run in parallel with joblib (each fits every q); results do not depend on it.
    progress : bool, default False
        As in :func:`cv`.
    method, approx, solver, **design_options
        As in :func:`cv`.

    Returns
    -------
    TuneResult
        ``lam_tune``, ``q_tune``, ``cvres`` (a :class:`CVResult` per q, with
        its ``predmat``), ``cvm_1se`` per q, ``foldid``, ``fit_args``; R's
        names through ``res["lam.tune"]``, ``res["q.tune"]``, ``res["cvres"]``.

    Raises
    ------
    ValueError
        For invalid arguments: a q that is not positive, and whatever
        :func:`cv` refuses.

    See Also
    --------
    cv, TuneResult

    Examples
    --------
    >>> import numpy as np, kerndwd
    >>> rng = np.random.default_rng(0)
    >>> X = rng.standard_normal((60, 2))
    >>> y = np.where(X[:, 0] + 0.5 * rng.standard_normal(60) > 0, 1, -1)
    >>> res = kerndwd.tune(X, y, 10.0 ** np.linspace(0, -3, 8), qvals=[0.5, 1, 2],
    ...                    kern=kerndwd.vanilladot(), random_state=1)
    >>> res.cvm_1se.round(3).tolist()
    [0.117, 0.117, 0.133]
    >>> res.q_tune, round(res.lam_tune, 4)
    (1.0, 0.0193)
    >>> path = kerndwd.fit(X, y, [res.lam_tune], **res.fit_args)
    >>> path.qval
    1.0
    """
    n_jobs = check_n_jobs(n_jobs)
    qs = check_qvals(qvals)
    problem, foldid, cache = _setup(X, y, lambdas, kern, nfolds, foldid, wt, float(qs[0]), eps, maxit, stop,
                                    random_state, gam=GAM_TUNE, linear_rule="tunedwd", approx=approx,
                                    solver=solver, design_options=design_options, method=method)
    if getattr(problem.design, "chosen", None) is None and min(qs) < qs[0]:  # the problem was built, and checked, at qs[0]
        warn_slow_design(problem.design, float(min(qs)), problem.n, problem.storage)
    with core.fold_report("tune folds", foldid, check_flag(progress, "progress")) as monitor:
        predmat, jerr = core.heldout_decisions(problem, cache, foldid, qs, [problem.y], n_jobs=n_jobs,
                                               monitor=monitor)
    cvres = [_cv_result(problem, predmat[iq, 0], jerr[iq, 0], foldid, q) for iq, q in enumerate(qs)]
    result = TuneResult(qvals=qs, cvres=cvres, foldid=foldid, lambdas=problem.lambdas)
    warn_grid_edge(result.best.index_1se, problem.lambdas, "lam_tune", stacklevel=2)
    return result
