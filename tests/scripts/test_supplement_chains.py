"""scripts/supplement_chains.py: Fig. 5b, S13 and S14 end to end at a short horizon, and its
options refused before any work."""

import json
import runpy
from pathlib import Path
from types import SimpleNamespace

import pytest

from phasecore import results
from tests.scripts.refusals import refused

_PATH = Path(__file__).resolve().parents[2] / "scripts" / "supplement_chains.py"
chains = SimpleNamespace(**runpy.run_path(str(_PATH), run_name="supplement_chains"))


def test_quick_run_writes_a_labelled_diagram_and_its_figure(tmp_path, capsys):
    assert chains.cli([str(tmp_path), "--only", "fig5b,s14", "--seeds", "2", "--quick"]) == 0
    fig5b = results.load(tmp_path / "fig5b.nc", kind="springblock.phase_diagram")
    assert fig5b.attrs["figure"] == "Fig. 5b"
    assert json.loads(fig5b.attrs["config"])["base"]["mu_right"] == 0.0
    assert fig5b.sizes["mu_left"] == 5
    assert "theory_load_curve" in fig5b
    s14 = results.load(tmp_path / "s14.nc", kind="springblock.phase_diagram")
    assert s14.sizes["mu_right"] == 5 and s14.sizes["noise"] == 7
    for name in ("fig5b.png", "s14.png"):
        assert (tmp_path / name).stat().st_size > 10_000
    assert not (tmp_path / "s13.nc").exists()
    assert "## Fig. S14" in capsys.readouterr().out


def test_the_figures_use_the_papers_parameters():
    s14 = chains.spec("s14", quick=False)
    assert (s14["dynamics"], s14["damping"], s14["modulus"], s14["noise_decay"],
            s14["step"], s14["steps"] * s14["step"], s14["noise_sharing"]) == (
        "langevin", 1.0, 0.1, 0.001, 0.05, 700.0, "synchronous")
    assert 0.003 in s14["rows"][1].round(6) and 0.003 in s14["cols"][1].round(6)
    assert s14["mu_left_ratio"] * 0.003 == pytest.approx(0.004)
    assert chains.spec("s13", quick=False)["dynamics"] == "second_order"
    assert chains.spec("fig5b", quick=False)["mu_right"] == 0.0


@pytest.mark.parametrize("argv, word", [
    (["--only", "fig9"], "--only"), (["--only", ""], "--only"), (["--seeds", "0"], "--seeds"),
    (["--seeds", "x"], "--seeds"), (["--bogus"], "unrecognized")])
def test_bad_options_are_one_line_before_any_work(tmp_path, capsys, argv, word):
    folder = tmp_path / "out"
    assert word in refused(chains.cli, [str(folder), *argv], capsys)
    assert not folder.exists()


def test_a_file_where_the_folder_goes_is_one_line(tmp_path, capsys):
    folder = tmp_path / "out"
    folder.write_text("")
    assert "is a file, not a folder" in refused(chains.cli, [str(folder), "--quick"],
                                                capsys)
