"""The exact kernel on the kernel matrix, solved by preconditioned conjugate gradients (``solver="cg"``).

The ``n x n`` kernel matrix is formed once (shared, like the default
solver's, across folds, q values and classes) but never decomposed: the
default solver's eigendecomposition costs about ``10 n^3`` operations
(minutes at ``n = 10^4``, hours at ``5 10^4``), where this design's
Newton iterations cost a few tens of products with ``K`` each.  Newton's
equations and the MM step are solved by conjugate gradients preconditioned
by a Nystrom approximation of ``K`` on rows chosen by pivoted Cholesky
(:mod:`kerndwd.engine.kernel_cg`).  The fit is the exact kernel fit: the
same optimum as the default solver (R has no such solver, so the gradient
rule is the default).

Memory: the kernel matrix (``8 n^2`` bytes) plus ``3 n m`` numbers for the
preconditioner (``m = rank``, :func:`kerndwd.engine.kernel_cg.default_rank`);
from :data:`SINGLE_MIN_ROWS` rows, a float32 copy of the kernel matrix
(``4 n^2`` bytes more) where both fit the memory budget, on which the
Newton directions' conjugate gradients run at half the memory traffic
(:mod:`kerndwd.engine.kernel_cg`, "Single precision").

Where the float64 matrix does not fit the memory budget but a float32 one
does (``precision="single"``, which is also what ``precision=None`` picks
then: ``4 n^2 + 16 n m`` bytes, e.g. 11 GB at ``n = 5 10^4``
against 22 GB), the kernel matrix is held in float32 only: it is formed by
blocks of rows in double precision and rounded, and every product that
defines the iterate (the gradient, the change of ``f``, the MM step) is the
double-precision product of its float32 values.  The fit is then the exact
fit of the kernel rounded to float32: entries off by at most ``6e-8``
relatively; on a 300-row test problem the objective moves by under
``1e-8`` relatively and the decision values by under ``1e-6`` of their
largest for lambda down to ``1e-4`` (``5e-7`` and ``3e-5`` at ``1e-6``),
far below any statistical difference.
"""

from __future__ import annotations

import numpy as np

from ..._scalars import check_integer
from ..cache import keeps, memory_budget
from ..capabilities import DesignCapabilities
from ..kernel_cg import default_rank, pivoted_landmarks
from ..kernel_checks import check_sampled_definite
from ..majorisers.kernel_cg import KernelMatrixCG
from ..predictors import KernelPredictor
from .base import Design, register_design

__all__ = ["KernelCGDesign", "SINGLE_MIN_ROWS", "PRECISIONS", "matrix_bytes"]

#: From this many rows the Newton directions' conjugate gradients run on a
#: float32 copy of the kernel matrix (where it fits the memory budget).  Below
#: it a product costs little against the rest of an iteration.
SINGLE_MIN_ROWS = 2000
#: The values of ``precision``.
PRECISIONS = ("double", "single")


def matrix_bytes(n, single):
    """Bytes the design holds for ``n`` rows: the kernel matrix (float64, or
    float32 where ``single``) and the preconditioner's three ``n x m`` arrays
    (in float64; where ``single``, two of them in float32)."""
    m = default_rank(n)
    return (4.0 * n * n + 16.0 * n * m) if single else (8.0 * n * n + 24.0 * n * m)


class KernelCGDesign(Design):
    """``solver="cg"``: the exact kernel by Newton's method with Nystrom-preconditioned
    conjugate gradients on the kernel matrix (module docstring).

    Parameters
    ----------
    random_state : object
        Accepted as every design is given one; nothing here draws (the
        landmarks are chosen by pivoted Cholesky).
    rank : int or None, default None
        Landmarks of the preconditioner, a positive integer (None:
        :func:`~kerndwd.engine.kernel_cg.default_rank`, 7.5% of the rows
        within 100 to 1500; clipped to ``n``).
        It changes the work per iteration, never the fit.
    precision : {"double", "single"} or None, default None
        How the kernel matrix is held: float64, or float32 only (module
        docstring).  None: float64 where :func:`matrix_bytes` fits the
        memory budget (:func:`~kerndwd.engine.cache.memory_budget`, or
        where the memory is not known), else float32.

    Raises
    ------
    TypeError
        ``rank`` is not an integer, or ``precision`` not a string.
    ValueError
        ``rank`` is below 1, or ``precision`` not one of :data:`PRECISIONS`.

    Examples
    --------
    >>> import numpy as np, kerndwd
    >>> rng = np.random.default_rng(0)
    >>> X = rng.standard_normal((300, 2))
    >>> y = np.where((X ** 2).sum(axis=1) > 1.4, 1, -1)
    >>> lam = [0.1, 0.01, 0.001]
    >>> cg = kerndwd.fit(X, y, lam, kern=kerndwd.rbfdot(1.0), solver="cg", stop="kkt", eps=1e-9)
    >>> eig = kerndwd.fit(X, y, lam, kern=kerndwd.rbfdot(1.0), stop="kkt", eps=1e-9)
    >>> cg.solver, bool(abs(cg.objective - eig.objective).max() < 1e-12)
    ('kdwd-cg', True)
    """

    name = "cg"
    selected_by = "solver"
    option_names = ("rank", "precision")
    declared = DesignCapabilities(storage=("dense",), solvers=("newton", "mm"), kernel_checks=True,
                                  default_stop="kkt")

    def __init__(self, random_state=None, **options):
        super().__init__(random_state=random_state, **options)
        rank = options.get("rank")
        self.rank = None if rank is None else check_integer(rank, "rank", 1)
        precision = options.get("precision")
        if precision is not None and not isinstance(precision, str):
            raise TypeError(f"precision must be one of {PRECISIONS} or None, got {type(precision).__name__}")
        if precision is not None and precision not in PRECISIONS:
            raise ValueError(f"precision must be one of {PRECISIONS} or None, got {precision!r}")
        self.precision = precision

    def single(self, n):
        """Whether the kernel matrix of ``n`` rows is held in float32 (``precision``)."""
        if self.precision is not None:
            return self.precision == "single"
        return matrix_bytes(n, False) > memory_budget(None, float("inf"))

    def blas_work(self, problem):
        # forming K (n^2 p) once; a pass reads K a few tens of times
        return 2.0 * problem.n ** 2 * problem.p, 0.0

    def prepare(self, problem, cache, folds):
        cache.kernel_matrix(self.single(problem.n))

    def majoriser(self, problem, cache):
        # checked: finite, and k(x, x) = 1 where it must be; a fold's matrix is sliced from
        # the whole problem's, so a fold holds it as the problem does
        single = cache.single_only() if cache.is_fold else self.single(problem.n)
        K = cache.kernel_matrix(single)
        cache.memo("kernel_sample_definite", lambda: check_sampled_definite(K, problem.kern))
        rank = default_rank(problem.n) if self.rank is None else self.rank
        landmarks = cache.memo(("pivoted_landmarks", rank), lambda: pivoted_landmarks(K, rank))
        products = K if single else None
        # the copy beside K: both within the budget (solver="auto"'s memory=, else the default)
        if not single and problem.n >= SINGLE_MIN_ROWS and keeps(
                None, matrix_bytes(problem.n, False) + 4.0 * problem.n ** 2, self.memory):
            products = cache.kernel_matrix(single=True)  # a copy of K, rounded
        return KernelMatrixCG(K, problem.loss, KernelPredictor(problem.kern, problem.X), landmarks,
                              products=products)


register_design(KernelCGDesign)
