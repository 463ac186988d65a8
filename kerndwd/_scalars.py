"""Checks of scalar arguments, shared by every module that takes one.

Each returns the value converted (``float`` or ``int``) or raises
``TypeError`` (not a number of the right kind) or ``ValueError`` (out of
range), with a message that starts with the argument's name.
"""

from __future__ import annotations

import numbers

import numpy as np

__all__ = ["check_real", "check_integer"]

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
