"""Chunked, resumable, optionally distributed sweeps (shared by both packages).

A sweep is a list of independent *chunks*; ``compute(payload) -> Dataset``
turns one chunk's payload into its piece of the result. :func:`run_chunked`
opens the store (:mod:`phasecore.store`), runs the chunks that are not yet on
disk on a scheduler (:mod:`phasecore.executors`) and returns every chunk's
Dataset in chunk order; :func:`finish` labels and saves the assembled result.

Because each chunk depends only on its own payload (its cells and seeds), the
consolidated result is identical whatever the chunking order, worker count or
number of interruptions. An interrupted sweep raises :class:`SweepInterrupted`
(a ``KeyboardInterrupt``) saying how to resume.
"""

from __future__ import annotations

import os
import socket
import sys
import time
import uuid
from collections.abc import Callable, Sequence
from typing import Any

import xarray as xr

from phasecore.executors import (
    check_reachable,
    interrupt_once,
    resolve_scheduler,
    run_tasks,
    validate_scheduler,
    validate_workers,
)
from phasecore.progress import progress_for, say
from phasecore.results import OutputWriteError, provenance, save, write_failed
from phasecore.store import ChunkStore

__all__ = ["SweepInterrupted", "check_before_work", "finish", "files_digest", "run_chunked",
           "run_into_files", "run_sweep"]


class SweepInterrupted(KeyboardInterrupt):
    """A sweep stopped by Ctrl-C or SIGTERM; its finished chunks are kept."""


def _compute_and_write(compute, payload, store_output, index, run) -> int:
    """Worker task: compute one chunk and write it to the store (any process), with the
    seconds its computing took (:meth:`ChunkStore.write_time`)."""
    start = time.perf_counter()
    ds = compute(payload)
    seconds = time.perf_counter() - start
    store = ChunkStore(store_output)
    store.write(index, ds)
    store.write_time(index, seconds, run)
    return index


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
    finishes, with its computing time; a resumed sweep says at the end (unless ``quiet``)
    what all its kept chunks cost, over every run. Without one the chunks are only
    returned. Raises
    :class:`SweepInterrupted` on Ctrl-C or SIGTERM after stopping every worker.
    """
    validate_scheduler(scheduler)
    done = store.done() if store is not None else set()
    pending = [i for i in range(len(payloads)) if i not in done]
    if store is None:
        tasks = {i: (compute, (payloads[i],)) for i in pending}
    else:
        run = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"  # for the cost
        tasks = {i: (_compute_and_write, (compute, payloads[i], str(store.output), i, run))
                 for i in pending}
    progress = progress_for(len(payloads), len(payloads) - len(pending), label, quiet)
    if scheduler == "processes":  # chunks in flight at once, for the estimate of time left
        progress.workers = min(workers or os.cpu_count() or 1, max(len(pending), 1))
        if workers is not None and 0 < len(pending) < workers and not quiet:
            say(f"{label}: {len(pending)} chunk{'s' * (len(pending) > 1)} to compute, so a "
                f"pool of {len(pending)} of the {workers} workers asked for", stream=sys.stderr)
    try:
        with interrupt_once():
            computed = run_tasks(tasks, scheduler, workers, progress)
    except KeyboardInterrupt:
        progress.close()
        if store is None:
            kept = "nothing was stored (no output file)"
        elif not store.done():  # resuming would start from scratch: say so
            store.clear()  # its description alone: nothing left to refuse another sweep
            kept = (f"no chunk had finished (0/{len(payloads)}), so nothing is kept and the "
                    "same command starts again; smaller chunks keep more of a long run")
        else:
            kept = (f"{len(store.done())}/{len(payloads)} chunks are kept in "
                    f"{str(store.path)!r}; rerun the same command to resume")
        raise SweepInterrupted(f"interrupted: {kept}") from None
    progress.close()
    if store is None:
        return [computed[i] for i in range(len(payloads))]
    if done and not quiet:  # a resumed sweep: what all its runs' chunks cost
        cost = store.cost()
        if cost is not None:
            say(f"{store.output.name}: {cost}", stream=sys.stderr)
    missing = set(range(len(payloads))) - store.done()
    if missing:
        raise RuntimeError(f"sweep incomplete: chunks {sorted(missing)} were not written")
    return [store.read(i) for i in range(len(payloads))]


def check_before_work(config: dict, n_chunks: int, output, overwrite: bool,
                      scheduler: str) -> None:
    """What :func:`run_chunked` refuses about where it runs, checked before a caller's own
    estimates and messages: an interrupted sweep of another configuration at ``output``
    (without ``overwrite``), and a Dask ``scheduler`` that does not answer."""
    if output is not None:
        ChunkStore(output).check(config, n_chunks, overwrite)
    check_reachable(scheduler)


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

    The chunks run on ``scheduler`` (one chunk always runs here; ``"auto"``: a pool). With
    ``output`` the store beside it is opened (resumed or refused, see
    :class:`ChunkStore`) and only the missing chunks run; without it nothing
    is stored. Returns the chunk Datasets and the store, which :func:`finish`
    clears after saving.
    """
    validate_scheduler(scheduler, auto=True)
    validate_workers(workers, scheduler)
    check_reachable(scheduler)
    # one chunk runs here (a pool would only add its start-up); "auto" without an estimate
    # of the work is a pool (the caller resolves it with one: resolve_scheduler)
    scheduler, workers, _ = resolve_scheduler(scheduler, workers, len(payloads), None, 0.0)
    store = None
    try:
        if output is not None:
            store = ChunkStore(output)
            store.open(config, len(payloads), overwrite)
        return run_sweep(compute, payloads, store, scheduler=scheduler, workers=workers,
                         quiet=quiet, label=label), store
    except OutputWriteError as err:  # a chunk could not be written (a full disk)
        if store is None:
            raise
        raise write_failed(err, store.path) from err


def finish(ds: xr.Dataset, kind: str, config: dict, store: ChunkStore | None) -> xr.Dataset:
    """Add provenance to an assembled sweep; with a store, save it and clear the chunks."""
    ds.attrs.update(provenance(kind, config))
    if store is not None:
        try:
            save(ds, store.output, overwrite=True)
        except OutputWriteError as err:
            raise write_failed(err, store.path) from err
        store.clear()
    return ds


def files_digest(paths) -> dict[str, str]:
    """``{name: sha256 of its bytes (16 hex digits)}`` of input files: a resumable script's
    configuration, so that work kept from inputs that changed since is not resumed."""
    import hashlib
    from pathlib import Path

    out = {}
    for path in map(Path, paths):
        digest = hashlib.sha256()
        with open(path, "rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                digest.update(block)
        out[path.name] = digest.hexdigest()[:16]
    return out


def run_into_files(compute: Callable[[Any], xr.Dataset], payloads: Sequence[Any], outputs,
                   *, store: str, config: dict, workers: int | None = None,
                   label: str = "work", quiet: bool = False,
                   overwrite: bool = False, announce: str = "") -> list[xr.Dataset]:
    """A script's independent pieces of work, one output file each, resumable: piece i
    (``compute(payloads[i])``) is kept in ``<store>.parts/`` as it finishes (Ctrl-C: exit
    130, and the same command resumes, :class:`SweepInterrupted`), with a progress line and
    its estimate of the time left; when every piece is done, ``outputs[i]`` are written
    together (all or none) and the kept pieces removed. ``store``: the NetCDF name the
    pieces are kept beside (it is never written itself); ``config`` (with the inputs'
    :func:`files_digest`): what a kept piece must have been computed from. ``workers``:
    processes (1 or one piece: this process). The caller checks ``outputs`` beforehand
    (:func:`phasecore.results.check_new_outputs`); here they are replaced. ``overwrite``:
    kept pieces of another configuration are discarded (refused otherwise, naming
    ``--overwrite``); those of this one are resumed either way. ``announce``: a line
    printed (on stderr) once every check has passed, before any work: the estimate."""
    from phasecore.results import all_or_nothing, write_atomic

    ChunkStore(store).check(config, len(payloads), overwrite)  # before the announcement
    if announce:
        print(announce, file=sys.stderr, flush=True)

    scheduler = "serial" if (workers or 2) == 1 or len(payloads) == 1 else "processes"
    sets, parts = run_chunked(compute, payloads, config=config, output=store,
                              overwrite=overwrite, scheduler=scheduler,
                              workers=None if scheduler == "serial" else workers,
                              quiet=quiet, label=label)
    try:
        with all_or_nothing(outputs):
            for ds, path in zip(sets, outputs, strict=True):
                write_atomic(ds, path)
    except OutputWriteError as err:
        raise write_failed(err, parts.path) from err
    parts.clear()
    return sets
