"""The exact design (:mod:`kerndwd.engine.designs.exact`): R's choice between
the linear and the kernel form at ``n`` against ``p``, the majoriser each
kind of problem gets, the work it declares for the BLAS thread setting,
and what it prepares for cross-validation folds.
"""

from dataclasses import replace

import numpy as np
import pytest
from scipy import sparse

import kerndwd
from kerndwd import engine
from kerndwd.engine.designs import exact as exact_module
from kerndwd.engine.designs.exact import ExactDesign
from kerndwd.engine.forms import DenseLinearForm, LinearForm
from kerndwd.engine.majorisers.iterative import LinearCG
from kerndwd.engine.majorisers.kernel import KernelCholesky, KernelEigen
from kerndwd.engine.majorisers.linear import LinearCholesky, LinearEigen
from _engine import majoriser_of

LIN = kerndwd.vanilladot()
RBF = kerndwd.rbfdot(0.5)


def _problem(n, p, kern=LIN, weighted=False, lambdas=(1.0, 0.5), X=None, **settings):
    rng = np.random.default_rng(n * 100 + p)
    X = rng.normal(size=(n, p)) if X is None else X
    y = np.where(np.arange(n) % 2 == 0, 1.0, -1.0)
    w = rng.uniform(0.5, 2.0, size=n) if weighted else None
    return engine.Problem.from_arrays(X, y, list(lambdas), weights=w, kern=kern, design=ExactDesign(), **settings)


def test_capabilities_by_kernel_and_storage():
    d = ExactDesign()
    assert d.capabilities(RBF, "dense") == engine.DesignCapabilities(storage=("dense",), kernel_checks=True,
                                                                       default_stop="step")
    assert d.capabilities(RBF, "remote") is d.capabilities(RBF, "sparse")
    assert d.capabilities(LIN, "dense").default_stop == "step" and d.capabilities(LIN, "sparse").default_stop == "step"
    assert d.capabilities(LIN, "remote").default_stop == "kkt"
    assert d.capabilities(LIN, "remote").storage == ("dense", "sparse", "remote")
    assert not d.capabilities(LIN, "dense").kernel_checks


@pytest.mark.parametrize("n, p, weighted, rule, expected", [
    (5, 5, False, "kerndwd", True),   # n >= p
    (4, 5, False, "kerndwd", False),
    (5, 5, True, "kerndwd", False),   # weighted: n > p
    (6, 5, True, "kerndwd", True),
    (5, 5, False, "tunedwd", False),  # tunedwd's rule: n > p
    (6, 5, False, "tunedwd", True),
])
def test_the_linear_form_follows_rs_rule_on_n_and_p(n, p, weighted, rule, expected):
    problem = _problem(n, p, weighted=weighted, linear_rule=rule)
    assert ExactDesign.solves_in_beta(problem) is expected
    # a fold's training size replaces n
    assert ExactDesign.solves_in_beta(problem, n=p + 1) is True
    assert ExactDesign.solves_in_beta(problem, n=p - 1) is False


def test_sparse_rows_always_and_other_kernels_never_take_the_linear_form():
    X = sparse.random(4, 9, density=0.5, format="csr", random_state=0)
    assert ExactDesign.solves_in_beta(_problem(4, 9, X=X)) is True
    assert ExactDesign.solves_in_beta(_problem(50, 2, kern=RBF)) is False


def test_blas_work_is_the_largest_dense_call_and_a_pass():
    d = ExactDesign()
    assert d.blas_work(_problem(30, 4)) == (2.0 * 30 * 16, 4.0 * 30 * 4)
    assert d.blas_work(_problem(3, 8)) == (10.0 * 27, 0.0)
    assert d.blas_work(_problem(20, 2, kern=RBF)) == (10.0 * 8000, 0.0)


def test_prepare_forms_the_kernel_matrix_only_when_a_fold_needs_it():
    """Folds whose training rows keep the linear form need no kernel matrix;
    one fold with fewer training rows than columns does."""
    class Cache:
        def __init__(self):
            self.formed = 0

        def kernel_matrix(self):
            self.formed += 1

    problem = _problem(12, 5)
    folds = [(np.arange(8), np.arange(8, 12)), (np.arange(6), np.arange(6, 12))]
    cache = Cache()
    ExactDesign().prepare(problem, cache, folds)
    assert cache.formed == 0
    ExactDesign().prepare(problem, cache, folds + [(np.arange(4), np.arange(4, 12))])
    assert cache.formed == 1
    ExactDesign().prepare(_problem(12, 2, kern=RBF), cache, folds)
    assert cache.formed == 2


def test_each_problem_gets_rs_majoriser():
    """A path of lambdas, unweighted: the eigenbasis of ``Z'Z`` (``ldwd``);
    one lambda: a Cholesky factor on the dense form; weighted: a Cholesky
    factor on the plain linear form (``wldwd``); sparse rows: conjugate
    gradients; ``p > n``: the kernel form, eigenbasis or (weighted)
    Cholesky; other kernels likewise."""
    m = majoriser_of(_problem(30, 4))
    assert type(m) is LinearEigen and m.solver == "ldwd"
    m = majoriser_of(_problem(30, 4, lambdas=(1.0,)))
    assert type(m) is LinearCholesky and type(m.form) is DenseLinearForm and m.solver == "ldwd"
    m = majoriser_of(_problem(30, 4, weighted=True))
    assert type(m) is LinearCholesky and type(m.form) is LinearForm and m.solver == "wldwd"
    X = sparse.random(30, 4, density=0.6, format="csr", random_state=1)
    assert type(majoriser_of(_problem(30, 4, X=X))) is LinearCG
    m = majoriser_of(_problem(4, 30))
    assert type(m) is KernelEigen and m.solver == "kdwd"
    assert type(majoriser_of(_problem(4, 30, weighted=True))) is KernelCholesky
    assert type(majoriser_of(_problem(30, 2, kern=RBF))) is KernelEigen
    assert type(majoriser_of(_problem(30, 2, kern=RBF, weighted=True))) is KernelCholesky


def test_the_weighted_kernel_route_checks_definiteness_once(monkeypatch):
    """The weighted kernel route has no eigendecomposition to read the
    eigenvalues off: it checks definiteness (splinedot on data outside
    [0, 1] is indefinite), once per cache."""
    rng = np.random.default_rng(3)
    X = 4.0 * rng.normal(size=(20, 2))
    problem = _problem(20, 2, kern=kerndwd.splinedot(), weighted=True, X=X)
    with pytest.raises(ValueError, match=r"kern=splinedot\(\) on these data is not positive semi-definite"):
        majoriser_of(problem)
    checked = []
    real = exact_module.check_definite
    monkeypatch.setattr(exact_module, "check_definite", lambda K, kern: checked.append(K.shape) or real(K, kern))
    ok = _problem(20, 2, kern=RBF, weighted=True)
    cache = engine.FactorCache(ok.X, ok.kern)
    engine.build_majoriser(ok, cache)
    engine.build_majoriser(ok, cache)
    assert checked == [(20, 20)]
    engine.build_majoriser(_problem(20, 2, kern=RBF), cache)  # unweighted: the eigenvalues are checked instead
    assert checked == [(20, 20)]


def test_the_linear_eigenbasis_is_shared_through_the_cache(monkeypatch):
    """The eigendecomposition of ``Z'Z`` is made once per cache, on first use."""
    calls = []
    real = exact_module.linalg.eigh
    monkeypatch.setattr(exact_module.linalg, "eigh", lambda A: calls.append(A.shape) or real(A))
    problem = _problem(30, 4)
    cache = engine.FactorCache(problem.X, problem.kern)
    first = engine.build_majoriser(problem, cache)
    second = engine.build_majoriser(problem, cache)
    assert calls == []
    first.evals, second.evals
    assert calls == [(5, 5)]
    np.testing.assert_array_equal(first.evecs, second.evecs)


def test_rows_on_dask_take_the_dask_linear_form_and_leave_the_threads_to_the_workers():
    """A Dask array of rows (here on the local scheduler): the linear form over
    the chunks, a Cholesky factor for one lambda or weights and the Gram
    matrix's eigenbasis for a path, each with the problem's loss and
    ``gam``; no BLAS work declared on the client."""
    da = pytest.importorskip("dask.array")
    from kerndwd.engine.designs.dask import DaskLinearForm

    rng = np.random.default_rng(8)
    Xn = rng.normal(size=(40, 3))
    X = da.from_array(Xn, chunks=(15, 3))
    for lambdas, weighted, kind in [((1.0,), False, LinearCholesky), ((1.0, 0.5), True, LinearCholesky),
                                    ((1.0, 0.5), False, LinearEigen)]:
        problem = _problem(40, 3, X=X, lambdas=lambdas, weighted=weighted, gam=1e-4)
        if weighted:  # the faces hand the weights to a design on a cluster chunked like the rows
            problem = replace(problem, loss=kerndwd.engine.DWDLoss(1.0, da.from_array(problem.loss.weights, chunks=15)))
        assert problem.storage == "remote"
        assert ExactDesign().blas_work(problem) == (0.0, 0.0)
        m = majoriser_of(problem)
        assert type(m) is kind and type(m.form) is DaskLinearForm
        assert m.loss is problem.loss
        # the same system as on the rows in memory, gam on the diagonal of the factored matrix
        local = majoriser_of(_problem(40, 3, X=Xn, lambdas=lambdas, weighted=weighted, gam=1e-4))
        if kind is LinearCholesky:
            np.testing.assert_allclose(m.A, local.A, rtol=1e-12)
            w = np.asarray(problem.loss.weights) if weighted else np.ones(40)
            Z = np.hstack([np.ones((40, 1)), Xn])
            np.testing.assert_allclose(m.A, Z.T @ (w[:, None] * Z) + 1e-4 * np.eye(4), rtol=1e-12)
        else:
            np.testing.assert_allclose(m.evals, local.evals, rtol=1e-10)
