"""Landmarks and feature maps (:mod:`kerndwd.engine.feature_maps`) against
their definitions.

* ``leverage_landmarks``: a uniform sketch ``S`` of ``m`` rows; scores
  ``tau_i = (k_ii - k_iS (K_SS + (s/n) lam I)^-1 k_Si) / lam`` at the ridge
  where the effective dimension of ``(n/s) eig(K_SS)`` is ``m / log m``;
  ``m`` rows by Gumbel keys ``log tau_i + G_i``; uniform rows below 3
  landmarks or for a sketch without a positive eigenvalue.  Recomputed here
  densely, with a root finder for the ridge, from the same random stream.
* ``kmeanspp_landmarks``: D^2 sampling in feature space; rows at distance 0
  are never drawn; once every row is at distance 0, the rest uniformly.
* ``NystroemMap`` refuses landmarks without a positive eigenvalue and keeps
  the eigenvalues above ``m eps`` times the largest.
* ``FourierMap.transform_columns`` in float32 reduces the phases to
  ``[-pi, pi]`` before the float32 cosine.
"""

import numpy as np
import pytest
from scipy import optimize

import kerndwd
from kerndwd.engine import feature_maps
from kerndwd.engine.feature_maps import (FourierMap, NystroemMap, kmeanspp_landmarks, leverage_landmarks,
                                         nystroem_cutoff, uniform_landmarks)

RBF = kerndwd.rbfdot(0.5)


def _leverage_by_definition(X, kern, m, seed):
    """The landmarks of the docstring's definition, computed densely."""
    rng = np.random.default_rng(seed)
    n, s = X.shape[0], m
    sketch = np.sort(rng.choice(n, size=s, replace=False))
    K = kern(X)
    KSS = K[np.ix_(sketch, sketch)]
    mu = (n / s) * np.maximum(np.linalg.eigvalsh(KSS), 0.0)
    target = m / np.log(m)
    excess = lambda t: np.sum(mu / (mu + np.exp(t))) - target  # falls as t grows
    lo, hi = np.log(mu.max() * np.finfo(float).eps), np.log(mu.max())
    # where the sketch's rank is below the target, the smallest ridge searched
    lam = np.exp(lo if excess(lo) <= 0 else optimize.brentq(excess, lo, hi, xtol=1e-12))
    KiS = K[:, sketch]
    inner = np.linalg.solve(KSS + (s / n) * lam * np.eye(s), KiS.T)
    tau = np.maximum(np.diag(K) - np.einsum("ij,ji->i", KiS, inner), 0.0) / lam
    keys = np.log(tau + np.finfo(float).tiny) + rng.gumbel(size=n)
    return np.sort(np.argsort(-keys)[:m]), tau


@pytest.mark.parametrize("m, seed", [(3, 0), (8, 1), (20, 2)])
def test_leverage_landmarks_are_the_definitions(m, seed):
    """Two well-separated clusters of 150 and 10 rows: the small one's rows
    score high."""
    rng = np.random.default_rng(10 + seed)
    X = np.r_[rng.normal(size=(150, 2)), 6.0 + 0.3 * rng.normal(size=(10, 2))]
    got = leverage_landmarks(X, RBF, m, np.random.default_rng(seed))
    expected, tau = _leverage_by_definition(X, RBF, m, seed)
    np.testing.assert_array_equal(got, expected)
    assert tau[150:].mean() > tau[:150].mean()
    # the block size changes nothing
    np.testing.assert_array_equal(leverage_landmarks(X, RBF, m, np.random.default_rng(seed), block_rows=7), got)


def test_leverage_landmarks_keep_the_m_largest_keys_over_many_draws():
    rng = np.random.default_rng(20)
    X = np.r_[rng.normal(size=(150, 2)), 6.0 + 0.3 * rng.normal(size=(10, 2))]
    for seed in range(40):
        m = 5 + seed % 17
        got = leverage_landmarks(X, RBF, m, np.random.default_rng(seed))
        np.testing.assert_array_equal(got, _leverage_by_definition(X, RBF, m, seed)[0])


def test_leverage_landmarks_fall_back_to_uniform_rows():
    """Below 3 landmarks, or when the sketch's kernel matrix has no positive
    eigenvalue (all rows zero under the linear kernel), the rows are drawn
    uniformly after the sketch; a small positive spectrum (eigenvalues below
    1) is no reason to."""
    X = np.random.default_rng(3).normal(size=(40, 2))
    for m, data, kern in [(2, X, RBF), (5, np.zeros((40, 2)), kerndwd.vanilladot())]:
        rng = np.random.default_rng(4)
        rng.choice(40, size=m, replace=False)  # the sketch
        expected = uniform_landmarks(data, kern, m, rng)
        np.testing.assert_array_equal(leverage_landmarks(data, kern, m, np.random.default_rng(4)), expected)
    small = 1e-2 * np.random.default_rng(6).normal(size=(40, 10))  # a sketch of full rank 5, eigenvalues < 1
    got = leverage_landmarks(small, kerndwd.vanilladot(), 5, np.random.default_rng(5))
    np.testing.assert_array_equal(got, _leverage_by_definition(small, kerndwd.vanilladot(), 5, 5)[0])


def test_kmeanspp_first_landmark_is_uniform_and_each_next_by_squared_distance():
    """Four rows on a line at 0, 1, 2 and 10 (linear kernel: squared distance
    is the squared difference), two landmarks: the first is uniform, and the
    second, given the first at ``c``, is row ``i`` with probability
    ``(x_i - x_c)^2 / sum_j (x_j - x_c)^2``."""
    x = np.array([0.0, 1.0, 2.0, 10.0])
    X = x[:, None]
    kern = kerndwd.vanilladot()
    draws = 4000
    pairs = {}
    for seed in range(draws):
        rng = np.random.default_rng(seed)
        first = int(np.random.default_rng(seed).integers(4))
        got = kmeanspp_landmarks(X, kern, 2, rng)
        assert first in got and got.size == 2 and got[0] < got[1]
        second = int(got[1] if got[0] == first else got[0])
        pairs[first, second] = pairs.get((first, second), 0) + 1
    for c in range(4):
        count = sum(v for (f, _), v in pairs.items() if f == c)
        assert abs(count / draws - 0.25) < 0.03
        d2 = (x - x[c]) ** 2
        for i in range(4):
            expected = d2[i] / d2.sum()
            seen = pairs.get((c, i), 0) / count
            assert abs(seen - expected) < 4.0 * np.sqrt(expected * (1 - expected) / count) + 1e-9, (c, i)


def test_kmeanspp_never_draws_a_row_at_distance_zero_and_fills_up_uniformly():
    """Three distinct rows, each three times, close together (all squared
    distances below 1): the first three landmarks are one row of each kind;
    beyond three the rest are distinct rows drawn among the others; all
    rows, when all are asked for."""
    base = np.array([[0.0, 0.0], [0.1, 0.0], [0.0, 0.2]])
    X = np.repeat(base, 3, axis=0)
    kern = kerndwd.vanilladot()
    for seed in range(30):
        got = kmeanspp_landmarks(X, kern, 3, np.random.default_rng(seed))
        assert sorted(set(got // 3)) == [0, 1, 2]
        more = kmeanspp_landmarks(X, kern, 6, np.random.default_rng(seed))
        assert len(set(more.tolist())) == 6 and sorted(set(more // 3)) == [0, 1, 2]
        np.testing.assert_array_equal(kmeanspp_landmarks(X, kern, 9, np.random.default_rng(seed)), np.arange(9))


def test_kmeanspp_can_draw_the_last_row():
    """The row far from the first landmark is drawn second (nearly surely),
    also when it is the last row."""
    X = np.r_[np.zeros((5, 1)), [[100.0]]]
    X[:5, 0] = np.linspace(0.0, 0.01, 5)
    hits = sum(5 in kmeanspp_landmarks(X, kerndwd.vanilladot(), 2, np.random.default_rng(s)) for s in range(20))
    assert hits == 20


def test_nystroem_map_refuses_landmarks_without_a_positive_eigenvalue_and_cuts_at_m_eps():
    with pytest.raises(ValueError) as info:
        NystroemMap(kerndwd.vanilladot(), np.zeros((4, 2)))
    assert str(info.value) == ("the kernel matrix of the Nystrom landmarks has no positive eigenvalue; "
                               "choose another kernel or other landmarks")
    assert nystroem_cutoff(7) == 7 * np.finfo(float).eps
    # a tiny positive spectrum is kept; a rank-1 one keeps one component
    small = NystroemMap(kerndwd.vanilladot(), 1e-4 * np.array([[1.0, 0.0], [0.0, 1.0]]))
    assert small.n_components == 2
    np.testing.assert_allclose(small.eigenvalues, [1e-8, 1e-8], rtol=1e-12)
    rank1 = NystroemMap(kerndwd.vanilladot(), np.array([[1.0, 2.0], [2.0, 4.0], [3.0, 6.0]]))
    assert rank1.n_components == 1
    landmarks = np.array([[1, 2], [3, 4]])
    fmap = NystroemMap(RBF, landmarks)
    assert fmap.landmarks.dtype == np.float64 and fmap.landmarks.flags.c_contiguous
    landmarks[0, 0] = 9  # copied
    assert fmap.landmarks[0, 0] == 1.0


def test_nystroem_cut_keeps_an_eigenvalue_just_above_it():
    """Eigenvalues 1 and 3 eps (> 2 eps, the cutoff for two landmarks): both
    kept; 1.5 eps: dropped."""
    for small, kept in [(3.0, 2), (1.5, 1)]:
        L = np.array([[1.0, 0.0], [0.0, np.sqrt(small * np.finfo(float).eps)]])
        assert NystroemMap(kerndwd.vanilladot(), L).n_components == kept


def test_fourier_float32_columns_reduce_large_phases():
    """Phases of size 1e4: the float32 features equal the float64 ones to
    float32 rounding (an unreduced float32 cosine of 1e4 errs by 1e-3)."""
    rng = np.random.default_rng(6)
    W = 3000.0 * rng.normal(size=(3, 16))
    fmap = FourierMap(W, rng.uniform(0, 2 * np.pi, 16))
    X = rng.normal(size=(50, 3))
    low = fmap.transform_columns(X, 3, 11, dtype=np.float32)
    assert low.dtype == np.float32
    np.testing.assert_allclose(low, fmap.transform(X)[:, 3:11], rtol=0, atol=2e-6)
    X32 = X.astype(np.float32)
    np.testing.assert_allclose(fmap.transform_columns(X32, 0, 16), fmap.transform(X32.astype(float)),
                               rtol=0, atol=1e-12)
