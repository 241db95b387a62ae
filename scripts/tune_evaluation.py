"""Evaluate ``dnnphase.sweeps.tune`` against a best grid cell and a validation-chosen value.

For each knob (dropout, lr) and each alpha of the committed paper diagrams
(``figures/paper/dnn_<knob>.nc``, 10 seeds per cell), with exactly the paper's
network and training settings (read from that file's ``attrs["config"]``):

(a) tune: ``tune(knob, low=grid min, high=grid max, alpha, seeds=4)`` (training data
    only); its chosen value's test accuracy over 10 seeds (tune's own 4 final models,
    seeds 0-3, plus seeds 4-9 trained here at the same value).
(b) best grid cell: from the committed sweep, the value with the best seed-mean test
    accuracy in the alpha row (an oracle that looked at the test set; it cost values x 10
    models).
(c) validation-chosen: a class-stratified 20 % of the training set held out (seeded);
    a grid of max(2, tune's search models // 4) values evenly spaced on the knob's axis
    over the same range, 4 seeds each, trained on the other 80 %; the value with the best
    mean validation accuracy is trained with 10 seeds on the full training set and tested.

Writes ``<out>/evaluation.nc`` and ``<out>/evaluation.md`` after every (knob, alpha), so
an interrupted run leaves a table; ``--resume`` skips cells already in the .nc.

    python scripts/tune_evaluation.py                      # everything (dropout first, then lr)
    python scripts/tune_evaluation.py --knobs dropout --alphas 0 0.2
"""

from __future__ import annotations

import json
import math
import sys
import time
from pathlib import Path

import numpy as np
import xarray as xr

from dnnphase.data import ClassificationData, load_dataset, register_dataset
from phasecore.commandline import Parser, guarded, overwrite_option
from phasecore.results import write_atomic, write_text_atomic

ROOT = Path(__file__).resolve().parents[1]
KNOBS = ("dropout", "lr")
ALPHAS = (0.0, 0.2, 0.4, 0.6, 0.8, 1.0)
TUNE_SEEDS = (0, 1, 2, 3)
EVAL_SEEDS = tuple(range(10))
VAL_FRACTION = 0.2
SPLIT_SEED = 0
VAL_DATASET = "mnist5k-val"  # the 80 % / 20 % split of mnist5k's training set
MEASURE = "trace_ratio"


# ----------------------------------------------------------------------- pure parts


def stratified_split(y: np.ndarray, fraction: float = VAL_FRACTION,
                     seed: int = SPLIT_SEED) -> tuple[np.ndarray, np.ndarray]:
    """Indices (train, validation) of a class-stratified split: round(fraction x class
    count) samples of each class go to validation (at least 1, leaving at least 2 for
    training), chosen by a seeded permutation. Deterministic; disjoint; sorted."""
    rng = np.random.default_rng(seed)
    val = []
    for c in np.unique(y):
        idx = np.flatnonzero(y == c)
        k = min(max(1, int(round(fraction * idx.size))), idx.size - 2)
        val.append(rng.permutation(idx)[:k])
    val = np.sort(np.concatenate(val))
    train = np.setdiff1d(np.arange(y.size), val)
    return train, val


def budget_values(search_models: int, seeds: int = len(TUNE_SEEDS)) -> int:
    """Grid values the validation search gets for tune's search budget (>= 2)."""
    return max(2, int(search_models) // seeds)


def axis_values(low: float, high: float, n: int, scale: str) -> np.ndarray:
    """n values evenly spaced on the knob's axis over [low, high], ends exact."""
    if scale == "log":
        v = np.exp(np.linspace(np.log(low), np.log(high), n))
    else:
        v = np.linspace(low, high, n)
    v[0], v[-1] = low, high
    return v


def mean_se(x) -> tuple[float, float, int]:
    """Mean and standard error over the finite entries (NaN: diverged models)."""
    x = np.asarray(x, dtype=float)
    x = x[np.isfinite(x)]
    if not x.size:
        return math.nan, math.nan, 0
    se = float(np.std(x, ddof=1) / np.sqrt(x.size)) if x.size > 1 else math.nan
    return float(np.mean(x)), se, int(x.size)


def best_grid(paper: xr.Dataset, knob: str, alpha: float) -> dict:
    """The committed row's value with the best seed-mean test accuracy."""
    acc = paper["test_accuracy"].sel(alpha=alpha)  # (knob, seed)
    means = np.array([mean_se(acc.isel({knob: i}).values)[0] for i in range(acc.sizes[knob])])
    i = int(np.nanargmax(means))
    m, se, n = mean_se(acc.isel({knob: i}).values)
    return {"value": float(paper[knob].values[i]), "acc": m, "se": se, "n": n,
            "models": int(acc.sizes[knob] * paper.sizes["seed"])}


# ----------------------------------------------------------------- the validation split


def _load_mnist5k_val(*, n_train, data_seed, val_fraction=VAL_FRACTION,
                      split_seed=SPLIT_SEED) -> ClassificationData:
    """mnist5k's training set (data_seed's split) cut into 80 % training and a 20 %
    class-stratified validation set, which stands in as the 'test' set. mnist5k's own
    test set is not touched."""
    if n_train is not None:
        raise ValueError(f"{VAL_DATASET} takes no n_train (it is mnist5k's default split)")
    full = load_dataset("mnist5k", data_seed=data_seed)
    tr, va = stratified_split(full.y_train, val_fraction, split_seed)
    info = {**full.info, "validation": f"class-stratified {val_fraction:g} of the training "
            f"set held out (split_seed {split_seed}); test set = the validation set"}
    return ClassificationData(full.x_train[tr], full.y_train[tr], full.x_train[va],
                              full.y_train[va], full.n_classes, VAL_DATASET, info,
                              full.image_shape)


if __name__ in ("__main__", "__mp_main__"):  # run as the script, or in its pool's workers
    # (spawned workers re-import the script as __mp_main__); never on a plain import, so a
    # test of the pure parts leaves the data-set registry as it found it
    register_dataset(VAL_DATASET)(_load_mnist5k_val)


# --------------------------------------------------------------------- training parts


def paper_config(knob: str) -> tuple[dict, xr.Dataset]:
    paper = xr.load_dataset(ROOT / "figures" / "paper" / f"dnn_{knob}.nc")
    cfg = json.loads(paper.attrs["config"])
    assert cfg["knob"] == knob
    return cfg, paper


def shared_fields(cfg: dict) -> dict:
    """The paper config's network and training fields (not knob/values/alphas/seeds).
    Only the measure tune uses is computed and nothing is recorded per epoch: neither
    touches training (checked: same test accuracy as the committed sweep)."""
    out = {k: v for k, v in cfg.items()
           if k not in ("knob", "values", "alphas", "seeds", "models_per_chunk")}
    out.update(measures=[MEASURE], record_every=0)
    return out


def run_sweep(knob, values, alpha, seeds, fields, dataset=None, chunk=None, workers=2):
    from dnnphase.sweeps.sweep import SweepConfig, sweep

    f = dict(fields)
    if dataset is not None:
        f["dataset"] = dataset
    n = len(values) * len(seeds)
    chunk = chunk or max(1, math.ceil(n / workers))
    cfg = SweepConfig(knob=knob, values=[float(v) for v in values], alphas=[alpha],
                      seeds=list(seeds), models_per_chunk=chunk, **f)
    return sweep(cfg, scheduler="processes" if n > chunk else "serial", workers=workers)


def evaluate_cell(knob: str, alpha: float, cfg: dict, paper: xr.Dataset, workers: int,
                  log) -> dict:
    from dnnphase import knobs
    from dnnphase.sweeps.tune import tune

    fields = shared_fields(cfg)
    grid = np.asarray(cfg["values"], dtype=float)
    low, high = float(grid.min()), float(grid.max())
    scale = knobs.KNOBS[knob].scale
    out = {}
    t0 = time.time()

    # (a) tune, training data only
    td = tune(knob=knob, low=low, high=high, alpha=alpha, seeds=list(TUNE_SEEDS),
              scheduler="processes", workers=workers,
              models_per_chunk=math.ceil(3 * len(TUNE_SEEDS) / workers), **fields)
    value = float(td["value"])
    search_models = int(np.isfinite(td["path_value"].values).sum()) * len(TUNE_SEEDS)
    out.update(tune_value=value, tune_curvature=float(td["curvature"]),
               tune_curvature_se=float(td["curvature_se"]),
               tune_bracketed=bool(td["bracketed"]), tune_stop=str(td["stop_reason"].values),
               tune_note=td.attrs["note"], tune_search_models=search_models)
    log(f"  tune: {td.attrs['note']}; {int(td['models_trained'])} models")
    accs = np.full(len(EVAL_SEEDS), np.nan)
    tune_models = int(td["models_trained"])
    if np.isfinite(value):
        accs[:len(TUNE_SEEDS)] = td["final_test_accuracy"].values
        rest = [s for s in EVAL_SEEDS if s not in TUNE_SEEDS]
        ev = run_sweep(knob, [value], alpha, rest, fields, workers=workers)
        accs[len(TUNE_SEEDS):] = ev["test_accuracy"].values.ravel()
        tune_models += len(rest)
    m, se, _ = mean_se(accs)
    out.update(tune_acc=m, tune_acc_se=se, tune_models=tune_models, tune_accs=accs,
               tune_wall_s=time.time() - t0)
    log(f"  tune {knob}={value:.4g}: test {m:.4f} ± {se:.4f} ({time.time() - t0:.0f} s)")

    # (b) the committed grid's best cell (looked at the test set)
    g = best_grid(paper, knob, alpha)
    out.update(grid_value=g["value"], grid_acc=g["acc"], grid_acc_se=g["se"],
               grid_models=g["models"])

    # (c) validation-chosen at tune's search budget
    t1 = time.time()
    n_values = budget_values(search_models)
    values = axis_values(low, high, n_values, scale)
    vs = run_sweep(knob, values, alpha, TUNE_SEEDS, fields, dataset=VAL_DATASET,
                   workers=workers)
    vacc = vs["test_accuracy"].isel(alpha=0).values  # (values, seeds): validation accuracy
    vmean = np.array([mean_se(row)[0] for row in vacc])
    pick = float(values[int(np.nanargmax(vmean))])
    ev = run_sweep(knob, [pick], alpha, EVAL_SEEDS, fields, workers=workers)
    vaccs = ev["test_accuracy"].values.ravel()
    m, se, _ = mean_se(vaccs)
    out.update(val_value=pick, val_acc=m, val_acc_se=se, val_n_values=n_values,
               val_validation_acc=float(np.nanmax(vmean)),
               val_models=n_values * len(TUNE_SEEDS) + len(EVAL_SEEDS), val_accs=vaccs,
               val_wall_s=time.time() - t1)
    log(f"  validation: {n_values} values, picked {knob}={pick:.4g} (val {np.nanmax(vmean):.4f})"
        f": test {m:.4f} ± {se:.4f} ({time.time() - t1:.0f} s)")
    return out


# ---------------------------------------------------------------------- result files

SCALARS = {  # name: (dtype, long name)
    "tune_value": (float, "knob value tune chose (training load curve linear)"),
    "tune_acc": (float, "test accuracy at tune's value, mean over 10 seeds"),
    "tune_acc_se": (float, "its standard error over seeds"),
    "tune_curvature": (float, "seed-mean scale-free curvature at tune's value (4 seeds)"),
    "tune_curvature_se": (float, "its standard error"),
    "tune_bracketed": (bool, "tune found a sign change of the curvature in [low, high]"),
    "tune_stop": (str, "why tune's search stopped"),
    "tune_note": (str, "tune's one-sentence result"),
    "tune_search_models": (int, "models tune's search trained (rounds, no final models)"),
    "tune_models": (int, "models trained for tune: search, final and the extra seeds to 10"),
    "tune_wall_s": (float, "wall time of tune and its 10-seed test, s"),
    "val_value": (float, "knob value with the best mean validation accuracy"),
    "val_acc": (float, "test accuracy at it (full training set), mean over 10 seeds"),
    "val_acc_se": (float, "its standard error over seeds"),
    "val_validation_acc": (float, "its mean validation accuracy (4 seeds, 80 % training)"),
    "val_n_values": (int, "values in the validation grid (tune's search models / 4)"),
    "val_models": (int, "models trained for the validation choice: grid and 10 final"),
    "val_wall_s": (float, "wall time of the validation choice and its test, s"),
    "grid_value": (float, "committed grid's value with the best seed-mean test accuracy"),
    "grid_acc": (float, "its test accuracy, mean over 10 seeds"),
    "grid_acc_se": (float, "its standard error"),
    "grid_models": (int, "models the committed grid row cost (values x 10 seeds)"),
}
FILL = {float: np.nan, bool: False, int: -1, str: ""}


def empty_dataset(knobs_: list, alphas: list) -> xr.Dataset:
    shape = (len(knobs_), len(alphas))
    data = {}
    for name, (dt, long) in SCALARS.items():
        arr = np.full(shape, FILL[dt], dtype=object if dt is str else dt)
        data[name] = (("knob", "alpha"), arr, {"long_name": long})
    data["done"] = (("knob", "alpha"), np.zeros(shape, bool), {"long_name": "cell finished"})
    for name in ("tune_seed_acc", "val_seed_acc"):
        data[name] = (("knob", "alpha", "seed"), np.full(shape + (len(EVAL_SEEDS),), np.nan),
                      {"long_name": "per-seed test accuracy"})
    return xr.Dataset(data, coords={"knob": list(knobs_), "alpha": list(alphas),
                                    "seed": list(EVAL_SEEDS)})


def store_cell(ds: xr.Dataset, knob: str, alpha: float, cell: dict) -> None:
    i, j = list(ds.knob.values).index(knob), int(np.flatnonzero(ds.alpha.values == alpha)[0])
    for name in SCALARS:
        ds[name].values[i, j] = cell[name]
    ds["tune_seed_acc"].values[i, j] = cell["tune_accs"]
    ds["val_seed_acc"].values[i, j] = cell["val_accs"]
    ds["done"].values[i, j] = True


def save_nc(ds: xr.Dataset, path: Path) -> None:
    out = ds.copy()
    for name, (dt, _) in SCALARS.items():
        if dt is str:
            out[name] = out[name].astype(str)
    write_atomic(out, path)  # a temporary name beside it, then a rename


def _fmt(v, knob):
    return "—" if not np.isfinite(v) else (f"{v:.3g}" if knob == "lr" else f"{v:.3f}")


def _acc(m, se):
    return "—" if not np.isfinite(m) else f"{m:.4f} ± {se:.4f}"


def markdown(ds: xr.Dataset) -> str:
    lines = ["# `tune` against validation and the best grid cell (paper settings)", "",
             "Generated by `python scripts/tune_evaluation.py` from " + ", ".join(
                 f"`figures/paper/dnn_{k}.nc`" for k in ds.knob.values) + ". Test accuracy "
             "is mean ± SE over 10 seeds. Tune and validation search with 4 seeds per value; "
             "the validation grid has as many values as tune's search trained models / 4 "
             "(same budget). The best grid cell looked at the test set (an oracle). "
             "* after tune's value: curvature not bracketed in the range.", ""]
    for knob in ds.knob.values:
        d = ds.sel(knob=knob)
        lines += [f"## {knob}", "",
                  "| α | tune value | tune acc | validation value | validation acc | "
                  "best grid value | best grid acc | models (tune / validation / grid) |",
                  "|---|---|---|---|---|---|---|---|"]
        for a in ds.alpha.values:
            c = d.sel(alpha=a)
            if not bool(c["done"]):
                lines.append(f"| {a:g} | not run | | | | | | |")
                continue
            star = "" if bool(c["tune_bracketed"]) else "*"
            lines.append(
                f"| {a:g} | {_fmt(float(c.tune_value), knob)}{star} | "
                f"{_acc(float(c.tune_acc), float(c.tune_acc_se))} | "
                f"{_fmt(float(c.val_value), knob)} | "
                f"{_acc(float(c.val_acc), float(c.val_acc_se))} | "
                f"{_fmt(float(c.grid_value), knob)} | "
                f"{_acc(float(c.grid_acc), float(c.grid_acc_se))} | "
                f"{int(c.tune_models)} / {int(c.val_models)} / {int(c.grid_models)} |")
        lines += ["", *summary(d, knob), ""]
    return "\n".join(lines) + "\n"


def summary(d: xr.Dataset, knob: str) -> list[str]:
    """Plain sentences computed from the numbers (nothing hard-coded)."""
    done = d["done"].values
    if not done.any():
        return []
    t, v, g = (d[f"{k}_acc"].values[done] for k in ("tune", "val", "grid"))
    ts, vs = d["tune_acc_se"].values[done], d["val_acc_se"].values[done]
    n = int(done.sum())
    diff = t - v
    sig = np.sqrt(ts ** 2 + vs ** 2)
    better = int(np.sum(diff > 2 * sig))
    worse = int(np.sum(diff < -2 * sig))
    gap_t, gap_v = g - t, g - v
    br = int(d["tune_bracketed"].values[done].sum())
    tm, vm = int(d["tune_models"].values[done].sum()), int(d["val_models"].values[done].sum())
    return [
        f"Over the {n} α finished, tune's choice is on average {np.mean(diff) * 100:+.2f} "
        f"points of test accuracy against the validation-chosen value (range "
        f"{np.min(diff) * 100:+.2f} to {np.max(diff) * 100:+.2f}); it is better by more than "
        f"2 combined SE at {better} α and worse by more than 2 combined SE at {worse} α.",
        f"The best committed grid cell (which looked at the test set) is on average "
        f"{np.mean(gap_t) * 100:.2f} points above tune and {np.mean(gap_v) * 100:.2f} points "
        f"above the validation choice.",
        f"Tune's curvature changed sign inside the range at {br} of {n} α; "
        f"tune cost {tm} models in all, validation {vm}, the committed grid rows "
        f"{int(d['grid_models'].values[done].sum())}.",
    ]


def check_run_options(parser, args, outputs=(), stored: dict | None = None) -> None:
    """--workers, --epochs and --out before any work: each bad one is one line, exit 2.
    ``outputs``: the files the run replaces (refused where they exist, unless --overwrite);
    ``stored``: the settings of the results it resumes, which must be this run's (a smoke
    test's --epochs is never mixed into the committed results), unless --overwrite."""
    from phasecore.checks import ConfigError
    from phasecore.results import OutputExistsError, check_new_outputs, check_output_folder

    if args.workers < 1:
        parser.error(f"--workers must be an integer >= 1 (got {args.workers})")
    if args.epochs is not None and args.epochs < 1:
        parser.error(f"--epochs must be an integer >= 1 (got {args.epochs})")
    try:
        check_output_folder(args.out)
        check_new_outputs(outputs, args.overwrite)
    except (ConfigError, OutputExistsError) as err:
        parser.error(f"--out: {err}")
    mixed = {k: v for k, v in (stored or {}).items() if v != getattr(args, k)}
    if mixed and not args.overwrite:
        made = ", ".join(f"--{k} {v}" if v is not None else f"the default {k}"
                         for k, v in mixed.items())
        parser.error(f"--out: the results there were made with {made}, not this run's "
                     "settings; choose another --out or pass --overwrite to replace them")


def add_run_options(parser, what: str) -> None:
    """--out, --workers and --overwrite, with their defaults in the help."""
    parser.add_argument("--out", default=str(ROOT / "figures" / "tune"),
                        help=f"the folder of {what} (default figures/tune, the committed one)")
    parser.add_argument("--workers", type=int, default=2, help="worker processes")
    overwrite_option(parser, what)


def main(argv=None) -> int:
    p = Parser(description=__doc__.split("\n\n")[0])
    p.add_argument("--knobs", nargs="+", default=list(KNOBS), choices=KNOBS,
                   help="the knobs evaluated")
    p.add_argument("--alphas", nargs="+", type=float, default=list(ALPHAS),
                   help="the slopes evaluated")
    add_run_options(p, "evaluation.nc and evaluation.md")
    p.add_argument("--epochs", type=int, default=None,
                   help="override the paper's epochs: a quick smoke test only, not comparable "
                        "(default: the paper's)")
    p.add_argument("--resume", action="store_true",
                   help="keep the cells already finished in <out>/evaluation.nc")
    args = p.parse_args(argv)
    out = Path(args.out)
    nc, md = out / "evaluation.nc", out / "evaluation.md"
    stored = None
    if args.resume and nc.is_file():  # resumed only from a run of these settings
        try:
            attrs = xr.load_dataset(nc).attrs
        except (OSError, ValueError) as err:
            p.error(f"--resume: {nc} is not a result file ({err})")
        # --epochs None: the paper's epochs; a smoke test's epochs differ from them
        epochs = {json.loads(v).get("epochs") if json.loads(v).get("epochs")
                  != paper_config(k.removeprefix("config_"))[0].get("epochs") else None
                  for k, v in attrs.items() if k.startswith("config_")}
        stored = {"epochs": epochs.pop()} if len(epochs) == 1 else None
    if not all(math.isfinite(a) and 0 <= a <= 1 for a in args.alphas) or \
            len(set(args.alphas)) != len(args.alphas):
        p.error(f"--alphas must be distinct slopes in [0, 1] (got {args.alphas})")
    check_run_options(p, args, outputs=() if args.resume else (nc, md), stored=stored)
    return guarded(p.prog, lambda: work(args), program=argv is None)


def work(args) -> None:
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    nc, md = out / "evaluation.nc", out / "evaluation.md"
    ds = empty_dataset(args.knobs, args.alphas)
    if args.resume and nc.exists():
        old = xr.load_dataset(nc)
        for k in args.knobs:
            for a in args.alphas:
                if k in old.knob.values and a in old.alpha.values and \
                        bool(old["done"].sel(knob=k, alpha=a)):
                    for name in list(SCALARS) + ["done", "tune_seed_acc", "val_seed_acc"]:
                        ds[name].loc[{"knob": k, "alpha": a}] = old[name].sel(knob=k, alpha=a)
    from phasecore.results import provenance

    start = time.time()

    def log(msg):
        print(f"[{time.time() - start:7.0f} s] {msg}", file=sys.stderr, flush=True)

    for knob in args.knobs:
        cfg, paper = paper_config(knob)
        if args.epochs is not None:
            cfg = {**cfg, "epochs": args.epochs, "record_every": 0}
        ds.attrs[f"config_{knob}"] = json.dumps(cfg)
        for alpha in args.alphas:
            if bool(ds["done"].sel(knob=knob, alpha=alpha)):
                continue
            log(f"{knob} alpha={alpha:g}")
            cell = evaluate_cell(knob, alpha, cfg, paper, args.workers, log)
            store_cell(ds, knob, alpha, cell)
            prov = provenance("dnnphase.tune_evaluation", {
                "tune_seeds": TUNE_SEEDS, "eval_seeds": EVAL_SEEDS, "measure": MEASURE,
                "val_fraction": VAL_FRACTION, "split_seed": SPLIT_SEED,
                "tune": "defaults (values_per_round 3, rounds 4, tolerance 0.02, within_se 2)",
                "note": "training settings = the paper sweeps' config (attrs config_<knob>); "
                        "measures=[trace_ratio], record_every=0, models_per_chunk set for 2 "
                        "workers (float32 results equal the committed ones to rounding)"})
            ds.attrs.update(prov)
            ds.attrs["wall_s"] = time.time() - start
            save_nc(ds, nc)
            write_text_atomic(md, markdown(ds))
            log(f"saved {nc} and {md}")
    log("done")


if __name__ == "__main__":
    sys.exit(main())
