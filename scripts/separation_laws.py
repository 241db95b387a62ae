"""He & Su's law of equi-separation and Galanti et al.'s minimal depth: their headline
experiments, one network sweep or more and one figure each
(dnnphase.sweeps.separation_laws).

    python scripts/separation_laws.py [FOLDER] [--only hesu_fig1,...] [--full | --quick]
                                      [--protocol authors|ours] [--workers N]
                                      [--scheduler processes|serial|tcp://...] [--redraw]

``--protocol authors`` (the default, the reference): each paper's own measurement and
training, read from its authors' code; ``ours``: the committed sweeps' (their command
reruns them). Writes ``<sweep>.nc`` (resumable: rerun the same command after an
interruption) and ``<experiment>.png`` in FOLDER (default figures/separation_laws_authors,
with ``--protocol ours`` figures/separation_laws; ``--quick`` and ``--full`` a subfolder
``quick`` or ``full`` of it), and prints each
experiment's wall time. A sweep whose file holds the same configuration is reused, one with
another configuration is an error; an existing ``<experiment>.png`` is kept (``--redraw``
draws it again from its files); Fig. 12's networks are Fig. 7's 1 000-sample ones (copied
when that file exists). The committed ("reduced") scale: 200 epochs, 3 seeds; ``--full`` the
papers' (a GPU or a cluster); ``--quick`` seconds (tests). Every option, configuration and
data set is checked before any work. The ledger (``python scripts/claims.py``) reads the
files.
"""

from __future__ import annotations

import sys
import time
from functools import partial
from pathlib import Path

from dnnphase.sweeps import separation_laws
from phasecore.commandline import checked_script, scaled_figures_parser

FOLDER = "figures/separation_laws"  # the committed sweeps: --protocol ours
AUTHORS_FOLDER = "figures/separation_laws_authors"
#: Each experiment's measured wall time (seconds) at the committed ("reduced") scale on the
#: project's 2 shared cores, by protocol: printed as the estimate before it starts, and in
#: --help (docs/results.md has them too). None: not measured yet. Fig. 12 reuses Fig. 7's
#: 1 000-sample networks (seconds, once those exist).
MEASURED_S = {
    "ours": {"hesu_fig1": 437, "hesu_fig3": 178, "hesu_fig4": 471, "hesu_fig7": 89,
             "hesu_fig9": 37, "hesu_fig12": None, "galanti_fig1": 211, "galanti_fig3": 160},
    "authors": {"hesu_fig1": 2215, "hesu_fig3": 1244, "hesu_fig4": 1900, "hesu_fig7": 416,
                "hesu_fig9": 265, "hesu_fig12": 16, "galanti_fig1": 1288,
                "galanti_fig3": 406},
}
MEASURED_HOW = {"ours": "two workers, other light work running",
                "authors": "one worker under nice, another job sharing the cores"}
#: The papers' scale (``--full``) under the authors' protocol, where measured: seconds, one
#: worker under nice with another job sharing the 2 cores.
MEASURED_FULL_S = {"hesu_fig3": 4483, "hesu_fig7": 1164, "hesu_fig9": 698, "hesu_fig12": 10}
#: Experiments at the papers' scale timed only in part (resumed over sessions before each
#: kept chunk carried its computing time): what was measured.
MEASURED_FULL_PART = {"hesu_fig4": "its last 8 networks trained (Wide-Narrow's last 3, "
                                   "Mixed's 5) took 2329 s with two workers; the others "
                                   "ran earlier, untimed",
                      "hesu_fig1": "momentum's last 10 of 21 chunks and all of Adam's 75 "
                                   "networks took 1539 s with two workers; SGD's 105 networks "
                                   "and momentum's first 11 chunks ran earlier, untimed",
                      "galanti_fig1": "its 25 networks took 27466 s of computing summed over "
                                      "them, in runs over three sessions with two workers "
                                      "(about half that in wall time)"}
#: Experiments not run at the papers' scale here, with what a short measured run projects
#: (``benchmarks/bench_papers_scale.py``: an epoch of one network, alone on one core).
PROJECTED_FULL = {"galanti_fig3": "not run here: an epoch of one of its networks took 9.1 s "
                                  "on one core (Fig. 1's 16-layer one 2.25 s in the same run), "
                                  "so its 20 networks are about 9.2e4 core-seconds (26 h) and "
                                  "a chunk of 3 about 3.8 h; for a GPU or a Dask cluster "
                                  "(--scheduler tcp://...)"}
#: Why --quick runs its sweeps here even when a pool is asked for.
QUICK_NOTE = ("separation_laws.py: --quick runs its sweeps here, one after another: each takes "
              "seconds, less than a pool's workers take to start (with a pool --quick took "
              "121 s instead of 15 s)")


def estimate(experiment: str, protocol: str, scale: str) -> str:
    """The line printed before ``experiment`` starts: its measured wall time, where one is."""
    how = MEASURED_HOW[protocol]
    if scale == "reduced":
        seconds = MEASURED_S[protocol].get(experiment)
    elif scale == "full" and protocol == "authors":
        seconds = MEASURED_FULL_S.get(experiment)
    else:
        seconds = None
    note = {**MEASURED_FULL_PART, **PROJECTED_FULL}.get(experiment)
    if seconds is None and scale == "full" and protocol == "authors" and note:
        return f"{experiment}: starting; at this scale {note}"
    if seconds is None:
        where = "" if scale == "reduced" else " at this scale"
        return f"{experiment}: starting (no time measured{where})"
    return (f"{experiment}: starting; measured {seconds} s at this scale on 2 shared cores "
            f"({how}; a busier machine takes longer)")


def _times_help() -> str:
    """--help's epilog: the measured times of :data:`MEASURED_S` and of the papers' scale."""
    reduced = "; ".join(
        f"{protocol} ({MEASURED_HOW[protocol]}): " + ", ".join(
            f"{e} {'not measured' if t is None else f'{t} s'}" for e, t in times.items())
        for protocol, times in MEASURED_S.items())
    full = [f"{e} {t} s" for e, t in MEASURED_FULL_S.items()]
    full += [f"{e}: {note}" for e, note in {**MEASURED_FULL_PART, **PROJECTED_FULL}.items()]
    return (f"measured wall times at the committed scale on 2 shared cores: {reduced} (Fig. 12 "
            "reuses Fig. 7's networks; on a busy machine a rerun of Fig. 9 took 123 s against "
            "37 s); at the papers' scale (--full), under the authors' protocol: "
            + "; ".join(full))


def parse(argv: list[str] | None = None):
    """The options, and every sweep's configuration, all checked: a bad one exits 2 with
    one line, before anything is written."""
    parser = scaled_figures_parser(
        __doc__.split("\n\n")[0],
        folder={"--protocol authors": AUTHORS_FOLDER, "--protocol ours": FOLDER,
                "--quick, --full": "a subfolder quick or full of it"},
        names=separation_laws.EXPERIMENTS,
        what="experiments",
        full="the papers' scale: 600 / 500 epochs, Galanti's width 500 and all of "
             "Fashion-MNIST, 5 seeds",
        quick="seconds: the 8 x 8 digits, 3 epochs (a test)")
    parser.epilog = _times_help()
    parser.add_argument("--protocol", choices=separation_laws.PROTOCOLS, default="authors",
                        help="authors (default): each paper's own measurement and training "
                             f"(default folder {AUTHORS_FOLDER}); ours: the committed sweeps' "
                             f"({FOLDER})")
    parser.add_argument("--scheduler", default=None,
                        help="processes (default; on CUDA serial, one GPU being one worker, "
                             "unless --workers asks for a pool; --quick: serial, always: its "
                             "sweeps are shorter than a pool's start), serial, or a Dask address "
                             "tcp://host:port (the full scale on a cluster)")
    args = parser.parse_args(argv)
    if args.folder is None:  # the committed files are the reduced scale's: never mixed
        args.folder = FOLDER if args.protocol == "ours" else AUTHORS_FOLDER
        if args.scale != "reduced":
            args.folder = f"{args.folder}/{args.scale}"
    from dnnphase.sweeps.named_sweeps import check_folder, figure_pool
    from phasecore.checks import ConfigError
    from phasecore.executors import validate_scheduler, validate_workers

    try:  # a bad --workers is refused, whatever the scale
        validate_workers(args.workers)
        configs = separation_laws.configs(args.scale, args.only, args.protocol)
    except (ConfigError, ValueError) as err:
        parser.error(str(err))
    scheduler = args.scheduler
    if scheduler is None:
        scheduler, args.workers = figure_pool(configs, args.workers)
    args.serial_note = ""
    if args.scale == "quick" and scheduler in ("processes", "serial"):
        # seconds of work a sweep: a pool's start-up (spawned workers importing torch, several
        # seconds a sweep) would make it ~8x slower than running it here (14.7 s against 121 s)
        if (args.workers or 1) > 1 or args.scheduler == "processes":  # a pool was asked for
            args.serial_note = QUICK_NOTE
        scheduler, args.workers = "serial", None
    try:
        validate_scheduler(scheduler)
        validate_workers(args.workers, scheduler)
        names = [n for sweeps in separation_laws.EXPERIMENTS.values() for n in sweeps]
        check_folder(args.folder, configs, names, scheduler=scheduler,
                     figures={f"{e}.png": separation_laws.sweeps_of(e, args.protocol)
                              for e in separation_laws.check_experiments(args.only)},
                     redraw=args.redraw)
    except (ConfigError, FileNotFoundError, ValueError) as err:
        parser.error(str(err))
    return args, configs, scheduler


def main(argv: list[str] | None = None) -> int:
    """The command line: bad input exits 2 with one line before any work; a failed write
    (a full disk) 2 with one line; Ctrl-C 130 with the hint to rerun (sweeps resume)."""
    return checked_script("separation_laws.py", parse, work, argv)


def work(args, configs, scheduler) -> None:
    from dnnphase.compare.figures.separation_laws import plot_experiment
    from dnnphase.sweeps.named_sweeps import draw_figure, run_named
    from phaseclaims.he_su import paper_rule

    folder = Path(args.folder)
    folder.mkdir(parents=True, exist_ok=True)
    names = [n for sweeps in separation_laws.EXPERIMENTS.values() for n in sweeps]
    started = time.monotonic()
    for experiment in separation_laws.check_experiments(args.only):
        print(estimate(experiment, args.protocol, args.scale), flush=True)
        begun = time.monotonic()
        datasets = {name: run_named(name, configs[name], folder, names, scheduler=scheduler,
                                    workers=args.workers, quiet=args.scale == "quick")
                    for name in separation_laws.sweeps_of(experiment, args.protocol)}
        # Fig. 1 draws the learning rates He & Su's rule picks: the ledger's rule, passed in
        draw_figure(folder / f"{experiment}.png", partial(
            plot_experiment, experiment, datasets, args.scale, lr_rule=paper_rule), args.redraw)
        print(f"{experiment}: {time.monotonic() - begun:.0f} s", flush=True)
    print(f"done in {time.monotonic() - started:.0f} s; results and figures in {folder}/")


if __name__ == "__main__":
    sys.exit(main())
