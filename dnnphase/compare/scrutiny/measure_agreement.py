"""Two separation measures of the same networks, cell by cell: do their phase diagrams agree?

Each network of a diagram is measured twice (e.g. the trace ratio of paper Eq. 3 and the
fuzziness of Eq. 9), so the two measures' curvatures come in pairs, one pair per model. Per
cell (one nonlinearity and one knob value) the seed-mean scale-free curvature of each measure
gives a phase label (-1 concave, 0 linear, +1 convex;
:func:`phasecore.loadcurve.phase_label`), and:

* :func:`agreement_statistics` — on seed-mean curvatures (K,): the fraction of cells whose labels
  agree, Cohen's kappa of the labels (:func:`dnnphase.compare.comparator.agreement.cohen_kappa`) and
  the Spearman rank correlation of the curvatures over cells;
* :func:`seed_draws` — resamples of the seed indices, drawn with replacement, the same draw
  for every cell (the generator sequence of :func:`phaseclaims.rules.linear_best`);
* :func:`measure_agreement` — the three statistics on per-seed curvatures (..., S) with a 95 %
  interval over those draws; the same draw serves both measures, since a seed is one network;
* :func:`setting_divergence` — a few single settings (no diagram: e.g. the linear network's
  three runs): per setting, do the two measures' labels differ, or is one measure's seed-mean
  load curve flat where the other's is not?

Pure numpy and scipy; no files.
"""

from __future__ import annotations

import warnings

import numpy as np
from scipy import stats

from dnnphase.compare.comparator.agreement import cohen_kappa
from phasecore.checks import check_int, is_finite, require
from phasecore.loadcurve import PHASE_TOLERANCE, check_tolerance, curvature_scaled, phase_label

__all__ = ["FLAT_DROP", "STATISTICS", "agreement_statistics", "measure_agreement",
           "relative_drop", "seed_draws", "seed_mean", "setting_divergence"]

#: The statistics :func:`measure_agreement` returns, each with ``_low`` and ``_high``.
STATISTICS = ("agreement", "kappa", "rho")
#: A load curve is *flat* when its drop |D_0 - D_L| is below this share of max_l |D_l|.
FLAT_DROP = 0.1


def seed_mean(curvature: np.ndarray) -> np.ndarray:
    """Seed-mean of per-seed values (..., S) over the last axis, NaN seeds left out; (...,).
    A cell whose seeds are all NaN is NaN."""
    values = np.asarray(curvature, dtype=float)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN cells stay NaN
        return np.nanmean(values, axis=-1)


def seed_draws(n_seeds: int, n_boot: int, seed: int = 0) -> np.ndarray:
    """Resampled seed indices, shape (n_boot, n_seeds): each row ``n_seeds`` indices in
    [0, n_seeds) drawn with replacement, row b from ``default_rng(seed)``'s b-th call of
    ``integers(0, n_seeds, n_seeds)`` (the draws of
    :func:`phaseclaims.rules.linear_best` with the same ``seed``). No rows when
    ``n_seeds`` < 2 (one seed has no spread to resample)."""
    check_int("n_seeds", n_seeds, minimum=1)
    check_int("n_boot", n_boot, minimum=0)
    rng = np.random.default_rng(seed)
    rows = [rng.integers(0, n_seeds, n_seeds) for _ in range(n_boot if n_seeds > 1 else 0)]
    return np.array(rows, dtype=int).reshape(len(rows), n_seeds)


def _spearman(a: np.ndarray, b: np.ndarray) -> float:
    ok = np.isfinite(a) & np.isfinite(b)
    if ok.sum() < 3 or np.ptp(a[ok]) == 0 or np.ptp(b[ok]) == 0:
        return np.nan
    return float(stats.spearmanr(a[ok], b[ok]).statistic)


def agreement_statistics(mean_a: np.ndarray, mean_b: np.ndarray,
                         tolerance: float = PHASE_TOLERANCE) -> dict[str, float]:
    """How two measures' seed-mean curvatures agree over cells.

    Parameters
    ----------
    mean_a, mean_b : ndarray, shape (K,) or any shape, the same for both
        Seed-mean scale-free curvature of each cell under measure a and measure b
        (dimensionless); NaN where a cell has none.
    tolerance : float
        Half-width of the band of curvature called linear, in [0, 1).

    Returns
    -------
    dict
        ``agreement``: the fraction of cells, among those where both labels exist, whose
        labels are equal; ``kappa``: Cohen's kappa of the labels (NaN when both measures give
        one label everywhere); ``rho``: Spearman's rank correlation of the two curvatures over
        the cells where both are finite (NaN with fewer than 3 or no spread); ``n_cells``:
        the cells where both exist.
    """
    check_tolerance(tolerance)
    a = np.asarray(mean_a, dtype=float).ravel()
    b = np.asarray(mean_b, dtype=float).ravel()
    require(a.shape == b.shape, "mean_b", f"the shape of mean_a, {np.shape(mean_a)}",
            np.shape(mean_b))
    la, lb = phase_label(a, tolerance), phase_label(b, tolerance)
    both = np.isfinite(la) & np.isfinite(lb)
    n = int(both.sum())
    return {"agreement": float(np.mean(la[both] == lb[both])) if n else np.nan,
            "kappa": cohen_kappa(la, lb), "rho": _spearman(a, b), "n_cells": n}


def measure_agreement(curvature_a: np.ndarray, curvature_b: np.ndarray, *,
                      tolerance: float = PHASE_TOLERANCE, n_boot: int = 400,
                      seed: int = 0) -> dict[str, float]:
    """:func:`agreement_statistics` of two measures of the same networks, with intervals
    that resample seeds.

    Parameters
    ----------
    curvature_a, curvature_b : ndarray, shape (..., S)
        Per-seed scale-free curvature of every cell (leading axes: the cells, any number)
        under each measure; entry [..., s] of both arrays is the same network.
    tolerance : float
        The linear band's half-width, in [0, 1).
    n_boot : int
        Resamples of the seed indices (:func:`seed_draws`), >= 0; 0 gives no interval.
    seed : int
        The resamples' generator seed.

    Returns
    -------
    dict
        Every key of :func:`agreement_statistics` on the seed means, and for each of
        :data:`STATISTICS` its ``_low`` and ``_high``: the 2.5 and 97.5 percentiles over the
        resamples (NaN statistics left out; NaN without resamples).
    """
    a = np.asarray(curvature_a, dtype=float)
    b = np.asarray(curvature_b, dtype=float)
    require(a.ndim >= 2, "curvature_a", "an array (..., S) of cells by seeds", a.shape)
    require(a.shape == b.shape, "curvature_b", f"the shape of curvature_a, {a.shape}", b.shape)
    check_tolerance(tolerance)
    draws = seed_draws(a.shape[-1], n_boot, seed)
    out: dict[str, float] = agreement_statistics(seed_mean(a), seed_mean(b), tolerance)
    boot = np.array([[agreement_statistics(seed_mean(a[..., pick]), seed_mean(b[..., pick]),
                                           tolerance)[k] for k in STATISTICS]
                     for pick in draws]).reshape(len(draws), len(STATISTICS))
    for k, name in enumerate(STATISTICS):
        column = boot[:, k][np.isfinite(boot[:, k])]
        low, high = np.quantile(column, [0.025, 0.975]) if column.size else (np.nan, np.nan)
        out[f"{name}_low"], out[f"{name}_high"] = float(low), float(high)
    return out


def relative_drop(load_curve: np.ndarray) -> np.ndarray:
    """|D_0 - D_L| / max_l |D_l| of each load curve (..., L + 1) -> (...); NaN where the
    curve is 0 everywhere or not finite."""
    d = np.asarray(load_curve, dtype=float)
    require(d.ndim >= 1 and d.shape[-1] >= 2, "load_curve", "an array (..., L + 1), L >= 1",
            d.shape)
    with np.errstate(invalid="ignore", divide="ignore"):
        out = np.abs(d[..., 0] - d[..., -1]) / np.max(np.abs(d), axis=-1)
    return np.where(np.isfinite(out), out, np.nan)


def _diverging(curves_a, curves_b, tolerance, flat) -> dict[str, np.ndarray]:
    """Per setting (G,): labels, relative drops and the divergence flag of seed means."""
    la = phase_label(seed_mean(curvature_scaled(curves_a)), tolerance)  # (G,)
    lb = phase_label(seed_mean(curvature_scaled(curves_b)), tolerance)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        drop_a = relative_drop(np.nanmean(curves_a, axis=1))  # seed-mean curve (G, L+1)
        drop_b = relative_drop(np.nanmean(curves_b, axis=1))
    differ = np.isfinite(la) & np.isfinite(lb) & (la != lb)
    flat_b_only = (drop_b < flat) & (drop_a >= flat)
    return {"label_a": la, "label_b": lb, "drop_a": drop_a, "drop_b": drop_b,
            "diverges": (differ | flat_b_only).astype(float)}


def setting_divergence(curves_a: np.ndarray, curves_b: np.ndarray, *,
                       tolerance: float = PHASE_TOLERANCE, flat: float = FLAT_DROP,
                       n_boot: int = 400, seed: int = 0) -> dict[str, np.ndarray]:
    """Where two measures of the same runs part, setting by setting.

    A setting *diverges* when the two measures' seed-mean phase labels (of the seed-mean
    scale-free curvature) differ, or when measure b's seed-mean load curve is flat
    (:func:`relative_drop` < ``flat``) while measure a's is not.

    Parameters
    ----------
    curves_a, curves_b : ndarray, shape (G, S, L + 1)
        Per setting and seed, each measure's load curve D_0 … D_L (entry [g, s] of both the
        same network).
    tolerance : float
        The linear band's half-width, in [0, 1).
    flat : float
        The relative drop below which a curve is flat, in (0, 1].
    n_boot, seed : int
        Resamples of the seed indices (:func:`seed_draws`, the same draw for every setting).

    Returns
    -------
    dict
        (G,) arrays ``label_a``, ``label_b`` (-1, 0, +1 or NaN), ``drop_a``, ``drop_b``,
        ``diverges`` (1.0 or 0.0); and ``n_diverging`` (the count, a float) with
        ``n_diverging_low`` / ``n_diverging_high``, its 95 % interval over the resamples.
    """
    a = np.asarray(curves_a, dtype=float)
    b = np.asarray(curves_b, dtype=float)
    require(a.ndim == 3 and a.shape[-1] >= 3, "curves_a",
            "an array (G, S, L + 1) of settings, seeds and at least 3 layers", a.shape)
    require(a.shape == b.shape, "curves_b", f"the shape of curves_a, {a.shape}", b.shape)
    check_tolerance(tolerance)
    require(is_finite(flat) and 0 < flat <= 1, "flat", "a share in (0, 1]", flat)
    out = _diverging(a, b, tolerance, flat)
    out["n_diverging"] = float(out["diverges"].sum())
    counts = [_diverging(a[:, pick], b[:, pick], tolerance, flat)["diverges"].sum()
              for pick in seed_draws(a.shape[1], n_boot, seed)]
    low, high = np.quantile(counts, [0.025, 0.975]) if counts else (np.nan, np.nan)
    out["n_diverging_low"], out["n_diverging_high"] = float(low), float(high)
    return out
