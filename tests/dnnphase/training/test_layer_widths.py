"""Per-layer widths (He & Su's Fig. 4 shapes): a stack of MLPs whose hidden layers differ in
width trains as each model alone, dropout and label + data noise drawn from the documented
offsets of its own streams; a uniform tuple is the one width, bit for bit; bad widths are
refused naming ``width``."""

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from dnnphase.cli import main as cli_main
from dnnphase.networks.architecture import Architecture
from dnnphase.networks.mlp import MLP, hidden_widths
from dnnphase.networks.randomness import (
    LEVELS,
    ModelStreams,
    corrupt_batch,
    dropout_levels,
    dropout_span,
    hash_bits,
)
from dnnphase.sweeps.sweep import SweepConfig, sweep
from dnnphase.training.train import TrainConfig, train_ensemble
from phasecore import results
from phasecore.checks import ConfigError

N, D, C = 96, 12, 3
WIDTHS = (24, 6, 12)  # wide, narrow, middle
TOL = 1e-8

pytestmark = pytest.mark.usefixtures("one_torch_thread")


@pytest.fixture(scope="module")
def data():
    g = torch.Generator().manual_seed(1)
    centres = 2.0 * torch.randn(C, D, generator=g, dtype=torch.float64)
    y = torch.randint(0, C, (N,), generator=g)
    return centres[y] + 2.0 * torch.randn(N, D, generator=g, dtype=torch.float64), y


def documented_mask(key, level, batch, layer):
    """Layer ``layer``'s multipliers (B, w) from the definition in DropoutMasks' docstring:
    the step key's integers S_l ... S_l + H_l - 1, S_l = H_0 + ... + H_(l-1),
    H_k = ceil(B * w_k / 2), low 16-bit halves then high ones, dropped when v < level."""
    halves = [-(-batch * w // 2) for w in WIDTHS]
    bits = hash_bits(key, sum(halves[:layer]), halves[layer])[0]  # (H,)
    v = torch.cat([bits & 0xFFFF, bits >> 16])[: batch * WIDTHS[layer]].view(batch, -1)
    return (v >= level).double() * LEVELS / (LEVELS - level)


def reference(x, y, seed, *, dropout, q, batch_size=16, epochs=3, lr=1e-2):
    """One model trained alone, its masks and noise from its own streams."""
    torch.manual_seed(seed)
    model = MLP(D, C, depth=len(WIDTHS), width=WIDTHS).double().train()
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    streams = ModelStreams([seed])
    level = float(dropout_levels([dropout])[0])
    sigma = q * x.std(0, correction=0)[None, :]
    step = 0
    for epoch in range(1, epochs + 1):
        perm = streams.epoch_order(epoch, N)[0]
        for s in range(N // batch_size):
            idx = perm[s * batch_size:(s + 1) * batch_size]
            key = streams.step_keys(torch.tensor([step]))[:, 0]
            start = sum(-(-batch_size * w // 2) for w in WIDTHS)  # the noise after the masks
            xb, yb = corrupt_batch(x[idx][:, None], y[idx][None], key,
                                   torch.tensor([q], dtype=torch.float64), sigma, C, start)
            h = model.input_bn(xb[:, 0])
            for layer, (lin, bn) in enumerate(zip(model.linears, model.norms, strict=True)):
                h = model.act(bn(lin(h))) * documented_mask(key, level, batch_size, layer)
            opt.zero_grad()
            F.cross_entropy(model.out(h), yb[0]).backward()
            opt.step()
            step += 1
    return model.eval()


def test_a_stack_of_uneven_widths_trains_as_each_model_alone(data):
    x, y = data
    seeds, drops, qs = [1, 2, 3], [0.2, 0.0, 0.1], [0.0, 0.3, 0.2]
    res = train_ensemble(x, y, seeds=seeds, dropout=drops, label_noise=qs, batch_size=16,
                         lr=1e-2, network=Architecture(depth=3, width=WIDTHS),
                         config=TrainConfig(epochs=3, dtype=torch.float64, device="cpu",
                                            loss_threshold=0.0, rel_tol=0.0))
    assert res.model.widths == WIDTHS
    for j, seed in enumerate(seeds):
        ref = reference(x, y, seed, dropout=drops[j], q=qs[j])
        mine = res.model.select([j]).to_models()[0]
        for (name, a), b in zip(ref.state_dict().items(), mine.state_dict().values(),
                                strict=True):
            if a.dtype.is_floating_point:
                assert (a - b).abs().max().item() <= TOL, name
        feats = [f[0] for f in res.features([j])]
        assert [f.shape[1] for f in feats] == [D, *WIDTHS]
    assert dropout_span(3, 16, WIDTHS) == sum(-(-16 * w // 2) for w in WIDTHS)
    assert dropout_span(3, 16, 8) == dropout_span(3, 16, (8, 8, 8)) == 3 * 64


SMALL = dict(knob="dropout", values=(0.0, 0.2), alphas=(0.0,), seeds=(0, 1), dataset="digits",
             n_train=200, depth=3, epochs=2, batch_size=50, measures=("fuzziness",),
             scheduler="serial")


def test_a_uniform_tuple_is_the_one_width_bit_for_bit_and_uneven_widths_sweep():
    one, per_layer = sweep(width=16, **SMALL), sweep(width=(16, 16, 16), **SMALL)
    for name in ("load_curve", "test_accuracy", "train_loss"):
        np.testing.assert_array_equal(one[name], per_layer[name])
    uneven = sweep(width=[32, 8, 16], **SMALL)
    assert np.isfinite(uneven["load_curve"]).all()
    assert SweepConfig(**SweepConfig(width=[32, 8, 16], depth=3).to_dict()).width == (32, 8, 16)


@pytest.mark.parametrize("width, words", [
    ((16, 16), "a list of 3 integers >= 1"),
    ((16, 0, 16), "a list of 3 integers >= 1"),
    ((16, 2.5, 16), "a list of 3 integers >= 1"),
    ("16,16,16", "a list of 3 integers >= 1"),
    (0, "an integer >= 1"),
])
def test_bad_widths_are_refused_naming_width(width, words):
    with pytest.raises(ConfigError, match=f"width must be .*{words}"):
        SweepConfig(depth=3, width=width)


def test_widths_per_layer_are_refused_with_a_cnn_or_a_depth_axis():
    with pytest.raises(ConfigError, match="width must be left at its default"):
        Architecture(arch="cnn", depth=2, width=(8, 8))
    with pytest.raises(ConfigError, match="width must be one integer with a depth axis"):
        SweepConfig(depths=(2, 3), width=(8, 8))
    assert hidden_widths(2, 5) == (5, 5) and hidden_widths(2, [3, np.int64(4)]) == (3, 4)


def test_the_command_line_takes_one_width_per_layer(tmp_path, capsys):
    out = tmp_path / "w.nc"
    common = ["sweep", "--dataset", "digits", "--n-train", "200", "--epochs", "1",
              "--depth", "3", "--alpha", "0", "--values", "0", "--seeds", "1",
              "--scheduler", "serial", "-o", str(out), "--quiet"]
    assert cli_main(common + ["--width", "32,8,16"]) == 0
    assert '"width": [32, 8, 16]' in results.load(out).attrs["config"]
    for bad in ("32,8", "32,x,16", "0"):
        assert cli_main(common + ["--width", bad, "--overwrite"]) == 2
        assert "width must" in capsys.readouterr().err.strip().splitlines()[-1]


def test_equal_networks_stack_whatever_form_their_widths_were_given_in():
    from dnnphase.networks.stack import EnsembleMLP

    forms = [(24, 6, 12), [24, 6, 12], (np.int64(24), np.int32(6), 12)]
    models = []
    for seed, width in enumerate(forms):
        torch.manual_seed(seed)
        models.append(MLP(D, C, depth=3, width=width))
    ens = EnsembleMLP.from_models(models)
    assert ens.widths == (24, 6, 12)
    for mdl, back in zip(models, ens.to_models(), strict=True):
        for name, value in mdl.state_dict().items():
            torch.testing.assert_close(back.state_dict()[name], value)
    uniform = EnsembleMLP.from_models([MLP(D, C, depth=3, width=8),
                                       MLP(D, C, depth=3, width=(8, 8, 8))])
    assert uniform.widths == (8, 8, 8)


def test_networks_of_other_widths_are_refused_in_one_line_naming_what_differs():
    from dnnphase.networks.stack import EnsembleMLP

    with pytest.raises(ConfigError) as err:
        EnsembleMLP.from_models([MLP(D, C, depth=3, width=(24, 6, 12)),
                                 MLP(D, C, depth=3, width=(24, 12, 6))])
    message = str(err.value)
    assert "\n" not in message
    assert "models must be of one architecture" in message
    assert "model 1: width (24, 12, 6) vs (24, 6, 12)" in message


def test_the_memory_refusal_shows_per_layer_widths_as_given(tmp_path, capsys):
    out = tmp_path / "s.nc"
    assert cli_main(["sweep", "--dataset", "digits", "--n-train", "200", "--epochs", "1",
                     "--alpha", "0", "--values", "0", "--seeds", "1", "--scheduler", "serial",
                     "--depth", "3", "--width", "100000000,8,16", "-o", str(out),
                     "--quiet"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "width is too large" in err[0]
    assert "(width 100000000,8,16, depth 3," in err[0]
    assert not out.exists() and not (tmp_path / "s.nc.parts").exists()


def test_an_array_of_widths_is_taken_as_a_list_and_a_bad_one_is_one_line():
    cfg = SweepConfig(depth=3, width=np.array([32, 8, 16]))
    assert cfg.width == (32, 8, 16) and all(type(w) is int for w in cfg.width)
    assert Architecture(depth=3, width=torch.tensor([4, 5, 6])).widths == (4, 5, 6)
    assert MLP(D, C, depth=2, width=np.array([3, 4])).widths == (3, 4)
    with pytest.raises(ConfigError) as err:
        SweepConfig(depth=2, width=np.array([[1, 2], [3, 4]]))
    assert "width must be" in str(err.value) and "\n" not in str(err.value)
