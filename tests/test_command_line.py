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
