"""What the tests of block sweeps on Dask rows share: circle data with
weights, and the check that a fit on Dask rows is the fit in memory."""

import numpy as np


def circle(n, seed=0):
    """``(X, y, w)``: ``n`` rows in 2-D, labels by a noisy circle, weights in [0.5, 2]."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, 2))
    y = np.where((X ** 2).sum(axis=1) + 0.3 * rng.standard_normal(n) > 1.4, 1, -1)
    return X, y, rng.uniform(0.5, 2.0, n)


def agree(on_dask, path, X):
    """The same sweeps and lambdas, and decision values at ``X`` and objectives
    equal to 1e-8 relative."""
    np.testing.assert_array_equal(on_dask.npass, path.npass)
    assert on_dask.jerr == path.jerr == 0
    f, g = path.predict(X, type="link"), on_dask.predict(X, type="link")
    assert np.abs(g - f).max() <= 1e-8 * np.abs(f).max()
    np.testing.assert_allclose(on_dask.objective, path.objective, rtol=1e-8, atol=0)
    np.testing.assert_allclose(on_dask.lambdas, path.lambdas, rtol=0, atol=0)
