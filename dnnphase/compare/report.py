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
* accuracy vs curvature: where test accuracy peaks, with a bootstrap interval,
  and per alpha row (:mod:`dnnphase.compare.peaks`).

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


def compare(spring: xr.Dataset, network: xr.Dataset, *, measure: str = MEASURE,
            tolerance: float = PHASE_TOLERANCE) -> xr.Dataset:
    """Compare a chain phase diagram with a network sweep; returns a report Dataset.

    ``tolerance``: half-width of the band of scale-free curvature called
    linear (the same for both diagrams). Cells whose seed mean is NaN (all
    seeds diverged) are masked with a warning.
    """
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
    try:
        acc_curv, acc_missing = accuracy_peak(
            network["curvature_scaled"].sel(measure=measure).values,
            network["test_accuracy"].values), ""
    except ValueError as err:  # too few models: report the rest and say why
        acc_curv = {"excluded": 0, "low": np.nan, "high": np.nan,
                    "peak": np.nan, "peak_low": np.nan, "peak_high": np.nan,
                    "bin_curvature": np.full(8, np.nan), "bin_accuracy": np.full(8, np.nan),
                    "spearman_abs": np.nan}
        acc_missing = str(err)
    rows = sweep_row_peaks(network, measure)
    report = xr.Dataset(
        {
            **{f"row_{name}": ("nonlinearity", value) for name, value in rows.items()},
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
        "accuracy_spearman_abs_curvature": acc_curv["spearman_abs"],
        "accuracy_fit_excluded": acc_curv["excluded"],
        "accuracy_fit_low": acc_curv["low"],
        "accuracy_fit_high": acc_curv["high"],
        "accuracy_missing": acc_missing,
    })
    return report
