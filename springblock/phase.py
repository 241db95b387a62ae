"""Phase diagrams of the chain: a grid over two parameters x seeds.

Each cell of the grid is a :class:`~springblock.config.ChainConfig`; all its
seeds run in the same chunk so the stopping rule can watch the seed-mean load
curve. Chunks of cells are computed by :mod:`phasecore.sweeps` (resumable,
optionally distributed) and assembled into one labelled Dataset.
"""

from __future__ import annotations

import math
import os
from collections.abc import Sequence

import numpy as np
import xarray as xr

from phasecore import loadcurve
from phasecore.checks import (
    ConfigError,
    as_config,
    check_bools,
    check_grid,
    check_pool_can_start,
    parse_axis,
    require,
)
from phasecore.executors import check_reachable, validate_scheduler, validate_workers
from phasecore.results import check_output
from phasecore.sweeps import finish, run_chunked
from springblock import defaults, theory
from springblock import memory as budget
from springblock.checks import out_of_scale
from springblock.config import CHAIN_PARAMS, UNITS, ChainConfig
from springblock.ensemble import (
    FINITE_HORIZON_NOTE,
    chain_seed_list,
    diverged_variable,
    predict_many,
    run_ensemble,
    run_variables,
    scale_variable,
)

__all__ = ["compute_cells", "parse_grid", "phase_diagram"]


def parse_grid(spec: str) -> tuple[str, np.ndarray]:
    """``"mu_right=0:0.03:6"`` -> ("mu_right", array of 6 values); the name must be a
    chain parameter (:data:`springblock.config.CHAIN_PARAMS`)."""
    name, values = parse_axis(spec)
    _check_axis(name)
    return name, values


def _axes(rows, cols) -> tuple[tuple[str, np.ndarray], tuple[str, np.ndarray]]:
    """Both axes as (name, float array), checked: chain parameters, distinct, non-empty."""
    axes = []
    for which, axis in (("rows", rows), ("cols", cols)):
        require(isinstance(axis, str) or (isinstance(axis, (tuple, list)) and len(axis) == 2),
                which, "a (name, values) pair, e.g. ('noise', [0, 0.01]), or a spec string "
                "'name=start:stop:count'", axis)
        name, values = parse_grid(axis) if isinstance(axis, str) else axis
        _check_axis(name)
        values = np.asarray(check_grid(f"the {name} axis", values), dtype=np.float64)
        if np.unique(values).size != values.size:
            raise ConfigError(f"the {name} axis values must be distinct (got "
                              f"{values.tolist()!r})")
        axes.append((name, values))
    (row_name, _), (col_name, _) = axes
    if row_name == col_name:
        raise ConfigError(f"rows and cols must be different parameters (both {row_name!r})")
    return axes[0], axes[1]


def _check_ratio(ratio: float, axis_names: tuple[str, str], mu_left) -> None:
    if not (math.isfinite(ratio) and ratio >= 0):
        raise ConfigError(f"mu_left_ratio must be a finite number >= 0 (got {ratio})")
    if "mu_left" in axis_names:
        raise ConfigError("mu_left_ratio cannot be combined with a mu_left axis")
    if mu_left is not None:
        raise ConfigError("mu_left must be left unset when mu_left_ratio is given (the "
                          "ratio sets mu_left in every cell)")


def _check_axis_matters(names: tuple[str, str], config: ChainConfig) -> None:
    """Refuse an axis the dynamics ignore (every row or column would be the same)."""
    if "truncation" in names and config.noise_dist != "truncated":
        raise ConfigError("a truncation axis needs noise_dist truncated (--noise-dist truncated); "
                          "with Gaussian noise it changes nothing")
    if "damping" in names and config.dynamics == "overdamped":
        raise ConfigError("a damping axis needs the second_order or langevin dynamics "
                          "(--dynamics); the overdamped chain has no damping")
    if (config.noise_decay > 0 or "noise_decay" in names) and config.noise == 0 \
            and "noise" not in names:
        raise ConfigError("noise_decay applies to a chain with noise (noise = 0 and no noise "
                          "axis here: nothing decays); set noise > 0 or leave noise_decay 0")


def _check_axis(name: str) -> None:
    if name not in CHAIN_PARAMS:
        raise ConfigError(f"a phase-diagram axis must be one of {', '.join(CHAIN_PARAMS)} "
                          f"(got {name!r})")


def phase_diagram(
    rows: tuple[str, Sequence[float]] | str = defaults.ROWS,
    cols: tuple[str, Sequence[float]] | str = defaults.COLS,
    *,
    seeds=defaults.SEEDS,
    mu_left_ratio: float | None = None,
    config: ChainConfig | None = None,
    output=None,
    overwrite: bool = False,
    scheduler: str = "serial",
    workers: int | None = None,
    quiet: bool = True,
    chains_per_chunk: int = defaults.CHAINS_PER_CHUNK,
    theory_prediction: bool = True,
    **params,
) -> xr.Dataset:
    """Sweep two chain parameters; every cell runs every seed.

    The memory the diagram needs is checked before any work
    (:mod:`springblock.memory`).

    Parameters
    ----------
    rows, cols : (str, sequence of float) or str
        ``(name, values)`` or a spec string ``"name=start:stop:count"``; names from
        :data:`springblock.config.CHAIN_PARAMS`.
    seeds : int, range or list of int, default 10
        A count n (seeds 0..n-1), a range or a list of integers (each at most
        ``2**63 - 1``, ``2**32 - 1`` with ``rng='legacy'``). Cells with the same seed
        share their noise stream (common random numbers), which makes differences
        between cells less noisy.
    mu_left_ratio : float, optional
        If given, mu_left = ratio * mu_right in every cell.
    config : ChainConfig, optional
        The base configuration, or its fields as ``**params`` (defaults as in
        :mod:`springblock.defaults`: L=7, k=1, step 0.01; steps default to 100 000,
        i.e. T = 1000). ``algorithm="events"`` or ``"auto"`` runs the overdamped chain
        event-driven (:mod:`springblock.events`), which reaches any horizon,
        ``steps=math.inf`` (the stationary state) included. A parameter on an axis
        is set by the axis in every cell: given in ``params`` too, it is refused
        (``config``'s own value of it is the base the axis replaces).
    output : str or Path, optional
        NetCDF path; chunks are stored beside it while the sweep runs, so an
        interrupted call resumes when repeated. Existing output is refused unless
        ``overwrite``.
    overwrite : bool, default False
        Replace an existing output.
    scheduler : str, default "serial"
        Where the chunks run: "serial", "processes" or a Dask address (see
        :mod:`phasecore.sweeps`). Ctrl-C or SIGTERM stops the sweep within about a
        second whatever the scheduler (the chain kernels run in short slices,
        :mod:`springblock.runner`).
    workers : int, optional
        Processes of the pool (default: one per core).
    quiet : bool, default True
        False prints the expected run time of a long sweep (compilation of the
        kernels on first use included) and its progress.
    chains_per_chunk : int
        Chains computed together and stored as one resumable chunk.
    theory_prediction : bool, default True
        Add the mean-drift prediction of each cell.
    **params
        :class:`ChainConfig` fields of the base configuration.

    Returns
    -------
    xarray.Dataset
        Dims (<row>, <col>, seed, layer): ``load_curve``, ``curvature``,
        ``curvature_scaled``, ``steps_run``, ``horizon``, ``algorithm``, ``events``,
        ``frozen``, ``diverged``, ``out_of_scale`` (see :func:`springblock.simulate`);
        the theory beside it: ``theory_load_curve`` / ``theory_curvature`` /
        ``theory_curvature_scaled`` (mean-drift prediction at each cell's mean
        horizon, overdamped only), ``stationary_force`` F*, ``relaxation_time``.

    Raises
    ------
    ConfigError
        A bad axis, configuration or argument (every cell's configuration is
        built, and so checked, before any work), or a diagram that needs more
        memory than the machine has.
    """
    check_bools(theory_prediction=theory_prediction, overwrite=overwrite, quiet=quiet)
    (row_name, row_values), (col_name, col_values) = _axes(rows, cols)
    for axis in (row_name, col_name):
        if axis in params:  # every cell sets it: the value given would be dropped
            raise ConfigError(f"{axis} is an axis of the diagram (rows / cols); leave {axis} "
                              f"unset (got {params[axis]!r})")
    if config is not None:
        as_config(config, ChainConfig, {})  # a dict or a path is refused before its fields
    if mu_left_ratio is not None:
        _check_ratio(mu_left_ratio, (row_name, col_name),
                     config.mu_left if config is not None else params.get("mu_left"))
    if config is None:
        params.setdefault("steps", defaults.STEPS)
    config = as_config(config, ChainConfig, params)
    _check_axis_matters((row_name, col_name), config)
    if output is not None:  # a bad name is one line naming output, before anything else
        check_output(output, overwrite)
    # load curves, curvatures and steps of every chain, twice while assembling
    seed_values = chain_seed_list(seeds, config, "rows x cols x seeds",
                             2 * row_values.size * col_values.size * (config.blocks + 4))
    validate_scheduler(scheduler)
    validate_workers(workers, scheduler)
    check_reachable(scheduler)  # a Dask address that does not answer, before the estimate
    if chains_per_chunk < 1:
        raise ConfigError(f"chains_per_chunk must be >= 1 (got {chains_per_chunk})")

    # Build (and so validate) every cell's configuration before any work.
    cells, cell_configs = [], []
    for i, rv in enumerate(row_values):
        for j, cv in enumerate(col_values):
            changes = {row_name: float(rv), col_name: float(cv)}
            if mu_left_ratio is not None:
                changes["mu_left"] = mu_left_ratio * changes.get("mu_right", config.mu_right)
            cell_configs.append(config.replace(**changes))
            cells.append((i, j, cell_configs[-1].to_dict()))
    per_chunk = max(1, chains_per_chunk // len(seed_values))
    n_chunks = -(-len(cells) // per_chunk)
    here = scheduler if n_chunks > 1 else "serial"  # one chunk always runs here
    check_pool_can_start(here)
    pool = min(workers or os.cpu_count() or 1, n_chunks) if here == "processes" else 1
    budget.check_phase_memory(config, len(cells), seed_values.size, chains_per_chunk, pool,
                              theory_prediction, processes=here == "processes")
    estimate = budget.phase_seconds(cell_configs, seed_values.size, here, pool,
                                    theory_prediction, per_chunk)
    budget.check_time("springblock phase", estimate)
    if not quiet:
        budget.announce("springblock phase", estimate)
    payloads = [
        {"cells": cells[k:k + per_chunk], "seeds": seed_values.tolist(),
         "theory": theory_prediction,
         # a long chunk computed here reports its own progress (pool workers stay silent)
         "progress": None if quiet or here != "serial" else "phase chunk"}
        for k in range(0, len(cells), per_chunk)
    ]
    sweep_config = {"base": config.to_dict(), "rows": [row_name, row_values.tolist()],
                    "cols": [col_name, col_values.tolist()], "seeds": seed_values.tolist(),
                    "mu_left_ratio": mu_left_ratio, "theory": theory_prediction}
    chunks, store = run_chunked(compute_cells, payloads, config=sweep_config, output=output,
                                overwrite=overwrite, scheduler=scheduler, workers=workers,
                                quiet=quiet, label="phase diagram")
    ds = _assemble(chunks, (row_name, row_values), (col_name, col_values), seed_values, config)
    ds.attrs["note"] = FINITE_HORIZON_NOTE
    return finish(ds, "springblock.phase_diagram", sweep_config, store)


def compute_cells(payload: dict) -> xr.Dataset:
    """One chunk: run every (cell, seed) chain in one ensemble; label by cell.

    Module-level so process and Dask workers can unpickle it.
    """
    seeds = np.asarray(payload["seeds"], dtype=np.int64)
    cells = payload["cells"]
    configs = [ChainConfig(**c) for _, _, c in cells]
    n_cells, n_seeds, n_blocks = len(cells), len(seeds), configs[0].blocks
    result = run_ensemble([cfg for cfg in configs for _ in range(n_seeds)],
                          np.tile(seeds, n_cells), groups=np.repeat(np.arange(n_cells), n_seeds),
                          progress=payload.get("progress"))
    positions = result.positions.reshape(n_cells, n_seeds, n_blocks)
    steps = result.steps_run.reshape(n_cells, n_seeds)
    horizon = [math.inf if cfg.steps == math.inf else steps[k].mean() * cfg.step
               for k, cfg in enumerate(configs)]
    predicted = np.full((n_cells, n_blocks + 1), np.nan)
    if payload["theory"] and configs[0].dynamics == "overdamped":
        positions_now = predict_many(configs, horizon)  # (cells, L), cells side by side
        predicted = np.stack([theory.load_curve(x, cfg.target)
                              for x, cfg in zip(positions_now, configs, strict=True)])
    table = np.stack([cfg.param_row() for cfg in configs])  # (cells, N_PARAMS)
    return xr.Dataset(
        {
            "load_curve": (("cell", "seed", "layer"), np.stack(
                [theory.load_curve(positions[k], cfg.target) for k, cfg in enumerate(configs)])),
            "steps_run": (("cell", "seed"), steps),
            **run_variables(("cell", "seed"), result, (n_cells, n_seeds)),
            "theory_load_curve": (("cell", "layer"), predicted),
            "params": (("cell", "param"), table),
        },
        coords={"row_index": ("cell", [i for i, _, _ in cells]),
                "col_index": ("cell", [j for _, j, _ in cells])},
    )


def _assemble(chunks, rows, cols, seeds, base: ChainConfig) -> xr.Dataset:
    (row_name, row_values), (col_name, col_values) = rows, cols
    n_r, n_c, n_s, n_l = len(row_values), len(col_values), len(seeds), base.blocks + 1
    curves = np.full((n_r, n_c, n_s, n_l), np.nan)
    steps = np.zeros((n_r, n_c, n_s))
    runs = {"algorithm": np.full((n_r, n_c, n_s), "steps", dtype=object),
            "events": np.full((n_r, n_c, n_s), -1, dtype=np.int64),
            "frozen": np.zeros((n_r, n_c, n_s), dtype=bool)}
    predicted = np.full((n_r, n_c, n_l), np.nan)
    table = np.full((n_r, n_c, len(CHAIN_PARAMS)), np.nan)
    for chunk in chunks:
        i, j = chunk["row_index"].values, chunk["col_index"].values
        curves[i, j] = chunk["load_curve"].values
        steps[i, j] = chunk["steps_run"].values
        for name, arr in runs.items():
            arr[i, j] = chunk[name].values
        predicted[i, j] = chunk["theory_load_curve"].values
        table[i, j] = chunk["params"].values[:, list(CHAIN_PARAMS.values())]
    cell = {name: table[..., n] for n, name in enumerate(CHAIN_PARAMS)}  # each (rows, cols)
    dims = (row_name, col_name)
    gaussian = np.isinf(cell["truncation"])
    ds = xr.Dataset(
        {
            "load_curve": (dims + ("seed", "layer"), curves,
                           {"long_name": "load curve d = y - x", "units": "length"}),
            "curvature": (dims + ("seed",), loadcurve.curvature(curves),
                          {"long_name": "curvature (paper: first minus last gain)",
                           "units": "length"}),
            "curvature_scaled": (dims + ("seed",), loadcurve.curvature_scaled(curves),
                                 {"long_name": "scale-free curvature", "units": "1"}),
            "steps_run": (dims + ("seed",), steps, {"units": "steps"}),
            "horizon": (dims + ("seed",), steps * cell["step"][..., None],
                        {"long_name": "horizon T", "units": "time"}),
            "algorithm": (dims + ("seed",), runs["algorithm"].astype(str),
                          {"long_name": "kernel that ran the chain (steps or events)"}),
            "events": (dims + ("seed",), runs["events"],
                       {"long_name": "steps in which a block moved (event-driven; -1: step "
                                     "kernel)", "units": "steps"}),
            "frozen": (dims + ("seed",), runs["frozen"],
                       {"long_name": "frozen for ever: an exact stationary state"}),
            **diverged_variable(dims + ("seed",), curves),
            **scale_variable(dims + ("seed",), curves, out_of_scale(
                cell["noise"], cell["mu_right"], cell["mu_left"], cell["modulus"],
                cell["target"])[..., None]),
            "theory_load_curve": (dims + ("layer",), predicted,
                                  {"long_name": "mean-drift prediction at the mean horizon "
                                                "(steps=inf: the stationary state)",
                                   "units": "length"}),
            "theory_curvature": (dims, loadcurve.curvature(predicted),
                                 {"long_name": "curvature of the mean-drift prediction",
                                  "units": "length"}),
            "theory_curvature_scaled": (dims, loadcurve.curvature_scaled(predicted),
                                        {"long_name": "scale-free curvature of the prediction",
                                         "units": "1"}),
            "stationary_force": (dims, theory.stationary_force(
                cell["mu_right"], cell["mu_left"], cell["noise"], cell["truncation"]),
                {"long_name": "infinite-time block force F* (Eq. 8)", "units": "force"}),
            "relaxation_time": (dims, np.where(gaussian, theory.relaxation_time(
                cell["mu_right"], cell["mu_left"], cell["noise"], base.blocks, cell["modulus"]),
                np.nan), {"long_name": "relaxation time towards F* (Gaussian noise)",
                          "units": "time"}),
        },
        coords={
            row_name: (row_name, row_values, {"units": UNITS[row_name]}),
            col_name: (col_name, col_values, {"units": UNITS[col_name]}),
            "seed": seeds,
            "layer": ("layer", np.arange(n_l), {"long_name": "layer (0 = wall)"}),
        },
    )
    for name in ("mu_right", "mu_left", "noise"):
        if name not in dims:
            ds.coords[f"{name}_cell"] = (dims, cell[name], {"units": UNITS[name]})
    return ds
