"""What the benchmark scripts share: the output folder, the machine and the
command, timing, the Markdown reports, the data and cases, one case per
subprocess, and the traffic and memory counters of a Dask cluster.

Nothing here asserts a time.  Importing this module costs the standard
library and numpy only: kerndwd, scipy, dask, distributed and rpy2 are
imported inside the functions that need them, so the module also loads where
Dask is not installed, and ``bench_engine`` can load it by path against
another checkout.
"""

from __future__ import annotations

import json
import os
import platform
import shlex
import subprocess
import sys
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
#: Where every benchmark writes its Markdown (and PNG, JSON) by default.
OUTPUT = ROOT / "benchmarks" / "output"


# --------------------------------------------------------------------------
# the machine and the command
# --------------------------------------------------------------------------
def cpu_model():
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def blas_description():
    """The BLAS numpy links (name and version, from numpy's build configuration)."""
    try:
        blas = np.__config__.CONFIG["Build Dependencies"]["blas"]
        return f"{blas.get('name', '?')} {blas.get('version', '')}".strip()
    except (AttributeError, KeyError, TypeError):
        return "unknown BLAS"


def _memory_gib():
    try:
        return f"{os.sysconf('SC_PAGE_SIZE') * os.sysconf('SC_PHYS_PAGES') / 2**30:.0f} GiB RAM"
    except (ValueError, OSError, AttributeError):
        return "? GiB RAM"


def _revision():
    try:
        return subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True,
                              text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "?"


def machine_description(*packages, threads=None):
    """One line on the machine and the software: CPU, cores, memory, system;
    Python, numpy, scipy and the BLAS with its threads (``threads``, else the
    environment's setting); the version of each of ``packages`` (say
    ``"dask", "distributed"``); the kerndwd revision."""
    import importlib

    import scipy

    if threads is None:
        threads = "BLAS threads: " + (os.environ.get("OPENBLAS_NUM_THREADS") or os.environ.get("OMP_NUM_THREADS")
                                      or "default")
    versions = "".join(f", {p} {importlib.import_module(p).__version__}" for p in packages)
    return (f"{cpu_model()}, {os.cpu_count()} cores, {_memory_gib()}, {platform.system()} {platform.release()}; "
            f"Python {platform.python_version()}, numpy {np.__version__}, scipy {scipy.__version__}, "
            f"{blas_description()} ({threads}){versions}; kerndwd at {_revision()}")


def command_line(module, argv=None):
    """The command that produced an output, as a reader would type it
    (``argv``: the arguments given to the script's ``main``, else ``sys.argv``)."""
    args = sys.argv[1:] if argv is None else argv
    return " ".join(["python -m", module] + [shlex.quote(str(a)) for a in args])


def _load_line(when):
    load = os.getloadavg()
    return f"Load average {when} (1, 5, 15 min): {load[0]:.2f}, {load[1]:.2f}, {load[2]:.2f}"


# --------------------------------------------------------------------------
# timing
# --------------------------------------------------------------------------
def median_seconds(call, repeat, warmup=True):
    """``(median seconds, last result)`` of ``repeat`` calls of ``call()``
    (after one untimed call when ``warmup``)."""
    result = call() if warmup else None
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        result = call()
        times.append(time.perf_counter() - t0)
    return float(np.median(times)), result


# --------------------------------------------------------------------------
# Markdown reports
# --------------------------------------------------------------------------
def write_markdown(lines, out, echo=True):
    """Write the Markdown ``lines`` to ``out`` (its folder made as needed),
    printing them first when ``echo``; returns the path."""
    text = "\n".join(lines) + "\n"
    if echo:
        print(text)
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text)
    return out


def write_report(name, title, body, met, argv, elapsed, out_dir=None, threads=None):
    """Print ``body`` (Markdown lines) and write it under ``# title``, the
    command (``python -m benchmarks.<name>``), the machine and the time taken
    to ``<out_dir>/<name>.md``; returns the exit status: 0 when ``met``."""
    header = [f"# {title}", "",
              f"- Command: `{command_line('benchmarks.' + name, argv)}`",
              f"- Machine: {machine_description(threads=threads)}",
              f"- Took {elapsed:.0f} s.", ""]
    path = write_markdown(header + list(body), Path(out_dir or OUTPUT) / f"{name}.md", echo=False)
    print("\n".join(body))
    print(f"wrote {path}")
    return 0 if met else 1


class Report:
    """Markdown lines printed as they are added and written to ``benchmarks/output/<name>.md``.

    Parameters
    ----------
    name : str
        The script's module name (``python -m benchmarks.<name>``) and file stem.
    title : str
        The first heading; the command, the machine and the load follow.
    argv : list of str, optional
        The command-line arguments to print (default ``sys.argv[1:]``).
    """

    def __init__(self, name, title, argv=None):
        self.name = name
        self.command = command_line("benchmarks." + name, argv)
        self.lines = []
        self.start = time.perf_counter()
        self.add(f"# {title}", "", f"Command: `{self.command}`  ", f"Machine: {machine_description()}.  ")
        if hasattr(os, "getloadavg"):
            self.add(_load_line("at the start") + f" on {os.cpu_count()} cores; timings taken under load are "
                     "slower than on an idle machine.  ")
        self.add("")

    def add(self, *lines):
        for line in lines:
            print(line, flush=True)
            self.lines.append(line)

    def table(self, header, rows):
        """A Markdown table from a header and rows of cells (already formatted)."""
        self.add("| " + " | ".join(header) + " |", "|" + "---|" * len(header))
        for row in rows:
            self.add("| " + " | ".join(str(c) for c in row) + " |")

    def write(self, out=None):
        if hasattr(os, "getloadavg"):
            self.add("", _load_line("at the end") + ".")
        self.add(f"Run time: {time.perf_counter() - self.start:.0f} s.")
        path = write_markdown(self.lines, out or OUTPUT / f"{self.name}.md", echo=False)
        print(f"(written to {path})", flush=True)
        return path


def seconds(value):
    """A time in seconds, to three significant figures (or a dash)."""
    if value is None or not np.isfinite(value):
        return "—"
    return f"{value:.3g}"


def ratio(numerator, denominator):
    if numerator is None or denominator is None or not (np.isfinite(numerator) and np.isfinite(denominator)):
        return "—"
    return f"{numerator / denominator:.1f}x"


def gib(x):
    return x / 2**30


# --------------------------------------------------------------------------
# data: Table 1's examples and R's timing data
# --------------------------------------------------------------------------
#: The lambdas of Table 1 (Wang & Zou 2018).
TABLE1_LAMBDAS = (100.0, 10.0, 1.0, 0.1, 0.01)


def table1(example=1, seed=1):
    """Table 1's data set ``example`` (n = 500, p = 50), drawn from ``seed``."""
    from kerndwd import datasets

    return datasets.make_table1_example(example, random_state=seed)


def circle(n, seed):
    """R's timing data: ``x`` standard normal in 2-D, ``y = +1`` where
    ``|x|^2 + 0.4 N(0, 1) > 1.4``, else -1."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, 2))
    y = np.where((X**2).sum(axis=1) + 0.4 * rng.standard_normal(n) > 1.4, 1.0, -1.0)
    return X, y


def class_weights(y):
    """The recording's weights: 2 on class +1, 0.5 on class -1."""
    return np.where(np.asarray(y) > 0, 2.0, 0.5)


def svm_cost(lam, n):
    """The SVM cost ``C`` with the same penalty weight as ``lambda``.

    Dividing ``C sum hinge + ||f||^2 / 2`` by ``C n`` gives
    ``(1/n) sum hinge + ||f||^2 / (2 C n)``, so ``C = 1 / (2 n lambda)``.

    Examples
    --------
    >>> svm_cost(0.01, 500)
    0.1
    """
    return 1.0 / (2.0 * n * lam)


# --------------------------------------------------------------------------
# R: the recorded times, and a live R through rpy2 where there is one
# --------------------------------------------------------------------------
#: The second recording of the R package kerndwd 2.0.3 (R 4.2.2, reference
#: BLAS/LAPACK, wall-clock minimum over repeats, passes summed over the path),
#: made on the project's standard two-core machine: case -> (seconds, passes).
R_RECORDED = {
    "linear-path5": (0.0050, 167),
    "linear-1lam-0.01": (0.0040, 132),
    "linear-path5-weighted": (0.0050, 194),
    "rbf200-path100": (0.055, 759),
    "rbf1000-path10": (1.62, 323),
    "rbf1000-path10-weighted": (3.44, 288),
    "rbf2000-path10": (14.45, 184),
}
R_RECORDED_SOURCE = ("R kerndwd 2.0.3, second recording on the project's standard two-core machine "
                     "(R 4.2.2 with reference BLAS/LAPACK; R's timer resolves 1 ms)")


def r_package_status(name):
    """``(True, version)`` when the R package ``name`` answers through rpy2, else
    ``(False, why)`` (the bridge's message names the missing piece)."""
    try:
        from reference import rbridge

        rbridge.require(name)
        return True, rbridge.r_package_version(name)
    except Exception as exc:  # RBridgeUnavailable, or rpy2 failing to start R
        return False, str(exc)


# --------------------------------------------------------------------------
# the fit cases of R's recording (public API only, so any checkout can be timed)
# --------------------------------------------------------------------------
class FitCase:
    """One ``kerndwd.fit`` call on generated data.

    Parameters
    ----------
    name, description : str
    data : callable
        Returns ``(X, y)``, the same arrays on every call (a fixed seed).
    lambdas : sequence of float
    sigma : float, optional
        The rbf kernel's sigma; None for the linear kernel.
    weighted : bool
        Fit with :func:`class_weights`.
    **fit_options
        More arguments of ``fit`` (``stop``, ``eps``).

    Examples
    --------
    >>> import kerndwd
    >>> path = FIT_CASES["linear-1lam-100"].call(kerndwd)()
    >>> path.npass.tolist()
    [2]
    """

    def __init__(self, name, description, data, lambdas, sigma=None, weighted=False, **fit_options):
        self.name, self.description = name, description
        self._data, self.lambdas, self.sigma, self.weighted = data, np.asarray(lambdas, float), sigma, weighted
        self.fit_options = fit_options

    def data(self):
        X, y = self._data()
        return X, y, class_weights(y) if self.weighted else None, self.lambdas

    def kernel(self, kd):
        return kd.vanilladot() if self.sigma is None else kd.rbfdot(sigma=self.sigma)

    def call(self, kd):
        X, y, wt, lambdas = self.data()
        kern = self.kernel(kd)
        return lambda: kd.fit(X, y, lambdas, kern=kern, wt=wt, **self.fit_options)


def _fit_cases():
    cases = {}

    def add(case):
        cases[case.name] = case

    five = TABLE1_LAMBDAS
    for lam in (0.01, 1.0, 100.0):
        add(FitCase(f"linear-1lam-{lam:g}", f"linear n=500 p=50 (Table 1 example 1), lambda={lam:g} alone",
                    table1, [lam]))
    add(FitCase("linear-path5", "linear n=500 p=50 (Table 1 example 1), 5-lambda path 100..0.01", table1, five))
    add(FitCase("linear-path5-weighted", "same, weighted (2 on class +1, 0.5 on class -1)", table1, five,
                weighted=True))
    add(FitCase("linear-path5-kkt", "same data, 5-lambda path, stop='kkt' eps=1e-8", table1, five, stop="kkt",
                eps=1e-8))
    grids = {200: (10.0 ** np.linspace(3, -3, 100), 202, "100 lambdas 1e3..1e-3"),
             1000: (10.0 ** np.linspace(1, -3, 10), 1300, "10 lambdas 10..1e-3"),
             2000: (10.0 ** np.linspace(1, -3, 10), 2300, "10 lambdas 10..1e-3")}
    for n, (lambdas, seed, what) in grids.items():
        nlam = lambdas.size

        def data(n=n, seed=seed):
            return circle(n, seed)

        add(FitCase(f"rbf{n}-path{nlam}", f"rbf sigma=1, circle n={n}, {what}", data, lambdas, sigma=1.0))
        add(FitCase(f"rbf{n}-path{nlam}-weighted", "same, weighted (2 on class +1, 0.5 on class -1)", data,
                    lambdas, sigma=1.0, weighted=True))
    return cases


FIT_CASES = _fit_cases()


# --------------------------------------------------------------------------
# Figure 1's mixture, for the kernel-approximation benchmarks
# --------------------------------------------------------------------------
#: Seeds of the training, validation and test draws of the Figure 1 mixture.
TRAIN_SEED, VALIDATION_SEED, TEST_SEED, BAYES_SEED = 101, 202, 303, 404


def mixture():
    """The Figure 1 mixture (centres seeded as in ``vignettes/figure1.py``)."""
    from kerndwd import datasets

    return datasets.GaussianMixture(datasets.FIGURE1_CENTRES_SEED)


def training_rows(n, seed=TRAIN_SEED):
    """``n`` training rows (half per class), shuffled; the same ``seed`` and
    ``n`` give the same rows."""
    rng = np.random.default_rng([seed, n])
    X, y = mixture().sample(n // 2, rng)
    order = rng.permutation(X.shape[0])
    return X[order], y[order]


def held_out_rows(n_rows, seed):
    X, y = mixture().sample(n_rows // 2, np.random.default_rng(seed))
    return X, y


def choose_on_validation(val_errors):
    """Index of the smallest validation error (ties: the first, the largest lambda)."""
    val_errors = np.asarray(val_errors)
    return int(np.flatnonzero(val_errors == val_errors.min())[0])


def error_rates(labels, truth):
    """Misclassification rate of each column of ``labels`` (shape (n, L))."""
    return (labels != truth[:, None]).mean(axis=0)


# --------------------------------------------------------------------------
# one case per subprocess, with its own peak memory
# --------------------------------------------------------------------------
def run_case(module, spec, timeout):
    """Run ``python -m module --worker JSON`` in a fresh process; returns the
    dict it wrote, with ``peak_rss_gib`` (that process's ``ru_maxrss``, from
    ``os.wait4``, so that it belongs to this case alone) and ``wall_s`` (its
    whole run, start-up and data included) added."""
    with tempfile.TemporaryDirectory() as tmp:
        result_file = Path(tmp) / "result.json"
        cmd = [sys.executable, "-m", module, "--worker", json.dumps({**spec, "result_file": str(result_file)})]
        start = time.perf_counter()
        proc = subprocess.Popen(cmd, cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)})
        deadline = start + timeout
        while True:
            pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                break
            if time.perf_counter() > deadline:
                proc.kill()
                pid, status, usage = os.wait4(proc.pid, 0)
                return {**spec, "error": f"killed after {timeout} s"}
            time.sleep(0.2)
        proc.returncode = os.waitstatus_to_exitcode(status)
        wall = time.perf_counter() - start
        if proc.returncode != 0 or not result_file.exists():
            return {**spec, "error": f"exit status {proc.returncode}", "peak_rss_gib": usage.ru_maxrss / 2**20}
        out = json.loads(result_file.read_text())
    out["peak_rss_gib"] = usage.ru_maxrss / 2**20  # Linux: kilobytes
    out["wall_s"] = wall
    return out


def write_result(spec, result):
    Path(spec["result_file"]).write_text(json.dumps(result))


# --------------------------------------------------------------------------
# Dask: synthetic data, and the traffic and memory of a cluster
# --------------------------------------------------------------------------
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
    """Time every run of the path-solver template (and the cluster's traffic
    over it) while the block runs: ``record`` gets ``seconds``, ``passes`` and
    ``traffic``."""
    from unittest import mock

    from kerndwd.engine.solvers import template

    original = template.solve_path

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

    with mock.patch.object(template, "solve_path", wrapper):
        yield record
