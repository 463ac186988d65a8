"""progress=True: what a long fit shows on every face (lambdas done, passes,
gradient norm; BCD sweeps; feature chunks formed; Dask tasks run), and that it
changes no number.  The plain-line form is checked (no tqdm), so the lines can
be read back; with tqdm the same counters go to the bar's postfix."""

import io
import sys

import numpy as np
import pytest

import kerndwd
from kerndwd import rbfdot, vanilladot
from kerndwd.engine.progress import Progress, reporting


@pytest.fixture
def data():
    rng = np.random.default_rng(1)
    X = rng.standard_normal((80, 3))
    y = np.where(X[:, 0] + 0.4 * rng.standard_normal(80) > 0, 1, -1)
    return X, y


@pytest.fixture
def plain(monkeypatch):
    """No tqdm, and every update shown: the lines the user would read on stderr."""
    monkeypatch.setitem(sys.modules, "tqdm.auto", None)
    monkeypatch.setattr("kerndwd.engine.progress.MIN_INTERVAL", 0.0)


LAMS = [1.0, 0.1, 0.01]


def test_fit_shows_lambdas_passes_and_the_gradient_norm(data, plain, capsys):
    X, y = data
    shown = kerndwd.fit(X, y, LAMS, kern=vanilladot(), progress=True)
    quiet = kerndwd.fit(X, y, LAMS, kern=vanilladot())
    np.testing.assert_array_equal(shown.alpha, quiet.alpha)
    lines = capsys.readouterr().err.splitlines()
    assert lines[0].startswith("fit: lambda 0/3; solver mm")
    assert lines[-1].startswith("fit: lambda 3/3")
    last = dict(part.split(" ", 1) for part in lines[-1].split("; ", 1)[1].split(", "))
    assert int(last["passes"]) == quiet.npass.sum()
    assert float(last["lambda"]) == pytest.approx(0.01)
    assert float(last["|grad|"]) == pytest.approx(quiet.kkt[-1], rel=0.1)


def test_nothing_is_shown_without_progress(data, capsys):
    X, y = data
    kerndwd.fit(X, y, LAMS, kern=vanilladot())
    kerndwd.cv(X, y, LAMS, kern=vanilladot(), nfolds=3, random_state=0)
    assert capsys.readouterr().err == ""


def test_work_shorter_than_the_interval_shows_nothing(data, capsys):
    monitor = Progress("fit", use_tqdm=False, min_interval=30.0)
    with reporting(monitor):
        kerndwd.fit(*data, LAMS, kern=vanilladot())
    assert capsys.readouterr().err == "" and monitor.done == len(LAMS)


def test_a_slow_lambda_is_counted_pass_by_pass(data, plain, capsys, monkeypatch):
    monkeypatch.setattr("kerndwd.engine.solvers.template._SLOW_LAMBDA", 0.0)
    X, y = data
    path = kerndwd.fit(X, y, [1e-3], kern=rbfdot(0.5), solver="bcd", random_state=0, progress=True)
    counts = [int(line.split("sweeps ")[1].split(",")[0]) for line in capsys.readouterr().err.splitlines()
              if "sweeps " in line]
    assert path.npass[0] > 32 and 32 in counts and counts[-1] == path.npass[0]  # shown before the lambda ended


def test_bcd_shows_its_sweeps(data, plain, capsys):
    X, y = data
    path = kerndwd.fit(X, y, LAMS, kern=rbfdot(0.5), solver="bcd", random_state=0, progress=True)
    last = capsys.readouterr().err.splitlines()[-1]
    assert "solver mm" in last and f"sweeps {path.npass.sum()}" in last  # BCD: MM by block sweeps


def test_newton_shows_its_iterations(data, plain, capsys):
    X, y = data
    path = kerndwd.fit(X, y, LAMS, kern=rbfdot(0.5), stop="kkt", method="newton", progress=True)
    last = capsys.readouterr().err.splitlines()[-1]
    assert "solver newton" in last and f"passes {path.npass.sum()}" in last


def test_features_show_the_chunks_formed(data, plain, capsys):
    X, y = data
    kerndwd.fit(X, y, LAMS, kern=rbfdot(0.5), approx="nystroem", n_components=20, random_state=0,
                chunk_size=16, progress=True)
    err = capsys.readouterr().err
    assert "feature chunks 1/5" in err and "feature chunks 5/5" in err


def test_cv_and_tune_show_the_folds(data, plain, capsys):
    X, y = data
    kerndwd.tune(X, y, LAMS, qvals=[0.5, 1.0], kern=vanilladot(), nfolds=4, random_state=0, progress=True)
    lines = capsys.readouterr().err.splitlines()
    assert lines[-1].startswith("tune folds: fold 4/4")
    assert any("solver mm" in line for line in lines)  # each fold's path shows through the folds' line


def test_estimators_show_classes_then_folds(data, plain, capsys):
    X, y = data
    three = np.where(X[:, 1] > 0.5, 2, (y > 0).astype(int))
    est = kerndwd.DWDClassifier(lambd=0.1, progress=True).fit(X, three)
    assert capsys.readouterr().err.splitlines()[-1].startswith("DWDClassifier: class 3/3")
    kerndwd.DWDClassifierCV(lambdas=LAMS, cv=3, random_state=0, progress=True).fit(X, y)
    lines = capsys.readouterr().err.splitlines()
    assert any(line.startswith("DWDClassifierCV folds: fold 3/3") for line in lines)
    assert lines[-1].startswith("DWDClassifier: class 1/1")
    np.testing.assert_array_equal(est.predict(X), kerndwd.DWDClassifier(lambd=0.1).fit(X, three).predict(X))


@pytest.mark.parametrize("face", ["fit", "cv", "DWDClassifier"])
def test_progress_must_be_a_flag(data, face):
    X, y = data
    call = {"fit": lambda: kerndwd.fit(X, y, LAMS, kern=vanilladot(), progress=1),
            "cv": lambda: kerndwd.cv(X, y, LAMS, kern=vanilladot(), nfolds=3, progress="on"),
            "DWDClassifier": lambda: kerndwd.DWDClassifier(progress=None).fit(X, y)}[face]
    with pytest.raises(TypeError, match="progress must be True or False"):
        call()


def test_the_bar_is_drawn_with_tqdm(data):
    tqdm = pytest.importorskip("tqdm")
    X, y = data
    out = io.StringIO()
    with reporting(Progress("fit", stream=out, min_interval=0.0)) as monitor:
        kerndwd.fit(X, y, LAMS, kern=vanilladot())
    assert monitor._bar is not None and isinstance(monitor._bar, tqdm.tqdm)
    text = out.getvalue()
    assert "3/3" in text and "solver=mm" not in text and "solver mm" in text


def test_asking_for_tqdm_without_it_says_how_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "tqdm.auto", None)
    with pytest.raises(ImportError, match=r"^progress=True draws a bar with tqdm: pip install tqdm "
                                          r"\(or pip install 'kerndwd\[progress\]'\)$"):
        Progress("fit", use_tqdm=True)


def test_dask_rows_show_the_tasks(data, plain, capsys):
    da = pytest.importorskip("dask.array")
    import dask

    X, y = data
    with dask.config.set(scheduler="synchronous"):
        path = kerndwd.fit(da.from_array(X, chunks=20), da.from_array(y, chunks=20), LAMS, kern=vanilladot(),
                           progress=True)
    err = capsys.readouterr().err.splitlines()
    tasks = [int(line.split("tasks ")[1].split(",")[0]) for line in err if "tasks " in line]
    assert tasks and tasks[-1] >= 4 * path.npass.sum()  # at least one task a chunk each pass
    assert tasks == sorted(tasks)


def test_a_slow_lambda_s_moves_reach_the_monitor_in_batches_and_every_one_reaches_the_callback():
    """The template's counting of moves as passes: one report of ``every`` passes
    per ``every`` moves (stationary moves of Newton are not passes), and the
    caller's callback sees each move as it was made."""
    from types import SimpleNamespace

    from kerndwd.engine.solvers.template import _counting

    reported, seen = [], []
    monitor = SimpleNamespace(passes=reported.append)
    count = _counting(monitor, seen.append, every=3)
    steps = [SimpleNamespace(kind=kind) for kind in ["mm", "stationary", "mm", "mm", "mm", "stationary", "mm",
                                                     "mm", "mm"]]
    batches = []
    for step in steps:
        count(step)
        batches.append(len(reported))
    assert batches == [0, 0, 0, 1, 1, 1, 1, 2, 2]  # the third pass, not a stationary move, completes a batch
    assert reported == [3, 3] and seen == steps and all(a is b for a, b in zip(seen, steps))
    quiet = _counting(monitor, None, every=2)  # without a callback, only the count
    quiet(SimpleNamespace(kind="newton"))
    quiet(SimpleNamespace(kind="newton"))
    assert reported == [3, 3, 2]


class _Clock:
    """``time.monotonic`` of the progress module, moved by hand."""

    def __init__(self, monkeypatch):
        self.now = 100.0
        monkeypatch.setattr("kerndwd.engine.progress.time.monotonic", lambda: self.now)


def test_the_lines_follow_the_clock_the_interval_and_the_counters(monkeypatch):
    """On a hand-moved clock: nothing within the first interval, then at most a
    line an interval, except the path's start, the last unit and the close,
    which always show; passes running and done, lambdas and gradient norms
    formatted to 3 and 2 digits."""
    monkeypatch.setitem(sys.modules, "tqdm.auto", None)
    clock = _Clock(monkeypatch)
    out = io.StringIO()
    p = Progress("fit", stream=out)
    assert p.min_interval == 0.25 and p.total is None and p.unit == "lambda"
    p.path_started(2, "mm")
    assert out.getvalue() == ""  # within the first interval: nothing, even forced
    clock.now += 0.25
    p.path_started(2, "mm")  # forced, once the work has lasted the interval
    assert out.getvalue() == "fit: lambda 0/2; solver mm\n" and p.total == 2
    p.passes(5)
    assert out.getvalue().count("\n") == 1  # within an interval of the last line
    clock.now += 0.25
    p.passes(3)
    assert out.getvalue().splitlines()[-1] == "fit: lambda 0/2; solver mm, passes 8"
    p.passes_done(9)
    p.passes(2)  # the next run's moves count on top of the passes done
    clock.now += 0.3
    p.lambda_done(0, 0.123456, 9, 1.23456e-3)
    assert out.getvalue().splitlines()[-1] == "fit: lambda 1/2; solver mm, passes 11, lambda 0.123, |grad| 0.0012"
    lines = out.getvalue().count("\n")
    clock.now += 0.1
    p.path_started(2, "newton")  # a path's start shows at once, within the interval too
    assert out.getvalue().splitlines()[-1].startswith("fit: lambda 1/2; solver newton,")
    lines = out.getvalue().count("\n")
    p.lambda_done(1, 1e-5, 4, 5e-7)  # the last unit shows at once
    assert out.getvalue().count("\n") == lines + 1
    assert out.getvalue().splitlines()[-1] == "fit: lambda 2/2; solver newton, passes 11, lambda 1e-05, |grad| 5e-07"
    p.close()
    assert out.getvalue().count("\n") == lines + 2


def test_other_units_other_counters_and_a_pass_name(monkeypatch):
    monkeypatch.setitem(sys.modules, "tqdm.auto", None)
    clock = _Clock(monkeypatch)
    out = io.StringIO()
    p = Progress("cv folds", total=3, unit="fold", stream=out, min_interval=1.0)
    clock.now += 1.0
    p.path_started(10, "bcd", pass_name="sweeps")  # a fold's path does not set the folds' total
    assert p.total == 3 and out.getvalue() == "cv folds: fold 0/3; solver bcd\n"
    clock.now += 1.0
    p.lambda_done(0, 0.5, 7, 0.1)  # a lambda of a fold is no fold
    assert p.done == 0 and out.getvalue().splitlines()[-1] == "cv folds: fold 0/3; solver bcd, lambda 0.5, |grad| 0.1"
    p.chunks_formed(1, 4)
    assert out.getvalue().count("\n") == 2  # within the interval
    p.chunks_formed(4, 4)  # all formed: shown at once
    assert out.getvalue().splitlines()[-1].endswith("feature chunks 4/4")
    clock.now += 1.0
    p.tasks_run(6)
    clock.now += 1.0
    p.tasks_run(4)
    assert out.getvalue().splitlines()[-1].endswith("tasks 10")
    p.passes(2)
    assert p.counters["sweeps"] == 2 and "passes" not in p.counters
    p.advance(2)
    assert p.done == 2
    p.advance()
    assert out.getvalue().splitlines()[-1].startswith("cv folds: fold 3/3;")
    bare = Progress("fit", stream=out, min_interval=0.0)
    bare.close()
    assert out.getvalue().splitlines()[-1] == "fit: lambda 0"  # no total, no counters


class _FakeBar:
    made = []

    def __init__(self, **kwargs):
        self.kwargs, self.postfix, self.updates, self.resets, self.closed = kwargs, [], [], [], False
        _FakeBar.made.append(self)

    def set_postfix_str(self, text, refresh):
        self.postfix.append((text, refresh))

    def update(self, units):
        self.updates.append(units)

    def reset(self, total):
        self.resets.append(total)

    def close(self):
        self.closed = True


def test_the_bar_is_made_once_the_work_lasts_and_carries_the_counters(monkeypatch):
    import types

    monkeypatch.setitem(sys.modules, "tqdm.auto", types.SimpleNamespace(tqdm=_FakeBar))
    _FakeBar.made = []
    clock = _Clock(monkeypatch)
    out = io.StringIO()
    with reporting(Progress("fit", stream=out)) as p:
        p.lambda_done(0, 1.0, 3, 0.5)  # within the first interval: no bar yet
        assert _FakeBar.made == [] and p.done == 1
        clock.now += 0.25
        p.path_started(4, "newton", pass_name="iterations")  # a path's total reaches the bar made later
        (bar,) = _FakeBar.made
        assert bar.kwargs == {"total": 4, "desc": "fit", "unit": "lambda", "file": out, "leave": True,
                              "initial": 1}
        assert bar.postfix[-1] == ("lambda 1, |grad| 0.5, solver newton", True)  # in the order first set
        p.path_started(6, "newton")  # a later path of the same call keeps the total
        assert bar.resets == [] and p.total == 4
        p.advance(2)
        assert bar.updates == [2]
    assert bar.closed and out.getvalue() == ""  # the bar draws; no plain line is written
    assert len(_FakeBar.made) == 1


def test_a_bar_drawn_before_the_path_starts_takes_its_total(monkeypatch):
    import types

    monkeypatch.setitem(sys.modules, "tqdm.auto", types.SimpleNamespace(tqdm=_FakeBar))
    _FakeBar.made = []
    clock = _Clock(monkeypatch)
    p = Progress("fit", stream=io.StringIO(), use_tqdm=True)
    clock.now += 1.0
    p.tasks_run(3)
    (bar,) = _FakeBar.made
    assert bar.kwargs["total"] is None
    p.path_started(5, "mm")
    assert bar.resets == [5] and p.total == 5


def test_reporting_makes_the_progress_current_and_closes_it():
    from kerndwd.engine.progress import current

    closed = []
    p = Progress("fit", stream=io.StringIO(), use_tqdm=False)
    p.close = lambda: closed.append(True)
    assert current() is None
    with reporting(None) as nothing:
        assert nothing is None and current() is None
    with pytest.raises(RuntimeError):
        with reporting(p) as got:
            assert got is p and current() is p
            raise RuntimeError("the work failed")
    assert current() is None and closed == [True]


def test_passes_are_named_passes_until_a_path_names_them():
    p = Progress("fit", stream=io.StringIO(), use_tqdm=False)
    p.passes(3)
    assert p.counters == {"passes": 3}
    p.path_started(1, "bcd", pass_name="sweeps")
    p.passes_done(5)
    assert p.counters["sweeps"] == 5 and p.counters["passes"] == 3
