"""This project's own claims about the chain (docs/fit.md, docs/prediction.md, the README),
held to the ledger's standard: each row from the committed family, prediction and scrutiny
files, its verdict by a rule written down here before the scrutiny files were computed. (The
per-cell AIC, the own-variance counts and the row baseline on dropout had been seen in a
first look; the seed intervals and the extrapolation split had not.)

The rules (one per row; "interval": the paired 95 % interval over seed resamples of a
difference of two RMSEs, :func:`dnnphase.compare.scrutiny.own_claims.paired_interval`):

* **AIC** — holds when every variant lowers every diagram's AIC with one Gaussian scale per
  diagram and with one per cell; partly when every one does with the diagram's scale but not
  with the cells', and at least one variant still lowers all four with the cells'; differs
  otherwise.
* **Within seed noise** — holds when the cells explained with each cell's own seed variance
  are as many as with the pooled one; partly when the counts differ but both stay within
  10 % of the cells (the reading "the chain misses almost every cell" stands either way);
  differs otherwise.
* **Seed-noise floor** — "near" is an RMSE within 1.5 times the floor; holds when the local
  mean is near it on the one row the sentence names (dropout, every other column) and on no
  other; differs otherwise.
* **Held-out** — a number is held out when every choice behind it, the candidate set
  included, was made without the diagram it is judged on: partly where only the last choice
  was (the leave-one-knob-out table), holds where all were.
* **Local mean beats the chain** — over the rows where the local mean's RMSE is lower: holds
  when every interval of chain − local mean lies above 0; partly when at least half do;
  differs otherwise.
* **The chain's one win** — holds when the intervals of chain − saturating and chain − local
  mean on the batch-size checkerboard both lie below 0; partly when both point differences
  are negative but an interval reaches 0; differs otherwise.
* **No variant beats the local mean** — over the (row, variant) pairs where the local mean's
  RMSE is lower: holds when every interval of variant − local mean lies above 0; partly when
  at least half do; differs otherwise.
* **The saturating surface beats smoothing on the checkerboard** (dropout, label noise) —
  against the better of the two parameter-free baselines (local mean, row interpolation):
  holds when both intervals of saturating − it lie below 0; partly when one does; differs
  when none.
* **No better than smoothness, extrapolated** — on the edge split, per knob, the chain against
  the better parameter-free baseline: holds when no interval of chain − it lies below 0;
  partly when one or two of the four do; differs when three or four do.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import xarray as xr

from dnnphase.compare.scrutiny.own_claims import paired_interval
from phaseclaims.ledger import Claim

__all__ = ["ORDER", "SOURCE", "TITLE", "claims"]

TITLE = "This project's own claims"
ORDER = 60
SOURCE = "ours"

KNOBS = ("dropout", "lr", "batch_size", "label_noise")
WORDS = {"dropout": "dropout", "lr": "lr", "batch_size": "batch size",
         "label_noise": "label noise"}
SPLIT_WORDS = {"checkerboard": "checkerboard", "columns": "columns", "edges": "edges"}
FAMILY = "python scripts/chain_family.py figures/paper"
SCRUTINY = "python scripts/scrutiny.py figures/paper"
PREDICTION = "python scripts/prediction.py figures/paper"
#: "Near the floor": an RMSE within this many times the seed-noise floor.
NEAR_FLOOR = 1.5
#: "Almost every cell missed": at most this share of the cells explained.
FEW = 0.10


def _load(root: Path, name: str) -> xr.Dataset:
    with xr.open_dataset(root / name) as ds:
        return ds.load()


def _files(prefix: str) -> tuple[str, ...]:
    return tuple(f"figures/paper/{prefix}_{k}.nc" for k in KNOBS)


def _interval(ds, first: str, second: str, split: str) -> tuple[float, float, float]:
    return paired_interval(ds, first, second, split)


def _shown(d: float, low: float, high: float) -> str:
    return f"{d:+.3f} [{low:+.3f}, {high:+.3f}]"


def _share_verdict(above: int, total: int) -> str:
    if total and above == total:
        return "holds"
    return "partly" if total and 2 * above >= total else "differs"


def _aic_row(scr: dict) -> Claim:
    diagram = np.array([s["delta_aic_diagram_scale"].values[1:] for s in scr.values()])
    cell = np.array([s["delta_aic_cell_scale"].values[1:] for s in scr.values()])
    names = list(next(iter(scr.values()))["variant"].values[1:])
    raised = [f"{names[v]} on {WORDS[k]} {cell[d, v]:+.0f}"
              for d, k in enumerate(scr) for v in range(len(names)) if cell[d, v] >= 0]
    all_diagram, all_cell = bool((diagram < 0).all()), bool((cell < 0).all())
    survivors = [n for v, n in enumerate(names) if (cell[:, v] < 0).all()]
    verdict = ("holds" if all_diagram and all_cell else
               "partly" if all_diagram and survivors else "differs")
    ours = (f"one scale per cell, same kept values: {int((cell < 0).sum())} of {cell.size} "
            f"lower" + (f"; raised: {', '.join(raised)}" if raised else "")
            + f"; lowering all four: {', '.join(survivors) or 'none'} (per cell, summed: "
            + ", ".join(f"{n} {cell[:, v].sum():+.0f}" for v, n in enumerate(names)) + ")")
    return Claim(
        "docs/fit.md: AIC", "every variant of the family lowers every diagram's AIC (one "
        "Gaussian scale per diagram)", FAMILY + "; " + SCRUTINY,
        f"{int((diagram < 0).sum())} of {diagram.size} lower, by {-diagram.max():.0f} to "
        f"{-diagram.min():.0f}", ours, verdict,
        "" if verdict == "holds" else "with a scale per cell (the cells' misfits differ by "
        "orders of magnitude) not every variant lowers every diagram's AIC",
        _files("family") + _files("scrutiny"))


def _seed_noise_row(scr: dict) -> Claim:
    cells = sum(int(s["trajectory_cells"].values[0]) for s in scr.values())
    pooled = np.array([s["explained_pooled"].values for s in scr.values()]).sum(axis=0)
    own = np.array([s["explained_own"].values for s in scr.values()]).sum(axis=0)
    names = list(next(iter(scr.values()))["variant"].values)
    ratio = [float(np.nanmedian(s["own_to_pooled"].values)) for s in scr.values()]
    few = max(pooled.max(), own.max()) <= FEW * cells
    verdict = ("holds" if np.array_equal(pooled, own) else "partly" if few else "differs")
    ours = (f"each cell's own seed variance: paper chain {own[0]} of {cells}; variants "
            + " / ".join(str(x) for x in own[1:]) + f" ({' / '.join(names[1:])}); a typical "
            f"cell's own variance is {min(ratio):.2f}–{max(ratio):.2f} of the pooled one "
            "(median per diagram)")
    return Claim(
        "docs/fit.md: within seed noise", "the chain explains 12 of 264 cells within their "
        "seed noise (χ²/dof ≤ 2, seed variance pooled over each diagram)",
        FAMILY + "; " + SCRUTINY,
        f"pooled: paper chain {pooled[0]} of {cells}; variants "
        + " / ".join(str(x) for x in pooled[1:]), ours, verdict,
        "" if verdict == "holds" else "the count rests on the pooled variance, which a few "
        "very noisy cells dominate; with each cell's own the counts change"
        + (" but stay few" if few else ""), _files("family") + _files("scrutiny"))


def _floor_row(pred: dict) -> Claim:
    near = []
    for knob, p in pred.items():
        for split in ("checkerboard", "columns"):
            ratio = p.attrs[f"{split}_local_rmse"] / p.attrs[f"{split}_floor"]
            if ratio <= NEAR_FLOOR:
                near.append((knob, split, ratio))
    named = [n for n in near if n[:2] == ("dropout", "columns")]
    verdict = "holds" if len(near) == 1 and named else "differs"
    ours = (f"local mean within {NEAR_FLOOR:g}× the floor on {len(near)} of 8 rows: "
            + ", ".join(f"{WORDS[k]} {SPLIT_WORDS[s]} {r:.2f}×" for k, s, r in near))
    return Claim(
        "docs/prediction.md: seed-noise floor", "only the local mean on dropout's held-out "
        "columns comes near the seed-noise floor (1.2×)", PREDICTION, "1 row (1.2×)", ours,
        verdict, "" if verdict == "holds" else "more rows come as near as the one named",
        _files("prediction"))


def _held_out_row(root: Path) -> Claim:
    candidates = sorted(p.name for p in (root / "figures" / "reversal").glob("*.nc"))
    return Claim(
        "README: held-out", "the reversal's fix (μ← = 0.06) chosen on any three diagrams is "
        "picked again, so its numbers are also held-out numbers (leave one knob out; the "
        "README said so until this row, and now says what the verdict says)",
        "python scripts/reversal.py figures/", "—",
        f"the choice among {len(candidates)} candidate diagrams is made without the fourth; "
        "the candidates themselves were built after all four diagrams had been compared",
        "partly", "out of sample for the last choice only, not for the candidate set: not "
        "held out in the usual sense",
        tuple(f"figures/reversal/{n}" for n in candidates))


def _local_beats_chain_row(scr: dict) -> Claim:
    won, above, shown = 0, 0, []
    for knob, s in scr.items():
        for split in ("checkerboard", "columns"):
            d, low, high = _interval(s, "chain", "local", split)
            if d > 0:
                won += 1
                above += low > 0
                shown.append(f"{WORDS[knob]} {split} {_shown(d, low, high)}")
    verdict = _share_verdict(above, won)
    return Claim(
        "docs/prediction.md: local mean", "the local mean of the nearest training cells "
        "beats the chain on 7 of 8 (knob, split) rows", SCRUTINY, "7 of 8",
        f"{won} of 8 lower; interval of chain − local mean above 0 in {above} of {won}: "
        + "; ".join(shown), verdict,
        "" if verdict == "holds" else f"{won - above} of the {won} wins are within seed noise",
        _files("scrutiny"))


def _one_win_row(scr: dict) -> Claim:
    s = scr["batch_size"]
    sat, loc = (_interval(s, "chain", m, "checkerboard") for m in ("saturating", "local"))
    below = (sat[2] < 0) + (loc[2] < 0)
    verdict = ("holds" if below == 2 else "partly" if sat[0] < 0 and loc[0] < 0
               else "differs")
    return Claim(
        "docs/prediction.md: the chain's one win", "the chain is the best of the four on the "
        "batch-size checkerboard (0.201 against 0.213 saturating, 0.260 local mean)",
        SCRUTINY, "best of four",
        f"chain − saturating {_shown(*sat)}; chain − local mean {_shown(*loc)}", verdict,
        "" if verdict == "holds" else "the win over the saturating surface is within seed "
        "noise" if sat[2] >= 0 else "the win is within seed noise", _files("scrutiny"))


def _variants_row(scr: dict) -> Claim:
    won, above, shown = 0, 0, []
    for knob, s in scr.items():
        for split in ("checkerboard", "columns"):
            for name in ("decaying noise", "friction profile"):
                d, low, high = _interval(s, name, "local", split)
                if d > 0:
                    won += 1
                    above += low > 0
                    if low <= 0:
                        shown.append(f"{name} {WORDS[knob]} {split} {_shown(d, low, high)}")
    verdict = _share_verdict(above, won)
    return Claim(
        "docs/fit.md: no variant beats the local mean", "with one more number per diagram "
        "the chain still loses to the local mean on the same 7 of 8 rows", FAMILY + "; "
        + SCRUTINY, "7 of 8 rows, both variants",
        f"local mean lower in {won} of 16 (row, variant) pairs, interval above 0 in {above}"
        + (f"; within seed noise: {'; '.join(shown)}" if shown else ""), verdict,
        "" if verdict == "holds" else "some of the local mean's wins are within seed noise",
        _files("family_held_out") + _files("scrutiny"))


def _saturating_row(scr: dict) -> Claim:
    below, shown = 0, []
    for knob in ("dropout", "label_noise"):
        s = scr[knob]
        free = min(("local", "row"), key=lambda p: float(
            s["rmse"].sel(predictor=p, split="checkerboard")))
        d, low, high = _interval(s, "saturating", free, "checkerboard")
        below += high < 0
        name = "local mean" if free == "local" else "row interpolation"
        shown.append(f"{WORDS[knob]}: saturating − {name} {_shown(d, low, high)}")
    verdict = "holds" if below == 2 else "partly" if below == 1 else "differs"
    return Claim(
        "docs/prediction.md: checkerboard", "on the checkerboard the fitted saturating "
        "surface predicts dropout and label noise better than smoothing (0.059, 0.067 "
        "against the local mean's 0.069, 0.084)", SCRUTINY, "better on both",
        "; ".join(shown), verdict,
        "" if verdict == "holds" else "interpolation along the knob alone, a baseline with "
        "no parameters, does as well or better", _files("scrutiny"))


def _edges_row(scr: dict) -> Claim:
    better, shown = 0, []
    for knob, s in scr.items():
        free = min(("local", "row"), key=lambda p: float(
            s["rmse"].sel(predictor=p, split="edges")))
        d, low, high = _interval(s, "chain", free, "edges")
        better += high < 0
        name = "local mean" if free == "local" else "row"
        shown.append(f"{WORDS[knob]} chain − {name} {_shown(d, low, high)}")
    verdict = "holds" if better == 0 else "partly" if better <= 2 else "differs"
    return Claim(
        "docs/prediction.md: extrapolation", "the chain predicts held-out cells no better "
        "than smoothness (tested here where smoothing cannot interpolate: the first and last "
        "knob columns held out)", SCRUTINY, "—",
        f"chain better beyond seed noise on {better} of 4: " + "; ".join(shown), verdict,
        "" if verdict == "holds" else "extrapolating a knob column, the chain beats both "
        "parameter-free baselines beyond seed noise on some diagrams", _files("scrutiny"))


def claims(root: Path) -> list[Claim]:
    root = Path(root)
    scr = {k: _load(root, f"figures/paper/scrutiny_{k}.nc") for k in KNOBS}
    pred = {k: _load(root, f"figures/paper/prediction_{k}.nc") for k in KNOBS}
    return [_aic_row(scr), _seed_noise_row(scr), _floor_row(pred), _held_out_row(root),
            _local_beats_chain_row(scr), _one_win_row(scr), _variants_row(scr),
            _saturating_row(scr), _edges_row(scr)]
