"""scripts/cnn_phase.py (the CNN's α × dropout diagram) and scripts/chain_claims.py (Fig. 2,
Eq. 8) at their quick scales, their refusals, and the ledger rows read from what they write."""

import errno
import runpy
from pathlib import Path

import pytest
import xarray as xr

from phaseclaims import chain_claims, main_text
from tests.scripts.refusals import refused, script_main

SCRIPTS = Path(__file__).resolve().parents[2] / "scripts"


def test_the_cnn_diagram_end_to_end_resumed_and_read_by_the_ledger(tmp_path, capsys):
    folder = tmp_path / "figures/supplement/cnn_phase"
    main = script_main("cnn_phase")
    assert main([str(folder), "--quick"]) == 0
    assert (folder / "cnn_phase.nc").is_file() and (folder / "cnn_phase.png").stat().st_size
    capsys.readouterr()
    # finished: reused, not retrained; --workers at --quick is said to run here, not dropped
    assert main([str(folder), "--quick", "--workers", "5"]) == 0
    out, err = capsys.readouterr()
    assert "reusing" in out and "cnn_phase.py: --quick runs its sweep here" in err
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


def _chain_claims() -> dict:
    """scripts/chain_claims.py's namespace (patch names there; its ``cli`` reads them)."""
    return runpy.run_path(str(SCRIPTS / "chain_claims.py"), run_name="script")


def test_the_chain_claims_never_replace_a_result_without_overwrite(tmp_path, capsys):
    """Its default folder holds the committed files, which it replaced with overwrite=True:
    an existing one is refused before any work, one line naming it and --overwrite, and
    replaced only with --overwrite."""
    namespace = _chain_claims()
    folder = tmp_path / "chain_claims"
    folder.mkdir()
    (folder / "eq8.nc").write_text("a committed result")

    def no_work(**params):
        raise AssertionError("a chain was simulated before the outputs were checked")

    namespace["simulate"] = no_work
    err = refused(namespace["cli"], [str(folder), "--quick"], capsys)
    assert "eq8.nc' exists" in err and "--overwrite" in err, err
    assert sorted(p.name for p in folder.iterdir()) == ["eq8.nc"]
    assert (folder / "eq8.nc").read_text() == "a committed result"

    namespace = _chain_claims()  # the real chain
    with pytest.raises(SystemExit) as stop:
        namespace["cli"]([str(folder), "--quick", "--overwrite"])
    assert stop.value.code == 0
    assert sorted(p.name for p in folder.iterdir()) == ["eq8.nc", "fig2.nc"]
    assert xr.load_dataset(folder / "eq8.nc")["curvature_scaled"].sizes["seed"] == 4


def test_the_chain_claims_on_a_full_disk_leave_neither_file(tmp_path, capsys, monkeypatch):
    """Both files or neither: the second failing to be written removes the first."""
    namespace = _chain_claims()
    writes = []

    def second_fails(self, path, *args, **kwargs):
        writes.append(path)
        if len(writes) == 2:
            raise OSError(errno.ENOSPC, "No space left on device")
        return real(self, path, *args, **kwargs)

    real = xr.Dataset.to_netcdf
    monkeypatch.setattr(xr.Dataset, "to_netcdf", second_fails)
    folder = tmp_path / "out"
    err = refused(namespace["cli"], [str(folder), "--quick"], capsys)
    assert "eq8.nc' could not be written: no space left on device" in err, err
    assert len(writes) == 2 and not folder.exists()


def test_the_chain_claims_help_shows_the_default_folder_and_overwrite(capsys):
    with pytest.raises(SystemExit):
        _chain_claims()["cli"](["--help"])
    out = " ".join(capsys.readouterr().out.split())
    assert ("(created if missing; default figures/chain_claims; with --quick "
            "figures/chain_claims/quick") in out, out
    assert "--overwrite" in out, out
