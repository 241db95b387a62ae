"""The separation measures of one layer and the load curve of a network, in numpy.

``from dnnphase.metrics import fuzziness`` — the public face of
:mod:`dnnphase.measures.separation_numpy` (the numpy reference, one model and one layer at
a time, float64; definitions in docs/measures.md). Each measure ``f(features, labels)``
takes a layer's features, shape (N, d), and the class labels, shape (N,); ``load_curve``
evaluates one of them on every layer 0..L; ``curvature``, ``curvature_scaled``,
``linearity`` and ``phase_label`` measure a load curve's shape. The sweeps use the same
measures batched over models in torch (``dnnphase.separation``).

``MEASURE_NAMES`` are the measures' names in their order (``"trace_ratio"``,
``"fuzziness"``, ``"cdnv"``, ``"ncc"``, ``"regression"``), ``MEASURES`` maps each to its
function, ``FUZZINESS_RCOND`` is ``fuzziness``'s default relative rank cut-off and
``EFFECTIVE_DEPTH_THRESHOLD`` ``effective_depth``'s default threshold.
"""

from dnnphase.measures.separation_numpy import (
    EFFECTIVE_DEPTH_THRESHOLD,
    FUZZINESS_RCOND,
    MEASURE_NAMES,
    MEASURES,
    ClassStatistics,
    cdnv,
    check_measures,
    class_statistics,
    curvature,
    curvature_scaled,
    effective_depth,
    fuzziness,
    layer_measures,
    linearity,
    load_curve,
    ncc_accuracy,
    phase_label,
    regression_load,
    regression_load_onehot,
    trace_ratio,
    within_between_covariance,
)

__all__ = [
    "trace_ratio",
    "fuzziness",
    "cdnv",
    "ncc_accuracy",
    "regression_load",
    "regression_load_onehot",
    "effective_depth",
    "layer_measures",
    "load_curve",
    "check_measures",
    "class_statistics",
    "ClassStatistics",
    "within_between_covariance",
    "curvature",
    "curvature_scaled",
    "linearity",
    "phase_label",
    "MEASURES",
    "MEASURE_NAMES",
    "FUZZINESS_RCOND",
    "EFFECTIVE_DEPTH_THRESHOLD",
]
