"""Fig. 5(a), the linear network: run it and write its result, figure and numbers.

    python scripts/linear_network.py [figures/supplement] [--quick] [--overwrite]

Writes ``linear_network.nc`` and ``linear_network.png`` in the folder (existing ones only
with ``--overwrite``) and prints,
per setting, the scale-free curvature of the load curve (mean ± SD over seeds)
and the training accuracy. About 30 s on one core (``--quick``: 5 s).
"""

from __future__ import annotations

import sys

import numpy as np

from dnnphase.sweeps.experiments import linear_network, plot_linear_network
from phasecore import results
from phasecore.commandline import result_script
from phasecore.panels import save_figure
from phasecore.results import all_or_nothing, check_new_outputs, check_output_folder


def main(folder: str = "figures/supplement", scale: str = "paper",
         overwrite: bool = False) -> None:
    """Run, then write the result and its figure into ``folder`` (existing ones are replaced
    only with ``overwrite``: the default folder holds the committed ones)."""
    folder = check_output_folder(folder)
    outputs = [folder / "linear_network.nc", folder / "linear_network.png"]
    check_new_outputs(outputs, overwrite)
    ds = linear_network(scale)
    with all_or_nothing(outputs, folder):  # both files or neither (a full disk)
        results.save(ds, outputs[0], overwrite=True)
        save_figure(plot_linear_network(ds), outputs[1])
    print("| setting | scale-free curvature (mean ± SD over seeds) | train accuracy |")
    print("|---|---|---|")
    for name in ds["setting"].values:
        c = ds["curvature_scaled"].sel(setting=name).values
        acc = ds["train_accuracy"].sel(setting=name).values
        print(f"| {name} | {np.mean(c):+.3f} ± {np.std(c):.3f} | {np.mean(acc):.2f} |")


def cli(argv=None) -> None:
    """The command line: bad input is one line and exit code 2, as every command's."""
    sys.exit(result_script(__doc__.split("\n\n")[0], main, argv,
                           writes="linear_network.nc and .png"))


if __name__ == "__main__":
    cli()
