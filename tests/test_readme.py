"""Every ```python block of README.md runs as printed (extracted as
.ci/readme_example.py extracts the first one), and prints what it promises: a
comment line ``# text`` right after a ``print(...)`` line is a line of the output."""

import contextlib
import importlib.util
import io
import os
import warnings
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _extractor():
    spec = importlib.util.spec_from_file_location("readme_example", ROOT / ".ci" / "readme_example.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


BLOCKS = _extractor().python_blocks((ROOT / "README.md").read_text(encoding="utf-8"))


def promised_lines(code):
    """The ``# text`` comment lines that follow a ``print(...)`` line, without ``# ``."""
    lines = [line.strip() for line in code.splitlines()]
    return [line[2:] for before, line in zip(lines, lines[1:]) if before.startswith("print(") and
            line.startswith("# ")]


def _needs(code):
    """The optional packages a block imports (skipped where one is missing)."""
    return [name for name, word in (("sklearn", "sklearn"), ("matplotlib", "plot_cv"),
                                    ("dask.distributed", "dask")) if word in code]


def test_the_readme_has_its_blocks():
    assert len(BLOCKS) == 5
    assert promised_lines(BLOCKS[0]) == ["lambda = 0.000428, test error = 0.053"]
    assert all(promised_lines(code) for code in BLOCKS)  # every block promises what it prints


@pytest.mark.parametrize("code", [pytest.param(code, id=f"block{i + 1}",
                                               marks=[pytest.mark.processes] if "LocalCluster" in code else [])
                                  for i, code in enumerate(BLOCKS)])
def test_a_readme_block_runs_as_printed(code, tmp_path, monkeypatch):
    for name in _needs(code):
        pytest.importorskip(name)
    monkeypatch.chdir(tmp_path)  # what a block writes (the first one's figure) lands here
    monkeypatch.setenv("MPLBACKEND", "Agg")
    out = io.StringIO()
    with contextlib.redirect_stdout(out), warnings.catch_warnings():
        # another cluster on this machine may hold Dask's dashboard port: it moves to another
        warnings.filterwarnings("ignore", "Port 8787 is already in use", UserWarning)
        # __main__: the Dask block guards its cluster with `if __name__ == "__main__":`
        exec(compile(code, "README.md", "exec"), {"__name__": "__main__"})
    printed = out.getvalue().splitlines()
    for line in promised_lines(code):
        assert line in printed, (line, printed)
    if "savefig" in code:
        assert os.path.getsize(tmp_path / "kerndwd-cv.png") > 0
