"""The normal in log space and the exact samplers (springblock.sampling) the event-driven
kernels draw with, against scipy."""

import math

import numba
import numpy as np
import pytest
from scipy import special, stats

from springblock import randomness as rng
from springblock import sampling


def test_log_ndtr_matches_scipy_into_the_far_tail():
    for x in (-1e4, -300.0, -40.0, -20.5, -19.5, -8.0, -1.0, 0.0, 2.0, 9.0, 30.0):
        assert sampling.log_ndtr(x) == pytest.approx(special.log_ndtr(x), rel=1e-13, abs=1e-300)


def test_interval_mass_is_accurate_for_narrow_and_far_intervals():
    for lo, hi in ((-2.0, 2.0), (1.0, 1.5), (-3.0, -2.9), (5.0, np.inf), (-30.0, -29.99)):
        ref = math.log(special.ndtr(hi) - special.ndtr(lo)) if hi < 5 else None
        if ref is None:  # far tail: difference of the log-CDFs' complements
            ref = special.log_ndtr(-lo) + math.log1p(-math.exp(special.log_ndtr(-hi)
                                                                - special.log_ndtr(-lo)))
        assert sampling.log_interval_mass(lo, hi) == pytest.approx(ref, rel=1e-10)
    # width ~1e-12 at 2: phi(2) * width, where a difference of CDFs has few digits left
    hi = 2.0 + 1e-12
    assert sampling.log_interval_mass(2.0, hi) == pytest.approx(
        math.log(stats.norm.pdf(2.0) * (hi - 2.0)), rel=1e-10)
    assert sampling.log_interval_mass(1.0, 1.0) == -math.inf


@numba.njit
def _draws(lo, hi, n, seed_state):
    s0, s1, s2, s3 = seed_state[0], seed_state[1], seed_state[2], seed_state[3]
    out = np.empty(n)
    for i in range(n):
        out[i], s0, s1, s2, s3 = sampling.normal_on_interval(lo, hi, s0, s1, s2, s3)
    return out


@pytest.mark.parametrize("lo,hi", [(8.0, np.inf), (-np.inf, -3.0), (2.0, 2.3), (0.1, 6.0),
                                   (-0.2, 0.3), (-1.5, 1.5), (25.0, np.inf)])
def test_truncated_normal_sampler_is_exact(lo, hi):
    """Kolmogorov-Smirnov against scipy's truncated normal, far tail included."""
    z = _draws(lo, hi, 20_000, rng.seed_states([3])[0])
    assert np.all((z >= lo) & (z <= hi))
    assert stats.kstest(z, stats.truncnorm(lo, hi).cdf).pvalue > 1e-3


@numba.njit
def _geometric_mean(nlq, log_p, n, seed_state):
    s0, s1, s2, s3 = seed_state[0], seed_state[1], seed_state[2], seed_state[3]
    acc = 0.0
    for _ in range(n):
        g, s0, s1, s2, s3 = sampling.geometric(nlq, log_p, s0, s1, s2, s3)
        acc += g
    return acc / n


def test_geometric_waits_have_mean_one_over_p_far_into_the_tail():
    state = rng.seed_states([1])[0]
    p = 0.3
    assert _geometric_mean(-math.log1p(-p), 0.0, 200_000, state) == pytest.approx(1 / p, rel=0.01)
    # p = e^-600: waits of ~1e260 steps, drawn as easily as waits of 3
    mean = _geometric_mean(math.exp(-600.0), 0.0, 20_000, state)
    assert math.log(mean) == pytest.approx(600.0, abs=0.03)
    assert _geometric_mean(math.inf, 0.0, 100, state) == 1.0  # p = 1: every step
    assert sampling.geometric(0.0, -math.inf, 1, 2, 3, 4)[0] == math.inf  # p = 0: never
