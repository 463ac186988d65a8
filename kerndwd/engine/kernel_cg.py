"""The exact kernel without an eigendecomposition: Nystrom-preconditioned conjugate gradients.

For ``f = b0 + K alpha`` and ``F = (1/n) sum_i w_i V_q(y_i f_i) + lambda
alpha' K alpha`` the gradient is ``(sum(z), K r)`` with ``z_i = w_i y_i
V_q'(y_i f_i) / n`` and ``r = z + 2 lambda alpha``, and the (generalized)
Hessian is ``Z' D Z + 2 lambda diag(0, K)``, ``Z = [1, K]``,
``D = diag(d)``, ``d_i >= 0``.  Both carry ``K`` as a left factor, so for
``d > 0`` the Newton equations ``H s = -grad F`` follow from the reduced
system

    [ K + L   1 ] [ s_alpha ]   [ -r / d      ]
    [ 1'      0 ] [ s_0     ] = [ -1' alpha   ],      L = diag(2 lambda / d),

(multiply its first block row by ``D`` and then by ``K``: that is the
``alpha`` row of the Newton equations; its sum, with the second row, is the
intercept row).  ``K + L`` is symmetric positive definite, and the bordered
system is solved by two solves with it, ``u = (K + L)^-1 (-r / d)`` and
``v = (K + L)^-1 1``: ``s_0 = (1'u + 1'alpha) / 1'v``,
``s_alpha = u - s_0 v``.  Both are solved together by conjugate gradients
(:func:`block_pcg`), so each iteration reads ``K`` once for the two; the
products ``K p`` are accumulated along the way, so the change of ``f``,
``s_0 + K s_alpha``, costs no further product.

Where ``d_i = 0`` (a margin on the linear piece of ``V_q``, below the knot
``q/(q+1)``) the Newton matrix is singular.  The Newton iteration damps it
(Levenberg-Marquardt, :mod:`kerndwd.engine.solvers.newton`); here the
damping is ``mu (M/n) W``, a multiple of the majoriser's data curvature
``(M/n) Z'WZ`` (Lemma 2), added to ``D``: the damped matrix keeps the form
above with ``d_i + mu M w_i / n > 0``, and ``mu = 1`` gives the MM step's
curvature plus Newton's.  The MM step of this form (its majoriser,
:class:`kerndwd.engine.majorisers.kernel_cg.KernelMatrixCG`) is the same
system with ``d = M w / n``.

The preconditioner (FALKON's idea, Rudi, Carratino & Rosasco 2017, for the
squared loss) replaces ``K`` by its Nystrom approximation on ``m`` of the
rows, ``C W^+ C'`` with ``C = K[:, S]``, ``W = K[S, S]``, and inverts
``C W^+ C' + L`` exactly by Woodbury's identity,

    (L + C W^-1 C')^-1 = L^-1 - L^-1 C (W + C' L^-1 C)^-1 C' L^-1,

one ``m x m`` Cholesky factor per system (``n m^2`` flops to form, by one
symmetric rank-``m`` update).  ``K``
of a smooth kernel has a few hundred eigenvalues above ``2 lambda / d``
(its effective dimension); the Nystrom approximation captures them and the
diagonal ``L`` the rest, so conjugate gradients need a few tens of products
with ``K`` where unpreconditioned they need thousands at small lambda.
Landmarks are drawn by pivoted Cholesky on ``K`` (the rows whose kernel
columns the others explain least), in rounds of pivots so that its
``n m^2`` flops are matrix products (:func:`pivoted_landmarks`).

Single precision.  A product with ``K`` reads ``8 n^2`` bytes and is bound
by memory bandwidth; a float32 copy of ``K`` halves that.  Conjugate
gradients may run on such a copy (``products``): their products then carry
relative errors near ``1e-7``, far below the tolerance of a Newton
direction, which is itself inexact (relative residual
:data:`SINGLE_RTOL` or more).  Everything that defines the iterate stays in
double precision: the gradient, and the change of ``f`` along the step,
which is formed by one float64 product once the direction is solved (the
products accumulated in float32 would let ``f`` drift from
``b0 + K alpha``).
"""

from __future__ import annotations

import numpy as np
from scipy import linalg

from .forms import double_product, row_blocks
from .newton_systems import NewtonSystem

__all__ = ["NystromPreconditioner", "block_pcg", "pivoted_landmarks", "KernelMatrixNewton", "default_rank",
           "RANK_FRACTION", "RANK_RANGE", "CG_MAXITER", "SINGLE_RTOL", "times"]

#: Landmarks of the preconditioner when the design names none: this fraction of
#: the rows, within :data:`RANK_RANGE` (and at most ``n``).  Its factor costs
#: ``n m^2`` per Newton iteration against ``n^2`` per conjugate-gradient
#: iteration; on UCI letter (n = 16 000, rbf, lambda = 1e-7, eps = 1e-4)
#: m = 1200 took 86 s (5 to 27 iterations per Newton step), m = 600 190 s
#: (12 to 62), m = 400 over 300 s.
RANK_FRACTION = 0.075
RANK_RANGE = (100, 1500)


def default_rank(n):
    """The preconditioner's landmarks for ``n`` rows when the design names none.

    Examples
    --------
    >>> default_rank(500), default_rank(16000), default_rank(10 ** 6)
    (100, 1200, 1500)
    """
    return int(min(n, max(RANK_RANGE[0], min(RANK_RANGE[1], round(RANK_FRACTION * n)))))
#: Conjugate gradients run on a float32 copy of ``K`` (module docstring) only
#: for a relative residual of at least this: below it the products' rounding
#: would count.
SINGLE_RTOL = 1e-4
#: A product of ``K`` with the columns of conjugate gradients reads ``K`` by
#: blocks of rows of about this many bytes, each block once for all the
#: columns while it sits in a core's cache (:func:`times`).
PRODUCT_BLOCK_BYTES = 1 << 20
#: Beyond this many columns BLAS's own matrix product is faster than the blocks
#: of rows (at n = 5148, float32, one thread: 10 columns 28 ms against 23 ms,
#: 40 columns 23 ms against 54 ms).
PRODUCT_BLOCK_COLUMNS = 16
#: Conjugate-gradient iterations per system, at most.
CG_MAXITER = 500
_EPS = float(np.finfo(float).eps)


#: Landmarks chosen per round of :func:`pivoted_landmarks` at most.
PIVOT_BLOCK = 64
#: In a round, a candidate is taken while its residual diagonal is at least this
#: fraction of the largest residual diagonal outside the round's candidates.
PIVOT_SLACK = 0.5


def pivoted_landmarks(K, m, block=PIVOT_BLOCK):
    """``m`` rows chosen by pivoted Cholesky of ``K``: each next row has a large
    diagonal of the residual ``K - C W^+ C'`` (the row whose kernel column the
    chosen ones explain least); it stops early when the residual's diagonal
    is at the rounding level.

    The pivots are taken in rounds of up to ``block``, so that the work is
    matrix products (``n m^2`` flops in all) rather than ``m`` passes over an
    ``m x n`` factor: a round takes the ``2 block`` rows of largest residual
    diagonal as candidates, forms their residual columns with one product,
    and runs greedy pivoted Cholesky on the candidates' ``2b x 2b`` block,
    taking a candidate while its residual diagonal is at least
    :data:`PIVOT_SLACK` times the largest residual diagonal outside the
    candidates (which bounds every later residual there: residual diagonals
    only fall).  With ``PIVOT_SLACK = 1`` that is exactly the greedy order;
    at 1/2 every pivot is within a factor 2 of the greedy choice.

    Parameters
    ----------
    K : ndarray, shape (n, n)
    m : int
    block : int, default :data:`PIVOT_BLOCK`

    Returns
    -------
    ndarray of int

    Examples
    --------
    >>> import numpy as np
    >>> X = np.r_[np.zeros((3, 1)), np.ones((3, 1))]  # two distinct rows, three times each
    >>> K = np.exp(-(X - X.T) ** 2)
    >>> chosen = pivoted_landmarks(K, 5)  # one of each; the rest add nothing
    >>> sorted(X[chosen, 0].tolist())
    [0.0, 1.0]
    """
    n = K.shape[0]
    m = min(m, n)
    resid = np.array(np.diag(K), dtype=float)
    floor = n * _EPS * max(float(resid.max(initial=0.0)), 0.0)
    F = np.zeros((n, m))  # the chosen columns of the Cholesky factor: K[:, S] = F F[S]'
    chosen = []
    while len(chosen) < m:
        k = len(chosen)
        open_rows = np.flatnonzero(resid > floor)
        if open_rows.size == 0:
            break
        c = min(2 * block, open_rows.size)
        order = np.argsort(-resid[open_rows], kind="stable")
        cand = open_rows[order[:c]]
        outside = float(resid[open_rows[order[c]]]) if c < open_rows.size else 0.0
        G = K[cand].T - F[:, :k] @ F[cand, :k].T  # the candidates' residual columns (K is symmetric: rows read)
        # greedy pivoted Cholesky on the candidates' block G[cand]
        Gc = G[cand].copy()
        d = resid[cand].copy()
        take, cols = [], []
        while len(take) < min(block, m - k):
            j = int(np.argmax(d))
            if d[j] <= floor or (take and d[j] < PIVOT_SLACK * outside):
                break
            col = Gc[:, j] / np.sqrt(d[j])
            Gc -= np.outer(col, col)
            d -= col * col
            d[j] = 0.0
            take.append(j)
            cols.append(col)
        if not take:
            break
        # the block's factor G[take, take] = R'R, read off the greedy's columns
        R = np.triu(np.array([col[take] for col in cols]))
        Fnew = linalg.solve_triangular(R, G[:, take].T, trans="T", lower=False, check_finite=False).T
        F[:, k:k + len(take)] = Fnew
        resid -= np.einsum("ij,ij->i", Fnew, Fnew)
        chosen.extend(int(i) for i in cand[take])
        resid[chosen] = 0.0
    return np.array(chosen, dtype=int)


class NystromPreconditioner:
    """``(C W^+ C' + diag(l))^-1`` for a diagonal ``l > 0`` (module docstring).

    Parameters
    ----------
    K : ndarray, shape (n, n)
        The kernel matrix (read, never written).
    landmarks : ndarray of int
        The rows of the Nystrom approximation.
    """

    def __init__(self, K, landmarks):
        # K[:, landmarks], read as rows of the symmetric K, kept in both layouts (in K's
        # precision): each product below then reads its factor by blocks of contiguous
        # rows (times), widened to double precision block by block where K is float32
        self.Ct = np.array(K[landmarks])
        self.C = np.ascontiguousarray(self.Ct.T)
        self.W = np.array(K[np.ix_(landmarks, landmarks)], dtype=float)
        self._inv = self._factor = self._l = None
        self._scaled = None  # C' scaled by columns, kept: a fresh n x m array per Newton step costs page faults

    @property
    def rank(self):
        return self.C.shape[1]

    def set_diagonal(self, l):
        """Factor ``W + C' diag(1/l) C`` for the diagonal ``l`` (positive); the
        factor of the last diagonal is kept while it does not change."""
        if self._l is not None and np.array_equal(l, self._l):
            return
        inv = 1.0 / l
        # C' diag(inv) C by one symmetric rank-k update of the scaled rows
        if self._scaled is None:
            self._scaled = np.empty(self.Ct.shape)
        scaled = np.multiply(self.Ct, np.sqrt(inv)[None, :], out=self._scaled)
        upper = linalg.blas.dsyrk(1.0, scaled.T, trans=1, lower=0)  # scaled scaled', upper triangle
        Mm = np.triu(upper)
        Mm += np.triu(Mm, 1).T
        Mm += self.W
        # rounding can leave W (a kernel matrix of possibly near-duplicate rows) indefinite
        # at the level eps * trace: a ridge of that size changes the preconditioner only
        shift = max(float(np.trace(Mm)), 1.0) * _EPS * Mm.shape[0]
        while True:
            factor, info = linalg.lapack.dpotrf(Mm, lower=False, clean=False)
            if info == 0:
                break
            Mm[np.diag_indices_from(Mm)] += shift
            shift *= 10.0
        self._inv, self._factor, self._l = inv, factor, l.copy()

    def __call__(self, R):
        """``P^-1 R`` for a vector or a matrix of columns ``R``."""
        inv = self._inv if R.ndim == 1 else self._inv[:, None]
        t = inv * R
        if self.rank == 0:
            return t
        cols = t if t.ndim == 2 else t[:, None]
        v = linalg.lapack.dpotrs(self._factor, times(self.Ct, cols, np.empty((self.rank, cols.shape[1])),
                                                     rounded=False), lower=False)[0]
        back = times(self.C, v, np.empty(cols.shape), rounded=False)
        return t - inv * (back if t.ndim == 2 else back[:, 0])


def times(K, P, out, rounded=True):
    """``out[:] = K @ P`` for a few columns ``P`` (float64), reading ``K`` once.

    A product with a few columns is bound by the memory traffic of ``K``:
    BLAS reads ``K`` once per column when the columns are multiplied one by
    one, and its matrix product does no better for two columns.  Here ``K``
    is read by blocks of rows of :data:`PRODUCT_BLOCK_BYTES`, each
    multiplied by all the columns while it is in cache (at n = 16 000, two
    columns: 0.078 s against 0.139 s for two float32 matrix-vector
    products, one thread).  A float32 ``K`` is multiplied by the columns
    rounded to float32, or, not ``rounded``, widened to float64 block by
    block (:func:`~kerndwd.engine.forms.double_product`).

    Parameters
    ----------
    K : ndarray, shape (n, n), float64 or float32
    P : ndarray, shape (n, c)
    out : ndarray, shape (n, c), float64
    rounded : bool, default True
        For a float32 ``K``: the product in single precision.

    Returns
    -------
    ndarray
        ``out``.

    Examples
    --------
    >>> import numpy as np
    >>> K = np.arange(9.0).reshape(3, 3)
    >>> times(K, np.ones((3, 2)), np.empty((3, 2))).tolist()
    [[3.0, 3.0], [12.0, 12.0], [21.0, 21.0]]
    """
    if not rounded and K.dtype != out.dtype:
        return double_product(K, P, out=out)
    columns = P.astype(K.dtype, copy=False)
    if P.shape[1] > PRODUCT_BLOCK_COLUMNS:  # BLAS's matrix product, which reads K once for them all
        out[...] = K @ columns
        return out
    rows = max(1, PRODUCT_BLOCK_BYTES // (K.itemsize * max(K.shape[1], 1)))
    into = out if K.dtype == out.dtype else np.empty(out.shape, dtype=K.dtype)
    for start, stop in row_blocks(K.shape[0], rows):
        np.matmul(K[start:stop], columns, out=into[start:stop])
    if into is not out:
        out[...] = into
    return out


def block_pcg(K, l, precond, B, rtol, weights=None, maxiter=CG_MAXITER, rounded=True):
    """Conjugate gradients for ``(K + diag(l)) X = B``, column by column but
    with one product ``K P`` per iteration for all columns.

    Each column stops at ``||weights * residual|| <= rtol ||weights * B_j||``
    (its step length is then zero); every iterate lowers that column's
    quadratic, so a column solved for ``-grad`` is a descent direction at any
    iteration count.  For the reduced Newton system the weights are the
    curvatures ``d``: the residual of the full Newton equations is
    ``K D R``, so rows of vanishing curvature, whose large right-hand sides
    (``r_i / d_i``) would otherwise dominate the norm, count as little
    there as they do in the Newton equations.

    ``K`` may be a float32 copy of the matrix (module docstring): each
    direction is then rounded to float32 for its product, or, not
    ``rounded``, the product is taken in double precision (:func:`times`).

    Returns
    -------
    X : ndarray
        The solutions.
    KX : ndarray
        ``K X``, accumulated from the products (no extra one).
    iterations : int
    """
    X = np.zeros_like(B)
    KX = np.zeros_like(B)
    R = B.copy()
    wc = np.ones((B.shape[0], 1)) if weights is None else weights[:, None]
    stop = rtol * np.linalg.norm(wc * B, axis=0)
    active = np.linalg.norm(wc * R, axis=0) > stop
    if not active.any():
        return X, KX, 0
    Zp = precond(R)
    P = Zp.copy()
    rz = np.einsum("ij,ij->j", R, Zp)
    its = 0
    lc = l[:, None]
    KP = np.empty_like(B)
    for its in range(1, maxiter + 1):
        times(K, P, KP, rounded=rounded)
        AP = KP + lc * P
        pAp = np.einsum("ij,ij->j", P, AP)
        ok = active & (pAp > 0.0)
        a = np.divide(rz, pAp, out=np.zeros_like(rz), where=ok)
        X += a * P
        KX += a * KP
        R -= a * AP
        active = ok & (np.linalg.norm(wc * R, axis=0) > stop)
        if not active.any():
            break
        Zp = precond(R)
        rz_new = np.einsum("ij,ij->j", R, Zp)
        beta = np.divide(rz_new, rz, out=np.zeros_like(rz), where=active & (rz > 0.0))
        P *= beta
        P += Zp
        rz = np.where(active, rz_new, rz)
    return X, KX, its


def bordered_solve(K, dd, lam, r, alpha, precond, rtol, products=None):
    """The step ``(s_0, s_alpha)`` of the reduced system (module docstring) for the
    positive curvatures ``dd``, with the change of ``f`` it makes and the
    conjugate-gradient iterations.

    ``products``, when given, is a float32 matrix whose single-precision
    products conjugate gradients run on: a copy of ``K``, or ``K`` itself
    when it is held in float32.  The change of ``f`` is then one product
    with ``K`` in double precision.  Where they reach :data:`CG_MAXITER` on
    it, the system is solved again with ``K``'s double-precision products.

    Returns
    -------
    step : ndarray, shape (n + 1,)
        Intercept first.
    df : ndarray, shape (n,)
        ``s_0 + K s_alpha``.
    iterations : int
    """
    l = (2.0 * lam) / dd
    precond.set_diagonal(l)
    B = np.column_stack((-r / dd, np.ones_like(r)))
    if products is None:
        U, KU, its = block_pcg(K, l, precond, B, rtol, weights=dd, rounded=False)
    else:
        U, KU, its = block_pcg(products, l, precond, B, rtol, weights=dd)
        if its >= CG_MAXITER:
            # not solved in single precision within the cap (its rounding at the level of L)
            U, KU, more = block_pcg(K, l, precond, B, rtol, weights=dd, rounded=False)
            its, products = its + more, None
    u, v = U[:, 0], U[:, 1]
    s0 = (u.sum() + alpha.sum()) / v.sum()
    step = np.empty(r.size + 1)
    step[0] = s0
    step[1:] = u - s0 * v
    if products is not None:
        return step, s0 + double_product(K, step[1:]), its
    return step, s0 + (KU[:, 0] - s0 * KU[:, 1]), its


class KernelMatrixNewton(NewtonSystem):
    """The Newton system of ``f = b0 + K alpha`` with ``K`` in memory, in the
    coefficients themselves (``x = (b0, alpha)``), solved by the bordered
    system of the module docstring.

    The penalty ``alpha' K alpha`` is read off the decision values
    (``K alpha = f - b0``), and so is its gradient, so a Newton iteration
    costs one product with ``K`` for the gradient plus those of conjugate
    gradients.  ``scale`` and ``pen`` (the diagonal of ``K``) serve only the
    iteration's measure of the gradient.

    Parameters
    ----------
    form : KernelForm
    weights : ndarray or None
    M : float
        The bound of Lemma 2.
    precond : NystromPreconditioner
    products : ndarray of float32 or None
        A float32 copy of ``K`` (or ``K`` itself, held in float32) for the
        single-precision conjugate-gradient products of directions solved to
        :data:`SINGLE_RTOL` or looser (module docstring).
    """

    def __init__(self, form, weights, M, precond, products=None):
        K = form.K
        self.form, self.K = form, K
        n = form.n
        self.n, self.ncoef = n, n + 1
        self.w_n = (np.ones(n) if weights is None else np.asarray(weights, dtype=float)) / n
        self.M = M
        self.precond = precond
        self.products = products
        self.pen = np.array(np.diag(K), dtype=float)
        w = self.w_n * n
        self.scale = (M / n) * np.concatenate(([w.sum()], np.einsum("ij,ij,i->j", K, K, w)))
        self.cg_iterations = 0

    def decision(self, x):
        return x[0] + self.form.apply(x[1:])

    def data_gradient(self, z):
        return np.concatenate(([z.sum()], self.form.apply(z)))

    def penalty(self, x, f=None):
        applied = self.form.apply(x[1:]) if f is None else f - x[0]
        return float(x[1:] @ applied)

    def penalty_direction(self, x, f=None):
        return self.form.apply(x[1:]) if f is None else f - x[0]

    def cross_penalty(self, x, step, f=None, df=None):
        k_step = self.form.apply(step[1:]) if df is None else df - step[0]
        return float(x[1:] @ k_step), float(step[1:] @ k_step)

    def direction(self, x, g, d, lam, mu, rtol, z=None):
        if z is None:
            raise ValueError("the kernel-matrix Newton system needs the loss derivatives z")
        dd = d + mu * self.M * self.w_n
        # rows with no curvature left (mu at the rounding level, or zero weight): a large,
        # finite diagonal in L, so they follow their own gradient
        np.maximum(dd, 1e-300 + 1e-16 * self.M * self.w_n.max(), out=dd)
        r = z + 2.0 * lam * x[1:]
        products = self.products if rtol >= SINGLE_RTOL else None
        step, df, its = bordered_solve(self.K, dd, lam, r, x[1:], self.precond, rtol, products=products)
        self.cg_iterations += its
        return step, df
