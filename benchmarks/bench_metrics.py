"""Separation measures of a sweep chunk: numpy reference vs batched torch.

    python benchmarks/bench_metrics.py [--models 16] [--layers 8] [--repeat 3] [--no-busy]
                                       [--two-threads]

Times the four default measures (trace ratio, fuzziness, CDNV, NCC) of M
models × L+1 layers of (2560, 100) float32 features, as a sweep chunk produces
them: ``dnnphase.measures.separation_numpy.load_curve`` (the numpy reference, one model and one
measure at a time) against ``dnnphase.measures.separation_torch.measure_layers`` (all models,
layers and measures in one call), on one thread, idle and while another
process keeps one core busy. ``--two-threads`` adds runs with 2 threads for
numpy's BLAS and torch (torch's measures pin themselves to one CPU thread;
numpy's BLAS does not, and can take minutes on a loaded machine). Prints
seconds (best of ``--repeat``) and the speed-up over the reference measured in
the same run; checks that both agree. With CUDA, also times the GPU.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time

import numpy as np
import torch
from threadpoolctl import threadpool_limits

from dnnphase import metrics, separation
from phasecore.commandline import integer

MEASURES = separation.DEFAULT_MEASURES


def chunk_features(n_models: int, n_layers: int, n: int = 2560, d: int = 100, k: int = 10,
                   seed: int = 0):
    """Clustered float32 features [h_0..h_L], each (M, N, d), and labels (N,)."""
    g = torch.Generator().manual_seed(seed)
    y = torch.arange(n) % k
    layers = [torch.randn(n_models, n, d, generator=g)
              + (0.5 + ell) * torch.randn(n_models, k, d, generator=g)[:, y]
              for ell in range(n_layers)]
    return layers, y


def best_time(fn, repeat: int, sync=lambda: None) -> tuple[float, object]:
    out, best = None, np.inf
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn()
        sync()
        best = min(best, time.perf_counter() - t0)
    return best, out


def numpy_reference(layers, y):
    return np.stack([metrics.load_curve(layers, y, m) for m in MEASURES], axis=1)


def time_both(layers, y, threads: int, repeat: int) -> tuple[float, float]:
    torch.set_num_threads(threads)
    with threadpool_limits(threads):
        t_ref, ref = best_time(lambda: numpy_reference(layers, y), repeat)
        t_new, new = best_time(lambda: separation.measure_layers(layers, y, MEASURES), repeat)
    np.testing.assert_allclose(new.numpy(), ref, rtol=1e-9, atol=1e-9)
    return t_ref, t_new


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--models", type=integer(1), default=16, help="models in the chunk, >= 1")
    p.add_argument("--layers", type=integer(1), default=8, help="layers per model, >= 1")
    p.add_argument("--repeat", type=integer(1), default=3, help="timings kept the best of, >= 1")
    p.add_argument("--no-busy", action="store_true", help="skip the runs beside a busy core")
    p.add_argument("--two-threads", action="store_true", help="also run with 2 threads")
    args = p.parse_args()
    layers, y = chunk_features(args.models, args.layers)
    print(f"{args.models} models x {args.layers} layers x (2560, 100) float32, "
          f"measures {', '.join(MEASURES)}")
    print(f"{'setting':28s} {'numpy ref':>10s} {'torch':>10s} {'speed-up':>9s}")
    threads = (1, 2) if args.two_threads else (1,)
    loads = ("idle",) if args.no_busy else ("idle", "other core busy")
    settings = [(load, t) for load in loads for t in threads]
    for load, threads in settings:
        busy = (subprocess.Popen([sys.executable, "-c", "while True: pass"])
                if load != "idle" else None)
        try:
            t_ref, t_new = time_both(layers, y, threads, args.repeat)
        finally:
            if busy is not None:
                busy.kill()
                busy.wait()
        label = f"{load}, {threads} thread{'s' if threads > 1 else ''}"
        print(f"{label:28s} {t_ref:9.3f}s {t_new:9.3f}s {t_ref / t_new:8.1f}x")
    if torch.cuda.is_available():
        gpu = [h.cuda() for h in layers]
        yg = y.cuda()
        separation.measure_layers(gpu, yg, MEASURES)  # warm-up
        t_gpu, _ = best_time(lambda: separation.measure_layers(gpu, yg, MEASURES),
                             args.repeat, torch.cuda.synchronize)
        print(f"{'CUDA':28s} {'':>10s} {t_gpu:9.3f}s")


if __name__ == "__main__":
    main()
