"""The rule, fixed before any verdict was read, for the paper's central claim: "the highest
test accuracy occurs where the load curve is linear".

Per nonlinearity row of a diagram: the row's *most linear cell* is the column whose
seed-mean curvature is nearest 0; the row's *best cells* are the columns whose seed-mean
test accuracy ties with the row's best (within two standard errors of the difference,
:func:`dnnphase.compare.comparator.peaks.row_accuracy_peaks`). The row is a *hit* when its
most linear cell is among its best cells. Only a row with a linear cell can test the claim:
one whose seed-mean curvature changes sign along it or comes within the linear band
(:data:`LINEAR_BAND`); a row convex (or concave) throughout has its "most linear" cell at
its edge, a hit or a miss that says nothing about linearity, and is reported as "no linear
cell" and left out. A hit can happen by chance: a row whose best cells are b of C columns
would hold it for a random column with probability b / C, summed over rows into the hits
expected by chance.

Verdict, over the R testable rows of a diagram with k hits and e expected by chance:
**holds** when k >= 2R/3 and k >= e + R/4; **differs** when k < R/3 or k <= e;
**partly** otherwise; **cannot** when no row is testable; **undecided** when the 95 %
interval of k over seed resamples reaches two verdicts (:func:`interval_verdict`).

Each diagram is judged under both curvature definitions (:data:`DEFINITIONS`): the
scale-free one the ledger reads, and the paper code's g_0 - g_{L-1}; the second is the
row's variant. :func:`pooled` puts the testable rows of several diagrams through the same
rule at once.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import xarray as xr

from dnnphase.compare.comparator.peaks import row_accuracy_peaks
from dnnphase.knobs import KNOBS, larger_is_noisier
from phaseclaims.ledger import Claim
from phasecore.loadcurve import PHASE_TOLERANCE

__all__ = ["DEFINITIONS", "LINEAR_BAND", "RULE_TEXT", "LinearBest", "interval_verdict",
           "linear_best", "linear_best_of_sweep", "mean_interval", "mean_verdict", "pooled",
           "pooled_claim",
           "sweep_cells",
           "has_linear_cell", "verdict_of", "with_interval"]

#: A row has a linear cell when a seed-mean curvature lies within this band of 0 (the
#: phase diagrams' own band) or the curvature changes sign along it.
LINEAR_BAND = PHASE_TOLERANCE

#: The curvature definitions a diagram is judged under, by their variable in a sweep: the
#: ledger's own first, then its variants.
DEFINITIONS = {
    "curvature_scaled": "scale-free curvature",
    "curvature": "the paper code's curvature g_0 − g_{L−1}",
}

RULE_TEXT = """
Per nonlinearity row of a diagram (one α, the noise knob across): the row's *most linear
cell* is the column whose seed-mean scale-free curvature is nearest 0; its *best cells*
are the columns whose seed-mean test accuracy ties with the row's best (within two
standard errors of the difference, the same ties as every report). A row is **testable**
when it has a linear cell: its seed-mean curvature changes sign along it or comes within
±0.05 of 0. A row convex (or concave) throughout is reported as *no linear cell* and left
out: its most linear cell is its edge, a hit or a miss that says nothing about linearity.
A testable row is a **hit** when its most linear cell is one of its best cells. A random
column would be one with probability b / C (b best cells of C columns): summed over rows,
the hits **expected by chance**, e. Over a diagram's R testable rows with k hits:
**holds** when k ≥ 2R/3 and k ≥ e + R/4; **differs** when k < R/3 or k ≤ e; **partly**
otherwise; **cannot** when no row is testable. The interval on k resamples each cell's
seeds (seed indices drawn with replacement, the same draw for every cell; 400 draws) over
the same testable rows; when its two ends reach different verdicts the row is
**undecided** at this scale, whichever side the point estimate falls on. Beside it, the
rows where the most linear cell is the *single* best (1 / C by chance). Every diagram is
judged again with the paper code's curvature, g_0 − g_{L−1} (g_ℓ = D_ℓ − D_{ℓ+1}), its
variant: a row is robust when both definitions reach its verdict. Pooled rows put the
testable rows of several diagrams through the same rule, their resamples summed.
"""


def sweep_cells(network: xr.Dataset, measure: str = "trace_ratio",
                definition: str = "curvature_scaled"):
    """A sweep's curvature and accuracy as (R, C, S) arrays on oriented axes: rows alpha
    decreasing (more nonlinear first), columns the knob getting noisier; and the knob's
    values (C,). ``definition``: the curvature variable read, one of :data:`DEFINITIONS`."""
    knob = network.attrs["knob"]
    curvature = network[definition]
    if "measure" in curvature.dims:
        curvature = curvature.sel(measure=measure)
    cells = xr.Dataset({"curvature": curvature, "accuracy": network["test_accuracy"]})
    cells = cells.sortby("alpha", ascending=False).sortby(
        knob, ascending=larger_is_noisier(network)).transpose("alpha", knob, "seed")
    return cells["curvature"].values, cells["accuracy"].values, cells[knob].values


def _seed_mean(values: np.ndarray) -> np.ndarray:
    """(R, C, S) -> (R, C), NaN where a cell has no finite seed."""
    with np.errstate(invalid="ignore"):
        finite = np.isfinite(values)
        total = np.where(finite, values, 0.0).sum(axis=2)
        return np.where(finite.any(axis=2), total / np.maximum(finite.sum(axis=2), 1), np.nan)


def has_linear_cell(curvature: np.ndarray, band: float = LINEAR_BAND) -> np.ndarray:
    """Per row (R,): True where the seed-mean curvature (R, C, S) changes sign along the
    row or lies within ``band`` of 0 in some column (the row has a linear cell)."""
    mean = _seed_mean(curvature)
    with np.errstate(invalid="ignore"):
        low, high = np.nanmin(np.where(np.isfinite(mean), mean, np.inf), axis=1), \
            np.nanmax(np.where(np.isfinite(mean), mean, -np.inf), axis=1)
        near = (np.abs(mean) <= band).any(axis=1)
    return near | ((low < 0) & (high > 0))


def _hits(curvatures: list[np.ndarray], accuracy: np.ndarray, values: np.ndarray,
          log_scale: bool) -> list[dict[str, np.ndarray]]:
    """Per curvature definition's cells, per row (R,): ``hit`` 1 if the most linear cell is
    among the best, ``chance`` b / C, ``single`` 1 if it is the single best,
    ``single_chance`` 1 / C (NaN: no finite row). The best cells depend on accuracy alone:
    found once for every definition."""
    tied = row_accuracy_peaks(curvatures[0], accuracy, values, log_scale=log_scale)["tied"]
    mean_accuracy = _seed_mean(accuracy)
    found = []
    for curvature in curvatures:
        out = {k: np.full(curvature.shape[0], np.nan)
               for k in ("hit", "chance", "single", "single_chance")}
        for i, row in enumerate(np.abs(_seed_mean(curvature))):
            if not np.isfinite(row).any() or not tied[i].any():
                continue
            linear = int(np.nanargmin(row))
            out["hit"][i] = tied[i][linear]
            out["chance"][i] = tied[i].mean()
            out["single"][i] = float(linear == int(np.nanargmax(mean_accuracy[i])))
            out["single_chance"][i] = 1.0 / np.isfinite(mean_accuracy[i]).sum()
        found.append(out)
    return found


class LinearBest(dict):
    """The rule's numbers for one diagram (or a pool of them).

    Keys: ``rows`` (R, the testable rows), ``no_linear`` (rows without a linear cell),
    ``hits``, ``chance``, ``hits_low``, ``hits_high`` (95 % over seed resamples),
    ``single``, ``single_chance``, ``single_low``, ``single_high`` (the single best),
    ``point`` (the verdict of the point estimate), ``verdict`` (:func:`interval_verdict`),
    ``per_row`` (hit per row, NaN for a row left out), ``boot`` / ``boot_single`` (hits per
    resample), ``definition`` and ``variants`` (another definition's name -> its verdict).
    """

    def ours(self) -> str:
        # One testable row: a verdict on one row, said where it is read (the text only).
        text = (f"{self['hits']} of {self['rows']} testable "
                f"{'row (the verdict rests on this one row)' if self['rows'] == 1 else 'rows'} "
                f"(95 % interval over seeds {self['hits_low']:g}–{self['hits_high']:g}), "
                f"{self['chance']:.1f} expected by chance; the single best in {self['single']} "
                f"({self['single_chance']:.1f} by chance)")
        if self["no_linear"]:
            text += f"; {self['no_linear']} row{'s' * (self['no_linear'] > 1)} with no linear cell"
        for name, verdict in self.get("variants", {}).items():
            text += f"; {name}: {verdict}"
        return text

    def why(self) -> str:
        if self["rows"] == 0:
            return (f"no linear cell: none of the {self['no_linear']} rows changes sign or "
                    f"comes within ±{LINEAR_BAND:g}, so no row can test the claim")
        text = (f"the most linear cell is among the best in {self['hits']} of {self['rows']} "
                f"testable {'row, the one the verdict rests on' if self['rows'] == 1 else 'rows'} "
                f"({self['chance']:.1f} expected by chance)")
        if self["verdict"] == "undecided":
            text += (f"; the interval over seeds, {self['hits_low']:g}–{self['hits_high']:g}, "
                     f"reaches {_verdict_span(self)} (the point estimate reads "
                     f"{self['point']}): undecided at this scale")
        return text


def _verdict_span(best: LinearBest) -> str:
    ends = [verdict_of(best[k], best["rows"], best["chance"]) for k in ("hits_low", "hits_high")]
    return " and ".join(dict.fromkeys(ends))


def verdict_of(hits: float, rows: int, chance: float) -> str:
    """The rule's verdict for ``hits`` of ``rows`` testable rows with ``chance`` expected
    (module doc); "cannot" without a testable row."""
    if rows == 0:
        return "cannot"
    if hits < rows / 3 or hits <= chance:
        return "differs"
    if hits >= 2 * rows / 3 and hits >= chance + rows / 4:
        return "holds"
    return "partly"


def interval_verdict(verdict_at: Callable[[float], str], point: float, low: float,
                     high: float) -> tuple[str, str]:
    """A verdict that an interval may leave open: the verdict of ``point`` and, when the
    interval's ends ``low`` and ``high`` reach another verdict than it (a threshold inside
    the interval), "undecided".

    Parameters
    ----------
    verdict_at : callable
        The rule's verdict for a value of its statistic (monotone in it).
    point, low, high : float
        The statistic and its interval (NaN ends: no interval, the point's verdict).

    Returns
    -------
    verdict, point_verdict : str
        "undecided" or the point's verdict; and the point's verdict.
    """
    at_point = verdict_at(point)
    if not (np.isfinite(low) and np.isfinite(high)):
        return at_point, at_point
    ends = {verdict_at(low), verdict_at(high), at_point}
    return ("undecided" if len(ends) > 1 else at_point), at_point


def _count_interval(boot: np.ndarray) -> tuple[float, float]:
    """The 95 % interval of a count over resamples, its ends counts that occurred (the
    2.5 % quantile rounded down, the 97.5 % up); NaN without resamples."""
    if not boot.size:
        return np.nan, np.nan
    return (float(np.quantile(boot, 0.025, method="lower")),
            float(np.quantile(boot, 0.975, method="higher")))


def _judged(hit: dict, boot: np.ndarray, boot_single: np.ndarray, rows: int,
            no_linear: int, definition: str) -> LinearBest:
    """A :class:`LinearBest` from per-row statistics over testable rows and resamples."""
    hits, chance = int(np.nansum(hit["hit"])), float(np.nansum(hit["chance"]))
    low, high = _count_interval(boot)
    s_low, s_high = _count_interval(boot_single)
    verdict, point = interval_verdict(lambda k: verdict_of(k, rows, chance), hits, low, high)
    return LinearBest(rows=rows, no_linear=no_linear, hits=hits, chance=chance,
                      hits_low=float(low), hits_high=float(high),
                      single=int(np.nansum(hit["single"])),
                      single_chance=float(np.nansum(hit["single_chance"])),
                      single_low=float(s_low), single_high=float(s_high), per_row=hit["hit"],
                      boot=boot, boot_single=boot_single, point=point, verdict=verdict,
                      definition=definition, variants={})


def linear_best(curvature: np.ndarray, accuracy: np.ndarray, values: np.ndarray, *,
                log_scale: bool = False, n_boot: int = 400, seed: int = 0,
                band: float | None = None,
                definition: str = "curvature_scaled") -> LinearBest:
    """The rule (module doc) on one diagram's cells.

    Parameters
    ----------
    curvature, accuracy : ndarray, shape (R, C, S)
        Per seed, rows in any order, columns with the knob getting noisier.
    values : ndarray, shape (C,)
        The knob's value per column.
    log_scale : bool
        The knob's values span decades (only the boundary's interpolation uses it).
    n_boot, seed : int
        Resamples of the seed indices (the same draw for every cell) and their generator.
    band : float or None
        The linear band (:func:`has_linear_cell`): rows without a linear cell are left out;
        None keeps every row with a finite curvature (a single row judged on its own, or
        another reading than a curvature). :func:`linear_best_of_sweep` passes
        :data:`LINEAR_BAND`.
    definition : str
        The curvature definition the cells carry (a key of :data:`DEFINITIONS`), recorded.

    Returns
    -------
    LinearBest
        Its numbers; a row without a linear cell has ``per_row`` NaN and is not counted.
    """
    return _judge({definition: curvature}, accuracy, values, log_scale, n_boot, seed,
                  band)[definition]


def _judge(curvatures: dict[str, np.ndarray], accuracy: np.ndarray, values: np.ndarray,
           log_scale: bool, n_boot: int, seed: int, band: float | None
           ) -> dict[str, LinearBest]:
    """:func:`linear_best` for several curvature definitions of the same cells, on the same
    seed resamples (the ties found once a resample)."""
    names, arrays = list(curvatures), list(curvatures.values())
    rows = accuracy.shape[0]
    testable = [has_linear_cell(c, band) if band is not None else np.ones(rows, bool)
                for c in arrays]
    hits = _hits(arrays, accuracy, values, log_scale)
    keep = [t & np.isfinite(h["hit"]) for t, h in zip(testable, hits, strict=True)]
    rng = np.random.default_rng(seed)
    n_seeds = accuracy.shape[2]
    boot = [[] for _ in names]
    boot_single = [[] for _ in names]
    for _ in range(n_boot if n_seeds > 1 else 0):
        pick = rng.integers(0, n_seeds, n_seeds)
        drawn = _hits([c[..., pick] for c in arrays], accuracy[..., pick], values, log_scale)
        for k, b in enumerate(drawn):
            boot[k].append(np.nansum(b["hit"][keep[k]]))
            boot_single[k].append(np.nansum(b["single"][keep[k]]))
    return {name: _judged({key: np.where(keep[k], v, np.nan) for key, v in hits[k].items()},
                          np.asarray(boot[k], float), np.asarray(boot_single[k], float),
                          int(keep[k].sum()),
                          int((np.isfinite(hits[k]["hit"]) & ~testable[k]).sum()), name)
            for k, name in enumerate(names)}


def pooled(results: Sequence[LinearBest]) -> LinearBest:
    """The rule over the testable rows of several diagrams at once: hits, chance and rows
    summed, the resamples summed draw by draw (each diagram's draw ``i`` resamples its own
    seeds; with one generator seed the draws pick the same seed indices in every diagram,
    whose networks of one seed share their initialisation seed)."""
    if not results:
        raise ValueError("pooled needs at least one diagram")
    sizes = {r["boot"].size for r in results}
    boot = (np.sum([r["boot"] for r in results], axis=0) if len(sizes) == 1
            else np.empty(0))
    boot_single = (np.sum([r["boot_single"] for r in results], axis=0) if len(sizes) == 1
                   else np.empty(0))
    hit = {"hit": np.concatenate([r["per_row"] for r in results]),
           "chance": np.array([r["chance"] for r in results]),
           "single": np.array([r["single"] for r in results], float),
           "single_chance": np.array([r["single_chance"] for r in results])}
    return _judged(hit, boot, boot_single, sum(r["rows"] for r in results),
                   sum(r["no_linear"] for r in results), results[0]["definition"])


def pooled_claim(ident: str, claim: str, command: str, results: Sequence[LinearBest],
                 files) -> Claim:
    """The ledger's row for :func:`pooled` over diagrams judged by
    :func:`linear_best_of_sweep` (each with its ``by_definition``): its verdict, and under
    each other curvature definition pooled alike its variant. It does not count: its
    diagrams' own rows do."""
    best = pooled(results)
    variants = {DEFINITIONS[d]: pooled([r["by_definition"][d] for r in results])["verdict"]
                for d in results[0].get("by_definition", {})}
    best["variants"] = variants
    return Claim(ident, claim, command, "—", f"over {len(results)} diagrams: {best.ours()}",
                 best["verdict"], "" if best["verdict"] == "holds" else best.why(),
                 tuple(files), variants=variants, counts=False)


def linear_best_of_sweep(network: xr.Dataset, measure: str = "trace_ratio", *,
                         variants: bool = True, **kw) -> LinearBest:
    """:func:`linear_best` on a network sweep (a ``dnn_*.nc``), with the scale-free
    curvature; with ``variants``, ``["variants"]`` holds the verdict under each other
    definition of :data:`DEFINITIONS` the sweep stores and ``["by_definition"]`` its
    numbers."""
    knob = network.attrs["knob"]
    log_scale = knob in KNOBS and KNOBS[knob].scale == "log"
    curvatures = {}
    for definition in DEFINITIONS if variants else ["curvature_scaled"]:
        if definition in network:
            curvatures[definition], accuracy, values = sweep_cells(network, measure, definition)
    kw = {"n_boot": 400, "seed": 0, "band": LINEAR_BAND, **kw}
    results = _judge(curvatures, accuracy, values, log_scale, kw["n_boot"], kw["seed"],
                     kw["band"])
    best = results.pop("curvature_scaled")
    best["by_definition"] = results
    best["variants"] = {DEFINITIONS[d]: r["verdict"] for d, r in results.items()}
    return best


def mean_verdict(verdict_at: Callable[[float], str], values) -> tuple[str, float]:
    """``verdict_at`` of the mean of per-seed ``values`` (S,), or "undecided" where the mean's
    seed interval (:func:`mean_interval`) reaches another verdict (:func:`interval_verdict`);
    and the mean."""
    mean, low, high = mean_interval(values)
    return interval_verdict(verdict_at, mean, low, high)[0], mean


def mean_interval(values, n_boot: int = 400, seed: int = 0) -> tuple[float, float, float]:
    """The mean of per-seed ``values`` (S,) and its 95 % interval by resampling the seeds
    (NaN seeds left out; NaN interval with fewer than two finite seeds)."""
    values = np.asarray(values, dtype=float).ravel()
    values = values[np.isfinite(values)]
    if values.size == 0:
        return np.nan, np.nan, np.nan
    if values.size < 2:
        return float(values.mean()), np.nan, np.nan
    means = np.random.default_rng(seed).choice(values, (n_boot, values.size)).mean(1)
    low, high = np.quantile(means, [0.025, 0.975])
    return float(values.mean()), float(low), float(high)


def with_interval(values, digits: int = 3, signed: bool = False) -> str:
    """``mean [low, high]`` of per-seed ``values`` (:func:`mean_interval`), as text."""
    mean, low, high = mean_interval(values)
    form = f"{'+' if signed else ''}.{digits}f"
    if not np.isfinite(mean):
        return "n/a"
    if not np.isfinite(low):
        return f"{mean:{form}}"
    return f"{mean:{form}} [{low:{form}}, {high:{form}}]"
