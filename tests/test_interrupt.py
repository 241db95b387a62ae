"""Interrupted sweeps: the process tree is gone within seconds, finished chunks are kept,
and a rerun gives the identical result (Ctrl-C, Ctrl-C twice, SIGTERM, SIGKILL)."""

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

ROOT = Path(__file__).resolve().parents[1]
CHUNKS, SECONDS = 10, 0.8


def _start(out: Path, *extra, module="tests.interrupt_job") -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", module, str(out), *extra], cwd=ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # a zombie (exited, not yet reaped by its parent) counts as gone
    try:
        return Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"
    except OSError:
        return False


def _wait_for_chunks(parts: Path, proc: subprocess.Popen, n: int) -> None:
    deadline = time.monotonic() + 120
    while len(list(parts.glob("chunk-*.nc"))) < n:
        assert proc.poll() is None, proc.stderr.read()
        assert time.monotonic() < deadline, "no chunk was written in time"
        time.sleep(0.02)


def _gone_within(pids: list[int], seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while any(_alive(p) for p in pids):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    out = tmp_path_factory.mktemp("reference") / "toy.nc"
    proc = _start(out, str(CHUNKS), "0", "--scheduler", "serial")
    assert proc.wait(timeout=120) == 0, proc.stderr.read()
    return results.load(out)


@pytest.mark.parametrize("how", ["sigint", "double_sigint", "sigterm", "sigkill"])
def test_interrupted_pool_stops_at_once_and_resumes_identically(tmp_path, reference, how):
    out = tmp_path / "toy.nc"
    parts, pid_dir = Path(f"{out}.parts"), Path(f"{out}.pids")
    proc = _start(out, str(CHUNKS), str(SECONDS))
    _wait_for_chunks(parts, proc, 2)
    sent = time.monotonic()
    if how == "sigkill":
        proc.send_signal(signal.SIGKILL)
    else:
        proc.send_signal(signal.SIGTERM if how == "sigterm" else signal.SIGINT)
        if how == "double_sigint":
            time.sleep(0.05)
            proc.send_signal(signal.SIGINT)
    proc.wait(timeout=10)
    workers = {int(p.name.split("-")[1]) for p in pid_dir.iterdir()}
    assert workers and _gone_within(list(workers), 5.0), "pool workers outlived the sweep"
    assert time.monotonic() - sent < 6.0
    if how != "sigkill":
        err = proc.stderr.read()
        assert proc.returncode == 130, err
        assert "rerun the same command to resume" in err and "Traceback" not in err
    kept = sorted(parts.glob("chunk-*.nc"))
    assert 2 <= len(kept) < CHUNKS and not out.exists()
    for chunk in kept:  # whole chunks only
        xr.open_dataset(chunk, engine="netcdf4").close()

    proc = _start(out, str(CHUNKS), "0")
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err
    assert not parts.exists()
    xr.testing.assert_identical(results.load(out).drop_attrs(), reference.drop_attrs())


def test_killed_at_a_fixed_chunk_resumes_to_the_identical_result(tmp_path, reference):
    """SIGKILL at a deterministic point (no race with the sweep finishing first)."""
    out = tmp_path / "toy.nc"
    parts = Path(f"{out}.parts")
    proc = _start(out, str(CHUNKS), "0", "--scheduler", "serial", "--die-at", "4")
    proc.communicate(timeout=60)
    assert proc.returncode == -signal.SIGKILL
    assert sorted(int(p.stem.split("-")[1]) for p in parts.glob("chunk-*.nc")) == [0, 1, 2, 3]
    proc = _start(out, str(CHUNKS), "0", "--scheduler", "serial", "--die-at", "4")
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    assert "progress toy: 4/10 chunks" in err  # resumed, not redone
    xr.testing.assert_identical(results.load(out).drop_attrs(), reference.drop_attrs())


def test_corrupt_chunk_is_recomputed_and_reported(tmp_path, reference):
    out = tmp_path / "toy.nc"
    parts = Path(f"{out}.parts")
    proc = _start(out, str(CHUNKS), str(SECONDS))
    _wait_for_chunks(parts, proc, 2)
    proc.send_signal(signal.SIGINT)
    proc.wait(timeout=10)
    victim = sorted(parts.glob("chunk-*.nc"))[0]
    victim.write_bytes(victim.read_bytes()[:100])  # a truncated copy
    proc = _start(out, str(CHUNKS), "0")
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err
    assert "1 unreadable chunk file(s)" in err
    xr.testing.assert_identical(results.load(out).drop_attrs(), reference.drop_attrs())


def test_corrupt_store_description_is_a_one_line_error(tmp_path):
    out = tmp_path / "toy.nc"
    parts = Path(f"{out}.parts")
    parts.mkdir()
    (parts / "sweep.json").write_text("{not json")
    proc = _start(out, str(CHUNKS), "0")
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 2
    assert err.strip().startswith("toy: error:") and "sweep.json" in err
    assert "--overwrite" in err and "\n" not in err.strip()


# --- a real network sweep ---------------------------------------------------------------

NET_ARGS = ["sweep", "--knob", "dropout", "--values", "0,0.3", "--alpha", "0,1", "--seeds", "2",
            "--dataset", "digits", "--n-train", "300", "--depth", "3", "--width", "16",
            "--epochs", "40", "--record-every", "10", "--label-noise", "0.1",
            "--models-per-chunk", "1", "--measures", "trace_ratio,fuzziness"]


def test_network_sweep_interrupted_and_resumed_elsewhere_is_identical(tmp_path):
    """Ctrl-C a process-pool sweep, resume it serially in a process with more threads:
    the result equals an uninterrupted run's, bit for bit."""
    import torch

    from dnnphase.cli import main

    out = tmp_path / "dnn.nc"
    parts = Path(f"{out}.parts")
    proc = subprocess.Popen([sys.executable, "-m", "dnnphase.cli", *NET_ARGS, "-o", str(out),
                             "--workers", "2"], cwd=ROOT, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    _wait_for_chunks(parts, proc, 1)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=15)
    assert proc.returncode == 130 and "rerun the same command to resume" in err, err
    assert 1 <= len(list(parts.glob("chunk-*.nc"))) < 8

    threads = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        assert main([*NET_ARGS, "-o", str(out), "--scheduler", "serial", "--quiet"]) == 0
        reference = tmp_path / "reference.nc"
        assert main([*NET_ARGS, "-o", str(reference), "--scheduler", "serial", "--quiet"]) == 0
    finally:
        torch.set_num_threads(threads)
    resumed, clean = results.load(out), results.load(reference)
    assert np.isfinite(clean["load_curve"]).all()
    xr.testing.assert_identical(resumed.drop_attrs(), clean.drop_attrs())
