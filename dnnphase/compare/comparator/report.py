"""The comparison report: a chain phase diagram against a network sweep (README, "The
comparison and the fit").

Both diagrams are oriented and rank-aligned (:mod:`dnnphase.compare.comparator.alignment`),
every cell is labelled concave / linear / convex from its seed-mean scale-free
curvature with a tolerance band (:func:`phasecore.loadcurve.phase_label`), and
the report Dataset holds:

* label agreement: the fraction of network cells whose label matches the chain
  cell at the same rank position, and Cohen's kappa;
* Spearman rank correlations of mean curvature along every row and column of
  each diagram (:mod:`dnnphase.compare.comparator.agreement`);
* accuracy vs curvature: where test accuracy peaks (a quadratic's vertex and the
  best equal-count bin, each with a bootstrap interval over cells; also against the
  test set's curvature where the sweep has it), and per alpha row: the best cell,
  the set of cells tied with it, the boundary and their distance in grid steps
  (:mod:`dnnphase.compare.comparator.peaks`);
* where the two disagree (:func:`disagreement`): the sign of curvature's change
  along every row and column of both diagrams, and the rows / columns / cells where
  the chain's sign is the opposite of the networks' at the same rank position.

:func:`dnnphase.compare.comparator.words.summary` turns it into lines a person reads.
"""

from __future__ import annotations

import warnings

import numpy as np
import xarray as xr

from dnnphase.compare.comparator.agreement import cohen_kappa, rank_correlations
from dnnphase.compare.comparator.alignment import (
    aligned_labels,
    chain_axes,
    check_network,
    check_spring,
    oriented_network,
    oriented_spring,
    seed_se,
)
from dnnphase.compare.comparator.peaks import accuracy_peak, sweep_row_peaks
from dnnphase.defaults import MEASURE
from dnnphase.knobs import larger_is_noisier
from phasecore.checks import is_finite, require
from phasecore.loadcurve import PHASE_TOLERANCE, check_tolerance, phase_label
from phasecore.results import as_result

__all__ = ["compare", "disagreement", "line_signs"]


def compare(spring, network, *, measure: str = MEASURE,
            tolerance: float = PHASE_TOLERANCE) -> xr.Dataset:
    """Compare a chain phase diagram with a network sweep; returns a report Dataset.

    Cells whose seed mean is NaN (all seeds diverged) are masked with a warning.

    Parameters
    ----------
    spring, network : xarray.Dataset, str or Path
        The Datasets, or the paths of the files written by ``springblock phase``
        (:func:`springblock.phase_diagram`) and ``dnnphase sweep``
        (:func:`dnnphase.sweep`), opened.
    measure : str, default "trace_ratio"
        The network's separation measure compared.
    tolerance : float
        Half-width of the band of scale-free curvature called linear (the same for
        both diagrams).

    Returns
    -------
    xarray.Dataset
        Per network cell (alpha, knob): both phase labels, the chain's matching
        cell, their agreement, rank correlations and accuracy peaks; the summary
        numbers (``label_agreement``, ``label_kappa``, ...) in ``attrs``. The signs
        of curvature's change per row and column, and where the two diagrams' signs
        are opposite, are :func:`disagreement`'s variables and attributes, merged in.
        :func:`summary` prints it in words.

    Raises
    ------
    ConfigError
        A bad argument (a ``ValueError``): an unknown measure, a tolerance out of range,
        a path that is not a result file.
    ValueError
        A Dataset that is not the result it should be, or a diagram with no finite
        cell.
    """
    spring = as_result(spring, "spring", "springblock.phase_diagram")
    network = as_result(network, "network", "dnnphase.sweep")
    check_spring(spring)
    check_network(network, measure)
    check_tolerance(tolerance)
    net = oriented_network(network, measure)
    chain = oriented_spring(spring)
    for what, cells in (("network", net), ("chain", chain)):
        n_nan = int(np.isnan(cells["curvature"]).sum())
        if n_nan:
            warnings.warn(f"{n_nan} {what} cell(s) have no finite curvature (diverged or no "
                          "drop) and are masked", stacklevel=2)
    net_labels = phase_label(net["curvature"].values, tolerance)
    chain_labels = phase_label(chain["curvature"].values, tolerance)
    chain_on_net = aligned_labels(chain_labels, net_labels.shape)
    ok = np.isfinite(net_labels) & np.isfinite(chain_on_net)
    net_rho = rank_correlations(net["curvature"].values)
    chain_rho = rank_correlations(chain["curvature"].values)
    knob = network.attrs["knob"]
    acc_curv, acc_missing = _pooled_peak(network, measure, "curvature_scaled")
    rows = sweep_row_peaks(network, measure)
    disagree = disagreement(spring, network, measure)
    report = _report_cells(net, chain, knob, rows, (net_labels, chain_labels, chain_on_net, ok),
                           net_rho, chain_rho, acc_curv)
    agreement = float(np.mean(net_labels[ok] == chain_on_net[ok])) if ok.any() else np.nan
    report.attrs.update({
        "kind": "dnnphase.compare",
        "measure": measure,
        "tolerance": tolerance,
        "knob": knob,
        "label_agreement": agreement,
        "label_cells_compared": int(ok.sum()),
        "label_kappa": cohen_kappa(net_labels, chain_on_net),
        **_mean_rho("network", *net_rho),
        **_mean_rho("spring", *chain_rho),
        **_peak_attrs("accuracy", acc_curv),
        "accuracy_peak_cells": acc_curv["n_cells"],
        "accuracy_peak_resampled": "cells (all seeds of a cell together)",
        "rows_with_boundary": int(np.isfinite(rows["boundary_value"]).sum()),
        "rows_tied_adjacent_to_boundary": int(np.nansum(rows["tied_adjacent_to_boundary"])),
        "accuracy_spearman_abs_curvature": acc_curv["spearman_abs"],
        "accuracy_fit_excluded": acc_curv["excluded"],
        "accuracy_fit_low": acc_curv["low"],
        "accuracy_fit_high": acc_curv["high"],
        "accuracy_missing": acc_missing,
    })
    report = report.merge(disagree.drop_vars(["alpha", knob, "friction", "chain_noise"],
                                             errors="ignore"))
    report.attrs.update(disagree.attrs)
    if "curvature_scaled_test" in network and np.isfinite(
            network["curvature_scaled_test"].sel(measure=measure)).any():
        test, test_missing = _pooled_peak(network, measure, "curvature_scaled_test")
        report.attrs.update({**_peak_attrs("accuracy_test_curve", test),
                             "accuracy_test_curve_missing": test_missing})
    return report


def _report_cells(net, chain, knob, rows, labels, net_rho, chain_rho, acc_curv) -> xr.Dataset:
    """The report's variables: per network cell, per chain cell, per row and column, per
    curvature bin (the oriented diagrams, their labels and rank correlations)."""
    net_labels, chain_labels, chain_on_net, ok = labels
    net_rows, net_cols = net_rho
    chain_rows, chain_cols = chain_rho
    return xr.Dataset(
        {
            **{f"row_{name}": ("nonlinearity", value) for name, value in rows.items()
               if name != "tied"},
            "row_tied": (("nonlinearity", "noisiness"), rows["tied"],
                         {"long_name": "1 where the cell's seed-mean accuracy ties with the "
                                       "row's best (within 2 standard errors)"}),
            "network_curvature": (("nonlinearity", "noisiness"), net["curvature"].values,
                                  {"long_name": "seed-mean scale-free curvature"}),
            "network_label": (("nonlinearity", "noisiness"), net_labels,
                              {"long_name": "-1 concave, 0 linear, +1 convex"}),
            "network_accuracy": (("nonlinearity", "noisiness"), net["accuracy"].values),
            "spring_label_aligned": (("nonlinearity", "noisiness"), chain_on_net,
                                     {"long_name": "chain label at the same rank position"}),
            "label_agreement": (("nonlinearity", "noisiness"),
                                np.where(ok, net_labels == chain_on_net, np.nan)),
            "spring_curvature": (("spring_nonlinearity", "spring_noisiness"),
                                 chain["curvature"].values),
            "spring_label": (("spring_nonlinearity", "spring_noisiness"), chain_labels),
            "network_rho_along_noise": ("nonlinearity", net_rows),
            "network_rho_along_nonlinearity": ("noisiness", net_cols),
            "spring_rho_along_noise": ("spring_nonlinearity", chain_rows),
            "spring_rho_along_nonlinearity": ("spring_noisiness", chain_cols),
            "accuracy_bin_curvature": ("curvature_bin", acc_curv["bin_curvature"]),
            "accuracy_bin_mean": ("curvature_bin", acc_curv["bin_accuracy"]),
        },
        coords={
            "alpha": ("nonlinearity", net["alpha"].values),
            knob: ("noisiness", net["knob"].values),
            "friction": ("spring_nonlinearity", chain["friction"].values),
            "chain_noise": ("spring_noisiness", chain["chain_noise"].values),
        },
    )


def _mean_rho(which: str, rows: np.ndarray, cols: np.ndarray) -> dict:
    """Mean rank correlation along noise (per row) and along nonlinearity (per column);
    NaN where none is finite."""
    def mean(rho):
        return float(np.nanmean(rho)) if np.isfinite(rho).any() else np.nan

    return {f"{which}_mean_rho_along_noise": mean(rows),
            f"{which}_mean_rho_along_nonlinearity": mean(cols)}


def _peak_attrs(prefix: str, peak: dict) -> dict:
    """Where accuracy peaks in curvature (fitted and binned, with 95 % bounds), as attrs."""
    return {f"{prefix}_peak_curvature": peak["peak"],
            f"{prefix}_peak_low": peak["peak_low"],
            f"{prefix}_peak_high": peak["peak_high"],
            f"{prefix}_binned_peak_curvature": peak["binned_peak"],
            f"{prefix}_binned_peak_low": peak["binned_low"],
            f"{prefix}_binned_peak_high": peak["binned_high"]}


def _pooled_peak(network: xr.Dataset, measure: str, curvature: str) -> tuple[dict, str]:
    """:func:`accuracy_peak` of test accuracy against ``curvature`` (a variable of the
    sweep: the training or the test set's), cells by seeds; with too few models, NaNs and
    the reason."""
    knob = network.attrs["knob"]
    order = ("alpha", knob, "seed")
    try:
        return accuracy_peak(
            network[curvature].sel(measure=measure).transpose(*order).values,
            network["test_accuracy"].transpose(*order).values), ""
    except ValueError as err:  # too few models: report the rest and say why
        nan = {k: np.nan for k in ("low", "high", "peak", "peak_low", "peak_high",
                                   "binned_peak", "binned_low", "binned_high", "spearman_abs")}
        return {**nan, "excluded": 0, "n_cells": 0, "bin_curvature": np.full(8, np.nan),
                "bin_accuracy": np.full(8, np.nan)}, str(err)


# --- where the two disagree -----------------------------------------------------------

#: A line's curvature changes one way only if |Spearman rho| along it is at least this.
SIGN_RHO = 0.5
#: ... and its end-to-end change of scale-free curvature is beyond this (a fifth of the
#: linear band, :data:`phasecore.loadcurve.PHASE_TOLERANCE`) and beyond 2 standard errors.
SIGN_RESOLUTION = 0.01
#: The theory's direction (the paper's dictionary): more noise -> more convex (+1), more
#: nonlinearity / friction -> more concave (-1).
EXPECTED_SIGN = {"noise": 1, "nonlinearity": -1}


def line_signs(curvature: np.ndarray, se: np.ndarray, axis: int, *,
               rho_min: float = SIGN_RHO, resolution: float = SIGN_RESOLUTION) -> np.ndarray:
    """Sign of curvature's change along every line of an oriented diagram.

    curvature, se : (R, C) seed-mean scale-free curvature and its standard error (NaN:
        unknown, read as 0), both axes increasing (nonlinearity down, noise across).
    axis : 1 along each row (noise), returns (R,); 0 along each column
        (nonlinearity / friction), returns (C,).

    +1: curvature rises (more convex), -1: falls (more concave), 0: neither clearly —
    the end-to-end change (last finite cell minus first) is within ``resolution`` or
    2 standard errors (a flat line: the frictionless chain), or |Spearman rho| <
    ``rho_min`` or rho and the end-to-end change have opposite signs (the line rises
    and then falls). NaN: fewer than 3 finite cells.
    """
    require(axis in (0, 1), "axis", "0 (columns) or 1 (rows)", axis)
    curvature = np.asarray(curvature, dtype=float)
    se = np.nan_to_num(np.asarray(se, dtype=float), nan=0.0)
    rows, cols = rank_correlations(curvature)
    rho = rows if axis == 1 else cols
    lines = curvature if axis == 1 else curvature.T  # (n lines, cells along each)
    line_se = se if axis == 1 else se.T
    signs = np.full(lines.shape[0], np.nan)
    for k, (values, errors) in enumerate(zip(lines, line_se, strict=True)):
        finite = np.flatnonzero(np.isfinite(values))
        if finite.size < 3:
            continue
        first, last = finite[0], finite[-1]
        change = values[last] - values[first]
        noise = 2.0 * np.hypot(errors[first], errors[last])
        clear = abs(change) > max(resolution, noise)
        monotone = np.isfinite(rho[k]) and abs(rho[k]) >= rho_min and (
            np.sign(rho[k]) == np.sign(change))
        signs[k] = np.sign(change) if clear and monotone else 0.0
    return signs


def reversed_lines(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """1 where two sign arrays (n,) are opposite (+1 against -1), 0 where both are known
    and not opposite (equal, or one of them 0: unresolved), NaN where either is NaN."""
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    return np.where(np.isfinite(a) & np.isfinite(b), (a * b < 0).astype(float), np.nan)


def cell_map(reversed_rows: np.ndarray, reversed_cols: np.ndarray) -> np.ndarray:
    """(R, C) codes from the reversed rows (R,) and columns (C,) of a grid: 0 none,
    1 the cell's column (along nonlinearity), 2 its row (along noise), 3 both."""
    rows = np.nan_to_num(np.asarray(reversed_rows, dtype=float)).astype(int)
    cols = np.nan_to_num(np.asarray(reversed_cols, dtype=float)).astype(int)
    return cols[None, :] + 2 * rows[:, None]


def _at_positions(signs: np.ndarray, n: int) -> np.ndarray:
    """Signs (m,) of a diagram's lines read at the rank positions of n lines (n,), the
    way :func:`aligned_labels` matches cells (nearest relative rank)."""
    return aligned_labels(np.asarray(signs, dtype=float)[None, :], (1, n))[0]


def oriented_errors(spring: xr.Dataset, network: xr.Dataset,
                    measure: str = MEASURE) -> tuple[np.ndarray, np.ndarray]:
    """Seed standard errors of the mean curvature, oriented as
    :func:`oriented_network` (R, C) and :func:`oriented_spring` (R_s, C_s)."""
    knob = network.attrs["knob"]
    net = seed_se(network["curvature_scaled"].sel(measure=measure)).transpose("alpha", knob)
    net = net.sortby("alpha", ascending=False).sortby(knob, ascending=larger_is_noisier(network))
    friction, noise = chain_axes(spring)
    chain = seed_se(spring["curvature_scaled"]).transpose(friction, noise)
    return net.values, chain.sortby(friction).sortby(noise).values


def disagreement(spring, network, measure: str = MEASURE, *, rho_min: float = SIGN_RHO,
                 resolution: float = SIGN_RESOLUTION) -> xr.Dataset:
    """Where the chain's curvature changes the other way from the networks'.

    Per row and column of both oriented diagrams, the sign of curvature's change
    (:func:`line_signs`: along noise per row, along nonlinearity = friction per column).
    The two grids differ (6 alpha x 16 dropout values against 6 mu-> x 8 noise levels),
    so lines are compared at equal *relative rank* position, as the phase labels are
    (:func:`aligned_labels`): network column j against the chain column at the same
    quantile of the noise axis, network row i against the chain row at the same quantile
    of the friction axis; and the other way round for the chain's grid. A line pair
    *disagrees* when its signs are opposite (+1 against -1); a flat or non-monotone line
    (sign 0) against a clear one is unresolved, not counted. Each sign is also held
    against the theory's direction (:data:`EXPECTED_SIGN`), which says who departs.

    Returns a Dataset: ``network_sign_along_noise`` (nonlinearity),
    ``network_sign_along_nonlinearity`` (noisiness), ``spring_sign_along_noise``
    (spring_nonlinearity), ``spring_sign_along_nonlinearity`` (spring_noisiness), the
    chain's signs at the network's positions (``spring_sign_along_..._aligned``), cell
    maps ``disagreement`` (nonlinearity, noisiness) and ``spring_disagreement``
    (spring_nonlinearity, spring_noisiness) coded by :func:`cell_map`; attrs count the
    disagreeing rows, columns and cells of each grid.
    """
    require(is_finite(rho_min) and 0 < rho_min <= 1, "rho_min", "a number in (0, 1]", rho_min)
    require(is_finite(resolution) and resolution >= 0, "resolution", "a finite number >= 0",
            resolution)
    spring = as_result(spring, "spring", "springblock.phase_diagram")
    network = as_result(network, "network", "dnnphase.sweep")
    net, chain = oriented_network(network, measure), oriented_spring(spring)
    net_se, chain_se = oriented_errors(spring, network, measure)
    knob = network.attrs["knob"]
    sign = {}
    for what, cells, se in (("network", net, net_se), ("spring", chain, chain_se)):
        for along, axis in (("noise", 1), ("nonlinearity", 0)):
            sign[what, along] = line_signs(cells["curvature"].values, se, axis,
                                           rho_min=rho_min, resolution=resolution)
    n_rows, n_cols = net["curvature"].shape
    s_rows, s_cols = chain["curvature"].shape
    chain_on_net = {"noise": _at_positions(sign["spring", "noise"], n_rows),
                    "nonlinearity": _at_positions(sign["spring", "nonlinearity"], n_cols)}
    net_on_chain = {"noise": _at_positions(sign["network", "noise"], s_rows),
                    "nonlinearity": _at_positions(sign["network", "nonlinearity"], s_cols)}
    rev = {("network", along): reversed_lines(sign["network", along], chain_on_net[along])
           for along in ("noise", "nonlinearity")}
    rev |= {("spring", along): reversed_lines(sign["spring", along], net_on_chain[along])
            for along in ("noise", "nonlinearity")}
    net_map = cell_map(rev["network", "noise"], rev["network", "nonlinearity"])
    chain_map = cell_map(rev["spring", "noise"], rev["spring", "nonlinearity"])
    codes = "0 same sign or unresolved, 1 opposite along nonlinearity (the column), " \
            "2 opposite along noise (the row), 3 both"
    signs_meaning = "+1 rises (more convex), -1 falls (more concave), 0 flat or not monotone"
    out = xr.Dataset(
        {
            "network_sign_along_noise": ("nonlinearity", sign["network", "noise"],
                                         {"long_name": signs_meaning}),
            "network_sign_along_nonlinearity": ("noisiness", sign["network", "nonlinearity"],
                                                {"long_name": signs_meaning}),
            "spring_sign_along_noise": ("spring_nonlinearity", sign["spring", "noise"],
                                        {"long_name": signs_meaning}),
            "spring_sign_along_nonlinearity": ("spring_noisiness",
                                               sign["spring", "nonlinearity"],
                                               {"long_name": signs_meaning}),
            "spring_sign_along_noise_aligned": (
                "nonlinearity", chain_on_net["noise"],
                {"long_name": "the chain's sign along noise at the row's rank position"}),
            "spring_sign_along_nonlinearity_aligned": (
                "noisiness", chain_on_net["nonlinearity"],
                {"long_name": "the chain's sign along friction at the column's rank position"}),
            "disagreement": (("nonlinearity", "noisiness"), net_map, {"long_name": codes}),
            "spring_disagreement": (("spring_nonlinearity", "spring_noisiness"), chain_map,
                                    {"long_name": codes}),
        },
        coords={"alpha": ("nonlinearity", net["alpha"].values),
                knob: ("noisiness", net["knob"].values),
                "friction": ("spring_nonlinearity", chain["friction"].values),
                "chain_noise": ("spring_noisiness", chain["chain_noise"].values)},
    )

    def count(values) -> int:
        return int(np.nansum(values))

    def against(what: str, along: str) -> int:
        return int(np.sum(sign[what, along] == -EXPECTED_SIGN[along]))

    out.attrs.update({
        "sign_rho_threshold": rho_min,
        "sign_resolution": resolution,
        "sign_rule": f"sign of the end-to-end change where it exceeds {resolution:g} and 2 "
                     f"standard errors and |Spearman rho| >= {rho_min:g} agrees with it; else 0",
        "rows_disagreeing": count(rev["network", "noise"]),
        "columns_disagreeing": count(rev["network", "nonlinearity"]),
        "cells_disagreeing": int(np.sum(net_map > 0)),
        "spring_rows_disagreeing": count(rev["spring", "noise"]),
        "spring_columns_disagreeing": count(rev["spring", "nonlinearity"]),
        "spring_cells_disagreeing": int(np.sum(chain_map > 0)),
        "network_rows_against_theory": against("network", "noise"),
        "network_columns_against_theory": against("network", "nonlinearity"),
        "spring_rows_against_theory": against("spring", "noise"),
        "spring_columns_against_theory": against("spring", "nonlinearity"),
    })
    return out
