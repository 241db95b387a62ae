"""dnnphase: train families of deep networks and measure how each layer separates the data.

The network side of the spring-block theory of feature learning:

* :func:`sweep` — nonlinearity alpha x a noise knob x seeds -> ``xarray.Dataset``
  (:class:`SweepConfig`; resumable and distributable);
* :func:`measure_model` — the load curve of any ``torch.nn.Module`` (forward hooks,
  streamed), :class:`LoadCurveRecorder` — over a training loop of one's own;
* :mod:`dnnphase.metrics` — the separation measures of one layer and the load curve of
  a network (numpy; ``from dnnphase.metrics import fuzziness``). The attribute
  ``dnnphase.separation`` holds their batched torch version, the module
  ``dnnphase.measures.separation_torch``.

The comparison with the spring-block chain is :mod:`dnnphase.compare`
(``from dnnphase.compare import compare, fit, reproduce``); ``import dnnphase``
alone never imports the chain (nor numba).

The folders follow the data's path (docs/architecture.md): the base here (the modules
``defaults`` and ``knobs``, the package ``data``), then ``networks``, ``training``,
``measures``, ``sweeps`` and ``compare``; each imports only those before it.
"""

from dnnphase import metrics
from dnnphase.measures import separation_torch as separation
from dnnphase.measures.load_curve import LoadCurveRecorder, measure_model
from dnnphase.sweeps.sweep import SweepConfig, sweep
from phasecore import __version__

__all__ = ["LoadCurveRecorder", "SweepConfig", "__version__", "measure_model", "metrics",
           "separation", "sweep"]
