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

**Fig. S11 (c, d), "the behaviour of the two metrics notably diverges for linear networks"** —
the linear network of Fig. 5(a) in its three settings (small lr, large lr, dropout). A setting
*diverges* when the two measures' seed-mean phase labels differ, or when the fuzziness's
seed-mean load curve is flat (|D_0 − D_L| < 0.1 max_ℓ |D_ℓ|) while the trace ratio's is not.
**holds** when all three settings diverge; **partly** when one or two do; **differs** when none
does.

**Main text, "these findings considerably generalise" He & Su's law** — two readings of the same
curves pick one cell per nonlinearity row: the spring–block reading, the cell whose seed-mean
scale-free curvature of the trace ratio is nearest 0 (the most linear load curve); He & Su's
reading, the cell whose seed-mean Pearson r of the fuzziness curve against the layer index is
nearest −1 (equi-separation; the fuzziness curve is already log Tr(Σ_w Σ_b⁺), so it is
correlated as it is). A row is a hit for a reading when its cell is among the row's best-accuracy
cells (the same tie rule as :mod:`dnnphase.compare.claims.rules`). Over the four diagrams of the
paper preset, with k_c and k_r the hits of the two readings and Δ = k_c − k_r with its paired
interval (the same seed draws for both readings): **holds** when Δ > 0 and the interval's lower
end is above 0 (the spring–block reading picks the best cell more often); **differs** when
Δ < 0 and the interval's upper end is below 0; **partly** otherwise (the seeds cannot tell the
two readings apart).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import xarray as xr

from dnnphase.compare.claims.ledger import Claim

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


def s10_verdict(agreement: float, kappa: float) -> str:
    """S10's rule (module doc): holds at a >= 0.8 and kappa >= 0.6, differs at a < 0.6 or
    kappa < 0.4, partly otherwise; an undefined kappa leaves a alone."""
    kappa_ok = np.isnan(kappa) or kappa >= 0.6
    kappa_bad = not np.isnan(kappa) and kappa < 0.4
    if agreement < 0.6 or kappa_bad:
        return "differs"
    return "holds" if agreement >= 0.8 and kappa_ok else "partly"


def s11_verdict(diverging: int, settings: int) -> str:
    """Fig. S11 (c, d)'s rule: holds when every setting diverges, differs when none does."""
    return "holds" if diverging == settings else "differs" if diverging == 0 else "partly"


def generalises_verdict(delta: float, low: float, high: float) -> str:
    """The main text's rule: holds when the spring–block reading's surplus of hits is
    positive with its interval above 0, differs when negative with its interval below 0."""
    if delta > 0 and low > 0:
        return "holds"
    if delta < 0 and high < 0:
        return "differs"
    return "partly"


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


def _s10_rows(ds: xr.Dataset) -> list[Claim]:
    rows = []
    files = json.loads(ds.attrs["files"])
    for name, path in zip(ds["diagram"].values, files, strict=True):
        one = ds.sel(diagram=name)
        a, kappa = float(one["agreement"]), float(one["kappa"])
        verdict = s10_verdict(a, kappa)
        why = (f"rule fixed in advance: holds at agreement >= 0.8 and κ >= 0.6, differs at "
               f"agreement < 0.6 or κ < 0.4; here {a:.2f} and {kappa:.2f}" + _one_label(ds, name))
        rows.append(Claim(
            f"S10 ({name})", "the trace ratio (Eq. 3) and the fuzziness (Eq. 9) produce "
            "comparable phase diagrams", COMMAND, "comparable (no number)",
            f"labels agree in {_interval(one, 'agreement')} of {int(one['n_cells'])} cells, "
            f"κ {_interval(one, 'kappa')}, Spearman ρ of curvatures {_interval(one, 'rho')}",
            verdict, "" if verdict == "holds" else why, (RESULT, path)))
    return rows


def _s11_row(ds: xr.Dataset) -> Claim:
    settings = [str(s) for s in ds["setting"].values]
    diverging = int(ds["linear_diverges"].sum())
    parts = []
    for s in settings:
        one = ds.sel(setting=s)
        parts.append(f"{s}: curvature {float(one['linear_curvature_trace_ratio']):+.2f} "
                     f"(trace ratio) vs {float(one['linear_curvature_fuzziness']):+.2f} "
                     f"(fuzziness)")
    tail = ds["linear_drop_from_layer_1_fuzziness"].values
    head = ds["linear_drop_from_layer_1_trace_ratio"].values
    verdict = s11_verdict(diverging, len(settings))
    fz = ds["linear_curvature_fuzziness"].values
    drop = ds["linear_drop_fuzziness"].values
    why = (f"rule fixed in advance: a setting diverges when the labels differ or the "
           f"fuzziness curve is flat (drop < 0.1 of its size) while the trace ratio's is not; "
           f"{diverging} of {len(settings)} do. The fuzziness's curvature is "
           f"{np.min(fz):+.2f} to {np.max(fz):+.2f} in every setting: its input value is "
           f"log ≈ {float(ds.attrs['linear_fuzziness_input']):.0f} (about 0: whitened data), "
           f"after which it hardly moves (drop from layer 1 {np.min(tail):.2f}–"
           f"{np.max(tail):.2f} of its size, the trace ratio's {np.min(head):.2f}–"
           f"{np.max(head):.2f}), so it does not tell the settings apart; over all layers, "
           f"input included, it drops by {np.min(drop):.2f}–{np.max(drop):.2f} of its size, "
           f"so the rule does not call it flat")
    return Claim(
        "Fig. S11 (c, d)", "the two metrics notably diverge for linear networks, where the "
        "fuzziness cannot capture the differences in features across layers", COMMAND,
        "— (figure)", "; ".join(parts) + f"; diverging in {diverging} of {len(settings)} "
        f"[{ds.attrs['linear_diverging_low']:g}, {ds.attrs['linear_diverging_high']:g}]",
        verdict, "" if verdict == "holds" else why, (RESULT, LINEAR))


def _generalises_row(ds: xr.Dataset) -> Claim:
    paper = [str(d) for d in ds["diagram"].values if str(d).startswith("paper/")]
    one = ds.sel(diagram=paper)
    seeds = set(one["n_seeds"].values.tolist())
    files = [f for f in json.loads(ds.attrs["files"]) if f.startswith("figures/paper/")]
    hits = {r: int(one["hits"].sel(reading=r).sum()) for r in (SPRING_BLOCK, HE_SU, HE_SU_TRACE)}
    rows = int(one["rows"].sum())
    same = float((one["same"].sel(reading=HE_SU) * one["rows"]).sum())
    if len(seeds) != 1:  # paired draws only between diagrams of as many seeds
        low = high = np.nan
    else:
        boot = one["minus_boot"].sel(reading=HE_SU).sum("diagram").values
        low, high = np.quantile(boot, [0.025, 0.975])
    delta = hits[SPRING_BLOCK] - hits[HE_SU]
    verdict = generalises_verdict(delta, low, high)
    ours = (f"best-accuracy cell picked in {hits[SPRING_BLOCK]} of {rows} rows by the most "
            f"linear trace-ratio curve, {hits[HE_SU]} by He & Su's r nearest −1 of the "
            f"fuzziness; difference {delta:+d} [{low:+g}, {high:+g}]; the same cell in "
            f"{same:.0f} of {rows} rows; He & Su's r of the trace ratio: {hits[HE_SU_TRACE]}")
    why = ("rule fixed in advance: holds when the spring–block reading picks the best cell "
           "more often with its paired seed interval above 0, differs when less often with "
           "the interval below 0. He & Su's reading applied to the trace ratio picks it in "
           f"{hits[HE_SU_TRACE]} of {rows}: the gap is the measure's (Eq. 3 against Eq. 9), "
           "not curvature's against Pearson r")
    return Claim(
        "Main text (He & Su)", "the spring–block findings considerably generalise He & Su's "
        "law of equi-separation: a linear load curve marks the best test accuracy", COMMAND,
        "—", ours, verdict, why, (RESULT, *files))


def claims(root: Path) -> list[Claim]:
    with xr.open_dataset(Path(root) / RESULT) as ds:
        ds = ds.load()
    return [*_s10_rows(ds), _s11_row(ds), _generalises_row(ds)]
