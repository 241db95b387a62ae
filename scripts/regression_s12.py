"""Fig. S12: regression trained with the mean squared error, its load curve the RMSE of the
best affine regressor from each layer (paper SM S5): "noisier training results in a convex
load curve, lazy training in a concave one".

    python scripts/regression_s12.py [FOLDER] [--seeds N] [--quick] [--overwrite]

The paper's MLP (7 x 100, BatchNorm, Adam lr 1e-3, full batch, 100 epochs) on its 2 560
MNIST digits with each image's digit as the target (label / 9; the paper's text does not
name its regression data), nonlinearity alpha in {0, 0.5, 1} down the rows and dropout in
{0, 0.1, 0.2, 0.3} across (:mod:`dnnphase.sweeps.regression`). Writes
``FOLDER/regression.nc`` and ``FOLDER/regression.png`` (existing ones only with
``--overwrite``) and prints each cell's seed-mean
scale-free curvature and test RMSE. One model takes about 10 s of one core: 4 seeds (the
default; the paper averages 10) about 8 minutes of CPU (``--quick``: a tiny network on
8 x 8 digits, seconds, for the tests).
"""

from __future__ import annotations

import os

# One thread per process: the measure's small least-squares solves run ~80x slower when
# OpenBLAS's threads compete for busy cores (measured: 8 solves 2.1 s against 0.08 s).
for _name in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_name, "1")

import sys  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

from phasecore.checks import ConfigError  # noqa: E402
from phasecore.commandline import Parser, integer, overwrite_option  # noqa: E402
from phasecore.commandline import run as run_command  # noqa: E402
from phasecore.loadcurve import PHASE_TOLERANCE, phase_label  # noqa: E402

#: A load curve whose drop D_0 - D_L is below this fraction of D_0 is drawn as flat.
FLAT = 0.01


def draw(ds):
    """The diagram as the classification ones: ReLU on top, more dropout to the right."""
    from phasecore.panels import PhasePanel, plot_phase_grid

    curvature = ds["curvature_scaled"].mean("seed").values
    curves = ds["load_curve"].mean("seed").values
    # A curve that drops by less than 1 % of its start has no shape to read (the linear
    # network's: every layer an invertible affine image of the input): hatched grey.
    drops = np.abs(curves[..., 0] - curves[..., -1]) >= FLAT * np.abs(curves[..., 0])
    panel = PhasePanel(
        curves, curvature, ds["alpha"].values, ds["dropout"].values,
        row_label="LeakyReLU slope alpha", col_label="dropout p",
        shade_label="mean scale-free curvature",
        boundary=np.where(drops, phase_label(curvature), np.nan), separates=drops)
    return plot_phase_grid(panel, title=(
        "Fig. S12: regression trained with MSE (digit value of MNIST 10x10); load = RMSE of "
        f"the best affine regressor\nfrom each layer, mean of {ds.sizes['seed']} seeds, "
        f"L = {ds.sizes['layer'] - 1} (blue concave, red convex; hatched here: flat, the drop "
        f"below {FLAT:.0%} of D_0)"))


def table(ds) -> str:
    mean = ds["curvature_scaled"].mean("seed").values
    rmse = ds["test_rmse"].mean("seed").values
    lines = ["| alpha \\ dropout | " + " | ".join(f"{p:g}" for p in ds["dropout"].values)
             + " |", "|---" * (ds.sizes["dropout"] + 1) + "|"]
    for i, a in enumerate(ds["alpha"].values):
        lines.append(f"| {a:g} | " + " | ".join(
            f"{c:+.3f} (test RMSE {r:.3f})" for c, r in zip(mean[i], rmse[i], strict=True))
            + " |")
    return "\n".join(lines) + f"\n(linear band |c| <= {PHASE_TOLERANCE:g})"


def main(args) -> None:
    import torch

    from dnnphase.sweeps.regression import QUICK, REGRESSION, regression_sweep
    from phasecore import results
    from phasecore.panels import save_figure
    from phasecore.results import all_or_nothing, check_new_outputs

    folder = Path(args.folder)
    if folder.exists() and not folder.is_dir():
        raise ConfigError(f"folder {args.folder!r} is a file, not a folder")
    outputs = [folder / "regression.nc", folder / "regression.png"]
    check_new_outputs(outputs, args.overwrite)  # the default folder holds the committed ones
    settings = dict(QUICK if args.quick else REGRESSION)
    if args.seeds is not None:
        settings["seeds"] = args.seeds
    start = time.perf_counter()
    torch.set_num_threads(1)
    ds = regression_sweep(**settings)
    with all_or_nothing(outputs, folder):  # both files or neither (a full disk)
        results.save(ds, outputs[0], overwrite=True)
        save_figure(draw(ds), outputs[1])
    print(f"{table(ds)}\n{time.perf_counter() - start:.0f} s")




def build_parser() -> Parser:
    parser = Parser(description=__doc__.split("\n\n")[0])
    parser.add_argument("folder", nargs="?", default="figures/supplement",
                        help="where the files go (created if missing; default figures/supplement)")
    parser.add_argument("--seeds", type=integer(1, 100), default=None,
                        help="networks per cell, 1..100 (default 4; --quick 2)")
    parser.add_argument("--quick", action="store_true",
                        help="a tiny network on 8 x 8 digits (seconds; for tests)")
    overwrite_option(parser, "regression.nc and .png")
    parser.set_defaults(func=main)
    return parser


def cli(argv=None) -> int:
    return run_command(build_parser(), argv)


if __name__ == "__main__":
    sys.exit(cli())
