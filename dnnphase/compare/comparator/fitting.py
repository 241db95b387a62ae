"""The chain fitted to every cell of a network sweep -> labelled Datasets.

A sweep Dataset has ``load_curve (alpha, <knob>, seed, measure, layer)`` and,
when recorded, ``load_curve_epochs (alpha, <knob>, seed, epoch, layer)``
(as :func:`dnnphase.sweep` writes it). :func:`fit_sweep_final` and
:func:`fit_sweep_trajectory` assume only xarray, no network code;
:func:`fit_chain` checks the sweep, picks one of them and records provenance —
the one place both ``dnnphase fit`` and ``reproduce`` fit a sweep.
"""

from __future__ import annotations

import os
import warnings

import numpy as np
import xarray as xr

from dnnphase.compare.comparator.alignment import check_network
from dnnphase.defaults import MEASURE
from phasecore.checks import ConfigError, check_bools, require
from phasecore.results import as_result, provenance
from springblock.fit.spring import fit_spring
from springblock.fit.trajectory import fit_trajectory
from springblock.fit.weights import seed_weights

__all__ = ["fit_chain", "fit_sweep_final", "fit_sweep_trajectory"]


def _grid_dims(network: xr.Dataset) -> list[str]:
    """The sweep's two grid dimensions (alpha, knob) — all but seed/measure/layer/epoch."""
    dims = [d for d in network["load_curve"].dims if d not in ("seed", "measure", "layer")]
    require(len(dims) == 2, "network", "a sweep with two grid dimensions besides seed",
            network["load_curve"].dims)
    return dims


def _finite_seeds(curves: xr.DataArray, what: str) -> xr.DataArray:
    """Each seed's curve where it is not infinite at any layer, else NaN (left out of the
    seed mean): a curve at -inf or +inf somewhere (features with no within- or between-class
    spread; the sweep warned) has no shape to fit, and its mean would be infinite. Said
    once; a sweep with no finite curve at all is refused."""
    finite = ~np.isinf(curves).any("layer")  # (NaN: a diverged model, left out anyway)
    if bool(finite.all()):
        return curves
    within = [d for d in finite.dims if d in ("seed", "epoch")]
    cells = (finite & curves.notnull().any("layer")).any(within)
    require(bool(cells.any()), "network", f"a sweep with a finite {what} in some cell (a "
            "chain needs a finite curve to fit)", f"{int((~finite).sum())} infinite curves")
    warnings.warn(f"{int((~finite).sum())} {what}s are -inf or +inf at some layer (collapsed "
                  "features); they are left out of the seed means "
                  f"({int((~cells).sum())} of {cells.size} cells have none left and are not "
                  "fitted)", stacklevel=3)
    return curves.where(finite)


def fit_sweep_final(network: xr.Dataset, measure: str = MEASURE, **kwargs) -> xr.Dataset:
    """:func:`fit_spring` on each cell's seed-mean final curve -> Dataset over the grid dims.

    Parameters
    ----------
    network : xarray.Dataset
        A network sweep (``dnnphase.sweep``).
    measure : str, default "trace_ratio"
        The measure whose final load curves are fitted (:data:`dnnphase.metrics.MEASURE_NAMES`).
    **kwargs
        Keyword arguments of :func:`springblock.fit.fit_spring`.

    Returns
    -------
    xarray.Dataset
        :meth:`FitResult.to_dataset` over the sweep's grid dims.
    """
    dims = _grid_dims(network)
    curves = network["load_curve"]
    if "measure" in curves.dims:
        curves = curves.sel(measure=measure)
    curves = _finite_seeds(curves, "load curve").mean("seed", skipna=True).transpose(
        *dims, "layer")
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

    Parameters
    ----------
    network : xarray.Dataset
        A network sweep recorded over training (``record_every`` > 0: ``load_curve_epochs``).
    weighted : bool, default True
        Weight each point by the inverse of its seed variance (with >= 2 seeds).
    **kwargs
        Keyword arguments of :func:`springblock.fit.fit_trajectory`.

    Returns
    -------
    xarray.Dataset
        :meth:`TrajectoryFit.to_dataset` over the sweep's grid dims, with ``frame_residual``
        and ``residual``.
    """
    check_bools(weighted=weighted)
    require("load_curve_epochs" in network, "network",
            "a sweep recorded with record_every (load_curve_epochs)", sorted(network.data_vars))
    dims = _grid_dims(network)
    per_seed = _finite_seeds(network["load_curve_epochs"], "recorded load curve").transpose(
        *dims, "seed", "epoch", "layer")
    epochs = network["epoch"].values.astype(np.float64)
    mean = per_seed.mean("seed", skipna=True).values
    weights = None
    if weighted and network.sizes["seed"] >= 2:
        weights = seed_weights(per_seed.values)
    res = fit_trajectory(mean, epochs, weights=weights, **kwargs)
    ds = res.to_dataset(dims=dims, coords={d: network[d].values for d in dims})
    ds.attrs["weighted_by_seed_variance"] = int(weights is not None)
    ds.attrs["source_kind"] = str(network.attrs.get("kind", ""))
    return ds


#: Keyword arguments only one of the two fits takes (the rest go to both; one neither
#: takes is named, with the options, by :func:`_check_options`).
FINAL_ONLY = frozenset({"horizon", "mu_left_ratio", "mu_right", "grid", "refine",
                        "refine_threshold", "sim_seeds", "sim_iterations", "step"})
TRAJECTORY_ONLY = frozenset({"start", "weighted", "n_starts", "profile_values", "variant",
                             "acceptable_chi2"})


def _check_options(options: dict, trajectory: bool) -> None:
    """A keyword the chosen fit does not take (a typo) is named with the ones it does."""
    import inspect

    fit = fit_trajectory if trajectory else fit_spring
    known = {name for name, p in inspect.signature(fit).parameters.items()
             if p.kind == p.KEYWORD_ONLY or p.default is not p.empty}
    known = (known | {"weighted"}) - {"weights"} if trajectory else known
    unknown = sorted(set(options) - known)
    require(not unknown, "fit option", f"one of {', '.join(sorted(known))}",
            ", ".join(unknown))


def fit_chain(network, *, measure: str = MEASURE, trajectory: bool = False,
              source: str | None = None, **fit_options) -> xr.Dataset:
    """The chain fitted to every cell of a network sweep, labelled, with provenance.

    Parameters
    ----------
    network : xarray.Dataset, str or Path
        The sweep's Dataset, or the path of a file written by ``dnnphase sweep``
        (opened; its name is the default ``source``).
    measure : str, default "trace_ratio"
        The load curve fitted.
    trajectory : bool, default False
        False: :func:`fit_sweep_final` on each cell's seed-mean final load curve of
        ``measure`` (fast; mu<- / mu-> and the horizon fixed). True:
        :func:`fit_sweep_trajectory` on the load curves recorded during training
        (mu->, mu<-, s and a time scale, with 95 % intervals; needs
        ``record_every`` and the first measure).
    source : str, optional
        A file name kept in the provenance.
    **fit_options
        Go to the fit (:func:`springblock.fit.fit_spring` or
        :func:`springblock.fit.fit_trajectory`).

    Returns
    -------
    xarray.Dataset
        The fitted chain parameters over the sweep's grid (alpha, knob), their
        errors and residuals; ``attrs``: kind "dnnphase.fit", config, knob.

    Raises
    ------
    ConfigError
        A fit option of the other fit, a trajectory fit of a sweep that recorded no
        curves during training or of another measure.
    """
    if source is None and isinstance(network, (str, os.PathLike)):
        source = str(network)
    check_bools(trajectory=trajectory)
    network = as_result(network, "network", "dnnphase.sweep")
    check_network(network, measure)
    misplaced = sorted(set(fit_options) & (FINAL_ONLY if trajectory else TRAJECTORY_ONLY))
    if misplaced:
        fit_only = ("final-curve fit only (trajectory=False)" if trajectory
                    else "trajectory fit only (trajectory=True)")
        raise ConfigError(f"{', '.join(misplaced)} {'applies' if len(misplaced) == 1 else 'apply'}"
                          f" to the {fit_only} (got "
                          f"{', '.join(f'{k}={fit_options[k]!r}' for k in misplaced)})")
    _check_options(fit_options, trajectory)
    if trajectory:
        if "load_curve_epochs" not in network:
            raise ConfigError("a trajectory fit needs load curves recorded during training: "
                              "sweep with --record-every")
        recorded = str(network["measure"].values[0]) if "measure" in network.coords else measure
        if measure != recorded:
            raise ConfigError(f"measure must be {recorded!r} for a trajectory fit: the sweep "
                              f"records only its first measure during training (got {measure!r})")
        fit = fit_sweep_trajectory(network, **fit_options)
    else:
        fit = fit_sweep_final(network, measure=measure, **fit_options)
    config = {"measure": measure, "trajectory": trajectory, "source": source,
              "network_config": network.attrs.get("config"),
              "options": dict(fit_options)}
    fit.attrs.update(provenance("dnnphase.fit", config))
    fit.attrs["knob"] = network.attrs["knob"]
    if "effective_force" in fit:
        convex = np.isneginf(fit["effective_force"].values)
        if convex.any():  # -inf is right, but unexplained it reads as a failed fit
            warnings.warn(f"{int(convex.sum())} of {convex.size} cells are more convex than any "
                          "equal-force chain (effective_force = -inf there; networks that "
                          "barely separate their classes, e.g. at chance accuracy, do this)",
                          stacklevel=2)
    return fit
