"""
A path and its cross-validation
===============================

Kernel DWD along a decreasing lambda path, as the R package fits it, then the
cross-validated misclassification error of the same path with R's
``lambda.min`` and ``lambda.1se``.
"""

import matplotlib.pyplot as plt
import numpy as np

import kerndwd

rng = np.random.default_rng(0)
X = rng.standard_normal((200, 2))
y = np.where((X**2).sum(axis=1) + 0.4 * rng.standard_normal(200) > 1.4, 1, -1)
lambdas = 10.0 ** np.linspace(1, -3, 20)
kern = kerndwd.rbfdot(sigma=1.0)

path = kerndwd.fit(X, y, lambdas, kern=kern, stop="kkt", eps=1e-8)
cvres = kerndwd.cv(X, y, lambdas, kern=kern, nfolds=5, random_state=0)
print(path)
print(cvres)

fig, axes = plt.subplots(1, 2, figsize=(10, 4))
kerndwd.plot_path(path, ax=axes[0], linewidth=0.6)
kerndwd.plot_cv(cvres, ax=axes[1])
fig.tight_layout()

# %%
# The chosen lambda classifies new points through ``predict``; lambdas that
# are not on the path are interpolated between its two neighbours.
X_new = rng.standard_normal((5, 2))
print(kerndwd.predict(path, X_new, type="class", lambdas=cvres.lambda_1se)[:, 0])
