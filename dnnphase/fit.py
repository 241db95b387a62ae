"""Fit spring-block chain parameters to a load curve (DESIGN §4; issue 4, "Fit").

Given a network's load curve D_0..D_L (any scale, any sign), find the chain
of L blocks whose load curve has the same *shape*: both are normalised to
start at 1 and end at 0,

    n_l = (D_l - D_L) / (D_0 - D_L),   l = 0..L          (:func:`normalise`)

and compared by the RMS over the L + 1 layers of the difference.

API
---
* :func:`normalise` (..., L+1) -> (..., L+1).
* :func:`effective_force` -> ``EffectiveForce(force, residual, curve)``: the
  closed-form best equal-force chain (the paper's "effective friction").
* :func:`fit_spring` (..., L+1) -> :class:`FitResult` (arrays of shape (...);
  ``FitResult.to_dataset(dims, coords)`` labels them).
* :func:`predict_positions_batch`, :func:`chain_shapes`: the batched
  mean-drift model the fit uses.

The chain model
---------------
Overdamped chain, Gaussian force noise, friction on the noisy force (DESIGN
§2.1), target y = 1, started at rest, observed at a finite horizon T. Its
seed-mean state is predicted by the mean-drift equations (DESIGN §2.4)

    dx_l/dt = h(F_l),  F_l = k (x_{l+1} - 2 x_l + x_{l-1}),
    h(F) = E[f(F + s xi)] = s [g((F - mu->)/s) - g(-(F + mu<-)/s)],
    g(z) = z Phi(z) + phi(z),                                         (1)

integrated by :func:`predict_positions_batch` (fixed-step RK4, vectorised
over parameter sets; equal to :func:`springblock.theory.predict_positions`
to ~3e-8). Measured mean-field error against 64-seed simulation means, as an
RMS of normalised curves: 3e-5..1.3e-4 for mu->, s <= 0.03 and up to 8e-4 at
mu-> = s = 0.1 (the edge of the default bounds).

Only mu/(k y), s/(k y) and k T enter the shape of (1) (h is homogeneous of
degree one in (F, mu->, mu<-, s); rescale x by y and time by k), so y = 1 and
forces are in units of k y; ``modulus`` is kept for callers that think in
physical k.

What a load curve can identify (measured, L = 7, T = 1000, mu<- = 2 mu->)
---------------------------------------------------------------------------
The normalised curve has L - 1 = 6 free numbers, but the chain's curves are
almost exactly parabolas: an equal-force chain (every block at one force F,
paper Eqs. 7-8) gives exactly n_l = 1 - l/L + beta l (L - l), and finite-time
noisy chains deviate from that by at most 1.1e-3 RMS while every block moves
(mu-> < 2 k y / (L (L+1)) = 0.036). Hence:

* **Effective force F_eff** (the paper's "effective friction over a time
  window"): the force of the best-fitting equal-force chain, closed form
  (:func:`effective_force`). Always identifiable; F_eff = mu-> for a
  noiseless chain, and at fixed mu-> it falls monotonically with s towards
  F* = (mu-> - mu<-)/2, reached when noise has relaxed the chain by T.
  F_eff > 0 concave, 0 linear, < 0 convex.
* Singular values of the Jacobian of the normalised curve with respect to
  (log mu->, log mu<-, log s, log T): [0.34, 1e-3, 1e-6, 7e-20] at
  (mu->, s) = (0.02, 0.005), [0.41, 1.7e-3, 1.7e-4, 5e-8] at (0.02, 0.01),
  [0.38, 6.7e-3, 3e-8, 3e-11] at (0.03, 0.02). One combination (F_eff) is
  strong, one is 60-400 times weaker, the other two are not identifiable:
  T trades against s (relaxation ~ T Phi(-a/s), a = (mu-> + mu<-)/2) and
  mu<- has no effect at all while noise is too weak to push blocks left.
* So ``fit_spring`` **fixes** T (``horizon``, default 1000) and
  mu<- = ``mu_left_ratio`` * mu-> (default 2, DESIGN's phase-diagram default),
  and fits (mu->, s). Their condition number is 250-390 in log units (17 near
  full relaxation); in force units the singular values are ~35-45 (along
  F_eff) and ~0.085 (along a line of constant F_eff). The weak direction is
  the small non-parabolic part of the curve. On curves the chain itself made
  it is resolved: 64-seed simulated curves are recovered to <= 1.6 %, theory
  curves to 1e-6 relative (tests). For network curves, whose departures from
  a parabola are usually far larger than 1e-3 (e.g. 1e-2 RMS noise), the
  split between mu-> and s along the valley of constant F_eff is set by the
  network's own wiggles: on such synthetic curves the median ``mu_right_se``
  was 3x mu->. ``mu_right_se`` / ``noise_se`` (local Gauss-Newton standard
  errors) say how well the split is pinned; where it is not, read F_eff, or
  pass a fixed ``mu_right`` to fit s alone (well conditioned, F_eff being
  monotone in s).
* Where the chain has fully relaxed by T (s large against mu), the curve is
  the stationary parabola F* = -(ratio - 1) mu-> / 2 and no longer depends
  on s: mu-> is then identified by F_eff and s only from below. To keep the
  answer well defined the fit reports the **smallest** s whose curve lies
  within ``TIE_TOLERANCE`` (1e-6 RMS) of the best fit. Likewise for mu-> = 0
  (no friction: a straight line for every s) it reports s at its lower bound.

Reachable shapes with the default bounds (mu->, s in [0, 0.1] k y): F_eff from
-(ratio - 1) 0.1 / 2 = -0.05 (convex; midpoint of the normalised curve at
0.21 for L = 7) up to 2 k y / (L (L+1)) = 0.036 (concave, first block
barely moving); beyond that the first blocks of the chain stop moving
(a flat start, not a steeper parabola). Curves outside show up as a large
``residual``, often with a parameter at its bound.

Method
------
1. A grid over (mu->, s) (``grid``, default 24 x 24; s = 0 plus geometric
   spacing) is integrated once per (L, k, T, ratio, bounds, grid) and cached:
   ~2 s at T = 1000 (cost proportional to T and to the grid size).
2. Starting points per curve (:func:`_starting_points`): the nearest grid
   curve, the best points along the valley of the data's F_eff (interpolated
   on the grid rows), and the valley's closed-form ends (noiseless chain
   mu-> = F_eff; fully relaxed chain mu-> = -2 F_eff / (ratio - 1)); the two
   best distinct ones, one of them on the valley, are kept — the misfit along
   a valley can have two minima (partly vs. fully relaxed chains).
3. A bounded Levenberg-Marquardt (projected, active set at the bounds),
   vectorised over all starts of all curves, refines on the exact model (1)
   with forward-difference Jacobians; each curve keeps its best end point.
   scipy's ``least_squares`` does the same per curve but would integrate one
   parameter set per call, several times slower at this batch size.
4. Optional ``refine="simulation"``: for curves whose theory residual exceeds
   ``refine_threshold``, defect-correction steps replace the mean-field
   residual by the simulated seed-mean residual (common random numbers,
   ``sim_seeds`` seeds, theory Jacobian); a step is kept only if the
   simulated misfit falls. This removes the mean-field bias (<= 8e-4 RMS);
   it cannot rescue a shape the chain cannot make.

Known limit: within ~1 % of full relaxation (F_eff close to F*) the misfit
valley is long, flat and curved; the local fit may stop after ``max_iter``
with a residual up to ~2e-5 (below the mean-field error) and s off by up to
~20 % — where s is only loosely determined anyway (see ``noise_se``).

Measured runtime (2 shared CPU cores, L = 7, T = 1000, after the 2 s grid):
0.11 s per curve for 300 noisy network-like curves fitted in one call,
0.21 s per curve for 100 random theory curves (many of them near full
relaxation, where the local fit crawls), so ~2 min for a 1000-cell sweep.
Fit curves in one call: each Levenberg-Marquardt iteration costs ~0.15 s
of fixed overhead plus ~3 ms per parameter set. ``refine="simulation"``
adds ~0.1-0.3 s per refined curve and iteration at 16 seeds.

Tolerances (tests/test_fit.py): theory-generated curves recover mu-> and s to
1e-6 relative; 64-seed simulated curves in the transition region to 3 %
(measured 0.5-1.6 %; the error is the mean-field bias projected on the weak
direction, so it is systematic and the standard errors, 0.1-0.5 %, do not
cover it), with residual < 2e-4 (measured <= 8e-6); F_eff to 1e-10 on
equal-force curves.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np
import xarray as xr
from scipy.special import ndtr

from springblock.shared.loadcurve import MIN_RELATIVE_DROP
from springblock.theory import laplacian_eigenvalues

__all__ = [
    "DEFAULT_HORIZON",
    "DEFAULT_MU_LEFT_RATIO",
    "DEFAULT_GRID",
    "DEFAULT_BOUND",
    "TIE_TOLERANCE",
    "EffectiveForce",
    "FitResult",
    "normalise",
    "effective_force",
    "predict_positions_batch",
    "chain_shapes",
    "fit_spring",
]

#: Horizon T (time units, = steps * step) at which fitted chains are observed.
DEFAULT_HORIZON = 1000.0
#: mu<- / mu->, fixed during the fit (DESIGN §2.1 phase-diagram default).
DEFAULT_MU_LEFT_RATIO = 2.0
#: Points of the starting grid along (mu->, s).
DEFAULT_GRID = (24, 24)
#: Default upper bound of mu-> and s, in units of k y. Mean-field error at
#: the bound is 8e-4 RMS (measured); beyond, it grows with s.
DEFAULT_BOUND = 0.1
#: Curves closer than this (RMS of normalised curves) count as the same fit;
#: used to report the smallest noise where the curve no longer depends on it.
TIE_TOLERANCE = 1e-6
#: The local fit of a curve stops when a step lowers its squared misfit by
#: less than this fraction (1e-4 of the cost is 5e-5 of the RMS residual;
#: small-residual fits converge quadratically and stop far below it).
COST_RTOL = 1e-4

_INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)


# --------------------------------------------------------------------------
# Normalisation and the equal-force (parabolic) family
# --------------------------------------------------------------------------


def _as_curves(load_curve, name: str = "load_curve") -> np.ndarray:
    try:
        d = np.asarray(load_curve, dtype=np.float64)
    except (TypeError, ValueError) as err:
        raise ValueError(f"{name} must be a numeric array (..., L+1); {err}") from None
    if d.ndim == 0 or d.shape[-1] < 3:
        raise ValueError(
            f"{name} must have at least 3 points (layers 0..L, L >= 2) along its last axis; "
            f"got shape {d.shape}"
        )
    return d


def normalise(load_curve, min_relative_drop: float = MIN_RELATIVE_DROP) -> np.ndarray:
    """Scale load curves to start at 1 and end at 0: (D - D_L) / (D_0 - D_L).

    ``load_curve`` (..., L+1) -> (..., L+1). A whole curve is NaN if any of
    its points is NaN/inf or if its drop is too small to divide by,
    |D_0 - D_L| < ``min_relative_drop`` * max|D| (the same rule as
    :func:`springblock.shared.loadcurve.curvature_scaled`). A rising curve is
    normalised by the same formula, so it too starts at 1 and ends at 0 (the
    fit then matches its reflected shape; check the sign of D_0 - D_L).
    """
    d = _as_curves(load_curve)
    with np.errstate(invalid="ignore", divide="ignore"):
        drop = d[..., 0] - d[..., -1]
        scale = np.max(np.abs(d), axis=-1)
        ok = (np.isfinite(d).all(axis=-1) & (np.abs(drop) > 0)
              & (np.abs(drop) >= min_relative_drop * scale))
        out = (d - d[..., -1:]) / drop[..., None]
    return np.where(ok[..., None], out, np.nan)


def _parabola_basis(n_points: int):
    """Line 1 - l/L and bump l (L - l) over l = 0..L: the equal-force family."""
    big_l = n_points - 1
    ell = np.arange(n_points, dtype=np.float64)
    return 1.0 - ell / big_l, ell * (big_l - ell)


class EffectiveForce(NamedTuple):
    """Best equal-force chain for each curve (:func:`effective_force`).

    force : (...) F_eff in force units (k y); > 0 concave, < 0 convex, -inf
        when the curve is more convex than any equal-force chain.
    residual : (...) RMS over the L+1 layers of normalised curve minus ``curve``.
    curve : (..., L+1) the equal-force chain's normalised load curve.
    """

    force: np.ndarray
    residual: np.ndarray
    curve: np.ndarray


def effective_force(load_curve, modulus: float = 1.0, target: float = 1.0) -> EffectiveForce:
    """Force F of the equal-force chain whose load curve best matches the shape.

    In an equal-force chain every block feels F, k (e_{l+1} - e_l) = F (paper
    Eqs. 7-8, :func:`springblock.theory.equal_force_state`), so
    x_l = l/(L+1) y - (F/k) l (L+1-l)/2 and the normalised load curve is

        n_l = 1 - x_l / x_L = (1 - l/L) + beta l (L - l),
        beta = (F/2) / x_L  <=>  F = k y 2 beta L / ((L+1) (1 + beta L)).   (2)

    The family is linear in beta, so the least-squares fit over layers is
    closed form; F(beta) is increasing on beta > -1/L (beta -> -1/L is all
    the drop in the first spring, F -> -inf). This is the paper's
    "effective friction": F_eff = mu-> for a noiseless chain.

    ``load_curve`` (..., L+1), any scale; NaN where :func:`normalise` is NaN.
    """
    n = normalise(load_curve)
    _check_positive(modulus, "modulus")
    if not (isinstance(target, (int, float, np.floating)) and math.isfinite(target)
            and target != 0):
        raise ValueError(f"target must be a finite non-zero number (got {target!r})")
    line, bump = _parabola_basis(n.shape[-1])
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


# --------------------------------------------------------------------------
# Batched mean-drift integrator
# --------------------------------------------------------------------------


def _drift(force, mu_right, mu_left, noise):
    """Mean drift h(F) of Eq. (1) for Gaussian noise; the dead zone at s = 0.

    Same function as :func:`springblock.theory.mean_drift` (Gaussian case),
    written out without its broadcasting checks because it is the inner loop.
    A tiny floor on s makes the s = 0 limit exact: u/s -> +-inf, Phi -> 0/1,
    phi -> 0, leaving max(u, 0) + min(v, 0).
    """
    s = np.maximum(noise, 1e-300)
    u = force - mu_right
    v = force + mu_left
    a = u / s
    b = v / s
    return (u * ndtr(a) + s * _INV_SQRT_2PI * np.exp(-0.5 * a * a)
            + v * ndtr(-b) - s * _INV_SQRT_2PI * np.exp(-0.5 * b * b))


def _rk4_times(horizon: float, max_step: float, first_step: float = 0.01,
               growth: float = 1.15) -> np.ndarray:
    """Step sizes (n,) summing to ``horizon``: ``first_step`` growing
    geometrically to ``max_step`` (see :func:`predict_positions_batch`)."""
    steps = []
    t, dt = 0.0, min(first_step, max_step)
    while t < horizon * (1 - 1e-12):
        dt_now = min(dt, horizon - t)
        steps.append(dt_now)
        t += dt_now
        dt = min(dt * growth, max_step)
    return np.asarray(steps)


def predict_positions_batch(blocks: int, mu_right, mu_left, noise, horizon: float, *,
                            modulus: float = 1.0, target: float = 1.0) -> np.ndarray:
    """Mean-field positions x_1..x_L at time ``horizon`` for many parameter sets.

    Integrates dx_l/dt = h(F_l(x)) (Eq. 1, Gaussian noise, no decay) from rest
    with classical RK4, all parameter sets at once. ``mu_right``, ``mu_left``,
    ``noise`` broadcast to a common shape (...); returns (..., L).

    Steps grow geometrically from 0.01 (the fast start from rest, where the
    last spring pulls with k y) to 2.5 / (k lambda_max), lambda_max < 4 the
    largest Laplacian eigenvalue. Why that is safe at any noise: the
    Jacobian of the right-hand side is D k Lap with D = diag(h'(F_l)) and
    0 <= h' = Phi((F - mu->)/s) + Phi(-(F + mu<-)/s) <= 1, so its eigenvalues
    are real in [-k lambda_max, 0], and RK4 is stable on [-2.785, 0]
    (10 % margin). Agrees with :func:`springblock.theory.predict_positions`
    (LSODA, rtol 1e-8) to ~3e-8, s = 0 included. Cost: 4 drift evaluations
    per step, ~1600 steps at T = 1000, k = 1 — about 0.15 s per call plus
    ~3 ms per parameter set (L = 7).
    """
    if not (isinstance(blocks, (int, np.integer)) and blocks >= 1):
        raise ValueError(f"blocks must be an integer >= 1 (got {blocks!r})")
    _check_positive(horizon, "horizon")
    _check_positive(modulus, "modulus")
    mu_r, mu_l, s = np.broadcast_arrays(*(np.asarray(v, dtype=np.float64)
                                          for v in (mu_right, mu_left, noise)))
    shape = mu_r.shape
    mu_r, mu_l, s = (a.reshape(-1, 1) for a in (mu_r, mu_l, s))
    n_sets = mu_r.shape[0]
    lam_max = laplacian_eigenvalues(blocks)[-1]
    max_step = 2.5 / (modulus * lam_max)
    padded = np.zeros((n_sets, blocks + 2))  # x_0 = 0 (wall) and x_{L+1} = y stay fixed
    padded[:, -1] = target

    def rhs(x):
        padded[:, 1:-1] = x
        force = modulus * (padded[:, 2:] - 2.0 * x + padded[:, :-2])
        return _drift(force, mu_r, mu_l, s)

    x = np.zeros((n_sets, blocks))
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        for dt in _rk4_times(float(horizon), max_step):
            k1 = rhs(x)
            k2 = rhs(x + 0.5 * dt * k1)
            k3 = rhs(x + 0.5 * dt * k2)
            k4 = rhs(x + dt * k3)
            x = x + (dt / 6.0) * (k1 + 2.0 * k2 + 2.0 * k3 + k4)
    return x.reshape(shape + (blocks,))


def _shape_of_positions(x: np.ndarray) -> np.ndarray:
    """Normalised load curve (..., L+1) of chain positions (..., L): 1 - x_l / x_L."""
    full = np.concatenate([np.zeros(x.shape[:-1] + (1,)), x], axis=-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return 1.0 - full / full[..., -1:]


def chain_shapes(blocks: int, mu_right, noise, *, horizon: float = DEFAULT_HORIZON,
                 mu_left_ratio: float = DEFAULT_MU_LEFT_RATIO,
                 modulus: float = 1.0) -> np.ndarray:
    """Normalised mean-field load curves (..., L+1) of chains with y = 1.

    The fit's model: mu<- = ``mu_left_ratio`` * mu->, Gaussian noise s,
    observed at ``horizon``. ``mu_right`` and ``noise`` broadcast.
    """
    mu_r = np.asarray(mu_right, dtype=np.float64)
    x = predict_positions_batch(blocks, mu_r, mu_left_ratio * mu_r, noise, horizon,
                                modulus=modulus)
    return _shape_of_positions(x)


# --------------------------------------------------------------------------
# The fit
# --------------------------------------------------------------------------


@dataclass
class FitResult:
    """Fitted chain parameters for load curves of leading shape (...).

    Parameters (forces in units of k y, y = 1):

    mu_right, mu_left, noise : (...) fitted mu->, mu<- (= ratio * mu->), s.
    residual : (...) RMS over the L+1 layers of (data - chain) normalised
        curves; from simulation where ``refined``.
    effective_force, effective_force_residual : (...) F_eff of the data and
        the RMS misfit of its equal-force chain (:func:`effective_force`).
    mu_right_se, noise_se : (...) local Gauss-Newton standard errors,
        sqrt(diag((J^T J)^-1) RSS / (L - 1 - p)), p free parameters; NaN for
        a fixed parameter, inf where the curve does not depend on it. They
        treat the misfit as independent noise on the L - 1 interior points:
        a guide to identifiability, not a calibrated interval.
    curve : (..., L+1) the fitted chain's normalised load curve.
    data : (..., L+1) the input, normalised.
    refined : (...) bool, whether the simulation refinement changed the fit.
    blocks, horizon, modulus, mu_left_ratio, step : the fixed settings.

    NaN input curves (or curves with no drop) give NaN everywhere (``refined``
    False).
    """

    mu_right: np.ndarray
    mu_left: np.ndarray
    noise: np.ndarray
    residual: np.ndarray
    effective_force: np.ndarray
    effective_force_residual: np.ndarray
    mu_right_se: np.ndarray
    noise_se: np.ndarray
    curve: np.ndarray
    data: np.ndarray
    refined: np.ndarray
    blocks: int
    horizon: float
    modulus: float
    mu_left_ratio: float
    step: float
    settings: dict = field(default_factory=dict)

    _PER_CELL = ("mu_right", "mu_left", "noise", "residual", "effective_force",
                 "effective_force_residual", "mu_right_se", "noise_se", "refined")
    _ATTRS = {
        "mu_right": ("fitted right friction mu->", "k y"),
        "mu_left": ("left friction mu<- = ratio * mu->", "k y"),
        "noise": ("fitted per-step force noise s", "k y"),
        "residual": ("RMS misfit of normalised load curves", "1"),
        "effective_force": ("effective force F_eff of the best equal-force chain", "k y"),
        "effective_force_residual": ("RMS misfit of the equal-force chain", "1"),
        "mu_right_se": ("standard error of mu-> (local, Gauss-Newton)", "k y"),
        "noise_se": ("standard error of s (local, Gauss-Newton)", "k y"),
        "refined": ("fit refined by simulation", "1"),
        "curve": ("fitted chain load curve, normalised", "1"),
        "data": ("input load curve, normalised", "1"),
    }

    def to_dataset(self, dims: Sequence[str] | None = None, coords: dict | None = None,
                   layer_dim: str = "layer") -> xr.Dataset:
        """Labelled result: one variable per field over ``dims`` (+ ``layer_dim``).

        ``dims`` names the leading axes (default ``dim_0, dim_1, ...``);
        ``coords`` is passed to :class:`xarray.Dataset` (e.g. the network
        sweep's ``{"alpha": ..., "dropout": ...}``). The fixed settings are
        attributes. Typical use::

            fit = fit_spring(ds["load_curve"].mean("seed").values)
            out = fit.to_dataset(dims=["alpha", "dropout"],
                                 coords={k: ds[k].values for k in ("alpha", "dropout")})
        """
        lead = self.mu_right.shape
        dims = [f"dim_{i}" for i in range(len(lead))] if dims is None else list(dims)
        if len(dims) != len(lead):
            raise ValueError(f"dims must name the {len(lead)} leading axes of shape {lead} "
                             f"(got {dims!r})")
        data_vars = {}
        for name in self._PER_CELL:
            long_name, units = self._ATTRS[name]
            data_vars[name] = (dims, getattr(self, name),
                               {"long_name": long_name, "units": units})
        for name in ("curve", "data"):
            long_name, units = self._ATTRS[name]
            data_vars[f"{name}_normalised" if name == "data" else "fit_curve"] = (
                dims + [layer_dim], getattr(self, name), {"long_name": long_name, "units": units})
        n_layers = self.curve.shape[-1]
        all_coords = {layer_dim: np.arange(n_layers)}
        all_coords.update(coords or {})
        ds = xr.Dataset(data_vars, coords=all_coords)
        ds.attrs.update({
            "model": "overdamped spring-block chain, Gaussian noise, mean-drift theory "
                     "(dnnphase.fit)",
            "blocks": self.blocks, "horizon": self.horizon, "modulus": self.modulus,
            "target": 1.0, "mu_left_ratio": self.mu_left_ratio, "step": self.step,
            "note": "F_eff is identifiable from a shape; (mu_right, noise) only up to the "
                    "standard errors given: read them together. Gaussian-noise fits are "
                    "finite-horizon objects: every value holds at horizon T.",
        })
        ds.attrs.update({k: v for k, v in self.settings.items()
                         if isinstance(v, (int, float, str))})
        return ds


def _check_positive(value, name: str) -> float:
    ok = isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, bool)
    if not ok or not math.isfinite(value) or value <= 0:
        raise ValueError(f"{name} must be a finite number > 0 (got {value!r})")
    return float(value)


def _check_bounds(bounds, modulus: float) -> tuple[tuple[float, float], tuple[float, float]]:
    if bounds is None:
        return (0.0, DEFAULT_BOUND * modulus), (0.0, DEFAULT_BOUND * modulus)
    try:
        (a, b), (c, d) = bounds
        vals = [float(v) for v in (a, b, c, d)]
    except (TypeError, ValueError):
        raise ValueError("bounds must be ((mu_right_min, mu_right_max), (noise_min, noise_max)) "
                         f"(got {bounds!r})") from None
    a, b, c, d = vals
    if not all(math.isfinite(v) for v in vals) or not (0 <= a < b and 0 <= c < d):
        raise ValueError("bounds must be finite with 0 <= min < max for mu_right and noise "
                         f"(got {bounds!r})")
    return (a, b), (c, d)


def _noise_axis(lo: float, hi: float, n: int) -> np.ndarray:
    """Grid of s: the lower bound plus geometric spacing up to ``hi``.

    The curve changes with s on a log scale (relaxation ~ Phi(-a/s)), so
    geometric spacing; its smallest positive value is hi / 300 when lo = 0.
    """
    start = lo if lo > 0 else hi / 300.0
    rest = np.geomspace(start, hi, n - 1)
    return np.unique(np.concatenate([[lo], rest]))


@functools.lru_cache(maxsize=16)
def _grid(blocks, modulus, horizon, ratio, mu_fixed, bounds, grid):
    """Starting grid, cached: mus (A,), noises (B,), shapes (A, B, L+1) and
    their effective forces (A, B). A = 1 when mu-> is fixed."""
    (mu_lo, mu_hi), (s_lo, s_hi) = bounds
    noise = _noise_axis(s_lo, s_hi, grid[1])
    mus = np.array([mu_fixed]) if mu_fixed is not None else np.linspace(mu_lo, mu_hi, grid[0])
    shapes = chain_shapes(blocks, mus[:, None], noise[None, :], horizon=horizon,
                          mu_left_ratio=ratio, modulus=modulus)
    forces = effective_force(shapes, modulus=modulus).force
    for a in (mus, noise, shapes, forces):
        a.setflags(write=False)
    return mus, noise, shapes, forces


class _Model:
    """Normalised chain shape as a function of the free parameters z (K, m)."""

    def __init__(self, blocks, modulus, horizon, ratio, mu_fixed):
        self.blocks, self.modulus, self.horizon, self.ratio = blocks, modulus, horizon, ratio
        self.mu_fixed = mu_fixed

    def full(self, z: np.ndarray) -> np.ndarray:
        """(K, m) free parameters -> (K, 2) (mu->, s)."""
        if self.mu_fixed is None:
            return z
        return np.column_stack([np.full(len(z), self.mu_fixed), z[:, 0]])

    def __call__(self, z: np.ndarray) -> np.ndarray:
        p = self.full(z)
        if len(p) == 0:
            return np.zeros((0, self.blocks + 1))
        return chain_shapes(self.blocks, p[:, 0], p[:, 1], horizon=self.horizon,
                            mu_left_ratio=self.ratio, modulus=self.modulus)


def _with_jacobian(model, z, lo, hi):
    """Model curves (K, n) at z (K, m) and their forward-difference Jacobian (K, n, m).

    One batched integration of the K (m + 1) parameter sets. Step 1e-5 of the
    bound width (inwards at the upper bound): the model is smooth in
    (mu->, s) for s > 0, and the integrator's error is itself a smooth
    function of the parameters (the same step sequence for every set), so
    the differences resolve even the weak direction (~1e-3 of the strong one).
    """
    k, m = z.shape
    h = 1e-5 * (hi - lo)
    steps = np.where(z + h > hi, -h, h)  # (K, m)
    pert = z[:, None, :] + np.eye(m)[None] * steps[:, None, :]  # (K, m, m)
    f = model(np.concatenate([z[:, None, :], pert], axis=1).reshape(-1, m)).reshape(k, m + 1, -1)
    jac = np.transpose((f[:, 1:] - f[:, :1]) / steps[:, :, None], (0, 2, 1))
    return f[:, 0], jac


def _levenberg_marquardt(model, data, z0, lo, hi, max_iter, owner=None):
    """Bounded Levenberg-Marquardt for many independent small problems at once.

    Minimises ||model(z) - data||^2 per row of ``data`` (K, n) over z (K, m)
    in the box [lo, hi]. Each iteration solves
    (J^T J + lam diag(J^T J)) dz = -J^T r for the free components (those not
    pinned at a bound by an outward gradient) and projects onto the box. The
    trial point is integrated together with its Jacobian (one batched call
    per iteration); it is accepted if the cost falls, and lam shrinks
    (x 1/10) where the linear model predicted the gain well, grows (x 4)
    where it did not, and grows x 10 on rejection (the old Jacobian is
    kept). A row stops when a step lowers, or the linear model promises to
    lower, the cost by < ``COST_RTOL`` relative, when the step is < 1e-9 of
    the bound width, or lam > 1e4. Returns z, the model curves at z and the
    Jacobian there. ``owner`` (K,) groups rows that are starts for the same
    curve: once one of them fits exactly (cost < 1e-24), the others stop.
    """
    n_rows, m = z0.shape
    owner = np.arange(n_rows) if owner is None else owner
    z = z0.copy()
    f, jac = _with_jacobian(model, z, lo, hi)
    cost = np.sum((f - data) ** 2, axis=1)
    # Small initial damping: along the weak direction J^T J is ~1e-5 of its
    # strong eigenvalue, and a large lam would crawl along the valley.
    lam = np.full(n_rows, 1e-6)
    active = cost > 1e-26
    eye = np.eye(m)
    for _ in range(max_iter):
        idx = np.flatnonzero(active)
        if idx.size == 0:
            break
        j, r, zi = jac[idx], f[idx] - data[idx], z[idx]
        grad = np.einsum("knm,kn->km", j, r)
        hess = np.einsum("knm,knp->kmp", j, j)
        pinned = ((zi <= lo) & (grad > 0)) | ((zi >= hi) & (grad < 0))
        keep = ~pinned
        diag = np.einsum("kmm->km", hess)
        damped = (np.where(keep[:, :, None] & keep[:, None, :], hess, 0.0)
                  + eye * (lam[idx, None] * diag + 1e-30 + pinned)[:, None, :])
        step = -np.linalg.solve(damped, np.where(keep, grad, 0.0)[..., None])[..., 0]
        trial = np.clip(zi + step, lo, hi)
        # Reduction of the squared misfit that the linear model promises:
        # |r + J dz|^2 = |r|^2 + 2 g.dz + dz.H.dz (dz after projection)
        dz = trial - zi
        promised = -(2.0 * np.einsum("km,km->k", grad, dz)
                     + np.einsum("km,kmp,kp->k", dz, hess, dz))
        f_trial, jac_trial = _with_jacobian(model, trial, lo, hi)
        cost_trial = np.sum((f_trial - data[idx]) ** 2, axis=1)
        actual = cost[idx] - cost_trial
        better = actual > 0
        good = idx[better]
        gain = actual[better]
        z[good], f[good], jac[good] = trial[better], f_trial[better], jac_trial[better]
        cost[good] = cost_trial[better]
        # Trust the linear model more only where it predicted the gain well
        # (ratio > 0.75); large-residual fits along the weak direction zigzag
        # otherwise.
        ratio = np.where(promised > 0, actual / np.maximum(promised, 1e-300), 0.0)
        lam[good] = np.where(ratio[better] > 0.75, np.maximum(lam[good] / 10.0, 1e-12),
                             np.where(ratio[better] < 0.25, lam[good] * 4.0, lam[good]))
        lam[idx[~better]] *= 10.0
        moved = np.max(np.abs(dz) / (hi - lo), axis=1)
        done = np.zeros(idx.size, dtype=bool)
        done[better] = gain <= COST_RTOL * cost[good]
        done |= (promised <= COST_RTOL * cost[idx]) | (lam[idx] > 1e4) | (moved < 1e-9)
        done |= cost[idx] < 1e-26
        active[idx[done]] = False
        solved = np.unique(owner[cost < 1e-24])
        active &= ~np.isin(owner, solved)
    return z, f, jac


def _smallest_equivalent_noise(model_full, params, curves, s_lo, tol, points=8, rounds=6):
    """Lower s to the smallest value whose shape is within ``tol`` RMS of ``curves``.

    For rows of ``params`` (K, 2) where the shape no longer depends on s
    (fully relaxed chains, or mu-> = 0). Searches log s in [s / 1e4, s]:
    each round integrates ``points`` candidates per row in one batch and
    keeps the interval just below the smallest close one (resolution
    ln(1e4) / points^rounds, ~4e-5 relative in s).
    """
    k = len(params)

    def dist(mu, s):
        shapes = model_full(np.column_stack([mu, s]))
        return np.sqrt(np.mean((shapes - np.repeat(curves, len(s) // k, axis=0)) ** 2, axis=1))

    s_fit = params[:, 1].copy()
    at_lo = dist(params[:, 0], np.full(k, s_lo)) <= tol
    lo = np.log(np.maximum(np.maximum(s_lo, s_fit * 1e-4), 1e-300))
    hi = np.log(s_fit)
    frac = np.linspace(0.0, 1.0, points)
    for _ in range(rounds):
        grid = lo[:, None] + (hi - lo)[:, None] * frac[None, :]  # (K, points)
        close = (dist(np.repeat(params[:, 0], points), np.exp(grid).ravel()) <= tol)
        close = close.reshape(k, points)
        close[:, -1] = True  # the fitted s itself
        first = np.argmax(close, axis=1)
        hi = grid[np.arange(k), first]
        lo = grid[np.arange(k), np.maximum(first - 1, 0)]
    return np.where(at_lo, s_lo, np.exp(hi))


def _standard_errors(jac, residual_sq, n_points, scale):
    """Gauss-Newton standard errors (K, m) in parameter units."""
    k, _, m = jac.shape
    dof = (n_points - 2) - m  # end points are fixed by the normalisation
    out = np.full((k, m), np.nan)
    if dof <= 0:
        return out
    sigma2 = residual_sq / dof
    hess = np.einsum("knm,knp->kmp", jac, jac)
    cov = np.linalg.pinv(hess, hermitian=True)
    var = np.einsum("kmm->km", cov) * sigma2[:, None]
    # A column of (almost) zeros: the curve does not depend on that parameter.
    col = np.sqrt(np.einsum("knm,knm->km", jac, jac))
    flat = col * scale < 1e-9
    return np.where(flat, np.inf, np.sqrt(np.maximum(var, 0.0)))


def _off_parabola(diff):
    """RMS over layers of curve differences (..., L+1) after removing their
    component along the equal-force bump l (L - l) — the strong direction of
    the fit (F_eff); what is left separates points along a valley of
    constant F_eff."""
    _, bump = _parabola_basis(diff.shape[-1])
    along = (diff @ bump) / (bump @ bump)
    return np.sqrt(np.mean((diff - along[..., None] * bump) ** 2, axis=-1))


def _valley_points(data, force, grid, s_lo):
    """Points on each grid row mu_i where the chain's F_eff equals the data's.

    F_eff falls monotonically with s at fixed mu-> (measured on the grid
    rows), so along each row the crossing is found by linear interpolation
    between the two grid noises that bracket it, and the shape there by the
    same interpolation. Returns params (K, A, 2) and the approximate
    :func:`_off_parabola` misfits (K, A), inf where the row cannot reach the
    data's F_eff.
    """
    mus, noise, shapes, forces = grid
    n_rows, n_s = forces.shape
    above = forces[None, :, :] >= force[:, None, None]  # (K, A, B)
    count = above.sum(axis=2)  # grid noises with F_eff >= the data's
    ok = (count >= 1) & (count <= n_s - 1)
    j = np.clip(count - 1, 0, n_s - 2)  # bracket [j, j+1]
    rows = np.arange(n_rows)[None, :]
    f0, f1 = forces[rows, j], forces[rows, j + 1]
    with np.errstate(invalid="ignore", divide="ignore"):
        w = np.clip((f0 - force[:, None]) / (f0 - f1), 0.0, 1.0)
    shape = (1 - w)[..., None] * shapes[rows, j] + w[..., None] * shapes[rows, j + 1]
    s0, s1 = noise[j], noise[j + 1]
    # geometric interpolation where both noises are positive (the grid's spacing)
    with np.errstate(divide="ignore", invalid="ignore"):
        s_geo = np.exp((1 - w) * np.log(s0) + w * np.log(s1))
    s_val = np.where(s0 > 0, s_geo, (1 - w) * s0 + w * s1)
    s_val = np.maximum(s_val, s_lo)
    misfit = _off_parabola(shape - data[:, None, :])
    misfit = np.where(ok & np.isfinite(misfit), misfit, np.inf)
    params = np.stack([np.broadcast_to(mus[None, :], s_val.shape), s_val], axis=2)
    return params, misfit


def _starting_points(data, force, model, mu_fixed, ratio, mu_bounds, s_bounds, grid,
                     n_starts=2):
    """Starts of the local fit: rows of (mu->, s), and the curve each serves.

    The misfit along the valley of constant F_eff can have more than one
    local minimum (e.g. a partly relaxed chain and a fully relaxed one with
    smaller mu->), and a plain grid is too coarse across the valley to rank
    them. Candidates per curve: the nearest grid point; the three lowest
    local minima along the valley (:func:`_valley_points`); and, when mu->
    is fitted, the valley's closed-form ends — the noiseless chain
    (mu-> = F_eff, s = s_min; an exact parabola) and the fully relaxed one
    (mu-> = -2 F_eff / (ratio - 1), s = s_max). The candidates are
    integrated exactly and the ``n_starts`` best distinct ones kept, ranked
    by their misfit off the parabola direction (:func:`_off_parabola`): that
    part does not care how exactly a candidate sits on the valley (the grid's
    s spacing leaves interpolated points up to ~10 % of F_eff off it), and
    the local fit corrects F_eff in one or two steps.
    """
    mus, noise, shapes, forces = grid
    (mu_lo, mu_hi), (s_lo, s_hi) = mu_bounds, s_bounds
    k = len(data)
    flat_shapes = shapes.reshape(-1, shapes.shape[-1])
    # squared distances to every grid curve, (K, G), by expansion
    dist = ((data * data).sum(1)[:, None] + (flat_shapes * flat_shapes).sum(1)[None, :]
            - 2.0 * data @ flat_shapes.T)
    dist = np.where(np.isfinite(dist), dist, np.inf)
    best = np.argmin(dist, axis=1)
    grid_start = np.column_stack([mus[best // len(noise)], noise[best % len(noise)]])

    cands = []
    vparams, vmisfit = _valley_points(data, force, grid, s_lo)
    padded = np.pad(vmisfit, ((0, 0), (1, 1)), constant_values=np.inf)
    local_min = ((vmisfit <= padded[:, :-2]) & (vmisfit <= padded[:, 2:])
                 & np.isfinite(vmisfit))
    ranked = np.argsort(np.where(local_min, vmisfit, np.inf), axis=1)[:, :3]
    for c in range(ranked.shape[1]):
        pick = vparams[np.arange(k), ranked[:, c]]
        usable = local_min[np.arange(k), ranked[:, c]]
        cands.append(np.where(usable[:, None], pick, np.nan))
    if mu_fixed is None:
        cands.append(np.column_stack([force, np.full(k, s_lo)]))
        with np.errstate(divide="ignore", invalid="ignore"):
            relaxed = -2.0 * force / (ratio - 1.0) if ratio > 1 else np.full(k, np.nan)
        cands.append(np.column_stack([relaxed, np.full(k, s_hi)]))
    cand = np.stack(cands, axis=1)  # (K, C, 2)
    cand[..., 1] = np.clip(cand[..., 1], s_lo, s_hi)
    if mu_fixed is None:
        inside = np.isfinite(cand[..., 0]) & (cand[..., 0] >= mu_lo) & (cand[..., 0] <= mu_hi)
    else:
        inside = np.isfinite(cand[..., 1])
        cand[..., 0] = mu_fixed
    misfit = np.full(inside.shape, np.inf)
    which = np.flatnonzero(inside.ravel())
    if which.size:
        owner = which // cand.shape[1]
        shapes_c = model(cand.reshape(-1, 2)[which])
        misfit.ravel()[which] = _off_parabola(shapes_c - data[owner])
    # all candidates, ranked by their exact off-parabola misfit; grid point first
    cand = np.concatenate([grid_start[:, None, :], cand], axis=1)
    grid_misfit = _off_parabola(flat_shapes[best] - data)
    misfit = np.concatenate([grid_misfit[:, None], misfit], axis=1)
    order = np.argsort(misfit, axis=1, kind="stable")
    is_valley = np.zeros(cand.shape[1], dtype=bool)
    is_valley[1:1 + ranked.shape[1]] = True
    width = np.array([mu_hi - mu_lo, s_hi - s_lo])
    starts, owners = [], []
    for row in range(k):
        usable = [c for c in order[row] if np.isfinite(misfit[row, c])]
        # the best candidate, then the best valley point (the ends of a valley
        # are plateaus a local fit cannot leave), then the rest in order
        preferred = usable[:1] + [c for c in usable if is_valley[c]][:1] + usable[1:]
        kept = []
        for c in preferred:
            p = cand[row, c]
            if all(np.any(np.abs(p - q) > 1e-3 * width) for q in kept):
                kept.append(p)
            if len(kept) == n_starts:
                break
        starts.extend(kept)
        owners.extend([row] * len(kept))
    return np.array(starts).reshape(-1, 2), np.array(owners, dtype=np.int64)


def fit_spring(
    load_curves,
    *,
    modulus: float = 1.0,
    horizon: float = DEFAULT_HORIZON,
    mu_left_ratio: float = DEFAULT_MU_LEFT_RATIO,
    mu_right: float | None = None,
    bounds=None,
    grid: tuple[int, int] = DEFAULT_GRID,
    refine: str = "theory",
    refine_threshold: float = 1e-3,
    sim_seeds: int = 16,
    sim_iterations: int = 2,
    step: float = 0.01,
    max_iter: int = 40,
) -> FitResult:
    """Fit (mu->, s) of a spring-block chain to each load curve's shape.

    Parameters
    ----------
    load_curves : array (..., L+1)
        D_0..D_L per curve, any scale (normalised here); the chain gets L
        blocks. NaN curves give NaN results.
    modulus : k (> 0). Forces are reported in units of k y with y = 1.
    horizon : T (> 0), time at which the chain is observed (fixed; see the
        module docstring: T and s are not separately identifiable).
    mu_left_ratio : mu<- / mu-> (>= 0), fixed.
    mu_right : None to fit mu->, or a fixed value (then only s is fitted:
        one well-conditioned parameter; use when the standard errors show the
        (mu->, s) split is not determined).
    bounds : ((mu_min, mu_max), (s_min, s_max)), default ((0, 0.1 k), (0, 0.1 k)).
    grid : (n_mu, n_s) starting grid points, each >= 2.
    refine : "theory" (mean-drift model only) or "simulation" (then also
        correct the mean-field bias by simulating, for curves with theory
        residual > ``refine_threshold``, ``sim_seeds`` seeds per chain with
        time step ``step``, ``sim_iterations`` defect-correction steps).
    max_iter : Levenberg-Marquardt iterations.

    Returns
    -------
    :class:`FitResult` with arrays of the leading shape (...).

    Pass all curves in one call: the integrations are batched, and a call
    costs ~0.15 s per optimiser iteration whatever its size. Example (a
    network sweep with dims (alpha, dropout, seed, layer))::

        curves = ds["load_curve"].mean("seed")                 # (alpha, dropout, layer)
        res = fit_spring(curves.values)
        out = res.to_dataset(dims=["alpha", "dropout"],
                             coords={d: ds[d].values for d in ("alpha", "dropout")})
        out["effective_force"]   # the identifiable "effective friction" per cell
    """
    _check_positive(modulus, "modulus")
    _check_positive(horizon, "horizon")
    if not (isinstance(mu_left_ratio, (int, float, np.integer, np.floating))
            and not isinstance(mu_left_ratio, bool)
            and math.isfinite(mu_left_ratio) and mu_left_ratio >= 0):
        raise ValueError(f"mu_left_ratio must be a finite number >= 0 (got {mu_left_ratio!r})")
    (mu_lo, mu_hi), (s_lo, s_hi) = _check_bounds(bounds, modulus)
    if mu_right is not None:
        if not (isinstance(mu_right, (int, float, np.integer, np.floating))
                and not isinstance(mu_right, bool) and math.isfinite(mu_right)
                and mu_right >= 0):
            raise ValueError(f"mu_right must be None or a finite number >= 0 (got {mu_right!r})")
        mu_right = float(mu_right)
    try:
        n_mu, n_s = (int(g) for g in grid)
        grid_ok = all(int(g) == g for g in grid) and n_mu >= 2 and n_s >= 2
    except (TypeError, ValueError):
        grid_ok = False
    if not grid_ok:
        raise ValueError(f"grid must be two integers >= 2, (n_mu, n_s) (got {grid!r})")
    if refine not in ("theory", "simulation"):
        raise ValueError(f"refine must be 'theory' or 'simulation' (got {refine!r})")
    if not (isinstance(refine_threshold, (int, float)) and refine_threshold >= 0):
        raise ValueError(f"refine_threshold must be a number >= 0 (got {refine_threshold!r})")
    if not (isinstance(sim_seeds, (int, np.integer)) and sim_seeds >= 1):
        raise ValueError(f"sim_seeds must be an integer >= 1 (got {sim_seeds!r})")
    if not (isinstance(sim_iterations, (int, np.integer)) and sim_iterations >= 1):
        raise ValueError(f"sim_iterations must be an integer >= 1 (got {sim_iterations!r})")
    if not (isinstance(max_iter, (int, np.integer)) and max_iter >= 1):
        raise ValueError(f"max_iter must be an integer >= 1 (got {max_iter!r})")
    _check_positive(step, "step")
    n_steps = horizon / step
    if refine == "simulation" and abs(n_steps - round(n_steps)) > 1e-9 * n_steps:
        raise ValueError(f"horizon must be a whole number of steps of size step={step} "
                         f"for refine='simulation' (got horizon={horizon})")

    data = normalise(load_curves)
    lead, n_points = data.shape[:-1], data.shape[-1]
    blocks = n_points - 1
    flat = data.reshape(-1, n_points)
    ok = np.isfinite(flat).all(axis=1)
    eff = effective_force(load_curves, modulus=modulus)

    n_cells = flat.shape[0]
    params = np.full((n_cells, 2), np.nan)
    fitted = np.full((n_cells, n_points), np.nan)
    resid = np.full(n_cells, np.nan)
    se = np.full((n_cells, 2), np.nan)
    refined = np.zeros(n_cells, dtype=bool)

    mu_fixed = mu_right
    free = [0, 1] if mu_fixed is None else [1]
    lo = np.array([mu_lo, s_lo])[free]
    hi = np.array([mu_hi, s_hi])[free]
    model = _Model(blocks, float(modulus), float(horizon), float(mu_left_ratio), mu_fixed)
    full_model = _Model(blocks, float(modulus), float(horizon), float(mu_left_ratio), None)

    rows = np.flatnonzero(ok)
    if rows.size:
        d = flat[rows]
        grid_pts = _grid(blocks, float(modulus), float(horizon), float(mu_left_ratio), mu_fixed,
                         ((mu_lo, mu_hi), (s_lo, s_hi)), (n_mu, n_s))
        starts, owner = _starting_points(d, eff.force.reshape(-1)[rows], full_model, mu_fixed,
                                         mu_left_ratio, (mu_lo, mu_hi), (s_lo, s_hi), grid_pts)
        # 2. bounded LM on the mean-drift model, all starts of all curves together;
        #    keep each curve's best end point
        z_all, f_all, jac_all = _levenberg_marquardt(model, d[owner], starts[:, free], lo, hi,
                                                     max_iter, owner)
        cost_all = np.sum((f_all - d[owner]) ** 2, axis=1)
        order = np.lexsort((cost_all, owner))  # by curve, then by cost
        first = order[np.r_[True, owner[order][1:] != owner[order][:-1]]]
        z, f, jac = z_all[first], f_all[first], jac_all[first]
        p = model.full(z)
        # 3. where the shape ignores s (log-sensitivity s |dn/ds| < 1e-5 RMS),
        #    report the smallest equivalent s
        sens = np.sqrt(np.mean(jac[:, :, -1] ** 2, axis=1)) * np.maximum(p[:, 1] - s_lo, 0.0)
        flat_s = (p[:, 1] > s_lo) & (sens < 1e-5)
        if flat_s.any():
            p[flat_s, 1] = _smallest_equivalent_noise(full_model, p[flat_s], f[flat_s], s_lo,
                                                      TIE_TOLERANCE)
            f[flat_s], jac[flat_s] = _with_jacobian(model, p[flat_s][:, free], lo, hi)
        rss = np.sum((f - d) ** 2, axis=1)
        se_free = _standard_errors(jac, rss, n_points, hi - lo)
        params[rows], fitted[rows] = p, f
        resid[rows] = np.sqrt(rss / n_points)
        se[np.ix_(rows, free)] = se_free
        # 4. optional simulation refinement
        if refine == "simulation":
            poor = rows[resid[rows] > refine_threshold]
            if poor.size:
                sel = np.searchsorted(rows, poor)
                new_p, new_f, new_r, changed = _refine_by_simulation(
                    flat[poor], params[poor], jac[sel], free, lo, hi, blocks, modulus,
                    horizon, mu_left_ratio, step, sim_seeds, sim_iterations)
                params[poor], fitted[poor], resid[poor] = new_p, new_f, new_r
                refined[poor] = changed

    def shaped(a):
        return a.reshape(lead + a.shape[1:])

    settings = {"grid_mu": n_mu, "grid_noise": n_s, "refine": refine,
                "bound_mu_right_min": mu_lo, "bound_mu_right_max": mu_hi,
                "bound_noise_min": s_lo, "bound_noise_max": s_hi,
                "fixed_mu_right": "no" if mu_fixed is None else mu_fixed}
    return FitResult(
        mu_right=shaped(params[:, 0]),
        mu_left=shaped(params[:, 0] * mu_left_ratio),
        noise=shaped(params[:, 1]),
        residual=shaped(resid),
        effective_force=eff.force,
        effective_force_residual=eff.residual,
        mu_right_se=shaped(se[:, 0]),
        noise_se=shaped(se[:, 1]),
        curve=shaped(fitted),
        data=data,
        refined=shaped(refined),
        blocks=blocks,
        horizon=float(horizon),
        modulus=float(modulus),
        mu_left_ratio=float(mu_left_ratio),
        step=float(step),
        settings=settings,
    )


def _simulated_shapes(params, blocks, modulus, horizon, ratio, step, seeds):
    """Seed-mean normalised load curves (K, L+1) of simulated chains (K, 2)."""
    from springblock.config import ChainConfig
    from springblock.ensemble import run_ensemble

    steps = int(round(horizon / step))
    configs = [ChainConfig(blocks=blocks, mu_right=float(mr), mu_left=float(ratio * mr),
                           noise=float(s), modulus=float(modulus), step=float(step),
                           steps=steps)
               for mr, s in params for _ in range(seeds)]
    # The same seeds for every parameter set (common random numbers): the
    # difference between two sets is then a smooth function of the parameters.
    seed_ids = np.tile(np.arange(seeds), len(params))
    x = run_ensemble(configs, seed_ids).positions.reshape(len(params), seeds, blocks)
    return _shape_of_positions(x.mean(axis=1))


def _refine_by_simulation(data, params, jac, free, lo, hi, blocks, modulus, horizon, ratio,
                          step, seeds, iterations):
    """Defect correction: Gauss-Newton steps on the *simulated* residual.

    z <- z - (J^T J + lam diag)^-1 J^T (sim(z) - data), with J the theory
    Jacobian (noise-free, and the simulation differs from the theory by a
    smooth bias of <= 8e-4, so its derivatives are nearly the same). A step
    is kept only if the simulated residual falls. Returns parameters (K, 2),
    simulated curves, residuals and whether anything changed.
    """
    def sim(p):
        return _simulated_shapes(p, blocks, modulus, horizon, ratio, step, seeds)

    p = params.copy()
    f = sim(p)
    cost = np.sum((f - data) ** 2, axis=1)
    changed = np.zeros(len(p), dtype=bool)
    m = len(free)
    hess = np.einsum("knm,knp->kmp", jac, jac)
    damped = hess + np.eye(m) * (1e-3 * np.einsum("kmm->km", hess) + 1e-30)[:, None, :]
    for _ in range(iterations):
        grad = np.einsum("knm,kn->km", jac, f - data)
        z = np.clip(p[:, free] - np.linalg.solve(damped, grad[..., None])[..., 0], lo, hi)
        trial = p.copy()
        trial[:, free] = z
        f_trial = sim(trial)
        cost_trial = np.sum((f_trial - data) ** 2, axis=1)
        better = cost_trial < cost
        p[better], f[better], cost[better] = trial[better], f_trial[better], cost_trial[better]
        changed |= better
    return p, f, np.sqrt(cost / data.shape[1]), changed
