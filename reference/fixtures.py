"""Reading the JSON fixtures recorded from the R package kerndwd 2.0.3.

See ``fixtures/kerndwd-r-2.0.3/README.md`` for what each field means.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

FIXTURE_DIR = Path(__file__).resolve().parent / "fixtures" / "kerndwd-r-2.0.3"

_MATRIX_FIELDS = ("x", "newx", "link", "link_direct", "class", "K", "K_cross", "x2", "loss", "predmat")


def fixture_names(kind=None):
    """Case names (file stems) in manifest order, optionally of one ``kind``."""
    manifest = json.loads((FIXTURE_DIR / "MANIFEST.json").read_text())
    return [Path(f["file"]).stem for f in manifest["files"] if kind is None or f["kind"] == kind]


def load_fixture(name):
    """One fixture as a dict; array fields as float ndarrays of the stored shape."""
    d = json.loads((FIXTURE_DIR / f"{name}.json").read_text())
    for key in _MATRIX_FIELDS:
        if key in d and d[key] is not None:
            d[key] = np.asarray(d[key], dtype=float)
    if "alpha" in d:
        d["alpha"] = np.asarray(d["alpha"], dtype=float).reshape(d["alpha_shape"])
        nrow = len(d["newx"])
        for key in ("link", "link_direct", "class"):
            d[key] = np.asarray(d[key], dtype=float).reshape(nrow, d["alpha_shape"][1])
    for key in ("y", "wt", "lambda", "fit_lambda", "lambda_input", "foldid", "u", "qvals", "cvm", "cvsd",
                "cvupper", "cvlower"):
        if key in d and d[key] is not None:
            d[key] = np.atleast_1d(np.asarray(d[key], dtype=float))
    for key in ("qval", "eps", "maxit", "nfolds"):
        if key in d and d[key] is not None:
            d[key] = float(d[key])
    if "cvres" in d:
        for res in d["cvres"]:
            for key, val in res.items():
                if isinstance(val, list):
                    res[key] = np.asarray(val, dtype=float)
    return d
