"""Every face x design x path solver x stopping rule x input kind on one small problem.

The grid is generated from what the designs and path solvers declare
(:mod:`kerndwd.engine.capabilities`), so a design or solver registered
tomorrow is covered by this file the day it is registered.  Each
combination either gives the answer of the same request on dense float64
rows (within the tolerances below) or is refused with an error that names
the argument the declarations rule out.

Tolerances (decision values at held-out rows, absolute; they are of order 1):

* the gradient rule (``eps = 1e-8``): ``1e-5``, what two points with
  ``||grad F|| <= 1e-8`` at lambda >= 0.1 can differ by through the
  2 lambda-strong convexity of ``F`` (with room for the conditioning);
* R's step rule, rows that reach the same majoriser (float32, pandas: they
  are converted to the same float64 array): ``1e-12``; rows that reach another
  one (sparse rows: conjugate gradients; Dask rows: sums in another order),
  ``1e-3``, since R's rule stops wherever a step gets small, not at a point
  both iterations share.
"""

import itertools

import numpy as np
import pytest
from scipy import sparse

import kerndwd
from kerndwd.engine import design_names, make_design, solver_capabilities, solver_names
from kerndwd.engine.designs.feature_bcd import BLOCK_DESIGNS, FeatureAutoDesign, feature_block_design

pd = pytest.importorskip("pandas")
da = pytest.importorskip("dask.array")
pytest.importorskip("sklearn")
dask = pytest.importorskip("dask")

N, P = 40, 2
LAMBDAS = [1.0, 0.1]
KINDS = ("dense", "float32", "sparse", "pandas", "dask")
#: the storage each input kind reaches (float32 and pandas are converted to dense float64)
STORAGE = {"dense": "dense", "float32": "dense", "pandas": "dense", "sparse": "sparse", "dask": "remote"}
#: the faces, and the storage each takes whatever the design (cross-validation and
#: probabilities need every row in memory)
FACES = {"fit": ("dense", "sparse", "remote"), "predict": ("dense", "sparse", "remote"), "cv": ("dense", "sparse"),
         "tune": ("dense", "sparse"), "DWDClassifier": ("dense", "sparse", "remote"),
         "DWDClassifierCV": ("dense", "sparse")}
KERNELS = {"linear": kerndwd.vanilladot(), "rbf": kerndwd.rbfdot(0.5)}


#: The kernel approximations by block coordinate descent, selected by ``approx=``
#: together with ``solver="bcd"`` (no registered name of their own): named
#: ``"<approx>+bcd"`` in this grid
BLOCK_VARIANTS = {f"{name}+bcd": name for name in BLOCK_DESIGNS}
#: The same approximations with ``solver="auto"`` (the chooser between the one
#: system and the blocks): ``"<approx>+auto"``
AUTO_VARIANTS = {f"{name}+auto": name for name in BLOCK_DESIGNS}
#: Designs with an option that changes how they hold their matrices: named
#: ``"<design>+<value>"``
OPTION_VARIANTS = {"cg+single": ("cg", {"precision": "single"})}


def _design_of(name):
    if name in BLOCK_VARIANTS:
        return feature_block_design(BLOCK_VARIANTS[name], {})
    if name in AUTO_VARIANTS:
        return FeatureAutoDesign(AUTO_VARIANTS[name], n_components=15)
    if name in OPTION_VARIANTS:
        return make_design(*OPTION_VARIANTS[name], argument="solver")
    return make_design(name, {}, argument=_argument(name))


def _designs():
    """(design name, argument, kernel name) for every registered design and block
    variant: the linear kernel where the design serves it with sparse rows, and the
    rbf kernel."""
    out = []
    for name in design_names() + list(BLOCK_VARIANTS) + list(AUTO_VARIANTS) + list(OPTION_VARIANTS):
        design = _design_of(name)
        for kname, kern in KERNELS.items():
            caps = design.capabilities(kern, "dense")
            if caps.kernels is not None and kern.name not in caps.kernels:
                continue
            if kname == "linear" and "sparse" not in design.capabilities(kern, "sparse").storage:
                continue
            out.append((name, kname))
    return out


def _argument(name):
    from kerndwd.engine.designs.base import design_class

    return design_class(name).selected_by


CASES = [(face, d, k, m, s) for face in FACES for (d, k) in _designs() for m in [None] + solver_names()
         for s in ("step", "kkt")]


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((N, P))
    y = np.where(X[:, 0] * X[:, 1] + 0.3 * X[:, 0] > 0, "b", "a")
    newx = rng.standard_normal((7, P))
    return X, y, newx


def _as(kind, X):
    if kind == "float32":
        return X.astype(np.float32)
    if kind == "sparse":
        return sparse.csr_matrix(np.where(np.abs(X) > 0.3, X, 0.0))
    if kind == "pandas":
        return pd.DataFrame(X, columns=[f"x{j}" for j in range(X.shape[1])])
    if kind == "dask":
        return da.from_array(X, chunks=(N // 2, X.shape[1]))
    return X


def _dense_rows(kind, X):
    """The dense float64 rows a kind stands for (sparse rows are thresholded,
    float32 rows rounded)."""
    if kind == "sparse":
        return np.where(np.abs(X) > 0.3, X, 0.0)
    if kind == "float32":
        return X.astype(np.float32).astype(np.float64)
    return X


def _expected_refusal(face, design, kname, method, stop, kind):
    """The argument the declarations rule the request out by, or None."""
    kern = KERNELS[kname]
    storage = STORAGE[kind]
    if storage not in FACES[face]:
        return "X"
    chooser = _design_of("auto" if design == "exact" and stop == "kkt" else design)  # no solver named: auto
    picked = chooser.for_rows(N, P, kern, storage, False)
    caps = picked.capabilities(kern, storage)
    if storage not in caps.storage:
        return "X"
    if stop == "step" and picked.chosen is not None and picked.name != "exact":
        return "stop"  # R's rule is for R's iteration, not for what a chooser picked
    if method is None:
        return None  # the compatibility check picks a solver that fits (or says which to name)
    solver = solver_capabilities(method)
    if method not in caps.solvers or storage not in solver.storage:
        return "method"
    if stop not in solver.stop_rules:
        return "stop"
    return None


def _settings(design, kname, method, stop):
    kw = dict(kern=KERNELS[kname], method=method, stop=stop, eps=1e-8 if stop == "kkt" else 1e-5, maxit=20000,
              random_state=0)
    kw.update(_design_kw(design))
    return kw


def _design_kw(design, estimator=False):
    """The arguments that select ``design`` (several blocks for the block variants:
    a face's keyword, an estimator's ``design_options``)."""
    if design in BLOCK_VARIANTS:
        blocks = {"design_options": {"block_size": 4}} if estimator else {"block_size": 4}
        return dict(approx=BLOCK_VARIANTS[design], solver="bcd", n_components=15, **blocks)
    if design in AUTO_VARIANTS:
        return dict(approx=AUTO_VARIANTS[design], solver="auto", n_components=15)
    if design in OPTION_VARIANTS:
        name, options = OPTION_VARIANTS[design]
        return dict(solver=name, **({"design_options": options} if estimator else options))
    kw = {} if design == "exact" else {_argument(design): design}
    if design in ("nystroem", "rff"):
        kw["n_components"] = 15
    return kw


def _estimator_params(design, kname, method, stop, cv=False):
    kw = dict(kernel=KERNELS[kname], method=method, random_state=0, max_iter=20000, **_design_kw(design, estimator=True))
    if cv:
        return dict(lambdas=LAMBDAS, cv=3, cv_stop=stop, cv_tol=1e-8 if stop == "kkt" else 1e-5, stop="kkt",
                    tol=1e-8, **kw)
    return dict(lambd=LAMBDAS[1], stop=stop, tol=1e-8 if stop == "kkt" else 1e-5, **kw)


def _run(face, design, kname, method, stop, kind, data):
    """The face's answer on rows of ``kind``, as decision values (or held-out ones)."""
    from kerndwd import DWDClassifier, DWDClassifierCV

    X, y, newx = data
    Xk = _as(kind, X)
    newk = _as(kind, newx)
    kw = _settings(design, kname, method, stop)
    if face in ("fit", "predict"):
        path = kerndwd.fit(Xk, y, LAMBDAS, **kw)
        out = kerndwd.predict(path, newk if face == "predict" else _dense_rows(kind, newx), type="link")
    elif face == "cv":
        out = kerndwd.cv(Xk, y, LAMBDAS, nfolds=3, **kw).predmat
    elif face == "tune":
        out = np.hstack([r.predmat for r in kerndwd.tune(Xk, y, LAMBDAS, qvals=(1.0, 2.0), nfolds=3, **kw).cvres])
    elif face == "DWDClassifier":
        out = DWDClassifier(**_estimator_params(design, kname, method, stop)).fit(Xk, y).decision_function(newk)
    else:
        est = DWDClassifierCV(**_estimator_params(design, kname, method, stop, cv=True)).fit(Xk, y)
        out = np.concatenate([est.cv_results_["cvm"].ravel(), [est.lambda_]])
    return np.asarray(out.compute() if hasattr(out, "compute") else out, dtype=float)


def _tolerance(stop, kind):
    if stop == "kkt":
        return 1e-5
    return 1e-12 if STORAGE[kind] == "dense" else 1e-3


@pytest.mark.parametrize("face,design,kname,method,stop", CASES,
                         ids=["-".join(str(v) for v in c) for c in CASES])
def test_every_combination_answers_as_dense_rows_or_names_what_refuses_it(face, design, kname, method, stop, data):
    reference = None
    with dask.config.set(scheduler="synchronous"):
        for kind in KINDS:
            if kind == "sparse" and kname != "linear":
                continue  # sparse rows are for the linear kernel; the others are refused by the design
            refused = _expected_refusal(face, design, kname, method, stop, kind)
            if refused is None and reference is None and _expected_refusal(face, design, kname, method, stop,
                                                                            "dense") is None:
                reference = _run(face, design, kname, method, stop, "dense", data)
            if refused is not None:
                with pytest.raises((TypeError, ValueError)) as caught:
                    _run(face, design, kname, method, stop, kind, data)
                message = str(caught.value)
                assert message.startswith(f"{refused}") or f"{refused}=" in message or f"{refused} " in message, \
                    (kind, message)
                continue
            got = _run(face, design, kname, method, stop, kind, data)
            if kind in ("sparse", "float32"):  # other values than the reference's: their own dense fit
                got_ref = _run(face, design, kname, method, stop, "dense",
                               (_dense_rows(kind, data[0]), data[1], _dense_rows(kind, data[2])))
            else:
                got_ref = reference
            tol = _tolerance(stop, kind) if face != "DWDClassifierCV" else 0.1
            assert got.shape == got_ref.shape, kind
            finite = ~np.isnan(got_ref)
            np.testing.assert_array_equal(np.isnan(got), ~finite, err_msg=kind)
            np.testing.assert_allclose(got[finite], got_ref[finite], atol=tol, rtol=0, err_msg=kind)


def test_the_grid_covers_every_registered_design_and_solver():
    designs = {d for _, d, _, _, _ in CASES}
    solvers = {m for _, _, _, m, _ in CASES} - {None}
    assert designs == set(design_names()) | set(BLOCK_VARIANTS) | set(AUTO_VARIANTS) | set(OPTION_VARIANTS)
    assert solvers == set(solver_names())
    assert len(CASES) == len(FACES) * len(_designs()) * (len(solver_names()) + 1) * 2
    assert {k for k in itertools.chain.from_iterable([[s] for s in STORAGE.values()])} == {"dense", "sparse", "remote"}
