"""Where test accuracy peaks: against curvature over all models, and along each alpha row.

* :func:`accuracy_peak` — where accuracy peaks against scale-free curvature: the
  vertex of a quadratic fit and the best of equal-count bins, each with a bootstrap
  interval over cells (do linear load curves generalise best?);
* :func:`row_accuracy_peaks` — per nonlinearity row, the knob value of best
  accuracy, the values the seeds cannot tell from it, and where curvature
  changes sign (the phase boundary); :func:`row_shape` names a row without one.
"""

from __future__ import annotations

import warnings

import numpy as np
import xarray as xr
from scipy import stats

from dnnphase.knobs import KNOBS, larger_is_noisier
from phasecore.loadcurve import far_out_fences

__all__ = ["accuracy_peak", "row_accuracy_peaks", "row_shape", "sweep_row_peaks"]


def _cells(values) -> np.ndarray:
    """(K, S): cells by seeds. A 1-D array is K models, each its own cell."""
    v = np.asarray(values, dtype=float)
    return v[:, None] if v.ndim == 1 else v.reshape(-1, v.shape[-1])


def _quadratic_vertex(c: np.ndarray, a: np.ndarray) -> float:
    """Curvature of the highest point of accuracy ~ a + b c + q c^2 (the best end of the
    range if the parabola opens upwards)."""
    with warnings.catch_warnings():  # few distinct resampled points: ill-conditioned
        warnings.simplefilter("ignore", np.exceptions.RankWarning)
        q, b, _ = np.polyfit(c, a, 2)
    lo, hi = c.min(), c.max()
    if q < 0:
        return float(np.clip(-b / (2 * q), lo, hi))
    return float(lo if np.polyval([q, b, 0], lo) > np.polyval([q, b, 0], hi) else hi)


def _bin_means(c: np.ndarray, a: np.ndarray, edges: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Mean curvature and mean accuracy of the models in each bin (NaN where empty), (B,)."""
    bins = len(edges) - 1
    which = np.clip(np.searchsorted(edges, c, side="right") - 1, 0, bins - 1)
    count = np.bincount(which, minlength=bins)
    with np.errstate(invalid="ignore", divide="ignore"):
        centre = np.bincount(which, c, minlength=bins) / count
        mean = np.bincount(which, a, minlength=bins) / count
    return centre, mean


def accuracy_peak(curvature: np.ndarray, accuracy: np.ndarray, *, n_boot: int = 1000,
                  bins: int = 8, seed: int = 0) -> dict:
    """Where test accuracy peaks as a function of scale-free curvature, two ways, with
    intervals that resample cells.

    ``curvature``, ``accuracy``: matching arrays (..., S), the last axis a cell's seeds
    and the leading axes the cells (a 1-D array: every model its own cell). Two
    estimates of the peak:

    * ``peak``: the vertex of a quadratic fit accuracy ~ a + b c + q c^2 over all models
      (if q < 0, else the best end of the range);
    * ``binned_peak``: non-parametric, the mean curvature of the best of ``bins``
      equal-count bins of curvature (``bin_curvature``, ``bin_accuracy``).

    Intervals (``peak_low`` / ``peak_high``, ``binned_low`` / ``binned_high``): 95 %
    percentile bootstrap that resamples whole *cells* with all their seeds. The seeds of
    a cell share its curvature up to noise, so they are not independent draws along the
    curvature axis; resampling single models would make the interval too narrow
    (the cell is the independent unit). The bins' edges stay those of the data.

    Far-out curvatures (beyond Tukey's fences, 3 interquartile ranges outside the
    quartiles) are left out and counted in ``excluded``: a network that barely
    separates the classes has a tiny drop, so its scale-free curvature can reach -90
    and would alone decide where a quadratic peaks. ``low`` / ``high``: the range kept;
    ``n_cells``: cells with at least one model kept.

    Parameters
    ----------
    curvature, accuracy : numpy.ndarray, (..., S)
        Scale-free curvature and test accuracy of each model, the last axis a cell's seeds.
    n_boot : int, default 1000
        Bootstrap resamples of the cells.
    bins : int, default 8
        Equal-count bins of curvature for ``binned_peak``.
    seed : int, default 0
        The bootstrap's random seed.

    Returns
    -------
    dict
        ``peak``, ``peak_low``, ``peak_high``, ``binned_peak``, ``binned_low``,
        ``binned_high``, ``bin_curvature``, ``bin_accuracy``, ``low``, ``high``, ``excluded``,
        ``n_cells`` and ``spearman_abs`` (Spearman rho of accuracy against |curvature|).
    """
    c, a = _cells(curvature), _cells(accuracy)  # (K, S)
    if c.shape != a.shape:
        raise ValueError(f"curvature {c.shape} and accuracy {a.shape} must match")
    ok = np.isfinite(c) & np.isfinite(a)
    if ok.sum() < 4:
        raise ValueError("accuracy vs curvature needs at least 4 finite samples")
    low, high = far_out_fences(c[ok])
    kept = ok & (c >= low) & (c <= high)  # (K, S)
    excluded = int(ok.sum() - kept.sum())
    cells = np.flatnonzero(kept.any(axis=1))
    flat_c, flat_a = c[kept], a[kept]
    edges = np.quantile(flat_c, np.linspace(0, 1, bins + 1))
    centres, means = _bin_means(flat_c, flat_a, edges)

    def both(rows):  # the two peaks of the models of these cells (repeats allowed)
        keep = kept[rows]
        cc, aa = c[rows][keep], a[rows][keep]
        centre, mean = _bin_means(cc, aa, edges)
        best = np.nanargmax(mean) if np.isfinite(mean).any() else 0
        return _quadratic_vertex(cc, aa), centre[best]

    rng = np.random.default_rng(seed)
    boot = np.array([both(rng.choice(cells, cells.size)) for _ in range(n_boot)])  # (B, 2)
    lo_q, hi_q = np.nanquantile(boot, [0.025, 0.975], axis=0)
    return {"excluded": excluded, "low": float(low), "high": float(high),
            "n_cells": int(cells.size),
            "peak": _quadratic_vertex(flat_c, flat_a),
            "peak_low": float(lo_q[0]), "peak_high": float(hi_q[0]),
            "binned_peak": float(centres[np.nanargmax(means)]),
            "binned_low": float(lo_q[1]), "binned_high": float(hi_q[1]),
            "bin_curvature": centres, "bin_accuracy": means,
            "spearman_abs": float(stats.spearmanr(np.abs(flat_c), flat_a).statistic)
            if np.ptp(flat_a) > 0 and np.ptp(np.abs(flat_c)) > 0 else np.nan}


def row_accuracy_peaks(curvature: np.ndarray, accuracy: np.ndarray, values: np.ndarray,
                       log_scale: bool = False) -> dict[str, np.ndarray]:
    """Per nonlinearity row: where test accuracy peaks along the noise axis, and the boundary.

    ``curvature``, ``accuracy``: (R, C, S) per seed, cells on the oriented
    axes (noise increasing along C); ``values``: (C,) the knob value of each
    column; ``log_scale``: interpolate the boundary in log(value) (knobs whose
    values span decades). Returns arrays of shape (R,):

    * ``peak_value``, ``peak_accuracy``, ``peak_accuracy_se``: the column with
      the highest seed-mean accuracy, and its standard error over seeds;
    * ``tied_low`` / ``tied_high``: the smallest / largest knob value whose
      accuracy is within two standard errors of the difference from the peak
      (cells the seeds cannot tell from it), ``tied_curvature_low`` /
      ``tied_curvature_high`` their seed-mean curvature range;
    * ``boundary_value``: the knob value where seed-mean curvature first
      changes sign along the noise axis, interpolated between the two columns
      (NaN if the row never crosses), and ``boundary_direction``: +1 where it
      turns from concave (< 0) to convex (>= 0), as the theory predicts, -1
      the other way;
    * ``boundary_position``: the boundary in grid steps, j + share between
      columns j and j + 1 (the same interpolation); ``peak_to_boundary_steps``:
      |peak column - boundary_position|; ``tied_to_boundary_steps``: the same for
      the tied column nearest the boundary; ``tied_adjacent_to_boundary``: 1 if a
      tied column is one of the two that flank the boundary, else 0 (NaN without
      a boundary);
    * ``tied`` (R, C): 1 where a column ties with the row's peak, else 0 — the
      tied *set* (a row's ties need not be contiguous).

    Parameters
    ----------
    curvature, accuracy : numpy.ndarray, (R, C, S)
        Scale-free curvature and test accuracy per seed, cells on the oriented axes (noise
        increasing along C).
    values : numpy.ndarray, (C,)
        The knob value of each column.
    log_scale : bool, default False
        Interpolate the boundary in log(value) (knobs whose values span decades).

    Returns
    -------
    dict of str to numpy.ndarray
        The arrays listed above, (R,) each (``tied``: (R, C)).
    """
    with warnings.catch_warnings():  # a cell whose seeds all diverged is NaN, as it should be
        warnings.simplefilter("ignore", RuntimeWarning)
        curv = np.nanmean(curvature, axis=2)  # (R, C)
        acc = np.nanmean(accuracy, axis=2)  # (R, C)
        n = np.sum(np.isfinite(accuracy), axis=2)
        se = np.nanstd(accuracy, axis=2, ddof=1) / np.sqrt(np.maximum(n, 1))  # (R, C)
    se = np.where(np.isfinite(se), se, 0.0)  # one seed: no error bar to widen the ties
    values = np.asarray(values, dtype=float)
    rows = curv.shape[0]
    out = {k: np.full(rows, np.nan) for k in (
        "peak_value", "peak_accuracy", "peak_accuracy_se", "tied_low", "tied_high",
        "tied_curvature_low", "tied_curvature_high", "boundary_value", "boundary_direction",
        "boundary_position", "peak_to_boundary_steps", "tied_to_boundary_steps",
        "tied_adjacent_to_boundary")}
    out["tied"] = np.zeros(curv.shape)
    peak_column = np.full(rows, -1)
    for i in range(rows):
        if np.isfinite(acc[i]).any():
            j = int(np.nanargmax(acc[i]))
            tied = acc[i] >= acc[i, j] - 2 * np.sqrt(se[i, j] ** 2 + se[i] ** 2)  # (C,)
            out["tied"][i] = tied
            peak_column[i] = j
            out["peak_value"][i], out["peak_accuracy"][i] = values[j], acc[i, j]
            out["peak_accuracy_se"][i] = se[i, j]
            out["tied_low"][i], out["tied_high"][i] = values[tied].min(), values[tied].max()
            if np.isfinite(curv[i, tied]).any():
                out["tied_curvature_low"][i] = np.nanmin(curv[i, tied])
                out["tied_curvature_high"][i] = np.nanmax(curv[i, tied])
        convex = curv[i] >= 0  # (C,); NaN compares False but is excluded below
        finite = np.isfinite(curv[i])
        crossing = np.flatnonzero(finite[:-1] & finite[1:] & (convex[:-1] != convex[1:]))
        if crossing.size:
            j = crossing[0]
            share = -curv[i, j] / (curv[i, j + 1] - curv[i, j])
            ends = np.log(values[j:j + 2]) if log_scale else values[j:j + 2]
            at = ends[0] + share * (ends[1] - ends[0])
            out["boundary_value"][i] = np.exp(at) if log_scale else at
            out["boundary_direction"][i] = 1.0 if convex[j + 1] else -1.0
            out["boundary_position"][i] = position = j + share
            if peak_column[i] >= 0:
                tied_columns = np.flatnonzero(out["tied"][i])
                out["peak_to_boundary_steps"][i] = abs(peak_column[i] - position)
                out["tied_to_boundary_steps"][i] = np.min(np.abs(tied_columns - position))
                out["tied_adjacent_to_boundary"][i] = float(
                    np.isin([j, j + 1], tied_columns).any())
    return out


def sweep_row_peaks(network: xr.Dataset, measure: str) -> dict[str, np.ndarray]:
    """:func:`row_accuracy_peaks` on a network sweep's cells, rows oriented as the comparison's.

    Rows: alpha decreasing (nonlinearity increasing); columns: the knob in its
    noisier direction; the boundary is interpolated in log for log-scale knobs.
    """
    knob = network.attrs["knob"]
    cells = xr.Dataset({"curvature": network["curvature_scaled"].sel(measure=measure),
                        "accuracy": network["test_accuracy"]})
    cells = cells.sortby("alpha", ascending=False).sortby(
        knob, ascending=larger_is_noisier(network)).transpose("alpha", knob, "seed")
    return row_accuracy_peaks(cells["curvature"].values, cells["accuracy"].values,
                              cells[knob].values,
                              log_scale=knob in KNOBS and KNOBS[knob].scale == "log")


def row_shape(curvature: np.ndarray) -> str:
    """What a row without a boundary is, from its seed-mean curvatures (C,)."""
    if not np.isfinite(curvature).any():
        return "no finite curvature"
    if np.nanmin(curvature) >= 0:
        return "convex throughout"
    if np.nanmax(curvature) < 0:
        return "concave throughout"
    return "no sign change between neighbouring finite cells"
