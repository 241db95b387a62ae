"""What a separation-law experiment costs at the papers' scale, before committing to it.

    python benchmarks/bench_papers_scale.py [--only galanti_fig3] [--epochs 2,6]

Trains one network of each sweep of the experiments named (the deepest where a sweep has
several depths) for two short runs, and takes the cost of an epoch from their difference (so
the data loading and the measurement of every layer, paid once a run, drop out). The
baseline, measured in the same process, is Galanti et al.'s Fig. 1 at 16 hidden layers,
whose whole papers'-scale training is known: its last network took
:data:`BASELINE_MEASURED_S` s alone on one core of this project's 2-core machine. Prints each
sweep's epoch as a ratio to the baseline's, and its whole cost projected two ways: from its
own epoch time, and from the ratio times the baseline's measured run (which also carries
the per-run costs the short runs leave out), every network costed as its sweep's deepest.
"""

from __future__ import annotations

import argparse
import time

#: Galanti Fig. 1's 16-layer network at the papers' scale (500 epochs), trained alone on one
#: core: the computing time its chunk stored (the sweep's 25th chunk).
BASELINE_MEASURED_S = 1162.0
BASELINE = ("galanti_fig1", 16)


def _network(cfg, depth: int | None = None):
    """The sweep ``cfg`` at one depth (its deepest unless ``depth``)."""
    members = cfg.per_depth()
    return members[-1] if depth is None else next(m for m in members if m.depth == depth)


def _networks(cfg) -> int:
    """How many networks the sweep trains."""
    return len(cfg.alphas) * len(cfg.values) * len(cfg.seeds) * max(len(cfg.depths), 1)


def epoch_seconds(cfg, epochs: tuple[int, int]) -> tuple[float, float]:
    """(seconds an epoch, seconds a run pays once) of one network of ``cfg``, from two runs
    of ``epochs`` epochs without the learning-rate schedule."""
    from dnnphase.sweeps.sweep import train_chunk

    times = []
    for e in epochs:
        short = cfg.replace(epochs=e, schedule=())
        t0 = time.perf_counter()
        train_chunk({"config": short, "models": [(0, 0, 0)]})
        times.append(time.perf_counter() - t0)
    per_epoch = (times[1] - times[0]) / (epochs[1] - epochs[0])
    return per_epoch, times[0] - per_epoch * epochs[0]


def main(argv=None) -> None:
    from dnnphase.sweeps import separation_laws
    from phasecore.checks import ConfigError

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", default="galanti_fig3",
                        help="experiments, comma-separated (default galanti_fig3)")
    parser.add_argument("--epochs", default="2,6",
                        help="the two short runs' epochs, a < b, a >= 2 (default 2,6)")
    args = parser.parse_args(argv)
    try:
        a, b = (int(e) for e in args.epochs.split(","))
    except ValueError:
        parser.error(f"--epochs must be two integers a,b (got {args.epochs!r})")
    if not 2 <= a < b:
        parser.error(f"--epochs must be a,b with 2 <= a < b (got {args.epochs!r})")
    try:
        sweeps = separation_laws.configs("full", args.only.split(","))
    except ConfigError as err:
        parser.error(f"--{err}")  # the option's own name
    base_cfg = _network(separation_laws.configs("full", [BASELINE[0]])[BASELINE[0]],
                        BASELINE[1])
    base_epoch, _ = epoch_seconds(base_cfg, (a, b))
    base_full = BASELINE_MEASURED_S / base_cfg.epochs  # the measured run, per epoch
    print(f"baseline {BASELINE[0]} at {BASELINE[1]} layers: {base_epoch:.2f} s an epoch here "
          f"({base_full:.2f} s in its measured {base_cfg.epochs}-epoch run)")
    for name, cfg in sweeps.items():
        network = _network(cfg)
        per_epoch, once = epoch_seconds(network, (a, b))
        ratio, n = per_epoch / base_epoch, _networks(cfg)
        one = per_epoch * cfg.epochs + once  # one network's whole run, from its epoch
        scaled = ratio * BASELINE_MEASURED_S * cfg.epochs / base_cfg.epochs * n
        print(f"{name} (depth {network.depth}, width {network.width}): {per_epoch:.2f} s an "
              f"epoch, {ratio:.2f} x the baseline's; {n} networks of {cfg.epochs} epochs, "
              f"{cfg.models_per_chunk} a chunk: about {one * n:.3g} core-seconds from its "
              f"epoch ({one * n / 3600:.1f} h), {scaled:.3g} from the baseline's measured "
              f"run; a chunk about {one * cfg.models_per_chunk / 3600:.1f} h on one core")


if __name__ == "__main__":
    main()
