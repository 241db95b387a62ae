"""The paper's CNN (supplement Fig. S2): a reference single network and M of them stacked.

::

    x ─ [BatchNorm2d] ─┬─ [Conv2d(k) ─ BatchNorm2d ─ LeakyReLU(α) ─ MaxPool2d(2)
                       h_0
           ─ Upsample(×2, nearest) ─┬─ Dropout(p)] × L ─ flatten ─ Linear ─ logits
                                    h_ℓ

Images are stored as flat rows, ``(N, d)`` with d = C_in·H·W, channels first (the data
sets' layout). Every conv has ``channels`` outputs and padding k // 2; pooling then
upsampling keeps every hidden layer ``channels × H × W`` (so H and W must be even) while
each 2 × 2 block carries one value.

Features (the input of the separation measures), as :class:`dnnphase.networks.mlp.MLP`: ``h_0``
is the input after the input BatchNorm (the raw input with ``norm="none"``), ``h_ℓ`` the
output of the ℓ-th upsampling, taken **before** dropout. All are returned flattened:
``h_0`` ``(N, d)``, ``h_ℓ`` ``(N, width)`` with width = channels·H·W, in (c, y, x) order.

:class:`CNN` is the definition (a plain ``nn.Module``, PyTorch's default initialisation);
:class:`EnsembleCNN` holds M of them in stacked tensors, evaluated with grouped
convolutions, and offers what the trainer (:mod:`dnnphase.training.loop`,
:mod:`dnnphase.training.train`)
uses of :class:`~dnnphase.networks.stack.EnsembleMLP`, with the same meaning.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import torch
from torch import nn
from torch.nn import functional as F

from dnnphase.defaults import CHANNELS, DEPTH, KERNEL_SIZE, NORM
from dnnphase.knobs import check
from dnnphase.networks.spec import BN_EPS, BN_MOMENTUM
from phasecore.checks import is_int, require

from .per_model import LeakyReLUPerModel, default_linear_, draw_seeded_, per_model
from .stack import StackedModels

__all__ = ["CNN", "NORMS", "PER_MODEL_CPU", "EnsembleCNN", "check_architecture"]

#: The normalisations a CNN can use: BatchNorm2d on the input and after every conv, or none.
NORMS = ("batchnorm", "none")
#: On a CPU each model of a stack runs its layers as the calls it makes alone (its numbers
#: then do not depend on its stack-mates, bit for bit); False: one grouped call per layer
#: for the whole stack, as on a GPU (the same numbers to rounding).
PER_MODEL_CPU = True


def check_architecture(image_shape: Sequence[int], n_classes: int, depth: int, channels: int,
                       kernel_size: int, norm: str) -> tuple[int, int, int]:
    """ConfigError naming the first architecture parameter outside its range; returns
    ``image_shape`` as a tuple of three ints ``(C_in, H, W)``."""
    shape = tuple(image_shape) if isinstance(image_shape, Sequence) else None
    require(shape is not None and len(shape) == 3 and all(is_int(v) and v >= 1 for v in shape),
            "image_shape", "three integers (C_in, H, W) >= 1", image_shape)
    require(shape[1] % 2 == 0 and shape[2] % 2 == 0, "image_shape",
            "(C_in, H, W) with even H and W (MaxPool2d(2) then Upsample(x2) must give H x W "
            "back)", image_shape)
    require(is_int(n_classes) and n_classes >= 1, "n_classes", "an integer >= 1", n_classes)
    require(is_int(depth) and depth >= 1, "depth", "an integer >= 1", depth)
    require(is_int(channels) and channels >= 1, "channels", "an integer >= 1", channels)
    require(is_int(kernel_size) and kernel_size >= 1 and kernel_size % 2 == 1, "kernel_size",
            "an odd integer >= 1", kernel_size)
    require(norm in NORMS, "norm", f"one of {', '.join(NORMS)}", norm)
    return int(shape[0]), int(shape[1]), int(shape[2])


def _check_input(x: torch.Tensor, lead: tuple[int, ...], d: int, image: tuple[int, ...] = (),
                 ) -> None:
    """ConfigError unless ``x`` is ``(N, *lead, d)`` (or ``(N, *image)`` when given)."""
    shape = tuple(x.shape)
    ok = shape[1:] == (*lead, d) or (bool(image) and shape[1:] == image)
    want = ", ".join(map(str, (*lead, d)))
    alt = f" or (N, {', '.join(map(str, image))})" if image else ""
    require(ok, "x", f"a batch of shape (N, {want}){alt}", shape)


class CNN(nn.Module):
    """The paper's CNN with ``depth`` conv layers of ``channels`` channels (Fig. S2).

    Parameters
    ----------
    image_shape:
        ``(C_in, H, W)`` of the input images (H, W even); inputs are ``(N, C_in·H·W)`` rows
        or ``(N, C_in, H, W)`` images.
    n_classes:
        Number C of classes.
    depth:
        Number L >= 1 of hidden layers (Conv2d → BatchNorm2d → LeakyReLU → MaxPool2d(2)
        → Upsample(×2) → Dropout).
    channels:
        Output channels of every conv; a hidden layer has width = channels·H·W units.
    alpha, dropout:
        LeakyReLU negative slope α ∈ [0, 1] and (elementwise) dropout probability
        p ∈ [0, 1): :mod:`dnnphase.knobs`' ranges (a bad value is its ConfigError).
    norm:
        ``"batchnorm"`` (BatchNorm2d on the input and after every conv) or ``"none"``
        (:data:`NORMS`).
    bias:
        Biases of the convs and of the output Linear (default on, as torch).
    kernel_size:
        Odd conv kernel size k (padding k // 2 keeps H × W).
    bn_eps, bn_momentum:
        BatchNorm2d's ``eps`` and ``momentum`` (PyTorch defaults).

    Construction order (for seeding): the conv layers first to last, then the output
    Linear; BatchNorm layers draw no random numbers. So a CNN built right after
    ``torch.manual_seed(s)`` is a deterministic function of s.
    """

    def __init__(
        self,
        image_shape: Sequence[int],
        n_classes: int,
        depth: int = DEPTH,
        channels: int = CHANNELS,
        alpha: float = 0.0,
        dropout: float = 0.0,
        norm: str = NORM,
        bias: bool = True,
        kernel_size: int = KERNEL_SIZE,
        bn_eps: float = BN_EPS,
        bn_momentum: float = BN_MOMENTUM,
    ) -> None:
        super().__init__()
        self.image_shape = check_architecture(image_shape, n_classes, depth, channels,
                                              kernel_size, norm)
        check("alpha", alpha)
        check("dropout", dropout)
        c_in, hh, ww = self.image_shape
        self.in_features = c_in * hh * ww
        self.n_classes, self.depth, self.channels = n_classes, depth, channels
        self.width = channels * hh * ww
        self.alpha, self.dropout = float(alpha), float(dropout)
        self.norm, self.bias, self.kernel_size = norm, bias, kernel_size

        def bn(c: int) -> nn.Module:
            if norm == "none":
                return nn.Identity()
            return nn.BatchNorm2d(c, eps=bn_eps, momentum=bn_momentum)

        self.input_bn = bn(c_in)
        ins = [c_in] + [channels] * (depth - 1)
        self.convs = nn.ModuleList(
            nn.Conv2d(ins[i], channels, kernel_size, padding=kernel_size // 2, bias=bias)
            for i in range(depth)
        )
        self.norms = nn.ModuleList(bn(channels) for _ in range(depth))
        self.act = nn.LeakyReLU(self.alpha)
        self.pool = nn.MaxPool2d(2)
        self.up = nn.Upsample(scale_factor=2, mode="nearest")
        self.drop = nn.Dropout(self.dropout)
        self.out = nn.Linear(self.width, n_classes, bias=bias)

    def forward(
        self, x: torch.Tensor, return_features: bool = False
    ) -> torch.Tensor | tuple[torch.Tensor, list[torch.Tensor]]:
        """Logits ``(N, C)`` for ``x`` ``(N, d)`` or ``(N, C_in, H, W)``.

        With ``return_features=True`` also ``[h_0, ..., h_L]``, flattened: ``h_0``
        ``(N, d)``, ``h_ℓ`` ``(N, width)`` (after the upsampling, before dropout).
        """
        _check_input(x, (), self.in_features, self.image_shape)
        n = x.shape[0]
        h = self.input_bn(x.reshape(n, *self.image_shape))  # (N, C_in, H, W)
        feats = [h.reshape(n, -1)]
        for conv, bn in zip(self.convs, self.norms, strict=True):
            h = self.up(self.pool(self.act(bn(conv(h)))))  # (N, channels, H, W)
            feats.append(h.reshape(n, -1))
            h = self.drop(h)
        logits = self.out(h.reshape(n, -1))  # (N, C)
        return (logits, feats) if return_features else logits

    def extra_repr(self) -> str:
        return (f"image_shape={self.image_shape}, depth={self.depth}, channels={self.channels}, "
                f"alpha={self.alpha}, dropout={self.dropout}, norm={self.norm!r}, "
                f"bias={self.bias}")


class EnsembleCNN(StackedModels):
    """M independent :class:`CNN` s in stacked tensors, evaluated with grouped convolutions.

    Parameters (model dimension first, so ``p[a:b]`` is models a..b−1, as the trainer's
    per-model optimizer slices them):

    * ``weights[i]``, i < L: conv weights ``(M, channels, C_i, k, k)`` (C_0 = C_in, else
      ``channels``), used as ``(M·channels, C_i, k, k)`` with ``groups=M``;
      ``weights[L]``: the output map ``(M, width, C)`` (``nn.Linear.weight`` transposed)
    * ``biases[i]``: ``(M, channels)`` for the convs, ``(M, 1, C)`` for the output map
      (empty list when ``bias=False``)
    * ``bn_weights[i]``, ``bn_biases[i]``: ``(M, C_in)`` for the input BatchNorm (i = 0),
      ``(M, channels)`` for the L hidden ones; buffers ``running_mean_i``,
      ``running_var_i`` of the same shapes (none of these with ``norm="none"``)

    Activations are ``(B, M·channels, H, W)`` tensors, model m's channel c being channel
    m·channels + c of one native conv / BatchNorm / pooling call, held channels-last
    (``(B, H, W, M·channels)`` in memory); features and dropout multipliers are
    ``(B, M, width)``, each model's units in (c, y, x) order. ``alpha`` and ``dropout`` are
    per-model constants
    (one number, or one per model) in the ranges of :mod:`dnnphase.knobs`. A freshly
    constructed ensemble holds zeros; :meth:`init` gives PyTorch's default
    initialisation, :meth:`from_models` stacks given networks.

    ``forward`` takes ``x`` ``(B, d)`` (shared by all models) or ``(B, M, d)`` and returns
    logits ``(M, B, C)``.
    """

    def __init__(
        self,
        n_models: int,
        image_shape: Sequence[int],
        n_classes: int,
        depth: int = DEPTH,
        channels: int = CHANNELS,
        alpha: float | Sequence[float] = 0.0,
        dropout: float | Sequence[float] = 0.0,
        norm: str = NORM,
        bias: bool = True,
        kernel_size: int = KERNEL_SIZE,
        bn_eps: float = BN_EPS,
        bn_momentum: float = BN_MOMENTUM,
        dtype: torch.dtype | None = None,
        device: torch.device | str | None = None,
    ) -> None:
        super().__init__()
        require(is_int(n_models) and n_models >= 1, "n_models", "an integer >= 1", n_models)
        self.image_shape = check_architecture(image_shape, n_classes, depth, channels,
                                              kernel_size, norm)
        m = int(n_models)
        alphas = per_model(alpha, m, "alpha")
        drops = per_model(dropout, m, "dropout")
        check("alpha", alphas)
        check("dropout", drops)
        c_in, hh, ww = self.image_shape
        self._init_knobs_(alphas, drops, bn_eps, bn_momentum)
        self.in_features, self.n_classes = c_in * hh * ww, n_classes
        self.depth, self.channels, self.kernel_size = depth, channels, kernel_size
        self.width = channels * hh * ww
        self.widths = (self.width,) * depth  # every layer's units (as the MLP stack's)
        self.norm, self.bias = norm, bias
        self._batchnorm = norm == "batchnorm"

        fk = {"dtype": dtype, "device": device}
        k = kernel_size
        ins = [c_in] + [channels] * (depth - 1)
        self.weights = nn.ParameterList(
            [nn.Parameter(torch.zeros(m, channels, ins[i], k, k, **fk)) for i in range(depth)]
            + [nn.Parameter(torch.zeros(m, self.width, n_classes, **fk))]
        )
        self.biases = nn.ParameterList(
            [nn.Parameter(torch.zeros(m, channels, **fk)) for _ in range(depth)]
            + [nn.Parameter(torch.zeros(m, 1, n_classes, **fk))] if bias else []
        )
        self._init_norms_([c_in] + [channels] * depth if self._batchnorm else [], fk)
        self._init_constants_(fk)

    # ------------------------------------------------------------ construction

    @classmethod
    def init(
        cls,
        n_models: int,
        image_shape: Sequence[int],
        n_classes: int,
        *,
        seeds: Sequence[int],
        depth: int = DEPTH,
        channels: int = CHANNELS,
        alpha: float | Sequence[float] = 0.0,
        dropout: float | Sequence[float] = 0.0,
        norm: str = NORM,
        bias: bool = True,
        kernel_size: int = KERNEL_SIZE,
        dtype: torch.dtype | None = None,
        device: torch.device | str | None = None,
    ) -> EnsembleCNN:
        """PyTorch's default initialisation: model m has the weights of a :class:`CNN`
        built right after ``torch.manual_seed(seeds[m])``, drawn from one
        ``torch.Generator`` per model directly into the stacked tensors (no per-model
        module; the global generator is not touched)."""
        seeds = [int(s) for s in seeds]
        require(len(seeds) == n_models, "seeds", f"one per model ({n_models})", seeds)
        ens = cls(n_models, image_shape, n_classes, depth=depth, channels=channels, alpha=alpha,
                  dropout=dropout, norm=norm, bias=bias, kernel_size=kernel_size,
                  dtype=dtype or torch.get_default_dtype(), device=device)
        # Drawn in the default dtype (as the CNN's modules are built), model by model in the
        # CNN's order: each conv's weight then bias, then the output Linear's. Conv2d's
        # reset_parameters is nn.Linear's rule with fan_in = C_i·k·k, i.e. the rule on the
        # (out, C_i·k·k) view of the contiguous weight (uniform_ fills it in memory order).
        dt = torch.get_default_dtype()
        ws = [torch.empty(n_models, *w.shape[1:], dtype=dt) for w in ens.weights[:depth]]
        ws.append(torch.empty(n_models, n_classes, ens.width, dtype=dt))  # (M, C, width)
        bs = [torch.empty(n_models, channels, dtype=dt) for _ in range(depth)]
        bs.append(torch.empty(n_models, n_classes, dtype=dt))
        draw_seeded_(ws, bs, seeds, lambda w, b, g: default_linear_(w.view(w.shape[0], -1), b, g),
                     bias)
        with torch.no_grad():
            for i in range(depth):
                ens.weights[i].copy_(ws[i])
                if bias:
                    ens.biases[i].copy_(bs[i])
            ens.weights[depth].copy_(ws[depth].transpose(1, 2))  # (M, width, C)
            if bias:
                ens.biases[depth].copy_(bs[depth][:, None, :])
        return ens

    # from_models / to_models (StackedModels) with single CNNs:
    _SINGLE = CNN
    _ARCHITECTURE = ("image_shape", "n_classes", "depth", "channels", "norm", "bias",
                     "kernel_size")

    @staticmethod
    def _tensor_of(mdl: CNN, name: str) -> torch.Tensor:
        return _cnn_tensor(mdl, name)

    # ------------------------------------------------------------ forward

    def _groups(self, device: torch.device) -> list[_Group]:
        """The stack cut into the groups of models whose layers run as one call each: on a
        CPU every model alone, on a GPU the whole stack (one grouped conv per layer)."""
        m, sizes = self.n_models, [self.n_models]
        if device.type == "cpu" and PER_MODEL_CPU and m > 1:
            sizes = [1] * m
        bn = range(self.depth + 1) if self._batchnorm else range(0)
        stacked = {"weights": self.weights[:self.depth], "biases": self.biases[:self.depth],
                   "bn_weights": self.bn_weights, "bn_biases": self.bn_biases,
                   "running_means": [self.running_mean(i) for i in bn],
                   "running_vars": [self.running_var(i) for i in bn]}
        # views along the model dimension (one backward node per parameter)
        parts = {name: [t.split(sizes) for t in ts] for name, ts in stacked.items()}
        alphas = self.alpha.split(sizes)
        groups, start = [], 0
        for g, size in enumerate(sizes):
            groups.append(_Group(start, size, self.alphas[start:start + size], alphas[g],
                                 **{name: [t[g] for t in part] for name, part in parts.items()}))
            start += size
        return groups

    def _bn(self, h: torch.Tensor, i: int, g: _Group) -> torch.Tensor:
        """BatchNorm of group ``g``'s models: ``h`` ``(B, m·c, H, W)``, channel k·c + j is the
        group's model k's channel j."""
        shift = g.bn_biases[i].reshape(-1)
        if i == 0 and self.kernel_size == 1:
            # A 1×1 conv maps the input BatchNorm's per-channel shift to a per-channel
            # constant, which the next BatchNorm removes: a gauge parameter (exactly zero
            # gradient). With k > 1 the zero padding breaks this (border pixels see less
            # of the shift), so there it is a real parameter and keeps its gradient.
            shift = shift.detach()
        # The native kernel: per-channel batch mean over (B, H, W), biased batch variance,
        # running statistics with momentum and unbiased variance, as nn.BatchNorm2d.
        return F.batch_norm(
            h, g.running_means[i].view(-1), g.running_vars[i].view(-1),
            g.bn_weights[i].reshape(-1), shift, self.training, self.bn_momentum, self.bn_eps,
        )

    def _act(self, u: torch.Tensor, g: _Group) -> torch.Tensor:
        """LeakyReLU with per-model slope on ``u`` ``(B, m·c, h, w)`` (any memory format) of
        group ``g``; bitwise ``F.leaky_relu``."""
        if len(set(g.alphas)) == 1:
            return F.leaky_relu(u, g.alphas[0])
        a = g.alpha.repeat_interleave(self.channels).view(1, -1, 1, 1)  # per channel
        return LeakyReLUPerModel.apply(u, a)

    def _hidden(self, h: torch.Tensor, i: int, g: _Group) -> torch.Tensor:
        """Hidden layer i of group ``g``: ``h`` ``(B, m·C_i, H, W)`` → ``(B, m·channels, H,
        W)``, both channels-last."""
        m, c = g.size, self.channels
        w = g.weights[i]
        bias = None
        if self.bias:
            bias = g.biases[i].reshape(-1)
            if self._batchnorm:
                # A per-channel constant before BatchNorm is removed by its mean
                # subtraction: a gauge parameter (exactly zero gradient), so no autograd
                # rounding noise reaches it (Adam would turn that noise into steps).
                bias = bias.detach()
        u = F.conv2d(h, w.reshape(m * c, *w.shape[2:]), bias, padding=self.kernel_size // 2,
                     groups=m)
        if self._batchnorm:
            u = self._bn(u, i + 1, g)
        # Pooling before the activation: LeakyReLU with α >= 0 is monotone (so is its
        # rounding), so max-pool(act(u)) == act(max-pool(u)) bitwise, and the gradient
        # reaches the same element (where max-pool's choice could differ, all candidates
        # are <= 0 at α = 0 and the gradient is 0). The activation then runs on a quarter.
        return F.interpolate(self._act(F.max_pool2d(u, 2), g), scale_factor=2, mode="nearest")

    def forward(
        self,
        x: torch.Tensor,
        return_features: bool = False,
        dropout: Callable[[int], torch.Tensor] | None = None,
    ) -> torch.Tensor | tuple[torch.Tensor, list[torch.Tensor]]:
        """Logits ``(M, B, C)``; with ``return_features`` also ``[h_0..h_L]``, each ``(B, M, F)``.

        ``x``: ``(B, d)`` shared by all models or ``(B, M, d)`` (rows of C_in·H·W,
        channels first). Features follow :class:`CNN`: ``h_0`` ``(B, M, d)`` after the
        input BatchNorm, ``h_ℓ`` ``(B, M, width)`` after the upsampling and before dropout.
        ``dropout(ℓ)`` gives hidden layer ℓ's ``(B, M, width)`` multipliers in training mode
        (:class:`dnnphase.networks.randomness.DropoutMasks`); without it, masks come from torch's
        global generator.

        On a CPU each model's layers are the calls it makes alone (``PER_MODEL_CPU``): the
        grouped conv and the native BatchNorm round a model's numbers by its position in
        the stack (and a stack of one takes other kernels), so only a model's own calls
        make its result independent of its stack-mates, bit for bit. On a GPU every layer
        is one call for the whole stack.
        """
        m, d, (c_in, hh, ww) = self.n_models, self.in_features, self.image_shape
        c, w = self.channels, self.width
        if x.dim() == 2:
            _check_input(x, (), d)
            x = x.unsqueeze(1).expand(-1, m, -1)
        _check_input(x, (m,), d)
        b = x.shape[0]
        groups = self._groups(x.device)
        # Each group's input as the group alone has it: (B, m·C_in, H, W), contiguous.
        hs = [x[:, g.start:g.start + g.size].reshape(b, g.size * c_in, hh, ww).contiguous()
              for g in groups]
        if self._batchnorm:
            hs = [self._bn(h, 0, g) for h, g in zip(hs, groups, strict=True)]
        feats = [_joined([h.reshape(b, g.size, d) for h, g in zip(hs, groups, strict=True)])] \
            if return_features else None
        drop = self.training and self.has_dropout
        if drop and dropout is None:
            dropout = self._global_masks(b, x.device)
        # The hidden layers run channels-last (B, H, W, m·c in memory): on the CPU the
        # conv, the max-pool and the upsampling are 1.5-8x faster than (B, m·c, H, W).
        # Features and the output map read (B, M, width) in (c, y, x) order: one copy.
        # clone, not contiguous: with m·C_in = 1 an NCHW tensor already counts as
        # channels-last contiguous, and the conv would keep NCHW for every layer.
        hs = [h.clone(memory_format=torch.channels_last) for h in hs]
        flat = None
        for i in range(self.depth):
            hs = [self._hidden(h, i, g) for h, g in zip(hs, groups, strict=True)]
            last = i == self.depth - 1
            if feats is not None or (last and not drop):
                flat = _joined([h.contiguous().view(b, g.size, w)
                                for h, g in zip(hs, groups, strict=True)])
                if feats is not None:
                    feats.append(flat)
            if drop:
                mask = dropout(i).reshape(b, m, c, hh, ww)
                hs = [(h.view(b, g.size, c, hh, ww) * mask[:, g.start:g.start + g.size])
                      .reshape(b, g.size * c, hh, ww) for h, g in zip(hs, groups, strict=True)]
        if drop:
            flat = _joined([h.contiguous().view(b, g.size, w)
                            for h, g in zip(hs, groups, strict=True)])
        h_t = flat.transpose(0, 1)  # (M, B, width); BLAS reads the view
        out_w = self.weights[self.depth]
        logits = torch.baddbmm(self.biases[self.depth], h_t, out_w) if self.bias \
            else torch.bmm(h_t, out_w)  # (M, B, C)
        return (logits, feats) if return_features else logits

    def extra_repr(self) -> str:
        return (f"n_models={self.n_models}, image_shape={self.image_shape}, depth={self.depth}, "
                f"channels={self.channels}, norm={self.norm!r}, bias={self.bias}")


def _cnn_tensor(mdl: CNN, name: str) -> torch.Tensor:
    """The tensor of one :class:`CNN` stored in the stacked state entry ``name`` (the
    output weight transposed to ``(width, C)``, its bias as ``(1, C)``)."""
    kind, i = name.rsplit(".", 1) if "." in name else name.rsplit("_", 1)
    i = int(i)
    if kind in ("weights", "biases"):
        if i < mdl.depth:
            conv = mdl.convs[i]
            return (conv.weight if kind == "weights" else conv.bias).detach()
        return mdl.out.weight.detach().T if kind == "weights" else mdl.out.bias.detach()[None]
    bn = ([mdl.input_bn] + list(mdl.norms))[i]
    return {"bn_weights": bn.weight, "bn_biases": bn.bias, "running_mean": bn.running_mean,
            "running_var": bn.running_var}[kind].detach()


@dataclass
class _Group:
    """Models ``start`` … ``start + size − 1`` of an :class:`EnsembleCNN` whose layers run as
    one call each, with views of their parameters and running statistics (model dimension
    first, as the stack's): conv ``weights`` and ``biases`` of the L hidden layers (no
    biases: empty), and the L + 1 BatchNorms' (none: empty)."""

    start: int
    size: int
    alphas: tuple[float, ...]
    alpha: torch.Tensor  # (size,)
    weights: list[torch.Tensor]
    biases: list[torch.Tensor]
    bn_weights: list[torch.Tensor]
    bn_biases: list[torch.Tensor]
    running_means: list[torch.Tensor]
    running_vars: list[torch.Tensor]


def _joined(parts: list[torch.Tensor]) -> torch.Tensor:
    """The groups' ``(B, m, F)`` parts side by side along the model dimension."""
    return parts[0] if len(parts) == 1 else torch.cat(parts, 1)
