"""Print the README's table of the paper preset from the committed reports.

    python scripts/paper_table.py [figures/paper]

One row per alpha, one column per knob: where seed-mean test accuracy peaks
along the knob (the set of values the seeds cannot tell from the peak in braces)
and where the load curve turns from concave to convex (the boundary); then the
pooled accuracy-vs-curvature peaks with intervals that resample cells.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

from dnnphase.compare.comparator.peaks import row_shape
from dnnphase.compare.comparator.words import boundary_summary, tied_set
from phasecore import results
from phasecore.commandline import folder_command

KNOB_ORDER = ("dropout", "lr", "batch_size", "label_noise")
TITLES = {"dropout": "dropout", "lr": "learning rate", "batch_size": "batch size",
          "label_noise": "label + data noise"}


def cell(report, i: int) -> str:
    r = report.isel(nonlinearity=i)
    ties = tied_set(report[report.attrs["knob"]].values, r["row_tied"].values)
    text = f"{float(r['row_peak_accuracy']):.3f} at {float(r['row_peak_value']):g} {ties}"
    boundary = float(r["row_boundary_value"])
    if np.isfinite(boundary):
        arrow = "↗" if r["row_boundary_direction"] > 0 else "↘"
        return f"{text}; {arrow} {boundary:.2g}"
    return f"{text}; {row_shape(r['network_curvature'].values).removesuffix(' throughout')}"


def main(folder: str = "figures/paper") -> None:
    reports = {k: results.load(p) for k in KNOB_ORDER
               if (p := Path(folder) / f"report_{k}.nc").exists()}
    if not reports:
        raise FileNotFoundError(f"no report_<knob>.nc in {folder!r}")
    alphas = next(iter(reports.values()))["alpha"].values
    print("| α | " + " | ".join(TITLES[k] for k in reports) + " |")
    print("|---|" + "---|" * len(reports))
    for alpha in sorted(alphas):
        cells = [cell(rep, int(np.flatnonzero(rep["alpha"].values == alpha)[0]))
                 for rep in reports.values()]
        print(f"| {alpha:g} | " + " | ".join(cells) + " |")
    print("| κ (phase labels vs chain) | " + " | ".join(
        f"{rep.attrs['label_kappa']:+.2f}" for rep in reports.values()) + " |")
    print("| best cell ties with a cell next to the boundary | " + " | ".join(
        f"{rep.attrs['rows_tied_adjacent_to_boundary']} of {rep.attrs['rows_with_boundary']} "
        "rows" for rep in reports.values()) + " |")
    print()
    print("Pooled over all models (95 % intervals resampling cells, all seeds of a cell "
          "together):")
    print()
    print("| knob | quadratic peak | best of 8 equal-count bins | models left out |")
    print("|---|---|---|---|")
    for knob, rep in reports.items():
        a = rep.attrs
        print(f"| {TITLES[knob]} | {a['accuracy_peak_curvature']:+.2f} "
              f"({a['accuracy_peak_low']:+.2f} … {a['accuracy_peak_high']:+.2f}) "
              f"| {a['accuracy_binned_peak_curvature']:+.2f} "
              f"({a['accuracy_binned_peak_low']:+.2f} … {a['accuracy_binned_peak_high']:+.2f}) "
              f"| {a['accuracy_fit_excluded']} |")
    for knob, rep in reports.items():
        print(f"{TITLES[knob]}: {boundary_summary(rep)}")


def cli(argv=None) -> None:
    """The command line: bad input is one line and exit code 2, as every command's."""
    sys.exit(folder_command(__doc__.split("\n\n")[0], main, argv, default="figures/paper",
                            holds="report_<knob>.nc"))


if __name__ == "__main__":
    cli()
