"""What a fit is a fit of (``Problem.fingerprint``), and the storage kind of rows.

The fingerprint names the kernel, q, the design with its options and seed,
and a digest of the bytes of the rows, the labels and the weights: the same
arrays give the same digest, a change to any of them (rows permuted against
the labels included) another one.
Rows held by Dask have no digest.
"""

import numpy as np
import pytest
from scipy import sparse

import kerndwd
from kerndwd.engine import Problem, make_design
from kerndwd.engine.capabilities import storage_of


def _problem(X, y, weights=None, q=1.0, design=None, kern=None):
    return Problem.from_arrays(X, y, [0.1], q=q, weights=weights, kern=kern, design=design)


@pytest.fixture
def data():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((20, 3))
    y = np.where(rng.standard_normal(20) > 0, 1.0, -1.0)
    return X, y


def test_the_same_arrays_give_the_same_fingerprint(data):
    X, y = data
    a = _problem(X, y).fingerprint()
    b = _problem(X.copy(), y.copy()).fingerprint()
    assert a == b
    assert set(a) == {"kern", "qval", "design", "rows"}
    assert isinstance(a["rows"], str) and len(a["rows"]) == 32  # 16 bytes of blake2b, in hex
    assert a["qval"] == 1.0 and a["kern"] == repr(kerndwd.vanilladot())


def test_each_part_of_the_data_moves_the_digest(data):
    X, y = data
    base = _problem(X, y).fingerprint()["rows"]
    X2 = X.copy()
    X2[3, 1] += 1.0  # a column sum moves
    y2 = y.copy()
    y2[0] = -y2[0]
    w = np.ones(20)
    w2 = w.copy()
    w2[5] = 2.0
    digests = [base, _problem(X2, y).fingerprint()["rows"], _problem(X, y2).fingerprint()["rows"],
               _problem(X, y, weights=w2).fingerprint()["rows"], _problem(X[:, :2], y).fingerprint()["rows"],
               _problem(np.vstack((X, np.zeros((1, 3)))), np.r_[y, 1.0]).fingerprint()["rows"]]
    assert len(set(digests)) == len(digests)
    # unit weights are data too: they are hashed, so they differ from no weights
    assert _problem(X, y, weights=w).fingerprint()["rows"] != base


def test_the_design_its_options_and_seed_are_named(data):
    X, y = data
    plain = _problem(X, y, design=make_design("exact", {})).fingerprint()
    assert plain["design"] == "solver='exact'"
    nys = _problem(X, y, kern=kerndwd.rbfdot(1.0),
                   design=make_design("nystroem", {"n_components": 5}, "approx", random_state=3)).fingerprint()
    assert nys["design"] == "approx='nystroem', n_components=5, random_state=3"
    assert _problem(X, y, q=2.0).fingerprint()["qval"] == 2.0
    bcd = _problem(X, y, kern=kerndwd.rbfdot(1.0),
                   design=make_design("bcd", {"cache_kernel": False, "block_size": 4})).fingerprint()
    assert bcd["design"] == "solver='bcd', block_size=4, cache_kernel=False"  # options sorted by name


def test_dask_rows_have_no_digest(data):
    da = pytest.importorskip("dask.array")
    X, y = data
    fp = _problem(da.from_array(X, chunks=10), y).fingerprint()
    assert fp["rows"] is None and fp["kern"] == repr(kerndwd.vanilladot())


def test_the_storage_kind_of_rows():
    assert storage_of(np.ones((2, 2))) == "dense"
    assert storage_of(np.ones((2, 2), dtype=np.float32)) == "dense"
    assert storage_of(sparse.csr_matrix(np.eye(2))) == "sparse"
    assert storage_of(np.ones((2, 2)).view(type("Rows", (np.ndarray,), {}))) == "dense"  # a subclass
    da = pytest.importorskip("dask.array")
    assert storage_of(da.ones((2, 2), chunks=1)) == "remote"


def test_the_shape_separates_column_sums_from_labels():
    """20 x 3 rows and 19 x 4 rows whose fourth column sums to the first label
    have the same column sums followed by the labels: the digest still tells
    them apart."""
    rng = np.random.default_rng(1)
    X = rng.integers(-5, 6, size=(20, 3)).astype(float)  # integer sums: exact in any order
    y = np.where(rng.standard_normal(20) > 0, 1.0, -1.0)
    X2 = np.zeros((19, 4))
    X2[:, :3] = X[:19]
    X2[0, :3] += X[19]
    X2[0, 3] = y[0]
    np.testing.assert_array_equal(np.r_[X2.sum(axis=0), y[1:]], np.r_[X.sum(axis=0), y])
    assert _problem(X, y).fingerprint()["rows"] != _problem(X2, y[1:]).fingerprint()["rows"]


def test_rows_permuted_against_the_labels_move_the_digest(data):
    """The column sums, the labels and the weights are those of the permuted
    rows too: only the rows' own bytes tell the two apart."""
    X, y = data
    order = np.random.default_rng(2).permutation(20)
    np.testing.assert_allclose(X[order].sum(axis=0), X.sum(axis=0), rtol=1e-14)
    assert _problem(X[order], y).fingerprint()["rows"] != _problem(X, y).fingerprint()["rows"]
    swapped = X.copy()
    swapped[[0, 1]] = swapped[[1, 0]]  # two rows exchanged
    assert _problem(swapped, y).fingerprint()["rows"] != _problem(X, y).fingerprint()["rows"]


def test_sparse_rows_digest_their_entries_whatever_their_order_in_storage(data):
    X, y = data
    X = np.where(np.abs(X) > 0.8, X, 0.0)
    csr = sparse.csr_matrix(X)
    shuffled = csr.copy()
    for i in range(20):  # the same matrix with each row's entries stored in reverse
        lo, hi = shuffled.indptr[i], shuffled.indptr[i + 1]
        shuffled.indices[lo:hi] = shuffled.indices[lo:hi][::-1].copy()
        shuffled.data[lo:hi] = shuffled.data[lo:hi][::-1].copy()
    shuffled.has_sorted_indices = False
    np.testing.assert_array_equal(shuffled.toarray(), X)
    base = _problem(csr, y).fingerprint()["rows"]
    assert _problem(shuffled, y).fingerprint()["rows"] == base
    assert _problem(sparse.csr_matrix(X[::-1]), y).fingerprint()["rows"] != base
    assert _problem(X, y).fingerprint()["rows"] != base  # dense and sparse storage: different fits
