"""The figures (matplotlib: ``import dnnphase.compare`` loads none of them).

* ``comparison`` — the networks beside the chain, the chain fitted to the networks, and
  their dynamics (``dnnphase compare``, ``dnnphase fit --figure``, ``reproduce``);
* ``separation_laws`` — one figure per experiment of He & Su and of Galanti et al.
  (``python scripts/separation_laws.py``);
* ``two_measures`` — the two separation measures side by side (the spring–block paper's
  SM S4; ``python scripts/two_measures.py``).

May import: the rooms before it (:mod:`dnnphase.compare.comparator`, the scrutiny), what
they may, and its own modules; never the ledger of the papers' claims, which sits above the
networks' package (He & Su's rule for Fig. 1's learning rates comes in as an argument of
``separation_laws.plot_experiment``).
"""

__all__ = []
