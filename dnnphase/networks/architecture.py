"""Which network a sweep trains: the architecture as data, checked once.

Three architectures, each a single-model reference definition and its stacked,
batched counterpart that the trainer (:mod:`dnnphase.training.train`) trains:

* ``"mlp"``: the paper's MLP (Eq. 1; :class:`dnnphase.networks.mlp.MLP`,
  :class:`dnnphase.networks.stack.EnsembleMLP`);
* ``"cnn"``: the CNN of the supplement's Fig. S2 (:class:`dnnphase.networks.cnn.CNN`,
  :class:`dnnphase.networks.cnn.EnsembleCNN`), on an image data set (its ``image_shape``);
* ``"linear"``: the linear network of Fig. 5(a): the MLP with the identity as
  activation (α = 1 for every model, checked).

:class:`Architecture` holds everything about a network but the per-model knobs
(α, dropout, lr, label noise, batch size, seed): depth, width or channels,
normalisation, biases and initialisation.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import torch

from dnnphase.defaults import CHANNELS, DEPTH, KERNEL_SIZE, NORM, WIDTH
from dnnphase.networks.mlp import MLP, check_norm, check_weight_init, hidden_widths
from phasecore.checks import is_int, plain_fields, require

__all__ = ["ARCHS", "Architecture", "check_arch"]

#: The architectures the trainer knows by name.
ARCHS = ("mlp", "cnn", "linear")


def check_arch(arch) -> str:
    """``arch`` if it is one of :data:`ARCHS`, else a ConfigError naming ``arch``."""
    require(arch in ARCHS, "arch", f"one of {', '.join(ARCHS)}", arch)
    return arch


@dataclass(frozen=True)
class Architecture:
    """A network's architecture (not its per-model knobs).

    arch : "mlp", "cnn" or "linear" (:data:`ARCHS`).
    depth : hidden layers L (conv layers for the CNN); the load curve has L + 1 points.
    width : hidden units of the MLP / linear network: one integer for every hidden layer,
        or a tuple of ``depth`` integers, one per layer (He & Su's Fig. 4 shapes).
    channels, kernel_size : the CNN's channels per layer and its (odd) kernel size.
    norm : "batchnorm", "scale" or "none" (:data:`dnnphase.networks.mlp.NORMS`; the CNN takes
        "batchnorm" or "none").
    bias : biases in the Linear / conv maps.
    weight_init : "default" or "orthogonal" (MLP and linear network).
    """

    arch: str = "mlp"
    depth: int = DEPTH
    width: int | tuple[int, ...] = WIDTH
    channels: int = CHANNELS
    kernel_size: int = KERNEL_SIZE
    norm: str = NORM
    bias: bool = True
    weight_init: str = "default"

    def __post_init__(self) -> None:
        plain_fields(self)
        if hasattr(self.width, "tolist") and not is_int(self.width):  # an array
            object.__setattr__(self, "width", self.width.tolist())
        if isinstance(self.width, (list, tuple)):  # JSON gives a list; held as plain ints
            object.__setattr__(self, "width", tuple(
                int(w) if is_int(w) else w for w in self.width))
        self.validate()

    def validate(self) -> None:
        """ConfigError naming the first field outside its range."""
        check_arch(self.arch)
        check_norm(self.norm)
        check_weight_init(self.weight_init)
        for name in ("depth", "channels"):
            value = getattr(self, name)
            require(is_int(value) and value >= 1, name, "an integer >= 1", value)
        hidden_widths(self.depth, self.width)  # one int, or one per hidden layer
        require(is_int(self.kernel_size) and self.kernel_size >= 1 and self.kernel_size % 2,
                "kernel_size", "an odd integer >= 1", self.kernel_size)
        require(isinstance(self.bias, bool), "bias", "True or False", self.bias)
        # An option of the other architecture would be stored in the result's configuration
        # as if it had shaped the networks (as the chain refuses options that do not apply).
        others = {"width": WIDTH} if self.arch == "cnn" else {"channels": CHANNELS,
                                                               "kernel_size": KERNEL_SIZE}
        for name, default in others.items():
            require(getattr(self, name) == default, name,
                    f"left at its default {default} with arch {self.arch!r} (it applies to "
                    f"{'the mlp and linear networks' if name == 'width' else 'the cnn'} only)",
                    getattr(self, name))
        if self.arch == "cnn":
            from .cnn import NORMS as CNN_NORMS

            require(self.norm in CNN_NORMS, "norm",
                    f"one of {', '.join(CNN_NORMS)} for the CNN",
                    self.norm)
            require(self.weight_init == "default", "weight_init",
                    "default for the CNN (orthogonal is the MLP's)", self.weight_init)

    def check_alphas(self, alphas: Sequence[float]) -> None:
        """The linear network has the identity as activation: α = 1 for every model."""
        if self.arch == "linear":
            require(all(float(a) == 1.0 for a in alphas), "alphas",
                    "1 for the linear network (its activation is the identity)", list(alphas))

    def check_data(self, image_shape: tuple[int, int, int] | None, dataset: str = "") -> None:
        """A CNN needs an image data set (even height and width); the others take any."""
        if self.arch != "cnn":
            return
        require(image_shape is not None, "arch",
                "mlp or linear for a data set that is not images (cnn needs images: mnist5k, "
                "digits, mnist, fashion-mnist, cifar10)", f"cnn on {dataset or 'these data'}")
        require(image_shape[1] % 2 == 0 and image_shape[2] % 2 == 0, "dataset",
                "images of even height and width for the CNN (pooling then upsampling by 2)",
                f"{dataset} {image_shape}")
        # A kernel wider than the image sees mostly its zero padding (99 on 8 x 8 trained
        # at chance): at most the image's shorter side.
        side = min(image_shape[1], image_shape[2])
        images = f"{dataset} images" if dataset else "images"
        require(self.kernel_size <= side, "kernel_size",
                f"an odd integer <= {side - 1 + side % 2} (the {images}' shorter side is "
                f"{side})", self.kernel_size)

    @property
    def widths(self) -> tuple[int, ...]:
        """The MLP's units in each hidden layer (:func:`dnnphase.networks.mlp.hidden_widths`)."""
        return hidden_widths(self.depth, self.width)

    def n_layers(self) -> int:
        """Points of the load curve: the input and every hidden layer."""
        return self.depth + 1

    def init(self, n_models: int, in_features: int, n_classes: int, *, seeds: Sequence[int],
             alpha, dropout, dtype: torch.dtype | None = None,
             image_shape: tuple[int, int, int] | None = None):
        """The stacked models at their seeded initialisation (each equal to
        :meth:`single` built after ``torch.manual_seed(seed)``)."""
        if self.arch == "cnn":
            from .cnn import EnsembleCNN

            require(image_shape is not None, "image_shape",
                    "(C, H, W) of the images, for the CNN", image_shape)
            self.check_data(image_shape)
            require(math.prod(image_shape) == in_features, "image_shape",
                    f"the shape of the {in_features} input features", image_shape)
            return EnsembleCNN.init(n_models, image_shape, n_classes, seeds=seeds,
                                    depth=self.depth, channels=self.channels, alpha=alpha,
                                    dropout=dropout, norm=self.norm, bias=self.bias,
                                    kernel_size=self.kernel_size, dtype=dtype)
        from .stack import EnsembleMLP

        return EnsembleMLP.init(n_models, in_features, n_classes, seeds=seeds, depth=self.depth,
                                width=self.width, alpha=alpha, dropout=dropout, norm=self.norm,
                                bias=self.bias, dtype=dtype, weight_init=self.weight_init)

    def single(self, in_features: int, n_classes: int, alpha: float = 0.0,
               dropout: float = 0.0, image_shape: tuple[int, int, int] | None = None):
        """The reference single network (a plain ``nn.Module``)."""
        if self.arch == "cnn":
            from .cnn import CNN

            self.check_data(image_shape)
            return CNN(image_shape, n_classes, depth=self.depth, channels=self.channels,
                       alpha=alpha, dropout=dropout, norm=self.norm, bias=self.bias,
                       kernel_size=self.kernel_size)
        self.check_alphas([alpha])
        return MLP(in_features, n_classes, depth=self.depth, width=self.width, alpha=alpha,
                   dropout=dropout, norm=self.norm, bias=self.bias, weight_init=self.weight_init)
