"""Figures of network sweeps (paper Fig. 1 style), drawn with the shared phase panels.

Figures that set networks beside the spring-block chain live with the comparison
(:mod:`dnnphase.compare.figures.comparison`); this module never imports the chain.
"""

from __future__ import annotations

import numpy as np

from dnnphase import knobs
from dnnphase.defaults import MEASURE
from phasecore.loadcurve import PHASE_TOLERANCE, check_tolerance, phase_label, separates
from phasecore.panels import PhasePanel, plot_phase_grid, save_figure

__all__ = ["normalised", "sweep_panels", "plot_sweep", "save_figure"]


def normalised(curves: np.ndarray, reference: np.ndarray | None = None) -> np.ndarray:
    """Scale load curves (..., L+1) to start at 1 and end at 0 (NaN if no drop); with
    ``reference`` (same shape), by the map that takes the reference curves' first and
    last points to 1 and 0 (a test curve by its training curve's)."""
    curves = np.asarray(curves, dtype=float)
    ref = curves if reference is None else np.asarray(reference, dtype=float)
    drop = ref[..., :1] - ref[..., -1:]
    with np.errstate(invalid="ignore", divide="ignore"):
        out = (curves - ref[..., -1:]) / drop
    return np.where(np.abs(drop) > 1e-12, out, np.nan)


def sweep_panels(ds, measure: str = MEASURE, tolerance: float = PHASE_TOLERANCE):
    """Accuracy- and curvature-shaded panels of a ``dnnphase.sweep`` Dataset.

    Rows: alpha, ReLU (alpha = 0, most nonlinear) on top. Columns: the knob,
    noisier to the right — the same way round as the chain beside it
    (:func:`dnnphase.compare.figures.comparison.plot_side_by_side`: most friction on top,
    most noise to the right). A sweep with test-set load curves (``load_curve_test``)
    also draws their seed mean dashed, scaled by the training curve's normalisation,
    so the gap shows how much less the test set separates. Cells whose mean training
    curve does not separate the classes (:func:`phasecore.loadcurve.separates`) are
    hatched in the curvature panel and left out of the boundaries.
    """
    check_tolerance(tolerance)
    knob = ds.attrs["knob"]
    sub = ds.sortby("alpha").sel(measure=measure)
    train = sub["load_curve"].mean("seed", skipna=True).values
    curves = normalised(train)
    dashed = None
    if "load_curve_test" in sub:  # older sweeps have none
        test = normalised(sub["load_curve_test"].mean("seed", skipna=True).values, train)
        dashed = test if np.isfinite(test).any() else None
    curv = sub["curvature_scaled"].mean("seed", skipna=True).values
    drop = train[..., 0] - train[..., -1]  # (alpha, knob)
    separating = separates(drop) | np.isnan(drop)  # no curve at all: grey, as before
    acc = sub["test_accuracy"].mean("seed", skipna=True).values
    labels = np.where(separating, phase_label(curv, tolerance), np.nan)
    common = dict(row_values=sub["alpha"].values, col_values=sub[knob].values,
                  row_label="LeakyReLU slope alpha (0 = ReLU)",
                  col_label=knobs.label(knob) + " (noisier to the right)",
                  flip_cols=not knobs.larger_is_noisier(ds), boundary=labels,
                  dashed=dashed, dashed_label="dashed: test set")
    n_seeds = ds.sizes["seed"]
    seeds = f"{n_seeds} seed{'s' if n_seeds != 1 else ''}"
    return [
        PhasePanel(curves, acc, shade_label="mean test accuracy", diverging=False,
                   cmap="viridis", title=f"test accuracy ({seeds})", **common),
        PhasePanel(curves, curv, shade_label=f"mean scale-free curvature ({measure})",
                   title="load-curve curvature (blue concave, red convex)",
                   separates=separating, **common),
    ]


def plot_sweep(ds, measure: str = MEASURE, tolerance: float = PHASE_TOLERANCE):
    """Two panels side by side: shading by test accuracy and by curvature."""
    data = ds.attrs.get("data", "")
    title = (f"Network phase diagram: {measure} load curves (normalised to 1 -> 0), "
             f"knob = {ds.attrs['knob']}, depth {ds.sizes['layer'] - 1}{_network_name(ds)}"
             + (f"\n{_dataset_name(data)}" if data else ""))
    return plot_phase_grid(sweep_panels(ds, measure, tolerance), title=title)


def _network_name(ds) -> str:
    """", cnn, norm scale": what differs from the paper's MLP with BatchNorm (a stored
    configuration leaves fields out at their defaults)."""
    import json

    try:
        config = json.loads(ds.attrs.get("config", "{}"))
    except ValueError:
        return ""
    parts = [config["arch"]] if config.get("arch", "mlp") != "mlp" else []
    if config.get("norm", "batchnorm") != "batchnorm":
        parts.append(f"norm {config['norm']}")
    return "".join(f", {part}" for part in parts)


def _dataset_name(info_json: str) -> str:
    import json

    try:
        info = json.loads(info_json)
    except ValueError:
        return ""
    return f"data: {info.get('source', info.get('name', ''))}"
