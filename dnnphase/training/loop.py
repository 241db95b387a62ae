"""The training loop of one stack of models that share a batch size.

:class:`TrainingStack` holds the models still training, their optimizer state and
random streams; after every epoch it *retires* the models that have stopped
(converged, plateaued or diverged), so all remaining models have taken the same
number of steps and stopped models cost nothing.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np
import torch
from torch.nn import functional as F

from dnnphase.networks.per_model import row_mean
from dnnphase.networks.protocol import stack_features
from dnnphase.networks.randomness import (
    DropoutMasks,
    ModelStreams,
    corrupt_batch,
    dropout_span,
    tables_read,
)
from dnnphase.networks.stack import EnsembleMLP

from .optim import OptimizerSettings, StackedOptimizer
from .schedule import LR_DROP_DIVISOR, changes, drop_epochs, rules_start

__all__ = ["LoopSettings", "Retired", "StackData", "StackMembers", "TrainingStack",
           "divergence", "explosion_limit", "final_divergence", "stop_reason"]


class LoopSettings(Protocol):
    """What the loop reads of its call's settings (:class:`dnnphase.training.train.TrainConfig`
    has them all; the loop depends on this, not on the trainer that uses it)."""

    epochs: int
    loss_threshold: float
    patience: int
    rel_tol: float
    explode_factor: float
    schedule: tuple  # (epoch, knob, value) entries, dnnphase.training.schedule
    lr_drops: tuple  # fractions of the run after which lr / 10, dnnphase.training.schedule
    keep_last_batch: bool  # an epoch's last, partial batch is a step (TrainingSettings)
    warmup_epochs: int  # linear learning-rate warm-up (TrainingSettings)

    def optimizer_settings(self) -> OptimizerSettings: ...

#: Mini-batch steps on CUDA replay one captured CUDA graph of the whole step (data
#: gather, masks, noise, forward, backward, optimizer). At batch 5 a step is hundreds of
#: tiny kernels whose launches, not the arithmetic, set the pace (8.5 ms per step for 16
#: or 160 models on an H100). A replay runs the same kernels on the same inputs as the
#: eager step, so results are bit for bit the same (checked on a GPU, docs/performance.md).
CUDA_GRAPHS = True
#: Eager steps before a capture (lazy initialisation: the optimizer's step tensors, the
#: cached index hashes, cuBLAS's workspace on the capture stream). They are real steps.
GRAPH_WARMUP_STEPS = 2

# Codes of a diverged step loss, in order of precedence.
_DIVERGED = {1: "nan", 2: "inf", 3: "exploded"}


@dataclass
class StackData:
    """What every stack of a call shares: the training set on the training device,
    ``x`` ``(N, d)``, ``y`` ``(N,)``, the per-feature std ``(d,)`` of the clean data,
    the record epochs and the function that turns features into records; with
    ``x_test`` the test inputs are recorded at the same epochs through ``test_record_fn``
    (a record is then ``{"train": ..., "test": ...}``, else ``{"train": ...}``)."""

    x: torch.Tensor
    y: torch.Tensor
    x_std: torch.Tensor
    n_classes: int
    record_epochs: list[int] = field(default_factory=list)
    record_fn: Callable | None = None
    eval_stack: int | None = None  # models per evaluation pass
    x_test: torch.Tensor | None = None  # (N_test, d), recorded beside x (None: not recorded)
    test_record_fn: Callable | None = None
    labels: torch.Tensor | None = None  # (M, N): each model's fixed random labels (None: y)
    protocol: str = "ours"  # the records' measurement (dnnphase.networks.protocol)


@dataclass(frozen=True)
class StackMembers:
    """The models one stack trains and what is their own: ``ids`` their indices in the
    caller's list, and per model its learning rate, label + data noise level and seed (in
    the order of ``ids``); ``batch`` the batch size they share."""

    ids: list[int]
    lr: list[float]
    label_noise: list[float]
    seeds: list[int]
    batch: int


@dataclass
class Retired:
    """A model that left the stack: its final state and why it stopped."""

    model: EnsembleMLP  # one model, on the CPU
    epochs: int  # epochs started
    steps: int  # optimizer updates applied (before a diverged step)
    reason: str  # "max_epochs" | "loss_threshold" | "plateau" | "diverged"
    diverged_reason: str = ""  # "nan" | "inf" | "exploded" when diverged
    records: dict[int, Any] = field(default_factory=dict)  # record epoch → record
    final_record: Any = None  # record of the final state (for later record epochs)


def explosion_limit(n_classes: int, factor: float) -> float:
    """The step loss above which a model has exploded: ``factor · ln C``.

    ln C is the cross-entropy of the uninformed guess (uniform probabilities) and about
    a fresh network's loss; a mean loss ``factor`` times larger means logits of that
    size on wrongly classified samples, i.e. run-away weights, not a model that learns.
    ``factor = 0`` switches the rule off (only NaN / ±inf then count).
    """
    return factor * math.log(max(n_classes, 2)) if factor > 0 else math.inf


def divergence(losses: torch.Tensor, limit: float) -> torch.Tensor:
    """``(M,)`` code per step loss: 0 fine, 1 NaN, 2 ±inf, 3 exploded (> ``limit``)."""
    code = torch.where(losses > limit, 3, 0)
    code = torch.where(torch.isinf(losses), 2, code)
    return torch.where(torch.isnan(losses), 1, code)


def final_divergence(retired: list[Retired], losses: torch.Tensor, limit: float) -> None:
    """Mark as diverged the retired models whose *final* state is bad: a parameter or
    buffer that is NaN or ±inf, or a final loss ``losses`` ``(M,)`` (eval mode, after the
    last update) that is NaN, ±inf or above ``limit``, in that order of precedence.

    The loop checks each step's loss before its update, so an update that blows a model
    up on the last step of its run is only seen here (e.g. SGD with momentum at lr 100
    ends with a loss of 6e29 after losses that were all finite). Such a model applied all
    its ``steps``; it is changed in place to ``reason`` "diverged" with its
    ``diverged_reason``.
    """
    codes = divergence(losses.detach().cpu().double(), limit).tolist()
    for r, code in zip(retired, codes, strict=True):
        if r.reason == "diverged":
            continue
        state = list(r.model.state_dict().values())
        floats = [t for t in state if t.is_floating_point()]
        if any(torch.isnan(t).any() for t in floats):
            code = 1
        elif any(torch.isinf(t).any() for t in floats):
            code = 2
        if code:
            r.reason, r.diverged_reason = "diverged", _DIVERGED[int(code)]


def stop_reason(hist: np.ndarray, e: int, cfg: LoopSettings, start: int = 1) -> str | None:
    """Early-stopping rule (see :class:`~dnnphase.training.train.TrainConfig`) on the epoch
    losses ``hist[start - 1 : e]`` of one model: before epoch ``start`` (a schedule's
    last epoch, :func:`dnnphase.training.schedule.last_epoch`) no model stops, and the plateau
    windows lie within epochs ``start..e``."""
    if e < start:
        return None
    last = hist[e - 1]
    if last < cfg.loss_threshold:
        return "loss_threshold"
    p = cfg.patience
    if p > 0 and cfg.rel_tol > 0 and e - start + 1 >= 2 * p:
        old = hist[e - 2 * p : e - p].mean()
        new = hist[e - p : e].mean()
        if abs(new - old) <= cfg.rel_tol * abs(old):
            return "plateau"
    return None


def _split(rec: Any, j: int) -> Any:
    """Model j's part of a record (a tensor or a list of tensors, models first; or a
    dict of those)."""
    if isinstance(rec, dict):
        return {key: _split(part, j) for key, part in rec.items()}
    if isinstance(rec, list | tuple):
        return [r[j : j + 1] for r in rec]
    return rec[j : j + 1]


def _to_cpu(rec: Any) -> Any:
    if isinstance(rec, list | tuple):
        return [r.cpu() for r in rec]
    return rec.cpu()


@dataclass
class _GraphStep:
    """A captured training step: its graph, static inputs and the losses it writes."""

    graph: Any  # torch.cuda.CUDAGraph
    idx: torch.Tensor  # (M, B) sample indices, copied in before each replay
    keys: torch.Tensor  # (M,) step keys
    losses: torch.Tensor  # (M,) step losses, overwritten by each replay
    tables: tuple  # the index-hash tables the graph reads, kept alive with it


class TrainingStack:
    """Models of one batch size training together; ``run()`` trains them to the end.

    ``model`` holds the models still training (stack positions 0..m−1) and ``ids``
    their indices in the caller's list; ``retired`` collects those that stopped.
    """

    def __init__(self, model: EnsembleMLP, members: StackMembers, data: StackData,
                 cfg: LoopSettings, labels: torch.Tensor | None = None) -> None:
        """``labels``: each model's own training labels ``(M, N)`` on the data's device
        (fixed random labels), None: ``data.y`` for every model."""
        dev = data.x.device
        lr, label_noise = members.lr, members.label_noise
        self.labels = labels
        self.model = model.to(dev).train()
        self.ids = list(members.ids)
        self.batch, self.data, self.cfg = members.batch, data, cfg
        self.streams = ModelStreams(members.seeds, dev)
        self.opt = StackedOptimizer(list(self.model.parameters()), lr, cfg.optimizer_settings())
        self.q = torch.tensor(label_noise, dtype=data.x.dtype, device=dev)  # (M,)
        self._noisy = any(v > 0 for v in label_noise)
        self.limit = explosion_limit(data.n_classes, cfg.explode_factor)
        self.history = {j: np.full(cfg.epochs, np.nan) for j in self.ids}
        self.retired: dict[int, Retired] = {}
        self._records: dict[int, dict[int, Any]] = {j: {} for j in self.ids}
        self._x_full = self._y_full = None  # full-batch data replicated per model
        # A schedule's "None": each model's own value of the knob, by model id.
        self._own = {"dropout": dict(zip(self.ids, self.model.dropouts, strict=True)),
                     "lr": dict(zip(self.ids, map(float, lr), strict=True))}
        # the stopping rules wait for the schedule and the learning-rate drops
        self._rules_from = rules_start(cfg.schedule, cfg.lr_drops, cfg.epochs)
        self._drops = set(drop_epochs(cfg.lr_drops, cfg.epochs))
        self._graph: _GraphStep | None = None  # the captured step (CUDA, mini-batches)
        self._stream = None  # the stream graphs are captured on, made on first use
        self._graphs_fail = False  # a capture failed: eager steps from then on
        self._eager_since_change = 0  # eager steps since the stack last changed

    # ------------------------------------------------------------ the loop

    def run(self) -> list[Retired]:
        """Train every model to its stop; returns them in the order of ``ids``."""
        order = list(self.ids)
        self._record(0)
        epoch = 0
        for epoch in range(1, self.cfg.epochs + 1):
            self._reschedule(epoch)
            losses, code, bad_step = self._epoch(epoch)
            self._after_epoch(epoch, losses, code, bad_step)
            if not self.ids:
                break
        self._retire(list(range(len(self.ids))), epoch, ["max_epochs"] * len(self.ids))
        return [self.retired[j] for j in order]

    def _reschedule(self, epoch: int) -> None:
        """The schedule's changes at the start of ``epoch`` (:mod:`dnnphase.training.schedule`),
        to the models still training (a value None is each model's own), and a learning-rate
        drop when one falls on it."""
        for knob, value in changes(self.cfg.schedule, epoch):
            new = [self._own[knob][j] if value is None else float(value) for j in self.ids]
            if knob == "dropout" and new != list(self.model.dropouts):
                # A copy with the same parameter values and other dropout constants. The
                # optimizer holds its state by stack position, not the parameter tensors
                # (step() is given them), so Adam's moments and step count carry on.
                self.model = self.model.with_hyper(self.model.alphas, new)
                self._changed()
            elif knob == "lr" and new != self.opt.lr:
                self.opt.set_lr(new)
                self._changed()  # a captured step holds the learning rates as constants
        if epoch in self._drops:  # every model's current rate, divided (no lr schedule)
            self.opt.set_lr([v / LR_DROP_DIVISOR for v in self.opt.lr])
            self._changed()
        if self.cfg.warmup_epochs and epoch == self.cfg.warmup_epochs + 1:  # warm-up ends
            self.opt.set_lr([self._own["lr"][j] for j in self.ids])
            self._changed()

    def _warm(self, step: int, total: int) -> None:
        """Galanti et al.'s linear warm-up: step ``step`` (from 0) of ``total`` at lr·step/total."""
        self.opt.set_lr([self._own["lr"][j] * step / total for j in self.ids])
        self._changed()

    def _epoch(self, epoch: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """All steps of one epoch. Returns, per model, the epoch loss (mean of its step
        losses), the first divergence code and the step at which it occurred (−1)."""
        n, b = self.data.x.shape[0], self.batch
        steps = -(-n // b) if self.cfg.keep_last_batch else n // b
        dev = self.data.x.device
        m = len(self.ids)
        first = self.opt.steps  # steps are counted per model over the whole run
        keys = self.streams.step_keys(torch.arange(first, first + steps, device=dev))  # (M, S)
        perm = None if b == n else self.streams.epoch_order(epoch, n)  # (M, N)
        loss_sum = torch.zeros(m, dtype=self.data.x.dtype, device=dev)
        bad_loss = torch.zeros(m, dtype=self.data.x.dtype, device=dev)
        bad_step = torch.full((m,), -1, dtype=torch.long, device=dev)
        step = self._step
        if perm is not None and dev.type == "cuda" and CUDA_GRAPHS and self.opt.capturable:
            step = self._graph_step
        for s in range(steps):
            idx = None if perm is None else perm[:, s * b : (s + 1) * b]  # (M, B)
            if epoch <= self.cfg.warmup_epochs:
                self._warm(first + s, self.cfg.warmup_epochs * steps)
            partial = idx is not None and idx.shape[1] != b  # a captured step has B samples
            losses = (self._step if partial else step)(idx, keys[:, s])
            # The first loss that is not ≤ limit (NaN, inf, exploded), kept on the device.
            new = (bad_step < 0) & ~(losses <= self.limit)
            bad_step = torch.where(new, first + s, bad_step)
            bad_loss = torch.where(new, losses, bad_loss)
            loss_sum += losses
        # One host transfer per epoch (no per-step synchronisation on a GPU).
        code = torch.where(bad_step >= 0, divergence(bad_loss, self.limit), 0)
        return ((loss_sum / steps).cpu().numpy(), code.cpu().numpy(), bad_step.cpu().numpy())

    def _step(self, idx: torch.Tensor | None, keys: torch.Tensor) -> torch.Tensor:
        """One optimizer step of every model on its batch (``idx`` ``(M, B)``, None =
        the whole training set); returns the ``(M,)`` step losses before the update."""
        model, x, y = self.model, self.data.x, self.data.y
        m, b = model.n_models, self.batch if idx is None else idx.shape[1]
        if idx is None:
            if self._x_full is None:  # (N, M, d) and (M, N), rebuilt when the stack shrinks
                self._x_full = x.unsqueeze(1).expand(b, m, -1).contiguous()
                self._y_full = y.unsqueeze(0).expand(m, b).contiguous() \
                    if self.labels is None else self.labels
            xb, yb = self._x_full, self._y_full
        elif self.labels is not None:  # each model's own fixed labels
            xb, yb = x[idx.T], self.labels.gather(1, idx)
        else:
            xb, yb = x[idx.T], y[idx]  # (B, M, d), (M, B)
        masks = None
        if model.has_dropout:
            masks = DropoutMasks(keys, model.drop_level, model.drop_scale, b, model.widths)
        if self._noisy:
            sigma = self.q[:, None] * self.data.x_std[None, :]  # (M, d)
            start = dropout_span(model.depth, b, model.widths)  # noise after the masks
            xb, yb = corrupt_batch(xb, yb, keys, self.q, sigma, self.data.n_classes, start)
        logits = model(xb, dropout=masks)  # (M, B, C)
        losses = row_mean(F.cross_entropy(logits.reshape(m * b, -1), yb.reshape(m * b),
                                          reduction="none").view(m, b))  # (M,) own mean
        model.zero_grad(set_to_none=True)
        losses.sum().backward()  # the models share nothing: per-model gradients
        self.opt.step(list(model.parameters()))
        return losses.detach()

    def _graph_step(self, idx: torch.Tensor, keys: torch.Tensor) -> torch.Tensor:
        """:meth:`_step` by replaying a captured CUDA graph: eager (warm-up) steps
        after every change of the stack, then one capture, then replays."""
        if self._graphs_fail:
            return self._step(idx, keys)
        if self._graph is None:
            if self._eager_since_change < GRAPH_WARMUP_STEPS:
                self._eager_since_change += 1
                return self._on_side_stream(idx, keys)
            self._graph = self._capture(idx, keys)
            if self._graph is None:  # capture failed: this step eagerly, and all after it
                return self._step(idx, keys)
        g = self._graph
        g.idx.copy_(idx)
        g.keys.copy_(keys)
        g.graph.replay()
        self.opt.steps += 1  # the optimizer's Python counter; its step tensors are in the graph
        return g.losses

    def _on_side_stream(self, idx: torch.Tensor, keys: torch.Tensor) -> torch.Tensor:
        """One eager step on the stream the capture will use (PyTorch's warm-up recipe)."""
        side = self._side_stream()
        side.wait_stream(torch.cuda.current_stream(side.device))
        with torch.cuda.stream(side):
            losses = self._step(idx, keys)
        torch.cuda.current_stream(side.device).wait_stream(side)
        return losses

    def _side_stream(self) -> torch.cuda.Stream:
        if self._stream is None:
            self._stream = torch.cuda.Stream(self.data.x.device)
        return self._stream

    def _capture(self, idx: torch.Tensor, keys: torch.Tensor) -> _GraphStep | None:
        """Capture one step on static copies of its inputs; None, with a warning, where
        the step cannot be captured. Capturing runs nothing: the caller replays it."""
        dev = self.data.x.device
        static_idx, static_keys = idx.clone(), keys.clone()
        graph, steps = torch.cuda.CUDAGraph(), self.opt.steps
        stream = torch.cuda.current_stream(dev)
        torch.cuda.synchronize(dev)
        try:
            with tables_read() as tables, torch.cuda.graph(graph, stream=self._side_stream()):
                losses = self._step(static_idx, static_keys)
        except RuntimeError as err:  # e.g. an operation that needs the host, or memory
            self.opt.steps = steps  # the step was recorded, not taken
            # A capture that failed may leave its stream current (torch ends the capture
            # before it leaves the stream's context, and the end raises).
            torch.cuda.set_stream(stream)
            if isinstance(err, torch.cuda.OutOfMemoryError):
                raise  # the trainer splits the stack (train._train_stack)
            self._graphs_fail = True
            warnings.warn(f"dnnphase: training steps could not be captured as a CUDA graph "
                          f"({str(err).splitlines()[0]}); training without graphs "
                          "(slower at small batches, same results)", RuntimeWarning,
                          stacklevel=2)
            return None
        self.opt.steps = steps  # counted at each replay instead
        return _GraphStep(graph, static_idx, static_keys, losses, tuple(tables))

    def _changed(self) -> None:
        """The stack's models, learning rates or data changed: a new capture is due."""
        self._graph = None
        self._eager_since_change = 0

    # ------------------------------------------------------------ retiring

    def _after_epoch(self, epoch: int, losses: np.ndarray, code: np.ndarray,
                     bad_step: np.ndarray) -> None:
        """Record the epoch, then retire diverged and stopped models."""
        gone, reasons = [], []
        for pos, j in enumerate(self.ids):
            if code[pos]:
                gone.append(pos)
                reasons.append(_DIVERGED[int(code[pos])])
                continue
            self.history[j][epoch - 1] = losses[pos]
            why = stop_reason(self.history[j], epoch, self.cfg, self._rules_from)
            if why is not None:
                gone.append(pos)
                reasons.append(why)
        self._retire(gone, epoch, reasons, bad_step)
        self._record(epoch)

    def _retire(self, positions: list[int], epoch: int, reasons: list[str],
                bad_step: np.ndarray | None = None) -> None:
        """Move the models at stack ``positions`` to ``retired`` and shrink the stack."""
        if not positions:
            return
        gone = self.model.select(positions)
        rec = self._features_record(gone, positions) if self.data.record_epochs else None
        # Split into single models on the CPU: on a GPU one model's select is ~150 tiny
        # kernels and copies, and a 320-model stack's end then cost more than 3 epochs.
        gone = gone.to("cpu")
        for k, (pos, why) in enumerate(zip(positions, reasons, strict=True)):
            j = self.ids[pos]
            diverged = why in _DIVERGED.values()
            steps = int(bad_step[pos]) if diverged else self.opt.steps
            final = _split(rec, k) if rec is not None else None
            if epoch in self.data.record_epochs:
                self._records[j][epoch] = final
            self.retired[j] = Retired(gone.select([k]), epoch, steps,
                                      "diverged" if diverged else why,
                                      why if diverged else "", self._records[j], final)
        keep = [p for p in range(len(self.ids)) if p not in set(positions)]
        self.ids = [self.ids[p] for p in keep]
        if keep:
            it = torch.tensor(keep, dtype=torch.long, device=self.data.x.device)
            self.model = self.model.select(keep)
            self.opt.select(it)
            self.streams.select(it)
            self.q = self.q[it]
            self.labels = None if self.labels is None else self.labels[it]
            self._noisy = self._noisy and any(v > 0 for v in self.q.tolist())
            self._x_full = self._y_full = None
            self._changed()

    # ------------------------------------------------------------ records

    def _features_record(self, model: EnsembleMLP,
                         positions: list[int] | None = None) -> dict[str, Any]:
        """``{"train": record}`` of ``model``'s eval-mode features (the models at stack
        ``positions``, None: all), and ``"test"`` when the test set is recorded; on the CPU.
        With each model's own labels (fixed random labels) the training record function is
        called as ``record_fn(features, labels)``, labels ``(m, N)``."""
        data = self.data
        labels = self.labels
        if labels is not None and positions is not None:
            labels = labels[torch.tensor(positions, device=labels.device)]
        out = {"train": self._record_of(model, data.x, data.record_fn, labels)}
        if data.x_test is not None:
            out["test"] = self._record_of(model, data.x_test, data.test_record_fn)
        return out

    def _record_of(self, model: EnsembleMLP, x: torch.Tensor, fn: Callable | None,
                   labels: torch.Tensor | None = None) -> Any:
        feats = stack_features(model, x, self.data.protocol, stack_size=self.data.eval_stack)
        if fn is not None:
            feats = fn(feats) if labels is None else fn(feats, labels)
        return _to_cpu(feats)  # off the GPU

    def _record(self, epoch: int) -> None:
        """Records of the models still training at a record epoch."""
        if epoch not in self.data.record_epochs or not self.ids:
            return
        rec = self._features_record(self.model)
        for pos, j in enumerate(self.ids):
            self._records[j][epoch] = _split(rec, pos)
