"""scripts/claims.py and phaseclaims: the ledger is what the committed files say,
and its rule reaches the verdict it states."""

import errno
import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from phaseclaims import VERDICTS, Claim
from phaseclaims.ledger import SOURCES
from phaseclaims.rules import linear_best, verdict_of
from phasecore.checks import ConfigError
from tests.scripts.refusals import refused

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "claims.py"


def test_the_committed_ledger_is_what_the_files_say():
    out = subprocess.run([sys.executable, str(SCRIPT), "--check"], capture_output=True,
                         text=True, cwd=ROOT, check=False)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr


def test_every_row_is_well_formed_and_ids_are_unique():
    """On the committed record (which the test above proves is what the files say)."""
    rows = json.loads((ROOT / "docs" / "claims.json").read_text())
    assert rows
    keys = [(r["id"], r["claim"]) for r in rows]
    assert len(keys) == len(set(keys))
    for r in rows:
        assert r["paper"] in SOURCES and r["verdict"] in VERDICTS
        assert r["robust"] == all(v == r["verdict"] for v in r["variants"].values())
        for f in r["files"]:
            assert (ROOT / f).is_file(), f"{r['id']}: {f} is not committed"


def _script():
    """scripts/claims.py as a module, to run its main() in this process."""
    spec = importlib.util.spec_from_file_location("claims_script", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


ROWS = [("Topic", [Claim("Fig. 9", "a claim", "cmd", "—", "1 of 2", "partly", "half",
                         ("figures/paper/dnn_lr.nc",), variants={"other": "holds"},
                         source="ours")])]


@pytest.fixture(scope="module")
def main():
    """The script's own main, on the committed files: its refusals are checked in this
    process (a python + torch start-up each otherwise); the ledger test above and the
    named-pipe ones run the file itself."""
    return _script().main


@pytest.fixture
def script(monkeypatch):
    """The script with a one-row ledger in place of the committed files' (seconds)."""
    module = _script()
    monkeypatch.setattr(module, "collect", lambda root: ROWS)
    return module


def test_the_json_record_has_every_field_and_check_covers_it(script, tmp_path):
    out = tmp_path / "claims.md"
    assert script.main(["--out", str(out)]) == 0
    row, = json.loads((tmp_path / "claims.json").read_text())
    assert {"id", "paper", "claim", "verdict", "variants", "robust", "rule_before_data",
            "counts", "files", "command"} <= set(row)
    assert (row["paper"], row["verdict"], row["robust"], row["variants"]) == \
        ("ours", "partly", False, {"other": "holds"})
    assert "fragile: other → holds" in out.read_text()
    assert script.main(["--out", str(out), "--check"]) == 0
    (tmp_path / "claims.json").write_text(
        (tmp_path / "claims.json").read_text().replace("partly", "holds"))
    assert script.main(["--out", str(out), "--check"]) == 1
    out.write_text(out.read_text().replace("partly", "holds"))
    assert script.main(["--out", str(out), "--check"]) == 1


def test_a_full_disk_leaves_the_old_ledger_whole(script, tmp_path, monkeypatch, capsys):
    out = tmp_path / "claims.md"
    out.write_text("the old ledger\n")
    (tmp_path / "claims.json").write_text("[]\n")

    def full(fd):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
    monkeypatch.setattr(script.os, "fsync", full)
    assert script.main(["--out", str(out), "--overwrite"]) == 1
    assert out.read_text() == "the old ledger\n"
    assert (tmp_path / "claims.json").read_text() == "[]\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["claims.json", "claims.md"]
    err = capsys.readouterr().err.strip()
    assert "No space left" in err and "\n" not in err and "Traceback" not in err


def test_an_existing_ledger_is_replaced_only_with_overwrite(script, tmp_path, capsys):
    """The committed ledger too: plain ``claims.py`` refuses, naming the file, and leaves
    both files as they were; with --overwrite both are rewritten."""
    out = tmp_path / "claims.md"
    (tmp_path / "claims.json").write_text("[]\n")  # either file there is enough to refuse
    err = refused(script.main, ["--out", str(out)], capsys)
    assert "claims.json" in err and "--overwrite" in err and "\n" not in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["claims.json"]
    assert script.main(["--out", str(out), "--overwrite"]) == 0
    assert json.loads((tmp_path / "claims.json").read_text()) and out.is_file()


def test_an_out_under_a_file_says_the_file_is_one(script, tmp_path, capsys):
    """--out README.md/x.md said "folder 'README.md' does not exist": it exists, a file."""
    (tmp_path / "notes").write_text("a file")
    err = refused(script.main, ["--out", str(tmp_path / "notes" / "x.md")], capsys)
    assert "notes' is a file, not a folder" in err, err
    err = refused(script.main, ["--out", str(tmp_path / "missing" / "x.md")], capsys)
    assert "missing' does not exist" in err, err


def test_ctrl_c_is_one_line_and_130(script, tmp_path, monkeypatch, capsys):
    def interrupted(root):
        raise KeyboardInterrupt
    monkeypatch.setattr(script, "collect", interrupted)
    assert script.cli(["--out", str(tmp_path / "claims.md")]) == 130
    err = capsys.readouterr().err.strip()
    assert err.startswith("claims.py: interrupted") and "\n" not in err
    assert list(tmp_path.iterdir()) == []


def test_out_must_name_the_markdown_ledger(script, tmp_path, capsys):
    err = refused(script.main, ["--out", str(tmp_path / "c.json")], capsys)
    assert "--out" in err and ".md" in err
    assert list(tmp_path.iterdir()) == []


def test_the_ledger_is_written_readable_by_all_as_other_files_are(script, tmp_path):
    mask = os.umask(0o022)
    try:
        script.write_atomic({tmp_path / "c.md": "x\n"})
    finally:
        os.umask(mask)
    assert (tmp_path / "c.md").stat().st_mode & 0o777 == 0o644


def test_a_read_only_folder_is_one_line_before_any_work(script, tmp_path, monkeypatch,
                                                         capsys):
    monkeypatch.setattr(script.os, "access", lambda path, mode: False)
    err = refused(script.main, ["--out", str(tmp_path / "claims.md")], capsys)
    assert "--out" in err and "not writable" in err
    assert list(tmp_path.iterdir()) == []


@pytest.mark.skipif(os.name != "posix" or os.geteuid() == 0,
                    reason="a read-only folder stops no one running as root")
def test_a_read_only_folder_refuses_the_command(tmp_path):
    folder = tmp_path / "ro"
    folder.mkdir()
    folder.chmod(0o555)
    try:
        out = subprocess.run([sys.executable, str(SCRIPT), "--out", str(folder / "c.md")],
                             capture_output=True, text=True, cwd=ROOT, check=False, timeout=120)
    finally:
        folder.chmod(0o755)
    assert out.returncode == 2 and "not writable" in out.stderr
    assert len(out.stderr.strip().splitlines()) == 1


#: Runs the script's main on each argv of argv[2] (JSON) in turn, in one process (a command
#: that waited on a pipe would hang it: the caller's timeout stops it), and prints the exit
#: code and stderr of each as a JSON line.
PIPES = """
import contextlib, io, json, runpy, sys
main = runpy.run_path(sys.argv[1], run_name="script")["main"]
for argv in json.loads(sys.argv[2]):
    err, code = io.StringIO(), None
    with contextlib.redirect_stderr(err):
        try:
            code = main(argv)
        except SystemExit as stop:
            code = stop.code
    print(json.dumps([code, err.getvalue()]), flush=True)
"""


@pytest.fixture(scope="module")
def piped(tmp_path_factory):
    """check -> (exit code, stderr) of ``claims.py --out PIPE [--check]`` on a named pipe
    each, both run in one real process with a timeout."""
    argvs = []
    for check in (False, True):
        pipe = tmp_path_factory.mktemp("pipe") / "claims.md"
        os.mkfifo(pipe)
        argvs.append(["--out", str(pipe)] + ["--check"] * check)
    out = subprocess.run([sys.executable, "-c", PIPES, str(SCRIPT), json.dumps(argvs)],
                         capture_output=True, text=True, cwd=ROOT, check=False, timeout=240)
    assert out.returncode == 0, out.stderr  # a traceback: the script raised
    answers = [json.loads(line) for line in out.stdout.splitlines() if line.startswith("[")]
    assert len(answers) == 2, out.stdout + out.stderr
    return dict(zip((False, True), answers, strict=True))


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no named pipes here")
@pytest.mark.parametrize("check", [False, True])
def test_a_named_pipe_is_refused_not_waited_on(piped, check):
    code, err = piped[check]
    assert code == 2 and "regular file" in err and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1


def test_check_says_a_missing_file_is_missing(main, tmp_path, monkeypatch, capsys):
    """In one line, with the command that writes that file: plain ``claims.py`` would write
    the committed docs/claims.md instead."""
    target = tmp_path / "claims.md"
    monkeypatch.chdir(ROOT)
    code = main(["--check", "--out", str(target)])
    assert code == 1 and capsys.readouterr().err.strip() == (
        f"{target} and {tmp_path / 'claims.json'} are missing: run python scripts/claims.py "
        f"--out {target} to write them")
    assert not list(tmp_path.iterdir())


def test_the_command_to_rerun_names_the_files_checked(script):
    assert script.rerun(ROOT, None) == "python scripts/claims.py"
    assert script.rerun(ROOT / ".", Path("/x/c.md")) == "python scripts/claims.py --out /x/c.md"
    assert script.rerun(Path("/elsewhere"), None) == \
        "python scripts/claims.py --root /elsewhere"
    assert script.rerun(ROOT, None, overwrite=True) == "python scripts/claims.py --overwrite"


def test_without_git_history_the_record_is_kept(script, tmp_path, capsys):
    """Where git cannot say (no history, a shallow clone), each row's history is the
    committed record's, with a note: --check does not fail for want of history."""
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "claims.json").write_text(json.dumps(
        [{"id": "Fig. 9", "claim": "a claim", "rule_history": "rule before data"}]))
    dates = script.histories(tmp_path, ROWS)
    assert dates == {("Fig. 9", "a claim"): "rule before data"}
    assert "cannot be read here" in capsys.readouterr().err


def test_bad_root_is_one_line(main, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(ROOT)
    assert "--root" in refused(main, ["--root", str(tmp_path)], capsys)


def test_a_claim_needs_a_known_verdict_and_its_why():
    with pytest.raises(ConfigError, match="verdict"):
        Claim("Fig. 1", "c", "cmd", "—", "x", "maybe")
    with pytest.raises(ConfigError, match="why"):
        Claim("Fig. 1", "c", "cmd", "—", "x", "differs")
    assert Claim("Fig. 1", "c", "cmd", "—", "x", "holds").why == ""


@pytest.mark.parametrize(("hits", "rows", "chance", "verdict"), [
    (6, 6, 1.0, "holds"), (4, 6, 1.0, "holds"), (4, 6, 2.6, "partly"), (3, 6, 1.0, "partly"),
    (1, 6, 0.5, "differs"), (3, 6, 3.0, "differs"), (0, 0, 0.0, "cannot")])
def test_verdict_thresholds(hits, rows, chance, verdict):
    assert verdict_of(hits, rows, chance) == verdict


def test_the_rule_on_hand_made_rows():
    """Row 0: accuracy peaks where curvature crosses 0 (a hit); row 1: it peaks at the
    concave end (a miss). Seeds identical, so no ties but the peak and no interval width."""
    curv = np.array([[-0.6, -0.3, 0.01, 0.4], [-0.5, -0.2, 0.02, 0.5]])  # (R, C)
    acc = np.array([[0.80, 0.85, 0.95, 0.70], [0.95, 0.85, 0.80, 0.70]])
    noise = np.array([[0.0, 1e-3, -1e-3], [1e-3, 0.0, -1e-3]])  # keep the seeds apart a bit
    c = np.repeat(curv[..., None], 3, 2)
    a = acc[..., None] + np.broadcast_to(noise[0], (2, 4, 3)) * 0.1
    out = linear_best(c, a, np.arange(4.0))
    assert out["rows"] == 2 and out["hits"] == 1
    np.testing.assert_array_equal(out["per_row"], [1.0, 0.0])
    assert out["chance"] == pytest.approx(0.5)  # one best cell of four per row
    assert out["verdict"] == "partly"


def test_paired_interval_is_the_mean_difference_and_brackets_it():
    from phaseclaims.supplement import paired_interval

    a, b = np.array([0.9, 0.8, 0.7, 0.95]), np.array([0.85, 0.8, 0.6, 0.9])
    mean, low, high = paired_interval(a, b)
    assert mean == pytest.approx(np.mean(a - b))
    assert np.min(a - b) <= low <= mean <= high <= np.max(a - b)


def test_the_readme_quotes_the_ledgers_count():
    """The README's short results quote the ledger's count line as it is."""
    ledger = (ROOT / "docs" / "claims.md").read_text()
    counts = next(line for line in ledger.splitlines() if line.startswith("**")
                  and " claims, " in line)
    assert counts in (ROOT / "README.md").read_text()


@pytest.mark.parametrize("kind", ["folder", "empty", "folder_check"])
def test_out_that_is_not_a_file_is_one_line(main, tmp_path, monkeypatch, capsys, kind):
    out_arg = "" if kind == "empty" else str(tmp_path)
    argv = ["--out", out_arg]
    if kind == "folder_check":
        argv.append("--check")
    monkeypatch.chdir(tmp_path)
    assert "--out" in refused(main, argv, capsys)
    assert list(tmp_path.iterdir()) == []


def test_a_root_without_the_result_files_is_one_line(main, tmp_path, monkeypatch, capsys):
    (tmp_path / "figures").mkdir()
    monkeypatch.chdir(ROOT)
    line = refused(main, ["--root", str(tmp_path), "--out", str(tmp_path / "claims.md")],
                   capsys)
    assert "--root must be a checkout holding the committed result files" in line
    assert not (tmp_path / "claims.md").exists()
