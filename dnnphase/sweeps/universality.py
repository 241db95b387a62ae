"""The supplement's universality figures (Figs. S5, S6, S7): "the highest accuracy occurs
when the load curve is linear" at other depths, other widths, on Fashion-MNIST, and with
another optimizer.

Every diagram is the paper's alpha x dropout diagram (Fig. 1c) on the paper's MLP and
training (:mod:`dnnphase.defaults`: 7 hidden layers of width 100, BatchNorm, Adam at lr
1e-3, full batch, 100 epochs, 2 560 training samples resized to 10 x 10) with one thing
changed:

* Fig. S5: the depth, 3, 5, 7 and 11 hidden layers;
* Fig. S6: the width, 25, 50, 100, 200 and 400 units;
* Fig. S7a: Fashion-MNIST (the Debian package's files, :mod:`dnnphase.data`) in the default
  setting: 2 560 training images resized to 10 x 10, as the paper's MNIST, the official
  10 000 test images;
* Fig. S7b: the same data trained by SGD with momentum 0.9 at lr 0.1, full batch (the
  paper names no second optimizer's settings; these are the textbook ones for BatchNorm
  networks, fixed before any result was seen).

:data:`FIGURES` holds each figure's diagrams (name -> the fields that differ from the
paper's setting), :data:`SCALES` the grid of each scale: "full" is the paper's (6 alphas x
16 dropout rates x 10 seeds: a GPU or a cluster); "paper-grid" the paper's grid with the
first 5 of its seeds (6 x 16 x 5: the paper's resolution in alpha and dropout, at half its
seeds, so that 2 cores finish it as resumable background sweeps over several sessions);
"reduced" the first committed one (3 x 4 x 3); "quick" seconds (tests: the 8 x 8 digits, a
few epochs). All are data, fixed before the diagrams were computed (the paper grid was
committed before any of its networks trained); a mismatch with the paper is a finding, not
a reason to change them. Each scale writes to its own folder (:data:`SCALE_FOLDERS`), so
no scale's files ever replace another's.

The reduced scale on a 2-core Xeon with little other work (load 1.5-4), measured: Fig. S7a
196 s, Fig. S5 356 s (depths 3, 5, 7, 11: 79, 83, 82, 104 s). Measured core-seconds of one
network at 100 epochs, 1.2, 3.1, 9.4 and 25 for widths 25, 100, 200 and 400, put Fig. S6
(13 width-100 diagrams' worth) at about 18 minutes. With the machine shared by other work
(load 6-20) the same figures took 8, 37 and 65 minutes.

The paper grid, one worker at nice 10, 30 chunks of 16 networks a diagram, measured: Fig.
S7a 3 161 s (6.6 s a network, load 6-10), S7b 1 422 s (3.0 s, load 2-6), S5's depth 3 608 s
(1.3 s, load 1).
"""

from __future__ import annotations

import json

import numpy as np

from phasecore.checks import ConfigError, require

__all__ = ["FIGURES", "SCALES", "SCALE_FOLDERS", "SCALE_NOTES", "check_figures", "configs",
           "diagram_title", "figure_of", "plot_diagram"]

#: Fashion-MNIST as the paper's MNIST: 2 560 training images, resized to 10 x 10.
FASHION = dict(dataset="fashion-mnist", n_train=2560, size=10)

#: Figure -> {diagram name: the fields (of :class:`~dnnphase.sweeps.sweep.SweepConfig`)
#: that differ from the paper's setting}. A diagram's name is its result file's stem.
FIGURES = {
    "S5": {f"S5_depth{d}": dict(depth=d) for d in (3, 5, 7, 11)},
    "S6": {f"S6_width{w}": dict(width=w) for w in (25, 50, 100, 200, 400)},
    "S7a": {"S7a_fashion_adam": dict(FASHION)},
    "S7b": {"S7b_fashion_sgd": dict(FASHION, optimizer="sgd", lr=0.1, momentum=0.9)},
}

#: Scale -> the grid (and, for "quick", the data and training) every diagram shares.
SCALES = {
    "full": dict(knob="dropout", alphas=tuple(np.round(np.linspace(0, 1, 6), 10)),
                 values=tuple(np.round(np.linspace(0, 0.3, 16), 10)), seeds=tuple(range(10)),
                 epochs=100),
    "paper-grid": dict(knob="dropout", alphas=tuple(np.round(np.linspace(0, 1, 6), 10)),
                       values=tuple(np.round(np.linspace(0, 0.3, 16), 10)),
                       seeds=tuple(range(5)), epochs=100),
    "reduced": dict(knob="dropout", alphas=(0.0, 0.5, 1.0), values=(0.0, 0.1, 0.2, 0.3),
                    seeds=(0, 1, 2), epochs=100),
    "quick": dict(knob="dropout", alphas=(0.0, 1.0), values=(0.0, 0.3), seeds=(0, 1),
                  epochs=5, dataset="digits", n_train=300, size=None,
                  measures=("trace_ratio", "fuzziness")),
}

#: What each scale keeps of the paper's (for titles and the ledger).
SCALE_NOTES = {
    "full": "the paper's scale: 6 alphas x 16 dropout rates x 10 seeds",
    "paper-grid": "the paper's grid at half its seeds: 6 alphas x 16 dropout rates x 5 seeds "
                  "(the paper: 10 seeds)",
    "reduced": "reduced scale: 3 alphas x 4 dropout rates x 3 seeds (the paper: 6 x 16 x 10)",
    "quick": "quick scale: the 8 x 8 digits, 5 epochs, 2 x 2 cells x 2 seeds (a test)",
}


#: Scale -> its default folder: the committed reduced diagrams where they have always been,
#: every other scale in a subfolder of its own.
SCALE_FOLDERS = {
    "full": "figures/supplement/universality/full",
    "paper-grid": "figures/supplement/universality/paper_grid",
    "reduced": "figures/supplement/universality",
    "quick": "figures/supplement/universality/quick",
}


def check_figures(only=None) -> list[str]:
    """The figures asked for (default: all of :data:`FIGURES`), each one of them, once;
    ``only``: a list or comma-separated text
    (:func:`dnnphase.sweeps.named_sweeps.check_only`)."""
    from dnnphase.sweeps.named_sweeps import check_only

    return check_only(only, FIGURES)


def configs(scale: str = "reduced", only=None) -> dict:
    """Diagram name -> its checked :class:`~dnnphase.sweeps.sweep.SweepConfig`, for the
    figures ``only`` (default all) at ``scale`` (a key of :data:`SCALES`). Every
    configuration is built, and so checked, before any is returned."""
    from dnnphase.sweeps.sweep import SweepConfig

    require(scale in SCALES, "scale", f"one of {', '.join(SCALES)}", scale)
    out = {}
    for figure in check_figures(only):
        for name, changes in FIGURES[figure].items():
            out[name] = SweepConfig(**{**changes, **SCALES[scale]})
    return out


def figure_of(name: str) -> str:
    """The figure ("S5", ...) a diagram name belongs to."""
    for figure, diagrams in FIGURES.items():
        if name in diagrams:
            return figure
    raise ConfigError(f"diagram must be one of {', '.join(n for d in FIGURES.values() for n in d)}"
                      f" (got {name!r})")


def diagram_title(ds, name: str, scale: str) -> str:
    """Two lines: the figure, what differs from the paper's setting, the scale."""
    config = json.loads(ds.attrs["config"])
    data = json.loads(ds.attrs.get("data", "{}")).get("source", config.get("dataset", ""))
    optimizer = config.get("optimizer", "adam")
    if config.get("momentum"):
        optimizer += f" (momentum {config['momentum']:g})"
    n_train = (f"{config['n_train']} training samples" if config.get("n_train")
               else f"{config['dataset']}'s default training split")
    return (f"Fig. {figure_of(name)}: depth {config['depth']}, width {config['width']}, "
            f"{optimizer} lr {config['lr']:g}, {config['epochs']} epochs, {n_train}\n"
            f"data: {data}; {SCALE_NOTES.get(scale, scale)}")


def plot_diagram(ds, name: str, scale: str, measure: str = "trace_ratio"):
    """The diagram's figure: mean load curves per cell over the test accuracy (left) and
    over the scale-free curvature with the phase boundaries (right)
    (:func:`dnnphase.sweeps.plotting.sweep_panels`)."""
    from dnnphase.sweeps.plotting import sweep_panels
    from phasecore.panels import plot_phase_grid

    return plot_phase_grid(sweep_panels(ds, measure), title=diagram_title(ds, name, scale))
