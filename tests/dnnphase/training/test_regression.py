"""dnnphase.training.regression: one network trained with the mean squared error."""

import numpy as np
import pytest
import torch

from dnnphase.training.regression import digit_value_targets, train_regression
from phasecore.checks import ConfigError


def _task(n=128, d=6, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, d)).astype(np.float32)
    t = (x[:, :1] - 0.5 * x[:, 1:2]).astype(np.float32)  # a linear target, (N, 1)
    return x, t


def _mse(model, x, t):
    with torch.no_grad():
        return float(((model(torch.as_tensor(x)).numpy() - t) ** 2).mean())


def test_training_lowers_the_squared_error_and_is_fixed_by_its_seed():
    x, t = _task()
    before, _ = train_regression(x, t, epochs=1, lr=1e-9, depth=2, width=8, seed=3)
    model, loss = train_regression(x, t, epochs=150, lr=1e-2, depth=2, width=8, seed=3,
                                   batch_size=32)
    assert np.isfinite(loss) and not model.training
    assert _mse(model, x, t) < 0.2 * _mse(before, x, t)
    again, loss_again = train_regression(x, t, epochs=150, lr=1e-2, depth=2, width=8, seed=3,
                                         batch_size=32)
    assert loss_again == loss
    other, _ = train_regression(x, t, epochs=150, lr=1e-2, depth=2, width=8, seed=4,
                                batch_size=32)
    assert _mse(other, x, t) != _mse(model, x, t)


def test_digit_values_are_scaled_to_the_unit_interval():
    t = digit_value_targets(np.array([0, 9, 3]))
    assert t.shape == (3, 1) and t.dtype == np.float32
    np.testing.assert_allclose(t[:, 0], [0.0, 1.0, 3 / 9])
    with pytest.raises(ConfigError, match="labels"):
        digit_value_targets(np.array([0, 10]))


@pytest.mark.parametrize("change, word", [
    ({"alpha": 1.5}, "alpha"), ({"dropout": 1.0}, "dropout"), ({"lr": 0.0}, "lr"),
    ({"epochs": 0}, "epochs"), ({"batch_size": 1000}, "batch_size"), ({"seed": -1}, "seed"),
    ({"depth": 0}, "depth"), ({"width": 0}, "width")])
def test_bad_settings_name_the_parameter(change, word):
    x, t = _task()
    with pytest.raises(ConfigError, match=word):
        train_regression(x, t, **change)
    with pytest.raises(ConfigError, match="targets"):
        train_regression(x, t[:10])
