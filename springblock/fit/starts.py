"""Starting points of the final-curve fit: a cached grid and the valley of constant F_eff.

The misfit of a network curve over (mu->, s) is a long valley along which
F_eff (:func:`~springblock.fit.shapes.effective_force`) is constant; the
starts are the nearest grid curve and the best points on that valley.
"""

from __future__ import annotations

import functools

import numpy as np

from springblock.fit.shapes import chain_shapes, effective_force, off_parabola

__all__ = ["grid_shapes", "starting_points"]


def noise_axis(lo: float, hi: float, n: int) -> np.ndarray:
    """Grid of s: the lower bound plus geometric spacing up to ``hi``.

    The curve changes with s on a log scale (relaxation ~ Phi(-a/s)), so
    geometric spacing; its smallest positive value is hi / 300 when lo = 0.
    """
    start = lo if lo > 0 else hi / 300.0
    rest = np.geomspace(start, hi, n - 1)
    return np.unique(np.concatenate([[lo], rest]))


@functools.lru_cache(maxsize=16)
def grid_shapes(blocks, modulus, horizon, ratio, mu_fixed, bounds, grid):
    """Starting grid, cached: mus (A,), noises (B,), shapes (A, B, L+1) and
    their effective forces (A, B). A = 1 when mu-> is fixed."""
    (mu_lo, mu_hi), (s_lo, s_hi) = bounds
    noise = noise_axis(s_lo, s_hi, grid[1])
    mus = np.array([mu_fixed]) if mu_fixed is not None else np.linspace(mu_lo, mu_hi, grid[0])
    shapes = chain_shapes(blocks, mus[:, None], noise[None, :], horizon=horizon,
                          mu_left_ratio=ratio, modulus=modulus)
    forces = effective_force(shapes, modulus=modulus).force
    for a in (mus, noise, shapes, forces):
        a.setflags(write=False)
    return mus, noise, shapes, forces


def valley_points(data, force, grid, s_lo):
    """Points on each grid row mu_i where the chain's F_eff equals the data's.

    F_eff falls monotonically with s at fixed mu-> (measured on the grid
    rows), so along each row the crossing is found by linear interpolation
    between the two grid noises that bracket it, and the shape there by the
    same interpolation. Returns params (K, A, 2) and the approximate
    :func:`off_parabola` misfits (K, A), inf where the row cannot reach the
    data's F_eff.
    """
    mus, noise, shapes, forces = grid
    n_rows, n_s = forces.shape
    above = forces[None, :, :] >= force[:, None, None]  # (K, A, B)
    count = above.sum(axis=2)  # grid noises with F_eff >= the data's
    ok = (count >= 1) & (count <= n_s - 1)
    j = np.clip(count - 1, 0, n_s - 2)  # bracket [j, j+1]
    rows = np.arange(n_rows)[None, :]
    f0, f1 = forces[rows, j], forces[rows, j + 1]
    with np.errstate(invalid="ignore", divide="ignore"):
        w = np.clip((f0 - force[:, None]) / (f0 - f1), 0.0, 1.0)
    shape = (1 - w)[..., None] * shapes[rows, j] + w[..., None] * shapes[rows, j + 1]
    s0, s1 = noise[j], noise[j + 1]
    # geometric interpolation where both noises are positive (the grid's spacing)
    with np.errstate(divide="ignore", invalid="ignore"):
        s_geo = np.exp((1 - w) * np.log(s0) + w * np.log(s1))
    s_val = np.where(s0 > 0, s_geo, (1 - w) * s0 + w * s1)
    s_val = np.maximum(s_val, s_lo)
    misfit = off_parabola(shape - data[:, None, :])
    misfit = np.where(ok & np.isfinite(misfit), misfit, np.inf)
    params = np.stack([np.broadcast_to(mus[None, :], s_val.shape), s_val], axis=2)
    return params, misfit


def starting_points(data, force, model, mu_fixed, ratio, mu_bounds, s_bounds, grid,
                     n_starts=2):
    """Starts of the local fit: rows of (mu->, s), and the curve each serves.

    The misfit along the valley of constant F_eff can have more than one
    local minimum (e.g. a partly relaxed chain and a fully relaxed one with
    smaller mu->), and a plain grid is too coarse across the valley to rank
    them. Candidates per curve: the nearest grid point; the three lowest
    local minima along the valley (:func:`valley_points`); and, when mu->
    is fitted, the valley's closed-form ends — the noiseless chain
    (mu-> = F_eff, s = s_min; an exact parabola) and the fully relaxed one
    (mu-> = -2 F_eff / (ratio - 1), s = s_max). The candidates are
    integrated exactly and the ``n_starts`` best distinct ones kept, ranked
    by their misfit off the parabola direction (:func:`off_parabola`): that
    part does not care how exactly a candidate sits on the valley (the grid's
    s spacing leaves interpolated points up to ~10 % of F_eff off it), and
    the local fit corrects F_eff in one or two steps.
    """
    mus, noise, shapes, forces = grid
    (mu_lo, mu_hi), (s_lo, s_hi) = mu_bounds, s_bounds
    k = len(data)
    flat_shapes = shapes.reshape(-1, shapes.shape[-1])
    # squared distances to every grid curve, (K, G), by expansion
    dist = ((data * data).sum(1)[:, None] + (flat_shapes * flat_shapes).sum(1)[None, :]
            - 2.0 * data @ flat_shapes.T)
    dist = np.where(np.isfinite(dist), dist, np.inf)
    best = np.argmin(dist, axis=1)
    grid_start = np.column_stack([mus[best // len(noise)], noise[best % len(noise)]])

    cands = []
    vparams, vmisfit = valley_points(data, force, grid, s_lo)
    padded = np.pad(vmisfit, ((0, 0), (1, 1)), constant_values=np.inf)
    local_min = ((vmisfit <= padded[:, :-2]) & (vmisfit <= padded[:, 2:])
                 & np.isfinite(vmisfit))
    ranked = np.argsort(np.where(local_min, vmisfit, np.inf), axis=1)[:, :3]
    for c in range(ranked.shape[1]):
        pick = vparams[np.arange(k), ranked[:, c]]
        usable = local_min[np.arange(k), ranked[:, c]]
        cands.append(np.where(usable[:, None], pick, np.nan))
    if mu_fixed is None:
        cands.append(np.column_stack([force, np.full(k, s_lo)]))
        with np.errstate(divide="ignore", invalid="ignore"):
            relaxed = -2.0 * force / (ratio - 1.0) if ratio > 1 else np.full(k, np.nan)
        cands.append(np.column_stack([relaxed, np.full(k, s_hi)]))
    cand = np.stack(cands, axis=1)  # (K, C, 2)
    cand[..., 1] = np.clip(cand[..., 1], s_lo, s_hi)
    if mu_fixed is None:
        inside = np.isfinite(cand[..., 0]) & (cand[..., 0] >= mu_lo) & (cand[..., 0] <= mu_hi)
    else:
        inside = np.isfinite(cand[..., 1])
        cand[..., 0] = mu_fixed
    misfit = np.full(inside.shape, np.inf)
    which = np.flatnonzero(inside.ravel())
    if which.size:
        owner = which // cand.shape[1]
        shapes_c = model(cand.reshape(-1, 2)[which])
        misfit.ravel()[which] = off_parabola(shapes_c - data[owner])
    # all candidates, ranked by their exact off-parabola misfit; grid point first
    cand = np.concatenate([grid_start[:, None, :], cand], axis=1)
    grid_misfit = off_parabola(flat_shapes[best] - data)
    misfit = np.concatenate([grid_misfit[:, None], misfit], axis=1)
    is_valley = np.zeros(cand.shape[1], dtype=bool)
    is_valley[1:1 + ranked.shape[1]] = True
    width = np.array([mu_hi - mu_lo, s_hi - s_lo])
    return _pick_starts(cand, misfit, is_valley, width, n_starts)


def _pick_starts(cand, misfit, is_valley, width, n_starts):
    """Per row of candidates (K, C, 2) ranked by ``misfit`` (K, C), the best
    ``n_starts`` distinct ones: (starts (S, 2), owner row of each (S,))."""
    order = np.argsort(misfit, axis=1, kind="stable")
    starts, owners = [], []
    for row in range(len(cand)):
        usable = [c for c in order[row] if np.isfinite(misfit[row, c])]
        # the best candidate, then the best valley point (the ends of a valley
        # are plateaus a local fit cannot leave), then the rest in order
        preferred = usable[:1] + [c for c in usable if is_valley[c]][:1] + usable[1:]
        kept = []
        for c in preferred:
            p = cand[row, c]
            if all(np.any(np.abs(p - q) > 1e-3 * width) for q in kept):
                kept.append(p)
            if len(kept) == n_starts:
                break
        starts.extend(kept)
        owners.extend([row] * len(kept))
    return np.array(starts).reshape(-1, 2), np.array(owners, dtype=np.int64)
