"""Shape of a load curve: curvature and linearity (pure numpy, no numba).

A load curve is D_0..D_L along its last axis: the separation left at each
layer of a network (D_0 the input) or d_l = y - x_l of a spring-block chain
(d_0 = y, the wall). It normally decreases with depth. Shared by
``springblock`` and ``dnnphase`` — both sides use these exact functions.

All functions accept arrays of shape ``(..., L + 1)`` and reduce the last axis.

Sign convention (paper): negative curvature = concave = deep layers separate
more (lazy training); zero = linear (equi-separation); positive = convex.
"""

from __future__ import annotations

import numpy as np

from phasecore.checks import is_finite, require

__all__ = ["MIN_DROP_SHARE", "MIN_RELATIVE_DROP", "PHASE_TOLERANCE", "check_tolerance", "curvature",
           "curvature_scaled", "far_out_fences", "linearity", "phase_label", "separates"]

#: Relative size of the total drop D_0 - D_L below which the scale-free
#: curvature is undefined (NaN): dividing by a near-zero drop amplifies noise
#: into huge values.
MIN_RELATIVE_DROP = 1e-3


def _as_curves(load_curve) -> np.ndarray:
    d = np.asarray(load_curve, dtype=np.float64)
    if d.ndim == 0 or d.shape[-1] < 3:
        raise ValueError(
            f"load_curve: need at least 3 points along the last axis (layers 0..L, L >= 2), "
            f"got shape {d.shape}"
        )
    return d


def curvature(load_curve) -> np.ndarray:
    """The paper's curvature of a load curve, shape ``(...)``.

    g_l = D_l - D_{l+1} (separation gained by layer l+1), and
    c = sum_l (g_l - g_{l+1}) = g_0 - g_{L-1}: the first layer's gain minus
    the last layer's. Kept exactly as the paper's code defines it, for
    comparability; it uses only the two end segments and has the units of D.
    For a chain, c = e_1 - e_L (first minus last spring elongation).

    Parameters
    ----------
    load_curve : array_like, (..., L+1)
        Load curves D_0..D_L (L >= 2).

    Returns
    -------
    numpy.ndarray
        (...) the curvature, in the units of D.
    """
    d = _as_curves(load_curve)
    gain = d[..., :-1] - d[..., 1:]
    return gain[..., 0] - gain[..., -1]


def curvature_scaled(load_curve, min_relative_drop: float = MIN_RELATIVE_DROP) -> np.ndarray:
    """Scale-free curvature using every point, shape ``(...)``.

    Least-squares fit D(u) ~ a0 + a1 u + a2 u^2 over u = l / L in [0, 1], and
    return a2 / (D_0 - D_L). Dimensionless, invariant to rescaling or shifting
    D and to the number of layers; for an exact parabola through (0, 1) and
    (1, 0) it lies in [-1, 1] while the curve stays monotone. NaN where
    |D_0 - D_L| < ``min_relative_drop`` * max|D| (no drop to compare with).

    Parameters
    ----------
    load_curve : array_like, (..., L+1)
        Load curves D_0..D_L (L >= 2).
    min_relative_drop : float, default 0.001
        The smallest |D_0 - D_L| / max|D| divided by; a smaller drop gives NaN.

    Returns
    -------
    numpy.ndarray
        (...) the scale-free curvature: < 0 concave, 0 linear, > 0 convex.
    """
    d = _as_curves(load_curve)
    n = d.shape[-1]
    u = np.arange(n) / (n - 1)
    design = np.stack([np.ones(n), u, u * u], axis=1)  # (L+1, 3)
    flat = d.reshape(-1, n)
    coef, *_ = np.linalg.lstsq(design, flat.T, rcond=None)  # (3, B)
    a2 = coef[2].reshape(d.shape[:-1])
    drop = d[..., 0] - d[..., -1]
    scale = np.max(np.abs(d), axis=-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        out = a2 / drop
    return np.where(np.abs(drop) >= min_relative_drop * scale, out, np.nan)


def linearity(load_curve) -> dict[str, np.ndarray]:
    """Equi-separation measures of He & Su, each of shape ``(...)``.

    * ``pearson_r``: correlation of D_l with l (-1 for a perfectly linear
      decrease).
    * ``decay_ratio``: exp(slope) of the least-squares line D_l ~ a + b l.
      When D is the log of a separation fuzziness (as in the network metrics),
      this is He & Su's per-layer contraction ratio rho.
    * ``half_life``: ln 2 / (-slope), the number of layers that halve the
      fuzziness; inf if the curve does not decrease.

    Parameters
    ----------
    load_curve : array_like, (..., L+1)
        Load curves D_0..D_L.

    Returns
    -------
    dict of str to numpy.ndarray
        ``pearson_r``, ``decay_ratio`` and ``half_life``, each (...).
    """
    d = _as_curves(load_curve)
    n = d.shape[-1]
    layer = np.arange(n, dtype=np.float64)
    lc = layer - layer.mean()
    dc = d - d.mean(axis=-1, keepdims=True)
    slope = (dc @ lc) / (lc @ lc)
    with np.errstate(invalid="ignore", divide="ignore"):
        r = (dc @ lc) / np.sqrt((dc * dc).sum(axis=-1) * (lc @ lc))
        half_life = np.where(slope < 0, np.log(2.0) / -slope, np.inf)
    return {"pearson_r": r, "decay_ratio": np.exp(slope), "half_life": half_life}


#: Default half-width of the band of scale-free curvature called "linear".
PHASE_TOLERANCE = 0.05


def check_tolerance(tolerance) -> float:
    """The linear band's half-width: in [0, 1). An exact parabola's scale-free curvature
    is +-1, so a band of 1 or more calls every clearly curved load curve linear (and a
    report's text would then contradict its own figures)."""
    require(is_finite(tolerance) and 0 <= tolerance < 1, "tolerance",
            "a number in [0, 1) (an exact parabola's scale-free curvature is +-1)", tolerance)
    return float(tolerance)


def phase_label(curv_scaled, tolerance: float = PHASE_TOLERANCE) -> np.ndarray:
    """-1 concave, 0 linear, +1 convex from a scale-free curvature; NaN stays NaN.

    Parameters
    ----------
    curv_scaled : array_like, (...)
        Scale-free curvatures (:func:`curvature_scaled`).
    tolerance : float, default 0.05
        The half-width of the band around zero called linear.

    Returns
    -------
    numpy.ndarray
        (...) -1.0, 0.0, +1.0 or NaN.
    """
    check_tolerance(tolerance)
    c = np.asarray(curv_scaled, dtype=np.float64)
    label = np.sign(c) * (np.abs(c) > tolerance)
    return np.where(np.isnan(c), np.nan, label)


def far_out_fences(values) -> tuple[float, float]:
    """Tukey's far-out fences (q1 - 3 IQR, q3 + 3 IQR) of the finite ``values``.

    Scale-free curvatures beyond them belong to networks that barely separate
    their classes (a tiny drop makes the curvature reach -90 where the rest lie
    within +-2): fits and colour scales leave them out. (nan, nan) if none is finite.
    """
    v = np.asarray(values, dtype=float).ravel()
    v = v[np.isfinite(v)]
    if not v.size:
        return np.nan, np.nan
    q1, q3 = np.quantile(v, [0.25, 0.75])
    return float(q1 - 3 * (q3 - q1)), float(q3 + 3 * (q3 - q1))


#: A load curve "separates" when its drop D_0 - D_L is at least this share of the median
#: drop of its diagram (:func:`separates`).
MIN_DROP_SHARE = 0.1


def separates(drop, share: float = MIN_DROP_SHARE) -> np.ndarray:
    """Whether each cell's load curve separates the classes at all, from its drop
    D_0 - D_L (any shape; one diagram's cells): at least ``share`` of the median finite
    drop of the diagram. A curve that barely drops, or rises (a network that noise kept
    from separating: ReLU at lr 0.5, batch 5), has a shape of noise and a scale-free
    curvature that means nothing; figures mark it instead of shading its curvature.
    NaN drops count as not separating."""
    d = np.asarray(drop, dtype=float)
    finite = d[np.isfinite(d)]
    if not finite.size:
        return np.zeros(d.shape, dtype=bool)
    with np.errstate(invalid="ignore"):
        return np.isfinite(d) & (d > 0) & (d >= share * np.median(finite))
