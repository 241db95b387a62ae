"""Fitting the chain to a whole diagram: the implicit integrator vs the previous explicit one.

    python benchmarks/bench_fit.py [--sweep figures/paper/dnn_dropout.nc] [--cells N]
                                   [--skip-baseline]

Fits every cell of a committed sweep (by default the paper's dropout diagram, 96 cells of
10 seeds) twice in one run, on one thread, and prints the CPU seconds of this process:

* final curves (``fit_sweep_final``: mu->, s at T = 1000, mu<- = 2 mu->),
* training trajectories (``fit_sweep_trajectory``: mu->, mu<-, s, c with intervals) from
  rest, and from the network's first curve (new: no baseline),

with today's model — the linearly implicit integrator of ``springblock.fit.integrator`` —
and with the baseline, the previous model: the explicit RK4 of
``springblock.theory.predict_positions`` (parameter sets grouped by time scale within a
factor of 4, as the fits did). Both run the same optimiser from the same starts, so the
ratio is the integrator's; it also prints how far the two fits' results lie apart.
"""

from __future__ import annotations

import argparse
import time
from contextlib import contextmanager
from pathlib import Path
from unittest import mock

import numpy as np
import xarray as xr
from threadpoolctl import threadpool_limits

from dnnphase.compare.comparator.fitting import fit_sweep_final, fit_sweep_trajectory
from phasecore.commandline import integer
from springblock import theory
from springblock.fit import integrator, shapes, starts, trajectory, variants


def rk4_positions(blocks, mu_right, mu_left, noise, epochs, time_scale=1.0, *, start=None,
                  modulus=1.0, target=1.0, steps_per_doubling=None, first_span=None):
    """The previous model: :func:`springblock.theory.predict_positions` from rest, (K, E, L)."""
    assert start is None, "the explicit integrator starts at rest only"
    mu_r, mu_l, s, c = (np.ravel(v) for v in np.broadcast_arrays(
        *(np.asarray(v, dtype=np.float64) for v in (mu_right, mu_left, noise, time_scale))))
    e = np.asarray(epochs, dtype=np.float64)
    x = np.zeros((mu_r.size, e.size, blocks))
    # its cost follows the largest c of a call: groups of similar c, as the fits did
    group = np.floor(np.log(c) / np.log(4.0)).astype(int)
    for g in np.unique(group):
        rows = group == g
        x[rows] = theory.predict_positions(blocks, mu_r[rows], mu_l[rows], s[rows], e[-1],
                                           times=e, time_scale=c[rows], modulus=modulus,
                                           target=target)
    return x


@contextmanager
def baseline_model():
    """Fits with the explicit RK4 model in place of the implicit integrator."""
    # the trajectory fit reaches the integrator through the paper chain's ChainVariant
    with mock.patch.object(shapes, "chain_positions", rk4_positions), \
            mock.patch.object(variants, "chain_positions", rk4_positions):
        yield


def cpu_seconds(fn):
    """(result, CPU seconds of this process), the fits' caches emptied first."""
    starts.grid_shapes.cache_clear()
    trajectory._start_grid.cache_clear()
    t = time.process_time()
    out = fn()
    return out, time.process_time() - t


def compare(new: xr.Dataset, old: xr.Dataset, names) -> str:
    """Median and largest difference of each named estimate (relative to the old value)."""
    parts = []
    for name in names:
        a, b = new[name].values, old[name].values
        with np.errstate(invalid="ignore", divide="ignore"):
            rel = np.abs(a - b) / np.abs(b)
        parts.append(f"{name} {np.nanmedian(rel):.1e}/{np.nanmax(rel):.1e}")
    return "relative difference median/max: " + ", ".join(parts)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sweep", default="figures/paper/dnn_dropout.nc",
                        help="a network sweep's result file")
    parser.add_argument("--cells", type=integer(1), default=None,
                        help="fit only the first N >= 1 knob values of every alpha row")
    parser.add_argument("--skip-baseline", action="store_true",
                        help="time today's fits only (the baseline takes minutes)")
    args = parser.parse_args()
    if not Path(args.sweep).is_file():
        parser.error(f"--sweep: no file {args.sweep!r}")
    net = xr.open_dataset(args.sweep).load()
    knob = net.attrs["knob"]
    if args.cells:
        net = net.isel({knob: slice(0, args.cells)})
    n_cells = net.sizes["alpha"] * net.sizes[knob]
    print(f"{args.sweep}: {n_cells} cells x {net.sizes['seed']} seeds, "
          f"{net.sizes['epoch']} recorded epochs; CPU seconds of this process, one thread")
    # compile the integrator outside the timings (numba caches it on disk after a first use)
    integrator.chain_positions(7, 0.01, 0.02, 0.01, [1.0])
    jobs = {
        "final curves": (lambda: fit_sweep_final(net), ("mu_right", "noise", "residual")),
        "trajectories from rest": (lambda: fit_sweep_trajectory(net),
                                   ("mu_right", "noise", "time_scale", "chi2_per_dof")),
        "trajectories from the network's start": (
            lambda: fit_sweep_trajectory(net, start="network"), ()),
    }
    with threadpool_limits(1):
        for what, (job, names) in jobs.items():
            new, t_new = cpu_seconds(job)
            line = f"{what:40s} implicit {t_new:7.2f} s"
            if names and not args.skip_baseline:
                with baseline_model():
                    old, t_old = cpu_seconds(job)
                line += (f"   explicit RK4 {t_old:7.2f} s   ratio {t_old / t_new:6.1f}x   "
                         + compare(new, old, names))
            print(line, flush=True)


if __name__ == "__main__":
    main()
