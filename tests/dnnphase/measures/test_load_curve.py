"""measure_model / LoadCurveRecorder: the load curve of any nn.Module, streamed in batches.

Oracles: the sweep's own measurement of the same features (separation.measure_layers on
features in memory), a one-batch computation, and the numpy reference (metrics)."""

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
from torch import nn

from dnnphase import metrics, separation
from dnnphase.measures.load_curve import LoadCurveRecorder, default_layers, measure_model
from dnnphase.measures.separation_torch import LayerAccumulator
from dnnphase.networks.architecture import Architecture
from dnnphase.networks.cnn import CNN
from dnnphase.training.train import TrainConfig, train_ensemble
from phasecore.checks import ConfigError
from tests.rounding import assert_close_across_kernels

ROOT = Path(__file__).resolve().parents[3]
ALL = metrics.MEASURE_NAMES
F64 = torch.float64


def _blobs(n=300, d=12, k=4, seed=0, dtype=F64):
    g = torch.Generator().manual_seed(seed)
    y = torch.randint(0, k, (n,), generator=g)
    centres = torch.randn(k, d, generator=g, dtype=dtype) * 1.5
    return centres[y] + torch.randn(n, d, generator=g, dtype=dtype), y


# ---- the streamed statistics ------------------------------------------------------------


def test_accumulator_in_batches_equals_features_in_memory():
    """Every measure, several models, classes met first in later batches, a model with
    NaN features, batches in another order in pass 2."""
    g = torch.Generator().manual_seed(1)
    n, d = 400, 9
    y = torch.cat([torch.zeros(50, dtype=torch.long), torch.randint(0, 5, (n - 50,), generator=g)])
    y[-3:] = 7  # a class that appears in the last batch only
    h = torch.randn(3, n, d, generator=g, dtype=F64) + y[None, :, None] * 0.4
    h[2, 10, 3] = float("nan")
    full = separation.measure_layers([h], y, ALL)[:, :, 0]
    acc = LayerAccumulator(ALL)
    cuts = [0, 37, 150, 151, 399, n]
    for a, b in zip(cuts, cuts[1:], strict=False):
        acc.add_means(h[:, a:b], y[a:b])
    acc.end_means()
    for a, b in reversed(list(zip(cuts, cuts[1:], strict=False))):
        acc.add_residuals(h[:, a:b], y[a:b])
    streamed = acc.values()
    assert torch.isnan(streamed[2]).all() and torch.isnan(full[2]).all()
    np.testing.assert_allclose(streamed[:2], full[:2], rtol=1e-12, atol=1e-13)
    # and the numpy reference, per model
    for m in range(2):
        for j, name in enumerate(ALL):
            ref = metrics.load_curve([h[m].numpy()], y.numpy(), name)[0]
            assert abs(float(streamed[m, j]) - ref) <= 1e-10 * max(1.0, abs(ref)), name


def test_regression_with_fewer_samples_per_batch_than_columns():
    """The R factor of a batch with n < d + K rows: the merged least-squares fit is exact."""
    x, y = _blobs(n=60, d=25, k=3, seed=2)
    ref = metrics.load_curve([x.numpy()], y.numpy(), "regression")[0]
    acc = LayerAccumulator(["regression"])
    for a in range(0, 60, 7):
        acc.add_means(x[None, a:a + 7], y[a:a + 7])
    acc.end_means()
    for a in range(0, 60, 7):
        acc.add_residuals(x[None, a:a + 7], y[a:a + 7])
    assert abs(float(acc.values()[0, 0]) - ref) < 1e-12


def test_the_second_pass_must_see_the_first_passes_samples():
    x, y = _blobs()
    acc = LayerAccumulator(["trace_ratio"])
    acc.add_means(x[None], y)
    acc.end_means()
    acc.add_residuals(x[None, :200], y[:200])  # a sample set that lost its last batch
    with pytest.raises(ConfigError, match="data.*same samples"):
        acc.values()
    acc = LayerAccumulator(["trace_ratio"])
    acc.add_means(x[None], y)
    acc.end_means()
    acc.add_residuals((x + 0.1 * torch.randn_like(x))[None], y)  # augmented differently
    with pytest.raises(ConfigError, match="data.*same features"):
        acc.values()


# ---- measure_model against the sweep's measurement ---------------------------------------


def test_an_mlp_measured_as_a_module_equals_the_sweeps_measurement():
    """The same trained weights: the sweep's path (EnsembleMLP features, measure_layers)
    and measure_model on the plain nn.Module MLP agree to 1e-10 (float64)."""
    x, y = _blobs(n=256, d=10, k=3, seed=3)
    cfg = TrainConfig(epochs=15, lr=1e-2, dtype="float64")
    result = train_ensemble(x, y, seeds=[0], alpha=0.3, dropout=0.1, config=cfg,
                            network=Architecture(depth=3, width=16))
    sweep = separation.measure_layers(result.features(), y, ALL)[0].numpy()  # (measures, L+1)
    mlp = result.model.to_models()[0]
    ds = measure_model(mlp, (x, y), layers=["input_bn", "act"], measures=ALL, batch_size=50)
    assert list(ds.layer.values) == ["input_bn", "act", "act#2", "act#3"]
    np.testing.assert_allclose(ds.load_curve.values, sweep, rtol=1e-10, atol=1e-12)
    assert mlp.training  # the flag is restored


def test_a_cnn_streamed_equals_one_batch():
    torch.manual_seed(0)
    cnn = CNN((1, 8, 8), 3, depth=3, channels=4).double()
    x, y = _blobs(n=240, d=64, k=3, seed=4)
    layers = ["input_bn", "up"]  # the normalised input, then each upsampling's output
    one = measure_model(cnn, (x, y), layers, ALL, batch_size=10_000)
    streamed = measure_model(cnn, (x, y), layers, ALL, batch_size=32)
    assert list(one.layer.values) == ["input_bn", "up", "up#2", "up#3"]
    np.testing.assert_allclose(streamed.load_curve.values, one.load_curve.values,
                               rtol=1e-10, atol=1e-12)
    # one batch is the sweep's computation on the CNN's own features, exactly
    cnn.eval()
    with torch.no_grad():
        _, feats = cnn(x, return_features=True)
    direct = separation.measure_layers([f[None] for f in feats], y, ALL)[0].numpy()
    np.testing.assert_array_equal(one.load_curve.values, direct)
    assert measure_model(cnn, (x, y)).layer.values.tolist() == ["input", "act", "act#2",
                                                                  "act#3"]


def test_data_forms_give_the_same_result_and_splits_become_a_dimension():
    x, y = _blobs(n=200, d=8, k=3, seed=5, dtype=torch.float32)
    torch.manual_seed(1)
    model = nn.Sequential(nn.Linear(8, 16), nn.Tanh(), nn.Linear(16, 16), nn.ReLU(),
                          nn.Linear(16, 3))
    base = measure_model(model, (x.numpy(), y.numpy()), batch_size=64)
    dataset = torch.utils.data.TensorDataset(x, y)
    for form in (dataset, torch.utils.data.DataLoader(dataset, batch_size=33),
                 [(x[:120], y[:120]), (x[120:], y[120:])]):
        # other batch sizes run other matmul kernels on the float32 features: equal to
        # rounding along the three Linear layers' reductions, not bit for bit
        assert_close_across_kernels(measure_model(model, form).load_curve, base.load_curve,
                                    torch.float32, [8, 16, 16])
    both = measure_model(model, {"train": (x[:150], y[:150]), "test": (x[150:], y[150:])})
    assert both.load_curve.dims == ("split", "measure", "layer")
    assert list(both.split.values) == ["train", "test"]
    assert both.n_samples.values.tolist() == [150, 50]
    assert list(base.layer.values) == ["input", "1", "3"] == default_layers(model)
    assert base.depth.values.tolist() == [0, 1, 2]
    assert "dnnphase.measure_model" == base.attrs["kind"] and "versions" in base.attrs


def test_default_layers_of_blocks_without_top_level_activations():
    blocks = nn.Sequential(nn.Sequential(nn.Linear(4, 4), nn.ReLU()),
                           nn.Sequential(nn.Linear(4, 4), nn.ReLU()), nn.Linear(4, 2))
    assert default_layers(blocks) == ["input", "0", "1"]


class _Residual(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.lin, self.act = nn.Linear(d, d, dtype=F64), nn.ReLU()

    def forward(self, h):
        return h + self.act(self.lin(h))


class _TokenBlocks(nn.Module):
    """The everyday transformer/MLP pattern: an embedding, blocks in an nn.ModuleList
    (which has no forward pass of its own: the model calls each block), a head."""

    def __init__(self, vocab=10, d=8, k=3):
        super().__init__()
        self.embed = nn.Embedding(vocab, d, dtype=F64)
        self.blocks = nn.ModuleList(_Residual(d) for _ in range(3))
        self.head = nn.Linear(d, k, dtype=F64)

    def forward(self, tokens):
        h = self.embed(tokens)  # (N, T, d)
        for block in self.blocks:
            h = block(h)
        return self.head(h.mean(1))


def test_default_layers_descend_into_a_module_list_of_blocks():
    g = torch.Generator().manual_seed(4)
    y = torch.randint(0, 3, (120,), generator=g)
    tokens = (y[:, None] * 3 + torch.randint(0, 4, (120, 5), generator=g)) % 10
    torch.manual_seed(2)
    model = _TokenBlocks()
    names = ["input", "embed", "blocks.0", "blocks.1", "blocks.2"]
    assert default_layers(model) == names
    ds = measure_model(model, (tokens, y), measures=ALL, batch_size=50)
    assert list(ds.layer.values) == names and np.isfinite(ds.load_curve).all()
    # the blocks' own outputs are measured: the sweep's computation on them, by hand
    with torch.no_grad():
        feats = [tokens.to(F64), model.embed(tokens)]
        for block in model.blocks:
            feats.append(block(feats[-1]))
    direct = separation.measure_layers([f.reshape(120, -1)[None] for f in feats], y, ALL)
    np.testing.assert_allclose(ds.load_curve.values, direct[0].numpy(), rtol=1e-10,
                               atol=1e-12)


def test_default_layers_descend_into_nested_containers_and_keep_running_ones():
    inner = nn.ModuleDict({"a": nn.Linear(4, 4), "b": nn.Sequential(nn.Linear(4, 4))})
    model = nn.Module()
    model.stem = nn.Linear(4, 4)
    model.stages = nn.ModuleList([inner, nn.Linear(4, 4)])
    model.head = nn.Linear(4, 2)
    # the ModuleList and the ModuleDict never run, the Sequential does: a block, not opened
    assert default_layers(model) == ["input", "stem", "stages.0.a", "stages.0.b", "stages.1"]
    acts = nn.Module()
    acts.layers = nn.ModuleList([nn.Linear(4, 4), nn.ReLU(), nn.Linear(4, 4), nn.Tanh()])
    acts.head = nn.Linear(4, 2)
    assert default_layers(acts) == ["input", "layers.1", "layers.3"]


def test_default_layers_example_runs():
    import doctest

    from dnnphase.measures import load_curve
    found = doctest.DocTestFinder().find(load_curve.default_layers, globs={
        "default_layers": default_layers})
    runner = doctest.DocTestRunner()
    for test in found:
        runner.run(test)
    assert runner.summarize().attempted >= 2 and runner.summarize().failed == 0


class _TupleOut(nn.Module):
    def __init__(self):
        super().__init__()
        self.rnn = nn.GRU(3, 5, batch_first=True)
        self.head = nn.Linear(5, 2)

    def forward(self, x):
        out, _ = self.rnn(x)  # (N, T, 5), a tuple output: the first tensor is measured
        return self.head(out[:, -1])


def test_a_module_with_tuple_output_is_measured_by_its_first_tensor():
    g = torch.Generator().manual_seed(0)
    x, y = torch.randn(40, 6, 3, generator=g), torch.arange(40) % 2
    ds = measure_model(_TupleOut(), (x, y), layers=["input", "rnn"], measures=["trace_ratio"])
    assert ds.load_curve.shape == (1, 2) and np.isfinite(ds.load_curve).all()


# ---- bad input: one clear error, before the work ------------------------------------------


class _Skips(nn.Module):
    def __init__(self):
        super().__init__()
        self.used, self.unused = nn.Linear(4, 3), nn.Linear(4, 3)

    def forward(self, x):
        return self.used(x)


class _Augments(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 3)

    def forward(self, x):
        return self.lin(x + torch.randn_like(x))  # random even in eval mode


@pytest.mark.parametrize("call,match", [
    (lambda m, x, y: measure_model(m, (x, y), layers=["nope"]), "layers.*nope"),
    (lambda m, x, y: measure_model(_Skips(), (x, y), layers=["unused"]),
     "layers.*produced no output"),
    (lambda m, x, y: measure_model(m, (x, y[:-1])), "labels"),
    (lambda m, x, y: measure_model(m, (x, y[:, None])), "labels"),
    (lambda m, x, y: measure_model(m, (x, y.double())), "labels.*integer"),
    (lambda m, x, y: measure_model(m, iter([(x, y)])), "data.*one-shot"),
    (lambda m, x, y: measure_model(m, 3), "data"),
    (lambda m, x, y: measure_model(m, (x, y), measures=["entropy"]), "measures"),
    (lambda m, x, y: measure_model(m, (x, y), batch_size=0), "batch_size"),
    (lambda m, x, y: measure_model("model", (x, y)), "model"),
    (lambda m, x, y: measure_model(_Augments(), (x, y), layers=["lin"]), "same features"),
    (lambda m, x, y: measure_model(m, (x, torch.zeros_like(y))), "at least 2 classes"),
    (lambda m, x, y: LoadCurveRecorder(m, (x, y), every=0), "every"),
    (lambda m, x, y: LoadCurveRecorder(m, (x, y), layers=["0", "zzz"]), "layers.*zzz"),
])
def test_bad_input_is_a_config_error_naming_the_parameter(call, match):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 6), nn.ReLU(), nn.Linear(6, 3))
    x, y = torch.randn(30, 4), torch.arange(30) % 3
    with pytest.raises(ConfigError, match=match):
        call(model, x, y)
    assert not model._forward_hooks and not model[1]._forward_hooks  # no hook left behind


# ---- the recorder --------------------------------------------------------------------------


def test_recorder_follows_training():
    x, y = _blobs(n=200, d=6, k=3, seed=6, dtype=torch.float32)
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(6, 32), nn.ReLU(), nn.Linear(32, 32), nn.ReLU(),
                          nn.Linear(32, 3))
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    recorder = LoadCurveRecorder(model, (x[:150], y[:150]), (x[150:], y[150:]), every=5)
    for epoch in range(21):
        recorder(epoch)
        loss = nn.functional.cross_entropy(model(x[:150]), y[:150])
        opt.zero_grad()
        loss.backward()
        opt.step()
    ds = recorder.result()
    assert ds.epoch.values.tolist() == [0, 5, 10, 15, 20]
    assert ds.load_curve.dims == ("epoch", "split", "measure", "layer")
    last = ds.load_curve.sel(split="train", measure="trace_ratio").values  # (epoch, layer)
    assert last[-1, -1] < last[0, -1] - 0.5  # training separated the last layer
    with pytest.raises(ConfigError, match="epoch.*later"):
        recorder(20)


# ---- memory stays flat as the data grow ----------------------------------------------------

_PEAK = """
import resource, sys, torch
from dnnphase.networks.cnn import CNN
from dnnphase.measures.load_curve import measure_model

class Images:  # 28 x 28 images made batch by batch: the data set is never in memory
    def __init__(self, n): self.n = n
    def __iter__(self):
        for a in range(0, self.n, 1000):
            g = torch.Generator().manual_seed(a)
            y = torch.randint(0, 10, (min(1000, self.n - a),), generator=g)
            yield torch.randn(len(y), 784, generator=g) + 0.1 * y[:, None], y

torch.set_num_threads(1)
torch.manual_seed(0)
model = CNN((1, 28, 28), 10, depth=2, channels=2)
measure_model(model, Images(2000), measures=["trace_ratio", "ncc"])  # warm up the allocator
base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
measure_model(model, Images(int(sys.argv[1])), measures=["trace_ratio", "ncc"])
print((resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - base) / 1024)
"""


def test_streaming_memory_does_not_grow_with_the_data():
    """Peak memory (MB above a warmed-up baseline) at 10 000 and 30 000 images of 28 x 28:
    equal within a few MB, while one layer's features of the 20 000 more images alone would
    take 20 000 x 1 568 x 8 B = 250 MB more in float64 (the check has the power to see any
    leak of 250 B per image or more; at 60 000 images, as before, the time doubles for a
    bound of 100 B).

    glibc's malloc raises its mmap threshold as it sees large blocks freed, and then keeps
    later ones on its heap, so the peak drifts by tens of MB with the history of the
    process; a fixed threshold returns every large block, and the peak measures what the
    code holds (measured: 28.1, 28.5, 28.1, 28.1 MB at 10k, 30k, 60k, 120k images)."""
    env = {**os.environ, "MALLOC_MMAP_THRESHOLD_": str(64 * 1024)}
    grow = []
    for n in (10_000, 30_000):
        out = subprocess.run([sys.executable, "-c", _PEAK, str(n)], cwd=ROOT, env=env,
                             capture_output=True, text=True, timeout=600)
        assert out.returncode == 0, out.stderr
        grow.append(float(out.stdout.split()[-1]))
    assert abs(grow[1] - grow[0]) < 5, grow


def test_one_layer_name_as_a_string_is_refused_naming_layers():
    model = nn.Sequential(nn.Linear(4, 6), nn.ReLU(), nn.Linear(6, 2))
    x, y = torch.randn(20, 4), torch.arange(20) % 2
    for call in (lambda: measure_model(model, (x, y), layers="1"),
                 lambda: LoadCurveRecorder(model, (x, y), layers="1")):
        with pytest.raises(ConfigError, match=r"layers must be a list of module names"):
            call()
    assert list(measure_model(model, (x, y), layers=["1"])["layer"].values) == ["1"]


def test_a_default_block_that_does_not_run_is_named_with_a_hint():
    class Skips(nn.Module):
        def __init__(self):
            super().__init__()
            self.blocks = nn.ModuleList(nn.Linear(4, 4) for _ in range(3))
            self.head = nn.Linear(4, 2)

        def forward(self, x):
            for block in self.blocks[:2]:  # the last block is never called
                x = block(x)
            return self.head(x)

    x, y = torch.randn(20, 4), torch.arange(20) % 2
    with pytest.raises(ConfigError, match=r"default layers.*'blocks\.2'\] produced no output"):
        measure_model(Skips(), (x, y))
    with pytest.raises(ConfigError, match="forward pass \\(got") as err:
        measure_model(Skips(), (x, y), layers=["input", "blocks.2"])
    assert "default" not in str(err.value)
    ds = measure_model(Skips(), (x, y), layers=["input", "blocks.0", "blocks.1"])
    assert list(ds["layer"].values) == ["input", "blocks.0", "blocks.1"]
