"""Captured training steps (CUDA graphs) against eager steps, on every device there is.

On a CUDA device (``python -m pytest tests/cross/test_cuda.py`` on a GPU) a replayed graph
runs the same kernels on the same inputs as the eager step, so every comparison here is
bit for bit, through everything that changes a stack between captures: retired models,
learning-rate runs, schedules, label noise and SGD. Without CUDA (CI) every case still
builds its arguments and configuration and trains eagerly on the CPU, so that a changed
signature fails CI rather than a GPU run months later; only the graph comparisons and the
CPU-against-CUDA check need the device.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from dnnphase.networks.architecture import Architecture
from dnnphase.training import loop
from dnnphase.training.train import TrainConfig, train_ensemble

CUDA = torch.cuda.is_available()
needs_cuda = pytest.mark.skipif(not CUDA, reason="needs CUDA")
#: Every device here: the CPU always (the eager path), CUDA where there is one.
DEVICES = ["cpu", *(["cuda"] if CUDA else [])]

N, D, C = 120, 12, 3
NET = Architecture(depth=3, width=16)


@pytest.fixture(scope="module", params=DEVICES)
def data(request):
    g = torch.Generator().manual_seed(3)
    centres = 2.0 * torch.randn(C, D, generator=g)
    y = torch.randint(0, C, (N,), generator=g)
    x = centres[y] + 2.0 * torch.randn(N, D, generator=g)
    return x.to(request.param), y.to(request.param)


def on_cuda(data) -> bool:
    return data[0].is_cuda


@pytest.fixture
def captures(monkeypatch):
    """The number of graphs captured so far (a failed capture is not counted)."""
    made = []
    original = loop.TrainingStack._capture

    def counting(self, idx, keys):
        graph = original(self, idx, keys)
        made.extend([graph] if graph is not None else [])
        return graph

    monkeypatch.setattr(loop.TrainingStack, "_capture", counting)
    return made


def train(data, graphs: bool, monkeypatch, **kw):
    monkeypatch.setattr(loop, "CUDA_GRAPHS", graphs)
    x, y = data
    cfg = dict(epochs=6, loss_threshold=0.0, rel_tol=0.0, device=x.device.type, record_every=2)
    cfg.update(kw.pop("config", {}))
    return train_ensemble(x, y, config=TrainConfig(**cfg), network=kw.pop("network", NET),
                          batch_size=kw.pop("batch_size", 10), **kw)


def assert_trained(result, seeds):
    """An eager run on the CPU: one row per model, epochs recorded, every model stopped for
    a reason the trainer gives."""
    assert result.loss_history.shape[0] == len(seeds)
    epochs = [epoch for epoch, _ in result.snapshots]
    assert epochs[0] == 0 and epochs == sorted(epochs) and all(e % 2 == 0 for e in epochs)
    assert set(result.stop_reason) <= {"max_epochs", "loss_threshold", "plateau", "diverged"}
    finite = ~result.diverged
    assert torch.isfinite(result.train_loss[finite]).all()


def assert_same(a, b):
    for pa, pb in zip(a.model.parameters(), b.model.parameters(), strict=True):
        assert torch.equal(pa, pb)
    np.testing.assert_array_equal(a.loss_history.numpy(), b.loss_history.numpy())
    assert a.stop_reason == b.stop_reason
    assert torch.equal(a.steps_run, b.steps_run)
    for (ea, ra), (eb, rb) in zip(a.snapshots, b.snapshots, strict=True):
        assert ea == eb
        for fa, fb in zip(ra, rb, strict=True):  # features per layer, (M, N, F)
            assert torch.equal(fa, fb)


@pytest.mark.parametrize("kw", [
    dict(seeds=[0, 1, 2, 3], alpha=[0.0, 0.3, 0.6, 1.0], dropout=[0.0, 0.1, 0.2, 0.3]),
    dict(seeds=[0, 1, 2], lr=[1e-3, 1e-2, 1e-2], label_noise=[0.0, 0.2, 0.4], dropout=0.1),
    dict(seeds=[0, 1], dropout=0.2, config=dict(optimizer="sgd", momentum=0.9)),
    dict(seeds=[0, 1, 2], dropout=0.1,
         config=dict(schedule=((2, "dropout", 0.0), (3, "lr", 3e-3), (5, "dropout", None)))),
    # Some models stop early (loss threshold) or diverge (lr 50): the stack shrinks.
    dict(seeds=[0, 1, 2, 3], lr=[1e-2, 50.0, 1e-2, 1e-3], config=dict(loss_threshold=0.3)),
    # The only noisy model diverges: the stack goes on without label noise.
    dict(seeds=[0, 1, 2], lr=[1e-2, 1e-2, 50.0], label_noise=[0.0, 0.0, 0.3]),
    dict(seeds=[0, 1, 2], batch_size=[5, 20, 5], dropout=0.1),
    # Two steps an epoch: the warm-up steps and the capture fall in different epochs.
    dict(seeds=[0, 1], batch_size=60, dropout=0.1),
    # The papers' training: each model's own fixed labels (gathered in the step), the
    # learning rate divided by 10 twice, a model retiring (lr 50 diverges).
    dict(seeds=[0, 1, 2], lr=[1e-2, 50.0, 3e-2], random_labels=[0.0, 0.5, 0.75],
         config=dict(optimizer="sgd", momentum=0.9, weight_decay=5e-4, lr_drops=(0.3, 0.6))),
], ids=["alpha-dropout", "lr-runs-noise", "sgd", "schedule", "retiring", "noise-retired",
        "batch-groups", "two-steps", "papers-training"])
@pytest.mark.filterwarnings("error::RuntimeWarning")  # a failed capture would fall back
def test_graph_steps_equal_eager_steps(data, monkeypatch, captures, kw):
    eager = train(data, False, monkeypatch, **dict(kw))
    assert not captures
    if not on_cuda(data):
        assert_trained(eager, kw["seeds"])
        return
    graph = train(data, True, monkeypatch, **dict(kw))
    assert captures  # graphs were replayed, not only eager steps
    assert_same(eager, graph)


def test_foreach_adam_steps_are_not_captured(data, monkeypatch, captures):
    """foreach Adam reads its step count on the host, so a graph would freeze its bias
    correction at the captured step: such stacks train eagerly."""
    kw = dict(seeds=[0, 1], dropout=0.1, config=dict(fused=False))
    eager = train(data, False, monkeypatch, **dict(kw))
    if not on_cuda(data):
        assert_trained(eager, kw["seeds"])
        return
    graph = train(data, True, monkeypatch, **dict(kw))
    assert not captures
    assert_same(eager, graph)


@needs_cuda
def test_a_step_that_cannot_be_captured_trains_eagerly(data, monkeypatch, captures):
    if not on_cuda(data):
        pytest.skip("graph capture is CUDA's")
    """A host synchronisation inside the step fails its capture: one warning, the current
    stream restored, the rest of the run eager, and the same results."""
    kw = dict(seeds=[0, 1], dropout=0.1)
    eager = train(data, False, monkeypatch, **dict(kw))
    original = loop.TrainingStack._step

    def syncing(self, idx, keys):
        losses = original(self, idx, keys)
        if torch.cuda.is_current_stream_capturing():
            losses.sum().item()  # needs the host
        return losses

    monkeypatch.setattr(loop.TrainingStack, "_step", syncing)
    stream = torch.cuda.current_stream()
    with pytest.warns(RuntimeWarning, match="could not be captured") as caught:
        graph = train(data, True, monkeypatch, **dict(kw))
    assert len([w for w in caught if "could not be captured" in str(w.message)]) == 1
    assert torch.cuda.current_stream() == stream and not captures
    assert_same(eager, graph)


@pytest.mark.filterwarnings("error::RuntimeWarning")
def test_cnn_graph_steps_equal_eager_steps(data, monkeypatch, captures):
    x, y = data
    images = (torch.cat([x, x[:, :4]], dim=1), y)  # (N, 16): 1 x 4 x 4 images
    kw = dict(seeds=[0, 1], network=Architecture("cnn", depth=3, channels=4),
              image_shape=(1, 4, 4), dropout=0.1)
    eager = train(images, False, monkeypatch, **dict(kw))
    if not on_cuda(data):
        assert_trained(eager, kw["seeds"])
        return
    assert_same(eager, train(images, True, monkeypatch, **dict(kw)))
    assert captures


@needs_cuda
def test_float64_cuda_matches_cpu(data, monkeypatch):
    """The same integers drive masks and noise on both devices: load curves and
    parameters agree to rounding."""
    if not on_cuda(data):
        pytest.skip("compares the CPU with CUDA: runs once, with the CUDA data")
    x, y = data
    monkeypatch.setattr(loop, "CUDA_GRAPHS", True)
    runs = []
    for dev in ("cpu", "cuda"):
        cfg = TrainConfig(epochs=4, batch_size=10, dtype=torch.float64, device=dev,
                          loss_threshold=0.0, rel_tol=0.0)
        runs.append(train_ensemble(x.double().to(dev), y.to(dev), seeds=[0, 1], dropout=0.2,
                                   label_noise=0.2, network=NET, config=cfg))
    for pa, pb in zip(runs[0].model.parameters(), runs[1].model.parameters(), strict=True):
        torch.testing.assert_close(pa.cpu(), pb.cpu(), rtol=0, atol=1e-10)
