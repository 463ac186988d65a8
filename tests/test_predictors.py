"""The predictors (:mod:`kerndwd.engine.predictors`) against their definitions.

* ``beta`` is the coefficients after the intercept (linear), ``x' alpha``
  (the inner-product kernel) or None.
* A kernel predictor's block of new rows holds at most ``PREDICT_ENTRIES``
  kernel values (one row at least, ``PREDICT_BLOCK`` at most), and the
  blocks give the unblocked product; a kernel already formed (``cross``)
  is used as it is.
* The blocks partition the new rows: each row is formed once.
* A copy of a kernel predictor whose rows are fetched on demand carries the
  rows themselves, not the way to fetch them.
* Features, or linear decision values, that overflow at new rows are
  refused naming them, without a floating-point warning first.
"""

import pickle

import numpy as np
import pytest

import kerndwd
from kerndwd.engine import predictors
from kerndwd.engine.predictors import FeaturePredictor, KernelPredictor, LinearPredictor
from kerndwd.kernels import kernel_matrix

rng = np.random.default_rng(0)
X = rng.standard_normal((30, 4))
NEWX = rng.standard_normal((7, 4))
ALPHA = rng.standard_normal((31, 3))  # intercept first, three lambdas


def test_beta_is_what_follows_the_intercept_in_the_input_columns():
    a = rng.standard_normal((5, 2))
    np.testing.assert_array_equal(LinearPredictor(4).beta(a), a[1:])
    np.testing.assert_allclose(KernelPredictor(kerndwd.vanilladot(), X).beta(ALPHA), X.T @ ALPHA[1:], rtol=1e-12)
    assert KernelPredictor(kerndwd.rbfdot(0.5), X).beta(ALPHA) is None


def test_kernel_decision_values_are_the_expansion_and_a_given_kernel_is_used_as_it_is():
    kern = kerndwd.rbfdot(0.3)
    pred = KernelPredictor(kern, X)
    expected = ALPHA[0] + kernel_matrix(kern, NEWX, X) @ ALPHA[1:]
    np.testing.assert_allclose(pred.decision(NEWX, ALPHA), expected, rtol=1e-12, atol=1e-12)
    K = rng.standard_normal((7, 30))  # any matrix: the predictor must not form its own
    np.testing.assert_array_equal(pred.decision(NEWX, ALPHA, cross=lambda: K), ALPHA[0] + K @ ALPHA[1:])


@pytest.mark.parametrize("entries, block, n, expected", [
    (10, 2048, 30, 1),     # more training rows than entries: one new row a block
    (10, 2048, 4, 2),      # 10 // 4
    (10 ** 6, 3, 30, 3),   # capped at PREDICT_BLOCK
])
def test_a_block_of_new_rows_holds_at_most_predict_entries_kernel_values(entries, block, n, expected, monkeypatch):
    seen = []
    real = predictors.blocked_expansion

    def recording(rows_to_basis, newx, intercept, coef, rows=predictors.PREDICT_BLOCK):
        seen.append(rows)
        return real(rows_to_basis, newx, intercept, coef, rows)

    monkeypatch.setattr(predictors, "PREDICT_ENTRIES", entries)
    monkeypatch.setattr(predictors, "PREDICT_BLOCK", block)
    monkeypatch.setattr(predictors, "blocked_expansion", recording)
    kern = kerndwd.laplacedot(0.2)
    out = KernelPredictor(kern, X[:n]).decision(NEWX, ALPHA[:n + 1])
    assert seen == [expected]
    np.testing.assert_allclose(out, ALPHA[0] + kernel_matrix(kern, NEWX, X[:n]) @ ALPHA[1:n + 1], rtol=1e-12,
                               atol=1e-12)


@pytest.mark.parametrize("rows", [1, 3, 7, 50])
def test_the_blocks_partition_the_new_rows(rows):
    """Each new row is formed once, in consecutive blocks of ``rows`` rows."""
    blocks = []

    def basis(block):
        blocks.append(block.copy())
        return block * 2.0

    coef = rng.standard_normal((4, 2))
    out = predictors.blocked_expansion(basis, NEWX, 0.5, coef, rows)
    np.testing.assert_allclose(out, 0.5 + (2.0 * NEWX) @ coef, rtol=1e-12, atol=1e-12)
    assert [b.shape[0] for b in blocks] == [min(rows, 7 - s) for s in range(0, 7, rows)]
    np.testing.assert_array_equal(np.vstack(blocks), NEWX)


def test_a_copy_of_a_predictor_that_fetches_its_rows_carries_the_rows():
    fetched = []

    def fetch():
        fetched.append(1)
        return X

    pred = KernelPredictor(kerndwd.rbfdot(0.3), fetch, n_features=4)
    state = pred.__getstate__()
    assert set(state) == {"kern", "_x", "_fetch", "n_features"}
    assert state["_fetch"] is None and fetched == [1]
    np.testing.assert_array_equal(state["_x"], X)
    copy = pickle.loads(pickle.dumps(pred))  # the local fetch function could not be pickled
    np.testing.assert_array_equal(copy.decision(NEWX, ALPHA), pred.decision(NEWX, ALPHA))
    assert fetched == [1]


class _Huge:
    def transform(self, rows):
        return np.full((rows.shape[0], 3), 1e300)


def test_features_that_overflow_at_new_rows_are_refused_naming_them():
    """A ValueError that names them, and no floating-point warning before it (the
    default test run turns a RuntimeWarning into an error)."""
    pred = FeaturePredictor(_Huge(), 4)
    with pytest.raises(ValueError, match=r"^the features of newx overflow: the decision values at newx are not "
                                         r"finite; rescale newx as the training data were$"):
        pred.decision(NEWX, np.full((4, 1), 1e300))
    assert pred.beta(ALPHA) is None
    with pytest.raises(ValueError, match=r"^the linear decision values overflow: "):
        LinearPredictor(4).decision(np.full((2, 4), 1e300), np.full((5, 1), 1e300))
