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

    mu_right, mu_left, noise : (...) fitted mu->, mu<- (= ratio * mu->), s.
    residual : (...) RMS over the L+1 layers of (data - chain) normalised
        curves; from simulation where ``refined``.
    effective_force, effective_force_residual : (...) F_eff of the data and
        the RMS misfit of its equal-force chain.
    mu_right_se, noise_se : (...) local Gauss-Newton standard errors; NaN for
        a fixed parameter, inf where the curve does not depend on it. A guide
        to identifiability, not a calibrated interval.
    mu_right_at_bound, noise_at_bound : (...) bool, the estimate sits on a
        bound of the fit (its value is then a limit, not an estimate).
    curve, data : (..., L+1) the fitted chain's and the input's normalised curves.
    refined : (...) bool, whether the simulation refinement changed the fit.
    blocks, horizon, modulus, mu_left_ratio, step : the fixed settings.
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
