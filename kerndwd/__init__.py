"""Distance weighted discrimination (DWD): linear, kernel and weighted, for any q > 0.

A Python home for the R package kerndwd (Wang & Zou, "Another look at
distance-weighted discrimination", JRSSB 2018)::

    import kerndwd
    path = kerndwd.fit(X, y, lambdas, kern=kerndwd.rbfdot(sigma=1), qval=1)
    kerndwd.predict(path, X_new, type="class")
"""

from typing import TYPE_CHECKING, Any

from ._warnings import DWDGridWarning
from .cv import CVResult, TuneResult, cv, tune
from .kernels import (
    Kernel,
    anovadot,
    besseldot,
    kernel_matrix,
    laplacedot,
    polydot,
    rbfdot,
    sigest,
    splinedot,
    userdot,
    vanilladot,
)
from .loss import conditional_probability, dwd_loss, dwd_loss_deriv, lipschitz, population_minimizer
from .path import DWDPath, fit, predict
from .plot import plot_cv, plot_path
from .engine.threads import threads

if TYPE_CHECKING:  # for type checkers only: the estimators and the warning's class load on first use
    from ._warnings import DWDConvergenceWarning
    from .estimator import DWDClassifier
    from .estimator_cv import DWDClassifierCV


def __getattr__(name: str) -> Any:
    # the scikit-learn estimators load on first use: importing scikit-learn
    # takes seconds, and it is an optional dependency
    if name == "DWDClassifier":
        from .estimator import DWDClassifier

        return DWDClassifier
    if name == "DWDClassifierCV":
        from .estimator_cv import DWDClassifierCV

        return DWDClassifierCV
    if name == "DWDConvergenceWarning":  # a scikit-learn ConvergenceWarning where scikit-learn imports
        from ._warnings import convergence_warning

        return convergence_warning()
    if name == "datasets":
        import importlib

        return importlib.import_module(".datasets", __name__)
    raise AttributeError(f"module 'kerndwd' has no attribute {name!r}")


__version__ = "0.1.0"

__all__ = [
    "CVResult",
    "DWDClassifier",
    "DWDClassifierCV",
    "DWDConvergenceWarning",
    "DWDGridWarning",
    "DWDPath",
    "Kernel",
    "TuneResult",
    "anovadot",
    "besseldot",
    "conditional_probability",
    "cv",
    "dwd_loss",
    "dwd_loss_deriv",
    "fit",
    "kernel_matrix",
    "laplacedot",
    "lipschitz",
    "plot_cv",
    "plot_path",
    "polydot",
    "population_minimizer",
    "predict",
    "rbfdot",
    "sigest",
    "splinedot",
    "threads",
    "tune",
    "userdot",
    "vanilladot",
]
