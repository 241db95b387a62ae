"""Run the test suite under other CPU kernels, as a second machine would.

    python -m tests.portability                    # every setting below, the whole suite
    python -m tests.portability baseline -- -x tests/dnnphase/training/test_train.py

A second machine differs from this one in which kernels its libraries pick: the SIMD width
of PyTorch's vectorised loops (AVX-512, AVX2, the 128-bit baseline an ARM machine's NEON
resembles), MKL's matrix-multiply branch, OpenBLAS's core type for numpy, the instructions
numba compiles the chain's kernels for, and the thread count that splits each reduction.
Each lever below is checked to change the bits of a matmul, a sum or a BatchNorm on this
machine (``--show`` prints their hashes), so a test that asserts bit-for-bit equality
across two different kernels fails here under one of them instead of on a user's machine.
docs/portability.md has the results.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import subprocess
import sys
import time

SETTINGS: dict[str, dict[str, str]] = {
    "native": {},
    # PyTorch's loops at the baseline vector width, MKL's conditional-reproducibility
    # branch, OpenBLAS's SSE3 kernels and numba compiled for a generic x86-64.
    "baseline": {"ATEN_CPU_CAPABILITY": "default", "MKL_CBWR": "COMPATIBLE",
                 "OPENBLAS_CORETYPE": "Prescott", "NUMBA_CPU_NAME": "generic"},
    # An AVX2 machine (no AVX-512) with one thread for every pool.
    "avx2-one-thread": {"ATEN_CPU_CAPABILITY": "avx2", "OPENBLAS_CORETYPE": "Haswell",
                        "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1",
                        "OPENBLAS_NUM_THREADS": "1", "NUMBA_NUM_THREADS": "1"},
}

_PROBE = """
import hashlib, numpy as np, torch
g = torch.Generator().manual_seed(0)
a, b = torch.randn(333, 517, generator=g), torch.randn(517, 129, generator=g)
x = torch.randn(1000, 77, generator=g)
r = np.random.default_rng(0)
p, q = r.standard_normal((300, 500)), r.standard_normal((500, 100))
h = lambda v: hashlib.sha1(np.ascontiguousarray(v).tobytes()).hexdigest()[:8]
print(torch.backends.cpu.get_cpu_capability(), 'torch mm', h((a @ b).numpy()),
      'sum', h(x.sum(0).numpy()),
      'batch_norm', h(torch.nn.functional.batch_norm(x, None, None, training=True).numpy()),
      'numpy dot', h(p @ q))
"""


def environment(name: str) -> dict[str, str]:
    env = dict(os.environ)
    env.update(SETTINGS[name])
    return env


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("settings", nargs="*", metavar="SETTING",
                        help=f"which settings, of {', '.join(SETTINGS)} (default: all)")
    parser.add_argument("--show", action="store_true",
                        help="print each setting's kernel hashes instead of running tests")
    args, pytest_args = parser.parse_known_args(argv)
    if pytest_args and pytest_args[0] == "--":
        pytest_args = pytest_args[1:]
    unknown = sorted(set(args.settings) - set(SETTINGS))
    if unknown:
        parser.error(f"settings must be among {', '.join(SETTINGS)}, got {', '.join(unknown)}")
    names = args.settings or list(SETTINGS)
    failed = 0
    for name in names:
        env = environment(name)
        if args.show:
            out = subprocess.run([sys.executable, "-c", _PROBE], env=env, check=True,
                                 capture_output=True, text=True).stdout.strip()
            print(f"{name:>16}: {out}")
            continue
        start = time.perf_counter()
        run = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                              *pytest_args], env=env, capture_output=True, text=True)
        last = (run.stdout.strip().splitlines() or ["(no output)"])[-1]
        print(f"{name:>16} ({time.perf_counter() - start:4.0f} s): {last}", flush=True)
        if run.returncode:
            failed += 1
            digest = hashlib.sha1(run.stdout.encode()).hexdigest()[:8]
            log = f"portability-{name}-{digest}.log"
            with open(log, "w") as f:
                f.write(run.stdout + run.stderr)
            print(f"{'':>16}  output in {log}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
