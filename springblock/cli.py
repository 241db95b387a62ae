"""Command line: ``springblock simulate | phase | plot``.

Every bad input ends with a one-line ``springblock: error: ...`` naming the
parameter and its allowed range, exit code 2, before any work starts.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from springblock.config import ALGORITHMS, DYNAMICS, NOISE_DISTS, RNGS, ChainConfig
from springblock.shared.checks import ConfigError
from springblock.shared.commandline import run


def steps_count(text: str):
    """``--steps``: an integer (``1e10`` allowed) or ``inf`` (the stationary state)."""
    value = float(text)
    if value == float("inf"):
        return value
    if not (value.is_integer() and value >= 1):
        raise ValueError(text)
    return int(value)


steps_count.__name__ = "steps"  # argparse names the type in its error message


# (flag, ChainConfig field, type, help) — the chain options both commands share.
CHAIN_OPTIONS = [
    ("--blocks", "blocks", int, "number of blocks L (default 7)"),
    ("--mu-right", "mu_right", float, "friction for rightward motion mu-> (default 0)"),
    ("--mu-left", "mu_left", float, "friction for leftward motion mu<- (default: = mu-right)"),
    ("--noise", "noise", float, "noise level s per step (Langevin: sigma_0) (default 0)"),
    ("--noise-dist", "noise_dist", str, f"one of {', '.join(NOISE_DISTS)} (default gaussian)"),
    ("--truncation", "truncation", float, "truncated-noise bound in standard deviations "
                                          "(default 2)"),
    ("--noise-decay", "noise_decay", float, "noise decay rate lambda, s(t) = s exp(-lambda t)"),
    ("--dynamics", "dynamics", str, f"one of {', '.join(DYNAMICS)} (default overdamped)"),
    ("--modulus", "modulus", float, "spring modulus k (default 1)"),
    ("--target", "target", float, "target position y (default 1)"),
    ("--step", "step", float, "time step eta (default 0.01)"),
    ("--steps", "steps", steps_count, "number of steps, e.g. 1e10, or inf for the stationary "
                                      "state (simulate: 10000; phase: 100000)"),
    ("--damping", "damping", float, "damping gamma (default: critical for the stiffest mode)"),
    ("--record-every", "record_every", int, "record the load curve every N steps (default 0)"),
    ("--stop-tol", "stop_tol", float, "stop when the seed-mean load curve changes less than "
                                      "this (relative to y) over --stop-window steps"),
    ("--stop-window", "stop_window", int, "steps between stopping-rule checks (default 10000)"),
    ("--rng", "rng", str, f"one of {', '.join(RNGS)} (default xoshiro)"),
    ("--algorithm", "algorithm", str, f"one of {', '.join(ALGORITHMS)}: step by step, "
                                      "event-driven (exact, overdamped; reaches any horizon), "
                                      "or the cheaper per chain (default steps)"),
]


def _chain_parent() -> argparse.ArgumentParser:
    parent = argparse.ArgumentParser(add_help=False)
    group = parent.add_argument_group("chain parameters")
    for flag, dest, typ, text in CHAIN_OPTIONS:
        group.add_argument(flag, dest=dest, type=typ, default=None, help=text)
    group.add_argument("--synchronous", action="store_true",
                       help="one noise draw per step shared by all blocks")
    group.add_argument("--seeds", type=int, default=None, help="number of seeds (chains)")
    group.add_argument("--first-seed", type=int, default=0, help="first seed (default 0)")
    return parent


def _output_parent() -> argparse.ArgumentParser:
    parent = argparse.ArgumentParser(add_help=False)
    parent.add_argument("-o", "--output", required=True, help="output NetCDF file")
    parent.add_argument("--overwrite", action="store_true", help="replace an existing output")
    parent.add_argument("--quiet", action="store_true", help="no progress output")
    return parent


def _chain_config(args, **defaults) -> ChainConfig:
    params = dict(defaults)
    for _, dest, _, _ in CHAIN_OPTIONS:
        value = getattr(args, dest)
        if value is not None:
            params[dest] = value
    if args.synchronous:
        params["noise_sharing"] = "synchronous"
    return ChainConfig(**params)


def _seeds(args, default: int):
    n = default if args.seeds is None else args.seeds
    if n < 1:
        raise ConfigError(f"seeds must be >= 1 (got {n})")
    if args.first_seed < 0:
        raise ConfigError(f"first-seed must be >= 0 (got {args.first_seed})")
    return list(range(args.first_seed, args.first_seed + n))


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="springblock",
        description="Simulate noisy spring-block chains with asymmetric friction.",
    )
    sub = parser.add_subparsers(dest="command", required=True)
    chain, out = _chain_parent(), _output_parent()

    p = sub.add_parser("simulate", parents=[chain, out], help="one configuration, many seeds",
                       description="Simulate an ensemble of identical chains (one per seed).")
    p.set_defaults(func=cmd_simulate)

    p = sub.add_parser("phase", parents=[chain, out], help="phase diagram over two parameters",
                       description="Sweep two chain parameters x seeds; write a labelled "
                                   "NetCDF phase diagram (resumable).")
    p.add_argument("--rows", default="mu_right=0:0.03:6",
                   help="row axis NAME=start:stop:count or NAME=v1,v2 (default %(default)s)")
    p.add_argument("--cols", default="noise=0:0.028:8",
                   help="column axis, same form (default %(default)s)")
    p.add_argument("--mu-left-ratio", type=float, default=None,
                   help="set mu_left = ratio x mu_right in every cell")
    p.add_argument("--scheduler", default="serial",
                   help="serial (default), processes, or a Dask address tcp://host:port")
    p.add_argument("--workers", type=int, default=None, help="process-pool size")
    p.add_argument("--chains-per-chunk", type=int, default=256,
                   help="chains per resumable chunk (default %(default)s)")
    p.add_argument("--no-theory", action="store_true", help="skip the mean-drift prediction")
    p.set_defaults(func=cmd_phase)

    p = sub.add_parser("plot", help="figure from a saved result",
                       description="Phase diagram (Fig. 3 style) or trajectory (Fig. 4 style).")
    p.add_argument("input", help="a NetCDF file written by simulate or phase")
    p.add_argument("-o", "--output", required=True, help="image file (.png, .pdf, .svg)")
    p.add_argument("--shade", default="curvature_scaled",
                   help="phase diagrams: variable shading the cells (default %(default)s)")
    p.add_argument("--overwrite", action="store_true", help="replace an existing image")
    p.set_defaults(func=cmd_plot)
    return parser


def cmd_simulate(args) -> None:
    from springblock.ensemble import simulate
    from springblock.shared.results import check_output, save

    config = _chain_config(args)
    seeds = _seeds(args, default=1)
    check_output(args.output, args.overwrite)
    ds = simulate(config, seeds=seeds)
    save(ds, args.output, overwrite=args.overwrite)
    if not args.quiet:
        c = ds["curvature_scaled"].mean().item()
        print(f"wrote {args.output}: {len(seeds)} chain(s), T = {config.horizon:g}, "
              f"mean scale-free curvature {c:+.3f}")


def cmd_phase(args) -> None:
    from springblock.phase import parse_grid, phase_diagram

    config = _chain_config(args, steps=100_000)
    rows, cols = parse_grid(args.rows), parse_grid(args.cols)
    if args.workers is not None and args.workers < 1:
        raise ConfigError(f"workers must be >= 1 (got {args.workers})")
    ds = phase_diagram(rows, cols, seeds=_seeds(args, default=10),
                       mu_left_ratio=args.mu_left_ratio, config=config, output=args.output,
                       overwrite=args.overwrite, scheduler=args.scheduler, workers=args.workers,
                       quiet=args.quiet, chains_per_chunk=args.chains_per_chunk,
                       theory_prediction=not args.no_theory)
    if not args.quiet:
        print(f"wrote {args.output}: {ds.sizes[rows[0]]} x {ds.sizes[cols[0]]} cells x "
              f"{ds.sizes['seed']} seeds")


def cmd_plot(args) -> None:
    from springblock import plotting
    from springblock.shared.results import check_output, load

    out = Path(args.output)
    check_output(out, args.overwrite)
    ds = load(args.input, kind="springblock.")
    if ds.attrs["kind"] == "springblock.phase_diagram":
        if args.shade not in ds:
            raise ConfigError(f"shade must be a variable of the file, e.g. curvature_scaled, "
                              f"curvature, theory_curvature_scaled (got {args.shade!r})")
        fig = plotting.plot_phase(ds, shade=args.shade)
    else:
        fig = plotting.plot_trajectory(ds)
    plotting.save_figure(fig, out)
    print(f"wrote {out}")


def main(argv=None) -> int:
    return run(build_parser(), argv)


if __name__ == "__main__":
    sys.exit(main())
