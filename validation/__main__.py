"""``python -m validation``: run every check, write report.md and report.json,
exit 1 when any check fails (skips do not fail, and are listed with reasons).

The reports go to a new temporary folder unless ``--out DIR`` names one;
``--refresh`` rewrites the committed ``validation/report.md`` and
``validation/report.json`` (do that on a machine with R and kernlab, so the
live checks run)."""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

from . import checks
from .report import environment, write_reports


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m validation", description=__doc__)
    where = parser.add_mutually_exclusive_group()
    where.add_argument("--out", type=Path, default=None,
                       help="folder for report.md and report.json (default: a new temporary folder)")
    where.add_argument("--refresh", action="store_true",
                       help="rewrite the committed reports in the validation package")
    parser.add_argument("--quiet", action="store_true", help="no progress lines")
    args = parser.parse_args(argv)
    if args.refresh:
        out = Path(__file__).resolve().parent
    elif args.out is not None:
        out = args.out
    else:
        out = Path(tempfile.mkdtemp(prefix="kerndwd-validation-"))
    log = (lambda *a: None) if args.quiet else (lambda *a: print(*a, flush=True))

    start = time.perf_counter()
    timings = {}
    rows = []

    def run(name, fn, *fargs):
        t = time.perf_counter()
        log(f"[{name}]")
        out = fn(*fargs)
        timings[name] = time.perf_counter() - t
        return out

    rows += run("1 R fixtures", checks.check_fixtures)
    data = checks.grid_data()
    optima = run("cone optima for the grid", checks.solve_grid, data, log)
    rows += run("2 port vs cone program", checks.check_port_vs_cone, data, optima, log)
    rows += run("3 q=1 SOCP", checks.check_socp, data, log)
    rows += run("4 default eps", checks.check_default_eps, data, optima, log)
    rows += run("5 live R", checks.check_live_r, log)
    total = time.perf_counter() - start

    md, js = write_reports(rows, out, timings, total, environment())
    n_fail = sum(r["status"] == "fail" for r in rows)
    n_skip = sum(r["status"] == "skip" for r in rows)
    n_pass = sum(r["status"] == "pass" for r in rows)
    print(f"validation: {n_pass} passed, {n_fail} failed, {n_skip} skipped in {total:.0f} s; wrote {md} and {js}")
    for r in rows:
        if r["status"] == "fail":
            print(f"FAILED [{r['check']}] {r['name']}: measured {r['measured']}, need {r['threshold']}; {r['detail']}")
    return 1 if n_fail else 0


if __name__ == "__main__":
    sys.exit(main())
