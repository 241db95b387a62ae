"""The ledger of the papers' claims, from the committed result files.

    python scripts/claims.py --overwrite   # rewrites docs/claims.md and docs/claims.json
    python scripts/claims.py --check       # exit 1 if either is not what the files say
    python scripts/claims.py --root DIR --out FILE   # FILE and FILE's .json beside it

An existing ledger (the committed one included) is replaced only with ``--overwrite``,
and then whole: both files or neither.

Every row is computed from files under ``--root`` (default: this checkout) by the topic
modules of :mod:`phaseclaims`; nothing is trained or simulated here. Each
row's rule is dated against its files from the checkout's git history
(:mod:`phaseclaims.history`); without one (no git, a shallow clone) the dates
are taken from the committed ``docs/claims.json`` and a note says so.
"""

from __future__ import annotations

import difflib
import json
import os
import sys
import uuid
from pathlib import Path

from phaseclaims import collect, record, render
from phaseclaims.history import UNKNOWN, History
from phaseclaims.rules import RULE_TEXT
from phasecore.commandline import Parser

# The ledger's closing section: the linear-is-best rule in its own words.
APPENDIX = [("The rule for highest accuracy where linear", RULE_TEXT)]

ROOT = Path(__file__).resolve().parents[1]


def json_path(out: Path) -> Path:
    """The machine-readable ledger written beside ``out``: the same name, ``.json``."""
    return out.with_suffix(".json") if out.suffix != ".json" else out.with_name(
        out.name + ".json")


def histories(root: Path, sections) -> dict:
    """Per row, ``(id, claim)`` -> its rule's history: from git, or from the committed
    record where git cannot say (a note on stderr)."""
    history = History(root)
    rows = [c for _, claims in sections for c in claims]
    if history.available:
        return {(c.id, c.claim): history.dating(c.rule, c.files).state for c in rows}
    kept = {}
    try:
        kept = {(r["id"], r["claim"]): r["rule_history"] for r in
                json.loads((root / "docs" / "claims.json").read_text())}
    except (OSError, ValueError, KeyError, TypeError):
        pass
    print(f"note: the rules' history cannot be read here ({history.reason}); it is taken "
          f"from the committed docs/claims.json ({len(kept)} rows)", file=sys.stderr)
    return {(c.id, c.claim): kept.get((c.id, c.claim), UNKNOWN) for c in rows}


def write_atomic(texts: dict[Path, str]) -> None:
    """Write every file whole or none: each text to a temporary file in its folder, then
    all moved into place (a full disk leaves the old files as they were)."""
    temps = {}
    try:
        for path, text in texts.items():
            # a unique name opened exclusively, with the user's umask (mkstemp's 0600 would
            # hide the ledger from everyone else)
            name = path.with_name(f".{path.name}.{os.getpid()}.{uuid.uuid4().hex[:8]}.tmp")
            temps[path] = name
            with open(name, "x", encoding="utf-8") as f:
                f.write(text)
                f.flush()
                os.fsync(f.fileno())
        for path, name in temps.items():
            os.replace(name, path)
    finally:
        for name in temps.values():
            if os.path.exists(name):
                os.unlink(name)


def _check_target(parser: Parser, out: Path, check: bool, overwrite: bool) -> None:
    """Refuse an --out that cannot be the ledger's file, before any work."""
    if out.suffix.lower() != ".md":  # the JSON goes beside it, under the same stem
        parser.error(f"--out must name the Markdown ledger, a file ending in .md (its JSON "
                     f"is written beside it), got {str(out)!r}")
    for path in (out, json_path(out)):
        if path.is_dir():
            parser.error(f"--out must name a file, not a folder (got {str(path)!r})")
        if path.exists() and not path.is_file():
            parser.error(f"--out must name a regular file (got {str(path)!r}, which is not "
                         "one: a pipe, a device or a socket)")
    if check:
        return
    if out.parent.exists() and not out.parent.is_dir():
        parser.error(f"--out: {str(out.parent)!r} is a file, not a folder")
    if not out.parent.is_dir():
        parser.error(f"--out: folder {str(out.parent)!r} does not exist")
    if not os.access(out.parent, os.W_OK | os.X_OK):
        parser.error(f"--out: folder {str(out.parent)!r} is not writable")
    for path in (out, json_path(out)):
        if path.exists() and not overwrite:
            parser.error(f"--out: {str(path)!r} exists; add --overwrite to replace it (the "
                         "ledger's two files are replaced together, or neither)")
        if path.exists() and not os.access(path, os.W_OK):
            parser.error(f"--out: {str(path)!r} is not writable")


def rerun(root: Path, out: Path | None, overwrite: bool = False) -> str:
    """The command that writes the ledger ``--check`` read (its --root and --out as given:
    without them it writes the committed docs/claims.md, not the file checked), with
    ``--overwrite`` where a file is there to replace."""
    options = ([] if root.resolve() == ROOT else ["--root", str(root)]) + (
        [] if out is None else ["--out", str(out)]) + (["--overwrite"] if overwrite else [])
    return " ".join(["python scripts/claims.py", *options])


def main(argv: list[str] | None = None) -> int:
    parser = Parser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--root", default=str(ROOT),
                        help="the checkout whose committed files are read (default: this one)")
    parser.add_argument("--out", default=None,
                        help="the ledger's Markdown file; its .json is written beside it "
                             "(default: ROOT/docs/claims.md)")
    parser.add_argument("--check", action="store_true",
                        help="write nothing; exit 1 if a file differs from what the files say")
    parser.add_argument("--overwrite", action="store_true",
                        help="replace an existing ledger (default: refuse, naming the file)")
    args = parser.parse_args(argv)
    root = Path(args.root)
    if not (root / "figures").is_dir():
        parser.error(f"--root must be a checkout with a figures/ folder (got {args.root!r})")
    if args.out is not None and not args.out.strip():
        parser.error("--out must name a file (got an empty name)")
    out = Path(args.out) if args.out is not None else root / "docs" / "claims.md"
    _check_target(parser, out, args.check, args.overwrite)
    command = rerun(root, None if args.out is None else out,
                    overwrite=any(path.exists() for path in (out, json_path(out))))
    missing = [path for path in (out, json_path(out)) if args.check and not path.is_file()]
    if missing:  # one line, naming the command that writes these very files
        print(f"{' and '.join(map(str, missing))} {'is' if len(missing) == 1 else 'are'} "
              f"missing: run {command} to write {'it' if len(missing) == 1 else 'them'}",
              file=sys.stderr)
        return 1
    try:
        sections = collect(root)
    except FileNotFoundError as err:
        parser.error(f"--root must be a checkout holding the committed result files "
                     f"({err.filename or err} is missing)")
    dates = histories(root, sections)
    texts = {out: render(sections, dates, APPENDIX), json_path(out): record(sections, dates)}
    if args.check:
        stale = 0
        for path, text in texts.items():
            old = path.read_text()
            if old != text:
                sys.stdout.writelines(difflib.unified_diff(
                    old.splitlines(True), text.splitlines(True), str(path), "from the files"))
                print(f"{path} is out of date: run {command}", file=sys.stderr)
                stale += 1
        if stale:
            return 1
        print(f"{out} and {json_path(out).name}: up to date")
        return 0
    try:
        write_atomic(texts)
    except OSError as err:
        print(f"claims.py: cannot write {out}: {err.strerror or err} (the old files are "
              "untouched)", file=sys.stderr)
        return 1
    print(f"wrote {out} and {json_path(out).name}")
    return 0


def cli(argv: list[str] | None = None) -> int:
    """:func:`main` as a command: Ctrl-C is one line and exit 130, not a traceback."""
    try:
        return main(argv)
    except KeyboardInterrupt:
        print("claims.py: interrupted; the ledger's files are whole (each as it was, or "
              "rewritten); rerun the same command", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(cli())
