"""The chain's phase diagram at growing horizons, T = 1e3 ... inf (figures/horizons/).

    python scripts/horizons.py compute figures/horizons/   # ~1 min on 2 cores
    python scripts/horizons.py plot figures/horizons/      # redraw from the .nc files

Files already in the folder are replaced only with ``--overwrite``.

The default grid of ``springblock phase`` (mu-> in [0, 0.03] x 6, s in
[0, 0.028] x 8, mu<- = 2 mu->, L = 7, k = 1, step 0.01, 10 seeds), run with
the event-driven kernel where it is cheaper (``algorithm="auto"``), at
T = 1e3, 1e5, 1e7 and inf with Gaussian noise, and at T = inf with noise
truncated at 2 standard deviations (bound b = 2 s).

A cell whose horizon exceeds its own infinite horizon (20 relaxation times,
:func:`springblock.algorithm.infinite_horizon_steps`) is run to that infinite
horizon instead: its distribution is the stationary one to within e^-20, and
running 1e9 steps of a chain that moves every step would cost minutes per
chain for nothing. Those cells are flagged ``stationary`` in the files.
"""

from __future__ import annotations

import math
import sys
from pathlib import Path

import numpy as np
import xarray as xr

from phasecore.commandline import Parser, overwrite_option, run
from phasecore.loadcurve import curvature_scaled, phase_label
from phasecore.panels import PhasePanel, save_figure
from phasecore.results import (
    check_new_outputs,
    check_output_folder,
    load,
    provenance,
    save,
)
from springblock.algorithm import infinite_horizon_steps
from springblock.config import ChainConfig
from springblock.ensemble import run_ensemble
from springblock.theory import load_curve

MU_RIGHT = np.linspace(0.0, 0.03, 6)
NOISE = np.linspace(0.0, 0.028, 8)
SEEDS = np.arange(10)
BASE = dict(blocks=7, modulus=1.0, step=0.01, algorithm="auto")
#: (file stem, horizon T in time units, noise distribution)
PANELS = [("T1e3", 1e3, "gaussian"), ("T1e5", 1e5, "gaussian"), ("T1e7", 1e7, "gaussian"),
          ("Tinf", math.inf, "gaussian"), ("Tinf_truncated", math.inf, "truncated")]


def cell_config(mu_right: float, noise: float, horizon: float, dist: str) -> ChainConfig:
    """One cell; horizons beyond the cell's stationary horizon become steps=inf."""
    cfg = ChainConfig(mu_right=mu_right, mu_left=2 * mu_right, noise=noise, noise_dist=dist,
                      steps=math.inf, **BASE)
    if horizon < math.inf and horizon / cfg.step < infinite_horizon_steps(cfg):
        cfg = cfg.replace(steps=int(round(horizon / cfg.step)))
    return cfg


def compute(horizon: float, dist: str) -> xr.Dataset:
    """Run every cell x seed; (mu_right, noise, seed, layer) Dataset."""
    shape = (MU_RIGHT.size, NOISE.size, SEEDS.size)
    curves = np.zeros(shape + (BASE["blocks"] + 1,))
    steps, frozen = np.zeros(shape), np.zeros(shape, dtype=bool)
    algorithm = np.empty(shape, dtype="<U6")
    stationary = np.zeros(shape[:2], dtype=bool)
    for i, mu in enumerate(MU_RIGHT):
        for j, s in enumerate(NOISE):
            cfg = cell_config(mu, s, horizon, dist)
            res = run_ensemble([cfg] * SEEDS.size, SEEDS)
            curves[i, j] = load_curve(res.positions, cfg.target)
            steps[i, j], frozen[i, j], algorithm[i, j] = res.steps_run, res.frozen, res.algorithm
            stationary[i, j] = cfg.steps == math.inf
    dims = ("mu_right", "noise", "seed")
    ds = xr.Dataset(
        {
            "load_curve": (dims + ("layer",), curves, {"units": "length"}),
            "curvature_scaled": (dims, curvature_scaled(curves), {"units": "1"}),
            "steps_run": (dims, steps, {"units": "steps"}),
            "frozen": (dims, frozen),
            "algorithm": (dims, algorithm),
            "stationary": (dims[:2], stationary,
                           {"long_name": "run to the cell's infinite horizon"}),
        },
        coords={"mu_right": MU_RIGHT, "noise": NOISE, "seed": SEEDS,
                "layer": np.arange(BASE["blocks"] + 1)},
    )
    ds.attrs.update(provenance("springblock.horizons", {**BASE, "horizon": str(horizon),
                                                        "noise_dist": dist, "mu_left_ratio": 2}))
    return ds


def _title(stem: str, horizon: float, dist: str) -> str:
    if horizon == math.inf:
        return ("T = inf, noise bounded by 2s (frozen where 2s <= a)" if dist == "truncated"
                else "T = inf (20 relaxation times)")
    return f"T = {horizon:.0e}".replace("e+0", "e")


#: The panels' layout: the finite horizons on top, the two infinite ones below.
LAYOUT = ((0, 1, 2), (3, 4))
#: Inches per small load-curve plot, and the figure's resolution: cells of ~55 px, 7 pt
#: labels ~10 px high.
AX_SIZE, DPI = 0.55, 100
#: Inches: left margin (row labels), between panels (colour bar, next row labels), right
#: margin (colour bar label), below a row (column labels), above a row (its titles).
LEFT, BETWEEN, RIGHT, BELOW, ABOVE = 1.2, 2.1, 1.3, 0.85, 0.5
TITLE = ("The chain's phase diagram as the horizon grows (L = 7, k = 1, step 0.01, 10 seeds; "
         "blue concave, red convex)\nGaussian noise: the concave -> convex boundary moves to "
         "smaller noise as T grows and vanishes at T = inf (F* = (mu-> - mu<-)/2 for every "
         "s > 0);\nbounded noise keeps a true noise-driven transition at T = inf (F_T = "
         "max(mu-> - 2s, -mu->/2))")


def panel(stem: str, horizon: float, dist: str, folder: Path) -> PhasePanel:
    """One horizon's diagram, oriented as every other figure: friction grows upwards."""
    ds = load(folder / f"{stem}.nc")
    shade = ds["curvature_scaled"].mean("seed").values
    return PhasePanel(
        curves=ds["load_curve"].mean("seed").values, shade=shade,
        row_values=MU_RIGHT, col_values=NOISE,
        row_label="friction mu-> (mu<- = 2 mu->; more on top)",
        col_label="noise s (noisier to the right)", shade_label="scale-free curvature",
        vlim=(-1.0, 1.0), title=_title(stem, horizon, dist), boundary=phase_label(shade),
        flip_rows=True)


def plot(folder: Path):
    """The five diagrams in two rows (:data:`LAYOUT`), one colour scale."""
    import matplotlib.pyplot as plt

    from phasecore.panels import _draw_panel  # one panel at a given place (plot_phase_grid's)

    panels = [panel(stem, horizon, dist, folder) for stem, horizon, dist in PANELS]
    width, height = NOISE.size * AX_SIZE, MU_RIGHT.size * AX_SIZE
    widest = max(len(row) for row in LAYOUT)
    fig_w = LEFT + widest * width + (widest - 1) * BETWEEN + RIGHT
    top = 0.35 + 0.2 * TITLE.count("\n")
    fig_h = top + len(LAYOUT) * (ABOVE + height + BELOW)
    fig = plt.figure(figsize=(fig_w, fig_h))
    for r, row in enumerate(LAYOUT):
        used = len(row) * width + (len(row) - 1) * BETWEEN
        x = LEFT + (widest * width + (widest - 1) * BETWEEN - used) / 2  # a short row centred
        y = (len(LAYOUT) - 1 - r) * (ABOVE + height + BELOW) + BELOW
        for k in row:
            _draw_panel(fig, (x, y), panels[k], AX_SIZE)
            x += width + BETWEEN
    fig.suptitle(TITLE, fontsize=10, y=1 - 0.1 / fig_h, va="top")
    return fig


def main(argv=None) -> int:
    parser = Parser(description=__doc__.split("\n\n")[0])
    parser.add_argument("what", choices=["compute", "plot"],
                        help="compute: every panel's diagram, then the figure; plot: the "
                             "figure alone, from the panels' files")
    parser.add_argument("folder", type=Path,
                        help="where the panels' files and the figure go (created if missing; "
                             "the committed ones: figures/horizons/)")
    overwrite_option(parser, "panels' .nc files and horizons.png")
    parser.set_defaults(func=lambda args: draw(args.what, args.folder, args.overwrite))
    return run(parser, argv)


def draw(what: str, folder: Path, overwrite: bool = False) -> None:
    """``compute``: every panel's diagram, then the figure; ``plot``: the figure alone.
    Files there already are replaced only with ``overwrite`` (checked before any work)."""
    outputs = [folder / "horizons.png"]
    outputs += [folder / f"{stem}.nc" for stem, _, _ in PANELS] if what == "compute" else []
    check_output_folder(folder)
    check_new_outputs(outputs, overwrite)
    if what == "compute":
        check_output_folder(folder).mkdir(parents=True, exist_ok=True)
        for stem, horizon, dist in PANELS:
            save(compute(horizon, dist), folder / f"{stem}.nc", overwrite=True)
            print(f"wrote {folder / stem}.nc", flush=True)
    else:
        missing = [f"{stem}.nc" for stem, _, _ in PANELS if not (folder / f"{stem}.nc").exists()]
        if missing:
            raise FileNotFoundError(f"{str(folder)!r} lacks {', '.join(missing)} (run "
                                    "'compute' first)")
    save_figure(plot(folder), folder / "horizons.png", dpi=DPI)
    print(f"wrote {folder / 'horizons.png'}")


if __name__ == "__main__":
    sys.exit(main())
