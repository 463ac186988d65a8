"""The folds of cross-validation (:mod:`kerndwd.engine.crossval`): R's
1-based fold labels checked with whole messages, and R's assignment drawn
within each class.
"""

import numpy as np
import pandas as pd
import pytest

from kerndwd.engine.crossval import MIN_FOLDS, check_foldid, check_nfolds, draw_foldid, draw_stratified_foldid


def test_fold_labels_are_taken_from_any_integer_sequence():
    labels = [1, 2, 3, 1, 2, 3]
    for given in (labels, np.array(labels, dtype=np.int8), np.array(labels, dtype=float), pd.Series(labels),
                  pd.array(labels, dtype="Int64")):
        out = check_foldid(given, 6)
        assert out.dtype.kind == "i" and out.tolist() == labels

    class Column:  # a column type numpy cannot convert, with a to_numpy of its own (as data-frame libraries have)
        def to_numpy(self):
            return np.array(labels)

    assert check_foldid(Column(), 6).tolist() == labels
    assert MIN_FOLDS == 3


@pytest.mark.parametrize("foldid, n, error, message", [
    (object(), 6, ValueError, "foldid must have one entry per row of X (6), got shape ()"),
    ([1, 2, 3], 6, ValueError, "foldid must have one entry per row of X (6), got shape (3,)"),
    ([[1, 2, 3]] * 2, 3, ValueError, "foldid must have one entry per row of X (3), got shape (2, 3)"),
    ([[1], [2], [3]], 3, ValueError, "foldid must have one entry per row of X (3), got shape (3, 1)"),
    ([True, False, True], 3, TypeError, "foldid must hold integers, got dtype bool"),
    (["1", "2", "3"], 3, TypeError, "foldid must hold integers, got dtype <U1"),
    ([1.0, 2.0, np.nan], 3, ValueError, "foldid must hold whole numbers (fold labels 1, 2, ..., nfolds)"),
    ([1.0, 2.0, np.inf], 3, ValueError, "foldid must hold whole numbers (fold labels 1, 2, ..., nfolds)"),
    ([1.0, 2.5, 3.0], 3, ValueError, "foldid must hold whole numbers (fold labels 1, 2, ..., nfolds)"),
    ([0, 1, 2], 3, ValueError, "foldid is 1-based as in R (labels 1..nfolds) but contains 0; for 0-based fold "
                               "labels pass foldid + 1"),
    ([1, 3, 4, 4], 4, ValueError, "foldid leaves fold(s) [2] empty; use labels 1..nfolds, each at least once"),
    ([2, 3, 4, 5], 4, ValueError, "foldid leaves fold(s) [1] empty; use labels 1..nfolds, each at least once"),
    ([1, 2, 3, 5], 4, ValueError, "foldid leaves fold(s) [4] empty; use labels 1..nfolds, each at least once"),
    ([1, 2, 1, 2], 4, ValueError, "foldid defines 2 folds; at least 3 are needed (as in R)"),
])
def test_bad_fold_labels_are_refused_with_whole_messages(foldid, n, error, message):
    with pytest.raises(error) as info:
        check_foldid(foldid, n)
    assert str(info.value) == message


def test_a_foldid_that_cannot_become_an_array_is_refused():
    class Bad:
        def __array__(self, *args, **kwargs):
            raise RuntimeError("no")

    with pytest.raises(TypeError) as info:
        check_foldid(Bad(), 3)
    assert str(info.value) == "foldid must be a sequence of integers"


def test_r_assignment_cycles_the_labels_and_stratifies_by_class():
    rng = np.random.default_rng(0)
    out = draw_foldid(4, 10, rng)
    assert sorted(out.tolist()) == sorted([1, 2, 3, 4] * 2 + [1, 2])
    classes = np.array([0] * 7 + [1] * 5 + [2] * 3)
    foldid = draw_stratified_foldid(classes, 3, np.random.default_rng(1))
    assert foldid.dtype.kind == "i"
    for k, size in ((0, 7), (1, 5), (2, 3)):
        counts = np.bincount(foldid[classes == k], minlength=4)[1:]
        assert counts.sum() == size and counts.max() - counts.min() <= 1  # R's rep(1:nfolds) within the class
    # the same generator draws the classes in order: class 0 first
    rng = np.random.default_rng(1)
    np.testing.assert_array_equal(foldid[classes == 0], draw_foldid(3, 7, rng))
    np.testing.assert_array_equal(foldid[classes == 1], draw_foldid(3, 5, rng))


@pytest.mark.parametrize("nfolds, error, message", [
    (2.5, TypeError, "nfolds must be an integer, got 2.5"),
    (True, TypeError, "nfolds must be an integer, got True"),
    ("3", TypeError, "nfolds must be an integer, got '3'"),
    (2, ValueError, "nfolds must be at least 3 (as in R's cv.kerndwd), got 2"),
    (11, ValueError, "nfolds=11 exceeds the number of observations (10); every fold needs one"),
])
def test_nfolds_is_checked(nfolds, error, message):
    with pytest.raises(error) as info:
        check_nfolds(nfolds, 10)
    assert str(info.value) == message
    assert check_nfolds(10.0, 10) == 10 and check_nfolds(np.int64(3), 10) == 3


from kerndwd.engine.crossval import _mean_and_se, choose_last_minimum, cv_error, select_lambda  # noqa: E402

#: R's mean sums in x87 extended precision; where numpy's longdouble is double the last bit may differ
EXTENDED = pytest.mark.skipif(np.finfo(np.longdouble).nmant <= np.finfo(float).nmant,
                              reason="numpy's longdouble is double on this platform")


def _fold_means_by_hand(predmat, y, foldid):
    err = (np.where(predmat > 0, 1.0, -1.0) != y[:, None]).astype(float)
    err[np.isnan(predmat)] = np.nan
    return np.array([np.nanmean(err[foldid == k], axis=0) for k in range(1, foldid.max() + 1)])


def test_cv_error_summarises_folds_by_their_means_when_they_hold_three_or_more():
    rng = np.random.default_rng(0)
    n, L = 12, 3
    y = np.where(rng.uniform(size=n) > 0.5, 1.0, -1.0)
    predmat = rng.normal(size=(n, L))
    predmat[0, 2] = np.nan  # a fold stopped early at the last lambda
    predmat[1, 1] = 0.0  # a zero link predicts -1
    foldid = np.tile([1, 2, 3, 4], 3)  # n / nfolds = 3: fold means
    units = _fold_means_by_hand(predmat, y, foldid)
    cvm, cvsd = cv_error(predmat, y, foldid)
    np.testing.assert_allclose(cvm, units.mean(axis=0), rtol=1e-15)
    np.testing.assert_allclose(cvsd, np.sqrt(((units - units.mean(axis=0)) ** 2).mean(axis=0) / 3), rtol=1e-12)


def test_cv_error_works_on_the_raw_errors_below_three_a_fold():
    rng = np.random.default_rng(1)
    n = 11
    y = np.where(rng.uniform(size=n) > 0.5, 1.0, -1.0)
    predmat = rng.normal(size=(n, 2))
    predmat[3, 0] = np.nan
    foldid = np.r_[np.tile([1, 2, 3, 4], 2), [1, 2, 3]]  # n / nfolds = 2.75: raw errors
    err = (np.where(predmat > 0, 1.0, -1.0) != y[:, None]).astype(float)
    err[3, 0] = np.nan
    cvm, cvsd = cv_error(predmat, y, foldid)
    for j in range(2):
        e = err[~np.isnan(err[:, j]), j]
        assert cvm[j] == pytest.approx(e.mean(), rel=1e-15)
        assert cvsd[j] == pytest.approx(np.sqrt(((e - e.mean()) ** 2).mean() / (e.size - 1)), rel=1e-12)


def test_a_lambda_no_fold_reached_has_no_error_and_one_prediction_no_standard_error():
    y = np.array([1.0, -1.0, 1.0])
    predmat = np.array([[1.0, np.nan, np.nan], [1.0, np.nan, -1.0], [1.0, np.nan, np.nan]])
    cvm, cvsd = cv_error(predmat, y, np.array([1, 2, 3]))
    assert cvm[0] == pytest.approx(1 / 3) and np.isnan(cvm[1]) and cvm[2] == 0.0
    assert np.isfinite(cvsd[0]) and np.isnan(cvsd[1]) and np.isnan(cvsd[2])


def test_rs_selection_rules():
    cvm = np.array([0.30, 0.20, 0.10, 0.10, 0.15])
    cvsd = np.array([0.01, 0.01, 0.10, 0.01, 0.01])
    assert select_lambda(cvm, cvsd) == (2, 1)  # the first minimum; the largest lambda within one SE (0.20)
    cvsd[2] = 0.0999
    assert select_lambda(cvm, cvsd) == (2, 2)
    assert select_lambda(np.array([np.nan, 0.2, 0.2]), np.array([np.nan, 0.0, 0.0])) == (1, 1)
    assert select_lambda(np.array([0.3, 0.1]), np.array([np.nan, np.nan])) == (1, 1)  # no SE: lambda.min
    with pytest.raises(RuntimeError) as info:
        select_lambda(np.array([np.nan, np.nan]), np.array([np.nan, np.nan]))
    assert str(info.value) == ("no fold finished even the first lambda (maxit ran out on every fold): increase "
                               "maxit or start the path at a larger lambda")
    assert choose_last_minimum([0.2, 0.1, 0.3, 0.1]) == 3 and choose_last_minimum([0.5]) == 0


@EXTENDED
def test_fold_means_and_standard_errors_are_rs_to_the_last_bit():
    """R's ``mean`` sums in extended precision, divides, and corrects once; the
    standard error is ``sqrt(mean((u - m)^2) / (N - 1))`` over the folds
    present.  The expected values were printed by R 4.2.2
    (``sprintf("%.17g", ...)``) on the same columns: the first column's sum
    divided by 4 alone rounds to 2500000000000196, and the last's double
    mean is 0.33999999999999997."""
    nan = np.nan
    units = np.array([[1.0000000000000006e+16, 0.1, nan, nan, 13 / 20, 0.1],
                      [-15.181, nan, nan, nan, 10 / 20, nan],
                      [-637.216, 0.3, 7.0, nan, 5 / 20, 0.3],
                      [1429.396, 0.25, nan, nan, 6 / 20, nan]])
    units = np.vstack([units, np.tile([[nan, nan, nan, nan, 0.0, nan]], (6, 1))])
    units[4:, 4] = np.array([0, 1, 0, 3, 17, 13]) / 20
    cvm, cvsd = _mean_and_se(units)
    assert cvm[5] == 0.2 and cvsd[5] == 0.099999999999999992  # two folds: a standard error
    assert cvm[0] == 2500000000000195.5 and cvsd[0] == 2499999999999936.5
    assert cvm[1] == 0.21666666666666667 and cvsd[1] == 0.06009252125773315
    assert cvm[2] == 7.0 and np.isnan(cvsd[2])  # one fold: no standard error
    assert np.isnan(cvm[3]) and np.isnan(cvsd[3])  # no fold
    assert cvm[4] == 0.34


@EXTENDED
def test_the_correction_pass_of_rs_mean_is_a_mean_of_the_residuals():
    """37 error rates in twentieths: R 4.2.2 prints mean 0.56351351351351353
    and standard error 0.055536174689400093 (``sprintf("%.17g", ...)``); a
    correction pass that multiplied by N instead of dividing would round down."""
    units = np.array([7, 20, 12, 17, 17, 7, 0, 13, 19, 16, 14, 1, 3, 16, 7, 1, 14, 19, 19, 5, 19, 20, 15, 4, 5, 11,
                      15, 17, 3, 20, 1, 14, 6, 17, 15, 8, 0])[:, None] / 20
    cvm, cvsd = _mean_and_se(units)
    assert cvm[0] == 0.56351351351351353 and cvsd[0] == 0.055536174689400093
    # 28 more: R prints 0.40535714285714286 and 0.060658821538054027; a double sum of
    # the squared deviations would end the standard error in ...404
    units = np.array([16, 0, 16, 9, 10, 13, 6, 20, 1, 5, 8, 11, 8, 2, 0, 0, 1, 3, 20, 4, 13, 15, 4, 5, 9, 5, 20,
                      3])[:, None] / 20
    cvm, cvsd = _mean_and_se(units)
    assert cvm[0] == 0.40535714285714286 and cvsd[0] == 0.060658821538054027


class _Monitor:
    def __init__(self):
        self.count = 0

    def advance(self):
        self.count += 1


def test_folds_run_in_order_here_or_through_joblib(monkeypatch):
    """n_jobs=1 runs the folds here, one after another; other values hand them
    to joblib as a generator (so the report advances as each fold ends);
    either way the results come back in the folds' order."""
    import sys

    import joblib

    from kerndwd.engine import crossval

    monkeypatch.setattr(crossval, "_fit_fold", lambda *args: ("fold",) + args)
    tasks = [(k, 2 * k) for k in range(5)]
    made = []

    class Parallel(joblib.Parallel):
        def __init__(self, **kw):
            made.append(kw)
            super().__init__(backend="threading", **kw)

    monkeypatch.setattr(joblib, "Parallel", Parallel)
    for n_jobs, calls in ((1, []), (2, [dict(n_jobs=2, return_as="generator")]),
                          (-1, [dict(n_jobs=-1, return_as="generator")])):
        made.clear()
        monitor = _Monitor()
        assert crossval._run(tasks, n_jobs, monitor) == [("fold", k, 2 * k) for k in range(5)]
        assert monitor.count == 5 and made == calls
    assert crossval._run(tasks[:2], 1, None) == [("fold", 0, 0), ("fold", 1, 2)]
    monkeypatch.setitem(sys.modules, "joblib", None)  # joblib not installed
    with pytest.raises(ImportError) as info:
        crossval._run(tasks, 2, None)
    assert str(info.value) == "n_jobs other than 1 runs folds in parallel with joblib: pip install joblib"
    assert crossval._run(tasks[:1], 1, None) == [("fold", 0, 0)]  # one job needs no joblib


def test_a_fold_with_no_prediction_at_a_lambda_is_left_out_of_its_mean():
    """Fold means: where every held-out row of a fold is missing at a lambda
    (its path stopped early), that fold is left out, without a warning."""
    rng = np.random.default_rng(2)
    y = np.where(rng.uniform(size=12) > 0.5, 1.0, -1.0)
    predmat = rng.normal(size=(12, 2))
    foldid = np.tile([1, 2, 3, 4], 3)
    predmat[foldid == 2, 1] = np.nan
    with pytest.warns(RuntimeWarning, match="Mean of empty slice"):  # numpy's nanmean, by hand
        units = _fold_means_by_hand(predmat, y, foldid)  # fold 2's mean at lambda 2 is NaN
    cvm, cvsd = cv_error(predmat, y, foldid)  # RuntimeWarnings are errors in the tests
    kept = units[[0, 2, 3], 1]
    assert cvm[1] == pytest.approx(kept.mean(), rel=1e-15)
    assert cvsd[1] == pytest.approx(np.sqrt(((kept - kept.mean()) ** 2).mean() / 2), rel=1e-12)
    assert cvm[0] == pytest.approx(units[:, 0].mean(), rel=1e-15)


def test_a_training_part_with_one_class_is_refused_with_the_fold_named():
    from kerndwd.engine.crossval import fold_rows

    y = np.array([1.0, 1.0, -1.0, 1.0, 1.0, -1.0])
    with pytest.raises(ValueError) as info:
        fold_rows(np.array([1, 2, 3, 1, 2, 3]), [y])
    assert str(info.value) == ("the training part of fold 3 (all but fold 3) holds only one class; "
                               "choose other folds")
    train, test = fold_rows(np.array([1, 2, 3, 1, 2, 3]), [np.array([1.0, -1.0, 1.0, -1.0, 1.0, -1.0])])[0]
    assert train.tolist() == [1, 2, 4, 5] and test.tolist() == [0, 3]


def test_each_folds_jerr_is_an_integer():
    import kerndwd

    rng = np.random.default_rng(3)
    X = rng.standard_normal((30, 2))
    y = np.where(X[:, 0] + 0.3 * rng.standard_normal(30) > 0, 1.0, -1.0)
    res = kerndwd.cv(X, y, [0.5, 0.1], kern=kerndwd.vanilladot(), nfolds=3, random_state=0)
    assert res.fold_jerr.dtype.kind == "i" and res.fold_jerr.tolist() == [0, 0, 0]
