"""scripts/chain_family.py: the tables in the docs are the committed files', and the folder
comparison says what moved."""

import runpy
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.scripts.refusals import refused

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "chain_family.py"


def run(*args: str) -> subprocess.CompletedProcess:
    """The script run as a program (its entry point)."""
    return subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True,
                          cwd=ROOT, check=False)


@pytest.fixture(scope="module")
def tables():
    """``chain_family.py figures/paper --tables-only``, run once as a program for the tests
    that read its tables."""
    return run("figures/paper", "--tables-only")


@pytest.fixture
def call(monkeypatch, capsys):
    """The script's main called in this process from the checkout: (exit code, stdout,
    stderr), without a python + torch start-up per call."""
    main = runpy.run_path(str(SCRIPT), run_name="chain_family")["main"]
    monkeypatch.chdir(ROOT)

    def call(*args: str):
        try:
            code = main(list(args))
        except SystemExit as stop:
            code = stop.code
        out = capsys.readouterr()
        return code, out.out, out.err
    call.main = main
    return call


def test_docs_hold_the_tables_the_committed_files_give(tables):
    """docs/fit.md holds both tables, docs/prediction.md the held-out one, as
    ``--tables-only`` prints them from figures/paper/family_*.nc."""
    out = tables
    assert out.returncode == 0, out.stderr
    tables = [t.strip() for t in out.stdout.split("\n\n") if t.startswith("| knob |")]
    assert len(tables) == 2
    fit, prediction = ((ROOT / "docs" / n).read_text() for n in ("fit.md", "prediction.md"))
    assert tables[0] in fit, "docs/fit.md: trajectory table out of date"
    assert tables[1] in fit, "docs/fit.md: held-out table out of date"
    assert tables[1] in prediction, "docs/prediction.md: held-out table out of date"
    assert "| all 4 | paper chain | – | 12 of 264 |" in tables[0]


def test_a_folder_compared_with_itself_and_with_a_changed_copy(tmp_path, call):
    for name in ("dropout", "held_out_dropout"):
        shutil.copy(ROOT / "figures" / "paper" / f"family_{name}.nc", tmp_path)
    shutil.copy(ROOT / "figures" / "paper" / "dnn_dropout.nc", tmp_path)
    code, out, err = call(str(tmp_path), "--against", "figures/paper")
    assert code == 0, err
    assert "same kept values and explained cells: True" in out
    assert "moved by <= 0.0e+00" in out

    import xarray as xr

    path = tmp_path / "family_dropout.nc"
    ds = xr.load_dataset(path)
    ds["explained"] = ds["explained"] + 1
    ds.to_netcdf(path)
    assert "explained cells: False" in call(str(tmp_path), "--against", "figures/paper")[1]


def test_bad_input_is_one_line(call, capsys):
    assert "--workers must be an integer >= 1" in refused(
        call.main, ["figures/paper", "--workers", "0"], capsys)
    assert "no dnn_<knob>.nc in no/such/folder" in refused(call.main, ["no/such/folder"],
                                                           capsys)


def test_the_script_imports_without_running():
    names = runpy.run_path(str(SCRIPT), run_name="chain_family")
    assert callable(names["main"]) and callable(names["shared_rows"])


def test_the_totals_add_up(tables):
    """The "all 4" rows (of figures/paper) are the sums of the per-knob rows."""
    out = tables.stdout
    rows = [r.split("|") for r in out.splitlines() if r.startswith("| ")]
    per_knob = [r for r in rows if r[1].strip() not in ("knob", "all 4", "all 4, one value")
                and r[2].strip() == "friction profile" and "of" in r[4]]
    total = next(r for r in rows if r[1].strip() == "all 4" and r[2].strip() == "friction profile")
    explained = sum(int(r[4].split(" of ")[0]) for r in per_knob)
    assert total[4].strip() == f"{explained} of 264"
    assert int(total[7]) == pytest.approx(sum(int(r[7]) for r in per_knob), abs=2)


@pytest.mark.parametrize("knob", ["dropout", "lr", "batch_size", "label_noise"])
def test_committed_files_agree_with_the_prediction_files(knob):
    """The family's local mean is the prediction table's (the same cells and folds), and its
    paper-chain row is the paper diagram's trajectory fit: 12 of 264 explained in all."""
    from phasecore import results

    folder = ROOT / "figures" / "paper"
    held = results.load(folder / f"family_held_out_{knob}.nc")
    prediction = results.load(folder / f"prediction_{knob}.nc")
    for split in held["split"].values:
        assert float(held["local_rmse"].sel(split=split)) == pytest.approx(
            prediction.attrs[f"{split}_local_rmse"], rel=1e-12)
    fam = results.load(folder / f"family_{knob}.nc")
    paper = fam.sel(variant="paper chain")
    assert int(paper["cells"]) == int(held.attrs["cells"]) + (knob == "lr") + 4 * (
        knob == "batch_size")  # the trajectory fit keeps the cells prediction leaves out
    for name in fam["variant"].values[1:]:
        row = fam.sel(variant=name)
        assert float(row["chi2"]) <= float(paper["chi2"])  # the neutral value is a candidate


def test_the_committed_run_under_other_kernels_made_the_same_choices(call):
    """figures/paper/other_cpu/: the family rerun under other CPU kernels (docs/fit.md,
    "Another CPU"): the same kept values, explained cells and held-out choices."""
    code, out, err = call("figures/paper", "--against", "figures/paper/other_cpu")
    assert code == 0, err
    lines = out.splitlines()
    assert len(lines) == 4
    assert all("explained cells: True" in line and "same chosen values: True" in line
               for line in lines)
