"""Batched ensemble training of the DESIGN §3 networks.

Many models (seeds, LeakyReLU slope α, dropout p, learning rate, label + data
noise q, batch size) are trained together in one set of stacked tensors. The
trainer is *exactly* the one-model-at-a-time procedure ``MLP`` + ``torch.optim``
applied to every model separately (tests check this to 1e-8 in float64); the
batching only changes the floating-point summation order.

Layout
------
Parameters are stacked along a leading model dimension M: Linear weights
``(M, in, out)`` (``nn.Linear.weight`` transposed), biases ``(M, 1, out)``,
BatchNorm affine parameters and running statistics ``(M, F)``. Activations are
kept *sample-major*, ``(B, M, F)``, i.e. ``(B, M·F)`` in memory: then every
model's BatchNorm is one native ``F.batch_norm`` call over ``M·F`` channels
(per-model batch mean, biased batch variance, running statistics updated with
PyTorch's momentum and unbiased variance — the very kernel ``nn.BatchNorm1d``
uses). The matmuls are ``torch.bmm`` / ``torch.baddbmm`` on transposed views
``(M, B, F)``, which BLAS reads without a copy.

Speed (benchmarks/bench_train.py, paper configuration, 1 core, shared machine):
full batch ≈ 2.6 s per model per 100 epochs, ~1.1x the plain nn.Module loop
(both are matmul-bound, ~58 % of bmm speed) and ~1.3x with dropout 0.1 (cheap
masks); batch 20: ~6.7x the plain loop, ~4.5x a fused-Adam loop, at stacks of
64–128 models. Stacking models does not pay at full batch (the stack only adds
memory traffic), hence small default stacks there (``default_models_per_batch``).

Exactness
---------
* Loss: the sum over models of each model's *mean* cross-entropy, so the
  gradient reaching model m is that of its own single-model loss (the models
  share no parameters, so nothing leaks between them).
* Optimizers: Adam and SGD are elementwise, so one update over the stacked
  tensors equals M separate updates. They are torch's own functional
  ``torch.optim.adam.adam`` (fused kernel where available) and
  ``torch.optim.sgd.sgd`` (foreach), called once per run of models that share a
  learning rate (models are sorted by learning rate, so a learning-rate sweep
  costs one call per distinct value).
* Gauge parameters: a hidden Linear's bias and the input BatchNorm's shift only
  add per-channel constants that the next BatchNorm subtracts again, so their
  gradient is exactly zero. Autograd returns rounding noise (~1e-9 in float32,
  ~1e-17 in float64) instead, and Adam — dividing by sqrt(v) + eps — turns it into
  random steps of up to lr in float32. The trainer uses the exact zero (these
  parameters keep their initial values; weight decay still applies). Against
  ``nn.Module`` + ``torch.optim.Adam`` this changes nothing in float64 beyond
  ~lr·1e-9 per step, and in float32 it keeps rounding differences (e.g. from
  stacking models differently) at rounding level instead of letting Adam amplify
  them. (With batchnorm off these are ordinary parameters. For α = 1 and p = 0 the
  hidden BatchNorm shifts are gauges too; they are left alone.)
* Models that stop (early stopping, divergence, last epoch) are *retired*: their
  state is saved and they are removed from the stacks. All remaining models have
  then taken the same number of steps, so the optimizer's step count is shared,
  and stopped models cost nothing.

Stack invariance: every per-model computation (matmuls, BatchNorm, activation,
dropout, loss) gives bitwise the same result whatever other models share the
stack, and so do the random streams below. The one exception is torch's fused
Adam kernel, which updates the last few elements of each tensor in scalar code
that can round differently in the last bit; with ``TrainConfig(fused=False)``
(foreach Adam, ~5x slower optimizer step) a model's float32 result is bitwise
independent of how the models are stacked (tested).

Randomness (per model, so a model's random numbers do not depend on which other
models share its stack, its chunk or its call):

* data order: ``g = torch.Generator().manual_seed(seed)``; every epoch
  ``perm = torch.randperm(N, generator=g)`` and step s uses
  ``perm[s·B:(s+1)·B]``; the last incomplete batch is dropped (``N // B`` steps per
  epoch). Full batch (B = N) uses the training set in its given order (order only
  changes rounding there).
* dropout masks: 16-bit uniform integers from a per-model numpy PCG64 stream
  (CPU; ~4× cheaper than ``torch.rand``) or a per-model torch generator (CUDA);
  unit i of model m is dropped when its integer is below a per-model threshold,
  so the realised drop probability is p rounded to a multiple of 2⁻¹⁶
  (|Δp| ≤ 7.7e-6) and kept units are scaled by 1/(1 − p_realised).
* label + data noise: per-model torch generator (see :class:`TrainConfig`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch
from torch import nn
from torch.nn import functional as F
from torch.optim.adam import adam as _functional_adam
from torch.optim.sgd import sgd as _functional_sgd

from .model import MLP

__all__ = [
    "EnsembleMLP",
    "TrainConfig",
    "TrainResult",
    "default_models_per_batch",
    "resolve_device",
    "train_ensemble",
]

_LEVELS = 65536  # resolution of the dropout threshold (16-bit integers)
# Default CPU stack size: one layer's activations of the whole stack, B·M·width
# elements, kept near 2 MB (float32), at most 256 models. Measured (1 thread, paper
# configuration, ms per model-step): batch 2560: M = 1, 4, 8 → 24.6, 24.7, 25.2 (flat:
# the stack only adds per-op work); batch 320: M = 4, 16, 32 → 3.7, 3.2, 3.4; batch 80:
# M = 16, 64, 128 → 1.02, 0.92, 1.0; batch 20: M = 32, 64, 128 → 0.42, 0.38, 0.36.
_CPU_STACK_ELEMENTS = 2**19
_CPU_MAX_STACK = 256


def resolve_device(device: str | torch.device = "auto") -> torch.device:
    """``"auto"`` → CUDA when available, else CPU; anything else → ``torch.device``."""
    if isinstance(device, str) and device == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    return torch.device(device)


def default_models_per_batch(
    batch_size: int, features: int, n_models: int, device: torch.device
) -> int:
    """Stack size used when ``TrainConfig.models_per_batch`` is None.

    CPU: ⌊2¹⁹ / (batch_size · features)⌋ models (one layer's activations of the stack
    ≈ 2 MB in float32), at least 1, at most 256 and ``n_models``; ``features`` is the
    widest layer, max(width, d). CUDA: all ``n_models``.
    """
    if device.type != "cpu":
        return n_models
    per = _CPU_STACK_ELEMENTS // (batch_size * features)
    return max(1, min(_CPU_MAX_STACK, n_models, per))


def _per_model(value: Any, m: int, name: str) -> list[float]:
    """Broadcast a scalar or length-m sequence to a list of m floats."""
    if value is None:
        raise ValueError(f"{name} must be given")
    if isinstance(value, torch.Tensor | np.ndarray):
        value = value.tolist()
    if isinstance(value, int | float):
        return [float(value)] * m
    values = [float(v) for v in value]
    if len(values) != m:
        raise ValueError(f"{name} has {len(values)} values, expected {m} (one per model)")
    return values


# --------------------------------------------------------------------------- model


class _LeakyReLUPerModel(torch.autograd.Function):
    """LeakyReLU with a slope per model: ``u`` ``(B, M, F)``, ``a`` ``(1, M, 1)``.

    Forward ``relu(u) + a·(u − relu(u))`` and backward ``g₊ + a·(g − g₊)`` (g₊ = g where
    u > 0, else 0): one of the two terms is always an exact zero, so both are bitwise
    equal to ``F.leaky_relu`` / its gradient. Measured (B = 20, M = 64, fwd + bwd):
    190 µs vs 350 µs for autograd through ``a·u + (1 − a)·relu(u)`` (which is not
    exact: a·u + (1 − a)·u ≠ u in floating point) and ~800 µs for ``torch.where`` /
    ``torch.maximum``.
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


class EnsembleMLP(nn.Module):
    """M independent :class:`~dnnphase.model.MLP` s in stacked tensors.

    Parameters (model dimension first, so ``p[a:b]`` is models a..b−1):

    * ``weights[i]``: ``(M, in_i, out_i)`` for the L hidden Linear maps and the output map
    * ``biases[i]``: ``(M, 1, out_i)`` (empty list when ``bias=False``)
    * ``bn_weights[i]``, ``bn_biases[i]``: ``(M, F_i)`` for the input BatchNorm (i = 0)
      and the L hidden ones; buffers ``running_mean_i``, ``running_var_i``: ``(M, F_i)``

    ``alpha`` (LeakyReLU slope) and ``dropout`` are per-model constants fixed at
    construction. A freshly constructed ensemble holds zeros; use :meth:`init` or
    :meth:`from_models` for PyTorch's default initialisation.

    ``forward`` takes ``x`` ``(B, d)`` (shared by all models) or ``(B, M, d)``
    (one batch per model) and returns logits ``(M, B, C)``.
    """

    def __init__(
        self,
        n_models: int,
        in_features: int,
        n_classes: int,
        depth: int = 7,
        width: int = 100,
        alpha: float | Sequence[float] = 0.0,
        dropout: float | Sequence[float] = 0.0,
        batchnorm: bool = True,
        bias: bool = True,
        bn_eps: float = 1e-5,
        bn_momentum: float = 0.1,
        dtype: torch.dtype | None = None,
        device: torch.device | str | None = None,
    ) -> None:
        super().__init__()
        m = int(n_models)
        if m < 1 or depth < 0 or width < 1 or in_features < 1 or n_classes < 1:
            raise ValueError("n_models, width, in_features, n_classes must be >= 1, depth >= 0")
        alphas = _per_model(alpha, m, "alpha")
        drops = _per_model(dropout, m, "dropout")
        if not all(0.0 <= a <= 1.0 for a in alphas):
            raise ValueError(f"alpha must lie in [0, 1], got {alphas}")
        if not all(0.0 <= p < 1.0 for p in drops):
            raise ValueError(f"dropout must lie in [0, 1), got {drops}")
        self.n_models = m
        self.in_features, self.n_classes = in_features, n_classes
        self.depth, self.width = depth, width
        self.batchnorm, self.bias = batchnorm, bias
        self.bn_eps, self.bn_momentum = bn_eps, bn_momentum
        self.alphas: tuple[float, ...] = tuple(alphas)
        self.dropouts: tuple[float, ...] = tuple(drops)
        # Uniform slope → native leaky_relu; mixed slopes → _LeakyReLUPerModel. Both are
        # bitwise nn.LeakyReLU, so a model's result does not depend on its stack-mates.
        self._alpha_uniform = alphas[0] if len(set(alphas)) == 1 else None
        self.dims = [in_features] + [width] * depth + [n_classes]

        fk = {"dtype": dtype, "device": device}
        n_lin = depth + 1
        dims = self.dims
        self.weights = nn.ParameterList(
            nn.Parameter(torch.zeros(m, dims[i], dims[i + 1], **fk)) for i in range(n_lin)
        )
        self.biases = nn.ParameterList(
            nn.Parameter(torch.zeros(m, 1, dims[i + 1], **fk)) for i in range(n_lin) if bias
        )
        bn_dims = dims[:-1] if batchnorm else []
        self.bn_weights = nn.ParameterList(nn.Parameter(torch.ones(m, f, **fk)) for f in bn_dims)
        self.bn_biases = nn.ParameterList(nn.Parameter(torch.zeros(m, f, **fk)) for f in bn_dims)
        for i, f in enumerate(bn_dims):
            self.register_buffer(f"running_mean_{i}", torch.zeros(m, f, **fk))
            self.register_buffer(f"running_var_{i}", torch.ones(m, f, **fk))

        # Per-model constants on the device (not part of the state dict).
        levels = [round(p * _LEVELS) for p in drops]  # dropped integers out of 2^16
        self._any_dropout = any(k > 0 for k in levels)
        self.register_buffer("alpha", torch.tensor(alphas, **fk), persistent=False)
        # Drop unit when its int16 random integer < threshold (= k − 2¹⁵); kept units
        # are scaled by 2¹⁶ / (2¹⁶ − k). Stored as floats: the mask is built in floating
        # point, see dropout_scale.
        self.register_buffer(
            "_drop_threshold",
            torch.tensor([float(k - _LEVELS // 2) for k in levels], **fk), persistent=False,
        )
        self.register_buffer(
            "_drop_scale", torch.tensor([_LEVELS / (_LEVELS - k) for k in levels], **fk),
            persistent=False,
        )

    # ------------------------------------------------------------ construction

    def _like(self, n_models: int, alphas, drops) -> EnsembleMLP:
        p = self.weights[0]
        return EnsembleMLP(
            n_models, self.in_features, self.n_classes, self.depth, self.width, alphas, drops,
            self.batchnorm, self.bias, self.bn_eps, self.bn_momentum, p.dtype, p.device,
        )

    @classmethod
    def from_models(
        cls,
        models: Sequence[MLP],
        dtype: torch.dtype | None = None,
        device: torch.device | str | None = None,
    ) -> EnsembleMLP:
        """Stack the parameters and BatchNorm statistics of single :class:`MLP` s."""
        first = models[0]
        arch = (first.in_features, first.n_classes, first.depth, first.width,
                first.batchnorm, first.bias)
        for mdl in models:
            if (mdl.in_features, mdl.n_classes, mdl.depth, mdl.width,
                    mdl.batchnorm, mdl.bias) != arch:
                raise ValueError("all models must share one architecture")
        dtype = dtype or first.out.weight.dtype
        bn0 = first.input_bn
        ens = cls(
            len(models), first.in_features, first.n_classes, first.depth, first.width,
            [mdl.alpha for mdl in models], [mdl.dropout for mdl in models],
            first.batchnorm, first.bias,
            bn0.eps if first.batchnorm else 1e-5, bn0.momentum if first.batchnorm else 0.1,
            dtype, device,
        )

        lins = [list(mdl.linears) + [mdl.out] for mdl in models]  # per model, per layer
        norms = [[mdl.input_bn] + list(mdl.norms) for mdl in models]

        def stack(tensors: list[torch.Tensor]) -> torch.Tensor:
            return torch.stack([t.detach() for t in tensors]).to(ens.weights[0])

        with torch.no_grad():
            for i in range(first.depth + 1):
                ens.weights[i].copy_(stack([ls[i].weight.T for ls in lins]))
                if first.bias:
                    ens.biases[i].copy_(stack([ls[i].bias[None] for ls in lins]))
                if first.batchnorm:
                    ens.bn_weights[i].copy_(stack([ns[i].weight for ns in norms]))
                    ens.bn_biases[i].copy_(stack([ns[i].bias for ns in norms]))
                    ens.running_mean(i).copy_(stack([ns[i].running_mean for ns in norms]))
                    ens.running_var(i).copy_(stack([ns[i].running_var for ns in norms]))
        return ens

    @classmethod
    def init(
        cls,
        n_models: int,
        in_features: int,
        n_classes: int,
        *,
        seeds: Sequence[int],
        depth: int = 7,
        width: int = 100,
        alpha: float | Sequence[float] = 0.0,
        dropout: float | Sequence[float] = 0.0,
        batchnorm: bool = True,
        bias: bool = True,
        dtype: torch.dtype | None = None,
        device: torch.device | str | None = None,
    ) -> EnsembleMLP:
        """PyTorch default init: model m equals ``MLP(...)`` built right after
        ``torch.manual_seed(seeds[m])`` (built exactly so, then stacked). The global
        RNG state is left untouched."""
        seeds = [int(s) for s in seeds]
        if len(seeds) != n_models:
            raise ValueError(f"{len(seeds)} seeds for {n_models} models")
        alphas = _per_model(alpha, n_models, "alpha")
        drops = _per_model(dropout, n_models, "dropout")
        models = []
        with torch.random.fork_rng(devices=[]):
            for s, a, p in zip(seeds, alphas, drops, strict=True):
                torch.manual_seed(s)
                models.append(MLP(in_features, n_classes, depth, width, a, p, batchnorm, bias))
        return cls.from_models(models, dtype=dtype or torch.get_default_dtype(), device=device)

    def to_models(self) -> list[MLP]:
        """The inverse of :meth:`from_models`: one :class:`MLP` per model (copies, CPU)."""
        out = []
        for m in range(self.n_models):
            mdl = MLP(self.in_features, self.n_classes, self.depth, self.width, self.alphas[m],
                      self.dropouts[m], self.batchnorm, self.bias, self.bn_eps, self.bn_momentum)
            mdl = mdl.to(self.weights[0].dtype)
            lins = list(mdl.linears) + [mdl.out]
            with torch.no_grad():
                for i, lin in enumerate(lins):
                    lin.weight.copy_(self.weights[i][m].T)
                    if self.bias:
                        lin.bias.copy_(self.biases[i][m, 0])
                if self.batchnorm:
                    for i, bn in enumerate([mdl.input_bn] + list(mdl.norms)):
                        bn.weight.copy_(self.bn_weights[i][m])
                        bn.bias.copy_(self.bn_biases[i][m])
                        bn.running_mean.copy_(self.running_mean(i)[m])
                        bn.running_var.copy_(self.running_var(i)[m])
            out.append(mdl.train(self.training))
        return out

    def select(self, idx: Sequence[int] | torch.Tensor, with_grad: bool = False) -> EnsembleMLP:
        """A new ensemble with models ``idx`` (copies); ``with_grad`` also slices ``.grad``."""
        idx_list = [int(i) for i in (idx.tolist() if isinstance(idx, torch.Tensor) else idx)]
        new = self._like(len(idx_list), [self.alphas[i] for i in idx_list],
                         [self.dropouts[i] for i in idx_list])
        it = torch.tensor(idx_list, dtype=torch.long, device=self.weights[0].device)
        new.load_state_dict({k: v.index_select(0, it) for k, v in self.state_dict().items()})
        if with_grad:
            for p_old, p_new in zip(self.parameters(), new.parameters(), strict=True):
                if p_old.grad is not None:
                    p_new.grad = p_old.grad.index_select(0, it)
        return new.train(self.training)

    @staticmethod
    def cat(ensembles: Sequence[EnsembleMLP]) -> EnsembleMLP:
        """Concatenate ensembles of one architecture along the model dimension."""
        first = ensembles[0]
        alphas = [a for e in ensembles for a in e.alphas]
        drops = [p for e in ensembles for p in e.dropouts]
        new = first._like(len(alphas), alphas, drops)
        states = [e.state_dict() for e in ensembles]
        new.load_state_dict({k: torch.cat([s[k] for s in states]) for k in states[0]})
        return new.train(first.training)

    # ------------------------------------------------------------ forward

    def running_mean(self, i: int) -> torch.Tensor:
        return getattr(self, f"running_mean_{i}")

    def running_var(self, i: int) -> torch.Tensor:
        return getattr(self, f"running_var_{i}")

    def _bn(self, h: torch.Tensor, i: int) -> torch.Tensor:
        """BatchNorm of every model: ``h`` ``(B, M·F)`` → ``(B, M·F)``; channel m·F + f."""
        shift = self.bn_biases[i].view(-1)
        if i == 0 and self.depth > 0:
            # The input BatchNorm's shift reaches the first hidden BatchNorm only through
            # a Linear map, whose output BatchNorm removes it: exactly zero gradient, like
            # the hidden biases (see forward).
            shift = shift.detach()
        return F.batch_norm(
            h, self.running_mean(i).view(-1), self.running_var(i).view(-1),
            self.bn_weights[i].view(-1), shift, self.training, self.bn_momentum, self.bn_eps,
        )

    def _linear(self, h: torch.Tensor, i: int) -> torch.Tensor:
        """``h`` ``(B, M, in)`` → ``(M, B, out)`` (the output map); BLAS reads the
        transposed view directly."""
        h_t = h.transpose(0, 1)  # (M, B, in), strided view
        if self.bias:
            return torch.baddbmm(self.biases[i], h_t, self.weights[i])
        return torch.bmm(h_t, self.weights[i])

    def _act(self, u: torch.Tensor) -> torch.Tensor:
        """LeakyReLU with per-model slope, ``u`` ``(B, M, F)``; bitwise ``F.leaky_relu``."""
        if self._alpha_uniform is not None:
            return F.leaky_relu(u, self._alpha_uniform)
        return _LeakyReLUPerModel.apply(u, self.alpha.view(1, -1, 1))

    def dropout_scale(self, bits: torch.Tensor) -> torch.Tensor:
        """Per-model dropout multiplier from 16-bit random integers.

        ``bits`` ``(B, M, F)`` int16 (uniform on [−2¹⁵, 2¹⁵)) → ``(B, M, F)``: 0 where
        ``bits < threshold_m`` (probability round(p·2¹⁶)/2¹⁶), 1/(1 − p_realised)
        where kept; exactly 1 everywhere for a model with p = 0.
        """
        # clamp(bits − threshold + 1, 0, 1) is exactly the 0/1 keep indicator (integers
        # are exact in float32). Four float passes measured ~4x faster than an int16
        # comparison followed by a bool → float multiply.
        ct = torch.promote_types(self._drop_scale.dtype, torch.float32)
        t = bits.to(ct)
        t.sub_(self._drop_threshold.view(1, -1, 1).to(ct) - 1)
        t.clamp_(0.0, 1.0)
        return t.mul_(self._drop_scale.view(1, -1, 1))

    def forward(
        self,
        x: torch.Tensor,
        return_features: bool = False,
        dropout_bits: torch.Tensor | None = None,
    ) -> torch.Tensor | tuple[torch.Tensor, list[torch.Tensor]]:
        """Logits ``(M, B, C)``; with ``return_features`` also ``[h_0..h_L]``, each ``(B, M, F)``.

        ``x``: ``(B, d)`` shared by all models or ``(B, M, d)``. Features follow
        :class:`MLP`: h_0 after the input BatchNorm, h_ℓ after the activation and
        before dropout. ``dropout_bits`` ``(L, B, M, width)`` int16 are the random
        integers of the dropout masks in training mode (drawn from torch's global
        RNG when omitted).
        """
        m, d = self.n_models, self.in_features
        if x.dim() == 2:
            x = x.unsqueeze(1).expand(-1, m, -1)
        b = x.shape[0]
        h = x.reshape(b, m * d)  # (B, M·d)
        if self.batchnorm:
            h = self._bn(h, 0)
        h = h.view(b, m, d)
        feats = [h] if return_features else None
        drop = self.training and self._any_dropout and self.depth > 0
        if drop and dropout_bits is None:
            dropout_bits = torch.randint(
                -_LEVELS // 2, _LEVELS // 2, (self.depth, b, m, self.width),
                dtype=torch.int16, device=x.device,
            )
        n = self.width
        for i in range(self.depth):
            z = torch.bmm(h.transpose(0, 1), self.weights[i])  # (M, B, n)
            u = z.transpose(0, 1).reshape(b, m * n)  # (B, M·n): a copy unless M == 1
            if self.bias:
                bias = self.biases[i].view(1, m * n)
                # A bias feeding BatchNorm is removed by its mean subtraction: exactly zero
                # gradient (a gauge parameter, see the module docstring), so no autograd
                # noise for it; the optimizer steps it with g = 0.
                u = u + (bias.detach() if self.batchnorm else bias)
            if self.batchnorm:
                u = self._bn(u, i + 1)
            h = self._act(u.view(b, m, n))  # (B, M, n)
            if feats is not None:
                feats.append(h)
            if drop:
                h = h * self.dropout_scale(dropout_bits[i])
        logits = self._linear(h, self.depth)  # (M, B, C)
        return (logits, feats) if return_features else logits

    # ------------------------------------------------------------ evaluation

    @torch.no_grad()
    def evaluate(
        self,
        x: torch.Tensor,
        y: torch.Tensor | None = None,
        return_features: bool = False,
        models_per_batch: int | None = None,
    ) -> dict[str, Any]:
        """Eval-mode pass on shared inputs ``x`` ``(N, d)``, ``models_per_batch`` models at a time.

        Returns a dict with ``loss`` ``(M,)`` and ``accuracy`` ``(M,)`` (when ``y`` is
        given; mean cross-entropy and fraction correct) and ``features``
        ``[h_0..h_L]``, each ``(M, N, F)`` (when ``return_features``). The training
        flag is restored afterwards.
        """
        was_training = self.training
        self.eval()
        try:
            step = models_per_batch or self.n_models
            out: dict[str, list] = {"loss": [], "accuracy": [], "features": []}
            for a in range(0, self.n_models, step):
                stop = min(a + step, self.n_models)
                part = self if step >= self.n_models else self.select(list(range(a, stop)))
                part.eval()
                logits, feats = part(x, return_features=True) if return_features \
                    else (part(x), None)  # (m, N, C)
                if y is not None:
                    mm, n, c = logits.shape
                    loss = F.cross_entropy(
                        logits.reshape(mm * n, c), y.repeat(mm), reduction="none"
                    )
                    out["loss"].append(loss.view(mm, n).mean(1))
                    out["accuracy"].append((logits.argmax(-1) == y).to(logits.dtype).mean(1))
                if return_features:
                    out["features"].append([f.transpose(0, 1).contiguous() for f in feats])
            res: dict[str, Any] = {}
            if y is not None:
                res["loss"] = torch.cat(out["loss"])
                res["accuracy"] = torch.cat(out["accuracy"])
            if return_features:
                res["features"] = [torch.cat(layer) for layer in zip(*out["features"], strict=True)]
            return res
        finally:
            self.train(was_training)

    def features(self, x: torch.Tensor, models_per_batch: int | None = None) -> list[torch.Tensor]:
        """Eval-mode features ``[h_0..h_L]`` on ``x`` ``(N, d)``, each ``(M, N, F)``."""
        return self.evaluate(x, return_features=True, models_per_batch=models_per_batch)["features"]


# --------------------------------------------------------------------------- config


@dataclass
class TrainConfig:
    """Training settings shared by all models of a call (per-model knobs are arguments
    of :func:`train_ensemble`).

    Early stopping (DESIGN §3: "stop when the training loss is below 1e-4 or stops
    changing"), checked for every model after every epoch e on its *epoch loss*
    ℓ_e — the mean of the epoch's mini-batch losses in training mode (dropout and
    label/data noise active; at full batch the loss of the epoch's single step):

    * ``ℓ_e < loss_threshold`` → stop ("loss_threshold"), or
    * ``e ≥ 2·patience`` and ``|L_new − L_old| ≤ rel_tol · L_old``, where L_new and
      L_old are the means of ℓ over the last ``patience`` epochs and over the
      ``patience`` epochs before those → stop ("plateau"). Comparing window means
      rather than single epochs keeps mini-batch/dropout noise from triggering it.

    ``loss_threshold=0`` or ``rel_tol=0`` / ``patience=0`` switch a rule off.
    A model whose loss becomes non-finite stops at once ("diverged").

    Label + data noise of level q (knob ``label_noise``), fresh every step: each
    label of the batch is, with probability q, replaced by a class drawn uniformly
    from all C classes (it may draw the true one), and Gaussian noise of standard
    deviation q·σ_f is added to input feature f, σ_f the per-feature standard
    deviation (population, ``correction=0``) of the clean training set.

    ``models_per_batch``: how many models share one stack. ``None`` chooses: on CPU
    ⌊2¹⁹ / (B · max(width, d))⌋, at most 256 (2 models at batch 2560, 256 at batch
    20 for width 100; see the measurements at ``_CPU_STACK_ELEMENTS``); on CUDA all
    models of a batch-size group.
    """

    epochs: int = 100
    batch_size: int | None = None  # None: full batch
    optimizer: str = "adam"  # "adam" | "sgd"
    lr: float = 1e-3
    weight_decay: float = 0.0  # L2 added to the gradient, as torch.optim
    betas: tuple[float, float] = (0.9, 0.999)  # Adam
    eps: float = 1e-8  # Adam
    momentum: float = 0.0  # SGD
    nesterov: bool = False  # SGD
    loss_threshold: float = 1e-4
    patience: int = 10
    rel_tol: float = 1e-3
    dtype: torch.dtype | str = torch.float32
    device: str | torch.device = "auto"
    models_per_batch: int | None = None
    record_every: int | None = None  # eval-mode snapshots every k epochs (and epoch 0)
    # Adam's fused kernel: None = use it where supported (fast; stack-invariant only to
    # the last bit, see the module docstring); False = foreach Adam (bitwise invariant).
    fused: bool | None = None

    def __post_init__(self) -> None:
        if isinstance(self.dtype, str):
            self.dtype = getattr(torch, self.dtype)
        if self.optimizer not in ("adam", "sgd"):
            raise ValueError(f"optimizer must be 'adam' or 'sgd', got {self.optimizer!r}")
        if self.epochs < 1:
            raise ValueError(f"epochs must be >= 1, got {self.epochs}")
        if self.batch_size is not None and self.batch_size < 1:
            raise ValueError(f"batch_size must be >= 1 or None, got {self.batch_size}")
        if not self.lr > 0:
            raise ValueError(f"lr must be > 0, got {self.lr}")
        if self.models_per_batch is not None and self.models_per_batch < 1:
            raise ValueError(f"models_per_batch must be >= 1, got {self.models_per_batch}")
        if self.record_every is not None and self.record_every < 1:
            raise ValueError(f"record_every must be >= 1, got {self.record_every}")
        if self.patience < 0 or self.rel_tol < 0 or self.loss_threshold < 0:
            raise ValueError("patience, rel_tol and loss_threshold must be >= 0")
        if self.momentum < 0 or (self.nesterov and self.momentum == 0):
            raise ValueError("momentum must be >= 0 (and > 0 for nesterov)")


# --------------------------------------------------------------------------- result


@dataclass
class TrainResult:
    """Per-model outcome of :func:`train_ensemble`, in the order of the knobs.

    Metrics are eval-mode (running BatchNorm statistics, no dropout, clean data)
    on the full training / test set after the last update; NaN for diverged
    models (and ``test_accuracy`` NaN without a test set).
    """

    model: EnsembleMLP  # final parameters, CPU
    train_loss: torch.Tensor  # (M,) float64
    train_accuracy: torch.Tensor  # (M,) float64
    test_accuracy: torch.Tensor  # (M,) float64
    epochs_run: torch.Tensor  # (M,) int64: epochs started (a diverged model's last one counts)
    steps_run: torch.Tensor  # (M,) int64: optimizer updates applied
    diverged: torch.Tensor  # (M,) bool
    stop_reason: list[str]  # "max_epochs" | "loss_threshold" | "plateau" | "diverged"
    loss_history: torch.Tensor  # (M, epochs) float64: epoch losses, NaN after the stop
    batch_size: torch.Tensor  # (M,) int64: effective batch size
    snapshots: list[tuple[int, Any]] = field(default_factory=list)
    x_train: torch.Tensor | None = None
    device: torch.device = torch.device("cpu")

    def features(
        self,
        indices: Sequence[int] | None = None,
        x: torch.Tensor | None = None,
        models_per_batch: int | None = 16,
    ) -> list[torch.Tensor]:
        """Final eval-mode features ``[h_0..h_L]``, each ``(m, N, F)`` on the CPU, of
        models ``indices`` (default all) on ``x`` (default the training set),
        computed ``models_per_batch`` models at a time on the training device."""
        if indices is None:
            indices = range(self.model.n_models)
        model = self.model.select(list(indices)).to(self.device)  # a copy
        x = self.x_train if x is None else x
        x = x.to(self.device, model.weights[0].dtype)
        feats = model.features(x, models_per_batch=models_per_batch)
        return [f.cpu() for f in feats]


# --------------------------------------------------------------------------- randomness


class _ModelStreams:
    """Per-model random streams of one stack (see the module docstring).

    Generators: ``order`` (CPU torch, seeded with the seed itself: data order),
    ``noise`` (torch on the device: label/data noise; dropout on CUDA),
    ``bits`` (numpy PCG64: dropout on CPU); the latter two are seeded from
    ``np.random.SeedSequence(seed, spawn_key=(k,))`` so the streams are independent.
    """

    def __init__(self, seeds: Sequence[int], device: torch.device) -> None:
        self.device = device
        self.seeds = [int(s) for s in seeds]
        self.order = [torch.Generator().manual_seed(s) for s in self.seeds]
        self.noise = []
        self.bits = []
        for s in self.seeds:
            ss = np.random.SeedSequence(s, spawn_key=(1,))
            g = torch.Generator(device=device)
            g.manual_seed(int(ss.generate_state(1, np.uint64)[0]))
            self.noise.append(g)
            self.bits.append(np.random.PCG64(np.random.SeedSequence(s, spawn_key=(2,))))

    def select(self, keep: Sequence[int]) -> None:
        self.seeds = [self.seeds[i] for i in keep]
        self.order = [self.order[i] for i in keep]
        self.noise = [self.noise[i] for i in keep]
        self.bits = [self.bits[i] for i in keep]

    def epoch_order(self, n: int) -> torch.Tensor:
        """``(M, N)`` per-model permutations of the training set for one epoch."""
        return torch.stack([torch.randperm(n, generator=g) for g in self.order]).to(self.device)

    def dropout_bits(self, depth: int, b: int, width: int) -> torch.Tensor:
        """``(L, B, M, width)`` int16 uniform integers, model m from its own stream."""
        m = len(self.seeds)
        count = depth * b * width
        if self.device.type == "cpu":
            # 64 random bits per generator call = four 16-bit thresholds.
            n_words = -(-count // 4)
            rows = [bg.random_raw(n_words) for bg in self.bits]
            words = rows[0][None] if m == 1 else np.stack(rows)  # (M, n_words) uint64
            bits = torch.from_numpy(words.view(np.int16)[:, :count])
        else:
            bits = torch.empty((m, count), dtype=torch.int16, device=self.device)
            for j, g in enumerate(self.noise):
                bits[j].random_(-_LEVELS // 2, _LEVELS // 2, generator=g)
        return bits.view(m, depth, b, width).permute(1, 2, 0, 3)  # (L, B, M, width) view


class _Noise:
    """Label + data noise of one stack: per-model level q, fresh every step."""

    def __init__(self, q: Sequence[float], std: torch.Tensor, n_classes: int) -> None:
        self.n_classes = n_classes
        self.std = std  # (d,)
        self.set_levels(q)

    def set_levels(self, q: Sequence[float]) -> None:
        self.q_list = [float(v) for v in q]
        self.noisy = [j for j, v in enumerate(self.q_list) if v > 0]
        self.q = torch.tensor(self.q_list, dtype=self.std.dtype, device=self.std.device)
        self.sigma = self.q[:, None] * self.std[None, :]  # (M, d)
        self._buffers: tuple | None = None

    def select(self, keep: Sequence[int]) -> None:
        self.set_levels([self.q_list[i] for i in keep])

    def __call__(
        self, x: torch.Tensor, y: torch.Tensor, gens: Sequence[torch.Generator]
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Corrupt one step's batch: ``x`` ``(B, M, d)``, ``y`` ``(M, B)`` → new tensors."""
        if not self.noisy:
            return x, y
        b, m, d = x.shape
        if self._buffers is None or self._buffers[0].shape[1] != b:
            # Rows of models with q = 0 stay u = 2 (never relabelled) and ξ = 0, so
            # they see the clean batch exactly.
            u = torch.full((m, b), 2.0, dtype=x.dtype, device=x.device)
            lab = torch.zeros((m, b), dtype=torch.long, device=x.device)
            xi = torch.zeros((m, b, d), dtype=x.dtype, device=x.device)
            self._buffers = (u, lab, xi)
        u, lab, xi = self._buffers
        for j in self.noisy:
            # Contiguous per-model rows: torch's samplers take other code paths (other
            # numbers) on strided tensors, which would tie a model's noise to M.
            g = gens[j]
            u[j].uniform_(generator=g)
            lab[j].random_(0, self.n_classes, generator=g)
            xi[j].normal_(generator=g)
        y = torch.where(u < self.q[:, None], lab, y)
        x = x + xi.transpose(0, 1) * self.sigma  # (B, M, d)
        return x, y


# --------------------------------------------------------------------------- optimizer


class _StackedOptimizer:
    """Adam / SGD over stacked parameters, exactly torch.optim's per-model update.

    Models with equal learning rate form contiguous runs (the trainer sorts by
    lr); each run is one call of torch's functional optimizer on the slices
    ``p[a:b]``. All models in the stack have taken the same number of steps (stopped
    models are removed), so the Adam step count is shared.
    """

    def __init__(self, params: list[torch.Tensor], lr: Sequence[float], cfg: TrainConfig) -> None:
        self.cfg = cfg
        self.steps = 0
        if cfg.optimizer == "adam":
            self.state = [[torch.zeros_like(p) for p in params] for _ in range(2)]  # m, v
        elif cfg.momentum > 0:
            self.state = [[torch.zeros_like(p) for p in params]]
        else:
            self.state = []
        dev = params[0].device
        fusable = dev.type in ("cpu", "cuda") and params[0].dtype in (
            torch.float16, torch.bfloat16, torch.float32, torch.float64)
        self.fused = fusable if cfg.fused is None else cfg.fused
        self._set_lr(lr)

    def _set_lr(self, lr: Sequence[float]) -> None:
        self.lr = [float(v) for v in lr]
        runs, start = [], 0
        for j in range(1, len(self.lr) + 1):
            if j == len(self.lr) or self.lr[j] != self.lr[start]:
                runs.append((start, j, self.lr[start]))
                start = j
        self.runs = runs
        self._step_tensors = None  # rebuilt lazily with the current step count

    def select(self, keep: Sequence[int]) -> None:
        it = torch.tensor(list(keep), dtype=torch.long, device=self.state[0][0].device) \
            if self.state else None
        self.state = [[s.index_select(0, it) for s in group] for group in self.state]
        self._set_lr([self.lr[i] for i in keep])

    @torch.no_grad()
    def step(self, params: list[torch.Tensor]) -> None:
        cfg = self.cfg
        if cfg.optimizer == "adam" and self._step_tensors is None:
            # One step tensor per (run, parameter): the functional Adam increments each.
            dev = params[0].device if self.fused else torch.device("cpu")
            self._step_tensors = [
                [torch.tensor(float(self.steps), dtype=torch.float32, device=dev) for _ in params]
                for _ in self.runs
            ]
        # A parameter without gradient (a bias feeding BatchNorm) has gradient zero.
        grads = [p.grad if p.grad is not None else torch.zeros_like(p) for p in params]
        for r, (a, b, lr) in enumerate(self.runs):
            ps = [p[a:b] for p in params]
            gs = [g[a:b] for g in grads]
            if cfg.optimizer == "adam":
                _functional_adam(
                    ps, gs, [s[a:b] for s in self.state[0]], [s[a:b] for s in self.state[1]], [],
                    self._step_tensors[r], foreach=not self.fused, fused=self.fused or None,
                    amsgrad=False, beta1=cfg.betas[0], beta2=cfg.betas[1], lr=lr,
                    weight_decay=cfg.weight_decay, eps=cfg.eps, maximize=False,
                )
            else:
                # Zero-initialised momentum buffers: μ·0 + g = g is bitwise torch's
                # first-step clone (dampening is fixed at 0).
                bufs = [s[a:b] for s in self.state[0]] if self.state else [None] * len(ps)
                _functional_sgd(
                    ps, gs, bufs, foreach=True, weight_decay=cfg.weight_decay,
                    momentum=cfg.momentum, lr=lr, dampening=0.0, nesterov=cfg.nesterov,
                    maximize=False,
                )
        self.steps += 1


# --------------------------------------------------------------------------- training


def _stop_reason(hist: np.ndarray, e: int, cfg: TrainConfig) -> str | None:
    """Early-stopping rule (see :class:`TrainConfig`) on epoch losses ``hist[:e]``."""
    last = hist[e - 1]
    if not np.isfinite(last):
        return "diverged"
    if last < cfg.loss_threshold:
        return "loss_threshold"
    p = cfg.patience
    if p > 0 and cfg.rel_tol > 0 and e >= 2 * p:
        old = hist[e - 2 * p : e - p].mean()
        new = hist[e - p : e].mean()
        if abs(new - old) <= cfg.rel_tol * abs(old):
            return "plateau"
    return None


def _split_record(rec: Any, j: int) -> Any:
    """Model j's part of a record (a tensor or a list/tuple of tensors, models first)."""
    if isinstance(rec, list | tuple):
        return [r[j : j + 1] for r in rec]
    return rec[j : j + 1]


def _cat_records(parts: list[Any]) -> Any:
    if isinstance(parts[0], list | tuple):
        return [torch.cat(layer) for layer in zip(*parts, strict=True)]
    return torch.cat(parts)


@dataclass
class _Retired:
    model: EnsembleMLP  # one model
    epochs: int
    steps: int
    reason: str
    record: Any = None


def _train_stack(
    model: EnsembleMLP,
    lr: list[float],
    noise_q: list[float],
    seeds: list[int],
    b: int,
    x: torch.Tensor,
    y: torch.Tensor,
    x_std: torch.Tensor,
    cfg: TrainConfig,
    record_fn: Callable | None,
    record_epochs: list[int],
    eval_chunk: int,
) -> tuple[list[_Retired], np.ndarray, dict[int, list[Any]]]:
    """Train one stack of models sharing batch size ``b`` (the training loop).

    ``x`` ``(N, d)`` and ``y`` ``(N,)`` are on the training device. Returns one
    :class:`_Retired` per model (input order), the epoch-loss history ``(M, epochs)``
    and the per-model records ``{epoch: [record_m]}``.
    """
    n = x.shape[0]
    m_all = model.n_models
    steps_per_epoch = n // b
    full_batch = b == n
    streams = _ModelStreams(seeds, x.device)
    noise = _Noise(noise_q, x_std, model.n_classes)
    opt = _StackedOptimizer(list(model.parameters()), lr, cfg)
    active = list(range(m_all))  # stack position → model index in this call
    retired: dict[int, _Retired] = {}
    history = np.full((m_all, cfg.epochs), np.nan)
    records: dict[int, list[Any]] = {e: [None] * m_all for e in record_epochs}
    model.train()

    def record(ens: EnsembleMLP) -> Any:
        feats = ens.features(x, models_per_batch=eval_chunk)
        return _to_cpu(record_fn(feats) if record_fn is not None else feats)  # off the GPU

    def store_records(epoch: int) -> None:
        if epoch in records and active:
            rec = record(model)
            for pos, j in enumerate(active):
                records[epoch][j] = _split_record(rec, pos)

    def retire(positions: list[int], epoch: int, reason_of: Callable[[int], str]) -> None:
        """Save models at stack ``positions`` and drop them from every stack."""
        nonlocal model, active, x_full, y_full
        if not positions:
            return
        gone = model.select(positions)
        rec = record(gone) if records else None
        for k, pos in enumerate(positions):
            j = active[pos]
            retired[j] = _Retired(gone.select([k]), epoch, opt.steps, reason_of(pos),
                                  _split_record(rec, k) if rec is not None else None)
        keep = [pos for pos in range(len(active)) if pos not in set(positions)]
        active = [active[pos] for pos in keep]
        if not keep:
            return
        model = model.select(keep, with_grad=True)
        opt.select(keep)
        streams.select(keep)
        noise.select(keep)
        x_full = y_full = None

    x_full = y_full = None  # full-batch inputs replicated per model, cached
    store_records(0)
    epoch = 0
    for epoch in range(1, cfg.epochs + 1):
        perm = None if full_batch else streams.epoch_order(n)  # (M, N)
        loss_sum = torch.zeros(len(active), dtype=x.dtype, device=x.device)
        for s in range(steps_per_epoch):
            m = len(active)
            if full_batch:
                if x_full is None:
                    x_full = x.unsqueeze(1).expand(n, m, -1).contiguous()  # (N, M, d)
                    y_full = y.unsqueeze(0).expand(m, n).contiguous()  # (M, N)
                xb, yb = x_full, y_full
            else:
                idx = perm[:, s * b : (s + 1) * b]  # (M, B)
                xb, yb = x[idx.T], y[idx]  # (B, M, d), (M, B)
            xb, yb = noise(xb, yb, streams.noise)
            bits = (streams.dropout_bits(model.depth, b, model.width)
                    if model._any_dropout and model.depth > 0 else None)
            logits = model(xb, dropout_bits=bits)  # (M, B, C)
            losses = F.cross_entropy(
                logits.reshape(m * b, -1), yb.reshape(m * b), reduction="none"
            ).view(m, b).mean(1)  # (M,): each model's own mean loss
            model.zero_grad(set_to_none=True)
            losses.sum().backward()  # sum over models → per-model gradients
            losses = losses.detach()
            bad = ~torch.isfinite(losses)
            if bool(bad.any()):
                # Freeze diverged models before this update; the others go on.
                positions = bad.nonzero().flatten().tolist()
                for pos in positions:
                    history[active[pos], epoch - 1] = np.nan
                good = ~bad
                loss_sum, losses = loss_sum[good], losses[good]
                if perm is not None:
                    perm = perm[good]
                retire(positions, epoch, lambda pos: "diverged")
                if not active:
                    break
            opt.step(list(model.parameters()))
            loss_sum += losses
        if not active:
            break
        epoch_loss = (loss_sum / steps_per_epoch).cpu().numpy()
        history[active, epoch - 1] = epoch_loss
        stops = {pos: _stop_reason(history[j], epoch, cfg) for pos, j in enumerate(active)}
        stops = {pos: r for pos, r in stops.items() if r is not None}
        retire(sorted(stops), epoch, stops.__getitem__)
        store_records(epoch)
        if not active:
            break
    retire(list(range(len(active))), epoch, lambda pos: "max_epochs")

    out = [retired[j] for j in range(m_all)]
    # Models that stopped before a record epoch keep their state from then on.
    for recs in records.values():
        for j in range(m_all):
            if recs[j] is None:
                recs[j] = out[j].record
    return out, history, records


def train_ensemble(
    x_train: torch.Tensor,
    y_train: torch.Tensor,
    x_test: torch.Tensor | None = None,
    y_test: torch.Tensor | None = None,
    *,
    seeds: Sequence[int],
    alpha: float | Sequence[float] | None = None,
    dropout: float | Sequence[float] | None = None,
    lr: float | Sequence[float] | None = None,
    label_noise: float | Sequence[float] = 0.0,
    batch_size: int | None | Sequence[int | None] = None,
    config: TrainConfig | None = None,
    model: EnsembleMLP | None = None,
    depth: int = 7,
    width: int = 100,
    batchnorm: bool = True,
    bias: bool = True,
    record_fn: Callable[[list[torch.Tensor]], Any] | None = None,
) -> TrainResult:
    """Train M models, one per entry of ``seeds``, and return per-model results.

    Data: ``x_train`` ``(N, d)`` float, ``y_train`` ``(N,)`` int class labels in
    [0, C); the test set likewise (optional). C = ``y_train.max() + 1`` unless
    ``model`` is given.

    Per-model knobs (scalar or length-M sequence): ``seeds`` (initialisation as
    :meth:`EnsembleMLP.init` and all of the model's random streams), ``alpha``
    (LeakyReLU slope, default 0), ``dropout`` (default 0), ``lr`` (default
    ``config.lr``), ``label_noise`` (q, see :class:`TrainConfig`), ``batch_size``
    (``None`` = ``config.batch_size``, whose ``None`` = full batch).

    ``model``: start from these weights instead (e.g. :meth:`EnsembleMLP.from_models`);
    its alpha/dropout are used unless ``alpha``/``dropout`` are given.

    Batch size: models with different batch sizes take different numbers of
    steps on differently shaped batches, so they cannot share a stack step by
    step; they are trained in separate groups (one per batch size) — within a
    group everything is shared, and at small batch sizes (where batching pays)
    groups are large anyway. Within a group models are sorted by (lr, alpha,
    dropout) — runs of equal lr share one optimizer call and stacks of equal
    alpha use the native activation — and trained ``config.models_per_batch`` at
    a time. Results come back in the original order. Note that at fixed epochs the
    batch size also sets the number of optimizer steps (``steps_run``).

    ``record_fn``: with ``config.record_every = k``, eval-mode features of every
    model are taken at epochs 0, k, 2k, ... ≤ ``config.epochs`` (a model that
    stopped keeps its final state) and stored in ``snapshots`` as
    ``(epoch, record_fn(features))``; ``record_fn`` maps ``[h_0..h_L]`` (each
    ``(m, N, F)``) to a tensor (or list of tensors) with the m models first, e.g.
    load curves; without it the features themselves are kept (memory!).
    """
    cfg = config or TrainConfig()
    device = resolve_device(cfg.device)
    dtype = cfg.dtype
    seeds = [int(s) for s in seeds]
    m_all = len(seeds)
    if m_all < 1 or min(seeds) < 0:
        raise ValueError(f"seeds must be one non-negative integer per model, got {seeds}")
    x = torch.as_tensor(x_train).to(device, dtype)
    y = torch.as_tensor(y_train).to(device, torch.long)
    n, d = x.shape
    if y.shape != (n,):
        raise ValueError(f"y_train must have shape ({n},), got {tuple(y.shape)}")

    if model is None:
        n_classes = int(y.max()) + 1
        alphas = _per_model(0.0 if alpha is None else alpha, m_all, "alpha")
        drops = _per_model(0.0 if dropout is None else dropout, m_all, "dropout")
        model = EnsembleMLP.init(m_all, d, n_classes, seeds=seeds, depth=depth, width=width,
                                 alpha=alphas, dropout=drops, batchnorm=batchnorm, bias=bias,
                                 dtype=dtype)
    else:
        if model.n_models != m_all or model.in_features != d:
            raise ValueError("model must have one model per seed and in_features = d")
        alphas = list(model.alphas) if alpha is None else _per_model(alpha, m_all, "alpha")
        drops = list(model.dropouts) if dropout is None else _per_model(dropout, m_all, "dropout")
        model = _with_hyper(model, alphas, drops).to("cpu", dtype)  # a copy
    n_classes = model.n_classes
    if int(y.max()) >= n_classes or int(y.min()) < 0:
        raise ValueError(f"labels must lie in [0, {n_classes})")
    lrs = _per_model(cfg.lr if lr is None else lr, m_all, "lr")
    if not all(v > 0 for v in lrs):
        raise ValueError(f"lr must be > 0, got {lrs}")
    qs = _per_model(label_noise, m_all, "label_noise")
    if not all(v >= 0 for v in qs):
        raise ValueError(f"label_noise must be >= 0, got {qs}")
    if batch_size is None or isinstance(batch_size, int):
        batch_size = [batch_size] * m_all
    bs = [int(cfg.batch_size or n) if v is None else int(v) for v in batch_size]
    if len(bs) != m_all or not all(1 <= v <= n for v in bs):
        raise ValueError(f"batch_size must be one value per model in [1, N={n}], got {bs}")

    x_std = x.std(0, correction=0)  # (d,) per-feature std of the clean training set
    record_epochs = (list(range(0, cfg.epochs + 1, cfg.record_every))
                     if cfg.record_every else [])
    xt = yt = None
    if x_test is not None and y_test is not None:
        xt = torch.as_tensor(x_test).to(device, dtype)
        yt = torch.as_tensor(y_test).to(device, torch.long)

    retired: list[_Retired | None] = [None] * m_all
    history = np.full((m_all, cfg.epochs), np.nan)
    records: dict[int, list[Any]] = {e: [None] * m_all for e in record_epochs}
    metrics = {k: np.full(m_all, np.nan) for k in ("train_loss", "train_accuracy", "test_accuracy")}
    for b in sorted(set(bs)):
        group = [j for j in range(m_all) if bs[j] == b]
        group.sort(key=lambda j: (lrs[j], alphas[j], drops[j], j))
        widest = max(model.width, d)
        per = cfg.models_per_batch or default_models_per_batch(b, widest, len(group), device)
        # Evaluation runs on the full training set: its own (smaller) stacks.
        eval_chunk = min(64, default_models_per_batch(n, widest, len(group), device))
        for a in range(0, len(group), per):
            ids = group[a : a + per]
            stack = model.select(ids).to(device)
            outs, hist, recs = _train_stack(
                stack, [lrs[j] for j in ids], [qs[j] for j in ids], [seeds[j] for j in ids],
                b, x, y, x_std, cfg, record_fn, record_epochs, eval_chunk,
            )
            final = EnsembleMLP.cat([o.model for o in outs])
            ev = final.evaluate(x, y, models_per_batch=eval_chunk)
            evt = final.evaluate(xt, yt, models_per_batch=eval_chunk) if xt is not None else None
            for k, j in enumerate(ids):
                retired[j] = outs[k]
                history[j] = hist[k]
                for e in record_epochs:
                    records[e][j] = recs[e][k]
                if outs[k].reason != "diverged":
                    metrics["train_loss"][j] = float(ev["loss"][k])
                    metrics["train_accuracy"][j] = float(ev["accuracy"][k])
                    if evt is not None:
                        metrics["test_accuracy"][j] = float(evt["accuracy"][k])

    final = EnsembleMLP.cat([r.model.to("cpu") for r in retired])
    snapshots = [(e, _cat_records(records[e])) for e in record_epochs]
    return TrainResult(
        model=final,
        train_loss=torch.from_numpy(metrics["train_loss"]),
        train_accuracy=torch.from_numpy(metrics["train_accuracy"]),
        test_accuracy=torch.from_numpy(metrics["test_accuracy"]),
        epochs_run=torch.tensor([r.epochs for r in retired], dtype=torch.long),
        steps_run=torch.tensor([r.steps for r in retired], dtype=torch.long),
        diverged=torch.tensor([r.reason == "diverged" for r in retired]),
        stop_reason=[r.reason for r in retired],
        loss_history=torch.from_numpy(history),
        batch_size=torch.tensor(bs, dtype=torch.long),
        snapshots=snapshots,
        x_train=x.cpu(),
        device=device,
    )


def _to_cpu(rec: Any) -> Any:
    if isinstance(rec, list | tuple):
        return [r.cpu() for r in rec]
    return rec.cpu()


def _with_hyper(model: EnsembleMLP, alphas: list[float], drops: list[float]) -> EnsembleMLP:
    """Copy of ``model`` with other per-model alpha / dropout."""
    new = model._like(model.n_models, alphas, drops)
    new.load_state_dict(model.state_dict())
    return new
