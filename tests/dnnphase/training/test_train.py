"""Batched ensemble training (dnnphase.training.train) against one-model-at-a-time training.

The reference is the plain recipe: ``MLP`` built under ``torch.manual_seed(seed)``,
``torch.optim.Adam``/``SGD``, mean cross-entropy, and the model's own data order
``ModelStreams([seed]).epoch_order(epoch, N)`` (full batch: the data in its given
order). Everything in float64 (in float32 rounding alone makes long runs drift apart).

Tolerance note: a Linear bias followed by BatchNorm has an exactly zero gradient in
exact arithmetic; in floating point it receives rounding noise (~1e-17), which Adam
divides by sqrt(v) + eps, so those biases (and the running means that include them)
move by ~lr·1e-9 per step differently in any two summation orders. Over these short
runs that stays ~1e-10, well inside the 1e-8 asserted; every other parameter agrees
to ~1e-15.
"""

import dataclasses
import re

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from dnnphase.networks.architecture import Architecture
from dnnphase.networks.mlp import MLP, activation_scale
from dnnphase.networks.randomness import (
    LEVELS,
    DropoutMasks,
    ModelStreams,
    corrupt_batch,
    dropout_levels,
    dropout_span,
)
from dnnphase.training.loop import divergence, explosion_limit
from dnnphase.training.train import (
    EnsembleMLP,
    ModelKnobs,
    TrainConfig,
    resolve_device,
    train_ensemble,
    train_models,
)
from phasecore.checks import ConfigError
from tests.rounding import assert_close_across_kernels

N, D, C, DEPTH, WIDTH, EPOCHS = 128, 20, 4, 3, 16, 5
TOL = 1e-8
# The reduction lengths along a forward pass (input, hidden layers), for comparing a stack's
# batched matmuls with one model's: different kernels, equal only to rounding (tests/rounding).
NET = Architecture(depth=DEPTH, width=WIDTH)  # the network every test trains
FORWARD = [D] + [WIDTH] * DEPTH
NORMED = FORWARD + [N] * DEPTH  # BatchNorm adds a length-N batch mean per layer


pytestmark = pytest.mark.usefixtures("one_torch_thread")


@pytest.fixture(scope="module")
def data():
    g = torch.Generator().manual_seed(0)
    centres = 2.0 * torch.randn(C, D, generator=g, dtype=torch.float64)
    y = torch.randint(0, C, (N,), generator=g)
    x = centres[y] + 2.0 * torch.randn(N, D, generator=g, dtype=torch.float64)
    return x, y


def config(**kw):
    base = dict(epochs=EPOCHS, dtype=torch.float64, device="cpu", loss_threshold=0.0,
                rel_tol=0.0)
    base.update(kw)
    return TrainConfig(**base)


def reference(x, y, seed, *, alpha=0.0, lr=1e-2, batch_size=N, optimizer="adam",
              momentum=0.0, epochs=EPOCHS, norm="batchnorm", weight_init="default"):
    """One model, plain nn.Module + torch.optim, the documented data order."""
    torch.manual_seed(seed)
    model = MLP(D, C, depth=DEPTH, width=WIDTH, alpha=alpha, norm=norm,
                weight_init=weight_init).double()
    if optimizer == "adam":
        opt = torch.optim.Adam(model.parameters(), lr=lr)
    else:
        opt = torch.optim.SGD(model.parameters(), lr=lr, momentum=momentum)
    streams = ModelStreams([seed])
    n = x.shape[0]
    for epoch in range(1, epochs + 1):
        perm = torch.arange(n) if batch_size == n else streams.epoch_order(epoch, n)[0]
        for s in range(n // batch_size):
            idx = perm[s * batch_size : (s + 1) * batch_size]
            opt.zero_grad()
            F.cross_entropy(model(x[idx]), y[idx]).backward()
            opt.step()
    return model.eval()


def trace_ratio_curve(feats, y):
    """log(Tr Σw / Tr Σb) per layer of one model's features (list of (N, F))."""
    out = []
    for h in feats:
        mu = h.mean(0)
        sw = sb = 0.0
        for c in range(C):
            hc = h[y == c]
            sw += ((hc - hc.mean(0)) ** 2).sum()
            sb += len(hc) * ((hc.mean(0) - mu) ** 2).sum()
        out.append(torch.log(sw / sb))
    return torch.stack(out)


def assert_matches_reference(result, j, ref, x, y):
    """Model j of a TrainResult equals the reference MLP: parameters, BatchNorm
    statistics, eval-mode features and load curve, all to TOL."""
    mine = result.model.select([j]).to_models()[0]
    for (name, a), b in zip(ref.state_dict().items(), mine.state_dict().values(), strict=True):
        if a.dtype.is_floating_point:
            assert (a - b).abs().max().item() <= TOL, name
    with torch.no_grad():
        _, ref_feats = ref(x, return_features=True)
    feats = [f[0] for f in result.features([j])]
    assert len(feats) == DEPTH + 1
    for a, b in zip(ref_feats, feats, strict=True):
        assert a.shape == b.shape
        assert (a - b).abs().max().item() <= TOL
    diff = trace_ratio_curve(ref_feats, y) - trace_ratio_curve(feats, y)
    assert diff.abs().max().item() <= TOL
    with torch.no_grad():
        logits = ref(x)
    assert result.train_loss[j].item() == pytest.approx(F.cross_entropy(logits, y).item(),
                                                        abs=TOL)
    acc = (logits.argmax(1) == y).double().mean().item()
    assert result.train_accuracy[j].item() == pytest.approx(acc, abs=1e-12)


# --------------------------------------------------------------------------- model


def test_mlp_features_and_seeded_init(data):
    x, _ = data
    ens = EnsembleMLP.init(3, D, C, seeds=[5, 6, 7], depth=DEPTH, width=WIDTH,
                           alpha=[0.0, 0.5, 1.0], dtype=torch.float64)
    assert ens.weights[0].shape == (3, D, WIDTH) and ens.biases[0].shape == (3, 1, WIDTH)
    assert ens.weights[-1].shape == (3, WIDTH, C)
    refs = []
    for j, seed in enumerate([5, 6, 7]):
        torch.manual_seed(seed)  # PyTorch's default init of the reference network
        ref = MLP(D, C, depth=DEPTH, width=WIDTH, alpha=[0.0, 0.5, 1.0][j]).double()
        # Built directly in the stacked tensors, yet every weight is bitwise the MLP's.
        for name, value in ens.to_models()[j].state_dict().items():
            assert torch.equal(value, ref.state_dict()[name]), name
        refs.append(ref)
    state = torch.get_rng_state()
    no_bias = EnsembleMLP.init(1, D, C, seeds=[9], depth=DEPTH, width=WIDTH, bias=False,
                               norm="none")
    assert torch.equal(state, torch.get_rng_state())  # the global generator is untouched
    torch.manual_seed(9)
    ref = MLP(D, C, depth=DEPTH, width=WIDTH, bias=False, norm="none")
    for name, value in no_bias.to_models()[0].state_dict().items():
        assert torch.equal(value, ref.state_dict()[name]), name
    for mode in ("eval", "train", "eval"):  # train mode updates the running statistics
        ens.train(mode == "train")
        with torch.no_grad():
            e_logits, e_feats = ens(x, return_features=True)  # (M, N, C), [(N, M, F)]
        for j, ref in enumerate(refs):
            ref.train(mode == "train")
            with torch.no_grad():
                logits, feats = ref(x, return_features=True)
            assert_close_across_kernels(logits, e_logits[j], torch.float64, NORMED)
            for a, b in zip(feats, e_feats, strict=True):
                assert_close_across_kernels(a, b[:, j], torch.float64, NORMED)
    # h_0 is the input after the input BatchNorm; h_l is taken before dropout.
    mlp = MLP(D, C, depth=DEPTH, width=WIDTH, dropout=0.5).double().train()
    _, feats = mlp(x, return_features=True)
    assert torch.allclose(feats[0], mlp.input_bn(x))
    assert (feats[1] != 0).float().mean() > 0.3  # no dropout zeros beyond ReLU's
    assert EnsembleMLP.from_models(ens.to_models()).state_dict().keys() == ens.state_dict().keys()


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
@pytest.mark.parametrize("weight_init", ["default", "orthogonal"])
def test_scale_stack_equals_single_models(data, weight_init, dtype):
    """norm="scale" (Eq. 1's constant, per-model c(α)): the stacked models are the MLPs —
    the same weights bit for bit, the same outputs to rounding (a batched matmul and a single
    one are different kernels) — in either dtype, mixed and uniform slopes, through to_models /
    from_models (the same kernels again: bit for bit)."""
    x = data[0].to(dtype)
    for alphas in ([0.0, 0.5, 1.0], [0.3, 0.3, 0.3]):
        ens = EnsembleMLP.init(3, D, C, seeds=[5, 6, 7], depth=DEPTH, width=WIDTH,
                               alpha=alphas, norm="scale", weight_init=weight_init,
                               dtype=dtype)
        assert not any("bn" in k or "running" in k for k in ens.state_dict())
        with torch.no_grad():
            e_logits, e_feats = ens(x, return_features=True)
        for j, seed in enumerate([5, 6, 7]):
            torch.manual_seed(seed)
            ref = MLP(D, C, depth=DEPTH, width=WIDTH, alpha=alphas[j], norm="scale",
                      weight_init=weight_init).to(dtype)
            assert ref.act_scale == activation_scale(alphas[j], weight_init)
            for name, value in ens.to_models()[j].state_dict().items():
                assert torch.equal(value, ref.state_dict()[name]), name
            with torch.no_grad():
                logits, feats = ref(x, return_features=True)
            assert_close_across_kernels(logits, e_logits[j], dtype, FORWARD)
            for a, b in zip(feats, e_feats, strict=True):
                assert_close_across_kernels(a, b[:, j], dtype, FORWARD)
        again = EnsembleMLP.from_models(ens.to_models(), dtype=dtype)
        assert again.norm == "scale" and again.weight_init == weight_init
        with torch.no_grad():
            assert torch.equal(again(x), e_logits)


def test_orthogonal_init(data):
    """weight_init="orthogonal": every Linear weight (semi-)orthogonal, biases zero, drawn
    from the model's seed (global generator untouched) exactly as an MLP built right
    after torch.manual_seed(seed); other seeds, other matrices."""
    old = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)  # draws in float64: orthonormal to 1e-12
    try:
        for d, width in ((D, WIDTH), (WIDTH, WIDTH), (40, WIDTH)):  # tall, square, wide
            state = torch.get_rng_state()
            ens = EnsembleMLP.init(2, d, C, seeds=[3, 4], depth=DEPTH, width=width,
                                   norm="none", weight_init="orthogonal")
            assert torch.equal(state, torch.get_rng_state())
            for j, seed in enumerate([3, 4]):
                torch.manual_seed(seed)
                ref = MLP(d, C, depth=DEPTH, width=width, norm="none",
                          weight_init="orthogonal")
                for name, value in ens.to_models()[j].state_dict().items():
                    assert torch.equal(value, ref.state_dict()[name]), name
                for lin in (*ref.linears, ref.out):
                    w = lin.weight.detach()  # (out, in)
                    gram = w.T @ w if w.shape[0] >= w.shape[1] else w @ w.T
                    assert (gram - torch.eye(len(gram))).abs().max() < 1e-12, w.shape
                    assert torch.equal(lin.bias, torch.zeros_like(lin.bias))
            for w in ens.weights:  # the two seeds' matrices differ
                assert (w[0] - w[1]).abs().max() > 0.1
        # The orthogonal draws replace the default ones: the first numbers after the seed.
        torch.manual_seed(8)
        ref = MLP(D, C, depth=1, width=WIDTH, bias=False, weight_init="orthogonal")
        torch.manual_seed(8)
        first = torch.nn.init.orthogonal_(torch.empty(WIDTH, D))
        assert torch.equal(ref.linears[0].weight.detach(), first)
    finally:
        torch.set_default_dtype(old)
    # "default" is nn.Linear's own initialisation, unchanged.
    torch.manual_seed(8)
    a = MLP(D, C, depth=DEPTH, width=WIDTH)
    torch.manual_seed(8)
    b = MLP(D, C, depth=DEPTH, width=WIDTH, weight_init="default")
    assert all(torch.equal(p, q) for p, q in zip(a.parameters(), b.parameters(), strict=True))


# --------------------------------------------------------------------------- exactness


@pytest.mark.parametrize("batch_size", [N, 16])
@pytest.mark.parametrize(("optimizer", "momentum"), [("adam", 0.0), ("sgd", 0.0), ("sgd", 0.9)])
def test_batched_equals_one_at_a_time(data, optimizer, momentum, batch_size):
    x, y = data
    seeds, alphas = [1, 2, 3], [0.0, 0.3, 1.0]  # mixed slopes: the per-model activation path
    lrs = [1e-2, 3e-3, 1e-2] if optimizer == "adam" else [0.1, 0.05, 0.1]  # two lr runs
    res = train_ensemble(x, y, x, y, seeds=seeds, alpha=alphas, lr=lrs, batch_size=batch_size,
                         network=NET, config=config(optimizer=optimizer, momentum=momentum))
    assert res.steps_run.tolist() == [EPOCHS * (N // batch_size)] * 3
    assert res.epochs_run.tolist() == [EPOCHS] * 3
    assert not res.diverged.any()
    for j in range(3):
        ref = reference(x, y, seeds[j], alpha=alphas[j], lr=lrs[j], batch_size=batch_size,
                        optimizer=optimizer, momentum=momentum)
        assert_matches_reference(res, j, ref, x, y)


@pytest.mark.parametrize(("norm", "weight_init", "optimizer"),
                         [("scale", "default", "adam"), ("none", "default", "adam"),
                          ("scale", "orthogonal", "sgd"), ("none", "orthogonal", "sgd")])
def test_scale_and_none_train_as_one_at_a_time(data, norm, weight_init, optimizer):
    """Without BatchNorm (Eq. 1's constant or nothing; default or orthogonal init) the
    stacked trainer reproduces each model trained alone, mixed slopes in one stack."""
    x, y = data
    seeds, alphas = [1, 2, 3], [0.0, 0.5, 1.0]
    lr = 1e-2 if optimizer == "adam" else 1e-3
    res = train_ensemble(x, y, x, y, seeds=seeds, alpha=alphas, lr=lr, batch_size=32,
                         network=Architecture(depth=DEPTH, width=WIDTH, norm=norm,
                                              weight_init=weight_init),
                         config=config(optimizer=optimizer))
    assert res.model.norm == norm and not res.diverged.any()
    for j in range(3):
        ref = reference(x, y, seeds[j], alpha=alphas[j], lr=lr, batch_size=32,
                        optimizer=optimizer, norm=norm, weight_init=weight_init)
        assert_matches_reference(res, j, ref, x, y)


def reference_noisy(x, y, seed, *, dropout, q, lr=1e-2, batch_size=16, epochs=3):
    """One model with dropout and label + data noise, its masks and noise drawn from its
    own streams exactly as documented in dnnphase.networks.randomness (step counter, offsets)."""
    torch.manual_seed(seed)
    model = MLP(D, C, depth=DEPTH, width=WIDTH).double().train()
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    streams = ModelStreams([seed])
    level = torch.tensor([float(dropout_levels([dropout])[0])], dtype=torch.float64)
    scale = LEVELS / (LEVELS - level)
    sigma = q * x.std(0, correction=0)[None, :]  # (1, d)
    step = 0
    for epoch in range(1, epochs + 1):
        perm = streams.epoch_order(epoch, N)[0]
        for s in range(N // batch_size):
            idx = perm[s * batch_size : (s + 1) * batch_size]
            key = streams.step_keys(torch.tensor([step]))[:, 0]
            masks = DropoutMasks(key, level, scale, batch_size, WIDTH)
            xb, yb = corrupt_batch(x[idx][:, None], y[idx][None], key,
                                   torch.tensor([q], dtype=torch.float64), sigma, C,
                                   dropout_span(DEPTH, batch_size, WIDTH))
            h = model.input_bn(xb[:, 0])
            for layer, (lin, bn) in enumerate(zip(model.linears, model.norms, strict=True)):
                h = model.act(bn(lin(h))) * masks(layer)[:, 0]
            opt.zero_grad()
            F.cross_entropy(model.out(h), yb[0]).backward()
            opt.step()
            step += 1
    return model.eval()


def test_dropout_and_noise_equal_one_at_a_time(data):
    """The reference draws its own masks and noise from the seed's streams: the stacked
    trainer reproduces it model by model (mixed p and q in one stack)."""
    x, y = data
    seeds, drops, qs = [1, 2, 3], [0.2, 0.0, 0.1], [0.0, 0.3, 0.2]
    res = train_ensemble(x, y, seeds=seeds, dropout=drops, label_noise=qs, batch_size=16,
                         lr=1e-2, network=NET, config=config(epochs=3))
    for j in range(3):
        ref = reference_noisy(x, y, seeds[j], dropout=drops[j], q=qs[j])
        assert_matches_reference(res, j, ref, x, y)


def test_batch_sizes_are_grouped(data):
    x, y = data
    seeds, sizes = [4, 5, 6, 7], [16, N, 32, 16]
    res = train_ensemble(x, y, seeds=seeds, batch_size=sizes, lr=1e-2, network=NET,
                         config=config())
    assert res.batch_size.tolist() == sizes
    assert res.steps_run.tolist() == [EPOCHS * (N // b) for b in sizes]
    for j, (seed, b) in enumerate(zip(seeds, sizes, strict=True)):
        assert_matches_reference(res, j, reference(x, y, seed, batch_size=b), x, y)


def test_from_models_start_and_stack_invariance(data):
    """Training from stacked MLPs equals the reference; splitting the stack
    (stack_size=1) changes nothing."""
    x, y = data
    models = []
    for s in (11, 12):
        torch.manual_seed(s)
        models.append(MLP(D, C, depth=DEPTH, width=WIDTH))
    start = EnsembleMLP.from_models(models, dtype=torch.float64)
    a = train_ensemble(x, y, seeds=[11, 12], model=start, batch_size=32, lr=1e-2,
                       config=config())
    b = train_ensemble(x, y, seeds=[11, 12], model=start, batch_size=32, lr=1e-2,
                       config=config(stack_size=1))
    for j in range(2):
        assert_matches_reference(a, j, reference(x, y, 11 + j, batch_size=32), x, y)
    for p, q in zip(a.model.state_dict().values(), b.model.state_dict().values(), strict=True):
        assert (p - q).abs().max() <= TOL


def test_stack_out_of_gpu_memory_is_split(data, monkeypatch):
    """A stack that runs out of (GPU) memory is trained in halves, same results."""
    from dnnphase.training import loop

    x, y = data
    kw = dict(seeds=[1, 2, 3, 4, 5], dropout=[0.0, 0.1, 0.2, 0.1, 0.0], batch_size=32,
              lr=1e-2, network=NET, config=config(epochs=2, fused=False))
    whole = train_ensemble(x, y, **kw)
    run, sizes = loop.TrainingStack.run, []

    def small_memory(self):
        sizes.append(len(self.ids))
        if len(self.ids) > 2:
            raise torch.cuda.OutOfMemoryError("CUDA out of memory (simulated)")
        return run(self)

    monkeypatch.setattr(loop.TrainingStack, "run", small_memory)
    split = train_ensemble(x, y, **kw)
    assert sizes == [5, 2, 3, 1, 2]
    for name, value in whole.model.state_dict().items():
        assert torch.equal(value, split.model.state_dict()[name]), name
    assert torch.equal(whole.loss_history, split.loss_history)


# --------------------------------------------------------------------------- divergence


def test_divergent_model_is_stopped_others_continue(data):
    x, y = data
    res = train_ensemble(x, y, x, y, seeds=[1, 2], lr=[1e6, 0.1], batch_size=16, network=NET,
                         config=config(optimizer="sgd"))
    assert res.diverged.tolist() == [True, False]
    assert res.stop_reason == ["diverged", "max_epochs"]
    assert res.diverged_reason[0] in ("nan", "inf", "exploded") and res.diverged_reason[1] == ""
    for k in ("train_loss", "train_accuracy", "test_accuracy"):
        assert torch.isnan(getattr(res, k)[0]) and torch.isfinite(getattr(res, k)[1])
    assert res.steps_run[0] < res.steps_run[1] == EPOCHS * (N // 16)
    assert torch.isnan(res.loss_history[0, res.epochs_run[0] - 1 :]).all()
    # The healthy model is untouched by its neighbour's blow-up.
    ref = reference(x, y, 2, lr=0.1, batch_size=16, optimizer="sgd")
    assert_matches_reference(res, 1, ref, x, y)


def test_exploding_loss_is_diverged_not_a_result(data):
    """Adam at lr 1e6 keeps a finite but huge loss (~1e13 on MNIST): flagged, with why."""
    x, y = data
    res = train_ensemble(x, y, x, y, seeds=[1, 2], lr=[1e6, 1e-2], network=NET,
                         config=config())
    assert res.diverged.tolist() == [True, False]
    assert res.diverged_reason == ["exploded", ""]
    assert res.steps_run[0].item() == 1  # the first update already blows the loss up
    assert torch.isnan(res.test_accuracy[0]) and torch.isfinite(res.test_accuracy[1])
    # The rule: NaN, ±inf, or above explode_factor · ln C (off with 0); 1e3 · ln 4 ≈ 1386.
    losses = torch.tensor([float("nan"), float("inf"), -float("inf"), 1.4e3, 1.0, 1.3e3])
    limit = explosion_limit(C, 1e3)
    assert limit == pytest.approx(1e3 * np.log(C))
    assert divergence(losses, limit).tolist() == [1, 2, 2, 3, 0, 0]
    assert explosion_limit(C, 0.0) == float("inf")


# --------------------------------------------------------------------------- noise knobs


def test_label_noise_zero_is_clean_and_positive_changes_trajectory(data):
    x, y = data
    kw = dict(seeds=[3, 3], batch_size=16, lr=1e-2, network=NET, config=config())
    clean = train_ensemble(x, y, **kw)
    noisy = train_ensemble(x, y, label_noise=[0.0, 0.3], **kw)
    p_clean = [p[0] for p in clean.model.parameters()]
    p_zero = [p[0] for p in noisy.model.parameters()]  # q = 0 beside a q > 0 model
    p_noisy = [p[1] for p in noisy.model.parameters()]
    assert all(torch.equal(a, b) for a, b in zip(p_clean, p_zero, strict=True))
    assert max((a - b).abs().max().item() for a, b in zip(p_clean, p_noisy, strict=True)) > 1e-3
    assert not torch.equal(noisy.loss_history[0], noisy.loss_history[1])


def test_dropout_masks_per_model(data):
    x, _ = data
    torch.manual_seed(0)
    mlp = MLP(D, C, depth=DEPTH, width=WIDTH)
    ens = EnsembleMLP.from_models([mlp] * 3, dtype=torch.float64).train()  # no dropout
    drop = EnsembleMLP(3, D, C, DEPTH, WIDTH, dropout=[0.5, 0.5, 0.0], dtype=torch.float64)
    drop.load_state_dict(ens.state_dict())
    drop.train()
    keys = ModelStreams([1, 2, 3]).step_keys(torch.tensor([0]))[:, 0]
    masks = DropoutMasks(keys, drop.drop_level, drop.drop_scale, N, WIDTH)
    scale = masks(0)  # (B, M, F)
    assert scale.shape == (N, 3, WIDTH)
    # p = 0.5: half the units dropped, the rest scaled by 2; p = 0: no mask at all.
    for j in (0, 1):
        assert (scale[:, j] == 0).double().mean().item() == pytest.approx(0.5, abs=0.03)
        assert set(scale[:, j].unique().tolist()) == {0.0, 2.0}
    assert torch.equal(scale[:, 2], torch.ones_like(scale[:, 2]))
    assert not torch.equal(scale[:, 0], scale[:, 1])  # masks differ across models
    assert not torch.equal(masks(0), masks(1))  # and across layers
    with torch.no_grad():
        out = drop(x, dropout=masks)
        ref = ens(x)  # same weights, no dropout, training-mode BatchNorm
    assert not torch.equal(out[0], out[1])
    assert torch.equal(out[2], ref[2])


def test_dropout_model_independent_of_stack_mates(data):
    """Per-model random streams: a dropout model trained beside others equals the
    same model trained alone."""
    x, y = data
    kw = dict(batch_size=32, lr=1e-2, network=NET, config=config())
    together = train_ensemble(x, y, seeds=[1, 2, 3], dropout=[0.2, 0.1, 0.0],
                              label_noise=[0.1, 0.0, 0.2], **kw)
    alone = train_ensemble(x, y, seeds=[2], dropout=0.1, **kw)
    for p, q in zip(together.model.select([1]).parameters(), alone.model.parameters(),
                    strict=True):
        assert (p - q).abs().max() <= TOL
    # With dropout and noise on, model 0 is not model 1's trajectory.
    assert not torch.equal(together.loss_history[0], together.loss_history[1])


def test_trusted_knobs_train_exactly_as_checked_arguments(data):
    """train_models (a sweep's entry: its knobs checked by the sweep's configuration) is
    train_ensemble without the second check: the same models, bit for bit, with a batch
    size of None meaning the configuration's."""
    x, y = data
    kw = dict(network=NET, config=config(batch_size=32, dtype=torch.float32))
    checked = train_ensemble(x, y, seeds=[3, 4], alpha=[0.0, 0.5], dropout=0.1, lr=1e-2,
                             label_noise=[0.0, 0.2], batch_size=[None, 64], **kw)
    knobs = ModelKnobs(seeds=[3, 4], alpha=[0.0, 0.5], dropout=[0.1, 0.1], lr=[1e-2, 1e-2],
                       label_noise=[0.0, 0.2], batch_size=[None, 64])
    trusted = train_models(x, y, knobs=knobs, config=kw["config"], network=NET)
    assert trusted.batch_size.tolist() == checked.batch_size.tolist() == [32, 64]
    for p, q in zip(checked.model.parameters(), trusted.model.parameters(), strict=True):
        assert torch.equal(p, q)
    assert torch.equal(checked.loss_history, trusted.loss_history)


#: Stackings compared bit for bit: 12 models in one stack (above 8, where a native kernel's
#: choice could change with the channel count), in stacks of 5, 5 and 2, and each alone.
STACKINGS = (None, 5, 1)
#: Widths 20, 13 and 16 put a model's units at every position of a vector block or tail.
NET_ODD = Architecture(depth=DEPTH, width=(20, 13, 16))
STACKED = dict(seeds=list(range(1, 13)), alpha=[0.0, 0.2, 0.2, 0.6, 1.0, 0.0] * 2,
               dropout=[0.0, 0.1, 0.2, 0.1, 0.0, 0.3] * 2,
               label_noise=[0.0, 0.1, 0.0, 0.2, 0.1, 0.0] * 2, lr=1e-2)


def layer_means(feats):
    """A record per model: each layer's mean feature, ``(m, L + 1)``."""
    return torch.stack([f.mean((1, 2)) for f in feats], 1)


def assert_stacking_invariant(x, y, network, image_shape=None, knobs=None, **settings):
    """Every stacking of :data:`STACKINGS` gives bitwise the same parameters, running
    statistics, loss histories, eval-mode records (every 2 epochs, training and test set)
    and final metrics: 24 samples a batch (128 is no multiple: a partial batch is dropped),
    lr / 10 half-way, float32 unless ``settings`` say otherwise."""
    xt, yt = x[::2] + 0.5, y[::2]  # a test set of its own values
    settings = {"dtype": torch.float32, "batch_size": 24, "lr_drops": (0.5,),
                "record_every": 2, **settings}
    runs = [train_ensemble(x.to(settings["dtype"]), y, xt.to(settings["dtype"]), yt,
                           **(knobs or STACKED), network=network, image_shape=image_shape,
                           record_fn=layer_means, test_record_fn=layer_means,
                           config=config(stack_size=k, **settings))
            for k in STACKINGS]
    ref = runs[0]
    for other in runs[1:]:
        state = other.model.state_dict()
        for k, v in ref.model.state_dict().items():
            assert torch.equal(v, state[k]), k
        for name in ("loss_history", "train_loss", "train_accuracy", "test_accuracy"):
            assert torch.equal(getattr(ref, name), getattr(other, name)), name
        for (e, rec), (e2, rec2) in zip(ref.snapshots + ref.test_snapshots,
                                        other.snapshots + other.test_snapshots, strict=True):
            assert e == e2 and torch.equal(rec, rec2), e


@pytest.mark.parametrize("optimizer", ["adam", "adam-foreach", "sgd", "sgd-momentum"])
def test_float32_result_does_not_depend_on_stacking(data, optimizer):
    """Bitwise, with BatchNorm: mixed slopes, dropout and noise, 12 models in stacks of 12,
    5 and 1, with every optimizer the experiments use: fused Adam (the default, handed each
    model's slice as a tensor of its own), foreach Adam, plain SGD, and SGD with momentum
    and weight decay (He & Su's and Galanti et al.'s)."""
    x, y = data
    kind = optimizer.split("-")[0]
    settings = dict(optimizer=kind, fused=False if optimizer == "adam-foreach" else None,
                    momentum=0.9 if optimizer == "sgd-momentum" else 0.0,
                    weight_decay=5e-4 if optimizer == "sgd-momentum" else 0.0)
    assert_stacking_invariant(x, y, NET_ODD, **settings)


@pytest.mark.parametrize("case", ["scale", "none", "linear", "cnn", "cnn-none", "float64"])
def test_result_does_not_depend_on_stacking_with_any_network(data, case):
    """Bitwise, without BatchNorm (whose hidden biases get a gradient: summed per model, as
    the model alone sums it), for the linear network (norm "none", orthogonal), the CNN
    (each model's conv and BatchNorm are its own calls on a CPU; with BatchNorm and a
    dropout schedule, and without BatchNorm on two input channels), and in float64."""
    x, y = data
    knobs, shape, settings = None, None, {}
    network = {"scale": Architecture(depth=DEPTH, width=(20, 13, 16), norm="scale"),
               "none": Architecture(depth=DEPTH, width=(20, 13, 16), norm="none"),
               "linear": Architecture(arch="linear", depth=DEPTH, width=(20, 13, 16),
                                      norm="none", weight_init="orthogonal"),
               "cnn": Architecture(arch="cnn", depth=2, channels=3),
               "cnn-none": Architecture(arch="cnn", depth=2, channels=3, norm="none"),
               "float64": NET_ODD}[case]
    if case == "linear":
        knobs = {**STACKED, "alpha": 1.0}
    if case.startswith("cnn"):
        # 1 x 4 x 4 images (the first 16 features), or two channels of 4 x 4
        x, shape = (x[:, :16], (1, 4, 4)) if case == "cnn" else \
            (torch.cat([x[:, :16], x[:, 4:]], 1), (2, 4, 4))
        if case == "cnn":
            settings = dict(schedule=((1, "dropout", 0.0), (3, "dropout", None)),
                            lr_drops=())
    if case == "float64":
        settings = dict(dtype=torch.float64, optimizer="sgd", momentum=0.9)
    assert_stacking_invariant(x, y, network, shape, knobs, **settings)


def test_result_does_not_depend_on_thread_count(data):
    """Bitwise the same model in float32 and float64 with 1 and 2 torch threads (the
    native CPU BatchNorm splits the batch across threads, so the trainer pins one
    intra-op thread and restores the caller's setting)."""
    x, y = data
    xs = torch.cat([x] * 4)[:400]  # enough samples for torch to split reductions
    ys = torch.cat([y] * 4)[:400]
    kw = dict(seeds=[1, 2], alpha=[0.0, 0.5], dropout=[0.1, 0.0], label_noise=[0.0, 0.2],
              batch_size=[400, 100], lr=1e-2, network=Architecture(depth=2, width=64))
    for dtype in (torch.float32, torch.float64):
        runs = []
        for threads in (1, 2):
            torch.set_num_threads(threads)
            try:
                runs.append(train_ensemble(xs.to(dtype), ys, **kw,
                                           config=config(epochs=2, dtype=dtype, fused=False)))
                assert torch.get_num_threads() == threads
            finally:
                torch.set_num_threads(1)
        one, two = (r.model.state_dict() for r in runs)
        assert all(torch.equal(one[k], two[k]) for k in one), dtype
        assert torch.equal(runs[0].loss_history, runs[1].loss_history)


# --------------------------------------------------------------------------- stopping, records


def test_early_stopping_rules(data):
    x, y = data
    # Loss threshold: the fast model drops below it, the slow one never does.
    res = train_ensemble(x, y, seeds=[1, 2], lr=[5e-2, 1e-5], batch_size=16, network=NET,
                         config=config(epochs=30, loss_threshold=0.3))
    assert res.stop_reason == ["loss_threshold", "max_epochs"]
    e = res.epochs_run[0].item()
    assert e < 30 and res.epochs_run[1].item() == 30
    assert res.loss_history[0, e - 1] < 0.3 <= res.loss_history[0, : e - 1].min()
    assert torch.isnan(res.loss_history[0, e:]).all()
    assert res.steps_run[0].item() == e * (N // 16)
    # The model left in the stack carries on exactly (shared Adam step count).
    ref = reference(x, y, 2, lr=1e-5, batch_size=16, epochs=30)
    assert_matches_reference(res, 1, ref, x, y)
    # Plateau: window means of 2 epochs compared with a loose tolerance.
    res = train_ensemble(x, y, seeds=[1], lr=1e-5, network=NET,
                         config=config(epochs=30, patience=2, rel_tol=0.5))
    assert res.stop_reason == ["plateau"] and res.epochs_run.item() == 4


def test_snapshots_every_k_epochs(data):
    x, y = data

    def last_layer_mean(feats):  # (m, N, F) → (m,)
        return feats[-1].mean((1, 2))

    start = EnsembleMLP.init(2, D, C, seeds=[1, 2], depth=DEPTH, width=WIDTH,
                             dtype=torch.float64)
    res = train_ensemble(x, y, seeds=[1, 2], model=start, lr=[1e-2, 1e-2], batch_size=[N, 32],
                         config=config(epochs=5, record_every=2), record_fn=last_layer_mean)
    assert [e for e, _ in res.snapshots] == [0, 2, 4]
    first = res.snapshots[0][1]
    assert first.shape == (2,)
    assert torch.allclose(first, last_layer_mean(start.features(x)))
    assert not torch.allclose(res.snapshots[1][1], first)
    # Without record_fn the features themselves: L+1 tensors (M, N, F).
    res = train_ensemble(x, y, seeds=[1], network=NET,
                         config=config(epochs=2, record_every=1))
    assert [e for e, _ in res.snapshots] == [0, 1, 2]
    assert [tuple(f.shape) for f in res.snapshots[2][1]] == [(1, N, D)] + [(1, N, WIDTH)] * DEPTH
    final = res.features()
    assert all(torch.equal(a, b) for a, b in zip(res.snapshots[2][1], final, strict=True))


def test_config_and_input_validation(data):
    x, y = data
    with pytest.raises(ValueError, match="optimizer"):
        TrainConfig(optimizer="rmsprop")
    with pytest.raises(ValueError, match="epochs"):
        TrainConfig(epochs=0)
    with pytest.raises(ValueError, match="batch_size"):
        train_ensemble(x, y, seeds=[1], batch_size=N + 1, config=config())
    with pytest.raises(ValueError, match="alpha"):
        train_ensemble(x, y, seeds=[1], alpha=1.5, config=config())
    with pytest.raises(ConfigError, match=re.escape("dropout must be in [0, 1) (got [0.1, 1.0])")):
        train_ensemble(x, y, seeds=[1, 2], dropout=[0.1, 1.0], config=config())
    with pytest.raises(ConfigError, match=re.escape("label_noise must be in [0, 1]")):
        train_ensemble(x, y, seeds=[1], label_noise=1.5, config=config())
    with pytest.raises(ConfigError, match=re.escape("dropout must be in [0, 1) (got 1.0)")):
        MLP(D, C, dropout=1.0)
    with pytest.raises(AssertionError, match="dropout"):  # the stack trusts its caller
        EnsembleMLP(1, D, C, dropout=1.0)
    # norm / weight_init: ConfigError naming the parameter and its choices, before any work
    # (a bad x_train would fail later, in the data's transfer)
    for bad in (dict(norm=False), dict(norm="batch"), dict(weight_init="he")):
        name = next(iter(bad))
        with pytest.raises(ConfigError, match=f"{name} must be one of"):
            train_ensemble(None, y, seeds=[1], config=config(), network=Architecture(**bad))
        with pytest.raises(ConfigError, match=f"{name} must be one of"):
            train_models(None, y, knobs=None, config=config(), network=Architecture(**bad))
    # network: an Architecture (or None), for both entry points
    with pytest.raises(ConfigError, match="network must be an Architecture"):
        train_ensemble(None, y, seeds=[1], config=config(), network="cnn")
    with pytest.raises(ConfigError, match="network must be an Architecture"):
        train_models(None, y, knobs=None, config=config(), network="cnn")
    # With a starting model, its own architecture: norm is checked, not applied.
    start = EnsembleMLP.init(1, D, C, seeds=[1], depth=1, width=4, norm="scale",
                             dtype=torch.float64)
    res = train_ensemble(x, y, seeds=[1], config=config(epochs=1), model=start)
    assert res.model.norm == "scale"
    with pytest.raises(dataclasses.FrozenInstanceError):
        config().lr = 1.0
    with pytest.raises(ConfigError, match="stack_size"):
        TrainConfig(stack_size=0)
    with pytest.raises(ConfigError, match="explode_factor"):
        TrainConfig(explode_factor=-1)
    with pytest.raises(ConfigError, match="momentum"):
        TrainConfig(optimizer="sgd", nesterov=True)
    assert resolve_device("auto").type == ("cuda" if torch.cuda.is_available() else "cpu")
    assert TrainConfig(dtype="float64").dtype == torch.float64
    assert np.isclose(EnsembleMLP(1, D, C, dropout=0.1).drop_scale.item(), 1 / 0.9, atol=1e-4)
