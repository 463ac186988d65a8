"""What the benchmark scripts share: medians of repeated calls, and a Markdown
report that says what ran, where and with which command."""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np

from vignettes import command_line, machine_description

#: Where the benchmarks write their Markdown.
OUTPUT_DIR = Path(__file__).resolve().parent / "output"


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


def write_report(name, title, body, met, argv, elapsed, out_dir=None, threads=None):
    """Print ``body`` (Markdown lines) and write it under ``# title``, the
    command (``python -m benchmarks.<name>``), the machine and the time taken
    to ``<out_dir>/<name>.md``; returns the exit status: 0 when ``met``."""
    out = Path(out_dir) if out_dir is not None else OUTPUT_DIR
    out.mkdir(parents=True, exist_ok=True)
    header = [f"# {title}", "",
              f"- Command: `{command_line('benchmarks.' + name, argv)}`",
              f"- Machine: {machine_description()}" + (f"; {threads}" if threads else ""),
              f"- Took {elapsed:.0f} s.", ""]
    path = out / f"{name}.md"
    path.write_text("\n".join(header + list(body)) + "\n")
    print("\n".join(body))
    print(f"wrote {path}")
    return 0 if met else 1
