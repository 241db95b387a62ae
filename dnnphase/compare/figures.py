"""Figures of a chain fit over a network grid: residual and parameter maps, the worst fit.

Cells whose estimate sits on a bound of the fit are marked "b", cells whose
interval is unbounded "u": there the number is a limit or a guess, not a
measurement. Imported on demand (matplotlib), not by :mod:`springblock.fit`.
"""

from __future__ import annotations

import numpy as np
import xarray as xr

from phasecore.panels import fmt_value, plt

_MAPS = (("residual", "RMS residual / final drop", "magma_r", False),
         ("chi2_per_dof", "chi^2 per dof (1 = seed noise)", "magma_r", True),
         ("mu_right", "fitted friction mu-> [k y]", "viridis", True),
         ("mu_left", "fitted friction mu<- [k y]", "viridis", True),
         ("noise", "fitted noise s [k y]", "viridis", True),
         ("horizon", "horizon T = c * last epoch", "viridis", True))


def _oriented(fit: xr.Dataset, knob: str, larger_is_noisier: bool) -> xr.Dataset:
    """alpha rows (ReLU on top), knob columns noisier to the right (as the phase diagrams)."""
    return fit.sortby("alpha").sortby(knob, ascending=larger_is_noisier)


def _marks(fit: xr.Dataset, name: str) -> np.ndarray:
    """Per cell: "b" estimate on a bound, "u" interval unbounded, "" otherwise."""
    shape = fit[name].shape
    at = fit[f"{name}_at_bound"].values if f"{name}_at_bound" in fit else np.zeros(shape, bool)
    un = fit[f"{name}_unbounded"].values if f"{name}_unbounded" in fit else np.zeros(shape, bool)
    return np.where(at, "b", np.where(un, "u", ""))


def plot_trajectory_fit_maps(fit: xr.Dataset, knob: str, larger_is_noisier: bool = True):
    """Residual, chi^2 and parameter maps of a :func:`fit_trajectory` Dataset (alpha, knob)."""
    fit = _oriented(fit, knob, larger_is_noisier)
    panels = [p for p in _MAPS if p[0] in fit]
    fig, axes = plt.subplots(1, len(panels), figsize=(3.3 * len(panels),
                                                      0.55 * fit.sizes["alpha"] + 2.4))
    for ax, (name, label, cmap, log) in zip(np.atleast_1d(axes), panels, strict=True):
        values = fit[name].transpose("alpha", knob).values.astype(float)
        shown = np.log10(values) if log else values
        image = ax.imshow(shown, cmap=cmap, aspect="auto")
        marks = _marks(fit, name) if f"{name}_unbounded" in fit else np.full(values.shape, "")
        for (i, j), v in np.ndenumerate(values):
            if np.isfinite(v):
                ax.text(j, i, f"{v:.2g}{marks[i, j]}", ha="center", va="center", fontsize=6,
                        color="0.5")
        ax.set_xticks(range(fit.sizes[knob]), [fmt_value(v) for v in fit[knob].values],
                      rotation=60, fontsize=7)
        ax.set_yticks(range(fit.sizes["alpha"]), [fmt_value(v) for v in fit["alpha"].values],
                      fontsize=7)
        ax.set_xlabel(f"{knob} (noisier to the right)",
                      fontsize=8)
        ax.set_ylabel("alpha (0 = ReLU)", fontsize=8)
        ax.set_title(label + (" (log10 colour)" if log else ""), fontsize=8)
        fig.colorbar(image, ax=ax, fraction=0.05)
    fig.suptitle("Chain fitted to each network's training trajectory (b: on a bound, "
                 "u: interval unbounded)", fontsize=9)
    fig.tight_layout()
    return fig


def plot_worst_fit(fit: xr.Dataset, n_frames: int = 4):
    """The cell with the largest residual: network curves over epochs beside the best chain."""
    flat = fit["residual"].stack(cell=fit["residual"].dims)
    worst = flat.isel(cell=int(np.nanargmax(flat.values)))
    where = {d: worst[d].item() for d in fit["residual"].dims}
    cell = fit.sel(where)
    epochs = cell["epoch"].values
    picks = np.unique(np.linspace(0, len(epochs) - 1, n_frames).round().astype(int))
    fig, ax = plt.subplots(figsize=(5.5, 3.8))
    layers = cell["layer"].values
    for k, e in enumerate(picks):
        colour = plt.get_cmap("viridis")(k / max(1, len(picks) - 1))
        ax.plot(layers, cell["data_curve"].values[e], "o-", color=colour, ms=3,
                label=f"network, epoch {fmt_value(epochs[e])}")
        ax.plot(layers, cell["fit_curve"].values[e], "--", color=colour, lw=1.2)
    ax.set_xlabel("layer")
    ax.set_ylabel("load curve (network units)")
    title = ", ".join(f"{d} {fmt_value(v)}" for d, v in where.items())
    ax.set_title(f"worst fit: {title}; residual {float(cell['residual']):.3f} "
                 "(dashed: chain)", fontsize=8)
    ax.legend(fontsize=6)
    fig.tight_layout()
    return fig
