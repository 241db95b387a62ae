"""The networks: what is trained, one model at a time or many stacked in one.

* ``architecture`` — :class:`Architecture` (the 8 fields that build a network) and
  the registry of architectures by name (``"mlp"``, ``"cnn"``, ``"linear"``);
* ``mlp`` — the paper's MLP (Eq. (1)'s normalisation, weight inits);
* ``cnn`` — the CNN, single and stacked;
* ``stack`` — :class:`StackedModels` (many models as one batched module) and the
  stacked MLP;
* ``fused_layer``, ``mask_kernel`` — the fused CPU hidden layer and the dropout
  masks' numba kernel;
* ``randomness`` — per-model random streams (dropout masks, label noise).

May import: the top-level ``dnnphase.defaults`` and ``dnnphase.knobs``, and the package
``dnnphase.data``; nothing else of dnnphase (tests/cross/test_layout.py).
"""

__all__ = []
