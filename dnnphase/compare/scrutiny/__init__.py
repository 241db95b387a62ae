"""This project's own results held to the standard it asks of the papers': each recomputed
the other way.

* ``own_claims`` — the statements of docs/fit.md and docs/prediction.md that rest on choices
  favouring the chain (one Gaussian scale per diagram, seed weights pooled over cells, the
  baselines and splits chosen), recomputed the other way from the same committed sweeps and
  family files (``python scripts/scrutiny.py``);
* ``measure_agreement`` — the same networks under two separation measures: do their phase
  diagrams agree? (``python scripts/two_measures.py``)

May import: :mod:`dnnphase.compare.comparator` and what it may, and its own modules.
"""

__all__ = []
