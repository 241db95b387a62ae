"""Separation measures of many models and layers at once, in torch (docs/measures.md).

The batched counterpart of :mod:`dnnphase.measures.separation_numpy`, which stays the numpy
reference: the same five measures with the same definitions and conventions
(paper Eq. 2-3, SM Eq. 9, SM S5; see ``docs/measures.md``), evaluated for all
M models of a chunk at once, on the device that holds the features, in
float64, without a per-model Python loop and without copying the features to
the host.

Every measure is computed in two passes over a layer's samples, features
``h`` (b models, n samples, d units) of classes ``index`` (n,):

1. the class sums give the class means μ_c and the global mean μ
   (:func:`class_means`);
2. each sample's residual h_i − μ_c(i) (:func:`residuals`) adds to a few
   sums per measure (:data:`MEASURES`: ``prepare``, ``sums``, ``finish``),
   whose totals give the value, (b,) float64.

Features in memory make each pass a single batch (:func:`measure_layers`, the
sweeps); features of a data set too large for memory arrive in batches
(:class:`LayerAccumulator`, :func:`dnnphase.measures.load_curve.measure_model`). One
implementation serves both.

Memory: the float64 copy of a block of b models and its residuals take
2·b·N·d·8 bytes; b is chosen so that one float64 block stays under
``max_block_bytes``. Models whose features contain NaN or inf are zeroed
before any linear algebra and give NaN for that model and layer only, as the
reference does.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Callable, Sequence
from typing import NamedTuple

import torch

from dnnphase.defaults import SWEEP_MEASURES
from dnnphase.measures.separation_numpy import FUZZINESS_RCOND, MEASURE_NAMES, check_measures
from phasecore.checks import require

__all__ = [
    "MEASURE_NAMES",
    "DEFAULT_MEASURES",
    "FUZZINESS_RCOND",
    "MEASURES",
    "ClassMeans",
    "Classes",
    "LayerAccumulator",
    "Measure",
    "Residuals",
    "class_index",
    "class_means",
    "residuals",
    "measure_layer",
    "measure_layers",
    "default_block_bytes",
]

#: The sweep's default measures (:data:`dnnphase.defaults.SWEEP_MEASURES`). The names
#: (``MEASURE_NAMES``) and the fuzziness's rank cut-off (``FUZZINESS_RCOND``, see
#: docs/measures.md) are the reference's, :mod:`dnnphase.measures.separation_numpy`.
DEFAULT_MEASURES = SWEEP_MEASURES

#: Float64 bytes of one block of models on a GPU / on the CPU (see default_block_bytes).
MAX_BLOCK_BYTES = 512 * 2**20
CPU_BLOCK_BYTES = 4 * 2**20

F64 = torch.float64


# --------------------------------------------------------------------------
# Classes
# --------------------------------------------------------------------------


class Classes(NamedTuple):
    """The classes of N labelled samples, K of them in sorted label order."""

    index: torch.Tensor  # (N,) class of each sample, 0..K-1
    counts: torch.Tensor  # (K,) n_c, float64
    onehot: torch.Tensor  # (K, N) class membership, float64


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
    return Classes(index, counts.to(F64), _onehot(index, len(counts)))


def _onehot(index: torch.Tensor, k: int) -> torch.Tensor:
    """(K, n) float64 membership of samples of class ``index`` (n,)."""
    onehot = torch.zeros(k, index.shape[0], dtype=F64, device=index.device)
    onehot[index, torch.arange(index.shape[0], device=index.device)] = 1.0
    return onehot


def _add_class_sums(sums: torch.Tensor, x: torch.Tensor, index: torch.Tensor,
                    onehot: torch.Tensor | None) -> torch.Tensor:
    """``sums`` (b, K, d) += Σ_{i∈c} x_i of (b, n, d) float64 features, in place.

    A one-hot matmul on CUDA, where ``index_add`` sums with atomics in a
    varying order; ``index_add`` on the CPU, where it is sequential and ~5x
    faster than the skinny matmul.
    """
    if x.device.type == "cuda":
        return sums.add_(onehot @ x)
    return sums.index_add_(1, index, x)


# --------------------------------------------------------------------------
# The two passes over a layer's samples, batched over models
# --------------------------------------------------------------------------
#
# Every measure is a function of the class means (pass 1) and of sums over the
# samples of quantities of their residuals h_i − μ_c(i) (pass 2). Features in
# memory make each pass one batch (:func:`measure_layers`); features that do
# not fit arrive in batches (:class:`LayerAccumulator`, used by
# :func:`dnnphase.measures.load_curve.measure_model`). Both run the same functions below.


class ClassMeans(NamedTuple):
    """Pass 1: the class means of b models' features of one layer, float64.

    Models whose features hold NaN or inf (seen in their class sums, which
    NaN/inf reach) get zero means and zero features in pass 2, so that the
    linear algebra of the measures stays defined; ``finite`` marks them and
    their values are NaN.
    """

    means: torch.Tensor  # (b, K, d) class means μ_c
    global_mean: torch.Tensor  # (b, d) μ
    finite: torch.Tensor  # (b,) bool
    counts: torch.Tensor  # (K,) n_c, float64
    n: int  # N samples


def class_means(sums: torch.Tensor, counts: torch.Tensor) -> ClassMeans:
    """:class:`ClassMeans` from the class sums (b, K, d) and counts (K,) of N samples."""
    finite = torch.isfinite(sums).flatten(1).all(dim=1)  # (b,)
    if not bool(finite.all()):
        sums = torch.where(finite[:, None, None], sums, 0.0)
    n = int(counts.sum())
    return ClassMeans(sums / counts[:, None], sums.sum(dim=1) / n, finite, counts, n)


class Residuals(NamedTuple):
    """Pass 2: one batch of n samples seen from the class means, float64."""

    resid: torch.Tensor  # (b, n, d) h_i − μ_c(i)
    resid_sq: torch.Tensor  # (b, n) ‖h_i − μ_c(i)‖²
    index: torch.Tensor  # (n,) class of each sample
    onehot: torch.Tensor  # (K, n) class membership


def residuals(h: torch.Tensor, index: torch.Tensor, onehot: torch.Tensor,
              cm: ClassMeans) -> Residuals:
    """The :class:`Residuals` of features ``h`` (b, n, d), any float dtype, of classes
    ``index`` (n,)."""
    x = h.to(F64)  # (b, n, d); no copy if h is already float64 (x is never written)
    if not bool(cm.finite.all()):
        x = torch.where(cm.finite[:, None, None], x, 0.0)
    resid = cm.means.index_select(1, index)  # (b, n, d) μ_c(i), overwritten next
    torch.sub(x, resid, out=resid)  # h_i − μ_c(i)
    resid_sq = torch.linalg.vector_norm(resid, dim=2).square()  # (b, n), one pass
    return Residuals(resid, resid_sq, index, onehot)


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


def _between_factor(cm: ClassMeans) -> torch.Tensor:
    # Σ_b = Bᵀ B with rows B_c = √(n_c/N) (μ_c − μ): (b, K, d), never d × d.
    counts = cm.counts
    return (cm.means - cm.global_mean[:, None, :]) * torch.sqrt(counts / counts.sum())[:, None]


# --------------------------------------------------------------------------
# Measures. Each: what pass 2 needs from pass 1 (``prepare``), one batch's
# contribution (``sums``, added over batches unless ``merge`` says otherwise),
# and the value from the totals (``finish``), (b,) float64.
# --------------------------------------------------------------------------


def _nothing(cm: ClassMeans, rcond: float) -> None:
    return None


def _trace_ratio_sums(r: Residuals, cm: ClassMeans, ctx) -> torch.Tensor:
    return r.resid_sq.sum(dim=1)  # (b,) Σ_i ‖h_i − μ_c(i)‖²


def _trace_ratio(total: torch.Tensor, cm: ClassMeans, ctx) -> torch.Tensor:
    """log(Tr Σ_w / Tr Σ_b) (paper Eq. 3), from traces only."""
    tr_w = total / cm.n  # (b,)
    b = _between_factor(cm)
    tr_b = (b * b).sum(dim=(1, 2))  # (b,) Σ_c (n_c/N) ‖μ_c − μ‖²
    return torch.log(tr_w / tr_b)


def _fuzziness_prepare(cm: ClassMeans, rcond: float):
    """Σ_b's eigenvectors u_j and eigenvalues σ_j (kept: σ_j > rcond·σ_max).

    Σ_b = Bᵀ B has rank ≤ K − 1, so everything happens in the span of the
    centred class means: the thin SVD Bᵀ = U S Vᵀ (d × K, batched) gives
    σ_j = s_j² with eigenvectors u_j. The SVD of B (rather than an
    eigendecomposition of B Bᵀ) keeps small σ_j as accurate as the reference.
    """
    u, s = _thin_svd(_between_factor(cm).transpose(1, 2))  # (b, d, r), (b, r)
    sigma = s * s  # (b, r) descending
    return u, sigma, sigma > rcond * sigma[:, :1]


def _fuzziness_sums(r: Residuals, cm: ClassMeans, ctx) -> torch.Tensor:
    proj = r.resid @ ctx[0]  # (b, n, r): residuals along Σ_b's eigenvectors
    return (proj * proj).sum(dim=1)  # (b, r)


def _fuzziness(total: torch.Tensor, cm: ClassMeans, ctx) -> torch.Tensor:
    """log Tr(Σ_w Σ_b⁺) (He & Su; SM Eq. 9) with a relative rank cut-off:
    Σ_{σ_j > rcond·σ_max} u_jᵀ Σ_w u_j / σ_j, u_jᵀ Σ_w u_j = (1/N) Σ_i (r_i·u_j)².
    +inf if all class means coincide."""
    _, sigma, keep = ctx
    along = total / cm.n  # (b, r): u_jᵀ Σ_w u_j
    terms = torch.where(keep, along / torch.where(keep, sigma, 1.0), 0.0)
    return torch.where(sigma[:, 0] > 0, torch.log(terms.sum(dim=1)), math.inf)


def _cdnv_sums(r: Residuals, cm: ClassMeans, ctx) -> torch.Tensor:
    # Per-class sums as an elementwise product and sum, not a matrix product,
    # so that a model's value does not depend on how many share the block.
    return (r.resid_sq[:, None, :] * r.onehot).sum(dim=2)  # (b, K)


def _cdnv(total: torch.Tensor, cm: ClassMeans, ctx) -> torch.Tensor:
    """Mean over class pairs of (Var_i + Var_j) / (2‖μ_i − μ_j‖²) (Galanti et al.)."""
    k = cm.counts.shape[0]
    var = total / cm.counts  # (b, K): Var_c
    i, j = torch.triu_indices(k, k, offset=1, device=var.device)  # the K(K-1)/2 pairs
    # Direct differences, as in the reference, so close means keep their distance.
    diff = cm.means[:, j] - cm.means[:, i]  # (b, P, d)
    dist2 = (diff * diff).sum(dim=2)  # (b, P)
    return ((var[:, i] + var[:, j]) / (2.0 * dist2)).mean(dim=1)


def _ncc_prepare(cm: ClassMeans, rcond: float):
    mc = cm.means - cm.means.mean(dim=1, keepdim=True)  # (b, K, d)
    return mc, mc @ mc.transpose(1, 2)  # (b, K, K) Gram matrix


def _ncc_sums(r: Residuals, cm: ClassMeans, ctx) -> torch.Tensor:
    """Samples nearest (Euclidean) their own class mean, (b,).

    Distances are taken from the centroid o of the class means, so that a
    large common offset does not cancel digits, and ‖h_i − o‖² (common to all
    classes) is dropped: score_ik = ‖m_k‖² − 2 (h_i − o)·m_k with m_k = μ_k − o
    and h_i − o = r_i + m_c(i). Ties go to the lower class, as in the reference.
    """
    mc, gram = ctx
    dots = r.resid @ mc.transpose(1, 2) + gram.index_select(1, r.index)  # (b, n, K)
    score = torch.diagonal(gram, dim1=1, dim2=2)[:, None, :] - 2.0 * dots
    return (score.argmin(dim=2) == r.index).to(F64).sum(dim=1)


def _ncc(total: torch.Tensor, cm: ClassMeans, ctx) -> torch.Tensor:
    """Nearest-class-centre accuracy (Galanti et al.)."""
    return total / cm.n


def _regression_sums(r: Residuals, cm: ClassMeans, ctx) -> torch.Tensor:
    """The R factor of the centred features and one-hot targets [X T] of this batch,
    (b, min(n, d + K), d + K): the least-squares problem, compressed."""
    centred_means = cm.means - cm.global_mean[:, None, :]  # (b, K, d)
    xc = r.resid + centred_means.index_select(1, r.index)  # (b, n, d) h_i − μ
    t = r.onehot.T - cm.counts / cm.n  # (n, K) centred one-hot targets
    a = torch.cat([xc, t.expand(xc.shape[0], -1, -1)], dim=2)  # (b, n, d + K)
    with _one_cpu_thread(a.device):
        return torch.linalg.qr(a, mode="r")[1]


def _regression_merge(r1: torch.Tensor, r2: torch.Tensor) -> torch.Tensor:
    """R factor of two stacked blocks from theirs (a tall-skinny QR step)."""
    with _one_cpu_thread(r1.device):
        return torch.linalg.qr(torch.cat([r1, r2], dim=1), mode="r")[1]


def _regression(total: torch.Tensor, cm: ClassMeans, ctx) -> torch.Tensor:
    """RMSE of the best affine map from the features to one-hot labels (SM S5).

    Centring both sides removes the intercept. With [X T] = Q R and
    R = [[R₁₁, R₁₂], [0, R₂₂]] (a Householder QR, accumulated over batches),
    the residual of the fit restricted to the kept singular directions U of
    R₁₁ = U S Vᵀ is ‖R₂₂‖² + ‖U_dropᵀ R₁₂‖²: a sum of squares, so an exact fit
    gives ~1e-15, not √eps. Kept: s > eps·max(N, d)·s_max, the rank rule of
    the reference's ``numpy.linalg.lstsq(rcond=None)``; no normal equations,
    which would square the condition number.
    """
    b, p, width = total.shape
    d = cm.means.shape[2]
    if p < width:  # fewer samples than columns: the missing rows of R are zero
        total = torch.cat([total, total.new_zeros(b, width - p, width)], dim=1)
    r11, r12, r22 = total[:, :d, :d], total[:, :d, d:], total[:, d:, d:]
    with _one_cpu_thread(total.device):
        u, s, _ = torch.linalg.svd(r11, full_matrices=False)  # (b, d, d), (b, d)
    keep = s > torch.finfo(F64).eps * max(cm.n, d) * s[:, :1]  # (b, d)
    dropped = (u.transpose(1, 2) @ r12) * ~keep[:, :, None]  # (b, d, K)
    return torch.sqrt(((r22 * r22).sum(dim=(1, 2)) + (dropped * dropped).sum(dim=(1, 2)))
                      / cm.n)


class Measure(NamedTuple):
    """One separation measure in the two-pass form (see the section comment)."""

    prepare: Callable  # (ClassMeans, rcond) -> what pass 2 needs
    sums: Callable  # (Residuals, ClassMeans, prepared) -> one batch's contribution
    finish: Callable  # (total, ClassMeans, prepared) -> (b,) float64
    merge: Callable = torch.add  # combines two batches' contributions


#: name → measure, in the order of the reference's table (:data:`MEASURE_NAMES`).
MEASURES: dict[str, Measure] = {
    "trace_ratio": Measure(_nothing, _trace_ratio_sums, _trace_ratio),
    "fuzziness": Measure(_fuzziness_prepare, _fuzziness_sums, _fuzziness),
    "cdnv": Measure(_nothing, _cdnv_sums, _cdnv),
    "ncc": Measure(_ncc_prepare, _ncc_sums, _ncc),
    "regression": Measure(_nothing, _regression_sums, _regression, _regression_merge),
}
# The batched table holds the reference's measures, no more and no fewer.
assert tuple(MEASURES) == MEASURE_NAMES, "separation.MEASURES must follow metrics.MEASURES"


def _measure_block(h: torch.Tensor, classes: Classes, measures: Sequence[str],
                   rcond: float) -> torch.Tensor:
    """Features in memory, (b, N, d) → (b, n_measures): both passes as one batch each."""
    x = h.to(F64)
    sums = torch.zeros(x.shape[0], classes.counts.shape[0], x.shape[2], dtype=F64,
                       device=x.device)
    cm = class_means(_add_class_sums(sums, x, classes.index, classes.onehot), classes.counts)
    r = residuals(x, classes.index, classes.onehot, cm)
    out = []
    for name in measures:
        m = MEASURES[name]
        ctx = m.prepare(cm, rcond)
        out.append(m.finish(m.sums(r, cm, ctx), cm, ctx))
    return torch.where(cm.finite[:, None], torch.stack(out, dim=1), math.nan)


class LayerAccumulator:
    """The measures of b models' features of one layer, fed in batches of samples.

    Pass 1: :meth:`add_means` with every batch, then :meth:`end_means`;
    pass 2: :meth:`add_residuals` with the same samples (in any order and
    batching), then :meth:`values`. Memory: the class sums, K·d per model,
    and each measure's totals (small; "regression" keeps a (d+K)² R factor).
    The classes are the distinct label values met in pass 1 (sorted, as
    :func:`class_index`); pass 2 checks that it saw the same samples.

    Features: (b, n, d) tensors of any float dtype on one device; labels (n,).
    """

    def __init__(self, measures: Sequence[str], rcond: float = FUZZINESS_RCOND) -> None:
        self.measures = tuple(measures)
        self.rcond = rcond
        self._labels: list[int] = []  # label value of each class slot, in order met
        self._sums: torch.Tensor | None = None  # (b, K, d) by slot
        self._counts: torch.Tensor | None = None  # (K,) by slot
        self._means: ClassMeans | None = None
        self._sorted: torch.Tensor | None = None  # (K,) label values, ascending
        self._ctx: list = []
        self._totals: list = []
        self._seen = None  # pass 2: class counts and Σ residuals (b, d), a consistency check

    def _check(self, h: torch.Tensor, labels) -> tuple[torch.Tensor, torch.Tensor]:
        require(h.ndim == 3 and h.is_floating_point(), "features",
                "a float tensor (b models, n samples, d units)", tuple(h.shape))
        y = torch.as_tensor(labels, device=h.device)
        require(y.ndim == 1 and y.shape[0] == h.shape[1], "labels",
                f"a 1-D tensor of n = {h.shape[1]} class labels (one per sample)",
                tuple(y.shape))
        require(not y.is_floating_point() or bool((y == y.round()).all()), "labels",
                "integer class labels", y.dtype)
        return h.to(F64), y.to(torch.long)

    def add_means(self, h: torch.Tensor, labels) -> None:
        """Pass 1: add a batch of features (b, n, d) of classes ``labels`` (n,)."""
        require(self._means is None, "add_means", "called before end_means", "after")
        x, y = self._check(h, labels)
        if self._sums is None:
            self._sums = x.new_zeros(x.shape[0], 0, x.shape[2])
            self._counts = x.new_zeros(0)
        require(x.shape[0] == self._sums.shape[0] and x.shape[2] == self._sums.shape[2],
                "features", f"(b, n, d) with b = {self._sums.shape[0]} and d = "
                f"{self._sums.shape[2]} in every batch", tuple(x.shape))
        values, index, counts = torch.unique(y, return_inverse=True, return_counts=True)
        new = [int(v) for v in values.tolist() if int(v) not in self._labels]
        if new:  # grow the slots; a class keeps its slot from then on
            self._labels += new
            self._sums = torch.cat([self._sums, x.new_zeros(x.shape[0], len(new), x.shape[2])],
                                   dim=1)
            self._counts = torch.cat([self._counts, x.new_zeros(len(new))])
        slot_of = torch.tensor([self._labels.index(int(v)) for v in values.tolist()],
                               device=x.device)
        slots = slot_of[index]  # (n,)
        onehot = _onehot(slots, len(self._labels)) if x.device.type == "cuda" else None
        _add_class_sums(self._sums, x, slots, onehot)
        self._counts.index_add_(0, slot_of, counts.to(F64))

    def end_means(self) -> ClassMeans:
        """End pass 1: the class means (classes in ascending label order)."""
        require(self._sums is not None, "data", "at least one sample", 0)
        require(len(self._labels) >= 2, "labels", "at least 2 classes", len(self._labels))
        order = torch.tensor(sorted(range(len(self._labels)), key=self._labels.__getitem__),
                             device=self._sums.device)
        self._sorted = torch.tensor(sorted(self._labels), device=self._sums.device)
        self._means = class_means(self._sums[:, order], self._counts[order])
        self._sums = None
        self._ctx = [MEASURES[name].prepare(self._means, self.rcond) for name in self.measures]
        self._totals = [None] * len(self.measures)
        b, _, d = self._means.means.shape
        # class counts, Σ_i r_i (b, d) and Σ_i ‖r_i‖ (b,) of pass 2
        self._seen = [torch.zeros_like(self._means.counts), self._means.means.new_zeros(b, d),
                      self._means.means.new_zeros(b)]
        return self._means

    def add_residuals(self, h: torch.Tensor, labels) -> None:
        """Pass 2: add a batch of the same samples."""
        cm = self._means
        require(cm is not None, "add_residuals", "called after end_means", "before")
        x, y = self._check(h, labels)
        index = torch.searchsorted(self._sorted, y).clamp_(max=len(self._sorted) - 1)
        require(bool((self._sorted[index] == y).all()), "labels",
                "the classes of pass 1 (the data changed between the passes)",
                sorted(set(y.tolist()) - set(self._labels)))
        r = residuals(x, index, _onehot(index, len(self._sorted)), cm)
        self._seen[0].index_add_(0, index, torch.ones_like(index, dtype=F64))
        self._seen[1] += r.resid.sum(dim=1)
        self._seen[2] += r.resid_sq.sqrt().sum(dim=1)
        for k, name in enumerate(self.measures):
            m = MEASURES[name]
            part = m.sums(r, cm, self._ctx[k])
            self._totals[k] = part if self._totals[k] is None else \
                m.merge(self._totals[k], part)

    def values(self) -> torch.Tensor:
        """The measures, (b, n_measures) float64 (NaN for models with non-finite features).

        ConfigError if pass 2 did not see the samples of pass 1: other class counts,
        or residuals that do not sum to zero (random augmentation, a shuffle that
        drops a different last batch, a model that is not deterministic).
        """
        cm = self._means
        require(cm is not None and self._totals and self._totals[0] is not None, "data",
                "two passes over the same samples (add_means ... end_means, add_residuals)",
                "an unfinished pass")
        require(torch.equal(self._seen[0], cm.counts), "data",
                "the same samples in both passes (class counts differ: a shuffle with "
                "drop_last, or a changing data set)",
                (self._seen[0].tolist(), cm.counts.tolist()))
        # Σ_i (h_i − μ_c(i)) = 0 when both passes saw the same features.
        # The scale of Σ_i ‖h_i‖, against which rounding is measured.
        scale = self._seen[2] + cm.n * torch.linalg.vector_norm(cm.means, dim=(1, 2)) + 1e-300
        drift = torch.linalg.vector_norm(self._seen[1], dim=1) / scale
        drift = torch.where(cm.finite, drift, 0.0)
        require(bool((drift < 1e-9).all()), "data",
                "the same features in both passes (random augmentation, dropout left on, "
                "or a non-deterministic model)", f"relative drift {float(drift.max()):.1e}")
        out = [MEASURES[name].finish(total, cm, ctx)
               for name, total, ctx in zip(self.measures, self._totals, self._ctx, strict=True)]
        return torch.where(cm.finite[:, None], torch.stack(out, dim=1), math.nan)


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
    per_model = h.shape[1] * h.shape[2] * 8  # float64 bytes of one model's layer
    b = max(1, min(h.shape[0], (max_block_bytes or default_block_bytes(h.device)) // per_model))
    return torch.cat([_measure_block(h[start:start + b], classes, measures, rcond)
                      for start in range(0, h.shape[0], b)], dim=0)


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

    Each entry equals ``dnnphase.measures.separation_numpy.load_curve(features, labels,
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
