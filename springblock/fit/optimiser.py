"""Batched, bounded Levenberg-Marquardt for many small least-squares problems.

Each row k minimises ||model(z_k) - data_k||^2 over a few parameters z_k in a
box. The model is called once per iteration on every row's trial point and
its finite-difference neighbours together, so a batched integrator (one
call, many parameter sets) does all the work.
"""

from __future__ import annotations

import numpy as np

__all__ = ["levenberg_marquardt", "standard_errors", "with_jacobian"]

#: A row stops when a step lowers its squared misfit by less than this
#: fraction (1e-4 of the cost is 5e-5 of the RMS residual).
COST_RTOL = 1e-4


def with_jacobian(model, z: np.ndarray, lo, hi, rel_step: float = 1e-5, rows=None):
    """Model curves (K, n) at z (K, m) and their forward-difference Jacobian (K, n, m).

    ``rows`` (K,): if given, the model is called as ``model(z, rows)`` with
    the data row of every parameter set (for models that depend on the data,
    e.g. nuisance parameters projected out).

    One batched call on the K (m + 1) parameter sets. Step ``rel_step`` of
    the bound width, inwards at the upper bound: the model is smooth, and the
    integrator's error is itself smooth in the parameters (the same step
    sequence for every set), so the differences resolve weak directions
    ~1e-3 of the strong one.
    """
    k, m = z.shape
    h = rel_step * (np.asarray(hi) - np.asarray(lo))  # 0 for a parameter pinned by lo = hi
    steps = np.where(z + h > hi, -h, h)  # (K, m)
    pert = z[:, None, :] + np.eye(m)[None] * steps[:, None, :]  # (K, m, m)
    sets = np.concatenate([z[:, None, :], pert], axis=1).reshape(-1, m)
    f = (model(sets) if rows is None else model(sets, np.repeat(rows, m + 1))).reshape(k, m + 1, -1)
    with np.errstate(invalid="ignore", divide="ignore"):
        jac = (f[:, 1:] - f[:, :1]) / steps[:, :, None]
    jac = np.where(steps[:, :, None] != 0, jac, 0.0)
    return f[:, 0], np.transpose(jac, (0, 2, 1))


def _damped_step(jac, resid, z, lam, lo, hi, frozen=None):
    """Projected LM step for each row: (trial point (K, m), promised cost reduction (K,)).

    ``frozen`` (K, m): components that do not move (as if pinned at a bound)."""
    m = z.shape[1]
    grad = np.einsum("knm,kn->km", jac, resid)
    hess = np.einsum("knm,knp->kmp", jac, jac)
    # components pinned at a bound by an outward gradient stay there
    pinned = ((z <= lo) & (grad > 0)) | ((z >= hi) & (grad < 0))
    if frozen is not None:
        pinned |= frozen
    keep = ~pinned
    diag = np.einsum("kmm->km", hess)
    damped = (np.where(keep[:, :, None] & keep[:, None, :], hess, 0.0)
              + np.eye(m) * (lam[:, None] * diag + 1e-30 + pinned)[:, None, :])
    step = -np.linalg.solve(damped, np.where(keep, grad, 0.0)[..., None])[..., 0]
    trial = np.clip(z + step, lo, hi)
    # |r + J dz|^2 = |r|^2 + 2 g.dz + dz.H.dz, dz after projection
    dz = trial - z
    promised = -(2.0 * np.einsum("km,km->k", grad, dz) + np.einsum("km,kmp,kp->k", dz, hess, dz))
    return trial, promised


def levenberg_marquardt(model, data, z0, lo, hi, max_iter: int, owner=None, weights=None,
                        row_aware: bool = False, cost_rtol: float = COST_RTOL,
                        flat_rtol: float = 0.0):
    """Bounded Levenberg-Marquardt for many independent small problems at once.

    Minimises sum_n w_n (model(z)_n - data_n)^2 per row of ``data`` (K, n)
    over z (K, m) in the box [lo, hi] (each (m,) or (K, m); lo = hi pins a
    parameter of a row); NaN data points are ignored (weight 0). Each iteration solves
    (J^T J + lam diag(J^T J)) dz = -J^T r for the components not pinned at a
    bound and projects onto the box. A trial is accepted if the cost falls;
    lam shrinks x 1/10 where the linear model predicted the gain well, grows
    x 4 where it did not, x 10 on rejection. A row stops when a step lowers,
    or promises to lower, the cost by < ``cost_rtol`` relative, moves < 1e-9
    of the box, or lam > 1e4. ``flat_rtol``: a component whose Jacobian
    column (times the box width) is below this fraction of the row's largest
    one does not move in that iteration: the curves do not depend on it, its
    gradient is rounding noise, and a step along it (undamped: its diagonal
    is ~0) only jumps to a bound, is rejected, and stops the row before the
    other components converge, or not, depending on the gradient's last
    bits. ``owner`` (K,) groups rows that are starts for the same curve:
    once one of them fits exactly (cost < 1e-24) the others stop.
    ``row_aware``: the model is called as ``model(z, rows)`` (see
    :func:`with_jacobian`). Returns z (K, m), model curves (K, n) and
    Jacobian (K, n, m) there.
    """
    n_rows, _ = z0.shape
    owner = np.arange(n_rows) if owner is None else owner
    w = np.isfinite(data) * (1.0 if weights is None else weights)
    data = np.where(np.isfinite(data), data, 0.0)
    sw = np.sqrt(w)
    lo = np.broadcast_to(np.asarray(lo, dtype=np.float64), z0.shape)
    hi = np.broadcast_to(np.asarray(hi, dtype=np.float64), z0.shape)
    z = z0.copy()

    def weighted_cost(f, rows):
        # points of weight 0 (NaN data) count for nothing, whatever the model gives there
        return np.sum(np.where(w[rows] > 0, w[rows] * (f - data[rows]) ** 2, 0.0), axis=1)

    f, jac = with_jacobian(model, z, lo, hi, rows=np.arange(n_rows) if row_aware else None)
    cost = weighted_cost(f, slice(None))
    # Small initial damping: along a weak direction J^T J can be ~1e-5 of its
    # strong eigenvalue, and a large lam would crawl along the valley.
    lam = np.full(n_rows, 1e-6)
    active = cost > 1e-26
    for _ in range(max_iter):
        idx = np.flatnonzero(active)
        if idx.size == 0:
            break
        used = sw[idx] > 0
        jw = np.where(used[..., None], jac[idx] * sw[idx, :, None], 0.0)
        width = np.where(hi[idx] > lo[idx], hi[idx] - lo[idx], 1.0)
        frozen = None
        if flat_rtol > 0:
            column = np.sqrt(np.einsum("knm,knm->km", jw, jw)) * width
            frozen = column < flat_rtol * column.max(axis=1, keepdims=True)
        trial, promised = _damped_step(jw, np.where(used, (f[idx] - data[idx]) * sw[idx], 0.0),
                                       z[idx], lam[idx], lo[idx], hi[idx], frozen)
        moved = np.max(np.abs(trial - z[idx]) / width, axis=1)
        f_trial, jac_trial = with_jacobian(model, trial, lo[idx], hi[idx],
                                           rows=idx if row_aware else None)
        cost_trial = weighted_cost(f_trial, idx)
        actual = cost[idx] - cost_trial
        better = actual > 0
        good = idx[better]
        z[good], f[good], jac[good] = trial[better], f_trial[better], jac_trial[better]
        cost[good] = cost_trial[better]
        # trust the linear model more only where it predicted the gain well
        with np.errstate(over="ignore"):
            ratio = np.where(promised > 0, actual / np.maximum(promised, 1e-300), 0.0)
        lam[good] = np.where(ratio[better] > 0.75, np.maximum(lam[good] / 10.0, 1e-12),
                             np.where(ratio[better] < 0.25, lam[good] * 4.0, lam[good]))
        lam[idx[~better]] *= 10.0
        done = np.zeros(idx.size, dtype=bool)
        done[better] = actual[better] <= cost_rtol * cost[good]
        # (a projected step can promise a rise: then only lam grows)
        done |= ((promised >= 0) & (promised <= cost_rtol * cost[idx])) | (lam[idx] > 1e4)
        done |= moved < 1e-9
        done |= cost[idx] < 1e-26
        active[idx[done]] = False
        solved = np.unique(owner[cost < 1e-24])
        active &= ~np.isin(owner, solved)
    return z, f, jac


def standard_errors(jac, residual_sq, dof, scale, weights=None):
    """Gauss-Newton standard errors (K, m) in parameter units.

    sqrt(diag((J^T W J)^-1) RSS / dof): the misfit treated as independent
    noise of one variance per row. inf for a parameter the curve does not
    depend on (a Jacobian column < 1e-9 / ``scale``); NaN when dof <= 0.
    """
    k, _, m = jac.shape
    out = np.full((k, m), np.nan)
    if np.all(dof <= 0):
        return out
    jw = jac if weights is None else jac * np.sqrt(weights)[:, :, None]
    sigma2 = residual_sq / np.maximum(dof, 1)
    hess = np.einsum("knm,knp->kmp", jw, jw)
    cov = np.linalg.pinv(hess, hermitian=True)
    var = np.einsum("kmm->km", cov) * sigma2[:, None]
    col = np.sqrt(np.einsum("knm,knm->km", jw, jw))
    flat = col * scale < 1e-9
    out = np.where(flat, np.inf, np.sqrt(np.maximum(var, 0.0)))
    return np.where(np.asarray(dof)[..., None] > 0, out, np.nan)
