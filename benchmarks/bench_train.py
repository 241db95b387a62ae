"""Speed of the batched trainer against one-model-at-a-time training, on CPU and GPU.

Paper configuration: 7 hidden layers + output (8 Linear maps), width 100, 100
inputs, 10 classes, 2560 samples, Adam, 100 epochs; random data (speed does not
depend on the values; early stopping is switched off so every run takes every
step). Everything on 1 thread (``torch.set_num_threads(1)``): per-core numbers,
the unit in which a sweep over the machine's cores scales.

Printed, all measured in this run (never asserted: the machine is shared):

* seconds per model for 100 epochs: the plain loop (``MLP`` + ``torch.optim.Adam``,
  one model at a time) and :func:`dnnphase.training.train.train_ensemble` with M = 16 and
  64 models, at full batch and at batch size 20, with dropout 0 and 0.1; the
  speed-up is baseline time / trainer time. Rows marked "×k" ran 1/k of the
  epochs and are scaled by k (steps are identical, so time is linear in epochs;
  the trainer's one-off initialisation and final evaluation get scaled too,
  a slight overestimate).
* GFLOP/s: matmul FLOPs of a training step (forward, weight and input
  gradients) divided by its time, against the same matmuls alone (torch.bmm at
  the trainer's shapes and layouts).
* the share of a sweep chunk's time spent measuring the layers
  (:func:`dnnphase.measures.separation_torch.measure_layers`, all four default measures) after
  training, when that module is installed.
* GPU (only when CUDA is present): models per second at M = 96 and 960 (full batch,
  dropout 0.1, as Fig. 1c), achieved FLOP/s against a bmm at the same shapes, the
  metrics' share of the time; at batch 20 and 5 and M = 16, 160, 960 the time per step
  with and without CUDA graphs (same run); the float64 load curves of the same models
  trained on the CPU and on CUDA (dropout and noise on), and of one stack against stacks
  of 3 on CUDA. See docs/performance.md.

Usage::

    python benchmarks/bench_train.py              # full run, a few minutes
    python benchmarks/bench_train.py --quick      # smaller sizes, < 1 minute
    python benchmarks/bench_train.py --gpu-only   # the GPU section alone, ~2 minutes
"""

from __future__ import annotations

import argparse
import time

import torch
import torch.nn.functional as F

from dnnphase.networks.architecture import Architecture
from dnnphase.networks.mlp import MLP
from dnnphase.training.train import TrainConfig, default_stack_size, train_ensemble

D_IN, N_CLASSES = 100, 10


def make_data(n: int, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    return torch.randn(n, D_IN, generator=g), torch.randint(0, N_CLASSES, (n,), generator=g)


def baseline_seconds(x, y, *, epochs, batch_size, dropout, depth, width, n_models=1,
                     fused=False) -> float:
    """Plain loop: one nn.Module MLP at a time, torch.optim.Adam. Seconds per model."""
    n = x.shape[0]
    t0 = time.perf_counter()
    for m in range(n_models):
        torch.manual_seed(m)
        model = MLP(D_IN, N_CLASSES, depth=depth, width=width, dropout=dropout)
        opt = torch.optim.Adam(model.parameters(), lr=1e-3, fused=fused or None)
        order = torch.Generator().manual_seed(m)
        for _ in range(epochs):
            perm = torch.arange(n) if batch_size == n else torch.randperm(n, generator=order)
            for s in range(n // batch_size):
                idx = perm[s * batch_size : (s + 1) * batch_size]
                opt.zero_grad()
                F.cross_entropy(model(x[idx]), y[idx]).backward()
                opt.step()
        model.eval()
        with torch.no_grad():
            model(x)
    return (time.perf_counter() - t0) / n_models


def trainer_seconds(x, y, *, epochs, batch_size, dropout, depth, width, n_models,
                    stack_size=None, alpha=0.0) -> tuple[float, int]:
    """train_ensemble on n_models models. Seconds per model and the stack size used."""
    cfg = TrainConfig(epochs=epochs, batch_size=batch_size, loss_threshold=0.0, rel_tol=0.0,
                      device="cpu", stack_size=stack_size)
    t0 = time.perf_counter()
    train_ensemble(x, y, seeds=list(range(n_models)), alpha=alpha, dropout=dropout,
                   network=Architecture(depth=depth, width=width), config=cfg)
    dt = (time.perf_counter() - t0) / n_models
    if stack_size is None:
        stack_size = default_stack_size(batch_size, max(width, D_IN), n_models,
                                                    torch.device("cpu"))
    return dt, stack_size


def step_flops(batch: int, depth: int, width: int) -> float:
    """Matmul FLOPs of one training step of one model: forward, weight gradients,
    and input gradients (none for the first layer: the data needs no gradient)."""
    dims = [D_IN] + [width] * depth + [N_CLASSES]
    macs = [dims[i] * dims[i + 1] for i in range(depth + 1)]
    return 2.0 * batch * (2 * sum(macs) + sum(macs[1:]))


def _sync(device: str) -> None:
    if device.startswith("cuda"):
        torch.cuda.synchronize()


def matmul_seconds(m: int, batch: int, depth: int, width: int, reps: int,
                   device: str = "cpu") -> float:
    """The matmuls of one training step of m stacked models alone (trainer layout:
    activations (B, M, F), weights (M, in, out)). Seconds per step."""
    dims = [D_IN] + [width] * depth + [N_CLASSES]
    hs = [torch.randn(batch, m, dims[i], device=device) for i in range(depth + 1)]
    gs = [torch.randn(m, batch, dims[i + 1], device=device) for i in range(depth + 1)]
    ws = [torch.randn(m, dims[i], dims[i + 1], device=device) for i in range(depth + 1)]

    def step():
        for i in range(depth + 1):
            h_t = hs[i].transpose(0, 1)  # (M, B, in)
            torch.bmm(h_t, ws[i])  # forward
            torch.bmm(h_t.transpose(1, 2), gs[i])  # weight gradient
            if i > 0:
                torch.bmm(gs[i], ws[i].transpose(1, 2))  # input gradient

    step()
    best = float("inf")
    for _ in range(3):
        _sync(device)
        t0 = time.perf_counter()
        for _ in range(reps):
            step()
        _sync(device)
        best = min(best, (time.perf_counter() - t0) / reps)
    return best


def metrics_seconds(result, y) -> float | None:
    """Seconds to measure every layer of every model of ``result`` with the four default
    measures, on the training device; None without :mod:`dnnphase.measures.separation_torch`."""
    try:
        from dnnphase import separation
    except ImportError:
        return None
    dev = str(result.device)
    feats = result.features(on_device=True)
    _sync(dev)
    t0 = time.perf_counter()
    separation.measure_layers(feats, y.to(result.device), separation.DEFAULT_MEASURES)
    _sync(dev)
    return time.perf_counter() - t0


def timed_training(x, y, *, n_models, epochs, dropout, device, depth=7, width=100):
    """(seconds, result) of one train_ensemble call (full batch, early stopping off)."""
    cfg = TrainConfig(epochs=epochs, loss_threshold=0.0, rel_tol=0.0, device=device)
    _sync(device)
    t0 = time.perf_counter()
    res = train_ensemble(x, y, seeds=list(range(n_models)), dropout=dropout,
                         network=Architecture(depth=depth, width=width), config=cfg)
    _sync(device)
    return time.perf_counter() - t0, res


def metrics_share(label: str, train_s: float, result, y) -> None:
    t = metrics_seconds(result, y)
    if t is None:
        print(f"{label}: dnnphase.measures.separation_torch not available, metrics share skipped")
        return
    print(f"{label}: training {train_s:.2f} s, metrics {t:.2f} s "
          f"-> {100 * t / (train_s + t):.1f} % of the chunk in metrics", flush=True)


def device_consistency(depth: int, width: int) -> None:
    """CPU vs CUDA in float64 with dropout and label + data noise: the random numbers are
    the same integers on both, so the load curves should agree to ~1e-10."""
    from dnnphase import metrics

    x, y = make_data(1000, seed=1)
    kw = dict(seeds=list(range(8)), dropout=0.2, label_noise=0.2, batch_size=100,
              network=Architecture(depth=depth, width=width))
    curves = []
    for dev in ("cpu", "cuda"):
        cfg = TrainConfig(epochs=15, dtype=torch.float64, device=dev, loss_threshold=0.0,
                          rel_tol=0.0)
        res = train_ensemble(x.double(), y, **kw, config=cfg)
        curves.append(metrics.load_curve([f.numpy() for f in res.features()], y.numpy()))
    diff = abs(curves[0] - curves[1]).max()
    print(f"CPU vs CUDA, float64, dropout 0.2 + label noise 0.2, 8 models x 15 epochs: "
          f"load curves max |diff| = {diff:.1e} (target <= 1e-10)", flush=True)


def gpu_section(quick: bool, depth: int, width: int) -> None:
    """Models per second, achieved FLOP/s and metrics share on one CUDA device."""
    if not torch.cuda.is_available():
        print("\n--- GPU: no CUDA device, section skipped")
        return
    dev = "cuda"
    n, epochs = 2560, (5 if quick else 100)
    x, y = (t.to(dev) for t in make_data(n))  # resident on the device
    print(f"\n--- GPU {torch.cuda.get_device_name()}: full batch ({n}), dropout 0.1, "
          f"{epochs} epochs, float32")
    timed_training(x, y, n_models=4, epochs=2, dropout=0.1, device=dev)  # warm-up
    fl = step_flops(n, depth, width)
    for m in (96, 960):
        secs, res = timed_training(x, y, n_models=m, epochs=epochs, dropout=0.1, device=dev)
        per_100 = secs * 100 / epochs
        gf = fl * m * epochs / secs / 1e9
        t_mm = matmul_seconds(m, n, depth, width, reps=3 if m > 100 else 10, device=dev)
        gf_mm = fl * m / t_mm / 1e9
        print(f"M={m:<4} {secs:7.2f} s  {m / per_100:7.1f} models/s (100 epochs)  "
              f"{gf:8.0f} GFLOP/s  = {100 * gf / gf_mm:4.1f} % of bmm ({gf_mm:.0f} GFLOP/s)",
              flush=True)
        metrics_share(f"M={m}", secs, res, y)
        del res
        torch.cuda.empty_cache()
    small_batches_on_gpu(x, y, quick, depth, width)
    device_consistency(depth, width)
    chunking_on_gpu(depth, width)


def small_batches_on_gpu(x, y, quick: bool, depth: int, width: int) -> None:
    """Launch overhead: at batch 5 and 20 an epoch is 128-512 steps; if the time per step
    is flat in the stack size M, the step is bound by kernel launches, not arithmetic.
    Each row with CUDA graphs (the default) and without (eager steps), same run."""
    from dnnphase.training import loop

    epochs = 1 if quick else 2
    print(f"\n--- GPU small batches, dropout 0.1, {epochs} epochs (seconds per epoch "
          "of the whole stack, and per model); eager = without CUDA graphs")
    for b in (20, 5):
        steps = x.shape[0] // b
        for m in (16, 160, 960):
            row = []
            for graphs in (False, True):
                loop.CUDA_GRAPHS = graphs
                try:
                    cfg = TrainConfig(epochs=epochs, batch_size=b, loss_threshold=0.0,
                                      rel_tol=0.0, device="cuda")
                    _sync("cuda")
                    t0 = time.perf_counter()
                    train_ensemble(x, y, seeds=list(range(m)), dropout=0.1,
                                   network=Architecture(depth=depth, width=width),
                                   config=cfg)
                    _sync("cuda")
                    row.append((time.perf_counter() - t0) / epochs)
                finally:
                    loop.CUDA_GRAPHS = True
            eager, graph = row
            print(f"batch {b:<3} M={m:<4} eager {1e3 * eager / steps:6.2f} ms/step, graphs "
                  f"{1e3 * graph / steps:6.2f} ms/step ({eager / graph:4.1f}x)  "
                  f"{1e3 * graph / m:8.2f} ms per model-epoch", flush=True)
        torch.cuda.empty_cache()


def chunking_on_gpu(depth: int, width: int) -> None:
    """The same 8 models in one stack and in stacks of 3, float64, on CUDA: cuBLAS and
    the BatchNorm kernels may choose reductions by shape, so expect ~1e-12, not 0."""
    from dnnphase import metrics

    x, y = make_data(1000, seed=2)
    curves = []
    for per in (8, 3):
        cfg = TrainConfig(epochs=10, batch_size=100, dtype=torch.float64, device="cuda",
                          loss_threshold=0.0, rel_tol=0.0, stack_size=per)
        res = train_ensemble(x.double(), y, seeds=list(range(8)), dropout=0.2,
                             network=Architecture(depth=depth, width=width), config=cfg)
        curves.append(metrics.load_curve([f.numpy() for f in res.features()], y.numpy()))
    diff = abs(curves[0] - curves[1]).max()
    print(f"CUDA, float64, 8 models as one stack vs stacks of 3: load curves max |diff| = "
          f"{diff:.1e}", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="smaller sizes, < 1 minute")
    ap.add_argument("--gpu-only", action="store_true", help="only the GPU section")
    args = ap.parse_args()
    torch.set_num_threads(1)
    if args.gpu_only:
        gpu_section(args.quick, 7, 100)
        return

    if args.quick:
        n, depth, width, epochs = 2560, 7, 100, 4
        m_small, m_large, small_batch_epochs, scale_large = 4, 16, 1, 2
    else:
        n, depth, width, epochs = 2560, 7, 100, 100
        m_small, m_large, small_batch_epochs, scale_large = 16, 64, 2, 4
    x, y = make_data(n)
    full_epochs = epochs
    # Warm-up (lazy initialisation, allocator, MKL) outside the timings.
    baseline_seconds(x[:256], y[:256], epochs=2, batch_size=32, dropout=0.1, depth=depth,
                     width=width)
    trainer_seconds(x[:256], y[:256], epochs=2, batch_size=32, dropout=0.1, depth=depth,
                    width=width, n_models=2)
    sb = 20
    sb_scale = epochs // small_batch_epochs
    print(f"torch {torch.__version__}, 1 thread; N={n}, depth={depth} (+ output), width={width}, "
          f"d={D_IN}, C={N_CLASSES}, Adam; seconds per model for {epochs} epochs")
    print("Trainer times include initialisation and the final evaluation.\n")

    def report(label, secs, base, flops_per_model_step, steps, note=""):
        gflops = flops_per_model_step * steps / secs / 1e9
        print(f"{label:<46} {secs:8.2f} s/model  speed-up {base / secs:5.2f}x  "
              f"{gflops:6.1f} GFLOP/s  {note}", flush=True)

    for p in (0.0, 0.1):
        print(f"--- full batch ({n}), dropout {p}")
        steps = epochs
        fl = step_flops(n, depth, width)
        base = baseline_seconds(x, y, epochs=full_epochs, batch_size=n, dropout=p, depth=depth,
                                width=width)
        report("baseline: nn.Module + Adam, one at a time", base, base, fl, steps)
        k = 1 if p == 0 else scale_large
        t, per = trainer_seconds(x, y, epochs=epochs // k, batch_size=n, dropout=p,
                                 depth=depth, width=width, n_models=m_small)
        report(f"trainer M={m_small} (auto: stacks of {per})", t * k, base, fl, steps,
               f"x{k}" if k > 1 else "")
        k = scale_large
        t, per = trainer_seconds(x, y, epochs=epochs // k, batch_size=n, dropout=p,
                                 depth=depth, width=width, n_models=m_large)
        report(f"trainer M={m_large} (auto: stacks of {per})", t * k, base, fl, steps, f"x{k}")
        if p == 0:
            t, per = trainer_seconds(x, y, epochs=epochs // k, batch_size=n, dropout=p,
                                     depth=depth, width=width, n_models=m_small,
                                     stack_size=m_small)
            report(f"trainer M={m_small} (one stack of {per})", t * k, base, fl, steps, f"x{k}")

    for p in (0.0, 0.1):
        print(f"--- batch {sb}, dropout {p} (measured over {small_batch_epochs} epochs, "
              f"scaled x{sb_scale} to {epochs})")
        steps = epochs * (n // sb)
        fl = step_flops(sb, depth, width)
        base = sb_scale * baseline_seconds(x, y, epochs=small_batch_epochs, batch_size=sb,
                                           dropout=p, depth=depth, width=width)
        report("baseline: nn.Module + Adam, one at a time", base, base, fl, steps,
               f"x{sb_scale}")
        fused = sb_scale * baseline_seconds(x, y, epochs=small_batch_epochs, batch_size=sb,
                                            dropout=p, depth=depth, width=width, fused=True)
        report("baseline with fused Adam", fused, base, fl, steps, f"x{sb_scale}")
        for m in (m_small, m_large):
            t, per = trainer_seconds(x, y, epochs=small_batch_epochs, batch_size=sb, dropout=p,
                                     depth=depth, width=width, n_models=m)
            report(f"trainer M={m} (stacks of {per})", t * sb_scale, base, fl, steps,
                   f"x{sb_scale}; {fused / (t * sb_scale):.2f}x vs fused baseline")
        if p > 0:
            # A sweep-like stack: six slopes and dropout spread over [0, 2p].
            alphas = [i % 6 / 5 for i in range(m_large)]
            drops = [2 * p * (i // 6 % 4) / 3 for i in range(m_large)]
            t, per = trainer_seconds(x, y, epochs=small_batch_epochs, batch_size=sb,
                                     dropout=drops, depth=depth, width=width, n_models=m_large,
                                     alpha=alphas)
            report(f"trainer M={m_large}, mixed alpha and p (stacks of {per})", t * sb_scale,
                   base, fl, steps, f"x{sb_scale}; {fused / (t * sb_scale):.2f}x vs fused baseline")

    print("\n--- matmul reference (same shapes and layouts, matmuls of one step only)")
    for m, b in ((1, n), (m_small, sb), (m_large, sb)):
        reps = 5 if b == n else 50
        t = matmul_seconds(m, b, depth, width, reps)
        gf = step_flops(b, depth, width) * m / t / 1e9
        print(f"bmm M={m:<3} B={b:<5} {t * 1e3:8.3f} ms/step  {gf:6.1f} GFLOP/s")
    print("\nGFLOP/s of a training row / GFLOP/s of the matching matmul row = the fraction of "
          "matmul speed reached (the rest: BatchNorm, activation, dropout, optimizer, data).")

    print(f"\n--- metrics share on the CPU: {m_small} models, full batch, {epochs} epochs")
    secs, res = timed_training(x, y, n_models=m_small, epochs=epochs, dropout=0.1,
                               device="cpu", depth=depth, width=width)
    metrics_share("CPU", secs, res, y)
    gpu_section(args.quick, depth, width)


if __name__ == "__main__":
    main()
