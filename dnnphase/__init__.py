"""dnnphase: train families of deep networks and measure how each layer separates the data.

The network side of the spring-block theory of feature learning:

* :func:`sweep` — nonlinearity alpha x a noise knob x seeds -> ``xarray.Dataset``
  (:class:`SweepConfig`; resumable and distributable);
* :mod:`dnnphase.metrics` — the separation measures of one layer and the load
  curve of a network (numpy; :mod:`dnnphase.separation` is the batched torch version).

The comparison with the spring-block chain is :mod:`dnnphase.compare`
(``from dnnphase.compare import compare, fit, reproduce``); ``import dnnphase``
alone never imports the chain (nor numba).
"""

from dnnphase import metrics, separation
from dnnphase.phase import SweepConfig, sweep
from phasecore import __version__

__all__ = ["SweepConfig", "__version__", "metrics", "separation", "sweep"]
