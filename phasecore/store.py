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

Timing: each run that computed chunks appends its wall time and how many chunks it finished
to ``runs.json`` beside them, so that a sweep resumed over days and machines still knows
what it cost in all (:meth:`ChunkStore.cost`); the result file never holds it, since a
result depends on its configuration and seed only.
"""

from __future__ import annotations

import hashlib
import json
import shutil
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

__all__ = ["ChunkStore", "RunsCost", "config_hash"]


class RunsCost(NamedTuple):
    """What the runs of a sweep that kept chunks cost: wall time summed over the runs (s),
    their number, the chunks they finished, where they ran."""

    wall_s: float
    runs: int
    chunks: int
    where: str

    def __str__(self) -> str:
        return (f"{self.wall_s:.0f} s of wall time over {self.runs} "
                f"run{'s' * (self.runs > 1)} ({self.chunks} "
                f"chunk{'s' * (self.chunks != 1)}; {self.where})")


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

    @property
    def runs(self) -> Path:
        return self.path / "runs.json"

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

    def log_run(self, seconds: float, finished: int, where: str) -> None:
        """Append one run to ``runs.json``: its wall time (s), the chunks it finished, and
        where they ran (e.g. "2 processes"). A run that finished none is not logged: its
        time bought nothing that was kept."""
        if finished <= 0 or not self.path.is_dir():
            return
        runs = self._read_runs()
        runs.append({"wall_s": round(float(seconds), 1), "chunks": int(finished),
                     "where": str(where)})
        write_text_atomic(self.runs, json.dumps(runs))

    def cost(self) -> RunsCost | None:
        """What the logged runs cost in all, or None when none is logged (an unreadable log
        counts as none). Chunks kept by a run that predates the log are not in it."""
        runs = self._read_runs()
        if not runs:
            return None
        return RunsCost(wall_s=sum(r["wall_s"] for r in runs), runs=len(runs),
                        chunks=sum(r["chunks"] for r in runs),
                        where=", ".join(dict.fromkeys(r["where"] for r in runs)))

    def _read_runs(self) -> list[dict]:
        try:
            runs = json.loads(self.runs.read_text())
        except (OSError, ValueError):
            return []
        if not isinstance(runs, list):
            return []
        keys = {"wall_s", "chunks", "where"}
        return [r for r in runs if isinstance(r, dict) and keys <= set(r)]

    def clear(self) -> None:
        shutil.rmtree(self.path, ignore_errors=True)
