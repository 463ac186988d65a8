"""The kernel formed by blocks of columns (:mod:`kerndwd.engine.majorisers.blocks`)
against the dense kernel matrix: the partition of the rows, the bordered
Gram matrix, a block's columns with their product, and the products,
penalty and dual norm of the form, over several tiles and threads.
"""

import os

import numpy as np
import pytest

import kerndwd
from kerndwd.engine.majorisers import blocks as blocks_module
from kerndwd.engine.majorisers.blocks import (BlockKernelForm, MatrixBlockForm, bordered_gram, partition_rows,
                                              usable_cores)

RBF = kerndwd.rbfdot(0.6)


def test_partition_rows_is_a_seeded_permutation_in_nearly_equal_sorted_blocks():
    for n, b in [(10, 3), (64, 64), (65, 64), (1, 5), (100, 7)]:
        parts = partition_rows(n, b)
        assert len(parts) == -(-n // b)
        sizes = [p.size for p in parts]
        assert max(sizes) - min(sizes) <= 1 and max(sizes) <= b
        assert all((np.diff(p) > 0).all() for p in parts)
        assert sorted(np.concatenate(parts).tolist()) == list(range(n))
    same = partition_rows(30, 4, random_state=0)
    assert all(np.array_equal(a, b) for a, b in zip(partition_rows(30, 4), same))  # None is seed 0
    perm = np.random.default_rng(5).permutation(30)
    expected = [np.sort(p) for p in np.array_split(perm, 8)]
    assert all(np.array_equal(a, b) for a, b in zip(partition_rows(30, 4, random_state=5), expected))


def test_bordered_gram():
    rng = np.random.default_rng(0)
    C, w = rng.normal(size=(9, 3)), rng.uniform(0.5, 2.0, 9)
    Z = np.column_stack([np.ones(9), C])
    np.testing.assert_allclose(bordered_gram(C), Z.T @ Z, rtol=1e-13)
    np.testing.assert_allclose(bordered_gram(C, w), Z.T @ (w[:, None] * Z), rtol=1e-13)


def test_usable_cores_is_the_affinity():
    assert usable_cores() == len(os.sched_getaffinity(0)) >= 1


@pytest.mark.parametrize("n, threads, tile", [(50, 1, 1 << 16), (50, 4, 40), (3100, 3, 5000)])
@pytest.mark.parametrize("in_memory", [False, True])
def test_the_form_equals_the_dense_kernel(n, threads, tile, in_memory, monkeypatch):
    monkeypatch.setattr(blocks_module, "TILE_ENTRIES", tile)
    rng = np.random.default_rng(n)
    X = rng.normal(size=(n, 2))
    K = RBF(X)
    parts = partition_rows(n, 16 if n < 100 else 300)
    form = MatrixBlockForm(RBF, X, parts, K) if in_memory else BlockKernelForm(RBF, X, parts, threads=threads)
    if not in_memory:
        assert len(form._ranges) == max(1, min(threads, n // 1024))
        assert form._ranges[0][0] == 0 and form._ranges[-1][1] == n
    theta, T = rng.normal(size=n), rng.normal(size=(n, 2))
    np.testing.assert_allclose(form.apply(theta), K @ theta, rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(form.apply(T), K @ T, rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(form.apply_t(theta), K @ theta, rtol=1e-10, atol=1e-10)
    block = parts[1]
    V = rng.normal(size=(n, 3))
    cols, product = form.columns(block, V)
    np.testing.assert_allclose(cols, K[:, block], rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(product, K[:, block].T @ V, rtol=1e-10, atol=1e-10)
    coef = rng.normal(size=(block.size, 2))
    np.testing.assert_allclose(form.times(cols, coef), K[:, block] @ coef, rtol=1e-10, atol=1e-10)
    assert form.penalty(theta) == pytest.approx(theta @ K @ theta, rel=1e-10)
    assert form.penalty(theta, applied=K @ theta) == pytest.approx(theta @ K @ theta, rel=1e-12)
    np.testing.assert_allclose(form.penalty_grad(theta), 2 * K @ theta, rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(form.penalty_grad(theta, applied=K @ theta), 2 * K @ theta, rtol=1e-15)
    u, lam = rng.normal(size=n), 0.3
    v = u + 2 * lam * theta
    assert form.dual_norm_sq(u, theta, lam) == pytest.approx(v @ K @ v, rel=1e-10)
    U = rng.normal(size=(n, 2))
    W = U + 2 * lam * T
    np.testing.assert_allclose(form.dual_norm_sq(U, T, lam), np.einsum("ij,ij->j", W, K @ W), rtol=1e-10)


def test_the_block_buffer_is_as_wide_as_the_widest_block_and_reused():
    X = np.random.default_rng(1).normal(size=(20, 2))
    parts = [np.arange(0, 7), np.arange(7, 20)]
    form = BlockKernelForm(RBF, X, parts, threads=1)
    assert form._buffer.shape == (20, 13)
    first, _ = form.columns(parts[0], np.ones((20, 1)))
    second, _ = form.columns(parts[1], np.ones((20, 1)))
    assert np.shares_memory(first, second)
