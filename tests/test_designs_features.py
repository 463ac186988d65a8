"""The feature designs (:mod:`kerndwd.engine.designs.features`): the majoriser
each kind of problem gets (one eigendecomposition of the features' Gram
matrix for an unweighted path, shared through the cache; a Cholesky factor
per lambda for one lambda or weights), the features kept on the workers for
rows on a Dask cluster, the stored features' type, the memory each design
declares, and its refusal where the system cannot fit.
"""

from dataclasses import replace

import numpy as np
import pytest

import kerndwd
from kerndwd import engine
from kerndwd.engine.designs import features as features_module
from kerndwd.engine.designs.features import FourierDesign, NystroemDesign
from kerndwd.engine.forms import DenseLinearForm, FeatureMatrixForm, LinearForm
from kerndwd.engine.majorisers.linear import LinearCholesky, LinearEigen

RBF = kerndwd.rbfdot(0.5)


def _problem(design, n=40, weighted=False, lambdas=(1.0, 0.5), X=None, **settings):
    rng = np.random.default_rng(n)
    X = rng.normal(size=(n, 2)) if X is None else X
    y = np.where(np.arange(n) % 2 == 0, 1.0, -1.0)
    w = rng.uniform(0.5, 2.0, size=n) if weighted else None
    return engine.Problem.from_arrays(X, y, list(lambdas), weights=w, kern=RBF, design=design, **settings)


def _build(problem, cache=None):
    cache = engine.FactorCache(problem.X, problem.kern) if cache is None else cache
    return engine.build_majoriser(problem, cache), cache


class _Squares:
    n_components = 4

    def transform(self, rows):
        rows = np.asarray(rows)
        return np.hstack([rows, rows ** 2])


class _SquaresDesign(engine.FeatureDesign):
    """A design with the base class's feature form."""
    name = "squares-test"

    def fitted_map(self, X, kern):
        return _Squares()


@pytest.mark.parametrize("design", [NystroemDesign(random_state=0, n_components=10),
                                    FourierDesign(random_state=0, n_components=12)])
def test_each_problem_gets_its_majoriser_and_a_path_shares_one_eigendecomposition(design, monkeypatch):
    calls = []
    real = features_module.linalg.eigh
    monkeypatch.setattr(features_module.linalg, "eigh", lambda A: calls.append(A.shape) or real(A))
    path = _problem(design, gam=1e-3)
    m, cache = _build(path)
    assert type(m) is LinearEigen and type(m.form) is FeatureMatrixForm
    k = m.form.p + 1
    np.testing.assert_allclose(m.evals, np.linalg.eigvalsh(m.form.gram()) + 1e-3, rtol=1e-10, atol=1e-12)
    again, _ = _build(path, cache)
    again.evals
    assert calls.count((k, k)) == 1  # one decomposition of the Gram matrix for both, through the cache
    assert again.form is m.form  # and one feature matrix
    for problem in (_problem(design, lambdas=(0.5,)), _problem(design, weighted=True)):
        chol, _ = _build(problem)
        assert type(chol) is LinearCholesky and type(chol.form) is FeatureMatrixForm
    assert type(_build(_problem(design, lambdas=(1.0, 0.5, 0.25)))[0]) is LinearEigen


def test_the_base_feature_form_is_dense_unweighted_and_plain_weighted():
    """A design that keeps the base class's ``feature_form``: ``Z = [1, Phi]``
    kept (``DenseLinearForm``) unweighted, the plain ``LinearForm`` weighted."""
    m, _ = _build(_problem(_SquaresDesign()))
    assert type(m.form) is DenseLinearForm and m.form.p == 4
    m, _ = _build(_problem(_SquaresDesign(), weighted=True))
    assert type(m.form) is LinearForm


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_stored_features_take_the_designs_dtype(dtype):
    m, _ = _build(_problem(NystroemDesign(random_state=0, n_components=10, dtype=dtype)))
    assert m.form.B.dtype == np.dtype(dtype) and m.form.B.shape == (40, 10)


def test_declared_memory_and_work():
    """``system_bytes``: the ``n x m`` features (not on a cluster) plus three
    ``(m + 1)^2`` matrices; ``blas_work``: the features and their Gram on the
    client, nothing for rows on a cluster."""
    d = FourierDesign(random_state=0, n_components=30, dtype="float32")
    assert d.system_bytes(1000, "dense") == 1000 * 30 * 4 + 24.0 * 31 ** 2
    assert d.system_bytes(1000, "remote") == 24.0 * 31 ** 2
    assert d.blas_work(_problem(d, n=50)) == (2.0 * 50 * 30 * 30, 0.0)


def test_a_system_beyond_the_memory_is_refused_by_name_but_not_for_rows_on_a_cluster(monkeypatch):
    d = NystroemDesign(random_state=0, n_components=100)
    need = d.system_bytes(10 ** 6, "dense")
    monkeypatch.setattr(features_module, "available_memory", lambda: need - 1.0)
    with pytest.raises(ValueError) as info:
        d.for_rows(10 ** 6, 3, RBF, "dense", False)
    assert str(info.value) == (
        "n_components: approx='nystroem' with m = 100 columns on 1000000 rows takes 0.75 GiB (the features and "
        "the (m + 1) x (m + 1) system), more than the 0.75 GiB available: pass solver='bcd' (sweeps over "
        "blocks of the columns, O(n b + m b) memory) or solver='auto', or fewer n_components")
    assert d.for_rows(10 ** 6, 3, RBF, "remote", False) is d  # the workers hold the features
    monkeypatch.setattr(features_module, "available_memory", lambda: need)
    assert d.for_rows(10 ** 6, 3, RBF, "dense", False) is d
    monkeypatch.setattr(features_module, "available_memory", lambda: None)  # unknown: not refused
    assert d.for_rows(10 ** 9, 3, RBF, "dense", False) is d


@pytest.mark.parametrize("lambdas, weighted, kind", [((0.5,), False, LinearCholesky), ((1.0, 0.5), True, LinearCholesky),
                                                     ((1.0, 0.5), False, LinearEigen)])
@pytest.mark.parametrize("approx", ["rff", "nystroem"])
def test_rows_on_dask_keep_the_features_on_the_workers(lambdas, weighted, kind, approx):
    """On the local scheduler: the map fitted from the rows (Nystrom's
    landmarks gathered from the chunks), the features a Dask linear form
    cached once, the same system as the rows in memory (its diagonal, which
    the Newton and CG systems read, too), and no BLAS work declared on the
    client."""
    da = pytest.importorskip("dask.array")
    from kerndwd.engine.designs.dask import DaskLinearForm

    design = (FourierDesign if approx == "rff" else NystroemDesign)(random_state=0, n_components=8)
    local = _problem(design, weighted=weighted, lambdas=lambdas, gam=1e-4)
    X = da.from_array(local.X, chunks=(15, 2))
    remote = replace(local, X=X)
    if weighted:
        remote = replace(remote, loss=engine.DWDLoss(1.0, da.from_array(local.loss.weights, chunks=15)))
    assert remote.storage == "remote" and design.blas_work(remote) == (0.0, 0.0)
    m, cache = _build(remote)
    assert type(m) is kind and type(m.form) is DaskLinearForm and m.loss is remote.loss
    assert _build(remote, cache)[0].form is m.form
    here, _ = _build(local)
    w = np.random.default_rng(1).uniform(0.5, 2.0, size=40)
    np.testing.assert_allclose(m.form.weighted_sq_norms(da.from_array(w, chunks=15)),
                               here.form.weighted_sq_norms(w), rtol=1e-12)
    if kind is LinearCholesky:
        np.testing.assert_allclose(m.A, here.A, rtol=1e-10, atol=1e-12)
    else:
        np.testing.assert_allclose(m.evals, here.evals, rtol=1e-10, atol=1e-12)


def test_seeds_come_from_integers_legacy_states_and_generators():
    from kerndwd.engine.designs.features import _resolve_seed

    assert _resolve_seed(7) == 7 and _resolve_seed(np.int64(7)) == 7 and type(_resolve_seed(np.int64(7))) is int
    legacy = _resolve_seed(np.random.RandomState(3))
    assert legacy == np.random.RandomState(3).randint(2 ** 31 - 1) and type(legacy) is int
    assert _resolve_seed(np.random.default_rng(3)) == np.random.default_rng(3).integers(2 ** 63 - 1)
    with pytest.raises(ValueError) as info:
        _resolve_seed(-2)
    assert str(info.value) == "random_state must be a non-negative integer, got -2"
    with pytest.raises(TypeError) as info:
        _resolve_seed("seven")
    assert str(info.value) == "random_state must be None, an int or a numpy Generator, got 'seven'"


def test_the_designs_options_are_checked_with_whole_messages():
    d = NystroemDesign(random_state=5)
    assert d.dtype == np.float64 and d.n_components is None and d.chunk_size is None
    assert d.random_state == d.seed == 5 and d.options == {}
    with pytest.raises(ValueError) as info:
        FourierDesign(random_state=0, dtype="float16")
    assert str(info.value) == "approx='rff': dtype must be one of ['float64', 'float32'], got 'float16'"
    with pytest.raises(ValueError) as info:
        FourierDesign(random_state=0, dtype="not a type")
    assert str(info.value) == "approx='rff': dtype must be one of ['float64', 'float32'], got 'not a type'"
    for option in ("n_components", "chunk_size"):
        with pytest.raises(ValueError) as info:
            NystroemDesign(random_state=0, **{option: 0})
        assert str(info.value) == f"approx='nystroem': {option} must be at least 1, got 0"
