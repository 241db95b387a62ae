"""Measures: how well each layer separates the classes, and the load curve.

* ``separation_numpy`` — the separation measures of one layer and the load curve
  of a network, in numpy (the reference; ``dnnphase.measures.separation_numpy``);
* ``separation_torch`` — the same measures batched over models in torch
  (``dnnphase.measures.separation_torch``);
* ``load_curve`` — :func:`measure_model` and :class:`LoadCurveRecorder`, the load
  curve of any ``torch.nn.Module`` through forward hooks (``hooks``: the chosen layers'
  features, and the check that the data fit the model's first layer);
* ``laws`` — the papers' statistics of a load curve: He & Su's r, decay ratio and
  half-life, Galanti et al.'s effective depth and their test NCC (training centres).

May import: the top-level base modules only (a measure needs no network of ours).
"""

__all__ = []
