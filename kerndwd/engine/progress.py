"""Progress of long work: what a fit reports while it runs, when asked to.

A face asked for progress (``progress=True``) opens a :class:`Progress` for
the duration of its work (:func:`reporting`); the parts of the engine that
take time report to the current one, if any (:func:`current`):

* the path-solver template: each lambda finished (with its passes and
  gradient norm) and, at most every :data:`MIN_INTERVAL` seconds, the passes
  of the lambda in progress (MM passes, Newton iterations, BCD sweeps);
* feature designs: the row chunks of the feature matrix formed;
* rows on a Dask cluster: the tasks each pass runs;
* cross-validation: the folds done.

With ``tqdm`` installed it draws a bar (``tqdm.auto``: a widget in a
notebook); without it, it writes a line to standard error at most every
:data:`MIN_INTERVAL` seconds.  Work that ends within :data:`MIN_INTERVAL`
seconds shows nothing.  Without a :class:`Progress` nothing is
reported and nothing is paid: the template adds no callback.
"""

from __future__ import annotations

import contextlib
import contextvars
import sys
import time

__all__ = ["Progress", "reporting", "current", "MIN_INTERVAL"]

#: Seconds between two updates of what is shown (each update costs a few
#: microseconds; a pass of a small fit costs about as much).
MIN_INTERVAL = 0.25

_CURRENT = contextvars.ContextVar("kerndwd_progress", default=None)


def current():
    """The :class:`Progress` work reports to now, or None."""
    return _CURRENT.get()


@contextlib.contextmanager
def reporting(progress):
    """Make ``progress`` (a :class:`Progress`, or None for nothing) the current one
    while the block runs, and close it afterwards."""
    if progress is None:
        yield None
        return
    token = _CURRENT.set(progress)
    try:
        yield progress
    finally:
        _CURRENT.reset(token)
        progress.close()


class _Number:
    """A number formatted when shown."""
    __slots__ = ("value", "spec")

    def __init__(self, value, spec):
        self.value, self.spec = value, spec

    def __str__(self):
        return format(self.value, self.spec)


class Progress:
    """What one long call reports: a line of counters, updated as the work goes.

    Parameters
    ----------
    desc : str
        What is running (``"fit"``, ``"cv folds"``, ...).
    total : int, optional
        The number of units (lambdas, folds) of the bar.
    unit : str, default "lambda"
    stream : file, optional
        Where the plain lines go without tqdm (default standard error).
    use_tqdm : bool, optional
        Draw a tqdm bar (True: required; None: when tqdm is installed;
        False: plain lines).
    min_interval : float, optional
        Seconds between two updates (default :data:`MIN_INTERVAL`).

    Examples
    --------
    >>> import io, numpy as np, kerndwd
    >>> from kerndwd.engine.progress import Progress, reporting
    >>> rng = np.random.default_rng(0)
    >>> X = rng.standard_normal((50, 2)); y = np.where(X[:, 0] > 0, 1, -1)
    >>> out = io.StringIO()
    >>> with reporting(Progress("fit", use_tqdm=False, stream=out, min_interval=0.0)):
    ...     path = kerndwd.fit(X, y, [1.0, 0.1], kern=kerndwd.vanilladot())
    >>> "lambda 2/2" in out.getvalue()
    True
    """

    def __init__(self, desc, total=None, unit="lambda", stream=None, use_tqdm=None, min_interval=None):
        self.desc, self.unit = desc, unit
        self.stream = sys.stderr if stream is None else stream
        self.min_interval = MIN_INTERVAL if min_interval is None else min_interval
        self.counters = {}
        self._pass_name = "passes"
        self._passes = self._live = 0
        self.done = 0
        self.total = total
        self._start = self._last = time.monotonic()
        self._bar = self._tqdm = None
        if use_tqdm is None or use_tqdm:
            try:
                from tqdm.auto import tqdm
            except ImportError:
                if use_tqdm:
                    raise ImportError("progress=True draws a bar with tqdm: pip install tqdm "
                                      "(or pip install 'kerndwd[progress]')") from None
            else:
                self._tqdm = tqdm  # the bar is drawn once the work has lasted min_interval

    # --- what the engine reports
    def path_started(self, nlambda, solver, pass_name="passes"):
        """A path of ``nlambda`` lambdas starts with the path solver ``solver``,
        whose passes are counted as ``pass_name`` (BCD's are ``"sweeps"``)."""
        if self.total is None and self.unit == "lambda":
            self.total = nlambda
            if self._bar is not None:
                self._bar.reset(total=nlambda)
        self.counters["solver"] = solver
        self._pass_name = pass_name
        self._show(force=True)

    def passes(self, count):
        """``count`` more passes of the running iteration (MM passes, Newton
        iterations, BCD sweeps) were made: shown at once, counted for good by
        :meth:`passes_done`."""
        self._live += count
        self.counters[self._pass_name] = self._passes + self._live
        self._show()

    def passes_done(self, count):
        """An iteration returned after ``count`` passes (which its moves may
        have shown in part)."""
        self._passes += count
        self._live = 0
        self.counters[self._pass_name] = self._passes

    def lambda_done(self, l, lam, passes, kkt):
        """The ``l``-th lambda (0-based) finished after ``passes`` passes at gradient norm ``kkt``."""
        self.counters["lambda"] = _Number(lam, ".3g")  # formatted only when shown
        self.counters["|grad|"] = _Number(kkt, ".2g")
        if self.unit == "lambda":
            self.advance()
        else:
            self._show()

    def chunks_formed(self, done, total):
        """``done`` of ``total`` row chunks of a feature matrix are formed."""
        self.counters["feature chunks"] = f"{done}/{total}"
        self._show(force=done == total)

    def tasks_run(self, count):
        """A computation of ``count`` tasks ran on the Dask cluster."""
        self.counters["tasks"] = self.counters.get("tasks", 0) + count
        self._show()

    def advance(self, units=1):
        """``units`` more of the bar's units (lambdas, folds) are done."""
        self.done += units
        if self._bar is not None:
            self._bar.update(units)  # tqdm redraws at most every mininterval itself
        self._show(force=self.done == self.total)

    # --- showing it
    def _show(self, force=False):
        now = time.monotonic()
        if now - self._start < self.min_interval:
            return  # work shorter than one interval shows nothing (and costs no bar)
        if not force and now - self._last < self.min_interval:
            return
        self._last = now
        text = ", ".join(f"{k} {v}" for k, v in self.counters.items())
        if self._tqdm is not None:
            if self._bar is None:
                self._bar = self._tqdm(total=self.total, desc=self.desc, unit=self.unit, file=self.stream,
                                       leave=True, initial=self.done)
            self._bar.set_postfix_str(text, refresh=True)
            return
        of = "" if self.total is None else f"/{self.total}"
        self.stream.write(f"{self.desc}: {self.unit} {self.done}{of}" + (f"; {text}" if text else "") + "\n")
        self.stream.flush()

    def close(self):
        """Show the last counters and close the bar."""
        self._show(force=True)
        if self._bar is not None:
            self._bar.close()
