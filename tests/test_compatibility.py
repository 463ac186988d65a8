"""The one compatibility check (:func:`kerndwd.engine.resolve`): the defaults it
fills in and each refusal's full message, on the registered designs and path
solvers (and on small stand-in designs for the branches no registered design
reaches: a design without weights, a picked design under R's rule, a design
whose path solvers do not run the rule).

The messages are asserted whole: each names the argument, what was given and
what would work, in the face's own words for the argument (``names``).
"""

import numpy as np
import pytest

import kerndwd
from kerndwd import engine
from kerndwd.engine.capabilities import DEFAULT_EPS, DesignCapabilities, SolverCapabilities
from kerndwd.engine.compatibility import PREFERENCE, Resolved, _serving, default_solver, resolve

RBF = kerndwd.rbfdot(1.0)
LIN = kerndwd.vanilladot()


class Stand:
    """A stand-in design: what :func:`resolve` reads of one."""

    def __init__(self, caps, name="toy", chosen=None, selected_by="solver"):
        self.caps, self.name, self.chosen = caps, name, chosen
        self.described = f"{selected_by}={name!r}"

    def capabilities(self, kern, storage):
        return self.caps


def exact():
    return engine.make_design(None, {})


# --------------------------------------------------------------------------
# defaults
# --------------------------------------------------------------------------
def test_defaults_are_r_rule_and_r_iteration_on_the_exact_design():
    """No settings: the design's default rule (R's on the exact kernel), its
    tolerance, the MM iteration without momentum; the gradient rule brings
    Newton and momentum."""
    assert resolve(exact(), RBF, "dense") == Resolved("step", DEFAULT_EPS["step"], "mm", False)
    # momentum is on under the gradient rule whatever the solver (Newton hands a stalled lambda to the MM
    # iteration, which takes it)
    assert resolve(exact(), RBF, "dense", stop="kkt") == Resolved("kkt", DEFAULT_EPS["kkt"], "newton", True)
    assert resolve(exact(), RBF, "dense", stop="kkt", method="mm") == Resolved("kkt", 1e-5, "mm", True)
    r = resolve(exact(), RBF, "dense", stop="kkt", eps=3, method="mm", accelerate=np.bool_(False))
    assert r == Resolved("kkt", 3.0, "mm", False) and type(r.eps) is float and type(r.accelerate) is bool
    # rows on a cluster: Newton does not run there, the MM iteration does (the design's default rule)
    assert resolve(exact(), LIN, "remote") == Resolved("kkt", 1e-5, "mm", True)


def test_a_picked_design_defaults_to_the_gradient_rule():
    caps = DesignCapabilities(default_stop="step")
    assert resolve(Stand(caps, chosen="size: n = 5"), LIN, "dense").stop == "kkt"
    assert resolve(Stand(caps), LIN, "dense").stop == "step"


def test_default_solver_follows_the_preference_then_the_registry():
    """Newton where the design lists it and it runs the rule on the rows, else
    the MM iteration; a design listing no registered solver gets None."""
    assert PREFERENCE == ("newton", "mm")
    both = DesignCapabilities(solvers=("mm", "newton"))
    assert default_solver(both, "kkt", "dense") == "newton"
    assert default_solver(both, "step", "dense") == "mm"
    assert default_solver(both, "kkt", "remote") == "mm"
    assert default_solver(DesignCapabilities(solvers=("newton",)), "step", "dense") is None
    assert default_solver(DesignCapabilities(solvers=("lbfgs",)), "kkt", "dense") is None


def test_serving_lists_the_designs_for_a_kernel_and_storage():
    """In registry order, each as its argument names it; ``rff`` serves only
    the Gaussian and Laplace kernels; a design that cannot be built without
    options is left out."""
    assert _serving(LIN, "dense") == ["solver='auto'", "solver='bcd'", "solver='cg'", "solver='exact'",
                                      "approx='nystroem'"]
    assert _serving(RBF, "dense") == ["solver='auto'", "solver='bcd'", "solver='cg'", "solver='exact'",
                                      "approx='nystroem'", "approx='rff'"]
    assert _serving(RBF, "sparse") == []
    assert _serving(LIN, "sparse") == ["solver='auto'", "solver='exact'"]


# --------------------------------------------------------------------------
# refusals, message by message
# --------------------------------------------------------------------------
def test_a_kernel_the_design_does_not_serve():
    rff = engine.make_design("rff", {}, argument="approx")
    with pytest.raises(ValueError) as info:
        resolve(rff, LIN, "dense")
    assert str(info.value) == ("approx='rff' serves kern in ['laplacedot', 'rbfdot'], got kern=vanilladot(); "
                               "designs that serve it: solver='auto', solver='bcd', solver='cg', solver='exact', "
                               "approx='nystroem'")
    with pytest.raises(ValueError) as info:
        resolve(Stand(DesignCapabilities(kernels=("rbfdot",)), name="exact"), LIN, "sparse")
    assert str(info.value).endswith("designs that serve it: solver='auto'")  # not itself
    with pytest.raises(ValueError) as info:
        resolve(Stand(DesignCapabilities(kernels=("rbfdot",), storage=("remote",))), kerndwd.splinedot(), "remote")
    assert str(info.value).endswith("designs that serve it: solver='auto', solver='bcd', approx='nystroem'")


def test_a_kernel_no_other_design_serves_on_these_rows():
    with pytest.raises(ValueError) as info:
        resolve(Stand(DesignCapabilities(kernels=("rbfdot",), storage=("sparse",))), kerndwd.laplacedot(1.0),
                "sparse")
    assert str(info.value) == ("solver='toy' serves kern in ['rbfdot'], got kern=laplacedot(sigma=1.0); designs "
                               "that serve it: none")


def test_rows_no_design_takes_at_all(monkeypatch):
    """With no registered design taking the rows, even with the linear kernel,
    the message says so."""
    from kerndwd.engine import compatibility

    monkeypatch.setattr(compatibility, "_serving", lambda kern, storage: [])
    with pytest.raises(TypeError) as info:
        resolve(exact(), RBF, "sparse")
    assert str(info.value) == ("X: sparse rows (scipy.sparse) are not supported by solver='exact' with "
                               "kern=rbfdot(sigma=1.0), which takes dense rows in memory; such rows are taken only "
                               "by none. Pass X.toarray() for the others.")


def test_serving_skips_a_design_that_needs_options():
    """A registered design that cannot be built without options is skipped,
    and the designs after it are still listed."""
    from kerndwd.engine.designs import base

    class Needy(base.Design):
        name = "aaa-needy"
        selected_by = "solver"
        option_names = ("size",)

        def __init__(self, random_state=None, **options):
            if "size" not in options:
                raise TypeError("solver='aaa-needy' needs size")
            super().__init__(random_state=random_state, **options)

        def majoriser(self, problem, cache):
            raise AssertionError("not fitted here")

    base.register_design(Needy)
    try:
        assert _serving(LIN, "sparse") == ["solver='auto'", "solver='exact'"]
    finally:
        base._REGISTRY.pop("aaa-needy")


def test_rows_the_design_does_not_take_with_takers_for_this_kernel():
    with pytest.raises(TypeError) as info:
        resolve(exact(), RBF, "remote")
    assert str(info.value) == ("X: rows held by a Dask cluster are not supported by solver='exact' with "
                               "kern=rbfdot(sigma=1.0), which takes dense rows in memory; designs that take such "
                               "rows with this kernel: solver='auto', solver='bcd', approx='nystroem', "
                               "approx='rff'. Or fit a sample that fits in memory.")


def test_rows_no_design_takes_with_this_kernel_name_the_linear_takers():
    with pytest.raises(TypeError) as info:
        resolve(engine.make_design("nystroem", {}, argument="approx"), RBF, "sparse")
    assert str(info.value) == ("X: sparse rows (scipy.sparse) are not supported by approx='nystroem' with "
                               "kern=rbfdot(sigma=1.0), which takes dense rows in memory or rows held by a Dask "
                               "cluster; such rows are taken only by solver='auto' with kern=vanilladot(), "
                               "solver='exact' with kern=vanilladot(). Pass X.toarray() for the others.")


def test_rows_of_a_kind_without_a_hint():
    """Dense rows refused (a stand-in design taking only remote ones): the
    takers, and no hint after them."""
    with pytest.raises(TypeError) as info:
        resolve(Stand(DesignCapabilities(storage=("remote",))), RBF, "dense")
    assert str(info.value) == ("X: dense rows in memory are not supported by solver='toy' with "
                               "kern=rbfdot(sigma=1.0), which takes rows held by a Dask cluster; designs that take "
                               "such rows with this kernel: solver='auto', solver='bcd', solver='cg', "
                               "solver='exact', approx='nystroem', approx='rff'.")


def test_weights_the_design_does_not_fit():
    stand = Stand(DesignCapabilities(weights=False))
    with pytest.raises(ValueError) as info:
        resolve(stand, LIN, "dense", weighted=True)
    assert str(info.value) == "solver='toy' does not fit observation weights; fit without them"
    assert resolve(stand, LIN, "dense").method == "newton"


@pytest.mark.parametrize("stop", ["gap", 1, None])
def test_an_unknown_stopping_rule_named_in_the_faces_words(stop):
    if stop is None:
        assert resolve(exact(), LIN, "dense", stop=stop).stop == "step"
        return
    with pytest.raises(ValueError) as info:
        resolve(exact(), LIN, "dense", stop=stop, names={"stop": "cv_stop"})
    assert str(info.value) == f"cv_stop must be one of ['step', 'kkt'], got {stop!r}"


def test_r_rule_on_a_picked_design_that_is_not_rs():
    stand = Stand(DesignCapabilities(solvers=("mm",)), name="bcd", chosen="size: n = 50000 rows")
    with pytest.raises(ValueError) as info:
        resolve(stand, RBF, "dense", stop="step", names={"stop": "rule", "method": "how"})
    assert str(info.value) == ("rule='step' is R's rule, for R's own iteration; size picked solver='bcd' for "
                               "these rows, whose iterates are not R's: pass rule='kkt' (the default of a picked "
                               "design), or name the solver (solver='bcd') to run it under R's rule")
    # a picked exact design is R's: R's rule stands
    picked_exact = Stand(DesignCapabilities(solvers=("mm",)), name="exact", chosen="size: n = 50 rows")
    assert resolve(picked_exact, RBF, "dense", stop="step") == Resolved("step", 1e-5, "mm", False)


def test_no_path_solver_runs_the_rule():
    stand = Stand(DesignCapabilities(solvers=("newton",)))
    with pytest.raises(ValueError) as info:
        resolve(stand, LIN, "dense", stop="step", names={"method": "path_solver"})
    assert str(info.value) == ("no path solver fits solver='toy' under stop='step' on dense rows in memory; "
                               "solver='toy' supports path_solver in ['newton']")


@pytest.mark.parametrize("method", ["lbfgs", 3])
def test_an_unknown_path_solver(method):
    with pytest.raises(ValueError) as info:
        resolve(exact(), LIN, "dense", method=method)
    assert str(info.value) == f"method must be one of ['mm', 'newton'] or None, got {method!r}"


def test_a_path_solver_the_design_does_not_list():
    bcd = engine.make_design("bcd", {})
    with pytest.raises(ValueError) as info:
        resolve(bcd, RBF, "dense", method="newton")
    assert str(info.value) == "method='newton' cannot fit the solver='bcd' design; it supports method in ['mm']"


def test_a_path_solver_that_does_not_run_on_the_rows():
    with pytest.raises(ValueError) as info:
        resolve(exact(), LIN, "remote", method="newton")
    assert str(info.value) == "method='newton' does not run on rows held by a Dask cluster; use method in ['mm']"


def test_a_path_solver_without_the_rule():
    with pytest.raises(ValueError) as info:
        resolve(exact(), LIN, "dense", stop="step", method="newton")
    assert str(info.value) == ("method='newton' implements stop in ['kkt'], got stop='step'; for stop='step' use "
                               "method in ['mm']")


@pytest.mark.parametrize("bad", [1, "yes", 0.5])
def test_momentum_must_be_a_bool(bad):
    with pytest.raises(TypeError) as info:
        resolve(exact(), LIN, "dense", method="mm", accelerate=bad, names={"accelerate": "momentum"})
    assert str(info.value) == f"momentum must be True, False or None, got {bad!r}"


def test_momentum_on_a_path_solver_without_it():
    with pytest.raises(ValueError) as info:
        resolve(exact(), LIN, "dense", stop="kkt", accelerate=True)
    assert str(info.value) == ("accelerate (momentum) is an option of method in ['mm']; method='newton' (the "
                               "default for stop='kkt') has none: leave accelerate=None or pass method='mm'")
    assert resolve(exact(), LIN, "dense", stop="kkt", method="mm", accelerate=True).accelerate is True


def test_the_solver_capabilities_the_messages_rely_on():
    """What the expected messages above take from the registry."""
    from kerndwd.engine.solvers import solver_capabilities

    assert solver_capabilities("newton") == SolverCapabilities(stop_rules=("kkt",), storage=("dense", "sparse"),
                                                               momentum=False, fallback="mm")
    assert solver_capabilities("mm").stop_rules == ("step", "kkt") and solver_capabilities("mm").momentum
