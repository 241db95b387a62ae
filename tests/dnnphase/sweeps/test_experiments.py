"""The supplement's experiments (Fig. 5(a), S4, S2): the physics the paper reports, at a quick
scale."""

import json

import numpy as np
import pytest

from dnnphase.sweeps.experiments import LINEAR_SETTINGS, linear_network, plot_linear_network
from phasecore.checks import ConfigError


@pytest.fixture(scope="module")
def linear():
    return linear_network("quick")


def test_small_steps_give_a_linear_load_curve_large_steps_and_dropout_convex(linear):
    """Gradient-flow-like training: curvature within seed noise of 0; a large step size
    or dropout: every seed clearly convex (the large step's spread across seeds is wide,
    0.23 ... 0.54, so the bound is on each seed, not on a mean's standard error)."""
    c = linear["curvature_scaled"]
    n = c.sizes["seed"]

    def mean_se(name):
        v = c.sel(setting=name).values
        return v.mean(), v.std(ddof=1) / np.sqrt(n)

    m, se = mean_se("small lr")
    assert abs(m) <= max(3 * se, 0.01), (m, se)
    for name in ("large lr", "dropout"):
        assert (c.sel(setting=name) > 0.1).all(), (name, c.sel(setting=name).values)
    assert (linear["train_accuracy"] == 1).all()  # every network fits its random labels


def test_the_result_and_figure_name_every_setting(linear):
    assert list(linear["setting"].values) == list(LINEAR_SETTINGS)
    assert linear["load_curve"].dims == ("setting", "seed", "layer")
    assert all(f"config_{name.replace(' ', '_')}" in linear.attrs for name in LINEAR_SETTINGS)
    fig = plot_linear_network(linear)
    labels = [line.get_label() for line in fig.axes[0].get_lines()]
    assert len(labels) == 4 and labels[-1] == "linear"
    for name, label in zip(LINEAR_SETTINGS, labels, strict=False):
        assert label.startswith(f"{name}: curvature")
    curves = [line.get_ydata() for line in fig.axes[0].get_lines()[:3]]
    assert all(np.isclose(y[0], 1) and np.isclose(y[-1], 0) for y in curves)


def test_bad_scale_and_fields_are_refused_before_work():
    with pytest.raises(ConfigError, match="scale"):
        linear_network("huge")
    with pytest.raises(ConfigError, match="depth"):
        linear_network("quick", depth=0)


def test_train_test_figure_draws_both_curves_per_learning_rate():
    from dnnphase.sweeps.experiments import plot_train_test, train_test

    ds = train_test("quick", seeds=(0,), epochs=5)
    assert ds["load_curve_test"].dims == ds["load_curve"].dims
    fig = plot_train_test(ds)
    assert len(fig.axes) == 3
    for ax, lr in zip(fig.axes, ds["lr"].values, strict=True):
        styles = [line.get_linestyle() for line in ax.get_lines()]
        assert styles == ["-", "--"] and f"lr {lr:g}" in ax.get_title()
        train = ax.get_lines()[0].get_ydata()
        assert np.isclose(train[0], 1.0)  # divided by the training curve's D_0


@pytest.fixture(scope="module")
def cnn():
    from dnnphase.sweeps.experiments import cnn_dropout

    return cnn_dropout("quick", record_every=15, dtype="float64")  # exact: see below


def test_dropout_introduced_mid_training_straightens_then_bends_the_cnn_curve(cnn):
    """Fig. S2 at the quick scale: trained without dropout the CNN's curve is concave;
    continuing without dropout keeps it so, while dropout from epoch 16 raises the
    curvature of every seed, the more so the stronger, to convex at p = 0.5."""
    c = cnn["curvature_scaled"]  # (dropout, seed)
    assert (cnn["curvature_scaled_before"] < -1).all()
    assert (abs(c.sel(dropout=0.0) - cnn["curvature_scaled_before"]) < 0.5).all()
    assert (c.sel(dropout=0.2) > c.sel(dropout=0.0) + 1).all()
    assert (c.sel(dropout=0.5) > c.sel(dropout=0.2)).all() and c.sel(dropout=0.5).mean() > 0
    assert (cnn["test_accuracy"].sel(dropout=0.5) < cnn["test_accuracy_before"]).all()


def test_the_state_before_is_the_scheduled_models_at_the_switch(cnn):
    """The separate run to epoch 15 is the scheduled run's models at epoch 15 (whatever
    their p and stack): each model's randomness comes from its seed alone. Float64, so
    the stack size's rounding (float32: up to 4e-3 after 90 Adam steps) cannot hide a
    difference."""
    at_switch = cnn["load_curve_epochs"].sel(epoch=15)  # (dropout, seed, layer)
    for p in cnn["dropout"].values:
        np.testing.assert_allclose(at_switch.sel(dropout=p), cnn["load_curve_before"],
                                   rtol=0, atol=1e-12)
    assert cnn.attrs["dropout_from_epoch"] == 16
    assert json.loads(cnn.attrs["config"])["schedule"] == [[1, "dropout", 0.0],
                                                           [16, "dropout", None]]
    assert json.loads(cnn.attrs["config_before"])["epochs"] == 15


def test_cnn_dropout_bad_input_is_refused_before_work():
    from dnnphase.sweeps.experiments import cnn_dropout

    with pytest.raises(ConfigError, match="scale"):
        cnn_dropout("huge")
    with pytest.raises(ConfigError, match="schedule"):
        cnn_dropout("quick", schedule=())
    with pytest.raises(ConfigError, match="dataset"):
        cnn_dropout("quick", dataset="orthogonal")  # not an image data set


def test_cnn_dropout_figure_names_every_state(cnn):
    from dnnphase.sweeps.experiments import plot_cnn_dropout

    fig = plot_cnn_dropout(cnn)
    labels = [line.get_label() for line in fig.axes[0].get_lines()]
    assert labels[0].startswith("epoch 15, before: acc")
    assert [label.split(":")[0] for label in labels[1:]] == ["p = 0", "p = 0.2", "p = 0.5"]
