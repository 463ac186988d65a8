"""What the benchmark scripts share: data, timing, the machine line, the output file.

Nothing here asserts a time.  Every script prints Markdown as it goes and
writes the same text to ``benchmarks/output/<name>.md``, headed by the
machine, the software, the load on the machine and the command.
"""

from __future__ import annotations

import os
import platform
import shlex
import sys
import time
from pathlib import Path

import numpy as np

# the timing cases' data generators are bench_engine's: it is loaded by path against other
# checkouts, so it holds them itself
from .bench_engine import circle, table1  # noqa: F401 (re-exported for the scripts)

ROOT = Path(__file__).resolve().parent.parent
OUTPUT = Path(__file__).resolve().parent / "output"

#: The lambdas of Table 1 (Wang & Zou 2018).
TABLE1_LAMBDAS = (100.0, 10.0, 1.0, 0.1, 0.01)

#: The second recording of the R package kerndwd 2.0.3 (R 4.2.2, reference
#: BLAS/LAPACK, wall-clock minimum over repeats, passes summed over the path),
#: made on the project's standard two-core machine: case -> (seconds, passes).
R_RECORDED = {
    "linear-path5": (0.0050, 167),
    "linear-1lam-0.01": (0.0040, 132),
    "linear-path5-weighted": (0.0050, 194),
    "rbf200-path100": (0.055, 759),
    "rbf1000-path10": (1.62, 323),
    "rbf1000-path10-weighted": (3.44, 288),
    "rbf2000-path10": (14.45, 184),
}
R_RECORDED_SOURCE = ("R kerndwd 2.0.3, second recording on the project's standard two-core machine "
                     "(R 4.2.2 with reference BLAS/LAPACK; R's timer resolves 1 ms)")


# --------------------------------------------------------------------------
# data (the generators of the R recording; other draws, as R's generator is not reproduced here)
# --------------------------------------------------------------------------
def class_weights(y):
    """The recording's weights: 2 on class +1, 0.5 on class -1."""
    return np.where(np.asarray(y) > 0, 2.0, 0.5)


def svm_cost(lam, n):
    """The SVM cost ``C`` with the same penalty weight as ``lambda``.

    Dividing ``C sum hinge + ||f||^2 / 2`` by ``C n`` gives
    ``(1/n) sum hinge + ||f||^2 / (2 C n)``, so ``C = 1 / (2 n lambda)``.

    Examples
    --------
    >>> svm_cost(0.01, 500)
    0.1
    """
    return 1.0 / (2.0 * n * lam)


def r_package_status(name):
    """``(True, version)`` when the R package ``name`` answers through rpy2, else
    ``(False, why)`` (the bridge's message names the missing piece)."""
    try:
        from reference import rbridge

        rbridge.require(name)
        return True, rbridge.r_package_version(name)
    except Exception as exc:  # RBridgeUnavailable, or rpy2 failing to start R
        return False, str(exc)


# --------------------------------------------------------------------------
# timing
# --------------------------------------------------------------------------
def blas_description():
    """The BLAS numpy links (name and version, from numpy's build configuration)."""
    try:
        blas = np.__config__.CONFIG["Build Dependencies"]["blas"]
        return f"{blas.get('name', '?')} {blas.get('version', '')}".strip()
    except (AttributeError, KeyError, TypeError):
        return "unknown BLAS"


def cpu_model():
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def machine_lines():
    """Markdown lines naming the machine, the software and the load."""
    import scipy

    load = os.getloadavg() if hasattr(os, "getloadavg") else None
    threads = os.environ.get("OPENBLAS_NUM_THREADS") or os.environ.get("OMP_NUM_THREADS") or "default"
    lines = [f"Machine: {cpu_model()}, {os.cpu_count()} cores, {platform.system()} {platform.release()}; "
             f"Python {platform.python_version()}, numpy {np.__version__}, scipy {scipy.__version__}, "
             f"{blas_description()} (BLAS threads: {threads})."]
    if load is not None:
        lines.append(f"Load average at the start (1, 5, 15 min): {load[0]:.2f}, {load[1]:.2f}, {load[2]:.2f} "
                     f"on {os.cpu_count()} cores; timings taken under load are slower than on an idle machine.")
    return lines


class Report:
    """Markdown lines printed as they are added and written to ``benchmarks/output/<name>.md``.

    Parameters
    ----------
    name : str
        The script's module name (``python -m benchmarks.<name>``) and file stem.
    title : str
        The first heading; the command, the machine and the load follow.
    argv : list of str, optional
        The command-line arguments to print (default ``sys.argv[1:]``).
    """

    def __init__(self, name, title, argv=None):
        self.name = name
        argv = sys.argv[1:] if argv is None else argv
        self.command = "python -m benchmarks." + " ".join([name] + [shlex.quote(a) for a in argv])
        self.lines = []
        self.start = time.perf_counter()
        self.add(f"# {title}", "", f"Command: `{self.command}`  ", *[m + "  " for m in machine_lines()], "")

    def add(self, *lines):
        for line in lines:
            print(line, flush=True)
            self.lines.append(line)

    def table(self, header, rows):
        """A Markdown table from a header and rows of cells (already formatted)."""
        self.add("| " + " | ".join(header) + " |", "|" + "---|" * len(header))
        for row in rows:
            self.add("| " + " | ".join(str(c) for c in row) + " |")

    def write(self, out=None):
        if hasattr(os, "getloadavg"):
            load = os.getloadavg()
            self.add("", f"Load average at the end (1, 5, 15 min): {load[0]:.2f}, {load[1]:.2f}, {load[2]:.2f}.")
        self.add(f"Run time: {time.perf_counter() - self.start:.0f} s.")
        path = Path(out) if out else OUTPUT / f"{self.name}.md"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("\n".join(self.lines) + "\n")
        print(f"(written to {path})", flush=True)
        return path


def seconds(value):
    """A time in seconds, to three significant figures (or a dash)."""
    if value is None or not np.isfinite(value):
        return "—"
    return f"{value:.3g}"


def ratio(numerator, denominator):
    if numerator is None or denominator is None or not (np.isfinite(numerator) and np.isfinite(denominator)):
        return "—"
    return f"{numerator / denominator:.1f}x"


# --------------------------------------------------------------------------
# the fit cases shared by the scripts (public API only, so any checkout can be timed)
# --------------------------------------------------------------------------
class FitCase:
    """One ``kerndwd.fit`` call on generated data.

    Parameters
    ----------
    name, description : str
    data : callable
        Returns ``(X, y)``, the same arrays on every call (a fixed seed).
    lambdas : sequence of float
    sigma : float, optional
        The rbf kernel's sigma; None for the linear kernel.
    weighted : bool
        Fit with :func:`class_weights`.
    **fit_options
        More arguments of ``fit`` (``stop``, ``eps``).

    Examples
    --------
    >>> import kerndwd
    >>> path = FIT_CASES["linear-1lam-100"].call(kerndwd)()
    >>> path.npass.tolist()
    [2]
    """

    def __init__(self, name, description, data, lambdas, sigma=None, weighted=False, **fit_options):
        self.name, self.description = name, description
        self._data, self.lambdas, self.sigma, self.weighted = data, np.asarray(lambdas, float), sigma, weighted
        self.fit_options = fit_options

    def data(self):
        X, y = self._data()
        return X, y, class_weights(y) if self.weighted else None, self.lambdas

    def kernel(self, kd):
        return kd.vanilladot() if self.sigma is None else kd.rbfdot(sigma=self.sigma)

    def call(self, kd):
        X, y, wt, lambdas = self.data()
        kern = self.kernel(kd)
        return lambda: kd.fit(X, y, lambdas, kern=kern, wt=wt, **self.fit_options)


def _fit_cases():
    cases = {}

    def add(case):
        cases[case.name] = case

    five = TABLE1_LAMBDAS
    for lam in (0.01, 1.0, 100.0):
        add(FitCase(f"linear-1lam-{lam:g}", f"linear n=500 p=50 (Table 1 example 1), lambda={lam:g} alone",
                    table1, [lam]))
    add(FitCase("linear-path5", "linear n=500 p=50 (Table 1 example 1), 5-lambda path 100..0.01", table1, five))
    add(FitCase("linear-path5-weighted", "same, weighted (2 on class +1, 0.5 on class -1)", table1, five,
                weighted=True))
    add(FitCase("linear-path5-kkt", "same data, 5-lambda path, stop='kkt' eps=1e-8", table1, five, stop="kkt",
                eps=1e-8))
    grids = {200: (10.0 ** np.linspace(3, -3, 100), 202, "100 lambdas 1e3..1e-3"),
             1000: (10.0 ** np.linspace(1, -3, 10), 1300, "10 lambdas 10..1e-3"),
             2000: (10.0 ** np.linspace(1, -3, 10), 2300, "10 lambdas 10..1e-3")}
    for n, (lambdas, seed, what) in grids.items():
        nlam = lambdas.size

        def data(n=n, seed=seed):
            return circle(n, seed)

        add(FitCase(f"rbf{n}-path{nlam}", f"rbf sigma=1, circle n={n}, {what}", data, lambdas, sigma=1.0))
        add(FitCase(f"rbf{n}-path{nlam}-weighted", "same, weighted (2 on class +1, 0.5 on class -1)", data,
                    lambdas, sigma=1.0, weighted=True))
    return cases


FIT_CASES = _fit_cases()
