"""Validated configuration of a spring-block chain ensemble.

:class:`ChainConfig` is the one place that knows the parameters, their units,
defaults and allowed ranges. It validates everything when constructed, so bad
input fails before any work starts, with a one-line message that names the
parameter and the allowed range.
"""

from __future__ import annotations

import dataclasses
import json
import math
from dataclasses import dataclass

import numpy as np

from phasecore.checks import ConfigError, is_finite, is_int, plain_fields, require
from springblock import dynamics as _dyn
from springblock.checks import (
    check_modulus,
    check_nonnegative,
    check_step,
    check_target,
)
from springblock.theory import laplacian_extremes, max_stable_step

__all__ = ["ALGORITHMS", "CHAIN_PARAMS", "ChainConfig", "DYNAMICS", "MAX_KERNEL_STEPS",
           "NOISE_DISTS", "RNGS", "UNITS"]

DYNAMICS = ("overdamped", "second_order", "langevin")
NOISE_DISTS = ("gaussian", "truncated")
NOISE_SHARING = ("independent", "synchronous")
RNGS = ("xoshiro", "legacy")
ALGORITHMS = ("steps", "events", "auto")
#: The step kernel counts steps in int64; a larger count needs the events algorithm.
MAX_KERNEL_STEPS = 2**62
#: Fewest blocks of a simulated chain: every result holds the curvature of each load curve
#: (:mod:`phasecore.loadcurve`), which needs 3 points, layers 0..L with L >= 2.
MIN_BLOCKS = 2

#: Parameters that may differ between the chains of one kernel call (and so
#: may be axes of a phase diagram), with the kernel's parameter-table column.
CHAIN_PARAMS = {
    "mu_right": _dyn.P_MU_RIGHT,
    "mu_left": _dyn.P_MU_LEFT,
    "noise": _dyn.P_NOISE,
    "modulus": _dyn.P_MODULUS,
    "target": _dyn.P_TARGET,
    "step": _dyn.P_STEP,
    "damping": _dyn.P_DAMPING,
    "truncation": _dyn.P_TRUNCATION,
    "noise_decay": _dyn.P_DECAY,
}

UNITS = {
    "mu_right": "force",
    "mu_left": "force",
    "noise": "force (overdamped, second order) or velocity (Langevin), per step",
    "modulus": "force/length",
    "target": "length",
    "step": "time",
    "damping": "1/time",
    "truncation": "standard deviations",
    "noise_decay": "1/time",
    "steps": "steps",
    "blocks": "blocks",
}


@dataclass(frozen=True)
class ChainConfig:
    """Everything that defines a chain ensemble except the seeds.

    Units in brackets; the paper's symbols in parentheses. Every field is checked
    when the configuration is made (a :class:`ConfigError` naming it).

    Parameters
    ----------
    blocks : int, >= 2
        Number of blocks L (hidden layers). Load curves have L + 1 points, at
        least 3 for their curvature (the theory's functions take L = 1 too).
    mu_right, mu_left : float, >= 0  [force]
        Sliding = maximal static friction for rightward (mu->) and leftward
        (mu<-) motion. ``mu_left=None`` means equal to ``mu_right``.
    noise : float, >= 0
        Overdamped and second order: the per-step force-noise level s, so each
        step a block feels F + s xi (friction acts on that noisy force). An
        SDE noise strength eps corresponds to s = eps / sqrt(step). Langevin:
        the per-step velocity kick sigma, v <- v + ... + sigma xi (an SDE
        strength eps = sigma / sqrt(step)).
    noise_dist : "gaussian" | "truncated"
        Distribution of xi. "truncated" conditions xi on |xi| <= truncation,
        so the force noise is bounded by b = truncation * noise.
    truncation : float, > 0  [standard deviations]
        The bound c of the truncated noise; left at its default unless
        ``noise_dist="truncated"`` (else a ConfigError: it would change nothing).
    noise_sharing : "independent" | "synchronous"
        One draw per block and step, or one draw per step shared by all blocks
        (the paper's Fig. 4 dynamics).
    noise_decay : float, >= 0  [1/time]
        Exponential decay rate lambda: the noise level at time t is
        noise * exp(-lambda t).
    dynamics : "overdamped" | "second_order" | "langevin"
        Paper Eqs. 5-6 (main model), Eq. 4 with static/sliding friction, or the
        Langevin variant with noise on the velocity (SM Eqs. 12-13).
    modulus : float, > 0  [force/length]
        Spring modulus k.
    target : float  [length]
        Target position y of the right end (the wall is at 0).
    step : float, > 0  [time]
        Time step eta; must satisfy the scheme's stability bound
        (:func:`springblock.theory.max_stable_step`) and be at least
        1e-10 / modulus (:data:`springblock.checks.MIN_STEP_MODULUS`: shorter
        steps move a block by less than the rounding of its position).
    steps : int >= 1, or math.inf
        Number of time steps; the horizon is T = steps * step. Any size
        (1e10 and beyond; a whole float such as 1e10 is taken as an int).
        ``inf`` asks for the stationary state (overdamped, events or auto):
        with Gaussian noise 20 relaxation times
        (:func:`springblock.algorithm.infinite_horizon_steps`), without noise
        or with bounded noise that can freeze, until the chain is frozen.
    damping : float or None, >= 0  [1/time]
        gamma for the second-order and Langevin dynamics. None: critical
        damping of the stiffest mode, 2 sqrt(k lambda_max), so no mode
        oscillates; None with the overdamped dynamics (else a ConfigError).
    record_every : int, >= 0
        Record the load curve every this many steps (0: final state only).
    stop_tol : float or None, > 0
        Stopping rule: stop when the largest change of the seed-mean load curve
        over ``stop_window`` steps is below ``stop_tol * |target|``. With
        Gaussian noise the curve creeps for exponentially long times, so the
        rule stops a still-moving curve: the horizon actually reached is
        always reported.
    stop_window : int, >= 1
        Steps between checks of the stopping rule.
    rng : "xoshiro" | "legacy"
        The fast per-chain generator (default), or numpy's legacy Mersenne
        Twister seeded with each chain's seed, bit-compatible with a plain
        ``np.random.seed(seed); np.random.randn(...)`` loop (overdamped,
        Gaussian, no stopping rule; serial and slower).
    algorithm : "steps" | "events" | "auto"
        How the overdamped chain is advanced: step by step (any dynamics),
        event-driven (:mod:`springblock.events`: exact in distribution, jumps
        from one move to the next, so its cost grows with the number of moves,
        not of steps), or ``auto``: per chain, the cheaper of the two by the
        expected number of moves, falling back to ``steps`` for whatever the
        event-driven kernel cannot do (other dynamics, noise decay, the
        stopping rule, the legacy generator).
    """

    blocks: int = 7
    mu_right: float = 0.0
    mu_left: float | None = None
    noise: float = 0.0
    noise_dist: str = "gaussian"
    truncation: float = 2.0
    noise_sharing: str = "independent"
    noise_decay: float = 0.0
    dynamics: str = "overdamped"
    modulus: float = 1.0
    target: float = 1.0
    step: float = 0.01
    steps: int = 10_000
    damping: float | None = None
    record_every: int = 0
    stop_tol: float | None = None
    stop_window: int = 10_000
    rng: str = "xoshiro"
    algorithm: str = "steps"

    def __post_init__(self):
        plain_fields(self)
        steps = self.steps
        if isinstance(steps, float) and math.isfinite(steps) and steps == int(steps):
            object.__setattr__(self, "steps", int(steps))  # 1e10 -> 10000000000
        self.validate()

    def validate(self) -> None:
        """Every parameter in its range (the shared checks of :mod:`springblock.checks`).

        Noise or friction far above the spring force k |y| is allowed but
        flagged in results (``out_of_scale``), like overflow (``diverged``).
        """
        # Stricter than the theory's check_blocks (its functions take one block): a
        # simulated chain is read by its load curve's curvature.
        require(is_int(self.blocks) and self.blocks >= MIN_BLOCKS, "blocks",
                f"an integer >= {MIN_BLOCKS} to simulate a chain: the curvature of its load "
                f"curve needs the layers 0..L with L >= {MIN_BLOCKS}", self.blocks)
        require(self.dynamics in DYNAMICS, "dynamics", f"one of {', '.join(DYNAMICS)}",
                 self.dynamics)
        require(self.noise_dist in NOISE_DISTS, "noise_dist",
                 f"one of {', '.join(NOISE_DISTS)}", self.noise_dist)
        require(self.noise_sharing in NOISE_SHARING, "noise_sharing",
                 f"one of {', '.join(NOISE_SHARING)}", self.noise_sharing)
        require(self.rng in RNGS, "rng", f"one of {', '.join(RNGS)}", self.rng)
        check_modulus(self.modulus)
        for name in ("mu_right", "mu_left", "noise", "noise_decay", "damping"):
            value = getattr(self, name)
            if value is None and name in ("mu_left", "damping"):
                continue
            check_nonnegative(name, value)
        check_target(self.target)
        require(is_finite(self.truncation) and self.truncation > 0, "truncation",
                 "> 0 (standard deviations)", self.truncation)
        self._validate_pairs()
        require(self.algorithm in ALGORITHMS, "algorithm", f"one of {', '.join(ALGORITHMS)}",
                self.algorithm)
        require((is_int(self.steps) and self.steps >= 1) or self.steps == math.inf, "steps",
                "an integer >= 1 or inf", self.steps)
        require(is_int(self.record_every) and self.record_every >= 0, "record_every",
                 "an integer >= 0", self.record_every)
        if self.steps != math.inf:  # (steps = inf refuses recording below)
            require(self.record_every <= self.steps, "record_every",
                    f"an integer in 0..steps ({self.steps})", self.record_every)
        require(is_int(self.stop_window) and self.stop_window >= 1, "stop_window",
                 "an integer >= 1", self.stop_window)
        if self.stop_tol is not None:
            require(is_finite(self.stop_tol) and self.stop_tol > 0, "stop_tol", "> 0 or None",
                     self.stop_tol)
            # the rule compares the curve window by window: one as long as the run never acts
            require(self.stop_window < self.steps, "stop_window",
                    f"below steps ({self.steps}) with stop_tol: a window as long as the run "
                    "ends with it, so the stopping rule could never act", self.stop_window)
        if self.dynamics == "langevin":
            require(self.gamma > 0, "damping", "> 0 for the Langevin dynamics "
                     "(Euler-Maruyama is unstable without damping)", self.damping)
        limit = max_stable_step(int(self.blocks), self.modulus, self.dynamics, self.gamma)
        check_step(self.step, self.modulus, limit,
                   f"the {self.dynamics} scheme is unstable beyond that for "
                   f"blocks={self.blocks}, modulus={self.modulus:g}"
                   + (f", damping={self.gamma:g}" if self.dynamics != "overdamped" else ""))
        if self.rng == "legacy":
            require(self.dynamics == "overdamped" and self.noise_dist == "gaussian"
                     and self.stop_tol is None, "rng",
                     "'xoshiro' unless dynamics='overdamped', noise_dist='gaussian' and "
                     "stop_tol=None ('legacy' reproduces the plain numpy loop only)", self.rng)

        self._validate_algorithm()

    def _validate_pairs(self) -> None:
        """A field that only means something with another's value is refused without it
        (the command line's ``--truncation`` and ``--damping`` come here too)."""
        default = ChainConfig.truncation  # the dataclass field's default
        if self.noise_dist != "truncated" and self.truncation != default:
            raise ConfigError(f"truncation must be left at its default {default:g} unless "
                              "noise_dist is 'truncated': it bounds the truncated noise only "
                              f"(got {self.truncation:g} with {self.noise_dist} noise)")
        if self.damping is not None and self.dynamics == "overdamped":
            raise ConfigError("damping must be None unless dynamics is 'second_order' or "
                              "'langevin': the overdamped chain has no damping (got "
                              f"{self.damping:g} with overdamped dynamics)")

    def event_driven_obstacle(self) -> str | None:
        """Why the event-driven kernel cannot run this chain (None: it can)."""
        if self.dynamics != "overdamped":
            return f"dynamics={self.dynamics!r} (the event-driven kernel is overdamped only)"
        if self.noise_decay > 0:
            return ("noise_decay > 0 (a decaying noise changes every block's move "
                    "probability at every step)")
        if self.stop_tol is not None:
            return "stop_tol (the stopping rule watches the chain step by step)"
        if self.rng != "xoshiro":
            return f"rng={self.rng!r}"
        return None

    def _validate_algorithm(self) -> None:
        obstacle = self.event_driven_obstacle()
        if self.steps == math.inf and obstacle:  # first: no algorithm reaches it with that
            raise ConfigError(f"steps must be finite with {obstacle} (got inf)")
        if self.algorithm == "events" and obstacle:
            raise ConfigError(f"algorithm must be 'steps' or 'auto' with {obstacle} "
                              f"(got 'events')")
        if self.steps == math.inf:
            require(self.algorithm != "steps", "algorithm",
                    "'events' or 'auto' for steps=inf (the stationary state)", self.algorithm)
            require(self.record_every == 0, "record_every", "0 for steps=inf",
                    self.record_every)
        elif self.steps > MAX_KERNEL_STEPS:
            require(self.algorithm != "steps" and not obstacle, "steps",
                    "<= 2**62 for the step kernel (larger counts need algorithm='events' "
                    "or 'auto' and the overdamped model)", self.steps)

    # --- derived quantities --------------------------------------------------

    @property
    def horizon(self) -> float:
        """Time T = steps * step reached without the stopping rule."""
        return self.steps * self.step

    @property
    def mu_left_value(self) -> float:
        """mu<- in force units (``mu_left=None`` follows ``mu_right``)."""
        return self.mu_right if self.mu_left is None else self.mu_left

    @property
    def gamma(self) -> float:
        """Damping in use: ``damping``, or critical damping 2 sqrt(k lambda_max)."""
        if self.damping is not None:
            return self.damping
        return 2.0 * math.sqrt(self.modulus * laplacian_extremes(int(self.blocks))[1])

    @property
    def effective_truncation(self) -> float:
        """The noise bound in standard deviations the kernel uses (inf: Gaussian)."""
        return self.truncation if self.noise_dist == "truncated" else math.inf

    def param_row(self) -> np.ndarray:
        """This chain's row of the kernel's parameter table, shape (N_PARAMS,)."""
        row = np.zeros(_dyn.N_PARAMS)
        for name, col in CHAIN_PARAMS.items():
            row[col] = getattr(self, name)
        row[_dyn.P_MU_LEFT] = self.mu_left_value
        row[_dyn.P_DAMPING] = self.gamma
        row[_dyn.P_TRUNCATION] = self.effective_truncation
        return row

    def replace(self, **changes) -> ChainConfig:
        """A validated copy with some parameters changed.

        Parameters
        ----------
        **changes
            Parameters of :class:`ChainConfig` and their new values (``blocks=9``); the others
            stay as they are.

        Returns
        -------
        ChainConfig
            The copy, checked as a new configuration is (a :class:`ConfigError` naming the
            first parameter out of range).
        """
        return ChainConfig(**{**self.to_dict(), **changes})

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> ChainConfig:
        return cls(**json.loads(text))
