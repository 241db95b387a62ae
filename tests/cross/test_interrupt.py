"""Interrupted sweeps (Ctrl-C, Ctrl-C twice, SIGTERM, SIGKILL): the command stops without
waiting for its running chunks, no process survives it, finished chunks are kept whole, and
rerunning the same command gives the identical result.

Every interruption lands mid-sweep by construction: the job's later chunks wait until the test
releases them (``tests/interrupt_job.py``), and the test signals only once it has seen the
earlier chunks on disk and the held ones started. Deadlines only keep a broken run from hanging
the suite; no assertion is about how long anything took.
"""

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

ROOT = Path(__file__).resolve().parents[2]
CHUNKS, HOLD_FROM = 10, 2  # chunks 0, 1 finish; the two workers then hold chunks 2 and 3
DEADLINE = 120.0  # seconds; generous, to fail rather than hang
INTERRUPTED = 130  # phasecore.commandline.run after Ctrl-C; 128 + the signal: 143 after SIGTERM


class Job:
    """A ``tests.interrupt_job`` subprocess; its output goes to files, so no process it leaves
    behind can block the test on a pipe. Every process seen under it is remembered."""

    def __init__(self, folder: Path, *args):
        self.err_path = folder / f"stderr-{len(list(folder.glob('stderr-*')))}.txt"
        with open(self.err_path, "w") as err:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "tests.interrupt_job", *map(str, args)], cwd=ROOT,
                stdout=subprocess.DEVNULL, stderr=err, text=True)
        self.seen: set[int] = set()

    @property
    def pid(self) -> int:
        return self.proc.pid

    @property
    def returncode(self) -> int | None:
        return self.proc.poll()

    @property
    def err(self) -> str:
        return self.err_path.read_text()

    def signal(self, signum) -> None:
        self.proc.send_signal(signum)

    def watch(self) -> set[int]:
        """The job's processes now, added to those seen."""
        self.seen |= _descendants(self.proc.pid)
        return self.seen

    def finish(self, what: str) -> str:
        """Wait for the job to exit; its stderr. Past the deadline: killed, and the test fails."""
        try:
            self.proc.wait(timeout=DEADLINE)
        except subprocess.TimeoutExpired:
            self.kill()
            pytest.fail(f"{what}: still running after {DEADLINE:g} s; stderr:\n{self.err}")
        return self.err

    def kill(self) -> None:
        for pid in [self.proc.pid, *self.seen]:
            if _alive(pid):
                os.kill(pid, signal.SIGKILL)
        self.proc.wait()


@pytest.fixture
def jobs(tmp_path):
    """Start jobs with ``jobs(*args)``; afterwards, whatever happened, held chunks are released
    and every process seen is killed."""
    started = []

    def start(*args) -> Job:
        started.append(Job(tmp_path, *args))
        return started[-1]

    yield start
    for hold in tmp_path.glob("hold*"):
        (hold / "release").touch()
    for job in started:
        job.kill()


def _wait_until(condition, job: Job, what: str) -> None:
    deadline = time.monotonic() + DEADLINE
    while not condition():
        job.watch()
        if job.returncode is not None:
            pytest.fail(f"the job exited ({job.returncode}) before {what}:\n{job.err}")
        if time.monotonic() > deadline:
            pytest.fail(f"not {what} after {DEADLINE:g} s:\n{job.err}")
        time.sleep(0.02)


def _chunks(parts: Path) -> list[int]:
    return sorted(int(p.stem.split("-")[1]) for p in parts.glob("chunk-*.nc"))


def _started(hold: Path) -> list[Path]:
    return list(hold.glob("started-*"))


def _wait_mid_sweep(job: Job, parts: Path, hold: Path, done: int, held: int) -> None:
    """Until ``done`` chunks are on disk and ``held`` chunks wait in the workers."""
    _wait_until(lambda: len(_chunks(parts)) >= done and len(_started(hold)) >= held, job,
                f"{done} chunks were written and {held} held chunks started")


# --- processes -------------------------------------------------------------------------

try:
    import psutil
except ImportError:  # read /proc instead
    psutil = None


def _descendants(pid: int) -> set[int]:
    if psutil is not None:
        try:
            return {p.pid for p in psutil.Process(pid).children(recursive=True)}
        except psutil.NoSuchProcess:
            return set()
    parents = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        parents.setdefault(int(fields[1]), set()).add(int(stat.parent.name))
    found, todo = set(), [pid]
    while todo:
        children = parents.get(todo.pop(), set()) - found
        found |= children
        todo.extend(children)
    return found


def _alive(pid: int) -> bool:
    """Running; a zombie (exited, not yet reaped) counts as gone."""
    if psutil is not None:
        try:
            return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
        except psutil.NoSuchProcess:
            return False
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def _assert_all_gone(pids: set[int]) -> None:
    deadline = time.monotonic() + DEADLINE
    while alive := [p for p in pids if _alive(p)]:
        if time.monotonic() > deadline:
            pytest.fail(f"processes {sorted(alive)} of the sweep are still running "
                        f"{DEADLINE:g} s after it exited")
        time.sleep(0.05)


def _worker_pids(hold: Path) -> set[int]:
    return {int(p.name.rsplit("-", 1)[1]) for p in _started(hold)}


# --- the toy sweep ---------------------------------------------------------------------


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    folder = tmp_path_factory.mktemp("reference")
    job = Job(folder, "toy", folder / "toy.nc", CHUNKS, "--scheduler", "serial")
    err = job.finish("the reference run")
    assert job.returncode == 0, err
    return results.load(folder / "toy.nc")


def _resume(jobs, out: Path, hold: Path, reference: xr.Dataset, *args) -> str:
    """Release held chunks, rerun the same command; it must finish to the reference."""
    (hold / "release").touch()
    job = jobs("toy", out, CHUNKS, *args)
    err = job.finish("the resumed run")
    assert job.returncode == 0, err
    assert not Path(f"{out}.parts").exists()  # consolidated and cleared
    xr.testing.assert_identical(results.load(out).drop_attrs(), reference.drop_attrs())
    return err


# SIGTERM is not a case of its own here: the command's handler (phasecore.executors.
# interrupt_once) is one function for SIGINT and SIGTERM, and the signal goes to the parent
# only, so SIGTERM takes the SIGINT path below; that SIGTERM reaches the handler, stops a pool
# and keeps whole chunks to resume from is test_chain_interrupt's processes-sigterm case.
@pytest.mark.parametrize("how", ["sigint", "double_sigint", "sigkill"])
def test_interrupted_pool_stops_keeps_whole_chunks_and_resumes_identically(jobs, tmp_path,
                                                                          reference, how):
    out, hold = tmp_path / "toy.nc", tmp_path / "hold"
    parts = Path(f"{out}.parts")
    hold.mkdir()
    # double_sigint: held chunks ignore SIGTERM, so the parent's clean-up lasts until it kills
    # them (after its grace period), and the second Ctrl-C lands inside that clean-up
    command = ["--hold", hold, "--hold-from", HOLD_FROM] + (
        ["--linger"] if how == "double_sigint" else [])
    job = jobs("toy", out, CHUNKS, *command)
    _wait_mid_sweep(job, parts, hold, done=HOLD_FROM, held=2)
    processes = job.watch() | _worker_pids(hold)
    assert _worker_pids(hold) <= processes  # the held chunks run in the job's pool workers

    if how == "sigkill":
        job.signal(signal.SIGKILL)
    else:
        job.signal(signal.SIGTERM if how == "sigterm" else signal.SIGINT)
    if how == "double_sigint":
        _wait_until(lambda: any(hold.glob("terminated-*")), job,
                    "the interrupted job asked its workers to stop")
        job.signal(signal.SIGINT)
    # the held chunks never finish: exiting at all means it stopped without waiting for them
    err = job.finish(f"the job after {how}")
    _assert_all_gone(processes)
    if how == "sigkill":
        assert job.returncode == -signal.SIGKILL
    else:
        assert job.returncode == INTERRUPTED, err
        assert "interrupted" in err and "rerun the same command to resume" in err, err
        assert f"{HOLD_FROM}/{CHUNKS} chunks are kept" in err, err
        assert "Traceback" not in err, err
    assert _chunks(parts) == list(range(HOLD_FROM)) and not out.exists()
    for chunk in parts.glob("chunk-*.nc"):  # whole chunks only
        xr.open_dataset(chunk, engine="netcdf4").close()
    assert not list(parts.glob(".*.tmp"))  # the held chunks never began to write

    err = _resume(jobs, out, hold, reference, *command)
    assert f"progress toy: {HOLD_FROM}/{CHUNKS} chunks" in err  # resumed, not redone


def test_killed_at_a_fixed_chunk_resumes_to_the_identical_result(jobs, tmp_path, reference):
    """A serial run SIGKILLed at chunk 4 keeps chunks 0-3 and resumes from there."""
    out, hold = tmp_path / "toy.nc", tmp_path / "hold"
    hold.mkdir()
    command = ["--scheduler", "serial", "--die-at", 4]
    job = jobs("toy", out, CHUNKS, *command)
    job.finish("the run that dies")
    assert job.returncode == -signal.SIGKILL
    assert _chunks(Path(f"{out}.parts")) == [0, 1, 2, 3]
    err = _resume(jobs, out, hold, reference, *command)
    assert f"progress toy: 4/{CHUNKS} chunks" in err  # resumed, not redone


def test_corrupt_chunk_is_recomputed_and_reported(jobs, tmp_path, reference):
    out, hold = tmp_path / "toy.nc", tmp_path / "hold"
    hold.mkdir()
    command = ["--scheduler", "serial", "--die-at", 4]
    jobs("toy", out, CHUNKS, *command).finish("the run that dies")
    victim = Path(f"{out}.parts") / "chunk-000000.nc"
    victim.write_bytes(victim.read_bytes()[:100])  # a truncated copy
    err = _resume(jobs, out, hold, reference, *command)
    assert "1 unreadable chunk file(s) [0]" in err
    assert f"progress toy: 3/{CHUNKS} chunks" in err  # only the unreadable one is redone


def test_corrupt_store_description_is_a_one_line_error(jobs, tmp_path):
    out = tmp_path / "toy.nc"
    parts = Path(f"{out}.parts")
    parts.mkdir()
    (parts / "sweep.json").write_text("{not json")
    job = jobs("toy", out, CHUNKS)
    err = job.finish("the run on a corrupt store")
    assert job.returncode == 2
    assert err.strip().startswith("toy: error:") and "sweep.json" in err
    assert "--overwrite" in err and "\n" not in err.strip()


# --- a real network sweep ---------------------------------------------------------------

NET_ARGS = ["sweep", "--knob", "dropout", "--values", "0,0.3", "--alpha", "0,1", "--seeds", "2",
            "--dataset", "digits", "--n-train", "300", "--depth", "3", "--width", "16",
            "--epochs", "40", "--record-every", "10", "--label-noise", "0.1",
            "--models-per-chunk", "1", "--measures", "trace_ratio,fuzziness"]
NET_DONE = 4  # one model per chunk; the 4 models of alpha = 0 finish, those of alpha = 1 wait


def test_network_sweep_interrupted_and_resumed_elsewhere_is_identical(jobs, tmp_path):
    """Ctrl-C the real ``dnnphase sweep`` on a process pool mid-sweep, resume it serially in a
    process with more threads: the result equals an uninterrupted run's, bit for bit."""
    import torch

    from dnnphase.cli import main

    out, hold = tmp_path / "dnn.nc", tmp_path / "hold"
    parts = Path(f"{out}.parts")
    hold.mkdir()
    # --scheduler processes: a sweep this small would run in this process by default
    job = jobs("dnnphase", hold, 1, *NET_ARGS, "-o", out, "--scheduler", "processes",
               "--workers", "2")
    _wait_mid_sweep(job, parts, hold, done=NET_DONE, held=2)
    processes = job.watch() | _worker_pids(hold)
    job.signal(signal.SIGINT)
    err = job.finish("the network sweep after Ctrl-C")
    _assert_all_gone(processes)
    assert job.returncode == INTERRUPTED and "rerun the same command to resume" in err, err
    assert "Traceback" not in err, err
    assert _chunks(parts) == list(range(NET_DONE)) and not out.exists()

    threads = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        assert main([*NET_ARGS, "-o", str(out), "--scheduler", "serial", "--quiet"]) == 0
        reference = tmp_path / "reference.nc"
        assert main([*NET_ARGS, "-o", str(reference), "--scheduler", "serial", "--quiet"]) == 0
    finally:
        torch.set_num_threads(threads)
    assert not parts.exists()
    resumed, clean = results.load(out), results.load(reference)
    assert np.isfinite(clean["load_curve"]).all()
    xr.testing.assert_identical(resumed.drop_attrs(), clean.drop_attrs())
