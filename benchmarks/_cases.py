"""Helpers shared by the kernel-approximation benchmarks: the data, one case
per subprocess with its own peak memory, and the validation rule for lambda.

Every case runs in a fresh Python process, so that its peak resident memory
(``ru_maxrss`` from ``os.wait4``, the counter ``getrusage(RUSAGE_CHILDREN)``
accumulates) belongs to that case alone.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
OUTPUT_DIR = Path(__file__).resolve().parent / "output"

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


def run_case(module, spec, timeout):
    """Run ``python -m module --worker JSON`` in a fresh process; returns the
    dict it wrote, with ``peak_rss_gib`` (that process's ``ru_maxrss``) and
    ``wall_s`` (its whole run, start-up and data included) added."""
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


def error_rates(labels, truth):
    """Misclassification rate of each column of ``labels`` (shape (n, L))."""
    return (labels != truth[:, None]).mean(axis=0)
