"""
Class probabilities and their calibration
=========================================

On the Gaussian mixture of Figure 1 the true probability
``eta(x) = P(Y = +1 | x)`` is known, so each route to probabilities can be
checked against it:

* the inverse of the population minimiser (4.4): exact for the optimal
  decision function of the population, but 1/2 wherever
  ``|f| <= q/(q+1)``, a band a penalised fit fills;
* Platt's sigmoid fitted to held-out decision values
  (``DWDClassifier(probability=True)``);
* scikit-learn's ``CalibratedClassifierCV`` on an SVC, for comparison.
"""

import matplotlib.pyplot as plt
import numpy as np
from sklearn.calibration import CalibratedClassifierCV, calibration_curve
from sklearn.svm import SVC

import kerndwd
from kerndwd import DWDClassifier, datasets

X, y, model = datasets.make_mixture(200, random_state=5)
X_test, y_test = model.sample(5000, random_state=6)
eta = model.posterior(X_test)
yt = (y_test > 0).astype(float)

path = kerndwd.fit(X, y, [0.003], kern=kerndwd.rbfdot(1.0), stop="kkt", eps=1e-8)
p_inverse = kerndwd.predict(path, X_test, type="prob")[:, 0]
platt = DWDClassifier(lambd=0.003, kernel=kerndwd.rbfdot(1.0), probability=True,
                      random_state=0).fit(X, y)
p_platt = platt.predict_proba(X_test)[:, 1]
svc = CalibratedClassifierCV(SVC(kernel="rbf", gamma=1.0, C=1.0), method="sigmoid",
                             cv=5).fit(X, y)
p_svc = svc.predict_proba(X_test)[:, 1]

print(f"{'':28s} {'Brier':>7s} {'MSE to eta':>11s}")
for name, p in [("DWD, inverse of (4.4)", p_inverse), ("DWD, Platt (held out)", p_platt),
                ("SVC, CalibratedClassifierCV", p_svc), ("true eta", eta)]:
    print(f"{name:28s} {np.mean((p - yt) ** 2):7.4f} {np.mean((p - eta) ** 2):11.4f}")

fig, ax = plt.subplots(figsize=(5.5, 5))
for name, p in [("DWD, inverse of (4.4)", p_inverse), ("DWD, Platt", p_platt),
                ("SVC, sigmoid", p_svc)]:
    frac, mean = calibration_curve(yt, p, n_bins=10)
    ax.plot(mean, frac, marker="o", label=name)
ax.plot([0, 1], [0, 1], color="0.6", linestyle=":")
ax.set_xlabel("predicted probability")
ax.set_ylabel("observed frequency of class +1")
ax.set_title("Reliability curves")
ax.legend()
