"""A trajectory fit's state while it runs (:func:`springblock.fit.trajectory.fit_trajectory`):
what it fits (:class:`FitProblem`), its estimates so far (:class:`FitEstimates`), and
both assembled into the result, a :class:`~springblock.fit.trajectory_result.TrajectoryFit`
(:func:`assemble`)."""

from __future__ import annotations

import dataclasses
import warnings
from collections.abc import Callable

import numpy as np

from springblock.fit.trajectory_result import TrajectoryFit

__all__ = ["FitEstimates", "FitProblem", "assemble"]


@dataclasses.dataclass(frozen=True)
class FitProblem:
    """What one call fits, fixed once the arguments are checked: the cells' data frames as
    rows (``flat`` (cells, E, L+1)), their weights (0 where missing) and degrees of
    freedom (cells,), the chain seen through them (``model``), the log-parameter box
    ``lo``, ``hi`` (P,), and the setting the result reports."""

    model: Callable  # (log parameters (K, P), cell rows (K,)) -> fitted curves (K, E (L+1))
    flat: np.ndarray
    weights: np.ndarray
    dof: np.ndarray
    lo: np.ndarray
    hi: np.ndarray
    lead: tuple  # the leading shape (...) of the cells
    epochs: np.ndarray  # the fitted frames' epochs (E,)
    blocks: int
    modulus: float
    bounds: dict
    params: tuple
    start: str
    origin: float
    acceptable_chi2: float


@dataclasses.dataclass(frozen=True)
class FitEstimates:
    """The fit of every cell (NaN where not fitted), arrays that profiling updates in place:
    log-parameters ``est``, their standard errors ``se`` and interval ends ``z_lo``,
    ``z_hi`` (cells, P), the misfit ``rss`` (cells,) and the ``fitted`` curves
    (cells, E, L+1)."""

    est: np.ndarray
    se: np.ndarray
    rss: np.ndarray
    fitted: np.ndarray
    z_lo: np.ndarray
    z_hi: np.ndarray

    @classmethod
    def unfitted(cls, flat: np.ndarray, n_free: int) -> FitEstimates:
        """NaN throughout, for the cells of ``flat`` (cells, E, L+1) and ``n_free``
        parameters. The fitted curves take ``flat``'s memory layout (the residuals' sums
        run in its order, to the last bit)."""
        est = np.full((len(flat), n_free), np.nan)
        return cls(est, np.full_like(est, np.nan), np.full(len(flat), np.nan),
                   np.full_like(flat, np.nan), np.full_like(est, np.nan),
                   np.full_like(est, np.nan))


def assemble(problem: FitProblem, fit: FitEstimates, acceptable) -> TrajectoryFit:
    """Flags and residuals (in units of each cell's final drop); reshape to the leading shape.
    ``acceptable`` (cells,): the cells the chain explains."""
    flat, w, lo, hi = problem.flat, problem.weights, problem.lo, problem.hi
    est, se, rss, fitted, z_lo, z_hi = fit.est, fit.se, fit.rss, fit.fitted, fit.z_lo, fit.z_hi
    tol = 1e-6 * (hi - lo)
    nan = np.isnan(est)
    unbounded = ((z_lo <= lo + tol) | (z_hi >= hi - tol)) & ~nan
    at_bound = ((est <= lo + tol) | (est >= hi - tol)) & ~nan
    low = np.where(nan, np.nan, np.exp(np.clip(z_lo, lo, hi)))
    high = np.where(nan, np.nan, np.exp(np.clip(z_hi, lo, hi)))
    with np.errstate(invalid="ignore", divide="ignore"):
        drop = np.abs(flat[:, -1, 0] - flat[:, -1, -1])[:, None, None]
        diff = np.where(w > 0, (fitted - flat) / drop, np.nan)
        with warnings.catch_warnings():  # a cell left unfitted is NaN, said once by the fit
            warnings.simplefilter("ignore", RuntimeWarning)
            frame = np.sqrt(np.nanmean(diff ** 2, axis=2))
            resid = np.sqrt(np.nanmean(diff ** 2, axis=(1, 2)))
        chi2 = rss / np.maximum(problem.dof, 1)

    def shaped(a):
        return a.reshape(problem.lead + a.shape[1:])

    return TrajectoryFit(
        estimate=shaped(np.exp(est)), low=shaped(low), high=shaped(high),
        unbounded=shaped(unbounded), at_bound=shaped(at_bound), log_se=shaped(se),
        residual=shaped(resid), frame_residual=shaped(frame), chi2_per_dof=shaped(chi2),
        observations=shaped(flat), fitted=shaped(fitted), epochs=problem.epochs,
        blocks=problem.blocks, modulus=float(problem.modulus), bounds=problem.bounds,
        params=problem.params, start=problem.start, origin=problem.origin,
        acceptable=shaped(acceptable), acceptable_chi2=float(problem.acceptable_chi2))

