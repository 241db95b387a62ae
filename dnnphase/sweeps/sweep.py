"""The networks' phase diagram: nonlinearity alpha x a noise knob x seeds (Fig. 1).

:class:`SweepConfig` validates everything up front, once; :func:`sweep` splits the
(alpha, knob value, seed) models into chunks, trains each chunk with one
batched call (:func:`dnnphase.training.train.train_models`), measures every layer
(:mod:`dnnphase.measures.separation_numpy`) and assembles one labelled ``xarray.Dataset``.
Chunks run through :mod:`phasecore.sweeps`, so a sweep written to disk
resumes after an interruption and can run on a Dask cluster. Every model's
randomness (initialisation, data order, dropout masks, label/data noise)
comes from its own seed, so results do not depend on the chunking.

The noise knobs, their ranges and their orientation are in :mod:`dnnphase.knobs`;
the training settings (:class:`dnnphase.training.train.TrainingSettings`) are the trainer's.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import math
from dataclasses import dataclass

import numpy as np
import xarray as xr

from dnnphase import defaults, knobs
from dnnphase.data import check_class_sizes, dataset_key
from dnnphase.measures import laws
from dnnphase.measures.separation_numpy import check_measures
from dnnphase.networks.architecture import Architecture
from dnnphase.networks.protocol import check_protocol
from dnnphase.sweeps import depth_axis
from dnnphase.sweeps.assemble import assemble as _assemble
from dnnphase.sweeps.cost import choose_scheduler
from dnnphase.sweeps.memory import check_sweep_memory
from dnnphase.training.schedule import SCHEDULED, check_sweep_schedule
from dnnphase.training.settings import check_last_batch
from dnnphase.training.train import ModelKnobs, TrainConfig, TrainingSettings, train_models
from phasecore.checks import (
    as_config,
    check_bools,
    check_distinct,
    check_grid,
    check_result_size,
    is_int,
    require,
    seed_list,
)
from phasecore.executors import validate_scheduler, validate_workers
from phasecore.results import check_output
from phasecore.sweeps import check_before_work, finish, run_chunked

__all__ = ["SweepConfig", "chunk_plan", "default_scheduler", "fused_cpu_layers", "load_data",
           "runs_on_cuda", "stored_config", "sweep", "train_chunk"]


@dataclass(frozen=True)
class SweepConfig(TrainingSettings):
    """A network phase-diagram sweep (the paper's defaults: :mod:`dnnphase.defaults`), each
    field checked when it is made (a :class:`ConfigError` naming it).

    Parameters
    ----------
    epochs, batch_size, optimizer, lr, loss_threshold, patience, rel_tol, dtype, device
        As :class:`~dnnphase.training.settings.TrainingSettings`'s.
    schedule, momentum, weight_decay, lr_drops, keep_last_batch, warmup_epochs
        As :class:`~dnnphase.training.settings.TrainingSettings`'s.
    knob : str
        The noise knob of the diagram's columns (:mod:`dnnphase.knobs`): "dropout", "lr",
        "batch_size", "label_noise" or "random_labels".
    values : sequence of float, optional
        The knob's values, distinct, in its range (None: its ``default_values``, e.g. dropout
        (0.0, 0.1, 0.2, 0.3)); the swept knob's own field stays at its default.
    alphas : float or sequence of float
        LeakyReLU negative slopes in [0, 1] (0 = ReLU); as ``values``, numbers, not text.
    seeds : int or sequence of int
        The model seeds (all of a model's randomness): n (0..n-1) or distinct integers >= 0.
    dataset : str
        "mnist5k", "digits", "mnist1d", "gmm", "orthogonal", "mnist", "fashion-mnist" or
        "cifar10": what each is, where it is read from, how it is split: docs/data.md.
    data_seed : int
        The seed of the split and the training subsample (and of a generated set).
    n_train : int, optional
        Training samples, a class-stratified subsample (None: the data set's own number).
    root : str, optional
        The folder of the files of "mnist", "fashion-mnist" (None: Debian's
        /usr/share/datasets/fashion-mnist, package dataset-fashion-mnist) or "cifar10".
    size : int, optional
        An image data set's side after resizing (None: its own).
    arch, depth, width, channels, kernel_size, norm, bias, weight_init
        As :class:`~dnnphase.networks.architecture.Architecture`'s.
    dropout : float
        p in [0, 1): in training, each hidden activation is zeroed with probability p (the
        rest scaled by 1 / (1 - p)); the load curves are measured without (eval mode).
    label_noise : float
        q in [0, 1], every step: a label redrawn uniformly with probability q, and Gaussian
        noise of q times each feature's standard deviation added to the input.
    random_labels : float
        The fraction in [0, 1] of training labels reassigned once from each model's seed
        (Galanti et al.); a model is measured with its own labels.
    measures : sequence of str
        Measures of every layer (:data:`dnnphase.metrics.MEASURE_NAMES`, docs/measures.md).
    record_every : int
        Also record the first measure's load curve (training and test set) every k epochs.
    models_per_chunk : int, optional
        Models trained as one stack, stored as one resumable chunk (on a CPU the results do
        not depend on it, bit for bit; on CUDA float32 results do at the rounding level).
        None: on the CPU at most 16 in at least 8 chunks; on CUDA a stack that fills the GPU.
    depths : sequence of int, optional
        Depth as a sweep axis (:mod:`dnnphase.sweeps.depth_axis`): every (alpha, value, seed)
        model at each of these depths (each >= 2, distinct; ``depth`` then stays at its
        default), in one resumable sweep, with a ``depth`` dimension; each depth's load
        curve keeps its length, layers 0..depth, NaN above. ``()``: the one ``depth``.
    protocol : str
        The measurement: "ours" (eval-mode BatchNorm, layer 0 after the input BatchNorm,
        activations), "he_su" (BatchNorm statistics of each batch of 100, raw input) or
        "galanti" (each hidden Linear's output); not "ours" only for MLPs.
    """

    knob: str = "dropout"
    values: tuple | None = None
    alphas: tuple = (0.0, 0.5, 1.0)
    seeds: tuple = (0, 1, 2)
    dataset: str = defaults.DATASET
    data_seed: int = 0
    n_train: int | None = None
    root: str | None = None
    size: int | None = None
    arch: str = "mlp"
    depth: int = defaults.DEPTH
    width: int | tuple = defaults.WIDTH
    channels: int = defaults.CHANNELS
    kernel_size: int = defaults.KERNEL_SIZE
    norm: str = defaults.NORM
    bias: bool = True
    weight_init: str = "default"
    dropout: float = 0.0
    label_noise: float = 0.0
    random_labels: float = 0.0
    measures: tuple = defaults.SWEEP_MEASURES
    record_every: int = 0
    models_per_chunk: int | None = None
    depths: tuple = ()
    protocol: str = "ours"

    def __post_init__(self):
        if self.values is None:
            object.__setattr__(self, "values", knobs.lookup(self.knob).default_values)
        # Grids given from Python are checked as numbers here, so that text or a nested
        # list gets an error naming the field rather than numpy's conversion error.
        object.__setattr__(self, "values", tuple(check_grid("values", self.values)))
        object.__setattr__(self, "alphas", tuple(check_grid("alphas", self.alphas)))
        object.__setattr__(self, "seeds", seed_list(self.seeds, at_most=defaults.MAX_SEEDS))
        object.__setattr__(self, "measures", tuple(np.atleast_1d(self.measures).tolist()))
        object.__setattr__(self, "depths", depth_axis.normalise(self.depths))
        if hasattr(self.width, "tolist") and not is_int(self.width):  # an array
            object.__setattr__(self, "width", self.width.tolist())
        if isinstance(self.width, (list, tuple)):  # one width per hidden layer (JSON: a list)
            object.__setattr__(self, "width", tuple(
                int(w) if is_int(w) else w for w in self.width))
        super().__post_init__()  # validates
        if self.models_per_chunk is None:
            object.__setattr__(self, "models_per_chunk", self._default_chunk())

    def _default_chunk(self) -> int:
        n_models = len(self.alphas) * len(self.values) * len(self.seeds)
        if runs_on_cuda(self.device):
            return min(defaults.MODELS_PER_CHUNK_CUDA, n_models)
        per_chunk = math.ceil(n_models / defaults.MIN_CHUNKS)
        return max(1, min(defaults.MODELS_PER_CHUNK, per_chunk))

    def validate(self) -> None:
        """ConfigError naming the first parameter outside its range (the training
        settings: :meth:`TrainingSettings.validate`; the knobs: :func:`knobs.check`)."""
        knobs.lookup(self.knob)
        require(len(self.values) > 0, "values", "a non-empty list", self.values)
        require(len(self.alphas) > 0, "alphas", "a non-empty list", self.alphas)
        knobs.check("alpha", self.alphas)
        seed_list(self.seeds, at_most=defaults.MAX_SEEDS)
        for name in ("seeds", "values", "alphas"):  # a repeated cell would be trained twice
            check_distinct(name, getattr(self, name))
        dataset_key(self.dataset)
        require(self.size is None or (is_int(self.size) and self.size >= 1), "size",
                "an integer >= 1, or unset (the data set's own)", self.size)
        # Every model's load-curve curvature (a second difference over layers 0..L) needs
        # L >= 2, though one network may have L = 1: checked first, one range for 0 and 1.
        require(is_int(self.depth) and self.depth >= 2, "depth",
                "an integer >= 2 (a load curve's curvature needs layers 0..L, L >= 2)",
                self.depth)
        depth_axis.check(self.depths, self.depth, _FIELD_DEFAULTS["depth"])
        require(not (self.depths and isinstance(self.width, tuple)), "width",
                "one integer with a depth axis (widths per layer fit one depth only)",
                self.width)
        self.architecture().check_alphas(self.alphas)  # and its own fields, on construction
        require(self.models_per_chunk is None or (is_int(self.models_per_chunk)
                                                  and self.models_per_chunk >= 1),
                "models_per_chunk", "an integer >= 1, or unset (automatic)", self.models_per_chunk)
        super().validate()  # epochs, batch_size, optimizer, lr, ..., dtype, device
        for name in ("dropout", "label_noise", "random_labels"):  # lr, batch_size: above
            knobs.check(name, getattr(self, name))
        knobs.check(self.knob, self.values, label=f"values of {self.knob}")
        fixed, default = getattr(self, self.knob), _FIELD_DEFAULTS[self.knob]
        left = "unset (full batch)" if default is None else f"at its default {default!r}"
        require(fixed == default, self.knob,
                f"left {left} when it is the swept knob (its values come from the sweep's "
                "values / --values, or from tune's search)", fixed)
        check_sweep_schedule(self.schedule, self.knob, self.values,
                             {knob: getattr(self, knob) for knob in SCHEDULED})
        require(is_int(self.record_every) and 0 <= self.record_every <= self.epochs,
                "record_every", f"an integer in 0..epochs ({self.epochs})", self.record_every)
        check_measures(self.measures, "measures")
        check_distinct("measures", self.measures)
        check_protocol(self.protocol)
        require(self.protocol == "ours" or self.arch != "cnn", "protocol",
                "ours for a CNN (the papers' protocols are written for MLPs)", self.protocol)
        # Before any plan is made: 10^9 networks would fill the memory with their chunk
        # plan alone, silently. Per network at least every layer's measures and
        # snapshots, and a few scalars (the result holds more: the estimate errs low).
        n_depths, deepest = len(self.depths) or 1, max(self.depths or (self.depth,))
        n_models = len(self.alphas) * len(self.values) * len(self.seeds) * n_depths
        snapshots = 1 + self.epochs // self.record_every if self.record_every else 1
        check_result_size(
            f"{len(self.alphas)} alphas x {len(self.values)} values x {len(self.seeds)} seeds "
            + (f"x {n_depths} depths " if self.depths else "") + f"= {n_models} networks",
            n_models * ((deepest + 1) * (len(self.measures) + snapshots) + 8))
        # Each network's loss at every epoch is kept (--epochs 1e12 failed allocating TiB).
        check_result_size(f"epochs = {self.epochs} (a loss per epoch for each of {n_models} "
                          "networks)", n_models * self.epochs, hint="fewer epochs")

    def per_depth(self) -> list[SweepConfig]:
        """The sweep at each of ``depths`` (one sweep of one depth each), or ``[self]``."""
        if not self.depths:
            return [self]
        return [self.replace(depth=d, depths=()) for d in self.depths]

    def architecture(self) -> Architecture:
        """The network every model of the sweep is (checked on construction)."""
        return Architecture(self.arch, self.depth, self.width, self.channels,
                            self.kernel_size, self.norm, self.bias, self.weight_init)

    def check_data(self, data) -> None:
        """Checks that need the data set (before any training): every class has the two
        training samples a load curve needs, batch sizes fit its size, a CNN has images."""
        check_class_sizes(data, self.dataset)
        n_train = data.n_train
        sizes = list(self.values) if self.knob == "batch_size" else [self.batch_size or n_train]
        knobs.check_batch_fits(sizes, n_train)
        check_last_batch(sizes, n_train, self.keep_last_batch)
        self.architecture().check_data(data.image_shape, self.dataset)

    def preflight(self, scheduler: str = defaults.PYTHON_SCHEDULER,
                  workers: int | None = None):
        """Every check that needs more than the fields, before any work: the device, the
        scheduler and workers, the data set (loaded, and returned) and the memory the
        chunks need on this machine (:mod:`dnnphase.sweeps.memory`)."""
        validate_scheduler(scheduler, auto=True)
        validate_workers(workers, scheduler)
        self.check_device()
        data = load_data(self)
        deepest = self.replace(depth=max(self.depths), depths=()) if self.depths else self
        deepest.check_data(data)
        check_sweep_memory(deepest, data, scheduler=scheduler, workers=workers,
                           on_cuda=runs_on_cuda(self.device),
                           depth_name="depths" if self.depths else "depth")
        return data

    def check_device(self) -> None:
        """A CUDA device asked for must exist (checked before any work starts)."""
        if str(self.device).startswith("cuda"):
            import torch

            require(torch.cuda.is_available(), "device",
                    "auto or cpu on this machine (no CUDA device is available)", self.device)
            count = torch.cuda.device_count()
            index = torch.device(self.device).index
            require(index is None or index < count, "device",
                    f"cuda, cuda:0 … cuda:{count - 1}, auto or cpu on this machine "
                    f"({count} CUDA device{'s' if count > 1 else ''})", self.device)

    def train_config(self) -> TrainConfig:
        """The :class:`dnnphase.training.train.TrainConfig` of every model: the training settings
        (and the record interval, 0 -> None)."""
        shared = {f.name: getattr(self, f.name) for f in dataclasses.fields(TrainingSettings)}
        return TrainConfig(**shared, record_every=self.record_every or None,
                           protocol=self.protocol)

    def model_knobs(self, models: list) -> ModelKnobs:
        """The per-model knobs of ``models``, (alpha index, value index, seed) each: the
        swept knob's value, the others' fixed values (checked by :meth:`validate`)."""
        m = len(models)
        per_model = {name: [getattr(self, name)] * m for name in knobs.KNOBS}
        per_model[self.knob] = [self.values[iv] for _, iv, _ in models]
        return ModelKnobs(seeds=[seed for _, _, seed in models],
                          alpha=[self.alphas[ia] for ia, _, _ in models], **per_model)

    def to_dict(self) -> dict:
        """The fields as a JSON-ready dict (stored with the result and hashed to resume a
        sweep): ``SweepConfig(**to_dict())`` is this configuration. A field of
        :data:`_LATER_FIELDS` at its default is left out, so a sweep that does not use it
        has the configuration, and hash, it had before the field existed."""
        out = dataclasses.asdict(self)
        for name in _LATER_FIELDS:
            if out[name] == _FIELD_DEFAULTS[name]:
                del out[name]
        return out

    def replace(self, **changes) -> SweepConfig:
        return SweepConfig(**{**self.to_dict(), **changes})


_FIELD_DEFAULTS = {f.name: f.default for f in dataclasses.fields(SweepConfig)}
#: Fields added after results were stored (figures/): left out of a stored configuration
#: while at their default, so such results resume and are reused as before.
_LATER_FIELDS = ("arch", "channels", "kernel_size", "schedule", "momentum", "weight_decay",
                 "lr_drops", "random_labels", "size", "depths", "protocol", "keep_last_batch",
                 "warmup_epochs")


def default_scheduler(device: str, workers: int | None = None) -> str:
    """The command line's scheduler when none is given: on the CPU "auto" (a pool of
    single-threaded workers, or this process where its start-up outweighs the work); on CUDA
    this process, one GPU being one worker (a pool's workers would each hold a CUDA context
    and a chunk of up to 320 models on the one device), unless ``workers`` asks for a pool."""
    cuda = "serial" if workers is None else "processes"
    return cuda if runs_on_cuda(device) else defaults.SCHEDULER


def fused_cpu_layers(cfg: SweepConfig) -> bool:
    """Whether the sweep's networks train through the CPU's fused hidden layer
    (:mod:`dnnphase.networks.fused_layer`): stacked MLPs (``arch`` mlp or linear) with BatchNorm on
    the CPU (:meth:`dnnphase.networks.stack.EnsembleMLP._fuses`), unless
    ``dnnphase.networks.stack.FUSED_CPU_LAYERS`` is off in this process (the chunks then carry
    that to every worker)."""
    from dnnphase.networks import stack

    return (stack.FUSED_CPU_LAYERS and cfg.arch != "cnn" and cfg.norm == "batchnorm"
            and not runs_on_cuda(cfg.device))


def runs_on_cuda(device: str) -> bool:
    """Whether a sweep on ``device`` trains on CUDA (torch is imported only to resolve auto)."""
    if str(device).startswith("cuda"):
        return True
    if device != "auto":
        return False
    import torch

    return torch.cuda.is_available()


@functools.lru_cache(maxsize=4)
def _data(dataset: str, n_train, data_seed: int, root, size=None):
    from dnnphase.data import load_dataset

    options = {} if size is None else {"size": size}  # a data set without it refuses one
    return load_dataset(dataset, n_train=n_train, data_seed=data_seed, root=root, **options)


def load_data(cfg: SweepConfig):
    """The sweep's data set (cached per process). Too few training samples is refused with
    the sweep's own minimum (:data:`dnnphase.data.MIN_PER_CLASS` a class: the loader's, one
    a class, would be followed by a second refusal)."""
    from dnnphase.data import MIN_PER_CLASS, TooFewSamples
    from phasecore.checks import ConfigError

    try:
        return _data(cfg.dataset, cfg.n_train, cfg.data_seed, cfg.root, cfg.size)
    except TooFewSamples as err:
        need = MIN_PER_CLASS * err.n_classes
        raise ConfigError(f"n_train must be at least {need} for dataset {cfg.dataset!r} "
                          f"({MIN_PER_CLASS} training samples in each of its {err.n_classes} "
                          f"classes: a load curve needs each class's spread); got "
                          f"{cfg.n_train}") from None


def sweep(config: SweepConfig | None = None, *, output=None, overwrite: bool = False,
          scheduler: str = defaults.PYTHON_SCHEDULER, workers: int | None = None,
          quiet: bool = True,
          **params) -> xr.Dataset:
    """Train every (alpha, knob value, seed) model and measure its layers.

    Parameters
    ----------
    config : SweepConfig, optional
        The sweep, or its fields as ``**params``: ``sweep(knob="dropout", values=[0, 0.3])``.
    output, overwrite
        A NetCDF path for the result: the sweep is then resumable (:mod:`phasecore.sweeps`);
        an existing output is refused unless ``overwrite``.
    scheduler, workers
        "serial" (default: here, one thread), "processes" (``workers``, default one per
        core; from a script, under ``if __name__ == "__main__":``), "auto" (a pool, or here
        where its start-up outweighs the work: :mod:`dnnphase.sweeps.cost`) or Dask's address.
    quiet : bool, default True
        False prints the expected run time and the progress on stderr.
    **params
        :class:`SweepConfig`'s fields (with ``config``: those to change).

    Returns
    -------
    xarray.Dataset
        Dims (alpha, ``<knob>``, seed[, depth], measure, layer[, epoch]) (``depth`` with
        ``depths``; layers above a depth's own are NaN): ``load_curve``, ``curvature``,
        ``curvature_scaled`` (per measure), ``test_accuracy``, ``train_accuracy``,
        ``train_loss``, ``epochs_run``, ``steps_run``, ``diverged``, ``diverged_reason``;
        ``load_curve_epochs`` if ``record_every``; the test set's ``load_curve_test``,
        ``curvature_test``, ``curvature_scaled_test``, ``load_curve_epochs_test`` (or NaN).
        The papers' statistics per model (:mod:`dnnphase.measures.laws`): He & Su's
        ``pearson_r``, ``decay_ratio``, ``half_life`` of the fuzziness curve over layers
        0..L (``*_test``: the test set's), Galanti et al.'s ``effective_depth`` (first
        hidden layer whose training NCC reaches 0.99, else NaN) and
        ``ncc_train_centres_test`` (alpha, knob, seed, layer): test NCC with the training
        class means.

    Raises
    ------
    ConfigError
        A bad configuration, data, device or memory need, all before any training.
    """
    # a config is already checked by its construction; a change makes (and checks) a new one
    check_bools(overwrite=overwrite, quiet=quiet)
    cfg = as_config(config, SweepConfig, params)
    if output is not None:
        check_output(output, overwrite)
    data = cfg.preflight(scheduler, workers)
    # The checked configuration travels (pickled; with depths each depth's own), so no worker
    # checks it again; so does the fused layer's switch (a pool's workers import the default).
    from dnnphase.networks import stack

    members = cfg.per_depth()
    plans = [chunk_plan(member) for member in members]
    payloads = [{"config": member, "models": models, "fused_cpu_layers": stack.FUSED_CPU_LAYERS}
                for member, plan in zip(members, plans, strict=True) for models in plan]
    stored, _ = stored_config(cfg)  # refusals before the scheduler's choice is said:
    check_before_work(stored, len(payloads), output, overwrite, scheduler)
    scheduler, workers = choose_scheduler(cfg, data, scheduler, workers, len(payloads), quiet)
    chunks, store = run_chunked(train_chunk, payloads, config=stored, output=output,
                                overwrite=overwrite, scheduler=scheduler, workers=workers,
                                quiet=quiet, label=f"{cfg.knob} sweep")
    if cfg.depths:
        bounds = np.cumsum([0] + [len(plan) for plan in plans])
        ds = depth_axis.stack([_assemble(chunks[a:b], member) for a, b, member
                               in zip(bounds[:-1], bounds[1:], members, strict=True)],
                              cfg.depths)
    else:
        ds = _assemble(chunks, cfg)
    ds.attrs["knob"] = cfg.knob
    ds.attrs["data"] = json.dumps(data.info, default=str)
    return finish(ds, "dnnphase.sweep", cfg.to_dict(), store)


def stored_config(cfg: SweepConfig) -> tuple[dict, int]:
    """The configuration a sweep's store of chunks holds (and is resumed by), and its number
    of chunks: what :meth:`phasecore.store.ChunkStore.check` compares before any work."""
    # A store of chunks that mixed batch sizes (before they were kept apart) is not resumed
    # with this plan: the plan's rule is part of the stored configuration.
    # Likewise a CPU store from before the fused hidden layer (its float32 networks round
    # differently): the layer is part of the stored configuration.
    stored = cfg.to_dict() | ({"chunks": "one batch size each"} if cfg.knob == "batch_size"
                              else {}) \
        | ({"cpu_hidden_layers": "fused"} if fused_cpu_layers(cfg) else {})
    return stored, sum(len(chunk_plan(member)) for member in cfg.per_depth())


def chunk_plan(cfg: SweepConfig) -> list[list[tuple[int, int, int]]]:
    """The sweep's models (alpha index, knob index, seed) in chunks of at most
    ``models_per_chunk``, in order, never mixing batch sizes.

    A chunk's models train as stacks of one batch size each, and at small batches a
    stack's step costs a fixed overhead plus a share per model: a chunk that straddled two
    batch sizes (10 seeds of one, 6 of the next) paid the overhead twice for small stacks.
    Sweeps of one batch size are cut as before (results unchanged).
    """
    models = [(ia, iv, seed) for ia in range(len(cfg.alphas)) for iv in range(len(cfg.values))
              for seed in cfg.seeds]
    groups: dict = {}
    for mdl in models:
        groups.setdefault(cfg.values[mdl[1]] if cfg.knob == "batch_size" else None,
                          []).append(mdl)
    n = cfg.models_per_chunk
    return [group[k:k + n] for group in groups.values() for k in range(0, len(group), n)]


def train_chunk(payload: dict) -> xr.Dataset:
    """One chunk: train its models together, then measure every layer.

    Module-level so that process and Dask workers can unpickle it. Training
    and measuring run on one CPU thread whatever the process's setting
    (:class:`dnnphase.training.train.TrainConfig` ``cpu_threads``), so a chunk's result
    never depends on the scheduler, the thread count or the machine's load.

    ``payload``: ``{"config": SweepConfig, "models": [(alpha index, value index,
    seed), ...], "fused_cpu_layers": bool}``, the configuration checked by its
    construction; the last is ``dnnphase.networks.stack.FUSED_CPU_LAYERS`` where the sweep began
    (set here for the chunk, then restored).
    """
    from dnnphase.networks import stack

    before = stack.FUSED_CPU_LAYERS
    stack.FUSED_CPU_LAYERS = payload.get("fused_cpu_layers", before)
    try:
        return _train_and_measure(payload["config"], payload["models"])
    finally:
        stack.FUSED_CPU_LAYERS = before


def _train_and_measure(cfg: SweepConfig, models: list, test_set: bool = True) -> xr.Dataset:
    """Train ``models`` and measure their layers on the training set and (``test_set``;
    False only to check that it changes nothing else) on the test set: NaN test curves
    when the data set's test set has fewer than two classes (e.g. none)."""
    import torch

    from dnnphase.measures import separation_torch as separation

    ia, iv, seeds = (np.array([m[k] for m in models]) for k in range(3))
    data = load_data(cfg)
    primary = cfg.measures[0]
    y_train = torch.as_tensor(data.y_train)
    x_test, y_test = torch.as_tensor(data.x_test), torch.as_tensor(data.y_test)
    measure_test = test_set and np.unique(data.y_test).size >= 2  # measure_layers needs two

    def record(features, labels=None):  # on the training device, all models at once
        if labels is not None:  # each model's own fixed random labels, (m, N)
            return torch.from_numpy(_measure_train(features, labels, (primary,))[:, 0])
        return separation.measure_layers(features, y_train, (primary,))[:, 0]  # (m, L+1)

    def record_test(features):
        return separation.measure_layers(features, y_test, (primary,))[:, 0]

    result = train_models(
        torch.as_tensor(data.x_train), y_train, torch.as_tensor(data.x_test),
        torch.as_tensor(data.y_test), knobs=cfg.model_knobs(models), config=cfg.train_config(),
        network=cfg.architecture(), image_shape=data.image_shape,
        record_fn=record if cfg.record_every else None,
        test_record_fn=record_test if cfg.record_every and measure_test else None,
    )
    diverged = result.diverged.numpy()
    curves = np.full((len(seeds), len(cfg.measures), cfg.depth + 1), np.nan)
    healthy = np.flatnonzero(~diverged)
    if healthy.size:
        features = result.features(indices=healthy.tolist(), on_device=True,
                                   protocol=cfg.protocol)  # L+1 (m, N, d)
        labels = y_train if result.train_labels is None \
            else result.train_labels[torch.as_tensor(healthy)]  # each model's own
        curves[healthy] = _measure_train(features, labels, cfg.measures)  # (m, measures, L+1)
        centres = laws.class_centres(features, labels)  # Galanti's NCC: training centres
        del features
    curves_test = np.full_like(curves, np.nan)
    ncc_test = np.full((len(seeds), cfg.depth + 1), np.nan)
    if healthy.size and measure_test:
        features = result.features(indices=healthy.tolist(), x=x_test, on_device=True,
                                   protocol=cfg.protocol)
        curves_test[healthy] = separation.measure_layers(
            features, y_test, cfg.measures).cpu().numpy()
        ncc_test[healthy] = laws.ncc_to_centres(features, y_test, centres).cpu().numpy()
        del features
    out = xr.Dataset(
        {
            "load_curve": (("model", "measure", "layer"), curves),
            "load_curve_test": (("model", "measure", "layer"), curves_test),
            "ncc_train_centres_test": (("model", "layer"), ncc_test),
            "test_accuracy": ("model", result.test_accuracy.numpy()),
            "train_accuracy": ("model", result.train_accuracy.numpy()),
            "train_loss": ("model", result.train_loss.numpy()),
            "epochs_run": ("model", result.epochs_run.numpy()),
            "steps_run": ("model", result.steps_run.numpy()),
            "diverged": ("model", diverged.astype(np.int8)),
            "diverged_reason": ("model", np.array(result.diverged_reason, dtype=str)),
        },
        coords={"alpha_index": ("model", ia), "value_index": ("model", iv),
                "seed_value": ("model", seeds)},
    )
    if cfg.record_every:
        epochs = [e for e, _ in result.snapshots]
        snaps = np.stack([np.asarray(c, dtype=float) for _, c in result.snapshots], axis=1)
        snaps[diverged] = np.nan
        out["load_curve_epochs"] = (("model", "epoch", "layer"), snaps)
        snaps_test = np.full_like(snaps, np.nan)
        if measure_test:
            snaps_test[:] = np.stack([np.asarray(c, dtype=float)
                                      for _, c in result.test_snapshots], axis=1)
            snaps_test[diverged] = np.nan
        out["load_curve_epochs_test"] = (("model", "epoch", "layer"), snaps_test)
        out = out.assign_coords(epoch=epochs)
    return out


def _measure_train(features, labels, measures) -> np.ndarray:
    """The training set's load curves (m, measures, L+1) with ``labels`` shared (N,) or
    each model's own (m, N) (fixed random labels: one model at a time, which gives the
    same values: a model's curve depends on its own features only)."""
    from dnnphase.measures import separation_torch as separation

    if labels.dim() == 1:
        return separation.measure_layers(features, labels, measures).cpu().numpy()
    return np.concatenate([separation.measure_layers([f[j:j + 1] for f in features],
                                                     labels[j], measures).cpu().numpy()
                           for j in range(labels.shape[0])])
