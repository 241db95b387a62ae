"""A stack of M independent networks held in stacked tensors (paper Eq. 1).

:class:`EnsembleMLP` is M copies of :class:`dnnphase.networks.mlp.MLP` with their own
parameters, LeakyReLU slope α and dropout p, evaluated together: Linear weights
``(M, in, out)``, activations sample-major ``(B, M, F)``. Every per-model
computation gives the same result whatever other models share the stack.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import torch
from torch import nn
from torch.nn import functional as F

from dnnphase.defaults import DEPTH, NORM, WIDTH
from dnnphase.knobs import RANGES
from dnnphase.networks.mlp import (
    MLP,
    activation_scale,
    check_norm,
    check_weight_init,
    hidden_widths,
    orthogonal_linear_,
)
from phasecore.checks import ConfigError, require

from .per_model import (
    AddBiasPerModel,
    LeakyReLUPerModel,
    default_linear_,
    draw_seeded_,
    per_model,
    row_mean,
)
from .randomness import LEVELS, DropoutMasks, dropout_levels
from .spec import BN_EPS, BN_MOMENTUM, ModelSpec

__all__ = ["EnsembleMLP", "StackedModels"]

#: Hidden layers in training mode on a CPU through the fused BatchNorm + LeakyReLU +
#: dropout kernel (:mod:`dnnphase.networks.fused_layer`); False: PyTorch's operations one by one
#: (the GPU's path; the same numbers to rounding).
FUSED_CPU_LAYERS = True


class StackedModels(nn.Module):
    """What every stack of M models shares (:class:`EnsembleMLP`,
    :class:`dnnphase.networks.cnn.EnsembleCNN`): parameters and buffers with the model dimension
    first, per-model ``alphas`` and ``dropouts``, and ``_like(n_models, alphas, drops)``
    building an empty stack of the same architecture. On these rest selecting,
    concatenating and re-knobbing models, dropout from the global generator, and
    evaluation."""

    n_models: int
    width: int
    alphas: tuple[float, ...]
    dropouts: tuple[float, ...]

    # Construction, in this order: _init_knobs_ (before the parameters), then the
    # weights and biases, _init_norms_, and _init_constants_.
    def _init_knobs_(self, alphas: list[float], drops: list[float], bn_eps: float,
                     bn_momentum: float) -> None:
        """The per-model knobs (checked already) and the BatchNorm's eps and momentum."""
        self.n_models = len(alphas)
        self.bn_eps, self.bn_momentum = bn_eps, bn_momentum
        self.alphas, self.dropouts = tuple(alphas), tuple(drops)
        # Uniform slope → native leaky_relu; mixed slopes → LeakyReLUPerModel (bitwise equal).
        self._alpha_uniform = alphas[0] if len(set(alphas)) == 1 else None

    def _init_norms_(self, bn_dims: Sequence[int], fk: dict) -> None:
        """Per-model BatchNorm weights, biases and running statistics ``(M, F)`` for each
        normalised width F of ``bn_dims`` (none: no BatchNorm)."""
        m = self.n_models
        self.bn_weights = nn.ParameterList(nn.Parameter(torch.ones(m, f, **fk)) for f in bn_dims)
        self.bn_biases = nn.ParameterList(nn.Parameter(torch.zeros(m, f, **fk)) for f in bn_dims)
        for i, f in enumerate(bn_dims):
            self.register_buffer(f"running_mean_{i}", torch.zeros(m, f, **fk))
            self.register_buffer(f"running_var_{i}", torch.ones(m, f, **fk))

    def _init_constants_(self, fk: dict, act_scale: Sequence[float] | None = None) -> None:
        """The per-model constants on the device (not part of the state dict): α, the
        MLP's ``act_scale`` if given, and dropout's dropped 16-bit level and its scale."""
        levels = dropout_levels(self.dropouts)
        self.has_dropout = any(v > 0 for v in levels)
        self.register_buffer("alpha", torch.tensor(self.alphas, **fk), persistent=False)
        if act_scale is not None:
            self.register_buffer("act_scale", torch.tensor(act_scale, **fk), persistent=False)
        self.register_buffer("drop_level", torch.tensor([float(v) for v in levels], **fk),
                             persistent=False)
        self.register_buffer("drop_scale", torch.tensor(
            [LEVELS / (LEVELS - v) for v in levels], **fk), persistent=False)

    @staticmethod
    def _one_architecture(models: Sequence[nn.Module], arch: Callable) -> None:
        """ConfigError unless every single model has the first one's ``arch(model)``
        (one line, naming the fields that differ, not the models' multi-line repr)."""
        first = dict(arch(models[0]))
        for i, mdl in enumerate(models):
            own = dict(arch(mdl))
            if own != first:
                differ = ", ".join(f"{name} {own.get(name)!r} vs {first.get(name)!r}"
                                   for name in first if own.get(name) != first.get(name))
                require(False, "models", "of one architecture (the first model's)",
                        f"model {i}: {differ}")

    def _load_stacked_(self, models: Sequence[nn.Module], tensor_of: Callable) -> None:
        """Fill every parameter and buffer with the single models' ``tensor_of(model,
        name)``, stacked along the model dimension."""
        with torch.no_grad():
            for name, value in self.state_dict().items():
                value.copy_(torch.stack([tensor_of(mdl, name) for mdl in models]))

    # What a stack class says about its single model (the shared code below uses them).
    #: The single model's class.
    _SINGLE: type[nn.Module]
    #: The architecture's fields: attributes of the stack and of its single model, and
    #: keyword arguments of both classes, under the same names.
    _ARCHITECTURE: tuple[str, ...] = ()

    @staticmethod
    def _tensor_of(mdl: nn.Module, name: str) -> torch.Tensor:
        """The single model's tensor stored in the stacked state entry ``name``."""
        raise NotImplementedError

    @classmethod
    def _architecture_of(cls, mdl: nn.Module) -> tuple[tuple[str, Any], ...]:
        """A model's (single or stacked) architecture: models stack only if theirs are equal."""
        return tuple((name, getattr(mdl, name)) for name in cls._ARCHITECTURE)

    @classmethod
    def _spec_of(cls, mdl: nn.Module) -> ModelSpec:
        """A single model's :class:`~dnnphase.networks.spec.ModelSpec`."""
        batchnorm = mdl.norm == "batchnorm"
        bn0 = mdl.input_bn
        return ModelSpec(cls._architecture_of(mdl), bn0.eps if batchnorm else BN_EPS,
                         bn0.momentum if batchnorm else BN_MOMENTUM)

    def spec(self) -> ModelSpec:
        """What every model of this stack shares apart from its knobs."""
        return ModelSpec(self._architecture_of(self), self.bn_eps, self.bn_momentum)

    @classmethod
    def _build(cls, spec: ModelSpec, n_models: int, alphas, drops, dtype: torch.dtype | None,
               device) -> StackedModels:
        """An all-zero stack of ``n_models`` of ``spec`` with these knobs."""
        return cls(n_models, alpha=alphas, dropout=drops, dtype=dtype, device=device,
                   **spec.kwargs())

    def _like(self, n_models: int, alphas, drops) -> StackedModels:
        """An all-zero stack of this architecture, dtype and device."""
        p = self.weights[0]
        return self._build(self.spec(), n_models, alphas, drops, p.dtype, p.device)

    def _single(self, m: int) -> nn.Module:
        """A single model with model ``m``'s architecture and knobs (CPU; its own
        initialisation, drawn from the global generator, is overwritten by the caller)."""
        return self._SINGLE(alpha=self.alphas[m], dropout=self.dropouts[m],
                            **self.spec().kwargs())

    @classmethod
    def from_models(cls, models: Sequence[nn.Module], dtype: torch.dtype | None = None,
                    device: torch.device | str | None = None):
        """Stack the parameters and BatchNorm statistics of single models (of one
        architecture; ConfigError otherwise)."""
        first = models[0]
        cls._one_architecture(models, cls._architecture_of)
        ens = cls._build(cls._spec_of(first), len(models), [mdl.alpha for mdl in models],
                         [mdl.dropout for mdl in models], dtype or first.out.weight.dtype,
                         device)
        ens._load_stacked_(models, cls._tensor_of)
        return ens

    def to_models(self) -> list[nn.Module]:
        """The inverse of :meth:`from_models`: one single model per model (copies, CPU)."""
        out = []
        state = self.state_dict()
        for m in range(self.n_models):
            mdl = self._single(m).to(self.weights[0].dtype)
            with torch.no_grad():
                for name, value in state.items():
                    target = self._tensor_of(mdl, name)
                    target.copy_(value[m].reshape(target.shape))
            out.append(mdl.train(self.training))
        return out

    def select(self, idx: Sequence[int] | torch.Tensor, with_grad: bool = False):
        """A new stack with models ``idx`` (copies); ``with_grad`` also slices ``.grad``."""
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
    def cat(stacks: Sequence[StackedModels]):
        """Concatenate stacks of one architecture along the model dimension."""
        first = stacks[0]
        alphas = [a for e in stacks for a in e.alphas]
        drops = [p for e in stacks for p in e.dropouts]
        new = first._like(len(alphas), alphas, drops)
        states = [e.state_dict() for e in stacks]
        new.load_state_dict({k: torch.cat([s[k] for s in states]) for k in states[0]})
        return new.train(first.training)

    def with_hyper(self, alphas: Sequence[float], drops: Sequence[float]):
        """A copy with other per-model slopes and dropout probabilities."""
        new = self._like(self.n_models, alphas, drops)
        new.load_state_dict(self.state_dict())
        return new.train(self.training)

    def running_mean(self, i: int) -> torch.Tensor:
        return getattr(self, f"running_mean_{i}")

    def running_var(self, i: int) -> torch.Tensor:
        return getattr(self, f"running_var_{i}")

    def _global_masks(self, b: int, device: torch.device) -> Callable[[int], torch.Tensor]:
        """Dropout multipliers from torch's global generator (outside the trainer)."""
        keep = 1.0 - self.drop_level / LEVELS  # (M,)

        def masks(layer: int) -> torch.Tensor:
            u = torch.rand(b, self.n_models, self.widths[layer], device=device,
                           dtype=keep.dtype)
            return (u < keep.view(1, -1, 1)).to(keep.dtype) * self.drop_scale.view(1, -1, 1)

        return masks

    # ------------------------------------------------------------ evaluation

    @torch.no_grad()
    def evaluate(
        self,
        x: torch.Tensor,
        y: torch.Tensor | None = None,
        return_features: bool = False,
        stack_size: int | None = None,
    ) -> dict[str, Any]:
        """Eval-mode pass on shared inputs ``x`` ``(N, d)``, ``stack_size`` models at a time.

        Returns ``loss`` ``(M,)`` and ``accuracy`` ``(M,)`` (when ``y`` is given, ``(N,)``
        or one row per model ``(M, N)``; mean cross-entropy and fraction correct) and
        ``features`` ``[h_0..h_L]``, each ``(M, N, F)`` (when ``return_features``). The
        training flag is restored.
        """
        was_training = self.training
        step = stack_size or self.n_models
        out: dict[str, list] = {"loss": [], "accuracy": [], "features": []}
        try:
            for a in range(0, self.n_models, step):
                part = self if step >= self.n_models else \
                    self.select(range(a, min(a + step, self.n_models)))
                part.eval()
                logits, feats = part(x, return_features=True)  # (m, N, C)
                if y is not None:
                    mm, n, c = logits.shape
                    ya = y if y.dim() == 1 else y[a:a + mm]  # shared, or the models' own
                    target = ya.repeat(mm) if ya.dim() == 1 else ya.reshape(mm * n)
                    loss = F.cross_entropy(logits.reshape(mm * n, c), target,
                                           reduction="none").view(mm, n)
                    out["loss"].append(row_mean(loss))
                    out["accuracy"].append(row_mean((logits.argmax(-1) == ya).to(logits.dtype)))
                if return_features:
                    out["features"].append([f.transpose(0, 1).contiguous() for f in feats])
        finally:
            self.train(was_training)
        res: dict[str, Any] = {}
        if y is not None:
            res["loss"], res["accuracy"] = torch.cat(out["loss"]), torch.cat(out["accuracy"])
        if return_features:
            res["features"] = [torch.cat(layer) for layer in zip(*out["features"], strict=True)]
        return res

    def features(self, x: torch.Tensor, stack_size: int | None = None) -> list[torch.Tensor]:
        """Eval-mode features ``[h_0..h_L]`` on ``x`` ``(N, d)``, each ``(M, N, F)``."""
        return self.evaluate(x, return_features=True, stack_size=stack_size)["features"]


class EnsembleMLP(StackedModels):
    """M independent :class:`~dnnphase.networks.mlp.MLP` s in stacked tensors.

    Parameters (model dimension first, so ``p[a:b]`` is models a..b−1):

    * ``weights[i]``: ``(M, in_i, out_i)`` for the L hidden Linear maps and the output map
      (``nn.Linear.weight`` transposed)
    * ``biases[i]``: ``(M, 1, out_i)`` (empty list when ``bias=False``)
    * ``bn_weights[i]``, ``bn_biases[i]``: ``(M, F_i)`` for the input BatchNorm (i = 0)
      and the L hidden ones; buffers ``running_mean_i``, ``running_var_i``: ``(M, F_i)``
      (all four only with ``norm="batchnorm"``)

    ``norm`` (:data:`dnnphase.networks.mlp.NORMS`) and ``weight_init``
    (:data:`dnnphase.networks.mlp.WEIGHT_INITS`) as :class:`MLP`'s; with ``"scale"`` each
    model's hidden activations are multiplied by its c(α)
    (:func:`dnnphase.networks.mlp.activation_scale`, which depends on ``weight_init``).

    ``alpha`` (LeakyReLU slope) and ``dropout`` are per-model constants, in the
    ranges of :mod:`dnnphase.knobs` (checked by the caller: asserted here). A freshly
    constructed ensemble holds zeros; :meth:`init` gives the seeded initialisation
    (PyTorch's default, or orthogonal), :meth:`from_models` stacks given networks.

    ``forward`` takes ``x`` ``(B, d)`` (shared by all models) or ``(B, M, d)`` and
    returns logits ``(M, B, C)``.
    """

    def __init__(
        self,
        n_models: int,
        in_features: int,
        n_classes: int,
        depth: int = DEPTH,
        width: int | tuple[int, ...] = WIDTH,
        alpha: float | Sequence[float] = 0.0,
        dropout: float | Sequence[float] = 0.0,
        norm: str = NORM,
        bias: bool = True,
        bn_eps: float = BN_EPS,
        bn_momentum: float = BN_MOMENTUM,
        dtype: torch.dtype | None = None,
        device: torch.device | str | None = None,
        *,
        weight_init: str = "default",
    ) -> None:
        super().__init__()
        check_norm(norm)
        check_weight_init(weight_init)
        m = int(n_models)
        if m < 1 or depth < 0 or in_features < 1 or n_classes < 1:
            raise ConfigError("n_models, width, in_features and n_classes must be >= 1 and "
                              f"depth >= 0 (got {m}, {width}, {in_features}, {n_classes}, "
                              f"{depth})")
        widths = hidden_widths(depth, width)
        alphas = per_model(alpha, m, "alpha")
        drops = per_model(dropout, m, "dropout")
        # An internal invariant: the values were checked where they entered (a sweep's
        # configuration, train_ensemble, MLP) by dnnphase.knobs.check.
        assert all(RANGES["alpha"].admits(a) for a in alphas), f"alpha {alphas} unchecked"
        assert all(RANGES["dropout"].admits(p) for p in drops), f"dropout {drops} unchecked"
        self._init_knobs_(alphas, drops, bn_eps, bn_momentum)
        self.in_features, self.n_classes = in_features, n_classes
        self.depth, self.width, self.widths = depth, width, widths  # width as given
        self.norm, self.weight_init, self.bias = norm, weight_init, bias
        self.dims = [in_features, *widths, n_classes]

        fk = {"dtype": dtype, "device": device}
        dims = self.dims
        self.weights = nn.ParameterList(
            nn.Parameter(torch.zeros(m, dims[i], dims[i + 1], **fk)) for i in range(depth + 1)
        )
        self.biases = nn.ParameterList(
            nn.Parameter(torch.zeros(m, 1, dims[i + 1], **fk)) for i in range(depth + 1) if bias
        )
        self._init_norms_(dims[:-1] if norm == "batchnorm" else [], fk)
        # Eq. (1)'s c(α) per model (used with norm="scale" only).
        self._init_constants_(fk, [activation_scale(a, weight_init) if norm == "scale" else 1.0
                                   for a in alphas])
        self.has_dropout = self.has_dropout and depth > 0

    # ------------------------------------------------------------ construction

    @classmethod
    def init(
        cls,
        n_models: int,
        in_features: int,
        n_classes: int,
        *,
        seeds: Sequence[int],
        depth: int = DEPTH,
        width: int | tuple[int, ...] = WIDTH,
        alpha: float | Sequence[float] = 0.0,
        dropout: float | Sequence[float] = 0.0,
        norm: str = NORM,
        bias: bool = True,
        dtype: torch.dtype | None = None,
        device: torch.device | str | None = None,
        weight_init: str = "default",
    ) -> EnsembleMLP:
        """Seeded initialisation: model m has the weights of an ``MLP`` (same ``norm``,
        ``weight_init``) built right after ``torch.manual_seed(seeds[m])``, drawn from
        a ``torch.Generator`` seeded with ``seeds[m]`` directly into the stacked
        tensors (no per-model module; the global RNG is not touched). ``weight_init``:
        ``"default"`` PyTorch's (:func:`default_linear_`), ``"orthogonal"``
        :func:`dnnphase.networks.mlp.orthogonal_linear_`."""
        seeds = [int(s) for s in seeds]
        require(len(seeds) == n_models, "seeds", f"one per model ({n_models})", seeds)
        ens = cls(n_models, in_features, n_classes, depth=depth, width=width, alpha=alpha,
                  dropout=dropout, norm=norm, bias=bias,
                  dtype=dtype or torch.get_default_dtype(), device=device,
                  weight_init=weight_init)
        draw = orthogonal_linear_ if weight_init == "orthogonal" else default_linear_
        # Draw in the default dtype, model by model in the MLP's order (each Linear's
        # weight, then its bias), into (M, out, in) buffers; then one copy per layer.
        dims, dt = ens.dims, torch.get_default_dtype()
        ws = [torch.empty(n_models, dims[i + 1], dims[i], dtype=dt) for i in range(depth + 1)]
        bs = [torch.empty(n_models, dims[i + 1], dtype=dt) for i in range(depth + 1)]
        draw_seeded_(ws, bs, seeds, draw, bias)
        with torch.no_grad():
            for i in range(depth + 1):
                ens.weights[i].copy_(ws[i].transpose(1, 2))  # (M, in, out)
                if bias:
                    ens.biases[i].copy_(bs[i][:, None, :])
        return ens

    # from_models / to_models (StackedModels) with single MLPs:
    _SINGLE = MLP
    _ARCHITECTURE = ("in_features", "n_classes", "depth", "width", "norm", "bias",
                     "weight_init")

    @classmethod
    def _architecture_of(cls, mdl: nn.Module) -> tuple[tuple[str, Any], ...]:
        """As the base class's, with ``width`` in one form whatever form it was given in
        (a list, a tuple, numpy integers, one int for equal layers): one int when every
        hidden layer has it, else a tuple of ints, so that equal networks stack."""
        widths = mdl.widths
        width = widths[0] if widths and len(set(widths)) == 1 else \
            (widths if widths else mdl.width)
        return tuple((name, width if name == "width" else value)
                     for name, value in super()._architecture_of(mdl))

    @staticmethod
    def _tensor_of(mdl: MLP, name: str) -> torch.Tensor:
        return _mlp_tensor(mdl, name)

    # ------------------------------------------------------------ forward

    def _bn(self, h: torch.Tensor, i: int) -> torch.Tensor:
        """BatchNorm of every model: ``h`` ``(B, M·F)`` → ``(B, M·F)``; channel m·F + f."""
        shift = self.bn_biases[i].view(-1)
        if i == 0 and self.depth > 0:
            # The input BatchNorm's shift reaches the next BatchNorm only through a Linear
            # map: a gauge parameter with exactly zero gradient (docs/performance.md).
            shift = shift.detach()
        # The native kernel: per-model batch mean, biased batch variance, running
        # statistics with PyTorch's momentum and unbiased variance, as nn.BatchNorm1d.
        return F.batch_norm(
            h, self.running_mean(i).view(-1), self.running_var(i).view(-1),
            self.bn_weights[i].view(-1), shift, self.training, self.bn_momentum, self.bn_eps,
        )

    def _act(self, u: torch.Tensor) -> torch.Tensor:
        """LeakyReLU with per-model slope, ``u`` ``(B, M, F)``; bitwise ``F.leaky_relu``."""
        if self._alpha_uniform is not None:
            return F.leaky_relu(u, self._alpha_uniform)
        return LeakyReLUPerModel.apply(u, self.alpha.view(1, -1, 1))

    def _fuses(self, z: torch.Tensor) -> bool:
        """Whether hidden layers run the fused CPU kernel (:mod:`dnnphase.networks.fused_layer`):
        BatchNorm in training mode on a CPU, float32 or float64, more than one sample."""
        return (FUSED_CPU_LAYERS and self.training and self.norm == "batchnorm"
                and z.device.type == "cpu" and z.dtype in (torch.float32, torch.float64)
                and z.shape[1] > 1)

    def _hidden(self, h: torch.Tensor, i: int,
                dropout: Callable[[int], torch.Tensor] | None = None) -> torch.Tensor:
        """Hidden layer i: ``h`` ``(B, M, in)`` → LeakyReLU(BN(h W + b)) ``(B, M, n)``
        (``"scale"``: c(α)·LeakyReLU(h W + b); ``"none"``: LeakyReLU(h W + b)), times the
        dropout multipliers ``dropout(i)`` ``(B, M, n)`` when given."""
        b, m, n = h.shape[0], self.n_models, self.widths[i]
        z = torch.bmm(h.transpose(0, 1), self.weights[i])  # (M, B, n); BLAS reads the view
        if self._fuses(z):
            from dnnphase.networks.fused_layer import NormActDropout  # numba: on first use only

            # The trainer's masks as kept-unit bytes (a quarter of the multipliers' memory
            # traffic); other multipliers are applied after the kernel (the same product).
            own = isinstance(dropout, DropoutMasks) and dropout.fused
            j = i + 1
            bias = self.biases[i].view(m, n) if self.bias else z.new_zeros(m, n)
            h = NormActDropout.apply(
                z, bias.detach(), self.bn_weights[j], self.bn_biases[j], self.alpha,
                dropout.kept(i) if own else None,
                dropout.scale.view(-1) if own else self.drop_scale, self.running_mean(j),
                self.running_var(j), self.bn_eps, self.bn_momentum,
            ).transpose(0, 1)  # (B, M, n), a view of the model-major result
            return h if dropout is None or own else h * dropout(i)
        u = z.transpose(0, 1).reshape(b, m * n)  # (B, M·n): a copy unless M == 1
        if self.bias:
            bias = self.biases[i].view(1, m * n)
            # A bias feeding BatchNorm is removed by its mean subtraction: a gauge
            # parameter (zero gradient), so no autograd rounding noise reaches it. Any
            # other bias's gradient is summed per model, as the model alone sums it.
            u = (u + bias.detach()) if self.norm == "batchnorm" else \
                AddBiasPerModel.apply(u, bias, m)
        if self.norm == "batchnorm":
            u = self._bn(u, i + 1)
        h = self._act(u.view(b, m, n))
        if self.norm == "scale":
            h = h * self.act_scale.view(1, m, 1)  # as MLP: after the activation
        return h if dropout is None else h * dropout(i)

    def forward(
        self,
        x: torch.Tensor,
        return_features: bool = False,
        dropout: Callable[[int], torch.Tensor] | None = None,
    ) -> torch.Tensor | tuple[torch.Tensor, list[torch.Tensor]]:
        """Logits ``(M, B, C)``; with ``return_features`` also ``[h_0..h_L]``, each ``(B, M, F)``.

        ``x``: ``(B, d)`` shared by all models or ``(B, M, d)``. Features follow
        :class:`MLP`: h_0 after the input BatchNorm (the input itself without it), h_ℓ
        after the activation (and c(α)) and before dropout. ``dropout(ℓ)`` gives hidden
        layer ℓ's ``(B, M, width)`` multipliers in training mode
        (:class:`dnnphase.networks.randomness.DropoutMasks`); without it, masks come from torch's
        global generator.
        """
        m, d = self.n_models, self.in_features
        if x.dim() == 2:
            x = x.unsqueeze(1).expand(-1, m, -1)
        b = x.shape[0]
        h = x.reshape(b, m * d)  # (B, M·d)
        if self.norm == "batchnorm":
            h = self._bn(h, 0)
        h = h.view(b, m, d)
        feats = [h] if return_features else None
        drop = self.training and self.has_dropout
        if drop and dropout is None:
            dropout = self._global_masks(b, x.device)
        for i in range(self.depth):
            if feats is None:  # dropout inside the layer (one pass with the fused kernel)
                h = self._hidden(h, i, dropout if drop else None)  # (B, M, n)
            else:
                h = self._hidden(h, i)
                feats.append(h)
                if drop:
                    h = h * dropout(i)
        h_t = h.transpose(0, 1)  # (M, B, n)
        w = self.weights[self.depth]
        logits = torch.baddbmm(self.biases[self.depth], h_t, w) if self.bias \
            else torch.bmm(h_t, w)  # (M, B, C)
        return (logits, feats) if return_features else logits


def _mlp_tensor(mdl: MLP, name: str) -> torch.Tensor:
    """The tensor of one :class:`MLP` stored in the stacked state entry ``name``
    (weights transposed to ``(in, out)``, biases as ``(1, out)``)."""
    kind, i = name.rsplit(".", 1) if "." in name else name.rsplit("_", 1)
    i = int(i)
    lins = list(mdl.linears) + [mdl.out]
    norms = [mdl.input_bn] + list(mdl.norms)
    if kind == "weights":
        return lins[i].weight.detach().T
    if kind == "biases":
        return lins[i].bias.detach()[None]
    bn = norms[i]
    return {"bn_weights": bn.weight, "bn_biases": bn.bias, "running_mean": bn.running_mean,
            "running_var": bn.running_var}[kind].detach()
