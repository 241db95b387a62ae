"""Depth as a sweep axis (``SweepConfig.depths``): the same networks as one sweep per depth,
each depth's load curve at its own length, and the axis's refusals."""

import json

import numpy as np
import pytest

from dnnphase.cli import main as cli_main
from dnnphase.sweeps.sweep import SweepConfig, sweep
from phasecore import results
from phasecore.checks import ConfigError

SMALL = dict(knob="lr", values=(0.01, 0.1), alphas=(0.0,), seeds=(0, 1), dataset="digits",
             n_train=200, epochs=2, optimizer="sgd", momentum=0.9, batch_size=50,
             measures=("fuzziness", "ncc"), scheduler="serial")


def test_a_depth_axis_gives_each_depths_own_sweep_bit_for_bit():
    both = sweep(depths=(2, 4), **SMALL)
    assert both["load_curve"].dims == ("alpha", "lr", "seed", "depth", "measure", "layer")
    assert list(both["layer"].values) == [0, 1, 2, 3, 4]
    for depth in (2, 4):
        alone = sweep(depth=depth, **SMALL)
        mine = both.sel(depth=depth)
        np.testing.assert_array_equal(mine["load_curve"].isel(layer=slice(0, depth + 1)),
                                      alone["load_curve"])
        assert np.isnan(mine["load_curve"].isel(layer=slice(depth + 1, None))).all()
        for name in ("test_accuracy", "pearson_r", "decay_ratio", "curvature",
                     "effective_depth"):
            np.testing.assert_array_equal(mine[name], alone[name])
    assert both["depth"].attrs["units"] == "layers"


def test_a_depth_axis_sweep_is_written_and_read_back(tmp_path):
    path = tmp_path / "depths.nc"
    ds = sweep(depths=(2, 3), output=path, **SMALL)
    back = results.load(path, kind="dnnphase.sweep")
    np.testing.assert_array_equal(back["load_curve"], ds["load_curve"])
    assert results.load(path).attrs["config"].count('"depths": [2, 3]') == 1


@pytest.mark.parametrize("depths, words", [
    ((1, 3), "depths must be integers >= 2"),
    ((2, 2.5), "depths must be integers >= 2"),
    ((3, 3), "depths must be distinct"),
    ((0,), "depths must be integers >= 2"),
    ([[2], [3, 4]], "depths must be integers >= 2"),  # ragged: not numpy's own error
    ("2,3", "depths must be integers >= 2"),
    (["2", "3"], "depths must be integers >= 2"),
    ({2, 3}, "depths must be integers >= 2"),
])
def test_a_bad_depth_axis_is_refused_naming_it(depths, words):
    with pytest.raises(ConfigError, match=words):
        SweepConfig(depths=depths)


@pytest.mark.parametrize("depths, expected", [
    ([np.int64(2), np.int32(3)], (2, 3)),
    (np.array([2, 3], dtype=np.uint8), (2, 3)),
    (np.int64(3), (3,)),
    (3, (3,)),
    (range(2, 4), (2, 3)),
    (None, ()),
])
def test_numpy_integers_in_a_depth_axis_are_taken_as_plain_integers(depths, expected):
    cfg = SweepConfig(depths=depths)
    assert cfg.depths == expected
    assert all(type(d) is int for d in cfg.depths)
    json.dumps(cfg.to_dict())  # the stored configuration (numpy's int64 is not JSON)
    assert [m.depth for m in cfg.per_depth()] == (list(expected) or [cfg.depth])


def test_depth_is_refused_beside_a_depth_axis():
    with pytest.raises(ConfigError, match="depth must be left at its default"):
        SweepConfig(depths=(2, 3), depth=4)


def test_the_command_line_takes_depths_and_refuses_bad_ones_before_writing(tmp_path, capsys):
    out = tmp_path / "s.nc"
    common = ["sweep", "--dataset", "digits", "--n-train", "200", "--epochs", "1",
              "--knob", "lr", "--values", "0.01", "--alpha", "0", "--seeds", "1",
              "--scheduler", "serial", "-o", str(out), "--quiet"]
    assert cli_main(common + ["--depths", "2,3"]) == 0
    assert list(results.load(out)["depth"].values) == [2, 3]
    for bad in ("1,3", "2,x", "2,,3"):
        assert cli_main(common + ["--depths", bad, "--overwrite"]) == 2
        assert "depths must" in capsys.readouterr().err.strip().splitlines()[-1]
    assert list(results.load(out)["depth"].values) == [2, 3]  # untouched


def test_the_command_line_counts_the_networks_of_every_depth(tmp_path, capsys):
    out = tmp_path / "s.nc"
    assert cli_main(["sweep", "--dataset", "digits", "--n-train", "200", "--epochs", "1",
                     "--knob", "lr", "--values", "0.01", "--alpha", "0", "--seeds", "1",
                     "--scheduler", "serial", "-o", str(out), "--depths", "2,3"]) == 0
    assert f"wrote {out}: 2 models, 0 diverged" in capsys.readouterr().out


def test_plot_and_compare_name_the_depth_axis_and_one_depth_is_a_usual_sweep():
    from dnnphase.compare.comparator.alignment import check_network

    ds = sweep(depths=(2, 3), **SMALL)
    with pytest.raises(ConfigError, match=r"network must be a sweep of one depth.*depths 2, 3"):
        check_network(ds)
    one = ds.sel(depth=2).dropna("layer", how="all")
    check_network(one, "fuzziness")
    assert one.sizes["layer"] == 3


def test_tune_refuses_a_depth_axis_before_training(tmp_path, capsys):
    from dnnphase.sweeps.tune import tune

    with pytest.raises(ConfigError, match="depths must be unset for tune"):
        tune(depths=(2, 3), dataset="digits", n_train=200, epochs=1, seeds=2)
    out = tmp_path / "t.nc"
    with pytest.raises(SystemExit) as stop:  # not an option of tune: not in its --help
        cli_main(["tune", "--dataset", "digits", "--n-train", "200", "--epochs", "1",
                  "--seeds", "2", "--alpha", "0", "--scheduler", "serial", "--quiet",
                  "--depths", "2,3", "-o", str(out)])
    assert stop.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "unrecognized arguments: --depths" in err[0]
    assert list(tmp_path.iterdir()) == []  # neither the result nor its rounds' folder
