"""A hidden layer's BatchNorm, LeakyReLU and dropout in two passes each way (numba, CPU).

In training mode a hidden layer of :class:`dnnphase.networks.stack.EnsembleMLP` takes its Linear
map's output ``z`` ``(M, B, n)`` through a layout copy, the bias, BatchNorm, LeakyReLU and
the dropout multiply: with PyTorch's operations on a CPU about six passes over memory
forward and as many backward, at full batch more time than the matmuls
(docs/performance.md, "Roofline"). These kernels do the same arithmetic in two passes
each way, on each model's channels in the model-major layout of ``z`` (no layout copy):

* forward, pass 1: per channel the batch mean and biased variance (float64 sums of
  u − u₀ and its square in batch order, u₀ the first sample: no cancellation beyond the
  channel's spread), the running statistics with PyTorch's momentum and unbiased
  variance; pass 2::

      y = u·s + t,   s = γ/√(var + ε),   t = β − mean·s      (u = z + b; PyTorch's form)
      h = (y if y > 0 else α·y) · (scale if kept else 0)

  and one byte per unit for backward (kept; y > 0).
* backward, pass 1: Σ gy and Σ gy·x̂ per channel (gy the gradient reaching y, x̂ the
  normalised u); pass 2: the input gradient (PyTorch's formula).

Every model's numbers depend on its own channels only, in a fixed order: the same for
any stack, chunk or thread count. Agreement with PyTorch's operations is to rounding
(tests/dnnphase/networks/test_fused_layer.py). Imported on first use only: ``import
dnnphase`` does not load numba.
"""

from __future__ import annotations

import numba
import numpy as np
import torch
from torch.autograd.function import once_differentiable

__all__ = ["NormActDropout"]


@numba.njit(cache=True, nogil=True)
def norm_act_forward(z, bias, gamma, beta, alpha, code, scale, has_mask, eps, momentum,
                     running_mean, running_var, out, mean_out, invstd_out):
    """Forward of every model's layer; fills ``out``, ``code`` and the statistics.

    z, out (M, B, n); code (M, B, n) uint8; bias, gamma, beta, running_mean, running_var,
    mean_out, invstd_out (M, n); alpha, scale (M,). With ``has_mask`` bit 0 of ``code``
    holds on entry 1 where a unit is kept (multiplied by ``scale[m]``), 0 where it is
    dropped (by 0); on return bit 0 is that and bit 1 is (y > 0): what backward needs. The
    running statistics are updated in place. (One array in and out: with two that might
    alias, the compiler would not vectorise the loop.)
    """
    n_models, batch, n = z.shape
    dt = z.dtype.type
    # Scratch per channel, allocated once: array expressions inside the model loop would
    # allocate per model, which at small batches costs more than the arithmetic.
    acc = np.empty(n, dtype=np.float64)
    acc2 = np.empty(n, dtype=np.float64)
    pivot = np.empty(n, dtype=np.float64)
    s = np.empty(n, dtype=z.dtype)
    t = np.empty(n, dtype=z.dtype)
    for m in range(n_models):
        # One pass: sums of u − u[0] and of its square (float64, shifted: no cancellation
        # beyond the spread of the channel).
        for f in range(n):
            pivot[f] = z[m, 0, f] + bias[m, f]
            acc[f] = 0.0
            acc2[f] = 0.0
        for b in range(batch):
            for f in range(n):
                d = (z[m, b, f] + bias[m, f]) - pivot[f]
                acc[f] += d
                acc2[f] += d * d
        for f in range(n):
            shift = acc[f] / batch
            mean = pivot[f] + shift
            var = acc2[f] / batch - shift * shift
            if var < 0.0:  # rounding; a NaN stays NaN
                var = 0.0
            running_mean[m, f] = (1.0 - momentum) * running_mean[m, f] + momentum * mean
            running_var[m, f] = ((1.0 - momentum) * running_var[m, f]
                                 + momentum * var * batch / (batch - 1))
            mean_out[m, f] = mean
            invstd_out[m, f] = 1.0 / np.sqrt(var + eps)
            s[f] = gamma[m, f] * invstd_out[m, f]  # in z's dtype
            t[f] = beta[m, f] - mean_out[m, f] * s[f]
        a = dt(alpha[m])
        keep = dt(scale[m])
        if has_mask:  # two loops: a test inside would keep the compiler from vectorising
            for b in range(batch):
                for f in range(n):
                    y = (z[m, b, f] + bias[m, f]) * s[f] + t[f]
                    k = code[m, b, f] & np.uint8(1)  # & 1: a code array passed again is safe
                    out[m, b, f] = (y if y > 0 else a * y) * (keep * dt(k))
                    code[m, b, f] = k + np.uint8(2) * np.uint8(y > 0)
        else:
            for b in range(batch):
                for f in range(n):
                    y = (z[m, b, f] + bias[m, f]) * s[f] + t[f]
                    out[m, b, f] = y if y > 0 else a * y
                    code[m, b, f] = np.uint8(2) * np.uint8(y > 0)


@numba.njit(cache=True, nogil=True)
def norm_act_backward(g, z, bias, gamma, alpha, code, scale, has_mask, mean, invstd,
                      dz, dgamma, dbeta):
    """Backward: ``g`` the gradient of the layer's output, shapes as in
    :func:`norm_act_forward` (``code``, ``mean``, ``invstd`` its saved results); fills
    ``dz``, ``dgamma``, ``dbeta``. BatchNorm's input gradient is (PyTorch's formula)
    ``(gy − Σgy/B − x̂·Σ(gy·x̂)/B)·γ/√(var + ε)``, ``gy`` the gradient reaching y."""
    n_models, batch, n = z.shape
    dt = z.dtype.type
    one = dt(1)
    sum_g = np.empty(n, dtype=np.float64)  # scratch allocated once (see the forward)
    sum_gx = np.empty(n, dtype=np.float64)
    k_g = np.empty(n, dtype=z.dtype)
    k_gx = np.empty(n, dtype=z.dtype)
    s = np.empty(n, dtype=z.dtype)
    for m in range(n_models):
        a = dt(alpha[m])
        keep = dt(scale[m]) if has_mask else one
        drop = keep * 0 if has_mask else one  # without dropout every unit has factor 1
        for f in range(n):
            sum_g[f] = 0.0
            sum_gx[f] = 0.0
        for b in range(batch):
            for f in range(n):
                c = code[m, b, f]
                gy = g[m, b, f] * (keep if c & 1 else drop) * (one if c & 2 else a)
                xhat = ((z[m, b, f] + bias[m, f]) - mean[m, f]) * invstd[m, f]
                sum_g[f] += gy
                sum_gx[f] += gy * xhat
        for f in range(n):
            dbeta[m, f] = sum_g[f]
            dgamma[m, f] = sum_gx[f]
            k_g[f] = sum_g[f] / batch
            k_gx[f] = sum_gx[f] / batch
            s[f] = gamma[m, f] * invstd[m, f]
        for b in range(batch):
            for f in range(n):
                c = code[m, b, f]
                gy = g[m, b, f] * (keep if c & 1 else drop) * (one if c & 2 else a)
                xhat = ((z[m, b, f] + bias[m, f]) - mean[m, f]) * invstd[m, f]
                dz[m, b, f] = (gy - k_g[f] - xhat * k_gx[f]) * s[f]


class NormActDropout(torch.autograd.Function):
    """BatchNorm (training mode) → LeakyReLU → dropout of a stack's hidden layer, by the
    kernels above: ``z`` ``(M, B, n)`` (the Linear map's output, model-major) →
    ``(M, B, n)``. Gradients reach ``z``, γ and β; the Linear bias feeding BatchNorm is a
    gauge parameter and gets none (as in :meth:`dnnphase.networks.stack.EnsembleMLP._hidden`).

    Arguments: ``z``; ``bias``, ``gamma``, ``beta``, ``running_mean``, ``running_var``
    ``(M, n)`` (the running statistics updated in place); ``alpha``, ``scale`` ``(M,)``;
    ``kept`` ``(M, B, n)`` uint8 (1: the unit is kept and multiplied by its model's
    ``scale``; a contiguous one is overwritten with the codes backward reads) or None (no
    dropout); ``eps``, ``momentum`` floats. All on the CPU, in one dtype (asserted).
    Differentiable once.

    What backward reads is kept as numpy views on ``ctx``, not through
    ``save_for_backward``: at small batches the saved tensors' bookkeeping cost more than
    the kernels (~25 µs of ~85 per layer and step at B = 5, M = 16). Nothing is lost that
    the trainer needs: the views hold no output of this function (no reference cycle, so
    they are freed with the graph), and parameters change only after backward (the
    in-place check is not made).
    """

    @staticmethod
    def forward(ctx, z, bias, gamma, beta, alpha, kept, scale, running_mean, running_var,
                eps, momentum):
        z, bias, gamma, beta, alpha, scale = (_array(t)
                                              for t in (z, bias, gamma, beta, alpha, scale))
        stats = running_mean.numpy(), running_var.numpy()  # updated in place
        m, b, n = z.shape
        has_mask = kept is not None
        code = _array(kept) if has_mask else np.empty((m, b, n), dtype=np.uint8)
        _check_arguments(z, code, (bias, gamma, beta, *stats), (alpha, scale))
        if not has_mask:
            scale = alpha  # never read without a mask
        out = np.empty_like(z)
        mean = np.empty((m, n), dtype=z.dtype)
        invstd = np.empty((m, n), dtype=z.dtype)
        norm_act_forward(z, bias, gamma, beta, alpha, code, scale, has_mask, eps, momentum,
                         *stats, out, mean, invstd)
        ctx.saved = (z, bias, gamma, alpha, code, scale, has_mask, mean, invstd)
        return torch.from_numpy(out)

    @staticmethod
    @once_differentiable
    def backward(ctx, g):
        z, bias, gamma, alpha, code, scale, has_mask, mean, invstd = ctx.saved
        dz, dgamma, dbeta = np.empty_like(z), np.empty_like(gamma), np.empty_like(gamma)
        norm_act_backward(_array(g), z, bias, gamma, alpha, code, scale, has_mask, mean,
                          invstd, dz, dgamma, dbeta)
        return (torch.from_numpy(dz), None, torch.from_numpy(dgamma),
                torch.from_numpy(dbeta), None, None, None, None, None, None, None)


def _check_arguments(z, code, per_channel, per_model) -> None:
    """The kernels index every array by ``z``'s shape, unchecked: shapes and dtypes are
    checked here (an internal invariant of the callers, asserted; ``.numpy()`` has
    refused any tensor not on the CPU)."""
    m, b, n = z.shape
    assert z.dtype in (np.float32, np.float64), z.dtype
    assert code.shape == z.shape and code.dtype == np.uint8, "kept: (M, B, n) uint8 on the CPU"
    for a in per_channel:
        assert a.shape == (m, n) and a.dtype == z.dtype, a.shape
    for a in per_model:
        assert a.shape == (m,) and a.dtype == z.dtype, a.shape


def _array(t: torch.Tensor) -> np.ndarray:
    """A contiguous numpy view of a (possibly parameter) tensor's values."""
    return t.detach().contiguous().numpy()
