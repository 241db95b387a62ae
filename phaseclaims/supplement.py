"""The spring–block paper's single-figure supplement experiments: the CNN with dropout
introduced after convergence (Fig. S2), the training against the test load curve (Fig. S4),
and the networks without BatchNorm (SM S3).

Rules, fixed from the paper's sentences before the files were read:

* Fig. S2, shape: over the dropout levels whose networks separate the classes, the
  seed-mean curvature rises with p (Spearman ρ ≥ 0.9) and changes sign — concave, then
  linear, then convex;
* Fig. S2, "improves accuracy": the most linear level (seed-mean curvature nearest 0)
  against the state before dropout, paired by seed: holds when the 95 % interval of the
  paired difference lies above 0 *and* the level is among the best levels (the ties of
  :mod:`phaseclaims.rules`); partly when only one of the two holds;
* Fig. S2, "stronger noise: convex and worse": the strongest separating level is convex
  and less accurate than the most linear one (paired interval below 0);
* the reduced-scale Fig. S2 rows repeat the paper-scale ones and do not count.

Rules written after a first version had been read (each says what it replaced):

* **Fig. S4** (replaces a rule that could not say "differs" and read a middle learning
  rate, 3e-3, chosen at the accuracy peak of Fig. 1b's ReLU row rather than where its
  training curve is linear): three learning rates — 1e-4, 0.2, and the middle one where
  the seed-mean training curvature of Fig. 1b's α = 0 row crosses 0 (interpolated in
  log lr, two significant figures: chosen on Fig. 1b, not on the file it judges;
  :func:`linear_lr`). (a) The test curve's phase equals the training curve's at each lr;
  (b) the most linear training curve's lr is among the most accurate (the ties of
  :mod:`phaseclaims.rules`). **holds**: (a) at all three and (b);
  **differs**: (a) at most at one and not (b); **partly** otherwise. The row reads
  ``figures/supplement/s4/train_test.nc`` and is absent until it is committed.
* **SM S3, without BatchNorm, "similar convex–concave patterns"** (the committed
  no-BatchNorm diagram, ``norm="scale"``, against its BatchNorm twin: Fig. 1c's cells at
  the same dropout rates and seeds): (a) Fig. 1's corner rule on the no-BatchNorm diagram
  (the most nonlinear row at no dropout concave, the linear row at the most dropout
  convex); (b) the two diagrams' seed-mean phase labels agree in at least 80 % of the
  cells. **holds**: both; **partly**: one; **differs**: neither.
* **SM S3, "the variations between independent runs become more pronounced"**: per cell
  the seed SD of the scale-free curvature; the ratio of the medians over cells, without
  over with BatchNorm, and its 95 % interval resampling the paired cells (400 draws).
  **holds** when the interval lies above 1, **differs** when below 1, **undecided** when
  it straddles 1.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import xarray as xr
from scipy import stats

from dnnphase.sweeps.sweep import SweepConfig
from phaseclaims.ledger import Claim
from phaseclaims.rules import linear_best
from phasecore.loadcurve import phase_label

__all__ = ["ORDER", "SOURCE", "TITLE", "claims", "paired_interval"]

TITLE = "Spring–block paper, supplement: Figs. S2 and S4"
ORDER = 25
SOURCE = "spring-block"

S2_PAPER = "figures/supplement/paper_scale/cnn_dropout.nc"
S2_REDUCED = "figures/supplement/cnn_dropout.nc"


def paired_interval(a: np.ndarray, b: np.ndarray, n_boot: int = 2000,
                    seed: int = 0) -> tuple[float, float, float]:
    """Mean of ``a - b`` over seeds (paired, (S,)) and its 95 % interval by resampling
    seeds."""
    d = np.asarray(a, float) - np.asarray(b, float)
    d = d[np.isfinite(d)]
    rng = np.random.default_rng(seed)
    boot = rng.choice(d, (n_boot, d.size)).mean(1)
    low, high = np.quantile(boot, [0.025, 0.975])
    return float(d.mean()), float(low), float(high)


def _part(fig: str, part: str) -> str:
    """A row's id: ``fig`` with the part of the claim it tests ("Fig. S2 (shape)", "Fig. S2
    (reduced, shape)"), so that every id in the ledger is its own."""
    return f"{fig[:-1]}, {part})" if fig.endswith(")") else f"{fig} ({part})"


def _s2_rows(root: Path, name: str, label: str, fig: str, counts: bool = True) -> list[Claim]:
    ds = xr.load_dataset(root / name)
    config = SweepConfig(**json.loads(ds.attrs["config"]))  # its defaults filled in
    scale = (f"{label}: {config.channels} channels, {config.epochs} epochs, "
             f"{ds.sizes['seed']} seeds")
    command = ("python scripts/cnn_dropout.py figures/supplement/paper_scale --paper (the "
               "committed seeds: --seeds shares joined by --combine)"
               if "paper_scale" in name else "python scripts/cnn_dropout.py figures/supplement")
    chance = ds.attrs.get("chance_accuracy", 0.0)
    acc = ds["test_accuracy"].values  # (P, S)
    separating = np.nanmean(acc, 1) >= 2 * chance
    ps = ds["dropout"].values[separating]
    curv = ds["curvature_scaled"].values[separating]  # (P', S)
    acc = acc[separating]
    mean_c = np.nanmean(curv, 1)
    rho = stats.spearmanr(ps, mean_c).statistic
    crosses = mean_c.min() < 0 < mean_c.max()
    shape_ok = rho >= 0.9 and crosses
    rows = [Claim(
        _part(fig, "shape"), "dropout introduced after convergence: the CNN's curve goes "
        "concave → "
        "linear → convex as p grows", command, "concave → linear → convex",
        f"{scale}; curvature {mean_c[0]:+.2f} (p = {ps[0]:g}) … {mean_c[-1]:+.2f} "
        f"(p = {ps[-1]:g}), Spearman ρ {rho:+.2f}", "holds" if shape_ok else "differs",
        "" if shape_ok else "the curvature does not rise through 0 with p", (name,),
        counts=counts)]
    lin = int(np.nanargmin(np.abs(mean_c)))
    before = ds["test_accuracy_before"].values
    gain, g_lo, g_hi = paired_interval(acc[lin], before)
    ties = linear_best(curv[None, :, :], acc[None, :, :], ps)
    best = int(np.nanargmax(np.nanmean(acc, 1)))
    improves, among_best = g_lo > 0, bool(ties["per_row"][0] == 1)
    verdict = "holds" if improves and among_best else "partly" if improves or among_best \
        else "differs"
    why = "" if verdict == "holds" else (
        f"the most linear level (p = {ps[lin]:g}, curvature {mean_c[lin]:+.2f}) "
        f"{'improves on' if improves else 'does not improve on'} the state before dropout "
        f"and is {'' if among_best else 'not '}among the most accurate; the best is "
        f"p = {ps[best]:g} ({np.nanmean(acc[best]):.3f}, curvature {mean_c[best]:+.2f})")
    rows.append(Claim(
        _part(fig, "linear and accurate"),
        "the dropout that makes the curve linear also improves accuracy",
        command, "improves (no number)",
        f"p = {ps[lin]:g}: accuracy {np.nanmean(acc[lin]):.3f}, before "
        f"{np.nanmean(before):.3f}, paired gain {gain:+.3f} [{g_lo:+.3f}, {g_hi:+.3f}]",
        verdict, why, (name,), counts=counts))
    strong = len(ps) - 1
    loss, l_lo, l_hi = paired_interval(acc[strong], acc[lin])
    worse = mean_c[strong] > 0.05 and l_hi < 0
    rows.append(Claim(
        _part(fig, "strong dropout"),
        "stronger dropout makes the curve convex and generalisation worse",
        command, "convex, worse", f"p = {ps[strong]:g}: curvature {mean_c[strong]:+.2f}, "
        f"accuracy {loss:+.3f} [{l_lo:+.3f}, {l_hi:+.3f}] against p = {ps[lin]:g}",
        "holds" if worse else "differs", "" if worse else "not both convex and worse",
        (name,), counts=counts))
    return rows


S4_NEW = "figures/supplement/s4/train_test.nc"
FIG1B = "figures/paper/dnn_lr.nc"
NORM_SCALE = "figures/supplement/norm_scale/dnn_dropout.nc"
BATCHNORM = "figures/paper/dnn_dropout.nc"


def linear_lr(lrs: np.ndarray, curvature: np.ndarray) -> float:
    """Where a seed-mean training curvature (C,) along increasing learning rates (C,) first
    crosses 0 from below, interpolated in log lr, to two significant figures (NaN where it
    does not)."""
    for i in range(len(lrs) - 1):
        a, b = curvature[i], curvature[i + 1]
        if a < 0 <= b:
            x = np.log10(lrs[i]) + (np.log10(lrs[i + 1]) - np.log10(lrs[i])) * a / (a - b)
            return float(f"{10 ** x:.2g}")
    return np.nan


def s4_verdict(equal: int, lrs: int, linear_best: bool) -> str:
    """S4's rule: holds when the phases are equal at every lr and the most linear lr is
    among the best; differs when equal at most at one and it is not; partly otherwise."""
    if equal == lrs and linear_best:
        return "holds"
    if equal <= 1 and not linear_best:
        return "differs"
    return "partly"


def _s4_row(root: Path) -> list[Claim]:
    if not (root / S4_NEW).is_file():
        return []
    fig1b = xr.load_dataset(root / FIG1B)
    row = fig1b["curvature_scaled"].sel(measure="trace_ratio", alpha=0.0).mean("seed")
    middle = linear_lr(row["lr"].values, row.values)
    ds = xr.load_dataset(root / S4_NEW).isel(alpha=0).sel(measure="trace_ratio")
    lrs = ds["lr"].values
    train = ds["curvature_scaled"].mean("seed").values  # (lr,)
    test = ds["curvature_scaled_test"].mean("seed").values
    same = phase_label(train) == phase_label(test)
    ties = linear_best(ds["curvature_scaled"].values[None], ds["test_accuracy"].values[None],
                       lrs, log_scale=True)
    best_ok = bool(ties["per_row"][0] == 1)
    verdict = s4_verdict(int(same.sum()), same.size, best_ok)
    words = {-1: "concave", 0: "linear", 1: "convex"}
    shown = ", ".join(
        f"{lr:g}: {a:+.2f} ({words[int(phase_label(a))]}) / {b:+.2f} "
        f"({words[int(phase_label(b))]}), accuracy {acc:.3f}"
        for lr, a, b, acc in zip(lrs, train, test, ds["test_accuracy"].mean("seed").values,
                                 strict=True))
    reasons = [] if same.all() else [
        f"the phases differ at lr {', '.join(f'{v:g}' for v in lrs[~same])}"]
    reasons += [] if best_ok else ["the most linear lr is not among the most accurate"]
    if not np.isclose(lrs[1], middle):
        reasons.append(f"the file's middle lr {lrs[1]:g} is not Fig. 1b's linear lr {middle:g}")
    return [Claim(
        "Fig. S4", "the test load curve behaves as the training one (concave → linear → "
        "convex with lr), and the most linear curve has the highest test accuracy",
        f"python scripts/train_test.py figures/supplement/s4 --lrs 1e-4,{middle:g},0.2",
        "concave, linear, convex",
        f"middle lr {middle:g} (Fig. 1b's α = 0 row crosses 0 there); curvature training / "
        f"test by lr {shown}; phases equal in {int(same.sum())} of {same.size}; most linear "
        f"among the best: {'yes' if best_ok else 'no'} ({ds.sizes['seed']} seeds)",
        verdict, "; ".join(reasons), (S4_NEW, FIG1B))]


def _s3_rows(root: Path) -> list[Claim]:
    """SM S3 without BatchNorm, against its BatchNorm twin (same dropout rates and seeds)."""
    from phaseclaims.main_text import corner_verdict
    from phaseclaims.rules import linear_best_of_sweep, sweep_cells

    scale = xr.load_dataset(root / NORM_SCALE)
    twin = xr.load_dataset(root / BATCHNORM).sel(dropout=scale["dropout"].values,
                                                 seed=scale["seed"].values)
    c_scale, _, _ = sweep_cells(scale)  # (R, C, S): linear row first, dropout increasing
    c_twin, _, _ = sweep_cells(twin)
    ours, corners, _ = corner_verdict(c_scale[-1, 0], c_scale[0, -1])
    labels = [phase_label(np.nanmean(c, axis=2)) for c in (c_scale, c_twin)]
    agree = float(np.mean(labels[0] == labels[1]))
    concave = [int(np.sum(lab == -1)) for lab in labels]
    k = int(corners == "holds") + int(agree >= 0.8)
    verdict = "holds" if k == 2 else "partly" if k == 1 else "differs"
    best = linear_best_of_sweep(scale)
    cells = labels[0].size
    why = "" if verdict == "holds" else (
        f"Fig. 1's corner rule reads {corners}; labels agree with BatchNorm in {agree:.2f} "
        f"(rule: ≥ 0.8); without BatchNorm {concave[0]} of {cells} cells are concave, with it "
        f"{concave[1]}: no concave phase where BatchNorm has one")
    command = "python scripts/reanalyse.py figures/supplement/norm_scale (the committed sweep)"
    rows = [Claim(
        "SM S3 (no BatchNorm)", "with BatchNorm replaced by the scaling constant, the phase "
        "diagram shows similar convex–concave patterns", command, "similar (no number)",
        f"{ours}; labels agree with the BatchNorm twin in {agree:.2f} of {cells} cells; "
        f"concave cells {concave[0]} (BatchNorm {concave[1]}); linear is best: "
        f"{best['hits']} of {best['rows']} rows ({scale.sizes['seed']} seeds)",
        verdict, why, (NORM_SCALE, BATCHNORM))]
    sd = [np.nanstd(c, axis=2).ravel() for c in (c_scale, c_twin)]  # (cells,) each
    ratio = float(np.nanmedian(sd[0]) / np.nanmedian(sd[1]))
    rng = np.random.default_rng(0)
    boot = []
    for _ in range(400):
        pick = rng.integers(0, sd[0].size, sd[0].size)
        boot.append(np.nanmedian(sd[0][pick]) / np.nanmedian(sd[1][pick]))
    low, high = np.quantile(boot, [0.025, 0.975])
    verdict = "holds" if low > 1 else "differs" if high < 1 else "undecided"
    rows.append(Claim(
        "SM S3 (no BatchNorm, seeds)", "without BatchNorm the variations between independent "
        "runs become more pronounced", command, "more pronounced (no number)",
        f"median seed SD of the curvature {np.nanmedian(sd[0]):.3f} without BatchNorm, "
        f"{np.nanmedian(sd[1]):.3f} with; ratio {ratio:.2f} [{low:.2f}, {high:.2f}] "
        f"(cells resampled, {cells} cells, {scale.sizes['seed']} seeds)", verdict,
        "" if verdict == "holds" else
        f"the ratio's interval {'straddles' if verdict == 'undecided' else 'lies below'} 1",
        (NORM_SCALE, BATCHNORM)))
    return rows


def claims(root: Path) -> list[Claim]:
    rows = []
    if (root / S2_PAPER).is_file():
        rows += _s2_rows(root, S2_PAPER, "the paper's scale, one H200", "Fig. S2")
    rows += _s2_rows(root, S2_REDUCED, "reduced scale, 2 cores", "Fig. S2 (reduced)",
                     counts=not (root / S2_PAPER).is_file())
    return rows + _s4_row(root) + _s3_rows(root)
