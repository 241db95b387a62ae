"""The supplement's universality figures (Figs. S5, S6, S7a, S7b): one network sweep and
one figure per diagram (:mod:`dnnphase.sweeps.universality`).

    python scripts/universality.py [FOLDER] [--only S5,S6,S7a,S7b]
                                   [--paper-grid | --full | --quick] [--workers N]
                                   [--scheduler processes|serial|tcp://...] [--redraw]

Writes ``<diagram>.nc`` (the sweep, resumable: rerun the same command after an
interruption) and ``<diagram>.png`` (mean load curves per cell over the test accuracy and
over the curvature) in FOLDER, and prints each figure's wall time. FOLDER defaults to the
scale's own (:data:`dnnphase.sweeps.universality.SCALE_FOLDERS`): the reduced scale's
figures/supplement/universality, the others a subfolder of it (``paper_grid``, ``full``,
``quick``). A diagram whose file holds the same configuration is reused, one with another
configuration is an error; an existing ``.png`` is kept (``--redraw`` draws it again from
its file); a diagram with the configuration of another one's file (S5's
depth 7 is S6's width 100) is copied from it. The committed ("reduced") scale runs each
figure in at most 30 minutes on 2 cores; ``--paper-grid`` (6 alphas x 16 dropout rates x 5
seeds) is for background runs over several sessions on 2 cores (about 25 core-minutes a
width-100 diagram; width 400 took 6 183 s with two workers: interrupt it at will, the same
command resumes);
``--full`` is the paper's scale (a GPU, or a Dask cluster with ``--scheduler
tcp://host:port``); ``--quick`` seconds (tests). Every
option, the configurations and the data are checked before any work.
"""

from __future__ import annotations

import sys
import time
from functools import partial
from pathlib import Path

from dnnphase.sweeps import universality
from phasecore.commandline import checked_script, scaled_figures_parser

ROOT = Path(__file__).resolve().parents[1]


def parse(argv: list[str] | None = None):
    """The options, and every diagram's configuration, all checked: a bad one exits 2 with
    one line, before anything is written."""
    parser = scaled_figures_parser(
        __doc__.split("\n\n")[0], folder=universality.SCALE_FOLDERS,
        names=universality.FIGURES, what="figures",
        full="the paper's scale: 6 alphas x 16 dropout rates x 10 seeds",
        quick="seconds: the 8 x 8 digits, 5 epochs (a test)",
        scales={"paper-grid": universality.SCALE_NOTES["paper-grid"]})
    parser.add_argument("--scheduler", default=None,
                        help="processes (default; on CUDA serial, one GPU being one worker, "
                             "unless --workers asks for a pool; --quick: serial), serial, or a "
                             "Dask address tcp://host:port (the full scale on a cluster)")
    args = parser.parse_args(argv)
    if args.folder is None:
        args.folder = universality.SCALE_FOLDERS[args.scale]
    from dnnphase.sweeps.named_sweeps import check_folder, figure_pool
    from phasecore.checks import ConfigError
    from phasecore.executors import validate_scheduler, validate_workers

    # None: chosen by the configurations' device (figure_pool)
    scheduler = args.scheduler or ("serial" if args.scale == "quick" else None)
    # --quick: seconds of work a sweep, less than a pool's start-up (spawned workers import
    # torch): with a pool it would be several times slower, so it runs here, and says so
    args.serial_note = "" if args.scale != "quick" or args.workers is None or (
        args.scheduler not in (None, "processes", "serial")) else (
        "universality.py: --quick runs its sweeps here, one after another: each takes seconds, "
        "less than a pool's workers take to start")
    try:
        validate_workers(args.workers)  # a bad --workers is refused, whatever the scale
        if args.scale == "quick" and scheduler in ("processes", "serial"):
            scheduler, args.workers = "serial", None
        configs = universality.configs(args.scale, args.only)
        if scheduler is None:
            scheduler, args.workers = figure_pool(configs, args.workers)
        validate_scheduler(scheduler)
        validate_workers(args.workers, scheduler)
        names = [n for figure in universality.FIGURES.values() for n in figure]
        check_folder(args.folder, configs, names, scheduler=scheduler,
                     figures={f"{name}.png": (name,) for name in configs},
                     redraw=args.redraw)
    except (ConfigError, FileNotFoundError, ValueError) as err:
        parser.error(str(err))
    return args, configs, scheduler


def main(argv: list[str] | None = None) -> int:
    """The command line: bad input exits 2 with one line before any work; a failed write
    (a full disk) 2 with one line; Ctrl-C 130 with the hint to rerun (sweeps resume)."""
    return checked_script("universality.py", parse, work, argv)


def work(args, configs, scheduler) -> None:
    from dnnphase.sweeps.named_sweeps import draw_figure, run_named

    folder = Path(args.folder)
    folder.mkdir(parents=True, exist_ok=True)
    names = [n for figure in universality.FIGURES.values() for n in figure]
    started, figure_seconds = time.monotonic(), {}
    for name, cfg in configs.items():
        begun = time.monotonic()
        ds = run_named(name, cfg, folder, names, scheduler=scheduler, workers=args.workers,
                       quiet=args.scale == "quick")
        draw_figure(folder / f"{name}.png",
                    partial(universality.plot_diagram, ds, name, args.scale), args.redraw)
        figure = universality.figure_of(name)
        figure_seconds[figure] = figure_seconds.get(figure, 0.0) + time.monotonic() - begun
    for figure, seconds in figure_seconds.items():
        print(f"Fig. {figure}: {seconds:.0f} s")
    print(f"done in {time.monotonic() - started:.0f} s; results and figures in {folder}/")


if __name__ == "__main__":
    sys.exit(main())
