"""Figures from saved results (matplotlib, headless).

* :func:`plot_phase_grid` — the paper's Fig. 3 style: a grid of small
  load-curve panels over a background shaded by a per-cell value (mean
  curvature by default), diverging colormap centred on linear. Shared with
  ``dnnphase`` for the network phase diagrams.
* :func:`plot_trajectory` — load curve of each block over time (paper Fig. 4,
  right column).
"""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")  # files only; never needs a display

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from matplotlib.colors import Normalize, TwoSlopeNorm  # noqa: E402


def _fmt(v: float) -> str:
    return f"{v:.3g}"


def plot_phase_grid(
    curves: np.ndarray,
    shade: np.ndarray,
    row_values,
    col_values,
    *,
    row_label: str,
    col_label: str,
    shade_label: str,
    title: str,
    diverging: bool = True,
    cmap: str | None = None,
    vlim: tuple[float, float] | None = None,
    reference: bool = True,
    ax_size: float = 0.9,
    flip_cols: bool = False,
):
    """Grid of small load curves over a shaded background.

    curves : (R, C, L+1) mean load curve per cell (NaN cells left blank)
    shade : (R, C) background value per cell
    The first row is drawn on top. ``diverging`` centres the colormap on 0
    (linear load curve) with symmetric limits. ``reference`` draws the straight
    line from the first to the last point of each curve (the linear load
    curve with the same drop). ``flip_cols`` draws the last column on the left.
    Returns the matplotlib Figure.
    """
    curves = np.asarray(curves, dtype=float)
    shade = np.asarray(shade, dtype=float)
    n_r, n_c = shade.shape
    col_order = list(range(n_c))[::-1] if flip_cols else list(range(n_c))
    finite = shade[np.isfinite(shade)]
    if vlim is None:
        if diverging:
            m = float(np.max(np.abs(finite))) if finite.size else 1.0
            vlim = (-m or -1.0, m or 1.0)
        else:
            vlim = (float(finite.min()), float(finite.max())) if finite.size else (0.0, 1.0)
            if vlim[0] == vlim[1]:
                vlim = (vlim[0] - 0.5, vlim[1] + 0.5)
    norm = TwoSlopeNorm(0.0, vlim[0], vlim[1]) if diverging and vlim[0] < 0 < vlim[1] \
        else Normalize(*vlim)
    colormap = plt.get_cmap(cmap or ("RdBu_r" if diverging else "viridis"))

    # Fixed margins in inches around a grid of ax_size-inch panels.
    left_in, right_in, bottom_in, top_in = 1.1, 1.3, 0.8, 0.9
    width = left_in + ax_size * n_c + right_in
    height = bottom_in + ax_size * n_r + top_in
    fig = plt.figure(figsize=(width, height))
    grid = fig.add_gridspec(n_r, n_c, left=left_in / width, right=1 - right_in / width,
                            bottom=bottom_in / height, top=1 - top_in / height,
                            wspace=0.08, hspace=0.08)
    finite_curves = curves[np.isfinite(curves)]
    y_lo, y_hi = (finite_curves.min(), finite_curves.max()) if finite_curves.size else (0, 1)
    pad = 0.05 * (y_hi - y_lo or 1.0)
    for i in range(n_r):
        for jj, j in enumerate(col_order):
            ax = fig.add_subplot(grid[i, jj])
            if np.isfinite(shade[i, j]):
                ax.set_facecolor(colormap(norm(shade[i, j])))
            else:
                ax.set_facecolor("0.85")
            curve = curves[i, j]
            if np.all(np.isfinite(curve)):
                layers = np.arange(curve.size)
                if reference:
                    ax.plot(layers[[0, -1]], curve[[0, -1]], color="0.35", lw=0.6, ls="--")
                ax.plot(layers, curve, color="k", lw=1.1, marker=".", ms=2.5)
            ax.set_ylim(y_lo - pad, y_hi + pad)
            ax.set_xticks([])
            ax.set_yticks([])
            if i == n_r - 1:
                ax.set_xlabel(_fmt(col_values[j]), fontsize=7)
            if jj == 0:
                ax.set_ylabel(_fmt(row_values[i]), fontsize=7, rotation=0, ha="right",
                              va="center")
    fig.supxlabel(col_label, fontsize=10, y=0.15 / height)
    fig.supylabel(row_label, fontsize=10, x=0.1 / width)
    fig.suptitle(title, fontsize=10)
    cax = fig.add_axes([1 - (right_in - 0.25) / width, bottom_in / height, 0.18 / width,
                        ax_size * n_r / height])
    sm = plt.cm.ScalarMappable(norm=norm, cmap=colormap)
    fig.colorbar(sm, cax=cax).set_label(shade_label, fontsize=9)
    return fig


def plot_phase(ds, shade: str = "curvature_scaled"):
    """Fig. 3 style figure of a ``springblock.phase_diagram`` Dataset."""
    row, col = ds["load_curve"].dims[:2]
    mean_curve = ds["load_curve"].mean("seed").values
    value = ds[shade].mean("seed") if "seed" in ds[shade].dims else ds[shade]
    horizon = np.unique(np.round(ds["horizon"].values, 6))
    t_text = f"T = {_fmt(horizon[0])}" if horizon.size == 1 else \
        f"T = {_fmt(horizon.min())}..{_fmt(horizon.max())}"
    title = (f"Spring-block phase diagram: mean load curve of {ds.sizes['seed']} seeds, "
             f"L = {ds.sizes['layer'] - 1}, {t_text}\n(dashed: linear load curve; "
             "blue concave, red convex)")
    return plot_phase_grid(
        mean_curve, value.values, ds[row].values, ds[col].values,
        row_label=_axis_label(ds, row), col_label=_axis_label(ds, col),
        shade_label=f"mean {ds[shade].attrs.get('long_name', shade)}", title=title,
    )


def _axis_label(ds, name: str) -> str:
    label = {"mu_right": "friction mu->", "mu_left": "friction mu<-", "noise": "noise s"}.get(
        name, name.replace("_", " "))
    units = ds[name].attrs.get("units")
    return f"{label} [{units}]" if units and len(units) < 20 else label


def plot_trajectory(ds):
    """Load curve d_l(t) of every block over time, mean over seeds (Fig. 4 right).

    ``ds`` is a ``springblock.simulate`` Dataset made with ``record_every`` > 0.
    """
    if "trajectory" not in ds:
        raise ValueError("this result has no trajectory: simulate with record_every > 0")
    traj = ds["trajectory"].mean("seed")  # (time, layer)
    fig, ax = plt.subplots(figsize=(6.0, 4.0))
    colors = plt.cm.viridis(np.linspace(0, 1, ds.sizes["layer"]))
    for layer in range(ds.sizes["layer"]):
        ax.plot(ds["time"].values, traj.isel(layer=layer).values, color=colors[layer],
                lw=1.2, label=f"d_{layer}")
    ax.set_xlabel("time t = steps x step")
    ax.set_ylabel("load d_l = y - x_l")
    ax.set_title(f"Chain load curve over time (mean of {ds.sizes['seed']} seeds)", fontsize=10)
    ax.legend(fontsize=7, ncol=2, title="layer", title_fontsize=7)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    return fig


def save_figure(fig, path, dpi: int = 130) -> None:
    fig.savefig(path, dpi=dpi)
    plt.close(fig)
