"""What runs a chain: the steps its horizon resolves to and the kernel that steps it.

:func:`resolved_steps` turns ``steps=inf`` into a finite horizon (20 relaxation
times with Gaussian noise) or leaves it infinite (a chain that freezes);
:func:`choose_algorithm` picks the step kernel or the event-driven one for
``algorithm="auto"`` from :func:`expected_events`; :data:`LONG_HORIZON` is where the
mean-drift prediction switches to log time. :mod:`springblock.ensemble` runs what is
chosen here and :mod:`springblock.memory` prices it, so both import this module and
neither imports the other for it. Pure Python on the config: no kernel is imported.
"""

from __future__ import annotations

import math

from scipy.special import log_ndtr, ndtr

from springblock import theory
from springblock.config import MAX_KERNEL_STEPS, ChainConfig

__all__ = ["EVENT_COST", "INFINITE_HORIZON_RELAXATIONS", "LONG_HORIZON", "MAX_HORIZON_STEPS",
           "choose_algorithm", "expected_events", "infinite_horizon_steps", "resolved_steps"]

#: Horizons (time) beyond which the mean-drift prediction is integrated in log time.
LONG_HORIZON = 1e4
#: Relaxation times that stand for an infinite horizon with Gaussian noise.
INFINITE_HORIZON_RELAXATIONS = 20.0
#: The largest step count an infinite horizon resolves to (tau beyond it: a/s > ~37).
MAX_HORIZON_STEPS = 1e300
#: Cost of one event-driven move in block-steps of the step kernel (measured on
#: L = 7 chains, benchmarks/bench_chain.py): the exchange rate ``auto`` uses.
EVENT_COST = 100.0


def _log_move_probability_at_rest(cfg: ChainConfig) -> float:
    """log p* : per-step move probability of a block at the stationary force F*.

    At F* = (mu-> - mu<-)/2 both thresholds are a = (mu-> + mu<-)/2 away:
    p* = 2 P(xi > a/s) for xi standard normal, truncated to |xi| <= c if
    bounded (0 when c s <= a: such a chain freezes).
    """
    a = 0.5 * (cfg.mu_right + cfg.mu_left_value)
    if cfg.noise == 0:
        return -math.inf
    u, c = a / cfg.noise, cfg.effective_truncation
    if math.isinf(c):
        return math.log(2.0) + float(log_ndtr(-u))
    if c <= u:
        return -math.inf
    return math.log(2.0 * (ndtr(c) - ndtr(u)) / (2.0 * ndtr(c) - 1.0))


def infinite_horizon_steps(cfg: ChainConfig) -> float:
    """The step count that stands for T = inf for one overdamped chain.

    * no noise, or bounded noise with c s <= a: ``inf``: run until the chain
      is frozen (it then never moves again: an exact stationary state);
    * otherwise 20 relaxation times, 20 / (p* k lambda_min) / eta with p* the
      move probability at F* (Gaussian noise: 20 theory.relaxation_time / eta),
      capped at 1e300 steps.
    """
    log_p = _log_move_probability_at_rest(cfg)
    if log_p == -math.inf:
        return math.inf
    lam = theory.laplacian_extremes(cfg.blocks)[0]
    log_steps = (math.log(INFINITE_HORIZON_RELAXATIONS) - log_p
                 - math.log(cfg.modulus * lam * cfg.step))
    return math.ceil(math.exp(min(log_steps, math.log(MAX_HORIZON_STEPS))))


def resolved_steps(cfg: ChainConfig) -> float:
    """Steps to run: ``cfg.steps``, or :func:`infinite_horizon_steps` for steps=inf."""
    return infinite_horizon_steps(cfg) if cfg.steps == math.inf else float(cfg.steps)


def expected_events(cfg: ChainConfig, n_steps: float) -> float:
    """Rough number of events (steps in which something moves) in ``n_steps``.

    Starting from rest, blocks sit near their threshold and move often; that
    phase costs about 0.8 L events per relaxation step n_r = 1/(eta k
    lambda_min) and per e-fold of time (the count grows like log n), after
    which a step moves something with probability 1 - (1 - p*)^L (p* at F*).
    At most one event per step. Fitted on L = 7, mu<- = 2 mu-> chains
    (benchmarks/bench_chain.py prints the measured counts); it only has to rank
    the two algorithms.
    """
    lam = theory.laplacian_extremes(cfg.blocks)[0]
    n_relax = 1.0 / (cfg.step * cfg.modulus * lam)
    startup = 0.8 * cfg.blocks * n_relax * math.log1p(n_steps / n_relax)
    p_star = math.exp(_log_move_probability_at_rest(cfg))
    stationary = -math.expm1(cfg.blocks * math.log1p(-min(p_star, 1.0 - 1e-16))) * n_steps
    return min(startup + stationary, n_steps)


def choose_algorithm(cfg: ChainConfig) -> str:
    """The kernel that runs this chain: "steps" or "events" (``auto`` decides here)."""
    if cfg.algorithm != "auto":
        return cfg.algorithm
    if cfg.event_driven_obstacle():
        return "steps"
    n = resolved_steps(cfg)
    if n > MAX_KERNEL_STEPS:
        return "events"
    return "events" if EVENT_COST * expected_events(cfg, n) < cfg.blocks * n else "steps"
