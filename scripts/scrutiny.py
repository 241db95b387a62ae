"""This project's own claims about the chain, recomputed the other way (docs/fit.md and
docs/prediction.md, "Our own claims, checked").

    python scripts/scrutiny.py [figures/paper] [--draws 30] [--workers 2] [--tables-only]
                               [--overwrite]

For every ``dnn_<knob>.nc`` of the folder with its ``family_<knob>.nc`` and
``family_held_out_<knob>.nc`` (:func:`dnnphase.compare.scrutiny.own_claims.scrutiny`): the family's
ΔAIC with one Gaussian scale per cell beside the file's one per diagram; cells within seed noise
with each cell's own seed variance beside the pooled one; on held-out cells, the interpolation
along the knob alone beside the other predictors, an extrapolation split (the first and last
knob columns held out), and paired 95 % intervals over seed resamples for the differences of
two RMSEs. Writes ``scrutiny_<knob>.nc`` beside the sweep (existing ones only with
``--overwrite``) and prints the tables. The knobs run in parallel, one process per worker (the
committed files: 21 minutes on 2 cores shared with other work, 4-5 minutes of CPU per worker);
it prints its estimate first and a progress line as each knob finishes; Ctrl-C keeps the
finished knobs in ``scrutiny.nc.parts/`` and the same command resumes. ``--tables-only``
prints the tables from the files already written.
"""

from __future__ import annotations

import math
import os
import sys
import time
from pathlib import Path

import numpy as np

from phasecore.checks import ConfigError
from phasecore.commandline import Parser, overwrite_option, run
from phasecore.results import check_new_outputs

KNOB_ORDER = ("dropout", "lr", "batch_size", "label_noise")
TITLES = {"dropout": "dropout", "lr": "learning rate", "batch_size": "batch size",
          "label_noise": "label + data noise"}
NAMES = {"chain": "chain", "additive": "additive", "saturating": "saturating",
         "decaying noise": "decaying noise", "friction profile": "friction profile",
         "local": "local mean", "row": "row"}
FITTED = ("chain", "additive", "saturating", "decaying noise", "friction profile")
FREE = ("local", "row")
DEFAULT_DRAWS = 30


def run_knob(payload: tuple[str, str, int]):
    """The scrutiny of one knob (``(folder, knob, draws)``), as a Dataset."""
    from dnnphase.compare.scrutiny.own_claims import scrutiny
    from phasecore import results

    folder, knob, draws = payload
    folder = Path(folder)
    return scrutiny(results.load(folder / f"dnn_{knob}.nc"),
                    results.load(folder / f"family_{knob}.nc"),
                    results.load(folder / f"family_held_out_{knob}.nc"), draws=draws)


def shown(value: float, digits: str = "+.0f") -> str:
    return "–" if not np.isfinite(value) else format(value, digits)


def trajectory_rows(knob: str, ds) -> list[str]:
    """One line per chain: kept value, ΔAIC both ways, explained both ways, medians."""
    lines = []
    for name in ds["variant"].values:
        row = ds.sel(variant=name)
        value = "–" if name == "paper chain" else f"{float(row['best_value']):g}"
        lines.append(
            f"| {TITLES[knob]} | {name} | {value} | "
            f"{float(row['delta_aic_diagram_scale']):+.0f} | "
            f"{float(row['delta_aic_cell_scale']):+.0f} | {int(row['explained_pooled'])} / "
            f"{int(row['explained_own'])} of {int(row['trajectory_cells'])} | "
            f"{float(row['chi2_median_pooled']):.3g} / {float(row['chi2_median_own']):.3g} |")
    return lines


def total_rows(sets: dict) -> list[str]:
    """One line per chain over all diagrams: summed ΔAIC both ways, explained both ways."""
    first = next(iter(sets.values()))
    lines = []
    for name in first["variant"].values:
        rows = [d.sel(variant=name) for d in sets.values()]
        total = {k: sum(float(r[k]) for r in rows) for k in
                 ("delta_aic_diagram_scale", "delta_aic_cell_scale")}
        lowered = {k: sum(float(r[k]) < 0 for r in rows) for k in total}
        pooled = sum(int(r["explained_pooled"]) for r in rows)
        own = sum(int(r["explained_own"]) for r in rows)
        cells = sum(int(r["trajectory_cells"]) for r in rows)
        note = ("" if name == "paper chain" else
                f" (lower in {lowered['delta_aic_diagram_scale']} / "
                f"{lowered['delta_aic_cell_scale']} of {len(rows)})")
        lines.append(f"| all {len(rows)} | {name} | – | "
                     f"{total['delta_aic_diagram_scale']:+.0f} | "
                     f"{total['delta_aic_cell_scale']:+.0f}{note} | {pooled} / {own} of "
                     f"{cells} | – |")
    return lines


def variance_row(knob: str, ds) -> str:
    ratio = ds["own_to_pooled"].values
    q = np.nanpercentile(ratio, [25, 50, 75])
    return (f"| {TITLES[knob]} | {q[0]:.2f} / {q[1]:.2f} / {q[2]:.2f} | "
            f"{int(np.sum(ratio > 1))} of {int(np.isfinite(ratio).sum())} |")


def held_out_rows(knob: str, ds) -> list[str]:
    """One line per split: every predictor's RMSE (best in bold), the floor, local / floor."""
    lines = []
    for split in ds["split"].values:
        err = {p: float(ds["rmse"].sel(predictor=p, split=split)) for p in NAMES}
        best = min((p for p in err if np.isfinite(err[p])), key=err.get)
        floor = float(ds["floor"].sel(split=split))
        cells = " | ".join("–" if not np.isfinite(err[p]) else
                           f"**{err[p]:.3f}**" if p == best else f"{err[p]:.3f}" for p in NAMES)
        lines.append(f"| {TITLES[knob]} | {split} | {int(ds['cells'].sel(split=split))} | "
                     f"{cells} | {floor:.3f} | {err['local'] / floor:.2f}× / "
                     f"{err['row'] / floor:.2f}× |")
    return lines


def interval(ds, first: str, second: str, split: str) -> str:
    from dnnphase.compare.scrutiny.own_claims import paired_interval

    diff, low, high = paired_interval(ds, first, second, split)
    return f"{diff:+.3f} [{low:+.3f}, {high:+.3f}]"


def best_of(ds, split: str, names) -> str:
    err = {p: float(ds["rmse"].sel(predictor=p, split=split)) for p in names}
    return min((p for p in err if np.isfinite(err[p])), key=err.get)


def paired_rows(knob: str, ds) -> list[str]:
    """One line per split: the best fitted minus the best parameter-free predictor, the
    chain minus the local mean, the chain minus the saturating map; paired 95 % intervals."""
    lines = []
    for split in ds["split"].values:
        fitted, free = best_of(ds, split, FITTED), best_of(ds, split, FREE)
        lines.append(f"| {TITLES[knob]} | {split} | {NAMES[fitted]} − {NAMES[free]}: "
                     f"{interval(ds, fitted, free, split)} | "
                     f"{interval(ds, 'chain', 'local', split)} | "
                     f"{interval(ds, 'chain', 'saturating', split)} |")
    return lines


def print_tables(sets: dict) -> None:
    draws = next(iter(sets.values())).attrs["draws"]
    print("Trajectories: ΔAIC against the paper's chain at the family's kept values, with one "
          "Gaussian scale per diagram (the family table's) and one per cell; cells within "
          "seed noise (χ²/dof ≤ 2) and the median χ²/dof with the seed variance pooled over "
          "the diagram (the family's weights) / each cell's own.")
    print()
    print("| knob | chain | kept value | ΔAIC, one scale per diagram | ΔAIC, one scale per "
          "cell | within seed noise: pooled / own variance | χ²/dof median: pooled / own |")
    print("|---|---|---|---|---|---|---|")
    for knob, ds in sets.items():
        print("\n".join(trajectory_rows(knob, ds)))
    print("\n".join(total_rows(sets)))
    print()
    print("A cell's own seed variance over the pooled one (averaged over its frames):")
    print()
    print("| knob | own / pooled: q1 / median / q3 | cells above the pooled |")
    print("|---|---|---|")
    for knob, ds in sets.items():
        print(variance_row(knob, ds))
    print()
    print("Held-out cells: RMSE of the seed-mean curvature (best in bold); edges: the first and "
          "the last knob column held out (extrapolation; the variants are not scored there); "
          "row: interpolation along the knob alone; the last column: local mean and row over "
          "the seed-noise floor.")
    print()
    print("| knob | split | held-out cells | " + " | ".join(NAMES.values())
          + " | seed-noise floor | local / floor, row / floor |")
    print("|---|---|---|" + "---|" * len(NAMES) + "---|---|")
    for knob, ds in sets.items():
        print("\n".join(held_out_rows(knob, ds)))
    print()
    print(f"Differences of RMSE (negative: the first is better) with paired 95 % intervals "
          f"(± 1.96 standard deviations of the difference over {draws} seed resamples: each "
          f"cell's seeds drawn with replacement, every predictor refitted to each draw):")
    print()
    print("| knob | split | best fitted − best parameter-free | chain − local mean | "
          "chain − saturating |")
    print("|---|---|---|---|---|")
    for knob, ds in sets.items():
        print("\n".join(paired_rows(knob, ds)))


#: CPU minutes of one knob at 30 draws (the committed files, 2 cores shared with other work).
MINUTES_PER_KNOB = 5.0
#: What each input must hold (checked before any work).
KINDS = {"dnn": "dnnphase.sweep", "family": "dnnphase.compare.trajectory_family",
         "family_held_out": "dnnphase.compare.held_out_family"}


def build_parser() -> Parser:
    parser = Parser(description=" ".join(__doc__.split("\n\n")[0].split()))
    parser.add_argument("folder", nargs="?", default="figures/paper",
                        help="the folder holding dnn_<knob>.nc and family_<knob>.nc "
                        "(default figures/paper)")
    parser.add_argument("--draws", type=int, default=None,
                        help=f"seed resamples per diagram (default {DEFAULT_DRAWS})")
    parser.add_argument("--workers", type=int, default=None,
                        help="processes, one knob each (default: 2 or the cores)")
    parser.add_argument("--tables-only", action="store_true",
                        help="print the tables from the scrutiny_*.nc files already written")
    overwrite_option(parser, "scrutiny_<knob>.nc files")
    parser.set_defaults(func=lambda args: work(parser, args))
    return parser


def check_inputs(folder: Path, knobs, tables_only: bool) -> list[Path]:
    """Every file this run reads, opened and of its kind, before any work (a corrupt or
    foreign file is one line naming it); returns them."""
    from phasecore import results

    names = ([("scrutiny", k) for k in knobs] if tables_only else
             [(f, k) for k in knobs for f in KINDS])
    paths = [folder / f"{f}_{k}.nc" for f, k in names]
    for (f, _), path in zip(names, paths, strict=True):
        try:
            results.load(path, kind=KINDS.get(f, "dnnphase.compare.scrutiny"))
        except (ValueError, OSError) as err:
            raise ConfigError(f"{err}") from None
    return paths


def work(parser: Parser, args) -> None:
    from phasecore import results
    from phasecore.sweeps import files_digest, run_into_files

    if args.tables_only and (args.draws is not None or args.workers is not None
                             or args.overwrite):
        parser.error("--tables-only computes nothing: give it without --draws, --workers or "
                     "--overwrite")
    args.draws = DEFAULT_DRAWS if args.draws is None else args.draws
    args.workers = min(2, os.cpu_count() or 1) if args.workers is None else args.workers
    if args.workers < 1:
        parser.error(f"--workers must be an integer >= 1 (got {args.workers})")
    if args.draws < 0:
        parser.error(f"--draws must be an integer >= 0 (got {args.draws})")
    folder = Path(args.folder)
    knobs = [k for k in KNOB_ORDER if (folder / f"dnn_{k}.nc").exists()]
    if not knobs:
        parser.error(f"no dnn_<knob>.nc in {folder}")
    needed = ([f"scrutiny_{k}.nc" for k in knobs] if args.tables_only else
              [f"{f}_{k}.nc" for k in knobs for f in ("family", "family_held_out")])
    missing = [str(folder / n) for n in needed if not (folder / n).exists()]
    if missing:
        parser.error(f"missing {', '.join(missing)} (family files: python "
                     "scripts/chain_family.py FOLDER; scrutiny files: this script without "
                     "--tables-only)")
    inputs = check_inputs(folder, knobs, args.tables_only)
    t0 = time.time()
    if not args.tables_only:
        outputs = [folder / f"scrutiny_{k}.nc" for k in knobs]
        check_new_outputs(outputs, args.overwrite)
        workers = min(args.workers, len(knobs))
        minutes = MINUTES_PER_KNOB * max(args.draws, 1) / DEFAULT_DRAWS * math.ceil(
            len(knobs) / workers)
        about = f"about {minutes:.0f} minutes" if minutes >= 1 else "under a minute"
        announce = (f"scrutiny: {len(knobs)} knobs, {args.draws} draws, {workers} worker(s): "
                    f"{about} ({MINUTES_PER_KNOB:g} CPU minutes a knob at {DEFAULT_DRAWS} "
                    "draws); a line as each knob finishes")
        run_into_files(run_knob, [(str(folder), k, args.draws) for k in knobs], outputs,
                       store=str(folder / "scrutiny.nc"), workers=workers,
                       config={"draws": args.draws, "knobs": knobs,
                               "inputs": files_digest(inputs)},
                       label="scrutiny, one knob a chunk", overwrite=args.overwrite,
                       announce=announce)
    print_tables({k: results.load(folder / f"scrutiny_{k}.nc") for k in knobs})
    print(f"\n({time.time() - t0:.0f} s)", file=sys.stderr)


def main(argv=None) -> int:
    """The command line: bad input is one line and exit code 2; Ctrl-C exit code 130 (the
    same command resumes: finished knobs are kept)."""
    return run(build_parser(), argv)


if __name__ == "__main__":
    sys.exit(main())
