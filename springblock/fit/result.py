"""The result of a final-curve fit and its labelled xarray form."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import xarray as xr

from phasecore.checks import require
from phasecore.results import provenance

__all__ = ["FitResult"]


@dataclass
class FitResult:
    """Fitted chain parameters for load curves of leading shape (...).

    Forces are in units of k y, y = 1.

    Parameters
    ----------
    mu_right, mu_left, noise : numpy.ndarray, (...)  [force, k y]
        The fitted mu->, mu<- (= ``mu_left_ratio`` * mu->) and s.
    residual : numpy.ndarray, (...)
        RMS over the L+1 layers of the (data - chain) normalised curves; from simulation
        where ``refined``.
    effective_force : numpy.ndarray, (...)  [force, k y]
        F_eff of the data (:func:`springblock.fit.effective_force`).
    effective_force_residual : numpy.ndarray, (...)
        The RMS misfit of the equal-force chain of ``effective_force``.
    mu_right_se, noise_se : numpy.ndarray, (...)  [force, k y]
        Local Gauss-Newton standard errors; NaN for a fixed parameter, inf where the curve
        does not depend on it. A guide to identifiability, not a calibrated interval.
    curve, data : numpy.ndarray, (..., L+1)
        The fitted chain's and the input's normalised curves.
    refined : numpy.ndarray of bool, (...)
        Whether the simulation refinement changed the fit.
    blocks : int
        L, the chain's blocks.
    horizon : float  [time]
        T, the time at which the chain is observed.
    modulus : float  [force/length]
        k.
    mu_left_ratio : float
        mu<- / mu->.
    step : float  [time]
        eta, the simulation's time step (of the refinement).
    mu_right_at_bound, noise_at_bound : numpy.ndarray of bool, (...), optional
        The estimate sits on a bound of the fit (its value is then a limit, not an
        estimate).
    settings : dict, default {}
        The fit's other settings, kept as the result Dataset's attributes.
    """

    mu_right: np.ndarray
    mu_left: np.ndarray
    noise: np.ndarray
    residual: np.ndarray
    effective_force: np.ndarray
    effective_force_residual: np.ndarray
    mu_right_se: np.ndarray
    noise_se: np.ndarray
    curve: np.ndarray
    data: np.ndarray
    refined: np.ndarray
    blocks: int
    horizon: float
    modulus: float
    mu_left_ratio: float
    step: float
    mu_right_at_bound: np.ndarray | None = None
    noise_at_bound: np.ndarray | None = None
    settings: dict = field(default_factory=dict)

    _ATTRS = {
        "mu_right": ("fitted right friction mu->", "k y"),
        "mu_left": ("left friction mu<- = ratio * mu->", "k y"),
        "noise": ("fitted per-step force noise s", "k y"),
        "residual": ("RMS misfit of normalised load curves", "1"),
        "effective_force": ("effective force F_eff of the best equal-force chain", "k y"),
        "effective_force_residual": ("RMS misfit of the equal-force chain", "1"),
        "mu_right_se": ("standard error of mu-> (local, Gauss-Newton)", "k y"),
        "noise_se": ("standard error of s (local, Gauss-Newton)", "k y"),
        "mu_right_at_bound": ("mu-> sits on a bound of the fit", "1"),
        "noise_at_bound": ("s sits on a bound of the fit", "1"),
        "refined": ("fit refined by simulation", "1"),
    }

    def to_dataset(self, dims: Sequence[str] | None = None, coords: dict | None = None,
                   layer_dim: str = "layer") -> xr.Dataset:
        """Labelled result: one variable per field over ``dims`` (+ ``layer_dim``).

        ``dims`` names the leading axes (default ``dim_0, dim_1, ...``);
        ``coords`` is passed to :class:`xarray.Dataset`, e.g.
        ``{"alpha": ..., "dropout": ...}`` of a network sweep. The fixed
        settings and provenance are attributes.

        Parameters
        ----------
        dims : sequence of str, optional
            Names of the leading axes (default ``dim_0, dim_1, ...``).
        coords : dict, optional
            Coordinates passed to :class:`xarray.Dataset`.
        layer_dim : str, default "layer"
            The name of the curves' last axis.

        Returns
        -------
        xarray.Dataset
            One variable per field over ``dims`` (the curves over ``layer_dim`` too); the fixed
            settings and provenance in its attributes.
        """
        lead = self.mu_right.shape
        dims = [f"dim_{i}" for i in range(len(lead))] if dims is None else list(dims)
        require(len(dims) == len(lead), "dims", f"{len(lead)} names of the leading axes {lead}",
                dims)
        data_vars = {}
        for name, (long_name, units) in self._ATTRS.items():
            value = getattr(self, name)
            if value is not None:
                data_vars[name] = (dims, value, {"long_name": long_name, "units": units})
        data_vars["fit_curve"] = (dims + [layer_dim], self.curve,
                                  {"long_name": "fitted chain load curve, normalised"})
        data_vars["data_normalised"] = (dims + [layer_dim], self.data,
                                        {"long_name": "input load curve, normalised"})
        all_coords = {layer_dim: np.arange(self.curve.shape[-1])}
        all_coords.update(coords or {})
        ds = xr.Dataset(data_vars, coords=all_coords)
        settings = {"blocks": self.blocks, "horizon": self.horizon, "modulus": self.modulus,
                    "target": 1.0, "mu_left_ratio": self.mu_left_ratio, "step": self.step,
                    **{k: v for k, v in self.settings.items()
                       if isinstance(v, (int, float, str))}}
        ds.attrs.update(provenance("springblock.fit.fit_spring", settings))
        ds.attrs.update(settings)
        ds.attrs["model"] = ("overdamped spring-block chain, Gaussian noise, mean-drift theory "
                             "(springblock.fit)")
        ds.attrs["note"] = ("F_eff is identifiable from a shape; (mu_right, noise) only up to "
                            "the standard errors given: read them together. Gaussian-noise fits "
                            "are finite-horizon objects: every value holds at horizon T.")
        return ds
