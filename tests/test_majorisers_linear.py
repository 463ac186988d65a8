"""The linear majorisers (:mod:`kerndwd.engine.majorisers.linear`) against
their definitions.

* ``spd_solver`` solves ``P x = rhs`` by Cholesky (or R's explicit inverse),
  and where Cholesky fails by the eigendecomposition of the symmetric part of
  ``P`` with its eigenvalues raised to ``size * eps * max|eigenvalue|``.
* ``LinearEigen``'s step is ``-(1/M) P^-1 (Z'z + 2 n lambda [0; beta])`` with
  ``P = Z'Z + gam I + c diag(0, I)``, ``c = 2 n lambda / M``: through the
  eigenbasis of ``Z'Z`` below ``LARGE_PENALTY`` times its spectrum, from a
  factor of the bordered ``P`` above it (exact to rounding where the
  eigenbasis route loses the intercept's coupling), and with the directions
  rounding leaves undetermined frozen: the step then lies in the span of the
  others and is ``P``'s inverse restricted to them.
* ``LinearCholesky`` factorises ``Z'WZ + gam I + c diag(0, I)`` once per lambda.
"""

import numpy as np
import pytest

from kerndwd.engine import DWDLoss
from kerndwd.engine.forms import DenseLinearForm, LinearForm
from kerndwd.engine.majorisers import linear
from kerndwd.engine.majorisers.linear import (LARGE_PENALTY, LinearCholesky, LinearEigen, check_finite_majoriser,
                                              spd_solver)
from kerndwd.engine.newton_systems import add_to_diagonal

EPS = np.finfo(float).eps


# --------------------------------------------------------------------------
# spd_solver
# --------------------------------------------------------------------------
@pytest.mark.parametrize("explicit", [False, True])
def test_spd_solver_inverts_a_positive_definite_matrix(explicit):
    """On a positive definite ``P`` both routes solve ``P x = rhs`` to rounding,
    for a vector and for a matrix of right-hand sides, and leave ``P`` as it was."""
    rng = np.random.default_rng(0)
    A = rng.normal(size=(6, 6))
    P = A @ A.T + 0.5 * np.eye(6)
    before = P.copy()
    solve = spd_solver(P, explicit=explicit)
    rhs = rng.normal(size=6)
    np.testing.assert_allclose(solve(rhs), np.linalg.solve(P, rhs), rtol=1e-10, atol=1e-12)
    R = rng.normal(size=(6, 3))
    np.testing.assert_allclose(solve(R), np.linalg.solve(P, R), rtol=1e-10, atol=1e-12)
    assert np.array_equal(P, before)


def test_spd_solver_explicit_inverse_is_the_full_symmetric_inverse():
    """R's explicit inverse: ``potri`` fills one triangle, the other is mirrored
    (the diagonal counted once): its columns are the inverse's columns."""
    rng = np.random.default_rng(1)
    A = rng.normal(size=(5, 5))
    P = A @ A.T + np.diag([1.0, 2.0, 3.0, 4.0, 5.0])
    inv = np.column_stack([spd_solver(P, explicit=True)(e) for e in np.eye(5)])
    np.testing.assert_allclose(inv, np.linalg.inv(P), rtol=1e-10, atol=1e-13)
    np.testing.assert_allclose(np.diag(inv), np.diag(np.linalg.inv(P)), rtol=1e-12)


@pytest.mark.parametrize("explicit", [False, True])
@pytest.mark.parametrize("last", [0.0, -1e-300, -1e-15])
def test_spd_solver_floors_the_eigenvalues_cholesky_cannot_take(explicit, last):
    """``diag(4, 1, last)`` with ``last`` zero or slightly negative: Cholesky
    fails, and the solve takes the eigenvalues raised to the floor
    ``3 eps 4`` (size times eps times the largest magnitude)."""
    P = np.diag([4.0, 1.0, last])
    x = spd_solver(P, explicit=explicit)(np.array([1.0, 1.0, 1.0]))
    floor = 3 * EPS * 4.0
    np.testing.assert_allclose(x, [0.25, 1.0, 1.0 / floor], rtol=1e-12)


def test_spd_solver_floors_relative_to_the_largest_magnitude():
    """The floor is relative to ``max |eigenvalue|``, a negative one included:
    ``diag(-8, 1, 0)`` floors at ``3 eps 8`` (and raises -8 to it)."""
    x = spd_solver(np.diag([-8.0, 1.0, 0.0]))(np.array([1.0, 1.0, 1.0]))
    floor = 3 * EPS * 8.0
    np.testing.assert_allclose(x, [1.0 / floor, 1.0, 1.0 / floor], rtol=1e-12)


def test_spd_solver_of_a_zero_matrix_stays_finite():
    """All eigenvalues zero: the floor is the smallest normal number, so the
    solve is ``rhs / tiny``, finite."""
    x = spd_solver(np.zeros((2, 2)))(np.array([1e-300, -2e-300]))
    np.testing.assert_allclose(x, np.array([1e-300, -2e-300]) / np.finfo(float).tiny, rtol=1e-12)
    assert np.isfinite(x).all()


def test_spd_solver_fallback_uses_the_symmetric_part():
    """Cholesky reads the upper triangle, ``[[1, 1], [., 1]]``, which is
    singular; the fallback decomposes the symmetric part of ``P`` (the lower
    entry 0.5 counts for half), ``[[1, 0.75], [0.75, 1]]``."""
    P = np.array([[1.0, 1.0], [0.5, 1.0]])
    rhs = np.array([1.0, 2.0])
    x = spd_solver(P)(rhs)
    np.testing.assert_allclose(x, np.linalg.solve(np.array([[1.0, 0.75], [0.75, 1.0]]), rhs), rtol=1e-12)


# --------------------------------------------------------------------------
# the diagonal and the overflow check
# --------------------------------------------------------------------------
@pytest.mark.parametrize("layout", ["C", "F", "strided"])
@pytest.mark.parametrize("start", [0, 1, 3])
def test_add_to_diagonal_adds_from_start_on_in_place(layout, start):
    """``value`` is added to entries ``(j, j)``, ``j >= start``, of the array
    itself, whatever its layout (C, Fortran, a strided view), a number or one
    value per entry; nothing else changes."""
    base = np.arange(64.0).reshape(8, 8)
    if layout == "C":
        A = base[:4, :4].copy()
    elif layout == "F":
        A = np.asfortranarray(base[:4, :4])
    else:
        A = base[::2, ::2]
        assert not (A.flags.c_contiguous or A.flags.f_contiguous)
    expected = np.array(A)
    expected[np.arange(start, 4), np.arange(start, 4)] += 2.5
    add_to_diagonal(A, 2.5, start=start)
    np.testing.assert_array_equal(A, expected)
    if layout == "strided":  # a view: the parent holds the change
        np.testing.assert_array_equal(base[::2, ::2], expected)


OVERFLOW = ("X (its squared entries, or its kernel matrix's) times the weights overflows double precision in the "
            "majoriser Z'WZ: the weights span too many decades for this scale of X; rescale X or the weights (wt, "
            "sample_weight, class_weight: only their ratios matter)")


@pytest.mark.parametrize("bad", [np.inf, -np.inf, np.nan])
def test_an_overflowed_majoriser_is_refused_with_advice(bad):
    A = np.eye(3)
    A[1, 2] = bad
    with pytest.raises(ValueError) as info:
        check_finite_majoriser(A)
    assert str(info.value) == OVERFLOW
    assert check_finite_majoriser(np.eye(3)) is None


def test_the_weighted_majoriser_refuses_overflow_even_where_numpy_raises():
    """Weights of 1e300 on entries of 1e10 overflow ``Z'WZ``: the refusal names
    the remedy, also under a caller's ``np.errstate(all="raise")`` (the
    product is formed with overflow quiet, then checked)."""
    X = np.array([[1e10, 1.0], [2.0, 1e10], [1.0, 1.0]])
    loss = DWDLoss(1.0, np.array([1e300, 1e300, 1e-300]), scale=1.0)
    for state in ("ignore", "raise"):
        with np.errstate(all=state), pytest.raises(ValueError) as info:
            LinearCholesky(LinearForm(X), loss, 1e-6)
        assert str(info.value) == OVERFLOW


def test_the_newton_system_carries_the_losss_weights():
    """``LinearCholesky`` (weighted) hands its weights to its Newton system,
    whose scale is ``(M/n) diag(Z'WZ)``."""
    X, _, _ = _problem(seed=10)
    w = np.random.default_rng(11).uniform(0.2, 3.0, size=20)
    loss = DWDLoss(1.0, w, scale=1.0)
    system = LinearCholesky(LinearForm(X), loss, 1e-6).newton_system()
    Z = np.column_stack([np.ones(20), X])
    np.testing.assert_allclose(system.scale, (loss.lipschitz / 20) * np.einsum("i,ij,ij->j", w, Z, Z), rtol=1e-13)
    plain = LinearEigen(DenseLinearForm(X), DWDLoss(1.0), 1e-6).newton_system()
    np.testing.assert_allclose(plain.scale, (4.0 / 20) * (Z * Z).sum(axis=0), rtol=1e-13)


# --------------------------------------------------------------------------
# LinearEigen
# --------------------------------------------------------------------------
def _problem(n=20, p=4, seed=3, scale=1.0):
    rng = np.random.default_rng(seed)
    X = scale * rng.normal(size=(n, p))
    z = rng.normal(size=n)
    coord = rng.normal(size=p + 1)
    return X, z, coord


def _exact_step(X, z, coord, lam, M, gam, weights=None):
    """``-(1/M) P^-1 rhs`` by a dense solve of the definition."""
    n, p = X.shape
    Z = np.column_stack([np.ones(n), X])
    W = np.ones(n) if weights is None else weights
    c = 2.0 * n * lam / M
    P = Z.T @ (W[:, None] * Z) + gam * np.eye(p + 1) + c * np.diag(np.r_[0.0, np.ones(p)])
    rhs = Z.T @ z + 2.0 * n * lam * np.r_[0.0, coord[1:]]
    return -np.linalg.solve(P, rhs) / M, Z, rhs


@pytest.mark.parametrize("q", [0.5, 1.0, 4.0])
@pytest.mark.parametrize("lam", [1e-4, 0.1, 10.0])
@pytest.mark.parametrize("cls", [LinearEigen, LinearCholesky])
def test_unweighted_step_is_the_majorisers_newton_step(cls, lam, q):
    """Both majorisers return ``(step, Z step, ||rhs||^2 / n^2)`` with the
    step of the definition (module docstring), to 1e-9 relative."""
    X, z, coord = _problem()
    loss = DWDLoss(q)
    gam = 1e-6
    maj = cls(DenseLinearForm(X), loss, gam)
    step, df, grad_sq = maj.at_lambda(lam)(z, coord)
    expected, Z, rhs = _exact_step(X, z, coord, lam, loss.lipschitz, gam)
    np.testing.assert_allclose(step, expected, rtol=1e-9, atol=1e-12 * np.abs(expected).max())
    np.testing.assert_allclose(df, Z @ step, rtol=1e-12, atol=1e-14)
    assert grad_sq == pytest.approx(rhs @ rhs / 400.0, rel=1e-12)


@pytest.mark.parametrize("lam", [1e-3, 1.0])
def test_weighted_cholesky_step_is_the_weighted_majorisers_step(lam):
    """``LinearCholesky`` with weights: ``P = Z'WZ + gam I + c diag(0, I)``."""
    X, z, coord = _problem(seed=4)
    w = np.random.default_rng(5).uniform(0.2, 3.0, size=20)
    loss = DWDLoss(1.0, w, scale=1.0)
    maj = LinearCholesky(LinearForm(X), loss, 1e-6)
    assert maj.solver == "wldwd"
    step, df, _ = maj.at_lambda(lam)(z, coord)
    expected, Z, _ = _exact_step(X, z, coord, lam, loss.lipschitz, 1e-6, weights=w)
    np.testing.assert_allclose(step, expected, rtol=1e-9, atol=1e-12 * np.abs(expected).max())
    np.testing.assert_allclose(df, Z @ step, rtol=1e-12, atol=1e-14)


def test_cholesky_factor_is_made_once_per_lambda(monkeypatch):
    """A lambda's factor is kept: asking for it again (the one-vs-rest classes
    at one lambda) factorises nothing; a new lambda factorises once."""
    X, z, coord = _problem()
    maj = LinearCholesky(DenseLinearForm(X), DWDLoss(1.0), 1e-6)
    calls = []
    real = linear.spd_solver
    monkeypatch.setattr(linear, "spd_solver", lambda P, explicit=False: calls.append(explicit) or real(P, explicit))
    first = maj.at_lambda(0.5)(z, coord)[0]
    again = maj.at_lambda(0.5)(z, coord)[0]
    assert calls == [True] and np.array_equal(first, again)
    maj.at_lambda(0.25)
    assert calls == [True, True]


def _route(monkeypatch, maj, lam):
    used = []
    for name in ("_eigen_step_matrix", "_bordered_step_matrix"):
        real = getattr(LinearEigen, name)
        monkeypatch.setattr(LinearEigen, name, lambda self, c, real=real, name=name: used.append(name) or real(self, c))
    maj.at_lambda(lam)
    monkeypatch.undo()
    return used


def test_the_bordered_route_starts_above_large_penalty_times_the_spectrum(monkeypatch):
    """``c = 2 n lambda / M`` above ``LARGE_PENALTY`` times the largest
    eigenvalue of ``Z'Z + gam I``: the bordered factor; at or below it: the
    eigenbasis."""
    X, z, coord = _problem()
    loss = DWDLoss(1.0)
    maj = LinearEigen(DenseLinearForm(X), loss, 1e-6)
    top = maj.evals[-1]
    lam_at = LARGE_PENALTY * top * loss.lipschitz / (2.0 * 20)  # c exactly at the threshold
    assert _route(monkeypatch, maj, lam_at * 1.01) == ["_bordered_step_matrix"]
    assert _route(monkeypatch, maj, lam_at * 0.99) == ["_eigen_step_matrix"]


def _bordered_inverse(G, c):
    """``P^-1`` for ``P = G + c diag(0, I)`` by the block formula, with
    ``(G11 + c I)^-1`` from the eigenbasis of ``G11`` (no cancellation)."""
    g00, g, G11 = G[0, 0], G[1:, 0], G[1:, 1:]
    e, U = np.linalg.eigh(G11)
    inv11 = (U / (e + c)) @ U.T
    h = inv11 @ g
    s = g00 - g @ h  # the Schur complement: positive terms dominate, g'h ~ |g|^2 / c
    out = np.empty_like(G)
    out[0, 0] = 1.0 / s
    out[0, 1:] = out[1:, 0] = -h / s
    out[1:, 1:] = inv11 + np.outer(h, h) / s
    return out


@pytest.mark.parametrize("ratio", [1e8, 1e14, 1e18])
def test_the_bordered_route_keeps_the_intercepts_coupling_at_huge_penalties(ratio):
    """At ``c`` = 1e8 to 1e18 times ``||Z'Z||`` the step matrix is ``-(1/M) P^-1``:
    the intercept's row entry by entry to 1e-8 relative (its coupling
    entries are of size ``1/c^2``, while their eigenbasis value is a
    difference of terms of size ``1/c``), the rest to the rounding of its
    diagonal."""
    X, _, _ = _problem(n=12, p=3, seed=6)
    loss = DWDLoss(1.0)
    gam = 1e-6
    maj = LinearEigen(DenseLinearForm(X), loss, gam)
    c = ratio * maj.evals[-1]
    S = maj._bordered_step_matrix(c)
    Z = np.column_stack([np.ones(12), X])
    expected = -_bordered_inverse(Z.T @ Z + gam * np.eye(4), c) / loss.lipschitz
    np.testing.assert_allclose(S[0], expected[0], rtol=1e-8, atol=0)  # the intercept's row
    block = np.abs(expected[1:, 1:]).max()  # the rest: to the rounding of its diagonal, 1/c
    np.testing.assert_allclose(S[1:, 1:], expected[1:, 1:], rtol=0, atol=1e-14 * block)
    assert np.array_equal(S, S.T)


def test_the_eigenbasis_route_is_the_inverse_below_the_threshold():
    """``_eigen_step_matrix`` is ``-(1/M) P^-1`` to 1e-10 relative in norm over
    the range of penalties it serves."""
    X, _, _ = _problem(n=15, p=5, seed=7)
    loss = DWDLoss(2.0)
    gam = 1e-6
    maj = LinearEigen(DenseLinearForm(X), loss, gam)
    Z = np.column_stack([np.ones(15), X])
    G = Z.T @ Z + gam * np.eye(6)
    for c in (1e-8, 1e-2, 1.0, 1e3, 1e5 * maj.evals[-1]):
        S = maj._eigen_step_matrix(c)
        expected = -_bordered_inverse(G, c) / loss.lipschitz
        assert np.linalg.norm(S - expected) <= 1e-10 * np.linalg.norm(expected)


def _frozen_case():
    """Rows of size 1e8 and more columns than rows: ``Z'Z`` has a null space
    of dimension 5 whose computed eigenvalues are rounding noise of size
    ``1e17 eps``, far above ``gam + c``."""
    rng = np.random.default_rng(8)
    X = 1e8 * rng.normal(size=(6, 10))
    return X


def test_frozen_directions_are_left_where_they_are():
    """Where rounding noise in the eigenvalues of ``Z'Z`` reaches half of
    ``gam + c``, those eigen-directions are frozen: the step has no component
    along them, and on the others it is ``P``'s inverse restricted to their
    span, ``-(1/M) V_k (V_k' P V_k)^-1 V_k'`` (the Sherman-Morrison identity
    with the frozen directions' share of ``e0`` in its denominator)."""
    X = _frozen_case()
    loss = DWDLoss(1.0)
    gam = 1e-7
    maj = LinearEigen(DenseLinearForm(X), loss, gam)
    evals, V = maj.evals, maj.evecs
    raw = evals - gam
    c = 1.0
    ridge = gam + c
    noise = 11 * EPS * np.abs(raw).max()
    frozen = (raw < -0.5 * ridge) | ((np.abs(raw) <= noise) if noise >= 0.5 * ridge else False)
    assert frozen.sum() == 5 and noise >= 0.5 * ridge
    S = maj._eigen_step_matrix(c)
    assert np.abs(V[:, frozen].T @ S).max() <= 1e-12 * np.abs(S).max()
    Vk = V[:, ~frozen]
    P = V @ np.diag(evals) @ V.T + c * np.diag(np.r_[0.0, np.ones(10)])
    restricted = -Vk @ np.linalg.inv(Vk.T @ P @ Vk) @ Vk.T / loss.lipschitz
    np.testing.assert_allclose(S, restricted, rtol=1e-7, atol=1e-9 * np.abs(restricted).max())
    # the kept directions' step descends the majoriser: -S is positive semidefinite
    assert np.linalg.eigvalsh(-0.5 * (S + S.T)).min() >= -1e-12 * np.abs(S).max()


def test_a_negative_eigenvalue_beyond_half_the_ridge_is_frozen():
    """An eigenvalue below ``-(gam + c)/2`` (a majoriser whose curvature would be
    negative there) is frozen even where the noise stays below half the
    ridge: the step has no component along it."""
    X, _, _ = _problem(n=10, p=2, seed=9)
    loss = DWDLoss(1.0)
    maj = LinearEigen(DenseLinearForm(X), loss, 1e-6)
    evals, V = maj.evals, maj.evecs
    maj._eig = (np.r_[-4.0, evals[1:]], V)  # the smallest eigenvalue made -4 (ridge 1 + 1e-6)
    S = maj._eigen_step_matrix(1.0)
    assert np.abs(V[:, 0] @ S).max() <= 1e-13 * np.abs(S).max()
    # -0.2 at c = 0.25: below -ridge/2 = -0.125, above -1.5 ridge and -0.5 / ridge: frozen; -0.1 kept
    for first, frozen in ((-0.2, True), (-0.1, False)):
        maj._eig = (np.r_[first + 1e-6, evals[1:]], V)
        S2 = maj._eigen_step_matrix(0.25)
        assert bool(np.abs(V[:, 0] @ S2).max() <= 1e-13 * np.abs(S2).max()) is frozen
    Vk = V[:, 1:]
    P = V @ np.diag(np.r_[-4.0, evals[1:]]) @ V.T + np.diag(np.r_[0.0, np.ones(2)])
    restricted = -Vk @ np.linalg.inv(Vk.T @ P @ Vk) @ Vk.T / loss.lipschitz
    np.testing.assert_allclose(S, restricted, rtol=1e-9, atol=1e-12 * np.abs(restricted).max())


def _frozen_of(maj, raw, c):
    """Which eigen-directions the step at ``c`` leaves alone, the eigenvalues of
    ``Z'Z`` (before the ridge) set to ``raw`` in a fixed random basis ``V``:
    in that basis the step must be minus the inverse of ``P``'s block on the
    others (``P = diag(e) + c V' diag(0, I) V``), zero on the frozen ones,
    for exactly one set.  Compared scaled by ``sqrt(|e| + c)`` on each side,
    so that directions of eigenvalues 1e13 apart are held alike: the scaled
    entries are of size 1, the right set's differ from the step's by
    rounding (below 0.01 here), any other set's by about 1."""
    V = np.linalg.qr(np.random.default_rng(10).normal(size=(3, 3)))[0]
    evals = np.asarray(raw) + maj._gam
    maj._eig = (evals, V)
    W = V.T @ maj._eigen_step_matrix(c) @ V * maj.loss.lipschitz
    Pe = np.diag(evals) + c * V.T @ np.diag([0.0, 1.0, 1.0]) @ V
    scale = np.sqrt(np.abs(evals) + c)
    found = []
    for mask in range(8):
        frozen = np.array([bool(mask >> i & 1) for i in range(3)])
        expected = np.zeros((3, 3))
        k = np.flatnonzero(~frozen)
        expected[np.ix_(k, k)] = -np.linalg.inv(Pe[np.ix_(k, k)])
        if np.abs(scale[:, None] * (W - expected) * scale).max() <= 0.05:
            found.append(frozen.tolist())
    assert len(found) == 1, found
    return found[0]


def test_the_noise_rule_freezes_at_half_the_ridge_and_keeps_the_negative_rule():
    """The rounding level is ``max(n, p + 1) eps max|e - gam|`` (10 eps here).
    With that level at 0.08 and ``gam + c = 0.1``: an eigenvalue of 0.04
    (inside the level, which reaches half the ridge) and one of -1 (below
    minus half the ridge, outside the level) are frozen, the largest kept;
    the eigenvalues are taken net of ``gam`` = 0.05."""
    X, _, _ = _problem(n=10, p=2, seed=9)
    maj = LinearEigen(DenseLinearForm(X), DWDLoss(1.0), 0.05)
    top = 0.08 / (10 * EPS)
    assert _frozen_of(maj, [-1.0, 0.04, top], 0.05) == [True, True, False]
    # a level below half the ridge freezes only the negative one
    assert _frozen_of(maj, [-1.0, 0.04, top], 0.2) == [True, False, False]


def test_the_noise_level_of_eigenvalues_below_one():
    """Eigenvalues all below 1: the level is 10 eps times the largest (0.5),
    1.1e-15; with ``c`` = 1e-15 it reaches half the ridge, and an eigenvalue
    of 1.5e-15 lies above it (kept), one of 1e-15 inside it (frozen)."""
    X, _, _ = _problem(n=10, p=2, seed=9)
    maj = LinearEigen(DenseLinearForm(X), DWDLoss(1.0), 0.0)
    assert _frozen_of(maj, [1.5e-15, 0.3, 0.5], 1e-15) == [False, False, False]
    assert _frozen_of(maj, [1e-15, 0.3, 0.5], 1e-15) == [True, False, False]


def test_the_eigendecomposition_is_made_on_first_use_and_shared():
    """``gram_eig`` may be the decomposition, a callable returning it (called
    once, on first use), or None (then ``eigh(Z'Z)`` on first use); ``evals``
    carry the ridge ``gam``."""
    X, z, coord = _problem()
    form = DenseLinearForm(X)
    e, V = np.linalg.eigh(form.gram())
    calls = []
    maj = LinearEigen(form, DWDLoss(1.0), 0.5, gram_eig=lambda: calls.append(1) or (e, V))
    assert calls == []
    np.testing.assert_array_equal(maj.evals, e + 0.5)
    np.testing.assert_array_equal(maj.evecs, V)
    maj.at_lambda(0.1)
    assert calls == [1]
    given = LinearEigen(form, DWDLoss(1.0), 0.5, gram_eig=(e, V))
    np.testing.assert_array_equal(given.evals, e + 0.5)
    own = LinearEigen(form, DWDLoss(1.0), 0.5)
    np.testing.assert_allclose(own.evals, e + 0.5, rtol=1e-12)
