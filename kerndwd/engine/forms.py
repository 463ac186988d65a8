"""The forms ``f = b0 + B theta`` of the engine (see :class:`kerndwd.engine.contract.Form`)."""

from __future__ import annotations

import numpy as np

__all__ = ["LinearForm", "KernelForm", "SparseLinearForm"]


class LinearForm:
    """``f = b0 + X beta``, ``||f||^2 = beta' beta`` (``X`` dense, or features ``Phi``)."""

    def __init__(self, X):
        self.X = X
        self.n = X.shape[0]

    def apply(self, theta):
        return self.X @ theta

    def apply_t(self, z):
        return self.X.T @ z

    def penalty(self, theta, applied=None):
        return float(theta @ theta)

    def penalty_grad(self, theta, applied=None):
        return 2.0 * theta


class SparseLinearForm(LinearForm):
    """``f = b0 + X beta`` for a ``scipy.sparse`` ``X``.

    Products always come back as flat float arrays, whatever the sparse
    container (``spmatrix`` products can return ``np.matrix``).
    """

    def __init__(self, X):
        super().__init__(X)
        self._Xt = X.T  # a transposed view (CSR <-> CSC), no copy of the data

    def apply(self, theta):
        return np.asarray(self.X @ theta, dtype=float).reshape(-1)

    def apply_t(self, z):
        return np.asarray(self._Xt @ z, dtype=float).reshape(-1)


class KernelForm:
    """``f = b0 + K alpha``, ``||f||^2 = alpha' K alpha``."""

    def __init__(self, K):
        self.K = K
        self.n = K.shape[0]

    def apply(self, theta):
        return self.K @ theta

    def apply_t(self, z):
        return self.K @ z  # K is symmetric

    # ``applied`` = K theta when the caller has it already (it is f - b0)
    def penalty(self, theta, applied=None):
        return float(theta @ (self.K @ theta if applied is None else applied))

    def penalty_grad(self, theta, applied=None):
        return 2.0 * (self.K @ theta if applied is None else applied)
