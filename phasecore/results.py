"""Saving and loading labelled results (NetCDF), with provenance.

Every Dataset the project writes carries, in ``attrs``: ``kind`` (what made
it: "springblock.simulate", "springblock.phase_diagram", ...), the full
configuration as JSON, and the package versions. Writes are atomic (a
temporary file in the same directory, then a rename), so an interrupted
write never leaves a half-written result under the final name.
"""

from __future__ import annotations

import importlib.metadata
import json
import os
import platform
import uuid
from pathlib import Path

import xarray as xr

ENGINE = "netcdf4"  # the fastest NetCDF4 writer for many small chunk files


#: Suffixes of pictures: a NetCDF result written under one is a mistake.
FIGURE_SUFFIXES = (".png", ".pdf", ".svg", ".jpg", ".jpeg", ".eps")


class OutputExistsError(FileExistsError):
    """The output path exists and overwriting was not asked for."""


def package_versions() -> dict[str, str]:
    """Versions of Python and the packages that shape a result."""
    versions = {"python": platform.python_version()}
    for name in ("springblock-dnnphase", "numpy", "numba", "scipy", "xarray", "netCDF4",
                 "torch"):
        try:
            versions[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            pass
    return versions


def provenance(kind: str, config: dict) -> dict:
    """The standard attrs: kind, configuration (JSON) and package versions (JSON)."""
    return {
        "kind": kind,
        "config": json.dumps(config, sort_keys=True, default=str),
        "versions": json.dumps(package_versions(), sort_keys=True),
    }


def check_output(path, overwrite: bool = False, figure: bool = False) -> Path:
    """Refuse an existing output unless ``overwrite`` (and, unless ``figure``, a picture's
    name for a NetCDF result); return it as a Path."""
    path = Path(path)
    if path.is_dir():
        raise OutputExistsError(f"output {str(path)!r} is a folder; give a file name")
    if not figure and path.suffix.lower() in FIGURE_SUFFIXES:
        raise ValueError(f"output {str(path)!r} names a picture, but results are NetCDF: give "
                         "a .nc file (figures have their own option)")
    if path.exists() and not overwrite:
        raise OutputExistsError(
            f"output {str(path)!r} exists; choose another path or pass overwrite=True "
            "(--overwrite)"
        )
    if not path.parent.exists():
        raise FileNotFoundError(f"output directory {str(path.parent)!r} does not exist")
    return path


def _replace_atomically(path: Path, write) -> None:
    """Call ``write(tmp)`` on a unique hidden sibling of ``path``, then rename it onto ``path``.

    A rename is atomic: readers (and a resumed sweep) see the whole file or none,
    and concurrent writers never share a temporary file.
    """
    path = Path(path)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{uuid.uuid4().hex[:8]}.tmp")
    try:
        write(tmp)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def write_atomic(ds: xr.Dataset, path: Path) -> None:
    """Write ``ds`` as NetCDF to ``path`` atomically."""
    _replace_atomically(path, lambda tmp: ds.to_netcdf(tmp, engine=ENGINE))


def write_text_atomic(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` atomically."""
    _replace_atomically(path, lambda tmp: Path(tmp).write_text(text))


def save(ds: xr.Dataset, path, overwrite: bool = False) -> Path:
    """Write ``ds`` to NetCDF at ``path`` atomically, refusing to overwrite by default."""
    path = check_output(path, overwrite)
    write_atomic(ds, path)
    return path


def load(path, kind: str | None = None) -> xr.Dataset:
    """Open a result written by this project, loaded into memory.

    ``kind`` (a prefix such as "springblock.phase_diagram") checks that the file
    is the expected kind of result and raises ValueError otherwise.
    """
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"no such result file: {str(path)!r}")
    try:
        with xr.open_dataset(path, engine=ENGINE) as ds:
            ds = ds.load()
    except (OSError, ValueError) as err:
        raise ValueError(f"{str(path)!r} is not a NetCDF result file ({err})") from err
    if kind is not None and not str(ds.attrs.get("kind", "")).startswith(kind):
        raise ValueError(
            f"{str(path)!r} holds {ds.attrs.get('kind', 'no recognised result')!r}, "
            f"expected {kind!r}"
        )
    return ds


def config_of(ds: xr.Dataset) -> dict:
    """The configuration a result was made with (from its attrs)."""
    return json.loads(ds.attrs["config"])
