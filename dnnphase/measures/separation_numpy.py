"""Layerwise separation metrics and load curves of a deep network (docs/measures.md).

Every function takes the features of one layer, ``features`` of shape (N, d)
(N samples, d units), and the class ``labels`` of shape (N,), as numpy arrays
or torch tensors (any device or dtype). Torch input is converted to numpy at
the boundary and all arithmetic, covariances included, runs in float64: the
metrics are logs of ratios of variances that may differ by many orders of
magnitude between the input and the last layer, and float32 sums over
thousands of samples would blur them. Labels may be any values (class ids need
not be 0..K-1 or contiguous); the classes are the distinct values present.

Notation (paper Eq. 2): class c has n_c samples with mean μ_c, the
global mean is μ, and

    Σ_b = (1/N) Σ_c n_c (μ_c − μ)(μ_c − μ)ᵀ            between-class, rank ≤ K − 1
    Σ_w = (1/N) Σ_c Σ_{i∈c} (h_i − μ_c)(h_i − μ_c)ᵀ    within-class

Scalar measures (one number per layer; see ``MEASURES``):

* ``trace_ratio``  log(Tr Σ_w / Tr Σ_b)             paper Eq. 3, the default
* ``fuzziness``    log Tr(Σ_w Σ_b⁺)                  He & Su; paper SM Eq. 9
* ``cdnv``         class-distance normalised variance (Galanti et al.)
* ``ncc``          nearest-class-centre accuracy (Galanti et al.)
* ``regression``   RMSE of the best affine regressor onto one-hot labels (SM S5)

Each public measure f(features, labels) checks its input, accumulates the
class statistics once (``class_statistics``) and calls a small pure measure
f_of(x, stats) (``MEASURES_OF``); ``layer_measures`` shares one set of
statistics among several measures. ``load_curve`` evaluates one of them on
every layer 0..L. Features that contain NaN or inf (a diverged run) give NaN
rather than an exception, so a sweep can record them and go on.

This module is the numpy reference, one model and layer at a time; sweeps use
``dnnphase.measures.separation_torch``, the same measures batched over models in torch and
tested against this one (docs/measures.md).

The shape of a load curve (curvature, linearity, phase) is measured by the
functions shared with ``springblock``, re-exported here unchanged.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

import numpy as np

from dnnphase.defaults import MEASURE
from phasecore.checks import require
from phasecore.loadcurve import curvature, curvature_scaled, linearity, phase_label

__all__ = [
    "ClassStatistics",
    "class_statistics",
    "within_between_covariance",
    "trace_ratio",
    "fuzziness",
    "cdnv",
    "ncc_accuracy",
    "trace_ratio_of",
    "fuzziness_of",
    "cdnv_of",
    "ncc_of",
    "regression_of",
    "layer_measures",
    "MEASURES_OF",
    "effective_depth",
    "regression_load",
    "regression_load_onehot",
    "MEASURES",
    "MEASURE_NAMES",
    "check_measures",
    "load_curve",
    "FUZZINESS_RCOND",
    "EFFECTIVE_DEPTH_THRESHOLD",
    "curvature",
    "curvature_scaled",
    "linearity",
    "phase_label",
]

#: Relative rank cut-off for the pseudo-inverse Σ_b⁺ in ``fuzziness``: singular
#: values of Σ_b below FUZZINESS_RCOND · σ_max(Σ_b) are treated as zero (the same
#: convention as ``numpy.linalg.pinv(Σ_b, rcond=...)``). Σ_b has rank ≤ K − 1
#: exactly; its spurious directions come out at ~1e-16 σ_max when Σ_b is formed
#: numerically and at ~1e-32 σ_max via the SVD used here, so 1e-10 drops them
#: with a wide margin while keeping any genuine between-class direction that
#: carries more than 1e-10 of the largest one's variance. On trained networks
#: (mnist5k, 100 epochs; docs/measures.md, scripts/fuzziness_cutoff.py) the spurious
#: direction sits at ~1e-32 σ_max and the weakest genuine one as low as 8.8e-7
#: σ_max (alpha = 1, dropout 0.3, last layers): 1e-10 keeps it with ~4 decades to
#: spare, while a cut-off of 1e-6 or above would drop it and lower log D by up to
#: 0.9. Relative (not absolute) keeps the measure scale-free.
FUZZINESS_RCOND = 1e-10

#: Default NCC accuracy above which a layer counts as "NCC-separable" in
#: ``effective_depth``: 99 % of the training samples lie nearest their own
#: class mean (Galanti et al. use a threshold of this kind on the train set).
EFFECTIVE_DEPTH_THRESHOLD = 0.99


# --------------------------------------------------------------------------
# Input handling
# --------------------------------------------------------------------------


def _to_numpy(x) -> np.ndarray:
    # Duck-typed so that this module never imports torch itself.
    if hasattr(x, "detach") and hasattr(x, "cpu"):
        x = x.detach().cpu()
        if x.dtype.is_floating_point or x.dtype.is_complex:
            x = x.double()  # also covers bfloat16, which numpy cannot hold
        x = x.numpy()
    return np.asarray(x)


def _as_features(features, name: str = "features") -> np.ndarray:
    x = _to_numpy(features).astype(np.float64, copy=False)
    if x.ndim != 2:
        raise ValueError(
            f"{name}: expected a 2-D array (N samples, d features), got shape {x.shape}"
        )
    if x.shape[0] == 0:
        raise ValueError(f"{name}: no samples (shape {x.shape})")
    return x  # (N, d)


def _as_labels(labels, n: int) -> np.ndarray:
    y = _to_numpy(labels)
    if y.ndim != 1:
        raise ValueError(f"labels: expected a 1-D array of N class labels, got shape {y.shape}")
    if y.shape[0] != n:
        raise ValueError(f"labels: {y.shape[0]} labels but features has N = {n} rows")
    return y  # (N,)


def _class_index(y: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    classes, index, counts = np.unique(y, return_inverse=True, return_counts=True)
    if len(classes) < 2:
        raise ValueError(f"labels: need at least 2 classes, got {len(classes)}")
    return classes, index.reshape(-1), counts


def _finite(*arrays: np.ndarray) -> bool:
    return all(bool(np.isfinite(a).all()) for a in arrays)


# --------------------------------------------------------------------------
# Class statistics and covariances
# --------------------------------------------------------------------------


class ClassStatistics(NamedTuple):
    """First moments of labelled features; K classes in sorted label order.

    Attributes
    ----------
    means : numpy.ndarray
        (K, d) the class means μ_c.
    global_mean : numpy.ndarray
        (d,) μ, the mean over all N samples.
    counts : numpy.ndarray
        (K,) n_c, integers.
    classes : numpy.ndarray
        (K,) the label value of each row of ``means``.
    index : numpy.ndarray
        (N,) the row of ``means`` that each sample belongs to.
    """

    means: np.ndarray  # (K, d) class means μ_c
    global_mean: np.ndarray  # (d,) μ, the mean over all N samples
    counts: np.ndarray  # (K,) n_c, int
    classes: np.ndarray  # (K,) the label value of each row of ``means``
    index: np.ndarray  # (N,) row of ``means`` that each sample belongs to


def _statistics(features, labels) -> tuple[np.ndarray, ClassStatistics]:
    x = _as_features(features)  # (N, d)
    y = _as_labels(labels, x.shape[0])  # (N,)
    classes, index, counts = _class_index(y)
    onehot = np.zeros((x.shape[0], len(classes)))  # (N, K)
    onehot[np.arange(x.shape[0]), index] = 1.0
    with np.errstate(invalid="ignore"):  # inf features: 0 · inf = NaN, reported as NaN later
        means = (onehot.T @ x) / counts[:, None]  # (K, d)
    return x, ClassStatistics(means, x.mean(axis=0), counts, classes, index)


def class_statistics(features, labels) -> ClassStatistics:
    """Class means μ_c (K, d), global mean μ (d,), counts n_c (K,) of (N, d) features.

    Also returns the sorted distinct label values ``classes`` (K,) and, for
    each sample, the ``index`` (N,) of its class in them. Raises ValueError
    for fewer than 2 classes, labels whose length differs from N, or features
    that are not 2-D.

    Parameters
    ----------
    features, labels : array_like
        One layer's features (N, d) and each sample's class (N,) (module docstring).
    """
    return _statistics(features, labels)[1]


def _between_factor(stats: ClassStatistics) -> np.ndarray:
    # Σ_b = B Bᵀ with B = [√(n_c/N) (μ_c − μ)]_c: everything about Σ_b
    # (trace, pseudo-inverse) follows from this d×K matrix without forming d×d.
    weights = np.sqrt(stats.counts / stats.counts.sum())  # (K,)
    return (stats.means - stats.global_mean).T * weights  # (d, K)


def _residuals(x: np.ndarray, stats: ClassStatistics) -> np.ndarray:
    return x - stats.means[stats.index]  # (N, d): h_i − μ_{c(i)}


def within_between_covariance(features, labels) -> tuple[np.ndarray, np.ndarray]:
    """Within- and between-class covariances (Σ_w, Σ_b), each (d, d), float64.

    Paper Eq. 2, normalised by 1/N with class weights n_c (so
    Σ_w + Σ_b is the total biased covariance of the features). Forms d×d
    matrices; the scalar measures below avoid that.

    Parameters
    ----------
    features, labels : array_like
        One layer's features (N, d) and each sample's class (N,) (module docstring).
    """
    x, stats = _statistics(features, labels)
    r = _residuals(x, stats)  # (N, d)
    b = _between_factor(stats)  # (d, K)
    return r.T @ r / x.shape[0], b @ b.T


# --------------------------------------------------------------------------
# Scalar separation measures of one layer
# --------------------------------------------------------------------------


def _measured(features, labels, measure: Callable[..., float], **options) -> float:
    # The public measures: check the input, accumulate the statistics once,
    # NaN for non-finite features, then the pure measure of (x, stats).
    x, stats = _statistics(features, labels)
    if not _finite(x):
        return np.nan
    return measure(x, stats, **options)


def trace_ratio_of(x: np.ndarray, stats: ClassStatistics) -> float:
    """``trace_ratio`` of finite float64 features ``x`` (N, d) with their ``stats``."""
    r = _residuals(x, stats)
    tr_w = np.vdot(r, r) / x.shape[0]
    b = _between_factor(stats)
    tr_b = np.vdot(b, b)
    with np.errstate(divide="ignore", invalid="ignore"):
        return float(np.log(tr_w / tr_b))


def fuzziness_of(x: np.ndarray, stats: ClassStatistics, rcond: float = FUZZINESS_RCOND) -> float:
    """``fuzziness`` of finite float64 features ``x`` (N, d) with their ``stats``."""
    u, s, _ = np.linalg.svd(_between_factor(stats), full_matrices=False)  # (d, r), (r,)
    sigma = s * s  # singular values of Σ_b
    if sigma.size == 0 or sigma[0] == 0.0:
        return np.inf
    keep = sigma > rcond * sigma[0]
    proj = _residuals(x, stats) @ u[:, keep]  # (N, r'): residuals along Σ_b's range
    per_direction = np.einsum("nj,nj->j", proj, proj) / x.shape[0]  # u_jᵀ Σ_w u_j
    with np.errstate(divide="ignore"):
        return float(np.log(np.sum(per_direction / sigma[keep])))


def cdnv_of(x: np.ndarray, stats: ClassStatistics) -> float:
    """``cdnv`` of finite float64 features ``x`` (N, d) with their ``stats``."""
    r = _residuals(x, stats)
    k = len(stats.counts)
    var = np.bincount(stats.index, weights=np.einsum("nd,nd->n", r, r), minlength=k)
    var = var / stats.counts  # (K,)
    ratios = []
    # Direct differences (not ‖μ_i‖² + ‖μ_j‖² − 2μ_i·μ_j) so that nearby means
    # do not lose their distance to cancellation; O(K) memory per row.
    for i in range(k - 1):
        dist2 = np.sum((stats.means[i + 1 :] - stats.means[i]) ** 2, axis=1)  # (K-1-i,)
        with np.errstate(divide="ignore", invalid="ignore"):
            ratios.append((var[i] + var[i + 1 :]) / (2.0 * dist2))
    return float(np.mean(np.concatenate(ratios)))


def _ncc(x: np.ndarray, y: np.ndarray, centres: np.ndarray, classes: np.ndarray) -> float:
    # Measure from the centres' centroid so that a large common offset does
    # not cancel digits; ‖x‖² is the same for every class and is dropped.
    origin = centres.mean(axis=0)
    xc, mc = x - origin, centres - origin
    score = np.einsum("kd,kd->k", mc, mc)[None, :] - 2.0 * (xc @ mc.T)  # (N, K)
    predicted = classes[np.argmin(score, axis=1)]
    return float(np.mean(predicted == y))


def ncc_of(x: np.ndarray, stats: ClassStatistics) -> float:
    """``ncc_accuracy`` (train-set centres) of finite float64 ``x`` (N, d) with its ``stats``."""
    return _ncc(x, stats.classes[stats.index], stats.means, stats.classes)


def regression_of(x: np.ndarray, stats: ClassStatistics) -> float:
    """``regression_load_onehot`` of finite float64 features ``x`` (N, d) with their ``stats``."""
    onehot = np.zeros((x.shape[0], len(stats.counts)))  # (N, K)
    onehot[np.arange(x.shape[0]), stats.index] = 1.0
    return _regression(x, onehot)


def trace_ratio(features, labels) -> float:
    """Separation D = log(Tr Σ_w / Tr Σ_b) of (N, d) features (paper Eq. 3).

    Dimensionless; decreases as classes separate. Invariant to scaling,
    rotation and translation of the features. +inf if all class means
    coincide, −inf if every sample sits on its class mean; NaN for
    non-finite features.

    Parameters
    ----------
    features, labels : array_like
        One layer's features (N, d) and each sample's class (N,) (module docstring).
    """
    return _measured(features, labels, trace_ratio_of)


def fuzziness(features, labels, rcond: float = FUZZINESS_RCOND) -> float:
    """Separation fuzziness D = log Tr(Σ_w Σ_b⁺) of (N, d) features (He & Su; SM Eq. 9).

    Σ_b⁺ is the Moore–Penrose pseudo-inverse with a relative rank cut-off. The result equals
    ``log(trace(Σ_w @ numpy.linalg.pinv(Σ_b, rcond=rcond)))`` but is computed
    from the thin SVD of the d×K factor B (Σ_b = B Bᵀ = U S² Uᵀ):
    Tr(Σ_w Σ_b⁺) = Σ_j u_jᵀ Σ_w u_j / s_j², costing O(N d K) instead of O(d³).

    Invariant to any invertible linear map of the features when Σ_b has full
    rank (d ≤ K − 1); otherwise only to rotations, scaling and translation
    (the pseudo-inverse does not commute with a general map of a rank-deficient
    matrix). +inf if all class means coincide (no between-class direction
    survives the cut-off); NaN for non-finite features. How the value depends
    on ``rcond`` on trained networks' features: docs/measures.md.

    Parameters
    ----------
    features, labels : array_like
        One layer's features (N, d) and each sample's class (N,) (module docstring).
    rcond : float, default 1e-10
        Singular values of Σ_b below ``rcond`` · σ_max(Σ_b) are dropped (rank Σ_b ≤ K − 1).
    """
    if not rcond >= 0:
        raise ValueError(f"rcond: must be >= 0, got {rcond}")
    return _measured(features, labels, fuzziness_of, rcond=rcond)


def cdnv(features, labels) -> float:
    """Class-distance normalised variance of (N, d) features (Galanti et al.).

    Mean over unordered class pairs i < j of
    (Var_i + Var_j) / (2 ‖μ_i − μ_j‖²), with Var_c = (1/n_c) Σ_{i∈c} ‖h_i − μ_c‖²
    the mean squared distance of class c to its mean. Dimensionless, ≥ 0,
    → 0 under neural collapse; not a log (take one for a load curve on the
    same footing as the trace ratio). +inf if two class means coincide; NaN
    for non-finite features.

    Parameters
    ----------
    features, labels : array_like
        One layer's features (N, d) and each sample's class (N,) (module docstring).
    """
    return _measured(features, labels, cdnv_of)


def ncc_accuracy(features, labels, means=None, classes=None) -> float:
    """Nearest-class-centre accuracy of (N, d) features, in [0, 1] (Galanti et al.).

    Each sample is assigned the class whose centre is nearest in Euclidean
    distance; the result is the fraction assigned their own label. Ties go to the lower
    row. NaN for non-finite input.

    Parameters
    ----------
    features, labels : array_like
        One layer's features (N, d) and each sample's class (N,) (module docstring).
    means : array_like, optional
        (K, d) other centres, e.g. train-set means on test features (None: their own means).
    classes : array_like, optional
        (K,) the class of each row of ``means`` (None: 0..K-1).
    """
    if means is None:
        return _measured(features, labels, ncc_of)
    x = _as_features(features)
    y = _as_labels(labels, x.shape[0])
    centres = _as_features(means, name="means")  # (K, d)
    if centres.shape[1] != x.shape[1]:
        raise ValueError(
            f"means: centres have d = {centres.shape[1]} but features have d = {x.shape[1]}"
        )
    if centres.shape[0] < 2:
        raise ValueError(f"means: need at least 2 class centres, got {centres.shape[0]}")
    if classes is None:
        classes = np.arange(centres.shape[0])
    classes = _to_numpy(classes)
    if classes.shape != (centres.shape[0],):
        raise ValueError(
            f"classes: expected shape ({centres.shape[0]},) to match means, got {classes.shape}"
        )
    if not _finite(x, centres):
        return np.nan
    return _ncc(x, y, centres, classes)


def effective_depth(ncc_acc_per_layer, threshold: float = EFFECTIVE_DEPTH_THRESHOLD):
    """First layer index whose NCC accuracy reaches ``threshold`` (Galanti et al.).

    Parameters
    ----------
    ncc_acc_per_layer : array_like
        (..., L+1) NCC accuracy of each layer, layer 0 = input.
    threshold : float, default 0.99
        The accuracy a layer must reach (≥).

    Returns
    -------
    float or numpy.ndarray
        (...) the index ℓ of the first such layer, as a float (a float for a single curve);
        NaN where no layer reaches it (and where every entry is NaN), so that averages
        over seeds can use ``nanmean`` and plots skip such runs.
    """
    if not 0.0 < threshold <= 1.0:
        raise ValueError(f"threshold: must lie in (0, 1], got {threshold}")
    acc = _to_numpy(ncc_acc_per_layer).astype(np.float64, copy=False)
    if acc.ndim == 0 or acc.shape[-1] == 0:
        raise ValueError(
            f"ncc_acc_per_layer: expected shape (..., L+1) with at least one layer, got {acc.shape}"
        )
    reached = acc >= threshold  # NaN compares False
    first = np.argmax(reached, axis=-1).astype(np.float64)
    out = np.where(reached.any(axis=-1), first, np.nan)
    return float(out) if out.ndim == 0 else out


def regression_load(features, targets) -> float:
    """RMSE of the best affine least-squares map from (N, d) features to targets.

    Paper SM S5: sqrt((1/N) Σ_i ‖y_i − W h_i − b‖²) minimised over W and b. Same units as
    the targets; 0 when the targets are an affine function of the features (always the
    case if d ≥ N − 1 in general position). NaN for non-finite input.

    Parameters
    ----------
    features, targets : array_like
        (N, d) one layer's features and (N,) or (N, m) the targets, e.g. one-hot labels
        for classification (``regression_load_onehot``).
    """
    x = _as_features(features)
    t = _to_numpy(targets).astype(np.float64, copy=False)
    if t.ndim not in (1, 2) or t.shape[0] != x.shape[0]:
        raise ValueError(
            f"targets: expected shape (N,) or (N, m) with N = {x.shape[0]}, got {t.shape}"
        )
    if not _finite(x, t):
        return np.nan
    return _regression(x, t)


def _regression(x: np.ndarray, t: np.ndarray) -> float:
    # Centring both sides solves for the intercept exactly and leaves W.
    xc = x - x.mean(axis=0)
    tc = t - t.mean(axis=0)
    coef, *_ = np.linalg.lstsq(xc, tc, rcond=None)  # (d,) or (d, m)
    resid = tc - xc @ coef
    return float(np.sqrt(np.vdot(resid, resid) / x.shape[0]))


def regression_load_onehot(features, labels) -> float:
    """``regression_load`` of (N, d) features onto one-hot labels (N, K).

    Parameters
    ----------
    features, labels : array_like
        One layer's features (N, d) and each sample's class (N,) (module docstring).
    """
    return _measured(features, labels, regression_of)


#: Per-layer scalar measures usable by ``load_curve``: name → f(features, labels).
MEASURES: dict[str, Callable[..., float]] = {
    "trace_ratio": trace_ratio,
    "fuzziness": fuzziness,
    "cdnv": cdnv,
    "ncc": ncc_accuracy,
    "regression": regression_load_onehot,
}


#: The same measures as pure functions f(x, stats) of finite float64 features
#: x (N, d) and their ``ClassStatistics`` (see ``layer_measures``).
MEASURES_OF: dict[str, Callable[..., float]] = {
    "trace_ratio": trace_ratio_of,
    "fuzziness": fuzziness_of,
    "cdnv": cdnv_of,
    "ncc": ncc_of,
    "regression": regression_of,
}


#: The measures' names, in the order results list them: the one list that validation,
#: the command line and the batched :mod:`dnnphase.measures.separation_torch` read.
MEASURE_NAMES: tuple[str, ...] = tuple(MEASURES)


def check_measures(measures, name: str | None = None) -> tuple[str, ...]:
    """``measures`` (one name or several) as a tuple, or a ConfigError naming ``name``.

    Parameters
    ----------
    measures : str or sequence of str
        Names of ``MEASURE_NAMES``.
    name : str, optional
        The parameter the error names (None: "measure" for one name, "measures" for several).
    """
    one = isinstance(measures, str)
    names = (measures,) if one else tuple(measures)
    require(len(names) > 0 and all(m in MEASURES for m in names),
            name or ("measure" if one else "measures"),
            f"{'one' if one else 'one or more'} of {', '.join(MEASURE_NAMES)}", measures)
    return names


def layer_measures(features, labels, measures=MEASURE_NAMES) -> dict[str, float]:
    """Several measures of one layer's (N, d) features, sharing one ``ClassStatistics``.

    Returns {name: value} for the names in ``measures``, each equal to
    ``MEASURES[name](features, labels)``; NaN for every measure if the features are not finite.

    Parameters
    ----------
    features, labels : array_like
        One layer's features (N, d) and each sample's class (N,) (module docstring).
    measures : sequence of str
        The measures to compute, of ``MEASURES`` (default: all five).
    """
    measures = check_measures(measures, "measures")
    x, stats = _statistics(features, labels)
    if not _finite(x):
        return {name: np.nan for name in measures}
    return {name: MEASURES_OF[name](x, stats) for name in measures}


# --------------------------------------------------------------------------
# Load curves
# --------------------------------------------------------------------------


def load_curve(features_per_layer, labels, measure: str = MEASURE) -> np.ndarray:
    """Separation measure of every layer 0..L: the network's load curve D_0..D_L.

    Parameters
    ----------
    features_per_layer : sequence of array_like, or array_like
        Each layer's features, layer 0 = input: L+1 arrays (N, d_ℓ) (widths may differ) or
        a stacked (L+1, N, d) → result (L+1,); over M models, L+1 arrays (M, N, d_ℓ) or a
        stacked (L+1, M, N, d) → result (M, L+1).
    labels : array_like
        (N,), shared by all models, or (M, N), one row per model.
    measure : str or callable, default "trace_ratio"
        A name in ``MEASURES`` ("trace_ratio", "fuzziness", "cdnv", "ncc": an accuracy, rising
        with depth, "regression") or f(features (N, d), labels (N,)) → float.
    """
    fn = measure if callable(measure) else MEASURES[check_measures(measure, "measure")[0]]

    if isinstance(features_per_layer, list | tuple):
        layers = list(features_per_layer)
    else:
        layers = [features_per_layer[i] for i in range(len(features_per_layer))]
    layers = [h if hasattr(h, "ndim") else np.asarray(h) for h in layers]
    if not layers:
        raise ValueError("features_per_layer: no layers given")
    ndims = {h.ndim for h in layers}
    if ndims == {2}:
        return np.array([fn(h, labels) for h in layers], dtype=np.float64)  # (L+1,)
    if ndims != {3}:
        raise ValueError(
            "features_per_layer: each layer must be (N, d) or, batched over models, "
            f"(M, N, d); got layers with ndim {sorted(ndims)}"
        )

    n_models = {h.shape[0] for h in layers}
    if len(n_models) != 1:
        raise ValueError(
            f"features_per_layer: batched layers disagree on the number of models M: "
            f"{sorted(n_models)}"
        )
    (m,) = n_models
    y = _to_numpy(labels)
    if y.ndim == 1:
        per_model = [y] * m
    elif y.ndim == 2 and y.shape[0] == m:
        per_model = list(y)
    else:
        raise ValueError(f"labels: expected shape (N,) or (M, N) with M = {m}, got {y.shape}")
    return np.array(
        [[fn(h[i], per_model[i]) for h in layers] for i in range(m)], dtype=np.float64
    )  # (M, L+1)
