"""Fig. S4, training vs test load curves: run it and write its result, figure and numbers.

    python scripts/train_test.py [figures/supplement] [--quick] [--lrs 1e-4,0.017,0.2]
                                 [--overwrite]

Writes ``train_test.nc`` (the sweep) and ``train_test.png`` in the folder (existing ones only
with ``--overwrite``) and prints,
per learning rate, the scale-free curvature of the training and test load curves and
the test accuracy (means over seeds). About 2 minutes on 2 cores (``--quick``: seconds).
``--lrs`` trains these learning rates instead of the preset's (the ledger's Fig. S4 row
reads ``figures/supplement/s4``, trained at 1e-4, 0.017 and 0.2: 0.017 is where the
training curve of Fig. 1b's ReLU row turns linear).
"""

from __future__ import annotations

import sys

import numpy as np

from dnnphase.sweeps.experiments import plot_train_test, train_test
from phasecore import results
from phasecore.checks import ConfigError
from phasecore.commandline import result_script
from phasecore.panels import save_figure
from phasecore.results import all_or_nothing, check_new_outputs, check_output_folder


def _lrs(text: str | None) -> dict:
    """``--lrs``: comma-separated positive learning rates, increasing."""
    if text is None:
        return {}
    try:
        values = tuple(float(v) for v in text.split(","))
    except ValueError:
        raise ConfigError(f"--lrs must be numbers separated by commas (got {text!r})") from None
    if not values or any(not v > 0 for v in values) or list(values) != sorted(set(values)):
        raise ConfigError(f"--lrs must be distinct positive numbers, increasing (got {text!r})")
    return {"values": values}


def main(folder: str = "figures/supplement", scale: str = "paper", lrs: str | None = None,
         overwrite: bool = False) -> None:
    changes = _lrs(lrs)
    folder = check_output_folder(folder)
    outputs = [folder / "train_test.nc", folder / "train_test.png"]
    check_new_outputs(outputs, overwrite)  # the default folder holds the committed ones
    ds = (train_test(scale, scheduler="processes", **changes) if scale == "paper"
          else train_test(scale, **changes))
    with all_or_nothing(outputs, folder):  # both files or neither (a full disk)
        results.save(ds, outputs[0], overwrite=True)
        save_figure(plot_train_test(ds), outputs[1])
    print("| lr | curvature, training | curvature, test | test accuracy |")
    print("|---|---|---|---|")
    for v in ds["lr"].values:
        cell = ds.sel(lr=v).isel(alpha=0, measure=0)
        row = [np.mean(cell[k].values) for k in ("curvature_scaled", "curvature_scaled_test",
                                                  "test_accuracy")]
        print(f"| {v:g} | {row[0]:+.2f} | {row[1]:+.2f} | {row[2]:.3f} |")


def cli(argv=None) -> None:
    """The command line: bad input is one line and exit code 2, as every command's."""
    lrs = ("--lrs", {"default": None,
                     "help": "these learning rates, comma-separated (default the preset's)"})
    sys.exit(result_script(__doc__.split("\n\n")[0], main, argv,
                           writes="train_test.nc and .png", options=[lrs]))


if __name__ == "__main__":
    cli()
