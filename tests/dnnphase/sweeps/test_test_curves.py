"""The test set's load curves (the paper's supplement Fig. S4): measured beside the training
ones at the end and at every record epoch, without changing anything else, and drawn
dashed wherever a figure draws a network's load curve."""

import dataclasses

import numpy as np
import pytest
import torch
from matplotlib.colors import to_rgba

from dnnphase import separation
from dnnphase.networks.architecture import Architecture
from dnnphase.sweeps import sweep as phase
from dnnphase.sweeps.sweep import SweepConfig, sweep
from dnnphase.training.train import TrainConfig, train_ensemble
from phasecore.checks import ConfigError

pytestmark = pytest.mark.usefixtures("one_torch_thread")

# lr 1e-3 trains to the end, 3e-2 stops early (loss below 1.6 at epoch 3 or 4, before the
# record epochs 6 and 9), 1e6 diverges (exploded); float64, one chunk.
GRID = dict(knob="lr", values=[1e-3, 3e-2, 1e6], alphas=[0.0, 1.0], seeds=[0, 1],
            dataset="digits", n_train=300, depth=3, width=16, epochs=9, record_every=3,
            loss_threshold=1.6, dtype="float64", measures=["trace_ratio", "ncc", "cdnv"],
            models_per_chunk=12)
TEST_VARS = ["load_curve_test", "curvature_test", "curvature_scaled_test",
             "load_curve_epochs_test", "ncc_train_centres_test"]


@pytest.fixture(scope="module")
def grid():
    return sweep(scheduler="serial", **GRID)


def _models(cfg):
    return [(ia, iv, seed) for ia in range(len(cfg.alphas)) for iv in range(len(cfg.values))
            for seed in cfg.seeds]


def test_the_grid_has_finished_stopped_and_diverged_models(grid):
    run = grid["epochs_run"].values
    assert (run == 9).sum() == 4 and ((run > 2) & (run < 6)).sum() == 4
    assert grid["diverged"].sum() == 4


def test_test_variables_have_the_training_ones_dims_and_attributes(grid):
    for name in ("load_curve", "curvature", "curvature_scaled", "load_curve_epochs"):
        test = grid[f"{name}_test"]
        assert test.dims == grid[name].dims and test.shape == grid[name].shape
        assert test.attrs["long_name"] and "test" in test.attrs["long_name"]
        assert test.attrs.get("units") == grid[name].attrs.get("units")
    healthy = ~grid["diverged"]
    assert np.isfinite(grid["load_curve_test"].where(healthy)).sum() == 8 * 3 * 4
    assert np.isnan(grid["load_curve_test"].where(~healthy, 0.0)).sum() == 4 * 3 * 4
    assert np.isnan(grid["load_curve_epochs_test"].sel(lr=1e6)).all()
    # a different data set, so a different curve
    assert not np.allclose(grid["load_curve_test"].where(healthy, 0.0),
                           grid["load_curve"].where(healthy, 0.0))


def test_test_curve_is_measure_layers_of_the_final_models_test_features(grid):
    """Recomputed independently: the same models trained by train_ensemble (same seeds,
    knobs and configuration), their final eval-mode features of the test set measured."""
    cfg = SweepConfig(**GRID)
    data = phase.load_data(cfg)
    models = _models(cfg)
    res = train_ensemble(torch.as_tensor(data.x_train), torch.as_tensor(data.y_train),
                         torch.as_tensor(data.x_test), torch.as_tensor(data.y_test),
                         seeds=[s for _, _, s in models],
                         alpha=[cfg.alphas[ia] for ia, _, _ in models],
                         lr=[cfg.values[iv] for _, iv, _ in models],
                         config=cfg.train_config(), network=cfg.architecture())
    healthy = np.flatnonzero(~res.diverged.numpy())
    assert healthy.size == 8
    feats = res.features(indices=healthy.tolist(), x=torch.as_tensor(data.x_test))
    assert feats[0].dtype == torch.float64 and feats[0].shape[1] == data.n_test
    expect = separation.measure_layers(feats, data.y_test, cfg.measures).numpy()
    got = grid["load_curve_test"].stack(model=("alpha", "lr", "seed")).transpose(
        "model", "measure", "layer").values[healthy]
    np.testing.assert_allclose(got, expect, rtol=0, atol=1e-12)


def test_recorded_test_curves_end_at_the_final_ones(grid):
    """At the last record epoch a model that ran to the end is its final model; one that
    stopped early keeps its final state at every later record epoch, test curve too."""
    final = grid["load_curve_test"].sel(measure="trace_ratio")
    per_epoch = grid["load_curve_epochs_test"]
    ran = grid["epochs_run"] == 9
    np.testing.assert_allclose(per_epoch.isel(epoch=-1).where(ran), final.where(ran),
                               rtol=0, atol=1e-12)
    stopped = ~ran & ~grid["diverged"]
    for epoch in (6, 9):  # after every early stop
        np.testing.assert_allclose(per_epoch.sel(epoch=epoch).where(stopped),
                                   final.where(stopped), rtol=0, atol=1e-12)
    # and the training curves as before
    np.testing.assert_allclose(grid["load_curve_epochs"].isel(epoch=-1).where(ran),
                               grid["load_curve"].sel(measure="trace_ratio").where(ran),
                               rtol=0, atol=1e-12)
    assert np.isfinite(per_epoch.where(~grid["diverged"], 0.0)).all()


def test_the_test_measurement_leaves_every_training_variable_bitwise_unchanged():
    cfg = SweepConfig(**GRID)
    models = _models(cfg)
    with_test = phase._train_and_measure(cfg, models)
    without = phase._train_and_measure(cfg, models, test_set=False)
    assert set(with_test.data_vars) - set(without.data_vars) == set()
    for name in without.variables:
        a, b = without[name].values, with_test[name].values
        if name.endswith("_test"):
            assert np.isnan(a).all()
            continue
        assert a.dtype == b.dtype and a.tobytes() == b.tobytes(), name
    on, off = phase._assemble([with_test], cfg), phase._assemble([without], cfg)
    assert set(on.variables) == set(off.variables)
    for name in off.variables:
        if name in TEST_VARS:
            assert np.isnan(off[name]).all() and not np.isnan(on[name]).all()
        else:
            assert off[name].values.tobytes() == on[name].values.tobytes(), name
            assert off[name].attrs == on[name].attrs and off[name].dims == on[name].dims


@pytest.mark.parametrize("test_part", ["empty", "one class"])
def test_a_data_set_without_a_usable_test_set_gives_nan_test_curves(monkeypatch, test_part):
    small = dict(GRID, values=[1e-3], alphas=[0.0], seeds=[0], models_per_chunk=None)
    full = sweep(scheduler="serial", **small)
    data = phase.load_data(SweepConfig(**small))
    keep = data.y_test[:0] if test_part == "empty" else np.flatnonzero(data.y_test == 3)
    cut = dataclasses.replace(data, x_test=data.x_test[keep], y_test=data.y_test[keep])
    monkeypatch.setattr(phase, "load_data", lambda cfg: cut)
    ds = sweep(scheduler="serial", **small)
    for name in TEST_VARS:
        assert ds[name].dims == full[name].dims and np.isnan(ds[name]).all(), name
    for name in ("load_curve", "load_curve_epochs", "curvature_scaled", "train_loss"):
        assert ds[name].values.tobytes() == full[name].values.tobytes(), name
    assert np.isfinite(full["load_curve_test"]).all()


def test_stored_chunks_without_test_curves_assemble_as_nan():
    """A sweep resumed from parts stored before the test set was measured."""
    cfg = SweepConfig(**dict(GRID, values=[1e-3], alphas=[0.0], seeds=[0]))
    chunk = phase._train_and_measure(cfg, _models(cfg))
    ds = phase._assemble([chunk.drop_vars(["load_curve_test", "load_curve_epochs_test",
                                             "ncc_train_centres_test"])], cfg)
    assert all(np.isnan(ds[name]).all() for name in TEST_VARS)
    assert np.isfinite(ds["load_curve"]).all()


# --------------------------------------------------------------------------
# the trainer: test_snapshots beside snapshots
# --------------------------------------------------------------------------

def _blobs(n, seed):
    g = torch.Generator().manual_seed(seed)
    y = torch.arange(n) % 3
    x = 2.0 * torch.randn(3, 6, generator=torch.Generator().manual_seed(9),
                          dtype=torch.float64)[y] + torch.randn(n, 6, generator=g,
                                                                dtype=torch.float64)
    return x, y


def test_trainer_records_the_test_set_at_the_same_epochs():
    x, y = _blobs(60, 0)
    xt, yt = _blobs(30, 1)
    cfg = TrainConfig(epochs=5, record_every=2, dtype="float64", device="cpu",
                      loss_threshold=0.0, rel_tol=0.0)
    kw = dict(seeds=[3, 4], lr=[1e-2, 2e-2], network=Architecture(depth=2, width=8), config=cfg)

    def last(feats):
        return feats[-1].mean((1, 2))

    plain = train_ensemble(x, y, xt, yt, record_fn=last, **kw)
    both = train_ensemble(x, y, xt, yt, record_fn=last, test_record_fn=lambda f: f, **kw)
    assert plain.test_snapshots == []
    assert [e for e, _ in both.test_snapshots] == [e for e, _ in both.snapshots] == [0, 2, 4]
    for (e1, a), (e2, b) in zip(plain.snapshots, both.snapshots, strict=True):
        assert e1 == e2 and a.shape == (2,) and torch.equal(a, b)  # the training side as before
    for name in ("train_loss", "train_accuracy", "test_accuracy", "loss_history"):
        assert torch.equal(getattr(plain, name), getattr(both, name)), name
    assert all(torch.equal(p, q) for p, q in zip(plain.model.parameters(),
                                                 both.model.parameters(), strict=True))
    # the records of the test set are its features: at epoch 4 those of the final model
    # only after the last update at epoch 5, so compare at a run that ends on a record
    ends = train_ensemble(x, y, xt, yt, test_record_fn=lambda f: f,
                          **{**kw, "config": dataclasses.replace(cfg, epochs=4)})
    feats = ends.features(x=xt)
    assert [tuple(f.shape) for f in ends.test_snapshots[-1][1]] == [(2, 30, 6), (2, 30, 8),
                                                                     (2, 30, 8)]
    for a, b in zip(ends.test_snapshots[-1][1], feats, strict=True):
        torch.testing.assert_close(a, b, rtol=0, atol=1e-12)
    with pytest.raises(ConfigError, match="test_record_fn must be given only with a test set"):
        train_ensemble(x, y, test_record_fn=last, **kw)


# --------------------------------------------------------------------------
# figures: the test curve dashed, in the training curve's colour
# --------------------------------------------------------------------------

def _dashed(fig, colour=None):
    """Dashed lines of ``fig`` (in ``colour``, or in the colour of a solid line of their axes)."""
    found = []
    for ax in fig.axes:
        solid = {to_rgba(line.get_color()) for line in ax.get_lines()
                 if line.get_linestyle() == "-"}
        for line in ax.get_lines():
            rgba = to_rgba(line.get_color())
            if line.get_linestyle() == "--" and (rgba == to_rgba(colour) if colour
                                                 else rgba in solid):
                found.append(line)
    return found


def _legend_texts(fig):
    legends = list(fig.legends) + [ax.get_legend() for ax in fig.axes if ax.get_legend()]
    return [t.get_text() for legend in legends for t in legend.get_texts()]


def test_phase_diagram_draws_the_test_curve_dashed_when_it_is_there(grid):
    from dnnphase.sweeps.plotting import plot_sweep
    from phasecore.panels import plt

    ds = grid.sel(lr=[1e-3, 3e-2])
    fig = plot_sweep(ds, measure="trace_ratio")
    cells = ds.sizes["alpha"] * ds.sizes["lr"]
    assert len(_dashed(fig)) == 2 * cells  # both panels, every cell
    assert "dashed: test set" in _legend_texts(fig)
    # lr 1e-3 for 9 epochs leaves the networks at chance with rising curves: hatched in
    # the curvature panel (the second), their curves grey; lr 3e-2 separates
    hatched = [ax for ax in fig.axes if ax.patches]  # the accuracy panel hatches none
    assert len(hatched) == ds.sizes["alpha"]
    assert all(to_rgba(line.get_color()) == to_rgba("0.45") for ax in hatched
               for line in ax.get_lines() if line.get_marker() == ".")
    plt.close(fig)
    old = plot_sweep(ds.drop_vars(TEST_VARS), measure="trace_ratio")  # a sweep from before
    assert _dashed(old) == [] and "dashed: test set" not in _legend_texts(old)
    assert len([line for ax in old.axes for line in ax.get_lines()
                if line.get_marker() == "."]) == 2 * cells
    plt.close(old)
    nan = ds.copy()
    nan["load_curve_test"] = nan["load_curve_test"] * np.nan  # no test set
    fig = plot_sweep(nan, measure="trace_ratio")
    assert _dashed(fig) == [] and "dashed: test set" not in _legend_texts(fig)
    plt.close(fig)


def test_networks_beside_the_chain_draw_the_test_curve_dashed(grid):
    from dnnphase.compare.figures import comparison as figures
    from phasecore.panels import plt
    from tests.dnnphase.compare.comparator.test_compare import SPRING_CURV, fake_spring

    spring = fake_spring(SPRING_CURV, friction=[0.0, 0.01, 0.02], noise=[0, 0.01, 0.02, 0.03])
    ds = grid.sel(lr=[1e-3, 3e-2])
    fig = figures.plot_side_by_side(spring, ds, measure="trace_ratio")
    assert len(_dashed(fig)) == 4 and "dashed: test set" in _legend_texts(fig)
    plt.close(fig)
    fig = figures.plot_side_by_side(spring, ds.drop_vars(TEST_VARS), measure="trace_ratio")
    assert _dashed(fig) == [] and _legend_texts(fig) == []
    plt.close(fig)


def test_dynamics_figure_draws_the_recorded_test_curves_dashed(grid):
    from dnnphase.compare.figures import comparison as figures
    from phasecore.panels import plt

    cell = grid.sel(alpha=0.0, lr=1e-3).mean("seed")
    epochs = grid["epoch"].values
    train, test = cell["load_curve_epochs"].values, cell["load_curve_epochs_test"].values
    chain = (np.array([0.0, 1.0]), np.array([[1.0, 0.6, 0.3, 0.0], [1.0, 0.5, 0.2, 0.0]]))
    fig = figures.plot_dynamics([(epochs, train, test)], [chain], ["cell"])
    dashed = _dashed(fig)
    assert len(dashed) == len(epochs) and all(line.axes is fig.axes[0] for line in dashed)
    assert {to_rgba(line.get_color()) for line in dashed} == {
        to_rgba(line.get_color()) for line in fig.axes[0].get_lines()
        if line.get_linestyle() == "-"}
    assert "dashed: test set" in _legend_texts(fig)
    plt.close(fig)
    fig = figures.plot_dynamics([(epochs, train)], [chain], ["cell"])  # without test curves
    assert _dashed(fig) == [] and _legend_texts(fig) == []
    plt.close(fig)
