"""The papers' statistics in a sweep's result: He & Su's r, rho and half-life of every
model's fuzziness curve, Galanti et al.'s effective depth and their test NCC with the
training class centres, each against an independent computation."""

import math

import numpy as np
import pytest
import torch

from dnnphase.measures.separation_numpy import ncc_accuracy
from dnnphase.sweeps import sweep as phase
from dnnphase.sweeps.sweep import SweepConfig
from dnnphase.training.train import train_models

pytestmark = pytest.mark.usefixtures("one_torch_thread")

GRID = dict(knob="dropout", values=[0.0], alphas=[0.0, 1.0], seeds=[0, 1], dataset="digits",
            n_train=300, depth=3, width=16, epochs=8, dtype="float64",
            measures=["trace_ratio", "fuzziness", "ncc"], models_per_chunk=4)


@pytest.fixture(scope="module")
def swept():
    cfg = SweepConfig(**GRID)
    models = phase.chunk_plan(cfg)[0]
    chunk = phase._train_and_measure(cfg, models)
    return cfg, models, chunk, phase._assemble([chunk], cfg)


def test_he_and_su_statistics_are_numpys_fit_of_each_fuzziness_curve(swept):
    _, _, _, ds = swept
    curves = ds["load_curve"].sel(measure="fuzziness")
    for idx in np.ndindex(*curves.shape[:-1]):
        log_d = curves.values[idx]  # log Tr(Σ_w Σ_b⁺): no second log
        layer = np.arange(log_d.size)  # 0..L: the input included
        slope = np.polyfit(layer, log_d, 1)[0]
        assert ds["pearson_r"].values[idx] == pytest.approx(np.corrcoef(layer, log_d)[0, 1],
                                                            abs=1e-12)
        assert ds["decay_ratio"].values[idx] == pytest.approx(math.exp(slope), rel=1e-12)
        expected = math.log(2) / -slope if slope < 0 else math.inf
        assert ds["half_life"].values[idx] == pytest.approx(expected, rel=1e-10)
        test = ds["load_curve_test"].sel(measure="fuzziness").values[idx]
        assert ds["pearson_r_test"].values[idx] == pytest.approx(
            np.corrcoef(layer, test)[0, 1], abs=1e-12)


def test_effective_depth_follows_the_training_ncc_curve(swept):
    _, _, _, ds = swept
    ncc = ds["load_curve"].sel(measure="ncc").values
    for idx in np.ndindex(*ncc.shape[:-1]):
        hidden = [k for k in range(1, ncc.shape[-1]) if ncc[idx][k] >= 0.99]
        expected = hidden[0] if hidden else np.nan
        np.testing.assert_array_equal(ds["effective_depth"].values[idx], expected)
    assert ds["effective_depth"].attrs["units"] == "layers"


def test_test_ncc_uses_the_training_class_means(swept):
    cfg, models, chunk, ds = swept
    data = phase.load_data(cfg)
    result = train_models(torch.as_tensor(data.x_train), torch.as_tensor(data.y_train),
                          torch.as_tensor(data.x_test), torch.as_tensor(data.y_test),
                          knobs=cfg.model_knobs(models), config=cfg.train_config(),
                          network=cfg.architecture())
    train = result.features()
    test = result.features(x=torch.as_tensor(data.x_test))
    got = chunk["ncc_train_centres_test"].values  # (model, layer)
    for j in range(len(models)):
        for k in range(cfg.depth + 1):
            h = train[k][j].numpy()
            means = np.stack([h[data.y_train == c].mean(0) for c in np.unique(data.y_train)])
            assert got[j, k] == ncc_accuracy(test[k][j].numpy(), data.y_test, means=means)
    own = chunk["load_curve_test"].values[:, cfg.measures.index("ncc")]  # test-set means
    assert not np.array_equal(got, own)
    assert ds["ncc_train_centres_test"].dims == ("alpha", "dropout", "seed", "layer")


def test_without_the_measures_the_statistics_are_nan():
    cfg = SweepConfig(**dict(GRID, measures=["trace_ratio"], alphas=[0.0], seeds=[0]))
    ds = phase._assemble([phase._train_and_measure(cfg, phase.chunk_plan(cfg)[0])], cfg)
    for name in ("pearson_r", "decay_ratio", "half_life", "effective_depth", "pearson_r_test"):
        assert np.isnan(ds[name]).all(), name
    assert np.isfinite(ds["ncc_train_centres_test"]).all()  # it needs no measure
