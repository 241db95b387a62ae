"""Fig. 5(a), the linear network: run it and write its result, figure and numbers.

    python scripts/linear_network.py [figures/supplement] [--quick]

Writes ``linear_network.nc`` and ``linear_network.png`` in the folder and prints,
per setting, the scale-free curvature of the load curve (mean ± SD over seeds)
and the training accuracy. About 30 s on one core (``--quick``: 5 s).
"""

from __future__ import annotations

import sys

import numpy as np

from dnnphase.sweeps.experiments import linear_network, plot_linear_network
from phasecore import results
from phasecore.commandline import Parser, run
from phasecore.panels import save_figure
from phasecore.results import check_output_folder


def main(folder: str = "figures/supplement", scale: str = "paper") -> None:
    folder = check_output_folder(folder)
    folder.mkdir(parents=True, exist_ok=True)
    ds = linear_network(scale)
    results.save(ds, folder / "linear_network.nc", overwrite=True)
    save_figure(plot_linear_network(ds), folder / "linear_network.png")
    print("| setting | scale-free curvature (mean ± SD over seeds) | train accuracy |")
    print("|---|---|---|")
    for name in ds["setting"].values:
        c = ds["curvature_scaled"].sel(setting=name).values
        acc = ds["train_accuracy"].sel(setting=name).values
        print(f"| {name} | {np.mean(c):+.3f} ± {np.std(c):.3f} | {np.mean(acc):.2f} |")


def cli(argv=None) -> None:
    """The command line: bad input is one line and exit code 2, as every command's."""
    parser = Parser(description=__doc__.splitlines()[0])
    parser.add_argument("folder", nargs="?", default="figures/supplement",
                        help="where to write (default figures/supplement)")
    parser.add_argument("--quick", dest="scale", action="store_const", const="quick",
                        default="paper", help="seconds: a smoke test")
    parser.set_defaults(func=lambda args: main(args.folder, scale=args.scale))
    sys.exit(run(parser, argv))


if __name__ == "__main__":
    cli()
