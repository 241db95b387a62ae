"""``fit_spring``: the chain (mu->, s) whose mean-field load curve has a network curve's shape.

Overdamped chain, Gaussian force noise, target y = 1, observed at a fixed
horizon T with mu<- = ratio * mu-> (docs/fit.md; the model is the mean-field chain
integrated by :func:`springblock.fit.integrator.chain_positions`, checked against
:func:`springblock.theory.predict_positions`). What a shape can
and cannot identify, and the measured accuracy, are in ``docs/fit.md``.
"""

from __future__ import annotations

import numpy as np

from phasecore.checks import ConfigError, is_finite, is_int, require
from springblock.fit.optimiser import levenberg_marquardt, standard_errors, with_jacobian
from springblock.fit.refine import refine_by_simulation, simulated_shapes
from springblock.fit.result import FitResult
from springblock.fit.shapes import (
    DEFAULT_HORIZON,
    DEFAULT_MU_LEFT_RATIO,
    chain_shapes,
    effective_force,
    normalise,
)
from springblock.fit.starts import grid_shapes, starting_points

__all__ = ["DEFAULT_BOUND", "DEFAULT_GRID", "TIE_TOLERANCE", "fit_spring"]

#: Points of the starting grid along (mu->, s).
DEFAULT_GRID = (24, 24)
#: Default upper bound of mu-> and s, in units of k y (mean-field error there: 8e-4 RMS).
DEFAULT_BOUND = 0.1
#: Convergence of the local fit: a start stops when a step lowers its squared misfit by less
#: than this fraction. Along the valley of constant F_eff the misfit changes by ~1e-6 relative
#: across 1 % of mu->, so the optimiser's default (1e-4) stops wherever its path ends.
COST_RTOL = 1e-12
#: A parameter whose curve derivative (times its bound width) is below this fraction of the
#: other's does not move in a step (a fully relaxed chain does not depend on s).
FLAT_RTOL = 1e-6
#: Curves closer than this (RMS of normalised curves) count as the same fit;
#: used to report the smallest noise where the curve no longer depends on it.
TIE_TOLERANCE = 1e-6


class _Model:
    """Normalised chain shape (K, L+1) as a function of the free parameters z (K, m)."""

    def __init__(self, blocks, modulus, horizon, ratio, mu_fixed):
        self.blocks, self.modulus, self.horizon, self.ratio = blocks, modulus, horizon, ratio
        self.mu_fixed = mu_fixed

    def full(self, z: np.ndarray) -> np.ndarray:
        """(K, m) free parameters -> (K, 2) (mu->, s)."""
        if self.mu_fixed is None:
            return z
        return np.column_stack([np.full(len(z), self.mu_fixed), z[:, 0]])

    def __call__(self, z: np.ndarray) -> np.ndarray:
        p = self.full(z)
        if len(p) == 0:
            return np.zeros((0, self.blocks + 1))
        return chain_shapes(self.blocks, p[:, 0], p[:, 1], horizon=self.horizon,
                            mu_left_ratio=self.ratio, modulus=self.modulus)


def _check_bounds(bounds, modulus: float):
    if bounds is None:
        return (0.0, DEFAULT_BOUND * modulus), (0.0, DEFAULT_BOUND * modulus)
    allowed = "((mu_right_min, mu_right_max), (noise_min, noise_max)), finite, 0 <= min < max"
    try:
        (a, b), (c, d) = bounds
        vals = [float(v) for v in (a, b, c, d)]
    except (TypeError, ValueError):
        raise ConfigError(f"bounds must be {allowed} (got {bounds!r})") from None
    a, b, c, d = vals
    require(all(is_finite(v) for v in vals) and 0 <= a < b and 0 <= c < d, "bounds", allowed,
            bounds)
    return (a, b), (c, d)


def _check_arguments(modulus, horizon, mu_left_ratio, mu_right, grid, refine, refine_threshold,
                     sim_seeds, sim_iterations, step, max_iter):
    """Every argument of :func:`fit_spring` but the curves and bounds, or a ConfigError."""
    for name, value in (("modulus", modulus), ("horizon", horizon), ("step", step)):
        require(is_finite(value) and value > 0, name, "a finite number > 0", value)
    require(is_finite(mu_left_ratio) and mu_left_ratio >= 0, "mu_left_ratio",
            "a finite number >= 0", mu_left_ratio)
    require(mu_right is None or (is_finite(mu_right) and mu_right >= 0), "mu_right",
            "None or a finite number >= 0", mu_right)
    grid_ok = (isinstance(grid, (tuple, list)) and len(grid) == 2
               and all(is_int(g) and g >= 2 for g in grid))
    require(grid_ok, "grid", "two integers >= 2, (n_mu, n_s)", grid)
    require(refine in ("theory", "simulation"), "refine", "'theory' or 'simulation'", refine)
    require(is_finite(refine_threshold) and refine_threshold >= 0, "refine_threshold",
            "a number >= 0", refine_threshold)
    for name, value in (("sim_seeds", sim_seeds), ("sim_iterations", sim_iterations),
                        ("max_iter", max_iter)):
        require(is_int(value) and value >= 1, name, "an integer >= 1", value)
    n_steps = horizon / step
    require(refine != "simulation" or abs(n_steps - round(n_steps)) <= 1e-9 * n_steps,
            "horizon", f"a whole number of steps of size step={step} for refine='simulation'",
            horizon)


def fit_spring(load_curves, *, modulus: float = 1.0, horizon: float = DEFAULT_HORIZON,
               mu_left_ratio: float = DEFAULT_MU_LEFT_RATIO, mu_right: float | None = None,
               bounds=None, grid: tuple[int, int] = DEFAULT_GRID, refine: str = "theory",
               refine_threshold: float = 1e-3, sim_seeds: int = 16, sim_iterations: int = 2,
               step: float = 0.01, max_iter: int = 40) -> FitResult:
    """Fit (mu->, s) of a spring-block chain to each load curve's shape.

    Pass all curves in one call: the integrations are batched.

    Parameters
    ----------
    load_curves : array_like, (..., L+1)
        D_0..D_L per curve, any scale (normalised here); the chain gets L blocks.
        NaN curves give NaN results.
    modulus : float, default 1.0
        k (> 0); forces are reported in units of k y with y = 1.
    horizon : float
        T (> 0), the time at which the chain is observed (fixed).
    mu_left_ratio : float
        mu<- / mu-> (>= 0), fixed.
    mu_right : float, optional
        None to fit mu->, or a fixed value (then s alone is fitted).
    bounds : ((float, float), (float, float)), optional
        ((mu_min, mu_max), (s_min, s_max)), default ((0, 0.1 k), (0, 0.1 k)).
    grid : (int, int), default (24, 24)
        (n_mu, n_s) points of the cached starting grid, each >= 2.
    refine : {"theory", "simulation"}
        "theory" (mean-drift model) or "simulation" (also correct the mean-field
        bias by simulating ``sim_seeds`` seeds, ``sim_iterations`` times, with time
        step ``step`` for curves whose residual exceeds ``refine_threshold``).
    refine_threshold, sim_seeds, sim_iterations, step
        The simulation refinement's settings.
    max_iter : int, default 40
        Levenberg-Marquardt iterations.

    Returns
    -------
    FitResult
        Arrays of the leading shape (...): the fitted parameters, their standard
        errors, residuals and bound flags.

    Raises
    ------
    ConfigError
        A setting out of its range (naming it).

    Examples
    --------
    Every cell of a sweep, as a Dataset over its grid:

    ```python
    res = fit_spring(ds["load_curve"].mean("seed").values)  # (alpha, dropout, layer)
    out = res.to_dataset(dims=["alpha", "dropout"],
                         coords={d: ds[d].values for d in ("alpha", "dropout")})
    ```
    """
    _check_arguments(modulus, horizon, mu_left_ratio, mu_right, grid, refine, refine_threshold,
                     sim_seeds, sim_iterations, step, max_iter)
    (mu_lo, mu_hi), (s_lo, s_hi) = _check_bounds(bounds, modulus)
    mu_fixed = None if mu_right is None else float(mu_right)
    data = normalise(load_curves)
    lead, n_points = data.shape[:-1], data.shape[-1]
    flat = data.reshape(-1, n_points)
    eff = effective_force(load_curves, modulus=modulus)
    setup = _Setup(n_points - 1, float(modulus), float(horizon), float(mu_left_ratio), mu_fixed,
                   (mu_lo, mu_hi), (s_lo, s_hi), (int(grid[0]), int(grid[1])))
    out = _fit_rows(flat, eff.force.reshape(-1), setup, max_iter)
    if refine == "simulation":
        _refine_rows(flat, out, setup, refine_threshold, step, sim_seeds, sim_iterations)

    def shaped(a):
        return a.reshape(lead + a.shape[1:])

    lo, hi = np.array([mu_lo, s_lo]), np.array([mu_hi, s_hi])
    at_bound = (np.isclose(out["params"], lo, rtol=0, atol=1e-9 * (hi - lo))
                | np.isclose(out["params"], hi, rtol=0, atol=1e-9 * (hi - lo)))
    settings = {"grid_mu": int(grid[0]), "grid_noise": int(grid[1]), "refine": refine,
                "bound_mu_right_min": mu_lo, "bound_mu_right_max": mu_hi,
                "bound_noise_min": s_lo, "bound_noise_max": s_hi,
                "fixed_mu_right": "no" if mu_fixed is None else mu_fixed}
    params, se = out["params"], out["se"]
    return FitResult(
        mu_right=shaped(params[:, 0]), mu_left=shaped(params[:, 0] * mu_left_ratio),
        noise=shaped(params[:, 1]), residual=shaped(out["residual"]),
        effective_force=eff.force, effective_force_residual=eff.residual,
        mu_right_se=shaped(se[:, 0]), noise_se=shaped(se[:, 1]), curve=shaped(out["curve"]),
        data=data, refined=shaped(out["refined"]), blocks=n_points - 1, horizon=float(horizon),
        modulus=float(modulus), mu_left_ratio=float(mu_left_ratio), step=float(step),
        mu_right_at_bound=shaped(at_bound[:, 0] & (mu_fixed is None)),
        noise_at_bound=shaped(at_bound[:, 1]), settings=settings)


class _Setup:
    """The fixed settings of one :func:`fit_spring` call and the models they define."""

    def __init__(self, blocks, modulus, horizon, ratio, mu_fixed, mu_bounds, s_bounds, grid):
        self.blocks, self.modulus, self.horizon, self.ratio = blocks, modulus, horizon, ratio
        self.mu_fixed, self.mu_bounds, self.s_bounds, self.grid = (mu_fixed, mu_bounds, s_bounds,
                                                                   grid)
        self.free = [0, 1] if mu_fixed is None else [1]
        self.lo = np.array([mu_bounds[0], s_bounds[0]])[self.free]
        self.hi = np.array([mu_bounds[1], s_bounds[1]])[self.free]
        self.model = _Model(blocks, modulus, horizon, ratio, mu_fixed)
        self.full_model = _Model(blocks, modulus, horizon, ratio, None)


def _fit_rows(flat, force, setup: _Setup, max_iter: int) -> dict:
    """Mean-field fit of the finite rows of ``flat`` (K, L+1): starts, LM, ties, errors."""
    n_cells, n_points = flat.shape
    out = {"params": np.full((n_cells, 2), np.nan), "curve": np.full((n_cells, n_points), np.nan),
           "residual": np.full(n_cells, np.nan), "se": np.full((n_cells, 2), np.nan),
           "refined": np.zeros(n_cells, dtype=bool), "jac": None,
           "rows": np.flatnonzero(np.isfinite(flat).all(axis=1))}
    rows = out["rows"]
    if rows.size == 0:
        return out
    d, model, free = flat[rows], setup.model, setup.free
    s_lo = setup.s_bounds[0]
    grid = grid_shapes(setup.blocks, setup.modulus, setup.horizon, setup.ratio, setup.mu_fixed,
                       (setup.mu_bounds, setup.s_bounds), setup.grid)
    starts, owner = starting_points(d, force[rows], setup.full_model, setup.mu_fixed,
                                    setup.ratio, setup.mu_bounds, setup.s_bounds, grid)
    # all starts of all curves together; each curve keeps its best end point
    z_all, f_all, jac_all = levenberg_marquardt(model, d[owner], starts[:, free], setup.lo,
                                                setup.hi, max_iter, owner, cost_rtol=COST_RTOL,
                                                flat_rtol=FLAT_RTOL)
    cost_all = np.sum((f_all - d[owner]) ** 2, axis=1)
    order = np.lexsort((cost_all, owner))  # by curve, then by cost
    first = order[np.r_[True, owner[order][1:] != owner[order][:-1]]]
    z, f, jac = z_all[first], f_all[first], jac_all[first]
    p = model.full(z)
    # where the shape ignores s (log-sensitivity s |dn/ds| < 1e-5 RMS), report
    # the smallest equivalent s
    sens = np.sqrt(np.mean(jac[:, :, -1] ** 2, axis=1)) * np.maximum(p[:, 1] - s_lo, 0.0)
    flat_s = (p[:, 1] > s_lo) & (sens < 1e-5)
    if flat_s.any():
        p[flat_s, 1] = _smallest_equivalent_noise(setup.full_model, p[flat_s], f[flat_s], s_lo,
                                                  TIE_TOLERANCE)
        f[flat_s], jac[flat_s] = with_jacobian(model, p[flat_s][:, free], setup.lo, setup.hi)
    rss = np.sum((f - d) ** 2, axis=1)
    dof = np.full(len(d), (n_points - 2) - len(free))  # end points are fixed by normalisation
    out["params"][rows], out["curve"][rows] = p, f
    out["residual"][rows] = np.sqrt(rss / n_points)
    out["se"][np.ix_(rows, free)] = standard_errors(jac, rss, dof, setup.hi - setup.lo)
    out["jac"] = jac
    return out


def _refine_rows(flat, out: dict, setup: _Setup, threshold, step, seeds, iterations) -> None:
    """In ``out``, replace fits with residual > ``threshold`` by simulation-refined ones."""
    rows = out["rows"]
    poor = rows[out["residual"][rows] > threshold]
    if poor.size == 0:
        return
    sel = np.searchsorted(rows, poor)

    def simulate_shapes(p):
        return simulated_shapes(p, setup.blocks, setup.modulus, setup.horizon, setup.ratio,
                                step, seeds)

    new_p, new_f, new_r, changed = refine_by_simulation(
        flat[poor], out["params"][poor], out["jac"][sel], setup.free, setup.lo, setup.hi,
        simulate_shapes, iterations)
    out["params"][poor], out["curve"][poor], out["residual"][poor] = new_p, new_f, new_r
    out["refined"][poor] = changed


def _smallest_equivalent_noise(model_full, params, curves, s_lo, tol, points=8, rounds=6):
    """Lower s to the smallest value whose shape is within ``tol`` RMS of ``curves``.

    For rows of ``params`` (K, 2) where the shape no longer depends on s
    (fully relaxed chains, or mu-> = 0). Searches log s in [s / 1e4, s]:
    each round integrates ``points`` candidates per row in one batch and
    keeps the interval just below the smallest close one (resolution
    ln(1e4) / points^rounds, ~4e-5 relative in s).
    """
    k = len(params)

    def dist(mu, s):
        shapes = model_full(np.column_stack([mu, s]))
        return np.sqrt(np.mean((shapes - np.repeat(curves, len(s) // k, axis=0)) ** 2, axis=1))

    s_fit = params[:, 1].copy()
    at_lo = dist(params[:, 0], np.full(k, s_lo)) <= tol
    lo = np.log(np.maximum(np.maximum(s_lo, s_fit * 1e-4), 1e-300))
    hi = np.log(s_fit)
    frac = np.linspace(0.0, 1.0, points)
    for _ in range(rounds):
        grid = lo[:, None] + (hi - lo)[:, None] * frac[None, :]  # (K, points)
        close = (dist(np.repeat(params[:, 0], points), np.exp(grid).ravel()) <= tol)
        close = close.reshape(k, points)
        close[:, -1] = True  # the fitted s itself
        first = np.argmax(close, axis=1)
        hi = grid[np.arange(k), first]
        lo = grid[np.arange(k), np.maximum(first - 1, 0)]
    return np.where(at_lo, s_lo, np.exp(hi))
