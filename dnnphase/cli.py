"""Command line: ``dnnphase sweep | plot | compare | fit | reproduce``.

Every bad input ends with a one-line ``dnnphase: error: ...`` naming the
parameter and its allowed values, exit code 2, before any training starts.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from springblock.shared.checks import ConfigError, parse_values
from springblock.shared.commandline import run
from springblock.shared.loadcurve import PHASE_TOLERANCE
from springblock.shared.results import OutputExistsError


def _values(text: str, name: str):
    return [float(v) for v in parse_values(text, name=name)]


def build_parser() -> argparse.ArgumentParser:
    from dnnphase.sweep import KNOBS, MEASURE_NAMES

    parser = argparse.ArgumentParser(
        prog="dnnphase",
        description="Train families of deep networks and measure how each layer separates the "
                    "data.",
    )
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("sweep", help="network phase diagram: alpha x knob x seeds",
                       description="Train every (alpha, knob value, seed) model and write a "
                                   "labelled NetCDF result (resumable).")
    p.add_argument("--knob", default="dropout", help=f"one of {', '.join(KNOBS)}")
    p.add_argument("--values", default="0:0.3:4",
                   help="knob values: start:stop:count or v1,v2,... (default %(default)s)")
    p.add_argument("--alpha", default="0,0.5,1",
                   help="LeakyReLU slopes in [0, 1], same forms (default %(default)s)")
    p.add_argument("--seeds", type=int, default=3, help="number of seeds (default 3)")
    p.add_argument("--first-seed", type=int, default=0)
    p.add_argument("--dataset", default="mnist5k",
                   help="mnist5k (default), digits, mnist1d, gmm, mnist, fashion-mnist, cifar10")
    p.add_argument("--root", default=None, help="directory of mnist/fashion-mnist/cifar10 files")
    p.add_argument("--n-train", type=int, default=None, help="training samples")
    p.add_argument("--data-seed", type=int, default=0)
    p.add_argument("--depth", type=int, default=7, help="hidden layers L (default 7)")
    p.add_argument("--width", type=int, default=100, help="hidden width (default 100)")
    p.add_argument("--no-batchnorm", action="store_true")
    p.add_argument("--no-bias", action="store_true")
    p.add_argument("--optimizer", default="adam", help="adam (default) or sgd")
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--epochs", type=int, default=100)
    p.add_argument("--batch-size", type=int, default=None, help="default: full batch")
    p.add_argument("--dropout", type=float, default=0.0)
    p.add_argument("--noise", type=float, default=0.0, help="label + data noise level q")
    p.add_argument("--measures", default="trace_ratio,fuzziness,cdnv,ncc",
                   help=f"comma-separated, from {', '.join(MEASURE_NAMES)}")
    p.add_argument("--record-every", type=int, default=0,
                   help="record load curves every k epochs (for dynamics plots)")
    p.add_argument("--dtype", default="float32")
    p.add_argument("--device", default="auto", help="auto (CUDA if present), cpu, cuda")
    p.add_argument("--models-per-chunk", type=int, default=16)
    p.add_argument("--scheduler", default="processes",
                   help="processes (default), serial, or a Dask address tcp://host:port")
    p.add_argument("--workers", type=int, default=None, help="process-pool size")
    p.add_argument("-o", "--output", required=True, help="output NetCDF file")
    p.add_argument("--overwrite", action="store_true")
    p.add_argument("--quiet", action="store_true")
    p.set_defaults(func=cmd_sweep)

    shape = argparse.ArgumentParser(add_help=False)  # how load curves are read and labelled
    shape.add_argument("--measure", default="trace_ratio", help="separation measure")
    shape.add_argument("--tolerance", type=float, default=PHASE_TOLERANCE,
                       help="half-width of the linear band of scale-free curvature "
                            "(default %(default)s)")
    shape.add_argument("--overwrite", action="store_true")

    p = sub.add_parser("plot", parents=[shape], help="Fig. 1 style figure of a sweep")
    p.add_argument("input", help="a NetCDF file written by dnnphase sweep")
    p.add_argument("-o", "--output", required=True, help="image file (.png, .pdf, .svg)")
    p.set_defaults(func=cmd_plot)

    p = sub.add_parser("compare", parents=[shape],
                       help="networks vs spring-block chain: figures + agreement",
                       description="Compare a chain phase diagram with a network sweep.")
    p.add_argument("spring", help="a NetCDF file written by springblock phase")
    p.add_argument("network", help="a NetCDF file written by dnnphase sweep")
    p.add_argument("-o", "--output", required=True, help="output folder")
    p.set_defaults(func=cmd_compare)

    p = sub.add_parser("fit", help="spring parameters for every network cell",
                       description="Fit (mu_right, noise) of a chain, at fixed horizon and "
                                   "mu_left/mu_right, to each cell's seed-mean load curve.")
    p.add_argument("network", help="a NetCDF file written by dnnphase sweep")
    p.add_argument("-o", "--output", required=True, help="output NetCDF file")
    p.add_argument("--measure", default="trace_ratio")
    p.add_argument("--horizon", type=float, default=1000.0, help="chain horizon T (default 1000)")
    p.add_argument("--mu-left-ratio", type=float, default=2.0, help="mu_left / mu_right")
    p.add_argument("--refine", default="theory", help="theory (default) or simulation")
    p.add_argument("--figure", default=None, help="also draw the parameter maps here")
    p.add_argument("--overwrite", action="store_true")
    p.set_defaults(func=cmd_fit)

    p = sub.add_parser("reproduce", help="everything, end to end, from a preset",
                       description="Chain phase diagram, network sweeps, fits, comparison and "
                                   "figures in one folder (reruns reuse what is there).")
    p.add_argument("--preset", default="quick", help="test, quick (default) or paper")
    p.add_argument("-o", "--output", default="figures", help="output folder (default figures)")
    p.add_argument("--scheduler", default=None,
                   help="network sweeps: processes (default), serial or tcp://host:port")
    p.add_argument("--overwrite", action="store_true", help="recompute existing results")
    p.add_argument("--quiet", action="store_true")
    p.set_defaults(func=cmd_reproduce)
    return parser


def cmd_sweep(args) -> None:
    from dnnphase.sweep import SweepConfig, sweep

    if args.seeds < 1 or args.first_seed < 0:
        raise ConfigError(f"seeds must be >= 1 and first-seed >= 0 (got {args.seeds}, "
                          f"{args.first_seed})")
    if args.workers is not None and args.workers < 1:
        raise ConfigError(f"workers must be >= 1 (got {args.workers})")
    cfg = SweepConfig(
        knob=args.knob, values=_values(args.values, "values"),
        alphas=_values(args.alpha, "alpha"),
        seeds=list(range(args.first_seed, args.first_seed + args.seeds)),
        dataset=args.dataset, data_seed=args.data_seed, n_train=args.n_train, root=args.root,
        depth=args.depth, width=args.width, batchnorm=not args.no_batchnorm,
        bias=not args.no_bias, optimizer=args.optimizer, lr=args.lr, epochs=args.epochs,
        batch_size=args.batch_size, dropout=args.dropout, noise=args.noise,
        measures=[m.strip() for m in args.measures.split(",") if m.strip()],
        record_every=args.record_every, dtype=args.dtype, device=args.device,
        models_per_chunk=args.models_per_chunk,
    )
    ds = sweep(cfg, output=args.output, overwrite=args.overwrite, scheduler=args.scheduler,
               workers=args.workers, quiet=args.quiet)
    if not args.quiet:
        n = ds.sizes["alpha"] * ds.sizes[cfg.knob] * ds.sizes["seed"]
        print(f"wrote {args.output}: {n} models, {int(ds['diverged'].sum())} diverged")


def cmd_plot(args) -> None:
    from dnnphase.plotting import plot_sweep, save_figure
    from springblock.shared.results import check_output, load

    out = Path(args.output)
    check_output(out, args.overwrite)
    ds = load(args.input, kind="dnnphase.sweep")
    if args.measure not in ds["measure"].values:
        raise ConfigError(f"measure must be one of {', '.join(map(str, ds['measure'].values))} "
                          f"(the measures in this file; got {args.measure!r})")
    save_figure(plot_sweep(ds, args.measure, args.tolerance), out)
    print(f"wrote {out}")


def cmd_compare(args) -> None:
    from dnnphase import compare as cmp
    from dnnphase import plotting
    from springblock.shared.results import load, save

    out = Path(args.output)
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
    plotting.save_figure(plotting.plot_accuracy_vs_curvature(network, report, args.measure),
                         out / "accuracy.png")
    print(cmp.summary(report))
    print(f"wrote {report_path}, {out / 'phase.png'}, {out / 'accuracy.png'}")


def cmd_fit(args) -> None:
    from dnnphase.compare import check_network
    from dnnphase.fit import fit_spring
    from springblock.shared.results import check_output, load, save

    check_output(args.output, args.overwrite)
    network = load(args.network, kind="dnnphase.sweep")
    check_network(network, args.measure)
    knob = network.attrs["knob"]
    curves = network["load_curve"].sel(measure=args.measure).mean("seed", skipna=True)
    fit = fit_spring(curves.values, horizon=args.horizon, mu_left_ratio=args.mu_left_ratio,
                     refine=args.refine)
    ds = fit.to_dataset(dims=["alpha", knob],
                        coords={"alpha": network["alpha"].values, knob: network[knob].values})
    ds.attrs["kind"] = "dnnphase.fit"
    ds.attrs["source"] = str(args.network)
    save(ds, args.output, overwrite=args.overwrite)
    if args.figure:
        from dnnphase import plotting

        noisier_left = network[knob].attrs.get("noisier", "larger") == "larger"
        plotting.save_figure(plotting.plot_fit_maps(ds, knob, noisier_left), args.figure)
    print(f"wrote {args.output}: median residual {float(ds['residual'].median()):.4f}")


def cmd_reproduce(args) -> None:
    from dnnphase.reproduce import reproduce

    reproduce(args.preset, args.output, overwrite=args.overwrite, scheduler=args.scheduler,
              quiet=args.quiet)


def main(argv=None) -> int:
    return run(build_parser(), argv)


if __name__ == "__main__":
    sys.exit(main())
