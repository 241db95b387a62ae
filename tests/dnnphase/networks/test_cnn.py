"""The stacked CNN (dnnphase.networks.cnn.EnsembleCNN) against single CNNs
(dnnphase.networks.cnn.CNN).

Everything in float64 on small images. A conv bias feeding BatchNorm has an exactly zero
gradient; the stack uses that zero while a single CNN gets rounding noise (~1e-17), which
Adam turns into steps of ~lr·1e-9: inside the 1e-8 asserted after a few steps.
"""

import pytest
import torch
import torch.nn.functional as F

from dnnphase.networks.cnn import CNN, NORMS, EnsembleCNN
from dnnphase.networks.randomness import DropoutMasks, ModelStreams
from dnnphase.training.optim import StackedOptimizer
from dnnphase.training.train import TrainConfig, train_ensemble
from phasecore.checks import ConfigError

SHAPE, N, C, DEPTH, CH = (2, 6, 6), 32, 3, 3, 4
D, WIDTH = 2 * 6 * 6, CH * 6 * 6
SEEDS, ALPHAS = [5, 6, 7], [0.0, 0.3, 1.0]  # mixed slopes: the per-model activation path
TOL = 1e-12

pytestmark = pytest.mark.usefixtures("one_torch_thread")


@pytest.fixture(scope="module")
def data():
    g = torch.Generator().manual_seed(0)
    centres = torch.randn(C, D, generator=g, dtype=torch.float64)
    y = torch.randint(0, C, (N,), generator=g)
    x = centres[y] + torch.randn(N, D, generator=g, dtype=torch.float64)
    return x, y


def seeded_cnn(seed, **kw):
    """The reference: a CNN built right after torch.manual_seed(seed), in float64."""
    arch = dict(depth=DEPTH, channels=CH)
    arch.update(kw)
    torch.manual_seed(seed)
    return CNN(SHAPE, C, **arch).double()


def stacked(**kw):
    arch = dict(seeds=SEEDS, depth=DEPTH, channels=CH, alpha=ALPHAS, dtype=torch.float64)
    arch.update(kw)
    return EnsembleCNN.init(len(arch["seeds"]), SHAPE, C, **arch)


def max_diff(a, b):
    return (a - b).abs().max().item()


def single_grads(model, names):
    """A single CNN's gradients in the stacked layout: stacked parameter name → tensor."""
    out = {}
    for name in names:
        kind, i = name.split(".")
        i = int(i)
        if kind in ("weights", "biases"):
            mod = model.convs[i] if i < model.depth else model.out
            g = (mod.weight if kind == "weights" else mod.bias).grad
            if i == model.depth:  # the output map is stored (width, C), its bias (1, C)
                g = g.T if kind == "weights" else g[None]
        else:
            bn = ([model.input_bn] + list(model.norms))[i]
            g = (bn.weight if kind == "bn_weights" else bn.bias).grad
        out[name] = g
    return out


# --------------------------------------------------------------------------- the model


@pytest.mark.parametrize("kw", [{}, dict(bias=False, norm="none"), dict(kernel_size=1),
                                dict(kernel_size=5, channels=3)])
def test_init_equals_seeded_cnn(kw):
    state = torch.get_rng_state()
    ens = stacked(**kw)
    assert torch.equal(state, torch.get_rng_state())  # the global generator is untouched
    k = kw.get("kernel_size", 3)
    ch = kw.get("channels", CH)
    assert ens.weights[0].shape == (3, ch, SHAPE[0], k, k)
    assert ens.weights[1].shape == (3, ch, ch, k, k)
    assert ens.weights[DEPTH].shape == (3, ch * 36, C)
    for j, seed in enumerate(SEEDS):
        ref = seeded_cnn(seed, alpha=ALPHAS[j], **kw)
        mine = ens.to_models()[j]
        assert ref.state_dict().keys() == mine.state_dict().keys()
        for name, value in mine.state_dict().items():
            assert torch.equal(value, ref.state_dict()[name]), name
        for i in range(DEPTH):  # directly in the stacked tensors, not only via to_models
            assert torch.equal(ens.weights[i][j], ref.convs[i].weight.detach())
        assert torch.equal(ens.weights[DEPTH][j], ref.out.weight.detach().T)
    # Different seeds give different models.
    assert not torch.equal(ens.weights[0][0], ens.weights[0][1])


def test_trainer_facing_attributes():
    ens = stacked(dropout=[0.0, 0.25, 0.0])
    assert (ens.n_models, ens.in_features, ens.n_classes, ens.depth, ens.width) == \
        (3, D, C, DEPTH, WIDTH)
    assert ens.alphas == tuple(ALPHAS) and ens.dropouts == (0.0, 0.25, 0.0)
    assert ens.has_dropout and not stacked().has_dropout
    assert ens.alpha.tolist() == ALPHAS
    assert ens.drop_level.tolist() == [0.0, 16384.0, 0.0]
    assert ens.drop_scale.tolist() == [1.0, 4 / 3, 1.0]
    # The per-model constants are not state: a state dict loads into other hyper-parameters.
    assert not {"alpha", "drop_level", "drop_scale"} & set(ens.state_dict())
    assert ens.norm == "batchnorm" and ens.bias and ens.kernel_size == 3 and ens.channels == CH
    # Every parameter has the model dimension first (the optimizer slices it).
    assert all(p.shape[0] == 3 for p in ens.parameters())
    assert all(b.shape[0] == 3 for b in ens.buffers())


@pytest.mark.parametrize("norm", NORMS)
def test_forward_and_features_equal_single_models(data, norm):
    x, _ = data
    ens = stacked(norm=norm)
    refs = [seeded_cnn(s, alpha=a, norm=norm) for s, a in zip(SEEDS, ALPHAS, strict=True)]
    x_own = torch.stack([x, x.flip(0), 2 * x], dim=1)  # (B, M, d): a batch per model
    for mode in ("eval", "train", "eval"):  # train mode updates the running statistics
        ens.train(mode == "train")
        with torch.no_grad():
            logits, feats = ens(x, return_features=True)  # (M, N, C), [(N, M, F)]
            own_logits = ens(x_own) if mode == "eval" else None
        assert logits.shape == (3, N, C)
        assert [f.shape for f in feats] == [(N, 3, D)] + [(N, 3, WIDTH)] * DEPTH
        for j, ref in enumerate(refs):
            ref.train(mode == "train")
            with torch.no_grad():
                r_logits, r_feats = ref(x, return_features=True)
            assert max_diff(logits[j], r_logits) <= TOL
            for a, b in zip(feats, r_feats, strict=True):
                assert max_diff(a[:, j], b) <= TOL
            if own_logits is not None:
                with torch.no_grad():
                    assert max_diff(own_logits[j], ref(x_own[:, j])) <= TOL
    for j, ref in enumerate(refs):  # running statistics after the training-mode pass
        for name, value in ens.to_models()[j].state_dict().items():
            if value.dtype.is_floating_point:  # not num_batches_tracked (unused, not stacked)
                assert max_diff(value, ref.state_dict()[name]) <= TOL, name
    # h_0 is the normalised input, h_l is taken after the upsampling: 2 x 2 blocks are equal.
    ref = refs[0].eval()
    with torch.no_grad():
        _, r_feats = ref(x.view(N, *SHAPE), return_features=True)  # image input too
        assert torch.equal(r_feats[0], ref.input_bn(x.view(N, *SHAPE)).view(N, D))
        img = r_feats[1].view(N, CH, 6, 6)
        assert torch.equal(img[..., 0::2, 0::2], img[..., 1::2, 1::2])
    if norm == "none":
        assert len(ens.bn_weights) == 0 and len(list(ens.buffers())) == 3  # alpha, drop_*
        assert not any(isinstance(mod, torch.nn.BatchNorm2d) for mod in ref.modules())


@pytest.mark.parametrize(("norm", "k"), [("batchnorm", 3), ("none", 3), ("batchnorm", 1)])
def test_gradients_equal(data, norm, k):
    x, y = data
    ens = stacked(norm=norm, kernel_size=k).train()
    refs = [seeded_cnn(s, alpha=a, norm=norm, kernel_size=k).train()
            for s, a in zip(SEEDS, ALPHAS, strict=True)]
    logits = ens(x)
    losses = torch.stack([F.cross_entropy(logits[j], y) for j in range(3)])
    losses.sum().backward()  # the models share nothing: per-model gradients
    # Gauge parameters (exactly zero gradient): conv biases feeding BatchNorm, and with a
    # 1x1 kernel (no padding) also the input BatchNorm's shift.
    gauge = {f"biases.{i}" for i in range(DEPTH)} if norm == "batchnorm" else set()
    if norm == "batchnorm" and k == 1:
        gauge.add("bn_biases.0")
    for j, ref in enumerate(refs):
        F.cross_entropy(ref(x), y).backward()
        grads = single_grads(ref, [n for n, _ in ens.named_parameters()])
        for name, p in ens.named_parameters():
            if name in gauge:  # the stack uses the exact zero, not rounding noise
                assert p.grad is None, name
                assert grads[name].abs().max() <= TOL, name
            else:
                assert p.grad is not None, name
                assert max_diff(p.grad[j], grads[name]) <= TOL, name
    for name, p in ens.named_parameters():  # real gradients were compared (in the
        # linear model, α = 1, a 1x1 kernel makes every shift but the last a gauge too)
        assert name in gauge or p.grad.abs().max() > 1e-6, name


def test_adam_steps_equal_single_models(data):
    """A few full-batch steps of the trainer's optimizer (per-model learning rates, two
    lr runs) equal each CNN trained alone with torch.optim.Adam."""
    x, y = data
    lrs, steps = [1e-2, 1e-2, 3e-3], 5
    ens = stacked().train()
    opt = StackedOptimizer(list(ens.parameters()), lrs)
    for _ in range(steps):
        logits = ens(x)
        ens.zero_grad(set_to_none=True)
        torch.stack([F.cross_entropy(logits[j], y) for j in range(3)]).sum().backward()
        opt.step(list(ens.parameters()))
    ens.eval()
    feats = ens.features(x)
    moved = 0.0
    for j, (seed, lr) in enumerate(zip(SEEDS, lrs, strict=True)):
        ref = seeded_cnn(seed, alpha=ALPHAS[j]).train()
        start = {k: v.clone() for k, v in ref.state_dict().items()}
        ref_opt = torch.optim.Adam(ref.parameters(), lr=lr)
        for _ in range(steps):
            ref_opt.zero_grad()
            F.cross_entropy(ref(x), y).backward()
            ref_opt.step()
        ref.eval()
        for name, value in ens.to_models()[j].state_dict().items():
            ref_value = ref.state_dict()[name]
            if value.dtype.is_floating_point:
                assert max_diff(value, ref_value) <= 1e-8, name
                moved = max(moved, max_diff(ref_value, start[name]))
        with torch.no_grad():
            _, r_feats = ref(x, return_features=True)
        for a, b in zip(feats, r_feats, strict=True):
            assert max_diff(a[j], b) <= 1e-8
    assert moved > 1e-3  # training did move the parameters


def test_trains_unchanged_through_train_ensemble(data):
    """train_ensemble started from an EnsembleCNN (its ``model=`` argument) trains it as
    the MLP: mini-batches in each model's own order, dropout and label + data noise from
    its own streams; model 1 (p = 0, q = 0) equals a single CNN trained alone."""
    x, y = data
    seeds = [3, 4, 5]
    start = EnsembleCNN.init(3, SHAPE, C, seeds=seeds, depth=2, channels=3,
                             dropout=[0.2, 0.0, 0.1], dtype=torch.float64)
    cfg = TrainConfig(epochs=2, batch_size=8, lr=1e-2, dtype=torch.float64, device="cpu",
                      loss_threshold=0.0, rel_tol=0.0)
    res = train_ensemble(x, y, seeds=seeds, label_noise=[0.2, 0.0, 0.0], config=cfg,
                         model=start)
    assert isinstance(res.model, EnsembleCNN) and res.steps_run.tolist() == [8, 8, 8]
    torch.manual_seed(4)
    ref = CNN(SHAPE, C, depth=2, channels=3).double().train()
    opt = torch.optim.Adam(ref.parameters(), lr=1e-2)
    streams = ModelStreams([4])
    for epoch in (1, 2):
        perm = streams.epoch_order(epoch, N)[0]
        for s in range(N // 8):
            idx = perm[s * 8 : (s + 1) * 8]
            opt.zero_grad()
            F.cross_entropy(ref(x[idx]), y[idx]).backward()
            opt.step()
    mine = res.model.select([1]).to_models()[0]
    for name, value in ref.state_dict().items():
        if value.dtype.is_floating_point:
            assert max_diff(value, mine.state_dict()[name]) <= 1e-8, name
    feats = res.features([0, 1, 2])
    assert [f.shape for f in feats] == [(3, N, D)] + [(3, N, 3 * 36)] * 2
    assert max_diff(feats[-1][0], feats[-1][2]) > 1e-3  # the models are not one model


def test_from_models_to_models_round_trip(data):
    x, _ = data
    models = [seeded_cnn(s, alpha=a) for s, a in zip(SEEDS, ALPHAS, strict=True)]
    g = torch.Generator().manual_seed(1)
    with torch.no_grad():  # non-default BatchNorm parameters and statistics
        for mdl in models:
            for bn in [mdl.input_bn, *mdl.norms]:
                for t in (bn.weight, bn.bias, bn.running_mean):
                    t.add_(torch.randn(t.shape, generator=g, dtype=t.dtype))
                bn.running_var.mul_(1 + torch.rand(bn.running_var.shape, generator=g,
                                                   dtype=torch.float64))
    ens = EnsembleCNN.from_models(models).eval()
    assert ens.alphas == tuple(ALPHAS) and ens.weights[0].dtype == torch.float64
    back = ens.to_models()
    for mdl, new in zip(models, back, strict=True):
        assert (new.alpha, new.dropout, new.image_shape) == (mdl.alpha, mdl.dropout, SHAPE)
        for name, value in mdl.state_dict().items():
            if name.endswith("num_batches_tracked"):
                continue  # unused with a momentum; not stacked (as EnsembleMLP)
            assert torch.equal(value, new.state_dict()[name]), name
    with torch.no_grad():
        logits = ens(x)
        for j, mdl in enumerate(models):
            assert max_diff(logits[j], mdl.eval()(x)) <= TOL
    other = CNN(SHAPE, C, depth=DEPTH, channels=CH + 1).double()
    with pytest.raises(ConfigError, match="^models must be of one architecture"):
        EnsembleCNN.from_models([models[0], other])


def test_select_cat_with_hyper_keep_models(data):
    x, y = data
    ens = EnsembleCNN.init(4, SHAPE, C, seeds=[1, 2, 3, 4], depth=2, channels=3,
                           alpha=[0.0, 0.2, 0.4, 0.6], dtype=torch.float64).train()
    logits = ens(x)
    F.cross_entropy(logits.reshape(-1, C), y.repeat(4)).backward()
    ens.eval()
    with torch.no_grad():
        full = ens(x)
    part = ens.select([3, 1], with_grad=True)
    assert part.alphas == (0.6, 0.2) and not part.training
    assert torch.equal(part.weights[1].grad, ens.weights[1].grad[[3, 1]])
    assert part.biases[0].grad is None  # a gauge parameter stays without gradient
    joined = EnsembleCNN.cat([ens.select([0, 1]), ens.select([2]), ens.select([3])])
    assert joined.alphas == ens.alphas
    with torch.no_grad():
        assert max_diff(part(x), full[[3, 1]]) <= TOL
        assert max_diff(joined(x), full) <= TOL
    hyper = ens.with_hyper([1.0] * 4, [0.5] * 4)
    assert hyper.alphas == (1.0,) * 4 and hyper.dropouts == (0.5,) * 4 and hyper.has_dropout
    assert all(torch.equal(a, b) for a, b in zip(hyper.state_dict().values(),
                                                 ens.state_dict().values(), strict=True))
    with torch.no_grad():  # eval mode: no dropout; slope 1 is the linear network
        assert max_diff(hyper(x)[2], full[2]) > 1e-3
    ev = ens.evaluate(x, y, return_features=True, stack_size=3)  # two passes: 3 + 1 models
    assert ev["loss"].shape == (4,) and not ens.training
    for j in range(4):
        assert ev["loss"][j].item() == pytest.approx(F.cross_entropy(full[j], y).item(),
                                                     abs=TOL)
        acc = (full[j].argmax(1) == y).double().mean().item()
        assert ev["accuracy"][j].item() == pytest.approx(acc, abs=TOL)
    assert [f.shape for f in ev["features"]] == [(4, N, D)] + [(4, N, 3 * 36)] * 2
    ens.train()
    feats = ens.features(x)  # one pass on the ensemble itself, switched to eval mode
    assert ens.training  # ... and back
    assert max_diff(feats[2], ev["features"][2]) <= TOL
    assert max_diff(ens.features(x, stack_size=1)[2], feats[2]) <= TOL


def test_dropout_multipliers_reach_the_right_units(data):
    x, _ = data
    ens = stacked(dropout=[0.5, 0.5, 0.0]).train()
    keys = ModelStreams(SEEDS).step_keys(torch.tensor([0]))[:, 0]
    masks = DropoutMasks(keys, ens.drop_level, ens.drop_scale, N, ens.width)
    def ones(layer):
        return torch.ones(N, 3, WIDTH, dtype=torch.float64)

    with torch.no_grad():
        plain = ens(x, dropout=ones)  # training mode, no unit dropped
        logits = ens(x, dropout=masks)
    assert torch.equal(logits[2], plain[2])  # p = 0: an exact no-op
    assert max_diff(logits[0], plain[0]) > 1e-3 and max_diff(logits[1], plain[1]) > 1e-3
    # The single CNN with the same multipliers applied by hand, unit (c, y, x) of its
    # flattened layer = unit c·H·W + y·W + x of the mask: the stack equals it.
    for j in range(3):
        ref = seeded_cnn(SEEDS[j], alpha=ALPHAS[j]).train()
        with torch.no_grad():
            h = ref.input_bn(x.view(N, *SHAPE))
            for layer, (conv, bn) in enumerate(zip(ref.convs, ref.norms, strict=True)):
                h = ref.up(ref.pool(ref.act(bn(conv(h)))))
                h = h * masks(layer)[:, j].view(N, CH, 6, 6)
            assert max_diff(ref.out(h.view(N, -1)), logits[j]) <= TOL
    # A multiplier that zeroes model 1's last layer changes model 1 only: its logits are
    # the output bias.
    def zero_model_1(layer):
        out = ones(layer)
        if layer == DEPTH - 1:
            out[:, 1] = 0.0
        return out

    with torch.no_grad():
        cut = ens(x, dropout=zero_model_1)
    assert torch.equal(cut[0], plain[0]) and torch.equal(cut[2], plain[2])
    assert torch.equal(cut[1], ens.biases[DEPTH][1].expand(N, C))
    # Without multipliers, masks come from torch's global generator; features stay
    # before dropout.
    torch.manual_seed(0)
    with torch.no_grad():
        g_logits, g_feats = ens(x, return_features=True)
        _, p_feats = ens(x, return_features=True, dropout=zero_model_1)
    assert torch.equal(g_logits[2], plain[2]) and max_diff(g_logits[0], plain[0]) > 1e-3
    assert torch.equal(g_feats[1], p_feats[1])
    ens.eval()
    with torch.no_grad():  # eval mode: no dropout whatever is passed
        assert torch.equal(ens(x, dropout=zero_model_1), ens(x))


def test_bad_inputs_are_config_errors(data):
    x, _ = data
    cases = [
        (lambda: CNN((1, 7, 8), C), "image_shape"),
        (lambda: CNN((1, 8), C), "image_shape"),
        (lambda: CNN(SHAPE, C, alpha=1.5), "alpha"),
        (lambda: CNN(SHAPE, C, dropout=1), "dropout"),
        (lambda: CNN(SHAPE, C, norm="layer"), "norm"),
        (lambda: CNN(SHAPE, C, channels=0), "channels"),
        (lambda: CNN(SHAPE, C, depth=0), "depth"),
        (lambda: CNN(SHAPE, C, kernel_size=2), "kernel_size"),
        (lambda: CNN(SHAPE, C)(x[:, :-1]), "x"),
        (lambda: EnsembleCNN(2, (2, 6, 5), C), "image_shape"),
        (lambda: EnsembleCNN(2, SHAPE, C, alpha=[0.0, 1.5]), "alpha"),
        (lambda: EnsembleCNN(2, SHAPE, C, dropout=1.0), "dropout"),
        (lambda: EnsembleCNN(2, SHAPE, C, norm="layer"), "norm"),
        (lambda: EnsembleCNN(2, SHAPE, C, channels=0), "channels"),
        (lambda: EnsembleCNN(0, SHAPE, C), "n_models"),
        (lambda: stacked(seeds=[1, 2]), "alpha"),  # three slopes for two models
        (lambda: stacked()(x[:, :-1]), "x"),
        (lambda: stacked()(x[:, None].expand(-1, 2, -1)), "x"),  # 2 batches for 3 models
    ]
    for make, name in cases:
        with pytest.raises(ConfigError, match=f"^{name} must be "):
            make()
    with pytest.raises(ConfigError, match="^seeds must be one per model"):
        EnsembleCNN.init(2, SHAPE, C, seeds=[1])
    with pytest.raises(ConfigError, match=r"even H and W \(.*got \(1, 7, 8\)"):
        CNN((1, 7, 8), C)
