"""How many BLAS threads a fit uses.

OpenBLAS (and MKL) start one thread per core for every call, and their
threads wait for work by spinning.  For small matrices the threads cost more
than they save, and on a machine that other jobs share the spinning threads
compete with those jobs: a 333-row rbf fit that takes 0.2 s with one thread
can take seconds with the default.  So the engine chooses:

* work below both thresholds runs on one BLAS thread: its largest one-off
  BLAS-3 call (an eigendecomposition or Cholesky factor of the kernel matrix,
  the Gram matrix of stored features) has fewer than :data:`PARALLEL_FLOPS`
  operations, and a pass fewer than :data:`PARALLEL_PASS_FLOPS`; each design
  states both counts (:meth:`Design.blas_work`);
* larger work uses the cores that no other process keeps busy now (the
  runnable threads of the machine, less this process's own, read from
  ``/proc``), at most the BLAS library's own setting (every core, or what
  ``OPENBLAS_NUM_THREADS`` and its kin say): beside a competing job, a second
  thread waits for a core more than it computes;
* folds run in parallel by ``n_jobs`` are limited by joblib, which gives each
  worker process ``cores // n_jobs`` BLAS threads.

:func:`threads` overrides the choice for the fits (and cross-validations)
run inside it (``with kerndwd.threads(2): ...``; ``threads(None)`` restores the
engine's choice).  ``benchmarks/threads.py`` measures the choice against
every fixed thread count, with and without a competing load.

The engine's own threads (forming blocks of kernel columns or features, and
multiplying float32 features, where numpy and BLAS release the GIL) come
from one place: :func:`usable_cores` counts the cores, :func:`row_ranges`
cuts the rows into one range per thread, and :func:`over_ranges` runs them
on a pool shared across the process (:func:`shared_pool`, made again in a
forked child).
"""

from __future__ import annotations

import contextlib
import contextvars
import numbers
import os
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

__all__ = ["threads", "blas_threads", "PARALLEL_FLOPS", "PARALLEL_PASS_FLOPS", "usable_cores", "shared_pool",
           "row_ranges", "over_ranges", "RANGE_MIN_ROWS"]

#: Operations of the largest one-off BLAS-3 call from which a fit may use more
#: than one BLAS thread: an eigendecomposition of an n x n matrix is about
#: 10 n^3 operations; on this project's 2-core machines a second thread gains
#: 1.6x at n = 3000 and nothing that survives a competing job at n = 1000
#: (benchmarks/output/threads.md).
PARALLEL_FLOPS = 3e10

#: Operations of one pass from which a fit may use more than one BLAS thread:
#: a pass of the linear form is two matrix-vector products over ``n x (p + 1)``
#: (``4 n p``), memory-bound, which a second thread speeds up by 1.4x at
#: 20 000 x 30 on an idle machine and not at 5000 x 30 (and slows down many
#: times beside a competing job, where the idle cores decide).
PARALLEL_PASS_FLOPS = 2e6

_USER: contextvars.ContextVar[int | None] = contextvars.ContextVar("kerndwd_threads", default=None)
_BLAS: list | None = None  # the BLAS libraries' threadpoolctl controllers, found on first use
#: ``(work, user's count)`` of the innermost :func:`blas_threads` block running (None outside
#: one): a block nested in one for the same work (a fit's build inside the fit, its path
#: inside it) keeps the choice made there instead of asking the libraries again
_ENCLOSING: contextvars.ContextVar[tuple | None] = contextvars.ContextVar("kerndwd_blas_work", default=None)


def _blas_controllers() -> list:
    global _BLAS
    if _BLAS is None:
        try:
            from threadpoolctl import ThreadpoolController
        except ImportError:  # without threadpoolctl the BLAS library's own setting holds
            _BLAS = []
        else:
            _BLAS = [lib for lib in ThreadpoolController().lib_controllers if lib.user_api == "blas"]
    return _BLAS


def usable_cores() -> int:
    """The number of CPU cores this process may run on (its affinity on Linux,
    else the CPU count)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not on Linux
        return max(1, os.cpu_count() or 1)


#: Rows a thread gets at least in :func:`row_ranges`: below it the work of a
#: range costs less than handing it to a thread.
RANGE_MIN_ROWS = 1024

_POOLS: dict[tuple[str, int], ThreadPoolExecutor] = {}
# A process forked after a threaded fit (multiprocessing's default on Linux)
# inherits the pools without their threads, and would wait on them for ever:
# the child starts its own.
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_POOLS.clear)


def shared_pool(workers: int, name: str) -> ThreadPoolExecutor:
    """The process's pool of ``workers`` threads named ``name`` (numpy and BLAS
    release the GIL in the work these threads do), started on first use and
    made again in a forked child.  Each caller names its own pool, so that
    work submitted from one pool's threads never waits on that same pool."""
    key = (name, workers)
    if key not in _POOLS:
        _POOLS[key] = ThreadPoolExecutor(max_workers=workers, thread_name_prefix=name)
    return _POOLS[key]


def row_ranges(n: int, threads: int | None = None) -> list[tuple[int, int]]:
    """``(lo, hi)`` of consecutive ranges of rows covering ``range(n)``, one per
    thread (``threads``, None: :func:`usable_cores`), each of at least
    :data:`RANGE_MIN_ROWS` rows, or a single range."""
    threads = usable_cores() if threads is None else int(threads)
    count = max(1, min(threads, n // RANGE_MIN_ROWS))
    bounds = [n * i // count for i in range(count + 1)]
    return list(zip(bounds[:-1], bounds[1:]))


def over_ranges(ranges: list[tuple[int, int]], work: Callable[[int, int], Any], name: str) -> list:
    """``work(lo, hi)`` for each range, the ranges in parallel on the pool
    ``name`` (:func:`shared_pool`); the results in order."""
    if len(ranges) == 1:
        return [work(*ranges[0])]
    return list(shared_pool(len(ranges), name).map(lambda bounds: work(*bounds), ranges))


@contextlib.contextmanager
def threads(n: int | None) -> Iterator[None]:
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


def _others_running(proc: str = "/proc") -> int:
    """Runnable threads of other processes now (Linux: ``proc``'s ``loadavg``,
    less this process's threads in state R); 0 where unknown."""
    try:
        with open(f"{proc}/loadavg") as f:
            running = int(f.read().split()[3].split("/")[0])
        own = 0
        for task in os.listdir(f"{proc}/self/task"):
            try:
                with open(f"{proc}/self/task/{task}/stat") as f:
                    stat = f.read()
            except OSError:
                continue
            own += stat[stat.rindex(")") + 2] == "R"
    except (OSError, ValueError, IndexError):
        return 0
    return max(0, running - own)


def _idle_cores(samples: int = 3, spacing: float = 5e-4) -> int:
    """Cores no other process keeps busy: the fewest of ``samples`` looks
    ``spacing`` seconds apart (one look can fall in a competitor's pause; a
    second thread beside a busy core costs far more than it gains)."""
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        cores = os.cpu_count() or 1
    others = 0
    for k in range(samples):
        if k:
            time.sleep(spacing)
        others = max(others, _others_running())
    return max(1, cores - others)


class blas_threads:
    """Run the block on the BLAS threads for ``work = (once, per_pass)``, the
    operations of a fit's largest one-off BLAS-3 call and of one pass: the
    user's :func:`threads`, else one thread below both thresholds and the idle
    cores (at most the library's setting) above.  Inside a block for the same
    work and the same :func:`threads`, the count chosen there holds.

    A class rather than a generator: a fit enters it three times (the fit,
    its build and its path, nested), and a nested entry then costs a
    comparison, not a generator's frame."""

    __slots__ = ("_key", "_token", "_restore")
    _token: contextvars.Token | None  # set by each entry: None where an enclosing block's choice holds
    _restore: list  # [(library, count before)], set where a block chooses (its token set)

    def __init__(self, work: tuple[float, float]) -> None:
        once, per_pass = work
        self._key = ((once, per_pass), _USER.get())

    def __enter__(self) -> None:
        key = self._key
        if _ENCLOSING.get() == key:  # inside a block for the same work: its choice holds
            self._token = None
            return
        token = _ENCLOSING.set(key)
        try:
            self._restore = _choose(*key)
        except BaseException:
            _ENCLOSING.reset(token)
            raise
        self._token = token

    def __exit__(self, *exc: object) -> None:
        if self._token is None:
            return
        for lib, b in self._restore:
            lib.set_num_threads(b)
        _ENCLOSING.reset(self._token)


def _choose(work: tuple[float, float], n: int | None) -> list:
    """Set the BLAS libraries' threads for ``work`` (``n``: the user's count, or
    None); returns ``[(library, count before)]`` of those changed."""
    libs = _blas_controllers()
    user = n is not None
    if not user:
        once, per_pass = work
        if once < PARALLEL_FLOPS and per_pass < PARALLEL_PASS_FLOPS:
            n = 1
        elif libs:
            n = _idle_cores()
    changed = []
    for lib in libs:  # the user's count as given; the choice never above the library's setting
        before = lib.num_threads
        count = n if user else min(n, before)
        if count != before:
            lib.set_num_threads(count)
            changed.append((lib, before))
    return changed
