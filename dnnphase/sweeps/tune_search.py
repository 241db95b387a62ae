"""The search of :func:`dnnphase.sweeps.tune.tune`, apart from any training: rounds of a few
values of a knob, each round narrowing the bracket of the seed-mean curvature's sign
change (:func:`search`, given any ``curvature_of``; docs/tune.md)."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

# The search's defaults (their home: dnnphase.defaults, the command line shows them).
from dnnphase.defaults import TUNE_ROUNDS as ROUNDS
from dnnphase.defaults import TUNE_TOLERANCE as TOLERANCE
from dnnphase.defaults import TUNE_VALUES_PER_ROUND as VALUES_PER_ROUND
from dnnphase.defaults import TUNE_WITHIN_SE as WITHIN_SE
from phasecore.checks import require

__all__ = ["Axis", "ROUNDS", "Round", "STOP_REASONS", "Search", "TOLERANCE", "VALUES_PER_ROUND",
           "WITHIN_SE", "search"]

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


class Axis:
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


def _estimate(axis: Axis, values, mean, i: int, j: int) -> float:
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


def _stop(path: _Path, pair, axis: Axis, tolerance: float, within_se: float) -> str | None:
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
    axis = Axis(float(low), float(high), scale, integer)
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
