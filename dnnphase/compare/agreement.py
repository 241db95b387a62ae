"""How far two oriented phase diagrams agree: label agreement and rank correlations.

* Cohen's kappa of phase labels (-1 concave, 0 linear, +1 convex): agreement
  beyond what the two label frequencies give by chance;
* Spearman rank correlations of mean curvature along every row (noise axis)
  and every column (nonlinearity axis) of a diagram — the theory predicts
  positive along noise and negative along nonlinearity, for networks and chain.
"""

from __future__ import annotations

import numpy as np
from scipy import stats


def cohen_kappa(a: np.ndarray, b: np.ndarray) -> float:
    """Agreement beyond chance between two label arrays (NaN entries ignored)."""
    ok = np.isfinite(a) & np.isfinite(b)
    a, b = a[ok], b[ok]
    if a.size == 0:
        return np.nan
    observed = np.mean(a == b)
    chance = sum(np.mean(a == v) * np.mean(b == v) for v in (-1, 0, 1))
    return float((observed - chance) / (1 - chance)) if chance < 1 else np.nan


def rank_correlations(curv: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Spearman rho of curvature (R, C) along each row (vs column index) and column.

    Returns (rows (R,), cols (C,)); NaN where a line has < 3 finite cells or
    no variation.
    """
    def rho(values):
        ok = np.isfinite(values)
        if ok.sum() < 3 or np.ptp(values[ok]) == 0:
            return np.nan
        return stats.spearmanr(np.arange(values.size)[ok], values[ok]).statistic

    rows = np.array([rho(curv[i]) for i in range(curv.shape[0])])
    cols = np.array([rho(curv[:, j]) for j in range(curv.shape[1])])
    return rows, cols
