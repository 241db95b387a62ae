"""The per-chain generator: xoshiro256++ words and ziggurat normals."""

import math

import numpy as np
import pytest
from scipy import stats

from springblock import randomness as rng


def _xoshiro_reference(state, n):
    """Straight transcription of xoshiro256++ with Python integers."""
    mask = (1 << 64) - 1
    s = [int(v) for v in state]

    def rotl(x, k):
        return ((x << k) | (x >> (64 - k))) & mask

    out = []
    for _ in range(n):
        out.append((rotl((s[0] + s[3]) & mask, 23) + s[0]) & mask)
        t = (s[1] << 17) & mask
        s[2] ^= s[0]
        s[3] ^= s[1]
        s[1] ^= s[2]
        s[0] ^= s[3]
        s[2] ^= t
        s[3] = rotl(s[3], 45)
    return out


def test_xoshiro_words_match_reference_transcription():
    state = rng.seed_states([42])[0]
    s0, s1, s2, s3 = (np.uint64(v) for v in state)
    got = []
    for _ in range(50):
        r, *words = rng.next_u64(s0, s1, s2, s3)
        s0, s1, s2, s3 = (np.uint64(w) for w in words)  # Python ints would type as int64
        got.append(int(r))
    assert got == _xoshiro_reference(state, 50)


def test_ziggurat_tables_close_the_top_layer():
    x = rng.ZIG_X
    assert x[1] == rng.ZIG_R and x[-1] == 0.0 and np.all(np.diff(x[1:]) < 0)
    # the top layer has the same area V as every other layer
    assert x[-2] * (1 - math.exp(-0.5 * x[-2] ** 2)) == pytest.approx(rng.ZIG_V, rel=1e-6)


def test_normals_have_standard_moments_and_pass_ks():
    z = rng.standard_normal([3, 4], 1_000_000).ravel()
    n = z.size
    assert abs(z.mean()) < 5 / math.sqrt(n)
    assert abs(z.var() - 1) < 5 * math.sqrt(2 / n)
    assert abs(stats.skew(z)) < 5 * math.sqrt(6 / n)
    assert abs(stats.kurtosis(z)) < 5 * math.sqrt(24 / n)
    assert stats.kstest(z[:500_000], "norm").pvalue > 1e-3


def test_tail_beyond_ziggurat_base_has_the_right_frequency():
    z = rng.standard_normal([11], 10_000_000)[0]
    for cut in (3.0, 3.6541528853610088, 4.0):
        expected = 2 * stats.norm.sf(cut) * z.size
        assert abs(np.sum(np.abs(z) > cut) - expected) < 5 * math.sqrt(expected)
    tail = z[z > rng.ZIG_R]
    # conditional tail distribution: KS against the normal truncated to (R, inf)
    ks = stats.kstest(tail, stats.truncnorm(rng.ZIG_R, np.inf).cdf)
    assert ks.pvalue > 1e-3


def test_truncated_normals_respect_bound_and_distribution():
    z = rng.standard_normal([5], 200_000, bound=0.7)[0]
    assert np.abs(z).max() <= 0.7
    assert stats.kstest(z, stats.truncnorm(-0.7, 0.7).cdf).pvalue > 1e-3


def test_streams_are_reproducible_and_independent():
    a = rng.standard_normal([1, 2, 1], 10_000)
    assert np.array_equal(a[0], a[2])
    assert abs(np.corrcoef(a[0], a[1])[0, 1]) < 0.05


def test_seed_states_are_nonzero_and_distinct():
    states = rng.seed_states(range(1000))
    assert np.all(states.any(axis=1))
    assert len({tuple(s) for s in states}) == 1000
