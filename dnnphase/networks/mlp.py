"""The reference single network: the paper's MLP (Eq. 1, SM S3).

::

    norm="batchnorm" (default, SM S3):
    x ─ BatchNorm1d ─┬─ [Linear ─ BatchNorm1d ─ LeakyReLU(α) ─┬─ Dropout(p)] × L ─ Linear ─ logits
                     h_0                                      h_ℓ
    norm="scale" (Eq. 1's constant c(α), :func:`activation_scale`):
    x ───────────────┬─ [Linear ─ LeakyReLU(α) ─ ×c(α) ───────┬─ Dropout(p)] × L ─ Linear ─ logits
    norm="none":
    x ───────────────┬─ [Linear ─ LeakyReLU(α) ───────────────┬─ Dropout(p)] × L ─ Linear ─ logits

``MLP`` is a plain ``nn.Module`` with PyTorch's default initialisation (or, with
``weight_init="orthogonal"``, random orthogonal weights and zero biases, the linear
network of the paper's Fig. 5(a)). It is the *definition* the stacked models
(:mod:`dnnphase.networks.stack`, trained by :mod:`dnnphase.training.train`) must reproduce, and
the one-model-at-a-time baseline of the tests and the benchmark.

Normalisation (``norm``, one of :data:`NORMS`): the paper's Eq. (1) multiplies each
hidden layer's features by an activation-dependent constant that keeps their scale
near 1 and "can be replaced by batch normalization", which its experiments do (SM S3;
there too the convex/concave pattern persists with the constant instead).
``"batchnorm"`` is the experiments' network, ``"scale"`` Eq. (1) itself with the
constant of :func:`activation_scale`, ``"none"`` neither (Fig. 5(a)).

The input: with ``"batchnorm"`` it passes the input BatchNorm; with ``"scale"`` and
``"none"`` it is used as given (Eq. (1) starts from x_0 = x, and Fig. 5(a) feeds the raw
orthogonal data). The data sets are **not** all standardised (:mod:`dnnphase.data`):
``mnist1d`` (standardised by its generator) and ``gmm`` (unit within-class variance)
have a per-feature second moment near 1, but the image sets are pixels in [0, 1]
(mean second moment ≈ 0.07 for ``mnist5k``, ≈ 0.24 for ``digits``) and the rows of
``orthogonal`` have unit norm (≈ 1/dim per feature). ``"scale"`` preserves the
second moment the input has, so there the hidden features keep the input's scale,
not 1 (and the biases weigh relatively more: see :func:`activation_scale`).

Features (the input of the separation metrics): ``h_0`` is the input after the
input BatchNorm (the raw input with ``"scale"`` and ``"none"``); ``h_ℓ``
(ℓ = 1..L) is the output of the ℓ-th LeakyReLU (times c(α) with ``"scale"``), taken
**before** dropout. Dropout is a training-time
perturbation, not part of the representation: in eval mode (where the load curves
are measured) the two choices coincide, and taking features before dropout keeps
training-mode features free of the mask's 1/(1−p) rescaling and zeros.
"""

from __future__ import annotations

import math

import torch
from torch import nn

from dnnphase.defaults import DEPTH, NORM, WIDTH
from dnnphase.knobs import check
from dnnphase.networks.spec import BN_EPS, BN_MOMENTUM
from phasecore.checks import is_int, require

__all__ = ["MLP", "NORMS", "WEIGHT_INITS", "activation_scale", "check_norm",
           "check_weight_init", "hidden_widths", "orthogonal_linear_"]

#: The hidden layers' normalisation: BatchNorm1d (the paper's experiments), Eq. (1)'s
#: constant c(α) (:func:`activation_scale`), or none.
NORMS = ("batchnorm", "scale", "none")
#: The Linear maps' initialisation: PyTorch's default, or random (semi-)orthogonal
#: weights with zero biases (:func:`orthogonal_linear_`; the paper's Fig. 5(a)).
WEIGHT_INITS = ("default", "orthogonal")

#: fan_in · Var(W_ij) of each initialisation: PyTorch's default U(±1/√fan_in) has
#: variance 1/(3 fan_in); an orthogonal square matrix has unit-norm rows.
_WEIGHT_VARIANCE = {"default": 1.0 / 3.0, "orthogonal": 1.0}


def check_norm(norm) -> str:
    """``norm`` if it is one of :data:`NORMS`, else a ConfigError naming ``norm``."""
    require(norm in NORMS, "norm", f"one of {', '.join(NORMS)}", norm)
    return norm


def check_weight_init(weight_init) -> str:
    """``weight_init`` if it is one of :data:`WEIGHT_INITS`, else a ConfigError."""
    require(weight_init in WEIGHT_INITS, "weight_init", f"one of {', '.join(WEIGHT_INITS)}",
            weight_init)
    return weight_init


def activation_scale(alpha: float, weight_init: str = "default") -> float:
    """Eq. (1)'s constant c(α): hidden features are ``c(α) · LeakyReLU_α(W h + b)``.

    **What it preserves**: the mean second moment q_ℓ = (1/n) Σ_i E[h_ℓ,i²] of the
    hidden features, from layer to layer, at initialisation.

    **Why that moment**: a Linear map with zero-mean weights independent of its input
    sees the input only through its second moment. With n inputs of mean second moment
    q, weights iid of mean 0 and variance v/n and biases of variance β/n, a
    pre-activation z_i = Σ_j W_ij h_j + b_i has mean 0 and variance s = v q + β/n —
    the features' mean enters s as much as their spread, so the centred variance is not
    what propagates. PyTorch's default initialisation has v = β = 1/3 (weights and
    biases U(±1/√fan_in)); an orthogonal square matrix has v = 1 (unit-norm rows) and
    zero biases.

    **Assumptions**: the weights and biases independent of the features and symmetric
    about 0 (true at initialisation), so that z_i is symmetric about 0; wide layers, so
    that z_i is Gaussian, z ~ N(0, s) (a sum of n independent terms). For z ~ N(0, s)
    each half-line carries half the mass: E[LeakyReLU_α(z)²] = s(1 + α²)/2 and
    E[LeakyReLU_α(z)] = √s (1 − α)/√(2π). The first identity needs only the symmetry,
    so the result below holds exactly in expectation over the weights at any width;
    width makes one network's moment concentrate on it (a relative scatter of about
    √(5ℓ/n) after ℓ ReLU layers, ≈ 0.3 at ℓ = 12, n = 512; less for larger α). The
    mean (and so the centred variance below) uses the Gaussian form.

    **Result**: E[q' | q] = c² (1 + α²)/2 · (v q + β/n); q' = q (neglecting the bias)
    gives

        c(α) = √(2 / ((1 + α²) v)),    default init: c(α) = √(6 / (1 + α²)),

    i.e. c(0) = √6 ≈ 2.449, c(0.5) = √4.8 ≈ 2.191, c(1) = √3 ≈ 1.732; with orthogonal
    weights c(α) = √(2/(1 + α²)) (He's LeakyReLU gain; c(1) = 1). The bias adds
    c²(1 + α²)/2 · β/n = 1/n per layer (default init), a slow drift
    E[q_ℓ] = q_0 + 1/d + (ℓ − 1)/n (+7 % at the paper's L = 7, n = 100 for q_0 = 1), left
    in so that c depends on α alone (tests/dnnphase/networks/test_mlp.py measures it). With
    orthogonal weights a first layer wider than its input (n > d) is an isometry and
    divides the per-unit moment once by n/d.

    **Centred variance**: the features are not centred. At second moment q their mean
    is μ with μ² = q (1 − α)²/(π (1 + α²)), so their variance is
    q (1 − (1 − α)²/(π (1 + α²))): (1 − 1/π) q ≈ 0.68 q for ReLU, ≈ 0.94 q at α = 0.5,
    q for the linear network.
    """
    check("alpha", alpha)
    check_weight_init(weight_init)
    return math.sqrt(2.0 / ((1.0 + float(alpha) ** 2) * _WEIGHT_VARIANCE[weight_init]))


def orthogonal_linear_(w: torch.Tensor, b: torch.Tensor | None,
                       generator: torch.Generator | None = None) -> None:
    """Random (semi-)orthogonal ``w`` ``(out, in)`` and zero ``b`` ``(out,)``, in place.

    ``nn.init.orthogonal_`` with gain 1: the QR decomposition of an ``(out, in)``
    standard Gaussian matrix (its transpose when out < in) drawn from ``generator``
    (None: torch's global one), Q's columns multiplied by the signs of R's diagonal
    (so that Q is Haar-distributed). ``w`` then has orthonormal columns (WᵀW = I) when
    out ≥ in and orthonormal rows (WWᵀ = I) when out < in.
    """
    with torch.no_grad():
        nn.init.orthogonal_(w, generator=generator)
        if b is not None:
            b.zero_()



def hidden_widths(depth: int, width) -> tuple[int, ...]:
    """The width of each hidden layer: ``width`` units in every one of the ``depth`` layers,
    or ``width`` a sequence of ``depth`` widths, one per layer (He & Su's Fig. 4 shapes:
    wide-narrow, narrow-wide). ConfigError naming ``width`` otherwise."""
    if is_int(width):
        require(width >= 1, "width", "an integer >= 1, or one integer >= 1 per hidden layer",
                width)
        return (int(width),) * depth
    if hasattr(width, "tolist"):  # a numpy or torch array (or scalar): plain Python values
        width = width.tolist()
        if is_int(width):
            return hidden_widths(depth, width)
    widths = tuple(width) if isinstance(width, (tuple, list)) else None
    require(widths is not None and len(widths) == depth
            and all(is_int(w) and w >= 1 for w in widths), "width",
            f"an integer >= 1, or a list of {depth} integers >= 1 (one per hidden layer)", width)
    return tuple(int(w) for w in widths)


class MLP(nn.Module):
    """MLP with ``depth`` hidden layers of ``width`` units (paper Eq. 1).

    Parameters
    ----------
    in_features, n_classes:
        Input dimension d and number of classes C.
    depth:
        Number L of hidden layers (Linear → BatchNorm1d → LeakyReLU → Dropout, or
        see ``norm``); ``depth = 0`` is a linear classifier on the (normalised) input.
    width:
        Hidden width n, or one width per hidden layer (:func:`hidden_widths`).
    alpha:
        LeakyReLU negative slope α ∈ [0, 1] (0 = ReLU, 1 = linear).
    dropout:
        Dropout probability p ∈ [0, 1) after every hidden activation. Both ranges are
        :mod:`dnnphase.knobs`' (a bad value is its ConfigError).
    norm:
        One of :data:`NORMS`: ``"batchnorm"`` (default) BatchNorm1d on the input and
        after every hidden Linear; ``"scale"`` no BatchNorm, each hidden activation
        times c(α) (:func:`activation_scale`, Eq. (1)); ``"none"`` neither. A bad name
        is a ConfigError.
    bias:
        Biases of the Linear maps (default on, as ``nn.Linear``).
    bn_eps, bn_momentum:
        BatchNorm1d's ``eps`` and ``momentum`` (PyTorch defaults).
    weight_init:
        One of :data:`WEIGHT_INITS`: ``"default"`` (``nn.Linear``'s own) or
        ``"orthogonal"`` (:func:`orthogonal_linear_`: random orthogonal weights, zero
        biases), drawn *instead of* the default ones from torch's global generator.

    Construction order (for seeding): the hidden Linear layers first to last,
    then the output Linear; BatchNorm layers draw no random numbers. So an MLP
    built right after ``torch.manual_seed(s)`` is a deterministic function of s
    (with ``"orthogonal"`` the generator is set back to its state before the default
    draws, so the orthogonal weights are the first numbers drawn after the seed).
    """

    def __init__(
        self,
        in_features: int,
        n_classes: int,
        depth: int = DEPTH,
        width: int | tuple[int, ...] = WIDTH,
        alpha: float = 0.0,
        dropout: float = 0.0,
        norm: str = NORM,
        bias: bool = True,
        bn_eps: float = BN_EPS,
        bn_momentum: float = BN_MOMENTUM,
        *,
        weight_init: str = "default",
    ) -> None:
        super().__init__()
        if depth < 0 or in_features < 1 or n_classes < 1:
            raise ValueError("depth must be >= 0 and width, in_features, n_classes >= 1")
        widths = hidden_widths(depth, width)
        check("alpha", alpha)
        check("dropout", dropout)
        check_norm(norm)
        check_weight_init(weight_init)
        self.in_features = in_features
        self.n_classes = n_classes
        self.depth = depth
        self.width = width  # as given: one int, or one per hidden layer
        self.widths = widths
        self.alpha = float(alpha)
        self.dropout = float(dropout)
        self.norm = norm
        self.weight_init = weight_init
        self.bias = bias
        # Eq. (1)'s constant: a Python float (the stack holds it per model, in its dtype).
        self.act_scale = activation_scale(alpha, weight_init) if norm == "scale" else 1.0

        def batchnorm(n: int) -> nn.Module:
            if norm != "batchnorm":
                return nn.Identity()
            return nn.BatchNorm1d(n, eps=bn_eps, momentum=bn_momentum)

        rng_state = torch.get_rng_state()
        self.input_bn = batchnorm(in_features)
        dims = [in_features, *widths]
        self.linears = nn.ModuleList(
            nn.Linear(dims[i], dims[i + 1], bias=bias) for i in range(depth)
        )
        self.norms = nn.ModuleList(batchnorm(w) for w in widths)
        self.act = nn.LeakyReLU(self.alpha)
        self.drop = nn.Dropout(self.dropout)
        self.out = nn.Linear(dims[-1], n_classes, bias=bias)
        if weight_init == "orthogonal":
            torch.set_rng_state(rng_state)  # the orthogonal draws replace the default ones
            for lin in (*self.linears, self.out):
                orthogonal_linear_(lin.weight, lin.bias)

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
            if self.norm == "scale":
                h = h * self.act_scale
            feats.append(h)
            h = self.drop(h)
        logits = self.out(h)  # (N, C)
        return (logits, feats) if return_features else logits

    def extra_repr(self) -> str:
        return (
            f"depth={self.depth}, width={self.width}, alpha={self.alpha}, dropout={self.dropout}, "
            f"norm={self.norm}, bias={self.bias}, weight_init={self.weight_init}"
        )
