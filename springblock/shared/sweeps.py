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

Schedulers: ``"serial"`` (this process; the chain kernels are already
multithreaded), ``"processes"`` (a local process pool, one thread per worker;
right for the network trainer), or a Dask distributed address such as
``"tcp://host:8786"`` (``pip install .[distributed]``). With Dask every worker
writes its own chunks, so the store must be on a filesystem the workers
share; a worker that dies loses only its unfinished chunk, which Dask
reschedules.
"""

from __future__ import annotations

import concurrent.futures as cf
import hashlib
import json
import multiprocessing
import os
import shutil
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import xarray as xr

from springblock.shared.results import ENGINE, OutputExistsError, write_atomic

SCHEDULERS = ("serial", "processes")


def config_hash(config: dict) -> str:
    """Stable hash of a JSON-serialisable configuration."""
    text = json.dumps(config, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def validate_scheduler(scheduler: str) -> str:
    if scheduler in SCHEDULERS or str(scheduler).startswith(("tcp://", "tls://", "inproc://")):
        return scheduler
    raise ValueError(
        f"scheduler must be one of {', '.join(SCHEDULERS)} or a Dask address like "
        f"tcp://host:8786 (got {scheduler!r})"
    )


class ChunkStore:
    """The on-disk chunks of one sweep whose final result goes to ``output``."""

    def __init__(self, output):
        self.output = Path(output)
        self.path = self.output.with_name(self.output.name + ".parts")

    def chunk_path(self, index: int) -> Path:
        return self.path / f"chunk-{index:06d}.nc"

    def open(self, config: dict, n_chunks: int, overwrite: bool = False) -> None:
        """Create the store, or check that an existing one belongs to ``config``."""
        digest = config_hash({"config": config, "n_chunks": n_chunks})
        if self.output.exists():
            if not overwrite:
                raise OutputExistsError(
                    f"output {str(self.output)!r} exists; choose another path or pass "
                    "overwrite=True (--overwrite)"
                )
        if not self.output.parent.exists():
            raise FileNotFoundError(f"output directory {str(self.output.parent)!r} does not exist")
        meta = self.path / "sweep.json"
        if meta.exists():
            stored = json.loads(meta.read_text()).get("hash")
            if stored == digest and not overwrite:
                return  # resume
            if stored != digest and not overwrite:
                raise OutputExistsError(
                    f"{str(self.path)!r} holds an interrupted sweep with a different "
                    "configuration; rerun with the same settings to resume, or pass "
                    "overwrite=True (--overwrite) to discard it"
                )
            self.clear()
        self.path.mkdir(parents=True, exist_ok=True)
        _atomic_write_text(meta, json.dumps({"hash": digest, "n_chunks": n_chunks,
                                             "config": config}, default=str))

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
    """Chunks done / total with an ETA: a bar on a terminal, lines otherwise.

    Non-terminal lines have a fixed, parseable form::

        progress <label>: <done>/<total> chunks (<pct>%) elapsed <s>s eta <s>s
    """

    def __init__(self, total: int, done: int = 0, label: str = "sweep", quiet: bool = False,
                 stream=None):
        self.total, self.done, self.label, self.quiet = total, done, label, quiet
        self.stream = stream or sys.stderr
        self.start = time.monotonic()
        self.start_done = done
        self.bar = None
        if not quiet and getattr(self.stream, "isatty", lambda: False)():
            from tqdm import tqdm

            self.bar = tqdm(total=total, initial=done, desc=label, unit="chunk", file=self.stream)
        else:
            self._line()

    def advance(self, n: int = 1) -> None:
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
        eta = elapsed / new * (self.total - self.done) if new else float("nan")
        pct = 100.0 * self.done / self.total if self.total else 100.0
        print(f"progress {self.label}: {self.done}/{self.total} chunks ({pct:.1f}%) "
              f"elapsed {elapsed:.1f}s eta {eta:.1f}s", file=self.stream, flush=True)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


def run_sweep(
    compute: Callable[[Any], xr.Dataset],
    payloads: Sequence[Any],
    store: ChunkStore,
    *,
    scheduler: str = "serial",
    workers: int | None = None,
    quiet: bool = False,
    label: str = "sweep",
) -> list[xr.Dataset]:
    """Compute the missing chunks, then return all chunk Datasets in order.

    ``compute`` must be a module-level function (it is pickled for process
    and Dask workers) and deterministic given its payload. The store must
    already be :meth:`ChunkStore.open`.
    """
    validate_scheduler(scheduler)
    done = store.done()
    pending = [i for i in range(len(payloads)) if i not in done]
    progress = Progress(len(payloads), len(payloads) - len(pending), label, quiet)
    try:
        if scheduler == "serial":
            for i in pending:
                _compute_and_write(compute, payloads[i], store.output, i)
                progress.advance()
        elif scheduler == "processes":
            ctx = multiprocessing.get_context("spawn")  # fork is unsafe with numba/torch threads
            n = workers or os.cpu_count() or 1
            with cf.ProcessPoolExecutor(max_workers=n, mp_context=ctx,
                                        initializer=_single_thread) as pool:
                futures = [pool.submit(_compute_and_write, compute, payloads[i], store.output, i)
                           for i in pending]
                for fut in cf.as_completed(futures):
                    fut.result()
                    progress.advance()
        else:
            _run_dask(compute, payloads, pending, store, scheduler, progress)
    finally:
        progress.close()
    missing = set(range(len(payloads))) - store.done()
    if missing:
        raise RuntimeError(f"sweep incomplete: chunks {sorted(missing)} were not written")
    return [store.read(i) for i in range(len(payloads))]


def _single_thread() -> None:
    """Process-pool workers each use one thread: the pool provides the parallelism.

    numpy is already imported when this runs (unpickling the task imports it), so
    its BLAS pool is capped through threadpoolctl rather than the environment.
    """
    os.environ["OMP_NUM_THREADS"] = "1"
    os.environ["NUMBA_NUM_THREADS"] = "1"
    try:
        from threadpoolctl import threadpool_limits

        threadpool_limits(1)
    except ImportError:
        pass
    try:
        import torch

        torch.set_num_threads(1)
        torch.set_num_interop_threads(1)
    except (ImportError, RuntimeError):
        pass


def _run_dask(compute, payloads, pending, store, address, progress) -> None:
    try:
        from dask.distributed import Client, as_completed
    except ImportError as err:
        raise ImportError(
            "a Dask scheduler address needs the optional extra: pip install '.[distributed]'"
        ) from err
    with Client(address) as client:
        futures = [client.submit(_compute_and_write, compute, payloads[i], str(store.output), i,
                                 key=f"{store.path.name}-chunk-{i}-{time.time_ns()}", pure=False,
                                 retries=3)
                   for i in pending]
        for fut in as_completed(futures):
            fut.result()
            progress.advance()
