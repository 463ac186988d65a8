"""The design base class and the registry that names designs.

A *design* decides how the decision function is represented and which
majoriser solves its MM step; it declares what it supports
(:meth:`Design.capabilities`).  Every fit goes through
:func:`build_majoriser`, which asks the problem's design; no face chooses a
majoriser itself.

Adding a design is one class and one call of :func:`register_design`; the
faces (``fit``, ``predict``, ``cv``, ``tune`` and the estimators) then accept
its name (``approx=`` or ``solver=``) and pass its options through, and the
compatibility check (:mod:`kerndwd.engine.compatibility`) and the
combination test read its capabilities.
"""

from __future__ import annotations

from abc import ABC, abstractmethod

from ..capabilities import DesignCapabilities
from ..majorisers import Majoriser, check_majoriser
from ..threads import blas_threads

__all__ = ["Design", "register_design", "make_design", "design_names", "design_class", "build_majoriser"]

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
    #: what it supports, whatever the kernel and the storage of the rows (a
    #: design whose support depends on them overrides :meth:`capabilities`)
    declared: DesignCapabilities = DesignCapabilities()
    #: what it supports on rows held by a Dask cluster, where that differs from
    #: :attr:`declared` (None: the same)
    on_cluster: DesignCapabilities | None = None
    #: Why this design fits the problem, when a chooser (``solver="auto"``,
    #: :mod:`kerndwd.engine.designs.auto`) picked it; None when the caller named it
    chosen: str | None = None
    #: Bytes what the design keeps in memory (a kernel matrix, a copy of it) may
    #: take: a chooser's ``memory=``, passed to the design it picks (:meth:`within`);
    #: None: :func:`~kerndwd.engine.cache.memory_budget`'s default
    memory: float | None = None

    def __init__(self, random_state=None, **options):
        unknown = sorted(set(options) - set(self.option_names))
        if unknown:
            accepted = ", ".join(self.option_names) or "none"
            raise TypeError(f"{self.selected_by}={self.name!r} does not accept {', '.join(unknown)} "
                            f"(its options: {accepted})")
        self.random_state = random_state
        self.options = options

    @property
    def model_seed(self):
        """The seed that changes the fitted model (a kernel approximation's
        landmarks or frequencies), or None where the design draws nothing that
        changes it; part of a fit's fingerprint."""
        return None

    def for_rows(self, n, p, kern, storage, weighted):
        """The design that fits ``n`` rows of ``p`` columns: this one, except for
        a chooser (``solver="auto"``), which returns the design it picks, with
        :attr:`chosen` saying why.

        Parameters
        ----------
        n, p : int
            The rows and columns of ``X``.
        kern : Kernel
        storage : str
            One of :data:`kerndwd.engine.capabilities.STORAGE_KINDS`.
        weighted : bool
            Whether the loss has observation weights.

        Returns
        -------
        Design
        """
        return self

    def within(self, memory):
        """This design, with ``memory`` as the budget of what it keeps in memory
        (:attr:`memory`).

        Parameters
        ----------
        memory : float or None
            Bytes; None leaves the budget as it is.

        Returns
        -------
        Design
            ``self``.
        """
        if memory is not None:
            self.memory = float(memory)
        return self

    def capabilities(self, kern, storage):
        """What the design supports for the kernel ``kern`` on rows stored as ``storage``.

        Parameters
        ----------
        kern : Kernel
            The problem's kernel.
        storage : str
            One of :data:`kerndwd.engine.capabilities.STORAGE_KINDS`.

        Returns
        -------
        DesignCapabilities
            :attr:`on_cluster` for rows held by a Dask cluster where the design
            declares it, :attr:`declared` otherwise (unless the design overrides this).
        """
        return self.on_cluster if storage == "remote" and self.on_cluster is not None else self.declared

    def blas_work(self, problem) -> tuple:
        """``(once, per_pass)``: rough operation counts of the largest one-off
        dense BLAS-3 call of a fit of ``problem`` and of one pass; below
        both thresholds of :mod:`kerndwd.engine.threads` the fit runs on one
        BLAS thread.  The base class says ``(0, 0)``.

        Parameters
        ----------
        problem : Problem

        Returns
        -------
        tuple of float
        """
        return 0.0, 0.0

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
            Held to :class:`kerndwd.engine.majorisers.Majoriser`.
        """

    @property
    def described(self):
        """How refusals name this design: the argument that selects it and its
        name (a design selected by two arguments says both)."""
        return f"{self.selected_by}={self.name!r}"

    def __repr__(self):
        opts = ", ".join(f"{k}={v!r}" for k, v in self.options.items())
        return f"{type(self).__name__}({opts})"


class ChooserDesign(Design):
    """A design that picks another for the rows (``solver="auto"``, and an
    approximation with ``solver="auto"``): :meth:`for_rows` returns the design
    picked, with :attr:`chosen` saying why; a problem holds that one, so a
    chooser is never fitted itself (its :meth:`majoriser` asks the pick).  The
    pick keeps what it keeps within the chooser's :attr:`memory`."""

    def majoriser(self, problem, cache):
        return self.for_rows(problem.n, problem.p, problem.kern, problem.storage,
                             problem.loss.weighted).within(self.memory).majoriser(problem, cache)


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


def make_design(name, options, argument="solver", random_state=None):
    """The design registered as ``name`` under ``argument`` (``"approx"`` or
    ``"solver"``; ``name=None``: the exact kernel), with its options validated.
    Whether it serves the problem's kernel and rows is the compatibility
    check's (:func:`kerndwd.engine.compatibility.resolve`).

    Parameters
    ----------
    name : str or None
        A registered design name; None for the exact kernel.
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
        An unknown name for ``argument``, or an option out of range.
    TypeError
        An option the design does not accept.

    Examples
    --------
    >>> from kerndwd import engine
    >>> d = engine.make_design("nystroem", {"n_components": 10}, argument="approx", random_state=0)
    >>> d, d.selected_by
    (NystroemDesign(n_components=10), 'approx')
    >>> engine.make_design("nystroem", {})
    Traceback (most recent call last):
    ...
    ValueError: solver must be one of ['auto', 'bcd', 'cg', 'exact'], got 'nystroem'
    """
    if name is None:
        name = "exact"
    cls = _REGISTRY.get(name) if isinstance(name, str) else None
    if cls is None or cls.selected_by != argument:
        raise ValueError(f"{argument} must be one of {design_names(argument)}, got {name!r}")
    return cls(random_state=random_state, **options)


def design_class(name):
    """The registered design class named ``name``.

    Raises
    ------
    KeyError
        When no design of that name is registered.
    """
    return _REGISTRY[name]


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
        Checked against :class:`kerndwd.engine.majorisers.Majoriser`.

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
    with blas_threads(problem.design.blas_work(problem)):  # one BLAS thread for small work
        return check_majoriser(problem.design.majoriser(problem, cache), problem.design.name)
