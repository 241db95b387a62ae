"""Two readings of one load curve, and which of them finds the best-accuracy cell.

* The spring–block reading: a load curve is *linear* when its scale-free curvature
  (:func:`phasecore.loadcurve.curvature_scaled`) is 0; a row's chosen cell is its most linear
  one, seed-mean curvature nearest 0.
* He & Su's reading (law of equi-separation): each layer multiplies the separation by the same
  factor, so log-separation falls linearly with depth and its Pearson r against the layer index
  is −1 (:func:`phasecore.loadcurve.linearity`). The measures' load curves are logs already
  (the fuzziness is log Tr(Σ_w Σ_b⁺), the trace ratio log(Tr Σ_w / Tr Σ_b)), so r is taken of
  the curve as it is. A row's chosen cell is the one whose seed-mean r is nearest −1.

Both are *scores* whose seed mean nearest 0 picks a row's cell: the curvature itself, and
:func:`equiseparation_score` = 1 + r (r >= −1, so |mean(1 + r)| nearest 0 is mean r nearest
−1). A score array (R, C, S) therefore goes through the ledger's rule unchanged
(:func:`phaseclaims.rules.linear_best`: a row is a hit when its chosen cell ties
with its best accuracy), and :func:`compare_readings` sets readings side by side: their hits,
the rows where they choose the same cell, and the difference of hits with a paired interval
(the same seed draws for every reading,
:func:`dnnphase.compare.scrutiny.measure_agreement.seed_draws`).
"""

from __future__ import annotations

import numpy as np

from dnnphase.compare.scrutiny.measure_agreement import seed_draws, seed_mean
from phaseclaims.rules import linear_best
from phasecore.checks import check_int, require
from phasecore.loadcurve import linearity

__all__ = ["chosen_columns", "compare_readings", "equiseparation_score"]


def equiseparation_score(load_curve: np.ndarray) -> np.ndarray:
    """1 + Pearson r of each load curve against its layer index.

    Parameters
    ----------
    load_curve : ndarray, shape (..., L + 1)
        D_0 … D_L, a log-separation per layer (at least 3 layers).

    Returns
    -------
    ndarray, shape (...)
        In [0, 2]: 0 for a curve falling exactly linearly with depth (He & Su's
        equi-separation), 2 for one rising exactly linearly; NaN for a constant curve.
    """
    return 1.0 + linearity(load_curve)["pearson_r"]


def chosen_columns(score: np.ndarray) -> np.ndarray:
    """Per row, the column whose seed-mean score is nearest 0.

    Parameters
    ----------
    score : ndarray, shape (R, C, S)
        Per seed; e.g. the scale-free curvature or :func:`equiseparation_score`.

    Returns
    -------
    ndarray of int, shape (R,)
        The chosen column of each row (the first on a tie); -1 where a row has no finite
        seed mean. The same choice as the rule of :mod:`phaseclaims.rules`.
    """
    s = np.asarray(score, dtype=float)
    require(s.ndim == 3, "score", "an array (R, C, S) of rows, columns and seeds", s.shape)
    mean = np.abs(seed_mean(s))  # (R, C)
    out = np.full(s.shape[0], -1)
    for i, row in enumerate(mean):
        if np.isfinite(row).any():
            out[i] = int(np.nanargmin(row))
    return out


def compare_readings(scores: dict[str, np.ndarray], accuracy: np.ndarray, values: np.ndarray,
                     *, log_scale: bool = False, n_boot: int = 400,
                     seed: int = 0) -> dict[str, dict]:
    """Several readings of one diagram, each through the ledger's hit rule, the first as the
    reference of the others.

    Parameters
    ----------
    scores : dict of str to ndarray, shape (R, C, S)
        Reading name -> its per-seed score (the seed mean nearest 0 is a row's choice), rows
        and columns oriented as ``accuracy``'s (columns with the knob getting noisier). At
        least one; the first is the reference.
    accuracy : ndarray, shape (R, C, S)
        Per-seed test accuracy (a fraction).
    values : ndarray, shape (C,)
        The knob's value of each column.
    log_scale : bool
        The knob spans decades (passed on to the rule).
    n_boot, seed : int
        Resamples of the seed indices and their generator (the same draws for every reading
        and for :func:`linear_best`'s own intervals).

    Returns
    -------
    dict of str to dict
        Per reading, over every row with a finite score (no linear band: a score other than
        a curvature has none): ``hits``, ``rows``, ``chance``, ``hits_low``, ``hits_high``,
        ``verdict`` (from :func:`linear_best`), ``chosen`` (R,) its columns, ``same``: the
        fraction of rows where it chooses the reference's column (rows where both choose
        one), ``minus``: the reference's hits minus its own, ``minus_boot`` (n_boot,) that
        difference in each paired resample (empty with one seed), and ``minus_low`` /
        ``minus_high``: its 95 % interval.
    """
    require(isinstance(scores, dict) and len(scores) > 0, "scores",
            "a non-empty dict of reading name -> (R, C, S) array", type(scores).__name__)
    acc = np.asarray(accuracy, dtype=float)
    require(acc.ndim == 3, "accuracy", "an array (R, C, S)", acc.shape)
    for name, score in scores.items():
        require(np.shape(score) == acc.shape, f"scores[{name!r}]",
                f"the shape of accuracy, {acc.shape}", np.shape(score))
    require(np.shape(values) == (acc.shape[1],), "values", f"shape ({acc.shape[1]},)",
            np.shape(values))
    check_int("n_boot", n_boot, minimum=0)
    names = list(scores)
    arrays = {k: np.asarray(v, dtype=float) for k, v in scores.items()}
    out = {}
    for name in names:
        # band=None: every row with a finite score is judged. The linear band is the
        # curvature's: He & Su's score 1 + r never changes sign, so with it a row whose r
        # stays above -0.95 would be dropped as "no linear cell" and the readings would be
        # counted over different rows.
        result = linear_best(arrays[name], acc, values, log_scale=log_scale, n_boot=n_boot,
                             seed=seed, band=None)
        out[name] = {k: result[k] for k in ("hits", "rows", "chance", "hits_low",
                                            "hits_high", "verdict")}
        out[name]["chosen"] = chosen_columns(arrays[name])
    boot = np.array([[linear_best(arrays[k][..., pick], acc[..., pick], values,
                                  log_scale=log_scale, n_boot=0, band=None)["hits"]
                      for k in names]
                     for pick in seed_draws(acc.shape[2], n_boot, seed)], dtype=float)
    boot = boot.reshape(-1, len(names))  # (B, readings)
    reference = out[names[0]]
    for k, name in enumerate(names):
        both = (reference["chosen"] >= 0) & (out[name]["chosen"] >= 0)
        out[name]["same"] = (float(np.mean(reference["chosen"][both] == out[name]["chosen"][both]))
                             if both.any() else np.nan)
        out[name]["minus"] = reference["hits"] - out[name]["hits"]
        diff = boot[:, 0] - boot[:, k]
        out[name]["minus_boot"] = diff
        low, high = np.quantile(diff, [0.025, 0.975]) if diff.size else (np.nan, np.nan)
        out[name]["minus_low"], out[name]["minus_high"] = float(low), float(high)
    return out
