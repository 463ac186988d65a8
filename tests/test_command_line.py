"""First contact: `python -m kerndwd --help` prints its usage and runs nothing, the demo
explains the gradient norm, and the validation suite writes to a temporary folder by default."""

import os
import re
import subprocess
import sys

import kerndwd


LIN = kerndwd.vanilladot()


# --------------------------------------------------------------------------
# first contact
# --------------------------------------------------------------------------
def test_module_help_prints_usage_and_runs_nothing():
    # a wide terminal, so that argparse keeps the usage on one line
    env = {**os.environ, "COLUMNS": "200"}
    out = subprocess.run([sys.executable, "-m", "kerndwd", "--help"], capture_output=True, text=True, timeout=120,
                         env=env)
    assert out.returncode == 0 and out.stderr == ""
    lines = out.stdout.splitlines()
    assert lines[0] == "usage: python -m kerndwd [-h] [--n N] [--sigma SIGMA] [--q Q] [--seed SEED]"
    # the options of kerndwd/__main__.py, each with its help text
    options = {
        r"-h, --help": "show this help message and exit",
        r"--n N": "number of simulated points (default 200)",
        r"--sigma SIGMA": "rbfdot's sigma (default 1)",
        r"--q Q": "the loss exponent q > 0 (default 1)",
        r"--seed SEED": "seed of the simulated data (default 0)",
    }
    for flag, text in options.items():
        assert any(re.fullmatch(rf"\s+{re.escape(flag)}\s+{re.escape(text)}", line) for line in lines), flag
    # the description, and nothing of the demo: no intro, no path, no table
    assert "a first DWD fit on simulated data" in out.stdout
    assert "DWDPath" not in out.stdout and "training error" not in out.stdout and "MM passes" not in out.stdout


def test_demo_explains_the_gradient_norm(capsys):
    from kerndwd.__main__ import main

    path, tight = main(["--n", "60"])
    text = capsys.readouterr().out
    assert "||grad||" in text and 'stop="kkt"' in text
    assert (tight.kkt <= 1e-8).all() and path.jerr == 0


def test_validation_writes_to_a_temporary_folder_by_default(monkeypatch, tmp_path):
    import validation.__main__ as vmain
    from validation import checks

    for name in ("check_fixtures", "check_port_vs_cone", "check_socp", "check_default_eps", "check_live_r"):
        monkeypatch.setattr(checks, name, lambda *a, **k: [])
    monkeypatch.setattr(checks, "grid_data", lambda: None)
    monkeypatch.setattr(checks, "solve_grid", lambda *a, **k: None)
    written = []
    monkeypatch.setattr(vmain, "write_reports", lambda rows, out, *a: written.append(out) or (out / "r.md", out))
    assert vmain.main(["--quiet"]) == 0
    committed = vmain.Path(vmain.__file__).resolve().parent
    assert written[-1] != committed and "kerndwd-validation-" in str(written[-1])
    vmain.main(["--quiet", "--out", str(tmp_path)])
    assert written[-1] == tmp_path
    vmain.main(["--quiet", "--refresh"])
    assert written[-1] == committed


# run from the folder above a clone named kerndwd, with an editable install:
# `import kerndwd` finds the clone as a namespace package, and the install's
# finder (after Python's own) still finds kerndwd/__main__.py
ABOVE_A_CLONE = """
import importlib.util, os, runpy, sys
root, here = sys.argv[1], sys.argv[2]
del sys.argv[1:]  # python -m kerndwd, without arguments
sys.path[:] = [here] + [p for p in sys.path[1:] if not os.path.isfile(os.path.join(p, "kerndwd", "__init__.py"))]

class EditableInstall:
    @staticmethod
    def find_spec(name, path=None, target=None):
        if name == "kerndwd.__main__":
            return importlib.util.spec_from_file_location(name, os.path.join(root, "kerndwd", "__main__.py"))
        return None

finders = [type(f).__name__ if not isinstance(f, type) else f.__name__ for f in sys.meta_path]
sys.meta_path.insert(finders.index("PathFinder") + 1, EditableInstall)
runpy.run_module("kerndwd", run_name="__main__", alter_sys=True)
"""


def test_module_run_above_a_clone_says_the_folder_is_not_the_package(tmp_path):
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    (tmp_path / "kerndwd").mkdir()  # the clone's folder: no __init__.py at its top
    out = subprocess.run([sys.executable, "-c", ABOVE_A_CLONE, root, str(tmp_path)], capture_output=True,
                         text=True, timeout=120, cwd=tmp_path)
    folder = os.path.join(str(tmp_path), "kerndwd")
    assert out.returncode == 1, out.stderr
    assert out.stdout == ""
    assert out.stderr == (
        f"python -m kerndwd: the 'kerndwd' imported here is the folder {folder}, a namespace package (a folder "
        "without __init__.py, e.g. a clone of the repository), not the kerndwd package: Python looks in the "
        "current directory first. Run it from another directory (e.g. inside the clone), or rename that folder.\n")
