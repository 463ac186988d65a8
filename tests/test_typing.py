"""The public API's type hints (the package ships ``py.typed``): mypy accepts
a correct use of ``fit``, ``predict``, ``cv`` and ``DWDClassifier``, and
reports an argument of the wrong type.

mypy's API checks small programs against this checkout's ``kerndwd`` with
the project's configuration (``[tool.mypy]`` in pyproject.toml); skipped
when mypy is not installed.  ``python3 -m mypy`` checks the public modules
themselves.
"""

from pathlib import Path

import pytest

mypy_api = pytest.importorskip("mypy.api")

ROOT = Path(__file__).resolve().parents[1]

GOOD = """
import numpy as np
import kerndwd
from kerndwd import DWDClassifier

X = np.random.default_rng(0).standard_normal((30, 2))
y = np.where(X[:, 0] > 0, "a", "b")
path: kerndwd.DWDPath = kerndwd.fit(X, y, [1.0, 0.1], kern=kerndwd.rbfdot(sigma=0.5), qval=2, stop="kkt")
labels = kerndwd.predict(path, X, type="class", lambdas=[0.5])
link = path.decision_function(X[:3])
res: kerndwd.CVResult = kerndwd.cv(X, y, [1.0, 0.1], kern=kerndwd.vanilladot(), nfolds=3, random_state=1)
best: float = res.lambda_min
prob = kerndwd.predict(path, X, type="prob", lambdas=[best], calibration=res)
clf = DWDClassifier(lambd=0.1, kernel="rbf", gamma="scale", class_weight="balanced").fit(X, y)
decision = clf.decision_function(X) + 1.0
predicted = clf.predict(X)
"""

#: each wrong line, and what mypy must say about it
BAD = {
    'kerndwd.fit(X, y, [0.1], qval="one")': 'Argument "qval" to "fit" has incompatible type "str"',
    'kerndwd.predict(path, X, type="klass")': 'Argument "type" to "predict" has incompatible type',
    'DWDClassifier(lambd=[0.1])': 'Argument "lambd" to "DWDClassifier" has incompatible type',
}


def _mypy(program, tmp_path, cache_dir, monkeypatch):
    monkeypatch.chdir(ROOT)  # kerndwd from this checkout
    snippet = tmp_path / "snippet.py"
    snippet.write_text(program)
    stdout, stderr, status = mypy_api.run(["--config-file", str(ROOT / "pyproject.toml"), "--cache-dir",
                                           str(cache_dir), "--no-error-summary", str(snippet)])
    return stdout + stderr, status


@pytest.fixture(scope="module")
def cache_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("mypy_cache")


def test_correct_use_of_the_public_api_type_checks(tmp_path, cache_dir, monkeypatch):
    out, status = _mypy(GOOD, tmp_path, cache_dir, monkeypatch)
    assert status == 0, out


def test_an_argument_of_the_wrong_type_is_reported(tmp_path, cache_dir, monkeypatch):
    program = GOOD + "\n".join(BAD) + "\n"
    out, status = _mypy(program, tmp_path, cache_dir, monkeypatch)
    assert status == 1, out
    first = GOOD.count("\n") + 1  # the line of the first wrong call
    for k, (line, message) in enumerate(BAD.items()):
        reported = [msg for msg in out.splitlines() if f"snippet.py:{first + k}:" in msg]
        assert any(message in msg for msg in reported), f"{line!r}: {reported or out}"
    assert out.count(": error:") == len(BAD), out
