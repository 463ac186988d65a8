"""
A cross-validated DWD pipeline on the breast cancer data
========================================================

``DWDClassifierCV`` chooses lambda and q by path cross-validation (R's
``tunedwd`` rule) inside a scikit-learn pipeline.  The Wisconsin breast
cancer data (569 tumours, 30 measurements each) ship with scikit-learn, so
nothing is downloaded.  The scaler is part of the pipeline: it is fitted on
the training rows only, and the Gaussian kernel then sees every measurement
on the same scale (unscaled, the largest columns would decide every
distance).
"""

import matplotlib.pyplot as plt
from sklearn.datasets import load_breast_cancer
from sklearn.model_selection import train_test_split
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from kerndwd import DWDClassifierCV

X, y = load_breast_cancer(return_X_y=True)
X_train, X_test, y_train, y_test = train_test_split(X, y, test_size=1 / 3, random_state=0,
                                                    stratify=y)
dwd = DWDClassifierCV(kernel="rbf", gamma="scale", qvals=(0.5, 1, 4), choose="lambda_1se",
                      random_state=0)
model = make_pipeline(StandardScaler(), dwd)
model.fit(X_train, y_train)
cv = model[-1]
test_error = 1 - model.score(X_test, y_test)
print(f"chosen q = {cv.q_:g}, lambda = {cv.lambda_:.3g}; test error = {test_error:.3f}")

fig, ax = plt.subplots(figsize=(6, 4))
for k, q in enumerate(cv.cv_results_["qvals"]):
    ax.plot(cv.cv_results_["lambdas"], cv.cv_results_["cvm"][k], marker="o", markersize=3,
            label=f"q = {q:g}")
ax.set_xscale("log")
ax.axvline(cv.lambda_, color="0.4", linestyle=":", label="chosen lambda")
ax.set_xlabel("lambda")
ax.set_ylabel("cross-validated error")
ax.legend()
