"""Exact-kernel block coordinate descent (``solver="bcd"``) against the eigen solver.

``python -m benchmarks.bench_bcd [--sizes 2000 5000 10000 20000] [--large 100000]
[--lam 0.01] [--block-size B] [--out-dir benchmarks/output]``

Data: the circle data of the R timing cases (``x`` standard normal in 2-D,
``y = +1`` where ``|x|^2 + 0.4 N(0, 1) > 1.4``, else -1), ``rbfdot(sigma =
1)``, ``q = 1``, one lambda (``--lam``, default 1e-2).

For each ``n`` of ``--sizes`` both solvers fit the same problem from scratch,
each in its own subprocess, with the gradient rule (``stop="kkt"``): the
eigen solver to ``||grad F|| <= 1e-8`` (its kernel matrix, eigendecomposition
and MM passes with momentum, as ``kerndwd.fit`` runs them), BCD to
``||grad F|| <= 1e-8`` as well.  Each records the objective after every pass
with the wall time since the fit began.  ``F*`` is the smaller of the two
final objectives; the table gives each solver's time to first reach
``F <= F* (1 + 1e-6)`` (kernel matrix and eigendecomposition included for
the eigen solver), and its peak memory: ``ru_maxrss`` of the subprocess
(``resource.getrusage(RUSAGE_CHILDREN)`` read by a wrapper process that runs
only that case), next to the same figure for a process that only imports
``kerndwd`` (the floor of every row).

At ``--large`` (default 1e5) only BCD runs (the kernel matrix alone would
take ``8 n^2`` bytes, 80 GB): the time to certify ``||grad F|| <= 1e-6``,
i.e. a full ``fit(..., solver="bcd", stop="kkt", eps=1e-6)``, whose last
step recomputes the decision values and the gradient from the coefficients.

Two more tables: the sweeps BCD takes to ``||grad F|| <= 1e-8`` at
``--ablation-n`` (default 2000) for block sizes 32 to 256 and lambdas 1 to
1e-3, and with the global step switched off (block steps alone); and the
seconds of the first sweep (block Grams included), of a later sweep and of
one product with ``K`` at ``--cost-n`` (default 20000), by block size.

Writes ``bcd.md`` (the tables, the acceptance lines, the machine and the
command) and ``bcd.png`` into ``--out-dir``.  This is a timing script, not a
test: nothing here asserts a time.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from ._shared import OUTPUT, ROOT, circle, command_line, machine_description

#: the objective gap both solvers are timed to
GAP = 1e-6
#: the gradient bound of the reference fits (both solvers)
EPS_REFERENCE = 1e-8
#: the gradient bound BCD certifies at the large n
EPS_LARGE = 1e-6


# --------------------------------------------------------------------------
# one case, in its own process
# --------------------------------------------------------------------------
def run_case(case):
    """Fit one case and return its trace: ``case`` has ``solver`` ("eigen" or
    "bcd"), ``n``, ``lam``, ``eps``, ``block_size``, ``seed``."""
    import kerndwd
    from kerndwd.engine import FactorCache, Problem, build_majoriser, make_design, run_path

    X, y = circle(case["n"], case["seed"])  # the circle data of the R timing cases
    y = y.astype(float)
    kern = kerndwd.rbfdot(sigma=1.0)
    design = None
    if case["solver"] == "bcd":
        design = make_design("bcd", {"block_size": case["block_size"]})
    problem = Problem.from_arrays(X, y, [case["lam"]], kern=kern, design=design, stop="kkt", eps=case["eps"],
                                  maxit=100000, accelerate=True)
    times, objectives = [], []
    start = time.perf_counter()
    majoriser = build_majoriser(problem, FactorCache(X, kern))
    setup = time.perf_counter() - start
    loss = majoriser.loss

    def record(step):
        objectives.append(loss.mean(y * step.f) + step.lam * majoriser.penalty_at(step.iteration.coord, step.f))
        times.append(time.perf_counter() - start)

    result = run_path(majoriser, problem, callback=record)  # problem.method: the MM iteration
    total = time.perf_counter() - start
    return {**case, "setup_s": setup, "total_s": total, "times": times, "objectives": objectives,
            "objective": float(result.objective[0]) if result.jerr == 0 else None,
            "kkt": float(result.kkt[0]) if result.jerr == 0 else None,
            "npass": int(result.npass[0]), "jerr": int(result.jerr), "solver_label": majoriser.solver}


def run_ablation(case):
    """Sweeps to ``||grad F|| <= eps`` for each ``lam`` of ``case["lams"]`` and each
    block size, at ``case["n"]``; with ``case["global_step"]`` False the
    global step is switched off (an ablation: the block steps alone)."""
    import kerndwd
    from kerndwd.engine.majorisers.blocks import BlockCoordinateKernel

    if not case["global_step"]:
        BlockCoordinateKernel._global_step = lambda self, *args: False
    X, y = circle(case["n"], case["seed"])
    out = []
    for b in case["block_sizes"]:
        for lam in case["lams"]:
            start = time.perf_counter()
            path = kerndwd.fit(X, y, [lam], kern=kerndwd.rbfdot(sigma=1.0), solver="bcd", block_size=b, stop="kkt",
                               eps=case["eps"], maxit=case["maxit"])
            out.append({"b": b, "lam": lam, "sweeps": int(path.npass[0]), "converged": path.jerr == 0,
                        "seconds": time.perf_counter() - start})
    return out


def run_sweep_cost(case):
    """Seconds of the first sweep (block Grams included) and of later sweeps, and
    of one product with ``K``, at ``case["n"]`` for each block size."""
    import kerndwd
    from kerndwd.engine import FactorCache, Problem, build_majoriser, make_design

    X, y = circle(case["n"], case["seed"])
    y = y.astype(float)
    kern = kerndwd.rbfdot(sigma=1.0)
    out = []
    for b in case["block_sizes"]:
        problem = Problem.from_arrays(X, y, [case["lam"]], kern=kern, design=make_design("bcd", {"block_size": b}))
        majoriser = build_majoriser(problem, FactorCache(X, kern))
        step_fn = majoriser.at_lambda(case["lam"])
        coord, f = majoriser.start(), np.zeros(case["n"])
        seconds = []
        for _ in range(3):
            z = y * majoriser.loss.deriv(y * f)
            start = time.perf_counter()
            step, df, _ = step_fn(z, coord, f=f, y=y)
            seconds.append(time.perf_counter() - start)
            coord, f = coord + step, f + df
        start = time.perf_counter()
        majoriser.form.apply(coord[1:])
        out.append({"b": b, "first": seconds[0], "sweep": min(seconds[1:]), "apply": time.perf_counter() - start})
    return out


#: run in a fresh interpreter: start one case as a child, wait, and report the
#: child's peak resident memory (RUSAGE_CHILDREN holds this child only)
_WRAPPER = """
import json, resource, subprocess, sys
child = subprocess.run(sys.argv[1:], capture_output=True, text=True)
sys.stderr.write(child.stderr)
peak_kib = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
print(json.dumps({"returncode": child.returncode, "stdout": child.stdout, "peak_kib": peak_kib}))
"""


def in_subprocess(case, timeout):
    """``run_case(case)`` in a child process, with its peak memory in MiB."""
    worker = [sys.executable, "-m", "benchmarks.bench_bcd", "--worker", json.dumps(case)]
    out = subprocess.run([sys.executable, "-c", _WRAPPER, *worker], capture_output=True, text=True, cwd=ROOT,
                         timeout=timeout, check=True)
    wrapped = json.loads(out.stdout.strip().splitlines()[-1])
    if wrapped["returncode"] != 0:
        raise RuntimeError(f"case {case} failed:\n{out.stderr[-3000:]}")
    result = json.loads(wrapped["stdout"].strip().splitlines()[-1])
    if isinstance(result, dict):
        result["peak_mib"] = wrapped["peak_kib"] / 1024.0
    return result


def import_floor_mib():
    """Peak memory of a process that imports kerndwd and does nothing else."""
    worker = [sys.executable, "-c", "import kerndwd, scipy.linalg"]
    out = subprocess.run([sys.executable, "-c", _WRAPPER, *worker], capture_output=True, text=True, cwd=ROOT,
                         check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])["peak_kib"] / 1024.0


def time_to_gap(result, target):
    """Seconds until the recorded objective first reaches ``target`` (None if never)."""
    for t, value in zip(result["times"], result["objectives"]):
        if value <= target:
            return t
    return None


# --------------------------------------------------------------------------
# report
# --------------------------------------------------------------------------
def fmt(value, spec=".1f"):
    return "-" if value is None else format(value, spec)


def plot(rows, large, floor, path):
    try:
        import matplotlib
    except ImportError:
        print("matplotlib is missing (pip install 'kerndwd[plot]'): no PNG written", file=sys.stderr)
        return False
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (ax_t, ax_m) = plt.subplots(1, 2, figsize=(10, 4))
    ns = [r["n"] for r in rows]
    for key, label, marker in (("eigen", "eigen solver", "s"), ("bcd", "BCD", "o")):
        ax_t.plot(ns, [r[key + "_time"] for r in rows], marker=marker, label=label)
        ax_m.plot(ns, [r[key + "_mib"] for r in rows], marker=marker, label=label)
    if large is not None:
        ax_t.plot([large["n"]], [large["total_s"]], marker="*", markersize=12, linestyle="none",
                  label=f"BCD, certified ||grad F|| <= {large['eps']:g}")
        ax_m.plot([large["n"]], [large["peak_mib"]], marker="*", markersize=12, linestyle="none",
                  label=f"BCD, n = {large['n']}")
    ax_m.axhline(floor, color="grey", linestyle=":", label="import kerndwd only")
    ax_t.set(xscale="log", yscale="log", xlabel="n", ylabel="seconds",
             title=f"time to F <= F*(1 + {GAP:g})")
    ax_m.set(xscale="log", yscale="log", xlabel="n", ylabel="MiB", title="peak resident memory")
    for ax in (ax_t, ax_m):
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    return True


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", type=int, nargs="*", default=[2000, 5000, 10000, 20000])
    ap.add_argument("--large", type=int, default=100000, help="n at which only BCD runs (0: skip)")
    ap.add_argument("--lam", type=float, default=0.01)
    ap.add_argument("--block-size", type=int, default=None, help="BCD block size (default: the solver's)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--timeout", type=float, default=5400.0, help="seconds per case")
    ap.add_argument("--out-dir", type=Path, default=OUTPUT)
    ap.add_argument("--ablation-n", type=int, default=2000, help="n of the block-size and global-step tables (0: skip)")
    ap.add_argument("--cost-n", type=int, default=20000, help="n of the per-sweep cost table (0: skip)")
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.worker:
        case = json.loads(args.worker)
        task = {"ablation": run_ablation, "sweep_cost": run_sweep_cost}.get(case.get("task"), run_case)
        print(json.dumps(task(case)))
        return

    from kerndwd.engine.majorisers.blocks import DEFAULT_BLOCK_SIZE

    block = DEFAULT_BLOCK_SIZE if args.block_size is None else args.block_size
    command = command_line("benchmarks.bench_bcd", argv)
    floor = import_floor_mib()
    print(f"machine: {machine_description()}\nimport-only peak memory: {floor:.0f} MiB", flush=True)
    rows = []
    for n in args.sizes:
        base = {"n": n, "lam": args.lam, "seed": args.seed, "block_size": block, "eps": EPS_REFERENCE}
        bcd = in_subprocess({**base, "solver": "bcd"}, args.timeout)
        print(f"n={n} bcd: {bcd['total_s']:.1f} s, {bcd['npass']} sweeps, kkt {bcd['kkt']}, "
              f"{bcd['peak_mib']:.0f} MiB", flush=True)
        eigen = in_subprocess({**base, "solver": "eigen"}, args.timeout)
        print(f"n={n} eigen: {eigen['total_s']:.1f} s (setup {eigen['setup_s']:.1f} s), {eigen['npass']} passes, "
              f"kkt {eigen['kkt']}, {eigen['peak_mib']:.0f} MiB", flush=True)
        finals = [r["objective"] for r in (bcd, eigen) if r["objective"] is not None]
        best = min(finals)
        target = best * (1.0 + GAP)
        rows.append({"n": n, "best": best, "eigen_final": eigen["objective"], "bcd_final": bcd["objective"],
                     "eigen_time": time_to_gap(eigen, target), "bcd_time": time_to_gap(bcd, target),
                     "eigen_setup": eigen["setup_s"], "eigen_passes": eigen["npass"], "bcd_sweeps": bcd["npass"],
                     "eigen_mib": eigen["peak_mib"], "bcd_mib": bcd["peak_mib"],
                     "eigen_total": eigen["total_s"], "bcd_total": bcd["total_s"]})
    large = None
    if args.large:
        large = in_subprocess({"n": args.large, "lam": args.lam, "seed": args.seed, "block_size": block,
                               "eps": EPS_LARGE, "solver": "bcd"}, args.timeout)
        print(f"n={args.large} bcd: certified kkt {large['kkt']} in {large['total_s']:.1f} s, "
              f"{large['npass']} sweeps, {large['peak_mib']:.0f} MiB", flush=True)

    sizes_b = [32, 64, 128, 256]
    ablation_lams = [1.0, 0.1, 0.01, 0.001]
    ablation = without_global = cost = None
    if args.ablation_n:
        base = {"task": "ablation", "n": args.ablation_n, "seed": args.seed, "lams": ablation_lams, "eps": 1e-8}
        ablation = in_subprocess({**base, "block_sizes": sizes_b, "global_step": True, "maxit": 3000},
                                 args.timeout)
        without_global = in_subprocess({**base, "block_sizes": [block], "global_step": False, "maxit": 1000},
                                       args.timeout)
        print("ablation done", flush=True)
    if args.cost_n:
        cost = in_subprocess({"task": "sweep_cost", "n": args.cost_n, "seed": args.seed, "lam": args.lam,
                              "block_sizes": sizes_b}, args.timeout)
        print("sweep costs done", flush=True)

    lines = [
        "# Exact-kernel BCD against the eigen solver",
        "",
        f"Command: `{command}`",
        "",
        f"Machine: {machine_description()}.",
        "",
        f"Data: circle data (x standard normal in 2-D, y = +1 where |x|^2 + 0.4 N(0,1) > 1.4), seed {args.seed}; "
        f"rbfdot(sigma = 1), q = 1, lambda = {args.lam:g} (a single lambda, from a zero start). "
        f"BCD: block_size = {block}. Both solvers use the gradient rule with momentum; "
        f"the reference fits stop at ||grad F|| <= {EPS_REFERENCE:g}.",
        "",
        f"Time to gap: wall seconds from the start of the fit (the eigen solver's kernel matrix and "
        f"eigendecomposition included) until the objective first satisfies F <= F* (1 + {GAP:g}), F* the "
        "smaller final objective of the two. Memory: peak resident set of the process that ran the case "
        f"(ru_maxrss); a process that only imports kerndwd peaks at {floor:.0f} MiB.",
        "",
        "| n | F* | eigen: time to gap (s) | of which K and eigh (s) | passes | peak MiB | "
        "BCD: time to gap (s) | sweeps to 1e-8 | peak MiB | time eigen / BCD | memory BCD / eigen |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        ratio_t = (r["eigen_time"] / r["bcd_time"]) if r["eigen_time"] and r["bcd_time"] else None
        lines.append(f"| {r['n']} | {r['best']:.10f} | {fmt(r['eigen_time'])} | {r['eigen_setup']:.1f} | "
                     f"{r['eigen_passes']} | {r['eigen_mib']:.0f} | {fmt(r['bcd_time'])} | {r['bcd_sweeps']} | "
                     f"{r['bcd_mib']:.0f} | {fmt(ratio_t, '.2f')} | {r['bcd_mib'] / r['eigen_mib']:.3f} |")
    lines.append("")
    lines.append("Final objectives (eigen, BCD) and total fit times to ||grad F|| <= "
                 f"{EPS_REFERENCE:g} (s): "
                 + "; ".join(f"n={r['n']}: {r['eigen_final']!r}, {r['bcd_final']!r}, "
                             f"{r['eigen_total']:.1f}, {r['bcd_total']:.1f}" for r in rows) + ".")
    lines.append("")
    big = [r for r in rows if r["n"] == 20000]
    if big:
        r = big[0]
        faster = r["bcd_time"] is not None and r["eigen_time"] is not None and r["bcd_time"] < r["eigen_time"]
        lean = r["bcd_mib"] <= 0.1 * r["eigen_mib"]
        lines.append(f"**Acceptance, n = 20000:** BCD reaches the eigen solver's objective (gap {GAP:g}) in "
                     f"{fmt(r['bcd_time'])} s against {fmt(r['eigen_time'])} s "
                     f"({'met' if faster else 'NOT met'}: less time), with {r['bcd_mib']:.0f} MiB against "
                     f"{r['eigen_mib']:.0f} MiB ({r['bcd_mib'] / r['eigen_mib']:.3f} of it; "
                     f"{'met' if lean else 'NOT met'}: at most a tenth).")
        lines.append("")
    if large is not None:
        ok = large["kkt"] is not None and large["kkt"] <= EPS_LARGE
        lines.append(f"**Acceptance, n = {large['n']}:** the dense solver would need the {large['n']}^2 kernel "
                     f"matrix ({8 * large['n'] ** 2 / 2 ** 30:.0f} GiB) and cannot run here. BCD certified "
                     f"||grad F|| = {fmt(large['kkt'], '.3g')} <= {EPS_LARGE:g} "
                     f"({'met' if ok else 'NOT met'}) in {large['total_s']:.0f} s "
                     f"({large['total_s'] / 60:.1f} min: {large['npass']} sweeps, the first "
                     f"{large['times'][0] if large['times'] else float('nan'):.0f} s including the block Grams, "
                     f"then the final check on recomputed decision values), peak memory "
                     f"{large['peak_mib']:.0f} MiB; final objective {fmt(large['objective'], '.10f')}.")
        lines.append("")
    if ablation is not None:
        lines += [f"## Sweeps to ||grad F|| <= 1e-8 at n = {args.ablation_n}, by block size and lambda",
                  "",
                  "Same data; each cell is one fit from a zero start (sweeps, wall seconds in brackets). "
                  f"The last row switches the global step off (block steps alone, block_size = {block}; "
                  "'>N' means the budget of N sweeps ran out).",
                  "",
                  "| block_size | " + " | ".join(f"lambda = {lam:g}" for lam in ablation_lams) + " |",
                  "|---|" + "---|" * len(ablation_lams)]

        def cells(records):
            return " | ".join((f"{r['sweeps']} ({r['seconds']:.1f})" if r["converged"] else f">{r['sweeps'] - 1}")
                              for r in records)

        for b in sizes_b:
            lines.append(f"| {b} | " + cells([r for r in ablation if r["b"] == b]) + " |")
        lines.append(f"| {block}, no global step | " + cells(without_global) + " |")
        lines.append("")
    if cost is not None:
        lines += [f"## Cost of a sweep at n = {args.cost_n} (lambda = {args.lam:g})", "",
                  "First sweep (it forms the block Grams), the fastest of two later sweeps, and one product "
                  "with K (the cost of each of the two passes that confirm the gradient rule), in seconds.", "",
                  "| block_size | first sweep | sweep | K theta |", "|---|---|---|---|"]
        lines += [f"| {r['b']} | {r['first']:.2f} | {r['sweep']:.2f} | {r['apply']:.2f} |" for r in cost]
        lines.append("")
    args.out_dir.mkdir(parents=True, exist_ok=True)
    png = args.out_dir / "bcd.png"
    if plot(rows, large, floor, png):
        lines.append(f"![time and memory against n]({png.name})")
        lines.append("")
    text = "\n".join(lines)
    (args.out_dir / "bcd.md").write_text(text)
    print(text)


if __name__ == "__main__":
    main()
