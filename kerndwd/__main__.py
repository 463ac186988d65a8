"""``python -m kerndwd``: a short demonstration fit on simulated data."""

import numpy as np

import kerndwd


def main():
    rng = np.random.default_rng(0)
    n, p = 200, 2
    X = rng.standard_normal((n, p))
    y = np.where((X**2).sum(axis=1) + 0.4 * rng.standard_normal(n) > 1.4, 1, -1)
    lambdas = 10.0 ** np.linspace(1, -3, 10)
    path = kerndwd.fit(X, y, lambdas, kern=kerndwd.rbfdot(sigma=1.0), qval=1)
    print(path)
    err = (kerndwd.predict(path, X) != y[:, None]).mean(axis=0)
    for lam, e, k in zip(path.lambda_, err, path.kkt):
        print(f"lambda={lam:9.4g}  training error={e:.3f}  ||grad||={k:.2e}")


if __name__ == "__main__":
    main()
