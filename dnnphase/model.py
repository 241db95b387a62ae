"""The reference single network: the paper's MLP (Eq. 1, SM S3).

::

    x ─ BatchNorm1d ─┬─ [Linear ─ BatchNorm1d ─ LeakyReLU(α) ─┬─ Dropout(p)] × L ─ Linear ─ logits
                     h_0                                      h_ℓ

``MLP`` is a plain ``nn.Module`` with PyTorch's default initialisation. It is
the *definition* the stacked models (:mod:`dnnphase.stack`, trained by
:mod:`dnnphase.train`) must reproduce, and
the one-model-at-a-time baseline of the tests and the benchmark.

Features (the input of the separation metrics): ``h_0`` is the input after the
input BatchNorm (the raw input when BatchNorm is off); ``h_ℓ`` (ℓ = 1..L) is the
output of the ℓ-th LeakyReLU, taken **before** dropout. Dropout is a training-time
perturbation, not part of the representation: in eval mode (where the load curves
are measured) the two choices coincide, and taking features before dropout keeps
training-mode features free of the mask's 1/(1−p) rescaling and zeros.
"""

from __future__ import annotations

import torch
from torch import nn

from .defaults import DEPTH, WIDTH
from .knobs import check

__all__ = ["MLP"]


class MLP(nn.Module):
    """MLP with ``depth`` hidden layers of ``width`` units (paper Eq. 1).

    Parameters
    ----------
    in_features, n_classes:
        Input dimension d and number of classes C.
    depth:
        Number L of hidden layers (Linear → BatchNorm1d → LeakyReLU → Dropout);
        ``depth = 0`` is a linear classifier on the normalised input.
    width:
        Hidden width n.
    alpha:
        LeakyReLU negative slope α ∈ [0, 1] (0 = ReLU, 1 = linear).
    dropout:
        Dropout probability p ∈ [0, 1) after every hidden activation. Both ranges are
        :mod:`dnnphase.knobs`' (a bad value is its ConfigError).
    batchnorm:
        BatchNorm1d on the input and after every hidden Linear (default on).
    bias:
        Biases of the Linear maps (default on, as ``nn.Linear``).
    bn_eps, bn_momentum:
        BatchNorm1d's ``eps`` and ``momentum`` (PyTorch defaults).

    Construction order (for seeding): the hidden Linear layers first to last,
    then the output Linear; BatchNorm layers draw no random numbers. So an MLP
    built right after ``torch.manual_seed(s)`` is a deterministic function of s.
    """

    def __init__(
        self,
        in_features: int,
        n_classes: int,
        depth: int = DEPTH,
        width: int = WIDTH,
        alpha: float = 0.0,
        dropout: float = 0.0,
        batchnorm: bool = True,
        bias: bool = True,
        bn_eps: float = 1e-5,
        bn_momentum: float = 0.1,
    ) -> None:
        super().__init__()
        if depth < 0 or width < 1 or in_features < 1 or n_classes < 1:
            raise ValueError("depth must be >= 0 and width, in_features, n_classes >= 1")
        check("alpha", alpha)
        check("dropout", dropout)
        self.in_features = in_features
        self.n_classes = n_classes
        self.depth = depth
        self.width = width
        self.alpha = float(alpha)
        self.dropout = float(dropout)
        self.batchnorm = batchnorm
        self.bias = bias

        def norm(n: int) -> nn.Module:
            if not batchnorm:
                return nn.Identity()
            return nn.BatchNorm1d(n, eps=bn_eps, momentum=bn_momentum)

        self.input_bn = norm(in_features)
        dims = [in_features] + [width] * depth
        self.linears = nn.ModuleList(
            nn.Linear(dims[i], dims[i + 1], bias=bias) for i in range(depth)
        )
        self.norms = nn.ModuleList(norm(width) for _ in range(depth))
        self.act = nn.LeakyReLU(self.alpha)
        self.drop = nn.Dropout(self.dropout)
        self.out = nn.Linear(dims[-1], n_classes, bias=bias)

    def forward(
        self, x: torch.Tensor, return_features: bool = False
    ) -> torch.Tensor | tuple[torch.Tensor, list[torch.Tensor]]:
        """Logits ``(N, C)`` for inputs ``x`` ``(N, d)``.

        With ``return_features=True`` also the list ``[h_0, ..., h_L]`` of
        per-layer features, ``h_0`` ``(N, d)`` and ``h_ℓ`` ``(N, n)`` (see the module
        docstring: after the activation, before dropout).
        """
        h = self.input_bn(x)  # (N, d)
        feats = [h]
        for lin, bn in zip(self.linears, self.norms, strict=True):
            h = self.act(bn(lin(h)))  # (N, n)
            feats.append(h)
            h = self.drop(h)
        logits = self.out(h)  # (N, C)
        return (logits, feats) if return_features else logits

    def extra_repr(self) -> str:
        return (
            f"depth={self.depth}, width={self.width}, alpha={self.alpha}, dropout={self.dropout}, "
            f"batchnorm={self.batchnorm}, bias={self.bias}"
        )
