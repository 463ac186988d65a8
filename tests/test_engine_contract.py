"""The engine contract: every registered design and every majoriser it builds
is held to the same checks, and a new design plugs in with one class and one
registration line.

The conformance checks follow the two references of the contract: skglm's
required attributes of a datafit (checked by its ``_validate``; here
:func:`kerndwd.engine.contract.check_majoriser`, run on every build), and
scikit-learn's ``NewtonSolver`` template, whose steps are separate methods
with one meaning each (here: the step, the change of ``f`` it makes, and the
gradient norm, each checked against a direct computation).
"""

import pickle
from dataclasses import replace
from unittest import mock

import numpy as np
import pytest
from scipy import linalg, sparse

import kerndwd
from kerndwd.engine import (FactorCache, FeatureDesign, Problem, build_majoriser, design_names, run_path,
                            solver_capabilities, solver_names)
from _engine import evaluate, mm_path
from kerndwd.engine.designs import base as designs_module
from kerndwd.engine.designs.feature_bcd import BLOCK_DESIGNS, feature_block_design
from kerndwd.engine import register_design
from kerndwd.engine.forms import Form
from kerndwd.engine.majorisers import Majoriser, check_majoriser
from kerndwd.engine.predictors import COEF_SPACES, Predictor


def _data(n=30, p=3, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, p))
    y = np.where(X[:, 0] + 0.5 * rng.standard_normal(n) > 0.2, 1.0, -1.0)
    return X, y, rng


def _exact_cases():
    """One problem per majoriser the exact design chooses (R's rule)."""
    X, y, rng = _data()
    w = rng.uniform(0.5, 2.0, y.size)
    lin, rbf = kerndwd.vanilladot(), kerndwd.rbfdot(0.5)
    return {
        "linear": Problem.from_arrays(X, y, [0.1], kern=lin),
        "linear-weighted": Problem.from_arrays(X, y, [0.1], kern=lin, weights=w),
        "kernel": Problem.from_arrays(X, y, [0.1], kern=rbf),
        "kernel-weighted": Problem.from_arrays(X, y, [0.1], kern=rbf, weights=w),
        "linear-kernel-form": Problem.from_arrays(X[:, :2], y, [0.1], kern=lin, linear_rule="tunedwd",
                                                  q=2.0).subset(np.arange(2)).with_labels(np.array([-1.0, 1.0])),
        "sparse": Problem.from_arrays(sparse.csr_matrix(np.where(np.abs(X) > 0.5, X, 0.0)), y, [0.1], kern=lin),
    }


def _cases():
    """(id, problem) for every registered design: the exact design's majorisers,
    and each other design on rbf data, unweighted and weighted."""
    out = [(f"exact:{k}", v) for k, v in _exact_cases().items()]
    X, y, rng = _data(seed=1)
    w = rng.uniform(0.5, 2.0, y.size)
    for name in design_names():
        if name == "exact":
            continue
        cls = designs_module.design_class(name)
        kern = kerndwd.rbfdot(0.5)
        design = cls(random_state=0)
        out.append((f"{name}", Problem.from_arrays(X, y, [0.1], kern=kern, design=design)))
        out.append((f"{name}:weighted", Problem.from_arrays(X, y, [0.1], kern=kern, design=design, weights=w)))
    # the approximations by block coordinate descent (approx= with solver="bcd") have no
    # registered name of their own: several blocks, columns formed and cached
    for name in BLOCK_DESIGNS:
        for cache in (False, True):
            design = feature_block_design(name, {"n_components": 20, "block_size": 6, "cache_features": cache},
                                          random_state=0)
            label = f"{name}+bcd" + (":cached" if cache else "")
            kern = kerndwd.rbfdot(0.5)
            out.append((label, Problem.from_arrays(X, y, [0.1], kern=kern, design=design)))
            out.append((f"{label}:weighted", Problem.from_arrays(X, y, [0.1], kern=kern, design=design, weights=w)))
    return out


CASES = _cases()


@pytest.mark.parametrize("problem", [c[1] for c in CASES], ids=[c[0] for c in CASES])
def test_majoriser_honours_the_contract(problem):
    assert_honours_contract(problem)


def assert_honours_contract(problem):
    """The contract checks on the majoriser that ``problem``'s design builds
    (other test files call this on problems of their own)."""
    maj = build_majoriser(problem, FactorCache(problem.X, problem.kern))
    # required attributes and types (what check_majoriser enforces on every build)
    assert isinstance(maj, Majoriser) and isinstance(maj.form, Form) and isinstance(maj.predictor, Predictor)
    assert maj.predictor.coef_space in COEF_SPACES
    assert maj.loss is problem.loss  # q and the weights enter once, through the problem
    assert maj.n == problem.n == maj.form.n
    zero = maj.start()
    assert zero.shape == (maj.ncoef,) and not zero.any()
    rng = np.random.default_rng(7)
    coord = 0.3 * rng.standard_normal(maj.ncoef)
    alpha = maj.to_alpha(coord)
    assert alpha is not coord and alpha.shape[0] >= 2
    # decision values: the form on the training rows, and the predictor agree
    f = alpha[0] + maj.form.apply(alpha[1:])
    assert f.shape == (problem.n,)
    if not sparse.issparse(problem.X):
        f_pred = maj.predictor.decision(problem.X, alpha[:, None])[:, 0]
        np.testing.assert_allclose(f_pred, f, rtol=1e-10, atol=1e-10)
    # the penalty in the majoriser's coordinates is the form's penalty
    assert maj.penalty_at(coord, f) == pytest.approx(maj.form.penalty(alpha[1:]), rel=1e-10, abs=1e-12)
    # one step: its df is the change of f, its grad_sq the squared gradient norm at coord,
    # and it does not raise the objective (it minimises a quadratic above F)
    lam = float(problem.lambdas[0])
    y, loss = problem.y, maj.loss
    z = loss.weighted_labels(y) * loss.deriv(y * f)
    # a majoriser that re-evaluates the loss within a step also takes f and y
    extra = {"f": f, "y": y} if maj.needs_decisions else {}
    step, df, grad_sq = maj.at_lambda(lam)(z, coord, **extra)
    assert step.shape == (maj.ncoef,)
    alpha_new = maj.to_alpha(coord + step)
    f_new = alpha_new[0] + maj.form.apply(alpha_new[1:])
    np.testing.assert_allclose(f + df, f_new, rtol=1e-9, atol=1e-9)
    _, before, grad = evaluate(maj.form, alpha, y, loss, lam)
    _, after, _ = evaluate(maj.form, alpha_new, y, loss, lam)
    assert grad_sq == pytest.approx(grad @ grad, rel=1e-8)
    assert after <= before + 1e-12 * abs(before)
    # the form takes a matrix of coefficients (one column per lambda) as it takes each column
    thetas = rng.standard_normal((alpha.shape[0] - 1, 3))
    applied = maj.form.apply(thetas)
    assert applied.shape == (problem.n, 3)
    for j in range(3):
        np.testing.assert_allclose(applied[:, j], maj.form.apply(thetas[:, j]), rtol=1e-12, atol=1e-12)
    zs = rng.standard_normal((problem.n, 2))
    back = maj.form.apply_t(zs)
    for j in range(2):
        np.testing.assert_allclose(back[:, j], maj.form.apply_t(zs[:, j]), rtol=1e-12, atol=1e-12)
    # start() maps intercept-first coefficients into the coordinates; to_alpha back
    np.testing.assert_allclose(maj.to_alpha(maj.start(alpha)), alpha, rtol=1e-10, atol=1e-12)
    assert not maj.start().any()
    # a design that lists Newton among its path solvers gives its majorisers a Newton
    # system in coordinates that map back to alpha; the others have none
    caps = problem.design.capabilities(problem.kern, problem.storage)
    system = maj.newton_system()
    assert (system is not None) == ("newton" in caps.solvers)
    if system is not None:
        np.testing.assert_allclose(system.to_alpha(system.start(alpha)), alpha, rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(system.decision(system.start(alpha)), f, rtol=1e-9, atol=1e-9)
    # the predictor is what a fitted path stores: it pickles
    clone = pickle.loads(pickle.dumps(maj.predictor))
    if not sparse.issparse(problem.X):
        np.testing.assert_array_equal(clone.decision(problem.X[:5], alpha[:, None]),
                                      maj.predictor.decision(problem.X[:5], alpha[:, None]))


@pytest.mark.parametrize("problem", [c[1] for c in CASES], ids=[c[0] for c in CASES])
def test_every_path_solver_reaches_the_same_optimum(problem):
    """Each registered path solver that implements the gradient rule runs on
    every design's majoriser it supports (the design's declared capabilities)
    and stops each lambda at ``||grad F|| <= 1e-9``, at the same objective."""
    objectives = {}
    allowed = problem.design.capabilities(problem.kern, problem.storage).solvers
    for name in solver_names():
        caps = solver_capabilities(name)
        if "kkt" not in caps.stop_rules or name not in allowed:
            continue
        tight = replace(problem, stop="kkt", eps=1e-9, maxit=5000, method=name, accelerate=caps.momentum,
                        lambdas=np.array([1.0, 0.1]))
        result = run_path(build_majoriser(tight, FactorCache(tight.X, tight.kern)), tight)
        assert result.jerr == 0 and (result.kkt <= 1e-9).all(), name
        objectives[name] = result.objective
    assert set(allowed) <= set(objectives)
    for name, objective in objectives.items():
        np.testing.assert_allclose(objective, objectives["mm"], rtol=1e-9, err_msg=name)


def test_a_broken_design_is_refused_with_the_missing_piece_named():
    class Broken(Majoriser):
        n, ncoef = 3, 4

        def penalty_at(self, coord, f):
            return 0.0

        def at_lambda(self, lam):
            return None

    with pytest.raises(TypeError, match="lacks loss .*form .*predictor"):
        check_majoriser(Broken(), "broken")
    with pytest.raises(TypeError, match="not a Majoriser"):
        check_majoriser(object(), "broken")


# --------------------------------------------------------------------------
# a new design: one class, one registration line, no edit to the faces
# --------------------------------------------------------------------------
class PlainFeatures(FeatureDesign):
    """The toy design ``phi(x) = x``: linear DWD written as a feature design."""

    name = "plain"

    def fitted_map(self, X, kern):
        return self

    def transform(self, X):
        return X


@pytest.fixture
def plain_design():
    saved = dict(designs_module._REGISTRY)
    register_design(PlainFeatures)  # the one registration line
    yield "plain"
    designs_module._REGISTRY.clear()
    designs_module._REGISTRY.update(saved)


def test_toy_feature_design_matches_the_linear_solver_through_every_face(plain_design):
    X, y, rng = _data(n=60, p=4, seed=3)
    labels = np.where(y > 0, "yes", "no")
    lam = [1.0, 0.1, 0.01]
    lin = kerndwd.vanilladot()
    for wt in (None, rng.uniform(0.5, 2.0, y.size)):
        ref = kerndwd.fit(X, labels, lam, kern=lin, wt=wt)
        toy = kerndwd.fit(X, labels, lam, kern=lin, wt=wt, approx=plain_design, stop="step")  # R's rule, as ref
        assert toy.design == "plain" and toy.predictor.coef_space == "features"
        np.testing.assert_array_equal(toy.npass, ref.npass)
        assert np.abs(toy.alpha - ref.alpha).max() <= 1e-10
        newx = rng.standard_normal((7, 4))
        assert np.abs(kerndwd.predict(toy, newx, type="link") - kerndwd.predict(ref, newx, type="link")).max() <= 1e-10
        np.testing.assert_array_equal(toy.predict(newx), ref.predict(newx))
        cv_ref = kerndwd.cv(X, labels, lam, kern=lin, wt=wt, nfolds=4, random_state=0)
        cv_toy = kerndwd.cv(X, labels, lam, kern=lin, wt=wt, nfolds=4, random_state=0, approx=plain_design,
                            stop="step")
        assert np.abs(cv_toy.predmat - cv_ref.predmat).max() <= 1e-10
        np.testing.assert_array_equal(cv_toy.cvm, cv_ref.cvm)
    pytest.importorskip("sklearn")
    from kerndwd import DWDClassifier

    y3 = np.digitize(X[:, 1], [-0.5, 0.5])
    for target in (labels, y3):
        est_ref = DWDClassifier(lambd=0.05).fit(X, target)
        est_toy = DWDClassifier(lambd=0.05, approx=plain_design).fit(X, target)
        assert np.abs(est_toy.decision_function(X) - est_ref.decision_function(X)).max() <= 1e-10
        np.testing.assert_array_equal(est_toy.predict(X), est_ref.predict(X))


def test_unknown_design_and_options_are_refused_by_name(plain_design):
    X, y, _ = _data()
    with pytest.raises(ValueError, match="approx must be one of .*'plain'"):
        kerndwd.fit(X, y, [0.1], kern=kerndwd.vanilladot(), approx="nope")
    with pytest.raises(TypeError, match="approx='plain' does not accept n_components"):
        kerndwd.fit(X, y, [0.1], kern=kerndwd.vanilladot(), approx="plain", n_components=3)
    with pytest.raises(TypeError, match="accepted only together with approx= or solver="):
        kerndwd.fit(X, y, [0.1], kern=kerndwd.vanilladot(), n_components=3)
    with pytest.raises(ValueError, match="solver must be one of"):
        kerndwd.fit(X, y, [0.1], kern=kerndwd.vanilladot(), solver="plain")  # a design of approx=, not solver=
    with pytest.raises(ValueError, match="not both"):
        kerndwd.fit(X, y, [0.1], kern=kerndwd.vanilladot(), solver="exact", approx="plain")


# --------------------------------------------------------------------------
# shared work: one kernel matrix, one eigendecomposition per fold
# --------------------------------------------------------------------------
@pytest.mark.parametrize("cv_stop", ["step", "kkt"])
def test_classifier_cv_forms_each_folds_kernel_and_eigenbasis_once_for_all_q_and_classes(cv_stop):
    pytest.importorskip("sklearn")
    from kerndwd import DWDClassifierCV

    rng = np.random.default_rng(11)
    X = rng.standard_normal((90, 2))
    y = np.digitize(np.arctan2(X[:, 1], X[:, 0]), [-1.0, 1.0])  # three classes
    kern = kerndwd.rbfdot(0.8)
    kernel_calls = []
    original = type(kern).__call__

    def counting(self, x, y=None):
        kernel_calls.append((np.shape(x), None if y is None else np.shape(y)))
        return original(self, x, y)

    real_eigh = linalg.eigh
    with mock.patch.object(type(kern), "__call__", counting), \
            mock.patch.object(linalg, "eigh", side_effect=real_eigh) as eigh:
        est = DWDClassifierCV(lambdas=[1.0, 0.1, 0.01], qvals=(0.5, 1, 4), kernel=kern, cv=5, cv_stop=cv_stop,
                              random_state=0).fit(X, y)
    # the kernel matrix of all rows once for the folds (they slice it, or share it as the
    # columns of one solve), once for the refit (a DWDClassifier fitted through its public fit)
    assert kernel_calls == [((90, 2), None), ((90, 2), None)]
    # R's rule: one eigendecomposition per fold (5), shared by 3 q x 3 classes, and one for
    # the refit; the gradient rule's block of columns needs none
    assert eigh.call_count == (5 if cv_stop == "step" else 0) + 1
    assert est.cv_results_["cvm"].shape == (3, 3)
    # sharing changes no number: each q alone gives the same curve
    for iq, q in enumerate((0.5, 1, 4)):
        alone = DWDClassifierCV(lambdas=[1.0, 0.1, 0.01], qvals=(q,), kernel=kern, cv=5, cv_stop=cv_stop,
                                random_state=0).fit(X, y)
        np.testing.assert_array_equal(alone.cv_results_["cvm"][0], est.cv_results_["cvm"][iq])


def test_classifier_cv_is_tune_with_one_target():
    """With two classes and tunedwd's choice rule, DWDClassifierCV and tune read
    the same cross-validated curves (the folds use kerndwd's ridge and solver
    rule in the estimator, tunedwd's in tune: on rbf data only the ridge differs)."""
    pytest.importorskip("sklearn")
    from kerndwd import DWDClassifierCV

    X, y, _ = _data(n=50, p=2, seed=4)
    lam = [1.0, 0.1, 0.01]
    kern = kerndwd.rbfdot(1.0)
    est = DWDClassifierCV(lambdas=lam, qvals=(0.5, 2), kernel=kern, cv=5, choose="lambda_1se", random_state=0)
    est.fit(X, y)
    tuned = kerndwd.tune(X, y, lam, qvals=(0.5, 2), kern=kern, foldid=est.cv_results_["foldid"])
    for iq in range(2):
        np.testing.assert_allclose(est.cv_results_["cvm"][iq], tuned.cvres[iq].cvm, atol=0.05)
