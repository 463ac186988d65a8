"""The design base class and registry (:mod:`kerndwd.engine.designs.base`):
option validation, the defaults a design inherits, the chooser's delegation,
registration and lookup, and :func:`build_majoriser`'s thread setting and
contract check.
"""

import contextlib

import numpy as np
import pytest

import kerndwd
from kerndwd import engine
from kerndwd.engine.capabilities import DesignCapabilities
from kerndwd.engine.designs import base
from kerndwd.engine.designs.base import (ChooserDesign, Design, build_majoriser, design_class, design_names,
                                         make_design, register_design)


class Plain(Design):
    name = "plain"
    selected_by = "solver"
    option_names = ("alpha", "beta")

    def majoriser(self, problem, cache):
        return make_design(None, {}).majoriser(problem, cache)


def _problem(design=None, weights=None):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(30, 3))
    y = np.where(X[:, 0] > 0, 1.0, -1.0)
    return engine.Problem.from_arrays(X, y, [0.5], design=design, weights=weights), X


def test_unknown_options_are_refused_sorted_with_the_accepted_ones():
    with pytest.raises(TypeError) as info:
        Plain(zeta=1, gamma=2)
    assert str(info.value) == "solver='plain' does not accept gamma, zeta (its options: alpha, beta)"

    class Bare(Plain):
        name = "bare"
        selected_by = "approx"
        option_names = ()

    with pytest.raises(TypeError) as info:
        Bare(alpha=1)
    assert str(info.value) == "approx='bare' does not accept alpha (its options: none)"


def test_what_a_design_inherits():
    d = Plain(random_state=7, alpha=1, beta="x")
    assert d.random_state == 7 and d.options == {"alpha": 1, "beta": "x"}
    assert d.model_seed is None and d.chosen is None
    assert d.for_rows(10, 2, kerndwd.rbfdot(1.0), "dense", False) is d
    assert d.capabilities(kerndwd.rbfdot(1.0), "dense") is Design.declared
    assert Design.declared == DesignCapabilities()
    problem, _ = _problem()
    assert d.blas_work(problem) == (0.0, 0.0)
    assert d.prepare(problem, None, []) is None
    assert d.described == "solver='plain'"
    assert repr(d) == "Plain(alpha=1, beta='x')" and repr(Plain()) == "Plain()"


def test_a_chooser_asks_its_pick_with_the_problems_shape():
    """``ChooserDesign.majoriser`` hands the problem's rows, columns, kernel,
    storage and weighting to :meth:`for_rows` and builds the pick's majoriser."""
    asked, caches = [], []

    class Picked(Plain):
        def majoriser(self, problem, cache):
            caches.append(cache)
            return super().majoriser(problem, cache)

    class Pick(ChooserDesign):
        name = "pick"

        def for_rows(self, n, p, kern, storage, weighted):
            asked.append((n, p, kern, storage, weighted))
            return Picked()

    for weights in (None, np.ones(30)):
        problem, X = _problem(weights=weights)
        cache = engine.FactorCache(X, problem.kern)
        majoriser = Pick().majoriser(problem, cache)
        assert majoriser.n == 30 and caches[-1] is cache
    assert asked == [(30, 3, problem.kern, "dense", False), (30, 3, problem.kern, "dense", True)]


def test_registration_and_lookup():
    with pytest.raises(TypeError) as info:
        register_design(int)
    assert str(info.value) == "register_design takes a Design subclass, got <class 'int'>"
    with pytest.raises(TypeError, match="got 'plain'"):
        register_design("plain")
    assert "plain" not in design_names()
    try:
        assert register_design(Plain) is Plain
        assert design_class("plain") is Plain
        assert "plain" in design_names("solver") and "plain" not in design_names("approx")
        d = make_design("plain", {"alpha": 2}, random_state=3)
        assert type(d) is Plain and d.options == {"alpha": 2} and d.random_state == 3
    finally:
        base._REGISTRY.pop("plain", None)
    assert design_names() == sorted(design_names()) and set(design_names("approx")) == {"nystroem", "rff"}
    with pytest.raises(KeyError):
        design_class("plain")


@pytest.mark.parametrize("name, argument", [("nystroem", "solver"), ("exact", "approx"), ("eigen", "solver"),
                                            (3, "solver")])
def test_make_design_refuses_a_name_its_argument_does_not_select(name, argument):
    with pytest.raises(ValueError) as info:
        make_design(name, {}, argument=argument)
    assert str(info.value) == f"{argument} must be one of {design_names(argument)}, got {name!r}"


def test_make_design_defaults_to_the_exact_kernel():
    d = make_design(None, {}, random_state=5)
    assert d.name == "exact" and d.random_state == 5


def test_build_majoriser_sets_threads_from_the_designs_work_and_checks_the_contract(monkeypatch):
    """The design's ``blas_work(problem)`` goes to :func:`blas_threads` around
    the build; a design that returns something outside the contract is
    refused naming the design."""
    seen = []

    @contextlib.contextmanager
    def record(work):
        seen.append(work)
        yield

    monkeypatch.setattr(base, "blas_threads", record)

    class Busy(Plain):
        def blas_work(self, problem):
            return float(problem.n), 2.0

    problem, X = _problem(design=Busy())
    majoriser = build_majoriser(problem, engine.FactorCache(X, problem.kern))
    assert seen == [(30.0, 2.0)] and majoriser.solver == "ldwd"

    class Broken(Plain):
        name = "broken"

        def majoriser(self, problem, cache):
            return object()

    problem, X = _problem(design=Broken())
    with pytest.raises(TypeError, match="design 'broken' built object, which is not a Majoriser"):
        build_majoriser(problem, engine.FactorCache(X, problem.kern))
