"""Where test accuracy peaks: against curvature over all models, and along each alpha row.

* :func:`accuracy_peak` — the vertex of a quadratic fit of accuracy vs
  scale-free curvature, with a bootstrap interval (do linear load curves
  generalise best?);
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


def accuracy_peak(curvature: np.ndarray, accuracy: np.ndarray, *, n_boot: int = 1000,
                  bins: int = 8, seed: int = 0) -> dict:
    """Where test accuracy peaks as a function of scale-free curvature.

    ``curvature``, ``accuracy``: matching arrays over all cells and seeds.
    Fits accuracy ~ a + b c + q c^2 and reports the vertex -b / (2q) (if
    q < 0, else the best end of the range) with a percentile bootstrap 95 %
    interval over samples, and a binned mean curve. Far-out curvatures (beyond
    Tukey's fences, 3 interquartile ranges outside the quartiles) are left out
    of the fit and counted in ``excluded``: a network that barely separates the
    classes has a tiny drop, so its scale-free curvature can reach -90 and
    would alone decide where a quadratic peaks. ``low`` / ``high``: the range
    kept.
    """
    c = np.asarray(curvature, dtype=float).ravel()
    a = np.asarray(accuracy, dtype=float).ravel()
    ok = np.isfinite(c) & np.isfinite(a)
    c, a = c[ok], a[ok]
    if c.size < 4:
        raise ValueError("accuracy vs curvature needs at least 4 finite samples")
    low, high = far_out_fences(c)
    inside = (c >= low) & (c <= high)
    excluded = int(c.size - inside.sum())
    c, a = c[inside], a[inside]

    def vertex(cc, aa):
        with warnings.catch_warnings():  # few distinct resampled points: ill-conditioned
            warnings.simplefilter("ignore", np.exceptions.RankWarning)
            q, b, _ = np.polyfit(cc, aa, 2)
        lo, hi = cc.min(), cc.max()
        if q < 0:
            return float(np.clip(-b / (2 * q), lo, hi))
        return float(lo if np.polyval([q, b, 0], lo) > np.polyval([q, b, 0], hi) else hi)

    rng = np.random.default_rng(seed)
    boot = np.array([vertex(c[idx], a[idx])
                     for idx in (rng.integers(0, c.size, c.size) for _ in range(n_boot))])
    edges = np.quantile(c, np.linspace(0, 1, bins + 1))
    which = np.clip(np.searchsorted(edges, c, side="right") - 1, 0, bins - 1)
    centres = np.array([c[which == k].mean() if np.any(which == k) else np.nan
                        for k in range(bins)])
    means = np.array([a[which == k].mean() if np.any(which == k) else np.nan
                      for k in range(bins)])
    return {"excluded": excluded, "low": float(low), "high": float(high),
            "peak": vertex(c, a), "peak_low": float(np.quantile(boot, 0.025)),
            "peak_high": float(np.quantile(boot, 0.975)), "bin_curvature": centres,
            "bin_accuracy": means, "spearman_abs": float(
                stats.spearmanr(np.abs(c), a).statistic) if np.ptp(a) > 0 and np.ptp(
                np.abs(c)) > 0 else np.nan}


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
      the other way.
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
        "tied_curvature_low", "tied_curvature_high", "boundary_value", "boundary_direction")}
    for i in range(rows):
        if np.isfinite(acc[i]).any():
            j = int(np.nanargmax(acc[i]))
            tied = acc[i] >= acc[i, j] - 2 * np.sqrt(se[i, j] ** 2 + se[i] ** 2)  # (C,)
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
