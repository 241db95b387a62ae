"""The family of chains (:mod:`springblock.fit.variants`) held against a network diagram.

Each variant adds one number shared by every cell of a diagram to the paper's chain; it is
fitted by trying the values of :data:`springblock.fit.variants.FAMILY` (fixed in advance, the
neutral one among them) and keeping the one with the lowest cost on the cells fitted — costs
within TIE_RTOL of the lowest tie, and a tie goes to the value nearest the paper's chain, so
the choice does not move with the last bits of the arithmetic (:func:`best_value`). Two tests,
on the same footing as the paper's chain:

* :func:`trajectory_family` — every cell's training trajectory (:func:`fit_sweep_trajectory`,
  each cell its own mu->, mu<-, s and time scale): cells explained within seed noise, chi2/dof,
  and an information criterion over the whole diagram;
* :func:`held_out_family` — the held-out cells of
  :mod:`dnnphase.compare.comparator.prediction` (the chain map with one friction per alpha row
  and one noise per knob column, the variant's number chosen on the training cells of each
  fold), against the local mean of the nearest cells.
  A time map leaves a final load curve as it is (only the earlier frames move), so it has no
  held-out row.
"""

from __future__ import annotations

import numpy as np
import xarray as xr

from dnnphase.compare.comparator.baselines import local_mean
from dnnphase.compare.comparator.fitting import fit_sweep_trajectory
from dnnphase.compare.comparator.prediction import (
    SPLITS,
    STARTS,
    diagram_cells,
    fit_chain_map,
    rmse,
    split_folds,
)
from dnnphase.compare.comparator.surface import TABLE_POINTS
from dnnphase.defaults import MEASURE
from phasecore.checks import is_int, require
from phasecore.results import as_result, provenance
from springblock.fit.variants import FAMILY, ChainVariant, variant_of

__all__ = ["HELD_OUT_VARIANTS", "best_value", "held_out_family", "trajectory_family"]

#: The variants that change a final load curve (a time map does not).
HELD_OUT_VARIANTS = ("decaying noise", "friction profile")
#: Costs within this fraction of the lowest are a tie (the fits converge to 1e-8 of their cost
#: or better, and another CPU moves a candidate's total by up to ~4e-3 where a cell lands on
#: another local optimum: see docs/fit.md, "Another CPU").
TIE_RTOL = 1e-9


def _neutral(name: str) -> float:
    field = FAMILY[name][0]
    return float(getattr(ChainVariant(), field))


def best_value(name: str, costs) -> float:
    """The candidate of variant ``name`` (FAMILY's values, in order) with the lowest of
    ``costs``: of those within TIE_RTOL (relative) of the lowest, the one nearest the paper's
    chain, then the smaller. A NaN or infinite cost (a failed fit) is never chosen."""
    require(isinstance(name, str) and name in FAMILY, "variant",
            f"one of {', '.join(map(repr, FAMILY))}", name)
    values = np.asarray(FAMILY[name][1], dtype=float)
    costs = np.asarray(costs, dtype=float)
    require(costs.shape == values.shape, "costs", f"{values.size} numbers, one per value",
            costs.shape)
    finite = np.isfinite(costs)
    require(finite.any(), "costs", "at least one finite cost", costs)
    lowest = costs[finite].min()
    near = finite & (costs <= lowest + TIE_RTOL * abs(lowest))
    order = np.lexsort((values, np.abs(values - _neutral(name)), ~near))
    return float(values[order[0]])


def _check_names(names, allowed) -> tuple[str, ...]:
    """Distinct variant names among ``allowed``, at least one -> tuple."""
    ok = (isinstance(names, (tuple, list)) and len(names) >= 1
          and all(isinstance(n, str) and n in allowed for n in names)
          and len(set(names)) == len(names))
    require(ok, "names", f"a list of distinct names among {', '.join(map(repr, allowed))}",
            names)
    return tuple(names)


def _chi2_and_dof(fit: xr.Dataset) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per cell: the weighted misfit chi2, its degrees of freedom (points - 4 chain
    parameters - one offset per frame - the scale) and the points, from a trajectory fit
    Dataset."""
    points = np.isfinite(fit["data_curve"]).sum(("epoch", "layer")).values
    dof = points - 4 - fit.sizes["epoch"] - 1
    return fit["chi2_per_dof"].values * dof, dof, points


def _summary(fit: xr.Dataset, shared: int) -> dict[str, float]:
    """A diagram's row: explained cells, chi2/dof quartiles, parameters, AIC and BIC.

    The information criteria take the Gaussian likelihood with its scale fitted (the chain
    misses by far more than the seed noise, so a known scale would count every misfit as
    evidence): n log(chi2 / n) + 2 k (AIC), + k log n (BIC), with n the weighted points and k
    every fitted number — per cell 4 chain parameters, one offset per frame and the scale,
    plus the variant's ``shared`` ones and the likelihood's scale.
    """
    chi2, dof, points = _chi2_and_dof(fit)
    ok = np.isfinite(chi2)
    n, total = float(points[ok].sum()), float(chi2[ok].sum())
    k = float((points[ok] - dof[ok]).sum()) + shared + 1
    q = np.percentile(fit["chi2_per_dof"].values[ok], [25, 50, 75])
    return {"cells": int(ok.sum()), "explained": int(fit["acceptable"].values.sum()),
            "chi2": total, "points": n, "parameters": k, "chi2_q1": q[0],
            "chi2_median": q[1], "chi2_q3": q[2],
            "aic": n * np.log(total / n) + 2 * k, "bic": n * np.log(total / n) + k * np.log(n)}


def trajectory_family(network, *, names=tuple(FAMILY), start: str = "rest") -> xr.Dataset:
    """Every variant of ``names`` fitted to every cell's training trajectory of a sweep.

    For each variant, each of its FAMILY values: :func:`fit_sweep_trajectory` with that chain
    (no profiling: only the misfit is compared); the value with the lowest total chi2 is kept
    (:func:`best_value`). Returns a Dataset with dims ``variant`` ("paper chain" first, then
    ``names``) and ``candidate``: ``value``, ``total_chi2`` and ``candidate_explained``
    (cells with chi2/dof <= 2; -1 past a variant's values) (variant, candidate), per
    variant the ``best_value`` and the row of :func:`_summary` (``explained``, ``chi2_median``,
    ``aic``, ``bic``, ...), and ``chi2_per_dof`` (variant, alpha, knob) at the best value.
    """
    network = as_result(network, "network", "dnnphase.sweep")
    names = _check_names(names, tuple(FAMILY))
    require("seed" in network.dims and network.sizes["seed"] >= 2, "network",
            "a sweep with at least 2 seeds (chi2 is weighted by the seed spread: 'within seed "
            "noise' needs one)", dict(network.sizes).get("seed", 0))
    size = max(len(FAMILY[n][1]) for n in names)
    rows, values, totals, explained, per_cell = [], [], [], [], []
    paper = fit_sweep_trajectory(network, start=start, profile_values=0)
    cells = np.isfinite(paper["chi2_per_dof"].values)  # a total over the same cells for all
    for name in (None, *names):
        if name is None:
            fits, candidates = [paper], [np.nan]
        else:
            candidates = list(FAMILY[name][1])
            fits = [paper if variant_of(name, v).neutral else
                    fit_sweep_trajectory(network, start=start, profile_values=0,
                                         variant=variant_of(name, v)) for v in candidates]
        chi2 = [float(np.sum(_chi2_and_dof(f)[0][cells])) for f in fits]  # NaN: never kept
        best = 0 if name is None else candidates.index(best_value(name, chi2))
        rows.append(_summary(fits[best], 0 if name is None else 1)
                    | {"best_value": candidates[best]})
        values.append(np.pad(np.asarray(candidates, float), (0, size - len(candidates)),
                             constant_values=np.nan))
        totals.append(np.pad(np.asarray(chi2), (0, size - len(chi2)), constant_values=np.nan))
        explained.append(np.pad([int(f["acceptable"].values.sum()) for f in fits],
                                (0, size - len(fits)), constant_values=-1))
        per_cell.append(fits[best]["chi2_per_dof"])
    labels = ["paper chain", *names]
    out = xr.Dataset(
        {"value": (("variant", "candidate"), np.array(values)),
         "total_chi2": (("variant", "candidate"), np.array(totals)),
         "candidate_explained": (("variant", "candidate"), np.array(explained)),
         "chi2_per_dof": xr.concat(per_cell, dim="variant").drop_vars("variant", errors="ignore")}
        | {k: ("variant", [r[k] for r in rows]) for k in rows[0]},
        coords={"variant": labels, "candidate": np.arange(size)})
    out["total_chi2"].attrs["long_name"] = "weighted misfit summed over the diagram's cells"
    out["aic"].attrs["long_name"] = "n log(chi2/n) + 2 k (Gaussian, scale fitted)"
    out["candidate_explained"].attrs["long_name"] = "cells with chi2/dof <= 2 at each value"
    out.attrs.update(provenance("dnnphase.compare.trajectory_family",
                                {"names": list(names), "start": start,
                                 "family": {n: list(FAMILY[n][1]) for n in names}}))
    out.attrs["knob"] = network.attrs["knob"]
    return out


def _choose_and_fit(name: str, curv, train, starts: int, points: int
                    ) -> tuple[float, dict, np.ndarray]:
    """Variant ``name``'s value chosen on the training cells, the chain map fitted with it,
    and every candidate's training cost (its FAMILY values, in order). Every candidate is
    fitted as the paper's chain is (``starts`` starting points): a cheaper search landed some
    candidates in other local minima under another CPU's arithmetic."""
    fits = [fit_chain_map(curv, train, starts=starts, points=points, variant=variant_of(name, v))
            for v in FAMILY[name][1]]
    costs = np.array([f["cost"] for f in fits])
    value = best_value(name, costs)
    return value, fits[list(FAMILY[name][1]).index(value)], costs


def held_out_family(ds, measure: str = MEASURE, *, names=HELD_OUT_VARIANTS,
                    starts: int = STARTS, points: int = TABLE_POINTS) -> xr.Dataset:
    """The chain map of each variant of ``names`` on the held-out cells of one sweep.

    Splits and cells as :func:`dnnphase.compare.comparator.prediction.held_out_prediction`; in each
    fold the variant's number is chosen on the training cells (:func:`_choose_and_fit`). Returns a
    Dataset with dims ``variant``, ``split``, ``fold``, ``candidate``: ``chosen`` (the value
    per fold) and ``search_cost`` (each candidate's training cost, FAMILY's order),
    ``rmse`` (variant, split) over the held-out cells, ``local_rmse`` (split) of the local
    mean, ``in_sample_value`` and ``in_sample_rmse`` (variant) fitted to every usable cell, and
    ``parameters`` (R + C + 1).
    """
    ds = as_result(ds, "ds", "dnnphase.sweep")
    names = _check_names(names, HELD_OUT_VARIANTS)
    require(is_int(starts) and starts >= 1, "starts", "an integer >= 1", starts)
    require(is_int(points) and points >= 4, "points", "an integer >= 4", points)
    cells = diagram_cells(ds, measure)
    curv, usable = cells["curvature"].values, cells["usable"].values
    size = max(len(FAMILY[n][1]) for n in names)
    chosen = np.full((len(names), len(SPLITS), 2), np.nan)
    costs = np.full((len(names), len(SPLITS), 2, size), np.nan)
    errors = np.full((len(names), len(SPLITS)), np.nan)
    local = np.full(len(SPLITS), np.nan)
    in_value, in_rmse = np.full(len(names), np.nan), np.full(len(names), np.nan)
    for s, split in enumerate(SPLITS):
        folds = split_folds(usable, split)
        held_any = np.zeros(curv.shape, dtype=bool)
        local_pred = np.full(curv.shape, np.nan)
        for train, held in folds:
            local_pred[held] = local_mean(curv, train)[held]
            held_any |= held
        local[s] = rmse(local_pred, curv, held_any)
        for v, name in enumerate(names):
            pred = np.full(curv.shape, np.nan)
            for f, (train, held) in enumerate(folds):
                if held.any():
                    chosen[v, s, f], fit, c = _choose_and_fit(name, curv, train, starts, points)
                    costs[v, s, f, :c.size] = c
                    pred[held] = fit["fitted"][held]
            errors[v, s] = rmse(pred, curv, held_any)
    for v, name in enumerate(names):
        in_value[v], fit, _ = _choose_and_fit(name, curv, usable, starts, points)
        in_rmse[v] = rmse(fit["fitted"], curv, usable)
    out = xr.Dataset({"chosen": (("variant", "split", "fold"), chosen),
                      "search_cost": (("variant", "split", "fold", "candidate"), costs),
                      "rmse": (("variant", "split"), errors),
                      "local_rmse": ("split", local),
                      "in_sample_value": ("variant", in_value),
                      "in_sample_rmse": ("variant", in_rmse)},
                     coords={"variant": list(names), "split": list(SPLITS), "fold": [0, 1],
                             "candidate": np.arange(size)})
    out.attrs.update(provenance("dnnphase.compare.held_out_family",
                                {"names": list(names), "measure": measure, "starts": starts,
                                 "points": points}))
    out.attrs.update(knob=cells.attrs["knob"], parameters=int(sum(curv.shape) + 1),
                     cells=int(usable.sum()))
    return out
