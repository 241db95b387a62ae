"""Speed of M stacked CNNs (dnnphase.networks.cnn.EnsembleCNN) against a loop over M single CNNs.

Paper configuration (supplement Fig. S2): 10 × 10 single-channel images, 7 conv layers
(3 × 3, 20 channels, BatchNorm, LeakyReLU, 2 × 2 max-pool + ×2 upsampling), a Linear
output over 10 classes; batch 256, float32, Adam. One training step = forward, backward
and optimizer step, every model on its own batch (as the trainer draws them). Random
data: speed does not depend on the values. Everything on 1 thread
(``torch.set_num_threads(1)``): per-core numbers, the unit in which a sweep over the
machine's cores scales.

Printed, all measured in this run (never asserted: the machine is shared), for
M = 4, 8 and 16 (and M = 1: the CPU stack size that ``dnnphase.training.train.default_stack_size``
gives today for this width, 20·10·10 units per layer), as milliseconds per model and step
(best of a few repetitions):

* stack: one :class:`~dnnphase.networks.cnn.EnsembleCNN` (grouped convolutions, channels-last) and
  the trainer's :class:`~dnnphase.training.optim.StackedOptimizer` (one Adam call for all models);
* loop: M single :class:`~dnnphase.networks.cnn.CNN` s one after the other, each with its own
  ``torch.optim.Adam`` — the plain recipe, in PyTorch's default memory format;
* loop, channels-last: the same loop with the models and inputs in channels-last memory
  format, which splits the stack's gain into the memory format's and the stacking's;
* the ratios loop / stack, and the conv GFLOP/s of the stack (conv FLOPs of a step:
  forward, weight and input gradients; none of the input gradient of the first layer).

Usage::

    python benchmarks/bench_cnn.py            # full run, about 1-2 minutes
    python benchmarks/bench_cnn.py --quick    # smaller sizes, a few seconds
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable

import torch
import torch.nn.functional as F

from dnnphase.networks.cnn import CNN, EnsembleCNN
from dnnphase.networks.per_model import row_mean
from dnnphase.training.optim import StackedOptimizer

IMAGE, N_CLASSES, DEPTH, CHANNELS, KERNEL = (1, 10, 10), 10, 7, 20, 3
D_IN = IMAGE[0] * IMAGE[1] * IMAGE[2]
LR = 1e-3


def make_data(n: int, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    return torch.randn(n, D_IN, generator=g), torch.randint(0, N_CLASSES, (n,), generator=g)


def batches(n: int, m: int, batch: int, seed: int = 1) -> torch.Tensor:
    """``(M, B)`` sample indices: model m's batch (each model its own, as the trainer)."""
    g = torch.Generator().manual_seed(seed)
    return torch.stack([torch.randperm(n, generator=g)[:batch] for _ in range(m)])


def stack_step(m: int, x: torch.Tensor, y: torch.Tensor, idx: torch.Tensor) -> Callable:
    """One training step of m stacked CNNs, as :mod:`dnnphase.training.loop` takes it."""
    ens = EnsembleCNN.init(m, IMAGE, N_CLASSES, seeds=range(m), depth=DEPTH,
                           channels=CHANNELS, kernel_size=KERNEL).train()
    opt = StackedOptimizer(list(ens.parameters()), [LR] * m)
    xb, yb = x[idx.T], y[idx]  # (B, M, d), (M, B)
    b = idx.shape[1]

    def step() -> None:
        logits = ens(xb)  # (M, B, C)
        losses = row_mean(F.cross_entropy(logits.reshape(m * b, -1), yb.reshape(m * b),
                                          reduction="none").view(m, b))
        ens.zero_grad(set_to_none=True)
        losses.sum().backward()
        opt.step(list(ens.parameters()))

    return step


def loop_step(m: int, x: torch.Tensor, y: torch.Tensor, idx: torch.Tensor,
              channels_last: bool = False) -> Callable:
    """One training step of m single CNNs, one after the other, each with its own Adam."""
    fmt = torch.channels_last if channels_last else torch.contiguous_format
    runs = []
    for j in range(m):
        torch.manual_seed(j)
        model = CNN(IMAGE, N_CLASSES, depth=DEPTH, channels=CHANNELS,
                    kernel_size=KERNEL).to(memory_format=fmt).train()
        xb = x[idx[j]].view(-1, *IMAGE).contiguous(memory_format=fmt)
        runs.append((model, torch.optim.Adam(model.parameters(), lr=LR), xb, y[idx[j]]))

    def step() -> None:
        for model, opt, xb, yb in runs:
            opt.zero_grad()
            F.cross_entropy(model(xb), yb).backward()
            opt.step()

    return step


def conv_flops(batch: int) -> float:
    """Conv FLOPs of one training step of one model: forward, weight gradients and input
    gradients (none for the first layer: the data needs no gradient)."""
    hw = IMAGE[1] * IMAGE[2]
    ins = [IMAGE[0]] + [CHANNELS] * (DEPTH - 1)
    macs = [batch * hw * CHANNELS * c * KERNEL * KERNEL for c in ins]
    return 2.0 * (2 * sum(macs) + sum(macs[1:]))


def mean_seconds(step: Callable, steps: int) -> float:
    """Seconds of one call of ``step``, the mean over ``steps`` calls."""
    t0 = time.perf_counter()
    for _ in range(steps):
        step()
    return (time.perf_counter() - t0) / steps


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="smaller sizes, a few seconds")
    args = ap.parse_args()
    torch.set_num_threads(1)

    n, batch = 2560, 256
    sizes, reps, steps = ((1, 4), 2, 1) if args.quick else ((1, 4, 8, 16), 3, 2)
    x, y = make_data(n)
    fl = conv_flops(batch)
    print(f"torch {torch.__version__}, 1 thread; CNN {IMAGE[0]}x{IMAGE[1]}x{IMAGE[2]} -> "
          f"{DEPTH} conv layers ({KERNEL}x{KERNEL}, {CHANNELS} channels) -> {N_CLASSES} "
          f"classes; batch {batch}, float32, Adam")
    print(f"one training step (forward + backward + Adam), ms per model; best of {reps} "
          f"x {steps} steps; {fl / 1e9:.2f} GFLOP of convs per model and step\n")
    print(f"{'M':>3} {'stack':>8} {'loop':>8} {'loop CL':>8} {'loop/stack':>11} "
          f"{'loop CL/stack':>14} {'stack GFLOP/s':>14}")
    for m in sizes:
        idx = batches(n, m, batch)
        runs = {"stack": stack_step(m, x, y, idx), "loop": loop_step(m, x, y, idx),
                "loop CL": loop_step(m, x, y, idx, channels_last=True)}
        for step in runs.values():  # warm-up: allocator, oneDNN primitives, Adam state
            step()
        best = dict.fromkeys(runs, float("inf"))
        for _ in range(reps):  # interleaved, so load changes hit every variant alike
            for name, step in runs.items():
                best[name] = min(best[name], mean_seconds(step, steps) / m)
        s, lp, lc = best["stack"], best["loop"], best["loop CL"]
        print(f"{m:>3} {s * 1e3:8.1f} {lp * 1e3:8.1f} {lc * 1e3:8.1f} {lp / s:10.2f}x "
              f"{lc / s:13.2f}x {fl / s / 1e9:14.1f}", flush=True)
        del runs
    print("\nloop: single CNNs in PyTorch's default (NCHW) memory format; loop CL: the same "
          "in channels-last, the stack's format.")


if __name__ == "__main__":
    main()
