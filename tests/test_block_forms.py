"""The kernel formed by blocks of columns (:mod:`kerndwd.engine.majorisers.blocks`)
against the dense kernel matrix: the partition of the rows, the bordered
Gram matrix, a block's columns with their product, and the products,
penalty and dual norm of the form, over several tiles and threads.
"""


import numpy as np
import pytest

import kerndwd
from kerndwd.engine.majorisers import blocks as blocks_module
from kerndwd.engine.majorisers.blocks import BlockKernelForm, MatrixBlockForm, bordered_gram, partition_rows

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


@pytest.mark.parametrize("n, threads, tile", [(50, 1, 1 << 16), (50, 4, 40), (3100, 3, 5000), (2100, 2, 5000),
                                             (1500, 2, 5000)])
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


# --------------------------------------------------------------------------
# the global step of a sweep
# --------------------------------------------------------------------------
from kerndwd.engine.majorisers.blocks import global_coefficients, global_step  # noqa: E402


def test_global_coefficients_minimise_the_quadratic_and_hold_as_documented():
    rng = np.random.default_rng(3)
    A = rng.normal(size=(3, 3))
    H = A @ A.T + 0.5 * np.eye(3)
    g = rng.normal(size=3)
    free = -np.linalg.solve(H, g)
    np.testing.assert_allclose(global_coefficients(H, g, hold=False), free, rtol=1e-10)
    # an asymmetric curvature is read by its symmetric part
    skew = np.triu(H) * 2.0 - np.diag(np.diag(H))
    np.testing.assert_allclose(global_coefficients(skew, g, hold=False), free, rtol=1e-10)
    # d's coefficient held in [0, 1]: the others minimise with it fixed at its bound
    H2, g2 = np.eye(3) + 0.1, np.array([-0.2, -3.0, 0.4])
    unheld = global_coefficients(H2, g2, hold=False)
    assert unheld[1] > 1.0
    held = global_coefficients(H2, g2)
    assert held[1] == 1.0
    rest = [0, 2]
    np.testing.assert_allclose(held[rest], -np.linalg.solve(H2[np.ix_(rest, rest)], g2[rest] + H2[rest, 1]),
                               rtol=1e-10)
    low = global_coefficients(H2, np.array([-1.0, 3.0, 0.0]))
    assert low[1] == 0.0 and low[0] > 0.0
    # the last sweep's move held in [-1, 1], then d clipped
    H3, g3 = np.eye(3), np.array([0.1, -0.5, 4.0])
    out = global_coefficients(H3, g3)
    assert out[2] == -1.0 and out[1] == pytest.approx(0.5) and out[0] == pytest.approx(-0.1)
    # a direction without curvature is dropped; nothing finite or no descent: None
    H4 = np.diag([1.0, 0.0, 2.0])
    np.testing.assert_allclose(global_coefficients(H4, np.array([-1.0, -5.0, -1.0]), hold=False), [1.0, 0.0, 0.5])
    assert global_coefficients(np.eye(2), np.zeros(2)) is None
    assert global_coefficients(np.array([[np.inf, 0.0], [0.0, 1.0]]), np.ones(2)) is None
    assert global_coefficients(np.eye(2), np.array([np.nan, 1.0])) is None


@pytest.mark.parametrize("metric", ["kernel", "features"])
def test_global_step_minimises_the_majoriser_over_the_directions(metric):
    """The gradient ``v0 sum(z) + v' B' z + 2 n lambda theta' Omega v`` and the
    curvature ``M (Zv)' W (Zv) + 2 n lambda v' Omega v`` formed densely here
    (``Omega = K`` or ``I``); the step and the decision values move by the
    coefficients of :func:`global_coefficients` on them."""
    rng = np.random.default_rng(7)
    n = 12
    X = rng.normal(size=(n, 2))
    B = RBF(X) if metric == "kernel" else rng.normal(size=(n, n))
    Omega = B if metric == "kernel" else np.eye(n)
    theta, z, w = rng.normal(size=n), rng.normal(size=n), rng.uniform(0.5, 2.0, n)
    coord = np.r_[0.3, theta]
    two_n_lam, M = 0.4, 4.0
    moves = [(1.0, None), (0.0, rng.normal(size=n)), (0.2, rng.normal(size=n))]
    directions = [(v0, v, v0 + (np.zeros(n) if v is None else B @ v)) for v0, v in moves]
    images = np.column_stack([d[2] for d in directions])
    g = np.array([v0 * z.sum() + (0.0 if v is None else v @ B.T @ z + two_n_lam * theta @ Omega @ v)
                  for v0, v in moves])
    H = M * images.T @ (w[:, None] * images)
    for i in (1, 2):
        for j in (1, 2):
            H[i, j] += two_n_lam * moves[i][1] @ Omega @ moves[j][1]
    for hold in (True, False):
        coef = global_coefficients(H, g, hold=hold)
        step, f_now = np.zeros(n + 1), B @ theta + 0.3
        before = f_now.copy()
        moved = global_step(directions, step, coord, f_now, z, two_n_lam, w, M,
                            rows=slice(None) if metric == "kernel" else None, hold=hold)
        assert moved
        expected_step = coef[0] * np.r_[1.0, np.zeros(n)] + sum(c * np.r_[v0, v] for c, (v0, v) in
                                                                 zip(coef[1:], moves[1:]))
        np.testing.assert_allclose(step, expected_step, rtol=1e-9, atol=1e-12)
        np.testing.assert_allclose(f_now - before, images @ coef, rtol=1e-9, atol=1e-12)
    # no descent to be had (a zero gradient at theta = 0, z = 0): nothing moves
    step, f_now = np.zeros(n + 1), np.zeros(n)
    assert not global_step(directions, step, np.zeros(n + 1), f_now, np.zeros(n), two_n_lam, w, M,
                           rows=slice(None) if metric == "kernel" else None)
    assert not step.any() and not f_now.any()
