"""The form of the approximations by blocks of features on Dask rows
(:mod:`kerndwd.engine.designs.dask_feature_bcd`, ``DaskColumnForm``) against
the in-memory forms of the same columns, on Dask's local scheduler: ``C
theta`` formed chunk by chunk, ``C' z`` from rows on the client or on the
chunks, the penalty and its gradient, the squared dual norm for one column
and one column per lambda, and what each chunk's columns are made with."""

import numpy as np
import pytest

da = pytest.importorskip("dask.array")
dask = pytest.importorskip("dask")

import kerndwd  # noqa: E402
from kerndwd.engine import cache as cache_module  # noqa: E402
from kerndwd.engine import threads  # noqa: E402
from kerndwd.engine.majorisers import feature_blocks  # noqa: E402
from kerndwd.engine.chunked import ChunkedRows  # noqa: E402
from kerndwd.engine.designs.dask_feature_bcd import ChunkLandmarkForm, DaskFeatureBlockCoordinate  # noqa: E402
from kerndwd.engine.feature_maps import FourierMap  # noqa: E402
from kerndwd.engine.loss import DWDLoss  # noqa: E402
from kerndwd.engine.majorisers.feature_blocks import FourierBlockForm, LandmarkBlockForm  # noqa: E402
from kerndwd.engine.predictors import FeaturePredictor, KernelPredictor  # noqa: E402

RBF = kerndwd.rbfdot(0.7)
N, M, B = 23, 9, 4


def _data():
    rng = np.random.default_rng(8)
    return rng.normal(size=(N, 3)), rng


def _on_dask(X, approx, cache=False, dtype=np.float64, tile_rows=None, rows=None):
    Xd = da.from_array(X, chunks=(7, 3)).persist()
    common = (Xd, DWDLoss(1.0), 0.0)
    if approx == "rff":
        rng = np.random.default_rng(1)
        fmap = FourierMap(rng.normal(size=(3, M)), rng.uniform(0, 2 * np.pi, M))
        majoriser = DaskFeatureBlockCoordinate(*common, FeaturePredictor(fmap, 3), B, cache, dtype, tile_rows,
                                               fmap=fmap)
        return majoriser, FourierBlockForm(fmap, X, B, dtype=dtype, cache=cache)
    majoriser = DaskFeatureBlockCoordinate(*common, KernelPredictor(RBF, X[rows]), B, cache, dtype, tile_rows,
                                           kern=RBF, landmarks=X[rows], landmark_rows=rows)
    return majoriser, LandmarkBlockForm(RBF, X, rows, B, dtype=dtype, cache=cache)


#: landmarks in every chunk, out of order, and all rows (m = n: no K_LL^+)
CASES = {"rff": None, "nystroem": np.array([20, 3, 9, 15, 0, 11, 22, 7, 16]), "nystroem-all": np.arange(N)[::-1]}


@pytest.mark.parametrize("case", list(CASES))
def test_products_equal_the_in_memory_form(case):
    X, rng = _data()
    majoriser, memory = _on_dask(X, "rff" if case == "rff" else "nystroem", rows=CASES[case])
    form, m = majoriser.form, memory.m
    assert form.n == N and form.m == m and majoriser.ncoef == m + 1
    assert majoriser.blocks == memory.blocks and majoriser.block_size == memory.width
    theta, lam = rng.normal(size=m), 0.3
    applied = form.apply(theta)
    assert isinstance(applied, ChunkedRows) and applied.shape == (N,)
    np.testing.assert_allclose(np.asarray(applied), memory.apply(theta), rtol=0, atol=1e-13)
    z = rng.normal(size=N)
    np.testing.assert_allclose(form.apply_t(z), memory.apply_t(z), rtol=0, atol=1e-12)
    np.testing.assert_allclose(form.apply_t(applied), memory.apply_t(memory.apply(theta)), rtol=0, atol=1e-12)
    assert form.penalty(theta) == pytest.approx(memory.penalty(theta), rel=1e-12)
    assert form.penalty(theta, applied) == pytest.approx(memory.penalty(theta), rel=1e-12)
    np.testing.assert_allclose(form.penalty_grad(theta), memory.penalty_grad(theta), rtol=0, atol=1e-12)
    np.testing.assert_allclose(form.penalty_grad(theta, applied), memory.penalty_grad(theta), rtol=0, atol=1e-12)
    assert form.dual_norm_sq(z, theta, lam) == pytest.approx(memory.dual_norm_sq(z, theta, lam), rel=1e-10)
    # the MM loop's penalty from the decision values, as the in-memory sweeps read it
    coord = np.concatenate(([0.4], theta))
    f = 0.4 + applied
    assert majoriser.penalty_at(coord, f) == pytest.approx(memory.penalty(theta), rel=1e-12)
    # one column per lambda
    Theta, Z, lams = rng.normal(size=(m, 3)), rng.normal(size=(N, 3)), np.array([0.3, 0.1, 0.01])
    wide = form.apply(Theta)
    assert wide.shape == (N, 3)
    np.testing.assert_allclose(np.asarray(wide), memory.apply(Theta), rtol=0, atol=1e-13)
    got = form.dual_norm_sq(Z, Theta, lams)
    assert got.shape == (3,)
    np.testing.assert_allclose(got, memory.dual_norm_sq(Z, Theta, lams), rtol=1e-10)
    np.testing.assert_allclose(form.penalty_grad(Theta[:, 0]), memory.penalty_grad(Theta[:, 0]), rtol=0, atol=1e-12)


@pytest.mark.parametrize("approx", ["rff", "nystroem"])
@pytest.mark.parametrize("cache, dtype", [(True, np.float32), (True, np.float64), (False, np.float64)])
def test_each_chunk_s_columns_are_kept_or_formed_in_tiles_on_one_thread(approx, cache, dtype, monkeypatch):
    monkeypatch.setattr(threads, "RANGE_MIN_ROWS", 1)  # else chunks of 7 rows take one range whatever the threads
    monkeypatch.setattr(threads, "usable_cores", lambda: 4)
    X, _ = _data()
    majoriser, memory = _on_dask(X, approx, cache=cache, dtype=dtype, tile_rows=3, rows=CASES["nystroem"])
    assert majoriser.kept is cache
    bounds = majoriser.chunks.bounds
    for i, columns in enumerate(majoriser.form.columns):
        assert columns.cached is cache and columns.dtype == dtype and columns._tile_rows == 3
        assert columns._ranges == [(0, bounds[i + 1] - bounds[i])]  # one thread: the worker's own
        assert columns.X.dtype == np.float64 and columns.X.flags.c_contiguous
        for k in range(len(columns.blocks)):
            np.testing.assert_allclose(columns.block(k), memory.block(k)[bounds[i]:bounds[i + 1]], rtol=0, atol=1e-14)
    if approx == "nystroem":
        held = [c.held for c in majoriser.form.columns]
        np.testing.assert_array_equal(np.sort(np.concatenate(held)), np.arange(M))
        for i, c in enumerate(majoriser.form.columns):
            np.testing.assert_array_equal(CASES["nystroem"][c.held] - bounds[i], c.local_rows)


def test_a_chunk_s_landmark_rows_of_a_float32_cache_are_formed_again_in_float64():
    X, _ = _data()
    landmarks = X[[2, 14, 25 - 5, 7]]
    held, local = np.array([1, 2]), np.array([4, 10])  # rows 14 and 20 of X, in the chunk X[10:]
    f32 = ChunkLandmarkForm(RBF, X[10:], landmarks, held, local, 2, dtype=np.float32, cache=True)
    f64 = ChunkLandmarkForm(RBF, X[10:], landmarks, held, local, 2, dtype=np.float64, cache=True)
    for k in range(2):
        a, b = f32.blocks[k]
        exact = RBF(landmarks[held], landmarks[a:b])
        np.testing.assert_array_equal(f32.block(k)[local], exact)
        others = np.setdiff1d(np.arange(13), local)
        assert np.abs(f32.block(k)[others] - f64.block(k)[others]).max() > 0  # rounded to float32 elsewhere
    none_held = ChunkLandmarkForm(RBF, X[:10], landmarks, np.array([], int), np.array([], int), 2,
                                  dtype=np.float32, cache=True)
    np.testing.assert_array_equal(none_held.block(0), none_held.stored[0].astype(np.float64))
    formed = ChunkLandmarkForm(RBF, X[10:], landmarks, held, local, 2, dtype=np.float32, cache=False)
    np.testing.assert_allclose(formed.block(1), RBF(X[10:], landmarks[2:]), rtol=0, atol=1e-15)  # float64


@pytest.mark.parametrize("case, name", [("rff", "None"), ("nystroem", repr(RBF))])
def test_a_block_gram_is_the_chunks_partial_sums_plus_the_ridge_and_an_overflow_is_named(case, name):
    X, rng = _data()
    majoriser, _ = _on_dask(X, case, rows=CASES["nystroem"])
    majoriser.gam = 0.3
    parts = [rng.normal(size=(3, 3)) for _ in range(2)]
    rows = [(np.array([1]), rng.normal(size=(1, 2))), (np.array([0]), rng.normal(size=(1, 2)))]
    outs = [(None, None, (parts[i], rows[i])) for i in range(2)]
    gram = majoriser._gram(0, outs, 2)
    np.testing.assert_allclose(gram, parts[0] + parts[1] + 0.3 * np.eye(3), rtol=1e-15)
    if case == "nystroem":  # the block's K_{L_J L_J}, row by row from the chunks holding its landmarks
        np.testing.assert_array_equal(majoriser._omegas[0], np.vstack([rows[1][1], rows[0][1]]))
    else:
        assert majoriser._omegas[0] is None
    assert majoriser._gram(0, [], 2) is gram  # kept for every later sweep and lambda
    parts[1][2, 1] = np.inf
    with pytest.raises(ValueError) as info:
        majoriser._gram(1, outs, 2)
    assert str(info.value) == (f"kern={name}: kernel values between the rows and the landmarks are not finite "
                               "(overflow); rescale X or choose another kernel")


@pytest.mark.parametrize("dtype, kept", [(np.float64, False), (np.float32, True)])
def test_unasked_the_columns_are_kept_where_n_m_numbers_of_their_dtype_fit(dtype, kept, monkeypatch):
    monkeypatch.setattr(cache_module, "memory_budget", lambda *a: 1000.0)  # n m = 207 numbers: 1656 or 828 bytes
    X, _ = _data()
    for approx in ("rff", "nystroem"):
        majoriser, _ = _on_dask(X, approx, cache=None, dtype=dtype, rows=CASES["nystroem"])
        assert majoriser.kept is kept and all(c.cached is kept for c in majoriser.form.columns)


def test_a_fit_forms_each_chunk_s_columns_in_tiles_of_chunk_size_rows(monkeypatch):
    built = []
    original = DaskFeatureBlockCoordinate.__init__

    def recording(self, *args, **kwargs):
        original(self, *args, **kwargs)
        built.append(self)

    monkeypatch.setattr(DaskFeatureBlockCoordinate, "__init__", recording)
    X, _ = _data()
    y = np.where(X[:, 0] > 0, 1, -1)
    with dask.config.set(scheduler="synchronous"):
        for approx in ("rff", "nystroem"):
            kerndwd.fit(da.from_array(X, chunks=(7, 3)), y, [0.1], kern=RBF, approx=approx, solver="bcd",
                        n_components=M, block_size=B, chunk_size=5)
    assert len(built) == 2 and all(c._tile_rows == 5 for b in built for c in b.form.columns)


def test_without_room_for_k_ll_the_dual_norm_is_v_k_v_per_column(monkeypatch):
    monkeypatch.setattr(feature_blocks, "memory_budget", lambda *a: 1.0)
    X, rng = _data()
    majoriser, memory = _on_dask(X, "nystroem", rows=CASES["nystroem"])
    Theta, Z, lams = rng.normal(size=(M, 3)), rng.normal(size=(N, 3)), np.array([0.3, 0.1, 0.01])
    got = majoriser.form.dual_norm_sq(Z, Theta, lams)
    assert got.shape == (3,)
    np.testing.assert_allclose(got, memory.dual_norm_sq(Z, Theta, lams), rtol=1e-10)
    V = Z.copy()
    V[CASES["nystroem"]] += 2.0 * lams * Theta
    np.testing.assert_allclose(got, np.einsum("ij,ij->j", V, RBF(X) @ V), rtol=1e-10)
