"""Measurement protocols: which features of a trained network a load curve is made of.

A load curve depends on more than the network: on the BatchNorm statistics the features are
normalised with, on what counts as layer 0 and on which module's output counts as a layer.
The papers' own code settles what their text leaves open, and it differs from the project's
measurement; each choice is named here, so that a network is measured either way.

:data:`PROTOCOLS`, by name:

* ``"ours"`` — the project's measurement: BatchNorm in eval mode (the running statistics
  gathered in training), layer 0 the input after the network's input BatchNorm, layer ℓ the
  output of hidden layer ℓ's activation. What every committed sweep was measured with.
* ``"he_su"`` — He & Su's: BatchNorm in *training* mode while measuring, each batch of
  :data:`HE_SU_BATCH` (100) consecutive samples, in the data's order, normalised by its own
  mean and (biased) variance (the last, partial batch by its own; the running statistics are
  left as they were); layer 0 the raw input ("D_0 is calculated from the raw data"; their
  networks have no input BatchNorm); layer ℓ after the activation.
* ``"galanti"`` — Galanti et al.'s: BatchNorm in eval mode; layer ℓ the output of hidden
  layer ℓ's ``Linear`` map, before its BatchNorm and activation; layer 0 the raw input (not a
  candidate of the effective depth, whose layers are 1..L).

Dropout is never applied while measuring (a network's features are taken before it).

A protocol is data (:class:`Protocol`); :func:`stack_features` computes a stack of MLPs'
features (:class:`dnnphase.networks.stack.EnsembleMLP`) under it, and
:func:`dnnphase.measures.load_curve.measure_model` measures any ``torch.nn.Module`` under it.
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import NamedTuple

import torch
from torch import nn
from torch.nn import functional as F

from phasecore.checks import require

__all__ = ["HE_SU_BATCH", "OURS", "PROTOCOLS", "Protocol", "batch_bounds", "check_protocol",
           "lookup", "stack_features", "training_mode_batchnorm"]

#: He & Su's measuring batch (their ``simple_test_batch_size``).
HE_SU_BATCH = 100


class Protocol(NamedTuple):
    """One measurement protocol (see the module's docstring).

    batchnorm : "eval" (running statistics) or "batch" (each measuring batch's own
        statistics, as BatchNorm in training mode).
    batch : samples per measuring batch with ``batchnorm="batch"`` (None with "eval", where
        the batch does not change the features).
    layers : "activation" (each hidden layer's output after its activation) or "linear"
        (each hidden ``Linear`` map's output, before BatchNorm and activation).
    input : "network" (layer 0 after the network's input BatchNorm, where it has one) or
        "raw" (the input as given).
    """

    batchnorm: str
    batch: int | None
    layers: str
    input: str


#: The protocols by name; ``"ours"`` is every function's default.
PROTOCOLS = {
    "ours": Protocol("eval", None, "activation", "network"),
    "he_su": Protocol("batch", HE_SU_BATCH, "activation", "raw"),
    "galanti": Protocol("eval", None, "linear", "raw"),
}
OURS = "ours"


def check_protocol(name, field: str = "protocol") -> str:
    """``name`` if it names a protocol of :data:`PROTOCOLS`, else a ConfigError naming
    ``field``."""
    require(isinstance(name, str) and name in PROTOCOLS, field,
            f"one of {', '.join(PROTOCOLS)} (the measurement: ours, He & Su's or Galanti "
            "et al.'s)", name)
    return name


def lookup(name: str) -> Protocol:
    """The :class:`Protocol` named ``name`` (checked)."""
    return PROTOCOLS[check_protocol(name)]


def batch_bounds(n: int, batch: int) -> list[tuple[int, int]]:
    """The measuring batches of n samples in order, ``batch`` each and the remainder last.
    A remainder of a single sample joins the batch before it (a batch's variance needs two
    samples; He & Su's own code would stop there)."""
    require(n >= 1 and batch >= 2, "batch", "at least 2 samples per measuring batch", batch)
    bounds = [(a, min(a + batch, n)) for a in range(0, n, batch)]
    if len(bounds) > 1 and bounds[-1][1] - bounds[-1][0] == 1:
        bounds[-2:] = [(bounds[-2][0], n)]
    return bounds


# --------------------------------------------------------------------------
# A stack of MLPs
# --------------------------------------------------------------------------


def _norm(model, u: torch.Tensor, i: int, batch_stats: bool) -> torch.Tensor:
    """The stack's BatchNorm i on ``u`` ``(B, M·F)``: the running statistics, or the batch's
    own (biased variance, as BatchNorm in training mode; nothing is updated)."""
    if batch_stats:
        return F.batch_norm(u, None, None, model.bn_weights[i].view(-1),
                            model.bn_biases[i].view(-1), True, 0.0, model.bn_eps)
    return F.batch_norm(u, model.running_mean(i).view(-1), model.running_var(i).view(-1),
                        model.bn_weights[i].view(-1), model.bn_biases[i].view(-1), False, 0.0,
                        model.bn_eps)


def _layers(model, x: torch.Tensor, p: Protocol) -> list[torch.Tensor]:
    """Features ``[h_0..h_L]`` (each ``(M, B, F)``) of one measuring batch ``x`` ``(B, d)``."""
    m, d, b = model.n_models, model.in_features, x.shape[0]
    batch_stats = p.batchnorm == "batch"
    bn = model.norm == "batchnorm"
    h = x.unsqueeze(1).expand(b, m, d)
    feats = [h] if p.input == "raw" else []
    if bn:
        h = _norm(model, h.reshape(b, m * d), 0, batch_stats).view(b, m, d)
    if p.input != "raw":
        feats.append(h)
    slope = model.alpha.view(1, m, 1)
    for i in range(model.depth):
        n = model.widths[i]
        z = torch.bmm(h.transpose(0, 1), model.weights[i]).transpose(0, 1)  # (B, M, n)
        if model.bias:
            z = z + model.biases[i].view(1, m, n)
        if p.layers == "linear":
            feats.append(z)
        u = _norm(model, z.reshape(b, m * n), i + 1, batch_stats).view(b, m, n) if bn else z
        h = torch.where(u >= 0, u, u * slope)  # LeakyReLU, each model's own slope
        if model.norm == "scale":
            h = h * model.act_scale.view(1, m, 1)
        if p.layers == "activation":
            feats.append(h)
    return [f.transpose(0, 1) for f in feats]


def stack_features(model, x: torch.Tensor, protocol: str = OURS,
                   stack_size: int | None = None) -> list[torch.Tensor]:
    """Features ``[h_0..h_L]`` of a stack of MLPs on ``x`` under ``protocol``.

    Parameters
    ----------
    model : dnnphase.networks.stack.EnsembleMLP
        M stacked MLPs (their parameters are read, nothing is changed).
    x : tensor (N, d)
        The samples, in the order the measuring batches take them.
    protocol : str
        A name of :data:`PROTOCOLS`. ``"ours"`` is the stack's own eval-mode features
        (:meth:`~dnnphase.networks.stack.StackedModels.features`, the same numbers).
    stack_size : int, optional
        Models per pass with ``"ours"`` (as ``features``).

    Returns
    -------
    list of L+1 tensors (M, N, F_ℓ), in the model's dtype and on its device.
    """
    p = lookup(protocol)
    if protocol == OURS:
        return model.features(x, stack_size=stack_size)
    from dnnphase.networks.stack import EnsembleMLP

    require(isinstance(model, EnsembleMLP), "protocol",
            f"{OURS} for a network other than a stack of MLPs (arch mlp or linear)", protocol)
    n = x.shape[0]
    bounds = batch_bounds(n, p.batch) if p.batchnorm == "batch" else [(0, n)]
    with torch.no_grad():
        parts = [_layers(model, x[a:b], p) for a, b in bounds]
    return [torch.cat(layer, dim=1) for layer in zip(*parts, strict=True)]


# --------------------------------------------------------------------------
# Any module
# --------------------------------------------------------------------------

_BATCHNORMS = (nn.BatchNorm1d, nn.BatchNorm2d, nn.BatchNorm3d, nn.SyncBatchNorm)


@contextmanager
def training_mode_batchnorm(model: nn.Module):
    """Within the block, ``model``'s BatchNorm modules normalise by each batch's own
    statistics (training mode) while every other module stays as it was (eval mode while
    measuring: no dropout); their running statistics and counters are restored afterwards,
    so measuring leaves the model as it found it."""
    norms = [mod for mod in model.modules() if isinstance(mod, _BATCHNORMS)]
    saved = [(mod, mod.training, {k: v.clone() for k, v in mod.named_buffers(recurse=False)
                                  if v is not None}) for mod in norms]
    try:
        for mod in norms:
            mod.train()
        yield
    finally:
        with torch.no_grad():
            for mod, was_training, buffers in saved:
                mod.train(was_training)
                for k, v in buffers.items():
                    getattr(mod, k).copy_(v)
