"""Saving and loading labelled results (NetCDF), with provenance.

Every Dataset the project writes carries, in ``attrs``: ``kind`` (what made
it: "springblock.simulate", "springblock.phase_diagram", ...), the full
configuration as JSON, the package versions, and the CPU kernels where they were chosen
by hand (``kernels``: the levers a second machine differs in). Writes are atomic (a
temporary file in the same directory, then a rename), so an interrupted
write never leaves a half-written result under the final name.
"""

from __future__ import annotations

import errno
import importlib.metadata
import json
import os
import platform
import shutil
import stat
import sys
import uuid
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import xarray as xr

from phasecore.checks import ConfigError, require

__all__ = ["ENGINE", "OutputExistsError", "OutputWriteError", "all_or_nothing", "as_result",
           "check_new_outputs", "check_output", "check_output_folder", "check_variables",
           "PACKAGE_KERNELS", "config_of", "kernel_settings", "load", "reproducible_kernels",
           "provenance", "replace_atomically", "save", "write_atomic", "write_error",
           "write_failed", "write_text_atomic"]

ENGINE = "netcdf4"  # the fastest NetCDF4 writer for many small chunk files


#: Suffixes of pictures: a NetCDF result written under one is a mistake.
FIGURE_SUFFIXES = (".png", ".pdf", ".svg", ".jpg", ".jpeg", ".eps")
#: Suffixes a NetCDF result may have (anything else would hide what the file holds).
NETCDF_SUFFIXES = (".nc", ".nc4", ".netcdf", ".cdf")


class OutputExistsError(FileExistsError):
    """The output path exists and overwriting was not asked for."""


class OutputWriteError(ConfigError):
    """Writing an output failed (a full disk, a lost mount): nothing was left under its name,
    and the command line says so in one line (exit code 2)."""


def check_path(name: str, path) -> Path:
    """A path given from Python: text or a path-like object, not empty, as a Path. A number
    or a dict where a path goes (``output=123``) is refused naming ``name``."""
    require(isinstance(path, (str, os.PathLike)), name, "a file name (str or pathlib.Path)",
            path)
    require(str(os.fspath(path)).strip() != "", name, "a file name", str(os.fspath(path)))
    return Path(path)


#: What a path that is not a regular file is, by its stat mode.
_NOT_FILES = ((stat.S_ISDIR, "a folder"), (stat.S_ISFIFO, "a named pipe (FIFO)"),
              (stat.S_ISSOCK, "a socket"), (stat.S_ISCHR, "a character device"),
              (stat.S_ISBLK, "a block device"))


def check_regular_file(path: Path) -> None:
    """A ConfigError unless ``path`` (which exists) is a regular file: reading a named pipe
    would wait for a writer forever, deaf to Ctrl-C and SIGTERM, and a device never ends."""
    mode = path.stat().st_mode
    if not stat.S_ISREG(mode):
        what = next((words for test, words in _NOT_FILES if test(mode)), "not a regular file")
        raise ConfigError(f"input {str(path)!r} must be a regular file, a result written "
                          f"by this project (got {what})")


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


#: The environment variables that choose which CPU kernels run (PyTorch's vector width,
#: MKL's branch, OpenBLAS's core type, numba's target): a rerun with other values is a rerun
#: "on another machine" (tests/portability.py). Thread counts are not among them: the
#: project's own pools set them, and a result never depends on them.
KERNEL_LEVERS = ("ATEN_CPU_CAPABILITY", "MKL_CBWR", "OPENBLAS_CORETYPE", "NUMBA_CPU_NAME")
#: The levers the package sets itself where the user has not (:func:`reproducible_kernels`).
PACKAGE_KERNELS = {"MKL_CBWR": "AUTO"}


def reproducible_kernels() -> None:
    """Ask MKL for its conditional numerical reproducibility (``MKL_CBWR=AUTO``: this CPU's
    fastest branch, chosen once), unless the environment already chooses a branch.

    Without it MKL may multiply a stack of matrices with other kernels than a single one
    (measured on an AMD EPYC with AVX-512: ``bmm`` of 2 matrices differs in the last bits
    from ``bmm`` of one), so a model's numbers would depend on its stack-mates. MKL reads
    the variable at its first call, so this runs when :mod:`dnnphase` is imported; a
    process that multiplied matrices with MKL before that keeps MKL's own dispatch."""
    for name, value in PACKAGE_KERNELS.items():
        os.environ.setdefault(name, value)


def kernel_settings() -> dict[str, str]:
    """The CPU kernels chosen by hand in this process: every :data:`KERNEL_LEVERS` that is
    set to other than the package's own setting (:data:`PACKAGE_KERNELS`) and, with them,
    PyTorch's vector width (where PyTorch is loaded; ``"DEFAULT"`` is its 128-bit baseline);
    {} where none is (the machine's own kernels)."""
    settings = {name: os.environ[name] for name in KERNEL_LEVERS
                if name in os.environ and os.environ[name] != PACKAGE_KERNELS.get(name)}
    torch = sys.modules.get("torch")  # never imported here: the chain's results need none
    if settings and torch is not None:
        settings["torch_cpu_capability"] = torch.backends.cpu.get_cpu_capability()
    return settings


def provenance(kind: str, config: dict) -> dict:
    """The standard attrs: kind, configuration (JSON), package versions (JSON) and, where
    kernels were chosen by hand, those kernels (``kernels``, JSON, :func:`kernel_settings`;
    absent on the machine's own kernels, so a rerun here writes the same bytes as before)."""
    attrs = {
        "kind": kind,
        "config": json.dumps(config, sort_keys=True, default=str),
        "versions": json.dumps(package_versions(), sort_keys=True),
    }
    kernels = kernel_settings()
    if kernels:
        attrs["kernels"] = json.dumps(kernels, sort_keys=True)
    return attrs


def check_output(path, overwrite: bool = False, figure: bool = False) -> Path:
    """Check an output file before any work; return it as a Path.

    Refused, each with one line naming the output: an empty name or a folder; a name
    that is not NetCDF (``.nc``) for a result (unless ``figure``: the figure's own check,
    :func:`phasecore.panels.check_figure_path`, reads its suffix); an existing file
    unless ``overwrite``; a folder that is missing, is a file, or does not accept new
    files (read-only, ``/sys``, ``/proc``). Nothing is left behind.
    """
    path = check_path("figure" if figure else "output", path)
    # "no" or 0.0 would be read as true or false: a file is replaced on a yes or no only
    require(isinstance(overwrite, (bool, np.bool_)), "overwrite", "True or False", overwrite)
    if path.is_dir():
        raise OutputExistsError(f"output {str(path)!r} is a folder; give a file name")
    suffix = path.suffix.lower()
    if not figure and suffix in FIGURE_SUFFIXES:
        raise ConfigError(f"output {str(path)!r} names a picture, but results are NetCDF: "
                          "give a .nc file (figures have their own option)")
    if not figure and suffix not in NETCDF_SUFFIXES:
        raise ConfigError(f"output must be a NetCDF file name ending in "
                          f"{' or '.join(NETCDF_SUFFIXES[:2])}: results are NetCDF "
                          f"(got {str(path)!r})")
    if path.exists() and not overwrite:
        raise OutputExistsError(
            f"output {str(path)!r} exists; choose another path or pass overwrite=True "
            "(--overwrite)"
        )
    _check_folder_accepts(path.parent, f"output {str(path)!r}", create=False)
    return path


def check_new_outputs(paths, overwrite: bool = False, option: str = "--overwrite") -> None:
    """Before any work: an OutputExistsError naming every file of ``paths`` that exists
    already, unless ``overwrite``; a folder where a file goes is refused either way.

    A script writes several files into a folder whose default is often a committed one
    (figures/...): none of them is replaced without ``overwrite`` (``option`` on the
    command line), so a quick run never replaces a committed result by accident.
    """
    require(isinstance(overwrite, (bool, np.bool_)), "overwrite", "True or False", overwrite)
    paths = [Path(p) for p in paths]
    folders = [str(p) for p in paths if p.is_dir()]
    if folders:
        raise ConfigError(f"output {', '.join(map(repr, folders))} is a folder; a file goes "
                          "there (move it or choose another folder)")
    there = [str(p) for p in paths if p.exists()]
    if there and not overwrite:
        what = "exists" if len(there) == 1 else "exist"
        raise OutputExistsError(f"output {', '.join(map(repr, there))} {what}; choose another "
                                f"folder or pass {option} to replace")


def check_output_folder(path) -> Path:
    """Check an output folder before any work (it is created later, when needed): not
    empty, not a file, and either present or creatable where its nearest existing
    parent accepts new entries. Returns it as a Path; creates nothing."""
    require(isinstance(path, (str, os.PathLike)), "output",
            "a folder name (str or pathlib.Path)", path)
    require(str(os.fspath(path)).strip() != "", "output", "a folder name", str(path))
    path = Path(path)
    if path.exists() and not path.is_dir():
        raise ConfigError(f"output must be a folder (got the file {str(path)!r})")
    _check_folder_accepts(path, f"output folder {str(path)!r}", create=True)
    return path


def _check_folder_accepts(folder: Path, what: str, create: bool) -> None:
    """ConfigError unless new entries can be written in ``folder`` (or, with ``create``,
    in its nearest existing parent, where it will be made): a parent that is a file or
    is missing, or a folder the system refuses to write in, is named."""
    folder = Path(folder) if str(folder) else Path(".")
    existing = folder
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    if existing.exists() and not existing.is_dir():
        raise ConfigError(f"{what} cannot be written: {str(existing)!r} is a file, not a "
                          "folder")
    if existing != folder and not create:
        raise FileNotFoundError(f"output directory {str(folder)!r} does not exist")
    reason = _write_probe(existing)
    if reason:
        raise ConfigError(f"{what} cannot be written: the folder {str(existing)!r} does not "
                          f"accept new files (making one there failed: {reason})")
    if _space_left(existing) == 0:  # (the probe could still be made: it is empty)
        raise ConfigError(f"{what} cannot be written: no space left on device (the file "
                          f"system of {str(existing)!r} has 0 bytes free)")


def _space_left(folder: Path) -> int | None:
    """Bytes an unprivileged writer may still use on ``folder``'s file system (None: unknown)."""
    try:
        st = os.statvfs(folder)
    except (OSError, AttributeError):  # (no statvfs on Windows)
        return None
    return st.f_bavail * st.f_frsize if st.f_blocks else None  # (/proc, /sys: no blocks)


def _disk_full(err: BaseException, folder: Path) -> bool:
    """Whether a failed write ran out of space: ENOSPC or a quota said so, or the file
    system is full now (netCDF4 reports a full disk as "NetCDF: HDF error")."""
    return getattr(err, "errno", None) in (errno.ENOSPC, errno.EDQUOT) or \
        _space_left(folder) == 0


def write_error(what: str, path, err: BaseException) -> OutputWriteError:
    """"<what> '<path>' could not be written (<err>)", saying "no space left on device" when
    that is why (the system's own words may not: "NetCDF: HDF error")."""
    why = ": no space left on device" if _disk_full(err, Path(path).parent) else ""
    return OutputWriteError(f"{what} {str(path)!r} could not be written{why} ({err})")


def _write_probe(folder: Path) -> str:
    """Why a new file cannot be made in ``folder`` ("" if it can): one is created and
    removed at once. Permission bits alone do not tell (root ignores them; read-only
    and virtual file systems such as /sys and /proc refuse anyway)."""
    probe = folder / f".{os.getpid()}.{uuid.uuid4().hex[:8]}.probe"
    try:
        with open(probe, "x"):
            pass
    except OSError as err:
        return err.strerror or type(err).__name__
    probe.unlink(missing_ok=True)
    return ""


def as_result(result, name: str, kind: str) -> xr.Dataset:
    """A result given from Python: a Dataset, or the path (str or Path) of a result file of
    ``kind``, which is opened (:func:`load`); anything else is a ConfigError naming
    ``name``."""
    if isinstance(result, xr.Dataset):
        return result
    if isinstance(result, (str, os.PathLike)):
        return load(result, kind=kind)
    raise ConfigError(f"{name} must be an xarray Dataset or the path (str or Path) of a "
                      f"{kind} result file (got {type(result).__name__} {result!r})")


def replace_atomically(path: Path, write) -> None:
    """Call ``write(tmp)`` on a unique hidden sibling of ``path``, then rename it onto ``path``.

    A rename is atomic: readers (and a resumed sweep) see the whole file or none,
    and concurrent writers never share a temporary file.
    """
    path = Path(path)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{uuid.uuid4().hex[:8]}.tmp")
    try:
        write(tmp)
        os.replace(tmp, path)
    except (OSError, RuntimeError) as err:  # netCDF4 reports a full disk as a RuntimeError
        raise OutputWriteError(f"{write_error('output', path, err)}; nothing was left under "
                               "its name (a file there before is as it was)") from err
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def write_failed(err: OutputWriteError, parts: Path) -> OutputWriteError:
    """The error of a run whose output could not be written, with what became of its
    resumable state in ``parts`` (``<output>.parts``): an empty folder is removed; one
    holding finished work is kept, named, for the same command to resume from once
    there is space, rather than thrown away with hours of computing in it."""
    parts = Path(parts)
    if parts.is_dir() and not any(p for p in parts.iterdir()  # a store's own description
                                  if p.name != "sweep.json" and not p.name.startswith(".")):
        shutil.rmtree(parts, ignore_errors=True)
    if parts.is_dir():
        return OutputWriteError(f"{err}; the finished work is kept in {str(parts)!r}: "
                                "remove the cause (space, permissions) and rerun the same "
                                "command to resume")
    return OutputWriteError(str(err))


@contextmanager
def all_or_nothing(paths, folder: Path | None = None):
    """Files written together: if the block fails, those of ``paths`` it created are removed
    (and ``folder`` if it was made for them), so no partial set is left behind for a rerun
    to refuse. Files that existed before are left to their own atomic replacement."""
    paths = [Path(p) for p in paths]
    new = [p for p in paths if not p.exists()]
    made_folder = folder is not None and not Path(folder).exists()
    if made_folder:
        Path(folder).mkdir(parents=True)
    try:
        yield
    except BaseException:
        for p in new:
            p.unlink(missing_ok=True)
        if made_folder and not any(Path(folder).iterdir()):
            Path(folder).rmdir()
        raise


def write_atomic(ds: xr.Dataset, path: Path) -> None:
    """Write ``ds`` as NetCDF to ``path`` atomically."""
    replace_atomically(path, lambda tmp: ds.to_netcdf(tmp, engine=ENGINE))


def write_text_atomic(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` atomically."""
    replace_atomically(path, lambda tmp: Path(tmp).write_text(text))


def save(ds: xr.Dataset, path, overwrite: bool = False) -> Path:
    """Write ``ds`` to NetCDF at ``path`` atomically, refusing to overwrite by default.

    The file appears whole or not at all: it is written beside ``path`` and renamed onto
    it, so an interrupted or failed write (a full disk) leaves any old file as it was.

    Parameters
    ----------
    ds : xarray.Dataset
        A result (any Dataset; the entry points' carry their provenance in ``attrs``).
    path : str or pathlib.Path
        The file to write, a NetCDF name (``.nc``) in a folder that exists.
    overwrite : bool, default False
        Replace an existing file; without, an existing ``path`` is refused.

    Returns
    -------
    pathlib.Path
        The path written.

    Raises
    ------
    ConfigError
        ``path`` is not a NetCDF name, or its folder does not accept new files.
    FileNotFoundError
        ``path``'s folder does not exist.
    FileExistsError
        ``path`` exists (without ``overwrite``) or is a folder.
    """
    require(isinstance(ds, xr.Dataset), "ds", "an xarray Dataset (a result to save)",
            type(ds).__name__)
    path = check_output(path, overwrite)
    write_atomic(ds, path)
    return path


def load(path, kind: str | None = None) -> xr.Dataset:
    """Open a result written by this project, loaded into memory (the file is closed).

    Parameters
    ----------
    path : str or pathlib.Path
        A NetCDF file written by :func:`save`, an entry point or a command line.
    kind : str, optional
        A prefix of the expected ``attrs["kind"]``, such as "springblock.phase_diagram"
        (None: any result).

    Returns
    -------
    xarray.Dataset
        The result, its provenance (``kind``, ``config``, ``versions``) in ``attrs``.

    Raises
    ------
    FileNotFoundError
        No file at ``path``.
    ValueError
        The file is not NetCDF, or not of ``kind``.
    """
    path = check_path("path", path)
    if not path.exists():
        raise FileNotFoundError(f"no such result file: {str(path)!r}")
    check_regular_file(path)
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


def check_variables(ds: xr.Dataset, needed: dict, what: str) -> None:
    """ValueError (one line) unless ``ds`` holds every variable of ``needed`` with at least
    the dimensions it lists: a result file edited or cut short is named, not failed on
    with a KeyError inside a figure."""
    missing = [name for name in needed if name not in ds.variables]
    if missing:
        raise ValueError(f"{what} lacks the variable(s) {', '.join(missing)}: not a complete "
                         "result of its kind")
    for name, dims in needed.items():
        lacking = [d for d in dims if d not in ds[name].dims]
        if lacking:
            raise ValueError(f"{what}: {name} lacks the dimension(s) {', '.join(lacking)} "
                             f"(has {', '.join(map(str, ds[name].dims)) or 'none'})")


def config_of(ds: xr.Dataset) -> dict:
    """The configuration a result was made with (from its attrs)."""
    return json.loads(ds.attrs["config"])
