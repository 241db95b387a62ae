"""scripts/scrutiny.py: the docs hold the tables the committed scrutiny files give, and those
files agree with the prediction and family files they recompute."""

import runpy
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from tests.scripts.refusals import refused

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "scrutiny.py"
KNOBS = ("dropout", "lr", "batch_size", "label_noise")


def run(*args: str) -> subprocess.CompletedProcess:
    """The script run as a program (its entry point)."""
    return subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True,
                          cwd=ROOT, check=False)


def test_docs_hold_the_tables_the_committed_files_give():
    """docs/fit.md holds the trajectory and variance tables, docs/prediction.md the held-out
    and paired-interval tables, as ``--tables-only`` prints them."""
    out = run("figures/paper", "--tables-only")
    assert out.returncode == 0, out.stderr
    tables = [t.strip() for t in out.stdout.split("\n\n") if t.startswith("| knob |")]
    assert len(tables) == 4
    fit, prediction = ((ROOT / "docs" / n).read_text() for n in ("fit.md", "prediction.md"))
    assert tables[0] in fit, "docs/fit.md: AIC / seed-noise table out of date"
    assert tables[1] in fit, "docs/fit.md: variance table out of date"
    assert tables[2] in prediction, "docs/prediction.md: held-out table out of date"
    assert tables[3] in prediction, "docs/prediction.md: paired-interval table out of date"


@pytest.mark.parametrize("knob", KNOBS)
def test_the_committed_files_recompute_the_prediction_and_family_files(knob):
    """Without resampling, every predictor the prediction and family files score is scored
    the same (the same cells, folds and fits); the diagram-scale ΔAIC and the pooled counts
    are the family file's."""
    from phasecore import results

    folder = ROOT / "figures" / "paper"
    scr = results.load(folder / f"scrutiny_{knob}.nc")
    prediction = results.load(folder / f"prediction_{knob}.nc")
    held = results.load(folder / f"family_held_out_{knob}.nc")
    family = results.load(folder / f"family_{knob}.nc")
    for split in ("checkerboard", "columns"):
        for name in ("chain", "additive", "saturating", "local"):
            assert float(scr["rmse"].sel(predictor=name, split=split)) == pytest.approx(
                prediction.attrs[f"{split}_{name}_rmse"], rel=1e-9)
        for name in ("decaying noise", "friction profile"):
            assert float(scr["rmse"].sel(predictor=name, split=split)) == pytest.approx(
                float(held["rmse"].sel(variant=name, split=split)), rel=1e-6)
        assert float(scr["floor"].sel(split=split)) == pytest.approx(
            prediction.attrs[f"{split}_floor"], rel=1e-12)
    np.testing.assert_allclose(scr["delta_aic_diagram_scale"], family["aic"] - family["aic"][0])
    np.testing.assert_array_equal(scr["explained_pooled"], family["explained"])
    assert scr.attrs["draws"] >= 30 and np.isfinite(scr["boot_rmse"].sel(
        predictor="chain")).all()


@pytest.fixture
def main(monkeypatch):
    """The script's main, called in this process from the checkout (no python + torch
    start-up per call; the test above runs the file as a program)."""
    monkeypatch.chdir(ROOT)
    return runpy.run_path(str(SCRIPT), run_name="scrutiny")["main"]


def test_bad_input_is_one_line(main, capsys):
    assert "--workers must be an integer >= 1" in refused(
        main, ["figures/paper", "--workers", "0"], capsys)
    assert "--draws must be an integer >= 0" in refused(
        main, ["figures/paper", "--draws", "-1"], capsys)
    assert "no dnn_<knob>.nc in no/such/folder" in refused(main, ["no/such/folder"], capsys)
    for option in (["--draws", "5"], ["--workers", "1"]):  # they would do nothing
        assert "--tables-only computes nothing" in refused(
            main, ["figures/paper", "--tables-only", *option], capsys)


def test_help_names_the_whole_first_sentence(main, capsys):
    with pytest.raises(SystemExit) as stop:
        main(["--help"])
    assert stop.value.code in (0, None) and "docs/prediction.md" in capsys.readouterr().out


def test_the_script_imports_without_running():
    names = runpy.run_path(str(SCRIPT), run_name="scrutiny")
    assert callable(names["main"]) and callable(names["paired_rows"])
