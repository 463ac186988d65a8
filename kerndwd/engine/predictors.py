"""Predictors: decision values at new rows from a fitted ``alpha`` (:class:`Predictor`).

A fitted path (and the scikit-learn estimator) stores one of these; it is
everything prediction needs, and it holds its own copy of any training data
it uses, so later changes to the caller's arrays never change a prediction.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

import numpy as np

from .forms import double_product
from .kernel_checks import quiet_kernel

__all__ = ["Predictor", "COEF_SPACES", "LinearPredictor", "KernelPredictor", "FeaturePredictor", "PREDICT_BLOCK",
           "PREDICT_ENTRIES"]

#: What the rows after the intercept of a fitted ``alpha`` are:
#: ``"beta"``: coefficients of the input columns (``f = b0 + x' beta``);
#: ``"kernel"``: coefficients of the training rows (``f = b0 + sum_j alpha_j k(x_j, x)``);
#: ``"features"``: coefficients of a feature map (``f = b0 + phi(x)' theta``).
COEF_SPACES = ("beta", "kernel", "features")


@runtime_checkable
class Predictor(Protocol):
    """Decision values at new rows from intercept-first coefficients."""

    #: number of input columns a new row must have
    n_features: int
    #: one of :data:`COEF_SPACES`
    coef_space: str

    def decision(self, newx, alpha, cross=None) -> np.ndarray:
        """``b0 + ...`` at the rows of ``newx`` for each column of ``alpha``
        (shape (ncoef, L)); returns shape (m, L).  ``cross``, when given, is a
        zero-argument callable returning the kernel between ``newx`` and the
        training rows, already formed (cross-validation slices it from one
        kernel matrix); predictors that need no kernel ignore it.  Raises
        ``ValueError`` naming ``newx`` when the values are not finite."""

    def beta(self, alpha) -> np.ndarray | None:
        """Coefficients ``beta`` (shape (p, L)) of the input columns when the fit
        is linear in ``x``, else None."""

#: Rows of ``newx`` per block when forming ``K(newx, x)`` or features: bounds
#: memory at about ``8 * PREDICT_BLOCK * n`` bytes.
PREDICT_BLOCK = 2048
#: At most this many kernel values per block of ``K(newx, x)`` (32 MB): with
#: more than ``PREDICT_BLOCK`` training rows a block holds fewer new rows, so
#: prediction never forms an array that grows like ``n^2``.
PREDICT_ENTRIES = PREDICT_BLOCK * PREDICT_BLOCK


def _finite(what, compute):
    """``compute()``, the decision values at ``newx``, or ``ValueError`` naming
    ``newx`` when they overflowed (computed without a floating-point warning:
    the error is the report)."""
    with np.errstate(over="ignore", invalid="ignore"):
        links = compute()
    if not np.isfinite(links).all():
        raise ValueError(f"{what} overflow: the decision values at newx are not finite; rescale newx as the "
                         "training data were")
    return links


def _dense_product(newx, coef):
    """``newx @ coef`` as a dense ndarray, whatever ``newx`` is (sparse included)."""
    return np.asarray(newx @ coef)


class LinearPredictor:
    """``f = b0 + x' beta``."""

    coef_space = "beta"

    def __init__(self, n_features):
        self.n_features = int(n_features)

    def decision(self, newx, alpha, cross=None):
        return _finite("the linear decision values", lambda: alpha[0] + _dense_product(newx, alpha[1:]))

    def beta(self, alpha):
        return alpha[1:]


class KernelPredictor:
    """``f = b0 + sum_j alpha_j k(x_j, x)`` over the training rows ``x_j``.

    ``x`` is the rows, or a zero-argument callable returning them (then
    ``n_features`` is given): the rows are fetched when first used."""

    coef_space = "kernel"

    def __init__(self, kern, x, n_features=None):
        self.kern = kern
        if callable(x):  # rows held elsewhere (a Dask cluster): fetched when first wanted
            self._x, self._fetch, self.n_features = None, x, int(n_features)
        else:
            self._x, self._fetch = self._own(x), None
            self.n_features = self._x.shape[1]

    @staticmethod
    def _own(x):
        # a private copy: the model must not change when the caller's array
        # does (and K(newx, x) then never hits numpy's X @ X.T shortcut)
        return np.array(x, dtype=float, order="C", copy=True)

    @property
    def x(self):
        """The training rows, shape (n, p): a fit on rows held by a Dask cluster
        fetches them here on the first prediction (or copy of the predictor),
        not during the fit."""
        if self._x is None:
            self._x, self._fetch = self._own(self._fetch()), None
        return self._x

    def __getstate__(self):
        # a copy (a pickle, a Dask task) carries the rows, not a way to reach the cluster
        return {**self.__dict__, "_x": self.x, "_fetch": None}

    def decision(self, newx, alpha, cross=None):
        if cross is not None:
            return alpha[0] + double_product(cross(), alpha[1:])  # a float32 slice is widened by blocks
        rows = max(1, min(PREDICT_BLOCK, PREDICT_ENTRIES // self.x.shape[0]))
        return _finite(f"kern={self.kern!r} between newx and the training rows",
                       lambda: blocked_expansion(lambda block: quiet_kernel(self.kern, block, self.x), newx,
                                                 alpha[0], alpha[1:], rows))

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
        return _finite("the features of newx",
                       lambda: blocked_expansion(self.feature_map.transform, newx, alpha[0], alpha[1:]))

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
