"""Decision values, labels and probabilities at new rows, for every face.

:class:`kerndwd.DWDPath` and the estimators predict through these functions,
so rows in memory and rows on a Dask cluster get the same checks and the
same numbers; on Dask rows every result stays lazy (one task per row chunk).
"""

from __future__ import annotations

import warnings

import numpy as np
from scipy import sparse

from ._inputs import check_matrix
from .calibration import platt_probability
from .engine.chunked import is_dask_collection
from .engine.designs.dask import dask_decision
from .loss import conditional_probability

__all__ = ["new_rows", "links", "sign_labels", "argmax_labels", "platt", "population_probability"]


def new_rows(newx, predictor, name="newx"):
    """Validated rows to predict at: numeric and finite (checked in each chunk's
    task for Dask rows), with the fit's number of columns; sparse only for a
    fit linear in ``x``."""
    newx = check_matrix(newx, name)
    if predictor.coef_space != "beta" and sparse.issparse(newx):
        raise TypeError(f"sparse {name} is supported only by fits linear in x (the linear kernel solved for beta); "
                        f"pass {name}.toarray()")
    if newx.shape[1] != predictor.n_features:
        raise ValueError(f"{name} has {newx.shape[1]} columns but the model was fitted on {predictor.n_features}")
    return newx


def links(predictor, newx, alpha):
    """Decision values at validated rows, one column per column of ``alpha``."""
    if is_dask_collection(newx):
        return dask_decision(predictor, newx, alpha)
    with np.errstate(over="ignore", invalid="ignore"):
        return predictor.decision(newx, alpha)


def _lazy(fn, link, *args, dtype=float, drop_axis=None):
    """``fn(link, *args)``, chunk by chunk for a Dask ``link``."""
    if is_dask_collection(link):
        kwargs = {} if drop_axis is None else {"drop_axis": drop_axis}
        ndim = link.ndim - (0 if drop_axis is None else 1)
        return link.map_blocks(fn, *args, dtype=dtype, meta=np.empty((0,) * ndim, dtype=dtype), **kwargs)
    return fn(link, *args)


def _sign_block(block, classes):
    return classes[(block > 0).astype(int)]


def sign_labels(link, classes):
    """``classes[1]`` where the decision value is positive, else ``classes[0]`` (R's rule)."""
    classes = np.asarray(classes)
    return _lazy(_sign_block, link, classes, dtype=classes.dtype)


def _argmax_block(block, classes):
    return classes[np.argmax(block, axis=1)]


def argmax_labels(D, classes):
    """The class of the largest one-vs-rest decision value per row."""
    classes = np.asarray(classes)
    return _lazy(_argmax_block, D, classes, dtype=classes.dtype, drop_axis=1)


def platt(link, a, b):
    """Platt's sigmoid ``1 / (1 + exp(a f + b))`` of the decision values (lazy on Dask)."""
    return _lazy(platt_probability, link, a, b)


def population_probability(link, q):
    """The inversion of the population minimiser (4.4) (lazy on Dask)."""
    return _lazy(conditional_probability, link, q)


def calibrated(link, a, b, q, where):
    """Platt's sigmoid when its slope has the right sign (``a < 0``: a larger
    decision value means the second class more often), else, with a
    warning, the inversion of (4.4): a sigmoid that falls as the decision
    value rises contradicts the classifier it calibrates."""
    if a < 0:
        return platt(link, a, b)
    warnings.warn(f"Platt's sigmoid fitted {where} has slope a = {a:.3g} >= 0 (probabilities would fall as the "
                  "decision value rises: the held-out decision values carry no usable ranking there); the "
                  "probabilities invert the population minimiser (4.4) instead", UserWarning, stacklevel=4)
    return population_probability(link, q)


def _class_probabilities_block(P, n_classes):
    if n_classes == 2:
        return np.column_stack([1.0 - P[:, 0], P[:, 0]])
    total = P.sum(axis=1, keepdims=True)
    return np.where(total > 0, P / np.where(total > 0, total, 1.0), 1.0 / P.shape[1])


def class_probabilities(P, n_classes):
    """Probabilities of every class from the probability of each binary problem's
    positive class: ``(1 - p, p)`` for two classes, one-vs-rest values
    normalised to sum to 1 otherwise (lazy on Dask)."""
    if is_dask_collection(P):
        return P.map_blocks(_class_probabilities_block, n_classes, dtype=float,
                            chunks=(P.chunks[0], (n_classes,)), meta=np.empty((0, 0)))
    return _class_probabilities_block(P, n_classes)
