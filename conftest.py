"""Configuration of the doctest run, ``python3 -m pytest --doctest-modules kerndwd``.

The examples in the docstrings draw figures without a display (matplotlib's
Agg backend) and close them afterwards.  The loaders' examples read the UCI
files: they run when a local copy is found (``KERNDWD_DATA``, the cache
folder) and are skipped otherwise, since a doctest run must not download.
"""

import os

os.environ.setdefault("MPLBACKEND", "Agg")

import pytest  # noqa: E402

#: Doctests that read a UCI data set, by the name pytest gives them.
_NEEDS_DATA = {"load_dataset", "load_bupa", "load_haberman", "load_sonar", "load_vertebral"}


def _have_local_data():
    from kerndwd import datasets

    try:
        for name in ("bupa", "haberman", "sonar", "vertebral"):
            datasets.load_dataset(name, download=False)
    except datasets.DatasetNotFoundError:
        return False
    return True


def pytest_collection_modifyitems(config, items):
    needs = [it for it in items if isinstance(it, pytest.DoctestItem) and it.name.rsplit(".", 1)[-1] in _NEEDS_DATA]
    if needs and not _have_local_data():
        skip = pytest.mark.skip(reason="no local copy of the UCI data sets (set KERNDWD_DATA); doctests never download")
        for it in needs:
            it.add_marker(skip)


@pytest.fixture(autouse=True)
def _close_figures(request):
    yield
    import sys

    if isinstance(request.node, pytest.DoctestItem) and "matplotlib.pyplot" in sys.modules:
        sys.modules["matplotlib.pyplot"].close("all")
