"""Chunked sweeps: resume after a kill, configuration checks, progress, Dask."""

import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import xarray as xr

from phasecore import results
from phasecore.progress import Progress
from phasecore.results import OutputExistsError
from phasecore.store import ChunkStore
from phasecore.sweeps import run_sweep
from springblock import phase_diagram

ROOT = Path(__file__).resolve().parents[2]
PHASE_ARGS = ["phase", "--rows", "mu_right=0:0.03:4", "--cols", "noise=0:0.03:4",
              "--mu-left-ratio", "2", "--seeds", "4", "--steps", "60000",
              "--chains-per-chunk", "8"]


def _cli(args, deadline: float = 120.0) -> tuple[int, str]:
    """Run the chain command line; (exit code, stderr). ``deadline`` only keeps a broken run
    from hanging the suite: past it the command is killed and the test fails."""
    proc = subprocess.Popen([sys.executable, "-m", "springblock.cli", *args], cwd=ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        _, err = proc.communicate(timeout=deadline)
    except subprocess.TimeoutExpired:
        proc.kill()
        _, err = proc.communicate()
        pytest.fail(f"springblock {' '.join(args[:1])} still running after {deadline:g} s:\n{err}")
    return proc.returncode, err


def _identical(a: xr.Dataset, b: xr.Dataset) -> None:
    xr.testing.assert_identical(a.drop_attrs(), b.drop_attrs())
    assert a.attrs["config"] == b.attrs["config"]


def test_changed_configuration_is_refused_then_overwritten(tmp_path):
    out = tmp_path / "phase.nc"
    store = ChunkStore(out)
    store.open({"a": 1}, n_chunks=3)
    with pytest.raises(OutputExistsError, match=r"different configuration \(differs in: a\)"):
        store.open({"a": 2}, n_chunks=3)
    # A setting one side lacks (e.g. one an earlier version did not record) is named too.
    with pytest.raises(OutputExistsError, match=r"\(differs in: b, n_chunks\)"):
        store.open({"a": 1, "b": "x"}, n_chunks=4)
    code, err = _cli(PHASE_ARGS + ["-o", str(out), "--quiet"])
    assert code == 2 and "different configuration" in err
    store.open({"a": 2}, n_chunks=3, overwrite=True)  # --overwrite discards the old store
    assert store.done() == set()
    # ... but resumes one of the same configuration: its chunks are what this run computes
    # (a sweep begun with --overwrite, interrupted, then run again by the same command).
    store.write(0, xr.Dataset({"x": ("i", [1.0])}))
    store.open({"a": 2}, n_chunks=3, overwrite=True)
    assert store.done() == {0}
    # An unreadable sweep.json is refused, and discarded with --overwrite.
    store.meta.write_text("{not json")
    with pytest.raises(OutputExistsError, match="unreadable"):
        store.open({"a": 2}, n_chunks=3)
    store.open({"a": 2}, n_chunks=3, overwrite=True)
    assert store.done() == set()


def test_chunking_does_not_change_the_result(tmp_path):
    kwargs = dict(rows=("mu_right", [0.0, 0.02]), cols=("noise", [0.0, 0.01, 0.03]), seeds=3,
                  steps=5000, mu_left_ratio=2)
    one = phase_diagram(**kwargs, chains_per_chunk=1000)
    many = phase_diagram(**kwargs, chains_per_chunk=3, output=tmp_path / "p.nc")
    _identical(one, many)


def test_non_tty_progress_is_line_based_and_parseable():
    class Stream:
        def __init__(self):
            self.text = ""

        def write(self, s):
            self.text += s

        def flush(self):
            pass

    pattern = re.compile(r"^progress demo: (\d+)/4 chunks \(([\d.]+)%\) elapsed ([\d.]+)s "
                         r"eta ([\d.]+|\?)s$")

    def run(**attributes):
        stream = Stream()
        progress = Progress(total=4, done=1, label="demo", stream=stream)
        vars(progress).update(attributes)
        for _ in range(3):
            progress.advance()
        return stream.text.strip().splitlines()

    lines = run(line_interval=0.0)  # a line per chunk
    assert [int(pattern.match(line).group(1)) for line in lines] == [1, 2, 3, 4]
    assert pattern.match(lines[0]).group(4) == "?"  # no estimate before a chunk finished
    assert all(pattern.match(line).group(4) != "?" for line in lines[1:])
    # By default at most a line every few seconds: the first and the last always.
    assert [int(pattern.match(line).group(1)) for line in run()] == [1, 4]
    quiet = Stream()
    Progress(total=2, stream=quiet, quiet=True).advance()
    assert quiet.text == ""


# --- Dask -------------------------------------------------------------------------------


def noisy_cells(payload):
    """A toy chunk: deterministic in its payload; dies once on a marked chunk."""
    index, seed, crash_marker = payload
    if crash_marker and index == 1 and not os.path.exists(crash_marker):
        Path(crash_marker).touch()
        os._exit(1)  # the worker process dies mid-chunk
    values = np.random.default_rng(seed).standard_normal(5)
    return xr.Dataset({"value": (("cell", "k"), values[None])},
                      coords={"cell": [index]})


def test_dask_local_cluster_matches_local_run_and_survives_a_dead_worker(tmp_path):
    distributed = pytest.importorskip("dask.distributed")
    payloads_local = [(i, 100 + i, None) for i in range(4)]
    marker = str(tmp_path / "crashed-once")
    payloads_dask = [(i, 100 + i, marker) for i in range(4)]

    local_store = ChunkStore(tmp_path / "local.nc")
    local_store.open({"toy": 1}, 4)
    local = run_sweep(noisy_cells, payloads_local, local_store, quiet=True)

    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  host="127.0.0.1", dashboard_address=None) as cluster:
        store = ChunkStore(tmp_path / "dask.nc")
        store.open({"toy": 1}, 4)
        remote = run_sweep(noisy_cells, payloads_dask, store, scheduler=cluster.scheduler_address,
                           quiet=True)
    assert os.path.exists(marker)  # a worker really died during the run
    for a, b in zip(local, remote, strict=True):
        xr.testing.assert_identical(a, b)


def test_dask_phase_diagram_equals_serial(tmp_path):
    distributed = pytest.importorskip("dask.distributed")
    kwargs = dict(rows=("mu_right", [0.0, 0.03]), cols=("noise", [0.0, 0.02]), seeds=2,
                  steps=3000, mu_left_ratio=2, chains_per_chunk=2)
    serial = phase_diagram(**kwargs)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  host="127.0.0.1", dashboard_address=None) as cluster:
        dask = phase_diagram(**kwargs, output=tmp_path / "d.nc",
                             scheduler=cluster.scheduler_address)
    _identical(serial, dask)
    _identical(serial, results.load(tmp_path / "d.nc"))


def test_overall_progress_counts_each_stage_once(tmp_path, capsys, monkeypatch):
    """Sweeps inside a multi-stage job advance its one bar chunk by chunk, to exactly 1 stage."""
    monkeypatch.setattr(Progress, "line_interval", 0.0)  # every line, to see each chunk
    from phasecore.progress import overall_progress

    payloads = [(i, 100 + i, None) for i in range(4)]
    with overall_progress(2, "job") as progress:
        store = ChunkStore(tmp_path / "a.nc")
        store.open({"toy": 1}, 4)
        run_sweep(noisy_cells, payloads, store)  # stage 1, in four chunks
        progress.advance()  # stage 2
        assert progress.done == pytest.approx(2.0)
    lines = [line for line in capsys.readouterr().err.splitlines() if line.startswith("progress")]
    assert lines[-1].startswith("progress job: 2/2 stages (100.0%)")
    assert [line.split()[2] for line in lines] == ["0/2", "0.25/2", "0.5/2", "0.75/2", "1/2", "2/2"]


def _first_chunk_interrupted(payload):
    if payload == 0:
        raise KeyboardInterrupt  # as Ctrl-C inside the first chunk
    return xr.Dataset({"x": ("i", [float(payload)])})


@pytest.mark.parametrize("finished", [0, 1])
def test_an_interrupted_sweep_says_whether_anything_is_kept(tmp_path, finished):
    """The interrupt message promises a resume only when a chunk was kept: a run stopped
    inside its first (or only) chunk says that the same command starts again."""
    from phasecore.sweeps import SweepInterrupted, run_chunked

    payloads = [1, 0] if finished else [0, 1]
    with pytest.raises(SweepInterrupted) as err:
        run_chunked(_first_chunk_interrupted, payloads, config={"n": 2},
                    output=tmp_path / "r.nc")
    if finished:
        assert "1/2 chunks are kept" in str(err.value)
        assert "rerun the same command to resume" in str(err.value)
    else:
        assert "nothing is kept" in str(err.value) and "resume" not in str(err.value)


def test_a_store_is_checked_as_it_would_be_opened_without_creating_anything(tmp_path):
    store = ChunkStore(tmp_path / "x.nc")
    store.check({"a": 1}, 2)
    assert not store.path.exists()  # nothing made
    store.open({"a": 1}, 2)
    store.check({"a": 1}, 2)  # would resume
    for config, n_chunks in (({"a": 2}, 2), ({"a": 1}, 3)):
        with pytest.raises(OutputExistsError, match="different configuration"):
            store.check(config, n_chunks)
        with pytest.raises(OutputExistsError, match="different configuration"):
            store.open(config, n_chunks)
    store.check({"a": 2}, 2, overwrite=True)
    store.open({"a": 2}, 2, overwrite=True)  # discarded, made anew
    store.check({"a": 2}, 2)
    store.meta.unlink()
    (store.path / "other").write_text("x")
    with pytest.raises(OutputExistsError, match="not a sweep store"):
        store.check({"a": 2}, 2)


def _constant_chunk(payload):
    return xr.Dataset({"x": ("i", [float(payload)])})


def test_more_workers_than_chunks_left_is_said(tmp_path, capsys, monkeypatch):
    """--workers 8 for 3 chunks (or a resumed sweep with 1 left) starts a pool of 3 (1): the
    run says so rather than silently running fewer workers than asked for."""
    import phasecore.sweeps as sweeps

    ran = []
    monkeypatch.setattr(sweeps, "run_tasks", lambda tasks, scheduler, workers, progress: ran.append(
        (scheduler, workers)) or {i: fn(*args) for i, (fn, args) in tasks.items()})
    store = ChunkStore(tmp_path / "r.nc")
    store.open({"n": 3}, n_chunks=3)
    store.write(0, _constant_chunk(0))
    run_sweep(_constant_chunk, [0, 1, 2], store, scheduler="processes", workers=8,
              label="toy sweep")
    assert ran == [("processes", 8)]
    assert "toy sweep: 2 chunks to compute, so a pool of 2 of the 8 workers asked for" in (
        capsys.readouterr().err)
    for workers, quiet in ((2, False), (None, False), (8, True)):  # as many or fewer: no word
        run_sweep(_constant_chunk, [0, 1], None, scheduler="processes", workers=workers,
                  quiet=quiet)
        assert "workers asked for" not in capsys.readouterr().err


def _interrupted_at(payload):
    if payload < 0:
        raise KeyboardInterrupt  # as Ctrl-C inside this chunk
    return _constant_chunk(payload)


def test_a_resumed_sweep_knows_what_all_its_runs_cost(tmp_path, capsys):
    """Each kept chunk carries its computing time; the run that finishes a resumed sweep
    says what all its chunks cost, over every run (a sweep resumed over days and machines),
    and the times go with the chunks, never into the result."""
    from phasecore.sweeps import SweepInterrupted, finish, run_chunked

    out, config = tmp_path / "r.nc", {"n": 3}
    with pytest.raises(SweepInterrupted):  # run 1 keeps chunk 0, stops in chunk 1
        run_chunked(_interrupted_at, [0, -1, 2], config=config, output=out)
    store = ChunkStore(out)
    assert store.done() == {0} and store.time_path(0).exists()
    assert not store.time_path(1).exists()
    assert store.cost().chunks == 1
    capsys.readouterr()
    sets, store = run_chunked(_constant_chunk, [0, 1, 2], config=config, output=out,
                              quiet=False)
    cost = store.cost()
    assert (cost.runs, cost.timed, cost.chunks) == (2, 3, 3) and cost.compute_s >= 0
    assert str(cost).startswith("its 3 chunks took ")
    assert str(cost).endswith(" in 2 runs on " + cost.hosts)
    assert f"r.nc: {cost}" in capsys.readouterr().err
    ds = finish(xr.concat(sets, "i"), "toy", config, store)
    assert not store.path.exists() and out.exists()
    assert not any("time" in key or "cost" in key for key in ds.attrs)


@pytest.mark.parametrize("bad", ["", "{not json", "[1, 2]", '{"compute_s": "abc"}',
                                 '{"compute_s": -4, "host": "h", "run": "r"}',
                                 '{"compute_s": NaN, "host": "h", "run": "r"}',
                                 '{"compute_s": 1.0, "host": ["h"], "run": "r"}',
                                 '{"compute_s": true, "host": "h", "run": "r"}', None])
def test_a_chunk_time_that_cannot_be_read_leaves_the_chunk_untimed(tmp_path, capsys, bad):
    """A damaged time (bad JSON, wrong types, a negative or non-finite number, a folder in
    its place) neither stops the sweep nor is counted: the cost says how many chunks it
    times; a time that cannot be written is said in one line, and the chunk is kept."""
    from phasecore.sweeps import run_chunked

    out, config = tmp_path / "r.nc", {"n": 3}
    with pytest.raises(KeyboardInterrupt):
        run_chunked(_interrupted_at, [0, 1, -1], config=config, output=out)
    store = ChunkStore(out)
    assert store.done() == {0, 1}
    store.time_path(1).unlink()
    if bad is None:  # a folder where chunk 1's time goes: it cannot be written
        store.time_path(1).mkdir()
        store.chunk_path(1).unlink()  # so that chunk 1 is computed (and timed) again
    else:
        store.time_path(1).write_text(bad)
    capsys.readouterr()
    sets, store = run_chunked(_constant_chunk, [0, 1, 2], config=config, output=out,
                              quiet=False)
    assert [float(d["x"][0]) for d in sets] == [0.0, 1.0, 2.0]
    cost = store.cost()
    assert (cost.timed, cost.chunks) == (2, 3) and ", 2 of them timed)" in str(cost)
    err = capsys.readouterr().err
    assert ("chunk 1's computing time was not kept" in err) == (bad is None)


def test_a_healed_chunk_loses_its_time_and_is_timed_again(tmp_path):
    store = ChunkStore(tmp_path / "r.nc")
    store.open({"n": 2}, 2)
    store.write(0, _constant_chunk(0))
    store.write_time(0, 5.0, "run-a")
    store.chunk_path(0).write_text("truncated")
    store.open({"n": 2}, 2)  # resume: the unreadable chunk and its time go
    assert store.done() == set() and not store.time_path(0).exists()
    assert store.cost() is None
