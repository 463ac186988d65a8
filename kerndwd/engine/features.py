"""Kernel approximations as designs: Nystrom features and random Fourier features.

Both replace the ``n x n`` kernel matrix by an explicit feature map
``phi: R^p -> R^m`` fitted on the training rows, so that
``k(x, y) ~ phi(x)' phi(y)`` and the fit is ``f = b0 + phi(x)' theta`` with
``||f||^2 = theta' theta``.  The MM step is then the linear one (Algorithm 1,
or its weighted version) on ``Z = [1, Phi]``: an ``(m+1) x (m+1)`` system per
lambda and two products with ``Phi`` per pass, never anything of size
``n x n``.

* ``approx="nystroem"`` (:class:`NystroemDesign`): ``m`` landmark rows ``L``
  of the training data (uniform, kernel k-means++ or ridge leverage-score
  sampling) and ``phi(x) = k(x, L) U diag(e)^(-1/2)`` over the eigenpairs
  ``(e, U)`` of ``K_LL`` (Williams & Seeger 2001); any kernel of
  :mod:`kerndwd.kernels`.
* ``approx="rff"`` (:class:`FourierDesign`): random Fourier features
  ``phi(x) = sqrt(2/m) cos(W'x + b)`` (Rahimi & Recht 2007) for ``rbfdot``
  and ``laplacedot``.

The feature matrix ``Phi`` of the training rows is formed in row blocks and
stored once, as float64 or (``dtype="float32"``) float32, in a
:class:`FeatureMatrixForm`; its products upcast one block at a time, so the
optimisation runs in float64 either way.  Memory is ``n m`` numbers of that
dtype plus ``O(m^2)``.

Randomness: each design turns its ``random_state`` into one integer seed
when it is created, and every feature map it fits (the whole data, or one
cross-validation fold) draws from a fresh generator with that seed.  A
fold's map is therefore the map that :func:`kerndwd.fit` with the same
integer ``random_state`` fits on that fold's rows, whether folds run in
order or in parallel.
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor

import numpy as np
from scipy import linalg

from .._scalars import check_integer
from .designs import FeatureDesign, register_design
from .forms import LinearForm

__all__ = ["NystroemDesign", "FourierDesign", "NystroemMap", "FourierMap", "FeatureMatrixForm",
           "LANDMARK_METHODS", "FEATURE_DTYPES", "DEFAULT_N_COMPONENTS", "nystroem_cutoff",
           "uniform_landmarks", "kmeanspp_landmarks", "leverage_landmarks"]

#: ``n_components`` when none is given (capped at the number of rows for Nystrom).
DEFAULT_N_COMPONENTS = 1000
#: How Nystrom landmarks are chosen (see :class:`NystroemDesign`).
LANDMARK_METHODS = ("uniform", "kmeans++", "leverage")
#: Storage types of the feature matrix.
FEATURE_DTYPES = ("float64", "float32")
#: Numbers of one block when features are formed: ``chunk_size`` defaults to
#: this divided by ``m`` (about 16 MB of float64 per block).
_BLOCK_ELEMENTS = 1 << 21
#: Rows per block of a product with a float32 feature matrix: the float64
#: copy of a block (``m`` columns) stays in a core's cache.
_PRODUCT_BLOCK_BYTES = 1 << 19


def _resolve_seed(random_state):
    """One integer seed from ``random_state``: an int is used as it is; a
    Generator gives one draw (so cross-validation's generator, shared with
    the folds and ``sigest``, seeds the design reproducibly); None draws
    from fresh entropy."""
    if isinstance(random_state, (int, np.integer)) and not isinstance(random_state, (bool, np.bool_)):
        if random_state < 0:
            raise ValueError(f"random_state must be a non-negative integer, got {random_state}")
        return int(random_state)
    if isinstance(random_state, np.random.RandomState):
        return int(random_state.randint(np.iinfo(np.int32).max))
    try:
        rng = np.random.default_rng(random_state)
    except (TypeError, ValueError):
        raise TypeError(f"random_state must be None, an int or a numpy Generator, got {random_state!r}") from None
    return int(rng.integers(np.iinfo(np.int64).max))


def _row_blocks(n, rows):
    return [(start, min(start + rows, n)) for start in range(0, n, rows)]


# --------------------------------------------------------------------------
# the stored feature matrix
# --------------------------------------------------------------------------
class FeatureMatrixForm(LinearForm):
    """``f = b0 + Phi theta`` with ``Phi`` stored once, float64 or float32.

    Unlike :class:`~kerndwd.engine.forms.DenseLinearForm` no copy
    ``Z = [1, Phi]`` is kept: the intercept is added to (or summed out of)
    each product.  A float64 ``Phi`` is multiplied by BLAS directly.  A
    float32 ``Phi`` is multiplied block by block: each block of rows is
    copied into a float64 buffer that fits in cache and multiplied there, so
    every sum is accumulated in float64 and memory grows by one buffer per
    thread.  The blocks are shared among ``n_threads`` threads (numpy
    releases the GIL in the copy and in BLAS).

    Parameters
    ----------
    Phi : ndarray, shape (n, m), float64 or float32
        The features of the training rows (not copied; never modified).
    n_threads : int, optional
        Threads for the float32 products (default: the number of CPUs).
    block_rows : int, optional
        Rows per block of the float32 products (default: a float64 block of
        about 512 KB, which stays in a core's cache).

    Examples
    --------
    >>> import numpy as np
    >>> Phi = np.arange(6.0).reshape(3, 2)
    >>> form = FeatureMatrixForm(Phi.astype(np.float32))
    >>> form.zmul(np.array([1.0, 1.0, -1.0]))
    array([0., 0., 0.])
    >>> form.ztmul(np.ones(3))
    array([3., 6., 9.])
    """

    def __init__(self, Phi, n_threads=None, block_rows=None):
        if Phi.dtype not in (np.float64, np.float32) or Phi.ndim != 2:
            raise TypeError(f"Phi must be a 2-D float64 or float32 array, got {Phi.dtype} of shape {Phi.shape}")
        super().__init__(Phi)
        self.upcast = Phi.dtype != np.float64
        rows = block_rows or max(16, _PRODUCT_BLOCK_BYTES // (8 * max(self.p, 1)))
        self._blocks = _row_blocks(self.n, rows)
        self.n_threads = max(1, min(os.cpu_count() or 1, len(self._blocks))) if n_threads is None else int(n_threads)
        self._pool = None

    def __getstate__(self):  # a thread pool does not pickle; a copy makes its own
        state = self.__dict__.copy()
        state["_pool"] = None
        return state

    def _map_blocks(self, work):
        """``work(start, stop, buffer)`` over every block, the blocks split into
        one contiguous run per thread; returns the per-thread results."""
        runs = np.array_split(np.arange(len(self._blocks)), self.n_threads)

        def run(indices):
            if indices.size == 0:
                return None
            rows = max(self._blocks[i][1] - self._blocks[i][0] for i in indices)
            buffer = np.empty((rows, self.p))
            out = None
            for i in indices:
                start, stop = self._blocks[i]
                block = buffer[:stop - start]
                block[...] = self.B[start:stop]
                res = work(start, stop, block)
                if res is None:
                    continue
                if out is None:
                    out = res
                else:
                    out += res
            return out

        if self.n_threads == 1:
            return [run(runs[0])]
        if self._pool is None:
            self._pool = ThreadPoolExecutor(self.n_threads)
        return list(self._pool.map(run, runs))

    def apply(self, theta):
        if not self.upcast:
            return self.B @ theta
        out = np.empty(self.n)

        def work(start, stop, block):
            np.dot(block, theta, out=out[start:stop])

        self._map_blocks(work)
        return out

    def apply_t(self, z):
        if not self.upcast:
            return self.B.T @ z
        parts = self._map_blocks(lambda start, stop, block: z[start:stop] @ block)
        return sum(p for p in parts if p is not None)

    def gram(self, weights=None):
        p = self.p
        G = np.zeros((p + 1, p + 1))
        w = np.ones(self.n) if weights is None else weights
        G[0, 0] = w.sum()
        # BLAS-3 sized blocks (float64 copies only when upcasting)
        rows = max(256, _BLOCK_ELEMENTS // max(p, 1))
        for start, stop in _row_blocks(self.n, rows):
            block = np.asarray(self.B[start:stop], dtype=float)
            wb = block if weights is None else block * w[start:stop, None]
            G[0, 1:] += w[start:stop] @ block
            G[1:, 1:] += block.T @ wb
        G[1:, 0] = G[0, 1:]
        return G

    def weighted_sq_norms(self, weights):
        out = np.empty(self.p + 1)
        out[0] = weights.sum()
        out[1:] = 0.0
        rows = max(256, _BLOCK_ELEMENTS // max(self.p, 1))
        for start, stop in _row_blocks(self.n, rows):
            block = np.asarray(self.B[start:stop], dtype=float)
            out[1:] += weights[start:stop] @ (block * block)
        return out


# --------------------------------------------------------------------------
# feature maps (what a fitted path stores)
# --------------------------------------------------------------------------
def nystroem_cutoff(m):
    """Relative eigenvalue cutoff of ``K_LL`` for ``m`` landmarks: ``m`` times
    the float64 machine epsilon.

    A computed eigenvalue of the symmetric ``K_LL`` is accurate only to about
    ``eps ||K_LL||_2`` per entry summed over ``m`` of them (the backward error
    of the kernel entries and of ``eigh``), which is also numpy's default
    tolerance for ``matrix_rank``.  Eigenvalues below ``m eps e_max`` are
    rounding, not kernel; keeping them would scale that rounding by
    ``e^(-1/2)`` in every feature.  Dropping them changes the approximate
    kernel ``phi(x)' phi(y)`` by at most that rounding level.
    """
    return m * np.finfo(float).eps


class NystroemMap:
    """``phi(x) = k(x, L) P``, ``P = U_r diag(e_r)^(-1/2)`` over the eigenpairs of
    ``K_LL`` above :func:`nystroem_cutoff` (Williams & Seeger 2001).

    On the landmarks themselves ``phi(L) phi(L)' = K_LL`` (to the cutoff),
    and ``phi(x)' phi(y) = k(x, L) K_LL^+ k(L, y)`` in general.

    Parameters
    ----------
    kern : Kernel
    landmarks : ndarray, shape (m, p)
        The landmark rows (copied).

    Attributes
    ----------
    landmarks : ndarray, shape (m, p)
    projection : ndarray, shape (m, r)
        ``P``; ``r <= m`` components survive the cutoff.
    eigenvalues : ndarray, shape (r,)
        The kept eigenvalues of ``K_LL``, decreasing.
    n_components : int
        ``r``, the number of features.

    Raises
    ------
    ValueError
        When no eigenvalue of ``K_LL`` is positive above the cutoff.

    Examples
    --------
    >>> import numpy as np
    >>> from kerndwd import rbfdot
    >>> X = np.random.default_rng(0).standard_normal((40, 2))
    >>> fmap = NystroemMap(rbfdot(0.5), X)
    >>> Phi = fmap.transform(X)
    >>> bool(np.abs(Phi @ Phi.T - rbfdot(0.5)(X)).max() < 1e-10)
    True
    """

    def __init__(self, kern, landmarks):
        self.kern = kern
        self.landmarks = np.array(landmarks, dtype=float, order="C", copy=True)
        m = self.landmarks.shape[0]
        evals, evecs = linalg.eigh(kern(self.landmarks))
        top = evals[-1] if evals.size else 0.0
        if not top > 0:
            raise ValueError("the kernel matrix of the Nystrom landmarks has no positive eigenvalue; "
                             "choose another kernel or other landmarks")
        keep = evals > nystroem_cutoff(m) * top
        order = np.flatnonzero(keep)[::-1]  # decreasing
        self.eigenvalues = evals[order]
        self.projection = evecs[:, order] / np.sqrt(self.eigenvalues)
        self.n_components = self.projection.shape[1]

    def transform(self, X):
        """Features of the rows of ``X``, shape (len(X), n_components), float64."""
        return self.kern(X, self.landmarks) @ self.projection


class FourierMap:
    """``phi(x) = sqrt(2/m) cos(W'x + b)``: random Fourier features (Rahimi &
    Recht 2007).  For a shift-invariant kernel ``k(x - y) = E[cos(w'(x - y))]``
    with ``w`` drawn from its spectral density and ``b ~ U[0, 2 pi]``,
    ``E[phi(x)' phi(y)] = k(x - y)``.

    Parameters
    ----------
    frequencies : ndarray, shape (p, m)
        ``W``, one column per feature.
    phases : ndarray, shape (m,)
        ``b``.

    Examples
    --------
    >>> import numpy as np
    >>> fmap = FourierMap(np.zeros((2, 4)), np.zeros(4))
    >>> fmap.transform(np.ones((1, 2)))  # sqrt(2/4) cos(0)
    array([[0.70710678, 0.70710678, 0.70710678, 0.70710678]])
    """

    def __init__(self, frequencies, phases):
        self.frequencies = np.array(frequencies, dtype=float, order="C", copy=True)
        self.phases = np.array(phases, dtype=float, copy=True)
        self.n_components = self.frequencies.shape[1]
        self.scale = np.sqrt(2.0 / self.n_components)

    def transform(self, X):
        """Features of the rows of ``X``, shape (len(X), n_components), float64."""
        out = np.asarray(X, dtype=float) @ self.frequencies
        out += self.phases
        np.cos(out, out=out)
        out *= self.scale
        return out


def rbf_frequencies(sigma, p, m, rng):
    """Frequencies of ``exp(-sigma |x - y|^2)``: its spectral density is
    ``N(0, 2 sigma I_p)`` (the Gaussian ``exp(-|d|^2 / (2 s^2))`` has
    ``N(0, s^-2 I)``, and ``1 / (2 s^2) = sigma``).  Shape (p, m)."""
    return np.sqrt(2.0 * sigma) * rng.standard_normal((p, m))


def laplace_frequencies(sigma, p, m, rng):
    """Frequencies of kernlab's ``exp(-sigma |x - y|)`` (Euclidean norm): the
    multivariate Cauchy density ``c (1 + |w|^2 / sigma^2)^(-(p+1)/2)``,
    sampled as ``w = sigma g / |h|``, ``g ~ N(0, I_p)``, ``h ~ N(0, 1)``.

    Derivation: given ``h``, ``w ~ N(0, (sigma / h)^2 I)``, so
    ``E[cos(w'd) | h] = exp(-sigma^2 |d|^2 / (2 h^2))``; averaging over
    ``h ~ N(0, 1)`` with ``int_0^inf exp(-a / (2 h^2) - h^2 / 2) dh =
    sqrt(pi / 2) exp(-sqrt(a))`` gives ``E[cos(w'd)] = exp(-sigma |d|)``.
    (``w`` is multivariate t with one degree of freedom and scale ``sigma``.)
    Shape (p, m)."""
    g = rng.standard_normal((p, m))
    h = np.abs(rng.standard_normal(m))
    h = np.maximum(h, np.finfo(float).tiny)  # h = 0 has probability 0; never divide by it
    return sigma * g / h


#: Kernels with random Fourier features: name -> frequency sampler.
_SPECTRAL_SAMPLERS = {"rbfdot": rbf_frequencies, "laplacedot": laplace_frequencies}


# --------------------------------------------------------------------------
# landmarks
# --------------------------------------------------------------------------
def _kernel_diag(kern, X, rows=128):
    """``k(x_i, x_i)`` for every row, from small diagonal blocks of the kernel."""
    out = np.empty(X.shape[0])
    for start, stop in _row_blocks(X.shape[0], rows):
        out[start:stop] = np.diag(kern(X[start:stop]))
    return out


def uniform_landmarks(X, kern, m, rng):
    """``m`` distinct rows drawn uniformly without replacement (their indices, sorted)."""
    return np.sort(rng.choice(X.shape[0], size=m, replace=False))


def kmeanspp_landmarks(X, kern, m, rng):
    """``m`` rows by k-means++ seeding in the kernel's feature space (D^2
    sampling; Arthur & Vassilvitskii 2007, used for Nystrom landmarks by
    Oglic & Gartner 2017): the first uniformly, each next one with
    probability proportional to its squared feature-space distance
    ``k(x, x) + k(c, c) - 2 k(x, c)`` to the nearest landmark chosen so far.
    Chosen rows (and their duplicates) have distance 0 and are not drawn
    again.  Costs ``m`` kernel columns, ``O(n m p)``.  Returns indices."""
    n = X.shape[0]
    diag = _kernel_diag(kern, X)
    chosen = np.empty(m, dtype=np.intp)
    chosen[0] = rng.integers(n)
    dist = np.full(n, np.inf)
    for j in range(m):
        if j > 0:
            cumulative = np.cumsum(dist)
            total = cumulative[-1]
            if total > 0:
                chosen[j] = min(int(np.searchsorted(cumulative, rng.random() * total, side="right")), n - 1)
            else:  # every row coincides with a landmark: the rest uniformly among the others
                rest = np.setdiff1d(np.arange(n), chosen[:j])
                chosen[j:] = rng.choice(rest, size=m - j, replace=False)
                break
        c = chosen[j]
        d = diag + diag[c] - 2.0 * kern(X, X[c:c + 1])[:, 0]
        np.maximum(d, 0.0, out=d)
        d[c] = 0.0
        np.minimum(dist, d, out=dist)
    return np.sort(chosen)


def _effective_dimension(mu, ridge):
    return float(np.sum(mu / (mu + ridge)))


def leverage_landmarks(X, kern, m, rng, block_rows=None):
    """``m`` rows sampled without replacement with probabilities proportional
    to approximate ridge leverage scores (Alaoui & Mahoney 2015; Musco &
    Musco 2017).

    A uniform sketch ``S`` of ``s = m`` rows gives, for each row ``i``,

        tau_i = (k_ii - k_iS (K_SS + (s/n) lam I)^-1 k_Si) / lam,

    the ridge leverage score ``[K (K + lam I)^-1]_ii`` with ``K`` replaced by
    its Nystrom approximation on ``S`` (Musco & Musco 2017, section 3, with
    uniform sampling probabilities ``s/n``).  The ridge ``lam`` is set where
    the effective dimension ``sum_j mu_j / (mu_j + lam)`` of the sketch's
    eigenvalues ``mu = (n/s) eig(K_SS)`` is ``m / log(m)``: ``m`` leverage
    samples then cover that dimension with the ``log`` oversampling of their
    guarantee.  Rows badly explained by the sketch (isolated clusters) get
    high scores.  The sample without replacement uses Gumbel keys
    ``log(tau_i) + G_i`` and keeps the ``m`` largest (equivalent to drawing
    one row at a time with probability proportional to ``tau``).  Cost:
    ``n s`` kernel values and ``O(n s^2)`` flops.  Returns indices.
    """
    n = X.shape[0]
    s = m
    sketch = np.sort(rng.choice(n, size=s, replace=False))
    e, V = linalg.eigh(kern(X[sketch]))
    e = np.maximum(e, 0.0)
    mu = (n / s) * e
    top = mu.max()
    if m < 3 or not top > 0:
        return uniform_landmarks(X, kern, m, rng)
    target = m / np.log(m)
    lo, hi = np.log(top * np.finfo(float).eps), np.log(top)
    for _ in range(100):  # bisection on log(lam): the effective dimension falls as lam grows
        mid = 0.5 * (lo + hi)
        if _effective_dimension(mu, np.exp(mid)) > target:
            lo = mid
        else:
            hi = mid
    ridge = np.exp(hi)
    scale = V / np.sqrt(e + (s / n) * ridge)  # (K_SS + c I)^-1 = scale scale'
    rows = block_rows or max(256, _BLOCK_ELEMENTS // s)
    scores = np.empty(n)
    diag = _kernel_diag(kern, X)
    for start, stop in _row_blocks(n, rows):
        B = kern(X[start:stop], X[sketch]) @ scale
        scores[start:stop] = diag[start:stop] - np.einsum("ij,ij->i", B, B)
    scores = np.maximum(scores, 0.0) / ridge
    tiny = np.finfo(float).tiny
    keys = np.log(scores + tiny) + rng.gumbel(size=n)
    return np.sort(np.argpartition(-keys, m - 1)[:m])


_LANDMARKS = {"uniform": uniform_landmarks, "kmeans++": kmeanspp_landmarks, "leverage": leverage_landmarks}


# --------------------------------------------------------------------------
# the designs
# --------------------------------------------------------------------------
class _StoredFeatureDesign(FeatureDesign):
    """Common options and storage of the designs below: ``n_components``,
    ``dtype`` of the stored features and ``chunk_size`` (rows per block when
    they are formed); one integer seed per design."""

    option_names = ("n_components", "dtype", "chunk_size")

    def __init__(self, random_state=None, **options):
        super().__init__(random_state=random_state, **options)
        name = f"approx={self.name!r}: "
        m = options.get("n_components")
        self.n_components = None if m is None else check_integer(m, name + "n_components", 1)
        dtype = options.get("dtype", "float64")
        try:
            dtype = np.dtype(dtype).name
        except TypeError:
            dtype = None
        if dtype not in FEATURE_DTYPES:
            raise ValueError(f"{name}dtype must be one of {list(FEATURE_DTYPES)}, got {options.get('dtype')!r}")
        self.dtype = np.dtype(dtype)
        chunk = options.get("chunk_size")
        self.chunk_size = None if chunk is None else check_integer(chunk, name + "chunk_size", 1)
        self.seed = _resolve_seed(random_state)
        self.random_state = self.seed  # what reproduces this design: fit(..., random_state=seed)

    def components(self, n):
        """The number of features to fit on ``n`` rows."""
        return DEFAULT_N_COMPONENTS if self.n_components is None else self.n_components

    def rng(self):
        """A fresh generator with the design's seed (one per fitted map)."""
        return np.random.default_rng(self.seed)

    def feature_form(self, fmap, X, weighted):
        """``Phi = phi(X)`` formed in blocks of ``chunk_size`` rows straight into
        its storage of type ``dtype``, in a :class:`FeatureMatrixForm` (no
        ``[1, Phi]`` copy, weighted or not)."""
        n, m = X.shape[0], fmap.n_components
        rows = self.chunk_size or max(1, _BLOCK_ELEMENTS // max(m, X.shape[1]))
        Phi = np.empty((n, m), dtype=self.dtype)
        for start, stop in _row_blocks(n, rows):
            Phi[start:stop] = fmap.transform(X[start:stop])
        return FeatureMatrixForm(Phi)


@register_design
class NystroemDesign(_StoredFeatureDesign):
    """Nystrom features, ``approx="nystroem"``: ``phi(x) = k(x, L) U diag(e)^(-1/2)``
    over ``m`` landmark rows ``L`` of the training data (:class:`NystroemMap`).

    Any kernel of :mod:`kerndwd.kernels`.  With ``m = n`` landmarks (all the
    training rows) ``Phi Phi' = K`` and the fit is the exact kernel fit; with
    fewer it is the exact fit for the kernel ``k(x, L) K_LL^+ k(L, y)``.

    Parameters
    ----------
    random_state : int, numpy Generator or None
        Seeds the landmarks (see the module docstring).
    n_components : int, default ``min(1000, n)``
        ``m``, the number of landmarks; ``1 <= m <= n``.  Eigenvalues of
        ``K_LL`` below :func:`nystroem_cutoff` are dropped, so the features
        may be fewer.
    landmarks : {"uniform", "kmeans++", "leverage"}, default "uniform"
        :func:`uniform_landmarks`, :func:`kmeanspp_landmarks` (kernel
        k-means++ seeding) or :func:`leverage_landmarks` (approximate ridge
        leverage scores).
    dtype : {"float64", "float32"}, default "float64"
        Storage of the feature matrix (float32 halves its memory; products
        are still accumulated in float64).
    chunk_size : int, optional
        Rows per block when features are formed (default: about 16 MB of
        kernel values per block).

    Raises
    ------
    ValueError
        ``n_components`` below 1 or above the number of rows of the fit, an
        unknown ``landmarks`` or ``dtype``.
    TypeError
        An option it does not know (raised by :class:`~kerndwd.engine.designs.Design`).

    Examples
    --------
    >>> import numpy as np, kerndwd
    >>> rng = np.random.default_rng(0)
    >>> X = rng.standard_normal((300, 2))
    >>> y = np.where(X[:, 0] * X[:, 1] > 0, 1, -1)
    >>> path = kerndwd.fit(X, y, [0.1, 0.01], kern=kerndwd.rbfdot(1.0), approx="nystroem",
    ...                    n_components=50, random_state=0)
    >>> path.alpha.shape  # intercept and one weight per feature
    (51, 2)
    >>> bool((path.predict(X)[:, 1] == y).mean() > 0.9)
    True
    """

    name = "nystroem"
    option_names = _StoredFeatureDesign.option_names + ("landmarks",)

    def __init__(self, random_state=None, **options):
        super().__init__(random_state=random_state, **options)
        method = options.get("landmarks", "uniform")
        if not isinstance(method, str) or method not in LANDMARK_METHODS:
            raise ValueError(f"approx='nystroem': landmarks must be one of {list(LANDMARK_METHODS)}, got {method!r}")
        self.landmarks = method

    def components(self, n):
        """The number of landmarks to fit on ``n`` rows.

        Parameters
        ----------
        n : int
            Rows of the fit.

        Returns
        -------
        int
            ``n_components``, or ``min(DEFAULT_N_COMPONENTS, n)`` when unset.

        Raises
        ------
        ValueError
            When ``n_components`` exceeds ``n`` (the landmarks are training rows).
        """
        if self.n_components is None:
            return min(DEFAULT_N_COMPONENTS, n)
        if self.n_components > n:
            raise ValueError(f"approx='nystroem': n_components={self.n_components} exceeds the number of rows "
                             f"of the fit ({n}); the landmarks are training rows")
        return self.n_components

    def prepare(self, problem, cache, folds):
        # refuse before any fold is fitted when a fold has too few rows
        self.components(min(train.size for train, _ in folds))

    def fitted_map(self, X, kern):
        m = self.components(X.shape[0])
        rows = _LANDMARKS[self.landmarks](X, kern, m, self.rng())
        return NystroemMap(kern, X[rows])


@register_design
class FourierDesign(_StoredFeatureDesign):
    """Random Fourier features, ``approx="rff"``: ``phi(x) = sqrt(2/m) cos(W'x + b)``
    (:class:`FourierMap`) for ``rbfdot`` (``W ~ N(0, 2 sigma I)``,
    :func:`rbf_frequencies`) and ``laplacedot`` (multivariate Cauchy,
    :func:`laplace_frequencies`).

    ``E[phi(x)' phi(y)] = k(x, y)`` with an error of order ``m^(-1/2)``;
    the frequencies do not depend on the data, so every fold of a
    cross-validation with the same seed uses the same ones.

    Parameters
    ----------
    random_state : int, numpy Generator or None
        Seeds the frequencies and phases.
    n_components : int, default 1000
        ``m``, the number of features (any ``m >= 1``).
    dtype, chunk_size
        As for :class:`NystroemDesign`.

    Raises
    ------
    ValueError
        A kernel other than ``rbfdot`` or ``laplacedot`` (at the entry, from
        :meth:`check_kernel`), ``n_components < 1``, an unknown ``dtype``.

    Examples
    --------
    >>> import numpy as np, kerndwd
    >>> rng = np.random.default_rng(0)
    >>> X = rng.standard_normal((300, 2))
    >>> y = np.where((X ** 2).sum(axis=1) > 1.4, 1, -1)
    >>> path = kerndwd.fit(X, y, [0.01], kern=kerndwd.rbfdot(0.5), approx="rff", n_components=200,
    ...                    random_state=0)
    >>> bool((path.predict(X)[:, 0] == y).mean() > 0.9)
    True
    """

    name = "rff"

    def check_kernel(self, kern):
        """Accept only kernels with a known spectral density.

        Parameters
        ----------
        kern : Kernel
            The problem's kernel.

        Raises
        ------
        ValueError
            For a kernel without a known spectral density (use
            ``approx="nystroem"`` for those).
        """
        if getattr(kern, "name", None) not in _SPECTRAL_SAMPLERS:
            raise ValueError(f"approx='rff' needs a kernel with a known spectral density "
                             f"({', '.join(sorted(_SPECTRAL_SAMPLERS))}), got kern={kern!r}; "
                             "use approx='nystroem' for other kernels")

    def fitted_map(self, X, kern):
        m = self.components(X.shape[0])
        rng = self.rng()
        frequencies = _SPECTRAL_SAMPLERS[kern.name](kern.sigma, X.shape[1], m, rng)
        phases = rng.uniform(0.0, 2.0 * np.pi, m)
        return FourierMap(frequencies, phases)
