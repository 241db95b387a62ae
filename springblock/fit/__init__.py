"""Fitting spring-block chain parameters to load curves (DESIGN §4; ``docs/fit.md``).

* :func:`fit_spring` — the chain (mu->, s) at a fixed horizon and friction
  ratio whose mean-field load curve has each curve's shape -> :class:`FitResult`;
* :func:`effective_force` — the closed-form best equal-force chain (F_eff);
* :func:`normalise`, :func:`chain_shapes` — shapes of curves and of chains.

The model is the mean-field integrator :func:`springblock.theory.predict_positions`.
Importing this package compiles no numba kernel; only ``refine="simulation"`` runs the chain.
"""

from springblock.fit.result import FitResult
from springblock.fit.shapes import (
    DEFAULT_HORIZON,
    DEFAULT_MU_LEFT_RATIO,
    EffectiveForce,
    chain_shapes,
    effective_force,
    normalise,
)
from springblock.fit.spring import DEFAULT_BOUND, DEFAULT_GRID, TIE_TOLERANCE, fit_spring

__all__ = [
    "DEFAULT_BOUND",
    "DEFAULT_GRID",
    "DEFAULT_HORIZON",
    "DEFAULT_MU_LEFT_RATIO",
    "TIE_TOLERANCE",
    "EffectiveForce",
    "FitResult",
    "chain_shapes",
    "effective_force",
    "fit_spring",
    "normalise",
]
