"""The layer both packages stand on: no numba, no torch.

* :mod:`~phasecore.checks` — the one configuration error and its checks;
* :mod:`~phasecore.loadcurve` — the shape of a load curve (curvature, phase);
* :mod:`~phasecore.results` — labelled NetCDF results with provenance, atomic writes;
* :mod:`~phasecore.sweeps` — chunked, resumable sweeps, built on
  :mod:`~phasecore.store` (chunks on disk), :mod:`~phasecore.executors` (where
  chunks run and how they stop) and :mod:`~phasecore.progress`;
* :mod:`~phasecore.commandline` — the command-line runner both CLIs use;
* :mod:`~phasecore.panels` — the phase-diagram figure both packages draw.

``springblock`` (the chain) and ``dnnphase`` (the networks) both import it;
it imports neither.
"""

#: The one version of the distribution (pyproject reads it; both packages re-export it).
__version__ = "0.3.0"

__all__ = ["__version__"]
