"""He & Su's law of equi-separation (Figs. 1, 3, 7, 9 and 12 of *A law of data separation in
deep learning*), from the sweeps ``python scripts/separation_laws.py`` writes
(:mod:`dnnphase.sweeps.separation_laws`: settings, scale): their own protocol's files
(``figures/separation_laws_authors``) where an experiment's are all committed, the
reference, with ours (``figures/separation_laws``) as the variant "our protocol" and the
rerun of theirs under another machine's CPU kernels as the variant "other CPU kernels"
(:mod:`~.protocols`: which files a row reads, and the settings that still differ from
theirs, listed in every row; a row is robust only where every variant agrees).

The rules, fixed before any of our protocol's files was computed (their reading of the two
protocols before any of the authors'):

* **the law holds** for a network when the seed-mean Pearson r of its log fuzziness
  against the layer index is at most :data:`LAW_R` (−0.99; the paper's rows read −0.997 to
  −1.000), **partly** when at most :data:`PARTLY_R` (−0.95), and differs above;
* Fig. 1: the paper keeps, per network, the learning rate whose r is nearest −1 (their
  rule, per seed here); the rows use it and say r at the learning rate of lowest seed-mean
  training loss beside it, and one more row judges the law under that choice, which does
  not look at r;
* Fig. 1, ρ at 20 layers with Adam (0.818): holds within :data:`RHO_HOLDS` (0.03), partly
  within :data:`RHO_PARTLY` (0.1);
* Fig. 1's text, "the 20-layer neural networks have higher values of the final separation
  fuzziness than those of their 8-layer counterparts": per optimizer, the seed-mean final
  log fuzziness (the last hidden layer's, D_{L−1}) of the 20-layer network minus the
  8-layer one's, each at the learning rate their rule keeps per seed, with its 95 %
  interval (each network's seeds resampled on their own, :func:`difference_interval`):
  holds where the interval lies above 0, differs where it lies below 0, undecided where it
  straddles 0. The row holds (differs) where all three optimizers hold (differ), is partly
  where one holds and another differs, and undecided otherwise; its variant "lowest-loss
  lr" is the same rule with each network at the learning rate of lowest seed-mean training
  loss;
* Fig. 3: the optimal depth is the depth of lowest seed-mean fuzziness at the last layer;
  holds where it is the paper's, partly where it is a neighbour on the depth grid;
* Fig. 4: width 20 separates worse than 100 when the interval of the difference of their
  seed-mean final fuzziness lies above 0 (holds; its mean alone: partly); 100 and 1 000 end
  "about the same" when their difference is at most :data:`SAME_WIDTH` (a quarter) of the
  20-to-100 one (holds; half: partly); Wide-Narrow separates better than Narrow-Wide when the
  interval of their difference lies below 0 (holds; its mean alone: partly);
* Fig. 7: half-lives rising with the sample size, strictly at every step (holds) or only
  from the smallest to the largest (partly);
* Fig. 9: the law "does not emerge at the beginning": r at epoch 0 above :data:`PARTLY_R`
  and the final r at most :data:`LAW_R`; "the decay ratio decreases" after the law
  emerges (the first snapshot with r at most :data:`LAW_R`): Spearman of ρ with the epoch
  at most −0.8 (holds), or the final ρ below ρ at emergence (partly);
* Fig. 12: "a fuzzy version" on test data: the test curve's r at most :data:`PARTLY_R`.

Intervals resample the seeds (:func:`phaseclaims.rules.mean_interval`). The rule of
straddling intervals, written after the rules above had judged their files: a verdict on a
seed mean (the law's r in Figs. 1, 7, 9 and 12, Fig. 9's r at epoch 0, Fig. 1's ρ through
its distance from 0.818) is **undecided** where the 95 % interval of that mean reaches
another verdict than the mean does (:func:`phaseclaims.rules.interval_verdict`); Fig. 7's
row is undecided where any sample size is.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import xarray as xr

from dnnphase.measures import laws
from phaseclaims.ledger import Claim
from phaseclaims.protocols import command, folder, judged, open_sweep
from phaseclaims.rules import interval_verdict, mean_interval, mean_verdict, with_interval

__all__ = ["FOLDER", "LAW_R", "OPTIMIZER_WORDS", "ORDER", "SOURCE", "PARTLY_R", "TITLE",
           "claims", "difference_interval", "law_verdict", "law_verdict_of", "missing_row",
           "open_sweep", "paper_rule"]

TITLE = "He & Su: the law of equi-separation"
ORDER = 70
SOURCE = "he-su"

#: Our protocol's folder (the files committed first; the authors' protocol, the reference,
#: writes :data:`~.protocols.FOLDERS` ``["authors"]``).
FOLDER = folder("ours")
LAW_R = -0.99
PARTLY_R = -0.95
RHO_HOLDS, RHO_PARTLY = 0.03, 0.1
SPEARMAN_FALLS = -0.8
SAME_WIDTH = 0.25  # "about the same": at most this share of the width-20-to-100 difference
R_DIGITS = 4  # one more than the paper's, so that a value just above LAW_R does not read as it

#: Fig. 1's r, (optimizer, their layers L) -> r, as the caption lists them ("by row first").
PAPER_R = {("sgd", 4): -1.000, ("sgd", 8): -0.998, ("sgd", 20): -0.997,
           ("momentum", 4): -0.999, ("momentum", 8): -0.998, ("momentum", 20): -0.998,
           ("adam", 4): -1.000, ("adam", 8): -0.997, ("adam", 20): -0.999}
OPTIMIZER_WORDS = {"sgd": "SGD", "momentum": "SGD with momentum", "adam": "Adam"}
PAPER_RHO = 0.818  # Adam, 20 layers
#: Fig. 3's optimal depths, their L (L − 1 hidden layers here).
PAPER_OPTIMAL = {"mnist": 6, "fashion": 10}


def law_verdict(r: float) -> str:
    """The verdict of a seed-mean r: holds (<= LAW_R), partly (<= PARTLY_R), differs."""
    if np.isfinite(r) and r <= LAW_R:
        return "holds"
    return "partly" if np.isfinite(r) and r <= PARTLY_R else "differs"


def law_verdict_of(values) -> tuple[str, float]:
    """The law's verdict on per-seed r ``values`` (S,): :func:`law_verdict` of their mean, or
    "undecided" where the mean's seed interval reaches another verdict; and the mean."""
    return mean_verdict(law_verdict, values)


def _straddles(values) -> str:
    """The why of an undecided verdict on per-seed ``values``: their interval."""
    return f"the seeds' interval {with_interval(values, R_DIGITS)} crosses a threshold"


def _epochs(ds: xr.Dataset) -> int:
    """The epochs a sweep trained for (its stored configuration)."""
    return int(json.loads(ds.attrs["config"])["epochs"])


def missing_row(id_: str, claim: str, experiment: str, paper: str,
                protocol: str = "authors") -> Claim:
    """The "cannot" row of a claim whose experiment's files under ``protocol`` are not
    committed here."""
    return Claim(id_, claim, command(protocol, experiment), paper, "not computed", "cannot",
                 f"{folder(protocol)}/{experiment}*.nc is not committed, or holds another "
                 "scale without the paper's depths")


def paper_rule(ds: xr.Dataset, depth: int) -> dict:
    """Fig. 1's two choices of learning rate at one depth of a lr sweep: ``r_paper`` (S,)
    r at each seed's lr of r nearest −1, ``lr_paper`` (S,) those lrs, ``rho_paper`` (S,);
    ``lr_loss`` the lr of lowest seed-mean final training loss and ``r_loss`` (S,) there."""
    r = ds["pearson_r"].sel(depth=depth).isel(alpha=0).transpose("lr", "seed").values
    rho = ds["decay_ratio"].sel(depth=depth).isel(alpha=0).transpose("lr", "seed").values
    loss = ds["train_loss"].sel(depth=depth).isel(alpha=0).transpose("lr", "seed").values
    lrs = ds["lr"].values
    pick = np.where(np.isfinite(r), r, np.inf).argmin(axis=0)  # (S,): r nearest -1
    seeds = np.arange(r.shape[1])
    with np.errstate(invalid="ignore"):
        mean_loss = np.where(np.isfinite(loss).all(axis=1), loss.mean(axis=1), np.inf)
    best = int(mean_loss.argmin())
    return {"r_paper": np.where(np.isfinite(r).any(axis=0), r[pick, seeds], np.nan),
            "lr_paper": lrs[pick], "rho_paper": rho[pick, seeds],
            "lr_loss": float(lrs[best]), "r_loss": r[best]}


def _fig1_rows(root: Path, protocol: str) -> list[Claim]:
    files = {opt: open_sweep(root, f"hesu_fig1_{opt}", protocol) for opt in OPTIMIZER_WORDS}
    paths = tuple(f"{folder(protocol)}/hesu_fig1_{o}.nc" for o in files)
    rows, loss_verdicts = [], []
    for (opt, layers), paper_r in PAPER_R.items():
        id_, claim = (f"He–Su Fig. 1 ({OPTIMIZER_WORDS[opt]}, {layers} layers)",
                      f"log fuzziness falls linearly with the layer, r = {paper_r:.3f}")
        ds = files[opt]
        if ds is None or layers - 1 not in ds["depth"].values:
            rows.append(missing_row(id_, claim, "hesu_fig1", f"r {paper_r:.3f}", protocol))
            continue
        chosen = paper_rule(ds, layers - 1)
        verdict, mean_r = law_verdict_of(chosen["r_paper"])
        loss_verdicts.append(law_verdict(mean_interval(chosen["r_loss"])[0]))
        lrs = ", ".join(f"{v:g}" for v in chosen["lr_paper"])
        ours = (f"r {with_interval(chosen['r_paper'], R_DIGITS)} (their rule: lr {lrs} by seed); "
                f"at the lowest-loss lr {chosen['lr_loss']:g}: "
                f"{with_interval(chosen['r_loss'], R_DIGITS)}")
        why = ("" if verdict == "holds" else
               f"r {LAW_R} or {PARTLY_R}: {_straddles(chosen['r_paper'])}"
               if verdict == "undecided" else
               f"seed-mean r {mean_r:.4f} above {LAW_R} ({_epochs(ds)} of their 600 epochs)")
        rows.append(Claim(id_, claim, command(protocol, "hesu_fig1"), f"r {paper_r:.3f}", ours,
                          verdict, why, paths))
    if len(loss_verdicts) == len(PAPER_R):
        n = sum(v == "holds" for v in loss_verdicts)
        verdict = ("holds" if n == len(PAPER_R) else
                   "partly" if n >= len(PAPER_R) / 2 else "differs")
        rows.append(Claim(
            "He–Su Fig. 1 (learning rate not chosen by r)",
            "the law holds in all nine networks when the lr is the one of lowest training loss "
            "(their rule picks the lr of r nearest −1)",
            command(protocol, "hesu_fig1"), "— (their rule only)",
            f"{n} of {len(PAPER_R)} networks hold (seed-mean r <= {LAW_R})", verdict,
            "" if verdict == "holds" else
            f"{len(PAPER_R) - n} of the nine: seed-mean r above {LAW_R} at the lowest-loss lr",
            paths))
    adam = files["adam"]
    id_, claim = ("He–Su Fig. 1 (Adam, 20 layers, ρ)",
                  "decay ratio ρ = 0.818, half-life 3.45 layers")
    if adam is None or 19 not in adam["depth"].values:
        rows.append(missing_row(id_, claim, "hesu_fig1", "ρ 0.818", protocol))
    else:
        chosen = paper_rule(adam, 19)
        rho, low, high = mean_interval(chosen["rho_paper"])
        gap = abs(rho - PAPER_RHO)
        ends = (abs(low - PAPER_RHO), abs(high - PAPER_RHO))  # the gap's interval:
        near = 0.0 if low <= PAPER_RHO <= high else min(ends)  # 0 where it holds 0.818
        verdict = interval_verdict(
            lambda g: "holds" if g <= RHO_HOLDS else "partly" if g <= RHO_PARTLY else "differs",
            gap, near, max(ends))[0]
        half = np.log(2) / np.log(1 / rho) if 0 < rho < 1 else np.inf
        rows.append(Claim(
            id_, claim, command(protocol, "hesu_fig1"), "ρ 0.818, half-life 3.45",
            f"ρ {with_interval(chosen['rho_paper'])}, half-life {half:.2f} layers", verdict,
            "" if verdict == "holds" else
            f"|ρ − 0.818| = {gap:.3f}, its seed interval {near:.3f} to {max(ends):.3f} "
            f"crossing {RHO_HOLDS} or {RHO_PARTLY}; ρ falls along training (Fig. 9: "
            if verdict == "undecided" else
            f"|ρ − 0.818| = {gap:.3f} (> {RHO_HOLDS}); ρ falls along training (Fig. 9: "
            f"{_epochs(adam)} of their 600 epochs here) and moves with the measurement ("
            + ("He & Su's here: each batch's BatchNorm statistics, the raw D_0"
               if protocol != "ours" else "ours here: eval-mode BatchNorm, D_0 after an "
               "input BatchNorm; theirs: each batch's statistics, the raw input") + ")",
            (f"{folder(protocol)}/hesu_fig1_adam.nc",)))
    rows.append(_deeper_row(files, protocol))
    return rows


def _final_at(ds: xr.Dataset, depth: int, lrs) -> np.ndarray:
    """Per seed, the final log fuzziness (layer ``depth``, the last hidden one) of the
    ``depth`` network at that seed's learning rate ``lrs[s]`` (one lr: every seed's), (S,)."""
    final = ds["load_curve"].sel(measure="fuzziness", depth=depth, layer=depth).isel(
        alpha=0).transpose("lr", "seed").values
    index = np.searchsorted(ds["lr"].values, np.broadcast_to(lrs, final.shape[1:]))
    return final[index, np.arange(final.shape[1])]


def _deeper_verdict(low: float, high: float) -> str:
    """One optimizer: 20 layers end fuzzier (the interval above 0), less fuzzy, or either."""
    return "holds" if low > 0 else "differs" if high < 0 else "undecided"


def _overall(verdicts: list[str]) -> str:
    """The row of three optimizers' verdicts (the module's rule)."""
    if len(set(verdicts)) == 1:
        return verdicts[0]
    return "partly" if {"holds", "differs"} <= set(verdicts) else "undecided"


def _deeper_row(files: dict, protocol: str) -> Claim:
    id_ = "He–Su Fig. 1 (20 against 8 layers)"
    claim = ("the 20-layer networks end with a higher final fuzziness than their 8-layer "
             "counterparts (the text on Fig. 1)")
    if any(ds is None or not {7, 19} <= set(ds["depth"].values.tolist())
           for ds in files.values()):
        return missing_row(id_, claim, "hesu_fig1", "20 layers fuzzier", protocol)
    parts, verdicts, by_loss = [], [], []
    for opt, ds in files.items():
        deep, mid = paper_rule(ds, 19), paper_rule(ds, 7)
        a, b = _final_at(ds, 19, deep["lr_paper"]), _final_at(ds, 7, mid["lr_paper"])
        diff, low, high = difference_interval(a, b)
        verdicts.append(_deeper_verdict(low, high))
        by_loss.append(_deeper_verdict(*difference_interval(
            _final_at(ds, 19, deep["lr_loss"]), _final_at(ds, 7, mid["lr_loss"]))[1:]))
        parts.append(f"{OPTIMIZER_WORDS[opt]}: {with_interval(a, 2)} at 20 against "
                     f"{with_interval(b, 2)} at 8, difference {diff:+.2f} [{low:+.2f}, "
                     f"{high:+.2f}]")
    verdict = _overall(verdicts)
    ds = next(iter(files.values()))
    return Claim(id_, claim, command(protocol, "hesu_fig1"), "20 layers fuzzier (a figure)",
                 "final log D (their rule's lr per seed): " + "; ".join(parts), verdict,
                 "" if verdict == "holds" else
                 "20 layers minus 8 by optimizer: " + ", ".join(
                     f"{OPTIMIZER_WORDS[o]} {v}" for o, v in zip(files, verdicts, strict=True))
                 + f" ({_epochs(ds)} of their 600 epochs; the deep networks separate more, "
                   "not less)" * (verdict == "differs"),
                 tuple(f"{folder(protocol)}/hesu_fig1_{o}.nc" for o in files),
                 variants={"lowest-loss lr": _overall(by_loss)})


def _last_layer(ds: xr.Dataset) -> np.ndarray:
    """Each depth's fuzziness at its own last layer, (depth, S)."""
    curves = ds["load_curve"].sel(measure="fuzziness").isel(alpha=0, lr=0)
    return np.stack([curves.sel(depth=d, layer=d).values for d in ds["depth"].values])


def _fig3_rows(root: Path, protocol: str) -> list[Claim]:
    rows, optimal = [], {}
    for key, words in (("mnist", "MNIST"), ("fashion", "Fashion-MNIST")):
        id_ = f"He–Su Fig. 3 ({words})"
        claim = f"the optimal depth (lowest final fuzziness) on {words} is {PAPER_OPTIMAL[key]}"
        ds = open_sweep(root, f"hesu_fig3_{key}", protocol)
        if ds is None or PAPER_OPTIMAL[key] - 1 not in ds["depth"].values:
            rows.append(missing_row(id_, claim, "hesu_fig3", f"{PAPER_OPTIMAL[key]} layers",
                                    protocol))
            continue
        depths = ds["depth"].values
        final = _last_layer(ds)  # (D, S), log fuzziness
        mean = np.nanmean(final, axis=1)
        best = int(np.nanargmin(mean))
        optimal[key] = depths[best] + 1
        draws = np.random.default_rng(0).integers(0, final.shape[1], (400, final.shape[1]))
        boot = np.array([depths[int(np.nanargmin(np.nanmean(final[:, d], axis=1)))] + 1
                         for d in draws])
        share = float(np.mean(boot == PAPER_OPTIMAL[key]))
        grid = list(depths + 1)
        paper_at = grid.index(PAPER_OPTIMAL[key])
        verdict = ("holds" if best == paper_at else
                   "partly" if abs(best - paper_at) == 1 else "differs")
        r = ds["pearson_r"].isel(alpha=0, lr=0).transpose("depth", "seed").values
        lawful = int(sum(law_verdict(mean_interval(row)[0]) == "holds" for row in r))
        rows.append(Claim(
            id_, claim, command(protocol, "hesu_fig3"), f"{PAPER_OPTIMAL[key]} layers",
            f"{optimal[key]} layers (of L = {', '.join(map(str, grid))}; the paper's "
            f"{PAPER_OPTIMAL[key]} in {share:.0%} of seed resamples); the law (r <= {LAW_R}) "
            f"at {lawful} of {len(grid)} depths", verdict,
            "" if verdict == "holds" else
            f"lowest final fuzziness at {optimal[key]} layers, "
            + ("the paper's depth's neighbour on the grid" if verdict == "partly" else
               "not the paper's depth nor its neighbour on the grid"),
            (f"{folder(protocol)}/hesu_fig3_{key}.nc",)))
    if len(optimal) == 2:
        m, f = optimal["mnist"], optimal["fashion"]
        verdict = "holds" if m < f else "partly" if m == f else "differs"
        rows.append(Claim(
            "He–Su Fig. 3 (data complexity)",
            "the optimal depth grows with the data's complexity: MNIST's below Fashion-MNIST's",
            command(protocol, "hesu_fig3"), "6 < 10", f"{m} vs {f}", verdict,
            "" if verdict == "holds" else "MNIST's optimal depth is not below Fashion-MNIST's",
            (f"{folder(protocol)}/hesu_fig3_mnist.nc", f"{folder(protocol)}/hesu_fig3_fashion.nc")))
    return rows


def _final(ds: xr.Dataset) -> np.ndarray:
    """Per seed, the fuzziness at the network's last hidden layer (S,)."""
    curves = ds["load_curve"].sel(measure="fuzziness").isel(alpha=0, lr=0)
    return curves.isel(layer=-1).values


def difference_interval(a: np.ndarray, b: np.ndarray, n_boot: int = 400,
                        seed: int = 0) -> tuple[float, float, float]:
    """mean(a) − mean(b) of two networks' per-seed values and its 95 % interval, each
    network's seeds resampled on their own (different networks: no pairing)."""
    a, b = (np.asarray(v, dtype=float) for v in (a, b))
    a, b = a[np.isfinite(a)], b[np.isfinite(b)]
    if a.size == 0 or b.size == 0:
        return np.nan, np.nan, np.nan
    rng = np.random.default_rng(seed)
    boot = (rng.choice(a, (n_boot, a.size)).mean(1) - rng.choice(b, (n_boot, b.size)).mean(1))
    low, high = np.quantile(boot, [0.025, 0.975])
    return float(a.mean() - b.mean()), float(low), float(high)


def _fig4_rows(root: Path, protocol: str) -> list[Claim]:
    names = ("width20", "width100", "width1000", "narrow_wide", "wide_narrow")
    files = {n: open_sweep(root, f"hesu_fig4_{n}", protocol) for n in names}
    paths = tuple(f"{folder(protocol)}/hesu_fig4_{n}.nc" for n in names)
    claims_text = (
        ("He–Su Fig. 4 (width 20)", "a network of width 20 does not separate the data well "
         "(a higher final fuzziness than at width 100)"),
        ("He–Su Fig. 4 (width 100 vs 1 000)", "widths 100 and 1 000 end at about the same "
         "fuzziness: the law saturates with width"),
        ("He–Su Fig. 4 (shape)", "wide bottom layers then narrow ones separate better than "
         "narrow then wide"))
    if any(ds is None for ds in files.values()) or files["width1000"].sizes["layer"] != 8:
        return [missing_row(i, c, "hesu_fig4", "— (a figure)", protocol)
                for i, c in claims_text]
    final = {n: _final(ds) for n, ds in files.items()}
    r = {n: ds["pearson_r"].values.ravel() for n, ds in files.items()}
    rows = []
    d20, low, high = difference_interval(final["width20"], final["width100"])
    verdict = "holds" if low > 0 else "partly" if d20 > 0 else "differs"
    rows.append(Claim(*claims_text[0], command(protocol, "hesu_fig4"), "— (a figure)",
                      f"final log D {with_interval(final['width20'], 2)} at width 20 against "
                      f"{with_interval(final['width100'], 2)} at 100: difference {d20:+.2f} "
                      f"[{low:+.2f}, {high:+.2f}]; r {with_interval(r['width20'], R_DIGITS)} "
                      f"and {with_interval(r['width100'], R_DIGITS)}", verdict,
                      "" if verdict == "holds" else "width 20 does not end less separated "
                      "beyond the seeds' spread", paths))
    d1000, low, high = difference_interval(final["width1000"], final["width100"])
    ratio = abs(d1000) / abs(d20) if d20 else np.inf
    verdict = ("holds" if ratio <= SAME_WIDTH else "partly" if ratio <= 2 * SAME_WIDTH
               else "differs")
    rows.append(Claim(*claims_text[1], command(protocol, "hesu_fig4"), "— (a figure)",
                      f"final log D at 1 000 minus at 100: {d1000:+.2f} [{low:+.2f}, "
                      f"{high:+.2f}], {ratio:.2f} of the gap from 20 to 100; r at 1 000 "
                      f"{with_interval(r['width1000'], R_DIGITS)}", verdict,
                      "" if verdict == "holds" else f"the 100-to-1 000 difference is {ratio:.2f}"
                      f" of the 20-to-100 one (about the same: at most {SAME_WIDTH})", paths))
    shape, low, high = difference_interval(final["wide_narrow"], final["narrow_wide"])
    verdict = "holds" if high < 0 else "partly" if shape < 0 else "differs"
    rows.append(Claim(*claims_text[2], command(protocol, "hesu_fig4"), "— (a figure)",
                      f"final log D Wide-Narrow {with_interval(final['wide_narrow'], 2)}, "
                      f"Narrow-Wide {with_interval(final['narrow_wide'], 2)}: difference "
                      f"{shape:+.2f} [{low:+.2f}, {high:+.2f}]", verdict,
                      "" if verdict == "holds" else "Wide-Narrow does not end better separated "
                      "beyond the seeds' spread", paths))
    return rows


def _fig7_rows(root: Path, protocol: str) -> list[Claim]:
    sizes = (1000, 2000, 5000)
    files = {n: open_sweep(root, f"hesu_fig7_n{n}", protocol) for n in sizes}
    paths = tuple(f"{folder(protocol)}/hesu_fig7_n{n}.nc" for n in sizes)
    claim_law = "the law emerges at 1 000, 2 000 and 5 000 training samples (8 layers)"
    claim_half = "the half-life is larger for larger data sets"
    if any(ds is None for ds in files.values()):
        return [missing_row("He–Su Fig. 7", claim_law, "hesu_fig7", "—", protocol),
                missing_row("He–Su Fig. 7 (half-life)", claim_half, "hesu_fig7", "—",
                            protocol)]
    r = {n: ds["pearson_r"].values.ravel() for n, ds in files.items()}
    half = {n: ds["half_life"].values.ravel() for n, ds in files.items()}
    verdicts = [law_verdict_of(r[n])[0] for n in sizes]
    verdict = ("undecided" if "undecided" in verdicts else
               "holds" if all(v == "holds" for v in verdicts) else
               "differs" if all(v == "differs" for v in verdicts) else "partly")
    rows = [Claim("He–Su Fig. 7", claim_law, command(protocol, "hesu_fig7"), "— (a figure)",
                  "; ".join(f"n {n}: r {with_interval(r[n], R_DIGITS)}" for n in sizes), verdict,
                  "" if verdict == "holds" else
                  "the seeds' interval of r crosses a threshold at n = " + ", ".join(
                      str(n) for n, v in zip(sizes, verdicts, strict=True) if v == "undecided")
                  if verdict == "undecided" else
                  f"r above {LAW_R} at n = " + ", ".join(
                      str(n) for n, v in zip(sizes, verdicts, strict=True) if v != "holds"),
                  paths)]
    means = [mean_interval(half[n])[0] for n in sizes]
    rising = bool(np.all(np.diff(means) > 0))
    verdict = "holds" if rising else "partly" if means[-1] > means[0] else "differs"
    rows.append(Claim("He–Su Fig. 7 (half-life)", claim_half, command(protocol, "hesu_fig7"),
                      "— (a figure)",
                      "; ".join(f"n {n}: {with_interval(half[n], 2)} layers" for n in sizes),
                      verdict, "" if verdict == "holds" else
                      "the seed-mean half-life does not rise with n", paths))
    return rows


def _fig9_rows(root: Path, protocol: str) -> list[Claim]:
    ds = open_sweep(root, "hesu_fig9", protocol)
    claim_emerge = "the law does not hold at the beginning and emerges during training"
    claim_rho = "once it has emerged, the decay ratio decreases along training"
    if ds is None:
        return [missing_row("He–Su Fig. 9", claim_emerge, "hesu_fig9", "—", protocol),
                missing_row("He–Su Fig. 9 (ρ)", claim_rho, "hesu_fig9", "—", protocol)]
    curves = ds["load_curve_epochs"].isel(alpha=0, lr=0).transpose("seed", "epoch", "layer")
    stats = laws.equi_separation(curves.values)  # (S, E)
    epochs = ds["epoch"].values
    r, rho = np.nanmean(stats["pearson_r"], axis=0), np.nanmean(stats["decay_ratio"], axis=0)
    first, last = stats["pearson_r"][:, 0], stats["pearson_r"][:, -1]
    emerged = np.flatnonzero(r <= LAW_R)
    path = f"{folder(protocol)}/hesu_fig9.nc"
    start = mean_verdict(lambda x: "above" if x > PARTLY_R else "below", first)[0]
    end = law_verdict_of(last)[0]
    if "undecided" in (start, end):
        verdict, why = "undecided", "; ".join(
            f"r {when}: {_straddles(values)}" for when, values, v in
            (("at epoch 0", first, start), ("at the end", last, end)) if v == "undecided")
    elif r[0] > PARTLY_R and r[-1] <= LAW_R:
        verdict, why = "holds", ""
    elif r[-1] <= LAW_R:
        verdict, why = "partly", f"r at epoch 0 is {r[0]:.3f} already (<= {PARTLY_R})"
    else:
        verdict, why = "differs", f"the final r {r[-1]:.3f} is above {LAW_R}"
    # the first snapshot only: a law that emerges may weaken again with longer training
    at = f"first at epoch {epochs[emerged[0]]}" if emerged.size else "never"
    rows = [Claim("He–Su Fig. 9", claim_emerge, command(protocol, "hesu_fig9"), "— (a figure)",
                  f"r at epoch 0: {with_interval(first, R_DIGITS)}; at epoch {epochs[-1]}: "
                  f"{with_interval(last, R_DIGITS)}; seed-mean r <= {LAW_R} {at}", verdict, why,
                  (path,))]
    if not emerged.size:
        rows.append(Claim("He–Su Fig. 9 (ρ)", claim_rho, command(protocol, "hesu_fig9"),
                          "— (a figure)", f"the law never emerges (r <= {LAW_R})", "differs",
                          "no snapshot where the law holds", (path,)))
        return rows
    after = slice(emerged[0], None)
    spearman = _spearman(epochs[after], rho[after]) if rho[after].size > 2 else np.nan
    if np.isfinite(spearman) and spearman <= SPEARMAN_FALLS:
        verdict, why = "holds", ""
    elif rho[-1] < rho[emerged[0]]:
        verdict, why = "partly", f"ρ falls overall but not steadily (Spearman {spearman:+.2f})"
    else:
        verdict, why = "differs", f"ρ does not fall after the law emerges ({rho[emerged[0]]:.3f}" \
                                  f" → {rho[-1]:.3f})"
    rows.append(Claim("He–Su Fig. 9 (ρ)", claim_rho, command(protocol, "hesu_fig9"),
                      "— (a figure)",
                      f"seed-mean ρ {rho[emerged[0]]:.3f} at epoch {epochs[emerged[0]]} → "
                      f"{rho[-1]:.3f} at epoch {epochs[-1]}; Spearman with the epoch "
                      f"{spearman:+.2f}", verdict, why, (path,)))
    return rows


def _spearman(a: np.ndarray, b: np.ndarray) -> float:
    from scipy.stats import spearmanr

    return float(spearmanr(a, b).statistic)


def _fig12_rows(root: Path, protocol: str) -> list[Claim]:
    ds = open_sweep(root, "hesu_fig12", protocol)
    claim = "a fuzzy version of the law holds on the test data"
    if ds is None:
        return [missing_row("He–Su Fig. 12", claim, "hesu_fig12", "—", protocol)]
    test, train = ds["pearson_r_test"].values.ravel(), ds["pearson_r"].values.ravel()
    verdict, mean = mean_verdict(lambda x: "holds" if np.isfinite(x) and x <= PARTLY_R else (
        "partly" if np.isfinite(x) and x <= -0.8 else "differs"), test)
    return [Claim("He–Su Fig. 12", claim, command(protocol, "hesu_fig12"), "— (a figure)",
                  f"test r {with_interval(test, R_DIGITS)}, "
                  f"ρ {with_interval(ds['decay_ratio_test'].values)}"
                  f"; training r {with_interval(train, R_DIGITS)}, ρ "
                  f"{with_interval(ds['decay_ratio'].values)}", verdict,
                  "" if verdict == "holds" else f"test r: {_straddles(test)}"
                  if verdict == "undecided" else f"test r {mean:.3f} above {PARTLY_R}",
                  (f"{folder(protocol)}/hesu_fig12.nc",))]


def claims(root: Path) -> list[Claim]:
    """He & Su's rows, computed from the committed sweeps under ``root``: each experiment's
    from the authors' protocol's files where they are all there, with our protocol's verdict
    as a variant (:func:`~.protocols.judged`)."""
    return [row for experiment, build in (
        ("hesu_fig1", _fig1_rows), ("hesu_fig3", _fig3_rows), ("hesu_fig4", _fig4_rows),
        ("hesu_fig7", _fig7_rows), ("hesu_fig9", _fig9_rows), ("hesu_fig12", _fig12_rows))
        for row in judged(root, experiment, build)]
