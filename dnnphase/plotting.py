"""Figures of network sweeps (paper Fig. 1 style), drawn with springblock's panels."""

from __future__ import annotations

import numpy as np

from dnnphase import knobs
from phasecore.checks import is_finite, require
from phasecore.loadcurve import PHASE_TOLERANCE, phase_label
from phasecore.panels import (
    PhasePanel,
    axis_label,
    fmt_value,
    plot_phase_grid,
    save_figure,
    symmetric_limit,
)

__all__ = ["normalised", "sweep_panels", "plot_sweep", "save_figure"]



def normalised(curves: np.ndarray) -> np.ndarray:
    """Scale load curves (..., L+1) to start at 1 and end at 0 (NaN if no drop)."""
    curves = np.asarray(curves, dtype=float)
    drop = curves[..., :1] - curves[..., -1:]
    with np.errstate(invalid="ignore", divide="ignore"):
        out = (curves - curves[..., -1:]) / drop
    return np.where(np.abs(drop) > 1e-12, out, np.nan)


def sweep_panels(ds, measure: str = "trace_ratio", tolerance: float = PHASE_TOLERANCE):
    """Accuracy- and curvature-shaded panels of a ``dnnphase.sweep`` Dataset.

    Rows: alpha, ReLU (alpha = 0, most nonlinear) on top. Columns: the knob,
    noisier to the right — the same way round as the chain beside it
    (:func:`plot_side_by_side`: most friction on top, most noise to the right).
    """
    require(is_finite(tolerance) and tolerance >= 0, "tolerance", "a finite number >= 0",
            tolerance)
    knob = ds.attrs["knob"]
    sub = ds.sortby("alpha").sel(measure=measure)
    curves = normalised(sub["load_curve"].mean("seed", skipna=True).values)
    curv = sub["curvature_scaled"].mean("seed", skipna=True).values
    acc = sub["test_accuracy"].mean("seed", skipna=True).values
    common = dict(row_values=sub["alpha"].values, col_values=sub[knob].values,
                  row_label="LeakyReLU slope alpha (0 = ReLU)",
                  col_label=knobs.label(knob) + " (noisier to the right)",
                  flip_cols=not knobs.larger_is_noisier(ds), boundary=phase_label(curv, tolerance))
    n_seeds = ds.sizes["seed"]
    seeds = f"{n_seeds} seed{'s' if n_seeds != 1 else ''}"
    return [
        PhasePanel(curves, acc, shade_label="mean test accuracy", diverging=False,
                   cmap="viridis", title=f"test accuracy ({seeds})", **common),
        PhasePanel(curves, curv, shade_label=f"mean scale-free curvature ({measure})",
                   title="load-curve curvature (blue concave, red convex)", **common),
    ]


def plot_sweep(ds, measure: str = "trace_ratio", tolerance: float = PHASE_TOLERANCE):
    """Two panels side by side: shading by test accuracy and by curvature."""
    data = ds.attrs.get("data", "")
    title = (f"Network phase diagram: {measure} load curves (normalised to 1 -> 0), "
             f"knob = {ds.attrs['knob']}, depth {ds.sizes['layer'] - 1}"
             + (f"\n{_dataset_name(data)}" if data else ""))
    return plot_phase_grid(sweep_panels(ds, measure, tolerance), title=title)


def _dataset_name(info_json: str) -> str:
    import json

    try:
        info = json.loads(info_json)
    except ValueError:
        return ""
    return f"data: {info.get('source', info.get('name', ''))}"


def plot_side_by_side(spring, network, measure: str = "trace_ratio",
                      tolerance: float = PHASE_TOLERANCE):
    """Network (Fig. 1 style) and chain (Fig. 3 style) diagrams, same colour scale.

    Both panels are shaded by the seed-mean scale-free curvature on one
    symmetric scale, with their concave / linear / convex boundaries drawn.
    """
    from dnnphase.compare.report import chain_axes

    net = sweep_panels(network, measure, tolerance)[1]
    row, col = chain_axes(spring)  # friction, noise
    mean = spring.mean("seed").transpose(row, col, ...).sortby(row).sortby(col)
    chain_curv = mean["curvature_scaled"].values
    chain = PhasePanel(
        normalised(mean["load_curve"].values), chain_curv,
        mean[row].values, mean[col].values, row_label=axis_label(spring, row) + " (more on top)",
        col_label=axis_label(spring, col) + " (noisier to the right)",
        shade_label="mean scale-free curvature", boundary=phase_label(chain_curv, tolerance),
        title=f"spring-block chain (T = {fmt_value(float(spring['horizon'].mean()))})",
        flip_rows=True,
    )
    m = max(symmetric_limit(net.shade), symmetric_limit(chain_curv))  # each panel's own fence
    net.vlim = chain.vlim = (-m, m)  # cells beyond it saturate (the colour bar's arrows)
    n_seeds = network.sizes["seed"]
    net.title = f"networks ({network.attrs['knob']}, {n_seeds} seed{'s' if n_seeds != 1 else ''})"
    title = ("Networks vs spring-block chain: normalised load curves over scale-free curvature "
             f"(same colour scale; thick lines: phase boundaries, linear band +-{tolerance:g})")
    return plot_phase_grid([net, chain], title=title)


def plot_accuracy_vs_curvature(network, report, measure: str = "trace_ratio"):
    """Test accuracy against scale-free curvature: every model, binned means, the peak."""
    import matplotlib.pyplot as plt

    curv = network["curvature_scaled"].sel(measure=measure)
    acc = network["test_accuracy"]
    fig, ax = plt.subplots(figsize=(6.4, 4.4))
    alphas = network["alpha"].values
    colours = plt.cm.plasma(np.linspace(0.1, 0.85, alphas.size))
    for k, a in enumerate(alphas):
        ax.scatter(curv.sel(alpha=a).values.ravel(), acc.sel(alpha=a).values.ravel(), s=12,
                   color=colours[k], alpha=0.7, label=f"alpha = {a:g}")
    ax.plot(report["accuracy_bin_curvature"], report["accuracy_bin_mean"], "k-o", ms=4,
            lw=1.5, label="binned mean")
    a = report.attrs
    ax.axvspan(a["accuracy_peak_low"], a["accuracy_peak_high"], color="0.6", alpha=0.25,
               label="peak, 95% bootstrap")
    ax.axvline(a["accuracy_peak_curvature"], color="0.3", lw=1)
    ax.axvline(0.0, color="k", lw=0.6, ls=":")
    left_out = a.get("accuracy_fit_excluded", 0)
    if left_out:  # far-out curvatures would squeeze every other model into a sliver
        low, high = a["accuracy_fit_low"], a["accuracy_fit_high"]
        ax.set_xlim(low - 0.05 * (high - low), high + 0.05 * (high - low))
        ax.text(0.99, 0.01, f"{left_out} model(s) with curvature outside "
                f"{low:+.1f} .. {high:+.1f} not shown, not fitted",
                transform=ax.transAxes, ha="right", va="bottom", fontsize=7)
    ax.set_xlabel(f"scale-free curvature of the {measure} load curve (< 0 concave, > 0 convex)")
    ax.set_ylabel("test accuracy")
    ax.set_title("Do linear load curves generalise best?", fontsize=10)
    ax.legend(fontsize=7, loc="best")
    ax.grid(alpha=0.3)
    fig.tight_layout()
    return fig


def plot_fit_maps(fit, knob: str, larger_is_noisier: bool = True):
    """Fitted chain parameters over the network grid (alpha rows, knob columns).

    ``fit``: a final-curve fit (:func:`dnnphase.compare.fit_chain`) with dims
    (alpha, knob), drawn the way round of the phase diagrams: ReLU on top,
    noisier to the right. Panels: effective force F_eff, mu->, s (each with its
    standard error; "b": the estimate sits on a bound of the fit) and the residual.
    """
    import matplotlib.pyplot as plt

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
                shade = plt.get_cmap(cmap)(image.norm(values[i, j]))[:3]
                ink = "0.95" if np.dot(shade, [0.3, 0.59, 0.11]) < 0.5 else "0.05"
                ax.text(j, i, text, ha="center", va="center", fontsize=6, color=ink)
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


def plot_dynamics(network_epochs, chain_times, cells):
    """Network load curves over epochs beside the fitted chain over time (Fig. 4).

    network_epochs : list of (epochs (E,), curves (E, L+1)) per cell
    chain_times : list of (times (R,), curves (R, L+1)) per cell
    cells : list of titles. Curves are normalised to start 1, end 0 at the
    final time, so shapes compare; colour runs from early (light) to late.
    """
    import matplotlib.pyplot as plt

    n = len(cells)
    fig, axes = plt.subplots(2, n, figsize=(3.4 * n, 6.2), squeeze=False)
    for k, title in enumerate(cells):
        for row, (times, curves, unit) in enumerate(
                ((*network_epochs[k], "epoch"), (*chain_times[k], "time"))):
            ax = axes[row, k]
            curves = np.asarray(curves, dtype=float)
            final = curves[-1]
            drop = final[0] - final[-1]
            scaled = (curves - final[-1]) / drop if abs(drop) > 1e-12 else curves
            colours = plt.cm.viridis(np.linspace(0.9, 0.0, len(times)))
            for c, col in zip(scaled, colours, strict=True):
                ax.plot(np.arange(c.size), c, color=col, lw=1.0)
            ax.set_title(f"{title}\n{'network' if row == 0 else 'fitted chain'}: "
                         f"{unit} {times[0]:g} (yellow) .. {times[-1]:g} (purple)", fontsize=8)
            ax.set_xlabel("layer" if row == 0 else "block", fontsize=8)
            ax.set_ylabel("load (normalised to the final drop)", fontsize=7)
            ax.grid(alpha=0.3)
    fig.suptitle("Dynamics: network load curves during training vs the chain's over time",
                 fontsize=10)
    fig.tight_layout()
    return fig
