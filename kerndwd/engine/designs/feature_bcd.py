"""Kernel approximations by block coordinate descent: ``approx=`` with ``solver="bcd"``.

``approx="rff"`` or ``approx="nystroem"`` together with ``solver="bcd"``
fit the approximation's model by sweeps over blocks of its columns
(:class:`kerndwd.engine.majorisers.feature_blocks.FeatureBlockCoordinate`),
so that ``m`` features or landmarks need neither the ``n x m`` feature
matrix nor the ``(m+1) x (m+1)`` system of the in-memory designs
(:mod:`kerndwd.engine.designs.features`): memory is ``O(n b + m b)`` for
blocks of ``b`` columns, plus ``n m`` numbers when the columns are cached.
On rows held by a Dask cluster the same sweeps run beside the row chunks
(:mod:`kerndwd.engine.designs.dask_feature_bcd`).

How the combination is named: the registry holds one design per name, and
the names ``"rff"`` and ``"nystroem"`` stay the in-memory designs'.  The
input layer maps ``approx=name, solver="bcd"`` to
:func:`feature_block_design`, which builds the block variant of the
registered approximation (:data:`BLOCK_DESIGNS`); the variant keeps the
approximation's name, options and seed (so the same ``random_state`` draws
the same frequencies or landmarks) and records ``solver="bcd"`` among its
options, which is how cross-validation's ``fit_args`` and a fit's
fingerprint name it.

* ``approx="rff", solver="bcd"`` (:class:`FourierBlockDesign`): the model of
  ``approx="rff"`` (the same frequencies for the same seed), features formed
  a block of columns at a time from the rows, ``cos(X W_J + b_J) sqrt(2/m)``.
* ``approx="nystroem", solver="bcd"`` (:class:`NystroemBlockDesign`): the
  same landmarks as ``approx="nystroem"``, and its model written on the
  landmarks' kernel functions, ``f = b0 + k(x, L) beta`` with penalty
  ``beta' K_LL beta``, instead of the features ``k(x, L) K_LL^(-1/2)``: the
  same functions and penalty without the ``m x m`` eigendecomposition, which
  at ``m = 5 10^4`` would need 20 GB.  ``alpha`` holds ``(b0, beta)``; with
  ``m = n`` landmarks the problem is the exact kernel's.
"""

from __future__ import annotations

import numpy as np

from ..._scalars import check_integer
from ..cache import gib, keeps, memory_budget
from ..capabilities import DesignCapabilities
from ..feature_maps import LANDMARKS, SPECTRAL_SAMPLERS
from ..kernel_checks import check_kernel_rows
from ..majorisers.feature_blocks import DEFAULT_FEATURE_BLOCK, FeatureBlockCoordinate, FourierBlockForm, \
    LandmarkBlockForm
from ..predictors import FeaturePredictor, KernelPredictor
from ..row_chunks import RowChunks
from .base import ChooserDesign, design_class, design_names, make_design
from .dask import map_input
from .dask_bcd import check_kernel_on_chunks
from .dask_feature_bcd import DaskFeatureBlockCoordinate
from .features import FourierDesign, NystroemDesign

__all__ = ["FeatureBlockDesign", "FourierBlockDesign", "NystroemBlockDesign", "BLOCK_DESIGNS",
           "feature_block_design", "FeatureAutoDesign", "FEATURE_SYSTEM_MAX"]

_OPTIONS = ("solver", "block_size", "cache_features")


class FeatureBlockDesign:
    """What the block variants of the feature designs share (a mix-in before
    the in-memory design's class): the options ``block_size`` (columns per
    block, default :data:`DEFAULT_FEATURE_BLOCK`) and ``cache_features`` (keep
    the columns: None, where ``n m`` numbers of ``dtype`` fit the memory
    budget), rows in memory or on a Dask cluster (:attr:`on_cluster`: the
    same sweeps beside the row chunks, :mod:`.dask_feature_bcd`), the MM
    iteration (a sweep is one majorization step), the gradient rule by
    default.
    """

    def _block_options(self, options):
        name = f"approx={self.name!r} with solver='bcd': "
        if options.get("solver", "bcd") != "bcd":
            raise ValueError(f"{name}solver must be 'bcd', got {options['solver']!r}")
        block_size = options.get("block_size")
        self.block_size = (DEFAULT_FEATURE_BLOCK if block_size is None
                           else check_integer(block_size, "block_size", 1))
        cache = options.get("cache_features")
        if cache is not None and not isinstance(cache, (bool, np.bool_)):
            raise TypeError(f"cache_features must be True, False or None, got {cache!r}")
        self.cache_features = None if cache is None else bool(cache)
        self.options["solver"] = "bcd"

    @property
    def described(self):
        """How refusals name this design."""
        return f"approx={self.name!r} with solver='bcd'"

    def for_rows(self, n, p, kern, storage, weighted):
        return self  # no (m + 1) system: memory is O(n b + m b), the cache only where it fits

    def keeps_features(self, n, m):
        """Whether a fit on ``n`` rows with ``m`` columns keeps them in memory.

        Parameters
        ----------
        n, m : int
            Rows and columns (features or landmarks).

        Returns
        -------
        bool
        """
        return keeps(self.cache_features, float(n) * m * self.dtype.itemsize)

    def blas_work(self, problem):
        if problem.storage == "remote":
            return 0.0, 0.0  # the columns are formed on the workers; the client solves small systems
        n, m = problem.n, self.components(problem.n)
        b = min(self.block_size, m)
        return 2.0 * n * m * b, 4.0 * n * m  # the block Grams once; two products per block per sweep

    def prepare(self, problem, cache, folds):
        self.components(min(train.size for train, _ in folds))

    def _rows_per_tile(self):
        return self.chunk_size

    def _on_cluster(self, problem, predictor, **columns):
        """The sweeps on rows held by a Dask cluster (:mod:`.dask_feature_bcd`):
        the rows stay there, each chunk's columns are formed (or kept) beside it."""
        return DaskFeatureBlockCoordinate(problem.X, problem.loss, problem.gam, predictor, self.block_size,
                                          self.cache_features, self.dtype, self._rows_per_tile(), **columns)


class FourierBlockDesign(FeatureBlockDesign, FourierDesign):
    """``approx="rff", solver="bcd"``: random Fourier features by blocks of columns.

    The model, frequencies and phases of :class:`FourierDesign` (the same
    ``random_state`` gives the same fit, to the tolerance of the stopping
    rule); the feature weights are found by sweeps over blocks of ``b``
    features, each formed from the rows when it is needed (``n b p``
    products and ``n b`` cosines) or read from the cache.

    Parameters
    ----------
    random_state : int, Generator or None
        Seeds the frequencies and phases.
    n_components : int, default 1000
        ``m``, the number of features.
    dtype : {"float64", "float32"}, default "float64"
        Precision of the features: float32 forms them with a float32 cosine
        (to about ``6e-8``, several times faster than the float64 cosine that
        dominates a block) and caches them as float32; sums are still
        accumulated in float64.
    chunk_size : int, optional
        Rows per tile when a block of features is formed.
    block_size : int, default 256
        Features per block.
    cache_features : bool or None, default None
        Keep all ``n m`` features (None: where they fit the memory budget,
        :func:`kerndwd.engine.cache.memory_budget`).
    solver : "bcd"
        Set by the input layer.

    Raises
    ------
    TypeError, ValueError
        An option out of its range, named.

    Examples
    --------
    >>> import numpy as np, kerndwd
    >>> rng = np.random.default_rng(0)
    >>> X = rng.standard_normal((200, 2))
    >>> y = np.where((X ** 2).sum(axis=1) > 1.4, 1, -1)
    >>> kw = dict(kern=kerndwd.rbfdot(0.5), approx="rff", n_components=100, random_state=0, stop="kkt", eps=1e-8)
    >>> blocks = kerndwd.fit(X, y, [0.1, 0.01], solver="bcd", block_size=32, **kw)
    >>> whole = kerndwd.fit(X, y, [0.1, 0.01], **kw)
    >>> blocks.solver, bool(np.abs(blocks.alpha - whole.alpha).max() < 1e-5)
    ('bcd', True)
    """

    option_names = FourierDesign.option_names + _OPTIONS
    declared = DesignCapabilities(storage=("dense",), solvers=("mm",), kernels=tuple(sorted(SPECTRAL_SAMPLERS)),
                                  float32=True, default_stop="kkt")
    #: asked about rows held by a Dask cluster: the same sweeps, run beside the row chunks
    on_cluster = DesignCapabilities(storage=("dense", "remote"), solvers=("mm",),
                                    kernels=tuple(sorted(SPECTRAL_SAMPLERS)), float32=True, default_stop="kkt")

    def __init__(self, random_state=None, **options):
        super().__init__(random_state=random_state, **options)
        self._block_options(options)

    def prepare(self, problem, cache, folds):
        pass  # any number of features on any number of rows

    def majoriser(self, problem, cache):
        X = problem.X
        fmap = cache.memo("feature_map", lambda: self.fitted_map(map_input(X), problem.kern))
        if problem.storage == "remote":
            return self._on_cluster(problem, FeaturePredictor(fmap, problem.p), fmap=fmap)
        keep = self.keeps_features(problem.n, fmap.n_components)
        form = cache.memo(("feature_blocks", self.block_size, keep), lambda: FourierBlockForm(
            fmap, X, self.block_size, dtype=self.dtype, cache=keep, tile_rows=self._rows_per_tile()))
        return FeatureBlockCoordinate(form, problem.loss, problem.gam, FeaturePredictor(fmap, problem.p))


class NystroemBlockDesign(FeatureBlockDesign, NystroemDesign):
    """``approx="nystroem", solver="bcd"``: Nystrom's model on the landmarks'
    kernel functions, by blocks of landmarks.

    ``f = b0 + sum_j beta_j k(x, l_j)`` with ``||f||^2 = beta' K_LL beta``
    over the landmarks of :class:`NystroemDesign` (the same rows for the same
    ``random_state``): the functions and the penalty of the Nystrom features,
    without the ``m x m`` eigendecomposition.  ``alpha`` holds ``(b0, beta)``
    and the fitted path predicts with ``k(newx, L)``.  With ``m = n``
    landmarks it is the exact kernel fit.

    Parameters
    ----------
    random_state : int, Generator or None
        Seeds the landmarks.
    n_components : int, default ``min(1000, n)``
        ``m``, the number of landmarks, ``1 <= m <= n``.
    landmarks : {"uniform", "kmeans++", "leverage"}, default "uniform"
        As :class:`NystroemDesign`.
    dtype : {"float64", "float32"}, default "float64"
        Storage of cached kernel columns.
    chunk_size : int, optional
        Rows per tile when a block of kernel columns is formed.
    block_size : int, default 256
        Landmarks per block.
    cache_features : bool or None, default None
        Keep all ``n m`` kernel values (None: where they fit the memory budget).
    solver : "bcd"
        Set by the input layer.

    Raises
    ------
    TypeError, ValueError
        An option out of its range, named.

    Examples
    --------
    >>> import numpy as np, kerndwd
    >>> rng = np.random.default_rng(0)
    >>> X = rng.standard_normal((150, 2))
    >>> y = np.where(X[:, 0] * X[:, 1] > 0, 1, -1)
    >>> kw = dict(kern=kerndwd.rbfdot(1.0), stop="kkt", eps=1e-9)
    >>> blocks = kerndwd.fit(X, y, [0.1], approx="nystroem", solver="bcd", n_components=150, block_size=32, **kw)
    >>> exact = kerndwd.fit(X, y, [0.1], **kw)
    >>> bool(np.abs(blocks.predict(X, type="link") - exact.predict(X, type="link")).max() < 1e-6)
    True
    """

    option_names = NystroemDesign.option_names + _OPTIONS
    declared = DesignCapabilities(storage=("dense",), solvers=("mm",), float32=True, kernel_checks=True,
                                  default_stop="kkt")
    #: asked about rows held by a Dask cluster: the same sweeps, run beside the row chunks
    on_cluster = DesignCapabilities(storage=("dense", "remote"), solvers=("mm",), float32=True, kernel_checks=True,
                                    default_stop="kkt")

    def __init__(self, random_state=None, **options):
        super().__init__(random_state=random_state, **options)
        self._block_options(options)

    def majoriser(self, problem, cache):
        X, kern = problem.X, problem.kern
        m = self.components(problem.n)
        if problem.storage == "remote":  # the kernel is checked where the rows live; the landmarks are fetched
            cache.memo("kernel_rows_checked", lambda: check_kernel_on_chunks(RowChunks(X), kern))
            view = map_input(X)
            rows = cache.memo("landmark_rows", lambda: LANDMARKS[self.landmarks](view, kern, m, self.rng()))
            landmarks = np.ascontiguousarray(view[rows], dtype=float)
            return self._on_cluster(problem, KernelPredictor(kern, landmarks), kern=kern, landmarks=landmarks,
                                    landmark_rows=rows)
        cache.memo("kernel_rows_checked", lambda: check_kernel_rows(kern, X))
        rows = cache.memo("landmark_rows", lambda: LANDMARKS[self.landmarks](X, kern, m, self.rng()))
        keep = self.keeps_features(problem.n, m)
        form = cache.memo(("landmark_blocks", self.block_size, keep), lambda: LandmarkBlockForm(
            kern, X, rows, self.block_size, dtype=self.dtype, cache=keep, tile_rows=self._rows_per_tile()))
        return FeatureBlockCoordinate(form, problem.loss, problem.gam, KernelPredictor(kern, form.landmarks))


#: The block variant of each registered approximation that has one.
BLOCK_DESIGNS = {"rff": FourierBlockDesign, "nystroem": NystroemBlockDesign}


def feature_block_design(approx, options, random_state=None):
    """The design of ``approx=approx, solver="bcd"``: the block variant of the
    registered approximation ``approx``, with its options validated.

    Parameters
    ----------
    approx : str
        A registered approximation with a block variant (:data:`BLOCK_DESIGNS`).
    options : dict
        Its options, and ``block_size``, ``cache_features``.
    random_state : int, Generator or None
        The face's seed.

    Returns
    -------
    FeatureBlockDesign

    Raises
    ------
    ValueError
        ``approx`` names no approximation with a block variant.
    TypeError
        An option the design does not accept.

    Examples
    --------
    >>> from kerndwd.engine.designs.feature_bcd import feature_block_design
    >>> feature_block_design("rff", {"n_components": 50}, random_state=0)
    FourierBlockDesign(n_components=50, solver='bcd')
    >>> feature_block_design("fastfood", {})
    Traceback (most recent call last):
    ...
    ValueError: approx must be one of ['nystroem', 'rff'] with solver='bcd', got 'fastfood'
    """
    cls = BLOCK_DESIGNS.get(approx) if isinstance(approx, str) else None
    if cls is None or approx not in design_names("approx") or not issubclass(cls, design_class(approx)):
        raise ValueError(f"approx must be one of {sorted(BLOCK_DESIGNS)} with solver='bcd', got {approx!r}")
    return cls(random_state=random_state, **{**options, "solver": "bcd"})


#: ``approx=`` with ``solver="auto"``: up to this many columns (and where the
#: features and the ``(m + 1)`` system fit the memory budget) the in-memory
#: design solves the one system; beyond, the block variant sweeps over blocks.
#: Measured on the checkerboard of ``benchmarks.features_matter`` (n = 20 000,
#: five lambdas, one BLAS thread): Nystrom at m = 3000 took 212 s by the
#: system and 47 s by blocks, at m = 1000 the system 22 s.
FEATURE_SYSTEM_MAX = 2048


class FeatureAutoDesign(ChooserDesign):
    """``approx=name, solver="auto"``: the approximation's in-memory design or its
    block variant, picked from ``m``, the rows and the memory; both fit the same
    model (the same features or landmarks for the same seed), only the solver
    differs.

    * ``block_size`` or ``cache_features`` given, more than
      :data:`FEATURE_SYSTEM_MAX` columns, or the features and the system
      beyond the memory budget (:func:`kerndwd.engine.cache.memory_budget`):
      the block variant (:func:`feature_block_design`);
    * otherwise the in-memory design's one ``(m + 1)`` system.

    The same rules hold on rows held by a Dask cluster, where the features
    (or the blocks' columns) live on the workers and the memory budget is the
    client's, for the ``(m + 1)`` system alone.

    The pick and why are in ``path.chosen`` and ``print(path)``.

    Parameters
    ----------
    approx : str
        An approximation with a block variant (:data:`BLOCK_DESIGNS`).
    random_state : int, Generator or None
    **options
        The options of the block variant (those of the approximation, and
        ``block_size``, ``cache_features``).

    Examples
    --------
    >>> import kerndwd
    >>> from kerndwd.engine.designs.feature_bcd import FeatureAutoDesign
    >>> rbf = kerndwd.rbfdot(1.0)
    >>> FeatureAutoDesign("nystroem", n_components=500).for_rows(10000, 5, rbf, "dense", False).chosen
    "approx='nystroem' with solver='auto': m = 500 columns: one (m + 1) x (m + 1) system (0.043 GiB with the features)"
    >>> FeatureAutoDesign("rff", n_components=20000).for_rows(10000, 5, rbf, "dense", False).chosen
    "approx='rff' with solver='auto': m = 20000 columns, more than 2048: sweeps over blocks of 256 columns"
    """

    selected_by = "approx"

    def __init__(self, approx, random_state=None, **options):
        if approx not in BLOCK_DESIGNS:
            raise ValueError(f"approx must be one of {sorted(BLOCK_DESIGNS)} with solver='auto', got {approx!r}")
        self.name = approx
        self.option_names = tuple(o for o in BLOCK_DESIGNS[approx].option_names if o != "solver")
        super().__init__(random_state=random_state, **options)
        self.block = feature_block_design(approx, options, random_state=random_state)  # checks every option
        self.plain_options = {k: v for k, v in options.items() if k not in _OPTIONS}

    @property
    def described(self):
        return f"approx={self.name!r} with solver='auto'"

    def _plain(self):
        return make_design(self.name, self.plain_options, argument="approx", random_state=self.random_state)

    def capabilities(self, kern, storage):
        return self._plain().capabilities(kern, storage)  # the pick for small m; the check reads the pick's own

    def for_rows(self, n, p, kern, storage, weighted):
        plain = self._plain()
        m = plain.components(n)
        need = plain.system_bytes(n, storage)
        if any(k in self.options for k in ("block_size", "cache_features")):
            pick, why = self.block, f"block options given: sweeps over blocks of {self.block.block_size} columns"
        elif m > FEATURE_SYSTEM_MAX:
            pick, why = self.block, (f"m = {m} columns, more than {FEATURE_SYSTEM_MAX}: sweeps over blocks of "
                                     f"{self.block.block_size} columns")
        elif need > memory_budget(None, need):
            what = "the features and the (m + 1) x (m + 1) system take" if storage == "dense" else \
                "the (m + 1) x (m + 1) system takes"
            pick, why = self.block, (f"m = {m} columns: {what} {gib(need)}, beyond the memory budget: sweeps over "
                                     f"blocks of {self.block.block_size} columns")
        else:
            where = "with the features" if storage == "dense" else "on the client; the features on the workers"
            pick, why = plain, f"m = {m} columns: one (m + 1) x (m + 1) system ({gib(need)} {where})"
        if pick is plain:
            plain.for_rows(n, p, kern, storage, weighted)  # refuses a system beyond the memory available
        pick.chosen = f"approx={self.name!r} with solver='auto': {why}"
        return pick
