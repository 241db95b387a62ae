"""He & Su's law of equi-separation and Galanti et al.'s minimal depth: their headline
experiments, one network sweep or more and one figure each
(dnnphase.sweeps.separation_laws).

    python scripts/separation_laws.py [FOLDER] [--only hesu_fig1,...] [--full | --quick]
                                      [--workers N] [--scheduler processes|serial|tcp://...]

Writes ``<sweep>.nc`` (resumable: rerun the same command after an interruption) and
``<experiment>.png`` in FOLDER (default figures/separation_laws), and prints each
experiment's wall time. A sweep whose file holds the same configuration is reused, one with
another configuration is an error; Fig. 12's networks are Fig. 7's 1 000-sample ones (copied
when that file exists). The committed ("reduced") scale: 200 epochs, 3 seeds; ``--full`` the
papers' (a GPU or a cluster); ``--quick`` seconds (tests). Every option, configuration and
data set is checked before any work. The ledger (``python scripts/claims.py``) reads the
files.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

from dnnphase.sweeps import separation_laws
from phasecore.commandline import scaled_figures_parser

FOLDER = "figures/separation_laws"


def parse(argv: list[str] | None = None):
    """The options, and every sweep's configuration, all checked: a bad one exits 2 with
    one line, before anything is written."""
    parser = scaled_figures_parser(
        __doc__.split("\n\n")[0], folder=FOLDER, names=separation_laws.EXPERIMENTS,
        what="experiments",
        full="the papers' scale: 600 / 500 epochs, Galanti's width 500 and all of "
             "Fashion-MNIST, 5 seeds",
        quick="seconds: the 8 x 8 digits, 3 epochs (a test)")
    parser.add_argument("--scheduler", default=None,
                        help="processes (default; --quick: serial), serial, or a Dask address "
                             "tcp://host:port (the full scale on a cluster)")
    args = parser.parse_args(argv)
    from dnnphase.sweeps.named_sweeps import stored_matches, twin
    from dnnphase.sweeps.sweep import load_data, stored_config
    from phasecore.checks import ConfigError, require
    from phasecore.executors import check_reachable, validate_scheduler, validate_workers
    from phasecore.results import check_output_folder
    from phasecore.store import ChunkStore

    scheduler = args.scheduler or (
        "serial" if args.scale == "quick" and args.workers is None else "processes")
    try:
        validate_scheduler(scheduler)
        validate_workers(args.workers, scheduler)
        configs = separation_laws.configs(args.scale, args.only)
        require(str(args.folder).strip() != "", "folder", "a folder name", args.folder)
        folder = Path(args.folder)
        if folder.exists() and not folder.is_dir():
            raise ConfigError(f"folder must be a folder (got the file {str(folder)!r})")
        check_output_folder(folder)  # its parent a file, or not writable: before any work
        names = [n for sweeps in separation_laws.EXPERIMENTS.values() for n in sweeps]
        for name, cfg in configs.items():
            path = folder / f"{name}.nc"
            if not stored_matches(path, cfg) and twin(folder, name, cfg, names) is None:
                try:  # an interrupted sweep's chunks, of another configuration
                    ChunkStore(path).check(*stored_config(cfg))
                except FileExistsError as err:  # (this script has no --overwrite)
                    raise ConfigError(f"{str(err).split(';')[0]}; move it or choose another "
                                      "folder") from None
            cfg.check_device()
            for member in cfg.per_depth():  # a missing data set: one line naming its fix
                member.check_data(load_data(member))
        for experiment in separation_laws.check_experiments(args.only):
            figure = folder / f"{experiment}.png"
            if figure.is_dir():  # found only when it is written, after the sweeps
                raise ConfigError(f"{str(figure)!r} is a folder where the figure goes; move it "
                                  "or choose another folder")
        check_reachable(scheduler)  # a Dask address that does not answer: before any work
    except (ConfigError, FileNotFoundError, ValueError) as err:
        parser.error(str(err))
    return args, configs, scheduler


def main(argv: list[str] | None = None) -> int:
    args, configs, scheduler = parse(argv)
    from dnnphase.compare.law_figures import plot_experiment
    from dnnphase.sweeps.named_sweeps import run_named
    from phasecore.panels import save_figure

    folder = Path(args.folder)
    folder.mkdir(parents=True, exist_ok=True)
    names = [n for sweeps in separation_laws.EXPERIMENTS.values() for n in sweeps]
    started = time.monotonic()
    for experiment in separation_laws.check_experiments(args.only):
        begun = time.monotonic()
        datasets = {name: run_named(name, configs[name], folder, names, scheduler=scheduler,
                                    workers=args.workers, quiet=args.scale == "quick")
                    for name in separation_laws.EXPERIMENTS[experiment]}
        save_figure(plot_experiment(experiment, datasets, args.scale),
                    folder / f"{experiment}.png")
        print(f"{experiment}: {time.monotonic() - begun:.0f} s", flush=True)
    print(f"done in {time.monotonic() - started:.0f} s; results and figures in {folder}/")
    return 0


if __name__ == "__main__":
    sys.exit(main())
