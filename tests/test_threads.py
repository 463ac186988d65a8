"""BLAS threads: the engine's choice by the size of a fit's BLAS-3 work, the
user's override (kerndwd.threads), and that neither changes a number; the
engine's own threads: the usable cores, the shared pools, the ranges of rows."""

import os
import time

import numpy as np
import pytest

threadpoolctl = pytest.importorskip("threadpoolctl")

import kerndwd  # noqa: E402
from kerndwd.engine import threads as engine_threads  # noqa: E402
from kerndwd.engine.designs import ExactDesign  # noqa: E402


def blas_threads_now():
    return [lib["num_threads"] for lib in threadpoolctl.threadpool_info() if lib["user_api"] == "blas"]


@pytest.fixture
def seen(monkeypatch):
    """The BLAS thread counts in force while a design builds its majoriser."""
    record = []
    original = ExactDesign.majoriser

    def majoriser(self, problem, cache):
        record.append(blas_threads_now())
        return original(self, problem, cache)

    monkeypatch.setattr(ExactDesign, "majoriser", majoriser)
    return record


def data(n, p=3, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, p))
    return X, np.where(X[:, 0] + 0.3 * rng.standard_normal(n) > 0, 1, -1)


@pytest.fixture
def two_threads():
    """The library's setting at two threads for the test (so that one is a change)."""
    with threadpoolctl.threadpool_limits(2, user_api="blas"):
        if not all(n == 2 for n in blas_threads_now()):
            pytest.skip("the BLAS library here does not take a thread count")
        yield


def test_small_work_runs_on_one_thread_and_the_setting_is_restored(seen, two_threads):
    X, y = data(50)
    kerndwd.fit(X, y, [0.1], kern=kerndwd.rbfdot(1.0))
    assert seen and all(n == 1 for n in seen[0])
    assert all(n == 2 for n in blas_threads_now())


def test_large_work_keeps_the_library_setting(seen, two_threads, monkeypatch):
    monkeypatch.setattr(engine_threads, "PARALLEL_FLOPS", 10.0 * 50 ** 3)  # 50 rows count as large here
    monkeypatch.setattr(engine_threads, "_others_running", lambda: 0)  # and no other job runs
    X, y = data(50)
    kerndwd.fit(X, y, [0.1], kern=kerndwd.rbfdot(1.0))
    assert all(n == 2 for n in seen[0])


def test_the_user_setting_overrides_the_choice(seen, two_threads):
    X, y = data(50)
    with kerndwd.threads(2):
        kerndwd.fit(X, y, [0.1], kern=kerndwd.rbfdot(1.0))
    with kerndwd.threads(1), kerndwd.threads(None):  # None: the engine's choice again
        kerndwd.fit(X, y, [0.1], kern=kerndwd.rbfdot(1.0))
    assert all(n == 2 for n in seen[0]) and all(n == 1 for n in seen[1])


def test_cv_folds_follow_the_choice(seen, two_threads):
    X, y = data(60)
    kerndwd.cv(X, y, [1.0, 0.1], kern=kerndwd.rbfdot(1.0), nfolds=3, random_state=0)
    assert len(seen) == 3 and all(n == 1 for s in seen for n in s)


def test_the_designs_state_their_work():
    """The counts the choice reads: 10 n^3 for the kernel's eigendecomposition,
    2 n p^2 for the linear Gram, 2 n m max(m, p) for stored features, the
    kernel matrix's 2 n^2 p once for the designs that keep it (``solver="cg"``,
    BCD with ``cache_kernel``), and BCD's blocks per sweep otherwise."""
    from kerndwd.engine import Problem, make_design

    X, y = data(40, p=3)
    y = y.astype(float)
    rbf = kerndwd.rbfdot(1.0)
    exact = Problem.from_arrays(X, y, [0.1], kern=rbf)
    linear = Problem.from_arrays(X, y, [0.1])
    assert exact.design.blas_work(exact) == (10.0 * 40 ** 3, 0.0)
    assert linear.design.blas_work(linear) == (2.0 * 40 * 3 ** 2, 4.0 * 40 * 3)
    nys = make_design("nystroem", {"n_components": 7}, argument="approx", random_state=0)
    assert nys.blas_work(Problem.from_arrays(X, y, [0.1], kern=rbf, design=nys)) == (2.0 * 40 * 7 * 7, 0.0)
    bcd = make_design("bcd", {"cache_kernel": False}, random_state=0)
    assert bcd.blas_work(Problem.from_arrays(X, y, [0.1], kern=rbf, design=bcd)) == (0.0, 2.0 * 40 ** 2 * 3)
    kept = make_design("bcd", {"cache_kernel": True}, random_state=0)
    assert kept.blas_work(Problem.from_arrays(X, y, [0.1], kern=rbf, design=kept)) == (2.0 * 40 ** 2 * 3, 0.0)
    cg = make_design("cg", {}, random_state=0)
    assert cg.blas_work(Problem.from_arrays(X, y, [0.1], kern=rbf, design=cg)) == (2.0 * 40 ** 2 * 3, 0.0)


def test_large_work_beside_a_busy_core_uses_the_idle_one(seen, two_threads, monkeypatch):
    monkeypatch.setattr(engine_threads, "PARALLEL_FLOPS", 10.0 * 50 ** 3)
    monkeypatch.setattr(engine_threads, "_others_running", lambda: 1)
    monkeypatch.setattr(engine_threads.os, "sched_getaffinity", lambda pid: {0, 1})
    X, y = data(50)
    kerndwd.fit(X, y, [0.1], kern=kerndwd.rbfdot(1.0))
    assert all(n == 1 for n in seen[0]) and all(n == 2 for n in blas_threads_now())


def test_a_busy_process_beside_is_counted_from_proc():
    """The default ``/proc`` sees a process that spins beside this one (a look
    can fall in its pause: the most of twenty looks counts)."""
    import os
    import subprocess
    import sys

    if not os.path.exists("/proc/loadavg"):
        pytest.skip("no /proc here")
    spinner = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        time.sleep(0.2)  # started and spinning
        looks = []
        for _ in range(20):
            looks.append(engine_threads._others_running())
            time.sleep(0.01)
    finally:
        spinner.kill()
        spinner.wait()
    assert max(looks) >= 1


def test_the_idle_cores_are_the_fewest_of_three_looks_half_a_millisecond_apart(monkeypatch):
    monkeypatch.setattr(engine_threads.os, "sched_getaffinity", lambda pid: {0, 1, 2, 3})
    counts, pauses = iter([0, 2, 1]), []
    monkeypatch.setattr(engine_threads, "_others_running", lambda: next(counts))
    monkeypatch.setattr(engine_threads.time, "sleep", pauses.append)
    assert engine_threads._idle_cores() == 2
    assert pauses == [5e-4, 5e-4]


def test_a_block_object_entered_again_inside_its_own_work_restores_nothing(fake_blas):
    """Each entry decides anew whether it chose: an object that chose once and
    is entered again inside a block for the same work leaves that block's
    choice to it."""
    block = engine_threads.blas_threads(SMALL)
    with block:
        assert fake_blas.num_threads == 1
    with engine_threads.blas_threads(SMALL):
        with block:
            assert fake_blas.num_threads == 1
        assert fake_blas.num_threads == 1 and engine_threads._ENCLOSING.get() is not None
    assert fake_blas.changes == [1, 2, 1, 2] and engine_threads._ENCLOSING.get() is None


@pytest.mark.parametrize("n", [0, -1, 1.5, "2", True])
def test_a_thread_count_must_be_a_positive_integer(n):
    with pytest.raises(ValueError, match="threads: n must be a positive integer or None"):
        with kerndwd.threads(n):
            pass


def test_threads_change_no_number():
    X, y = data(80)
    with kerndwd.threads(1):
        one = kerndwd.fit(X, y, [1.0, 0.1, 0.01], kern=kerndwd.rbfdot(0.5))
    with kerndwd.threads(2):
        two = kerndwd.fit(X, y, [1.0, 0.1, 0.01], kern=kerndwd.rbfdot(0.5))
    np.testing.assert_array_equal(one.npass, two.npass)
    np.testing.assert_allclose(one.alpha, two.alpha, rtol=1e-9, atol=1e-12)


class FakeBlas:
    """A BLAS library's thread controller, recording every change (the choice's
    logic checked on any machine, whatever its BLAS takes)."""

    user_api = "blas"

    def __init__(self, n):
        self.num_threads, self.changes = n, []

    def set_num_threads(self, n):
        self.changes.append(n)
        self.num_threads = n


@pytest.fixture
def fake_blas(monkeypatch):
    lib = FakeBlas(2)
    monkeypatch.setattr(engine_threads, "_BLAS", [lib])
    monkeypatch.setattr(engine_threads.os, "sched_getaffinity", lambda pid: {0, 1})
    return lib


SMALL, LARGE = (1.0, 1.0), (1e12, 0.0)


def test_the_choice_on_a_controller(fake_blas, monkeypatch):
    others = []
    monkeypatch.setattr(engine_threads, "_others_running", lambda: others[0])
    with engine_threads.blas_threads(SMALL):  # small work: one thread, then the setting again
        assert fake_blas.num_threads == 1
    assert fake_blas.changes == [1, 2]
    others[:] = [0]
    with engine_threads.blas_threads(LARGE):  # large work, idle cores: the setting holds
        assert fake_blas.num_threads == 2
    others[:] = [1]
    with engine_threads.blas_threads(LARGE):  # beside a busy core: the idle one
        assert fake_blas.num_threads == 1
    assert fake_blas.changes == [1, 2, 1, 2]
    with kerndwd.threads(3), engine_threads.blas_threads(SMALL):  # the user's count, even above the setting
        assert fake_blas.num_threads == 3
    assert fake_blas.num_threads == 2


def test_a_nested_block_for_the_same_work_keeps_the_choice_made_outside(fake_blas, monkeypatch):
    """The load read when the fit began decides for its build and path too: a
    competing job that starts in between changes nothing until the fit ends."""
    looks = []

    def others():
        looks.append(1)
        return 0 if len(looks) <= 3 else 1  # the first choice's three looks see idle cores

    monkeypatch.setattr(engine_threads, "_others_running", others)
    with engine_threads.blas_threads(LARGE):
        with engine_threads.blas_threads(LARGE), engine_threads.blas_threads(LARGE):
            assert fake_blas.num_threads == 2
        with engine_threads.blas_threads(SMALL):  # other work chooses again
            assert fake_blas.num_threads == 1
        assert fake_blas.num_threads == 2
    assert len(looks) == 3 and fake_blas.changes == [1, 2]
    with engine_threads.blas_threads(LARGE):  # a new fit reads the load again
        assert fake_blas.num_threads == 1
    assert fake_blas.num_threads == 2


def test_a_failed_choice_leaves_no_block_behind(fake_blas, monkeypatch):
    def broken():
        raise OSError("no /proc")

    monkeypatch.setattr(engine_threads, "_idle_cores", broken)
    with pytest.raises(OSError):
        with engine_threads.blas_threads(LARGE):
            pass
    assert engine_threads._ENCLOSING.get() is None
    monkeypatch.setattr(engine_threads, "_idle_cores", lambda: 1)
    with engine_threads.blas_threads(LARGE):  # chooses, not taken for nested in the failed one
        assert fake_blas.num_threads == 1
    assert fake_blas.changes == [1, 2]


def _proc(tmp_path, loadavg, tasks):
    """A /proc with ``loadavg`` and this process's tasks: {id: stat line, or None
    for a task that ended before its stat was read}."""
    tmp_path.mkdir(parents=True, exist_ok=True)
    (tmp_path / "loadavg").write_text(loadavg)
    for task, stat in tasks.items():
        folder = tmp_path / "self" / "task" / task
        folder.mkdir(parents=True)
        if stat is not None:
            (folder / "stat").write_text(stat)
    return str(tmp_path)


def test_the_others_running_are_the_runnable_threads_less_this_process_own(tmp_path):
    proc = _proc(tmp_path, "0.50 0.40 0.30 6/312 4242\n", {
        "100": "100 (python3) R 1 100 100 0 -1",
        "101": "101 (a) name) R 1 100 100 0 -1",  # a name holding ") ": the state follows the last ")"
        "102": "102 (worker) S 1 100 100 0 -1",
        "103": "103 (rare) r 1 100 100 0 -1",
        "104": None,
    })
    assert engine_threads._others_running(proc) == 4


def test_the_others_running_never_fall_below_zero_and_are_zero_where_unknown(tmp_path):
    proc = _proc(tmp_path / "a", "0.1 0.1 0.1 1/90 7\n", {"1": "1 (python3) R 0", "2": "2 (python3) R 0"})
    assert engine_threads._others_running(proc) == 0
    assert engine_threads._others_running(str(tmp_path / "none")) == 0


def test_cores_where_the_affinity_is_unknown(fake_blas, monkeypatch):
    monkeypatch.delattr(engine_threads.os, "sched_getaffinity")
    monkeypatch.setattr(engine_threads, "_others_running", lambda: 1)
    monkeypatch.setattr(engine_threads.os, "cpu_count", lambda: 4)
    assert engine_threads._idle_cores(samples=1) == 3
    monkeypatch.setattr(engine_threads.os, "cpu_count", lambda: None)
    monkeypatch.setattr(engine_threads, "_others_running", lambda: 0)
    assert engine_threads._idle_cores(samples=1) == 1  # no count known: one core, even when idle


def test_without_threadpoolctl_the_library_setting_holds(monkeypatch):
    import sys

    monkeypatch.setattr(engine_threads, "_BLAS", None)
    monkeypatch.setitem(sys.modules, "threadpoolctl", None)  # the import fails
    assert engine_threads._blas_controllers() == []
    with engine_threads.blas_threads(SMALL):
        pass


def test_a_pass_at_the_threshold_counts_as_large(fake_blas, monkeypatch):
    monkeypatch.setattr(engine_threads, "_others_running", lambda: 0)
    with engine_threads.blas_threads((0.0, engine_threads.PARALLEL_PASS_FLOPS)):
        assert fake_blas.num_threads == 2
    with engine_threads.blas_threads((engine_threads.PARALLEL_FLOPS, 0.0)):
        assert fake_blas.num_threads == 2
    assert fake_blas.changes == []


# --------------------------------------------------------------------------
# the shared thread pools and the ranges of rows they work on
# --------------------------------------------------------------------------
def test_usable_cores_is_the_affinity():
    assert engine_threads.usable_cores() == len(os.sched_getaffinity(0)) >= 1


def test_usable_cores_on_one_core_and_where_the_affinity_is_not_known(monkeypatch):
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0}, raising=False)
    assert engine_threads.usable_cores() == 1
    monkeypatch.delattr(os, "sched_getaffinity", raising=False)  # not Linux: the CPU count
    monkeypatch.setattr(os, "cpu_count", lambda: 3)
    assert engine_threads.usable_cores() == 3
    monkeypatch.setattr(os, "cpu_count", lambda: None)  # not known either
    assert engine_threads.usable_cores() == 1


@pytest.mark.parametrize("n, threads, expected", [
    (50, 4, [(0, 50)]), (1023, 2, [(0, 1023)]), (2048, 2, [(0, 1024), (1024, 2048)]),
    (2047, 2, [(0, 2047)]), (3100, 3, [(0, 1033), (1033, 2066), (2066, 3100)]), (10 ** 5, 1, [(0, 10 ** 5)]),
    (5000, 8, [(0, 1250), (1250, 2500), (2500, 3750), (3750, 5000)]), (0, 2, [(0, 0)])])
def test_row_ranges_give_each_thread_enough_rows(n, threads, expected):
    """One range per thread, of at least ``RANGE_MIN_ROWS`` rows each, covering
    the rows in order; None: the usable cores."""
    assert engine_threads.RANGE_MIN_ROWS == 1024
    assert engine_threads.row_ranges(n, threads) == expected


def test_row_ranges_default_to_the_usable_cores(monkeypatch):
    monkeypatch.setattr(engine_threads, "usable_cores", lambda: 3)
    assert len(engine_threads.row_ranges(10 ** 4)) == 3


def test_over_ranges_runs_on_a_named_shared_pool_in_order():
    """One range runs in the caller's thread; several on the pool named, whose
    threads carry the name, one pool per name and size; the results come in
    the order of the ranges."""
    import threading

    where = []

    def work(lo, hi):
        where.append(threading.current_thread().name)
        time.sleep(0.01 * (hi - lo == 1))  # the first range finishes last
        return hi - lo

    assert engine_threads.over_ranges([(0, 5)], work, "kerndwd-test") == [5]
    assert where == [threading.current_thread().name]
    where.clear()
    assert engine_threads.over_ranges([(0, 1), (1, 4), (4, 6)], work, "kerndwd-test") == [1, 3, 2]
    assert len(where) == 3 and all(name.startswith("kerndwd-test") for name in where)
    pool = engine_threads.shared_pool(3, "kerndwd-test")
    assert pool is engine_threads.shared_pool(3, "kerndwd-test") and pool._max_workers == 3
    assert engine_threads.shared_pool(2, "kerndwd-test") is not pool
    assert engine_threads.shared_pool(3, "kerndwd-other") is not pool
