"""How many BLAS threads a fit uses.

OpenBLAS (and MKL) start one thread per core for every call, and their
threads wait for work by spinning.  For small matrices the threads cost more
than they save, and on a machine that other jobs share the spinning threads
compete with those jobs: a 333-row rbf fit that takes 0.2 s with one thread
can take seconds with the default.  So the engine chooses:

* work whose largest dense BLAS-3 operation (an eigendecomposition or
  Cholesky factor of the kernel matrix, the Gram matrix of stored features)
  has fewer than :data:`PARALLEL_FLOPS` floating point operations runs on one
  BLAS thread; each design states that count (:meth:`Design.blas_flops`);
* larger work keeps the BLAS library's own setting (every core, or what
  ``OPENBLAS_NUM_THREADS`` and its kin say);
* folds run in parallel by ``n_jobs`` are limited by joblib, which gives each
  worker process ``cores // n_jobs`` BLAS threads.

:func:`threads` overrides the choice for the fits (and cross-validations)
run inside it (``with kerndwd.threads(2): ...``; ``threads(None)`` restores the
engine's choice).  ``benchmarks/threads.py`` measures the choice against
every fixed thread count, with and without a competing load.
"""

from __future__ import annotations

import contextlib
import contextvars
import numbers

__all__ = ["threads", "blas_threads", "PARALLEL_FLOPS"]

#: Floating point operations of the largest BLAS-3 call from which a fit uses
#: more than one BLAS thread: an eigendecomposition of an n x n matrix is
#: about 10 n^3 flops and wins from a second thread from n = 1000 on, and loses
#: at n = 300, on this project's 2-core machines (benchmarks/output/threads.md).
PARALLEL_FLOPS = 2e9

_USER = contextvars.ContextVar("kerndwd_threads", default=None)
_BLAS = None  # the BLAS libraries' threadpoolctl controllers, found on first use


def _blas_controllers():
    global _BLAS
    if _BLAS is None:
        try:
            from threadpoolctl import ThreadpoolController
        except ImportError:  # without threadpoolctl the BLAS library's own setting holds
            _BLAS = []
        else:
            _BLAS = [lib for lib in ThreadpoolController().lib_controllers if lib.user_api == "blas"]
    return _BLAS


@contextlib.contextmanager
def threads(n):
    """Use ``n`` BLAS threads in every fit and cross-validation run inside
    the ``with`` block (None: the engine's choice, see
    :mod:`kerndwd.engine.threads`).

    Parameters
    ----------
    n : int or None
        At least 1.

    Raises
    ------
    ValueError
        ``n`` is not a positive integer or None.

    Examples
    --------
    >>> import numpy as np, kerndwd
    >>> X = np.random.default_rng(0).standard_normal((40, 2)); y = np.where(X[:, 0] > 0, 1, -1)
    >>> with kerndwd.threads(1):
    ...     path = kerndwd.fit(X, y, [0.1], kern=kerndwd.rbfdot(1.0))
    >>> path.jerr
    0
    """
    if n is not None:
        if isinstance(n, bool) or not isinstance(n, numbers.Integral) or n < 1:
            raise ValueError(f"threads: n must be a positive integer or None, got {n!r}")
        n = int(n)
    token = _USER.set(n)
    try:
        yield
    finally:
        _USER.reset(token)


@contextlib.contextmanager
def blas_threads(flops):
    """Run the block on the BLAS threads for work whose largest BLAS-3 call
    has ``flops`` operations: the user's :func:`threads`, else one thread
    below :data:`PARALLEL_FLOPS` and the library's setting above."""
    n = _USER.get()
    if n is None and flops >= PARALLEL_FLOPS:
        yield
        return
    n = 1 if n is None else n
    libs = _blas_controllers()
    before = [lib.num_threads for lib in libs]
    if all(b == n for b in before):
        yield
        return
    for lib in libs:
        lib.set_num_threads(n)
    try:
        yield
    finally:
        for lib, b in zip(libs, before):
            lib.set_num_threads(b)
