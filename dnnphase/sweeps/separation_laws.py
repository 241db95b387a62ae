"""He & Su's law of equi-separation and Galanti et al.'s minimal depth: their headline
experiments as sweeps (``python scripts/separation_laws.py``).

*Protocols* (:data:`PROTOCOLS`). The reference, ``"authors"``, is each paper's own protocol,
read from its authors' public code where the text is silent: He & Su measure with BatchNorm
in training mode (statistics of each batch of 100, in the data's order), take D_0 from the
raw input and keep each epoch's last, partial batch; their Wide-Narrow is 1 000 x 4 then
100 x 3 and their Mixed (100, 500, 500, 2 500, 2 500, 500, 500). Galanti et al. train with
lr 0.1, x 0.2 at epochs 60, 100 and 200 (:data:`GALANTI_SCHEDULE`), one epoch of linear
warm-up, and measure each hidden ``Linear`` map's output (before BatchNorm and ReLU);
:mod:`dnnphase.networks.protocol`. ``"ours"`` is what the committed sweeps in
``figures/separation_laws`` ran, kept as a named variant (so they come out again): eval-mode
BatchNorm, layer 0 after the network's input BatchNorm, the activations, the last partial
batch dropped, Galanti's networks at a constant lr 0.01 without warm-up, Wide-Narrow
1 000 x 3 then 100 x 4 and no Mixed. Settings that still differ from the authors' under
either are listed in docs/results.md (e.g. the project's MLP normalises its input with a
BatchNorm neither paper has; He & Su choose Adam's learning rate by their rule).

Every experiment is one or more network sweeps (:func:`dnnphase.sweeps.sweep.sweep`) of ReLU
MLPs (BatchNorm after every hidden linear map, before the ReLU, as both papers; the
project's MLP also normalises the input, which neither paper says) measured by the
fuzziness, NCC and CDNV of every layer, trained as the papers train: SGD (with momentum
0.9) or Adam, weight decay 5e-4, batch 128, no early stopping.

He & Su (*A law of data separation in deep learning*, appendix A): Fashion-MNIST resized
to 10 x 10, 1 000 training images, 100 per class; 600 epochs, the learning rate divided by 10
at 1/3 and 2/3 of the run. Their "L-layer network" is L − 1 hidden layers and the output
layer, and they read D_0 .. D_{L−1}: the project's ``depth`` = L − 1 hidden layers, whose
load curve is layers 0..L − 1 (:mod:`dnnphase.measures.laws`); their 4, 8 and 20 layers are
depths 3, 7 and 19 here.

* ``hesu_fig1``: depths 4, 8, 20 x {SGD, SGD with momentum 0.9, Adam}, every learning rate
  of their grids (SGD: 0.001 … 1.0, seven; Adam: 3e-5 … 3e-3, five): their rule keeps, per
  network, the learning rate with the best law (r nearest −1) — an outcome-selected choice,
  so the ledger also reads r at the learning rate of lowest training loss.
* ``hesu_fig3``: the depth sweep on MNIST (the embedded 5 000 digits, 10 x 10, 1 000
  training images) and Fashion-MNIST, their L = 3 … 16; the optimal depth is the one of
  lowest final fuzziness.
* ``hesu_fig4``: their 8 layers at widths 20, 100 and 1 000, and two shapes, Narrow-Wide
  (100 x 4, then 1 000 x 3) and its reverse Wide-Narrow (:data:`HE_SU_SHAPES`).
* ``hesu_fig7``: 1 000, 2 000 and 5 000 training images (balanced), their 8 layers.
* ``hesu_fig9``: their 20 layers, the fuzziness load curve recorded during training.
* ``hesu_fig12``: their 8 layers, the test data's fuzziness curve (the networks of
  ``hesu_fig7``'s 1 000 images).

He & Su choose Adam's learning rate by their rule in every figure but Fig. 1 shows no
grid; here Figs. 3, 4, 7, 9 and 12 use Adam at 1e-3 (the middle of their grid), fixed
before any result was seen, so that the outcome judged does not choose it.

Galanti et al. (*On the implicit bias of SGD towards depth minimisation*, §5): SGD with
batch 128, momentum 0.9, weight decay 5e-4, 500 epochs; they name no learning rate nor
schedule for their MLPs: 0.01, constant, is used here (fixed before any result). Their
CIFAR-10 cannot be had offline: Fashion-MNIST is run instead (10 x 10, 5 000 training
images at the committed scale; all 60 000 at 28 x 28 in the full preset).

* ``galanti_fig1``: MLP-d-100 with d = 2, 3, 4, 8, 16 hidden layers: CDNV and NCC per
  layer on training and test data; the effective depth (first layer with 99 % training
  NCC).
* ``galanti_fig3``: their MLP-10-500 (width 100 at the committed scale) with 0, 25, 50
  and 75 % of the training labels reassigned at random once, before training
  (``random_labels``).

:data:`SCALES`: "full" the papers' epochs (and Galanti's width and data), five seeds (a GPU
or a cluster); "reduced" the committed scale: 200 epochs and three seeds (each experiment
at most ~20 minutes on 2 cores, measured in docs/results.md); "quick" seconds (the tests:
the 8 x 8 digits, 3 epochs, shallow networks). All of it is data, fixed before any result
was computed; a mismatch with a paper is a finding.
"""

from __future__ import annotations

from phasecore.checks import ConfigError, require

__all__ = ["ADAM_LRS", "EXPERIMENTS", "GALANTI_SCHEDULE", "HE_SU_SHAPES", "OURS_SHAPES",
           "PROTOCOLS", "SCALES", "SCALE_NOTES", "SGD_LRS", "check_experiments", "configs",
           "experiment_of", "sweeps_of"]

#: He & Su's learning-rate grids (appendix A.1).
SGD_LRS = (0.001, 0.003, 0.01, 0.03, 0.1, 0.3, 1.0)
ADAM_LRS = (3e-5, 1e-4, 3e-4, 1e-3, 3e-3)

#: What every experiment shares: ReLU MLPs of width 100, the papers' training without early
#: stopping, the three measures (fuzziness first: the one recorded during training).
_COMMON = dict(alphas=(0.0,), width=100, norm="batchnorm", batch_size=128, weight_decay=5e-4,
               loss_threshold=0.0, patience=0, measures=("fuzziness", "ncc", "cdnv"))
_HE_SU = dict(_COMMON, dataset="fashion-mnist", n_train=1000, size=10, lr_drops=(1 / 3, 2 / 3))
_HE_SU_ADAM = dict(_HE_SU, optimizer="adam", knob="lr", values=(1e-3,))
_GALANTI = dict(_COMMON, dataset="fashion-mnist", n_train=5000, size=10, optimizer="sgd",
                momentum=0.9)
_GALANTI_LR = 0.01  # "ours": constant, fixed before any result (they name none in the text)

#: The protocols an experiment runs under: the authors' (the reference) or ours (the
#: committed sweeps').
PROTOCOLS = ("authors", "ours")
#: What the authors' protocol sets in each paper's sweeps.
_AUTHORS = {"hesu": dict(protocol="he_su", keep_last_batch=True),
            "galanti": dict(protocol="galanti", warmup_epochs=1)}
#: Galanti et al.'s code: lr 0.1, multiplied by 0.2 at the start of epochs 60, 100 and 200.
GALANTI_AUTHORS_LR = 0.1
GALANTI_SCHEDULE = ((60, "lr", 0.02), (100, "lr", 0.004), (200, "lr", 0.0008))

#: Fig. 4's widths and shapes of their 8-layer network (7 hidden layers), as their code
#: builds them (its FNNSW, FNNWS and FNNMIX): Narrow-Wide 100 x 4 then 1 000 x 3, Wide-Narrow
#: 1 000 x 4 then 100 x 3, Mixed (100, 500, 500, 2 500, 2 500, 500, 500).
HE_SU_SHAPES = {"width20": 20, "width100": 100, "width1000": 1000,
                "narrow_wide": (100,) * 4 + (1000,) * 3, "wide_narrow": (1000,) * 4 + (100,) * 3,
                "mixed": (100, 500, 500, 2500, 2500, 500, 500)}
#: The shapes the committed sweeps ran (protocol "ours"): the text's Narrow-Wide list, cut
#: after "(100, 100, 100, 100, 1000", completed to seven layers and reversed; no Mixed.
OURS_SHAPES = {**{k: v for k, v in HE_SU_SHAPES.items() if k != "mixed"},
               "wide_narrow": (1000,) * 3 + (100,) * 4}

#: Their L = 3 … 16 (L − 1 hidden layers), for the optimal depth.
HE_SU_DEPTHS = (2, 3, 4, 5, 6, 7, 9, 11, 13, 15)

#: Experiment -> {sweep name: its fields of :class:`~dnnphase.sweeps.sweep.SweepConfig`}. A
#: sweep's name is its result file's stem.
EXPERIMENTS = {
    "hesu_fig1": {
        "hesu_fig1_sgd": dict(_HE_SU, optimizer="sgd", knob="lr", values=SGD_LRS,
                              depths=(3, 7, 19)),
        "hesu_fig1_momentum": dict(_HE_SU, optimizer="sgd", momentum=0.9, knob="lr",
                                   values=SGD_LRS, depths=(3, 7, 19)),
        "hesu_fig1_adam": dict(_HE_SU, optimizer="adam", knob="lr", values=ADAM_LRS,
                               depths=(3, 7, 19)),
    },
    "hesu_fig3": {
        "hesu_fig3_mnist": dict(_HE_SU_ADAM, dataset="mnist5k", depths=HE_SU_DEPTHS),
        "hesu_fig3_fashion": dict(_HE_SU_ADAM, depths=HE_SU_DEPTHS),
    },
    "hesu_fig7": {f"hesu_fig7_n{n}": dict(_HE_SU_ADAM, depth=7, n_train=n)
                  for n in (1000, 2000, 5000)},
    # after Fig. 7: its width 100 is Fig. 7's 1 000-sample sweep (copied, not retrained)
    "hesu_fig4": {f"hesu_fig4_{name}": dict(_HE_SU_ADAM, depth=7, width=width)
                  for name, width in HE_SU_SHAPES.items()},
    "hesu_fig9": {"hesu_fig9": dict(_HE_SU_ADAM, depth=19, record_every=-20)},
    "hesu_fig12": {"hesu_fig12": dict(_HE_SU_ADAM, depth=7)},
    "galanti_fig1": {"galanti_fig1": dict(_GALANTI, knob="lr", values=(_GALANTI_LR,),
                                          depths=(2, 3, 4, 8, 16))},
    "galanti_fig3": {"galanti_fig3": dict(_GALANTI, lr=_GALANTI_LR, knob="random_labels",
                                          values=(0.0, 0.25, 0.5, 0.75), depth=10)},
}

#: Scale -> what it sets in every sweep. ``record_every`` < 0 in :data:`EXPERIMENTS` means
#: "this many snapshots over the run" (so it follows the scale's epochs).
SCALES = {
    "full": dict(seeds=(0, 1, 2, 3, 4)),
    "reduced": dict(seeds=(0, 1, 2), epochs=200),
    "quick": dict(seeds=(0, 1), epochs=3, dataset="digits", n_train=300, size=None),
}

#: What each scale keeps of each paper's experiments (figure titles): scale -> paper -> note.
SCALE_NOTES = {
    "full": {"hesu": "the paper's scale: 600 epochs, 5 seeds",
             "galanti": "the paper's scale: 500 epochs on all 60 000 images at 28 x 28, "
                        "Fig. 3 at width 500, 5 seeds"},
    "reduced": {"hesu": "reduced scale: 200 of the paper's 600 epochs, 3 seeds",
                "galanti": "reduced scale: 200 of the paper's 500 epochs, 3 seeds, 5 000 "
                           "images at 10 x 10 (the paper's 60 000 at 28 x 28), Fig. 3 at "
                           "width 100 (the paper's 500)"},
    "quick": dict.fromkeys(("hesu", "galanti"),
                           "quick scale: the 8 x 8 digits, 3 epochs, shallow networks (a test)"),
}

#: The papers' epochs, and Galanti's full-scale network and data.
_FULL = {"hesu": dict(epochs=600),
         "galanti": dict(epochs=500, n_train=None, size=None)}


def check_experiments(only=None) -> list[str]:
    """The experiments asked for (default: all of :data:`EXPERIMENTS`), each one of them, once;
    ``only``: a list or comma-separated text
    (:func:`dnnphase.sweeps.named_sweeps.check_only`)."""
    from dnnphase.sweeps.named_sweeps import check_only

    return check_only(only, EXPERIMENTS)


def _protocol_fields(name: str, fields: dict, protocol: str) -> dict:
    """A sweep's fields under ``protocol`` (before the scale's changes; Galanti's schedule
    follows the scale's epochs, :func:`_fields`)."""
    out = dict(fields)
    if protocol == "ours" and name.startswith("hesu_fig4_"):
        out["width"] = OURS_SHAPES[name.removeprefix("hesu_fig4_")]
    if protocol == "authors":
        out.update(_AUTHORS["galanti" if name.startswith("galanti") else "hesu"])
        if name.startswith("galanti"):
            out.update(dict(values=(GALANTI_AUTHORS_LR,)) if out["knob"] == "lr"
                       else dict(lr=GALANTI_AUTHORS_LR))
    return out


def _fields(name: str, fields: dict, scale: str, protocol: str = "authors") -> dict:
    """A sweep's fields at ``scale`` under ``protocol``."""
    out = dict(_protocol_fields(name, fields, protocol), **SCALES[scale])
    if scale == "full":
        out.update(_FULL["galanti" if name.startswith("galanti") else "hesu"])
        if name == "galanti_fig3":
            out["width"] = 500
    if scale == "quick":  # shallow and few: seconds
        if "depths" in out:
            out["depths"] = out["depths"][:2]
        if "depth" in out:
            out["depth"] = min(out["depth"], 3)
        if isinstance(out["width"], tuple):  # a shape: its first, middle and last layer
            w = out["width"]
            out["width"] = (w[0], w[len(w) // 2], w[-1])
        out["width"] = (tuple(max(1, v // 10) for v in out["width"])
                        if isinstance(out["width"], tuple) else max(1, out["width"] // 10))
        out["values"] = out["values"][:2]
        out["batch_size"] = 64
        if "n_train" in fields and fields["n_train"] > 1000:  # sample-size figure: kept apart
            out["n_train"] = 300 + fields["n_train"] // 100
    if out.get("record_every", 0) < 0:
        out["record_every"] = max(1, out.get("epochs", 1) // -out["record_every"])
    if protocol == "authors" and name.startswith("galanti"):  # the drops within the run
        out["schedule"] = tuple(e for e in GALANTI_SCHEDULE if e[0] <= out.get("epochs", 500))
    return out


def sweeps_of(experiment: str, protocol: str = "authors") -> list[str]:
    """The sweep names of ``experiment`` under ``protocol`` (``"ours"`` has no Mixed)."""
    return [name for name in EXPERIMENTS[experiment]
            if protocol == "authors" or name.removeprefix("hesu_fig4_") not in
            set(HE_SU_SHAPES) - set(OURS_SHAPES)]


def configs(scale: str = "reduced", only=None, protocol: str = "authors") -> dict:
    """Sweep name -> its checked :class:`~dnnphase.sweeps.sweep.SweepConfig`, for the
    experiments ``only`` (default all) at ``scale`` (a key of :data:`SCALES`) under
    ``protocol`` (:data:`PROTOCOLS`: "authors", the reference, or "ours", the committed
    sweeps'). Every configuration is built, and so checked, before any is returned."""
    from dnnphase.sweeps.sweep import SweepConfig

    require(scale in SCALES, "scale", f"one of {', '.join(SCALES)}", scale)
    require(protocol in PROTOCOLS, "protocol", f"one of {', '.join(PROTOCOLS)}", protocol)
    return {name: SweepConfig(**_fields(name, EXPERIMENTS[experiment][name], scale, protocol))
            for experiment in check_experiments(only)
            for name in sweeps_of(experiment, protocol)}


def experiment_of(name: str) -> str:
    """The experiment ("hesu_fig1", ...) a sweep name belongs to."""
    for experiment, sweeps in EXPERIMENTS.items():
        if name in sweeps:
            return experiment
    raise ConfigError("sweep must be one of "
                      f"{', '.join(n for s in EXPERIMENTS.values() for n in s)} (got {name!r})")
