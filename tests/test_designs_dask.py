"""The linear form of a Dask basis, the features formed on the rows' chunks and
the decision values at Dask rows (:mod:`kerndwd.engine.designs.dask`), each
against what it defines, computed densely, on Dask's default scheduler."""

import numpy as np
import pytest

da = pytest.importorskip("dask.array")

from kerndwd.engine.chunked import ChunkedRows  # noqa: E402
from kerndwd.engine.designs.dask import DaskLinearForm, dask_decision, dask_feature_matrix  # noqa: E402
from kerndwd.engine.predictors import LinearPredictor  # noqa: E402

RNG = np.random.default_rng(11)
B = RNG.standard_normal((50, 3))
W = RNG.uniform(0.5, 2.0, 50)
# float32 values whose float32 products lose about 1e-7 of their size
B32 = (1.0 + 1e-3 * RNG.standard_normal((50, 3))).astype(np.float32)


def _rows(v, chunks=12):
    return ChunkedRows.from_dask(da.from_array(v, chunks=chunks))


def _dense_gram(b, w):
    Z = np.column_stack([np.ones(len(b)), b.astype(float)])
    return Z.T @ (w[:, None] * Z)


def test_the_form_keeps_its_chunks_as_integers_and_refuses_what_it_cannot_reduce():
    form = DaskLinearForm(da.from_array(B, chunks=(12, 3)))
    assert form.chunks == (12, 12, 12, 12, 2) and all(type(c) is int for c in form.chunks)
    assert form.n == 50
    with pytest.raises(ValueError, match="^DaskLinearForm needs B with known row chunks and a single column chunk$"):
        DaskLinearForm(da.from_array(B, chunks=(12, 2)))
    Bd = da.from_array(B, chunks=(12, 3))
    with pytest.raises(ValueError, match="known row chunks"):
        DaskLinearForm(Bd[Bd[:, 0] > -10])  # a mask: the row count of each chunk is unknown


@pytest.mark.parametrize("weighted", [False, True], ids=["plain", "weighted"])
def test_gram_and_squared_norms_are_the_dense_ones_in_double_precision_for_float32_rows(weighted):
    """Each chunk is upcast before its products: the sums equal the float64
    products of the float32 values to rounding, not to float32's 1e-7."""
    form = DaskLinearForm(da.from_array(B32, chunks=(12, 3)))
    w = W if weighted else np.ones(50)
    G = form.gram(_rows(W) if weighted else None)
    assert G.dtype == np.float64 and G.shape == (4, 4)
    np.testing.assert_allclose(G, _dense_gram(B32, w), rtol=1e-13)
    norms = form.weighted_sq_norms(_rows(w))
    assert norms.shape == (4,)
    np.testing.assert_allclose(norms, np.diag(_dense_gram(B32, w)), rtol=1e-13)


def test_products_with_one_column_per_lambda():
    form = DaskLinearForm(da.from_array(B, chunks=(12, 3)))
    theta = RNG.standard_normal((3, 2))
    applied = form.apply(theta)
    assert isinstance(applied, ChunkedRows) and applied.shape == (50, 2)
    np.testing.assert_allclose(applied.compute(), B @ theta, rtol=1e-13)
    vector = form.apply(theta[:, 0])
    assert vector.shape == (50,)
    np.testing.assert_allclose(vector.compute(), B @ theta[:, 0], rtol=1e-13)
    Z = RNG.standard_normal((50, 2))
    zz = form.ztmul(_rows(Z, chunks=(12, 2)))
    assert zz.shape == (4, 2)
    np.testing.assert_allclose(zz, np.vstack([Z.sum(axis=0), B.T @ Z]), rtol=1e-13)
    np.testing.assert_allclose(form.apply_t(_rows(Z[:, 0])), B.T @ Z[:, 0], rtol=1e-13)


class _Squares:
    def __init__(self, dtype=np.float64):
        self.dtype = dtype

    def transform(self, rows):
        return np.column_stack([rows, rows ** 2]).astype(self.dtype)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_features_are_formed_chunk_by_chunk_in_the_maps_dtype(dtype):
    X = da.from_array(B, chunks=(12, 3))
    Phi = dask_feature_matrix(_Squares(dtype), X)
    # known before anything is computed: rows chunked as X's, one column chunk of m = 6
    assert Phi.shape == (50, 6) and Phi.chunks == ((12, 12, 12, 12, 2), (6,)) and Phi.dtype == dtype
    assert Phi._meta.shape == (0, 0) and Phi._meta.dtype == dtype
    got = Phi.compute()
    assert got.dtype == dtype
    np.testing.assert_array_equal(got, np.column_stack([B, B ** 2]).astype(dtype))
    # persisted: one stored chunk per row chunk, nothing left to compute
    assert len(Phi.dask) == 5


def test_the_same_map_on_the_same_rows_names_the_same_features():
    """The map enters the graph as one value named by its contents, so the
    features of one map on one X have one name (Dask computes them once)."""
    X, fmap = da.from_array(B, chunks=(12, 3)), _Squares()
    assert dask_feature_matrix(fmap, X).name == dask_feature_matrix(fmap, X).name
    predictor, alpha = LinearPredictor(3), np.ones((4, 1))
    assert dask_decision(predictor, X, alpha).name == dask_decision(predictor, X, alpha).name


@pytest.mark.parametrize("bad", [lambda rows: rows.ravel(), lambda rows: np.vstack([rows, rows])],
                         ids=["one-dimensional", "two-rows"])
def test_a_transform_without_one_row_of_features_per_row_is_refused(bad):
    class Bad:
        transform = staticmethod(bad)

    with pytest.raises(ValueError, match=r"^the feature map's transform returned shape \(\d+,( \d+)?\) for one row; "
                                         r"expected \(1, m\)$"):
        dask_feature_matrix(Bad(), da.from_array(B, chunks=(12, 3)))


def test_decision_values_at_dask_rows_are_lazy_with_one_column_per_lambda():
    X = da.from_array(B, chunks=(12, 3))
    alpha = np.array([[1, -2], [2, 0], [0, 1], [-1, 3]])  # two lambdas (X has 3 columns); integers
    D = dask_decision(LinearPredictor(3), X, alpha)
    assert D.shape == (50, 2) and D.chunks == ((12, 12, 12, 12, 2), (2,)) and D.dtype == np.float64
    got = D.compute()
    assert got.dtype == np.float64
    np.testing.assert_allclose(got, alpha[0] + B @ alpha[1:], rtol=1e-13)
    # a column's values are the chunk's own: the lazy array slices like the values
    np.testing.assert_allclose(D[:, 1].compute(), got[:, 1], rtol=0)
