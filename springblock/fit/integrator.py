"""The mean-field chain integrated for fitting: implicit, few steps, smooth in its parameters.

The fits evaluate the mean-drift equations (:func:`springblock.theory.mean_drift`)

    dx_l/dt = h(F_l),   F_l = k (x_{l+1} - 2 x_l + x_{l-1}),   x_0 = 0, x_{L+1} = y,

for tens of thousands of parameter sets. The reference integrator,
:func:`springblock.theory.predict_positions`, is explicit (RK4), so its step
is capped by stability at ~2.5 / (k lambda_max) and it needs thousands of
steps to reach T = 1000 although the chain has long since slowed down. Here a
linearly implicit, L-stable Rosenbrock scheme (ROS2: Verwer, Spee, Blom &
Hundsdorfer, SIAM J. Sci. Comput. 20, 1999) steps on a grid geometric in
1 + t, ~10 steps per doubling of time, whatever the stiffness; its Jacobian
diag(h'(F)) k Lap is tridiagonal (h'(F) = Phi((F - mu->)/s) + Phi(-(F + mu<-)/s)),
so a step costs two drift evaluations and two tridiagonal solves.

The grid depends on the parameters only through the output times, smoothly,
and its number of steps depends on the epochs alone: the result is a smooth
function of (mu->, mu<-, s, time scale, start), as the finite-difference
Jacobians of the fits need. Accuracy against the reference (tests/springblock/fit/test_fit.py,
docs/fit.md "Fast fits"): see :data:`STEPS_PER_DOUBLING`. One kernel serves the paper's
chain (:func:`chain_positions`) and the family of :mod:`springblock.fit.variants`
(:func:`variant_positions`: a friction per block, a noise decaying in time); for the paper's
chain their extra factors are exact ones, so its numbers are those of a kernel without them.
"""

from __future__ import annotations

import math

import numba
import numpy as np

from phasecore.checks import is_int, require

__all__ = ["STEPS_PER_DOUBLING", "chain_positions", "step_counts", "variant_positions"]

#: Steps per doubling of 1 + t, and steps of the first stretch from the start to the first
#: output time. The scheme is second order: the error falls ~4x per doubling of both.
STEPS_PER_DOUBLING = 8
_SQRT1_2 = 1.0 / math.sqrt(2.0)
_INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)
_GAMMA = 1.0 + 1.0 / math.sqrt(2.0)


@numba.njit(cache=True, inline="always")
def _drift(force, mu_r, mu_l, s):
    """h(F) and h'(F) of one block (Gaussian noise; the dead zone at s = 0)."""
    u = force - mu_r
    v = force + mu_l
    if s <= 0.0:
        if u > 0.0:
            return u, 1.0
        if v < 0.0:
            return v, 1.0
        return 0.0, 0.0
    a = u / s
    b = v / s
    pa = 0.5 * math.erfc(-a * _SQRT1_2)  # Phi(a)
    pb = 0.5 * math.erfc(b * _SQRT1_2)  # Phi(-b)
    h = (u * pa + s * _INV_SQRT_2PI * math.exp(-0.5 * a * a)
         + v * pb - s * _INV_SQRT_2PI * math.exp(-0.5 * b * b))
    return h, pa + pb


@numba.njit(cache=True)
def _solve(a, rhs, out, cp):
    """(I - a_l k Lap) out = rhs for a tridiagonal row-scaled Laplacian; a (L,) = gamma dt k h'.

    Row l: (1 + 2 a_l) out_l - a_l out_{l-1} - a_l out_{l+1} = rhs_l (Thomas; the
    matrix is diagonally dominant, so no pivoting).
    """
    n = rhs.size
    diag = 1.0 + 2.0 * a[0]
    cp[0] = -a[0] / diag
    out[0] = rhs[0] / diag
    for i in range(1, n):
        diag = 1.0 + 2.0 * a[i] + a[i] * cp[i - 1]
        cp[i] = -a[i] / diag
        out[i] = (rhs[i] + a[i] * out[i - 1]) / diag
    for i in range(n - 2, -1, -1):
        out[i] -= cp[i] * out[i + 1]


@numba.njit(cache=True, inline="always")
def _rhs(x, mu_r, mu_l, s, k, target, h, dh):
    """Drift h (L,) and slope h' (L,) at positions x (L,), into h and dh; mu_r, mu_l (L,) the
    frictions of each block."""
    n = x.size
    for i in range(n):
        left = x[i - 1] if i > 0 else 0.0
        right = x[i + 1] if i < n - 1 else target
        h[i], dh[i] = _drift(k * (right - 2.0 * x[i] + left), mu_r[i], mu_l[i], s)


@numba.njit(cache=True, inline="always")
def _noise_at(s, decay, t):
    """s exp(-decay t); s itself without a decay (no exp in the paper chain's steps)."""
    return s if decay == 0.0 else s * math.exp(-decay * t)


@numba.njit(cache=True, inline="always")
def _step(x, t, dt, mu_r, mu_l, s, decay, k, target, work):
    """One ROS2 step of x' = h(F) (x updated in place); each stage sees the noise at its
    own time."""
    y, h, dh, a, cp, k1, k2 = work
    n = x.size
    _rhs(x, mu_r, mu_l, _noise_at(s, decay, t), k, target, h, dh)
    for q in range(n):
        a[q] = _GAMMA * dt * k * dh[q]
    _solve(a, h, k1, cp)
    for q in range(n):
        y[q] = x[q] + dt * k1[q]
    _rhs(y, mu_r, mu_l, _noise_at(s, decay, t + dt), k, target, h, dh)
    for q in range(n):
        h[q] -= 2.0 * k1[q]
    _solve(a, h, k2, cp)
    for q in range(n):
        x[q] += dt * (1.5 * k1[q] + 0.5 * k2[q])


@numba.njit(cache=True)
def _integrate(mu_r, mu_l, s, decay, profile, start, times, steps, k, target, out):
    """ROS2 for every parameter set: out (K, E, L) at times (K, E) from start (K, L) at t = 0,
    block l's friction scaled by profile[l] and the noise s_p exp(-decay_p t) (ones and
    zeros for the paper's chain). The stretch before output time j takes steps[j] steps
    geometric in 1 + t."""
    n_sets, n_out = times.shape
    n = start.shape[1]
    x, fr, fl = np.empty(n), np.empty(n), np.empty(n)
    work = (np.empty(n), np.empty(n), np.empty(n), np.empty(n), np.empty(n), np.empty(n),
            np.empty(n))
    for p in range(n_sets):
        x[:] = start[p]
        for q in range(n):  # each block's frictions, once per set (exact for the paper's ones)
            fr[q] = mu_r[p] * profile[q]
            fl[q] = mu_l[p] * profile[q]
        t = 0.0
        for j in range(n_out):
            stop = times[p, j]
            m = steps[j]
            if stop > t and m > 0:
                ratio = ((1.0 + stop) / (1.0 + t)) ** (1.0 / m)
                for i in range(m):
                    t_next = stop if i == m - 1 else (1.0 + t) * ratio - 1.0
                    _step(x, t, t_next - t, fr, fl, s[p], decay[p], k, target, work)
                    t = t_next
            out[p, j] = x


def step_counts(epochs, steps_per_doubling: int = STEPS_PER_DOUBLING,
                first_span: float | None = None) -> np.ndarray:
    """Steps (E,) before each output epoch (epochs counted from the start, all > 0).

    The first stretch, from the start to e_1, covers log2(1 + first_span) doublings of
    1 + t (``first_span``: the largest chain time e_1 can mean, c_max e_1; default e_1);
    each later one ceil(steps_per_doubling log2(e_j / e_{j-1})) steps, at least 2. The
    counts depend on the epochs and bounds only, so the grid moves smoothly with the
    time scale.
    """
    e = np.asarray(epochs, dtype=np.float64)
    span = float(e[0]) if first_span is None else float(first_span)
    first = max(2, math.ceil(steps_per_doubling * math.log2(1.0 + span) - 1e-9))
    later = np.maximum(2, np.ceil(steps_per_doubling * np.log2(e[1:] / e[:-1]) - 1e-9))
    return np.concatenate([[first], later]).astype(np.int64)


def chain_positions(blocks: int, mu_right, mu_left, noise, epochs, time_scale=1.0, *,
                    start=None, modulus: float = 1.0, target: float = 1.0,
                    steps_per_doubling: int = STEPS_PER_DOUBLING,
                    first_span: float | None = None) -> np.ndarray:
    """Mean-field positions (K, E, L) of K chains at times t = c e_j from ``start``.

    mu_right, mu_left, noise, time_scale: (K,) or scalars (forces in k y, c in time per
    epoch); epochs (E,) increasing and > 0, counted from the start; start (K, L) or (L,)
    positions at t = 0 (None: at rest); ``first_span``: see :func:`step_counts` (default
    the largest c e_1 of this call — pass a fixed bound when the result must be smooth in
    c). The paper's chain: :func:`variant_positions` with every block's friction the same and
    a constant noise.
    """
    return variant_positions(blocks, mu_right, mu_left, noise, epochs, time_scale, start=start,
                             modulus=modulus, target=target,
                             steps_per_doubling=steps_per_doubling, first_span=first_span)


def variant_positions(blocks: int, mu_right, mu_left, noise, epochs, time_scale=1.0, *,
                      friction_profile=None, noise_decay=0.0, start=None,
                      modulus: float = 1.0, target: float = 1.0,
                      steps_per_doubling: int = STEPS_PER_DOUBLING,
                      first_span: float | None = None) -> np.ndarray:
    """:func:`chain_positions` of chains that differ from the paper's (K, E, L).

    ``friction_profile`` (L,): block l's frictions are mu-> profile_l and mu<- profile_l
    (None: ones); ``noise_decay`` (K,) or scalar: the noise is s exp(-noise_decay t)
    (per unit chain time). Other arguments as :func:`chain_positions`. Each stage of a step
    sees the noise at its own time (tests/springblock/fit/test_variants.py measures the error
    against an adaptive solver: as small as the paper chain's).
    """
    e = np.asarray(epochs, dtype=np.float64).ravel()
    require(e.size >= 1 and bool(np.all(e > 0)) and bool(np.all(np.diff(e) > 0)), "epochs",
            "increasing numbers > 0", epochs)
    mu_r, mu_l, s, c, decay = (
        np.ascontiguousarray(v, dtype=np.float64).ravel() for v in np.broadcast_arrays(
            *(np.asarray(v, dtype=np.float64) for v in (mu_right, mu_left, noise, time_scale,
                                                         noise_decay))))
    require(is_int(blocks) and blocks >= 1, "blocks", "an integer >= 1", blocks)
    profile = (np.ones(blocks) if friction_profile is None
               else np.ascontiguousarray(friction_profile, dtype=np.float64))
    require(profile.shape == (blocks,) and bool(np.all(np.isfinite(profile) & (profile >= 0))),
            "friction_profile", f"{blocks} finite numbers >= 0, one per block", friction_profile)
    require(bool(np.all(np.isfinite(decay) & (decay >= 0))), "noise_decay",
            "finite numbers >= 0 (per unit chain time)", noise_decay)
    require(bool(np.all(np.isfinite(c) & (c > 0))), "time_scale", "finite numbers > 0",
            time_scale)
    if start is None:
        x0 = np.zeros((mu_r.size, blocks))
    else:
        x0 = np.ascontiguousarray(np.broadcast_to(np.asarray(start, dtype=np.float64),
                                                  (mu_r.size, blocks)))
    times = np.ascontiguousarray(c[:, None] * e[None, :])
    out = np.empty((mu_r.size, e.size, blocks))
    if first_span is None:
        first_span = float(times[:, 0].max()) if mu_r.size else float(e[0])
    _integrate(mu_r, mu_l, s, decay, profile, x0, times,
               step_counts(e, steps_per_doubling, first_span), float(modulus), float(target),
               out)
    return out
