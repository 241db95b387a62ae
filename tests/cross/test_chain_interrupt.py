"""Interrupted chain runs (Ctrl-C, SIGTERM, kill -9): ``springblock simulate`` and
``springblock phase`` (serial and on a process pool) stop although their numba kernels were
asked for runs that never end, no process survives them, and the same command resumes to
the result of an uninterrupted run, bit for bit.

The signals land mid-run by construction (``tests/chain_interrupt_job.py``): the test
signals only once the job has announced the slice or chunk it holds. Deadlines only keep a
broken run from hanging the suite; no assertion is about how long anything took.
"""

import math
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import xarray as xr

from phasecore import results
from springblock import ensemble, runner
from springblock.cli import main
from springblock.config import ChainConfig
from tests.cross.test_interrupt import DEADLINE, _assert_all_gone, _descendants

ROOT = Path(__file__).resolve().parents[2]
SIGNALS = {"sigint": signal.SIGINT, "sigterm": signal.SIGTERM, "sigkill": signal.SIGKILL}
CHAIN = ["--seeds", "3", "--noise", "0.01", "--mu-right", "0.02", "--mu-left", "0.04"]
SIMULATE = {"steps": ["simulate", *CHAIN, "--steps", "2e6", "--record-every", "100000"],
            "events": ["simulate", *CHAIN, "--steps", "1e7", "--record-every", "1000000",
                       "--algorithm", "events"]}
# 6 cells, one per chunk (2 seeds, 2 chains per chunk); chunks 0 and 1 finish, the rest hold
PHASE = ["phase", "--rows", "mu_right=0,0.01,0.02", "--cols", "noise=0,0.01", "--mu-left-ratio",
         "2", "--seeds", "2", "--steps", "2000", "--chains-per-chunk", "2"]
CHUNKS, HOLD_FROM = 6, 2


class Job:
    """A ``tests.chain_interrupt_job`` subprocess, its stderr in a file; every process seen
    under it is remembered (and killed at the end, whatever happened)."""

    def __init__(self, folder: Path, *args):
        self.err_path = folder / f"stderr-{len(list(folder.glob('stderr-*')))}.txt"
        with open(self.err_path, "w") as err:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "tests.chain_interrupt_job", *map(str, args)], cwd=ROOT,
                stdout=subprocess.DEVNULL, stderr=err, text=True)
        self.seen: set[int] = set()

    def watch(self) -> set[int]:
        self.seen |= _descendants(self.proc.pid) | {self.proc.pid}
        return self.seen

    def wait_for(self, condition, what: str) -> None:
        deadline = time.monotonic() + DEADLINE
        while not condition():
            self.watch()
            if self.proc.poll() is not None:
                pytest.fail(f"the job exited ({self.proc.returncode}) before {what}:\n"
                            f"{self.err_path.read_text()}")
            if time.monotonic() > deadline:
                pytest.fail(f"not {what} after {DEADLINE:g} s:\n{self.err_path.read_text()}")
            time.sleep(0.02)

    def finish(self, what: str) -> str:
        try:
            self.proc.wait(timeout=DEADLINE)
        except subprocess.TimeoutExpired:
            self.kill()
            pytest.fail(f"{what}: still running after {DEADLINE:g} s")
        return self.err_path.read_text()

    def kill(self) -> None:
        for pid in self.seen | {self.proc.pid}:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        self.proc.wait()


@pytest.fixture
def jobs(tmp_path):
    started = []

    def start(*args) -> Job:
        started.append(Job(tmp_path, *args))
        return started[-1]

    yield start
    for job in started:
        job.kill()


def _stopped(job: Job, hold: Path, how: str) -> str:
    """Signal the job once it has announced its hold; its stderr once every process is gone."""
    job.wait_for(lambda: any(hold.glob("started-*")), "the held slice or chunk started")
    processes = job.watch()
    job.proc.send_signal(SIGNALS[how])
    err = job.finish(f"the job after {how}")
    _assert_all_gone(processes)
    if how == "sigkill":
        assert job.proc.returncode == -signal.SIGKILL
    else:
        assert job.proc.returncode == 128 + SIGNALS[how], err  # 130 after Ctrl-C, 143 SIGTERM
        assert "interrupted" in err and "rerun the same command to resume" in err, err
        assert "Traceback" not in err, err
    return err


# --- simulate ------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def simulated(tmp_path_factory):
    """The uninterrupted runs, by algorithm."""
    folder, found = tmp_path_factory.mktemp("reference"), {}
    for algorithm, args in SIMULATE.items():
        assert main([*args, "-o", str(folder / f"{algorithm}.nc"), "--quiet"]) == 0
        found[algorithm] = results.load(folder / f"{algorithm}.nc")
    return found


@pytest.mark.parametrize("how,steps", [("sigint", ["--steps", "1e13"]),
                                       ("sigterm", ["--steps", "1e14", "--algorithm", "events"])])
def test_simulate_stops_inside_an_endless_kernel(jobs, tmp_path, capsys, how, steps):
    """Days of work, run in slices: the signal stops it, and the chains' state is kept beside
    the output for a rerun. How long it would take was said before it started."""
    out, hold = tmp_path / "endless.nc", tmp_path / "hold"
    hold.mkdir()
    job = jobs("simulate", hold, 3, "simulate", "--seeds", "2", "--noise", "0.01",
               "--mu-right", "0.02", *steps, "-o", out)
    err = _stopped(job, hold, how)
    assert err.startswith("springblock simulate: expected run time ~"), err
    assert (tmp_path / "endless.nc.parts" / "chains.npz").exists() and not out.exists()


# SIGINT and SIGTERM are one path in a run (runner.Interrupts notes either, then the same
# checkpoint is kept): SIGTERM's stop and kept state are checked by
# test_simulate_stops_inside_an_endless_kernel, its resume by the phase tests' sigterm cases.
@pytest.mark.parametrize("how,algorithm", [("sigint", "steps"), ("sigkill", "steps"),
                                           ("sigint", "events"), ("sigkill", "events")])
def test_simulate_interrupted_resumes_to_the_identical_result(jobs, tmp_path, capsys,
                                                              simulated, how, algorithm):
    out, hold = tmp_path / "chain.nc", tmp_path / "hold"
    hold.mkdir()
    job = jobs("simulate", hold, 5, "--block", *SIMULATE[algorithm], "-o", out)
    _stopped(job, hold, how)
    assert not out.exists() and (tmp_path / "chain.nc.parts" / "chains.npz").exists()
    assert main([*SIMULATE[algorithm], "-o", str(out)]) == 0  # the same command, here
    err = capsys.readouterr().err
    assert "simulate: resuming at " in err, err
    assert not (tmp_path / "chain.nc.parts").exists()
    resumed = results.load(out)
    assert (resumed["algorithm"] == algorithm).all() and np.isfinite(resumed["trajectory"]).all()
    xr.testing.assert_identical(resumed.drop_attrs(), simulated[algorithm].drop_attrs())


# --- phase -----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def diagram(tmp_path_factory):
    out = tmp_path_factory.mktemp("reference") / "phase.nc"
    assert main([*PHASE, "-o", str(out), "--quiet"]) == 0
    return results.load(out)


@pytest.mark.parametrize("scheduler,how,algorithm", [
    ("serial", "sigint", "steps"), ("serial", "sigterm", "events"),
    ("serial", "sigkill", "steps"), ("processes", "sigint", "events"),
    ("processes", "sigterm", "steps"), ("processes", "sigkill", "events")])
def test_phase_interrupted_in_a_kernel_keeps_whole_chunks_and_resumes_identically(
        jobs, tmp_path, capsys, diagram, scheduler, how, algorithm):
    """The held chunks run an endless chain in the step or the event-driven kernel."""
    out, hold = tmp_path / "phase.nc", tmp_path / "hold"
    parts = tmp_path / "phase.nc.parts"
    hold.mkdir()
    job = jobs("phase", hold, f"{HOLD_FROM}{os.pathsep}{algorithm}", *PHASE, "--scheduler",
               scheduler, *(["--workers", "2"] if scheduler == "processes" else []), "-o", out)
    job.wait_for(lambda: len(list(parts.glob("chunk-*.nc"))) >= HOLD_FROM,
                 "the first chunks were written")
    err = _stopped(job, hold, how)
    if how != "sigkill":
        assert f"{HOLD_FROM}/{CHUNKS} chunks are kept" in err, err
    assert sorted(p.name for p in parts.glob("chunk-*.nc")) == [
        f"chunk-{i:06d}.nc" for i in range(HOLD_FROM)]
    assert not out.exists()

    assert main([*PHASE, "-o", str(out)]) == 0  # the same sweep, resumed here, serially
    err = capsys.readouterr().err
    assert f"progress phase diagram: {HOLD_FROM}/{CHUNKS} chunks" in err  # resumed, not redone
    assert not parts.exists()
    resumed = results.load(out)
    assert np.isfinite(resumed["load_curve"]).all()
    xr.testing.assert_identical(resumed.drop_attrs(), diagram.drop_attrs())


# --- slices ----------------------------------------------------------------------------------

SLICED = [
    dict(noise=0.01, noise_decay=0.01, record_every=37),
    dict(noise=0.02, noise_dist="truncated", truncation=1.5, noise_sharing="synchronous"),
    dict(noise=0.01, dynamics="second_order", record_every=50),
    dict(noise=0.003, dynamics="langevin", noise_decay=0.01),
    dict(noise=0.005, stop_tol=1e-3, stop_window=300),
    dict(noise=0.01, rng="legacy", record_every=100),
    dict(noise=0.01, steps=10**6, algorithm="events", record_every=10**5),
    dict(noise=0.01, steps=10**6, algorithm="events", noise_sharing="synchronous"),
    dict(noise=0.01, noise_dist="truncated", truncation=1.5, steps=math.inf, algorithm="events"),
    dict(steps=math.inf, algorithm="events", noise_sharing="synchronous"),
]


def _run_in_slices(cfg: ChainConfig, sizes) -> runner.ChainState:
    """Every chain of 4 (two stopping-rule groups) to its end, each slice of ``sizes()`` work."""
    plan = ensemble._plan([cfg] * 4, np.arange(4), np.array([0, 0, 1, 1]))
    state = runner.fresh_state(plan)
    for task in plan.tasks():
        while runner._running(state, task[1]).size:
            runner.advance(plan, state, task, sizes())
    return state


@pytest.mark.parametrize("changes", SLICED)
def test_a_run_cut_into_any_slices_is_the_run_in_one_call_bit_for_bit(changes):
    """Kernels called once per run (or per stopping-rule window) and called for 1-50 events or
    mostly single steps at a time leave every array of the state identical: positions,
    generators, records, clocks, event counts and scheduled moves."""
    cfg = ChainConfig(**{"blocks": 5, "mu_right": 0.02, "mu_left": 0.04, "steps": 2000,
                         **changes})
    whole = _run_in_slices(cfg, lambda: 2.0**62)
    pick = np.random.default_rng(0)
    sliced = _run_in_slices(cfg, lambda: float(pick.integers(1, 200)))
    for name, arr in whole.arrays().items():
        assert np.array_equal(arr, getattr(sliced, name), equal_nan=True), name
    assert (whole.status != runner.RUNNING).all()
    if cfg.record_every:
        assert np.isfinite(whole.traj).all()


def test_ctrl_c_in_a_python_session_stops_a_run_at_the_next_slice(monkeypatch):
    """Python's own Ctrl-C handler is deferred to the end of the slice, then raises."""
    real, calls = runner.advance, [0]

    def advance(*args):
        calls[0] += 1
        if calls[0] == 3:
            os.kill(os.getpid(), signal.SIGINT)  # arrives while a slice runs
        return real(*args)

    monkeypatch.setattr(runner, "advance", advance)
    # Python's own handler, as in a session: a test run started in the background of a
    # shell inherits SIGINT ignored, and the signal would then never stop this run.
    inherited = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        cfg = ChainConfig(noise=0.01, steps=10**13)
        with pytest.raises(KeyboardInterrupt,
                           match="interrupted at 0.0% of the run; nothing was kept"):
            ensemble.run_ensemble([cfg], [0])
        assert calls[0] == 3 and signal.getsignal(signal.SIGINT) is signal.default_int_handler
    finally:
        signal.signal(signal.SIGINT, inherited)


def test_a_long_run_reports_progress_from_its_measured_rate(monkeypatch, capsys):
    monkeypatch.setattr(runner, "START_SECONDS", 0.0)
    monkeypatch.setattr(runner, "LONG_SECONDS", 0.0)
    monkeypatch.setattr(runner, "LINE_SECONDS", 0.0)
    ensemble.run_ensemble([ChainConfig(noise=0.01, steps=200_000)] * 2, [0, 1],
                          progress="chain")
    lines = [ln for ln in capsys.readouterr().err.splitlines() if ln.startswith("progress")]
    assert len(lines) >= 2 and lines[-1].startswith("progress chain: 200000/200000 steps "
                                                     "(100.0%)"), lines
    assert all(" eta " in ln for ln in lines)


def test_a_checkpoint_of_the_same_run_is_kept_even_with_overwrite(tmp_path):
    """A run begun with --overwrite and interrupted resumes when the same command runs
    again: its own state is kept; another run's is refused, or discarded with overwrite."""
    from phasecore.results import OutputExistsError

    path = tmp_path / "out.nc.parts" / "chains.npz"
    path.parent.mkdir()
    np.savez(path, digest=np.array("this run"))
    runner.Checkpoint(path, "this run").open(overwrite=True)
    assert path.exists()
    with pytest.raises(OutputExistsError, match="different configuration"):
        runner.Checkpoint(path, "another run").open(overwrite=False)
    runner.Checkpoint(path, "another run").open(overwrite=True)
    assert not path.exists()
