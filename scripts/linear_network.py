"""Fig. 5(a), the linear network: run it and write its result, figure and numbers.

    python scripts/linear_network.py [figures/supplement] [--quick]

Writes ``linear_network.nc`` and ``linear_network.png`` in the folder and prints,
per setting, the scale-free curvature of the load curve (mean ± SD over seeds)
and the training accuracy. About 30 s on one core (``--quick``: 5 s).
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

from dnnphase.sweeps.experiments import linear_network, plot_linear_network
from phasecore import results
from phasecore.panels import save_figure


def main(folder: str = "figures/supplement", scale: str = "paper") -> None:
    folder = Path(folder)
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


if __name__ == "__main__":
    args = [a for a in sys.argv[1:] if a != "--quick"]
    main(*args[:1], scale="quick" if "--quick" in sys.argv else "paper")
