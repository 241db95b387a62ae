"""The spring–block paper's supplement S4: its two separation measures side by side (Fig. S10),
the linear networks where they part (Fig. S11 c, d), and the main text's claim that the theory
generalises He & Su's law of equi-separation.

The rules below were written down before any of the numbers they judge were computed, and are
not changed afterwards.

**S10, "these two metrics produce comparable results"** — per committed network diagram that
holds both measures: the seed-mean phase label (scale-free curvature, band ±0.05) of the trace
ratio (paper Eq. 3) and of the fuzziness (Eq. 9) in every cell, their agreement a (fraction of
cells where both labels exist and are equal) and Cohen's κ. **holds** when a ≥ 0.8 and κ ≥ 0.6;
**differs** when a < 0.6 or κ < 0.4; **partly** otherwise. Where κ is undefined (both measures
give one and the same label everywhere) a alone decides. The Spearman ρ of the two seed-mean
curvatures over cells is reported beside them and decides nothing. Intervals: 95 % over 400
resamples of the seed indices (drawn with replacement, the same draw for every cell and both
measures: a seed is one network, measured twice).
Corrections, written after the rows had been read: (i) where one measure gives one label in
every cell, κ is 0 whatever the other says (it counts agreement beyond what the labels'
frequencies give, and a constant labelling has none to give), so κ decides nothing there and
a alone decides, as for an undefined κ; (ii) the rule is also applied at both ends of the
intervals (a and κ at their lower ends, then at their upper ends): where the three verdicts
differ, the row is **undecided** at this scale. The reduced-scale diagrams (``dnn_dropout``,
``knobs/*``) are twins of the paper-scale ones and do not count.

**Fig. S11 (c, d), "the behaviour of the two metrics notably diverges for linear networks"** —
the linear network of Fig. 5(a) in its three settings (small lr, large lr, dropout). A load
curve has a phase (concave, linear, convex) only when it falls (D_0 > D_L: separation improves
with depth); a curve that rises has none, and is called *rising* (the first rule called a
rising fuzziness curve "convex", which says nothing of how the load is shared; corrected after
the rows had been read). A setting *diverges* when the two measures' seed-mean curves differ in
phase (rising counts as a phase of its own), or when the fuzziness's seed-mean load curve is
flat (|D_0 − D_L| < 0.1 max_ℓ |D_ℓ|) while the trace ratio's is not. **holds** when all three
settings diverge; **partly** when one or two do; **differs** when none does.

**Main text, "these findings considerably generalise" He & Su's law** — not a contest of
readings (corrected after the first rule, which set the spring–block reading of the trace ratio
against He & Su's reading of the fuzziness, and so compared two measures rather than two
readings). Both readings are taken of the same curves, the trace ratio (Eq. 3), over the four
diagrams of the paper preset: the spring–block reading picks per nonlinearity row the cell whose
seed-mean scale-free curvature is nearest 0 (the most linear load curve), He & Su's the cell
whose seed-mean Pearson r of the curve against the layer index is nearest −1 (equi-separation).
A row is a hit for a reading when its cell is among the row's best-accuracy cells (the ties of
:mod:`phaseclaims.rules`). "Generalises" needs (a) the spring–block reading to find
the best cell as the ledger's rule asks of a diagram, pooled over the R rows: hits k ≥ 2R/3 and
k ≥ e + R/4 (e: expected by chance); and (b) no loss against He & Su's reading of the same
curves: the paired 95 % interval of Δ = k_curvature − k_r (the same seed draws for both) reaches
0 or above. **holds**: both; **partly**: one; **differs**: neither. He & Su's reading of their
own measure, the fuzziness, is reported beside it and decides nothing.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import xarray as xr

from phaseclaims.ledger import Claim

__all__ = ["ORDER", "SOURCE", "TITLE", "claims"]

TITLE = "Spring–block paper, supplement: the two measures"
ORDER = 30
SOURCE = "spring-block"

COMMAND = "python scripts/two_measures.py"
RESULT = "figures/supplement/two_measures/two_measures.nc"
LINEAR = "figures/supplement/two_measures/linear_network.nc"
#: The two readings the main text's row sets against each other (names along ``reading``).
SPRING_BLOCK, HE_SU = "linear, trace_ratio", "equiseparation, fuzziness"
#: He & Su's reading applied to the paper's own measure, reported beside them.
HE_SU_TRACE = "equiseparation, trace_ratio"


def s10_verdict(agreement: float, kappa: float, constant: bool = False) -> str:
    """S10's rule (module doc): holds at a >= 0.8 and kappa >= 0.6, differs at a < 0.6 or
    kappa < 0.4, partly otherwise; an undefined kappa, or one measure ``constant`` (one
    label in every cell), leaves a alone."""
    if constant:
        kappa = np.nan
    kappa_ok = np.isnan(kappa) or kappa >= 0.6
    kappa_bad = not np.isnan(kappa) and kappa < 0.4
    if agreement < 0.6 or kappa_bad:
        return "differs"
    return "holds" if agreement >= 0.8 and kappa_ok else "partly"


def s10_verdict_interval(agreement: tuple, kappa: tuple, constant: bool = False) -> str:
    """S10's rule at the point estimates, and at both ends of the intervals (``(point, low,
    high)`` each): **undecided** where the three verdicts differ."""
    verdicts = {s10_verdict(a, k, constant) for a, k in zip(agreement, kappa, strict=True)
                if np.isfinite(a)}
    point = s10_verdict(agreement[0], kappa[0], constant)
    return point if verdicts <= {point} else "undecided"


def curve_phase(curve: np.ndarray, curvature: float) -> str:
    """A seed-mean load curve's phase for S11: "rising" when D_L > D_0 (no phase), else the
    curvature's label (concave, linear, convex)."""
    from phasecore.loadcurve import phase_label

    if curve[-1] > curve[0]:
        return "rising"
    return {-1: "concave", 0: "linear", 1: "convex"}[int(phase_label(np.asarray(curvature)))]


def s11_verdict(diverging: int, settings: int) -> str:
    """Fig. S11 (c, d)'s rule: holds when every setting diverges, differs when none does."""
    return "holds" if diverging == settings else "differs" if diverging == 0 else "partly"


def generalises_verdict(rule_holds: bool, delta_high: float) -> str:
    """The main text's rule: (a) the spring–block reading passes the ledger's diagram rule,
    pooled; (b) the paired interval of its hits minus He & Su's (same curves) reaches 0."""
    k = int(bool(rule_holds)) + int(np.isfinite(delta_high) and delta_high >= 0)
    return "holds" if k == 2 else "partly" if k == 1 else "differs"


def _interval(one: xr.Dataset, key: str) -> str:
    return (f"{float(one[key]):.2f} [{float(one[key + '_low']):.2f}, "
            f"{float(one[key + '_high']):.2f}]")


def _one_label(ds: xr.Dataset, diagram: str) -> str:
    """Why kappa is 0: a measure that gives one label in every cell of the diagram."""
    cells = ds.where(ds["cell_diagram"] == diagram, drop=True)
    words = {-1.0: "concave", 0.0: "linear", 1.0: "convex"}
    for measure in ("trace_ratio", "fuzziness"):
        labels = cells[f"label_{measure}"].values
        labels = np.unique(labels[np.isfinite(labels)])
        if labels.size == 1:
            return (f" ({measure.replace('_', ' ')} calls every cell "
                    f"{words[float(labels[0])]}, so κ is 0 whatever the other says)")
    return ""


#: The reduced-scale diagrams: twins of the paper-scale ones (they do not count).
REDUCED = ("dnn_dropout", "knobs/")


def _s10_rows(ds: xr.Dataset) -> list[Claim]:
    rows = []
    files = json.loads(ds.attrs["files"])
    for name, path in zip(ds["diagram"].values, files, strict=True):
        one = ds.sel(diagram=name)
        a, kappa = float(one["agreement"]), float(one["kappa"])
        constant = _one_label(ds, name)
        verdict = s10_verdict_interval(
            tuple(float(one[f"agreement{e}"]) for e in ("", "_low", "_high")),
            tuple(float(one[f"kappa{e}"]) for e in ("", "_low", "_high")), bool(constant))
        why = (f"rule: holds at agreement >= 0.8 and κ >= 0.6, differs at agreement < 0.6 or "
               f"κ < 0.4; here {a:.2f} and {kappa:.2f}" + constant
               + (" — κ decides nothing, agreement alone decides" if constant else "")
               + ("; at the ends of the intervals the rule reads otherwise: undecided at "
                  "this scale" if verdict == "undecided" else ""))
        reduced = str(name) == REDUCED[0] or str(name).startswith(REDUCED[1])
        rows.append(Claim(
            f"S10 ({name})", "the trace ratio (Eq. 3) and the fuzziness (Eq. 9) produce "
            "comparable phase diagrams", COMMAND, "comparable (no number)",
            f"labels agree in {_interval(one, 'agreement')} of {int(one['n_cells'])} cells, "
            f"κ {_interval(one, 'kappa')}, Spearman ρ of curvatures {_interval(one, 'rho')}"
            + (" (reduced-scale twin of the paper-scale row)" if reduced else ""),
            verdict, "" if verdict == "holds" else why, (RESULT, path), counts=not reduced))
    return rows


def _flat(curve: np.ndarray) -> bool:
    """S11's flat curve: |D_0 - D_L| < 0.1 max_l |D_l|."""
    return abs(curve[0] - curve[-1]) < 0.1 * np.max(np.abs(curve))


def _s11_row(ds: xr.Dataset, linear: xr.Dataset) -> Claim:
    settings = [str(s) for s in ds["setting"].values]
    parts, diverging = [], 0
    for s in settings:
        one = ds.sel(setting=s)
        curves = {m: linear["load_curve"].sel(setting=s, measure=m).mean("seed").values
                  for m in ("trace_ratio", "fuzziness")}
        phases = {m: curve_phase(curves[m], float(one[f"linear_curvature_{m}"]))
                  for m in curves}
        flat = {m: _flat(c) for m, c in curves.items()}
        diverges = (phases["trace_ratio"] != phases["fuzziness"]
                    or (flat["fuzziness"] and not flat["trace_ratio"]))
        diverging += diverges
        parts.append(f"{s}: trace ratio {phases['trace_ratio']} "
                     f"({float(one['linear_curvature_trace_ratio']):+.2f}), fuzziness "
                     f"{phases['fuzziness']} (D_0 {curves['fuzziness'][0]:.1f} → D_L "
                     f"{curves['fuzziness'][-1]:.1f})")
    tail = ds["linear_drop_from_layer_1_fuzziness"].values
    head = ds["linear_drop_from_layer_1_trace_ratio"].values
    verdict = s11_verdict(diverging, len(settings))
    why = (f"rule: a setting diverges when the two curves differ in phase (a rising curve has "
           f"none) or the fuzziness is flat while the trace ratio is not; {diverging} of "
           f"{len(settings)} do")
    note = (f"the fuzziness rises from its input value (log ≈ "
            f"{float(ds.attrs['linear_fuzziness_input']):.0f}: whitened data) and hardly moves "
            f"after layer 1 (drop from layer 1 {np.min(tail):.2f}–{np.max(tail):.2f} of its "
            f"size, the trace ratio's {np.min(head):.2f}–{np.max(head):.2f}), so it does not "
            "tell the settings apart")
    return Claim(
        "Fig. S11 (c, d)", "the two metrics notably diverge for linear networks, where the "
        "fuzziness cannot capture the differences in features across layers", COMMAND,
        "— (figure)", "; ".join(parts) + f"; diverging in {diverging} of {len(settings)}",
        verdict, note if verdict == "holds" else why + "; " + note, (RESULT, LINEAR))


def _generalises_row(ds: xr.Dataset) -> Claim:
    from phaseclaims.rules import verdict_of

    paper = [str(d) for d in ds["diagram"].values if str(d).startswith("paper/")]
    one = ds.sel(diagram=paper)
    seeds = set(one["n_seeds"].values.tolist())
    files = [f for f in json.loads(ds.attrs["files"]) if f.startswith("figures/paper/")]
    hits = {r: int(one["hits"].sel(reading=r).sum()) for r in (SPRING_BLOCK, HE_SU, HE_SU_TRACE)}
    rows = int(one["rows"].sum())
    chance = float(one["chance"].sel(reading=SPRING_BLOCK).sum())
    same = float((one["same"].sel(reading=HE_SU_TRACE) * one["rows"]).sum())
    if len(seeds) != 1:  # paired draws only between diagrams of as many seeds
        low = high = np.nan
    else:
        boot = one["minus_boot"].sel(reading=HE_SU_TRACE).sum("diagram").values
        low, high = np.quantile(boot, [0.025, 0.975])
    delta = hits[SPRING_BLOCK] - hits[HE_SU_TRACE]
    pooled = verdict_of(hits[SPRING_BLOCK], rows, chance)
    verdict = generalises_verdict(pooled == "holds", high)
    ours = (f"on the same curves (trace ratio): best-accuracy cell picked in "
            f"{hits[SPRING_BLOCK]} of {rows} rows by the most linear curve ({chance:.1f} "
            f"expected by chance; the ledger's rule, pooled: {pooled}), in "
            f"{hits[HE_SU_TRACE]} by He & Su's r nearest −1; difference {delta:+d} "
            f"[{low:+g}, {high:+g}]; the same cell in {same:.0f} of {rows} rows. He & Su's r "
            f"of their own measure (the fuzziness): {hits[HE_SU]} of {rows}")
    why = ("the two readings of the same curves pick the best cell about as often (not a "
           "contest: both say a near-linear curve marks the best cell); that the theory "
           "also explains the concave and convex sides is what Figs. 1 and 3 test")
    if verdict != "holds":
        why = (f"(a) the pooled rule reads {pooled}; (b) the interval of the difference "
               f"{'reaches' if np.isfinite(high) and high >= 0 else 'stays below'} 0; " + why)
    return Claim(
        "Main text (He & Su)", "the spring–block findings considerably generalise He & Su's "
        "law of equi-separation: a linear load curve marks the best test accuracy", COMMAND,
        "—", ours, verdict, why, (RESULT, *files))


def claims(root: Path) -> list[Claim]:
    with xr.open_dataset(Path(root) / RESULT) as ds:
        ds = ds.load()
    with xr.open_dataset(Path(root) / LINEAR) as linear:
        linear = linear.load()
    return [*_s10_rows(ds), _s11_row(ds, linear), _generalises_row(ds)]
