"""The load curve of any PyTorch model: forward hooks, data streamed in batches.

:func:`measure_model` measures how every chosen layer of a ``torch.nn.Module``
separates the classes of a data set — the same measures, by the same code, as
a sweep (:mod:`dnnphase.measures.separation_torch`) — and returns one labelled
``xarray.Dataset``. :class:`LoadCurveRecorder` does it every few epochs of a
user's own training loop and gives the load curve over training.

The data pass through the model twice, in batches (class means first, then the
residuals' sums), so memory holds one batch's features and K·d numbers per
layer, never a layer's features of the whole data set: a CNN on 60 000 images
is measured in a laptop's memory. Features are the chosen modules' outputs,
flattened per sample, in eval mode (``model.eval()`` for the measurement; the
training flag is restored) — or under another measurement protocol
(:mod:`dnnphase.networks.protocol`: He & Su's BatchNorm statistics of each batch of 100,
Galanti et al.'s ``Linear`` outputs).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from contextlib import nullcontext
from typing import Any

import numpy as np
import torch
import xarray as xr
from torch import nn

from dnnphase.data import MIN_PER_CLASS
from dnnphase.defaults import MEASURE, SWEEP_MEASURES
from dnnphase.measures import laws
from dnnphase.measures.hooks import INPUT, Features
from dnnphase.measures.separation_numpy import FUZZINESS_RCOND, check_measures
from dnnphase.measures.separation_torch import LayerAccumulator
from dnnphase.networks import protocol as protocols
from phasecore import loadcurve
from phasecore.checks import is_int, require
from phasecore.results import provenance

__all__ = ["INPUT", "TRAIN", "LoadCurveRecorder", "default_layers", "measure_model"]

#: The split whose class means classify every split in ``ncc_train_centres``.
TRAIN = "train"
#: Samples per forward pass unless told otherwise.
BATCH_SIZE = 1024

# Modules whose output is "after the activation", the paper's h_ℓ.
_ACTIVATIONS = (
    nn.ReLU, nn.LeakyReLU, nn.PReLU, nn.ReLU6, nn.RReLU, nn.ELU, nn.SELU, nn.CELU, nn.GELU,
    nn.SiLU, nn.Mish, nn.Sigmoid, nn.Tanh, nn.Softplus, nn.Hardtanh, nn.Hardswish,
    nn.Hardsigmoid, nn.LogSigmoid, nn.Softsign, nn.Tanhshrink,
)


def _runs_itself(module: nn.Module) -> bool:
    """Whether ``module`` has a forward pass of its own (an ``nn.ModuleList`` or
    ``nn.ModuleDict`` has none: it only holds modules that the model calls)."""
    return type(module).forward is not nn.Module.forward


def _blocks(module: nn.Module, prefix: str = "") -> list[tuple[str, nn.Module]]:
    """The children of ``module`` by their names in ``model.named_modules()``, a
    container that never runs itself replaced by its own children (recursively)."""
    out = []
    for name, child in module.named_children():
        full = f"{prefix}{name}"
        out.extend([(full, child)] if _runs_itself(child) else _blocks(child, f"{full}."))
    return out


def _layer_names(model: nn.Module, layers, protocol: str = protocols.OURS) -> list[str]:
    """``layers`` as a list (the default where None); one string is refused, not spelled out."""
    if layers is None:
        return default_layers(model, protocol)
    require(not isinstance(layers, (str, bytes)), "layers",
            "a list of module names (one name as a list: ['name'])", layers)
    return list(layers)


def default_layers(model: nn.Module, protocol: str = protocols.OURS) -> list[str]:
    """The layers measured when none are named.

    The input, then, under a protocol that measures ``Linear`` outputs (``"galanti"``,
    :mod:`dnnphase.networks.protocol`), every ``nn.Linear`` module but the last (the head),
    in the order the model defines them; otherwise

    * the top-level activation modules (an ``nn.Sequential`` MLP or CNN: the
      output of every activation), or, when the model has none at top level,
    * every top-level block but the last (a ResNet's stages or a transformer's
      blocks; the last child is taken to be the head that gives the logits).

    A container that never runs itself (an ``nn.ModuleList`` or ``nn.ModuleDict``
    of blocks, which the model's forward pass calls one by one) counts as the
    blocks it holds, named ``blocks.0``, ``blocks.1``, ... as in
    ``model.named_modules()``. A module called several times in one forward pass
    (one activation shared by all layers) gives one layer per call.

    Parameters
    ----------
    model : torch.nn.Module
        The model whose layers are chosen (not run).
    protocol : str, default "ours"
        A name of :data:`dnnphase.networks.protocol.PROTOCOLS`.

    Returns
    -------
    list of str
        ``"input"`` and the chosen module names, in the order the model defines them.

    Examples
    --------
    >>> from torch import nn
    >>> class Residual(nn.Module):
    ...     def __init__(self):
    ...         super().__init__()
    ...         self.embed = nn.Linear(4, 8)
    ...         self.blocks = nn.ModuleList(nn.Linear(8, 8) for _ in range(3))
    ...         self.head = nn.Linear(8, 2)
    >>> default_layers(Residual())
    ['input', 'embed', 'blocks.0', 'blocks.1', 'blocks.2']
    """
    if protocols.lookup(protocol).layers == "linear":
        linears = [name for name, mod in model.named_modules() if isinstance(mod, nn.Linear)]
        return [INPUT, *linears[:-1]]
    children = _blocks(model)
    acts = [name for name, child in children if isinstance(child, _ACTIVATIONS)]
    return [INPUT, *(acts or [name for name, _ in children[:-1]])]


# --------------------------------------------------------------------------
# Data
# --------------------------------------------------------------------------


class _Tensors:
    """(x, y) arrays served in batches of ``batch_size``, in order (``whole``: a last batch of
    one sample joins the one before it, as a batch's own statistics need two)."""

    def __init__(self, x, y, batch_size: int, whole: bool = False) -> None:
        self.x, self.y = torch.as_tensor(x), torch.as_tensor(y)
        require(self.x.ndim >= 1 and self.x.shape[0] > 0, "data",
                "inputs with samples along the first dimension", tuple(self.x.shape))
        require(self.y.shape == (self.x.shape[0],), "labels",
                f"a 1-D array of {self.x.shape[0]} class labels (one per input)",
                tuple(self.y.shape))
        self.batch_size, self.whole = batch_size, whole

    def __iter__(self):
        n, size = self.x.shape[0], self.batch_size
        whole = self.whole and size >= 2
        for a, b in protocols.batch_bounds(n, size) if whole else \
                [(a, a + size) for a in range(0, n, size)]:
            yield self.x[a:b], self.y[a:b]


def _source(data, batch_size: int, whole: bool = False) -> Iterable:
    """Any accepted data → an iterable of (x, y) batches that can be iterated twice."""
    if isinstance(data, tuple | list) and len(data) == 2 and \
            not isinstance(data[0], tuple | list):  # (x, y), not a list of two batches
        return _Tensors(data[0], data[1], batch_size, whole)
    if isinstance(data, torch.utils.data.DataLoader):
        return data
    if isinstance(data, torch.utils.data.Dataset):
        return torch.utils.data.DataLoader(data, batch_size=batch_size, shuffle=False)
    require(isinstance(data, Iterable) and iter(data) is not data, "data",
            "(x, y) arrays, a torch Dataset or DataLoader of (x, y), or a re-iterable of "
            "(x, y) batches (not a one-shot iterator: the data are read twice)",
            type(data).__name__)
    return data


def _splits(data, split: str, batch_size: int, whole: bool = False) -> dict[str, Iterable]:
    if isinstance(data, Mapping):
        require(len(data) > 0 and all(isinstance(k, str) and k for k in data), "data",
                "a mapping of split names (e.g. 'train', 'test') to data", list(data))
        return {name: _source(d, batch_size, whole) for name, d in data.items()}
    require(isinstance(split, str) and split != "", "split", "a non-empty name", split)
    return {split: _source(data, batch_size, whole)}


def _batch(batch) -> tuple[Any, torch.Tensor]:
    require(isinstance(batch, tuple | list) and len(batch) == 2, "data",
            "batches of (inputs, labels)", type(batch).__name__)
    x, y = batch
    y = torch.as_tensor(y)
    n = x.shape[0] if isinstance(x, torch.Tensor) else len(x)
    require(y.ndim == 1 and y.shape[0] == n, "labels",
            f"a 1-D tensor of one class label per input ({n})", tuple(y.shape))
    require(not y.is_floating_point(), "labels", "integer class labels", y.dtype)
    # -1 is many libraries' "ignore this sample": here it would be one more class
    require(y.numel() == 0 or int(y.min()) >= 0, "labels", "class labels >= 0",
            int(y.min()) if y.numel() else None)
    return x, y


def _device_and_dtype(model: nn.Module) -> tuple[torch.device, torch.dtype | None]:
    for t in [*model.parameters(), *model.buffers()]:
        require(t.device.type != "meta", "model", "a model whose weights are on a real device "
                "(a meta-device model has none: model.to_empty(device='cpu') and load them)",
                "on the meta device")
        return t.device, (t.dtype if t.is_floating_point() else None)
    return torch.device("cpu"), None


def _to_model(x, device: torch.device, dtype: torch.dtype | None):
    if isinstance(x, torch.Tensor):
        x = x.to(device)
        return x.to(dtype) if dtype is not None and x.is_floating_point() else x
    return x  # e.g. a dict of inputs: the model's own business


# --------------------------------------------------------------------------
# Measuring
# --------------------------------------------------------------------------


def _measure_split(features: Features, source: Iterable, measures, rcond, device,
                   dtype) -> tuple[np.ndarray, int, laws.Centres]:
    """Both passes over one split: (n_measures, n_layers) float64, N and the split's class
    means (the NCC classifier of every layer)."""
    acc: list[LayerAccumulator] | None = None
    n_total, n_bad, counts = 0, 0, {}
    for pass_ in (1, 2):
        for batch in source:
            x, y = _batch(batch)
            n = y.shape[0]
            x = _to_model(x, device, dtype)
            if pass_ == 1:
                if isinstance(x, torch.Tensor) and x.is_floating_point():
                    n_bad += int((~torch.isfinite(x)).sum())
                for label, count in zip(*torch.unique(y, return_counts=True), strict=True):
                    counts[int(label)] = counts.get(int(label), 0) + int(count)
            feats = features(x, n)
            y = y.to(feats[0].device)
            if acc is None:
                acc = [LayerAccumulator(measures, rcond) for _ in feats]
            for a, h in zip(acc, feats, strict=True):
                if pass_ == 1:
                    a.add_means(h[None], y)
                else:
                    a.add_residuals(h[None], y)
            n_total += n if pass_ == 1 else 0
        require(acc is not None, "data", "at least one batch of samples", 0)
        if pass_ == 1:
            # One NaN input makes every class mean, so every layer's value, NaN.
            require(n_bad == 0, "data", "finite inputs", f"{n_bad} NaN or infinite value(s)")
            short = {label: c for label, c in counts.items() if c < MIN_PER_CLASS}
            require(not short, "labels", f"at least {MIN_PER_CLASS} samples of every class (a "
                    "class's spread needs two)",
                    ", ".join(f"class {k} has {v}" for k, v in sorted(short.items())))
            centres = _centres([a.end_means() for a in acc], sorted(counts))
    return (torch.stack([a.values()[0] for a in acc], dim=1).cpu().numpy(), n_total,
            centres)


def _centres(means: list, labels: list[int]) -> laws.Centres:
    """One model's class means of every layer as an NCC classifier (NaN where its features
    were not finite)."""
    kept = [torch.where(cm.finite[:, None, None], cm.means, torch.nan) for cm in means]
    classes = torch.tensor(labels, device=kept[0].device)
    return laws.Centres(kept, classes, torch.ones(1, len(labels), dtype=torch.bool))


def _ncc_to_centres(features: Features, source: Iterable, centres: laws.Centres, device,
                    dtype) -> np.ndarray:
    """One more pass over a split: each layer's NCC accuracy with ``centres`` (n_layers,)."""
    hits, total = None, 0
    for batch in source:
        x, y = _batch(batch)
        n = y.shape[0]
        feats = features(_to_model(x, device, dtype), n)
        acc = laws.ncc_to_centres([h[None] for h in feats], y, centres)[0]  # (n_layers,)
        part = torch.round(acc * n)  # the batch's hits (NaN stays NaN)
        hits = part if hits is None else hits + part
        total += n
    return (hits / total).cpu().numpy()


def _check_options(measures, rcond, batch_size) -> tuple[str, ...]:
    measures = check_measures(measures, "measures")
    require(len(set(measures)) == len(measures), "measures", "distinct", measures)
    require(isinstance(rcond, int | float) and rcond >= 0, "rcond", "a number >= 0", rcond)
    require(is_int(batch_size) and batch_size >= 1, "batch_size", "an integer >= 1",
            batch_size)
    return tuple(measures)


def measure_model(
    model: nn.Module,
    data,
    layers: Sequence[str] | None = None,
    measures: Sequence[str] = SWEEP_MEASURES,
    *,
    split: str = "train",
    batch_size: int | None = None,
    rcond: float = FUZZINESS_RCOND,
    protocol: str = protocols.OURS,
) -> xr.Dataset:
    """The load curve of ``model`` on ``data``: how each layer separates the classes.

    Parameters
    ----------
    model : torch.nn.Module
        Any ``torch.nn.Module``; measured in eval mode (but see ``protocol``), without
        gradients, on the device of its parameters (inputs are moved there and cast to its
        float dtype). Its training flag, and its BatchNorm statistics, are as before
        afterwards.
    data : tuple, Dataset, DataLoader, iterable or mapping
        ``(x, y)`` arrays or tensors (x: samples first, y: (N,) integer labels),
        a ``torch.utils.data.Dataset`` or ``DataLoader`` yielding ``(x, y)``, or
        any re-iterable of ``(x, y)`` batches. Read twice, so it must give the
        same samples both times (no random augmentation; with ``protocol="he_su"`` in the
        same batches, which normalise each other). A mapping
        ``{"train": ..., "test": ...}`` measures each and adds a ``split`` dimension.
    layers : sequence of str, optional
        Module names (``model.named_modules()``) whose outputs are measured, and
        ``"input"`` for the input (integer inputs, such as token ids, measured as
        float64 numbers; always the raw input); default :func:`default_layers` (of the
        ``protocol``), which measures the blocks
        inside an ``nn.ModuleList``. Layers are
        ordered as they run in the forward pass; a module called k times gives
        k layers ``name``, ``name#2``, ..., ``name#k``. An output is flattened per
        sample (the first tensor of a tuple output).
    measures : sequence of str
        Names in :data:`dnnphase.measures.separation_numpy.MEASURE_NAMES` (default the sweep's).
    split : str, default "train"
        The name of a single data set's split (a coordinate of the result).
    batch_size : int, optional
        Samples per forward pass for arrays and Datasets (a DataLoader keeps its own);
        default 1 024, or the protocol's batch (He & Su's 100) where it sets BatchNorm's.
    rcond : float
        The fuzziness's relative rank cut-off (docs/measures.md).
    protocol : str, default "ours"
        The measurement (:mod:`dnnphase.networks.protocol`): ``"ours"`` eval mode;
        ``"he_su"`` BatchNorm modules in training mode, each batch (of ``batch_size``, in
        order) normalised by its own statistics, running statistics restored, other modules
        in eval mode; ``"galanti"`` eval mode, default layers every ``nn.Linear`` but the last.

    Returns
    -------
    xarray.Dataset
        ``load_curve`` (measure, layer) — (split, measure, layer) for a mapping —
        float64, ``curvature`` and ``curvature_scaled`` per measure (NaN with fewer
        than three layers), ``n_samples`` per split; the papers' statistics per split
        (:mod:`dnnphase.measures.laws`): He & Su's ``pearson_r``, ``decay_ratio`` and
        ``half_life`` of the fuzziness curve over every measured layer (NaN without the
        fuzziness measure or with fewer than three layers), Galanti et al.'s
        ``effective_depth`` (depth index of the first layer after the input whose NCC
        accuracy reaches 0.99; NaN where none does or without the ncc measure) and, for a
        mapping with a ``"train"`` split, ``ncc_train_centres`` (split, layer): every split
        classified by the nearest training class mean (Galanti et al.'s test NCC; one more
        pass over each split); coordinates ``layer`` (the names), ``depth`` (0 .. L along
        layer), ``measure``, ``split``. Equal to a sweep's measurement of the same
        features (:func:`dnnphase.measures.separation_torch.measure_layers`) to rounding,
        whatever the batch size.

    Raises
    ------
    ConfigError
        A model that is not a module, data of the wrong form or that do not fit the
        model's first layer (its width, channels or vocabulary: checked before that layer
        runs, :mod:`dnnphase.measures.hooks`), unknown measures or layers that do not run
        in the forward pass (the message names which).
    """
    require(isinstance(model, nn.Module), "model", "a torch.nn.Module", type(model).__name__)
    how = protocols.lookup(protocol)
    if batch_size is None:
        batch_size = how.batch or BATCH_SIZE
    measures = _check_options(measures, rcond, batch_size)
    batch_stats = how.batchnorm == "batch"
    sources = _splits(data, split, batch_size, whole=batch_stats)
    defaulted = layers is None
    layers = _layer_names(model, layers, protocol)
    require(len(layers) >= 1 and all(isinstance(n, str) for n in layers), "layers",
            "a non-empty list of module names", layers)
    device, dtype = _device_and_dtype(model)
    features = Features(model, layers, defaulted)
    was_training = model.training
    curves, sizes, centres, ncc = {}, {}, {}, {}
    try:
        model.eval()
        with torch.no_grad(), (protocols.training_mode_batchnorm(model) if batch_stats
                               else nullcontext()):
            for name, source in sources.items():
                curves[name], sizes[name], centres[name] = _measure_split(
                    features, source, measures, rcond, device, dtype)
            if TRAIN in sources and len(sources) > 1:  # Galanti's NCC: training centres
                ncc = {name: _ncc_to_centres(features, source, centres[TRAIN], device, dtype)
                       for name, source in sources.items()}
    finally:
        features.remove()
        model.train(was_training)
    ds = _dataset(curves, sizes, features.names, measures, ncc)
    config = {"model": type(model).__name__, "layers": layers, "measures": list(measures),
              "rcond": rcond, "batch_size": batch_size, "splits": list(sources),
              "protocol": protocol,
              "parameters": sum(p.numel() for p in model.parameters())}
    ds.attrs.update(provenance("dnnphase.measure_model", config))
    if not isinstance(data, Mapping):
        ds = ds.squeeze("split")
    return ds


def _dataset(curves: dict[str, np.ndarray], sizes: dict[str, int], names: list[str],
             measures: tuple[str, ...], ncc: dict[str, np.ndarray]) -> xr.Dataset:
    values = np.stack(list(curves.values()))  # (split, measure, layer)
    if len(names) >= 3:
        curvature = loadcurve.curvature(values)
        scaled = loadcurve.curvature_scaled(values)
    else:  # a curvature needs three points
        curvature = scaled = np.full(values.shape[:2], np.nan)
    ds = xr.Dataset(
        {
            "load_curve": (("split", "measure", "layer"), values,
                           {"long_name": "separation D per layer (see measure)"}),
            "curvature": (("split", "measure"), curvature,
                          {"long_name": "curvature (paper: first minus last gain)"}),
            "curvature_scaled": (("split", "measure"), scaled,
                                 {"long_name": "scale-free curvature", "units": "1"}),
            "n_samples": ("split", np.array(list(sizes.values()), dtype=np.int64)),
        },
        coords={"split": list(curves), "measure": list(measures),
                "layer": ("layer", names, {"long_name": "module whose output is measured"}),
                "depth": ("layer", np.arange(len(names)), {"long_name": "layer (0 = first)"})},
    )
    return ds.assign(_statistics(values, names, measures, list(curves), ncc))


def _statistics(values: np.ndarray, names: list[str], measures: tuple[str, ...],
                splits: list[str], ncc: dict[str, np.ndarray]) -> dict:
    """The papers' statistics of each split (:mod:`dnnphase.measures.laws`): He & Su's from
    the fuzziness curve, every measured layer (the input included when measured), Galanti
    et al.'s effective depth from the NCC curve (hidden layers: the input, when measured,
    is not a candidate) and, with a "train" split beside others, every split's NCC with
    the training class means. NaN where the measure is not among ``measures``."""
    def curve(name: str) -> np.ndarray:  # (split, layer)
        if name not in measures:
            return np.full((len(splits), len(names)), np.nan)
        return values[:, measures.index(name)]

    first = 1 if names and names[0] == INPUT else 0
    out = {name: ("split", v, {"long_name": f"He & Su's {name} of the fuzziness load curve "
                                           "(every layer measured)"})
           for name, v in laws.equi_separation(curve("fuzziness")).items()}
    out["effective_depth"] = ("split", laws.effective_depth(curve("ncc"), first=first), {
        "long_name": "Galanti et al.'s effective depth: first layer after the input whose NCC "
                     f"accuracy (this split's class means) reaches "
                     f"{laws.EFFECTIVE_DEPTH_THRESHOLD}; NaN: none", "units": "depth index"})
    if ncc:
        out["ncc_train_centres"] = (("split", "layer"), np.stack([ncc[s] for s in splits]), {
            "long_name": "NCC accuracy with the training split's class means (Galanti et "
                         "al.'s test NCC)", "units": "1"})
    return out


class LoadCurveRecorder:
    """The load curve over training, for a training loop of one's own (checked on creation).

    Parameters
    ----------
    model : torch.nn.Module
        The network being trained.
    train, test : tuple, Dataset, DataLoader or iterable
        The training data and (optional) a test set, as :func:`measure_model` takes
        them, each measured at every recorded epoch (a ``split`` dimension).
    every : int, default 1
        Measure at the epochs that are multiples of ``every``.
    layers
        As :func:`measure_model`'s.
    measures : sequence of str, default ("trace_ratio",)
        As :func:`measure_model`'s; the paper's trace ratio alone is cheap.
    batch_size, rcond, protocol
        As :func:`measure_model`'s.

    Examples
    --------
    ```python
    recorder = LoadCurveRecorder(model, (x_train, y_train), (x_test, y_test), every=5)
    for epoch in range(epochs + 1):
        recorder(epoch)          # measures at epochs 0, 5, 10, ...
        if epoch < epochs:
            train_one_epoch(model)
    curves = recorder.result()   # load_curve (epoch, split, measure, layer)
    ```
    """

    def __init__(self, model: nn.Module, train, test=None, *, every: int = 1,
                 layers: Sequence[str] | None = None, measures: Sequence[str] = (MEASURE,),
                 batch_size: int | None = None, rcond: float = FUZZINESS_RCOND,
                 protocol: str = protocols.OURS) -> None:
        require(isinstance(model, nn.Module), "model", "a torch.nn.Module",
                type(model).__name__)
        require(is_int(every) and every >= 1, "every", "an integer >= 1 (epochs)", every)
        batch_size = batch_size or protocols.lookup(protocol).batch or BATCH_SIZE
        self.measures = _check_options(measures, rcond, batch_size)
        self.data = {"train": train} if test is None else {"train": train, "test": test}
        _splits(self.data, "train", batch_size)  # the data's form, checked now
        self.layers = _layer_names(model, layers, protocol)
        Features(model, self.layers).remove()  # the names, checked now
        self.model, self.every = model, every
        self.batch_size, self.rcond, self.protocol = batch_size, rcond, protocol
        self._epochs: list[int] = []
        self._curves: list[xr.Dataset] = []

    def __call__(self, epoch: int) -> xr.Dataset | None:
        """Measure at ``epoch`` if it is a multiple of ``every``.

        Parameters
        ----------
        epoch : int
            The epoch (>= 0, later than the last one recorded).

        Returns
        -------
        xarray.Dataset or None
            That epoch's load curve (as :func:`measure_model`'s), None where ``epoch`` is
            not a multiple of ``every``.
        """
        require(is_int(epoch) and epoch >= 0, "epoch", "an integer >= 0", epoch)
        require(not self._epochs or epoch > self._epochs[-1], "epoch",
                f"later than the last one recorded ({self._epochs[-1] if self._epochs else 0})",
                epoch)
        if epoch % self.every:
            return None
        ds = measure_model(self.model, self.data, self.layers, self.measures,
                           batch_size=self.batch_size, rcond=self.rcond,
                           protocol=self.protocol)
        self._epochs.append(int(epoch))
        self._curves.append(ds)
        return ds

    def result(self) -> xr.Dataset:
        """Every recorded epoch: ``load_curve`` (epoch, split, measure, layer), ..."""
        require(bool(self._curves), "recorder", "at least one recorded epoch", 0)
        attrs = self._curves[0].attrs
        ds = xr.concat(self._curves, dim="epoch", combine_attrs="override")
        ds = ds.assign_coords(epoch=("epoch", np.array(self._epochs), {"units": "epochs"}))
        ds.attrs.update(attrs)
        return ds
