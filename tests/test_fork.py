"""A process forked after a Dask computation or a threaded fit can compute again.

mutmut forks one child per mutant after running the tests once; without the
fork hook of ``tests/conftest.py`` the child inherits the threaded
scheduler's pool without its threads, and the first ``compute`` of every
Dask test waits for ever, so each mutant of the Dask code would end by the
time limit instead of by its tests.
"""

import os
import sys
import time

import numpy as np
import pytest

da = pytest.importorskip("dask.array")

pytestmark = pytest.mark.skipif(not hasattr(os, "fork") or sys.platform == "win32", reason="needs os.fork")


def _wait(pid, seconds):
    """The child's exit status, or None once ``seconds`` have passed (the child is then killed)."""
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return os.waitstatus_to_exitcode(status)
        time.sleep(0.05)
    os.kill(pid, 9)
    os.waitpid(pid, 0)
    return None


def test_a_forked_child_computes_with_the_threaded_scheduler():
    x = da.arange(4000.0, chunks=50)  # 80 tasks: the parent's pool starts all its threads
    assert float((x * 2).sum().compute(scheduler="threads")) == 2 * float(np.arange(4000.0).sum())
    pid = os.fork()
    if pid == 0:  # the child: exit 0 only if the sum is computed and right
        ok = False
        try:
            ok = float((x + 1).sum().compute(scheduler="threads")) == float(np.arange(4000.0).sum()) + 4000
        finally:
            os._exit(0 if ok else 1)
    assert _wait(pid, 30) == 0  # None: it waited for its pool


def test_a_forked_child_forms_kernel_blocks_on_threads():
    """The engine's shared thread pools (``engine/threads.py``: the kernel
    blocks', the float32 features') are made again in a child forked after a
    threaded fit, which multiprocessing does on Linux."""
    from kerndwd.engine.forms import FeatureMatrixForm
    from kerndwd.engine.majorisers.feature_blocks import LandmarkBlockForm
    import kerndwd

    rng = np.random.default_rng(3)
    X = rng.normal(size=(2100, 2))
    kern = kerndwd.rbfdot(0.8)
    form = LandmarkBlockForm(kern, X, np.arange(0, 60, 3), 8, tile_rows=100, threads=2)
    expected = kern(X, X[0:60:3]) @ np.ones(20)
    np.testing.assert_allclose(form.apply(np.ones(20)), expected, rtol=1e-12)  # the parent's pool, started
    Phi = kern(X, X[0:60:3]).astype(np.float32)
    features = FeatureMatrixForm(Phi, n_threads=2, block_rows=100)
    np.testing.assert_allclose(features.apply(np.ones(20)), expected, rtol=1e-6)
    pid = os.fork()
    if pid == 0:
        ok = False
        try:
            again = LandmarkBlockForm(kern, X, np.arange(0, 60, 3), 8, tile_rows=100, threads=2)
            ok = bool(np.allclose(again.apply(np.ones(20)), expected, rtol=1e-12))
            ok = ok and bool(np.allclose(features.apply(np.ones(20)), expected, rtol=1e-6))
        finally:
            os._exit(0 if ok else 1)
    assert _wait(pid, 30) == 0  # None: it waited for the parent's pool
