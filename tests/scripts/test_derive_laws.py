"""scripts/derive_laws.py: He & Su's and Galanti et al.'s statistics added to sweeps from
their stored curves, checked against numpy's own fit and a plain loop; every other byte of
meaning in the file unchanged; idempotent; another value refused without --overwrite."""

import math
import shutil
from pathlib import Path

import netCDF4
import numpy as np
import pytest
import xarray as xr

from tests.scripts.refusals import refused, script_main

ROOT = Path(__file__).resolve().parents[2]
PAPER = sorted((ROOT / "figures" / "paper").glob("dnn_*.nc"))
#: A committed sweep (36 networks) computed before a sweep carried these statistics.
SMALL = ROOT / "figures" / "supplement" / "universality" / "S5_depth3.nc"
DERIVED = ("pearson_r", "decay_ratio", "half_life", "effective_depth")


def _main():
    return script_main("derive_laws")


def _expected(ds: xr.Dataset) -> dict:
    """Each model's statistics by numpy's fit and a loop over layers (independent of
    dnnphase.measures.laws)."""
    knob = ds.attrs["knob"]
    fuzz = ds["load_curve"].sel(measure="fuzziness").transpose("alpha", knob, "seed", "layer")
    ncc = ds["load_curve"].sel(measure="ncc").transpose("alpha", knob, "seed", "layer")
    out = {name: np.full(fuzz.shape[:-1], np.nan) for name in DERIVED}
    for idx in np.ndindex(*fuzz.shape[:-1]):
        log_d = fuzz.values[idx]
        if np.isfinite(log_d).all():
            layer = np.arange(log_d.size)
            slope = np.polyfit(layer, log_d, 1)[0]
            out["pearson_r"][idx] = np.corrcoef(layer, log_d)[0, 1]
            out["decay_ratio"][idx] = math.exp(slope)
            out["half_life"][idx] = math.log(2) / -slope if slope < 0 else math.inf
        reach = [k for k in range(1, ncc.shape[-1]) if ncc.values[idx][k] >= 0.99]
        out["effective_depth"][idx] = reach[0] if reach else np.nan
    return out


def _check_statistics(ds: xr.Dataset) -> None:
    knob = ds.attrs["knob"]
    for name, expected in _expected(ds).items():
        got = ds[name].transpose("alpha", knob, "seed").values
        np.testing.assert_allclose(got, expected, rtol=1e-10, atol=1e-12, err_msg=name)
        assert "derive_laws" in ds[name].attrs["derived"]


def _raw(path: Path) -> dict:
    """Every variable as stored (no decoding): dims, dtype, attributes, filters, bytes."""
    out = {}
    with netCDF4.Dataset(path) as nc:
        nc.set_auto_maskandscale(False)
        out["attrs"] = {k: nc.getncattr(k) for k in nc.ncattrs()}
        for name, var in nc.variables.items():
            values = var[...]
            data = values.tobytes() if values.dtype.kind not in "OUS" else values.tolist()
            attrs = {k: np.asarray(var.getncattr(k)).tobytes() for k in var.ncattrs()}
            out[name] = (var.dimensions, str(var.dtype), attrs, var.filters(), data)
    return out


def test_derived_from_the_curves_nothing_else_changed_then_left_alone(tmp_path, capsys):
    path = tmp_path / SMALL.name
    shutil.copyfile(SMALL, path)
    before = _raw(path)
    assert not set(DERIVED) & set(before)
    assert _main()([str(path)]) == 0
    assert "added" in capsys.readouterr().out
    after = _raw(path)
    assert set(after) == set(before) | set(DERIVED)
    for name, stored in before.items():  # bit for bit, as stored
        assert after[name] == stored, name
    with xr.open_dataset(path) as ds:
        _check_statistics(ds.load())

    stamp = path.stat().st_mtime_ns
    assert _main()([str(path)]) == 0  # idempotent: the same values are not rewritten
    assert "unchanged" in capsys.readouterr().out
    assert path.stat().st_mtime_ns == stamp


def test_other_values_are_refused_before_any_file_is_written(tmp_path, capsys):
    first, second = tmp_path / "a.nc", tmp_path / "b.nc"
    shutil.copyfile(SMALL, first)
    shutil.copyfile(SMALL, second)
    assert _main()([str(second)]) == 0
    with netCDF4.Dataset(second, "a") as nc:
        nc["half_life"][0, 0, 0] = 99.0
    stored = second.read_bytes(), first.read_bytes()
    line = refused(_main(), [str(first), str(second)], capsys)
    assert "half_life" in line and "--overwrite" in line
    assert (second.read_bytes(), first.read_bytes()) == stored  # neither file touched
    assert _main()([str(first), str(second), "--overwrite"]) == 0
    with xr.open_dataset(second) as ds:
        _check_statistics(ds.load())


def test_a_file_that_is_no_sweep_is_refused(tmp_path, capsys):
    report = tmp_path / "report.nc"
    xr.Dataset({"x": ("a", [1.0])}, attrs={"kind": "dnnphase.compare"}).to_netcdf(report)
    assert "dnnphase.sweep" in refused(_main(), [str(report)], capsys)
    assert "no such result file" in refused(_main(), [str(tmp_path / "none.nc")], capsys)


@pytest.mark.parametrize("path", PAPER, ids=[p.stem for p in PAPER])
def test_the_committed_paper_diagrams_carry_the_statistics(path):
    """figures/paper's 960-network diagrams, derived by the script and committed."""
    with xr.open_dataset(path) as ds:
        ds = ds.load()
    assert set(DERIVED) <= set(ds.data_vars)
    _check_statistics(ds)
