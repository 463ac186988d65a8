"""Pieces the Dask benchmarks share: the machine line, the synthetic data,
the traffic counters of a cluster, and a timed wrapper around the MM loop.

Nothing here is a test; it measures.
"""

from __future__ import annotations

import platform
import subprocess
import time
from contextlib import contextmanager
from pathlib import Path
from unittest import mock

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
OUTPUT = ROOT / "benchmarks" / "output"


def machine():
    """One line on the machine and the versions that matter."""
    import dask
    import distributed

    try:
        import psutil

        mem = f"{psutil.virtual_memory().total / 2**30:.0f} GiB"
    except ImportError:  # pragma: no cover
        mem = "? GiB"
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as fh:
            cpu = next(line.split(":", 1)[1].strip() for line in fh if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    try:
        rev = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True,
                             text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        rev = "?"
    import os

    return (f"{cpu}, {os.cpu_count()} cores, {mem}; Python {platform.python_version()}, numpy {np.__version__}, "
            f"dask {dask.__version__}, distributed {distributed.__version__}; kerndwd at {rev}")


def two_gaussians(n, d, chunk_rows, seed=0):
    """Two Gaussian classes (identity covariance, means 1 apart in the first five
    coordinates), as Dask arrays generated on the workers: ``(X, y)`` with
    ``y`` in {-1, +1}."""
    import dask.array as da

    rng = da.random.default_rng(seed)
    y = da.where(rng.random(n, chunks=chunk_rows) < 0.5, 1.0, -1.0)
    shift = np.zeros(d)
    shift[:min(5, d)] = 0.5
    X = rng.standard_normal((n, d), chunks=(chunk_rows, d)) + y[:, None] * shift
    return X, y


# --------------------------------------------------------------------------
# traffic of a cluster
# --------------------------------------------------------------------------
def _scheduler_counters(dask_scheduler):
    return {"scheduler_to_workers": sum(bs.byte_count for bs in dask_scheduler.stream_comms.values()),
            "scheduler_to_client": sum(bs.byte_count for bs in dask_scheduler.client_comms.values())}


def _worker_counters(dask_worker):
    return {"workers_to_scheduler": dask_worker.batched_stream.byte_count,
            "data_sent_by_workers": dask_worker.transfer_outgoing_bytes_total}


def traffic(client):
    """Cumulative bytes on each link of the cluster so far: the client's graph
    submissions, the scheduler's messages to the workers (task specs, with any
    coefficients they carry) and to the client, the workers' messages to the
    scheduler, and the data the workers sent out (to each other for the
    reductions, and the results fetched for the client)."""
    out = {"client_to_scheduler": client.scheduler_comm.byte_count}
    out.update(client.run_on_scheduler(_scheduler_counters))
    per_worker = client.run(_worker_counters)
    for key in ("workers_to_scheduler", "data_sent_by_workers"):
        out[key] = sum(v[key] for v in per_worker.values())
    return out


def traffic_delta(before, after):
    return {k: after[k] - before[k] for k in before}


def _peak_rss(dask_worker):
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # Linux: KiB


def peak_rss(client):
    """Each worker process's peak resident memory (bytes) since it started."""
    return client.run(_peak_rss)


def _memory_series(dask_worker):
    q = dask_worker.monitor.quantities
    return list(q["time"]), list(q["memory"])


def memory_series(client):
    """Each worker's sampled memory (the system monitor's, every 500 ms)."""
    return client.run(_memory_series)


@contextmanager
def timed_mm(record, client=None):
    """Time every run of the MM loop (and the cluster's traffic over it) while
    the block runs: ``record`` gets ``seconds``, ``passes`` and ``traffic``."""
    from kerndwd.engine import loop

    original = loop._METHODS["mm"]

    def wrapper(majoriser, problem, callback=None):
        if client is not None:
            # the labels and weights are placed beside X asynchronously: let that
            # one-time move finish before counting the passes' traffic
            import distributed

            rows = [problem.y] + ([problem.loss.weights] if problem.loss.weights is not None else [])
            distributed.wait([f for r in rows for leaf in r._leaves.values() for f in client.futures_of(leaf)])
        before = traffic(client) if client is not None else None
        start = time.perf_counter()
        result = original(majoriser, problem, callback)
        record["seconds"] = record.get("seconds", 0.0) + time.perf_counter() - start
        record["passes"] = record.get("passes", 0) + int(result.npass.sum())
        if client is not None:
            delta = traffic_delta(before, traffic(client))
            tally = record.setdefault("traffic", {})
            for k, v in delta.items():
                tally[k] = tally.get(k, 0) + v
        return result

    with mock.patch.dict(loop._METHODS, {"mm": wrapper}):
        yield record


def gib(x):
    return x / 2**30


def write_report(lines, out):
    """Print the Markdown ``lines`` and write them to ``out``; returns the path of
    the PNG that goes beside it."""
    text = "\n".join(lines) + "\n"
    print(text)
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text)
    return out.with_suffix(".png")
