"""Checks of scalar arguments, shared by every module that takes one.

Each number check returns the value converted (``float`` or ``int``) or
raises ``TypeError`` (not a number of the right kind) or ``ValueError`` (out
of range), with a message that starts with the argument's name.
:func:`float_dtype` reads a ``dtype`` argument and leaves the refusal to its
caller, whose message names what the dtype is for.
"""

from __future__ import annotations

import numbers

import numpy as np

__all__ = ["check_real", "check_integer", "float_dtype", "FLOAT_DTYPES"]

# the two floating types a matrix of the engine may be held in
FLOAT_DTYPES = ("float64", "float32")

_RANGES = {
    "positive": ("positive and finite", lambda v: v > 0),
    "nonneg": ("non-negative and finite", lambda v: v >= 0),
    "any": ("finite", lambda v: True),
}


def _is_real(value):
    return isinstance(value, numbers.Real) and not isinstance(value, (bool, np.bool_))


def check_real(value, name, range_="positive"):
    """A finite float; ``range_`` is ``"positive"``, ``"nonneg"`` or ``"any"``."""
    if not _is_real(value):
        raise TypeError(f"{name} must be a real number, got {value!r}")
    value = float(value)
    words, ok = _RANGES[range_]
    if not np.isfinite(value) or not ok(value):
        raise ValueError(f"{name} must be {words}, got {value!r}")
    return value


def check_integer(value, name, minimum=1):
    """A whole number (``5`` or ``5.0``) of at least ``minimum``, as an int."""
    if not _is_real(value) or not np.isfinite(float(value)) or not float(value).is_integer():
        raise TypeError(f"{name} must be an integer (at least {minimum}), got {value!r}")
    if value < minimum:
        raise ValueError(f"{name} must be at least {minimum}, got {value!r}")
    return int(value)


def float_dtype(value):
    """``value`` as float64 or float32 (a name, a type or a dtype), else None.

    ``None`` reads as float64, numpy's default; the dtype returned is in the
    machine's byte order, whatever order ``value`` names.
    """
    try:
        dtype = np.dtype(value)
    except TypeError:
        return None
    return np.dtype(dtype.name) if dtype.name in FLOAT_DTYPES else None
