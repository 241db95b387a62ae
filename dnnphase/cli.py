"""Command line: ``dnnphase sweep | plot | compare | fit | reproduce``.

Every bad input ends with a one-line ``dnnphase: error: ...`` naming the
parameter and its allowed values, exit code 2, before any training starts.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from dnnphase import defaults
from phasecore.checks import ConfigError, parse_values
from phasecore.commandline import Parser, add_options, output_options, run
from phasecore.loadcurve import PHASE_TOLERANCE
from phasecore.panels import check_figure_path
from phasecore.results import OutputExistsError


def _floats(text: str, name: str) -> list[float]:
    return [float(v) for v in parse_values(text, name=name)]


#: Options given as text and parsed after argparse, so that a bad value gets
#: the project's one-line error rather than argparse's usage message.
_PARSED = {
    "values": lambda text: None if text is None else _floats(text, "values"),
    "alphas": lambda text: _floats(text, "alpha"),
    "measures": lambda text: [m.strip() for m in str(text).split(",") if m.strip()],
}


def _sweep_options():
    """(flag, SweepConfig field, type, default, help): the ``dnnphase sweep`` options."""
    from dnnphase.knobs import KNOBS
    from dnnphase.phase import DEFAULT_MEASURES, MEASURE_NAMES

    return [
        ("--knob", "knob", str, "dropout", f"the noise knob: {', '.join(KNOBS)}"),
        ("--values", "values", str, None,
         "knob values: start:stop:count (inclusive) or v1,v2,... (default: four values over "
         "the paper's range: " + "; ".join(f"{k} {','.join(f'{v:g}' for v in knob.default_values)}"
                                          for k, knob in KNOBS.items()) + ")"),
        ("--alpha", "alphas", str, "0,0.5,1",
         "LeakyReLU slopes in [0, 1] (0 = ReLU), same forms"),
        ("--dataset", "dataset", str, defaults.DATASET,
         "mnist5k, digits, mnist1d, gmm, mnist, fashion-mnist or cifar10"),
        ("--root", "root", str, None, "folder holding the mnist / fashion-mnist / cifar10 files"),
        ("--n-train", "n_train", int, None, "training samples (default: the data set's own)"),
        ("--data-seed", "data_seed", int, 0, "seed of the train/test split and data generators"),
        ("--depth", "depth", int, defaults.DEPTH, "hidden layers L"),
        ("--width", "width", int, defaults.WIDTH, "hidden width n"),
        ("--optimizer", "optimizer", str, "adam", "adam or sgd"),
        ("--lr", "lr", float, defaults.LR, "learning rate (unless it is the knob)"),
        ("--epochs", "epochs", int, defaults.EPOCHS, "training epochs (at most)"),
        ("--batch-size", "batch_size", int, None,
         "mini-batch size (default: full batch; unless it is the knob)"),
        ("--dropout", "dropout", float, 0.0, "dropout probability p (unless it is the knob)"),
        ("--label-noise", "label_noise", float, 0.0,
         "label + data noise level q in [0, 1] (unless it is the knob)"),
        ("--measures", "measures", str, ",".join(DEFAULT_MEASURES),
         f"comma-separated, from {', '.join(MEASURE_NAMES)}; the first is recorded "
         "during training"),
        ("--record-every", "record_every", int, 0,
         "record the load curve every k epochs (0: final only)"),
        ("--loss-threshold", "loss_threshold", float, defaults.LOSS_THRESHOLD,
         "stop a model when its training loss is below this"),
        ("--patience", "patience", int, defaults.PATIENCE,
         "epochs of the moving mean watched by the plateau rule"),
        ("--rel-tol", "rel_tol", float, defaults.REL_TOL,
         "stop when that mean changes by less than this, relatively"),
        ("--dtype", "dtype", str, "float32", "float32 or float64"),
        ("--device", "device", str, "auto", "auto (CUDA if present), cpu, cuda or cuda:N"),
        ("--models-per-chunk", "models_per_chunk", int, None,
         f"models per resumable chunk (default on the CPU: at most "
         f"{defaults.MODELS_PER_CHUNK}, at least {defaults.MIN_CHUNKS} chunks; on CUDA at most "
         f"{defaults.MODELS_PER_CHUNK_CUDA})"),
    ]


def _scheduler_options(parser, default: str | None) -> None:
    parser.add_argument("--scheduler", default=default,
                        help="processes (one single-threaded worker per core), serial, or a "
                             "Dask address tcp://host:port (default "
                             f"{default or 'processes; serial for the test preset'})")
    parser.add_argument("--workers", type=int, default=None,
                        help="process-pool size (default: one per core)")


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(
        prog="dnnphase",
        description="Train families of deep networks and measure how each layer separates the "
                    "data.",
    )
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("sweep", help="network phase diagram: alpha x knob x seeds",
                       description="Train every (alpha, knob value, seed) model and write a "
                                   "labelled NetCDF result (resumable: rerun the same command "
                                   "after an interruption).")
    add_options(p.add_argument_group("network and training"), _sweep_options())
    p.add_argument("--seeds", type=int, default=3, help="number of seeds (default %(default)s)")
    p.add_argument("--first-seed", type=int, default=0, help="first seed (default %(default)s)")
    p.add_argument("--no-batchnorm", action="store_true", help="no BatchNorm layers")
    p.add_argument("--no-bias", action="store_true", help="linear maps without bias")
    p.add_argument("--noise", dest="old_noise", type=float, default=None,
                   help=argparse.SUPPRESS)  # renamed --label-noise; accepted for one release
    _scheduler_options(p, defaults.SCHEDULER)
    output_options(p, "output NetCDF file")
    p.set_defaults(func=cmd_sweep)

    shape = argparse.ArgumentParser(add_help=False)  # how load curves are read and labelled
    shape.add_argument("--measure", default="trace_ratio",
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

    p = sub.add_parser("fit", help="spring parameters for every network cell",
                       description="Fit the chain to every cell of a network sweep: its final "
                                   "load curves (mu->, s at a fixed horizon and mu<-/mu->), or "
                                   "with --trajectory the curves recorded during training "
                                   "(mu->, mu<-, s and a time scale, with 95 % intervals).")
    p.add_argument("network", help="a NetCDF file written by dnnphase sweep")
    p.add_argument("--measure", default="trace_ratio",
                   help="separation measure (default %(default)s)")
    p.add_argument("--trajectory", action="store_true",
                   help="fit the recorded training trajectories (sweep with --record-every)")
    for flag, typ, default, text in FINAL_FIT_OPTIONS:
        p.add_argument(flag, type=typ, default=None,
                       help=f"final-curve fit only: {text} (default {default})")
    p.add_argument("--figure", default=None,
                   help="also draw the parameter maps here (with --trajectory also the worst "
                        "fit, as <name>_worst.<suffix>)")
    output_options(p, "output NetCDF file", quiet=False)
    p.set_defaults(func=cmd_fit)

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
    _scheduler_options(p, None)
    p.add_argument("--overwrite", action="store_true", help="recompute existing results")
    p.add_argument("--quiet", action="store_true", help="no progress output")
    p.set_defaults(func=cmd_reproduce)
    return parser


def cmd_sweep(args) -> None:
    from dnnphase.phase import SweepConfig, sweep

    if args.seeds < 1 or args.first_seed < 0:
        raise ConfigError(f"seeds must be >= 1 and first-seed >= 0 (got {args.seeds}, "
                          f"{args.first_seed})")
    fields = {dest: _PARSED.get(dest, lambda v: v)(getattr(args, dest))
              for _, dest, *_ in _sweep_options()}
    if args.old_noise is not None:
        print("dnnphase: note: --noise is now --label-noise; the old name will be removed in "
              "the next release", file=sys.stderr)
        fields["label_noise"] = args.old_noise
    cfg = SweepConfig(seeds=list(range(args.first_seed, args.first_seed + args.seeds)),
                      batchnorm=not args.no_batchnorm, bias=not args.no_bias, **fields)
    ds = sweep(cfg, output=args.output, overwrite=args.overwrite, scheduler=args.scheduler,
               workers=args.workers, quiet=args.quiet)
    if not args.quiet:
        n = ds.sizes["alpha"] * ds.sizes[cfg.knob] * ds.sizes["seed"]
        print(f"wrote {args.output}: {n} models, {int(ds['diverged'].sum())} diverged")


def cmd_plot(args) -> None:
    from dnnphase.plotting import plot_sweep, save_figure
    from phasecore.results import load

    out = check_figure_path(args.output, args.overwrite)
    ds = load(args.input, kind="dnnphase.sweep")
    if args.measure not in ds["measure"].values:
        raise ConfigError(f"measure must be one of {', '.join(map(str, ds['measure'].values))} "
                          f"(the measures in this file; got {args.measure!r})")
    save_figure(plot_sweep(ds, args.measure, args.tolerance), out)
    print(f"wrote {out}")


def cmd_compare(args) -> None:
    from dnnphase import plotting
    from dnnphase.compare import report as cmp
    from phasecore.results import load, save

    out = Path(args.output)
    if out.exists() and not out.is_dir():
        raise ConfigError(f"output must be a folder (got the file {str(out)!r})")
    report_path = out / "report.nc"
    if report_path.exists() and not args.overwrite:
        raise OutputExistsError(f"output {str(report_path)!r} exists; pass --overwrite")
    spring = load(args.spring)
    network = load(args.network)
    if spring.attrs.get("kind") == "dnnphase.sweep" and network.attrs.get("kind", "").startswith(
            "springblock"):
        raise ConfigError("the spring phase diagram comes first: dnnphase compare SPRING NETWORK")
    report = cmp.compare(spring, network, measure=args.measure, tolerance=args.tolerance)
    out.mkdir(parents=True, exist_ok=True)
    save(report, report_path, overwrite=True)
    plotting.save_figure(plotting.plot_side_by_side(spring, network, args.measure,
                                                    args.tolerance), out / "phase.png")
    written = [report_path, out / "phase.png"]
    if not report.attrs["accuracy_missing"]:
        plotting.save_figure(plotting.plot_accuracy_vs_curvature(network, report, args.measure),
                             out / "accuracy.png")
        written.append(out / "accuracy.png")
    print(cmp.summary(report))
    print(f"wrote {', '.join(map(str, written))}")


#: Options of the final-curve fit: (flag, type, default, help).
FINAL_FIT_OPTIONS = (
    ("--horizon", float, 1000.0, "chain horizon T"),
    ("--mu-left-ratio", float, 2.0, "mu_left / mu_right"),
    ("--refine", str, "theory", "theory or simulation"),
)


def cmd_fit(args) -> None:
    from dnnphase.compare.report import fit_chain
    from dnnphase.knobs import larger_is_noisier
    from phasecore.results import check_output, load, save

    check_output(args.output, args.overwrite)
    if args.figure:
        check_figure_path(args.figure, args.overwrite)
    given = {flag: getattr(args, flag[2:].replace("-", "_"))
             for flag, _, _, _ in FINAL_FIT_OPTIONS}
    if args.trajectory and any(v is not None for v in given.values()):
        raise ConfigError(f"{', '.join(f for f, v in given.items() if v is not None)} apply to "
                          "the final-curve fit only (--trajectory fits the chain's parameters "
                          "and time scale itself)")
    network = load(args.network, kind="dnnphase.sweep")
    options = {} if args.trajectory else {
        flag[2:].replace("-", "_"): default if given[flag] is None else given[flag]
        for flag, _, default, _ in FINAL_FIT_OPTIONS}
    fit = fit_chain(network, measure=args.measure, trajectory=args.trajectory,
                    source=str(args.network), **options)
    save(fit, args.output, overwrite=args.overwrite)
    if args.figure:
        from dnnphase import plotting

        knob = network.attrs["knob"]
        if args.trajectory:
            from dnnphase.compare.figures import plot_trajectory_fit_maps as plot
            from dnnphase.compare.figures import plot_worst_fit

            figure = Path(args.figure)
            worst = figure.with_name(f"{figure.stem}_worst{figure.suffix}")
            plotting.save_figure(plot_worst_fit(fit), worst)
            print(f"wrote {worst}: the worst-fitted cell beside its best chain")
        else:
            plot = plotting.plot_fit_maps
        plotting.save_figure(plot(fit, knob, larger_is_noisier(network)), args.figure)
        print(f"wrote {args.figure}: the fitted parameters over the grid")
    print(f"wrote {args.output}: median residual {float(fit['residual'].median()):.4f}")


def cmd_reproduce(args) -> None:
    from dnnphase.compare.presets import reproduce

    reproduce(args.preset, args.output, knobs=args.knobs, overwrite=args.overwrite,
              scheduler=args.scheduler, workers=args.workers, quiet=args.quiet)


def main(argv=None) -> int:
    return run(build_parser(), argv)


if __name__ == "__main__":
    sys.exit(main())
