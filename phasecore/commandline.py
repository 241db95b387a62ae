"""The command-line runner both packages' CLIs use.

It turns expected failures into one line and an exit code: bad input
(:class:`~phasecore.checks.ConfigError`, an existing output, a
missing file) -> ``<prog>: error: ...`` and 2; Ctrl-C -> 130 with a hint that
rerunning the same command resumes a sweep; warnings -> ``<prog>: warning: ...``.
"""

from __future__ import annotations

import argparse
import signal
import sys
import warnings

from phasecore.checks import ConfigError
from phasecore.executors import interrupt_once
from phasecore.progress import say
from phasecore.results import OutputExistsError

__all__ = ["Parser", "add_options", "folder_command", "integer", "output_options", "run",
           "scaled_figures_parser"]


class Parser(argparse.ArgumentParser):
    """An argument parser whose errors are one line (``prog: error: ...``, exit code 2),
    like every other bad input; ``--help`` still shows the usage."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        # the (sub)command that parsed the line, so an unknown option's error names its --help
        self.set_defaults(command_parser=self)

    def error(self, message):
        self.exit(2, f"{self.prog.split()[0]}: error: {message} (see {self.prog} --help)\n")


def integer(low: int, high: int | None = None):
    """An argparse ``type``: an integer in ``low..high`` (no upper bound when None), named
    "integer in low..high" (or "integer >= low") in argparse's one-line error."""

    def parse(text: str) -> int:
        value = int(text)
        if value < low or (high is not None and value > high):
            raise ValueError
        return value

    parse.__name__ = f"integer >= {low}" if high is None else f"integer in {low}..{high}"
    return parse


def add_options(group, table) -> None:
    """Declare command-line options from a table of rows
    ``(flag, dest, type, default, help)``; the default is shown in the help."""
    for flag, dest, typ, default, text in table:
        shown = "" if default is None else f" (default {default})"
        group.add_argument(flag, dest=dest, type=typ, default=default, help=text + shown)


def output_options(parser, what: str, quiet: bool = True) -> None:
    """``-o/--output`` (required), ``--overwrite`` and, for long jobs, ``--quiet``."""
    parser.add_argument("-o", "--output", required=True, help=what)
    parser.add_argument("--overwrite", action="store_true",
                        help="replace an existing output (never done silently)")
    if quiet:
        parser.add_argument("--quiet", action="store_true", help="no progress output")


def _one_line_warning(prog: str):
    """Warnings as ``<prog>: warning: ...``: a user of the command reads no file or line."""
    def show(message, category, filename, lineno, file=None, line=None):
        say(f"{prog}: warning: {message}", sys.stderr)  # above a progress bar
    return show


def run(parser: argparse.ArgumentParser, argv=None) -> int:
    """Parse, run the chosen command, and turn expected failures into exit codes.

    Shared by both packages' command lines: one-line ``<prog>: error: ...``
    messages for bad input (2), 130 on Ctrl-C or SIGTERM (a sweep resumes when
    rerun). Run as a program (``argv`` None), an interrupted command ignores
    further signals while it exits, so a second Ctrl-C cannot cut it short.
    """
    args, unknown = parser.parse_known_args(argv)
    if unknown:
        getattr(args, "command_parser", parser).error(
            f"unrecognized arguments: {' '.join(unknown)}")
    with interrupt_once(), warnings.catch_warnings():
        warnings.showwarning = _one_line_warning(parser.prog)
        try:
            args.func(args)
            return 0
        except (ConfigError, OutputExistsError, FileNotFoundError, ValueError) as err:
            print(f"{parser.prog}: error: {err}", file=sys.stderr)
            return 2
        except KeyboardInterrupt as err:
            detail = str(err) or "interrupted; rerun the same command to resume"
            print(f"{parser.prog}: {detail}", file=sys.stderr)
        finally:
            if argv is None:
                signal.signal(signal.SIGINT, signal.SIG_IGN)
                signal.signal(signal.SIGTERM, signal.SIG_IGN)
    return 130


def folder_command(description: str, main, argv=None, default: str = "figures/paper",
                   holds: str = "dnn_<knob>.nc") -> int:
    """Run ``main(folder)`` from a command line of one optional argument, the folder holding
    ``holds`` (the docs' scripts); bad input is one line and exit code 2."""
    parser = Parser(description=description)
    parser.add_argument("folder", nargs="?", default=default,
                        help=f"the folder holding {holds} (default {default})")
    parser.set_defaults(func=lambda args: main(args.folder))
    return run(parser, argv)


def scaled_figures_parser(description: str, *, folder, names, what: str, full: str,
                          quick: str, scales: dict[str, str] | None = None) -> Parser:
    """The options of a script that computes named figures at a scale into a folder:
    ``[FOLDER] [--only a,b] [--full | --quick] [--workers N]`` (``scale`` "reduced" unless
    ``--full`` or ``--quick``). ``names``: the figures ``--only`` picks from; ``what``: what
    they are called ("figures", "experiments"); ``full`` and ``quick``: what those scales
    are, for the help; ``scales``: more scales, name -> help, each a flag ``--<name>``.
    ``folder``: the default folder, or a mapping scale -> its default folder (the parsed
    ``folder`` is then None unless given: the caller takes the scale's)."""
    parser = Parser(description=description)
    default = folder if isinstance(folder, str) else None
    where = folder if default else "; ".join(f"{k}: {v}" for k, v in folder.items())
    parser.add_argument("folder", nargs="?", default=default,
                        help=f"output folder (created if missing; default {where})")
    parser.add_argument("--only", default=None,
                        help=f"these {what}, comma-separated, of {', '.join(names)} "
                             "(default: all)")
    scale = parser.add_mutually_exclusive_group()
    scale.add_argument("--full", action="store_const", dest="scale", const="full", help=full)
    scale.add_argument("--quick", action="store_const", dest="scale", const="quick",
                       help=quick)
    for name, text in (scales or {}).items():
        scale.add_argument(f"--{name}", action="store_const", dest="scale", const=name,
                           help=text)
    parser.add_argument("--workers", type=int, default=None,
                        help="worker processes (default: one per core; --quick: none)")
    parser.set_defaults(scale="reduced")
    return parser
