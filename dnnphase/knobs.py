"""The noise knobs of a network sweep (DESIGN §3) and which way is noisier.

=================  ===========================  ================================
knob               what it sets                 noisier when
=================  ===========================  ================================
``dropout``        dropout probability p        larger (p in [0, 1))
``lr``             learning rate                larger
``batch_size``     mini-batch size              smaller (also: more optimizer
                                                steps per epoch — see steps_run)
``label_noise``    label + data noise level q   larger (q in [0, 1])
=================  ===========================  ================================

The comparison with the chain orients every knob so that "more noise" runs
the same way as the chain's force noise s: :func:`larger_is_noisier`.
"""

from __future__ import annotations

import warnings
from typing import NamedTuple

from phasecore.checks import ConfigError


class Knob(NamedTuple):
    noisier: str  # "larger" or "smaller"
    units: str
    label: str  # axis title
    allowed: str  # the range of its values, in words
    default_values: tuple  # a small grid over the paper's range (DESIGN §3)
    scale: str = "linear"  # "log": values span decades (interpolate between them in log)


KNOBS = {
    "dropout": Knob("larger", "probability", "dropout probability p", "in [0, 1)",
                    (0.0, 0.1, 0.2, 0.3)),
    "lr": Knob("larger", "1", "learning rate", "> 0", (1e-4, 1e-3, 1e-2, 1e-1), "log"),
    "batch_size": Knob("smaller", "samples", "batch size", "integers >= 1",
                       (20, 80, 320, 1280), "log"),
    "label_noise": Knob("larger", "fraction of labels / data std", "label + data noise q",
                        "in [0, 1]", (0.0, 0.2, 0.4, 0.8)),
}

#: Names accepted for one more release, with a deprecation message.
RENAMED = {"noise": "label_noise"}


def canonical(knob: str) -> str:
    """The knob's current name (``noise`` -> ``label_noise`` with a warning)."""
    if knob in RENAMED:
        new = RENAMED[knob]
        warnings.warn(f"the knob {knob!r} is now called {new!r}; the old name will be removed "
                      "in the next release", FutureWarning, stacklevel=3)
        return new
    if knob not in KNOBS:
        raise ConfigError(f"knob must be one of {', '.join(KNOBS)} (got {knob!r})")
    return knob


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
