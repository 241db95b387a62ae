"""phaseclaims.equiseparation against hand computations on hand-made arrays."""

import math

import numpy as np
import pytest

from dnnphase.compare.scrutiny.measure_agreement import seed_draws
from phaseclaims.equiseparation import (
    chosen_columns,
    compare_readings,
    equiseparation_score,
)
from phaseclaims.rules import linear_best
from phasecore.checks import ConfigError


def test_the_score_is_one_plus_pearson_r_by_hand():
    # D = 3, 1, 0 at layers 0, 1, 2: deviations (5/3, -1/3, -4/3) and (-1, 0, 1);
    # r = -3 / sqrt(42/9 * 2) = -9 / sqrt(84)
    assert equiseparation_score(np.array([3.0, 1.0, 0.0])) == pytest.approx(1 - 9 / 84**0.5)
    assert equiseparation_score(np.array([2.0, 1.5, 1.0, 0.5])) == pytest.approx(0.0)
    assert equiseparation_score(np.array([0.0, 1.0, 2.0])) == pytest.approx(2.0)
    assert math.isnan(equiseparation_score(np.array([1.0, 1.0, 1.0])))


def test_a_row_chooses_the_seed_mean_nearest_zero():
    score = np.array([[[0.3, 0.5], [-0.1, -0.3], [0.6, 0.6]],  # means 0.4, -0.2, 0.6
                      [[np.nan, np.nan], [0.9, np.nan], [-0.5, 0.1]],  # NaN, 0.9, -0.2
                      [[np.nan, np.nan]] * 3])
    np.testing.assert_array_equal(chosen_columns(score), [1, 2, -1])


# 2 rows x 3 columns, both seeds alike (no spread: only the best column ties with itself).
ACCURACY = np.repeat(np.array([[0.5, 0.9, 0.6], [0.7, 0.4, 0.3]])[..., None], 2, axis=2)
CURVATURE = np.repeat(np.array([[-0.5, 0.01, 0.6], [0.02, 0.5, 0.9]])[..., None], 2, axis=2)
OTHER = np.repeat(np.array([[0.3, 0.2, 0.05], [0.0, 0.4, 0.5]])[..., None], 2, axis=2)
VALUES = np.array([0.0, 0.1, 0.2])


def test_two_readings_by_hand():
    out = compare_readings({"a": CURVATURE, "b": OTHER}, ACCURACY, VALUES, n_boot=20)
    a, b = out["a"], out["b"]
    # best columns: 1 and 0; reading a picks 1 and 0 (two hits), reading b 2 and 0 (one)
    np.testing.assert_array_equal(a["chosen"], [1, 0])
    np.testing.assert_array_equal(b["chosen"], [2, 0])
    assert (a["hits"], b["hits"], a["rows"]) == (2, 1, 2)
    assert a["chance"] == pytest.approx(2 / 3)  # one best column of three, per row
    assert (a["verdict"], b["verdict"]) == ("holds", "partly")
    assert (a["same"], b["same"]) == (1.0, 0.5)
    assert (a["minus"], b["minus"]) == (0, 1)
    assert b["minus_low"] == b["minus_high"] == 1.0  # every resample is the same networks


def test_each_reading_is_the_ledger_rule_and_the_difference_is_paired():
    rng = np.random.default_rng(5)
    shape = (4, 5, 6)
    accuracy = 0.8 + 0.05 * rng.normal(size=shape) - 0.02 * np.abs(
        np.arange(5) - 2)[None, :, None]
    curvature = np.linspace(-1, 1, 5)[None, :, None] + 0.3 * rng.normal(size=shape)
    other = np.abs(np.linspace(-1, 1, 5) - 0.5)[None, :, None] + 0.3 * rng.normal(size=shape)
    values = np.linspace(0, 0.3, 5)
    out = compare_readings({"c": curvature, "o": other}, accuracy, values, n_boot=40, seed=3)
    for name, score in (("c", curvature), ("o", other)):
        direct = linear_best(score, accuracy, values, n_boot=40, seed=3)
        for key in ("hits", "rows", "chance", "hits_low", "hits_high", "verdict"):
            assert out[name][key] == direct[key], key
    diff = [linear_best(curvature[..., p], accuracy[..., p], values, n_boot=0)["hits"]
            - linear_best(other[..., p], accuracy[..., p], values, n_boot=0)["hits"]
            for p in seed_draws(6, 40, 3)]
    np.testing.assert_array_equal(out["o"]["minus_boot"], diff)
    low, high = np.quantile(diff, [0.025, 0.975])
    assert (out["o"]["minus_low"], out["o"]["minus_high"]) == (low, high)
    assert out["o"]["minus"] == out["c"]["hits"] - out["o"]["hits"]


@pytest.mark.parametrize(("call", "name"), [
    (lambda: chosen_columns(np.zeros((2, 3))), "score"),
    (lambda: compare_readings({}, ACCURACY, VALUES), "scores"),
    (lambda: compare_readings({"a": CURVATURE[:1]}, ACCURACY, VALUES), "scores"),
    (lambda: compare_readings({"a": CURVATURE}, ACCURACY[0], VALUES), "accuracy"),
    (lambda: compare_readings({"a": CURVATURE}, ACCURACY, VALUES[:2]), "values"),
    (lambda: compare_readings({"a": CURVATURE}, ACCURACY, VALUES, n_boot=1.5), "n_boot"),
])
def test_bad_input_is_one_line_naming_the_parameter(call, name):
    with pytest.raises(ConfigError, match=name):
        call()


def test_a_score_that_never_comes_near_zero_keeps_every_row():
    """He & Su's score 1 + r never changes sign; a row whose r stays above -0.95 has no
    "linear cell" by the curvature's band, yet it is a row their reading judges."""
    far = OTHER + 0.3  # every seed mean >= 0.3: outside the curvature's linear band
    out = compare_readings({"a": CURVATURE, "b": far}, ACCURACY, VALUES, n_boot=10)
    assert out["b"]["rows"] == 2
    np.testing.assert_array_equal(out["b"]["chosen"], [2, 0])
    assert out["b"]["hits"] == 1  # row 2 picks column 0, its best
    assert linear_best(far, ACCURACY, VALUES, band=0.05, n_boot=0)["rows"] == 0  # band: none
