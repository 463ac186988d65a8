"""The vignettes in their small modes: the tables they write and the numbers in them."""

import json
import os
from pathlib import Path

import numpy as np
import pytest

import kerndwd

#: A local copy of the UCI CSV files, named by the same variable the loaders read
#: (never committed to the repository); the tests that need it skip without it.
SHARED = Path(os.environ.get("KERNDWD_DATA", "") or "/nonexistent")


def test_figure3_curves_and_png(tmp_path):
    pytest.importorskip("matplotlib")
    from vignettes import figure3

    c = figure3.curves()
    u = figure3.U
    hinge = c["SVM hinge"]
    vals = [c[f"q = {q:g}"] for q in figure3.QVALS]
    for q, v in zip(figure3.QVALS, vals):
        left = u <= q / (q + 1)
        np.testing.assert_allclose(v[left], 1 - u[left])  # linear part of (3.2)
        assert np.all(v >= hinge - 1e-12)  # V_q lies above the hinge loss
    for smaller_q, larger_q in zip(vals[:-1], vals[1:]):
        assert np.all(larger_q <= smaller_q + 1e-12)  # decreasing in q (Figure 3)
    assert np.max(np.abs(vals[-1] - hinge)) < 0.1  # q = 8 is already close to the hinge
    path = figure3.main(["--out", str(tmp_path)])
    assert path.stat().st_size > 10_000 and path.read_bytes()[:4] == b"\x89PNG"


def test_table1_tiny_run(tmp_path):
    pytest.importorskip("cvxpy")
    from vignettes import table1

    detail, summary = table1.main(["--reps", "1", "--examples", "1", "--repeat", "1",
                                   "--solvers", "CLARABEL,ECOS", "--out", str(tmp_path)])
    assert [r["lambda"] for r in detail] == list(table1.LAMBDAS)
    for r in detail:
        assert r["mm_s"] > 0 and r["CLARABEL_s"] > 0 and r["ECOS_s"] > 0
        assert r["kkt_converged"] == 1
        # the gradient-rule fit is the optimum of the matched problem: equal objective
        # up to the solvers' precision, never meaningfully worse
        assert abs(r["kkt_excess_max"]) < 1e-4
        # R's rule stops early but on example 1 it is within 5% of the optimum
        assert -1e-6 < r["mm_excess_max"] < 0.05
    # fewer passes at larger lambda (warm starts are not involved: one lambda per fit)
    assert detail[0]["mm_npass"] > detail[-1]["mm_npass"]
    text = (tmp_path / "table1.md").read_text()
    assert "Command: `python -m vignettes.table1 --reps 1 --examples 1" in text and " cores" in text
    assert text.count("\n| 1 | ") == 6  # one summary row + five lambda rows
    saved = json.loads((tmp_path / "table1.json").read_text())
    assert saved["solvers"] == ["CLARABEL", "ECOS"] and len(saved["detail"]) == 5


@pytest.mark.skipif(not (SHARED / "haberman.csv").is_file(),
                    reason="set KERNDWD_DATA to a folder with the UCI CSV files")
def test_table2_quick_on_haberman(tmp_path):
    pytest.importorskip("sklearn")
    from vignettes import table2

    table = table2.main(["--quick", "--datasets", "haberman", "--n-jobs", "1", "--data-home", str(SHARED),
                         "--out", str(tmp_path)])
    rows = table["haberman"]
    expected = [m for m in table2.method_names(kernlab=False)]
    assert list(rows) == expected and len(expected) == 10
    for m, r in rows.items():
        assert r["reps"] == 3
        assert 0.0 <= r["err"] <= 100.0 and r["se"] >= 0.0 and r["time"] > 0.0
        # Haberman's majority class is 73.5%: every tuned method should be no worse
        # than about predicting it, and no method is near-perfect on these data
        assert 10.0 < r["err"] < 40.0, m
    text = (tmp_path / "table2_quick.md").read_text()
    assert "python -m vignettes.table2 --quick" in text and "cores" in text and "min wall-clock" in text
    assert text.count("| linear DWD q=") == 4 and text.count("| Gaussian DWD q=") == 4
    assert "within 2 paper SE" in text and "26.71 ( 0.54)" in text  # the paper's linear DWD q=1 cell
    # re-rendering from the saved per-split results gives the same table
    again = tmp_path / "again"
    table2.main(["--from-json", str(tmp_path / "table2_quick.json"), "--out", str(again)])
    assert (again / "table2_quick.md").read_text() == text


def test_table2_split_protocol():
    from vignettes import table2

    rng = np.random.default_rng(0)
    train, test, foldid = table2.split_indices(306, rng)
    assert train.size == 204 and test.size == 102
    assert np.intersect1d(train, test).size == 0
    assert sorted(np.bincount(foldid)[1:]) == [40, 41, 41, 41, 41]


def test_table2_comparison_rule():
    from vignettes import table2

    assert table2.compare("bupa", "dwd-linear-1", {"err": 34.82 + 1.9 * 0.75})[0] == "yes"
    assert table2.compare("bupa", "dwd-linear-1", {"err": 34.82 - 2.1 * 0.75})[0] == "NO"
    # a lost boxed cell: consistent when below the known bound (+ 2 SE)
    assert table2.compare("sonar", "svm-gauss", {"err": 19.0})[0] == "yes"
    assert table2.compare("sonar", "svm-gauss", {"err": 25.0})[0] == "NO"
    assert table2.compare("bupa", "dwd-linear-0.5", {"err": 30.0})[0] == "n/a"


@pytest.mark.slow
def test_figure1_errors_near_bayes(tmp_path):
    from vignettes import figure1

    res = figure1.run(n_test=5_000, n_mc=50_000)
    assert abs(res["bayes"] - kerndwd.datasets.PAPER_BAYES_ERROR) < 0.003
    for key in ("dwd", "svm"):
        assert res["bayes"] - 0.02 < res[key]["test"] < res["bayes"] + 0.06
        assert 0.05 < res[key]["train"] < 0.35
