"""Eq. (1)'s normalisation constant (``norm="scale"``): the closed form and the claim.

:func:`dnnphase.networks.mlp.activation_scale` keeps the hidden features' mean second moment
from layer to layer at initialisation. In expectation over the weights this is exact
for any width (a pre-activation is symmetric about 0, so E[LeakyReLU_α(z)²] =
(1 + α²)/2 · E[z²] without any Gaussian assumption): with PyTorch's default init and
input of mean second moment q_0, E[q_ℓ] = q_0 + 1/d + (ℓ − 1)/n (the biases' drift).
One deep ReLU network scatters about it by ≈ √(5ℓ/n) in log (finite width), so the
claim is tested on the mean over many seeded networks; without the constant the
moment collapses by ≈ (1 + α²)/6 per layer.
"""

import math

import numpy as np
import pytest
import torch

from dnnphase.networks.mlp import (
    MLP,
    NORMS,
    WEIGHT_INITS,
    activation_scale,
    check_norm,
    check_weight_init,
)
from dnnphase.networks.stack import EnsembleMLP
from phasecore.checks import ConfigError

pytestmark = pytest.mark.usefixtures("one_torch_thread")

ALPHAS = (0.0, 0.5, 1.0)


def test_closed_form_against_monte_carlo():
    """For z ~ N(0, s): E[φ²] = s(1 + α²)/2 and E[φ] = √s (1 − α)/√(2π); c(α) then
    turns the default init's weight variance 1/(3 fan_in) into an exact second-moment
    map, and the features' variance is the stated fraction of their second moment."""
    g = torch.Generator().manual_seed(0)
    s = 0.7
    z = math.sqrt(s) * torch.randn(4_000_000, generator=g, dtype=torch.float64)
    for alpha in ALPHAS:
        phi = torch.nn.functional.leaky_relu(z, alpha)
        second, mean = phi.square().mean().item(), phi.mean().item()
        assert second == pytest.approx(s * (1 + alpha**2) / 2, rel=3e-3)
        assert mean == pytest.approx(math.sqrt(s) * (1 - alpha) / math.sqrt(2 * math.pi),
                                     abs=2e-3)
        c = activation_scale(alpha)
        assert c == pytest.approx(math.sqrt(6 / (1 + alpha**2)), rel=1e-15)
        # q -> c² E[φ(z)²] with z of variance q/3 (default init) is the identity
        assert c**2 * (phi / math.sqrt(3 * s)).square().mean().item() == pytest.approx(
            1.0, rel=3e-3)
        # centred variance at unit second moment: 1 − (1 − α)²/(π (1 + α²))
        h = c * phi / math.sqrt(3 * s)
        assert h.var().item() == pytest.approx(
            1 - (1 - alpha) ** 2 / (math.pi * (1 + alpha**2)), rel=3e-3)
        assert activation_scale(alpha, "orthogonal") == pytest.approx(
            math.sqrt(2 / (1 + alpha**2)), rel=1e-15)
    assert (activation_scale(0.0), activation_scale(1.0)) == (math.sqrt(6), math.sqrt(3))
    assert activation_scale(1.0, "orthogonal") == 1.0


def _layer_moments(weight_init: str, depth: int, width: int, models: int, chunk: int = 16):
    """Mean second moment of every layer's features h_0..h_L at initialisation, averaged
    over units, 16 standardised Gaussian samples and ``models`` seeded networks, for
    each slope of ALPHAS: ``{"scale": (3, L+1), "none": (3, L+1)}`` (the same networks
    with and without the constant), and the input's mean second moment q_0."""
    x = torch.randn(16, width, generator=torch.Generator().manual_seed(1),
                    dtype=torch.float64)
    x = ((x - x.mean(0)) / x.std(0, correction=0)).float()  # input dimension d = width
    q = {norm: np.zeros((len(ALPHAS), models, depth + 1)) for norm in ("scale", "none")}
    for a in range(0, models, chunk):
        scaled = EnsembleMLP.init(chunk, width, 2, seeds=range(a, a + chunk), depth=depth,
                                  width=width, norm="scale", weight_init=weight_init)
        plain = EnsembleMLP(chunk, width, 2, depth, width, norm="none")
        plain.load_state_dict(scaled.state_dict())  # the same weights
        for norm, base in (("scale", scaled), ("none", plain)):
            for k, alpha in enumerate(ALPHAS):
                ens = base.with_hyper([alpha] * chunk, [0.0] * chunk).eval()
                with torch.no_grad():
                    _, feats = ens(x, return_features=True)  # [(N, m, F)]
                q[norm][k, a:a + chunk] = torch.stack(
                    [f.double().square().mean((0, 2)) for f in feats], 1).numpy()
    return {norm: v.mean(1) for norm, v in q.items()}, x.double().square().mean().item()


def test_scale_keeps_the_second_moment_through_depth_and_none_does_not():
    """Default init, 12 layers of width 512, 64 networks per slope: every layer's mean
    second moment within 12 % of E[q_ℓ] = q_0 + 1/d + (ℓ − 1)/n (≤ 1.024); the same
    networks without the constant collapse by (1 + α²)/6 per layer."""
    depth, width = 12, 512
    moments, q0 = _layer_moments("default", depth, width, models=64)
    layers = np.arange(depth + 1)
    target = q0 + np.where(layers > 0, 1 / width + (layers - 1) / width, 0.0)
    assert q0 == pytest.approx(1.0, rel=1e-6) and target[-1] < 1.025
    rel = moments["scale"] / target - 1  # (alphas, L+1)
    print("\nnorm='scale': mean second moment / target - 1, per slope (rows) and layer:\n",
          np.round(rel, 3))
    print("norm='none': mean second moment:\n", np.array2string(moments["none"],
                                                                precision=2))
    assert np.abs(rel).max() < 0.12
    # Without the constant the moment shrinks by (1 + α²)/6 per layer towards the biases'
    # small fixed point: far from 1 after a few layers, for every slope.
    assert (moments["none"][:, 3:] < 0.1).all() and (moments["none"][:, -1] < 0.01).all()


def test_scale_with_orthogonal_weights_keeps_the_second_moment():
    """Square orthogonal weights are isometries: c(α) = √(2/(1 + α²)) keeps E[q_ℓ] = q_0
    (zero biases), and the linear network keeps every sample's norm (to rounding)."""
    moments, q0 = _layer_moments("orthogonal", depth=12, width=256, models=64)
    rel = moments["scale"] / q0 - 1
    print("\northogonal, norm='scale': mean second moment / q_0 - 1:\n", np.round(rel, 3))
    assert np.abs(rel).max() < 0.15
    assert np.abs(rel[ALPHAS.index(1.0)]).max() < 1e-5  # float32 forward
    assert (moments["none"][:2, -1] < 0.1).all()  # ReLU and α = 0.5 collapse without c


def test_scale_is_the_activation_times_c_and_has_no_batchnorm():
    torch.manual_seed(0)
    mlp = MLP(6, 3, depth=2, width=5, alpha=0.5, norm="scale").double()
    assert not any(isinstance(m, torch.nn.BatchNorm1d) for m in mlp.modules())
    x = torch.randn(4, 6, dtype=torch.float64)
    _, feats = mlp(x, return_features=True)
    assert torch.equal(feats[0], x)  # the input as given
    c = activation_scale(0.5)
    h1 = c * torch.nn.functional.leaky_relu(mlp.linears[0](x), 0.5)
    assert torch.equal(feats[1], h1)
    assert "norm=scale" in repr(mlp)


def test_norm_and_weight_init_names_have_one_home():
    assert NORMS == ("batchnorm", "scale", "none")
    assert WEIGHT_INITS == ("default", "orthogonal")
    for name in NORMS:
        assert check_norm(name) == name
    msg = "norm must be one of batchnorm, scale, none (got True)"
    for bad in (True, "BatchNorm", None):
        with pytest.raises(ConfigError, match="norm must be one of batchnorm, scale, none"):
            check_norm(bad)
    with pytest.raises(ConfigError, match=msg.replace("(", r"\(").replace(")", r"\)")):
        MLP(3, 2, norm=True)
    with pytest.raises(ConfigError, match="norm must be one of"):
        EnsembleMLP(1, 3, 2, norm="layernorm")
    with pytest.raises(ConfigError, match="weight_init must be one of default, orthogonal"):
        check_weight_init("xavier")
    with pytest.raises(ConfigError, match="weight_init must be one of"):
        MLP(3, 2, weight_init="xavier")
    with pytest.raises(ConfigError, match="alpha"):
        activation_scale(2.0)


def test_a_sweep_figure_names_a_network_that_is_not_the_paper_mlp():
    import json

    import xarray as xr

    from dnnphase.sweeps.plotting import _network_name

    def named(**config):
        return _network_name(xr.Dataset(attrs={"config": json.dumps(config)}))

    assert named(arch="mlp", norm="batchnorm") == ""
    assert named() == ""  # stored before the fields existed: the defaults
    assert named(norm="scale") == ", norm scale"
    assert named(arch="cnn", norm="none") == ", cnn, norm none"
