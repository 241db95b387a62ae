"""Noise schedules (dnnphase.training.schedule): dropout and lr that change during training.

The reference is one model trained alone with ``MLP`` + ``torch.optim`` — one optimizer
for the whole run, its state carried through every change — whose dropout masks come
from the model's own streams as documented in :mod:`dnnphase.networks.randomness`, with the
scheduled dropout / lr of each epoch. Everything in float64 (tolerance:
tests/dnnphase/training/test_train.py).
"""

import dataclasses
import json
import re

import numpy as np
import pytest
import torch
import torch.nn.functional as F
import xarray as xr

from dnnphase.cli import main
from dnnphase.networks.architecture import Architecture
from dnnphase.networks.mlp import MLP
from dnnphase.networks.randomness import LEVELS, DropoutMasks, ModelStreams, dropout_levels
from dnnphase.sweeps import sweep as phase
from dnnphase.sweeps.sweep import SweepConfig, sweep
from dnnphase.training.schedule import SCHEDULED, last_epoch, parse_schedule
from dnnphase.training.train import TrainConfig, TrainingSettings, train_ensemble
from phasecore import results
from phasecore.checks import ConfigError
from phasecore.store import config_hash

N, D, C, DEPTH, WIDTH, EPOCHS, BATCH = 96, 12, 3, 2, 16, 5, 16
TOL = 1e-8

pytestmark = pytest.mark.usefixtures("one_torch_thread")


@pytest.fixture(scope="module")
def data():
    g = torch.Generator().manual_seed(1)
    centres = 2.0 * torch.randn(C, D, generator=g, dtype=torch.float64)
    y = torch.randint(0, C, (N,), generator=g)
    x = centres[y] + 2.0 * torch.randn(N, D, generator=g, dtype=torch.float64)
    return x, y


def config(**kw):
    base = dict(epochs=EPOCHS, dtype=torch.float64, device="cpu", loss_threshold=0.0,
                rel_tol=0.0)
    return TrainConfig(**{**base, **kw})


def train(x, y, seeds, schedule=(), **kw):
    cfg = kw.pop("config", None) or config(schedule=schedule)
    return train_ensemble(x, y, seeds=seeds, batch_size=BATCH,
                          network=Architecture(depth=DEPTH, width=WIDTH),
                          config=cfg, **kw)


def value_at(schedule, knob, epoch, own):
    """The documented semantics, written out: the last entry of ``knob`` at or before
    ``epoch`` (None: ``own``), ``own`` before the first."""
    value = own
    for e, k, v in schedule:
        if k == knob and e <= epoch:
            value = own if v is None else v
    return value


def reference(x, y, seed, schedule, *, dropout, lr, optimizer="adam", epochs=EPOCHS):
    """One model alone: one torch.optim optimizer for the whole run (its lr set at the
    start of every epoch, its state kept), masks from the model's own step keys."""
    torch.manual_seed(seed)
    model = MLP(D, C, depth=DEPTH, width=WIDTH).double().train()
    opt = torch.optim.Adam(model.parameters(), lr=lr) if optimizer == "adam" else \
        torch.optim.SGD(model.parameters(), lr=lr, momentum=0.9)
    streams = ModelStreams([seed])
    step = 0
    for epoch in range(1, epochs + 1):
        p = value_at(schedule, "dropout", epoch, dropout)
        for group in opt.param_groups:
            group["lr"] = value_at(schedule, "lr", epoch, lr)
        level = torch.tensor([float(dropout_levels([p])[0])], dtype=torch.float64)
        perm = streams.epoch_order(epoch, N)[0]
        for s in range(N // BATCH):
            idx = perm[s * BATCH : (s + 1) * BATCH]
            key = streams.step_keys(torch.tensor([step]))[:, 0]
            masks = DropoutMasks(key, level, LEVELS / (LEVELS - level), BATCH, WIDTH)
            h = model.input_bn(x[idx])
            for layer, (lin, bn) in enumerate(zip(model.linears, model.norms, strict=True)):
                h = model.act(bn(lin(h)))
                if p > 0:
                    h = h * masks(layer)[:, 0]
            opt.zero_grad()
            F.cross_entropy(model.out(h), y[idx]).backward()
            opt.step()
            step += 1
    return model.eval()


def assert_matches(result, j, ref, x, y):
    """Model j of a TrainResult is the reference: every parameter and BatchNorm statistic,
    and the final training loss, to TOL."""
    mine = result.model.select([j]).to_models()[0]
    for (name, a), b in zip(ref.state_dict().items(), mine.state_dict().values(), strict=True):
        if a.dtype.is_floating_point:
            assert (a - b).abs().max().item() <= TOL, name
    with torch.no_grad():
        loss = F.cross_entropy(ref(x), y).item()
    assert result.train_loss[j].item() == pytest.approx(loss, abs=TOL)


def assert_bitwise_equal(a, b, ja, jb):
    """Model ja of result a and model jb of result b: identical bit for bit."""
    sa, sb = a.model.select([ja]).state_dict(), b.model.select([jb]).state_dict()
    assert all(torch.equal(sa[k], sb[k]) for k in sa)
    assert torch.equal(a.loss_history[ja].nan_to_num(-1), b.loss_history[jb].nan_to_num(-1))
    assert a.stop_reason[ja] == b.stop_reason[jb] and a.steps_run[ja] == b.steps_run[jb]


# --------------------------------------------------------------------------- training


def test_dropout_introduced_mid_training_equals_one_optimizer_run_by_hand(data):
    """Fig. S2: no dropout in epochs 1..2, then each model's own p (mixed p in one stack;
    p = 0 stays without dropout). The optimizer's state carries on through the change."""
    x, y = data
    schedule = ((1, "dropout", 0.0), (3, "dropout", None))
    seeds, drops = [1, 2, 3], [0.3, 0.0, 0.1]
    res = train(x, y, seeds, schedule, dropout=drops, lr=1e-2)
    for j in range(3):
        ref = reference(x, y, seeds[j], schedule, dropout=drops[j], lr=1e-2)
        assert_matches(res, j, ref, x, y)
    assert res.model.dropouts == tuple(drops)  # the dropout in effect at the end
    # ... and it is not the run with dropout throughout, nor the one without.
    for other in ((), ((1, "dropout", 0.0),)):
        again = train(x, y, seeds[:1], other, dropout=drops[:1], lr=1e-2)
        assert not torch.equal(again.model.weights[0], res.model.weights[0][:1])


@pytest.mark.parametrize("optimizer", ["adam", "sgd"])
def test_lr_schedule_equals_reference(data, optimizer):
    """lr → lr/10 at epoch 3 (one fixed value for every model), then back to each
    model's own lr at epoch 5, with a dropout change at the same epoch; Adam's moments
    and step count, SGD's momentum, carry on."""
    x, y = data
    schedule = ((2, "dropout", 0.2), (3, "lr", 1e-3), (5, "dropout", 0.0), (5, "lr", None))
    seeds, lrs = [4, 5], [1e-2, 3e-2]
    kw = dict(optimizer=optimizer, momentum=0.9 if optimizer == "sgd" else 0.0)
    res = train(x, y, seeds, lr=lrs, dropout=0.1, config=config(schedule=schedule, **kw))
    for j in range(2):
        ref = reference(x, y, seeds[j], schedule, dropout=0.1, lr=lrs[j], optimizer=optimizer)
        assert_matches(res, j, ref, x, y)


def test_scheduled_model_does_not_depend_on_its_stack_mates(data):
    """Bitwise in float32 (foreach Adam): stacks of all, 2 and 1 models; a model trained
    alone equals the same model trained beside others, through dropout and lr changes."""
    x, y = data
    schedule = ((1, "dropout", 0.0), (2, "lr", 5e-3), (3, "dropout", None), (4, "lr", None))
    kw = dict(seeds=[1, 2, 3, 4], alpha=[0.0, 0.5, 0.0, 1.0], dropout=[0.0, 0.1, 0.2, 0.3],
              lr=[1e-2, 1e-2, 3e-2, 1e-2], label_noise=[0.0, 0.1, 0.0, 0.2])
    runs = [train(x.float(), y, **kw, config=config(dtype=torch.float32, fused=False,
                                                    stack_size=k, schedule=schedule))
            for k in (None, 2, 1)]
    for run in runs[1:]:
        for j in range(4):
            assert_bitwise_equal(runs[0], run, j, j)
    alone = train(x.float(), y, **{k: v[2:3] for k, v in kw.items()},
                  config=config(dtype=torch.float32, fused=False, schedule=schedule))
    assert_bitwise_equal(runs[0], alone, 2, 0)


def test_no_schedule_and_epoch_one_schedules_are_the_unscheduled_run_bitwise(data):
    """An empty schedule is the default; entries at epoch 1 only set the knobs for the
    whole run: bitwise the run with those knobs, early stopping included (entries that
    keep each model's own values change nothing, and are refused)."""
    x, y = data
    kw = dict(seeds=[1, 2, 3], dropout=[0.0, 0.1, 0.2], lr=[1e-2, 3e-2, 1e-2])
    # Sorted by lr, a model sits at another stack position in some of these runs, which
    # changes none of its numbers: fused Adam (the default) is stack-invariant bit for bit
    # too (OptimizerSettings).
    stop = dict(loss_threshold=0.4, patience=2, rel_tol=0.05, epochs=12)
    plain = train(x, y, **kw, config=config(**stop))
    assert config().schedule == () and TrainingSettings().schedule == ()
    with pytest.raises(ConfigError, match="an entry that changes nothing is refused"):
        config(**stop, schedule=((1, "dropout", None), (1, "lr", None)))
    fixed = train(x, y, **kw, config=config(**stop, schedule=((1, "dropout", 0.3),
                                                               (1, "lr", 5e-3))))
    direct = train(x, y, seeds=kw["seeds"], dropout=0.3, lr=5e-3, config=config(**stop))
    for j in range(3):
        assert_bitwise_equal(fixed, direct, j, j)
    assert set(plain.stop_reason) != {"max_epochs"}  # the stopping rules did act


def test_cnn_dropout_introduced_mid_training():
    """Fig. S2's CNN: without dropout until the change (bitwise the unscheduled run's
    epochs), each model's own p afterwards, independent of its stack-mates bit for bit (on
    a CPU each model runs its own convolution and BatchNorm calls)."""
    g = torch.Generator().manual_seed(0)
    shape, n = (1, 8, 8), 48
    y = torch.arange(n) % C
    x = torch.randn(C, 64, generator=g, dtype=torch.float64)[y] + \
        torch.randn(n, 64, generator=g, dtype=torch.float64)
    kw = dict(network=Architecture("cnn", depth=2, channels=3), image_shape=shape,
              batch_size=16, lr=1e-2)
    schedule = ((1, "dropout", 0.0), (3, "dropout", None))
    res = train_ensemble(x, y, seeds=[1, 2], dropout=[0.2, 0.4], **kw,
                         config=config(epochs=4, schedule=schedule))
    plain = train_ensemble(x, y, seeds=[1, 2], **kw, config=config(epochs=4))
    assert res.model.dropouts == (0.2, 0.4)
    assert torch.equal(res.loss_history[:, :2], plain.loss_history[:, :2])
    assert (res.loss_history[:, 2:] != plain.loss_history[:, 2:]).all()
    alone = train_ensemble(x, y, seeds=[2], dropout=0.4, **kw,
                           config=config(epochs=4, schedule=schedule))
    mine, other = res.model.select([1]).state_dict(), alone.model.state_dict()
    assert mine.keys() == other.keys()
    assert all(torch.equal(mine[k], other[k]) for k in mine)
    assert torch.equal(res.loss_history[1], alone.loss_history[0])


def test_stopping_rules_wait_for_the_last_scheduled_epoch(data):
    """No model is retired before its schedule has run: the loss threshold is suspended
    until the last scheduled epoch E, the plateau windows start at E."""
    x, y = data
    # Without a schedule both stop at once: every loss is below 10, every window flat.
    quick = train(x, y, [1], config=config(epochs=12, loss_threshold=10.0))
    assert quick.stop_reason == ["loss_threshold"] and quick.epochs_run.item() == 1
    plateau = dict(epochs=12, patience=2, rel_tol=1e9)
    flat = train(x, y, [1], config=config(**plateau))
    assert flat.stop_reason == ["plateau"] and flat.epochs_run.item() == 4
    schedule = ((1, "dropout", 0.0), (6, "dropout", None))
    assert last_epoch(schedule) == 6 and last_epoch(()) == 1
    res = train(x, y, [1], dropout=0.2,
                config=config(epochs=12, loss_threshold=10.0, schedule=schedule))
    assert res.stop_reason == ["loss_threshold"] and res.epochs_run.item() == 6
    res = train(x, y, [1], dropout=0.2, config=config(**plateau, schedule=schedule))
    # Windows of 2 epochs from epoch 6: epochs 6-7 vs 8-9.
    assert res.stop_reason == ["plateau"] and res.epochs_run.item() == 6 - 1 + 2 * 2
    assert np.isfinite(res.loss_history[0, :9].numpy()).all()
    assert torch.isnan(res.loss_history[0, 9:]).all()
    # Divergence is never suspended.
    bad = train(x, y, [1], lr=1e30, config=config(epochs=12, schedule=schedule))
    assert bad.stop_reason == ["diverged"] and bad.epochs_run.item() < 6


# --------------------------------------------------------------------------- checks


@pytest.mark.parametrize("schedule,fragment", [
    (((3, "momentum", 0.1),), "knob one of dropout, lr (got (3, 'momentum', 0.1))"),
    (((0, "dropout", 0.1),), "epoch an integer in 1..epochs (5) (got (0, 'dropout', 0.1))"),
    (((6, "dropout", 0.1),), "epoch an integer in 1..epochs (5) (got (6, 'dropout', 0.1))"),
    (((2.5, "lr", 0.1),), "epoch an integer in 1..epochs (5)"),
    (((2, "dropout", 1.0),), "schedule's dropout at epoch 2 must be in [0, 1), or unset "
                             "(each model's own value) (got 1.0)"),
    (((2, "lr", 0.0),), "schedule's lr at epoch 2 must be > 0"),
    (((2, "lr", "0.1"),), "schedule's lr at epoch 2 must be > 0"),
    (((2, "lr", [0.1]),), "schedule's lr at epoch 2 must be > 0"),
    (((2, "lr", float("nan")),), "schedule's lr at epoch 2 must be > 0"),
    (((2, "lr"),), "schedule must be (epoch, knob, value) entries (got (2, 'lr'))"),
    (("lr@2=0.1",), "schedule must be (epoch, knob, value) entries"),
    ("lr@2=0.1", "schedule must be a sequence of (epoch, knob, value) entries"),
    (((3, "lr", 0.1), (2, "dropout", 0.1)), "in time order"),
    (((2, "lr", 0.1), (2, "lr", 0.2)), "at most one entry per (epoch, knob)"),
    (((5, "lr", None),), "schedule's lr at epoch 5 must be a change of the value in force "
                         "(each model's own value); an entry that changes nothing is refused"),
    (((1, "dropout", 0.0), (3, "dropout", 0.0)), "schedule's dropout at epoch 3 must be a "
                                                 "change of the value in force (0.0)"),
    (((1, "dropout", 0.0), (2, "dropout", None), (4, "dropout", None)),
     "schedule's dropout at epoch 4 must be a change"),
])
def test_bad_schedule_is_refused_naming_schedule(schedule, fragment):
    with pytest.raises(ConfigError, match=re.escape(fragment)) as err:
        TrainConfig(epochs=EPOCHS, schedule=schedule)
    assert "schedule" in str(err.value)
    with pytest.raises(ConfigError) as from_sweep:  # the sweep: the same message
        SweepConfig(knob="label_noise", epochs=EPOCHS, schedule=schedule)
    assert str(from_sweep.value) == str(err.value)


def test_sweep_refuses_an_entry_that_sets_every_models_own_value_again():
    """``--knob dropout --values 0.1 --schedule dropout@5=0.1`` and ``--lr 0.001
    --schedule lr@5=0.001`` ran: the entries changed nothing (every model had that value)."""
    one = dict(knob="dropout", values=(0.1,), epochs=EPOCHS)
    with pytest.raises(ConfigError, match=re.escape("schedule's dropout at epoch 3 must be a "
                                                    "change of the value in force (each "
                                                    "model's own value, 0.1)")):
        SweepConfig(**one, schedule=((3, "dropout", 0.1),))
    with pytest.raises(ConfigError, match="schedule's lr at epoch 2 must be a change"):
        SweepConfig(**one, lr=2e-3, schedule=((2, "lr", 2e-3),))
    SweepConfig(**one, lr=2e-3, schedule=((2, "lr", 1e-3),))  # a change
    SweepConfig(**{**one, "values": (0.1, 0.2)}, schedule=((3, "dropout", 0.1),))  # for 0.2


def test_sweep_refuses_a_schedule_that_hides_the_swept_values():
    ok = dict(knob="dropout", values=(0.1, 0.2), epochs=EPOCHS)
    SweepConfig(**ok, schedule=((1, "dropout", 0.0), (3, "dropout", None)))
    SweepConfig(**ok, schedule=((3, "dropout", 0.0),))  # own p in epochs 1..2
    SweepConfig(**ok, schedule=((1, "lr", 1e-4),))  # another knob
    with pytest.raises(ConfigError, match=re.escape("schedule must be entries that leave the "
                                                    "swept dropout's values in effect")):
        SweepConfig(**ok, schedule=((1, "dropout", 0.0), (3, "dropout", 0.2)))
    assert SCHEDULED == ("dropout", "lr")


def test_schedule_is_normalised_for_json_and_hashing():
    """Lists (from JSON), numpy and Python numbers: one schedule, one hash."""
    a = SweepConfig(epochs=EPOCHS, schedule=((1, "dropout", 0.0), (3, "dropout", None)))
    b = SweepConfig(epochs=EPOCHS, schedule=[[np.int64(1), "dropout", 0], [3, "dropout", None]])
    assert a == b and a.schedule == ((1, "dropout", 0.0), (3, "dropout", None))
    assert config_hash(a.to_dict()) == config_hash(b.to_dict())
    stored = json.loads(json.dumps(a.to_dict()))
    assert stored["schedule"] == [[1, "dropout", 0.0], [3, "dropout", None]]
    assert SweepConfig(**stored) == a
    assert config_hash(SweepConfig(**stored).to_dict()) == config_hash(a.to_dict())
    assert a.train_config().schedule == a.schedule


def test_sweep_without_a_schedule_stores_the_configuration_it_stored_before():
    """An empty schedule (like the other fields added since results were stored, at their
    defaults) is left out of the stored configuration and its hash, so sweeps stored before
    they existed resume and are reused as before."""
    cfg = SweepConfig(epochs=EPOCHS)
    stored = cfg.to_dict()
    later = {"schedule", "arch", "channels", "kernel_size", "momentum", "weight_decay",
             "lr_drops", "random_labels", "size", "depths", "protocol", "keep_last_batch",
             "warmup_epochs"}
    assert not later & set(stored) and SweepConfig(**stored) == cfg
    expected = {f.name: getattr(cfg, f.name) for f in dataclasses.fields(cfg)
                if f.name not in later}
    assert config_hash(stored) == config_hash(json.loads(json.dumps(expected, default=str)))
    with_one = cfg.replace(schedule=((2, "lr", 1e-4),))
    assert with_one.to_dict()["schedule"] == ((2, "lr", 1e-4),)
    assert with_one.replace(schedule=()).to_dict() == stored


# --------------------------------------------------------------------------- sweep, CLI


SMALL = dict(dataset="digits", n_train=120, depth=2, width=8, epochs=3, seeds=[0, 1],
             knob="dropout", values=[0.1, 0.3], alphas=[0.0], measures=["trace_ratio"],
             batch_size=40, schedule=((1, "dropout", 0.0), (2, "lr", 3e-3),
                                      (3, "dropout", None)))


def test_sweep_with_a_schedule_resumes_identically(tmp_path, monkeypatch):
    """Interrupted after its first chunk, the sweep resumes from the stored configuration
    (round-tripped through JSON) and gives the uninterrupted result."""
    whole = sweep(**SMALL, models_per_chunk=2)
    assert json.loads(whole.attrs["config"])["schedule"] == [[1, "dropout", 0.0],
                                                            [2, "lr", 0.003],
                                                            [3, "dropout", None]]
    unscheduled = sweep(**{**SMALL, "schedule": ()}, models_per_chunk=2)
    assert not np.array_equal(whole["load_curve"], unscheduled["load_curve"])
    calls = []
    real = phase.train_chunk

    def stop_after_first(payload):
        if calls:
            raise RuntimeError("stopped")
        calls.append(payload)
        return real(payload)

    out = tmp_path / "s.nc"
    monkeypatch.setattr(phase, "train_chunk", stop_after_first)
    with pytest.raises(RuntimeError, match="stopped"):
        sweep(**SMALL, models_per_chunk=2, output=out)
    stored = json.loads((tmp_path / "s.nc.parts" / "sweep.json").read_text())["config"]
    # The store also records how the CPU trains hidden layers (not a sweep setting).
    assert stored.pop("cpu_hidden_layers") == "fused"
    cfg = SweepConfig(**stored)
    assert cfg == SweepConfig(**SMALL, models_per_chunk=2)
    resumed_calls = []

    def count(payload):
        resumed_calls.append(payload)
        return real(payload)

    monkeypatch.setattr(phase, "train_chunk", count)
    resumed = sweep(cfg, output=out)  # the same hash: chunk 0 is reused, not refused
    assert len(resumed_calls) == 1  # of two chunks
    xr.testing.assert_identical(resumed.drop_attrs(), whole.drop_attrs())
    xr.testing.assert_identical(results.load(out).drop_attrs(), whole.drop_attrs())


def test_parse_schedule():
    assert parse_schedule("dropout@1=0,dropout@51") == ((1, "dropout", 0.0),
                                                        (51, "dropout", None))
    assert parse_schedule(" lr@3=1e-3 , dropout@5=own ") == ((3, "lr", 1e-3),
                                                             (5, "dropout", None))
    for bad in ("dropout", "dropout@", "dropout@x", "dropout@5=", "@5=0.1", "dropout@5=x",
                "lr@2=0.1,,lr@3=0.2", "", " , "):
        with pytest.raises(ConfigError, match="--schedule must"):
            parse_schedule(bad, name="--schedule")


@pytest.mark.parametrize("text,fragment", [
    ("dropout@x", "--schedule must be comma-separated KNOB@EPOCH=VALUE entries"),
    ("dropout@1=0,", "--schedule must be comma-separated"),
    ("alpha@2=0.5", "schedule must be (epoch, knob, value) entries with knob one of dropout, "
                    "lr"),
    ("lr@5=0.1", "schedule must be (epoch, knob, value) entries with epoch an integer in "
                 "1..epochs (3)"),
    ("dropout@2=1.5", "schedule's dropout at epoch 2 must be in [0, 1)"),
    ("dropout@1=0", "schedule must be entries that leave the swept dropout's values"),
])
def test_cli_bad_schedule_is_one_line_before_training(tmp_path, capsys, text, fragment):
    out = tmp_path / "x.nc"
    assert main(["sweep", "--schedule", text, "--epochs", "3", "-o", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert fragment in err and err.startswith("dnnphase: error:") and "\n" not in err
    assert not out.exists() and not (tmp_path / "x.nc.parts").exists()


def test_cli_schedule_reaches_the_sweep(tmp_path):
    out = tmp_path / "dnn.nc"
    assert main(["sweep", "--knob", "dropout", "--values", "0.1,0.3", "--alpha", "0",
                 "--seeds", "2", "--dataset", "digits", "--n-train", "120", "--depth", "2",
                 "--width", "8", "--epochs", "3", "--batch-size", "40", "--measures",
                 "trace_ratio", "--schedule", "dropout@1=0,lr@2=3e-3,dropout@3",
                 "--models-per-chunk", "2", "--scheduler", "serial", "--quiet",
                 "-o", str(out)]) == 0
    ds = results.load(out, kind="dnnphase.sweep")
    direct = sweep(**SMALL, models_per_chunk=2)
    xr.testing.assert_identical(ds.drop_attrs(), direct.drop_attrs())
