"""Nothing recorded wrong (issue 45 §1): a network that blows up on its last update is
diverged, with its reason, and gets no curvature; whatever the optimizer. And the issue's
misleading messages, a store left behind and a wrong estimate (§3)."""

import math

import numpy as np
import pytest
import torch

import dnnphase
from dnnphase.networks.architecture import Architecture
from dnnphase.training.loop import Retired, explosion_limit, final_divergence


def test_a_blow_up_on_the_last_step_is_diverged_and_has_no_curvature(tmp_path):
    """SGD with momentum at lr 100 ended with a training loss of 6.2e29, yet diverged was
    False and the cell had a curvature like any other: each step's loss is taken before its
    update, so the last update was never checked."""
    ds = dnnphase.sweep(dataset="digits", n_train=300, epochs=3, seeds=1, alphas=[0.0],
                        optimizer="sgd", momentum=0.9, knob="lr", values=[1e-3, 100],
                        output=tmp_path / "x.nc", quiet=True, scheduler="serial")
    bad, good = ds.sel(lr=100.0), ds.sel(lr=1e-3)
    assert bad["diverged"].all() and (bad["diverged_reason"] == "exploded").all()
    assert not good["diverged"].any() and (good["diverged_reason"] == "").all()
    assert np.isnan(bad["train_loss"]).all() and np.isnan(bad["curvature"]).all()
    assert np.isfinite(good["train_loss"]).all() and np.isfinite(good["curvature"]).all()
    # every update was applied: the divergence came with the last one
    assert int(bad["steps_run"].max()) == int(good["steps_run"].max())


def _retired(n: int) -> list[Retired]:
    models = Architecture(depth=2, width=4).init(n, 3, 2, seeds=list(range(n)),
                                                 alpha=[0.0] * n, dropout=[0.0] * n)
    return [Retired(models.select([k]), 1, 5, "max_epochs") for k in range(n)]


def test_a_final_state_that_is_not_finite_or_exploded_is_diverged_with_its_reason():
    """The final check reads the parameters and the final loss, not the optimizer: a NaN or
    infinite weight, a NaN / infinite / exploded loss; a model diverged earlier keeps its
    own reason and a healthy one is untouched."""
    retired = _retired(6)
    with torch.no_grad():
        next(retired[0].model.parameters()).view(-1)[0] = math.nan
        next(retired[1].model.parameters()).view(-1)[0] = math.inf
    retired[5].reason, retired[5].diverged_reason = "diverged", "nan"
    limit = explosion_limit(2, 1e3)
    losses = torch.tensor([0.5, 0.5, math.inf, 6.2e29, 0.5, 0.5])
    final_divergence(retired, losses, limit)
    assert [r.reason for r in retired] == ["diverged"] * 4 + ["max_epochs", "diverged"]
    assert [r.diverged_reason for r in retired] == ["nan", "inf", "inf", "exploded", "", "nan"]
    assert all(r.steps == 5 for r in retired)


def test_adam_blowing_up_on_its_last_step_is_diverged():
    """Any optimizer: Adam at a huge rate for one full-batch step (its only update, so its
    only step loss was the fresh network's) ends far above the limit."""
    from dnnphase.training.train import TrainConfig, train_ensemble

    gen = torch.Generator().manual_seed(0)
    x = torch.randn(64, 5, generator=gen)
    y = (x[:, 0] > 0).long()
    res = train_ensemble(x, y, seeds=[0, 1], lr=[1e6, 1e-3], network=Architecture(depth=2,
                         width=8), config=TrainConfig(epochs=1, optimizer="adam"))
    assert res.diverged.tolist() == [True, False]
    assert res.diverged_reason[0] in ("nan", "inf", "exploded") and res.diverged_reason[1] == ""
    assert res.steps_run.tolist() == [1, 1]
    assert torch.isnan(res.train_loss[0]) and torch.isfinite(res.train_loss[1])


# --- issue 45 §3: misleading messages, a store left behind, a wrong estimate -----------------


def one_line_error(capsys, prog: str) -> str:
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"{prog}: error:") and "\n" not in err, err
    return err


def test_a_depth_axis_too_deep_names_depths(capsys):
    """--depths 100000 was refused naming depth, an option not given."""
    from dnnphase.cli import main

    assert main(["sweep", "--depths", "3,100000", "-o", "x.nc"]) == 2
    assert one_line_error(capsys, "dnnphase").startswith(
        "dnnphase: error: depths is too large for this machine")


def test_the_smallest_n_train_is_said_once(capsys):
    """--n-train 5 said the minimum was 10; --n-train 10 then said 20."""
    from dnnphase.cli import main

    for n in ("5", "10"):
        assert main(["sweep", "--dataset", "digits", "--n-train", n, "-o", "x.nc"]) == 2
        assert "n_train must be at least 20 for dataset 'digits'" in one_line_error(
            capsys, "dnnphase")


def test_an_endless_langevin_chain_is_told_what_to_change():
    """steps=inf with dynamics='langevin' pointed at algorithm; following that gave another
    error. The obstacle is the dynamics: say so, whatever the algorithm."""
    import springblock as sb
    from phasecore.checks import ConfigError

    for algorithm in ("steps", "auto", "events"):
        with pytest.raises(ConfigError, match=r"^steps must be finite with "
                                              r"dynamics='langevin'"):
            sb.simulate(blocks=3, steps=float("inf"), dynamics="langevin",
                        algorithm=algorithm)


def test_a_resize_too_large_is_refused_before_it_is_made(monkeypatch):
    """--size 1000 on Fashion-MNIST asked numpy for 32.8 GB before the memory check."""
    import tracemalloc

    from dnnphase.data import images as data_images
    from phasecore.checks import ConfigError

    images = np.zeros((600, 1, 28, 28), np.uint8)
    monkeypatch.setattr(data_images, "host_available_memory", lambda: 2**30)
    tracemalloc.start()
    try:
        with pytest.raises(ConfigError, match=r"^size is too large for this machine: 600 "
                                              r"images resized to size 1000 .*use a smaller "
                                              r"size"):
            data_images.image_features(images, 255, 1000)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 600 * 28 * 28 * 4  # not even the float copy of the originals was made


def _stop(payload):
    raise KeyboardInterrupt


def test_a_sweep_interrupted_before_any_chunk_leaves_nothing(tmp_path):
    """It said "nothing is kept" but left <out>.parts/sweep.json, and a different sweep to
    the same place was then refused because of it."""
    import xarray as xr

    from phasecore.sweeps import SweepInterrupted, run_chunked

    with pytest.raises(SweepInterrupted, match="nothing is kept"):
        run_chunked(_stop, [0, 1], config={"n": 2}, output=tmp_path / "r.nc")
    assert list(tmp_path.iterdir()) == []
    chunks, store = run_chunked(lambda p: xr.Dataset({"x": ("i", [float(p)])}), [0, 1, 2],
                                config={"n": 3}, output=tmp_path / "r.nc")
    assert len(chunks) == 3 and store is not None


def test_the_estimate_counts_the_work_in_flight():
    """A plain line said "eta 150.7s" for a sweep that ended at 12 s: the first chunks to
    finish on a pool were taken as the rate, as if the others in flight had not begun."""
    from phasecore.progress import Progress

    p = Progress(2, quiet=True)
    p.workers, p.done = 2, 1
    assert p.eta(22.2) == 0.0  # the other chunk started with it: about to finish
    p = Progress(10, quiet=True)
    p.workers, p.done = 2, 3  # chunks of 1 s, 2 at a time: 3 done at 2 s, 3 s left
    assert p.eta(2.0) == pytest.approx(3.0)
    p = Progress(10, quiet=True)
    p.done = 4  # one worker: the plain rate
    assert p.eta(8.0) == pytest.approx(12.0)
    # a start-up of 10 s carried by the first chunk, then 0.1 s a chunk: once a chunk has
    # followed the first, the rate since the first (the line said 150.7 s; 1.6 s were left)
    p = Progress(18, quiet=True)
    p.done, p.first = 2, (10.0, 1)
    assert p.eta(10.1) == pytest.approx(1.6)


def test_a_sweep_too_large_for_its_resized_images_names_size():
    """--size 1000 on the digits fits as data (1 200 images) but not as a sweep: the error
    named n_train, though size was the only option changed."""
    from dnnphase.sweeps.memory import check_sweep_memory
    from dnnphase.sweeps.sweep import SweepConfig, load_data
    from phasecore.checks import ConfigError

    cfg = SweepConfig(dataset="digits", depth=3, width=16, epochs=2, seeds=(0,), size=200)
    with pytest.raises(ConfigError, match=r"^size is too large for this machine: .*1200 "
                                          r"training samples of 40000 features \(size 200\)"
                                          r".*n_train or size"):
        check_sweep_memory(cfg, load_data(cfg), scheduler="serial", workers=None,
                           on_cuda=False, available=2**20)


def test_an_infinite_lr_and_a_huge_step_count_are_named_plainly():
    """'lr must be > 0 (got inf)' read as if inf were too small; steps=1e300 printed all of
    its 301 digits."""
    import springblock as sb
    from dnnphase.training.settings import TrainingSettings
    from phasecore.checks import ConfigError

    with pytest.raises(ConfigError, match=r"^lr must be > 0 and finite \(got inf\)$"):
        TrainingSettings(lr=float("inf"))
    with pytest.raises(ConfigError, match=r"^steps must be <= 2\*\*62 .*\(got 1e\+300\)$"):
        sb.simulate(blocks=3, steps=int(1e300), algorithm="steps")
