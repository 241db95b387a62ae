"""How much memory a sweep needs, estimated before any work starts (bytes).

A chunk of M models trains as one stack, so everything scales with M:

* model state: the parameters, their gradients and the optimizer's state (Adam: two
  moments; SGD without momentum: none), ``M x parameters x (2 + states) x bytes``;
* training activations kept for the backward pass: about two tensors of each layer's
  size per sample of a batch, ``2 x M x batch x (inputs + depth x hidden units)``;
* measuring: every layer's features of the whole training set, kept while they are
  measured (the features, and blocks of them in float64), measured at about three
  copies: ``3 x M x n_train x (inputs + depth x hidden units) x bytes``.

The peak is the state plus the larger of the other two. The factors were measured
(peak resident memory of one chunk, MLP width 3000 and CNN 128 channels, full batch and
batch 64; the estimate came within 5 % below the measured extra memory), so the
estimate errs low: it refuses only what cannot fit, never a sweep that would.
"""

from __future__ import annotations

import math
import os

from dnnphase import defaults
from dnnphase.networks.architecture import Architecture
from phasecore.checks import check_memory, host_available_memory

__all__ = ["check_sweep_memory", "chunk_bytes", "parameters_per_model"]

#: Tensors of a hidden layer's size kept per sample for the backward pass (measured <= 3).
TRAINING_COPIES = 2.0
#: Copies of every layer's features held while a chunk is measured (measured 3.0-3.3).
MEASURING_COPIES = 3.0
#: Optimizer state tensors per parameter.
OPTIMIZER_STATES = {"adam": 2, "sgd": 0}
#: A process-pool worker's own memory before its first chunk (Python, torch, numba and
#: the kernels: ~320 MB resident measured after the imports; counted low).
WORKER_BYTES = 256 * 2**20
#: Training samples of the paper's setup (mnist5k): the scale n_train is compared with.
PAPER_N_TRAIN = 2560
#: ... and its inputs' features (28 x 28 pixels): what a resized data set (``size``) is
#: measured against.
PAPER_FEATURES = 28 * 28


def parameters_per_model(arch: Architecture, n_features: int, n_classes: int,
                         image_shape: tuple[int, int, int] | None) -> int:
    """Trainable numbers of one network (weights, biases, BatchNorm scales and shifts)."""
    if arch.arch == "cnn":
        c_in, h, w = image_shape
        k2, c = arch.kernel_size ** 2, arch.channels
        weights = c * c_in * k2 + (arch.depth - 1) * c * c * k2 + c * h * w * n_classes
        biases = arch.depth * c + n_classes
        norms = 2 * (c_in + arch.depth * c)
    else:
        dims = [n_features, *arch.widths, n_classes]
        weights = sum(a * b for a, b in zip(dims[:-1], dims[1:], strict=True))
        biases = sum(dims[1:])
        norms = 2 * (n_features + sum(arch.widths))
    return weights + (biases if arch.bias else 0) + (norms if arch.norm == "batchnorm" else 0)


def units_per_sample(arch: Architecture, n_features: int,
                     image_shape: tuple[int, int, int] | None) -> int:
    """Numbers of every layer's features of one sample: the input and the hidden layers
    (a CNN's hidden layer holds channels x H x W)."""
    if arch.arch == "cnn":
        return n_features + arch.depth * arch.channels * image_shape[1] * image_shape[2]
    return n_features + sum(arch.widths)


def chunk_bytes(arch: Architecture, *, models: int, n_train: int, batch: int,
                n_features: int, n_classes: int, image_shape, optimizer: str,
                dtype_bytes: int) -> dict[str, float]:
    """Estimated peak memory of one chunk of ``models`` networks, in bytes, by part:
    ``state`` (parameters, gradients, optimizer), ``training`` (activations of a
    ``batch``), ``measuring`` (features of ``n_train`` samples) and ``peak``."""
    params = parameters_per_model(arch, n_features, n_classes, image_shape)
    units = units_per_sample(arch, n_features, image_shape)
    state = models * params * (2 + OPTIMIZER_STATES.get(optimizer, 2)) * dtype_bytes
    training = TRAINING_COPIES * models * batch * units * dtype_bytes
    measuring = MEASURING_COPIES * models * n_train * units * dtype_bytes
    data = n_train * n_features * 4.0
    return {"state": float(state), "training": training, "measuring": measuring,
            "peak": state + max(training, measuring) + data}


def concurrent_chunks(scheduler: str, workers: int | None, n_chunks: int) -> int:
    """Chunks in memory at once on this machine: one per pool worker, else one (serial
    here; a Dask worker's memory is its own machine's)."""
    if scheduler not in ("processes", "auto"):  # auto: a pool, at most
        return 1
    return max(1, min(workers or os.cpu_count() or 1, n_chunks))


def available_bytes(on_cuda: bool, device: str) -> float | None:
    """Memory a sweep may use: the GPU's free memory on CUDA, else the host's available."""
    if on_cuda:
        import torch

        name = "cuda" if str(device) == "auto" else str(device)
        return float(torch.cuda.mem_get_info(torch.device(name))[0])
    return host_available_memory()


def check_sweep_memory(cfg, data, *, scheduler: str, workers: int | None, on_cuda: bool,
                       available: float | None = None, depth_name: str = "depth"
                       ) -> dict[str, float]:
    """Refuse, before any work, a sweep whose chunks cannot fit in memory, naming the
    parameter most above its usual size (width or channels, depth, models_per_chunk,
    n_train), or ``workers`` where one chunk fits and the pool asked for does not (a
    pool's worker costs :data:`WORKER_BYTES` of its own). ``available``: bytes (default:
    this machine's, :func:`available_bytes`); ``depth_name``: what the depth is called on
    the caller's side ("depths" for the deepest of a depth axis, ``--depths``). Returns the
    estimate of one chunk (:func:`chunk_bytes`)."""
    arch = cfg.architecture()
    n_models = len(cfg.alphas) * len(cfg.values) * len(cfg.seeds)
    models = min(cfg.models_per_chunk, n_models)
    batches = list(cfg.values) if cfg.knob == "batch_size" else [cfg.batch_size]
    batch = max(data.n_train if b is None else min(b, data.n_train) for b in batches)
    part = chunk_bytes(arch, models=models, n_train=data.n_train, batch=batch,
                       n_features=data.n_features, n_classes=data.n_classes,
                       image_shape=data.image_shape, optimizer=cfg.optimizer,
                       dtype_bytes=8 if cfg.dtype == "float64" else 4)
    at_once = concurrent_chunks(scheduler, workers, math.ceil(n_models / models))
    if available is None:
        available = available_bytes(on_cuda, cfg.device)
    size = ("channels", cfg.channels, defaults.CHANNELS) if cfg.arch == "cnn" else \
        ("width", max(cfg.architecture().widths), defaults.WIDTH)
    scale = {size[0]: size[1] / size[2], depth_name: cfg.depth / defaults.DEPTH,
             "models_per_chunk": models / defaults.MODELS_PER_CHUNK,
             "n_train": data.n_train / PAPER_N_TRAIN}
    if cfg.size is not None:  # images resized: their pixels against the paper's 28 x 28
        scale = {**scale, "size": data.n_features / PAPER_FEATURES}
    name = max(scale, key=scale.get)
    pool = scheduler in ("processes", "auto")
    per_chunk = part["peak"] + (WORKER_BYTES if pool else 0)
    if at_once > 1 and available is not None and per_chunk <= available < per_chunk * at_once:
        name = "workers"  # the automatic pool (one per core) too: --workers fixes it
    chunks = f"{at_once} chunks at once ({at_once} workers) of" if at_once > 1 else "a chunk of"
    shown = ",".join(map(str, cfg.width)) if size[0] == "width" and isinstance(
        cfg.width, tuple) else size[1]  # per-layer widths as given, not just the widest
    what = (f"{chunks} {models} model{'s' if models > 1 else ''} ({size[0]} {shown}, "
            f"depth {cfg.depth}, "
            f"{data.n_train} training samples"
            + (f" of {data.n_features} features (size {cfg.size})" if cfg.size is not None
               else "") + f", {cfg.dtype})")
    hint = (f"parameters and optimizer state {part['state'] / 2**30:.3g} GiB, activations "
            f"and features {max(part['training'], part['measuring']) / 2**30:.3g} GiB per "
            f"chunk" + (f", a pool's worker {WORKER_BYTES / 2**30:.2g} GiB of its own"
                        if pool else "")
            + (f"; use at most {int(available // per_chunk)} workers" if name == "workers"
               else f"; use a smaller {', '.join(list(scale)[:-1])} or {list(scale)[-1]}"
               + (", or fewer workers" if at_once > 1 else ""))
            + (", or float32" if cfg.dtype == "float64" else ""))
    check_memory(name, per_chunk * at_once, available, what, hint)
    return part
