"""scripts/cnn_phase.py (the CNN's α × dropout diagram) and scripts/chain_claims.py (Fig. 2,
Eq. 8) at their quick scales, their refusals, and the ledger rows read from what they write."""

import runpy
from pathlib import Path

import pytest

from dnnphase.compare.claims import chain_claims, main_text
from tests.scripts.refusals import refused, script_main

SCRIPTS = Path(__file__).resolve().parents[2] / "scripts"


def test_the_cnn_diagram_end_to_end_resumed_and_read_by_the_ledger(tmp_path, capsys):
    folder = tmp_path / "figures/supplement/cnn_phase"
    main = script_main("cnn_phase")
    assert main([str(folder), "--quick"]) == 0
    assert (folder / "cnn_phase.nc").is_file() and (folder / "cnn_phase.png").stat().st_size
    assert main([str(folder), "--quick"]) == 0  # finished: reused, not retrained
    assert "reusing" in capsys.readouterr().out
    rows = main_text._cnn_rows(tmp_path)
    assert [r.id for r in rows] == ["Main text (CNNs)", "Main text (CNNs, shading)"]
    assert main_text._cnn_rows(tmp_path / "elsewhere") == []  # no file, no row


@pytest.mark.parametrize(("argv", "words"), [
    (["--quick", "--workers", "0"], "workers"), (["--only", "S5"], "--only"),
    (["--full", "--quick"], "not allowed")])
def test_the_cnn_diagram_refuses_in_one_line(tmp_path, capsys, argv, words):
    line = refused(script_main("cnn_phase"), [str(tmp_path / "out"), *argv], capsys)
    assert words in line
    assert not (tmp_path / "out").exists()


def test_the_chain_claims_files_and_their_rows(tmp_path):
    folder = tmp_path / "figures/chain_claims"
    cli = runpy.run_path(str(SCRIPTS / "chain_claims.py"), run_name="script")["cli"]
    with pytest.raises(SystemExit) as stop:
        cli([str(folder), "--quick"])
    assert stop.value.code == 0
    rows = chain_claims._fig2_row(tmp_path) + chain_claims._eq8_row(tmp_path)
    assert [r.id for r in rows] == ["Fig. 2", "Eq. 8 (μ← ≤ μ→)"]
    assert not rows[1].counts  # a check against the chain's own theory
