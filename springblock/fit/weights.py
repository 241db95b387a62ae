"""``seed_weights``: inverse variances of seed-mean load curves, the weights of
:func:`springblock.fit.trajectory.fit_trajectory` (``docs/fit.md``, "Weights")."""

from __future__ import annotations

import numpy as np

from phasecore.checks import require

__all__ = ["seed_weights"]


def seed_weights(curves_per_seed, *, seed_axis: int = -3, floor: float = 1e-12):
    """Inverse variances (..., E, L+1) of seed-mean curves, one per frame, pooled.

    ``curves_per_seed`` (..., S, E, L+1) with S >= 2 seeds on ``seed_axis``.
    The variance of a point is estimated from the seed spread pooled over
    every leading cell and every layer of a frame (so two seeds suffice),
    divided by S; floored at ``floor``. Every frame gets its weight, an
    epoch-0 frame included: :func:`fit_trajectory` takes weights for all the
    frames it is given and leaves that one out itself.

    Parameters
    ----------
    curves_per_seed : array_like, (..., S, E, L+1)
        Load curves of S >= 2 seeds, E frames (epochs) and L+1 layers.
    seed_axis : int, default -3
        The axis of the seeds.
    floor : float, default 1e-12
        The smallest variance (no infinite weight).

    Returns
    -------
    numpy.ndarray
        (..., E, L+1) the weights, 1 / variance of each seed-mean point.
    """
    d = np.moveaxis(np.asarray(curves_per_seed, dtype=np.float64), seed_axis, -3)
    require(d.ndim >= 3 and d.shape[-3] >= 2, "curves_per_seed",
            "at least 2 seeds along seed_axis", d.shape)
    n_seeds = d.shape[-3]
    with np.errstate(invalid="ignore"):
        var = np.nanvar(d, axis=-3, ddof=1)  # (..., E, L+1)
    pooled = np.nanmean(var.reshape((-1,) + var.shape[-2:]), axis=(0, 2))  # (E,)
    pooled = np.where(np.isfinite(pooled), pooled, np.nanmax(pooled))
    w = 1.0 / np.maximum(pooled / n_seeds, floor)
    return np.broadcast_to(w[:, None], var.shape).copy()
