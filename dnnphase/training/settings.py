"""The training settings a sweep shares with the trainer (:class:`TrainingSettings`).

:class:`dnnphase.sweeps.sweep.SweepConfig` and :class:`dnnphase.training.train.TrainConfig`
both derive from :class:`TrainingSettings`, so each setting, its default and its check are
written once; the command line reads them from SweepConfig.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from dnnphase.defaults import EPOCHS, LOSS_THRESHOLD, LR, PATIENCE, REL_TOL
from dnnphase.knobs import check
from phasecore.checks import is_finite, is_int, plain_fields, require

from .optim import OptimizerSettings
from .schedule import check_lr_drops, check_schedule, drop_epochs, normalise, normalise_drops

__all__ = ["DTYPES", "TrainingSettings", "check_last_batch", "dtype_name"]

#: The float types a model trains in (float32: fast; float64: rounding far below any signal).
DTYPES = ("float32", "float64")


def dtype_name(dtype) -> str:
    """The dtype's name: ``"float32"`` for ``"float32"`` and ``torch.float32`` alike."""
    return str(dtype).removeprefix("torch.")


def check_last_batch(sizes, n_train: int, keep_last_batch: bool) -> None:
    """With ``keep_last_batch``, ConfigError naming ``batch_size`` where a size leaves a last
    batch of a single sample (BatchNorm in training mode cannot normalise one sample)."""
    single = [b for b in sizes if keep_last_batch and n_train % b == 1]
    require(not single, "batch_size", f"a size that leaves a last batch of 0 or >= 2 of the "
            f"{n_train} training samples (keep_last_batch)", single[:1])


@dataclass(frozen=True)
class TrainingSettings:
    """The training settings a sweep (:class:`dnnphase.sweeps.sweep.SweepConfig`) shares with
    the trainer (:class:`dnnphase.training.train.TrainConfig`): both derive from this class,
    so each setting, its default and its check are written once. Early stopping: see
    :class:`dnnphase.training.train.TrainConfig`.

    epochs : at most this many epochs (integer >= 1).
    batch_size : samples per optimizer step (None: full batch; range in
        :data:`dnnphase.knobs.KNOBS`).
    optimizer : "adam" or "sgd".
    lr : the learning rate (> 0; :mod:`dnnphase.knobs`).
    loss_threshold : a model stops once its epoch loss (the mean of the epoch's mini-batch
        losses, in training mode) is below this (0: never).
    patience, rel_tol : a model stops on a plateau: after 2·patience epochs, once the mean
        loss of its last ``patience`` epochs is within ``rel_tol`` (relative) of the mean
        of the ``patience`` before (0 switches the rule off).
    dtype : "float32" or "float64" (:data:`DTYPES`; a torch dtype too, held by name).
    device : "auto" (CUDA if present), "cpu", "cuda" or "cuda:N" (a torch device too).
    schedule : knobs that change during training, ``(epoch, knob, value)`` entries — "from
        epoch ``epoch`` on (counted from 1), ``knob`` ("dropout" or "lr") is ``value``
        (None: each model's own value)"; e.g. ``((1, "dropout", 0.0), (51, "dropout",
        None))`` trains without dropout for 50 epochs, then with each model's own p. The
        stopping rules wait for the last scheduled epoch. Semantics and checks:
        :mod:`dnnphase.training.schedule`. Default ``()``: every knob fixed.
    momentum : SGD's momentum μ, in [0, 1) (torch.optim.SGD's, dampening 0); only with
        ``optimizer="sgd"`` (Adam's moments are its betas). He & Su and Galanti et al.: 0.9.
        Default 0.
    weight_decay : the L2 coefficient λ added to the gradient as λ·w (torch.optim's
        ``weight_decay``, for SGD and Adam alike), in [0, 1). The papers: 5e-4. Default 0.
    lr_drops : fractions of the run, increasing in (0, 1), after which every model's
        learning rate is divided by :data:`~dnnphase.training.schedule.LR_DROP_DIVISOR`
        (10): He & Su's "annealed by a factor of 10 at 1/3 and 2/3" is ``(1/3, 2/3)``. A
        drop at fraction f takes effect at the start of epoch ⌊f·epochs + ½⌋ + 1, relative
        to the run's length ``epochs``; the stopping rules wait for the last drop, as for a
        ``schedule`` (with which lr entries are refused). Default ``()``: no drop.
    keep_last_batch : whether an epoch ends with the last, partial batch of the shuffled
        samples (N mod batch_size of them, one more step: He & Su's code keeps it, 8 steps
        an epoch at N = 1 000 and batch 128) or leaves those samples out of the epoch (the
        default, every committed result: 7 steps). Kept, the batch must hold two samples
        or more where BatchNorm normalises it; the epoch loss is its steps' mean.
    warmup_epochs : Galanti et al.'s linear warm-up: in the first ``warmup_epochs`` epochs
        every model's learning rate rises with the step, step s (counted from 0) of the S
        steps of those epochs at lr · s / S (their first step at 0), then is its own lr
        again. No ``lr_drops`` nor lr entry of the ``schedule`` may fall within the warm-up.
        Their code: 1. Default 0: none.
    """

    epochs: int = EPOCHS
    batch_size: int | None = None  # None: full batch
    optimizer: str = OptimizerSettings.kind  # "adam" | "sgd"
    lr: float = LR
    loss_threshold: float = LOSS_THRESHOLD
    patience: int = PATIENCE
    rel_tol: float = REL_TOL
    dtype: str | torch.dtype = "float32"
    device: str | torch.device = "auto"
    schedule: tuple = ()  # (epoch, knob, value) entries: dnnphase.training.schedule
    momentum: float = OptimizerSettings.momentum  # SGD
    weight_decay: float = OptimizerSettings.weight_decay  # L2 added, as torch.optim
    lr_drops: tuple = ()  # fractions of the run: lr / 10 after each
    keep_last_batch: bool = False  # the epoch's last, partial batch: a step (He & Su)
    warmup_epochs: int = 0  # linear learning-rate warm-up over these epochs (Galanti)

    def __post_init__(self) -> None:
        plain_fields(self)
        if dtype_name(self.dtype) in DTYPES:  # held by name: a configuration is JSON
            object.__setattr__(self, "dtype", dtype_name(self.dtype))
        object.__setattr__(self, "schedule", normalise(self.schedule))  # JSON lists: tuples
        object.__setattr__(self, "lr_drops", normalise_drops(self.lr_drops))
        self.validate()

    def validate(self) -> None:
        """ConfigError naming the first setting outside its range."""
        require(is_int(self.epochs) and self.epochs >= 1, "epochs", "an integer >= 1",
                self.epochs)
        check("batch_size", self.batch_size, unset="full batch")
        OptimizerSettings(self.optimizer)  # the optimizer's name (home: dnnphase.training.optim)
        check("lr", self.lr)
        require(is_finite(self.loss_threshold) and self.loss_threshold >= 0, "loss_threshold",
                "a number >= 0", self.loss_threshold)
        require(is_int(self.patience) and self.patience >= 0, "patience",
                "an integer >= 0 (0: no plateau rule)", self.patience)
        require(is_finite(self.rel_tol) and self.rel_tol >= 0, "rel_tol",
                "a number >= 0 (0: no plateau rule)", self.rel_tol)
        require(self.dtype in DTYPES, "dtype", " or ".join(DTYPES), self.dtype)
        require(str(self.device) == "auto" or str(self.device).startswith(("cpu", "cuda")),
                "device", "auto, cpu or cuda[:N]", self.device)
        check_schedule(self.schedule, self.epochs)
        require(is_finite(self.momentum) and 0 <= self.momentum < 1, "momentum",
                "in [0, 1) (at 1 or more the velocity never decays)", self.momentum)
        require(self.momentum == 0 or self.optimizer == "sgd", "momentum",
                "0 unless optimizer is sgd (Adam's moments are its betas)", self.momentum)
        require(is_finite(self.weight_decay) and 0 <= self.weight_decay < 1, "weight_decay",
                "in [0, 1) (an L2 coefficient; the papers use 5e-4)", self.weight_decay)
        check_lr_drops(self.lr_drops, self.epochs, self.schedule)
        require(isinstance(self.keep_last_batch, bool), "keep_last_batch", "True or False",
                self.keep_last_batch)
        require(is_int(self.warmup_epochs) and 0 <= self.warmup_epochs < self.epochs,
                "warmup_epochs", f"an integer in 0..epochs - 1 ({self.epochs - 1})",
                self.warmup_epochs)
        within = [e for e, knob, _ in self.schedule if knob == "lr" and e <= self.warmup_epochs]
        within += [e for e in drop_epochs(self.lr_drops, self.epochs) if e <= self.warmup_epochs]
        require(not within, "warmup_epochs", "fewer than the epoch of the first lr change "
                "(schedule or lr_drops): the warm-up ends at each model's own lr", within)
