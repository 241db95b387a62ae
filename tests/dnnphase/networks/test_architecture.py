"""Architectures by name: the trainer and the sweep build the CNN and the linear network from
their seeds as they build the MLP, and each model equals its single reference trained alone."""

import dataclasses

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from dnnphase import separation
from dnnphase.cli import main
from dnnphase.networks.architecture import ARCHS, Architecture
from dnnphase.networks.cnn import CNN, EnsembleCNN
from dnnphase.networks.mlp import MLP
from dnnphase.sweeps.sweep import SweepConfig, sweep
from dnnphase.training.train import TrainConfig, train_ensemble
from phasecore.checks import ConfigError

SHAPE, N, C = (1, 8, 8), 48, 3

pytestmark = pytest.mark.usefixtures("one_torch_thread")


@pytest.fixture(scope="module")
def images():
    g = torch.Generator().manual_seed(0)
    y = torch.arange(N) % C
    x = torch.randn(C, 64, generator=g, dtype=torch.float64)[y] + \
        torch.randn(N, 64, generator=g, dtype=torch.float64)
    return x, y


def _cfg(**kw):
    return TrainConfig(**{"epochs": 4, "lr": 1e-2, "dtype": torch.float64, "device": "cpu",
                          "loss_threshold": 0.0, "rel_tol": 0.0, **kw})


def test_a_cnn_built_from_its_seed_trains_as_a_single_cnn(images):
    """Full batch Adam, two slopes in one stack: each model's weights and load curve equal
    a CNN built after torch.manual_seed(seed) and trained alone with torch.optim.Adam."""
    x, y = images
    seeds, alphas = [11, 12], [0.0, 0.5]
    res = train_ensemble(x, y, seeds=seeds, alpha=alphas, image_shape=SHAPE,
                         network=Architecture("cnn", depth=2, channels=3), config=_cfg())
    assert isinstance(res.model, EnsembleCNN)
    curves = separation.measure_layers(res.features(), y, ["trace_ratio"])[:, 0]
    for m, (seed, alpha) in enumerate(zip(seeds, alphas, strict=True)):
        torch.manual_seed(seed)
        ref = CNN(SHAPE, C, depth=2, channels=3, alpha=alpha).double().train()
        opt = torch.optim.Adam(ref.parameters(), lr=1e-2)
        for _ in range(4):
            opt.zero_grad()
            F.cross_entropy(ref(x), y).backward()
            opt.step()
        mine = res.model.select([m]).to_models()[0].state_dict()
        for name, value in ref.state_dict().items():
            if value.dtype.is_floating_point:
                assert (value - mine[name]).abs().max() <= 1e-8, name
        ref.eval()
        with torch.no_grad():
            _, feats = ref(x, return_features=True)
        alone = separation.measure_layers([f[None] for f in feats], y, ["trace_ratio"])[0, 0]
        assert (alone - curves[m]).abs().max() <= 1e-8


def test_the_linear_network_is_the_mlp_with_the_identity(images):
    x, y = images
    res = train_ensemble(x, y, seeds=[3], alpha=1.0,
                         network=Architecture("linear", depth=2, width=64, norm="none",
                                              weight_init="orthogonal"),
                         config=_cfg(optimizer="sgd", lr=1e-3))
    torch.manual_seed(3)
    ref = MLP(64, C, depth=2, width=64, alpha=1.0, norm="none", weight_init="orthogonal")
    ref = ref.double()
    opt = torch.optim.SGD(ref.parameters(), lr=1e-3)
    for _ in range(4):
        opt.zero_grad()
        F.cross_entropy(ref(x), y).backward()
        opt.step()
    mine = res.model.to_models()[0].state_dict()
    for name, value in ref.state_dict().items():
        assert (value - mine[name]).abs().max() <= 1e-12, name
    with pytest.raises(ConfigError, match="alphas must be 1 for the linear network"):
        train_ensemble(x, y, seeds=[3], alpha=0.5, network=Architecture("linear"), config=_cfg())


def test_a_cnn_sweep_is_an_alpha_by_knob_diagram():
    ds = sweep(arch="cnn", dataset="digits", n_train=200, depth=2, channels=3, epochs=3,
               knob="dropout", values=[0.0, 0.2], alphas=[0.0, 1.0], seeds=[0],
               measures=["trace_ratio"])
    assert ds.load_curve.shape == (2, 2, 1, 1, 3)
    assert np.isfinite(ds.load_curve).all() and np.isfinite(ds.test_accuracy).all()
    assert '"arch": "cnn"' in ds.attrs["config"]


@pytest.mark.parametrize("kw,match", [
    (dict(arch="resnet"), "arch must be one of"),
    (dict(arch="cnn", norm="scale"), "norm must be one of batchnorm, none for the CNN"),
    (dict(arch="cnn", weight_init="orthogonal"), "weight_init must be default for the CNN"),
    (dict(arch="cnn", kernel_size=4), "kernel_size"),
    (dict(arch="cnn", channels=0), "channels"),
    (dict(arch="linear", alphas=(0.0, 1.0)), "alphas must be 1"),
])
def test_bad_architectures_are_refused_on_construction(kw, match):
    with pytest.raises(ConfigError, match=match):
        SweepConfig(**kw)


def test_a_cnn_needs_images(tmp_path, capsys, images):
    out = tmp_path / "cnn.nc"
    assert main(["sweep", "--arch", "cnn", "--dataset", "gmm", "-o", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert "arch must be mlp or linear for a data set that is not images" in err
    assert "\n" not in err and not out.exists()
    x, y = images
    with pytest.raises(ConfigError, match="image_shape"):
        train_ensemble(x, y, seeds=[0], network=Architecture("cnn"),  # no image_shape
                       config=_cfg())


def test_architecture_fields_are_the_sweeps():
    """One home: SweepConfig's network fields are Architecture's, with its defaults."""
    cfg = SweepConfig()
    for f in dataclasses.fields(Architecture):
        assert getattr(cfg, f.name) == f.default, f.name
    assert cfg.architecture() == Architecture()
    assert set(ARCHS) == {"mlp", "cnn", "linear"}
