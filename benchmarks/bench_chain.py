"""Speed of the chain kernel, as ratios against baselines measured in the same run.

    python benchmarks/bench_chain.py [--quick] [--events | --prediction]

Prints block-steps per second (one block advanced by one time step) for

* the ensemble kernel (``springblock.dynamics.overdamped``) at M = 1, 64, 4096 chains;
* a plain Python per-block loop (the paper notebook's algorithm, numpy's
  ``np.random.randn`` per block) — the baseline;
* an RNG-only numba loop that draws the same normals and does nothing else
  (the limit set by the generator), for our generator and for numba's
  built-in ``np.random.standard_normal``;

and the ratios kernel / Python loop and kernel / RNG-only limit. Timings are
medians of repeats; the machine may be shared, so only the ratios matter.

``--events`` times the event-driven kernel (``springblock.events``) against the
step kernel: the wall time to reach a horizon of n steps (1e5 ... 1e10) at
s/a = 1, 0.5, 0.3, 0.2 (a = (mu-> + mu<-)/2, L = 7, mu-> = 0.02, mu<- = 0.04),
the step kernel timed at 1e6 steps and scaled linearly; what ``auto`` picks;
where the time of one event goes; and the default phase-diagram grid
(6 mu-> x 8 s x 10 seeds) to T = inf.

``--prediction`` times a phase diagram's mean-drift prediction (6 x 6 cells, L = 7,
T = 2000): its cells integrated side by side (``ensemble.predict_many``, what
``phase_diagram`` runs) against one call a cell (the baseline), and checks that both
give the same positions bit for bit.
"""

from __future__ import annotations

import argparse
import statistics
import time

import numba
import numpy as np

from springblock import dynamics, events, sampling
from springblock import randomness as rng
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


# --- event-driven vs step-by-step ---------------------------------------------------

EV_CHAINS = 8  # chains per timing (both kernels run them in parallel over chains)
EV_BUDGET_S = 2.0  # skip (and extrapolate) event-driven runs expected to take longer


def _events_run(cfg, n_chains, horizon):
    """Event-driven run of ``n_chains`` chains to ``horizon`` steps: (seconds, events/chain)."""
    params = np.tile(cfg.param_row(), (n_chains, 1))
    states = rng.seed_states(np.arange(n_chains))
    x = np.zeros((n_chains, L))
    out = np.zeros(n_chains), np.zeros(n_chains, dtype=np.int64), np.zeros(n_chains, np.int64)
    kernel = events.independent
    t0 = time.perf_counter()
    kernel(x, states, params, np.full(n_chains, float(horizon)), 10**12, 0,
           np.zeros((n_chains, 0, L)), *out)
    return time.perf_counter() - t0, out[1].mean()


def _steps_time_per_step(cfg, n_chains, steps=1_000_000):
    """Step-kernel seconds per step for ``n_chains`` chains (timed at 1e6 steps)."""
    params = np.tile(cfg.param_row(), (n_chains, 1))
    states = rng.seed_states(np.arange(n_chains))
    traj = np.zeros((n_chains, 0, L))
    dynamics.overdamped(np.zeros((n_chains, L)), states, params, 2, 0, False, 0, traj)
    t0 = time.perf_counter()
    dynamics.overdamped(np.zeros((n_chains, L)), states, params, steps, 0, False, 0, traj)
    return (time.perf_counter() - t0) / steps


def _component_times(s, n=2_000_000):
    """ns per move_rate, tail draw and geometric wait at a block near F* (one thread)."""
    out = []
    for part in range(3):
        @numba.njit
        def one(n, part=part):
            s0, s1, s2, s3 = np.uint64(1), np.uint64(2), np.uint64(3), np.uint64(4)
            acc = 0.0
            for i in range(n):
                f = -0.01 + 1e-12 * i
                if part == 0:
                    nlq, lp, right = events.move_rate(f, 0.5, 0.02, 0.04, s, np.inf, 0.01, 0.0)
                    acc += nlq + right
                elif part == 1:
                    z, s0, s1, s2, s3 = sampling.normal_on_interval(0.03 / s, np.inf,
                                                                  s0, s1, s2, s3)
                    acc += z
                else:
                    g, s0, s1, s2, s3 = sampling.geometric(1e-3 + 1e-15 * i, 0.0, s0, s1, s2, s3)
                    acc += g
            return acc
        one(10)
        t0 = time.perf_counter()
        one(n)
        out.append((time.perf_counter() - t0) / n * 1e9)
    return out


def events_benchmark(quick=False):
    """Wall time to reach n steps, events vs steps; extrapolated runs are marked ~.

    An event-driven run expected to take longer than EV_BUDGET_S is not run:
    its event count is extrapolated from the last measured horizon with the
    growth of :func:`springblock.algorithm.expected_events`, at the measured
    cost per event.
    """
    from springblock.algorithm import choose_algorithm, expected_events

    threads = numba.get_num_threads()
    horizons = [10**e for e in range(5, 10 if quick else 11)]
    print(f"\nevent-driven vs step kernel: L = {L}, mu-> = 0.02, mu<- = 0.04, {EV_CHAINS} chains, "
          f"{threads} numba threads (~: extrapolated)")
    print("  s/a   n      events/chain  ns/event  events [s]  steps [s]  steps/events  auto")
    a = 0.03
    for ratio in (1.0, 0.5, 0.3, 0.2):
        cfg = ChainConfig(blocks=L, mu_right=0.02, mu_left=0.04, noise=ratio * a)
        per_step = _steps_time_per_step(cfg, EV_CHAINS)
        _events_run(cfg, 2, 10)  # compile
        last = None  # (n, events per chain, ns per event per thread)
        for n in horizons:
            t_steps = per_step * n
            mark = " "
            if last is not None:
                n_prev, ev_prev, ns_event = last
                n_ev = ev_prev * expected_events(cfg, n) / expected_events(cfg, n_prev)
                t_ev = n_ev * EV_CHAINS * ns_event * 1e-9 / threads
                mark = "~" if t_ev > EV_BUDGET_S else " "
            if mark == " ":
                t_ev, n_ev = _events_run(cfg, EV_CHAINS, n)
                last = (n, n_ev, t_ev / (n_ev * EV_CHAINS) * 1e9 * threads)
            auto = choose_algorithm(cfg.replace(steps=n, algorithm="auto"))
            print(f"  {ratio:3.1f}  {n:6.0e}  {mark}{n_ev:12.0f}  {last[2]:8.0f}  "
                  f"{mark}{t_ev:9.3g}  {t_steps:9.3g}  {mark}{t_steps / t_ev:11.3g}  {auto}")
    rate, draw, wait = _component_times(0.3 * a)
    print(f"  one event at s/a = 0.3 near F* (one thread): move probabilities {rate:.0f} ns x 3 "
          f"blocks (the mover and its neighbours), tail draw {draw:.0f} ns, geometric wait "
          f"{wait:.0f} ns x 3; the rest is bookkeeping")


def infinite_grid_benchmark():
    """Default phase-diagram grid (6 x 8 cells x 10 seeds) to T = inf, algorithm auto."""
    import math

    from springblock.phase import phase_diagram

    phase_diagram(("mu_right", [0.02]), ("noise", [0.0, 0.01]), mu_left_ratio=2, seeds=1,
                  steps=math.inf, algorithm="auto")  # compile
    t0 = time.perf_counter()
    pd = phase_diagram(mu_left_ratio=2, seeds=10, steps=math.inf, algorithm="auto")
    took = time.perf_counter() - t0
    print(f"\ndefault grid to T = inf (6 x 8 cells x 10 seeds, auto): {took:.1f} s on "
          f"{numba.get_num_threads()} threads; {int(pd['frozen'].sum())} chains frozen, "
          f"{int((pd['algorithm'] == 'events').sum())} event-driven, "
          f"{pd['events'].where(pd['events'] > 0).mean().item():.0f} events per chain")


def prediction_benchmark():
    """A phase diagram's prediction, side by side against one cell at a time."""
    from springblock.ensemble import predict, predict_many

    cells = [ChainConfig(mu_right=float(mr), mu_left=float(2 * mr), noise=float(s),
                         steps=200_000)
             for mr in np.linspace(0, 0.03, 6) for s in np.linspace(0, 0.05, 6)]
    horizons = [c.horizon for c in cells]
    one = _median_time(lambda: [predict(c, h) for c, h in zip(cells, horizons, strict=True)], 1)
    together = _median_time(lambda: predict_many(cells, horizons), 3)
    same = np.array_equal(predict_many(cells, horizons),
                          np.stack([predict(c, h) for c, h in zip(cells, horizons, strict=True)]))
    print(f"mean-drift prediction, {len(cells)} cells, T = {horizons[0]:g}:")
    print(f"  one call a cell (baseline)      : {one:7.2f} s")
    print(f"  cells side by side              : {together:7.2f} s  ({one / together:.0f}x "
          f"faster; {'identical' if same else 'DIFFERENT'} positions)")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="smaller sizes (~10 s)")
    parser.add_argument("--events", action="store_true",
                        help="only the event-driven vs step-kernel section")
    parser.add_argument("--prediction", action="store_true",
                        help="only the mean-drift prediction, side by side vs one by one")
    args = parser.parse_args(argv)
    if args.prediction:
        prediction_benchmark()
        return
    if args.events:
        events_benchmark(args.quick)
        infinite_grid_benchmark()
        return
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
    events_benchmark(args.quick)
    infinite_grid_benchmark()


if __name__ == "__main__":
    main()
