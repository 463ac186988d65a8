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
:class:`~kerndwd.engine.forms.FeatureMatrixForm`; its products upcast one block at a time, so the
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

from abc import abstractmethod

import numpy as np
from scipy import linalg

from ..._scalars import FLOAT_DTYPES, check_integer, float_dtype
from ..cache import available_memory, gib
from ..capabilities import DesignCapabilities
from ..feature_maps import LANDMARKS, SPECTRAL_SAMPLERS, FourierMap, NystroemMap
from ..forms import BLOCK_ELEMENTS, DenseLinearForm, FeatureMatrixForm, LinearForm, row_blocks
from ..kernel_checks import check_kernel_diagonal, kernel_diagonal
from ..majorisers.linear import LinearCholesky, LinearEigen
from ..predictors import FeaturePredictor
from ..progress import current as current_progress
from .base import Design, register_design
from .dask import DaskLinearForm, dask_feature_matrix, map_input

__all__ = ["FeatureDesign", "NystroemDesign", "FourierDesign", "LANDMARK_METHODS", "FEATURE_DTYPES",
           "DEFAULT_N_COMPONENTS"]

#: ``n_components`` when none is given (capped at the number of rows for Nystrom).
DEFAULT_N_COMPONENTS = 1000
#: How Nystrom landmarks are chosen (see :class:`NystroemDesign`).
LANDMARK_METHODS = ("uniform", "kmeans++", "leverage")
#: Storage types of the feature matrix.
FEATURE_DTYPES = FLOAT_DTYPES


class FeatureDesign(Design):
    """``f = b0 + phi(x)' theta`` for a feature map fitted on the training rows.

    Subclasses implement :meth:`fitted_map`; the MM step is the linear one
    (:class:`LinearEigen`, or :class:`LinearCholesky` when weighted) on the
    form of the feature matrix ``Phi = phi(X)`` (:meth:`feature_form`), which
    is formed once per set of rows and shared by every q and class fitted on
    them.

    For a Dask ``X`` the map is fitted on the client: ``fitted_map`` receives a
    :class:`~kerndwd.engine.designs.dask.DaskRowsView`, whose ``view[rows]``
    gathers just the rows asked for (landmarks, say); ``Phi`` is then formed
    chunk by chunk on the workers by the map's ``transform`` and kept there
    (:func:`~kerndwd.engine.designs.dask.dask_feature_matrix`), whatever
    :meth:`feature_form` does in memory.

    Parameters
    ----------
    random_state : int, numpy.random.Generator or None
        The face's seed, for maps that draw.
    **options
        The design's keyword options, among :attr:`option_names`.

    See Also
    --------
    kerndwd.engine.NystroemDesign, kerndwd.engine.FourierDesign

    Examples
    --------
    Explicit quadratic features ``phi(x) = (x, x**2)``, fitted as a linear
    DWD on them:

    >>> import numpy as np
    >>> from kerndwd import engine
    >>> class Squares:
    ...     def transform(self, rows):
    ...         rows = np.asarray(rows)
    ...         return np.hstack([rows, rows ** 2])
    >>> class QuadraticDesign(engine.FeatureDesign):
    ...     name = "quadratic"
    ...     def fitted_map(self, X, kern):
    ...         return Squares()
    >>> rng = np.random.default_rng(0)
    >>> X = rng.standard_normal((60, 2)); y = np.where((X ** 2).sum(axis=1) > 1.4, 1.0, -1.0)
    >>> problem = engine.Problem.from_arrays(X, y, [0.01], design=QuadraticDesign())
    >>> result, majoriser = engine.fit_path(problem)
    >>> result.alpha.shape  # intercept and four feature weights
    (5, 1)
    >>> f = majoriser.predictor.decision(X, result.alpha)[:, 0]
    >>> bool(np.mean(np.sign(f) == y) > 0.9)  # a circle is linear in x**2
    True
    """

    declared = DesignCapabilities(storage=("dense", "remote"), default_stop="kkt")

    def feature_form(self, fmap, X, weighted):
        """The linear form of the features of the rows ``X``: by default the
        dense ``Phi = fmap.transform(X)`` (with ``Z = [1, Phi]`` kept when
        unweighted).  Designs whose features need other storage override it.

        Parameters
        ----------
        fmap : object
            A fitted map (from :meth:`fitted_map`).
        X : ndarray, shape (n, p)
            The rows.
        weighted : bool
            Whether the loss is weighted.

        Returns
        -------
        Form
            Held to :class:`kerndwd.engine.forms.Form`.
        """
        Phi = fmap.transform(X)
        return LinearForm(Phi) if weighted else DenseLinearForm(Phi)

    @abstractmethod
    def fitted_map(self, X, kern):
        """A feature map fitted on the rows ``X``: an object whose
        ``transform(rows)`` returns their features, shape (len(rows), m).

        Parameters
        ----------
        X : ndarray or DaskRowsView, shape (n, p)
            The training rows (a view that gathers rows for a Dask ``X``).
        kern : Kernel
            The problem's kernel.

        Returns
        -------
        object
            With a ``transform(rows)`` method.
        """

    def majoriser(self, problem, cache):
        # a cache serves the fits of one problem, hence of this one design
        # a Dask X: the map is fitted on the client from the rows it asks for, the
        # features are formed and kept on the workers (engine/designs/dask.py)
        fmap = cache.memo("feature_map", lambda: self.fitted_map(map_input(problem.X), problem.kern))
        loss, gam = problem.loss, problem.gam
        if problem.storage == "remote":
            form = cache.memo("feature_form", lambda: DaskLinearForm(dask_feature_matrix(fmap, problem.X)))
        else:
            form = cache.memo(("feature_form", loss.weighted),
                              lambda: self.feature_form(fmap, problem.X, loss.weighted))
        predictor = FeaturePredictor(fmap, problem.p)
        if loss.weighted or problem.lambdas.size == 1:  # a factor per lambda; a path shares one eigh
            return LinearCholesky(form, loss, gam, predictor)
        gram_eig = lambda: cache.memo("gram_eigh", lambda: linalg.eigh(form.gram()))  # noqa: E731
        return LinearEigen(form, loss, gam, predictor, gram_eig=gram_eig)


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


class _StoredFeatureDesign(FeatureDesign):
    """Common options and storage of the designs below: ``n_components``,
    ``dtype`` of the stored features and ``chunk_size`` (rows per block when
    they are formed); one integer seed per design."""

    option_names = ("n_components", "dtype", "chunk_size")
    declared = DesignCapabilities(storage=("dense", "remote"), float32=True, default_stop="kkt")

    def __init__(self, random_state=None, **options):
        super().__init__(random_state=random_state, **options)
        name = f"approx={self.name!r}: "
        m = options.get("n_components")
        self.n_components = None if m is None else check_integer(m, name + "n_components", 1)
        self.dtype = float_dtype(options.get("dtype", "float64"))
        if self.dtype is None:
            raise ValueError(f"{name}dtype must be one of {list(FEATURE_DTYPES)}, got {options.get('dtype')!r}")
        chunk = options.get("chunk_size")
        self.chunk_size = None if chunk is None else check_integer(chunk, name + "chunk_size", 1)
        self.seed = _resolve_seed(random_state)
        self.random_state = self.seed  # what reproduces this design: fit(..., random_state=seed)

    @property
    def model_seed(self):
        return self.seed

    def system_bytes(self, n, storage):
        """Bytes the fit takes on ``n`` rows stored as ``storage``: the ``n x m``
        features (rows in memory; on a cluster the workers hold them) and about
        three ``(m + 1) x (m + 1)`` matrices (the Gram matrix, its factor or
        eigenvectors, a copy)."""
        m = self.components(n)
        features = 0.0 if storage == "remote" else float(n) * m * self.dtype.itemsize
        return features + 24.0 * (m + 1) ** 2

    def for_rows(self, n, p, kern, storage, weighted):
        """This design, refused where its system cannot fit the memory available
        (an allocation would fail deep in the fit): the message names
        ``n_components`` and the designs that fit ``m`` columns by blocks."""
        need, avail = self.system_bytes(n, storage), available_memory()
        if avail is not None and need > avail:
            m = self.components(n)
            raise ValueError(f"n_components: approx={self.name!r} with m = {m} columns on {n} rows takes "
                             f"{gib(need)} (the features and the (m + 1) x (m + 1) system), more than the "
                             f"{gib(avail)} available: pass solver='bcd' (sweeps over blocks of the columns, "
                             "O(n b + m b) memory) or solver='auto', or fewer n_components")
        return self

    def blas_work(self, problem):
        if problem.storage == "remote":
            return 0.0, 0.0  # the client solves (m + 1) systems; the workers set their own threads
        n, m = problem.n, self.components(problem.n)
        # the features and their Gram; a pass over them (n x m, formed in chunks by the
        # design's own threads) is not counted: a second BLAS thread lost at n = 5000, m = 1000
        return 2.0 * n * m * max(m, problem.p), 0.0

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
        rows = self.chunk_size or max(1, BLOCK_ELEMENTS // max(m, X.shape[1]))
        Phi = np.empty((n, m), dtype=self.dtype)
        blocks = row_blocks(n, rows)
        monitor = current_progress()
        for k, (start, stop) in enumerate(blocks, start=1):
            Phi[start:stop] = fmap.transform(X[start:stop])
            if monitor is not None:
                monitor.chunks_formed(k, len(blocks))
        return FeatureMatrixForm(Phi)


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
    declared = DesignCapabilities(storage=("dense", "remote"), float32=True, kernel_checks=True, default_stop="kkt")

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
        if isinstance(X, np.ndarray):  # rows in memory: k(x, x) on every one (NystroemMap checks the landmarks')
            check_kernel_diagonal(kernel_diagonal(kern, X), kern)
        rows = LANDMARKS[self.landmarks](X, kern, m, self.rng())
        return NystroemMap(kern, X[rows])


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
        A kernel other than ``rbfdot`` or ``laplacedot`` (at the entry, from the
        compatibility check), ``n_components < 1``, an unknown ``dtype``.

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
    declared = DesignCapabilities(storage=("dense", "remote"), kernels=tuple(sorted(SPECTRAL_SAMPLERS)), float32=True,
                                  default_stop="kkt")

    def fitted_map(self, X, kern):
        m = self.components(X.shape[0])
        rng = self.rng()
        frequencies = SPECTRAL_SAMPLERS[kern.name](kern.sigma, X.shape[1], m, rng)
        phases = rng.uniform(0.0, 2.0 * np.pi, m)
        return FourierMap(frequencies, phases)


register_design(NystroemDesign)
register_design(FourierDesign)
