"""The standard normal in log space, and exact samplers: what the event-driven kernels draw with.

The kernels of :mod:`springblock.events` jump from one move of the chain to the next. A
block's chance to move in a step is a tail mass of the noise, handled as a logarithm
(:func:`log_ndtr`, :func:`log_interval_mass`, :func:`log_add`) so that a mass of 1e-300 is
as exact as one of 0.1; the wait until the next move is geometric (:func:`geometric`), and
the noise of a block that moves is the normal conditioned on the tail it fell into
(:func:`normal_on_interval`, exact at any distance into the tail). Every sampler takes and
returns the xoshiro state of :mod:`springblock.randomness` (``s0, s1, s2, s3``), so a
chain's draws are the same however its run is cut into kernel calls. numba functions,
compiled on first use and cached.
"""

from __future__ import annotations

import math

import numba
import numpy as np

from springblock.randomness import next_normal, next_uniform

__all__ = ["geometric", "log_add", "log_interval_mass", "log_ndtr", "normal_on_interval"]

_SQRT_HALF = 0.7071067811865476
_LOG_SQRT_2PI = 0.9189385332046728
_INF = np.inf


# --- the normal distribution in log space -----------------------------------


@numba.njit(cache=True)
def log_ndtr(x):
    """log Phi(x) for a standard normal CDF Phi, accurate for any x.

    erfc for x > -20 (relative accuracy ~1 ulp until it underflows near
    x = -38); below, the Laplace continued fraction of the Mills ratio
    Phi(-t) / phi(t) = 1/(t + 1/(t + 2/(t + 3/(t + ...)))), which converges
    in a few terms that far out.
    """
    if x > 0.0:
        return math.log1p(-0.5 * math.erfc(x * _SQRT_HALF))
    if x > -20.0:
        return math.log(0.5 * math.erfc(-x * _SQRT_HALF))
    if x == -_INF:
        return -_INF
    t = -x
    frac = t
    for n in range(40, 0, -1):
        frac = t + n / frac
    return -0.5 * t * t - _LOG_SQRT_2PI - math.log(frac)


@numba.njit(cache=True)
def _ndtr(x):
    return 0.5 * math.erfc(-x * _SQRT_HALF)


@numba.njit(cache=True)
def log_interval_mass(lo, hi):
    """log P(lo < xi < hi) for standard normal xi; -inf if the interval is empty.

    Narrow intervals use the midpoint expansion phi(m) d (1 + (m^2 - 1) d^2 / 24)
    (relative error ~ (|m| d)^4 / 2000), so a block whose threshold sits a
    rounding error inside a truncation bound gets its true, tiny mass instead
    of the difference of two nearly equal CDFs.
    """
    if not lo < hi:
        return -_INF
    if hi == _INF:
        return log_ndtr(-lo)
    if lo == -_INF:
        return log_ndtr(hi)
    if lo >= 0.0:  # mirror into the left half, where log_ndtr is exact
        lo, hi = -hi, -lo
    d = hi - lo
    m = 0.5 * (hi + lo)
    if d * (abs(m) + 1.0) < 1e-3:
        return (-0.5 * m * m - _LOG_SQRT_2PI + math.log(d)
                + math.log1p((m * m - 1.0) * d * d / 24.0))
    if hi <= 0.0:
        a, b = log_ndtr(hi), log_ndtr(lo)
        return a + math.log1p(-math.exp(b - a))
    # lo < 0 < hi and the interval is not narrow: both tails are <= 1/2.
    return math.log1p(-(_ndtr(lo) + _ndtr(-hi)))


@numba.njit(cache=True)
def log_add(a, b):
    """log(e^a + e^b) without overflow."""
    if a == -_INF:
        return b
    if b == -_INF:
        return a
    if a < b:
        a, b = b, a
    return a + math.log1p(math.exp(b - a))


# --- exact samplers -----------------------------------------------------------


@numba.njit(cache=True)
def _normal_on_positive(lo, hi, s0, s1, s2, s3):
    """Standard normal conditioned on [lo, hi], 0 <= lo < hi <= inf (Robert 1995).

    Three exact rejection samplers, each chosen where its acceptance is
    >= 1/e: a uniform proposal on narrow intervals, the half-normal near 0,
    and an exponential proposal with the optimal rate in the tail.
    """
    if (hi - lo) * (hi + lo) <= 2.0:  # narrow: uniform proposal
        while True:
            u, s0, s1, s2, s3 = next_uniform(s0, s1, s2, s3)
            z = lo + (hi - lo) * (1.0 - u)  # in [lo, hi)
            w, s0, s1, s2, s3 = next_uniform(s0, s1, s2, s3)
            if w <= math.exp(0.5 * (lo - z) * (lo + z)):
                return z, s0, s1, s2, s3
    if lo < 0.5:  # the interval holds a good share of the half-normal
        while True:
            z, s0, s1, s2, s3 = next_normal(s0, s1, s2, s3)
            z = abs(z)
            if lo <= z <= hi:
                return z, s0, s1, s2, s3
    rate = 0.5 * (lo + math.sqrt(lo * lo + 4.0))  # optimal exponential rate
    while True:
        u, s0, s1, s2, s3 = next_uniform(s0, s1, s2, s3)
        z = lo - math.log(u) / rate
        w, s0, s1, s2, s3 = next_uniform(s0, s1, s2, s3)
        if z <= hi and w <= math.exp(-0.5 * (z - rate) * (z - rate)):
            return z, s0, s1, s2, s3


@numba.njit(cache=True)
def normal_on_interval(lo, hi, s0, s1, s2, s3):
    """Standard normal conditioned on [lo, hi] (lo < hi, either may be infinite).

    Exact at any distance into the tail; returns the draw and the advanced
    xoshiro state.
    """
    if lo >= 0.0:
        return _normal_on_positive(lo, hi, s0, s1, s2, s3)
    if hi <= 0.0:
        z, s0, s1, s2, s3 = _normal_on_positive(-hi, -lo, s0, s1, s2, s3)
        return -z, s0, s1, s2, s3
    if hi - lo >= 1.0:  # straddles 0 and holds >= 1/3 of the mass: plain rejection
        while True:
            z, s0, s1, s2, s3 = next_normal(s0, s1, s2, s3)
            if lo <= z <= hi:
                return z, s0, s1, s2, s3
    while True:  # short interval around 0: uniform proposal, acceptance >= e^-1/2
        u, s0, s1, s2, s3 = next_uniform(s0, s1, s2, s3)
        z = lo + (hi - lo) * (1.0 - u)
        w, s0, s1, s2, s3 = next_uniform(s0, s1, s2, s3)
        if w <= math.exp(-0.5 * z * z):
            return z, s0, s1, s2, s3


@numba.njit(cache=True)
def geometric(neg_log_q, log_p, s0, s1, s2, s3):
    """Steps until the first success, G >= 1, P(G = g) = (1-p)^(g-1) p, as a float.

    Inversion, G = 1 + floor(E / -log(1-p)) with E exponential. ``neg_log_q``
    is -log(1-p) (inf: p = 1); where it underflows to 0, ``log_p`` carries p
    (-inf: p = 0, G = inf), so that p = 1e-400 works as well as p = 0.1.

    ``np.floor``, not ``math.floor``: numba's math.floor returns an int64, and waits beyond
    2^63 steps (p = e^-600 gives ~1e260) then overflow — undefined, so the result depended
    on the CPU the kernel was compiled for (-9.2e18 for a generic x86-64, right with AVX-512).
    """
    if neg_log_q == 0.0:
        if log_p == -_INF:
            return _INF, s0, s1, s2, s3
        u, s0, s1, s2, s3 = next_uniform(s0, s1, s2, s3)
        e = -math.log(u)
        if e == 0.0:
            return 1.0, s0, s1, s2, s3
        return 1.0 + np.floor(math.exp(math.log(e) - log_p)), s0, s1, s2, s3
    u, s0, s1, s2, s3 = next_uniform(s0, s1, s2, s3)
    return 1.0 + np.floor(-math.log(u) / neg_log_q), s0, s1, s2, s3
