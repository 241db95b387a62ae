"""The papers' per-model statistics of a load curve: He & Su's law of equi-separation and
Galanti et al.'s effective depth, and NCC on held-out data with the training class centres.

**He & Su** (a law of data separation): the separation fuzziness D_l = Tr(SS_w SS_b⁺) of the
training data decays geometrically with depth, D_l ≈ ρ^l D_0, so log D_l is a straight line in
l. Per model, from its fuzziness load curve:

* ``pearson_r`` — the Pearson correlation of log D_l with l (−1: exactly geometric decay);
* ``decay_ratio`` ρ = exp(b), b the least-squares slope of log D_l against l;
* ``half_life`` = ln 2 / ln(1/ρ) = ln 2 / (−b) layers (inf where log D does not decrease).

The project's fuzziness is stored as log Tr(Σ_w Σ_b⁺) already (natural log,
:func:`dnnphase.measures.separation_numpy.fuzziness`), so these are
:func:`phasecore.loadcurve.linearity` of the stored curve as it is: no second log.

*Layers.* He & Su take "D_l ... of the training data passing through the first l layers for
0 ≤ l ≤ L − 1" of an L-layer network, and footnote 2: "D_0 is calculated from the raw data,
and D_1 is calculated from the data that have passed through the first layer". The input is
part of their line, so the statistics use every layer 0..L of the load curve, the input
included (an L-layer network of theirs has L − 1 hidden layers and the output layer; the
project's L hidden layers with the head are their L + 1). In a sweep, layer 0 is the input
after the input BatchNorm (a per-feature affine map); :func:`measure_model` measures the raw
input as ``"input"``.

**Galanti et al.** (the implicit bias of depth minimisation), Definition 1: the effective
depth is "the minimal value i ∈ [L]" such that the nearest-class-centre classifier of layer i,
centres the training class means, classifies every training sample correctly; their
experiments "treat > 99% fitting of the training data as a (close to) perfect
interpolation". ``effective_depth`` is the first hidden layer 1..L (the input is not in [L])
whose training NCC accuracy reaches :data:`EFFECTIVE_DEPTH_THRESHOLD` (0.99), NaN where none
does. Their test NCC (err_P of ĥ_i(x) = argmin_c ‖f_i(x) − μ_{f_i}(S_c)‖) classifies test
samples with the *training* class means: :func:`ncc_to_centres` with the :func:`class_centres`
of the training features. (A sweep's ``load_curve_test`` NCC uses the test set's own class
means instead: another, optimistic quantity, kept under its own name.)
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import NamedTuple

import numpy as np
import torch

from dnnphase.measures.separation_numpy import EFFECTIVE_DEPTH_THRESHOLD
from dnnphase.measures.separation_numpy import effective_depth as _first_reaching
from phasecore import loadcurve
from phasecore.checks import is_real, require

__all__ = ["EFFECTIVE_DEPTH_THRESHOLD", "EQUI_SEPARATION", "Centres", "class_centres",
           "effective_depth", "equi_separation", "ncc_to_centres"]

#: He & Su's statistics, in the order :func:`equi_separation` returns them.
EQUI_SEPARATION = ("pearson_r", "decay_ratio", "half_life")

_F64 = torch.float64


def equi_separation(log_fuzziness) -> dict[str, np.ndarray]:
    """He & Su's ``pearson_r``, ``decay_ratio`` ρ and ``half_life`` (layers) of load curves.

    Parameters
    ----------
    log_fuzziness : array (..., L+1)
        log D_l, the natural log of the separation fuzziness at layers 0..L (layer 0 the
        input; the project's ``fuzziness`` measure is this log already).

    Returns
    -------
    dict of three float64 arrays of shape (...): r of log D_l with l (dimensionless, in
    [−1, 1]), ρ = exp(slope) (dimensionless, per layer), ln 2 / (−slope) (layers; inf where
    the slope is ≥ 0). NaN where a curve is not finite at every layer (a diverged model, a
    layer without between-class spread) or has fewer than three layers.
    """
    d = np.asarray(log_fuzziness, dtype=np.float64)
    require(d.ndim >= 1, "log_fuzziness", "an array (..., L+1) of load curves", d.shape)
    shape = d.shape[:-1]
    if d.shape[-1] < 3:
        return {name: np.full(shape, np.nan) for name in EQUI_SEPARATION}
    finite = np.isfinite(d).all(axis=-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        values = loadcurve.linearity(np.where(finite[..., None], d, 0.0))
    return {name: np.where(finite, values[name], np.nan) for name in EQUI_SEPARATION}


def effective_depth(ncc_accuracy, threshold: float = EFFECTIVE_DEPTH_THRESHOLD,
                    first: int = 1) -> np.ndarray:
    """Galanti et al.'s effective depth: the first hidden layer whose NCC accuracy reaches
    ``threshold``.

    Parameters
    ----------
    ncc_accuracy : array (..., L+1)
        Training NCC accuracy (training class centres) of layers 0..L, layer 0 the input.
    threshold : float in (0, 1]
        Default 0.99, Galanti et al.'s "> 99 % fitting" of the training data (reached at
        exactly 0.99 too).
    first : int >= 0
        The first layer that counts: 1 skips the input (layer 0 is not in Definition 1's
        i ∈ [L]); 0 where layer 0 is a hidden layer (a model measured without its input).

    Returns
    -------
    float64 array (...): the layer index in ``first``..L, NaN where no such layer reaches
    the threshold, or where a layer before the first that does is NaN (no accuracy to
    compare).
    """
    acc = np.asarray(ncc_accuracy, dtype=np.float64)
    require(acc.ndim >= 1, "ncc_accuracy", "an array (..., L+1) of NCC accuracies", acc.shape)
    require(first in (0, 1), "first", "0 or 1 (skip the input)", first)
    require(is_real(threshold) and 0.0 < threshold <= 1.0, "threshold", "in (0, 1]", threshold)
    outside = acc[~np.isnan(acc) & ((acc < 0.0) | (acc > 1.0))]
    require(outside.size == 0, "ncc_accuracy", "accuracies in [0, 1] (or NaN)",
            outside[:3].tolist())
    if acc.shape[-1] <= first:
        return np.full(acc.shape[:-1], np.nan)
    hidden = acc[..., first:]
    depth = np.asarray(_first_reaching(hidden, threshold), dtype=np.float64) + first
    # A NaN layer below the first one that reaches the threshold hides an earlier one.
    before = np.cumsum(np.isnan(hidden), axis=-1) > 0
    position = np.nan_to_num(depth, nan=first).astype(np.int64) - first
    hidden_nan = np.take_along_axis(before, position[..., None], -1)[..., 0]
    return np.where(np.isnan(depth) | hidden_nan, np.nan, depth)


class Centres(NamedTuple):
    """The NCC classifier of every layer: class means of M models' features (float64)."""

    means: list  # per layer (M, K, d_l); a class a model has no sample of: zeros
    classes: torch.Tensor  # (K,) the label value of each row, ascending
    present: torch.Tensor  # (M, K) bool: the model has samples of the class


def _check_features(features) -> None:
    """features: a non-empty list of (M, N, d_l) tensors sharing M and N."""
    shapes = [tuple(h.shape) if torch.is_tensor(h) else type(h).__name__
              for h in (features if isinstance(features, (list, tuple)) else [features])]
    require(isinstance(features, (list, tuple)) and len(features) >= 1
            and all(isinstance(s, tuple) and len(s) == 3 and s[:2] == shapes[0][:2]
                    for s in shapes),
            "features", "a non-empty list of (M, N, d_l) tensors, one per layer, sharing M "
            "and N", shapes)


def _integer_labels(labels) -> torch.Tensor:
    """labels as a tensor; a non-integral value (0.5, NaN) is refused, not truncated."""
    y = torch.as_tensor(labels)
    require(not y.is_floating_point() or bool((y == torch.round(y)).all()), "labels",
            "integer class labels", "non-integral values")
    return y


def class_centres(features: Sequence[torch.Tensor], labels) -> Centres:
    """The class means of every layer, float64: the centres of the NCC classifier.

    Parameters
    ----------
    features : list of L+1 tensors (M, N, d_l)
        Each layer's features of M models on N samples, any float dtype, one device.
    labels : tensor (N,) or (M, N)
        Integer class labels, shared by the models or one row per model (e.g. a model's own
        fixed random labels).

    Returns
    -------
    :class:`Centres`: per layer (M, K, d_l) means, row k the mean of class ``classes[k]``
    (the sorted label values present in any model); a class a model has no sample of is
    marked absent in ``present`` and is never its nearest centre.
    """
    _check_features(features)
    h0 = features[0]
    y = _integer_labels(labels).to(h0.device, torch.long)
    m, n = h0.shape[0], h0.shape[1]
    require(y.shape in ((n,), (m, n)), "labels", f"(N,) or (M, N) with M = {m}, N = {n}",
            tuple(y.shape))
    classes, index = torch.unique(y, return_inverse=True)
    onehot = torch.zeros((*y.shape[:-1], len(classes), n), dtype=_F64, device=h0.device)
    onehot.scatter_(-2, index.unsqueeze(-2), 1.0)  # (K, N) or (M, K, N)
    counts = onehot.sum(-1, keepdim=True)  # (..., K, 1)
    with torch.no_grad(), _one_cpu_thread(h0.device):
        means = [torch.matmul(onehot, h.to(_F64)) / counts.clamp(min=1) for h in features]
    present = (counts[..., 0] > 0).expand(m, len(classes))
    return Centres(means, classes, present)


def ncc_to_centres(features: Sequence[torch.Tensor], labels, centres: Centres) -> torch.Tensor:
    """Nearest-class-centre accuracy of every layer with given centres: (M, L+1) float64.

    Parameters
    ----------
    features : list of L+1 tensors (M, N, d_l)
        The samples classified (e.g. the test set), any float dtype.
    labels : tensor (N,)
        Their true classes (a value none of the centres has counts as a miss).
    centres : :class:`Centres`
        From :func:`class_centres` (e.g. of the training features).

    Returns
    -------
    (M, L+1) float64 on the features' device: the fraction of samples whose nearest centre
    (Euclidean; ties to the lower class) is their own class's. NaN for a model whose
    features or centres are not finite. Equal to
    :func:`dnnphase.measures.separation_numpy.ncc_accuracy` with ``means=`` the centres.
    """
    _check_features(features)
    require(len(features) == len(centres.means), "centres",
            f"one per layer ({len(features)})", len(centres.means))
    m, n = features[0].shape[:2]
    shapes = [(tuple(h.shape[::2]), (c.shape[0], c.shape[-1]))
              for h, c in zip(features, centres.means, strict=True)]
    require(all(a == b for a, b in shapes), "centres",
            "of the same M models and feature sizes d_l as the features (M, d_l per layer: "
            "features, centres)", shapes)
    y = _integer_labels(labels).to(features[0].device, torch.long)
    require(tuple(y.shape) == (n,), "labels", f"(N,) with N = {n}", tuple(y.shape))
    present = centres.present.to(features[0].device)  # (M, K)
    k = present.sum(-1, keepdim=True).clamp(min=1).to(_F64)  # (M, 1)
    out = []
    with torch.no_grad(), _one_cpu_thread(features[0].device):
        for h, c in zip(features, centres.means, strict=True):
            x = h.to(_F64)
            mc = torch.where(present[..., None], c, 0.0)
            origin = mc.sum(-2) / k  # (M, d): the centroid of the centres, as the reference
            mc = torch.where(present[..., None], mc - origin[:, None, :], 0.0)
            xc = x - origin[:, None, :]
            score = (mc * mc).sum(-1)[:, None, :] - 2.0 * torch.matmul(xc, mc.transpose(1, 2))
            score = torch.where(present[:, None, :], score, torch.inf)  # (M, N, K)
            hit = (centres.classes[score.argmin(-1)] == y).to(_F64).mean(-1)  # (M,)
            ok = torch.isfinite(x).flatten(1).all(1) & torch.isfinite(mc).flatten(1).all(1)
            out.append(torch.where(ok, hit, torch.nan))
    return torch.stack(out, dim=1)


@contextmanager
def _one_cpu_thread(device: torch.device) -> Iterator[None]:
    """One torch thread on the CPU (restored afterwards), as the measures: a result then
    does not depend on the thread count (a threaded matmul may sum in another order)."""
    old = torch.get_num_threads()
    pin = device.type == "cpu" and old != 1
    if pin:
        torch.set_num_threads(1)
    try:
        yield
    finally:
        if pin:
            torch.set_num_threads(old)
