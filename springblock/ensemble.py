"""Run chain ensembles: :func:`run_ensemble` (arrays) and :func:`simulate` (Dataset).

Data flows config -> parameter table -> kernel -> labelled Dataset. The
kernels in :mod:`springblock.dynamics` do the physics; this module validates,
seeds, applies the stopping rule and labels the result.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import xarray as xr

from springblock import dynamics, theory
from springblock.config import ChainConfig
from springblock.rng import seed_states
from springblock.shared import loadcurve
from springblock.shared.checks import ConfigError
from springblock.shared.results import provenance

FINITE_HORIZON_NOTE = (
    "Gaussian-noise load curves are finite-horizon objects: with unbounded noise "
    "every chain creeps towards the noise-independent state F* = (mu_right - mu_left)/2 "
    "on a time scale that grows like 1/Phi(-a/s). Read every curve together with its "
    "horizon T = steps_run * step."
)


@dataclass
class EnsembleResult:
    """Raw output of :func:`run_ensemble` for M chains of L blocks.

    positions : (M, L) final x_1..x_L
    steps_run : (M,) steps actually taken (fewer than requested if stopped)
    trajectory : (M, R + 1, L) positions at steps 0, r, 2r, ... (r =
        record_every; NaN after a chain stopped), or None
    """

    positions: np.ndarray
    steps_run: np.ndarray
    trajectory: np.ndarray | None


def _seed_list(seeds) -> np.ndarray:
    if isinstance(seeds, (int, np.integer)) and not isinstance(seeds, bool):
        if seeds < 1:
            raise ConfigError(f"seeds must be a count >= 1 or a list of integers (got {seeds})")
        return np.arange(int(seeds), dtype=np.int64)
    arr = np.asarray(seeds)
    valid = arr.ndim == 1 and arr.size > 0 and np.issubdtype(arr.dtype, np.integer)
    if not valid or (arr < 0).any():
        raise ConfigError(f"seeds must be a count >= 1 or a list of integers >= 0 (got {seeds!r})")
    return arr.astype(np.int64)


def run_ensemble(
    configs: Sequence[ChainConfig],
    seeds: np.ndarray,
    groups: np.ndarray | None = None,
) -> EnsembleResult:
    """Advance one chain per (config, seed) pair with a single kernel per window.

    ``configs`` and ``seeds`` have length M; chains may differ in every
    parameter of :data:`springblock.config.CHAIN_PARAMS` but share ``blocks``,
    ``dynamics``, ``noise_sharing``, ``steps``, ``record_every``, the stopping
    rule and ``rng``. ``groups`` (M,) labels the chains whose seed-mean load
    curve the stopping rule watches (default: all chains one group). A chain's
    result depends only on its own config and seed.
    """
    base = configs[0]
    shared = ("blocks", "dynamics", "noise_sharing", "steps", "record_every", "stop_tol",
              "stop_window", "rng")
    for cfg in configs:
        for name in shared:
            if getattr(cfg, name) != getattr(base, name):
                raise ConfigError(f"{name} must be the same for every chain of an ensemble")
    n_chains, n_blocks = len(configs), base.blocks
    seeds = np.asarray(seeds, dtype=np.int64)
    groups = np.zeros(n_chains, dtype=np.int64) if groups is None else np.asarray(groups)
    params = np.stack([cfg.param_row() for cfg in configs])  # (M, N_PARAMS)
    x = np.zeros((n_chains, n_blocks))
    v = np.zeros((n_chains, n_blocks))
    sync = base.noise_sharing == "synchronous"
    every = base.record_every
    n_records = base.steps // every + 1 if every else 0
    traj = np.full((n_chains, max(n_records, 1) if every else 0, n_blocks), np.nan)
    if every:
        traj[:, 0] = 0.0

    if base.rng == "legacy":
        dynamics.overdamped_legacy(x, seeds, params, base.steps, sync, every, traj)
        return EnsembleResult(x, np.full(n_chains, base.steps), traj if every else None)

    states = seed_states(seeds)
    steps_run = np.zeros(n_chains, dtype=np.int64)
    active = np.arange(n_chains)
    window = base.stop_window if base.stop_tol is not None else base.steps
    done = 0
    while done < base.steps and active.size:
        n = min(window, base.steps - done)
        xa, va, sa, ta = x[active], v[active], states[active], traj[active]
        if base.dynamics == "overdamped":
            dynamics.overdamped(xa, sa, params[active], n, done, sync, every, ta)
        elif base.dynamics == "second_order":
            dynamics.second_order(xa, va, sa, params[active], n, done, sync, every, ta)
        else:
            dynamics.langevin(xa, va, sa, params[active], n, done, sync, every, ta)
        before = x[active]
        x[active], v[active], states[active], traj[active] = xa, va, sa, ta
        done += n
        steps_run[active] = done
        if base.stop_tol is not None and done < base.steps:
            active = active[~_converged(before, xa, groups[active], params[active], base.stop_tol)]
    return EnsembleResult(x, steps_run, traj if every else None)


def _converged(before, after, groups, params, tol) -> np.ndarray:
    """Per chain: has its group's seed-mean load curve stopped moving? (M,) bool."""
    out = np.zeros(len(groups), dtype=bool)
    for g in np.unique(groups):
        members = groups == g
        change = np.abs(after[members].mean(0) - before[members].mean(0)).max()
        scale = abs(params[members][0, dynamics.P_TARGET]) or 1.0
        out[members] = change < tol * scale
    return out


def simulate(config: ChainConfig | None = None, *, seeds=1, theory_prediction: bool = True,
             **params) -> xr.Dataset:
    """Simulate an ensemble of identical chains, one per seed.

    ``config`` is a :class:`ChainConfig`, or pass its fields as keywords
    (``simulate(blocks=7, mu_right=0.1, mu_left=0.2, noise=0.1, seeds=64)``).
    ``seeds``: a count n (seeds 0..n-1) or a list of integers.

    Returns an ``xarray.Dataset`` with

    * ``load_curve (seed, layer)``: d_l = y - x_l, layer 0 (the wall) .. L;
    * ``curvature``, ``curvature_scaled (seed)`` (:mod:`springblock.shared.loadcurve`);
    * ``steps_run``, ``horizon (seed)`` (T = steps_run * step);
    * ``trajectory (seed, time, layer)`` if ``record_every`` > 0;
    * ``theory_load_curve (layer)``: the mean-drift prediction at the horizon
      (overdamped dynamics), and ``stationary_load_curve (layer)``: the
      infinite-time state of Eq. 8;
    * attrs: configuration, package versions, horizon, the finite-horizon note.
    """
    if config is None:
        config = ChainConfig(**params)
    elif params:
        config = config.replace(**params)
    seed_values = _seed_list(seeds)
    result = run_ensemble([config] * len(seed_values), seed_values)
    return _label(config, seed_values, result, theory_prediction)


def _label(cfg: ChainConfig, seeds, result: EnsembleResult, with_theory: bool) -> xr.Dataset:
    n = cfg.blocks
    layer = np.arange(n + 1)
    curves = theory.load_curve(result.positions, cfg.target)  # (M, L+1)
    ds = xr.Dataset(
        {
            "load_curve": (("seed", "layer"), curves,
                           {"long_name": "load curve d = y - x", "units": "length"}),
            "curvature": (("seed",), loadcurve.curvature(curves),
                          {"long_name": "curvature (paper: first minus last gain)",
                           "units": "length"}),
            "curvature_scaled": (("seed",), loadcurve.curvature_scaled(curves),
                                 {"long_name": "scale-free curvature", "units": "1"}),
            "steps_run": (("seed",), result.steps_run, {"units": "steps"}),
            "horizon": (("seed",), result.steps_run * cfg.step,
                        {"long_name": "horizon T", "units": "time"}),
        },
        coords={"seed": seeds, "layer": ("layer", layer, {"long_name": "layer (0 = wall)"})},
    )
    if result.trajectory is not None:
        times = np.arange(result.trajectory.shape[1]) * cfg.record_every * cfg.step
        ds["trajectory"] = (("seed", "time", "layer"),
                            theory.load_curve(result.trajectory, cfg.target),
                            {"long_name": "load curve over time", "units": "length"})
        ds = ds.assign_coords(time=("time", times, {"units": "time"}))
    ds["stationary_load_curve"] = ("layer", theory.load_curve(theory.stationary_state(
        n, cfg.mu_right, cfg.mu_left_value, cfg.noise, cfg.effective_truncation,
        cfg.modulus, cfg.target) if cfg.noise > 0 else theory.noiseless_state(
        n, cfg.mu_right, cfg.modulus, cfg.target), cfg.target),
        {"long_name": "infinite-time load curve (Eq. 7 / Eq. 8)", "units": "length"})
    if with_theory and cfg.dynamics == "overdamped":
        ds["theory_load_curve"] = ("layer", theory.load_curve(predict(cfg), cfg.target),
                                   {"long_name": "mean-drift prediction at the horizon",
                                    "units": "length"})
    ds.attrs.update(provenance("springblock.simulate", cfg.to_dict()))
    ds.attrs["horizon"] = cfg.horizon
    ds.attrs["note"] = FINITE_HORIZON_NOTE
    return ds


def predict(cfg: ChainConfig, horizon: float | None = None) -> np.ndarray:
    """Mean-drift positions (L,) for an overdamped config at ``horizon`` (default T)."""
    return theory.predict_positions(
        cfg.blocks, cfg.mu_right, cfg.mu_left_value, cfg.noise,
        cfg.horizon if horizon is None else horizon,
        truncation=cfg.effective_truncation, noise_decay=cfg.noise_decay,
        modulus=cfg.modulus, target=cfg.target,
    )


__all__ = ["EnsembleResult", "run_ensemble", "simulate", "predict", "FINITE_HORIZON_NOTE"]
