"""Training one network on a regression task with the mean squared error (paper SM S5).

The stacked trainer (:mod:`dnnphase.training.loop`) is cross-entropy on class labels; a
regression network is trained here, one model at a time: the paper's MLP
(:class:`dnnphase.networks.mlp.MLP` with as many outputs as targets), Adam, mini-batches
drawn by the model's own seed, the loss ``mean((f(x) - t)^2)``. Small (seconds a model
on the paper's 2 560 samples), and enough for the supplement's Fig. S12.

* :func:`digit_value_targets` — the regression task on the paper's digits: each image's
  digit as a number, scaled to [0, 1];
* :func:`train_regression` — one network trained with MSE -> the model and its last
  training loss.
"""

from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F

from dnnphase.defaults import DEPTH, EPOCHS, LR, WIDTH
from dnnphase.knobs import check
from dnnphase.networks.mlp import MLP
from phasecore.checks import is_finite, is_int, require

__all__ = ["digit_value_targets", "train_regression"]


def digit_value_targets(labels) -> np.ndarray:
    """The regression targets of digit images: t = label / 9, shape (N, 1) float32, in [0, 1].

    labels : (N,) integers 0..9 (the digit each image shows).
    """
    y = np.asarray(labels)
    require(y.ndim == 1 and y.size > 0 and np.issubdtype(y.dtype, np.integer)
            and int(y.min()) >= 0 and int(y.max()) <= 9, "labels",
            "a non-empty (N,) array of digits 0..9", f"shape {y.shape}, dtype {y.dtype}")
    return (y.astype(np.float32) / 9.0)[:, None]


def _check(x, t, alpha, dropout, lr, epochs, batch_size, seed, depth, width):
    require(x.ndim == 2 and x.shape[0] >= 2, "x", "an (N, d) array with N >= 2",
            f"shape {tuple(x.shape)}")
    require(t.ndim == 2 and t.shape[0] == x.shape[0], "targets",
            f"an (N, m) array with N = {x.shape[0]}", f"shape {tuple(t.shape)}")
    check("alpha", alpha)
    check("dropout", dropout)
    require(is_finite(lr) and lr > 0, "lr", "a number > 0", lr)
    require(is_int(epochs) and epochs >= 1, "epochs", "an integer >= 1", epochs)
    require(batch_size is None or (is_int(batch_size) and 1 <= batch_size <= x.shape[0]),
            "batch_size", f"None (full batch) or an integer in 1..{x.shape[0]}", batch_size)
    require(is_int(seed) and seed >= 0, "seed", "an integer >= 0", seed)
    require(is_int(depth) and depth >= 1, "depth", "an integer >= 1", depth)
    require(is_int(width) and width >= 1, "width", "an integer >= 1", width)


def train_regression(x, targets, *, alpha: float = 0.0, dropout: float = 0.0,
                     lr: float = LR, epochs: int = EPOCHS, batch_size: int | None = None,
                     seed: int = 0, depth: int = DEPTH, width: int = WIDTH):
    """Train the paper's MLP on (x, targets) with Adam and the mean squared error.

    Parameters
    ----------
    x : (N, d) float array, the inputs.
    targets : (N, m) float array, the regression targets (e.g. :func:`digit_value_targets`).
    alpha, dropout : LeakyReLU slope in [0, 1] and dropout probability (the knobs' ranges).
    lr : Adam's learning rate (> 0).
    epochs : passes over the data (>= 1); no early stop.
    batch_size : None (full batch, the paper's default) or 1..N; batches are a fresh
        permutation each epoch, drawn from ``seed``.
    seed : initialisation, dropout masks and batches (torch's global generator is seeded
        with it, as the stacked trainer's models are built).
    depth, width : hidden layers L and their width.

    Returns
    -------
    model : :class:`dnnphase.networks.mlp.MLP` in eval mode (float32, CPU).
    loss : float, the mean squared error of the last epoch's last batch (targets' units²).
    """
    x = torch.as_tensor(np.asarray(x, dtype=np.float32))
    t = torch.as_tensor(np.asarray(targets, dtype=np.float32))
    _check(x, t, alpha, dropout, lr, epochs, batch_size, seed, depth, width)
    old_threads = torch.get_num_threads()
    torch.set_num_threads(1)  # one intra-op thread, as the stacked trainer's CPU default
    try:
        model, loss = _fit(x, t, alpha, dropout, lr, epochs, batch_size, seed, depth, width)
    finally:
        torch.set_num_threads(old_threads)
    model.eval()
    return model, float(loss.detach())


def _fit(x, t, alpha, dropout, lr, epochs, batch_size, seed, depth, width):
    """:func:`train_regression`'s loop on checked tensors -> (model, last loss tensor)."""
    torch.manual_seed(seed)
    model = MLP(x.shape[1], t.shape[1], depth=depth, width=width, alpha=alpha,
                dropout=dropout)
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    order = torch.Generator().manual_seed(seed)
    n = x.shape[0]
    step = n if batch_size is None else batch_size
    model.train()
    loss = torch.tensor(float("nan"))
    for _ in range(epochs):
        perm = torch.randperm(n, generator=order)
        for start in range(0, n, step):
            idx = perm[start:start + step]
            if idx.numel() < 2:  # BatchNorm needs two samples
                continue
            loss = F.mse_loss(model(x[idx]), t[idx])
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
    return model, loss
