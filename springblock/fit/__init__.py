"""Spring-block chain parameters fitted to load curves (``docs/fit.md``).

* :func:`fit_spring` — the chain (mu->, s) at a fixed horizon and friction
  ratio whose mean-field load curve has each curve's shape -> :class:`FitResult`;
* :func:`effective_force` — the closed-form best equal-force chain (F_eff);
* :func:`fit_trajectory` — (mu->, mu<-, s) and a time scale c from load curves
  recorded over time (or T from one final curve), with 95 % intervals and
  bound flags -> :class:`TrajectoryFit`;
* :func:`normalise`, :func:`chain_shapes` — shapes of curves and of chains;
* :class:`ChainVariant` — a chain of the family of :mod:`springblock.fit.variants` (a time
  map, decaying noise, a friction profile) for ``fit_trajectory(variant=...)``.

The curves can come from anywhere (a network, an experiment, another chain);
fitting every cell of a network sweep lives with the comparison
(:mod:`dnnphase.compare`). The model is the mean-field chain (the mean drift of
:mod:`springblock.theory`), integrated for the fits by :mod:`springblock.fit.integrator`: a
linearly implicit Rosenbrock scheme (ROS2) on a grid geometric in time, one numba kernel for
the paper's chain (:func:`~springblock.fit.integrator.chain_positions`) and its variants
(:func:`~springblock.fit.integrator.variant_positions`), checked against the reference RK4 of
:func:`springblock.theory.predict_positions` (docs/fit.md, "Fast fits"). Only
``refine="simulation"`` runs the chain's stochastic kernels.
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
from springblock.fit.trajectory import TrajectoryFit, fit_trajectory
from springblock.fit.variants import ChainVariant
from springblock.fit.weights import seed_weights

__all__ = [
    "DEFAULT_BOUND",
    "DEFAULT_GRID",
    "DEFAULT_HORIZON",
    "DEFAULT_MU_LEFT_RATIO",
    "TIE_TOLERANCE",
    "ChainVariant",
    "EffectiveForce",
    "FitResult",
    "TrajectoryFit",
    "chain_shapes",
    "effective_force",
    "fit_spring",
    "fit_trajectory",
    "normalise",
    "seed_weights",
]
