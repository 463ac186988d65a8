"""A second-order path solver: semismooth (generalized) Newton on ``F``.

For each lambda of the path the solver minimises

    F(b0, theta) = (1/n) sum_i w_i V_q(y_i f_i) + lambda ||f||^2,          (3.1), (4.2), (6.2)

``f = b0 + B theta``, by Newton steps on the generalized Hessian

    H = Z' diag(d) Z + 2 lambda diag(0, Omega),    d_i = w_i V_q''(y_i f_i) / n,

with ``Z = [1, B]`` and ``||f||^2 = theta' Omega theta``.  ``V_q`` is C^1
and ``V_q'`` is piecewise smooth: ``V_q'' = 0`` up to the knot
``t = q/(q+1)`` and ``(q+1) t^(q+1) u^(-q-2) <= M = (q+1)^2/q`` beyond it
(Lemma 2), so ``H`` is an element of the generalized (Clarke) Hessian of
``F`` and the iteration is the semismooth Newton method.

Damping.  ``H`` is singular when no margin lies beyond the knot (the
intercept direction then has no curvature: every path starts there, at
``f = 0``), and nearly so at tiny lambda where few margins do.  Each step
solves the Levenberg-Marquardt system

    (H + mu S) step = -grad F,

with ``S`` the diagonal of the MM majoriser's data curvature
``(M/n) Z'WZ`` (the floor that majoriser puts under every direction, Lemma 2)
and ``mu = min(1, c nu)``, ``nu = sqrt(grad' P^-1 grad)`` for ``P = S + 2
lambda diag(0, Omega)``: the norm of the gradient in the majoriser's
metric, which is dimensionless like ``F``.  ``H + mu S`` is positive
definite whenever ``grad F != 0``; ``mu`` vanishes like ``||grad F||`` at
the optimum, which keeps the local convergence of Newton's method (the
regularised Newton method of Li, Fukushima, Qi & Yamashita, 2004).  ``c``
is adapted as a trust region is (:data:`LM_START`, :data:`LM_SHRINK`,
:data:`LM_GROW`).

Line search.  The step length is the first trial (from 1, following the
secant of the derivative) that satisfies Armijo's condition, certified
either by values of ``F`` or, since ``F`` is convex along the step, by its
derivative (:func:`_line_search`), so the objective decreases at every
accepted iteration even where its decrease is below the rounding of ``F``.
The change of ``f`` along the step is one product with the basis, after
which each trial length costs ``O(n)``.

The Newton system (:class:`NewtonSystem`) depends on the form:

* linear and feature forms (``||f||^2 = theta' theta``): a direct Cholesky
  solve of the ``(p+1)`` system, ``Z' diag(d) Z`` from the form's
  ``gram(weights)``;
* sparse linear forms: conjugate gradients with the form's products,
  Jacobi-preconditioned;
* kernel forms: Newton-CG in the eigenbasis ``K = U diag(e) U'`` (the one
  the unweighted MM majoriser already holds).  There the data curvature of
  the eigen-direction ``j`` is at most ``M e_j^2 / n`` against the penalty's
  ``2 lambda e_j``, so only the directions with ``e_j`` above
  ``2 lambda n / M`` (a few dozen to a few hundred for smooth kernels) couple
  through the data; the preconditioner solves the Newton system exactly on
  those (a small dense Cholesky) and diagonally on the rest, and CG needs
  one or two iterations (two ``n x n`` products each) per Newton step.

Warm starts along the path; ``stop="kkt"`` only (R's step rule belongs to
the MM iteration); ``maxit`` bounds the Newton iterations of the whole
path; each returned column was confirmed to satisfy ``||grad F|| <= eps``
on decision values recomputed from its coefficients.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import replace

import numpy as np
from scipy import linalg

from .forms import KernelForm, LinearForm, SparseLinearForm
from .loop import (PathResult, all_finite, climbed, diverged_jerr, evaluate, jerr_diverged, mm_path, register_method,
                   stable_norm)

__all__ = ["newton_path", "NewtonSystem", "LinearNewton", "SparseLinearNewton", "KernelNewton",
           "newton_system", "LM_START", "ARMIJO", "HEAD_FRACTION", "HEAD_MAX"]

#: The damping is ``mu = min(1, c nu)`` (module docstring), with ``c``
#: adapted as a trust region is: it starts at ``LM_START``, shrinks by
#: ``LM_SHRINK`` after a full step (the Newton model was trusted) and grows
#: by ``LM_GROW`` after a shortened one, within ``[LM_MIN, 1]``.
LM_START = 0.1
LM_SHRINK = 0.25
LM_GROW = 4.0
LM_MIN = 1e-6
LM_MAX = 100.0
#: Armijo's constant: a step of length ``t`` must lower ``F`` by at least
#: ``ARMIJO t |grad' step|``.
ARMIJO = 1e-4
#: Backtracking gives up after this many trial lengths (the last is below
#: ``0.5^(MAX_BACKTRACK - 1)``): the direction cannot lower ``F`` at this precision.
MAX_BACKTRACK = 60
#: Kernel systems: eigen-directions with ``e_j > HEAD_FRACTION 2 lambda n / (M max w)``
#: are solved exactly by the preconditioner (module docstring).
HEAD_FRACTION = 5e-4
#: ... at most this many of them (the dense block costs ``n HEAD_MAX^2`` per Newton step).
HEAD_MAX = 600
_EPS = float(np.finfo(float).eps)
#: Conjugate-gradient iterations per Newton step, at most.
CG_MAXITER = 200
#: A lambda is given up (``jerr``) after this many Newton iterations in a row
#: that neither lower ``F`` beyond its rounding nor halve the smallest
#: gradient norm seen: the gradient has reached the floor that rounding sets,
#: above ``eps``.
STALL_LIMIT = 8
#: Moves of the concave coordinates to their stationary point per lambda, at most
#: (:meth:`KernelNewton.stationary`; one is usually enough).
STATIONARY_LIMIT = 4


# --------------------------------------------------------------------------
# Newton systems: the form-specific part
# --------------------------------------------------------------------------
class NewtonSystem(ABC):
    """The Newton equations of ``F`` in the system's coordinates ``x``
    (intercept first; ``f = x[0] + B~ x[1:]`` for the system's basis ``B~``).

    The penalty is ``x[1:]' diag(pen) x[1:]`` in these coordinates
    (``pen = 1`` for a linear form, the eigenvalues of ``K`` in the kernel
    eigenbasis), so its gradient is ``2 lambda pen x[1:]``.
    """

    n: int
    ncoef: int
    pen: np.ndarray

    def zero(self):
        return np.zeros(self.ncoef)

    def to_alpha(self, x):
        """Intercept-first coefficients of the form (a copy)."""
        return x.copy()

    @abstractmethod
    def decision(self, x):
        """``f`` at ``x``."""

    @abstractmethod
    def data_gradient(self, z):
        """``Z~' z`` (``z`` already holds the ``1/n``)."""

    def set_lambda(self, lam, curvature_bound):
        """Work that depends on lambda alone (``curvature_bound`` bounds every ``d_i``)."""

    @abstractmethod
    def direction(self, x, g, d, lam, mu, rtol):
        """``(step, df)``: a solution of ``(H + mu S) step = -g`` (to the relative
        residual ``rtol`` for iterative systems) and ``df = Z~ step``."""

    def stationary(self, x, z, g, lam, eps):
        """Coordinates the Newton steps cannot settle (see :class:`KernelNewton`):
        ``(x', df)`` with them moved to their stationary values and the change
        ``df`` of ``f``, when the rest of ``g`` is below ``eps / 2`` and theirs
        is above ``1e-4 eps``; else None.  None for systems without such
        coordinates."""
        return None

    def penalty(self, x):
        return float(x[1:] @ (self.pen * x[1:]))

    def cross_penalty(self, x, step):
        """``x[1:]' diag(pen) step[1:]`` and ``step[1:]' diag(pen) step[1:]``."""
        sp = self.pen * step[1:]
        return float(x[1:] @ sp), float(step[1:] @ sp)


def _diagonal(H):
    """A writable view of the diagonal of the square array ``H``."""
    return H.reshape(-1)[::H.shape[0] + 1]


def _cholesky(H, floor):
    """The upper Cholesky factor of ``H`` (overwritten; positive definite in
    exact arithmetic); when rounding breaks the factorisation, ``floor`` (a
    positive diagonal) is added to the diagonal with growing weight until it
    succeeds.  LAPACK directly: these systems are small and solved often."""
    weight = 0.0
    while True:
        factor, info = linalg.lapack.dpotrf(H, lower=False, clean=False, overwrite_a=False)
        if info == 0:
            return factor
        if not (np.isfinite(H).all() and weight < 1e300):  # overflowed: no weight makes it factorise
            raise FloatingPointError("the Newton system is not finite")
        step = max(weight, 1e-12)
        _diagonal(H)[:] += step * floor
        weight += step
        weight *= 10.0


def _cho_solve(factor, rhs):
    """``H^-1 rhs`` from the factor of :func:`_cholesky`."""
    return linalg.lapack.dpotrs(factor, rhs, lower=False)[0]


def _data_scale(sq_norms, M, n):
    """``S``: the diagonal of the MM majoriser's data curvature ``(M/n) Z'WZ``."""
    return (M / n) * np.asarray(sq_norms, dtype=float)


class LinearNewton(NewtonSystem):
    """A linear or feature form: ``Z' diag(d) Z`` from ``form.gram(d)``, a direct
    Cholesky solve of the ``(p+1)`` system.

    Parameters
    ----------
    form : LinearForm
        Offers ``zmul``, ``ztmul``, ``gram(weights)`` and ``weighted_sq_norms(weights)``.
    weights : ndarray or None
        The observation weights of the loss.
    M : float
        The bound of Lemma 2.
    """

    def __init__(self, form, weights, M):
        self.form = form
        self.n, self.ncoef = form.n, form.p + 1
        self.pen = np.ones(form.p)
        w = np.ones(form.n) if weights is None else weights
        self.scale = _data_scale(form.weighted_sq_norms(w), M, form.n)

    def decision(self, x):
        return self.form.zmul(x)

    def data_gradient(self, z):
        return self.form.ztmul(z)

    def direction(self, x, g, d, lam, mu, rtol):
        H = self.form.gram(d)
        diag = _diagonal(H)
        diag += mu * self.scale
        diag[1:] += 2.0 * lam
        step = -_cho_solve(_cholesky(H, self.scale), g)
        return step, self.form.zmul(step)


def _pcg(matvec, precond, rhs, rtol, maxiter):
    """Preconditioned conjugate gradients from zero for ``A x = rhs``: stops at
    ``||A x - rhs|| <= rtol ||rhs||``.  Every iterate lowers the quadratic
    ``x'Ax/2 - rhs'x`` below zero, so it is a descent direction of ``F``
    when ``rhs = -grad F``.

    ``matvec(v)`` returns ``A v``, or ``(A v, image)`` where ``image`` is a
    linear image of ``v`` (e.g. the change of ``f`` it makes); then the
    image of ``x`` is accumulated along the way and ``(x, image of x)`` is
    returned (the image is None when no iteration ran).  Returns
    ``(x, image, iterations)``."""
    x = np.zeros_like(rhs)
    image = None
    r = rhs.copy()
    stop = rtol * np.linalg.norm(rhs)
    s = precond(r)
    p = s.copy()
    p_image = None
    rs = r @ s
    its = 0
    for its in range(1, maxiter + 1):
        out = matvec(p)
        Ap, p_image = out if isinstance(out, tuple) else (out, None)
        pAp = p @ Ap
        if not pAp > 0.0:  # no curvature left along p (rounding): keep what we have
            its -= 1
            break
        a = rs / pAp
        x += a * p
        if p_image is not None:
            image = a * p_image if image is None else image + a * p_image
        r -= a * Ap
        if np.linalg.norm(r) <= stop:
            break
        s = precond(r)
        rs_new = r @ s
        p *= rs_new / rs
        p += s
        rs = rs_new
    if not x.any():  # not even one step: the preconditioned residual is a descent direction
        x, image = precond(rhs), None
    return x, image, its


class SparseLinearNewton(LinearNewton):
    """A sparse linear form: ``(H + mu S) step = -g`` by conjugate gradients with
    ``v -> Z'(d * (Z v)) + diag(...) v`` (two sparse products per iteration,
    ``Z'DZ`` never formed), preconditioned by its diagonal."""

    def direction(self, x, g, d, lam, mu, rtol):
        form = self.form
        shift = mu * self.scale
        shift[1:] += 2.0 * lam
        jacobi = form.weighted_sq_norms(d) + shift

        def matvec(v):
            return form.ztmul(d * form.zmul(v)) + shift * v

        step = _pcg(matvec, lambda r: r / jacobi, -g, rtol, CG_MAXITER)[0]
        return step, form.zmul(step)


class KernelNewton(NewtonSystem):
    """A kernel form, in the eigenbasis ``K = U diag(e) U'``: ``x = (b0, U' alpha)``,
    ``f = b0 + U (e * x[1:])``, penalty ``x[1:]' diag(e) x[1:]``.

    Directions whose eigenvalue is at the rounding level of the
    decomposition (``|e_j| <= n eps_machine max|e|``, the null space of a
    singular ``K``) are left at zero: moving them changes ``f`` only by
    rounding, and large coefficients there would make ``K alpha`` noisy;
    their gradient components ``e_j (U_j' z / n + 2 lambda x_j)`` are at the
    rounding level too.

    Directions with a negative eigenvalue beyond that level (an indefinite
    kernel matrix: a kernel that is not positive definite, such as some
    Bessel kernels, or the square root in the distance of a Laplace or
    Bessel kernel, which turns the rounding of a duplicated row's squared
    distance, ``1e-16``, into ``1e-8``) make ``F`` concave in ``alpha``
    along them, unbounded below, with its stationary point a maximum there.
    The Newton steps, which only descend, leave them alone; once the rest of
    the gradient is below ``eps / 2``, :meth:`stationary` sets them to that
    stationary point, ``x_j = -U_j' z / (2 lambda n)`` (the representer
    value the MM iteration and R converge to), which the gradient rule asks
    for; so both solvers return the same point.
    That move raises ``F`` by about ``lambda sum_j |e_j| x_j^2``, the concave
    part (1e-9 relative on a duplicated row under a Laplace kernel).

    Parameters
    ----------
    form : KernelForm
    eig : tuple ``(e, U)``
        The eigendecomposition of ``form.K`` (shared, never modified).
    weights : ndarray or None
    M : float
    """

    def __init__(self, form, eig, weights, M):
        self.form = form
        self.e, self.U = eig
        n = form.n
        self.n, self.ncoef = n, n + 1
        self.pen = self.e
        null = n * _EPS * float(np.abs(self.e).max(initial=0.0))
        self.model_e = np.where(self.e > null, self.e, 0.0)
        self.live = np.concatenate(([True], self.model_e > 0.0))
        self.concave = np.flatnonzero(self.e < -null)  # eigen-directions along which F is concave
        self.order = np.argsort(-self.model_e)
        # diagonal of (M/n) Z~'WZ~ with Z~ = [1, U diag(e)]: the columns of U have unit norm
        if weights is None:
            sq = np.concatenate(([float(n)], self.model_e ** 2))
        else:
            sq = np.concatenate(([weights.sum()], self.model_e ** 2 * ((self.U * self.U).T @ weights)))
        self.scale = _data_scale(sq, M, n)
        self._head = None  # (head indices in x, Z~ restricted to them)

    def to_alpha(self, x):
        return np.concatenate(([x[0]], self.U @ x[1:]))

    def decision(self, x):
        return x[0] + self.U @ (self.e * x[1:])

    def data_gradient(self, z):
        return np.concatenate(([z.sum()], self.e * (self.U.T @ z)))

    def set_lambda(self, lam, curvature_bound):
        # direction j couples through the data when e_j * max d >~ 2 lambda (module docstring)
        cut = HEAD_FRACTION * 2.0 * lam / curvature_bound
        size = min(HEAD_MAX, int(np.count_nonzero(self.model_e > cut)))
        if self._head is not None and self._head[0].size == size + 1:
            return
        cols = self.order[:size]
        Zh = np.empty((self.n, size + 1))
        Zh[:, 0] = 1.0
        np.multiply(self.U[:, cols], self.model_e[cols], out=Zh[:, 1:])
        self._head = (np.concatenate(([0], cols + 1)), Zh)

    def stationary(self, x, z, g, lam, eps):
        if self.concave.size == 0:
            return None
        rows = self.concave + 1
        concave_sq = float(g[rows] @ g[rows])
        if concave_sq <= (1e-4 * eps) * (1e-4 * eps) or g @ g - concave_sq > 0.25 * eps * eps:
            return None
        basis = self.U[:, self.concave]
        moved = x.copy()
        moved[rows] = -(basis.T @ z) / (2.0 * lam)  # z holds the 1/n
        return moved, basis @ (self.e[self.concave] * (moved[rows] - x[rows]))

    def _model_diag(self, lam, mu):
        diag = mu * self.scale
        diag[1:] += 2.0 * lam * self.model_e
        return diag

    def _head_factor(self, d, shift):
        """The Cholesky factor of the Newton matrix on the head directions."""
        head, Zh = self._head
        active = d > 0.0
        rows = Zh[active] * np.sqrt(d[active])[:, None]
        Hh = rows.T @ rows
        _diagonal(Hh)[:] += shift[head]
        return _cholesky(Hh, self.scale[head])

    def direction(self, x, g, d, lam, mu, rtol):
        U, e_m, live = self.U, self.model_e, self.live
        head = self._head[0]
        shift = self._model_diag(lam, mu)
        # the preconditioner: the Newton matrix itself on the head, its diagonal
        # (with the data curvature averaged) on the tail
        factor = self._head_factor(d, shift)
        tail = shift.copy()
        tail[1:] += e_m * e_m * d.sum()  # sum_i U_ij^2 d_i, with the weights U_ij^2 (summing to 1) flattened
        tail[~live] = 1.0
        tail[0] = 1.0  # the intercept is in the head

        def precond(r):
            out = r / tail
            out[head] = _cho_solve(factor, r[head])
            return out

        def matvec(v):
            dv = v[0] + U @ (e_m * v[1:])  # the change of f along v: returned as its image
            image = dv.copy()
            dv *= d
            out = np.empty_like(v)
            out[0] = dv.sum()
            out[1:] = e_m * (U.T @ dv)
            out += shift * v
            return out, image

        rhs = np.where(live, -g, 0.0)
        step, df, _ = _pcg(matvec, precond, rhs, rtol, CG_MAXITER)
        return step, self.decision(step) if df is None else df


def newton_system(majoriser):
    """The Newton system for the form of ``majoriser`` (see the module docstring)."""
    form, loss = majoriser.form, majoriser.loss
    M = loss.lipschitz
    if isinstance(form, KernelForm):
        eig = majoriser.eigenbasis()
        return KernelNewton(form, form.eigh() if eig is None else eig, loss.weights, M)
    if isinstance(form, SparseLinearForm):
        return SparseLinearNewton(form, loss.weights, M)
    if isinstance(form, LinearForm):
        return LinearNewton(form, loss.weights, M)
    raise TypeError(f"method='newton' has no Newton system for a {type(form).__name__}; use method='mm'")


# --------------------------------------------------------------------------
# the path
# --------------------------------------------------------------------------
def _line_search(loss, y, w_n, wy_n, f, df, F, slope, lam, pen0, pen1, pen2):
    """A step length along ``step`` that lowers ``F`` by Armijo's rule, or None.

    With ``phi(t) = F(x + t step)`` (``f + t df``; penalty
    ``pen0 + 2 t pen1 + t^2 pen2``; ``w_n``, ``wy_n`` the weights and the
    weighted labels over ``n``), ``t`` is accepted when
    ``phi(t) <= phi(0) + ARMIJO t phi'(0)``, or when
    ``phi'(t) <= ARMIJO phi'(0)``: ``phi`` is convex, so
    ``phi(t) <= phi(0) + t phi'(t)`` and the second test certifies the
    first.  Near the optimum the decrease falls below the rounding of ``F``
    (a gradient of 1e-9 lowers ``F`` by about 1e-18) while ``phi'`` is
    still computed accurately, so the second test keeps certifying full
    Newton steps there.  Trial lengths start at 1 and follow the secant of
    ``phi'`` towards the root of ``phi'(t) - ARMIJO phi'(0)``.

    Returns ``(t, phi(t), penalty at t)`` or None when no trial passed.
    """
    t = 1.0
    target = ARMIJO * slope
    slope_df = wy_n * df
    for _ in range(MAX_BACKTRACK):
        values, derivs = loss.values_and_derivs(y * (f + t * df))
        pen = pen0 + t * (2.0 * pen1 + t * pen2)
        value = float(w_n @ values) + lam * pen
        deriv = float(derivs @ slope_df) + 2.0 * lam * (pen1 + t * pen2)
        if value <= F + target * t or deriv <= target:
            return t, value, pen
        # phi' is nondecreasing: the root of phi' - target lies in (0, t); after the
        # first trial each one at least halves t, so MAX_BACKTRACK trials reach any length
        guess = t * (target - slope) / (deriv - slope) if deriv > slope else 0.5 * t
        t = min(max(guess, 0.01 * t), (0.9 if t == 1.0 else 0.5) * t)
    return None


def newton_path(majoriser, problem, callback=None):
    """Semismooth Newton along ``problem.lambdas`` (see the module docstring).

    Parameters
    ----------
    majoriser : Majoriser
        Supplies the form, the loss and, for kernel forms, the eigenbasis
        (:meth:`~kerndwd.engine.contract.Majoriser.eigenbasis`).
    problem : Problem
        Reads ``y``, ``lambdas`` (decreasing), ``eps``, ``maxit`` (Newton
        iterations for the whole path) and ``stop``, which must be ``"kkt"``.
    callback : callable, optional
        ``callback(l, lam, alpha, f, kind)`` after every accepted Newton step
        (``kind="newton"``, which never raises ``F``) and every move of the
        coordinates along which an indefinite kernel matrix makes ``F``
        concave to their stationary point (``kind="stationary"``, see
        :class:`KernelNewton`), with the intercept-first coefficients and the
        decision values (a test hook).

    Returns
    -------
    PathResult
        ``npass`` counts Newton iterations; ``kkt[l] <= eps`` for every column.
        When Newton stops short of ``eps`` on a lambda (its rounding guard or
        the budget) and no ``callback`` is given, the MM iteration with
        momentum (:func:`kerndwd.engine.loop.mm_path`) continues the path from
        Newton's last iterate there; the lambdas Newton finished are kept, and
        ``npass`` of the lambda it stopped on adds both solvers' iterations.

    Raises
    ------
    ValueError
        When ``problem.stop`` is not ``"kkt"``.

    Examples
    --------
    >>> import numpy as np
    >>> from kerndwd.engine import FactorCache, Problem, build_majoriser, newton_path
    >>> rng = np.random.default_rng(0)
    >>> X = rng.standard_normal((50, 3)); y = np.where(X[:, 0] > 0, 1.0, -1.0)
    >>> problem = Problem.from_arrays(X, y, [1.0, 0.1], stop="kkt", eps=1e-8, method="newton")
    >>> result = newton_path(build_majoriser(problem, FactorCache(X, problem.kern)), problem)
    >>> bool((result.kkt <= 1e-8).all())
    True
    """
    if problem.stop != "kkt":
        raise ValueError(f"method='newton' stops on the gradient (stop='kkt'), got stop={problem.stop!r}")
    # a lambda whose iterate leaves the finite numbers is abandoned (jerr = -(DIVERGED + l),
    # see kerndwd.engine.loop): overflow on the way there is expected, and never returned
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        result = _newton_path(majoriser, problem, callback)
    if result.jerr < 0 and not jerr_diverged(result.jerr) and callback is None:
        # Newton stopped short (its rounding guard, or the budget): on degenerate problems
        # (large q, a rank-deficient K) rounding can hold its gradient above a tight eps
        # that MM, whose every pass descends, still reaches: MM continues the path from
        # Newton's last iterate, the lambdas Newton finished kept as they are
        done = result.lambdas.size
        start = None if result.unfinished is None else result.unfinished[0]
        rest = mm_path(majoriser, replace(problem, lambdas=problem.lambdas[done:], accelerate=True), start=start)
        if rest.lambdas.size:
            return result.followed_by(rest)
    return result


def _newton_path(majoriser, problem, callback):
    loss, form = majoriser.loss, majoriser.form
    system = newton_system(majoriser)
    y, lambdas, eps, maxit = problem.y, problem.lambdas, problem.eps, problem.maxit
    n = majoriser.n
    w = loss.weights
    wy_n = loss.weighted_labels(y) / n
    w_n = (np.ones(n) if w is None else w) / n
    curvature_bound = loss.lipschitz * max(float(w_n.max()), np.finfo(float).tiny)
    nlam = len(lambdas)
    x = system.zero()
    f = np.zeros(n)
    npass = np.zeros(nlam, dtype=int)
    finished = []
    total = 0
    jerr = 0
    unfinished = None

    def state(x, f, lam):
        """``(z, d, g)``: the loss's first and second derivatives in ``f`` and ``grad F``."""
        d1, d2 = loss.derivs_and_curvatures(y * f)
        z = wy_n * d1
        g = system.data_gradient(z)
        g[1:] += 2.0 * lam * system.pen * x[1:]
        return z, w_n * d2, g

    def objective(x, f, lam):
        pen = system.penalty(x)
        return float(w_n @ loss.value(y * f)) + lam * pen, pen

    damping = LM_START
    for l, lam in enumerate(lambdas):
        start = x.copy()  # finite: what is reported should this lambda leave the finite numbers
        system.set_lambda(lam, curvature_bound)
        metric = system.scale.copy()  # the diagonal of the majoriser's Hessian (divided by n)
        metric[1:] += 2.0 * lam * np.maximum(system.pen, 0.0)
        inv_metric = np.divide(1.0, metric, out=np.zeros_like(metric), where=metric > 0.0)
        F, pen = objective(x, f, lam)
        start_objective = F
        z, d, g = state(x, f, lam)
        done = None
        best, stalled = np.inf, 0
        settled = 0
        while True:
            gnorm = stable_norm(g)
            if not (np.isfinite(gnorm) and np.isfinite(F)):
                jerr = diverged_jerr(l)
                break
            moved = system.stationary(x, z, g, lam, eps) if settled < STATIONARY_LIMIT else None
            if moved is not None:  # coordinates along which F is concave: to their stationary point
                settled += 1
                x, f = moved[0], f + moved[1]
                F, pen = objective(x, f, lam)
                z, d, g = state(x, f, lam)
                if callback is not None:
                    callback(l, lam, system.to_alpha(x), f, "stationary")
                continue
            if gnorm <= eps:
                # confirm on decision values recomputed from the coefficients
                alpha = system.to_alpha(x)
                f_exact, value, grad = evaluate(form, alpha, y, loss, lam)
                if grad @ grad <= eps * eps and all_finite(alpha, value):
                    done = (alpha, value, grad)
                    break
                f = system.decision(x)
                F, pen = objective(x, f, lam)
                z, d, g = state(x, f, lam)
            total += 1
            npass[l] += 1
            nu = float(np.sqrt((g * g) @ inv_metric))
            mu = min(1.0, damping * nu)
            try:
                step, df = system.direction(x, g, d, lam, mu, min(0.1, np.sqrt(gnorm)))
            except FloatingPointError:  # the curvature overflowed
                jerr = diverged_jerr(l)
                break
            slope = float(g @ step)
            pen1, pen2 = system.cross_penalty(x, step)
            found = (_line_search(loss, y, w_n, wy_n, f, df, F, slope, lam, pen, pen1, pen2)
                     if slope < 0.0 else None)
            if found is None:
                found = (0.0, F, pen)  # no length passes: counts as a stalled iteration
            damping = max(damping * LM_SHRINK, LM_MIN) if found[0] == 1.0 else min(damping * LM_GROW, LM_MAX)
            progress = found[1] < F - 8.0 * _EPS * abs(F) or gnorm < 0.5 * best
            best = min(best, gnorm)
            stalled = 0 if progress else stalled + 1
            if stalled >= STALL_LIMIT:
                jerr = -(l + 1)
                break
            t, F, pen = found
            x = x + t * step
            f = f + t * df
            z, d, g = state(x, f, lam)
            if callback is not None:
                callback(l, lam, system.to_alpha(x), f, "newton")
            if total > maxit:  # as the MM iteration counts: the step past the budget is taken, then reported
                jerr = -(l + 1)
                break
        if not jerr and climbed(done[1], start_objective):  # rounding carried it off
            jerr = diverged_jerr(l)
        if jerr:
            alpha = system.to_alpha(start if jerr_diverged(jerr) else x)
            unfinished = (alpha,) + evaluate(form, alpha, y, loss, lam)[1:]
            if not all_finite(*unfinished):  # the budget ran out on a non-finite iterate
                jerr = diverged_jerr(l)
                alpha = system.to_alpha(start)
                unfinished = (alpha,) + evaluate(form, alpha, y, loss, lam)[1:]
            break
        finished.append(done)
    return PathResult.collect(finished, lambdas, npass, jerr, system.ncoef, unfinished)


register_method("newton", newton_path, stop_rules=("kkt",), accelerates=False)
