"""Forward hooks on any ``torch.nn.Module``: the features of chosen layers, and the check
that the data fit the model's first layer.

:class:`Features` runs a model on a batch and returns the outputs of the modules it was
given, flattened per sample, in the order they ran (:func:`~dnnphase.measures.load_curve.
measure_model` measures them). On its first forward pass it also checks the input of the
first module with parameters that runs — a ``Linear``, a convolution, a BatchNorm, a
``LayerNorm`` or an ``Embedding`` — before that module runs: data of the wrong width are
then refused naming ``data`` and the width the model takes, not with torch's message about
matrix shapes from inside the forward pass.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import torch
from torch import nn

from phasecore.checks import require

__all__ = ["INPUT", "Features", "input_check"]

#: The name of the model's input as a layer (D_0 of the load curve).
INPUT = "input"

_CONVS = (nn.Conv1d, nn.Conv2d, nn.Conv3d, nn.ConvTranspose1d, nn.ConvTranspose2d,
          nn.ConvTranspose3d)
_BATCHNORMS = {nn.BatchNorm1d: (2, 3), nn.BatchNorm2d: (4,), nn.BatchNorm3d: (5,)}


def _first_tensor(out) -> torch.Tensor | None:
    if isinstance(out, torch.Tensor):
        return out
    if isinstance(out, tuple | list):  # e.g. (output, state), (output, attention)
        return next((t for t in out if isinstance(t, torch.Tensor)), None)
    return None


def _own_parameters(module: nn.Module) -> bool:
    return next(module.parameters(recurse=False), None) is not None


def input_check(module: nn.Module, name: str) -> Callable[[torch.Tensor], str | None] | None:
    """What ``module`` (named ``name``) needs of its input, as a function of that input: the
    inputs it takes, in words, where the input is not such, else None. None for a module
    whose input is not checked (a kind not listed in the module's docstring, or a lazy
    module whose shapes are not yet known)."""
    if isinstance(module, nn.modules.lazy.LazyModuleMixin) and \
            module.has_uninitialized_params():
        return None
    kind = (f"the model's first layer {name!r}" if name else "the model") + \
        f", a {type(module).__name__}"
    if isinstance(module, nn.Linear):
        width = module.in_features
        return lambda x: None if x.ndim >= 1 and x.shape[-1] == width else (
            f"inputs of width {width} along the last dimension, the in_features of {kind}")
    if isinstance(module, _CONVS):
        channels, k = module.in_channels, len(module.kernel_size)
        shape = ", ".join(["N", str(channels), *"DHW"[3 - k:]])
        # torch also takes one unbatched sample (C, H, W), e.g. from a loop over the batch
        return lambda x: None if x.ndim in (k + 1, k + 2) and x.shape[-k - 1] == channels else (
            f"inputs of shape ({shape}), {channels} channels: the in_channels of {kind}")
    for cls, ndims in _BATCHNORMS.items():
        if type(module) is cls:
            features = module.num_features
            return lambda x: None if x.ndim in ndims and x.shape[1] == features else (
                f"{' or '.join(map(str, ndims))}-D inputs of {features} features along "
                f"dimension 1, the num_features of {kind}")
    if isinstance(module, nn.LayerNorm):
        shape = tuple(module.normalized_shape)
        return lambda x: None if tuple(x.shape[x.ndim - len(shape):]) == shape else (
            f"inputs whose last dimensions are {shape}, the normalized_shape of {kind}")
    if isinstance(module, nn.Embedding):
        vocabulary = module.num_embeddings
        return lambda x: None if not x.is_floating_point() and (
            x.numel() == 0 or (int(x.min()) >= 0 and int(x.max()) < vocabulary)) else (
            f"integer token ids in [0, {vocabulary}), the num_embeddings of {kind}")
    return None


class Features:
    """Forward hooks on the chosen modules; one forward pass → the features of each
    call of those modules, flattened to (n, d), in the order they ran.

    Parameters
    ----------
    model : torch.nn.Module
        The model run.
    layers : sequence of str
        Module names of ``model.named_modules()`` and :data:`INPUT`, distinct.
    defaulted : bool, default False
        Whether ``layers`` are the default ones (an error then says so).
    """

    def __init__(self, model: nn.Module, layers: Sequence[str], defaulted: bool = False) -> None:
        modules = dict(model.named_modules())
        unknown = [name for name in layers if name != INPUT and name not in modules]
        require(not unknown, "layers", "names of the model's modules (model.named_modules(), "
                f"e.g. {[n for n in modules if n][:6]}) or {INPUT!r}", unknown)
        require(len(set(layers)) == len(layers), "layers", "distinct names", list(layers))
        self.model, self.layers, self.defaulted = model, list(layers), defaulted
        self._out: list[tuple[str, torch.Tensor]] = []
        self._handles = [modules[name].register_forward_hook(self._hook(name))
                         for name in layers if name != INPUT]
        self.names: list[str] | None = None  # the layers of a forward pass, in order

    def _hook(self, name: str):
        def keep(module, args, out) -> None:
            t = _first_tensor(out)
            require(t is not None, "layers", "modules whose output is a tensor (or a tuple "
                    "holding one)", f"{name} returned {type(out).__name__}")
            self._out.append((name, t.detach()))
        return keep

    def _run_checked(self, x: torch.Tensor) -> None:
        """The first forward pass: the first module with parameters to run checks its input
        first (:func:`input_check`), so data that do not fit the model are named before
        torch fails inside it."""
        seen = []

        def check(name: str):
            def pre(module, args) -> None:
                if seen:
                    return
                seen.append(name)
                need = input_check(module, name)
                got = args[0] if args else None
                if need is None or not isinstance(got, torch.Tensor):
                    return
                wanted = need(got)
                if wanted is not None and got.shape != x.shape:  # e.g. after an nn.Flatten
                    wanted += f" (the data reach it as {tuple(got.shape)})"
                require(wanted is None, "data", wanted, tuple(x.shape))
            return pre

        handles = [module.register_forward_pre_hook(check(name))
                   for name, module in self.model.named_modules() if _own_parameters(module)]
        try:
            self.model(x)
        finally:
            for handle in handles:
                handle.remove()

    def __call__(self, x, n: int) -> list[torch.Tensor]:
        """Run the model on a batch of n inputs; each layer's features (n, d)."""
        self._out = []
        if self.names is None and isinstance(x, torch.Tensor):
            self._run_checked(x)
        else:
            self.model(x)
        calls: dict[str, int] = {}
        names, feats = [], []
        if INPUT in self.layers:
            names.append(INPUT)
            # integer inputs (a language model's token ids) are measured as numbers
            feats.append(x if not isinstance(x, torch.Tensor) or x.is_floating_point()
                         else x.to(torch.float64))
        for name, t in self._out:
            calls[name] = calls.get(name, 0) + 1
            names.append(name if calls[name] == 1 else f"{name}#{calls[name]}")
            feats.append(t)
        silent = [name for name in self.layers if name != INPUT and name not in calls]
        require(not silent, "layers", "modules that run in the model's forward pass"
                + (" (these are the default layers: name the ones to measure, layers=[...])"
                   if self.defaulted else ""), f"{silent} produced no output")
        if self.names is None:
            self.names = names
        require(names == self.names, "layers", "the same module calls in every forward pass",
                f"{names} after {self.names}")
        out = []
        for name, t in zip(names, feats, strict=True):
            require(isinstance(t, torch.Tensor) and t.ndim >= 1 and t.shape[0] == n, "layers",
                    f"outputs with the batch's {n} samples along the first dimension",
                    f"{name}: {tuple(getattr(t, 'shape', ()))}")
            out.append(t.reshape(n, -1))
        return out

    def remove(self) -> None:
        """Take the hooks off the model."""
        for handle in self._handles:
            handle.remove()
