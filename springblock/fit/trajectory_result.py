"""The result of a trajectory fit (:func:`springblock.fit.trajectory.fit_trajectory`)."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import xarray as xr

from phasecore.checks import require
from phasecore.results import provenance
from springblock.fit.variants import ChainVariant

__all__ = ["ACCEPTABLE_CHI2", "LEVEL", "NETWORK_PARAMS", "PARAMS", "TrajectoryFit"]

#: The fitted parameters, in this order: right and left friction, noise, time scale; with
#: ``start="network"`` also the network's total drop b (the wall-to-target distance).
PARAMS = ("mu_right", "mu_left", "noise", "time_scale")
NETWORK_PARAMS = PARAMS + ("total_drop",)
#: chi2/dof up to which the chain explains a cell to within its seed noise: only there
#: are parameters given intervals (docs/fit.md, "Which cells does the chain explain?").
ACCEPTABLE_CHI2 = 2.0
#: Level of the intervals.
LEVEL = 0.95


@dataclass
class TrajectoryFit:
    """Result of :func:`fit_trajectory` for curves of leading shape (...).

    Parameters
    ----------
    estimate : numpy.ndarray, (..., P)
        The fit of ``params`` (mu->, mu<-, s, c; from the network's start also b): forces
        in k y, c in time units per epoch, b in units of the final drop.
    low, high : numpy.ndarray, (..., P)
        The 95 % interval of ``estimate``; NaN where the chain does not explain the cell
        (not ``acceptable``).
    unbounded : numpy.ndarray of bool, (..., P)
        The interval reaches a bound of the fit (the data cannot exclude it;
        non-identifiable when both ends do).
    at_bound : numpy.ndarray of bool, (..., P)
        The estimate itself sits on a bound.
    log_se : numpy.ndarray, (..., P)
        Standard errors of the log-parameters.
    residual : numpy.ndarray, (...)
        RMS misfit over all points, in units of the final drop D_0 - D_L (comparable to
        the RMS of normalised curves).
    frame_residual : numpy.ndarray, (..., E)
        ``residual`` per frame.
    chi2_per_dof : numpy.ndarray, (...)
        Weighted misfit per degree of freedom: ~1 when the chain explains the curves to
        within the weights' (seed) noise.
    observations, fitted : numpy.ndarray, (..., E, L+1)
        The network's curves and the best chain's.
    epochs : numpy.ndarray, (E,)
        The epochs fitted.
    blocks : int
        L, the chain's blocks.
    modulus : float  [force/length]
        k.
    bounds : dict, default {}
        Each parameter's (low, high) bounds of the fit.
    params : tuple of str, default ('mu_right', 'mu_left', 'noise', 'time_scale')
        The names of the P parameters.
    start : str, default "rest"
        Where the chain starts: "rest", or "network" (the network's first frame).
    origin : float, default 0.0
        The epoch where the chain starts.
    acceptable : numpy.ndarray of bool, (...), optional
        ``chi2_per_dof <= acceptable_chi2``: the chain explains the cell to within its
        seed noise; without weights (``weighted`` False), every fitted cell.
    acceptable_chi2 : float, default 2.0
        The bound of ``acceptable``.
    variant : springblock.fit.ChainVariant, default ChainVariant()
        The chain (the paper's by default).
    weighted : bool, default True
        Whether the points had weights (seed noise); without, ``chi2_per_dof`` has no noise
        to be judged by.
    """

    estimate: np.ndarray
    low: np.ndarray
    high: np.ndarray
    unbounded: np.ndarray
    at_bound: np.ndarray
    log_se: np.ndarray
    residual: np.ndarray
    frame_residual: np.ndarray
    chi2_per_dof: np.ndarray
    observations: np.ndarray
    fitted: np.ndarray
    epochs: np.ndarray
    blocks: int
    modulus: float
    bounds: dict = field(default_factory=dict)
    params: tuple = PARAMS
    start: str = "rest"
    origin: float = 0.0
    acceptable: np.ndarray | None = None
    acceptable_chi2: float = ACCEPTABLE_CHI2
    variant: ChainVariant = field(default_factory=ChainVariant)
    weighted: bool = True

    @property
    def horizon(self) -> np.ndarray:
        """T = c (e_E - origin) (...), the chain time of the last frame."""
        return self.estimate[..., 3] * (self.epochs[-1] - self.origin)

    def to_dataset(self, dims=None, coords: dict | None = None) -> xr.Dataset:
        """Labelled result: ``<param>``, ``<param>_low/_high/_unbounded/_at_bound`` per cell.

        Parameters
        ----------
        dims : sequence of str, optional
            Names of the leading axes (default ``dim_0, dim_1, ...``).
        coords : dict, optional
            Coordinates passed to :class:`xarray.Dataset`, e.g. ``{"alpha": ..., "dropout": ...}``
            of a network sweep.

        Returns
        -------
        xarray.Dataset
            One variable per parameter and field over ``dims``; the settings and provenance in
            its attributes.
        """
        lead = self.residual.shape
        dims = [f"dim_{i}" for i in range(len(lead))] if dims is None else list(dims)
        require(len(dims) == len(lead), "dims", f"{len(lead)} names of the leading axes {lead}",
                dims)
        units = {"mu_right": "k y", "mu_left": "k y", "noise": "k y",
                 "time_scale": "time / epoch", "total_drop": "final drop D_0 - D_L"}
        data_vars = {}
        for j, name in enumerate(self.params):
            data_vars[name] = (dims, self.estimate[..., j],
                               {"long_name": f"fitted {name}", "units": units[name]})
            data_vars[f"{name}_low"] = (dims, self.low[..., j],
                                        {"long_name": f"{LEVEL:.0%} interval, low end"})
            data_vars[f"{name}_high"] = (dims, self.high[..., j],
                                         {"long_name": f"{LEVEL:.0%} interval, high end"})
            data_vars[f"{name}_unbounded"] = (dims, self.unbounded[..., j],
                                              {"long_name": "interval reaches a bound"})
            data_vars[f"{name}_at_bound"] = (dims, self.at_bound[..., j],
                                             {"long_name": "estimate on a bound"})
            data_vars[f"{name}_log_se"] = (dims, self.log_se[..., j],
                                           {"long_name": f"standard error of log {name}"})
        data_vars["horizon"] = (dims, self.horizon,
                                {"long_name": "T = c * (last epoch - start epoch)"})
        data_vars["acceptable"] = (dims, self.acceptable, {
            "long_name": f"chi2/dof <= {self.acceptable_chi2:g}: the chain explains the cell "
                         "to within its seed noise (intervals only there)" if self.weighted
            else "n/a: no seed noise to judge the misfit by (unweighted: one seed); every "
                 "fitted cell has intervals"})
        data_vars["residual"] = (dims, self.residual,
                                 {"long_name": "RMS misfit / final drop", "units": "1"})
        data_vars["frame_residual"] = (dims + ["epoch"], self.frame_residual,
                                       {"long_name": "RMS misfit / final drop, per frame"})
        data_vars["chi2_per_dof"] = (dims, self.chi2_per_dof,
                                     {"long_name": "weighted misfit per degree of freedom"})
        data_vars["fit_curve"] = (dims + ["epoch", "layer"], self.fitted,
                                  {"long_name": "best chain curves a_e - b x_l(c e)"})
        data_vars["data_curve"] = (dims + ["epoch", "layer"], self.observations,
                                   {"long_name": "network curves fitted (seed means)"})
        all_coords = {"epoch": self.epochs, "layer": np.arange(self.blocks + 1)}
        all_coords.update(coords or {})
        ds = xr.Dataset(data_vars, coords=all_coords)
        settings = {"blocks": self.blocks, "modulus": self.modulus, "level": LEVEL,
                    "start": self.start, "start_epoch": self.origin,
                    "acceptable_chi2": self.acceptable_chi2,
                    **{f"bound_{k}": list(v) for k, v in self.bounds.items()}}
        ds.attrs.update(provenance("springblock.fit.fit_trajectory", settings))
        ds.attrs["model"] = ("mean-field overdamped chain, Gaussian noise, observed at t = "
                             "time_scale * epoch (springblock.fit.fit_trajectory)")
        if not self.variant.neutral:  # the paper chain's files keep their attributes
            ds.attrs["model"] = ("mean-field overdamped chain of the family of "
                                 "springblock.fit.variants: " + self.variant.describe())
            ds.attrs.update({f"variant_{k}": v for k, v in vars(self.variant).items()})
        return ds
