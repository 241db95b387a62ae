"""springblock: an exact, ensemble-parallel simulator of the noisy spring-block chain.

The chain of Shi, Pan & Dokmanic's spring-block theory of feature learning:
L blocks between a wall (the input) and a target y, springs of modulus k,
asymmetric friction mu-> / mu<- and force noise s. Entry points:

* :func:`simulate` — one configuration, many seeds -> ``xarray.Dataset``;
* :func:`phase_diagram` — a grid over two parameters x seeds -> ``xarray.Dataset``;
* :mod:`springblock.theory` — Eq. 7, Eq. 8, mean drift, relaxation time;
* :mod:`springblock.fit` — chain parameters fitted to load curves (final or over time).

The chain knows nothing about networks; what both sides share (checks, load
curve shape, results, sweeps, figures) is :mod:`phasecore`. Importing this
package compiles no kernel: numba compiles each one on first use (and caches it).
Every run is stoppable: the kernels run in slices of ~0.1 s
(:mod:`springblock.runner`), so Ctrl-C or SIGTERM stops it between two, and a
run given an output resumes from where it stopped, bit for bit.
"""

from phasecore import __version__
from phasecore.checks import ConfigError
from phasecore.results import load, save
from springblock import fit, theory
from springblock.config import ChainConfig
from springblock.ensemble import run_ensemble, simulate
from springblock.phase import phase_diagram

__all__ = [
    "ChainConfig",
    "ConfigError",
    "__version__",
    "fit",
    "load",
    "phase_diagram",
    "run_ensemble",
    "save",
    "simulate",
    "theory",
]
