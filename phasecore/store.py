"""The on-disk store of a resumable sweep: one NetCDF file per finished chunk.

Storage: one small NetCDF file per finished chunk in ``<output>.parts/``,
written atomically (temporary file + rename) by whichever process computed
it, beside a ``sweep.json`` holding the sweep's configuration hash. We chose
files over Zarr region writes because a chunk file is either complete or
absent after a crash or a ``kill -9`` (a rename is atomic; a Zarr region
write is many files), concurrent writers on a cluster never touch the same
file, and the final result stays a single NetCDF file. The caller
consolidates the chunks into that file and then calls :meth:`ChunkStore.clear`.

Resume: a store opened again with the same configuration keeps its chunks, with or
without ``overwrite`` (a chunk depends on its configuration and seed only, so they are
what this run would compute: a sweep begun with ``--overwrite`` and interrupted resumes
when the same command is run again); a different configuration is refused unless
``overwrite``, which discards it. To compute a sweep's chunks afresh, delete the store.

Healing: on resume every chunk file is opened once; one that cannot be read
(a disk filled up, a copy was truncated) is deleted, reported in one line and
computed again. Leftover temporary files of killed writers are removed.

Timing: beside each chunk, the process that computed it keeps how long the computing took,
on which host and in which run (``chunk-NNNNNN.time.json``: one small file a chunk, so that
writers never share one, a killed run loses only the chunk it was computing, and a copy of
the folder merges file by file). A sweep resumed over days and machines so still knows what
its chunks cost (:meth:`ChunkStore.cost`); the result file never holds it, since a result
depends on its configuration and seed only. Keeping the time is best-effort: a time that
cannot be written or read leaves its chunk untimed, never the sweep stopped.
"""

from __future__ import annotations

import hashlib
import json
import math
import shutil
import socket
import sys
from pathlib import Path
from typing import NamedTuple

import xarray as xr

from phasecore.results import (
    ENGINE,
    OutputExistsError,
    check_output,
    write_atomic,
    write_text_atomic,
)

__all__ = ["ChunkStore", "ComputeCost", "config_hash"]


class ComputeCost(NamedTuple):
    """What a sweep's kept chunks cost: the seconds their computing took, summed over the
    chunks (with w workers busy at once the wall time is about a w-th of it), the runs and
    hosts they were computed in, and how many of the kept chunks carry a time."""

    compute_s: float
    runs: int
    hosts: str
    timed: int
    chunks: int

    def __str__(self) -> str:
        untimed = "" if self.timed == self.chunks else f", {self.timed} of them timed"
        return (f"its {self.chunks} chunk{'s' * (self.chunks != 1)} took {self.compute_s:.0f} s "
                f"of computing (summed over the chunks{untimed}) in {self.runs} "
                f"run{'s' * (self.runs != 1)} on {self.hosts}")


def config_hash(config: dict) -> str:
    """Stable hash of a JSON-serialisable configuration."""
    text = json.dumps(config, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


class ChunkStore:
    """The on-disk chunks of one sweep whose final result goes to ``output``."""

    def __init__(self, output):
        self.output = Path(output)
        self.path = self.output.with_name(self.output.name + ".parts")

    @property
    def meta(self) -> Path:
        return self.path / "sweep.json"

    def time_path(self, index: int) -> Path:
        return self.path / f"chunk-{index:06d}.time.json"

    def chunk_path(self, index: int) -> Path:
        return self.path / f"chunk-{index:06d}.nc"

    def open(self, config: dict, n_chunks: int, overwrite: bool = False) -> None:
        """Create the store, or resume one of ``config`` (even with ``overwrite``), or
        refuse one of another configuration (discard it with ``overwrite``)."""
        digest = config_hash({"config": config, "n_chunks": n_chunks})
        check_output(self.output, overwrite)
        self.check(config, n_chunks, overwrite)
        if self.meta.exists():
            if self._stored_hash(overwrite) == digest:
                self._heal()
                return  # resume
            self.clear()  # (refused above unless overwrite)
        self.path.mkdir(parents=True, exist_ok=True)
        write_text_atomic(self.meta, json.dumps({"hash": digest, "n_chunks": n_chunks,
                                                  "config": config}, default=str))

    def check(self, config: dict, n_chunks: int, overwrite: bool = False) -> None:
        """OutputExistsError unless :meth:`open` can open the store for ``config``: its
        folder is a file; or, without ``overwrite``, it holds an interrupted sweep of
        another configuration, or is a folder that is no store. Creates nothing, so that a
        caller running several sweeps can check them all before any work."""
        if self.path.exists() and not self.path.is_dir():  # the store's folder is taken
            raise OutputExistsError(f"{str(self.path)!r} is a file where the sweep keeps its "
                                    "chunks (a folder); remove or rename it")
        if overwrite:
            return
        if self.meta.exists():
            if self._stored_hash() != config_hash({"config": config, "n_chunks": n_chunks}):
                raise OutputExistsError(
                    f"{str(self.path)!r} holds an interrupted sweep with a different "
                    f"configuration{self._differences(config, n_chunks)}; rerun with the "
                    "same settings to resume, or pass overwrite=True (--overwrite) to "
                    "discard it"
                )
        elif self.path.exists() and any(self.path.iterdir()):
            raise OutputExistsError(
                f"{str(self.path)!r} exists but is not a sweep store (no sweep.json); "
                "remove it or pass overwrite=True (--overwrite)")

    def _differences(self, config: dict, n_chunks: int) -> str:
        """' (differs in: a, b)', the settings whose stored values differ from ``config``'s
        (a key only one side has counts: e.g. one an earlier version did not record)."""
        try:
            meta = json.loads(self.meta.read_text())
            old = dict(meta["config"], n_chunks=meta["n_chunks"])
        except (OSError, ValueError, KeyError, TypeError):
            return ""
        new = json.loads(json.dumps(dict(config, n_chunks=n_chunks), default=str))
        keys = sorted(k for k in old.keys() | new.keys() if old.get(k) != new.get(k))
        return f" (differs in: {', '.join(keys)})" if keys else ""

    def _stored_hash(self, overwrite: bool = False) -> str | None:
        """The stored configuration's hash; None for an unreadable one with ``overwrite``
        (it is discarded), which is refused otherwise."""
        try:
            return json.loads(self.meta.read_text())["hash"]
        except (OSError, ValueError, KeyError, TypeError) as err:
            if overwrite:
                return None
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
                self.time_path(index).unlink(missing_ok=True)
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

    def write_time(self, index: int, seconds: float, run: str) -> None:
        """Keep how long chunk ``index`` took to compute (``seconds``), here, in ``run`` (the
        driving process's id). Best-effort: a time that cannot be written is said in one
        line and its chunk stays untimed."""
        record = {"compute_s": round(float(seconds), 3), "host": socket.gethostname(),
                  "run": str(run)}
        try:
            write_text_atomic(self.time_path(index), json.dumps(record))
        except Exception as err:  # noqa: BLE001 (the chunk is kept: only its time is lost)
            print(f"{self.path}: chunk {index}'s computing time was not kept ({err}); the "
                  "chunk itself is", file=sys.stderr, flush=True)

    def cost(self) -> ComputeCost | None:
        """What the kept chunks cost (:class:`ComputeCost`), from the times kept beside them;
        None when none carries one. A time that cannot be read, or is not a finite number
        of seconds ≥ 0, counts as none: its chunk is untimed."""
        chunks = sorted(self.done())
        times = [t for t in map(self._read_time, chunks) if t is not None]
        if not times:
            return None
        return ComputeCost(compute_s=sum(t["compute_s"] for t in times),
                           runs=len({t["run"] for t in times}),
                           hosts=", ".join(sorted({t["host"] for t in times})),
                           timed=len(times), chunks=len(chunks))

    def _read_time(self, index: int) -> dict | None:
        try:
            record = json.loads(self.time_path(index).read_text())
        except (OSError, ValueError):
            return None
        if not isinstance(record, dict):
            return None
        seconds = record.get("compute_s")
        if (not isinstance(seconds, (int, float)) or isinstance(seconds, bool)
                or not math.isfinite(seconds) or seconds < 0):
            return None
        if not all(isinstance(record.get(k), str) for k in ("host", "run")):
            return None
        return record

    def clear(self) -> None:
        shutil.rmtree(self.path, ignore_errors=True)
