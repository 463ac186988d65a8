"""The kernel form of rows on Dask (:mod:`kerndwd.engine.designs.dask_bcd`,
``DaskKernelForm``) against the dense kernel matrix, on Dask's local
scheduler: ``K theta`` formed chunk by chunk from the blocks' rows, its
gathered products, the penalty and its gradient, and the squared dual norm,
for one column and for one column per lambda."""

import numpy as np
import pytest

da = pytest.importorskip("dask.array")

import kerndwd  # noqa: E402
from kerndwd.engine.chunked import ChunkedRows  # noqa: E402
from kerndwd.engine.designs import dask_bcd  # noqa: E402
from kerndwd.engine.designs.dask_bcd import DaskKernelForm  # noqa: E402
from kerndwd.engine.majorisers.blocks import partition_rows  # noqa: E402
from kerndwd.engine.row_chunks import RowChunks  # noqa: E402

RBF = kerndwd.rbfdot(0.7)


def _form(n=23, block=5, tile=None, monkeypatch=None):
    rng = np.random.default_rng(8)
    X = rng.normal(size=(n, 3))
    chunks = RowChunks(da.from_array(X, chunks=(7, 3)).persist())
    blocks = partition_rows(n, block, 2)
    form = DaskKernelForm(chunks, RBF, blocks, lambda: [chunks.take(b) for b in blocks])
    return form, RBF(X), rng


@pytest.mark.parametrize("tile", [None, 3], ids=["whole-blocks", "tiles-of-rows"])
def test_products_equal_the_dense_kernel_matrix(tile, monkeypatch):
    if tile is not None:  # tiles of a few rows each: the loop over tiles of a chunk
        monkeypatch.setattr(dask_bcd, "TILE_ENTRIES", tile)
    form, K, rng = _form()
    assert form.n == 23
    theta, lam = rng.normal(size=23), 0.3
    applied = form.apply(theta)
    assert isinstance(applied, ChunkedRows) and applied.shape == (23,)
    np.testing.assert_allclose(np.asarray(applied), K @ theta, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(form.apply_t(applied), K @ (K @ theta), rtol=1e-11, atol=1e-11)
    assert form.penalty(theta) == pytest.approx(theta @ K @ theta, rel=1e-12)
    assert form.penalty(theta, applied) == pytest.approx(theta @ K @ theta, rel=1e-12)
    np.testing.assert_allclose(form.penalty_grad(theta), 2.0 * K @ theta, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(form.penalty_grad(theta, applied), 2.0 * K @ theta, rtol=1e-12, atol=1e-12)
    u = rng.normal(size=23)
    v = u + 2.0 * lam * theta
    assert form.dual_norm_sq(u, theta, lam) == pytest.approx(v @ K @ v, rel=1e-12)
    # one column per lambda: K Theta, and one dual norm per column
    Theta, U, lams = rng.normal(size=(23, 3)), rng.normal(size=(23, 3)), np.array([0.3, 0.1, 0.01])
    wide = form.apply(Theta)
    assert wide.shape == (23, 3)
    np.testing.assert_allclose(np.asarray(wide), K @ Theta, rtol=1e-12, atol=1e-12)
    V = U + 2.0 * lams * Theta
    got = form.dual_norm_sq(U, Theta, lams)
    assert got.shape == (3,)
    np.testing.assert_allclose(got, np.einsum("ij,ij->j", V, K @ V), rtol=1e-12)


def test_float32_rows_as_wide_as_a_block_fit_in_tiles_as_in_memory(monkeypatch):
    """Dask rows in float32 with p = 3 and blocks of 3 and 2 rows (a block's
    kernel buffer must not serve the next block of another width), every
    kernel formed in tiles of one or two rows: the fit equals the in-memory
    fit of the same values in float64."""
    dask = pytest.importorskip("dask")
    monkeypatch.setattr(dask_bcd, "TILE_ENTRIES", 4)
    rng = np.random.default_rng(9)
    X32 = rng.normal(size=(50, 3)).astype(np.float32)
    y = np.where(X32[:, 0] + 0.5 * rng.normal(size=50) > 0, 1.0, -1.0)
    kw = dict(kern=RBF, solver="bcd", block_size=3, random_state=1, stop="kkt", eps=1e-6, maxit=150)  # about 20 sweeps
    path = kerndwd.fit(X32.astype(np.float64), y, [0.1, 0.02], **kw)
    with dask.config.set(scheduler="synchronous"):
        on_dask = kerndwd.fit(da.from_array(X32, chunks=(17, 3)), y, [0.1, 0.02], **kw)
    assert on_dask.jerr == path.jerr == 0 and (on_dask.kkt <= 1e-6).all()
    np.testing.assert_array_equal(on_dask.npass, path.npass)
    np.testing.assert_allclose(on_dask.kkt, path.kkt, rtol=1e-6, atol=1e-15)  # the certificates too
    f, g = path.predict(X32.astype(np.float64), type="link"), on_dask.predict(X32.astype(np.float64), type="link")
    assert np.abs(g - f).max() <= 1e-8 * np.abs(f).max()


def test_the_kernel_checks_read_every_chunks_diagonal_and_sample_all_rows(monkeypatch):
    """Each chunk returns its ``k(x_i, x_i)`` (in order) and the definiteness
    check samples from all ``n`` rows, not those of one chunk."""
    seen = {}

    def record(kern, diagonal, take, n):
        seen.update(kern=kern, diagonal=diagonal, n=n, rows=take(np.array([0, 22])))

    monkeypatch.setattr(dask_bcd, "check_kernel_parts", record)
    rng = np.random.default_rng(2)
    X = rng.normal(size=(23, 2))
    chunks = RowChunks(da.from_array(X, chunks=(7, 2)))
    dask_bcd.check_kernel_on_chunks(chunks, RBF)
    assert seen["n"] == 23 and seen["kern"] is RBF
    assert seen["diagonal"].shape == (23,)
    np.testing.assert_allclose(seen["diagonal"], np.ones(23), rtol=0, atol=1e-15)
    np.testing.assert_array_equal(seen["rows"], X[[0, 22]])
