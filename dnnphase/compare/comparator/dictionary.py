"""The paper's dictionary in numbers: fitted noise vs the knob, fitted friction vs alpha.

For a fit over a network grid (alpha rows x knob columns), Spearman rho of
the fitted noise s along each alpha row against the knob oriented noisier
(dictionary: rho > 0), and of the fitted friction along each knob column
against alpha (dictionary: rho < 0, friction falls as the activation becomes
linear), each with a bootstrap interval drawn from the cells' fit intervals.
"""

from __future__ import annotations

import numpy as np
import xarray as xr
from scipy.stats import rankdata

from dnnphase.defaults import MEASURE
from phasecore.checks import is_int, require
from phasecore.results import provenance

__all__ = ["dictionary_table", "effective_force_table"]


def _spearman(values: np.ndarray, axis_values: np.ndarray) -> np.ndarray:
    """Spearman rho of ``values`` (..., n) against ``axis_values`` (n,), NaN-free rows only."""
    rv = rankdata(values, axis=-1)
    ra = rankdata(axis_values)
    rv = rv - rv.mean(axis=-1, keepdims=True)
    ra = ra - ra.mean()
    with np.errstate(invalid="ignore", divide="ignore"):
        rho = (rv @ ra) / np.sqrt((rv * rv).sum(axis=-1) * (ra @ ra))
    return np.where(np.isfinite(values).all(axis=-1), rho, np.nan)


def _draws(fit: xr.Dataset, name: str, n_boot: int, rng) -> np.ndarray:
    """Bootstrap draws (B, rows, cols) of a fitted parameter from its cell intervals.

    log p ~ N(log p_hat, se) with se from ``<name>_log_se``, clipped to the
    fit's bounds; where the interval is unbounded, uniform in log over the
    interval reported (the bound included): the data do not prefer a value.
    """
    est = np.log(fit[name].values)
    low, high = np.log(fit[f"{name}_low"].values), np.log(fit[f"{name}_high"].values)
    se = fit[f"{name}_log_se"].values
    free = fit[f"{name}_unbounded"].values.astype(bool) | ~np.isfinite(se)
    normal = est + np.where(free, 0.0, se) * rng.standard_normal((n_boot,) + est.shape)
    uniform = low + (high - low) * rng.random((n_boot,) + est.shape)
    return np.exp(np.where(free, uniform, np.clip(normal, low, high)))


def dictionary_table(fit: xr.Dataset, knob: str, *, larger_is_noisier: bool = True,
                     row_dim: str = "alpha", noise: str = "noise", friction: str = "mu_right",
                     n_boot: int = 2000, level: float = 0.95, seed: int = 0) -> xr.Dataset:
    """Spearman table of the dictionary for one knob -> Dataset.

    ``fit``: a :meth:`TrajectoryFit.to_dataset` result with dims (``row_dim``,
    ``knob``) and, for ``noise`` and ``friction``, the variables
    ``<p>, <p>_low, <p>_high, <p>_log_se, <p>_unbounded``.

    Variables: ``rho_noise_along_knob`` (row_dim) with ``_low``/``_high``;
    ``rho_friction_along_alpha`` (knob) with ``_low``/``_high``. Attributes:
    the share of rows where the noise rises strictly (rho = 1) and of columns
    where the friction falls strictly (rho = -1), the same shares of rows and
    columns whose interval excludes 0 on the dictionary's side, and the means.

    Parameters
    ----------
    fit : xarray.Dataset
        A :meth:`TrajectoryFit.to_dataset` result over (``row_dim``, ``knob``).
    knob : str
        The knob's dimension (e.g. "dropout").
    larger_is_noisier : bool, default True
        Whether a larger knob value is more noise (False for batch size).
    row_dim : str, default "alpha"
        The nonlinearity's dimension.
    noise, friction : str, default "noise", "mu_right"
        The fitted chain parameters read as the noise and the friction.
    n_boot : int, default 2000
        Bootstrap resamples of each rho's interval.
    level : float, default 0.95
        The intervals' coverage.
    seed : int, default 0
        The bootstrap's random seed.

    Returns
    -------
    xarray.Dataset
        The rho variables with their ``_low`` / ``_high``; the shares in its attributes.
    """
    for name in (noise, friction):
        for suffix in ("", "_low", "_high", "_log_se", "_unbounded"):
            require(f"{name}{suffix}" in fit, "fit", f"a Dataset with {name}{suffix}",
                    sorted(fit.data_vars))
    require(set(fit[noise].dims) == {row_dim, knob}, "knob",
            f"the other dimension of the fit beside {row_dim!r}", knob)
    require(is_int(n_boot) and n_boot >= 10, "n_boot", "an integer >= 10", n_boot)
    fit = fit.transpose(row_dim, knob, ...).sortby(row_dim).sortby(knob)
    knob_noisier = fit[knob].values if larger_is_noisier else -fit[knob].values
    alpha = fit[row_dim].values
    rng = np.random.default_rng(seed)
    s_draw = _draws(fit, noise, n_boot, rng)  # (B, rows, cols)
    f_draw = _draws(fit, friction, n_boot, rng)
    q = [(1 - level) / 2, (1 + level) / 2]

    rho_rows = _spearman(fit[noise].values, knob_noisier)  # (rows,)
    rho_cols = _spearman(fit[friction].values.T, alpha)  # (cols,)
    boot_rows = _spearman(s_draw, knob_noisier)  # (B, rows)
    boot_cols = _spearman(np.swapaxes(f_draw, 1, 2), alpha)  # (B, cols)
    rows_lo, rows_hi = np.nanquantile(boot_rows, q, axis=0)
    cols_lo, cols_hi = np.nanquantile(boot_cols, q, axis=0)
    out = xr.Dataset(
        {
            "rho_noise_along_knob": (row_dim, rho_rows, {
                "long_name": f"Spearman rho of fitted {noise} vs {knob} (oriented noisier)"}),
            "rho_noise_along_knob_low": (row_dim, rows_lo),
            "rho_noise_along_knob_high": (row_dim, rows_hi),
            "rho_friction_along_alpha": (knob, rho_cols, {
                "long_name": f"Spearman rho of fitted {friction} vs {row_dim}"}),
            "rho_friction_along_alpha_low": (knob, cols_lo),
            "rho_friction_along_alpha_high": (knob, cols_hi),
        },
        coords={row_dim: alpha, knob: fit[knob].values},
    )
    config = {"knob": knob, "larger_is_noisier": bool(larger_is_noisier), "noise": noise,
              "friction": friction, "n_boot": int(n_boot), "level": level, "seed": seed}
    out.attrs.update(provenance("springblock.fit.dictionary_table", config))
    out.attrs.update({
        "knob": knob, "level": level,
        "share_rows_noise_rising": float(np.mean(rho_rows >= 1 - 1e-12)),
        "share_cols_friction_falling": float(np.mean(rho_cols <= -1 + 1e-12)),
        "share_rows_noise_rising_significant": float(np.mean(rows_lo > 0)),
        "share_cols_friction_falling_significant": float(np.mean(cols_hi < 0)),
        "mean_rho_noise_along_knob": float(np.nanmean(rho_rows)),
        "mean_rho_friction_along_alpha": float(np.nanmean(rho_cols)),
    })
    return out


def effective_force_table(network: xr.Dataset, knob: str, *, larger_is_noisier: bool = True,
                          measure: str = MEASURE, row_dim: str = "alpha",
                          n_boot: int = 2000, level: float = 0.95, seed: int = 0) -> xr.Dataset:
    """The dictionary read off the effective force F_eff, with a bootstrap over seeds.

    F_eff (:func:`~springblock.fit.shapes.effective_force`) is identified by
    every load curve. The theory predicts it falls with noise (rho < 0 along
    each ``row_dim`` row against the knob oriented noisier) and falls as the
    activation becomes linear (rho < 0 along each knob column against
    alpha). Each bootstrap draw resamples the seeds of every cell with
    replacement and recomputes F_eff of the seed-mean curve.

    ``network``: a sweep Dataset with ``load_curve (row_dim, knob, seed[, measure], layer)``.
    Returns the same layout as :func:`dictionary_table` (``rho_effective_force_along_knob``,
    ``rho_effective_force_along_alpha`` with ``_low``/``_high``, shares as attributes).

    Parameters
    ----------
    network : xarray.Dataset
        A sweep with ``load_curve`` (``row_dim``, ``knob``, seed[, measure], layer).
    knob : str
        The knob's dimension (e.g. "dropout").
    larger_is_noisier : bool, default True
        Whether a larger knob value is more noise (False for batch size).
    measure : str, default "trace_ratio"
        The measure whose load curves are read (:data:`dnnphase.metrics.MEASURE_NAMES`).
    row_dim : str, default "alpha"
        The nonlinearity's dimension.
    n_boot : int, default 2000
        Bootstrap resamples of the seeds.
    level : float, default 0.95
        The intervals' coverage.
    seed : int, default 0
        The bootstrap's random seed.

    Returns
    -------
    xarray.Dataset
        The rho variables with their ``_low`` / ``_high``; the shares in its attributes.
    """
    from springblock.fit.shapes import effective_force

    require(is_int(n_boot) and n_boot >= 10, "n_boot", "an integer >= 10", n_boot)
    curves = network["load_curve"]
    if "measure" in curves.dims:
        curves = curves.sel(measure=measure)
    require(set(curves.dims) == {row_dim, knob, "seed", "layer"}, "knob",
            f"the other grid dimension of the sweep beside {row_dim!r}", knob)
    curves = curves.sortby(row_dim).sortby(knob).transpose(row_dim, knob, "seed", "layer")
    d = curves.values  # (rows, cols, S, L+1)
    knob_noisier = curves[knob].values if larger_is_noisier else -curves[knob].values
    alpha = curves[row_dim].values
    rng = np.random.default_rng(seed)
    n_seeds = d.shape[2]
    force = effective_force(np.nanmean(d, axis=2)).force  # (rows, cols)
    pick = rng.integers(0, n_seeds, size=(n_boot,) + d.shape[:3])  # (B, rows, cols, S)
    resampled = np.take_along_axis(d[None], pick[..., None], axis=3)
    boot = effective_force(np.nanmean(resampled, axis=3)).force  # (B, rows, cols)
    q = [(1 - level) / 2, (1 + level) / 2]
    rho_rows = _spearman(force, knob_noisier)
    rho_cols = _spearman(force.T, alpha)
    rows_lo, rows_hi = np.nanquantile(_spearman(boot, knob_noisier), q, axis=0)
    cols_lo, cols_hi = np.nanquantile(_spearman(np.swapaxes(boot, 1, 2), alpha), q, axis=0)
    out = xr.Dataset(
        {
            "effective_force": ((row_dim, knob), force, {"units": "k y"}),
            "rho_effective_force_along_knob": (row_dim, rho_rows, {
                "long_name": f"Spearman rho of F_eff vs {knob} (oriented noisier)"}),
            "rho_effective_force_along_knob_low": (row_dim, rows_lo),
            "rho_effective_force_along_knob_high": (row_dim, rows_hi),
            "rho_effective_force_along_alpha": (knob, rho_cols, {
                "long_name": f"Spearman rho of F_eff vs {row_dim}"}),
            "rho_effective_force_along_alpha_low": (knob, cols_lo),
            "rho_effective_force_along_alpha_high": (knob, cols_hi),
        },
        coords={row_dim: alpha, knob: curves[knob].values},
    )
    config = {"knob": knob, "larger_is_noisier": bool(larger_is_noisier), "measure": measure,
              "n_boot": int(n_boot), "level": level, "seed": seed, "seeds": int(n_seeds)}
    out.attrs.update(provenance("springblock.fit.effective_force_table", config))
    out.attrs.update({
        "knob": knob, "level": level,
        "share_rows_falling_with_noise": float(np.mean(rho_rows <= -1 + 1e-12)),
        "share_cols_falling_with_alpha": float(np.mean(rho_cols <= -1 + 1e-12)),
        "share_rows_falling_with_noise_significant": float(np.mean(rows_hi < 0)),
        "share_cols_falling_with_alpha_significant": float(np.mean(cols_hi < 0)),
    })
    return out
