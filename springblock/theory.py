"""Closed-form and mean-field theory of the spring-block chain (DESIGN §2.4).

Everything here is pure numpy/scipy, cheap enough to fit parameters with.
Positions are arrays ``(..., L)`` of x_1..x_L; the wall x_0 = 0 and the target
x_{L+1} = y are implicit. Forces are in the units of k * length.

What the theory says, in one paragraph. Without noise, blocks pushed from the
right stop where their spring force has dropped to mu-> (Eq. 7): a concave
load curve. With noise the mean velocity of a block at spring force F is the
*mean drift* h(F) = E[f(F + s xi)], and a stationary chain has every block at
the force F* with h(F*) = 0 (Eq. 8). For unbounded (Gaussian) noise
F* = (mu-> - mu<-)/2 for every s > 0: the infinite-time state does not depend
on the noise level. The noise-driven concave -> convex transition of the paper
is therefore a finite-time effect (relaxation time ~ 1 / Phi(-a/s), see
:func:`relaxation_time`), a bounded-noise effect (:func:`stationary_force`
with ``truncation``), or a decaying-noise effect — never an infinite-time
property of Gaussian noise. :func:`predict_positions` gives the finite-time
mean-field state by integrating dx/dt = h(F(x)).
"""

from __future__ import annotations

import math

import numpy as np
from scipy.integrate import solve_ivp
from scipy.special import ndtr

__all__ = [
    "laplacian_eigenvalues",
    "load_curve",
    "elongations",
    "equal_force_state",
    "moved_blocks",
    "noiseless_state",
    "stationary_force",
    "stationary_state",
    "mean_drift",
    "relaxation_time",
    "predict_positions",
    "elastic_energy",
    "max_stable_step",
]


def laplacian_eigenvalues(blocks: int) -> np.ndarray:
    """Eigenvalues 2 - 2 cos(j pi / (L+1)), j = 1..L, of the chain's Laplacian (L,)."""
    j = np.arange(1, blocks + 1)
    return 2.0 - 2.0 * np.cos(j * np.pi / (blocks + 1))


def load_curve(positions, target: float = 1.0) -> np.ndarray:
    """Load curve d_l = y - x_l for l = 0..L (x_0 = 0), shape ``(..., L+1)``."""
    x = np.asarray(positions, dtype=np.float64)
    wall = np.zeros(x.shape[:-1] + (1,))
    return target - np.concatenate([wall, x], axis=-1)


def elongations(positions, target: float = 1.0) -> np.ndarray:
    """Spring elongations e_l = x_l - x_{l-1}, l = 1..L+1, shape ``(..., L+1)``."""
    x = np.asarray(positions, dtype=np.float64)
    shape = x.shape[:-1] + (1,)
    full = np.concatenate([np.zeros(shape), x, np.full(shape, float(target))], axis=-1)
    return np.diff(full, axis=-1)


def equal_force_state(force, blocks: int, modulus: float = 1.0, target: float = 1.0):
    """Chain in which every block feels the same spring force ``force``, (..., L).

    k (e_{l+1} - e_l) = F for all blocks and sum_l e_l = y give
    e_1 = y/(L+1) - (F/k) L/2 and e_l = e_1 + (l-1) F/k (paper Eqs. 7-8).
    F > 0: concave load curve; F = 0: linear; F < 0: convex.
    """
    force = np.asarray(force, dtype=np.float64)[..., None]
    n = blocks
    e1 = target / (n + 1) - (force / modulus) * n / 2.0
    ell = np.arange(1, n + 1)
    # x_l = sum_{i<=l} e_i = l e_1 + l(l-1)/2 F/k
    return ell * e1 + ell * (ell - 1) / 2.0 * (force / modulus)


def moved_blocks(blocks: int, mu_right: float, modulus: float = 1.0, target: float = 1.0) -> int:
    """How many blocks (next to the target) a noiseless chain moves from rest.

    From x = 0 the noiseless dynamics is monotone: blocks only move right, and
    a block that never felt a force above mu-> stays at 0. A tail of n blocks
    with the wall-side neighbour at rest ends with first elongation
    e(n) = y/(n+1) - (mu->/k) n/2, and the resting neighbour stays put iff
    k e(n) <= mu->. n is the smallest such count (capped at L).
    """
    for n in range(blocks + 1):
        if modulus * (target / (n + 1) - (mu_right / modulus) * n / 2.0) <= mu_right:
            return n
    return blocks


def noiseless_state(blocks: int, mu_right: float, modulus: float = 1.0, target: float = 1.0):
    """Final positions of a noiseless chain started at rest, (L,) (paper Eq. 7).

    Every moved block stops where its force equals mu->: e_{l+1} - e_l = mu->/k.
    If mu-> >= 2 k y / (L (L+1)) not every block moves: only a tail next to the
    target does (:func:`moved_blocks`) and the rest stay at 0. Independent of
    mu<-.
    """
    n = moved_blocks(blocks, mu_right, modulus, target)
    x = np.zeros(blocks)
    if n > 0:
        x[blocks - n :] = equal_force_state(mu_right, n, modulus, target)
    return x


def stationary_force(mu_right, mu_left, noise=0.0, truncation=math.inf):
    """Spring force F* at which a noisy block has zero mean drift (paper Eq. 8).

    * no noise: mu-> (blocks arrive from the left and stop at the threshold);
    * Gaussian noise (``truncation`` = inf), any s > 0: (mu-> - mu<-)/2 — the
      mean drift h(F* + u) is odd in u, so the noise level drops out;
    * noise bounded by |s xi| <= b = truncation * s: blocks arriving from the
      left stop once no noise draw can push them, at
      F_T = max(mu-> - b, (mu-> - mu<-)/2).
    """
    mu_right, mu_left, noise, truncation = np.broadcast_arrays(
        *(np.asarray(v, dtype=np.float64) for v in (mu_right, mu_left, noise, truncation))
    )
    symmetric = (mu_right - mu_left) / 2.0
    with np.errstate(invalid="ignore"):  # inf * 0 where noiseless, masked below
        bound = np.where(np.isinf(truncation), np.inf, truncation * noise)
    out = np.where(noise > 0, np.maximum(mu_right - bound, symmetric), mu_right)
    return out[()] if out.ndim == 0 else out


def stationary_state(
    blocks, mu_right, mu_left, noise=0.0, truncation=math.inf, modulus=1.0, target=1.0
):
    """Positions of the chain with every block at :func:`stationary_force`, (..., L).

    The long-time state when every block has moved (for Gaussian noise always,
    eventually); at zero noise use :func:`noiseless_state`, which also handles
    chains where only a tail moves.
    """
    force = stationary_force(mu_right, mu_left, noise, truncation)
    return equal_force_state(force, blocks, modulus, target)


def _partial_mean(shift, noise, lo, hi):
    """E[(shift + s xi) 1{lo < xi < hi}] for standard normal xi (elementwise)."""
    phi_lo = np.exp(-0.5 * lo * lo) / math.sqrt(2 * math.pi)
    phi_hi = np.exp(-0.5 * hi * hi) / math.sqrt(2 * math.pi)
    return shift * (ndtr(hi) - ndtr(lo)) + noise * (phi_lo - phi_hi)


def mean_drift(force, mu_right, mu_left, noise, truncation=math.inf):
    """Mean velocity h(F) = E[f(F + s xi)] of a block at spring force F.

    f is the dead zone of Eq. 6; xi ~ N(0, 1), conditioned on |xi| <= c when
    ``truncation`` c is finite. Closed form through the normal CDF/PDF;
    equals f(F) when s = 0. Broadcasts over all arguments.
    """
    force, mu_right, mu_left, noise, trunc = np.broadcast_arrays(
        *(np.asarray(v, dtype=np.float64) for v in (force, mu_right, mu_left, noise, truncation))
    )
    s = np.where(noise > 0, noise, 1.0)  # placeholder where noiseless, masked below
    c = trunc
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        norm = np.where(np.isinf(c), 1.0, ndtr(c) - ndtr(-c))
        # right part: xi > (mu-> - F)/s, left part: xi < (-mu<- - F)/s, both within [-c, c]
        lo_r = np.clip((mu_right - force) / s, -c, c)
        hi_l = np.clip((-mu_left - force) / s, -c, c)
        right = _partial_mean(force - mu_right, s, lo_r, c)
        left = _partial_mean(force + mu_left, s, -c, hi_l)
        noisy = (right + left) / norm
    dead = np.where(force > mu_right, force - mu_right,
                    np.where(force < -mu_left, force + mu_left, 0.0))
    out = np.where(noise > 0, noisy, dead)
    return out[()] if out.ndim == 0 else out


def relaxation_time(mu_right, mu_left, noise, blocks: int, modulus: float = 1.0):
    """Time for a Gaussian-noise chain to relax towards its stationary state.

    Linearising the mean drift at F*: h'(F*) = P(|F* - c + s xi| > a) =
    2 Phi(-a/s) with a = (mu-> + mu<-)/2, so the slowest mode decays at rate
    h'(F*) k lambda_min: tau = 1 / (2 Phi(-a/s) k lambda_min). Exponentially
    long for s << a — why Gaussian phase diagrams are finite-horizon objects.
    In time units (steps * eta).
    """
    a = (np.asarray(mu_right, dtype=np.float64) + np.asarray(mu_left, dtype=np.float64)) / 2.0
    lam_min = laplacian_eigenvalues(blocks)[0]
    with np.errstate(divide="ignore", invalid="ignore"):
        rate = 2.0 * ndtr(-a / np.asarray(noise, dtype=np.float64)) * modulus * lam_min
        return 1.0 / rate


def predict_positions(
    blocks: int,
    mu_right: float,
    mu_left: float,
    noise: float,
    horizon: float,
    *,
    truncation: float = math.inf,
    noise_decay: float = 0.0,
    modulus: float = 1.0,
    target: float = 1.0,
    times=None,
    rtol: float = 1e-8,
    atol: float = 1e-10,
) -> np.ndarray:
    """Mean-field positions after time ``horizon``: integrate dx_l/dt = h(F_l(x)).

    The deterministic mean-drift equations of the overdamped chain started at
    rest, with the noise level s(t) = s exp(-lambda t) if ``noise_decay``
    lambda > 0. It neglects fluctuations (E[h(F)] ~ h(E[F])), so it is exact
    without noise and accurate while the spread of F is small against the
    curvature of h; see tests for the measured agreement. Shape (L,), or
    (len(times), L) if ``times`` is given.
    """
    n = blocks

    def rhs(t, x):
        padded = np.concatenate([[0.0], x, [target]])
        force = modulus * (padded[2:] - 2.0 * padded[1:-1] + padded[:-2])
        s = noise * math.exp(-noise_decay * t) if noise_decay > 0 else noise
        return mean_drift(force, mu_right, mu_left, s, truncation)

    t_eval = None if times is None else np.asarray(times, dtype=np.float64)
    # The drift is only piecewise smooth at zero noise; LSODA handles the kinks
    # and the slow tails without a hand-tuned step.
    sol = solve_ivp(rhs, (0.0, float(horizon)), np.zeros(n), method="LSODA",
                    rtol=rtol, atol=atol, t_eval=t_eval if t_eval is not None else [horizon])
    if not sol.success:
        raise RuntimeError(f"mean-drift integration failed: {sol.message}")
    return sol.y.T if times is not None else sol.y[:, -1]


def elastic_energy(positions, modulus: float = 1.0, target: float = 1.0):
    """Elastic energy (k/2) sum_l e_l^2 of a chain state, shape ``(...)``.

    Among chains under the same load y it is smallest for the equiseparated
    (linear) state e_l = y/(L+1).
    """
    e = elongations(positions, target)
    return 0.5 * modulus * np.sum(e * e, axis=-1)


def max_stable_step(blocks: int, modulus: float = 1.0, dynamics: str = "overdamped",
                    damping: float = 0.0) -> float:
    """Largest time step for which the explicit scheme is linearly stable.

    * overdamped: eta k lambda_max < 2;
    * second order (semi-implicit Euler): eta gamma < 2 and
      eta^2 k lambda_max < 4 - 2 eta gamma;
    * Langevin (Euler-Maruyama): eta k lambda_max < gamma.
    lambda_max = 2 - 2 cos(L pi / (L+1)) < 4.
    """
    w2 = modulus * laplacian_eigenvalues(blocks)[-1]
    if dynamics == "overdamped":
        return 2.0 / w2
    if dynamics == "second_order":
        # root of eta^2 w2 + 2 eta gamma - 4 = 0, also below 2/gamma
        root = (-damping + math.sqrt(damping * damping + 4.0 * w2)) / w2
        return min(root, 2.0 / damping) if damping > 0 else root
    if dynamics == "langevin":
        return damping / w2
    raise ValueError(f"dynamics: unknown {dynamics!r}")
