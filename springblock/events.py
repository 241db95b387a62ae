"""Event-driven kernels for the overdamped chain: exact, and cheap at any horizon.

Between two moves nothing in an overdamped chain changes (paper Eqs. 5-6,
Jacobi update): every block's spring force F_j is constant, so at each step
block j moves, independently of the past, with the constant probability

    p_j = P(F_j + s xi > mu->) + P(F_j + s xi < -mu<-)

(xi standard normal, or conditioned on |xi| <= c for truncated noise). The
kernels below therefore jump from move to move instead of stepping:

* independent noise: block j's next move comes after a geometric number of
  steps with parameter p_j; the next event is the earliest, and every block
  scheduled for that same step moves in it (ties are real: a Jacobi step);
* the moving block's noise is drawn from the tail it fell into (side chosen
  with probability proportional to the tail's mass), with an exact sampler
  for the normal restricted to an interval
  (:func:`springblock.sampling.normal_on_interval`);
* only moved blocks and their neighbours change force, so only they draw a
  fresh waiting time; every other block keeps its scheduled step, which by
  the geometric law's memorylessness is still exactly distributed;
* synchronous noise (one draw per step for all blocks): a step moves
  something iff that draw falls in the union of the blocks' tails, again a
  geometric wait, then the draw conditioned on the union moves every block
  whose own tail holds it;
* without noise, or with bounded noise, a block whose largest possible move
  cannot change its position (in double precision) has p_j = 0; when every
  block has p_j = 0 the chain is *frozen*: an exact stationary state.

Probabilities are handled as logarithms (:mod:`springblock.sampling`: its
:func:`~springblock.sampling.log_ndtr` is accurate to the
far tail), so a waiting time of 1e30 steps costs the same as one of 10. Time
is a float step count: exact integers up to 2**53 (9e15) steps; beyond that
event times are rounded to the float spacing (two moves a few steps apart
may then share a step).

Shapes: positions ``x`` (M, L); per-chain parameters ``params`` (M,
N_PARAMS) as in :mod:`springblock.dynamics`; ``horizon`` (M,) in steps
(``inf``: run until frozen, or give up after ``max_events`` moves); trajectory ``traj``
(M, R+1, L) read at steps 0, r, 2r, ... from the piecewise-constant state.
"""

from __future__ import annotations

import math

import numba
import numpy as np

from springblock.dynamics import (
    P_MODULUS,
    P_MU_LEFT,
    P_MU_RIGHT,
    P_NOISE,
    P_STEP,
    P_TARGET,
    P_TRUNCATION,
    dead_zone,
)
from springblock.randomness import next_uniform
from springblock.sampling import geometric, log_add, log_interval_mass, normal_on_interval

__all__ = ["FROZEN", "OUT_OF_EVENTS", "REACHED", "RUNNING", "fresh_state", "independent",
           "independent_slice", "move_rate", "synchronous_slice"]

_SQRT_HALF = 0.7071067811865476
_INF = np.inf

# Why a kernel stopped (the ``status`` output, per chain).
RUNNING = -1  # not finished: the next call goes on from the saved state
REACHED = 0  # the horizon was reached
FROZEN = 1  # no block can ever move again: the state is final
OUT_OF_EVENTS = 2  # max_events moves before the horizon (only for horizon = inf)


# --- one block's move probabilities -------------------------------------------


@numba.njit(cache=True)
def tails(force, pos, mu_r, mu_l, s, c, eta):
    """The noise intervals that move a block, in units of s: (r_lo, r_hi, l_lo, l_hi).

    The block moves right iff xi is in [r_lo, r_hi], left iff in [l_lo, l_hi]
    (empty intervals have lo >= hi). With bounded noise (finite c) a side
    whose largest move would not change ``pos`` in double precision is
    empty. In exact arithmetic the forces only approach the freezing force
    F_T = mu-> - c s; this rounding-level rule is what freezes the chain in
    finite time, exactly where the step kernel would stop moving too.
    """
    r_lo, r_hi = (mu_r - force) / s, c
    l_lo, l_hi = -c, (-mu_l - force) / s
    if c < _INF:
        r_lo = max(r_lo, -c)
        l_hi = min(l_hi, c)
        if not pos + eta * (force + c * s - mu_r) > pos:
            r_lo = r_hi
        if not pos + eta * (force - c * s + mu_l) < pos:
            l_hi = l_lo
    return r_lo, r_hi, l_lo, l_hi


@numba.njit(cache=True)
def _noiseless_move(force, pos, mu_r, mu_l, eta):
    """Without noise a block moves every step (p = 1) iff its move changes ``pos``."""
    return pos + eta * dead_zone(force, mu_r, mu_l) != pos


@numba.njit(cache=True)
def move_rate(force, pos, mu_r, mu_l, s, c, eta, q_c):
    """One block's per-step move probability p: (-log(1-p), log p, P(right | move)).

    ``q_c`` = P(xi > c) (0 for Gaussian noise), so the noise's mass is
    1 - 2 q_c. Where both tails are wide (or empty) and p > 1e-290 a fast
    path in linear space costs two erfc and one log1p; narrow tails (a
    threshold within 1e-3 of the bound, the approach to a frozen state) and
    the far tail go through :func:`~springblock.sampling.log_interval_mass`. ``log p`` is only
    filled where -log(1-p) underflows or p = 0; elsewhere it is 0.
    """
    if s == 0.0:
        if _noiseless_move(force, pos, mu_r, mu_l, eta):
            return _INF, 0.0, 1.0 if force > mu_r else 0.0
        return 0.0, -_INF, 0.0
    r_lo, r_hi, l_lo, l_hi = tails(force, pos, mu_r, mu_l, s, c, eta)
    has_r, has_l = r_lo < r_hi, l_lo < l_hi
    z = 1.0 - 2.0 * q_c
    if (not has_r or r_hi - r_lo > 1e-3) and (not has_l or l_hi - l_lo > 1e-3):
        p_r = 0.5 * math.erfc(r_lo * _SQRT_HALF) - q_c if has_r else 0.0
        p_l = 0.5 * math.erfc(-l_hi * _SQRT_HALF) - q_c if has_l else 0.0
        p = (p_r + p_l) / z
        if p > 1e-290:
            if p < 0.5:
                return -math.log1p(-p), 0.0, p_r / (p_r + p_l)
            dead = log_interval_mass(max(l_hi, -c), min(r_lo, c)) - math.log(z)
            return -dead, 0.0, p_r / (p_r + p_l)
    log_z = math.log1p(-2.0 * q_c)
    lr = log_interval_mass(r_lo, r_hi) - log_z
    ll = log_interval_mass(l_lo, l_hi) - log_z
    lp = log_add(lr, ll)
    if lp == -_INF:
        return 0.0, -_INF, 0.0
    p = math.exp(lp)
    if p < 0.5:
        nlq = -math.log1p(-p)
    else:  # the dead zone's own mass, accurate when p is close to 1
        nlq = -(log_interval_mass(max(l_hi, -c), min(r_lo, c)) - log_z)
    return nlq, lp, math.exp(lr - lp)


@numba.njit(cache=True)
def _force(xm, j, k, y):
    n = xm.shape[0]
    left = xm[j - 1] if j > 0 else 0.0
    right = xm[j + 1] if j + 1 < n else y
    return k * (right - 2.0 * xm[j] + left)


@numba.njit(cache=True)
def _fill_records(traj, m, xm, q, every, before, n_records):
    """Write the current state into records q, q+1, ... whose step is < ``before``."""
    while q < n_records and q * every < before:
        for j in range(xm.shape[0]):
            traj[m, q, j] = xm[j]
        q += 1
    return q


@numba.njit(cache=True)
def _chain_params(p):
    """(mu->, mu<-, s, k, y, eta, truncation) from a row of the parameter table."""
    return (p[P_MU_RIGHT], p[P_MU_LEFT], p[P_NOISE], p[P_MODULUS], p[P_TARGET], p[P_STEP],
            p[P_TRUNCATION])


@numba.njit(cache=True)
def _finish(m, t, horizon, code, xm, q, every, traj):
    """The step a finished chain is reported at, its remaining records filled: a chain that
    reached its horizon (or froze before a finite one) is reported at the horizon, and
    records up to then hold its last state."""
    if code == REACHED or (code == FROZEN and horizon < _INF):
        t = horizon
    _fill_records(traj, m, xm, q, every, t + 0.5, traj.shape[1])
    return t


@numba.njit(cache=True)
def _save(m, t, n_events, q, code, xm, state, x, clock, events, record, status, states):
    """Write chain m's state back: everything the next call (or the caller) reads."""
    x[m] = xm
    clock[m], events[m], record[m], status[m] = t, n_events, q, code
    states[m, 0], states[m, 1], states[m, 2], states[m, 3] = state


@numba.njit(inline="always")
def _rates(xm, j, k, y, mu_r, mu_l, s, c, eta, q_c, force, right, can_move):
    """Block j's force and move rate (no random draw): -log(1-p) and log p."""
    force[j] = _force(xm, j, k, y)
    nlq, log_p, right[j] = move_rate(force[j], xm[j], mu_r, mu_l, s, c, eta, q_c)
    can_move[j] = nlq > 0.0 or log_p > -_INF
    return nlq, log_p


# --- the kernels --------------------------------------------------------------
#
# A kernel call advances each listed chain whose ``status`` is RUNNING by at most
# ``budget`` events, then returns; a chain that reaches its horizon, freezes or runs
# out of events gets its final status. Between calls a chain's whole state is
# (x, the generator state, clock, events, record) and, for independent noise, each
# block's scheduled move ``nxt`` and ``touched`` (its force changed since that move
# was drawn): a chain cut into any number of calls draws the same numbers in the same
# order as in one call, so its result is the same to the bit.


@numba.njit(parallel=True, cache=True)
def independent_slice(x, states, params, chains, horizon, max_events, budget, every, traj,
                      clock, events, record, status, nxt, touched):
    """Event-driven overdamped chains, one noise draw per block and step.

    Advances each chain m of ``chains`` from its state (``x[m]`` at step
    ``clock[m]``) towards step ``horizon[m]`` (or until frozen), by at most
    ``budget`` events. Per chain, read and written: ``clock`` (the step reached;
    once finished, the step whose state ``x`` holds: the horizon, or for an
    infinite horizon the step of the last move), ``events`` (steps in which
    something moved), ``record`` (the next trajectory row), ``status``
    (RUNNING, then REACHED, FROZEN or OUT_OF_EVENTS), ``nxt`` and ``touched``
    (M, L). A new chain starts at clock 0, 0 events, record 1, RUNNING and
    every block touched.
    """
    n_blocks = x.shape[1]
    n_records = traj.shape[1]
    for i in numba.prange(chains.size):
        m = chains[i]
        if status[m] != RUNNING:
            continue
        mu_r, mu_l, s, k, y, eta, c = _chain_params(params[m])
        s0, s1, s2, s3 = states[m, 0], states[m, 1], states[m, 2], states[m, 3]
        q_c = 0.5 * math.erfc(c * _SQRT_HALF)  # P(xi > c): 0 for Gaussian noise
        xm = x[m].copy()
        nxt_m = nxt[m].copy()  # step of each block's next move
        touched_m = touched[m].copy()
        force = np.empty(n_blocks)
        right = np.empty(n_blocks)  # P(move right | it moves), per block
        can_move = np.empty(n_blocks, dtype=np.bool_)  # p_j > 0
        dx = np.zeros(n_blocks)
        moving = np.zeros(n_blocks, dtype=np.bool_)
        for j in range(n_blocks):  # resuming: untouched blocks' rates as when drawn
            if not touched_m[j]:
                _rates(xm, j, k, y, mu_r, mu_l, s, c, eta, q_c, force, right, can_move)
        t, n_events, q, code = clock[m], events[m], record[m], RUNNING
        stop = n_events + budget
        while n_events < stop:
            # Fresh waiting times for the blocks whose force changed (all at first);
            # the others keep theirs (memorylessness).
            for j in range(n_blocks):
                if not touched_m[j]:
                    continue
                touched_m[j] = False
                nlq, log_p = _rates(xm, j, k, y, mu_r, mu_l, s, c, eta, q_c, force, right,
                                    can_move)
                wait, s0, s1, s2, s3 = geometric(nlq, log_p, s0, s1, s2, s3)
                nxt_m[j] = t + wait
                if nxt_m[j] <= t:  # beyond 2**53 steps: at least the next float
                    nxt_m[j] = t * (1.0 + 2.220446049250313e-16)
            t_next, stuck = _INF, True
            for j in range(n_blocks):
                t_next = min(t_next, nxt_m[j])
                stuck &= not can_move[j]
            if stuck:
                code = FROZEN
                break
            if t_next > horizon[m]:
                code = REACHED
                break
            if n_events >= max_events and horizon[m] == _INF:
                code = OUT_OF_EVENTS
                break
            q = _fill_records(traj, m, xm, q, every, t_next, n_records)
            # One Jacobi step: every block scheduled now moves, from the old forces.
            for j in range(n_blocks):
                moving[j] = nxt_m[j] == t_next
                if not moving[j]:
                    continue
                xi = 0.0
                if s > 0.0:
                    r_lo, r_hi, l_lo, l_hi = tails(force[j], xm[j], mu_r, mu_l, s, c, eta)
                    u, s0, s1, s2, s3 = next_uniform(s0, s1, s2, s3)
                    if u <= right[j]:
                        xi, s0, s1, s2, s3 = normal_on_interval(r_lo, r_hi, s0, s1, s2, s3)
                    else:
                        xi, s0, s1, s2, s3 = normal_on_interval(l_lo, l_hi, s0, s1, s2, s3)
                dx[j] = eta * dead_zone(force[j] + s * xi, mu_r, mu_l)
            for j in range(n_blocks):
                if moving[j]:
                    xm[j] += dx[j]
                    touched_m[j] = True
                    if j > 0:
                        touched_m[j - 1] = True
                    if j + 1 < n_blocks:
                        touched_m[j + 1] = True
            t = t_next
            n_events += 1
        if code != RUNNING:
            t = _finish(m, t, horizon[m], code, xm, q, every, traj)
        nxt[m], touched[m] = nxt_m, touched_m
        _save(m, t, n_events, q, code, xm, (s0, s1, s2, s3), x, clock, events, record, status,
              states)


@numba.njit(cache=True)
def _union_rate(lo_union, hi_union, c, log_z):
    """Synchronous noise: (-log(1-p), log p, P(right | move)) for the union of tails.

    The union is [lo_union, c] U [-c, hi_union]; if the two overlap every
    draw moves some block (p = 1).
    """
    if hi_union >= lo_union:
        return _INF, 0.0, 0.5
    lr = log_interval_mass(lo_union, c)
    lp = log_add(lr, log_interval_mass(-c, hi_union))
    if lp == -_INF:
        return 0.0, -_INF, 0.0
    lp -= log_z
    p = math.exp(lp)
    if p < 0.5:
        nlq = -math.log1p(-p)
    else:
        nlq = -(log_interval_mass(hi_union, lo_union) - log_z)
    return nlq, lp, math.exp(lr - log_z - lp)


@numba.njit(parallel=True, cache=True)
def synchronous_slice(x, states, params, chains, horizon, max_events, budget, every, traj,
                      clock, events, record, status, nxt, touched):
    """Event-driven overdamped chains, one noise draw per step shared by all blocks.

    A step moves something iff its draw xi falls in the union of the blocks'
    tails, {xi >= min_j r_j} or {xi <= max_j l_j}: a geometric wait with that
    union's mass, then xi conditioned on the union, and every block whose own
    tail holds xi moves. Same arguments and outputs as
    :func:`independent_slice`; ``nxt`` and ``touched`` are unused (every event
    recomputes all forces, so the state between calls is x, clock and the
    generator).
    """
    n_blocks = x.shape[1]
    n_records = traj.shape[1]
    for i in numba.prange(chains.size):
        m = chains[i]
        if status[m] != RUNNING:
            continue
        mu_r, mu_l, s, k, y, eta, c = _chain_params(params[m])
        s0, s1, s2, s3 = states[m, 0], states[m, 1], states[m, 2], states[m, 3]
        log_z = log_interval_mass(-c, c) if s > 0.0 else 0.0
        xm = x[m].copy()
        force = np.empty(n_blocks)
        r_lo = np.empty(n_blocks)  # block j moves right iff xi >= r_lo[j]
        l_hi = np.empty(n_blocks)  # ... left iff xi <= l_hi[j]
        t, n_events, q, code = clock[m], events[m], record[m], RUNNING
        stop = n_events + budget
        while n_events < stop:
            lo_union, hi_union = c, -c
            n_movable = 0
            for j in range(n_blocks):
                force[j] = _force(xm, j, k, y)
                if s > 0.0:
                    r_lo[j], _, _, l_hi[j] = tails(force[j], xm[j], mu_r, mu_l, s, c, eta)
                    lo_union = min(lo_union, r_lo[j])
                    hi_union = max(hi_union, l_hi[j])
                elif _noiseless_move(force[j], xm[j], mu_r, mu_l, eta):
                    n_movable += 1
            if s > 0.0:
                nlq, log_p, right = _union_rate(lo_union, hi_union, c, log_z)
            else:
                nlq, log_p, right = (_INF, 0.0, 0.0) if n_movable > 0 else (0.0, -_INF, 0.0)
            if nlq == 0.0 and log_p == -_INF:
                code = FROZEN
                break
            wait, s0, s1, s2, s3 = geometric(nlq, log_p, s0, s1, s2, s3)
            t_next = t + wait
            if t_next <= t:
                t_next = t * (1.0 + 2.220446049250313e-16)
            if t_next > horizon[m]:
                code = REACHED
                break
            if n_events >= max_events and horizon[m] == _INF:
                code = OUT_OF_EVENTS
                break
            q = _fill_records(traj, m, xm, q, every, t_next, n_records)
            xi = 0.0
            if s > 0.0:
                if hi_union >= lo_union:  # every draw moves something
                    xi, s0, s1, s2, s3 = normal_on_interval(-c, c, s0, s1, s2, s3)
                else:
                    u, s0, s1, s2, s3 = next_uniform(s0, s1, s2, s3)
                    if u <= right:
                        xi, s0, s1, s2, s3 = normal_on_interval(lo_union, c, s0, s1, s2, s3)
                    else:
                        xi, s0, s1, s2, s3 = normal_on_interval(-c, hi_union, s0, s1, s2, s3)
            for j in range(n_blocks):  # forces are from before the step: Jacobi
                if s == 0.0 or xi >= r_lo[j] or xi <= l_hi[j]:
                    xm[j] += eta * dead_zone(force[j] + s * xi, mu_r, mu_l)
            t = t_next
            n_events += 1
        if code != RUNNING:
            t = _finish(m, t, horizon[m], code, xm, q, every, traj)
        _save(m, t, n_events, q, code, xm, (s0, s1, s2, s3), x, clock, events, record, status,
              states)


# --- whole runs ---------------------------------------------------------------

#: A budget no run reaches: the whole run in one call.
UNLIMITED = 2**62


def fresh_state(n_chains: int, n_blocks: int) -> dict:
    """The per-chain state arrays of a chain not yet started (see the kernels)."""
    return {"clock": np.zeros(n_chains), "events": np.zeros(n_chains, dtype=np.int64),
            "record": np.ones(n_chains, dtype=np.int64),
            "status": np.full(n_chains, RUNNING, dtype=np.int64),
            "nxt": np.zeros((n_chains, n_blocks)),
            "touched": np.ones((n_chains, n_blocks), dtype=np.bool_)}


def _whole_run(kernel, x, states, params, horizon, max_events, every, traj, steps_run, events,
               status):
    state = fresh_state(*x.shape)
    kernel(x, states, params, np.arange(x.shape[0], dtype=np.int64), horizon, max_events,
           UNLIMITED, every, traj, state["clock"], state["events"], state["record"],
           state["status"], state["nxt"], state["touched"])
    steps_run[:], events[:], status[:] = state["clock"], state["events"], state["status"]


def independent(x, states, params, horizon, max_events, every, traj, steps_run, events, status):
    """:func:`independent_slice` for every chain to its end in one call (not interruptible).

    Outputs per chain: ``steps_run`` (the step whose state ``x`` holds),
    ``events`` and ``status`` (REACHED, FROZEN or OUT_OF_EVENTS).
    """
    _whole_run(independent_slice, x, states, params, horizon, max_events, every, traj,
               steps_run, events, status)


def synchronous(x, states, params, horizon, max_events, every, traj, steps_run, events, status):
    """:func:`synchronous_slice` for every chain to its end in one call (not interruptible)."""
    _whole_run(synchronous_slice, x, states, params, horizon, max_events, every, traj,
               steps_run, events, status)
