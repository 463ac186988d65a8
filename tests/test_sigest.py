"""``kerndwd.sigest`` against its definition (R's ``sigest``, frac = 1/2).

Definition: draw ``m = floor(n/2)`` pairs of rows with replacement, keep the
non-zero squared distances of the pairs, and return the mean of ``1/q_0.9``
and ``1/q_0.1`` of them (type-7 quantiles).  The draw is numpy's: the
docstring promises a reproducible value from ``random_state``, made by
``numpy.random.default_rng(random_state)`` drawing the first rows of the pairs
and then the second ones, so the test repeats that draw and computes the rest
written out below.  The R fixtures in ``../shared/reference/kerndwd-r``
record no ``sigest`` value (R's draw uses R's generator, which the port does
not reproduce), so there is no R comparison here; the population test instead
pins the value by the law of large numbers, independently of the draw.
"""

import math

import numpy as np
import pytest
from scipy import stats

import kerndwd


def type7_quantile(v, prob):
    """Hyndman & Fan type 7 (R's default): linear between order statistics
    ``x[floor(h)]`` and ``x[ceil(h)]`` at ``h = (n - 1) prob`` (0-based)."""
    v = sorted(v)
    h = (len(v) - 1) * prob
    lo = math.floor(h)
    hi = min(lo + 1, len(v) - 1)
    return v[lo] + (h - lo) * (v[hi] - v[lo])


def sigest_by_definition(X, seed):
    n = X.shape[0]
    m = n // 2
    rng = np.random.default_rng(seed)
    first = rng.integers(0, n, size=m)
    second = rng.integers(0, n, size=m)
    d2 = []
    for i, j in zip(first, second):
        d = sum((X[i, k] - X[j, k]) ** 2 for k in range(X.shape[1]))
        if d != 0:
            d2.append(d)
    return 0.5 * (1.0 / type7_quantile(d2, 0.9) + 1.0 / type7_quantile(d2, 0.1))


@pytest.mark.parametrize("n, p, seed", [(200, 3, 0), (201, 2, 7), (37, 5, 11), (10, 1, 3)])
def test_sigest_is_its_definition_with_the_same_draw(n, p, seed):
    X = np.random.default_rng(100 + seed).standard_normal((n, p)) * np.arange(1, p + 1)
    assert kerndwd.sigest(X, random_state=seed) == pytest.approx(sigest_by_definition(X, seed), rel=1e-12)


def test_sigest_drops_zero_distances_before_the_quantiles():
    # half the rows repeat: many sampled pairs have distance 0, which must not
    # pull q_0.1 (and so sigma) to 0 / infinity
    base = np.random.default_rng(5).standard_normal((30, 2))
    X = np.vstack([base, base, base])
    got = kerndwd.sigest(X, random_state=2)
    assert np.isfinite(got)
    assert got == pytest.approx(sigest_by_definition(X, 2), rel=1e-12)


def test_sigest_converges_to_the_population_value():
    # rows N(0, I_3): the squared distance of two independent rows is 2 chi2_3,
    # so sigma -> (1/(2 F^-1(0.9)) + 1/(2 F^-1(0.1))) / 2 = 0.468 (with 0.95 / 0.05
    # it would be 0.742, with q_0.5 in place of q_0.9 0.533, of q_0.1 0.146);
    # pairs of a row with itself have probability 1/n and are dropped.  With
    # 20000 pairs the sample quantiles' relative sd is about 1% (q_0.1) and 0.5%
    # (q_0.9), so 5% is more than 4 sd over five seeds
    chi2 = stats.chi2(3)
    population = 0.5 * (1 / (2 * chi2.ppf(0.9)) + 1 / (2 * chi2.ppf(0.1)))
    X = np.random.default_rng(1).standard_normal((40000, 3))
    values = [kerndwd.sigest(X, random_state=s) for s in range(5)]
    assert np.mean(values) == pytest.approx(population, rel=0.05)


def test_sigest_uses_floor_n_over_2_pairs():
    # n = 3 draws one pair: sigma is then 1/d2 of that pair (both quantiles of
    # one value), whatever the seed, unless the pair is one row twice
    X = np.array([[0.0, 0.0], [1.0, 0.0], [0.0, 2.0]])
    pair_d2 = {1.0, 4.0, 5.0}
    seen = set()
    for seed in range(30):
        try:
            sigma = kerndwd.sigest(X, random_state=seed)
        except ValueError:
            continue
        d2 = 1.0 / sigma
        assert min(abs(d2 - v) for v in pair_d2) < 1e-12
        seen.add(round(d2))
    assert seen == {1, 4, 5}


def test_three_distinct_rows_never_told_they_are_identical():
    # with n = 3 there is one pair, drawn with replacement: it is one row
    # twice with probability 1/3.  The rows differ, so an error must not say
    # that the rows (or the pairs of distinct rows) are identical
    X = np.array([[0.0, 0.0], [1.0, 0.0], [0.0, 2.0]])
    errors = 0
    for seed in range(30):
        rng = np.random.default_rng(seed)
        i, j = rng.integers(0, 3, size=1)[0], rng.integers(0, 3, size=1)[0]
        if i != j:
            assert kerndwd.sigest(X, random_state=seed) == pytest.approx(1.0 / np.sum((X[i] - X[j]) ** 2))
            continue
        errors += 1
        with pytest.raises(ValueError) as info:
            kerndwd.sigest(X, random_state=seed)
        msg = str(info.value)
        assert "identical" not in msg
        assert "distinct rows" in msg and "with replacement" in msg
    assert errors > 0  # the case was reached


def test_identical_rows_say_so():
    with pytest.raises(ValueError, match="all rows of x are identical"):
        kerndwd.sigest(np.ones((6, 2)), random_state=0)
