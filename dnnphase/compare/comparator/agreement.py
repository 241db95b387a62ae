"""How far two oriented phase diagrams agree: label agreement and rank correlations.

* Cohen's kappa of phase labels (-1 concave, 0 linear, +1 convex): agreement
  beyond what the two label frequencies give by chance;
* Spearman rank correlations of mean curvature along every row (noise axis)
  and every column (nonlinearity axis) of a diagram — the theory predicts
  positive along noise and negative along nonlinearity, for networks and chain;
* :func:`sweeps_agree` — two runs of the same network sweep (a re-run, another
  machine or version) cell by cell, in units of their seeds' standard error.
"""

from __future__ import annotations

import numpy as np
import xarray as xr
from scipy import stats

from dnnphase.compare.comparator.alignment import check_network, seed_se
from dnnphase.defaults import MEASURE
from phasecore.checks import ConfigError
from phasecore.results import as_result, provenance

__all__ = ["cohen_kappa", "rank_correlations", "sweeps_agree"]


def cohen_kappa(a: np.ndarray, b: np.ndarray) -> float:
    """Agreement beyond chance between two label arrays (NaN entries ignored).

    Parameters
    ----------
    a, b : numpy.ndarray
        Phase labels -1, 0, +1 (NaN: none) of the same cells, any one shape.

    Returns
    -------
    float
        kappa in [-1, 1]: 1 full agreement, 0 chance's; NaN without a cell labelled in
        both, or where chance alone agrees fully (one label everywhere).
    """
    ok = np.isfinite(a) & np.isfinite(b)
    a, b = a[ok], b[ok]
    if a.size == 0:
        return np.nan
    observed = np.mean(a == b)
    chance = sum(np.mean(a == v) * np.mean(b == v) for v in (-1, 0, 1))
    return float((observed - chance) / (1 - chance)) if chance < 1 else np.nan


def rank_correlations(curv: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Spearman rho of curvature (R, C) along each row (vs column index) and column.

    Returns (rows (R,), cols (C,)); NaN where a line has < 3 finite cells or
    no variation.

    Parameters
    ----------
    curv : numpy.ndarray, (R, C)
        Curvatures of a diagram's cells.

    Returns
    -------
    tuple of numpy.ndarray
        rho of each row (R,) and of each column (C,).
    """
    def rho(values):
        ok = np.isfinite(values)
        if ok.sum() < 3 or np.ptp(values[ok]) == 0:
            return np.nan
        return stats.spearmanr(np.arange(values.size)[ok], values[ok]).statistic

    rows = np.array([rho(curv[i]) for i in range(curv.shape[0])])
    cols = np.array([rho(curv[:, j]) for j in range(curv.shape[1])])
    return rows, cols


def _seed_z(a: xr.DataArray, b: xr.DataArray) -> xr.DataArray:
    """(mean_b - mean_a) / SE of that difference, per cell; each run's SE from its own seeds
    (:func:`seed_se`). NaN where a run has fewer than 2 finite seeds."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return (b.mean("seed") - a.mean("seed")) / np.hypot(seed_se(a), seed_se(b))


def sweeps_agree(a, b, measure: str = MEASURE) -> xr.Dataset:
    """Two runs of one network sweep compared cell by cell, against their seed noise.

    ``a``, ``b``: ``dnnphase.sweep`` Datasets (or paths) with the same knob, alpha and
    knob values and seed count, e.g. a committed diagram and a re-run. A cell is an
    (alpha, knob value); its seeds are the independent unit. Returns a Dataset over
    (alpha, <knob>): ``curvature_z`` and ``accuracy_z``, the difference of the two
    seed means in standard errors of that difference (dimensionless; for independent seeds
    of one distribution like a t statistic, beyond 2 in about 5 % of cells; a re-run of the
    same seeds that differs only in rounding stays well below), and ``bitwise_equal``, whether
    the cell's final load curves are bit for bit equal. Attributes: ``bitwise_equal_runs``,
    the largest |z| of each, and the count of cells beyond 2.

    Parameters
    ----------
    a, b : xarray.Dataset or str or pathlib.Path
        The two sweeps' Datasets, or their files.
    measure : str, default "trace_ratio"
        The measure whose curvature is compared (:data:`dnnphase.metrics.MEASURE_NAMES`).

    Returns
    -------
    xarray.Dataset
        ``curvature_z``, ``accuracy_z`` and ``bitwise_equal`` over (alpha, <knob>).
    """
    a, b = as_result(a, "a", "dnnphase.sweep"), as_result(b, "b", "dnnphase.sweep")
    check_network(a, measure)
    check_network(b, measure)
    knob = a.attrs.get("knob")
    if b.attrs.get("knob") != knob:
        raise ConfigError(f"the two sweeps must vary the same knob (got {knob!r} and "
                          f"{b.attrs.get('knob')!r})")
    for dim in ("alpha", knob):
        if not np.array_equal(a[dim].values, b[dim].values):
            raise ConfigError(f"the two sweeps must share their {dim} values (got "
                              f"{a[dim].values.tolist()} and {b[dim].values.tolist()})")
    if a.sizes["seed"] < 2 or b.sizes["seed"] < 2:
        raise ConfigError(f"each sweep needs seeds >= 2 to have a seed noise (got "
                          f"{a.sizes['seed']} and {b.sizes['seed']})")
    curv = [x["curvature_scaled"].sel(measure=measure, drop=True) for x in (a, b)]
    ds = xr.Dataset({
        "curvature_z": _seed_z(*curv),
        "accuracy_z": _seed_z(a["test_accuracy"], b["test_accuracy"]),
    })
    same_seeds = np.array_equal(a["seed"].values, b["seed"].values)
    identical = (a["load_curve"] == b["load_curve"]) | (a["load_curve"].isnull()
                                                       & b["load_curve"].isnull())
    ds["bitwise_equal"] = identical.all([d for d in identical.dims if d not in ("alpha", knob)]) \
        if same_seeds else xr.zeros_like(ds["curvature_z"], dtype=bool)
    ds["curvature_z"].attrs = {"long_name": f"{measure} curvature: difference of seed means "
                               "(b - a) in standard errors", "units": "1"}
    ds["accuracy_z"].attrs = {"long_name": "test accuracy: difference of seed means (b - a) "
                              "in standard errors", "units": "1"}
    ds["bitwise_equal"].attrs = {"long_name": "final load curves bit for bit equal"}
    for name in ("curvature_z", "accuracy_z"):
        z = np.abs(ds[name].values)
        z = z[np.isfinite(z)]
        ds.attrs[f"{name}_max"] = float(z.max()) if z.size else np.nan
        ds.attrs[f"{name}_median"] = float(np.median(z)) if z.size else np.nan
        ds.attrs[f"{name}_beyond_2"] = int((z > 2).sum())
        ds.attrs[f"{name}_cells"] = int(z.size)
    ds.attrs["bitwise_equal_runs"] = int(bool(ds["bitwise_equal"].all()))
    ds.attrs.update(provenance("dnnphase.compare.sweeps_agree",
                               {"measure": measure, "knob": knob}))
    return ds
