"""The axes of a network phase diagram: every fact about them, as data.

The nonlinearity ``alpha`` and the noise knobs are per-model parameters.
Each has one entry here — its allowed range, and for a knob its units, axis
title, default grid, scale and which way is noisier — and everything else
reads it: :func:`check` (the only place their values are validated, so the
message is the same from the command line, :class:`~dnnphase.sweeps.sweep.SweepConfig`,
:class:`~dnnphase.training.train.TrainConfig`, :func:`~dnnphase.training.train.train_ensemble`
or :class:`~dnnphase.networks.mlp.MLP`), the ``dnnphase sweep`` help, the sweep's
coordinates and the comparison with the chain.

=================  ===========================  ================================
knob               what it sets                 noisier when
=================  ===========================  ================================
``dropout``        dropout probability p        larger (p in [0, 1))
``lr``             learning rate                larger (> 0)
``batch_size``     mini-batch size              smaller (also: more optimizer
                                                steps per epoch — see steps_run)
``label_noise``    label + data noise level q   larger (q in [0, 1])
``random_labels``  fixed random labels: the     larger (in [0, 1])
                   fraction of training labels
                   reassigned once, before
                   training (Galanti et al.)
=================  ===========================  ================================

The comparison with the chain orients every knob so that "more noise" runs
the same way as the chain's force noise s: :func:`larger_is_noisier`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from phasecore.checks import is_finite, require

__all__ = ["ALPHA", "KNOBS", "RANGES", "Knob", "Range", "check", "check_batch_fits", "label",
           "larger_is_noisier", "lookup"]


@dataclass(frozen=True)
class Range:
    """The allowed values of a parameter: ``low`` .. ``high`` (each end included unless
    ``open_low`` / ``open_high``), integers only if ``integer``. Values are finite."""

    low: float
    high: float = math.inf
    open_low: bool = False
    open_high: bool = False
    integer: bool = False

    def admits(self, value) -> bool:
        """Whether one value lies in the range (booleans and strings never do)."""
        if not is_finite(value):
            return False
        v = float(value)
        above = v > self.low if self.open_low else v >= self.low
        below = v < self.high if self.open_high else v <= self.high
        return above and below and (not self.integer or v.is_integer())

    def words(self, many: bool = False) -> str:
        """The range in words, e.g. "in [0, 1)", "> 0 and finite", "an integer >= 1" ("integers
        >= 1" for ``many``), as error messages and help texts print it."""
        if math.isinf(self.high):
            bound = f"{'>' if self.open_low else '>='} {self.low:g}"
        else:
            bound = (f"in {'(' if self.open_low else '['}{self.low:g}, {self.high:g}"
                     f"{')' if self.open_high else ']'}")
        if self.integer:
            return f"{'integers' if many else 'an integer'} {bound}"
        # "lr must be > 0 (got inf)" read as if inf were too small
        return f"{bound} and finite" if math.isinf(self.high) else bound


@dataclass(frozen=True)
class Knob:
    """A noise knob: what it sets and how a sweep treats it."""

    range: Range  # its allowed values
    noisier: str  # "larger" or "smaller": the direction of more noise
    units: str
    label: str  # axis title
    default_values: tuple  # a small grid over the paper's range
    scale: str = "linear"  # "log": values span decades (interpolate between them in log)

    @property
    def allowed(self) -> str:
        """The allowed values in words (see :meth:`Range.words`)."""
        return self.range.words()


#: The LeakyReLU negative slope alpha, the diagram's other axis: 0 = ReLU, 1 = linear.
ALPHA = Range(0.0, 1.0)

KNOBS = {
    "dropout": Knob(Range(0.0, 1.0, open_high=True), "larger", "probability",
                    "dropout probability p", (0.0, 0.1, 0.2, 0.3)),
    "lr": Knob(Range(0.0, open_low=True), "larger", "1", "learning rate",
               (1e-4, 1e-3, 1e-2, 1e-1), "log"),
    "batch_size": Knob(Range(1.0, integer=True), "smaller", "samples", "batch size",
                       (20, 80, 320, 1280), "log"),
    "label_noise": Knob(Range(0.0, 1.0), "larger", "fraction of labels / data std",
                        "label + data noise q", (0.0, 0.2, 0.4, 0.8)),
    "random_labels": Knob(Range(0.0, 1.0), "larger", "fraction of training labels",
                          "fixed random labels (fraction)", (0.0, 0.25, 0.5, 0.75)),
}

#: Every per-model parameter's allowed values: what :func:`check` reads.
RANGES: dict[str, Range] = {"alpha": ALPHA, **{name: k.range for name, k in KNOBS.items()}}


def lookup(knob: str) -> Knob:
    """The knob called ``knob``, or a ConfigError listing the knobs."""
    require(knob in KNOBS, "knob", f"one of {', '.join(KNOBS)}", knob)
    return KNOBS[knob]


def check(name: str, value, *, label: str | None = None, unset: str | None = None) -> None:
    """ConfigError unless ``value`` is an allowed value of parameter ``name`` (a key of
    :data:`RANGES`): one number, or a sequence of them (one per model or per grid point).

    The message reads "<label> must be <range in words> (got <value>)"; ``label``
    defaults to ``name``. ``unset``: None is allowed too and means this (e.g. "full
    batch"), which the message says.
    """
    if unset is not None and value is None:
        return
    allowed = RANGES[name]
    if isinstance(value, np.ndarray):
        values, many = value.ravel().tolist(), True
    elif isinstance(value, Sequence) and not isinstance(value, str):
        values, many = list(value), True
    else:
        values, many = [value], False
    words = allowed.words(many) + (f", or unset ({unset})" if unset is not None else "")
    require(all(allowed.admits(v) for v in values), label or name, words, value)


def check_batch_fits(sizes: Sequence[int], n_train: int) -> None:
    """The batch-size knob's upper end is the data: ConfigError unless every size is at
    most the training-set size ``n_train`` (known once the data set is loaded)."""
    require(max(sizes) <= n_train, "batch_size", f"at most the training-set size {n_train}",
            max(sizes))


def larger_is_noisier(ds, knob: str | None = None) -> bool:
    """Whether larger values of a sweep's knob mean more noise.

    Read from the knob coordinate's ``noisier`` attribute (written by every
    sweep), falling back to the table for Datasets without it.
    """
    knob = knob or ds.attrs["knob"]
    default = KNOBS[knob].noisier if knob in KNOBS else "larger"
    return ds[knob].attrs.get("noisier", default) == "larger"


def label(knob: str) -> str:
    """Axis title of a knob."""
    return KNOBS[knob].label if knob in KNOBS else knob.replace("_", " ")
