"""Engine timings on fixed cases, optionally against another checkout in the same run.

``python -m benchmarks.bench_engine [--reps 7] [--baseline PATH [--rounds K]] [--out FILE]``

Each case is timed through the public API only (``kerndwd.fit``,
``kerndwd.cv``, ``kerndwd.tune``), so the same script measures any version
of the package.  With ``--baseline PATH`` (a checkout of another revision,
e.g. made by ``git worktree add /tmp/base REV``) every case is also timed
with that checkout's ``kerndwd``, in alternating subprocesses, and the table
gives ``baseline / current`` per case: a ratio above 1 means the current
tree is faster.  Medians over ``--reps`` calls (after one warm-up call);
passes summed over the path are printed so that a change of iterates shows.
On a shared machine a process's median of a millisecond case moves by up to
1.5x with the machine's spells of contention; ``--rounds K`` times each case
in ``K`` pairs of processes, the two trees alternating, and reports the
median of the processes' medians with their range.

This is a timing script, not a test: nothing here asserts a time.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np

try:
    from ._shared import ROOT, Report, circle, median_seconds, table1
except ImportError:  # loaded by path, outside the package (see _in_subprocess): its neighbour is loaded likewise
    import importlib.util

    _spec = importlib.util.spec_from_file_location("benchmarks_shared", Path(__file__).with_name("_shared.py"))
    _shared = importlib.util.module_from_spec(_spec)
    _spec.loader.exec_module(_shared)
    ROOT, Report, circle, median_seconds, table1 = (
        _shared.ROOT, _shared.Report, _shared.circle, _shared.median_seconds, _shared.table1)

#: name -> (description, builder); the builder returns a zero-argument call
#: and the data it needs is generated once, from a fixed seed.
CASES = {}


def case(name, description):
    def register(builder):
        CASES[name] = (description, builder)
        return builder
    return register


def _lin_single(lam):
    def build(kd):
        X, y = table1()
        return lambda: kd.fit(X, y, [lam], kern=kd.vanilladot())
    return build


for _lam in (0.01, 1.0, 100.0):
    case(f"linear-1lam-{_lam:g}", f"linear n=500 p=50, lambda={_lam:g} alone")(_lin_single(_lam))


@case("linear-path5", "linear n=500 p=50, 5-lambda path 100..0.01")
def _(kd):
    X, y = table1()
    lam = [100.0, 10.0, 1.0, 0.1, 0.01]
    return lambda: kd.fit(X, y, lam, kern=kd.vanilladot())


@case("linear-path5-weighted", "same, weighted (2 on class +1, 0.5 on class -1)")
def _(kd):
    X, y = table1()
    lam = [100.0, 10.0, 1.0, 0.1, 0.01]
    wt = np.where(y > 0, 2.0, 0.5)
    return lambda: kd.fit(X, y, lam, kern=kd.vanilladot(), wt=wt)


@case("linear-path5-kkt", "same data, 5-lambda path, stop='kkt' eps=1e-8")
def _(kd):
    X, y = table1()
    lam = [100.0, 10.0, 1.0, 0.1, 0.01]
    return lambda: kd.fit(X, y, lam, kern=kd.vanilladot(), stop="kkt", eps=1e-8)


@case("rbf200-path100", "rbf sigma=1, circle n=200, 100 lambdas 1e3..1e-3")
def _(kd):
    X, y = circle(200, 202)
    lam = 10.0 ** np.linspace(3, -3, 100)
    return lambda: kd.fit(X, y, lam, kern=kd.rbfdot(sigma=1.0))


@case("rbf1000-path10", "rbf sigma=1, circle n=1000, 10 lambdas 10..1e-3")
def _(kd):
    X, y = circle(1000, 1300)
    lam = 10.0 ** np.linspace(1, -3, 10)
    return lambda: kd.fit(X, y, lam, kern=kd.rbfdot(sigma=1.0))


@case("rbf1000-path10-weighted", "same, weighted as above")
def _(kd):
    X, y = circle(1000, 1300)
    lam = 10.0 ** np.linspace(1, -3, 10)
    wt = np.where(y > 0, 2.0, 0.5)
    return lambda: kd.fit(X, y, lam, kern=kd.rbfdot(sigma=1.0), wt=wt)


@case("cv-linear-500", "cv, linear n=500 p=50, 5 folds, 100 lambdas")
def _(kd):
    X, y = table1()
    return lambda: kd.cv(X, y, None, kern=kd.vanilladot(), nfolds=5, random_state=0)


@case("tune-rbf-300", "tune, rbf n=300, q in (0.5, 1, 4), 5 folds, 20 lambdas")
def _(kd):
    X, y = circle(300, 7)
    lam = 10.0 ** np.linspace(1, -3, 20)
    return lambda: kd.tune(X, y, lam, qvals=(0.5, 1, 4), kern=kd.rbfdot(sigma=1.0), nfolds=5,
                           random_state=0)


def _passes(result):
    if hasattr(result, "npass"):
        return int(np.sum(result.npass))
    return -1


def time_case(name, reps):
    """Median seconds of ``reps`` calls of one case with the ``kerndwd`` on sys.path."""
    import kerndwd

    median, result = median_seconds(CASES[name][1](kerndwd), reps)  # after a warm-up call
    return {"case": name, "median": median, "passes": _passes(result)}


def _in_subprocess(tree, name, reps):
    env = dict(os.environ, PYTHONPATH=str(tree))
    # this file is loaded by path, so that ``import kerndwd`` finds the tree under test first
    code = ("import importlib.util, json; "
            "spec = importlib.util.spec_from_file_location('bench_engine', %r); "
            "mod = importlib.util.module_from_spec(spec); spec.loader.exec_module(mod); "
            "print(json.dumps(mod.time_case(%r, %d)))" % (__file__, name, reps))
    out = subprocess.run([sys.executable, "-c", code], env=env, cwd=str(tree), check=True,
                         capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--reps", type=int, default=7)
    ap.add_argument("--baseline", type=Path, help="another checkout whose kerndwd is timed alongside")
    ap.add_argument("--cases", nargs="*", default=list(CASES), help="subset of case names")
    ap.add_argument("--out", type=Path, help="also write the Markdown table here")
    ap.add_argument("--rounds", type=int, default=1,
                    help="with --baseline: time each case in this many pairs of processes, baseline and "
                         "current alternating; the table gives the median of the processes' medians, "
                         "their range, and the ratio of the medians")
    args = ap.parse_args(argv)
    rounds = max(1, args.rounds) if args.baseline else 1
    rep = Report("bench_engine", "Engine timings on fixed cases", argv)
    rep.add(f"Medians of {args.reps} calls" + (f" in each of {rounds} processes per tree." if rounds > 1 else "."), "")
    if args.baseline:
        rep.add(f"Baseline: `{args.baseline}`; ratio = baseline / current (above 1: current is faster).", "",
                "| case | what | current (s) | range | passes | baseline (s) | range | passes | ratio |",
                "|---|---|---|---|---|---|---|---|---|")
    else:
        rep.add("| case | what | seconds | passes |", "|---|---|---|---|")
    for name in args.cases:
        desc = CASES[name][0]
        if args.baseline:
            base, cur = [], []
            for _ in range(rounds):  # alternating, so that a slow spell of the machine falls on both
                base.append(_in_subprocess(args.baseline, name, args.reps))
                cur.append(_in_subprocess(ROOT, name, args.reps))
            b, c = _median_and_range(base), _median_and_range(cur)
            rep.add(f"| {name} | {desc} | {c[0]:.4g} | {c[1]} | {cur[0]['passes']} | {b[0]:.4g} | {b[1]} | "
                    f"{base[0]['passes']} | {b[0] / c[0]:.2f} |")
        else:
            now = time_case(name, args.reps)
            rep.add(f"| {name} | {desc} | {now['median']:.4g} | {now['passes']} |")
    if args.out:
        rep.write(args.out)


def _median_and_range(runs):
    """The median of the processes' medians, and their range as text."""
    times = [r["median"] for r in runs]
    return float(np.median(times)), f"{min(times):.4g}-{max(times):.4g}"


if __name__ == "__main__":
    main()
