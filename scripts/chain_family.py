"""A small family of principled chains against the committed network diagrams.

    python scripts/chain_family.py [figures/paper] [--workers 2] [--overwrite]

Each variant of :mod:`springblock.fit.variants` (a time map from epochs to chain time,
noise that decays over training, a friction profile along the chain) adds one number shared
by a whole diagram to the paper's chain. For every ``dnn_<knob>.nc`` of the folder:

* trajectories (:func:`dnnphase.compare.comparator.family.trajectory_family`): every cell's training
  trajectory fitted with each variant at each of its fixed candidate values; the value with the
  lowest total chi2 kept; cells explained within seed noise (chi2/dof <= 2), chi2/dof quartiles,
  parameters and AIC / BIC against the paper's chain; written as ``family_<knob>.nc``;
* held-out cells (:func:`dnnphase.compare.comparator.family.held_out_family`): the variant's chain
  map on the checkerboard and every-other-column splits, its number chosen on each fold's training
  cells, against the local mean of the nearest training cells; ``family_held_out_<knob>.nc``.

Prints both tables (docs/fit.md, "A family of chains"). Existing family files are replaced
only with ``--overwrite``. The fits run in parallel, one process per worker (each one thread):
about 12 minutes of CPU in all, 7 on 2 cores; an estimate first, a progress line as fits
finish; Ctrl-C keeps the finished fits (``chain_family.nc.parts/``) and the same command
resumes.
``--tables-only`` prints the tables from the files already written; ``--against OTHER``
compares them with another folder's (a run under other CPU kernels: docs/fit.md).
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import numpy as np

from phasecore.commandline import Parser, overwrite_option, run
from phasecore.results import check_new_outputs

KNOB_ORDER = ("dropout", "lr", "batch_size", "label_noise")
TITLES = {"dropout": "dropout", "lr": "learning rate", "batch_size": "batch size",
          "label_noise": "label + data noise"}


def run_piece(payload: tuple[str, str, str]):
    """One fit of one knob (``(folder, knob, "trajectory" | "held_out")``), as a Dataset."""
    from dnnphase.compare.comparator.family import held_out_family, trajectory_family
    from phasecore import results

    folder, knob, which = payload
    sweep = results.load(Path(folder) / f"dnn_{knob}.nc", kind="dnnphase.sweep")
    return (trajectory_family if which == "trajectory" else held_out_family)(sweep)


def shown(name: str, value: float) -> str:
    """A kept value; at an end of the variant's candidates (not the paper chain's) "≤ v" or
    "≥ v": the cost may fall further beyond, so it is a bound, not an optimum."""
    from springblock.fit.variants import FAMILY

    values = FAMILY[name][1]
    if value == values[0] and value < values[len(values) // 2]:
        return f"≤ {value:g}"
    if value == values[-1] and value > values[len(values) // 2]:
        return f"≥ {value:g}"
    return f"{value:g}"


def trajectory_rows(knob: str, fam) -> list[str]:
    """One table line per variant: value, explained cells, chi2/dof quartiles, k, dAIC, dBIC."""
    lines = []
    paper = fam.sel(variant="paper chain")
    for name in fam["variant"].values:
        row = fam.sel(variant=name)
        value = "–" if name == "paper chain" else shown(name, float(row["best_value"]))
        lines.append(
            f"| {TITLES[knob]} | {name} | {value} | {int(row['explained'])} of "
            f"{int(row['cells'])} | {float(row['chi2_q1']):.3g} / "
            f"{float(row['chi2_median']):.3g} / {float(row['chi2_q3']):.3g} | "
            f"{int(row['parameters'])} | {float(row['aic'] - paper['aic']):+.0f} | "
            f"{float(row['bic'] - paper['bic']):+.0f} |")
    return lines


def total_rows(fams: dict) -> list[str]:
    """One line per chain over all diagrams: explained cells of all, summed dAIC and dBIC."""
    first = next(iter(fams.values()))
    lines = []
    for name in first["variant"].values:
        rows = [f.sel(variant=name) for f in fams.values()]
        papers = [f.sel(variant="paper chain") for f in fams.values()]
        explained = sum(int(r["explained"]) for r in rows)
        cells = sum(int(r["cells"]) for r in rows)
        d_aic = sum(float(r["aic"] - q["aic"]) for r, q in zip(rows, papers, strict=True))
        d_bic = sum(float(r["bic"] - q["bic"]) for r, q in zip(rows, papers, strict=True))
        lines.append(f"| all {len(fams)} | {name} | – | {explained} of {cells} | – | – | "
                     f"{d_aic:+.0f} | {d_bic:+.0f} |")
    return lines


def shared_rows(fams: dict) -> list[str]:
    """One value of each variant for every diagram (one network family, four knobs): the value
    with the lowest joint AIC, one parameter more than the paper's chain in all. Each diagram
    keeps its own likelihood scale, so the joint -2 log L is sum_d n_d log(chi2_d / n_d), and
    against the paper's chain dAIC = sum_d n_d log(chi2_d / chi2_d,paper) + 2, dBIC the same
    + log(sum_d n_d) in place of the 2."""
    first = next(iter(fams.values()))
    lines = []
    for name in first["variant"].values[1:]:
        rows = [f.sel(variant=name) for f in fams.values()]
        n = np.array([float(r["points"]) for r in rows])[:, None]  # (diagrams, 1)
        chi2 = np.array([r["total_chi2"].values for r in rows])  # (diagrams, candidates)
        paper = np.array([float(f["chi2"].sel(variant="paper chain"))
                          for f in fams.values()])[:, None]
        gain = (n * np.log(chi2 / paper)).sum(axis=0)  # (candidates,)
        best = int(np.nanargmin(gain))
        explained = sum(int(r["candidate_explained"][best]) for r in rows)
        lines.append(f"| all {len(fams)}, one value | {name} | "
                     f"{shown(name, float(rows[0]['value'][best]))} | {explained} of "
                     f"{sum(int(r['cells']) for r in rows)} | – | – | {gain[best] + 2:+.0f} | "
                     f"{gain[best] + np.log(n.sum()):+.0f} |")
    return lines


def compare_folders(folder: Path, other: Path, knobs) -> None:
    """How far another run's family files (e.g. under other CPU kernels) are from these: the
    kept values, explained cells and chosen held-out values, and how much the candidates' total
    chi2 moved against the margin by which the kept one wins."""
    from phasecore import results

    for knob in knobs:
        a, b = (results.load(f / f"family_{knob}.nc") for f in (folder, other))
        same = bool(np.array_equal(a["best_value"].values, b["best_value"].values,
                                   equal_nan=True)
                    and np.array_equal(a["explained"].values, b["explained"].values))
        chi2 = a["total_chi2"].values
        moved = float(np.nanmax(np.abs(chi2 / b["total_chi2"].values - 1)))
        ranked = np.sort(chi2[1:], axis=1)  # the variants' candidates, best first
        margin = float(np.nanmin(ranked[:, 1] / ranked[:, 0] - 1))
        ha, hb = (results.load(f / f"family_held_out_{knob}.nc") for f in (folder, other))
        chosen = bool(np.array_equal(ha["chosen"].values, hb["chosen"].values, equal_nan=True))
        rms = float(np.nanmax(np.abs(ha["rmse"].values - hb["rmse"].values)))
        cost = np.sort(ha["search_cost"].values, axis=-1)
        held_margin = float(np.nanmin(cost[..., 1] / cost[..., 0] - 1))
        cost_moved = float(np.nanmax(np.abs(ha["search_cost"].values
                                            / hb["search_cost"].values - 1)))
        print(f"{knob}: trajectories — same kept values and explained cells: {same}; the "
              f"candidates' total chi2 moved by <= {moved:.1e} (relative), the kept one wins by "
              f">= {margin:.1e}; held out — same chosen values: {chosen}, the candidates' "
              f"training cost moved by <= {cost_moved:.1e}, the chosen one wins by >= "
              f"{held_margin:.1e}, RMSE moved by <= {rms:.1e}")


def held_out_rows(knob: str, fam, prediction) -> list[str]:
    """One line per split: the paper chain, each variant (its chosen values), the local mean."""
    from dnnphase.compare.comparator.prediction import SPLITS

    lines = []
    for split in SPLITS:
        cells = [f"{prediction.attrs[f'{split}_chain_rmse']:.3f}"]
        for name in fam["variant"].values:
            chosen = ", ".join(shown(name, v) for v in np.unique(fam["chosen"].sel(
                variant=name, split=split).values))
            cells.append(f"{float(fam['rmse'].sel(variant=name, split=split)):.3f} ({chosen})")
        cells.append(f"{float(fam['local_rmse'].sel(split=split)):.3f}")
        cells.append(f"{prediction.attrs[f'{split}_floor']:.3f}")
        lines.append(f"| {TITLES[knob]} | {split} | " + " | ".join(cells) + " |")
    return lines


def main(argv=None) -> int:
    """The command line: bad input is one line and exit code 2; Ctrl-C exit code 130 (the
    same command resumes: finished fits are kept)."""
    parser = Parser(description=__doc__.split("\n\n")[0])
    parser.add_argument("folder", nargs="?", default="figures/paper",
                        help="the folder holding dnn_<knob>.nc")
    parser.add_argument("--workers", type=int, default=min(2, os.cpu_count() or 1),
                        help="processes, one fit each (default: 2 or the cores)")
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--tables-only", action="store_true",
                      help="print the tables from the family_*.nc files already written")
    mode.add_argument("--against", metavar="FOLDER", type=Path,
                      help="only compare the family_*.nc files with another folder's "
                           "(e.g. a run under other CPU kernels)")
    overwrite_option(parser, "family_<knob>.nc files")
    parser.set_defaults(func=lambda args: work(parser, args))
    return run(parser, argv)


def work(parser: Parser, args) -> None:
    from phasecore import results
    from phasecore.sweeps import files_digest, run_into_files

    if args.workers < 1:
        parser.error(f"--workers must be an integer >= 1 (got {args.workers})")
    folder = Path(args.folder)
    knobs = [k for k in KNOB_ORDER if (folder / f"dnn_{k}.nc").exists()]
    if not knobs:
        parser.error(f"no dnn_<knob>.nc in {folder}")
    # every file the chosen mode reads, before any work: the tables need the prediction files
    needed = [f"prediction_{k}.nc" for k in knobs] if args.against is None else []
    if args.tables_only or args.against is not None:
        needed += [f"{f}_{k}.nc" for k in knobs for f in ("family", "family_held_out")]
    missing = [str(folder / n) for n in needed if not (folder / n).exists()]
    if args.against is not None:
        missing += [str(args.against / f"{f}_{k}.nc") for k in knobs
                    for f in ("family", "family_held_out")
                    if not (args.against / f"{f}_{k}.nc").exists()]
    if missing:
        parser.error(f"missing {', '.join(missing)} (prediction_<knob>.nc: python "
                     "scripts/prediction.py FOLDER; family files: this script without "
                     "--tables-only / --against)")
    sweeps = [folder / f"dnn_{k}.nc" for k in knobs]
    for path in sweeps:  # a corrupt or foreign sweep is one line, before any work
        results.load(path, kind="dnnphase.sweep")
    if args.against is not None:
        compare_folders(folder, args.against, knobs)
        return
    t0 = time.time()
    if not args.tables_only:
        pieces = [(str(folder), k, which) for k in knobs for which in ("trajectory", "held_out")]
        outputs = [folder / (f"family_{k}.nc" if which == "trajectory"
                             else f"family_held_out_{k}.nc") for _, k, which in pieces]
        check_new_outputs(outputs, args.overwrite)
        workers = min(args.workers, len(pieces))
        announce = (f"chain_family: {len(pieces)} fits ({len(knobs)} knobs), {workers} "
                    f"worker(s): about {12 / workers * len(knobs) / 4:.0f} minutes (12 CPU "
                    "minutes for the four committed diagrams); a line as fits finish")
        run_into_files(run_piece, pieces, outputs, store=str(folder / "chain_family.nc"),
                       workers=workers, config={"pieces": pieces,
                                                "inputs": files_digest(sweeps)},
                       label="chain_family, one fit a chunk", overwrite=args.overwrite,
                       announce=announce)
    from phasecore import results

    print("Trajectories: every cell's training fitted by each chain (cells keep their own "
          "mu->, mu<-, s, c; the variant's number is shared by the diagram). ΔAIC, ΔBIC "
          "against the paper's chain (negative: the variant is preferred).")
    print()
    print("| knob | chain | shared value | cells within seed noise (χ²/dof ≤ 2) | χ²/dof q1 / "
          "median / q3 | parameters | ΔAIC | ΔBIC |")
    print("|---|---|---|---|---|---|---|---|")
    fams = {knob: results.load(folder / f"family_{knob}.nc") for knob in knobs}
    for knob, fam in fams.items():
        print("\n".join(trajectory_rows(knob, fam)))
    print("\n".join(total_rows(fams)))
    if len(fams) > 1:
        print("\n".join(shared_rows(fams)))
    print()
    print("Held-out cells: RMSE of the seed-mean curvature; each variant's number chosen on "
          "the training cells of each fold (in brackets).")
    print()
    print("| knob | split | paper chain | decaying noise | friction profile | local mean | "
          "seed-noise floor |")
    print("|---|---|---|---|---|---|---|")
    for knob in knobs:
        fam = results.load(folder / f"family_held_out_{knob}.nc")
        prediction = results.load(folder / f"prediction_{knob}.nc")
        print("\n".join(held_out_rows(knob, fam, prediction)))
    print(f"\n({time.time() - t0:.0f} s)", file=sys.stderr)


if __name__ == "__main__":
    sys.exit(main())
