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

One idea a module:

* ``registry`` — :data:`DATASETS`, :func:`load_dataset`, :class:`ClassificationData`
  and the check that every class has samples enough (:func:`check_class_sizes`);
* ``split`` — the class-stratified splits and subsamples the loaders share;
* ``images`` — images as features (scaled, resized, flattened channel-major);
* ``digits`` — real digits shipped with installed packages (``mnist5k``, ``digits``);
* ``synthetic`` — generated data (``mnist1d``, ``gmm``, ``orthogonal``);
* ``files`` — local files (``mnist``, ``fashion-mnist``, ``cifar10``) and ``idx``, the
  IDX format they come in.
"""

# the loaders register themselves when imported, in the order DATASETS lists them
from dnnphase.data import digits, synthetic  # noqa: F401
from dnnphase.data.files import DEFAULT_ROOTS
from dnnphase.data.registry import (
    DATASETS,
    MIN_PER_CLASS,
    ClassificationData,
    TooFewSamples,
    check_class_sizes,
    dataset_key,
    load_dataset,
    register_dataset,
)

__all__ = ["ClassificationData", "DATASETS", "DEFAULT_ROOTS", "MIN_PER_CLASS", "TooFewSamples",
           "check_class_sizes", "dataset_key", "load_dataset", "register_dataset"]
