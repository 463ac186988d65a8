"""The cross-validation core that ``cv``, ``tune`` and ``DWDClassifierCV`` share.

:func:`heldout_decisions` fits, for every fold, one warm-started path per q
and per binary target on the fold's training rows, and records the
held-out decision values.  The work is fold-major: a fold's kernel matrix
(sliced from the one matrix of all rows) and its decompositions live in the
fold's :class:`~kerndwd.engine.cache.FactorCache`, serve every q and every
target, and are dropped before the next fold.

The rest of the module is the R package's arithmetic of cross-validation,
number for number: the random fold assignment, the misclassification rate
and its standard error (:func:`cv_error`), the choice of ``lambda.min`` and
``lambda.1se`` (:func:`select_lambda`), and the choice of q
(:func:`choose_last_minimum`).
"""

from __future__ import annotations

import numbers

import numpy as np

from .block import BLOCK_BUDGET, BLOCK_DIVERGED, BLOCK_STALLED, BlockColumns, block_newton_path
from .cache import keeps
from .designs import build_majoriser
from .kernel_cg import default_rank, pivoted_landmarks
from .kernel_checks import check_sampled_definite
from .results import diverged_jerr
from .threads import blas_threads
from .progress import Progress, reporting
from .solvers import run_path
from .designs.cg import SINGLE_MIN_ROWS

__all__ = ["MIN_FOLDS", "takes_block", "Refits", "draw_foldid", "draw_stratified_foldid", "check_nfolds", "check_foldid", "fold_rows", "fold_report", "heldout_decisions",
           "cv_error", "select_lambda", "choose_last_minimum"]

#: R refuses fewer folds than this (``nfolds < 3`` is an error in ``cv.kerndwd``).
MIN_FOLDS = 3

#: When every fold holds at least this many observations on average
#: (``n / nfolds >= 3``) R summarises each fold by its mean error first;
#: below it, it works on the raw 0/1 errors.
MIN_FOLD_SIZE_FOR_FOLD_MEANS = 3


# --------------------------------------------------------------------------
# folds
# --------------------------------------------------------------------------
def draw_foldid(nfolds, n, rng):
    """R's assignment: a random permutation of ``rep(1:nfolds, length = n)`` (1-based)."""
    return rng.permutation(np.resize(np.arange(1, nfolds + 1), n))


def draw_stratified_foldid(classes, nfolds, rng):
    """R's assignment (:func:`draw_foldid`) within each class of ``classes`` (an
    integer label per row), so that every training part keeps every class."""
    foldid = np.empty(classes.size, dtype=int)
    for k in np.unique(classes):
        rows = np.flatnonzero(classes == k)
        foldid[rows] = draw_foldid(nfolds, rows.size, rng)
    return foldid


def check_nfolds(nfolds, n, name="nfolds"):
    whole = isinstance(nfolds, numbers.Real) and float(nfolds).is_integer()
    if isinstance(nfolds, (bool, np.bool_)) or not whole:
        raise TypeError(f"{name} must be an integer, got {nfolds!r}")
    nfolds = int(nfolds)
    if nfolds < MIN_FOLDS:
        raise ValueError(f"{name} must be at least {MIN_FOLDS} (as in R's cv.kerndwd), got {nfolds}")
    if nfolds > n:
        raise ValueError(f"{name}={nfolds} exceeds the number of observations ({n}); every fold needs one")
    return nfolds


def check_foldid(foldid, n):
    """1-based fold labels as in R: integers 1..K, each used, K >= 3."""
    try:
        arr = np.asarray(foldid.to_numpy() if hasattr(foldid, "to_numpy") else foldid)
    except Exception:
        raise TypeError("foldid must be a sequence of integers") from None
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


def fold_rows(foldid, targets):
    """``(train, test)`` row indices per fold; every target must keep both
    classes in every training part."""
    folds = []
    for k in range(1, int(foldid.max()) + 1):
        test = np.flatnonzero(foldid == k)
        train = np.flatnonzero(foldid != k)
        if any(np.unique(t[train]).size < 2 for t in targets):
            raise ValueError(f"the training part of fold {k} (all but fold {k}) holds only one class; "
                             "choose other folds")
        folds.append((train, test))
    return folds


# --------------------------------------------------------------------------
# held-out decision values
# --------------------------------------------------------------------------
def _fit_fold(problem, cache, train, test, qs, targets):
    """Held-out decision values of one fold, for every q and target:
    a list over q of lists over targets of ``(links, jerr)``."""
    fold_problem = problem.subset(train)
    fold_cache = cache.fold(train)
    newx = problem.X[test]
    out = []
    for q in qs:
        problem_q = fold_problem.with_q(q)
        majoriser = build_majoriser(problem_q, fold_cache)
        cross = fold_cache.cross_kernel(test)
        row = []
        for y in targets:
            result = run_path(majoriser, problem_q.with_labels(y[train]))
            row.append((majoriser.predictor.decision(newx, result.alpha, cross=cross), result.jerr))
        out.append(row)
    fold_cache.release()
    return out


def _run(tasks, n_jobs, monitor):
    """``_fit_fold(*args)`` for each task, in order, optionally in parallel with
    joblib; the results never depend on ``n_jobs``."""
    if n_jobs == 1:
        gen = (_fit_fold(*args) for args in tasks)
    else:
        try:
            import joblib
        except ImportError:
            raise ImportError(
                "n_jobs other than 1 runs folds in parallel with joblib: pip install joblib"
            ) from None
        gen = joblib.Parallel(n_jobs=n_jobs, return_as="generator")(
            joblib.delayed(_fit_fold)(*args) for args in tasks)
    results = []
    for res in gen:
        results.append(res)
        if monitor is not None:
            monitor.advance()
    return results


def fold_report(desc, foldid, show):
    """The progress report of a cross-validation (one unit per fold), made current
    while its block runs, or nothing when ``show`` is false: what the faces
    open around :func:`heldout_decisions` and pass it as ``monitor``.

    Parameters
    ----------
    desc : str
        What the progress line calls the work.
    foldid : ndarray of int
        The validated fold labels, 1 to the number of folds.
    show : bool

    Returns
    -------
    context manager
        Yields the :class:`~kerndwd.engine.progress.Progress`, or None.
    """
    return reporting(Progress(desc, total=int(foldid.max()), unit="fold") if show else None)


def takes_block(problem):
    """Whether the folds (and classes, and the refit) of ``problem`` are fitted as
    the columns of one solve over the kernel matrix of all rows
    (:mod:`kerndwd.engine.block`): the gradient rule (the answer is then each
    fold's optimum, whatever the route), Newton, a nonlinear kernel on rows in
    memory, and an exact-kernel design that holds the kernel matrix.

    Parameters
    ----------
    problem : Problem

    Returns
    -------
    bool
    """
    return (problem.stop == "kkt" and problem.method == "newton" and problem.storage == "dense"
            and not problem.kern.is_linear and problem.design.name in BLOCK_DESIGNS
            and problem.loss.scale == 1.0)


#: From this many columns the block's loose conjugate gradients run on a float32
#: copy of the kernel matrix whatever ``n`` (their products are then bound by
#: arithmetic, which float32 halves, rather than by reading the matrix).
SINGLE_MIN_COLUMNS = 8
#: The block route is taken by default from this many columns (folds x targets,
#: and the refit's): a product with a few columns costs nearly as much as one
#: product per column (at n = 5148, float32, one thread: 12.6 ms for 4 columns
#: against 5.5 ms for one), while the folds alone read their own smaller
#: matrices; on Figure 1's mixture at n = 5000 with 3 folds the block took
#: 6.6 s against 6.1 s for the folds alone.
BLOCK_MIN_COLUMNS = 6
#: The designs whose folds :func:`takes_block` fits as columns of one solve.
BLOCK_DESIGNS = ("exact", "cg")


class Refits:
    """The paths on all rows that a block cross-validation fitted beside the folds.

    Attributes
    ----------
    alpha : ndarray, shape (Q, T, n + 1, L)
        Intercept-first coefficients per q, target and lambda; NaN from the
        lambda where a path stopped.
    kkt : ndarray, shape (Q, T, L)
    """

    def __init__(self, alpha, kkt):
        self.alpha, self.kkt = alpha, kkt


def heldout_decisions(problem, cache, foldid, qs, targets, *, n_jobs=1, monitor=None, refit_eps=None, block=None):
    """Cross-validated decision values.

    Where :func:`takes_block` holds, every fold and target of a q is a column of
    one Newton-CG solve over the kernel matrix of all rows
    (:mod:`kerndwd.engine.block`), with the same optimum as the fold's fit
    alone; otherwise each fold fits its own warm-started path per q and target.

    Parameters
    ----------
    problem : Problem
        The whole problem (its labels are ignored: ``targets`` gives them).
    cache : FactorCache
        The cache of all rows.
    foldid : ndarray of int, shape (n,)
        Validated 1-based fold labels.
    qs : sequence of float
        Loss exponents.
    targets : list of ndarray, shape (n,)
        +-1 labels of each binary problem (one for binary DWD; one per class
        for one-vs-rest).
    n_jobs : int
        Folds in parallel (joblib); the numbers do not depend on it.
    monitor : Progress or None
        The caller's report of the folds (:func:`fold_report`), advanced once
        per fold; with ``n_jobs=1`` each fold's passes show in it too.
    refit_eps : float or None
        With the block route, also fit every target on all rows as one more
        column, to this gradient tolerance (None: no refit).
    block : bool or None
        Whether to take the block route where :func:`takes_block` allows it
        (None: where the block has at least :data:`BLOCK_MIN_COLUMNS` columns).

    Returns
    -------
    predmat : ndarray, shape (len(qs), len(targets), n, L)
        Row ``i`` comes from the fold that left observation ``i`` out; NaN
        where that fold's path stopped early (``maxit`` ran out).
    jerr : ndarray of int, shape (len(qs), len(targets), nfolds)
    refits : Refits or None
        Only when ``refit_eps`` is given: the paths on all rows (None where the
        block route does not apply).
    """
    folds = fold_rows(foldid, targets)
    n, nlam = problem.n, problem.lambdas.size
    predmat = np.full((len(qs), len(targets), n, nlam), np.nan)
    jerr = np.zeros((len(qs), len(targets), len(folds)), dtype=int)
    refits = None
    width = len(folds) * len(targets) + (0 if refit_eps is None else len(targets))
    if takes_block(problem) and (width >= BLOCK_MIN_COLUMNS if block is None else block):
        refits = _block_heldout(problem, cache, folds, qs, targets, predmat, jerr, refit_eps, monitor)
    else:
        with blas_threads(problem.design.blas_work(problem)):
            problem.design.prepare(problem, cache, folds)
        tasks = [(problem, cache, train, test, qs, targets) for train, test in folds]
        results = _run(tasks, n_jobs, monitor)
        for k, ((_, test), res) in enumerate(zip(folds, results)):
            for iq, row in enumerate(res):
                for it, (links, fold_jerr) in enumerate(row):
                    predmat[iq, it][test, :links.shape[1]] = links
                    jerr[iq, it, k] = fold_jerr
    return (predmat, jerr) if refit_eps is None else (predmat, jerr, refits)


def _block_heldout(problem, cache, folds, qs, targets, predmat, jerr, refit_eps, monitor):
    """:func:`heldout_decisions` by the block route: fills ``predmat`` and ``jerr``
    and returns the :class:`Refits` (or None without ``refit_eps``).  A column
    that stalls (rounding holds its gradient above ``eps``) is fitted again
    alone by the design's own route, which falls back to MM."""
    n, nlam = problem.n, problem.lambdas.size
    design = problem.design
    single = design.single(n) if hasattr(design, "single") else False
    cols = [(k, it) for k in range(len(folds)) for it in range(len(targets))]
    if refit_eps is not None:
        cols += [(None, it) for it in range(len(targets))]
    # a product with the block's columns: 2 n^2 per column (the threads' rule, engine/threads.py)
    with blas_threads((design.blas_work(problem)[0], 2.0 * n * n * len(cols))):
        K = cache.kernel_matrix(single)
        cache.memo("kernel_sample_definite", lambda: check_sampled_definite(K, problem.kern))
        rank = getattr(design, "rank", None) or default_rank(n)
        landmarks = cache.memo(("pivoted_landmarks", rank), lambda: pivoted_landmarks(K, rank))
        products = K if single else None
        if not single and (n >= SINGLE_MIN_ROWS or len(cols) >= SINGLE_MIN_COLUMNS) and keeps(None, 4.0 * n * n):
            products = cache.kernel_matrix(single=True)
        weights = np.ones(n) if problem.loss.weights is None else problem.loss.weights
        rows = np.ones((n, len(cols)), dtype=bool)
        for j, (k, _) in enumerate(cols):
            if k is not None:
                rows[folds[k][1], j] = False
        labels = np.column_stack([targets[it] for _, it in cols])
        eps = np.array([problem.eps if k is not None else refit_eps for k, _ in cols])
        columns = BlockColumns(rows, labels, np.repeat(weights[:, None], len(cols), axis=1), eps)
        alpha = kkt = None
        if refit_eps is not None:
            alpha = np.full((len(qs), len(targets), n + 1, nlam), np.nan)
            kkt = np.full((len(qs), len(targets), nlam), np.nan)
        for iq, q in enumerate(qs):
            res = block_newton_path(K, columns, problem.lambdas, float(q), problem.maxit, landmarks,
                                    products=products)
            for j, (k, it) in enumerate(cols):
                if k is None:
                    alpha[iq, it] = res.alpha[:, j, :]
                    kkt[iq, it] = res.kkt[j]
                    continue
                test = folds[k][1]
                if res.status[j] == BLOCK_STALLED:  # alone, with the design's fallback
                    links, jerr[iq, it, k] = _fit_fold(problem, cache, folds[k][0], test, [q],
                                                       [targets[it]])[0][0]
                    predmat[iq, it][test, :links.shape[1]] = links
                    continue
                predmat[iq, it][test] = res.decisions[test, j, :]
                stop = int(res.stopped_at[j])
                if res.status[j] == BLOCK_BUDGET:
                    jerr[iq, it, k] = -(stop + 1)
                elif res.status[j] == BLOCK_DIVERGED:
                    jerr[iq, it, k] = diverged_jerr(stop)
    if monitor is not None:
        for _ in folds:
            monitor.advance()
    return None if refit_eps is None else Refits(alpha, kkt)


# --------------------------------------------------------------------------
# R's error, standard error and selection rules
# --------------------------------------------------------------------------
def cv_error(predmat, y, foldid):
    """``cvm`` and ``cvsd`` from held-out decision values ``predmat`` (n, L).

    A held-out point is misclassified when its predicted class (+1 where the
    link is > 0, else -1) differs from its label.  With ``n / nfolds >= 3``
    each fold is summarised by its mean error; ``cvm`` is the mean of the
    fold means and ``cvsd = sqrt(mean((foldmean - cvm)^2) / (N - 1))``, ``N``
    the number of folds.  Otherwise the same formulas are applied to the raw
    0/1 errors, ``N`` being the number of predictions.  Missing predictions
    (NaN, a fold whose path stopped early) are left out of both, per lambda.
    """
    nfolds = int(foldid.max())
    missing = np.isnan(predmat)
    err = (np.where(predmat > 0, 1.0, -1.0) != y[:, None]).astype(float)
    err[missing] = np.nan
    n = y.shape[0]
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


def select_lambda(cvm, cvsd):
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


def choose_last_minimum(scores):
    """Index of the smallest score, ties going to the last (R's ``tunedwd`` rule for q)."""
    scores = np.asarray(scores)
    return int(np.flatnonzero(scores == scores.min())[-1])
