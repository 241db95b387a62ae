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
  :func:`dnnphase.phase.sweep` (the values x seeds train together, stacked), stored
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
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import xarray as xr

from dnnphase import defaults, knobs
from dnnphase.metrics import MEASURE_NAMES
from dnnphase.phase import SweepConfig, sweep
from phasecore.checks import ConfigError, is_finite, is_int, is_real, require, seed_list
from phasecore.results import check_output, load, provenance, save
from phasecore.store import ChunkStore
from phasecore.sweeps import SweepInterrupted

__all__ = ["Round", "Search", "search", "tune"]

#: Defaults of the search (the command line shows them).
SEEDS = 4  # models per value: the seed-mean curvature and its standard error
VALUES_PER_ROUND = 3  # values trained together per round (one stacked sweep)
ROUNDS = 4  # at most this many rounds
TOLERANCE = 0.02  # stop when the bracket is this fraction of the range (on the knob's axis)
WITHIN_SE = 2.0  # ... or when both its ends are within this many standard errors of 0

#: Why a search stopped.
STOP_REASONS = {
    "tolerance": "the bracket is within the tolerance",
    "noise": "both ends of the bracket are within within_se standard errors of zero: "
             "narrowing further would chase the seeds' noise",
    "rounds": "the last round allowed was run",
    "models": "the model budget (max_models) is spent",
    "resolution": "the bracket holds no further integer value",
    "no_sign_change": "the seed-mean curvature has the same sign at every value tried",
    "no_finite_curvature": "no value tried gave a finite curvature",
}


# --------------------------------------------------------------------------- the search


@dataclass(frozen=True)
class Round:
    """One round of the search: the values asked for (ascending), the seed-mean curvature
    and its standard error at each, and, after the round, the bracket (NaN, NaN when the
    curvature has no sign change) and the estimate of the zero crossing (NaN likewise)."""

    values: np.ndarray
    mean: np.ndarray
    se: np.ndarray
    bracket: tuple[float, float]
    estimate: float


@dataclass(frozen=True)
class Search:
    """The result of :func:`search`.

    value : the chosen value: the interpolated zero crossing if ``bracketed``, else the
        value tried whose |mean curvature| is smallest (NaN if none was finite).
    bracketed : whether the mean curvature changed sign between two values tried.
    bracket : the final bracket (adjacent values tried with opposite signs), or NaNs.
    stop_reason : a key of :data:`STOP_REASONS`.
    rounds : every round, in order.
    sign_changes : sign changes of the mean curvature along all values tried (sorted);
        more than one: the curvature is not monotone at the seeds' resolution.
    rising : whether the mean rises across the final bracket (None: not bracketed, or a
        value tried had a mean of exactly 0).
    """

    value: float
    bracketed: bool
    bracket: tuple[float, float]
    stop_reason: str
    rounds: tuple[Round, ...]
    sign_changes: int
    rising: bool | None = None

    @property
    def evaluations(self) -> int:
        """Values the callable was asked for, over all rounds."""
        return sum(len(r.values) for r in self.rounds)


class _Axis:
    """The knob's search axis: t = value (linear) or log(value) (log); integers snap."""

    def __init__(self, low: float, high: float, scale: str, integer: bool):
        require(scale in ("linear", "log"), "scale", "linear or log", scale)
        require(scale == "linear" or low > 0, "low", "> 0 on a log axis", low)
        self.low, self.high, self.log, self.integer = low, high, scale == "log", integer
        self.span = self.to_t(high) - self.to_t(low)

    def to_t(self, value):
        return np.log(value) if self.log else np.asarray(value, dtype=float)

    def to_value(self, t) -> np.ndarray:
        v = np.exp(t) if self.log else np.asarray(t, dtype=float)
        return np.round(v) if self.integer else v

    def first(self, n: int) -> np.ndarray:
        """n values spaced evenly on the axis over [low, high], both ends exact."""
        values = self.to_value(np.linspace(self.to_t(self.low), self.to_t(self.high), n))
        values[0], values[-1] = self.low, self.high
        return np.unique(values)

    def inside(self, a: float, b: float, n: int, tried) -> np.ndarray:
        """n values spaced evenly on the axis strictly inside (a, b), none tried before."""
        ta, tb = self.to_t(a), self.to_t(b)
        values = np.unique(self.to_value(ta + (tb - ta) * np.arange(1, n + 1) / (n + 1)))
        return values[(values > a) & (values < b) & ~np.isin(values, tried)]


def _crossings(values, mean, se, rising: bool | None = None) -> list[tuple[int, int]]:
    """Index pairs (i, j) of adjacent finite points whose means have opposite signs (a
    zero mean pairs with itself), best first: those crossing in the ``rising`` direction
    (upwards for True; None: either) before the others, then the best supported: the
    evidence that the two ends differ in sign, |mean| / se summed over both (|mean|
    where se is not usable); ties go to the lower value."""
    finite = np.flatnonzero(np.isfinite(mean))
    exact = [(int(i), int(i)) for i in finite if mean[i] == 0]
    if exact:
        return exact
    usable = np.all(np.isfinite(se[finite]) & (se[finite] > 0))
    weight = (lambda i: abs(mean[i]) / se[i]) if usable else (lambda i: abs(mean[i]))
    pairs = [(int(i), int(j)) for i, j in zip(finite[:-1], finite[1:], strict=True)
             if np.sign(mean[i]) * np.sign(mean[j]) < 0]
    against = (lambda p: False) if rising is None else (
        lambda p: (mean[p[1]] > mean[p[0]]) != rising)
    return sorted(pairs, key=lambda p: (against(p), -(weight(p[0]) + weight(p[1])),
                                        values[p[0]]))


def _estimate(axis: _Axis, values, mean, i: int, j: int) -> float:
    """The zero crossing inside the bracket (values[i], values[j]), on the axis: the
    least-squares line through the bracket's ends and their finite neighbours (one each
    side: four points average the seeds' noise where two would not), or, where that
    line's root falls outside the bracket, the straight line between the two ends."""
    if i == j:
        return float(values[i])
    finite = np.flatnonzero(np.isfinite(mean))
    k = np.searchsorted(finite, i)
    near = finite[max(k - 1, 0):k + 3]
    t = axis.to_t(values[near])
    ta, tb = axis.to_t(values[i]), axis.to_t(values[j])
    slope, intercept = np.polyfit(t, mean[near], 1) if near.size > 2 else (np.nan, np.nan)
    root = -intercept / slope if slope else np.nan
    if not ta <= root <= tb:
        root = ta + (tb - ta) * mean[i] / (mean[i] - mean[j])
    return float(axis.to_value(root))


def _sign_changes(mean) -> int:
    signs = np.sign(mean[np.isfinite(mean)])
    return int(np.sum(signs[:-1] * signs[1:] < 0))


class _Path:
    """Every value tried so far, sorted, with its mean and standard error."""

    def __init__(self):
        self.values, self.mean, self.se = (np.empty(0) for _ in range(3))

    def add(self, values, mean, se) -> None:
        order = np.argsort(np.concatenate([self.values, values]), kind="stable")
        self.values = np.concatenate([self.values, values])[order]
        self.mean = np.concatenate([self.mean, mean])[order]
        self.se = np.concatenate([self.se, se])[order]

    def bracket(self, window: tuple[float, float], rising: bool | None):
        """The best crossing (i, j) among the points in ``window`` (:func:`_crossings`),
        or None."""
        inside = np.flatnonzero((self.values >= window[0]) & (self.values <= window[1]))
        pairs = _crossings(self.values[inside], self.mean[inside], self.se[inside], rising)
        return (int(inside[pairs[0][0]]), int(inside[pairs[0][1]])) if pairs else None

    def closest_to_zero(self) -> float:
        finite = np.flatnonzero(np.isfinite(self.mean))
        if not finite.size:
            return math.nan
        return float(self.values[finite[np.argmin(np.abs(self.mean[finite]))]])


def _evaluate(curvature_of, values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    mean, se = curvature_of(values.copy())
    mean, se = np.asarray(mean, dtype=float), np.asarray(se, dtype=float)
    if mean.shape != values.shape or se.shape != values.shape:
        raise ValueError(f"curvature_of must return two arrays of shape {values.shape} "
                         f"(mean, se), got {mean.shape} and {se.shape}")
    return mean, se


def _stop(path: _Path, pair, axis: _Axis, tolerance: float, within_se: float) -> str | None:
    """Why the search stops after a round with this bracket (None: go on)."""
    if pair is None:
        return "no_sign_change" if np.isfinite(path.mean).any() else "no_finite_curvature"
    i, j = pair
    if axis.to_t(path.values[j]) - axis.to_t(path.values[i]) <= tolerance * axis.span:
        return "tolerance"
    ends = np.array([i, j])
    if within_se > 0 and np.all(np.abs(path.mean[ends]) <= within_se * path.se[ends]):
        return "noise"
    return None


def search(curvature_of: Callable[[np.ndarray], tuple], low: float, high: float, *,
           scale: str = "linear", integer: bool = False,
           values_per_round: int = VALUES_PER_ROUND, rounds: int = ROUNDS,
           tolerance: float = TOLERANCE, within_se: float = WITHIN_SE,
           max_values: int | None = None, rising: bool | None = None,
           on_round: Callable[[int, Round], None] | None = None) -> Search:
    """Find where a noisy function of the knob crosses zero, bracketing it round by round.

    ``curvature_of(values) -> (mean, se)``: two arrays of ``values``' shape (NaN where a
    value has no finite curvature). Round 1 asks for ``values_per_round`` values spaced
    evenly on the axis over [low, high] (both ends included; log-spaced for ``scale``
    "log"; rounded and de-duplicated for ``integer``). The bracket is the pair of
    adjacent values tried whose means have opposite signs; when there are several, a
    crossing in the ``rising`` direction (True: upwards, for a function expected to
    increase; None: either) comes first, then the best supported (:func:`_crossings`).
    Each later round asks for ``values_per_round`` values spaced evenly strictly inside
    the bracket, so it shrinks by ``values_per_round + 1`` per round. The search stops
    after the round in which the bracket is at most ``tolerance`` of the range on the
    axis, both its ends are within ``within_se`` standard errors of 0 (0: never), there
    is no sign change, ``rounds`` rounds ran, ``max_values`` values were asked for, or
    (``integer``) the bracket holds no further integer. ``on_round(k, round)`` is called
    after each round (progress). Deterministic: the same function gives the same calls
    and the same result.
    """
    axis = _Axis(float(low), float(high), scale, integer)
    path, history = _Path(), []
    window, budget = (axis.low, axis.high), math.inf if max_values is None else max_values
    values = axis.first(values_per_round)
    values = values[:int(min(values.size, budget))]
    stop = "models"
    while values.size:
        mean, se = _evaluate(curvature_of, values)
        path.add(values, mean, se)
        budget -= values.size
        pair = path.bracket(window, rising)
        bracket = (math.nan, math.nan) if pair is None else tuple(
            float(path.values[k]) for k in pair)
        estimate = math.nan if pair is None else _estimate(axis, path.values, path.mean, *pair)
        history.append(Round(values, mean, se, bracket, estimate))
        if on_round is not None:
            on_round(len(history), history[-1])
        stop = _stop(path, pair, axis, tolerance, within_se)
        if stop is not None:
            break
        window = bracket
        values = axis.inside(*bracket, int(min(values_per_round, budget)), path.values)
        stop = ("rounds" if len(history) >= rounds else "models" if budget < 1
                else "resolution" if not values.size else None)
        if stop is not None:
            break
    last = history[-1] if history else None
    bracketed = last is not None and not math.isnan(last.estimate)
    ends = np.searchsorted(path.values, last.bracket) if bracketed else None
    if ends is not None and ends[0] == ends[1]:  # a value with mean exactly 0: no direction
        ends = None
    return Search(value=last.estimate if bracketed else path.closest_to_zero(),
                  bracketed=bracketed,
                  bracket=last.bracket if last is not None else (math.nan, math.nan),
                  stop_reason=stop, rounds=tuple(history),
                  sign_changes=_sign_changes(path.mean),
                  rising=None if ends is None else bool(path.mean[ends[1]] > path.mean[ends[0]]))


# --------------------------------------------------------------------- the training side


#: Fields of SweepConfig that tune sets itself (its own parameters).
_OWN_FIELDS = {"knob": "knob", "values": "low / high", "alphas": "alpha", "seeds": "seeds"}


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
        require(is_int(self.values_per_round) and self.values_per_round >= 2,
                "values_per_round", "an integer >= 2 (the first round needs both ends of the "
                "range to bracket a sign change)", self.values_per_round)
        require(is_int(self.rounds) and self.rounds >= 1, "rounds", "an integer >= 1",
                self.rounds)
        require(is_finite(self.tolerance) and 0 < self.tolerance < 1, "tolerance",
                "in (0, 1) (a fraction of the range on the knob's axis)", self.tolerance)
        require(is_finite(self.within_se) and self.within_se >= 0, "within_se",
                "a number >= 0 (0: never stop on noise)", self.within_se)
        require(self.measure in MEASURE_NAMES, "measure", f"one of {', '.join(MEASURE_NAMES)}",
                self.measure)
        least = (self.values_per_round + 1) * n_seeds
        require(self.max_models is None or (is_int(self.max_models)
                                            and self.max_models >= least), "max_models",
                f"an integer >= {least} (a first round of values_per_round values and the "
                f"final models, {n_seeds} seeds each), or unset", self.max_models)

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
    require(settings.measure in cfg.measures, "measure",
            f"one of the measures computed ({', '.join(cfg.measures)})", settings.measure)
    if "models_per_chunk" not in sweep_fields:  # a round trains as one stack
        from dnnphase.phase import runs_on_cuda

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
            raise SweepInterrupted(f"{err} (tune: the finished rounds are kept in "
                                   f"{str(self.store.path)!r} too)" if self.store else
                                   str(err)) from None
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

    The network and its training: ``config`` (a :class:`SweepConfig`; its knob, values,
    alphas and seeds give the defaults of ``knob``, ``low`` / ``high``, ``alpha`` and
    ``seeds``) and/or SweepConfig fields as keywords (``dataset="digits", depth=4, ...``).
    Only ``measure`` is computed unless ``measures`` is given; a round trains as one
    stack unless ``models_per_chunk`` is given.

    knob, low, high : the knob and the range searched (default: the knob's default grid's
        ends), inside the knob's allowed range, low < high.
    alpha : the LeakyReLU slope, one number in [0, 1] (default: the config's one alpha,
        else 0, ReLU).
    seeds : a count or a list (default 4): every value trains these seeds.
    values_per_round, rounds, tolerance, within_se, max_models : the search and its
        budget, see :func:`search` (``max_models`` counts the final models too).
    measure : the load curve whose scale-free curvature is zeroed (default trace_ratio).
    output : a NetCDF path: the result is saved there, and each round's sweep is kept in
        ``<output>.parts/`` until then, so a rerun of an interrupted tune retrains none
        of its finished rounds. ``overwrite``, ``scheduler``, ``workers``, ``quiet``: as
        :func:`dnnphase.phase.sweep`'s (not quiet: one line per round).

    Everything is checked before any training (a :class:`ConfigError` naming the
    parameter). Returns a Dataset: ``value`` (the chosen knob value), ``curvature`` and
    ``curvature_se`` (seed mean and SE at it, from the final models), ``test_accuracy``
    (their seed mean; recorded, never used for choosing), ``final_curvature``,
    ``final_test_accuracy``, ``final_train_accuracy`` (seed), ``bracketed``,
    ``stop_reason``, ``sign_changes``, ``models_trained``, ``rounds_run``, the path
    ``path_value``, ``path_curvature``, ``path_curvature_se``, ``path_test_accuracy``,
    ``path_diverged`` (round, slot) and ``bracket_low``, ``bracket_high``, ``estimate``
    (round); ``attrs``: kind "dnnphase.tune", config, versions, knob, data, note.
    """
    knob, low, high, alpha, seeds = _defaults_from(config, knob, low, high, alpha, seeds)
    settings = TuneSettings(knob, low, high, alpha, values_per_round, rounds, tolerance,
                            within_se, max_models, measure)
    settings.check(len(seeds))
    axis = _Axis(float(low), float(high), settings.scale, settings.integer)
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
    if store is not None:
        save(ds, store.output, overwrite=True)
        store.clear()
    if not quiet:
        print(f"tune {knob}: {ds.attrs['note']}; {int(ds['models_trained'])} models trained",
              file=sys.stderr, flush=True)
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
    return (f"NOT BRACKETED: {shape} at every value in [{settings.low:g}, {settings.high:g}];"
            f" {where} is the closest to linear; the theory puts linear at "
            f"{'more' if more_noise else 'less'} noise ({side})")
