"""dnnphase.compare.scrutiny.measure_agreement against hand computations on hand-made arrays."""

import math

import numpy as np
import pytest

from dnnphase.compare.scrutiny.measure_agreement import (
    agreement_statistics,
    measure_agreement,
    relative_drop,
    seed_draws,
    setting_divergence,
)
from phasecore.checks import ConfigError

NAN = np.nan
# 4 cells x 2 seeds. Seed means: a = -0.4, 0.01, 0.5, NaN -> labels -1, 0, +1, NaN;
# b = -0.3, 0.4, 0.2, 0.15 -> labels -1, +1, +1, +1.
A = np.array([[-0.5, -0.3], [0.0, 0.02], [0.4, 0.6], [NAN, NAN]])
B = np.array([[-0.2, -0.4], [0.3, 0.5], [0.1, 0.3], [0.1, 0.2]])


def test_the_statistics_of_seed_means_by_hand():
    out = agreement_statistics(np.array([-0.4, 0.01, 0.5, NAN]), B.mean(1))
    # 3 cells with both labels; equal in cells 0 and 2
    assert out["n_cells"] == 3 and out["agreement"] == pytest.approx(2 / 3)
    # kappa: observed 2/3; chance 1/3*1/3 (concave) + 1/3*0 (linear) + 1/3*2/3 (convex) = 1/3
    assert out["kappa"] == pytest.approx((2 / 3 - 1 / 3) / (1 - 1 / 3))
    # rho: ranks of a (1, 2, 3) against b (1, 3, 2): 1 - 6 * 2 / (3 * 8) = 0.5
    assert out["rho"] == pytest.approx(0.5)


def test_identical_measures_agree_fully_and_one_label_everywhere_has_no_kappa():
    mean = np.array([-0.4, 0.01, 0.5, 0.9])
    out = agreement_statistics(mean, mean)
    assert (out["agreement"], out["kappa"], out["rho"]) == (1.0, 1.0, pytest.approx(1.0))
    flat = agreement_statistics(np.array([0.2, 0.3, 0.4]), np.array([0.5, 0.6, 0.9]))
    assert flat["agreement"] == 1.0 and math.isnan(flat["kappa"])


def test_the_band_decides_the_labels():
    a, b = np.array([0.04, -0.5, 0.5]), np.array([0.08, -0.5, 0.5])
    assert agreement_statistics(a, b)["agreement"] == pytest.approx(2 / 3)
    assert agreement_statistics(a, b, tolerance=0.1)["agreement"] == 1.0


def test_seed_draws_are_the_ledger_rules_draws():
    rng = np.random.default_rng(7)
    expected = np.array([rng.integers(0, 5, 5) for _ in range(3)])
    np.testing.assert_array_equal(seed_draws(5, 3, 7), expected)
    assert seed_draws(1, 10).shape == (0, 1)  # one seed: nothing to resample


def _label(x):
    return -1 if x < -0.05 else 1 if x > 0.05 else 0


def _by_loops(a, b, pick):
    """Agreement of the resampled seed means, written out cell by cell (independent)."""
    agree = n = 0
    for i in range(a.shape[0]):
        ma = [a[i, s] for s in pick if not math.isnan(a[i, s])]
        mb = [b[i, s] for s in pick if not math.isnan(b[i, s])]
        if not ma or not mb:
            continue
        la, lb = (_label(float(sum(m)) / len(m)) for m in (ma, mb))
        agree += la == lb
        n += 1
    return agree / n


def test_the_interval_resamples_seeds_with_one_draw_for_every_cell():
    rng = np.random.default_rng(3)
    a = rng.normal(0, 0.3, (12, 5))
    b = a + rng.normal(0, 0.2, (12, 5))
    out = measure_agreement(a, b, n_boot=50, seed=11)
    boot = [_by_loops(a, b, pick) for pick in seed_draws(5, 50, 11)]
    low, high = np.quantile(boot, [0.025, 0.975])
    assert (out["agreement_low"], out["agreement_high"]) == (pytest.approx(low),
                                                             pytest.approx(high))
    assert out["agreement"] == pytest.approx(_by_loops(a, b, range(5)))


def test_seeds_that_agree_with_each_other_give_a_point_interval():
    a = np.repeat(np.array([[-0.4], [0.01], [0.5], [0.9]]), 3, axis=1)
    b = np.repeat(np.array([[-0.3], [0.4], [0.2], [0.7]]), 3, axis=1)
    out = measure_agreement(a, b, n_boot=20)
    for k in ("agreement", "kappa", "rho"):
        assert out[f"{k}_low"] == pytest.approx(out[k]) == pytest.approx(out[f"{k}_high"])


def test_relative_drop_and_the_divergence_of_single_settings():
    assert relative_drop(np.array([4.0, 3.0, 2.0])) == pytest.approx(0.5)
    steady = np.array([[1.0, 0.5, 0.0]] * 2)  # linear: label 0, drop 1
    bent = np.array([[1.0, 0.1, 0.0]] * 2)  # concave... of a falling curve: label -1
    flat = np.array([[5.0, 4.95, 4.9]] * 2)  # linear, drop 0.02: flat
    curves_a = np.stack([steady, steady, steady])  # (G=3, S=2, L+1=3)
    curves_b = np.stack([steady, bent, flat])
    out = setting_divergence(curves_a, curves_b, n_boot=10)
    np.testing.assert_array_equal(out["label_a"], [0, 0, 0])
    assert out["label_b"][1] != 0 and out["label_b"][2] == 0
    np.testing.assert_allclose(out["drop_b"], [1.0, 1.0, 0.02])
    np.testing.assert_array_equal(out["diverges"], [0, 1, 1])
    assert out["n_diverging"] == out["n_diverging_low"] == out["n_diverging_high"] == 2


@pytest.mark.parametrize(("call", "name"), [
    (lambda: measure_agreement(A, B[:3]), "curvature_b"),
    (lambda: measure_agreement(A[:, 0], B[:, 0]), "curvature_a"),
    (lambda: measure_agreement(A, B, n_boot=-1), "n_boot"),
    (lambda: measure_agreement(A, B, tolerance=1.5), "tolerance"),
    (lambda: agreement_statistics(A[:, 0], B[:2, 0]), "mean_b"),
    (lambda: setting_divergence(np.ones((2, 2, 3)), np.ones((2, 2, 3)), flat=0.0), "flat"),
    (lambda: setting_divergence(A, B), "curves_a"),
])
def test_bad_input_is_one_line_naming_the_parameter(call, name):
    with pytest.raises(ConfigError, match=name):
        call()
