"""Figures of the two separation measures side by side (the spring–block paper's SM S4).

* :func:`plot_two_measures` — Fig. S10: per diagram, the seed-mean scale-free curvature of the
  trace ratio and of the fuzziness as two maps on one colour scale, cells whose phase labels
  differ crossed out, and the two curvatures against each other;
* :func:`plot_linear_two_measures` — Fig. S11 (c, d): the linear network's seed-mean load
  curves under each measure, normalised to fall from 1 to 0;
* :func:`plot_equiseparation` — He & Su's Pearson r of the fuzziness curve per cell, with the
  cell each reading picks and each row's best-accuracy cells.

Each takes the output of ``scripts/two_measures.py`` (a Dataset with ``diagram``, ``cell``,
``reading`` and ``setting`` dimensions) or its linear-network run. Maps are drawn the way round
of the phase diagrams: ReLU (alpha = 0) on top, noisier to the right.
"""

from __future__ import annotations

import numpy as np
import xarray as xr

from phasecore.panels import fmt_value, plt

__all__ = ["plot_equiseparation", "plot_linear_two_measures", "plot_two_measures"]

#: The colour scale's half-range of the scale-free curvature (beyond it: the end colours).
LIMIT = 1.0
#: The colour scale of Pearson r: near -1, where the readings choose.
R_LIMITS = (-1.0, -0.9)
MEASURE_TITLES = {"trace_ratio": "trace ratio (Eq. 3)", "fuzziness": "fuzziness (Eq. 9)"}


def _grid(ds: xr.Dataset, diagram: str, name: str) -> np.ndarray:
    """A per-cell variable of one diagram as its (R, C) map, row 0 the largest alpha."""
    one = ds.where(ds["cell_diagram"] == diagram, drop=True)
    rows, cols = one["row"].values.astype(int), one["column"].values.astype(int)
    out = np.full((rows.max() + 1, cols.max() + 1), np.nan)
    out[rows, cols] = one[name].values
    return out


def _axes_of(ds: xr.Dataset, diagram: str) -> tuple[np.ndarray, np.ndarray]:
    """(alphas (R,), knob values (C,)) of a diagram, in map order."""
    one = ds.where(ds["cell_diagram"] == diagram, drop=True)
    rows, cols = one["row"].values.astype(int), one["column"].values.astype(int)
    alphas = np.zeros(rows.max() + 1)
    values = np.zeros(cols.max() + 1)
    alphas[rows], values[cols] = one["alpha"].values, one["knob_value"].values
    return alphas, values


def _map(ax, image: np.ndarray, alphas, values, knob: str, cmap: str = "RdBu_r",
         limits=(-LIMIT, LIMIT)):
    mesh = ax.imshow(image, origin="lower", cmap=cmap, vmin=limits[0], vmax=limits[1],
                     aspect="auto", interpolation="nearest")
    step = max(1, len(values) // 6)
    ax.set_xticks(np.arange(0, len(values), step),
                  [fmt_value(v) for v in values[::step]], fontsize=7)
    ax.set_yticks(np.arange(len(alphas)), [f"{a:g}" for a in alphas], fontsize=7)
    ax.set_xlabel(knob.replace("_", " "), fontsize=8)
    ax.set_ylabel("α", fontsize=8)
    return mesh


def _cross(ax, mask: np.ndarray, **style) -> None:
    rows, cols = np.nonzero(mask)
    ax.plot(cols, rows, "x", color="k", ms=5, mew=1.0, linestyle="none", **style)


def plot_two_measures(ds: xr.Dataset, diagrams: list[str]):
    """Fig. S10 for ``diagrams`` (names along ``ds.diagram``): one row each, the two
    curvature maps and their scatter."""
    fig, axes = plt.subplots(len(diagrams), 3, figsize=(11.5, 2.55 * len(diagrams) + 0.6),
                             layout="constrained", squeeze=False)
    mesh = None
    for i, d in enumerate(diagrams):
        one = ds.sel(diagram=d)
        knob = str(one["knob"].values)
        alphas, values = _axes_of(ds, d)
        maps = {m: _grid(ds, d, f"curvature_{m}") for m in MEASURE_TITLES}
        differ = _grid(ds, d, "label_trace_ratio") != _grid(ds, d, "label_fuzziness")
        differ &= np.isfinite(_grid(ds, d, "label_fuzziness"))
        for k, m in enumerate(MEASURE_TITLES):
            mesh = _map(axes[i, k], maps[m], alphas, values, knob)
            _cross(axes[i, k], differ)
            axes[i, k].set_title(f"{d}: {MEASURE_TITLES[m]}", fontsize=8)
        a, b = maps["trace_ratio"].ravel(), maps["fuzziness"].ravel()
        ax = axes[i, 2]
        ax.axhspan(-0.05, 0.05, color="0.9", lw=0)
        ax.axvspan(-0.05, 0.05, color="0.9", lw=0)
        ax.scatter(np.clip(a, -2, 2), np.clip(b, -2, 2), s=10, c=differ.ravel(),
                   cmap="coolwarm", vmin=0, vmax=1)
        ax.set_xlim(-2.1, 2.1)
        ax.set_ylim(-2.1, 2.1)
        ax.set_xlabel("curvature, trace ratio", fontsize=8)
        ax.set_ylabel("curvature, fuzziness", fontsize=8)
        ax.tick_params(labelsize=7)
        ax.set_title(f"agreement {float(one['agreement']):.2f}, κ {float(one['kappa']):.2f}, "
                     f"ρ {float(one['rho']):.2f}", fontsize=8)
    fig.colorbar(mesh, ax=axes[:, :2], shrink=0.6, extend="both",
                 label="seed-mean scale-free curvature")
    fig.suptitle("Two measures of the same networks (Fig. S10). ×: phase labels differ "
                 "(band ±0.05); scatter clipped to ±2, red: labels differ", fontsize=9)
    return fig


def plot_linear_two_measures(linear: xr.Dataset):
    """Fig. S11 (c, d): per measure, each setting's seed-mean load curve normalised to
    D_0 = 1, D_L = 0, with its seed-mean scale-free curvature."""
    from phasecore.loadcurve import curvature_scaled

    fig, axes = plt.subplots(1, 3, figsize=(13.5, 3.8), layout="constrained")
    layers = linear["layer"].values
    for ax, m in zip(axes[:2], MEASURE_TITLES, strict=True):
        for k, name in enumerate(linear["setting"].values):
            curves = linear["load_curve"].sel(setting=name, measure=m).values  # (S, L+1)
            mean = np.nanmean(curves, axis=0)
            c = np.nanmean(curvature_scaled(curves))
            ax.plot(layers, (mean - mean[-1]) / (mean[0] - mean[-1]), "o-", color=f"C{k}",
                    label=f"{name}: curvature {c:+.2f}")
        ax.plot(layers[[0, -1]], [1, 0], ":", color="0.5", lw=1, label="linear")
        ax.set_xlabel("layer")
        ax.set_ylabel("(D − D_L) / (D_0 − D_L), seed mean")
        ax.set_title(f"linear network (Fig. 5a): {MEASURE_TITLES[m]}", fontsize=9)
        ax.legend(fontsize=7, frameon=False)
    ax = axes[2]
    for k, name in enumerate(linear["setting"].values):
        curves = linear["load_curve"].sel(setting=name, measure="fuzziness").values
        ax.plot(layers[1:], np.nanmean(curves, axis=0)[1:], "o-", color=f"C{k}", label=name)
    d0 = float(np.nanmean(linear["load_curve"].sel(measure="fuzziness").values[..., 0]))
    ax.set_xticks(layers[1:])
    ax.set_xlabel("layer")
    ax.set_ylabel("log Tr(Σ_w Σ_b⁺), seed mean")
    ax.set_title(f"fuzziness from layer 1 (layer 0: {d0:.1f}, i.e. Tr ≈ 0)", fontsize=9)
    ax.legend(fontsize=7, frameon=False)
    return fig


def plot_equiseparation(ds: xr.Dataset, diagrams: list[str], columns: int = 2):
    """He & Su's reading per diagram: the seed-mean Pearson r of the fuzziness curve against
    the layer index in each cell; ○ the row's most linear cell (trace ratio curvature),
    + its cell of r nearest −1, □ its best-accuracy cells."""
    rows = -(-len(diagrams) // columns)
    fig, axes = plt.subplots(rows, columns, figsize=(5.2 * columns, 2.9 * rows + 0.5),
                             layout="constrained", squeeze=False)
    linear, equi = ds["reading"].values[0], ds["reading"].values[1]
    mesh = None
    for ax, d in zip(axes.ravel(), diagrams, strict=False):
        alphas, values = _axes_of(ds, d)
        knob = str(ds.sel(diagram=d)["knob"].values)
        mesh = _map(ax, _grid(ds, d, "r_fuzziness"), alphas, values, knob, cmap="viridis",
                    limits=R_LIMITS)
        best = np.nonzero(_grid(ds, d, "best") > 0)
        ax.plot(best[1], best[0], "s", mfc="none", mec="w", ms=11, mew=1.2, ls="none")
        for reading, marker, colour in ((linear, "o", "r"), (equi, "+", "darkorange")):
            one = ds.where(ds["cell_diagram"] == d, drop=True)
            picked = one["chosen"].sel(reading=reading).values.astype(bool)
            ax.plot(one["column"].values[picked], one["row"].values[picked], marker,
                    mfc="none", mec=colour, color=colour, ms=7, mew=1.5, ls="none")
        hits = ds.sel(diagram=d)["hits"]
        ax.set_title(f"{d}: best cell picked in {int(hits.sel(reading=linear))} (○) vs "
                     f"{int(hits.sel(reading=equi))} (+) of {int(ds.sel(diagram=d)['rows'])}"
                     " rows", fontsize=8)
    for ax in axes.ravel()[len(diagrams):]:
        ax.set_visible(False)
    fig.colorbar(mesh, ax=axes, shrink=0.6, extend="max", label="Pearson r of fuzziness vs layer")
    fig.suptitle("○ most linear cell (trace ratio curvature nearest 0), + equi-separation "
                 "(r nearest −1), □ best test accuracy (ties within 2 SE)", fontsize=9)
    return fig
