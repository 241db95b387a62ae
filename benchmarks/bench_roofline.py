"""Roofline of the batched trainer on one CPU thread: achieved GFLOP/s and where a step goes.

For each configuration (the paper's knobs at their shapes, and the batch sizes at several
stack sizes M) :func:`dnnphase.training.train.train_ensemble` trains one stack of M models on
random data of the paper's shapes (7 hidden layers of width 100 + the output Linear to 10
classes, 100 inputs, Adam, float32; early stopping off, so every step runs), and this
prints, all measured in this run (never asserted: the machine may be shared):

* **roofline**: seconds per step, seconds per model-epoch and model-epochs per second
  (an epoch of the paper's 2560 samples, i.e. 2560/B steps; divide by the number of
  epochs for models per second), the matmul FLOPs of a step (forward, input gradient and
  weight gradient of all 8 Linear maps; the first has no input gradient), the achieved
  GFLOP/s = FLOPs / step time, and the rate of ``torch.bmm`` / ``torch.baddbmm`` alone on
  exactly the trainer's shapes and layouts (forward (M, B, in) x (M, in, out), input
  gradient (M, B, out) x (M, out, in), weight gradient (M, in, B) x (M, B, out); see
  :func:`bmm_seconds`), measured right after the configuration's training; their
  ratio is the fraction of the bmm rate.
* **profile**: ``torch.profiler`` over a few steps of a separate short run; self CPU
  time grouped into matmul, the fused hidden layer (BatchNorm + LeakyReLU + dropout in
  one kernel each way, :mod:`dnnphase.networks.fused_layer`), BatchNorm (the input's, or all of
  them with ``--native-layers``), activation, dropout masks, label + data noise,
  optimizer, loss, other ops, and "Python + untracked" (the profiled wall time minus
  the ops' self times), in percent of the profiled step. The groups come from the op
  names (``aten::bmm``, ``NativeBatchNormBackward0``, ...) and, for code that calls
  generic ops (the masks' int64 hash, the noise, the optimizer, the activation, the
  BatchNorm wrapper and the loss's row means), from ``record_function`` ranges that this
  benchmark wraps around ``DropoutMasks.__call__`` / ``kept``, ``loop.corrupt_batch``,
  ``StackedOptimizer.step``, ``EnsembleMLP._act`` / ``_bn`` and ``loop.row_mean`` for the
  profiled run only (monkeypatched at run time and restored; ``dnnphase`` is not
  edited). An op belongs to its outermost enclosing group (the select / copy ops
  inside ``aten::bmm`` count as matmul). With ``--native-layers`` the dropout multiply
  ``h * mask`` and its backward are "other ops" (the masks group is making the masks).
* **ceilings**: the most each row could reach while the matmuls stay torch's: its
  matmuls at the bmm rate plus the memory traffic no such design avoids — Adam's 28
  bytes per parameter and step, and BatchNorm's two passes each way (its batch
  statistics are needed before anything can be normalised), each where its working set
  outgrows one core's L2 — at the copy rate measured in this run at the step's working
  set (activations saved for backward and optimizer state), everything else free.
* **fused layer**: the step time of a few configurations with the fused CPU layer and
  with PyTorch's operations one by one (``stack.FUSED_CPU_LAYERS = False``), alternated
  twice in this run, and their ratio.

Timing: ``TrainingStack._epoch`` is wrapped with a timer; the first epoch (allocations,
warm-up) is dropped and the fastest later epoch, divided by its steps, is the step time
(initialisation and final evaluation are not counted). At full batch an epoch is one
step. Small batches train on a shortened training set (``n_train`` below, e.g. 320
samples at batch 5) so that a few epochs take seconds; B is the real batch size, and a
step does the same work whatever N is (the per-epoch data order is a sort of N
indices, counted per step in proportion). The bmm rate is the best of a few repeats,
taken right after each configuration, so both see about the same machine load; on a
shared machine read the ratios, not the absolute rates.

Usage::

    python benchmarks/bench_roofline.py            # full run, a few minutes
    python benchmarks/bench_roofline.py --quick    # fewer configurations, < 1 minute
    python benchmarks/bench_roofline.py --mixed-alpha   # six LeakyReLU slopes per stack
    python benchmarks/bench_roofline.py --native-layers # PyTorch's ops, not the fused layer
"""

from __future__ import annotations

import argparse
import resource
import time
from collections import defaultdict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import torch
from threadpoolctl import threadpool_limits
from torch.profiler import ProfilerActivity, profile, record_function

from dnnphase.networks import stack as stack_module
from dnnphase.networks.architecture import Architecture
from dnnphase.networks.randomness import DropoutMasks
from dnnphase.networks.stack import EnsembleMLP
from dnnphase.training import loop as loop_module
from dnnphase.training.loop import TrainingStack
from dnnphase.training.optim import StackedOptimizer
from dnnphase.training.train import TrainConfig, default_stack_size, train_ensemble

D_IN, N_CLASSES, DEPTH, WIDTH = 100, 10, 7, 100
N_PAPER = 2560  # the paper's training set: an epoch is N_PAPER / B steps
CPU = torch.device("cpu")
GROUPS = ("matmul", "fused", "batchnorm", "activation", "masks", "noise", "optimizer", "loss",
          "other")


# ------------------------------------------------------------------ configurations

@dataclass(frozen=True)
class Case:
    """One configuration: a stack of M models at batch size B."""

    knob: str  # the row's label
    batch: int
    m: int | None  # models in the stack; None: default_stack_size (the trainer's choice)
    n_train: int  # training samples (B = n_train: full batch)
    epochs: int  # trained epochs; the first is not timed
    dropout: float = 0.0
    noise: float = 0.0  # label + data noise q
    lrs: tuple[float, ...] = ()  # per-model learning rates, cycled; (): TrainConfig's

    @property
    def stack(self) -> int:
        return self.m or default_stack_size(self.batch, max(WIDTH, D_IN), 1 << 30, CPU)

    @property
    def m_label(self) -> str:
        return f"{self.stack} (default)" if self.m is None else str(self.m)


def cases(quick: bool) -> list[Case]:
    if quick:
        return [
            Case("dropout p=0.1", 2560, None, 2560, 3, dropout=0.1),
            Case("batch size", 2560, None, 2560, 3),
            Case("batch size", 20, 16, 320, 2),
            Case("batch size", 20, None, 320, 2),
            Case("batch size", 5, 16, 160, 2),
            Case("batch size", 5, None, 160, 2),
        ]
    full = [
        Case("dropout p=0.1", 2560, None, 2560, 5, dropout=0.1),
        Case("learning rate (2 lrs/stack)", 2560, None, 2560, 5, lrs=(1e-3, 1e-2)),
        Case("label+data noise q=0.4", 2560, None, 2560, 5, noise=0.4),
        Case("batch size", 2560, None, 2560, 5),
        Case("batch size", 320, None, 2560, 3),
        Case("batch size", 80, 16, 1280, 3),
        Case("batch size", 80, None, 1280, 3),
    ]
    for b, n in ((20, 640), (5, 320)):
        full += [Case("batch size", b, m, n, 3) for m in (16, 64, 128)]
        full.append(Case("batch size", b, None, n, 3))  # 256 at B = 5 and 20
    return full


# ------------------------------------------------------------------ data, FLOPs, training

def make_data(n: int, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    """Random inputs (n, 100) and labels in [0, 10) (as benchmarks/bench_train.py)."""
    g = torch.Generator().manual_seed(seed)
    return torch.randn(n, D_IN, generator=g), torch.randint(0, N_CLASSES, (n,), generator=g)


def dims() -> list[int]:
    return [D_IN] + [WIDTH] * DEPTH + [N_CLASSES]


def step_flops(batch: int) -> float:
    """Matmul FLOPs of one model's training step: forward and weight gradient of every
    Linear map, input gradient of all but the first (the data needs no gradient)."""
    d = dims()
    macs = [d[i] * d[i + 1] for i in range(DEPTH + 1)]
    return 2.0 * batch * (2 * sum(macs) + sum(macs[1:]))


def train(case: Case, x: torch.Tensor, y: torch.Tensor, epochs: int, alpha: str) -> None:
    m = case.stack
    cfg = TrainConfig(epochs=epochs, batch_size=case.batch, loss_threshold=0.0, rel_tol=0.0,
                      device="cpu", stack_size=m, cpu_threads=1)
    lr = [case.lrs[i % len(case.lrs)] for i in range(m)] if case.lrs else None
    slopes = [i % 6 / 5 for i in range(m)] if alpha == "mixed" else 0.0
    train_ensemble(x, y, seeds=list(range(m)), alpha=slopes, dropout=case.dropout, lr=lr,
                   label_noise=case.noise, network=Architecture(depth=DEPTH, width=WIDTH),
                   config=cfg)


@contextmanager
def patched(owner: object, name: str, make: Callable[[Callable], Callable]) -> Iterator[None]:
    """``owner.name`` replaced by ``make(original)`` inside the block (run-time only)."""
    original = getattr(owner, name)
    setattr(owner, name, make(original))
    try:
        yield
    finally:
        setattr(owner, name, original)


def _minor_faults() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt


def step_seconds(case: Case, alpha: str) -> tuple[float, int, float]:
    """(seconds per step, steps timed, minor page faults per step): the fastest epoch
    after the first, per step; the page faults (fresh memory from the kernel, zeroed
    page by page) are the mean over the timed epochs."""
    x, y = make_data(case.n_train)
    times: list[float] = []
    faults: list[int] = []

    def make(original):
        def _epoch(self, epoch):
            f0, t0 = _minor_faults(), time.perf_counter()
            out = original(self, epoch)
            times.append(time.perf_counter() - t0)
            faults.append(_minor_faults() - f0)
            return out
        return _epoch

    with patched(TrainingStack, "_epoch", make):
        train(case, x, y, case.epochs, alpha)
    steps = case.n_train // case.batch
    timed, timed_faults = (times[1:], faults[1:]) if len(times) > 1 else (times, faults)
    return min(timed) / steps, len(timed) * steps, sum(timed_faults) / (len(timed) * steps)


# ------------------------------------------------------------------ the bmm reference

def bmm_seconds(m: int, b: int, repeats: int) -> float:
    """Seconds for the 23 matmuls of one training step of m models at batch b alone, on
    the trainer's layouts: the input BatchNorm's output sample-major (B, M, d) read as a
    (M, B, d) view; with the fused CPU layer (``stack.FUSED_CPU_LAYERS``, the default)
    the hidden activations and their gradients model-major (M, B, F), contiguous;
    without it sample-major (B, M, F) read as views, as the gradients of the
    pre-activations (they come back through the reshape); weights (M, in, out), the
    output map as baddbmm with its bias, the logits' gradient a contiguous (M, B, C)."""
    d = dims()
    fused = stack_module.FUSED_CPU_LAYERS

    def layout(f: int) -> torch.Tensor:
        return torch.randn(m, b, f) if fused else torch.randn(b, m, f).transpose(0, 1)

    hs = [torch.randn(b, m, d[0]).transpose(0, 1)] + [layout(d[i]) for i in range(1, DEPTH + 1)]
    gs = [layout(d[i + 1]) for i in range(DEPTH)]
    gs.append(torch.randn(m, b, N_CLASSES))
    ws = [torch.randn(m, d[i], d[i + 1]) for i in range(DEPTH + 1)]
    bias = torch.randn(m, 1, N_CLASSES)

    def step() -> None:
        for i in range(DEPTH + 1):
            if i < DEPTH:
                torch.bmm(hs[i], ws[i])  # forward
            else:
                torch.baddbmm(bias, hs[i], ws[i])
            torch.bmm(hs[i].transpose(1, 2), gs[i])  # weight gradient (M, in, B)(M, B, out)
            if i > 0:
                torch.bmm(gs[i], ws[i].transpose(1, 2))  # input gradient

    step()
    est = step_flops(b) * m / 40e9
    reps = max(1, round(0.03 / est))
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        for _ in range(reps):
            step()
        best = min(best, (time.perf_counter() - t0) / reps)
    return best


# ------------------------------------------------------------------ the profile

RANGES = {"bench::masks": "masks", "bench::noise": "noise", "bench::optimizer": "optimizer",
          "bench::activation": "activation", "bench::batchnorm": "batchnorm",
          "bench::loss": "loss"}
_MATMUL_OPS = {"aten::bmm", "aten::baddbmm", "aten::mm", "aten::addmm", "aten::matmul"}
_EVAL_PREFIX = "autograd::engine::evaluate_function: "


def group_of_name(name: str) -> str | None:
    """The group an event's own name puts it in (None: decided by its parents or other)."""
    n = name.removeprefix(_EVAL_PREFIX)
    if n in RANGES:
        return RANGES[n]
    low = n.lower()
    if n in _MATMUL_OPS or (n.startswith(("Bmm", "Baddbmm", "Mm", "Addmm", "Matmul"))
                            and "Backward" in n):
        return "matmul"
    if "normactdropout" in low:  # the fused CPU layer (dnnphase.networks.fused_layer), both ways
        return "fused"
    if "batch_norm" in low or "batchnorm" in low:
        return "batchnorm"
    if "leaky_relu" in low or "leakyrelu" in low:  # LeakyReluBackward0, LeakyReLUPerModel...
        return "activation"
    if "adam" in low or "_foreach" in low:
        return "optimizer"
    if any(k in low for k in ("cross_entropy", "log_softmax", "logsoftmax", "nll_loss",
                              "nllloss")):
        return "loss"
    return None


def group_of(event) -> str:
    """The outermost group among the event and its CPU parents; "other" if none."""
    chain = []
    while event is not None:
        chain.append(event)
        event = event.cpu_parent
    for e in reversed(chain):
        g = group_of_name(e.name)
        if g is not None:
            return g
    return "other"


def _ranged(label: str) -> Callable[[Callable], Callable]:
    def make(original):
        def wrapper(*args, **kwargs):
            with record_function(label):
                return original(*args, **kwargs)
        return wrapper
    return make


@dataclass
class Profile:
    wall: float  # seconds per profiled step (profiler on)
    groups: dict[str, float]  # seconds per step by group, "untracked" included
    top_other: list[tuple[str, float]]  # the largest "other" ops, seconds per step


def profile_case(case: Case, alpha: str, warm: int, n_prof: int) -> Profile:
    """Profile steps warm .. warm + n_prof − 1 of a short run (windows from the start of
    one step to the start of the next, so the loop's code between steps counts)."""
    full = case.batch == case.n_train
    n = case.n_train if full else case.batch * (warm + n_prof + 1)
    epochs = warm + n_prof + 1 if full else 1
    x, y = make_data(n)
    state: dict = {"k": 0, "prof": None, "t0": 0.0, "wall": 0.0}

    def make_step(original):
        def _step(self, idx, keys):
            k = state["k"]
            state["k"] += 1
            if k == warm:
                state["prof"] = profile(activities=[ProfilerActivity.CPU])
                state["prof"].start()
                state["t0"] = time.perf_counter()
            elif k == warm + n_prof:
                state["wall"] = time.perf_counter() - state["t0"]
                state["prof"].stop()
            return original(self, idx, keys)
        return _step

    with (patched(TrainingStack, "_step", make_step),
          patched(DropoutMasks, "__call__", _ranged("bench::masks")),
          patched(DropoutMasks, "kept", _ranged("bench::masks")),
          patched(loop_module, "corrupt_batch", _ranged("bench::noise")),
          patched(loop_module, "row_mean", _ranged("bench::loss")),
          patched(StackedOptimizer, "step", _ranged("bench::optimizer")),
          patched(EnsembleMLP, "_act", _ranged("bench::activation")),
          patched(EnsembleMLP, "_bn", _ranged("bench::batchnorm"))):
        train(case, x, y, epochs, alpha)
    groups: dict[str, float] = defaultdict(float)
    other: dict[str, float] = defaultdict(float)
    for e in state["prof"].events():
        g = group_of(e)
        s = e.self_cpu_time_total * 1e-6 / n_prof
        groups[g] += s
        if g == "other":
            other[e.name.removeprefix(_EVAL_PREFIX)] += s
    wall = state["wall"] / n_prof
    groups["untracked"] = wall - sum(groups.values())
    top = sorted(other.items(), key=lambda kv: -kv[1])[:3]
    return Profile(wall, dict(groups), top)


# ------------------------------------------------------------------ report

@dataclass
class Row:
    case: Case
    step: float  # seconds per step (unprofiled)
    steps: int  # steps timed
    faults: float  # minor page faults per step
    bmm: float  # seconds of the step's matmuls alone
    prof: Profile

    @property
    def flops(self) -> float:
        return step_flops(self.case.batch) * self.case.stack

    @property
    def model_epoch(self) -> float:
        """Seconds per model and epoch of N_PAPER samples."""
        return self.step * (N_PAPER / self.case.batch) / self.case.stack


def roofline_table(rows: list[Row]) -> str:
    out = ["| knob | B | M | ms/step | s/model-epoch | model-epochs/s | MFLOP/step "
           "| GFLOP/s | bmm GFLOP/s | % of bmm | page faults/step |",
           "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        gf, gf_bmm = r.flops / r.step / 1e9, r.flops / r.bmm / 1e9
        out.append(f"| {r.case.knob} | {r.case.batch} | {r.case.m_label} | {1e3 * r.step:.2f} "
                   f"| {r.model_epoch:.3g} | {1 / r.model_epoch:.3g} | {r.flops / 1e6:.0f} "
                   f"| {gf:.1f} | {gf_bmm:.1f} | {100 * r.bmm / r.step:.0f} % | {r.faults:.0f} |")
    return "\n".join(out)


def profile_table(rows: list[Row]) -> str:
    heads = ["matmul", "fused BN + act + dropout", "BatchNorm (input's only, when fused)",
             "activation", "masks", "noise", "optimizer", "loss", "other ops",
             "Python + untracked"]
    out = ["| knob | B | M | profiled ms/step (× unprofiled) | " + " | ".join(heads)
           + " | largest other ops (ms/step) |",
           "|---|---:|---:|---:|" + "---:|" * len(heads) + "---|"]
    for r in rows:
        p = r.prof
        pct = [100 * p.groups.get(g, 0.0) / p.wall for g in GROUPS + ("untracked",)]
        top = ", ".join(f"{name.removeprefix('aten::')} {1e3 * s:.2f}" for name, s in p.top_other)
        out.append(f"| {r.case.knob} | {r.case.batch} | {r.case.m_label} | {1e3 * p.wall:.2f} "
                   f"(× {p.wall / r.step:.2f}) | " + " | ".join(f"{v:.0f}" for v in pct)
                   + f" | {top} |")
    return "\n".join(out)


def scaling_table(rows: list[Row]) -> str:
    """Model-epochs/s against M, relative to M = 16 (today's CPU chunk cap), per batch."""
    out = ["| B | M | ms/step | model-epochs/s | × M = 16 | matmul share of the step "
           "(bmm alone / step) |", "|---:|---:|---:|---:|---:|---:|"]
    for b in sorted({r.case.batch for r in rows}):
        group = sorted((r for r in rows if r.case.batch == b and r.case.knob == "batch size"),
                       key=lambda r: r.case.stack)
        base = next((r for r in group if r.case.stack == 16), None)
        if len(group) < 2 or base is None:
            continue
        for r in group:
            out.append(f"| {b} | {r.case.m_label} | {1e3 * r.step:.2f} | {1 / r.model_epoch:.3g} "
                       f"| {base.model_epoch / r.model_epoch:.2f} | {100 * r.bmm / r.step:.0f} % |")
    return "\n".join(out)


def goals(rows: list[Row]) -> str:
    def pick(knob, b, m=None):
        return next((r for r in rows if r.case.knob.startswith(knob) and r.case.batch == b
                     and (m is None and r.case.m is None or r.case.stack == m)), None)

    lines = []
    r = pick("dropout", 2560)
    if r:
        lines.append(f"* full batch + dropout 0.1 (M = {r.case.stack}): "
                     f"{100 * r.bmm / r.step:.0f} % of the bmm rate (goal >= 85 %)")
    for m in (16, None):
        r = pick("batch size", 20, m)
        if r:
            lines.append(f"* batch 20, M = {r.case.m_label}: {100 * r.bmm / r.step:.0f} % of "
                         f"the bmm rate (goal >= 50 %)")
    base = pick("batch size", 5, 16)
    if base:
        best = max((r for r in rows if r.case.batch == 5), key=lambda r: 1 / r.model_epoch)
        lines.append(f"* batch 5: M = 16 (today's CPU chunk) {1 / base.model_epoch:.3g} "
                     f"model-epochs/s -> goal {5 / base.model_epoch:.3g}; best here "
                     f"M = {best.case.stack}: {1 / best.model_epoch:.3g} "
                     f"(x {base.model_epoch / best.model_epoch:.2f})")
    return "\n".join(lines)


def stream_rate(megabytes: float, seconds: float = 0.2) -> float:
    """Bytes per second one core moves (read + write) copying a float32 array of
    ``megabytes`` MiB into another (``Tensor.copy_``, the best of ~``seconds`` of copies):
    the memory rate of a working set of twice that size. On this machine's 2 cores it is
    ~28 GB/s up to ~32 MiB in all, ~14 GB/s beyond 64 (memory rather than cache)."""
    a = torch.randn(max(1, int(megabytes * 2**20 / 4)))
    b = torch.empty_like(a)
    best, spent = float("inf"), 0.0
    while spent < seconds or best == float("inf"):
        t0 = time.perf_counter()
        b.copy_(a)
        took = time.perf_counter() - t0
        best, spent = min(best, took), spent + took
    return 2 * a.numel() * 4 / best


def parameters_per_model() -> int:
    return sum(p.numel() for p in EnsembleMLP.init(1, D_IN, N_CLASSES, seeds=[0], depth=DEPTH,
                                                   width=WIDTH).parameters())


#: Bytes Adam moves per parameter and step: reads p, g, m, v; writes p, m, v (float32).
ADAM_BYTES = 7 * 4
#: Hidden-layer activations of the size of z a training step must move per layer when
#: BatchNorm's batch statistics are not in cache: forward reads z twice (statistics,
#: then normalisation) and writes h; backward reads g and z twice (Σgy and Σgy·x̂, then
#: the input gradient) and writes dz.
BN_PASSES = 3 + 5


def l2_bytes() -> int:
    """One core's L2 cache in bytes (Linux sysfs; 1 MiB where it cannot be read)."""
    try:
        with open("/sys/devices/system/cpu/cpu0/cache/index2/size") as f:
            text = f.read().strip()
        scale = {"K": 2**10, "M": 2**20}.get(text[-1], 1)
        return int(text.rstrip("KM")) * scale
    except (OSError, ValueError):
        return 2**20


def working_set(m: int, b: int, n_params: int) -> int:
    """Bytes a step of M models at batch B keeps live: every hidden layer's z, h and
    mask byte (saved for backward) and the optimizer's state (p, g, m, v)."""
    return DEPTH * m * b * WIDTH * (4 + 4 + 1) + 16 * n_params * m


def ceilings(rows: list[Row], l2: int) -> str:
    """What the goals allow at best: the matmuls at the bmm rate measured in this run
    plus the memory traffic no design that keeps the matmuls in the BLAS can avoid, at
    the copy rate measured in this run for the step's working set
    (:func:`working_set`); everything else (masks, loss, Python, the fused layer's
    arithmetic) counted as free. Traffic counts only where its own data outgrow ``l2``
    bytes: a layer's input and output (the bmm writes z while reading h), the
    optimizer's state."""
    n_params = parameters_per_model()
    lines = [f"L2 {l2 / 2**20:g} MiB per core; {n_params} parameters per model; Adam "
             f"{ADAM_BYTES} B per parameter and step; a hidden layer's BatchNorm {BN_PASSES} "
             f"passes of z per step; copy rate measured at each step's working set"]
    for r in rows:
        m, b = r.case.stack, r.case.batch
        live = working_set(m, b, n_params)
        rate = stream_rate(live / 2**21)
        adam = ADAM_BYTES * n_params * m / rate if 16 * n_params * m > l2 else 0.0
        z_bytes = 4 * m * b * WIDTH
        bn = DEPTH * BN_PASSES * z_bytes / rate if 2 * z_bytes > l2 else 0.0
        best = r.bmm / (r.bmm + adam + bn)
        steps = N_PAPER / b
        lines.append(f"* {r.case.knob}, B = {b}, M = {r.case.m_label}: measured "
                     f"{100 * r.bmm / r.step:.0f} % of the bmm rate, ceiling "
                     f"{100 * best:.0f} % (working set {live / 2**20:.0f} MiB, "
                     f"{rate / 1e9:.0f} GB/s: Adam {1e3 * adam:.2f} ms + BatchNorm's "
                     f"traffic {1e3 * bn:.2f} ms per step against {1e3 * r.bmm:.2f} ms of "
                     f"matmuls); model-epochs/s measured {1 / r.model_epoch:.3g}, at most "
                     f"{m / (steps * (r.bmm + adam + bn)):.3g}")
    return "\n".join(lines)


def fused_cases(quick: bool) -> list[Case]:
    base = [Case("dropout p=0.1", 2560, None, 2560, 4, dropout=0.1),
            Case("batch size", 2560, None, 2560, 4)]
    if quick:
        return base + [Case("batch size", 20, 64, 640, 2)]
    return base + [Case("label+data noise q=0.4", 2560, None, 2560, 4, noise=0.4),
                   Case("batch size", 80, 16, 1280, 3), Case("batch size", 20, 64, 640, 3),
                   Case("batch size", 5, 16, 320, 3)]


def fused_table(case_list: list[Case], alpha: str) -> str:
    """Step time with and without the fused CPU layer, the two alternated twice (the
    faster of each pair of runs), and their ratio."""
    out = ["| knob | B | M | PyTorch's ops ms/step | fused ms/step | speed-up |",
           "|---|---:|---:|---:|---:|---:|"]
    old = stack_module.FUSED_CPU_LAYERS
    try:
        for case in case_list:
            best = {True: float("inf"), False: float("inf")}
            for _ in range(2):
                for fused in (False, True):
                    stack_module.FUSED_CPU_LAYERS = fused
                    best[fused] = min(best[fused], step_seconds(case, alpha)[0])
            out.append(f"| {case.knob} | {case.batch} | {case.m_label} | "
                       f"{1e3 * best[False]:.2f} | {1e3 * best[True]:.2f} | "
                       f"{best[False] / best[True]:.2f}x |")
            print(f"  (measured: {case.knob} B={case.batch} M={case.stack}, "
                  f"{best[False] / best[True]:.2f}x)", flush=True)
    finally:
        stack_module.FUSED_CPU_LAYERS = old
    return "\n".join(out)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="fewer configurations, < 1 minute")
    ap.add_argument("--mixed-alpha", action="store_true",
                    help="six LeakyReLU slopes 0, 0.2, ..., 1 per stack (the per-model "
                         "activation) instead of alpha = 0 for all")
    ap.add_argument("--native-layers", action="store_true",
                    help="PyTorch's operations one by one for BatchNorm, LeakyReLU and "
                         "dropout instead of the fused CPU layer (dnnphase.networks.fused_layer)")
    args = ap.parse_args()
    alpha = "mixed" if args.mixed_alpha else "uniform"
    stack_module.FUSED_CPU_LAYERS = not args.native_layers
    torch.set_num_threads(1)
    with threadpool_limits(limits=1):
        train(Case("warm-up", 32, 2, 256, 2, dropout=0.1, noise=0.1), *make_data(256), 2, alpha)
        layers = "PyTorch's operations" if args.native_layers else "the fused CPU layer"
        print(f"torch {torch.__version__}, 1 thread; {DEPTH} hidden layers of {WIDTH} "
              f"(+ output to {N_CLASSES}), d = {D_IN}, Adam, float32, alpha {alpha}, "
              f"{layers}; model-epoch = 2560 samples\n", flush=True)
        rows = []
        repeats = 3 if args.quick else 5
        for case in cases(args.quick):
            t0 = time.perf_counter()
            step, steps, faults = step_seconds(case, alpha)
            bmm = bmm_seconds(case.stack, case.batch, repeats)
            full = case.batch == case.n_train
            prof = profile_case(case, alpha, warm=1 if full else 3,
                                n_prof=2 if full else (3 if args.quick else 5))
            rows.append(Row(case, step, steps, faults, bmm, prof))
            print(f"{case.knob:<28} B={case.batch:<5} M={case.stack:<4} n_train={case.n_train:<5}"
                  f" {steps:4d} steps timed: {1e3 * step:8.2f} ms/step, bmm alone "
                  f"{1e3 * bmm:7.2f} ms ({time.perf_counter() - t0:.1f} s)", flush=True)
    print("\n#### Achieved GFLOP/s against bmm at the same shapes\n")
    print(roofline_table(rows))
    print("\n#### Where a step's time goes (% of the profiled step)\n")
    print(profile_table(rows))
    print("\n#### Stacking at small batch\n")
    print(scaling_table(rows))
    print("\n#### Against the goals (docs/performance.md: >= 85 % of bmm at full batch with "
          "dropout, >= 50 % at batch 20, 5x the model-epochs/s of M = 16 at batch 5)\n")
    print(goals(rows))
    print("\n#### Ceilings: the matmuls at the bmm rate plus the memory traffic they cannot "
          "avoid\n")
    with threadpool_limits(limits=1):
        print(ceilings(rows, l2_bytes()))
    print("\n#### The fused CPU layer against PyTorch's operations (same run)\n")
    with threadpool_limits(limits=1):
        print(fused_table(fused_cases(args.quick), alpha))


if __name__ == "__main__":
    main()
