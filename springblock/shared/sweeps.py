"""Chunked, resumable, optionally distributed sweeps (shared by both packages).

A sweep is a list of independent *chunks*; ``compute(payload) -> Dataset``
turns one chunk's payload into its piece of the result. :func:`run_sweep`
runs the chunks that are not yet on disk and returns every chunk's Dataset
in chunk order.

Storage: one small NetCDF file per finished chunk in ``<output>.parts/``,
written atomically (temporary file + rename) by whichever process computed
it, beside a ``sweep.json`` holding the sweep's configuration hash. We chose
files over Zarr region writes because a chunk file is either complete or
absent after a crash or a ``kill -9`` (a rename is atomic; a Zarr region
write is many files), concurrent writers on a cluster never touch the same
file, and the final result stays a single NetCDF file. The caller
consolidates the chunks into that file and then calls :meth:`ChunkStore.clear`.

Resume: re-running the same sweep finds the chunk files and computes only the
missing ones. A different configuration against an existing store is refused
unless ``overwrite``. Because each chunk depends only on its own payload (its
cells and seeds), the consolidated result is identical whatever the chunking
order, worker count or number of interruptions.

Healing: on resume every chunk file is opened once; one that cannot be read
(a disk filled up, a copy was truncated) is deleted, reported in one line and
computed again. Leftover temporary files of killed writers are removed.

Schedulers: ``"serial"`` (this process; the chain kernels are already
multithreaded), ``"processes"`` (a local process pool, one thread per worker;
right for the network trainer), or a Dask distributed address such as
``"tcp://host:8786"`` (``pip install .[distributed]``). With Dask every worker
writes its own chunks, so the store must be on a filesystem the workers
share; a worker that dies loses only its unfinished chunk, which Dask
reschedules.

Interruption: Ctrl-C or SIGTERM stops a sweep within about a second: queued
chunks are cancelled, pool workers are terminated (a half-computed chunk is
simply lost, never half-written), and :class:`SweepInterrupted` (a
``KeyboardInterrupt``) says how to resume. Pool workers ignore Ctrl-C (the
parent decides) and exit by themselves if the parent dies, even by ``kill -9``.
"""

from __future__ import annotations

import concurrent.futures as cf
import contextlib
import hashlib
import json
import multiprocessing
import os
import shutil
import signal
import sys
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import xarray as xr

from springblock.shared.checks import ConfigError, is_int
from springblock.shared.results import (
    ENGINE,
    OutputExistsError,
    check_output,
    provenance,
    save,
    write_atomic,
)

SCHEDULERS = ("serial", "processes")
DASK_PREFIXES = ("tcp://", "tls://", "inproc://", "ucx://")


class SweepInterrupted(KeyboardInterrupt):
    """A sweep stopped by Ctrl-C or SIGTERM; its finished chunks are kept."""


def config_hash(config: dict) -> str:
    """Stable hash of a JSON-serialisable configuration."""
    text = json.dumps(config, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def validate_scheduler(scheduler: str) -> str:
    """Check the scheduler name, and that Dask is installed for an address."""
    if scheduler in SCHEDULERS:
        return scheduler
    if str(scheduler).startswith(DASK_PREFIXES):
        try:
            import dask.distributed  # noqa: F401
        except ImportError:
            raise ConfigError(
                f"scheduler {scheduler!r} needs Dask: pip install 'springblock-dnnphase"
                "[distributed]' (or choose serial or processes)") from None
        return scheduler
    raise ConfigError(
        f"scheduler must be one of {', '.join(SCHEDULERS)} or a Dask address like "
        f"tcp://host:8786 (got {scheduler!r})"
    )


def check_reachable(scheduler: str, timeout: float = 10.0) -> None:
    """A Dask scheduler address must answer (within ``timeout`` s) before any work starts."""
    if not str(scheduler).startswith(DASK_PREFIXES):
        return
    from dask.distributed import Client

    try:
        Client(scheduler, timeout=f"{timeout}s").close()
    except (OSError, TimeoutError) as err:
        raise ConfigError(f"scheduler {scheduler!r} does not answer ({type(err).__name__} after "
                          f"{timeout:g} s); start the Dask scheduler or choose serial or "
                          "processes") from None


def validate_workers(workers: int | None, scheduler: str = "processes") -> int | None:
    if workers is not None and not (is_int(workers) and workers >= 1):
        raise ConfigError(f"workers must be an integer >= 1, or unset (got {workers!r})")
    if workers is not None and scheduler != "processes":
        raise ConfigError(f"workers must be left unset with the {scheduler!r} scheduler (it "
                          f"sizes the process pool only; got {workers})")
    return workers


class ChunkStore:
    """The on-disk chunks of one sweep whose final result goes to ``output``."""

    def __init__(self, output):
        self.output = Path(output)
        self.path = self.output.with_name(self.output.name + ".parts")

    @property
    def meta(self) -> Path:
        return self.path / "sweep.json"

    def chunk_path(self, index: int) -> Path:
        return self.path / f"chunk-{index:06d}.nc"

    def open(self, config: dict, n_chunks: int, overwrite: bool = False) -> None:
        """Create the store, or check that an existing one belongs to ``config``."""
        digest = config_hash({"config": config, "n_chunks": n_chunks})
        check_output(self.output, overwrite)
        if self.meta.exists():
            stored = self._stored_hash()
            if stored == digest and not overwrite:
                self._heal()
                return  # resume
            if stored != digest and not overwrite:
                raise OutputExistsError(
                    f"{str(self.path)!r} holds an interrupted sweep with a different "
                    "configuration; rerun with the same settings to resume, or pass "
                    "overwrite=True (--overwrite) to discard it"
                )
            self.clear()
        elif self.path.exists() and any(self.path.iterdir()) and not overwrite:
            raise OutputExistsError(
                f"{str(self.path)!r} exists but is not a sweep store (no sweep.json); "
                "remove it or pass overwrite=True (--overwrite)")
        self.path.mkdir(parents=True, exist_ok=True)
        _atomic_write_text(self.meta, json.dumps({"hash": digest, "n_chunks": n_chunks,
                                                  "config": config}, default=str))

    def _stored_hash(self) -> str | None:
        try:
            return json.loads(self.meta.read_text())["hash"]
        except (OSError, ValueError, KeyError, TypeError) as err:
            raise OutputExistsError(
                f"{str(self.meta)!r} is unreadable ({type(err).__name__}); delete "
                f"{str(self.path)!r} or pass overwrite=True (--overwrite) to start afresh"
            ) from None

    def _heal(self) -> None:
        """Drop temporary files of killed writers and chunks that cannot be read."""
        for tmp in self.path.glob(".*.tmp"):
            tmp.unlink(missing_ok=True)
        bad = []
        for index in sorted(self.done()):
            try:
                self.read(index)
            except Exception:  # noqa: BLE001 (any unreadable file is recomputed)
                self.chunk_path(index).unlink(missing_ok=True)
                bad.append(index)
        if bad:
            print(f"{self.path}: {len(bad)} unreadable chunk file(s) {bad} removed; they will "
                  "be computed again", file=sys.stderr, flush=True)

    def done(self) -> set[int]:
        return {int(p.stem.split("-")[1]) for p in self.path.glob("chunk-*.nc")}

    def write(self, index: int, ds: xr.Dataset) -> None:
        write_atomic(ds, self.chunk_path(index))

    def read(self, index: int) -> xr.Dataset:
        with xr.open_dataset(self.chunk_path(index), engine=ENGINE) as ds:
            return ds.load()

    def clear(self) -> None:
        shutil.rmtree(self.path, ignore_errors=True)


def _atomic_write_text(path: Path, text: str) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text)
    os.replace(tmp, path)


def _compute_and_write(compute, payload, store_output, index) -> int:
    """Worker task: compute one chunk and write it to the store (any process)."""
    ChunkStore(store_output).write(index, compute(payload))
    return index


class Progress:
    """Work done / total with an ETA: a bar on a terminal, lines otherwise.

    Non-terminal lines have a fixed, parseable form (the ETA is ``?`` until
    some work has finished in this run)::

        progress <label>: <done>/<total> <unit>s (<pct>%) elapsed <s>s eta <s|?>s
    """

    def __init__(self, total: float, done: float = 0, label: str = "sweep", quiet: bool = False,
                 stream=None, unit: str = "chunk"):
        self.total, self.done, self.label, self.quiet = total, done, label, quiet
        self.unit = unit
        self.stream = stream or sys.stderr
        self.start = time.monotonic()
        self.start_done = done
        self.bar = None
        if not quiet and getattr(self.stream, "isatty", lambda: False)():
            from tqdm import tqdm

            self.bar = tqdm(total=total, initial=done, desc=label, unit=unit, file=self.stream,
                            bar_format=None if unit == "chunk" else
                            "{l_bar}{bar}| {n:.1f}/{total:g} {unit}s [{elapsed}<{remaining}]")
        else:
            self._line()

    def advance(self, n: float = 1) -> None:
        if not n:
            return
        self.done += n
        if self.bar is not None:
            self.bar.update(n)
        else:
            self._line()

    def _line(self) -> None:
        if self.quiet:
            return
        elapsed = time.monotonic() - self.start
        new = self.done - self.start_done
        eta = f"{elapsed / new * (self.total - self.done):.1f}" if new > 0 else "?"
        pct = 100.0 * self.done / self.total if self.total else 100.0
        done = f"{self.done:.2f}".rstrip("0").rstrip(".") if self.done % 1 else str(
            int(self.done))
        print(f"progress {self.label}: {done}/{self.total:g} {self.unit}s ({pct:.1f}%) "
              f"elapsed {elapsed:.1f}s eta {eta}s", file=self.stream, flush=True)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


class _StageOfOverall:
    """A sweep's progress reported as a fraction of one stage of the overall bar."""

    def __init__(self, overall: Progress, total: int, done: int):
        self.overall, self.step = overall, 1.0 / max(total, 1)
        if done:
            self.overall.advance(done * self.step)

    def advance(self, n: int = 1) -> None:
        self.overall.advance(n * self.step)

    def close(self) -> None:
        pass


_OVERALL: list[Progress] = []


@contextlib.contextmanager
def overall_progress(stages: int, label: str, quiet: bool = False):
    """One progress bar for a job of several stages (e.g. ``reproduce``).

    Sweeps run inside it advance the current stage chunk by chunk instead of
    drawing bars of their own; call ``.advance()`` after each other stage.
    """
    progress = Progress(stages, 0, label, quiet, unit="stage")
    _OVERALL.append(progress)
    try:
        yield progress
    finally:
        _OVERALL.pop()
        progress.close()


def _progress_for(total: int, done: int, label: str, quiet: bool):
    if _OVERALL:
        return _StageOfOverall(_OVERALL[-1], total, done)
    return Progress(total, done, label, quiet)


@contextlib.contextmanager
def interrupt_once():
    """Ctrl-C and SIGTERM raise one KeyboardInterrupt; repeats are ignored until the end.

    A second Ctrl-C must not interrupt the clean-up that the first one started
    (that is what left workers running and the parent hanging). Nested uses
    share the outer one, so a command line can wrap its whole run in it.
    """
    if (threading.current_thread() is not threading.main_thread()
            or getattr(signal.getsignal(signal.SIGINT), "interrupt_once", False)):
        yield
        return
    raised = []

    def handler(signum, frame):
        if not raised:
            raised.append(signum)
            raise KeyboardInterrupt

    handler.interrupt_once = True
    previous = {sig: signal.signal(sig, handler) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for sig, old in previous.items():
            if signal.getsignal(sig) is handler:  # not replaced meanwhile (see commandline.run)
                signal.signal(sig, old)


def run_sweep(
    compute: Callable[[Any], xr.Dataset],
    payloads: Sequence[Any],
    store: ChunkStore | None,
    *,
    scheduler: str = "serial",
    workers: int | None = None,
    quiet: bool = False,
    label: str = "sweep",
) -> list[xr.Dataset]:
    """Compute the chunks (with a store: only the missing ones), return all in order.

    ``compute`` must be a module-level function (it is pickled for process
    and Dask workers) and deterministic given its payload. A store must
    already be :meth:`ChunkStore.open`; every chunk is written to it as it
    finishes. Without one the chunks are only returned. Raises
    :class:`SweepInterrupted` on Ctrl-C or SIGTERM after stopping every worker.
    """
    validate_scheduler(scheduler)
    done = store.done() if store is not None else set()
    pending = [i for i in range(len(payloads)) if i not in done]
    if store is None:
        tasks = {i: (compute, (payloads[i],)) for i in pending}
    else:
        tasks = {i: (_compute_and_write, (compute, payloads[i], str(store.output), i))
                 for i in pending}
    progress = _progress_for(len(payloads), len(payloads) - len(pending), label, quiet)
    try:
        with interrupt_once():
            computed = _EXECUTORS.get(scheduler, _run_dask)(tasks, scheduler, workers, progress)
    except KeyboardInterrupt:
        progress.close()
        kept = (f"{len(store.done())}/{len(payloads)} chunks are kept in {str(store.path)!r}; "
                "rerun the same command to resume") if store is not None else \
            "nothing was stored (no output file)"
        raise SweepInterrupted(f"interrupted: {kept}") from None
    progress.close()
    if store is None:
        return [computed[i] for i in range(len(payloads))]
    missing = set(range(len(payloads))) - store.done()
    if missing:
        raise RuntimeError(f"sweep incomplete: chunks {sorted(missing)} were not written")
    return [store.read(i) for i in range(len(payloads))]


def _run_serial(tasks: dict, scheduler, workers, progress) -> dict:
    results = {}
    for i, (fn, args) in tasks.items():
        results[i] = fn(*args)
        progress.advance()
    return results


def _run_pool(tasks: dict, scheduler, workers, progress) -> dict:
    """A local process pool that stops at once when interrupted."""
    if not tasks:
        return {}
    ctx = multiprocessing.get_context("spawn")  # fork is unsafe with numba/torch threads
    n = min(workers or os.cpu_count() or 1, len(tasks))
    pool = cf.ProcessPoolExecutor(max_workers=n, mp_context=ctx, initializer=_pool_worker_init,
                                  initargs=(os.getpid(),))
    try:
        futures = {pool.submit(fn, *args): i for i, (fn, args) in tasks.items()}
        results = {}
        for fut in cf.as_completed(futures):
            results[futures[fut]] = fut.result()
            progress.advance()
    except BaseException:
        _stop_pool(pool)
        raise
    pool.shutdown(wait=True)
    return results


def _stop_pool(pool: cf.ProcessPoolExecutor) -> None:
    """Cancel queued chunks and terminate the workers (a running chunk is lost, not torn)."""
    processes = list((getattr(pool, "_processes", None) or {}).values())
    pool.shutdown(wait=False, cancel_futures=True)
    for proc in processes:
        proc.terminate()
    deadline = time.monotonic() + 3.0
    for proc in processes:
        proc.join(max(0.0, deadline - time.monotonic()))
        if proc.is_alive():
            proc.kill()
            proc.join(1.0)
    # Let the pool's manager thread see its dead workers and finish now; left running it
    # writes to a closed pipe at interpreter exit and prints a traceback.
    pool.shutdown(wait=True)


def _pool_worker_init(parent_pid: int) -> None:
    """Set up a pool worker: one thread, no Ctrl-C of its own, dies with its parent."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent stops the pool
    limit_threads(1)
    threading.Thread(target=_exit_with_parent, args=(parent_pid,), daemon=True,
                     name="exit-with-parent").start()


def _exit_with_parent(parent_pid: int, period: float = 0.5) -> None:
    # A worker whose parent was killed (even by SIGKILL) is re-parented: exit then.
    while os.getppid() == parent_pid:
        time.sleep(period)
    os._exit(1)


def limit_threads(n: int) -> None:
    """Cap every thread pool of this process (BLAS, OpenMP, numba, torch) at ``n``.

    numpy may already be imported when this runs, so its BLAS pool is capped
    through threadpoolctl rather than the environment.
    """
    os.environ["OMP_NUM_THREADS"] = str(n)
    os.environ["NUMBA_NUM_THREADS"] = str(n)
    try:
        from threadpoolctl import threadpool_limits

        threadpool_limits(n)
    except ImportError:
        pass
    if "torch" in sys.modules:  # a later import of torch reads OMP_NUM_THREADS
        import torch

        torch.set_num_threads(n)


def _run_dask(tasks: dict, address: str, workers, progress) -> dict:
    from dask.distributed import Client, as_completed

    with Client(address) as client:
        stamp = time.time_ns()
        futures = {client.submit(fn, *args, key=f"sweep-{stamp}-chunk-{i}", pure=False,
                                 retries=3): i
                   for i, (fn, args) in tasks.items()}
        results = {}
        try:
            for fut in as_completed(list(futures)):
                results[futures[fut]] = fut.result()
                progress.advance()
        except BaseException:
            client.cancel(list(futures))
            raise
    return results


_EXECUTORS = {"serial": _run_serial, "processes": _run_pool}


def run_chunked(
    compute: Callable[[Any], xr.Dataset],
    payloads: Sequence[Any],
    *,
    config: dict,
    output=None,
    overwrite: bool = False,
    scheduler: str = "serial",
    workers: int | None = None,
    quiet: bool = True,
    label: str = "sweep",
) -> tuple[list[xr.Dataset], ChunkStore | None]:
    """The sweep skeleton both packages share: chunks in memory, or resumable on disk.

    The chunks run on ``scheduler`` (one chunk always runs here). With
    ``output`` the store beside it is opened (resumed or refused, see
    :class:`ChunkStore`) and only the missing chunks run; without it nothing
    is stored. Returns the chunk Datasets and the store, which :func:`finish`
    clears after saving.
    """
    validate_scheduler(scheduler)
    validate_workers(workers, scheduler)
    check_reachable(scheduler)
    if len(payloads) == 1:
        scheduler = "serial"  # a pool would only add its start-up
    store = None
    if output is not None:
        store = ChunkStore(output)
        store.open(config, len(payloads), overwrite)
    return run_sweep(compute, payloads, store, scheduler=scheduler, workers=workers,
                     quiet=quiet, label=label), store


def finish(ds: xr.Dataset, kind: str, config: dict, store: ChunkStore | None) -> xr.Dataset:
    """Add provenance to an assembled sweep; with a store, save it and clear the chunks."""
    ds.attrs.update(provenance(kind, config))
    if store is not None:
        save(ds, store.output, overwrite=True)
        store.clear()
    return ds
