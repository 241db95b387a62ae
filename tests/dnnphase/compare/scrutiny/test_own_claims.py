"""The scrutiny of this project's own claims (dnnphase.compare.scrutiny.own_claims, the row
baseline and the extrapolation helpers of dnnphase.compare.comparator.baselines)."""

import numpy as np
import pytest
import xarray as xr

from dnnphase.compare.comparator.baselines import (
    extend_linear,
    fill_untrained,
    fit_saturating_map,
    local_mean,
    row_interpolation,
)
from dnnphase.compare.comparator.prediction import split_folds
from dnnphase.compare.scrutiny import own_claims as sc
from phasecore import results
from phasecore.checks import ConfigError

PAPER = "figures/paper"


def test_extend_linear_interpolates_inside_and_continues_the_line_outside():
    values = np.array([9.0, 1.0, 2.0, 9.0, 0.0, 9.0, 9.0])
    trained = np.array([0, 1, 1, 0, 1, 0, 0], dtype=bool)
    out = extend_linear(values, trained)
    np.testing.assert_allclose(out, [0.0, 1.0, 2.0, 1.0, 0.0, -1.0, -2.0])
    # between trained entries it is fill_untrained, beyond them fill_untrained holds still
    inside = slice(1, 5)
    np.testing.assert_allclose(out[inside], fill_untrained(values, trained)[inside])
    np.testing.assert_allclose(extend_linear(values, [0, 0, 1, 0, 0, 0, 0]), np.full(7, 2.0))
    assert np.isnan(extend_linear(values, np.zeros(7, bool))).all()
    with pytest.raises(ConfigError, match="trained"):
        extend_linear(values, [True, False])


def test_row_interpolation_uses_its_own_row_only():
    curv = np.array([[0.0, 1.0, 2.0, 3.0, 4.0],
                     [10.0, 20.0, 30.0, 40.0, 50.0],
                     [5.0, 5.0, 5.0, 5.0, 5.0]])
    train = np.array([[1, 0, 1, 0, 1], [0, 1, 0, 1, 0], [0, 0, 0, 0, 0]], dtype=bool)
    out = row_interpolation(curv, train)
    np.testing.assert_allclose(out[0], curv[0])  # a line is interpolated exactly
    np.testing.assert_allclose(out[1], curv[1])  # and continued beyond the row's ends
    # a row without training cells: the local mean (its nearest cells are in the row above)
    np.testing.assert_allclose(out[2], local_mean(curv, train)[2])
    # on the every-other-column split it is the local mean
    rng = np.random.default_rng(1)
    curv = rng.normal(size=(4, 7))
    for train, held in split_folds(np.ones(curv.shape, bool), "columns"):
        np.testing.assert_allclose(row_interpolation(curv, train)[held],
                                   local_mean(curv, train)[held])
    with pytest.raises(ConfigError, match="train"):
        row_interpolation(curv, np.ones((2, 2), bool))


def test_edge_folds_hold_out_the_first_and_last_columns():
    usable = np.ones((3, 5), bool)
    usable[0, -1] = False
    (train0, held0), (train1, held1) = sc.edge_folds(usable)
    assert held0[:, -1].tolist() == [False, True, True] and held0[:, :-1].sum() == 0
    assert held1[:, 0].all() and held1[:, 1:].sum() == 0
    assert not (train0 & held0).any() and (train0 | held0 | ~usable).all()
    with pytest.raises(ConfigError, match="usable"):
        sc.edge_folds(np.ones((3, 2), bool))


def test_a_saturating_refit_from_its_own_optimum_stays_there():
    rng = np.random.default_rng(3)
    a, b = np.linspace(-1, 1, 4), np.linspace(0, 1.5, 5)
    curv = 0.8 * np.tanh(a[:, None] + b[None, :]) + 0.01 * rng.normal(size=(4, 5))
    train = np.ones(curv.shape, bool)
    fit = fit_saturating_map(curv, train)
    again = fit_saturating_map(curv, train, start=fit)
    np.testing.assert_allclose(again["fitted"], fit["fitted"], atol=1e-6)
    with pytest.raises(ConfigError, match="start"):
        fit_saturating_map(curv, train, start={"row": [0.0]})


def _boot(first, second, draws):
    ds = xr.Dataset({"rmse": (("predictor", "split"), [[first], [second]]),
                     "boot_rmse": (("draw", "predictor", "split"), draws)},
                    coords={"predictor": ["chain", "local"], "split": ["columns"]})
    return ds


def test_the_paired_interval_is_centred_on_the_observed_difference():
    rng = np.random.default_rng(0)
    common = rng.normal(0.5, 0.1, 400)  # what both share (the held-out truth) cancels
    own = rng.normal(0.0, 0.01, 400)
    draws = np.stack([common + 0.1 + own, common], axis=1)[:, :, None]  # shifted by +0.1
    d, low, high = sc.paired_interval(_boot(0.30, 0.25, draws), "chain", "local", "columns")
    assert d == pytest.approx(0.05)
    assert low < d < high and high - low == pytest.approx(2 * 1.96 * 0.01, rel=0.2)
    assert (low + high) / 2 == pytest.approx(d)
    with pytest.raises(ConfigError, match="first"):
        sc.paired_interval(_boot(0.3, 0.2, draws), "row", "local", "columns")
    with pytest.raises(ConfigError, match="split"):
        sc.paired_interval(_boot(0.3, 0.2, draws), "chain", "local", "edges")


@pytest.fixture(scope="module")
def lr():
    return (results.load(f"{PAPER}/dnn_lr.nc"), results.load(f"{PAPER}/family_lr.nc"))


def test_cell_scale_aic_on_the_committed_lr_diagram(lr):
    network, family = lr
    aic = sc.cell_scale_aic(family, network)
    assert (aic["points"] == 80).all()  # 10 frames after epoch 0, 8 layers
    np.testing.assert_allclose(aic["diagram"], family["aic"] - family["aic"][0])
    c = family["chi2_per_dof"].values.reshape(4, -1)
    np.testing.assert_allclose(aic["cell"], 80 * np.log(c / c[0]).sum(axis=1) + [0, 2, 2, 2])
    # a variant whose every cell's misfit is the paper chain's times f: both scales agree
    scaled = family.copy(deep=True)
    scaled["chi2_per_dof"][1] = 2.0 * scaled["chi2_per_dof"][0]
    scaled["aic"][1] = scaled["aic"][0] + 80 * c.shape[1] * np.log(2.0) + 2
    both = sc.cell_scale_aic(scaled, network)
    assert both["cell"][1] == pytest.approx(both["diagram"][1])


def test_own_variance_averages_to_about_the_pooled_one(lr):
    network, _ = lr
    weights, ratio = sc.own_variance(network)
    assert weights.shape == (6, 9, 11, 8) and np.isfinite(weights).all()
    assert ratio.shape == (6, 9)
    # the pooled variance is the mean of the cells' own, frame by frame
    per_seed = network["load_curve_epochs"].transpose("alpha", "lr", "seed", "epoch", "layer")
    own = 10.0 / weights[..., 0]
    pooled = np.nanmean(np.nanvar(per_seed.values, axis=2, ddof=1), axis=(0, 1, 3))
    np.testing.assert_allclose(own.mean(axis=(0, 1)), pooled, rtol=1e-9)


def test_bad_input_is_refused_before_any_work(lr):
    network, family = lr
    held = results.load(f"{PAPER}/family_held_out_lr.nc")
    with pytest.raises(ConfigError, match="draws"):
        sc.held_out_scrutiny(network, held, draws=-1)
    with pytest.raises(ConfigError, match="family_held_out"):
        sc.held_out_scrutiny(network, results.load(f"{PAPER}/family_held_out_dropout.nc"))
    with pytest.raises(ConfigError, match="family"):
        sc.scrutiny(network, results.load(f"{PAPER}/family_dropout.nc"), held)


def test_a_chain_refit_from_its_own_optimum_stays_there_and_extrapolates_its_noise():
    """start=: one local least squares from an earlier fit (the seed draws' refit). And an
    edge column held out of chain data: the chain continues its noise's line, so it predicts
    the column it never saw about as well as the noise added."""
    from dnnphase.compare.comparator import prediction as pr

    points = 25
    u = pr.friction_coordinate(np.linspace(0.3, 0.1, 4))
    v = pr.noise_coordinate(np.geomspace(0.05, 0.2, 6))
    curv = pr.chain_curvature(u[:, None], v[None, :], points)
    curv = curv + 0.005 * np.random.default_rng(0).standard_normal(curv.shape)
    train = np.ones(curv.shape, bool)
    fit = pr.fit_chain_map(curv, train, points=points)
    again = pr.fit_chain_map(curv, train, points=points, start=fit)
    np.testing.assert_allclose(again["fitted"], fit["fitted"], atol=1e-6)
    with pytest.raises(ConfigError, match="start"):
        pr.fit_chain_map(curv, train, points=points, start={"u": u})
    train, held = sc.edge_folds(train)[0]
    predicted, _ = sc._predict("chain", curv, train, points=points)
    assert pr.rmse(predicted, curv, held) < 0.02  # the end value held: 0.5
