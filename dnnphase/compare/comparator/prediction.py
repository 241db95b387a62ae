"""Prediction, not description: does the chain predict cells of a network diagram it was not
fitted to, better than a model that knows no mechanics?

The chain model of a network phase diagram (alpha rows x knob columns): every alpha row gets one
friction mu-> and every knob column one noise s, and the cell's scale-free curvature is the
chain's,

    kappa_ij = kappa_chain(mu_i, s_j),  mu_i non-increasing in alpha, s_j non-decreasing in
    noisiness,                                                       (R + C parameters)

the mean-field chain of :func:`springblock.theory.predict_positions` with L = 7 blocks, k = y = 1,
horizon T = 1000 and mu<- = 2 mu-> (all fixed, not fitted). The baseline knows only that
curvature rises with alpha and with noisiness (both seen in every diagram):

    kappa_ij = a_i + b_j,  a non-decreasing in alpha, b non-decreasing in noisiness, b_0 = 0
                                                                     (R + C - 1 parameters)

and, since the chain's curvature levels off where the additive one cannot, the same through a
fixed S-shaped link centred on the linear load curve, kappa_ij = d tanh(a_i + b_j), d > 0
                                                                     (R + C parameters).

All are fitted by unweighted least squares to the seed-mean curvature of the training cells and
predict the held-out ones; beside them, a baseline with no parameters at all, each held-out cell
the mean of its nearest training cells in grid index (:func:`local_mean`). Every fit is made well
posed by a small tie-break on the second differences of its monotone sequences, which fixes the
parameters the training cells leave free (:mod:`dnnphase.compare.comparator.baselines`): the
held-out prediction does not move with the last bits of the arithmetic.

Splits: ``checkerboard`` (train on (i + j) even, predict odd, and the other way round) and
``columns`` (hold out every other interior knob column, then the others; a
held-out column's s_j — and the baseline's b_j — is the linear interpolation, in grid index, of
its neighbours' fitted values: s in the coordinate log(1 + s / NOISE_SCALE)). The seed-noise floor
is the RMS over the held-out cells of the standard error of their seed mean: a model that knew
every cell's true mean would score about that.

Cells left out of fitting and scoring: a NaN seed mean, fewer than two seeds, a mean training
curve that does not separate the classes (:func:`phasecore.loadcurve.separates`, as the figures
hatch them) and a seed mean beyond Tukey's far-out fences of the usable cells
(:func:`phasecore.loadcurve.far_out_fences`: a network that barely separates, curvature -114).

Entry point: :func:`held_out_prediction` (one sweep -> one labelled Dataset); the pure parts:
:func:`chain_table` / :func:`chain_curvature` (the chain's curvature surface, built once),
:func:`diagram_cells`, :func:`fit_chain_map`, :func:`fit_additive_map`,
:func:`fit_saturating_map` (any of them by name: :func:`fit_model`), :func:`local_mean`,
:func:`noise_plateau`, :func:`split_folds`, :func:`predict_split`, :func:`scores`. Cross-knob
transfer (the alpha rows of one knob's fit carried over to another knob, only the columns
refitted): :func:`transfer_table`, :func:`fit_columns`.
"""

from __future__ import annotations

import numpy as np
import xarray as xr

from dnnphase.compare.comparator.alignment import check_network, seed_se
from dnnphase.compare.comparator.baselines import (
    TIE_BREAK,
    TOLERANCE,
    best_least_squares,
    check_matrix,
    fill_untrained,
    fit_additive_map,
    fit_saturating_map,
    local_mean,
    monotone,
    penalised_cost,
    smoothness,
)
from dnnphase.compare.comparator.surface import (
    BLOCKS,
    HORIZON,
    RATIO,
    TABLE_POINTS,
    chain_curvature,
    chain_table,
    coordinate_bounds,
    curvature_surface,
    friction_coordinate,
    friction_value,
    noise_coordinate,
    noise_value,
)
from dnnphase.defaults import MEASURE
from dnnphase.knobs import larger_is_noisier
from phasecore.checks import is_int, require
from phasecore.loadcurve import (
    PHASE_TOLERANCE,
    far_out_fences,
    phase_label,
    separates,
)
from phasecore.results import as_result, provenance

__all__ = ["BLOCKS", "HORIZON", "MODELS", "RATIO", "SPLITS", "STARTS", "chain_curvature",
           "chain_table", "diagram_cells", "fill_untrained", "fit_additive_map", "fit_chain_map",
           "fit_columns", "fit_model", "fit_saturating_map", "friction_coordinate",
           "held_out_prediction", "noise_coordinate", "predict_split", "rmse", "split_folds",
           "transfer_table"]

#: The fitted models compared, by name: the chain and the two baselines that know no mechanics.
MODELS = ("chain", "additive", "saturating")
#: Everything that predicts held-out cells: the fitted models and the parameter-free local
#: baseline (each held-out cell the mean of its nearest training cells; nothing to fit, so it
#: has no in-sample fit and no rows to carry to another knob).
PREDICTORS = (*MODELS, "local")
#: How the diagram is split into training and held-out cells.
SPLITS = ("checkerboard", "columns")
#: Least-squares refinements of the chain map, each from a coordinate descent on a grid of
#: GRID_STEPS x GRID_STEPS points of the table.
STARTS = 6
GRID_STEPS = 97
#: A change of curvature this small (scale-free) is not seen in these data (every diagram's
#: seed-noise floor is >= 0.012): a fitted noise whose raising to the table's edge changes its
#: cells by less is on the chain's plateau, a lower bound.
PLATEAU_CHANGE = 0.01


# --- the network diagram -------------------------------------------------------------


def diagram_cells(ds: xr.Dataset, measure: str = MEASURE) -> xr.Dataset:
    """A sweep's cells, oriented: dims (alpha increasing, knob noisier to the right).

    Variables (alpha, knob): ``curvature`` (seed mean of the scale-free curvature),
    ``curvature_se`` (its standard error, std over seeds / sqrt(seeds)), ``half_gap``
    (half the difference of the means over even and odd seeds: its RMS estimates the standard
    error without the formula), ``usable`` (bool) and ``left_out`` ("" or why not).
    """
    check_network(ds, measure)
    knob = ds.attrs["knob"]
    sub = ds.sel(measure=measure).sortby("alpha").sortby(knob, ascending=larger_is_noisier(ds))
    curv = sub["curvature_scaled"].transpose("alpha", knob, "seed")
    mean = curv.mean("seed", skipna=True)
    count = curv.count("seed")
    se = seed_se(curv)
    even = curv.isel(seed=slice(0, None, 2)).mean("seed", skipna=True)
    odd = curv.isel(seed=slice(1, None, 2)).mean("seed", skipna=True)
    train = sub["load_curve"].mean("seed", skipna=True).transpose("alpha", knob, "layer").values
    drop = train[..., 0] - train[..., -1]
    reason = np.full(mean.shape, "", dtype=object)
    reason[~separates(drop)] = "not separating"
    reason[(count.values < 2) & (reason == "")] = "fewer than 2 seeds"
    reason[~np.isfinite(mean.values)] = "nan"
    low, high = far_out_fences(mean.values[reason == ""])
    with np.errstate(invalid="ignore"):
        far = (mean.values < low) | (mean.values > high)
    reason[far & (reason == "")] = "far out"
    out = xr.Dataset({
        "curvature": mean, "curvature_se": se, "half_gap": (even - odd) / 2,
        "usable": (("alpha", knob), reason == ""),
        "left_out": (("alpha", knob), reason.astype(str))})
    out.attrs.update(knob=knob, measure=measure, larger_is_noisier=int(larger_is_noisier(ds)))
    return out


# --- the models ----------------------------------------------------------------------


def _chain_unpack(p: np.ndarray, rows: int, points: int) -> tuple[np.ndarray, np.ndarray]:
    high_u, high_v = coordinate_bounds(points)
    u = np.clip(monotone(p[0], p[1:rows], -1.0), 0.0, high_u)
    v = np.clip(monotone(p[rows], p[rows + 1:], 1.0), 0.0, high_v)
    return u, v


def _descent(curv, train, v_start: float, points: int, sweeps: int = 4,
             u=None, variant=None) -> np.ndarray:
    """A starting parameter vector (R + C,) by coordinate descent on a fine grid of the table.

    From every column at noise coordinate ``v_start``, each row's u and then each column's v
    is set to the grid value (GRID_STEPS of them) that fits its training cells best, ``sweeps``
    times (with ``u`` (R,) given, the rows stay at the grid values nearest to it); the result
    is made monotone (running minimum down the rows, running maximum along the columns) and
    written as first value and steps.
    """
    high_u, high_v = coordinate_bounds(points)
    ug, vg = np.linspace(0.0, high_u, GRID_STEPS), np.linspace(0.0, high_v, GRID_STEPS)
    table = curvature_surface(points, variant)(ug, vg)  # (G, G)
    y = np.where(train, curv, 0.0)
    w = train.astype(float)
    vi = np.full(curv.shape[1], int(np.argmin(np.abs(vg - v_start))))
    ui = None if u is None else np.argmin(np.abs(ug[None, :] - np.asarray(u)[:, None]), axis=1)
    for _ in range(sweeps):
        # rows: cost (R, G) of every grid u given the columns' v; then columns given the rows' u
        if u is None:
            ui = np.argmin(np.einsum("rgc,rc->rg", (table[None, :, vi] - y[:, None, :]) ** 2, w),
                           axis=1)
        vi = np.argmin(np.einsum("rcg,rc->cg", (table[ui][:, None, :] - y[:, :, None]) ** 2, w),
                       axis=1)
    u = np.minimum.accumulate(ug[ui])
    v = np.maximum.accumulate(vg[vi])
    return np.concatenate([[u[0]], -np.diff(u), [v[0]], np.diff(v)])


def _polish(p, residual, lower, upper, smooth, rows: int, points: int, *,
            free_u: bool = True) -> tuple[np.ndarray, float]:
    """Alternate :func:`_scan` and :func:`best_least_squares` from its result until the scan
    finds nothing lower (3 times at most) -> (p, cost without the tie-break)."""
    objective = penalised_cost(residual, smooth)

    for _ in range(3):
        scanned = _scan(p, objective, rows, points, free_u=free_u)
        if not objective(scanned) < objective(p) - 1e-12:
            break
        p, _ = best_least_squares(residual, [scanned], lower, upper, smooth)
    r = residual(p)
    return p, float(0.5 * np.dot(r, r))


def _pack(u: np.ndarray, v: np.ndarray) -> np.ndarray:
    """The parameter vector (R + C,) of monotone ``u`` (R,) and ``v`` (C,): values and steps."""
    return np.concatenate([[u[0]], -np.diff(u), [v[0]], np.diff(v)])


def _scan(p: np.ndarray, objective, rows: int, points: int, *, free_u: bool = True,
          rounds: int = 3) -> np.ndarray:
    """Each friction u_i (if ``free_u``) and noise v_j of ``p`` tried at GRID_STEPS values
    between its neighbours (so the order stays monotone), keeping each value that lowers
    ``objective`` (p -> float); ``rounds`` passes at most.

    Why: the chain's curvature overshoots on its way to the noise plateau, so the cost along a
    weakly determined noise has shallow local minima a few 1e-4 apart; a gradient method stops
    in whichever its start leads to, a scan along each coordinate steps over them.
    """
    high_u, high_v = coordinate_bounds(points)
    u, v = _chain_unpack(p, rows, points)
    best = objective(_pack(u, v))
    for _ in range(rounds):
        before = best
        for values, top, falling in ((u, high_u, True), (v, high_v, False)):
            if falling and not free_u:
                continue
            n = values.size
            for k in range(n):
                # neighbours bound the value: u falls with alpha, v rises along the knob
                left = values[k - 1] if k > 0 else (top if falling else 0.0)
                right = values[k + 1] if k < n - 1 else (0.0 if falling else top)
                keep = values[k]
                for trial in np.linspace(min(left, right), max(left, right), GRID_STEPS):
                    values[k] = trial
                    cost = objective(_pack(u, v))
                    if cost < best:
                        best, keep = cost, trial
                values[k] = keep
        if best >= before:
            break
    return _pack(u, v)


def fit_chain_map(curv, train, *, starts: int = STARTS, points: int = TABLE_POINTS,
                  variant=None, start: dict | None = None) -> dict[str, np.ndarray | float]:
    """Fit the chain map to the training cells of a diagram.

    ``curv`` (R, C): seed-mean curvature, rows alpha increasing, columns noisier to the right;
    ``train`` (R, C) bool. Returns ``friction`` (R,) mu-> (non-increasing) and ``noise`` (C,) s
    (non-decreasing), in units of k y, ``u`` / ``v`` their table coordinates, ``fitted`` (R, C)
    the chain's curvature there, and ``cost`` (half the sum of squared training residuals).
    Rows and columns without a training cell get the interpolation of :func:`fill_untrained`.
    Parametrisation: first value and non-negative steps (bounded least squares, so exact ties
    are allowed), refined from ``starts`` starting points (:func:`_descent` from ``starts``
    noise levels spread over the table) by :func:`best_least_squares`, then :func:`_polish`
    (a noise or friction the training cells leave free, e.g. on the chain's noise plateau, is
    the tie-break's: where its neighbours' trend puts it). ``variant``: a chain of
    :mod:`springblock.fit.variants` in place of the paper's (:func:`chain_table`). ``start``:
    an earlier result of this function on the same diagram's shape (its ``u`` and ``v``) to
    refit slightly changed data from — one local least squares from there, no descent and
    no scan (a seed resample of the same diagram, :mod:`dnnphase.compare.scrutiny.own_claims`).
    """
    curv, train = check_matrix(curv, train)
    require(is_int(starts) and starts >= 1, "starts", "an integer >= 1", starts)
    require(start is None or (isinstance(start, dict) and np.shape(start.get("u")) ==
                              (curv.shape[0],) and np.shape(start.get("v")) == (curv.shape[1],)),
            "start", f"None or an earlier fit with u ({curv.shape[0]},) and v ({curv.shape[1]},)",
            type(start).__name__)
    rows, cols = curv.shape
    i, j = np.nonzero(train)
    y = curv[i, j]

    def residual(p):
        u, v = _chain_unpack(p, rows, points)
        return chain_curvature(u[i], v[j], points, variant) - y

    high_u, high_v = coordinate_bounds(points)
    upper = np.concatenate([np.full(rows, high_u), np.full(cols, high_v)])
    # the first friction and the first noise are values, the rest monotone steps
    smooth = smoothness(rows + cols, [(1, rows - 1), (rows + 1, cols - 1)])
    if start is not None:
        p, cost = best_least_squares(residual, [_pack(np.asarray(start["u"], float),
                                                      np.asarray(start["v"], float))],
                                     0.0, upper, smooth)
    else:
        starts_ = [_descent(curv, train, v0, points, variant=variant)
                   for v0 in np.linspace(0.0, high_v, starts + 2)[1:-1]]
        p, _ = best_least_squares(residual, starts_, 0.0, upper, smooth)
        p, cost = _polish(p, residual, 0.0, upper, smooth, rows, points)
    u, v = _chain_unpack(p, rows, points)
    u, v = fill_untrained(u, train.any(axis=1)), fill_untrained(v, train.any(axis=0))
    return {"friction": friction_value(u), "noise": noise_value(v), "u": u, "v": v,
            "fitted": chain_curvature(u[:, None], v[None, :], points, variant), "cost": cost}


def noise_plateau(fit: dict, train, points: int = TABLE_POINTS, variant=None) -> np.ndarray:
    """(C,) bool: columns whose fitted noise s is only a lower bound — raising it (and every
    noisier column's, to keep them monotone) to the table's edge changes no training cell's
    curvature by more than PLATEAU_CHANGE (the chain's noise plateau: a relaxed chain's curve no
    longer depends on s). ``fit``: a :func:`fit_chain_map` result; ``train`` (R, C) bool."""
    high_v = coordinate_bounds(points)[1]
    change = np.abs(chain_curvature(np.asarray(fit["u"])[:, None], high_v, points, variant)
                    - fit["fitted"])
    flat = np.all(change < PLATEAU_CHANGE, axis=0, where=np.asarray(train, bool))
    return np.logical_and.accumulate(flat[::-1])[::-1] & np.asarray(train, bool).any(axis=0)


def fit_columns(name: str, rows_fit: dict, curv, train, *, starts: int = STARTS,
                points: int = TABLE_POINTS) -> dict[str, np.ndarray | float]:
    """Refit only the knob columns of model ``name``, keeping its alpha rows from ``rows_fit``
    (a fit of the same model to another diagram with the same alphas): the chain's friction
    mu->, the additive a, the saturating a and d. C parameters each: s_j, or b_j with b_0 free.

    Shapes as :func:`fit_chain_map`; returns ``fitted`` (R, C) and ``cost``.
    """
    require(name in MODELS, "model", f"one of {', '.join(MODELS)}", name)
    curv, train = check_matrix(curv, train)
    rows, cols = curv.shape
    key = "u" if name == "chain" else "row"
    require(np.shape(rows_fit.get(key)) == (rows,), "rows_fit",
            f"a {name} fit with {rows} alpha rows", np.shape(rows_fit.get(key)))
    i, j = np.nonzero(train)
    y = curv[i, j]
    a = np.asarray(rows_fit[key], dtype=float)
    if name == "chain":
        high_v = coordinate_bounds(points)[1]

        def predict(p):
            return chain_curvature(a[:, None], np.clip(monotone(p[0], p[1:], 1.0), 0.0, high_v),
                                   points)

        starts_ = [_descent(curv, train, v0, points, u=a)[rows:]
                   for v0 in np.linspace(0.0, high_v, starts + 2)[1:-1]]
        bounds = (0.0, high_v)
    else:
        c, d = rows_fit.get("centre", 0.0), rows_fit.get("scale")

        def predict(p):
            b = monotone(p[0], p[1:], 1.0)
            total = a[:, None] + b[None, :]
            return total if name == "additive" else c + d * np.tanh(total)

        starts_ = [np.concatenate([[b0], np.full(cols - 1, 0.1)]) for b0 in (-1.0, 0.0, 1.0)]
        bounds = (np.concatenate([[-np.inf], np.zeros(cols - 1)]), np.inf)
    smooth = smoothness(cols, [(1, cols - 1)])  # b_0 (or s_0) a value, the rest steps
    p, cost = best_least_squares(lambda p: predict(p)[i, j] - y, starts_, *bounds, smooth)
    return {"fitted": predict(p), "cost": cost}


def parameter_counts(rows: int, cols: int) -> dict[str, int]:
    """Free parameters of each model of :data:`MODELS` on an R x C diagram."""
    return {"chain": rows + cols, "additive": rows + cols - 1, "saturating": rows + cols}


def fit_model(name: str, curv, train, *, starts: int = STARTS,
              points: int = TABLE_POINTS) -> dict[str, np.ndarray | float]:
    """Fit the model ``name`` (one of :data:`MODELS`) to the training cells."""
    require(name in MODELS, "model", f"one of {', '.join(MODELS)}", name)
    if name == "chain":
        return fit_chain_map(curv, train, starts=starts, points=points)
    return fit_additive_map(curv, train) if name == "additive" else fit_saturating_map(curv, train)


# --- splits and scores ---------------------------------------------------------------


def split_folds(usable, split: str) -> list[tuple[np.ndarray, np.ndarray]]:
    """The (train, held_out) bool masks (R, C) of each fold of ``split``.

    ``checkerboard``: fold 0 trains on usable cells with (i + j) even and holds out the odd
    ones, fold 1 the other way round. ``columns``: fold 0 holds out the odd interior columns,
    fold 1 the even interior ones; the first and last columns are always trained on.
    """
    require(split in SPLITS, "split", f"one of {', '.join(SPLITS)}", split)
    usable = np.asarray(usable, dtype=bool)
    rows, cols = usable.shape
    i, j = np.indices(usable.shape)
    if split == "checkerboard":
        held = [(i + j) % 2 == 1, (i + j) % 2 == 0]
    else:
        require(cols >= 3, "columns", "at least 3 knob values to hold out interior ones", cols)
        interior = (j > 0) & (j < cols - 1)
        held = [interior & (j % 2 == 1), interior & (j % 2 == 0)]
    return [(usable & ~h, usable & h) for h in held]


def predict_split(curv, usable, split: str, *, starts: int = STARTS,
                  points: int = TABLE_POINTS) -> dict[str, np.ndarray]:
    """Out-of-sample predictions (R, C) of every predictor of :data:`PREDICTORS`, by name (each
    held-out cell from the fold that held it out; NaN where never held out), and ``held_out``
    (R, C) bool."""
    shape = np.shape(curv)
    out = {name: np.full(shape, np.nan) for name in PREDICTORS}
    held_any = np.zeros(shape, dtype=bool)
    for train, held in split_folds(usable, split):
        if not held.any():
            continue
        for name in MODELS:
            out[name][held] = fit_model(name, curv, train, starts=starts,
                                        points=points)["fitted"][held]
        out["local"][held] = local_mean(curv, train)[held]
        held_any |= held
    return {**out, "held_out": held_any}


def rmse(prediction, truth, mask) -> float:
    """Root mean square of prediction - truth over the cells of ``mask`` (NaN if none)."""
    d = (np.asarray(prediction, float) - np.asarray(truth, float))[np.asarray(mask, bool)]
    return float(np.sqrt(np.mean(d * d))) if d.size else float("nan")


def phase_right(prediction, truth, mask, tolerance: float = PHASE_TOLERANCE) -> float:
    """Share of the cells of ``mask`` whose phase label (concave / linear / convex) the
    prediction gets right."""
    mask = np.asarray(mask, bool)
    if not mask.any():
        return float("nan")
    return float(np.mean(phase_label(np.asarray(prediction)[mask], tolerance)
                         == phase_label(np.asarray(truth)[mask], tolerance)))


def scores(pred: dict, cells: xr.Dataset) -> dict[str, float]:
    """The held-out table row of one split: ``cells`` scored, ``<model>_rmse`` and
    ``<model>_phase_right`` for every predictor of :data:`PREDICTORS`, the seed-noise ``floor`` (RMS
    standard error of the held-out means) and ``floor_halves`` (the same from the even/odd seed
    halves, without the formula)."""
    truth = cells["curvature"].values
    mask = pred["held_out"]
    out = {"cells": int(mask.sum())}
    out.update({f"{m}_rmse": rmse(pred[m], truth, mask) for m in PREDICTORS})
    out.update({"floor": rmse(cells["curvature_se"].values, 0.0, mask),
                "floor_halves": rmse(cells["half_gap"].values, 0.0, mask)})
    out.update({f"{m}_phase_right": phase_right(pred[m], truth, mask) for m in PREDICTORS})
    return out


# --- the entry point ------------------------------------------------------------------


def _left_out_words(left_out: np.ndarray) -> str:
    """"1 far out, 3 not separating" (or "none") from the ``left_out`` reasons of a diagram."""
    reasons, counts = np.unique(left_out[left_out != ""], return_counts=True)
    return ", ".join(f"{c} {r}" for r, c in zip(reasons, counts, strict=True)) or "none"


def held_out_prediction(ds: xr.Dataset, measure: str = MEASURE, *,
                        starts: int = STARTS, points: int = TABLE_POINTS) -> xr.Dataset:
    """The chain against the baselines on held-out cells of one network sweep -> Dataset.

    Dims: ``alpha`` (increasing), the knob (noisier to the right), ``split`` (:data:`SPLITS`).
    Variables: those of :func:`diagram_cells`; the in-sample fits to every usable cell,
    ``friction`` (alpha) mu-> and ``chain_noise`` (knob) s of the chain (``chain_noise_plateau``
    (knob) bool where s is only a lower bound, :func:`noise_plateau`), ``<model>_fit``
    (alpha, knob) for every model of :data:`MODELS`; out of sample, ``<name>_prediction`` for every
    predictor of :data:`PREDICTORS` and ``held_out`` (split, alpha, knob). Attrs:
    ``<model>_parameters`` (``local_parameters`` = 0), ``<model>_in_sample_rmse``,
    ``cells`` (usable), ``cells_left_out`` and ``left_out_reasons``, and per split
    ``<split>_<score>`` for every score of :func:`scores`. Curvatures are scale-free
    (dimensionless); mu-> and s in units of k y (L = 7 blocks, T = 1000, mu<- = 2 mu->).
    ``ds``: the sweep's Dataset or the path (str or Path) of a file written by ``dnnphase sweep``.

    Parameters
    ----------
    ds : xarray.Dataset or str or pathlib.Path
        A network sweep, or the path of its file.
    measure : str, default "trace_ratio"
        The measure whose curvature is predicted (:data:`dnnphase.metrics.MEASURE_NAMES`).
    starts : int, default 6
        Starting points of each fit of the chain map (>= 1).
    points : int, default 49
        Points per side of the table of the chain's curvature the fits read.

    Returns
    -------
    xarray.Dataset
        The variables and attributes listed above.
    """
    ds = as_result(ds, "ds", "dnnphase.sweep")
    cells = diagram_cells(ds, measure)
    knob = cells.attrs["knob"]
    curv = cells["curvature"].values
    usable = cells["usable"].values
    require(int(usable.sum()) >= 4, "network sweep", "a diagram with at least 4 usable cells",
            int(usable.sum()))
    fits = {m: fit_model(m, curv, usable, starts=starts, points=points) for m in MODELS}
    preds = {s: predict_split(curv, usable, s, starts=starts, points=points) for s in SPLITS}
    out = cells.copy()
    out["friction"] = ("alpha", fits["chain"]["friction"])
    out["chain_noise"] = (knob, fits["chain"]["noise"])
    out["chain_noise_plateau"] = (knob, noise_plateau(fits["chain"], usable, points))
    for m in MODELS:
        out[f"{m}_fit"] = (("alpha", knob), fits[m]["fitted"])
    for m in PREDICTORS:
        out[f"{m}_prediction"] = (("split", "alpha", knob), np.stack([preds[s][m] for s in SPLITS]))
    out["held_out"] = (("split", "alpha", knob), np.stack([preds[s]["held_out"] for s in SPLITS]))
    out = out.assign_coords(split=list(SPLITS))
    config = {"measure": measure, "starts": int(starts), "points": int(points),
              "blocks": BLOCKS, "horizon": HORIZON, "ratio": RATIO, "weights": "none",
              "tie_break": TIE_BREAK, "tolerance": TOLERANCE}
    out.attrs.update(provenance("dnnphase.compare.held_out_prediction", config))
    out.attrs.update(knob=knob, measure=measure, larger_is_noisier=cells.attrs["larger_is_noisier"],
                     cells=int(usable.sum()), cells_left_out=int((~usable).sum()),
                     left_out_reasons=_left_out_words(cells["left_out"].values))
    for m, n in parameter_counts(*curv.shape).items():
        out.attrs[f"{m}_parameters"] = n
        out.attrs[f"{m}_in_sample_rmse"] = rmse(fits[m]["fitted"], curv, usable)
    out.attrs["local_parameters"] = 0
    for split in SPLITS:
        out.attrs.update({f"{split}_{k}": v for k, v in scores(preds[split], cells).items()})
    return out


def transfer_table(sweeps: dict[str, xr.Dataset], measure: str = MEASURE, *,
                   starts: int = STARTS, points: int = TABLE_POINTS) -> xr.Dataset:
    """Cross-knob transfer: every model's alpha rows fitted on one sweep, only its knob columns
    refitted on another (:func:`fit_columns`) -> Dataset.

    The dictionary says friction belongs to the activation, whatever the knob: the chain's
    alpha -> mu-> map fitted on dropout should serve for label noise. ``sweeps``: knob name ->
    sweep, all with the same alphas. Dims (``source``, ``target``), knob names. Variables:
    ``<model>_rmse`` over the target's usable cells (NaN on the diagonal), ``floor`` (RMS
    standard error of the target's cell means), ``cells`` and ``parameters`` (C, the target's
    knob values: every model fits one number per column, its rows carried over).

    Parameters
    ----------
    sweeps : dict of str to xarray.Dataset
        Knob name -> its network sweep, all with the same alphas.
    measure : str, default "trace_ratio"
        The measure whose curvature is predicted (:data:`dnnphase.metrics.MEASURE_NAMES`).
    starts : int, default 6
        Starting points of each fit of the chain map (>= 1).
    points : int, default 49
        Points per side of the table of the chain's curvature the fits read.

    Returns
    -------
    xarray.Dataset
        The variables listed above, over (``source``, ``target``).
    """
    require(len(sweeps) >= 2, "sweeps", "at least 2 sweeps (knob -> Dataset)", len(sweeps))
    cells = {k: diagram_cells(ds, measure) for k, ds in sweeps.items()}
    alphas = [c["alpha"].values for c in cells.values()]
    require(all(np.array_equal(a, alphas[0]) for a in alphas), "sweeps",
            "sweeps with the same alpha values", [list(a) for a in alphas])
    fits = {k: {m: fit_model(m, c["curvature"].values, c["usable"].values, starts=starts,
                             points=points) for m in MODELS} for k, c in cells.items()}
    names = list(cells)
    errors = {m: np.full((len(names), len(names)), np.nan) for m in MODELS}
    for a, source in enumerate(names):
        for b, target in enumerate(names):
            if a == b:
                continue
            curv, usable = cells[target]["curvature"].values, cells[target]["usable"].values
            for m in MODELS:
                fitted = fit_columns(m, fits[source][m], curv, usable, starts=starts,
                                     points=points)["fitted"]
                errors[m][a, b] = rmse(fitted, curv, usable)
    out = xr.Dataset(
        {f"{m}_rmse": (("source", "target"), errors[m]) for m in MODELS}
        | {"floor": ("target", [rmse(cells[k]["curvature_se"].values, 0.0,
                                     cells[k]["usable"].values) for k in names]),
           "cells": ("target", [int(cells[k]["usable"].values.sum()) for k in names]),
           "parameters": ("target", [cells[k].sizes[k] for k in names])},
        coords={"source": names, "target": names})
    config = {"measure": measure, "starts": int(starts), "points": int(points),
              "blocks": BLOCKS, "horizon": HORIZON, "ratio": RATIO, "weights": "none",
              "tie_break": TIE_BREAK, "tolerance": TOLERANCE}
    out.attrs.update(provenance("dnnphase.compare.transfer_table", config))
    return out
