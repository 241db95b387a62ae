"""On a CUDA device: captured training steps (CUDA graphs) against eager steps.

Skipped without CUDA (CI has none); run on a GPU with ``python -m pytest tests/test_cuda.py``.
A replayed graph runs the same kernels on the same inputs as the eager step, so every
comparison here is bit for bit, through everything that changes a stack between
captures: retired models, learning-rate runs, schedules, label noise and SGD.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from dnnphase import loop
from dnnphase.train import TrainConfig, train_ensemble

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")

N, D, C = 120, 12, 3


@pytest.fixture(scope="module")
def data():
    g = torch.Generator().manual_seed(3)
    centres = 2.0 * torch.randn(C, D, generator=g)
    y = torch.randint(0, C, (N,), generator=g)
    x = centres[y] + 2.0 * torch.randn(N, D, generator=g)
    return x.cuda(), y.cuda()


def train(data, graphs: bool, monkeypatch, **kw):
    monkeypatch.setattr(loop, "CUDA_GRAPHS", graphs)
    x, y = data
    cfg = dict(epochs=6, loss_threshold=0.0, rel_tol=0.0, device="cuda", record_every=2)
    cfg.update(kw.pop("config", {}))
    return train_ensemble(x, y, config=TrainConfig(**cfg), depth=3, width=16,
                          batch_size=kw.pop("batch_size", 10), **kw)


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
    dict(seeds=[0, 1, 2], batch_size=[5, 20, 5], dropout=0.1),
], ids=["alpha-dropout", "lr-runs-noise", "sgd", "schedule", "retiring", "batch-groups"])
def test_graph_steps_equal_eager_steps(data, monkeypatch, kw):
    eager = train(data, False, monkeypatch, **dict(kw))
    graph = train(data, True, monkeypatch, **dict(kw))
    assert_same(eager, graph)


def test_cnn_graph_steps_equal_eager_steps(data, monkeypatch):
    x, y = data
    images = (torch.cat([x, x[:, :4]], dim=1), y)  # (N, 16): 1 x 4 x 4 images
    kw = dict(seeds=[0, 1], arch="cnn", image_shape=(1, 4, 4), channels=4, dropout=0.1)
    assert_same(train(images, False, monkeypatch, **kw), train(images, True, monkeypatch, **kw))


def test_float64_cuda_matches_cpu(data, monkeypatch):
    """The same integers drive masks and noise on both devices: load curves and
    parameters agree to rounding."""
    x, y = data
    runs = []
    for dev in ("cpu", "cuda"):
        monkeypatch.setattr(loop, "CUDA_GRAPHS", True)
        cfg = TrainConfig(epochs=4, batch_size=10, dtype=torch.float64, device=dev,
                          loss_threshold=0.0, rel_tol=0.0)
        runs.append(train_ensemble(x.double().to(dev), y.to(dev), seeds=[0, 1], dropout=0.2,
                                   label_noise=0.2, depth=3, width=16, config=cfg))
    for pa, pb in zip(runs[0].model.parameters(), runs[1].model.parameters(), strict=True):
        torch.testing.assert_close(pa.cpu(), pb.cpu(), rtol=0, atol=1e-10)
