"""The scripts' shared command lines (phasecore.commandline): result_script, the
``[FOLDER] [--quick] [options] [--overwrite]`` of a script that writes one result and its
figure, and checked_script, which checks everything before any work inside the guard."""

import os
import signal
import time
from types import SimpleNamespace

import pytest

from phasecore.checks import ConfigError
from phasecore.commandline import checked_script, guarded, result_script


def test_result_script_passes_every_option_to_main_and_orders_its_help(capsys):
    calls = []

    def main(folder, scale, overwrite, lrs=None):
        calls.append((folder, scale, overwrite, lrs))

    lrs = ("--lrs", {"default": None, "help": "these learning rates"})
    assert result_script("One figure.", main, [], writes="x.nc and .png", options=[lrs]) == 0
    assert result_script("One figure.", main, ["out", "--quick", "--lrs", "1,2",
                                               "--overwrite"], writes="x.nc and .png",
                         options=[lrs]) == 0
    assert result_script("One figure.", main, ["--quick"], writes="x.nc", options=[lrs]) == 0
    assert calls == [("figures/supplement", "paper", False, None), ("out", "quick", True, "1,2"),
                     ("figures/supplement/quick", "quick", False, None)]  # never the committed
    with pytest.raises(SystemExit):
        result_script("One figure.", main, ["--help"], writes="x.nc and .png", options=[lrs])
    out = capsys.readouterr().out
    assert "[-h] [--quick] [--lrs LRS] [--overwrite] [folder]" in out
    assert ("where to write (created if missing; default figures/supplement; with --quick"
            in " ".join(out.split()))
    assert "replace existing x.nc and .png" in out


def test_result_script_refuses_bad_input_in_one_line(capsys):
    def main(folder, scale, overwrite):
        raise ConfigError(f"output must be a folder (got {folder})")

    assert result_script("One figure.", main, ["f"], writes="x.nc") == 2
    err = capsys.readouterr().err
    assert err.endswith(": error: output must be a folder (got f)\n") and err.count("\n") == 1
    with pytest.raises(SystemExit) as stop:
        result_script("One figure.", main, ["--banana"], writes="x.nc")
    assert stop.value.code == 2
    assert "unrecognized arguments: --banana" in capsys.readouterr().err


def test_checked_script_checks_before_the_work_and_says_its_note_first(capsys):
    done = []

    def parse(argv):
        if argv == ["bad"]:
            raise ConfigError("--only must be one of a, b (got 'bad')")
        return SimpleNamespace(serial_note="p.py: runs here" if argv else ""), argv

    def work(args, argv):
        print("working", flush=True)
        done.append(argv)
        if argv == ["stop"]:
            raise KeyboardInterrupt

    assert checked_script("p.py", parse, work, ["bad"]) == 2
    assert capsys.readouterr().err == "p.py: error: --only must be one of a, b (got 'bad')\n"
    assert done == []
    assert checked_script("p.py", parse, work, []) == 0
    assert capsys.readouterr().err == ""
    assert checked_script("p.py", parse, work, ["stop"]) == 130
    err = capsys.readouterr().err.splitlines()
    assert err == ["p.py: runs here", "p.py: interrupted; rerun the same command to resume"]
    assert done == [[], ["stop"]]


def test_an_interrupted_program_prints_its_line_and_no_finaliser_traceback():
    """An interrupt that lands inside a library's constructor leaves a half-built object
    whose finaliser fails when the interpreter collects it: the command's user reads the
    one line, not Python's 'Exception ignored' traceback (numba compiling a kernel)."""
    import subprocess
    import sys

    program = (
        "from phasecore.commandline import guarded\n"
        "class HalfBuilt:\n"
        "    def __del__(self):\n"
        "        self._ptr\n"
        "def work():\n"
        "    global held\n"
        "    held = HalfBuilt()\n"
        "    raise KeyboardInterrupt\n"
        "raise SystemExit(guarded('job', work, program=True))\n")
    done = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 130
    assert done.stderr == "job: interrupted; rerun the same command to resume\n", done.stderr


@pytest.mark.parametrize("signum, code", [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_an_interrupted_command_exits_with_128_plus_its_signal(signum, code, capsys):
    """The shell's convention, so a batch system tells its own time limit (SIGTERM) from a
    user's Ctrl-C; a signal that arrives during the clean-up changes nothing."""
    def work():
        os.kill(os.getpid(), signum)
        time.sleep(5)  # the handler raises before this ends

    def stopped_twice():
        try:
            work()
        finally:
            os.kill(os.getpid(), signal.SIGINT if signum == signal.SIGTERM else signal.SIGTERM)

    assert guarded("job", work) == code
    assert guarded("job", stopped_twice) == code
    assert capsys.readouterr().err == "job: interrupted; rerun the same command to resume\n" * 2


def test_a_list_default_is_shown_as_the_option_takes_it():
    """A list option of several words shows its default as words (quoted where a name holds
    a space), a comma-list option as a comma list: what the help shows can be typed back."""
    from phasecore.commandline import Parser

    parser = Parser(prog="p")
    parser.add_argument("--alphas", nargs="+", type=float, default=[0.0, 0.5], help="a")
    parser.add_argument("--networks", nargs="+", default=["gmm MLP", "digits CNN"],
                        help="n")
    parser.add_argument("--grid", default=(1, 2), help="g")
    text = " ".join(parser.format_help().split())
    assert "(default: 0.0 0.5)" in text
    assert "(default: 'gmm MLP' 'digits CNN')" in text
    assert "(default: 1,2)" in text
    assert parser.parse_args(["--alphas", "0.0", "0.5"]).alphas == [0.0, 0.5]
