"""The checks of ``python -m validation``.

Each ``check_*`` function returns a list of rows (dicts) with

    check     the check's number and topic ("2 port vs cone program"; docs/validation.md)
    name      what was compared
    measured  the error measured (a float, or None when skipped)
    threshold what it must satisfy, in words
    status    "pass", "fail" or "skip"
    detail    how the number was measured, or why the check was skipped
    live_r    True for the checks that need a live R

and may add the numbers behind a row under ``cells`` (kept in the JSON twin).
"""

from __future__ import annotations

import time
import warnings

import numpy as np

import kerndwd
from kerndwd.kernels import kernel_from_spec
from reference import cone, rbridge
from reference.fixtures import fixture_names, load_fixture

# --------------------------------------------------------------------------
# thresholds, named once (docs/validation.md gives the reason for each)
# --------------------------------------------------------------------------
#: Fixture tolerances of reference/fixtures/kerndwd-r-2.0.3/README.md.
FIXTURE_RTOL = 1e-8
FIXTURE_WKDWD_ALPHA_RTOL = 1e-4
FIXTURE_WKDWD_LINK_RTOL = 1e-6
KERNEL_RTOL = 1e-12
LOSS_RTOL = 1e-14
#: Check 2: objective within 1e-7 relative of the cone optimum ...
OBJECTIVE_RTOL = 1e-7
#: ... and never below it by more than the cone solver's accuracy.  Clarabel
#: runs with gap and feasibility tolerances of 1e-11 (reference.cone); the
#: objective re-evaluated at its primal point is an upper bound on the
#: optimum, so the port may legitimately sit below it by about that much.
BELOW_OPTIMUM_RTOL = 1e-9
DECISION_RTOL = 1e-4
#: Check 3 (q = 1, Remark 4 and the SOCP (2.7)).
COSINE_TOL = 1e-8
INTERCEPT_TOL = 1e-4
#: Check 4: the port's reported gradient norm must be the gradient norm.
KKT_CONSISTENCY_RTOL = 1e-6

#: The tight fit of the port (check 2, 3): gradient-norm rule.
TIGHT_EPS = 1e-12
TIGHT_MAXIT = 10_000_000

GRID_Q = (0.25, 0.5, 1.0, 2.0, 4.0, 8.0)
GRID_LAMBDA = (1.0, 1e-1, 1e-2, 1e-3)
GRID_N = 300
RBF_SIGMA = 1.0
CLASS_WEIGHT = 3.0  # weight of the +1 class in the weighted cells (6.1)/(6.2)


def _row(check, name, measured, threshold, ok, detail="", live_r=False, skip_reason=None, **extra):
    if skip_reason is not None:
        status, detail = "skip", skip_reason
    else:
        status = "pass" if ok else "fail"
    row = dict(check=check, name=name, measured=None if measured is None else float(measured),
               threshold=threshold, status=status, detail=detail, live_r=live_r)
    row.update(extra)
    return row


def col_relerr(a, b):
    """max over columns of max|a - b| / max|b| (the fixture README's measure)."""
    a = np.asarray(a, dtype=float)
    b = np.asarray(b, dtype=float)
    if a.shape != b.shape:
        return np.inf
    if a.size == 0:
        return 0.0
    if a.ndim == 1:
        a, b = a[:, None], b[:, None]
    scale = np.maximum(np.abs(b).max(axis=0), np.finfo(float).tiny)
    return float((np.abs(a - b).max(axis=0) / scale).max())


def _rel(a, b):
    """max|a - b| / max|b| for vectors."""
    a = np.asarray(a, dtype=float)
    b = np.asarray(b, dtype=float)
    return float(np.abs(a - b).max() / max(np.abs(b).max(), np.finfo(float).tiny))


# --------------------------------------------------------------------------
# 1. the R fixtures
# --------------------------------------------------------------------------
# R's predict is wrong for these (fixture README): compare with the intended link.
R_PREDICT_BUGS = ("linear_n_eq_p", "anovadot", "splinedot")


def _fit_fixture(d):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", kerndwd.DWDConvergenceWarning)  # jerr is compared instead
        return kerndwd.fit(d["x"], d["y"], d["lambda"], kern=kernel_from_spec(d["kernel"]), qval=d["qval"],
                           wt=d["wt"], eps=d["eps"], maxit=int(d["maxit"]))


def compare_fit_to_r(case, d, r_alpha, r_npass, r_jerr, r_link):
    """One fixture-style comparison of the port with R's numbers; returns a row."""
    path = _fit_fixture(d)
    wk = path.solver == "wkdwd"
    alpha_tol = FIXTURE_WKDWD_ALPHA_RTOL if wk else FIXTURE_RTOL
    link_tol = FIXTURE_WKDWD_LINK_RTOL if wk else FIXTURE_RTOL
    link = kerndwd.predict(path, d["newx"], type="link")
    e_alpha = col_relerr(path.alpha, r_alpha)
    e_link = col_relerr(link, r_link)
    same_iter = (np.array_equal(path.npass, np.asarray(r_npass, dtype=int)) and path.jerr == int(r_jerr))
    ok = same_iter and e_alpha <= alpha_tol and e_link <= link_tol
    detail = (f"solver {path.solver}; alpha rel err {e_alpha:.2e} (tol {alpha_tol:g}); "
              f"npass/jerr {'identical' if same_iter else 'DIFFER'}")
    return e_link, f"link <= {link_tol:g}, alpha <= {alpha_tol:g}, npass and jerr equal", ok, detail


def check_fixtures():
    """Check 1: every R fixture, as the port's tests do, summarised."""
    rows = []
    tag = "1 R fixtures"
    for case in fixture_names("kerndwd_fit"):
        d = load_fixture(case)
        link_ref = d["link_direct"] if case in R_PREDICT_BUGS else d["link"]
        err, thr, ok, detail = compare_fit_to_r(case, d, d["alpha"], d["npass"], d["jerr"], link_ref)
        if case in R_PREDICT_BUGS:
            detail += "; against R's link_direct (R's predict is wrong here, see fixture README)"
        rows.append(_row(tag, f"fit {case}", err, thr, ok, detail))
    for case in fixture_names("kernel_matrix"):
        d = load_fixture(case)
        kern = kernel_from_spec(d["kernel"])
        err = max(_rel(kern(d["x"]), d["K"]), _rel(kern(d["x"], d["x2"]), d["K_cross"]))
        rows.append(_row(tag, case, err, f"<= {KERNEL_RTOL:g}", err <= KERNEL_RTOL,
                         "max|K - K_R| / max|K_R| over K(x, x) and K(x, x2)"))
    d = load_fixture("dwdloss_table")
    err = max(_rel(kerndwd.dwd_loss(d["u"], q), d["loss"][i]) for i, q in enumerate(d["qvals"]))
    rows.append(_row(tag, "dwdloss_table", err, f"<= {LOSS_RTOL:g}", err <= LOSS_RTOL,
                     f"V_q on {d['u'].size} points for q in {list(d['qvals'])}"))
    rows.extend(_check_cv_fixtures(tag))
    return rows


def _cv_api():
    """The port's cv/tune functions, or a reason why they cannot be used."""
    cv = getattr(kerndwd, "cv", None)
    tune = getattr(kerndwd, "tune", None)
    if not callable(cv) or not callable(tune):
        return None, None, "kerndwd has no callable cv()/tune() in this build (kerndwd/cv.py)"
    return cv, tune, None


def _get(obj, key):
    for attempt in (lambda: obj[key], lambda: getattr(obj, key.replace(".", "_")),
                    lambda: getattr(obj, key.replace(".", "_") + "_")):
        try:
            return attempt()
        except (KeyError, AttributeError, TypeError, IndexError):
            continue
    raise AttributeError(f"result has no {key!r}")


def compare_cv(cv, d):
    res = cv(d["x"], d["y"], lambdas=d["lambda_input"], kern=kernel_from_spec(d["kernel"]),
             foldid=d["foldid"].astype(int), qval=d["qval"], eps=d["eps"], maxit=int(d["maxit"]))
    err = max(_rel(_get(res, k), d[k]) for k in ("cvm", "cvsd"))
    same = all(float(_get(res, k)) == float(d[k]) for k in ("lambda.min", "lambda.1se"))
    return err, same


def compare_tune(tune, d):
    res = tune(d["x"], d["y"], lambdas=d["lambda_input"], kern=kernel_from_spec(d["kernel"]),
               qvals=d["qvals"], foldid=d["foldid"].astype(int), eps=d["eps"], maxit=int(d["maxit"]))
    same = float(_get(res, "lam.tune")) == float(d["lam.tune"]) and float(_get(res, "q.tune")) == float(d["q.tune"])
    err = 0.0
    if "cvres" in d:  # per-q curves, where the reference has them
        ours = _get(res, "cvres")
        if len(ours) != len(d["cvres"]):
            return np.inf, False
        for mine, ref in zip(ours, d["cvres"]):
            err = max(err, _rel(_get(mine, "cvm"), ref["cvm"]), _rel(_get(mine, "cvsd"), ref["cvsd"]))
            same = same and all(float(_get(mine, k)) == float(ref[k]) for k in ("lambda.min", "lambda.1se"))
    return err, same


def _check_cv_fixtures(tag):
    rows = []
    cv, tune, reason = _cv_api()
    for kind, fn, what in (("cv.kerndwd", cv, "cvm, cvsd <= 1e-12 rel; lambda.min, lambda.1se equal"),
                           ("tunedwd", tune, "per-q cvm, cvsd <= 1e-12 rel; lam.tune, q.tune and per-q "
                                             "lambda.min, lambda.1se equal")):
        for case in fixture_names(kind):
            if reason is not None:
                rows.append(_row(tag, case, None, what, False, skip_reason=reason))
                continue
            d = load_fixture(case)
            try:
                err, same = (compare_cv if kind == "cv.kerndwd" else compare_tune)(fn, d)
            except (TypeError, AttributeError) as exc:
                rows.append(_row(tag, case, None, what, False,
                                 skip_reason=f"the port's {fn.__name__}() API is not the one this check "
                                             f"expects: {type(exc).__name__}: {exc}"))
                continue
            ok = same and err <= 1e-12
            rows.append(_row(tag, case, err, what, ok, "selections " + ("equal" if same else "DIFFER")))
    return rows


# --------------------------------------------------------------------------
# data for checks 2-4
# --------------------------------------------------------------------------
def grid_data(seed=20180101):
    """Two data sets of n = GRID_N: linear (p = 10, shifted Gaussian classes)
    and a 2-D ring problem for the Gaussian kernel; class +1 weighted
    CLASS_WEIGHT in the weighted cells.

    The classes are deliberately unbalanced (``sum_i w_i y_i != 0``).  With
    balanced classes the minimiser is not unique at large lambda: when every
    margin lies on the linear part of ``V_q`` the objective is
    ``1 - (1/n) sum_i w_i y_i (b0 + ...) + ...``, flat in ``b0``, so two exact
    solvers may return decision values that differ by a constant while their
    objectives agree to rounding.  Comparing decision values needs a unique
    minimiser.
    """
    rng = np.random.default_rng(seed)
    n = GRID_N
    y_lin = np.where(rng.random(n) < 0.4, 1.0, -1.0)
    X_lin = rng.standard_normal((n, 10))
    X_lin[:, 0] += 0.8 * y_lin
    X_lin[:, 1] += 0.4 * y_lin
    X_rbf = rng.standard_normal((n, 2))
    y_rbf = np.where((X_rbf ** 2).sum(axis=1) + 0.4 * rng.standard_normal(n) > 1.2, 1.0, -1.0)
    for y in (y_lin, y_rbf):
        for weighted in (False, True):
            w = _weights(y, weighted)
            if abs(np.sum(y if w is None else w * y)) < 1.0:
                raise RuntimeError("grid data must have sum(w * y) != 0 (see grid_data)")
    return {
        "linear": dict(X=X_lin, y=y_lin, kern=kerndwd.vanilladot()),
        "rbf": dict(X=X_rbf, y=y_rbf, kern=kerndwd.rbfdot(sigma=RBF_SIGMA)),
    }


def _weights(y, weighted):
    return np.where(y > 0, CLASS_WEIGHT, 1.0) if weighted else None


def _grid(data):
    """(design, data, weighted, weights, label) for the four blocks of the grid."""
    for design, dd in data.items():
        for weighted in (False, True):
            yield design, dd, weighted, _weights(dd["y"], weighted), \
                f"{design} {'weighted' if weighted else 'unweighted'}"


def _port_values(path, design, X, K, j):
    """(b0, theta, f, penalty, alpha-column) of column j of a port path."""
    a = path.alpha[:, j]
    if design == "linear":
        theta = a[1:]
        return a[0], theta, a[0] + X @ theta, float(theta @ theta), a
    theta = a[1:]
    Ka = K @ theta
    return a[0], theta, a[0] + Ka, float(theta @ Ka), a


def _gradient_norm(design, X, K, y, w, q, lam, a):
    """||grad F|| at intercept-first coefficients a, written out from (3.1)/(4.2)/(6.2)."""
    A = X if design == "linear" else K
    f = a[0] + A @ a[1:]
    z = y * cone.dwd_loss_deriv(y * f, q)
    if w is not None:
        z = w * z
    n = y.size
    pen_grad = 2.0 * a[1:] if design == "linear" else 2.0 * (K @ a[1:])
    g = np.concatenate(([z.sum() / n], A.T @ z / n + lam * pen_grad))
    return float(np.linalg.norm(g))


def solve_grid(data, log=print):
    """Cone optima for every cell of the grid (shared by checks 2 and 4)."""
    out = {}
    for design, dd in data.items():
        dd["K"] = None if design == "linear" else dd["kern"](dd["X"])
    for design, dd, weighted, w, block in _grid(data):
        for q in GRID_Q:
            for lam in GRID_LAMBDA:
                if design == "linear":
                    r = cone.solve_generalized(dd["X"], dd["y"], lam, q, w=w)
                else:
                    r = cone.solve_generalized(dd["K"], dd["y"], lam, q, w=w, kernel=True)
                out[(design, weighted, q, lam)] = r
        log(f"  cone programs: {block} done")
    return out


# --------------------------------------------------------------------------
# 2. port (tight) vs the loss + penalty cone program
# --------------------------------------------------------------------------
def _matched_columns(path, design, dd, weighted, w, q, optima):
    """For each fitted column of ``path``: ``(j, lambda, cone result, f, alpha,
    F_port)``, the port's objective evaluated by the cone module's formula."""
    X, y, K = dd["X"], dd["y"], dd["K"]
    for j, lam in enumerate(GRID_LAMBDA[:path.alpha.shape[1]]):
        _, _, f, pen, a = _port_values(path, design, X, K, j)
        yield j, lam, optima[(design, weighted, q, lam)], f, a, cone.generalized_objective(f, y, lam, q, pen, w)


def check_port_vs_cone(data, optima, log=print):
    rows = []
    tag = "2 port vs cone program"
    for design, dd, weighted, w, block in _grid(data):
        X, y, kern = dd["X"], dd["y"], dd["kern"]
        for q in GRID_Q:
            start = time.perf_counter()
            path = kerndwd.fit(X, y, GRID_LAMBDA, kern=kern, qval=q, wt=w, eps=TIGHT_EPS,
                               maxit=TIGHT_MAXIT, stop="kkt")
            secs = time.perf_counter() - start
            cells = []
            for j, lam, r, f, _, F_port in _matched_columns(path, design, dd, weighted, w, q, optima):
                F_cone = r["objective_eval"]
                cells.append(dict(
                    lam=lam, converged=True, F_port=F_port, F_cone=F_cone,
                    F_cone_solver=r["objective"], rel_gap=(F_port - F_cone) / abs(F_cone),
                    decision_relerr=_rel(f, r["f"]), kkt=float(path.kkt[j]), npass=int(path.npass[j]),
                    cone_status=r["status"], cone_seconds=r["seconds"]))
            cells += [dict(lam=lam, converged=False) for lam in GRID_LAMBDA[len(cells):]]
            conv = all(c["converged"] for c in cells)
            label = f"{block} q={q:g}"
            where = f"lambda in {list(GRID_LAMBDA)}, n={X.shape[0]}"
            if not conv:
                rows.append(_row(tag, f"{label}: objective", None, "converged", False,
                                 f"the tight fit stopped early (jerr={path.jerr}); {where}", cells=cells))
                continue
            gaps = np.array([c["rel_gap"] for c in cells])
            worst = float(np.abs(gaps).max())
            ok_obj = worst <= OBJECTIVE_RTOL and gaps.min() >= -BELOW_OPTIMUM_RTOL
            rows.append(_row(
                tag, f"{label}: objective", worst,
                f"|F_port - F_cone| / F_cone <= {OBJECTIVE_RTOL:g} and F_port >= F_cone (1 - {BELOW_OPTIMUM_RTOL:g})",
                ok_obj,
                f"signed gaps {gaps.min():+.1e}..{gaps.max():+.1e}; port stop='kkt' eps={TIGHT_EPS:g} "
                f"(max grad norm {max(c['kkt'] for c in cells):.1e}, {int(path.npass.sum())} iterations, "
                f"{secs:.2f} s); {where}", cells=cells))
            dec = max(c["decision_relerr"] for c in cells)
            rows.append(_row(tag, f"{label}: decision values", dec,
                             f"max|f_port - f_cone| / max|f_cone| <= {DECISION_RTOL:g}", dec <= DECISION_RTOL,
                             f"at the {X.shape[0]} training points; worst over {where}"))
        log(f"  port vs cone: {block} done")
    return rows


# --------------------------------------------------------------------------
# 3. q = 1: Remark 4 and the SOCP (2.7)
# --------------------------------------------------------------------------
def check_socp(data, log=print):
    rows = []
    tag = "3 q=1: Remark 4 vs SOCP (2.7)"
    for design, dd in data.items():
        X, y, kern = dd["X"], dd["y"], dd["kern"]
        K = None if design == "linear" else (dd.get("K") if dd.get("K") is not None else kern(X))
        Phi = None if K is None else cone.kernel_factor(K)
        for weighted in (False, True):
            w = _weights(y, weighted)
            path = kerndwd.fit(X, y, GRID_LAMBDA, kern=kern, qval=1.0, wt=w, eps=TIGHT_EPS,
                               maxit=TIGHT_MAXIT, stop="kkt")
            cells = []
            for j, lam in enumerate(GRID_LAMBDA):
                a = path.alpha[:, j]
                if design == "linear":
                    theta = a[1:]
                    f = a[0] + X @ theta
                else:
                    theta = Phi.T @ a[1:]  # f = b0 + K alpha = b0 + Phi (Phi' alpha)
                    f = a[0] + K @ a[1:]
                m = cone.lambda_fit_to_socp(a[0], theta, 1.0)
                if design == "linear":
                    r = cone.solve_socp(X, y, m["c"], w=w)
                else:
                    r = cone.solve_socp(Phi, y, m["c"], w=w)
                omega = r["w"]
                cosine = float(omega @ m["omega"] / (np.linalg.norm(omega) * np.linalg.norm(m["omega"])))
                implied = cone.socp_value_from_fit(f, y, m["scale"], 1.0, w)
                cells.append(dict(lam=lam, c=m["c"], one_minus_cos=1.0 - cosine,
                                  intercept_diff=abs(r["b"] - m["omega0"]), omega0_socp=r["b"],
                                  omega0_port=m["omega0"], omega_norm=float(np.linalg.norm(omega)),
                                  socp_objective=r["objective_eval"], implied_objective=implied,
                                  objective_relerr=abs(implied - r["objective_eval"]) / r["objective_eval"],
                                  status=r["status"]))
            label = f"{design} {'weighted (6.1)' if weighted else 'unweighted (2.7)'}"
            if design != "linear":
                label += " via K = Phi Phi' (2.9)"
            worst_cos = max(c["one_minus_cos"] for c in cells)
            worst_b = max(c["intercept_diff"] / max(1.0, abs(c["omega0_socp"])) for c in cells)
            worst_obj = max(c["objective_relerr"] for c in cells)
            cs = ", ".join(f"{c['c']:.3g}" for c in cells)
            rows.append(_row(tag, f"{label}: direction", worst_cos, f"1 - cos(omega_SOCP, beta/||beta||) <= {COSINE_TOL:g}",
                             worst_cos <= COSINE_TOL,
                             f"lambda in {list(GRID_LAMBDA)} -> c = {cs}; ||omega_SOCP|| in "
                             f"[{min(c['omega_norm'] for c in cells):.10f}, {max(c['omega_norm'] for c in cells):.10f}]",
                             cells=cells))
            rows.append(_row(tag, f"{label}: intercept", worst_b,
                             f"|omega0_SOCP - b0/||beta||| / max(1, |omega0|) <= {INTERCEPT_TOL:g}",
                             worst_b <= INTERCEPT_TOL,
                             f"also: (2.6) optimum vs the value implied by the port's fit, max rel diff {worst_obj:.1e}"))
        log(f"  SOCP: {design} done")
    return rows


# --------------------------------------------------------------------------
# 4. R's default rule (eps = 1e-5): optimality gap and gradient norm
# --------------------------------------------------------------------------
def check_default_eps(data, optima, log=print):
    rows = []
    tag = "4 default eps=1e-5: gap to optimum"
    for design, dd, weighted, w, block in _grid(data):
        X, y, kern, K = dd["X"], dd["y"], dd["kern"], dd["K"]
        for q in GRID_Q:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", kerndwd.DWDConvergenceWarning)
                path = kerndwd.fit(X, y, GRID_LAMBDA, kern=kern, qval=q, wt=w)  # R's defaults
            cells = []
            for j, lam, r, f, a, F_port in _matched_columns(path, design, dd, weighted, w, q, optima):
                grad = _gradient_norm(design, X, K, y, w, q, lam, a)
                cells.append(dict(lam=lam, gap=F_port - r["objective_eval"],
                                  rel_gap=(F_port - r["objective_eval"]) / abs(r["objective_eval"]),
                                  kkt_reported=float(path.kkt[j]), kkt_recomputed=grad,
                                  objective_reported=float(path.objective[j]), objective_recomputed=F_port,
                                  decision_relerr=_rel(f, r["f"]), npass=int(path.npass[j])))
            label = f"{block} q={q:g}"
            if len(cells) < len(GRID_LAMBDA):
                rows.append(_row(tag, label, None, "fit finished", False, f"jerr={path.jerr}", cells=cells))
                continue
            gaps = [c["rel_gap"] for c in cells]
            kkt_err = max(abs(c["kkt_reported"] - c["kkt_recomputed"]) / max(c["kkt_recomputed"], 1e-300)
                          for c in cells)
            obj_err = max(abs(c["objective_reported"] - c["objective_recomputed"]) / c["objective_recomputed"]
                          for c in cells)
            ok = min(gaps) >= -BELOW_OPTIMUM_RTOL and kkt_err <= KKT_CONSISTENCY_RTOL and obj_err <= 1e-12
            per_lam = "; ".join(
                f"lambda={c['lam']:g}: gap {c['rel_gap']:.1e}, grad norm {c['kkt_reported']:.1e}, "
                f"f rel err {c['decision_relerr']:.1e}" for c in cells)
            rows.append(_row(
                tag, label, max(gaps),
                f"reported (max relative gap); pass: gap >= -{BELOW_OPTIMUM_RTOL:g}, path.kkt and "
                f"path.objective = recomputed grad norm and objective",
                ok, per_lam + f"; path.kkt vs recomputed {kkt_err:.1e}, path.objective vs recomputed {obj_err:.1e}",
                cells=cells))
        log(f"  default eps: {block} done")
    return rows


# --------------------------------------------------------------------------
# 5. live R
# --------------------------------------------------------------------------
def _kernel_inputs():
    """(spec, x, x2) per kernel: each kernel fixture's inputs, plus fresh data
    (x in [0, 1] for splinedot, as its fixture)."""
    rng = np.random.default_rng(7)
    out = []
    for case in fixture_names("kernel_matrix"):
        d = load_fixture(case)
        out.append((case, d["kernel"], d["x"], d["x2"]))
        if d["kernel"]["name"] == "splinedot":
            x, x2 = rng.random((40, 3)), rng.random((15, 3))
        else:
            x, x2 = rng.standard_normal((40, 3)), rng.standard_normal((15, 3))
        out.append((f"{d['kernel']['name']} on 40 x 3 fresh data", d["kernel"], x, x2))
    return out


def check_live_r(log=print):
    rows = []
    tag = "5 live R"
    # kernlab
    try:
        version = rbridge.require("kernlab")
        reason = None
    except rbridge.RBridgeUnavailable as exc:
        reason, version = str(exc), None
    for name, spec, x, x2 in _kernel_inputs():
        label = f"kernlab kernelMatrix: {name}" if "fresh" in name else f"kernlab kernelMatrix: {name} inputs"
        if reason is not None:
            rows.append(_row(tag, label, None, f"<= {KERNEL_RTOL:g}", False, live_r=True, skip_reason=reason))
            continue
        kern = kernel_from_spec(spec)
        err = max(_rel(kern(x), rbridge.kernlab_kernel_matrix(spec, x)),
                  _rel(kern(x, x2), rbridge.kernlab_kernel_matrix(spec, x, x2)))
        rows.append(_row(tag, label, err, f"<= {KERNEL_RTOL:g}", err <= KERNEL_RTOL,
                         f"max|K - K_kernlab| / max|K_kernlab| over K(x, x) and K(x, x2); {spec}; {version}",
                         live_r=True))
    log("  live R: kernlab done")
    # the R package kerndwd
    try:
        rbridge.require("kerndwd")
        reason = None
    except rbridge.RBridgeUnavailable as exc:
        reason = str(exc)
    fit_cases = fixture_names("kerndwd_fit")
    if reason is not None:
        rows.append(_row(tag, f"live kerndwd fits on the {len(fit_cases)} fixture inputs", None,
                         "as check 1", False, live_r=True, skip_reason=reason))
        rows.append(_row(tag, "live cv.kerndwd / tunedwd on the fixture inputs", None,
                         "as check 1", False, live_r=True, skip_reason=reason))
        return rows
    for case in fit_cases:
        d = load_fixture(case)
        r = rbridge.kerndwd_fit(d["x"], d["y"], d["kernel"], d["lambda"], d["qval"], d["wt"], d["eps"], d["maxit"])
        if case in R_PREDICT_BUGS or r["alpha"].shape[1] == 0:
            link = _direct_link(d, r["alpha"])
        else:
            link = rbridge.kerndwd_predict(r, d["x"], d["newx"], d["kernel"])
        err, thr, ok, detail = compare_fit_to_r(case, d, r["alpha"], r["npass"], r["jerr"], link)
        rows.append(_row(tag, f"live kerndwd fit {case}", err, thr, ok, detail, live_r=True))
    cv, tune, why = _cv_api()
    for case in fixture_names("cv.kerndwd") + fixture_names("tunedwd"):
        d = load_fixture(case)
        if why is not None:
            rows.append(_row(tag, f"live {case}", None, "as check 1", False, live_r=True, skip_reason=why))
            continue
        foldid = d["foldid"].astype(int)
        if d["kind"] == "cv.kerndwd":
            r = rbridge.kerndwd_cv(d["x"], d["y"], d["kernel"], d["lambda_input"], foldid, d["qval"], None,
                                   d["eps"], d["maxit"])
            err, same = compare_cv(cv, {**d, **r})
        else:
            r = rbridge.kerndwd_tunedwd(d["x"], d["y"], d["kernel"], d["lambda_input"], d["qvals"], foldid,
                                        d["eps"], d["maxit"])
            live = {k: v for k, v in d.items() if k != "cvres"}  # per-q curves: only the recorded ones
            err, same = compare_tune(tune, {**live, "lam.tune": r["lam.tune"], "q.tune": r["q.tune"]})
        rows.append(_row(tag, f"live {case}", err, "as check 1", same and err <= 1e-12, live_r=True))
    log("  live R: kerndwd done")
    return rows


def _direct_link(d, alpha):
    """b0 + newx beta or b0 + K(newx, x) alpha from R's coefficients (the intended link)."""
    if alpha.shape[1] == 0:
        return np.zeros((d["newx"].shape[0], 0))
    kern = kernel_from_spec(d["kernel"])
    if alpha.shape[0] == d["x"].shape[1] + 1 and d["solver"] in ("ldwd", "wldwd"):
        return alpha[0] + d["newx"] @ alpha[1:]
    return alpha[0] + kern(d["newx"], d["x"]) @ alpha[1:]
