"""A figure's named sweeps, each written to ``<folder>/<name>.nc`` and reused when it is
there: what the figure scripts (``scripts/universality.py``, ``scripts/separation_laws.py``)
share.

A file holding the same configuration (up to how it was computed: the chunking and the
device) is reused; one holding another configuration is an error, so that a scale is never
mixed with another in one folder; a sweep whose configuration another name's file holds
already (the same networks under two names) is copied from it.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from phasecore.checks import ConfigError, check_distinct

__all__ = ["HOW_NOT_WHAT", "check_folder", "check_only", "draw_figure", "figure_pool",
           "figure_scheduler", "run_named", "stored_matches", "twin"]

#: How a sweep was computed, not what: reused across these (as dnnphase reproduce does).
HOW_NOT_WHAT = ("models_per_chunk", "device")


def check_only(only, registry) -> list[str]:
    """The names ``only`` asks for (a list or comma-separated text), each a key of
    ``registry``, once; None: all of them in the registry's order. A ConfigError naming
    ``only`` otherwise."""
    if only is None:
        return list(registry)
    names = [str(n).strip() for n in (only.split(",") if isinstance(only, str) else only)]
    bad = [repr(n) for n in names if n not in registry]
    if not names or bad:
        raise ConfigError(f"only must be one or more of {', '.join(registry)}, comma-separated "
                          f"(not {', '.join(bad) or 'none'})")
    check_distinct("only", names)
    return names


def _what(config: dict) -> dict:
    return {k: v for k, v in config.items() if k not in HOW_NOT_WHAT}


def stored_matches(path: Path, cfg, strict: bool = True) -> bool:
    """Whether ``path`` holds this configuration's finished sweep (False: none there);
    another configuration there is a ConfigError (``strict``) or False."""
    from phasecore import results

    if not path.exists():
        return False
    stored = json.loads(results.load(path, kind="dnnphase.sweep").attrs["config"])
    if _what(stored) != _what(json.loads(json.dumps(cfg.to_dict(), default=str))):
        if not strict:
            return False
        raise ConfigError(f"{path} holds another configuration (another scale?); move it or "
                          "choose another folder")
    return True


def twin(folder: Path, name: str, cfg, names) -> Path | None:
    """Another of ``names``' finished files in ``folder`` with this configuration, or None."""
    for other in names:
        path = folder / f"{other}.nc"
        if other != name and path.exists() and stored_matches(path, cfg, strict=False):
            return path
    return None


def figure_scheduler(configs: dict, workers: int | None) -> str:
    """A figure script's scheduler when none is asked for: a process pool on the CPU; on
    CUDA this process (one GPU is one worker: a pool's workers would each hold a CUDA
    context and their chunks on the one device), unless ``workers`` asks for a pool; with
    ``workers`` 1 this process (a pool of one would only add a worker's start-up)."""
    from dnnphase.sweeps.sweep import runs_on_cuda

    if workers == 1:
        return "serial"
    cuda = any(runs_on_cuda(cfg.device) for cfg in configs.values())
    return "serial" if cuda and workers is None else "processes"


def figure_pool(configs: dict, workers: int | None) -> tuple[str, int | None]:
    """:func:`figure_scheduler` and the workers to run it with (None in this process, where
    ``workers`` only sizes a pool)."""
    scheduler = figure_scheduler(configs, workers)
    return scheduler, None if scheduler == "serial" else workers


def check_folder(folder, configs: dict, names, figures: dict, scheduler: str,
                 redraw: bool = False) -> Path:
    """Every check a figure script can make before any work, as a ConfigError (or the data
    set's FileNotFoundError) in one line: ``folder`` a folder name that is not a file nor
    under one; each sweep of ``configs`` (name -> configuration) finished there with this
    configuration, a twin among ``names``, or free of an interrupted sweep of another
    configuration (the scripts have no ``--overwrite``); its device and data set; no folder
    where one of ``figures`` (file name -> the names of the sweeps it draws) goes, and, unless
    ``redraw``, no figure there already that this run would draw from sweeps it computes (an
    existing figure is kept: see :func:`draw_figure`); ``scheduler`` reachable. Returns the
    folder."""
    from dnnphase.sweeps.sweep import load_data, stored_config
    from phasecore.checks import require
    from phasecore.executors import check_reachable
    from phasecore.results import check_output_folder
    from phasecore.store import ChunkStore

    require(str(folder).strip() != "", "folder", "a folder name", folder)
    folder = Path(folder)
    if folder.exists() and not folder.is_dir():
        raise ConfigError(f"folder must be a folder (got the file {str(folder)!r})")
    check_output_folder(folder)  # its parent a file, or not writable
    computed = set()  # the sweeps this run computes (neither finished there nor a twin's)
    for name, cfg in configs.items():
        path = folder / f"{name}.nc"
        if not stored_matches(path, cfg) and twin(folder, name, cfg, names) is None:
            computed.add(name)
            try:  # an interrupted sweep's chunks, of another configuration
                ChunkStore(path).check(*stored_config(cfg))
            except FileExistsError as err:
                raise ConfigError(f"{str(err).split(';')[0]}; move it or choose another "
                                  "folder") from None
        cfg.check_device()
        for member in cfg.per_depth():  # a missing data set: one line naming its fix
            member.check_data(load_data(member))
    for figure, drawn_from in figures.items():
        path = folder / figure
        if path.is_dir():  # found only when it is written, after the sweeps
            raise ConfigError(f"{str(path)!r} is a folder where the figure goes; "
                              "move it or choose another folder")
        fresh = [n for n in drawn_from if n in computed]
        if path.exists() and fresh and not redraw:
            raise ConfigError(f"{str(path)!r} exists and this run would draw it again from "
                              f"sweeps it computes ({', '.join(fresh)}); pass --redraw to "
                              "replace it, or move it or choose another folder")
    check_reachable(scheduler)  # a Dask address that does not answer
    return folder


def run_named(name: str, cfg, folder: Path, names, *, scheduler: str, workers, quiet: bool):
    """The sweep ``name`` of ``cfg``: reused from ``folder/<name>.nc``, copied from a twin
    of ``names``, or computed (resumably) into that file. Returns the Dataset."""
    from dnnphase.sweeps.sweep import sweep
    from phasecore import results

    path = folder / f"{name}.nc"
    other = twin(folder, name, cfg, names)
    if not path.exists() and other is not None:  # whole or not at all (a full disk)
        results.replace_atomically(path, lambda tmp: shutil.copyfile(other, tmp))
        print(f"{name}: the configuration of {other.name}, copied", flush=True)
    if stored_matches(path, cfg):
        print(f"reusing {path}", flush=True)
        return results.load(path, kind="dnnphase.sweep")
    n = len(cfg.alphas) * len(cfg.values) * len(cfg.seeds) * max(1, len(cfg.depths))
    print(f"{name}: {n} networks", flush=True)
    return sweep(cfg, output=path, scheduler=scheduler, workers=workers, quiet=quiet)


def draw_figure(path: Path, draw, redraw: bool) -> None:
    """Write the figure ``draw()`` returns to ``path``, unless ``path`` exists and not
    ``redraw``: a figure is a view of its sweep files, so an existing one (a committed one
    among them) is kept and the line printed says how to draw it again."""
    from phasecore.panels import save_figure

    if path.exists() and not redraw:
        print(f"kept {path} (drawn from its files before; --redraw draws it again)", flush=True)
        return
    save_figure(draw(), path)
