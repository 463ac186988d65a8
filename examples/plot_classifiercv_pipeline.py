"""
A cross-validated DWD pipeline on a UCI data set
================================================

``DWDClassifierCV`` chooses lambda and q by path cross-validation (R's
``tunedwd`` rule) inside a scikit-learn pipeline; the sonar data come
through :mod:`kerndwd.datasets`, which checks the file's sha256.
"""

import matplotlib.pyplot as plt
from sklearn.model_selection import train_test_split
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from kerndwd import DWDClassifierCV, datasets

X, y = datasets.load_sonar()
X_train, X_test, y_train, y_test = train_test_split(X, y, test_size=1 / 3, random_state=0, stratify=y)
model = make_pipeline(StandardScaler(), DWDClassifierCV(kernel="rbf", gamma="scale", qvals=(0.5, 1, 4),
                                                        choose="lambda_1se", random_state=0))
model.fit(X_train, y_train)
cv = model[-1]
print(f"chosen q = {cv.q_:g}, lambda = {cv.lambda_:.3g}; test error = {1 - model.score(X_test, y_test):.3f}")

fig, ax = plt.subplots(figsize=(6, 4))
for k, q in enumerate(cv.cv_results_["qvals"]):
    ax.plot(cv.cv_results_["lambdas"], cv.cv_results_["cvm"][k], marker="o", markersize=3, label=f"q = {q:g}")
ax.set_xscale("log")
ax.axvline(cv.lambda_, color="0.4", linestyle=":")
ax.set_xlabel("lambda")
ax.set_ylabel("cross-validated error")
ax.legend()
