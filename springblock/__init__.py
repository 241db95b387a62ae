"""springblock: an exact, ensemble-parallel simulator of the noisy spring-block chain.

The chain of Shi, Pan & Dokmanic's spring-block theory of feature learning:
L blocks between a wall (the input) and a target y, springs of modulus k,
asymmetric friction mu-> / mu<- and force noise s. Entry points:

* :func:`simulate` — one configuration, many seeds -> ``xarray.Dataset``;
* :func:`phase_diagram` — a grid over two parameters x seeds -> ``xarray.Dataset``;
* :mod:`springblock.theory` — Eq. 7, Eq. 8, mean drift, relaxation time;
* :mod:`springblock.fit` — chain parameters fitted to load curves (final or over training);
* :mod:`springblock.shared` — what both packages stand on, free of numba and
  torch: checks, load-curve shape, results io, resumable sweeps, figures.

Submodules are imported lazily so that ``springblock.shared`` can be used
without compiling any numba kernel.
"""

from __future__ import annotations

import importlib

__version__ = "0.1.0"

_LAZY = {
    "simulate": ("springblock.ensemble", "simulate"),
    "run_ensemble": ("springblock.ensemble", "run_ensemble"),
    "phase_diagram": ("springblock.phase", "phase_diagram"),
    "ChainConfig": ("springblock.config", "ChainConfig"),
    "ConfigError": ("springblock.config", "ConfigError"),
    "load": ("springblock.shared.results", "load"),
    "save": ("springblock.shared.results", "save"),
}
_SUBMODULES = {"ensemble", "theory", "dynamics", "events", "rng", "config", "defaults", "phase",
               "plotting", "cli", "shared", "fit"}

__all__ = sorted(_LAZY) + sorted(_SUBMODULES)


def __getattr__(name):
    if name in _LAZY:
        module, attr = _LAZY[name]
        return getattr(importlib.import_module(module), attr)
    if name in _SUBMODULES:
        return importlib.import_module(f"springblock.{name}")
    raise AttributeError(f"module 'springblock' has no attribute {name!r}")
