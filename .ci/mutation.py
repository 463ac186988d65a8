"""Mutation testing of the engine with mutmut, scored against a ledger.

    python3 .ci/mutation.py                      # the functions changed since HEAD~1
    python3 .ci/mutation.py --base main~5        # ... since another commit
    python3 .ci/mutation.py --modules kerndwd/engine/solvers/newton.py kerndwd/calibration.py
    python3 .ci/mutation.py --rerun --modules kerndwd/calibration.py   # survivors again, after new tests
    python3 .ci/mutation.py --report --modules ...   # score the results already in mutants/

The scope is mutmut's (``[tool.mutmut]`` in ``pyproject.toml``): every module
of ``kerndwd/engine/``, ``kerndwd/calibration.py``, ``kerndwd/kernels.py`` and
``kerndwd/loss.py``.  With ``--base`` the script mutates only the functions and
methods whose lines a ``git diff`` against that commit touches, which is what
CI runs; ``--modules`` takes whole modules.

Steps (see ``tests/README.md``, "Mutation testing"):

1. generate the mutants and record which test of the quick set calls which
   function (mutmut's own first step, run here without running a mutant);
2. measure each test's duration with ``pytest --durations`` and write a share
   of it into ``mutants/mutmut-stats.json``: mutmut 3.3.1 records a test's
   teardown time as its duration, and would stop every mutant after 15 s;
3. run the chosen mutants (``mutmut run``) within the time left, then run
   again, alone and under a generous limit, each that mutmut stopped for
   time (``confirm_timeouts``);
4. score them against ``tests/mutants.toml``, the ledger of surviving
   mutants, each named by its function and its change (not by mutmut's
   number, which moves when the function is edited) with the reason it
   survives: ``equivalent`` (no behaviour can change) or ``open`` (a change
   that no test of the quick set sees yet).

Exit status: 1 when a mutant survives that the ledger does not hold, or when
a ledger entry's mutant is killed now (the entry is stale and must go); 0
otherwise.  The score printed is killed / (checked - equivalent), timeouts
counted as killed once a second run of the mutant alone, under a generous
limit, has timed out too (a survivor whose tests merely ran slowly under
mutmut's tight limit is a survivor); mutants left unchecked when time runs
out are counted and named, and do not fail the run.
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from difflib import unified_diff
from pathlib import Path

try:
    import tomllib
except ModuleNotFoundError:  # Python < 3.11
    import tomli as tomllib  # type: ignore[no-redef]

ROOT = Path(__file__).resolve().parent.parent
LEDGER = ROOT / "tests" / "mutants.toml"
# mutmut's command, installed beside this interpreter ("mutation" extra)
MUTMUT = str(Path(sys.executable).with_name("mutmut")) if Path(sys.executable).with_name("mutmut").exists() \
    else "mutmut"
# mutmut stops a mutant after 15 (sum + 1) s of wall time and 30 (sum + 1) s
# of CPU time, sum being the recorded durations of its tests: 0.15 of the
# measured durations keeps every limit at twice a clean run of the tests under
# load or more, and stops sooner a mutant that sends a solver into its budget
DURATION_SCALE = float(os.environ.get("MUTMUT_DURATION_SCALE", "0.15"))
KILLED = {1, 3, -24, 24, 36, 152, 255, -11, -9}  # failed, timed out or crashed
TIMEOUTS = {-24, 24, 36, 152, 255}  # mutmut's codes of a mutant stopped for time
# A mutant stopped for time is run once more, alone, under this many times the
# measured duration of its tests plus the start of pytest (see confirm_timeouts)
CONFIRM_FACTOR, CONFIRM_START = 5.0, 60.0
SURVIVED = {0}
NO_TESTS = {5, 33}


def log(*args):
    print(*args, flush=True)


# --------------------------------------------------------------------------
# which functions


def scope_files():
    """The .py files mutmut mutates, as paths relative to the root."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["mutmut"]
    from fnmatch import fnmatch

    files = []
    for top in config["paths_to_mutate"]:
        for path in sorted((ROOT / top).rglob("*.py")):
            rel = path.relative_to(ROOT).as_posix()
            if not any(fnmatch(rel, pattern) for pattern in config.get("do_not_mutate", [])):
                files.append(rel)
    return files


def module_name(rel):
    name = rel[: -len(".py")].replace("/", ".")
    return name[: -len(".__init__")] if name.endswith(".__init__") else name


def mangled(module, node, owner=None):
    # mutmut's names: module.x_function and module.xǁClassǁmethod
    if owner is None:
        return f"{module}.x_{node.name}"
    return f"{module}.x\u01c1{owner}\u01c1{node.name}"


def functions_by_line(rel):
    """(first line, last line, mangled name) of each top-level function and method."""
    tree = ast.parse((ROOT / rel).read_text())
    module = module_name(rel)
    spans = []
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            first = min([node.lineno] + [d.lineno for d in node.decorator_list])
            spans.append((first, node.end_lineno, mangled(module, node)))
        elif isinstance(node, ast.ClassDef):
            for item in node.body:
                if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    first = min([item.lineno] + [d.lineno for d in item.decorator_list])
                    spans.append((first, item.end_lineno, mangled(module, item, node.name)))
    return spans


def changed_functions(base, files):
    """Mangled names of the functions whose lines changed since ``base``."""
    out = subprocess.run(["git", "diff", "-U0", base, "--", *files], cwd=ROOT,
                         capture_output=True, text=True)
    if out.returncode != 0:
        raise SystemExit(f"--base {base}: git diff failed: {out.stderr.strip()}")
    diff = out.stdout
    touched = {}
    current = None
    for line in diff.splitlines():
        if line.startswith("+++ "):
            current = line[6:] if line.startswith("+++ b/") else None
        elif line.startswith("@@") and current is not None:
            m = re.match(r"@@ -\d+(?:,\d+)? \+(\d+)(?:,(\d+))? @@", line)
            start, count = int(m.group(1)), int(m.group(2) or "1")
            # a pure deletion touches the line after it
            touched.setdefault(current, []).append((start, start + max(count, 1) - 1))
    names = []
    for rel, ranges in touched.items():
        for first, last, name in functions_by_line(rel):
            if any(a <= last and b >= first for a, b in ranges):
                names.append(name)
    return names


# --------------------------------------------------------------------------
# mutmut's steps


def mutmut_env():
    env = dict(os.environ)
    env.setdefault("HYPOTHESIS_PROFILE", "ci")
    # worker processes import the package from the site, not the mutant: their tests are left out
    env["PYTEST_ADDOPTS"] = (env.get("PYTEST_ADDOPTS", "") + " -p no:randomly -m 'not slow and not processes'").strip()
    if "KERNDWD_DATA" in env:  # mutmut runs the tests inside mutants/
        env["KERNDWD_DATA"] = str(Path(env["KERNDWD_DATA"]).resolve())
    return env


GENERATE = r"""
import os, sys
from pathlib import Path
import mutmut.__main__ as mm
os.environ["MUTANT_UNDER_TEST"] = "mutant_generation"
mm.ensure_config_loaded()
Path("mutants").mkdir(exist_ok=True)
mm.copy_src_dir()
mm.create_mutants(int(sys.argv[1]))
mm.copy_also_copy_files()
sys.path.insert(0, str(Path("mutants").absolute()))
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(".").resolve()]
runner = mm.PytestRunner()
runner.prepare_main_test_run()
mm.collect_or_load_stats(runner)
# tests that mutmut lists but the quick set deselects (marked slow) never run and
# have no stats; recorded with no duration, mutmut does not take them for new
# tests to time (a run of no test, which it reports as a failure)
os.environ["MUTANT_UNDER_TEST"] = "list_all_tests"
for name in runner.list_all_tests().new_tests():
    mm.mutmut.duration_by_test[name] = 0.0
mm.save_stats()
"""


def generate(children, env):
    shutil.rmtree(ROOT / "mutants", ignore_errors=True)
    subprocess.run([sys.executable, "-c", GENERATE, str(children)], cwd=ROOT, env=env,
                   check=True, stdout=subprocess.DEVNULL)


def fix_durations(env):
    stats_path = ROOT / "mutants" / "mutmut-stats.json"
    stats = json.loads(stats_path.read_text())
    tests = sorted(stats["duration_by_test"])
    out = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:randomly", "--durations=0",
         "--durations-min=0", *tests],
        cwd=ROOT / "mutants", capture_output=True, text=True,
        env={**env, "MUTANT_UNDER_TEST": ""}).stdout
    total = {}
    for m in re.finditer(r"^([0-9.]+)s (?:setup|call|teardown)\s+(.+?)\s*$", out, re.M):
        total[m.group(2)] = total.get(m.group(2), 0.0) + float(m.group(1))
    ran = [t for t in tests if t in total]
    if len(ran) < len(tests) / 2:
        raise SystemExit(f"no duration measured for {len(tests) - len(ran)} of {len(tests)} tests")
    # the others are deselected (slow) and keep their zero
    stats["duration_by_test"].update({t: DURATION_SCALE * total[t] for t in ran})
    stats_path.write_text(json.dumps(stats, indent=4))


def run_mutants(patterns, children, seconds, env):
    """mutmut run on the patterns, stopped (its results kept) after ``seconds``."""
    log_path = ROOT / "mutants" / "run.log"
    with open(log_path, "w") as out:
        proc = subprocess.Popen([MUTMUT, "run", "--max-children", str(children), *patterns],
                                cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT,
                                start_new_session=True)
    try:
        proc.wait(timeout=max(seconds, 1))
    except subprocess.TimeoutExpired:
        log(f"time is up after {seconds:.0f} s: stopping mutmut; unfinished mutants stay unchecked")
        os.killpg(proc.pid, signal.SIGINT)
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        return
    if proc.returncode != 0:
        tail = log_path.read_text().replace("\r", "\n").strip().splitlines()[-20:]
        raise SystemExit("mutmut run failed:\n" + "\n".join(tail))


def confirm_timeouts(names, found, deadline, children, env):
    """Run again each of ``names`` that mutmut stopped for time, its tests alone
    (``pytest -x`` in mutants/, the mutant switched on as mutmut does), under
    :data:`CONFIRM_FACTOR` times their measured duration plus
    :data:`CONFIRM_START`.  mutmut's own limit is near a clean run of the
    tests (see :data:`DURATION_SCALE`), and a surviving mutant runs every test
    that calls it, slowed by the other mutated modules' trampolines and by a
    loaded machine: a survivor can reach that limit and would be counted as
    killed.  Here it passes and is recorded as a survivor (0); a failure is a
    kill (1); a mutant that runs past the generous limit too keeps its timeout.
    Those not reached by ``deadline`` are recorded as unchecked (None).
    Returns the number confirmed as survivors, kills and timeouts, and the
    number left unchecked."""
    from concurrent.futures import ThreadPoolExecutor

    stats = json.loads((ROOT / "mutants" / "mutmut-stats.json").read_text())
    tests_by, durations = stats["tests_by_mangled_function_name"], stats["duration_by_test"]
    todo = [n for n in names if found[n][0] in TIMEOUTS]

    def confirm(name):
        tests = sorted(tests_by.get(name.partition("__mutmut_")[0], []))
        limit = CONFIRM_FACTOR * sum(durations.get(t, 0.0) for t in tests) / DURATION_SCALE + CONFIRM_START
        if not tests or time.monotonic() + limit > deadline:
            return None
        try:
            proc = subprocess.run([sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider", *tests],
                                  cwd=ROOT / "mutants", env={**env, "MUTANT_UNDER_TEST": name},
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=limit)
        except subprocess.TimeoutExpired:
            return found[name][0]
        return 0 if proc.returncode == 0 else 1

    with ThreadPoolExecutor(max(1, children)) as pool:
        codes = dict(zip(todo, pool.map(confirm, todo)))
    by_module = {}
    for name, code in codes.items():
        by_module.setdefault(found[name][1], {})[name] = code
    for rel, changed in by_module.items():
        meta = ROOT / "mutants" / (rel + ".meta")
        data = json.loads(meta.read_text())
        data["exit_code_by_key"].update(changed)
        meta.write_text(json.dumps(data, indent=4))
    values = list(codes.values())
    return (values.count(0), values.count(1), sum(v in TIMEOUTS for v in values), values.count(None))


# --------------------------------------------------------------------------
# results and the ledger


def read_meta():
    """{source path: (exit code by mutant, source by function)} of mutants/; the
    source of each mutated function (mutmut 3.3.1 records no hash of it) tells
    which functions changed between two generations."""
    import libcst as cst

    out = {}
    for meta in (ROOT / "mutants").rglob("*.py.meta"):
        rel = meta.relative_to(ROOT / "mutants").as_posix()[: -len(".meta")]
        codes = json.loads(meta.read_text())["exit_code_by_key"]
        sources = {}
        module = cst.parse_module((ROOT / "mutants" / rel).read_text())
        for node in module.body:
            items = [node] if isinstance(node, cst.FunctionDef) else (
                node.body.body if isinstance(node, cst.ClassDef) else [])
            for item in items:
                if isinstance(item, cst.FunctionDef) and item.name.value.endswith("__mutmut_orig"):
                    sources[item.name.value[: -len("__mutmut_orig")]] = cst.Module([item]).code
        out[rel] = (codes, sources)
    return out


def rerun_patterns(old, new, modules):
    """The mutants to run again: every mutant of a function whose source changed
    since ``old`` was recorded, and the survivors of the others."""
    patterns = []
    for rel in modules:
        old_codes, old_sources = old.get(rel, ({}, {}))
        codes, sources = new[rel]
        for name in codes:
            function = name.partition("__mutmut_")[0]
            short = function.rpartition(".")[2]
            if sources.get(short) != old_sources.get(short) or name not in old_codes:
                patterns.append(function + "__mutmut_*")
            elif old_codes[name] not in KILLED:
                patterns.append(name)
    return sorted(set(patterns))


def merge_old_results(old, modules):
    """Put back the results of ``old`` for the mutants of unchanged functions that
    this run left unchecked (mutmut forgets them when it regenerates)."""
    new = read_meta()
    for rel in modules:
        meta = ROOT / "mutants" / (rel + ".meta")
        data = json.loads(meta.read_text())
        old_codes, old_sources = old.get(rel, ({}, {}))
        sources = new[rel][1]
        for name, code in data["exit_code_by_key"].items():
            short = name.partition("__mutmut_")[0].rpartition(".")[2]
            if code is None and name in old_codes and sources.get(short) == old_sources.get(short):
                data["exit_code_by_key"][name] = old_codes[name]
        meta.write_text(json.dumps(data, indent=4))


def results():
    """{mutant name: exit code} of every mutant in mutants/, and its source file."""
    out = {}
    for meta in (ROOT / "mutants").rglob("*.py.meta"):
        rel = meta.relative_to(ROOT / "mutants").as_posix()[: -len(".meta")]
        for name, code in json.loads(meta.read_text())["exit_code_by_key"].items():
            out[name] = (code, rel)
    return out


def change_of(name, rel, cache={}):
    """The lines a mutant removes and adds, stripped: its name-free identity."""
    import libcst as cst

    if rel not in cache:
        cache[rel] = cst.parse_module((ROOT / "mutants" / rel).read_text())
    module = cache[rel]
    stem = name.partition("__mutmut_")[0].rpartition(".")[2]
    wanted = {stem + "__mutmut_orig": None, name.rpartition(".")[2]: None}
    for node in module.body:
        bodies = [node] if isinstance(node, cst.FunctionDef) else (
            node.body.body if isinstance(node, cst.ClassDef) else [])
        for item in bodies:
            if isinstance(item, cst.FunctionDef) and item.name.value in wanted:
                wanted[item.name.value] = cst.Module([item.with_changes(name=cst.Name("f"))]).code
    orig, mutant = wanted.values()
    diff = list(unified_diff(orig.strip().splitlines(), mutant.strip().splitlines(), lineterm="", n=0))
    return sorted(l[0] + l[1:].strip() for l in diff[2:] if l[:1] in "+-" and not l.startswith("@@"))


def load_ledger():
    if not LEDGER.exists():
        return []
    return tomllib.loads(LEDGER.read_text()).get("mutant", [])


def key_of(function, change):
    return function, tuple(sorted(change))


def score(names, found, ledger):
    entries = {key_of(e["function"], e["change"]): e for e in ledger}
    used = set()
    killed = survived_known = equivalent = unchecked = 0
    new, stale, no_tests = [], [], []
    by_module = {}
    for name in sorted(names):
        code, rel = found[name]
        function = name.partition("__mutmut_")[0]
        row = by_module.setdefault(rel, [0, 0, 0, 0])  # killed, survived, equivalent, unchecked
        if code is None:
            unchecked += 1
            row[3] += 1
            continue
        key = key_of(function, change_of(name, rel))
        entry = entries.get(key)
        if code in KILLED:
            killed += 1
            row[0] += 1
            if entry is not None:
                stale.append((name, entry))
            continue
        if entry is None:
            (no_tests if code in NO_TESTS else new).append(name)
            row[1] += 1
            continue
        used.add(key)
        if entry["status"] == "equivalent":
            equivalent += 1
            row[2] += 1
        else:
            survived_known += 1
            row[1] += 1
    return dict(killed=killed, open=survived_known, equivalent=equivalent, unchecked=unchecked,
                new=new, stale=stale, no_tests=no_tests, by_module=by_module)


def stub(name, rel):
    change = ",\n    ".join(json.dumps(line, ensure_ascii=False) for line in change_of(name, rel))
    return (f'[[mutant]]\nfunction = "{name.partition("__mutmut_")[0]}"\n'
            f'change = [\n    {change},\n]\nstatus = "open"\nwhy = ""\n')


def show(name):
    out = subprocess.run([MUTMUT, "show", name], cwd=ROOT, capture_output=True, text=True)
    return out.stdout.strip()


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", default="HEAD~1",
                        help="mutate the functions changed since this commit (default HEAD~1)")
    parser.add_argument("--modules", nargs="+", metavar="PATH",
                        help="mutate these modules whole instead")
    parser.add_argument("--minutes", type=float, default=10.0,
                        help="the time for all steps; mutants not reached stay unchecked")
    parser.add_argument("--children", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--rerun", action="store_true",
                        help="with --modules: run again, with the tests as they are now, the survivors "
                             "of the last run in mutants/ and every mutant of a function changed since; "
                             "the other results stand")
    parser.add_argument("--report", action="store_true",
                        help="score the results already in mutants/, running nothing")
    args = parser.parse_args(argv)
    start = time.monotonic()

    files = scope_files()
    if args.modules:
        unknown = [m for m in args.modules if m not in files]
        if unknown:
            parser.error(f"--modules: not in mutmut's scope: {', '.join(unknown)}")
        patterns = [module_name(m) + ".x*" for m in args.modules]
        what = ", ".join(args.modules)
    else:
        functions = changed_functions(args.base, files)
        if not functions:
            log(f"no function in the mutation scope changed since {args.base}: nothing to run")
            return 0
        patterns = [f + "__mutmut_*" for f in functions]
        what = f"{len(functions)} functions changed since {args.base}"

    env = mutmut_env()
    if args.rerun:
        if not args.modules or not (ROOT / "mutants" / "mutmut-stats.json").exists():
            parser.error("--rerun takes --modules, and the results of an earlier run in mutants/")
        # the results of the last complete run, kept beside mutmut's files (which a
        # regeneration resets, even one that then fails)
        kept = ROOT / "mutants" / "last-results.json"
        old = ({rel: tuple(v) for rel, v in json.loads(kept.read_text()).items()} if kept.exists()
               else read_meta())
        log(f"mutation rerun over {what}")
        # mutmut regenerates every mutant; which test calls which function is recorded afresh
        # (mutmut records only tests it has not seen, and a test whose id was taken by another,
        # a parametrized case shifted by a new one, would keep the old test's functions)
        (ROOT / "mutants" / "mutmut-stats.json").unlink()
        subprocess.run([sys.executable, "-c", GENERATE, str(args.children)], cwd=ROOT, env=env, check=True,
                       stdout=subprocess.DEVNULL)
        fix_durations(env)
        run_patterns = rerun_patterns(old, read_meta(), args.modules)
        log(f"{len(run_patterns)} survivors and changed functions to run")
    elif not args.report:
        log(f"mutation run over {what}")
        generate(args.children, env)
        fix_durations(env)
        log(f"mutants generated and durations measured in {time.monotonic() - start:.0f} s")

    from fnmatch import fnmatchcase

    found = results()
    names = [n for n in found if any(fnmatchcase(n, p) for p in patterns)]
    if not names:
        log("the changed functions have no mutants: nothing to run")
        return 0
    if args.rerun:
        left = 60 * args.minutes - (time.monotonic() - start) - 30
        if run_patterns:
            run_mutants(run_patterns, args.children, 0.75 * left, env)
        merge_old_results(old, args.modules)
        found = results()
    elif not args.report:
        left = 60 * args.minutes - (time.monotonic() - start) - 30
        run_mutants(patterns, args.children, 0.75 * left, env)  # the rest for the timeouts' second runs
        found = results()
    if not args.report:
        counts = confirm_timeouts(names, found, start + 60 * args.minutes - 15, args.children, env)
        if any(counts):
            log("mutants stopped for time, run again alone under a generous limit: {} survived, {} failed "
                "(killed), {} timed out again (killed), {} not reached (unchecked)".format(*counts))
        found = results()

    if not args.report:
        (ROOT / "mutants" / "last-results.json").write_text(json.dumps(read_meta()))
    s = score(names, found, load_ledger())
    checked = len(names) - s["unchecked"]
    denominator = checked - s["equivalent"]
    log(f"\n{len(names)} mutants, {checked} checked in {time.monotonic() - start:.0f} s:"
        f" {s['killed']} killed (timeouts included), {s['equivalent']} equivalent,"
        f" {s['open']} open in the ledger, {len(s['new'])} new survivors,"
        f" {len(s['no_tests'])} with no test of the quick set, {s['unchecked']} unchecked")
    if denominator:
        log(f"score: {s['killed']} / ({checked} - {s['equivalent']}) = "
            f"{100 * s['killed'] / denominator:.1f} %")
    for rel, (k, sv, eq, un) in sorted(s["by_module"].items()):
        den = k + sv
        log(f"  {rel}: {k} killed, {sv} survived, {eq} equivalent, {un} unchecked"
            + (f": {100 * k / den:.1f} %" if den else ""))
    failed = False
    for title, items in (("new survivors (not in tests/mutants.toml)", s["new"]),
                         ("mutants no test of the quick set calls", s["no_tests"])):
        if items:
            failed = True
            log(f"\n{title}:")
            for name in items:
                log(show(name) or name)
            log("\nledger entries to fill in, if a survivor stays (status, why):")
            for name in items:
                code, rel = found[name]
                log(stub(name, rel))
    if s["stale"]:
        failed = True
        log("\nkilled now, but listed in tests/mutants.toml (remove the entries):")
        for name, entry in s["stale"]:
            log(f"  {name}: {entry['change']}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
