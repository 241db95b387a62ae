"""The layer both packages stand on: no numba, no torch.

* :mod:`~springblock.shared.checks` — the one configuration error and its checks;
* :mod:`~springblock.shared.loadcurve` — the shape of a load curve (curvature, phase);
* :mod:`~springblock.shared.results` — labelled NetCDF results with provenance;
* :mod:`~springblock.shared.sweeps` — chunked, resumable, optionally distributed sweeps;
* :mod:`~springblock.shared.commandline` — the command-line runner both CLIs use;
* :mod:`~springblock.shared.panels` — the phase-diagram figure both packages draw.

``import dnnphase`` reaches the chain package only through here, so it never
compiles a numba kernel (tested).
"""
