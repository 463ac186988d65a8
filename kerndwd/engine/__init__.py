"""The DWD engine: one path-solver template, majorisers behind one contract,
designs that build them, and what each supports, declared once.

Layout (each module's docstring has the details):

* :mod:`.problem` -- :class:`Problem`, the validated input of a fit;
* :mod:`.loss`, :mod:`.objective` -- :class:`DWDLoss` (q and the weights,
  passed once) and :class:`Objective` (``F``, its gradient and curvatures);
* :mod:`.capabilities`, :mod:`.compatibility` -- what designs and path
  solvers support, and the one check that reads it (:func:`resolve`);
* :mod:`.solvers` -- the path-solver template (:func:`run_path`) and its
  iterations: MM (R's, plus a gradient rule and momentum) and semismooth Newton;
* :mod:`.majorisers` -- the MM step of each form; :mod:`.newton_systems` --
  the Newton system of each form;
* :mod:`.designs` -- the registry of designs, :func:`build_majoriser`, the
  exact kernel, kernel approximations, block coordinate descent and the Dask forms;
* :mod:`.forms`, :mod:`.predictors` -- ``f = b0 + B theta`` and prediction;
* :mod:`.chunked` -- per-row vectors on a Dask cluster;
* :mod:`.cache`, :mod:`.kernel_checks`, :mod:`.feature_maps`,
  :mod:`.certify`, :mod:`.results`, :mod:`.crossval`.

The faces (``kerndwd.fit``/``predict``, ``cv``/``tune``, the plots, and the
scikit-learn estimators) build a :class:`Problem` through the input layer
and call :func:`fit_path` or :func:`crossval.heldout_decisions`; none of
them knows a majoriser.
"""

from .cache import FactorCache
from .capabilities import DEFAULT_EPS, STOP_RULES, STORAGE_KINDS, DesignCapabilities, SolverCapabilities
from .compatibility import Resolved, resolve
from .designs import (BlockCoordinateDesign, Design, ExactDesign, FeatureDesign, FourierDesign, NystroemDesign,
                      build_majoriser, design_names, make_design, register_design)
from .loss import DWDLoss
from .objective import Objective
from .problem import GAM_FIT, GAM_TUNE, LINEAR_RULES, Problem
from .results import DIVERGED, PathResult, diverged_jerr, jerr_diverged, jerr_lambda
from .solvers import Iteration, Step, register_solver, run_path, solver_capabilities, solver_names
from .threads import blas_threads

__all__ = ["BlockCoordinateDesign", "DEFAULT_EPS", "DIVERGED", "DWDLoss", "Design", "DesignCapabilities",
           "ExactDesign", "FactorCache", "FeatureDesign", "FourierDesign", "GAM_FIT", "GAM_TUNE", "Iteration",
           "LINEAR_RULES", "NystroemDesign", "Objective", "PathResult", "Problem", "Resolved", "STOP_RULES",
           "STORAGE_KINDS", "SolverCapabilities", "Step", "build_majoriser", "design_names", "diverged_jerr",
           "fit_path", "jerr_diverged", "jerr_lambda", "make_design", "register_design", "register_solver",
           "resolve", "run_path", "solver_capabilities", "solver_names"]


def fit_path(problem, cache=None, callback=None):
    """Fit ``problem`` along its lambdas: returns ``(PathResult, majoriser)``;
    the majoriser's ``predictor`` turns the result's ``alpha`` into decision values.

    Parameters
    ----------
    problem : Problem
        A validated problem (its design and path solver included).
    cache : FactorCache, optional
        Work shared with other fits on the same rows; default a new one.
    callback : callable, optional
        ``callback(Step)`` after each move (see :class:`Step`).

    Returns
    -------
    result : PathResult
        Intercept-first coefficients, one column per finished lambda.
    majoriser : Majoriser
        The majoriser the design built (:class:`kerndwd.engine.majorisers.Majoriser`).

    Examples
    --------
    >>> import numpy as np
    >>> from kerndwd import engine
    >>> rng = np.random.default_rng(0)
    >>> X = rng.standard_normal((40, 3)); y = np.where(X[:, 0] > 0, 1.0, -1.0)
    >>> problem = engine.Problem.from_arrays(X, y, [1.0, 0.1], stop="kkt", eps=1e-8, method="newton")
    >>> result, majoriser = engine.fit_path(problem)
    >>> result.alpha.shape, result.jerr, bool((result.kkt <= 1e-8).all())
    ((4, 2), 0, True)
    >>> majoriser.predictor.decision(X[:5], result.alpha).shape  # rows x lambdas
    (5, 2)
    """
    cache = FactorCache(problem.X, problem.kern) if cache is None else cache
    with blas_threads(problem.design.blas_work(problem)):  # one choice for the build and the path
        majoriser = build_majoriser(problem, cache)
        return run_path(majoriser, problem, callback), majoriser
