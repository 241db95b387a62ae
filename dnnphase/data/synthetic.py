"""Generated data sets: ``mnist1d`` (the package's procedural generator), ``gmm`` (a
Gaussian mixture) and ``orthogonal`` (rows of a random orthogonal matrix, the paper's
Fig. 5(a)); each drawn from its seeds, never downloaded."""

from __future__ import annotations

import functools
import random

import numpy as np

from dnnphase.data.registry import TooFewSamples, make_data, register_dataset
from dnnphase.data.split import subsample
from phasecore.checks import ConfigError, check_int, check_memory, host_available_memory

__all__ = []


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
    tr = subsample("mnist1d", y, n_train, data_seed)
    return make_data("mnist1d", x[tr], y[tr], x_test, y_test, 10,
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
    return make_data("gmm", x_train, y_train, x_test, y_test, n_classes,
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
    return make_data("orthogonal", rows[:n_train], y_train, rows[n_train:], y_test, 2,
                     {"source": "rows of a random orthogonal matrix generated from data_seed, "
                                "random binary labels", "resize": "none",
                      "data_seed": data_seed, "dim": dim})
