"""dnnphase tune says where its rule was checked, and says what the committed table says."""

from pathlib import Path

import numpy as np
import xarray as xr

from dnnphase import cli
from dnnphase.sweeps.tune import CAVEAT

ROOT = Path(__file__).resolve().parents[3]


def test_the_command_line_prints_the_caveat_and_stores_it(tmp_path, capsys):
    out = tmp_path / "t.nc"
    cli.main(["tune", "--knob", "dropout", "--low", "0", "--high", "0.2", "--rounds", "1",
              "--dataset", "digits", "--n-train", "200", "--depth", "3", "--width", "8",
              "--epochs", "2", "--seeds", "2", "--scheduler", "serial", "-o", str(out)])
    assert CAVEAT in capsys.readouterr().err
    assert xr.load_dataset(out).attrs["caveat"] == CAVEAT


def test_the_caveat_names_the_cases_where_the_committed_table_found_the_rule_failing():
    cases = xr.load_dataset(ROOT / "figures" / "tune" / "cases.nc")
    gap = (cases["grid_acc"] - cases["tune_acc"]).values
    width = 2 * np.hypot(cases["grid_acc_se"].values, cases["tune_acc_se"].values)
    failing = cases["network"].values[gap > width]
    for network in failing:  # "gmm MLP" -> gmm; "digits CNN" -> CNN
        word = network.split()[0] if network.endswith("MLP") else network.split()[1]
        assert word in CAVEAT, (network, CAVEAT)
    low, high = 100 * gap[gap > width].min(), 100 * gap[gap > width].max()
    assert f"{low:.1f}-{high:.0f} points" in CAVEAT, (low, high)
