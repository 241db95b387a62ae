"""This project's own claims about the chain, held to the standard it asks of the paper's.

Four statements of docs/fit.md and docs/prediction.md rest on choices that favour them; each is
recomputed here the other way, from the same committed sweeps and family files:

* **Information criteria** (:func:`cell_scale_aic`): the family's AIC takes one Gaussian scale
  per diagram; a scale per cell (the cells' misfits differ by orders of magnitude) gives
  ΔAIC = sum_c n_c log(chi2_c / chi2_c,paper) + 2 at the same kept values.
* **Within seed noise** (:func:`own_variance_fits`): the trajectory weights pool the seed
  variance over a diagram's cells and layers per frame
  (:func:`springblock.fit.weights.seed_weights`), which a few very noisy cells dominate;
  here each cell is weighted by its own seed variance (pooled over its layers per frame)
  and refitted.
* **Held-out prediction** (:func:`held_out_scrutiny`): beside the chain, the two fitted
  baselines, the two held-out variants of the family and the local mean, a second
  parameter-free baseline, interpolation along the knob alone
  (:func:`dnnphase.compare.comparator.baselines.row_interpolation`); a third split, ``edges``,
  that holds out the first and the last knob column (extrapolation: every model continues its column
  parameters, and the row baseline its row, along the line through the two nearest trained
  columns; the local mean copies the nearest column); and paired intervals over seeds for
  every difference of two RMSEs (:func:`paired_interval`).

Seed intervals resample the independent unit, a cell's seeds: each draw picks every usable
cell's finite seeds with replacement, independently per cell, and recomputes its seed mean;
every predictor is refitted to the draw's training cells (the fitted ones from their fit to
the committed data, one local least squares; a variant at the value its fold chose) and
scored against the draw's held-out means. The same draws serve every predictor, so the
difference of two RMSEs is paired; its interval is normal, from the draws' spread
(:func:`paired_interval`).

Entry point: :func:`scrutiny` (one sweep and its family files -> one Dataset, written by
``python scripts/scrutiny.py`` as ``figures/paper/scrutiny_<knob>.nc``).
"""

from __future__ import annotations

import numpy as np
import xarray as xr
from scipy.stats import norm

from dnnphase.compare.comparator.baselines import (
    extend_linear,
    fit_additive_map,
    fit_saturating_map,
    local_mean,
    row_interpolation,
)
from dnnphase.compare.comparator.prediction import (
    SPLITS,
    diagram_cells,
    fit_chain_map,
    rmse,
    split_folds,
)
from dnnphase.compare.comparator.surface import TABLE_POINTS, chain_curvature, coordinate_bounds
from dnnphase.defaults import MEASURE
from dnnphase.knobs import larger_is_noisier
from phasecore.checks import is_int, require
from phasecore.results import as_result, provenance
from springblock.fit.trajectory import fit_trajectory
from springblock.fit.variants import variant_of

__all__ = ["DRAWS", "PREDICTORS", "SCRUTINY_SPLITS", "cell_scale_aic", "edge_folds",
           "held_out_scrutiny", "own_variance", "own_variance_fits", "paired_interval",
           "scrutiny", "seed_means"]

#: Everything scored on held-out cells: three fitted maps, the family's two held-out
#: variants, and two baselines without parameters.
PREDICTORS = ("chain", "additive", "saturating", "decaying noise", "friction profile",
              "local", "row")
#: The variants among them (their value chosen per fold, read from family_held_out_<knob>.nc).
VARIANTS = ("decaying noise", "friction profile")
#: The prediction's two splits and the extrapolation split.
SCRUTINY_SPLITS = (*SPLITS, "edges")
#: Seed resamples per diagram.
DRAWS = 30


# --- trajectories ----------------------------------------------------------------------


def _oriented_epochs(network: xr.Dataset) -> xr.DataArray:
    knob = network.attrs["knob"]
    return network["load_curve_epochs"].transpose("alpha", knob, "seed", "epoch", "layer")


def cell_scale_aic(family: xr.Dataset, network: xr.Dataset) -> dict[str, np.ndarray]:
    """ΔAIC of each variant of a ``family_<knob>.nc`` against the paper's chain, with one
    Gaussian scale per diagram (the file's) and with one per cell, at the same kept values.

    With a scale per cell the likelihood of cell c is maximised at chi2_c / n_c, so
    -2 log L = sum_c n_c log(chi2_c / n_c) + const and every cell adds one parameter to every
    chain alike: ΔAIC = sum_c n_c log(chi2_c / chi2_c,paper) + 2 (the variant's number). n_c:
    the cell's fitted points (finite seed-mean points after epoch 0), chi2_c = chi2/dof times
    its degrees of freedom (the same for every chain, so it cancels). Returns ``diagram`` and
    ``cell`` (variant,), and ``points`` (alpha, knob).
    """
    family = as_result(family, "family", "dnnphase.compare.trajectory_family")
    network = as_result(network, "network", "dnnphase.sweep")
    curves = _oriented_epochs(network).mean("seed", skipna=True)
    points = np.isfinite(curves.where(curves["epoch"] > 0, np.nan)).sum(("epoch", "layer"))
    chi2 = family["chi2_per_dof"].transpose("variant", "alpha", network.attrs["knob"])
    chi2, points = xr.align(chi2, points, join="exact")
    c, n = chi2.values, points.values.astype(float)
    cells = np.isfinite(c).all(axis=0)
    shared = np.array([0.0] + [1.0] * (c.shape[0] - 1))
    cell = (n[cells] * np.log(c[:, cells] / c[0, cells])).sum(axis=1) + 2 * shared
    diagram = (family["aic"] - family["aic"].sel(variant="paper chain")).values
    return {"diagram": diagram, "cell": cell, "points": points.values}


def own_variance(network: xr.Dataset) -> tuple[np.ndarray, np.ndarray]:
    """Each cell's own seed variance against the pooled one of the trajectory weights.

    Returns ``weights`` (alpha, knob, epoch, layer): the inverse variance of each seed-mean
    point with the variance of its cell and frame (the seed spread pooled over the cell's
    layers, divided by the seeds), and ``ratio`` (alpha, knob): the cell's variance over the
    diagram's pooled one (:func:`springblock.fit.weights.seed_weights`), averaged over the
    frames after epoch 0.
    """
    network = as_result(network, "network", "dnnphase.sweep")
    per_seed = _oriented_epochs(network)
    seeds = per_seed.sizes["seed"]
    require(seeds >= 2, "network", "a sweep with at least 2 seeds", seeds)
    with np.errstate(invalid="ignore"):
        var = np.nanvar(per_seed.values, axis=2, ddof=1)  # (R, C, E, L+1)
    own = np.nanmean(var, axis=-1)  # (R, C, E)
    pooled = np.nanmean(var.reshape((-1,) + var.shape[-2:]), axis=(0, 2))  # (E,)
    later = per_seed["epoch"].values > 0
    ratio = np.nanmean((own / pooled)[..., later], axis=-1)
    weights = 1.0 / np.maximum(own / seeds, 1e-12)
    return np.broadcast_to(weights[..., None], var.shape).copy(), ratio


def own_variance_fits(network: xr.Dataset, family: xr.Dataset) -> dict[str, np.ndarray]:
    """Every chain of a ``family_<knob>.nc`` (at its kept value) refitted to every cell's
    trajectory with the cell's own seed variance as weights (:func:`own_variance`), as the
    family fits them otherwise (from rest, no profiling). Returns ``chi2_per_dof`` (variant,
    alpha, knob), ``explained`` (variant,): cells with chi2/dof <= 2, and ``ratio``."""
    network = as_result(network, "network", "dnnphase.sweep")
    family = as_result(family, "family", "dnnphase.compare.trajectory_family")
    weights, ratio = own_variance(network)
    per_seed = _oriented_epochs(network)
    mean = per_seed.mean("seed", skipna=True).values
    epochs = per_seed["epoch"].values.astype(np.float64)
    chi2, explained = [], []
    for name in family["variant"].values:
        value = float(family["best_value"].sel(variant=name))
        variant = None if name == "paper chain" else variant_of(str(name), value)
        fit = fit_trajectory(mean, epochs, weights=weights, profile_values=0, variant=variant)
        chi2.append(np.asarray(fit.chi2_per_dof))
        explained.append(int(np.sum(np.asarray(fit.acceptable))))
    return {"chi2_per_dof": np.array(chi2), "explained": np.array(explained), "ratio": ratio}


# --- held-out cells --------------------------------------------------------------------


def edge_folds(usable) -> list[tuple[np.ndarray, np.ndarray]]:
    """The (train, held_out) masks (R, C) of the extrapolation split: fold 0 holds out the
    last (noisiest) knob column, fold 1 the first; every other usable cell is trained on."""
    usable = np.asarray(usable, dtype=bool)
    require(usable.ndim == 2 and usable.shape[1] >= 3, "usable",
            "a (rows, columns) mask with at least 3 columns", usable.shape)
    j = np.indices(usable.shape)[1]
    held = [j == usable.shape[1] - 1, j == 0]
    return [(usable & ~h, usable & h) for h in held]


def _folds(usable, split: str):
    return edge_folds(usable) if split == "edges" else split_folds(usable, split)


def seed_means(network: xr.Dataset, measure: str = MEASURE) -> np.ndarray:
    """The per-seed scale-free curvature (alpha, knob, seed) on the axes of
    :func:`dnnphase.compare.comparator.prediction.diagram_cells` (alpha increasing, knob
    noisier)."""
    knob = network.attrs["knob"]
    sub = network.sel(measure=measure).sortby("alpha").sortby(
        knob, ascending=larger_is_noisier(network))
    return sub["curvature_scaled"].transpose("alpha", knob, "seed").values


def _resample(seeds: np.ndarray, usable: np.ndarray, rng) -> np.ndarray:
    """One draw: each usable cell's finite seeds picked with replacement, their mean."""
    out = np.full(usable.shape, np.nan)
    for i, j in zip(*np.nonzero(usable), strict=True):
        finite = seeds[i, j][np.isfinite(seeds[i, j])]
        out[i, j] = rng.choice(finite, finite.size).mean()
    return out


def _predict(name: str, curv, train, *, value=None, start=None, points: int = TABLE_POINTS):
    """One predictor's cells (R, C) from ``train``, and its fit (a start for the next draw).
    A fitted map's columns beyond its trained ones continue the line through the two nearest
    (:func:`extend_linear`; between trained columns the interpolation of every fit)."""
    columns = np.asarray(train, bool).any(axis=0)
    if name == "local":
        return local_mean(curv, train), None
    if name == "row":
        return row_interpolation(curv, train), None
    if name == "additive":
        fit = fit_additive_map(curv, train)
        return fit["row"][:, None] + extend_linear(fit["column"], columns)[None, :], fit
    if name == "saturating":
        fit = fit_saturating_map(curv, train, start=start)
        b = extend_linear(fit["column"], columns)
        return fit["centre"] + fit["scale"] * np.tanh(fit["row"][:, None] + b[None, :]), fit
    variant = None if name == "chain" else variant_of(name, value)
    fit = fit_chain_map(curv, train, points=points, variant=variant, start=start)
    v = np.clip(extend_linear(fit["v"], columns), 0.0, coordinate_bounds(points)[1])
    return chain_curvature(fit["u"][:, None], v[None, :], points, variant), fit


def held_out_scrutiny(network: xr.Dataset, family_held_out: xr.Dataset, *,
                      draws: int = DRAWS, seed: int = 0, measure: str = MEASURE,
                      points: int = TABLE_POINTS) -> xr.Dataset:
    """Every predictor of :data:`PREDICTORS` on the held-out cells of every split of
    :data:`SCRUTINY_SPLITS`, with ``draws`` seed resamples (module doc).

    ``family_held_out``: the sweep's ``family_held_out_<knob>.nc`` (the variants' values chosen
    per fold; the variants are not scored on ``edges``). Returns a Dataset: ``curvature``,
    ``curvature_se``, ``usable`` (alpha, knob); ``prediction`` (predictor, split, alpha, knob)
    and ``held_out`` (split, alpha, knob); ``rmse`` (predictor, split), ``floor`` (split, the
    RMS standard error of the held-out means), ``cells`` (split); ``boot_rmse`` (draw,
    predictor, split). Curvatures are scale-free.
    """
    network = as_result(network, "network", "dnnphase.sweep")
    family_held_out = as_result(family_held_out, "family_held_out",
                                "dnnphase.compare.held_out_family")
    require(is_int(draws) and draws >= 0, "draws", "an integer >= 0", draws)
    require(is_int(seed) and seed >= 0, "seed", "an integer >= 0", seed)
    require(family_held_out.attrs.get("knob") == network.attrs.get("knob"), "family_held_out",
            f"the family file of knob {network.attrs.get('knob')!r}",
            family_held_out.attrs.get("knob"))
    cells = diagram_cells(network, measure)
    knob = cells.attrs["knob"]
    curv, usable = cells["curvature"].values, cells["usable"].values
    seeds = seed_means(network, measure)
    shape = (len(PREDICTORS), len(SCRUTINY_SPLITS))
    pred = np.full(shape + curv.shape, np.nan)
    held_any = np.zeros((len(SCRUTINY_SPLITS), *curv.shape), dtype=bool)
    jobs = []  # (split index, train, held, predictor index, value, fit to start from)
    for s, split in enumerate(SCRUTINY_SPLITS):
        for f, (train, held) in enumerate(_folds(usable, split)):
            if not held.any():
                continue
            held_any[s] |= held
            for p, name in enumerate(PREDICTORS):
                value = None
                if name in VARIANTS:
                    if split == "edges":
                        continue
                    value = float(family_held_out["chosen"].sel(variant=name, split=split)
                                  .values[f])
                cells_p, fit = _predict(name, curv, train, value=value, points=points)
                pred[p, s][held] = cells_p[held]
                jobs.append((s, train, held, p, value, fit))
    scores = np.array([[rmse(pred[p, s], curv, held_any[s]) for s in range(shape[1])]
                       for p in range(shape[0])])
    boot = np.full((draws, *shape), np.nan)
    rng = np.random.default_rng(seed)
    for b in range(draws):
        drawn = _resample(seeds, usable, rng)
        out = np.full(shape + curv.shape, np.nan)
        for s, train, held, p, value, fit in jobs:
            out[p, s][held] = _predict(PREDICTORS[p], drawn, train, value=value, start=fit,
                                       points=points)[0][held]
        boot[b] = [[rmse(out[p, s], drawn, held_any[s]) for s in range(shape[1])]
                   for p in range(shape[0])]
    out = xr.Dataset(
        {"curvature": cells["curvature"], "curvature_se": cells["curvature_se"],
         "usable": cells["usable"],
         "prediction": (("predictor", "split", "alpha", knob), pred),
         "held_out": (("split", "alpha", knob), held_any),
         "rmse": (("predictor", "split"), scores),
         "floor": ("split", [rmse(cells["curvature_se"].values, 0.0, h) for h in held_any]),
         "cells": ("split", held_any.sum(axis=(1, 2))),
         "boot_rmse": (("draw", "predictor", "split"), boot)},
        coords={"predictor": list(PREDICTORS), "split": list(SCRUTINY_SPLITS),
                "draw": np.arange(draws)})
    out.attrs.update(knob=knob, measure=measure, draws=int(draws), seed=int(seed))
    return out


def paired_interval(ds: xr.Dataset, first: str, second: str, split: str,
                    level: float = 0.95) -> tuple[float, float, float]:
    """RMSE of ``first`` minus RMSE of ``second`` on ``split`` (negative: ``first`` is
    better), with its ``level`` interval over the seed draws of ``ds`` (a :func:`scrutiny`
    Dataset; NaN with fewer than 2 draws): the observed difference plus or minus the normal
    quantile times the standard deviation of the draws' differences. (A few dozen draws
    measure a spread, not the tails a percentile interval needs; and a draw's held-out means
    carry the resampling's noise on top of the seeds', which raises every RMSE of the draw,
    so the draws' own percentiles sit off the observed difference.)"""
    for name, value in (("first", first), ("second", second)):
        require(value in ds["predictor"].values, name,
                f"one of {', '.join(map(str, ds['predictor'].values))}", value)
    require(split in ds["split"].values, "split",
            f"one of {', '.join(map(str, ds['split'].values))}", split)
    require(0 < level < 1, "level", "a number in (0, 1)", level)
    diff = float(ds["rmse"].sel(predictor=first, split=split)
                 - ds["rmse"].sel(predictor=second, split=split))
    boot = (ds["boot_rmse"].sel(predictor=first, split=split)
            - ds["boot_rmse"].sel(predictor=second, split=split)).values
    boot = boot[np.isfinite(boot)]
    if boot.size < 2:
        return diff, float("nan"), float("nan")
    half = float(norm.ppf((1 + level) / 2) * np.std(boot, ddof=1))
    return diff, diff - half, diff + half


# --- the whole diagram -----------------------------------------------------------------


def scrutiny(network, family, family_held_out, *, draws: int = DRAWS, seed: int = 0,
             measure: str = MEASURE) -> xr.Dataset:
    """One diagram's scrutiny: :func:`held_out_scrutiny` and, over dim ``variant`` (the
    chains of ``family``), ``delta_aic_diagram_scale`` and ``delta_aic_cell_scale``
    (:func:`cell_scale_aic`), ``best_value``, ``explained_pooled`` (the family's) and
    ``explained_own`` (:func:`own_variance_fits`), ``chi2_median_pooled`` /
    ``chi2_median_own``, ``chi2_per_dof_own`` (variant, alpha, knob); ``own_to_pooled``
    (alpha, knob): each cell's seed variance over the pooled one.

    ``network``: a sweep (``dnn_<knob>.nc``); ``family`` / ``family_held_out``: its
    ``family_<knob>.nc`` and ``family_held_out_<knob>.nc`` (Datasets or paths).
    """
    network = as_result(network, "network", "dnnphase.sweep")
    family = as_result(family, "family", "dnnphase.compare.trajectory_family")
    require(family.attrs.get("knob") == network.attrs.get("knob"), "family",
            f"the family file of knob {network.attrs.get('knob')!r}", family.attrs.get("knob"))
    held = held_out_scrutiny(network, family_held_out, draws=draws, seed=seed, measure=measure)
    knob = network.attrs["knob"]
    aic = cell_scale_aic(family, network)
    own = own_variance_fits(network, family)
    axes = {"alpha": network["alpha"].values, knob: network[knob].values}
    with np.errstate(invalid="ignore"):
        median_own = np.nanmedian(own["chi2_per_dof"].reshape(len(own["explained"]), -1), axis=1)
    trajectories = xr.Dataset(
        {"best_value": ("variant", family["best_value"].values),
         "delta_aic_diagram_scale": ("variant", aic["diagram"]),
         "delta_aic_cell_scale": ("variant", aic["cell"]),
         "explained_pooled": ("variant", family["explained"].values),
         "explained_own": ("variant", own["explained"]),
         "chi2_median_pooled": ("variant", family["chi2_median"].values),
         "chi2_median_own": ("variant", median_own),
         "trajectory_cells": ("variant", family["cells"].values),
         "chi2_per_dof_own": (("variant", "alpha", knob), own["chi2_per_dof"]),
         "own_to_pooled": (("alpha", knob), own["ratio"])},
        coords={"variant": family["variant"].values} | axes)
    # the trajectory axes are the sweep's order, the held-out ones oriented: keep both apart
    trajectories = trajectories.rename({"alpha": "trajectory_alpha", knob: f"trajectory_{knob}"})
    out = xr.merge([held, trajectories], combine_attrs="override")
    out.attrs.update(provenance("dnnphase.compare.scrutiny",
                                {"measure": measure, "draws": int(draws), "seed": int(seed),
                                 "points": TABLE_POINTS}))
    out.attrs.update(knob=knob, measure=measure, draws=int(draws), seed=int(seed))
    return out
