"""Plots of a fitted path and of a cross-validation curve, like the R
package's ``plot(fit)`` and ``plot(cvfit)``.

matplotlib is an optional dependency, imported only when a plot is drawn.
Both functions draw on the given Axes (or a new figure's) and return it, so
a caller can restyle or save the figure.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.typing import ColorType

    from .cv import CVResult, TuneResult
    from .path import DWDPath

__all__ = ["plot_path", "plot_cv"]


#: y-label of the path plot per kind of coefficients (see ``DWDPath.predictor``)
_COEF_LABELS = {"beta": "coefficients (beta)", "kernel": "kernel coefficients (alpha)",
                "features": "feature weights (theta)"}


def _pyplot() -> Any:
    try:
        import matplotlib.pyplot as plt
    except ImportError:
        raise ImportError(
            "plotting needs matplotlib: pip install matplotlib (or pip install 'kerndwd[plot]')"
        ) from None
    return plt


def _axes(ax: Axes | None) -> Axes:
    if ax is None:
        _, ax = _pyplot().subplots()
    else:
        _pyplot()  # the same clear message when matplotlib is missing
    return ax


def plot_path(path: DWDPath, ax: Axes | None = None, *, color: ColorType | None = None, linewidth: float = 1.0,
              **line_kw: Any) -> Axes:
    """Coefficient paths against ``log(lambda)``, like ``plot.kerndwd`` in R.

    One line per row of ``path.alpha`` after the intercept: the ``p``
    coefficients ``beta_j`` of a fit in the linear form, the ``n`` kernel
    coefficients ``alpha_i`` of a fit in the kernel form, the ``m`` feature
    weights of a kernel approximation.

    Parameters
    ----------
    path : DWDPath
        A fitted path from :func:`kerndwd.fit`, with at least one column.
    ax : matplotlib.axes.Axes, optional
        Where to draw; default a new figure.
    color : color or None, default None
        One color for every line; default matplotlib's color cycle.
    linewidth : float, default 1.0
    **line_kw
        Passed to ``Axes.plot`` for every line.

    Returns
    -------
    matplotlib.axes.Axes
        The Axes drawn on; its lines are the coefficient paths, in row order,
        with x data ``log(path.lambda_)``.

    Raises
    ------
    TypeError
        When ``path`` is not a :class:`~kerndwd.DWDPath`.
    ValueError
        When the path has no fitted columns.
    ImportError
        When matplotlib is not installed.

    Examples
    --------
    >>> import numpy as np, kerndwd
    >>> rng = np.random.default_rng(0)
    >>> X = rng.standard_normal((50, 4)); y = np.where(X[:, 0] > 0, 1, -1)
    >>> path = kerndwd.fit(X, y, 10.0 ** np.linspace(0, -3, 10), kern=kerndwd.vanilladot(), stop="kkt")
    >>> ax = kerndwd.plot_path(path)
    >>> len(ax.lines), ax.get_xlabel()  # one line per coefficient
    (4, 'log(lambda)')
    """
    from .path import DWDPath

    if not isinstance(path, DWDPath):
        raise TypeError(f"path must be a DWDPath returned by kerndwd.fit, got {type(path).__name__}")
    if path.lambda_.size == 0:
        raise ValueError(f"the path has no fitted columns (jerr={path.jerr}); nothing to plot")
    ax = _axes(ax)
    loglam = np.log(path.lambda_)
    coefs = path.alpha[1:]
    kw = dict(line_kw, linewidth=linewidth)
    if color is not None:
        kw["color"] = color
    for row in coefs:
        ax.plot(loglam, row, **kw)
    ax.set_xlabel("log(lambda)")
    ax.set_ylabel(_COEF_LABELS.get(path.predictor.coef_space, "coefficients"))
    ax.set_title(f"DWD path, q = {path.qval:g} ({path.solver})")
    return ax


def plot_cv(cvres: CVResult | TuneResult, ax: Axes | None = None, *, point_color: ColorType = "red",
            bar_color: ColorType = "darkgrey", sign_lambda: int = 1) -> Axes:
    """Cross-validation curve, like ``plot.cv.kerndwd`` in R.

    Draws ``cvm`` against ``log(lambda)`` as points with error bars from
    ``cvlower`` to ``cvupper``, and dotted vertical lines at
    ``log(lambda_min)`` and ``log(lambda_1se)``.

    Parameters
    ----------
    cvres : CVResult or TuneResult
        From :func:`kerndwd.cv`; a :class:`~kerndwd.cv.TuneResult` plots the
        curve of its chosen q (``cvres.best``).
    ax : matplotlib.axes.Axes, optional
        Where to draw; default a new figure.
    point_color, bar_color : colors
        Of the ``cvm`` points and of the error bars.
    sign_lambda : {1, -1}, default 1
        ``-1`` plots against ``-log(lambda)`` (lambda decreasing to the right).

    Returns
    -------
    matplotlib.axes.Axes
        Its lines labelled ``"lambda.min"`` and ``"lambda.1se"`` are the two
        vertical markers; its one error-bar container holds one bar per lambda
        (lambdas with NaN ``cvm`` are skipped).

    Raises
    ------
    TypeError
        When ``cvres`` is neither a :class:`~kerndwd.CVResult` nor a
        :class:`~kerndwd.TuneResult`.
    ValueError
        When ``sign_lambda`` is not 1 or -1.
    ImportError
        When matplotlib is not installed.

    Examples
    --------
    >>> import numpy as np, kerndwd
    >>> rng = np.random.default_rng(0)
    >>> X = rng.standard_normal((60, 2)); y = np.where(X[:, 0] > 0, 1, -1)
    >>> res = kerndwd.cv(X, y, 10.0 ** np.linspace(0, -3, 8), kern=kerndwd.vanilladot(),
    ...                  random_state=1)
    >>> ax = kerndwd.plot_cv(res)
    >>> sorted(line.get_label() for line in ax.lines if line.get_label().startswith("lambda"))
    ['lambda.1se', 'lambda.min']
    """
    from .cv import CVResult, TuneResult

    if isinstance(cvres, TuneResult):
        cvres = cvres.best
    if not isinstance(cvres, CVResult):
        raise TypeError(f"cvres must be a CVResult returned by kerndwd.cv, got {type(cvres).__name__}")
    if sign_lambda not in (1, -1):
        raise ValueError(f"sign_lambda must be 1 or -1, got {sign_lambda!r}")
    ax = _axes(ax)
    ok = ~np.isnan(cvres.cvm)
    x = sign_lambda * np.log(cvres.lambda_[ok])
    cvm = cvres.cvm[ok]
    upper = np.where(np.isnan(cvres.cvupper[ok]), cvm, cvres.cvupper[ok])
    lower = np.where(np.isnan(cvres.cvlower[ok]), cvm, cvres.cvlower[ok])
    ax.errorbar(x, cvm, yerr=np.vstack([cvm - lower, upper - cvm]), fmt="o", color=point_color,
                ecolor=bar_color, markersize=4, capsize=2, label="cvm")
    ax.axvline(sign_lambda * np.log(cvres.lambda_min), linestyle=":", color="0.3", label="lambda.min")
    ax.axvline(sign_lambda * np.log(cvres.lambda_1se), linestyle=":", color="0.3", label="lambda.1se")
    ax.set_xlabel("log(lambda)" if sign_lambda == 1 else "-log(lambda)")
    ax.set_ylabel(cvres.name)
    ax.set_title(f"{cvres.nfolds}-fold CV, q = {cvres.qval:g}")
    return ax
