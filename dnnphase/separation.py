"""Separation measures of many models and layers at once, in torch (docs/measures.md).

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

import contextlib
import functools
import math
from collections.abc import Callable, Sequence
from typing import NamedTuple

import torch

from dnnphase.defaults import SWEEP_MEASURES
from dnnphase.metrics import FUZZINESS_RCOND, MEASURE_NAMES, check_measures
from phasecore.checks import require

__all__ = [
    "MEASURE_NAMES",
    "DEFAULT_MEASURES",
    "FUZZINESS_RCOND",
    "Classes",
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
    "default_block_bytes",
]

#: The sweep's default measures (:data:`dnnphase.defaults.SWEEP_MEASURES`). The names
#: (``MEASURE_NAMES``) and the fuzziness's rank cut-off (``FUZZINESS_RCOND``, see
#: docs/measures.md) are the reference's, :mod:`dnnphase.metrics`.
DEFAULT_MEASURES = SWEEP_MEASURES

#: Float64 bytes of one block of models on a GPU / on the CPU (see default_block_bytes).
MAX_BLOCK_BYTES = 512 * 2**20
CPU_BLOCK_BYTES = 4 * 2**20

F64 = torch.float64


# --------------------------------------------------------------------------
# Class statistics of one layer, batched over models
# --------------------------------------------------------------------------


class Classes(NamedTuple):
    """The classes of N labelled samples, K of them in sorted label order."""

    index: torch.Tensor  # (N,) class of each sample, 0..K-1
    counts: torch.Tensor  # (K,) n_c, float64
    onehot: torch.Tensor  # (K, N) class membership, float64


class LayerStatistics(NamedTuple):
    """Class statistics of b models' features of one layer, all float64.

    Computed once by :func:`layer_statistics`; every measure reads them.
    The features themselves are not kept: h_i = resid_i + μ_c(i).
    """

    resid: torch.Tensor  # (b, N, d) h_i − μ_c(i)
    resid_sq: torch.Tensor  # (b, N) ‖h_i − μ_c(i)‖²
    means: torch.Tensor  # (b, K, d) class means μ_c
    global_mean: torch.Tensor  # (b, d) μ
    finite: torch.Tensor  # (b,) bool: features all finite (the others were zeroed)
    classes: Classes


def class_index(labels, n: int, device) -> Classes:
    """Labels (N,) of any integer values → their :class:`Classes` on ``device``."""
    y = torch.as_tensor(labels)
    require(y.ndim == 1 and y.shape[0] == n, "labels", f"a 1-D tensor of N = {n} class labels",
            tuple(y.shape))
    require(not y.is_floating_point() or bool((y == y.round()).all()), "labels",
            "integer class labels", y.dtype)
    _, index, counts = torch.unique(y.to(device), return_inverse=True, return_counts=True)
    require(len(counts) >= 2, "labels", "at least 2 classes", len(counts))
    index = index.reshape(-1)
    onehot = torch.zeros(len(counts), n, dtype=F64, device=index.device)  # (K, N)
    onehot[index, torch.arange(n, device=index.device)] = 1.0
    return Classes(index, counts.to(F64), onehot)


def _class_sums(x: torch.Tensor, classes: Classes) -> torch.Tensor:
    """Σ_{i∈c} x_i of (b, N, d) float64 features → (b, K, d).

    A one-hot matmul on CUDA, where ``index_add`` sums with atomics in a
    varying order; ``index_add`` on the CPU, where it is sequential and ~5x
    faster than the skinny matmul.
    """
    if x.device.type == "cuda":
        return classes.onehot @ x
    sums = torch.zeros(x.shape[0], classes.counts.shape[0], x.shape[2], dtype=F64,
                       device=x.device)
    return sums.index_add_(1, classes.index, x)


def layer_statistics(h: torch.Tensor, classes: Classes) -> LayerStatistics:
    """Class statistics of features ``h`` (b, N, d), any float dtype, in float64.

    Models whose features hold NaN or inf (seen in their class sums, which
    NaN/inf reach) are replaced by zeros so that the linear algebra of the
    measures stays defined; ``finite`` marks them for the caller.
    """
    x = h.to(F64)  # (b, N, d); no copy if h is already float64 (x is never written)
    sums = _class_sums(x, classes)  # (b, K, d)
    finite = torch.isfinite(sums).flatten(1).all(dim=1)  # (b,)
    if not bool(finite.all()):
        x = torch.where(finite[:, None, None], x, 0.0)
        sums = _class_sums(x, classes)
    means = sums / classes.counts[:, None]  # (b, K, d)
    global_mean = sums.sum(dim=1) / x.shape[1]  # (b, d)
    resid = means.index_select(1, classes.index)  # (b, N, d) μ_c(i), overwritten next
    torch.sub(x, resid, out=resid)  # h_i − μ_c(i)
    resid_sq = torch.linalg.vector_norm(resid, dim=2).square()  # (b, N), one pass
    return LayerStatistics(resid, resid_sq, means, global_mean, finite, classes)


@contextlib.contextmanager
def _one_cpu_thread(device: torch.device):
    """Run the measures on one CPU thread (CUDA is left alone).

    Two reasons, both measured on 2 cores: (1) MKL's threaded QR, SVD and
    eigensolvers round differently with different thread counts (QR of a
    (2560, 100) block differs in the last bit), so on one thread a model's
    value depends on its features only; (2) the work comes in cache-sized
    blocks of a few hundred microseconds, too short to share: with 2 threads
    the 16 × 8-layer benchmark took 5.9 s instead of 0.5 s on a loaded
    machine, as the threads wait for each other (docs/measures.md).
    """
    threads = torch.get_num_threads()
    if device.type != "cpu" or threads == 1:
        yield
        return
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(threads)


def _thin_svd(a: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Left singular vectors and values of small matrices ``a`` (b, d, K), one CPU thread.

    On CUDA the (b, d, K) class-mean factors — statistics, not features, K·d
    numbers a model — are factorised on the host: cuSOLVER batches only
    matrices up to 32 × 32 and would loop over the others one by one, and the
    host result is the same as on a CPU-only run.
    """
    with _one_cpu_thread(torch.device("cpu")):
        u, s, _ = torch.linalg.svd(a.cpu(), full_matrices=False)
    return u.to(a.device), s.to(a.device)


def _between_factor(st: LayerStatistics) -> torch.Tensor:
    # Σ_b = Bᵀ B with rows B_c = √(n_c/N) (μ_c − μ): (b, K, d), never d × d.
    counts = st.classes.counts
    return (st.means - st.global_mean[:, None, :]) * torch.sqrt(counts / counts.sum())[:, None]


# --------------------------------------------------------------------------
# Measures: pure functions of the statistics, (b,) float64 each
# --------------------------------------------------------------------------


def trace_ratio(st: LayerStatistics) -> torch.Tensor:
    """log(Tr Σ_w / Tr Σ_b) (paper Eq. 3), from traces only. (b,)"""
    tr_w = st.resid_sq.mean(dim=1)  # (b,) (1/N) Σ_i ‖h_i − μ_c(i)‖²
    b = _between_factor(st)
    tr_b = (b * b).sum(dim=(1, 2))  # (b,) Σ_c (n_c/N) ‖μ_c − μ‖²
    return torch.log(tr_w / tr_b)


def fuzziness(st: LayerStatistics, rcond: float = FUZZINESS_RCOND) -> torch.Tensor:
    """log Tr(Σ_w Σ_b⁺) (He & Su; SM Eq. 9) with a relative rank cut-off. (b,)

    Σ_b = Bᵀ B has rank ≤ K − 1, so everything happens in the span of the
    centred class means: the thin SVD Bᵀ = U S Vᵀ (d × K, batched) gives
    Σ_b's nonzero eigenvalues σ_j = s_j² with eigenvectors u_j, and
    Tr(Σ_w Σ_b⁺) = Σ_{σ_j > rcond·σ_max} u_jᵀ Σ_w u_j / σ_j, where
    u_jᵀ Σ_w u_j = (1/N) Σ_i (r_i·u_j)². The SVD of B (rather than an
    eigendecomposition of B Bᵀ) keeps small σ_j as accurate as the reference.
    +inf if all class means coincide.
    """
    u, s = _thin_svd(_between_factor(st).transpose(1, 2))  # (b, d, r), (b, r)
    sigma = s * s  # (b, r) eigenvalues of Σ_b, descending
    keep = sigma > rcond * sigma[:, :1]
    proj = st.resid @ u  # (b, N, r): residuals along Σ_b's eigenvectors
    along = (proj * proj).mean(dim=1)  # (b, r): u_jᵀ Σ_w u_j
    terms = torch.where(keep, along / torch.where(keep, sigma, 1.0), 0.0)
    return torch.where(sigma[:, 0] > 0, torch.log(terms.sum(dim=1)), math.inf)


def cdnv(st: LayerStatistics) -> torch.Tensor:
    """Mean over class pairs of (Var_i + Var_j) / (2‖μ_i − μ_j‖²) (Galanti et al.). (b,)"""
    cl = st.classes
    k = cl.counts.shape[0]
    # Per-class sums as an elementwise product and sum, not a matrix product,
    # so that a model's value does not depend on how many share the block.
    var = (st.resid_sq[:, None, :] * cl.onehot).sum(dim=2) / cl.counts  # (b, K): Var_c
    i, j = torch.triu_indices(k, k, offset=1, device=var.device)  # the K(K-1)/2 pairs
    # Direct differences, as in the reference, so close means keep their distance.
    diff = st.means[:, j] - st.means[:, i]  # (b, P, d)
    dist2 = (diff * diff).sum(dim=2)  # (b, P)
    return ((var[:, i] + var[:, j]) / (2.0 * dist2)).mean(dim=1)


def ncc_accuracy(st: LayerStatistics) -> torch.Tensor:
    """Fraction of samples nearest (Euclidean) their own class mean (Galanti et al.). (b,)

    Distances are taken from the centroid o of the class means, so that a
    large common offset does not cancel digits, and ‖h_i − o‖² (common to all
    classes) is dropped: score_ik = ‖m_k‖² − 2 (h_i − o)·m_k with m_k = μ_k − o
    and h_i − o = r_i + m_c(i). Ties go to the lower class, as in the reference.
    """
    mc = st.means - st.means.mean(dim=1, keepdim=True)  # (b, K, d)
    gram = mc @ mc.transpose(1, 2)  # (b, K, K)
    dots = st.resid @ mc.transpose(1, 2) + gram.index_select(1, st.classes.index)  # (b, N, K)
    score = torch.diagonal(gram, dim1=1, dim2=2)[:, None, :] - 2.0 * dots
    return (score.argmin(dim=2) == st.classes.index).to(F64).mean(dim=1)


def regression_onehot(st: LayerStatistics) -> torch.Tensor:
    """RMSE of the best affine map from the features to one-hot labels (SM S5). (b,)

    Centring both sides removes the intercept. The least-squares fit uses a
    Householder QR of the centred features X = Q R and an SVD R = U S Vᵀ,
    dropping s ≤ eps·max(N, d)·s_max — the same rank rule as the reference's
    ``numpy.linalg.lstsq(rcond=None)`` and as well conditioned (no normal
    equations, which would square the condition number). The residual is
    formed explicitly, so an exact fit gives ~1e-15, not √eps.
    """
    cl = st.classes
    n, d = st.resid.shape[1:]
    centred_means = st.means - st.global_mean[:, None, :]  # (b, K, d)
    xc = st.resid + centred_means.index_select(1, cl.index)  # (b, N, d) h_i − μ
    t = cl.onehot.T - cl.counts / n  # (N, K) centred one-hot targets
    with _one_cpu_thread(xc.device):
        q, r = torch.linalg.qr(xc)  # (b, N, p), (b, p, d), p = min(N, d)
        u, s, _ = torch.linalg.svd(r, full_matrices=False)  # (b, p, p), (b, p)
    keep = s > torch.finfo(F64).eps * max(n, d) * s[:, :1]  # (b, p)
    coef = (u.transpose(1, 2) @ (q.transpose(1, 2) @ t)) * keep[:, :, None]  # (b, p, K)
    resid = t - q @ (u @ coef)  # (b, N, K)
    return torch.sqrt((resid * resid).sum(dim=(1, 2)) / n)


#: name → measure of the layer statistics, (b,) per block.
MEASURES: dict[str, Callable[..., torch.Tensor]] = {
    "trace_ratio": trace_ratio,
    "fuzziness": fuzziness,
    "cdnv": cdnv,
    "ncc": ncc_accuracy,
    "regression": regression_onehot,
}
# The batched table holds the reference's measures, no more and no fewer.
assert tuple(MEASURES) == MEASURE_NAMES, "separation.MEASURES must follow metrics.MEASURES"


# --------------------------------------------------------------------------
# Layers and load curves
# --------------------------------------------------------------------------


def default_block_bytes(device: torch.device) -> int:
    """Float64 bytes of one block of models: cache-sized on the CPU, large on a GPU.

    On the CPU each statistic is one pass over memory, so a block that stays
    in cache (one or two 2560 × 100 layers) is fastest; a GPU wants as many
    models per kernel as memory allows.
    """
    return MAX_BLOCK_BYTES if device.type == "cuda" else CPU_BLOCK_BYTES


def _measure_layer(h, classes, measures, rcond, max_block_bytes) -> torch.Tensor:
    """(M, N, d) features of one layer → (M, n_measures), in blocks of models."""
    fns = {**MEASURES, "fuzziness": functools.partial(fuzziness, rcond=rcond)}
    per_model = h.shape[1] * h.shape[2] * 8  # float64 bytes of one model's layer
    b = max(1, min(h.shape[0], (max_block_bytes or default_block_bytes(h.device)) // per_model))
    blocks = []
    for start in range(0, h.shape[0], b):
        st = layer_statistics(h[start:start + b], classes)
        out = torch.stack([fns[name](st) for name in measures], dim=1)  # (b, n_measures)
        blocks.append(torch.where(st.finite[:, None], out, math.nan))
    return torch.cat(blocks, dim=0)


def _check_layers(features) -> list[torch.Tensor]:
    layers = [torch.as_tensor(h) for h in features]
    require(len(layers) > 0, "features", "a non-empty list of layers (M, N, d)", len(layers))
    shapes = [tuple(h.shape) for h in layers]
    require(all(h.ndim == 3 and h.is_floating_point() for h in layers), "features",
            "float tensors (M models, N samples, d units), one per layer", shapes)
    require(len({s[:2] for s in shapes}) == 1 and shapes[0][1] > 0, "features",
            "layers with the same M models and N >= 1 samples", shapes)
    require(len({h.device for h in layers}) == 1, "features", "layers on one device",
            sorted({str(h.device) for h in layers}))
    return layers


def measure_layers(features: Sequence[torch.Tensor], labels,
                   measures: Sequence[str] = DEFAULT_MEASURES, *,
                   rcond: float = FUZZINESS_RCOND,
                   max_block_bytes: int | None = None) -> torch.Tensor:
    """Load curves of M models for several measures: (M, n_measures, L+1) float64.

    ``features``: the L+1 layers [h_0 .. h_L] (layer 0 = input), each
    (M, N, d_ℓ) on one device, any float dtype (widths may differ);
    ``labels`` (N,) shared by all models, any integer values (the classes are
    the distinct values present, at least 2). ``measures``: names in
    ``MEASURE_NAMES`` (default ``DEFAULT_MEASURES``); "ncc" is an accuracy in
    [0, 1], the others decrease as classes separate. ``rcond``: the
    fuzziness rank cut-off. ``max_block_bytes``: float64 size of one block
    of models (default :func:`default_block_bytes`; results do not depend on it).

    Each entry equals ``dnnphase.metrics.load_curve(features, labels,
    measure)`` to ~1e-13 and depends only on that model's features; a model
    and layer whose features hold NaN or inf gives NaN. The result stays on
    the features' device.
    """
    measures = check_measures(measures, "measures")
    layers = _check_layers(features)
    require(isinstance(rcond, int | float) and rcond >= 0, "rcond", "a number >= 0", rcond)
    require(max_block_bytes is None or max_block_bytes >= 1, "max_block_bytes",
            "None or an integer >= 1", max_block_bytes)
    classes = class_index(labels, layers[0].shape[1], layers[0].device)
    with _one_cpu_thread(layers[0].device):
        return torch.stack([_measure_layer(h, classes, measures, rcond, max_block_bytes)
                            for h in layers], dim=2)


def measure_layer(h, labels, measures: Sequence[str] = DEFAULT_MEASURES, **options):
    """The ``measures`` of one layer's features ``h`` (M, N, d) → (M, n_measures) float64.

    Options and conventions as :func:`measure_layers`.
    """
    return measure_layers([h], labels, measures, **options)[:, :, 0]
