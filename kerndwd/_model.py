"""What the estimators fit and keep: :class:`DWDModel`, DWD at one lambda for one
or more binary targets sharing one basis.

:func:`fit_model` is what an estimator hands its validated problem to, once:
under one progress report it fits every binary target (:func:`fit_targets`:
one for two classes, one per class for one-vs-rest) with the one majoriser
the problem's design builds (an eigendecomposition of ``Z'Z`` or of the
kernel matrix, a Cholesky factor when weighted, serves every class, and
each class costs only its own iterations), and, when asked, Platt's sigmoid
on held-out folds.  The model turns new rows into decision values, labels
and probabilities through one object, for rows in memory or on a Dask
cluster (lazily there), and keeps what the estimators' fitted attributes
read.
"""

from __future__ import annotations

import warnings

import numpy as np

from . import _predict
from ._warnings import DIVERGED_WHY, DWDConvergenceWarning
from .calibration import fit_platt
from ._inputs import seed_of
from .engine import FactorCache, build_majoriser, jerr_diverged, run_path
from .engine import crossval as core
from .engine.progress import Progress, reporting
from .engine.progress import current as current_progress

__all__ = ["DWDModel", "fit_model", "fit_targets", "CALIBRATION_FOLDS"]

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
        Platt's ``(a, b)`` when calibrated (:meth:`calibrate`).
    n_features : int or None
        The number of columns fitted on (:func:`fit_model` records it).
    feature_names : ndarray of str or None
        The column names of a DataFrame whose names are all strings.
    """

    def __init__(self, alpha, problem, majoriser, n_iter, kkt, objective):
        self.alpha = alpha
        self.lambd = float(problem.lambdas[0])
        self.qval = problem.loss.q
        self.classes = problem.classes
        self.predictor = majoriser.predictor
        self.kern = problem.kern
        self.solver = majoriser.solver
        self.design = problem.design.name
        self.chosen = problem.design.chosen
        self.method = problem.method
        self.stop = problem.stop
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

    def calibrate(self, heldout, targets, stacklevel=3):
        """Fit Platt's sigmoid to held-out decision values (shape (n_targets, n),
        NaN where missing) of the +-1 ``targets``.

        The sigmoid is centred on the decision boundary (probability 1/2 at
        ``f = 0``), and one sigmoid serves every one-vs-rest problem, fitted on
        their pooled values: the most probable class is then always the
        predicted one.  A slope of the wrong sign (probabilities falling as
        the decision value rises) is not kept: the probabilities then invert
        the population minimiser (4.4), with a warning (``stacklevel`` as
        :func:`warnings.warn` takes it).
        """
        f, t = np.concatenate(list(heldout)), np.concatenate(list(targets))
        keep = ~np.isnan(f)
        a, b = fit_platt(f[keep], t[keep], centred=True)
        if not a < 0:
            warnings.warn(f"Platt's sigmoid fitted to the held-out decision values has slope a = {a:.3g} >= 0 "
                          "(probabilities would fall as the decision value rises); predict_proba inverts the "
                          "population minimiser (4.4) instead", UserWarning, stacklevel=stacklevel)
        self.platt = (a, b)
        return self

    def predict_proba(self, X):
        """Class probabilities, shape (m, n_classes); one-vs-rest probabilities are
        normalised to sum to 1.  Platt's sigmoid when :meth:`calibrate` kept
        one, else the inversion of (4.4)."""
        D = self.decision_function(X)
        D2 = D[:, None] if self.classes.size == 2 else D
        if self.platt is not None and self.platt[0] < 0:
            P = _predict.platt(D2, *self.platt)
        else:
            P = _predict.population_probability(D2, self.qval)
        return _predict.class_probabilities(P, self.classes.size)


def fit_targets(problem, targets, cache):
    """Fit every binary target of ``problem`` (one majoriser for all) at its one lambda.

    A target whose budget ran out keeps its last iterate, one abandoned as
    non-finite its starting point (the zero model), each with a
    :class:`~kerndwd.DWDConvergenceWarning`, as scikit-learn's solvers do.

    Returns
    -------
    DWDModel
    """
    majoriser = build_majoriser(problem, cache)
    monitor = current_progress()
    cols, n_iter, kkt, obj = [], [], [], []
    for y_pm in targets:
        res = run_path(majoriser, problem.with_labels(y_pm))
        if res.jerr and jerr_diverged(res.jerr):
            alpha, value, grad_norm = res.unfinished
            warnings.warn(f"DWD was abandoned at lambd={problem.lambdas[0]:g}: {DIVERGED_WHY}; the starting point "
                          "(the zero model) is kept. Rescale X or sample_weight, or increase lambd.",
                          DWDConvergenceWarning, stacklevel=5)
        elif res.jerr:
            alpha, value, grad_norm = res.unfinished
            warnings.warn(f"DWD did not reach tol={problem.eps:g} (stop={problem.stop!r}) within "
                          f"max_iter={problem.maxit} iterations at lambd={problem.lambdas[0]:g}; the last iterate "
                          "is kept. Increase max_iter or tol.", DWDConvergenceWarning, stacklevel=5)
        else:
            alpha, value, grad_norm = res.alpha[:, 0], float(res.objective[0]), float(res.kkt[0])
        cols.append(alpha)
        obj.append(value)
        kkt.append(grad_norm)
        n_iter.append(int(res.npass[0]))
        if monitor is not None:
            monitor.advance()
    return DWDModel(np.column_stack(cols), problem, majoriser, np.array(n_iter), np.array(kkt), np.array(obj))


def fit_model(problem, data, name, *, probability=False, random_state=None, progress=False):
    """What an estimator fits: every binary target of ``problem`` at its one
    lambda and, with ``probability``, Platt's sigmoid on held-out folds, under
    one progress report (one unit per target).

    Parameters
    ----------
    problem : Problem
        The validated problem (:func:`kerndwd._inputs.build_problem`).
    data : Data
        Its validated data: the targets, and the columns' count and names.
    name : str
        What the progress report calls the work (the estimator's class).
    probability : bool
        Calibrate (stratified folds drawn from ``random_state``).
    random_state : int, Generator, RandomState or None
    progress : bool
        Show the targets fitted (:class:`kerndwd.engine.progress.Progress`).

    Returns
    -------
    DWDModel
    """
    if probability and problem.storage == "remote":
        raise ValueError("probability=True calibrates on held-out folds of the rows, which a Dask X keeps on "
                         "the cluster; fit with probability=False, or calibrate on a sample in memory")
    cache = FactorCache(problem.X, problem.kern)
    with reporting(Progress(name, total=len(data.targets), unit="class") if progress else None):
        model = fit_targets(problem, data.targets, cache)
        if probability:
            _calibrate_on_folds(model, problem, data.targets, cache, random_state)
    model.n_features, model.feature_names = data.X.shape[1], data.feature_names
    return model


def _calibrate_on_folds(model, problem, targets, cache, random_state):
    """Platt's sigmoid from held-out decision values (stratified folds drawn
    from ``random_state``) at the fitted lambda and q."""
    y_idx = np.argmax(np.column_stack(targets), axis=1) if len(targets) > 1 else (targets[0] > 0).astype(int)
    counts = np.bincount(y_idx)
    if counts.min() < 2:
        warnings.warn(f"probability=True: a class has {counts.min()} sample, too few to hold out; Platt's "
                      "sigmoid is fitted to the training decision values instead (over-confident)",
                      UserWarning, stacklevel=4)
        model.calibrate(model.predictor.decision(problem.X, model.alpha).T, targets, stacklevel=4)
        return
    nfolds = int(min(CALIBRATION_FOLDS, counts.min()))
    rng = np.random.default_rng(seed_of(random_state))
    foldid = np.empty(y_idx.size, dtype=int)
    for k in np.unique(y_idx):  # stratified: every training part keeps every class
        rows = np.flatnonzero(y_idx == k)
        foldid[rows] = rng.permutation(np.resize(np.arange(1, nfolds + 1), rows.size))
    predmat, _ = core.heldout_decisions(problem, cache, foldid, [problem.loss.q], list(targets))
    model.calibrate(predmat[0, :, :, 0], targets, stacklevel=4)
