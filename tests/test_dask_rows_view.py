"""What a feature map fitted on Dask rows sees (:mod:`kerndwd.engine.designs.dask`):
a view that gathers only the rows asked for, in the order asked, and warns
when all of them are gathered; and the features formed chunk by chunk.
"""

import warnings

import numpy as np
import pytest

da = pytest.importorskip("dask.array")

from kerndwd.engine.designs.dask import DaskRowsView, dask_feature_matrix, map_input  # noqa: E402
from kerndwd.engine.feature_maps import FourierMap  # noqa: E402

X = np.arange(20.0).reshape(10, 2)


def _view():
    return DaskRowsView(da.from_array(X, chunks=(4, 2)))


def test_the_view_describes_the_rows():
    view = _view()
    assert view.shape == (10, 2) and view.ndim == 2 and view.dtype == np.float64 and view.size == 20
    assert len(view) == 10
    assert map_input(da.from_array(X, chunks=(4, 2))).shape == (10, 2)
    assert type(map_input(da.from_array(X, chunks=(4, 2)))) is DaskRowsView
    assert map_input(X) is X


@pytest.mark.parametrize("key", [np.array([7, 0, 3]), [9, 9, 1], slice(2, 6), 4, np.arange(10) % 3 == 0,
                                 (np.array([5, 1]), 1), (slice(None, 3), slice(0, 1)), (2, 0)])
def test_rows_are_gathered_as_asked(key):
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no whole gather
        got = _view()[key]
    rows = key[0] if isinstance(key, tuple) else key
    rows = np.asarray(rows) if isinstance(rows, list) else rows
    expected = X[rows]
    if isinstance(key, tuple):
        expected = expected[(slice(None),) + key[1:]] if np.ndim(expected) > 1 else expected[key[1:]]
    np.testing.assert_array_equal(got, expected)


def test_gathering_every_row_warns():
    with pytest.warns(UserWarning, match="a feature map was fitted on all 10 rows of a Dask X gathered to the client"):
        out = np.asarray(_view())
    np.testing.assert_array_equal(out, X)
    with pytest.warns(UserWarning):
        low = np.asarray(_view(), dtype=np.float32)
    assert low.dtype == np.float32


def test_features_are_formed_chunk_by_chunk():
    rng = np.random.default_rng(0)
    fmap = FourierMap(rng.normal(size=(2, 6)), rng.uniform(0, 6, 6))
    B = dask_feature_matrix(fmap, da.from_array(X, chunks=(4, 2)))
    assert B.chunks == ((4, 4, 2), (6,))
    np.testing.assert_allclose(B.compute(), fmap.transform(X), rtol=1e-14)
