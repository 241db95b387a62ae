"""The ledger of the papers' claims, from the committed result files.

    python scripts/claims.py            # writes docs/claims.md
    python scripts/claims.py --check    # exit 1 if docs/claims.md is not what the files say
    python scripts/claims.py --root DIR --out FILE

Every row is computed from files under ``--root`` (default: this checkout) by the topic
modules of :mod:`dnnphase.compare.claims`; nothing is trained or simulated here (seconds).
"""

from __future__ import annotations

import difflib
import sys
from pathlib import Path

from dnnphase.compare.claims import collect, render
from phasecore.commandline import Parser

ROOT = Path(__file__).resolve().parents[1]


def main(argv: list[str] | None = None) -> int:
    parser = Parser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--root", default=str(ROOT),
                        help="the checkout whose committed files are read (default: this one)")
    parser.add_argument("--out", default=None,
                        help="the ledger's file (default: ROOT/docs/claims.md)")
    parser.add_argument("--check", action="store_true",
                        help="write nothing; exit 1 if the file differs from what the files say")
    args = parser.parse_args(argv)
    root = Path(args.root)
    if not (root / "figures").is_dir():
        parser.error(f"--root must be a checkout with a figures/ folder (got {args.root!r})")
    if args.out is not None and not args.out.strip():
        parser.error("--out must name a file (got an empty name)")
    out = Path(args.out) if args.out is not None else root / "docs" / "claims.md"
    if out.is_dir():
        parser.error(f"--out must name a file, not a folder (got {str(out)!r})")
    if not args.check and not out.parent.is_dir():
        parser.error(f"--out: folder {str(out.parent)!r} does not exist")
    try:
        text = render(collect(root))
    except FileNotFoundError as err:
        parser.error(f"--root must be a checkout holding the committed result files "
                     f"({err.filename or err} is missing)")
    if args.check:
        old = out.read_text() if out.is_file() else ""
        if old != text:
            sys.stdout.writelines(difflib.unified_diff(
                old.splitlines(True), text.splitlines(True), str(out), "from the files"))
            print(f"{out} is out of date: run python scripts/claims.py", file=sys.stderr)
            return 1
        print(f"{out}: up to date")
        return 0
    out.write_text(text)
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
