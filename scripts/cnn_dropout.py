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

import numpy as np

from dnnphase.sweeps.experiments import cnn_dropout, plot_cnn_dropout, separates
from phasecore import results
from phasecore.commandline import Parser, run
from phasecore.panels import save_figure
from phasecore.results import check_output_folder


def _cell(values) -> str:
    return f"{np.nanmean(values):+.2f} ± {np.nanstd(values):.2f}"


def main(folder: str = "figures/supplement", scale: str = "reduced") -> None:
    folder = check_output_folder(folder)
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


def cli(argv=None) -> None:
    """The command line: bad input is one line and exit code 2, as every command's."""
    parser = Parser(description=__doc__.splitlines()[0])
    parser.add_argument("folder", nargs="?", default="figures/supplement",
                        help="where to write (default figures/supplement)")
    scale = parser.add_mutually_exclusive_group()
    scale.add_argument("--quick", dest="scale", action="store_const", const="quick",
                       default="reduced", help="seconds: a smoke test")
    scale.add_argument("--paper", dest="scale", action="store_const", const="paper",
                       help="the authors' scale, for a GPU or a cluster")
    parser.set_defaults(func=lambda args: main(args.folder, scale=args.scale))
    sys.exit(run(parser, argv))


if __name__ == "__main__":
    cli()
