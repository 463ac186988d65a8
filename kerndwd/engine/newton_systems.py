"""The Newton systems of the forms: the form-specific part of semismooth Newton.

For ``F`` at one lambda (see :mod:`kerndwd.engine.solvers.newton`) the
generalized Hessian is ``H = Z' diag(d) Z + 2 lambda diag(0, Omega)`` with
``Z = [1, B]`` and ``d_i = w_i V_q''(y_i f_i) / n``.  A Newton system solves
the damped equations ``(H + mu S) step = -grad F`` in its own coordinates
(``S`` the diagonal of the MM majoriser's data curvature) and maps them to
the intercept-first coefficients and back.  One per form:

* :class:`LinearNewton` -- linear and feature forms (``||f||^2 = theta' theta``):
  a direct Cholesky solve of the ``(p+1)`` system, ``Z' diag(d) Z`` from the
  form's ``gram(weights)``;
* :class:`SparseLinearNewton` -- sparse linear forms: conjugate gradients with
  the form's products, Jacobi-preconditioned;
* :class:`KernelNewton` -- kernel forms: Newton-CG in the eigenbasis
  ``K = U diag(e) U'``.  There the data curvature of the eigen-direction
  ``j`` is at most ``M e_j^2 / n`` against the penalty's ``2 lambda e_j``, so
  only the directions with ``e_j`` above ``2 lambda n / M`` (a few dozen to a
  few hundred for smooth kernels) couple through the data; the
  preconditioner solves the Newton system exactly on those (a small dense
  Cholesky) and diagonally on the rest, and CG needs one or two iterations
  (two ``n x n`` products each) per Newton step.

A majoriser hands its form's system to the path solver
(:meth:`kerndwd.engine.majorisers.Majoriser.newton_system`).
"""

from __future__ import annotations

from abc import ABC, abstractmethod

import numpy as np
from scipy import linalg

__all__ = ["NewtonSystem", "LinearNewton", "SparseLinearNewton", "KernelNewton", "HEAD_FRACTION", "HEAD_MAX",
           "CG_MAXITER", "add_to_diagonal"]

#: Kernel systems: eigen-directions with ``e_j > HEAD_FRACTION 2 lambda n / (M max w)``
#: are solved exactly by the preconditioner (module docstring).
HEAD_FRACTION = 5e-4
#: ... at most this many of them (the dense block costs ``n HEAD_MAX^2`` per Newton step).
HEAD_MAX = 600
_EPS = float(np.finfo(float).eps)
#: Conjugate-gradient iterations per Newton step, at most.
CG_MAXITER = 200


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

    def start(self, alpha=None):
        """The system's coordinates of intercept-first coefficients ``alpha``
        (zero when None); a copy."""
        return np.zeros(self.ncoef) if alpha is None else np.array(alpha, dtype=float)

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
    def direction(self, x, g, d, lam, mu, rtol, z=None):
        """``(step, df)``: a solution of ``(H + mu S) step = -g`` (to the relative
        residual ``rtol`` for iterative systems) and ``df = Z~ step``; ``z``
        are the loss derivatives behind ``g`` (over ``n``)."""

    def stationary(self, x, z, g, lam, eps):
        """Coordinates the Newton steps cannot settle (see :class:`KernelNewton`):
        ``(x', df)`` with them moved to their stationary values and the change
        ``df`` of ``f``, when the rest of ``g`` is below ``eps / 2`` and theirs
        is above ``1e-4 eps``; else None.  None for systems without such
        coordinates."""
        return None

    def penalty(self, x, f=None):
        """The penalty at ``x`` (``f``: the decision values there, which a system
        whose penalty is not diagonal reads it from)."""
        return float(x[1:] @ (self.pen * x[1:]))

    def penalty_direction(self, x, f=None):
        """Half the penalty's gradient in ``x[1:]``: ``diag(pen) x[1:]``."""
        return self.pen * x[1:]

    def cross_penalty(self, x, step, f=None, df=None):
        """``x[1:]' diag(pen) step[1:]`` and ``step[1:]' diag(pen) step[1:]``
        (``f``, ``df``: the decision values at ``x`` and their change along ``step``)."""
        sp = self.pen * step[1:]
        return float(x[1:] @ sp), float(step[1:] @ sp)


def add_to_diagonal(A, value, start=0):
    """Add ``value`` (a number, or one per entry) to the diagonal of the square
    ``A`` from entry ``(start, start)`` on, in place, whatever its memory
    layout (through a writable view of the diagonal: no index arrays, and
    no copy of a Fortran-ordered or strided ``A``)."""
    np.einsum("ii->i", A)[start:] += value


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
        add_to_diagonal(H, step * floor)
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

    def direction(self, x, g, d, lam, mu, rtol, z=None):
        H = self.form.gram(d)
        add_to_diagonal(H, mu * self.scale)
        add_to_diagonal(H, 2.0 * lam, start=1)
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

    def direction(self, x, g, d, lam, mu, rtol, z=None):
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

    def start(self, alpha=None):
        if alpha is None:
            return np.zeros(self.ncoef)
        return np.concatenate(([alpha[0]], self.U.T @ alpha[1:]))

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
        add_to_diagonal(Hh, shift[head])
        return _cholesky(Hh, self.scale[head])

    def direction(self, x, g, d, lam, mu, rtol, z=None):
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
