"""Fit the chain to load curves over training: free (mu->, mu<-, s) and a time scale c.

A network recorded at epochs e_0 < e_1 < ... < e_E (load curves D_l(e)) is
compared with the mean-field chain (:func:`springblock.fit.integrator.chain_positions`)
at chain times t = c (e - e_start):

    D_l(e) = a_e - b x_l(c (e - e_start)) + noise,     l = 0..L (x_0 = 0, the wall),

with a per-frame offset a_e projected out in closed form. Two starts:

* ``start="rest"`` (the paper's chain): x(0) = 0 at epoch 0; the scale b (the
  network's units) is projected out too, and an epoch-0 frame is left out.
* ``start="network"``: the chain starts where the network starts, from its
  first recorded curve, x_l(0) = (D_0(e_0) - D_l(e_0)) / b, with b — the
  network's distance from the wall to the chain's target y, the network's
  total drop — a fifth fitted parameter (in units of the final drop
  D_0 - D_L of the last frame). The first frame is the initial condition, not data.

A single frame (E = 1, e_1 = 1, rest) is the final-curve fit with the horizon
T = c fitted. Parameters are fitted in log space; 95 % intervals are Wald
intervals there, widened by profiling out the parameters the local fit
cannot see, and flagged unbounded where they reach a bound of the fit. Only
cells the chain fits to within their seed noise (chi2/dof <=
``acceptable_chi2``) get intervals: elsewhere the best chain is a misfit and
its parameters are not a measurement (``docs/fit.md``, "Trajectory fit").
"""

from __future__ import annotations

import dataclasses
import functools
import warnings

import numpy as np
from scipy.stats import t as student_t

from phasecore.checks import ConfigError, is_finite, is_int, require
from phasecore.loadcurve import MIN_RELATIVE_DROP
from springblock.fit.optimiser import levenberg_marquardt
from springblock.fit.shapes import as_curves
from springblock.fit.trajectory_result import (
    ACCEPTABLE_CHI2,
    LEVEL,
    NETWORK_PARAMS,
    PARAMS,
    TrajectoryFit,
)
from springblock.fit.trajectory_state import FitEstimates, FitProblem, assemble
from springblock.fit.variants import ChainVariant

__all__ = ["TrajectoryFit", "fit_trajectory"]

#: The paper's chain, the default of every fit.
PAPER_CHAIN = ChainVariant()
#: Where the chain starts: at rest (the paper's chain) or from the network's first curve.
STARTS = ("rest", "network")
#: Default bounds of mu->, mu<-, s (units of k y), of the horizon T = c (e_E - e_start)
#: (time units) and of the total drop b (units of the final drop D_0 - D_L; a chain that
#: fits has b > the final drop, its last block never reaching the target, but a misfit
#: may trade the wall's offset against the scale, so the bound leaves room below 1).
DEFAULT_BOUNDS = {"mu_right": (1e-4, 0.3), "mu_left": (1e-4, 0.6), "noise": (1e-4, 0.3),
                  "horizon": (10.0, 3000.0), "total_drop": (0.3, 30.0)}
#: Coarse starting grid: points per parameter (mu->, mu<-/mu->, s, T); the network start
#: adds the total drop and, its grid being integrated per curve, is coarser.
START_GRID = (6, 4, 6, 5)
NETWORK_START_GRID = (4, 2, 4, 4, 3)
#: Integrator steps per doubling of time (springblock.fit.integrator; RMS error <= 1.4e-3
#: of the final drop, median 3e-4, over the default bounds).
STEPS_PER_DOUBLING = 8
#: Convergence of the local fits (see :func:`~springblock.fit.optimiser.levenberg_marquardt`): a
#: start stops when a step lowers its cost by less than COST_RTOL (the optimiser's 1e-4 left
#: chi2/dof of a few cells depending on the data's last bits), and a parameter the curves
#: ignore (column below FLAT_RTOL of the largest) does not move.
COST_RTOL, FLAT_RTOL = 1e-8, 1e-6
#: Iterations of each profiling refit (it starts next to the fit, so few are needed).
PROFILE_ITER = 20


def _used_frames(curves, epochs, start: str):
    """Curves (..., E, L+1), epochs (E,) -> (data frames, their epochs, first frame or None).

    At rest an epoch-0 frame is left out (the chain is at rest there); from the
    network, the first frame is the initial condition and the rest are data.
    """
    d = as_curves(curves, "curves")
    e = np.asarray(epochs, dtype=np.float64)
    require(d.ndim >= 2 and e.ndim == 1 and d.shape[-2] == e.size
            and bool(np.all(np.diff(e) > 0)) and bool(np.all(e >= 0)), "epochs",
            "increasing numbers >= 0, one per frame of curves (..., E, L+1)", epochs)
    if start == "network":
        require(e.size >= 2, "epochs", "at least 2 frames with start='network' (the first "
                "is where the chain starts)", epochs)
        return d[..., 1:, :], e[1:], d[..., 0, :]
    keep = e > 0
    require(keep.any(), "epochs", "at least one epoch > 0", epochs)
    return d[..., keep, :], e[keep], None


def project(data, chain, weights):
    """Best a_e - b x_l(e) for each row: the offsets and the scale projected out.

    data, weights (K, E, L+1) network curves and inverse variances (0 where
    missing); chain (K, E, L+1) positions x_0..x_L (x_0 = 0). Per frame the
    weighted means are removed; one slope beta = -b over all frames is the
    weighted regression of the centred data on the centred chain. Returns the
    fitted curves (K, E, L+1) and beta (K,).
    """
    w = weights
    sw = np.maximum(w.sum(axis=-1, keepdims=True), 1e-300)
    d = np.where(w > 0, data, 0.0)
    d_mean = (w * d).sum(axis=-1, keepdims=True) / sw
    x_mean = (w * chain).sum(axis=-1, keepdims=True) / sw
    xc = chain - x_mean
    sxx = (w * xc * xc).sum(axis=(-1, -2))
    sdx = (w * (d - d_mean) * xc).sum(axis=(-1, -2))
    beta = sdx / np.maximum(sxx, 1e-300)
    return d_mean + beta[:, None, None] * xc, beta


def _chain_frames(blocks, times, modulus, z, first_span, start=None,
                  variant: ChainVariant = PAPER_CHAIN):
    """log (mu->, mu<-, s, c, ...) (K, >= 4) -> positions x_0..x_L at t = c times, (K, E, L+1).

    ``times`` (E,) are epochs counted from the start; ``start`` (K, L) the initial positions
    (None: at rest); ``variant`` the chain (the paper's: :func:`chain_positions` itself).
    """
    p = np.exp(z)
    x = np.zeros((len(p), len(times), blocks + 1))
    if len(p):
        x[:, :, 1:] = variant.positions(blocks, p[:, 0], p[:, 1], p[:, 2], times, p[:, 3],
                                        start=start, modulus=modulus,
                                        steps_per_doubling=STEPS_PER_DOUBLING,
                                        first_span=first_span)
    return x


def _start_positions(first, log_drop, final_drop):
    """x_l(0) = (D_0 - D_l) / b of first curves (K, L+1) at b = exp(log_drop) * final drop."""
    b = np.exp(log_drop) * final_drop
    return (first[:, :1] - first[:, 1:]) / b[:, None], b


def project_offsets(data, model, weights):
    """model + a_e: the per-frame offsets (weighted means of data - model) projected out.

    data, model, weights (K, E, L+1), weights 0 where missing.
    """
    w = weights
    sw = np.maximum(w.sum(axis=-1, keepdims=True), 1e-300)
    d = np.where(w > 0, data, 0.0)
    return model + (w * (d - model)).sum(axis=-1, keepdims=True) / sw


class _ProjectedModel:
    """(log parameters (K, P), data rows (K,)) -> best fitting curves (K, E (L+1)).

    At rest the offsets and the scale are projected out (:func:`project`); from the
    network's first curve (``first`` (R, L+1)) the scale b is the fifth parameter and
    only the offsets are projected out.
    """

    def __init__(self, blocks, times, modulus, data, weights, first_span, first=None,
                 variant: ChainVariant = PAPER_CHAIN):
        self.blocks, self.times, self.modulus, self.variant = blocks, times, modulus, variant
        self.data, self.weights = data, weights  # (R, E, L+1)
        self.first_span, self.first = first_span, first
        if first is not None:
            self.final_drop = np.abs(data[:, -1, 0] - data[:, -1, -1])

    def __call__(self, z, rows):
        if self.first is None:
            x = _chain_frames(self.blocks, self.times, self.modulus, z, self.first_span,
                              variant=self.variant)
            fitted, _ = project(self.data[rows], x, self.weights[rows])
        else:
            x0, b = _start_positions(self.first[rows], z[:, 4], self.final_drop[rows])
            x = _chain_frames(self.blocks, self.times, self.modulus, z, self.first_span, x0,
                              self.variant)
            fitted = project_offsets(self.data[rows], -b[:, None, None] * x,
                                     self.weights[rows])
        return fitted.reshape(len(z), -1)


def _grid_points(lo, hi, sizes) -> np.ndarray:
    """Interior grid points (G, P) of the log-parameter box; mu<- as ratios 1, 2, 4, 8 of mu->."""
    axes = [np.linspace(lo[j], hi[j], n + 2)[1:-1] for j, n in enumerate(sizes)]
    axes[1] = np.log(np.array([1.0, 2.0, 4.0, 8.0])[:sizes[1]])
    mesh = [a.ravel() for a in np.meshgrid(*axes, indexing="ij")]
    mesh[1] = np.clip(mesh[0] + mesh[1], lo[1], hi[1])
    return np.stack(mesh, axis=1)


@functools.lru_cache(maxsize=32)
def _start_grid(blocks: int, epochs: tuple, modulus: float, log_lo: tuple, log_hi: tuple,
                variant: ChainVariant = PAPER_CHAIN):
    """Cached coarse grid from rest: log-parameters (G, 4) and chain positions (G, E, L+1)."""
    z = _grid_points(log_lo, log_hi, START_GRID)
    x = _chain_frames(blocks, np.array(epochs), modulus, z, np.exp(log_hi[3]) * epochs[0],
                      variant=variant)
    z.setflags(write=False)
    x.setflags(write=False)
    return z, x


def _network_starts(model, rows, lo, hi, n_starts: int):
    """The ``n_starts`` points of a coarse grid that fit each curve best, from its own start.

    Every curve starts elsewhere, so its grid is integrated for it: (K n, 5), owners.
    """
    grid = _grid_points(lo, hi, NETWORK_START_GRID)  # (G, 5)
    sets = np.tile(grid, (rows.size, 1))
    owner = np.repeat(np.arange(rows.size), len(grid))
    fitted = model(sets, rows[owner]).reshape((len(sets),) + model.data.shape[1:])
    cost = _cost(fitted, model.data[rows[owner]], model.weights[rows[owner]])
    best = np.argsort(cost.reshape(rows.size, len(grid)), axis=1)[:, :n_starts]
    return grid[best.ravel()], np.repeat(np.arange(rows.size), n_starts)


def _starts(data, weights, grid_z, grid_x, n_starts: int):
    """The ``n_starts`` grid chains that fit each row best after projection: (K n, 4), owners.

    Projected misfit S_DD - S_DX^2 / S_XX for every (row, grid chain) pair,
    with the per-frame weighted centring of :func:`project`.
    """
    w = weights
    sw = np.maximum(w.sum(axis=-1), 1e-300)  # (K, E)
    d = np.where(w > 0, data, 0.0)
    dc = d - (w * d).sum(axis=-1, keepdims=True) / sw[..., None]
    s_dd = (w * dc * dc).sum(axis=(-1, -2))  # (K,)
    s_dx = np.einsum("kel,gel->kg", w * dc, grid_x)
    wx = np.einsum("kel,gel->kge", w, grid_x)
    s_xx = np.einsum("kel,gel->kg", w, grid_x * grid_x) - np.einsum("kge,ke->kg", wx * wx,
                                                                    1.0 / sw)
    cost = s_dd[:, None] - s_dx ** 2 / np.maximum(s_xx, 1e-300)
    cost = np.where(s_dx < 0, cost, np.inf)  # the drop must grow with the chain's (b > 0)
    best = np.argsort(cost, axis=1)[:, :n_starts]
    return grid_z[best.ravel()], np.repeat(np.arange(len(data)), n_starts)


def _check_bounds(bounds, last_epoch: float, start: str):
    """Bounds dict -> log lower/upper arrays (4,) over (mu->, mu<-, s, c) (and b: (5,))."""
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
    if start == "network":
        lo, hi = np.append(lo, np.log(b["total_drop"][0])), np.append(hi, np.log(
            b["total_drop"][1]))
    else:
        b.pop("total_drop")
    return lo, hi, b


def _check_variant(variant) -> ChainVariant:
    """None (the paper's chain) or a ChainVariant -> the ChainVariant."""
    variant = PAPER_CHAIN if variant is None else variant
    require(isinstance(variant, ChainVariant), "variant",
            "None or a springblock.fit.variants.ChainVariant", variant)
    return variant


def _fittable(count, dof, need: int, frame) -> np.ndarray:
    """The cells with a degree of freedom left. One too short to fit is left NaN: say why
    rather than leave a bare NaN. count, dof: (cells,) weighted points and degrees of
    freedom; need: the points that leave one degree of freedom."""
    short = (dof <= 0) & (count > 0)
    if short.any():
        warnings.warn(f"{int(short.sum())} of {count.size} cells are not fitted (NaN): a "
                      f"trajectory needs at least {need} weighted points (the chain's "
                      f"parameters and one offset per frame; {frame[0]} frames x {frame[1]} "
                      f"layers here) and these have at most {int(count[short].max())}; record "
                      "more frames (record_every) or train longer", stacklevel=4)
    return np.flatnonzero(dof > 0)


def _with_a_drop(flat, wf) -> np.ndarray:
    """The weights ``wf`` with 0 for the cells whose last fitted frame has no drop
    (|D_0 - D_L| below MIN_RELATIVE_DROP of the cell's largest |D|, or not finite): a flat
    curve has no shape for a chain to meet (any chain "fits" it, in units of a zero drop),
    so it is left out (NaN) with a warning rather than called acceptable."""
    with np.errstate(invalid="ignore"):
        drop = np.abs(flat[:, -1, 0] - flat[:, -1, -1])
        scale = np.max(np.where(wf > 0, np.abs(flat), 0.0), axis=(1, 2))
        ok = np.isfinite(drop) & (drop > 0) & (drop >= MIN_RELATIVE_DROP * scale)
    flat_cells = ~ok & (wf > 0).any(axis=(1, 2))
    if flat_cells.any():
        warnings.warn(f"{int(flat_cells.sum())} of {ok.size} cells are not fitted (NaN): "
                      "their load curve has no drop at the last frame (|D_0 - D_L| below "
                      f"{MIN_RELATIVE_DROP:g} of the curve's size, or not finite), no shape "
                      "for a chain to fit", stacklevel=3)
    return np.where(ok[:, None, None], wf, 0.0)


def fit_trajectory(curves, epochs, *, weights=None, start: str = "rest",
                   modulus: float = 1.0, bounds=None, n_starts: int = 3, max_iter: int = 60,
                   profile_values: int = 4,
                   acceptable_chi2: float = ACCEPTABLE_CHI2,
                   variant: ChainVariant | None = None) -> TrajectoryFit:
    """Fit (mu->, mu<-, s, c) of the mean-field chain to load curves over training.

    Pass all cells in one call: the grid of starting chains from rest is shared.

    Parameters
    ----------
    curves : array_like, (..., E, L+1)
        Network load curves D_l at ``epochs``, any units; the chain gets L blocks.
        For one final curve pass ``curves[..., None, :]`` and ``epochs=[1]``: then
        c is the horizon T.
    epochs : array_like, (E,)
        The epochs of the curves, increasing.
    weights : array_like, (..., E, L+1), optional
        None (equal) or inverse variances of the points (e.g.
        :func:`springblock.fit.weights.seed_weights`; 0 leaves a point out); their
        overall scale is re-estimated from the misfit.
    start : {"rest", "network"}
        "rest" (the chain starts at rest at epoch 0; an epoch-0 frame is left out)
        or "network" (the chain starts from each cell's first curve, and the
        network's total drop b is fitted too).
    modulus : float, default 1.0
        k (> 0).
    bounds : dict, optional
        Overrides of :data:`DEFAULT_BOUNDS` (keys mu_right, mu_left, noise,
        horizon — T = c (last epoch - start epoch) — and total_drop).
    n_starts : int, default 3
        Grid starts per curve for the local fit.
    max_iter : int, default 60
        Iterations of the local fit.
    profile_values : int, default 4
        Points at which a parameter the local fit cannot see (infinite standard
        error, or on a bound) is pinned to profile it out of the others' intervals
        (0: Wald intervals only).
    acceptable_chi2 : float
        Cells with a larger chi2/dof are not explained by the chain: they keep their
        best estimate but get no interval (NaN; ``inf`` gives every cell intervals).
        Without ``weights`` there is no seed noise to judge by: every fitted cell is
        acceptable and the result's ``weighted`` is False. A cell whose last frame has no
        drop (a flat curve) is not fitted (NaN).
    variant : ChainVariant, optional
        A :class:`springblock.fit.variants.ChainVariant` (None: the paper's chain,
        the default): a time map, decaying noise or a friction profile, its
        parameter fixed.

    Returns
    -------
    TrajectoryFit
        The estimates with their 95 % intervals, bound flags and residuals, arrays
        of the leading shape (...).

    Raises
    ------
    ConfigError
        A setting out of its range (naming it).
    """
    require(start in STARTS, "start", f"one of {', '.join(STARTS)}", start)
    data, used, first = _used_frames(curves, epochs, start)
    require(is_finite(modulus) and modulus > 0, "modulus", "a finite number > 0", modulus)
    require(is_int(n_starts) and n_starts >= 1, "n_starts", "an integer >= 1", n_starts)
    require(is_int(max_iter) and max_iter >= 1, "max_iter", "an integer >= 1", max_iter)
    require(is_int(profile_values) and (profile_values == 0 or profile_values >= 2),
            "profile_values", "0 or an integer >= 2", profile_values)
    require(isinstance(acceptable_chi2, (int, float)) and acceptable_chi2 > 0,
            "acceptable_chi2", "a number > 0 (inf: every cell)", acceptable_chi2)
    origin = float(np.asarray(epochs, dtype=np.float64)[0]) if start == "network" else 0.0
    times = used - origin  # epochs counted from where the chain starts
    lo, hi, b = _check_bounds(bounds, float(times[-1]), start)
    params = NETWORK_PARAMS if start == "network" else PARAMS
    lead, frame = data.shape[:-2], data.shape[-2:]
    blocks = frame[1] - 1
    w = _frame_weights(weights, epochs, data.shape, start)
    flat = data.reshape((-1,) + frame)
    wf = _with_a_drop(flat, np.where(np.isfinite(flat), w.reshape((-1,) + frame), 0.0))
    first_flat = None if first is None else first.reshape(-1, frame[1])
    if first_flat is not None:  # a cell without a usable first curve cannot start there
        wf = np.where(np.isfinite(first_flat).all(axis=1)[:, None, None], wf, 0.0)
    n_free = len(params)
    count = (wf > 0).sum(axis=(1, 2))
    # chain parameters, offsets a_e and (from rest) the projected scale b
    dof = count - n_free - frame[0] - (start == "rest")
    rows = _fittable(count, dof, n_free + frame[0] + (start == "rest") + 1, frame)
    first_span = float(np.exp(hi[3]) * times[0])
    model = _ProjectedModel(blocks, times, float(modulus), flat, wf, first_span, first_flat,
                            _check_variant(variant))
    problem = FitProblem(model, flat, wf, dof, lo, hi, lead, used, blocks, modulus, b, params,
                         start, origin, acceptable_chi2)
    fit = FitEstimates.unfitted(flat, n_free)
    if rows.size:
        _fit_locally(problem, fit, rows, n_starts, max_iter)
    q = student_t.ppf(0.5 + LEVEL / 2, np.maximum(dof, 1))[:, None]
    # without weights there is no seed noise to judge a misfit by: every fitted cell
    # gets its intervals (as acceptable_chi2=inf), and the result says so (weighted)
    acceptable = np.isfinite(fit.rss) & ((fit.rss / np.maximum(dof, 1) <= acceptable_chi2)
                                         | (weights is None))
    with np.errstate(invalid="ignore", over="ignore"):
        fit.z_lo[...], fit.z_hi[...] = fit.est - q * fit.se, fit.est + q * fit.se
    if acceptable.any() and profile_values > 0:
        _profile_flat(problem, fit, q[:, 0], profile_values, min(max_iter, PROFILE_ITER),
                      acceptable)
    fit.z_lo[~acceptable] = fit.z_hi[~acceptable] = np.nan
    return dataclasses.replace(assemble(problem, fit, acceptable), variant=model.variant,
                               weighted=weights is not None)


def _fit_locally(problem: FitProblem, fit: FitEstimates, rows, n_starts: int,
                 max_iter: int) -> None:
    """The best local fit of each cell of ``rows`` from its ``n_starts`` best grid chains,
    written into ``fit`` (its estimate, standard errors, misfit and fitted curves)."""
    model, flat, wf, lo, hi = problem.model, problem.flat, problem.weights, problem.lo, problem.hi
    if problem.start == "network":
        starts, owner = _network_starts(model, rows, lo, hi, n_starts)
    else:
        grid_z, grid_x = _start_grid(problem.blocks, tuple(model.times),
                                     float(problem.modulus), tuple(lo), tuple(hi),
                                     model.variant)
        starts, owner = _starts(flat[rows], wf[rows], grid_z, grid_x, n_starts)
    data_row = rows[owner]
    z, f, jac = levenberg_marquardt(_RowsOf(model, data_row), flat[data_row].reshape(
        len(owner), -1), starts, lo, hi, max_iter, owner,
        weights=wf[data_row].reshape(len(owner), -1), row_aware=True, cost_rtol=COST_RTOL,
        flat_rtol=FLAT_RTOL)
    cost = _cost(f, flat[data_row], wf[data_row])
    order = np.lexsort((cost, owner))
    first_of = order[np.r_[True, owner[order][1:] != owner[order][:-1]]]
    fit.est[rows], fit.fitted[rows], fit.rss[rows] = z[first_of], f[first_of].reshape(
        (-1,) + flat.shape[1:]), cost[first_of]
    fit.se[rows] = _log_standard_errors(jac[first_of], wf[rows].reshape(len(rows), -1),
                                        fit.rss[rows], problem.dof[rows])


def _frame_weights(weights, epochs, shape, start: str) -> np.ndarray:
    """Weights of the fitted frames, shape (..., E', L+1): ones, or the given ones without
    the frames that are not data (given for every frame or only for the fitted ones)."""
    if weights is None:
        return np.ones(shape)
    w = np.asarray(weights, dtype=np.float64)
    e = np.asarray(epochs)
    if w.shape[-2:] == (len(e), shape[-1]) and w.shape[-2] != shape[-2]:
        w = w[..., 1:, :] if start == "network" else w[..., e > 0, :]
    require(np.all(np.isfinite(w)) and np.all(w >= 0), "weights",
            "finite numbers >= 0 shaped like the curves", "other")
    try:
        return np.broadcast_to(w, shape)
    except ValueError:
        raise ConfigError(f"weights must be shaped like the curves {tuple(shape)} or their "
                          f"fitted frames (got shape {w.shape})") from None


class _RowsOf:
    """A row-aware model seen through a map from optimiser rows to data rows."""

    def __init__(self, model, data_row):
        self.model, self.data_row = model, data_row

    def __call__(self, z, rows):
        return self.model(z, self.data_row[rows])


def _cost(f, data, w):
    """Weighted squared misfit per row; f (K, n) or (K, E, L+1), data and w (K, E, L+1)."""
    diff = f.reshape(data.shape) - np.where(w > 0, data, 0.0)
    return np.sum(np.where(w > 0, w * diff * diff, 0.0), axis=(1, 2))


def _profile_flat(problem: FitProblem, fit: FitEstimates, q, n_values: int, max_iter: int,
                  cells_to_profile) -> None:
    """Profile out parameters the local fit cannot see; widen ``fit``'s intervals in place.

    A parameter with infinite standard error, or whose estimate sits on a
    bound, leaves the Wald intervals of the others conditional on its value.
    For each such (cell, parameter j), log p_j is pinned at ``n_values``
    points across its bounds and the others refitted; every refit whose
    misfit stays within the profile-likelihood threshold,
    (RSS_v - RSS) / sigma^2 <= q^2 with sigma^2 = RSS / dof, widens the
    intervals: j's to include the pinned value, the others' to include their
    own Wald intervals there. A refit with a lower misfit replaces the fit.
    Only the cells ``cells_to_profile`` (bool per cell) are profiled; ``q`` (cells,) is
    each cell's Student-t quantile.
    """
    model, flat, w, dof, lo, hi = (problem.model, problem.flat, problem.weights, problem.dof,
                                   problem.lo, problem.hi)
    est, se, rss, fitted, z_lo, z_hi = fit.est, fit.se, fit.rss, fit.fitted, fit.z_lo, fit.z_hi
    tol = 1e-6 * (hi - lo)
    flagged = np.isfinite(est) & (~np.isfinite(se) | (est <= lo + tol) | (est >= hi - tol))
    flagged &= np.asarray(cells_to_profile)[:, None]
    cells, params = np.nonzero(flagged)
    if cells.size == 0:
        return
    values = np.linspace(lo, hi, n_values)  # (V, 4)
    cell = np.repeat(cells, n_values)
    param = np.repeat(params, n_values)
    pinned = values[np.tile(np.arange(n_values), cells.size), param]
    z0, row_lo, row_hi = est[cell].copy(), np.tile(lo, (cell.size, 1)), np.tile(hi, (cell.size, 1))
    rows = np.arange(cell.size)
    z0[rows, param] = row_lo[rows, param] = row_hi[rows, param] = pinned
    z, f, jac = levenberg_marquardt(_RowsOf(model, cell), flat[cell].reshape(cell.size, -1), z0,
                                    row_lo, row_hi, max_iter,
                                    weights=w[cell].reshape(cell.size, -1), row_aware=True,
                                    cost_rtol=COST_RTOL, flat_rtol=FLAT_RTOL)
    cost = _cost(f, flat[cell], w[cell])
    se_v = _log_standard_errors(jac, w[cell].reshape(cell.size, -1), cost, dof[cell] + 1)
    sigma2 = rss[cell] / np.maximum(dof[cell], 1)
    inside = (cost - rss[cell]) / sigma2 <= q[cell] ** 2
    # a lower optimum found while profiling becomes the fit
    for r in np.argsort(cost):
        k = cell[r]
        if cost[r] < rss[k] * (1 - 1e-9):
            est[k], rss[k] = z[r], cost[r]
            fitted[k] = f[r].reshape(fitted.shape[1:])
            se[k] = se_v[r]
            se[k, param[r]] = np.inf  # it was pinned: nothing local is known about it
            z_lo[k], z_hi[k] = est[k] - q[k] * se[k], est[k] + q[k] * se[k]
    for r in np.flatnonzero(inside):
        k, j = cell[r], param[r]
        others = np.arange(est.shape[1]) != j
        with np.errstate(invalid="ignore", over="ignore"):
            lo_r = np.where(others, z[r] - q[k] * se_v[r], pinned[r])
            hi_r = np.where(others, z[r] + q[k] * se_v[r], pinned[r])
        z_lo[k] = np.fmin(z_lo[k], lo_r)
        z_hi[k] = np.fmax(z_hi[k], hi_r)


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
