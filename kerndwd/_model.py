"""What the estimators fit and keep: :class:`DWDModel`, DWD at one lambda for one
or more binary targets sharing one basis.

:func:`fit_model` is what an estimator hands its inputs and its settings
to, once: the input layer validates them into the data and one problem
(:func:`kerndwd._inputs.check_classifier_data` and
:func:`kerndwd._inputs.build_problem`); then, under one progress
report, every binary target (one for two classes, one per class for
one-vs-rest) is fitted with the one majoriser the problem's design builds
(an eigendecomposition of ``Z'Z`` or of the kernel matrix, a Cholesky
factor when weighted, serves every class, and each class costs only its
own iterations), and, when asked, Platt's sigmoid is fitted to held-out
decision values of stratified folds
(:func:`kerndwd.calibration.fit_heldout_platt`).  The model turns new rows into decision values, labels
and probabilities through one object, for rows in memory or on a Dask
cluster (lazily there), and keeps what the estimators' fitted attributes
read.
"""

from __future__ import annotations

import warnings
from typing import TYPE_CHECKING, Any

import numpy as np

from . import _predict
from ._inputs.arguments import check_flag, seed_of
from ._inputs.rows import check_classifier_data
from ._inputs.settings import build_problem
from ._warnings import DIVERGED_WHY, convergence_warning
from .calibration import fit_heldout_platt
from .engine import FactorCache, build_majoriser, jerr_diverged, run_path
from .engine import crossval as core
from .engine.progress import Progress, reporting
from .engine.progress import current as current_progress

if TYPE_CHECKING:
    from numpy.typing import NDArray

    from .engine.predictors import Predictor
    from .kernels import Kernel

__all__ = ["DWDModel", "fit_model", "CALIBRATION_FOLDS"]

#: Folds of the held-out decision values that ``probability=True`` calibrates on
#: (fewer when a class has fewer samples).
CALIBRATION_FOLDS = 5


class DWDModel:
    """DWD at one lambda for one or more binary targets, sharing one basis.

    Attributes
    ----------
    alpha : ndarray, shape (ncoef, n_targets)
        Intercept-first coefficients, one column per binary problem.
    lambd, qval : float
        The penalty and the loss exponent.
    classes : ndarray
        The labels; with two, ``classes[1]`` is the positive one (R's order).
    predictor : Predictor
        Turns ``alpha`` into decision values at new rows.
    kern : Kernel
        The kernel that was fitted.
    solver, method, stop : str
        The majoriser, the path solver and the stopping rule.
    design : str
        The design that fitted it (``"exact"``, ``"cg"``, ``"bcd"``, an approximation).
    chosen : str or None
        Why, when ``solver="auto"`` picked the design.
    n_iter, kkt, objective : ndarray, shape (n_targets,)
        Iterations, gradient norm and objective per binary problem.
    platt : tuple of float or None
        Platt's ``(a, b)`` when calibrated
        (:func:`kerndwd.calibration.fit_heldout_platt`).
    n_features : int or None
        The number of columns fitted on (:func:`fit_model` records it).
    feature_names : ndarray of str or None
        The column names of a DataFrame whose names are all strings.
    """

    kern: Kernel
    qval: float
    classes: NDArray[Any]
    stop: str
    method: str
    design: str
    chosen: str | None
    solver: str
    predictor: Predictor

    def __init__(self, alpha, problem, majoriser, n_iter, kkt, objective):
        self.alpha = alpha
        self.lambd = float(problem.lambdas[0])
        self.__dict__.update(problem.fitted_with(majoriser))  # kern, qval, classes, solver, design, ...
        self.n_iter, self.kkt, self.objective = n_iter, kkt, objective
        self.platt = None
        self.n_features = self.feature_names = None

    @property
    def n_targets(self):
        return self.alpha.shape[1]

    def decision_function(self, X):
        """Decision values: shape (m,) for two classes, (m, n_classes) one-vs-rest.

        Parameters
        ----------
        X : array_like, sparse matrix or Dask collection, shape (m, p)

        Returns
        -------
        ndarray or dask.array.Array
        """
        D = _predict.links(self.predictor, _predict.new_rows(X, self.predictor, "X"), self.alpha)
        return D[:, 0] if self.classes.size == 2 else D

    def predict(self, X):
        """Labels: ``classes[1]`` where the decision value is > 0 (two classes,
        R's rule), else the class of the largest one-vs-rest value."""
        D = self.decision_function(X)
        if self.classes.size == 2:
            return _predict.sign_labels(D, self.classes)
        return _predict.argmax_labels(D, self.classes)

    def predict_proba(self, X):
        """Class probabilities, shape (m, n_classes); one-vs-rest probabilities are
        normalised to sum to 1.  Platt's sigmoid when one of slope < 0 was
        kept, else the inversion of (4.4)."""
        D = self.decision_function(X)
        D2 = D[:, None] if self.classes.size == 2 else D
        if self.platt is not None and self.platt[0] < 0:
            P = _predict.platt(D2, *self.platt)
        else:
            P = _predict.population_probability(D2, self.qval)
        return _predict.class_probabilities(P, self.classes.size)


def fit_model(X, y, sample_weight, class_weight, settings, name, *, probability=False, random_state=None,
              progress=False, start=None):
    """What an estimator fits: its data validated with its settings into one
    problem, every binary target of it at its one lambda and, with
    ``probability``, Platt's sigmoid on held-out folds, under one progress
    report (one unit per target).

    A target whose budget ran out keeps its last iterate, one abandoned as
    non-finite its starting point (the zero model), each with a
    :class:`~kerndwd.DWDConvergenceWarning`, as scikit-learn's solvers do.

    Parameters
    ----------
    X, y, sample_weight, class_weight
        The estimator's data, as given
        (:func:`kerndwd._inputs.check_classifier_data`).
    settings : Settings
        Its other arguments (:func:`kerndwd._inputs.build_problem`).
    name : str
        What the progress report calls the work (the estimator's class).
    probability : bool
        Calibrate (stratified folds drawn from ``random_state``).
    random_state : int, Generator, RandomState or None
    progress : bool
        Show the targets fitted (:class:`kerndwd.engine.progress.Progress`);
        both flags are checked after the data and the settings.
    start : ndarray, shape (ncoef, n_targets), optional
        Coefficients each target's fit starts from (a column with a NaN
        starts from zero).

    Returns
    -------
    DWDModel
    """
    data = check_classifier_data(X, y, sample_weight, class_weight, stacklevel=3)
    problem = build_problem(data, settings)
    probability, progress = check_flag(probability, "probability"), check_flag(progress, "progress")
    if probability and problem.storage == "remote":
        raise ValueError("probability=True calibrates on held-out folds of the rows, which a Dask X keeps on "
                         "the cluster; fit with probability=False, or calibrate on a sample in memory")
    targets = data.targets
    cache = FactorCache(problem.X, problem.kern)
    with reporting(Progress(name, total=len(targets), unit="class") if progress else None):
        majoriser = build_majoriser(problem, cache)
        monitor = current_progress()
        cols, n_iter, kkt, obj = [], [], [], []
        for it, y_pm in enumerate(targets):
            warm = None if start is None or not np.isfinite(start[:, it]).all() else start[:, it]
            res = run_path(majoriser, problem.with_labels(y_pm), start=warm)
            if res.jerr and jerr_diverged(res.jerr):
                alpha, value, grad_norm = res.unfinished
                warnings.warn(f"DWD was abandoned at lambd={problem.lambdas[0]:g}: {DIVERGED_WHY}; the starting "
                              "point (the zero model) is kept. Rescale X or sample_weight, or increase lambd.",
                              convergence_warning(), stacklevel=4)
            elif res.jerr:
                alpha, value, grad_norm = res.unfinished
                warnings.warn(f"DWD did not reach tol={problem.eps:g} (stop={problem.stop!r}) within "
                              f"max_iter={problem.maxit} iterations at lambd={problem.lambdas[0]:g}; the last "
                              "iterate is kept. Increase max_iter or tol.", convergence_warning(), stacklevel=4)
            else:
                alpha, value, grad_norm = res.alpha[:, 0], float(res.objective[0]), float(res.kkt[0])
            cols.append(alpha)
            obj.append(value)
            kkt.append(grad_norm)
            n_iter.append(int(res.npass[0]))
            if monitor is not None:
                monitor.advance()
        model = DWDModel(np.column_stack(cols), problem, majoriser, np.array(n_iter), np.array(kkt), np.array(obj))
        if probability:
            # Platt's sigmoid from held-out decision values (stratified folds drawn
            # from random_state) at the fitted lambda and q
            y_idx = np.argmax(np.column_stack(targets), axis=1) if len(targets) > 1 else (targets[0] > 0).astype(int)
            counts = np.bincount(y_idx)
            if counts.min() < 2:
                warnings.warn(f"probability=True: a class has {counts.min()} sample, too few to hold out; Platt's "
                              "sigmoid is fitted to the training decision values instead (over-confident)",
                              UserWarning, stacklevel=3)
                heldout = model.predictor.decision(problem.X, model.alpha).T
            else:
                nfolds = int(min(CALIBRATION_FOLDS, counts.min()))
                foldid = core.draw_stratified_foldid(y_idx, nfolds, np.random.default_rng(seed_of(random_state)))
                predmat, _ = core.heldout_decisions(problem, cache, foldid, [problem.loss.q], list(targets))
                heldout = predmat[0, :, :, 0]
            model.platt = fit_heldout_platt(heldout, targets, stacklevel=3)
    model.n_features, model.feature_names = data.X.shape[1], data.feature_names
    return model
