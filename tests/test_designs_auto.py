"""``solver="auto"`` (:mod:`kerndwd.engine.designs.auto`): which exact-kernel
solver it picks for each kind of rows, at the documented boundaries (200 rows;
the kernel matrix and the preconditioner's landmarks against the memory
budget), with the reason it states, and the capabilities it declares.
"""

import numpy as np
import pytest

import kerndwd
from kerndwd.engine import cache as cache_module
from kerndwd.engine.designs import auto as auto_module
from kerndwd.engine.designs.auto import EIGEN_MAX_ROWS, AutoDesign
from kerndwd.engine.designs.base import make_design
from kerndwd.engine.kernel_cg import default_rank

RBF = kerndwd.rbfdot(1.0)


def need(n, single=False):
    """Bytes of the kernel matrix and the preconditioner's landmark columns
    (float64: the matrix and three n x m arrays; float32: the matrix and two
    float32 and one float64 n x m arrays)."""
    m = default_rank(n)
    return 4.0 * n * n + 16.0 * n * m if single else 8.0 * n * n + 24.0 * n * m


def test_small_dense_rows_take_the_eigendecomposition():
    auto = AutoDesign(random_state=4)
    assert EIGEN_MAX_ROWS == 200
    d = auto.for_rows(200, 3, RBF, "dense", False)
    assert d.name == "exact" and d.random_state == 4
    assert d.chosen == "solver='auto': n = 200 rows: the eigendecomposition of the kernel matrix"
    assert auto.for_rows(201, 3, RBF, "dense", True).name == "cg"


@pytest.mark.parametrize("n", [201, 5000])
def test_kernel_matrix_within_the_budget_takes_newton_cg(n):
    """Exactly at the budget: ``cg`` in float64; one byte short of that,
    ``cg`` in float32, down to its own need; one byte short of that: ``bcd``,
    each saying why."""
    budget = need(n)
    d = AutoDesign(memory=budget, random_state=1).for_rows(n, 3, RBF, "dense", False)
    assert d.name == "cg" and d.random_state == 1 and d.precision == "double"
    assert d.chosen == (f"solver='auto': n = {n} rows, the kernel matrix takes {budget / 2**30:.2g} GiB of a "
                        f"{budget / 2**30:.2g} GiB budget: Newton with preconditioned conjugate gradients on it")
    d = AutoDesign(memory=budget - 1.0, random_state=2).for_rows(n, 3, RBF, "dense", False)
    assert d.name == "cg" and d.random_state == 2 and d.precision == "single"
    single = need(n, single=True)
    d = AutoDesign(memory=single).for_rows(n, 3, RBF, "dense", False)
    assert d.name == "cg" and d.precision == "single"
    assert d.chosen == (f"solver='auto': n = {n} rows, the kernel matrix held in float32 takes "
                        f"{single / 2**30:.2g} GiB of a {single / 2**30:.2g} GiB budget (in float64 it would not "
                        "fit): Newton with preconditioned conjugate gradients on it")
    d = AutoDesign(memory=single - 1.0).for_rows(n, 3, RBF, "dense", False)
    assert d.name == "bcd"
    assert d.chosen == (f"solver='auto': the {n} x {n} kernel matrix ({4.0 * n * n / 2**30:.2g} GiB in float32) "
                        f"exceeds the memory budget ({(single - 1.0) / 2**30:.2g} GiB): block coordinate descent, "
                        "O(n b) memory (approx='nystroem' is much faster at this size)")


def test_the_default_budget_is_a_fraction_of_the_memory_available(monkeypatch):
    """``memory=None``: the budget is ``MEMORY_FRACTION`` of the memory
    available when the fit starts; where that is unknown, the kernel matrix
    is taken to fit."""
    n = 1000

    def pick(available):
        monkeypatch.setattr(cache_module, "available_memory", lambda: available)
        d = AutoDesign().for_rows(n, 3, RBF, "dense", False)
        return d.name, getattr(d, "precision", None)

    assert pick(need(n) / cache_module.MEMORY_FRACTION) == ("cg", "double")
    assert pick(0.99 * need(n) / cache_module.MEMORY_FRACTION) == ("cg", "single")
    assert pick(need(n, single=True) / cache_module.MEMORY_FRACTION) == ("cg", "single")
    assert pick(0.99 * need(n, single=True) / cache_module.MEMORY_FRACTION) == ("bcd", None)
    assert pick(None) == ("cg", "double")


@pytest.mark.parametrize("kern, storage, name, why", [
    (kerndwd.vanilladot(), "dense", "exact", "the linear kernel or sparse rows: R's choice of form"),
    (kerndwd.vanilladot(), "remote", "exact", "the linear kernel or sparse rows: R's choice of form"),
    (RBF, "sparse", "exact", "the linear kernel or sparse rows: R's choice of form"),
    (RBF, "remote", "bcd", "rows on a Dask cluster with a nonlinear kernel: block coordinate descent beside the "
                           "row chunks (kernel columns formed where the rows live)"),
])
def test_linear_sparse_and_remote_rows(kern, storage, name, why):
    """Whatever the size: the linear kernel and sparse rows go to the exact
    design, nonlinear kernels on a cluster to BCD beside the chunks; the
    capabilities declared are the pick's."""
    auto = AutoDesign(memory=1.0)
    d = auto.for_rows(10 ** 6, 3, kern, storage, False)
    assert d.name == name and d.chosen == f"solver='auto': {why}"
    assert auto.capabilities(kern, storage) == make_design(name, {}).capabilities(kern, storage)
    assert AutoDesign.declared.storage == ("dense", "sparse", "remote") and AutoDesign.declared.default_stop == "kkt"


def test_the_pick_is_a_new_design_each_time():
    auto = AutoDesign()
    first = auto.for_rows(50, 2, RBF, "dense", False)
    second = auto.for_rows(50, 2, RBF, "dense", False)
    assert first is not second and auto.chosen is None


@pytest.mark.parametrize("memory, error", [(0, ValueError), (-1.0, ValueError), ("4e9", TypeError),
                                           (np.nan, ValueError)])
def test_memory_must_be_a_positive_number(memory, error):
    with pytest.raises(error, match=r"^memory must be "):
        AutoDesign(memory=memory)
    assert AutoDesign(memory=np.float32(2.0)).memory == 2.0 and AutoDesign().memory is None
    auto = AutoDesign(random_state=3, memory=4e9)
    assert auto.options == {"memory": 4e9} and auto.random_state == 3 and repr(auto) == "AutoDesign(memory=4000000000.0)"
    assert auto_module.AutoDesign.option_names == ("memory",)
