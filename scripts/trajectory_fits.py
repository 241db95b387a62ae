"""Print the trajectory-fit table: does the chain fit the networks' training, and what does it pin?

    python scripts/trajectory_fits.py [figures/paper]

For every committed sweep ``dnn_<knob>.nc`` of the folder, the chain is fitted to each
cell's training trajectory (``fit_sweep_trajectory``, weights from the seed spread) twice:
started at rest (the paper's chain) and from the network's first recorded curve. Two
questions, kept apart:

* **misfit** — does the chain reproduce the trajectory to within its seed noise
  (chi2/dof <= 2)? The chi2/dof distribution (quartiles) and the count of such cells;
* **identifiability** — where it does, which parameters get a bounded 95 % interval?

About 20 s on one core for the four paper knobs.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np

from dnnphase.compare.comparator.fitting import fit_sweep_trajectory
from phasecore import results
from phasecore.checks import ConfigError
from phasecore.commandline import folder_command

KNOB_ORDER = ("dropout", "lr", "batch_size", "label_noise")
PARAMS = ("mu_right", "mu_left", "noise", "time_scale")
SYMBOLS = {"mu_right": "μ→", "mu_left": "μ←", "noise": "s", "time_scale": "c"}


def row(knob: str, start: str, fit) -> str:
    chi2 = fit["chi2_per_dof"].values.ravel()
    chi2 = chi2[np.isfinite(chi2)]
    q = np.percentile(chi2, [0, 25, 50, 75, 100])
    ok = fit["acceptable"].values
    bounded = ", ".join(f"{SYMBOLS[p]} {int((~fit[f'{p}_unbounded'].values[ok]).sum())}"
                        for p in PARAMS)
    residual = np.nanmedian(fit["residual"].values)
    return (f"| {knob} | {start} | {' / '.join(f'{v:.3g}' for v in q)} | {residual:.3f} | "
            f"{int(ok.sum())} of {chi2.size} | {bounded if ok.any() else '–'} |")


def main(folder: str = "figures/paper") -> None:
    sweeps = {k: p for k in KNOB_ORDER if (p := Path(folder) / f"dnn_{k}.nc").exists()}
    if not sweeps:
        raise ConfigError(f"no dnn_<knob>.nc in {folder}")
    print("| knob | chain starts | χ²/dof min / q1 / median / q3 / max | median residual "
          "(of the final drop) | cells within seed noise (χ²/dof ≤ 2) | of those, bounded "
          "intervals |")
    print("|---|---|---|---|---|---|")
    t0 = time.process_time()
    for knob, path in sweeps.items():
        network = results.load(path, kind="dnnphase.sweep")
        for start in ("rest", "network"):
            print(row(knob, start, fit_sweep_trajectory(network, start=start)), flush=True)
    print(f"\n({time.process_time() - t0:.0f} s of CPU for {2 * len(sweeps)} fitted diagrams)")


def cli(argv=None) -> None:
    """The command line: bad input is one line and exit code 2, as every command's."""
    sys.exit(folder_command(__doc__.split("\n\n")[0], main, argv))


if __name__ == "__main__":
    cli()
