"""The chain's claims beyond its diagram: Fig. 2 (synchronous against independent noise) and
Eq. 8 with μ← ≤ μ→ — the files the ledger's rows read (``phaseclaims.chain_claims``,
whose rules were fixed before these files were computed).

    python scripts/chain_claims.py [FOLDER] [--quick] [--overwrite]

Writes ``fig2.nc`` and ``eq8.nc`` in FOLDER (default figures/chain_claims, which holds the
committed ones: files there already are replaced only with ``--overwrite``, refused before
any work without it; both files or neither): per cell and seed the load curve and its
scale-free curvature (L = 7, k = 1, y = 1, step 0.01, T = 1000, Gaussian noise, 20 seeds;
about a minute on 2 cores; ``--quick``: 4 seeds, T = 10, a test, by default into
figures/chain_claims/quick). Nothing is fitted or
chosen from the results.
"""

from __future__ import annotations

import sys

import numpy as np
import xarray as xr

from phasecore.commandline import result_script
from phasecore.results import (
    all_or_nothing,
    check_new_outputs,
    check_output_folder,
    provenance,
    save,
)
from springblock import simulate

#: Fig. 2's grid: friction (μ← = 2μ→) × noise, both noise sharings.
FIG2 = dict(mu_right=(0.006, 0.018, 0.03), noise=(0.008, 0.016, 0.028),
            sharing=("synchronous", "independent"))
#: Eq. 8's grid: one μ→, μ← below, at and above it, noise well above a = (μ→ + μ←)/2.
EQ8 = dict(mu_right=0.03, mu_left=(0.0, 0.03, 0.06), noise=(0.05, 0.1, 0.2))
BASE = dict(blocks=7, modulus=1.0, target=1.0, step=0.01)
SCALES = {"paper": dict(steps=100_000, seeds=20), "quick": dict(steps=1_000, seeds=4)}


def _cell(seeds: int, **params) -> tuple[np.ndarray, np.ndarray]:
    ds = simulate(seeds=seeds, theory_prediction=False, **BASE, **params)
    return ds["load_curve"].values, ds["curvature_scaled"].values  # (S, L+1), (S,)


def fig2(steps: int, seeds: int) -> xr.Dataset:
    """Fig. 2's cells under both noise sharings."""
    shape = (len(FIG2["sharing"]), len(FIG2["mu_right"]), len(FIG2["noise"]), seeds)
    curves = np.empty((*shape, BASE["blocks"] + 1))
    curvature = np.empty(shape)
    for a, sharing in enumerate(FIG2["sharing"]):
        for i, mu in enumerate(FIG2["mu_right"]):
            for j, s in enumerate(FIG2["noise"]):
                curves[a, i, j], curvature[a, i, j] = _cell(
                    seeds, mu_right=mu, mu_left=2 * mu, noise=s, noise_sharing=sharing,
                    steps=steps)
    dims = ("noise_sharing", "mu_right", "noise", "seed")
    config = dict(BASE, **FIG2, steps=steps, seeds=seeds, mu_left_ratio=2.0)
    return xr.Dataset(
        {"load_curve": ((*dims, "layer"), curves), "curvature_scaled": (dims, curvature)},
        coords={"noise_sharing": list(FIG2["sharing"]), "mu_right": list(FIG2["mu_right"]),
                "noise": list(FIG2["noise"]), "seed": np.arange(seeds),
                "layer": np.arange(BASE["blocks"] + 1)},
        attrs={**provenance("chain_claims.fig2", config), "horizon": steps * BASE["step"]})


def eq8(steps: int, seeds: int) -> xr.Dataset:
    """Eq. 8's cells: μ← below, at and above μ→, at large noise."""
    shape = (len(EQ8["mu_left"]), len(EQ8["noise"]), seeds)
    curves = np.empty((*shape, BASE["blocks"] + 1))
    curvature = np.empty(shape)
    for i, ml in enumerate(EQ8["mu_left"]):
        for j, s in enumerate(EQ8["noise"]):
            curves[i, j], curvature[i, j] = _cell(
                seeds, mu_right=EQ8["mu_right"], mu_left=ml, noise=s, steps=steps)
    dims = ("mu_left", "noise", "seed")
    config = dict(BASE, **EQ8, steps=steps, seeds=seeds)
    return xr.Dataset(
        {"load_curve": ((*dims, "layer"), curves), "curvature_scaled": (dims, curvature)},
        coords={"mu_left": list(EQ8["mu_left"]), "noise": list(EQ8["noise"]),
                "seed": np.arange(seeds), "layer": np.arange(BASE["blocks"] + 1)},
        attrs={**provenance("chain_claims.eq8", config), "horizon": steps * BASE["step"],
               "mu_right": EQ8["mu_right"]})


def main(folder: str = "figures/chain_claims", scale: str = "paper",
         overwrite: bool = False) -> None:
    """Compute both files, then write them into ``folder``, both or neither (existing ones
    are replaced only with ``overwrite``, checked before any work: the default folder holds
    the committed ones)."""
    folder = check_output_folder(folder)
    outputs = {name: folder / f"{name}.nc" for name in ("fig2", "eq8")}
    check_new_outputs(outputs.values(), overwrite)
    computed = {name: make(**SCALES[scale]) for name, make in (("fig2", fig2), ("eq8", eq8))}
    with all_or_nothing(outputs.values(), folder):  # both files or neither (a full disk)
        for name, path in outputs.items():
            save(computed[name], path, overwrite=True)  # each replaced atomically
    for path in outputs.values():
        print(f"wrote {path}")


def cli(argv=None) -> None:
    """The command line: bad input is one line and exit code 2."""
    sys.exit(result_script(__doc__.split("\n\n")[0], main, argv,
                           folder="figures/chain_claims", writes="fig2.nc and eq8.nc"))


if __name__ == "__main__":
    cli()
