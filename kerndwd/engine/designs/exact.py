"""The exact kernel with the R package's choice of solver (``solver="exact"``, the default).

For the linear kernel, the linear form ``f = b0 + x' beta`` (Algorithm 1)
when ``n >= p`` (``n > p`` when weighted or under ``tunedwd``'s rule) or
``X`` is sparse or held by a Dask cluster, else the kernel form
``f = b0 + K alpha`` (Algorithm 2); eigenbasis majorisers unweighted,
Cholesky majorisers weighted, conjugate gradients for sparse ``X``, the
Dask linear form for rows on a cluster.  Other kernels: the kernel form on
the ``n x n`` kernel matrix, checked before it is used
(:mod:`kerndwd.engine.kernel_checks`).

R's stopping rule is the default where R fits the same model (rows in
memory); on a cluster, where R has no counterpart, the gradient rule.
"""

from __future__ import annotations

from scipy import linalg, sparse

from ..capabilities import DesignCapabilities
from ..forms import DenseLinearForm, LinearForm, SparseLinearForm
from ..kernel_checks import check_definite
from ..majorisers.iterative import LinearCG
from ..majorisers.kernel import KernelCholesky, KernelEigen
from ..majorisers.linear import LinearCholesky, LinearEigen
from ..predictors import KernelPredictor
from .base import Design, register_design
from .dask import DaskLinearForm

__all__ = ["ExactDesign"]

#: The linear kernel: in memory (dense or sparse) R's rule; on a cluster the gradient rule
_LINEAR_IN_MEMORY = DesignCapabilities(storage=("dense", "sparse", "remote"), default_stop="step")
_LINEAR_REMOTE = DesignCapabilities(storage=("dense", "sparse", "remote"), default_stop="kkt")
#: Other kernels: the n x n kernel matrix, in memory
_KERNEL = DesignCapabilities(storage=("dense",), kernel_checks=True, default_stop="step")


class ExactDesign(Design):
    """The exact kernel with the R package's choice of solver (see the module docstring).

    Parameters
    ----------
    random_state : object
        Accepted as every design is given one; nothing here draws.

    Examples
    --------
    >>> import numpy as np, kerndwd
    >>> rng = np.random.default_rng(0)
    >>> X = rng.standard_normal((30, 2)); y = np.where(X[:, 0] > 0, 1, -1)
    >>> kerndwd.fit(X, y, [0.1], kern=kerndwd.vanilladot()).solver  # n >= p: R's linear routine
    'ldwd'
    >>> kerndwd.fit(X, y, [0.1], kern=kerndwd.rbfdot(1.0)).solver
    'kdwd'
    """

    name = "exact"
    selected_by = "solver"

    def capabilities(self, kern, storage):
        if not kern.is_linear:
            return _KERNEL
        return _LINEAR_REMOTE if storage == "remote" else _LINEAR_IN_MEMORY

    @staticmethod
    def solves_in_beta(problem, n=None):
        """R's rule: the linear form for the linear kernel when ``n >= p``
        (``n > p`` when weighted, or always under ``tunedwd``'s rule); ``n``
        defaults to the problem's rows (a fold passes its training size)."""
        if not problem.kern.is_linear:
            return False
        if problem.storage != "dense":
            return True
        n = problem.n if n is None else n
        strict = problem.loss.weighted or problem.linear_rule == "tunedwd"
        return n > problem.p if strict else n >= problem.p

    def blas_work(self, problem):
        n, p = problem.n, problem.p
        if problem.storage == "remote":
            return 0.0, 0.0  # the client solves (p + 1) systems; the workers set their own threads
        if self.solves_in_beta(problem):
            return 2.0 * n * p * p, 4.0 * n * p  # the Gram matrix Z'Z; Z'z and Z step
        # the eigendecomposition (or Cholesky factor) of K; its passes (U'z and U step) are not
        # counted: at n = 1000 a second thread for them alone made the path 1.3x slower
        return 10.0 * n ** 3, 0.0

    def prepare(self, problem, cache, folds):
        if any(not self.solves_in_beta(problem, train.size) for train, _ in folds):
            cache.kernel_matrix()

    def majoriser(self, problem, cache):
        X, loss, gam = problem.X, problem.loss, problem.gam
        if self.solves_in_beta(problem):
            if sparse.issparse(X):
                return LinearCG(SparseLinearForm(X), loss, gam)
            # one lambda, or weights: a factor per lambda; a path: one eigendecomposition (R's ldwd)
            factor = loss.weighted or problem.lambdas.size == 1
            if problem.storage == "remote":  # rows on a Dask cluster: see engine/designs/dask.py
                form = DaskLinearForm(X)
                if factor:
                    return LinearCholesky(form, loss, gam)
                return LinearEigen(form, loss, gam, gram_eig=cache.memo("gram_eigh", lambda: linalg.eigh(form.gram())))
            if factor:
                return LinearCholesky(LinearForm(X) if loss.weighted else DenseLinearForm(X), loss, gam)
            form = DenseLinearForm(X)
            return LinearEigen(form, loss, gam,
                               gram_eig=lambda: cache.memo("gram_eigh", lambda: linalg.eigh(form.gram())))
        K = cache.kernel_matrix()  # checked: finite, and k(x, x) = 1 where it must be
        predictor = KernelPredictor(problem.kern, X)
        if loss.weighted:
            # (the unweighted route checks the eigenvalues it computes)
            cache.memo("definite", lambda: check_definite(K, problem.kern))
            return KernelCholesky(K, loss, gam, predictor)
        return KernelEigen(K, loss, gam, predictor, eig=cache.kernel_eigh())


register_design(ExactDesign)
