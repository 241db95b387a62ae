"""Galanti et al.'s minimal depth (Figs. 1 and 3 of *On the implicit bias of SGD towards
depth minimisation*), from the sweeps ``python scripts/separation_laws.py`` writes
(:mod:`dnnphase.sweeps.separation_laws`): their own protocol's files
(``figures/separation_laws_authors``) where they are committed, the reference, with ours
(``figures/separation_laws``) as the variant "our protocol" and the rerun of theirs under
another machine's CPU kernels as the variant "other CPU kernels" (:mod:`~.protocols`: which
files a row reads, and the settings that still differ from theirs, listed in every row).
Their CIFAR-10 is not available offline: Fashion-MNIST stands in, and every row says so.

The rules, fixed before any of the authors' protocol's files was computed (effective depth:
the first hidden layer whose training NCC accuracy reaches 0.99,
:mod:`dnnphase.measures.laws`; a network where none does counts as one layer deeper than it
is when effective depths are ordered):

* the collapse claims (Fig. 1's two rows, Fig. 3's NCC depth and layer-4 NCC) are about
  networks in the terminal phase: a network *fits its labels* when its training accuracy
  (on its own labels) is at least :data:`TERMINAL` (0.999); each row first says how many
  networks fit, and a depth (Fig. 1: 8 and 16 layers) or noise level (Fig. 3) is judged
  only when at least :data:`TERMINAL_SHARE` (half) of its networks fit, on those networks;
  Fig. 1's rows are "cannot" where the 8- or the 16-layer networks are not judged, and
  carry the former reading (every network, at 0.99) as the variant "all networks";

* Fig. 1, "effective depth 4" for 8 and 16 hidden layers: the medians over the seeds that
  fit are 4 (holds), within one of 4 (partly);
* Fig. 1, "which is exactly the minimal depth that allows > 99 % fitting": with d* the
  shallowest network of the grid whose seed-mean training accuracy reaches 0.99 and d⁻ the
  grid depth below it (the row also says the shallowest network whose own top layer's NCC
  fits, the reading of their figure's third row), holds when the 8- and 16-layer networks'
  median effective depths lie in (d⁻, d*]; partly when they lie below their own depth
  (their top layers collapse, elsewhere than at d*);
* Fig. 3, layer-4 CDNV ≈ 0.28 / ≈ 0.6 / > 1 / > 1 at 0 / 25 / 50 / 75 % random labels:
  holds when the seed means are within a factor :data:`CDNV_FACTOR` (1.5) of 0.28 and 0.6
  and above 1 at 50 % and 75 %; partly when they only rise with the noise; undecided where
  the same rule, each level's mean replaced by an end of its 95 % seed interval, reaches
  another verdict at some combination of ends (written after the rule had judged its file);
* Fig. 1, the threshold: both Fig. 1 rows are also judged at NCC thresholds 0.98 and 0.995
  (:data:`THRESHOLDS`; "> 99 % fitting" is theirs), the effective depths recomputed from the
  stored per-layer training NCC accuracies and the minimal fitting depth from the training
  accuracies at the same threshold; the rows state the effective depths at all three and
  carry each other threshold's verdict as a variant ("threshold 0.98", "threshold 0.995");
* Fig. 3, "NCC depth typically increases" with the noise, judged only where the networks fit
  their labels (their networks do): at each noise level where at least half the networks
  fit, the mean effective depth of the fitting ones (none: one layer deeper than the
  network); holds when it never falls and ends above its value without noise, partly when
  it ends above it, differs otherwise; cannot where no level with random labels, or not the
  level without, is judged. The former reading, every network whether it fits or not, is
  the variant "all networks";
* Fig. 3, layer 4's training NCC accuracy falls with the noise while the network fits,
  judged as the collapse claims above (rewritten after the first reading had judged its file,
  which counted networks that do not fit): at each noise level where at least half the
  networks fit, the mean layer-4 NCC accuracy of the fitting ones; holds when it falls at
  every step, differs otherwise; cannot where no level with random labels, or not the level
  without, is judged. The former reading (it falls at every step and every network fits:
  holds; it falls though some network does not fit: partly) is the variant "all networks".
"""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import numpy as np
import xarray as xr

from dnnphase.measures import laws
from phaseclaims.he_su import missing_row
from phaseclaims.ledger import Claim
from phaseclaims.protocols import command, folder, judged, open_sweep
from phaseclaims.rules import mean_interval, with_interval

__all__ = ["ORDER", "SOURCE", "THRESHOLDS", "TITLE", "claims", "minimal_fitting_depth"]

TITLE = "Galanti et al.: the implicit bias towards minimal depth"
ORDER = 75
SOURCE = "galanti"

FITS = 0.99
#: The terminal phase the collapse claims are about: a network fits its training labels at
#: this training accuracy, and a depth (or noise level) is judged when at least
#: TERMINAL_SHARE of its networks do.
TERMINAL = 0.999
TERMINAL_SHARE = 0.5
#: The NCC thresholds Fig. 1 is judged at: theirs first, then the variants.
THRESHOLDS = (0.99, 0.98, 0.995)
CDNV_FACTOR = 1.5
PAPER_CDNV = {0.0: 0.28, 0.25: 0.6}  # layer 4; "above 1 for the others"
DATA = "Fashion-MNIST in place of their CIFAR-10"


def _ordered(depth: np.ndarray, network_depth: int) -> np.ndarray:
    """Effective depths with "none" (NaN) as one layer deeper than the network."""
    return np.where(np.isfinite(depth), depth, network_depth + 1)


def minimal_fitting_depth(ds: xr.Dataset, fits_at: float = FITS) -> tuple[int | None, int]:
    """(d*, d⁻): the shallowest depth of the file's grid whose seed-mean training accuracy
    reaches ``fits_at`` (None when none does) and the grid depth below it (0 if none)."""
    depths = ds["depth"].values
    accuracy = ds["train_accuracy"].isel(alpha=0, lr=0).transpose("depth", "seed").values
    fits = [d for d, row in zip(depths, accuracy, strict=True) if np.nanmean(row) >= fits_at]
    if not fits:
        return None, 0
    below = [d for d in depths if d < fits[0]]
    return int(fits[0]), int(max(below, default=0))


def _effective(ds: xr.Dataset, threshold: float) -> dict[int, np.ndarray]:
    """Depth -> each seed's effective depth at an NCC ``threshold``, from the stored
    per-layer training NCC accuracies (at 0.99 the stored ``effective_depth``)."""
    ncc = ds["load_curve"].sel(measure="ncc").isel(alpha=0, lr=0)
    return {int(d): laws.effective_depth(ncc.sel(depth=d).transpose("seed", "layer").values,
                                         threshold) for d in ds["depth"].values}


def _fitting(ds: xr.Dataset) -> dict[int, np.ndarray]:
    """Depth -> per seed, whether the network fits its training labels (training accuracy
    at least :data:`TERMINAL`: the terminal phase the collapse claims are about)."""
    accuracy = ds["train_accuracy"].isel(alpha=0, lr=0).transpose("depth", "seed").values
    return {int(d): row >= TERMINAL for d, row in zip(ds["depth"].values, accuracy, strict=True)}


def _in_terminal_phase(fits: np.ndarray) -> bool:
    """At least :data:`TERMINAL_SHARE` of a depth's (or noise level's) networks fit."""
    return bool(fits.size) and fits.sum() >= TERMINAL_SHARE * fits.size


def _fig1_judged(ds: xr.Dataset, threshold: float, gated: bool = True) -> dict:
    """Both Fig. 1 rows' verdicts, whys and numbers at one NCC threshold (the module's
    rules, "> 99 % fitting" read as ``threshold``); ``gated``: judged on the 8- and 16-layer
    networks that fit their labels, "cannot" where fewer than half of either depth's do."""
    eff = _effective(ds, threshold)
    fitting = _fitting(ds)
    d_star, d_below = minimal_fitting_depth(ds, threshold)
    own = [d for d in sorted(eff) if np.median(_ordered(eff[d], d)) <= d]
    out = {"eff": eff, "d_star": d_star, "own": own, "median": None}
    if gated and not all(_in_terminal_phase(fitting[d]) for d in (8, 16)):
        why = ("the deep networks are not in the terminal phase their claim is about: "
               + _terminal(ds) + "; a depth is judged where at least half its networks fit: "
               + ", ".join(f"{d} layers {int(fitting[d].sum())} of {fitting[d].size}"
                           for d in (8, 16)))
        return {**out, "literal": "cannot", "minimal": "cannot", "why": why}
    keep = {d: fitting[d] if gated else np.ones(fitting[d].shape, bool) for d in (8, 16)}
    median = {d: float(np.median(_ordered(eff[d][keep[d]], d))) for d in (8, 16)}
    literal = ("holds" if all(m == 4 for m in median.values()) else
               "partly" if all(abs(m - 4) <= 1 for m in median.values()) else "differs")
    if d_star is not None and all(d_below < m <= d_star for m in median.values()):
        minimal, why = "holds", ""
    elif all(m <= d for d, m in median.items()):
        minimal = "partly"
        why = (f"the top layers collapse, but at {median[8]:g} / {median[16]:g} layers, not at "
               f"the minimal fitting depth ({d_star if d_star is not None else 'none fits'})")
    else:
        minimal, why = "differs", "no NCC layer of the deep networks fits 99 % of the data"
    return {**out, "median": median, "literal": literal, "minimal": minimal, "why": why}


def _medians(judged: dict) -> str:
    """The 8- and 16-layer median effective depths of a judgement, or why there are none."""
    if judged["median"] is None:
        return "not judged (fewer than half fit)"
    return " and ".join(_median_text(judged["median"][d], d) for d in (8, 16))


def _fig1_rows(root: Path, protocol: str) -> list[Claim]:
    ds = open_sweep(root, "galanti_fig1", protocol)
    literal = "for 8 and 16 hidden layers the 5th and higher layers collapse: effective depth 4"
    minimal = ("the effective depth of the deep networks is the minimal depth that fits > 99 % "
               "of the training data")
    if ds is None or not {8, 16} <= set(ds["depth"].values.tolist()):
        return [missing_row("Galanti Fig. 1", literal, "galanti_fig1", "4", protocol),
                missing_row("Galanti Fig. 1 (minimal depth)", minimal, "galanti_fig1", "4 = 4",
                            protocol)]
    path = (f"{folder(protocol)}/galanti_fig1.nc",)
    judged = {t: _fig1_judged(ds, t) for t in THRESHOLDS}
    every = _fig1_judged(ds, FITS, gated=False)
    main = judged[FITS]
    terminal = _terminal(ds)
    text = "; ".join(f"{d} layers: effective depth by seed {_depths(main['eff'][d])}"
                     for d in (8, 16))
    across = "; ".join(f"at {t}: " + ", ".join(f"{d} layers {_depths(j['eff'][d])}"
                                               for d in (8, 16))
                       for t, j in judged.items() if t != FITS)
    variants = {key: {**{f"threshold {t}": j[key] for t, j in judged.items() if t != FITS},
                      "all networks": every[key]} for key in ("literal", "minimal")}
    verdict = main["literal"]
    why = main["why"] if verdict == "cannot" else (
        "" if verdict == "holds" else
        f"median effective depths {_medians(main)} of the networks that fit, on {DATA} (the "
        "minimal depth depends on the data)")
    rows = [Claim("Galanti Fig. 1", literal, command(protocol, "galanti_fig1"),
                  "4 (CIFAR-10, MLP-d-100)",
                  f"{terminal}; {text} (NCC threshold 0.99; median over the networks that "
                  f"fit: {_medians(main)}; {across}; every network: {_medians(every)}); {DATA}",
                  verdict, why, path, variants=variants["literal"])]
    accuracy = ds["train_accuracy"].isel(alpha=0, lr=0).transpose("depth", "seed").values
    fit_text = ", ".join(f"{d}: {np.nanmean(a):.3f}"
                         for d, a in zip(ds["depth"].values, accuracy, strict=True))
    d_star, own = main["d_star"], main["own"]
    rows.append(Claim("Galanti Fig. 1 (minimal depth)", minimal,
                      command(protocol, "galanti_fig1"),
                      "effective depth 4 = minimal fitting depth 4",
                      f"{terminal}; minimal fitting depth "
                      f"{d_star if d_star is not None else 'none'} (seed-mean training accuracy "
                      f"by depth {fit_text}; by the top layer's NCC, their figure's third row: "
                      f"{own[0] if own else 'none'}); effective depths {_medians(main)}; at NCC "
                      "thresholds " + ", ".join(f"{t}: {_medians(j)}" for t, j in judged.items()
                                                if t != FITS)
                      + f"; every network: {_medians(every)}; {DATA}",
                      main["minimal"], main["why"], path, variants=variants["minimal"]))
    return rows


def _terminal(ds: xr.Dataset) -> str:
    """How many networks of a file reach the terminal phase (fit their training labels)."""
    acc, loss = ds["train_accuracy"].values, ds["train_loss"].values
    return (f"{int((acc >= TERMINAL).sum())} of {acc.size} networks fit their training labels "
            f"(training accuracy >= {TERMINAL}; by network {np.nanmin(acc):.3f}–"
            f"{np.nanmax(acc):.3f}, loss {np.nanmin(loss):.3f}–{np.nanmax(loss):.3f})")


def _depths(values: np.ndarray) -> str:
    return ", ".join("none" if not np.isfinite(v) else f"{v:g}" for v in values)


def _median_text(median: float, depth: int) -> str:
    return "none" if median > depth else f"{median:g}"


def _fig3_rows(root: Path, protocol: str) -> list[Claim]:
    ds = open_sweep(root, "galanti_fig3", protocol)
    claims_text = ("layer-4 CDNV ≈ 0.28 at 0 % random labels, ≈ 0.6 at 25 %, above 1 at 50 % and "
                   "75 %", "the NCC (effective) depth rises with the fraction of random labels",
                   "layer 4's training NCC accuracy falls with the noise while the network fits "
                   "its labels")
    ids = ("Galanti Fig. 3", "Galanti Fig. 3 (NCC depth)", "Galanti Fig. 3 (layer-4 NCC)")
    if ds is None or ds.sizes["layer"] < 5:
        return [missing_row(i, c, "galanti_fig3", "—", protocol)
                for i, c in zip(ids, claims_text, strict=True)]
    path = (f"{folder(protocol)}/galanti_fig3.nc",)
    width = json.loads(ds.attrs["config"])["width"]
    noise = ds["random_labels"].values
    depth = ds.sizes["layer"] - 1
    cdnv = ds["load_curve"].sel(measure="cdnv", layer=4).isel(alpha=0).transpose(
        "random_labels", "seed").values
    intervals = [mean_interval(row) for row in cdnv]  # (mean, low, high) per noise level
    means = np.array([m for m, _, _ in intervals])
    rising = bool(np.all(np.diff(means) > 0))
    verdict = _cdnv_verdict(noise, means)
    reached = {_cdnv_verdict(noise, np.array(ends)) for ends in itertools.product(
        *[[m] + [e for e in (lo, hi) if np.isfinite(e)] for m, lo, hi in intervals])}
    if len(reached) > 1:  # the levels' seed intervals reach another verdict
        verdict = "undecided"
    rows = [Claim(ids[0], claims_text[0], command(protocol, "galanti_fig3"),
                  "0.28, 0.6, > 1, > 1 (CIFAR-10, MLP-10-500)",
                  "; ".join(f"{q:.0%}: {with_interval(row, 2)}" for q, row in
                            zip(noise, cdnv, strict=True)) + f"; {DATA}, MLP-10-{width}",
                  verdict, "" if verdict == "holds" else
                  "the levels' seed intervals reach " + " and ".join(sorted(reached))
                  if verdict == "undecided" else
                  ("the CDNV rises with the noise, at other values"
                   if rising else "the layer-4 CDNV does not rise with the noise"), path)]
    eff = ds["effective_depth"].isel(alpha=0).transpose("random_labels", "seed").values
    fit = ds["train_accuracy"].isel(alpha=0).transpose("random_labels", "seed").values
    every = _rises([_ordered(row, depth) for row in eff])
    fitting = [_ordered(row[ok], depth) if _in_terminal_phase(ok) else None
               for row, ok in zip(eff, fit >= TERMINAL, strict=True)]
    judged = [(q, d) for q, d in zip(noise, fitting, strict=True) if d is not None]
    noisy_fit = any(q > 0 for q, _ in judged)
    if noisy_fit and judged[0][0] == 0:
        verdict = _rises([d for _, d in judged])
        why = "" if verdict == "holds" else ("the fitting networks' mean effective depth does "
                                            "not rise steadily with the noise")
    else:
        verdict = "cannot"
        why = (f"at no level of random labels do {TERMINAL_SHARE:.0%} of the networks fit "
               f"their labels (training accuracy {np.nanmin(fit[noise > 0]):.3f}–"
               f"{np.nanmax(fit[noise > 0]):.3f}, fitting: >= {TERMINAL}): their claim is "
               "about networks that do" if not noisy_fit else
               f"fewer than {TERMINAL_SHARE:.0%} of the networks without random labels fit "
               f"their labels (>= {TERMINAL}): no baseline")
    rows.append(Claim(ids[1], claims_text[1], command(protocol, "galanti_fig3"), "— (a figure)",
                      "; ".join(f"{q:.0%}: {_depths(row)}" for q, row in
                                zip(noise, eff, strict=True))
                      + " (by seed; none: no layer reaches 0.99); networks' training "
                        "accuracy by noise " + ", ".join(
                            f"{q:.0%}: {np.nanmin(a):.3f}–{np.nanmax(a):.3f}"
                            for q, a in zip(noise, fit, strict=True))
                      + f"; {int((fit >= TERMINAL).sum())} of {fit.size} networks fit their "
                        f"labels (>= {TERMINAL}): by noise " + ", ".join(
                            f"{q:.0%}: {int((a >= TERMINAL).sum())} of {a.size}"
                            for q, a in zip(noise, fit, strict=True))
                      + f"; {DATA}", verdict, why, path,
                      variants={"all networks": every}))
    rows.append(_layer4_ncc_row(ds, noise, fit, ids[2], claims_text[2], protocol, path))
    return rows


def _cdnv_verdict(noise: np.ndarray, cdnv: np.ndarray) -> str:
    """Fig. 3's CDNV rule on one value per noise level (a seed mean, or an end of its
    interval): close to the paper's at 0 and 25 % and above 1 beyond (holds), rising with the
    noise (partly), else differs."""
    close = all(PAPER_CDNV[q] / CDNV_FACTOR <= m <= PAPER_CDNV[q] * CDNV_FACTOR
                for q, m in zip(noise, cdnv, strict=True) if q in PAPER_CDNV)
    above = all(m > 1 for q, m in zip(noise, cdnv, strict=True) if q not in PAPER_CDNV)
    return ("holds" if close and above else
            "partly" if bool(np.all(np.diff(cdnv) > 0)) else "differs")


def _layer4_ncc_row(ds: xr.Dataset, noise: np.ndarray, fit: np.ndarray, id_: str, claim: str,
                    protocol: str, path: tuple) -> Claim:
    """Fig. 3's layer-4 NCC row: on the networks that fit, at the levels where half do
    (``fit``: (noise, seed) training accuracy on their own labels)."""
    ncc = ds["load_curve"].sel(measure="ncc", layer=4).isel(alpha=0).transpose(
        "random_labels", "seed").values
    ncc_mean = np.nanmean(ncc, axis=1)
    falls = bool(np.all(np.diff(ncc_mean) < 0))
    fits = bool(np.all(fit >= TERMINAL))
    every = "holds" if falls and fits else "partly" if falls else "differs"
    levels = [(q, float(np.nanmean(row[ok]))) for q, row, ok in
              zip(noise, ncc, fit >= TERMINAL, strict=True) if _in_terminal_phase(ok)]
    if any(q > 0 for q, _ in levels) and levels[0][0] == 0:
        verdict = "holds" if np.all(np.diff([m for _, m in levels]) < 0) else "differs"
        why = "" if verdict == "holds" else (
            "the fitting networks' layer-4 NCC accuracy does not fall at every judged level")
    else:
        verdict, why = "cannot", (
            f"at no level of random labels do {TERMINAL_SHARE:.0%} of the networks fit their "
            f"labels (>= {TERMINAL}): the claim is about networks that do"
            if not any(q > 0 for q, _ in levels) else
            f"fewer than {TERMINAL_SHARE:.0%} of the networks without random labels fit "
            f"their labels (>= {TERMINAL}): no baseline")
    ours = ("layer-4 training NCC " + "; ".join(
        f"{q:.0%}: {with_interval(row, 3)}" for q, row in zip(noise, ncc, strict=True))
        + f"; network training accuracy {np.nanmin(fit):.3f}–{np.nanmax(fit):.3f}; judged "
        "levels (half the networks fit, their mean): "
        + (", ".join(f"{q:.0%}: {m:.3f}" for q, m in levels) or "none") + f"; {DATA}")
    return Claim(id_, claim, command(protocol, "galanti_fig3"), "— (a figure)", ours, verdict,
                 why, path, variants={"all networks": every})


def _rises(depths: list[np.ndarray]) -> str:
    """Mean effective depths, one array per noise level in order: never falling and ending
    above the first (holds), ending above it (partly), else differs."""
    means = np.array([float(np.mean(d)) for d in depths])
    if means[-1] > means[0]:
        return "holds" if bool(np.all(np.diff(means) >= 0)) else "partly"
    return "differs"


def claims(root: Path) -> list[Claim]:
    """Galanti et al.'s rows, computed from the committed sweeps under ``root``: each
    experiment's from the authors' protocol's files where they are all there, with our
    protocol's verdict as a variant (:func:`~.protocols.judged`)."""
    return [*judged(root, "galanti_fig1", _fig1_rows), *judged(root, "galanti_fig3", _fig3_rows)]
