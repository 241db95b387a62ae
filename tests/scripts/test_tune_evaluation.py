"""Fast checks of scripts/tune_evaluation.py's pure parts (no training)."""

import importlib.util
from pathlib import Path

import numpy as np
import pytest

_PATH = Path(__file__).resolve().parents[2] / "scripts" / "tune_evaluation.py"
_spec = importlib.util.spec_from_file_location("tune_evaluation", _PATH)
ev = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(ev)


def test_split_is_stratified_disjoint_and_deterministic():
    y = np.repeat(np.arange(10), 256)
    np.random.default_rng(1).shuffle(y)
    tr, va = ev.stratified_split(y, 0.2, seed=0)
    assert np.intersect1d(tr, va).size == 0
    assert np.array_equal(np.sort(np.concatenate([tr, va])), np.arange(y.size))
    assert np.all(np.bincount(y[va], minlength=10) == round(0.2 * 256))
    tr2, va2 = ev.stratified_split(y, 0.2, seed=0)
    assert np.array_equal(va, va2) and np.array_equal(tr, tr2)
    assert not np.array_equal(va, ev.stratified_split(y, 0.2, seed=1)[1])


def test_split_of_uneven_classes_keeps_proportions():
    y = np.concatenate([np.zeros(100, int), np.ones(10, int), np.full(5, 2)])
    tr, va = ev.stratified_split(y, 0.2, seed=3)
    assert list(np.bincount(y[va])) == [20, 2, 1]
    assert np.intersect1d(tr, va).size == 0


@pytest.mark.parametrize("search_models, values", [(12, 3), (24, 6), (36, 9), (4, 2), (0, 2)])
def test_budget_matches_tune_search(search_models, values):
    assert ev.budget_values(search_models) == values
    if search_models >= 8:
        assert ev.budget_values(search_models) * 4 == search_models


def test_axis_values_linear_and_log():
    np.testing.assert_allclose(ev.axis_values(0.0, 0.3, 4, "linear"), [0, 0.1, 0.2, 0.3])
    v = ev.axis_values(1e-4, 0.5, 5, "log")
    assert v[0] == 1e-4 and v[-1] == 0.5
    np.testing.assert_allclose(np.diff(np.log(v)), np.log(0.5 / 1e-4) / 4)


def test_mean_se_leaves_out_diverged():
    m, se, n = ev.mean_se([0.9, np.nan, 0.8])
    assert n == 2 and m == pytest.approx(0.85) and se == pytest.approx(0.05)


def test_importing_the_script_leaves_the_data_set_registry_alone():
    from dnnphase.data import DATASETS

    assert ev.VAL_DATASET not in DATASETS  # registered only when run as a script
