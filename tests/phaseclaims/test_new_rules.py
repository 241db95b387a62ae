"""The rules added for the missing claims and the corrected verdicts: each can reach every
verdict it states, on synthetic input."""

import numpy as np
import pytest

from phaseclaims import chain_claims, monotone, supplement


def _grid(noise_slope: float, nonlinearity_slope: float, seeds: int = 4, jitter: float = 0.0):
    """(R, C, S) curvature = noise_slope * column - nonlinearity_slope * row (+ noise)."""
    rows, cols = np.meshgrid(np.arange(5), np.arange(6), indexing="ij")
    base = noise_slope * cols - nonlinearity_slope * rows
    rng = np.random.default_rng(1)
    return base[..., None] + jitter * rng.standard_normal((5, 6, seeds))


@pytest.mark.parametrize(("noise", "nonlinearity", "verdict"), [
    (1.0, 1.0, "holds"), (1.0, -1.0, "partly"), (-1.0, -1.0, "differs")])
def test_the_trend_rule_on_clean_grids(noise, nonlinearity, verdict):
    result = monotone.trends(_grid(noise, nonlinearity, jitter=0.01), n_boot=50)
    assert monotone.trend_verdict(result["noise"], result["nonlinearity"]) == verdict


def test_a_trend_lost_in_seed_noise_is_undecided():
    result = monotone.trends(_grid(1.0, 0.02, seeds=3, jitter=0.05), n_boot=100)
    assert monotone.trend_verdict(result["noise"], result["nonlinearity"]) == "undecided"
    assert monotone.direction_status(0.6, 0.9) == "monotone"
    assert monotone.direction_status(0.1, 0.4) == "not monotone"


def test_constant_lines_are_left_out_of_the_mean():
    mean = np.array([[0.0, 0.0, 0.0], [0.0, 1.0, 2.0]])
    assert monotone.mean_rho(mean, 1) == pytest.approx(1.0)


def test_the_linear_learning_rate_is_where_the_curvature_crosses_zero():
    lrs = np.array([1e-3, 1e-2, 1e-1])
    assert supplement.linear_lr(lrs, np.array([-1.0, -0.5, 0.5])) == pytest.approx(0.032)
    assert np.isnan(supplement.linear_lr(lrs, np.array([-1.0, -0.5, -0.1])))


@pytest.mark.parametrize(("equal", "best", "verdict"), [
    (3, True, "holds"), (3, False, "partly"), (1, True, "partly"), (1, False, "differs"),
    (0, False, "differs")])
def test_the_s4_rule_can_say_each_verdict(equal, best, verdict):
    assert supplement.s4_verdict(equal, 3, best) == verdict


@pytest.mark.parametrize(("hits", "verdict"), [(9, "holds"), (5, "partly"), (4, "differs")])
def test_the_count_rule(hits, verdict):
    assert chain_claims.count_verdict(hits, 9) == verdict


def test_fig2_cells():
    rng = np.random.default_rng(0)
    a = 0.5 + 0.001 * rng.standard_normal(20)
    assert chain_claims.fig2_cell(a, a + 0.01) == "alike"
    assert chain_claims.fig2_cell(a, a - 0.5) == "unlike"  # convex against linear
    assert chain_claims.fig2_cell(a, 0.45 + 0.05 * rng.standard_normal(20)) == "undecided"


def test_noise_accumulating_in_deep_layers_is_found_and_its_opposite_too():
    rng = np.random.default_rng(0)
    scale = np.linspace(0.01, 0.1, 7)  # fluctuation growing with depth, layers 1..7
    curves = np.concatenate([np.ones((8, 20, 1)),
                             scale * rng.standard_normal((8, 20, 7))], axis=2)
    rho, low, high, fluct = chain_claims.shallow_to_deep(curves, n_boot=100)
    assert rho > 0.9 and low > 0 and fluct[-1] > fluct[0]
    rho, low, high, _ = chain_claims.shallow_to_deep(curves[..., ::-1], n_boot=100)
    assert rho < -0.9 and high < 0


def test_spearman_rho_is_scipys_to_the_last_bit():
    from scipy import stats

    rng = np.random.default_rng(7)
    for trial in range(300):
        n = int(rng.integers(3, 17))
        line = (rng.integers(0, 4, n).astype(float) if trial % 2  # ties
                else rng.standard_normal(n))
        if np.ptp(line) == 0:
            continue
        assert monotone.spearman_rho(line) == stats.spearmanr(np.arange(n), line).statistic
    lines = rng.standard_normal((5, 9))
    assert np.array_equal(monotone.spearman_rho(lines),
                          [stats.spearmanr(np.arange(9), x).statistic for x in lines])


def test_mean_rho_leaves_out_a_lines_nan_and_short_lines():
    from scipy import stats

    mean = np.array([[0.0, 2.0, np.nan, 1.0, 3.0], [1.0, np.nan, np.nan, np.nan, 2.0],
                     [3.0, 2.0, 1.0, 0.0, -1.0]])
    first = stats.spearmanr([0, 1, 3, 4], [0.0, 2.0, 1.0, 3.0]).statistic
    last = stats.spearmanr(np.arange(5), mean[2]).statistic
    assert monotone.mean_rho(mean, 1) == np.mean([first, last])  # the 2-value line left out
    assert np.isnan(monotone.mean_rho(np.full((2, 4), np.nan), 1))
