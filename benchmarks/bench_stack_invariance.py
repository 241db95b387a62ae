"""What bitwise stack invariance costs: each change against the code it replaced, same run.

Two computations make a model's numbers independent of its stack-mates on a CPU
(docs/performance.md, "Stack invariance"); each is timed here against what it replaced,
switched within this run (A and B alternate, best of ``--repeats``, 1 thread):

* MLP without BatchNorm (``norm`` "none" or "scale"): the hidden biases' gradient summed
  per model (:class:`dnnphase.networks.per_model.AddBiasPerModel`) against autograd's
  ``(B, M·n)`` column sum of a plain ``u + bias``;
* CNN: every model's conv and BatchNorm calls alone
  (:data:`dnnphase.networks.cnn.PER_MODEL_CPU` True) against one grouped call per layer
  for the whole stack (False).

Printed: seconds per model of one :func:`~dnnphase.training.train.train_ensemble` call
(epochs as listed, early stopping off), and the ratio invariant / replaced (> 1: slower).
Never asserted: the machine is shared.

Usage::

    python benchmarks/bench_stack_invariance.py            # about 3 minutes on 1 core
    python benchmarks/bench_stack_invariance.py --quick    # about 30 s
"""

from __future__ import annotations

import argparse
import time
from contextlib import contextmanager

import torch

from dnnphase.networks import cnn, stack
from dnnphase.networks.architecture import Architecture
from dnnphase.training.train import TrainConfig, train_ensemble


def make_data(n: int, d: int, classes: int = 10, seed: int = 0):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(n, d, generator=g), torch.randint(0, classes, (n,), generator=g)


class _PlainBias:
    """The replaced bias: ``u + bias``, whose gradient autograd sums over (B, M·n)."""

    @staticmethod
    def apply(u, bias, n_models):
        return u + bias


@contextmanager
def replaced(kind: str, on: bool):
    """Run the block with the invariant computation (``on``) or the one it replaced."""
    if kind == "bias":
        saved = stack.AddBiasPerModel
        stack.AddBiasPerModel = saved if on else _PlainBias
        try:
            yield
        finally:
            stack.AddBiasPerModel = saved
    else:
        saved = cnn.PER_MODEL_CPU
        cnn.PER_MODEL_CPU = on
        try:
            yield
        finally:
            cnn.PER_MODEL_CPU = saved


def seconds_per_model(x, y, net, n_models, epochs, batch, stack_size, image_shape=None):
    cfg = TrainConfig(epochs=epochs, batch_size=batch, loss_threshold=0.0, rel_tol=0.0,
                      device="cpu", stack_size=stack_size)
    t0 = time.perf_counter()
    train_ensemble(x, y, seeds=list(range(n_models)), dropout=0.1, network=net, config=cfg,
                   image_shape=image_shape)
    return (time.perf_counter() - t0) / n_models


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer epochs and cases")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    torch.set_num_threads(1)
    q = args.quick
    mlp_x, mlp_y = make_data(2560, 100)
    digits_x, digits_y = make_data(600, 64)
    img_x, img_y = make_data(1280, 100)
    cases = [
        # (label, kind, data, network, models, epochs, batch, stack size, image shape)
        ("MLP norm=none, 5 x 100, full batch (Fig. 5a), M=16", "bias", (mlp_x, mlp_y),
         Architecture(depth=5, width=100, norm="none"), 16, 3 if q else 20, None, 16, None),
        ("MLP norm=scale, 7 x 100, batch 20, M=16", "bias", (mlp_x, mlp_y),
         Architecture(depth=7, width=100, norm="scale"), 16, 1, 20, 16, None),
        ("CNN 4 x 8 ch, 8 x 8, batch 100 (quick preset), M=10", "cnn", (digits_x, digits_y),
         Architecture(arch="cnn", depth=4, channels=8), 10, 1 if q else 3, 100, 10, (1, 8, 8)),
        ("CNN 7 x 16 ch, 10 x 10, batch 256, M=8", "cnn", (img_x, img_y),
         Architecture(arch="cnn", depth=7, channels=16), 8, 1, 256, 8, (1, 10, 10)),
    ]
    if not q:
        cases.append(("CNN 7 x 16 ch, 10 x 10, full batch 1280, M=4", "cnn", (img_x, img_y),
                      Architecture(arch="cnn", depth=7, channels=16), 4, 1, None, 4,
                      (1, 10, 10)))
    print(f"{'case':55s} {'replaced':>10s} {'invariant':>10s} {'ratio':>6s}  (s per model)")
    for label, kind, (x, y), net, m, epochs, batch, size, shape in cases:
        best = {True: float("inf"), False: float("inf")}
        for _ in range(args.repeats):
            for on in (False, True):
                with replaced(kind, on):
                    best[on] = min(best[on], seconds_per_model(x, y, net, m, epochs, batch,
                                                               size, shape))
        print(f"{label + f', {epochs} ep':55s} {best[False]:10.3f} {best[True]:10.3f} "
              f"{best[True] / best[False]:6.2f}", flush=True)


if __name__ == "__main__":
    main()
