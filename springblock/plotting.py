"""Figures of chain results (matplotlib, headless).

* :func:`plot_phase` — a phase diagram in the paper's Fig. 3 style (drawn by
  :func:`phasecore.panels.plot_phase_grid`);
* :func:`plot_trajectory` — load curve of each block over time (paper Fig. 4,
  right column).
"""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np

from phasecore.loadcurve import PHASE_TOLERANCE, phase_label
from phasecore.panels import (
    PhasePanel,
    axis_label,
    fmt_value,
    plot_phase_grid,
    save_figure,
)

__all__ = ["plot_phase", "plot_trajectory", "save_figure"]


def plot_phase(ds, shade: str = "curvature_scaled", tolerance: float = PHASE_TOLERANCE):
    """Fig. 3 style figure of a ``springblock.phase_diagram`` Dataset.

    Thick lines separate concave / linear / convex cells: the mean scale-free
    curvature outside +-``tolerance`` is concave or convex.
    """
    row, col = ds["load_curve"].dims[:2]
    mean_curve = ds["load_curve"].mean("seed").values
    value = ds[shade].mean("seed") if "seed" in ds[shade].dims else ds[shade]
    horizon = np.unique(np.round(ds["horizon"].values, 6))
    t_text = f"T = {fmt_value(horizon[0])}" if horizon.size == 1 else \
        f"T = {fmt_value(horizon.min())}..{fmt_value(horizon.max())}"
    title = (f"Spring-block phase diagram: mean load curve of {ds.sizes['seed']} seeds, "
             f"L = {ds.sizes['layer'] - 1}, {t_text}\n(dashed: linear load curve; "
             "blue concave, red convex)")
    boundary = phase_label(ds["curvature_scaled"].mean("seed").values, tolerance)
    panel = PhasePanel(mean_curve, value.values, ds[row].values, ds[col].values,
                       row_label=axis_label(ds, row), col_label=axis_label(ds, col),
                       shade_label=f"mean {ds[shade].attrs.get('long_name', shade)}",
                       boundary=boundary)
    return plot_phase_grid(panel, title=title)


def plot_trajectory(ds):
    """Load curve d_l(t) of every block over time, mean over seeds (Fig. 4 right).

    ``ds`` is a ``springblock.simulate`` Dataset made with ``record_every`` > 0.
    """
    if "trajectory" not in ds:
        raise ValueError("this result has no trajectory: simulate with record_every > 0")
    traj = ds["trajectory"].mean("seed")  # (time, layer)
    fig, ax = plt.subplots(figsize=(7.0, 4.0))
    colors = plt.cm.viridis(np.linspace(0, 1, ds.sizes["layer"]))
    for layer in range(ds.sizes["layer"]):
        ax.plot(ds["time"].values, traj.isel(layer=layer).values, color=colors[layer],
                lw=1.2, label=f"d_{layer}")
    ax.set_xlabel("time t = steps x step")
    ax.set_ylabel("load d_l = y - x_l")
    n_seeds = ds.sizes["seed"]
    ax.set_title(f"Chain load curve over time (mean of {n_seeds} seed"
                 f"{'s' if n_seeds != 1 else ''})", fontsize=10)
    # outside the axes: inside, it covers the deepest layers' curves
    ax.legend(fontsize=7, title="layer", title_fontsize=7, loc="center left",
              bbox_to_anchor=(1.01, 0.5))
    ax.grid(alpha=0.3)
    fig.tight_layout()
    return fig
