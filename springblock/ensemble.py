"""Run chain ensembles: :func:`run_ensemble` (arrays) and :func:`simulate` (Dataset).

Data flows config -> parameter table -> kernel -> labelled Dataset. The
kernels in :mod:`springblock.dynamics` and :mod:`springblock.events` do the
physics, :mod:`springblock.algorithm` picks the kernel of each chain and the
steps its horizon resolves to, :mod:`springblock.runner` calls them in short
slices (stoppable, resumable, with progress) and :mod:`springblock.memory`
prices a run before it starts; this module validates, seeds and labels the result.
"""

from __future__ import annotations

import math
import sys
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import xarray as xr

from phasecore import loadcurve
from phasecore.checks import (
    MAX_RESULT_BYTES,
    ConfigError,
    as_config,
    check_bools,
    check_result_size,
    require,
)
from phasecore.results import OutputWriteError, check_output, provenance, save, write_failed
from phasecore.store import config_hash
from springblock import memory as budget
from springblock import runner, theory
from springblock.algorithm import LONG_HORIZON, choose_algorithm, resolved_steps
from springblock.checks import OUT_OF_SCALE, out_of_scale
from springblock.config import ChainConfig

FINITE_HORIZON_NOTE = (
    "Gaussian-noise load curves are finite-horizon objects: with unbounded noise "
    "every chain creeps towards the noise-independent state F* = (mu_right - mu_left)/2 "
    "on a time scale that grows like 1/Phi(-a/s). Read every curve together with its "
    "horizon T = steps_run * step. steps=inf (events or auto) runs Gaussian noise for "
    "20 relaxation times and bounded or no noise until the chain is frozen."
)


@dataclass
class EnsembleResult:
    """Raw output of :func:`run_ensemble` for M chains of L blocks.

    positions : (M, L) final x_1..x_L
    steps_run : (M,) float, the step whose state ``positions`` holds (fewer
        than requested if stopped; for steps=inf the resolved horizon, or the
        step of the last move of a frozen chain)
    trajectory : (M, R + 1, L) positions at steps 0, r, 2r, ... (r =
        record_every; NaN after a chain stopped), or None
    algorithm : (M,) "steps" or "events", the kernel that ran each chain
    events : (M,) int, steps in which something moved (event-driven chains;
        -1 for the step kernel)
    frozen : (M,) bool, no block can ever move again (an exact stationary
        state: no noise, or bounded noise below every threshold)
    """

    positions: np.ndarray
    steps_run: np.ndarray
    trajectory: np.ndarray | None
    algorithm: np.ndarray | None = None
    events: np.ndarray | None = None
    frozen: np.ndarray | None = None


#: The largest seed: seeds are stored as int64 (the kernels' seed arrays, the result's
#: ``seed`` coordinate, checkpoints), so a larger one would not be the seed asked for.
MAX_SEED = 2**63 - 1
#: ... with ``rng='legacy'``: numpy's legacy generator takes 32-bit seeds, and the kernel's
#: ``np.random.seed`` (numba) wraps a larger one silently (2**32 + 5 would replay seed 5).
MAX_LEGACY_SEED = 2**32 - 1


def max_seed(config: ChainConfig) -> int:
    """The largest seed ``config``'s generator takes exactly."""
    return MAX_LEGACY_SEED if config.rng == "legacy" else MAX_SEED


def _seed_range_text(config: ChainConfig) -> str:
    top = max_seed(config)
    if top == MAX_LEGACY_SEED:
        return f"0..{top} (2**32 - 1: rng='legacy' takes 32-bit seeds)"
    return f"0..{top} (2**63 - 1: seeds are stored as int64)"


def chain_seed_list(seeds, config: ChainConfig, what: str = "seeds",
               values_per_seed: float = 0) -> np.ndarray:
    """Seeds as int64: a count n (seeds 0..n-1), a ``range`` (the command line's
    ``--first-seed``) or a list of distinct integers, each in 0..:func:`max_seed`.

    ``values_per_seed``: float64 numbers of the result per seed, refused above the result
    limit (:func:`~phasecore.checks.check_result_size`, named ``what``); a count or a range
    is refused before its seeds are built (``seeds=10**12`` would need 8 TB for them alone).
    One seed's values beyond the limit are the chain's size, not the seeds: named as such.
    """
    if 8.0 * values_per_seed > MAX_RESULT_BYTES:
        recorded = f", record_every = {config.record_every}" if config.record_every else ""
        check_result_size(f"{what.replace('seeds', 'one seed')} with blocks = {config.blocks}"
                          f"{recorded}", values_per_seed, hint="fewer blocks" + (
                              ", a coarser record_every or fewer steps" if recorded else "")
                          + (", or a smaller grid" if "rows" in what else ""))
    if isinstance(seeds, (int, np.integer)) and not isinstance(seeds, bool):
        if seeds < 1:
            raise ConfigError(f"seeds must be a count >= 1 or a list of integers (got {seeds})")
        seeds = range(int(seeds))
    if isinstance(seeds, range):
        count = max(0, -(-(seeds.stop - seeds.start) // seeds.step))  # len() stops at 2**63
        check_result_size(what, count * values_per_seed)
        require(count > 0 and seeds.step > 0 and seeds.start >= 0
                and seeds[-1] <= max_seed(config), "seeds",
                f"a count >= 1 or a range of integers in {_seed_range_text(config)}", seeds)
        return np.arange(seeds.start, seeds.stop, seeds.step, dtype=np.int64)
    arr = np.asarray(seeds)
    valid = arr.ndim == 1 and arr.size > 0 and np.issubdtype(arr.dtype, np.integer)
    if not valid or (arr < 0).any() or arr.max() > max_seed(config):
        raise ConfigError(f"seeds must be a count >= 1 or a list of integers in "
                          f"{_seed_range_text(config)} (got {seeds!r})")
    if not (np.diff(arr) > 0).all() and np.unique(arr).size != arr.size:  # sorted: distinct
        raise ConfigError(f"seeds must be distinct (got {arr.tolist()!r})")
    check_result_size(what, arr.size * values_per_seed)
    return arr.astype(np.int64)


def run_ensemble(
    configs: Sequence[ChainConfig],
    seeds: np.ndarray,
    groups: np.ndarray | None = None,
    *,
    checkpoint: runner.Checkpoint | None = None,
    progress: str | None = None,
) -> EnsembleResult:
    """Advance one chain per (config, seed) pair: the engine under :func:`simulate` and
    :func:`springblock.phase_diagram`, for ensembles of chains that differ.

    A chain's result depends only on its own config and seed (and the algorithm
    that ran it). The kernels run in slices of ~0.1 s (:mod:`springblock.runner`):
    Ctrl-C or SIGTERM stops the run within about that (KeyboardInterrupt).

    Parameters
    ----------
    configs : sequence of ChainConfig, length M
        Chains may differ in every parameter of :data:`springblock.config.CHAIN_PARAMS`
        (and in ``algorithm``) but share ``blocks``, ``dynamics``, ``noise_sharing``,
        ``steps``, ``record_every``, the stopping rule and ``rng``.
    seeds : numpy.ndarray, (M,) int
        Each chain's seed.
    groups : numpy.ndarray, (M,) int, optional
        Labels of the chains whose seed-mean load curve the stopping rule watches
        (default: all chains one group).
    checkpoint : runner.Checkpoint, optional
        The state is saved there periodically and when interrupted, and a run with
        the same chains resumes from it bit for bit.
    progress : str, optional
        A label; a long run then reports its progress on stderr.

    Returns
    -------
    EnsembleResult
        ``positions`` (M, L), ``steps_run`` (M,), ``trajectory`` (M, times, L) or
        None, ``algorithm``, ``events`` and ``frozen`` (M,); a diverged chain's
        positions are NaN.

    Raises
    ------
    ConfigError
        Chains that differ in a field they must share.
    """
    plan = _plan(configs, seeds, groups)
    state = checkpoint.load(plan) if checkpoint is not None else None
    if state is not None and progress:
        print(f"{progress}: resuming at {100 * runner.fraction_done(plan, state):.1f}% of the "
              f"run from {str(checkpoint.path.parent)!r}", file=sys.stderr, flush=True)
    state = runner.fresh_state(plan) if state is None else state
    report = runner.Report(plan, state, progress) if progress else None
    runner.run(plan, state, checkpoint=checkpoint, report=report)
    return _result(plan, state)


def _plan(configs: Sequence[ChainConfig], seeds, groups) -> runner.Plan:
    base = configs[0]
    shared = ("blocks", "dynamics", "noise_sharing", "steps", "record_every", "stop_tol",
              "stop_window", "rng")
    for cfg in configs:
        for name in shared:
            if getattr(cfg, name) != getattr(base, name):
                raise ConfigError(f"{name} must be the same for every chain of an ensemble")
    n_chains = len(configs)
    return runner.Plan(
        base=base,
        params=np.stack([cfg.param_row() for cfg in configs]),  # (M, N_PARAMS)
        seeds=np.asarray(seeds, dtype=np.int64),
        groups=np.zeros(n_chains, dtype=np.int64) if groups is None else np.asarray(groups),
        algorithm=np.array([choose_algorithm(cfg) for cfg in configs]),
        horizon=np.array([resolved_steps(cfg) for cfg in configs], dtype=np.float64),
    )


def _result(plan: runner.Plan, st: runner.ChainState) -> EnsembleResult:
    """The finished state as an :class:`EnsembleResult` (diverged chains: one NaN state)."""
    fast = plan.algorithm == "events"
    out = EnsembleResult(
        positions=st.x,
        steps_run=np.where(fast, st.clock, st.done.astype(np.float64)),
        trajectory=st.traj if plan.base.record_every else None,
        algorithm=plan.algorithm,
        events=np.where(fast, st.events, -1).astype(np.int64),
        frozen=fast & (st.status == runner.FROZEN),
    )
    gave_up = int((fast & (st.status == runner.OUT_OF_EVENTS)).sum())
    if gave_up:
        warnings.warn(f"{gave_up} chain(s) made {runner.MAX_EVENTS} moves without freezing; "
                      "their state is reported at the last move (frozen = False)",
                      stacklevel=3)
    overflowed = ~np.isfinite(out.positions).all(axis=1)  # (M,)
    # inf - inf inside a kernel leaves a mix of +-inf, NaN and huge numbers: one NaN state
    # says "diverged" the same way for every kernel, and such a chain is not frozen
    out.positions[overflowed] = np.nan
    out.frozen[overflowed] = False
    return out


def simulate(config: ChainConfig | None = None, *, seeds=1, theory_prediction: bool = True,
             output=None, overwrite: bool = False, quiet: bool = True,
             **params) -> xr.Dataset:
    """Simulate an ensemble of identical chains, one per seed.

    Before any work the memory the run needs is estimated and refused beyond
    what the machine has available (:mod:`springblock.memory`).

    Parameters
    ----------
    config : ChainConfig, optional
        The chain (:class:`ChainConfig`); or pass its fields as keywords
        (``simulate(blocks=7, mu_right=0.1, mu_left=0.2, noise=0.1, seeds=64)``).
    seeds : int, range or list of int, default 1
        A count n (seeds 0..n-1), a ``range`` or a list of integers, each at most
        ``2**63 - 1`` (``2**32 - 1`` with ``rng='legacy'``).
    theory_prediction : bool, default True
        Add ``theory_load_curve``, the mean-drift prediction at the horizon
        (overdamped dynamics).
    output : str or Path, optional
        A NetCDF path the result is saved to; while the run goes on its state is
        kept in ``<output>.parts/`` (every minute, and when Ctrl-C or SIGTERM
        stops it), so the same call again resumes it, to the identical result.
    overwrite : bool, default False
        Replace an existing output, or the state of a different run there (both
        are refused otherwise).
    quiet : bool, default True
        False prints the expected run time of a long run (compilation included)
        and its progress, on stderr.
    **params
        :class:`ChainConfig` fields, when ``config`` is not given.

    Returns
    -------
    xarray.Dataset
        * ``load_curve (seed, layer)``: d_l = y - x_l, layer 0 (the wall) .. L;
        * ``curvature``, ``curvature_scaled (seed)`` (:mod:`phasecore.loadcurve`);
        * ``steps_run``, ``horizon (seed)`` (T = steps_run * step);
        * ``trajectory (seed, time, layer)`` if ``record_every`` > 0;
        * ``algorithm (seed)`` ("steps" or "events"), ``events (seed)`` (moves,
          event-driven chains) and ``frozen (seed)`` (exact stationary state);
        * ``diverged (seed)`` (positions overflowed) and ``out_of_scale (seed)``
          (noise or friction above 1e6 k|y|), each with a warning;
        * ``theory_load_curve (layer)``: the mean-drift prediction at the horizon
          (overdamped dynamics), and ``stationary_load_curve (layer)``: the
          infinite-time state of Eq. 8;
        * attrs: configuration, package versions, horizon, the finite-horizon note.

    Raises
    ------
    ConfigError
        A bad configuration or argument, or a run that needs more memory than the
        machine has.
    OutputExistsError
        ``output`` exists (or holds the state of another run) and not ``overwrite``.

    Examples
    --------
    >>> ds = simulate(blocks=7, mu_right=0.1, mu_left=0.2, noise=0.1, steps=2000, seeds=8)
    >>> ds["load_curve"].dims
    ('seed', 'layer')
    """
    check_bools(theory_prediction=theory_prediction, overwrite=overwrite, quiet=quiet)
    config = as_config(config, ChainConfig, params)
    require(config.noise_decay == 0 or config.noise > 0, "noise_decay",
            "0 for a chain without noise (noise = 0: nothing to decay)", config.noise_decay)
    records = config.steps // config.record_every + 1 if config.record_every else 1
    seed_values = chain_seed_list(seeds, config,
                             "seeds x recorded times" if config.record_every else "seeds",
                             records * (config.blocks + 1))
    budget.check_memory(budget.simulate_memory(config, len(seed_values), theory_prediction))
    estimate = budget.simulate_seconds(config, len(seed_values), theory_prediction)
    budget.check_time("springblock simulate", estimate)
    checkpoint = None
    if output is not None:
        output = check_output(output, overwrite)
        digest = config_hash({"config": config.to_dict(), "seeds": seed_values.tolist()})
        checkpoint = runner.Checkpoint(parts_folder(output) / "chains.npz", digest)
        checkpoint.open(overwrite)
    if not quiet:
        budget.announce("springblock simulate", estimate)
    result = run_ensemble([config] * len(seed_values), seed_values, checkpoint=checkpoint,
                          progress=None if quiet else "simulate")
    ds = _label(config, seed_values, result, theory_prediction)
    if output is not None:
        try:
            save(ds, output, overwrite=overwrite)
        except OutputWriteError as err:
            raise write_failed(err, parts_folder(output)) from err
        checkpoint.clear()
    return ds


def parts_folder(output) -> Path:
    """``<output>.parts``: where an unfinished run keeps its state (as sweeps do)."""
    output = Path(output)
    return output.with_name(output.name + ".parts")


def _label(cfg: ChainConfig, seeds, result: EnsembleResult, with_theory: bool) -> xr.Dataset:
    n = cfg.blocks
    layer = np.arange(n + 1)
    curves = theory.load_curve(result.positions, cfg.target)  # (M, L+1)
    ds = xr.Dataset(
        {
            "load_curve": (("seed", "layer"), curves,
                           {"long_name": "load curve d = y - x", "units": "length"}),
            "curvature": (("seed",), loadcurve.curvature(curves),
                          {"long_name": "curvature (paper: first minus last gain)",
                           "units": "length"}),
            "curvature_scaled": (("seed",), loadcurve.curvature_scaled(curves),
                                 {"long_name": "scale-free curvature", "units": "1"}),
            "steps_run": (("seed",), result.steps_run, {"units": "steps"}),
            "horizon": (("seed",), result.steps_run * cfg.step,
                        {"long_name": "horizon T", "units": "time"}),
            **run_variables(("seed",), result),
            **diverged_variable(("seed",), curves),
            **scale_variable(("seed",), curves, out_of_scale(
                cfg.noise, cfg.mu_right, cfg.mu_left_value, cfg.modulus, cfg.target)),
        },
        coords={"seed": seeds, "layer": ("layer", layer, {"long_name": "layer (0 = wall)"})},
    )
    if result.trajectory is not None:
        times = np.arange(result.trajectory.shape[1]) * cfg.record_every * cfg.step
        ds["trajectory"] = (("seed", "time", "layer"),
                            theory.load_curve(result.trajectory, cfg.target),
                            {"long_name": "load curve over time", "units": "length"})
        ds = ds.assign_coords(time=("time", times, {"units": "time"}))
    ds["stationary_load_curve"] = ("layer", theory.load_curve(stationary_positions(cfg),
                                                              cfg.target),
        {"long_name": "infinite-time load curve (Eq. 7 / Eq. 8)", "units": "length"})
    if with_theory and cfg.dynamics == "overdamped":
        ds["theory_load_curve"] = ("layer", theory.load_curve(predict(cfg), cfg.target),
                                   {"long_name": "mean-drift prediction at the horizon",
                                    "units": "length"})
    ds.attrs.update(provenance("springblock.simulate", cfg.to_dict()))
    ds.attrs["horizon"] = cfg.horizon
    ds.attrs["note"] = FINITE_HORIZON_NOTE
    return ds


def run_variables(dims: tuple, result: EnsembleResult, shape=None) -> dict:
    """``algorithm``, ``events`` and ``frozen`` per chain, as Dataset variables."""
    def arr(a):
        return a if shape is None else a.reshape(shape)

    return {
        "algorithm": (dims, arr(result.algorithm.astype(str)),
                      {"long_name": "kernel that ran the chain (steps or events)"}),
        "events": (dims, arr(result.events),
                   {"long_name": "steps in which a block moved (event-driven; -1: step "
                                 "kernel)", "units": "steps"}),
        "frozen": (dims, arr(result.frozen),
                   {"long_name": "frozen for ever: an exact stationary state"}),
    }


def diverged_variable(dims: tuple, curves: np.ndarray) -> dict:
    """``diverged``: a chain whose positions overflowed (any load-curve entry not finite).

    Warns with the count: such a chain is recorded, never silently averaged in
    (noise or step so large that a position passed 1e308).
    """
    diverged = ~np.isfinite(curves).all(axis=-1)  # (..., L+1) -> (...)
    if diverged.any():
        warnings.warn(f"{int(diverged.sum())} of {diverged.size} chain(s) diverged (positions "
                      "overflowed: noise or step too large); they are marked in 'diverged'",
                      stacklevel=4)  # the caller of simulate / phase_diagram
    return {"diverged": (dims, diverged, {"long_name": "positions overflowed (not finite)"})}


def scale_variable(dims: tuple, curves: np.ndarray, flagged) -> dict:
    """``out_of_scale``: chains run with noise or friction above 1e6 k|y| (flagged (...)
    bool, broadcast to the chains), and the warnings that flag absurd results.

    Warns for such chains that did not overflow (those are already
    ``diverged``), and for finite load curves whose scale-free curvature is
    undefined because they barely drop: no curvature is NaN without a word.
    """
    finite = np.isfinite(curves).all(axis=-1)  # (...,)
    flagged = np.broadcast_to(np.asarray(flagged, dtype=bool), finite.shape)
    loud = flagged & finite
    if loud.any():
        warnings.warn(f"{int(loud.sum())} of {loud.size} chain(s) ran with noise or friction "
                      f"above {OUT_OF_SCALE:g} x modulus x |target| (the largest spring "
                      "force): their load curves measure the noise or friction, not the chain; "
                      "they are marked in 'out_of_scale'", stacklevel=4)
    flat = finite & ~loud & ~np.isfinite(loadcurve.curvature_scaled(curves))
    if flat.any():
        warnings.warn(f"{int(flat.sum())} of {flat.size} chain(s) have an undefined scale-free "
                      f"curvature (NaN): their load curve drops by less than "
                      f"{loadcurve.MIN_RELATIVE_DROP:g} of its size (friction holds the blocks, "
                      "or the horizon is too short to move them)", stacklevel=4)
    return {"out_of_scale": (dims, flagged.copy(),
                             {"long_name": f"noise or friction above {OUT_OF_SCALE:g} k|y|"})}


def stationary_positions(cfg: ChainConfig) -> np.ndarray:
    """Infinite-time positions (L,): Eq. 7 without noise, Eq. 8 (F*) with noise."""
    if cfg.noise > 0:
        return theory.stationary_state(cfg.blocks, cfg.mu_right, cfg.mu_left_value, cfg.noise,
                                       cfg.effective_truncation, cfg.modulus, cfg.target)
    return theory.noiseless_state(cfg.blocks, cfg.mu_right, cfg.modulus, cfg.target)


def predict(cfg: ChainConfig, horizon: float | None = None) -> np.ndarray:
    """Mean-drift positions (L,) for an overdamped config at ``horizon`` (default T).

    An infinite horizon gives :func:`stationary_positions`; horizons beyond
    LONG_HORIZON use :func:`springblock.theory.predict_positions_logtime`.
    """
    horizon = cfg.horizon if horizon is None else horizon
    if horizon == math.inf:
        return stationary_positions(cfg)
    if horizon > LONG_HORIZON:  # integrate in log time: the cost stays flat
        return theory.predict_positions_logtime(
            cfg.blocks, cfg.mu_right, cfg.mu_left_value, cfg.noise, horizon,
            truncation=cfg.effective_truncation, noise_decay=cfg.noise_decay,
            modulus=cfg.modulus, target=cfg.target)
    return theory.predict_positions(
        cfg.blocks, cfg.mu_right, cfg.mu_left_value, cfg.noise,
        horizon, truncation=cfg.effective_truncation, noise_decay=cfg.noise_decay,
        modulus=cfg.modulus, target=cfg.target,
    )


def predict_many(configs: Sequence[ChainConfig], horizons: Sequence[float]) -> np.ndarray:
    """Mean-drift positions (n, L) of n overdamped configs of one chain length, each at its
    horizon: :func:`predict` of each, with the configs that share a horizon and every setting
    but mu->, mu<- and s integrated in one call (a phase diagram's cells).

    One call integrates its parameter sets side by side with the same steps and, set by set,
    the same elementwise arithmetic as a call each, so the positions are those of a call each
    bit for bit, at a fraction of the time (the integrator's cost is mostly per step).
    """
    out = np.empty((len(configs), configs[0].blocks))  # (n, L)
    together: dict[tuple, list[int]] = {}
    for k, (cfg, horizon) in enumerate(zip(configs, horizons, strict=True)):
        if horizon == math.inf or horizon > LONG_HORIZON:
            out[k] = predict(cfg, horizon)
            continue
        key = (cfg.blocks, float(horizon), cfg.effective_truncation, cfg.noise_decay,
               cfg.modulus, cfg.target)
        together.setdefault(key, []).append(k)
    for (blocks, horizon, truncation, decay, modulus, target), members in together.items():
        sets = [configs[k] for k in members]
        out[members] = theory.predict_positions(
            blocks, [c.mu_right for c in sets], [c.mu_left_value for c in sets],
            [c.noise for c in sets], horizon, truncation=truncation, noise_decay=decay,
            modulus=modulus, target=target)
    return out


__all__ = ["EnsembleResult", "run_ensemble", "simulate", "predict", "predict_many",
           "FINITE_HORIZON_NOTE", "stationary_positions", "chain_seed_list", "diverged_variable",
           "max_seed", "run_variables", "scale_variable"]
