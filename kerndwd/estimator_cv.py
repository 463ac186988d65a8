"""The scikit-learn face with lambda (and q) chosen by cross-validation: :class:`DWDClassifierCV`.

Cross-validation is the engine's core that :func:`kerndwd.cv` and
:func:`kerndwd.tune` use (:func:`kerndwd.engine.crossval.heldout_decisions`:
one warm-started path per fold, q and class); the refit at the chosen
``(lambda, q)`` is a :class:`~kerndwd.estimator.DWDClassifier`, fitted
through its public ``fit``, and calibrated, with ``probability=True``, from
the cross-validation's own held-out decision values
(:func:`kerndwd.calibration.fit_heldout_platt`).
"""

from __future__ import annotations

import numbers
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ._inputs import build_problem, check_classifier_data, check_flag, check_lambdas, check_n_jobs, check_qvals, seed_of
from ._warnings import warn_folds, warn_grid_edge
from .calibration import fit_heldout_platt
from .engine import FactorCache
from .engine import crossval as core
from .engine.chunked import is_dask_collection
from .estimator import DWDClassifier, FittedModelFaces, estimator_settings, fit_rows
from .kernels import Kernel

if TYPE_CHECKING:
    from typing_extensions import Self

# scikit-learn, an optional dependency: .estimator above has already said how to install it
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.model_selection import check_cv

__all__ = ["DWDClassifierCV", "DEFAULT_CV_C", "default_cv_lambdas"]

#: The values of ``SVC``'s ``C`` whose lambdas (:func:`default_cv_lambdas`) are
#: DWDClassifierCV's default grid: 11 values, two per decade, from 0.01 to 1000.
DEFAULT_CV_C = 10.0 ** np.linspace(-2, 3, 11)


def default_cv_lambdas(n: int) -> NDArray[np.float64]:
    """DWDClassifierCV's default lambdas for ``n`` rows: ``lambda = 1 / (2 n C)`` for
    ``C`` in :data:`DEFAULT_CV_C`, decreasing.

    ``(n / (2 lambda))`` times DWD's objective ``(1/n) sum_i V_q(y_i f_i) +
    lambda ||f||^2`` is ``C sum_i V_q(y_i f_i) + ||f||^2 / 2`` with ``C = 1 /
    (2 n lambda)``: ``SVC``'s objective with the hinge replaced by ``V_q``, so
    the grid covers the ``C`` a user of ``SVC`` searches, at any ``n``.

    Examples
    --------
    >>> lam = default_cv_lambdas(1000)
    >>> lam.size, float(lam[0]), float(lam[-1])
    (11, 0.05, 5e-07)
    """
    return np.sort(1.0 / (2.0 * n * DEFAULT_CV_C))[::-1]


def _foldid(cv: Any, X: ArrayLike, y: ArrayLike, n: int,
            random_state: int | np.random.Generator | None) -> NDArray[np.int_]:
    """1-based fold labels from a scikit-learn ``cv`` argument.

    An integer draws R's assignment (a random permutation of
    ``1..cv, 1..cv, ...``), as :func:`kerndwd.cv` does; a splitter or an
    iterable of ``(train, test)`` pairs must have test sets that partition
    the rows (each row held out exactly once), as path CV needs.
    """
    if cv is None:
        cv = 5
    if isinstance(cv, numbers.Integral) and not isinstance(cv, bool):
        nfolds = core.check_nfolds(cv, n, name="cv")
        return core.draw_foldid(nfolds, n, np.random.default_rng(seed_of(random_state)))
    splits = list(check_cv(cv, y, classifier=True).split(X, y))
    foldid = np.zeros(n, dtype=int)
    for k, (_, test) in enumerate(splits, start=1):
        if (foldid[test] != 0).any():
            raise ValueError("cv: the test sets overlap; path cross-validation needs each row held out exactly once")
        foldid[test] = k
    if (foldid == 0).any():
        raise ValueError("cv: some rows are in no test set; path cross-validation needs each row held out exactly once")
    return foldid


class DWDClassifierCV(FittedModelFaces, ClassifierMixin, BaseEstimator):
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
        Candidate lambdas.  None: :func:`default_cv_lambdas` (the lambdas of
        ``SVC``'s ``C`` from 0.01 to 1000, ``lambda = 1 / (2 n C)``, 11
        values); ``"R"``: R's default grid.  A ``lambda_`` at either end of
        the grid is warned about (:class:`~kerndwd.DWDGridWarning`).
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
    cv_tol, cv_stop : default 1e-5, "kkt"
        Stopping rule of the fold paths.  Under the gradient rule with a
        nonlinear kernel every fold, every class and the refit are the
        columns of one Newton-CG solve over the kernel matrix of all rows
        (:mod:`kerndwd.engine.block`), each column its own fit's optimum; the
        refit at the chosen lambda then starts from its column.
        ``cv_stop="step"`` fits each fold alone by R's MM iteration.
        ``method`` applies to the folds and the refit alike:
        ``method="newton"`` needs ``cv_stop="kkt"``.
    n_jobs : int, optional
        Folds in parallel (joblib); results do not depend on it.
    progress : bool, default False
        Show the folds done and then the refit (see :class:`DWDClassifier`).

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
    (3, 11)
    >>> bool(clf.lambda_ in clf.cv_results_["lambdas"]), clf.q_ in (0.5, 1.0, 2.0)
    (True, True)
    >>> round(clf.score(X[two], y[two]), 2)
    0.98
    """

    def __init__(self, lambdas: ArrayLike | Literal["R"] | None = None, *, qvals: ArrayLike = (1.0,),
                 kernel: str | Kernel | Callable[..., Any] = "linear", gamma: float | Literal["scale", "sigest"] = "scale",
                 degree: int = 3, coef0: float = 0.0, order: float = 1.0, cv: Any = 5,
                 choose: Literal["lambda_min", "lambda_1se"] = "lambda_min",
                 class_weight: Mapping[Any, float] | Literal["balanced"] | None = None, tol: float = 1e-10,
                 stop: Literal["kkt", "step"] = "kkt", max_iter: int = 100000, cv_tol: float = 1e-5,
                 cv_stop: Literal["step", "kkt"] = "kkt", n_jobs: int | None = None,
                 random_state: int | np.random.Generator | None = None, method: str | None = None,
                 approx: str | None = None, n_components: int | None = None, solver: str | None = None,
                 design_options: dict[str, Any] | None = None, probability: bool = False,
                 progress: bool = False) -> None:
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
        self.progress = progress

    def _estimator(self, lam: float, q: float) -> DWDClassifier:
        return DWDClassifier(lambd=lam, q=q, kernel=self.kernel, gamma=self.gamma, degree=self.degree,
                             coef0=self.coef0, order=self.order, class_weight=self.class_weight, tol=self.tol,
                             stop=self.stop, max_iter=self.max_iter, random_state=self.random_state,
                             method=self.method, approx=self.approx, n_components=self.n_components,
                             solver=self.solver, design_options=self.design_options, probability=False,
                             progress=self.progress)

    def fit(self, X: ArrayLike, y: ArrayLike, sample_weight: ArrayLike | None = None) -> Self:
        """Cross-validate, choose ``(lambda_, q_)``, refit on all data; returns self.

        Parameters
        ----------
        X : array_like or DataFrame, shape (n_samples, n_features)
            Training rows (the Gram matrix, shape (n_samples, n_samples), with ``kernel="precomputed"``).
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
        TypeError
            A Dask ``X`` (cross-validation collects held-out decision values of every row).
        """
        if self.choose not in ("lambda_min", "lambda_1se"):
            raise ValueError(f"choose must be 'lambda_min' or 'lambda_1se', got {self.choose!r}")
        if not isinstance(self.probability, (bool, np.bool_)):
            raise TypeError(f"probability must be True or False, got {self.probability!r}")
        if is_dask_collection(X):
            raise TypeError("X: DWDClassifierCV cannot take Dask input (cross-validation collects held-out "
                            "decision values for every row); fit DWDClassifier on the Dask array and choose "
                            "lambda on a held-out split, or cross-validate on a sample that fits in memory")
        qs = check_qvals(self.qvals)
        n_jobs = check_n_jobs(self.n_jobs)
        data = check_classifier_data(fit_rows(self, X), y, sample_weight, self.class_weight)
        foldid = _foldid(self.cv, X, y, data.n if data.kept is None else data.kept.size, self.random_state)
        if data.kept is not None:
            # fold labels must stay 1..K without gaps
            foldid = np.unique(foldid[data.kept], return_inverse=True)[1] + 1
        foldid = core.check_foldid(foldid, data.n)
        if self.lambdas is None:
            lambdas: Any = default_cv_lambdas(data.n)  # validated below
        elif isinstance(self.lambdas, str) and self.lambdas == "R":
            lambdas = None
        else:
            lambdas = self.lambdas
        lambdas = check_lambdas(lambdas, data.n, "lambdas")
        problem = build_problem(data, estimator_settings(self, lambdas, qs[0], self.cv_tol, self.cv_stop,
                                                         self.max_iter, names={"eps": "cv_tol", "stop": "cv_stop"}))
        with core.fold_report(f"{type(self).__name__} folds", foldid,
                              check_flag(self.progress, "progress")) as monitor:
            predmat, jerr, refits = core.heldout_decisions(problem, FactorCache(problem.X, problem.kern), foldid,
                                                           qs, list(data.targets), n_jobs=n_jobs, monitor=monitor,
                                                           refit_eps=problem.eps)
        cvm = np.empty((qs.size, lambdas.size))
        cvsd = np.empty((qs.size, lambdas.size))
        for iq, q in enumerate(qs):
            for it in range(len(data.targets)):
                warn_folds(jerr[iq, it], lambdas, problem.maxit, q=q)
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
        warn_grid_edge(int(picks[iq, which]), lambdas, "lambda_", stacklevel=2)
        # the refit starts from its column of the block, where there is one
        start = None if refits is None else refits.alpha[iq, :, :, picks[iq, which]].T
        self.best_estimator_ = self._estimator(self.lambda_, self.q_)._fit(X, y, sample_weight, start=start)
        if self.probability:
            # Platt's sigmoid from the cross-validation's own held-out decision
            # values at the chosen (lambda, q): no further fits
            self.best_estimator_.path_.platt = fit_heldout_platt(predmat[iq, :, :, picks[iq, which]], data.targets,
                                                                 stacklevel=3)
        self.path_ = self.best_estimator_.path_
        return self

