"""A small family of chains, each differing from the paper's in one way a trained network does.

The paper's chain (Eqs. 5-6, mean field :mod:`springblock.fit.integrator`) learns at a constant
rate, feels the same noise from start to end, and has the same friction in every block. A network
does none of these. Each variant adds one number shared by every cell of a diagram (the cells
keep their own mu->, mu<-, s and time scale c):

* ``time_power`` p — a monotone map from epochs to chain time, t = c e_E (e / e_E)^p: networks
  do not learn at a constant rate (p > 1: slow early epochs, p < 1: fast ones). The chain time
  of the last frame, c e_E, is the paper chain's.
* ``noise_decay`` lambda — noise that dies down as training converges, s(t) = s exp(-lambda t /
  t_E), lambda e-folds over the recorded training (t_E = c e_E): minibatch gradient noise
  shrinks with the loss; dropout's and label noise's do not.
* ``friction_gradient`` g — a non-uniform chain, mu_l = mu exp(g t_l - |g|) with t_l running
  evenly from -1 (block 1, next to the wall) to +1 (block L, next to the target), for both
  directions: mu is the largest friction of the chain (at the target's end for g > 0), so a
  chain every block of which can move stays so. A layer near the input sees other features
  than one near the output, so its nonlinearity need not act as the same friction.

Not in the family: inertia (the second-order chain, Eq. 4, as the image of Adam's momentum).
The paper's sweeps (all but the batch-size one) train full batch, 100 or 200 Adam steps, so
Adam's first moment (1 / (1 - beta_1) = 10 steps) spans a tenth or a twentieth of training,
m ~ 0.05-0.1 T. There the mean-field chain m x'' + x' = h(F) rings (blocks overshoot and
come back, the drift's dead zone crossed again and again), and a linearly implicit scheme on
the fits' time grid did not converge to an adaptive solver's curves (a few per cent of the
drop off at ten times the steps); an adaptive solver per parameter set would make a diagram's
fit take hours. It is left out rather than fitted with an integrator that does not solve it
(docs/fit.md, "A family of chains").

:class:`ChainVariant` (all neutral: the paper's chain, integrated by the very same kernel) and
:data:`FAMILY` (each variant's parameter, its candidate values, fixed in advance).
"""

from __future__ import annotations

from dataclasses import dataclass, fields

import numpy as np

from phasecore.checks import is_real, require
from springblock.fit.integrator import STEPS_PER_DOUBLING, chain_positions, variant_positions

__all__ = ["FAMILY", "ChainVariant", "variant_of"]

#: Each variant: its parameter (a field of ChainVariant) and the values a diagram's fit tries,
#: fixed before looking at any network (neutral value included, so a variant never fits worse
#: than the paper's chain).
FAMILY = {
    "time map": ("time_power", (0.5, 0.7, 1.0, 1.4, 2.0, 2.8, 4.0)),
    "decaying noise": ("noise_decay", (0.0, 0.5, 1.0, 2.0, 4.0, 8.0, 16.0)),
    "friction profile": ("friction_gradient", (-1.5, -1.0, -0.5, 0.0, 0.5, 1.0, 1.5)),
}


@dataclass(frozen=True)
class ChainVariant:
    """One chain of the family (module docstring); the defaults are the paper's chain.

    Parameters
    ----------
    time_power : float, default 1.0
        p > 0: chain time t = c e_E (e / e_E)^p (dimensionless).
    noise_decay : float, default 0.0
        lambda >= 0, the e-folds of the noise over the recorded training.
    friction_gradient : float, default 0.0
        g, half the log of the last block's friction over the first's.
    """

    time_power: float = 1.0
    noise_decay: float = 0.0
    friction_gradient: float = 0.0

    def __post_init__(self):
        for f in fields(self):
            value = getattr(self, f.name)
            require(is_real(value), f.name, "a finite real number", value)
            object.__setattr__(self, f.name, float(value))  # hashable, whatever came in
        require(0.1 <= self.time_power <= 10.0, "time_power", "a number in [0.1, 10]",
                self.time_power)
        require(0.0 <= self.noise_decay <= 100.0, "noise_decay", "a number in [0, 100]",
                self.noise_decay)
        require(abs(self.friction_gradient) <= 5.0, "friction_gradient",
                "a number in [-5, 5]", self.friction_gradient)

    @property
    def neutral(self) -> bool:
        """True for the paper's chain."""
        return self == ChainVariant()

    def friction_profile(self, blocks: int) -> np.ndarray:
        """Block l's friction over the chain's largest, (L,): exp(g t_l - |g|).

        Parameters
        ----------
        blocks : int
            L, the chain's blocks.

        Returns
        -------
        numpy.ndarray
            (L,) each block's friction over the largest, in (0, 1].
        """
        if blocks == 1:
            return np.ones(1)
        g = self.friction_gradient
        return np.exp(g * np.linspace(-1.0, 1.0, blocks) - abs(g))

    def chain_epochs(self, epochs) -> np.ndarray:
        """e_E (e / e_E)^p: the epochs as the chain's clock reads them (E,).

        Parameters
        ----------
        epochs : array_like, (E,)
            The epochs e, increasing and > 0; e_E is the last.

        Returns
        -------
        numpy.ndarray
            (E,) the epochs on the chain's clock (the time scale c not applied).
        """
        e = np.asarray(epochs, dtype=np.float64)
        return e if self.time_power == 1.0 else e[-1] * (e / e[-1]) ** self.time_power

    def positions(self, blocks: int, mu_right, mu_left, noise, epochs, time_scale=1.0, *,
                  start=None, modulus: float = 1.0,
                  steps_per_doubling: int = STEPS_PER_DOUBLING,
                  first_span: float | None = None) -> np.ndarray:
        """Mean-field positions (K, E, L) at t = c e_E (e / e_E)^p, as
        :func:`springblock.fit.integrator.chain_positions` (the same kernel when neutral).

        Parameters
        ----------
        blocks : int
            L, the chain's blocks.
        mu_right, mu_left, noise : float or array_like, (K,)  [force, k y]
            mu->, mu<- and s of each of the K chains.
        epochs : array_like, (E,)
            The epochs e, increasing and > 0, counted from the start.
        time_scale : float or array_like, (K,)  [time per epoch], default 1.0
            c of each chain.
        start : array_like, (K, L) or (L,), optional
            Positions at t = 0 (None: at rest).
        modulus : float  [force/length], default 1.0
            k.
        steps_per_doubling : int, default 8
            Implicit steps per doubling of the time (the fits' grid).
        first_span : float, optional  [time]
            The time of the grid's first step (None: the largest c e_1 of this call; a fixed
            bound keeps the result smooth in c).

        Returns
        -------
        numpy.ndarray
            (K, E, L) positions x_1..x_L [length].
        """
        e = np.asarray(epochs, dtype=np.float64).ravel()
        require(e.size >= 1 and bool(np.all(e > 0)) and bool(np.all(np.diff(e) > 0)), "epochs",
                "increasing numbers > 0", epochs)  # before the time map changes them
        if self.neutral:
            return chain_positions(blocks, mu_right, mu_left, noise, e, time_scale,
                                   start=start, modulus=modulus,
                                   steps_per_doubling=steps_per_doubling, first_span=first_span)
        clock = self.chain_epochs(e)
        if first_span is not None:
            first_span = first_span * clock[0] / e[0]
        decay = self.noise_decay / (np.asarray(time_scale, dtype=np.float64) * clock[-1])
        return variant_positions(blocks, mu_right, mu_left, noise, clock, time_scale,
                                 friction_profile=self.friction_profile(blocks),
                                 noise_decay=decay, start=start, modulus=modulus,
                                 steps_per_doubling=steps_per_doubling, first_span=first_span)

    def describe(self) -> str:
        """The non-neutral settings in words ("paper chain" when neutral)."""
        words = [f"{f.name} = {getattr(self, f.name):g}" for f in fields(self)
                 if getattr(self, f.name) != f.default]
        return ", ".join(words) or "paper chain"


def variant_of(name: str, value: float) -> ChainVariant:
    """The chain of :data:`FAMILY` variant ``name`` with its parameter at ``value``."""
    require(isinstance(name, str) and name in FAMILY, "variant",
            f"one of {', '.join(map(repr, FAMILY))}", name)
    return ChainVariant(**{FAMILY[name][0]: value})


