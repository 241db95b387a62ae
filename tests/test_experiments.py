"""Fig. 5(a), the linear network: the physics the paper reports, at a quick scale."""

import numpy as np
import pytest

from dnnphase.experiments import LINEAR_SETTINGS, linear_network, plot_linear_network
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
    from dnnphase.experiments import plot_train_test, train_test

    ds = train_test("quick", seeds=(0,), epochs=5)
    assert ds["load_curve_test"].dims == ds["load_curve"].dims
    fig = plot_train_test(ds)
    assert len(fig.axes) == 3
    for ax, lr in zip(fig.axes, ds["lr"].values, strict=True):
        styles = [line.get_linestyle() for line in ax.get_lines()]
        assert styles == ["-", "--"] and f"lr {lr:g}" in ax.get_title()
        train = ax.get_lines()[0].get_ydata()
        assert np.isclose(train[0], 1.0)  # divided by the training curve's D_0
