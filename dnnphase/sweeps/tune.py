"""Choose a noise level from the training load curve: ``dnnphase tune``.

The paper's claim: of a family of networks, the one whose *training* load curve is
linear (scale-free curvature 0) generalises best. :func:`tune` turns it into a
procedure that needs no validation set: for one network (alpha, data, architecture,
training settings) and one noise knob it finds the knob value at which the seed-mean
curvature of the training load curve crosses zero, without a full grid.

Two halves (design and measurements: ``docs/tune.md``):

* :func:`search` — the pure search: a bracketing search on the knob's axis (log
  scale for the knobs whose ``KNOBS[knob].scale`` is "log", integers for
  ``batch_size``). It asks a callable ``curvature_of(values) -> (mean, se)`` for a
  few values per round, keeps the bracket around the sign change of the mean,
  narrows it round by round and stops at a tolerance, when both ends are within
  noise of zero, or at a budget. Deterministic; testable on any function.
* :func:`tune` — the training side: every round's values are one
  :func:`dnnphase.sweeps.sweep.sweep` (the values x seeds train together, stacked), stored
  beside the output so that an interrupted tune resumes where it stopped; the chosen
  value is trained once more with the seeds and recorded.

Test accuracy is recorded along the path but never used for choosing.
"""

from __future__ import annotations

import dataclasses
import json
import math
import sys
import warnings
from dataclasses import dataclass

import numpy as np
import xarray as xr

from dnnphase import defaults, knobs
from dnnphase.measures.separation_numpy import MEASURE_NAMES
from dnnphase.sweeps.sweep import SweepConfig, sweep
from dnnphase.sweeps.tune_search import (  # noqa: F401 (the search's defaults, shown by the CLI)
    ROUNDS,
    STOP_REASONS,
    TOLERANCE,
    VALUES_PER_ROUND,
    WITHIN_SE,
    Axis,
    Round,
    Search,
    search,
)
from phasecore.checks import (
    ConfigError,
    as_config,
    check_bools,
    is_finite,
    is_int,
    is_real,
    require,
    seed_list,
)
from phasecore.results import OutputWriteError, check_output, load, provenance, save, write_failed
from phasecore.store import ChunkStore
from phasecore.sweeps import SweepInterrupted

#: Where the rule was checked against a grid's best test accuracy (docs/tune.md, "Off the
#: paper's data"; figures/tune/cases.md): printed and stored with every result, because the
#: search finds the linear point reliably but linear is not always best.
CAVEAT = ("caveat: the linear value matched a grid's best test accuracy for MLPs on mnist5k "
          "and digits, but fell 3.5-34 points short on gmm, mnist1d with dropout and a "
          "short-trained digits CNN (docs/tune.md): off those cases, check it on held-out data")

__all__ = ["Round", "Search", "search", "tune"]

#: Models per value (the command line shows it, beside the search's defaults).
SEEDS = defaults.TUNE_SEEDS

# --------------------------------------------------------------------- the training side


#: Fields of SweepConfig that tune sets itself (its own parameters).
_OWN_FIELDS = {"knob": "knob", "values": "low / high", "alphas": "alpha", "seeds": "seeds"}


#: The most values one round trains together: a round of a million values was a million
#: models per seed, in 125 000 chunks, where a few values already narrow the bracket.
MAX_VALUES_PER_ROUND = 100


@dataclass(frozen=True)
class TuneSettings:
    """The search's own parameters, checked (see :func:`tune`)."""

    knob: str
    low: float
    high: float
    alpha: float
    values_per_round: int = VALUES_PER_ROUND
    rounds: int = ROUNDS
    tolerance: float = TOLERANCE
    within_se: float = WITHIN_SE
    max_models: int | None = None
    measure: str = defaults.MEASURE

    def check(self, n_seeds: int) -> None:
        knob = knobs.lookup(self.knob)
        for name in ("low", "high"):
            value = getattr(self, name)
            knobs.check(self.knob, value, label=name)
            require(knob.scale != "log" or value > 0, name,
                    f"> 0 ({self.knob} is searched on a log axis)", value)
        require(self.low < self.high, "high", f"greater than low ({self.low!r}): the range "
                "[low, high] of the search", self.high)
        require(is_real(self.alpha), "alpha", "one number in [0, 1] (tune works at one "
                "nonlinearity)", self.alpha)
        knobs.check("alpha", self.alpha)
        require(is_int(self.values_per_round)
                and 2 <= self.values_per_round <= MAX_VALUES_PER_ROUND, "values_per_round",
                f"an integer in 2..{MAX_VALUES_PER_ROUND} (the first round needs both ends of "
                "the range to bracket a sign change; each round trains its values together)",
                self.values_per_round)
        require(is_int(self.rounds) and self.rounds >= 1, "rounds", "an integer >= 1",
                self.rounds)
        require(is_finite(self.tolerance) and 0 < self.tolerance < 1, "tolerance",
                "in (0, 1) (a fraction of the range on the knob's axis)", self.tolerance)
        require(is_finite(self.within_se) and self.within_se >= 0, "within_se",
                "a number >= 0 (0: never stop on noise)", self.within_se)
        require(self.measure in MEASURE_NAMES, "measure", f"one of {', '.join(MEASURE_NAMES)}",
                self.measure)
        # the stop on noise compares a value's mean with its standard error over the seeds
        require(n_seeds >= 2 or self.within_se == 0, "seeds", "at least 2 while within_se "
                "> 0 (its stop on noise needs a standard error over seeds; with one seed pass "
                "within_se=0, --within-se 0)", n_seeds)
        least = (self.values_per_round + 1) * n_seeds
        require(self.max_models is None or (is_int(self.max_models)
                                            and self.max_models >= least), "max_models",
                f"an integer >= {least} (a first round of values_per_round values and the "
                f"final models, {n_seeds} seed{'s' * (n_seeds != 1)} each), or unset",
                self.max_models)

    @property
    def scale(self) -> str:
        return knobs.KNOBS[self.knob].scale

    @property
    def integer(self) -> bool:
        return knobs.KNOBS[self.knob].range.integer


def _defaults_from(config: SweepConfig | None, knob, low, high, alpha, seeds) -> tuple:
    """The tune parameters left unset, from ``config`` (or tune's own defaults)."""
    if knob is None:  # a sweep's default knob (dropout) when there is no config
        knob = config.knob if config is not None else SweepConfig.knob
    knobs.lookup(knob)
    if config is not None and config.knob == knob:
        grid = config.values
    else:
        grid = knobs.KNOBS[knob].default_values
    low = min(grid) if low is None else low
    high = max(grid) if high is None else high
    if alpha is None:
        alphas = config.alphas if config is not None else (0.0,)
        require(len(alphas) == 1, "alpha", "one number in [0, 1] (tune works at one "
                "nonlinearity; the configuration has several alphas)", alphas)
        alpha = alphas[0]
    if seeds is None:
        seeds = config.seeds if config is not None else SEEDS
    return knob, low, high, alpha, seed_list(seeds, at_most=defaults.MAX_SEEDS)


def _base_config(config, settings: TuneSettings, seeds, first_values,
                 sweep_fields) -> SweepConfig:
    """The sweep configuration of every round (values replaced round by round)."""
    names = {f.name for f in dataclasses.fields(SweepConfig)}
    for name in sweep_fields:
        if name in _OWN_FIELDS:
            raise ConfigError(f"{name} is set by tune itself: give {_OWN_FIELDS[name]}")
        require(name in names, "keyword", "a tune parameter or a SweepConfig field "
                f"({', '.join(sorted(names - set(_OWN_FIELDS)))})", name)
    fields = config.to_dict() if config is not None else {}
    fields.pop("models_per_chunk", None)  # a config's own: sized for its grid
    fields.update(sweep_fields)
    fields.update(knob=settings.knob, alphas=(settings.alpha,), seeds=seeds,
                  values=tuple(first_values))
    if "measures" not in sweep_fields:
        fields["measures"] = (settings.measure,)
    cfg = SweepConfig(**fields)
    # A round's curvature is one number per value and seed: of one network, one depth.
    require(not cfg.depths, "depths", "unset for tune (it searches at one depth: give depth "
            "/ --depth, one tune per depth)", list(cfg.depths))
    require(settings.measure in cfg.measures, "measure",
            f"one of the measures computed ({', '.join(cfg.measures)})", settings.measure)
    if "models_per_chunk" not in sweep_fields:  # a round trains as one stack
        from dnnphase.sweeps.sweep import runs_on_cuda

        cap = defaults.MODELS_PER_CHUNK_CUDA if runs_on_cuda(cfg.device) \
            else defaults.MODELS_PER_CHUNK
        cfg = cfg.replace(models_per_chunk=min(cap, settings.values_per_round * len(seeds)))
    return cfg


def _as_values(settings: TuneSettings, values) -> list:
    """Values as a sweep takes them: ints for an integer knob."""
    return [int(v) for v in values] if settings.integer else [float(v) for v in values]


def _seed_stats(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Mean and standard error over the last axis (seeds), NaNs left out."""
    n = np.isfinite(x).sum(axis=-1)
    with np.errstate(invalid="ignore", divide="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN values: NaN, as meant
        mean = np.nanmean(x, axis=-1)
        se = np.nanstd(x, axis=-1, ddof=1) / np.sqrt(n)
    return mean, np.where(n >= 2, se, np.nan)


class _Trainer:
    """Trains the rounds as sweeps, reusing those already on disk (resume)."""

    def __init__(self, cfg: SweepConfig, settings: TuneSettings, store: ChunkStore | None,
                 scheduler, workers, quiet):
        self.cfg, self.settings, self.store = cfg, settings, store
        self.scheduler, self.workers, self.quiet = scheduler, workers, quiet
        self.sweeps: dict[float, xr.Dataset] = {}  # value -> its sweep (one value)
        self.index, self.final_trained = 0, False

    def run(self, values, index: int) -> xr.Dataset:
        """The sweep of ``values`` stored as chunk ``index`` (loaded if already there)."""
        cfg = self.cfg.replace(values=tuple(_as_values(self.settings, values)))
        path = None if self.store is None else self.store.chunk_path(index)
        if path is not None and path.exists():
            ds = load(path, kind="dnnphase.sweep")
            if ds.attrs["config"] == provenance("", cfg.to_dict())["config"]:
                return ds
            path.unlink()  # not this round's: computed again
        try:
            ds = sweep(cfg, output=path, scheduler=self.scheduler, workers=self.workers,
                       quiet=self.quiet)
        except SweepInterrupted as err:
            if self.store is None:
                raise
            if not self.store.done():  # its description alone resumes nothing
                self.store.clear()
                raise SweepInterrupted(f"{err} (tune: no round had finished either)") from None
            raise SweepInterrupted(f"{err} (tune: the finished rounds are kept in "
                                   f"{str(self.store.path)!r} too)") from None
        return ds

    def curvature_of(self, values: np.ndarray):
        """The search's callable: one sweep per round; mean and SE over seeds."""
        ds = self.run(values, self.index)
        self.index += 1
        c = ds["curvature_scaled"].sel(measure=self.settings.measure).isel(alpha=0)
        for k, v in enumerate(values):
            self.sweeps[float(v)] = ds.isel({self.settings.knob: [k]})
        return _seed_stats(c.values)


def _progress(settings: TuneSettings, quiet: bool):
    def show(k: int, r: Round) -> None:
        if quiet:
            return
        tried = "  ".join(f"{v:.4g}: {m:+.3f}±{s:.3f}"
                          for v, m, s in zip(r.values, r.mean, r.se, strict=True))
        where = (f"bracket [{r.bracket[0]:.4g}, {r.bracket[1]:.4g}], estimate "
                 f"{r.estimate:.4g}" if not math.isnan(r.estimate) else "no sign change")
        print(f"tune {settings.knob} round {k}/{settings.rounds}: {tried} -> {where}",
              file=sys.stderr, flush=True)
    return show


def tune(config: SweepConfig | None = None, *, knob: str | None = None,
         low: float | None = None, high: float | None = None, alpha: float | None = None,
         seeds=None, values_per_round: int = VALUES_PER_ROUND, rounds: int = ROUNDS,
         tolerance: float = TOLERANCE, within_se: float = WITHIN_SE,
         max_models: int | None = None, measure: str = defaults.MEASURE, output=None,
         overwrite: bool = False, scheduler: str = defaults.PYTHON_SCHEDULER,
         workers: int | None = None, quiet: bool = True, **sweep_fields) -> xr.Dataset:
    """The knob value at which the network's training load curve is linear.

    Only ``measure`` is computed unless ``measures`` is given; a round trains as one
    stack unless ``models_per_chunk`` is given. Everything is checked before any
    training.

    Parameters
    ----------
    config : SweepConfig, optional
        The network and its training (a :class:`SweepConfig`; its knob, values,
        alphas and seeds give the defaults of ``knob``, ``low`` / ``high``, ``alpha``
        and ``seeds``); and/or SweepConfig fields as ``**sweep_fields``
        (``dataset="digits", depth=4, ...``).
    knob, low, high
        The knob and the range searched (default: the knob's default grid's ends),
        inside the knob's allowed range, low < high.
    alpha : float, optional
        The LeakyReLU slope, one number in [0, 1] (default: the config's one alpha,
        else 0, ReLU).
    seeds : int or list of int, default 4
        Every value trains these seeds (a count or a list).
    values_per_round, rounds, tolerance, within_se, max_models
        The search and its budget (defaults 3 values per round, 4 rounds, a bracket
        of 2 % of the range or both ends within 2 standard errors of 0), see
        :func:`search` (``max_models`` counts the final models too).
    measure : str, default "trace_ratio"
        The load curve whose scale-free curvature is zeroed.
    output : str or Path, optional
        A NetCDF path: the result is saved there, and each round's sweep is kept in
        ``<output>.parts/`` until then, so a rerun of an interrupted tune retrains
        none of its finished rounds.
    overwrite, scheduler, workers, quiet
        As :func:`dnnphase.sweeps.sweep.sweep`'s (not quiet: one line per round).
    **sweep_fields
        :class:`SweepConfig` fields.

    Returns
    -------
    xarray.Dataset
        ``value`` (the chosen knob value), ``curvature`` and ``curvature_se`` (seed
        mean and SE at it, from the final models), ``test_accuracy`` (their seed
        mean; recorded, never used for choosing), ``final_curvature``,
        ``final_test_accuracy``, ``final_train_accuracy`` (seed), ``bracketed``,
        ``stop_reason``, ``sign_changes``, ``models_trained``, ``rounds_run``, the
        path ``path_value``, ``path_curvature``, ``path_curvature_se``,
        ``path_test_accuracy``, ``path_diverged`` (round, slot) and ``bracket_low``,
        ``bracket_high``, ``estimate`` (round); ``attrs``: kind "dnnphase.tune",
        config, versions, knob, data, note, caveat (:data:`CAVEAT`: where the rule
        was found to hold).

    Raises
    ------
    ConfigError
        A bad argument or configuration (naming the parameter), before any training.
    """
    check_bools(overwrite=overwrite, quiet=quiet)
    if config is not None:  # a dict or a path is named before its fields are read
        as_config(config, SweepConfig, {})
    knob, low, high, alpha, seeds = _defaults_from(config, knob, low, high, alpha, seeds)
    settings = TuneSettings(knob, low, high, alpha, values_per_round, rounds, tolerance,
                            within_se, max_models, measure)
    settings.check(len(seeds))
    axis = Axis(float(low), float(high), settings.scale, settings.integer)
    first = axis.first(values_per_round)
    cfg = _base_config(config, settings, seeds, _as_values(settings, first), sweep_fields)
    if output is not None:
        check_output(output, overwrite)
    data = cfg.preflight(scheduler, workers)  # the data set, batch sizes, memory, device
    tune_config = {"tune": dataclasses.asdict(settings),
                   "sweep": {k: v for k, v in cfg.to_dict().items() if k != "values"}}
    store = None
    if output is not None:
        store = ChunkStore(output)
        store.open(tune_config, rounds + 1, overwrite)
    trainer = _Trainer(cfg, settings, store, scheduler, workers, quiet)
    budget = None if max_models is None else max_models // len(seeds) - 1
    found = search(trainer.curvature_of, low, high, scale=settings.scale,
                   integer=settings.integer, values_per_round=values_per_round, rounds=rounds,
                   tolerance=tolerance, within_se=within_se, max_values=budget,
                   rising=knobs.KNOBS[knob].noisier == "larger",  # convex with more noise
                   on_round=_progress(settings, quiet))
    final = _final(trainer, found, rounds)
    ds = _assemble(found, final, trainer, settings, len(seeds))
    ds.attrs.update(provenance("dnnphase.tune", tune_config))
    ds.attrs["knob"] = knob
    ds.attrs["data"] = json.dumps(data.info, default=str)
    ds.attrs["note"] = _note(found, settings)
    ds.attrs["caveat"] = CAVEAT
    if store is not None:
        try:
            save(ds, store.output, overwrite=True)
        except OutputWriteError as err:  # a full disk: the rounds stay, to resume
            raise write_failed(err, store.path) from err
        store.clear()
    if not quiet:
        print(f"tune {knob}: {ds.attrs['note']}; {int(ds['models_trained'])} models trained",
              file=sys.stderr, flush=True)
        print(f"tune {knob}: {CAVEAT}", file=sys.stderr, flush=True)
    return ds


def _final(trainer: _Trainer, found: Search, rounds: int) -> xr.Dataset | None:
    """The seeds at the chosen value: reused if it was tried, else trained (stored as
    chunk ``rounds``); None when there is no value to train."""
    if math.isnan(found.value):
        return None
    if float(found.value) in trainer.sweeps:
        return trainer.sweeps[float(found.value)]
    trainer.final_trained = True
    return trainer.run([found.value], rounds)


def _path_arrays(found: Search, trainer: _Trainer) -> dict:
    n_r, n_s = len(found.rounds), max(len(r.values) for r in found.rounds)
    arrays = {name: np.full((n_r, n_s), np.nan) for name in
              ("value", "curvature", "curvature_se", "test_accuracy", "diverged")}
    for k, r in enumerate(found.rounds):
        n = len(r.values)
        arrays["value"][k, :n], arrays["curvature"][k, :n] = r.values, r.mean
        arrays["curvature_se"][k, :n] = r.se
        for slot, v in enumerate(r.values):
            one = trainer.sweeps[float(v)]
            arrays["test_accuracy"][k, slot] = float(one["test_accuracy"].mean(skipna=True))
            arrays["diverged"][k, slot] = int(one["diverged"].sum())
    return arrays


def _assemble(found: Search, final: xr.Dataset | None, trainer: _Trainer,
              settings: TuneSettings, n_seeds: int) -> xr.Dataset:
    knob = knobs.KNOBS[settings.knob]
    path = _path_arrays(found, trainer)
    per_seed = {name: np.full(n_seeds, np.nan) for name in
                ("curvature", "test_accuracy", "train_accuracy")}
    if final is not None:
        per_seed["curvature"] = final["curvature_scaled"].sel(
            measure=settings.measure).values.ravel()
        per_seed["test_accuracy"] = final["test_accuracy"].values.ravel()
        per_seed["train_accuracy"] = final["train_accuracy"].values.ravel()
    mean, se = _seed_stats(per_seed["curvature"])
    value_attrs = {"long_name": f"{knob.label} tried", "units": knob.units,
                   "noisier": knob.noisier, "scale": knob.scale}
    rounds = ("round",)
    grid = ("round", "slot")
    data_vars = {
        "value": ((), found.value, {**value_attrs, "long_name": f"chosen {knob.label}"}),
        "curvature": ((), mean, {"long_name": "seed-mean scale-free curvature at the chosen "
                                              f"value ({settings.measure}, training set)"}),
        "curvature_se": ((), se, {"long_name": "its standard error over seeds"}),
        "test_accuracy": ((), float(np.nanmean(per_seed["test_accuracy"]))
                          if final is not None else np.nan,
                          {"long_name": "seed-mean test accuracy at the chosen value "
                                        "(recorded, never used for choosing)"}),
        "final_curvature": ("seed", per_seed["curvature"]),
        "final_test_accuracy": ("seed", per_seed["test_accuracy"]),
        "final_train_accuracy": ("seed", per_seed["train_accuracy"]),
        "bracketed": ((), found.bracketed, {"long_name": "the curvature changed sign in "
                                                         "[low, high]"}),
        "stop_reason": ((), found.stop_reason, {"long_name": "why the search stopped"}),
        "sign_changes": ((), found.sign_changes,
                         {"long_name": "sign changes of the mean curvature along the values "
                                       "tried (more than 1: not monotone at this resolution)"}),
        "models_trained": ((), found.evaluations * n_seeds + (
            n_seeds if final is not None and trainer.final_trained else 0),
                           {"long_name": "models the tune trained: rounds and final (a "
                                         "resumed tune counts its interrupted runs' too)"}),
        "rounds_run": ((), len(found.rounds)),
        "path_value": (grid, path["value"], value_attrs),
        "path_curvature": (grid, path["curvature"], {"long_name": "seed-mean curvature"}),
        "path_curvature_se": (grid, path["curvature_se"]),
        "path_test_accuracy": (grid, path["test_accuracy"],
                               {"long_name": "seed-mean test accuracy (not used)"}),
        "path_diverged": (grid, path["diverged"], {"long_name": "models diverged"}),
        "bracket_low": (rounds, [r.bracket[0] for r in found.rounds]),
        "bracket_high": (rounds, [r.bracket[1] for r in found.rounds]),
        "estimate": (rounds, [r.estimate for r in found.rounds],
                     {"long_name": "zero crossing estimated after the round"}),
    }
    coords = {"round": np.arange(1, len(found.rounds) + 1),
              "slot": np.arange(path["value"].shape[1]),
              "seed": np.asarray(trainer.cfg.seeds)}
    return xr.Dataset(data_vars, coords=coords)


def _note(found: Search, settings: TuneSettings) -> str:
    """The result in one sentence (also printed by the command line)."""
    knob = knobs.KNOBS[settings.knob]
    where = f"{settings.knob} = {found.value:.4g}"
    if found.bracketed:
        more = "" if found.sign_changes <= 1 else (
            f" (the curvature changes sign {found.sign_changes} times along the values "
            "tried: not monotone at the seeds' resolution)")
        if found.rising is not None and found.rising != (knob.noisier == "larger"):
            more += " (here the curvature falls with more noise, against the theory)"
        return (f"linear at {where}, in [{found.bracket[0]:.4g}, {found.bracket[1]:.4g}] "
                f"(stopped: {found.stop_reason}){more}")
    if found.stop_reason == "no_finite_curvature":
        return "no value tried gave a finite curvature (diverged?): nothing chosen"
    tried = np.concatenate([r.mean for r in found.rounds])
    shape = "convex" if np.nanmin(tried) > 0 else "concave"
    noisier = knob.noisier == "larger"
    more_noise = shape == "concave"
    side = "above high" if noisier == more_noise else "below low"
    at = f"at every value in [{settings.low:g}, {settings.high:g}]"
    n_nan = int(np.isnan(tried).sum())
    if n_nan:  # "every value" would hide that these said nothing (tune --high 1e300)
        at = (f"at every value with a finite curvature ({n_nan} of {tried.size} values tried "
              f"in [{settings.low:g}, {settings.high:g}] had none: diverged)")
        warnings.warn(f"tune {settings.knob}: {n_nan} of {tried.size} values tried gave no "
                      "finite curvature (diverged); a narrower [low, high] may bracket linear",
                      stacklevel=3)
    return (f"NOT BRACKETED: {shape} {at}; {where} is the closest to linear; the theory puts "
            f"linear at {'more' if more_noise else 'less'} noise ({side})")
