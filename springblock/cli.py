"""Command line: ``springblock simulate | phase | plot``.

Every bad input ends with a one-line ``springblock: error: ...`` naming the
parameter and its allowed range, exit code 2, before any work starts.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys

import numpy as np

from phasecore.checks import ConfigError, require
from phasecore.commandline import Parser, add_options, output_options, run
from phasecore.panels import check_figure_path
from springblock import defaults
from springblock.config import ALGORITHMS, DYNAMICS, NOISE_DISTS, RNGS, ChainConfig

__all__ = ["build_parser", "main"]


def steps_count(text: str):
    """``--steps``: an integer (``1e10`` allowed) or ``inf`` (the stationary state)."""
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if value == float("inf"):
        return value
    if not (value.is_integer() and value >= 1):
        raise argparse.ArgumentTypeError(
            f"steps must be an integer >= 1 (1e10 allowed) or inf (got {text!r})")
    return int(value)


#: ChainConfig's defaults: the help shows them (an option left out keeps them).
_CHAIN_DEFAULTS = {f.name: f.default for f in dataclasses.fields(ChainConfig)}
#: What the help says where a default is None or differs between the commands.
_SHOWN = {
    "mu_left": "mu-right",
    "steps": f"simulate {_CHAIN_DEFAULTS['steps']}, phase {defaults.STEPS}",
    "damping": "critical for the stiffest mode",
    "stop_tol": "off",
}

# (flag, ChainConfig field, type, help) — the chain options both commands share.
# Defaults are shown, not applied here: an option left out keeps ChainConfig's default.
CHAIN_OPTIONS = [
    ("--blocks", "blocks", int, "number of blocks L (>= 2)"),
    ("--mu-right", "mu_right", float, "friction for rightward motion mu->"),
    ("--mu-left", "mu_left", float, "friction for leftward motion mu<-"),
    ("--noise", "noise", float, "noise level s per step (Langevin: sigma_0)"),
    ("--noise-dist", "noise_dist", str, f"one of {', '.join(NOISE_DISTS)}"),
    ("--truncation", "truncation", float, "truncated-noise bound in standard deviations"),
    ("--noise-decay", "noise_decay", float, "noise decay rate lambda, s(t) = s exp(-lambda t)"),
    ("--dynamics", "dynamics", str, f"one of {', '.join(DYNAMICS)}"),
    ("--modulus", "modulus", float, "spring modulus k"),
    ("--target", "target", float, "target position y (not 0)"),
    ("--step", "step", float, "time step eta"),
    ("--steps", "steps", steps_count,
     "number of steps, e.g. 1e10, or inf for the stationary state"),
    ("--damping", "damping", float, "damping gamma"),
    ("--record-every", "record_every", int,
     "record the load curve every N steps (0: only the final curve)"),
    ("--stop-tol", "stop_tol", float,
     "stop when the seed-mean load curve changes less than this (relative to y) over "
     "--stop-window steps"),
    ("--stop-window", "stop_window", int, "steps between stopping-rule checks"),
    ("--rng", "rng", str, f"one of {', '.join(RNGS)}"),
    ("--algorithm", "algorithm", str,
     f"one of {', '.join(ALGORITHMS)}: step by step, event-driven (exact, overdamped; reaches "
     "any horizon), or the cheaper per chain"),
]


def _chain_parent() -> argparse.ArgumentParser:
    parent = argparse.ArgumentParser(add_help=False)
    group = parent.add_argument_group("chain parameters")
    add_options(group, [(flag, dest, typ, None,
                         f"{text} (default {_SHOWN.get(dest, _CHAIN_DEFAULTS[dest])})")
                        for flag, dest, typ, text in CHAIN_OPTIONS])
    group.add_argument("--synchronous", action="store_true",
                       help="one noise draw per step shared by all blocks")
    group.add_argument("--seeds", type=int, default=None,
                       help="number of seeds (chains) "
                            f"(default: simulate 1, phase {defaults.SEEDS})")
    group.add_argument("--first-seed", type=int, default=0, help="first seed (default 0)")
    return parent


def _chain_params(args) -> dict:
    """The chain options given on the command line, as ChainConfig's keywords."""
    if args.stop_window is not None and args.stop_tol is None:  # the window of no rule
        raise ConfigError(f"--stop-window applies with --stop-tol only (got --stop-window "
                          f"{args.stop_window} and no stopping rule)")
    params = {dest: getattr(args, dest) for _, dest, *_ in CHAIN_OPTIONS
              if getattr(args, dest) is not None}
    if args.synchronous:
        params["noise_sharing"] = "synchronous"
    return params


def _chain_config(args, **defaults) -> ChainConfig:
    # which options go together is the config's to check (and the phase diagram's)
    return ChainConfig(**{**defaults, **_chain_params(args)})


def _seeds(args, default: int, config: ChainConfig) -> range:
    """``--seeds`` and ``--first-seed`` as a range: simulate and phase_diagram check its size
    before they build its seeds."""
    from springblock.ensemble import max_seed

    n = default if args.seeds is None else args.seeds
    if n < 1:
        raise ConfigError(f"seeds must be >= 1 (got {n})")
    top = max_seed(config)
    require(n <= top + 1, "seeds", f"an integer in 1..{top + 1} (seeds are 0..{top})", n)
    why = ("2**32 - 1 (rng 'legacy' takes 32-bit seeds)" if config.rng == "legacy"
           else "2**63 - 1 (seeds are stored as int64)")
    last = f"the last seed (first_seed + {n - 1})" if n > 1 else "the seed"
    require(0 <= args.first_seed <= top - (n - 1), "first_seed",
            f"an integer in 0..{top - (n - 1)} for {n} seed(s), so that {last} is at most "
            f"{why}", args.first_seed)
    return range(args.first_seed, args.first_seed + n)


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(
        prog="springblock",
        description="Simulate noisy spring-block chains with asymmetric friction.",
    )
    sub = parser.add_subparsers(dest="command", required=True)
    chain = _chain_parent()

    p = sub.add_parser("simulate", parents=[chain], help="one configuration, many seeds",
                       description="Simulate an ensemble of identical chains (one per seed). "
                                   "Ctrl-C keeps the chains' state beside the output; the same "
                                   "command then resumes the run.")
    p.add_argument("--no-theory", action="store_true", help="skip the mean-drift prediction")
    output_options(p, "output NetCDF file")
    p.set_defaults(func=cmd_simulate)

    p = sub.add_parser("phase", parents=[chain], help="phase diagram over two parameters",
                       description="Sweep two chain parameters x seeds; write a labelled "
                                   "NetCDF phase diagram (resumable).")
    p.add_argument("--rows", default=defaults.ROWS,
                   help="row axis NAME=start:stop:count or NAME=v1,v2 (default %(default)s)")
    p.add_argument("--cols", default=defaults.COLS,
                   help="column axis, same form (default %(default)s)")
    p.add_argument("--mu-left-ratio", type=float, default=None,
                   help="set mu_left = ratio x mu_right in every cell (not with --mu-left; "
                        "default: unset, mu_left as --mu-left gives it)")
    p.add_argument("--scheduler", default="serial",
                   help="serial (default: the kernels use every core), processes, or a Dask "
                        "address tcp://host:port")
    p.add_argument("--workers", type=int, default=None,
                   help="process-pool size (default: one per core)")
    p.add_argument("--chains-per-chunk", type=int, default=defaults.CHAINS_PER_CHUNK,
                   help="chains per resumable chunk (default %(default)s)")
    p.add_argument("--no-theory", action="store_true", help="skip the mean-drift prediction")
    output_options(p, "output NetCDF file")
    p.set_defaults(func=cmd_phase)

    p = sub.add_parser("plot", help="figure from a saved result",
                       description="Phase diagram (Fig. 3 style) or trajectory (Fig. 4 style).")
    p.add_argument("input", help="a NetCDF file written by simulate or phase")
    p.add_argument("--shade", default=None,
                   help="phase diagrams only: variable shading the cells (default "
                        "curvature_scaled)")
    output_options(p, "image file (.png, .pdf, .svg)", quiet=False)
    p.set_defaults(func=cmd_plot)
    return parser


def cmd_simulate(args) -> None:
    from springblock.ensemble import simulate

    config = _chain_config(args)
    seeds = _seeds(args, default=1, config=config)
    # resumable: the state of an interrupted run is kept beside the output
    ds = simulate(config, seeds=seeds, output=args.output, overwrite=args.overwrite,
                  quiet=args.quiet, theory_prediction=not args.no_theory)
    if not args.quiet:
        curv = ds["curvature_scaled"]  # NaN for a diverged chain or a flat load curve
        shape = (f"mean scale-free curvature {curv.mean().item():+.3f}"
                 if np.isfinite(curv).any() else "no scale-free curvature (see the warnings)")
        horizon = (f"T = {config.horizon:g}" if config.steps != float("inf") else
                   f"T = inf (the stationary state, reached at T = {ds['horizon'].max().item():g})")
        print(f"wrote {args.output}: {len(seeds)} chain(s), {horizon}, {shape}")


def cmd_phase(args) -> None:
    from springblock.phase import parse_grid, phase_diagram

    config = _chain_config(args, steps=defaults.STEPS)
    rows, cols = parse_grid(args.rows), parse_grid(args.cols)
    ds = phase_diagram(rows, cols, seeds=_seeds(args, default=defaults.SEEDS, config=config),
                       mu_left_ratio=args.mu_left_ratio, output=args.output,
                       overwrite=args.overwrite, scheduler=args.scheduler, workers=args.workers,
                       quiet=args.quiet, chains_per_chunk=args.chains_per_chunk,
                       theory_prediction=not args.no_theory, **_chain_params(args))
    if not args.quiet:
        print(f"wrote {args.output}: {ds.sizes[rows[0]]} x {ds.sizes[cols[0]]} cells x "
              f"{ds.sizes['seed']} seeds")


#: What each kind of result needs to be drawn: variables and their dimensions.
PLOT_NEEDS = {
    "springblock.phase_diagram": {"load_curve": ("seed", "layer"), "curvature_scaled": ("seed",),
                                  "horizon": ()},
    "springblock.simulate": {"load_curve": ("seed", "layer")},
}
#: ... and a simulation's trajectory, where it has one (plot_trajectory names its absence).
TRAJECTORY_NEEDS = {"trajectory": ("seed", "time", "layer"), "time": ()}


def cmd_plot(args) -> None:
    from phasecore.results import check_variables, load
    from springblock import plotting

    out = check_figure_path(args.output, args.overwrite)
    ds = load(args.input)
    kind = str(ds.attrs.get("kind", "no recognised result"))
    needed = PLOT_NEEDS.get(kind)
    if needed is None:
        raise ConfigError(f"input must be a result of springblock simulate or phase (got "
                          f"{kind!r} in {args.input})")
    check_variables(ds, needed, f"{args.input} ({kind})")
    if "trajectory" in ds.variables:
        check_variables(ds, TRAJECTORY_NEEDS, f"{args.input} ({kind})")
    if kind == "springblock.phase_diagram":
        dims = ds["load_curve"].dims
        if len(dims) != 4:  # rows, cols, seed, layer
            raise ValueError(f"{args.input} ({kind}): load_curve has the dimensions "
                             f"{', '.join(map(str, dims))}, not a grid's rows, cols, seed, "
                             "layer")
        grid = set(ds["curvature_scaled"].dims) - {"seed"}
        shades = [name for name, v in ds.data_vars.items() if v.dtype.kind in "fiub"
                  and set(v.dims) - {"seed"} == grid]
        shade = "curvature_scaled" if args.shade is None else args.shade
        if shade not in shades:
            raise ConfigError(f"shade must be a numeric per-cell variable of the file: "
                              f"{', '.join(shades)} (got {shade!r})")
        fig = plotting.plot_phase(ds, shade=shade)
    else:
        if args.shade is not None:  # an option that would change nothing is refused
            raise ConfigError(f"shade applies to phase diagrams only; {args.input} is a "
                              f"{kind} result (got --shade {args.shade})")
        fig = plotting.plot_trajectory(ds)
    plotting.save_figure(fig, out)
    print(f"wrote {out}")


def main(argv=None) -> int:
    return run(build_parser(), argv)


if __name__ == "__main__":
    sys.exit(main())
