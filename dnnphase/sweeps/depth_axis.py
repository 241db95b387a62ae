"""Depth as a sweep axis: networks of several depths in one sweep (He & Su's Figs. 1 and 3,
Galanti et al.'s Fig. 1).

Networks of different depths cannot share a stack, so a sweep with ``depths`` is one sweep
per depth (:meth:`dnnphase.sweeps.sweep.SweepConfig.per_depth`) whose chunks run, and are
stored and resumed, together; :func:`stack` lays the per-depth results side by side along a
``depth`` dimension. Each depth keeps its load curve at its own length, layers 0..depth,
and NaN above, so no statistic reads a layer the network does not have (the curvatures
and the papers' statistics are computed per depth, before stacking).
"""

from __future__ import annotations

import numpy as np
import xarray as xr

from phasecore.checks import check_distinct, is_int, require

__all__ = ["check", "normalise", "stack"]


def normalise(depths) -> tuple:
    """``depths`` as a tuple (a list from JSON, one integer, or None for none), numpy
    integers as Python ones (the configuration is stored as JSON). Anything else is kept
    as given, for :func:`check` to name."""
    if depths is None:
        return ()
    if isinstance(depths, np.ndarray):
        depths = depths.tolist()
    if not isinstance(depths, (list, tuple, range)):
        depths = (depths,)
    return tuple(d.item() if isinstance(d, np.generic) else d for d in depths)


def check(depths: tuple, depth, default_depth: int) -> None:
    """ConfigError unless ``depths`` is empty or distinct integers >= 2 with ``depth`` at
    its default (the axis replaces it)."""
    if not depths:
        return
    bad = [d for d in depths if not (is_int(d) and d >= 2)]
    require(not bad, "depths",
            "integers >= 2 (hidden layers; a load curve's curvature needs layers 0..L, L >= 2)",
            bad[0] if bad else None)
    check_distinct("depths", depths)
    require(depth == default_depth, "depth",
            f"left at its default {default_depth} when depths is given (each network's "
            "depth comes from depths)", depth)


def stack(results: list[xr.Dataset], depths) -> xr.Dataset:
    """The sweep's ``results`` at each depth (one each, in the order of ``depths``: the runs
    of :meth:`~dnnphase.sweeps.sweep.SweepConfig.per_depth`) as one Dataset with a
    ``depth`` dimension after ``seed``; ``layer`` runs 0..max(depths), NaN above a depth's
    own layers."""
    require(len(results) == len(depths), "results", f"one result per depth ({len(depths)})",
            len(results))
    n_layers = max(depths) + 1
    padded = [ds.reindex(layer=np.arange(n_layers)) for ds in results]
    out = xr.concat(padded, dim=xr.DataArray(np.asarray(depths, dtype=np.int64), dims="depth"),
                    data_vars="all", coords="minimal", compat="equals", join="outer")
    out["depth"].attrs.update(long_name="hidden layers L of the network", units="layers")
    out["layer"].attrs.update(results[0]["layer"].attrs)
    grid = results[0]["test_accuracy"].dims  # (alpha, knob, seed)
    return out.transpose(*grid, "depth", ...)
