"""The training entry points' inputs, checked before any work.

:func:`~dnnphase.training.train.train_ensemble` and
:func:`~dnnphase.training.train.train_models` take data, seeds, a configuration and
per-model knobs from Python; each wrong one is a :class:`~phasecore.checks.ConfigError`
naming it (as :func:`dnnphase.measures.load_curve.measure_model` names its data), never
torch's message from deep inside a training step, and never a silent guess: a NaN
feature, a single class, labels that are not integers, test labels the models cannot
output, a tensor without data (the meta device), a seed that is not an integer.
"""

from __future__ import annotations

import numpy as np
import torch

from phasecore.checks import SEED_LIMIT, is_int, require

__all__ = ["check_data", "check_seeds"]


def _values(value, name: str) -> torch.Tensor | np.ndarray:
    """``value`` as a tensor or an array of real numbers (not text, complex or meta)."""
    if isinstance(value, torch.Tensor):
        require(value.device.type != "meta", name, "a tensor with data (not on the meta "
                "device)", f"a tensor on {value.device}")
        require(not value.is_complex(), name, "real numbers", value.dtype)
        return value
    require(not isinstance(value, (str, bytes)), name, "an array or tensor of numbers",
            type(value).__name__)
    try:
        array = np.asarray(value)
    except (TypeError, ValueError):
        array = None
    require(array is not None and array.dtype.kind in "biuf", name,
            "an array or tensor of real numbers",
            type(value).__name__ if array is None else f"dtype {array.dtype}")
    return array


def _finite(x, name: str) -> None:
    bad = int((~torch.isfinite(x)).sum()) if isinstance(x, torch.Tensor) else int(
        (~np.isfinite(x)).sum())
    require(bad == 0, name, "finite numbers (a NaN or inf feature makes a model's loss and "
            "measures NaN)", f"{bad} of {int(np.prod(x.shape))} values NaN or inf")


def _labels(y, name: str, n: int) -> tuple[int, int, int]:
    """Integer class labels, one per sample: (smallest, largest, distinct classes)."""
    require(tuple(y.shape) == (n,), name, f"of shape ({n},), one label per sample",
            tuple(y.shape))
    floating = y.is_floating_point() if isinstance(y, torch.Tensor) else y.dtype.kind == "f"
    require(not floating, name, "integer class labels", y.dtype)
    if n == 0:
        return 0, -1, 0
    labels = y if isinstance(y, torch.Tensor) else torch.as_tensor(y)
    return int(labels.min()), int(labels.max()), int(torch.unique(labels).numel())


def check_data(x_train, y_train, x_test, y_test, n_classes: int | None = None,
               **record_fns) -> None:
    """Training (and test) data as the entry points take them: ``x_train`` (N, d) finite
    real numbers, ``y_train`` (N,) integer labels 0..C-1 of at least two classes
    (C <= N); a test set given whole (both or neither), (N', d) finite with labels in
    [0, C). ``n_classes``: C of a given model (None: the training labels' largest + 1);
    ``record_fns``: the functions given for the records, each None or callable."""
    for name, fn in record_fns.items():
        require(fn is None or callable(fn), name, "None or a function of the features",
                type(fn).__name__)
    x = _values(x_train, "x_train")
    require(x.ndim == 2 and x.shape[0] >= 2 and x.shape[1] >= 1, "x_train",
            "an (N, d) array with N >= 2 samples", tuple(x.shape))
    y = _values(y_train, "y_train")
    n, d = x.shape
    lo, hi, distinct = _labels(y, "y_train", n)
    require(lo >= 0, "y_train", "class labels >= 0", lo)
    require(hi < n, "y_train", f"class labels 0..C-1 with C <= N = {n} (a larger label "
            "leaves classes without a sample)", hi)
    require(distinct >= 2, "y_train", "labels of at least 2 classes (one class has "
            "nothing to separate)", f"only class {hi}")
    _finite(x, "x_train")
    classes = hi + 1 if n_classes is None else n_classes
    require((x_test is None) == (y_test is None), "x_test" if x_test is None else "y_test",
            f"given with {'y_test' if x_test is None else 'x_test'} (a test set is both or "
            "neither)", None)
    if x_test is None:
        return
    xt = _values(x_test, "x_test")
    # an empty test set is allowed: its curves and accuracy are NaN (a data set without one)
    require(xt.ndim == 2 and xt.shape[1] == d, "x_test",
            f"an (N', {d}) array, the training set's {d} features", tuple(xt.shape))
    _finite(xt, "x_test")
    lo, hi, _ = _labels(_values(y_test, "y_test"), "y_test", xt.shape[0])
    require(lo >= 0 and hi < classes, "y_test", f"labels of the training classes, in "
            f"[0, {classes}) (the models output {classes} classes)", (lo, hi))


def check_seeds(seeds, name: str = "seeds") -> list[int]:
    """One seed per model: a non-empty sequence of integers in [0, 2**63) (repeats allowed:
    a model is its seed and its knobs)."""
    allowed = "one integer in [0, 2**63) per model, e.g. [0, 1]"
    require(not isinstance(seeds, (str, bytes)) and not is_int(seeds), name, allowed, seeds)
    try:
        listed = list(seeds)
    except TypeError:
        listed = None
    require(listed is not None and len(listed) >= 1
            and all(is_int(s) and 0 <= s < SEED_LIMIT for s in listed), name, allowed, seeds)
    return [int(s) for s in listed]
