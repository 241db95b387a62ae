"""The scripts in scripts/ are entry points too (issue 39 §4): an unknown option or a bad value
is one line and exit code 2 before any work, with nothing written."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPTS = sorted(p.name for p in (ROOT / "scripts").glob("*.py"))
#: Scripts with required arguments, which argparse names before an unknown option.
REQUIRED = {"horizons.py", "reversal.py", "sweeps_agree.py"}


#: Runs each (script, args, cwd) of argv[1] (JSON) as its __main__ in this one process (torch
#: and numba are imported once) and prints [exit code, stdout, stderr] for each; an exception
#: other than SystemExit is a traceback, printed as such.
DRIVER = """
import contextlib, io, json, os, runpy, sys, traceback
out, root = [], sys.argv[2]
for script, args, cwd in json.loads(sys.argv[1]):
    os.chdir(cwd)
    sys.argv = [script, *args]
    stdout, stderr, code = io.StringIO(), io.StringIO(), 0
    with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
        try:
            runpy.run_path(os.path.join(root, 'scripts', script),
                           run_name='__main__')
        except SystemExit as stop:
            code = stop.code if isinstance(stop.code, int) else 1
            if not isinstance(stop.code, (int, type(None))):
                print(stop.code, file=sys.stderr)
        except BaseException:
            code = 'traceback'
            traceback.print_exc()
    out.append([code, stdout.getvalue(), stderr.getvalue()])
print(json.dumps(out))
"""


def _run(cases) -> list:
    """[(exit code, stdout, stderr)] of each (script, args, cwd), in one fresh process."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1"}
    done = subprocess.run([sys.executable, "-c", DRIVER, json.dumps(
        [[script, list(args), str(cwd)] for script, args, cwd in cases]), str(ROOT)], cwd=ROOT,
        env={**env, "PYTHONSAFEPATH": ""}, capture_output=True, text=True, timeout=600,
        check=True)
    return json.loads(done.stdout.splitlines()[-1])


def _refused(result, script: str, fragment: str) -> None:
    code, out, err = result
    assert code == 2, (script, code, err)
    assert "Traceback" not in err and out == "", (script, err)
    assert err.strip().startswith(f"{script}: error:") and "\n" not in err.strip(), (script,
                                                                                      err)
    assert fragment in err, (script, err)


TUNE = ("tune_cases.py", "tune_evaluation.py")


def _tune_cases(folder: Path, script: str) -> list:
    """(args, fragment) of a tune script's bad values; ``folder`` holds a plain file."""
    (folder / "file").write_text("")
    cases = [(["--workers", "0"], "--workers must be an integer >= 1"),
             (["--epochs=-1"], "--epochs must be an integer >= 1"),
             (["--out", str(folder / "file")], "--out: output must be a folder")]
    if script == "tune_evaluation.py":
        cases.append((["--alphas", "2"], "--alphas must be distinct slopes in [0, 1]"))
    return [([*args, "--out" if "--out" not in args else "--epochs",
              str(folder / "o") if "--out" not in args else "1"], fragment)
            for args, fragment in cases]


def _missing_cases(folder: Path) -> list:
    """(script, args, fragment) of a missing input folder; ``folder`` holds a file and an
    empty folder."""
    (folder / "file").write_text("")
    (folder / "figs").mkdir()
    return [("reanalyse.py", [str(folder / "missing")], "no dnn_<knob>.nc in"),
            ("reanalyse.py", ["--fits", str(folder)], "no dnn_<knob>.nc in"),
            ("reversal.py", [str(folder / "figs")], "dnn_dropout.nc"),
            *[(script, [str(folder / "figs")], "no dnn_<knob>.nc in")
              for script in ("prediction.py", "trajectory_fits.py", "last_bits.py")],
            ("train_test.py", [str(folder / "file"), "--quick"], "output must be a folder")]


@pytest.fixture(scope="module")
def answers(tmp_path_factory):
    """The cases of the tests below, each group in a folder of its own, all run in one fresh
    process (a python + torch start-up once, not once per test): group -> (folder,
    [(script, args, fragment, result)])."""
    groups = {}
    banana = tmp_path_factory.mktemp("banana")
    for script in SCRIPTS:
        (banana / script).mkdir()
    groups["banana"] = (banana, [
        (script, ["--banana"], "unrecognized arguments: --banana" if script not in REQUIRED
         # (a script with required arguments names those first, as argparse does)
         else "the following arguments are required", banana / script) for script in SCRIPTS])
    for script in TUNE:
        folder = tmp_path_factory.mktemp(script.removesuffix(".py"))
        groups[script] = (folder, [(script, args, fragment, folder)
                                   for args, fragment in _tune_cases(folder, script)])
    folder = tmp_path_factory.mktemp("missing")
    groups["missing"] = (folder, [(script, args, fragment, folder)
                                  for script, args, fragment in _missing_cases(folder)])
    flat = [case for _, cases in groups.values() for case in cases]
    done = iter(_run([(script, args, cwd) for script, args, _, cwd in flat]))
    return {name: (folder, [(script, args, fragment, next(done))
                            for script, args, fragment, _ in cases])
            for name, (folder, cases) in groups.items()}


def test_every_script_refuses_an_unknown_option_before_any_work(answers):
    """train_test.py --banana wrote into a new --banana/ folder; cnn_dropout.py --banana
    started a long run."""
    folder, cases = answers["banana"]
    assert [script for script, *_ in cases] == SCRIPTS
    for script, _, fragment, result in cases:
        _refused(result, script, fragment)
        assert list((folder / script).iterdir()) == [], script
    assert not list(ROOT.glob("**/--banana"))


@pytest.mark.parametrize("script", TUNE)
def test_tune_scripts_refuse_bad_values(answers, script):
    """--workers 0, --epochs=-1 and --out on a file ended in tracebacks."""
    folder, cases = answers[script]
    assert len(cases) == (4 if script == "tune_evaluation.py" else 3)
    for _, _, fragment, result in cases:
        _refused(result, script, fragment)
    assert sorted(p.name for p in folder.iterdir()) == ["file"]


def test_scripts_refuse_a_missing_input_in_one_line_and_make_nothing(answers):
    """reanalyse.py on a missing folder did nothing and exited 0; reversal.py made
    <folder>/reversal/ before it found its input missing; prediction.py, trajectory_fits.py
    and last_bits.py exited 1 without the ``<prog>: error:`` line."""
    folder, cases = answers["missing"]
    for script, _, fragment, result in cases:
        _refused(result, script, fragment)
    assert sorted(p.name for p in folder.rglob("*")) == ["figs", "file"]
