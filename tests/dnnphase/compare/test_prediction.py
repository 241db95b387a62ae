"""Prediction, not description (dnnphase.compare.prediction): each model wins on data it
generated, the fitted maps are monotone, the splits hold out what they say, bad input names the
parameter, and the entry point runs on a slice of a committed diagram."""

import numpy as np
import pytest

from dnnphase.compare import prediction as pr
from phasecore import results
from phasecore.checks import ConfigError
from springblock import theory

POINTS = 25  # a coarse table of the chain: ~1 s, built once for this module
ROWS, COLS = 5, 6


#: (friction at alpha = 0 and 1, noise at the least and most noisy knob value) of test diagrams:
#: the chain's interacting range, and the range the chain takes on the committed diagrams.
RANGES = [(0.12, 0.03, 0.005, 0.2), (0.3, 0.15, 0.05, 0.15)]


def chain_diagram(ranges=RANGES[0], noise_sd=0.01, seed=0, cols=COLS):
    """Seed-mean curvatures (R, C) made by the chain map itself, plus noise: friction falling
    with alpha (rows), noise rising along the knob (columns)."""
    mu_first, mu_last, s_first, s_last = ranges
    u = pr.friction_coordinate(np.linspace(mu_first, mu_last, ROWS))
    v = pr.noise_coordinate(np.geomspace(s_first, s_last, cols))
    truth = pr.chain_curvature(u[:, None], v[None, :], POINTS)
    return truth + noise_sd * np.random.default_rng(seed).standard_normal(truth.shape)


def additive_diagram(noise_sd=0.01, seed=0):
    """Seed-mean curvatures a_i + b_j that keep steepening along the knob: no saturation."""
    a = np.linspace(-1.0, 0.5, ROWS)
    b = np.array([0.0, 0.05, 0.15, 0.5, 1.2, 2.4])
    return a[:, None] + b[None, :] + noise_sd * np.random.default_rng(seed).standard_normal(
        (ROWS, COLS))


def held_out_errors(curv, split="checkerboard"):
    usable = np.ones(curv.shape, dtype=bool)
    pred = pr.predict_split(curv, usable, split, points=POINTS)
    return {m: pr.rmse(pred[m], curv, pred["held_out"]) for m in pr.MODELS}


def test_chain_table_is_the_chain():
    """mu-> = 0 is the linear chain at any noise; off the grid the spline is the integrator."""
    u, v, kappa = pr.chain_table(POINTS)
    assert kappa.shape == (POINTS, POINTS) and np.isfinite(kappa).all()
    assert np.allclose(kappa[0], 0.0, atol=1e-9)
    mu, s = 0.04, 0.013
    x = theory.predict_positions(pr.BLOCKS, mu, pr.RATIO * mu, s, pr.HORIZON)
    from phasecore.loadcurve import curvature_scaled

    exact = float(curvature_scaled(theory.load_curve(x)))
    spline = float(pr.chain_curvature(pr.friction_coordinate(mu), pr.noise_coordinate(s), POINTS))
    assert abs(spline - exact) < 0.03
    assert pr.chain_table(POINTS) is pr.chain_table(POINTS)  # cached, never rebuilt


@pytest.mark.parametrize("ranges", RANGES)
def test_chain_data_are_predicted_by_the_chain_better_than_additively(ranges):
    err = held_out_errors(chain_diagram(ranges))
    assert err["chain"] < 0.03  # about the noise added
    assert err["chain"] < 0.5 * err["additive"]


def test_additive_data_are_predicted_additively_better_than_by_the_chain():
    err = held_out_errors(additive_diagram())
    assert err["additive"] < 0.03
    assert err["additive"] < 0.5 * err["chain"]


def test_held_out_columns_are_interpolated():
    """Every other column held out: chain data are still predicted from the neighbours."""
    err = held_out_errors(chain_diagram(), "columns")
    assert err["chain"] < err["additive"]


def test_fitted_maps_are_monotone_on_any_data():
    curv = np.random.default_rng(1).standard_normal((ROWS, COLS))  # no order at all
    train = np.ones(curv.shape, dtype=bool)
    train[1, 2] = train[3, 4] = False
    chain = pr.fit_chain_map(curv, train, starts=2, points=POINTS)
    assert np.all(np.diff(chain["friction"]) <= 1e-12)  # falls with alpha
    assert np.all(np.diff(chain["noise"]) >= -1e-12)  # rises with noisiness
    assert chain["friction"].min() >= 0 and chain["noise"].min() >= 0
    for model in ("additive", "saturating"):
        fit = pr.fit_model(model, curv, train)
        assert np.all(np.diff(fit["row"]) >= -1e-12) and np.all(np.diff(fit["column"]) >= -1e-12)
        assert np.all(np.diff(fit["fitted"], axis=0) >= -1e-9)
        assert np.all(np.diff(fit["fitted"], axis=1) >= -1e-9)


def test_splits_hold_out_each_usable_cell_at_most_once():
    usable = np.ones((4, 7), dtype=bool)
    usable[0, 3] = False
    for split in pr.SPLITS:
        folds = pr.split_folds(usable, split)
        held = sum(h.astype(int) for _, h in folds)
        assert held.max() == 1 and not held[~usable].any()
        for train, h in folds:
            assert not (train & h).any() and not train[~usable].any()
    columns = sum(h for _, h in pr.split_folds(usable, "columns"))
    assert not columns[:, [0, -1]].any() and columns[:, 1:-1][usable[:, 1:-1]].all()
    assert np.array_equal(pr.fill_untrained([1.0, 9.0, 3.0, 5.0], [True, False, True, True]),
                          [1.0, 2.0, 3.0, 5.0])


@pytest.mark.parametrize("call, name", [
    (lambda: pr.split_folds(np.ones((3, 3)), "rows"), "split"),
    (lambda: pr.split_folds(np.ones((3, 2)), "columns"), "columns"),
    (lambda: pr.fit_chain_map(np.zeros((3, 3)), np.ones((2, 3))), "train"),
    (lambda: pr.fit_additive_map(np.zeros(3), np.ones(3)), "curvature"),
    (lambda: pr.fit_additive_map(np.full((2, 2), np.nan), np.ones((2, 2))), "curvature"),
    (lambda: pr.fit_chain_map(np.zeros((2, 2)), np.ones((2, 2)), starts=0), "starts"),
    (lambda: pr.fit_model("isotonic", np.zeros((2, 2)), np.ones((2, 2))), "model"),
    (lambda: pr.fit_saturating_map(np.zeros((2, 2)), np.ones((2, 2)), centre="zero"), "centre"),
    (lambda: pr.chain_table(2), "points"),
    (lambda: pr.fit_columns("chain", {"u": np.zeros(2)}, np.zeros((3, 3)), np.ones((3, 3))),
     "rows_fit"),
    (lambda: pr.transfer_table({}), "sweeps"),
])
def test_bad_input_names_the_parameter(call, name):
    with pytest.raises(ConfigError, match=f"^{name} must be"):
        call()


@pytest.fixture(scope="module")
def batch_slice():
    """Four alpha rows and the five smallest batch sizes of the committed batch-size diagram:
    it holds cells that do not separate and one far out (curvature -114)."""
    ds = results.load("figures/paper/dnn_batch_size.nc")
    return ds.isel(alpha=slice(0, 4), batch_size=slice(0, 5))


def test_bad_measure_is_named(batch_slice):
    with pytest.raises(ConfigError, match="^measure must be"):
        pr.held_out_prediction(batch_slice, measure="nope")


def test_entry_point_takes_a_dataset_or_a_path_and_nothing_else():
    with pytest.raises(ConfigError, match="^ds must be an xarray Dataset or the path"):
        pr.held_out_prediction(None)
    with pytest.raises(ValueError, match="expected 'dnnphase.sweep'"):  # the path is opened
        pr.held_out_prediction("figures/spring_phase.nc")


def test_entry_point_on_a_committed_slice(batch_slice):
    out = pr.held_out_prediction(batch_slice, starts=2, points=POINTS)
    knob = out.attrs["knob"]
    assert list(out[knob].values) == [80, 40, 20, 10, 5]  # noisier (smaller) to the right
    assert np.all(np.diff(out["alpha"].values) > 0)
    assert "not separating" in out.attrs["left_out_reasons"]
    assert "far out" in out.attrs["left_out_reasons"]
    usable = out["usable"].values
    assert out.attrs["cells"] + out.attrs["cells_left_out"] == usable.size
    held = out["held_out"].values
    assert not held[:, ~usable].any()
    for split in pr.SPLITS:
        a = {k.removeprefix(f"{split}_"): v for k, v in out.attrs.items()
             if k.startswith(f"{split}_")}
        assert a["cells"] == held[list(pr.SPLITS).index(split)].sum() > 0
        assert all(np.isfinite(a[f"{m}_rmse"]) for m in pr.MODELS)
        assert 0 < a["floor"] < 1
        assert all(0 <= a[f"{m}_phase_right"] <= 1 for m in pr.MODELS)
    pred = out["chain_prediction"].values
    assert np.isfinite(pred[held]).all() and np.isnan(pred[~held]).all()
    assert out.attrs["chain_parameters"] == out.attrs["saturating_parameters"] == 4 + 5
    assert out.attrs["additive_parameters"] == 4 + 5 - 1


def test_a_shared_friction_map_carries_over_to_another_knob():
    """Two chain diagrams with the same friction rows and different noise columns: the chain's
    rows fitted on one predict the other once its columns are refitted; additive rows do not."""
    source = chain_diagram(RANGES[0])
    target = chain_diagram((0.12, 0.03, 0.01, 0.1), seed=1, cols=4)
    usable = np.ones(target.shape, dtype=bool)
    err = {}
    for model in pr.MODELS:
        rows = pr.fit_model(model, source, np.ones(source.shape, dtype=bool), points=POINTS)
        fitted = pr.fit_columns(model, rows, target, usable, points=POINTS)["fitted"]
        err[model] = pr.rmse(fitted, target, usable)
    assert err["chain"] < 0.03
    assert err["chain"] < 0.3 * min(err["additive"], err["saturating"])


def test_transfer_table_on_committed_slices():
    sweeps = {k: results.load(f"figures/paper/dnn_{k}.nc").isel(alpha=slice(0, 4))
              for k in ("dropout", "label_noise")}
    sweeps["dropout"] = sweeps["dropout"].isel(dropout=slice(0, 5))
    sweeps["label_noise"] = sweeps["label_noise"].isel(label_noise=slice(0, 4))
    table = pr.transfer_table(sweeps, starts=2, points=POINTS)
    for m in pr.MODELS:
        err = table[f"{m}_rmse"].values
        assert np.isnan(np.diag(err)).all() and np.isfinite(err[~np.eye(2, dtype=bool)]).all()
    assert list(table["parameters"].values) == [5, 4]
    sweeps["label_noise"] = sweeps["label_noise"].isel(alpha=slice(0, 3))
    with pytest.raises(ConfigError, match="^sweeps must be"):
        pr.transfer_table(sweeps, starts=2, points=POINTS)
