"""The public kernel and loss functions at their edges.

* Each kernel's defaults are kernlab's, and its spec round-trips.
* Each bad argument is refused with a message that begins with the kernel's
  name and the argument's (``besseldot: sigma must be ...``).
* ``sigest`` refuses what it cannot use with messages that say why, works
  from two rows, and reads boolean or integer rows as numbers.
* ``dwd_loss``, ``dwd_loss_deriv`` and ``lipschitz`` stay finite (or exactly
  ``+-inf``) without a floating-point warning at the extremes of ``u`` and
  ``q``; ``population_minimizer`` refuses every ``eta`` outside ``(0, 1)``
  and answers in double precision whatever the input's type.
"""

import re

import numpy as np
import pytest

import kerndwd
from kerndwd.kernels import kernel_from_spec, kernel_matrix, sigest
from kerndwd.loss import dwd_loss, dwd_loss_deriv, lipschitz, population_minimizer
from reference.rbridge import KERNLAB_KERNELS

#: kernlab's defaults, as the bridge to R records them (R's names and defaults)
KERNLAB_DEFAULTS = KERNLAB_KERNELS


@pytest.mark.parametrize("name", sorted(KERNLAB_DEFAULTS))
def test_each_kernel_defaults_to_kernlabs_parameters_and_its_spec_round_trips(name):
    kern = getattr(kerndwd, name)()
    assert kern.to_spec() == {"name": name, **KERNLAB_DEFAULTS[name]}
    assert kernel_from_spec(kern.to_spec()) == kern
    X = np.random.default_rng(0).uniform(-1, 1, (6, 3))
    np.testing.assert_array_equal(kernel_matrix(kernel_from_spec(kern.to_spec()), X), kernel_matrix(kern, X))


#: (kernel, argument, a bad value, the error, what the message says of the value)
BAD_ARGUMENTS = [
    ("rbfdot", "sigma", 0.0, ValueError, "must be positive"),
    ("rbfdot", "sigma", "1", TypeError, "must be a real number"),
    ("laplacedot", "sigma", -1.0, ValueError, "must be positive"),
    ("polydot", "degree", 0, ValueError, "must be at least 1"),
    ("polydot", "degree", 1.5, TypeError, "must be an integer"),
    ("polydot", "scale", 0.0, ValueError, "must be positive"),
    ("polydot", "offset", -0.5, ValueError, "must be non-negative"),
    ("besseldot", "sigma", 0.0, ValueError, "must be positive"),
    ("besseldot", "order", -1.0, ValueError, "must be non-negative"),
    ("besseldot", "degree", 0, ValueError, "must be at least 1"),
    ("anovadot", "sigma", np.inf, ValueError, "must be positive"),
    ("anovadot", "degree", 2.5, TypeError, "must be an integer"),
]


@pytest.mark.parametrize("kernel, argument, value, error, says", BAD_ARGUMENTS)
def test_a_bad_kernel_argument_is_refused_naming_the_kernel_and_the_argument(kernel, argument, value, error,
                                                                          says):
    with pytest.raises(error, match=rf"^{kernel}: {argument} {says}"):
        getattr(kerndwd, kernel)(**{argument: value})


def test_kernel_matrix_refuses_what_is_not_a_kernel_naming_its_type():
    with pytest.raises(TypeError, match=r"^kern must be a kernel from kerndwd\.kernels, got str$"):
        kernel_matrix("rbfdot", np.eye(2))


@pytest.mark.parametrize("dtype", [np.int32, np.float16, "complex128", "not a dtype"])
def test_a_kernel_matrix_is_held_in_float64_or_float32_only(dtype):
    """``kern(x, dtype=...)`` takes the two floating types the engine holds; an
    integer type would truncate every entry below one to zero, silently."""
    X = np.random.default_rng(0).normal(size=(6, 2))
    kern = kerndwd.rbfdot(0.5)
    with pytest.raises(TypeError, match=r"^dtype must be np\.float64 or np\.float32 "
                                        r"\(the kernel matrix is held in one of them\)$"):
        kern(X, dtype=dtype)
    assert kern(X, dtype="float32").dtype == np.float32
    np.testing.assert_array_equal(kern(X, dtype=np.float64), kern(X))


@pytest.mark.parametrize("x", [np.arange(5.0), np.zeros((1, 3)), np.zeros((2, 2, 2))])
def test_sigest_needs_a_matrix_of_two_rows_or_more(x):
    with pytest.raises(ValueError, match=r"^x must be a 2-D array with at least two rows$"):
        sigest(x)


def test_sigest_refuses_non_finite_rows():
    with pytest.raises(ValueError, match=r"^x must not contain NaN or infinite values$"):
        sigest(np.array([[0.0, 1.0], [np.nan, 2.0], [1.0, 1.0]]))


def test_sigest_refuses_identical_rows_and_a_draw_of_equal_pairs_saying_which():
    with pytest.raises(ValueError, match=r"^sigest: all rows of x are identical, so no distance is non-zero; "
                                         r"give sigma explicitly$"):
        sigest(np.ones((6, 2)), random_state=0)
    X = np.array([[0.0, 0.0], [1.0, 2.0], [3.0, 3.0]])  # one pair drawn: seed 1 draws a row with itself
    message = ("sigest: each of the 1 sampled pair(s) of rows has distance 0 (pairs are drawn with replacement, "
               "so a row can be paired with itself), although x has distinct rows; give sigma explicitly or "
               "another random_state")
    with pytest.raises(ValueError, match="^" + re.escape(message) + "$"):
        sigest(X, random_state=1)


def test_sigest_from_two_rows_is_the_inverse_squared_distance():
    """Two rows give one pair; when it joins them (seed 1), both quantiles are
    that pair's squared distance, 5 here."""
    assert sigest(np.array([[0.0, 0.0], [1.0, 2.0]]), random_state=1) == pytest.approx(0.2, rel=1e-15)


def test_sigest_reads_boolean_and_integer_rows_as_numbers():
    rng = np.random.default_rng(2)
    B = rng.random((40, 4)) < 0.5
    expected = sigest(B.astype(float), random_state=3)
    assert sigest(B, random_state=3) == expected
    assert sigest(B.astype(np.int64), random_state=3) == expected
    assert sigest(B.tolist(), random_state=3) == expected


MARGINS = np.array([-np.inf, -1e300, -1.0, 0.0, 1e-300, 0.5, 0.9999, 1.0, 2.0, 1e10, 1e300, np.inf])


@pytest.mark.parametrize("q", [1e-300, 1e-3, 1.0, 2.0, 100.0, 1e10, 1e300])
def test_the_loss_and_its_derivative_raise_no_floating_point_error_at_extremes(q):
    """No overflow, invalid operation or division by zero at any margin or q
    (underflow to zero is the right answer far beyond the knot)."""
    with np.errstate(all="raise", under="ignore"):
        v = dwd_loss(MARGINS, q)
        d = dwd_loss_deriv(MARGINS, q)
    assert v[0] == np.inf and v[-1] == 0.0 and np.isfinite(v[1:]).all()
    assert (v[1:] >= 0).all() and (np.diff(v) <= 0).all()  # non-increasing
    assert np.isfinite(d).all() and (d >= -1.0).all() and (d <= 0.0).all()


def test_lipschitz_beyond_1e100_is_q_without_overflow():
    """``M = (q + 1)^2 / q = q + 2 + 1/q``: q itself in double precision beyond 1e100."""
    with np.errstate(all="raise"):
        assert lipschitz(1e200) == 1e200
        assert lipschitz(1e300) == 1e300
        assert lipschitz(1e100) == pytest.approx(1e100, rel=1e-15)
    assert lipschitz(1.0) == 4.0 and lipschitz(2.0) == 4.5


@pytest.mark.parametrize("eta", [0.0, 1.0, 1.5, -0.2, np.nan, [0.3, 1.0], [0.0, 0.5]])
def test_population_minimizer_refuses_eta_outside_the_open_unit_interval(eta):
    with pytest.raises(ValueError, match=r"^eta must lie strictly between 0 and 1$"):
        population_minimizer(eta)


def test_population_minimizer_answers_in_double_precision_for_single_precision_eta():
    eta = np.array([0.1, 0.3, 0.5, 0.7, 0.9], dtype=np.float32)
    f32 = population_minimizer(eta, q=2.0)
    f64 = population_minimizer(eta.astype(np.float64), q=2.0)
    assert f32.dtype == np.float64
    np.testing.assert_array_equal(f32, f64)


def test_a_kernel_takes_one_row_as_a_vector_and_numbers_of_any_type():
    """A 1-D ``x`` is one row; boolean and integer rows are read as numbers (a
    boolean product would be a logical one)."""
    kern = kerndwd.rbfdot(0.5)
    B = np.array([[True, False, True], [False, False, True], [True, True, True]])
    expected = kern(B.astype(float))
    np.testing.assert_array_equal(kern(B), expected)
    np.testing.assert_array_equal(kern(B.astype(np.int8), B.tolist()), expected)
    np.testing.assert_array_equal(kern(B[0].astype(float), B.astype(float)), expected[:1])
    assert kerndwd.vanilladot()(np.array([1.0, 2.0])).tolist() == [[5.0]]


def test_a_kernel_refuses_rows_it_cannot_pair_naming_the_argument():
    kern = kerndwd.polydot(2)
    with pytest.raises(ValueError, match=r"^x must be a 2-D array of rows, got shape \(2, 2, 2\)$"):
        kern(np.zeros((2, 2, 2)))
    with pytest.raises(ValueError, match=r"^y must be a 2-D array of rows, got shape \(2, 1, 3\)$"):
        kern(np.zeros((2, 3)), np.zeros((2, 1, 3)))
    with pytest.raises(ValueError, match=r"^x and y must have the same number of columns, got 3 and 2$"):
        kern(np.zeros((4, 3)), np.zeros((5, 2)))


def test_the_loss_functions_default_to_q_1():
    u = np.array([-1.0, 0.25, 0.5, 2.0, 10.0])
    eta = np.array([0.2, 0.5, 0.9])
    np.testing.assert_array_equal(dwd_loss(u), dwd_loss(u, 1.0))
    np.testing.assert_array_equal(dwd_loss_deriv(u), dwd_loss_deriv(u, 1.0))
    np.testing.assert_array_equal(population_minimizer(eta), population_minimizer(eta, 1.0))
    assert dwd_loss(2.0) == 0.125 and dwd_loss_deriv(2.0) == -0.0625  # t^2 / u and -t^2 / u^2, t = 1/2


@pytest.mark.parametrize("value, name", [
    (None, "float64"), ("float64", "float64"), ("f8", "float64"), (float, "float64"),
    (np.float32, "float32"), (np.dtype("float32"), "float32"), ("float32", "float32"),
    (">f8", "float64"), ("<f4", "float32"),
    (np.float16, None), ("int64", None), (complex, None), ("not a dtype", None), (object(), None),
])
def test_float_dtype_reads_a_name_a_type_or_a_dtype_as_one_of_the_two_floats(value, name):
    """One reading of a ``dtype`` argument serves the kernel matrix and the
    stored features; ``None`` is numpy's default, float64, and a byte order
    named is read as the machine's."""
    from kerndwd._scalars import FLOAT_DTYPES, float_dtype

    read = float_dtype(value)
    if name is None:
        assert read is None
    else:
        assert isinstance(read, np.dtype) and read.name == name and read.isnative
    assert FLOAT_DTYPES == ("float64", "float32")
