"""Designs: how a problem becomes a majoriser, and the registry that names them.

A *design* decides how the decision function is represented and which
majoriser solves its MM step.  Every fit goes through
:func:`build_majoriser`, which asks the problem's design; no face chooses a
majoriser itself.  Built in:

* :class:`ExactDesign` (the default, ``design=None``): the exact kernel, with
  the R package's choice of solver: for the linear kernel the linear form
  ``f = b0 + x' beta`` (Algorithm 1) when ``n >= p`` (``n > p`` when weighted
  or under ``tunedwd``'s rule) or ``X`` is sparse, else the kernel form
  ``f = b0 + K alpha`` (Algorithm 2); eigenbasis majorisers unweighted,
  Cholesky majorisers weighted, conjugate gradients for sparse ``X``.
* :class:`FeatureDesign`, a base class: ``f = b0 + phi(x)' theta`` for a
  feature map ``phi`` fitted on the training rows; the MM step is the linear
  one on the feature matrix.

Adding a design is one class and one call of :func:`register_design`; the
faces (``fit``, ``predict``, ``cv``, ``tune`` and the estimators) then accept
its name (``approx=`` or ``solver=``) and pass its options through.
"""

from __future__ import annotations

from abc import ABC, abstractmethod

from scipy import linalg, sparse

from .contract import Majoriser, check_majoriser
from .distributed import DaskLinearForm, dask_feature_matrix, is_dask_collection, map_input
from .iterative import LinearCG
from .kernel import KernelCholesky, KernelEigen
from .forms import DenseLinearForm, LinearForm, SparseLinearForm
from .linear import LinearCholesky, LinearEigen
from .predictors import FeaturePredictor, KernelPredictor

__all__ = ["Design", "ExactDesign", "FeatureDesign", "register_design", "make_design", "design_names",
           "build_majoriser"]

_REGISTRY: dict[str, type] = {}


class Design(ABC):
    """How a :class:`~kerndwd.engine.problem.Problem` becomes a majoriser.

    Subclasses set :attr:`name` (the user-facing name), :attr:`selected_by`
    (the argument of the faces that names it: ``"approx"`` for a kernel
    approximation, ``"solver"`` for a way to solve the exact kernel) and
    :attr:`option_names` (keyword options they accept, to validate in
    ``__init__``), and implement :meth:`majoriser`.  ``random_state`` is
    the face's own seed, given to every design.

    Parameters
    ----------
    random_state : int, numpy.random.Generator or None
        The face's seed, for designs that draw (landmarks, frequencies).
    **options
        The design's keyword options, among :attr:`option_names`.

    Raises
    ------
    TypeError
        An option that is not among :attr:`option_names`.

    See Also
    --------
    register_design, make_design, FeatureDesign

    Examples
    --------
    A design that reports its problem and then builds the exact kernel's
    majoriser; :func:`register_design` would make it selectable by name,
    here it is passed to the problem directly:

    >>> import numpy as np
    >>> from kerndwd import engine
    >>> from kerndwd.engine.designs import ExactDesign
    >>> class Loud(ExactDesign):
    ...     name = "loud"
    ...     def majoriser(self, problem, cache):
    ...         print(f"{problem.n} rows, {problem.lambdas.size} lambdas")
    ...         return super().majoriser(problem, cache)
    >>> rng = np.random.default_rng(0)
    >>> X = rng.standard_normal((40, 3)); y = np.where(X[:, 0] > 0, 1.0, -1.0)
    >>> result, _ = engine.fit_path(engine.Problem.from_arrays(X, y, [1.0, 0.1], design=Loud()))
    40 rows, 2 lambdas
    >>> Loud(n_components=5)
    Traceback (most recent call last):
    ...
    TypeError: solver='loud' does not accept n_components (its options: none)
    """

    name: str = "?"
    selected_by: str = "approx"
    option_names: tuple = ()
    #: the path solvers (:func:`kerndwd.engine.loop.method_names`) its
    #: majorisers support; None: every registered one
    path_methods: tuple | None = None

    def __init__(self, random_state=None, **options):
        unknown = sorted(set(options) - set(self.option_names))
        if unknown:
            accepted = ", ".join(self.option_names) or "none"
            raise TypeError(f"{self.selected_by}={self.name!r} does not accept {', '.join(unknown)} "
                            f"(its options: {accepted})")
        self.random_state = random_state
        self.options = options

    def check_kernel(self, kern):
        """Raise ``ValueError`` when this design cannot serve ``kern`` (default: any kernel).

        Parameters
        ----------
        kern : Kernel
            The problem's kernel.
        """

    def prepare(self, problem, cache, folds):
        """Work the folds of a cross-validation share, done once before they are
        dispatched (possibly to other processes); ``folds`` is a list of
        ``(train, test)`` row indices.

        Parameters
        ----------
        problem : Problem
            The problem on all rows.
        cache : FactorCache
            Its cache.
        folds : list of (ndarray, ndarray)
            Training and held-out rows of each fold.
        """

    @abstractmethod
    def majoriser(self, problem, cache) -> Majoriser:
        """The majoriser of ``problem`` (``cache`` holds work shared with other fits
        on the same rows: see :class:`kerndwd.engine.cache.FactorCache`).

        Parameters
        ----------
        problem : Problem
            The problem to fit.
        cache : FactorCache
            Work shared with other fits on the same rows.

        Returns
        -------
        Majoriser
            Held to :class:`kerndwd.engine.contract.Majoriser`.
        """

    def __repr__(self):
        opts = ", ".join(f"{k}={v!r}" for k, v in self.options.items())
        return f"{type(self).__name__}({opts})"


def register_design(cls):
    """Make ``cls`` (a :class:`Design` subclass) selectable by ``cls.name``;
    usable as a class decorator.

    Once registered, ``fit``, ``cv``, ``tune`` and the estimators accept the
    name through ``approx=`` or ``solver=`` (``cls.selected_by``).

    Parameters
    ----------
    cls : type
        A :class:`Design` subclass with its ``name`` and ``selected_by``.

    Returns
    -------
    type
        ``cls`` itself.

    Raises
    ------
    TypeError
        When ``cls`` is not a :class:`Design` subclass.

    Examples
    --------
    >>> from kerndwd import engine
    >>> engine.register_design(engine.NystroemDesign) is engine.NystroemDesign
    True
    >>> engine.register_design(object)
    Traceback (most recent call last):
    ...
    TypeError: register_design takes a Design subclass, got <class 'object'>

    A new design is registered where it is defined::

        @engine.register_design
        class MyFeatures(engine.FeatureDesign):
            name = "myfeatures"
            ...
    """
    if not (isinstance(cls, type) and issubclass(cls, Design)):
        raise TypeError(f"register_design takes a Design subclass, got {cls!r}")
    _REGISTRY[cls.name] = cls
    return cls


def design_names(selected_by=None):
    """Names of the registered designs (those selected by ``selected_by`` only, when given).

    Parameters
    ----------
    selected_by : {"approx", "solver"}, optional
        Only the designs chosen through that argument of the faces.

    Returns
    -------
    list of str
        Sorted.

    Examples
    --------
    >>> from kerndwd import engine
    >>> engine.design_names("approx")
    ['nystroem', 'rff']
    >>> "exact" in engine.design_names("solver")
    True
    """
    return sorted(k for k, v in _REGISTRY.items() if selected_by in (None, v.selected_by))


def make_design(name, kern, options, argument="solver", random_state=None):
    """The design registered as ``name`` under ``argument`` (``"approx"`` or
    ``"solver"``; ``name=None``: the exact kernel), its options validated
    against ``kern``.

    Parameters
    ----------
    name : str or None
        A registered design name; None for the exact kernel.
    kern : Kernel
        The problem's kernel.
    options : dict
        The design's keyword options.
    argument : {"solver", "approx"}, default "solver"
        The argument of the faces that named it.
    random_state : int, numpy.random.Generator or None
        The face's seed.

    Returns
    -------
    Design

    Raises
    ------
    ValueError
        An unknown name for ``argument``, or a kernel the design cannot serve.
    TypeError
        An option the design does not accept.

    Examples
    --------
    >>> import kerndwd
    >>> from kerndwd import engine
    >>> d = engine.make_design("nystroem", kerndwd.rbfdot(sigma=1), {"n_components": 10},
    ...                        argument="approx", random_state=0)
    >>> d, d.selected_by
    (NystroemDesign(n_components=10), 'approx')
    >>> engine.make_design("nystroem", kerndwd.rbfdot(sigma=1), {})
    Traceback (most recent call last):
    ...
    ValueError: solver must be one of ['bcd', 'exact'], got 'nystroem'
    """
    if name is None:
        name = ExactDesign.name
    cls = _REGISTRY.get(name) if isinstance(name, str) else None
    if cls is None or cls.selected_by != argument:
        raise ValueError(f"{argument} must be one of {design_names(argument)}, got {name!r}")
    design = cls(random_state=random_state, **options)
    design.check_kernel(kern)
    return design


def build_majoriser(problem, cache):
    """The majoriser of ``problem``, as its design builds it (held to the contract).

    Parameters
    ----------
    problem : Problem
        A validated problem; its ``design`` builds the majoriser.
    cache : FactorCache
        Work shared with other fits on the same rows.

    Returns
    -------
    Majoriser
        Checked against :class:`kerndwd.engine.contract.Majoriser`.

    Raises
    ------
    TypeError
        When the design returns something that breaks the contract.

    Examples
    --------
    >>> import numpy as np
    >>> from kerndwd import engine
    >>> rng = np.random.default_rng(0)
    >>> X = rng.standard_normal((40, 3)); y = np.where(X[:, 0] > 0, 1.0, -1.0)
    >>> problem = engine.Problem.from_arrays(X, y, [1.0, 0.1])
    >>> majoriser = engine.build_majoriser(problem, engine.FactorCache(X, problem.kern))
    >>> majoriser.solver  # R's linear routine: n >= p
    'ldwd'
    """
    return check_majoriser(problem.design.majoriser(problem, cache), problem.design.name)


# --------------------------------------------------------------------------
# the exact kernel
# --------------------------------------------------------------------------
@register_design
class ExactDesign(Design):
    """The exact kernel with the R package's choice of solver (see the module docstring)."""

    name = "exact"
    selected_by = "solver"

    @staticmethod
    def solves_in_beta(problem, n=None):
        """R's rule: the linear form for the linear kernel when ``n >= p``
        (``n > p`` when weighted, or always under ``tunedwd``'s rule); ``n``
        defaults to the problem's rows (a fold passes its training size)."""
        if not problem.kern.is_linear:
            return False
        if sparse.issparse(problem.X):
            return True
        n = problem.n if n is None else n
        strict = problem.loss.weighted or problem.linear_rule == "tunedwd"
        return n > problem.p if strict else n >= problem.p

    def prepare(self, problem, cache, folds):
        if any(not self.solves_in_beta(problem, train.size) for train, _ in folds):
            cache.kernel_matrix()

    def majoriser(self, problem, cache):
        X, loss, gam = problem.X, problem.loss, problem.gam
        if self.solves_in_beta(problem):
            if sparse.issparse(X):
                return LinearCG(SparseLinearForm(X), loss, gam)
            if is_dask_collection(X):  # rows on a Dask cluster: see engine/distributed.py
                form = DaskLinearForm(X)
                if loss.weighted:
                    return LinearCholesky(form, loss, gam)
                return LinearEigen(form, loss, gam, gram_eig=cache.memo("gram_eigh", lambda: linalg.eigh(form.gram())))
            if loss.weighted:
                return LinearCholesky(LinearForm(X), loss, gam)
            form = DenseLinearForm(X)
            return LinearEigen(form, loss, gam,
                               gram_eig=lambda: cache.memo("gram_eigh", lambda: linalg.eigh(form.gram())))
        if is_dask_collection(X):
            raise ValueError(
                f"kern={problem.kern!r} on a Dask X: the exact kernel solver needs the n x n kernel matrix, "
                f"which is never formed from a Dask array; use the linear kernel (with n >= p) or approx= "
                f"(one of {design_names('approx')})")
        K = cache.kernel_matrix()
        predictor = KernelPredictor(problem.kern, X)
        if loss.weighted:
            return KernelCholesky(K, loss, gam, predictor)
        return KernelEigen(K, loss, gam, predictor, eig=cache.kernel_eigh())


# --------------------------------------------------------------------------
# feature maps
# --------------------------------------------------------------------------
class FeatureDesign(Design):
    """``f = b0 + phi(x)' theta`` for a feature map fitted on the training rows.

    Subclasses implement :meth:`fitted_map`; the MM step is the linear one
    (:class:`LinearEigen`, or :class:`LinearCholesky` when weighted) on the
    form of the feature matrix ``Phi = phi(X)`` (:meth:`feature_form`), which
    is formed once per set of rows and shared by every q and class fitted on
    them.

    For a Dask ``X`` the map is fitted on the client: ``fitted_map`` receives a
    :class:`~kerndwd.engine.distributed.DaskRowsView`, whose ``view[rows]``
    gathers just the rows asked for (landmarks, say); ``Phi`` is then formed
    chunk by chunk on the workers by the map's ``transform`` and kept there
    (:func:`~kerndwd.engine.distributed.dask_feature_matrix`), whatever
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
            Held to :class:`kerndwd.engine.contract.Form`.
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
        # features are formed and kept on the workers (engine/distributed.py)
        fmap = cache.memo("feature_map", lambda: self.fitted_map(map_input(problem.X), problem.kern))
        loss, gam = problem.loss, problem.gam
        if is_dask_collection(problem.X):
            form = cache.memo("feature_form", lambda: DaskLinearForm(dask_feature_matrix(fmap, problem.X)))
        else:
            form = cache.memo(("feature_form", loss.weighted),
                              lambda: self.feature_form(fmap, problem.X, loss.weighted))
        predictor = FeaturePredictor(fmap, problem.p)
        if loss.weighted:
            return LinearCholesky(form, loss, gam, predictor)
        gram_eig = lambda: cache.memo("gram_eigh", lambda: linalg.eigh(form.gram()))  # noqa: E731
        return LinearEigen(form, loss, gam, predictor, gram_eig=gram_eig)
