"""The majoriser contract (:mod:`kerndwd.engine.majorisers.contract`): the
defaults a majoriser inherits, and the refusals of ``check_majoriser`` with
their whole messages."""

import numpy as np
import pytest

from kerndwd.engine import DWDLoss
from kerndwd.engine.forms import DenseLinearForm
from kerndwd.engine.majorisers import contract
from kerndwd.engine.majorisers.contract import LinearPenalty, Majoriser, check_majoriser
from kerndwd.engine.predictors import COEF_SPACES, LinearPredictor


class _Minimal(LinearPenalty, Majoriser):
    def __init__(self, form=None, predictor=None):
        self.n, self.ncoef = 5, 3
        self.loss = DWDLoss(1.0)
        self.form = DenseLinearForm(np.ones((5, 2))) if form is None else form
        self.predictor = LinearPredictor(2) if predictor is None else predictor

    def at_lambda(self, lam):
        return None


def test_the_inherited_defaults():
    m = _Minimal()
    assert m.solver == "?" and m.needs_decisions is False and m.pass_name == "passes"
    start = m.start()
    assert start.dtype == np.float64 and start.tolist() == [0.0, 0.0, 0.0]
    alpha = np.array([1, 2, 3])
    warm = m.start(alpha)
    assert warm.dtype == np.float64 and warm.tolist() == [1.0, 2.0, 3.0] and warm is not alpha
    coord = np.array([1.0, -2.0, 0.5])
    out = m.to_alpha(coord)
    assert out.tolist() == coord.tolist() and out is not coord
    assert m.newton_system() is None
    assert m.penalty_at(coord, None) == 4.25


def test_refusals_name_the_design_and_what_is_missing():
    with pytest.raises(TypeError) as info:
        check_majoriser(object(), "toy")
    assert str(info.value) == "design 'toy' built object, which is not a Majoriser"
    with pytest.raises(TypeError) as info:
        check_majoriser(object())
    assert str(info.value) == "design '?' built object, which is not a Majoriser"
    m = _Minimal()
    del m.loss, m.predictor
    with pytest.raises(TypeError) as info:
        check_majoriser(m, "toy")
    assert str(info.value) == ("design 'toy': _Minimal lacks loss (the DWDLoss it was built with), "
                               "predictor (a Predictor)")
    m = _Minimal()
    del m.n, m.ncoef, m.form
    m.solver = "x"
    with pytest.raises(TypeError) as info:
        check_majoriser(m, "toy")
    assert str(info.value) == ("design 'toy': _Minimal lacks n (the number of rows), ncoef (the length of its "
                               "coordinate vector), form (a Form: f = b0 + B theta)")


def test_a_form_and_a_predictor_of_the_wrong_kind_are_refused_once_per_combination():
    class NotAForm:
        pass

    with pytest.raises(TypeError) as info:
        check_majoriser(_Minimal(form=NotAForm()), "toy")
    assert str(info.value) == ("design 'toy': _Minimal.form is not a Form (kerndwd.engine.forms.Form: apply, "
                               "apply_t, penalty, penalty_grad, dual_norm_sq)")

    class OddSpace(LinearPredictor):
        coef_space = "elsewhere"

    assert "elsewhere" not in COEF_SPACES
    for predictor in (object(), OddSpace(2)):
        with pytest.raises(TypeError) as info:
            check_majoriser(_Minimal(predictor=predictor), "toy")
        assert str(info.value) == (f"design 'toy': _Minimal.predictor is not a Predictor (decision, beta, "
                                   f"n_features, coef_space in {COEF_SPACES})")
    good = _Minimal()
    key = (_Minimal, DenseLinearForm, LinearPredictor)
    contract._CONFORMING.discard(key)
    assert check_majoriser(good, "toy") is good and key in contract._CONFORMING
    good.predictor.coef_space = "elsewhere"  # not inspected again: the combination has passed
    assert check_majoriser(good, "toy") is good
