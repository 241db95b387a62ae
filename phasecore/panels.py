"""The phase-diagram figure both packages draw (matplotlib, headless).

:func:`plot_phase_grid` draws the paper's Fig. 3 style: for each
:class:`PhasePanel`, a grid of small load-curve plots over a background shaded
by a per-cell value (mean curvature by default), a diverging colormap centred
on linear, and the phase boundaries between cells of different label.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import matplotlib

__all__ = ["MARK_COLOUR", "PhasePanel", "axis_label", "check_figure_path", "fmt_value",
           "plot_phase_grid", "plt", "save_figure", "symmetric_limit"]

matplotlib.use("Agg")  # files only; never needs a display

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from matplotlib.colors import Normalize, TwoSlopeNorm  # noqa: E402


def fmt_value(v: float) -> str:
    """A tick or title number: whole numbers as they are (2560, 1000), else 3 digits."""
    v = float(v)
    if v == round(v) and abs(v) < 1e7:
        return str(int(round(v)))
    return f"{v:.3g}"


def axis_label(ds, name: str) -> str:
    """Axis title for coordinate ``name`` of ``ds``: a readable name and short units."""
    label = {"mu_right": "friction mu->", "mu_left": "friction mu<-", "noise": "noise s"}.get(
        name, name.replace("_", " "))
    units = ds[name].attrs.get("units")
    return f"{label} [{units}]" if units and len(units) < 20 else label


@dataclass
class PhasePanel:
    """One phase diagram: a grid of small load curves over a shaded background.

    curves : (R, C, L+1) mean load curve per cell (NaN cells left blank)
    shade : (R, C) background value per cell
    The first row is drawn on top (``flip_rows``: the last row); ``flip_cols``
    draws the last column on the left. ``diverging`` centres the colormap on 0
    (a linear load curve) with symmetric limits unless ``vlim`` is given.
    ``reference`` draws the straight line from the first to the last point of
    each curve (the linear load curve with the same drop). ``boundary``: (R, C)
    phase labels (-1 concave, 0 linear, +1 convex, see
    :func:`phasecore.loadcurve.phase_label`); the edges between
    neighbouring cells of different label are drawn as phase boundaries.
    ``dashed``: (R, C, L+1) second curves drawn dashed in the curve's colour (the
    networks' test set), named in the figure's legend by ``dashed_label``.
    ``separates``: (R, C) booleans; a cell whose curve does not separate the classes
    (:func:`phasecore.loadcurve.separates`) is hatched grey with its curve in grey,
    not shaded by a value that means nothing, and takes no part in the boundaries.
    ``shared_scale``: one y-range for every small plot (default: each plot its own, so
    every curve's shape fills its box whatever the other cells do).
    ``marked``: (R, C) booleans; the region of marked cells is outlined (dashed, in
    :data:`MARK_COLOUR`) and each marked cell gets a small "x" in its corner, named in
    the figure's legend by ``marked_label`` (where the chain disagrees with the networks,
    :func:`dnnphase.compare.comparator.report.disagreement`).
    """

    curves: np.ndarray
    shade: np.ndarray
    row_values: np.ndarray
    col_values: np.ndarray
    row_label: str
    col_label: str
    shade_label: str
    title: str = ""
    diverging: bool = True
    cmap: str | None = None
    vlim: tuple[float, float] | None = None
    reference: bool = True
    flip_cols: bool = False
    flip_rows: bool = False
    boundary: np.ndarray | None = None
    dashed: np.ndarray | None = None
    dashed_label: str = "dashed"
    separates: np.ndarray | None = None
    shared_scale: bool = False
    marked: np.ndarray | None = None
    marked_label: str = "marked"


#: Colour of the outline and corner marks of :attr:`PhasePanel.marked` cells (magenta:
#: apart from the red-blue shading and the black phase boundaries).
MARK_COLOUR = "#c000c0"


def symmetric_limit(values) -> float:
    """Half-width of a symmetric colour scale: the largest |value| inside Tukey's far-out fence.

    A cell far beyond the others (a network that barely separates its classes has a
    scale-free curvature of -8 where the rest lie within +-2) is drawn saturated
    instead of washing every other cell out. 1.0 when nothing is finite.
    """
    from phasecore.loadcurve import far_out_fences

    size = np.abs(np.asarray(values, dtype=float))
    size = size[np.isfinite(size)]
    if not size.size:
        return 1.0
    return float(size[size <= far_out_fences(size)[1]].max()) or 1.0


def _norm(panel: PhasePanel):
    finite = panel.shade[np.isfinite(panel.shade)]
    vlim = panel.vlim
    if vlim is None:
        if panel.diverging:
            m = symmetric_limit(finite)
            vlim = (-m, m)
        else:
            vlim = (float(finite.min()), float(finite.max())) if finite.size else (0.0, 1.0)
            if vlim[0] == vlim[1]:
                vlim = (vlim[0] - 0.5, vlim[1] + 0.5)
    if panel.diverging and vlim[0] < 0 < vlim[1]:
        return TwoSlopeNorm(0.0, vlim[0], vlim[1])
    return Normalize(*vlim)


def _draw_panel(fig, box, panel: PhasePanel, ax_size: float) -> None:
    """Draw ``panel`` with its grid's lower-left corner at ``box`` (inches) = (x0, y0)."""
    curves = np.asarray(panel.curves, dtype=float)
    shade = np.asarray(panel.shade, dtype=float)
    n_r, n_c = shade.shape
    fw, fh = fig.get_size_inches()
    x0, y0 = box
    norm = _norm(panel)
    colormap = plt.get_cmap(panel.cmap or ("RdBu_r" if panel.diverging else "viridis"))
    cols = list(range(n_c))[::-1] if panel.flip_cols else list(range(n_c))
    rows = list(range(n_r))[::-1] if panel.flip_rows else list(range(n_r))
    dashed = None if panel.dashed is None else np.asarray(panel.dashed, dtype=float)
    separating = (np.ones(shade.shape, dtype=bool) if panel.separates is None
                  else np.asarray(panel.separates, dtype=bool))
    shared = _y_range(curves, dashed)
    gap = 0.07 * ax_size
    for ii, i in enumerate(rows):
        for jj, j in enumerate(cols):
            rect = [(x0 + jj * ax_size) / fw, (y0 + (n_r - 1 - ii) * ax_size) / fh,
                    (ax_size - gap) / fw, (ax_size - gap) / fh]
            ax = fig.add_axes(rect)
            face = (None if not separating[i, j] else colormap(norm(shade[i, j]))
                    if np.isfinite(shade[i, j]) else "0.85")
            _draw_cell(ax, curves[i, j], None if dashed is None else dashed[i, j], face,
                       panel.reference, shared if panel.shared_scale else None)
            ax.set_xticks([])
            ax.set_yticks([])
            if ii == n_r - 1:
                ax.set_xlabel(fmt_value(panel.col_values[j]), fontsize=7)
            if jj == 0:
                ax.set_ylabel(fmt_value(panel.row_values[i]), fontsize=7, rotation=0, ha="right",
                              va="center")
    if panel.boundary is not None:
        labels = np.where(separating, np.asarray(panel.boundary, dtype=float),
                          np.nan)[np.ix_(rows, cols)]
        _draw_boundaries(fig, (x0, y0), labels, ax_size)
    if panel.marked is not None and np.any(panel.marked):
        _draw_marked(fig, (x0, y0), np.asarray(panel.marked, dtype=bool)[np.ix_(rows, cols)],
                     ax_size)
    width, height = n_c * ax_size, n_r * ax_size
    fig.text((x0 + width / 2) / fw, (y0 - 0.45) / fh, panel.col_label, ha="center", va="top",
             fontsize=9)
    fig.text((x0 - 0.55) / fw, (y0 + height / 2) / fh, panel.row_label, ha="right",
             va="center", rotation=90, fontsize=9)
    if panel.title:
        fig.text((x0 + width / 2) / fw, (y0 + height + 0.1) / fh, panel.title, ha="center",
                 va="bottom", fontsize=9)
    cax = fig.add_axes([(x0 + width + 0.15) / fw, y0 / fh, 0.16 / fw, (height - gap) / fh])
    sm = plt.cm.ScalarMappable(norm=norm, cmap=colormap)
    finite = shade[np.isfinite(shade) & separating]
    beyond = (finite.min() < norm.vmin, finite.max() > norm.vmax) if finite.size else (0, 0)
    extend = {(1, 1): "both", (1, 0): "min", (0, 1): "max"}.get(tuple(map(int, beyond)),
                                                              "neither")
    fig.colorbar(sm, cax=cax, extend=extend).set_label(panel.shade_label, fontsize=8)


def _draw_cell(ax, curve: np.ndarray, dashed: np.ndarray | None, face, reference: bool,
               y_range: tuple[float, float] | None) -> None:
    """One small plot: its load curve (L+1,) over the background colour ``face`` (None: a
    cell that does not separate, hatched, its curve grey), the dashed companion, and the
    y-range ``y_range`` (None: the cell's own)."""
    ink = "k" if face is not None else "0.45"
    if face is None:
        ax.set_facecolor("0.92")
        ax.add_patch(plt.Rectangle((0, 0), 1, 1, transform=ax.transAxes, fill=False,
                                   hatch="///", edgecolor="0.75", lw=0))
    else:
        ax.set_facecolor(face)
    if np.all(np.isfinite(curve)):
        layers = np.arange(curve.size)
        if reference:
            ax.plot(layers[[0, -1]], curve[[0, -1]], color="0.35", lw=0.6, ls="--")
        ax.plot(layers, curve, color=ink, lw=1.1, marker=".", ms=2.5)
    if dashed is not None and np.all(np.isfinite(dashed)):
        ax.plot(np.arange(dashed.size), dashed, color=ink, lw=1.1, ls="--")
    y_lo, y_hi = y_range if y_range is not None else _y_range(curve, dashed)
    pad = 0.08 * (y_hi - y_lo or 1.0)
    ax.set_ylim(y_lo - pad, y_hi + pad)


def _y_range(curves: np.ndarray, dashed: np.ndarray | None) -> tuple[float, float]:
    """The finite range of some curves (and their dashed companions); (0, 1) if none."""
    both = curves.ravel() if dashed is None else np.concatenate([curves.ravel(), dashed.ravel()])
    finite = both[np.isfinite(both)]
    return (float(finite.min()), float(finite.max())) if finite.size else (0.0, 1.0)


def _overlay(fig, box, shape: tuple[int, int], ax_size: float):
    """Invisible axes over a grid of (R, C) cells, one unit per cell, row 0 on top."""
    n_r, n_c = shape
    fw, fh = fig.get_size_inches()
    over = fig.add_axes([box[0] / fw, box[1] / fh, n_c * ax_size / fw, n_r * ax_size / fh])
    over.set_xlim(0, n_c)
    over.set_ylim(n_r, 0)
    over.axis("off")
    return over


def _draw_boundaries(fig, box, labels: np.ndarray, ax_size: float) -> None:
    """Phase boundaries: the edges between neighbouring cells of different label (R, C)."""
    n_r, n_c = labels.shape
    over = _overlay(fig, box, labels.shape, ax_size)
    style = dict(color="k", lw=2.2, alpha=0.75, solid_capstyle="butt")
    for i in range(n_r):
        for j in range(n_c):
            if j + 1 < n_c and _differ(labels[i, j], labels[i, j + 1]):
                over.plot([j + 1, j + 1], [i, i + 1], **style)
            if i + 1 < n_r and _differ(labels[i, j], labels[i + 1, j]):
                over.plot([j, j + 1], [i + 1, i + 1], **style)


def _draw_marked(fig, box, marked: np.ndarray, ax_size: float) -> None:
    """Outline the region of marked cells (R, C) as drawn, dashed, and put an "x" in the
    top-right corner of each marked cell."""
    n_r, n_c = marked.shape
    over = _overlay(fig, box, marked.shape, ax_size)
    from matplotlib import patheffects

    halo = [patheffects.withStroke(linewidth=3.4, foreground="white")]  # seen on dark red
    style = dict(color=MARK_COLOUR, lw=1.8, ls=(0, (3, 2)), solid_capstyle="butt",
                 path_effects=halo)
    inset = 0.04  # just inside the cells, so a phase boundary on the same edge stays visible

    def inside(i: int, j: int) -> bool:
        return 0 <= i < n_r and 0 <= j < n_c and bool(marked[i, j])

    for i, j in zip(*np.nonzero(marked), strict=True):
        if not inside(i, j - 1):
            over.plot([j + inset] * 2, [i, i + 1], **style)
        if not inside(i, j + 1):
            over.plot([j + 1 - inset] * 2, [i, i + 1], **style)
        if not inside(i - 1, j):
            over.plot([j, j + 1], [i + inset] * 2, **style)
        if not inside(i + 1, j):
            over.plot([j, j + 1], [i + 1 - inset] * 2, **style)
        over.plot(j + 0.82, i + 0.18, marker="x", ms=5, mew=1.6, color=MARK_COLOUR,
                  path_effects=halo)


def _differ(a: float, b: float) -> bool:
    return bool(np.isfinite(a) and np.isfinite(b) and a != b)


def _text_width(text: str, fontsize: float) -> float:
    """Rough width in inches of one line of text (for figure sizes, not layout)."""
    return 0.55 * fontsize / 72 * max((len(line) for line in text.splitlines()), default=0)


def plot_phase_grid(panels: PhasePanel | list[PhasePanel], *, title: str = "",
                    ax_size: float = 0.85):
    """Figure with one or more :class:`PhasePanel` side by side; returns the Figure.

    Cells without a finite value are grey; a note under the figure says so.
    """
    panels = [panels] if isinstance(panels, PhasePanel) else list(panels)
    left, between, right, bottom, top = 1.2, 2.1, 1.1, 1.1, 0.75 + 0.2 * title.count("\n")
    # wide enough for every title, so that none is clipped on a small grid
    widths = [max(p.shade.shape[1] * ax_size, _text_width(p.title, 9)) for p in panels]
    heights = [p.shade.shape[0] * ax_size for p in panels]
    fig_w = max(left + sum(widths) + between * (len(panels) - 1) + right,
                _text_width(title, 10) + 0.4)
    fig_h = bottom + max(heights) + top + (0.3 if any(p.title for p in panels) else 0)
    fig = plt.figure(figsize=(fig_w, fig_h))
    x = left
    for panel, w, h in zip(panels, widths, heights, strict=True):
        grid_w = panel.shade.shape[1] * ax_size
        _draw_panel(fig, (x + (w - grid_w) / 2, bottom + (max(heights) - h) / 2), panel,
                    ax_size)
        x += w + between
    notes = []
    if any(not np.isfinite(np.asarray(p.shade, dtype=float)).all() for p in panels):
        notes.append("grey cells: no finite value (every seed diverged, or the load curve does "
                     "not drop)")
    if any(p.separates is not None and not np.all(p.separates) for p in panels):
        from phasecore.loadcurve import MIN_DROP_SHARE

        notes.append(f"hatched cells: the load curve does not separate the classes (its drop is "
                     f"below {MIN_DROP_SHARE:.0%} of the diagram's median drop, or it rises)")
    if notes:
        fig.text(0.01, 0.01, "\n".join(notes), fontsize=7, color="0.3", ha="left",
                 va="bottom")
    from matplotlib.lines import Line2D

    handles = [Line2D([], [], color="k", lw=1.1, ls="--", label=label) for label in
               dict.fromkeys(p.dashed_label for p in panels if p.dashed is not None)]
    handles += [Line2D([], [], color=MARK_COLOUR, lw=2.0, ls=(0, (3, 2)), marker="x", ms=4,
                       label=label) for label in dict.fromkeys(
                           p.marked_label for p in panels
                           if p.marked is not None and np.any(p.marked))]
    if handles:
        fig.legend(handles=handles, loc="lower right", fontsize=7, frameon=False)
    if title:
        fig.suptitle(title, fontsize=10, y=1 - 0.1 / fig_h, va="top")
    return fig


def check_figure_path(path, overwrite: bool = False):
    """An image path matplotlib can write (by its suffix), checked before any work."""
    from phasecore.checks import require
    from phasecore.results import check_output

    path = check_output(path, overwrite, figure=True)
    formats = plt.figure().canvas.get_supported_filetypes()
    plt.close("all")
    require(path.suffix.lstrip(".").lower() in formats, "figure file",
            "a .png, .pdf or .svg file (or another suffix matplotlib writes: "
            f"{', '.join(sorted(formats))})", str(path))
    return path


def save_figure(fig, path, dpi: int = 130) -> None:
    """Write ``fig`` atomically (a failed write leaves no partial image under ``path``)."""
    from phasecore.results import replace_atomically

    suffix = Path(path).suffix.lstrip(".").lower() or None
    try:
        replace_atomically(Path(path), lambda tmp: fig.savefig(tmp, dpi=dpi, format=suffix))
    finally:
        plt.close(fig)
