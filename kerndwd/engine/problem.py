"""The validated problem: everything a DWD fit needs, built once where input enters.

The faces (``kerndwd.fit``, ``cv``, ``tune``, ``DWDClassifier``,
``DWDClassifierCV``) validate their arguments and build one
:class:`Problem`; everything below them trusts it.  Cross-validation derives
the problem of a fold with :meth:`Problem.subset`, a q value with
:meth:`Problem.with_q` and a one-vs-rest target with
:meth:`Problem.with_labels`.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, replace
from functools import cached_property, partial

import numpy as np
from scipy import sparse

from .capabilities import storage_of
from .loss import DWDLoss

__all__ = ["Problem", "GAM_FIT", "GAM_TUNE", "LINEAR_RULES"]

#: Ridge added to the majoriser (eigenvalues or diagonal) by the R package's
#: ``kerndwd()``; it keeps a singular ``Z'Z`` or ``K`` invertible and, being
#: positive, keeps the quadratic above the objective.
GAM_FIT = 1e-7
#: The ridge R's ``tunedwd()`` uses instead.
GAM_TUNE = 1e-6

#: When the linear kernel is solved in ``beta`` (``p + 1`` unknowns) rather
#: than in kernel coefficients (``n + 1``): R's ``kerndwd`` does so when
#: ``n >= p`` unweighted and ``n > p`` weighted; its ``tunedwd`` only when ``n > p``.
LINEAR_RULES = ("kerndwd", "tunedwd")


def rows_digest(X):
    """A SHA-256 digest of rows in memory: their shape and every value, in row
    order (a CSR matrix: its sorted, summed entries), so rows permuted, edited
    or of another shape give another digest.  SHA-256 because it is the
    fastest of :mod:`hashlib` where the processor has SHA instructions."""
    h = hashlib.sha256(repr(X.shape).encode())
    if sparse.issparse(X):
        X = X.tocsr()
        if not X.has_canonical_format:
            X = X.copy()
            X.sum_duplicates()  # sorts the indices too
        for part in (X.indptr, X.indices):
            h.update(np.ascontiguousarray(part, dtype=np.int64))
        h.update(np.ascontiguousarray(X.data, dtype=float))
    else:
        h.update(np.ascontiguousarray(X, dtype=float))  # validated rows are C-ordered float64: read in place
    return h.digest()


def _fingerprint(kern, qval, design, rows, y, weights):
    """:meth:`Problem.fingerprint` from its parts: the rows' digest
    (:func:`rows_digest`; None on a cluster), the labels and the weights."""
    digest = None
    if rows is not None:
        h = hashlib.blake2b(rows, digest_size=16)
        for part in (y, weights):
            h.update(b"none" if part is None else np.ascontiguousarray(part, dtype=float))
        digest = h.hexdigest()
    return {"kern": repr(kern), "qval": qval,
            "design": f"{design.selected_by}={design.name!r}" + "".join(
                f", {k}={v!r}" for k, v in sorted(design.options.items()))
            + ("" if design.model_seed is None else f", random_state={design.model_seed}"),
            "rows": digest}


@dataclass(frozen=True, eq=False)
class Problem:
    """A validated DWD problem along a lambda path.

    Attributes
    ----------
    X : ndarray, sparse matrix or dask array, shape (n, p)
        Validated predictors (never modified).
    y : ndarray, shape (n,)
        Labels in {-1, +1}.
    classes : ndarray, shape (2,)
        The original labels of -1 and +1.
    lambdas : ndarray, shape (L,)
        Positive penalties, decreasing.
    loss : DWDLoss
        The exponent q and the observation weights.
    kern : Kernel
        The kernel (``vanilladot()`` for linear DWD).
    stop : {"step", "kkt"}
        R's step rule, or the gradient-norm rule.
    eps : float
        Tolerance of the stopping rule.
    maxit : int
        Budget of MM passes for the whole path.
    accelerate : bool
        Nesterov momentum with restarts (changes the iterates; off for R's).
    gam : float
        Ridge on the majoriser (:data:`GAM_FIT` or :data:`GAM_TUNE`).
    linear_rule : {"kerndwd", "tunedwd"}
        See :data:`LINEAR_RULES`.
    design : Design
        A registered design with its options (:mod:`kerndwd.engine.designs`);
        :class:`~kerndwd.engine.designs.ExactDesign` is the exact kernel, with
        R's choice between the linear and the kernel solver.
    method : str
        The path solver (:func:`kerndwd.engine.run_path`): ``"mm"``, the
        MM iteration, or another registered one.

    Parameters
    ----------
    X, y, classes, lambdas, loss, kern, stop, eps, maxit, accelerate, gam, linear_rule, design, method
        The attributes; the faces build a problem after validating their
        input, and :meth:`from_arrays` builds one from trusted arrays.

    Examples
    --------
    >>> import numpy as np
    >>> from kerndwd import engine
    >>> rng = np.random.default_rng(0)
    >>> X = rng.standard_normal((40, 3)); y = np.where(X[:, 0] > 0, 1.0, -1.0)
    >>> problem = engine.Problem.from_arrays(X, y, [1.0, 0.1], q=2.0, stop="kkt")
    >>> problem.n, problem.p, problem.loss.q, problem.design.name
    (40, 3, 2.0, 'exact')
    >>> fold = problem.subset(np.arange(30))  # a fold's training rows
    >>> fold.n, fold.with_q(1.0).loss.q
    (30, 1.0)
    """

    X: object
    y: np.ndarray
    classes: np.ndarray
    lambdas: np.ndarray
    loss: DWDLoss
    kern: object
    stop: str = "step"
    eps: float = 1e-5
    maxit: int = 100000
    accelerate: bool = False
    gam: float = GAM_FIT
    linear_rule: str = "kerndwd"
    design: object = None
    method: str = "mm"

    @classmethod
    def from_arrays(cls, X, y, lambdas, *, q=1.0, weights=None, kern=None, design=None, **settings):
        """A problem from arrays the caller vouches for (float ``X``, ``y`` in
        {-1, +1}, decreasing ``lambdas``): for tests, benchmarks and engine
        work.  ``kern`` defaults to the linear kernel, ``design`` to the exact
        kernel; ``settings`` are the other fields (``stop``, ``eps``, ...)."""
        from ..kernels import vanilladot
        from .designs.exact import ExactDesign

        return cls(X=X, y=np.asarray(y, dtype=float), classes=np.array([-1.0, 1.0]),
                   lambdas=np.atleast_1d(np.asarray(lambdas, dtype=float)), loss=DWDLoss(q, weights),
                   kern=vanilladot() if kern is None else kern,
                   design=ExactDesign() if design is None else design, **settings)

    @property
    def n(self):
        return self.X.shape[0]

    @property
    def p(self):
        return self.X.shape[1]

    @cached_property
    def storage(self):
        """How the rows are held: ``"dense"``, ``"sparse"`` or ``"remote"`` (a Dask array).
        Read several times a fit, found once (the rows of a problem never change)."""
        return storage_of(self.X)

    def fingerprint(self):
        """What a fit is a fit of: the kernel, q, the design with its options, and a
        digest of the bytes of the rows, the labels and the weights (the same
        arrays reproduce it; rows permuted against the labels change it).  A calibration is refused for a path
        whose fingerprint differs.  Rows held by a Dask cluster have no digest
        (None): no cross-validation is fitted on them.

        Returns
        -------
        dict
        """
        return self.fingerprint_later()()

    def fingerprint_later(self):
        """:meth:`fingerprint` as a call to make when it is wanted (a path is rarely
        calibrated): the digest of the rows (:func:`rows_digest`, one read of
        them) is taken now; the labels and weights (arrays of the problem's own that
        nothing writes to), the kernel (frozen) and the design are read when it
        is called.

        Returns
        -------
        functools.partial
            Called with no arguments, returns :meth:`fingerprint`'s dict; it
            pickles.
        """
        if self.storage == "remote":
            return partial(_fingerprint, self.kern, self.loss.q, self.design, None, None, None)
        return partial(_fingerprint, self.kern, self.loss.q, self.design, rows_digest(self.X), self.y,
                       self.loss.weights)

    def fitted_with(self, majoriser):
        """What a fitted object reports of the fit of this problem by ``majoriser``:
        ``kern``, ``qval``, ``classes``, ``stop``, ``method``, ``design``, ``chosen``
        (why ``solver="auto"`` picked the design, else None), ``solver`` (the
        majoriser) and ``predictor``.  The faces' fitted objects (the path, the
        estimators' model) take these attributes from here.

        Parameters
        ----------
        majoriser : Majoriser
            What the design built for the problem.

        Returns
        -------
        dict
        """
        return {"kern": self.kern, "qval": self.loss.q, "classes": self.classes, "stop": self.stop,
                "method": self.method, "design": self.design.name, "chosen": self.design.chosen,
                "solver": majoriser.solver, "predictor": majoriser.predictor}

    def subset(self, rows):
        """The problem on the rows ``rows`` (a fold's training part).

        Parameters
        ----------
        rows : ndarray of int
            The rows kept.

        Returns
        -------
        Problem
        """
        return replace(self, X=self.X[rows], y=self.y[rows], loss=self.loss.subset(rows))

    def with_q(self, q):
        """The same problem with the loss exponent ``q``.

        Parameters
        ----------
        q : float
            The exponent.

        Returns
        -------
        Problem
            ``self`` when ``q`` is already its exponent.
        """
        return self if float(q) == self.loss.q else replace(self, loss=self.loss.with_q(q))

    def with_labels(self, y):
        """The same problem for other +-1 labels (a one-vs-rest target).

        Parameters
        ----------
        y : ndarray, shape (n,)
            Labels in {-1, +1}.

        Returns
        -------
        Problem
        """
        return replace(self, y=y)

    def with_lambdas(self, lambdas):
        """The same problem along other lambdas.

        Parameters
        ----------
        lambdas : array_like of float
            Positive, decreasing.

        Returns
        -------
        Problem
        """
        return replace(self, lambdas=np.asarray(lambdas, dtype=float))
