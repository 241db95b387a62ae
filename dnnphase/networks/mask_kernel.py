"""The CPU's counter-based random numbers in one pass: hash, threshold and scale fused (numba).

:class:`dnnphase.networks.randomness.DropoutMasks` draws a layer's masks with ~15 int64 tensor
operations over the stack's (M, ⌈B·width/2⌉) integers, each a pass over memory; on a CPU
that is 10-13 % of a training step with dropout. These kernels compute the same numbers —
the same hash of the same counters, bit for bit (tested against the tensor version, which
stays the definition and the GPU's path) — in one loop that writes one byte per unit
(kept or not): the fused hidden layer (:mod:`dnnphase.networks.fused_layer`) reads them as they are,
other layers as multipliers (kept × scale).
Likewise the uniforms of the label and data noise (:func:`open_uniforms`).
Imported on first use only: ``import dnnphase`` does not load numba.
"""

from __future__ import annotations

import numba
import numpy as np

__all__ = ["dropout_kept", "open_uniforms"]

_MASK32 = np.uint64(0xFFFFFFFF)


@numba.njit(cache=True, nogil=True, inline="always")
def _mix32(x):
    """:func:`dnnphase.networks.randomness.mix32` of one uint64 (< 2³²)."""
    x ^= x >> np.uint64(16)
    x = (x * np.uint64(0x7FEB352D)) & _MASK32
    x ^= x >> np.uint64(15)
    x = (x * np.uint64(0x846CA68B)) & _MASK32  # uint64 products wrap: defined
    return x ^ (x >> np.uint64(16))


@numba.njit(cache=True, nogil=True)
def dropout_kept(keys, table, levels, n_units, out):
    """The units of one layer kept: ``out`` (M, n_units) uint8, 1 kept, 0 dropped.

    keys (M,) int64 step keys, table (H,) int64 index hashes of the layer's counters,
    levels (M,) int64 dropped 16-bit integers. Unit i < H takes the low 16 bits of integer
    i, unit H + i its high 16 bits; a unit is kept when its 16-bit integer is >= the level.
    """
    n_models, half = keys.shape[0], table.shape[0]
    pairs = n_units - half  # integers whose high half is a unit too (half or half − 1)
    for m in range(n_models):
        key = np.uint64(keys[m])
        level = np.uint64(levels[m])
        for i in range(pairs):  # no test inside, so that the loop is vectorised
            x = _mix32(key ^ np.uint64(table[i]))
            out[m, i] = (x & np.uint64(0xFFFF)) >= level
            out[m, half + i] = (x >> np.uint64(16)) >= level
        for i in range(pairs, half):
            x = _mix32(key ^ np.uint64(table[i]))
            out[m, i] = (x & np.uint64(0xFFFF)) >= level


@numba.njit(cache=True, nogil=True)
def open_uniforms(keys, table, out):
    """:func:`dnnphase.networks.randomness.uniform_from_bits` of ``hash_bits``: ``out`` (M, H)
    float64 uniforms (b + ½)·2⁻³² of the hashes of keys (M,) int64 with the index hashes
    table (H,) int64. Every step is exact in float64 (b < 2³²), so bit for bit the
    tensor version's numbers."""
    for m in range(keys.shape[0]):
        key = np.uint64(keys[m])
        for i in range(table.shape[0]):
            out[m, i] = (np.float64(_mix32(key ^ np.uint64(table[i]))) + 0.5) * 2.0**-32
