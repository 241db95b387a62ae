"""The comparison report: a chain phase diagram against a network sweep (README, "The
comparison and the fit").

Both diagrams are oriented and rank-aligned (:mod:`dnnphase.compare.alignment`),
every cell is labelled concave / linear / convex from its seed-mean scale-free
curvature with a tolerance band (:func:`phasecore.loadcurve.phase_label`), and
the report Dataset holds:

* label agreement: the fraction of network cells whose label matches the chain
  cell at the same rank position, and Cohen's kappa;
* Spearman rank correlations of mean curvature along every row and column of
  each diagram (:mod:`dnnphase.compare.agreement`);
* accuracy vs curvature: where test accuracy peaks (a quadratic's vertex and the
  best equal-count bin, each with a bootstrap interval over cells; also against the
  test set's curvature where the sweep has it), and per alpha row: the best cell,
  the set of cells tied with it, the boundary and their distance in grid steps
  (:mod:`dnnphase.compare.peaks`).

:func:`dnnphase.compare.text.summary` turns it into lines a person reads.
"""

from __future__ import annotations

import warnings

import numpy as np
import xarray as xr

from dnnphase.compare.agreement import cohen_kappa, rank_correlations
from dnnphase.compare.alignment import (
    aligned_labels,
    check_network,
    check_spring,
    oriented_network,
    oriented_spring,
)
from dnnphase.compare.peaks import accuracy_peak, sweep_row_peaks
from dnnphase.defaults import MEASURE
from phasecore.checks import ConfigError
from phasecore.loadcurve import PHASE_TOLERANCE, phase_label
from phasecore.results import as_result


def compare(spring, network, *, measure: str = MEASURE,
            tolerance: float = PHASE_TOLERANCE) -> xr.Dataset:
    """Compare a chain phase diagram with a network sweep; returns a report Dataset.

    ``spring``, ``network``: the Datasets, or the paths (str or Path) of the files written
    by ``springblock phase`` and ``dnnphase sweep`` (opened).

    ``tolerance``: half-width of the band of scale-free curvature called
    linear (the same for both diagrams). Cells whose seed mean is NaN (all
    seeds diverged) are masked with a warning.
    """
    spring = as_result(spring, "spring", "springblock.phase_diagram")
    network = as_result(network, "network", "dnnphase.sweep")
    check_spring(spring)
    check_network(network, measure)
    if not (np.isfinite(tolerance) and tolerance >= 0):
        raise ConfigError(f"tolerance must be a finite number >= 0 (got {tolerance})")
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
    net_rows, net_cols = rank_correlations(net["curvature"].values)
    chain_rows, chain_cols = rank_correlations(chain["curvature"].values)
    knob = network.attrs["knob"]
    acc_curv, acc_missing = _pooled_peak(network, measure, "curvature_scaled")
    rows = sweep_row_peaks(network, measure)
    report = xr.Dataset(
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
    agreement = float(np.mean(net_labels[ok] == chain_on_net[ok])) if ok.any() else np.nan
    report.attrs.update({
        "kind": "dnnphase.compare",
        "measure": measure,
        "tolerance": tolerance,
        "knob": knob,
        "label_agreement": agreement,
        "label_cells_compared": int(ok.sum()),
        "label_kappa": cohen_kappa(net_labels, chain_on_net),
        "network_mean_rho_along_noise": float(np.nanmean(net_rows)) if np.isfinite(
            net_rows).any() else np.nan,
        "network_mean_rho_along_nonlinearity": float(np.nanmean(net_cols)) if np.isfinite(
            net_cols).any() else np.nan,
        "spring_mean_rho_along_noise": float(np.nanmean(chain_rows)) if np.isfinite(
            chain_rows).any() else np.nan,
        "spring_mean_rho_along_nonlinearity": float(np.nanmean(chain_cols)) if np.isfinite(
            chain_cols).any() else np.nan,
        "accuracy_peak_curvature": acc_curv["peak"],
        "accuracy_peak_low": acc_curv["peak_low"],
        "accuracy_peak_high": acc_curv["peak_high"],
        "accuracy_binned_peak_curvature": acc_curv["binned_peak"],
        "accuracy_binned_peak_low": acc_curv["binned_low"],
        "accuracy_binned_peak_high": acc_curv["binned_high"],
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
    if "curvature_scaled_test" in network and np.isfinite(
            network["curvature_scaled_test"].sel(measure=measure)).any():
        test, test_missing = _pooled_peak(network, measure, "curvature_scaled_test")
        report.attrs.update({
            "accuracy_test_curve_peak_curvature": test["peak"],
            "accuracy_test_curve_peak_low": test["peak_low"],
            "accuracy_test_curve_peak_high": test["peak_high"],
            "accuracy_test_curve_binned_peak_curvature": test["binned_peak"],
            "accuracy_test_curve_binned_peak_low": test["binned_low"],
            "accuracy_test_curve_binned_peak_high": test["binned_high"],
            "accuracy_test_curve_missing": test_missing})
    return report


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
