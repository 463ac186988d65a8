"""
Data piling: DWD against the SVM in high dimension
==================================================

With far more variables than observations (here p = 200, n = 100) the SVM
projects many training points exactly onto its margin: they "pile up".
DWD, which the paper motivates by this, spreads them out.  The histograms
show the training points projected on each method's normal direction.
"""

import matplotlib.pyplot as plt
import numpy as np
from sklearn.svm import LinearSVC

import kerndwd
from kerndwd import datasets

X, y = datasets.make_data_piling(n_per_class=50, p=200, random_state=0)
dwd = kerndwd.fit(X, y, [0.01], kern=kerndwd.vanilladot(), stop="kkt", eps=1e-8)
beta = dwd.coef[:, 0]
svm = LinearSVC(C=1.0, loss="hinge", dual=True, max_iter=100000).fit(X, y)
w = svm.coef_[0]

proj_dwd = X @ beta / np.linalg.norm(beta)
proj_svm = X @ w / np.linalg.norm(w)


def piled(proj, margin):
    return int(np.sum(np.isclose(np.abs(proj), margin, rtol=1e-3)))


margin_svm = 1.0 / np.linalg.norm(w)
offset_svm = svm.intercept_[0] / np.linalg.norm(w)
print(f"points on the SVM margin: {piled(proj_svm + offset_svm, margin_svm)}")

fig, axes = plt.subplots(1, 2, figsize=(10, 3.5), sharey=True)
for ax, proj, title in [(axes[0], proj_svm, "SVM direction"),
                        (axes[1], proj_dwd, "DWD direction")]:
    ax.hist(proj[y < 0], bins=30, color="tab:blue", alpha=0.7, label="class -1")
    ax.hist(proj[y > 0], bins=30, color="tab:red", alpha=0.7, label="class +1")
    ax.set_title(title)
    ax.set_xlabel("projection of the training points")
axes[0].legend()
fig.tight_layout()
