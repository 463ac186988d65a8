"""The column-block forms of the feature designs
(:mod:`kerndwd.engine.majorisers.feature_blocks`) against dense products:
the penalties and the dual norms of their docstrings (with ``K_LL^+`` where
it fits the memory budget and the bound ``v'Kv`` beyond), the landmark
rows' scatter, and a pickled copy, which forms its own buffers and
closures.
"""

import pickle

import numpy as np
import pytest

import kerndwd
from kerndwd.engine.feature_maps import FourierMap, nystroem_cutoff
from kerndwd.engine.majorisers import feature_blocks
from kerndwd.engine.majorisers.feature_blocks import FourierBlockForm, LandmarkBlockForm

RBF = kerndwd.rbfdot(0.8)


def _fourier(cache=False):
    rng = np.random.default_rng(0)
    fmap = FourierMap(rng.normal(size=(2, 30)), rng.uniform(0, 2 * np.pi, 30))
    X = rng.normal(size=(40, 2))
    return FourierBlockForm(fmap, X, block_size=8, cache=cache), fmap.transform(X), rng


def _landmarks(cache=False, rows=np.arange(0, 40, 3)):
    rng = np.random.default_rng(1)
    X = rng.normal(size=(40, 2))
    return LandmarkBlockForm(RBF, X, rows, block_size=5, cache=cache), X, rng


@pytest.mark.parametrize("cache", [False, True])
def test_fourier_penalty_and_dual_norm(cache):
    form, Phi, rng = _fourier(cache)
    theta, lam = rng.normal(size=30), 0.3
    assert form.penalty(theta) == pytest.approx(theta @ theta, rel=1e-14)
    np.testing.assert_allclose(form.penalty_grad(theta), 2.0 * theta, rtol=1e-15)
    u = rng.normal(size=40)
    assert form.dual_norm_sq(u, theta, lam) == pytest.approx(np.sum((Phi.T @ u + 2 * lam * theta) ** 2), rel=1e-12)
    U, T = rng.normal(size=(40, 3)), rng.normal(size=(30, 3))
    np.testing.assert_allclose(form.dual_norm_sq(U, T, lam), np.sum((Phi.T @ U + 2 * lam * T) ** 2, axis=0),
                               rtol=1e-12)


@pytest.mark.parametrize("cache", [False, True])
def test_landmark_penalty_scatter_and_dual_norm_with_the_pseudo_inverse(cache):
    rows = np.arange(0, 40, 3)
    form, X, rng = _landmarks(cache, rows)
    assert form.landmark_rows.dtype == np.intp and form.landmarks.dtype == np.float64
    np.testing.assert_array_equal(form.landmarks, X[rows])
    C, KLL = RBF(X, X[rows]), RBF(X[rows])
    beta, lam = rng.normal(size=rows.size), 0.2
    assert form.penalty(beta) == pytest.approx(beta @ KLL @ beta, rel=1e-12)
    assert form.penalty(beta, applied=C @ beta) == pytest.approx(beta @ KLL @ beta, rel=1e-12)
    np.testing.assert_allclose(form.penalty_grad(beta), 2 * KLL @ beta, rtol=1e-12)
    np.testing.assert_allclose(form.penalty_grad(beta, applied=C @ beta), 2 * KLL @ beta, rtol=1e-12)
    S = form.scatter(beta.astype(np.float32))
    assert S.dtype == np.float64 and S.shape == (40,)
    np.testing.assert_array_equal(S[rows], beta.astype(np.float32)) and not S[np.setdiff1d(np.arange(40), rows)].any()
    assert form.scatter(np.ones((rows.size, 2))).shape == (40, 2)
    u = rng.normal(size=40)
    v = u + 2 * lam * form.scatter(beta)
    g = C.T @ v
    e, V = np.linalg.eigh(KLL)
    keep = e > nystroem_cutoff(rows.size) * e[-1]
    expected = g @ (V[:, keep] / e[keep]) @ V[:, keep].T @ g
    assert form.dual_norm_sq(u, beta, lam) == pytest.approx(expected, rel=1e-8)
    U, B = rng.normal(size=(40, 2)), rng.normal(size=(rows.size, 2))
    got = form.dual_norm_sq(U, B, lam)
    for j in range(2):
        gj = C.T @ (U[:, j] + 2 * lam * form.scatter(B[:, j]))
        assert got[j] == pytest.approx(gj @ (V[:, keep] / e[keep]) @ V[:, keep].T @ gj, rel=1e-8)
    solve = form.landmark_solve()
    assert solve is form.landmark_solve()  # formed once
    h = rng.normal(size=rows.size)
    np.testing.assert_allclose(solve(h), (V[:, keep] / e[keep]) @ V[:, keep].T @ h, rtol=1e-8)


def test_landmark_solve_drops_the_eigenvalues_below_the_cutoff():
    """Three landmarks under the linear kernel with ``K_LL = diag(0.5, 0.25,
    sigma)``: the cutoff is ``3 eps`` times the largest eigenvalue, 1.5 eps;
    sigma = 2 eps is kept, 1 eps dropped."""
    eps = np.finfo(float).eps
    for sigma, kept in [(2.0 * eps, 3), (1.0 * eps, 2)]:
        L = np.diag(np.sqrt([0.5, 0.25, sigma]))
        X = np.r_[L, np.ones((2, 3))]
        form = LandmarkBlockForm(kerndwd.vanilladot(), X, np.arange(3), block_size=2)
        solve = form.landmark_solve()
        assert form._solve[1].shape == (3, kept)
        h = np.array([1.0, 1.0, sigma])
        expected = np.array([2.0, 4.0, 1.0 if kept == 3 else 0.0])
        np.testing.assert_allclose(solve(h), expected, rtol=1e-6)


def test_beyond_the_budget_the_dual_norm_is_the_bound_v_k_v(monkeypatch):
    m = 14  # landmarks: 24 m^2 bytes for K_LL and its eigenvectors
    for budget, uses_solve in [(24.0 * m * m, True), (24.0 * m * m - 1.0, False), (None, False)]:
        monkeypatch.setattr(feature_blocks, "memory_budget", lambda budget=budget: budget)
        form, X, rng = _landmarks(rows=np.arange(0, 40, 3))
        assert form.m == m
        assert (form.landmark_solve() is not None) is uses_solve
        if uses_solve:
            continue
        u, beta, lam = rng.normal(size=40), rng.normal(size=m), 0.2
        v = u + 2 * lam * form.scatter(beta)
        assert form.dual_norm_sq(u, beta, lam) == pytest.approx(v @ RBF(X) @ v, rel=1e-10)
        V = np.column_stack([v, 2 * v])
        np.testing.assert_allclose(form._dual_metric()(V), [v @ RBF(X) @ v, 4 * v @ RBF(X) @ v], rtol=1e-10)


@pytest.mark.parametrize("make", [_fourier, _landmarks])
@pytest.mark.parametrize("cache", [False, True])
def test_a_pickled_form_makes_its_own_buffers_and_closures(make, cache):
    form = make(cache)[0]
    rng = np.random.default_rng(5)
    theta = rng.normal(size=form.m)
    z = rng.normal(size=form.n)
    expected, expected_t = form.apply(theta), form.apply_t(z)
    if isinstance(form, LandmarkBlockForm):
        form.dual_norm_sq(z, theta, 0.1)  # forms the closures
        assert form._dual is not None and form._solve is not None
    copy = pickle.loads(pickle.dumps(form))
    assert copy._local is not form._local and not hasattr(copy._local, "buffer")
    if isinstance(form, LandmarkBlockForm):
        assert copy._dual is None and copy._solve is None
        assert copy.dual_norm_sq(z, theta, 0.1) == pytest.approx(form.dual_norm_sq(z, theta, 0.1), rel=1e-12)
    np.testing.assert_allclose(copy.apply(theta), expected, rtol=1e-12)
    np.testing.assert_allclose(copy.apply_t(z), expected_t, rtol=1e-12)
    assert (copy.stored is not None) is cache


def test_the_columns_are_not_kept_unless_asked():
    rng = np.random.default_rng(0)
    fmap = FourierMap(rng.normal(size=(2, 30)), rng.uniform(0, 2 * np.pi, 30))
    X = rng.normal(size=(40, 2))
    assert FourierBlockForm(fmap, X, 8).stored is None
    assert LandmarkBlockForm(RBF, X, np.arange(10), 4).stored is None
    kept = LandmarkBlockForm(RBF, X, np.arange(10), 4, dtype=np.float32, cache=True, tile_rows=7, threads=1)
    assert kept.stored is not None and kept.dtype == np.float32 and kept._tile_rows == 7
    np.testing.assert_allclose(kept.apply(np.ones(10)), RBF(X, X[:10]) @ np.ones(10), rtol=1e-6)


def test_blocks_formed_on_the_fly_reuse_one_buffer_per_thread():
    """Without a cache each block is formed into the thread's buffer, which the
    next block overwrites (no allocation per block); another thread has its own."""
    import threading

    form, Phi, _ = _fourier(cache=False)
    (a0, b0), (a1, b1), (a2, b2) = form.blocks[:3]
    first = form.block(0)
    np.testing.assert_allclose(first, Phi[:, a0:b0], rtol=1e-13)
    second = form.block(1)
    np.testing.assert_allclose(second, Phi[:, a1:b1], rtol=1e-13)
    assert np.shares_memory(first, second)  # the same buffer, overwritten
    other = []
    thread = threading.Thread(target=lambda: other.append(form.block(2)))
    thread.start()
    thread.join()
    assert not np.shares_memory(other[0], second)
    np.testing.assert_allclose(other[0], Phi[:, a2:b2], rtol=1e-13)


def test_landmarks_are_float64_rows_and_a_zero_landmark_kernel_solves_to_zero():
    rows = np.arange(0, 40, 3)
    _, X, rng = _landmarks()
    form = LandmarkBlockForm(RBF, X.astype(np.float32), rows, block_size=5)
    assert form.landmarks.dtype == np.float64 and form.landmark_rows.dtype == np.intp
    np.testing.assert_array_equal(form.landmarks, X.astype(np.float32)[rows].astype(np.float64))
    # the linear kernel on landmark rows at the origin: K_LL = 0, whose pseudo-inverse is 0
    Z = X.copy()
    Z[rows] = 0.0
    zero = LandmarkBlockForm(kerndwd.vanilladot(), Z, rows, block_size=5)
    solve = zero.landmark_solve()
    np.testing.assert_array_equal(solve(rng.normal(size=rows.size)), np.zeros(rows.size))


def test_column_blocks_of_one_column_each():
    assert feature_blocks.column_blocks(5, 1) == [(0, 1), (1, 2), (2, 3), (3, 4), (4, 5)]
    assert feature_blocks.column_blocks(3, 10) == [(0, 3)]
    assert all(isinstance(a, int) and isinstance(b, int) for a, b in feature_blocks.column_blocks(7, 2))


@pytest.mark.parametrize("cache", [False, True])
def test_rows_split_between_two_threads_give_the_one_thread_columns(cache):
    """From 2048 rows a block is formed by two threads over two ranges of rows,
    in tiles of 100 rows: every row is formed, as one thread forms it."""
    rng = np.random.default_rng(3)
    X = rng.normal(size=(2100, 2))
    one = LandmarkBlockForm(RBF, X, np.arange(0, 60, 3), 8, cache=cache, tile_rows=100, threads=1)
    two = LandmarkBlockForm(RBF, X, np.arange(0, 60, 3), 8, cache=cache, tile_rows=100, threads=2)
    assert len(one._ranges) == 1 and len(two._ranges) == 2
    assert two._ranges[0][0] == 0 and two._ranges[-1][1] == 2100
    # below 2048 rows one range, whatever the threads (a range has 1024 rows at least)
    assert len(LandmarkBlockForm(RBF, X[:1500], np.arange(0, 60, 3), 8, threads=2)._ranges) == 1
    for k in range(len(one.blocks)):
        np.testing.assert_array_equal(np.array(two.block(k)), np.array(one.block(k)))
    np.testing.assert_allclose(two.apply(np.ones(20)), RBF(X, X[0:60:3]) @ np.ones(20), rtol=1e-12)


def test_kept_blocks_are_stored_in_the_asked_dtype():
    rng = np.random.default_rng(4)
    fmap = FourierMap(rng.normal(size=(2, 12)), rng.uniform(0, 2 * np.pi, 12))
    X = rng.normal(size=(30, 2))
    kept = FourierBlockForm(fmap, X, 5, dtype=np.float32, cache=True)
    assert [s.dtype for s in kept.stored] == [np.float32] * 3
    assert [s.shape for s in kept.stored] == [(30, 4), (30, 4), (30, 4)]
    assert FourierBlockForm(fmap, X, 5).stored is None  # not kept unless asked


def _block_majoriser(form, weights, gam):
    from kerndwd.engine.loss import DWDLoss
    from kerndwd.engine.majorisers.feature_blocks import FeatureBlockCoordinate

    return FeatureBlockCoordinate(form, DWDLoss(1.0, weights), gam, None)


@pytest.mark.parametrize("make", [_fourier, _landmarks])
def test_a_block_gram_is_the_weighted_bordered_gram_plus_the_ridge(make):
    form = make()[0]
    w = np.random.default_rng(7).uniform(0.2, 3.0, form.n)
    maj = _block_majoriser(form, w, 0.3)
    CJ = np.array(form.block(1))
    Z = np.column_stack((np.ones(form.n), CJ))
    np.testing.assert_allclose(maj._gram(1, CJ), Z.T @ (w[:, None] * Z) + 0.3 * np.eye(Z.shape[1]), rtol=1e-12)


@pytest.mark.parametrize("make, name", [(_fourier, "None"), (_landmarks, repr(RBF))])
def test_a_block_gram_that_overflows_is_refused_naming_the_kernel(make, name):
    form = make()[0]
    maj = _block_majoriser(form, None, 0.0)
    CJ = np.array(form.block(0))
    CJ[3, 1] = np.inf
    with pytest.raises(ValueError) as info:
        maj._gram(0, CJ)
    assert str(info.value) == (f"kern={name}: kernel values between the rows and the landmarks are not finite "
                               "(overflow); rescale X or choose another kernel")


@pytest.mark.parametrize("make", [_fourier, _landmarks])
def test_the_first_sweep_with_one_block_is_the_majorisers_minimiser(make):
    """With every column in one block, a sweep from ``(b0, theta) = 0`` is one
    exact minimisation of the block majoriser: ``-P^-1 [sum z, C'z] / M`` with
    ``P = [1, C]'W[1, C] + gam I + (2 n lambda / M) diag(0, Omega)``,
    ``Omega = I`` for features and ``K_LL`` for landmarks (no penalty on the
    intercept)."""
    if make is _fourier:
        rng = np.random.default_rng(0)
        fmap = FourierMap(rng.normal(size=(2, 30)), rng.uniform(0, 2 * np.pi, 30))
        form = FourierBlockForm(fmap, rng.normal(size=(40, 2)), block_size=30)
    else:
        small, X, rng = make()
        form = LandmarkBlockForm(RBF, X, small.landmark_rows, block_size=small.m)
    n, m, lam, gam = form.n, form.m, 0.01, 0.2
    w = np.random.default_rng(8).uniform(0.5, 2.0, n)
    y = np.where(np.random.default_rng(9).standard_normal(n) > 0, 1.0, -1.0)
    maj = _block_majoriser(form, w, gam)
    assert len(maj.blocks) == 1
    maj.start()
    f = np.zeros(n)
    z = maj.loss.weighted_labels(y) * maj.loss.deriv(y * f)
    step, df, _ = maj.at_lambda(lam)(z, np.zeros(m + 1), f=f, y=y)
    C = np.array(form.block(0))
    Z = np.column_stack((np.ones(n), C))
    M = maj.loss.lipschitz
    omega = np.eye(m) if form.landmark_rows is None else C[form.landmark_rows]
    P = Z.T @ (w[:, None] * Z) + gam * np.eye(m + 1)
    P[1:, 1:] += (2 * n * lam / M) * omega
    expected = -np.linalg.solve(P, np.r_[z.sum(), C.T @ z]) / M
    np.testing.assert_allclose(step, expected, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(df, Z @ expected, rtol=1e-9, atol=1e-12)
