"""A 10-lambda linear DWD path on 10^7 rows read lazily from Parquet, on a
2-worker LocalCluster with a memory limit per worker.

``python -m benchmarks.bench_dask_parquet [--rows 10000000] [--cols 20] [--partitions 40]
[--memory-limit 4GiB] [--out benchmarks/output/dask_parquet.md]``

1. Writes ``rows x cols`` of two Gaussian classes (and the label) to Parquet
   files in a temporary folder, generated on the workers.
2. Restarts the workers, so that each one's peak memory below belongs to the
   fit alone.
3. Reads the files lazily (``dask.dataframe.read_parquet``) and fits
   ``kerndwd.fit(X, y, 10^seq(0, -7, length=10), kern=vanilladot())``: R's
   default lambda range for ``n > 10000`` with 10 values, R's stopping rule.
4. Reports the wall time (validation and the MM passes apart), each worker's
   peak resident memory (the process's high-water mark), and the bytes that
   crossed each link of the cluster per MM pass.
5. Checks the answer: the same path fitted in memory on a 2e5-row sample
   would be a different problem, so instead the gradient norm of each column
   (``path.kkt``) is reported, and the decision values on 10^5 fresh rows
   are compared with the Bayes rule.

The Parquet files are deleted when it ends.  A timing script, not a test.
"""

from __future__ import annotations

import argparse
import tempfile
import time

import numpy as np

from ._shared import (OUTPUT, command_line, gib, machine_description, memory_series, peak_rss, timed_mm, two_gaussians,
                      write_markdown)


def write_parquet(folder, n, d, partitions, seed):
    import dask.array as da
    import dask.dataframe as dd

    X, y = two_gaussians(n, d, chunk_rows=-(-n // partitions), seed=seed)
    columns = [f"x{j}" for j in range(d)] + ["label"]
    frame = dd.from_dask_array(da.concatenate([X, y[:, None]], axis=1), columns=columns)
    frame.to_parquet(folder, write_index=False)
    return columns[:-1]


def bayes_error_check(path, d, seed=12345, m=100_000):
    """Test error of the last column on fresh rows, and the Bayes error of the two
    Gaussians (means 1 apart in five coordinates: Phi(-sqrt(5)/2))."""
    from scipy.stats import norm

    rng = np.random.default_rng(seed)
    y = np.where(rng.random(m) < 0.5, 1.0, -1.0)
    shift = np.zeros(d)
    shift[:min(5, d)] = 0.5
    X = rng.standard_normal((m, d)) + y[:, None] * shift
    link = path.predict(X, type="link")
    errors = (np.sign(link) != y[:, None]).mean(axis=0)
    return errors, float(norm.cdf(-np.sqrt(min(5, d)) / 2.0))


def main(argv=None):
    import dask.dataframe as dd
    import distributed

    import kerndwd

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=float, default=1e7)
    parser.add_argument("--cols", type=int, default=20)
    parser.add_argument("--partitions", type=int, default=40)
    parser.add_argument("--memory-limit", default="4GiB")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", default=str(OUTPUT / "dask_parquet.md"))
    args = parser.parse_args(argv)
    n, d = int(args.rows), args.cols
    lambdas = 10.0 ** np.linspace(0, -7, 10)
    command = command_line("benchmarks.bench_dask_parquet", argv)
    record = {}
    with tempfile.TemporaryDirectory(prefix="kerndwd-parquet-") as folder, \
            distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                     memory_limit=args.memory_limit, dashboard_address=None) as cluster, \
            distributed.Client(cluster) as client:
        start = time.perf_counter()
        features = write_parquet(folder, n, d, args.partitions, args.seed)
        write_seconds = time.perf_counter() - start
        parquet_bytes = sum(p.stat().st_size for p in __import__("pathlib").Path(folder).glob("*.parquet"))
        client.restart()  # fresh worker processes: the peaks below are the fit's
        workers_before = set(client.scheduler_info()["workers"])
        start = time.perf_counter()
        frame = dd.read_parquet(folder)
        with timed_mm(record, client):
            path = kerndwd.fit(frame[features], frame["label"], lambdas, kern=kerndwd.vanilladot())
        fit_seconds = time.perf_counter() - start
        peaks = peak_rss(client)
        series = memory_series(client)
        workers_after = set(client.scheduler_info()["workers"])
    errors, bayes = bayes_error_check(path, d)
    passes = record["passes"]
    per_pass = {k: v / passes for k, v in record["traffic"].items()}
    limit_bytes = _parse_bytes(args.memory_limit)
    lines = [
        "# Dask: a 10-lambda linear DWD path on Parquet files, 2-worker LocalCluster",
        "",
        f"Machine: {machine_description('dask', 'distributed')}.",
        f"Command: `{command}` (run under `flock -x /tmp/kerndwd-cpu.lock`).",
        "",
        f"Data: n = {n:,} rows, d = {d} columns of two Gaussian classes (means 1 apart in five coordinates), "
        f"written by the benchmark to {args.partitions} Parquet files ({gib(parquet_bytes):.2f} GiB) in a "
        f"temporary folder in {write_seconds:.0f} s, read lazily with `dask.dataframe.read_parquet`, deleted "
        "at the end.",
        "Fit: `kerndwd.fit(frame[features], frame['label'], 10**np.linspace(0, -7, 10), "
        "kern=kerndwd.vanilladot())`: R's default lambda range for n > 10000 with 10 values, R's stopping "
        "rule (eps = 1e-5 on the squared MM step).",
        f"Cluster: `LocalCluster(n_workers=2, threads_per_worker=1, memory_limit='{args.memory_limit}')`; "
        "the workers were restarted after writing the files, so each peak is the fit's.",
        "",
        "| what | measured |",
        "|---|---|",
        f"| wall time of `kerndwd.fit` (read, validate, persist, Gram matrix, MM passes) | {fit_seconds:.1f} s |",
        f"| of which the MM passes | {record['seconds']:.1f} s, {passes} passes "
        f"({record['seconds'] / passes * 1e3:.0f} ms per pass) |",
        f"| passes per lambda | {path.npass.tolist()} |",
        "| peak resident memory per worker (process high-water mark) | "
        + ", ".join(f"{gib(v):.2f} GiB" for v in peaks.values())
        + f" (limit {gib(limit_bytes):.2f} GiB each) |",
        f"| workers restarted during the fit | {len(workers_before - workers_after)} |",
        "| gradient norm of each column (`path.kkt`) | " + ", ".join(f"{v:.1e}" for v in path.kkt) + " |",
        f"| test error on 10^5 fresh rows, last column (Bayes error {bayes:.4f}) | {errors[-1]:.4f} |",
        "",
        "Bytes per MM pass (the cluster's counters over the MM phase, divided by its passes; the",
        "per-lambda evaluations of the objective and gradient are included):",
        "",
        "| link | bytes per pass |",
        "|---|---|",
    ]
    labels = {
        "client_to_scheduler": "client -> scheduler (graph submissions: tasks, with the coefficients they carry)",
        "scheduler_to_workers": "scheduler -> workers (task assignments)",
        "workers_to_scheduler": "workers -> scheduler (task reports)",
        "scheduler_to_client": "scheduler -> client (key reports)",
        "data_sent_by_workers": "data sent by workers (partial sums to the worker that adds them, results "
                                "fetched for the client)",
    }
    for key, label in labels.items():
        lines.append(f"| {label} | {per_pass[key]:,.0f} |")
    lines.append(f"| **all links** | **{sum(per_pass.values()):,.0f}** |")
    lines += [
        "",
        f"For scale: one n-vector is {n * 8 / 2**20:,.0f} MiB and X is {gib(n * d * 8):.2f} GiB; neither moves per "
        "pass. What moves is O(chunks x (d + 1)) numbers and the task messages.",
        "",
        "![memory per worker](dask_parquet.png)",
    ]
    _plot(series, limit_bytes, write_markdown(lines, args.out).with_suffix(".png"))


def _parse_bytes(text):
    from dask.utils import parse_bytes

    return parse_bytes(text)


def _plot(series, limit_bytes, png):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 3.5))
    t0 = min(times[0] for times, _ in series.values() if times)
    for k, (address, (times, memory)) in enumerate(series.items()):
        ax.plot(np.asarray(times) - t0, gib(np.asarray(memory)), label=f"worker {k + 1}")
    ax.axhline(gib(limit_bytes), color="k", ls="--", lw=1, label="memory limit")
    ax.set_xlabel("seconds since the workers restarted")
    ax.set_ylabel("resident memory (GiB)")
    ax.set_title("10-lambda linear DWD path, 1e7 x 20 from Parquet")
    ax.legend(loc="lower right")
    fig.tight_layout()
    fig.savefig(png, dpi=120)


if __name__ == "__main__":
    main()
