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
        """Raise ``ValueError`` when this design cannot serve ``kern`` (default: any kernel)."""

    def prepare(self, problem, cache, folds):
        """Work the folds of a cross-validation share, done once before they are
        dispatched (possibly to other processes); ``folds`` is a list of
        ``(train, test)`` row indices."""

    @abstractmethod
    def majoriser(self, problem, cache) -> Majoriser:
        """The majoriser of ``problem`` (``cache`` holds work shared with other fits
        on the same rows: see :class:`kerndwd.engine.cache.FactorCache`)."""

    def __repr__(self):
        opts = ", ".join(f"{k}={v!r}" for k, v in self.options.items())
        return f"{type(self).__name__}({opts})"


def register_design(cls):
    """Make ``cls`` (a :class:`Design` subclass) selectable by ``cls.name``;
    usable as a class decorator."""
    if not (isinstance(cls, type) and issubclass(cls, Design)):
        raise TypeError(f"register_design takes a Design subclass, got {cls!r}")
    _REGISTRY[cls.name] = cls
    return cls


def design_names(selected_by=None):
    """Names of the registered designs (those selected by ``selected_by`` only, when given)."""
    return sorted(k for k, v in _REGISTRY.items() if selected_by in (None, v.selected_by))


def make_design(name, kern, options, argument="solver", random_state=None):
    """The design registered as ``name`` under ``argument`` (``"approx"`` or
    ``"solver"``; ``name=None``: the exact kernel), its options validated
    against ``kern``."""
    if name is None:
        name = ExactDesign.name
    cls = _REGISTRY.get(name) if isinstance(name, str) else None
    if cls is None or cls.selected_by != argument:
        raise ValueError(f"{argument} must be one of {design_names(argument)}, got {name!r}")
    design = cls(random_state=random_state, **options)
    design.check_kernel(kern)
    return design


def build_majoriser(problem, cache):
    """The majoriser of ``problem``, as its design builds it (held to the contract)."""
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
    """

    def feature_form(self, fmap, X, weighted):
        """The linear form of the features of the rows ``X``: by default the
        dense ``Phi = fmap.transform(X)`` (with ``Z = [1, Phi]`` kept when
        unweighted).  Designs whose features need other storage override it."""
        Phi = fmap.transform(X)
        return LinearForm(Phi) if weighted else DenseLinearForm(Phi)

    @abstractmethod
    def fitted_map(self, X, kern):
        """A feature map fitted on the rows ``X``: an object whose
        ``transform(rows)`` returns their features, shape (len(rows), m)."""

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
