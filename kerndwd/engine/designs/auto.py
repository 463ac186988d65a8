"""``solver="auto"``: the exact kernel's solver chosen from the rows and the memory.

The three exact-kernel solvers reach the same optimum at different costs
(``docs/solvers.md``, "Choosing a solver"):

* ``"exact"`` (R's iteration on the eigendecomposition of ``K``, or on the
  linear form): ``10 n^3`` operations once, then two ``n x n`` products a
  pass; kept up to :data:`EIGEN_MAX_ROWS` rows, where it costs nothing
  that matters and is R's own route (a 10-lambda rbf path on the circle data,
  one BLAS thread: 0.045 s against Newton-CG's 0.034 s at ``n = 200``, 0.40 s
  against 0.17 s at ``n = 1000``, 23 s against 3.1 s at ``n = 5000``);
* ``"cg"`` (Newton with Nystrom-preconditioned conjugate gradients on ``K``
  in memory): no decomposition, a few tens of products with ``K`` per
  lambda; beyond that size while ``K`` fits in the memory budget, held in
  float32 where only that fits (``precision="single"``: the fit of the
  kernel rounded to float32, :mod:`kerndwd.engine.designs.cg`);
* ``"bcd"`` (block coordinate descent, ``O(n b)`` memory): where ``K`` does
  not fit.

Rows on a Dask cluster with a nonlinear kernel go to ``"bcd"``, whose
sweeps run beside the row chunks (each block of kernel columns formed
where its rows live: :mod:`kerndwd.engine.designs.dask_bcd`).  The linear
kernel and sparse rows go to ``"exact"`` (whose linear form is the
cheapest there), which refuses, naming the designs that take them, what it
cannot fit.  A design chosen here defaults to the gradient rule
(``stop="kkt"``): R's rule belongs to R's solver, and asked for it
explicitly, a design other than ``"exact"`` is refused by the compatibility
check, naming ``stop`` (R's rule stops wherever a step gets small, so the
answer would depend on the pick).
The choice is stated in ``print(path)`` and ``DWDClassifier.solver_``
(:attr:`Design.chosen`).
"""

from __future__ import annotations

from ..._scalars import check_real
from ..cache import MEMORY_FRACTION, gib, memory_budget
from ..capabilities import DesignCapabilities
from .base import ChooserDesign, make_design, register_design
from .cg import matrix_bytes

__all__ = ["AutoDesign", "EIGEN_MAX_ROWS"]

#: Up to this many rows the eigendecomposition is the fastest exact route.
EIGEN_MAX_ROWS = 200
class AutoDesign(ChooserDesign):
    """``solver="auto"``: picks ``"exact"``, ``"cg"`` or ``"bcd"`` for the rows (module docstring).

    Parameters
    ----------
    random_state : int, Generator or None
        Passed to the design it picks.
    memory : float or None, default None
        Bytes the kernel matrix may take (None:
        :data:`~kerndwd.engine.cache.MEMORY_FRACTION` of the memory available
        when the fit starts).

    Raises
    ------
    TypeError, ValueError
        ``memory`` is not a positive number.

    Examples
    --------
    >>> import numpy as np, kerndwd
    >>> from kerndwd.engine import make_design
    >>> auto = make_design("auto", {"memory": 4e9})
    >>> auto.for_rows(150, 2, kerndwd.rbfdot(1.0), "dense", False).name
    'exact'
    >>> auto.for_rows(16000, 16, kerndwd.rbfdot(1.0), "dense", False).name
    'cg'
    >>> chosen = auto.for_rows(28000, 16, kerndwd.rbfdot(1.0), "dense", False)
    >>> chosen.name, chosen.precision
    ('cg', 'single')
    >>> chosen = auto.for_rows(50000, 16, kerndwd.rbfdot(1.0), "dense", False)
    >>> chosen.name, chosen.chosen
    ('bcd', "solver='auto': the 50000 x 50000 kernel matrix (9.3 GiB in float32) exceeds the memory budget (3.7 GiB): block coordinate descent, O(n b) memory (approx='nystroem' is much faster at this size)")
    """

    name = "auto"
    selected_by = "solver"
    option_names = ("memory",)
    # what the design it picks for a small problem supports (the exact kernel's); the
    # compatibility check reads the picked design's own declarations
    declared = DesignCapabilities(storage=("dense", "sparse", "remote"), default_stop="kkt")

    def __init__(self, random_state=None, **options):
        super().__init__(random_state=random_state, **options)
        memory = options.get("memory")
        self.memory = None if memory is None else check_real(memory, "memory", "positive")

    def capabilities(self, kern, storage):
        # what the design it picks for such rows declares (for_rows)
        picked = "bcd" if storage == "remote" and not kern.is_linear else "exact"
        return make_design(picked, {}).capabilities(kern, storage)

    def for_rows(self, n, p, kern, storage, weighted):
        def pick(name, why, **options):
            design = make_design(name, options, random_state=self.random_state)
            design.chosen = f"solver='auto': {why}"
            return design

        if storage == "remote" and not kern.is_linear:
            return pick("bcd", "rows on a Dask cluster with a nonlinear kernel: block coordinate descent beside "
                               "the row chunks (kernel columns formed where the rows live)")
        if kern.is_linear or storage != "dense":
            return pick("exact", "the linear kernel or sparse rows: R's choice of form")
        if n <= EIGEN_MAX_ROWS:
            return pick("exact", f"n = {n} rows: the eigendecomposition of the kernel matrix")
        need = matrix_bytes(n, False)  # K, and the preconditioner's n x m arrays
        budget = memory_budget(self.memory, need)
        if need <= budget:
            return pick("cg", f"n = {n} rows, the kernel matrix takes {gib(need)} of a {gib(budget)} budget: "
                              "Newton with preconditioned conjugate gradients on it", precision="double")
        need = matrix_bytes(n, True)
        if need <= budget:
            return pick("cg", f"n = {n} rows, the kernel matrix held in float32 takes {gib(need)} of a "
                              f"{gib(budget)} budget (in float64 it would not fit): Newton with preconditioned "
                              "conjugate gradients on it", precision="single")
        return pick("bcd", f"the {n} x {n} kernel matrix ({gib(4.0 * n * n)} in float32) exceeds the memory budget "
                           f"({gib(budget)}): block coordinate descent, O(n b) memory (approx='nystroem' is "
                           "much faster at this size)")


register_design(AutoDesign)
