"""The command-line runner both packages' CLIs use.

It turns expected failures into one line and an exit code: bad input
(:class:`~phasecore.checks.ConfigError`, an existing output, a
missing file) -> ``<prog>: error: ...`` and 2; Ctrl-C -> 130 (SIGTERM 143) with a hint that
rerunning the same command resumes a sweep; warnings -> ``<prog>: warning: ...``.
"""

from __future__ import annotations

import argparse
import shlex
import signal
import sys
import warnings

from phasecore.checks import ConfigError
from phasecore.executors import interrupt_once
from phasecore.progress import say
from phasecore.results import OutputExistsError

__all__ = ["DefaultsFormatter", "Parser", "add_options", "checked_script", "folder_command",
           "integer", "guarded", "output_options", "overwrite_option", "result_script", "run",
           "scaled_figures_parser"]


class DefaultsFormatter(argparse.HelpFormatter):
    """Help that shows every option's default: ``(default: X)`` is added to a help text
    that does not say its default already (an option that is off by default, or whose
    default is None, i.e. computed, says so in its own words)."""

    def _get_help_string(self, action):
        text = action.help or ""
        default = action.default
        if ("default" in text.lower() or action.nargs == 0  # a flag: off unless given
                or default is None or default is argparse.SUPPRESS):
            return text
        if isinstance(default, list | tuple):  # as the option takes it: words or a comma list
            shown = (" ".join(shlex.quote(str(v)) for v in default)
                     if action.nargs in ("+", "*") else ",".join(map(str, default)))
        else:
            shown = default
        return f"{text} (default: {str(shown).replace('%', '%%')})".lstrip()


class Parser(argparse.ArgumentParser):
    """An argument parser whose errors are one line (``prog: error: ...``, exit code 2),
    like every other bad input; ``--help`` still shows the usage and every default."""

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("formatter_class", DefaultsFormatter)
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


def overwrite_option(parser, what: str = "outputs") -> None:
    """``--overwrite``: a script's existing ``what`` are replaced only when it is given
    (:func:`phasecore.results.check_new_outputs`, before any work)."""
    parser.add_argument("--overwrite", action="store_true",
                        help=f"replace existing {what} (never done silently; default: refuse "
                             "before any work)")


def _one_line_warning(prog: str):
    """Warnings as ``<prog>: warning: ...``: a user of the command reads no file or line."""
    def show(message, category, filename, lineno, file=None, line=None):
        say(f"{prog}: warning: {message}", sys.stderr)  # above a progress bar
    return show


def run(parser: argparse.ArgumentParser, argv=None) -> int:
    """Parse, run the chosen command, and turn expected failures into exit codes.

    Shared by both packages' command lines: one-line ``<prog>: error: ...``
    messages for bad input (2), 130 on Ctrl-C and 143 on SIGTERM (a sweep resumes
    when rerun). Run as a program (``argv`` None), an interrupted command ignores
    further signals while it exits, so a second Ctrl-C cannot cut it short.
    """
    args, unknown = parser.parse_known_args(argv)
    if unknown:
        getattr(args, "command_parser", parser).error(
            f"unrecognized arguments: {' '.join(unknown)}")
    return guarded(parser.prog, lambda: args.func(args), program=argv is None)


def guarded(prog: str, work, program: bool = False) -> int:
    """Call ``work()`` as a command: 0 when it returns; bad input or a failed write
    (:class:`~phasecore.checks.ConfigError` and kin) one line ``<prog>: error: ...`` and 2;
    Ctrl-C or SIGTERM one line with the hint to rerun the same command, and 130 (143 after
    SIGTERM: 128 + the signal, the shell's convention). A script
    that parses its own options wraps its work in this. ``program``: run as a program, an
    interrupted command ignores further signals while it exits."""
    with interrupt_once() as signals, warnings.catch_warnings():
        warnings.showwarning = _one_line_warning(prog)
        try:
            work()
            return 0
        except (ConfigError, OutputExistsError, FileNotFoundError, ValueError) as err:
            print(f"{prog}: error: {err}", file=sys.stderr)
            return 2
        except KeyboardInterrupt as err:
            detail = str(err) or "interrupted; rerun the same command to resume"
            print(f"{prog}: {detail}", file=sys.stderr)
            if program:
                # The interrupt can land inside a library's constructor (numba compiling a
                # kernel); the half-built object's finaliser then fails when it is
                # collected, and Python would print that as a traceback after our line.
                sys.unraisablehook = _ignore_unraisable
        finally:
            if program:
                signal.signal(signal.SIGINT, signal.SIG_IGN)
                signal.signal(signal.SIGTERM, signal.SIG_IGN)
    # the shell's convention, 128 + the signal: 130 after Ctrl-C, 143 after SIGTERM
    return 128 + (signals[0] if signals else signal.SIGINT)


def _ignore_unraisable(unraisable) -> None:
    """An interrupted command's finalisers fail in silence: it is exiting with its one line."""


def checked_script(prog: str, parse, work, argv=None) -> int:
    """Run a script whose options and configurations ``parse(argv)`` checks, all before any
    work (a bad one: one line and exit code 2), then ``work(*parsed)``; both inside
    :func:`guarded`, so that Ctrl-C while the checks load data sets is one line and 130 as
    well. ``parsed[0]`` holds the options; a ``serial_note`` set there (why the sweeps run
    in this process though workers were asked for) goes to stderr before the work."""
    def whole() -> None:
        parsed = parse(argv)
        note = getattr(parsed[0], "serial_note", "")
        if note:
            print(note, file=sys.stderr, flush=True)
        work(*parsed)

    return guarded(prog, whole, program=argv is None)


def result_script(description: str, main, argv=None, *, writes: str,
                  folder: str = "figures/supplement", options=()) -> int:
    """Run the command line of a script that computes one result at the paper's scale
    (``--quick``: seconds) and writes it with its figure into a folder:
    ``[FOLDER] [--quick] [options] [--overwrite]``, then
    ``main(folder, scale="paper" | "quick", overwrite=..., <each option's dest>=...)``; FOLDER
    defaults to ``folder`` (with ``--quick``: its subfolder ``quick``).
    ``writes``: the files, named in ``--overwrite``'s help; ``options``: more options,
    pairs (flag, keyword arguments of ``add_argument``). Returns the exit code
    (:func:`run`)."""
    parser = Parser(description=description)
    parser.add_argument("folder", nargs="?", default=None,
                        help=f"where to write (created if missing; default {folder}; with "
                             f"--quick {folder}/quick, so a smoke test never meets the "
                             "committed files)")
    parser.add_argument("--quick", dest="scale", action="store_const", const="quick",
                        default="paper", help="seconds: a smoke test")
    dests = [parser.add_argument(flag, **kwargs).dest for flag, kwargs in options]
    overwrite_option(parser, writes)

    def call(args):
        where = args.folder or (folder if args.scale == "paper" else f"{folder}/quick")
        main(where, scale=args.scale, overwrite=args.overwrite,
             **{dest: getattr(args, dest) for dest in dests})

    parser.set_defaults(func=call)
    return run(parser, argv)


def folder_command(description: str, main, argv=None, default: str = "figures/paper",
                   holds: str = "dnn_<knob>.nc", writes=None) -> int:
    """Run ``main(folder)`` from a command line of one optional argument, the folder holding
    ``holds`` (the docs' scripts); bad input is one line and exit code 2. ``writes``: for a
    script that writes into the folder, ``writes(folder)`` lists the files it would write;
    the command then has ``--overwrite`` and refuses, before any work, to replace one that
    exists without it."""
    from phasecore.results import check_new_outputs

    parser = Parser(description=description)
    parser.add_argument("folder", nargs="?", default=default,
                        help=f"the folder holding {holds} (default {default})")
    if writes is not None:
        overwrite_option(parser, "files in the folder")

    def call(args):
        if writes is not None:
            check_new_outputs(writes(args.folder), args.overwrite)
        main(args.folder)

    parser.set_defaults(func=call)
    return run(parser, argv)


def scaled_figures_parser(description: str, *, folder, names, what: str, full: str,
                          quick: str, scales: dict[str, str] | None = None) -> Parser:
    """The options of a script that computes named figures at a scale into a folder:
    ``[FOLDER] [--only a,b] [--full | --quick] [--workers N] [--redraw]`` (``scale``
    "reduced" unless ``--full`` or ``--quick``). ``names``: the figures ``--only`` picks
    from; ``what``: what they are called ("figures", "experiments"); ``full`` and ``quick``:
    what those scales are, for the help; ``scales``: more scales, name -> help, each a flag
    ``--<name>``. ``folder``: the default folder, or a mapping scale -> its default folder
    (the parsed ``folder`` is then None unless given: the caller takes the scale's)."""
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
                        help="worker processes (default: one per core; --quick: none, always: its "
                             "sweeps take less time than a pool takes to start)")
    parser.add_argument("--redraw", action="store_true",
                        help="draw a figure that exists again from its sweep files (default: "
                             "it is kept, being a view of its files; a finished sweep is never "
                             "recomputed: its file is reused)")
    parser.set_defaults(scale="reduced")
    return parser
