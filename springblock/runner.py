"""Run the chain kernels in short slices: stoppable, with progress, resumable bit for bit.

A numba kernel runs to its end without returning to Python, and Python runs
signal handlers only between bytecodes: a kernel asked for a whole run of
1e13 steps ignores Ctrl-C and SIGTERM for hours. :func:`run` therefore calls
the kernels in *slices* of about SLICE_SECONDS (so many steps, or so many
events per chain; the size follows the measured speed). The kernels keep
every chain's whole state between calls (:mod:`springblock.dynamics`,
:mod:`springblock.events`), so how a run is cut into slices changes no bit of
its result. Between two slices :func:`run`

* delivers a Ctrl-C or SIGTERM that arrived meanwhile (:class:`Interrupts`:
  during a slice a signal is only noted, so it always lands where the state
  is whole), after writing a checkpoint if it keeps one;
* writes a :class:`Checkpoint` every CHECKPOINT_SECONDS (and at the end of a
  long run): a rerun resumes from it, bit for bit, even after ``kill -9``;
* reports progress (:class:`Report`): nothing for a short run, lines with an
  ETA from the measured rate once a run proves long.

The numba compilation (or loading from numba's cache) happens first, in
:func:`warm_up`, outside the signal deferral: it is Python code that a signal
stops at once.
"""

from __future__ import annotations

import math
import os
import signal
import threading
import time
from dataclasses import dataclass, fields
from pathlib import Path

import numpy as np

from phasecore.progress import Progress
from phasecore.results import OutputExistsError, write_error, write_failed
from springblock import dynamics, events
from springblock.config import ChainConfig
from springblock.randomness import seed_states

__all__ = ["CHECKPOINT_SECONDS", "ChainState", "Checkpoint", "MAX_EVENTS", "Plan", "Report",
           "advance", "fraction_done", "fresh_state", "run"]

RUNNING, REACHED, FROZEN, OUT_OF_EVENTS = (events.RUNNING, events.REACHED, events.FROZEN,
                                           events.OUT_OF_EVENTS)
#: Wall time one kernel call aims at: a signal waits at most about this long.
SLICE_SECONDS = 0.1
#: Seconds between periodic checkpoints (and the run time from which the end is saved).
CHECKPOINT_SECONDS = 60.0
#: Moves a chain may make on its way to a frozen state before it is given up.
MAX_EVENTS = 10_000_000
#: First slice sizes, grown 4x per slice until a slice takes SLICE_SECONDS.
FIRST_BLOCK_STEPS = 10_000
FIRST_EVENTS = 100


class RunInterrupted(KeyboardInterrupt):
    """A chain run stopped by Ctrl-C or SIGTERM; its message says what was kept."""


# --- what a run is, and where it stands -------------------------------------------------


@dataclass
class Plan:
    """What a run of M chains of L blocks is (fixed while it runs).

    base : the settings every chain shares (dynamics, noise sharing, recording,
        stopping rule, generator); params (M, N_PARAMS) the kernels' parameter
        table; seeds (M,) int64; groups (M,) int64, the stopping rule's groups;
        algorithm (M,) "steps" | "events"; horizon (M,) float, steps to run
        (inf: until frozen).
    """

    base: ChainConfig
    params: np.ndarray
    seeds: np.ndarray
    groups: np.ndarray
    algorithm: np.ndarray
    horizon: np.ndarray

    @property
    def shape(self) -> tuple[int, int]:
        return self.params.shape[0], self.base.blocks

    @property
    def n_records(self) -> int:
        every = self.base.record_every
        return int(self.base.steps // every + 1) if every else 0

    def tasks(self) -> list[tuple[str, np.ndarray, float]]:
        """(kind, chains, steps) in the order they run: the event-driven chains together,
        then the step chains grouped by step count (legacy generator: one by one)."""
        out = []
        fast = np.flatnonzero(self.algorithm == "events")
        if fast.size:
            out.append(("events", fast, math.inf))
        slow = np.flatnonzero(self.algorithm == "steps")
        for n in np.unique(self.horizon[slow]):
            idx = slow[self.horizon[slow] == n]
            groups = [idx[k:k + 1] for k in range(idx.size)] if self.base.rng == "legacy" \
                else [idx]
            out.extend(("steps", g, n) for g in groups)
        return out


@dataclass
class ChainState:
    """Every array a run reads and writes; with its :class:`Plan`, the whole run.

    x (M, L) positions; v (M, L) velocities (second-order dynamics; else (M, 0));
    states (M, 4) uint64 generators; traj (M, R+1, L) records; status (M,)
    RUNNING / REACHED / FROZEN / OUT_OF_EVENTS; done (M,) int64 steps of the
    step kernels; clock (M,) float, events (M,), record (M,) int64 and nxt
    (M, L), touched (M, L) bool of the event-driven kernels ((M, 0) when no
    chain is event-driven); window (M, L) positions at the start of the
    stopping rule's window ((M, 0) without the rule).
    """

    x: np.ndarray
    v: np.ndarray
    states: np.ndarray
    traj: np.ndarray
    status: np.ndarray
    done: np.ndarray
    clock: np.ndarray
    events: np.ndarray
    record: np.ndarray
    nxt: np.ndarray
    touched: np.ndarray
    window: np.ndarray

    def arrays(self) -> dict[str, np.ndarray]:
        return {f.name: getattr(self, f.name) for f in fields(self)}


def fresh_state(plan: Plan) -> ChainState:
    """The state of a run not yet started: every chain at rest, at step 0."""
    m, n = plan.shape
    base = plan.base
    traj = np.full((m, plan.n_records, n), np.nan)
    if plan.n_records:
        traj[:, 0] = 0.0  # row 0 is the initial state
    ev = events.fresh_state(m, n if (plan.algorithm == "events").any() else 0)
    return ChainState(
        x=np.zeros((m, n)), v=np.zeros((m, n if base.dynamics != "overdamped" else 0)),
        states=seed_states(plan.seeds), traj=traj,
        status=np.full(m, RUNNING, dtype=np.int64), done=np.zeros(m, dtype=np.int64),
        clock=ev["clock"], events=ev["events"], record=ev["record"], nxt=ev["nxt"],
        touched=ev["touched"], window=np.zeros((m, n if base.stop_tol is not None else 0)))


def fraction_done(plan: Plan, st: ChainState) -> float:
    """Mean over chains of the share of its horizon reached (finished chains: 1)."""
    finite = np.isfinite(plan.horizon)
    reached = np.where(plan.algorithm == "events", st.clock, st.done)
    with np.errstate(invalid="ignore", divide="ignore"):
        share = np.where(finite, reached / np.where(finite, plan.horizon, 1.0), 0.0)
    return float(np.where(st.status != RUNNING, 1.0, np.minimum(share, 1.0)).mean())


# --- one slice ----------------------------------------------------------------------------


def _running(st: ChainState, chains: np.ndarray) -> np.ndarray:
    return chains[st.status[chains] == RUNNING]


def _events_kernel(plan: Plan, st: ChainState, chains: np.ndarray, budget: int) -> None:
    sync = plan.base.noise_sharing == "synchronous"
    kernel = events.synchronous_slice if sync else events.independent_slice
    kernel(st.x, st.states, plan.params, chains, plan.horizon, MAX_EVENTS, int(budget),
           plan.base.record_every, st.traj, st.clock, st.events, st.record, st.status, st.nxt,
           st.touched)


def _step_kernel(plan: Plan, st: ChainState, chains: np.ndarray, n: int, step0: int) -> None:
    base = plan.base
    args = (chains, int(n), int(step0), base.noise_sharing == "synchronous",
            base.record_every, st.traj)
    if base.rng == "legacy":
        dynamics.overdamped_legacy(st.x, plan.seeds, plan.params, *args)
    elif base.dynamics == "overdamped":
        dynamics.overdamped_slice(st.x, st.states, plan.params, *args)
    elif base.dynamics == "second_order":
        dynamics.second_order_slice(st.x, st.v, st.states, plan.params, *args)
    else:
        dynamics.langevin_slice(st.x, st.v, st.states, plan.params, *args)


def warm_up(plan: Plan, st: ChainState) -> None:
    """Compile (or load from numba's cache) every kernel the run needs: each is called once
    on no chain, with the argument types of the real calls."""
    none = np.zeros(0, dtype=np.int64)
    for kind, _, _ in plan.tasks():
        if kind == "events":
            _events_kernel(plan, st, none, 1)
        else:
            _step_kernel(plan, st, none, 1, 1)  # step0 > 0: the legacy kernel seeds nothing


def _window_end(base: ChainConfig, done: int, n_total: int) -> int:
    """The step at which the current stopping-rule window (or the run) ends."""
    if base.stop_tol is None:
        return n_total
    return min((done // base.stop_window + 1) * base.stop_window, n_total)


def _converged(before, after, groups, params, tol) -> np.ndarray:
    """Per chain: has its group's seed-mean load curve stopped moving? (K,) bool."""
    out = np.zeros(len(groups), dtype=bool)
    for g in np.unique(groups):
        members = groups == g
        change = np.abs(after[members].mean(0) - before[members].mean(0)).max()
        scale = abs(params[members][0, dynamics.P_TARGET]) or 1.0
        out[members] = change < tol * scale
    return out


def _end_window(plan: Plan, st: ChainState, chains: np.ndarray, end: int, n_total: int) -> None:
    """At a window's end: the run's end, or the stopping rule's check of each group."""
    if end == n_total:
        st.status[chains] = REACHED
        return
    after = st.x[chains]
    stopped = _converged(st.window[chains], after, plan.groups[chains], plan.params[chains],
                         plan.base.stop_tol)
    st.status[chains[stopped]] = REACHED
    st.window[chains] = after


def advance(plan: Plan, st: ChainState, task, units: float) -> float:
    """Run one slice of ``task`` of about ``units`` work (block-steps for the step kernels,
    events for the event-driven ones); return the work it was given."""
    kind, chains, n_total = task
    chains = _running(st, chains)
    if kind == "events":
        budget = max(1, int(units // chains.size))
        _events_kernel(plan, st, chains, budget)
        return float(budget * chains.size)
    n_blocks = plan.base.blocks
    step0 = int(st.done[chains[0]])  # the chains of a step task move together
    end = _window_end(plan.base, step0, int(n_total))
    n = int(min(max(1, units // (chains.size * n_blocks)), end - step0))
    _step_kernel(plan, st, chains, n, step0)
    st.done[chains] += n
    if step0 + n == end:
        _end_window(plan, st, chains, end, int(n_total))
    return float(n * chains.size * n_blocks)


@dataclass
class Pace:
    """Slice sizes (work units) that take about ``seconds`` each, from the measured rate."""

    units: float
    seconds: float = SLICE_SECONDS

    def learn(self, work: float, elapsed: float) -> None:
        grown = 4.0 * max(self.units, work)  # at most 4x: one fast slice is no proof
        rate_units = work * self.seconds / elapsed if elapsed > 0 else grown
        self.units = max(1.0, min(rate_units, grown))


# --- signals --------------------------------------------------------------------------------


class Interrupts:
    """While active, SIGINT and SIGTERM are only noted (``signum``); :meth:`deliver` then
    hands the signal to the handler that was there before.

    Only signals that Python handles are deferred (the command line's handler,
    or Python's own Ctrl-C handler in a session); ignored or default ones are
    left alone, so a pool worker (Ctrl-C ignored, SIGTERM deadly) still dies
    at once when its parent stops it. Outside the main thread nothing changes.
    """

    SIGNALS = (signal.SIGINT, signal.SIGTERM)

    def __init__(self):
        self.signum: int | None = None
        self.previous: dict = {}
        self._handler = self._note  # one bound method, so it can be recognised later

    def _note(self, signum, frame) -> None:
        if self.signum is None:
            self.signum = signum

    def __enter__(self) -> Interrupts:
        if threading.current_thread() is threading.main_thread():
            for sig in self.SIGNALS:
                old = signal.getsignal(sig)
                if callable(old):
                    self.previous[sig] = old
                    signal.signal(sig, self._handler)
        return self

    def __exit__(self, *exc) -> None:
        for sig, old in self.previous.items():
            if signal.getsignal(sig) is self._handler:
                signal.signal(sig, old)
        self.previous = {}

    def deliver(self) -> None:
        """Restore the old handlers and call the one for the noted signal (it normally
        raises KeyboardInterrupt); if it returns, the deferral goes on."""
        signum, handler = self.signum, self.previous.get(self.signum)
        self.signum = None
        self.__exit__()
        if handler is not None:
            handler(signum, None)
        self.__enter__()


# --- checkpoints ------------------------------------------------------------------------------


class Checkpoint:
    """A run's :class:`ChainState` on disk (an .npz written atomically) and the digest of
    the run it belongs to (configuration and seeds), for a rerun to resume from."""

    def __init__(self, path, digest: str, period: float | None = None):
        self.path, self.digest = Path(path), digest
        self.period = CHECKPOINT_SECONDS if period is None else period
        self.last = time.monotonic()
        self.cost = 0.0  # seconds the last write took

    def open(self, overwrite: bool) -> None:
        """Keep a checkpoint of this run (with or without ``overwrite``: the state is what
        the run would compute, so a run begun with ``--overwrite`` and interrupted resumes
        when the same command runs again); refuse one of another run unless ``overwrite``
        (which discards it); discard an unreadable one."""
        folder = self.path.parent
        if folder.exists() and not folder.is_dir():  # as a sweep's store refuses it
            raise OutputExistsError(f"{str(folder)!r} is a file where the run keeps its state "
                                    "(a folder); remove or rename it")
        if not self.path.exists():
            return
        stored = self._stored_digest()
        if stored == self.digest:
            return
        if overwrite or stored is None:
            self.clear()
        elif stored != self.digest:
            raise OutputExistsError(
                f"{str(self.path)!r} holds an interrupted run with a different configuration; "
                "rerun with the same settings to resume, or pass overwrite=True (--overwrite) "
                "to discard it")

    def _stored_digest(self) -> str | None:
        try:
            with np.load(self.path) as data:
                return str(data["digest"])
        except Exception:  # noqa: BLE001 (a torn or foreign file: start afresh)
            return None

    def load(self, plan: Plan) -> ChainState | None:
        """The saved state of this run, or None (no checkpoint, or one that does not fit)."""
        if not self.path.exists() or self._stored_digest() != self.digest:
            return None
        fresh = fresh_state(plan)
        with np.load(self.path) as data:
            arrays = {name: data[name] for name in fresh.arrays()}
        for name, arr in fresh.arrays().items():
            if arrays[name].shape != arr.shape or arrays[name].dtype != arr.dtype:
                return None
        return ChainState(**arrays)

    def due(self) -> bool:
        return time.monotonic() - self.last >= max(self.period, 10.0 * self.cost)

    def save(self, plan: Plan, st: ChainState) -> None:
        start = time.monotonic()
        tmp = self.path.with_name(f".{self.path.name}.{os.getpid()}.tmp")
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with open(tmp, "wb") as out:
                np.savez(out, digest=np.array(self.digest), **_resumable(plan, st).arrays())
            os.replace(tmp, self.path)
        except OSError as err:  # a full disk: the earlier state, if any, stays resumable
            raise write_failed(write_error("the run's state", self.path, err),
                               self.path.parent) from err
        finally:
            tmp.unlink(missing_ok=True)
        self.last = time.monotonic()
        self.cost = self.last - start

    def clear(self) -> None:
        self.path.unlink(missing_ok=True)
        if self.path.parent.exists() and not any(self.path.parent.iterdir()):
            self.path.parent.rmdir()


def _resumable(plan: Plan, st: ChainState) -> ChainState:
    """``st`` as a rerun can resume it: a legacy-generator chain caught mid-run (its
    Mersenne-Twister state lives inside numba and cannot be saved) goes back to step 0."""
    if plan.base.rng != "legacy":
        return st
    partial = np.flatnonzero((st.status == RUNNING) & (st.done > 0))
    if not partial.size:
        return st
    out = ChainState(**{k: a.copy() for k, a in st.arrays().items()})
    out.x[partial], out.done[partial] = 0.0, 0
    out.traj[partial] = np.nan
    if out.traj.shape[1]:
        out.traj[partial, 0] = 0.0
    return out


# --- progress ---------------------------------------------------------------------------------

#: A run is quiet for this long, then shows progress if it has this long still to go.
START_SECONDS, LONG_SECONDS = 2.0, 10.0
#: Seconds between progress lines (a terminal's bar is redrawn every second).
LINE_SECONDS, BAR_SECONDS = 10.0, 1.0


class Report:
    """Progress of one long run, in the sweeps' format (:class:`phasecore.progress.Progress`):
    nothing for the first START_SECONDS, then, if the rate measured so far says more than
    LONG_SECONDS remain, a bar or ``progress <label>: ...`` lines with the ETA."""

    def __init__(self, plan: Plan, st: ChainState, label: str, stream=None):
        self.plan, self.label, self.stream = plan, label, stream
        finite = np.isfinite(plan.horizon)
        self.total = float(plan.horizon.max()) if finite.all() else float(finite.size)
        self.unit = "step" if finite.all() else "chain"
        self.origin = (time.monotonic(), self._done(st))
        self.next = self.origin[0] + START_SECONDS
        self.progress: Progress | None = None

    def _done(self, st: ChainState) -> float:
        if self.unit == "step":
            return fraction_done(self.plan, st) * self.total
        return float((st.status != RUNNING).sum())

    def update(self, st: ChainState) -> None:
        now = time.monotonic()
        if now < self.next:
            return
        done = self._done(st)
        if self.progress is None:
            start, done0 = self.origin
            rate = (done - done0) / (now - start)
            if rate <= 0 or (self.total - done) / rate < LONG_SECONDS:
                self.next = now + START_SECONDS
                return
            self.progress = Progress(self.total, done, self.label, unit=self.unit,
                                     stream=self.stream, since=self.origin)
        else:
            self.progress.advance(done - self.progress.done)
        self.next = now + (BAR_SECONDS if self.progress.bar is not None else LINE_SECONDS)

    def close(self, st: ChainState) -> None:
        if self.progress is not None:
            self.progress.advance(self._done(st) - self.progress.done)
            self.progress.close()


# --- the loop -------------------------------------------------------------------------------


def _stop(plan: Plan, st: ChainState, stop: Interrupts, checkpoint: Checkpoint | None) -> None:
    """A signal arrived: keep the state (if a checkpoint is kept), then hand the signal on;
    the KeyboardInterrupt it raises says what was kept."""
    if checkpoint is not None:
        checkpoint.save(plan, st)
    try:
        stop.deliver()
    except KeyboardInterrupt:
        share = f"{100 * fraction_done(plan, st):.1f}% of the run"
        if checkpoint is None:
            raise RunInterrupted(f"interrupted at {share}; nothing was kept (no output "
                                 "file)") from None
        raise RunInterrupted(f"interrupted at {share}: the chains' state is kept in "
                             f"{str(checkpoint.path.parent)!r}; rerun the same command to "
                             "resume") from None


def run(plan: Plan, st: ChainState, *, checkpoint: Checkpoint | None = None,
        report: Report | None = None) -> None:
    """Advance every chain of ``st`` to its end, slice by slice (see the module's notes).

    On Ctrl-C or SIGTERM: saves the checkpoint (if any), then raises
    KeyboardInterrupt through the handler that was installed before (the
    command line's turns it into exit code 130).
    """
    warm_up(plan, st)
    started = time.monotonic()
    paces = {"events": Pace(FIRST_EVENTS), "steps": Pace(FIRST_BLOCK_STEPS)}
    with Interrupts() as stop:
        for task in plan.tasks():
            pace = paces[task[0]]
            while _running(st, task[1]).size:
                t0 = time.perf_counter()
                work = advance(plan, st, task, pace.units)
                pace.learn(work, time.perf_counter() - t0)
                if report is not None:
                    report.update(st)
                if stop.signum is not None:
                    _stop(plan, st, stop, checkpoint)
                elif checkpoint is not None and checkpoint.due():
                    checkpoint.save(plan, st)
        if checkpoint is not None and time.monotonic() - started >= checkpoint.period:
            checkpoint.save(plan, st)  # the labelling after a long run may be interrupted too
    if report is not None:
        report.close(st)

