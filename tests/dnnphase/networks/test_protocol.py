"""Measurement protocols (dnnphase.networks.protocol) against a plain torch loop: BatchNorm by
hand, with each batch's own statistics (He & Su) or the running ones, layer by layer."""

import numpy as np
import pytest
import torch

from dnnphase.measures.load_curve import default_layers, measure_model
from dnnphase.measures.separation_numpy import fuzziness
from dnnphase.networks import protocol
from dnnphase.networks.mlp import MLP
from dnnphase.networks.stack import EnsembleMLP
from phasecore.checks import ConfigError

EPS = 1e-5


def _stack(alpha=(0.0, 0.3), depth=2, width=5, d=6, classes=3) -> EnsembleMLP:
    """Two MLPs, float64, with running statistics unlike any batch's (so eval and batch
    statistics differ) and non-trivial BatchNorm affine parameters."""
    ens = EnsembleMLP.init(len(alpha), d, classes, seeds=[0, 1], depth=depth, width=width,
                           alpha=list(alpha), dtype=torch.float64)
    g = torch.Generator().manual_seed(5)
    with torch.no_grad():
        for i in range(depth + 1):
            ens.running_mean(i).copy_(torch.randn(ens.running_mean(i).shape, generator=g,
                                                  dtype=torch.float64))
            ens.running_var(i).copy_(0.5 + torch.rand(ens.running_var(i).shape, generator=g,
                                                      dtype=torch.float64))
            ens.bn_weights[i].copy_(1 + 0.3 * torch.randn(ens.bn_weights[i].shape, generator=g,
                                                          dtype=torch.float64))
            ens.bn_biases[i].copy_(0.2 * torch.randn(ens.bn_biases[i].shape, generator=g,
                                                     dtype=torch.float64))
    return ens


def _by_hand(mlp: MLP, x: torch.Tensor, batch: int | None, linear: bool):
    """One MLP's features [raw input, layer 1..L], each (N, F), by a plain loop: batches of
    ``batch`` in order (None: all at once with the running statistics), BatchNorm written
    out, LeakyReLU as max(u, αu)."""
    def norm(bn, u, stats):
        mean, var = (u.mean(0), u.var(0, unbiased=False)) if stats else \
            (bn.running_mean, bn.running_var)
        return (u - mean) / torch.sqrt(var + EPS) * bn.weight + bn.bias

    stats = batch is not None
    batches = [x] if batch is None else list(torch.split(x, batch))
    out = []
    for xb in batches:
        feats = [xb]
        h = norm(mlp.input_bn, xb, stats)
        for lin, bn in zip(mlp.linears, mlp.norms, strict=True):
            z = h @ lin.weight.T + lin.bias
            u = norm(bn, z, stats)
            h = torch.maximum(u, mlp.alpha * u)
            feats.append(z if linear else h)
        out.append(feats)
    return [torch.cat(layer).detach() for layer in zip(*out, strict=True)]


@pytest.mark.parametrize("n", [250, 100])
def test_he_su_batches_of_100_by_hand(n):
    ens = _stack()
    x = torch.randn(n, 6, dtype=torch.float64, generator=torch.Generator().manual_seed(1))
    before = [ens.running_mean(i).clone() for i in range(3)]
    got = protocol.stack_features(ens, x, "he_su")
    for j, mlp in enumerate(ens.to_models()):
        want = _by_hand(mlp, x, 100, linear=False)
        for g, w in zip(got, want, strict=True):
            torch.testing.assert_close(g[j], w, rtol=1e-12, atol=1e-12)
    assert all(torch.equal(b, ens.running_mean(i)) for i, b in enumerate(before))
    # the running statistics' features differ: the protocol is not eval mode by another name
    assert not torch.allclose(got[2], protocol.stack_features(ens, x, "ours")[2])


def test_galanti_linear_outputs_by_hand():
    ens = _stack()
    x = torch.randn(80, 6, dtype=torch.float64, generator=torch.Generator().manual_seed(2))
    got = protocol.stack_features(ens, x, "galanti")
    for j, mlp in enumerate(ens.to_models()):
        for g, w in zip(got, _by_hand(mlp, x, None, linear=True), strict=True):
            torch.testing.assert_close(g[j], w, rtol=1e-12, atol=1e-12)


def test_eval_protocol_recomputed_matches_the_stacks_own_features():
    """The protocol's forward in eval mode with the network's layer 0 is the stack's
    features (an independent path through the same parameters), to rounding."""
    ens = _stack()
    x = torch.randn(64, 6, dtype=torch.float64, generator=torch.Generator().manual_seed(3))
    mine = protocol._layers(ens, x, protocol.Protocol("eval", None, "activation", "network"))
    for a, b in zip(mine, ens.features(x), strict=True):
        torch.testing.assert_close(a, b, rtol=1e-12, atol=1e-12)
    assert all(torch.equal(a, b) for a, b in zip(protocol.stack_features(ens, x, "ours"),
                                                ens.features(x), strict=True))


def test_last_batch_of_one_joins_the_one_before():
    assert protocol.batch_bounds(201, 100) == [(0, 100), (100, 201)]
    assert protocol.batch_bounds(250, 100) == [(0, 100), (100, 200), (200, 250)]
    ens = _stack()
    x = torch.randn(201, 6, dtype=torch.float64, generator=torch.Generator().manual_seed(4))
    got = protocol.stack_features(ens, x, "he_su")
    mlp = ens.to_models()[0]
    want = [torch.cat(p) for p in zip(_by_hand(mlp, x[:100], 100, False),
                                      _by_hand(mlp, x[100:], 101, False), strict=True)]
    torch.testing.assert_close(got[-1][0], want[-1], rtol=1e-12, atol=1e-12)


def test_measure_model_he_su_by_hand_and_leaves_the_model_as_it_was():
    mlp = _stack().to_models()[1]
    mlp.train()
    x = torch.randn(230, 6, dtype=torch.float64, generator=torch.Generator().manual_seed(6))
    y = torch.arange(230) % 3
    state = {k: v.clone() for k, v in mlp.state_dict().items()}
    ds = measure_model(mlp, (x, y), measures=("fuzziness",), protocol="he_su")
    assert ds.attrs and int(ds.sizes["layer"]) == 3  # input, two activations
    want = [fuzziness(h.numpy(), y.numpy()) for h in _by_hand(mlp, x, 100, linear=False)]
    np.testing.assert_allclose(ds["load_curve"].sel(measure="fuzziness").values, want,
                               rtol=1e-9)
    assert mlp.training and all(torch.equal(v, mlp.state_dict()[k]) for k, v in state.items())
    eval_ds = measure_model(mlp, (x, y), measures=("fuzziness",))
    assert not np.allclose(eval_ds["load_curve"].values[0, 1:], ds["load_curve"].values[0, 1:])


def test_measure_model_galanti_measures_linear_outputs():
    mlp = _stack().to_models()[0]
    assert default_layers(mlp, "galanti") == ["input", "linears.0", "linears.1"]
    x = torch.randn(90, 6, dtype=torch.float64, generator=torch.Generator().manual_seed(7))
    y = torch.arange(90) % 3
    ds = measure_model(mlp, (x, y), measures=("fuzziness",), protocol="galanti")
    want = [fuzziness(h.numpy(), y.numpy()) for h in _by_hand(mlp, x, None, linear=True)]
    np.testing.assert_allclose(ds["load_curve"].values[0], want, rtol=1e-9)


def test_an_unknown_protocol_is_refused_by_name():
    with pytest.raises(ConfigError, match="protocol must be one of ours, he_su, galanti"):
        protocol.lookup("authors")


def test_the_recorder_measures_under_the_protocol():
    from dnnphase.measures.load_curve import LoadCurveRecorder

    mlp = _stack().to_models()[0]
    x = torch.randn(150, 6, dtype=torch.float64, generator=torch.Generator().manual_seed(8))
    y = torch.arange(150) % 3
    recorder = LoadCurveRecorder(mlp, (x, y), measures=("fuzziness",), protocol="he_su")
    recorder(0)
    once = measure_model(mlp, {"train": (x, y)}, measures=("fuzziness",), protocol="he_su")
    np.testing.assert_array_equal(recorder.result()["load_curve"].values[0],
                                  once["load_curve"].values)
