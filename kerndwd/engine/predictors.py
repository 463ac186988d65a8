"""Predictors: decision values at new rows from a fitted ``alpha``
(see :class:`kerndwd.engine.contract.Predictor`).

A fitted path (and the scikit-learn estimator) stores one of these; it is
everything prediction needs, and it holds its own copy of any training data
it uses, so later changes to the caller's arrays never change a prediction.
"""

from __future__ import annotations

import numpy as np

from .cache import quiet_kernel

__all__ = ["LinearPredictor", "KernelPredictor", "FeaturePredictor", "PREDICT_BLOCK", "PREDICT_ENTRIES"]

#: Rows of ``newx`` per block when forming ``K(newx, x)`` or features: bounds
#: memory at about ``8 * PREDICT_BLOCK * n`` bytes.
PREDICT_BLOCK = 2048
#: At most this many kernel values per block of ``K(newx, x)`` (32 MB): with
#: more than ``PREDICT_BLOCK`` training rows a block holds fewer new rows, so
#: prediction never forms an array that grows like ``n^2``.
PREDICT_ENTRIES = PREDICT_BLOCK * PREDICT_BLOCK


def _dense_product(newx, coef):
    """``newx @ coef`` as a dense ndarray, whatever ``newx`` is (sparse included)."""
    return np.asarray(newx @ coef)


class LinearPredictor:
    """``f = b0 + x' beta``."""

    coef_space = "beta"

    def __init__(self, n_features):
        self.n_features = int(n_features)

    def decision(self, newx, alpha, cross=None):
        return alpha[0] + _dense_product(newx, alpha[1:])

    def beta(self, alpha):
        return alpha[1:]


class KernelPredictor:
    """``f = b0 + sum_j alpha_j k(x_j, x)`` over the training rows ``x_j``."""

    coef_space = "kernel"

    def __init__(self, kern, x):
        self.kern = kern
        # a private copy: the model must not change when the caller's array
        # does (and K(newx, x) then never hits numpy's X @ X.T shortcut)
        self.x = np.array(x, dtype=float, order="C", copy=True)
        self.n_features = self.x.shape[1]

    def decision(self, newx, alpha, cross=None):
        if cross is not None:
            return alpha[0] + cross() @ alpha[1:]
        rows = max(1, min(PREDICT_BLOCK, PREDICT_ENTRIES // self.x.shape[0]))
        links = blocked_expansion(lambda block: quiet_kernel(self.kern, block, self.x), newx, alpha[0], alpha[1:],
                                  rows)
        if not np.isfinite(links).all():
            raise ValueError(f"kern={self.kern!r} overflows between newx and the training rows: "
                             "the decision values are not finite; rescale newx as the training data were")
        return links

    def beta(self, alpha):
        """``x' alpha`` when the kernel is the inner product, else None."""
        return self.x.T @ alpha[1:] if self.kern.is_linear else None


class FeaturePredictor:
    """``f = b0 + phi(x)' theta`` for a fitted feature map ``phi``."""

    coef_space = "features"

    def __init__(self, feature_map, n_features):
        self.feature_map = feature_map
        self.n_features = int(n_features)

    def decision(self, newx, alpha, cross=None):
        return blocked_expansion(self.feature_map.transform, newx, alpha[0], alpha[1:])

    def beta(self, alpha):
        return None


def blocked_expansion(rows_to_basis, newx, intercept, coef, rows=PREDICT_BLOCK):
    """``intercept + B(newx) coef`` with ``B`` formed in blocks of ``rows`` rows
    (default :data:`PREDICT_BLOCK`), so memory stays bounded for large ``newx``."""
    out = np.empty((newx.shape[0], coef.shape[1]))
    for start in range(0, newx.shape[0], rows):
        block = newx[start:start + rows]
        out[start:start + rows] = intercept + rows_to_basis(block) @ coef
    return out
