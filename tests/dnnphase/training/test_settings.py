"""The papers' training (He & Su; Galanti et al.): SGD with momentum and weight decay, the
learning rate divided by 10 at fractions of the run, and fixed random labels — each against
one model trained alone with ``MLP`` + ``torch.optim`` and a schedule written out by hand;
and their checks (one line naming the setting, before any work)."""

import math
import re

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from dnnphase.networks.architecture import Architecture
from dnnphase.networks.mlp import MLP
from dnnphase.networks.randomness import ModelStreams, fixed_random_labels
from dnnphase.sweeps.sweep import SweepConfig
from dnnphase.training.schedule import drop_epochs, parse_fractions
from dnnphase.training.settings import TrainingSettings
from dnnphase.training.train import TrainConfig, train_ensemble
from phasecore.checks import ConfigError

N, D, C, DEPTH, WIDTH, EPOCHS, BATCH = 96, 12, 3, 2, 16, 6, 16
TOL = 1e-8

pytestmark = pytest.mark.usefixtures("one_torch_thread")


@pytest.fixture(scope="module")
def data():
    g = torch.Generator().manual_seed(2)
    centres = 2.0 * torch.randn(C, D, generator=g, dtype=torch.float64)
    y = torch.randint(0, C, (N,), generator=g)
    return centres[y] + 2.0 * torch.randn(N, D, generator=g, dtype=torch.float64), y


def config(**kw):
    base = dict(epochs=EPOCHS, dtype=torch.float64, device="cpu", loss_threshold=0.0,
                rel_tol=0.0, optimizer="sgd", momentum=0.9, weight_decay=5e-4)
    return TrainConfig(**{**base, **kw})


def reference(x, y, seed, lr, drops_at, labels):
    """One model alone: torch.optim.SGD(momentum 0.9, weight decay 5e-4), its lr divided by
    10 at the start of each epoch in ``drops_at``, trained on ``labels``."""
    torch.manual_seed(seed)
    model = MLP(D, C, depth=DEPTH, width=WIDTH).double().train()
    opt = torch.optim.SGD(model.parameters(), lr=lr, momentum=0.9, weight_decay=5e-4)
    streams = ModelStreams([seed])
    for epoch in range(1, EPOCHS + 1):
        if epoch in drops_at:
            for group in opt.param_groups:
                group["lr"] = group["lr"] / 10
        perm = streams.epoch_order(epoch, N)[0]
        for s in range(N // BATCH):
            idx = perm[s * BATCH:(s + 1) * BATCH]
            opt.zero_grad()
            F.cross_entropy(model(x[idx]), labels[idx]).backward()
            opt.step()
    return model.eval()


def assert_matches(result, j, ref):
    mine = result.model.select([j]).to_models()[0]
    for (name, a), b in zip(ref.state_dict().items(), mine.state_dict().values(), strict=True):
        if a.dtype.is_floating_point:
            assert (a - b).abs().max().item() <= TOL, name


def test_sgd_momentum_weight_decay_and_relative_drops_equal_torch_optim(data):
    """He & Su's schedule over a run of 6 epochs: lr / 10 from epoch 3 and from epoch 5
    (after ⌊6/3 + ½⌋ = 2 and ⌊12/3 + ½⌋ = 4 epochs), per model, for two learning rates."""
    x, y = data
    seeds, lrs = [3, 4], [0.05, 0.1]
    res = train_ensemble(x, y, seeds=seeds, lr=lrs, batch_size=BATCH,
                         network=Architecture(depth=DEPTH, width=WIDTH),
                         config=config(lr_drops=(1 / 3, 2 / 3)))
    assert drop_epochs((1 / 3, 2 / 3), EPOCHS) == (3, 5)
    for j in range(2):
        assert_matches(res, j, reference(x, y, seeds[j], lrs[j], {3, 5}, y))
    plain = train_ensemble(x, y, seeds=seeds[:1], lr=lrs[:1], batch_size=BATCH,
                           network=Architecture(depth=DEPTH, width=WIDTH), config=config())
    assert not torch.equal(plain.model.weights[0], res.model.weights[0][:1])


def test_drops_fall_after_their_fraction_of_the_run_and_the_stopping_rules_wait():
    assert drop_epochs((1 / 3, 2 / 3), 600) == (201, 401)  # He & Su: 600 epochs
    assert drop_epochs((0.5,), 10) == (6,)
    assert parse_fractions("1/3, 2/3") == (1 / 3, 2 / 3)
    assert parse_fractions("0.25,0.75") == (0.25, 0.75)


def test_the_stopping_rules_wait_for_the_last_drop(data):
    x, y = data
    cfg = config(loss_threshold=10.0, lr_drops=(0.5,))  # every epoch's loss is below 10
    res = train_ensemble(x, y, seeds=[0], lr=0.05, batch_size=BATCH,
                         network=Architecture(depth=DEPTH, width=WIDTH), config=cfg)
    assert res.epochs_run.tolist() == [4] and res.stop_reason == ["loss_threshold"]


def test_fixed_random_labels_are_each_models_own_and_fixed(data):
    _, y = data
    labels = fixed_random_labels(y, [0.0, 0.5, 0.5, 1.0], [7, 7, 8, 7], C)
    assert torch.equal(labels[0], y)  # a fraction of 0 leaves the labels
    assert torch.equal(labels[1], fixed_random_labels(y, [0.5], [7], C)[0])  # per model
    assert not torch.equal(labels[1], labels[2])  # another seed, other labels
    changed = (labels != y).sum(1).tolist()
    assert changed[1] <= round(0.5 * N) and changed[3] <= N
    # about (1 - 1/C) of the reassigned ones change; all of them at fraction 1
    assert 0.5 * N * (1 - 1 / C) * 0.6 < changed[1] < 0.5 * N * (1 - 1 / C) * 1.4
    assert labels.min() >= 0 and labels.max() < C and labels.dtype == torch.long


def test_training_on_fixed_random_labels_equals_torch_optim_on_them(data):
    x, y = data
    seeds, frac = [5, 6], [0.0, 0.75]
    res = train_ensemble(x, y, seeds=seeds, lr=0.05, random_labels=frac, batch_size=BATCH,
                         network=Architecture(depth=DEPTH, width=WIDTH), config=config())
    own = fixed_random_labels(y, frac, seeds, C)
    assert torch.equal(res.train_labels, own)
    for j in range(2):
        ref = reference(x, y, seeds[j], 0.05, set(), own[j])
        assert_matches(res, j, ref)
        with torch.no_grad():
            acc = (ref(x).argmax(1) == own[j]).double().mean().item()
        assert res.train_accuracy[j].item() == pytest.approx(acc)  # on its own labels
    alone = train_ensemble(x, y, seeds=seeds[1:], lr=0.05, random_labels=frac[1:],
                           batch_size=BATCH, network=Architecture(depth=DEPTH, width=WIDTH),
                           config=config())
    assert torch.equal(alone.model.weights[0], res.model.weights[0][1:])  # stack-invariant
    clean = train_ensemble(x, y, seeds=seeds[:1], lr=0.05, batch_size=BATCH,
                           network=Architecture(depth=DEPTH, width=WIDTH), config=config())
    assert clean.train_labels is None
    assert torch.equal(clean.model.weights[0], res.model.weights[0][:1])  # 0: unchanged


BAD = [
    (dict(momentum=0.9), "momentum must be 0 unless optimizer is sgd"),
    (dict(optimizer="sgd", momentum=1.0), "momentum must be in [0, 1)"),
    (dict(optimizer="sgd", momentum=-0.1), "momentum must be in [0, 1)"),
    (dict(optimizer="sgd", momentum=math.nan), "momentum must be in [0, 1)"),
    (dict(weight_decay=-1e-4), "weight_decay must be in [0, 1)"),
    (dict(weight_decay=1.0), "weight_decay must be in [0, 1)"),
    (dict(lr_drops=(2 / 3, 1 / 3)), "lr_drops must be fractions of the run in (0, 1), increasing"),
    (dict(lr_drops=(0.0, 0.5)), "lr_drops must be fractions"),
    (dict(lr_drops=(0.5, 1.0)), "lr_drops must be fractions"),
    (dict(lr_drops=(0.5, 0.5)), "lr_drops must be fractions"),
    (dict(lr_drops=(0.004,)), "that fall on distinct epochs 2..epochs (100)"),
    (dict(lr_drops=(0.5,), schedule=((10, "lr", 1e-4),)), "lr_drops must be empty when"),
]


@pytest.mark.parametrize("bad,message", BAD)
def test_bad_training_settings_are_one_line_from_the_trainer_and_the_sweep(bad, message):
    for cls in (TrainConfig, SweepConfig, TrainingSettings):
        with pytest.raises(ConfigError, match=re.escape(message)) as err:
            cls(**bad)
        assert "\n" not in str(err.value)


@pytest.mark.parametrize("bad,message", [
    (dict(random_labels=1.5), "random_labels must be in [0, 1]"),
    (dict(random_labels=-0.1), "random_labels must be in [0, 1]"),
    (dict(knob="random_labels", values=[0.0, 1.2]), "values of random_labels must be in"),
])
def test_bad_random_labels_are_refused_before_any_work(bad, message):
    with pytest.raises(ConfigError, match=re.escape(message)):
        SweepConfig(**bad)


def test_trainer_refuses_a_bad_fraction(data):
    x, y = data
    with pytest.raises(ConfigError, match=re.escape("random_labels must be in [0, 1]")):
        train_ensemble(x, y, seeds=[0, 1], random_labels=[0.5, 2.0], config=config())


def test_new_settings_at_their_defaults_keep_the_stored_configuration():
    """A sweep that does not use them has the configuration (and hash) it had before they
    existed; one that does stores them."""
    stored = SweepConfig().to_dict()
    assert not {"momentum", "weight_decay", "lr_drops", "random_labels"} & set(stored)
    used = SweepConfig(optimizer="sgd", momentum=0.9, weight_decay=5e-4, lr_drops=[1 / 3, 2 / 3],
                       random_labels=0.25, batch_size=128).to_dict()
    assert used["lr_drops"] == (1 / 3, 2 / 3) and used["random_labels"] == 0.25
    assert SweepConfig(**used) == SweepConfig(**used).replace()
    assert np.isclose(SweepConfig(**used).train_config().momentum, 0.9)


def test_a_record_function_gets_each_models_own_labels(data):
    x, y = data
    seen = []

    def record(features, labels=None):
        seen.append(labels)
        return labels[:, :5].double()

    res = train_ensemble(x, y, seeds=[1, 2, 3], lr=0.05, random_labels=[0.5, 0.0, 1.0],
                         batch_size=BATCH, network=Architecture(depth=DEPTH, width=WIDTH),
                         config=config(record_every=2), record_fn=record)
    assert all(labels is not None for labels in seen)
    for epoch, rec in res.snapshots:
        assert torch.equal(rec, res.train_labels[:, :5].double()), epoch


def test_the_optimizer_defaults_are_the_optimizers_own():
    """A sweep's optimizer defaults are those of OptimizerSettings, their one home."""
    from dnnphase.training.optim import OptimizerSettings
    from dnnphase.training.settings import TrainingSettings

    ours, theirs = TrainingSettings(), OptimizerSettings()
    assert (ours.optimizer, ours.momentum, ours.weight_decay) == (
        theirs.kind, theirs.momentum, theirs.weight_decay)
