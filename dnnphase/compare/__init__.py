"""How well the spring-block chain explains the networks: the comparator.

It stands on both sides (``springblock`` and the network side of ``dnnphase``)
and is the only place that knows both:

* :func:`compare` — a chain phase diagram against a network sweep -> report Dataset
  (:func:`summary` prints it); its parts: :func:`chain_axes` (which chain axis
  is friction, which noise), :func:`cohen_kappa` and :func:`rank_correlations`
  (agreement), :func:`accuracy_peak` and :func:`row_accuracy_peaks` (where test
  accuracy peaks);
* :func:`fit` (= :func:`fit_chain`) — the chain fitted to every cell of a sweep
  (final curves, :func:`fit_sweep_final`, or whole training trajectories,
  :func:`fit_sweep_trajectory`);
* :func:`dictionary_table`, :func:`effective_force_table` — the paper's
  dictionary (noise <-> knob, friction <-> nonlinearity) in numbers;
* :func:`held_out_prediction`, :func:`transfer_table` — prediction, not description: the
  chain's monotone map from (alpha, knob) to (friction, noise) fitted on part of a diagram
  predicts the held-out cells' curvature, against baselines without mechanics;
* :func:`sweeps_agree` — two runs of one sweep (a re-run, another machine or version)
  cell by cell against their seed noise;
* :func:`reproduce` — every result and figure of a :data:`PRESETS` entry, end to end.

Modules, one idea each: ``alignment`` (checks, oriented axes, rank alignment),
``agreement``, ``peaks``, ``report``, ``words`` (the summary in words),
``fitting``, ``dictionary``, ``baselines``, ``surface`` (the chain's curvature table),
``prediction``, ``family`` (the family of chains, :mod:`springblock.fit.variants`, on
trajectories and held-out cells), ``scrutiny`` (the project's own claims on both, recomputed
the other way), ``presets`` and ``figures``
(matplotlib, so imported on its own: ``from dnnphase.compare import figures``).

May import: every other folder of dnnphase and springblock (the only place that
imports the chain); within the package only the command line imports it.
"""

from dnnphase.compare.agreement import cohen_kappa, rank_correlations, sweeps_agree
from dnnphase.compare.alignment import chain_axes
from dnnphase.compare.dictionary import dictionary_table, effective_force_table
from dnnphase.compare.fitting import fit_chain, fit_sweep_final, fit_sweep_trajectory
from dnnphase.compare.peaks import accuracy_peak, row_accuracy_peaks
from dnnphase.compare.prediction import held_out_prediction, transfer_table
from dnnphase.compare.presets import PRESETS, reproduce
from dnnphase.compare.report import compare
from dnnphase.compare.words import summary

fit = fit_chain

__all__ = [
    "PRESETS",
    "accuracy_peak",
    "chain_axes",
    "cohen_kappa",
    "compare",
    "dictionary_table",
    "effective_force_table",
    "fit",
    "fit_chain",
    "fit_sweep_final",
    "fit_sweep_trajectory",
    "held_out_prediction",
    "rank_correlations",
    "reproduce",
    "row_accuracy_peaks",
    "summary",
    "sweeps_agree",
    "transfer_table",
]
