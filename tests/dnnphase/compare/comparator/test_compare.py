"""The comparator on constructed inputs, its bad-input errors, the chain fitted to a sweep
(and the paper's dictionary read off it), and reproduce end to end."""

import json
from pathlib import Path

import numpy as np
import pytest
import xarray as xr

from dnnphase import compare as cmp
from dnnphase.cli import main
from dnnphase.compare.comparator.alignment import aligned_labels
from dnnphase.compare.figures import comparison as figures
from phasecore import results
from springblock import theory
from tests.images import assert_picture

#: The top level of figures/ is the committed output of ``reproduce --preset quick``
#: (README); the test preset runs the same stages at a smaller scale.
QUICK_REFERENCE = Path(__file__).resolve().parents[4] / "figures"


def _names(ds: xr.Dataset) -> set[str]:
    """Every variable, coordinate, dimension and attribute name of a result."""
    return ({f"variable {v}" for v in ds.variables} | {f"dimension {d}" for d in ds.dims}
            | {f"attribute {a}" for a in ds.attrs})


def assert_reference_is_current(made: Path, committed: Path) -> None:
    """Every name the current code writes is in the committed file of the same stage, so a
    change that adds a variable cannot leave the committed reference stale silently
    (regenerate it with the README's main command)."""
    missing = sorted(_names(results.load(made)) - _names(results.load(committed)))
    assert not missing, (f"{committed} lacks what the current code writes: "
                         f"{', '.join(missing)}; regenerate it (README's main command)")


def parabola(c, n_layers=8):
    """Load curves (..., L+1) from 1 to 0 with scale-free curvature exactly c."""
    u = np.linspace(0, 1, n_layers)
    c = np.asarray(c, dtype=float)[..., None]
    return 1 - u + c * (u * u - u)


def fake_network(curv, alphas, knob="dropout", values=None, accuracy=None, seeds=2):
    """A minimal dnnphase.sweep Dataset with given mean scale-free curvature (alpha, knob)."""
    curv = np.asarray(curv, dtype=float)
    values = np.linspace(0, 0.3, curv.shape[1]) if values is None else values
    curves = np.repeat(parabola(curv)[:, :, None, None, :], seeds, axis=2)  # (a, v, s, 1, L+1)
    from phasecore import loadcurve

    acc = np.zeros(curv.shape + (seeds,)) + (0.5 if accuracy is None else accuracy[..., None])
    ds = xr.Dataset(
        {"load_curve": (("alpha", knob, "seed", "measure", "layer"), curves),
         "curvature_scaled": (("alpha", knob, "seed", "measure"),
                              loadcurve.curvature_scaled(curves)),
         "test_accuracy": (("alpha", knob, "seed"), acc)},
        coords={"alpha": alphas, knob: (knob, values, {"noisier": "larger"}),
                "seed": np.arange(seeds), "measure": ["trace_ratio"],
                "layer": np.arange(8)},
        attrs={"kind": "dnnphase.sweep", "knob": knob},
    )
    return ds


def fake_spring(curv, friction, noise, seeds=2):
    curv = np.asarray(curv, dtype=float)
    curves = np.repeat(parabola(curv)[:, :, None, :], seeds, axis=2)
    from phasecore import loadcurve

    return xr.Dataset(
        {"load_curve": (("mu_right", "noise", "seed", "layer"), curves),
         "curvature_scaled": (("mu_right", "noise", "seed"), loadcurve.curvature_scaled(curves)),
         "horizon": (("mu_right", "noise", "seed"), np.full(curv.shape + (seeds,), 1000.0))},
        coords={"mu_right": friction, "noise": noise, "seed": np.arange(seeds),
                "layer": np.arange(8)},
        attrs={"kind": "springblock.phase_diagram"},
    )


# The theory's picture on both sides: more nonlinearity (friction, 1 - alpha) -> concave,
# more noise -> convex. Spring rows: friction up; network rows: alpha up (so reversed).
SPRING_CURV = np.array([[-0.2, 0.0, 0.2, 0.4],
                        [-0.4, -0.2, 0.0, 0.2],
                        [-0.6, -0.4, -0.2, 0.0]])


def test_matching_diagrams_agree_perfectly():
    network = fake_network(SPRING_CURV[::-1], alphas=[0.0, 0.5, 1.0])
    spring = fake_spring(SPRING_CURV, friction=[0.0, 0.01, 0.02], noise=[0, 0.01, 0.02, 0.03])
    report = cmp.compare(spring, network, tolerance=0.05)
    assert report.attrs["label_agreement"] == 1.0
    assert report.attrs["label_kappa"] == pytest.approx(1.0)
    np.testing.assert_allclose(report["network_rho_along_noise"], 1.0)
    np.testing.assert_allclose(report["network_rho_along_nonlinearity"], -1.0)
    np.testing.assert_allclose(report["spring_rho_along_noise"], 1.0)
    np.testing.assert_allclose(report["spring_rho_along_nonlinearity"], -1.0)
    # network rows were re-oriented: alpha = 1 (least nonlinear) comes first
    np.testing.assert_array_equal(report["alpha"], [1.0, 0.5, 0.0])


def test_labels_follow_the_tolerance_band():
    network = fake_network(SPRING_CURV[::-1], alphas=[0.0, 0.5, 1.0])
    spring = fake_spring(SPRING_CURV, friction=[0.0, 0.01, 0.02], noise=[0, 0.01, 0.02, 0.03])
    wide = cmp.compare(spring, network, tolerance=0.3)
    labels = wide["network_label"].values
    assert np.sum(labels == 0) == 8 and np.sum(labels == -1) == 3 and np.sum(labels == 1) == 1


def test_opposite_orientation_disagrees():
    # a network whose curvature falls with noise: the theory's orientation fails
    network = fake_network(-SPRING_CURV[::-1], alphas=[0.0, 0.5, 1.0])
    spring = fake_spring(SPRING_CURV, friction=[0.0, 0.01, 0.02], noise=[0, 0.01, 0.02, 0.03])
    report = cmp.compare(spring, network)
    assert report.attrs["network_mean_rho_along_noise"] == pytest.approx(-1.0)
    assert report.attrs["label_agreement"] < 0.5 and report.attrs["label_kappa"] < 0


def test_rank_alignment_maps_different_grid_sizes():
    spring_labels = np.arange(12.0).reshape(3, 4)
    aligned = aligned_labels(spring_labels, (2, 3))
    np.testing.assert_array_equal(aligned, [[0, 2, 3], [8, 10, 11]])


def test_accuracy_peak_finds_a_known_maximum():
    rng = np.random.default_rng(0)
    c = rng.uniform(-1, 1, 400)
    acc = 0.9 - 0.3 * (c - 0.1) ** 2 + 0.01 * rng.standard_normal(400)
    peak = cmp.accuracy_peak(c, acc, n_boot=300)
    assert peak["peak"] == pytest.approx(0.1, abs=0.03)
    assert peak["peak_low"] < 0.1 < peak["peak_high"]
    assert peak["peak_high"] - peak["peak_low"] < 0.1


def test_accuracy_peak_intervals_resample_cells_not_models():
    """20 cells of 10 seeds: a cell's seeds share a cell-level accuracy offset, so the
    independent unit is the cell. Resampling cells gives a wider interval than treating
    the 200 models as independent (each model its own cell, the 1-D form), and both
    estimates (quadratic vertex, best bin) cover the true peak."""
    rng = np.random.default_rng(1)
    c_cell = np.linspace(-1, 1, 20)  # (K,)
    offset = 0.02 * rng.standard_normal(20)  # shared by a cell's seeds
    c = c_cell[:, None] + 0.02 * rng.standard_normal((20, 10))  # (K, S)
    acc = 0.9 - 0.2 * (c - 0.1) ** 2 + offset[:, None] + 0.002 * rng.standard_normal((20, 10))
    cells = cmp.accuracy_peak(c, acc, n_boot=400)
    models = cmp.accuracy_peak(c.ravel(), acc.ravel(), n_boot=400)
    assert cells["n_cells"] == 20 and models["n_cells"] == 200
    assert cells["peak"] == models["peak"]  # the same fit; only the intervals differ
    assert cells["peak_high"] - cells["peak_low"] > 1.5 * (models["peak_high"] - models["peak_low"])
    for low, high in (("peak_low", "peak_high"), ("binned_low", "binned_high")):
        assert cells[low] < 0.1 < cells[high]
    assert cells["binned_low"] <= cells["binned_peak"] <= cells["binned_high"]
    # the binned peak is the mean curvature of the best of 8 equal-count bins
    best = np.nanargmax(cells["bin_accuracy"])
    assert cells["binned_peak"] == cells["bin_curvature"][best]


def test_far_out_curvatures_do_not_decide_the_accuracy_peak():
    rng = np.random.default_rng(0)
    c = rng.uniform(-1, 1, 400)
    acc = 0.9 - 0.3 * (c - 0.1) ** 2 + 0.01 * rng.standard_normal(400)
    c_out, acc_out = np.append(c, [-90.0, -60.0]), np.append(acc, [0.7, 0.6])  # tiny drops
    peak = cmp.accuracy_peak(c_out, acc_out, n_boot=300)
    assert peak["excluded"] == 2 and peak["low"] > -60
    assert peak["peak"] == pytest.approx(cmp.accuracy_peak(c, acc, n_boot=300)["peak"])
    assert cmp.accuracy_peak(c, acc, n_boot=10)["excluded"] == 0


def test_partial_nan_cells_warn_and_are_masked():
    curv = SPRING_CURV[::-1].copy()
    curv[0, 0] = np.nan
    network = fake_network(curv, alphas=[0.0, 0.5, 1.0])
    spring = fake_spring(SPRING_CURV, friction=[0.0, 0.01, 0.02], noise=[0, 0.01, 0.02, 0.03])
    with pytest.warns(UserWarning, match="masked"):
        report = cmp.compare(spring, network)
    assert np.isnan(report["label_agreement"].values).sum() == 1
    assert report.attrs["label_agreement"] == 1.0


def test_bad_inputs_are_clear_errors():
    network = fake_network(SPRING_CURV[::-1], alphas=[0.0, 0.5, 1.0])
    spring = fake_spring(SPRING_CURV, friction=[0.0, 0.01, 0.02], noise=[0, 0.01, 0.02, 0.03])
    with pytest.raises(ValueError, match="expected a spring phase diagram"):
        cmp.compare(network, network)
    with pytest.raises(ValueError, match="expected a network sweep"):
        cmp.compare(spring, spring)
    with pytest.raises(ValueError, match="lacks variables: test_accuracy"):
        cmp.compare(spring, network.drop_vars("test_accuracy"))
    with pytest.raises(ValueError, match="every cell of the network phase diagram is NaN"):
        cmp.compare(spring, network.map(lambda v: v * np.nan if v.dtype.kind == "f" else v,
                                        keep_attrs=True).assign_attrs(network.attrs))
    with pytest.raises(ValueError, match="empty"):
        cmp.compare(spring, network.isel(alpha=slice(0, 0)))
    with pytest.raises(ValueError, match="measure must be one of trace_ratio"):
        cmp.compare(spring, network, measure="cdnv")


def test_chain_axes_in_either_order_give_the_same_report_and_others_are_refused():
    network = fake_network(SPRING_CURV[::-1], alphas=[0.0, 0.5, 1.0])
    spring = fake_spring(SPRING_CURV, friction=[0.0, 0.01, 0.02], noise=[0, 0.01, 0.02, 0.03])
    report = cmp.compare(spring, network, tolerance=0.05)
    transposed = spring.transpose("noise", "mu_right", "seed", "layer")
    again = cmp.compare(transposed, network, tolerance=0.05)
    assert again.attrs["label_kappa"] == pytest.approx(1.0)
    xr.testing.assert_identical(report, again)
    wrong = spring.rename({"noise": "modulus"})
    with pytest.raises(ValueError, match="friction axis .* and the noise axis .* mu_right x "
                                         "modulus"):
        cmp.compare(wrong, network)


def test_too_few_models_for_the_accuracy_peak_still_give_a_report():
    network = fake_network(SPRING_CURV[::-1][:2, :1], alphas=[0.0, 1.0], seeds=1)
    spring = fake_spring(SPRING_CURV, friction=[0.0, 0.01, 0.02], noise=[0, 0.01, 0.02, 0.03])
    report = cmp.compare(spring, network, tolerance=0.05)
    assert "at least 4 finite samples" in report.attrs["accuracy_missing"]
    text = cmp.summary(report)
    assert "nan" not in text.lower().replace("n/a", "")
    assert "n/a (needs >= 3 alpha values)" in text and "n/a (needs >= 3 dropout values)" in text
    assert "test accuracy vs curvature: n/a (accuracy vs curvature needs at least 4" in text


def test_cli_compare_errors_exit_2(tmp_path, capsys):
    network = fake_network(SPRING_CURV[::-1], alphas=[0.0, 0.5, 1.0])
    spring = fake_spring(SPRING_CURV, friction=[0.0, 0.01, 0.02], noise=[0, 0.01, 0.02, 0.03])
    results.save(network, tmp_path / "net.nc")
    results.save(spring, tmp_path / "spring.nc")
    (tmp_path / "junk.nc").write_text("not a result")
    assert main(["compare", str(tmp_path / "net.nc"), str(tmp_path / "spring.nc"),
                 "-o", str(tmp_path / "r")]) == 2
    assert "spring phase diagram comes first" in capsys.readouterr().err
    assert main(["compare", str(tmp_path / "junk.nc"), str(tmp_path / "net.nc"),
                 "-o", str(tmp_path / "r")]) == 2
    assert "not a NetCDF result" in capsys.readouterr().err
    assert main(["compare", str(tmp_path / "spring.nc"), str(tmp_path / "net.nc"),
                 "-o", str(tmp_path / "r")]) == 0
    assert (tmp_path / "r" / "report.nc").exists() and (tmp_path / "r" / "phase.png").exists()
    assert main(["compare", str(tmp_path / "spring.nc"), str(tmp_path / "net.nc"),
                 "-o", str(tmp_path / "net.nc")]) == 2  # an existing file, not a folder
    err = capsys.readouterr().err.strip()
    assert "output must be a folder" in err and "\n" not in err
    assert main(["fit", str(tmp_path / "spring.nc"), "-o", str(tmp_path / "f.nc")]) == 2
    assert "expected 'dnnphase.sweep'" in capsys.readouterr().err
    assert main(["fit", str(tmp_path / "net.nc"), "--trajectory", "--horizon", "5",
                 "--refine", "simulation", "-o", str(tmp_path / "f.nc")]) == 2
    assert "--horizon, --refine apply to the final-curve fit only" in capsys.readouterr().err
    assert not (tmp_path / "f.nc").exists()
    # a folder holding only an earlier figure: that figure is an output too
    (tmp_path / "q").mkdir()
    (tmp_path / "q" / "phase.png").write_text("an earlier figure")
    assert main(["compare", str(tmp_path / "spring.nc"), str(tmp_path / "net.nc"),
                 "-o", str(tmp_path / "q")]) == 2
    assert "phase.png' exists; pass --overwrite" in capsys.readouterr().err
    assert (tmp_path / "q" / "phase.png").read_text() == "an earlier figure"
    assert sorted(p.name for p in (tmp_path / "q").iterdir()) == ["phase.png"]


def test_reproduce_test_preset_end_to_end(tmp_path, capsys):
    out = tmp_path / "figs"
    assert main(["reproduce", "--preset", "test", "-o", str(out), "--quiet"]) == 0
    for name in ("phase_dropout.png", "fit_dropout.png", "accuracy_dropout.png",
                 "dynamics_dropout.png"):
        assert_picture(out / name)
    assert results.load(out / "dnn_dropout.nc", kind="dnnphase.sweep").sizes["seed"] == 2
    assert results.load(out / "spring_phase.nc", kind="springblock.phase_diagram").sizes[
        "mu_right"] == 3
    report = results.load(out / "report_dropout.nc")
    for key in ("label_agreement", "label_kappa", "accuracy_peak_curvature"):
        assert key in report.attrs
    fit = results.load(out / "fit_dropout.nc", kind="dnnphase.fit")
    assert {"mu_right", "noise", "effective_force", "residual"} <= set(fit.data_vars)
    assert fit["residual"].dims == ("alpha", "dropout") and "versions" in fit.attrs
    table = results.load(out / "dictionary_dropout.nc")
    assert table["rho_effective_force_along_knob"].dims == ("alpha",)
    # the trajectory fit of the same sweep, from the command line
    assert main(["fit", str(out / "dnn_dropout.nc"), "--trajectory", "-o", str(tmp_path / "t.nc"),
                 "--figure", str(tmp_path / "t.png")]) == 0
    traj = results.load(tmp_path / "t.nc", kind="dnnphase.fit")
    for name in ("mu_right", "mu_left", "noise", "chi2_per_dof", "mu_right_unbounded"):
        assert traj[name].dims == ("alpha", "dropout"), name
    assert_picture(tmp_path / "t.png")
    assert_picture(tmp_path / "t_worst.png", min_width=300)
    for made in sorted(out.glob("*.nc")):
        assert_reference_is_current(made, QUICK_REFERENCE / made.name)
    assert_reference_is_current(tmp_path / "t.nc", QUICK_REFERENCE / "fit_trajectory_dropout.nc")
    # ... and started where the networks start
    assert main(["fit", str(out / "dnn_dropout.nc"), "--trajectory", "--start", "network",
                 "-o", str(tmp_path / "n.nc")]) == 0
    started = results.load(tmp_path / "n.nc", kind="dnnphase.fit")
    assert started["total_drop"].dims == ("alpha", "dropout")
    assert started["acceptable"].dtype == bool and "start" in started.attrs["config"]
    assert report["row_peak_value"].dims == ("nonlinearity",)
    # a rerun reuses the stored results instead of recomputing or refusing, also a sweep
    # computed with another chunk size on another device (how, not what)
    stored = results.load(out / "dnn_dropout.nc")
    config = json.loads(stored.attrs["config"])
    stored.attrs["config"] = json.dumps({**config, "models_per_chunk": 320, "device": "cuda"})
    results.save(stored, out / "dnn_dropout.nc", overwrite=True)
    capsys.readouterr()
    assert main(["reproduce", "--preset", "test", "--knobs", "dropout", "-o", str(out)]) == 0
    assert "reusing" in capsys.readouterr().out
    assert main(["reproduce", "--preset", "huge", "-o", str(out)]) == 2
    before = sorted(p.name for p in out.iterdir())
    assert main(["reproduce", "--preset", "test", "--knobs", "dropout,lr", "-o", str(out)]) == 2
    assert "knobs must be one or more of this preset's knobs: dropout (not 'lr')" in \
        capsys.readouterr().err
    assert main(["reproduce", "--preset", "test", "--knobs", "dropout,,", "-o", str(out)]) == 2
    assert "(not '', '')" in capsys.readouterr().err
    assert sorted(p.name for p in out.iterdir()) == before


def test_row_accuracy_peaks_find_the_peak_its_ties_and_the_boundary():
    values = np.array([0.0, 0.1, 0.2, 0.3])
    curv = np.array([[-0.6, -0.2, 0.2, 0.6],  # crosses 0 halfway between 0.1 and 0.2
                     [-0.6, -0.5, -0.4, -0.3]])  # never crosses
    acc = np.array([[0.80, 0.90, 0.899, 0.70],
                    [0.85, 0.80, 0.75, 0.70]])
    noise = np.array([-1.0, 1.0]) * 0.001  # two seeds: standard error 0.001 per cell
    rows = cmp.row_accuracy_peaks(curv[..., None] + 0 * noise, acc[..., None] + noise, values)
    assert rows["peak_value"].tolist() == [0.1, 0.0]
    np.testing.assert_allclose(rows["peak_accuracy"], [0.90, 0.85])
    np.testing.assert_allclose(rows["peak_accuracy_se"], [0.001, 0.001])
    assert rows["tied_low"].tolist() == [0.1, 0.0] and rows["tied_high"].tolist() == [0.2, 0.0]
    np.testing.assert_allclose(rows["tied_curvature_low"], [-0.2, -0.6])
    np.testing.assert_allclose(rows["tied_curvature_high"], [0.2, -0.6])
    np.testing.assert_allclose(rows["boundary_value"][0], 0.15)
    assert rows["boundary_direction"][0] == 1
    assert np.isnan(rows["boundary_value"][1]) and np.isnan(rows["boundary_direction"][1])
    # the tied set, the boundary in grid steps and whether a tie flanks it
    np.testing.assert_array_equal(rows["tied"], [[0, 1, 1, 0], [1, 0, 0, 0]])
    np.testing.assert_allclose(rows["boundary_position"][0], 1.5)
    np.testing.assert_allclose(rows["peak_to_boundary_steps"][0], 0.5)
    np.testing.assert_allclose(rows["tied_to_boundary_steps"][0], 0.5)
    assert rows["tied_adjacent_to_boundary"][0] == 1
    assert np.isnan(rows["tied_adjacent_to_boundary"][1])
    # ties that are not contiguous: best at 0, tied at 0.3, boundary between 0.1 and 0.2
    gap = cmp.row_accuracy_peaks(curv[:1, :, None] + 0 * noise,
                                 np.array([[0.90, 0.80, 0.80, 0.8995]])[..., None] + noise,
                                 values)
    np.testing.assert_array_equal(gap["tied"], [[1, 0, 0, 1]])
    assert gap["tied_low"][0] == 0.0 and gap["tied_high"][0] == 0.3
    assert gap["tied_adjacent_to_boundary"][0] == 0
    np.testing.assert_allclose(gap["peak_to_boundary_steps"][0], 1.5)
    np.testing.assert_allclose(gap["tied_to_boundary_steps"][0], 1.5)
    # the other way round, and in log for knobs whose values span decades
    back = cmp.row_accuracy_peaks(np.array([[[0.5], [-0.5]]]), np.ones((1, 2, 1)),
                                  np.array([1e-3, 1e-1]), log_scale=True)
    assert back["boundary_direction"][0] == -1
    np.testing.assert_allclose(back["boundary_value"][0], 1e-2)


def test_row_peaks_follow_the_noisier_direction_and_reach_the_summary():
    # batch size: smaller is noisier, so the oriented rows run from 2560 down to 40
    curv = np.array([[0.4, 0.1, -0.2, -0.5]])  # (alpha, batch size 40..2560)
    acc = np.array([[0.7, 0.9, 0.8, 0.6]])
    network = fake_network(curv, alphas=[0.0], knob="batch_size", values=[40, 160, 640, 2560],
                           accuracy=acc)
    network["batch_size"].attrs["noisier"] = "smaller"
    spring = fake_spring(SPRING_CURV, friction=[0.0, 0.01, 0.02], noise=[0, 0.01, 0.02, 0.03])
    report = cmp.compare(spring, network)
    assert float(report["row_peak_value"][0]) == 160
    # curvature turns >= 0 between 640 (-0.2) and 160 (+0.1): two thirds of the way
    text = cmp.summary(report)
    assert "alpha 0: 0.900 ± 0.000 at batch_size 160" in text
    assert "as batch_size gets noisier, i.e. smaller" in text
    # batch size is interpolated in log: 640 * (160 / 640) ** (2 / 3)
    assert float(report["row_boundary_value"][0]) == pytest.approx(640 * 0.25 ** (2 / 3))
    assert "boundary concave -> convex at 254" in text
    convex = fake_network(np.array([[0.4, 0.6]]), alphas=[0.0])
    assert "boundary none (convex throughout)" in cmp.summary(cmp.compare(spring, convex))


def test_diverged_chain_cells_warn_and_the_summary_says_why_a_correlation_is_missing():
    network = fake_network(SPRING_CURV[::-1], alphas=[0.0, 0.5, 1.0])
    curv = SPRING_CURV.copy()
    curv[:, 1:] = np.nan  # every noisy chain cell diverged
    spring = fake_spring(curv, friction=[0.0, 0.01, 0.02], noise=[0, 0.01, 0.02, 0.03])
    with pytest.warns(UserWarning, match="9 chain cell.s. have no finite curvature"):
        report = cmp.compare(spring, network)
    text = cmp.summary(report)
    assert "n/a (needs >= 3 finite cells along the noise values)" in text


def test_a_far_out_cell_saturates_instead_of_washing_out_the_colour_scale():
    from phasecore.panels import symmetric_limit

    rng = np.random.default_rng(1)
    cells = rng.uniform(-2, 2, 50)
    assert symmetric_limit(cells) == pytest.approx(np.abs(cells).max())
    assert symmetric_limit(np.append(cells, -90.0)) == pytest.approx(np.abs(cells).max())
    assert symmetric_limit([np.nan]) == 1.0 and symmetric_limit([0.0, 0.0]) == 1.0


# --------------------------------------------------------------------------
# the chain fitted to every cell of a sweep, and the dictionary read off the fits
# --------------------------------------------------------------------------


def _chain_trajectories(mu_right, mu_left, noise, time_scale, epochs, blocks=7):
    """Mean-field load curves (n, E, L+1) at t = c * epoch, from rest."""
    x = theory.predict_positions(blocks, mu_right, mu_left, noise, epochs[-1], times=epochs,
                                 time_scale=time_scale)
    return theory.load_curve(x)


def _fake_fit(noise, friction, unbounded=False, log_se=0.05):
    """A fit Dataset over (alpha, dropout) as dictionary_table reads it."""
    dims = ("alpha", "dropout")
    data = {}
    for name, value in (("noise", noise), ("mu_right", friction)):
        value = np.asarray(value, dtype=float)
        se = np.full(value.shape, np.inf if unbounded else log_se)
        data[name] = (dims, value)
        data[f"{name}_log_se"] = (dims, se)
        data[f"{name}_unbounded"] = (dims, np.full(value.shape, unbounded))
        data[f"{name}_low"] = (dims, np.full(value.shape, 1e-4) if unbounded
                               else value * np.exp(-2 * log_se))
        data[f"{name}_high"] = (dims, np.full(value.shape, 0.3) if unbounded
                                else value * np.exp(2 * log_se))
    return xr.Dataset(data, coords={"alpha": [0.0, 0.5, 1.0], "dropout": [0.0, 0.1, 0.2, 0.3]})


def test_dictionary_table_reads_monotone_and_unidentified_fits():
    alpha = np.array([0.0, 0.5, 1.0])[:, None]
    knob = np.array([0.0, 0.1, 0.2, 0.3])[None, :]
    noise = 0.01 * (1 + 2 * knob) * (1 + alpha)  # rises along every row
    friction = 0.02 * (2 - alpha) + 0 * knob  # falls with alpha in every column
    tab = cmp.dictionary_table(_fake_fit(noise, friction), "dropout", n_boot=500)
    np.testing.assert_allclose(tab["rho_noise_along_knob"], 1.0)
    np.testing.assert_allclose(tab["rho_friction_along_alpha"], -1.0)
    assert tab.attrs["share_rows_noise_rising"] == 1.0
    assert tab.attrs["share_cols_friction_falling"] == 1.0
    assert tab.attrs["share_rows_noise_rising_significant"] == 1.0
    assert np.all(tab["rho_noise_along_knob_low"] > 0)
    # the knob oriented the other way (noisier when smaller) flips the rows
    flipped = cmp.dictionary_table(_fake_fit(noise, friction), "dropout",
                                   larger_is_noisier=False, n_boot=500)
    np.testing.assert_allclose(flipped["rho_noise_along_knob"], -1.0)
    # unidentified cells: the same point estimates, intervals spanning 0
    vague = cmp.dictionary_table(_fake_fit(noise, friction, unbounded=True), "dropout",
                                 n_boot=500)
    assert vague.attrs["share_rows_noise_rising_significant"] == 0.0
    assert np.all(vague["rho_noise_along_knob_low"] < 0)
    with pytest.raises(ValueError, match="fit"):
        cmp.dictionary_table(_fake_fit(noise, friction).drop_vars("noise_log_se"), "dropout")


def test_fit_sweep_labels_both_fits_of_a_network_like_sweep():
    """A sweep-shaped Dataset made of chain curves (alpha, dropout, seed, epoch, layer)."""
    epochs = np.array([0.0, 20.0, 40.0, 60.0])
    mus = np.array([[0.02, 0.01], [0.015, 0.005]])  # (alpha, dropout)
    traj = _chain_trajectories(mus, 2 * mus, 0.01 + 0 * mus, 5.0, epochs)  # (2, 2, E, L+1)
    rng = np.random.default_rng(0)
    per_seed = 3.0 * traj[:, :, None] + 0.01 * rng.standard_normal((2, 2, 3) + traj.shape[2:])
    dims = ("alpha", "dropout", "seed")
    network = xr.Dataset(
        {"load_curve": (dims + ("layer",), per_seed[:, :, :, -1]),
         "load_curve_epochs": (dims + ("epoch", "layer"), per_seed)},
        coords={"alpha": [0.0, 1.0], "dropout": [0.0, 0.2], "seed": [0, 1, 2], "epoch": epochs,
                "layer": np.arange(8)},
        attrs={"kind": "dnnphase.sweep"})
    final = cmp.fit_sweep_final(network, horizon=100.0, grid=(6, 6))
    assert final["mu_right"].dims == ("alpha", "dropout")
    assert final.attrs["kind"] == "springblock.fit.fit_spring" and "config" in final.attrs
    traj_fit = cmp.fit_sweep_trajectory(network, bounds={"horizon": (20.0, 600.0)},
                                        max_iter=15, profile_values=0)
    assert traj_fit["frame_residual"].dims == ("alpha", "dropout", "epoch")
    assert traj_fit.sizes["epoch"] == 3 and traj_fit.attrs["weighted_by_seed_variance"] == 1
    assert float(traj_fit["residual"].max()) < 0.02  # chain curves fit to within their noise
    # three frames hardly pin four parameters: the truth must lie in the (wide) intervals
    for name, truth in (("time_scale", 5.0), ("mu_right", mus)):
        assert np.all((traj_fit[f"{name}_low"] <= truth) & (truth <= traj_fit[f"{name}_high"]))
    with pytest.raises(ValueError, match="load_curve_epochs"):
        cmp.fit_sweep_trajectory(network.drop_vars("load_curve_epochs"))

    maps = figures.plot_trajectory_fit_maps(traj_fit, "dropout")
    titles = [ax.get_title() for ax in maps.axes if ax.get_title()]
    assert len(titles) == 6 and titles[0].startswith("RMS residual")
    # one entry draws the maps of either kind of fit
    assert [ax.get_title() for ax in figures.plot_fit(traj_fit, "dropout").axes] == \
        [ax.get_title() for ax in maps.axes]
    final_titles = [ax.get_title() for ax in figures.plot_fit(final, "dropout").axes
                    if ax.get_title()]
    assert len(final_titles) == 4 and final_titles[0].startswith("effective force")
    worst = traj_fit["residual"].where(traj_fit["residual"] == traj_fit["residual"].max(),
                                       drop=True)
    title = figures.plot_worst_fit(traj_fit).axes[0].get_title()
    assert f"alpha {worst['alpha'].item():g}, dropout {worst['dropout'].item():g}" in title


def test_effective_force_table_bootstraps_over_seeds():
    """Equal-force chain curves with F falling along both axes, plus seed noise."""
    alpha, dropout = np.array([0.0, 0.5, 1.0]), np.array([0.0, 0.1, 0.2, 0.3])
    force = 0.03 - 0.04 * alpha[:, None] - 0.1 * dropout[None, :]  # (3, 4)
    clean = theory.load_curve(theory.equal_force_state(force, 7))  # (3, 4, 8)
    rng = np.random.default_rng(1)
    seeds = 5.0 * clean[:, :, None] + 0.005 * rng.standard_normal((3, 4, 6, 8))
    network = xr.Dataset({"load_curve": (("alpha", "dropout", "seed", "layer"), seeds)},
                         coords={"alpha": alpha, "dropout": dropout})
    tab = cmp.effective_force_table(network, "dropout", n_boot=200)
    np.testing.assert_allclose(tab["effective_force"], force, atol=2e-3)
    np.testing.assert_allclose(tab["rho_effective_force_along_knob"], -1.0)
    np.testing.assert_allclose(tab["rho_effective_force_along_alpha"], -1.0)
    assert tab.attrs["share_rows_falling_with_noise_significant"] == 1.0
    # pure seed noise with no trend: no row is significant
    flat = 5.0 * clean[1:2, 1:2, None] + 0.05 * rng.standard_normal((3, 4, 6, 8))
    tab = cmp.effective_force_table(network.copy(data={"load_curve": flat}), "dropout",
                                    n_boot=200)
    assert tab.attrs["share_rows_falling_with_noise_significant"] < 1.0
    assert np.all(tab["rho_effective_force_along_knob_low"] < 0.5)


def _noisy_sweep(shift=0.0, seed=0, seeds=10):
    """A 6 x 16 sweep whose seeds scatter (sd 0.1 in curvature, 0.01 in accuracy) around
    fixed cell means, plus ``shift`` in both."""
    rng = np.random.default_rng(seed)
    means = np.linspace(-0.5, 0.5, 6)[:, None] + np.linspace(0, 0.3, 16)[None, :]
    ds = fake_network(means, alphas=np.linspace(0, 1, 6), seeds=seeds)
    noise = rng.standard_normal(means.shape + (seeds,))
    ds["curvature_scaled"][:] = (means[..., None] + shift + 0.1 * noise)[..., None]
    ds["test_accuracy"][:] = 0.9 + shift / 10 + 0.01 * rng.standard_normal(noise.shape)
    return ds


def test_sweeps_agree_in_units_of_the_seeds_standard_error():
    a = _noisy_sweep()
    same = cmp.sweeps_agree(a, a.copy(deep=True))
    assert same.attrs["bitwise_equal_runs"] == 1 and same.attrs["curvature_z_max"] == 0
    # an independent run of the same distribution: |z| like a t statistic, ~5 % beyond 2
    other = cmp.sweeps_agree(a, _noisy_sweep(seed=1))
    assert other.attrs["curvature_z_cells"] == 96
    assert 0.4 < other.attrs["curvature_z_median"] < 1.0
    assert other.attrs["curvature_z_beyond_2"] <= 15 and other.attrs["accuracy_z_beyond_2"] <= 15
    # the formula, by hand, for one cell
    b = _noisy_sweep(seed=1)
    x = a["curvature_scaled"].values[2, 5, :, 0]
    y = b["curvature_scaled"].values[2, 5, :, 0]
    z = (y.mean() - x.mean()) / np.sqrt(x.var(ddof=1) / 10 + y.var(ddof=1) / 10)
    assert float(other["curvature_z"][2, 5]) == pytest.approx(z)
    # a shift of 0.2 (4.5 standard errors of the difference) is seen in nearly every cell
    shifted = cmp.sweeps_agree(a, _noisy_sweep(shift=0.2, seed=1))
    assert shifted.attrs["curvature_z_beyond_2"] > 85
    # one number of one seed's curve, off in its last bits: that cell is not bit for bit
    nudged = a.copy(deep=True)
    nudged["load_curve"][1, 3, 4, 0, 2] += 1e-12
    flags = cmp.sweeps_agree(a, nudged)
    assert flags.attrs["bitwise_equal_runs"] == 0
    assert (~flags["bitwise_equal"]).sum() == 1 and not flags["bitwise_equal"][1, 3]


def test_sweeps_agree_refuses_runs_of_different_sweeps():
    a = _noisy_sweep()
    with pytest.raises(results.ConfigError, match="dropout values"):
        cmp.sweeps_agree(a, a.assign_coords(dropout=a["dropout"].values + 0.01))
    with pytest.raises(results.ConfigError, match="seeds >= 2"):
        cmp.sweeps_agree(a.isel(seed=[0]), a.isel(seed=[1]))
    with pytest.raises(results.ConfigError, match="same knob"):
        cmp.sweeps_agree(a, a.rename({"dropout": "lr"}).assign_attrs(knob="lr"))
    with pytest.raises(results.ConfigError, match="must be an xarray Dataset or the path"):
        cmp.sweeps_agree(a, None)


PAPER_BATCH = Path(__file__).resolve().parents[4] / "figures/paper/dnn_batch_size.nc"


@pytest.mark.skipif(not PAPER_BATCH.exists(), reason="needs the committed paper sweep")
def test_trajectory_fit_chi2_does_not_depend_on_last_bits():
    # six cells of the paper's batch-size diagram whose chi2/dof moved by 1.2 % when every
    # seed's load curve moved by up to 3 ulp (another CPU), while the optimiser stopped at 1e-4
    # of the cost and stepped along parameters the curves ignore; now 4e-12
    sweep = results.load(PAPER_BATCH, kind="dnnphase.sweep").isel(alpha=[0, 2, 3],
                                                                 batch_size=[3, 4])
    nudged = sweep.copy(deep=True)
    values = nudged["load_curve_epochs"].values
    steps = np.random.default_rng(2).integers(-3, 4, size=values.shape)
    values[...] = values + steps * np.spacing(np.abs(np.nan_to_num(values)))
    a, b = cmp.fit_sweep_trajectory(sweep), cmp.fit_sweep_trajectory(nudged)
    np.testing.assert_allclose(b["chi2_per_dof"].values, a["chi2_per_dof"].values, rtol=1e-6)
