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

Its rooms, one idea each (each folder's ``__init__`` lists its modules):

* ``comparator/`` — the chain against the networks: ``alignment`` (checks, oriented axes,
  rank alignment), ``agreement``, ``peaks``, ``report``, ``words`` (the summary in words),
  ``fitting``, ``dictionary``, ``surface`` (the chain's curvature table), ``baselines``,
  ``prediction`` and ``family`` (the family of chains, :mod:`springblock.fit.variants`, on
  trajectories and held-out cells);
* ``scrutiny/`` — this project's own results recomputed the other way: ``own_claims`` (the
  fit's and the prediction's claims) and ``measure_agreement`` (two separation measures of
  the same networks);
* ``figures/`` — matplotlib, so imported on its own: ``comparison`` (``from
  dnnphase.compare.figures import comparison``), ``separation_laws``, ``two_measures``;
* ``presets`` — :func:`reproduce`, which runs the chain, the networks, the comparator and
  the figures of a preset.

The ledger of the papers' claims and ours is not a room here: it judges the chain's paper and
the networks' alike, so it lives above both packages, in :mod:`phaseclaims`, which imports
this package and is imported by none of it.

May import: every other folder of dnnphase and springblock (the only place that
imports the chain); within the package only the command line imports it. Inside it the
rooms import one way, each only rooms before it in the order comparator, scrutiny,
figures, presets.
"""

from dnnphase.compare.comparator.agreement import cohen_kappa, rank_correlations, sweeps_agree
from dnnphase.compare.comparator.alignment import chain_axes
from dnnphase.compare.comparator.dictionary import dictionary_table, effective_force_table
from dnnphase.compare.comparator.fitting import fit_chain, fit_sweep_final, fit_sweep_trajectory
from dnnphase.compare.comparator.peaks import accuracy_peak, row_accuracy_peaks
from dnnphase.compare.comparator.prediction import held_out_prediction, transfer_table
from dnnphase.compare.comparator.report import compare
from dnnphase.compare.comparator.words import summary
from dnnphase.compare.presets import PRESETS, reproduce

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
