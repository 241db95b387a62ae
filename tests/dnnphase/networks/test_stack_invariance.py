"""A stacked model's forward pass and gradients are bitwise those of the model alone, in a
stack of any size and at any position (float32, where rounding would show): the hidden
biases' per-model gradient sum without BatchNorm
(:class:`dnnphase.networks.per_model.AddBiasPerModel`) and the CNN's per-model calls on a CPU
(:data:`dnnphase.networks.cnn.PER_MODEL_CPU`). Training with these is
``tests/dnnphase/training/test_train.py``'s."""

import pytest
import torch

from dnnphase.networks.cnn import EnsembleCNN
from dnnphase.networks.per_model import AddBiasPerModel
from dnnphase.networks.stack import EnsembleMLP

pytestmark = pytest.mark.usefixtures("one_torch_thread")

K = 12  # models drawn; stacks take the first M (above 8 included)


@pytest.mark.parametrize("n", [1, 13, 20, 100])
def test_bias_gradient_is_each_models_own_column_sum(n):
    """The gradient of ``u + bias`` is, per model, the ``(B, n)`` column sum of the model
    alone, bit for bit; the forward is the plain sum."""
    g = torch.Generator().manual_seed(n)
    b = 37
    grads = torch.randn(b, K, n, generator=g)  # the gradient reaching each model's units
    u = torch.randn(b, K * n, generator=g)
    bias = torch.randn(1, K * n, generator=g, requires_grad=True)
    out = AddBiasPerModel.apply(u, bias, K)
    assert torch.equal(out, u + bias)
    out.backward(grads.reshape(b, K * n))
    for m in range(K):
        alone = torch.zeros(1, n, requires_grad=True)
        (u[:, m * n:(m + 1) * n] + alone).backward(grads[:, m].contiguous())
        assert torch.equal(bias.grad.view(K, n)[m], alone.grad[0]), m


def _outputs(stack, x, train=True):
    """Logits, features, parameter gradients and running statistics, model first."""
    stack.train(train)
    logits, feats = stack(x, return_features=True)
    out = {"logits": logits.detach(), **{f"h{i}": f.detach().transpose(0, 1)
                                         for i, f in enumerate(feats)}}
    if train:
        (logits.square().sum() + sum(f.sum() for f in feats[1:])).backward()
        out.update({n: p.grad for n, p in stack.named_parameters() if p.grad is not None})
    out.update({n: b for n, b in stack.named_buffers() if n.startswith("running")})
    return out


@pytest.mark.parametrize("kind", ["mlp-scale", "mlp-none", "cnn", "cnn-none"])
@pytest.mark.parametrize("train", [True, False])
def test_a_model_in_a_stack_computes_as_alone(kind, train):
    """Stacks of 2, 9 and 12 against each model alone: logits, features, gradients and
    running statistics. (One input channel: alone, the grouped conv would round otherwise
    even in eval mode.)"""
    g = torch.Generator().manual_seed(1)
    x = torch.randn(16, K, 32, generator=g) + 1.0  # each model its own batch
    alphas = [0.0, 0.2, 1.0] * (K // 3)
    if kind.startswith("mlp"):
        full = EnsembleMLP.init(K, 32, 5, seeds=range(K), depth=2, width=(20, 13),
                                norm=kind.split("-")[1], alpha=alphas)
    else:
        full = EnsembleCNN.init(K, (1, 4, 8), 5, seeds=range(K), depth=2, channels=3,
                                norm="none" if kind == "cnn-none" else "batchnorm",
                                alpha=alphas)
    alone = [_outputs(full.select([m]), x[:, m:m + 1].contiguous(), train) for m in range(K)]
    for size in (2, 9, K):
        together = _outputs(full.select(range(size)), x[:, :size].contiguous(), train)
        for name, value in together.items():
            for m in range(size):
                assert torch.equal(value[m], alone[m][name][0]), (size, name, m)
