"""The spring–block paper's supplement, universality (Figs. S5–S9): "the highest accuracy
occurs when the load curve is linear" at other depths (S5), widths (S6), on Fashion-MNIST
with Adam (S7a) and with SGD with momentum (S7b), and on CIFAR-10 (S8, S9), from the
diagrams ``python scripts/universality.py`` commits in ``figures/supplement/universality``.

One row per diagram, its verdict by the ledger's rule
(:func:`phaseclaims.rules.linear_best_of_sweep`); beside it the row
statistics of every alpha row (:func:`dnnphase.compare.comparator.peaks.sweep_row_peaks`):
the dropout rate of best accuracy, the rates tied with it, where the curvature changes sign and how
many grid steps lie between. A diagram whose file is not committed is a "cannot" row that
says so.

A row reads its diagram at the finest scale committed (:data:`READ_ORDER`): the paper's
(``full/``), else the paper grid at 5 seeds (``paper_grid/``), else the reduced one, and
says which. A sweep's file is written only when all its networks have trained, so a paper
grid still computing leaves the reduced row in place. S5's depth 7 and S6's width 100 are
the same networks (one configuration, one file copied under two names): the width-100 row
is shown but not counted.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import xarray as xr

from dnnphase.compare.comparator.peaks import row_shape, sweep_row_peaks
from dnnphase.sweeps.universality import FIGURES, SCALE_FOLDERS, SCALE_NOTES, SCALES, figure_of
from phaseclaims.ledger import Claim
from phaseclaims.rules import linear_best_of_sweep, pooled_claim, sweep_cells

__all__ = ["ORDER", "SOURCE", "TITLE", "claims"]

TITLE = "Spring–block paper, supplement: universality"
ORDER = 20
SOURCE = "spring-block"

FOLDER = SCALE_FOLDERS["reduced"]
COMMAND = "python scripts/universality.py --only {figure}"
MEASURE = "trace_ratio"
#: The scales a row may read, finest first: the first whose file is committed is read.
READ_ORDER = ("full", "paper-grid", "reduced")
#: A diagram read by another row already (the same networks): shown, not counted.
DUPLICATES = {"S6_width100": "S5_depth7"}


def _label(name: str) -> str:
    """A diagram's id suffix: 'depth 3', 'width 400', 'Fashion-MNIST, Adam'."""
    changes = FIGURES[name.split("_")[0]][name]
    if "depth" in changes:
        return f"depth {changes['depth']}"
    if "width" in changes:
        return f"width {changes['width']}"
    if changes.get("optimizer") == "sgd":
        return f"Fashion-MNIST, SGD momentum {changes['momentum']:g}"
    return "Fashion-MNIST, Adam"


def _scale(net: xr.Dataset) -> str:
    """The scale of :data:`SCALES` whose grid and epochs the sweep has ("" if none)."""
    config = json.loads(net.attrs["config"])
    for scale, grid in SCALES.items():
        if config["epochs"] == grid["epochs"] and all(
                len(config[k]) == len(grid[k]) and np.allclose(config[k], grid[k])
                for k in ("alphas", "values", "seeds")):
            return scale
    return ""


def _rows_text(net: xr.Dataset) -> str:
    """Per alpha row: best p (its accuracy), the tied p, the most linear p, the boundary
    and its distance."""
    peaks = sweep_row_peaks(net, MEASURE)
    curvature, _, values = sweep_cells(net, MEASURE)
    with np.errstate(invalid="ignore"):
        mean_curvature = np.nanmean(curvature, axis=2)  # (R, C), as the rule reads it
    alphas = np.sort(net["alpha"].values)[::-1]  # the rows' order: alpha decreasing
    parts = []
    for i, alpha in enumerate(alphas):
        if not np.isfinite(peaks["peak_value"][i]):
            parts.append(f"α {alpha:g}: no finite accuracy")
            continue
        linear = values[int(np.nanargmin(np.abs(mean_curvature[i])))]
        text = (f"α {alpha:g}: best p {peaks['peak_value'][i]:g} "
                f"(acc {peaks['peak_accuracy'][i]:.3f}), ties p {peaks['tied_low'][i]:g}–"
                f"{peaks['tied_high'][i]:g}, most linear p {linear:g}, ")
        if np.isfinite(peaks["boundary_value"][i]):
            text += (f"boundary p {peaks['boundary_value'][i]:.3g} "
                     f"({peaks['peak_to_boundary_steps'][i]:.1f} steps from best)")
        else:
            text += row_shape(mean_curvature[i])
        parts.append(text)
    return "; ".join(parts)


def _committed(root: Path, name: str) -> tuple[str, str] | None:
    """The file a diagram's row reads (relative to ``root``) and the scale of its folder:
    the first of :data:`READ_ORDER` whose file exists; None if none does."""
    for scale in READ_ORDER:
        file = f"{SCALE_FOLDERS[scale]}/{name}.nc"
        if (root / file).is_file():
            return file, scale
    return None


def _diagram_row(root: Path, figure: str, name: str, judged: list | None = None) -> Claim:
    claim = (f"{_label(name)}: the highest test accuracy occurs where the load curve is "
             "linear (α × dropout)")
    ident = f"Fig. {figure} ({_label(name)})"
    twin = DUPLICATES.get(name)
    counts = twin is None
    found = _committed(root, name)
    if twin is not None:  # the same networks: never a coarser scale than the twin's row
        other = _committed(root, twin)
        if other is not None and (found is None or READ_ORDER.index(other[1])
                                  < READ_ORDER.index(found[1])):
            found = other
    if found is None:
        file = f"{FOLDER}/{name}.nc"
        return Claim(ident, claim, COMMAND.format(figure=figure), "—", "not computed",
                     "cannot", f"{file} is not committed", counts=counts)
    file, folder_scale = found
    command = COMMAND.format(figure=figure) + \
        ("" if folder_scale == "reduced" else f" --{folder_scale}")
    with xr.open_dataset(root / file) as net:
        net = net.load()
    best = linear_best_of_sweep(net, MEASURE)
    if judged is not None and counts:  # pooled below
        judged.append((best, file))
    scale = _scale(net)
    note = SCALE_NOTES.get(scale, "a grid of no preset")
    ours = f"{best.ours()}. {_rows_text(net)}"
    why = best.why() if best["verdict"] != "holds" else ""
    if scale != "full":  # the row says on what it rests
        why = f"{why}; {note}" if why else note
    if twin is not None:
        why += (f"; the same networks as Fig. {figure_of(twin)} ({_label(twin)}) (one "
                "configuration): counted there, not here")
    return Claim(ident, claim, command, "—", ours, best["verdict"], why, (file,),
                 counts=counts, variants=best["variants"])


def claims(root: Path) -> list[Claim]:
    judged = []
    rows = [_diagram_row(root, figure, name, judged)
            for figure, diagrams in FIGURES.items() for name in diagrams]
    if judged:  # every counted diagram's testable rows through the same rule at once
        rows.append(pooled_claim(
            "Figs. S5–S7 (pooled)", "the highest test accuracy occurs where the load curve "
            "is linear, over every counted universality diagram's testable rows",
            "python scripts/universality.py", [b for b, _ in judged], [f for _, f in judged]))
    rows.append(Claim(
        "Fig. S8, S9", "CIFAR-10 (images resampled, vectorised, into the MLP): the same "
        "phenomenology; the input layer's separation slightly off linear",
        "dnnphase sweep --dataset cifar10 --root DIR --size 10 -o cifar10.nc",
        "—", "not computed", "cannot",
        "CIFAR-10 cannot be had offline here: no installed package ships it. The loader "
        "reads a user's own python batches (--dataset cifar10 --root DIR, a tested path); "
        "the paper's resampling size was lost from its text"))
    return rows
