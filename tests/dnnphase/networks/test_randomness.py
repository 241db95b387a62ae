"""Per-model random streams (dnnphase.networks.randomness): exact integers, statistics, invariance.

The oracle for the hash is a plain-Python lowbias32 on unbounded integers; the
statistical checks use tolerances of ~5 standard errors, so they fail only for a
broken generator.
"""

import math

import numpy as np
import pytest
import torch

from dnnphase.networks import randomness as rnd

SEEDS = [0, 1, 2, 7, 123456789, 2**40 + 5]


pytestmark = pytest.mark.usefixtures("one_torch_thread")


def _lowbias32(x: int) -> int:
    """Wellons' lowbias32 written with Python's unbounded integers."""
    x ^= x >> 16
    x = (x * 0x7FEB352D) % 2**32
    x ^= x >> 15
    x = (x * 0x846CA68B) % 2**32
    return x ^ (x >> 16)


def test_hash_is_lowbias32_exactly_in_int64_without_overflow():
    g = np.random.default_rng(0)
    values = [0, 1, 2**31 - 1, 2**31, 2**32 - 1] + g.integers(0, 2**32, 2000).tolist()
    x = torch.tensor(values, dtype=torch.long)
    got = rnd.mix32(x).tolist()
    assert got == [_lowbias32(v) for v in values]
    assert all(0 <= v < 2**32 for v in got)
    # In place with a scratch buffer, the same numbers.
    assert rnd.mix32_(x.clone(), torch.empty_like(x)).tolist() == got


def test_streams_do_not_depend_on_the_stack_or_the_thread_count():
    n, b, width, depth = 300, 40, 24, 2
    alone = [rnd.ModelStreams([s]) for s in SEEDS]
    stack = rnd.ModelStreams(SEEDS)
    steps = torch.arange(5, 9)
    keys = stack.step_keys(steps)  # (M, S)
    for j, one in enumerate(alone):
        assert torch.equal(stack.epoch_order(3, n)[j], one.epoch_order(3, n)[0])
        assert torch.equal(keys[j], one.step_keys(steps)[0])
    # A stack that loses models keeps the others' streams.
    keep = torch.tensor([1, 4])
    stack.select(keep)
    assert torch.equal(stack.epoch_order(2, n), torch.cat([alone[1].epoch_order(2, n),
                                                           alone[4].epoch_order(2, n)]))
    # Dropout masks and noise per model, whatever the stack and thread count.
    levels = torch.tensor([float(v) for v in rnd.dropout_levels([0.3] * len(SEEDS))])
    scale = rnd.LEVELS / (rnd.LEVELS - levels)
    k = keys[:, 0]
    full = rnd.DropoutMasks(k, levels, scale, b, width)(1)  # (B, M, width)
    torch.set_num_threads(2)
    try:
        two = rnd.DropoutMasks(k, levels, scale, b, width)(1)
    finally:
        torch.set_num_threads(1)
    assert torch.equal(full, two)
    for j in range(len(SEEDS)):
        one = rnd.DropoutMasks(k[j : j + 1], levels[j : j + 1], scale[j : j + 1], b, width)(1)
        assert torch.equal(one[:, 0], full[:, j])
    x = torch.zeros(b, len(SEEDS), 3, dtype=torch.float64)
    y = torch.zeros(len(SEEDS), b, dtype=torch.long)
    q = torch.full((len(SEEDS),), 0.5, dtype=torch.float64)
    start = rnd.dropout_span(depth, b, width)
    xa, ya = rnd.corrupt_batch(x, y, k, q, q[:, None].expand(-1, 3), 10, start)
    xb, yb = rnd.corrupt_batch(x[:, 2:3], y[2:3], k[2:3], q[2:3], q[2:3, None].expand(-1, 3),
                               10, start)
    assert torch.equal(xa[:, 2:3], xb) and torch.equal(ya[2:3], yb)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize(("n_models", "batch", "width"), [(2, 256, 100), (5, 7, 101), (1, 5, 3)])
def test_fused_cpu_masks_equal_the_tensor_definition_bit_for_bit(n_models, batch, width,
                                                                 dtype):
    """The CPU's one-pass kernel (dnnphase.networks.mask_kernel) against the tensor operations that
    define the masks (and run on a GPU): equal for every layer, odd B·width included
    (the last high half unused), levels 0 (no dropout) to 2¹⁶ − 1; the kept-unit bytes
    (``DropoutMasks.kept``) are the same decisions."""
    keys = rnd.ModelStreams(list(range(40, 40 + n_models))).step_keys(torch.tensor([3]))[:, 0]
    p = [0.0, 0.02, 0.3, 0.5, 0.99999][:n_models]
    levels = torch.tensor([float(v) for v in rnd.dropout_levels(p)], dtype=dtype)
    scale = rnd.LEVELS / (rnd.LEVELS - levels)
    tensor = rnd.DropoutMasks(keys, levels, scale, batch, width, fused=False)
    fused = rnd.DropoutMasks(keys, levels, scale, batch, width)
    assert fused.fused and not tensor.fused  # the CPU default is the kernel
    for layer in range(4):
        a, b = tensor(layer), fused(layer)
        assert a.shape == b.shape == (batch, n_models, width) and a.dtype == b.dtype == dtype
        assert torch.equal(a, b), layer
        kept = fused.kept(layer)  # the fused hidden layer's bytes: the same decisions
        assert kept.dtype == torch.uint8 and kept.shape == (n_models, batch, width)
        assert torch.equal(kept.transpose(0, 1).bool(), a != 0), layer


@pytest.mark.parametrize(("start", "count"), [(0, 1), (17, 1000), (5000, 25_600)])
def test_fused_cpu_uniforms_equal_the_tensor_definition_bit_for_bit(start, count):
    """The noise's uniforms by the one-pass kernel equal uniform_from_bits(hash_bits(...)),
    and so do their normals (corrupt_batch's draws)."""
    keys = rnd.ModelStreams([3, 4, 2**40 + 5]).step_keys(torch.tensor([7]))[:, 0]
    fused = rnd.uniforms(keys, start, count)
    tensor = rnd.uniform_from_bits(rnd.hash_bits(keys, start, count))
    assert fused.dtype == torch.float64 and fused.shape == (3, count)
    assert torch.equal(fused, tensor)
    assert torch.equal(torch.special.ndtri(fused),
                       rnd.normal_from_bits(rnd.hash_bits(keys, start, count)))


def test_epoch_order_is_a_fresh_permutation():
    s = rnd.ModelStreams([3, 4])
    a, b = s.epoch_order(1, 1000), s.epoch_order(2, 1000)
    for p in (a[0], a[1], b[0]):
        assert torch.equal(p.sort().values, torch.arange(1000))
    assert not torch.equal(a[0], a[1]) and not torch.equal(a[0], b[0])
    # Seeds beyond 32 bits are their own streams.
    big = rnd.ModelStreams([3 + 2**32]).epoch_order(1, 1000)[0]
    assert not torch.equal(big, a[0])


def test_uniform_bits_statistics():
    keys = rnd.ModelStreams(range(8)).step_keys(torch.arange(4)).reshape(-1)  # 32 keys
    bits = rnd.hash_bits(keys, 0, 20000)  # (32, 20000)
    u = rnd.uniform_from_bits(bits).reshape(-1)
    n = u.numel()
    assert 0 < u.min() and u.max() < 1
    assert abs(u.mean().item() - 0.5) < 5 * math.sqrt(1 / 12 / n)
    assert abs(u.var().item() - 1 / 12) < 5 * math.sqrt(1 / 180 / n)
    counts = torch.bincount((u * 64).long(), minlength=64).double()
    chi2 = ((counts - n / 64) ** 2 / (n / 64)).sum().item()
    assert chi2 < 63 + 5 * math.sqrt(2 * 63)  # χ² with 63 degrees of freedom
    ones = torch.stack([(bits >> i) & 1 for i in range(32)]).double().mean((1, 2))
    assert (ones - 0.5).abs().max() < 5 * 0.5 / math.sqrt(bits.numel())  # every bit fair
    # Neighbouring keys (models, steps) and neighbouring indices are uncorrelated.
    c = torch.corrcoef(rnd.uniform_from_bits(bits[:4]))
    assert (c - torch.eye(4, dtype=c.dtype)).abs().max() < 5 / math.sqrt(20000)
    lag = torch.corrcoef(torch.stack([u[:-1], u[1:]]))[0, 1].item()
    assert abs(lag) < 5 / math.sqrt(n)


def test_normals_dropout_rate_and_relabelling_statistics():
    keys = rnd.ModelStreams(range(4)).step_keys(torch.arange(2)).reshape(-1)  # 8 keys
    z = rnd.normal_from_bits(rnd.hash_bits(keys, 0, 50000)).reshape(-1)
    n = z.numel()
    assert abs(z.mean().item()) < 5 / math.sqrt(n)
    assert abs(z.var().item() - 1) < 5 * math.sqrt(2 / n)
    assert abs((z.abs() > 1.96).double().mean().item() - 0.05) < 5 * math.sqrt(0.0475 / n)
    # Dropout: the drop rate is p (to 2⁻¹⁶) and kept units are scaled by 1/(1 − p).
    p = [0.0, 0.1, 0.3, 0.5]
    levels = torch.tensor([float(v) for v in rnd.dropout_levels(p)])
    scale = rnd.LEVELS / (rnd.LEVELS - levels)
    masks = rnd.DropoutMasks(keys[:4], levels, scale, 500, 100)
    m = torch.cat([masks(layer) for layer in range(3)])  # (3·500, 4, 100)
    rate = (m == 0).double().mean((0, 2))
    for j, pj in enumerate(p):
        assert abs(rate[j].item() - pj) < 5 * math.sqrt(max(pj * (1 - pj), 1e-12) / 150000)
        assert torch.allclose(m[:, j][m[:, j] > 0], torch.tensor(1 / (1 - pj)), rtol=1e-4)
    # Label + data noise: relabelled to a uniform class with probability q, data noise
    # of q·σ, fresh every step; q = 0 returns the batch exactly.
    b, classes, q = 20000, 10, 0.4
    x = torch.zeros(b, 2, 2, dtype=torch.float64)
    y = torch.zeros(2, b, dtype=torch.long)
    qs = torch.tensor([q, 0.0], dtype=torch.float64)
    sigma = qs[:, None] * torch.tensor([[1.0, 3.0]], dtype=torch.float64)
    x1, y1 = rnd.corrupt_batch(x, y, keys[:2], qs, sigma, classes, 0)
    x2, y2 = rnd.corrupt_batch(x, y, keys[2:4], qs, sigma, classes, 0)
    changed = (y1[0] != 0).double().mean().item()
    assert abs(changed - q * 0.9) < 5 * math.sqrt(0.36 * 0.64 / b)
    assert torch.bincount(y1[0][y1[0] != 0], minlength=classes)[1:].min() > 0.8 * b * q / 10
    sd = x1[:, 0].std(0)
    assert sd[0].item() == pytest.approx(q, rel=0.05)
    assert sd[1].item() == pytest.approx(3 * q, rel=0.05)
    assert not torch.equal(x1[:, 0], x2[:, 0]) and not torch.equal(y1[0], y2[0])
    assert torch.equal(x1[:, 1], x[:, 1]) and torch.equal(y1[1], y[1])
