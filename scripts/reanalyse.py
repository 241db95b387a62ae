"""Re-analyse the committed sweeps without retraining: the comparison reports and their
figures, as ``dnnphase reproduce`` writes them.

    python scripts/reanalyse.py [figures figures/knobs figures/paper]
    python scripts/reanalyse.py --fits [figures/knobs figures/paper]

For every ``dnn_<knob>.nc`` in each folder: ``report_<knob>.nc`` (against the chain's
``figures/spring_phase.nc``), ``phase_<knob>.png`` and ``accuracy_<knob>.png`` — the same
calls as the preset's analysis (:mod:`dnnphase.compare.presets`), so a change to the
statistics or the figures reaches every committed result in seconds. Then print the paper
table with ``python scripts/paper_table.py figures/paper``.

``--fits``: instead, the final-curve fits ``fit_<knob>.nc`` and the figures drawn from them,
``fit_<knob>.png`` and ``dynamics_<knob>.png`` — again the preset's calls, with the preset's
horizon (the chain diagram's), friction ratio, starting grid and chain steps (about 1 min on
2 cores for figures/knobs and figures/paper); for a change to the fit.
"""

from __future__ import annotations

import sys
from pathlib import Path

from dnnphase.compare import compare, fit_chain
from dnnphase.compare.figures import comparison as figures
from dnnphase.compare.presets import PRESETS, _dynamics_figure
from dnnphase.knobs import larger_is_noisier
from phasecore import results
from phasecore.checks import ConfigError
from phasecore.commandline import Parser, overwrite_option, run
from phasecore.panels import save_figure
from phasecore.results import check_new_outputs

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


def refit(folder: Path, spring, preset: dict) -> list[Path]:
    """``fit_<knob>.nc``, ``fit_<knob>.png``, ``dynamics_<knob>.png`` as the preset's analysis."""
    written = []
    horizon = float(spring["horizon"].mean())
    for path in sorted(folder.glob("dnn_*.nc")):
        knob = path.stem.removeprefix("dnn_")
        network = results.load(path)
        fit = fit_chain(network, horizon=horizon,
                        mu_left_ratio=preset["spring"]["mu_left_ratio"],
                        grid=preset["fit_grid"], source=f"dnn_{knob}.nc")
        results.save(fit, folder / f"fit_{knob}.nc", overwrite=True)
        save_figure(figures.plot_fit(fit, knob, larger_is_noisier(network)),
                    folder / f"fit_{knob}.png")
        written += [folder / f"fit_{knob}.nc", folder / f"fit_{knob}.png"]
        if "load_curve_epochs" in network:
            save_figure(_dynamics_figure(network, fit, knob, preset["spring"]["steps"], horizon),
                        folder / f"dynamics_{knob}.png")
            written.append(folder / f"dynamics_{knob}.png")
    return written


#: The preset each folder's fits were made with (``--fits``).
FIT_PRESETS = {"figures": "quick", "figures/knobs": "knobs", "figures/paper": "paper"}


def outputs(folder: Path, fits: bool) -> list[Path]:
    """Every file :func:`reanalyse` (or, with ``fits``, :func:`refit`) may write in ``folder``."""
    knobs = [p.stem.removeprefix("dnn_") for p in sorted(folder.glob("dnn_*.nc"))]
    names = (("fit_{}.nc", "fit_{}.png", "dynamics_{}.png") if fits
             else ("report_{}.nc", "phase_{}.png", "accuracy_{}.png"))
    return [folder / name.format(knob) for knob in knobs for name in names]


def main(*args: str, overwrite: bool = False) -> None:
    fits = "--fits" in args
    folders = [a for a in args if a != "--fits"] or (
        ("figures/knobs", "figures/paper") if fits else FOLDERS)
    for folder in folders:  # every folder checked before any work
        if not any(Path(folder).glob("dnn_*.nc")):
            raise FileNotFoundError(f"no dnn_<knob>.nc in {folder!r} (a folder of sweeps)")
        if fits and folder.rstrip("/") not in FIT_PRESETS:
            raise ConfigError(f"--fits takes the folders {', '.join(FIT_PRESETS)}, whose fits "
                              f"were made with a known preset (got {folder!r})")
    check_new_outputs([p for folder in folders for p in outputs(Path(folder), fits)],
                      overwrite)
    spring = results.load(SPRING)
    for folder in folders:
        if fits:
            written = refit(Path(folder), spring, PRESETS[FIT_PRESETS[folder.rstrip("/")]])
        else:
            written = reanalyse(Path(folder), spring)
        for path in written:
            print(f"wrote {path}")


def cli(argv=None) -> None:
    """The command line: bad input is one line and exit code 2, as every command's."""
    parser = Parser(description=__doc__.split("\n\n")[0])
    parser.add_argument("folders", nargs="*", help="folders of dnn_<knob>.nc (default: "
                        f"{' '.join(FOLDERS)}; with --fits figures/knobs figures/paper)")
    parser.add_argument("--fits", action="store_true",
                        help="the final-curve fits and their figures instead of the reports")
    overwrite_option(parser, "reports, fits and figures")
    parser.set_defaults(func=lambda args: main(*args.folders, *(["--fits"] if args.fits
                                                                 else []),
                                               overwrite=args.overwrite))
    sys.exit(run(parser, argv))


if __name__ == "__main__":
    cli()
