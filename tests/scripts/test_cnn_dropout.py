"""scripts/cnn_dropout.py's options and dnnphase.sweeps.experiments.combine_cnn_dropout:
shares of one preset on disjoint seeds join into the result one run would hold."""

import json
import runpy
from pathlib import Path

import pytest
import xarray as xr

from dnnphase.sweeps.experiments import CNN_DROPOUT_SCALES, combine_cnn_dropout
from phasecore.checks import ConfigError
from tests.scripts.refusals import refused

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "cnn_dropout.py"
REDUCED = ROOT / "figures" / "supplement" / "cnn_dropout.nc"


@pytest.fixture(scope="module")
def cli():
    """The script's ``cli`` (its entry point's body), loaded once: its bad options are
    checked in this process, as test_entry_points runs the file itself as a program."""
    return runpy.run_path(str(SCRIPT), run_name="cnn_dropout")["cli"]


def share(ds: xr.Dataset, seeds: list[int]) -> xr.Dataset:
    """The part of ``ds`` a run on ``seeds`` alone would have written."""
    part = ds.sel(seed=seeds)
    part.attrs = dict(ds.attrs)  # its own: a selection may share the attrs dict with ds
    for key in ("config", "config_before"):
        config = json.loads(ds.attrs[key])
        part.attrs[key] = json.dumps({**config, "seeds": seeds}, sort_keys=True)
    return part


def test_shares_join_into_the_whole():
    whole = xr.load_dataset(REDUCED)
    joined = combine_cnn_dropout([share(whole, [2]), share(whole, [0, 1])])
    xr.testing.assert_identical(joined.drop_attrs(), whole.drop_attrs())
    for key in ("config", "config_before"):
        assert json.loads(joined.attrs[key]) == json.loads(whole.attrs[key])


def test_overlapping_seeds_and_other_presets_are_refused():
    whole = xr.load_dataset(REDUCED)
    with pytest.raises(ConfigError, match="disjoint seeds"):
        combine_cnn_dropout([share(whole, [0, 1]), share(whole, [1, 2])])
    other = share(whole, [2])
    config = json.loads(other.attrs["config"])
    other.attrs["config"] = json.dumps({**config, "lr": 1e-4})
    with pytest.raises(ConfigError, match="differs in lr"):
        combine_cnn_dropout([share(whole, [0, 1]), other])
    with pytest.raises(ConfigError, match="a result of cnn_dropout"):
        combine_cnn_dropout([whole.assign_attrs(kind="dnnphase.sweep")])


def test_the_paper_preset_is_the_text_and_the_authors_differ_in_channels_only():
    paper, authors = CNN_DROPOUT_SCALES["paper"], CNN_DROPOUT_SCALES["authors"]
    assert paper["channels"] == 16 and authors["channels"] == 20
    assert {k: v for k, v in authors.items() if k != "channels"} == \
        {k: v for k, v in paper.items() if k != "channels"}


@pytest.mark.parametrize(("args", "words"), [
    (["--banana"], "unrecognized arguments"),
    (["--seeds", "0,11"], "--seeds must be distinct seeds"),
    (["--combine", "missing.nc"], "is not a file"),
    (["--quick", "--paper"], "give one scale"),
    (["--quick", "--scale", "authors"], "give one scale"),
    (["--quick", "--seeds", ""], "--seeds must be"),
    (["--scale", "quick", "--combine", "missing.nc"], "--combine trains nothing"),
])
def test_bad_options_are_one_line_before_any_work(cli, tmp_path, monkeypatch, capsys, args,
                                                  words):
    monkeypatch.chdir(tmp_path)  # "missing.nc" is relative
    assert words in refused(cli, [str(tmp_path / "out"), *args], capsys)
    assert not (tmp_path / "out").exists()


def test_an_interrupted_run_is_one_line_and_exit_code_130(cli, tmp_path, monkeypatch, capsys):
    from phasecore.sweeps import SweepInterrupted

    def interrupted(*args, **kwargs):
        raise SweepInterrupted("interrupted: nothing was stored (no output file)")

    monkeypatch.setitem(cli.__globals__, "cnn_dropout", interrupted)
    assert cli([str(tmp_path / "out"), "--quick"]) == 130
    err = capsys.readouterr().err
    assert err.strip() == "scripts/cnn_dropout.py: interrupted: nothing was stored (no output file)"
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("what", ["not_netcdf", "other_kind", "same_seeds"])
def test_combine_of_wrong_files_is_one_line(cli, tmp_path, monkeypatch, capsys, what):
    if what == "not_netcdf":
        (tmp_path / "a.nc").write_text("hello")
        parts = [tmp_path / "a.nc"]
    elif what == "other_kind":
        parts = [ROOT / "figures" / "supplement" / "two_measures" / "linear_network.nc"]
    else:
        parts = [REDUCED, REDUCED]
    monkeypatch.chdir(tmp_path)
    assert "--combine" in refused(cli, [str(tmp_path / "out"), "--combine", *map(str, parts)],
                                  capsys)
    assert not (tmp_path / "out").exists()
