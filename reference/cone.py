"""DWD as cone programs in cvxpy: an independent baseline for the MM port.

Nothing here imports :mod:`kerndwd`.  Data go in as numpy arrays, answers
come out as numpy arrays, and every formula (the loss, the objective, the
map between the two parametrisations) is written out again below, so that
agreement with the port is evidence and not an echo.

Two families of problems (equation numbers of Wang & Zou 2018):

* **The second-order cone program of Marron, Todd & Ahn (2007)** for the
  standard DWD (q = 1), :func:`solve_socp`: (2.6) written as (2.7), with
  ``rho_i - sigma_i = d_i`` and ``rho_i + sigma_i = 1/d_i`` expressed by the
  rotated cone ``rho_i^2 - sigma_i^2 >= 1``, and the unit-norm direction
  relaxed to the convex ``||omega|| <= 1`` (exact when the optimal
  ``omega`` has unit norm; the returned ``w`` lets a caller check, and the
  validation reports its norm).  Optional observation weights
  give the weighted DWD of Qiao et al. (2010), (6.1).  The kernel form (2.9)
  is the same program on a factor ``Phi`` with ``K = Phi Phi'``
  (:func:`kernel_factor`, :func:`solve_socp_kernel`).

* **The loss + penalty problem for any q > 0**, :func:`solve_generalized`:
  (3.1) (linear), (4.2) (kernel) and (6.2) (weighted), i.e.

      minimise  (1/n) sum_i w_i V_q(y_i f_i) + lambda ||f||^2.

  ``V_q`` is not a cvxpy atom, but the proof of Lemma 1 writes it as a
  minimum over a slack ``eta >= 0``:

      V_q(u) = min_{eta >= 0}  eta + a_q (u + eta)^(-q),   a_q = q^q / (q+1)^(q+1),

  (the minimiser is ``eta = max(0, q/(q+1) - u)``), so the problem becomes
  jointly convex in ``(b0, theta, eta)`` with the DCP atom
  ``power(u + eta, -q)`` (``inv_pos`` for q = 1).

:func:`remark4_c` and :func:`lambda_fit_to_socp` implement Remark 4: the
solution of (3.1) at ``lambda`` is, after scaling to unit norm, the solution
of the generalized DWD (2.10) at ``c(lambda) = (q+1)^(q+1)/q^q ||beta||^(q+1)``;
:func:`socp_to_lambda` goes back from (2.10) at ``c`` to (3.1) and its ``lambda``.
"""

from __future__ import annotations

import time
import warnings

import numpy as np

try:  # cvxpy is an optional dependency of the project (extra "cvxpy")
    import cvxpy as cp
except ImportError:  # pragma: no cover - exercised only without cvxpy
    cp = None

__all__ = [
    "SOLVER_OPTIONS",
    "available_solvers",
    "dwd_loss",
    "dwd_loss_deriv",
    "generalized_objective",
    "kernel_factor",
    "lambda_fit_to_socp",
    "remark4_c",
    "socp_objective",
    "socp_to_lambda",
    "socp_value_from_fit",
    "solve_generalized",
    "solve_socp",
    "solve_socp_kernel",
]

#: Tight tolerances per solver.  Clarabel (the default) reaches them
#: reliably; ECOS and SCS are offered for timing comparisons (SCS is a
#: first-order method and will not reach 1e-10 in a sensible time).
SOLVER_OPTIONS = {
    "CLARABEL": dict(tol_gap_abs=1e-11, tol_gap_rel=1e-11, tol_feas=1e-11, tol_ktratio=1e-9,
                     max_iter=500),
    "ECOS": dict(abstol=1e-10, reltol=1e-10, feastol=1e-10, max_iters=500),
    "SCS": dict(eps_abs=1e-9, eps_rel=1e-9, max_iters=200000),
}

# Eigenvalues of K below this fraction of the largest are rounding noise
# (and clipped negatives); their columns are dropped from the factor.  A
# dropped direction with eigenvalue e could have lowered the optimum of
# (4.2)/(6.2) by at most e * max(w)^2 / (4 n lambda) (its loss gradient is at
# most sqrt(e / n) max(w), its penalty lambda u^2), i.e. by at most
# _FACTOR_RTOL * max(diag K) * max(w)^2 / (4 lambda) in all: about 2e-10
# for the Gaussian kernel with w <= 3 at lambda = 1e-3.
_FACTOR_RTOL = 1e-13


def _require_cvxpy():
    if cp is None:
        raise ImportError("reference.cone needs cvxpy: pip install 'kerndwd[cvxpy]'")


def available_solvers():
    """The second-order-cone solvers of :data:`SOLVER_OPTIONS` that cvxpy can use here."""
    _require_cvxpy()
    have = set(cp.installed_solvers())
    return [s for s in SOLVER_OPTIONS if s in have]


# --------------------------------------------------------------------------
# input checks (the baseline validates on its own, it shares nothing)
# --------------------------------------------------------------------------
def _as_matrix(X, name):
    X = np.array(X, dtype=float, copy=True)
    if X.ndim != 2 or X.shape[0] < 2:
        raise ValueError(f"{name} must be a 2-D array with at least 2 rows, got shape {X.shape}")
    if not np.isfinite(X).all():
        raise ValueError(f"{name} must be finite")
    return X


def _as_labels(y, n):
    y = np.asarray(y, dtype=float).ravel()
    if y.shape != (n,):
        raise ValueError(f"y must have length {n}, got {y.shape}")
    if not np.isin(y, (-1.0, 1.0)).all() or np.unique(y).size != 2:
        raise ValueError("y must hold both labels -1 and +1 and nothing else")
    return y


def _as_weights(w, n):
    if w is None:
        return np.ones(n)
    w = np.asarray(w, dtype=float).ravel()
    if w.shape != (n,) or not np.isfinite(w).all() or (w < 0).any():
        raise ValueError(f"w must be {n} finite non-negative weights")
    return w.copy()


def _positive(value, name):
    value = float(value)
    if not np.isfinite(value) or value <= 0:
        raise ValueError(f"{name} must be positive and finite, got {value!r}")
    return value


def _solver_name(solver):
    _require_cvxpy()
    name = str(solver).upper()
    if name not in SOLVER_OPTIONS:
        raise ValueError(f"solver must be one of {sorted(SOLVER_OPTIONS)}, got {solver!r}")
    if name not in cp.installed_solvers():
        raise ValueError(f"solver {name} is not installed for cvxpy (have {cp.installed_solvers()})")
    return name


def _solve(problem, solver, solver_opts):
    opts = dict(SOLVER_OPTIONS[solver])
    opts.update(solver_opts or {})
    start = time.perf_counter()
    with warnings.catch_warnings():
        # "solution may be inaccurate": reported through the returned status instead
        warnings.simplefilter("ignore", UserWarning)
        problem.solve(solver=solver, **opts)
    seconds = time.perf_counter() - start
    if problem.status not in (cp.OPTIMAL, cp.OPTIMAL_INACCURATE):
        raise RuntimeError(f"{solver} ended with status {problem.status!r}")
    stats = problem.solver_stats
    solver_seconds = stats.solve_time if stats is not None and stats.solve_time is not None else float("nan")
    return seconds, float(solver_seconds)


# --------------------------------------------------------------------------
# the loss and the objective, written independently of the port
# --------------------------------------------------------------------------
def dwd_loss(u, q):
    """``V_q(u)`` of (3.2): ``1 - u`` up to ``q/(q+1)``, ``a_q u^(-q)`` beyond."""
    u = np.asarray(u, dtype=float)
    knot = q / (q + 1.0)
    a_q = q ** q / (q + 1.0) ** (q + 1.0)
    out = 1.0 - u
    hi = u > knot
    out[hi] = a_q * u[hi] ** (-q)
    return out


def dwd_loss_deriv(u, q):
    """``V_q'(u)`` of (3.4): ``-1`` up to ``q/(q+1)``, ``-(q/(q+1))^(q+1) u^(-q-1)`` beyond."""
    u = np.asarray(u, dtype=float)
    knot = q / (q + 1.0)
    out = -np.ones_like(u)
    hi = u > knot
    out[hi] = -(knot ** (q + 1.0)) * u[hi] ** (-q - 1.0)
    return out


def generalized_objective(f, y, lam, q, penalty, w=None):
    """``(1/n) sum_i w_i V_q(y_i f_i) + lambda * penalty``: (3.1), (4.2), (6.2).

    ``f`` are the decision values at the training points and ``penalty`` is
    ``||f||^2`` (``beta' beta``, ``alpha' K alpha`` or ``u' u``).
    """
    loss = dwd_loss(np.asarray(y) * np.asarray(f), q)
    if w is not None:
        loss = np.asarray(w) * loss
    return float(loss.mean() + lam * penalty)


def socp_objective(d, eta, c, w=None):
    """Objective of (2.10) (of (2.6) for q = 1; of (6.1) with weights):
    ``sum_i w_i (1/d_i + c eta_i)``, here for q = 1."""
    val = 1.0 / np.asarray(d) + c * np.asarray(eta)
    if w is not None:
        val = np.asarray(w) * val
    return float(val.sum())


# --------------------------------------------------------------------------
# kernel factor
# --------------------------------------------------------------------------
def kernel_factor(K, rtol=_FACTOR_RTOL):
    """A factor ``Phi`` with ``K ~= Phi Phi'`` (eq. 2.9's device).

    Marron et al. use a Cholesky factor, which fails on the singular (or,
    after rounding, slightly indefinite) kernel matrices met in practice.
    Here ``K = U diag(e) U'`` is diagonalised, negative eigenvalues are set
    to zero and columns whose eigenvalue is below ``rtol * max(e)`` are
    dropped, so ``Phi = U_+ diag(sqrt(e_+))`` has full column rank.  Any
    ``f = K alpha`` equals ``Phi u`` with ``u = Phi' alpha`` and
    ``alpha' K alpha = u' u``; conversely every ``Phi u`` is a kernel
    expansion, so optimising over ``u`` is (4.2) exactly, up to the dropped
    directions.
    """
    K = np.asarray(K, dtype=float)
    if K.ndim != 2 or K.shape[0] != K.shape[1] or not np.isfinite(K).all():
        raise ValueError(f"K must be a finite square matrix, got shape {K.shape}")
    K = 0.5 * (K + K.T)
    e, U = np.linalg.eigh(K)
    e = np.clip(e, 0.0, None)
    keep = e > rtol * max(e.max(), np.finfo(float).tiny)
    return U[:, keep] * np.sqrt(e[keep])


# --------------------------------------------------------------------------
# the SOCP (2.7) of Marron, Todd & Ahn, q = 1
# --------------------------------------------------------------------------
def solve_socp(X, y, C, solver="CLARABEL", w=None, solver_opts=None):
    """Standard DWD (q = 1) by the second-order cone program (2.7).

    Solves, over ``omega0``, ``omega`` (length p), ``eta >= 0``, ``rho``,
    ``sigma`` (length n)::

        minimise   sum_i w_i (rho_i + sigma_i + C eta_i)
        subject to rho - sigma = diag(y) X omega + omega0 y + eta,
                   (rho_i; sigma_i, 1) in SOC_3   for every i,
                   (1; omega) in SOC_{p+1}        i.e. ||omega|| <= 1,

    which is (2.6) (with ``w_i = 1``) or Qiao et al.'s weighted DWD (6.1):
    at the optimum ``rho_i - sigma_i = d_i`` and ``rho_i + sigma_i = 1/d_i``.

    Parameters
    ----------
    X : array, shape (n, p)
        Predictors (or a kernel factor ``Phi``, see :func:`solve_socp_kernel`).
    y : array, shape (n,)
        Labels in {-1, +1}.
    C : float > 0
        The cost ``c`` of (2.6); see :func:`remark4_c` for the ``C`` that
        corresponds to a loss + penalty fit at ``lambda``.
    solver : {"CLARABEL", "ECOS", "SCS"}
        Cone solver; each runs with the tight tolerances of
        :data:`SOLVER_OPTIONS` (``solver_opts`` overrides them).
    w : array, shape (n,), optional
        Non-negative observation weights ``w(y_i)`` of (6.1).

    Returns
    -------
    dict with
        ``w`` (the unit direction ``omega``, shape (p,)), ``b`` (``omega0``),
        ``xi`` (the slacks ``eta``), ``d`` (the distances
        ``y_i (omega0 + x_i' omega) + eta_i``), ``objective`` (the solver's
        optimal value), ``objective_eval`` ((2.6)/(6.1) evaluated with
        numpy at the returned point), ``seconds`` (wall time of cvxpy's
        ``solve``: canonicalisation plus the solver; building the cvxpy
        expression is excluded), ``solver_seconds`` (the solver's own time,
        as it reports it), ``status``, ``solver``.
    """
    _require_cvxpy()
    X = _as_matrix(X, "X")
    n, p = X.shape
    y = _as_labels(y, n)
    C = _positive(C, "C")
    wt = _as_weights(w, n)
    solver = _solver_name(solver)

    omega0 = cp.Variable()
    omega = cp.Variable(p)
    eta = cp.Variable(n, nonneg=True)
    rho = cp.Variable(n)
    sigma = cp.Variable(n)
    YX = X * y[:, None]
    constraints = [
        rho - sigma == YX @ omega + omega0 * y + eta,
        cp.SOC(rho, cp.vstack([sigma, np.ones(n)]), axis=0),
        cp.SOC(cp.Constant(1.0), omega),
    ]
    problem = cp.Problem(cp.Minimize(wt @ (rho + sigma + C * eta)), constraints)
    seconds, solver_seconds = _solve(problem, solver, solver_opts)
    om = np.asarray(omega.value, dtype=float).copy()
    b = float(omega0.value)
    xi = np.clip(np.asarray(eta.value, dtype=float), 0.0, None)
    d = y * (b + X @ om) + xi
    return dict(
        w=om, b=b, xi=xi, d=d, objective=float(problem.value),
        objective_eval=socp_objective(d, xi, C, None if w is None else wt),
        seconds=seconds, solver_seconds=solver_seconds, status=problem.status, solver=solver,
    )


def solve_socp_kernel(K, y, C, solver="CLARABEL", w=None, solver_opts=None):
    """Kernel DWD (2.9) with q = 1, solved as (2.7) on a factor of ``K``.

    ``K = Phi Phi'`` (:func:`kernel_factor`) and (2.7) is solved with
    ``Phi`` in place of ``X``.  Returns the dict of :func:`solve_socp` plus
    ``f`` = ``omega0 + Phi omega`` (the decision values at the training
    points, the quantity to compare; the coefficients are not unique when
    ``K`` is singular) and ``Phi``.
    """
    Phi = kernel_factor(K)
    out = solve_socp(Phi, y, C, solver=solver, w=w, solver_opts=solver_opts)
    out["f"] = out["b"] + Phi @ out["w"]
    out["Phi"] = Phi
    return out


# --------------------------------------------------------------------------
# loss + penalty for any q > 0: (3.1), (4.2), (6.2)
# --------------------------------------------------------------------------
def solve_generalized(X_or_K, y, lam, q, w=None, kernel=False, solver="CLARABEL", solver_opts=None):
    """The generalized DWD in loss + penalty form, as a cone program.

    Minimises over ``b0`` and ``theta``::

        (1/n) sum_i w_i V_q(y_i f_i) + lam ||f||^2

    * ``kernel=False``: ``X_or_K`` is X (n x p), ``f = b0 + X theta`` and
      ``||f||^2 = theta' theta``: (3.1), or (6.2)'s linear case with ``w``.
    * ``kernel=True``: ``X_or_K`` is the kernel matrix K (n x n),
      ``f = b0 + Phi theta`` with ``K = Phi Phi'`` (:func:`kernel_factor`)
      and ``||f||^2 = theta' theta`` (= ``alpha' K alpha`` for
      ``theta = Phi' alpha``): (4.2), or (6.2) with ``w``.

    ``V_q`` enters through the slack form of the proof of Lemma 1,
    ``V_q(u) = min_{eta >= 0} eta + a_q (u + eta)^(-q)``, with
    ``a_q = q^q/(q+1)^(q+1)``; cvxpy's ``power(., -q)`` (``inv_pos`` when
    q = 1) is convex and decreasing on the positive reals, so the whole
    problem is DCP.  For rational q (all the q used in validation) cvxpy's
    cone representation of the power is exact.

    Parameters
    ----------
    X_or_K : array, shape (n, p) or (n, n)
    y : array, shape (n,), labels in {-1, +1}
    lam : float > 0
    q : float > 0
    w : array, shape (n,), optional; non-negative weights (divided by n, not by their sum)
    kernel : bool
    solver : {"CLARABEL", "ECOS", "SCS"}; tolerances from :data:`SOLVER_OPTIONS`.

    Returns
    -------
    dict with ``b0`` (float), ``theta`` (``beta``, shape (p,), or the factor
    coordinates ``u``, shape (rank,)), ``f`` (decision values at the
    training points), ``penalty`` (``||f||^2``), ``objective`` (the
    solver's optimal value), ``objective_eval`` (the objective re-evaluated
    with numpy at the returned ``b0, theta``: an upper bound on the true
    optimum, since the problem is unconstrained in ``b0, theta``),
    ``seconds`` and ``solver_seconds`` (as in :func:`solve_socp`), ``status``,
    ``solver``; with
    ``kernel=True`` also ``Phi``.
    """
    _require_cvxpy()
    A = _as_matrix(X_or_K, "X_or_K")
    n = A.shape[0]
    y = _as_labels(y, n)
    lam = _positive(lam, "lam")
    q = _positive(q, "q")
    wt = _as_weights(w, n)
    solver = _solver_name(solver)
    if kernel:
        if A.shape != (n, n):
            raise ValueError(f"with kernel=True X_or_K must be the n x n kernel matrix, got {A.shape}")
        design = kernel_factor(A)
    else:
        design = A

    b0 = cp.Variable()
    theta = cp.Variable(design.shape[1])
    eta = cp.Variable(n, nonneg=True)
    margin = cp.multiply(y, b0 + design @ theta)
    a_q = q ** q / (q + 1.0) ** (q + 1.0)
    shifted = margin + eta
    tail = cp.inv_pos(shifted) if q == 1.0 else cp.power(shifted, -q)
    loss = (wt @ (eta + a_q * tail)) / n
    problem = cp.Problem(cp.Minimize(loss + lam * cp.sum_squares(theta)))
    seconds, solver_seconds = _solve(problem, solver, solver_opts)
    th = np.asarray(theta.value, dtype=float).copy()
    b = float(b0.value)
    f = b + design @ th
    pen = float(th @ th)
    out = dict(
        b0=b, theta=th, f=f, penalty=pen, objective=float(problem.value),
        objective_eval=generalized_objective(f, y, lam, q, pen, None if w is None else wt),
        seconds=seconds, solver_seconds=solver_seconds, status=problem.status, solver=solver,
    )
    if kernel:
        out["Phi"] = design
    return out


# --------------------------------------------------------------------------
# Remark 4: lambda <-> c
# --------------------------------------------------------------------------
def remark4_c(beta_norm, q):
    """``c(lambda) = (q+1)^(q+1) / q^q * ||beta(lambda)||^(q+1)`` (Remark 4).

    ``beta_norm`` is ``||beta(lambda)||`` of the solution of (3.1) at
    ``lambda`` (``sqrt(alpha' K alpha)`` for a kernel fit).
    """
    beta_norm = _positive(beta_norm, "beta_norm")
    q = _positive(q, "q")
    return (q + 1.0) ** (q + 1.0) / q ** q * beta_norm ** (q + 1.0)


def lambda_fit_to_socp(b0, beta, q):
    """Map a solution ``(b0, beta)`` of (3.1) to its (2.10) counterpart.

    Returns ``dict(c, omega0, omega, scale)`` with ``scale = ||beta||``,
    ``omega = beta/||beta||``, ``omega0 = b0/||beta||`` and ``c`` from
    :func:`remark4_c`: by Remark 4, ``(omega0, omega)`` solves (2.10) at
    that ``c`` (the optimal values are related by :func:`socp_value_from_fit`).
    """
    beta = np.asarray(beta, dtype=float)
    scale = float(np.linalg.norm(beta))
    return dict(c=remark4_c(scale, q), omega0=float(b0) / scale, omega=beta / scale, scale=scale)


def socp_to_lambda(omega0, omega, X, y, c, q, w=None):
    """The other direction of Remark 4: from a solution of (2.10) at ``c``
    to the solution of (3.1) and its ``lambda``.

    Inverting ``c = (q+1)^(q+1)/q^q t^(q+1)`` gives the norm ``t`` of
    ``beta``; then ``beta = t omega``, ``b0 = t omega0``, and ``lambda``
    follows from the stationarity of (3.1) along ``beta``:
    ``(1/n) sum_i w_i V_q'(u_i) y_i x_i' beta + 2 lambda beta' beta = 0``.
    ``X`` is the design the SOCP was solved on (``Phi`` for a kernel).

    Returns ``dict(lam, b0, beta, t)``.
    """
    c = _positive(c, "c")
    q = _positive(q, "q")
    X = np.asarray(X, dtype=float)
    y = np.asarray(y, dtype=float)
    t = (q ** q * c / (q + 1.0) ** (q + 1.0)) ** (1.0 / (q + 1.0))
    beta = t * np.asarray(omega, dtype=float)
    b0 = t * float(omega0)
    f = b0 + X @ beta
    z = y * dwd_loss_deriv(y * f, q)
    if w is not None:
        z = np.asarray(w, dtype=float) * z
    lam = -float(z @ (X @ beta)) / (2.0 * y.size * float(beta @ beta))
    return dict(lam=lam, b0=b0, beta=beta, t=t)


def socp_value_from_fit(f, y, beta_norm, q, w=None):
    """The optimal value of (2.10) implied by a solution of (3.1).

    With ``t = ||beta||`` and ``c = c(lambda)``, the proof of Lemma 1 gives
    ``sum_i w_i (d_i^-q + c eta_i) = (c / t) sum_i w_i V_q(y_i f_i)``
    when the slacks are optimal, where ``f`` are the (3.1) decision values.
    """
    c = remark4_c(beta_norm, q)
    loss = dwd_loss(np.asarray(y) * np.asarray(f), q)
    if w is not None:
        loss = np.asarray(w) * loss
    return float(c / beta_norm * loss.sum())
