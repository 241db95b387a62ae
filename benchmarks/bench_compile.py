"""Does ``torch.compile`` pay on the CPU for the trainer's hidden layers?

The hidden stack of the paper's network, written as the trainer computes it (per layer:
``bmm`` on the transposed sample-major view, the layout copy, the native BatchNorm over
M·width channels, LeakyReLU, the dropout multiply), 7 layers of width 100, forward and
backward, one thread, float32. The same function eager and compiled by inductor (the
default backend: it fuses the elementwise passes into generated C++), timed in the same
run, alternating; prints ms per step and the ratio eager / compiled (> 1: compiling pays)
and the time of the first compilation. Compiling needs a C++ compiler at run time and
changes the rounding (fused passes), so it would have to win clearly to be worth it.

    python benchmarks/bench_compile.py                 # full batch, M = 2, and batch 20, M = 64
    python benchmarks/bench_compile.py --shape 80 16
"""

from __future__ import annotations

import argparse
import time

import torch
import torch.nn.functional as F

WIDTH, DEPTH, SLOPE, DROPOUT = 100, 7, 0.2, 0.1


def hidden_stack(x, weights, gammas, betas, means, variances, masks):
    """The trainer's hidden layers on ``x`` (B, M, width) -> a scalar loss."""
    b, m, n = x.shape
    h = x
    for i in range(len(weights)):
        z = torch.bmm(h.transpose(0, 1), weights[i])  # (M, B, n)
        u = z.transpose(0, 1).reshape(b, m * n)  # (B, M·n)
        u = F.batch_norm(u, means[i], variances[i], gammas[i], betas[i], True, 0.1, 1e-5)
        h = F.leaky_relu(u.view(b, m, n), SLOPE) * masks[i]
    return (h * h).mean()


def inputs(batch: int, models: int) -> tuple:
    g = torch.Generator().manual_seed(0)
    channels = models * WIDTH

    def leaf(t):
        return t.requires_grad_()

    return (
        torch.randn(batch, models, WIDTH, generator=g),
        [leaf(torch.randn(models, WIDTH, WIDTH, generator=g) / WIDTH ** 0.5)
         for _ in range(DEPTH)],
        [leaf(torch.ones(channels)) for _ in range(DEPTH)],
        [leaf(torch.zeros(channels)) for _ in range(DEPTH)],
        [torch.zeros(channels) for _ in range(DEPTH)],
        [torch.ones(channels) for _ in range(DEPTH)],
        [(torch.rand(batch, models, WIDTH, generator=g) > DROPOUT).float() / (1 - DROPOUT)
         for _ in range(DEPTH)],
    )


def ms_per_step(f, args, reps: int) -> float:
    for _ in range(3):
        f(*args).backward()
    start = time.perf_counter()
    for _ in range(reps):
        f(*args).backward()
    return (time.perf_counter() - start) / reps * 1e3


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shape", nargs=2, type=int, action="append", metavar=("B", "M"),
                        help="batch size and stack size (repeatable; default 2560 2 and 20 64)")
    parser.add_argument("--rounds", type=int, default=3, help="alternating rounds (default 3)")
    args = parser.parse_args(argv)
    if args.rounds < 1 or any(v < 1 for shape in args.shape or [] for v in shape):
        parser.error("--shape values and --rounds must be >= 1")
    torch.set_num_threads(1)
    for batch, models in args.shape or [(2560, 2), (20, 64)]:
        data = inputs(batch, models)
        reps = max(5, 20_000 // (batch * models))
        compiled = torch.compile(hidden_stack)
        start = time.perf_counter()
        compiled(*data).backward()
        first = time.perf_counter() - start
        print(f"B = {batch}, M = {models} (first compilation {first:.0f} s)")
        for r in range(args.rounds):
            eager, fused = ms_per_step(hidden_stack, data, reps), ms_per_step(compiled, data, reps)
            print(f"  round {r}: eager {eager:.1f} ms/step, compiled {fused:.1f} ms/step, "
                  f"eager / compiled {eager / fused:.2f}")
        torch._dynamo.reset()


if __name__ == "__main__":
    main()
