"""measure_model given data that do not fit the model: one ConfigError naming ``data`` and
the width the model's first layer takes, raised before that layer runs (torch's own message
about matrix shapes came from inside the forward pass); models the data fit are untouched by
the check."""

import pytest
import torch
from torch import nn

from dnnphase.measures.hooks import Features, input_check
from dnnphase.measures.load_curve import LoadCurveRecorder, measure_model
from phasecore.checks import ConfigError


def _data(*shape, n=40, classes=4, integer=False):
    g = torch.Generator().manual_seed(0)
    x = torch.randint(0, 50, (n, *shape), generator=g) if integer else \
        torch.randn(n, *shape, generator=g)
    return x, torch.arange(n) % classes


class _Runs:
    """How many times each module of a model has run (a forward hook on every one)."""

    def __init__(self, model: nn.Module) -> None:
        self.counts = {name: 0 for name, _ in model.named_modules()}
        for name, module in model.named_modules():
            module.register_forward_hook(self._count(name))

    def _count(self, name):
        def hook(module, args, out):
            self.counts[name] += 1
        return hook


MLP = nn.Sequential(nn.Linear(7, 16), nn.ReLU(), nn.Linear(16, 4))


def test_an_mlp_given_inputs_of_another_width_is_refused_naming_data_and_the_width():
    model = nn.Sequential(nn.BatchNorm1d(7), nn.Linear(7, 16), nn.ReLU(), nn.Linear(16, 4))
    model.train()
    runs = _Runs(model)
    before = {k: v.clone() for k, v in model.state_dict().items()}
    with pytest.raises(ConfigError, match=r"^data must be 2 or 3-D inputs of 7 features along "
                                          r"dimension 1, the num_features of the model's first "
                                          r"layer '0', a BatchNorm1d \(got \(40, 10\)\)$"):
        measure_model(model, _data(10))
    assert set(runs.counts.values()) == {0}  # refused before any layer ran
    assert model.training  # and the model as it was
    assert all(torch.equal(v, model.state_dict()[k]) for k, v in before.items())


@pytest.mark.parametrize(("model", "shape", "message"), [
    (MLP, (10,), r"^data must be inputs of width 7 along the last dimension, the in_features "
                 r"of the model's first layer '0', a Linear \(got \(40, 10\)\)$"),
    (nn.Sequential(nn.Flatten(), nn.Linear(49, 4)), (1, 8, 8),
     r"^data must be inputs of width 49 along the last dimension, the in_features of the "
     r"model's first layer '1', a Linear \(the data reach it as \(40, 64\)\) "
     r"\(got \(40, 1, 8, 8\)\)$"),
    (nn.Sequential(nn.Conv2d(3, 4, 3), nn.ReLU(), nn.Flatten(), nn.LazyLinear(4)), (10,),
     r"^data must be inputs of shape \(N, 3, H, W\), 3 channels: the in_channels of the "
     r"model's first layer '0', a Conv2d \(got \(40, 10\)\)$"),
    (nn.Sequential(nn.Conv1d(2, 4, 3), nn.ReLU()), (3, 9),
     r"^data must be inputs of shape \(N, 2, W\), 2 channels"),
    (nn.Sequential(nn.LayerNorm(6), nn.Linear(6, 4)), (5,),
     r"^data must be inputs whose last dimensions are \(6,\), the normalized_shape"),
    (nn.Linear(7, 4), (3,), r"^data must be inputs of width 7 along the last dimension, the "
                            r"in_features of the model, a Linear \(got \(40, 3\)\)$"),
])
def test_each_kind_of_first_layer_names_what_it_takes(model, shape, message):
    with pytest.raises(ConfigError, match=message):
        measure_model(model, _data(*shape), layers=["input"])


def test_token_ids_beyond_the_vocabulary_are_refused():
    model = nn.Sequential(nn.Embedding(20, 8), nn.Flatten(), nn.Linear(24, 4))
    with pytest.raises(ConfigError, match=r"^data must be integer token ids in \[0, 20\), the "
                                          r"num_embeddings of the model's first layer '0'"):
        measure_model(model, _data(3, integer=True), layers=["1"])
    x, y = _data(3, integer=True)
    assert measure_model(model, (x % 20, y), layers=["1"])["load_curve"].notnull().all()


def test_the_recorder_refuses_at_its_first_measurement():
    recorder = LoadCurveRecorder(MLP, _data(10))  # the names are checked at creation
    with pytest.raises(ConfigError, match=r"^data must be inputs of width 7"):
        recorder(0)


class _OwnWeight(nn.Module):
    """A model with a parameter of its own, used before any child: its children see the
    input only after it, so no child's width is the data's."""

    def __init__(self):
        super().__init__()
        self.project = nn.Parameter(torch.randn(10, 7))
        self.body = nn.Sequential(nn.Linear(7, 8), nn.ReLU(), nn.Linear(8, 4))

    def forward(self, x):
        return self.body(x @ self.project)


class _PerSample(nn.Module):
    """A model that runs its convolution on one unbatched sample at a time (torch takes
    (C, H, W) as well as (N, C, H, W))."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(2, 3, 3)
        self.head = nn.Linear(3 * 4 * 4, 4)

    def forward(self, x):
        return self.head(torch.stack([self.conv(sample) for sample in x]).flatten(1))


@pytest.mark.parametrize(("model", "shape", "layers"), [
    (_PerSample(), (2, 6, 6), ["input", "head"]),
    (MLP, (7,), None),
    (nn.Sequential(nn.Flatten(), nn.Linear(49, 8), nn.ReLU(), nn.Linear(8, 4)), (1, 7, 7), None),
    (nn.Sequential(nn.Conv2d(1, 4, 3), nn.ReLU(), nn.Flatten(), nn.LazyLinear(4)), (1, 6, 6),
     None),
    (nn.Sequential(nn.LazyLinear(8), nn.ReLU(), nn.Linear(8, 4)), (5,), None),
    (_OwnWeight(), (10,), ["input", "body.1"]),
])
def test_data_that_fit_are_measured_as_before(model, shape, layers):
    ds = measure_model(model, _data(*shape), layers)
    assert ds["load_curve"].sizes["layer"] >= 2 and ds["load_curve"].notnull().all()


def test_the_check_runs_once_and_leaves_no_hook():
    model = nn.Sequential(nn.Linear(7, 8), nn.ReLU(), nn.Linear(8, 4))
    features = Features(model, ["1"])
    x, _ = _data(7)
    features(x, 40)
    assert not model[0]._forward_pre_hooks  # the check's hooks are gone after the first pass
    features.remove()
    assert not model[1]._forward_hooks
    assert input_check(nn.ReLU(), "r") is None  # no parameters, nothing to check
