"""scripts/regression_s12.py: Fig. S12 end to end on a tiny network, bad options refused."""

import runpy
from pathlib import Path
from types import SimpleNamespace

import pytest

from phasecore import results
from tests.scripts.refusals import refused

_PATH = Path(__file__).resolve().parents[2] / "scripts" / "regression_s12.py"
s12 = SimpleNamespace(**runpy.run_path(str(_PATH), run_name="regression_s12"))


def test_quick_run_writes_the_diagram_and_its_figure(tmp_path, capsys):
    assert s12.cli([str(tmp_path), "--quick"]) == 0
    ds = results.load(tmp_path / "regression.nc", kind="dnnphase.regression")
    assert ds.sizes["alpha"] == 2 and ds.sizes["dropout"] == 2 and ds.sizes["seed"] == 2
    assert (tmp_path / "regression.png").stat().st_size > 10_000
    assert "test RMSE" in capsys.readouterr().out


@pytest.mark.parametrize("argv, word", [
    (["--seeds", "0"], "--seeds"), (["--seeds", "101"], "--seeds"), (["--bogus"], "unrecog")])
def test_bad_options_are_one_line_before_any_work(tmp_path, capsys, argv, word):
    folder = tmp_path / "out"
    assert word in refused(s12.cli, [str(folder), *argv], capsys)
    assert not folder.exists()


def test_a_file_where_the_folder_goes_is_one_line(tmp_path, capsys):
    folder = tmp_path / "out"
    folder.write_text("")
    assert "is a file, not a folder" in refused(s12.cli, [str(folder), "--quick"], capsys)
