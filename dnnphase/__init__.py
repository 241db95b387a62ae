"""dnnphase: train families of deep networks and measure how each layer separates the data.

The network side of the spring-block theory of feature learning (DESIGN §3-4):

* :func:`sweep` — nonlinearity alpha x a noise knob x seeds -> ``xarray.Dataset``
  (:class:`SweepConfig`; resumable and distributable);
* :mod:`metrics` — the separation measures of one layer and the load curve of
  a network (numpy; :mod:`dnnphase.separation` is the batched torch version);
* :mod:`compare` — how well the chain's phase diagram explains the networks';
* :func:`fit` — the chain fitted to every cell of a sweep (final curves or
  whole training trajectories; :func:`dnnphase.compare.fit_chain`);
* :func:`reproduce` — every result and figure of a preset, end to end.

``import dnnphase`` compiles no numba kernel (the chain is only needed for comparing).
"""

from dnnphase import compare, metrics, separation
from dnnphase.compare import fit_chain as fit
from dnnphase.phase import SweepConfig, sweep
from dnnphase.presets import reproduce

__version__ = "0.2.0"
__all__ = ["SweepConfig", "compare", "fit", "metrics", "reproduce", "separation", "sweep"]
