"""The two phase diagrams on common axes: input checks, orientation, rank alignment.

The diagrams live on different axes — (alpha, knob) for networks, (friction,
noise) for the chain — so they are never compared value by value. Instead both
are *oriented* the way the theory predicts, every axis increasing:

* nonlinearity-like: network 1 - alpha (alpha = 0, ReLU, is the most
  nonlinear); chain friction (the row parameter, e.g. mu_right);
* noise-like: network knob in its noisier direction (more dropout, larger lr,
  smaller batch, more label noise); chain noise.

A network cell is then matched to the chain cell at the same *relative rank*
position on both oriented axes (nearest quantile): :func:`aligned_labels`.
"""

from __future__ import annotations

import numpy as np
import xarray as xr

from dnnphase.defaults import MEASURE
from dnnphase.knobs import larger_is_noisier
from phasecore.checks import ConfigError

__all__ = ["aligned_labels", "chain_axes", "check_network", "check_spring", "oriented_network",
           "oriented_spring", "seed_se"]

#: Chain parameters that play the role of nonlinearity (friction) and of noise.
FRICTION_AXES = ("mu_right", "mu_left")
NOISE_AXES = ("noise",)


# --- input checks ---------------------------------------------------------------------


def check_network(ds: xr.Dataset, measure: str = MEASURE) -> None:
    """Raise ValueError unless ``ds`` is a usable ``dnnphase.sweep`` result."""
    kind = ds.attrs.get("kind", "")
    if kind != "dnnphase.sweep":
        raise ValueError(f"expected a network sweep (dnnphase sweep), got {kind or 'unknown'!r}")
    missing = {"load_curve", "curvature_scaled", "test_accuracy"} - set(ds.data_vars)
    if missing:
        raise ValueError(f"network sweep lacks variables: {', '.join(sorted(missing))}")
    if "depth" in ds.dims:  # a depth axis (--depths): one diagram per depth
        depths = ", ".join(str(d) for d in ds["depth"].values)
        raise ConfigError(f"network must be a sweep of one depth; this one has a depth axis "
                          f"(depths {depths}): take one, e.g. in Python "
                          f"ds.sel(depth={ds['depth'].values[-1]}).dropna('layer', how='all')")
    if measure not in ds["measure"].values:
        raise ConfigError(f"measure must be one of {', '.join(map(str, ds['measure'].values))} "
                          f"(got {measure!r})")
    _check_grid(ds["curvature_scaled"].sel(measure=measure), "network")


def check_spring(ds: xr.Dataset) -> None:
    """Raise ValueError unless ``ds`` is a usable ``springblock.phase_diagram`` result."""
    kind = ds.attrs.get("kind", "")
    if kind != "springblock.phase_diagram":
        raise ValueError(f"expected a spring phase diagram (springblock phase), got "
                         f"{kind or 'unknown'!r}")
    missing = {"load_curve", "curvature_scaled"} - set(ds.data_vars)
    if missing:
        raise ValueError(f"spring phase diagram lacks variables: {', '.join(sorted(missing))}")
    _check_grid(ds["curvature_scaled"], "spring")


def _check_grid(curv: xr.DataArray, what: str) -> None:
    """Refuse an empty diagram, or one whose every cell is NaN (nothing to compare)."""
    if curv.size == 0:
        raise ValueError(f"the {what} phase diagram is empty")
    cell_mean = curv.mean("seed", skipna=True)
    if not np.isfinite(cell_mean).any():
        raise ValueError(f"every cell of the {what} phase diagram is NaN")


# --- seed statistics ------------------------------------------------------------------


def seed_se(x: xr.DataArray) -> xr.DataArray:
    """Standard error of the seed mean per cell: std over finite seeds (ddof 1) / sqrt(their
    count); NaN with fewer than 2 finite seeds. ``x`` has a ``seed`` dim, which is dropped."""
    count = x.count("seed")
    return x.std("seed", ddof=1, skipna=True) / np.sqrt(count.where(count > 1))


# --- oriented grids -------------------------------------------------------------------


def oriented_network(ds: xr.Dataset, measure: str = MEASURE) -> xr.Dataset:
    """Network cells on (nonlinearity, noisiness) axes, both increasing.

    Returns a Dataset with dims (nonlinearity, noisiness): ``curvature`` (seed
    mean of the scale-free curvature), ``accuracy`` (seed-mean test
    accuracy), and the original ``alpha`` / knob values as coordinates.
    """
    knob = ds.attrs["knob"]
    larger_noisier = larger_is_noisier(ds)
    curv = ds["curvature_scaled"].sel(measure=measure).mean("seed", skipna=True)
    acc = ds["test_accuracy"].mean("seed", skipna=True)
    out = xr.Dataset({"curvature": curv, "accuracy": acc})
    out = out.sortby("alpha", ascending=False).sortby(knob, ascending=larger_noisier)
    return out.rename({"alpha": "nonlinearity", knob: "noisiness"}).assign_coords(
        alpha=("nonlinearity", out["alpha"].values), knob=("noisiness", out[knob].values))


def chain_axes(ds: xr.Dataset) -> tuple[str, str]:
    """(friction axis, noise axis) of a chain phase diagram, in either order; else an error.

    Parameters
    ----------
    ds : xarray.Dataset
        A chain phase diagram (:func:`springblock.phase_diagram`).

    Returns
    -------
    tuple of str
        The names of its friction and noise dimensions.
    """
    dims = tuple(ds["curvature_scaled"].dims[:2])
    friction = [d for d in dims if d in FRICTION_AXES]
    noise = [d for d in dims if d in NOISE_AXES]
    if len(friction) != 1 or len(noise) != 1:
        raise ConfigError(
            f"the chain phase diagram must have a friction axis ({' or '.join(FRICTION_AXES)}) "
            f"and the noise axis to compare with networks (got {' x '.join(dims)})")
    return friction[0], noise[0]


def oriented_spring(ds: xr.Dataset) -> xr.Dataset:
    """Chain cells on (nonlinearity = friction, noisiness = noise) axes, both increasing."""
    friction, noise = chain_axes(ds)
    curv = ds["curvature_scaled"].mean("seed", skipna=True).transpose(friction, noise)
    out = xr.Dataset({"curvature": curv}).sortby(friction).sortby(noise)
    return out.rename({friction: "nonlinearity", noise: "noisiness"}).assign_coords(
        friction=("nonlinearity", out[friction].values),
        chain_noise=("noisiness", out[noise].values))


# --- rank alignment -------------------------------------------------------------------


def _quantiles(n: int) -> np.ndarray:
    """Relative rank positions (n,) in [0, 1] of n ordered cells; one cell sits in the middle."""
    return np.linspace(0.0, 1.0, n) if n > 1 else np.array([0.5])


def aligned_labels(spring_labels: np.ndarray, shape: tuple[int, int]) -> np.ndarray:
    """Chain labels (R_s, C_s) sampled at the rank positions of a (R, C) grid."""
    rs, cs = spring_labels.shape
    ri = np.rint(_quantiles(shape[0]) * (rs - 1)).astype(int)
    ci = np.rint(_quantiles(shape[1]) * (cs - 1)).astype(int)
    return spring_labels[np.ix_(ri, ci)]
