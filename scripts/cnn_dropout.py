"""Fig. S2, the CNN with dropout introduced mid-training: run it and write its result,
figure and numbers.

    python scripts/cnn_dropout.py [FOLDER] [--scale reduced|paper|authors|quick] [--seeds 0,1]
                                  [--overwrite]
    python scripts/cnn_dropout.py FOLDER --combine RUN1.nc RUN2.nc ... [--overwrite]

Writes ``cnn_dropout.nc`` and ``cnn_dropout.png`` in FOLDER (default figures/supplement,
the committed ones: existing files are replaced only with ``--overwrite``, checked before
any work; both are written or neither) and prints, where the dropout is introduced and at
the end for every p, the scale-free curvature of the training and test load curves, the
test accuracy and the training loss (mean ± SD over seeds). Scales
(:data:`dnnphase.sweeps.experiments.CNN_DROPOUT_SCALES`):
"reduced", the committed one (about 10 minutes on 2 cores); "paper", the run the paper's
text describes (16 channels, 2 000 epochs, 10 seeds: a GPU, about 15 minutes on one);
"authors", the same with the 20 channels of the authors' code; "quick", seconds.
``--quick`` and ``--paper`` are short for ``--scale quick`` / ``--scale paper``.
``--seeds`` trains a part of the scale's seeds (one machine's share); ``--combine`` joins
such parts' ``cnn_dropout.nc`` files, run on disjoint seeds of one scale, into FOLDER.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

from dnnphase.sweeps.experiments import (
    CNN_DROPOUT,
    CNN_DROPOUT_SCALES,
    cnn_dropout,
    combine_cnn_dropout,
    plot_cnn_dropout,
    separates,
)
from dnnphase.sweeps.sweep import SweepConfig, default_scheduler
from phasecore import results
from phasecore.checks import ConfigError
from phasecore.commandline import Parser, guarded, overwrite_option
from phasecore.panels import save_figure
from phasecore.results import (
    OutputExistsError,
    all_or_nothing,
    check_new_outputs,
    check_output_folder,
)

NAMES = ("cnn_dropout.nc", "cnn_dropout.png")


def _cell(values) -> str:
    return f"{np.nanmean(values):+.2f} ± {np.nanstd(values):.2f}"


def _seeds(text: str, scale: str) -> tuple[int, ...]:
    """``--seeds 0,1``: a part of the scale's seeds."""
    allowed = SweepConfig(**{**CNN_DROPOUT, **CNN_DROPOUT_SCALES[scale]}).seeds
    try:
        seeds = tuple(int(s) for s in text.split(","))
    except ValueError:
        raise ConfigError(f"--seeds must be integers separated by commas (got {text!r})") from None
    if not seeds or len(set(seeds)) != len(seeds) or not set(seeds) <= set(allowed):
        raise ConfigError(f"--seeds must be distinct seeds of the {scale} scale "
                          f"({', '.join(map(str, allowed))}) (got {text!r})")
    return seeds


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    parser = Parser(
        description="Fig. S2: the CNN with dropout introduced mid-training.")
    parser.add_argument("folder", nargs="?", default="figures/supplement",
                        help="where cnn_dropout.nc and cnn_dropout.png go (created if missing)")
    overwrite_option(parser, "cnn_dropout.nc and .png")
    parser.add_argument("--scale", choices=sorted(CNN_DROPOUT_SCALES), default=None,
                        help="the preset (default: reduced, the committed one)")
    parser.add_argument("--quick", action="store_true", help="--scale quick")
    parser.add_argument("--paper", action="store_true", help="--scale paper")
    parser.add_argument("--seeds", default=None,
                        help="train only these seeds of the scale, e.g. 0,1 (default: all "
                             "of them)")
    parser.add_argument("--combine", nargs="+", metavar="RUN.nc", default=None,
                        help="join these results (disjoint seeds of one scale); trains nothing")
    args = parser.parse_args(argv)
    try:
        given = [f"--scale {args.scale}"] if args.scale else []
        given += [f"--{name}" for name in ("quick", "paper") if getattr(args, name)]
        if len(given) > 1:
            raise ConfigError(f"give one scale, not {' and '.join(given)}")
        if args.combine and (args.seeds is not None or given):
            raise ConfigError("--combine trains nothing: give it without --seeds, --scale, "
                              "--quick or --paper (the parts' scale is read from them)")
        args.scale = ("quick" if args.quick else "paper" if args.paper
                      else args.scale or "reduced")
        args.seeds = _seeds(args.seeds, args.scale) if args.seeds is not None else None
        for name in args.combine or ():
            if not Path(name).is_file():
                raise ConfigError(f"--combine: {name!r} is not a file")
        check_output_folder(args.folder)
        check_new_outputs([Path(args.folder) / name for name in NAMES], args.overwrite)
    except (ConfigError, OutputExistsError) as err:
        parser.error(str(err))
    return args


def main(argv: list[str] | None = None) -> None:
    args = parse(argv)
    folder = Path(args.folder)
    if args.combine:
        try:
            parts = [results.load(name, kind="dnnphase.experiments.cnn_dropout")
                     for name in args.combine]
            ds = combine_cnn_dropout(parts)
        except (ConfigError, ValueError) as err:
            raise ConfigError(f"--combine: {err}") from None
    else:
        changes = {"seeds": args.seeds} if args.seeds else {}
        config = SweepConfig(**{**CNN_DROPOUT, **CNN_DROPOUT_SCALES[args.scale], **changes})
        scheduler = "serial" if args.scale == "quick" else default_scheduler(config.device)
        ds = cnn_dropout(args.scale, scheduler=scheduler, **changes)
    outputs = [folder / name for name in NAMES]
    with all_or_nothing(outputs, folder):  # both files or neither (a full disk)
        results.save(ds, outputs[0], overwrite=True)
        save_figure(plot_cnn_dropout(ds), outputs[1])
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


def cli(argv: list[str] | None = None) -> int:
    """``main`` as a command (:func:`phasecore.commandline.guarded`): bad input one line and
    exit code 2; Ctrl-C or SIGTERM one line, and 130 (143 after SIGTERM)."""
    return guarded("scripts/cnn_dropout.py", lambda: main(argv), program=argv is None)


if __name__ == "__main__":
    sys.exit(cli())
