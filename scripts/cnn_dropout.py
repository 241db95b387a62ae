"""Fig. S2, the CNN with dropout introduced mid-training: run it and write its result,
figure and numbers.

    python scripts/cnn_dropout.py [figures/supplement] [--quick | --paper]

Writes ``cnn_dropout.nc`` and ``cnn_dropout.png`` in the folder and prints, where the
dropout is introduced and at the end for every p, the scale-free curvature of the
training and test load curves, the test accuracy and the training loss (mean ± SD over
seeds). The committed ("reduced") scale: about 10 minutes on 2 cores; ``--quick``:
seconds; ``--paper``: the authors' scale, for a GPU or a cluster.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

from dnnphase.sweeps.experiments import cnn_dropout, plot_cnn_dropout, separates
from phasecore import results
from phasecore.panels import save_figure


def _cell(values) -> str:
    return f"{np.nanmean(values):+.2f} ± {np.nanstd(values):.2f}"


def main(folder: str = "figures/supplement", scale: str = "reduced") -> None:
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    ds = cnn_dropout(scale, scheduler="processes") if scale != "quick" else cnn_dropout(scale)
    results.save(ds, folder / "cnn_dropout.nc", overwrite=True)
    save_figure(plot_cnn_dropout(ds), folder / "cnn_dropout.png")
    print_table(ds)


def print_table(ds) -> None:
    """The README's table: per state, curvatures (training, test), accuracy, loss."""
    print("| state | curvature, training | curvature, test | test accuracy | training loss |")
    print("|---|---|---|---|---|")
    rows = [(f"epoch {ds.attrs['dropout_from_epoch'] - 1}, before", "_before", {})]
    rows += [(f"end, p = {p:g}", "", {"dropout": p}) for p in ds["dropout"].values]
    separating = separates(ds)
    for label, suffix, where in rows:
        cell = ds.sel(where)
        acc = cell[f"test_accuracy{suffix}"].values
        shape = ([_cell(cell[f"curvature_scaled{s}"].values) for s in (suffix, f"_test{suffix}")]
                 if not where or separating.sel(where) else ["no separation"] * 2)
        print(f"| {label} | {shape[0]} | {shape[1]} "
              f"| {np.nanmean(acc):.3f} ± {np.nanstd(acc):.3f} "
              f"| {np.nanmean(cell[f'train_loss{suffix}'].values):.2g} |")


if __name__ == "__main__":
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    scale = "quick" if "--quick" in sys.argv else "paper" if "--paper" in sys.argv else "reduced"
    main(*args[:1], scale=scale)
