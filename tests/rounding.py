"""Tolerances for two computations of the same numbers by different kernels.

A test asserts bit-for-bit equality only where the same kernels provably run on both sides
(a resumed run against an uninterrupted one, a pool of processes against one process at
equal chunking, the same call twice). Everywhere else the two sides may sum in different
orders — a stacked ``bmm`` against one model's ``matmul``, another batch size, another SIMD
width (AVX-512, AVX2, NEON), another thread count — and agree only to rounding.

The bound: a length-n sum evaluated in any order carries an error of at most
γ_n·Σ|terms|, γ_n = n·u/(1 − n·u) ≈ n·u, u = eps/2 (Higham, *Accuracy and Stability of
Numerical Algorithms*, Eq. 3.5). Two orders differ by at most 2·n·u·Σ|terms|. Through a chain
of layers (Lipschitz-1 activations, weights of norm ~1) the first-order bounds add. So two
kernels' results, relative to the scale of the values compared, agree within

    ulps · u · (n_1 + n_2 + ... + n_L)

with n_ℓ the reduction length of each step on the path and ``ulps`` a small constant for the
elementwise operations in between (each adds at most one rounding). No number here is tuned
until a test passes: the reduction lengths are the test's own shapes.
"""

from __future__ import annotations

import numpy as np
import torch

ULPS = 4  # two sides x (one rounding of the sum's bound + one of the elementwise ops after it)


def unit_roundoff(dtype) -> float:
    """u = eps / 2 of a torch or numpy floating dtype."""
    if isinstance(dtype, torch.dtype):
        return torch.finfo(dtype).eps / 2
    return float(np.finfo(dtype).eps) / 2


def kernel_tolerance(dtype, reductions, ulps: int = ULPS) -> float:
    """Relative tolerance for two kernels' evaluations of sums of the given lengths.

    dtype: the dtype the sums run in; reductions: the reduction length of each step on the
    path (e.g. the input width, then each hidden width); returns ulps·u·Σn.
    """
    lengths = [int(n) for n in np.atleast_1d(reductions)]
    if not lengths or min(lengths) < 1:
        raise ValueError(f"reductions must be positive lengths, got {reductions!r}")
    return ulps * unit_roundoff(dtype) * sum(lengths)


def _numpy(a) -> np.ndarray:
    if isinstance(a, torch.Tensor):
        return a.detach().cpu().double().numpy()
    return np.asarray(a, dtype=np.float64)


def assert_close_across_kernels(actual, expected, dtype, reductions, *, ulps: int = ULPS,
                                scale: float | None = None) -> None:
    """|actual − expected| ≤ kernel_tolerance · scale, elementwise, NaN where both are NaN.

    scale defaults to the largest magnitude on either side: the sums' Σ|terms| is of that
    order in these tests' well-conditioned layers.
    """
    a, b = _numpy(actual), _numpy(expected)
    assert a.shape == b.shape, (a.shape, b.shape)
    nan = np.isnan(a)
    np.testing.assert_array_equal(nan, np.isnan(b), err_msg="NaN in different places")
    a, b = a[~nan], b[~nan]
    if a.size == 0:
        return
    if scale is None:
        scale = max(np.abs(a).max(), np.abs(b).max(), np.finfo(np.float64).tiny)
    tol = kernel_tolerance(dtype, reductions, ulps) * scale
    err = np.abs(a - b).max()
    assert err <= tol, (f"differ by {err:.3g} > {tol:.3g} "
                        f"({err / (unit_roundoff(dtype) * scale):.1f} u of the scale)")
