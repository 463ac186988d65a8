"""The DWD engine: one MM loop, majorisers behind one contract, designs that build them.

Layout (each module's docstring has the details):

* :mod:`.contract` -- what a majoriser, a predictor and a form promise;
* :mod:`.loss` -- :class:`DWDLoss`, the exponent q and the weights, passed once;
* :mod:`.problem` -- :class:`Problem`, the validated input of a fit;
* :mod:`.loop` -- :func:`mm_path`, the one MM iteration (R's, plus a
  gradient stopping rule and momentum), and :func:`run_path`, which runs
  the problem's path solver (``method``);
* :mod:`.newton` -- :func:`newton_path`, semismooth Newton, the default
  path solver with the gradient rule;
* :mod:`.forms`, :mod:`.predictors` -- ``f = b0 + B theta`` and prediction;
* :mod:`.linear`, :mod:`.kernel`, :mod:`.iterative` -- the majoriser families;
* :mod:`.designs` -- the registry of designs and :func:`build_majoriser`;
* :mod:`.features` -- kernel approximations as designs: Nystrom features
  (``approx="nystroem"``) and random Fourier features (``approx="rff"``);
* :mod:`.bcd` -- the exact kernel by block coordinate majorization (``solver="bcd"``);
* :mod:`.cache` -- kernel matrices and decompositions shared across fits;
* :mod:`.crossval` -- the cross-validation core and R's CV rules.

The faces (``kerndwd.fit``/``predict``, ``cv``/``tune``, the plots, and the
scikit-learn estimators) build a :class:`Problem` and call :func:`fit_path`
or :func:`crossval.heldout_decisions`; none of them knows a majoriser.
"""

from . import bcd as _bcd  # noqa: F401  (registers solver="bcd")
from .cache import FactorCache
from .designs import Design, FeatureDesign, build_majoriser, design_names, make_design, register_design
from .features import FourierDesign, NystroemDesign  # registers approx="rff" and approx="nystroem"
from .loop import (DIVERGED, STOP_RULES, PathResult, default_method, evaluate, jerr_diverged, jerr_lambda,
                   method_names, method_settings, mm_path, register_method, run_path, runs_on_remote_rows)
from .newton import newton_path
from .loss import DWDLoss
from .problem import GAM_FIT, GAM_TUNE, LINEAR_RULES, Problem

__all__ = ["DWDLoss", "Design", "FactorCache", "FeatureDesign", "FourierDesign", "GAM_FIT", "GAM_TUNE",
           "LINEAR_RULES", "NystroemDesign", "PathResult", "Problem", "STOP_RULES", "build_majoriser",
           "default_method", "design_names", "evaluate", "fit_path", "make_design", "method_names",
           "method_settings", "mm_path", "newton_path", "register_design", "register_method", "run_path", "runs_on_remote_rows"]


def fit_path(problem, cache=None):
    """Fit ``problem`` along its lambdas: returns ``(PathResult, majoriser)``;
    the majoriser's ``predictor`` turns the result's ``alpha`` into decision values.

    Parameters
    ----------
    problem : Problem
        A validated problem (its design and path solver included).
    cache : FactorCache, optional
        Work shared with other fits on the same rows; default a new one.

    Returns
    -------
    result : PathResult
        Intercept-first coefficients, one column per finished lambda.
    majoriser : object
        The majoriser the design built (:class:`kerndwd.engine.contract.Majoriser`).

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
    majoriser = build_majoriser(problem, cache)
    return run_path(majoriser, problem), majoriser
