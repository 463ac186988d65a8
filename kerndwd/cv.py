"""Cross-validation of the DWD path: ``cv()`` and ``tune()``.

``cv`` chooses ``lambda`` as the R package's ``cv.kerndwd`` does, and
``tune`` chooses ``lambda`` together with the loss exponent ``q`` as its
``tunedwd`` does.  Both use the held-out misclassification rate and R's
fold, standard-error and tie rules, number for number.

Each fold costs one warm-started path (the same MM engine as
:func:`kerndwd.fit`, through :func:`kerndwd.path.fit_prepared`), never one
fit per lambda.  For the kernel solver the kernel matrix of all of ``X`` is
formed once; every fold slices its training block and its held-out
cross-kernel out of it.  Folds (and, in ``tune``, the pairs of a fold and a
q value) are independent tasks: ``n_jobs`` runs them in parallel with joblib,
and the numbers do not depend on it.

``kerndwd.cv`` names the function (as ``kerndwd.fit`` does); the module
itself is ``importlib.import_module("kerndwd.cv")`` or ``from kerndwd.cv
import ...``.
"""

from __future__ import annotations

import numbers
import warnings

import numpy as np
from scipy import linalg

from . import _mm
from ._checks import DWDConvergenceWarning, check_qval
from ._rnames import RNamed
from .path import check_path_inputs, fit_prepared, link_values, resolve_kernel, uses_linear_solver

__all__ = ["cv", "tune", "CVResult", "TuneResult"]

#: What the CV error measures (R's ``name`` component, the y-label of the plot).
ERROR_NAME = "Misclassification Error"

#: R refuses fewer folds than this (``nfolds < 3`` is an error in ``cv.kerndwd``).
MIN_FOLDS = 3

#: When every fold holds at least this many observations on average
#: (``n / nfolds >= 3``) R summarises each fold by its mean error first;
#: below it, it works on the raw 0/1 errors.
MIN_FOLD_SIZE_FOR_FOLD_MEANS = 3


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
        ``maxit``, ``stop``), e.g.
        ``kerndwd.fit(X, y, res.lambda_, **res.fit_args)``.
    """

    _R_NAMES = ("lambda", "cvm", "cvsd", "cvupper", "cvlower", "lambda.min", "lambda.1se",
                "cvm.min", "cvm.1se", "qval", "predmat", "foldid", "name")

    def __init__(self, *, lambdas, cvm, cvsd, predmat, foldid, fold_jerr, qval, fit_args):
        self.lambda_ = lambdas
        self.cvm = cvm
        self.cvsd = cvsd
        self.cvupper = cvm + cvsd
        self.cvlower = cvm - cvsd
        self.index_min, self.index_1se = _select(cvm, cvsd)
        self.lambda_min = float(lambdas[self.index_min])
        self.lambda_1se = float(lambdas[self.index_1se])
        self.cvm_min = float(cvm[self.index_min])
        self.cvm_1se = float(cvm[self.index_1se])
        self.predmat = predmat
        self.foldid = foldid
        self.nfolds = int(foldid.max())
        self.fold_jerr = fold_jerr
        self.qval = float(qval)
        self.name = ERROR_NAME
        self.fit_args = fit_args

    @property
    def lambdas(self):
        return self.lambda_

    def __repr__(self):
        return (
            f"CVResult(qval={self.qval:g}, nfolds={self.nfolds}, nlambda={self.lambda_.size}, "
            f"lambda_min={self.lambda_min:.6g} (cvm {self.cvm_min:.4g}), "
            f"lambda_1se={self.lambda_1se:.6g} (cvm {self.cvm_1se:.4g}))"
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
    """

    _R_NAMES = ("lam.tune", "q.tune", "cvres", "qvals", "foldid", "lambda")

    def __init__(self, *, qvals, cvres, foldid, lambdas, fit_args=None):
        self.qvals = qvals
        self.cvres = cvres
        self.cvm_1se = np.array([r.cvm_1se for r in cvres])
        best = np.flatnonzero(self.cvm_1se == self.cvm_1se.min())
        self.index_tune = int(best[-1])  # R: the last q attaining the minimum
        self.q_tune = float(qvals[self.index_tune])
        self.lam_tune = cvres[self.index_tune].lambda_1se
        self.foldid = foldid
        self.lambda_ = lambdas
        self.fit_args = dict(cvres[self.index_tune].fit_args) if fit_args is None else fit_args

    @property
    def best(self):
        """The :class:`CVResult` of the chosen q."""
        return self.cvres[self.index_tune]

    def __repr__(self):
        return (
            f"TuneResult(q_tune={self.q_tune:g}, lam_tune={self.lam_tune:.6g}, "
            f"qvals={self.qvals.tolist()}, cvm_1se={np.round(self.cvm_1se, 4).tolist()})"
        )


# --------------------------------------------------------------------------
# R's rules
# --------------------------------------------------------------------------
def _select(cvm, cvsd):
    """Indices of R's ``lambda.min`` and ``lambda.1se`` (lambdas decreasing,
    so the first index is the largest lambda).

    NaN entries of ``cvm`` (lambdas no fold reached) are ignored.  When the
    standard error at ``lambda_min`` is undefined (a single fold reached it)
    ``lambda_1se`` falls back to ``lambda_min``.
    """
    finite = ~np.isnan(cvm)
    if not finite.any():
        raise RuntimeError(
            "no fold finished even the first lambda (maxit ran out on every fold): "
            "increase maxit or start the path at a larger lambda"
        )
    cvmin = cvm[finite].min()
    i_min = int(np.flatnonzero(finite & (cvm <= cvmin))[0])
    bound = cvm[i_min] + cvsd[i_min]
    within = finite & (cvm <= bound)
    i_1se = int(np.flatnonzero(within)[0]) if within.any() else i_min
    return i_min, i_1se


def _cv_error(predmat, y_pm, foldid, nfolds):
    """``cvm`` and ``cvsd`` from the held-out decision values (SPEC.md, cv.kerndwd).

    A held-out point is misclassified when its predicted class (+1 where the
    link is > 0, else -1) differs from its label.  With ``n / nfolds >= 3``
    each fold is summarised by its mean error; ``cvm`` is the mean of the
    fold means and ``cvsd = sqrt(mean((foldmean - cvm)^2) / (N - 1))``, ``N``
    the number of folds.  Otherwise the same formulas are applied to the raw
    0/1 errors, ``N`` being the number of predictions.  Missing predictions
    (NaN, a fold whose path stopped early) are left out of both, per lambda.
    """
    missing = np.isnan(predmat)
    err = (np.where(predmat > 0, 1.0, -1.0) != y_pm[:, None]).astype(float)
    err[missing] = np.nan
    n = y_pm.shape[0]
    if n / nfolds >= MIN_FOLD_SIZE_FOR_FOLD_MEANS:
        onehot = foldid[None, :] == np.arange(1, nfolds + 1)[:, None]  # (nfolds, n)
        counts = onehot.astype(float) @ (~missing).astype(float)
        sums = onehot.astype(float) @ np.where(missing, 0.0, err)
        with np.errstate(invalid="ignore", divide="ignore"):
            units = sums / counts  # fold means; NaN where the fold has no prediction
    else:
        units = err
    return _mean_and_se(units)


def _mean_and_se(units):
    """Column means of ``units`` (NaN ignored) and ``sqrt(mean((u - m)^2) / (N - 1))``.

    The means are formed as R's ``mean`` forms them: the sum accumulated in
    extended precision (``numpy.longdouble``), divided by ``N``, plus one
    correction pass.  Error rates are sums of fractions like ``k / 20`` whose
    last bit depends on that rounding, and R's tie rules compare them
    exactly.  Plain double sums differ from R's ``cvm`` in the last bit at
    several lambdas of the ``cv_rbf`` fixture, enough to turn a tie in R into
    a strict inequality here.  Where ``longdouble`` is just
    ``double`` (some platforms) the last bit may differ from R's.
    """
    present = ~np.isnan(units)
    N = present.sum(axis=0)
    Nl = N.astype(np.longdouble)
    vals = np.where(present, units, 0.0).astype(np.longdouble)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean_l = vals.sum(axis=0) / Nl
        mean_l = mean_l + np.where(present, vals - mean_l, 0.0).sum(axis=0) / Nl
        cvm = mean_l.astype(float)
        dev2 = np.where(present, (units - cvm) ** 2, 0.0).astype(np.longdouble).sum(axis=0) / Nl
        cvsd = np.sqrt(dev2.astype(float) / (N - 1))
    cvm[N == 0] = np.nan
    cvsd[N < 2] = np.nan
    return cvm, cvsd


# --------------------------------------------------------------------------
# input checks specific to cross-validation
# --------------------------------------------------------------------------
def _check_nfolds(nfolds, n):
    whole = isinstance(nfolds, numbers.Real) and float(nfolds).is_integer()
    if isinstance(nfolds, (bool, np.bool_)) or not whole:
        raise TypeError(f"nfolds must be an integer, got {nfolds!r}")
    nfolds = int(nfolds)
    if nfolds < MIN_FOLDS:
        raise ValueError(f"nfolds must be at least {MIN_FOLDS} (as in R's cv.kerndwd), got {nfolds}")
    if nfolds > n:
        raise ValueError(f"nfolds={nfolds} exceeds the number of observations ({n}); every fold needs one")
    return nfolds


def _check_foldid(foldid, n):
    """1-based fold labels as in R: integers 1..K, each used, K >= 3."""
    try:
        arr = np.asarray(foldid)
    except Exception:
        raise TypeError("foldid must be a sequence of integers") from None
    if hasattr(foldid, "to_numpy"):
        arr = np.asarray(foldid.to_numpy())
    if arr.ndim != 1 or arr.shape[0] != n:
        raise ValueError(f"foldid must have one entry per row of X ({n}), got shape {arr.shape}")
    if arr.dtype == bool or not np.issubdtype(arr.dtype, np.number):
        raise TypeError(f"foldid must hold integers, got dtype {arr.dtype}")
    arr = arr.astype(float)
    if not np.isfinite(arr).all() or not (arr == np.round(arr)).all():
        raise ValueError("foldid must hold whole numbers (fold labels 1, 2, ..., nfolds)")
    arr = arr.astype(int)
    if arr.min() < 1:
        raise ValueError(
            f"foldid is 1-based as in R (labels 1..nfolds) but contains {arr.min()}; "
            "for 0-based fold labels pass foldid + 1"
        )
    nfolds = int(arr.max())
    empty = np.setdiff1d(np.arange(1, nfolds + 1), arr)
    if empty.size:
        raise ValueError(f"foldid leaves fold(s) {empty.tolist()} empty; use labels 1..nfolds, each at least once")
    if nfolds < MIN_FOLDS:
        raise ValueError(f"foldid defines {nfolds} folds; at least {MIN_FOLDS} are needed (as in R)")
    return arr


def _check_qvals(qvals):
    try:
        arr = np.atleast_1d(np.asarray(qvals, dtype=float))
    except (TypeError, ValueError):
        raise TypeError(f"qvals must be a sequence of positive numbers, got {qvals!r}") from None
    if arr.ndim != 1 or arr.size == 0:
        raise ValueError("qvals must be a non-empty 1-D sequence of positive numbers")
    if not np.isfinite(arr).all() or (arr <= 0).any():
        bad = arr[~(np.isfinite(arr) & (arr > 0))]
        raise ValueError(f"qvals must be positive and finite (the loss needs q > 0), got {bad.tolist()}")
    return arr.copy()


def _check_n_jobs(n_jobs):
    if n_jobs is None:
        return 1
    if not isinstance(n_jobs, numbers.Integral) or isinstance(n_jobs, bool) or n_jobs == 0:
        raise ValueError(f"n_jobs must be None or a non-zero integer (-1 = all cores), got {n_jobs!r}")
    return int(n_jobs)


# --------------------------------------------------------------------------
# one fold
# --------------------------------------------------------------------------
def heldout_links(path, newx, K_cross=None):
    """Decision values of a fitted path at held-out rows, one column per fitted lambda.

    Parameters
    ----------
    path : DWDPath
        A path fitted on the training rows.
    newx : ndarray, shape (m, p)
        The held-out rows.
    K_cross : ndarray, shape (m, n_train), optional
        The kernel between the held-out and the training rows, sliced from a
        kernel matrix formed once; required for kernel-solver paths.

    Returns
    -------
    ndarray, shape (m, path.alpha.shape[1])
        ``b0 + newx beta`` (linear solver) or ``b0 + K_cross alpha``.
    """
    if path.is_linear or K_cross is None:
        return link_values(path, newx, path.alpha)
    return path.alpha[0] + K_cross @ path.alpha[1:]


def _fit_fold(X, y_pm, classes, lam, q, w, eps, maxit, kern, train, test, Kfull, gam, strict, rule,
              eig=None):
    """Fit one warm-started path on ``train`` and return its held-out links and ``jerr``.

    ``eig``: the eigendecomposition of the fold's training kernel matrix,
    when one is shared by several q (see :func:`_fold_eigs`).
    """
    kernel_solver = not uses_linear_solver(kern, train.size, X.shape[1], w is not None, strict)
    K_train = Kfull[np.ix_(train, train)] if kernel_solver else None
    path = fit_prepared(
        X[train], y_pm[train], classes, lam, q, None if w is None else w[train], eps, maxit, kern,
        gam=gam, strict=strict, K=K_train, rule=rule, warn=False, eig=eig,
    )
    K_cross = Kfull[np.ix_(test, train)] if kernel_solver else None
    return heldout_links(path, X[test], K_cross), path.jerr


def _fold_eigs(X, kern, folds, Kfull, weighted, strict, nq):
    """Per fold, the eigendecomposition of its training kernel matrix, formed once
    and shared by every q of ``tune`` (it depends on neither q nor y); ``None``
    where the fold does not use the unweighted kernel solver or only one q is
    fitted."""
    if nq < 2 or weighted or Kfull is None:
        return [None] * len(folds)
    out = []
    for train, _ in folds:
        if uses_linear_solver(kern, train.size, X.shape[1], weighted, strict):
            out.append(None)
        else:
            out.append(linalg.eigh(Kfull[np.ix_(train, train)]))
    return out


def _run_tasks(tasks, n_jobs, verbose, desc):
    """Run ``_fit_fold`` on each argument tuple, in order, optionally in parallel
    and with a progress bar; results never depend on ``n_jobs``."""
    bar = None
    if verbose:
        try:
            from tqdm.auto import tqdm
        except ImportError:
            raise ImportError(
                "verbose=True shows a progress bar and needs tqdm: pip install tqdm "
                "(or pip install 'kerndwd[progress]')"
            ) from None
        bar = tqdm(total=len(tasks), desc=desc, unit="fold")
    try:
        if n_jobs == 1:
            results = []
            for args in tasks:
                results.append(_fit_fold(*args))
                if bar is not None:
                    bar.update(1)
            return results
        try:
            import joblib
        except ImportError:
            raise ImportError(
                "n_jobs other than 1 runs folds in parallel with joblib: pip install joblib"
            ) from None
        gen = joblib.Parallel(n_jobs=n_jobs, return_as="generator")(
            joblib.delayed(_fit_fold)(*args) for args in tasks
        )
        results = []
        for res in gen:
            results.append(res)
            if bar is not None:
                bar.update(1)
        return results
    finally:
        if bar is not None:
            bar.close()


# --------------------------------------------------------------------------
# shared set-up of cv and tune
# --------------------------------------------------------------------------
def _setup(X, y, lambdas, kern, nfolds, foldid, wt, eps, maxit, stop, random_state, n_jobs):
    X, y_pm, classes, lam, w, eps, maxit = check_path_inputs(X, y, lambdas, wt, eps, maxit, stop)
    n = X.shape[0]
    n_jobs = _check_n_jobs(n_jobs)
    rng = np.random.default_rng(random_state)
    if foldid is None:
        nfolds = _check_nfolds(nfolds, n)
        # R: a random permutation of rep(1:nfolds, length = n)
        foldid = rng.permutation(np.resize(np.arange(1, nfolds + 1), n))
    else:
        foldid = _check_foldid(foldid, n)
    nfolds = int(foldid.max())
    kern = resolve_kernel(kern, X, rng)  # after the folds, from the same generator
    folds = []
    for k in range(1, nfolds + 1):
        test = np.flatnonzero(foldid == k)
        train = np.flatnonzero(foldid != k)
        if np.unique(y_pm[train]).size < 2:
            raise ValueError(f"the training part of fold {k} (all but fold {k}) holds only one class; "
                             "choose other folds")
        folds.append((train, test))
    return X, y_pm, classes, lam, w, eps, maxit, kern, foldid, folds, n_jobs


def _kernel_matrix_if_needed(X, kern, folds, weighted, strict):
    """The kernel matrix of all of ``X``, formed once, when some fold uses the kernel solver."""
    p = X.shape[1]
    if any(not uses_linear_solver(kern, train.size, p, weighted, strict) for train, _ in folds):
        return kern(X)
    return None


def _collect(results, folds, n, nlam):
    predmat = np.full((n, nlam), np.nan)
    jerr = np.zeros(len(folds), dtype=int)
    for k, ((links, fold_jerr), (_, test)) in enumerate(zip(results, folds)):
        predmat[test, :links.shape[1]] = links
        jerr[k] = fold_jerr
    return predmat, jerr


def _warn_folds(jerr, lam, maxit, q=None):
    bad = np.flatnonzero(jerr)
    if bad.size:
        where = "" if q is None else f" (q={q:g})"
        detail = ", ".join(f"fold {k + 1} at lambda #{-jerr[k]} = {lam[-jerr[k] - 1]:.6g}" for k in bad)
        warnings.warn(
            f"maxit={maxit} MM passes ran out{where}: {detail}; their held-out predictions at "
            "that lambda and smaller ones are missing and left out of cvm and cvsd",
            DWDConvergenceWarning,
            stacklevel=3,
        )


# --------------------------------------------------------------------------
# public entry points
# --------------------------------------------------------------------------
def cv(X, y, lambdas=None, kern=None, nfolds=5, foldid=None, wt=None, *, qval=1.0, eps=1e-5,
       maxit=100000, stop="step", random_state=None, n_jobs=None, verbose=False):
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
    random_state : int or numpy.random.Generator, optional
        Seeds the fold assignment, a random permutation of
        ``1, 2, ..., nfolds, 1, 2, ...`` (length ``n``), as R builds it; then
        ``sigest`` when ``kern`` is omitted.  The same seed gives the same
        folds and numbers.
    n_jobs : int, optional
        Folds fitted in parallel with joblib (``-1``: all cores).  The
        results do not depend on it.
    verbose : bool, default False
        Show a progress bar over the folds (needs ``tqdm``).

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
    """
    X, y_pm, classes, lam, w, eps, maxit, kern, foldid, folds, n_jobs = _setup(
        X, y, lambdas, kern, nfolds, foldid, wt, eps, maxit, stop, random_state, n_jobs)
    q = check_qval(qval, "qval")
    Kfull = _kernel_matrix_if_needed(X, kern, folds, w is not None, strict=False)
    tasks = [(X, y_pm, classes, lam, q, w, eps, maxit, kern, train, test, Kfull, _mm.GAM_FIT, False, stop)
             for train, test in folds]
    results = _run_tasks(tasks, n_jobs, verbose, "cv folds")
    predmat, jerr = _collect(results, folds, X.shape[0], lam.size)
    _warn_folds(jerr, lam, maxit)
    cvm, cvsd = _cv_error(predmat, y_pm, foldid, len(folds))
    fit_args = dict(kern=kern, qval=q, wt=w, eps=eps, maxit=maxit, stop=stop)
    return CVResult(lambdas=lam, cvm=cvm, cvsd=cvsd, predmat=predmat, foldid=foldid, fold_jerr=jerr,
                    qval=q, fit_args=fit_args)


def tune(X, y, lambdas=None, qvals=(1.0,), kern=None, nfolds=5, foldid=None, wt=None, *, eps=1e-5,
         maxit=100000, stop="step", random_state=None, n_jobs=None, verbose=False):
    """Choose lambda and q together by cross-validation, as ``tunedwd`` in R.

    For every q in ``qvals`` the path is cross-validated as in :func:`cv`
    on the same folds; each q is scored by its ``cvm`` at its own
    ``lambda_1se``, and the q with the smallest score wins (ties: the last
    such q in ``qvals`` order); ``lam_tune`` is that q's ``lambda_1se``.

    As R's ``tunedwd`` does, the fold fits use the ridge
    ``kerndwd._mm.GAM_TUNE = 1e-6`` on the majoriser (``kerndwd`` uses
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
        The (fold, q) fits run in parallel with joblib; results do not depend on it.
    verbose : bool, default False
        Progress bar over the (fold, q) fits (needs ``tqdm``).

    Returns
    -------
    TuneResult
        ``lam_tune``, ``q_tune``, ``cvres`` (a :class:`CVResult` per q, with
        its ``predmat``), ``cvm_1se`` per q, ``foldid``, ``fit_args``; R's
        names through ``res["lam.tune"]``, ``res["q.tune"]``, ``res["cvres"]``.
    """
    X, y_pm, classes, lam, w, eps, maxit, kern, foldid, folds, n_jobs = _setup(
        X, y, lambdas, kern, nfolds, foldid, wt, eps, maxit, stop, random_state, n_jobs)
    qs = _check_qvals(qvals)
    Kfull = _kernel_matrix_if_needed(X, kern, folds, w is not None, strict=True)
    eigs = _fold_eigs(X, kern, folds, Kfull, w is not None, True, len(qs))
    tasks = [(X, y_pm, classes, lam, q, w, eps, maxit, kern, train, test, Kfull, _mm.GAM_TUNE, True, stop, eig)
             for q in qs for (train, test), eig in zip(folds, eigs)]
    results = _run_tasks(tasks, n_jobs, verbose, "tune (q, fold)")
    nf = len(folds)
    cvres = []
    for iq, q in enumerate(qs):
        predmat, jerr = _collect(results[iq * nf:(iq + 1) * nf], folds, X.shape[0], lam.size)
        _warn_folds(jerr, lam, maxit, q=q)
        cvm, cvsd = _cv_error(predmat, y_pm, foldid, nf)
        fit_args = dict(kern=kern, qval=float(q), wt=w, eps=eps, maxit=maxit, stop=stop)
        cvres.append(CVResult(lambdas=lam, cvm=cvm, cvsd=cvsd, predmat=predmat, foldid=foldid,
                              fold_jerr=jerr, qval=q, fit_args=fit_args))
    return TuneResult(qvals=qs, cvres=cvres, foldid=foldid, lambdas=lam)
