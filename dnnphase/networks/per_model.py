"""Operations along the model dimension that every stack of networks uses.

A stack (:mod:`dnnphase.networks.stack`, :mod:`dnnphase.networks.cnn`) holds M models in
tensors whose first dimension is the model: :func:`per_model` broadcasts a knob to one value
per model, :class:`LeakyReLUPerModel` applies one slope per model (bitwise
``F.leaky_relu``), :class:`AddBiasPerModel` adds a bias whose gradient each model sums over
the batch as it would alone, :func:`row_mean` averages per model with a rounding that does
not depend on the thread count, and :func:`draw_seeded_` with :func:`default_linear_` draws each
model's initial weights from its own generator, as its single model would.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import torch
from torch import nn
from torch.nn import functional as F

from phasecore.checks import require

__all__ = ["AddBiasPerModel", "LeakyReLUPerModel", "default_linear_", "draw_seeded_",
           "per_model", "row_mean"]


def per_model(value: Any, m: int, name: str) -> list[float]:
    """Broadcast a scalar or length-m sequence to a list of m floats."""
    if isinstance(value, torch.Tensor | np.ndarray):
        value = value.tolist()
    if isinstance(value, int | float):
        return [float(value)] * m
    require(value is not None, name, "a number or one number per model", value)
    values = [float(v) for v in value]
    require(len(values) == m, name, f"one value per model ({m})", values)
    return values


def row_mean(x: torch.Tensor) -> torch.Tensor:
    """Mean over the last dimension of ``x`` ``(m, n)`` → ``(m,)``, summed in blocks of
    1024 so that no single reduction is split across threads (a one-output reduction of
    ≥ 32 768 elements is, and its rounding then depends on the thread count)."""
    m, n = x.shape
    if n <= 1024:
        return x.sum(1) / n
    k = -(-n // 1024)
    padded = F.pad(x, (0, k * 1024 - n)) if k * 1024 != n else x
    return padded.reshape(m, k, 1024).sum(2).sum(1) / n


class LeakyReLUPerModel(torch.autograd.Function):
    """LeakyReLU with a slope per model: ``u`` ``(B, M, F)``, ``a`` ``(1, M, 1)``.

    Forward ``relu(u) + a·(u − relu(u))`` and backward ``g₊ + a·(g − g₊)`` (g₊ = g where
    u > 0): one of the two terms is always an exact zero, so both are bitwise
    ``F.leaky_relu`` and its gradient (``a·u + (1 − a)·relu(u)`` is not).
    """

    @staticmethod
    def forward(ctx, u: torch.Tensor, a: torch.Tensor) -> torch.Tensor:
        r = torch.relu(u)
        ctx.save_for_backward(r, a)
        return torch.addcmul(r, u - r, a)

    @staticmethod
    def backward(ctx, g: torch.Tensor) -> tuple[torch.Tensor, None]:
        r, a = ctx.saved_tensors
        g_pos = torch.ops.aten.threshold_backward(g, r, 0)  # g where u > 0 (⇔ r > 0)
        return torch.addcmul(g_pos, g - g_pos, a), None


class AddBiasPerModel(torch.autograd.Function):
    """``u + bias`` for a stack's activations ``u`` ``(B, M·n)`` (model m's units at columns
    m·n … m·n + n − 1) and biases ``bias`` ``(1, M·n)``, with the bias gradient summed over
    the batch per model: ``g`` copied to ``(M, B, n)`` and summed over B, which rounds each
    model's sum as the ``(B, n)`` column sum of the model alone (measured bitwise for M up to
    40, n up to 1000, B up to 1000). Autograd's own ``(B, M·n)`` column sum rounds a column
    by its position (vector block or scalar tail), i.e. by the stack-mates. The forward,
    the input's gradient and their rounding are the plain ``u + bias``'s.
    """

    @staticmethod
    def forward(ctx, u: torch.Tensor, bias: torch.Tensor, n_models: int) -> torch.Tensor:
        ctx.n_models = n_models
        return u + bias

    @staticmethod
    def backward(ctx, g: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, None]:
        b, mn = g.shape
        m = ctx.n_models
        per_model_g = g.reshape(b, m, mn // m).transpose(0, 1).contiguous()  # (M, B, n)
        return g, per_model_g.sum(1).view(1, mn), None


def default_linear_(w: torch.Tensor, b: torch.Tensor | None, g: torch.Generator) -> None:
    """``nn.Linear``'s default initialisation drawn from ``g`` into ``w`` ``(out, in)`` and
    ``b`` ``(out,)``, exactly as ``reset_parameters`` does: weight U(±gain·√(3/fan_in))
    with the gain of ``kaiming_uniform_(a=√5)``, then bias U(±1/√fan_in)."""
    fan_in = w.shape[1]
    gain = nn.init.calculate_gain("leaky_relu", math.sqrt(5))
    bound = math.sqrt(3.0) * (gain / math.sqrt(fan_in))
    w.uniform_(-bound, bound, generator=g)
    if b is not None:
        b.uniform_(-1 / math.sqrt(fan_in), 1 / math.sqrt(fan_in), generator=g)


def draw_seeded_(ws: Sequence[torch.Tensor], bs: Sequence[torch.Tensor], seeds: Sequence[int],
                 draw: Callable, bias: bool) -> None:
    """Fill the stacked weight and bias buffers ``ws[i]``, ``bs[i]`` (model dimension
    first) model by model, each from its own ``torch.Generator`` seeded with ``seeds[m]``,
    layer by layer, weight then bias (the order a single model's modules draw them):
    ``draw(w, b | None, g)`` fills one model's layer."""
    for m, seed in enumerate(seeds):
        g = torch.Generator().manual_seed(seed)
        for w, b in zip(ws, bs, strict=True):
            draw(w[m], b[m] if bias else None, g)
