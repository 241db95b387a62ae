"""Sweeps: families of networks over a grid, trained, measured and stored.

* ``sweep`` — :func:`sweep` and :class:`SweepConfig` (nonlinearity alpha x a noise
  knob x seeds -> ``xarray.Dataset``; resumable and distributable);
* ``assemble`` — a sweep's chunks as one labelled Dataset, with the papers' statistics;
* ``memory`` — what a sweep's chunk needs in memory, checked before training;
* ``tune``, ``tune_search`` — the knob value where the load curve turns linear;
* ``experiments`` — the supplement's single-figure experiments;
* ``regression`` — the supplement's regression diagram (Fig. S12: MSE, the regression load);
* ``universality`` — the supplement's universality diagrams (Figs. S5, S6, S7) as presets;
* ``plotting`` — a sweep's phase diagram and load curves (matplotlib).

May import: the top-level base modules, :mod:`dnnphase.networks`,
:mod:`dnnphase.training` and :mod:`dnnphase.measures`.
"""

__all__ = []
