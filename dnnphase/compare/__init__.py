"""How well the spring-block chain explains the networks: the comparator.

It stands on both sides (``springblock`` and the network side of ``dnnphase``)
and is the only place that knows both:

* :func:`compare` — a chain phase diagram against a network sweep -> report Dataset
  (:func:`summary` prints it);
* :func:`fit` — the chain fitted to every cell of a sweep (final curves or
  whole training trajectories);
* :func:`dictionary_table`, :func:`effective_force_table` — the paper's
  dictionary (noise <-> knob, friction <-> nonlinearity) in numbers;
* :func:`reproduce` — every result and figure of a preset, end to end.
"""

from dnnphase.compare.dictionary import dictionary_table, effective_force_table
from dnnphase.compare.fitting import fit_sweep_final, fit_sweep_trajectory
from dnnphase.compare.presets import PRESETS, reproduce
from dnnphase.compare.report import compare, fit_chain, summary

fit = fit_chain

__all__ = [
    "PRESETS",
    "compare",
    "dictionary_table",
    "effective_force_table",
    "fit",
    "fit_chain",
    "fit_sweep_final",
    "fit_sweep_trajectory",
    "reproduce",
    "summary",
]
