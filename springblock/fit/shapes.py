"""Load-curve shapes: normalisation, the equal-force family, mean-field chain shapes.

A shape is a load curve rescaled to start at 1 and end at 0; the
equal-force chains (paper Eqs. 7-8) are exact parabolas
in this form, and :func:`effective_force` finds the best one in closed form
(see ``docs/fit.md``).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from phasecore.checks import ConfigError, is_finite, require
from phasecore.loadcurve import MIN_RELATIVE_DROP
from springblock import defaults
from springblock.fit.integrator import chain_positions

__all__ = ["DEFAULT_HORIZON", "DEFAULT_MU_LEFT_RATIO", "EffectiveForce", "as_curves",
           "chain_shapes", "effective_force", "normalise", "off_parabola", "shape_of_positions"]

#: Horizon T and mu<- / mu-> of fitted chains: the phase diagram's, springblock.defaults.
DEFAULT_HORIZON = defaults.HORIZON
DEFAULT_MU_LEFT_RATIO = defaults.MU_LEFT_RATIO
#: Integrator steps per doubling of time for a final curve (springblock.fit.integrator;
#: RMS error of the shape <= 2e-4, median 3e-6, over mu-> in [0, 0.1], s in [0, 0.1] at
#: T = 1000, against the reference RK4 of springblock.theory.predict_positions).
STEPS_PER_DOUBLING = 16


def as_curves(load_curve, name: str = "load_curve") -> np.ndarray:
    """``load_curve`` as a float array (..., L+1) with L >= 2, or a ConfigError."""
    try:
        d = np.asarray(load_curve, dtype=np.float64)
    except (TypeError, ValueError):
        raise ConfigError(f"{name} must be a numeric array (..., L+1) "
                          f"(got {type(load_curve).__name__})") from None
    require(d.ndim > 0 and d.shape[-1] >= 3, name,
            "an array with at least 3 points (layers 0..L, L >= 2) along its last axis",
            f"shape {d.shape}")
    return d


def normalise(load_curve, min_relative_drop: float = MIN_RELATIVE_DROP) -> np.ndarray:
    """Scale load curves to start at 1 and end at 0: (D - D_L) / (D_0 - D_L).

    ``load_curve`` (..., L+1) -> (..., L+1). A whole curve is NaN if any of
    its points is NaN/inf or if its drop is too small to divide by,
    |D_0 - D_L| < ``min_relative_drop`` * max|D| (the rule of
    :func:`phasecore.loadcurve.curvature_scaled`). A rising curve is
    normalised by the same formula (check the sign of D_0 - D_L).

    Parameters
    ----------
    load_curve : array_like, (..., L+1)
        Load curves D_0..D_L, any scale.
    min_relative_drop : float, default 0.001
        The smallest |D_0 - D_L| / max|D| divided by; a smaller drop gives NaN.

    Returns
    -------
    numpy.ndarray
        (..., L+1) the normalised curves, 1 at layer 0 and 0 at layer L.
    """
    d = as_curves(load_curve)
    with np.errstate(invalid="ignore", divide="ignore"):
        drop = d[..., 0] - d[..., -1]
        scale = np.max(np.abs(d), axis=-1)
        ok = (np.isfinite(d).all(axis=-1) & (np.abs(drop) > 0)
              & (np.abs(drop) >= min_relative_drop * scale))
        out = (d - d[..., -1:]) / drop[..., None]
    return np.where(ok[..., None], out, np.nan)


def parabola_basis(n_points: int) -> tuple[np.ndarray, np.ndarray]:
    """Line 1 - l/L and bump l (L - l) over l = 0..L, each (L+1,): the equal-force family."""
    big_l = n_points - 1
    ell = np.arange(n_points, dtype=np.float64)
    return 1.0 - ell / big_l, ell * (big_l - ell)


class EffectiveForce(NamedTuple):
    """Best equal-force chain for each curve (:func:`effective_force`), a named tuple.

    Attributes
    ----------
    force : numpy.ndarray, (...)  [force, k y]
        F_eff; > 0 concave, < 0 convex, -inf when the curve is more convex than any
        equal-force chain.
    residual : numpy.ndarray, (...)
        RMS over the L+1 layers of the normalised curve minus ``curve``.
    curve : numpy.ndarray, (..., L+1)
        The equal-force chain's normalised load curve.
    """

    force: np.ndarray
    residual: np.ndarray
    curve: np.ndarray


def effective_force(load_curve, modulus: float = 1.0, target: float = 1.0) -> EffectiveForce:
    """Force F of the equal-force chain whose load curve best matches the shape.

    Every block of an equal-force chain feels F (paper Eqs. 7-8), so its
    normalised load curve is n_l = (1 - l/L) + beta l (L - l) with
    F = k y 2 beta L / ((L+1) (1 + beta L)). The family is linear in beta, so
    the least-squares fit is closed form; F(beta) increases on beta > -1/L.
    This is the paper's "effective friction": F_eff = mu-> for a noiseless
    chain. ``load_curve`` (..., L+1), any scale; NaN where :func:`normalise` is.

    Parameters
    ----------
    load_curve : array_like, (..., L+1)
        Load curves D_0..D_L, any scale.
    modulus : float  [force/length], default 1.0
        k.
    target : float  [length], default 1.0
        y.

    Returns
    -------
    EffectiveForce
        ``force``, ``residual`` (...) and ``curve`` (..., L+1).
    """
    n = normalise(load_curve)
    require(is_finite(modulus) and modulus > 0, "modulus", "a finite number > 0", modulus)
    require(is_finite(target) and target != 0, "target", "a finite non-zero number", target)
    line, bump = parabola_basis(n.shape[-1])
    big_l = n.shape[-1] - 1
    beta = ((n - line) @ bump) / (bump @ bump)
    beta_ok = np.maximum(beta, -1.0 / big_l)  # closest reachable member of the family
    curve = line + beta_ok[..., None] * bump
    with np.errstate(divide="ignore", invalid="ignore"):
        force = modulus * target * 2.0 * beta * big_l / ((big_l + 1) * (1.0 + beta * big_l))
    force = np.where(beta * big_l > -1.0, force, -np.inf)
    force = np.where(np.isnan(beta), np.nan, force)
    residual = np.sqrt(np.mean((n - curve) ** 2, axis=-1))
    return EffectiveForce(force, residual, curve)


def off_parabola(diff: np.ndarray) -> np.ndarray:
    """RMS of curve differences (..., L+1) -> (...) after removing their bump component.

    The bump l (L - l) is the strong direction of a fit (F_eff); what is left
    separates points along a valley of constant F_eff.
    """
    _, bump = parabola_basis(diff.shape[-1])
    along = (diff @ bump) / (bump @ bump)
    return np.sqrt(np.mean((diff - along[..., None] * bump) ** 2, axis=-1))


def shape_of_positions(x: np.ndarray) -> np.ndarray:
    """Normalised load curve (..., L+1) of chain positions (..., L): 1 - x_l / x_L."""
    full = np.concatenate([np.zeros(x.shape[:-1] + (1,)), x], axis=-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return 1.0 - full / full[..., -1:]


def chain_shapes(blocks: int, mu_right, noise, *, horizon: float = DEFAULT_HORIZON,
                 mu_left_ratio: float = DEFAULT_MU_LEFT_RATIO,
                 modulus: float = 1.0) -> np.ndarray:
    """Normalised mean-field load curves (..., L+1) of chains with y = 1.

    The final-curve fit's model: mu<- = ``mu_left_ratio`` * mu->, Gaussian
    noise s, observed at ``horizon``, integrated from rest by
    :func:`springblock.fit.integrator.chain_positions`. ``mu_right`` and
    ``noise`` broadcast.

    Parameters
    ----------
    blocks : int
        L, the chain's blocks (>= 1).
    mu_right : float or array_like, >= 0  [force, k y]
        mu->.
    noise : float or array_like, >= 0  [force, k y]
        s, the Gaussian force-noise level; broadcasts with ``mu_right``.
    horizon : float  [time], default 1000.0
        T, the time at which the chain is observed.
    mu_left_ratio : float, default 2.0
        mu<- / mu->.
    modulus : float  [force/length], default 1.0
        k.

    Returns
    -------
    numpy.ndarray
        (..., L+1) the normalised load curves, ``mu_right`` and ``noise`` broadcast.
    """
    mu_r, s = np.broadcast_arrays(np.asarray(mu_right, dtype=np.float64),
                                  np.asarray(noise, dtype=np.float64))
    x = chain_positions(blocks, mu_r.ravel(), mu_left_ratio * mu_r.ravel(), s.ravel(),
                        [float(horizon)], modulus=modulus,
                        steps_per_doubling=STEPS_PER_DOUBLING, first_span=float(horizon))
    return shape_of_positions(x[:, 0].reshape(mu_r.shape + (blocks,)))
