"""The spring–block paper's claims about its chain beyond the diagram (Fig. 2, Eq. 8, SM
VI.2, §3's least energy) and §2's reading of it in networks (noise from shallow to deep).

Every rule below was written and committed before the files ``scripts/chain_claims.py``
writes (``figures/chain_claims/``) were computed; the S6.2, least-energy and §2 rows read
files committed earlier (``figures/horizons/``, ``figures/spring_phase.nc``,
``figures/paper/fig4/fig4_network.nc``), whose numbers had not been read for these claims.
A phase is the seed-mean scale-free curvature's label, band ±0.05 (``PHASE_TOLERANCE``).
Rows that check the chain against closed-form theory (Eq. 8's stationary force, the
energy minimum, the Gaussian creep's limit) do not count: they test the simulator, not a
claim about networks.

* **Fig. 2, "synchronous noise ... ultimately leads to similar load curves as independent
  noise"**: the grid μ→ ∈ {0.006, 0.018, 0.03} (μ← = 2μ→) × s ∈ {0.008, 0.016, 0.028},
  T = 1000, 20 seeds, each cell under both noise sharings. Δ: synchronous minus independent
  seed-mean curvature, its 95 % interval resampling each ensemble's seeds (400 draws). A
  cell is *alike* when the two phases agree and Δ's interval lies within ±0.05, *unlike*
  when the phases differ or the interval lies wholly outside ±0.05, *undecided*
  otherwise. With a alike and u undecided of n cells: **holds** a = n, **partly**
  a ≥ n/2, **differs** a < n/2; **undecided** when counting the undecided cells as alike
  would change that verdict.
* **Eq. 8, μ← ≤ μ→** ("with sufficient noise the load curve is concave if μ← < μ→,
  linear if μ← = μ→, convex if μ← > μ→"): μ→ = 0.03, μ← ∈ {0, 0.03, 0.06}, s ∈
  {0.05, 0.1, 0.2} (each above a = (μ→ + μ←)/2 at most 0.045: sufficient), Gaussian noise,
  T = 1000, 20 seeds. A cell matches when its phase is Eq. 8's. **holds**: all 9;
  **partly**: at least half; **differs**: fewer. Does not count (theory).
* **SM VI.2, "without truncation ... the blocks move very slowly close to the equilibrium
  ... [which] does not depend on the noise level"** (``figures/horizons``: the chain's
  diagram at T = 1e3, 1e5, 1e7 and ∞, Gaussian noise): a friction row (μ→ > 0) supports
  it when (a) at T = ∞ its noisy cells' (s > 0) seed-mean curvatures span at most 0.05
  (noise-independent), (b) at T = 1e3 they span more than 0.05 (noise-dependent at a
  finite horizon), and (c) at T = 1e5 at least one noisy cell is still more than 0.05 from
  its T = ∞ value (slow). **holds**: every row; **partly**: at least half; **differs**:
  fewer. Does not count (theory).
* **§3, "among all spring–block chains under a fixed load, the equiseparated one ... has
  the lowest potential energy"** (``figures/spring_phase.nc``): (a) no chain of the
  diagram (any cell, any seed) has an elastic energy below the equiseparated chain's
  k y² / (2(L + 1)) by more than 1e-12; (b) over the cells, the Spearman ρ of the
  seed-mean energy excess against |curvature| is at least 0.5. **holds**: both;
  **partly**: (a) only; **differs**: not (a). Does not count (a theorem).
* **§2, "noise in DNN training chiefly propagates from shallow to deep ... the activations
  of the deepest layer accumulate the largest noise"**, layer by layer in networks
  (``figures/paper/fig4/fig4_network.nc``: load curves every 2 epochs, 10 seeds, the three
  noisy settings of Fig. 4): per layer ℓ = 1..L, the fluctuation of D_ℓ over the last half
  of the epochs — the RMS of its second difference in time (a linear drift removed) —,
  its seed mean, and the Spearman ρ of that against ℓ, with a 95 % interval resampling the
  seeds. A setting supports the claim when the interval lies above 0, contradicts it when
  below 0, is undecided when it straddles 0. **undecided** when any setting is;
  otherwise **holds** when all three support it, **differs** when none does, **partly**
  otherwise. (Snapshots 2 epochs apart cannot show noise *travelling* from one layer to the
  next within an epoch: the row tests where it accumulates.)
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import xarray as xr
from scipy import stats

from phaseclaims.ledger import Claim
from phasecore.loadcurve import PHASE_TOLERANCE, phase_label

__all__ = ["ORDER", "SOURCE", "TITLE", "claims", "count_verdict", "fig2_cell",
           "shallow_to_deep"]

TITLE = "Spring–block paper: the chain's other claims, and noise across layers"
ORDER = 15
SOURCE = "spring-block"

COMMAND = "python scripts/chain_claims.py figures/chain_claims --overwrite"
FIG2 = "figures/chain_claims/fig2.nc"
EQ8 = "figures/chain_claims/eq8.nc"
HORIZONS = ("T1e3", "T1e5", "T1e7", "Tinf")
CHAIN = "figures/spring_phase.nc"
FIG4 = "figures/paper/fig4/fig4_network.nc"
WORDS = {-1: "concave", 0: "linear", 1: "convex"}


def count_verdict(hits: int, cells: int) -> str:
    """holds when every cell, partly when at least half, differs otherwise."""
    return "holds" if hits == cells else "partly" if 2 * hits >= cells else "differs"


def _boot_mean(values: np.ndarray, rng, n_boot: int = 400) -> np.ndarray:
    """Seed-mean of ``values`` (S,) in each of ``n_boot`` resamples of the seeds."""
    values = values[np.isfinite(values)]
    return rng.choice(values, (n_boot, values.size)).mean(1)


def fig2_cell(synchronous: np.ndarray, independent: np.ndarray, seed: int = 0) -> str:
    """One cell of Fig. 2's rule from both ensembles' per-seed curvatures (S,): "alike",
    "unlike" or "undecided"."""
    rng = np.random.default_rng(seed)
    same = (phase_label(np.nanmean(synchronous)) == phase_label(np.nanmean(independent)))
    delta = _boot_mean(synchronous, rng) - _boot_mean(independent, rng)
    low, high = np.quantile(delta, [0.025, 0.975])
    band = PHASE_TOLERANCE
    if not same or high < -band or low > band:
        return "unlike"
    return "alike" if -band <= low and high <= band else "undecided"


def _fig2_row(root: Path) -> list[Claim]:
    if not (root / FIG2).is_file():
        return []
    ds = xr.load_dataset(root / FIG2)
    c = ds["curvature_scaled"].transpose("noise_sharing", "mu_right", "noise", "seed")
    status = [[fig2_cell(c.sel(noise_sharing="synchronous").values[i, j],
                         c.sel(noise_sharing="independent").values[i, j])
               for j in range(c.sizes["noise"])] for i in range(c.sizes["mu_right"])]
    flat = [s for row in status for s in row]
    alike, undecided, n = flat.count("alike"), flat.count("undecided"), len(flat)
    verdict = count_verdict(alike, n)
    if undecided and count_verdict(alike + undecided, n) != verdict:
        verdict = "undecided"
    mean = c.mean("seed")
    delta = (mean.sel(noise_sharing="synchronous") - mean.sel(noise_sharing="independent"))
    sync, indep = (mean.sel(noise_sharing=k) for k in ("synchronous", "independent"))
    cells = "; ".join(
        f"μ→ {float(m):g}: " + ", ".join(
            f"s {float(s):g} {float(sync.sel(mu_right=m, noise=s)):+.2f}"
            f"/{float(indep.sel(mu_right=m, noise=s)):+.2f}"
            for s in c["noise"].values) for m in c["mu_right"].values)
    return [Claim(
        "Fig. 2", "synchronous noise (one draw shared by all blocks) ends in load curves "
        "similar to independent noise's", COMMAND, "similar (no number)",
        f"alike in {alike} of {n} cells, undecided {undecided}; curvature synchronous / "
        f"independent: {cells}; largest |Δ| {float(np.abs(delta).max()):.2f} "
        f"({ds.sizes['seed']} seeds, T = {float(ds.attrs['horizon']):g})", verdict,
        "" if verdict == "holds" else
        f"{n - alike - undecided} cells unlike (phases differ or |Δ| > {PHASE_TOLERANCE:g} "
        f"beyond seed noise), {undecided} undecided", (FIG2,))]


def _eq8_row(root: Path) -> list[Claim]:
    if not (root / EQ8).is_file():
        return []
    ds = xr.load_dataset(root / EQ8)
    mean = ds["curvature_scaled"].mean("seed").transpose("mu_left", "noise")
    mu_right = float(ds.attrs["mu_right"])
    want = np.sign(np.round(ds["mu_left"].values - mu_right, 12))  # -1 μ← < μ→ ... +1
    got = phase_label(mean.values)
    hits = int((got == want[:, None]).sum())
    verdict = count_verdict(hits, got.size)
    shown = "; ".join(
        f"μ← {float(ml):g} ({WORDS[int(w)]} by Eq. 8): " + ", ".join(
            f"s {float(s):g} {float(mean.sel(mu_left=ml, noise=s)):+.3f}"
            for s in mean["noise"].values)
        for ml, w in zip(mean["mu_left"].values, want, strict=True))
    return [Claim(
        "Eq. 8 (μ← ≤ μ→)", "with sufficient noise the load curve is concave if μ← < μ→, "
        "linear if μ← = μ→ and convex only if μ← > μ→", COMMAND,
        "concave; linear; convex",
        f"μ→ = {mu_right:g}: {shown}; {hits} of {got.size} cells in Eq. 8's phase "
        f"({ds.sizes['seed']} seeds, T = {float(ds.attrs['horizon']):g})", verdict,
        "" if verdict == "holds" else f"{got.size - hits} cells not in Eq. 8's phase",
        (EQ8,), counts=False)]


def _creep_row(root: Path) -> Claim:
    files = tuple(f"figures/horizons/{h}.nc" for h in HORIZONS)
    means = {}
    for h, name in zip(HORIZONS, files, strict=True):
        ds = xr.load_dataset(root / name)
        c = ds["curvature_scaled"].sel(mu_right=ds["mu_right"] > 0, noise=ds["noise"] > 0)
        means[h] = c.mean("seed").transpose("mu_right", "noise").values  # (R, C)
    spread = {h: np.ptp(m, axis=1) for h, m in means.items()}
    band = PHASE_TOLERANCE
    independent = spread["Tinf"] <= band
    dependent = spread["T1e3"] > band
    slow = np.any(np.abs(means["T1e5"] - means["Tinf"]) > band, axis=1)
    ok = independent & dependent & slow
    verdict = count_verdict(int(ok.sum()), ok.size)
    mu = xr.load_dataset(root / files[0])["mu_right"].values
    mu = mu[mu > 0]
    shown = "; ".join(
        f"μ→ {m:g}: span over noise {spread['T1e3'][i]:.2f} (T 1e3) → "
        f"{spread['Tinf'][i]:.2f} (∞), smallest noise {means['T1e3'][i, 0]:+.2f} → "
        f"{means['T1e5'][i, 0]:+.2f} → {means['T1e7'][i, 0]:+.2f} → {means['Tinf'][i, 0]:+.2f}"
        for i, m in enumerate(mu))
    parts = [f"{int(x.sum())} of {x.size} rows {w}" for x, w in (
        (independent, "noise-independent at T = ∞"), (dependent, "noise-dependent at T = 1e3"),
        (slow, "still away from the limit at T = 1e5"))]
    return Claim(
        "SM VI.2", "with unbounded (Gaussian) noise the chain creeps, exponentially slowly, to "
        "a state that does not depend on the noise level", "python scripts/horizons.py "
        "compute figures/horizons/", "noise-independent limit, exponentially slow",
        shown + " (μ← = 2μ→; T = 1e3, 1e5, 1e7, ∞)", verdict,
        "" if verdict == "holds" else "; ".join(parts), files, counts=False)


def _energy_row(root: Path) -> Claim:
    ds = xr.load_dataset(root / CHAIN)
    d = ds["load_curve"].transpose("mu_right", "noise", "seed", "layer").values
    # Elongations e_1..e_{L+1}: d_{l-1} - d_l for l = 1..L, and d_L (the last spring).
    e = np.concatenate([d[..., :-1] - d[..., 1:], d[..., -1:]], axis=-1)
    y, n = 1.0, e.shape[-1]
    energy = 0.5 * np.sum(e ** 2, axis=-1)  # k = 1
    floor = 0.5 * y ** 2 / n
    lowest = float(np.nanmin(energy - floor))
    below = lowest < -1e-12
    excess = np.nanmean(energy - floor, axis=2).ravel()
    curv = np.abs(ds["curvature_scaled"].transpose("mu_right", "noise", "seed").mean(
        "seed").values.ravel())
    rho = float(stats.spearmanr(curv, excess).statistic)
    verdict = "differs" if below else "holds" if rho >= 0.5 else "partly"
    return Claim(
        "§3 (least energy)", "among chains under a fixed load the equiseparated one has the "
        "lowest elastic energy", "springblock phase (figures/spring_phase.nc, committed)",
        "lowest (a theorem)",
        f"no chain below k y²/(2(L + 1)) = {floor:.4f} (smallest excess {lowest:.1e} over "
        f"{energy.size} chains); Spearman ρ of the cells' energy excess against |curvature| "
        f"{rho:+.2f}", verdict, "" if verdict == "holds" else
        ("a chain lies below the equiseparated energy" if below else
         "the energy excess does not rise with |curvature| over the cells (ρ < 0.5)"),
        (CHAIN,), counts=False)


def shallow_to_deep(curves: np.ndarray, n_boot: int = 400, seed: int = 0) -> tuple:
    """§2's statistic on one setting's load curves over epochs (S, E, L + 1): per layer
    ℓ = 1..L the RMS over the last half of the epochs of D_ℓ's second difference in time,
    averaged over seeds; the Spearman ρ of that against ℓ and its 95 % interval over seed
    resamples. Returns ``(rho, low, high, fluctuation (L,))``."""
    c = np.asarray(curves, dtype=float)[:, c_half(curves):, 1:]
    second = c[:, 2:] - 2 * c[:, 1:-1] + c[:, :-2]  # (S, E', L)
    rms = np.sqrt(np.nanmean(second ** 2, axis=1))  # (S, L)
    layers = np.arange(1, rms.shape[1] + 1)

    def rho(r):
        return stats.spearmanr(layers, np.nanmean(r, axis=0)).statistic

    rng = np.random.default_rng(seed)
    boot = [rho(rms[rng.integers(0, len(rms), len(rms))]) for _ in range(n_boot)]
    low, high = np.nanquantile(boot, [0.025, 0.975])
    return float(rho(rms)), float(low), float(high), np.nanmean(rms, axis=0)


def c_half(curves) -> int:
    """The first epoch index of the last half."""
    return np.shape(curves)[1] // 2


def _shallow_row(root: Path) -> Claim:
    ds = xr.load_dataset(root / FIG4)
    parts, status = [], []
    for s in ds["setting"].values:
        curves = ds["load_curve_epochs"].sel(setting=s).transpose("seed", "epoch", "layer")
        rho, low, high, fluct = shallow_to_deep(curves.values)
        status.append("above" if low > 0 else "below" if high < 0 else "straddles")
        parts.append(f"({s}) ρ {rho:+.2f} [{low:+.2f}, {high:+.2f}], fluctuation "
                     f"{fluct[0]:.3f} (layer 1) … {fluct[-1]:.3f} (layer {len(fluct)})")
    above = status.count("above")
    if "straddles" in status:
        verdict = "undecided"
    else:
        verdict = "holds" if above == 3 else "differs" if above == 0 else "partly"
    return Claim(
        "§2 (noise across layers)", "noise in training propagates from shallow to deep "
        "layers: the deepest layers accumulate the largest noise", "python "
        "scripts/fig4_dynamics.py figures/paper/fig4", "— (an argument, no figure)",
        "Spearman ρ of the layer's fluctuation over epochs against its depth: "
        + "; ".join(parts) + f" ({ds.sizes['seed']} seeds, epochs every 2, last half)",
        verdict, "" if verdict == "holds" else
        f"the fluctuation rises with depth beyond seed noise in {above} of 3 settings"
        + (", the interval straddles 0 in " + str(status.count("straddles"))
           if "straddles" in status else "")
        + "; snapshots 2 epochs apart cannot show noise travelling layer to layer within "
        "an epoch", (FIG4,), source="spring-block")


def claims(root: Path) -> list[Claim]:
    root = Path(root)
    return (_fig2_row(root) + _eq8_row(root)
            + [_creep_row(root), _energy_row(root), _shallow_row(root)])
