"""The UCI loaders (local files, hash checks, a mocked download) and the paper's simulations."""

import hashlib
import io
import os
import urllib.error
import zipfile
from pathlib import Path

import numpy as np
import pytest

from kerndwd import datasets

#: A local copy of the UCI CSV files, named by the same variable the loaders read
#: (never committed to the repository); the tests that need it skip without it.
SHARED = Path(os.environ.get("KERNDWD_DATA", "") or "/nonexistent")
needs_shared = pytest.mark.skipif(
    not (SHARED / "bupa.csv").is_file(),
    reason="set KERNDWD_DATA to a folder with the UCI CSV files (they are never committed to the repository)",
)

# Class counts of the UCI files (their documented class sizes): (-1, +1).
EXPECTED = {
    "bupa": ((345, 6), 145, 200),
    "haberman": ((306, 3), 225, 81),
    "sonar": ((208, 60), 97, 111),
    "vertebral": ((310, 6), 100, 210),
}
LOADERS = {"bupa": datasets.load_bupa, "haberman": datasets.load_haberman,
           "sonar": datasets.load_sonar, "vertebral": datasets.load_vertebral}


@pytest.fixture
def isolated(monkeypatch, tmp_path):
    """No KERNDWD_DATA, an empty cache folder, and no network."""
    monkeypatch.delenv(datasets.DATA_ENV, raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))

    def no_network(*args, **kwargs):
        raise urllib.error.URLError("network disabled in tests")

    monkeypatch.setattr(datasets.uci, "urlopen", no_network)
    return tmp_path


def raw_uci_bytes(name):
    """The original UCI file rebuilt from the shared CSV (the exact inverse of the loader's conversion)."""
    lines = (SHARED / f"{name}.csv").read_bytes().split(b"\n")[1:-1]
    if name == "bupa":
        return b"".join(b",".join(ln.split(b",")[:-1]) + b"\n" for ln in lines)
    if name == "haberman":
        return b"".join(ln + b"\n" for ln in lines) + b"\n"
    if name == "vertebral":
        return b"".join(ln.replace(b",", b" ") + b"\n" for ln in lines)
    return b"".join(ln + b"\n" for ln in lines)


class FakeResponse(io.BytesIO):
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def payload_for(name, raw):
    if name != "vertebral":
        return raw
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        zf.writestr("column_2C.dat", raw)
        zf.writestr("column_3C.dat", b"unused")
    return buf.getvalue()


# --------------------------------------------------------------------------
# local files
# --------------------------------------------------------------------------
@needs_shared
@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_shapes_and_class_counts(name, isolated):
    shape, n_neg, n_pos = EXPECTED[name]
    X, y = LOADERS[name](data_home=SHARED)
    assert X.shape == shape and X.dtype == float
    assert set(np.unique(y)) == {-1.0, 1.0}
    assert (y == -1).sum() == n_neg and (y == 1).sum() == n_pos
    assert np.isfinite(X).all()


@needs_shared
def test_bupa_label_is_the_selector_field(isolated):
    X, y = datasets.load_bupa(data_home=SHARED)
    raw = np.loadtxt(SHARED / "bupa.csv", delimiter=",", skiprows=1)
    np.testing.assert_array_equal(X, raw[:, :6])  # drinks is kept in X, as in the paper
    np.testing.assert_array_equal(y, np.where(raw[:, 6] == 2, 1.0, -1.0))


@needs_shared
def test_environment_variable_and_frame_form(isolated, monkeypatch):
    pd = pytest.importorskip("pandas")
    monkeypatch.setenv(datasets.DATA_ENV, str(SHARED))
    Xf, yf = datasets.load_vertebral(as_frame=True)
    X, y = datasets.load_vertebral(data_home=SHARED)
    assert isinstance(Xf, pd.DataFrame) and isinstance(yf, pd.Series)
    assert list(Xf.columns)[0] == "pelvic_incidence" and Xf.shape == (310, 6)
    np.testing.assert_array_equal(Xf.to_numpy(), X)
    np.testing.assert_array_equal(yf.to_numpy(), y)
    assert Xf.iloc[0, 0] == pytest.approx(63.03)


@needs_shared
@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_original_uci_file_is_accepted(name, isolated):
    src = datasets.uci._SOURCES[name]
    raw = raw_uci_bytes(name)
    assert hashlib.sha256(raw).hexdigest() == src.raw_sha256
    folder = isolated / "uci"
    folder.mkdir()
    (folder / src.raw_name).write_bytes(raw)
    X1, y1 = datasets.load_dataset(name, data_home=folder)
    X2, y2 = datasets.load_dataset(name, data_home=SHARED)
    np.testing.assert_array_equal(X1, X2)
    np.testing.assert_array_equal(y1, y2)


@needs_shared
def test_damaged_local_file_is_refused(isolated):
    folder = isolated / "bad"
    folder.mkdir()
    text = (SHARED / "haberman.csv").read_text().replace("30,64,1,1", "30,64,1,2", 1)
    (folder / "haberman.csv").write_text(text)
    with pytest.raises(ValueError, match="sha256"):
        datasets.load_haberman(data_home=folder)


# --------------------------------------------------------------------------
# the download path, with a mocked urlopen
# --------------------------------------------------------------------------
@needs_shared
@pytest.mark.parametrize("name", ["sonar", "vertebral"])
def test_download_verifies_converts_and_caches(name, isolated, monkeypatch):
    calls = []
    raw = raw_uci_bytes(name)

    def fake_urlopen(url, timeout=None):
        calls.append(url)
        return FakeResponse(payload_for(name, raw))

    monkeypatch.setattr(datasets.uci, "urlopen", fake_urlopen)
    X, y = datasets.load_dataset(name)
    src = datasets.uci._SOURCES[name]
    assert calls == [src.url] and calls[0].startswith("https://archive.ics.uci.edu/")
    cached = isolated / "cache" / "kerndwd" / src.csv_name
    assert hashlib.sha256(cached.read_bytes()).hexdigest() == src.csv_sha256
    X2, y2 = datasets.load_dataset(name)  # second call: from the cache, no download
    assert len(calls) == 1
    np.testing.assert_array_equal(X, X2)
    np.testing.assert_array_equal(y, y2)
    assert X.shape == EXPECTED[name][0]


@needs_shared
def test_download_with_wrong_hash_is_refused_and_not_cached(isolated, monkeypatch):
    raw = raw_uci_bytes("bupa").replace(b"85,92,45,27,31,0.0,1", b"85,92,45,27,31,0.0,2", 1)
    monkeypatch.setattr(datasets.uci, "urlopen", lambda url, timeout=None: FakeResponse(raw))
    with pytest.raises(ValueError, match="sha256"):
        datasets.load_bupa()
    assert not (isolated / "cache" / "kerndwd" / "bupa.csv").exists()


def test_offline_without_local_copy_says_where_to_put_files(isolated):
    with pytest.raises(datasets.DatasetNotFoundError) as info:
        datasets.load_sonar()
    msg = str(info.value)
    assert datasets.DATA_ENV in msg and "sonar.csv" in msg and "sonar.all-data" in msg
    assert "data_home" in msg


def test_download_false_never_touches_the_network(isolated, monkeypatch):
    def fail(*a, **k):  # pragma: no cover - must not be called
        raise AssertionError("urlopen called")

    monkeypatch.setattr(datasets.uci, "urlopen", fail)
    with pytest.raises(datasets.DatasetNotFoundError, match="download=False"):
        datasets.load_haberman(download=False)


def test_bad_arguments():
    with pytest.raises(ValueError, match="name must be one of"):
        datasets.load_dataset("iris")
    with pytest.raises(TypeError, match="as_frame"):
        datasets.load_dataset("bupa", as_frame="yes")


def test_default_cache_folder(monkeypatch, tmp_path):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert datasets.get_data_home() == tmp_path / "kerndwd"
    monkeypatch.delenv("XDG_CACHE_HOME")
    assert datasets.get_data_home() == Path(os.path.expanduser("~")) / ".cache" / "kerndwd"


# --------------------------------------------------------------------------
# simulations
# --------------------------------------------------------------------------
@pytest.mark.parametrize("example", [1, 2, 3, 4])
def test_table1_examples(example):
    X, y = datasets.make_table1_example(example, random_state=3)
    X2, y2 = datasets.make_table1_example(example, random_state=3)
    np.testing.assert_array_equal(X, X2)
    assert X.shape == (500, 50)
    assert (y == 1).sum() == 250 and (y == -1).sum() == 250
    if example in (1, 2):  # class means +-2.2 on the informative coordinates, 0 elsewhere
        k = example
        diff = X[y > 0].mean(axis=0) - X[y < 0].mean(axis=0)
        np.testing.assert_allclose(diff[:k], 4.4, atol=0.35)
        assert np.abs(diff[k:]).max() < 0.5
    if example == 3:
        far = np.abs(X[:, 0]) > 50
        assert 0.1 < far.mean() < 0.3
        assert np.all(np.sign(X[far, 0]) == y[far])
    if example == 4:
        np.testing.assert_array_equal(X[:, 25:], X[:, :25] ** 2)
        assert X[y < 0, :25].std() < 0.15 < 0.8 < X[y > 0, :25].std()


def test_table1_example_bad_input():
    with pytest.raises(ValueError, match="example"):
        datasets.make_table1_example(5)
    with pytest.raises(ValueError, match="n must be"):
        datasets.make_table1_example(1, n=1)
    with pytest.raises(TypeError, match="random_state"):
        datasets.make_table1_example(1, random_state="seed")


def _bayes_error_quadrature(model, h=0.02):
    """0.5 * integral of min(p+, p-) on a fine grid (the mixture densities are negligible outside it)."""
    g = np.arange(-6.0, 7.0, h)
    total = 0.0
    for block in np.array_split(g, 10):
        G = np.array(np.meshgrid(block, g)).reshape(2, -1).T
        pos = np.exp(model._log_density(G, model.centres_pos))
        neg = np.exp(model._log_density(G, model.centres_neg))
        total += np.minimum(pos, neg).sum()
    n_c = len(model.centres_pos)
    norm = 1.0 / (n_c * 2.0 * np.pi * model.point_var)
    return 0.5 * total * norm * h * h


def test_mixture_bayes_error_monte_carlo_matches_quadrature_and_paper():
    model = datasets.GaussianMixture(datasets.FIGURE1_CENTRES_SEED)
    est, se = model.bayes_error(50_000, random_state=11)
    exact = _bayes_error_quadrature(model)
    assert 0 < se < 0.001
    assert abs(est - exact) < 4 * se
    # the vignette's centres give a Bayes error close to the paper's 0.1645 (its own centres)
    assert abs(exact - datasets.PAPER_BAYES_ERROR) < 0.002
    assert abs(est - datasets.PAPER_BAYES_ERROR) < 0.002 + 4 * se


def test_mixture_sampling_and_bayes_rule():
    X, y, model = datasets.make_mixture(100, random_state=5)
    assert X.shape == (200, 2) and (y == 1).sum() == 100
    assert model.centres_pos.shape == (10, 2)
    eta = model.posterior(X)
    np.testing.assert_array_equal(model.bayes_rule(X), np.where(eta > 0.5, 1.0, -1.0))
    # far from every centre the log-density ratio stays finite (log-sum-exp)
    assert np.isfinite(model.bayes_log_ratio(np.array([[40.0, -40.0]]))).all()
    Xt, yt = model.sample(20_000, random_state=6)
    bayes, se = model.bayes_error(20_000, random_state=7)
    err = np.mean(model.bayes_rule(Xt) != yt)
    assert abs(err - bayes) < 4 * np.sqrt(bayes * (1 - bayes) / yt.size) + 4 * se
    with pytest.raises(ValueError, match="shape"):
        model.bayes_rule(np.zeros((3, 3)))


def test_data_piling_example():
    X, y = datasets.make_data_piling(random_state=0)
    assert X.shape == (100, 200)
    np.testing.assert_array_equal(y, np.repeat([-1.0, 1.0], 50))
    assert X[y > 0, 0].mean() > 2.5 and X[y < 0, 0].mean() < -2.5
    assert np.abs(X[:, 1:].mean()) < 0.05
