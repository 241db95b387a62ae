"""Fit the chain to every cell of a network sweep -> labelled Datasets (one home for both callers).

A sweep Dataset has ``load_curve (alpha, <knob>, seed, measure, layer)`` and,
when recorded, ``load_curve_epochs (alpha, <knob>, seed, epoch, layer)``
(DESIGN §3). Only xarray is assumed here, no network code.
"""

from __future__ import annotations

import numpy as np
import xarray as xr

from phasecore.checks import require
from springblock.fit.spring import fit_spring
from springblock.fit.trajectory import fit_trajectory, seed_weights


def _grid_dims(network: xr.Dataset) -> list[str]:
    """The sweep's two grid dimensions (alpha, knob) — all but seed/measure/layer/epoch."""
    dims = [d for d in network["load_curve"].dims if d not in ("seed", "measure", "layer")]
    require(len(dims) == 2, "network", "a sweep with two grid dimensions besides seed",
            network["load_curve"].dims)
    return dims


def fit_sweep_final(network: xr.Dataset, measure: str = "trace_ratio", **kwargs) -> xr.Dataset:
    """:func:`fit_spring` on each cell's seed-mean final curve -> Dataset over the grid dims."""
    dims = _grid_dims(network)
    curves = network["load_curve"]
    if "measure" in curves.dims:
        curves = curves.sel(measure=measure)
    curves = curves.mean("seed", skipna=True).transpose(*dims, "layer")
    ds = fit_spring(curves.values, **kwargs).to_dataset(
        dims=dims, coords={d: network[d].values for d in dims})
    ds.attrs["source_kind"] = str(network.attrs.get("kind", ""))
    return ds


def fit_sweep_trajectory(network: xr.Dataset, *, weighted: bool = True,
                         **kwargs) -> xr.Dataset:
    """:func:`fit_trajectory` on each cell's seed-mean ``load_curve_epochs``.

    With ``weighted`` and >= 2 seeds, observations are weighted by the
    inverse of their seed variance (:func:`seed_weights`, pooled over cells
    and layers). Adds ``epoch``-resolved ``frame_residual`` and the cell's
    ``residual``; keyword arguments go to :func:`fit_trajectory`.
    """
    require("load_curve_epochs" in network, "network",
            "a sweep recorded with record_every (load_curve_epochs)", sorted(network.data_vars))
    dims = _grid_dims(network)
    per_seed = network["load_curve_epochs"].transpose(*dims, "seed", "epoch", "layer")
    epochs = network["epoch"].values.astype(np.float64)
    mean = per_seed.mean("seed", skipna=True).values
    weights = None
    if weighted and network.sizes["seed"] >= 2:
        weights = seed_weights(per_seed.values, epochs)
    res = fit_trajectory(mean, epochs, weights=weights, **kwargs)
    ds = res.to_dataset(dims=dims, coords={d: network[d].values for d in dims})
    ds.attrs["weighted_by_seed_variance"] = int(weights is not None)
    ds.attrs["source_kind"] = str(network.attrs.get("kind", ""))
    return ds
