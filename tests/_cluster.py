"""The Dask cluster of the tests that fit on one: a 2-worker ``LocalCluster``
(worker processes, 1 thread and 1 GiB each), started once per test module
and closed after it.  A test module imports both fixtures."""

import pytest

dask = pytest.importorskip("dask")
distributed = pytest.importorskip("distributed")


@pytest.fixture(scope="module")
def cluster_client():
    """The cluster's client, not made the default one."""
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, memory_limit="1GiB",
                                  dashboard_address=None) as cluster, \
            distributed.Client(cluster, set_as_default=False) as c:
        yield c


@pytest.fixture
def client(cluster_client):
    """The cluster's client as Dask's scheduler for one test (others use Dask's default)."""
    with dask.config.set(scheduler=cluster_client):
        yield cluster_client
