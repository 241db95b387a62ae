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


def test_every_script_refuses_an_unknown_option_before_any_work(tmp_path):
    """train_test.py --banana wrote into a new --banana/ folder; cnn_dropout.py --banana
    started a long run."""
    for script in SCRIPTS:
        (tmp_path / script).mkdir()
    results = _run([(script, ["--banana"], tmp_path / script) for script in SCRIPTS])
    for script, result in zip(SCRIPTS, results, strict=True):
        # (a script with required arguments names those first, as argparse does)
        _refused(result, script, "unrecognized arguments: --banana"
                 if script not in REQUIRED else "the following arguments are required")
        assert list((tmp_path / script).iterdir()) == [], script
    assert not list(ROOT.glob("**/--banana"))


@pytest.mark.parametrize("script", ["tune_cases.py", "tune_evaluation.py"])
def test_tune_scripts_refuse_bad_values(tmp_path, script):
    """--workers 0, --epochs=-1 and --out on a file ended in tracebacks."""
    (tmp_path / "file").write_text("")
    cases = [(["--workers", "0"], "--workers must be an integer >= 1"),
             (["--epochs=-1"], "--epochs must be an integer >= 1"),
             (["--out", str(tmp_path / "file")], "--out: output must be a folder")]
    if script == "tune_evaluation.py":
        cases.append((["--alphas", "2"], "--alphas must be distinct slopes in [0, 1]"))
    results = _run([(script, [*args, "--out" if "--out" not in args else "--epochs",
                               str(tmp_path / "o") if "--out" not in args else "1"], tmp_path)
                    for args, _ in cases])
    for result, (_, fragment) in zip(results, cases, strict=True):
        _refused(result, script, fragment)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["file"]


def test_reanalyse_and_reversal_refuse_a_missing_folder_and_make_none(tmp_path):
    """reanalyse.py on a missing folder did nothing and exited 0; reversal.py made
    <folder>/reversal/ before it found its input missing."""
    (tmp_path / "file").write_text("")
    (tmp_path / "figs").mkdir()
    cases = [("reanalyse.py", [str(tmp_path / "missing")], "no dnn_<knob>.nc in"),
             ("reanalyse.py", ["--fits", str(tmp_path)], "no dnn_<knob>.nc in"),
             ("reversal.py", [str(tmp_path / "figs")], "dnn_dropout.nc"),
             ("train_test.py", [str(tmp_path / "file"), "--quick"], "output must be a folder")]
    results = _run([(script, args, tmp_path) for script, args, _ in cases])
    for result, (script, _, fragment) in zip(results, cases, strict=True):
        _refused(result, script, fragment)
    assert sorted(p.name for p in tmp_path.rglob("*")) == ["figs", "file"]
