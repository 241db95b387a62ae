"""Separation measures of many models and layers at once, in torch (DESIGN §3).

The batched counterpart of :mod:`dnnphase.metrics`, which stays the numpy
reference: the same five measures with the same definitions and conventions
(paper Eq. 2-3, SM Eq. 9, SM S5; see ``docs/measures.md``), evaluated for all
M models of a chunk in one pass per layer, on the device that holds the
features, in float64, without a per-model Python loop and without copying the
features to the host.

For one layer, features ``h`` (M, N, d) and class ``index`` (N,) in 0..K-1:

1. :func:`layer_statistics` casts a block of models to float64 and accumulates
   the class statistics once: class means μ_c (one-hot matmul, deterministic
   on every device, unlike ``index_add`` which uses atomics on CUDA), global
   mean μ, residuals h_i − μ_c(i) and their squared norms;
2. each measure is a small pure function of those statistics, (b,) per block.

Memory: the float64 copy of a block of b models and its residuals take
2·b·N·d·8 bytes; b is chosen so that one float64 block stays under
``max_block_bytes`` (default 256 MiB). Models whose features contain NaN or
inf are zeroed before any linear algebra and give NaN for that model and layer
only, as the reference does.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence
from typing import NamedTuple

import torch

from springblock.shared.checks import require

__all__ = [
    "MEASURE_NAMES",
    "DEFAULT_MEASURES",
    "FUZZINESS_RCOND",
    "LayerStatistics",
    "class_index",
    "layer_statistics",
    "trace_ratio",
    "fuzziness",
    "cdnv",
    "ncc_accuracy",
    "regression_onehot",
    "measure_layer",
    "measure_layers",
]

MEASURE_NAMES = ("trace_ratio", "fuzziness", "cdnv", "ncc", "regression")
DEFAULT_MEASURES = ("trace_ratio", "fuzziness", "cdnv", "ncc")

#: Relative rank cut-off of Σ_b⁺ in ``fuzziness``; the same value and convention
#: as :data:`dnnphase.metrics.FUZZINESS_RCOND` (see docs/measures.md for why).
FUZZINESS_RCOND = 1e-10

#: Largest float64 feature block (bytes) held at once per layer.
MAX_BLOCK_BYTES = 256 * 2**20

F64 = torch.float64


# --------------------------------------------------------------------------
# Class statistics of one layer, batched over models
# --------------------------------------------------------------------------


class LayerStatistics(NamedTuple):
    """Class statistics of b models' features of one layer, all float64.

    Computed once by :func:`layer_statistics`; every measure reads them.
    """

    x: torch.Tensor  # (b, N, d) features (non-finite models zeroed)
    resid: torch.Tensor  # (b, N, d) h_i − μ_c(i)
    resid_sq: torch.Tensor  # (b, N) ‖h_i − μ_c(i)‖²
    means: torch.Tensor  # (b, K, d) class means μ_c
    global_mean: torch.Tensor  # (b, d) μ
    onehot: torch.Tensor  # (K, N) class membership, float64
    counts: torch.Tensor  # (K,) n_c, float64
    index: torch.Tensor  # (N,) class of each sample, 0..K-1


def class_index(labels, n: int, device) -> tuple[torch.Tensor, torch.Tensor]:
    """Labels (N,) of any integer values → (index (N,) in 0..K-1 sorted, counts (K,))."""
    y = torch.as_tensor(labels)
    require(y.ndim == 1 and y.shape[0] == n, "labels", f"a 1-D tensor of N = {n} class labels",
            tuple(y.shape))
    require(not y.is_floating_point() or bool((y == y.round()).all()), "labels",
            "integer class labels", y.dtype)
    _, index, counts = torch.unique(y.to(device), return_inverse=True, return_counts=True)
    require(len(counts) >= 2, "labels", "at least 2 classes", len(counts))
    return index.reshape(-1), counts.to(F64)


def layer_statistics(h: torch.Tensor, index: torch.Tensor, counts: torch.Tensor,
                     finite: torch.Tensor | None = None) -> LayerStatistics:
    """Class statistics of features ``h`` (b, N, d), any float dtype, in float64.

    ``finite`` (b,) bool: models to keep; the others are replaced by zeros so
    that the linear algebra below stays defined (their measures are set to NaN
    by the caller).
    """
    x = h.to(F64)  # (b, N, d); no copy if h is already float64 (x is never written)
    if finite is not None and not bool(finite.all()):
        x = torch.where(finite[:, None, None], x, 0.0)
    k = counts.shape[0]
    onehot = torch.zeros(k, x.shape[1], dtype=F64, device=x.device)  # (K, N)
    onehot[index, torch.arange(x.shape[1], device=x.device)] = 1.0
    means = (onehot @ x) / counts[:, None]  # (b, K, d), the reference's onehotᵀ x / n_c
    resid = x - means.index_select(1, index)  # (b, N, d)
    resid_sq = torch.einsum("bnd,bnd->bn", resid, resid)  # (b, N)
    return LayerStatistics(x, resid, resid_sq, means, x.mean(dim=1), onehot, counts, index)


def _between_factor(st: LayerStatistics) -> torch.Tensor:
    # Σ_b = Bᵀ B with rows B_c = √(n_c/N) (μ_c − μ): (b, K, d), never d × d.
    weights = torch.sqrt(st.counts / st.counts.sum())  # (K,)
    return (st.means - st.global_mean[:, None, :]) * weights[:, None]


# --------------------------------------------------------------------------
# Measures: pure functions of the statistics, (b,) float64 each
# --------------------------------------------------------------------------


def trace_ratio(st: LayerStatistics) -> torch.Tensor:
    """log(Tr Σ_w / Tr Σ_b) (paper Eq. 3), from traces only. (b,)"""
    n = st.x.shape[1]
    tr_w = st.resid_sq.sum(dim=1) / n  # (b,)
    b = _between_factor(st)
    tr_b = torch.einsum("bkd,bkd->b", b, b)  # (b,)
    return torch.log(tr_w / tr_b)


def fuzziness(st: LayerStatistics, rcond: float = FUZZINESS_RCOND) -> torch.Tensor:
    """log Tr(Σ_w Σ_b⁺) (He & Su; SM Eq. 9) with a relative rank cut-off. (b,)

    Σ_b = Bᵀ B has rank ≤ K − 1, so everything happens in the K-dimensional
    span of the centred class means: the thin SVD Bᵀ = U S Vᵀ (d × K, batched)
    gives Σ_b's nonzero eigenvalues σ_j = s_j² with eigenvectors u_j, and
    Tr(Σ_w Σ_b⁺) = Σ_{σ_j > rcond·σ_max} u_jᵀ Σ_w u_j / σ_j, where
    u_jᵀ Σ_w u_j = (1/N) Σ_i (r_i·u_j)². The SVD of B (rather than an
    eigendecomposition of B Bᵀ) keeps small σ_j as accurate as the reference.
    """
    n = st.x.shape[1]
    u, s, _ = torch.linalg.svd(_between_factor(st).transpose(1, 2), full_matrices=False)
    sigma = s * s  # (b, r) eigenvalues of Σ_b, descending
    keep = sigma > rcond * sigma[:, :1]
    proj = st.resid @ u  # (b, N, r): residuals along Σ_b's eigenvectors
    along = torch.einsum("bnj,bnj->bj", proj, proj) / n  # (b, r): u_jᵀ Σ_w u_j
    terms = torch.where(keep, along / torch.where(keep, sigma, 1.0), 0.0)
    out = torch.log(terms.sum(dim=1))
    return torch.where(sigma[:, 0] > 0, out, math.inf)  # no between-class direction: +inf


def cdnv(st: LayerStatistics) -> torch.Tensor:
    """Mean over class pairs of (Var_i + Var_j) / (2‖μ_i − μ_j‖²) (Galanti et al.). (b,)"""
    k = st.counts.shape[0]
    var = (st.resid_sq @ st.onehot.T) / st.counts  # (b, K) mean squared distance to μ_c
    i, j = torch.triu_indices(k, k, offset=1, device=st.x.device)  # the K(K-1)/2 pairs
    # Direct differences, as in the reference, so close means keep their distance.
    diff = st.means[:, j] - st.means[:, i]  # (b, P, d)
    dist2 = torch.einsum("bpd,bpd->bp", diff, diff)
    return ((var[:, i] + var[:, j]) / (2.0 * dist2)).mean(dim=1)


def ncc_accuracy(st: LayerStatistics) -> torch.Tensor:
    """Fraction of samples nearest (Euclidean) their own class mean (Galanti et al.). (b,)

    Distances are taken from the centroid of the class means, so that a large
    common offset does not cancel digits; ‖x‖² is common to all classes and
    dropped; ties go to the lower class, as in the reference.
    """
    origin = st.means.mean(dim=1, keepdim=True)  # (b, 1, d)
    mc = st.means - origin  # (b, K, d)
    score = torch.einsum("bkd,bkd->bk", mc, mc)[:, None, :] \
        - 2.0 * ((st.x - origin) @ mc.transpose(1, 2))  # (b, N, K)
    return (score.argmin(dim=2) == st.index).to(F64).mean(dim=1)


def regression_onehot(st: LayerStatistics) -> torch.Tensor:
    """RMSE of the best affine map from the features to one-hot labels (SM S5). (b,)

    Centring both sides removes the intercept. The least-squares fit uses a
    Householder QR of the centred features X = Q R and an SVD R = U S Vᵀ,
    dropping s ≤ eps·max(N, d)·s_max — the same rank rule as the reference's
    ``numpy.linalg.lstsq(rcond=None)`` and as well conditioned (no normal
    equations, which would square the condition number). The residual is
    formed explicitly, so an exact fit gives ~1e-15, not √eps.
    """
    n, d = st.x.shape[1:]
    xc = st.x - st.global_mean[:, None, :]  # (b, N, d)
    t = st.onehot.T - st.counts / n  # (N, K) centred one-hot targets
    q, r = torch.linalg.qr(xc)  # (b, N, p), (b, p, d), p = min(N, d)
    u, s, _ = torch.linalg.svd(r)  # (b, p, p), (b, p)
    keep = s > torch.finfo(F64).eps * max(n, d) * s[:, :1]  # (b, p)
    coef = (u.transpose(1, 2) @ (q.transpose(1, 2) @ t)) * keep[:, :, None]  # (b, p, K)
    resid = t - q @ (u @ coef)  # (b, N, K)
    return torch.sqrt(torch.einsum("bnk,bnk->b", resid, resid) / n)


#: name → measure of the layer statistics, (b,) per block.
MEASURES: dict[str, Callable[..., torch.Tensor]] = {
    "trace_ratio": trace_ratio,
    "fuzziness": fuzziness,
    "cdnv": cdnv,
    "ncc": ncc_accuracy,
    "regression": regression_onehot,
}


# --------------------------------------------------------------------------
# Layers and load curves
# --------------------------------------------------------------------------


def _check_measures(measures: Sequence[str]) -> tuple[str, ...]:
    measures = (measures,) if isinstance(measures, str) else tuple(measures)
    require(len(measures) > 0 and all(m in MEASURES for m in measures), "measures",
            f"one or more of {', '.join(MEASURE_NAMES)}", measures)
    return measures


def _block_size(h: torch.Tensor, max_block_bytes: int) -> int:
    per_model = h.shape[1] * h.shape[2] * 8  # float64 bytes of one model's layer
    return max(1, min(h.shape[0], max_block_bytes // max(per_model, 1)))


def _measure_block(h, index, counts, measures, rcond) -> torch.Tensor:
    finite = torch.isfinite(h).flatten(1).all(dim=1)  # (b,)
    st = layer_statistics(h, index, counts, finite)
    fns = {**MEASURES, "fuzziness": functools.partial(fuzziness, rcond=rcond)}
    out = torch.stack([fns[name](st) for name in measures], dim=1)  # (b, n_measures)
    return torch.where(finite[:, None], out, math.nan)


def measure_layer(h, labels, measures: Sequence[str] = DEFAULT_MEASURES, *,
                  rcond: float = FUZZINESS_RCOND,
                  max_block_bytes: int = MAX_BLOCK_BYTES) -> torch.Tensor:
    """The ``measures`` of one layer's features ``h`` (M, N, d) → (M, n_measures) float64.

    ``labels`` (N,): class labels shared by all models (any integer values;
    the classes are the distinct values present, ≥ 2). Runs on ``h``'s device.
    """
    measures = _check_measures(measures)
    h = torch.as_tensor(h)
    require(h.ndim == 3 and h.is_floating_point() and h.shape[1] > 0, "features",
            "a float tensor (M models, N samples, d units) with N >= 1", tuple(h.shape))
    require(rcond >= 0, "rcond", ">= 0", rcond)
    index, counts = class_index(labels, h.shape[1], h.device)
    return _measure_layer(h, index, counts, measures, rcond, max_block_bytes)


def _measure_layer(h, index, counts, measures, rcond, max_block_bytes) -> torch.Tensor:
    b = _block_size(h, max_block_bytes)
    blocks = [_measure_block(h[i:i + b], index, counts, measures, rcond)
              for i in range(0, h.shape[0], b)]
    return torch.cat(blocks, dim=0)  # (M, n_measures)


def measure_layers(features: Sequence[torch.Tensor], labels,
                   measures: Sequence[str] = DEFAULT_MEASURES, *,
                   rcond: float = FUZZINESS_RCOND,
                   max_block_bytes: int = MAX_BLOCK_BYTES) -> torch.Tensor:
    """Load curves of M models for several measures: (M, n_measures, L+1) float64.

    ``features``: the L+1 layers [h_0 .. h_L] (layer 0 = input), each
    (M, N, d_ℓ) on one device, any float dtype (widths may differ);
    ``labels`` (N,) shared by all models. ``measures``: names in
    ``MEASURE_NAMES`` (default the four of ``DEFAULT_MEASURES``); "ncc" is an
    accuracy in [0, 1], the others decrease as classes separate. Each entry
    equals ``dnnphase.metrics.load_curve(features, labels, measure)`` to
    ~1e-12; the result stays on the features' device.
    """
    measures = _check_measures(measures)
    layers = [torch.as_tensor(h) for h in features]
    require(len(layers) > 0, "features", "a non-empty list of layers (M, N, d)", len(layers))
    shapes = [tuple(h.shape) for h in layers]
    require(all(h.ndim == 3 and h.is_floating_point() for h in layers), "features",
            "float tensors (M models, N samples, d units), one per layer", shapes)
    require(len({s[:2] for s in shapes}) == 1 and shapes[0][1] > 0, "features",
            "layers with the same M models and N >= 1 samples", shapes)
    require(len({h.device for h in layers}) == 1, "features", "layers on one device",
            sorted({str(h.device) for h in layers}))
    require(rcond >= 0, "rcond", ">= 0", rcond)
    index, counts = class_index(labels, shapes[0][1], layers[0].device)
    return torch.stack([_measure_layer(h, index, counts, measures, rcond, max_block_bytes)
                        for h in layers], dim=2)
