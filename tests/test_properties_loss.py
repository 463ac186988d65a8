"""Property tests of the generalized DWD loss and of Lemmas 2-4 of Wang & Zou (2018).

Every test draws ``q`` log-uniformly from ``[0.01, 100]`` and margins from
wide ranges (including the region around the knot ``t_q = q / (q + 1)``,
where the two pieces of ``V_q`` meet), and checks one statement of the
paper.  Equation numbers refer to the paper: (3.2) the loss, (3.4) its
derivative, (3.5) the Lipschitz bound of Lemma 2, (3.6) the quadratic
majorization, (4.4) the population minimiser of Lemma 3.

Floating point: each inequality gets a slack of a few units in the last
place of the quantities involved (stated per test).  The power piece
``(t_q / u)^q`` has condition number ``q`` in ``u``, so near the knot a
correctly rounded evaluation is only good to about ``q`` ulp: the slack
:func:`rel_slack` is ``(4 + 4q)`` ulp.  A real violation of any of these
statements is many orders of magnitude larger.
"""

import math

import numpy as np
import pytest
from hypothesis import example, given
from hypothesis import strategies as st
from scipy import optimize

import kerndwd
from kerndwd.loss import hinge_loss, knot

EPS = np.finfo(float).eps

# q log-uniform on [0.01, 100]
qs = st.floats(min_value=-2.0, max_value=2.0).map(lambda e: float(10.0**e))
# margins: anywhere on a wide range, or close to the knot of V_q
wide = st.floats(min_value=-1e6, max_value=1e6, allow_nan=False)
moderate = st.floats(min_value=-50.0, max_value=50.0, allow_nan=False)
etas = st.floats(min_value=1e-4, max_value=1 - 1e-4)


#: any finite double, for the statements that involve no products of margins
extreme = st.floats(allow_nan=False, allow_infinity=False)


@st.composite
def q_and_margins(draw, k=2, extremes=False):
    """A ``q`` and ``k`` margins, each either wide, moderate or within 5% of the
    knot (or, with ``extremes=True``, any finite double)."""
    q = draw(qs)
    t = q / (q + 1.0)
    near = st.floats(min_value=-0.05, max_value=0.05).map(lambda h: t * (1.0 + h))
    kinds = [wide, moderate, near] + ([extreme] if extremes else [])
    us = [draw(st.one_of(*kinds)) for _ in range(k)]
    return (q, *us)


def rel_slack(q):
    """Relative rounding slack of a value of ``V_q`` or ``V_q'``: ``(4 + 4q)`` ulp."""
    return (4.0 + 4.0 * q) * EPS


def v_direct(u, q):
    """``V_q`` written straight from (3.2), through logs for the power piece:
    an implementation independent of :mod:`kerndwd.loss`."""
    t = q / (q + 1.0)
    if u <= t:
        return 1.0 - u
    return math.exp(-q * math.log(u) + q * math.log(q) - (q + 1.0) * math.log(q + 1.0))


def gap_bound(q):
    """``q^q / (q+1)^(q+1)``, the largest distance between ``V_q`` and the hinge."""
    return math.exp(q * math.log(q) - (q + 1.0) * math.log(q + 1.0))


# ---------------------------------------------------------------------------
# the loss itself
# ---------------------------------------------------------------------------
@given(q_and_margins(k=1, extremes=True))
def test_loss_matches_eq_3_2(args):
    """(3.2): ``V_q(u) = 1 - u`` up to the knot, ``u^-q q^q / (q+1)^(q+1)`` above it
    (checked against a log-space evaluation of the formula, 1e-12 relative)."""
    q, u = args
    got = kerndwd.dwd_loss(u, q)
    want = v_direct(u, q)
    assert abs(got - want) <= 1e-12 * abs(want) + 1e-300


@given(q_and_margins(k=1, extremes=True))
def test_loss_nonnegative_and_finite(args):
    """(3.2): ``V_q(u) >= 0`` and finite for every finite margin."""
    q, u = args
    v = kerndwd.dwd_loss(u, q)
    assert np.isfinite(v) and v >= 0.0


@given(q_and_margins(k=2, extremes=True))
@example(args=(0.027384196342643614, 0.02665429003105932, 0.02665429003105935))  # astride the knot: 1 - t < 1/(q+1)
def test_loss_nonincreasing(args):
    """(3.2)/(3.4): ``V_q`` is non-increasing (its derivative is in ``[-1, 0)``),
    so ``u1 <= u2`` implies ``V_q(u1) >= V_q(u2)``, exactly in floating point."""
    q, a, b = args
    lo, hi = min(a, b), max(a, b)
    assert kerndwd.dwd_loss(lo, q) >= kerndwd.dwd_loss(hi, q)


@given(q_and_margins(k=2))
@example(args=(10.0**1.5, knot(10.0**1.5), 0.967453314948815))
def test_loss_convex_midpoint(args):
    """Convexity of ``V_q`` (proof of Lemma 2: ``V_q'`` is non-decreasing):
    ``V_q((a + b)/2) <= (V_q(a) + V_q(b))/2`` up to :func:`rel_slack` of the
    right side."""
    q, a, b = args
    mid = kerndwd.dwd_loss(0.5 * a + 0.5 * b, q)
    chord = 0.5 * (kerndwd.dwd_loss(a, q) + kerndwd.dwd_loss(b, q))
    assert mid <= chord + rel_slack(q) * chord + 1e-300


@given(qs, st.floats(min_value=1e-7, max_value=1e-2))
def test_loss_c1_at_knot(q, h):
    """(3.2) and (3.4): ``V_q`` is continuous at the knot ``t = q/(q+1)`` with value
    ``1/(q+1)``, ``V_q'(t) = -1``, and the one-sided difference quotients on both
    sides tend to ``-1`` (error at most ``M h / 2`` by Lemma 2, plus rounding/h).
    The rounded knot may lie an ulp above the true one, where ``V_q'`` is
    ``-(t/u)^(q+1)``, within ``(q+1)`` ulps of -1."""
    t = knot(q)
    M = kerndwd.lipschitz(q)
    assert abs(kerndwd.dwd_loss(t, q) - 1.0 / (q + 1.0)) <= 8 * EPS / (q + 1.0) + 4 * EPS
    assert abs(kerndwd.dwd_loss_deriv(t, q) + 1.0) <= (q + 2.0) * EPS
    step = h * t
    v0 = kerndwd.dwd_loss(t, q)
    right = (kerndwd.dwd_loss(t + step, q) - v0) / step
    left = (v0 - kerndwd.dwd_loss(t - step, q)) / step
    rounding = 8 * EPS * max(1.0, v0) / step
    assert abs(right + 1.0) <= M * step / 2 + rounding
    assert abs(left + 1.0) <= rounding


@given(q_and_margins(k=1), st.floats(min_value=1e-6, max_value=1e-3))
def test_derivative_matches_eq_3_4(args, h):
    """(3.4): ``dwd_loss_deriv`` is the derivative of ``dwd_loss``: the central
    difference agrees to ``M h`` (Lemma 2) plus rounding, and it lies in ``[-1, 0]``."""
    q, u = args
    d = kerndwd.dwd_loss_deriv(u, q)
    assert -1.0 <= d <= 0.0
    step = h * max(1.0, abs(u))
    fd = (kerndwd.dwd_loss(u + step, q) - kerndwd.dwd_loss(u - step, q)) / (2 * step)
    rounding = 8 * EPS * max(1.0, abs(kerndwd.dwd_loss(u - step, q))) / step
    assert abs(fd - d) <= kerndwd.lipschitz(q) * step + rounding


@given(q_and_margins(k=2))
def test_loss_1_lipschitz(args):
    """``|V_q(a) - V_q(b)| <= |a - b|`` (used in the proof of Theorem 1; follows
    from ``V_q'`` in ``[-1, 0]``), up to :func:`rel_slack` of the two loss values."""
    q, a, b = args
    va, vb = kerndwd.dwd_loss(a, q), kerndwd.dwd_loss(b, q)
    assert abs(va - vb) <= abs(a - b) + rel_slack(q) * max(va, vb)


@given(q_and_margins(k=1, extremes=True))
def test_loss_sandwiched_by_hinge(args):
    """Remark 5 / Figure 3: ``max(0, 1-u) <= V_q(u) <= max(0, 1-u) + q^q/(q+1)^(q+1)``
    (the gap is largest at ``u = 1``), so ``V_q`` tends to the hinge as ``q`` grows.
    Slack: 4 ulp of ``max(1, |u|)``."""
    q, u = args
    v = kerndwd.dwd_loss(u, q)
    hinge = hinge_loss(u)
    slack = 4 * EPS * max(1.0, abs(u))
    assert v >= hinge - slack
    assert v - hinge <= gap_bound(q) * (1 + 1e-12) + slack
    assert gap_bound(q) <= 1.0 / (q + 1.0)


@given(q_and_margins(k=1), qs)
def test_loss_decreases_in_q(args, q2):
    """Figure 3: ``V_q(u)`` is non-increasing in ``q`` for each ``u`` (the loss
    approaches the hinge from above); 1e-12 relative slack."""
    q1, u = args
    lo, hi = min(q1, q2), max(q1, q2)
    v_lo, v_hi = kerndwd.dwd_loss(u, lo), kerndwd.dwd_loss(u, hi)
    assert v_hi <= v_lo * (1 + 1e-12) + 1e-300


# ---------------------------------------------------------------------------
# Lemma 2
# ---------------------------------------------------------------------------
@given(q_and_margins(k=2))
def test_lemma2_gradient_lipschitz(args):
    """Lemma 2, (3.5): ``|V_q'(t) - V_q'(s)| <= M |t - s|`` with ``M = (q+1)^2/q``
    (``kerndwd.lipschitz``); slack :func:`rel_slack` of 1 for the rounding of
    the two derivative values, which lie in ``[-1, 0]``."""
    q, t, s = args
    M = kerndwd.lipschitz(q)
    assert M == (q + 1.0) ** 2 / q
    dt, ds = kerndwd.dwd_loss_deriv(t, q), kerndwd.dwd_loss_deriv(s, q)
    assert abs(dt - ds) <= M * abs(t - s) * (1 + 1e-12) + rel_slack(q)


@given(q_and_margins(k=2))
def test_lemma2_quadratic_majorization(args):
    """Lemma 2, (3.6): ``V_q(t) <= V_q(s) + V_q'(s)(t - s) + M/2 (t - s)^2`` for all
    ``t != s``; slack twice :func:`rel_slack` times the sum of the magnitudes
    of the terms."""
    q, t, s = args
    M = kerndwd.lipschitz(q)
    vt, vs, ds = kerndwd.dwd_loss(t, q), kerndwd.dwd_loss(s, q), kerndwd.dwd_loss_deriv(s, q)
    lin = ds * (t - s)
    quad = 0.5 * M * (t - s) ** 2
    bound = vs + lin + quad
    scale = abs(vt) + abs(vs) + abs(lin) + quad
    assert vt <= bound + 2 * rel_slack(q) * scale + 1e-300


@given(qs, st.floats(min_value=0.0, max_value=1.0), st.floats(min_value=0.0, max_value=1.0))
def test_lemma2_constant_is_attained(q, a, b):
    """Lemma 2: ``M = (q+1)^2/q`` is the supremum of ``V_q''`` (reached at the knot
    from the right), so the bound (3.5) is sharp: just above the knot the
    difference quotient of ``V_q'`` is within 5% of ``M``."""
    t = knot(q)
    M = kerndwd.lipschitz(q)
    h1, h2 = 1e-6 * (1 + a), 2e-6 * (1 + b)
    u1, u2 = t * (1 + h1), t * (1 + h2 + h1)
    slope = (kerndwd.dwd_loss_deriv(u2, q) - kerndwd.dwd_loss_deriv(u1, q)) / (u2 - u1)
    assert 0.95 * M <= slope <= M * (1 + 1e-6)


# ---------------------------------------------------------------------------
# Lemma 3 (Fisher consistency) and Lemma 4
# ---------------------------------------------------------------------------
def zeta(f, eta, q):
    """``eta V_q(f) + (1 - eta) V_q(-f)`` (proof of Lemma 3), from the direct formula."""
    return eta * v_direct(f, q) + (1.0 - eta) * v_direct(-f, q)


away_from_half = etas.filter(lambda e: abs(e - 0.5) >= 1e-3)


@given(qs, away_from_half)
@example(q=0.01, eta=1 - 1e-4)
@example(q=100.0, eta=1e-4)
def test_lemma3_population_minimizer(q, eta):
    """Lemma 3, (4.4): ``population_minimizer(eta, q)`` minimises
    ``zeta(f) = eta V_q(f) + (1-eta) V_q(-f)``.  Checked against scipy's bounded
    scalar minimiser on an independent evaluation of ``zeta``: our value of
    ``zeta`` is never above scipy's (1e-13 relative), the first-order condition
    ``zeta'(f~) = 0`` holds to 1e-12, and the two locations agree to what the
    curvature of ``zeta`` at the minimum lets a value-based search resolve."""
    f_tilde = kerndwd.population_minimizer(eta, q)
    # zeta'(f) > 0 for f > odds and < 0 for f < -odds (V_q' > -1/odds^... there),
    # so the minimiser lies in [-odds, odds]: a bracket that does not use (4.4)
    odds = max(eta / (1 - eta), (1 - eta) / eta)
    res = optimize.minimize_scalar(zeta, bounds=(-odds - 1.0, odds + 1.0), args=(eta, q), method="bounded",
                                   options={"xatol": 1e-12, "maxiter": 2000})
    assert res.success
    z_ours, z_scipy = zeta(f_tilde, eta, q), res.fun
    assert z_ours <= z_scipy * (1 + 1e-13)
    grad = eta * kerndwd.dwd_loss_deriv(f_tilde, q) - (1 - eta) * kerndwd.dwd_loss_deriv(-f_tilde, q)
    assert abs(grad) <= 1e-12
    # curvature of zeta at f~ (only the tail piece is curved there)
    t = knot(q)
    a = abs(f_tilde)
    curv = max(eta, 1 - eta) * (q + 1.0) * t ** (q + 1.0) / a ** (q + 2.0)
    resolution = math.sqrt(16 * EPS * z_scipy / curv) + 1e-9
    assert abs(res.x - f_tilde) <= resolution * (1 + abs(f_tilde))


@given(qs, etas)
@example(q=1.0, eta=0.5)
def test_lemma3_fisher_consistent_sign(q, eta):
    """Lemma 3: the population minimiser (4.4) has the sign of ``eta - 1/2`` (0 at
    ``eta = 1/2``), lies outside ``(-t_q, t_q)`` unless ``eta = 1/2``, and is odd
    under ``eta -> 1 - eta``."""
    f = kerndwd.population_minimizer(eta, q)
    assert np.sign(f) == np.sign(eta - 0.5)
    if eta != 0.5:
        assert abs(f) >= knot(q) * (1 - 1e-15)
    assert kerndwd.population_minimizer(1.0 - eta, q) == -f or abs(
        kerndwd.population_minimizer(1.0 - eta, q) + f) <= 1e-12 * abs(f)


@given(qs, st.floats(min_value=1e-6, max_value=1 - 1e-6))
@example(q=0.01, eta=0.5)
def test_lemma4_excess_risk_inequality(q, eta):
    """Proof of Lemma 4: ``1 - zeta(f~) >= q/(q+1) |2 eta - 1|`` and
    ``zeta(f~) <= zeta(0) = 1`` at the population minimiser ``f~`` of (4.4);
    also the closed form ``zeta(f~) = (1-a)/2 + (1+a)^(1/(q+1)) (1-a)^(q/(q+1)) / 2``
    with ``a = |2 eta - 1|`` (1e-12 relative).  Slack 4 ulp."""
    f = kerndwd.population_minimizer(eta, q)
    z = zeta(f, eta, q)
    a = abs(2 * eta - 1)
    assert 1.0 - z >= q / (q + 1.0) * a - 4 * EPS
    assert z <= zeta(0.0, eta, q) + 4 * EPS
    lo, hi = 2 * min(eta, 1 - eta), 2 * max(eta, 1 - eta)  # 1 - a and 1 + a without cancellation
    closed = 0.5 * lo + 0.5 * hi ** (1 / (q + 1)) * lo ** (q / (q + 1))
    assert abs(z - closed) <= 1e-12 * closed


# ---------------------------------------------------------------------------
# the loss to a few ulps for every q
# ---------------------------------------------------------------------------
def v_decimal(u, q):
    """``V_q(u)`` in 700-digit decimal arithmetic, the knot decided in rationals:
    ``1 - u`` up to ``q/(q+1)``, then ``exp(-q log(1 + 1/q) - q log u) / (q+1)``
    (700 digits hold ``1 + 1/q`` for ``q`` up to ``1e300``)."""
    from decimal import Decimal, localcontext
    from fractions import Fraction

    if Fraction(u) * (Fraction(q) + 1) <= Fraction(q):
        return 1.0 - u  # one subtraction, correctly rounded
    with localcontext() as ctx:
        ctx.prec = 700
        Q, U = Decimal(q), Decimal(u)
        return float((-Q * (1 + 1 / Q).ln() - Q * U.ln()).exp() / (Q + 1))


def v_decimal_deriv(u, q):
    """``V_q'(u)`` as :func:`v_decimal` computes ``V_q``: ``-q V_q(u) / u`` beyond the knot."""
    from decimal import Decimal, localcontext
    from fractions import Fraction

    if Fraction(u) * (Fraction(q) + 1) <= Fraction(q):
        return -1.0
    with localcontext() as ctx:
        ctx.prec = 700
        Q, U = Decimal(q), Decimal(u)
        return float(-Q * (-Q * (1 + 1 / Q).ln() - Q * U.ln()).exp() / ((Q + 1) * U))


@pytest.mark.parametrize("q", [1e-300, 1e-3, 0.0274, 1.0, 7.5, 100.0, 1e4, 1e10, 1e15, 1e16, 3e16, 1e20, 1e300])
def test_loss_and_derivative_to_a_few_ulps_for_every_q(q):
    """``q/(q+1)`` rounds (to 1 from about ``1e16``), and the rounded ratio
    ``t/u`` raised to ``q`` would cost ``q`` ulps: margins at and beside the
    rounded knot, at 1, and along the tail down to ``exp(-600)``; the
    derivative is ``-1`` up to the knot, ``-q V_q(u) / u`` beyond."""
    t = q / (q + 1.0)
    margins = [t, np.nextafter(t, 0.0), np.nextafter(t, 2.0), np.nextafter(np.nextafter(t, 2.0), 2.0),
               1.0, 0.5, 2.0, -3.0]
    margins += [t * math.exp(min(s / q, 600.0)) for s in np.linspace(1e-3, 600.0, 25)]
    for u in margins:
        want = v_decimal(float(u), q)
        got = kerndwd.dwd_loss(float(u), q)
        assert abs(got - want) <= 8 * np.spacing(want), (u, got, want)
        slope = v_decimal_deriv(float(u), q)
        assert abs(kerndwd.dwd_loss_deriv(float(u), q) - slope) <= 8 * np.spacing(abs(slope)), u
    np.testing.assert_array_equal(kerndwd.dwd_loss(np.array(margins), q), [kerndwd.dwd_loss(u, q) for u in margins])


def test_loss_at_one_for_a_q_whose_knot_rounds_to_one():
    """``V_q(1) = (q/(q+1))^q / (q+1)``, ``e^-1 / (q+1)`` in the limit: 3.68e-17 at q = 1e16;
    ``V_q'(1) = -(q/(q+1))^(q+1)``, ``-e^-1`` in the limit."""
    assert abs(kerndwd.dwd_loss(1.0, q=1e16) - math.exp(-1.0) / (1e16 + 1.0)) <= 4 * np.spacing(3.68e-17)
    assert abs(kerndwd.dwd_loss_deriv(1.0, q=1e16) + math.exp(-1.0)) <= 4 * np.spacing(0.368)
