"""Class-stratified splits shared by the loaders: a train/test split of one pool of
samples (:func:`split_pool`) and a subsample of an official training set
(:func:`subsample`), both fixed by ``data_seed`` with quotas that do not depend on it."""

from __future__ import annotations

import numpy as np

from dnnphase.data.registry import TooFewSamples
from phasecore.checks import ConfigError

__all__ = ["split_pool", "subsample"]


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


def split_pool(name: str, y: np.ndarray, n_train: int, data_seed: int):
    """Class-stratified train/test split of one pool of samples.

    Every class keeps at least one test sample, so ``n_train`` may be at most
    ``len(y) - n_classes``. Returns (train_idx, test_idx).
    """
    counts = np.unique(y, return_counts=True)[1]
    _check_n_train(name, n_train, len(counts), len(y) - len(counts),
                   f"{len(y)} samples, at least one test sample per class is kept")
    quotas = _class_quotas(counts, n_train, counts - 1)
    return _stratified_indices(y, quotas, np.random.default_rng(data_seed))


def subsample(name: str, y: np.ndarray, n_train: int | None, data_seed: int) -> np.ndarray:
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
