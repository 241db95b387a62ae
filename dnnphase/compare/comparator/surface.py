"""The chain's curvature surface: kappa(mu->, s) of the mean-field chain, read by a spline.

The held-out prediction (:mod:`dnnphase.compare.comparator.prediction`) compares every network cell
with the scale-free curvature of a chain of BLOCKS blocks (k = y = 1) at HORIZON with mu<- = RATIO
mu->, as a function of the chain's friction and noise. That function is tabulated once per process
on a grid even in u = log(1 + mu->/FRICTION_SCALE) and v = log(1 + s/NOISE_SCALE) and read
through a bicubic spline. The paper's chain is integrated by
:func:`springblock.theory.predict_positions`; a chain of the family of
:mod:`springblock.fit.variants` by its own (implicit) integrator, 16 steps per doubling of time
(final shapes within 2e-4 of the reference, docs/fit.md).
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np
from scipy.interpolate import RectBivariateSpline

from phasecore.checks import is_int, require
from phasecore.loadcurve import curvature_scaled
from springblock import defaults as chain_defaults
from springblock.config import ChainConfig
from springblock.fit.variants import ChainVariant
from springblock.theory import load_curve, predict_positions

__all__ = ["BLOCKS", "HORIZON", "RATIO", "TABLE_POINTS", "chain_curvature", "chain_table",
           "coordinate_bounds", "curvature_surface", "friction_coordinate", "friction_value",
           "noise_coordinate", "noise_value"]

#: The chain every cell is compared with: blocks L, horizon T, mu<- / mu->  (k = y = 1),
#: read from their homes (the single chain's default, the phase diagram's defaults).
BLOCKS = ChainConfig.blocks
HORIZON = chain_defaults.HORIZON
RATIO = chain_defaults.MU_LEFT_RATIO
#: The chain's (mu->, s) table: 0..FRICTION_MAX and 0..NOISE_MAX, TABLE_POINTS each, evenly
#: spaced in the coordinates u = log(1 + mu/FRICTION_SCALE), v = log(1 + s/NOISE_SCALE).
FRICTION_SCALE = 0.005
FRICTION_MAX = 0.6
NOISE_SCALE = 0.002
NOISE_MAX = 3.0
TABLE_POINTS = 49
#: Integrator steps per doubling of time for a variant's final curves.
VARIANT_STEPS = 16


def friction_coordinate(mu_right) -> np.ndarray:
    """u = log(1 + mu-> / FRICTION_SCALE), the table's friction coordinate (same shape)."""
    return np.log1p(np.asarray(mu_right, dtype=float) / FRICTION_SCALE)


def friction_value(u) -> np.ndarray:
    """mu-> (units of k y) at friction coordinate ``u`` (same shape)."""
    return FRICTION_SCALE * np.expm1(np.asarray(u, dtype=float))


def noise_coordinate(noise) -> np.ndarray:
    """v = log(1 + s / NOISE_SCALE), the table's noise coordinate (same shape)."""
    return np.log1p(np.asarray(noise, dtype=float) / NOISE_SCALE)


def noise_value(v) -> np.ndarray:
    """s (units of k y) at noise coordinate ``v`` (same shape)."""
    return NOISE_SCALE * np.expm1(np.asarray(v, dtype=float))


def chain_table(points: int = TABLE_POINTS, variant: ChainVariant | None = None
                ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The chain's scale-free curvature on a (mu->, s) grid, computed once per process.

    Returns (u (P,), v (P,), kappa (P, P)), read-only: the coordinates of
    :func:`friction_coordinate` and :func:`noise_coordinate` and the curvature
    (:func:`phasecore.loadcurve.curvature_scaled`) of the mean-field chain
    (BLOCKS, HORIZON, mu<- = RATIO mu->) at each grid point. ~4 s at P = 49. ``variant``: a
    chain of :mod:`springblock.fit.variants` (None: the paper's).
    """
    require(is_int(points) and points >= 4, "points", "an integer >= 4", points)
    require(variant is None or isinstance(variant, ChainVariant), "variant",
            "None or a springblock.fit.variants.ChainVariant", variant)
    return _chain_table(int(points), None if variant is None or variant.neutral else variant)


@lru_cache(maxsize=16)
def _chain_table(points: int, variant: ChainVariant | None
                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    u = np.linspace(0.0, float(friction_coordinate(FRICTION_MAX)), points)
    v = np.linspace(0.0, float(noise_coordinate(NOISE_MAX)), points)
    mu, s = np.meshgrid(friction_value(u), noise_value(v), indexing="ij")
    if variant is None:
        x = predict_positions(BLOCKS, mu, RATIO * mu, s, HORIZON)
    else:
        x = variant.positions(BLOCKS, mu.ravel(), RATIO * mu.ravel(), s.ravel(), [1.0], HORIZON,
                              steps_per_doubling=VARIANT_STEPS)[:, 0].reshape(mu.shape + (-1,))
    kappa = curvature_scaled(load_curve(x))
    for a in (u, v, kappa):
        a.setflags(write=False)
    return u, v, kappa


@lru_cache(maxsize=16)
def curvature_surface(points: int = TABLE_POINTS, variant: ChainVariant | None = None
                      ) -> RectBivariateSpline:
    """The bicubic spline of :func:`chain_table` (callable on grids of u and v)."""
    u, v, kappa = chain_table(points, variant)
    return RectBivariateSpline(u, v, kappa)


def coordinate_bounds(points: int = TABLE_POINTS) -> tuple[float, float]:
    """(largest u, largest v) of the table: the fitted maps stay in [0, U] x [0, V]."""
    u, v, _ = chain_table(points)
    return float(u[-1]), float(v[-1])


def chain_curvature(u, v, points: int = TABLE_POINTS,
                    variant: ChainVariant | None = None) -> np.ndarray:
    """The chain's curvature at coordinates (``u``, ``v``), broadcast together; a bicubic
    spline of :func:`chain_table` (within 0.012 of the integrator between grid points, RMS 0.002),
    coordinates clipped to the table; ``variant``: as :func:`chain_table`."""
    high_u, high_v = coordinate_bounds(points)
    u, v = np.broadcast_arrays(np.clip(u, 0.0, high_u), np.clip(v, 0.0, high_v))
    return curvature_surface(points, variant).ev(u, v)
