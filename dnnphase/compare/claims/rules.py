"""The rule, fixed before any verdict was read, for the paper's central claim: "the highest
test accuracy occurs where the load curve is linear".

Per nonlinearity row of a diagram: the row's *most linear cell* is the column whose
seed-mean scale-free curvature is nearest 0; the row's *best cells* are the columns whose
seed-mean test accuracy ties with the row's best (within two standard errors of the
difference, :func:`dnnphase.compare.peaks.row_accuracy_peaks`). The row is a *hit* when
its most linear cell is among its best cells. A hit can happen by chance: a row whose
best cells are b of C columns would hold it for a random column with probability b / C,
summed over rows into the hits expected by chance.

Verdict, over the R rows of a diagram with k hits and e expected by chance:
**holds** when k >= 2R/3 and k >= e + R/4; **differs** when k < R/3 or k <= e;
**partly** otherwise.
"""

from __future__ import annotations

import numpy as np
import xarray as xr

from dnnphase.compare.peaks import row_accuracy_peaks
from dnnphase.knobs import KNOBS, larger_is_noisier

__all__ = ["RULE_TEXT", "LinearBest", "linear_best", "linear_best_of_sweep", "mean_interval",
           "sweep_cells", "verdict_of", "with_interval"]

RULE_TEXT = """
Per nonlinearity row of a diagram (one α, the noise knob across): the row's *most linear
cell* is the column whose seed-mean scale-free curvature is nearest 0; its *best cells*
are the columns whose seed-mean test accuracy ties with the row's best (within two
standard errors of the difference, the same ties as every report). A row is a **hit** when
its most linear cell is one of its best cells. A random column would be one with
probability b / C (b best cells of C columns): summed over rows, the hits **expected by
chance**, e. Over a diagram's R rows with k hits: **holds** when k ≥ 2R/3 and k ≥ e + R/4;
**differs** when k < R/3 or k ≤ e; **partly** otherwise. The interval on k resamples each
cell's seeds (seed indices drawn with replacement, the same draw for every cell; 400 draws).
"""


def sweep_cells(network: xr.Dataset, measure: str = "trace_ratio"):
    """A sweep's curvature and accuracy as (R, C, S) arrays on oriented axes: rows alpha
    decreasing (more nonlinear first), columns the knob getting noisier; and the knob's
    values (C,)."""
    knob = network.attrs["knob"]
    curvature = network["curvature_scaled"]
    if "measure" in curvature.dims:
        curvature = curvature.sel(measure=measure)
    cells = xr.Dataset({"curvature": curvature, "accuracy": network["test_accuracy"]})
    cells = cells.sortby("alpha", ascending=False).sortby(
        knob, ascending=larger_is_noisier(network)).transpose("alpha", knob, "seed")
    return cells["curvature"].values, cells["accuracy"].values, cells[knob].values


def _hits(curvature: np.ndarray, accuracy: np.ndarray, values: np.ndarray,
          log_scale: bool) -> tuple[np.ndarray, np.ndarray]:
    """Per row: 1 if the most linear cell is among the best, and b / C (chance)."""
    peaks = row_accuracy_peaks(curvature, accuracy, values, log_scale=log_scale)
    with np.errstate(invalid="ignore"):
        mean_curvature = np.nanmean(curvature, axis=2)  # (R, C)
    hit = np.full(curvature.shape[0], np.nan)
    chance = np.full(curvature.shape[0], np.nan)
    for i, row in enumerate(np.abs(mean_curvature)):
        if not np.isfinite(row).any() or not peaks["tied"][i].any():
            continue
        hit[i] = peaks["tied"][i][int(np.nanargmin(row))]
        chance[i] = peaks["tied"][i].mean()
    return hit, chance


class LinearBest(dict):
    """The rule's numbers for one diagram: ``rows``, ``hits``, ``chance``, ``hits_low``,
    ``hits_high`` (95 % over seed resamples), ``verdict``, ``per_row`` (hit per row)."""

    def ours(self) -> str:
        return (f"{self['hits']} of {self['rows']} rows (95 % interval over seeds "
                f"{self['hits_low']:g}–{self['hits_high']:g}), {self['chance']:.1f} expected by "
                f"chance")

    def why(self) -> str:
        return (f"the most linear cell is among the best in {self['hits']} of {self['rows']} "
                f"rows ({self['chance']:.1f} expected by chance)")


def verdict_of(hits: float, rows: int, chance: float) -> str:
    """The rule's verdict for ``hits`` of ``rows`` with ``chance`` expected (module doc)."""
    if rows == 0 or hits < rows / 3 or hits <= chance:
        return "differs"
    if hits >= 2 * rows / 3 and hits >= chance + rows / 4:
        return "holds"
    return "partly"


def linear_best(curvature: np.ndarray, accuracy: np.ndarray, values: np.ndarray, *,
                log_scale: bool = False, n_boot: int = 400, seed: int = 0) -> LinearBest:
    """The rule (module doc) on one diagram's cells.

    Parameters
    ----------
    curvature, accuracy : ndarray, shape (R, C, S)
        Per seed, rows in any order, columns with the knob getting noisier.
    values : ndarray, shape (C,)
        The knob's value per column.
    log_scale : bool
        The knob's values span decades (only the boundary's interpolation uses it).
    n_boot, seed : int
        Resamples of the seed indices (the same draw for every cell) and their generator.
    """
    hit, chance = _hits(curvature, accuracy, values, log_scale)
    rows = int(np.isfinite(hit).sum())
    rng = np.random.default_rng(seed)
    n_seeds = curvature.shape[2]
    boot = []
    for _ in range(n_boot if n_seeds > 1 else 0):
        pick = rng.integers(0, n_seeds, n_seeds)
        b_hit, _ = _hits(curvature[..., pick], accuracy[..., pick], values, log_scale)
        boot.append(np.nansum(b_hit))
    low, high = np.quantile(boot, [0.025, 0.975]) if boot else (np.nan, np.nan)
    hits = int(np.nansum(hit))
    expected = float(np.nansum(chance))
    return LinearBest(rows=rows, hits=hits, chance=expected, hits_low=float(low),
                      hits_high=float(high), per_row=hit,
                      verdict=verdict_of(hits, rows, expected))


def linear_best_of_sweep(network: xr.Dataset, measure: str = "trace_ratio", **kw) -> LinearBest:
    """:func:`linear_best` on a network sweep (a ``dnn_*.nc``)."""
    knob = network.attrs["knob"]
    curvature, accuracy, values = sweep_cells(network, measure)
    return linear_best(curvature, accuracy, values,
                       log_scale=knob in KNOBS and KNOBS[knob].scale == "log", **kw)


def mean_interval(values, n_boot: int = 400, seed: int = 0) -> tuple[float, float, float]:
    """The mean of per-seed ``values`` (S,) and its 95 % interval by resampling the seeds
    (NaN seeds left out; NaN interval with fewer than two finite seeds)."""
    values = np.asarray(values, dtype=float).ravel()
    values = values[np.isfinite(values)]
    if values.size == 0:
        return np.nan, np.nan, np.nan
    if values.size < 2:
        return float(values.mean()), np.nan, np.nan
    means = np.random.default_rng(seed).choice(values, (n_boot, values.size)).mean(1)
    low, high = np.quantile(means, [0.025, 0.975])
    return float(values.mean()), float(low), float(high)


def with_interval(values, digits: int = 3, signed: bool = False) -> str:
    """``mean [low, high]`` of per-seed ``values`` (:func:`mean_interval`), as text."""
    mean, low, high = mean_interval(values)
    form = f"{'+' if signed else ''}.{digits}f"
    if not np.isfinite(mean):
        return "n/a"
    if not np.isfinite(low):
        return f"{mean:{form}}"
    return f"{mean:{form}} [{low:{form}}, {high:{form}}]"
