"""Nothing recorded wrong (issue 45 §1): a network that blows up on its last update is
diverged, with its reason, and gets no curvature; whatever the optimizer."""

import math

import numpy as np
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
