"""The figures of He & Su's and Galanti et al.'s experiments
(:mod:`dnnphase.sweeps.separation_laws`), one per experiment, from its sweeps alone.

He & Su's figures draw log D_l, the natural log of the separation fuzziness, against the
layer l (layer 0 the input), one thin line per seed; Galanti et al.'s draw the CDNV (log
scale) and the NCC accuracy of every hidden layer. Every title says the data, the training
and the scale (:data:`dnnphase.sweeps.separation_laws.SCALE_NOTES`).
"""

from __future__ import annotations

import json
import re
import textwrap

import numpy as np
import xarray as xr

from dnnphase.measures import laws
from dnnphase.sweeps.separation_laws import SCALE_NOTES

__all__ = ["plot_experiment"]


def _fuzziness(ds: xr.Dataset, **where) -> xr.DataArray:
    """The fuzziness load curves of ``ds`` at ``where``, alpha 0: (..., seed, layer)."""
    return ds["load_curve"].sel(measure="fuzziness").isel(alpha=0).sel(**where)


def _seed_lines(ax, curves: np.ndarray, color, label: str, ls: str = "-") -> None:
    """One thin line per seed (S, L+1) and their mean, labelled (NaN layers left out)."""
    layers = np.arange(curves.shape[-1])
    for curve in curves:
        ax.plot(layers, curve, color=color, lw=0.6, alpha=0.45, ls=ls)
    with np.errstate(invalid="ignore"):
        mean = np.nanmean(curves, axis=0) if np.isfinite(curves).any() else curves[0]
    ax.plot(layers, mean, color=color, lw=1.8, marker="o", ms=2.5, label=label, ls=ls)


#: The measurement protocols a title names (ours, the files from before the option, none).
PROTOCOL_WORDS = {"he_su": "He & Su's protocol", "galanti": "Galanti et al.'s protocol"}


def _source(ds: xr.Dataset) -> str:
    """Where a sweep's data came from (its data set's name where the file does not say)."""
    return json.loads(ds.attrs.get("data", "{}")).get(
        "source", json.loads(ds.attrs["config"])["dataset"])


def _title(ds: xr.Dataset, scale: str, samples: bool = True, paper: str = "hesu",
           also: tuple = ()) -> str:
    """The data (``ds``'s and those of the Datasets ``also`` drawn beside it), the
    training-set size (unless ``samples`` is False: a figure of several sizes), what the
    scale keeps of ``paper``'s experiment, the measurement protocol and the CPU kernels
    chosen by hand."""
    config = json.loads(ds.attrs["config"])
    data = " and ".join(dict.fromkeys(_source(d) for d in (ds, *also)))  # each source once
    protocol = config.get("protocol")  # absent: ours (stored before the field existed)
    n_train = config.get("n_train")  # None: the data set's whole training split
    size = ((f", {n_train} training samples" if n_train else ", all its training samples")
            if samples else "")
    levers = {k: v for k, v in json.loads(ds.attrs.get("kernels", "{}")).items()
              if k.isupper()}  # the environment's levers, not PyTorch's own reading
    return (f"data: {data}{size}\n{SCALE_NOTES[scale][paper]}"
            + (f"; {PROTOCOL_WORDS[protocol]}" if protocol in PROTOCOL_WORDS else "")
            + ("; CPU kernels " + ", ".join(f"{k}={v}" for k, v in sorted(levers.items()))
               if levers else ""))


def _stats_text(r: np.ndarray, rho: np.ndarray) -> str:
    return f"r {np.nanmean(r):.3f}, ρ {np.nanmean(rho):.3f}"


#: Fig. 1's optimizers in the order of its rows, with the words a panel's title gives them.
OPTIMIZER_LABELS = {"sgd": "SGD", "momentum": "SGD with momentum", "adam": "Adam"}


def _hesu_fig1(datasets: dict, scale: str, lr_rule):
    import matplotlib.pyplot as plt

    opts = [o for o in OPTIMIZER_LABELS if f"hesu_fig1_{o}" in datasets]
    depths = datasets[f"hesu_fig1_{opts[0]}"]["depth"].values
    fig, axes = plt.subplots(len(opts), len(depths), figsize=(3.2 * len(depths),
                                                              2.6 * len(opts)), squeeze=False)
    for i, opt in enumerate(opts):
        ds = datasets[f"hesu_fig1_{opt}"]
        for j, depth in enumerate(depths):
            ax = axes[i, j]
            chosen = lr_rule(ds, int(depth))
            curves = _fuzziness(ds, depth=depth).transpose("lr", "seed", "layer").values
            pick = np.array([list(ds["lr"].values).index(v) for v in chosen["lr_paper"]])
            ours = curves[pick, np.arange(curves.shape[1])][:, :depth + 1]  # (S, L+1)
            _seed_lines(ax, ours, "C0", f"their lr rule: r {np.nanmean(chosen['r_paper']):.3f}")
            best = list(ds["lr"].values).index(chosen["lr_loss"])
            _seed_lines(ax, curves[best][:, :depth + 1], "C1",
                        f"lowest-loss lr {chosen['lr_loss']:g}: r "
                        f"{np.nanmean(chosen['r_loss']):.3f}", ls="--")
            ax.set_title(f"{OPTIMIZER_LABELS[opt]}, {depth + 1} layers", fontsize=9)
            ax.legend(fontsize=6.5)
            ax.set_xlabel("layer l")
            if j == 0:
                ax.set_ylabel("log D_l (fuzziness)")
    fig.suptitle("He & Su Fig. 1: the law of equi-separation\n"
                 + _title(datasets[f"hesu_fig1_{opts[0]}"], scale), fontsize=9)
    return fig


def _hesu_fig3(datasets: dict, scale: str):
    import matplotlib.pyplot as plt

    names = [n for n in ("hesu_fig3_mnist", "hesu_fig3_fashion") if n in datasets]
    fig, axes = plt.subplots(1, len(names) + 1, figsize=(4.2 * (len(names) + 1), 4.4),
                             squeeze=False)
    axes = axes[0]
    for ax, name in zip(axes, names, strict=False):
        ds = datasets[name]
        depths = ds["depth"].values
        colors = plt.cm.viridis(np.linspace(0, 0.9, len(depths)))
        finals = []
        for color, depth in zip(colors, depths, strict=True):
            curves = _fuzziness(ds, depth=depth).isel(lr=0).transpose("seed", "layer").values
            mean = np.nanmean(curves[:, :depth + 1], axis=0)
            ax.plot(np.arange(depth + 1), mean, color=color, lw=1.2, label=f"L = {depth + 1}")
            finals.append(curves[:, depth])
        ax.set_title(json.loads(ds.attrs["config"])["dataset"], fontsize=9)
        ax.set_xlabel("layer l")
        ax.set_ylabel("log D_l (seed mean)")
        ax.legend(fontsize=6, ncol=2)
        finals = np.array(finals)  # (D, S)
        axes[-1].errorbar(depths + 1, np.nanmean(finals, axis=1),
                          yerr=np.nanstd(finals, axis=1), marker="o", capsize=2,
                          label=name.removeprefix("hesu_fig3_"))
    axes[-1].set_xlabel("their depth L (L − 1 hidden layers)")
    axes[-1].set_ylabel("log D, last layer (mean ± sd)")
    axes[-1].legend(fontsize=7)
    fig.suptitle("He & Su Fig. 3: the optimal depth (lowest final fuzziness)\n"
                 + _title(datasets[names[0]], scale,
                          also=tuple(datasets[n] for n in names[1:])), fontsize=9)
    return fig


def _hesu_fig4(datasets: dict, scale: str):
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(10, 5.0))
    fig.subplots_adjust(bottom=0.3, top=0.8, wspace=0.25)
    panels = (("widths", ("width20", "width100", "width1000")),
              ("shapes", ("narrow_wide", "wide_narrow", "mixed", "width100")))
    for ax, (title, names) in zip(axes, panels, strict=True):
        for k, name in enumerate(names):
            ds = datasets.get(f"hesu_fig4_{name}")
            if ds is None:
                continue
            width = json.loads(ds.attrs["config"])["width"]
            shown = "-".join(map(str, width)) if isinstance(width, list) else width
            curves = _fuzziness(ds).isel(lr=0).transpose("seed", "layer").values
            _seed_lines(ax, curves, f"C{k}", f"{name.replace('_', '-')} ({shown}): "
                        + _stats_text(ds["pearson_r"].values, ds["decay_ratio"].values))
        ax.set_title(title, fontsize=9)
        ax.set_xlabel("layer l")
        ax.set_ylabel("log D_l (fuzziness)")
        # below the panel: every curve runs corner to corner, and the shapes' long labels
        # would cover them anywhere inside
        ax.legend(fontsize=6.5, loc="upper center", bbox_to_anchor=(0.5, -0.16))
    first = next(iter(datasets.values()))
    fig.suptitle("He & Su Fig. 4: widths and shapes (8 layers)\n" + _title(first, scale),
                 fontsize=8)
    return fig


def _hesu_sizes(datasets: dict, scale: str):
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4.4))
    for k, ds in enumerate(datasets.values()):
        curves = _fuzziness(ds).isel(lr=0).transpose("seed", "layer").values
        n = json.loads(ds.attrs["config"])["n_train"]
        _seed_lines(ax, curves, f"C{k}", f"n = {n}: "
                    + _stats_text(ds["pearson_r"].values, ds["decay_ratio"].values)
                    + f", half-life {np.nanmean(ds['half_life'].values):.2f}")
    ax.set_xlabel("layer l")
    ax.set_ylabel("log D_l (fuzziness)")
    ax.legend(fontsize=7)
    fig.suptitle("He & Su Fig. 7: the sample size (8 layers)\n"
                 + _title(next(iter(datasets.values())), scale, samples=False), fontsize=8)
    return fig


def _hesu_fig9(datasets: dict, scale: str):
    import matplotlib.pyplot as plt

    ds = datasets["hesu_fig9"]
    curves = ds["load_curve_epochs"].isel(alpha=0, lr=0).transpose("seed", "epoch", "layer")
    stats = laws.equi_separation(curves.values)  # (S, E)
    epochs = ds["epoch"].values
    fig, (left, right) = plt.subplots(1, 2, figsize=(9.5, 3.8))
    colors = plt.cm.plasma(np.linspace(0, 0.9, len(epochs)))
    mean = np.nanmean(curves.values, axis=0)  # (E, L+1)
    for color, epoch, curve in zip(colors, epochs, mean, strict=True):
        left.plot(np.arange(curve.size), curve, color=color, lw=1,
                  label=f"epoch {epoch}" if epoch in (epochs[0], epochs[len(epochs) // 2],
                                                      epochs[-1]) else None)
    left.set_xlabel("layer l")
    left.set_ylabel("log D_l (seed mean)")
    left.legend(fontsize=7)
    right.plot(epochs, np.nanmean(stats["pearson_r"], axis=0), "o-", ms=3, label="Pearson r")
    right.plot(epochs, np.nanmean(stats["decay_ratio"], axis=0), "s-", ms=3,
               label="decay ratio ρ")
    right.axhline(-0.99, color="grey", lw=0.6, ls=":")
    right.set_xlabel("epoch")
    right.legend(fontsize=7)
    fig.suptitle("He & Su Fig. 9: the law's emergence during training (20 layers)\n"
                 + _title(ds, scale), fontsize=8)
    return fig


def _hesu_fig12(datasets: dict, scale: str):
    import matplotlib.pyplot as plt

    ds = datasets["hesu_fig12"]
    fig, ax = plt.subplots(figsize=(7, 4.4))
    for k, (variable, suffix, words) in enumerate((("load_curve", "", "training data"),
                                                  ("load_curve_test", "_test", "test data"))):
        curves = ds[variable].sel(measure="fuzziness").isel(alpha=0, lr=0).transpose(
            "seed", "layer").values
        _seed_lines(ax, curves, f"C{k}", f"{words}: " + _stats_text(
            ds[f"pearson_r{suffix}"].values, ds[f"decay_ratio{suffix}"].values))
    ax.set_xlabel("layer l")
    ax.set_ylabel("log D_l (fuzziness)")
    ax.legend(fontsize=7)
    fig.suptitle("He & Su Fig. 12: the law on test data (8 layers)\n" + _title(ds, scale),
                 fontsize=8)
    return fig


def _layer_panels(axes, ds: xr.Dataset, select: dict, depth: int, color, label) -> None:
    """CDNV (training, test) and NCC (training, test with training centres) over layers."""
    layers = np.arange(1, depth + 1)
    panels = (("load_curve", "cdnv"), ("load_curve_test", "cdnv"), ("load_curve", "ncc"),
              ("ncc_train_centres_test", None))
    for ax, (variable, measure) in zip(axes, panels, strict=True):
        values = ds[variable]
        if measure is not None:
            values = values.sel(measure=measure)
        values = values.isel(alpha=0).sel(**select).transpose("seed", "layer").values
        values = values[:, 1:depth + 1]
        ax.plot(layers, np.nanmean(values, axis=0), "o-", ms=2.5, color=color, label=label)


def _galanti_fig1(datasets: dict, scale: str):
    import matplotlib.pyplot as plt

    ds = datasets["galanti_fig1"]
    depths = ds["depth"].values
    fig, axes = plt.subplots(4, len(depths), figsize=(2.6 * len(depths), 8.4), squeeze=False)
    for j, depth in enumerate(depths):
        _layer_panels(axes[:, j], ds, {"depth": depth, "lr": ds["lr"].values[0]}, int(depth),
                      "C0", None)
        eff = ds["effective_depth"].sel(depth=depth).values.ravel()
        # three short lines: "none, none, 16" on one line with the label ran out of its box
        axes[0, j].set_title(f"{depth} hidden layers\neffective depth\nby seed: "
                             + ", ".join("none" if not np.isfinite(e) else f"{e:g}"
                                         for e in eff), fontsize=8)
        axes[-1, j].set_xlabel("hidden layer")
        for ax in axes[:2, j]:
            ax.set_yscale("log")
        for ax in axes[2:, j]:
            ax.axhline(0.99, color="grey", lw=0.6, ls=":")
    for ax, words in zip(axes[:, 0], ("CDNV, training", "CDNV, test", "NCC acc., training",
                                      "NCC acc., test\n(training centres)"), strict=True):
        ax.set_ylabel(words, fontsize=8)
    fig.suptitle("Galanti et al. Fig. 1: minimal depth, MLP-d-100 (seed means)\n"
                 + _title(ds, scale, paper="galanti"), fontsize=8)
    return fig


def _galanti_fig3(datasets: dict, scale: str):
    import matplotlib.pyplot as plt

    ds = datasets["galanti_fig3"]
    depth = ds.sizes["layer"] - 1
    fig, axes = plt.subplots(1, 4, figsize=(14, 3.4))
    for k, q in enumerate(ds["random_labels"].values):
        _layer_panels(axes, ds, {"random_labels": q}, depth, f"C{k}",
                      f"{q:.0%} random labels")
    for ax, words in zip(axes, ("CDNV, training", "CDNV, test", "NCC acc., training",
                                "NCC acc., test (training centres)"), strict=True):
        ax.set_title(words, fontsize=9)
        ax.set_xlabel("hidden layer")
    axes[0].set_yscale("log")
    axes[1].set_yscale("log")
    axes[0].axvline(4, color="grey", lw=0.6, ls=":")
    axes[2].legend(fontsize=7)
    fig.suptitle(f"Galanti et al. Fig. 3: fixed random labels, MLP-{depth}-"
                 f"{json.loads(ds.attrs['config'])['width']} (seed means)\n"
                 + _title(ds, scale, paper="galanti"),
                 fontsize=8)
    return fig


_PLOTS = {"hesu_fig1": _hesu_fig1, "hesu_fig3": _hesu_fig3, "hesu_fig4": _hesu_fig4,
          "hesu_fig7": _hesu_sizes,
          "hesu_fig9": _hesu_fig9, "hesu_fig12": _hesu_fig12, "galanti_fig1": _galanti_fig1,
          "galanti_fig3": _galanti_fig3}


def _wrapped_title(title: str, width: int) -> str:
    """``title``'s lines wrapped to ``width`` characters, never inside a number written
    with a thin group space ("5 000": its space made unbreakable)."""
    title = re.sub(r"(?<=\d) (?=\d{3}\b)", "\u00a0", title)
    return "\n".join(part for line in title.split("\n") for part in textwrap.wrap(line, width))


def plot_experiment(experiment: str, datasets: dict, scale: str, lr_rule=None):
    """The figure of one experiment from its sweeps.

    Parameters
    ----------
    experiment : str
        A key of :data:`dnnphase.sweeps.separation_laws.EXPERIMENTS` (``"hesu_fig1"``, ...).
    datasets : dict of str to xarray.Dataset
        The experiment's sweeps, by sweep name (``"hesu_fig1_sgd"``, ...).
    scale : str
        The scale they were run at, a key of :data:`~dnnphase.sweeps.separation_laws.SCALE_NOTES`.
    lr_rule : callable, optional
        He & Su's choice of learning rate, required for ``"hesu_fig1"`` only (the ledger's
        :func:`phaseclaims.he_su.paper_rule`): ``lr_rule(ds, depth)`` of a lr sweep and one
        of its depths gives per seed ``lr_paper`` (S,) and ``r_paper`` (S,), the chosen lrs
        and their Pearson r, and ``lr_loss`` (the lr of lowest seed-mean final training
        loss) with ``r_loss`` (S,) there. The figure draws the rule's choices; the ledger
        keeps the rule.

    Returns
    -------
    matplotlib.figure.Figure
    """
    from phasecore.checks import require

    require(experiment in _PLOTS, "experiment", f"one of {', '.join(_PLOTS)}", experiment)
    require(experiment != "hesu_fig1" or callable(lr_rule), "lr_rule",
            "He & Su's choice of learning rate (phaseclaims.he_su.paper_rule) to draw "
            "hesu_fig1", lr_rule)
    from matplotlib.ticker import MaxNLocator

    fig = (_hesu_fig1(datasets, scale, lr_rule) if experiment == "hesu_fig1"
           else _PLOTS[experiment](datasets, scale))
    for ax in fig.axes:  # every x axis counts layers, depths or epochs: whole numbers
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    # about 14 characters an inch at the title's size; tight_layout keeps the panels below
    fig.suptitle(_wrapped_title(fig.get_suptitle(), int(fig.get_figwidth() * 14)), fontsize=8)
    fig.tight_layout()
    return fig
