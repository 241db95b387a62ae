"""What a chain run will cost, known before it starts: memory and time.

* Memory (:func:`simulate_memory`, :func:`phase_memory`): the bytes a run
  will hold at its peak, as a sum of :class:`Need` s, each named by the
  parameter that sets it (blocks, seeds, record_every, the grid, ...).
  :func:`check_memory` refuses, before any work, a run that needs more than
  the machine has available, with the one-line ConfigError the network side
  uses too (:func:`phasecore.checks.check_memory`), naming the parameter of
  the largest need; :func:`check_phase_memory` names ``workers`` (and how many
  fit) where a process pool does not fit but one worker would.
* Time (:func:`simulate_seconds`, :func:`phase_seconds`): the kernels' work
  at the measured throughput below, the mean-drift prediction, and numba's
  compilation of every kernel not yet compiled in this process or cached on
  disk (on first use: seconds, more than a short run itself).
  :func:`announce` prints it when the run will take long.

The constants were measured on the development machine (2 cores,
``benchmarks/bench_chain.py`` and ``/usr/bin/time``); they only have to be
right within a factor of ~2: a long run's progress lines (:mod:`springblock.runner`)
then give the ETA from the rate it measures itself.
"""

from __future__ import annotations

import functools
import math
import os
import sys
from dataclasses import dataclass
from pathlib import Path

import numba

from phasecore.checks import check_memory as phasecore_check_memory
from phasecore.checks import check_run_time, host_available_memory
from phasecore.executors import busy_load, core_share
from phasecore.progress import say
from springblock import theory
from springblock.algorithm import LONG_HORIZON, choose_algorithm, expected_events, resolved_steps
from springblock.config import ChainConfig

__all__ = ["COMPILE_SECONDS", "WORKER_BYTES", "announce", "available_memory", "check_memory",
           "check_phase_memory", "check_time", "describe", "phase_memory", "phase_seconds",
           "simulate_memory", "simulate_seconds"]

# --- memory -------------------------------------------------------------------------------

#: 8-byte words held per chain and load-curve point (state, labels, curvature fits).
WORDS_PER_CHAIN_POINT = 16
#: ... per recorded chain state and point (the kernel's records and their labelled copies).
WORDS_PER_RECORD_POINT = 4
#: ... per block for the mean-drift prediction (its Runge-Kutta stages and temporaries).
WORDS_PER_THEORY_BLOCK = 12
#: ... per chain, layer and cell of an assembled phase diagram (arrays, chunks, Dataset).
WORDS_PER_DIAGRAM_POINT = 4
#: A process-pool worker's own memory before its first chunk (a fresh interpreter with
#: numpy, xarray, numba and the kernels): ~210 MB resident measured with 20 workers,
#: counted low so that the estimate never refuses a pool that fits.
WORKER_BYTES = 160 * 2**20


def available_memory() -> float | None:
    """Bytes this process may still allocate: the machine's available memory
    (:func:`phasecore.checks.host_available_memory`), capped by a container's own limit
    (cgroup v2) where one is set. None where nothing can be read (then nothing is refused).
    """
    found = [host_available_memory()]
    try:
        limit = Path("/sys/fs/cgroup/memory.max").read_text().strip()
        used = Path("/sys/fs/cgroup/memory.current").read_text().strip()
        if limit != "max":
            found.append(float(limit) - float(used))
    except (OSError, ValueError):
        pass
    found = [f for f in found if f is not None]
    return min(found) if found else None


@dataclass
class Need:
    """One part of a run's memory: ``what`` needs ``bytes``; ``name`` is the parameter
    that sets it and ``hint`` how to need less."""

    name: str
    what: str
    bytes: float
    hint: str


def check_memory(needs: list[Need], available: float | None = None) -> None:
    """Refuse a run whose needs add up to more than the memory available, before any work:
    one line (:func:`phasecore.checks.check_memory`) naming the parameter of the largest."""
    available = available_memory() if available is None else available
    largest = max(needs, key=lambda need: need.bytes)
    phasecore_check_memory(largest.name, sum(need.bytes for need in needs), available,
                           largest.what, largest.hint)


def _records(cfg: ChainConfig) -> int:
    return int(cfg.steps // cfg.record_every + 1) if cfg.record_every else 0


def _theory_words(cfg: ChainConfig, with_theory: bool) -> float:
    return WORDS_PER_THEORY_BLOCK * cfg.blocks if with_theory else 0.0


def simulate_memory(cfg: ChainConfig, n_seeds: int, with_theory: bool) -> list[Need]:
    """Peak memory of :func:`springblock.simulate`, by the parameters that set it."""
    points = cfg.blocks + 1
    chains = f"{n_seeds} chain(s) of {cfg.blocks} blocks"
    needs = [Need("blocks" if cfg.blocks >= n_seeds else "seeds", chains,
                  8.0 * WORDS_PER_CHAIN_POINT * n_seeds * points, "fewer blocks or seeds"),
             Need("blocks", f"the mean-drift prediction for {cfg.blocks} blocks",
                  8.0 * _theory_words(cfg, with_theory),
                  "fewer blocks, or skip it: --no-theory, theory_prediction=False")]
    if cfg.record_every:
        needs.append(Need("record_every", f"{_records(cfg)} recorded states of {chains}",
                          8.0 * WORDS_PER_RECORD_POINT * n_seeds * _records(cfg) * points,
                          "a larger record_every, or fewer seeds or blocks"))
    return needs


def _chunk_chains(chains_per_chunk: int, n_seeds: int) -> int:
    """Chains of a phase-diagram chunk: whole cells, at least one cell's seeds."""
    return max(chains_per_chunk // n_seeds, 1) * n_seeds


def phase_memory(cfg: ChainConfig, n_cells: int, n_seeds: int, chains_per_chunk: int,
                 workers: int, with_theory: bool, processes: bool = False) -> list[Need]:
    """Peak memory of :func:`springblock.phase_diagram`: the assembled diagram, and one
    chunk per worker; with ``processes`` (a process pool of ``workers``) each worker's
    own WORKER_BYTES too."""
    chunk_chains = _chunk_chains(chains_per_chunk, n_seeds)
    points = cfg.blocks + 1
    per_chunk = (WORDS_PER_CHAIN_POINT * chunk_chains * points
                 + WORDS_PER_RECORD_POINT * chunk_chains * _records(cfg) * points
                 # a chunk's cells are integrated side by side (ensemble.predict_many)
                 + _theory_words(cfg, with_theory) * max(1, chunk_chains // max(n_seeds, 1)))
    needs = [Need("rows x cols x seeds", f"a diagram of {n_cells} cells x {n_seeds} seeds x "
                  f"{cfg.blocks} blocks",
                  8.0 * WORDS_PER_DIAGRAM_POINT * n_cells * n_seeds * (cfg.blocks + 4),
                  "a smaller grid, or fewer seeds or blocks"),
             Need("chains_per_chunk", f"{workers} chunk(s) of {chunk_chains} chains of "
                  f"{cfg.blocks} blocks", 8.0 * per_chunk * workers,
                  "fewer chains per chunk, workers or blocks")]
    if processes:
        needs.append(Need("workers", f"{workers} pool worker(s) of "
                          f"{WORKER_BYTES / 2**30:.2g} GiB of their own", WORKER_BYTES * workers,
                          "fewer workers"))
    return needs


def check_phase_memory(cfg: ChainConfig, n_cells: int, n_seeds: int, chains_per_chunk: int,
                       workers: int, with_theory: bool, processes: bool,
                       available: float | None = None) -> None:
    """:func:`check_memory` of :func:`phase_memory`, before any work; where the diagram
    fits with one worker but not with ``workers``, the error names ``workers`` and says how
    many fit. ``available``: bytes (default: this machine's, :func:`available_memory`)."""
    available = available_memory() if available is None else available
    needs = phase_memory(cfg, n_cells, n_seeds, chains_per_chunk, workers, with_theory,
                         processes)
    total = sum(need.bytes for need in needs)
    if workers > 1 and available is not None and total > available:
        diagram = needs[0].bytes
        fit = int((available - diagram) // ((total - diagram) / workers))
        if fit >= 1:
            own = f" and {WORKER_BYTES / 2**30:.2g} GiB of its own" if processes else ""
            phasecore_check_memory(
                "workers", total, available,
                f"{workers} workers, each with a chunk of "
                f"{_chunk_chains(chains_per_chunk, n_seeds)} chains of {cfg.blocks} "
                f"blocks{own},", f"use at most {fit} workers: --workers {fit}")
    check_memory(needs, available)


# --- time -------------------------------------------------------------------------------------

#: Block-steps per second and thread of the step kernels (Gaussian, independent noise; CPU
#: seconds measured on the 2-core Xeon of the README, L = 7, 8-64 chains: overdamped
#: 1.7-2.1e8, second order 1.2e8, Langevin 1.35e8).
STEP_RATE = {"overdamped": 2.0e8, "second_order": 1.2e8, "langevin": 1.35e8}
#: ... of the legacy Mersenne-Twister kernel (serial).
LEGACY_RATE = 4.0e7
#: Events per second and thread of the event-driven kernels (L = 7), and the seconds an
#: event costs per block besides (each event scans every block for the next move).
EVENT_RATE, EVENT_BLOCK_SECONDS = 3.5e6, 2e-9
#: Events a chain that ends frozen makes on its way (~2.6e5 at L = 7, b = 0.01; docs/events.md).
FROZEN_EVENTS = 3.0e5
#: Seconds to compile each kernel from scratch (numba; the events kernels share helpers).
COMPILE_SECONDS = {"overdamped_slice": 5.0, "second_order_slice": 4.0, "langevin_slice": 4.5,
                   "overdamped_legacy": 1.0, "independent_slice": 12.0,
                   "synchronous_slice": 12.0}
#: ... to load one from numba's cache on disk.
CACHED_SECONDS = 0.2
#: Mean-drift prediction: seconds per Runge-Kutta step, and per step and block (measured: the
#: 48 cells of the README's diagram in 4.9-7.7 CPU seconds, T = 1000, L = 7).
THEORY_STEP_SECONDS, THEORY_BLOCK_SECONDS = 8e-5, 1.7e-7
#: ... integrated in log time (horizons > 1e4): seconds, and per block.
THEORY_LOGTIME_SECONDS, THEORY_LOGTIME_BLOCK_SECONDS = 0.05, 6e-5
#: Seconds a process-pool worker takes to start (a fresh interpreter importing the package).
WORKER_START_SECONDS = 2.0
#: A run expected to take at least this long says so before it starts.
ANNOUNCE_SECONDS = 10.0


def kernel_names(cfg: ChainConfig) -> list[str]:
    """The kernels that run ``cfg`` (``auto``: the one it picks)."""
    if choose_algorithm(cfg) == "events":
        return ["synchronous_slice" if cfg.noise_sharing == "synchronous"
                else "independent_slice"]
    if cfg.rng == "legacy":
        return ["overdamped_legacy"]
    return [f"{cfg.dynamics}_slice"]


def _is_cached(kernel) -> bool:
    """Does numba's disk cache hold this kernel? (False where numba's layout is unknown.)"""
    try:
        return bool(kernel._cache._cache_file._load_index())
    except Exception:  # noqa: BLE001 (a private numba API: assume it compiles)
        return False


def compile_seconds(names, here: bool = True) -> float:
    """Seconds until the named kernels can run: 0 for those compiled in this process (if
    they run ``here``, not in a fresh worker), a load from numba's disk cache, or a
    compilation from scratch (first use)."""
    from springblock import dynamics, events

    total = 0.0
    for name in dict.fromkeys(names):
        kernel = getattr(dynamics, name, None) or getattr(events, name)
        if here and kernel.signatures:
            continue
        total += CACHED_SECONDS if _is_cached(kernel) else COMPILE_SECONDS[name]
    return total


def chain_seconds(cfg: ChainConfig, algorithm: str | None = None) -> float:
    """Thread-seconds the kernels need for one chain of ``cfg`` (``algorithm``: forced)."""
    algorithm = algorithm or choose_algorithm(cfg)
    steps = resolved_steps(cfg)
    if algorithm == "events":
        n = FROZEN_EVENTS if math.isinf(steps) else expected_events(cfg, steps)
        return n * (1.0 / EVENT_RATE + EVENT_BLOCK_SECONDS * cfg.blocks)
    if cfg.rng == "legacy":
        return cfg.blocks * steps / LEGACY_RATE
    return cfg.blocks * steps / STEP_RATE[cfg.dynamics]


def theory_seconds(cfg: ChainConfig, with_theory: bool, side_by_side: int = 1) -> float:
    """Seconds of the mean-drift prediction at the horizon (overdamped chains only), for
    ``side_by_side`` parameter sets of this horizon integrated in one call (their steps
    are shared: each set adds only its blocks' arithmetic); in log time, one call a set."""
    if not with_theory or cfg.dynamics != "overdamped" or cfg.steps == math.inf:
        return 0.0
    if cfg.horizon > LONG_HORIZON:
        return side_by_side * (THEORY_LOGTIME_SECONDS + THEORY_LOGTIME_BLOCK_SECONDS * cfg.blocks)
    rk4_steps = cfg.horizon * cfg.modulus * theory.laplacian_extremes(cfg.blocks)[1] / 2.5
    return (rk4_steps + 50) * (THEORY_STEP_SECONDS
                               + THEORY_BLOCK_SECONDS * cfg.blocks * side_by_side)


def _chunked_theory_seconds(cells: list[ChainConfig], per_chunk: int,
                            with_theory: bool) -> float:
    """The prediction's seconds over chunks of ``per_chunk`` cells, each chunk integrating
    its cells of one horizon and chain side by side (:func:`ensemble.predict_many`)."""
    total = 0.0
    for start in range(0, len(cells), per_chunk):
        together: dict[tuple, list[ChainConfig]] = {}
        for cfg in cells[start:start + per_chunk]:
            key = (cfg.blocks, cfg.horizon, cfg.modulus, cfg.steps == math.inf)
            together.setdefault(key, []).append(cfg)
        total += sum(theory_seconds(group[0], with_theory, len(group))
                     for group in together.values())
    return total


@dataclass
class Estimate:
    """Seconds a run is expected to take, by part."""

    kernels: float
    compile: float
    theory: float
    note: str = ""
    #: Threads the kernels run on: the seconds above are an idle machine's; what is
    #: printed is divided by the share of a core each gets beside other work (:attr:`share`).
    threads: int = 1

    @property
    def total(self) -> float:
        """Seconds on an idle machine (what the year's limit is checked against)."""
        return self.kernels + self.compile + self.theory

    @functools.cached_property
    def load(self) -> float:
        """Other work on this machine's cores, measured (:func:`phasecore.executors.busy_load`,
        0.2 s) when a run may be announced."""
        return 0.0 if self.total < 1.0 else busy_load()

    @property
    def share(self) -> float:
        """The share of a core each of the kernels' threads gets beside the other work."""
        return core_share(self.threads, os.cpu_count() or 1, self.load)

    @property
    def on_this_machine(self) -> tuple[float, float, float]:
        """(kernels, compile, theory) seconds here: the kernels on their threads, the
        compilation and the prediction on one (each part divided by its share of a core)."""
        one = core_share(1, os.cpu_count() or 1, self.load)
        return self.kernels / self.share, self.compile / one, self.theory / one


def simulate_seconds(cfg: ChainConfig, n_seeds: int, with_theory: bool,
                     threads: int | None = None) -> Estimate:
    """:func:`springblock.simulate`'s run time; ``note`` names a much faster algorithm."""
    threads = min(threads or numba.get_num_threads(), n_seeds) or 1
    per_chain = chain_seconds(cfg)
    note = ""
    if cfg.algorithm == "steps" and not cfg.event_driven_obstacle():
        faster = chain_seconds(cfg, "events")
        if faster < per_chain / 10:
            note = (f"--algorithm auto (algorithm='auto') would take about "
                    f"{format_seconds(faster * n_seeds / threads)}")
    return Estimate(per_chain * n_seeds / threads, compile_seconds(kernel_names(cfg)),
                    theory_seconds(cfg, with_theory), note,
                    threads)


def phase_seconds(cells: list[ChainConfig], n_seeds: int, scheduler: str, workers: int | None,
                  with_theory: bool, per_chunk: int | None = None) -> Estimate:
    """:func:`springblock.phase_diagram`'s run time: every cell's chains and prediction,
    spread over the kernels' threads (serial) or the pool's workers (one thread each);
    ``per_chunk`` cells a chunk (default all), whose predictions run side by side."""
    if scheduler == "serial":
        parallel = numba.get_num_threads()
    else:
        parallel = workers or os.cpu_count() or 1
    parallel = max(1, min(parallel, len(cells) * n_seeds))
    kernels = sum(chain_seconds(cfg) for cfg in cells) * n_seeds / parallel
    names = [name for cfg in cells for name in kernel_names(cfg)]
    here = scheduler == "serial"  # else fresh workers start, and compile or load side by side
    start = compile_seconds(names, here) + (0.0 if here else WORKER_START_SECONDS)
    theory_total = _chunked_theory_seconds(cells, per_chunk or max(len(cells), 1), with_theory)
    return Estimate(kernels, start, theory_total / (1 if scheduler == "serial" else parallel),
                    "", parallel)


def format_seconds(seconds: float) -> str:
    """``"~40 s"``, ``"~6 min"``, ``"~39 h"``, ``"~12 days"``."""
    if not math.isfinite(seconds):
        return "forever"
    for unit, size in (("days", 86400.0), ("h", 3600.0), ("min", 60.0)):
        if seconds >= 2 * size:
            return f"~{seconds / size:.3g} {unit}"
    return f"~{seconds:.2g} s" if seconds < 10 else f"~{seconds:.0f} s"


def describe(label: str, estimate: Estimate) -> str:
    """One line: the expected run time and its parts, on this machine as busy as it is."""
    kernels, compile_, theory_ = estimate.on_this_machine
    here = kernels + compile_ + theory_
    parts = [f"the kernels {format_seconds(kernels)}"]
    if compile_ >= 1:
        parts.append(f"numba compilation on first use {format_seconds(compile_)}")
    if theory_ >= 1:
        parts.append(f"the mean-drift prediction {format_seconds(theory_)}")
    if here > 1.05 * estimate.total:
        parts.append(f"{here / estimate.total:.2g}x an idle machine's: other work keeps the "
                     "cores busy")
    line = (f"{label}: expected run time {format_seconds(here)} ({', '.join(parts)})")
    return line + (f"; {estimate.note}" if estimate.note else "")


def check_time(label: str, estimate: Estimate) -> None:
    """Refuse, before any work and quiet or not, a run beyond a year (naming steps, whose
    count sets the kernels' time: ``--steps 1e30`` with events was ~1e17 days)."""
    check_run_time("steps", estimate.total, label,
                   "fewer steps or seeds; --steps inf (steps=math.inf) with --algorithm "
                   "events or auto gives the stationary state at once")


def announce(label: str, estimate: Estimate, stream=None) -> None:
    """Print :func:`describe` on stderr if the run will take ANNOUNCE_SECONDS or more."""
    if sum(estimate.on_this_machine) >= ANNOUNCE_SECONDS:
        say(describe(label, estimate), stream or sys.stderr)  # (above a progress bar)
