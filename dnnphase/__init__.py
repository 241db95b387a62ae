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

from phasecore.results import reproducible_kernels

reproducible_kernels()  # before any matrix product: a model computes as it would alone

from dnnphase import metrics  # noqa: E402
from dnnphase.measures import separation_torch as separation  # noqa: E402
from dnnphase.measures.load_curve import LoadCurveRecorder, measure_model  # noqa: E402
from dnnphase.sweeps.sweep import SweepConfig, sweep  # noqa: E402
from phasecore import __version__  # noqa: E402

__all__ = ["LoadCurveRecorder", "SweepConfig", "__version__", "measure_model", "metrics",
           "separation", "sweep"]
