"""dnnphase.sweeps.regression: the Fig. S12 diagram's networks, labelled."""

import json

import numpy as np
import pytest

from dnnphase.sweeps.regression import QUICK, REGRESSION, regression_sweep
from phasecore.checks import ConfigError


def test_a_tiny_diagram_is_labelled_and_its_loads_fall_to_the_network():
    settings = dict(QUICK, alphas=(0.0,), dropouts=(0.0, 0.2), seeds=1, epochs=3)
    ds = regression_sweep(**settings)
    assert ds["load_curve"].dims == ("alpha", "dropout", "seed", "layer")
    assert ds.sizes["layer"] == settings["depth"] + 1
    assert np.isfinite(ds["load_curve"].values).all()
    assert (ds["load_curve"].values >= 0).all()  # an RMSE
    assert np.isfinite(ds["curvature_scaled"].values).all()
    assert json.loads(ds.attrs["config"])["loss"] == "mse"
    assert ds.attrs["kind"] == "dnnphase.regression"


def test_the_diagram_is_the_papers_network():
    assert (REGRESSION["depth"], REGRESSION["width"], REGRESSION["epochs"],
            REGRESSION["lr"], REGRESSION["dataset"]) == (7, 100, 100, 1e-3, "mnist5k")


@pytest.mark.parametrize("change, word", [
    ({"alphas": (0.0, 2.0)}, "alphas"), ({"dropouts": ()}, "dropouts"),
    ({"dropouts": (0.1, 0.1)}, "dropouts"), ({"seeds": 0}, "seeds"), ({"epochs": 0}, "epochs")])
def test_bad_settings_are_refused_before_training(change, word):
    with pytest.raises(ConfigError, match=word):
        regression_sweep(**dict(QUICK, **change))
