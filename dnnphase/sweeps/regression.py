"""The supplement's regression diagram (paper SM S5, Fig. S12): networks trained with the
mean squared error, the load of layer l the RMSE of the best affine regressor from its
features (:func:`dnnphase.measures.separation_numpy.regression_load`).

The task: the paper's 2 560 MNIST digits (10 x 10) with each image's digit as a number,
t = label / 9 (:func:`dnnphase.training.regression.digit_value_targets`); the paper's text
does not name its regression data. The network, optimiser and epochs are the paper's
defaults (MLP 7 x 100, BatchNorm, Adam lr 1e-3, full batch, 100 epochs); nonlinearity
alpha down the rows and dropout across, as in the classification diagrams.

* :data:`REGRESSION` — the diagram's settings; :data:`QUICK` — seconds, for tests;
* :func:`regression_sweep` — every (alpha, dropout, seed) network -> ``xarray.Dataset``.
"""

from __future__ import annotations

import contextlib
import json

import numpy as np
import torch
import xarray as xr

from dnnphase.data import load_dataset
from dnnphase.knobs import check
from dnnphase.measures.separation_numpy import regression_load
from dnnphase.training.regression import digit_value_targets, train_regression
from phasecore.checks import is_int, require
from phasecore.loadcurve import curvature_scaled
from phasecore.results import provenance

__all__ = ["QUICK", "REGRESSION", "regression_sweep"]

#: Fig. S12's settings (fields of :func:`regression_sweep`).
REGRESSION = dict(alphas=(0.0, 0.5, 1.0), dropouts=(0.0, 0.1, 0.2, 0.3), seeds=4,
                  dataset="mnist5k", n_train=None, epochs=100, lr=1e-3, depth=7, width=100)
#: A scale for tests (seconds): a small network on 8 x 8 digits.
QUICK = dict(REGRESSION, alphas=(0.0, 1.0), dropouts=(0.0, 0.3), seeds=2, dataset="digits",
             n_train=300, epochs=5, depth=3, width=16)


def _check(alphas, dropouts, seeds, epochs):
    for name, values in (("alphas", alphas), ("dropouts", dropouts)):
        require(len(values) >= 1 and len(set(values)) == len(values), name,
                "a non-empty list of distinct values", values)
    check("alpha", list(alphas), label="alphas")
    check("dropout", list(dropouts), label="dropouts")
    require(is_int(seeds) and seeds >= 1, "seeds", "an integer >= 1", seeds)
    require(is_int(epochs) and epochs >= 1, "epochs", "an integer >= 1", epochs)


@contextlib.contextmanager
def _one_thread():
    """One torch and one BLAS thread for the block (as the stacked trainer's CPU default):
    a small least-squares solve runs ~80x slower when BLAS threads compete for busy cores."""
    old = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        try:
            from threadpoolctl import threadpool_limits
        except ImportError:  # scikit-learn brings it; without it BLAS keeps its threads
            limits = contextlib.nullcontext()
        else:
            limits = threadpool_limits(1)
        with limits:
            yield
    finally:
        torch.set_num_threads(old)


def _layer_loads(model, x: np.ndarray, t: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """RMSE of the best affine regressor onto ``t`` from each layer's features, (L+1,),
    and the network's predictions (N, m)."""
    with torch.no_grad():
        out, feats = model(torch.as_tensor(x), return_features=True)
    return np.array([regression_load(f.double().numpy(), t) for f in feats]), out.numpy()


def regression_sweep(*, alphas=REGRESSION["alphas"], dropouts=REGRESSION["dropouts"],
                     seeds: int = REGRESSION["seeds"], dataset: str = REGRESSION["dataset"],
                     n_train=REGRESSION["n_train"], epochs: int = REGRESSION["epochs"],
                     lr: float = REGRESSION["lr"], depth: int = REGRESSION["depth"],
                     width: int = REGRESSION["width"]) -> xr.Dataset:
    """Train one network per (alpha, dropout, seed) with MSE and measure its load curve.

    Returns a Dataset with dims (alpha, dropout, seed, layer): ``load_curve`` (the
    training set's regression load D_l, RMSE in target units, l = 0 the normalised input),
    ``curvature_scaled`` (:func:`phasecore.loadcurve.curvature_scaled`), ``train_rmse`` and
    ``test_rmse`` (the network's own predictions). Every setting is checked before any
    training.
    """
    alphas, dropouts = tuple(float(a) for a in alphas), tuple(float(p) for p in dropouts)
    _check(alphas, dropouts, seeds, epochs)
    data = load_dataset(dataset, n_train=n_train)
    t_train, t_test = digit_value_targets(data.y_train), digit_value_targets(data.y_test)
    shape = (len(alphas), len(dropouts), seeds)
    curves = np.full(shape + (depth + 1,), np.nan)
    train_rmse, test_rmse = np.full(shape, np.nan), np.full(shape, np.nan)
    cells = [(i, j, s) for i in range(len(alphas)) for j in range(len(dropouts))
             for s in range(seeds)]
    with _one_thread():
        for i, j, s in cells:
            model, _ = train_regression(data.x_train, t_train, alpha=alphas[i],
                                        dropout=dropouts[j], lr=lr, epochs=epochs, seed=s,
                                        depth=depth, width=width)
            curves[i, j, s], fitted = _layer_loads(model, data.x_train, t_train)
            train_rmse[i, j, s] = float(np.sqrt(np.mean((fitted - t_train) ** 2)))
            with torch.no_grad():
                pred = model(torch.as_tensor(data.x_test)).numpy()
            test_rmse[i, j, s] = float(np.sqrt(np.mean((pred - t_test) ** 2)))
    dims = ("alpha", "dropout", "seed")
    config = dict(alphas=alphas, dropouts=dropouts, seeds=seeds, dataset=dataset,
                  n_train=n_train, epochs=epochs, lr=lr, depth=depth, width=width,
                  loss="mse", optimizer="adam", batch_size=None, task="digit value / 9")
    return xr.Dataset(
        {"load_curve": (dims + ("layer",), curves, {
            "long_name": "RMSE of the best affine regressor from the layer's features",
            "units": "target units"}),
         "curvature_scaled": (dims, curvature_scaled(curves), {
             "long_name": "scale-free curvature of the load curve"}),
         "train_rmse": (dims, train_rmse, {"long_name": "the network's training RMSE"}),
         "test_rmse": (dims, test_rmse, {"long_name": "the network's test RMSE"})},
        coords={"alpha": list(alphas), "dropout": list(dropouts), "seed": np.arange(seeds),
                "layer": np.arange(depth + 1)},
        attrs={**provenance("dnnphase.regression", config), "knob": "dropout",
               "measure": "regression", "data": json.dumps(data.info, default=str)})
