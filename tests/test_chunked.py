"""Vectors and matrices of rows held in chunks (:mod:`kerndwd.engine.chunked`)
against numpy on the same values, on Dask's local scheduler: arithmetic
both ways round, selections by a boolean mask, columns, reductions, and
the index refusal.
"""

import numpy as np
import pytest

da = pytest.importorskip("dask.array")

from kerndwd.engine.chunked import ChunkedRows  # noqa: E402

V = np.array([1.0, -2.0, 3.0, 0.5, -4.0, 2.5, 6.0])
M = np.arange(14.0).reshape(7, 2) - 5.0


def _rows(values, chunks=3):
    return ChunkedRows.from_dask(da.from_array(values, chunks=(chunks,) + values.shape[1:]))


@pytest.mark.parametrize("op", ["+", "-", "*", "/", "**", "<", "<=", ">", ">="])
def test_binary_operators_both_ways_round(op):
    x, other = _rows(V), 3.0
    fn = {"+": np.add, "-": np.subtract, "*": np.multiply, "/": np.true_divide, "**": np.power,
          "<": np.less, "<=": np.less_equal, ">": np.greater, ">=": np.greater_equal}[op]
    base = np.abs(V) if op == "**" else V
    xb = _rows(base)
    np.testing.assert_allclose(np.asarray(eval(f"xb {op} other")), fn(base, other), rtol=1e-15)
    if op in "+-*/**":
        np.testing.assert_allclose(np.asarray(eval(f"other {op} xb")), fn(other, base), rtol=1e-15)
    y = _rows(V[::-1].copy())
    np.testing.assert_allclose(np.asarray(eval(f"xb {op} y")), fn(base, V[::-1]), rtol=1e-15)
    np.testing.assert_allclose(np.asarray(-x), -V)


def test_a_selection_reduces_over_the_selected_rows_alone():
    x = _rows(V)
    mask = x > 0.0
    sel = x[mask]
    assert sel.sum() == pytest.approx(V[V > 0].sum(), rel=1e-15)
    assert sel.mean() == pytest.approx(V[V > 0].mean(), rel=1e-15)
    assert (sel * 2.0 + 1.0).mean() == pytest.approx((V[V > 0] * 2 + 1).mean(), rel=1e-15)
    assert np.ones_like(x)[mask].sum() == 5.0
    # a mask whose rows are all false selects none; the rows themselves are not changed
    assert x[x > 100.0].sum() == 0.0
    np.testing.assert_array_equal(np.asarray(x), V)
    for gather in (sel.compute, sel.keep):
        with pytest.raises(TypeError) as info:
            gather()
        assert str(info.value) == "a selection of ChunkedRows has no known length per chunk: reduce it (sum, mean)"


def test_columns_and_means_of_a_matrix_of_rows():
    m = _rows(M)
    v = _rows(V)
    col = v[:, None]
    assert col.shape == (7, 1) and col.ndim == 2
    np.testing.assert_allclose(np.asarray(col * np.array([[1.0, 10.0]])), V[:, None] * [1.0, 10.0])
    np.testing.assert_allclose(m.mean(axis=0), M.mean(axis=0), rtol=1e-15)
    assert m.mean() == pytest.approx(M.mean(), rel=1e-15)
    np.testing.assert_allclose(m.sum(axis=0), M.sum(axis=0), rtol=1e-15)
    assert m.sum() == pytest.approx(M.sum(), rel=1e-15)
    np.testing.assert_allclose(np.asarray(m[:, 1]), M[:, 1])
    pair = m[:, [1, 0]]
    assert pair.shape == (7, 2)
    np.testing.assert_allclose(np.asarray(pair), M[:, [1, 0]])
    assert v.mean() == pytest.approx(V.mean(), rel=1e-15)


@pytest.mark.parametrize("key", [0, slice(None), (slice(None), 0), (slice(1, None), None), (slice(None), None, 0)])
def test_other_indices_are_refused(key):
    v = _rows(V)
    with pytest.raises(TypeError) as info:
        v[key]
    assert str(info.value) == "ChunkedRows take a boolean ChunkedRows mask, [:, None] or [:, columns] as an index"


def test_a_matrix_takes_no_new_axis_and_a_selection_no_second_index():
    m = _rows(M)
    with pytest.raises(TypeError, match="ChunkedRows take a boolean"):
        m[:, None]
    v = _rows(V)
    with pytest.raises(TypeError, match="ChunkedRows take a boolean"):
        v[v > 0][:, None]
    with pytest.raises(TypeError, match="ChunkedRows take a boolean"):
        m[_rows(V) > 0]


def test_a_matrix_of_rows_computes_and_persists():
    """A matrix of rows is a Dask array of one column chunk: its chunk ``i`` is
    the block ``(i, 0)``, computed or stored."""
    m = _rows(M)
    np.testing.assert_array_equal(np.asarray(m * 2.0), 2.0 * M)
    stored = (m - 1.0).persist()
    assert stored.shape == (7, 2)
    np.testing.assert_array_equal(np.asarray(stored), M - 1.0)
    np.testing.assert_array_equal(np.asarray(_rows(V)[:, None] * np.ones((1, 3))), V[:, None] * np.ones(3))


def test_reshape_makes_a_vector_a_column_and_leaves_a_matrix_alone():
    v, m = _rows(V), _rows(M)
    assert len(v) == 7 and len(m) == 7 and len(v[v > 0]) == 5
    for shape in [(7, 1), (-1, 1), (7, -1), (-1, -1)]:
        col = v.reshape(shape)
        assert col.shape == (7, 1)
        np.testing.assert_array_equal(np.asarray(col), V[:, None])
        assert v.reshape(*shape).shape == (7, 1)
    for shape in [(7, 2), (-1, 2), (7, -1), (-1, -1)]:
        assert m.reshape(shape) is m
    for bad, rows in [((7, 2), v), ((6, 1), v), ((7,), v), ((7, 1, 1), v), ((7, 3), m), ((14, 1), m)]:
        with pytest.raises(ValueError) as info:
            rows.reshape(bad)
        assert str(info.value) == f"ChunkedRows of shape {rows.shape} cannot take shape {bad}"
    with pytest.raises(ValueError, match=r"cannot take shape \(-1, 1\)"):
        v[v > 0].reshape(-1, 1)  # a selection has no known length


def test_a_vector_of_rows_times_a_matrix_of_rows_sums_over_the_rows():
    v, m = _rows(V), _rows(M)
    np.testing.assert_allclose(v @ m, V @ M, rtol=1e-14)
    np.testing.assert_allclose(np.matmul(v * 2.0, m), 2.0 * V @ M, rtol=1e-14)
    np.testing.assert_allclose(v @ _rows(V), V @ V, rtol=1e-14)
    assert (np.ones(7) @ m).tolist() == M.sum(axis=0).tolist()  # a constant vector of rows
    for bad in (lambda: v[v > 0] @ m, lambda: v @ _rows(V)[v > 0]):  # selections have no length per chunk
        with pytest.raises(TypeError):
            bad()
    with pytest.raises(TypeError):
        m @ m  # a matrix on the left
    other = ChunkedRows.from_dask(da.from_array(M, chunks=(4, 2)))
    with pytest.raises(ValueError) as info:
        v @ other
    assert str(info.value) == "ChunkedRows with row chunks (3, 3, 1) met a Dask array chunked (4, 3)"
    with pytest.raises(ValueError) as info:
        v + da.from_array(V, chunks=4)
    assert str(info.value) == "ChunkedRows with row chunks (3, 3, 1) met a Dask array chunked (4, 3)"


def test_an_expression_of_rows_is_a_float64_dask_array_of_one_task_per_chunk():
    import re

    for rows, shape in ((_rows(V) * 2.0, (7,)), (_rows(M) + 1.0, (7, 2))):
        array = rows.to_dask()
        assert array.dtype == np.float64 and array._meta.shape == (0,) * len(shape) and array.shape == shape
        assert re.fullmatch(r"kerndwd-rows-[0-9a-f]{32}", array.name)
        assert len(array.dask.layers[array.name]) == 3  # one task per chunk
    assert _rows(V).to_dask().name != (_rows(V) * 1.0).to_dask().name


def test_rows_convert_to_the_dtype_asked_for():
    rows = _rows(V) * 1.0
    for dtype in (None, np.float32, np.int64):
        out = np.asarray(rows, dtype=dtype)
        assert out.dtype == (np.float64 if dtype is None else dtype)
        np.testing.assert_array_equal(out, V.astype(out.dtype))


def test_rows_compute_as_float64_whatever_their_leaves_and_expression():
    out = (_rows(V) > 0.0).compute()
    assert out.dtype == np.float64  # ChunkedRows.dtype, whatever the expression
    np.testing.assert_array_equal(out, (V > 0.0).astype(float))
    single = _rows(V.astype(np.float32)).compute()  # a leaf itself, not an expression
    assert single.dtype == np.float64
    np.testing.assert_array_equal(single, V)


def test_one_integer_is_not_a_shape_of_rows():
    with pytest.raises(ValueError) as info:
        _rows(V).reshape(7)
    assert str(info.value) == "ChunkedRows of shape (7,) cannot take shape (7,)"


@pytest.mark.parametrize("matrix", [False, True], ids=["vector", "matrix"])
def test_rows_persisted_near_an_array_are_computed_beside_its_chunks(matrix, monkeypatch):
    """persist(near=X): the task of each chunk depends on X's chunk (so a cluster
    runs it, and keeps its result, where that chunk lives); without near it does not."""
    from kerndwd.engine import chunk_tasks

    seen, real = [], chunk_tasks.persist_unoptimised
    monkeypatch.setattr(chunk_tasks, "persist_unoptimised", lambda *arrays: seen.extend(arrays) or real(*arrays))
    near = da.from_array(np.ones((7, 2)), chunks=(3, 2)).persist()
    values = M if matrix else V
    for where in (near, None):
        seen.clear()
        stored = (_rows(values) * 2.0).persist(near=where)
        np.testing.assert_array_equal(np.asarray(stored), 2.0 * values)
        (lazy,) = seen
        assert (near.name in lazy.dask.dependencies[lazy.name]) == (where is not None)


def test_the_rows_of_one_array_are_that_array_unless_placed_near_another():
    array = da.from_array(V, chunks=3)
    assert ChunkedRows.from_dask(array).to_dask() is array  # no task of its own
    near = da.from_array(np.ones((7, 2)), chunks=(3, 2)).persist()
    placed = ChunkedRows.from_dask(array).to_dask(near=near)
    assert placed is not array and near.name in placed.dask.dependencies[placed.name]
    np.testing.assert_array_equal(placed.compute(), V)
    doubled = (ChunkedRows.from_dask(array) * 2.0).to_dask(near=near)
    assert near.name in doubled.dask.dependencies[doubled.name]
    np.testing.assert_array_equal(doubled.compute(), 2.0 * V)


def test_numpys_functions_on_rows_sum_mean_copy_where_and_refuse_the_rest():
    x, m = _rows(V), _rows(M)
    assert np.sum(x) == pytest.approx(V.sum(), rel=1e-15) and np.mean(x) == pytest.approx(V.mean(), rel=1e-15)
    np.testing.assert_allclose(np.sum(m, axis=0), M.sum(axis=0), rtol=1e-15)
    np.testing.assert_allclose(np.mean(m, axis=0), M.mean(axis=0), rtol=1e-15)
    c = np.copy(x)
    assert isinstance(c, ChunkedRows) and c is not x
    np.testing.assert_array_equal(np.asarray(c), V)
    np.testing.assert_array_equal(np.asarray(np.where(x > 0.0, x, 0.0)), np.where(V > 0, V, 0.0))
    for call in (lambda: np.clip(x, 0.0, 1.0), lambda: np.sum(x, keepdims=True), lambda: np.cumsum(x),
                 lambda: np.where(x > 0.0)):
        with pytest.raises(TypeError):
            call()


def test_ufuncs_take_a_dtype_and_nothing_else():
    x = _rows(V)
    np.testing.assert_allclose(np.asarray(np.add(x, 1.0, dtype=np.float64)), V + 1.0, rtol=1e-15)
    for call in (lambda: np.add.reduce(x), lambda: np.divmod(x, 2.0), lambda: np.add(x, 1.0, where=True),
                 lambda: np.add.accumulate(x)):
        with pytest.raises(TypeError):
            call()


def test_rows_that_do_not_combine_are_refused_whole():
    x, m = _rows(V), _rows(M)
    with pytest.raises(ValueError) as info:
        x[x > 0.0] + x[x > 1.0]
    assert str(info.value) == "ChunkedRows: the operands select different rows"
    with pytest.raises(ValueError) as info:
        x + m
    assert str(info.value) == ("ChunkedRows: a vector of rows meets a matrix of rows; make the vector a column "
                               "with v[:, None]")
    three = _rows(np.arange(21.0).reshape(7, 3))
    with pytest.raises(ValueError) as info:
        m + three
    assert str(info.value) == "ChunkedRows: columns [2, 3] do not broadcast"


def test_a_copy_keeps_the_selection_and_the_columns():
    x, m = _rows(V), _rows(M)
    sel = x[x > 0.0].copy()
    assert sel.sum() == pytest.approx(V[V > 0].sum(), rel=1e-15)
    mc = (m * 2.0).copy()
    assert mc.shape == (7, 2)
    np.testing.assert_allclose(mc.sum(axis=0), 2 * M.sum(axis=0), rtol=1e-15)


def test_kept_rows_keep_their_columns_and_a_leaf_is_kept_as_it_is():
    x, m = _rows(V), _rows(M)
    assert x.keep() is x
    kept = (m + 1.0).keep()
    assert kept.shape == (7, 2) and kept._expr[0] == "leaf"
    np.testing.assert_allclose(kept.sum(axis=0), (M + 1).sum(axis=0), rtol=1e-15)
    kept_v = (x * 3.0).keep()
    assert kept_v.shape == (7,) and kept_v is not x
    assert kept_v.sum() == pytest.approx(3 * V.sum(), rel=1e-15)


def test_sums_over_more_chunks_than_one_task_adds_take_a_tree_of_levels():
    """Partial sums are added 32 a task (``REDUCE_FAN_IN``): 1500 chunks of one
    row take three levels, whose tasks must not share keys."""
    from kerndwd.engine.chunk_tasks import REDUCE_FAN_IN

    assert REDUCE_FAN_IN == 32
    values = np.arange(1500.0)
    x = ChunkedRows.from_dask(da.from_array(values, chunks=1))
    assert x.sum() == values.sum()
    assert (x * 2.0).mean() == pytest.approx(2 * values.mean(), rel=1e-15)
    assert x[x > 749.5].sum() == values[750:].sum()
    m = ChunkedRows.from_dask(da.from_array(np.column_stack((values, -values)), chunks=(40, 2)))
    np.testing.assert_array_equal(m.sum(axis=0), [values.sum(), -values.sum()])


def test_a_comparison_of_rows_as_a_dask_array_computes_float64_chunks():
    x = _rows(V)
    out = (x > 0.0).to_dask().compute()
    assert out.dtype == np.float64
    np.testing.assert_array_equal(out, (V > 0).astype(float))
    assert (_rows(M) < 0.0).to_dask().compute().dtype == np.float64


def test_operands_of_every_kind_combine_with_rows():
    """0-d arrays, constant vectors of length n, rows of columns broadcast along
    a matrix, Dask matrices chunked like the rows; the rest refused by type."""
    x, m = _rows(V), _rows(M)
    np.testing.assert_allclose(np.asarray(x + np.array(2.0)), V + 2.0, rtol=1e-15)
    np.testing.assert_allclose(np.asarray(m * np.array(2.0)), M * 2.0, rtol=1e-15)
    np.testing.assert_allclose(np.asarray(x * np.full(7, 3.0)), V * 3.0, rtol=1e-15)
    np.testing.assert_allclose(np.asarray(m * np.array([1.0, 10.0])), M * [1.0, 10.0], rtol=1e-15)
    dm = da.from_array(M, chunks=(3, 2))
    np.testing.assert_allclose(np.asarray(x[:, None] * dm), V[:, None] * M, rtol=1e-15)
    np.testing.assert_allclose(np.asarray(x + da.from_array(V, chunks=3)), 2 * V, rtol=1e-15)
    with pytest.raises(TypeError) as info:
        x + "a"
    assert str(info.value).endswith("got str")
    with pytest.raises(TypeError) as info:
        x + np.zeros((2, 2, 2))
    assert str(info.value).endswith("got ndarray of shape (2, 2, 2)")


def test_selections_by_a_constant_or_a_numeric_mask_and_products_of_float32_rows():
    x = _rows(V)
    assert x[np.ones_like(x) > 0.0].sum() == pytest.approx(V.sum(), rel=1e-15)  # every row
    assert x[(x > 0.0) * 1.0].sum() == pytest.approx(V[V > 0].sum(), rel=1e-15)  # 1.0 selects, 0.0 not
    B = da.from_array(M.astype(np.float32), chunks=(3, 2))  # a float32 basis, as the Dask linear form's
    w = np.array([0.1, 0.7])
    product = ChunkedRows(("matvec", B.name, w), {B.name: B}, (3, 3, 1))
    np.testing.assert_array_equal(np.asarray(product), M.astype(np.float32).astype(np.float64) @ w)


@pytest.mark.parametrize("slice_rows", [None, 2])
def test_kept_constants_and_a_chunk_without_rows(slice_rows, monkeypatch):
    """Also with a chunk's rows evaluated two at a time (``SLICE_ROWS``)."""
    if slice_rows is not None:
        from kerndwd.engine import chunk_tasks

        monkeypatch.setattr(chunk_tasks, "SLICE_ROWS", slice_rows)
    x = _rows(V)
    ones = (np.ones_like(x) * 2.0).keep()
    assert ones.sum() == 14.0 and (ones + x).sum() == pytest.approx(14.0 + V.sum(), rel=1e-15)
    gap = ChunkedRows.from_dask(da.from_array(V, chunks=((3, 0, 4),)))
    assert gap.sum() == pytest.approx(V.sum(), rel=1e-15)
    np.testing.assert_array_equal(np.asarray(gap * 2.0), 2 * V)
