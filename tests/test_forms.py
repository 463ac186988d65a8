"""The forms (:mod:`kerndwd.engine.forms`) against their definitions:
``f = b0 + B theta`` and its products, ``Z'WZ`` with ``Z = [1, B]``, its
diagonal, and the penalty and dual norms, for every storage (dense, sparse
of each container, float32 features in blocks and threads, a kernel
matrix).  Block and thread counts are forced small so that every boundary
is crossed on a handful of rows.
"""

import pickle

import numpy as np
import pytest
from scipy import sparse

from kerndwd.engine import forms
from kerndwd.engine.threads import usable_cores
from kerndwd.engine.forms import (BLOCK_ELEMENTS, DenseLinearForm, FeatureMatrixForm, KernelForm, LinearForm,
                                  SparseLinearForm, row_blocks, weighted_col_sq_sums)


def _data(n=23, p=4, seed=0):
    rng = np.random.default_rng(seed)
    B = rng.normal(size=(n, p))
    w = rng.uniform(0.1, 2.0, size=n)
    return B, w


def _zwz(B, w=None):
    Z = np.column_stack([np.ones(B.shape[0]), np.asarray(B, dtype=float)])
    W = np.ones(B.shape[0]) if w is None else w
    return Z.T @ (W[:, None] * Z)


@pytest.mark.parametrize("fmt", ["csr", "csc"])
def test_weighted_column_sums_keep_empty_trailing_columns_and_rows(fmt):
    """The squared matrix keeps ``X``'s shape: an empty last column still has
    its (zero) sum, an empty last row still takes its weight."""
    B = np.array([[1.0, 2.0, 0.0], [0.0, 3.0, 0.0], [0.0, 0.0, 0.0]])
    X = sparse.csr_array(B) if fmt == "csr" else sparse.csc_array(B)
    np.testing.assert_array_equal(weighted_col_sq_sums(X, np.array([1.0, 2.0, 5.0])), [1.0, 22.0, 0.0])


def test_row_blocks_cover_the_rows_in_order():
    assert row_blocks(10, 4) == [(0, 4), (4, 8), (8, 10)]
    assert row_blocks(8, 4) == [(0, 4), (4, 8)]
    assert row_blocks(3, 5) == [(0, 3)]
    assert row_blocks(0, 5) == []


# --------------------------------------------------------------------------
# linear forms
# --------------------------------------------------------------------------
@pytest.mark.parametrize("cls", [LinearForm, DenseLinearForm])
def test_linear_products_and_gram(cls):
    """``Z coef``, ``Z' z`` (vectors and one column per lambda), ``Z'Z``,
    ``Z'WZ`` (zero weights included: those rows drop out) and its diagonal."""
    B, w = _data()
    form = cls(B)
    Z = np.column_stack([np.ones(23), B])
    coef = np.arange(5.0) - 2.0
    np.testing.assert_allclose(form.zmul(coef), Z @ coef, rtol=1e-13)
    np.testing.assert_allclose(form.ztmul(w), Z.T @ w, rtol=1e-13)
    assert form.ztmul(w).shape == (5,)
    np.testing.assert_allclose(form.gram(), _zwz(B), rtol=1e-13)
    np.testing.assert_allclose(form.gram(w), _zwz(B, w), rtol=1e-13)
    w0 = w.copy()
    w0[::3] = 0.0
    np.testing.assert_allclose(form.gram(w0), _zwz(B, w0), rtol=1e-13, atol=1e-13)
    np.testing.assert_allclose(form.weighted_sq_norms(w), np.diag(_zwz(B, w)), rtol=1e-13)
    theta = np.column_stack([coef[1:], -coef[1:]])
    np.testing.assert_allclose(form.apply(theta), B @ theta, rtol=1e-13)
    np.testing.assert_allclose(form.apply_t(np.column_stack([w, w0])), B.T @ np.column_stack([w, w0]), rtol=1e-13)


def test_linear_penalty_and_dual_norms():
    """``||f||^2 = theta' theta``, its gradient ``2 theta``; the dual norm of
    ``B'u + 2 lam theta`` per column (one lambda each) is Euclidean."""
    B, w = _data()
    form = LinearForm(B)
    theta = np.array([1.0, -2.0, 0.5, 3.0])
    assert form.penalty(theta) == pytest.approx(14.25)
    np.testing.assert_array_equal(form.penalty_grad(theta), 2.0 * theta)
    g = B.T @ w + 2.0 * 0.3 * theta
    assert form.dual_norm_sq(w, theta, 0.3) == pytest.approx(g @ g, rel=1e-13)
    U = np.column_stack([w, -w])
    T = np.column_stack([theta, 2 * theta])
    lam = np.array([0.3, 0.1])
    G = B.T @ U + 2.0 * lam * T
    np.testing.assert_allclose(form.dual_norm_sq(U, T, lam), (G * G).sum(axis=0), rtol=1e-13)
    np.testing.assert_allclose(form.gradient_dual_norm_sq(G), (G * G).sum(axis=0), rtol=1e-13)


@pytest.mark.parametrize("positive", [23, 20, 5, 1])
def test_dense_weighted_gram_in_blocks_of_positive_rows(positive, monkeypatch):
    """Curvature weights with ``positive`` rows above zero: the rows are all
    scaled (most count) or gathered (few count), in blocks of
    ``GRAM_BLOCK`` rows (forced to 4 here); the result is ``Z'WZ``."""
    monkeypatch.setattr(forms, "GRAM_BLOCK", 4)
    B, w = _data()
    w[positive:] = 0.0
    w = np.random.default_rng(1).permutation(w)
    form = DenseLinearForm(B)
    np.testing.assert_allclose(form.gram(w), _zwz(B, w), rtol=1e-12, atol=1e-13)
    np.testing.assert_allclose(form.gram(np.zeros(23)), np.zeros((5, 5)), atol=0)
    np.testing.assert_allclose(form.weighted_sq_norms(w), np.diag(_zwz(B, w)), rtol=1e-13, atol=1e-15)


@pytest.mark.parametrize("fmt", ["csr", "csc", "coo", "csr_matrix", "csc_matrix"])
def test_sparse_form_and_weighted_column_sums(fmt):
    """Every sparse container gives flat float arrays (``spmatrix`` products
    would be ``np.matrix``), the same numbers as the dense form, and
    ``sum_i w_i x_ij^2`` without touching ``X`` (the diagonal of ``Z'WZ``
    that preconditions its iterative solvers, which never form ``Z'WZ``)."""
    B, w = _data()
    B[np.abs(B) < 0.8] = 0.0
    X = {"csr": sparse.csr_array, "csc": sparse.csc_array, "coo": sparse.coo_array,
         "csr_matrix": sparse.csr_matrix, "csc_matrix": sparse.csc_matrix}[fmt](B)
    before = X.copy()
    form = SparseLinearForm(X)
    theta = np.array([1.0, -1.0, 2.0, 0.5])
    out = form.apply(theta)
    assert type(out) is np.ndarray and out.shape == (23,)
    np.testing.assert_allclose(out, B @ theta, rtol=1e-13)
    T = np.column_stack([theta, -theta])
    assert form.apply(T).shape == (23, 2) and type(form.apply(T)) is np.ndarray
    np.testing.assert_allclose(form.apply(T), B @ T, rtol=1e-13)
    outt = form.apply_t(w)
    assert type(outt) is np.ndarray and outt.shape == (4,)
    np.testing.assert_allclose(outt, B.T @ w, rtol=1e-13)
    W2 = np.column_stack([w, 2 * w])
    np.testing.assert_allclose(form.apply_t(W2), B.T @ W2, rtol=1e-13)
    np.testing.assert_allclose(weighted_col_sq_sums(X, w), (B * B).T @ w, rtol=1e-13)
    np.testing.assert_allclose(form.weighted_sq_norms(w), np.diag(_zwz(B, w)), rtol=1e-13)
    G = form.gram()
    assert type(G) is np.ndarray and G.shape == (5, 5)
    np.testing.assert_allclose(G, _zwz(B), rtol=1e-13, atol=1e-14)
    np.testing.assert_allclose(form.gram(w), _zwz(B, w), rtol=1e-13, atol=1e-14)
    w0 = np.where(np.arange(23) % 3 == 0, 0.0, w)  # a Newton step's inactive rows
    np.testing.assert_allclose(form.gram(w0), _zwz(B, w0), rtol=1e-13, atol=1e-14)
    assert (X != before).nnz == 0


# --------------------------------------------------------------------------
# feature matrices
# --------------------------------------------------------------------------
def test_feature_form_refuses_what_it_cannot_hold():
    with pytest.raises(TypeError, match=r"Phi must be a 2-D float64 or float32 array, got int64 of shape \(3, 2\)"):
        FeatureMatrixForm(np.ones((3, 2), dtype=np.int64))
    with pytest.raises(TypeError, match=r"got float64 of shape \(3,\)"):
        FeatureMatrixForm(np.ones(3))


def test_feature_form_default_blocks_and_threads():
    """Blocks of a float64 buffer of ``_PRODUCT_BLOCK_BYTES`` (at least 16
    rows), and one thread per usable core but no more than there are blocks."""
    Phi = np.ones((5000, 64), dtype=np.float32)
    form = FeatureMatrixForm(Phi)
    rows = (1 << 19) // (8 * 64)
    assert form._blocks == row_blocks(5000, rows) and rows == 1024
    assert form.n_threads == min(usable_cores(), 5)
    wide = FeatureMatrixForm(np.ones((40, 100000), dtype=np.float32))
    assert wide._blocks == row_blocks(40, 16)
    assert FeatureMatrixForm(np.ones((3, 2)), n_threads=3).n_threads == 3
    assert FeatureMatrixForm(np.ones((3, 2)), block_rows=2)._blocks == [(0, 2), (2, 3)]
    assert FeatureMatrixForm(np.ones((3, 2))).n_threads == 1  # one block
    assert not FeatureMatrixForm(np.ones((3, 2))).upcast and FeatureMatrixForm(Phi).upcast


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("n_threads, block_rows", [(1, None), (1, 5), (3, 5), (8, 4), (2, 50)])
def test_feature_form_products_equal_the_float64_ones(dtype, n_threads, block_rows):
    """Whatever the blocks and threads (more threads than blocks included),
    the products, ``Z'WZ`` and its diagonal equal those of the float64
    copy of ``Phi`` to rounding; ``Phi`` is neither copied nor changed; a
    pickled copy (for a process pool) works without the thread pool."""
    B, w = _data()
    Phi = B.astype(dtype)
    before = Phi.copy()
    form = FeatureMatrixForm(Phi, n_threads=n_threads, block_rows=block_rows)
    assert form.B is Phi
    ref = Phi.astype(np.float64)
    theta = np.array([1.0, -1.0, 0.25, 2.0])
    T = np.column_stack([theta, -2 * theta])
    for _ in range(2):  # the second call reuses the thread pool
        np.testing.assert_allclose(form.apply(theta), ref @ theta, rtol=1e-12)
        np.testing.assert_allclose(form.apply(T), ref @ T, rtol=1e-12)
        np.testing.assert_allclose(form.apply_t(w), ref.T @ w, rtol=1e-12)
        np.testing.assert_allclose(form.zmul(np.r_[0.5, theta]), 0.5 + ref @ theta, rtol=1e-12)
        np.testing.assert_allclose(form.ztmul(w), np.r_[w.sum(), ref.T @ w], rtol=1e-12)
    np.testing.assert_allclose(form.gram(), _zwz(ref), rtol=1e-12)
    np.testing.assert_allclose(form.gram(w), _zwz(ref, w), rtol=1e-12)
    np.testing.assert_allclose(form.weighted_sq_norms(w), np.diag(_zwz(ref, w)), rtol=1e-12)
    assert np.array_equal(Phi, before)
    copy = pickle.loads(pickle.dumps(form))  # the threads are the process's shared pool, not the form's
    np.testing.assert_allclose(copy.apply_t(w), ref.T @ w, rtol=1e-12)


def test_feature_form_gram_in_blocks(monkeypatch):
    """``gram`` and ``weighted_sq_norms`` run over blocks of
    ``max(256, BLOCK_ELEMENTS // p)`` rows: on 600 rows with the constant
    made small, three blocks of 256, 256 and 88."""
    monkeypatch.setattr(forms, "BLOCK_ELEMENTS", 8)
    seen = []
    real = forms.row_blocks
    monkeypatch.setattr(forms, "row_blocks", lambda n, rows: seen.append((n, rows)) or real(n, rows))
    rng = np.random.default_rng(2)
    Phi = rng.normal(size=(600, 3)).astype(np.float32)
    w = rng.uniform(0.5, 1.5, size=600)
    form = FeatureMatrixForm(Phi, n_threads=1)
    seen.clear()
    ref = Phi.astype(np.float64)
    np.testing.assert_allclose(form.gram(w), _zwz(ref, w), rtol=1e-12)
    np.testing.assert_allclose(form.gram(), _zwz(ref), rtol=1e-12)
    np.testing.assert_allclose(form.weighted_sq_norms(w), np.diag(_zwz(ref, w)), rtol=1e-12)
    assert seen == [(600, 256)] * 3
    monkeypatch.setattr(forms, "BLOCK_ELEMENTS", 3000)
    seen.clear()
    np.testing.assert_allclose(form.gram(w), _zwz(ref, w), rtol=1e-12)
    assert seen == [(600, 1000)] and BLOCK_ELEMENTS == 1 << 21
    # one column: BLOCK_ELEMENTS rows
    column = FeatureMatrixForm(Phi[:, :1].copy(), n_threads=1)
    seen.clear()
    np.testing.assert_allclose(column.gram(w), _zwz(ref[:, :1], w), rtol=1e-12)
    np.testing.assert_allclose(column.weighted_sq_norms(w), np.diag(_zwz(ref[:, :1], w)), rtol=1e-12)
    assert seen == [(600, 3000)] * 2


# --------------------------------------------------------------------------
# the kernel form
# --------------------------------------------------------------------------
def test_kernel_form_penalty_dual_norm_and_shared_eigenbasis():
    rng = np.random.default_rng(3)
    A = rng.normal(size=(6, 6))
    K = A @ A.T
    form = KernelForm(K)
    alpha = rng.normal(size=6)
    assert form.n == 6
    np.testing.assert_allclose(form.apply(alpha), K @ alpha, rtol=1e-13)
    np.testing.assert_allclose(form.apply_t(alpha), K @ alpha, rtol=1e-13)
    assert form.penalty(alpha) == pytest.approx(alpha @ K @ alpha, rel=1e-13)
    assert form.penalty(alpha, applied=np.ones(6)) == pytest.approx(alpha.sum(), rel=1e-13)
    np.testing.assert_allclose(form.penalty_grad(alpha), 2 * K @ alpha, rtol=1e-13)
    np.testing.assert_array_equal(form.penalty_grad(alpha, applied=np.ones(6)), np.full(6, 2.0))
    u = rng.normal(size=6)
    v = u + 2 * 0.2 * alpha
    assert form.dual_norm_sq(u, alpha, 0.2) == pytest.approx(v @ K @ v, rel=1e-12)
    U, T, lam = np.column_stack([u, -u]), np.column_stack([alpha, alpha]), np.array([0.2, 0.5])
    V = U + 2.0 * lam * T
    np.testing.assert_allclose(form.dual_norm_sq(U, T, lam), (V * (K @ V)).sum(axis=0), rtol=1e-12)
    e, Q = form.eigh()
    np.testing.assert_allclose((Q * e) @ Q.T, K, atol=1e-10)
    assert form.eigh()[0] is e


@pytest.mark.parametrize("n_threads", [1, 2])
def test_float32_features_are_never_copied_whole_to_float64(n_threads):
    """The float32 products go through one float64 buffer of a block per
    thread: the memory they allocate stays far below a float64 copy of
    ``Phi`` (8 MB here), whatever the block's position in ``Phi``."""
    import tracemalloc

    rng = np.random.default_rng(4)
    Phi = rng.normal(size=(20000, 50)).astype(np.float32)
    form = FeatureMatrixForm(Phi, n_threads=n_threads, block_rows=500)
    theta, z = rng.normal(size=50), rng.normal(size=20000)
    ref = Phi.astype(np.float64)
    for product, expected in [(lambda: form.apply(theta), ref @ theta), (lambda: form.apply_t(z), ref.T @ z)]:
        tracemalloc.start()
        try:
            got = product()
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        np.testing.assert_allclose(got, expected, rtol=1e-10)
        assert peak < 1_000_000, peak  # the output (160 KB) and n_threads buffers of 200 KB


# --------------------------------------------------------------------------
# double-precision products of a float32 matrix
# --------------------------------------------------------------------------
@pytest.mark.parametrize("block", [1, 4, 10 ** 6])
@pytest.mark.parametrize("columns", [None, 1, 3])
def test_double_product_of_float32_rows_is_the_product_of_their_values(monkeypatch, block, columns):
    """``double_product`` of a float32 ``B`` widens each block of rows (the last
    one short) and writes the float64 product of its values; a float64 ``B``
    is one product; ``out``, when given, is what comes back."""
    rng = np.random.default_rng(40)
    B = rng.normal(size=(11, 6)).astype(np.float32)
    theta = rng.normal(size=6) if columns is None else rng.normal(size=(6, columns))
    monkeypatch.setattr(forms, "_WIDEN_BLOCK_BYTES", block * 8 * 6)
    expected = B.astype(np.float64) @ theta
    got = forms.double_product(B, theta)
    assert got.dtype == np.float64 and got.shape == expected.shape
    np.testing.assert_allclose(got, expected, rtol=1e-13, atol=1e-14)
    out = np.full(expected.shape, np.nan)
    assert forms.double_product(B, theta, out=out) is out
    np.testing.assert_array_equal(out, got)
    B64 = B.astype(np.float64)
    np.testing.assert_array_equal(forms.double_product(B64, theta), B64 @ theta)
    out = np.full(expected.shape, np.nan)
    assert forms.double_product(B64, theta, out=out) is out and not np.isnan(out).any()


def test_double_product_never_widens_the_whole_matrix():
    """A float32 matrix of 8 MB in float64 is multiplied within a few blocks'
    memory, and in the default blocks of about 2 MB."""
    import tracemalloc

    B = np.random.default_rng(41).normal(size=(1000, 1000)).astype(np.float32)
    theta = np.ones(1000)
    assert forms._WIDEN_BLOCK_BYTES == 1 << 21
    tracemalloc.start()
    try:
        got = forms.double_product(B, theta)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    np.testing.assert_allclose(got, B.astype(np.float64).sum(axis=1), rtol=1e-12)
    assert 1 << 21 <= peak < 3 << 21, peak  # one widened block and the result


def test_kernel_form_of_a_float32_matrix_takes_double_products():
    """A kernel matrix held in float32: every product, the penalty and the
    dual norm are those of its float64 values (no rounding of ``alpha``)."""
    rng = np.random.default_rng(42)
    A = rng.normal(size=(7, 7))
    K32 = (A @ A.T).astype(np.float32)
    K = K32.astype(np.float64)
    form = KernelForm(K32)
    alpha, u = rng.normal(size=7), rng.normal(size=7)
    np.testing.assert_allclose(form.apply(alpha), K @ alpha, rtol=1e-13)
    np.testing.assert_allclose(form.apply_t(alpha), K @ alpha, rtol=1e-13)
    assert form.penalty(alpha) == pytest.approx(alpha @ K @ alpha, rel=1e-13)
    np.testing.assert_allclose(form.penalty_grad(alpha), 2 * K @ alpha, rtol=1e-13)
    v = u + 2 * 0.3 * alpha
    assert form.dual_norm_sq(u, alpha, 0.3) == pytest.approx(v @ K @ v, rel=1e-12)
    T = np.column_stack([alpha, -alpha])
    np.testing.assert_allclose(form.apply(T), K @ T, rtol=1e-13)
