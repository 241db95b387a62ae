"""Batched training of many networks at once (the public entry point).

:func:`train_ensemble` trains M models — one per seed, each with its own LeakyReLU
slope α, dropout p, learning rate, label + data noise q and batch size — as stacks
of models in shared tensors (:mod:`dnnphase.networks.stack`,
:mod:`dnnphase.training.loop`), with the
result of training each one alone (:class:`dnnphase.networks.mlp.MLP` + ``torch.optim``) up
to rounding. Measurements and design notes: ``docs/performance.md``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, fields, replace
from typing import Any

import numpy as np
import torch

from dnnphase.knobs import check, check_batch_fits
from dnnphase.networks.architecture import Architecture
from dnnphase.networks.per_model import per_model
from dnnphase.networks.protocol import check_protocol, stack_features
from dnnphase.networks.randomness import fixed_random_labels
from dnnphase.networks.stack import EnsembleMLP
from phasecore.checks import as_config, require

from .inputs import check_data, check_seeds
from .loop import (
    Retired,
    StackData,
    StackMembers,
    TrainingStack,
    explosion_limit,
    final_divergence,
)
from .optim import OptimizerSettings
from .settings import DTYPES, TrainingSettings, check_last_batch

__all__ = ["DTYPES", "EnsembleMLP", "ModelKnobs", "TrainConfig", "TrainResult", "TrainingSettings",
           "default_stack_size", "resolve_device", "train_ensemble", "train_models"]

# Default CPU stack: one layer's activations of the whole stack, B·M·width elements,
# near 2 MB in float32, at most 256 models (measurements in docs/performance.md).
_CPU_STACK_ELEMENTS = 2**19
_CPU_MAX_STACK = 256


def resolve_device(device: str | torch.device = "auto") -> torch.device:
    """``"auto"`` → CUDA when available, else CPU; anything else → ``torch.device``."""
    if isinstance(device, str) and device == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    return torch.device(device)


def default_stack_size(batch_size: int, features: int, n_models: int,
                       device: torch.device) -> int:
    """Models per stack when ``TrainConfig.stack_size`` is None.

    CPU: ⌊2¹⁹ / (batch_size · features)⌋ models (one layer's activations of the stack
    ≈ 2 MB in float32), at least 1, at most 256 and ``n_models``; ``features`` is the
    widest layer, max(width, d). CUDA: all ``n_models``.
    """
    if device.type != "cpu":
        return n_models
    per = _CPU_STACK_ELEMENTS // (batch_size * features)
    return max(1, min(_CPU_MAX_STACK, n_models, per))


@dataclass(frozen=True)
class TrainConfig(TrainingSettings):
    """Training settings shared by all models of a call: the :class:`TrainingSettings`
    (a sweep's too; ``dtype`` is held here as the torch dtype) and the optimizer's
    and engine's own (``momentum`` and ``weight_decay`` are training settings, shared with
    a sweep). Per-model knobs are arguments of :func:`train_ensemble`.

    Early stopping (the paper's rule: "stop when the training loss is below 1e-4 or stops
    changing"), checked for every model after every epoch e on its *epoch loss*
    ℓ_e — the mean of the epoch's mini-batch losses in training mode (dropout and
    label/data noise active; at full batch the loss of the epoch's single step):

    * ``ℓ_e < loss_threshold`` → stop ("loss_threshold"), or
    * ``e ≥ 2·patience`` and ``|L_new − L_old| ≤ rel_tol · L_old``, where L_new and
      L_old are the means of ℓ over the last ``patience`` epochs and over the
      ``patience`` epochs before those → stop ("plateau").

    ``loss_threshold=0`` or ``rel_tol=0`` / ``patience=0`` switch a rule off. With a
    ``schedule`` both rules wait for its last epoch E and then look at the epochs since E
    only (:mod:`dnnphase.training.schedule`).

    Divergence: a model stops as "diverged" at the end of an epoch in which a step
    loss was NaN ("nan"), ±inf ("inf") or above ``explode_factor · ln C`` ("exploded";
    ln C is the loss of the uniform guess, so the default 1000 flags only run-away
    weights; 0 switches this rule off). A step's loss is taken before its update, so the
    final state is checked as well, whatever the optimizer: a parameter that is not
    finite, or a final (eval-mode) loss that is not finite or above the limit, makes the
    model diverged with that reason (its ``steps_run`` then counts every update). Its
    metrics are NaN.

    Label + data noise of level q (knob ``label_noise``), fresh every step: each
    label of the batch is, with probability q, replaced by a class drawn uniformly
    from all C classes (it may draw the true one), and Gaussian noise of standard
    deviation q·σ_f is added to input feature f, σ_f the per-feature standard
    deviation (population) of the clean training set.

    ``stack_size``: how many models share one stack. ``None`` chooses
    (:func:`default_stack_size`): on CPU ⌊2¹⁹ / (B · max(width, d))⌋, at most 256; on
    CUDA all models of a batch-size group.

    ``cpu_threads``: torch's intra-op threads while training on the CPU (restored
    afterwards). The default 1 makes a result independent of torch's thread setting:
    the native CPU BatchNorm splits the batch across threads, so with more threads its
    rounding, and then the whole trajectory, depends on their number. Use processes
    for several cores (the sweep does); ``None`` keeps torch's setting.
    """

    # the optimizer's own settings, their defaults read from their home (OptimizerSettings)
    betas: tuple[float, float] = OptimizerSettings.betas  # Adam
    eps: float = OptimizerSettings.eps  # Adam
    nesterov: bool = OptimizerSettings.nesterov  # SGD
    explode_factor: float = 1e3
    stack_size: int | None = None
    cpu_threads: int | None = 1
    record_every: int | None = None  # eval-mode snapshots every k epochs (and epoch 0)
    # Adam's fused kernel: None = where supported, False = foreach Adam; both give a model
    # the same numbers whatever shares its stack, and differ in the last bit. See
    # OptimizerSettings.
    fused: bool | None = OptimizerSettings.fused
    # the records' measurement (dnnphase.networks.protocol): "ours" eval mode, "he_su", ...
    protocol: str = "ours"

    def __post_init__(self) -> None:
        super().__post_init__()
        object.__setattr__(self, "dtype", getattr(torch, self.dtype))  # what torch reads

    def validate(self) -> None:
        super().validate()
        require(self.stack_size is None or self.stack_size >= 1, "stack_size",
                "an integer >= 1 or None (automatic)", self.stack_size)
        require(self.cpu_threads is None or self.cpu_threads >= 1, "cpu_threads",
                "an integer >= 1 or None (torch's setting)", self.cpu_threads)
        require(self.record_every is None or self.record_every >= 1, "record_every",
                "an integer >= 1 or None", self.record_every)
        require(self.explode_factor >= 0, "explode_factor", ">= 0", self.explode_factor)
        check_protocol(self.protocol)
        self.optimizer_settings()  # validates the optimizer's own settings

    def optimizer_settings(self) -> OptimizerSettings:
        return OptimizerSettings(self.optimizer, self.weight_decay, tuple(self.betas),
                                 self.eps, self.momentum, self.nesterov, self.fused)


@dataclass
class TrainResult:
    """Per-model outcome of :func:`train_ensemble`, in the order of the knobs.

    Metrics are eval-mode (running BatchNorm statistics, no dropout, clean data)
    on the full training / test set after the last update; NaN for diverged
    models (and ``test_accuracy`` NaN without a test set).
    """

    model: EnsembleMLP  # final parameters, CPU (a diverged model's are meaningless)
    train_loss: torch.Tensor  # (M,) float64
    train_accuracy: torch.Tensor  # (M,) float64
    test_accuracy: torch.Tensor  # (M,) float64
    epochs_run: torch.Tensor  # (M,) int64: epochs started (a diverged model's last one counts)
    steps_run: torch.Tensor  # (M,) int64: updates applied (before a diverged step, if one was)
    diverged: torch.Tensor  # (M,) bool
    stop_reason: list[str]  # "max_epochs" | "loss_threshold" | "plateau" | "diverged"
    loss_history: torch.Tensor  # (M, epochs) float64: epoch losses, NaN after the stop
    batch_size: torch.Tensor  # (M,) int64: effective batch size
    snapshots: list[tuple[int, Any]] = field(default_factory=list)
    x_train: torch.Tensor | None = None
    # (M, N) int64: the labels each model trained on, with fixed random labels (None: y_train)
    train_labels: torch.Tensor | None = None
    # (epoch, record) of the test set, as ``snapshots``; only with a test_record_fn
    test_snapshots: list[tuple[int, Any]] = field(default_factory=list)
    device: torch.device = torch.device("cpu")
    diverged_reason: list[str] = field(default_factory=list)  # "" | "nan" | "inf" | "exploded"
    cpu_threads: int | None = 1  # intra-op CPU threads for features(), as in training

    def features(
        self,
        indices: Sequence[int] | None = None,
        x: torch.Tensor | None = None,
        stack_size: int | None = 16,
        on_device: bool = False,
        protocol: str = "ours",
    ) -> list[torch.Tensor]:
        """Final eval-mode features ``[h_0..h_L]``, each ``(m, N, F)``, of models
        ``indices`` (default all) on ``x`` (default the training set), computed
        ``stack_size`` models at a time on the training device; on the CPU unless
        ``on_device``; under another measurement ``protocol``
        (:func:`dnnphase.networks.protocol.stack_features`) where asked."""
        if indices is None:
            indices = range(self.model.n_models)
        model = self.model.select(list(indices)).to(self.device)  # a copy
        x = self.x_train if x is None else x
        with _threads(self.device, self.cpu_threads):
            feats = stack_features(model, x.to(self.device, model.weights[0].dtype),
                                   protocol, stack_size=stack_size)
        return feats if on_device else [f.cpu() for f in feats]


@dataclass(frozen=True)
class ModelKnobs:
    """The per-model knobs of one call, one entry per model (M = ``len(seeds)``):
    seed, LeakyReLU slope α, dropout p, learning rate, label + data noise q, batch
    size (None: ``TrainConfig.batch_size``, whose None is the full batch) and the fraction
    of fixed random labels (None: 0 for every model).

    The values must already be checked (:func:`dnnphase.knobs.check`):
    :func:`train_ensemble` checks its arguments into one of these, a sweep's
    :class:`~dnnphase.sweeps.sweep.SweepConfig` its grid; :func:`train_models` trusts it.
    """

    seeds: tuple[int, ...]
    alpha: tuple[float, ...]
    dropout: tuple[float, ...]
    lr: tuple[float, ...]
    label_noise: tuple[float, ...]
    batch_size: tuple[int | None, ...]
    random_labels: tuple[float, ...] | None = None

    def __post_init__(self) -> None:
        check_seeds(self.seeds, "knobs.seeds")
        if self.random_labels is None:
            object.__setattr__(self, "random_labels", (0.0,) * len(self.seeds))
        # Plain Python numbers, so a model's value does not depend on how it was given.
        for name, kind in (("seeds", int), ("alpha", float), ("dropout", float), ("lr", float),
                           ("label_noise", float), ("random_labels", float)):
            object.__setattr__(self, name, tuple(kind(v) for v in getattr(self, name)))
        object.__setattr__(self, "batch_size",
                           tuple(None if v is None else int(v) for v in self.batch_size))
        require(all(len(getattr(self, f.name)) == len(self.seeds) for f in fields(self)),
                "knobs", f"one value per model ({len(self.seeds)}) in every field",
                {f.name: len(getattr(self, f.name)) for f in fields(self)})


def _knobs(seeds, alpha, dropout, lr, label_noise, batch_size, n: int, cfg: TrainConfig,
           model: EnsembleMLP | None, random_labels=0.0) -> ModelKnobs:
    """Broadcast and check :func:`train_ensemble`'s per-model knobs (ConfigError before
    any work); the ranges are :mod:`dnnphase.knobs`'."""
    seeds = check_seeds(seeds)
    m = len(seeds)
    require(m >= 1 and min(seeds) >= 0, "seeds", "one integer >= 0 per model", seeds)
    values = {
        "alpha": per_model(alpha if alpha is not None else (model.alphas if model else 0.0),
                           m, "alpha"),
        "dropout": per_model(dropout if dropout is not None else
                             (model.dropouts if model else 0.0), m, "dropout"),
        "lr": per_model(cfg.lr if lr is None else lr, m, "lr"),
        "label_noise": per_model(label_noise, m, "label_noise"),
        "random_labels": per_model(random_labels, m, "random_labels"),
    }
    for name, per in values.items():
        check(name, per)
    sizes = [batch_size] * m if batch_size is None or isinstance(batch_size, int | np.integer) \
        else list(batch_size)
    require(len(sizes) == m, "batch_size", f"one value per model ({m})", sizes)
    check("batch_size", [v for v in sizes if v is not None])
    check_batch_fits([cfg.batch_size or n if v is None else v for v in sizes], n)
    return ModelKnobs(seeds, **values, batch_size=sizes)


def _start_model(k: ModelKnobs, model, d: int, n_classes: int, net: Architecture,
                 image_shape, dtype):
    """The initial stacked models (seeded init, or a copy of ``model``)."""
    if model is None:
        net.check_alphas(k.alpha)
        return net.init(len(k.seeds), d, n_classes, seeds=k.seeds, alpha=k.alpha,
                        dropout=k.dropout, dtype=dtype, image_shape=image_shape)
    require(model.n_models == len(k.seeds) and model.in_features == d, "model",
            f"one model per seed ({len(k.seeds)}) with in_features = {d}", model.n_models)
    return model.with_hyper(k.alpha, k.dropout).to("cpu", dtype)  # a copy


def _stacks(k: ModelKnobs, cfg: TrainConfig, widest: int, device: torch.device):
    """Yield ``(batch size, model ids)`` per stack: one group per batch size, sorted
    by (lr, α, p) — equal lr share an optimizer call, equal α the native activation."""
    for b in sorted(set(k.batch_size)):
        group = [j for j, v in enumerate(k.batch_size) if v == b]
        group.sort(key=lambda j: (k.lr[j], k.alpha[j], k.dropout[j], j))
        per = cfg.stack_size or default_stack_size(b, widest, len(group), device)
        for a in range(0, len(group), per):
            yield b, group[a : a + per]


def _metrics(models: list[Retired], data: StackData, xt, yt, ids: list[int],
             limit: float) -> dict[str, np.ndarray]:
    """Eval-mode train loss / accuracy (on the labels each model trained on) and test
    accuracy of retired models ``ids`` (NaN when diverged). A model whose final state is
    not finite or whose final loss is above ``limit`` is marked diverged here
    (:func:`~dnnphase.training.loop.final_divergence`): the last update is checked too."""
    final = type(models[0].model).cat([r.model for r in models]).to(data.x.device)
    y = data.y if data.labels is None else data.labels[torch.tensor(ids)]
    ev = final.evaluate(data.x, y, stack_size=data.eval_stack)
    final_divergence(models, ev["loss"], limit)
    out = {"train_loss": ev["loss"].double().cpu().numpy(),
           "train_accuracy": ev["accuracy"].double().cpu().numpy(),
           "test_accuracy": np.full(len(models), np.nan)}
    if xt is not None:
        out["test_accuracy"] = final.evaluate(xt, yt, stack_size=data.eval_stack)[
            "accuracy"].double().cpu().numpy()
    bad = np.array([r.reason == "diverged" for r in models])
    for v in out.values():
        v[bad] = np.nan
    return out


def _cat_records(parts: list[Any]) -> Any:
    if isinstance(parts[0], list | tuple):
        return [torch.cat(layer) for layer in zip(*parts, strict=True)]
    return torch.cat(parts)


def _snapshots(retired: list[Retired], epochs: list[int],
               part: str = "train") -> list[tuple[int, Any]]:
    """``(epoch, record)`` of the training or test set (``part``) with the models first;
    a model that stopped before a record epoch contributes its final state."""
    return [(e, _cat_records([r.records.get(e, r.final_record)[part] for r in retired]))
            for e in epochs]


def _device_data(x_train, y_train, x_test, y_test, cfg: TrainConfig, device, record_fn,
                 test_record_fn=None):
    """The data on the training device as a :class:`StackData` (+ the test set, also in
    the StackData when ``test_record_fn`` records it)."""
    x = torch.as_tensor(x_train).to(device, cfg.dtype)
    y = torch.as_tensor(y_train).to(device, torch.long)
    require(x.dim() == 2, "x_train", "a (N, d) array", tuple(x.shape))
    require(y.shape == (x.shape[0],), "y_train", f"of shape ({x.shape[0]},)", tuple(y.shape))
    xt = yt = None
    if x_test is not None and y_test is not None:
        xt = torch.as_tensor(x_test).to(device, cfg.dtype)
        yt = torch.as_tensor(y_test).to(device, torch.long)
    # Per-feature population std, two-pass (no single-output reduction: thread-invariant).
    x_std = (x - x.mean(0)).square_().mean(0).sqrt_()  # (d,)
    epochs = list(range(0, cfg.epochs + 1, cfg.record_every)) if cfg.record_every else []
    require(test_record_fn is None or xt is not None, "test_record_fn",
            "given only with a test set (x_test and y_test)", test_record_fn)
    data = StackData(x, y, x_std, 0, epochs, record_fn,
                     x_test=xt if test_record_fn is not None else None,
                     test_record_fn=test_record_fn, protocol=cfg.protocol)
    return data, xt, yt


@contextmanager
def _threads(device: torch.device, n: int | None) -> Iterator[None]:
    """Run the block with ``n`` intra-op threads on the CPU (``None``: unchanged)."""
    old = torch.get_num_threads()
    pin = device.type == "cpu" and n is not None and n != old
    if pin:
        torch.set_num_threads(n)
    try:
        yield
    finally:
        if pin:
            torch.set_num_threads(old)


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
    random_labels: float | Sequence[float] = 0.0,
    batch_size: int | None | Sequence[int | None] = None,
    config: TrainConfig | None = None,
    model: EnsembleMLP | None = None,
    network: Architecture | None = None,
    image_shape: tuple[int, int, int] | None = None,
    record_fn: Callable[[list[torch.Tensor]], Any] | None = None,
    test_record_fn: Callable[[list[torch.Tensor]], Any] | None = None,
) -> TrainResult:
    """Train M models, one per entry of ``seeds``, and return per-model results.

    Data: ``x_train`` ``(N, d)`` float, ``y_train`` ``(N,)`` int class labels in
    [0, C); the test set likewise (optional). C = ``y_train.max() + 1`` unless
    ``model`` is given.

    Per-model knobs (scalar or length-M sequence): ``seeds`` (initialisation as
    :meth:`EnsembleMLP.init` and all of the model's random streams,
    :mod:`dnnphase.networks.randomness`), ``alpha`` (LeakyReLU slope, default 0), ``dropout``
    (default 0), ``lr`` (default ``config.lr``), ``label_noise`` (q, see
    :class:`TrainConfig`), ``batch_size`` (``None`` = ``config.batch_size``, whose
    ``None`` = full batch), ``random_labels`` (default 0: the fraction of the training
    labels reassigned once, before training, from the model's seed —
    :func:`dnnphase.networks.randomness.fixed_random_labels`; unlike ``label_noise`` they
    stay fixed; the model trains on, and ``train_loss`` / ``train_accuracy`` are measured
    against, its own labels, kept in ``train_labels``; ``record_fn`` is then called as
    ``record_fn(features, labels)`` with the recorded models' labels ``(m, N)``).
    At fixed epochs the batch size also sets the number of optimizer steps
    (``steps_run``). ``config.schedule`` may change dropout and lr during training; its
    value None is the model's own ``dropout`` / ``lr`` given here
    (:mod:`dnnphase.training.schedule`); ``config.lr_drops`` divides every model's lr by
    10 at fractions of the run.

    ``network``: the :class:`~dnnphase.networks.architecture.Architecture` (checked when
    it was made, each bad field a ConfigError naming it; None: the default MLP), e.g.
    ``Architecture("cnn", depth=3)``: ``arch`` "mlp", "cnn" (the images' ``image_shape``
    (C, H, W) is then required) or "linear"; ``depth`` hidden layers of ``width`` units
    (``channels`` channels and ``kernel_size`` for the CNN), ``norm`` one of
    :data:`dnnphase.networks.mlp.NORMS` ("batchnorm", "scale": Eq. (1)'s constant,
    "none"), ``bias``, and ``weight_init`` one of :data:`dnnphase.networks.mlp.WEIGHT_INITS`
    ("default", "orthogonal").

    ``model``: start from these weights instead (e.g. :meth:`EnsembleMLP.from_models`);
    its alpha/dropout are used unless ``alpha``/``dropout`` are given; its architecture
    (depth, width, norm, bias) is its own, and ``network`` plays no part.

    ``record_fn``: with ``config.record_every = k``, eval-mode features of every
    model are taken at epochs 0, k, 2k, ... ≤ ``config.epochs`` (a model that
    stopped keeps its final state) and stored in ``snapshots`` as
    ``(epoch, record_fn(features))``; ``record_fn`` maps ``[h_0..h_L]`` (each
    ``(m, N, F)``, on the training device) to a tensor (or list of tensors) with the
    m models first; without it the features themselves are kept (memory!).
    ``test_record_fn``: likewise for the test set (which it needs) at the same epochs,
    stored in ``test_snapshots`` (``lambda f: f`` keeps its features); without it the
    test set is not recorded.

    Every argument is checked (ConfigError before any work); then
    :func:`train_models` trains.
    """
    cfg = as_config(config, TrainConfig, {})
    net = _network(network)
    return _train(x_train, y_train, x_test, y_test, cfg, record_fn, model, net, image_shape,
                  lambda n: _knobs(seeds, alpha, dropout, lr, label_noise, batch_size, n, cfg,
                                   model, random_labels), test_record_fn=test_record_fn)


def train_models(
    x_train: torch.Tensor,
    y_train: torch.Tensor,
    x_test: torch.Tensor | None = None,
    y_test: torch.Tensor | None = None,
    *,
    knobs: ModelKnobs,
    config: TrainConfig | None = None,
    network: Architecture | None = None,
    image_shape: tuple[int, int, int] | None = None,
    record_fn: Callable[[list[torch.Tensor]], Any] | None = None,
    test_record_fn: Callable[[list[torch.Tensor]], Any] | None = None,
) -> TrainResult:
    """:func:`train_ensemble` for per-model knobs checked already (a sweep checks its
    whole grid before any work, :class:`~dnnphase.sweeps.sweep.SweepConfig`): the same
    training and result, seeded initialisation from ``knobs.seeds``, and no second
    check of the knobs' values (each batch size must be at most N). ``network``: the
    :class:`~dnnphase.networks.architecture.Architecture` (checked when it was made;
    None: the default MLP)."""
    cfg = as_config(config, TrainConfig, {})
    net = _network(network)
    require(isinstance(knobs, ModelKnobs), "knobs", "a ModelKnobs (one value per model in "
            "each field)", type(knobs).__name__)
    return _train(x_train, y_train, x_test, y_test, cfg, record_fn, None, net, image_shape,
                  lambda n: knobs, test_record_fn=test_record_fn)


def _network(network: Architecture | None) -> Architecture:
    """The entry points' ``network``: an Architecture (None: the default MLP), else a
    ConfigError naming ``network``."""
    net = Architecture() if network is None else network
    require(isinstance(net, Architecture), "network",
            "an Architecture (dnnphase.networks.architecture) or None", network)
    return net


def _train(x_train, y_train, x_test, y_test, cfg: TrainConfig, record_fn,
           model: EnsembleMLP | None, net: Architecture, image_shape,
           per_model_knobs: Callable[[int], ModelKnobs], *,
           test_record_fn=None) -> TrainResult:
    """Both entry points: the data on the device, then ``per_model_knobs(N)`` (checked
    or trusted), the initial models, and every stack trained."""
    check_data(x_train, y_train, x_test, y_test, getattr(model, "n_classes", None),
               record_fn=record_fn, test_record_fn=test_record_fn)
    device = resolve_device(cfg.device)
    with _threads(device, cfg.cpu_threads):
        data, xt, yt = _device_data(x_train, y_train, x_test, y_test, cfg, device, record_fn,
                                    test_record_fn)
        n, d = data.x.shape
        k = per_model_knobs(n)
        # None: the configuration's batch size, whose None is the full batch.
        k = replace(k, batch_size=tuple(int(cfg.batch_size or n) if v is None else v
                                        for v in k.batch_size))
        check_last_batch(k.batch_size, n, cfg.keep_last_batch)
        start = _start_model(k, model, d, int(data.y.max()) + 1, net, image_shape, cfg.dtype)
        data.n_classes = start.n_classes
        lo, hi = int(data.y.min()), int(data.y.max())
        require(0 <= lo and hi < start.n_classes, "y_train",
                f"labels in [0, {start.n_classes})", (lo, hi))
        data.eval_stack = min(64, default_stack_size(n, max(_widest(start), d), len(k.seeds),
                                                     device))
        if any(k.random_labels):  # each model's own labels, reassigned once, from its seed
            data.labels = fixed_random_labels(data.y, k.random_labels, k.seeds, data.n_classes)
        return _run_stacks(start, k, data, xt, yt, cfg, device)


def _train_stack(start: EnsembleMLP, ids: list[int], b: int, k: ModelKnobs, data: StackData,
                 cfg: TrainConfig) -> tuple[list[Retired], dict[int, np.ndarray]]:
    """Train models ``ids`` as one stack; a stack that runs out of GPU memory is split in
    two halves (a model's result does not depend on its stack-mates)."""
    try:
        members = StackMembers(ids, [k.lr[j] for j in ids], [k.label_noise[j] for j in ids],
                               [k.seeds[j] for j in ids], b)
        stack = TrainingStack(start.select(ids), members, data, cfg,
                              None if data.labels is None
                              else data.labels[torch.tensor(ids, device=data.x.device)])
        return stack.run(), stack.history
    except torch.cuda.OutOfMemoryError:
        if len(ids) == 1:
            raise
        stack = None
        torch.cuda.empty_cache()
    half = len(ids) // 2
    first, hist = _train_stack(start, ids[:half], b, k, data, cfg)
    second, hist2 = _train_stack(start, ids[half:], b, k, data, cfg)
    return first + second, {**hist, **hist2}


def _run_stacks(start: EnsembleMLP, k: ModelKnobs, data: StackData, xt, yt, cfg: TrainConfig,
                device: torch.device) -> TrainResult:
    """Train every stack of :func:`_stacks`, evaluate its models and assemble the result."""
    m = len(k.seeds)
    retired: list[Retired | None] = [None] * m
    metrics = {name: np.full(m, np.nan)
               for name in ("train_loss", "train_accuracy", "test_accuracy")}
    history = np.full((m, cfg.epochs), np.nan)
    for b, ids in _stacks(k, cfg, max(_widest(start), start.in_features), device):
        outs, hist = _train_stack(start, ids, b, k, data, cfg)
        limit = explosion_limit(data.n_classes, cfg.explode_factor)
        for name, values in _metrics(outs, data, xt, yt, ids, limit).items():
            metrics[name][ids] = values
        for j, out in zip(ids, outs, strict=True):
            retired[j] = out
            history[j] = hist[j]
    return TrainResult(
        model=type(retired[0].model).cat([r.model for r in retired]),  # on the CPU
        **{name: torch.from_numpy(v) for name, v in metrics.items()},
        epochs_run=torch.tensor([r.epochs for r in retired], dtype=torch.long),
        steps_run=torch.tensor([r.steps for r in retired], dtype=torch.long),
        diverged=torch.tensor([r.reason == "diverged" for r in retired]),
        stop_reason=[r.reason for r in retired],
        loss_history=torch.from_numpy(history),
        batch_size=torch.tensor(k.batch_size, dtype=torch.long),
        snapshots=_snapshots(retired, data.record_epochs),
        x_train=data.x.cpu(),
        train_labels=None if data.labels is None else data.labels.cpu(),
        test_snapshots=(_snapshots(retired, data.record_epochs, "test")
                        if data.x_test is not None else []),
        device=device,
        diverged_reason=[r.diverged_reason for r in retired],
        cpu_threads=cfg.cpu_threads,
    )


def _widest(model) -> int:
    """A stack's widest hidden layer (an MLP's widths may differ by layer; a CNN's layers
    hold ``width`` = channels x H x W units each)."""
    return max(getattr(model, "widths", ()) or (model.width,))
