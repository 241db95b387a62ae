"""Command line: ``dnnphase sweep | plot | compare | fit | reproduce | tune``.

Every bad input ends with a one-line ``dnnphase: error: ...`` naming the
parameter and its allowed values, exit code 2, before any training starts.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from dnnphase import defaults
from phasecore.checks import SEED_LIMIT, ConfigError, parse_values, require
from phasecore.commandline import Parser, add_options, output_options, run
from phasecore.loadcurve import PHASE_TOLERANCE
from phasecore.panels import check_figure_path
from phasecore.results import OutputExistsError

__all__ = ["FINAL_FIT_OPTIONS", "build_parser", "main"]


def _floats(text: str, name: str) -> list[float]:
    return [float(v) for v in parse_values(text, name=name)]


#: Options given as text and parsed after argparse, so that a bad value gets
#: the project's one-line error rather than argparse's usage message.
_PARSED = {
    "values": lambda text: _floats(text, "values"),
    "alphas": lambda text: _floats(text, "alpha"),
    "measures": lambda text: _names(text, "measures"),
    "schedule": lambda text: _schedule(text),
    "lr_drops": lambda text: _fractions(text),
    "depths": lambda text: _integers(text, "depths"),
    "width": lambda text: _one_or_many(_integers(text, "width")),
}


def _names(text: str, name: str) -> list[str]:
    """Comma-separated names; an empty one ("a,,b", a trailing comma) is refused, as every
    other list option refuses an empty entry."""
    names = [m.strip() for m in str(text).split(",")]
    require(all(names), name, "comma-separated names with none empty, e.g. trace_ratio,ncc",
            text)
    return names


def _integers(text: str, name: str) -> list:
    """Comma-separated numbers, whole ones as ints (others kept, for the range check to
    name)."""
    return [int(v) if float(v).is_integer() else float(v)
            for v in parse_values(text, name=name)]


def _one_or_many(values: list):
    """One value as itself (``--width 100``), several as a tuple (one per hidden layer)."""
    return values[0] if len(values) == 1 else tuple(values)


def _schedule(text: str) -> tuple:
    from dnnphase.training.schedule import parse_schedule

    return parse_schedule(text, name="--schedule")


def _fractions(text: str) -> tuple:
    from dnnphase.training.schedule import parse_fractions

    return parse_fractions(text, name="--lr-drops")


def _check_seed_count(n: int, first: int) -> None:
    """``--seeds n`` and ``--first-seed``: 1 <= n <= MAX_SEEDS, first >= 0 and the last seed
    below 2⁶³ (a result labels seeds in an int64 coordinate)."""
    if not 1 <= n <= defaults.MAX_SEEDS or first < 0:
        raise ConfigError(f"seeds must be 1 to {defaults.MAX_SEEDS} and first-seed >= 0 "
                          f"(got {n}, {first})")
    if first + n > SEED_LIMIT:
        raise ConfigError(f"first-seed must be at most 2**63 - seeds = {SEED_LIMIT - n} "
                          f"(seeds are labelled as int64; got {first})")


def _sweep_defaults() -> dict:
    """SweepConfig's field defaults: the sweep's options show them, and SweepConfig
    applies them itself (an option left out is not passed on)."""
    import dataclasses

    from dnnphase.sweeps.sweep import SweepConfig

    return {f.name: f.default for f in dataclasses.fields(SweepConfig)}


def _shown(default) -> str:
    """A default as the help shows it ("" when there is none to show)."""
    if default is None or default == ():
        return ""
    if isinstance(default, tuple):
        default = ",".join(f"{v:g}" if isinstance(v, float) else str(v) for v in default)
    return f" (default {default})"


def _knob_help(name: str, default: str = "") -> str:
    """The help of a knob's option when the sweep holds that knob fixed."""
    from dnnphase.knobs import KNOBS

    return f"{KNOBS[name].label}, {KNOBS[name].allowed} ({default}unless it is the knob)"


def _sweep_options():
    """(flag, SweepConfig field, type, help): the ``dnnphase sweep`` options.

    Ranges, knobs and measures are read from their homes (:mod:`dnnphase.knobs`,
    :mod:`dnnphase.measures.separation_numpy`, ...), defaults from SweepConfig
    (:func:`_sweep_defaults`).
    """
    return _grid_and_network_options() + _training_options()


def _grid_and_network_options():
    """The grid's, the data's and the network's options (see :func:`_sweep_options`)."""
    from dnnphase.data import DATASETS
    from dnnphase.knobs import ALPHA, KNOBS
    from dnnphase.networks.architecture import ARCHS
    from dnnphase.networks.mlp import NORMS, WEIGHT_INITS

    grids = "; ".join(f"{name} {','.join(f'{v:g}' for v in k.default_values)}"
                      for name, k in KNOBS.items())
    return [
        ("--knob", "knob", str,
         "the noise knob: " + ", ".join(f"{name} ({k.noisier} is noisier)"
                                        for name, k in KNOBS.items())),
        ("--values", "values", str,
         "knob values: start:stop:count (inclusive) or v1,v2,... (default: four values over "
         f"the paper's range: {grids})"),
        ("--alpha", "alphas", str, f"LeakyReLU slopes {ALPHA.words()} (0 = ReLU), same forms"),
        ("--dataset", "dataset", str, ", ".join(DATASETS)),
        ("--root", "root", str, "folder holding the mnist / fashion-mnist / cifar10 files "
                                f"(default: fashion-mnist {defaults.FASHION_MNIST_DIR}; the "
                                "others have no default folder)"),
        ("--n-train", "n_train", int, "training samples (default: the data set's own)"),
        ("--size", "size", int, "resize an image data set's images to size x size "
                                "(default: the data set's own; mnist5k 10)"),
        ("--data-seed", "data_seed", int, "seed of the train/test split and data generators"),
        ("--arch", "arch", str,
         f"the network, one of {', '.join(ARCHS)} (cnn: the paper's Fig. S2 CNN, on images; "
         "linear: the MLP with the identity, --alpha 1)"),
        ("--depth", "depth", int, "hidden layers L (conv layers for the CNN)"),
        ("--depths", "depths", str,
         "depth as a sweep axis: hidden-layer counts, each >= 2, as --values (e.g. 3,7,19); "
         "every model at every depth, --depth left out; the result gains a depth dimension, "
         "each depth's load curve at its own length (default: --depth only)"),
        ("--width", "width", str,
         "hidden width n (mlp, linear), or one per hidden layer, comma-separated (e.g. "
         "100,100,1000 with --depth 3: He & Su's Fig. 4 shapes)"),
        ("--channels", "channels", int, "channels of every conv layer (cnn)"),
        ("--kernel-size", "kernel_size", int, "odd conv kernel size (cnn)"),
        ("--norm", "norm", str,
         f"hidden-layer normalisation, one of {', '.join(NORMS)} (batchnorm: BatchNorm on "
         "the input and after every hidden linear map; scale: the paper's Eq. (1) constant "
         "c(alpha) after every activation, input as given; none: neither)"),
        ("--weight-init", "weight_init", str,
         f"initialisation of the linear maps, one of {', '.join(WEIGHT_INITS)} (orthogonal: "
         "random orthogonal weights, zero biases)"),
    ]


def _training_options():
    """The training's, the measures' and the chunks' options (see :func:`_sweep_options`)."""
    from dnnphase.measures.separation_numpy import MEASURE_NAMES
    from dnnphase.training.optim import OPTIMIZERS
    from dnnphase.training.schedule import LR_DROP_DIVISOR, SCHEDULED
    from dnnphase.training.train import DTYPES

    return [
        ("--optimizer", "optimizer", str, " or ".join(OPTIMIZERS)),
        ("--momentum", "momentum", float,
         "SGD's momentum, in [0, 1), with --optimizer sgd only (He & Su, Galanti et al.: 0.9)"),
        ("--weight-decay", "weight_decay", float,
         "L2 weight decay added to the gradient, in [0, 1) (the papers: 5e-4)"),
        ("--lr", "lr", float, _knob_help("lr")),
        ("--lr-drops", "lr_drops", str,
         f"fractions of the run after which every learning rate is divided by "
         f"{LR_DROP_DIVISOR}, increasing in (0, 1), relative to --epochs: 1/3,2/3 is He & "
         "Su's schedule (default: none)"),
        ("--warmup-epochs", "warmup_epochs", int,
         "linear learning-rate warm-up over these first epochs, step s of S at lr*s/S "
         "(Galanti et al.'s code: 1)"),
        ("--epochs", "epochs", int, "training epochs (at most)"),
        ("--batch-size", "batch_size", int, _knob_help("batch_size", "default: full batch; ")),
        ("--dropout", "dropout", float, _knob_help("dropout")),
        ("--label-noise", "label_noise", float, _knob_help("label_noise")),
        ("--random-labels", "random_labels", float,
         _knob_help("random_labels") + "; reassigned once, before training, from each model's "
         "seed (--label-noise redraws every step)"),
        ("--measures", "measures", str,
         f"comma-separated, from {', '.join(MEASURE_NAMES)}; the first is recorded "
         "during training"),
        ("--protocol", "protocol", str,
         "the measurement: ours (eval-mode BatchNorm, layer 0 after the input BatchNorm, "
         "activations), he_su (BatchNorm statistics of each batch of 100, raw input) or "
         "galanti (each hidden Linear's output)"),
        ("--record-every", "record_every", int,
         "record the load curve every k epochs (0: final only)"),
        ("--loss-threshold", "loss_threshold", float,
         "stop a model when its training loss is below this (0: never)"),
        ("--patience", "patience", int,
         "epochs of the moving mean watched by the plateau rule (0: no plateau rule)"),
        ("--rel-tol", "rel_tol", float,
         "stop when that mean changes by less than this, relatively"),
        ("--schedule", "schedule", str,
         "knobs that change during training: comma-separated KNOB@EPOCH=VALUE, from that "
         f"epoch (counted from 1) on, KNOB ({', '.join(SCHEDULED)}) is VALUE; KNOB@EPOCH: "
         "each model's own value (the swept one); e.g. dropout@1=0,dropout@51 trains "
         "without dropout for 50 epochs, then with each model's p. The stopping rules wait "
         "for the last scheduled epoch (default: none)"),
        ("--dtype", "dtype", str, " or ".join(DTYPES)),
        ("--device", "device", str, "auto (CUDA if present), cpu, cuda or cuda:N"),
        ("--models-per-chunk", "models_per_chunk", int,
         f"models per resumable chunk (default on the CPU: at most "
         f"{defaults.MODELS_PER_CHUNK}, at least {defaults.MIN_CHUNKS} chunks; on CUDA at most "
         f"{defaults.MODELS_PER_CHUNK_CUDA})"),
    ]


#: The command line's default scheduler (:func:`dnnphase.sweeps.sweep.default_scheduler`).
ON_CUDA_SERIAL = (f"{defaults.SCHEDULER}; serial when training on CUDA without --workers, "
                  "one GPU being one worker")


def _scheduler_options(parser, default: str) -> None:
    parser.add_argument("--scheduler", default=None,
                        help="auto (a pool of single-threaded workers, one per core, or "
                             "serial where the sweep's estimated work would not pay for the "
                             "pool's start-up, which is then said), processes (the pool "
                             "always), serial, or a Dask address tcp://host:port (default "
                             f"{default})")
    parser.add_argument("--workers", type=int, default=None,
                        help="process-pool size (default: one per core)")


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(
        prog="dnnphase",
        description="Train families of deep networks and measure how each layer separates the "
                    "data.",
    )
    sub = parser.add_subparsers(dest="command", required=True)

    _add_sweep_parser(sub)

    shape = argparse.ArgumentParser(add_help=False)  # how load curves are read and labelled
    shape.add_argument("--measure", default=defaults.MEASURE,
                       help="separation measure (one of the file's; default %(default)s)")
    shape.add_argument("--tolerance", type=float, default=PHASE_TOLERANCE,
                       help="half-width of the linear band of scale-free curvature "
                            "(default %(default)s)")

    p = sub.add_parser("plot", parents=[shape], help="Fig. 1 style figure of a sweep",
                       description="Draw a network sweep as the paper's Fig. 1: normalised load "
                                   "curves over test accuracy and over curvature.")
    p.add_argument("input", help="a NetCDF file written by dnnphase sweep")
    output_options(p, "image file (.png, .pdf, .svg)", quiet=False)
    p.set_defaults(func=cmd_plot)

    p = sub.add_parser("compare", parents=[shape],
                       help="networks vs spring-block chain: figures + agreement",
                       description="Compare a chain phase diagram with a network sweep.")
    p.add_argument("spring", help="a NetCDF file written by springblock phase")
    p.add_argument("network", help="a NetCDF file written by dnnphase sweep")
    output_options(p, "output folder (report.nc, phase.png, accuracy.png)", quiet=False)
    p.set_defaults(func=cmd_compare)

    _add_fit_parser(sub)
    _add_reproduce_parser(sub)
    _add_tune_parser(sub)
    return parser


def _add_sweep_parser(sub) -> None:
    """``dnnphase sweep``: the network and training options, with SweepConfig's defaults."""
    p = sub.add_parser("sweep", help="network phase diagram: alpha x knob x seeds",
                       description="Train every (alpha, knob value, seed) model and write a "
                                   "labelled NetCDF result (resumable: rerun the same command "
                                   "after an interruption).")
    shown = _sweep_defaults()
    add_options(p.add_argument_group("network and training"),  # None: left to SweepConfig
                [(flag, dest, typ, None, text + _shown(shown[dest]))
                 for flag, dest, typ, text in _sweep_options()])
    seeds = shown["seeds"]  # consecutive, shown as a count and a first seed
    p.add_argument("--seeds", type=int, default=None,
                   help=f"number of seeds (default {len(seeds)})")
    p.add_argument("--first-seed", type=int, default=None,
                   help=f"first seed (default {seeds[0]})")
    p.add_argument("--no-bias", action="store_true", help="linear maps without bias")
    p.add_argument("--keep-last-batch", action="store_true",
                   help="an epoch's last, partial batch is a step too (He & Su's code)")
    _scheduler_options(p, ON_CUDA_SERIAL)
    output_options(p, "output NetCDF file")
    p.set_defaults(func=cmd_sweep)


def _add_fit_parser(sub) -> None:
    """``dnnphase fit``: the final-curve fit's options and the trajectory fit's."""
    p = sub.add_parser("fit", help="spring parameters for every network cell",
                       description="Fit the chain to every cell of a network sweep: its final "
                                   "load curves (mu->, s at a fixed horizon and mu<-/mu->), or "
                                   "with --trajectory the curves recorded during training "
                                   "(mu->, mu<-, s and a time scale, with 95 % intervals).")
    p.add_argument("network", help="a NetCDF file written by dnnphase sweep")
    p.add_argument("--measure", default=defaults.MEASURE,
                   help="separation measure (default %(default)s)")
    p.add_argument("--trajectory", action="store_true",
                   help="fit the recorded training trajectories (sweep with --record-every)")
    p.add_argument("--start", choices=("rest", "network"), default=None,
                   help="with --trajectory: the chain starts at rest (the paper's chain, the "
                        "default) or from each cell's first recorded curve (the network's "
                        "total drop is then fitted too)")
    for flag, typ, default, text in FINAL_FIT_OPTIONS:
        p.add_argument(flag, type=typ, default=None,
                       help=f"final-curve fit only: {text} (default {default})")
    p.add_argument("--figure", default=None,
                   help="also draw the parameter maps here (with --trajectory also the worst "
                        "fit, as <name>_worst.<suffix>; default: no figure)")
    output_options(p, "output NetCDF file", quiet=False)
    p.set_defaults(func=cmd_fit)


def _add_reproduce_parser(sub) -> None:
    """``dnnphase reproduce``: a preset, an output folder, the knobs to run."""
    p = sub.add_parser("reproduce", help="everything, end to end, from a preset",
                       description="Chain phase diagram, network sweeps, fits, comparison and "
                                   "figures in one folder (reruns reuse what is there).")
    p.add_argument("--preset", default="quick",
                   help="test, quick (default), knobs (all four knobs at the quick scale) "
                        "or paper")
    p.add_argument("-o", "--output", required=True,
                   help="output folder (created if missing; figures/ holds the committed "
                        "reference of the quick preset)")
    p.add_argument("--knobs", default=None,
                   help="only these of the preset's knobs, comma-separated (e.g. dropout,lr; "
                        "default: all of them), e.g. one knob per machine")
    _scheduler_options(p, ON_CUDA_SERIAL + "; serial for the test preset")
    p.add_argument("--overwrite", action="store_true", help="recompute existing results")
    p.add_argument("--quiet", action="store_true", help="no progress output")
    p.set_defaults(func=cmd_reproduce)


def cmd_sweep(args) -> None:
    from dnnphase.sweeps.sweep import SweepConfig, default_scheduler, sweep

    # Only the options given: SweepConfig applies its own defaults and checks every value.
    fields = {dest: _PARSED.get(dest, lambda v: v)(getattr(args, dest))
              for _, dest, *_ in _sweep_options() if getattr(args, dest) is not None}
    if args.seeds is not None or args.first_seed is not None:
        default = _sweep_defaults()["seeds"]
        n = len(default) if args.seeds is None else args.seeds
        first = default[0] if args.first_seed is None else args.first_seed
        _check_seed_count(n, first)  # before the list is made
        fields["seeds"] = list(range(first, first + n))
    if args.no_bias:
        fields["bias"] = False
    if args.keep_last_batch:
        fields["keep_last_batch"] = True
    if fields.get("patience") == 0 and "rel_tol" in fields:  # as --stop-window alone
        raise ConfigError("rel_tol changes nothing with patience 0 (no plateau rule): leave "
                          f"out --rel-tol, or give --patience >= 1 (got {fields['rel_tol']!r})")
    cfg = SweepConfig(**fields)
    ds = sweep(cfg, output=args.output, overwrite=args.overwrite,
               scheduler=args.scheduler or default_scheduler(cfg.device, args.workers),
               workers=args.workers, quiet=args.quiet)
    if not args.quiet:
        n = ds.sizes["alpha"] * ds.sizes[cfg.knob] * ds.sizes["seed"] * ds.sizes.get("depth", 1)
        print(f"wrote {args.output}: {n} models, {int(ds['diverged'].sum())} diverged")


def cmd_plot(args) -> None:
    from dnnphase.compare.comparator.alignment import check_network
    from dnnphase.sweeps.plotting import plot_sweep, save_figure
    from phasecore.results import load

    out = check_figure_path(args.output, args.overwrite)
    ds = load(args.input, kind="dnnphase.sweep")
    check_network(ds, args.measure)  # as compare and fit: a file cut short is named
    save_figure(plot_sweep(ds, args.measure, args.tolerance), out)
    print(f"wrote {out}")


#: Names that read as a file's, refused where a command's output is a folder.
_FILE_SUFFIXES = (".nc", ".png", ".pdf", ".svg", ".txt", ".json", ".csv", ".md")


def cmd_compare(args) -> None:
    from dnnphase.compare import compare, summary
    from dnnphase.compare.figures import comparison as figures
    from phasecore import results
    from phasecore.panels import save_figure
    from phasecore.results import check_output_folder, load, save

    if Path(args.output).suffix.lower() in _FILE_SUFFIXES:  # a file's name, not a folder's
        raise ConfigError(f"output must be a folder (it gets report.nc, phase.png and "
                          f"accuracy.png); got {args.output!r}, a file's name")
    out = check_output_folder(args.output)
    report_path = out / "report.nc"
    for path in (report_path, out / "phase.png", out / "accuracy.png"):
        if path.exists() and not args.overwrite:
            raise OutputExistsError(f"output {str(path)!r} exists; pass --overwrite")
    spring = load(args.spring)
    network = load(args.network)
    if spring.attrs.get("kind") == "dnnphase.sweep" and network.attrs.get("kind", "").startswith(
            "springblock"):
        raise ConfigError("the spring phase diagram comes first: dnnphase compare SPRING NETWORK")
    report = compare(spring, network, measure=args.measure, tolerance=args.tolerance)
    # Every figure is drawn before anything is written: a figure that fails leaves no
    # report behind (a report alone would make the rerun refuse without --overwrite).
    drawn = {out / "phase.png": figures.plot_side_by_side(spring, network, args.measure,
                                                          args.tolerance)}
    if not report.attrs["accuracy_missing"]:
        drawn[out / "accuracy.png"] = figures.plot_accuracy_vs_curvature(network, report,
                                                                         args.measure)
    written = [report_path, *drawn]
    with results.all_or_nothing(written, folder=out):
        save(report, report_path, overwrite=True)
        for path, figure in drawn.items():
            save_figure(figure, path)
    print(summary(report))
    print(f"wrote {', '.join(map(str, written))}")


#: Options of the final-curve fit: (flag, type, default, help). The horizon and the
#: friction ratio are springblock.defaults' HORIZON and MU_LEFT_RATIO, written out because
#: the network side never imports the chain (and numba) before a command needs it; a test
#: (tests/springblock/test_cli.py) holds the two equal.
FINAL_FIT_OPTIONS = (
    ("--horizon", float, 1000.0, "chain horizon T"),
    ("--mu-left-ratio", float, 2.0, "mu_left / mu_right"),
    ("--refine", str, "theory", "theory or simulation"),
)


def _worst_figure(figure) -> Path:
    """Where ``dnnphase fit --trajectory --figure FIGURE`` draws the worst-fitted cell."""
    figure = Path(figure)
    return figure.with_name(f"{figure.stem}_worst{figure.suffix}")


def cmd_fit(args) -> None:
    from dnnphase.compare import fit_chain
    from dnnphase.knobs import larger_is_noisier
    from phasecore.results import all_or_nothing, check_output, load, save

    check_output(args.output, args.overwrite)
    if Path(args.output).resolve() == Path(args.network).resolve():
        raise ConfigError(f"output must not be the network sweep it fits (got {args.output!r})")
    if args.figure is not None:  # '' too: a figure asked for must have a name
        check_figure_path(args.figure, args.overwrite)
        if args.trajectory:  # the worst fit is drawn beside it
            check_figure_path(_worst_figure(args.figure), args.overwrite)
    given = {flag: getattr(args, flag[2:].replace("-", "_"))
             for flag, _, _, _ in FINAL_FIT_OPTIONS}
    if args.trajectory and any(v is not None for v in given.values()):
        named = [flag for flag, value in given.items() if value is not None]
        raise ConfigError(f"{', '.join(named)} {'applies' if len(named) == 1 else 'apply'} to "
                          "the final-curve fit only (--trajectory fits the chain's parameters "
                          "and time scale itself)")
    if args.start is not None and not args.trajectory:
        raise ConfigError("--start applies to the trajectory fit only (add --trajectory)")
    network = load(args.network, kind="dnnphase.sweep")
    options = {"start": args.start or "rest"} if args.trajectory else {
        flag[2:].replace("-", "_"): default if given[flag] is None else given[flag]
        for flag, _, default, _ in FINAL_FIT_OPTIONS}
    fit = fit_chain(network, measure=args.measure, trajectory=args.trajectory,
                    source=str(args.network), **options)
    figures = [args.figure, *([_worst_figure(args.figure)] if args.trajectory else [])] \
        if args.figure else []
    with all_or_nothing([args.output, *figures]):  # a rerun must not find half of them
        save(fit, args.output, overwrite=args.overwrite)
        if args.figure:
            from dnnphase.compare.figures.comparison import plot_fit, plot_worst_fit
            from phasecore.panels import save_figure

            if args.trajectory:  # only a trajectory fit keeps the curves the worst fit shows
                save_figure(plot_worst_fit(fit), figures[1])
            save_figure(plot_fit(fit, network.attrs["knob"], larger_is_noisier(network)),
                        args.figure)
    if args.figure and args.trajectory:
        print(f"wrote {figures[1]}: the worst-fitted cell beside its best chain")
    if args.figure:
        print(f"wrote {args.figure}: the fitted parameters over the grid")
    explained = ""
    if "acceptable" in fit and not fit.attrs.get("weighted_by_seed_variance", 1):
        explained = (", cells explained to within their seed noise: n/a (one seed, no seed "
                     "noise to measure)")
    elif "acceptable" in fit:
        explained = (f", chi2/dof median {float(fit['chi2_per_dof'].median()):.3g}, "
                     f"{int(fit['acceptable'].sum())} of {fit['acceptable'].size} cells "
                     "explained to within their seed noise")
    print(f"wrote {args.output}: median residual {float(fit['residual'].median()):.4f}"
          f"{explained}")


def cmd_reproduce(args) -> None:
    from dnnphase.compare.presets import reproduce

    reproduce(args.preset, args.output, knobs=args.knobs, overwrite=args.overwrite,
              scheduler=args.scheduler, workers=args.workers, quiet=args.quiet)


def _add_tune_parser(sub) -> None:
    """``dnnphase tune``: the sweep's network and training options, and the search's."""
    from dnnphase.sweeps import tune

    # no abbreviations: a sweep's --values 5 must not be read as --values-per-round 5
    p = sub.add_parser("tune", allow_abbrev=False,
                       help="the knob value at which the training load curve is linear",
                       description="Search the knob's range [--low, --high] for the value at "
                                   "which the seed-mean scale-free curvature of the training "
                                   "load curve is 0, training a few values per round together "
                                   "(no validation set; docs/tune.md). Resumable: rerun the "
                                   "same command after an interruption.")
    shown = _sweep_defaults()
    own = {"measures": "measures computed, comma-separated (default: --measure only)",
           "models_per_chunk": "models per resumable chunk (default: a round's models, at most "
                               f"{defaults.MODELS_PER_CHUNK} on the CPU, "
                               f"{defaults.MODELS_PER_CHUNK_CUDA} on CUDA: one stack)"}
    add_options(p.add_argument_group("network and training"),
                [(flag, dest, typ, None, own.get(dest, text + _shown(shown[dest])))
                 for flag, dest, typ, text in _sweep_options()
                 if dest not in ("values", "alphas", "depths")])  # tune searches one depth
    g = p.add_argument_group("search")
    g.add_argument("--low", type=float, default=None,
                   help="lower end of the range (default: the knob's default grid's lowest)")
    g.add_argument("--high", type=float, default=None,
                   help="upper end of the range (default: the knob's default grid's highest)")
    g.add_argument("--alpha", type=float, default=None,
                   help="LeakyReLU slope in [0, 1], one number (default 0, ReLU)")
    g.add_argument("--seeds", type=int, default=tune.SEEDS,
                   help="models per value (default %(default)s)")
    g.add_argument("--first-seed", type=int, default=0, help="first seed (default 0)")
    g.add_argument("--values-per-round", type=int, default=tune.VALUES_PER_ROUND,
                   help="values trained together per round, >= 2 (default %(default)s)")
    g.add_argument("--rounds", type=int, default=tune.ROUNDS,
                   help="at most this many rounds (default %(default)s)")
    g.add_argument("--tolerance", type=float, default=tune.TOLERANCE,
                   help="stop when the bracket is this fraction of the range, on the knob's "
                        "axis (log for lr and batch_size; default %(default)s)")
    g.add_argument("--within-se", type=float, default=tune.WITHIN_SE,
                   help="stop when both ends of the bracket are within this many standard "
                        "errors of 0 (0: never; default %(default)s)")
    g.add_argument("--max-models", type=int, default=None,
                   help="model budget, the final models included (default: rounds only)")
    g.add_argument("--measure", default=defaults.MEASURE,
                   help="the load curve whose curvature is zeroed (default %(default)s)")
    p.add_argument("--no-bias", action="store_true", help="linear maps without bias")
    _scheduler_options(p, ON_CUDA_SERIAL)
    output_options(p, "output NetCDF file")
    p.set_defaults(func=cmd_tune, depths=None)  # no --depths: tune searches at one depth


def cmd_tune(args) -> None:
    from dnnphase.sweeps.sweep import default_scheduler
    from dnnphase.sweeps.tune import tune

    fields = {dest: _PARSED.get(dest, lambda v: v)(getattr(args, dest))
              for _, dest, *_ in _sweep_options()
              if dest not in ("values", "alphas") and getattr(args, dest) is not None}
    _check_seed_count(args.seeds, args.first_seed)
    if args.no_bias:
        fields["bias"] = False
    ds = tune(low=args.low, high=args.high, alpha=args.alpha,
              seeds=list(range(args.first_seed, args.first_seed + args.seeds)),
              values_per_round=args.values_per_round, rounds=args.rounds,
              tolerance=args.tolerance, within_se=args.within_se, max_models=args.max_models,
              measure=args.measure, output=args.output, overwrite=args.overwrite,
              scheduler=args.scheduler or default_scheduler(fields.get("device", "auto"),
                                                            args.workers),
              workers=args.workers, quiet=args.quiet, **fields)
    if not args.quiet:
        print(f"wrote {args.output}: {int(ds['models_trained'])} models trained")


def main(argv=None) -> int:
    return run(build_parser(), argv)


if __name__ == "__main__":
    sys.exit(main())
