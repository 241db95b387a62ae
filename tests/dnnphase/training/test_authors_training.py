"""The papers' own training options against one model trained alone with ``MLP`` and
``torch.optim``: He & Su's last, partial batch (keep_last_batch) and Galanti et al.'s linear
learning-rate warm-up (warmup_epochs), each step written out. float64 (tolerance:
tests/dnnphase/training/test_train.py)."""

import pytest
import torch
import torch.nn.functional as F

from dnnphase.networks.architecture import Architecture
from dnnphase.networks.mlp import MLP
from dnnphase.networks.randomness import ModelStreams
from dnnphase.training.train import TrainConfig, train_ensemble
from phasecore.checks import ConfigError

N, D, C, DEPTH, WIDTH, EPOCHS, BATCH = 100, 10, 3, 2, 12, 3, 16  # 100 = 6 x 16 + 4
TOL = 1e-8

pytestmark = pytest.mark.usefixtures("one_torch_thread")


@pytest.fixture(scope="module")
def data():
    g = torch.Generator().manual_seed(3)
    centres = 2.0 * torch.randn(C, D, generator=g, dtype=torch.float64)
    y = torch.randint(0, C, (N,), generator=g)
    return centres[y] + 2.0 * torch.randn(N, D, generator=g, dtype=torch.float64), y


def train(x, y, seeds, lr, optimizer, **settings):
    cfg = TrainConfig(epochs=EPOCHS, dtype=torch.float64, device="cpu", loss_threshold=0.0,
                      rel_tol=0.0, optimizer=optimizer,
                      momentum=0.9 if optimizer == "sgd" else 0.0, **settings)
    return train_ensemble(x, y, seeds=seeds, batch_size=BATCH, lr=lr, config=cfg,
                          network=Architecture(depth=DEPTH, width=WIDTH))


def reference(x, y, seed, lr, optimizer, keep_last=False, warmup=0):
    """One model alone: batches of the model's own epoch order, the last partial one a step
    of its own when ``keep_last``; in the first ``warmup`` epochs step s of S at lr·s/S."""
    torch.manual_seed(seed)
    model = MLP(D, C, depth=DEPTH, width=WIDTH).double().train()
    opt = torch.optim.Adam(model.parameters(), lr=lr) if optimizer == "adam" else \
        torch.optim.SGD(model.parameters(), lr=lr, momentum=0.9)
    streams, step = ModelStreams([seed]), 0
    per_epoch = -(-N // BATCH) if keep_last else N // BATCH
    for epoch in range(1, EPOCHS + 1):
        perm = streams.epoch_order(epoch, N)[0]
        for s in range(per_epoch):
            for group in opt.param_groups:
                group["lr"] = lr * step / (warmup * per_epoch) if epoch <= warmup else lr
            idx = perm[s * BATCH : (s + 1) * BATCH]
            opt.zero_grad()
            F.cross_entropy(model(x[idx]), y[idx]).backward()
            opt.step()
            step += 1
    return model.eval()


def assert_matches(result, j, ref):
    mine = result.model.select([j]).to_models()[0]
    for (name, a), b in zip(ref.state_dict().items(), mine.state_dict().values(), strict=True):
        if a.dtype.is_floating_point:
            assert (a - b).abs().max().item() <= TOL, name


def test_the_last_partial_batch_is_a_step_of_its_own(data):
    """He & Su keep the last batch: 7 steps an epoch of 100 samples at batch 16 (6 full, one
    of 4), each model as when trained alone; without it, 6 steps and another network."""
    x, y = data
    res = train(x, y, [0, 1], 1e-2, "adam", keep_last_batch=True)
    assert res.steps_run.tolist() == [7 * EPOCHS] * 2
    for j, seed in enumerate([0, 1]):
        assert_matches(res, j, reference(x, y, seed, 1e-2, "adam", keep_last=True))
    dropped = train(x, y, [0], 1e-2, "adam")
    assert dropped.steps_run.tolist() == [6 * EPOCHS]
    assert_matches(dropped, 0, reference(x, y, 0, 1e-2, "adam"))


def test_linear_warm_up_over_the_first_epoch(data):
    """Galanti et al.'s warm-up: lr·s/S in epoch 1 (first step at 0), then each model's own
    lr, with SGD and momentum 0.9; two learning rates in one stack."""
    x, y = data
    res = train(x, y, [2, 3], [0.1, 0.05], "sgd", warmup_epochs=1)
    for j, (seed, lr) in enumerate([(2, 0.1), (3, 0.05)]):
        assert_matches(res, j, reference(x, y, seed, lr, "sgd", warmup=1))
    plain = train(x, y, [2], 0.1, "sgd")
    assert not torch.equal(plain.model.weights[0], res.model.weights[0][:1])


def test_the_options_are_refused_where_they_cannot_apply(data):
    x, y = data
    with pytest.raises(ConfigError, match="batch_size must be a size that leaves a last batch"):
        train(x[:97], y[:97], [0], 1e-2, "adam", keep_last_batch=True)  # 97 = 6 x 16 + 1
    with pytest.raises(ConfigError, match="warmup_epochs must be"):
        TrainConfig(epochs=5, warmup_epochs=2, schedule=((2, "lr", 1e-3),))
    with pytest.raises(ConfigError, match="warmup_epochs must be"):
        TrainConfig(epochs=5, warmup_epochs=5)
    with pytest.raises(ConfigError, match="keep_last_batch must be True or False"):
        TrainConfig(keep_last_batch=1)
