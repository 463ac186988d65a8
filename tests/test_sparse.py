"""Sparse linear DWD: the conjugate-gradient majoriser and the estimator on scipy.sparse input."""

import time
import tracemalloc

import numpy as np
import pytest
from scipy import sparse

from kerndwd.engine import FactorCache, Problem, build_majoriser
from _engine import evaluate, mm_path
from kerndwd.engine.forms import SparseLinearForm
from kerndwd.engine.majorisers.iterative import LinearCG


def _problem(n=120, p=60, density=0.08, seed=0):
    rng = np.random.default_rng(seed)
    X = sparse.random(n, p, density=density, format="csr", random_state=rng)
    beta = rng.standard_normal(p)
    y = np.where(X @ beta + 0.3 * rng.standard_normal(n) > np.median(X @ beta), 1.0, -1.0)
    return X, y, rng


@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("q", [1.0, 0.5])
def test_cg_majoriser_reaches_the_dense_optimum(weighted, q):
    X, y, rng = _problem()
    w = rng.uniform(0.2, 2.0, size=y.size) if weighted else None
    settings = dict(q=q, stop="kkt", eps=1e-10, maxit=100000)
    problem = Problem.from_arrays(X, y, [0.05, 0.01], weights=w, **settings)
    maj = build_majoriser(problem, FactorCache(X, problem.kern))
    assert isinstance(maj, LinearCG)
    cg_res = mm_path(maj, problem)
    # the dense reference: the weighted (Cholesky) majoriser, weights all ones when unweighted
    dense = Problem.from_arrays(X.toarray(), y, [0.05, 0.01], weights=np.ones(y.size) if w is None else w,
                                **settings)
    ref = mm_path(build_majoriser(dense, FactorCache(dense.X, dense.kern)), dense)
    assert cg_res.jerr == 0 and (cg_res.kkt <= 1e-10).all()
    Xd = X.toarray()
    f_cg = cg_res.alpha[0] + Xd @ cg_res.alpha[1:]
    f_ref = ref.alpha[0] + Xd @ ref.alpha[1:]
    np.testing.assert_allclose(f_cg, f_ref, rtol=0, atol=1e-6)
    np.testing.assert_allclose(cg_res.objective, ref.objective, rtol=1e-10)


def test_cg_steps_descend_and_stop_rule_step():
    """Each (inexact, warm-started) CG step decreases the objective, and R's rule works too."""
    X, y, _ = _problem(seed=1)
    problem = Problem.from_arrays(X, y, [0.02], eps=1e-8)
    maj = build_majoriser(problem, FactorCache(X, problem.kern))
    objs = []

    def record(l, lam, coord, f):
        objs.append(evaluate(maj.form, maj.to_alpha(coord), y, maj.loss, lam)[1])

    res = mm_path(maj, problem, callback=record)
    assert res.jerr == 0 and len(objs) == res.npass[0] > 5
    assert (np.diff(objs) <= 1e-14).all()
    assert maj.cg_iterations > 0


def test_sparse_form_matches_dense():
    X, _, rng = _problem()
    design = SparseLinearForm(X.tocsc())
    theta, z = rng.standard_normal(X.shape[1]), rng.standard_normal(X.shape[0])
    np.testing.assert_allclose(design.apply(theta), X.toarray() @ theta, atol=1e-12)
    np.testing.assert_allclose(design.apply_t(z), X.toarray().T @ z, atol=1e-12)
    assert design.apply(theta).shape == (X.shape[0],)


def test_estimator_sparse_equals_dense():
    pytest.importorskip("sklearn")
    from kerndwd import DWDClassifier

    X, y, _ = _problem(seed=2)
    labels = np.where(y > 0, "b", "a")
    dense = DWDClassifier(lambd=0.05).fit(X.toarray(), labels)
    for fmt in ("csr", "csc"):
        est = DWDClassifier(lambd=0.05).fit(X.asformat(fmt), labels)
        assert est.solver_ == "cgldwd"
        np.testing.assert_allclose(est.decision_function(X.asformat(fmt)), dense.decision_function(X.toarray()),
                                   rtol=0, atol=1e-6)
        np.testing.assert_array_equal(est.predict(X), dense.predict(X.toarray()))
    # the input matrix is left untouched
    X2 = X.copy()
    DWDClassifier(lambd=0.05).fit(X2, labels, sample_weight=np.arange(y.size) % 3)
    assert (X2 != X).nnz == 0


@pytest.mark.slow
def test_text_scale_problem_fits_in_bounded_memory():
    """1e5 x 1e5, 0.1% non-zeros: X'X would need 80 GB; the CG majoriser needs O(nnz)."""
    pytest.importorskip("sklearn")
    from kerndwd import DWDClassifier

    n = p = 100_000
    rng = np.random.default_rng(0)
    X = sparse.random(n, p, density=1e-3, format="csr", random_state=rng)
    beta = rng.standard_normal(p)
    y = np.where(X @ beta > 0, 1, 0)
    x_bytes = X.data.nbytes + X.indices.nbytes + X.indptr.nbytes
    tracemalloc.start()
    start = time.perf_counter()
    est = DWDClassifier(lambd=1e-2, tol=1e-6).fit(X, y)
    seconds = time.perf_counter() - start
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    print(f"\n1e5 x 1e5 sparse fit: {seconds:.1f} s, {int(est.n_iter_[0])} MM passes, "
          f"tracemalloc peak {peak / 1e6:.0f} MB (X itself {x_bytes / 1e6:.0f} MB), kkt {est.kkt_[0]:.2e}")
    assert est.kkt_[0] <= 1e-6
    assert peak < 3 * x_bytes  # a dense p x p matrix would be 8e10 bytes
    # lambda = 1e-2 is a heavy penalty at n = p = 1e5 (the fit is close to a
    # constant); the test is about memory and reaching the optimum, so check
    # the objective beats f = 0, where it equals V_q(0) = 1
    assert est.objective_[0] < 1.0
