"""Fit the chain to load curves over training: free (mu->, mu<-, s) and a time scale c.

A network recorded at epochs e_1 < ... < e_E (load curves D(e, l)) is
compared with the mean-field chain (:func:`springblock.theory.predict_positions`)
at times t = c e. Observations (``docs/fit.md``, "Trajectory fit"):

* the shape of each frame, n_l(e) = (D_l - D_L) / (D_0 - D_L), interior l = 1..L-1;
* the progress of the drop, r(e) = (g(e) - g_0) / (g(e_E) - g_0), g = D_0 - D_L,
  g_0 its value at epoch 0 (chain: x_L(c e) / x_L(c e_E)); e < e_E.

A single frame (E = 1, e_1 = 1) is the final-curve fit with the horizon
T = c fitted. Parameters are fitted in log space; 95 % intervals are Wald
intervals there, flagged unbounded where they reach a bound of the fit.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field

import numpy as np
import xarray as xr
from scipy.stats import t as student_t

from springblock import theory
from springblock.fit.optimiser import levenberg_marquardt
from springblock.fit.shapes import as_curves, normalise
from springblock.shared.checks import ConfigError, is_finite, is_int, require
from springblock.shared.results import provenance

#: The fitted parameters, in this order: right and left friction, noise, time scale.
PARAMS = ("mu_right", "mu_left", "noise", "time_scale")
#: Default bounds of mu->, mu<-, s (units of k y) and of the horizon T = c e_E (time units).
DEFAULT_BOUNDS = {"mu_right": (1e-4, 0.3), "mu_left": (1e-4, 0.6), "noise": (1e-4, 0.3),
                  "horizon": (10.0, 3000.0)}
#: Frames whose drop has moved less than this fraction of the total are left out of the
#: shape part (their normalised shape is mostly noise).
MIN_PROGRESS = 0.2
#: Coarse starting grid: points per parameter (mu->, mu<-/mu->, s, T).
START_GRID = (6, 4, 6, 5)
#: Level of the intervals.
LEVEL = 0.95


def trajectory_observations(curves, epochs, min_progress: float = MIN_PROGRESS):
    """Observation vectors (..., E (L-1) + E - 1) of network curves (..., E, L+1).

    ``epochs`` (E,) increasing; a frame at epoch 0 only sets the offset g_0
    of the progress and is dropped (its chain state is the rest state).
    Returns (observations, epochs used). NaN marks what is left out.
    """
    d = as_curves(curves, "curves")
    e = np.asarray(epochs, dtype=np.float64)
    require(d.ndim >= 2 and e.ndim == 1 and d.shape[-2] == e.size and e.size >= 1
            and bool(np.all(np.diff(e) > 0)) and bool(np.all(e >= 0)), "epochs",
            "increasing numbers >= 0, one per frame of curves (..., E, L+1)", epochs)
    drop = d[..., 0] - d[..., -1]  # (..., E)
    g0 = drop[..., 0:1] if e[0] == 0 else np.zeros_like(drop[..., :1])
    keep = e > 0
    require(keep.any(), "epochs", "at least one epoch > 0", epochs)
    d, drop, e = d[..., keep, :], drop[..., keep], e[keep]
    with np.errstate(invalid="ignore", divide="ignore"):
        progress = (drop - g0) / (drop[..., -1:] - g0)
    shape = normalise(d)[..., 1:-1]  # (..., E, L-1)
    shape = np.where((progress >= min_progress)[..., None], shape, np.nan)
    obs = np.concatenate([shape.reshape(shape.shape[:-2] + (-1,)), progress[..., :-1]], axis=-1)
    return obs, e


def _chain_observations(x: np.ndarray) -> np.ndarray:
    """Chain positions (K, E, L) -> the observations of :func:`trajectory_observations`."""
    last = x[..., -1:]  # x_L, (K, E, 1)
    with np.errstate(invalid="ignore", divide="ignore"):
        shape = 1.0 - x[..., :-1] / last  # l = 1..L-1
        progress = last[:, :-1, 0] / last[:, -1:, 0]
    return np.concatenate([shape.reshape(len(x), -1), progress], axis=-1)


class _TrajectoryModel:
    """log (mu->, mu<-, s, c) (K, 4) -> chain observations (K, n_obs)."""

    def __init__(self, blocks: int, epochs: np.ndarray, modulus: float):
        self.blocks, self.epochs, self.modulus = blocks, epochs, modulus

    def __call__(self, z: np.ndarray) -> np.ndarray:
        p = np.exp(z)
        x = np.empty((len(p), len(self.epochs), self.blocks))
        # The integrator's cost follows the largest c of a call, so sets are
        # integrated in groups of similar c (within a factor of 2).
        group = np.floor(np.log2(p[:, 3])).astype(int) if len(p) else np.zeros(0, int)
        for g in np.unique(group):
            rows = group == g
            x[rows] = theory.predict_positions(
                self.blocks, p[rows, 0], p[rows, 1], p[rows, 2], self.epochs[-1],
                times=self.epochs, time_scale=p[rows, 3], modulus=self.modulus)
        return _chain_observations(x)


@functools.lru_cache(maxsize=8)
def _start_grid(blocks: int, epochs: tuple, modulus: float, log_lo: tuple, log_hi: tuple):
    """Cached coarse grid: log-parameters (G, 4) and their observations (G, n_obs)."""
    n_mu, n_ratio, n_s, n_t = START_GRID
    lo, hi = np.array(log_lo), np.array(log_hi)
    mu = np.linspace(lo[0], hi[0], n_mu + 2)[1:-1]
    ratio = np.log(np.array([1.0, 2.0, 4.0, 8.0])[:n_ratio])
    s = np.linspace(lo[2], hi[2], n_s + 2)[1:-1]
    c = np.linspace(lo[3], hi[3], n_t + 2)[1:-1]
    m, r, ss, cc = np.meshgrid(mu, ratio, s, c, indexing="ij")
    z = np.stack([m.ravel(), np.clip(m.ravel() + r.ravel(), lo[1], hi[1]), ss.ravel(),
                  cc.ravel()], axis=1)
    obs = _TrajectoryModel(blocks, np.array(epochs), modulus)(z)
    z.setflags(write=False)
    obs.setflags(write=False)
    return z, obs


def _starts(data, weights, grid_z, grid_obs, n_starts: int):
    """The ``n_starts`` grid points nearest each row of ``data`` (weighted): (K n, 4), owners."""
    w = np.where(np.isfinite(data), weights, 0.0)
    d = np.where(np.isfinite(data), data, 0.0)
    go = np.where(np.isfinite(grid_obs), grid_obs, 1e3)
    # weighted squared distances (K, G) by expansion
    dist = (w * d * d).sum(1)[:, None] - 2.0 * (w * d) @ go.T + w @ (go * go).T
    best = np.argsort(dist, axis=1)[:, :n_starts]
    return grid_z[best.ravel()], np.repeat(np.arange(len(data)), n_starts)


@dataclass
class TrajectoryFit:
    """Result of :func:`fit_trajectory` for curves of leading shape (...).

    estimate, low, high : (..., 4) the fit and its 95 % interval for
        (mu->, mu<-, s, c) (forces in k y; c in time units per epoch).
    unbounded : (..., 4) bool, the interval reaches a bound of the fit (the
        data cannot exclude it; non-identifiable when both ends do).
    at_bound : (..., 4) bool, the estimate itself sits on a bound.
    log_se : (..., 4) standard errors of the log-parameters.
    residual : (...) RMS of the weighted misfit over the used observations.
    frame_residual : (..., E) RMS shape misfit of each frame (NaN where left out).
    observations, fitted : (..., n_obs) data and chain observations.
    epochs : (E,) the epochs used; blocks, modulus, bounds: the settings.
    """

    estimate: np.ndarray
    low: np.ndarray
    high: np.ndarray
    unbounded: np.ndarray
    at_bound: np.ndarray
    log_se: np.ndarray
    residual: np.ndarray
    frame_residual: np.ndarray
    observations: np.ndarray
    fitted: np.ndarray
    epochs: np.ndarray
    blocks: int
    modulus: float
    bounds: dict = field(default_factory=dict)

    @property
    def horizon(self) -> np.ndarray:
        """T = c e_E (...), the chain time of the last frame."""
        return self.estimate[..., 3] * self.epochs[-1]

    def to_dataset(self, dims=None, coords: dict | None = None) -> xr.Dataset:
        """Labelled result: ``<param>``, ``<param>_low/_high/_unbounded/_at_bound`` per cell."""
        lead = self.residual.shape
        dims = [f"dim_{i}" for i in range(len(lead))] if dims is None else list(dims)
        require(len(dims) == len(lead), "dims", f"{len(lead)} names of the leading axes {lead}",
                dims)
        units = {"mu_right": "k y", "mu_left": "k y", "noise": "k y",
                 "time_scale": "time / epoch"}
        data_vars = {}
        for j, name in enumerate(PARAMS):
            data_vars[name] = (dims, self.estimate[..., j],
                               {"long_name": f"fitted {name}", "units": units[name]})
            data_vars[f"{name}_low"] = (dims, self.low[..., j],
                                        {"long_name": f"{LEVEL:.0%} interval, low end"})
            data_vars[f"{name}_high"] = (dims, self.high[..., j],
                                         {"long_name": f"{LEVEL:.0%} interval, high end"})
            data_vars[f"{name}_unbounded"] = (dims, self.unbounded[..., j],
                                              {"long_name": "interval reaches a bound"})
            data_vars[f"{name}_at_bound"] = (dims, self.at_bound[..., j],
                                             {"long_name": "estimate on a bound"})
            data_vars[f"{name}_log_se"] = (dims, self.log_se[..., j],
                                           {"long_name": f"standard error of log {name}"})
        data_vars["horizon"] = (dims, self.horizon, {"long_name": "T = c * last epoch"})
        data_vars["residual"] = (dims, self.residual, {"long_name": "RMS misfit"})
        data_vars["frame_residual"] = (dims + ["epoch"], self.frame_residual,
                                       {"long_name": "RMS shape misfit per frame"})
        all_coords = {"epoch": self.epochs}
        all_coords.update(coords or {})
        ds = xr.Dataset(data_vars, coords=all_coords)
        settings = {"blocks": self.blocks, "modulus": self.modulus, "level": LEVEL,
                    **{f"bound_{k}": list(v) for k, v in self.bounds.items()}}
        ds.attrs.update(provenance("springblock.fit.fit_trajectory", settings))
        ds.attrs["model"] = ("mean-field overdamped chain, Gaussian noise, observed at t = "
                             "time_scale * epoch (springblock.fit.fit_trajectory)")
        return ds


def _check_bounds(bounds, last_epoch: float):
    """Bounds dict -> log lower/upper arrays (4,) over (mu->, mu<-, s, c)."""
    b = dict(DEFAULT_BOUNDS)
    if bounds is not None:
        unknown = set(bounds) - set(b)
        require(not unknown, "bounds", f"a dict with keys among {sorted(b)}", bounds)
        b.update(bounds)
    for name, pair in b.items():
        ok = (isinstance(pair, (tuple, list)) and len(pair) == 2
              and all(is_finite(v) for v in pair) and 0 < pair[0] < pair[1])
        require(ok, f"bounds[{name!r}]", "(low, high) with 0 < low < high", pair)
    lo = np.log([b["mu_right"][0], b["mu_left"][0], b["noise"][0],
                 b["horizon"][0] / last_epoch])
    hi = np.log([b["mu_right"][1], b["mu_left"][1], b["noise"][1],
                 b["horizon"][1] / last_epoch])
    return lo, hi, b


def fit_trajectory(curves, epochs, *, weights=None, modulus: float = 1.0, bounds=None,
                   n_starts: int = 3, max_iter: int = 60) -> TrajectoryFit:
    """Fit (mu->, mu<-, s, c) of the mean-field chain to load curves over training.

    curves : (..., E, L+1) network load curves D_l at ``epochs`` (E,), any
        scale; the chain gets L blocks. A frame at epoch 0 sets the offset of
        the progress only. For one final curve pass ``curves[..., None, :]``
        and ``epochs=[1]``: then c is the horizon T.
    weights : None (equal) or (..., n_obs) inverse variances of the
        observations (e.g. :func:`seed_weights`); their overall scale is
        re-estimated from the misfit.
    bounds : dict overriding :data:`DEFAULT_BOUNDS` (keys mu_right, mu_left,
        noise, horizon; T = c times the last epoch).
    n_starts : grid starts per curve for the local fit.

    Returns :class:`TrajectoryFit`. Cost ~ the largest T of a batch: pass
    all cells in one call.
    """
    obs, used = trajectory_observations(curves, epochs)
    require(is_finite(modulus) and modulus > 0, "modulus", "a finite number > 0", modulus)
    require(is_int(n_starts) and n_starts >= 1, "n_starts", "an integer >= 1", n_starts)
    require(is_int(max_iter) and max_iter >= 1, "max_iter", "an integer >= 1", max_iter)
    lo, hi, b = _check_bounds(bounds, float(used[-1]))
    lead, n_obs = obs.shape[:-1], obs.shape[-1]
    blocks = np.asarray(curves).shape[-1] - 1
    w = np.ones_like(obs) if weights is None else np.broadcast_to(
        np.asarray(weights, dtype=np.float64), obs.shape)
    if weights is not None and not (np.all(np.isfinite(w)) and np.all(w >= 0)):
        raise ConfigError("weights must be finite and >= 0, shaped like the observations "
                          f"(..., {n_obs})")
    flat, wf = obs.reshape(-1, n_obs), w.reshape(-1, n_obs)
    n_free = len(PARAMS)
    count = (np.isfinite(flat) & (wf > 0)).sum(axis=1)
    rows = np.flatnonzero(count > n_free)
    est = np.full((len(flat), n_free), np.nan)
    se = np.full_like(est, np.nan)
    fitted = np.full_like(flat, np.nan)
    rss = np.full(len(flat), np.nan)
    if rows.size:
        model = _TrajectoryModel(blocks, used, float(modulus))
        grid_z, grid_obs = _start_grid(blocks, tuple(used), float(modulus), tuple(lo), tuple(hi))
        starts, owner = _starts(flat[rows], wf[rows], grid_z, grid_obs, n_starts)
        z, f, jac = levenberg_marquardt(model, flat[rows][owner], starts, lo, hi, max_iter,
                                        owner, weights=wf[rows][owner])
        cost = np.nansum(wf[rows][owner] * (f - flat[rows][owner]) ** 2, axis=1)
        order = np.lexsort((cost, owner))
        first = order[np.r_[True, owner[order][1:] != owner[order][:-1]]]
        z, f, jac = z[first], f[first], jac[first]
        est[rows], fitted[rows], rss[rows] = z, f, cost[first]
        se[rows] = _log_standard_errors(jac, wf[rows] * np.isfinite(flat[rows]), rss[rows],
                                        count[rows] - n_free)
    return _assemble(est, se, rss, count, flat, fitted, wf, lo, hi, lead, used, blocks,
                     modulus, b)


def _log_standard_errors(jac, w, rss, dof):
    """Gauss-Newton standard errors (K, 4) of the log-parameters; inf where not identified."""
    jw = jac * np.sqrt(w)[:, :, None]
    jw = np.where(np.isfinite(jw), jw, 0.0)
    hess = np.einsum("knm,knp->kmp", jw, jw)
    sigma2 = rss / np.maximum(dof, 1)
    out = np.full(jac.shape[::2], np.inf)
    for k in range(len(jac)):
        vals, vecs = np.linalg.eigh(hess[k])
        # directions the data do not see (eigenvalue ~0) make every parameter
        # they touch unidentified: infinite variance there
        tiny = vals <= 1e-10 * max(vals.max(), 1e-300)
        inv = np.where(tiny, np.inf, 1.0 / np.where(tiny, 1.0, vals))
        touched = np.abs(vecs) > 1e-3
        var = np.where((touched & tiny[None, :]).any(axis=1), np.inf,
                       (vecs ** 2 * np.where(tiny, 0.0, inv)[None, :]).sum(axis=1))
        out[k] = np.sqrt(var * sigma2[k])
    return out


def _assemble(est, se, rss, count, flat, fitted, w, lo, hi, lead, used, blocks, modulus,
              bounds) -> TrajectoryFit:
    """Intervals, flags and per-frame residuals; reshape to the leading shape."""
    dof = np.maximum(count - len(PARAMS), 1)
    q = student_t.ppf(0.5 + LEVEL / 2, dof)[:, None]
    with np.errstate(invalid="ignore", over="ignore"):
        z_lo, z_hi = est - q * se, est + q * se
    tol = 1e-6 * (hi - lo)
    unbounded = (z_lo <= lo + tol) | (z_hi >= hi - tol)
    at_bound = (est <= lo + tol) | (est >= hi - tol)
    low, high = np.exp(np.clip(z_lo, lo, hi)), np.exp(np.clip(z_hi, lo, hi))
    nan = np.isnan(est)
    unbounded &= ~nan
    at_bound &= ~nan
    n_e = len(used)
    n_shape = flat.shape[1] - (n_e - 1)
    diff = (fitted - flat)[:, :n_shape].reshape(len(flat), n_e, -1)
    with np.errstate(invalid="ignore"):
        frame = np.sqrt(np.nanmean(diff ** 2, axis=2)) if diff.size else diff[..., 0]
        resid = np.sqrt(rss / np.maximum(count, 1))

    def shaped(a):
        return a.reshape(lead + a.shape[1:])

    return TrajectoryFit(
        estimate=shaped(np.exp(est)), low=shaped(np.where(nan, np.nan, low)),
        high=shaped(np.where(nan, np.nan, high)), unbounded=shaped(unbounded),
        at_bound=shaped(at_bound), log_se=shaped(se), residual=shaped(resid),
        frame_residual=shaped(frame), observations=shaped(flat), fitted=shaped(fitted),
        epochs=used, blocks=blocks, modulus=float(modulus), bounds=bounds)


def seed_weights(curves_per_seed, epochs, seed_axis: int = -3, floor: float = 1e-3):
    """Inverse variances of seed-mean observations, pooled per observation kind and epoch.

    ``curves_per_seed`` (..., S, E, L+1) with S >= 2 seeds on ``seed_axis``.
    The variance of each observation is estimated from the seed spread,
    pooled over every leading cell and over the layers of a frame (so two
    seeds suffice), divided by S, floored at ``floor``^2. Returns weights
    (..., n_obs) for the seed-mean curves.
    """
    d = np.moveaxis(np.asarray(curves_per_seed, dtype=np.float64), seed_axis, -3)
    n_seeds = d.shape[-3]
    require(n_seeds >= 2, "curves_per_seed", "at least 2 seeds along seed_axis", d.shape)
    per_seed, used = trajectory_observations(d, epochs)  # (..., S, n_obs)
    var = np.nanvar(per_seed, axis=-2, ddof=1)  # (..., n_obs)
    pooled_cells = np.nanmean(var.reshape(-1, var.shape[-1]), axis=0)  # (n_obs,)
    n_e = len(used)
    n_shape = pooled_cells.size - (n_e - 1)
    shape_var = np.nanmean(pooled_cells[:n_shape].reshape(n_e, -1), axis=1, keepdims=True)
    pooled = np.concatenate([np.broadcast_to(shape_var, (n_e, n_shape // n_e)).ravel(),
                             pooled_cells[n_shape:]])
    pooled = np.where(np.isfinite(pooled), pooled, np.nanmax(pooled))
    w = 1.0 / np.maximum(pooled / n_seeds, floor * floor)
    return np.broadcast_to(w, var.shape).copy()
