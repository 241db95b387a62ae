"""How long a sweep's networks take on a CPU, estimated before any work (core-seconds), and
whether a process pool pays for its start-up.

A chunk costs its own overhead (building the stack, measuring every layer, storing), each
optimizer step a share per model and layer (the calls' overhead, which small networks are
made of), and each multiply-add of the forward pass three times (forward and backward)::

    chunks · CHUNK + models · epochs · steps · (depth + 1) · STEP
        + models · epochs · n_train · 3 · multiply-adds per sample · MULTIPLY_ADD

with the constants below, measured on one core of a 2-core Xeon (one thread, after the
first chunk): sweeps of 2 to 24 MLPs of width 100 and 200 on 300 to 2 560 samples, full
batch and batch 50, and a small CNN, came within 25 % of it. A pool's worker starts in
:data:`POOL_START_SECONDS` of its own, so a sweep of a few seconds' work runs faster in this
process (:func:`phasecore.executors.pool_pays`): the default scheduler, ``"auto"``, chooses.
"""

from __future__ import annotations

import math
import sys

from dnnphase.networks.architecture import Architecture
from phasecore.checks import check_pool_can_start
from phasecore.executors import resolve_scheduler
from phasecore.progress import say

__all__ = ["CHUNK_SECONDS", "MULTIPLY_ADD_SECONDS", "POOL_START_SECONDS", "STEP_SECONDS",
           "choose_scheduler", "core_seconds", "multiply_adds"]

#: A chunk's own cost: the stack built, every layer measured on both sets, the chunk stored.
CHUNK_SECONDS = 0.2
#: One optimizer step of one model, per layer (the calls' overhead, full batch or not).
STEP_SECONDS = 4e-4
#: One multiply-add of an MLP's forward pass (a CNN's: :data:`CNN_FACTOR` times as long).
MULTIPLY_ADD_SECONDS = 2.7e-11
#: A CNN's multiply-adds are slower: small per-model convolutions (measured about 3x).
CNN_FACTOR = 3.0
#: A pool worker's start-up of its own, in core-seconds: spawning the interpreter, importing
#: torch and the packages, loading the data set, the first chunk's one-off costs (measured:
#: 4.7 and 5.1 per worker, from the pool's CPU time less the chunks' own).
POOL_START_SECONDS = 5.0


def multiply_adds(arch: Architecture, n_features: int, n_classes: int,
                  image_shape: tuple[int, int, int] | None) -> int:
    """Multiply-adds of one sample's forward pass through one network.

    Parameters
    ----------
    arch : Architecture
        The network.
    n_features : int
        Inputs per sample.
    n_classes : int
        Outputs.
    image_shape : tuple of int, optional
        (channels, height, width) of a CNN's images (their side kept by every layer).

    Returns
    -------
    int
        Multiply-adds.
    """
    if arch.arch == "cnn":
        c_in, h, w = image_shape
        k2, c = arch.kernel_size ** 2, arch.channels
        return (c * c_in * k2 + (arch.depth - 1) * c * c * k2) * h * w + c * h * w * n_classes
    dims = [n_features, *arch.widths, n_classes]
    return sum(a * b for a, b in zip(dims[:-1], dims[1:], strict=True))


def core_seconds(members, data, n_chunks: int) -> float:
    """The estimated cost of a sweep in this process, on one CPU thread (module docstring).

    Parameters
    ----------
    members : sequence of SweepConfig
        The sweep at each of its depths (:meth:`SweepConfig.per_depth`).
    data : Dataset
        Its data set (``n_train``, ``n_features``, ``n_classes``, ``image_shape``).
    n_chunks : int
        The sweep's chunks.

    Returns
    -------
    float
        Core-seconds.
    """
    total = n_chunks * CHUNK_SECONDS
    n = data.n_train
    for cfg in members:
        arch = cfg.architecture()
        models = len(cfg.alphas) * len(cfg.values) * len(cfg.seeds)
        batches = list(cfg.values) if cfg.knob == "batch_size" else [cfg.batch_size]
        steps = sum(math.ceil(n / min(b or n, n)) for b in batches) / len(batches)
        madds = multiply_adds(arch, data.n_features, data.n_classes, data.image_shape) \
            * (CNN_FACTOR if arch.arch == "cnn" else 1.0)
        total += models * cfg.epochs * (steps * (cfg.depth + 1) * STEP_SECONDS
                                        + n * 3 * madds * MULTIPLY_ADD_SECONDS)
    return total


def choose_scheduler(cfg, data, scheduler: str, workers: int | None, n_chunks: int,
                     quiet: bool) -> tuple[str, int | None]:
    """Where a sweep's chunks run: ``"auto"`` becomes a process pool or, where the pool
    would not pay for its start-up (:func:`phasecore.executors.resolve_scheduler`), this
    process; one chunk always runs here. A pool chosen must be able to start
    (:func:`phasecore.checks.check_pool_can_start`). The choice, when the pool's start-up
    outweighs the work, is said on stderr unless ``quiet``. Results do not depend on it.

    Parameters
    ----------
    cfg : SweepConfig
        The sweep.
    data : Dataset
        Its data set.
    scheduler : str
        "auto", "serial", "processes" or a Dask address (only "auto" and "processes" are
        looked at).
    workers : int, optional
        The pool's size asked for.
    n_chunks : int
        The sweep's chunks.
    quiet : bool
        Say nothing.

    Returns
    -------
    tuple of (str, int or None)
        The scheduler and the workers to run with.
    """
    if scheduler not in ("auto", "processes"):
        return scheduler, workers
    if n_chunks <= 1:
        return "serial", None  # a pool would only add its start-up
    work, asked = core_seconds(cfg.per_depth(), data, n_chunks), workers
    chosen, workers, why = resolve_scheduler(scheduler, workers, n_chunks, work,
                                             POOL_START_SECONDS)
    check_pool_can_start(chosen)  # a script read from stdin cannot start one
    if why and not quiet:
        say(f"{cfg.knob} sweep: " + (
            f"a process pool as asked, though {why}" if chosen == "processes" else
            f"serial{f', not the {asked} workers asked for' if asked else ''}: {why}; "
            "--scheduler processes keeps a pool"), stream=sys.stderr)
    return chosen, workers
