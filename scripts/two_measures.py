"""The spring–block paper's two separation measures side by side (SM S4, Figs. S10, S11 c-d),
and He & Su's reading of the same load curves beside the spring–block curvature.

    python scripts/two_measures.py [folder] [--reuse-linear] [--overwrite]

Reads every committed network diagram (``figures/**/dnn_*.nc``) that holds both the trace
ratio (paper Eq. 3) and the fuzziness (Eq. 9), and writes into ``folder`` (default
``figures/supplement/two_measures``; files there already only with ``--overwrite``, all of
them or none):

* ``two_measures.nc`` — per diagram: the agreement of the two measures' seed-mean phase labels,
  Cohen's kappa and the Spearman rho of their curvatures, each with a 95 % interval over
  resampled seeds; per diagram and reading (the most linear cell of each measure, the cell of
  He & Su's r nearest -1 of each measure): hits of the best-accuracy cells, the rows where a
  reading picks the cell the spring–block reading picks, and the paired difference of hits;
  per cell: both curvatures, labels and Pearson r's; per linear-network setting: both labels,
  relative drops and whether the measures diverge;
* ``linear_network.nc`` — the linear network of Fig. 5(a) measured with both measures (the
  committed ``figures/supplement/linear_network.nc`` holds the trace ratio only), trained
  here (about 90 s on one core) unless ``--reuse-linear`` reads the one in ``folder``;
* ``s10_paper.png``, ``s10_reduced.png`` — Fig. S10: each diagram's two curvature maps side by
  side, and one against the other;
* ``s11_linear.png`` — Fig. S11 (c, d): the linear network's load curves under each measure;
* ``equiseparation_paper.png``, ``equiseparation_reduced.png`` — He & Su's r per cell, with
  the cell each reading picks and the row's best-accuracy cells.

Prints the numbers as Markdown. Nothing else is trained; a few minutes on one core.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import xarray as xr

from dnnphase.compare.comparator.peaks import row_accuracy_peaks
from dnnphase.compare.scrutiny.measure_agreement import (
    FLAT_DROP,
    measure_agreement,
    relative_drop,
    seed_mean,
    setting_divergence,
)
from dnnphase.knobs import KNOBS, larger_is_noisier
from phaseclaims.equiseparation import compare_readings, equiseparation_score
from phaseclaims.rules import sweep_cells
from phasecore import results
from phasecore.checks import ConfigError
from phasecore.commandline import Parser, guarded, overwrite_option
from phasecore.loadcurve import PHASE_TOLERANCE, curvature_scaled, phase_label
from phasecore.results import (
    OutputExistsError,
    all_or_nothing,
    check_new_outputs,
    check_output_folder,
)

ROOT = Path(__file__).resolve().parents[1]
MEASURES = ("trace_ratio", "fuzziness")
#: The readings of a row's chosen cell: (statistic, measure); the first is the spring–block
#: paper's (the reference of the paired differences), the second He & Su's own.
READINGS = (("linear", "trace_ratio"), ("equiseparation", "fuzziness"),
            ("linear", "fuzziness"), ("equiseparation", "trace_ratio"))
N_BOOT = 400
SEED = 0


def reading_name(statistic: str, measure: str) -> str:
    return f"{statistic}, {measure}"


def diagram_files(root: Path) -> tuple[list[str], list[str]]:
    """The committed network diagrams under ``root/figures`` with both measures, and those
    with fewer (paths relative to ``root``, sorted)."""
    both, fewer = [], []
    for path in sorted((root / "figures").rglob("dnn_*.nc")):
        with xr.open_dataset(path) as ds:
            measures = set(ds["measure"].values.tolist()) if "measure" in ds.coords else set()
        (both if set(MEASURES) <= measures else fewer).append(str(path.relative_to(root)))
    return both, fewer


def _oriented_curves(net: xr.Dataset, measure: str) -> np.ndarray:
    """Per-seed load curves (R, C, S, L+1) on :func:`sweep_cells`' axes."""
    knob = net.attrs["knob"]
    curves = net["load_curve"].sel(measure=measure)
    curves = curves.sortby("alpha", ascending=False).sortby(
        knob, ascending=larger_is_noisier(net)).transpose("alpha", knob, "seed", "layer")
    return curves.values


def diagram_statistics(net: xr.Dataset, n_boot: int = N_BOOT) -> dict:
    """Everything the output holds of one diagram: the agreement of the two measures, the
    readings, and its cells' values."""
    knob = net.attrs["knob"]
    log_scale = knob in KNOBS and KNOBS[knob].scale == "log"
    curv = {m: sweep_cells(net, m)[0] for m in MEASURES}  # (R, C, S)
    _, accuracy, values = sweep_cells(net, MEASURES[0])
    r_score = {m: equiseparation_score(_oriented_curves(net, m)) for m in MEASURES}  # 1 + r
    agree = measure_agreement(curv["trace_ratio"], curv["fuzziness"], n_boot=n_boot,
                              seed=SEED)
    scores = {reading_name(s, m): (curv[m] if s == "linear" else r_score[m])
              for s, m in READINGS}
    readings = compare_readings(scores, accuracy, values, log_scale=log_scale, n_boot=n_boot,
                                seed=SEED)
    alphas = net["alpha"].sortby("alpha", ascending=False).values
    tied = row_accuracy_peaks(curv["trace_ratio"], accuracy, values, log_scale)["tied"]
    rows, cols = np.meshgrid(np.arange(len(alphas)), np.arange(len(values)), indexing="ij")
    cells = {"alpha": alphas[rows].ravel(), "knob_value": values[cols].ravel(),
             "row": rows.ravel(), "column": cols.ravel(), "best": tied.ravel(),
             "accuracy": seed_mean(accuracy).ravel()}
    for m in MEASURES:
        cells[f"curvature_{m}"] = seed_mean(curv[m]).ravel()
        cells[f"label_{m}"] = phase_label(cells[f"curvature_{m}"])
        cells[f"r_{m}"] = seed_mean(r_score[m]).ravel() - 1.0
    chosen = {k: (v["chosen"][rows] == cols).ravel() for k, v in readings.items()}
    return {"knob": knob, "n_seeds": accuracy.shape[2], "rows": accuracy.shape[0],
            "agreement": agree, "readings": readings, "cells": cells, "chosen": chosen}


def linear_run() -> xr.Dataset:
    """Fig. 5(a)'s three runs, both measures: load_curve (setting, measure, seed, layer)."""
    from dnnphase.sweeps.experiments import LINEAR_NETWORK, LINEAR_SETTINGS
    from dnnphase.sweeps.sweep import SweepConfig, sweep

    base = {**LINEAR_NETWORK, "measures": MEASURES}
    configs = {name: SweepConfig(**{**base, **setting})
               for name, setting in LINEAR_SETTINGS.items()}
    parts, attrs = [], {}
    for name, cfg in configs.items():
        ds = sweep(cfg)
        one = ds.isel({"alpha": 0, cfg.knob: 0}, drop=True)
        parts.append(one[["load_curve", "curvature_scaled", "train_accuracy"]]
                     .expand_dims(setting=[name]))
        attrs[f"config_{name.replace(' ', '_')}"] = ds.attrs["config"]
        attrs.setdefault("versions", ds.attrs["versions"])
        if "kernels" in ds.attrs:
            attrs.setdefault("kernels", ds.attrs["kernels"])
    out = xr.concat(parts, dim="setting", combine_attrs="drop")
    out.attrs.update(kind="dnnphase.experiments.linear_network", **attrs)
    return out


def linear_statistics(linear: xr.Dataset, n_boot: int = N_BOOT) -> dict:
    curves = {m: linear["load_curve"].sel(measure=m).transpose("setting", "seed", "layer").values
              for m in MEASURES}
    out = setting_divergence(curves["trace_ratio"], curves["fuzziness"], n_boot=n_boot,
                             seed=SEED)
    out["curvature_a"] = seed_mean(curvature_scaled(curves["trace_ratio"]))
    out["curvature_b"] = seed_mean(curvature_scaled(curves["fuzziness"]))
    # reported, not judged: the drops from layer 1 on (the input's fuzziness is a round-off
    # zero for whitened data)
    out["tail_a"] = relative_drop(np.nanmean(curves["trace_ratio"][..., 1:], axis=1))
    out["tail_b"] = relative_drop(np.nanmean(curves["fuzziness"][..., 1:], axis=1))
    return out


def _diagram_vars(names: list[str], stats: list[dict]) -> dict:
    data = {"knob": ("diagram", [s["knob"] for s in stats]),
            "n_seeds": ("diagram", [s["n_seeds"] for s in stats]),
            "rows": ("diagram", [s["rows"] for s in stats])}
    for key in ("agreement", "kappa", "rho"):
        for suffix in ("", "_low", "_high"):
            data[key + suffix] = ("diagram", [s["agreement"][key + suffix] for s in stats])
    data["n_cells"] = ("diagram", [s["agreement"]["n_cells"] for s in stats])
    reading_keys = ("hits", "hits_low", "hits_high", "chance", "same", "minus", "minus_low",
                    "minus_high")
    order = [reading_name(*r) for r in READINGS]
    for key in reading_keys:
        data[key] = (("diagram", "reading"),
                     np.array([[s["readings"][r][key] for r in order] for s in stats],
                              dtype=float))
    n_draws = max(len(s["readings"][order[0]]["minus_boot"]) for s in stats)
    boot = np.full((len(stats), len(order), n_draws), np.nan)
    for i, s in enumerate(stats):
        for k, r in enumerate(order):
            boot[i, k, :len(s["readings"][r]["minus_boot"])] = s["readings"][r]["minus_boot"]
    data["minus_boot"] = (("diagram", "reading", "draw"), boot)
    data["verdict"] = (("diagram", "reading"),
                       np.array([[s["readings"][r]["verdict"] for r in order] for s in stats]))
    return data


def _cell_vars(names: list[str], stats: list[dict]) -> dict:
    keys = list(stats[0]["cells"])
    data = {k: ("cell", np.concatenate([s["cells"][k] for s in stats])) for k in keys}
    data["cell_diagram"] = ("cell", np.concatenate(
        [[n] * len(s["cells"]["alpha"]) for n, s in zip(names, stats, strict=True)]))
    order = [reading_name(*r) for r in READINGS]
    data["chosen"] = (("cell", "reading"), np.stack(
        [np.concatenate([s["chosen"][r] for s in stats]) for r in order], axis=1))
    return data


def statistics_dataset(root: Path, linear: xr.Dataset, n_boot: int = N_BOOT) -> xr.Dataset:
    """The whole output from the committed diagrams under ``root`` and the linear run."""
    both, fewer = diagram_files(root)
    names = [str(Path(p).with_suffix("")).removeprefix("figures/") for p in both]
    stats = []
    for path in both:
        with xr.open_dataset(root / path) as net:
            stats.append(diagram_statistics(net.load(), n_boot))
    lin = linear_statistics(linear, n_boot)
    data = {**_diagram_vars(names, stats), **_cell_vars(names, stats)}
    for key, name in (("label_a", "linear_label_trace_ratio"),
                      ("label_b", "linear_label_fuzziness"),
                      ("curvature_a", "linear_curvature_trace_ratio"),
                      ("curvature_b", "linear_curvature_fuzziness"),
                      ("drop_a", "linear_drop_trace_ratio"),
                      ("drop_b", "linear_drop_fuzziness"), ("diverges", "linear_diverges"),
                      ("tail_a", "linear_drop_from_layer_1_trace_ratio"),
                      ("tail_b", "linear_drop_from_layer_1_fuzziness")):
        data[name] = ("setting", lin[key])
    ds = xr.Dataset(data, coords={"diagram": names,
                                  "reading": [reading_name(*r) for r in READINGS],
                                  "setting": linear["setting"].values.astype(str)})
    ds.attrs.update(
        kind="two_measures", files=json.dumps(both), one_measure_only=json.dumps(fewer),
        tolerance=PHASE_TOLERANCE, flat_drop=FLAT_DROP, n_boot=n_boot, boot_seed=SEED,
        linear_diverging=lin["n_diverging"], linear_diverging_low=lin["n_diverging_low"],
        linear_diverging_high=lin["n_diverging_high"],
        linear_fuzziness_input=float(np.nanmean(
            linear["load_curve"].sel(measure="fuzziness").isel(layer=0).values)))
    return ds


def groups(ds: xr.Dataset) -> dict[str, list[str]]:
    """The diagrams of the paper preset, and the others (reduced scales and variants)."""
    names = [str(d) for d in ds["diagram"].values]
    paper = [d for d in names if d.startswith("paper/")]
    return {"paper": paper, "reduced": [d for d in names if d not in paper]}


def write_figures(ds: xr.Dataset, linear: xr.Dataset, folder: Path) -> None:
    from dnnphase.compare.figures import two_measures as mf
    from phasecore.panels import save_figure

    for group, names in groups(ds).items():
        if names:
            save_figure(mf.plot_two_measures(ds, names), folder / f"s10_{group}.png")
            save_figure(mf.plot_equiseparation(ds, names), folder / f"equiseparation_{group}.png")
    save_figure(mf.plot_linear_two_measures(linear), folder / "s11_linear.png")


def _print(ds: xr.Dataset) -> None:
    print("| diagram | cells | agreement | kappa | rho |")
    print("|---|---|---|---|---|")
    for d in ds["diagram"].values:
        one = ds.sel(diagram=d)
        cell = [f"{float(one[k]):.2f} [{float(one[k + '_low']):.2f}, "
                f"{float(one[k + '_high']):.2f}]" for k in ("agreement", "kappa", "rho")]
        print(f"| {d} | {int(one['n_cells'])} | " + " | ".join(cell) + " |")
    print("\n| diagram | reading | hits of rows | same cell as linear, trace_ratio | "
          "hits minus linear's |")
    print("|---|---|---|---|---|")
    for d in ds["diagram"].values:
        for r in ds["reading"].values:
            one = ds.sel(diagram=d, reading=r)
            print(f"| {d} | {r} | {int(one['hits'])} of {int(one['rows'])} "
                  f"[{float(one['hits_low']):g}, {float(one['hits_high']):g}] | "
                  f"{float(one['same']):.2f} | {0 - float(one['minus']):+g} "
                  f"[{0 - float(one['minus_high']):+g}, {0 - float(one['minus_low']):+g}] |")
    print("\n| linear network | curvature trace_ratio | curvature fuzziness | "
          "drop trace_ratio | drop fuzziness | fuzziness drop from layer 1 | diverges |")
    print("|---|---|---|---|---|---|---|")
    for s in ds["setting"].values:
        one = ds.sel(setting=s)
        print(f"| {s} | {float(one['linear_curvature_trace_ratio']):+.3f} | "
              f"{float(one['linear_curvature_fuzziness']):+.3f} | "
              f"{float(one['linear_drop_trace_ratio']):.3f} | "
              f"{float(one['linear_drop_fuzziness']):.3f} | "
              f"{float(one['linear_drop_from_layer_1_fuzziness']):.3f} | "
              f"{int(one['linear_diverges'])} |")


def main(argv: list[str] | None = None) -> int:
    parser = Parser(description=__doc__.split("\n\n")[0])
    parser.add_argument("folder", nargs="?", default=str(ROOT / "figures/supplement/two_measures"),
                        help="where the results and figures go (created if missing)")
    parser.add_argument("--reuse-linear", action="store_true",
                        help="read FOLDER/linear_network.nc instead of training it")
    parser.add_argument("--root", default=str(ROOT),
                        help="the checkout whose committed diagrams are read")
    overwrite_option(parser, "results and figures in FOLDER")
    args = parser.parse_args(argv)
    # the checks inside the guard too: Ctrl-C while they read the diagrams is one line
    return guarded(parser.prog, lambda: checked(parser, args), program=argv is None)


def checked(parser: Parser, args) -> None:
    """Every check before any work (a bad one: one line, exit 2), then :func:`work`."""
    folder, root = Path(args.folder), Path(args.root)
    linear_path = folder / "linear_network.nc"
    if folder.exists() and not folder.is_dir():
        parser.error(f"folder {args.folder!r} is a file, not a folder")
    if not (root / "figures").is_dir():
        parser.error(f"--root must be a checkout with a figures/ folder (got {args.root!r})")
    if args.reuse_linear and not linear_path.is_file():
        parser.error(f"--reuse-linear: {linear_path} does not exist (run without it once)")
    if not diagram_files(root)[0]:
        parser.error(f"--root: no diagram under {root / 'figures'} holds both {MEASURES}")
    linear = None
    if args.reuse_linear:
        try:
            linear = results.load(linear_path, kind="dnnphase.experiments.linear_network")
        except ValueError as err:
            parser.error(f"--reuse-linear: {err}")
        if "setting" not in linear.dims:
            parser.error(f"--reuse-linear: {linear_path} is not this script's linear_network.nc"
                         " (no setting dimension; run without --reuse-linear once)")
    outputs = [folder / name for name in (
        "two_measures.nc", "s10_paper.png", "s10_reduced.png", "equiseparation_paper.png",
        "equiseparation_reduced.png", "s11_linear.png")]
    outputs += [] if args.reuse_linear else [linear_path]
    try:  # a read-only folder, or results there already: one line, before any work
        check_output_folder(folder)
        check_new_outputs(outputs, args.overwrite)
    except (ConfigError, OutputExistsError) as err:
        parser.error(str(err))
    work(folder, root, linear, args.reuse_linear)


def work(folder: Path, root: Path, linear, reuse_linear: bool) -> None:
    """Train (or reuse) the linear network, then write every result and figure, all of
    them or none (a full disk)."""
    ours = [folder / "two_measures.nc", *([] if reuse_linear else [folder / "linear_network.nc"])]
    if linear is None:
        linear = linear_run()
    ds = statistics_dataset(root, linear)
    figures = [folder / f"{kind}_{group}.png" for group, names in groups(ds).items() if names
               for kind in ("s10", "equiseparation")] + [folder / "s11_linear.png"]
    with all_or_nothing([*ours, *figures], folder):
        if not reuse_linear:
            results.save(linear, folder / "linear_network.nc", overwrite=True)
        results.save(ds, folder / "two_measures.nc", overwrite=True)
        write_figures(ds, linear, folder)
    _print(ds)


if __name__ == "__main__":
    sys.exit(main())
