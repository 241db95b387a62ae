"""Re-analyse the committed sweeps without retraining: the comparison reports and their
figures, as ``dnnphase reproduce`` writes them.

    python scripts/reanalyse.py [figures figures/knobs figures/paper]

For every ``dnn_<knob>.nc`` in each folder: ``report_<knob>.nc`` (against the chain's
``figures/spring_phase.nc``), ``phase_<knob>.png`` and ``accuracy_<knob>.png`` — the same
calls as the preset's analysis (:mod:`dnnphase.compare.presets`), so a change to the
statistics or the figures reaches every committed result in seconds. The fits and
dynamics figures are left as they are (their code did not change). Then print the paper
table with ``python scripts/paper_table.py figures/paper``.
"""

from __future__ import annotations

import sys
from pathlib import Path

from dnnphase.compare import compare, figures
from phasecore import results
from phasecore.panels import save_figure

SPRING = Path("figures/spring_phase.nc")
FOLDERS = ("figures", "figures/knobs", "figures/paper")


def reanalyse(folder: Path, spring) -> list[Path]:
    written = []
    for path in sorted(folder.glob("dnn_*.nc")):
        knob = path.stem.removeprefix("dnn_")
        network = results.load(path)
        report = compare(spring, network)
        results.save(report, folder / f"report_{knob}.nc", overwrite=True)
        save_figure(figures.plot_side_by_side(spring, network), folder / f"phase_{knob}.png")
        written += [folder / f"report_{knob}.nc", folder / f"phase_{knob}.png"]
        if not report.attrs["accuracy_missing"]:
            save_figure(figures.plot_accuracy_vs_curvature(network, report),
                        folder / f"accuracy_{knob}.png")
            written.append(folder / f"accuracy_{knob}.png")
    return written


def main(*folders: str) -> None:
    spring = results.load(SPRING)
    for folder in folders or FOLDERS:
        for path in reanalyse(Path(folder), spring):
            print(f"wrote {path}")


if __name__ == "__main__":
    main(*sys.argv[1:])
