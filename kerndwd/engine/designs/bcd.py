"""The exact kernel by block coordinate majorization (``solver="bcd"``), without the ``n x n`` matrix.

The sweeps are :class:`kerndwd.engine.majorisers.blocks.BlockCoordinateKernel`
(see its module for the block step and the global step); this design
builds it, checks the kernel on the rows first (the diagonal on every row,
definiteness on a sample: :func:`kerndwd.engine.kernel_checks.check_kernel_rows`)
and declares what it supports: rows in memory or held by a Dask cluster,
the MM iteration (a sweep is one majorization step), either stopping rule,
the gradient rule by default (R has no such solver).  On Dask rows the
same sweeps run beside the row chunks:
:class:`kerndwd.engine.designs.dask_bcd.DaskBlockCoordinateKernel`.
"""

from __future__ import annotations

from ..._scalars import check_integer
from ..cache import keeps
from ..capabilities import DesignCapabilities
from ..kernel_checks import check_kernel_rows, check_sampled_definite
from ..majorisers.blocks import DEFAULT_BLOCK_SIZE, BlockCoordinateKernel
from .base import Design, register_design
from .dask_bcd import DaskBlockCoordinateKernel, check_kernel_on_chunks

__all__ = ["BlockCoordinateDesign"]


class BlockCoordinateDesign(Design):
    """``solver="bcd"``: the exact kernel by block coordinate majorization.

    Kernel columns are formed block by block when a sweep needs them, so
    memory is ``O(n b)`` (``b = block_size``) and ``fit``, ``cv``, ``tune``
    and the estimators run where the ``n x n`` kernel matrix would not fit.
    The fit is the exact kernel fit (the same optimum as the default solver);
    its ``alpha`` holds ``(b0, alpha_1..alpha_n)``.

    Parameters
    ----------
    random_state : int, Generator or None
        Seeds the partition of the rows into blocks (None: a fixed seed).
    block_size : int or None, default None
        Coefficients per block, a positive integer (None:
        :data:`DEFAULT_BLOCK_SIZE`); larger than ``n`` means one block of all
        ``n`` rows (it is clipped to ``n``), whose block step is the MM step of
        the weighted kernel solver.
    cache_kernel : bool or None, default None
        Keep the ``n x n`` kernel matrix in memory and read the sweeps' columns
        from it (formed once, shared by every lambda, fold, q and class),
        instead of forming them on every sweep.  None: where it takes at
        most the memory budget (:attr:`Design.memory`, ``solver="auto"``'s
        ``memory=``, else half the memory available when the fit starts:
        :func:`kerndwd.engine.cache.memory_budget`).  The fit is the same.

    Raises
    ------
    TypeError
        ``block_size`` is not an integer.
    ValueError
        ``block_size`` is below 1.

    Examples
    --------
    >>> import numpy as np, kerndwd
    >>> rng = np.random.default_rng(0)
    >>> X = rng.standard_normal((300, 2))
    >>> y = np.where((X ** 2).sum(axis=1) > 1.4, 1, -1)
    >>> path = kerndwd.fit(X, y, [0.1, 0.01], kern=kerndwd.rbfdot(1.0), solver="bcd",
    ...                    block_size=64, stop="kkt", eps=1e-8)
    >>> bool((path.kkt <= 1e-8).all()), path.alpha.shape
    (True, (301, 2))
    """

    name = "bcd"
    selected_by = "solver"
    option_names = ("block_size", "cache_kernel")
    # its sweeps are majorization steps; without K there is no Newton system
    declared = DesignCapabilities(storage=("dense",), solvers=("mm",), kernel_checks=True, default_stop="kkt")
    #: asked about rows held by a Dask cluster: the same sweeps, run beside the row chunks
    on_cluster = DesignCapabilities(storage=("dense", "remote"), solvers=("mm",), kernel_checks=True,
                                    default_stop="kkt")

    def __init__(self, random_state=None, **options):
        super().__init__(random_state=random_state, **options)
        block_size = options.get("block_size")
        self.block_size = DEFAULT_BLOCK_SIZE if block_size is None else check_integer(block_size, "block_size", 1)
        cache_kernel = options.get("cache_kernel")
        if cache_kernel is not None and not isinstance(cache_kernel, bool):
            raise TypeError(f"cache_kernel must be True, False or None, got {cache_kernel!r}")
        self.cache_kernel = cache_kernel

    def keeps_kernel(self, n):
        """Whether a fit on ``n`` rows keeps the kernel matrix in memory.

        Parameters
        ----------
        n : int
            The rows of the fit.

        Returns
        -------
        bool
        """
        return keeps(self.cache_kernel, 8.0 * n * n, self.memory)

    def blas_work(self, problem):
        if problem.storage == "remote":
            return 0.0, 0.0  # the kernel is formed on the workers; the client solves small systems
        if self.keeps_kernel(problem.n):
            return 2.0 * problem.n ** 2 * problem.p, 0.0  # K once; a sweep reads it
        return 0.0, 2.0 * problem.n ** 2 * problem.p  # a sweep forms every kernel column, block by block

    def prepare(self, problem, cache, folds):
        if problem.storage != "remote" and self.keeps_kernel(problem.n):
            cache.kernel_matrix()

    def majoriser(self, problem, cache):
        if problem.storage == "remote":
            return self._on_cluster(problem, cache)
        if self.keeps_kernel(problem.n):  # checked when formed: only the sampled definiteness is left
            K = cache.kernel_matrix()
            cache.memo("kernel_sample_definite", lambda: check_sampled_definite(K, problem.kern))
        else:
            K = None
            cache.memo("kernel_rows_checked", lambda: check_kernel_rows(problem.kern, problem.X))
        return BlockCoordinateKernel(problem.kern, problem.X, problem.loss, problem.gam,
                                     block_size=self.block_size, random_state=self.random_state, K=K)

    def _on_cluster(self, problem, cache):
        """The sweeps on rows held by a Dask cluster (:mod:`.dask_bcd`): the rows stay
        there, and the kernel is checked there (the fitted path fetches the rows
        when it first predicts)."""
        if self.cache_kernel:
            raise ValueError("cache_kernel=True keeps the n x n kernel matrix in memory, which rows held by a "
                             "Dask cluster never form; leave cache_kernel=None or False")
        majoriser = DaskBlockCoordinateKernel(problem.kern, problem.X, problem.loss, problem.gam,
                                              block_size=self.block_size, random_state=self.random_state)
        cache.memo("kernel_rows_checked", lambda: check_kernel_on_chunks(majoriser.chunks, problem.kern))
        return majoriser


register_design(BlockCoordinateDesign)
