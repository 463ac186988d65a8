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
    with pytest.raises(ImportError, match="pip install tqdm"):
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
