"""Regenerate the R fixture files through the R bridge.

    python -m reference.regenerate_fixtures OUTDIR [--only CASE ...]

Reads the inputs stored in ``reference/fixtures/kerndwd-r-2.0.3/`` (data,
kernel, lambda, q, weights, eps, maxit, fold ids, new rows), runs the R
package kerndwd on them through rpy2, and writes files of the same schema
(see that folder's README.md) and a MANIFEST.json into OUTDIR.  The stored
fixtures themselves are never touched; compare OUTDIR with them (or point
the fixture loader at it) to see whether another build of R or of kerndwd
computes the same numbers.

Needs R, rpy2 and the R package kerndwd (``install.packages("kerndwd")``
in R).  Without them it stops with a message naming the missing piece.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

from reference import rbridge
from reference.fixtures import FIXTURE_DIR

#: Fields copied unchanged from the stored fixture (inputs and descriptions).
_INPUT_FIELDS = {
    "kerndwd_fit": ("case", "kind", "call", "data_description", "note", "n", "p", "x", "y", "kernel",
                    "lambda", "qval", "wt", "eps", "maxit", "newx"),
    "kernel_matrix": ("case", "kind", "call", "kernel", "x", "x2"),
    "cv.kerndwd": ("case", "kind", "call", "data_description", "x", "y", "kernel", "lambda_input", "qval",
                   "eps", "maxit", "foldid", "nfolds"),
    "tunedwd": ("case", "kind", "call", "data_description", "x", "y", "kernel", "lambda_input", "qvals",
                "eps", "maxit", "foldid", "nfolds"),
    "dwdloss": ("case", "kind", "call", "u", "qvals"),
}


# --------------------------------------------------------------------------
# R helpers
# --------------------------------------------------------------------------
def _r():
    return rbridge._robjects()


def _capture(fn_code, **data):
    """Evaluate the R function ``fn_code`` on ``data`` (bound as its
    arguments); return (value, list of warning messages)."""
    ro = _r()
    fn = ro.r(fn_code)
    wrapper = ro.r(
        "function(f, args) { w <- character(0);"
        " v <- withCallingHandlers(do.call(f, args), warning = function(m) {"
        " w <<- c(w, conditionMessage(m)); invokeRestart('muffleWarning') });"
        " list(value = v, warnings = w) }")
    from rpy2.rinterface import Sexp

    args = ro.vectors.ListVector({k: v if isinstance(v, Sexp) else ro.FloatVector([float(v)])
                                  for k, v in data.items()})
    out = wrapper(fn, args)
    get = ro.r["[["]
    return get(out, "value"), [str(s) for s in get(out, "warnings")]


def _num(obj):
    return rbridge._to_numpy(obj)


def _matrix(x):
    return rbridge._matrix(np.asarray(x, dtype=float))


def _vec(v):
    return rbridge._vector(v)


def _kern(spec):
    return rbridge._kernel("kerndwd", spec)


def _null_or(v):
    return _r().NULL if v is None else _vec(v)


def _rows(a):
    a = np.asarray(a, dtype=float)
    return a.tolist()


def _intern_kernel_matrix():
    return _r().r("kerndwd:::kernelMatrix")


def uses_linear_solver(spec, n, p, weighted):
    """The R package's rule (see docs/r-behaviour.md): linear solver for vanilladot when
    n >= p (unweighted) or n > p (weighted)."""
    if spec["name"] != "vanilladot":
        return False
    return n > p if weighted else n >= p


# --------------------------------------------------------------------------
# one file per kind
# --------------------------------------------------------------------------
def regen_fit(d):
    x, y, newx = np.asarray(d["x"], float), np.asarray(d["y"], float), np.asarray(d["newx"], float)
    n, p = x.shape
    wt = None if d["wt"] is None else np.asarray(d["wt"], float)
    fit, fit_warn = _capture(
        "function(x, y, kern, lambda, qval, wt, eps, maxit)"
        " kerndwd::kerndwd(x, y, kern, lambda, qval=qval, wt=wt, eps=eps, maxit=maxit)",
        x=_matrix(x), y=_vec(y), kern=_kern(d["kernel"]), **{"lambda": _vec(d["lambda"])},
        qval=float(d["qval"]), wt=_null_or(wt), eps=float(d["eps"]), maxit=float(d["maxit"]))
    get = _r().r["[["]
    alpha = _num(get(fit, "alpha"))
    if alpha.ndim == 1:
        alpha = alpha.reshape(-1, 1) if alpha.size else alpha.reshape(-1, 0)
    link, pred_warn = _capture("function(fit, kern, x, newx) predict(fit, kern, x, newx, type='link')",
                               fit=fit, kern=_kern(d["kernel"]), x=_matrix(x), newx=_matrix(newx))
    cls, _ = _capture("function(fit, kern, x, newx) predict(fit, kern, x, newx, type='class')",
                      fit=fit, kern=_kern(d["kernel"]), x=_matrix(x), newx=_matrix(newx))
    link = _num(link).reshape(newx.shape[0], -1)
    cls = _num(cls).reshape(newx.shape[0], -1)
    linear = uses_linear_solver(d["kernel"], n, p, wt is not None)
    if alpha.shape[1] == 0:
        direct = np.zeros((newx.shape[0], 0))
    elif linear:
        direct = alpha[0] + newx @ alpha[1:]
    else:
        Kc = _num(_intern_kernel_matrix()(_kern(d["kernel"]), _matrix(newx), _matrix(x)))
        direct = alpha[0] + Kc @ alpha[1:]
    solver = ("w" if wt is not None else "") + ("ldwd" if linear else "kdwd")
    same = bool(link.shape == direct.shape and np.allclose(link, direct, rtol=1e-10, atol=0))
    return dict(
        solver=solver, alpha=_rows(alpha), alpha_shape=list(alpha.shape),
        fit_lambda=np.atleast_1d(_num(get(fit, "lambda"))).tolist(),
        npass=np.atleast_1d(_num(get(fit, "npass"))).astype(int).tolist(),
        jerr=int(_num(get(fit, "jerr"))[0]), fit_warnings=fit_warn,
        link=_rows(link), **{"class": _rows(cls)}, predict_warnings=pred_warn,
        link_direct=_rows(direct), predict_matches_direct=same,
    )


def regen_kernel(d):
    km = _intern_kernel_matrix()
    kern = _kern(d["kernel"])
    return dict(K=_rows(_num(km(kern, _matrix(d["x"])))),
                K_cross=_rows(_num(km(kern, _matrix(d["x"]), _matrix(d["x2"])))))


def regen_cv(d):
    res, warn = _capture(
        "function(x, y, kern, lambda, foldid, qval, eps, maxit)"
        " kerndwd::cv.kerndwd(x, y, kern, lambda, foldid=foldid, qval=qval, eps=eps, maxit=maxit)",
        x=_matrix(d["x"]), y=_vec(d["y"]), kern=_kern(d["kernel"]), **{"lambda": _vec(d["lambda_input"])},
        foldid=_r().IntVector([int(v) for v in d["foldid"]]), qval=float(d["qval"]), eps=float(d["eps"]),
        maxit=float(d["maxit"]))
    out = rbridge._to_python(res)
    keep = {}
    for k in ("lambda", "cvm", "cvsd", "cvupper", "cvlower"):
        keep[k] = np.atleast_1d(out[k]).tolist()
    for k in ("lambda.min", "lambda.1se", "cvm.min", "cvm.1se"):
        if out.get(k) is not None:
            keep[k] = float(np.atleast_1d(out[k])[0])
    keep["warnings"] = warn
    return keep


def regen_tune(d):
    res, warn = _capture(
        "function(x, y, kern, lambda, qvals, eps, maxit, foldid)"
        " kerndwd::tunedwd(x, y, kern, lambda, qvals=qvals, eps=eps, maxit=maxit, foldid=foldid)",
        x=_matrix(d["x"]), y=_vec(d["y"]), kern=_kern(d["kernel"]), **{"lambda": _vec(d["lambda_input"])},
        qvals=_vec(d["qvals"]), eps=float(d["eps"]), maxit=float(d["maxit"]),
        foldid=_r().IntVector([int(v) for v in d["foldid"]]))
    out = rbridge._to_python(res)
    keep = {"lam.tune": float(np.atleast_1d(out["lam.tune"])[0]),
            "q.tune": float(np.atleast_1d(out["q.tune"])[0]), "warnings": warn}
    # The per-q cross-validation results: kept when R returns them as a list
    # with one entry per q holding the fields the stored fixture has.
    cvres = _per_q_results(out, d)
    if cvres is not None:
        keep["cvres"] = cvres
    else:
        keep["note"] = ("R's tunedwd result did not carry per-q results in the recorded form; "
                        f"its top-level components were {sorted(k for k in out if isinstance(k, str))}")
    return keep


def _per_q_results(out, d):
    wanted = ("lambda", "cvm", "cvsd", "lambda.min", "lambda.1se")
    for value in out.values():
        if isinstance(value, dict) and len(value) == len(d["qvals"]):
            entries = list(value.values())
            if all(isinstance(e, dict) and all(k in e for k in wanted) for e in entries):
                res = []
                for q, e in zip(d["qvals"], entries):
                    item = {"qval": q}
                    for k, v in e.items():
                        item[k] = np.asarray(v).tolist() if isinstance(v, np.ndarray) else v
                    res.append(item)
                return res
    return None


def regen_loss(d):
    fn = _r().r("kerndwd:::dwdloss")
    return dict(loss=[_num(fn(_vec(d["u"]), float(q))).tolist() for q in d["qvals"]])


_REGEN = {"kerndwd_fit": regen_fit, "kernel_matrix": regen_kernel, "cv.kerndwd": regen_cv,
          "tunedwd": regen_tune, "dwdloss": regen_loss}


# --------------------------------------------------------------------------
# writing
# --------------------------------------------------------------------------
def _tidy(obj):
    """Integral doubles as integers (the README's convention); arrays as lists."""
    if isinstance(obj, dict):
        return {k: _tidy(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_tidy(v) for v in obj]
    if isinstance(obj, np.ndarray):
        return _tidy(obj.tolist())
    if isinstance(obj, (float, np.floating)):
        v = float(obj)
        return int(v) if v.is_integer() and abs(v) < 2 ** 53 else v
    if isinstance(obj, np.integer):
        return int(obj)
    return obj


def environment():
    ro = _r()
    ext = ro.r("extSoftVersion()")
    names = list(ro.r["names"](ext))
    blas = str(ext[names.index("BLAS")]) if "BLAS" in names else ""
    return {
        "r_package": "kerndwd " + rbridge.r_package_version("kerndwd"),
        "r_version": str(ro.r("R.version.string")[0]),
        "blas": blas,
        "lapack": str(ro.r("La_library()")[0]),
    }


def regenerate(out_dir, only=None, src=FIXTURE_DIR, log=print):
    """Rewrite every stored fixture (or the cases in ``only``) into ``out_dir``."""
    rbridge.require("kerndwd")
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    manifest = json.loads((Path(src) / "MANIFEST.json").read_text())
    env = environment()
    files = []
    for entry in manifest["files"]:
        case = Path(entry["file"]).stem
        if only and case not in only:
            continue
        d = json.loads((Path(src) / entry["file"]).read_text())
        kind = d["kind"]
        new = {k: d[k] for k in _INPUT_FIELDS[kind] if k in d}
        new.update(r_package=env["r_package"], r_version=env["r_version"])
        new.update(_REGEN[kind](d))
        (out_dir / entry["file"]).write_text(json.dumps(_tidy(new), indent=1) + "\n")
        files.append(dict(entry))
        log(f"wrote {out_dir / entry['file']}")
    out_manifest = dict(manifest)
    out_manifest.update(env, files=files)
    (out_dir / "MANIFEST.json").write_text(json.dumps(out_manifest, indent=1) + "\n")
    return files


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m reference.regenerate_fixtures",
                                     description="Recompute the R fixtures with a live R and kerndwd.")
    parser.add_argument("out_dir", type=Path, help="folder to write the JSON files into")
    parser.add_argument("--only", nargs="*", help="case names (file stems) to regenerate")
    args = parser.parse_args(argv)
    if args.out_dir.resolve() == FIXTURE_DIR.resolve():
        parser.error("write to another folder; the stored fixtures are compared against, not overwritten")
    try:
        regenerate(args.out_dir, args.only)
    except rbridge.RBridgeUnavailable as exc:
        print(f"cannot regenerate the fixtures: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
