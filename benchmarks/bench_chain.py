"""Speed of the chain kernel, as ratios against baselines measured in the same run.

    python benchmarks/bench_chain.py [--quick]

Prints block-steps per second (one block advanced by one time step) for

* the ensemble kernel (``springblock.dynamics.overdamped``) at M = 1, 64, 4096 chains;
* a plain Python per-block loop (the paper notebook's algorithm, numpy's
  ``np.random.randn`` per block) — the baseline;
* an RNG-only numba loop that draws the same normals and does nothing else
  (the limit set by the generator), for our generator and for numba's
  built-in ``np.random.standard_normal``;

and the ratios kernel / Python loop and kernel / RNG-only limit. Timings are
medians of repeats; the machine may be shared, so only the ratios matter.
"""

from __future__ import annotations

import argparse
import statistics
import time

import numba
import numpy as np

from springblock import dynamics, rng
from springblock.config import ChainConfig

L = 7


def _median_time(fn, repeats):
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def python_loop(steps, seed=0):
    """The notebook's algorithm: a per-block Python loop with np.random.randn."""
    np.random.seed(seed)  # noqa: NPY002
    x = [0.0] * L
    k, y, eta, s, mu_r, mu_l = 1.0, 1.0, 0.01, 0.01, 0.01, 0.02
    for _ in range(steps):
        new = x[:]
        for j in range(L):
            left = x[j - 1] if j > 0 else 0.0
            right = x[j + 1] if j + 1 < L else y
            z = k * (right - 2.0 * x[j] + left) + s * np.random.randn()  # noqa: NPY002
            if z > mu_r:
                new[j] = x[j] + eta * (z - mu_r)
            elif z < -mu_l:
                new[j] = x[j] + eta * (z + mu_l)
        x = new
    return x


@numba.njit(parallel=True, cache=True)
def rng_only(states, n_draws, out):
    """Draw n_draws normals per chain with our generator; keep a sum so none is skipped."""
    for m in numba.prange(states.shape[0]):
        s0, s1, s2, s3 = states[m, 0], states[m, 1], states[m, 2], states[m, 3]
        acc = 0.0
        for _ in range(n_draws):
            z, s0, s1, s2, s3 = rng.next_truncated_normal(np.inf, s0, s1, s2, s3)
            acc += z
        out[m] = acc
        states[m, 0], states[m, 1], states[m, 2], states[m, 3] = s0, s1, s2, s3


@numba.njit(parallel=True, cache=True)
def rng_only_builtin(n_chains, n_draws, out):
    """The same with numba's built-in (Mersenne Twister, polar) normal generator."""
    for m in numba.prange(n_chains):
        acc = 0.0
        for _ in range(n_draws):
            acc += np.random.standard_normal()  # noqa: NPY002
        out[m] = acc


def kernel_rate(n_chains, block_steps, repeats):
    cfg = ChainConfig(blocks=L, mu_right=0.01, mu_left=0.02, noise=0.01)
    params = np.tile(cfg.param_row(), (n_chains, 1))
    steps = max(1, block_steps // (n_chains * L))
    states = rng.seed_states(np.arange(n_chains))
    traj = np.zeros((n_chains, 0, L))

    def run():
        x = np.zeros((n_chains, L))
        dynamics.overdamped(x, states, params, steps, 0, False, 0, traj)

    dynamics.overdamped(np.zeros((n_chains, L)), states, params, 2, 0, False, 0, traj)  # compile
    return n_chains * L * steps / _median_time(run, repeats)


def rng_rate(n_chains, draws, repeats, builtin=False):
    per_chain = max(1, draws // n_chains)
    out = np.zeros(n_chains)
    states = rng.seed_states(np.arange(n_chains))
    if builtin:
        rng_only_builtin(n_chains, 2, out)
        t = _median_time(lambda: rng_only_builtin(n_chains, per_chain, out), repeats)
    else:
        rng_only(states, 2, out)
        t = _median_time(lambda: rng_only(states, per_chain, out), repeats)
    return n_chains * per_chain / t


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="smaller sizes (~10 s)")
    args = parser.parse_args(argv)
    work = 20_000_000 if args.quick else 200_000_000
    repeats = 3 if args.quick else 5
    py_steps = 2_000 if args.quick else 20_000

    print(f"chain kernel benchmark: L = {L}, {numba.get_num_threads()} numba threads")
    t_py = _median_time(lambda: python_loop(py_steps), 3)
    py = L * py_steps / t_py
    print(f"  pure-Python per-block loop      : {py / 1e6:9.3f} M block-steps/s  (baseline)")
    lim = rng_rate(256, work, repeats)
    lim_builtin = rng_rate(256, work // 4, repeats, builtin=True)
    print(f"  RNG-only, xoshiro256++ ziggurat : {lim / 1e6:9.1f} M normals/s")
    print(f"  RNG-only, numba built-in normal : {lim_builtin / 1e6:9.1f} M normals/s  "
          f"(ours {lim / lim_builtin:.1f}x faster)")
    for m in (1, 64, 4096):
        rate = kernel_rate(m, work if m > 1 else work // 10, repeats)
        print(f"  kernel, M = {m:5d} chains        : {rate / 1e6:9.1f} M block-steps/s  "
              f"{rate / py:7.0f}x pure Python, {100 * rate / lim:5.1f} % of RNG-only limit")


if __name__ == "__main__":
    main()
