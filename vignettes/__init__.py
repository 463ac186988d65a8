"""Scripts that reproduce the paper's Tables 1-2 and Figures 1 and 3.

Run one with ``python -m vignettes.table1`` (``table2``, ``figure1``,
``figure3``); each writes Markdown and PNG files into ``vignettes/output/``
and prints their paths.  See ``vignettes/README.md``.
"""

from __future__ import annotations

import os
import platform
import sys
from pathlib import Path

#: Where the scripts write by default.
OUTPUT_DIR = Path(__file__).resolve().parent / "output"


def machine_description():
    """A one-line description of the machine (CPU model, cores, Python, numpy)."""
    import numpy as np

    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as fh:
            for line in fh:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return (f"{cpu}, {os.cpu_count()} cores, Python {platform.python_version()}, "
            f"numpy {np.__version__}, {platform.system()}")


def command_line(module, argv=None):
    """The command that produced an output, as a reader would type it
    (``argv``: the arguments given to the script's ``main``, else ``sys.argv``)."""
    args = list(sys.argv[1:] if argv is None else argv)
    return " ".join(["python -m", module] + args)


def output_dir(path=None):
    """``path`` (created if missing) or the default output folder."""
    out = Path(path) if path is not None else OUTPUT_DIR
    out.mkdir(parents=True, exist_ok=True)
    return out
