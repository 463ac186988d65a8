"""The convergence warning's classes: a scikit-learn ConvergenceWarning where
scikit-learn imports, a UserWarning without it (kerndwd/_warnings.py)."""

import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

import kerndwd

ROOT = Path(__file__).resolve().parents[1]  # where `import kerndwd` finds this checkout


def _short_budget_fit():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((40, 2))
    y = np.where(X[:, 0] > 0, 1, -1)
    return kerndwd.fit(X, y, [1.0, 0.1], kern=kerndwd.rbfdot(sigma=1), maxit=2)


def test_the_warning_is_scikit_learns_convergence_warning():
    exceptions = pytest.importorskip("sklearn.exceptions")
    assert issubclass(kerndwd.DWDConvergenceWarning, exceptions.ConvergenceWarning)
    assert issubclass(kerndwd.DWDConvergenceWarning, UserWarning)
    assert kerndwd.DWDConvergenceWarning is kerndwd._warnings.DWDConvergenceWarning


def test_scikit_learns_filter_silences_a_path_that_ran_out_of_maxit():
    exceptions = pytest.importorskip("sklearn.exceptions")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        warnings.filterwarnings("ignore", category=exceptions.ConvergenceWarning)
        path = _short_budget_fit()
    assert path.jerr < 0
    assert [w for w in caught if issubclass(w.category, kerndwd.DWDConvergenceWarning)] == []


def test_the_warning_is_issued_as_its_class():
    with pytest.warns(kerndwd.DWDConvergenceWarning, match=r"^maxit=2 iterations \(a budget for the whole path\)"):
        _short_budget_fit()


WITHOUT_SKLEARN = """
import sys
sys.modules["sklearn"] = None  # import sklearn raises ImportError
import warnings
import numpy as np
import kerndwd
cls = kerndwd.DWDConvergenceWarning
assert issubclass(cls, UserWarning), cls.__mro__
assert [c.__name__ for c in cls.__mro__[1:3]] == ["UserWarning", "Warning"], cls.__mro__
rng = np.random.default_rng(0)
X = rng.standard_normal((40, 2)); y = np.where(X[:, 0] > 0, 1, -1)
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    kerndwd.fit(X, y, [1.0, 0.1], kern=kerndwd.rbfdot(sigma=1), maxit=2)
assert any(w.category is cls for w in caught), [w.category for w in caught]
assert "sklearn.exceptions" not in sys.modules
print("ok")
"""


def test_without_scikit_learn_it_is_a_user_warning():
    out = subprocess.run([sys.executable, "-c", WITHOUT_SKLEARN], capture_output=True, text=True, timeout=120,
                         cwd=ROOT)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "ok"


def test_import_kerndwd_does_not_import_scikit_learn():
    code = "import sys, kerndwd; print('sklearn' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                         cwd=ROOT)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "False"
