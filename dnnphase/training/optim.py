"""Adam and SGD over stacked parameters: torch.optim's update for every model at once.

Both updates are elementwise, so one call over the stacked tensors ``(M, …)`` equals
M separate ``torch.optim`` steps. Models that share a learning rate form contiguous
runs (the trainer sorts them by lr), one call of torch's functional optimizer each.

Fused Adam is handed each model's own slice of a parameter as a tensor of its own: the
kernel updates a tensor's body in vector code and its last few elements in scalar code,
which round differently, so on the whole ``(M, …)`` tensor a model's numbers would depend
on where its stack-mates put the boundary. Per-model slices split exactly as one model
alone does, so a model's result is the same whatever shares its stack, bit for bit.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch
from torch.optim.adam import adam as _functional_adam
from torch.optim.sgd import sgd as _functional_sgd

from phasecore.checks import require

__all__ = ["OPTIMIZERS", "OptimizerSettings", "StackedOptimizer"]

#: The optimizers a model can train with.
OPTIMIZERS = ("adam", "sgd")


@dataclass(frozen=True)
class OptimizerSettings:
    """The optimizer's hyper-parameters shared by every model (lr is per model).

    ``fused``: Adam's fused kernel — None uses it where supported (fast); False is
    foreach Adam. Both give a model the same numbers whatever shares its stack (module
    doc); they differ from each other in the last bit.
    """

    kind: str = "adam"  # "adam" | "sgd"
    weight_decay: float = 0.0  # L2 added to the gradient, as torch.optim
    betas: tuple[float, float] = (0.9, 0.999)  # Adam
    eps: float = 1e-8  # Adam
    momentum: float = 0.0  # SGD
    nesterov: bool = False  # SGD
    fused: bool | None = None

    def __post_init__(self) -> None:
        require(self.kind in OPTIMIZERS, "optimizer", " or ".join(OPTIMIZERS), self.kind)
        require(self.momentum >= 0 and (self.momentum > 0 or not self.nesterov), "momentum",
                ">= 0 (and > 0 for nesterov)", self.momentum)
        require(self.weight_decay >= 0, "weight_decay", ">= 0", self.weight_decay)


def _lr_runs(lr: Sequence[float]) -> list[tuple[int, int, float]]:
    """Maximal runs ``(start, stop, lr)`` of equal consecutive learning rates."""
    runs, start = [], 0
    for j in range(1, len(lr) + 1):
        if j == len(lr) or lr[j] != lr[start]:
            runs.append((start, j, lr[start]))
            start = j
    return runs


class StackedOptimizer:
    """Adam / SGD over stacked parameters ``(M, …)``, exactly torch.optim's update per model.

    All models of the stack have taken the same number of steps (the trainer retires
    stopped models), so Adam's step count is shared. :meth:`select` keeps a subset.
    """

    def __init__(self, params: list[torch.Tensor], lr: Sequence[float],
                 settings: OptimizerSettings | None = None) -> None:
        self.settings = s = settings or OptimizerSettings()
        self.steps = 0
        if s.kind == "adam":
            self.state = [[torch.zeros_like(p) for p in params] for _ in range(2)]  # m, v
        elif s.momentum > 0:
            self.state = [[torch.zeros_like(p) for p in params]]
        else:
            self.state = []
        fusable = params[0].device.type in ("cpu", "cuda") and params[0].dtype in (
            torch.float16, torch.bfloat16, torch.float32, torch.float64)
        self.fused = fusable if s.fused is None else s.fused
        self._set_lr(lr)

    @property
    def capturable(self) -> bool:
        """Whether a step can be recorded in a CUDA graph and replayed: fused Adam keeps its
        step count on the device; foreach Adam reads it on the host (its bias correction
        would be frozen at the captured step); SGD has none."""
        return self.settings.kind == "sgd" or self.fused

    def set_lr(self, lr: Sequence[float]) -> None:
        """New per-model learning rates (a schedule, :mod:`dnnphase.training.schedule`); the state
        (moments, step count) carries on, as torch.optim's after changing a group's lr."""
        assert len(lr) == len(self.lr), "StackedOptimizer.set_lr: one lr per model"
        self._set_lr(lr)

    def _set_lr(self, lr: Sequence[float]) -> None:
        self.lr = [float(v) for v in lr]
        self.runs = _lr_runs(self.lr)
        self._step_tensors = None  # rebuilt lazily with the current step count
        self._zeros = None  # gradients of the gauge parameters, rebuilt after select

    def select(self, keep: torch.Tensor) -> None:
        """Keep the state of models ``keep`` (stack positions, long tensor)."""
        if self.state:
            it = keep.to(self.state[0][0].device)
            self.state = [[s.index_select(0, it) for s in group] for group in self.state]
        self._set_lr([self.lr[i] for i in keep.tolist()])

    @torch.no_grad()
    def step(self, params: list[torch.Tensor]) -> None:
        """One update of every model; a parameter without ``.grad`` has gradient zero
        (the gauge parameters: biases feeding BatchNorm)."""
        if self._zeros is None:  # one zero tensor per parameter, made once per stack
            self._zeros = [torch.zeros_like(p) for p in params]
        grads = [p.grad if p.grad is not None else z
                 for p, z in zip(params, self._zeros, strict=True)]
        for r, (a, b, lr) in enumerate(self.runs):
            ps, gs = [p[a:b] for p in params], [g[a:b] for g in grads]
            if self.settings.kind == "adam":
                self._adam(r, ps, gs, a, b, lr)
            else:
                self._sgd(ps, gs, a, b, lr)
        self.steps += 1

    def _adam(self, run: int, ps, gs, a: int, b: int, lr: float) -> None:
        s = self.settings
        ms, vs = [m[a:b] for m in self.state[0]], [v[a:b] for v in self.state[1]]
        if self.fused:  # one tensor per (parameter, model): module doc
            ps, gs, ms, vs = ([t[i] for t in group for i in range(b - a)]
                              for group in (ps, gs, ms, vs))
        if self._step_tensors is None:
            self._step_tensors = {}
        if run not in self._step_tensors:
            # One step tensor per list entry: the functional Adam increments each.
            dev = ps[0].device if self.fused else torch.device("cpu")
            self._step_tensors[run] = [
                torch.tensor(float(self.steps), dtype=torch.float32, device=dev) for _ in ps]
        _functional_adam(
            ps, gs, ms, vs, [], self._step_tensors[run], foreach=not self.fused,
            fused=self.fused or None, amsgrad=False, beta1=s.betas[0], beta2=s.betas[1],
            lr=lr, weight_decay=s.weight_decay, eps=s.eps, maximize=False,
        )

    def _sgd(self, ps, gs, a: int, b: int, lr: float) -> None:
        s = self.settings
        # Zero-initialised momentum buffers: μ·0 + g = g is bitwise torch's first-step
        # clone (dampening is fixed at 0).
        bufs = [buf[a:b] for buf in self.state[0]] if self.state else [None] * len(ps)
        _functional_sgd(
            ps, gs, bufs, foreach=True, weight_decay=s.weight_decay, momentum=s.momentum,
            lr=lr, dampening=0.0, nesterov=s.nesterov, maximize=False,
        )
