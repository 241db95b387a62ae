"""The chain's variants as the paper's figures: Fig. 5b, Fig. S13 and Fig. S14.

    python scripts/supplement_chains.py [FOLDER] [--only fig5b,s13,s14] [--seeds N] [--quick]
                                        [--overwrite]

``--seeds`` sets every figure's chains per cell; by default 10, and 400 for S14 (its
synchronous noise makes one chain's curve vary much more: :data:`SEEDS`).

* ``fig5b`` — only leftward friction (mu-> = 0), the overdamped chain of the main text:
  rows mu<- in {0, 0.01, 0.02, 0.03, 0.04}, columns s in [0, 0.028] (8), L = 7, k = 1,
  step 0.01, T = 1000. From Eq. 8 the curve is linear without noise (no block moves left,
  so mu<- does not act) and convex with noise when mu<- > 0 (F* = -mu<-/2 < 0). Drawn with
  the mean-drift theory's curves (:func:`springblock.theory.predict_positions`) dashed.
* ``s13`` — the second-order chain (paper Eq. 4, SM Eqs. 10-11; critical damping of the
  stiffest mode) on the main diagram's grid: rows mu-> in [0, 0.03] (6), mu<- = 2 mu->,
  columns s in [0, 0.028] (8), T = 1000.
* ``s14`` — the Langevin chain (SM Eqs. 12-13) with the reference's parameters (DESIGN
  2.3): L = 7, m = 1, gamma = 1, k = 0.1, lambda = 0.001, dt = 0.05, t_max = 700, the same
  noise for all blocks, mu<- / mu-> = 4/3 (0.004 / 0.003); rows mu-> in {0, .., 0.004}
  (5), columns sigma_0 in {0, .., 0.006} (7): the reference's cell (0.003, 0.003) is one.

Each writes ``FOLDER/<name>.nc`` (a ``springblock.phase_diagram`` result) and
``FOLDER/<name>.png`` (existing ones only with ``--overwrite``) and prints each cell's
seed-mean scale-free curvature and the largest standard error over seeds. A few minutes
for all three on 2 cores (``--quick``: 1/100 of each horizon, for the tests; its numbers
are not the figures').
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np

from phasecore.checks import ConfigError
from phasecore.commandline import Parser, integer, overwrite_option
from phasecore.commandline import run as run_command
from phasecore.loadcurve import PHASE_TOLERANCE

NAMES = ("fig5b", "s13", "s14")
#: Chains per cell. The Langevin chain's noise is one draw for all blocks, which moves the
#: whole chain at once: one chain's curvature then varies much more (at sigma_0 = 0.006 its
#: SD over seeds is about 0.3 against 0.01 for the others), and 10 seeds left standard
#: errors up to 0.1, twice the linear band; the reference averaged 2 000 paths.
SEEDS = {"fig5b": 10, "s13": 10, "s14": 400}
NOISE = np.linspace(0.0, 0.028, 8)


def spec(name: str, quick: bool) -> dict:
    """The phase_diagram arguments of one figure (``quick``: the same grid, short runs)."""
    if name == "fig5b":
        out = {"rows": ("mu_left", np.linspace(0.0, 0.04, 5)), "cols": ("noise", NOISE),
               "mu_right": 0.0, "steps": 100_000}
    elif name == "s13":
        out = {"rows": ("mu_right", np.linspace(0.0, 0.03, 6)), "cols": ("noise", NOISE),
               "mu_left_ratio": 2.0, "dynamics": "second_order", "steps": 100_000}
    else:
        out = {"rows": ("mu_right", np.linspace(0.0, 0.004, 5)),
               "cols": ("noise", np.linspace(0.0, 0.006, 7)), "mu_left_ratio": 4.0 / 3.0,
               "dynamics": "langevin", "damping": 1.0, "modulus": 0.1, "noise_decay": 0.001,
               "step": 0.05, "steps": 14_000, "noise_sharing": "synchronous"}
    if quick:
        out["steps"] = out["steps"] // 100
    return out


def compute(name: str, seeds: int | None, quick: bool):
    """The figure's phase diagram (``springblock.phase_diagram``), labelled."""
    import springblock as sb

    ds = sb.phase_diagram(seeds=seeds or SEEDS[name], theory_prediction=name == "fig5b",
                          **spec(name, quick))
    ds.attrs["figure"] = {"fig5b": "Fig. 5b", "s13": "Fig. S13", "s14": "Fig. S14"}[name]
    return ds


#: Each figure's title line.
TITLES = {"fig5b": "Fig. 5b: only leftward friction (mu> = 0), overdamped chain",
          "s13": "Fig. S13: second-order chain, mu< = 2 mu>, critical damping",
          "s14": "Fig. S14: Langevin chain, k 0.1, gamma 1, noise decay 0.001, mu< = 4/3 mu>, "
                 "one noise for all blocks"}


def draw(name: str, ds):
    """Fig. 3-style diagram (friction down the rows, noise across); Fig. 5b with the
    mean-drift theory's curves dashed."""
    from phasecore.loadcurve import phase_label
    from phasecore.panels import PhasePanel, axis_label, fmt_value, plot_phase_grid

    row, col = ds["load_curve"].dims[:2]
    curvature = ds["curvature_scaled"].mean("seed").values
    theory = name == "fig5b"
    panel = PhasePanel(
        ds["load_curve"].mean("seed").values, curvature, ds[row].values, ds[col].values,
        row_label=axis_label(ds, row), col_label=(
            "initial noise sigma_0 [velocity kick per step]" if name == "s14"
            else axis_label(ds, col)),
        shade_label="mean scale-free curvature", boundary=phase_label(curvature),
        dashed=ds["theory_load_curve"].values if theory else None,
        dashed_label="mean-drift theory")
    horizon = fmt_value(float(np.round(ds["horizon"].values.max(), 6)))
    return plot_phase_grid(panel, title=(
        f"{TITLES[name]}\nmean load curve of {ds.sizes['seed']} seeds, L = "
        f"{ds.sizes['layer'] - 1}, T = {horizon}"
        + ("; dashed: theory" if theory else "") + " (blue concave, red convex)"))


def table(ds) -> str:
    """Seed-mean scale-free curvature per cell, rows by columns (Markdown)."""
    row, col = ds["load_curve"].dims[:2]
    mean = ds["curvature_scaled"].mean("seed").values
    lines = [f"| {row} \\ {col} | " + " | ".join(f"{v:g}" for v in ds[col].values) + " |",
             "|---" * (ds.sizes[col] + 1) + "|"]
    for i, r in enumerate(ds[row].values):
        lines.append(f"| {r:g} | " + " | ".join(f"{v:+.3f}" for v in mean[i]) + " |")
    se = float((ds["curvature_scaled"].std("seed") / np.sqrt(ds.sizes["seed"])).max())
    return "\n".join(lines) + (f"\n(linear band |c| <= {PHASE_TOLERANCE:g}; largest standard "
                               f"error over {ds.sizes['seed']} seeds {se:.3f})")


def main(args) -> None:
    from phasecore import results
    from phasecore.panels import save_figure
    from phasecore.results import all_or_nothing, check_new_outputs

    folder = Path(args.folder)
    if folder.exists() and not folder.is_dir():
        raise ConfigError(f"folder {args.folder!r} is a file, not a folder")
    check_new_outputs([folder / f"{name}{suffix}" for name in args.only
                       for suffix in (".nc", ".png")], args.overwrite)
    for name in args.only:
        start = time.perf_counter()
        ds = compute(name, args.seeds, args.quick)
        outputs = [folder / f"{name}.nc", folder / f"{name}.png"]
        with all_or_nothing(outputs, folder):  # both files or neither (a full disk)
            results.save(ds, outputs[0], overwrite=True)
            save_figure(draw(name, ds), outputs[1])
        print(f"## {ds.attrs['figure']} ({time.perf_counter() - start:.0f} s)\n{table(ds)}\n")


def _names(text: str) -> tuple[str, ...]:
    names = tuple(n.strip() for n in text.split(",") if n.strip())
    bad = [n for n in names if n not in NAMES]
    if not names or bad:
        raise ValueError
    return tuple(dict.fromkeys(names))


_names.__name__ = f"comma-separated list of {', '.join(NAMES)}"




def build_parser() -> Parser:
    parser = Parser(description=__doc__.split("\n\n")[0])
    parser.add_argument("folder", nargs="?", default="figures/supplement/chains",
                        help="where the files go (created if missing; default "
                             "figures/supplement/chains)")
    parser.add_argument("--only", type=_names, default=NAMES,
                        help=f"which figures, comma-separated (default {','.join(NAMES)})")
    parser.add_argument("--seeds", type=integer(1, 1000), default=None,
                        help="chains per cell of every figure, 1..1000 (default "
                             + ", ".join(f"{k} {v}" for k, v in SEEDS.items()) + ")")
    parser.add_argument("--quick", action="store_true",
                        help="1/100 of the horizon (seconds; for tests)")
    overwrite_option(parser, "<figure>.nc and .png files")
    parser.set_defaults(func=main)
    return parser


def cli(argv=None) -> int:
    return run_command(build_parser(), argv)


if __name__ == "__main__":
    sys.exit(cli())
