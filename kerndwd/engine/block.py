"""Several exact-kernel fits as the columns of one Newton-CG solve over one kernel matrix.

Cross-validation fits, for every fold, every one-vs-rest class and the
refit on all rows, a path over the same lambdas on subsets of the same
rows.  Each of those fits is a column here: the full problem on all ``n``
rows with the weights

    w_ic = (n / n_c) w_i  on the column's rows,   0 elsewhere,

(``n_c`` its row count), whose objective ``(1/n) sum_i w_ic V_q(y_ic f_ic) +
lambda alpha_c' K alpha_c`` is the column's own problem ``(1/n_c)
sum_{i in c} w_i V_q(...) + lambda alpha' K_cc alpha`` with the coefficients
of the other rows held at zero, their value at the optimum (the representer
theorem).  So a column's optimum is its own fit's, exactly.  Every column
shares ``K``: each product with ``K`` serves the whole block (one matrix
product instead of one matrix-vector product per fit), and so do the
kernel matrix, its checks and the preconditioner's landmarks.

A column advances as semismooth Newton does alone
(:mod:`kerndwd.engine.solvers.newton`: the Levenberg-Marquardt damping,
the line search, the stall test) with its system solved by the bordered
reduction and Nystrom preconditioner of :mod:`kerndwd.engine.kernel_cg`
restricted to the column's rows; the conjugate gradients of all columns run
together (:func:`masked_block_pcg`), one product with ``K`` per iteration.
Columns that reach ``||grad F|| <= eps`` at a lambda (confirmed on decision
values recomputed from the coefficients, and measured over the column's
own coordinates, as its fit alone measures it) leave the block until the
next lambda, warm-started from there.  A column that exhausts its budget or
stalls is reported (:class:`BlockResult`) and leaves the block for good;
the others go on.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import linalg

from .kernel_cg import CG_MAXITER, SINGLE_RTOL, times
from .loss import loss_derivs_and_curvatures, loss_values_and_derivs
from .results import stable_norm
from .solvers.newton import LM_GROW, LM_MAX, LM_MIN, LM_SHRINK, LM_START, STALL_LIMIT, line_search

__all__ = ["BlockColumns", "BlockResult", "BlockNystrom", "masked_block_pcg", "block_newton_path",
           "BLOCK_CONVERGED", "BLOCK_BUDGET", "BLOCK_STALLED", "BLOCK_DIVERGED"]

BLOCK_CONVERGED, BLOCK_BUDGET, BLOCK_STALLED, BLOCK_DIVERGED = "converged", "budget", "stalled", "diverged"
_EPS = float(np.finfo(float).eps)


@dataclass
class BlockColumns:
    """The fits of a block: column ``c`` is the problem on the rows ``rows[:, c]``.

    Attributes
    ----------
    rows : ndarray of bool, shape (n, c)
    y : ndarray, shape (n, c)
        +-1 labels (any value off the column's rows).
    weights : ndarray, shape (n, c)
        The observation weights of each column's own problem (ones unweighted);
        read on its rows only.
    eps : ndarray, shape (c,)
        Each column's gradient tolerance.
    """

    rows: np.ndarray
    y: np.ndarray
    weights: np.ndarray
    eps: np.ndarray

    @property
    def count(self):
        return self.rows.shape[1]


@dataclass
class BlockResult:
    """What :func:`block_newton_path` returns.

    Attributes
    ----------
    decisions : ndarray, shape (n, c, L)
        ``b0 + K alpha`` on every row (the held-out rows included) at each
        lambda; NaN from the lambda where the column stopped.
    alpha : ndarray, shape (n + 1, c, L)
        Intercept-first coefficients (zero off the column's rows); NaN likewise.
    kkt : ndarray, shape (c, L)
        ``||grad F||`` over the column's own coordinates.
    npass : ndarray of int, shape (c, L)
        Newton iterations.
    status : list of str
        :data:`BLOCK_CONVERGED` for a column that ran the whole path, else why it stopped.
    stopped_at : ndarray of int, shape (c,)
        The index of the lambda a column stopped at (``L`` when it finished).
    cg_iterations : int
    """

    decisions: np.ndarray
    alpha: np.ndarray
    kkt: np.ndarray
    npass: np.ndarray
    status: list
    stopped_at: np.ndarray
    cg_iterations: int = 0


class BlockNystrom:
    """``(C W^+ C' + L_c)^-1`` on the rows of each column ``c``, for diagonals
    ``L_c`` given by their inverses ``inv_l`` (zero off the column's rows): the
    preconditioner of :class:`kerndwd.engine.kernel_cg.NystromPreconditioner`
    with one factor per column, for landmarks shared by all columns (a
    Nystrom approximation of ``K`` restricted to any subset of rows).

    Parameters
    ----------
    K : ndarray, shape (n, n)
    landmarks : ndarray of int
    """

    def __init__(self, K, landmarks):
        self.Ct = np.array(K[landmarks], dtype=float)  # (m, n): K[:, S]' (K symmetric)
        self.W = np.array(K[np.ix_(landmarks, landmarks)], dtype=float)
        self.factors = []
        self.inv_l = None

    @property
    def rank(self):
        return self.Ct.shape[0]

    def set_diagonals(self, inv_l):
        """Factor ``W + C' diag(inv_l[:, c]) C`` for every column ``c``."""
        self.inv_l = inv_l
        self.factors = []
        if self.rank == 0:
            return
        for c in range(inv_l.shape[1]):
            inside = np.flatnonzero(inv_l[:, c])
            scaled = self.Ct[:, inside] * np.sqrt(inv_l[inside, c])[None, :]
            upper = linalg.blas.dsyrk(1.0, scaled, lower=0)  # its upper triangle; dpotrf reads no other
            upper += self.W
            # rounding can leave W (near-duplicate rows) indefinite at the level eps * trace:
            # a ridge of that size changes the preconditioner only
            shift = max(float(np.trace(upper)), 1.0) * _EPS * self.rank
            while True:
                factor, info = linalg.lapack.dpotrf(upper, lower=False, clean=False, overwrite_a=False)
                if info == 0:
                    break
                upper[np.diag_indices_from(upper)] += shift
                shift *= 10.0
            self.factors.append(factor)

    def __call__(self, R, owner):
        """``P^-1 R``; column ``j`` of ``R`` belongs to the block column ``owner[j]``."""
        inv = self.inv_l[:, owner]
        t = inv * R
        if self.rank == 0:
            return t
        v = self.Ct @ t  # (m, k)
        for c in np.unique(owner):
            mine = np.flatnonzero(owner == c)
            v[:, mine] = linalg.lapack.dpotrs(self.factors[c], v[:, mine], lower=False)[0]
        return t - inv * (self.Ct.T @ v)


def masked_block_pcg(K, l, rows, precond, owner, B, rtol, weights, maxiter=CG_MAXITER, rounded=True):
    """Conjugate gradients for ``(K_cc + diag(l_j)) x_j = B_j`` on the rows of each
    column ``j`` (``rows[:, j]``; ``x_j`` is zero elsewhere), with one product
    ``K P`` per iteration for all columns.

    Column ``j`` stops at ``||weights_j * residual|| <= rtol_j ||weights_j * B_j||``;
    every iterate lowers its quadratic (:func:`kerndwd.engine.kernel_cg.block_pcg`
    is the one-subset case).

    Returns
    -------
    X, KX : ndarray
        The solutions and ``K X`` on every row (accumulated from the products).
    iterations : int
    """
    X = np.zeros_like(B)
    KX = np.zeros_like(B)
    R = B.copy()
    stop = rtol * np.linalg.norm(weights * B, axis=0)
    active = np.linalg.norm(weights * R, axis=0) > stop
    if not active.any():
        return X, KX, 0
    Zp = precond(R, owner)
    P = Zp.copy()
    rz = np.einsum("ij,ij->j", R, Zp)
    KP = np.empty_like(B)
    its = 0
    for its in range(1, maxiter + 1):
        cols = np.flatnonzero(active)
        if cols.size == P.shape[1]:
            times(K, P, KP, rounded=rounded)
        else:
            KP[:, cols] = times(K, P[:, cols], np.empty((P.shape[0], cols.size)), rounded=rounded)
        AP = np.where(rows, KP + l * P, 0.0)
        pAp = np.einsum("ij,ij->j", P, AP)
        ok = active & (pAp > 0.0)
        a = np.divide(rz, pAp, out=np.zeros_like(rz), where=ok)
        X += a * P
        KX += a * KP
        R -= a * AP
        active = ok & (np.linalg.norm(weights * R, axis=0) > stop)
        if not active.any():
            break
        Zp = precond(R, owner)
        rz_new = np.einsum("ij,ij->j", R, Zp)
        beta = np.divide(rz_new, rz, out=np.zeros_like(rz), where=active & (rz > 0.0))
        P *= beta
        P += Zp
        rz = np.where(active, rz_new, rz)
    return X, KX, its


class _ColumnObjective:
    """``F``'s data term on one column's rows, as the line search reads it."""

    def __init__(self, y, w, n, q):
        self.y, self.wy, self.w, self.n, self.q = y, w * y, w, n, q

    def along(self, f, df, t):
        values, derivs = loss_values_and_derivs(self.y * (f + t * df), self.q)
        return float(self.w @ values) / self.n, float(derivs @ (self.wy * df)) / self.n


def block_newton_path(K, columns, lambdas, q, maxit, landmarks, products=None, progress=None):
    """Fit every column of ``columns`` along the decreasing ``lambdas`` (module docstring).

    Parameters
    ----------
    K : ndarray, shape (n, n), float64 or float32
        The checked kernel matrix; held in float32, every product that defines
        an iterate is taken in double precision.
    columns : BlockColumns
    lambdas : ndarray, shape (L,)
    q : float
    maxit : int
        Newton iterations per column over the whole path, as ``maxit`` bounds a fit alone.
    landmarks : ndarray of int
        The rows of the Nystrom preconditioner.
    products : ndarray of float32 or None
        A float32 copy of ``K`` for the loose directions' conjugate gradients.
    progress : callable or None
        ``progress(l, iterations)`` after each lambda.

    Returns
    -------
    BlockResult
    """
    n, c, L = K.shape[0], columns.count, len(lambdas)
    rows = columns.rows
    n_c = rows.sum(axis=0)
    W = np.where(rows, columns.weights, 0.0) * (n / n_c)  # the column problems as problems on all n rows
    Y = np.where(rows, columns.y, 0.0)
    WY = W * Y
    M = (q + 1.0) ** 2 / q
    w_n = W / n
    floor = 1e-300 + 1e-16 * M * w_n.max(axis=0)
    K_diag = np.array(np.diag(K), dtype=float)
    # the diagonal of each column's MM curvature, the metric of the damping (as NewtonIteration's)
    scale0 = M * w_n.sum(axis=0)
    scale = M * _squared_columns_times(K, w_n)
    precond = BlockNystrom(K, landmarks)
    objectives = [_ColumnObjective(Y[:, j], W[:, j], n, q) for j in range(c)]

    b = np.zeros(c)
    A = np.zeros((n, c))
    F = np.zeros((n, c))
    damping = np.full(c, LM_START)
    used = np.zeros(c, dtype=int)
    live = np.ones(c, dtype=bool)
    status = [BLOCK_CONVERGED] * c
    stopped_at = np.full(c, L)
    out_f = np.full((n, c, L), np.nan)
    out_alpha = np.full((n + 1, c, L), np.nan)
    out_kkt = np.full((c, L), np.nan)
    npass = np.zeros((c, L), dtype=int)
    cg_total = 0

    def state(J, lam):
        """z, d, gradient norm over each column's coordinates, for the columns ``J``."""
        d1, d2 = loss_derivs_and_curvatures(Y[:, J] * F[:, J], q)
        Z = WY[:, J] * d1 / n
        D = W[:, J] * d2 / n
        R = Z + 2.0 * lam * A[:, J]
        G = times(K, R, np.empty_like(R), rounded=False)
        g0 = Z.sum(axis=0)
        G[~rows[:, J]] = 0.0
        gnorm = np.sqrt(g0 * g0 + np.einsum("ij,ij->j", G, G))
        return Z, D, R, G, g0, gnorm

    for l, lam in enumerate(lambdas):
        J = np.flatnonzero(live)
        if J.size == 0:
            break
        best = np.full(c, np.inf)
        stalled = np.zeros(c, dtype=int)
        must_step = np.zeros(c, dtype=bool)
        while J.size:
            Z, D, R, G, g0, gnorm = state(J, lam)
            bad = ~np.isfinite(gnorm)
            for j in J[bad]:
                status[j], live[j], stopped_at[j] = BLOCK_DIVERGED, False, l
            done = (gnorm <= columns.eps[J]) & ~must_step[J] & ~bad
            if done.any():  # confirmed on decision values recomputed from the coefficients
                Jd = J[done]
                F[:, Jd] = b[Jd] + times(K, A[:, Jd], np.empty((n, Jd.size)), rounded=False)
                confirmed = state(Jd, lam)[-1]
                ok = confirmed <= columns.eps[Jd]
                for j, g in zip(Jd[ok], confirmed[ok]):
                    out_kkt[j, l] = g
                    out_f[:, j, l] = F[:, j]
                    out_alpha[0, j, l] = b[j]
                    out_alpha[1:, j, l] = A[:, j]
                must_step[Jd[~ok]] = True
            if bad.any() or done.any():
                J = J[live[J] & np.isnan(out_kkt[J, l])]
                continue
            must_step[J] = False
            used[J] += 1
            npass[J, l] += 1
            # the damping mu = min(1, c nu), nu the gradient's norm in the MM metric
            metric = scale[:, J] + 2.0 * lam * np.maximum(K_diag, 0.0)[:, None]
            inv_metric = np.divide(1.0, metric, out=np.zeros_like(metric), where=(metric > 0) & rows[:, J])
            nu = np.sqrt(g0 * g0 / np.where(scale0[J] > 0, scale0[J], np.inf) + np.einsum("ij,ij->j", G * G, inv_metric))
            mu = np.minimum(1.0, damping[J] * nu)
            dd = D + mu * M * w_n[:, J]
            np.maximum(dd, floor[J], out=dd)
            inside = rows[:, J]
            dd = np.where(inside, dd, 0.0)
            inv_l = dd / (2.0 * lam)
            lvec = np.divide(2.0 * lam, dd, out=np.zeros_like(dd), where=inside)
            precond.set_diagonals(inv_l)
            rtol = np.minimum(0.1, np.sqrt(gnorm))
            k = J.size
            B = np.empty((n, 2 * k))
            B[:, :k] = np.divide(-R, dd, out=np.zeros_like(R), where=inside)
            B[:, k:] = inside
            owner = np.r_[np.arange(k), np.arange(k)]
            two = lambda a: np.concatenate((a, a), axis=1)
            loose = products is not None and rtol.min() >= SINGLE_RTOL
            U, KU, its = masked_block_pcg(products if loose else K, two(lvec), two(inside), precond, owner, B,
                                          np.r_[rtol, rtol], two(dd), rounded=loose)
            cg_total += its
            u, v = U[:, :k], U[:, k:]
            s0 = (u.sum(axis=0) + A[:, J].sum(axis=0)) / v.sum(axis=0)
            S = u - s0 * v
            if loose:
                dF = s0 + times(K, S, np.empty_like(S), rounded=False)
            else:
                dF = s0 + (KU[:, :k] - s0 * KU[:, k:])
            for i, j in enumerate(J):
                row = inside[:, i]
                f, df, s, alpha = F[row, j], dF[row, i], S[row, i], A[row, j]
                pen = float(alpha @ (f - b[j]))
                ks = df - s0[i]
                pen1, pen2 = float(alpha @ ks), float(s @ ks)
                Fval = objectives[j].along(F[:, j], np.zeros(n), 0.0)[0] + lam * pen
                slope = float(g0[i] * s0[i] + G[row, i] @ s)
                found = (line_search(_Rows(objectives[j], row), f, df, Fval, slope, lam, pen, pen1, pen2)
                         if slope < 0.0 else None)
                if found is None:
                    found = (0.0, Fval, pen)
                damping[j] = max(damping[j] * LM_SHRINK, LM_MIN) if found[0] == 1.0 else min(damping[j] * LM_GROW, LM_MAX)
                progress_made = found[1] < Fval - 8.0 * _EPS * abs(Fval) or gnorm[i] < 0.5 * best[j]
                best[j] = min(best[j], gnorm[i])
                stalled[j] = 0 if progress_made else stalled[j] + 1
                t = found[0]
                b[j] += t * s0[i]
                A[:, j] += t * S[:, i]
                F[:, j] += t * dF[:, i]
                if stalled[j] >= STALL_LIMIT or used[j] > maxit:
                    status[j] = BLOCK_STALLED if stalled[j] >= STALL_LIMIT else BLOCK_BUDGET
                    live[j], stopped_at[j] = False, l
            J = J[live[J] & np.isnan(out_kkt[J, l])]
        if progress is not None:
            progress(l, int(npass[:, l].sum()))
    return BlockResult(out_f, out_alpha, out_kkt, npass, status, stopped_at, cg_total)


class _Rows:
    """One column's objective restricted to its rows (what :func:`line_search` is given)."""

    def __init__(self, objective, row):
        self.y, self.wy, self.w, self.n, self.q = (objective.y[row], objective.wy[row], objective.w[row],
                                                   objective.n, objective.q)

    along = _ColumnObjective.along


def _squared_columns_times(K, V, block_rows=512):
    """``(K * K) @ V`` by blocks of rows, without forming ``K * K`` whole."""
    out = np.empty((K.shape[0], V.shape[1]))
    for start in range(0, K.shape[0], block_rows):
        blk = np.asarray(K[start:start + block_rows], dtype=float)
        out[start:start + block_rows] = (blk * blk) @ V
    return out
