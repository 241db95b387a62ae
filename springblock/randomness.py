"""Counter-free, per-chain random streams for the numba kernels.

Every chain owns a xoshiro256++ state (four ``uint64`` words, Blackman & Vigna
2019) seeded from :class:`numpy.random.SeedSequence`, so a chain's noise
depends only on its own seed — never on how many chains share a kernel call,
on the thread count or on the order in which chains run.

Normal variates come from a 256-layer ziggurat (Marsaglia & Tsang 2000, in
the layout of Doornik 2005): one 64-bit draw gives the layer (low 8 bits) and
a signed uniform (high 53 bits), and ~99 % of draws return after one table
comparison. Why not numba's built-in ``np.random.standard_normal``: it is the
legacy Mersenne-Twister polar method, about 5-10x slower, and it keeps one
hidden state per thread, which makes results depend on scheduling.

The generator is checked against N(0, 1) in ``tests/springblock/test_randomness.py`` (moments,
Kolmogorov-Smirnov, tail frequencies beyond the ziggurat base).

All functions taking ``(s0, s1, s2, s3)`` return the advanced state as their
last four values; numba keeps these in registers inside the kernels.

The kernels are compiled with ``cache=True``. numba invalidates a cached kernel
when its own file changes, not when this file does: after editing this module,
delete the ``*.nbi``/``*.nbc`` files under ``springblock/__pycache__``.
"""

from __future__ import annotations

import math

import numba
import numpy as np

__all__ = ["ZIG_R", "ZIG_V", "next_normal", "next_truncated_normal", "next_u64", "next_uniform",
           "seed_states", "standard_normal"]

_U = np.uint64

# --- ziggurat tables --------------------------------------------------------

ZIG_LAYERS = 256
# Rightmost layer edge R and common layer area V for 256 layers of N(0,1)'s
# unnormalised density exp(-x^2/2) (Marsaglia & Tsang 2000).
ZIG_R = 3.6541528853610088
ZIG_V = 4.92867323399e-3


def _ziggurat_tables(layers: int = ZIG_LAYERS, r: float = ZIG_R, v: float = ZIG_V):
    """Layer edges x_i (descending, x_layers = 0) and ratios x_{i+1}/x_i."""
    x = np.empty(layers + 1)
    f = math.exp(-0.5 * r * r)
    x[0] = v / f  # base strip (rectangle + tail) stretched to a box of area v
    x[1] = r
    x[layers] = 0.0
    for i in range(2, layers):
        x[i] = math.sqrt(-2.0 * math.log(v / x[i - 1] + f))
        f = math.exp(-0.5 * x[i] * x[i])
    ratio = x[1:] / x[:-1]
    return x, ratio


ZIG_X, ZIG_RATIO = _ziggurat_tables()


# --- xoshiro256++ -----------------------------------------------------------


@numba.njit(inline="always")
def _rotl(x, k):
    return (x << _U(k)) | (x >> _U(64 - k))


@numba.njit(inline="always")
def next_u64(s0, s1, s2, s3):
    """One xoshiro256++ output and the advanced state."""
    result = _rotl(s0 + s3, 23) + s0
    t = s1 << _U(17)
    s2 ^= s0
    s3 ^= s1
    s1 ^= s2
    s0 ^= s3
    s2 ^= t
    s3 = _rotl(s3, 45)
    return result, s0, s1, s2, s3


@numba.njit(inline="always")
def next_uniform(s0, s1, s2, s3):
    """Uniform double in (0, 1]: never 0, so ``log`` of it is finite."""
    r, s0, s1, s2, s3 = next_u64(s0, s1, s2, s3)
    return (np.float64(r >> _U(11)) + 1.0) * (1.0 / 9007199254740992.0), s0, s1, s2, s3


@numba.njit
def _normal_slow(u, i, s0, s1, s2, s3):
    """The rare ziggurat branches: wedge rejection and the Gaussian tail."""
    while True:
        if i == 0:
            # Tail beyond R (Marsaglia 1964): exact, by rejection.
            while True:
                a, s0, s1, s2, s3 = next_uniform(s0, s1, s2, s3)
                b, s0, s1, s2, s3 = next_uniform(s0, s1, s2, s3)
                tx = -math.log(a) / ZIG_R
                ty = -math.log(b)
                if 2.0 * ty >= tx * tx:
                    break
            z = ZIG_R + tx
            return (-z if u < 0.0 else z), s0, s1, s2, s3
        x = u * ZIG_X[i]
        f0 = math.exp(-0.5 * (ZIG_X[i] * ZIG_X[i] - x * x))
        f1 = math.exp(-0.5 * (ZIG_X[i + 1] * ZIG_X[i + 1] - x * x))
        w, s0, s1, s2, s3 = next_uniform(s0, s1, s2, s3)
        if f1 + w * (f0 - f1) < 1.0:
            return x, s0, s1, s2, s3
        # Rejected: draw a fresh point and try again from the fast path.
        r, s0, s1, s2, s3 = next_u64(s0, s1, s2, s3)
        i = np.int64(r & _U(ZIG_LAYERS - 1))
        u = np.float64(r >> _U(11)) * (2.0 / 9007199254740992.0) - 1.0
        if abs(u) < ZIG_RATIO[i]:
            return u * ZIG_X[i], s0, s1, s2, s3


@numba.njit(inline="always")
def next_normal(s0, s1, s2, s3):
    """One standard normal variate (ziggurat) and the advanced state."""
    r, s0, s1, s2, s3 = next_u64(s0, s1, s2, s3)
    i = np.int64(r & _U(ZIG_LAYERS - 1))
    u = np.float64(r >> _U(11)) * (2.0 / 9007199254740992.0) - 1.0
    if abs(u) < ZIG_RATIO[i]:
        return u * ZIG_X[i], s0, s1, s2, s3
    return _normal_slow(u, i, s0, s1, s2, s3)


@numba.njit(inline="always")
def next_truncated_normal(bound, s0, s1, s2, s3):
    """Standard normal conditioned on |z| <= bound (rejection; bound=inf: plain).

    The first draw is straight-line code: with an infinite bound the loop never
    runs, and a ``while True`` form here halved the Gaussian kernels' speed.
    """
    z, s0, s1, s2, s3 = next_normal(s0, s1, s2, s3)
    while abs(z) > bound:
        z, s0, s1, s2, s3 = next_normal(s0, s1, s2, s3)
    return z, s0, s1, s2, s3


# --- seeding and bulk draws -------------------------------------------------


def seed_states(seeds) -> np.ndarray:
    """xoshiro256++ states for a sequence of integer seeds, shape ``(M, 4)``.

    Each state comes from ``SeedSequence(seed)``, so equal seeds give equal
    streams wherever they appear (phase-diagram cells with the same seed share
    common random numbers), and distinct seeds give independent streams.
    """
    seeds = np.atleast_1d(np.asarray(seeds))
    states = np.empty((seeds.size, 4), dtype=np.uint64)
    for m, seed in enumerate(seeds.ravel()):
        states[m] = np.random.SeedSequence(int(seed)).generate_state(4, np.uint64)
        if not states[m].any():  # the all-zero state is xoshiro's one fixed point
            states[m, 0] = 1
    return states


@numba.njit(parallel=True, cache=True)
def _fill_normals(states, out, bound):
    for m in numba.prange(out.shape[0]):
        s0, s1, s2, s3 = states[m, 0], states[m, 1], states[m, 2], states[m, 3]
        for j in range(out.shape[1]):
            out[m, j], s0, s1, s2, s3 = next_truncated_normal(bound, s0, s1, s2, s3)
        states[m, 0], states[m, 1], states[m, 2], states[m, 3] = s0, s1, s2, s3


def standard_normal(seeds, size: int, bound: float = math.inf) -> np.ndarray:
    """Draw ``size`` normals per seed, shape ``(len(seeds), size)``.

    The same stream a kernel would consume for that seed; for tests and for
    users who want the generator outside a simulation.
    """
    states = seed_states(seeds)
    out = np.empty((states.shape[0], int(size)))
    _fill_normals(states, out, float(bound))
    return out
