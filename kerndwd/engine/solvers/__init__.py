"""Path solvers: how a majoriser is run along the lambdas.

* :mod:`.template` -- the one lambda loop (warm starts, the ``maxit`` budget,
  ``npass``, ``jerr``, the guards, the fallback, the gap bound) and the
  registry of path solvers;
* :mod:`.mm` -- the MM iteration (R's, plus the gradient rule and momentum);
* :mod:`.newton` -- semismooth Newton, the default with the gradient rule.

A path solver is one :class:`~.template.Iteration` subclass and one
:func:`~.template.register_solver` line; its capabilities
(:class:`kerndwd.engine.capabilities.SolverCapabilities`) say what it runs.
"""

from . import mm, newton  # noqa: F401  (register "mm" and "newton")
from .template import (BUDGET, CONVERGED, DIVERGED_STATUS, SOLVERS, STALLED, Iteration, Step, register_solver,
                       run_path, solve_path, solver_capabilities, solver_names)

__all__ = ["BUDGET", "CONVERGED", "DIVERGED_STATUS", "SOLVERS", "STALLED", "Iteration", "Step", "register_solver",
           "run_path", "solve_path", "solver_capabilities", "solver_names"]
