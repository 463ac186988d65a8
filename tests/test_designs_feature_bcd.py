"""The block variants of the feature designs and ``solver="auto"`` among them
(:mod:`kerndwd.engine.designs.feature_bcd`): what the chooser picks and
says for each case of its docstring, the boundary at
``FEATURE_SYSTEM_MAX``, the refusal of the in-memory pick it passes on, and
the block forms the majorisers are built on (their storage type, cache and
tiles handed through, shared through the cache).
"""

import numpy as np
import pytest

import kerndwd
from kerndwd import engine
from kerndwd.engine.designs import feature_bcd as feature_bcd_module
from kerndwd.engine.designs import features as features_module
from kerndwd.engine.designs.feature_bcd import (FEATURE_SYSTEM_MAX, FeatureAutoDesign, FourierBlockDesign,
                                                NystroemBlockDesign)
from kerndwd.engine.designs.base import make_design
from kerndwd.engine.designs.features import FourierDesign, NystroemDesign
from kerndwd.engine.majorisers.feature_blocks import FourierBlockForm, LandmarkBlockForm

RBF = kerndwd.rbfdot(1.0)


def test_the_chooser_picks_and_says_why(monkeypatch):
    monkeypatch.setattr(feature_bcd_module, "memory_budget", lambda memory, unknown: 1e12)
    auto = FeatureAutoDesign("rff", n_components=500)
    assert auto.option_names == ("n_components", "dtype", "chunk_size", "block_size", "cache_features")
    pick = auto.for_rows(10000, 5, RBF, "dense", False)
    assert type(pick) is FourierDesign
    assert pick.chosen == ("approx='rff' with solver='auto': m = 500 columns: one (m + 1) x (m + 1) system "
                           "(0.043 GiB with the features)")
    pick = auto.for_rows(10000, 5, RBF, "remote", False)
    assert type(pick) is FourierDesign and pick.chosen == (
        "approx='rff' with solver='auto': m = 500 columns: one (m + 1) x (m + 1) system (0.0056 GiB on the client; "
        "the features on the workers)")
    for option in ("block_size", "cache_features"):
        value = 64 if option == "block_size" else True
        pick = FeatureAutoDesign("nystroem", n_components=500, **{option: value}).for_rows(10000, 5, RBF, "dense",
                                                                                            False)
        assert type(pick) is NystroemBlockDesign
        assert pick.chosen == (f"approx='nystroem' with solver='auto': block options given: sweeps over blocks of "
                               f"{pick.block_size} columns")
    at_max = FeatureAutoDesign("rff", n_components=FEATURE_SYSTEM_MAX).for_rows(10000, 5, RBF, "dense", False)
    assert type(at_max) is FourierDesign
    above = FeatureAutoDesign("rff", n_components=FEATURE_SYSTEM_MAX + 1).for_rows(10000, 5, RBF, "dense", False)
    assert type(above) is FourierBlockDesign and above.chosen == (
        f"approx='rff' with solver='auto': m = {FEATURE_SYSTEM_MAX + 1} columns, more than {FEATURE_SYSTEM_MAX}: "
        f"sweeps over blocks of {above.block_size} columns")


def test_the_chooser_takes_the_blocks_beyond_the_memory_budget(monkeypatch):
    seen = []
    need = FourierDesign(n_components=500).system_bytes(10000, "dense")

    def budget(memory, unknown):
        seen.append((memory, unknown))
        return need - 1.0

    monkeypatch.setattr(feature_bcd_module, "memory_budget", budget)
    pick = FeatureAutoDesign("rff", n_components=500).for_rows(10000, 5, RBF, "dense", False)
    assert type(pick) is FourierBlockDesign
    assert pick.chosen == ("approx='rff' with solver='auto': m = 500 columns: the features and the (m + 1) x (m + 1) "
                           f"system take 0.043 GiB, beyond the memory budget: sweeps over blocks of "
                           f"{pick.block_size} columns")
    assert seen == [(None, need)]  # an unknown memory: the system's own size, so the plain design is kept
    # on a cluster the budget holds the client's system alone: the features are on the workers
    system = FourierDesign(n_components=500).system_bytes(10000, "remote")
    monkeypatch.setattr(feature_bcd_module, "memory_budget", lambda memory, unknown: system - 1.0)
    remote = FeatureAutoDesign("rff", n_components=500).for_rows(10000, 5, RBF, "remote", False)
    assert type(remote) is FourierBlockDesign and remote.chosen == (
        "approx='rff' with solver='auto': m = 500 columns: the (m + 1) x (m + 1) system takes 0.0056 GiB, beyond "
        f"the memory budget: sweeps over blocks of {remote.block_size} columns")
    monkeypatch.setattr(feature_bcd_module, "memory_budget", lambda memory, unknown: system)
    assert type(FeatureAutoDesign("rff", n_components=500).for_rows(10000, 5, RBF, "remote", False)) is FourierDesign
    monkeypatch.setattr(feature_bcd_module, "memory_budget", lambda memory, unknown: need)
    assert type(FeatureAutoDesign("rff", n_components=500).for_rows(10000, 5, RBF, "dense", False)) is FourierDesign


def test_the_in_memory_pick_still_refuses_a_system_beyond_the_memory(monkeypatch):
    monkeypatch.setattr(feature_bcd_module, "memory_budget", lambda memory, unknown: 1e15)
    monkeypatch.setattr(features_module, "available_memory", lambda: 1e7)  # the system alone takes 6e6 bytes
    with pytest.raises(ValueError, match=r"^n_components: approx='rff' with m = 500 columns on 10000 rows"):
        FeatureAutoDesign("rff", n_components=500).for_rows(10000, 5, RBF, "dense", False)
    # on a cluster the features live on the workers: the same memory is enough
    pick = FeatureAutoDesign("rff", n_components=500).for_rows(10000, 5, RBF, "remote", False)
    assert type(pick) is FourierDesign


def test_the_chooser_declares_the_in_memory_designs_capabilities():
    for approx, plain in (("rff", FourierDesign()), ("nystroem", NystroemDesign())):
        auto = FeatureAutoDesign(approx)
        for storage in ("dense", "remote"):
            assert auto.capabilities(RBF, storage) == plain.capabilities(RBF, storage)


def _problem(design, n=60, lambdas=(0.5,)):
    rng = np.random.default_rng(3)
    X = rng.normal(size=(n, 2))
    y = np.where(X[:, 0] > 0, 1.0, -1.0)
    return engine.Problem.from_arrays(X, y, list(lambdas), kern=RBF, design=design)


@pytest.mark.parametrize("cls, form_type", [(FourierBlockDesign, FourierBlockForm),
                                            (NystroemBlockDesign, LandmarkBlockForm)])
@pytest.mark.parametrize("cache_features", [True, False])
def test_the_block_majoriser_gets_the_designs_storage_and_shares_its_form(cls, form_type, cache_features):
    design = cls(random_state=0, n_components=20, block_size=8, dtype="float32", chunk_size=7,
                 cache_features=cache_features)
    problem = _problem(design)
    cache = engine.FactorCache(problem.X, problem.kern)
    m = engine.build_majoriser(problem, cache)
    form = m.form
    assert type(form) is form_type and form.dtype == np.float32 and form._tile_rows == 7
    assert (form.stored is not None) is cache_features
    assert engine.build_majoriser(problem, cache).form is form
    if cls is NystroemBlockDesign:
        landmarks = NystroemDesign(random_state=0, n_components=20).fitted_map(problem.X, RBF).landmarks
        np.testing.assert_array_equal(form.landmarks, landmarks)  # the in-memory design's landmarks


def test_a_fold_too_small_for_the_landmarks_is_refused_before_any_fit():
    design = NystroemBlockDesign(random_state=0, n_components=30)
    problem = _problem(design, n=60)
    folds = [(np.arange(40), np.arange(40, 60)), (np.arange(25), np.arange(25, 60))]
    with pytest.raises(ValueError, match=r"n_components=30 exceeds the number of rows of the fit \(25\)"):
        design.prepare(problem, None, folds)
    design.prepare(problem, None, folds[:1])
    FourierBlockDesign(random_state=0, n_components=300).prepare(problem, None, folds)  # any m


@pytest.mark.parametrize("landmarks", ["kmeans++", "leverage"])
def test_landmarks_drawn_by_the_kernel_are_the_in_memory_designs(landmarks):
    design = NystroemBlockDesign(random_state=2, n_components=12, block_size=5, landmarks=landmarks)
    problem = _problem(design)
    form = engine.build_majoriser(problem, engine.FactorCache(problem.X, problem.kern)).form
    plain = NystroemDesign(random_state=2, n_components=12, landmarks=landmarks).fitted_map(problem.X, RBF)
    np.testing.assert_array_equal(form.landmarks, plain.landmarks)


def test_the_kernel_rows_are_checked_once_per_cache_and_an_indefinite_kernel_refused(monkeypatch):
    from kerndwd.engine.designs import bcd as bcd_module
    from kerndwd.engine.designs.bcd import BlockCoordinateDesign

    X = 4.0 * np.random.default_rng(5).normal(size=(60, 2))
    y = np.where(X[:, 0] > 0, 1.0, -1.0)
    spline = kerndwd.splinedot()
    bad = engine.Problem.from_arrays(X, y, [0.5], kern=spline, design=NystroemBlockDesign(random_state=0,
                                                                                           n_components=10))
    with pytest.raises(ValueError, match=r"kern=splinedot\(\) on these data is not positive semi-definite"):
        engine.build_majoriser(bad, engine.FactorCache(X, spline))
    checked, real = [], feature_bcd_module.check_kernel_rows
    monkeypatch.setattr(feature_bcd_module, "check_kernel_rows", lambda k, Z: checked.append("blocks") or real(k, Z))
    monkeypatch.setattr(bcd_module, "check_kernel_rows", lambda k, Z: checked.append("bcd") or real(k, Z))
    monkeypatch.setattr(BlockCoordinateDesign, "keeps_kernel", lambda self, n: False)  # rows, not the matrix
    problem = _problem(NystroemBlockDesign(random_state=0, n_components=10))
    cache = engine.FactorCache(problem.X, problem.kern)
    engine.build_majoriser(problem, cache)
    engine.build_majoriser(_problem(BlockCoordinateDesign()), cache)
    assert checked == ["blocks"]  # BCD on the same rows finds them checked


def test_the_block_designs_blas_work_and_memory_rule(monkeypatch):
    """BLAS work: the block Grams once (``2 n m b``), two products per block a
    sweep (``4 n m``); the columns are kept where ``n m`` numbers of the asked
    dtype fit the memory budget."""
    from kerndwd.engine import cache as cache_module

    design = FourierBlockDesign(n_components=40, block_size=8)
    X = np.random.default_rng(0).standard_normal((50, 2))
    problem = engine.Problem.from_arrays(X, np.where(X[:, 0] > 0, 1.0, -1.0), [0.1], kern=RBF, design=design)
    assert design.blas_work(problem) == (2.0 * 50 * 40 * 8, 4.0 * 50 * 40)
    wide = FourierBlockDesign(n_components=4, block_size=8)
    assert wide.blas_work(problem) == (2.0 * 50 * 4 * 4, 4.0 * 50 * 4)  # a block is at most m wide
    monkeypatch.setattr(cache_module, "memory_budget", lambda *a, **k: 1000.0 * 50 * 4)
    low = FourierBlockDesign(n_components=50, dtype="float32")
    assert low.keeps_features(1000, 50) and not low.keeps_features(1000, 51)
    assert not design.keeps_features(1000, 26) and design.keeps_features(1000, 25)  # float64: 8 bytes


def test_random_fourier_phases_are_uniform_over_one_period():
    """``b ~ U[0, 2 pi)``: what makes ``2 E[cos(w'x + b) cos(w'y + b)]`` the
    kernel; over 20 000 draws the mean is pi within 0.05 (its standard error
    is 0.013) and no phase leaves the period."""
    design = make_design("rff", {"n_components": 20000}, "approx", random_state=0)
    fmap = design.fitted_map(np.zeros((3, 2)), RBF)
    assert fmap.phases.min() >= 0.0 and fmap.phases.max() < 2 * np.pi
    assert abs(fmap.phases.mean() - np.pi) < 0.05
    assert fmap.phases.max() > 2 * np.pi - 0.01 and fmap.phases.min() < 0.01


def test_the_block_options_are_checked_by_name():
    with pytest.raises(ValueError) as info:
        FourierBlockDesign(n_components=10, solver="cg")
    assert str(info.value) == "approx='rff' with solver='bcd': solver must be 'bcd', got 'cg'"
    with pytest.raises(ValueError) as info:
        FourierBlockDesign(n_components=10, block_size=0)
    assert str(info.value) == "block_size must be at least 1, got 0"
    assert FourierBlockDesign(n_components=10, block_size=1).block_size == 1
    assert FourierBlockDesign(n_components=10, solver="bcd").options["solver"] == "bcd"


def test_a_block_variant_must_be_a_registered_approximations_own(monkeypatch):
    """The block variants are looked up by the approximation's name, and each must
    be registered under ``approx`` and derive from that approximation's design."""
    from kerndwd.engine.designs.feature_bcd import feature_block_design

    monkeypatch.setitem(feature_bcd_module.BLOCK_DESIGNS, "nystroem", FourierBlockDesign)  # not Nystroem's
    monkeypatch.setitem(feature_bcd_module.BLOCK_DESIGNS, "bogus", FourierBlockDesign)  # no such approximation
    for approx in ("nystroem", "bogus"):
        with pytest.raises(ValueError) as info:
            feature_block_design(approx, {})
        assert str(info.value) == (f"approx must be one of ['bogus', 'nystroem', 'rff'] with solver='bcd', "
                                   f"got {approx!r}")
    assert type(feature_block_design("rff", {"n_components": 5})) is FourierBlockDesign
