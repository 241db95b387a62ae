"""Numba kernels that advance an ensemble of spring-block chains.

One call of a ``*_slice`` kernel advances the chains listed in ``chains``
(indices into the ``M`` rows of every array) by ``n_steps`` time steps from
global step ``step0``, in parallel over chains, in place. Each chain has its
own parameters (a row of ``params``, columns ``P_*`` below) and its own
xoshiro256++ stream, whose state ``states[m]`` is written back, so the
result for a chain depends only on its parameters and seed — and not on how
its steps are cut into calls: ``n`` steps in one call and the same steps in
any number of calls give the same bits. :mod:`springblock.runner` uses that
to return to Python every ~0.1 s (a numba kernel never runs a signal
handler: a whole run in one call could not be stopped). ``overdamped``,
``second_order`` and ``langevin`` are the whole-run forms (every chain, one
call).

Positions ``x`` have shape ``(M, L)`` (the wall x_0 = 0 and the target
x_{L+1} = y are not stored). All blocks are updated from the previous
positions (a Jacobi step): the loop carries the old left neighbour in
``left`` so the update can be done in place.

Time is discrete: step ``n`` (counted from the start of the run, ``step0``
plus the local index) is at time ``t = n * eta``. Every kernel speaks one vocabulary:
``eta`` the time step, ``s`` the noise level at a step (of the force, or of the velocity
for Langevin: the paper's sigma_0), ``k`` the modulus, ``y`` the target.

Shapes: ``x``, ``v`` (M, L); ``states`` (M, 4) uint64; ``params`` (M,
N_PARAMS); ``chains`` (K,) int64; ``traj`` (M, R+1, L), row r = step r *
record_every (R = 0: nothing recorded).
"""

from __future__ import annotations

import math

import numba
import numpy as np

from springblock.randomness import next_truncated_normal

__all__ = ["N_PARAMS", "P_DAMPING", "P_DECAY", "P_MODULUS", "P_MU_LEFT", "P_MU_RIGHT", "P_NOISE",
           "P_STEP", "P_TARGET", "P_TRUNCATION", "dead_zone", "langevin_slice", "overdamped",
           "overdamped_legacy", "overdamped_slice", "second_order_slice"]

# Columns of the per-chain parameter table.
P_MU_RIGHT = 0  # sliding = max static friction for rightward motion, mu->  (force)
P_MU_LEFT = 1  # the same for leftward motion, mu<-  (force)
P_NOISE = 2  # noise level s per step: of the force (overdamped, second order) or of
#              the velocity (Langevin; the paper's sigma_0)
P_MODULUS = 3  # spring modulus k
P_TARGET = 4  # target position y = x_{L+1}
P_STEP = 5  # time step eta
P_DAMPING = 6  # damping gamma (second order, Langevin)
P_TRUNCATION = 7  # noise bound in standard deviations (inf: plain Gaussian)
P_DECAY = 8  # noise decay rate lambda: s(t) = s exp(-lambda t)
N_PARAMS = 9
#: Chains up to this many blocks work on a private copy of their row; longer ones in
#: place (the copy no longer fits a cache, and a slice of one step would copy 2x its work).
PRIVATE_ROW_BLOCKS = 65_536


@numba.njit(inline="always")
def dead_zone(z, mu_right, mu_left):
    """Velocity of a block under net applied force ``z`` (paper Eq. 6).

    f(z) = z - mu->  if z > mu->;  z + mu<-  if z < -mu<-;  0 otherwise.
    Written without branches (max/min): with noise the sign of z - mu-> is a
    coin flip, and mispredicted branches would cost more than the arithmetic.
    Exact: adding the other term's 0.0 changes no bit.
    """
    return max(z - mu_right, 0.0) + min(z + mu_left, 0.0)


@numba.njit(inline="always")
def noise_level(p, step):
    """Noise amplitude at a global step index (exponential decay if lambda > 0)."""
    if p[P_DECAY] > 0.0:
        return p[P_NOISE] * math.exp(-p[P_DECAY] * step * p[P_STEP])
    return p[P_NOISE]


@numba.njit(inline="always")
def _record_row(traj, m, row, step, record_every):
    """Store one chain's positions (L,) after global step ``step`` if it is recorded."""
    if record_every > 0 and step % record_every == 0:
        r = step // record_every  # row 0 is the initial state, written by the caller
        if r < traj.shape[1]:
            for j in range(row.shape[0]):
                traj[m, r, j] = row[j]


@numba.njit(inline="always")
def _overdamped_block(cur, left, right, k, noisy, mu_r, mu_l, eta):
    """New position of one block: x + eta f(F + s xi), ``noisy`` = s xi."""
    return cur + eta * dead_zone(k * (right - 2.0 * cur + left) + noisy, mu_r, mu_l)


@numba.njit(parallel=True, cache=True)
def overdamped_slice(x, states, params, chains, n_steps, step0, synchronous, record_every,
                     traj):
    """Overdamped chain with friction on the noisy force (paper Eqs. 5-6).

    x_l <- x_l + eta * f(F_l + s xi_l),  F_l = k (x_{l+1} - 2 x_l + x_{l-1}).
    Each chain works on a private copy of its row (no aliasing with other
    chains, so the compiler keeps it in cache-friendly form; chains longer than
    PRIVATE_ROW_BLOCKS in place), and the last block, whose right neighbour is
    the target, is peeled out of the loop.
    """
    n_blocks = x.shape[1]
    last = n_blocks - 1
    for i in numba.prange(chains.size):
        m = chains[i]
        p = params[m]
        mu_r, mu_l, k, y, eta, bound = (
            p[P_MU_RIGHT], p[P_MU_LEFT], p[P_MODULUS], p[P_TARGET], p[P_STEP], p[P_TRUNCATION]
        )
        s0, s1, s2, s3 = states[m, 0], states[m, 1], states[m, 2], states[m, 3]
        private = n_blocks <= PRIVATE_ROW_BLOCKS
        xm = x[m].copy() if private else x[m]
        for t in range(n_steps):
            s = noise_level(p, step0 + t)
            xi = 0.0
            if synchronous and s > 0.0:
                xi, s0, s1, s2, s3 = next_truncated_normal(bound, s0, s1, s2, s3)
            left = 0.0
            for j in range(n_blocks):
                if not synchronous and s > 0.0:
                    xi, s0, s1, s2, s3 = next_truncated_normal(bound, s0, s1, s2, s3)
                cur = xm[j]
                right = xm[j + 1] if j < last else y
                xm[j] = _overdamped_block(cur, left, right, k, s * xi, mu_r, mu_l, eta)
                left = cur
            _record_row(traj, m, xm, step0 + t + 1, record_every)
        if private:
            x[m] = xm
        states[m, 0], states[m, 1], states[m, 2], states[m, 3] = s0, s1, s2, s3


@numba.njit(parallel=True, cache=True)
def second_order_slice(x, v, states, params, chains, n_steps, step0, synchronous, record_every,
                       traj):
    """Damped second-order chain with static and sliding friction (paper Eq. 4).

    Unit mass, x'' = F - gamma x' + friction + s xi. A moving block feels the
    sliding friction -mu-> (v > 0) or +mu<- (v < 0) and sticks when friction
    would reverse it within a step; a block at rest moves only if the noisy
    applied force leaves [-mu<-, mu->], reduced by the threshold (SM Eqs. 10-11).
    Semi-implicit Euler: v first, then x with the new v.
    """
    n_blocks = x.shape[1]
    for i in numba.prange(chains.size):
        m = chains[i]
        p = params[m]
        mu_r, mu_l, k, y, eta, gamma, bound = (
            p[P_MU_RIGHT], p[P_MU_LEFT], p[P_MODULUS], p[P_TARGET], p[P_STEP], p[P_DAMPING],
            p[P_TRUNCATION],
        )
        s0, s1, s2, s3 = states[m, 0], states[m, 1], states[m, 2], states[m, 3]
        for t in range(n_steps):
            s = noise_level(p, step0 + t)
            xi = 0.0
            if synchronous and s > 0.0:
                xi, s0, s1, s2, s3 = next_truncated_normal(bound, s0, s1, s2, s3)
            left = 0.0
            for j in range(n_blocks):
                right = x[m, j + 1] if j + 1 < n_blocks else y
                force = k * (right - 2.0 * x[m, j] + left)
                left = x[m, j]
                if not synchronous and s > 0.0:
                    xi, s0, s1, s2, s3 = next_truncated_normal(bound, s0, s1, s2, s3)
                applied = force + s * xi
                vel = v[m, j]
                if vel > 0.0:
                    vel += eta * (applied - gamma * vel - mu_r)
                    vel = max(vel, 0.0)
                elif vel < 0.0:
                    vel += eta * (applied - gamma * vel + mu_l)
                    vel = min(vel, 0.0)
                else:
                    vel = eta * dead_zone(applied, mu_r, mu_l)
                v[m, j] = vel
                x[m, j] += eta * vel
            _record_row(traj, m, x[m], step0 + t + 1, record_every)
        states[m, 0], states[m, 1], states[m, 2], states[m, 3] = s0, s1, s2, s3


@numba.njit(parallel=True, cache=True)
def langevin_slice(x, v, states, params, chains, n_steps, step0, synchronous, record_every,
                   traj):
    """Second-order Langevin chain, noise on the velocity (SM Eqs. 12-13).

    x <- x + eta v,  v <- v + eta (F - gamma v + friction(v, F)) + s(t) xi,
    with friction -mu-> (v > 0), +mu<- (v < 0) and, at v = 0, the static
    friction that cancels F within [-mu<-, mu->] (computed without the noise).
    Euler-Maruyama with the old state on the right-hand side.

    ``noise`` s (the paper's sigma_0) is the per-step velocity kick, the same
    per-step convention as the force noise of the other dynamics; as an SDE
    dv = ... dt + eps dW it is eps = s / sqrt(eta). With the paper's
    parameters this reading reproduces the reference mean load curve
    (tests/springblock/test_physics.py); reading sigma_0 as eps instead leaves the chain
    ~0.03 away from it.
    """
    n_blocks = x.shape[1]
    for i in numba.prange(chains.size):
        m = chains[i]
        p = params[m]
        mu_r, mu_l, k, y, eta, gamma, bound = (
            p[P_MU_RIGHT], p[P_MU_LEFT], p[P_MODULUS], p[P_TARGET], p[P_STEP], p[P_DAMPING],
            p[P_TRUNCATION],
        )
        s0, s1, s2, s3 = states[m, 0], states[m, 1], states[m, 2], states[m, 3]
        for t in range(n_steps):
            s = noise_level(p, step0 + t)
            xi = 0.0
            if synchronous and s > 0.0:
                xi, s0, s1, s2, s3 = next_truncated_normal(bound, s0, s1, s2, s3)
            left = 0.0
            for j in range(n_blocks):
                right = x[m, j + 1] if j + 1 < n_blocks else y
                force = k * (right - 2.0 * x[m, j] + left)
                left = x[m, j]
                if not synchronous and s > 0.0:
                    xi, s0, s1, s2, s3 = next_truncated_normal(bound, s0, s1, s2, s3)
                vel = v[m, j]
                if vel > 0.0:
                    accel = force - gamma * vel - mu_r
                elif vel < 0.0:
                    accel = force - gamma * vel + mu_l
                else:
                    accel = dead_zone(force, mu_r, mu_l)
                x[m, j] += eta * vel
                v[m, j] = vel + eta * accel + s * xi
            _record_row(traj, m, x[m], step0 + t + 1, record_every)
        states[m, 0], states[m, 1], states[m, 2], states[m, 3] = s0, s1, s2, s3


@numba.njit(cache=True)
def overdamped_legacy(x, seeds, params, chains, n_steps, step0, synchronous, record_every,
                      traj):
    """Overdamped chain driven by numpy's legacy global generator.

    ``np.random.seed(seed)`` then one ``standard_normal`` per block and step
    (or per step if synchronous): in numba this is the same Mersenne-Twister
    sequence as ``numpy.random.seed(seed); numpy.random.randn(...)``, so one
    chain reproduces a plain Python loop written that way bit for bit. Serial
    (numba's legacy state is per thread) and several times slower than the
    default generator; plain Gaussian noise only.

    The generator is seeded at ``step0 == 0`` only: a later call continues
    the calling thread's stream, so one chain's steps may be cut into calls
    (the same chain, one after the other, on one thread) without changing a
    bit. That state cannot be saved, so a legacy chain resumes from step 0.
    """
    n_blocks = x.shape[1]
    for i in range(chains.size):
        m = chains[i]
        if step0 == 0:
            np.random.seed(seeds[m])  # noqa: NPY002 (bit-compatibility is the point)
        p = params[m]
        mu_r, mu_l, k, y, eta = p[P_MU_RIGHT], p[P_MU_LEFT], p[P_MODULUS], p[P_TARGET], p[P_STEP]
        for t in range(n_steps):
            s = noise_level(p, step0 + t)
            xi = np.random.standard_normal() if synchronous else 0.0  # noqa: NPY002
            left = 0.0
            for j in range(n_blocks):
                right = x[m, j + 1] if j + 1 < n_blocks else y
                force = k * (right - 2.0 * x[m, j] + left)
                left = x[m, j]
                if not synchronous:
                    xi = np.random.standard_normal()  # noqa: NPY002
                x[m, j] += eta * dead_zone(force + s * xi, mu_r, mu_l)
            _record_row(traj, m, x[m], step0 + t + 1, record_every)


def _all(x) -> np.ndarray:
    return np.arange(x.shape[0], dtype=np.int64)


def overdamped(x, states, params, n_steps, step0, synchronous, record_every, traj):
    """:func:`overdamped_slice` for every chain in one call (not interruptible)."""
    overdamped_slice(x, states, params, _all(x), n_steps, step0, synchronous, record_every, traj)


def second_order(x, v, states, params, n_steps, step0, synchronous, record_every, traj):
    """:func:`second_order_slice` for every chain in one call (not interruptible)."""
    second_order_slice(x, v, states, params, _all(x), n_steps, step0, synchronous,
                       record_every, traj)


def langevin(x, v, states, params, n_steps, step0, synchronous, record_every, traj):
    """:func:`langevin_slice` for every chain in one call (not interruptible)."""
    langevin_slice(x, v, states, params, _all(x), n_steps, step0, synchronous, record_every,
                   traj)
