"""The CNN's alpha x dropout diagram: the main text's "we observe the same behavior for ...
network architectures (e.g., CNNs)", Fig. 1c with the supplement's CNN (Fig. S2's network)
in place of the MLP.

    python scripts/cnn_phase.py [FOLDER] [--full | --quick] [--workers N] [--redraw]

Writes ``cnn_phase.nc`` (the sweep, resumable: rerun the same command after an interruption;
a file of another configuration is an error) and ``cnn_phase.png`` in FOLDER (default
figures/supplement/cnn_phase; an existing ``.png`` is kept, ``--redraw`` draws it again from
the file). The network is the supplement's CNN (7 conv layers of 16
channels, BatchNorm, LeakyReLU(alpha), pooling and upsampling keeping every layer's shape);
the training is Fig. 1c's (Adam at lr 1e-3, full batch, 100 epochs, dropout in every hidden
layer from the start), trained the whole run (the authors stop only when the loss stops
changing, at 1e-10). Scales, fixed before any cell was computed:

* "reduced" (the committed one): 1 280 training images, 3 alphas (0, 0.5, 1) x 5 dropout
  rates (0 ... 0.3) x 3 seeds, 8 chunks of about 6 networks; measured, about 4.5
  CPU-minutes a chunk, so about 20 minutes on 2 idle cores (about 100 with the 2 cores
  shared at load 7, as when it was first run);
* "full" (the paper's grid, a GPU): 2 560 training images, 6 alphas x 16 dropout rates
  (0 ... 0.3) x 10 seeds — Fig. 1c's grid;
* "quick": seconds (a test): the 8 x 8 digits, a small CNN, 2 x 2 cells x 2 seeds.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np

from phasecore.commandline import scaled_figures_parser

FOLDER = "figures/supplement/cnn_phase"
NAME = "cnn_phase"

#: The supplement's CNN on Fig. 1c's training (fields of SweepConfig).
CNN_PHASE = dict(arch="cnn", dataset="mnist5k", depth=7, channels=16, knob="dropout",
                 optimizer="adam", lr=1e-3, batch_size=None, epochs=100,
                 loss_threshold=0.0, rel_tol=0.0, measures=("trace_ratio", "fuzziness"))
#: Scale -> the grid and data that differ from :data:`CNN_PHASE`.
SCALES = {
    "full": dict(n_train=2560, alphas=tuple(np.round(np.linspace(0, 1, 6), 10)),
                 values=tuple(np.round(np.linspace(0, 0.3, 16), 10)), seeds=tuple(range(10))),
    "reduced": dict(n_train=1280, alphas=(0.0, 0.5, 1.0),
                    values=(0.0, 0.075, 0.15, 0.225, 0.3), seeds=(0, 1, 2)),
    "quick": dict(dataset="digits", n_train=300, depth=3, channels=4, epochs=5,
                  alphas=(0.0, 1.0), values=(0.0, 0.3), seeds=(0, 1)),
}
NOTES = {"full": "Fig. 1c's grid: 6 alphas x 16 dropout rates x 10 seeds, 2 560 images",
         "reduced": "reduced: 3 alphas x 5 dropout rates x 3 seeds, 1 280 images "
                    "(Fig. 1c: 6 x 16 x 10, 2 560)",
         "quick": "quick: 8 x 8 digits, a test"}


def config(scale: str):
    """The sweep's checked configuration at ``scale`` (a key of :data:`SCALES`)."""
    from dnnphase.sweeps.sweep import SweepConfig

    return SweepConfig(**{**CNN_PHASE, **SCALES[scale]})


def parse(argv: list[str] | None = None):
    """The options and the configuration, all checked before any work (exit 2, one line)."""
    parser = scaled_figures_parser(
        __doc__.split("\n\n")[0], folder=FOLDER, names=(NAME,), what="diagrams",
        full=NOTES["full"] + " (a GPU)", quick=NOTES["quick"])
    args = parser.parse_args(argv)
    from dnnphase.sweeps.named_sweeps import check_folder
    from phasecore.checks import ConfigError
    from phasecore.executors import validate_workers

    # --quick: seconds of work, less than a pool's start-up (40 s with a pool against 5 s
    # here): it runs here, and says so when --workers asked for a pool
    scheduler = "serial" if args.scale == "quick" else "processes"
    args.serial_note = "" if args.scale != "quick" or args.workers is None else (
        "cnn_phase.py: --quick runs its sweep here: it takes seconds, less than a pool's "
        "workers take to start")
    try:
        validate_workers(args.workers)  # a bad --workers is refused, whatever the scale
        if scheduler == "serial":
            args.workers = None
        if args.only is not None and args.only != NAME:
            raise ConfigError(f"--only must be {NAME} (got {args.only!r})")
        configs = {NAME: config(args.scale)}
        check_folder(args.folder, configs, (NAME,), scheduler=scheduler,
                     figures={f"{NAME}.png": (NAME,)}, redraw=args.redraw)
    except (ConfigError, FileNotFoundError, ValueError) as err:
        parser.error(str(err))
    return args, configs[NAME], scheduler


def main(argv: list[str] | None = None) -> int:
    """The command line: bad input exits 2 with one line before any work; a failed write
    (a full disk) 2 with one line; Ctrl-C 130 with the hint to rerun (the sweep resumes)."""
    from phasecore.commandline import checked_script

    return checked_script("cnn_phase.py", parse, work, argv)


def work(args, cfg, scheduler) -> None:
    from dnnphase.sweeps.named_sweeps import draw_figure, run_named
    from dnnphase.sweeps.plotting import sweep_panels
    from phasecore.panels import plot_phase_grid

    folder = Path(args.folder)
    folder.mkdir(parents=True, exist_ok=True)
    begun = time.monotonic()
    ds = run_named(NAME, cfg, folder, (NAME,), scheduler=scheduler, workers=args.workers,
                   quiet=args.scale == "quick")
    title = (f"the supplement's CNN (depth {cfg.depth}, {cfg.channels} channels), alpha x "
             f"dropout\n{NOTES[args.scale]}")
    draw_figure(folder / f"{NAME}.png",
                lambda: plot_phase_grid(sweep_panels(ds, "trace_ratio"), title=title),
                args.redraw)
    print(f"done in {time.monotonic() - begun:.0f} s; {folder}/{NAME}.nc and .png")


if __name__ == "__main__":
    sys.exit(main())
