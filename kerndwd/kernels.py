"""Kernels with kernlab's names, parameters and defaults.

Each constructor returns a small immutable object that computes the kernel
matrix between two sets of rows, ``kern(x, y)`` or ``kernel_matrix(kern, x,
y)``.  Matrices are formed with BLAS (one ``x @ y.T`` product) wherever the
kernel is a function of inner products or Euclidean distances; the ANOVA and
spline kernels, which are sums or products over coordinates, loop over the
``p`` columns, never over rows.

The arithmetic follows kernlab where it affects the last digits (the
squared distance is ``|x|^2 + |y|^2 - 2 <x, y>``; the Laplace and Bessel
kernels round it to 9 decimals before the square root), so that kernel
matrices agree with R's to about 1e-15 relative.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, ClassVar, cast

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy import special

from ._scalars import check_integer, check_real, float_dtype

__all__ = [
    "Kernel",
    "vanilladot",
    "rbfdot",
    "laplacedot",
    "polydot",
    "besseldot",
    "anovadot",
    "splinedot",
    "userdot",
    "kernel_matrix",
    "kernel_from_spec",
    "sigest",
]

# kernlab rounds squared distances to this many decimals before sqrt in the
# Laplace and Bessel kernels; matching it keeps our matrices equal to R's.
_DIST_ROUND_DECIMALS = 9


def _positive(name: str, value: float, kernel: str) -> float:
    return check_real(value, f"{kernel}: {name}", "positive")


def _nonneg(name: str, value: float, kernel: str) -> float:
    return check_real(value, f"{kernel}: {name}", "nonneg")


def _positive_int(name: str, value: int, kernel: str) -> int:
    return check_integer(value, f"{kernel}: {name}", 1)


def _rows(x: ArrayLike, name: str) -> NDArray[np.float64]:
    arr = np.asarray(x, dtype=float)
    if arr.ndim == 1:
        arr = arr[None, :]
    if arr.ndim != 2:
        raise ValueError(f"{name} must be a 2-D array of rows, got shape {arr.shape}")
    return arr


#: A kernel matrix is formed by blocks of rows of about this many bytes (within
#: a core's cache), each block by the kernel's formula.
_BLOCK_BYTES = 1 << 21


def _half_sq_norms(x: NDArray[np.float64]) -> NDArray[np.float64]:
    """``|x_i|^2 / 2`` of every row."""
    return 0.5 * np.einsum("ij,ij->i", x, x)


def _half_sq_dist_neg(x: NDArray[np.float64], y: NDArray[np.float64],
                      y_half_sq: NDArray[np.float64]) -> NDArray[np.float64]:
    """``<x, y> - |x|^2/2 - |y|^2/2`` (= -d^2/2), kernlab's order of operations;
    ``y_half_sq`` is :func:`_half_sq_norms` of ``y``."""
    out = x @ y.T
    # in place: large temporaries cost more in page faults than in arithmetic
    out -= _half_sq_norms(x)[:, None]
    out -= y_half_sq[None, :]
    return out


def _sq_dist_rounded(x: NDArray[np.float64], y: NDArray[np.float64],
                     y_half_sq: NDArray[np.float64]) -> NDArray[np.float64]:
    d2 = _half_sq_dist_neg(x, y, y_half_sq)
    d2 *= -2.0
    return np.round(d2, _DIST_ROUND_DECIMALS, out=d2)


class Kernel:
    """Base class: a kernel is a callable ``k(x, y=None) -> matrix``.

    The constructors of this module (:func:`rbfdot`, :func:`polydot`, ...)
    return immutable instances; ``kern(x, y)`` is the matrix
    ``[k(x_i, y_j)]``, ``kern(x)`` the square one.  ``kern(x, y,
    dtype=np.float32)`` holds it in float32: each block of rows is formed in
    double precision and rounded, so the float64 matrix is never held whole.

    Examples
    --------
    >>> import numpy as np, kerndwd
    >>> kern = kerndwd.rbfdot(sigma=1.0)
    >>> kern(np.zeros((2, 3))).shape
    (2, 2)
    >>> kern.params()
    {'sigma': 1.0}
    """

    name: str = "kernel"
    #: True when the kernel is the plain inner product (enables the linear solver)
    is_linear: bool = False
    #: True when k(x, x) = 1 for every x (the stationary kernels): a computed
    #: diagonal far from 1 means the data's scale defeats double precision
    unit_diagonal: bool = False
    #: True when every kernel matrix of the kernel is positive semi-definite,
    #: whatever the rows (inner products, Gaussians, their sums, products and
    #: powers); False where it depends on the data (the spline kernel outside
    #: [0, 1], Bessel kernels of low order in many dimensions), which the
    #: designs then check on the rows they fit
    always_psd: bool = False
    # the parameters, set on each kernel class by dataclass
    __dataclass_fields__: ClassVar[dict[str, Any]]

    def __call__(self, x: ArrayLike, y: ArrayLike | None = None, *,
                 dtype: Any = np.float64) -> NDArray[np.floating]:
        dtype = float_dtype(dtype)
        if dtype is None:
            raise TypeError("dtype must be np.float64 or np.float32 (the kernel matrix is held in one of them)")
        x = _rows(x, "x")
        y = x if y is None else _rows(y, "y")
        if x.shape[1] != y.shape[1]:
            raise ValueError(
                f"x and y must have the same number of columns, got {x.shape[1]} and {y.shape[1]}"
            )
        y_half_sq = _half_sq_norms(y)  # once, for every block of x
        rows = max(1, _BLOCK_BYTES // (8 * max(y.shape[0], 1)))
        if x.shape[0] <= rows:
            return self._matrix(x, y, y_half_sq).astype(dtype, copy=False)
        # by blocks of rows: each block's passes (product, shifts, exp) stay in cache,
        # where the whole matrix would be read and written once per pass
        out = np.empty((x.shape[0], y.shape[0]), dtype=dtype)
        for start in range(0, x.shape[0], rows):
            out[start:start + rows] = self._matrix(x[start:start + rows], y, y_half_sq)
        return out

    def _matrix(self, x: NDArray[np.float64], y: NDArray[np.float64],
                y_half_sq: NDArray[np.float64]) -> NDArray[np.float64]:
        """The matrix ``[k(x_i, y_j)]``; ``y_half_sq`` is ``|y_j|^2 / 2`` (used by the
        kernels of a distance)."""
        raise NotImplementedError  # pragma: no cover - abstract

    def params(self) -> dict[str, Any]:
        """The kernlab parameters as a dict (R's names).

        Returns
        -------
        dict
            E.g. ``{"sigma": 0.5}`` for ``rbfdot(sigma=0.5)``.
        """
        return {k: getattr(self, k) for k in self.__dataclass_fields__}

    def to_spec(self) -> dict[str, Any]:
        """A JSON-friendly description, ``{"name": ..., **params}``.

        Returns
        -------
        dict
            E.g. ``{"name": "rbfdot", "sigma": 0.5}``.
        """
        return {"name": self.name, **self.params()}

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.params().items())
        return f"{self.name}({args})"


@dataclass(frozen=True, repr=False)
class _Vanilla(Kernel):
    name = "vanilladot"
    is_linear = True

    always_psd = True
    def _matrix(self, x: NDArray[np.float64], y: NDArray[np.float64],
                y_half_sq: NDArray[np.float64]) -> NDArray[np.float64]:
        return x @ y.T


@dataclass(frozen=True, repr=False)
class _RBF(Kernel):
    sigma: float = 1.0
    name = "rbfdot"
    unit_diagonal = True

    always_psd = True
    def _matrix(self, x: NDArray[np.float64], y: NDArray[np.float64],
                y_half_sq: NDArray[np.float64]) -> NDArray[np.float64]:
        out = _half_sq_dist_neg(x, y, y_half_sq)
        out *= 2.0 * self.sigma
        return np.exp(out, out=out)


@dataclass(frozen=True, repr=False)
class _Laplace(Kernel):
    sigma: float = 1.0
    name = "laplacedot"
    unit_diagonal = True

    always_psd = True
    def _matrix(self, x: NDArray[np.float64], y: NDArray[np.float64],
                y_half_sq: NDArray[np.float64]) -> NDArray[np.float64]:
        d = np.maximum(_sq_dist_rounded(x, y, y_half_sq), 0.0)
        np.sqrt(d, out=d)
        d *= -self.sigma
        return np.exp(d, out=d)


@dataclass(frozen=True, repr=False)
class _Poly(Kernel):
    degree: int = 1
    scale: float = 1.0
    offset: float = 1.0
    name = "polydot"

    always_psd = True
    def _matrix(self, x: NDArray[np.float64], y: NDArray[np.float64],
                y_half_sq: NDArray[np.float64]) -> NDArray[np.float64]:
        return (self.scale * (x @ y.T) + self.offset) ** self.degree


@dataclass(frozen=True, repr=False)
class _Bessel(Kernel):
    sigma: float = 1.0
    order: float = 1.0
    degree: int = 1
    name = "besseldot"
    unit_diagonal = True

    def _matrix(self, x: NDArray[np.float64], y: NDArray[np.float64],
                y_half_sq: NDArray[np.float64]) -> NDArray[np.float64]:
        t = self.sigma * np.sqrt(np.maximum(_sq_dist_rounded(x, y, y_half_sq), 0.0))
        lim = 1.0 / (special.gamma(self.order + 1.0) * 2.0**self.order)
        small = t < 1e-4
        safe_t = np.where(small, 1.0, t)
        # below 1e-4 the series 1 - t^2 / (4 (order + 1)) is exact to rounding; the constant
        # alone (kernlab's choice) errs by up to 2.5e-9 and can make K indefinite
        series = lim * (1.0 - t * t / (4.0 * (self.order + 1.0)))
        b = np.where(small, series, special.jv(self.order, safe_t) * safe_t ** (-self.order))
        return (b / lim) ** self.degree


@dataclass(frozen=True, repr=False)
class _Anova(Kernel):
    sigma: float = 1.0
    degree: int = 1
    name = "anovadot"

    always_psd = True
    def _matrix(self, x: NDArray[np.float64], y: NDArray[np.float64],
                y_half_sq: NDArray[np.float64]) -> NDArray[np.float64]:
        total = np.zeros((x.shape[0], y.shape[0]))
        for k in range(x.shape[1]):  # a loop over columns, each step a BLAS-sized array op
            diff = x[:, k][:, None] - y[:, k][None, :]
            total += np.exp(-self.sigma * diff * diff)
        return total**self.degree


@dataclass(frozen=True, repr=False)
class _Spline(Kernel):
    name = "splinedot"

    def _matrix(self, x: NDArray[np.float64], y: NDArray[np.float64],
                y_half_sq: NDArray[np.float64]) -> NDArray[np.float64]:
        out = np.ones((x.shape[0], y.shape[0]))
        for k in range(x.shape[1]):  # product over coordinates
            xk = x[:, k][:, None]
            yk = y[:, k][None, :]
            m = np.minimum(xk, yk)
            out *= 1.0 + xk * yk * (1.0 + m) - (xk + yk) / 2.0 * m * m + m**3 / 3.0
        return out


#: How far a kernel matrix may be from symmetric, relative to its largest entry:
#: float32 arithmetic rounds a symmetric matrix's two triangles differently by
#: about 1e-7; a matrix beyond this is no kernel's (and the solvers, which read
#: one triangle, would fit another matrix than the one given).
SYMMETRY_RTOL = 1e-6


def asymmetry(K: NDArray[np.floating]) -> float:
    """``max |K - K'|`` relative to ``max |K|`` (0 for a symmetric matrix)."""
    scale = float(np.abs(K).max()) if K.size else 0.0
    return float(np.abs(K - K.T).max()) / scale if scale > 0 else 0.0


@dataclass(frozen=True, repr=False)
class _Function(Kernel):
    """A kernel from a Python function, see :func:`userdot`."""

    func: Callable[..., Any]
    name = "userdot"
    # always_psd is False: the designs check definiteness on the rows they fit

    def _matrix(self, x: NDArray[np.float64], y: NDArray[np.float64],
                y_half_sq: NDArray[np.float64]) -> NDArray[np.float64]:
        out = self.func(x, y)
        try:
            K = np.asarray(out, dtype=float)
        except (TypeError, ValueError):
            raise TypeError(f"kernel {self!r} must return a matrix of numbers, got {type(out).__name__}") from None
        if K.shape != (x.shape[0], y.shape[0]):
            raise ValueError(f"kernel {self!r} returned shape {K.shape} for {x.shape[0]} and {y.shape[0]} rows; it "
                             f"must return the ({x.shape[0]}, {y.shape[0]}) matrix of k(x_i, y_j)")
        if not np.isfinite(K).all():
            raise ValueError(f"kernel {self!r} returned non-finite values (NaN or infinite) on these rows")
        return K

    def __call__(self, x: ArrayLike, y: ArrayLike | None = None, *,
                 dtype: Any = np.float64) -> NDArray[np.floating]:
        K = super().__call__(x, y, dtype=dtype)
        if y is None and asymmetry(K) > SYMMETRY_RTOL:  # the square matrix of the rows: k(x, y) = k(y, x)
            raise ValueError(f"kernel {self!r} is not symmetric on these rows: k(x_i, x_j) and k(x_j, x_i) differ "
                             f"by {asymmetry(K):.3g} of the largest value; DWD needs a symmetric positive "
                             "semi-definite kernel")
        return K

    def __repr__(self) -> str:
        return f"userdot({getattr(self.func, '__qualname__', type(self.func).__name__)})"


def userdot(func: Callable[[NDArray[np.float64], NDArray[np.float64]], ArrayLike]) -> Kernel:
    """A kernel of your own from a Python function, as kernlab takes a function
    of class ``"kernel"``: ``func(x, y)`` returns the matrix ``[k(x_i, y_j)]``.

    ``func`` is called on 2-D float arrays of rows (blocks of them for large
    matrices).  What it returns is checked: its shape, finite values, and, on
    the square matrices of the rows fitted, symmetry (to
    :data:`SYMMETRY_RTOL`) and positive semi-definiteness (as for kernlab's
    kernels that are not always so, on a sample of rows).  Random Fourier
    features (``approx="rff"``) need the kernel's spectral measure and refuse
    it; the exact solvers and Nystrom features (``approx="nystroem"``) take it.
    A fitted path pickles when ``func`` does (a function defined at a
    module's top level).

    Parameters
    ----------
    func : callable
        ``func(x, y) -> array of shape (len(x), len(y))``.

    Returns
    -------
    Kernel

    Raises
    ------
    TypeError
        When ``func`` is not callable.

    Examples
    --------
    >>> import numpy as np, kerndwd
    >>> square = kerndwd.userdot(lambda x, y: (x @ y.T + 1.0) ** 2)
    >>> square(np.array([[1.0, 2.0]]), np.array([[2.0, 1.0]]))
    array([[25.]])
    """
    if not callable(func) or isinstance(func, Kernel):
        raise TypeError(f"func must be a function func(x, y) returning the kernel matrix, got {type(func).__name__}"
                        + (" (already a kernel: use it as it is)" if isinstance(func, Kernel) else ""))
    return _Function(func)


@dataclass(frozen=True, repr=False)
class _Precomputed(Kernel):
    """The estimators' ``kernel="precomputed"``: each row is its index among the
    training rows (-1 for a new row) followed by its kernel values against every
    training row, so that ``k(x, y)`` reads ``x``'s values at ``y``'s indices
    and every subset of rows (a fold, the landmarks) keeps its kernel values."""

    name = "precomputed"
    # the Gram matrix is checked where it enters (kerndwd._inputs.precomputed_rows);
    # every fold's and landmark set's is a principal submatrix of it
    always_psd = True

    def __call__(self, x: ArrayLike, y: ArrayLike | None = None, *,
                 dtype: Any = np.float64) -> NDArray[np.floating]:
        x = _rows(x, "x")
        y = x if y is None else _rows(y, "y")
        index = y[:, 0].astype(np.intp)
        return np.asarray(x[:, 1:][:, index], dtype=float_dtype(dtype) or np.float64)

    def __repr__(self) -> str:
        return "precomputed()"


def vanilladot() -> Kernel:
    """The linear kernel ``<x, y>`` (kernlab's ``vanilladot``).

    With it, :func:`kerndwd.fit` solves linear DWD in ``beta`` (Algorithm 1)
    when ``n >= p``.

    Returns
    -------
    Kernel

    Examples
    --------
    >>> import numpy as np, kerndwd
    >>> kerndwd.vanilladot()(np.array([[1.0, 2.0]]), np.array([[3.0, 4.0]]))
    array([[11.]])
    """
    return _Vanilla()


def rbfdot(sigma: float = 1.0) -> Kernel:
    """The Gaussian kernel ``exp(-sigma ||x - y||^2)`` (kernlab's ``rbfdot``).

    Parameters
    ----------
    sigma : float, default 1
        Inverse width, ``> 0``; :func:`sigest` gives a data-driven value.

    Returns
    -------
    Kernel

    Raises
    ------
    ValueError, TypeError
        When ``sigma`` is not a positive finite number.

    Examples
    --------
    >>> import numpy as np, kerndwd
    >>> K = kerndwd.rbfdot(sigma=0.5)(np.array([[0.0, 0.0], [1.0, 1.0]]))
    >>> np.round(K, 4)
    array([[1.    , 0.3679],
           [0.3679, 1.    ]])
    """
    return _RBF(_positive("sigma", sigma, "rbfdot"))


def laplacedot(sigma: float = 1.0) -> Kernel:
    """The Laplace kernel ``exp(-sigma ||x - y||)`` (kernlab's ``laplacedot``:
    the Euclidean norm, not the L1 norm of scikit-learn's laplacian kernel).

    Parameters
    ----------
    sigma : float, default 1
        ``> 0``.

    Returns
    -------
    Kernel

    Raises
    ------
    ValueError, TypeError
        When ``sigma`` is not a positive finite number.

    Examples
    --------
    >>> import numpy as np, kerndwd
    >>> K = kerndwd.laplacedot(sigma=1.0)(np.array([[0.0, 0.0]]), np.array([[3.0, 4.0]]))
    >>> float(np.round(K[0, 0], 6))
    0.006738
    """
    return _Laplace(_positive("sigma", sigma, "laplacedot"))


def polydot(degree: int = 1, scale: float = 1.0, offset: float = 1.0) -> Kernel:
    """The polynomial kernel ``(scale <x, y> + offset)^degree`` (kernlab's ``polydot``).

    Parameters
    ----------
    degree : int, default 1
        ``>= 1``.
    scale : float, default 1
        ``> 0``.
    offset : float, default 1
        ``>= 0``.

    Returns
    -------
    Kernel

    Raises
    ------
    ValueError, TypeError
        When a parameter is out of range or of the wrong type.

    Examples
    --------
    >>> import numpy as np, kerndwd
    >>> kerndwd.polydot(degree=2, scale=0.5)(np.array([[1.0, 2.0]]), np.array([[2.0, 1.0]]))
    array([[9.]])
    """
    return _Poly(
        _positive_int("degree", degree, "polydot"),
        _positive("scale", scale, "polydot"),
        _nonneg("offset", offset, "polydot"),
    )


def besseldot(sigma: float = 1.0, order: float = 1.0, degree: int = 1) -> Kernel:
    """The Bessel kernel: with ``t = sigma ||x - y||``,
    ``(J_order(t) t^(-order) / lim)^degree``, ``lim = 1 / (Gamma(order+1) 2^order)``.

    For ``t < 1e-4`` kernlab uses the constant ``lim``; we use the series
    ``lim (1 - t^2 / (4 (order + 1)))``, exact to rounding there, because the
    constant errs by up to 2.5e-9 and can make the kernel matrix indefinite.
    The two agree exactly at ``t = 0`` (duplicated rows).

    Parameters
    ----------
    sigma : float, default 1
        ``> 0``.
    order : float, default 1
        ``>= 0``.
    degree : int, default 1
        ``>= 1``.

    Returns
    -------
    Kernel

    Raises
    ------
    ValueError, TypeError
        When a parameter is out of range or of the wrong type.

    Examples
    --------
    >>> import numpy as np, kerndwd
    >>> K = kerndwd.besseldot(sigma=1.0)(np.array([[0.0], [1.0]]))
    >>> np.round(K, 4)
    array([[1.    , 0.8801],
           [0.8801, 1.    ]])
    """
    return _Bessel(
        _positive("sigma", sigma, "besseldot"),
        _nonneg("order", order, "besseldot"),
        _positive_int("degree", degree, "besseldot"),
    )


def anovadot(sigma: float = 1.0, degree: int = 1) -> Kernel:
    """The ANOVA kernel ``(sum_k exp(-sigma (x_k - y_k)^2))^degree`` (kernlab's ``anovadot``).

    Parameters
    ----------
    sigma : float, default 1
        ``> 0``.
    degree : int, default 1
        ``>= 1``.

    Returns
    -------
    Kernel

    Raises
    ------
    ValueError, TypeError
        When a parameter is out of range or of the wrong type.

    Examples
    --------
    >>> import numpy as np, kerndwd
    >>> kerndwd.anovadot(sigma=1.0, degree=2)(np.array([[0.0, 0.0]]))
    array([[4.]])
    """
    return _Anova(_positive("sigma", sigma, "anovadot"), _positive_int("degree", degree, "anovadot"))


def splinedot() -> Kernel:
    """The spline kernel ``prod_k (1 + x_k y_k (1 + m_k) - (x_k + y_k) m_k^2 / 2 + m_k^3 / 3)``,
    ``m_k = min(x_k, y_k)`` (kernlab's ``splinedot``).

    It is positive semi-definite for data in ``[0, 1]``; elsewhere its matrix
    can be indefinite, and :func:`kerndwd.fit` refuses it with a ``ValueError``.

    Returns
    -------
    Kernel

    Examples
    --------
    >>> import numpy as np, kerndwd
    >>> K = kerndwd.splinedot()(np.array([[0.5], [1.0]]))
    >>> np.round(K, 4)
    array([[1.2917, 1.6042],
           [1.6042, 2.3333]])
    """
    return _Spline()


_CONSTRUCTORS: dict[str, Callable[..., Kernel]] = {
    "vanilladot": vanilladot,
    "rbfdot": rbfdot,
    "laplacedot": laplacedot,
    "polydot": polydot,
    "besseldot": besseldot,
    "anovadot": anovadot,
    "splinedot": splinedot,
}


def kernel_from_spec(spec: dict[str, Any]) -> Kernel:
    """Build a kernel from ``{"name": "rbfdot", "sigma": 0.5}`` (R's names).

    Parameters
    ----------
    spec : dict
        ``"name"``, one of kernlab's constructors, and its parameters.

    Returns
    -------
    Kernel

    Raises
    ------
    ValueError
        When the name is unknown.

    Examples
    --------
    >>> import kerndwd
    >>> kerndwd.kernels.kernel_from_spec({"name": "rbfdot", "sigma": 0.5})
    rbfdot(sigma=0.5)
    >>> kerndwd.rbfdot(0.5).to_spec()
    {'name': 'rbfdot', 'sigma': 0.5}
    """
    spec = dict(spec)
    name = spec.pop("name", None)
    if name not in _CONSTRUCTORS:
        raise ValueError(f"kernel name must be one of {sorted(_CONSTRUCTORS)}, got {name!r}")
    return _CONSTRUCTORS[name](**spec)


def kernel_matrix(kern: Kernel, x: ArrayLike, y: ArrayLike | None = None) -> NDArray[np.float64]:
    """The kernel matrix ``K[i, j] = k(x_i, y_j)`` (``y = x`` when omitted),
    as R's ``kernelMatrix``.

    Parameters
    ----------
    kern : Kernel
    x : array_like, shape (n, p)
    y : array_like, shape (m, p), optional

    Returns
    -------
    ndarray, shape (n, m)

    Raises
    ------
    TypeError
        When ``kern`` is not a kernel of :mod:`kerndwd.kernels`.
    ValueError
        When ``x`` and ``y`` have different numbers of columns.

    Examples
    --------
    >>> import numpy as np, kerndwd
    >>> kerndwd.kernel_matrix(kerndwd.vanilladot(), np.eye(2))
    array([[1., 0.],
           [0., 1.]])
    """
    if not isinstance(kern, Kernel):
        raise TypeError(f"kern must be a kernel from kerndwd.kernels, got {type(kern).__name__}"
                        + ("; kerndwd.userdot(func) makes one from a function" if callable(kern) else ""))
    return cast(NDArray[np.float64], kern(x, y))  # the default dtype


def sigest(x: ArrayLike, random_state: int | np.random.Generator | None = None) -> float:
    """A data-driven ``sigma`` for :func:`rbfdot`, as the R package's ``sigest``.

    Draws ``floor(n/2)`` pairs of rows with replacement, takes the non-zero
    squared distances between the pairs, and returns the mean of
    ``1/q_0.9`` and ``1/q_0.1`` of those distances (type-7 quantiles).  The
    draw is random: pass ``random_state`` (an int or a
    ``numpy.random.Generator``) for a reproducible value.  It cannot
    reproduce R's draw, which uses R's generator.

    Parameters
    ----------
    x : array_like, shape (n, p)
        At least two rows, finite.
    random_state : int, Generator or None

    Returns
    -------
    float
        A ``sigma`` for :func:`rbfdot`.

    Raises
    ------
    ValueError
        With fewer than two rows, non-finite values, or only identical rows drawn.

    Examples
    --------
    >>> import numpy as np, kerndwd
    >>> X = np.random.default_rng(0).standard_normal((100, 3))
    >>> sigma = kerndwd.sigest(X, random_state=0)
    >>> bool(0.05 < sigma < 2.0)
    True
    """
    arr = np.asarray(x, dtype=float)
    if arr.ndim != 2 or arr.shape[0] < 2:
        raise ValueError("x must be a 2-D array with at least two rows")
    if not np.isfinite(arr).all():
        raise ValueError("x must not contain NaN or infinite values")
    rng = np.random.default_rng(random_state)
    n = arr.shape[0]
    m = n // 2
    i = rng.integers(0, n, size=m)
    j = rng.integers(0, n, size=m)
    d2 = np.sum((arr[i] - arr[j]) ** 2, axis=1)
    d2 = d2[d2 != 0]
    if d2.size == 0:
        if (arr == arr[0]).all():
            raise ValueError("sigest: all rows of x are identical, so no distance is non-zero; give sigma explicitly")
        # the rows differ, but each of the m pairs (drawn with replacement)
        # paired rows that are equal, e.g. a row with itself
        raise ValueError(f"sigest: each of the {m} sampled pair(s) of rows has distance 0 (pairs are drawn with "
                         "replacement, so a row can be paired with itself), although x has distinct rows; give "
                         "sigma explicitly or another random_state")
    q90, q10 = np.quantile(d2, [0.9, 0.1])
    return float(np.mean([1.0 / q90, 1.0 / q10]))
