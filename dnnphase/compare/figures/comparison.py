"""Figures of the comparison: networks beside the chain, and the chain fitted to networks.

* :func:`plot_side_by_side` — network and chain phase diagrams on one colour scale;
* :func:`plot_accuracy_vs_curvature` — test accuracy of every model vs curvature;
* :func:`plot_fit` — the fitted chain parameters over the network grid, for a
  final-curve fit (:func:`plot_fit_maps`) or a trajectory fit
  (:func:`plot_trajectory_fit_maps`);
* :func:`plot_worst_fit` — the worst-fitted cell of a trajectory fit beside its chain;
* :func:`plot_dynamics` — network load curves over training vs the fitted chain over time.

Every map is drawn the way round of the phase diagrams: ReLU (alpha = 0) on top,
noisier to the right. Cells whose estimate sits on a bound of the fit are marked
"b", cells whose interval is unbounded "u": there the number is a limit or a
guess, not a measurement.
"""

from __future__ import annotations

import json

import numpy as np
import xarray as xr

from dnnphase import knobs
from dnnphase.compare.comparator.alignment import chain_axes
from dnnphase.compare.comparator.report import disagreement
from dnnphase.compare.comparator.words import where
from dnnphase.defaults import MEASURE
from dnnphase.sweeps.plotting import normalised, sweep_panels
from phasecore.loadcurve import PHASE_TOLERANCE, phase_label
from phasecore.panels import (
    PhasePanel,
    axis_label,
    fmt_value,
    plot_phase_grid,
    plt,
    symmetric_limit,
)
from springblock.config import ChainConfig

__all__ = ["chain_setting", "plot_accuracy_vs_curvature", "plot_dynamics", "plot_fit",
           "plot_side_by_side", "plot_trajectory_fit_maps", "plot_worst_fit"]

# --- networks beside the chain --------------------------------------------------------


def plot_side_by_side(spring, network, measure: str = MEASURE,
                      tolerance: float = PHASE_TOLERANCE):
    """Network (Fig. 1 style) and chain (Fig. 3 style) diagrams, same colour scale.

    Both panels are shaded by the seed-mean scale-free curvature on one
    symmetric scale, with their concave / linear / convex boundaries drawn. Where the
    chain's curvature changes the other way from the networks' (along friction /
    nonlinearity in a column, along noise in a row, at the same rank position:
    :func:`dnnphase.compare.comparator.report.disagreement`) the cells are outlined in both panels.
    """
    net = sweep_panels(network, measure, tolerance)[1]
    net_marked, chain_marked, label = disagreement_marks(spring, network, measure)
    net.marked, net.marked_label = net_marked, label
    row, col = chain_axes(spring)  # friction, noise
    mean = spring.mean("seed").transpose(row, col, ...).sortby(row).sortby(col)
    chain_curv = mean["curvature_scaled"].values
    chain = PhasePanel(
        normalised(mean["load_curve"].values), chain_curv,
        mean[row].values, mean[col].values, row_label=axis_label(spring, row) + " (more on top)",
        col_label=axis_label(spring, col) + " (noisier to the right)",
        shade_label="mean scale-free curvature", boundary=phase_label(chain_curv, tolerance),
        title=f"spring-block chain (T = {fmt_value(float(spring['horizon'].mean()))}"
              f"{chain_setting(spring)})",
        flip_rows=True, marked=chain_marked, marked_label=label,
    )
    m = max(symmetric_limit(net.shade[net.separates]),  # each panel's own fence,
            symmetric_limit(chain_curv))  # cells that do not separate left out
    net.vlim = chain.vlim = (-m, m)  # cells beyond it saturate (the colour bar's arrows)
    n_seeds = network.sizes["seed"]
    net.title = f"networks ({network.attrs['knob']}, {n_seeds} seed{'s' if n_seeds != 1 else ''})"
    title = ("Networks vs spring-block chain: normalised load curves over scale-free curvature "
             f"(same colour scale; thick lines: phase boundaries, linear band +-{tolerance:g})")
    return plot_phase_grid([net, chain], title=title)


def chain_setting(spring) -> str:
    """What the chain's title should say besides T: ", mu<- = 2 mu->" or ", mu<- = 0.06",
    and ", noise bounded at 1 SD" (read from the stored configuration; "" if none)."""
    try:
        config = json.loads(spring.attrs.get("config", "{}"))
    except ValueError:
        return ""
    base, axes = config.get("base", {}), {config.get("rows", [None])[0],
                                          config.get("cols", [None])[0]}
    parts = []
    if config.get("mu_left_ratio") is not None:
        parts.append(f"mu<- = {fmt_value(config['mu_left_ratio'])} mu->")
    elif "mu_left" not in axes and base.get("mu_left") is not None:
        parts.append(f"mu<- = {fmt_value(base['mu_left'])}")
    elif "mu_left" not in axes and "mu_left" in base:  # None: mu<- follows mu->
        parts.append("mu<- = mu->")
    if "mu_right" not in axes and base.get("mu_right") is not None:
        parts.append(f"mu-> = {fmt_value(base['mu_right'])}")
    if base.get("noise_dist") == "truncated":
        bound = base.get("truncation", ChainConfig.truncation)  # its default: the field's
        parts.append(f"noise bounded at {fmt_value(bound)} SD")
    return "".join(f", {part}" for part in parts)


def disagreement_marks(spring, network, measure: str = MEASURE):
    """Cells to outline in :func:`plot_side_by_side`: (network (alpha ascending, knob
    ascending), chain (friction, noise ascending), legend text) — the panels' own order.

    A cell is marked where its column's sign of curvature's change along nonlinearity,
    or its row's along noise, is opposite to the other system's at the same rank
    position (:func:`dnnphase.compare.comparator.report.disagreement`).
    """
    maps = disagreement(spring, network, measure)
    knob = network.attrs["knob"]
    net = maps["disagreement"]
    net = net.sortby(net["alpha"]).sortby(net[knob]).values > 0
    chain = maps["spring_disagreement"].values > 0  # oriented = the panel's order
    return net, chain, _marks_label(maps, knob)


def _marks_label(maps: xr.Dataset, knob: str) -> str:
    """The legend text of the outlined cells: per direction with opposite lines, how the
    chain's curvature changes there, and how many lines of each grid."""
    verb = {1.0: "rises", -1.0: "falls"}
    parts = []
    for along, bit, line, chain_axis, chain_more, net_more in (
            ("nonlinearity", 1, "column", "chain_noise", "friction", "nonlinearity"),
            ("noise", 2, "row", "friction", "noise", knob)):
        across = 0 if line == "column" else 1
        chain_off = (maps["spring_disagreement"].values & bit).any(axis=across)
        net_off = (maps["disagreement"].values & bit).any(axis=across)
        if not (chain_off.any() or net_off.any()):
            continue
        signs = maps[f"spring_sign_along_{along}"].values
        values, name = maps[chain_axis].values, chain_axis.replace("chain_", "")
        chain_words = ", ".join(
            f"{verb[v]} with {chain_more} at {where(chain_off & (signs == v), values, name)}"
            for v in (1.0, -1.0) if (chain_off & (signs == v)).any())
        parts.append(f"{line}s: the chain's curvature {chain_words}, the networks' the other "
                     f"way with {net_more} ({int(net_off.sum())} of {net_off.size} network, "
                     f"{int(chain_off.sum())} of {chain_off.size} chain {line}s)")
    return ("outlined, x: curvature changes the opposite way in chain and networks at the same "
            "rank position\n" + "\n".join(parts))


def plot_accuracy_vs_curvature(network, report, measure: str = MEASURE):
    """Test accuracy against scale-free curvature: every model, binned means, the peak."""
    curv = network["curvature_scaled"].sel(measure=measure)
    acc = network["test_accuracy"]
    fig, ax = plt.subplots(figsize=(8.6, 4.4))  # the legend beside the points, not on them
    alphas = network["alpha"].values
    colours = plt.cm.plasma(np.linspace(0.1, 0.85, alphas.size))
    for k, a in enumerate(alphas):
        ax.scatter(curv.sel(alpha=a).values.ravel(), acc.sel(alpha=a).values.ravel(), s=12,
                   color=colours[k], alpha=0.7, label=f"alpha = {a:g}")
    ax.plot(report["accuracy_bin_curvature"], report["accuracy_bin_mean"], "k-o", ms=4,
            lw=1.5, label="mean of 8 equal-count bins")
    a = report.attrs
    ax.axvspan(a["accuracy_peak_low"], a["accuracy_peak_high"], color="0.6", alpha=0.25,
               label=f"quadratic peak {a['accuracy_peak_curvature']:+.2f}, 95% interval")
    ax.axvline(a["accuracy_peak_curvature"], color="0.3", lw=1)
    if "accuracy_binned_peak_curvature" in a:  # reports from before the bins have none
        b = a["accuracy_binned_peak_curvature"]
        ax.errorbar([b], [np.nanmax(report["accuracy_bin_mean"])], ms=9, mfc="none",
                    xerr=[[b - a["accuracy_binned_peak_low"]],
                          [a["accuracy_binned_peak_high"] - b]], fmt="s", color="C3",
                    capsize=3, lw=1.2, label=f"best bin {b:+.2f}, 95% interval")
    ax.axvline(0.0, color="k", lw=0.6, ls=":")
    title = "Do linear load curves generalise best? (intervals resample cells)"
    left_out = a.get("accuracy_fit_excluded", 0)
    if left_out:  # far-out curvatures would squeeze every other model into a sliver
        low, high = a["accuracy_fit_low"], a["accuracy_fit_high"]
        ax.set_xlim(low - 0.05 * (high - low), high + 0.05 * (high - low))
        title += (f"\n{left_out} model(s) with curvature outside {low:+.1f} .. {high:+.1f} "
                  "not shown, not fitted")
    ax.set_xlabel(f"scale-free curvature of the {measure} load curve (< 0 concave, > 0 convex)")
    ax.set_ylabel("test accuracy")
    ax.set_title(title, fontsize=9)
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    return fig


# --- the chain fitted to every network cell -------------------------------------------


def plot_fit(fit: xr.Dataset, knob: str, larger_is_noisier: bool = True):
    """The maps of a chain fit over the network grid (alpha, knob), whichever kind it is.

    A trajectory fit (:func:`dnnphase.compare.fit_chain` with ``trajectory=True``;
    it has a per-epoch ``frame_residual``) gets :func:`plot_trajectory_fit_maps`,
    a final-curve fit :func:`plot_fit_maps`.
    """
    draw = plot_trajectory_fit_maps if "frame_residual" in fit else plot_fit_maps
    return draw(fit, knob, larger_is_noisier)


def plot_fit_maps(fit, knob: str, larger_is_noisier: bool = True):
    """Fitted chain parameters over the network grid (alpha rows, knob columns).

    ``fit``: a final-curve fit (:func:`dnnphase.compare.fit_chain`) with dims
    (alpha, knob), drawn the way round of the phase diagrams: ReLU on top,
    noisier to the right. Panels: effective force F_eff, mu->, s (each with its
    standard error; "b": the estimate sits on a bound of the fit) and the residual.
    """
    fit = fit.sortby("alpha").sortby(knob, ascending=larger_is_noisier)
    panels = [("effective_force", "effective force F_eff [k y]\n(> 0 concave, < 0 convex)",
               "RdBu"),
              ("mu_right", "fitted friction mu-> [k y]\n(+- standard error)", "viridis"),
              ("noise", "fitted noise s [k y]\n(+- standard error)", "viridis"),
              ("residual", "RMS residual (normalised curves)", "magma_r")]
    fig, axes = plt.subplots(1, 4, figsize=(4.0 * 4, 0.7 * fit.sizes["alpha"] + 2.8))
    for ax, (name, label, cmap) in zip(axes, panels, strict=True):
        values = fit[name].transpose("alpha", knob).values
        finite = values[np.isfinite(values)]
        kwargs = {}
        if name == "effective_force":
            m = float(np.abs(finite).max()) if finite.size else 0.0
            kwargs = dict(vmin=-(m or 1.0), vmax=m or 1.0)
        elif finite.size and np.ptp(finite) == 0:  # one value everywhere: a colour, no scale
            half = max(abs(float(finite[0])), 1e-3)
            kwargs = dict(vmin=finite[0] - half, vmax=finite[0] + half)
        image = ax.imshow(values, cmap=cmap, aspect="auto", **kwargs)
        for (i, j), text in np.ndenumerate(_cell_texts(fit, name, knob)):
            if text:
                ax.text(j, i, text, ha="center", va="center", fontsize=6,
                        color=_ink(image, values[i, j]))
        ax.set_xticks(range(fit.sizes[knob]), [fmt_value(v) for v in fit[knob].values],
                      rotation=60, fontsize=7)
        ax.set_yticks(range(fit.sizes["alpha"]), [fmt_value(v) for v in fit["alpha"].values],
                      fontsize=7)
        ax.set_xlabel(knobs.label(knob) + " (noisier to the right)", fontsize=8)
        ax.set_ylabel("alpha (0 = ReLU)", fontsize=8)
        ax.set_title(label, fontsize=9)
        fig.colorbar(image, ax=ax, fraction=0.05)
    fig.suptitle(f"Spring-block chain fitted to each network cell (L = {fit.attrs.get('blocks')}, "
                 f"T = {fmt_value(fit.attrs.get('horizon', float('nan')))}, "
                 f"mu<- = {fit.attrs.get('mu_left_ratio')} mu->; b: on a bound of the fit)",
                 fontsize=10)
    fig.tight_layout()
    return fig


def _cell_texts(fit, name: str, knob: str) -> np.ndarray:
    """Per cell: the value, "+-se" below it where known, "b" where it sits on a bound."""
    values = fit[name].transpose("alpha", knob).values
    se = fit[f"{name}_se"].transpose("alpha", knob).values if f"{name}_se" in fit else None
    bound = (fit[f"{name}_at_bound"].transpose("alpha", knob).values
             if f"{name}_at_bound" in fit else np.zeros(values.shape, bool))
    texts = np.full(values.shape, "", dtype=object)
    for (i, j), v in np.ndenumerate(values):
        if not np.isfinite(v):
            continue
        texts[i, j] = f"{v:.2g}{'b' if bound[i, j] else ''}"
        if se is not None and np.isfinite(se[i, j]):
            texts[i, j] += f"\n+-{se[i, j]:.2g}"
    return texts


_MAPS = (("residual", "RMS residual / final drop", "magma_r", False),
         ("chi2_per_dof", "chi^2 per dof (1 = seed noise)", "magma_r", True),
         ("mu_right", "fitted friction mu-> [k y]", "viridis", True),
         ("mu_left", "fitted friction mu<- [k y]", "viridis", True),
         ("noise", "fitted noise s [k y]", "viridis", True),
         ("horizon", "horizon T = c * last epoch", "viridis", True),
         ("total_drop", "network's total drop b / final drop", "viridis", True))
#: The maps that are a measure of fit, drawn for every cell (the others only where the chain
#: explains the cell: a misfit's parameters are not measurements).
_FIT_QUALITY = ("residual", "chi2_per_dof")


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
    """Residual, chi^2 and parameter maps of a :func:`fit_trajectory` Dataset (alpha, knob).

    Parameters are drawn only in the cells the chain explains to within their seed noise
    (``acceptable``; the others grey); with none, only the residual and chi^2 maps.
    """
    fit = _oriented(fit, knob, larger_is_noisier)
    explained = (fit["acceptable"].transpose("alpha", knob).values if "acceptable" in fit
                 else np.ones((fit.sizes["alpha"], fit.sizes[knob]), bool))
    panels = [p for p in _MAPS if p[0] in fit and (p[0] in _FIT_QUALITY or explained.any())]
    fig, axes = plt.subplots(1, len(panels), figsize=(3.3 * max(len(panels), 3),
                                                      0.55 * fit.sizes["alpha"] + 2.4))
    for ax, (name, label, cmap, log) in zip(np.atleast_1d(axes), panels, strict=True):
        values = fit[name].transpose("alpha", knob).values.astype(float)
        if name not in _FIT_QUALITY:
            values = np.where(explained, values, np.nan)
        shown = np.log10(values) if log else values
        ax.set_facecolor("0.88")  # cells left out: the chain does not fit them
        image = ax.imshow(shown, cmap=cmap, aspect="auto")
        marks = _marks(fit, name) if f"{name}_unbounded" in fit else np.full(values.shape, "")
        for (i, j), v in np.ndenumerate(values):
            if np.isfinite(v):
                ax.text(j, i, f"{v:.2g}{marks[i, j]}", ha="center", va="center", fontsize=6,
                        color=_ink(image, shown[i, j]))
        ax.set_xticks(range(fit.sizes[knob]), [fmt_value(v) for v in fit[knob].values],
                      rotation=60, fontsize=7)
        ax.set_yticks(range(fit.sizes["alpha"]), [fmt_value(v) for v in fit["alpha"].values],
                      fontsize=7)
        ax.set_xlabel(f"{knob} (noisier to the right)",
                      fontsize=8)
        ax.set_ylabel("alpha (0 = ReLU)", fontsize=8)
        ax.set_title(label + (" (log10 colour)" if log else ""), fontsize=8)
        fig.colorbar(image, ax=ax, fraction=0.05)
    if "acceptable" not in fit:
        note = ""
    elif _threshold(fit) == "n/a":
        note = ("no seed noise to judge the fit by (one seed): parameters in every fitted "
                "cell; ")
    elif explained.any():
        note = (f"parameters only where {_threshold(fit)} (grey: not explained to within the "
                f"seed noise, {int((~explained).sum())} of {explained.size} cells); ")
    else:
        note = (f"no cell has {_threshold(fit)}: the chain explains none to within its seed "
                "noise,\nso no parameter is shown; ")
    fig.suptitle("Chain fitted to each network's training trajectory\n" + note
                 + "b: on a bound, u: interval unbounded", fontsize=9)
    fig.tight_layout()
    return fig


def _ink(image, value: float) -> str:
    """Text colour readable on ``image``'s colour at ``value``: light on dark, dark on light."""
    shade = image.cmap(image.norm(value))[:3]
    return "0.95" if np.dot(shade, [0.3, 0.59, 0.11]) < 0.5 else "0.05"


def _threshold(fit: xr.Dataset) -> str:
    """"chi2/dof <= 2", read off the fit's ``acceptable`` variable."""
    return fit["acceptable"].attrs.get("long_name", "chi2/dof small").split(":")[0]


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


# --- training dynamics ----------------------------------------------------------------


def plot_dynamics(network_epochs, chain_times, cells):
    """Network load curves over epochs beside the fitted chain over time (as the paper's
    Fig. 4 draws them; its own three settings: ``scripts/fig4_dynamics.py``).

    network_epochs : list of (epochs (E,), curves (E, L+1)[, test curves (E, L+1)])
        per cell; test curves (the sweep's ``load_curve_epochs_test``) are drawn
        dashed in their epoch's colour, scaled as the training curves
    chain_times : list of (times (R,), curves (R, L+1)) per cell
    cells : list of titles. Curves are normalised to start 1, end 0 at the
    final time, so shapes compare; colour runs from early (light) to late.
    """
    from matplotlib.lines import Line2D

    n = len(cells)
    fig, axes = plt.subplots(2, n, figsize=(3.4 * n, 6.2), squeeze=False)
    for k, title in enumerate(cells):
        net = tuple(network_epochs[k])
        test = net[2] if len(net) > 2 else None
        for row, (times, curves, unit, dashed) in enumerate(
                ((*net[:2], "epoch", test), (*chain_times[k], "time", None))):
            ax = axes[row, k]
            curves = np.asarray(curves, dtype=float)
            final = curves[-1]
            drop = final[0] - final[-1]
            scaled = (curves - final[-1]) / drop if abs(drop) > 1e-12 else curves
            colours = plt.cm.viridis(np.linspace(0.9, 0.0, len(times)))
            for c, col in zip(scaled, colours, strict=True):
                ax.plot(np.arange(c.size), c, color=col, lw=1.0)
            if dashed is not None and np.isfinite(dashed).any():
                dashed = np.asarray(dashed, dtype=float)
                dashed = (dashed - final[-1]) / drop if abs(drop) > 1e-12 else dashed
                for c, col in zip(dashed, colours, strict=True):
                    ax.plot(np.arange(c.size), c, color=col, lw=1.0, ls="--")
                ax.legend(handles=[Line2D([], [], color="0.3", lw=1.0, ls="--",
                                          label="dashed: test set")], fontsize=6)
            ax.set_title(f"{title}\n{'network' if row == 0 else 'fitted chain'}: "
                         f"{unit} {times[0]:g} (yellow) .. {times[-1]:g} (purple)", fontsize=8)
            ax.set_xlabel("layer" if row == 0 else "block", fontsize=8)
            ax.set_ylabel("load (normalised to the final drop)", fontsize=7)
            ax.grid(alpha=0.3)
    fig.suptitle("Dynamics: network load curves during training vs the chain's over time",
                 fontsize=10)
    fig.tight_layout()
    return fig
