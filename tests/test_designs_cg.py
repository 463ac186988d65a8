"""The Newton-CG design on the kernel matrix (:mod:`kerndwd.engine.designs.cg`):
its kernel checks, the preconditioner's landmarks (the default rank, and
one pivoted Cholesky per rank and cache), the declared work and the
refusal of a bad ``rank``.
"""

import numpy as np
import pytest

import kerndwd
from kerndwd import engine
from kerndwd.engine.designs import cg as cg_module
from kerndwd.engine.designs.cg import KernelCGDesign
from kerndwd.engine.kernel_cg import default_rank, pivoted_landmarks
from kerndwd.engine.majorisers.kernel_cg import KernelMatrixCG


def _problem(design, X=None, kern=kerndwd.rbfdot(0.5), n=30):
    X = np.random.default_rng(4).normal(size=(n, 2)) if X is None else X
    y = np.where(np.arange(X.shape[0]) % 2 == 0, 1.0, -1.0)
    return engine.Problem.from_arrays(X, y, [0.1], kern=kern, design=design)


def test_the_majoriser_is_preconditioned_on_pivoted_landmarks_once_per_rank(monkeypatch):
    calls = []
    monkeypatch.setattr(cg_module, "pivoted_landmarks", lambda K, m: calls.append(m) or pivoted_landmarks(K, m))
    problem = _problem(KernelCGDesign())
    cache = engine.FactorCache(problem.X, problem.kern)
    m = engine.build_majoriser(problem, cache)
    assert type(m) is KernelMatrixCG and m.precond.rank == default_rank(30) == 30
    engine.build_majoriser(problem, cache)
    assert calls == [30]
    few = _problem(KernelCGDesign(rank=7))
    m = engine.build_majoriser(few, cache)
    assert calls == [30, 7] and m.precond.rank == 7
    K = problem.kern(problem.X)
    np.testing.assert_allclose(m.precond.C, K[:, pivoted_landmarks(K, 7)], rtol=1e-12)


def test_an_indefinite_kernel_is_refused_once_per_cache(monkeypatch):
    X = 4.0 * np.random.default_rng(5).normal(size=(30, 2))
    with pytest.raises(ValueError, match=r"kern=splinedot\(\) on these data is not positive semi-definite"):
        engine.build_majoriser(_problem(KernelCGDesign(), X=X, kern=kerndwd.splinedot()),
                               engine.FactorCache(X, kerndwd.splinedot()))
    checked = []
    real = cg_module.check_sampled_definite
    monkeypatch.setattr(cg_module, "check_sampled_definite", lambda K, kern: checked.append(K.shape) or real(K, kern))
    problem = _problem(KernelCGDesign())
    cache = engine.FactorCache(problem.X, problem.kern)
    engine.build_majoriser(problem, cache)
    engine.build_majoriser(problem, cache)
    assert checked == [(30, 30)]
    # BCD on the same kept kernel matrix finds it checked: once per cache, whichever exact design asks
    from kerndwd.engine.designs import bcd as bcd_module
    from kerndwd.engine.designs.bcd import BlockCoordinateDesign

    monkeypatch.setattr(bcd_module, "check_sampled_definite", lambda K, kern: checked.append("bcd") or real(K, kern))
    engine.build_majoriser(_problem(BlockCoordinateDesign()), cache)
    assert checked == [(30, 30)]
    engine.build_majoriser(_problem(BlockCoordinateDesign()), engine.FactorCache(problem.X, problem.kern))
    assert checked == [(30, 30), "bcd"]


def test_declared_work_and_the_rank_option():
    d = KernelCGDesign()
    assert d.rank is None and d.blas_work(_problem(d)) == (2.0 * 900 * 2, 0.0)
    assert KernelCGDesign(rank=5).rank == 5 and KernelCGDesign(rank=1).rank == 1
    with pytest.raises(ValueError) as info:
        KernelCGDesign(rank=0)
    assert str(info.value) == "rank must be at least 1, got 0"
    with pytest.raises(TypeError) as info:
        KernelCGDesign(ranks=5)
    assert str(info.value).endswith("does not accept ranks (its options: rank, precision)")
    with pytest.raises(TypeError, match="rank"):
        KernelCGDesign(rank=2.5)


def test_a_float32_copy_from_its_row_count_where_it_fits(monkeypatch):
    """From :data:`SINGLE_MIN_ROWS` rows, and where ``4 n^2`` bytes beside ``K``
    (:func:`matrix_bytes`) fit the budget, the majoriser's Newton directions run on a float32 copy of ``K``,
    formed once per cache; below it, or where it does not fit, on ``K``."""
    problem = _problem(KernelCGDesign(), n=40)
    cache = engine.FactorCache(problem.X, problem.kern)
    assert engine.build_majoriser(problem, cache).products is None  # 40 rows < SINGLE_MIN_ROWS
    monkeypatch.setattr(cg_module, "SINGLE_MIN_ROWS", 40)
    m = engine.build_majoriser(problem, cache)
    K = cache.kernel_matrix()
    assert m.products.dtype == np.float32 and np.array_equal(m.products, K.astype(np.float32))
    assert m.newton_system().products is m.products
    assert engine.build_majoriser(problem, cache).products is m.products  # once per cache
    asked = []
    monkeypatch.setattr(cg_module, "keeps", lambda how, nbytes, memory: asked.append((how, nbytes, memory)) or False)
    fresh = engine.FactorCache(problem.X, problem.kern)
    assert engine.build_majoriser(problem, fresh).products is None
    assert asked == [(None, cg_module.matrix_bytes(40, False) + 4.0 * 40 ** 2, None)]
    monkeypatch.setattr(cg_module, "SINGLE_MIN_ROWS", 41)
    asked.clear()
    assert engine.build_majoriser(problem, engine.FactorCache(problem.X, problem.kern)).products is None
    assert asked == []


def test_the_fit_with_a_float32_copy_is_the_double_fit(monkeypatch):
    """The copy changes the directions, never the optimum: at ``eps = 1e-9`` the
    objectives agree to 1e-10 relative and the decision values closely."""
    rng = np.random.default_rng(5)
    X = rng.standard_normal((200, 2))
    y = np.where((X ** 2).sum(axis=1) + 0.4 * rng.standard_normal(200) > 1.4, 1, -1)
    lam = [1e-2, 1e-4, 1e-6]
    args = dict(kern=kerndwd.rbfdot(1.0), solver="cg", stop="kkt", eps=1e-9)
    double = kerndwd.fit(X, y, lam, **args)
    monkeypatch.setattr(cg_module, "SINGLE_MIN_ROWS", 100)
    single = kerndwd.fit(X, y, lam, **args)
    assert double.jerr == single.jerr == 0
    np.testing.assert_allclose(single.objective, double.objective, rtol=1e-10)
    np.testing.assert_allclose(single.predict(X, type="link"), double.predict(X, type="link"), rtol=0, atol=1e-5)


# --------------------------------------------------------------------------
# precision: the kernel matrix held in float32 alone
# --------------------------------------------------------------------------
def test_the_precision_option_and_what_none_picks(monkeypatch):
    """``precision`` is "double", "single" or None; None holds float64 where
    ``matrix_bytes(n, False)`` fits the default budget (or the memory is not
    known), else float32."""
    from kerndwd.engine import cache as cache_module

    assert cg_module.PRECISIONS == ("double", "single")
    assert KernelCGDesign().precision is None and KernelCGDesign(precision="single").precision == "single"
    with pytest.raises(ValueError) as info:
        KernelCGDesign(precision="half")
    assert str(info.value) == "precision must be one of ('double', 'single') or None, got 'half'"
    with pytest.raises(TypeError) as info:
        KernelCGDesign(precision=32)
    assert str(info.value) == "precision must be one of ('double', 'single') or None, got int"
    m = default_rank(5000)
    assert cg_module.matrix_bytes(5000, False) == 8.0 * 5000 ** 2 + 24.0 * 5000 * m
    assert cg_module.matrix_bytes(5000, True) == 4.0 * 5000 ** 2 + 16.0 * 5000 * m
    assert KernelCGDesign(precision="single").single(10) and not KernelCGDesign(precision="double").single(10 ** 6)
    fits = cg_module.matrix_bytes(5000, False) / cache_module.MEMORY_FRACTION
    monkeypatch.setattr(cache_module, "available_memory", lambda: fits)
    assert not KernelCGDesign().single(5000) and KernelCGDesign().single(5001)
    monkeypatch.setattr(cache_module, "available_memory", lambda: None)
    assert not KernelCGDesign().single(10 ** 6)
    # prepare forms the matrix the rows' count picks
    problem = _problem(KernelCGDesign(), n=40)
    held = engine.FactorCache(problem.X, problem.kern)
    problem.design.prepare(problem, held, None)
    assert set(held._memo) == {"kernel_matrix"}
    monkeypatch.setattr(cache_module, "available_memory", lambda: cg_module.matrix_bytes(40, True))
    held = engine.FactorCache(problem.X, problem.kern)
    problem.design.prepare(problem, held, None)
    assert set(held._memo) == {"kernel_matrix_float32"}


def test_held_in_float32_the_majoriser_never_forms_the_double_matrix():
    """``precision="single"``: the cache holds the float32 matrix alone; it is
    the majoriser's matrix and its ``products``; its folds slice it, whatever
    their size would pick."""
    problem = _problem(KernelCGDesign(precision="single"), n=40)
    cache = engine.FactorCache(problem.X, problem.kern)
    problem.design.prepare(problem, cache, None)
    m = engine.build_majoriser(problem, cache)
    assert "kernel_matrix" not in cache._memo and cache.single_only()
    K32 = cache.kernel_matrix(single=True)
    assert m.form.K is K32 and m.products is K32 and m.newton_system().products is K32
    assert m.precond.C.dtype == np.float32
    fold = cache.fold(np.arange(30))
    fm = engine.build_majoriser(problem.subset(np.arange(30)), fold)
    assert fm.form.K.dtype == np.float32 and fm.products is fm.form.K and "kernel_matrix" not in cache._memo
    # the double design on its own rows: no float32 matrix below SINGLE_MIN_ROWS
    double = _problem(KernelCGDesign(precision="double"), n=40)
    dcache = engine.FactorCache(double.X, double.kern)
    dm = engine.build_majoriser(double, dcache)
    assert dm.form.K.dtype == np.float64 and dm.products is None and not dcache.single_only()
    fm = engine.build_majoriser(double.subset(np.arange(30)), dcache.fold(np.arange(30)))
    assert fm.form.K.dtype == np.float64


def test_the_fit_held_in_float32_is_the_fit_of_the_rounded_kernel():
    """Held in float32, the fit is the exact fit of the kernel rounded to
    float32 (entries off by up to 6e-8 relatively), close to the double fit
    on every face: for lambda down to 1e-4 (measured: objectives within 6e-9
    relative, decision values within 5e-7 of their largest) the objective
    within 1e-7 relative and fitted, held-out and new-row decision values
    within 5e-6 of their largest, per lambda."""
    rng = np.random.default_rng(6)
    X = rng.standard_normal((300, 2))
    y = np.where((X ** 2).sum(axis=1) + 0.4 * rng.standard_normal(300) > 1.4, 1, -1)
    lam = [1e-2, 1e-3, 1e-4]
    args = dict(kern=kerndwd.rbfdot(1.0), solver="cg", stop="kkt", eps=1e-9)
    double = kerndwd.fit(X, y, lam, precision="double", **args)
    single = kerndwd.fit(X, y, lam, precision="single", **args)
    assert double.jerr == single.jerr == 0
    np.testing.assert_allclose(single.objective, double.objective, rtol=1e-7)
    assert np.abs(single.objective - double.objective).max() > 0  # another problem, not the same numbers
    newx = rng.standard_normal((20, 2))
    _close_per_column(single.predict(newx, type="link"), double.predict(newx, type="link"))
    _close_per_column(single.predict(X, type="link"), double.predict(X, type="link"))
    cvs = kerndwd.cv(X, y, lam, nfolds=3, random_state=0, precision="single", **args)
    cvd = kerndwd.cv(X, y, lam, nfolds=3, random_state=0, precision="double", **args)
    _close_per_column(cvs.predmat, cvd.predmat)
    est = kerndwd.DWDClassifier(kernel=kerndwd.rbfdot(1.0), lambd=1e-4, solver="cg", stop="kkt", tol=1e-9,
                                design_options={"precision": "single"}).fit(X, y)
    _close_per_column(est.decision_function(newx)[:, None], double.predict(newx, type="link")[:, 2:3])


def _close_per_column(got, expected, rtol=5e-6):
    scale = np.abs(expected).max(axis=0)
    assert (np.abs(got - expected).max(axis=0) <= rtol * scale).all(), (np.abs(got - expected).max(axis=0), scale)


@pytest.mark.parametrize("room", [1.1, 2.0])
def test_solver_auto_memory_bounds_the_float32_copy_beside_k(monkeypatch, room):
    """``solver="auto", memory=`` picks cg in float64 where ``K`` fits; the copy of
    ``K`` in float32 is added only where ``K`` and the copy together fit that
    budget (not the machine's)."""
    from kerndwd.engine import cache as cache_module

    monkeypatch.setattr(cg_module, "SINGLE_MIN_ROWS", 300)
    n = 400
    need = cg_module.matrix_bytes(n, False)
    rng = np.random.default_rng(3)
    X = rng.standard_normal((n, 2))
    y = np.where((X ** 2).sum(axis=1) > 1.4, 1, -1)
    formed = []
    original = cache_module.FactorCache.kernel_matrix
    monkeypatch.setattr(cache_module.FactorCache, "kernel_matrix",
                        lambda self, single=False: formed.append(single) or original(self, single))
    path = kerndwd.fit(X, y, [0.1], kern=kerndwd.rbfdot(1.0), solver="auto", memory=room * need, stop="kkt",
                       eps=1e-6)
    assert path.design == "cg" and path.jerr == 0
    copy_fits = need + 4.0 * n * n <= room * need
    assert (True in formed) == copy_fits
