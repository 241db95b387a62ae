"""Prediction, not description: the chain against a baseline that knows no mechanics, on
cells of the committed network diagrams that neither was fitted to.

    python scripts/prediction.py [figures/paper] [--overwrite]

For every ``dnn_<knob>.nc`` in the folder: the chain map (one friction mu-> per alpha, one noise s
per knob value, monotone) and two monotone baselines without mechanics (additive, a_alpha +
b_knob, and saturating, d tanh(a_alpha + b_knob)) are fitted to part of the diagram and
predict the rest (:func:`dnnphase.compare.comparator.prediction.held_out_prediction`:
checkerboard and every-other-column splits); writes ``prediction_<knob>.nc`` beside it and prints
the out-of-sample table (RMSE of the seed-mean scale-free curvature, with the seed-noise floor),
the in-sample fits and the cross-knob transfer (alpha rows fitted on one knob, columns refitted
on another; ``prediction_transfer.nc``). Existing files are replaced only with ``--overwrite``.
Method and reading: docs/prediction.md.
"""

from __future__ import annotations

import sys
from pathlib import Path

from dnnphase.compare.comparator.prediction import (
    MODELS,
    PREDICTORS,
    SPLITS,
    held_out_prediction,
    transfer_table,
)
from phasecore import results
from phasecore.checks import ConfigError
from phasecore.commandline import folder_command

KNOB_ORDER = ("dropout", "lr", "batch_size", "label_noise")
TITLES = {"dropout": "dropout", "lr": "learning rate", "batch_size": "batch size",
          "label_noise": "label + data noise"}
SPLIT_TITLES = {"checkerboard": "checkerboard", "columns": "every other column"}


def out_of_sample_row(knob: str, out) -> list[str]:
    """One table line per split: held-out cells, each predictor's RMSE, the floor, phase
    labels."""
    a = out.attrs
    lines = []
    for split in SPLITS:
        err = {m: a[f"{split}_{m}_rmse"] for m in PREDICTORS}
        best = min(err, key=err.get)
        lines.append(
            f"| {TITLES[knob]} | {SPLIT_TITLES[split]} | {a[f'{split}_cells']} | "
            + " | ".join(f"**{err[m]:.3f}**" if m == best else f"{err[m]:.3f}"
                         for m in PREDICTORS)
            + f" | {a[f'{split}_floor']:.3f} ({a[f'{split}_floor_halves']:.3f}) | "
            + " / ".join(f"{a[f'{split}_{m}_phase_right']:.0%}" for m in PREDICTORS) + " |")
    return lines


def fit_row(knob: str, out) -> str:
    """The in-sample fit of one knob: cells, parameters, RMSEs, the chain's fitted maps."""
    a = out.attrs
    mu, s = out["friction"].values, out["chain_noise"].values
    # a noise on the chain's plateau is only a lower bound: the smallest s that fits as well
    at_least = "≥ " if bool(out["chain_noise_plateau"].values[-1]) else ""
    return (f"| {TITLES[knob]} | {a['cells']} ({a['left_out_reasons']}) | "
            + " / ".join(str(a[f"{m}_parameters"]) for m in MODELS) + " | "
            + " / ".join(f"{a[f'{m}_in_sample_rmse']:.3f}" for m in MODELS)
            + f" | {mu[0]:.3g} → {mu[-1]:.3g} | {s[0]:.3g} → {at_least}{s[-1]:.3g} |")


def transfer_rows(table) -> list[str]:
    """One table line per (source, target) pair: each model's RMSE, the target's floor."""
    lines = []
    for source in table["source"].values:
        for target in table["target"].values:
            if source == target:
                continue
            pair = table.sel(source=source, target=target)
            err = {m: float(pair[f"{m}_rmse"]) for m in MODELS}
            best = min(err, key=err.get)
            lines.append(
                f"| {TITLES[str(source)]} → {TITLES[str(target)]} | {int(pair['cells'])} "
                f"| {int(pair['parameters'])} | "
                + " | ".join(f"**{err[m]:.3f}**" if m == best else f"{err[m]:.3f}"
                             for m in MODELS)
                + f" | {float(pair['floor']):.3f} |")
    return lines


def outputs(folder) -> list[Path]:
    """The files :func:`main` writes in ``folder`` (checked before any work)."""
    knobs = [k for k in KNOB_ORDER if (Path(folder) / f"dnn_{k}.nc").exists()]
    transfer = ["prediction_transfer.nc"] if len(knobs) > 1 else []
    return [Path(folder) / name for name in [f"prediction_{k}.nc" for k in knobs] + transfer]


def main(folder: str = "figures/paper") -> None:
    paths = {k: p for k in KNOB_ORDER if (p := Path(folder) / f"dnn_{k}.nc").exists()}
    if not paths:
        raise ConfigError(f"no dnn_<knob>.nc in {folder}")
    sweeps = {knob: results.load(path) for knob, path in paths.items()}
    outs = {}
    for knob, sweep in sweeps.items():
        outs[knob] = held_out_prediction(sweep)
        results.save(outs[knob], Path(folder) / f"prediction_{knob}.nc", overwrite=True)
    transfer = transfer_table(sweeps) if len(sweeps) > 1 else None
    if transfer is not None:
        results.save(transfer, Path(folder) / "prediction_transfer.nc", overwrite=True)
    print("Out of sample: RMSE of the held-out cells' seed-mean curvature (scale-free; the "
          "best in bold); floor = RMS standard error of those means (in brackets: from the "
          "even/odd seed halves).")
    print()
    print("| knob | split | held-out cells | chain | additive | saturating | local mean "
          "| seed-noise floor | phase label right: chain / additive / saturating / local |")
    print("|---|---|---|---|---|---|---|---|---|")
    for knob, out in outs.items():
        print("\n".join(out_of_sample_row(knob, out)))
    print()
    print("In sample (every usable cell): the chain's mu-> (alpha 0 → 1) and s (least → most "
          "noisy) in units of k y; L = 7, T = 1000, mu<- = 2 mu->.")
    print()
    print("| knob | cells (left out) | parameters chain / additive / saturating "
          "| in-sample RMSE chain / additive / saturating | chain mu-> | chain s |")
    print("|---|---|---|---|---|---|")
    for knob, out in outs.items():
        print(fit_row(knob, out))
    if transfer is not None:
        print()
        print("Cross-knob transfer: each model's alpha rows fitted on the first knob, only its "
              "knob columns refitted on the second (one number per column); RMSE over all the "
              "second's usable cells.")
        print()
        print("| rows from → columns refitted on | cells | parameters | chain | additive "
              "| saturating | seed-noise floor |")
        print("|---|---|---|---|---|---|---|")
        print("\n".join(transfer_rows(transfer)))
    for knob in outs:
        print(f"wrote {Path(folder) / f'prediction_{knob}.nc'}")
    if transfer is not None:
        print(f"wrote {Path(folder) / 'prediction_transfer.nc'}")


def cli(argv=None) -> None:
    """The command line: bad input is one line and exit code 2, as every command's."""
    sys.exit(folder_command(__doc__.split("\n\n")[0], main, argv, writes=outputs))


if __name__ == "__main__":
    cli()
