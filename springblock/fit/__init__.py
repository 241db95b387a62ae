"""Fitting spring-block chain parameters to load curves (DESIGN §4; ``docs/fit.md``).

* :func:`fit_spring` — the chain (mu->, s) at a fixed horizon and friction
  ratio whose mean-field load curve has each curve's shape -> :class:`FitResult`;
* :func:`effective_force` — the closed-form best equal-force chain (F_eff);
* :func:`fit_trajectory` — (mu->, mu<-, s) and a time scale c from load curves
  recorded during training (or T from one final curve), with 95 % intervals
  and bound flags -> :class:`TrajectoryFit`;
* :func:`fit_sweep_final`, :func:`fit_sweep_trajectory` — either fit on every
  cell of a network sweep Dataset;
* :func:`dictionary_table` — Spearman rho of fitted noise along the knob and of
  fitted friction along alpha, with bootstrap intervals;
* :func:`effective_force_table` — the same read off F_eff, bootstrapped over seeds;
* :func:`normalise`, :func:`chain_shapes` — shapes of curves and of chains.

The model is the mean-field integrator :func:`springblock.theory.predict_positions`.
Importing this package compiles no numba kernel; only ``refine="simulation"`` runs the chain.
"""

from springblock.fit.dictionary import dictionary_table, effective_force_table
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
from springblock.fit.sweep import fit_sweep_final, fit_sweep_trajectory
from springblock.fit.trajectory import (
    TrajectoryFit,
    fit_trajectory,
    seed_weights,
)

__all__ = [
    "DEFAULT_BOUND",
    "DEFAULT_GRID",
    "DEFAULT_HORIZON",
    "DEFAULT_MU_LEFT_RATIO",
    "TIE_TOLERANCE",
    "EffectiveForce",
    "FitResult",
    "TrajectoryFit",
    "chain_shapes",
    "dictionary_table",
    "effective_force",
    "effective_force_table",
    "fit_spring",
    "fit_sweep_final",
    "fit_sweep_trajectory",
    "fit_trajectory",
    "normalise",
    "seed_weights",
]
