"""The memory budget (kerndwd.engine.cache) and the factor cache's sharing:
the budget read from /proc/meminfo, its default fraction and its overrides;
a fold's matrices sliced from the parent's, formed once, forgotten on release."""

import io

import numpy as np
import pytest

import kerndwd
from kerndwd.engine import cache
from kerndwd.engine.cache import FactorCache


def _meminfo(monkeypatch, text):
    """``open`` of the cache module, serving ``text`` for /proc/meminfo; returns the paths opened."""
    opened = []

    def fake_open(path, *args, **kwargs):
        opened.append(path)
        if text is None:
            raise FileNotFoundError(path)
        return io.StringIO(text)

    monkeypatch.setattr(cache, "open", fake_open, raising=False)
    return opened


def test_the_memory_available_is_meminfo_s_memavailable_in_bytes(monkeypatch):
    opened = _meminfo(monkeypatch, "MemTotal:       24000000 kB\nMemFree:  100 kB\nMemAvailable:    2048 kB\n"
                                   "Buffers: 7 kB\n")
    assert cache.available_memory() == 2048 * 1024
    assert opened == ["/proc/meminfo"]


def test_without_memavailable_the_memory_is_the_free_pages_or_unknown(monkeypatch):
    _meminfo(monkeypatch, "MemTotal: 5 kB\n")
    monkeypatch.setattr(cache.os, "sysconf", lambda name: {"SC_AVPHYS_PAGES": 3, "SC_PAGE_SIZE": 4096}[name])
    assert cache.available_memory() == 3 * 4096
    _meminfo(monkeypatch, None)
    assert cache.available_memory() == 3 * 4096

    def no_sysconf(name):
        raise ValueError(name)

    monkeypatch.setattr(cache.os, "sysconf", no_sysconf)
    assert cache.available_memory() is None


def test_the_live_reading_is_a_positive_number_of_bytes():
    avail = cache.available_memory()
    assert avail is None or (isinstance(avail, int) and avail > 2**20)


def test_the_budget_is_half_the_memory_available_unless_set(monkeypatch):
    monkeypatch.setattr(cache, "available_memory", lambda: 8 * 2**30)
    assert cache.MEMORY_FRACTION == 0.5
    assert cache.memory_budget() == 4 * 2**30
    assert cache.memory_budget(1000) == 1000.0 and isinstance(cache.memory_budget(1000), float)
    assert cache.memory_budget(0) == 0.0  # a budget of zero is a budget
    monkeypatch.setattr(cache, "available_memory", lambda: None)
    assert cache.memory_budget() is None
    assert cache.memory_budget(unknown=7.0) == 7.0
    assert cache.memory_budget(5, unknown=7.0) == 5.0


def test_keeping_follows_the_caller_else_the_budget(monkeypatch):
    monkeypatch.setattr(cache, "available_memory", lambda: 2000)
    assert cache.keeps(None, 1000) is True  # at the budget: kept
    assert cache.keeps(None, 1001) is False
    assert cache.keeps(True, 10**15) is True and cache.keeps(False, 1) is False
    monkeypatch.setattr(cache, "available_memory", lambda: None)
    assert cache.keeps(None, 1) is False  # unknown memory: not kept unless asked
    assert cache.keeps(True, 1) is True


@pytest.mark.parametrize("nbytes, text", [(3.7 * 2**30, "3.7 GiB"), (2**31, "2 GiB"), (0.123 * 2**30, "0.12 GiB"),
                                          (2**40, "1e+03 GiB")])
def test_sizes_in_messages_are_gib_to_two_digits(nbytes, text):
    assert cache.gib(nbytes) == text


def test_a_fold_slices_the_parent_matrix_once_and_forgets_on_release():
    X = np.random.default_rng(0).standard_normal((12, 3))
    kern = kerndwd.rbfdot(sigma=0.7)
    parent = FactorCache(X, kern)
    rows, test = np.array([0, 2, 3, 7, 8, 11]), np.array([1, 4, 5])
    fold = parent.fold(rows)
    assert fold.n == 6 and parent.n == 12 and fold.kern is kern  # the kernel its checks name
    assert fold.cross_kernel(test) is None  # no matrix formed for the fold yet
    K = parent.kernel_matrix()
    np.testing.assert_array_equal(K, kern(X))
    Kf = fold.kernel_matrix()
    np.testing.assert_array_equal(Kf, K[np.ix_(rows, rows)])
    assert fold.kernel_matrix() is Kf
    cross = fold.cross_kernel(test)
    np.testing.assert_array_equal(cross(), K[np.ix_(test, rows)])
    assert cross() is cross()
    assert parent.cross_kernel(test) is None  # the whole problem has no parent to slice from
    w, V = fold.kernel_eigh()
    np.testing.assert_allclose((V * w) @ V.T, Kf, atol=1e-12)
    assert fold.kernel_eigh()[0] is w
    fold.release()
    assert fold._memo == {} and fold.cross_kernel(test) is None
    calls = []
    assert fold.memo("x", lambda: calls.append(1) or 5) == 5 and fold.memo("x", lambda: 6) == 5 and calls == [1]


def test_a_fold_s_indefinite_kernel_is_refused_naming_it():
    X = np.random.default_rng(1).standard_normal((40, 2)) * 3
    fold = FactorCache(X, kerndwd.splinedot()).fold(np.arange(30))
    with pytest.raises(ValueError, match=r"kern=splinedot\(\) on these data is not positive semi-definite"):
        fold.kernel_eigh()


# --------------------------------------------------------------------------
# the kernel matrix held in float32
# --------------------------------------------------------------------------
@pytest.mark.parametrize("block_rows", [1, 5, 10 ** 6])
def test_a_float32_kernel_matrix_is_the_double_one_rounded(monkeypatch, block_rows):
    """The kernel's own blocks of rows (the last one short), each formed in
    double precision and rounded into the float32 matrix: float32's rounding
    of the float64 matrix formed by the same blocks."""
    from kerndwd import kernels

    X = np.random.default_rng(6).standard_normal((23, 3))
    kern = kerndwd.rbfdot(sigma=0.4)
    monkeypatch.setattr(kernels, "_BLOCK_BYTES", block_rows * 8 * 23)
    calls = []
    real = cache.quiet_kernel
    monkeypatch.setattr(cache, "quiet_kernel",
                        lambda k, x, y=None, dtype=np.float64: calls.append((x.shape, dtype)) or real(k, x, y, dtype))
    K32 = cache.single_kernel_matrix(kern, X)
    assert K32.dtype == np.float32 and K32.shape == (23, 23)
    assert calls == [((23, 3), np.float32)]  # one call: the kernel's own blocks, its rows' norms once
    np.testing.assert_array_equal(K32, kern(X).astype(np.float32))


def test_a_float32_kernel_matrix_is_checked_as_the_double_one():
    """The diagonal on its double values (the data's scale named), overflow of
    float32's own range on the rounded ones, each naming the kernel."""
    X = np.random.default_rng(7).standard_normal((10, 2))
    with pytest.raises(ValueError, match=r"^kern=rbfdot\(sigma=1.0\) cannot be formed accurately"):
        cache.single_kernel_matrix(kerndwd.rbfdot(1.0), X * 1e8)
    big = kerndwd.polydot(degree=3, scale=1e13)  # entries near 1e39: finite in float64, not in float32
    assert np.isfinite(big(X)).all()
    with pytest.raises(ValueError, match=r"^kern=polydot\(.*overflows on these data: the kernel matrix has entries "
                                         r"beyond float32's range; use smaller kernel parameters \(degree, scale\) "
                                         r"or rescale X$"):
        cache.single_kernel_matrix(big, X)


def test_the_cache_holds_the_float32_matrix_alone_or_beside_the_double_one(monkeypatch):
    """``kernel_matrix(single=True)``: formed without the double matrix where that
    is not held (and then held alone), rounded from it where it is; a fold
    slices the float32 matrix of its parent, and its held-out kernel too."""
    X = np.random.default_rng(8).standard_normal((12, 2))
    kern = kerndwd.rbfdot(sigma=0.6)
    rows, test = np.array([0, 1, 4, 6, 9, 10, 11]), np.array([2, 3, 5])
    alone = FactorCache(X, kern)
    assert not alone.single_only() and not alone.is_fold
    K32 = alone.kernel_matrix(single=True)
    assert K32.dtype == np.float32 and alone.kernel_matrix(single=True) is K32
    assert alone.single_only() and "kernel_matrix" not in alone._memo
    np.testing.assert_array_equal(K32, cache.single_kernel_matrix(kern, X))
    fold = alone.fold(rows)
    assert fold.is_fold and fold.single_only() and fold.cross_kernel(test) is None
    Kf = fold.kernel_matrix(single=True)
    np.testing.assert_array_equal(Kf, K32[np.ix_(rows, rows)])
    assert "kernel_matrix" not in alone._memo  # no double matrix formed for the fold
    cross = fold.cross_kernel(test)
    assert cross().dtype == np.float32
    np.testing.assert_array_equal(cross(), K32[np.ix_(test, rows)])
    both = FactorCache(X, kern)
    K = both.kernel_matrix()
    formed = []
    real = cache.single_kernel_matrix
    monkeypatch.setattr(cache, "single_kernel_matrix", lambda *a: formed.append(1) or real(*a))
    copy = both.kernel_matrix(single=True)
    np.testing.assert_array_equal(copy, K.astype(np.float32))
    own = FactorCache(X, kern)  # a fold holding its own double matrix rounds it, leaving the parent's alone
    own_fold = own.fold(rows)
    own_fold.kernel_matrix()
    np.testing.assert_array_equal(own_fold.kernel_matrix(single=True), own.kernel_matrix()[np.ix_(rows, rows)]
                                  .astype(np.float32))
    assert formed == [] and "kernel_matrix_float32" not in own._memo
    assert not both.single_only()
    fold = both.fold(rows)
    assert not fold.single_only()
    fold.kernel_matrix()
    np.testing.assert_array_equal(fold.kernel_matrix(single=True), K[np.ix_(rows, rows)].astype(np.float32))
    assert fold.cross_kernel(test)().dtype == np.float64  # the double matrix where both are held
