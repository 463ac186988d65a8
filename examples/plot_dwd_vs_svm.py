"""
Kernel DWD against the kernel SVM on a Gaussian mixture
=======================================================

The setting of the paper's Figure 1: two classes, each a mixture of ten
Gaussians, where the Bayes rule is known.  Kernel DWD (lambda chosen by
cross-validation) and scikit-learn's SVC (C chosen the same way) draw their
boundaries next to the Bayes boundary.
"""

import matplotlib.pyplot as plt
import numpy as np
from sklearn.model_selection import GridSearchCV
from sklearn.svm import SVC

import kerndwd
from kerndwd import datasets

X, y, model = datasets.make_mixture(100, random_state=3)
X_test, y_test = model.sample(2000, random_state=4)
kern = kerndwd.rbfdot(sigma=1.0)
lambdas = 10.0 ** np.linspace(0, -4, 15)

cvres = kerndwd.cv(X, y, lambdas, kern=kern, random_state=0)
dwd = kerndwd.fit(X, y, [cvres.lambda_min], kern=kern, stop="kkt", eps=1e-8)
costs = {"C": 10.0 ** np.linspace(-2, 3, 11)}
svm = GridSearchCV(SVC(kernel="rbf", gamma=1.0), costs, cv=5).fit(X, y)

err_dwd = np.mean(dwd.predict(X_test)[:, 0] != y_test)
err_svm = np.mean(svm.predict(X_test) != y_test)
bayes = np.mean(model.bayes_rule(X_test) != y_test)
print(f"test error: DWD {err_dwd:.3f}, SVM {err_svm:.3f}, Bayes rule {bayes:.3f}")

grid = np.linspace(-2.5, 3.5, 200)
G1, G2 = np.meshgrid(grid, grid)
G = np.column_stack([G1.ravel(), G2.ravel()])
fig, ax = plt.subplots(figsize=(7.5, 6))
ax.scatter(X[y > 0, 0], X[y > 0, 1], color="tab:red", s=12, label="class +1")
ax.scatter(X[y < 0, 0], X[y < 0, 1], color="tab:blue", s=12, label="class -1")
for values, color, label in [(dwd.decision_function(G)[:, 0], "black", "DWD"),
                             (svm.decision_function(G), "tab:green", "SVM"),
                             (model.bayes_log_ratio(G), "tab:purple", "Bayes")]:
    ax.contour(G1, G2, values.reshape(G1.shape), levels=[0.0], colors=color,
               linewidths=1.2)
    ax.plot([], [], color=color, label=label)
# the legend beside the axes, where it hides no point
ax.legend(loc="upper left", bbox_to_anchor=(1.02, 1.0))
ax.set_xlabel("x1")
ax.set_ylabel("x2")
ax.set_title("Decision boundaries")
fig.tight_layout()
