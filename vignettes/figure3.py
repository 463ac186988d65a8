"""Figure 3 of the paper: the generalized DWD loss ``V_q`` (3.2) for
q = 0.5, 1, 4, 8, and the SVM hinge loss ``max(0, 1 - u)``.

``python -m vignettes.figure3`` writes ``vignettes/output/figure3.png``.
As q grows, ``V_q`` decreases pointwise towards the hinge loss; every
``V_q`` equals ``1 - u`` up to ``u = q/(q+1)`` and then decays like
``u^(-q)`` instead of reaching zero.
"""

from __future__ import annotations

import argparse

import numpy as np

import kerndwd

from . import output_dir

QVALS = (0.5, 1.0, 4.0, 8.0)
U = np.linspace(-0.5, 2.5, 601)


def curves():
    """``{label: values on U}`` for the four ``V_q`` and the hinge loss."""
    out = {f"q = {q:g}": kerndwd.dwd_loss(U, q) for q in QVALS}
    out["SVM hinge"] = np.maximum(0.0, 1.0 - U)
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python -m vignettes.figure3", description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=None, help="output folder (default vignettes/output)")
    args = ap.parse_args(argv)
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(5.5, 4.2), dpi=100)
    styles = ["-", "--", "-.", ":", "-"]
    colours = ["tab:blue", "tab:orange", "tab:green", "tab:red", "black"]
    for (label, v), ls, c in zip(curves().items(), styles, colours):
        ax.plot(U, v, ls, color=c, lw=1.6 if label != "SVM hinge" else 1.0, label=label)
    ax.set_xlabel("u")
    ax.set_ylabel("loss")
    ax.set_title(r"DWD loss $V_q(u)$ and the hinge loss")
    ax.set_ylim(0, 1.6)
    ax.set_xlim(U[0], U[-1])
    ax.legend(frameon=False)
    fig.tight_layout()
    path = output_dir(args.out) / "figure3.png"
    fig.savefig(path)
    plt.close(fig)
    print(f"wrote {path}")
    return path


if __name__ == "__main__":
    main()
