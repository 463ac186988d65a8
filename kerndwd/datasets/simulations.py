"""The paper's simulations: ``make_table1_example`` (the four timing examples of
Table 1), :class:`GaussianMixture` / ``make_mixture`` (Figure 1, with its
Bayes rule and a Monte-Carlo Bayes error), and ``make_data_piling``
(Figure 2).  Each takes a ``random_state`` (an int, ``None`` or a
``numpy.random.Generator``).
"""

from __future__ import annotations

import numpy as np

__all__ = ["make_table1_example", "GaussianMixture", "make_mixture", "make_data_piling", "PAPER_BAYES_ERROR",
           "FIGURE1_CENTRES_SEED"]

def _rng(random_state):
    if isinstance(random_state, np.random.Generator):
        return random_state
    if random_state is None or (isinstance(random_state, (int, np.integer)) and not isinstance(random_state, bool)):
        return np.random.default_rng(random_state)
    raise TypeError(f"random_state must be None, an int or a numpy Generator, got {type(random_state).__name__}")


def _check_count(v, name, minimum=1):
    if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {v!r}")
    return int(v)


#: Class-mean shift of Table 1's example 1 (the digit after "+-2." is lost in
#: the paper's text; 2.2 is the value of Marron, Todd & Ahn's example).
TABLE1_SHIFT = 2.2


def make_table1_example(example, n=500, p=50, random_state=None):
    """One data set of Table 1's timing examples (after Marron, Todd & Ahn 2007).

    The first ``n // 2`` rows are class +1, the rest class -1 (half and half,
    as the paper says).  The paper's text of the four settings is partly
    illegible; where it is, the choice below is ours:

    1. ``N(+-mu, I_p)``, ``mu = (2.2, 0, ..., 0)``.
    2. ``N(+-mu, I_p)``, ``mu = (2.2, 2.2, 0, ..., 0)``: two informative
       coordinates (the values are lost in the text; we reuse 2.2).
    3. Outliers: as example 1, but a random 20% of each class has its first
       coordinate's mean at ``+-100`` instead of ``+-2.2`` (the ``+-100`` is in
       the text; the 20% is our choice).
    4. Non-linear: the first ``p // 2`` coordinates are standard Gaussian for
       class +1 and ``0.09`` times standard Gaussian for class -1 (the
       legible "0.09 times standard Gaussian"), and the last ``p // 2`` are
       the squares of the first ``p // 2``, for both classes.  The classes
       then differ only in spread, which the squared coordinates expose to a
       linear rule.

    Parameters
    ----------
    example : {1, 2, 3, 4}
        Which setting.
    n : int, default 500
        Number of rows, at least 2.
    p : int, default 50
        Number of columns, at least 2.
    random_state : int, numpy.random.Generator or None
        Seeds the draw.

    Returns
    -------
    X : ndarray of float, shape (n, p)
    y : ndarray of float, shape (n,)
        +1 for the first ``n // 2`` rows, -1 for the rest.

    Raises
    ------
    ValueError
        An ``example`` other than 1 to 4, or ``n`` or ``p`` below 2.
    TypeError
        A ``random_state`` that is not None, an int or a Generator.

    Examples
    --------
    >>> from kerndwd.datasets import make_table1_example
    >>> X, y = make_table1_example(3, n=40, p=5, random_state=0)
    >>> X.shape, y[:2].tolist(), y[-2:].tolist()
    ((40, 5), [1.0, 1.0], [-1.0, -1.0])
    """
    if example not in (1, 2, 3, 4):
        raise ValueError(f"example must be 1, 2, 3 or 4, got {example!r}")
    n = _check_count(n, "n", 2)
    p = _check_count(p, "p", 2)
    rng = _rng(random_state)
    y = np.repeat([1.0, -1.0], [n // 2, n - n // 2])
    X = rng.standard_normal((n, p))
    if example == 1:
        X[:, 0] += TABLE1_SHIFT * y
    elif example == 2:
        X[:, :2] += TABLE1_SHIFT * y[:, None]
    elif example == 3:
        far = rng.random(n) < 0.2
        X[:, 0] += np.where(far, 100.0, TABLE1_SHIFT) * y
    else:
        h = p // 2
        X[:, :h] *= np.where(y > 0, 1.0, 0.09)[:, None]
        X[:, p - h:] = X[:, :h] ** 2
    return X, y


#: The Bayes error the paper reports for its draw of the Figure 1 mixture.
PAPER_BAYES_ERROR = 0.1645
#: Seed of the centres used by the Figure 1 vignette (see GaussianMixture).
FIGURE1_CENTRES_SEED = 1


class GaussianMixture:
    """The two-class Gaussian mixture of Figure 1 (the mixture of Hastie,
    Tibshirani & Friedman's "Elements of Statistical Learning", ch. 2).

    Ten centres per class are drawn once: ``mu_k+ ~ N((1, 0)', I)`` and
    ``mu_k- ~ N((0, 1)', I)``.  A point of a class picks one of its ten
    centres uniformly at random and is drawn from ``N(mu_k, I / 5)``.  Both
    classes are equally likely, so the Bayes rule is +1 where::

        sum_k exp(-5 ||x - mu_k+||^2 / 2)  >  sum_k exp(-5 ||x - mu_k-||^2 / 2),

    and the Bayes error is ``E[min(eta(X), 1 - eta(X))]`` with
    ``eta = P(Y = +1 | X)``.  It depends on the drawn centres; the paper's
    0.1645 belongs to its own (unpublished) centres.

    Parameters
    ----------
    random_state : int, Generator or None
        Seeds the centres only.  The vignette uses ``FIGURE1_CENTRES_SEED``.
    n_centres : int, default 10
        Centres per class.

    Attributes
    ----------
    centres_pos, centres_neg : ndarray, shape (n_centres, 2)
        The drawn centres of class +1 and of class -1.

    Raises
    ------
    ValueError
        ``n_centres`` not a positive integer.

    See Also
    --------
    make_mixture

    Examples
    --------
    >>> import numpy as np
    >>> from kerndwd.datasets import GaussianMixture
    >>> model = GaussianMixture(random_state=1)
    >>> X, y = model.sample(50, random_state=0)
    >>> X.shape, float((model.bayes_rule(X) == y).mean())
    ((100, 2), 0.81)
    >>> model.posterior(np.array([[1.0, 0.0], [0.0, 1.0]])).round(2).tolist()
    [0.97, 0.2]
    >>> err, se = model.bayes_error(n_mc=20_000, random_state=0)
    >>> bool(abs(err - 0.166) < 0.01)
    True
    """

    #: Variance of each point around its centre (the paper's I/5).
    point_var = 0.2

    def __init__(self, random_state=None, n_centres=10):
        n_centres = _check_count(n_centres, "n_centres")
        rng = _rng(random_state)
        self.centres_pos = rng.standard_normal((n_centres, 2)) + np.array([1.0, 0.0])
        self.centres_neg = rng.standard_normal((n_centres, 2)) + np.array([0.0, 1.0])

    def sample(self, n_per_class=100, random_state=None):
        """``(X, y)``: ``n_per_class`` points of class +1 then as many of class -1.

        Parameters
        ----------
        n_per_class : int, default 100
            Points per class.
        random_state : int, numpy.random.Generator or None
            Seeds the draw (the centres stay the model's).

        Returns
        -------
        X : ndarray of float, shape (2 * n_per_class, 2)
        y : ndarray of float, shape (2 * n_per_class,)
            +1 for the first half, -1 for the second.
        """
        n = _check_count(n_per_class, "n_per_class")
        rng = _rng(random_state)
        sd = np.sqrt(self.point_var)
        pick_pos = rng.integers(0, len(self.centres_pos), n)
        pick_neg = rng.integers(0, len(self.centres_neg), n)
        centres = np.vstack([self.centres_pos[pick_pos], self.centres_neg[pick_neg]])
        X = centres + sd * rng.standard_normal((2 * n, 2))
        y = np.repeat([1.0, -1.0], n)
        return X, y

    def _log_density(self, X, centres):
        d2 = ((X[:, None, :] - centres[None, :, :]) ** 2).sum(axis=2)
        a = -d2 / (2.0 * self.point_var)
        m = a.max(axis=1, keepdims=True)  # log-sum-exp: no underflow far from the centres
        return (m + np.log(np.exp(a - m).sum(axis=1, keepdims=True)))[:, 0]

    def bayes_log_ratio(self, X):
        """``log p(x | +1) - log p(x | -1)``: the Bayes boundary is its zero set.

        Parameters
        ----------
        X : array_like, shape (m, 2)
            Points.

        Returns
        -------
        ndarray of float, shape (m,)

        Raises
        ------
        ValueError
            ``X`` not of shape (m, 2).
        """
        X = np.asarray(X, dtype=float)
        if X.ndim != 2 or X.shape[1] != 2:
            raise ValueError(f"X must have shape (m, 2), got {X.shape}")
        return self._log_density(X, self.centres_pos) - self._log_density(X, self.centres_neg)

    def bayes_rule(self, X):
        """The Bayes classifier: +1 where the positive density is larger, else -1.

        Parameters
        ----------
        X : array_like, shape (m, 2)
            Points.

        Returns
        -------
        ndarray of float, shape (m,)
            -1 or +1.
        """
        return np.where(self.bayes_log_ratio(X) > 0, 1.0, -1.0)

    def posterior(self, X):
        """``eta(x) = P(Y = +1 | X = x)`` (equal class priors).

        Parameters
        ----------
        X : array_like, shape (m, 2)
            Points.

        Returns
        -------
        ndarray of float, shape (m,)
            Probabilities of class +1.
        """
        return 1.0 / (1.0 + np.exp(-self.bayes_log_ratio(X)))

    def bayes_error(self, n_mc=200_000, random_state=None):
        """Monte-Carlo Bayes error and its standard error.

        Averages ``min(eta, 1 - eta)`` over ``2 * n_mc`` draws from the
        mixture: unbiased for the Bayes error and with less variance than
        counting the Bayes rule's mistakes.

        Parameters
        ----------
        n_mc : int, default 200000
            Draws per class.
        random_state : int, numpy.random.Generator or None
            Seeds the draws.

        Returns
        -------
        estimate, se : float
            The Bayes error and its Monte-Carlo standard error.
        """
        X, _ = self.sample(_check_count(n_mc, "n_mc"), random_state)
        eta = self.posterior(X)
        r = np.minimum(eta, 1.0 - eta)
        return float(r.mean()), float(r.std(ddof=1) / np.sqrt(r.size))


def make_mixture(n_per_class=100, centres_state=FIGURE1_CENTRES_SEED, random_state=None):
    """Figure 1 data: ``(X, y, model)`` with ``model`` the :class:`GaussianMixture`
    (its centres seeded by ``centres_state``) and ``(X, y)`` a sample of
    ``n_per_class`` points per class drawn with ``random_state``.

    Parameters
    ----------
    n_per_class : int, default 100
        Points per class.
    centres_state : int, numpy.random.Generator or None, default FIGURE1_CENTRES_SEED
        Seeds the centres of the mixture.
    random_state : int, numpy.random.Generator or None
        Seeds the sample.

    Returns
    -------
    X : ndarray of float, shape (2 * n_per_class, 2)
    y : ndarray of float, shape (2 * n_per_class,)
        +1 for the first half, -1 for the second.
    model : GaussianMixture
        The mixture, with its Bayes rule and Bayes error.

    Examples
    --------
    >>> from kerndwd.datasets import make_mixture
    >>> X, y, model = make_mixture(50, random_state=0)
    >>> X.shape, float((model.bayes_rule(X) == y).mean())
    ((100, 2), 0.81)
    """
    model = GaussianMixture(centres_state)
    X, y = model.sample(n_per_class, random_state)
    return X, y, model


def make_data_piling(n_per_class=50, p=200, shift=3.0, random_state=None):
    """Figure 2's data-piling example: ``n_per_class`` points from
    ``N(-mu, I_p)`` (class -1, first) then as many from ``N(mu, I_p)`` (class
    +1), ``mu = (shift, 0, ..., 0)``.  With p = 200 >> n = 100 the SVM piles
    many points on its margin; DWD much less.

    Parameters
    ----------
    n_per_class : int, default 50
        Points per class.
    p : int, default 200
        Number of columns.
    shift : float, default 3.0
        The first coordinate of ``mu``.
    random_state : int, numpy.random.Generator or None
        Seeds the draw.

    Returns
    -------
    X : ndarray of float, shape (2 * n_per_class, p)
    y : ndarray of float, shape (2 * n_per_class,)
        -1 for the first half, +1 for the second.

    Examples
    --------
    >>> from kerndwd.datasets import make_data_piling
    >>> X, y = make_data_piling(random_state=0)
    >>> X.shape, float(y[0]), float(y[-1])
    ((100, 200), -1.0, 1.0)
    """
    n = _check_count(n_per_class, "n_per_class")
    p = _check_count(p, "p")
    rng = _rng(random_state)
    y = np.repeat([-1.0, 1.0], n)
    X = rng.standard_normal((2 * n, p))
    X[:, 0] += float(shift) * y
    return X, y
