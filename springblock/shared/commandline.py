"""The command-line runner both packages' CLIs use.

It turns expected failures into one line and an exit code: bad input
(:class:`~springblock.shared.checks.ConfigError`, an existing output, a
missing file) -> ``<prog>: error: ...`` and 2; Ctrl-C -> 130 with a hint that
rerunning the same command resumes a sweep.
"""

from __future__ import annotations

import argparse
import sys

from springblock.shared.checks import ConfigError
from springblock.shared.results import OutputExistsError


def run(parser: argparse.ArgumentParser, argv=None) -> int:
    """Parse, run the chosen command, and turn expected failures into exit code 2.

    Shared by both packages' command lines: one-line ``<prog>: error: ...``
    messages for bad input, 130 on Ctrl-C (a sweep resumes when rerun).
    """
    args = parser.parse_args(argv)
    try:
        args.func(args)
    except (ConfigError, OutputExistsError, FileNotFoundError, ValueError) as err:
        print(f"{parser.prog}: error: {err}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"{parser.prog}: interrupted; rerun the same command to resume", file=sys.stderr)
        return 130
    return 0
