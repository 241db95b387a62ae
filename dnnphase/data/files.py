"""Data sets read from local files in their standard distribution formats: ``mnist`` and
``fashion-mnist`` (IDX files) and ``cifar10`` (the python batches), under ``root`` or,
for ``fashion-mnist``, the folder of :data:`DEFAULT_ROOTS`."""

from __future__ import annotations

import pickle
from pathlib import Path

import numpy as np

from dnnphase.data.idx import FILES as _IDX_FILES
from dnnphase.data.idx import read_idx as _read_idx
from dnnphase.data.images import check_size, image_features, image_shape, resize_note
from dnnphase.data.registry import ClassificationData, make_data, register_dataset
from dnnphase.data.split import subsample
from dnnphase.defaults import FASHION_MNIST_DIR, FASHION_MNIST_PACKAGE
from phasecore.checks import ConfigError

__all__ = ["DEFAULT_ROOTS"]


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
    if base.is_file():  # "looked in 'README.md'" did not say why nothing was found there
        raise ConfigError(f"root must be a folder holding the data set's files (got the "
                          f"file {str(base)!r})")
    return [base] + [base / s for s in subdirs]


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
        size = check_size(size)
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
        tr = subsample(name, labels, n_train, data_seed)
        h, w = images.shape[2:]
        return make_data(name, image_features(images[tr], 255, size), labels[tr],
                         image_features(test_images, 255, size), test_labels, 10,
                         {"source": f"{source} IDX files in {paths[0].parent}",
                          "resize": resize_note(h, w, size), "data_seed": data_seed},
                         image_shape(images, size))

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
    size = check_size(size)
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
    tr = subsample("cifar10", labels, n_train, data_seed)
    return make_data("cifar10", image_features(images[tr], 255, size), labels[tr],
                     image_features(test_images, 255, size), test_labels, 10,
                     {"source": f"CIFAR-10 python batches in {folder}",
                      "resize": resize_note(32, 32, size), "data_seed": data_seed,
                      "channels": "RGB" if channel is None else "RGB"[channel]},
                     image_shape(images, size))
