"""The spring–block paper's single-figure supplement experiments: the CNN with dropout
introduced after convergence (Fig. S2) and the training against the test load curve
(Fig. S4).

Rules, fixed from the paper's sentences before the files were read:

* Fig. S2, shape: over the dropout levels whose networks separate the classes, the
  seed-mean curvature rises with p (Spearman ρ ≥ 0.9) and changes sign — concave, then
  linear, then convex;
* Fig. S2, "improves accuracy": the most linear level (seed-mean curvature nearest 0)
  against the state before dropout, paired by seed: holds when the 95 % interval of the
  paired difference lies above 0 *and* the level is among the best levels (the ties of
  :mod:`dnnphase.compare.claims.rules`); partly when only one of the two holds;
* Fig. S2, "stronger noise: convex and worse": the strongest separating level is convex
  and less accurate than the most linear one (paired interval below 0);
* Fig. S4: the test curve's phase label equals the training curve's at every learning rate
  (seed means), and the most linear learning rate is among the most accurate.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import xarray as xr
from scipy import stats

from dnnphase.compare.claims.ledger import Claim
from dnnphase.compare.claims.rules import linear_best
from dnnphase.sweeps.sweep import SweepConfig
from phasecore.loadcurve import phase_label

__all__ = ["ORDER", "SOURCE", "TITLE", "claims", "paired_interval"]

TITLE = "Spring–block paper, supplement: Figs. S2 and S4"
ORDER = 25
SOURCE = "spring-block"

S2_PAPER = "figures/supplement/paper_scale/cnn_dropout.nc"
S2_REDUCED = "figures/supplement/cnn_dropout.nc"
S4 = "figures/supplement/train_test.nc"


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


def _s2_rows(root: Path, name: str, label: str, fig: str) -> list[Claim]:
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
        fig, "dropout introduced after convergence: the CNN's curve goes concave → "
        "linear → convex as p grows", command, "concave → linear → convex",
        f"{scale}; curvature {mean_c[0]:+.2f} (p = {ps[0]:g}) … {mean_c[-1]:+.2f} "
        f"(p = {ps[-1]:g}), Spearman ρ {rho:+.2f}", "holds" if shape_ok else "differs",
        "" if shape_ok else "the curvature does not rise through 0 with p", (name,))]
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
        fig, "the dropout that makes the curve linear also improves accuracy",
        command, "improves (no number)",
        f"p = {ps[lin]:g}: accuracy {np.nanmean(acc[lin]):.3f}, before "
        f"{np.nanmean(before):.3f}, paired gain {gain:+.3f} [{g_lo:+.3f}, {g_hi:+.3f}]",
        verdict, why, (name,)))
    strong = len(ps) - 1
    loss, l_lo, l_hi = paired_interval(acc[strong], acc[lin])
    worse = mean_c[strong] > 0.05 and l_hi < 0
    rows.append(Claim(
        fig, "stronger dropout makes the curve convex and generalisation worse",
        command, "convex, worse", f"p = {ps[strong]:g}: curvature {mean_c[strong]:+.2f}, "
        f"accuracy {loss:+.3f} [{l_lo:+.3f}, {l_hi:+.3f}] against p = {ps[lin]:g}",
        "holds" if worse else "differs", "" if worse else "not both convex and worse",
        (name,)))
    return rows


def _s4_row(root: Path) -> Claim:
    ds = xr.load_dataset(root / S4).isel(alpha=0).sel(measure="trace_ratio")
    train = ds["curvature_scaled"].mean("seed").values  # (lr,)
    test = ds["curvature_scaled_test"].mean("seed").values
    same = phase_label(train) == phase_label(test)
    ties = linear_best(ds["curvature_scaled"].values[None], ds["test_accuracy"].values[None],
                       ds["lr"].values)
    linear_best_ok = bool(ties["per_row"][0] == 1)
    holds = bool(same.all()) and linear_best_ok
    differing = ", ".join(f"{v:g}" for v in ds["lr"].values[~same])
    reasons = ([] if same.all() else [f"the test curve's phase differs from the training "
                                      f"curve's at lr {differing}"])
    reasons += [] if linear_best_ok else ["the most linear lr is not among the most accurate"]
    lrs = ", ".join(f"{lr:g}: {a:+.2f}/{b:+.2f}" for lr, a, b in
                    zip(ds["lr"].values, train, test, strict=True))
    return Claim(
        "Fig. S4", "the test load curve behaves as the training one (concave → linear → "
        "convex with lr), and the most linear curve has the highest test accuracy",
        "python scripts/train_test.py figures/supplement", "—",
        f"curvature training/test by lr {lrs}; phase labels equal in {int(same.sum())} of "
        f"{same.size}; most linear among the best: {'yes' if ties['per_row'][0] else 'no'} "
        f"({ds.sizes['seed']} seeds)", "holds" if holds else "partly",
        "" if holds else "; ".join(reasons), (S4,))


def claims(root: Path) -> list[Claim]:
    rows = []
    if (root / S2_PAPER).is_file():
        rows += _s2_rows(root, S2_PAPER, "the paper's scale, one H200", "Fig. S2")
    rows += _s2_rows(root, S2_REDUCED, "reduced scale, 2 cores", "Fig. S2 (reduced)")
    return rows + [_s4_row(root)]
