"""The registry of data sets and its one entry point, :func:`load_dataset`; what every
loader returns (:class:`ClassificationData`) and the check that a split holds enough
samples a class for a load curve (:func:`check_class_sizes`)."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from dnnphase.defaults import DATASET
from phasecore.checks import ConfigError, check_int, require

__all__ = ["ClassificationData", "DATASETS", "MIN_PER_CLASS", "TooFewSamples",
           "check_class_sizes", "dataset_key", "load_dataset", "make_data", "register_dataset"]


@dataclass(frozen=True, eq=False)
class ClassificationData:
    """A labelled train/test split, as numpy arrays.

    Attributes
    ----------
    x_train : (N_train, d) float32
    y_train : (N_train,) int64, values in ``0 .. n_classes - 1``
    x_test : (N_test, d) float32
    y_test : (N_test,) int64
    n_classes : number of classes
    name : data set name as registered in :data:`DATASETS`
    info : provenance with plain str/int/float values (fit for NetCDF attrs):
        ``source``, ``resize``, ``data_seed`` and loader-specific entries.
    image_shape : ``(C, H, W)`` of an image data set, whose rows are its images flattened
        channel-major (what a CNN reshapes them to); None for other data.
    """

    x_train: np.ndarray
    y_train: np.ndarray
    x_test: np.ndarray
    y_test: np.ndarray
    n_classes: int
    name: str
    info: dict = field(default_factory=dict)
    image_shape: tuple[int, int, int] | None = None

    def __post_init__(self):
        # Catch loader bugs here rather than as a shape error deep inside training.
        for part in ("train", "test"):
            x, y = getattr(self, f"x_{part}"), getattr(self, f"y_{part}")
            if x.dtype != np.float32 or x.ndim != 2:
                raise TypeError(f"x_{part} must be a 2-D float32 array; got {x.dtype} {x.shape}")
            if y.dtype != np.int64 or y.shape != (x.shape[0],):
                raise TypeError(f"y_{part} must be int64 of shape ({x.shape[0]},); "
                                f"got {y.dtype} {y.shape}")
            if y.size and (y.min() < 0 or y.max() >= self.n_classes):
                raise ValueError(f"y_{part} must lie in 0..{self.n_classes - 1}")
        if self.x_train.shape[1] != self.x_test.shape[1]:
            raise ValueError("x_train and x_test must have the same number of features")
        if self.image_shape is not None and \
                int(np.prod(self.image_shape)) != self.x_train.shape[1]:
            raise ValueError(f"image_shape {self.image_shape} does not hold "
                             f"{self.x_train.shape[1]} features")

    @property
    def n_train(self) -> int:
        return self.x_train.shape[0]

    @property
    def n_test(self) -> int:
        return self.x_test.shape[0]

    @property
    def n_features(self) -> int:
        return self.x_train.shape[1]


# ---------------------------------------------------------------------------
# Registry and entry point

#: name -> loader. A loader takes keyword-only ``n_train`` (int or None),
#: ``data_seed`` (int), ``root`` if it reads local files, and its own options,
#: and returns a :class:`ClassificationData`.
DATASETS: dict[str, Callable[..., ClassificationData]] = {}


def register_dataset(name: str):
    """Decorator: add a loader to :data:`DATASETS` under ``name``."""

    def add(loader):
        DATASETS[name] = loader
        return loader

    return add


def dataset_key(name: str) -> str:
    """The registered name of data set ``name`` (case-insensitive; ``_`` and ``-`` alike),
    or a ConfigError listing :data:`DATASETS`."""
    key = str(name).strip().lower().replace("_", "-")
    require(key in DATASETS, "dataset", f"one of {', '.join(DATASETS)}", name)
    return key


def load_dataset(name: str = DATASET, *, n_train: int | None = None, data_seed: int = 0,
                 root=None, **options) -> ClassificationData:
    """Load data set ``name`` (see :mod:`dnnphase.data` for each one).

    Parameters
    ----------
    name : one of :data:`DATASETS` (case-insensitive; ``_`` and ``-`` alike).
    n_train : number of training samples (class-stratified); None = the data
        set's default. Must be at least the number of classes.
    data_seed : non-negative int fixing the split / subsample / generation.
    root : directory with the files of ``mnist``, ``fashion-mnist``, ``cifar10``;
        rejected for the other data sets. None: the folder of :data:`dnnphase.data.DEFAULT_ROOTS`
        (``fashion-mnist``: the Debian package's), else an error naming ``root``.
    **options : data-set specific (e.g. ``size`` for image data sets).
    """
    key = dataset_key(name)
    loader = DATASETS[key]
    params = inspect.signature(loader).parameters
    allowed = [p for p in params if p not in ("n_train", "data_seed", "root")]
    unknown = sorted(set(options) - set(allowed))
    if unknown:
        raise ConfigError(f"dataset {key!r} has no option {', '.join(unknown)}; "
                         f"its options are: {', '.join(allowed) or 'none'}")
    if n_train is not None:
        n_train = check_int("n_train", n_train, minimum=1)
    data_seed = check_int("data_seed", data_seed, minimum=0)
    if "root" in params:
        options["root"] = root
    elif root is not None:
        takes_root = [n for n, f in DATASETS.items() if "root" in inspect.signature(f).parameters]
        raise ConfigError(f"root applies only to datasets {', '.join(takes_root)}, "
                         f"not to {key!r}")
    return loader(n_train=n_train, data_seed=data_seed, **options)


# ---------------------------------------------------------------------------
# What every loader checks and returns

class TooFewSamples(ConfigError):
    """``n_train`` below one sample a class; ``n_classes``: the data set's classes (a sweep,
    which needs :data:`MIN_PER_CLASS` a class, says its own minimum from it)."""

    def __init__(self, message: str, n_classes: int):
        super().__init__(message)
        self.n_classes = n_classes


#: Training samples every class needs for a load curve: its within-class spread (Tr Σ_w,
#: paper Eq. 3) is zero with one sample a class, and the curve -inf.
MIN_PER_CLASS = 2


def check_class_sizes(data: ClassificationData, dataset: str = "",
                      minimum: int = MIN_PER_CLASS) -> None:
    """ConfigError naming ``n_train`` unless every class has ``minimum`` training samples.

    The smallest n_train quoted is ``minimum`` x the number of classes (what a balanced
    split needs); the class that falls short and its count say why.
    """
    counts = np.bincount(data.y_train, minlength=data.n_classes)
    short = int(np.argmin(counts))
    if counts[short] < minimum:
        name = f" for dataset {dataset!r}" if dataset else ""
        raise ConfigError(
            f"n_train must be at least {minimum * data.n_classes}{name} ({minimum} training "
            f"samples in each of its {data.n_classes} classes: a load curve needs each "
            f"class's spread; got {data.n_train}, class {short} has {int(counts[short])})")


def make_data(name: str, x_train, y_train, x_test, y_test, n_classes: int,
              info: dict, image_shape: tuple[int, int, int] | None = None
              ) -> ClassificationData:
    """A :class:`ClassificationData` of the loader's arrays, cast to its dtypes (features
    float32, C-contiguous; labels int64)."""
    return ClassificationData(
        x_train=np.ascontiguousarray(x_train, dtype=np.float32),
        y_train=np.asarray(y_train, dtype=np.int64),
        x_test=np.ascontiguousarray(x_test, dtype=np.float32),
        y_test=np.asarray(y_test, dtype=np.int64),
        n_classes=n_classes, name=name, info=info, image_shape=image_shape)
