"""Per-model random numbers that depend on the model's seed alone, on any device.

Every random number of a training run (data order, dropout masks, label and data
noise) is a pure function of ``(seed, stream, counter, index)``: a counter-based
generator written in torch ``int64`` operations, so a model's numbers are the same
on the CPU and on CUDA, for any stack, chunk or thread count. Integers are exact on
every device; only the Gaussian transform (``torch.special.ndtri``) may differ in the
last bit between devices.
"""

from __future__ import annotations

import contextlib
import itertools
from collections.abc import Sequence
from functools import lru_cache

import torch

__all__ = ["DropoutMasks", "LEVELS", "ModelStreams", "corrupt_batch", "dropout_levels",
           "dropout_span", "fixed_random_labels", "hash_bits", "mix32", "mix32_int",
           "normal_from_bits", "tables_read", "uniform_from_bits", "uniforms"]

MASK32 = 0xFFFFFFFF
GOLDEN = 0x9E3779B9  # 2³² / golden ratio: offsets the counter so word 0 is not hashed to 0
LEVELS = 1 << 16  # dropout resolution: one 16-bit integer per unit
# Streams of a model (the first counter word). Numbers of different streams never meet.
ORDER, STEP, LABELS = 1, 2, 3


def mix32(x: torch.Tensor) -> torch.Tensor:
    """A 32-bit integer hash (Wellons' "lowbias32"): a bijection of [0, 2³²) with
    strong avalanche; ``x`` int64 of any shape, values in [0, 2³²)."""
    return mix32_(x.clone(), torch.empty_like(x))


def mix32_(x: torch.Tensor, tmp: torch.Tensor) -> torch.Tensor:
    """:func:`mix32` in place on ``x``, with a scratch tensor ``tmp`` of x's shape.

    In-place integer ops: on the CPU a fresh large tensor per op costs more than the op.
    """
    torch.bitwise_right_shift(x, 16, out=tmp)
    x.bitwise_xor_(tmp)
    x.mul_(0x7FEB352D).bitwise_and_(MASK32)  # the constant is < 2³¹: x·c < 2⁶³
    torch.bitwise_right_shift(x, 15, out=tmp)
    x.bitwise_xor_(tmp)
    # x·0x846CA68B mod 2³² = x·0x046CA68B + (x & 1)·2³¹ mod 2³²: no product reaches 2⁶³
    # (overflowing int64 products are undefined in C++, so they are not trusted to wrap
    # alike on every device).
    torch.bitwise_and(x, 1, out=tmp).bitwise_left_shift_(31)
    x.mul_(0x046CA68B).add_(tmp).bitwise_and_(MASK32)
    torch.bitwise_right_shift(x, 16, out=tmp)
    return x.bitwise_xor_(tmp)


def mix32_int(x: int) -> int:
    """:func:`mix32` on one Python integer (the reference the tensor version must equal)."""
    x &= MASK32
    x ^= x >> 16
    x = (x * 0x7FEB352D) & MASK32
    x ^= x >> 15
    x = (x * 0x846CA68B) & MASK32
    return x ^ (x >> 16)


def absorb(key: torch.Tensor, word: torch.Tensor | int) -> torch.Tensor:
    """Fold a counter word (< 2³², scalar or broadcastable tensor) into keys ``(M, …)``."""
    if isinstance(word, int):
        return mix32(key ^ mix32_int(word + GOLDEN))
    return mix32(key ^ mix32((word + GOLDEN) & MASK32))


def seed_keys(seeds: Sequence[int], device: torch.device | str = "cpu") -> torch.Tensor:
    """``(M,)`` int64 keys of the seeds (any integers in [0, 2⁶⁴))."""
    lo = torch.tensor([int(s) & MASK32 for s in seeds], dtype=torch.long, device=device)
    hi = torch.tensor([(int(s) >> 32) & MASK32 for s in seeds], dtype=torch.long, device=device)
    return absorb(absorb(mix32(lo ^ GOLDEN), hi), 0)


@lru_cache(maxsize=64)
def _cached_index_hash(start: int, count: int, device: torch.device) -> torch.Tensor:
    i = torch.arange(start, start + count, dtype=torch.long, device=device)
    return mix32((i + GOLDEN) & MASK32)


#: Lists collecting the tables handed out (:func:`tables_read`).
_READERS: list[list[torch.Tensor]] = []


def _index_hash(start: int, count: int, device: torch.device) -> torch.Tensor:
    """``mix32(i + GOLDEN)`` for i in [start, start + count): ``(count,)``, cached per shape."""
    table = _cached_index_hash(start, count, device)
    for reader in _READERS:
        reader.append(table)
    return table


@contextlib.contextmanager
def tables_read():
    """The index-hash tables read inside the block, as a list: a captured CUDA graph holds
    them, since the cache may drop a table the graph still reads."""
    reader: list[torch.Tensor] = []
    _READERS.append(reader)
    try:
        yield reader
    finally:
        _READERS.remove(reader)


def hash_bits(key: torch.Tensor, start: int, count: int, out: torch.Tensor | None = None,
              tmp: torch.Tensor | None = None) -> torch.Tensor:
    """``(M, count)`` uniform 32-bit integers (int64) number ``start…start+count−1`` of
    each key ``(M,)``: ``mix32(key ^ mix32(i + GOLDEN))``. ``out``, ``tmp``: int64
    buffers of that shape to reuse (fresh large tensors cost more than the hash on a CPU).
    """
    table = _index_hash(start, count, key.device)  # (count,)
    out = torch.bitwise_xor(key[:, None], table[None, :], out=out)
    return mix32_(out, torch.empty_like(out) if tmp is None else tmp)


def uniform_from_bits(bits: torch.Tensor) -> torch.Tensor:
    """32-bit integers → float64 uniforms on the open interval (0, 1): (b + ½)·2⁻³²."""
    return (bits.to(torch.float64) + 0.5) * 2.0**-32


def uniforms(key: torch.Tensor, start: int, count: int) -> torch.Tensor:
    """``(M, count)`` float64 uniforms number ``start…start+count−1`` of each key ``(M,)``:
    ``uniform_from_bits(hash_bits(key, start, count))``, on a CPU in one fused pass
    (:func:`dnnphase.networks.mask_kernel.open_uniforms`, bit for bit the same)."""
    if key.device.type != "cpu":
        return uniform_from_bits(hash_bits(key, start, count))
    from dnnphase.networks.mask_kernel import open_uniforms  # numba: on first use only

    out = torch.empty((key.shape[0], count), dtype=torch.float64)
    open_uniforms(key.contiguous().numpy(), _index_hash(start, count, key.device).numpy(),
                  out.numpy())
    return out


def normal_from_bits(bits: torch.Tensor) -> torch.Tensor:
    """32-bit integers → float64 standard normals by the inverse CDF Φ⁻¹ (|z| ≤ 6.34)."""
    return torch.special.ndtri(uniform_from_bits(bits))


def dropout_levels(p: Sequence[float]) -> list[int]:
    """Dropped 16-bit integers per model: unit dropped when its integer < round(p·2¹⁶)."""
    return [round(float(v) * LEVELS) for v in p]


class ModelStreams:
    """The random streams of a stack of models, each from its seed alone.

    ``epoch_order(e, n)``: the data order of epoch e (1-based); ``step_keys(steps)``:
    one key per model and optimizer step (0-based, counted over the whole run), from
    which that step's dropout masks and label/data noise are drawn at fixed offsets.
    """

    def __init__(self, seeds: Sequence[int], device: torch.device | str = "cpu") -> None:
        base = seed_keys(seeds, device)  # (M,)
        self.order_key = absorb(base, ORDER)
        self.step_key = absorb(base, STEP)

    def select(self, keep: torch.Tensor) -> None:
        """Keep models ``keep`` (stack positions, a long tensor on the keys' device)."""
        self.order_key = self.order_key[keep]
        self.step_key = self.step_key[keep]

    def epoch_order(self, epoch: int, n: int) -> torch.Tensor:
        """``(M, n)`` permutations: indices sorted by their hash. The sort key
        ``hash·2³¹ + i`` is unique, so every sort algorithm gives the same order."""
        h = hash_bits(absorb(self.order_key, epoch), 0, n)  # (M, n)
        keys = h * (1 << 31) + torch.arange(n, device=h.device)
        return keys.argsort(dim=1)

    def step_keys(self, steps: torch.Tensor) -> torch.Tensor:
        """``(M, S)`` keys of optimizer steps ``steps`` ``(S,)`` (int64)."""
        return absorb(self.step_key[:, None], steps[None, :])


def _halves(depth: int, batch: int, width) -> list[int]:
    """H_ℓ = ⌈B·width_ℓ/2⌉ for each of ``depth`` hidden layers (``width`` one int for all,
    or one per layer)."""
    widths = [width] * depth if isinstance(width, int) else list(width)
    return [-(-batch * w // 2) for w in widths]


def dropout_span(depth: int, batch: int, width) -> int:
    """Integers of a step key used by the dropout masks of ``depth`` layers of ``width``
    units (one int, or one per layer; see :class:`DropoutMasks`); label and data noise start
    after them."""
    return sum(_halves(depth, batch, width))


class DropoutMasks:
    """One step's dropout multipliers, drawn layer by layer.

    Layer ℓ of model m uses the step key's integers ``S_ℓ … S_ℓ + H_ℓ − 1``,
    H_ℓ = ⌈B·width_ℓ/2⌉ and S_ℓ = H_0 + … + H_{ℓ−1} (``ℓ·H`` when every layer has one
    width), each split into two 16-bit integers v (all low halves, then all high halves);
    a unit is dropped when ``v < level_m`` and kept units are scaled by 2¹⁶/(2¹⁶ − level_m),
    so the realised drop probability is p rounded to a multiple of 2⁻¹⁶.

    On a CPU the numbers are computed by one fused kernel (:mod:`dnnphase.networks.mask_kernel`,
    bit for bit the same); ``fused=False`` forces the tensor operations, the definition
    and the GPU's path.
    """

    def __init__(self, keys: torch.Tensor, levels: torch.Tensor, scale: torch.Tensor,
                 batch: int, width, fused: bool | None = None) -> None:
        """``width``: the hidden layers' units, one int for every layer or a sequence, one
        per layer."""
        self.keys, self.batch, self.width = keys, batch, width  # keys (M,)
        if isinstance(width, int):  # every layer H = ⌈B·w/2⌉ integers, layer ℓ's from ℓ·H
            self._half = -(-batch * width // 2)
        else:  # per layer: H_ℓ, and S_ℓ their running sum
            self._halves = _halves(len(width), batch, width)
            self._starts = [0, *itertools.accumulate(self._halves)][:-1]
        self.threshold = (levels - 1).view(-1, 1, 1)  # (M, 1, 1), float
        self.scale = scale.view(-1, 1, 1)
        self.fused = keys.device.type == "cpu" if fused is None else fused
        if self.fused:
            self._levels = levels.detach().round().to(torch.int64).contiguous()
        self._bits = self._tmp = None

    def _layer(self, layer: int) -> tuple[int, int, int]:
        """Hidden layer ``layer``'s width w, its H = ⌈B·w/2⌉ and its first integer S."""
        if isinstance(self.width, int):
            return self.width, self._half, layer * self._half
        return self.width[layer], self._halves[layer], self._starts[layer]

    def _fused(self, layer: int) -> torch.Tensor:
        """The same multipliers from the fused CPU kernel's bytes, ``(B, M, width)``: 1·scale
        and 0·scale are exactly the tensor version's scale and 0."""
        return (self.kept(layer).to(self.scale.dtype) * self.scale).transpose(0, 1)

    def kept(self, layer: int) -> torch.Tensor:
        """``(M, B, width_ℓ)`` uint8, 1 where hidden layer ``layer``'s unit is kept: the same
        decisions as :meth:`__call__`, whose kept units are multiplied by ``scale``. CPU
        (fused) only."""
        from dnnphase.networks.mask_kernel import dropout_kept  # numba: on first use only

        assert self.fused, "DropoutMasks.kept: the fused CPU kernel only"
        (w, h, start), m, b = self._layer(layer), self.keys.shape[0], self.batch
        out = torch.empty((m, b * w), dtype=torch.uint8)
        dropout_kept(self.keys.contiguous().numpy(),
                     _index_hash(start, h, self.keys.device).numpy(),
                     self._levels.numpy(), b * w, out.numpy())
        return out.view(m, b, w)

    def __call__(self, layer: int) -> torch.Tensor:
        """``(B, M, width_ℓ)`` multipliers of hidden layer ``layer`` (0-based)."""
        if self.fused:
            return self._fused(layer)
        (w, h, start), m, b = self._layer(layer), self.keys.shape[0], self.batch
        if self._bits is None or self._bits.shape[1] != h:
            self._bits = torch.empty((m, h), dtype=torch.long, device=self.keys.device)
            self._tmp = torch.empty_like(self._bits)
        bits = hash_bits(self.keys, start, h, self._bits, self._tmp)  # (M, H)
        t = torch.empty((m, 2 * h), dtype=self.scale.dtype, device=bits.device)
        t[:, :h] = torch.bitwise_and(bits, 0xFFFF, out=self._tmp)  # low halves
        t[:, h:] = bits.bitwise_right_shift_(16)  # high halves
        t = t[:, : b * w].view(m, b, w)  # (M, B, w)
        # clamp(v − level + 1, 0, 1) is the exact 0/1 keep indicator (integers < 2¹⁶
        # are exact in float32).
        return t.sub_(self.threshold).clamp_(0.0, 1.0).mul_(self.scale).transpose(0, 1)


def corrupt_batch(
    x: torch.Tensor, y: torch.Tensor, keys: torch.Tensor, q: torch.Tensor,
    sigma: torch.Tensor, n_classes: int, start: int,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Label + data noise of level q for one step; new tensors.

    ``x`` ``(B, M, d)``, ``y`` ``(M, B)``, ``keys`` ``(M,)``, ``q`` ``(M,)``,
    ``sigma`` ``(M, d)`` = q·σ_f. From the step key's integers at ``start``: B uniforms
    (relabel when u < q), B classes (uniform over all C), then B·d standard normals.
    A model with q = 0 gets its batch back exactly (u ≥ 0, ξ·0 = 0).
    """
    b, m, d = x.shape
    u = uniforms(keys, start, b)  # (M, B) float64
    cls = (hash_bits(keys, start + b, b) * n_classes) >> 32  # (M, B) in [0, C)
    xi = torch.special.ndtri(uniforms(keys, start + 2 * b, b * d)).view(m, b, d)
    y = torch.where(u < q.to(torch.float64)[:, None], cls, y)
    x = x + (xi.to(x.dtype) * sigma[:, None, :]).transpose(0, 1)  # (B, M, d)
    return x, y


def fixed_random_labels(y: torch.Tensor, fraction: Sequence[float], seeds: Sequence[int],
                        n_classes: int) -> torch.Tensor:
    """Each model's training labels with a fixed ``fraction`` of them reassigned once,
    before training (Galanti et al.'s random labels, after Zhang et al.): ``(M, N)`` int64.

    ``y`` ``(N,)`` the clean labels; ``fraction`` and ``seeds`` one per model. Model j's
    ⌊f_j·N + ½⌋ samples of lowest hash (its own ``LABELS`` stream) get a class drawn
    uniformly from all ``n_classes`` (it may draw the true one, as ``label_noise`` does), so
    about f_j·(1 − 1/C) of its labels end up wrong. The same for a seed and fraction on any
    device, stack or chunk; a fraction of 0 leaves ``y`` exactly. Unlike ``label_noise``,
    which redraws labels every step, the labels stay fixed for the whole run.
    """
    n = y.shape[0]
    key = absorb(seed_keys(seeds, y.device), LABELS)  # (M,)
    order = (hash_bits(key, 0, n) * (1 << 31) + torch.arange(n, device=y.device)).argsort(dim=1)
    count = torch.tensor([int(f * n + 0.5) for f in fraction], device=y.device)  # (M,)
    chosen = torch.zeros(len(seeds), n, dtype=torch.bool, device=y.device)
    chosen.scatter_(1, order, torch.arange(n, device=y.device)[None, :] < count[:, None])
    cls = (hash_bits(key, n, n) * n_classes) >> 32  # (M, N) in [0, C)
    return torch.where(chosen, cls, y.to(torch.long)[None, :])
