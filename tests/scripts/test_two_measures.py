"""scripts/two_measures.py: its committed output is what it computes from the committed
sweeps and linear-network run, and its options are checked before any work."""

import runpy
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
import xarray as xr

from tests.scripts.refusals import refused

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "two_measures.py"
FOLDER = ROOT / "figures" / "supplement" / "two_measures"
#: The script loaded once; its bad options are checked by calling its main here (exit 2, one
#: line), as test_entry_points runs the file itself as a program.
tm = SimpleNamespace(**runpy.run_path(str(SCRIPT), run_name="two_measures"))


@pytest.fixture(scope="module")
def committed():
    return xr.load_dataset(FOLDER / "two_measures.nc")


@pytest.fixture(scope="module")
def linear():
    return xr.load_dataset(FOLDER / "linear_network.nc")


def test_it_reads_every_committed_diagram_with_both_measures(committed):
    both, _ = tm.diagram_files(ROOT)
    assert [f"figures/{d}.nc" for d in committed["diagram"].values] == both
    for path in both:
        with xr.open_dataset(ROOT / path) as ds:
            assert {"trace_ratio", "fuzziness"} <= set(ds["measure"].values.tolist())


def test_the_point_statistics_are_what_the_committed_sweeps_give(committed, linear):
    fresh = tm.statistics_dataset(ROOT, linear, n_boot=0)
    for name in ("agreement", "kappa", "rho", "n_cells", "hits", "chance", "same", "minus",
                 "verdict", "curvature_trace_ratio", "curvature_fuzziness", "r_fuzziness",
                 "r_trace_ratio", "best", "chosen", "linear_diverges",
                 "linear_curvature_fuzziness", "linear_drop_fuzziness"):
        if fresh[name].dtype.kind == "f":
            xr.testing.assert_allclose(fresh[name], committed[name])
        else:
            xr.testing.assert_equal(fresh[name], committed[name])


def test_the_intervals_of_one_diagram_are_what_it_gives(committed):
    name = "knobs/dnn_lr"
    with xr.open_dataset(ROOT / "figures" / f"{name}.nc") as net:
        stats = tm.diagram_statistics(net.load(), n_boot=int(committed.attrs["n_boot"]))
    one = committed.sel(diagram=name)
    for key in ("agreement_low", "agreement_high", "kappa_low", "rho_high"):
        assert stats["agreement"][key] == pytest.approx(float(one[key]))
    for reading in committed["reading"].values:
        got = stats["readings"][str(reading)]
        for key in ("hits_low", "hits_high", "minus_low", "minus_high"):
            assert got[key] == pytest.approx(float(one[key].sel(reading=reading)))


def test_the_figures_are_committed():
    for png in ("s10_paper", "s10_reduced", "s11_linear", "equiseparation_paper",
                "equiseparation_reduced"):
        assert (FOLDER / f"{png}.png").stat().st_size > 10_000, png


@pytest.mark.parametrize("args", [["--reuse-linear", "{tmp}"], ["--root", "{tmp}"]])
def test_bad_options_are_one_line_before_any_work(tmp_path, monkeypatch, capsys, args):
    args = [a.format(tmp=tmp_path) for a in args]
    monkeypatch.chdir(ROOT)
    assert args[0] in refused(tm.main, args, capsys)
    assert not list(tmp_path.iterdir())  # nothing written


def test_the_diagrams_found_and_the_ones_left_out_cover_every_sweep():
    both, fewer = tm.diagram_files(ROOT)
    assert sorted(both + fewer) == sorted(str(p.relative_to(ROOT))
                                          for p in (ROOT / "figures").rglob("dnn_*.nc"))
    assert np.all([p.startswith("figures/") for p in both])


def test_a_file_where_the_folder_goes_is_one_line(tmp_path, monkeypatch, capsys):
    folder = tmp_path / "out"
    folder.write_text("")
    monkeypatch.chdir(ROOT)
    assert "is a file, not a folder" in refused(tm.main, [str(folder)], capsys)


@pytest.mark.parametrize("content", ["not_netcdf", "other_kind"])
def test_reuse_linear_of_a_wrong_file_is_one_line(tmp_path, monkeypatch, capsys, content):
    folder = tmp_path / "out"
    folder.mkdir()
    target = folder / "linear_network.nc"
    if content == "not_netcdf":
        target.write_text("hello")
    else:
        target.write_bytes((ROOT / "figures" / "supplement" / "cnn_dropout.nc").read_bytes())
    monkeypatch.chdir(ROOT)
    assert "--reuse-linear" in refused(tm.main, [str(folder), "--reuse-linear"], capsys)
    assert sorted(p.name for p in folder.iterdir()) == ["linear_network.nc"]
