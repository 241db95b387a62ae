"""scripts/claims.py and dnnphase.compare.claims: the ledger is what the committed files say,
and its rule reaches the verdict it states."""

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from dnnphase.compare.claims import Claim, collect, render
from dnnphase.compare.claims.rules import linear_best, verdict_of
from phasecore.checks import ConfigError

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "claims.py"


def test_the_committed_ledger_is_what_the_files_say():
    out = subprocess.run([sys.executable, str(SCRIPT), "--check"], capture_output=True,
                         text=True, cwd=ROOT, check=False)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr


def test_every_row_is_well_formed_and_ids_are_unique():
    sections = collect(ROOT)
    rows = [c for _, claims in sections for c in claims]
    assert rows
    keys = [(c.id, c.claim) for c in rows]
    assert len(keys) == len(set(keys))
    for c in rows:
        for f in c.files:
            assert (ROOT / f).is_file(), f"{c.id}: {f} is not committed"


def test_check_fails_on_a_stale_ledger(tmp_path):
    stale = tmp_path / "claims.md"
    stale.write_text(render(collect(ROOT)).replace("holds", "differs", 1))
    out = subprocess.run([sys.executable, str(SCRIPT), "--check", "--out", str(stale)],
                         capture_output=True, text=True, cwd=ROOT, check=False)
    assert out.returncode == 1 and "out of date" in out.stderr


def test_bad_root_is_one_line(tmp_path):
    out = subprocess.run([sys.executable, str(SCRIPT), "--root", str(tmp_path)],
                         capture_output=True, text=True, cwd=ROOT, check=False)
    assert out.returncode == 2 and "--root" in out.stderr and "Traceback" not in out.stderr


def test_a_claim_needs_a_known_verdict_and_its_why():
    with pytest.raises(ConfigError, match="verdict"):
        Claim("Fig. 1", "c", "cmd", "—", "x", "maybe")
    with pytest.raises(ConfigError, match="why"):
        Claim("Fig. 1", "c", "cmd", "—", "x", "differs")
    assert Claim("Fig. 1", "c", "cmd", "—", "x", "holds").why == ""


@pytest.mark.parametrize(("hits", "rows", "chance", "verdict"), [
    (6, 6, 1.0, "holds"), (4, 6, 1.0, "holds"), (4, 6, 2.6, "partly"), (3, 6, 1.0, "partly"),
    (1, 6, 0.5, "differs"), (3, 6, 3.0, "differs"), (0, 0, 0.0, "differs")])
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
    from dnnphase.compare.claims.supplement import paired_interval

    a, b = np.array([0.9, 0.8, 0.7, 0.95]), np.array([0.85, 0.8, 0.6, 0.9])
    mean, low, high = paired_interval(a, b)
    assert mean == pytest.approx(np.mean(a - b))
    assert np.min(a - b) <= low <= mean <= high <= np.max(a - b)


def test_the_readme_quotes_the_ledgers_count():
    """The README's short results quote the ledger's count line as it is."""
    ledger = (ROOT / "docs" / "claims.md").read_text()
    counts = next(line for line in ledger.splitlines() if line.startswith("**")
                  and " claims: " in line)
    assert counts in (ROOT / "README.md").read_text()


@pytest.mark.parametrize("kind", ["folder", "empty", "folder_check"])
def test_out_that_is_not_a_file_is_one_line(tmp_path, kind):
    out_arg = "" if kind == "empty" else str(tmp_path)
    argv = [sys.executable, str(SCRIPT), "--out", out_arg]
    if kind == "folder_check":
        argv.append("--check")
    out = subprocess.run(argv, capture_output=True, text=True, cwd=tmp_path, check=False)
    assert out.returncode == 2, out.stdout[-2000:] + out.stderr
    assert "--out" in out.stderr and "Traceback" not in out.stderr
    assert out.stderr.strip().splitlines()[-1].count("\n") == 0
    assert list(tmp_path.iterdir()) == []


def test_a_root_without_the_result_files_is_one_line(tmp_path):
    (tmp_path / "figures").mkdir()
    out = subprocess.run([sys.executable, str(SCRIPT), "--root", str(tmp_path), "--out",
                          str(tmp_path / "claims.md")], capture_output=True, text=True,
                         cwd=ROOT, check=False)
    assert out.returncode == 2 and "Traceback" not in out.stderr
    assert "--root must be a checkout holding the committed result files" in out.stderr
    assert not (tmp_path / "claims.md").exists()
