"""The arguments of a face that are numbers, sequences or flags: lambdas, q,
``n_jobs``, booleans, kernel objects and seeds, each checked with an error
that names the argument."""

from __future__ import annotations

import numbers
import warnings

import numpy as np

from ..kernels import Kernel
from .._scalars import check_real
from .rows import as_float_array

__all__ = ["check_positive_sequence", "check_lambdas", "check_qval", "check_qvals", "check_n_jobs", "check_flag",
           "check_kernel", "seed_of", "MAX_LAMBDA", "QVAL_RANGE"]

#: Largest lambda accepted: ``2 n lambda`` must stay finite.  Far below it
#: every lambda already gives the intercept-only fit (beta = 0).
MAX_LAMBDA = 1e200

#: Range of q the engine fits.  Outside it the curvature bound of Lemma 2,
#: M = (q+1)^2/q, exceeds 1e4, so each MM step moves the fit by less than
#: 1e-4 of the gradient and a path would end where it started; the loss is
#: then within 1e-4 of its limits (the hinge as q grows).
QVAL_RANGE = (1e-4, 1e4)

#: The smallest normal double, the smallest lambda accepted.
_TINY = float(np.finfo(float).tiny)


# --------------------------------------------------------------------------
# scalars and sequences
# --------------------------------------------------------------------------
def check_positive_sequence(values, name, what="positive numbers"):
    """A non-empty 1-D float array of positive finite entries (a copy, order kept).
    Booleans are refused: ``True`` is not a lambda."""
    if isinstance(values, (str, bytes)):
        raise TypeError(f"{name} must be a sequence of {what}, got a string")
    if isinstance(values, (bool, np.bool_)) or (isinstance(values, np.ndarray) and values.dtype == bool) or (
            isinstance(values, (list, tuple)) and any(isinstance(v, (bool, np.bool_)) for v in values)):
        raise TypeError(f"{name} must be a sequence of {what}, got booleans")
    arr = as_float_array(values, name, f"a sequence of {what}")
    if arr.ndim == 0:
        arr = arr.reshape(1)
    if arr.ndim != 1 or arr.size == 0:
        raise ValueError(f"{name} must be a non-empty 1-D sequence of {what}")
    if not (arr.min() > 0 and arr.max() < np.inf):  # NaN fails both
        bad = arr[~(np.isfinite(arr) & (arr > 0))]
        raise ValueError(f"{name} must be positive and finite, got {bad[:3].tolist()}")
    return arr.copy()


def check_lambdas(lambdas, n, name="lambdas"):
    """Positive finite lambdas, sorted decreasing (with a warning when they came in
    another order: the path's columns follow the sorted order); R's default grid
    when None."""
    if lambdas is None:
        if n <= 10000:
            return 10.0 ** np.linspace(3, -3, 100)
        return 10.0 ** np.linspace(0, -7, 100)
    lam = check_positive_sequence(lambdas, name)  # a copy: returned as it is when already decreasing
    decreasing = lam.size == 1 or bool((lam[:-1] >= lam[1:]).all())
    ordered = lam if decreasing else np.sort(lam)[::-1].copy()
    if ordered[0] > MAX_LAMBDA:
        raise ValueError(f"{name} must be at most {MAX_LAMBDA:g} (got {ordered[0]:.3g}): 2 n lambda would overflow, "
                         "and any lambda that large gives the intercept-only fit")
    if ordered[-1] < _TINY:
        raise ValueError(f"{name} must be at least {_TINY:.3g} (the smallest normal double), "
                         f"got {ordered[-1]:.3g}: below it lambda carries no precision")
    if not decreasing:
        warnings.warn(f"{name} were sorted decreasing, as the path is fitted (warm starts from large to small "
                      f"lambda): column j of the result is at path.lambda_[j], not at the j-th lambda given",
                      UserWarning, stacklevel=4)
    return ordered


def check_qval(qval, name="qval"):
    # R resets qval <= 0 to 1 with a warning; we refuse, so that a typo never
    # silently fits a different model.
    q = check_real(qval, name, "positive")
    if not QVAL_RANGE[0] <= q <= QVAL_RANGE[1]:
        raise ValueError(f"{name} must lie in [{QVAL_RANGE[0]:g}, {QVAL_RANGE[1]:g}], got {q:g}: beyond it "
                         "M = (q+1)^2/q makes the majoriser's steps vanish (and V_q is within 1e-4 of its limit)")
    return q


def check_qvals(qvals, name="qvals"):
    """Loss exponents q, each in :data:`QVAL_RANGE`, in the order given."""
    qs = check_positive_sequence(qvals, name, "positive numbers (the loss needs q > 0)")
    for q in qs:
        check_qval(float(q), name)
    return qs


def check_n_jobs(n_jobs):
    if n_jobs is None:
        return 1
    if not isinstance(n_jobs, numbers.Integral) or isinstance(n_jobs, bool) or n_jobs == 0:
        raise ValueError(f"n_jobs must be None or a non-zero integer (-1 = all cores), got {n_jobs!r}")
    return int(n_jobs)


def check_flag(value, name):
    """``value`` as a bool: True or False (numpy's included), else ``TypeError`` naming it."""
    if not isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{name} must be True or False, got {value!r}")
    return bool(value)


def check_kernel(kern, name="kern"):
    if not isinstance(kern, Kernel):
        raise TypeError(
            f"{name} must be a kernel object such as kerndwd.rbfdot(sigma=1) or kerndwd.vanilladot(), "
            f"got {type(kern).__name__}"
            + ("; kerndwd.userdot(func) makes one from a function func(x, y)" if callable(kern) else "")
        )
    return kern


def seed_of(random_state):
    """``random_state`` for numpy's ``default_rng``: ints, Generators and None
    pass through (so the numbers equal :func:`kerndwd.cv`/``sigest`` with the
    same seed); a legacy ``RandomState`` gives a seed drawn from it."""
    if isinstance(random_state, np.random.RandomState):
        return int(random_state.randint(np.iinfo(np.int32).max))
    return random_state
