"""Training: many networks stepped together until each stops.

* ``train`` — :func:`train_models` / :func:`train_ensemble`, :class:`TrainConfig`
  (what stops a model, the data it sees, the tensors it ends with);
* ``settings`` — :class:`TrainingSettings`, the settings a sweep shares with the trainer;
* ``loop`` — the stacked training loop (batches, early stops, retired models);
* ``optim`` — the stacked optimisers (SGD, Adam) with a learning rate per model;
* ``schedule`` — noise schedules (a knob that changes during training) and
  learning-rate drops at fractions of the run;
* ``regression`` — one network trained with the mean squared error on regression targets
  (the supplement's Fig. S12; the stacked trainer is cross-entropy on class labels).

May import: the top-level base modules and :mod:`dnnphase.networks`.
"""

__all__ = []
