"""The rule for a diagram's monotone trends (Figs. 1 and 3: "increasing nonlinearity results in
increasingly concave load curves", "adding noise ... convex"), over the whole grid rather than
two corners.

Per line of the grid (a row: one nonlinearity, the noise across; a column: one noise, the
nonlinearity down), the Spearman ρ of the seed-mean scale-free curvature against the line's
position; per direction, ρ̄: the mean over lines whose seed means are finite and not all
equal. The claimed signs: ρ̄ > 0 along noise (noisier → more convex) and ρ̄ < 0 along
nonlinearity (more nonlinear → more concave); :func:`trends` reports each direction's ρ̄
with the claimed sign made positive (+1: the claimed trend in every line). Its 95 %
interval resamples the seed indices (the same draw for every cell; 400 draws).

A direction is **monotone** when its interval lies above 0.5 (the comparison report's
threshold for a sign along a line, ``sign_rho_threshold``), **not monotone** when it lies
below 0.5, and **undecided** when it straddles 0.5. Verdict: **holds** when both directions
are monotone; **partly** when one is and the other is not; **differs** when neither is;
**undecided** when either straddles.
"""

from __future__ import annotations

import numpy as np

from phasecore.checks import require

__all__ = ["THRESHOLD", "describe", "direction_status", "mean_rho", "spearman_rho",
           "trend_verdict", "trends"]

#: A direction's mean ρ must lie above this to be monotone.
THRESHOLD = 0.5


def _average_ranks(values: np.ndarray) -> np.ndarray:
    """Ranks 1..n along the last axis, tied values sharing their ranks' mean (scipy's
    ``rankdata(method="average")``): a value's rank is the count of smaller values plus
    (the count of equal ones, itself included, + 1) / 2. Lines are short (a diagram's
    rows or columns), so the n × n comparison costs nothing."""
    smaller = (values[..., None, :] < values[..., :, None]).sum(axis=-1)
    equal = (values[..., None, :] == values[..., :, None]).sum(axis=-1)
    return smaller + (equal + 1) / 2.0


def spearman_rho(values: np.ndarray) -> np.ndarray:
    """The Spearman ρ of each line of ``values`` against its position along it.

    Parameters
    ----------
    values : ndarray, shape (..., n)
        Finite, n >= 2, not all equal along a line.

    Returns
    -------
    ndarray, shape (...)
        ρ per line: the Pearson r of the average ranks (:func:`_average_ranks`) against
        1..n. ``scipy.stats.spearmanr(np.arange(n), line).statistic`` to the last bit: ranks
        are multiples of 1/2 and their mean is (n + 1)/2, so every sum below is exact in
        any order, and the remaining steps are numpy's ``corrcoef``'s, in its order.
    """
    values = np.asarray(values, dtype=float)
    n = values.shape[-1]
    ranks = _average_ranks(values)
    position = np.arange(1.0, n + 1)
    dy = ranks - ranks.mean(axis=-1, keepdims=True)
    dx = position - position.mean()
    scale = np.true_divide(1, n - 1)  # numpy.cov's 1 / (n - ddof), applied as it does
    cov = (dy * dx).sum(axis=-1) * scale
    rho = cov / np.sqrt((dy * dy).sum(axis=-1) * scale) / np.sqrt((dx * dx).sum() * scale)
    return np.clip(rho, -1, 1)


def mean_rho(mean: np.ndarray, axis: int) -> float:
    """The mean Spearman ρ of ``mean`` (R, C) against position along ``axis`` (1: along
    each row, 0: along each column), over lines with at least 3 finite values not all
    equal, a line's NaN left out (NaN where there is none)."""
    lines = np.asarray(mean if axis == 1 else mean.T, dtype=float)
    finite = np.isfinite(lines)
    rho = np.full(lines.shape[0], np.nan)
    whole = finite.all(axis=1)  # the usual case, every line at once
    if lines.shape[1] >= 3:
        spread = whole.copy()
        spread[whole] = np.ptp(lines[whole], axis=1) > 0
        rho[spread] = spearman_rho(lines[spread])
    for i in np.flatnonzero(~whole):  # lines with a NaN: their finite values
        line = lines[i][finite[i]]
        if line.size >= 3 and np.ptp(line) > 0:
            rho[i] = spearman_rho(line)
    kept = rho[np.isfinite(rho)]  # in line order, as the mean over a list of them
    return float(np.mean(kept)) if kept.size else np.nan


def trends(curvature: np.ndarray, n_boot: int = 400, seed: int = 0) -> dict:
    """Both directions' mean ρ (claimed sign made positive) and their intervals.

    Parameters
    ----------
    curvature : ndarray, shape (R, C, S)
        Per seed; rows in increasing nonlinearity (friction), columns in increasing noise.
    n_boot, seed : int
        Seed resamples (the same draw for every cell) and their generator.

    Returns
    -------
    dict
        ``noise`` and ``nonlinearity``: each ``(rho, low, high)``; ``lines``: the rows and
        columns counted.
    """
    c = np.asarray(curvature, dtype=float)
    require(c.ndim == 3, "curvature", "an array (R, C, S)", c.shape)
    with np.errstate(invalid="ignore"):
        def both(cells):
            mean = np.nanmean(cells, axis=2)
            return mean_rho(mean, 1), -mean_rho(mean, 0)

        point = both(c)
        rng = np.random.default_rng(seed)
        boot = np.array([both(c[..., rng.integers(0, c.shape[2], c.shape[2])])
                         for _ in range(n_boot if c.shape[2] > 1 else 0)]).reshape(-1, 2)
    out = {}
    for k, name in enumerate(("noise", "nonlinearity")):
        finite = boot[np.isfinite(boot[:, k]), k]
        low, high = np.quantile(finite, [0.025, 0.975]) if finite.size else (np.nan, np.nan)
        out[name] = (point[k], float(low), float(high))
    out["lines"] = c.shape[:2]
    return out


def direction_status(low: float, high: float) -> str:
    """"monotone" (interval above :data:`THRESHOLD`), "not monotone" (below it) or
    "undecided" (straddling it, or no interval)."""
    if np.isfinite(low) and low > THRESHOLD:
        return "monotone"
    if np.isfinite(high) and high < THRESHOLD:
        return "not monotone"
    return "undecided"


def trend_verdict(noise: tuple, nonlinearity: tuple) -> str:
    """The rule's verdict from both directions' ``(rho, low, high)`` (module doc)."""
    status = [direction_status(d[1], d[2]) for d in (noise, nonlinearity)]
    if "undecided" in status:
        return "undecided"
    k = status.count("monotone")
    return "holds" if k == 2 else "partly" if k == 1 else "differs"


def describe(result: dict, what: str = "nonlinearity") -> str:
    """``ours`` text: both directions' ρ̄ (claimed sign positive) with intervals; ``what``
    names the second direction (the chain's: friction)."""
    parts = []
    for name, words in (("noise", "along noise (noisier → more convex)"),
                        ("nonlinearity", f"along {what} (more {what} → more concave)")):
        rho, low, high = result[name]
        parts.append(f"{words}: mean Spearman ρ {rho:+.2f} [{low:+.2f}, {high:+.2f}]")
    return "; ".join(parts)
