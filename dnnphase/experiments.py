"""The paper's single-figure experiments, as presets: the linear network of Fig. 5(a) and
the training vs test load curves of Fig. S4.

An experiment is a few sweeps (:func:`dnnphase.phase.sweep`) that differ in one
setting, gathered into one ``xarray.Dataset`` with a ``setting`` dimension, and
its figure. The presets are data (:data:`LINEAR_NETWORK`), so a user can change
a field and rerun.

Fig. 5(a): a deep *linear* network (identity activation, no normalisation, every
weight matrix a random orthogonal matrix at initialisation) trained by plain SGD
on whitened data — the rows of a random orthogonal matrix — with random binary
labels. Small steps (close to gradient flow) give a linear load curve; a large
step size, or dropout, makes it convex.

Our step sizes: the paper quotes SGD at lr 0.001 for its own data size. Here 80
orthonormal samples of dimension 100 and a mean loss make a step of 0.05 still
gradient-flow-like (the curve is the one of lr 0.01, measured: curvature within
±0.003 of zero for both) while 1 000 epochs fit the random labels; 0.2 is the
large step (0.3 diverges).
"""

from __future__ import annotations

import numpy as np
import xarray as xr

from phasecore.checks import require

__all__ = ["LINEAR_NETWORK", "LINEAR_SETTINGS", "TRAIN_TEST", "linear_network",
           "plot_linear_network", "plot_train_test", "train_test"]

#: Fig. 5(a)'s network, data and training (fields of :class:`dnnphase.phase.SweepConfig`).
LINEAR_NETWORK = dict(
    arch="linear", alphas=(1.0,), dataset="orthogonal", norm="none", weight_init="orthogonal",
    optimizer="sgd", depth=5, width=100, epochs=1000, seeds=tuple(range(5)),
    loss_threshold=0.0, rel_tol=0.0,  # train the whole run: the curve's shape is the point
    measures=("trace_ratio",),
)
#: The three runs of Fig. 5(a): name -> the fields that differ.
LINEAR_SETTINGS = {
    "small lr": dict(knob="lr", values=(0.05,)),
    "large lr": dict(knob="lr", values=(0.2,)),
    "dropout": dict(knob="dropout", values=(0.3,), lr=0.05),
}
#: A scale for tests and a first look (seconds): fewer epochs and seeds.
QUICK = dict(epochs=300, seeds=(0, 1, 2))


def linear_network(scale: str = "paper", **changes) -> xr.Dataset:
    """Run Fig. 5(a): one sweep per entry of :data:`LINEAR_SETTINGS`.

    ``scale``: "paper" (:data:`LINEAR_NETWORK`) or "quick" (:data:`QUICK`);
    ``changes``: any :class:`~dnnphase.phase.SweepConfig` field for every run.
    Returns ``load_curve`` (setting, seed, layer), ``curvature_scaled`` and
    ``curvature`` (setting, seed), ``train_accuracy`` (setting, seed), with the
    configuration of every run in ``attrs``.
    """
    from dnnphase.phase import SweepConfig, sweep

    require(scale in ("paper", "quick"), "scale", "paper or quick", scale)
    base = {**LINEAR_NETWORK, **(QUICK if scale == "quick" else {}), **changes}
    configs = {name: SweepConfig(**{**base, **setting})  # all checked before any work
               for name, setting in LINEAR_SETTINGS.items()}
    parts, attrs = [], {}
    for name, cfg in configs.items():
        ds = sweep(cfg)
        one = ds.isel({"alpha": 0, cfg.knob: 0}, drop=True).sel(measure=cfg.measures[0],
                                                                drop=True)
        parts.append(one[["load_curve", "curvature", "curvature_scaled",
                          "train_accuracy"]].expand_dims(setting=[name]))
        attrs[f"config_{name.replace(' ', '_')}"] = ds.attrs["config"]
        attrs.setdefault("versions", ds.attrs["versions"])
    out = xr.concat(parts, dim="setting", combine_attrs="drop")
    out.attrs.update(kind="dnnphase.experiments.linear_network", measure=base["measures"][0],
                     **attrs)
    return out


def plot_linear_network(ds: xr.Dataset):
    """Fig. 5(a): the mean load curve of each setting (seed spread shaded), normalised to
    D_0 = 1, with its scale-free curvature (mean ± SD over seeds)."""
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(5.2, 3.8), layout="constrained")
    layers = ds["layer"].values
    for k, name in enumerate(ds["setting"].values):
        curves = ds["load_curve"].sel(setting=name).values  # (seed, layer)
        drop = curves[:, :1] - curves[:, -1:]
        norm = (curves - curves[:, -1:]) / drop  # D_0 -> 1, D_L -> 0
        mean, sd = np.nanmean(norm, 0), np.nanstd(norm, 0)
        c = ds["curvature_scaled"].sel(setting=name).values
        colour = f"C{k}"
        ax.plot(layers, mean, "o-", color=colour,
                label=f"{name}: curvature {np.nanmean(c):+.3f} ± {np.nanstd(c):.3f}")
        ax.fill_between(layers, mean - sd, mean + sd, color=colour, alpha=0.2, lw=0)
    ax.plot(layers[[0, -1]], [1, 0], ":", color="0.5", lw=1, label="linear")
    ax.set_xlabel("layer")
    ax.set_ylabel(f"{ds.attrs.get('measure', 'D')}, normalised")
    ax.set_title("Linear network (Fig. 5a): SGD on orthogonal data", fontsize=10)
    ax.legend(fontsize=8, frameon=False)
    return fig


#: Fig. S4: the paper's MLP at alpha = 0 (ReLU), a small, a middle and a large learning
#: rate (concave side, next to the boundary, convex side of the committed lr diagram,
#: figures/paper: boundary at lr 0.017, accuracy peak at 0.003), 200 epochs.
TRAIN_TEST = dict(knob="lr", values=(1e-4, 3e-3, 0.2), alphas=(0.0,), seeds=(0, 1, 2),
                  epochs=200, measures=("trace_ratio",))


def train_test(scale: str = "paper", **changes):
    """Run Fig. S4: one lr sweep at alpha = 0 (:data:`TRAIN_TEST`); its Dataset has
    ``load_curve`` and ``load_curve_test`` (training and test set, final models).
    ``scale`` "quick": the digits data set, 60 epochs (seconds)."""
    from dnnphase.phase import sweep

    require(scale in ("paper", "quick"), "scale", "paper or quick", scale)
    quick = dict(dataset="digits", n_train=600, depth=4, width=64, epochs=60,
                 values=(1e-4, 3e-3, 0.1))
    return sweep(**{**TRAIN_TEST, **(quick if scale == "quick" else {}), **changes})


def plot_train_test(ds: xr.Dataset):
    """Fig. S4: per learning rate, the seed-mean load curve of the training set (solid)
    and of the test set (dashed), both divided by the training curve's D_0, with the
    scale-free curvatures and the test accuracy (mean over seeds)."""
    import matplotlib.pyplot as plt

    knob = ds.attrs["knob"]
    measure = str(ds["measure"].values[0])
    values = ds[knob].values
    fig, axes = plt.subplots(1, len(values), figsize=(3.0 * len(values), 3.0), sharey=True,
                             layout="constrained")
    layers = ds["layer"].values
    for ax, v in zip(np.atleast_1d(axes), values, strict=True):
        cell = ds.sel({knob: v, "measure": measure}).isel(alpha=0)
        train = cell["load_curve"].values  # (seed, layer)
        test = cell["load_curve_test"].values
        scale = train[:, :1]
        for curve, style, name in ((train, "-", "training"), (test, "--", "test")):
            norm = curve / scale
            ax.plot(layers, np.nanmean(norm, 0), style, marker="o", ms=3, color="k",
                    label=name)
            ax.fill_between(layers, np.nanmin(norm, 0), np.nanmax(norm, 0), color="0.6",
                            alpha=0.25, lw=0)
        c_tr = np.nanmean(cell["curvature_scaled"].values)
        c_te = np.nanmean(cell["curvature_scaled_test"].values)
        acc = np.nanmean(cell["test_accuracy"].values)
        ax.set_title(f"{knob} {v:g}\ncurvature {c_tr:+.2f} (train) {c_te:+.2f} (test)\n"
                     f"test accuracy {acc:.3f}", fontsize=8)
        ax.set_xlabel("layer")
    np.atleast_1d(axes)[0].set_ylabel(f"{measure} / training D_0")
    np.atleast_1d(axes)[0].legend(fontsize=8, frameon=False)
    return fig
