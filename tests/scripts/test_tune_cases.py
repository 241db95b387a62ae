"""scripts/tune_cases.py's pure parts: the grid's crossing and the verdict (no training)."""

import math
import runpy
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

_PATH = Path(__file__).resolve().parents[2] / "scripts" / "tune_cases.py"
tc = SimpleNamespace(**runpy.run_path(str(_PATH), run_name="tune_cases"))


def test_the_grid_crossing_is_the_first_upward_one_interpolated():
    x = np.array([0.0, 0.1, 0.2, 0.3, 0.4])
    assert tc.grid_crossing(x, np.array([-0.3, -0.1, 0.1, 0.3, 0.5])) == pytest.approx(0.15)
    # a downward crossing is not the theory's direction; the later upward one counts
    assert tc.grid_crossing(x, np.array([0.2, -0.2, -0.1, 0.3, np.nan])) == pytest.approx(0.225)
    assert math.isnan(tc.grid_crossing(x, np.array([-0.5, -0.4, -0.3, -0.2, -0.1])))
    assert math.isnan(tc.grid_crossing(x, np.array([-0.5, np.nan, 0.3, 0.4, 0.5])))


def test_a_difference_counts_beyond_two_combined_standard_errors():
    assert tc.compare(0.60, 0.01, 0.62, 0.01) == "="  # 0.02 <= 2 * 0.0141
    assert tc.compare(0.55, 0.01, 0.60, 0.01) == "<"
    assert tc.compare(0.65, 0.01, 0.60, 0.01) == ">"
    assert tc.compare(math.nan, 0.01, 0.60, 0.01) == "?"


def test_the_verdict_sorts_cases_by_their_numbers():
    def row(name, tune, grid, val):
        return {"network": name, "knob": "dropout", "tune_acc": tune, "tune_acc_se": 0.005,
                "grid_acc": grid, "grid_acc_se": 0.005, "val_acc": val, "val_acc_se": 0.005}

    v = tc.verdict([row("a", 0.60, 0.605, 0.58), row("b", 0.55, 0.61, 0.60)])
    assert v["holds"] == ["a / dropout"] and v["fails"] == ["b / dropout"]
    assert v["tune_better"] == ["a / dropout"] and v["validation_better"] == ["b / dropout"]


def test_docs_tune_holds_the_table_the_committed_cases_give():
    import xarray as xr

    root = _PATH.parents[1]
    rows = tc.from_dataset(xr.load_dataset(root / "figures" / "tune" / "cases.nc"))
    table = tc.markdown(rows).strip()
    assert table == (root / "figures" / "tune" / "cases.md").read_text().strip()
    assert table in (root / "docs" / "tune.md").read_text(), "docs/tune.md: table out of date"
