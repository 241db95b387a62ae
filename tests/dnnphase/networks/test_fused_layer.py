"""The fused CPU hidden layer (dnnphase.networks.fused_layer) against PyTorch's operations.

In training mode on a CPU a hidden layer's BatchNorm, LeakyReLU and dropout run as one
numba kernel each way; ``stack.FUSED_CPU_LAYERS = False`` gives the operations one by one
(the GPU's path). In float64 the two agree to rounding (logits, every gradient, the
running statistics); in float32 each model's numbers are bit for bit its own whatever
else shares the stack.
"""

import pytest
import torch
import torch.nn.functional as F

from dnnphase.networks import stack
from dnnphase.networks.randomness import DropoutMasks, ModelStreams
from dnnphase.networks.stack import EnsembleMLP

pytestmark = pytest.mark.usefixtures("one_torch_thread")

D, C, DEPTH, WIDTH, B = 12, 4, 3, 16, 40
ALPHAS = [0.0, 0.3, 1.0]
DROPS = [0.0, 0.2, 0.5]


def ensemble(dtype, seeds=(1, 2, 3), alphas=ALPHAS, drops=DROPS, width=WIDTH, bias=True):
    ens = EnsembleMLP.init(len(seeds), D, C, seeds=list(seeds), depth=DEPTH, width=width,
                           alpha=list(alphas), dropout=list(drops), dtype=dtype,
                           bias=bias).train()
    with torch.no_grad():  # non-trivial BatchNorm affine parameters and running statistics
        g = torch.Generator().manual_seed(9)
        for p in list(ens.bn_weights) + list(ens.bn_biases):
            p.add_(0.3 * torch.randn(p.shape, generator=g, dtype=dtype))
        for i in range(DEPTH + 1):
            ens.running_mean(i).normal_(0.0, 0.5, generator=g)
            ens.running_var(i).uniform_(0.5, 2.0, generator=g)
    return ens


def data(dtype, n=B):
    g = torch.Generator().manual_seed(0)
    return torch.randn(n, D, generator=g, dtype=dtype), torch.randint(0, C, (n,), generator=g)


def step(ens, x, y, masks, fused, monkeypatch, features=False):
    """Loss of every model, backward; returns logits, gradients and running statistics."""
    monkeypatch.setattr(stack, "FUSED_CPU_LAYERS", fused)
    ens = EnsembleMLP.cat([ens])  # a copy: running statistics start equal
    out = ens(x, dropout=masks, return_features=features)
    logits = out[0] if features else out
    m = logits.shape[0]
    F.cross_entropy(logits.reshape(m * len(y), C), y.repeat(m), reduction="sum").backward()
    grads = {n: p.grad.clone() for n, p in ens.named_parameters() if p.grad is not None}
    stats = {n: b.clone() for n, b in ens.named_buffers() if n.startswith("running")}
    return logits.detach(), grads, stats


def trainer_masks(ens, n, seeds=(1, 2, 3)):
    keys = ModelStreams(list(seeds)).step_keys(torch.tensor([4]))[:, 0]
    return DropoutMasks(keys, ens.drop_level, ens.drop_scale, n, ens.width)


def assert_close(a, b, tol):
    for (name, u), v in zip(a.items(), b.values(), strict=True):
        assert (u - v).abs().max().item() <= tol * (1 + v.abs().max().item()), name


CASES = {  # name: (masks, ensemble settings, batch)
    "trainer masks": ("trainer", {}, B),
    "global masks": ("global", {}, B),
    "no dropout": ("none", {"drops": [0.0] * 3}, B),
    "uniform slope": ("trainer", {"alphas": [0.2] * 3}, B),
    "no bias": ("trainer", {"bias": False}, B),
    "two samples": ("trainer", {}, 2),
    "odd batch x width": ("trainer", {"width": 15}, 3),
}


@pytest.mark.parametrize("case", list(CASES))
def test_fused_layer_equals_pytorch_operations_in_float64(case, monkeypatch):
    """Logits, gradients of every parameter (BatchNorm γ and β, weights) and running
    statistics agree to 1e-12 with the native path: the trainer's dropout masks (the
    kernel's kept-unit bytes), multipliers from the global generator (applied after the
    kernel), no dropout, one slope for all (native ``F.leaky_relu``), no bias, the
    smallest batch (unbiased variance ×2) and an odd number of units per layer; a gauge
    bias gets no gradient on either path."""
    masks, settings, n = CASES[case]
    ens = ensemble(torch.float64, **settings)
    x, y = data(torch.float64, n)
    results = []
    for fused in (False, True):
        torch.manual_seed(5)  # the global generator's masks: the same on both paths
        mk = trainer_masks(ens, n) if masks == "trainer" else None
        results.append(step(ens, x, y, mk, fused, monkeypatch))
    (l0, g0, s0), (l1, g1, s1) = results
    assert (l0 - l1).abs().max().item() < 1e-12
    assert g0.keys() == g1.keys() and "biases.0" not in g1  # bias before BatchNorm: gauge
    assert_close(g1, g0, 1e-12)
    assert_close(s1, s0, 1e-12)
    assert not torch.equal(s1["running_mean_1"], ens.running_mean_1)  # updated
    assert not torch.equal(s1["running_var_1"], ens.running_var_1)


def test_switch_selects_pytorch_operations(monkeypatch):
    """``FUSED_CPU_LAYERS = False`` never calls the kernel; a diverged model (inf in its
    input) gives non-finite logits on both paths without raising, its stack-mates finite
    and equal to theirs alone."""
    from dnnphase.networks import fused_layer as normkernel

    called = []
    original = normkernel.NormActDropout.apply
    monkeypatch.setattr(normkernel.NormActDropout, "apply",
                        lambda *a: called.append(1) or original(*a))
    ens = ensemble(torch.float64)
    x, _ = data(torch.float64)
    xs = x[:, None, :].repeat(1, 3, 1)  # (B, M, d): one input per model
    xs[0, 1, 0] = float("inf")
    outs = {}
    for fused in (False, True):
        monkeypatch.setattr(stack, "FUSED_CPU_LAYERS", fused)
        n_before = len(called)
        outs[fused] = EnsembleMLP.cat([ens])(xs, dropout=trainer_masks(ens, B)).detach()
        assert len(called) - n_before == (DEPTH if fused else 0)
    for out in outs.values():
        assert not out[1].isfinite().all() and out[[0, 2]].isfinite().all()
    assert (outs[True][[0, 2]] - outs[False][[0, 2]]).abs().max() < 1e-12


def test_kernel_arguments_checked_and_codes_reusable():
    """A mask of another shape or dtype is refused before the unchecked kernel runs; the
    codes a forward leaves in its mask, passed again, give the same output."""
    from dnnphase.networks.fused_layer import NormActDropout

    m, b, n = 2, 6, 5
    g = torch.Generator().manual_seed(1)
    z = torch.randn(m, b, n, generator=g, dtype=torch.float64)
    per_channel = [torch.zeros(m, n, dtype=torch.float64), torch.ones(m, n, dtype=torch.float64),
                   torch.zeros(m, n, dtype=torch.float64)]
    per_model = [torch.full((m,), 0.3, dtype=torch.float64), torch.full((m,), 2.0,
                                                                      dtype=torch.float64)]

    def run(kept):
        stats = [torch.zeros(m, n, dtype=torch.float64), torch.ones(m, n, dtype=torch.float64)]
        return NormActDropout.apply(z, *per_channel, per_model[0], kept, per_model[1], *stats,
                                    1e-5, 0.1)

    kept = (torch.rand(m, b, n, generator=g) > 0.5).to(torch.uint8)
    first = run(kept)
    assert kept.max() > 1  # the codes of the forward (kept | y > 0)
    assert torch.equal(run(kept), first)
    for bad in (kept[:, :-1], kept.bool(), kept.to(torch.float64)):
        with pytest.raises(AssertionError, match="kept"):
            run(bad)


def test_fused_layer_float32_close_to_pytorch_operations(monkeypatch):
    ens = ensemble(torch.float32)
    x, y = data(torch.float32)
    (l0, g0, s0), (l1, g1, s1) = (step(ens, x, y, trainer_masks(ens, B), f, monkeypatch)
                                  for f in (False, True))
    assert (l0 - l1).abs().max().item() < 1e-4
    assert_close(g1, g0, 1e-4)
    assert_close(s1, s0, 1e-5)


def test_fused_layer_is_per_model_bit_for_bit(monkeypatch):
    """float32: model 1 in a stack of three and alone gives the same logits, gradients and
    running statistics, to the last bit; asking for the features (dropout multiplied
    after the kernel, in the sample-major layout) changes only the rounding."""
    ens = ensemble(torch.float32)
    x, y = data(torch.float32)
    full = step(ens, x, y, trainer_masks(ens, B), True, monkeypatch)
    alone_ens = ens.select([1])
    alone = step(alone_ens, x, y, trainer_masks(alone_ens, B, seeds=(2,)), True, monkeypatch)
    assert torch.equal(full[0][1:2], alone[0])
    for part in (1, 2):
        for name, value in alone[part].items():
            assert torch.equal(full[part][name][1:2], value), name
    feats = step(ens, x, y, trainer_masks(ens, B), True, monkeypatch, features=True)
    assert (feats[0] - full[0]).abs().max().item() < 1e-5
    for part in (1, 2):
        assert_close(feats[part], full[part], 1e-5)


def test_fused_layer_only_where_it_applies(monkeypatch):
    """Eval mode, one sample, and norm="none" take PyTorch's operations; one sample in
    training mode fails as BatchNorm does."""
    ens = ensemble(torch.float64)
    called = []
    from dnnphase.networks import fused_layer as normkernel

    original = normkernel.NormActDropout.apply
    monkeypatch.setattr(normkernel.NormActDropout, "apply",
                        lambda *a: called.append(1) or original(*a))
    x, _ = data(torch.float64)
    ens(x)
    assert len(called) == DEPTH
    ens.eval()(x)
    assert len(called) == DEPTH
    with pytest.raises(ValueError, match="more than 1 value"):
        ens.train()(x[:1])
    plain = EnsembleMLP.init(2, D, C, seeds=[1, 2], depth=DEPTH, width=WIDTH, norm="none",
                             dtype=torch.float64).train()
    plain(x)
    assert len(called) == DEPTH


def test_sweep_switch_reaches_pool_workers_and_store_records_the_layer(monkeypatch):
    """``FUSED_CPU_LAYERS = False`` in the sweep's process holds in a process pool's workers
    (they import the default): the pool's networks are bit for bit the serial ones with
    PyTorch's operations, not the fused ones. A CPU store of a stacked-MLP sweep (mlp or
    linear) records the fused layer, so a store begun without it is not resumed with it."""
    import xarray as xr

    from dnnphase.sweeps import sweep as phase

    small = dict(dataset="digits", n_train=120, depth=2, width=8, epochs=3, seeds=[0, 1],
                 knob="dropout", values=[0.0, 0.2], alphas=[0.0, 1.0], measures=["trace_ratio"],
                 models_per_chunk=4, dtype="float32", device="cpu")

    def run(fused, **kw):
        monkeypatch.setattr(stack, "FUSED_CPU_LAYERS", fused)
        return phase.sweep(**small, **kw).drop_attrs()

    native = run(False, scheduler="serial")
    pooled = run(False, scheduler="processes", workers=2)
    fused = run(True, scheduler="serial")
    xr.testing.assert_identical(pooled, native)
    assert not fused["train_loss"].equals(native["train_loss"])  # float32 rounding differs

    for arch, recorded in (("mlp", True), ("linear", True), ("cnn", False)):
        own = {k: v for k, v in small.items() if arch != "cnn" or k != "width"}  # MLP's only
        cfg = phase.SweepConfig(**{**own, "arch": arch, "alphas": [1.0] if arch == "linear"
                                   else [0.0], "values": [0.0], "dataset": "digits"})
        monkeypatch.setattr(stack, "FUSED_CPU_LAYERS", True)
        assert phase.fused_cpu_layers(cfg) is recorded, arch
    # The store's record itself: tests/dnnphase/training/test_schedule.py (a store
    # interrupted and resumed).
