"""Galanti et al.'s minimal depth (Figs. 1 and 3 of *On the implicit bias of SGD towards
depth minimisation*), from the sweeps ``python scripts/separation_laws.py`` commits in
``figures/separation_laws`` (:mod:`dnnphase.sweeps.separation_laws`). Their CIFAR-10 is not
available offline: Fashion-MNIST stands in, and every row says so.

The rules, fixed before any of these files was computed (effective depth: the first hidden
layer whose training NCC accuracy reaches 0.99, :mod:`dnnphase.measures.laws`; a network
where none does counts as one layer deeper than it is when effective depths are ordered):

* Fig. 1, "effective depth 4" for 8 and 16 hidden layers: the seed medians are 4 (holds),
  within one of 4 (partly);
* Fig. 1, "which is exactly the minimal depth that allows > 99 % fitting": with d* the
  shallowest network of the grid whose seed-mean training accuracy reaches 0.99 and d⁻ the
  grid depth below it (the row also says the shallowest network whose own top layer's NCC
  fits, the reading of their figure's third row), holds when the 8- and 16-layer networks'
  median effective depths lie in (d⁻, d*]; partly when they lie below their own depth
  (their top layers collapse, elsewhere than at d*);
* Fig. 3, layer-4 CDNV ≈ 0.28 / ≈ 0.6 / > 1 / > 1 at 0 / 25 / 50 / 75 % random labels:
  holds when the seed means are within a factor :data:`CDNV_FACTOR` (1.5) of 0.28 and 0.6
  and above 1 at 50 % and 75 %; partly when they only rise with the noise;
* Fig. 1, the threshold: both Fig. 1 rows are also judged at NCC thresholds 0.98 and 0.995
  (:data:`THRESHOLDS`; "> 99 % fitting" is theirs), the effective depths recomputed from the
  stored per-layer training NCC accuracies and the minimal fitting depth from the training
  accuracies at the same threshold; the rows state the effective depths at all three and
  carry each other threshold's verdict as a variant ("threshold 0.98", "threshold 0.995");
* Fig. 3, "NCC depth typically increases" with the noise, judged only where the networks fit
  their labels (training accuracy on their own labels at least :data:`FITS`, 0.99; their
  networks do): at each noise level with a fitting network, the mean effective depth of the
  fitting ones (none: one layer deeper than the network); holds when it never falls and
  ends above its value without noise, partly when it ends above it, differs otherwise;
  cannot where no network trained with random labels fits its labels. The former reading,
  every network whether it fits or not, is the variant "all networks";
* Fig. 3, layer 4's training NCC accuracy falls with the noise while the network fits: it
  falls at every step and every network reaches 0.99 training accuracy on its labels
  (holds), or it falls though some network does not fit (partly).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import xarray as xr

from dnnphase.compare.claims.he_su import COMMAND, FOLDER, missing_row, open_sweep
from dnnphase.compare.claims.ledger import Claim
from dnnphase.compare.claims.rules import mean_interval, with_interval

__all__ = ["ORDER", "SOURCE", "TITLE", "claims", "minimal_fitting_depth"]

TITLE = "Galanti et al.: the implicit bias towards minimal depth"
ORDER = 75
SOURCE = "galanti"

FITS = 0.99
CDNV_FACTOR = 1.5
PAPER_CDNV = {0.0: 0.28, 0.25: 0.6}  # layer 4; "above 1 for the others"
DATA = "Fashion-MNIST in place of their CIFAR-10"


def _ordered(depth: np.ndarray, network_depth: int) -> np.ndarray:
    """Effective depths with "none" (NaN) as one layer deeper than the network."""
    return np.where(np.isfinite(depth), depth, network_depth + 1)


def minimal_fitting_depth(ds: xr.Dataset) -> tuple[int | None, int]:
    """(d*, d⁻): the shallowest depth of the file's grid whose seed-mean training accuracy
    reaches :data:`FITS` (None when none does) and the grid depth below it (0 if none)."""
    depths = ds["depth"].values
    accuracy = ds["train_accuracy"].isel(alpha=0, lr=0).transpose("depth", "seed").values
    fits = [d for d, row in zip(depths, accuracy, strict=True) if np.nanmean(row) >= FITS]
    if not fits:
        return None, 0
    below = [d for d in depths if d < fits[0]]
    return int(fits[0]), int(max(below, default=0))


def _fig1_rows(root: Path) -> list[Claim]:
    ds = open_sweep(root, "galanti_fig1")
    literal = "for 8 and 16 hidden layers the 5th and higher layers collapse: effective depth 4"
    minimal = ("the effective depth of the deep networks is the minimal depth that fits > 99 % "
               "of the training data")
    if ds is None or not {8, 16} <= set(ds["depth"].values.tolist()):
        return [missing_row("Galanti Fig. 1", literal, "galanti_fig1", "4"),
                missing_row("Galanti Fig. 1 (minimal depth)", minimal, "galanti_fig1", "4 = 4")]
    path = (f"{FOLDER}/galanti_fig1.nc",)
    eff = ds["effective_depth"].isel(alpha=0, lr=0)
    per = {d: eff.sel(depth=d).values for d in (8, 16)}
    median = {d: float(np.median(_ordered(v, d))) for d, v in per.items()}
    text = "; ".join(f"{d} layers: effective depth by seed {_depths(v)} (median "
                     f"{_median_text(median[d], d)})" for d, v in per.items())
    verdict = ("holds" if all(m == 4 for m in median.values()) else
               "partly" if all(abs(m - 4) <= 1 for m in median.values()) else "differs")
    rows = [Claim("Galanti Fig. 1", literal, COMMAND.format("galanti_fig1"),
                  "4 (CIFAR-10, MLP-d-100)", text + f"; {DATA}", verdict,
                  "" if verdict == "holds" else
                  f"median effective depths {median[8]:g} and {median[16]:g} on {DATA} (the "
                  "minimal depth depends on the data)", path)]
    d_star, d_below = minimal_fitting_depth(ds)
    accuracy = ds["train_accuracy"].isel(alpha=0, lr=0).transpose("depth", "seed").values
    fit_text = ", ".join(f"{d}: {np.nanmean(a):.3f}"
                         for d, a in zip(ds["depth"].values, accuracy, strict=True))
    if d_star is not None and all(d_below < m <= d_star for m in median.values()):
        verdict, why = "holds", ""
    elif all(m <= d for d, m in median.items()):
        verdict = "partly"
        why = (f"the top layers collapse, but at {median[8]:g} / {median[16]:g} layers, not at "
               f"the minimal fitting depth ({d_star if d_star is not None else 'none fits'})")
    else:
        verdict, why = "differs", "no NCC layer of the deep networks fits 99 % of the data"
    own = [int(d) for d in ds["depth"].values
           if np.median(_ordered(eff.sel(depth=d).values, int(d))) <= d]
    rows.append(Claim("Galanti Fig. 1 (minimal depth)", minimal, COMMAND.format("galanti_fig1"),
                      "effective depth 4 = minimal fitting depth 4",
                      f"minimal fitting depth {d_star if d_star is not None else 'none'} (seed-"
                      f"mean training accuracy by depth {fit_text}; by the top layer's NCC, "
                      f"their figure's third row: {own[0] if own else 'none'}); effective "
                      f"depths {median[8]:g} and {median[16]:g}; {DATA}", verdict, why, path))
    return rows


def _depths(values: np.ndarray) -> str:
    return ", ".join("none" if not np.isfinite(v) else f"{v:g}" for v in values)


def _median_text(median: float, depth: int) -> str:
    return "none" if median > depth else f"{median:g}"


def _fig3_rows(root: Path) -> list[Claim]:
    ds = open_sweep(root, "galanti_fig3")
    claims_text = ("layer-4 CDNV ≈ 0.28 at 0 % random labels, ≈ 0.6 at 25 %, above 1 at 50 % and "
                   "75 %", "the NCC (effective) depth rises with the fraction of random labels",
                   "layer 4's training NCC accuracy falls with the noise while the network fits "
                   "its labels")
    ids = ("Galanti Fig. 3", "Galanti Fig. 3 (NCC depth)", "Galanti Fig. 3 (layer-4 NCC)")
    if ds is None or ds.sizes["layer"] < 5:
        return [missing_row(i, c, "galanti_fig3", "—") for i, c in zip(ids, claims_text,
                                                                   strict=True)]
    path = (f"{FOLDER}/galanti_fig3.nc",)
    noise = ds["random_labels"].values
    depth = ds.sizes["layer"] - 1
    cdnv = ds["load_curve"].sel(measure="cdnv", layer=4).isel(alpha=0).transpose(
        "random_labels", "seed").values
    means = np.array([mean_interval(row)[0] for row in cdnv])
    close = all(PAPER_CDNV[q] / CDNV_FACTOR <= m <= PAPER_CDNV[q] * CDNV_FACTOR
                for q, m in zip(noise, means, strict=True) if q in PAPER_CDNV)
    above = all(m > 1 for q, m in zip(noise, means, strict=True) if q not in PAPER_CDNV)
    rising = bool(np.all(np.diff(means) > 0))
    verdict = "holds" if close and above else "partly" if rising else "differs"
    rows = [Claim(ids[0], claims_text[0], COMMAND.format("galanti_fig3"),
                  "0.28, 0.6, > 1, > 1 (CIFAR-10, MLP-10-500)",
                  "; ".join(f"{q:.0%}: {with_interval(row, 2)}" for q, row in
                            zip(noise, cdnv, strict=True)) + f"; {DATA}, MLP-10-100",
                  verdict, "" if verdict == "holds" else
                  ("the CDNV rises with the noise, at other values"
                   if rising else "the layer-4 CDNV does not rise with the noise"), path)]
    eff = ds["effective_depth"].isel(alpha=0).transpose("random_labels", "seed").values
    fit = ds["train_accuracy"].isel(alpha=0).values
    eff_mean = np.array([float(np.mean(_ordered(row, depth))) for row in eff])
    never_falls = bool(np.all(np.diff(eff_mean) >= 0))
    verdict = ("holds" if never_falls and eff_mean[-1] > eff_mean[0] else
               "partly" if eff_mean[-1] > eff_mean[0] else "differs")
    rows.append(Claim(ids[1], claims_text[1], COMMAND.format("galanti_fig3"), "— (a figure)",
                      "; ".join(f"{q:.0%}: {_depths(row)}" for q, row in
                                zip(noise, eff, strict=True))
                      + f" (by seed; none: no layer reaches 0.99); networks' training "
                        f"accuracy {np.nanmin(fit):.3f}–{np.nanmax(fit):.3f}; {DATA}", verdict,
                      "" if verdict == "holds" else
                      "the seed-mean effective depth does not rise steadily with the noise",
                      path))
    ncc = ds["load_curve"].sel(measure="ncc", layer=4).isel(alpha=0).transpose(
        "random_labels", "seed").values
    ncc_mean = np.nanmean(ncc, axis=1)
    falls = bool(np.all(np.diff(ncc_mean) < 0))
    fits = bool(np.all(fit >= FITS))
    verdict = "holds" if falls and fits else "partly" if falls else "differs"
    rows.append(Claim(ids[2], claims_text[2], COMMAND.format("galanti_fig3"), "— (a figure)",
                      "layer-4 training NCC " + "; ".join(
                          f"{q:.0%}: {with_interval(row, 3)}" for q, row in
                          zip(noise, ncc, strict=True))
                      + f"; network training accuracy {np.nanmin(fit):.3f}–"
                        f"{np.nanmax(fit):.3f}; {DATA}", verdict,
                      "" if verdict == "holds" else
                      ("it falls, but not every network fits its labels (< 0.99)" if falls
                       else "layer 4's NCC accuracy does not fall at every step"), path))
    return rows


def claims(root: Path) -> list[Claim]:
    """Galanti et al.'s rows, computed from the committed sweeps under ``root``."""
    root = Path(root)
    return [*_fig1_rows(root), *_fig3_rows(root)]
