"""Feature maps of kernel approximations, and how Nystrom landmarks are chosen.

* :class:`NystroemMap`: ``phi(x) = k(x, L) U diag(e)^(-1/2)`` over the
  eigenpairs of the landmarks' kernel matrix ``K_LL`` (Williams & Seeger 2001);
* :class:`FourierMap`: random Fourier features ``phi(x) = sqrt(2/m) cos(W'x + b)``
  (Rahimi & Recht 2007), with the spectral samplers of ``rbfdot`` and
  ``laplacedot``;
* landmarks: uniform, kernel k-means++ seeding, approximate ridge leverage scores.

A fitted path stores its map (:class:`kerndwd.engine.predictors.FeaturePredictor`);
the designs that fit them are in :mod:`kerndwd.engine.designs.features`.
"""

from __future__ import annotations

import numpy as np
from scipy import linalg

from .forms import BLOCK_ELEMENTS, row_blocks
from .kernel_checks import check_definite, check_kernel_matrix, kernel_diagonal, quiet_kernel

__all__ = ["NystroemMap", "FourierMap", "nystroem_cutoff", "rbf_frequencies", "laplace_frequencies",
           "SPECTRAL_SAMPLERS", "LANDMARKS", "uniform_landmarks", "kmeanspp_landmarks", "leverage_landmarks"]


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
        K = check_kernel_matrix(quiet_kernel(kern, self.landmarks), kern)
        check_definite(K, kern)  # a kernel indefinite on the landmarks is indefinite on the rows
        evals, evecs = linalg.eigh(K)
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

    def transform_columns(self, X, start, stop, dtype=np.float64):
        """Features ``start:stop`` of the rows of ``X``, shape (len(X), stop - start):
        the columns ``start:stop`` of :meth:`transform` (to rounding), formed from
        those frequencies only, so that a block of features costs
        ``O(len(X) (stop - start) p)`` whatever ``n_components``.

        With ``dtype=float32`` the features are formed to float32 precision
        (``6e-8``, the rounding of float32 storage): the phases ``w'x + b`` in
        float64, reduced to ``[-pi, pi]`` in float64, and their cosine in float32,
        which numpy vectorises (about 1 ns a value here, against 24 ns for the
        float64 cosine, which dominates a block); returned as float32.

        Examples
        --------
        >>> import numpy as np
        >>> rng = np.random.default_rng(0)
        >>> fmap = FourierMap(rng.standard_normal((3, 10)), rng.uniform(0, 6, 10))
        >>> X = rng.standard_normal((5, 3))
        >>> bool(np.allclose(fmap.transform_columns(X, 2, 6), fmap.transform(X)[:, 2:6], rtol=0, atol=1e-12))
        True
        >>> low = fmap.transform_columns(X, 2, 6, dtype=np.float32)
        >>> low.dtype, bool(np.abs(low - fmap.transform(X)[:, 2:6]).max() < 1e-6)
        (dtype('float32'), True)
        """
        out = np.asarray(X, dtype=float) @ self.frequencies[:, start:stop]
        out += self.phases[start:stop]
        if np.dtype(dtype) == np.float32:
            turns = np.rint(out * (0.5 / np.pi))
            out -= turns * (2.0 * np.pi)  # |out| <= pi (a few ulps beyond), to float64 accuracy
            low = out.astype(np.float32)
            np.cos(low, out=low)
            low *= np.float32(self.scale)
            return low
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
SPECTRAL_SAMPLERS = {"rbfdot": rbf_frequencies, "laplacedot": laplace_frequencies}



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
    diag = kernel_diagonal(kern, X)
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
    rows = block_rows or max(256, BLOCK_ELEMENTS // s)
    scores = np.empty(n)
    diag = kernel_diagonal(kern, X)
    for start, stop in row_blocks(n, rows):
        B = kern(X[start:stop], X[sketch]) @ scale
        scores[start:stop] = diag[start:stop] - np.einsum("ij,ij->i", B, B)
    scores = np.maximum(scores, 0.0) / ridge
    tiny = np.finfo(float).tiny
    keys = np.log(scores + tiny) + rng.gumbel(size=n)
    return np.sort(np.argpartition(-keys, m - 1)[:m])


LANDMARKS = {"uniform": uniform_landmarks, "kmeans++": kmeanspp_landmarks, "leverage": leverage_landmarks}
