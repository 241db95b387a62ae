"""One tune round on both cores or on one: is splitting a round into chunks worth it?

    python benchmarks/bench_tune_round.py [--case small|mnist1d]

A tune round is one sweep of values_per_round x seeds models (3 x 4 by default), trained as
one stack in this process (tune's default on a CPU). The alternative is two chunks of 6 in
a pool of 2 workers (``--models-per-chunk 6 --scheduler processes --workers 2``). The
script times both twice, in both orders (the machine's load drifts), and prints the
ratio. It also checks that the two chunks give the same numbers in a pool as in this
process (results depend on the configuration, never on the scheduler).

Cases: "small" is docs/tune.md's example network (digits, 4 x 32 MLP, 100 epochs, 500
samples); "mnist1d" is the default network (7 x 100 MLP, 100 epochs) on mnist1d's 4000
training samples, alpha 0.2.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

CASES = {
    "small": dict(dataset="digits", n_train=500, depth=4, width=32, epochs=100, lr=3e-3,
                  alphas=[0.0]),
    "mnist1d": dict(dataset="mnist1d", alphas=[0.2]),
}


def timed(**kw):
    from dnnphase.sweeps.sweep import sweep

    t = time.perf_counter()
    ds = sweep(**kw)
    return time.perf_counter() - t, ds["curvature_scaled"].values


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--case", choices=list(CASES), default="small")
    args = p.parse_args(argv)
    kw = dict(knob="dropout", values=[0.0, 0.06, 0.12], seeds=[0, 1, 2, 3],
              measures=["trace_ratio"], **CASES[args.case])
    timed(models_per_chunk=12, scheduler="serial", **kw)  # data and kernels warmed up
    one, two = [], []
    for order in range(2):
        runs = [("one", dict(models_per_chunk=12, scheduler="serial")),
                ("two", dict(models_per_chunk=6, scheduler="processes", workers=2))]
        for name, how in runs if order == 0 else runs[::-1]:
            t, curv = timed(**how, **kw)
            (one if name == "one" else two).append(t)
            if name == "two":
                pooled = curv
    _, serial = timed(models_per_chunk=6, scheduler="serial", **kw)
    print(f"{args.case}: one stack in this process {min(one):.1f} s (runs {one[0]:.1f}, "
          f"{one[1]:.1f}); two chunks in a pool of 2 {min(two):.1f} s (runs {two[0]:.1f}, "
          f"{two[1]:.1f}); speed-up of the pool {min(one) / min(two):.2f}x; two chunks in a "
          f"pool equal to them in this process: {bool(np.array_equal(pooled, serial))}")


if __name__ == "__main__":
    main()
