"""What every model of a stack shares apart from its knobs: :class:`ModelSpec`.

A stack (:class:`dnnphase.networks.stack.StackedModels`) and its single model
(:class:`dnnphase.networks.mlp.MLP`, :class:`dnnphase.networks.cnn.CNN`) are built from the
same architecture fields, under the same names; the per-model knobs (α, dropout) are the
only thing in which the models of a stack differ. Building an empty stack like another, or
the single model of one of its models, takes this one object.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = ["BN_EPS", "BN_MOMENTUM", "ModelSpec"]

#: BatchNorm's eps and momentum (torch's defaults), unless a model was built with others.
BN_EPS = 1e-5
BN_MOMENTUM = 0.1


@dataclass(frozen=True)
class ModelSpec:
    """A model's construction apart from its knobs.

    Parameters
    ----------
    architecture : tuple of (str, object)
        The architecture's fields by name, in the class's order: keyword arguments of the
        single model's class and of the stack's alike (the MLP's ``in_features``,
        ``n_classes``, ``depth``, ``width``, ``norm``, ``bias``, ``weight_init``; the
        CNN's ``image_shape``, ``n_classes``, ``depth``, ``channels``, ``norm``, ``bias``,
        ``kernel_size``). Models stack only if theirs are equal.
    bn_eps, bn_momentum : float
        The BatchNorms' eps and momentum.
    """

    architecture: tuple[tuple[str, Any], ...]
    bn_eps: float = BN_EPS
    bn_momentum: float = BN_MOMENTUM

    def kwargs(self) -> dict[str, Any]:
        """The keyword arguments that build a model (single or stacked) of this spec."""
        return {**dict(self.architecture), "bn_eps": self.bn_eps,
                "bn_momentum": self.bn_momentum}
