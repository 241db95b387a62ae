"""One command from nothing to every figure: ``dnnphase reproduce --preset quick``.

Steps (each result is a file in the output folder, so a rerun reuses what is
there and resumes what was interrupted):

1. the spring-block phase diagram (``spring_phase.nc``);
2. one network sweep per knob (``dnn_<knob>.nc``), recording load curves
   during training for the dynamics figure;
3. for every network cell, the chain parameters that best explain its mean
   load curve (``fit_<knob>.nc``), and the paper's dictionary read off the
   effective force with a bootstrap over seeds (``dictionary_<knob>.nc``);
4. the comparison report (``report_<knob>.nc``) and its summary (printed);
5. figures: ``phase_<knob>.png`` (networks beside the chain), ``fit_<knob>.png``
   (fitted parameter maps), ``accuracy_<knob>.png`` (accuracy vs curvature),
   ``dynamics_<knob>.png`` (load curves over training vs the chain over time, for three
   cells of the knob's own sweep: in the manner of the paper's Fig. 4, not its settings,
   which ``scripts/fig4_dynamics.py`` trains).

Presets: ``test`` (seconds; used by the test suite), ``quick`` (the README's
main job), ``knobs`` (all four knobs at the quick scale), ``paper`` (the
paper's four diagrams, 10 seeds; for a GPU or a cluster). The expected time
is printed before a preset starts.
"""

from __future__ import annotations

import json
import math
import os
import time
from pathlib import Path

import numpy as np
import xarray as xr

from dnnphase.compare.comparator.dictionary import effective_force_table
from dnnphase.compare.comparator.fitting import fit_chain
from dnnphase.compare.comparator.report import compare
from dnnphase.compare.comparator.words import dictionary_summary, summary
from dnnphase.knobs import larger_is_noisier
from phasecore import results
from phasecore.checks import (
    ConfigError,
    check_bools,
    check_distinct,
    check_pool_can_start,
    parse_axis,
)
from phasecore.executors import (
    busy_load,
    check_reachable,
    core_share,
    validate_scheduler,
    validate_workers,
)
from phasecore.progress import overall_progress, say, weighted
from springblock import defaults as chain

__all__ = ["CHUNK_SECONDS", "GPU_CHUNK_SECONDS", "GPU_SECONDS_PER_MODEL", "POOL_START_SECONDS",
           "PRESETS", "STARTUP_SECONDS", "expected_seconds", "reproduce", "stage_seconds"]

ALPHAS_PAPER = tuple(np.round(np.linspace(0, 1, 6), 10))
#: The chain's default phase diagram (springblock.defaults): 6 x 8 cells x 10 seeds,
#: T = 1000, mu<- = 2 mu->.
CHAIN_GRID = dict(rows=parse_axis(chain.ROWS), cols=parse_axis(chain.COLS), seeds=chain.SEEDS,
                  steps=chain.STEPS, mu_left_ratio=chain.MU_LEFT_RATIO)

#: Each preset: the chain's grid, the network sweeps, the fit's grid and
#: ``seconds_per_model``, the core-seconds one of its networks takes at 100 epochs (measured
#: with the CPU's fused hidden layer: the paper preset's 960 dropout networks train and are
#: measured in 21.4 min on 2 cores, 2.7 core-seconds each), which the printed estimate and
#: the progress's stage weights are built on (:func:`stage_seconds`).
PRESETS = {
    "test": {
        "spring": dict(rows=("mu_right", [0.0, 0.015, 0.03]), cols=("noise", [0.0, 0.01, 0.03]),
                       seeds=2, steps=5_000, mu_left_ratio=2.0),
        "networks": [dict(knob="dropout", values=(0.0, 0.3), alphas=(0.0, 1.0), seeds=(0, 1),
                          dataset="digits", n_train=300, depth=3, width=16, epochs=6,
                          record_every=2, measures=("trace_ratio",))],
        "fit_grid": (8, 8),
        "seconds_per_model": 0.3,
    },
    "quick": {
        "spring": CHAIN_GRID,
        # 3 alpha x 4 dropout x 2 seeds on the paper's network and data, 100 epochs.
        "networks": [dict(knob="dropout", values=(0.0, 0.1, 0.2, 0.3), alphas=(0.0, 0.5, 1.0),
                          seeds=(0, 1), dataset="mnist5k", epochs=100, record_every=10,
                          measures=("trace_ratio", "fuzziness", "cdnv", "ncc"))],
        "fit_grid": (24, 24),
        "seconds_per_model": 2.8,
    },
    "knobs": {
        "spring": CHAIN_GRID,
        # All four knobs at the quick preset's scale (3 alpha x 4 values x 2 seeds): the
        # dictionary table for every knob on a laptop (about 10 minutes on 2 cores).
        "networks": [
            dict(knob="dropout", values=(0.0, 0.1, 0.2, 0.3), alphas=(0.0, 0.5, 1.0),
                 seeds=(0, 1), epochs=100, record_every=10),
            dict(knob="lr", values=(1e-4, 1e-3, 1e-2, 1e-1), alphas=(0.0, 0.5, 1.0),
                 seeds=(0, 1), epochs=100, record_every=10),
            dict(knob="batch_size", values=(40, 160, 640, 2560), alphas=(0.0, 0.5, 1.0),
                 seeds=(0, 1), epochs=30, record_every=10),
            dict(knob="label_noise", values=(0.0, 0.2, 0.4, 0.8), alphas=(0.0, 0.5, 1.0),
                 seeds=(0, 1), epochs=100, record_every=10),
        ],
        "fit_grid": (24, 24),
        "seconds_per_model": 2.8,
    },
    "paper": {
        "spring": CHAIN_GRID,
        "networks": [
            dict(knob="dropout", values=tuple(np.round(np.linspace(0, 0.3, 16), 10)),
                 alphas=ALPHAS_PAPER, seeds=tuple(range(10)), epochs=100, record_every=10),
            dict(knob="lr", values=(1e-4, 3e-4, 1e-3, 3e-3, 1e-2, 3e-2, 0.1, 0.2, 0.5),
                 alphas=ALPHAS_PAPER, seeds=tuple(range(10)), epochs=200, record_every=20),
            dict(knob="batch_size", values=(5, 10, 20, 40, 80, 160, 320, 640, 1280, 2560),
                 alphas=ALPHAS_PAPER, seeds=tuple(range(10)), epochs=100, record_every=10),
            dict(knob="label_noise", values=tuple(np.round(np.linspace(0, 0.8, 9), 10)),
                 alphas=ALPHAS_PAPER, seeds=tuple(range(10)), epochs=100, record_every=10),
        ],
        "fit_grid": (24, 24),
        "seconds_per_model": 2.8,
    },
}


def _say(text: str, quiet: bool) -> None:
    if not quiet:  # (above the progress bar, not onto its end)
        say(text)


#: Times measured on a 2-core Xeon (one model alone, in core-seconds; the quick preset end to
#: end and stage by stage: 119 s with other work keeping about 1.3-2 cores busy, which the
#: estimate below puts at 107-126 s): the interpreter and imports before the first stage (s)
STARTUP_SECONDS = 3.0
#: ... spawning the sweep's pool workers, which import torch and load the data (s) ...
POOL_START_SECONDS = 3.0
#: ... one step of one chain of the phase diagram (core-seconds; L = 7), after the chain's
#: own start (loading its compiled kernels, s) ...
CHAIN_CORE_SECONDS_PER_STEP = 2.2e-7
CHAIN_START_SECONDS = 0.5
#: ... a sweep chunk's own cost besides its models' (stacking, measuring, storing; s) ...
CHUNK_SECONDS = 0.1
#: ... and one knob's analysis: the fit, the dictionary's bootstrap and the figures, as
#: seconds plus seconds per network cell (at fit_grid 24 x 24).
ANALYSIS_SECONDS = (1.0, 0.65)
#: Networks on CUDA, measured on one H100 (the paper preset: Fig. 1c's 960 models in about
#: 40 s, chunks of 320): seconds per model at 100 epochs, full batch, and per chunk.
GPU_SECONDS_PER_MODEL = 0.04
GPU_CHUNK_SECONDS = 1.0


def stage_seconds(preset: dict, cores: int | None = None, load: float | None = None,
                  workers: int | None = None, serial: bool = False,
                  on_cuda: bool = False) -> list[float]:
    """Estimated wall seconds of each stage of a preset, in the order they run: the
    chain's phase diagram, then per network knob its sweep and its analysis.

    A sweep is its chunks in rounds over the pool's workers (``serial``: one, in this
    process), each model ``seconds_per_model`` core-seconds at 100 epochs (measured; more
    epochs and smaller batches take longer); ``load`` (default: this machine's 1-minute
    load average) slows every stage by the share of the ``cores`` it leaves. With
    ``on_cuda`` the networks train one chunk after another on the GPU, at
    :data:`GPU_SECONDS_PER_MODEL`; the chain and the analyses stay on the CPU.
    """
    from dnnphase.sweeps.sweep import SweepConfig, chunk_plan

    cores = cores or os.cpu_count() or 1
    load = busy_load() if load is None else load
    chain_spec = preset["spring"]
    chains = len(chain_spec["rows"][1]) * len(chain_spec["cols"][1]) * chain_spec["seeds"]
    chain_core_seconds = CHAIN_CORE_SECONDS_PER_STEP * chains * chain_spec["steps"]
    one = core_share(1, cores, load)  # what runs on one core: starts, the analysis
    stages = [CHAIN_START_SECONDS / one
              + chain_core_seconds / (cores * core_share(cores, cores, load))]
    for net in preset["networks"]:
        cfg = SweepConfig(**net)
        n = len(cfg.values) * len(cfg.alphas) * len(cfg.seeds)
        per_model = (GPU_SECONDS_PER_MODEL if on_cuda else preset["seconds_per_model"]) \
            * cfg.epochs / 100
        if cfg.knob == "batch_size":
            # Small batches: many more steps per epoch. Measured on the paper preset (2
            # cores): a step costs about what 96 samples of a full-batch epoch do, so
            # batch 5 is 5x a full-batch model and batch 40 and up about 1x.
            per_model *= np.mean([max(1.0, 2560 / v / 96) for v in cfg.values])
        chunks = math.ceil(n / cfg.models_per_chunk)
        if on_cuda:  # the sweep's own chunks on a GPU
            chunks = len(chunk_plan(SweepConfig(**{"device": "cuda", **net})))
            stages.append(chunks * GPU_CHUNK_SECONDS + n * per_model)
        else:
            pool = 1 if serial or chunks == 1 else min(workers or cores, chunks)
            rounds = math.ceil(chunks / pool)
            sweep = rounds * (CHUNK_SECONDS + cfg.models_per_chunk * per_model) \
                / core_share(pool, cores, load)
            stages.append(sweep + (POOL_START_SECONDS / core_share(pool, cores, load)
                                   if pool > 1 else 0.0))
        fixed, per_cell = ANALYSIS_SECONDS
        grid = preset["fit_grid"][0] * preset["fit_grid"][1] / 24**2
        stages.append((fixed + per_cell * grid * len(cfg.values) * len(cfg.alphas)) / one)
    return stages


def expected_seconds(preset: dict, cores: int | None = None, load: float | None = None,
                     workers: int | None = None, serial: bool = False,
                     on_cuda: bool = False) -> float:
    """Estimated wall seconds of a whole preset, start-up included (:func:`stage_seconds`)."""
    return STARTUP_SECONDS + sum(stage_seconds(preset, cores, load, workers, serial, on_cuda))


def _duration(seconds: float) -> str:
    """'45 s', '2.1 min', '3.4 h'."""
    if seconds < 90:
        return f"{seconds:.0f} s"
    return f"{seconds / 60:.1f} min" if seconds < 5400 else f"{seconds / 3600:.1f} h"


def _result(path: Path, kind: str, config: dict, make, overwrite: bool,
            quiet: bool) -> tuple[xr.Dataset, bool]:
    """Reuse ``path`` if it holds the same configuration, else compute it: (Dataset, computed)."""
    if path.exists() and not overwrite:
        ds = results.load(path)
        if ds.attrs.get("kind") == kind and _experiment(json.loads(ds.attrs["config"])) == \
                _experiment(json.loads(json.dumps(config, default=str))):
            _say(f"  reusing {path}", quiet)
            return ds, False
        raise ConfigError(f"{path} exists with a different configuration; pass --overwrite "
                          "or choose another output folder")
    return make(), True


#: How a sweep was computed, not what: a result made on a GPU (larger default chunks) is
#: reused on a CPU and the other way round (float32 numbers differ only by rounding).
HOW_NOT_WHAT = ("models_per_chunk", "device")


def _experiment(config: dict) -> dict:
    return {k: v for k, v in config.items() if k not in HOW_NOT_WHAT}


def reproduce(preset: str = "quick", output="results", *, knobs=None, overwrite: bool = False,
              scheduler: str | None = None, workers: int | None = None,
              quiet: bool = False) -> dict[str, xr.Dataset]:
    """Run the whole pipeline of a preset; returns the report Dataset of each knob.

    Progress is one bar over all stages (the chain, then per knob its sweep and its
    analysis). Every configuration, the data, the device and the memory are checked
    before the chain starts.

    Parameters
    ----------
    preset : str, default "quick"
        A key of :data:`PRESETS` ("test" takes about a minute, "quick" tens of
        minutes).
    output : str or Path, default "results"
        The folder every result and figure is written to; a rerun in it resumes.
    knobs : str or sequence of str, optional
        Only these of the preset's knobs (default: all), e.g. one knob per machine
        into one shared folder.
    overwrite : bool, default False
        Recompute the results already in ``output`` (without it a result there with
        the same configuration is reused, one with another configuration refused).
    scheduler : str, optional
        Runs the network sweeps (default: a process pool; serial for the ``test``
        preset, whose chunks are too small to pay for workers, and on CUDA, where
        one GPU is one worker).
    workers : int, optional
        Processes of the pool (default: one per core).
    quiet : bool, default False
        True prints nothing.

    Returns
    -------
    dict of str to xarray.Dataset
        The report of :func:`compare` for each knob.

    Raises
    ------
    ConfigError
        An unknown preset or knob, a bad scheduler or worker count, data or a device
        that is not there.
    """
    from dnnphase.sweeps.sweep import SweepConfig, default_scheduler, runs_on_cuda, sweep

    check_bools(overwrite=overwrite, quiet=quiet)
    if preset not in PRESETS:
        raise ConfigError(f"preset must be one of {', '.join(PRESETS)} (got {preset!r})")
    spec = PRESETS[preset]
    out = results.check_output_folder(output)
    chosen = _chosen_knobs(spec, knobs)
    spec = {**spec, "networks": [net for net in spec["networks"] if net["knob"] in chosen]}
    configs = [SweepConfig(**net) for net in spec["networks"]]  # validate before any work
    net_scheduler = scheduler or ("serial" if preset == "test" and workers is None
                                  else default_scheduler(configs[0].device, workers))
    validate_scheduler(net_scheduler, auto=True)
    validate_workers(workers, net_scheduler)
    check_reachable(net_scheduler)
    for cfg in configs:  # the data, the device and the memory, before the chain starts
        cfg.preflight(net_scheduler, workers)
    check_pool_can_start(net_scheduler)
    out.mkdir(parents=True, exist_ok=True)
    n_models = sum(len(c.values) * len(c.alphas) * len(c.seeds) for c in configs)
    cores = os.cpu_count() or 1
    load = busy_load()
    serial = net_scheduler == "serial"
    on_cuda = any(runs_on_cuda(c.device) for c in configs)
    stages = stage_seconds(spec, cores, load, workers, serial, on_cuda)
    busy = f", {load:.1f} busy with other work" if load >= 0.5 else ""
    where = "the networks on CUDA at the speed of one H100, the rest on" if on_cuda else "on"
    _say(f"reproduce --preset {preset}: chain {len(spec['spring']['rows'][1])} x "
         f"{len(spec['spring']['cols'][1])} cells x {spec['spring']['seeds']} seeds; "
         f"{n_models} networks; expected about "
         f"{_duration(STARTUP_SECONDS + sum(stages))} ({where} the CPU's {cores} cores{busy})",
         quiet)
    weights = [len(stages) * t / sum(stages) for t in stages]  # sum: the number of stages
    start = time.monotonic()
    reports = {}
    with overall_progress(len(stages), f"reproduce {preset}", quiet) as progress:
        with weighted(progress, weights[0]):
            spring, computed = _chain(spec["spring"], out / "spring_phase.nc", overwrite, quiet)
            progress.advance(0 if computed else 1)  # a computed diagram advanced it by chunks
        for k, cfg in enumerate(configs):
            path = out / f"dnn_{cfg.knob}.nc"
            with weighted(progress, weights[1 + 2 * k]):
                network, computed = _result(
                    path, "dnnphase.sweep", cfg.to_dict(),
                    lambda cfg=cfg, path=path: sweep(cfg, output=path, overwrite=True,
                                                     scheduler=net_scheduler, workers=workers,
                                                     quiet=quiet), overwrite, quiet)
                progress.advance(0 if computed else 1)  # a sweep advances it chunk by chunk
            with weighted(progress, weights[2 + 2 * k]):
                reports[cfg.knob] = _analyse(spring, network, spec, out, quiet)
                progress.advance()
    _say(f"done in {time.monotonic() - start:.0f} s; results and figures in {out}/", quiet)
    return reports


def _chosen_knobs(spec: dict, knobs) -> list[str]:
    """The preset's knobs to run: all, or the ones asked for (each one of the preset's)."""
    available = [net["knob"] for net in spec["networks"]]
    if knobs is None:
        return available
    allowed = f"one or more of this preset's knobs: {', '.join(available)}"
    if isinstance(knobs, str):
        knobs = knobs.split(",")
    if not isinstance(knobs, (list, tuple)):
        raise ConfigError(f"knobs must be {allowed}, as a list or comma-separated (got {knobs!r})")
    chosen = [str(k).strip() for k in knobs]
    bad = [repr(k) for k in chosen if k not in available]
    if not chosen or bad:
        raise ConfigError(f"knobs must be {allowed} (not {', '.join(bad) or 'none'})")
    check_distinct("knobs", chosen)  # a repeated knob would be run, and reported, twice
    return chosen


def _chain(s: dict, path: Path, overwrite: bool, quiet: bool) -> tuple[xr.Dataset, bool]:
    """Stage 1: the chain's phase diagram (reused when the file holds the same grid)."""
    from springblock import phase_diagram

    if path.exists() and not overwrite:
        return _reuse_spring(path, s, quiet), False
    return phase_diagram(s["rows"], s["cols"], seeds=s["seeds"], steps=s["steps"],
                         mu_left_ratio=s["mu_left_ratio"], output=path, overwrite=True,
                         quiet=quiet, chains_per_chunk=chain.CHAINS_PER_CHUNK), True


def _analyse(spring: xr.Dataset, network: xr.Dataset, spec: dict, out: Path,
             quiet: bool) -> xr.Dataset:
    """Per knob: the fit, the dictionary table, the comparison report and the figures."""
    from dnnphase.compare.figures import comparison as figures  # matplotlib: only to draw
    from phasecore.panels import save_figure

    knob = network.attrs["knob"]
    horizon = float(spring["horizon"].mean())
    fit = fit_chain(network, horizon=horizon, mu_left_ratio=spec["spring"]["mu_left_ratio"],
                    grid=spec["fit_grid"], source=f"dnn_{knob}.nc")
    results.save(fit, out / f"fit_{knob}.nc", overwrite=True)
    table = effective_force_table(network, knob, larger_is_noisier=larger_is_noisier(network))
    results.save(table, out / f"dictionary_{knob}.nc", overwrite=True)
    report = compare(spring, network)
    results.save(report, out / f"report_{knob}.nc", overwrite=True)
    _say(summary(report) + "\n" + dictionary_summary(table), quiet)

    save_figure(figures.plot_side_by_side(spring, network), out / f"phase_{knob}.png")
    save_figure(figures.plot_fit(fit, knob, larger_is_noisier(network)), out / f"fit_{knob}.png")
    if not report.attrs["accuracy_missing"]:
        save_figure(figures.plot_accuracy_vs_curvature(network, report),
                    out / f"accuracy_{knob}.png")
    if "load_curve_epochs" in network:
        save_figure(_dynamics_figure(network, fit, knob, spec["spring"]["steps"], horizon),
                    out / f"dynamics_{knob}.png")
    return report


def _reuse_spring(path: Path, spec: dict, quiet: bool) -> xr.Dataset:
    """The stored chain phase diagram, if it was made with this preset's grid."""
    ds = results.load(path, kind="springblock.phase_diagram")
    stored = json.loads(ds.attrs["config"])
    same = (stored["rows"] == [spec["rows"][0], [float(v) for v in spec["rows"][1]]]
            and stored["cols"] == [spec["cols"][0], [float(v) for v in spec["cols"][1]]]
            and len(stored["seeds"]) == spec["seeds"] and stored["base"]["steps"] == spec["steps"]
            and stored["mu_left_ratio"] == spec["mu_left_ratio"])
    if not same:
        raise ConfigError(f"{path} exists with a different grid; pass --overwrite or choose "
                          "another output folder")
    _say(f"  reusing {path}", quiet)
    return ds


def _dynamics_figure(network: xr.Dataset, fit: xr.Dataset, knob: str, steps: int,
                     horizon: float):
    """Three cells (least noisy / middle / noisiest at alpha = 0) vs their fitted chains.

    The knob's own cells, drawn as the paper draws Fig. 4; the paper's three settings of
    Fig. 4 (lr, batch size and dropout together) are ``scripts/fig4_dynamics.py``'s.
    """
    from dnnphase.compare.figures.comparison import plot_dynamics
    from springblock import simulate

    alpha = float(network["alpha"].min())
    values = network[knob].values
    picks = sorted({0, len(values) // 2, len(values) - 1})
    net_curves, chain_curves, titles = [], [], []
    for j in picks:
        v = values[j]
        epochs = network["epoch"].values
        curves = network["load_curve_epochs"].sel(alpha=alpha, **{knob: v}).mean(
            "seed", skipna=True).values
        if "load_curve_epochs_test" in network:  # drawn dashed (older sweeps have none)
            net_curves.append((epochs, curves, network["load_curve_epochs_test"].sel(
                alpha=alpha, **{knob: v}).mean("seed", skipna=True).values))
        else:
            net_curves.append((epochs, curves))
        cell = fit.sel(alpha=alpha, **{knob: v})
        if np.isfinite(cell["mu_right"]):
            every = max(1, steps // max(1, len(epochs) - 1))  # as many frames as epochs
            chain = simulate(blocks=network.sizes["layer"] - 1,
                             mu_right=float(cell["mu_right"]), mu_left=float(cell["mu_left"]),
                             noise=float(cell["noise"]), steps=int(round(horizon / 0.01)),
                             record_every=every, seeds=16, theory_prediction=False)
            chain_curves.append((chain["time"].values,
                                 chain["trajectory"].mean("seed").values))
        else:
            chain_curves.append((np.array([0.0]), np.full((1, network.sizes["layer"]), np.nan)))
        titles.append(f"alpha {alpha:g}, {knob} {v:g}")
    return plot_dynamics(net_curves, chain_curves, titles)
