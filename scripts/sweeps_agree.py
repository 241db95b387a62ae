"""Do two runs of the same network sweeps agree? Per knob, cell by cell, in seed standard errors.

    python scripts/sweeps_agree.py figures/paper /path/to/rerun     # a second or so per knob

For every ``dnn_<knob>.nc`` the two folders share: how many cells' final load curves are bit
for bit equal, and the difference of the seed means of curvature (trace_ratio) and test
accuracy in standard errors of that difference (``dnnphase.compare.sweeps_agree``): median and
largest |z| and the cells beyond 2. For independent seeds about 5 % of cells lie beyond 2; a
re-run of the same seeds on another machine or version differs only by rounding, amplified by
training, and should lie well inside.
"""

from __future__ import annotations

import sys
from pathlib import Path

from dnnphase.compare import sweeps_agree
from phasecore.commandline import Parser, run


def table(first: Path, second: Path) -> str:
    """The agreement of every knob both folders hold, as a Markdown table."""
    knobs = sorted(p.name[4:-3] for p in first.glob("dnn_*.nc") if (second / p.name).exists())
    if not knobs:
        raise FileNotFoundError(f"no dnn_<knob>.nc is in both {str(first)!r} and "
                                f"{str(second)!r}")
    lines = ["| knob | cells | bit for bit | curvature: median / max abs(z) | beyond 2 | "
             "accuracy: median / max abs(z) | beyond 2 |", "|---|---:|---:|---|---:|---|---:|"]
    for knob in knobs:
        a = sweeps_agree(first / f"dnn_{knob}.nc", second / f"dnn_{knob}.nc").attrs
        lines.append(f"| {knob} | {a['curvature_z_cells']} | "
                     f"{'all' if a['bitwise_equal_runs'] else 'no'} | "
                     f"{a['curvature_z_median']:.2f} / {a['curvature_z_max']:.2f} | "
                     f"{a['curvature_z_beyond_2']} | {a['accuracy_z_median']:.2f} / "
                     f"{a['accuracy_z_max']:.2f} | {a['accuracy_z_beyond_2']} |")
    return "\n".join(lines)


def main(argv=None) -> None:
    """The command line: bad input is one line and exit code 2, as every command's."""
    parser = Parser(description=__doc__.split("\n\n")[0])
    parser.add_argument("first", type=Path, help="a folder of dnn_<knob>.nc sweeps")
    parser.add_argument("second", type=Path, help="the folder of the other run")
    parser.set_defaults(func=lambda args: print(table(args.first, args.second)))
    sys.exit(run(parser, argv))


if __name__ == "__main__":
    main()
