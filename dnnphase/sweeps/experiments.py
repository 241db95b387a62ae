"""The paper's single-figure experiments, as presets: the linear network of Fig. 5(a), the
training vs test load curves of Fig. S4 and the CNN with dropout introduced mid-training
of Fig. S2.

An experiment is a few sweeps (:func:`dnnphase.sweeps.sweep.sweep`) that differ in one
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

__all__ = ["CNN_DROPOUT", "CNN_DROPOUT_PAPER", "CNN_DROPOUT_SCALES", "LINEAR_NETWORK",
           "LINEAR_SETTINGS", "TRAIN_TEST", "cnn_dropout", "combine_cnn_dropout",
           "linear_network", "plot_cnn_dropout", "plot_linear_network", "plot_train_test",
           "separates", "train_test"]

#: Fig. 5(a)'s network, data and training (fields of :class:`dnnphase.sweeps.sweep.SweepConfig`).
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
    ``changes``: any :class:`~dnnphase.sweeps.sweep.SweepConfig` field for every run.
    Returns ``load_curve`` (setting, seed, layer), ``curvature_scaled`` and
    ``curvature`` (setting, seed), ``train_accuracy`` (setting, seed), with the
    configuration of every run in ``attrs``.
    """
    from dnnphase.sweeps.sweep import SweepConfig, sweep

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
        if "kernels" in ds.attrs:
            attrs.setdefault("kernels", ds.attrs["kernels"])
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
    from dnnphase.sweeps.sweep import sweep

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


#: Fig. S2 at the committed ("reduced") scale: the CNN (7 conv layers of 16 channels,
#: ReLU, BatchNorm) trained full batch by Adam without dropout for 100 epochs, by which
#: the training loss is below 1e-3 (near convergence, measured), then 100 more epochs with
#: dropout p from epoch 101 (p = 0 continues without it). About 10 minutes on 2 cores.
CNN_DROPOUT = dict(
    arch="cnn", dataset="mnist5k", n_train=1280, depth=7, channels=16, alphas=(0.0,),
    knob="dropout", values=(0.0, 0.04, 0.16, 0.32, 0.64), seeds=(0, 1, 2),
    batch_size=None, optimizer="adam", lr=1e-3, epochs=200,
    schedule=((1, "dropout", 0.0), (101, "dropout", None)),
    loss_threshold=0.0, rel_tol=0.0,  # the whole run: the change after epoch 100 is the point
    measures=("trace_ratio",),
)
#: Changes to :data:`CNN_DROPOUT` per scale. "paper": the run the paper's text describes
#: (SM S3: 7 conv layers of 16 channels; 2 560 training images of 10 x 10, Adam at lr 1e-4
#: full batch, 2 000 epochs, dropout 0 ... 0.64 introduced half-way, 10 seeds; about
#: 48 TFLOP per model: a GPU or a cluster); "authors": the same with the 20 channels of the
#: authors' published code (about 75 TFLOP per model), the one difference between the two;
#: "quick": the 8 x 8 digits, a small CNN in mini-batches, 15 + 15 epochs, seconds (tests,
#: a first look).
CNN_DROPOUT_PAPER = dict(n_train=2560, channels=16, lr=1e-4, epochs=2000,
                         values=(0.0, 0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64),
                         seeds=tuple(range(10)),
                         schedule=((1, "dropout", 0.0), (1001, "dropout", None)))
CNN_DROPOUT_SCALES = {
    "reduced": {},
    "paper": CNN_DROPOUT_PAPER,
    "authors": {**CNN_DROPOUT_PAPER, "channels": 20},
    "quick": dict(dataset="digits", n_train=600, depth=4, channels=8, batch_size=100,
                  lr=3e-3, epochs=30, values=(0.0, 0.2, 0.5),
                  schedule=((1, "dropout", 0.0), (16, "dropout", None))),
}


def cnn_dropout(scale: str = "reduced", **changes) -> xr.Dataset:
    """Run Fig. S2: the CNN trained without dropout up to epoch E - 1, then with dropout p
    from epoch E (E: the schedule's last entry), for every p of the preset.

    Two sweeps: the scheduled one, and the same models trained only to epoch E - 1 (the
    state where dropout is introduced: its load curve and test accuracy; every model's
    randomness comes from its seed, so these are the scheduled models before the change).
    ``scale``: a key of :data:`CNN_DROPOUT_SCALES`; ``changes``: any
    :class:`~dnnphase.sweeps.sweep.SweepConfig` field; ``scheduler``, ``workers``: see
    :func:`~dnnphase.sweeps.sweep.sweep`.

    Returns, with dims (dropout, seed[, layer]): ``load_curve``, ``load_curve_test``,
    ``curvature_scaled``, ``curvature_scaled_test``, ``test_accuracy``,
    ``train_accuracy``, ``train_loss`` at the end of the run, and the same with the suffix
    ``_before`` (dims (seed[, layer])) at epoch E - 1; with ``record_every``, the
    scheduled run's ``load_curve_epochs`` (dropout, seed, epoch, layer) and its test
    set's; both configurations and the chance accuracy 1 / classes in ``attrs``.
    """
    from dnnphase.sweeps.sweep import SweepConfig, load_data, sweep
    from dnnphase.training.schedule import last_epoch

    require(scale in CNN_DROPOUT_SCALES, "scale", f"one of {', '.join(CNN_DROPOUT_SCALES)}",
            scale)
    run = {k: changes.pop(k) for k in ("scheduler", "workers") if k in changes}
    after = SweepConfig(**{**CNN_DROPOUT, **CNN_DROPOUT_SCALES[scale], **changes})
    switch = last_epoch(after.schedule)
    require(after.knob == "dropout" and switch > 1, "schedule",
            "a dropout sweep whose schedule introduces the dropout after epoch 1",
            after.schedule)
    before = after.replace(values=(0.0,), epochs=switch - 1, schedule=())
    n_classes = load_data(after).n_classes
    names = ["load_curve", "load_curve_test", "curvature_scaled", "curvature_scaled_test",
             "test_accuracy", "train_accuracy", "train_loss"]
    first, last = (sweep(cfg, **run).isel(alpha=0, drop=True).sel(measure=cfg.measures[0],
                                                                  drop=True)
                   for cfg in (before, after))  # each keeps its sweep's attrs
    out = last[names + [n for n in ("load_curve_epochs", "load_curve_epochs_test")
                        if n in last]]  # with record_every
    for name in names:
        out[f"{name}_before"] = first[name].isel(dropout=0, drop=True)
    out.attrs = dict(kind="dnnphase.experiments.cnn_dropout", measure=after.measures[0],
                     dropout_from_epoch=switch, chance_accuracy=1.0 / n_classes,
                     config=last.attrs["config"], config_before=first.attrs["config"],
                     versions=last.attrs["versions"])
    if "kernels" in last.attrs:  # kernels chosen by hand (phasecore.results.provenance)
        out.attrs["kernels"] = last.attrs["kernels"]
    return out


def combine_cnn_dropout(parts: list[xr.Dataset]) -> xr.Dataset:
    """One Fig. S2 result from runs of the same preset on disjoint seeds (several machines,
    or one machine at several times), as if one run had trained every seed.

    Each part's configuration must equal the others' but for ``seeds`` (and
    ``models_per_chunk`` and ``device``, which do not change a model's numbers); the
    seeds must not overlap. Returns the parts concatenated along ``seed`` in increasing
    order, with the combined seeds in ``attrs["config"]`` and ``attrs["config_before"]``.
    """
    import json

    require(len(parts) >= 1, "parts", "at least one cnn_dropout result", len(parts))
    free = {"seeds", "models_per_chunk", "device"}
    configs = []
    for i, part in enumerate(parts):
        require(part.attrs.get("kind") == "dnnphase.experiments.cnn_dropout", f"parts[{i}]",
                "a result of cnn_dropout", part.attrs.get("kind"))
        configs.append({k: json.loads(part.attrs[k]) for k in ("config", "config_before")})
    for i, config in enumerate(configs[1:], 1):
        for key in ("config", "config_before"):
            a, b = ({k: v for k, v in c[key].items() if k not in free}
                    for c in (configs[0], config))
            differ = sorted(k for k in a.keys() | b.keys() if a.get(k) != b.get(k))
            require(not differ, f"parts[{i}]", "the same preset as parts[0] but for seeds "
                    f"(differs in {', '.join(differ)})", key)
    seeds = [int(s) for part in parts for s in part["seed"].values]
    require(len(seeds) == len(set(seeds)), "parts", "runs on disjoint seeds", sorted(seeds))
    out = xr.concat(parts, dim="seed", combine_attrs="override").sortby("seed")
    out.attrs = dict(out.attrs)  # its own, not parts[0]'s
    for key in ("config", "config_before"):
        config = {**configs[0][key], "seeds": sorted(seeds)}
        out.attrs[key] = json.dumps(config, sort_keys=True)
    return out


def separates(ds: xr.Dataset) -> xr.DataArray:
    """Per dropout p, whether the networks separate the classes at all: mean test accuracy
    at least twice chance (:data:`SEPARATES_ABOVE`). A network at chance has a load
    curve of noise, whose curvature means nothing."""
    chance = ds.attrs.get("chance_accuracy", 0.0)
    return ds["test_accuracy"].mean("seed") >= SEPARATES_ABOVE * chance


#: A state "separates" when its mean test accuracy is at least this multiple of chance.
SEPARATES_ABOVE = 2.0


def plot_cnn_dropout(ds: xr.Dataset):
    """Fig. S2: left, the seed-mean load curve (min-max over seeds shaded)
    where dropout is introduced (black) and at the end for every p (colours), with the
    test accuracy; right, the scale-free curvature and the test accuracy against p (dots:
    seeds; dashed: the state before). A p whose networks do not separate the classes
    (:func:`separates`) is listed but gets no curve and no curvature."""
    import matplotlib.pyplot as plt

    fig = plt.figure(figsize=(9.0, 3.8), layout="constrained")
    grid = fig.add_gridspec(2, 2, width_ratios=(1.4, 1.0))
    ax = fig.add_subplot(grid[:, 0])
    ax_c, ax_a = fig.add_subplot(grid[0, 1]), fig.add_subplot(grid[1, 1])
    layers, ps = ds["layer"].values, ds["dropout"].values
    colours = plt.get_cmap("viridis")(np.linspace(0.0, 0.9, len(ps)))
    epoch = ds.attrs.get("dropout_from_epoch", 0) - 1

    def curve(values, colour, label, style="-"):  # values (seed, layer)
        ax.plot(layers, np.nanmean(values, 0), style, marker="o", ms=3, color=colour,
                label=label)
        ax.fill_between(layers, np.nanmin(values, 0), np.nanmax(values, 0), color=colour,
                        alpha=0.15, lw=0)

    acc_before = np.nanmean(ds["test_accuracy_before"].values)
    curve(ds["load_curve_before"].values, "k", f"epoch {epoch}, before: acc {acc_before:.3f}",
          "--")
    separating = separates(ds)
    for p, colour in zip(ps, colours, strict=True):
        acc = np.nanmean(ds["test_accuracy"].sel(dropout=p).values)
        if separating.sel(dropout=p):
            curve(ds["load_curve"].sel(dropout=p).values, colour, f"p = {p:g}: acc {acc:.3f}")
        else:  # its curve is noise, and its range would flatten the others
            ax.plot([], [], "x", color=colour, label=f"p = {p:g}: acc {acc:.3f}, no separation")
    ax.set_xlabel("layer")
    ax.set_xticks(layers)
    ax.set_ylabel(ds.attrs.get("measure", "D"))
    ax.set_title(f"CNN (Fig. S2): dropout p from epoch {epoch + 1}", fontsize=10)
    ax.legend(fontsize=7, frameon=False)

    x = np.arange(len(ps))  # p = 0 and a geometric grid: evenly spaced by rank
    for axis, name, label in ((ax_c, "curvature_scaled", "curvature"),
                              (ax_a, "test_accuracy", "test accuracy")):
        values = ds[name].values  # (dropout, seed)
        if name == "curvature_scaled":  # a state that does not separate has no shape
            values = np.where(separating.values[:, None], values, np.nan)
            for i in np.flatnonzero(~separating.values):
                axis.annotate("no\nseparation", (x[i], 0.5), xycoords=("data", "axes fraction"),
                              ha="center", va="center", fontsize=6, color="0.3")
        for k in range(values.shape[1]):
            axis.scatter(x, values[:, k], s=10, color=colours, zorder=3)
        drawn = ~np.isnan(values).all(1)
        axis.plot(x[drawn], np.nanmean(values[drawn], 1), "-", color="0.3", lw=1)
        axis.set_xlim(x[0] - 0.5, x[-1] + 0.5)
        axis.axhline(np.nanmean(ds[f"{name}_before"].values), ls="--", color="k", lw=1,
                     label="before")
        axis.set_ylabel(label, fontsize=8)
        axis.set_xticks(x, [f"{p:g}" for p in ps], fontsize=7)
    ax_c.axhline(0.0, ls=":", color="0.5", lw=1)
    ax_c.legend(fontsize=7, frameon=False, loc="lower right")
    ax_a.set_xlabel("dropout p (from the switch on)")
    return fig
