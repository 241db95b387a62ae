"""Where the linear rule holds off the paper's data: ``tune`` against the grid's best and
against validation at equal cost, on other data sets, another architecture and two knobs.

    python scripts/tune_cases.py          # ~15 min on 2 cores; reuses figures/tune/cases.nc

Writes ``figures/tune/cases.nc``, ``cases.md`` (the table in docs/tune.md) and
``cases.png`` after every case, so an interrupted run keeps its finished cases and a rerun
computes only the missing ones (``--fresh`` starts over).

Each case is one data set and architecture (:data:`NETWORKS`, small and fast: full batch,
Adam, alpha = :data:`ALPHA`) and one knob over its range (:data:`RANGES`). For each:

(a) grid: :data:`GRID_VALUES` values evenly spaced over the range, seeds :data:`SEEDS`;
    the best value is the one with the best seed-mean test accuracy (it looked at the
    test set: an oracle, and what the rule is judged against). Also the seed-mean
    curvature at it, and where the grid's seed-mean curvature changes sign.
(b) tune (``dnnphase.sweeps.tune.tune`` with its defaults, seeds 0-3, training data only); its
    value's test accuracy over seeds :data:`SEEDS` (tune's own final models and the rest
    trained here at the same value).
(c) validation at tune's cost (``scripts/tune_evaluation.py``'s rule): a class-stratified
    20 % of the training set held out; as many values as tune's search trained models / 4,
    evenly spaced, 4 seeds each, on the other 80 %; the best mean validation accuracy is
    trained with seeds :data:`SEEDS` on the full training set and tested.
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
from phasecore.commandline import Parser, guarded
from phasecore.results import write_atomic, write_text_atomic

sys.path.insert(0, str(Path(__file__).resolve().parent))
from tune_evaluation import (  # noqa: E402  (a sibling script, not a package)
    MEASURE,
    SPLIT_SEED,
    TUNE_SEEDS,
    VAL_FRACTION,
    add_run_options,
    axis_values,
    budget_values,
    check_run_options,
    mean_se,
    stratified_split,
)

ROOT = Path(__file__).resolve().parents[1]
ALPHA = 0.2
GRID_VALUES = 11
SEEDS = tuple(range(8))
RANGES = {"dropout": (0.0, 0.5), "label_noise": (0.0, 0.8)}
_MLP = dict(arch="mlp", depth=5, width=64, epochs=60, lr=3e-3, n_train=1000)
#: name: the data set and network (every other setting: the sweep's default).
NETWORKS = {
    "mnist1d MLP": dict(_MLP, dataset="mnist1d"),
    "gmm MLP": dict(_MLP, dataset="gmm"),
    "digits MLP": dict(_MLP, dataset="digits"),
    "digits CNN": dict(arch="cnn", depth=4, channels=8, epochs=30, lr=3e-3, n_train=600,
                       dataset="digits"),
}
#: A difference counts when it is more than this many combined standard errors.
SIGNIFICANT = 2.0


# ----------------------------------------------------------------------- pure parts


def grid_crossing(values: np.ndarray, curvature: np.ndarray) -> float:
    """Where the seed-mean curvature first crosses zero upwards along the grid (the
    theory's direction for dropout and label noise), linearly interpolated; NaN if it
    never does."""
    for i in range(len(values) - 1):
        a, b = curvature[i], curvature[i + 1]
        if np.isfinite(a) and np.isfinite(b) and a <= 0 < b:
            return float(values[i] + (values[i + 1] - values[i]) * a / (a - b))
    return math.nan


def compare(acc: float, se: float, ref: float, ref_se: float) -> str:
    """'=' when acc and ref are within SIGNIFICANT combined SE, else '<' or '>'."""
    if not (np.isfinite(acc) and np.isfinite(ref)):
        return "?"
    width = SIGNIFICANT * math.hypot(se if np.isfinite(se) else 0, ref_se if np.isfinite(
        ref_se) else 0)
    return "=" if abs(acc - ref) <= width else ("<" if acc < ref else ">")


def verdict(rows: list[dict]) -> dict[str, list[str]]:
    """Cases by outcome: 'holds' (tune within SIGNIFICANT SE of the grid's best),
    'fails' (below it), and of those, which validation beat or matched."""
    out = {"holds": [], "fails": [], "validation_better": [], "tune_better": []}
    for r in rows:
        name = f"{r['network']} / {r['knob']}"
        vs_grid = compare(r["tune_acc"], r["tune_acc_se"], r["grid_acc"], r["grid_acc_se"])
        out["holds" if vs_grid in ("=", ">") else "fails"].append(name)
        vs_val = compare(r["tune_acc"], r["tune_acc_se"], r["val_acc"], r["val_acc_se"])
        if vs_val == "<":
            out["validation_better"].append(name)
        elif vs_val == ">":
            out["tune_better"].append(name)
    return out


# ----------------------------------------------------------------- the validation split


def validation_name(dataset: str) -> str:
    return f"{dataset}-val"


def _validation_loader(base: str):
    def load(*, n_train, data_seed) -> ClassificationData:
        """``base``'s training set (n_train, data_seed) cut into 80 % training and a 20 %
        class-stratified validation set, which stands in as the 'test' set."""
        full = load_dataset(base, n_train=n_train, data_seed=data_seed)
        tr, va = stratified_split(full.y_train, VAL_FRACTION, SPLIT_SEED)
        info = {**full.info, "validation": f"class-stratified {VAL_FRACTION:g} of the "
                f"training set held out (split_seed {SPLIT_SEED}); test set = validation"}
        return ClassificationData(full.x_train[tr], full.y_train[tr], full.x_train[va],
                                  full.y_train[va], full.n_classes, validation_name(base),
                                  info, full.image_shape)
    return load


if __name__ in ("__main__", "__mp_main__"):  # the script and its pool's spawned workers
    for _base in sorted({n["dataset"] for n in NETWORKS.values()}):
        register_dataset(validation_name(_base))(_validation_loader(_base))


# --------------------------------------------------------------------- training parts


def fields_of(network: str) -> dict:
    return dict(NETWORKS[network], measures=[MEASURE], record_every=0)


def train(knob: str, values, seeds, fields: dict) -> xr.Dataset:
    """One sweep in this process, in chunks of at most the CPU's default stack (16): the
    cases run two at a time in a pool of their own (:func:`main`), which keeps both cores
    busy without a pool start per sweep."""
    from dnnphase import defaults
    from dnnphase.sweeps.sweep import SweepConfig, sweep

    n = len(values) * len(seeds)
    cfg = SweepConfig(knob=knob, values=[float(v) for v in values], alphas=[ALPHA],
                      seeds=list(seeds), models_per_chunk=min(defaults.MODELS_PER_CHUNK, n),
                      **fields)
    return sweep(cfg, scheduler="serial").isel(alpha=0)


def evaluate_case(network: str, knob: str, fields: dict) -> dict:
    """Grid, tune and validation of one case (see the module docstring); ``fields``: the
    network's (:func:`fields_of`)."""
    from dnnphase.sweeps.tune import tune

    low, high = RANGES[knob]
    out = {"network": network, "knob": knob}
    t0 = time.time()

    def log(msg):
        print(f"[{time.time() - t0:6.0f} s] {network} / {knob}: {msg}", file=sys.stderr,
              flush=True)

    # (a) the grid, the oracle
    grid = np.linspace(low, high, GRID_VALUES)
    gs = train(knob, grid, SEEDS, fields)
    acc = gs["test_accuracy"].values  # (value, seed)
    curv = gs["curvature_scaled"].sel(measure=MEASURE).values
    acc_mean = np.array([mean_se(a)[0] for a in acc])
    curv_stats = np.array([mean_se(c)[:2] for c in curv])
    best = int(np.nanargmax(acc_mean))
    m, se, _ = mean_se(acc[best])
    out.update(grid_value=float(grid[best]), grid_acc=m, grid_acc_se=se,
               grid_curvature=curv_stats[best, 0], grid_curvature_se=curv_stats[best, 1],
               grid_crossing=grid_crossing(grid, curv_stats[:, 0]),
               grid_models=acc.size, grid_values=grid, grid_acc_mean=acc_mean,
               grid_curv_mean=curv_stats[:, 0], grid_curv_se=curv_stats[:, 1])
    log(f"grid best {grid[best]:.3g} (test {m:.4f}), crossing {out['grid_crossing']:.3g}")

    # (b) tune with its defaults (a round is one stack), training data only
    td = tune(knob=knob, low=low, high=high, alpha=ALPHA, seeds=list(TUNE_SEEDS),
              scheduler="serial", **fields)
    value = float(td["value"])
    search = int(np.isfinite(td["path_value"].values).sum()) * len(TUNE_SEEDS)
    out.update(tune_value=value, tune_curvature=float(td["curvature"]),
               tune_bracketed=bool(td["bracketed"]), tune_note=td.attrs["note"],
               tune_search_models=search, tune_models=int(td["models_trained"]))
    log(f"tune: {td.attrs['note']}")

    # (c) validation at tune's search cost
    n_values = budget_values(search)
    values = axis_values(low, high, n_values, "linear")
    vs = train(knob, values, TUNE_SEEDS, dict(fields, dataset=validation_name(
        fields["dataset"])))
    vmean = np.array([mean_se(r)[0] for r in vs["test_accuracy"].values])
    pick = float(values[int(np.nanargmax(vmean))])

    # both choices tested with the grid's seeds, in one sweep (tune's own final models
    # are seeds 0-3 of these, trained again here in another stack)
    both = sorted({value, pick}) if np.isfinite(value) else [pick]
    ev = train(knob, both, SEEDS, fields)["test_accuracy"].values
    tm, tse, _ = mean_se(ev[both.index(value)]) if np.isfinite(value) else (math.nan,) * 3
    vm, vse, _ = mean_se(ev[both.index(pick)])
    out.update(tune_acc=tm, tune_acc_se=tse, val_value=pick, val_acc=vm, val_acc_se=vse,
               val_n_values=n_values, val_models=n_values * len(TUNE_SEEDS) + len(SEEDS))
    out["tune_models"] += len(SEEDS)
    log(f"tune {value:.3g}: test {tm:.4f}; validation ({n_values} values) {pick:.3g}: "
        f"test {vm:.4f}")
    return out


# ---------------------------------------------------------------------- result files

SCALARS = ("grid_value", "grid_acc", "grid_acc_se", "grid_curvature", "grid_curvature_se",
           "grid_crossing", "grid_models", "tune_value", "tune_acc", "tune_acc_se",
           "tune_curvature", "tune_bracketed", "tune_note", "tune_search_models",
           "tune_models", "val_value", "val_acc", "val_acc_se", "val_n_values", "val_models")
GRID_ARRAYS = ("grid_values", "grid_acc_mean", "grid_curv_mean", "grid_curv_se")


def case_id(network: str, knob: str) -> str:
    return f"{network} / {knob}"


def to_dataset(rows: list[dict]) -> xr.Dataset:
    data = {name: ("case", [r[name] for r in rows]) for name in SCALARS + ("network", "knob")}
    for name in GRID_ARRAYS:
        data[name] = (("case", "grid_index"), np.array([r[name] for r in rows], float))
    return xr.Dataset(data, coords={"case": [case_id(r["network"], r["knob"]) for r in rows]})


def from_dataset(ds: xr.Dataset) -> list[dict]:
    rows = []
    for i in range(ds.sizes["case"]):
        c = ds.isel(case=i)
        row = {name: c[name].item() for name in SCALARS + ("network", "knob")}
        row.update({name: c[name].values for name in GRID_ARRAYS})
        rows.append(row)
    return rows


def _v(x) -> str:
    return "—" if not np.isfinite(x) else f"{x:.3f}"


def _a(m, se) -> str:
    return "—" if not np.isfinite(m) else f"{m:.3f} ± {se:.3f}"


def markdown(rows: list[dict]) -> str:
    head = ("| network | knob | grid best: value, test acc | curvature at grid best | grid "
            "crossing | tune value | tune acc | vs grid | validation value | validation "
            "acc | tune vs validation | models (grid / tune / validation) |\n"
            "|---|---|---|---|---|---|---|---|---|---|---|---|")
    lines = [head]
    for r in rows:
        star = "" if r["tune_bracketed"] else "*"
        lines.append(
            f"| {r['network']} | {r['knob']} | {_v(r['grid_value'])}: "
            f"{_a(r['grid_acc'], r['grid_acc_se'])} | {r['grid_curvature']:+.2f} ± "
            f"{r['grid_curvature_se']:.2f} | {_v(r['grid_crossing'])} | "
            f"{_v(r['tune_value'])}{star} | {_a(r['tune_acc'], r['tune_acc_se'])} | "
            f"{(r['tune_acc'] - r['grid_acc']) * 100:+.1f} pt "
            f"{compare(r['tune_acc'], r['tune_acc_se'], r['grid_acc'], r['grid_acc_se'])} | "
            f"{_v(r['val_value'])} | {_a(r['val_acc'], r['val_acc_se'])} | "
            f"{(r['tune_acc'] - r['val_acc']) * 100:+.1f} pt "
            f"{compare(r['tune_acc'], r['tune_acc_se'], r['val_acc'], r['val_acc_se'])} | "
            f"{r['grid_models']} / {r['tune_models']} / {r['val_models']} |")
    v = verdict(rows)
    lines += ["", f"Tune within {SIGNIFICANT:g} combined SE of the grid's best (or above): "
              f"{len(v['holds'])} of {len(rows)} ({', '.join(v['holds']) or 'none'}); "
              f"below it: {', '.join(v['fails']) or 'none'}.",
              f"Against validation at equal cost, tune is better at "
              f"{', '.join(v['tune_better']) or 'none'}; worse at "
              f"{', '.join(v['validation_better']) or 'none'}; equal within "
              f"{SIGNIFICANT:g} SE elsewhere."]
    return "\n".join(lines) + "\n"


def plot(rows: list[dict]):
    """Per case: the grid's seed-mean test accuracy and curvature along the knob, tune's
    and validation's values marked."""
    from phasecore.panels import plt

    n = len(rows)
    cols = min(4, n)
    fig, axes = plt.subplots(-(-n // cols), cols, figsize=(3.6 * cols, 3.0 * -(-n // cols)),
                             squeeze=False, layout="constrained")
    for ax, r in zip(axes.ravel(), rows, strict=False):
        x = r["grid_values"]
        ax.plot(x, r["grid_acc_mean"], "o-", color="k", ms=3, label="grid test accuracy")
        ax.axvline(r["tune_value"], color="C3", ls="--", label="tune")
        ax.axvline(r["val_value"], color="C0", ls=":", label="validation")
        ax.set_title(f"{r['network']} / {r['knob']}", fontsize=8)
        ax.set_xlabel(r["knob"], fontsize=7)
        ax.tick_params(labelsize=6)
        twin = ax.twinx()
        twin.errorbar(x, r["grid_curv_mean"], yerr=r["grid_curv_se"], color="C2", ms=3,
                      fmt="s-", lw=0.8, label="curvature")
        twin.axhline(0, color="C2", lw=0.5)
        twin.tick_params(labelsize=6, colors="C2")
    for ax in axes.ravel()[n:]:
        ax.axis("off")
    handles, labels = axes[0, 0].get_legend_handles_labels()
    extra, extra_labels = twin.get_legend_handles_labels()
    fig.legend(handles + extra, labels + extra_labels, loc="outside lower center", ncol=4,
               fontsize=7)
    fig.suptitle(f"alpha = {ALPHA:g}: grid test accuracy (black, left axis) and curvature "
                 "(green, right axis, mean ± SE over 8 seeds); tune's value (red dashed), "
                 "validation's (blue dotted)", fontsize=8)
    return fig


def main(argv=None) -> int:
    p = Parser(description=__doc__.split("\n\n")[0])
    add_run_options(p, "cases.nc, cases.md and cases.png")
    p.add_argument("--networks", nargs="+", default=list(NETWORKS), choices=list(NETWORKS),
                   metavar="NETWORK", help="the networks evaluated, each name quoted, of "
                   + ", ".join(f"'{n}'" for n in NETWORKS))
    p.add_argument("--fresh", action="store_true",
                   help="ignore <out>/cases.nc (replacing it needs --overwrite)")
    p.add_argument("--epochs", type=int, default=None,
                   help="override every network's epochs: a quick smoke test only "
                        "(default: each network's)")
    args = p.parse_args(argv)
    out = Path(args.out)
    nc = out / "cases.nc"
    old = None
    if nc.is_file() and not args.fresh:  # resumed only from a run of these settings
        try:
            old = xr.load_dataset(nc)
        except (OSError, ValueError) as err:
            p.error(f"--out: {nc} is not a result file ({err}); --fresh --overwrite replaces it")
    stored = None if old is None else {
        "epochs": json.loads(old.attrs.get("config", "{}")).get("epochs")}
    check_run_options(p, args, stored=stored, outputs=(
        [nc, out / "cases.md", out / "cases.png"] if args.fresh else []))
    if stored is not None and stored["epochs"] != args.epochs:  # --overwrite: start afresh
        old = None
    return guarded(p.prog, lambda: work(args, old), program=argv is None)


def work(args, old) -> None:
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    nc = out / "cases.nc"
    rows = [] if old is None else from_dataset(old)
    done = {case_id(r["network"], r["knob"]) for r in rows}
    start = time.time()

    def log(msg):
        print(f"[{time.time() - start:6.0f} s] {msg}", file=sys.stderr, flush=True)


    import concurrent.futures as cf
    import multiprocessing

    from phasecore.panels import save_figure
    from phasecore.results import provenance

    order = [case_id(n, k) for n in NETWORKS for k in RANGES]
    todo = [(n, k) for n in args.networks for k in RANGES if case_id(n, k) not in done]
    todo.sort(key=lambda c: -NETWORKS[c[0]].get("channels", 0))  # the slow CNN first
    with cf.ProcessPoolExecutor(args.workers,
                                mp_context=multiprocessing.get_context("spawn")) as pool:
        override = {} if args.epochs is None else {"epochs": args.epochs}
        futures = [pool.submit(evaluate_case, n, k, {**fields_of(n), **override})
                   for n, k in todo]
        for fut in cf.as_completed(futures):
            rows.append(fut.result())
            rows.sort(key=lambda r: order.index(case_id(r["network"], r["knob"])))
            ds = to_dataset(rows)
            ds.attrs.update(provenance("dnnphase.tune_cases", {
                "networks": NETWORKS, "ranges": RANGES, "alpha": ALPHA, "seeds": SEEDS,
                "tune_seeds": TUNE_SEEDS, "grid_values": GRID_VALUES, "measure": MEASURE,
                "val_fraction": VAL_FRACTION, "split_seed": SPLIT_SEED,
                **({} if args.epochs is None else {"epochs": args.epochs})}))
            write_atomic(ds, nc)  # a temporary name beside it, then a rename
            write_text_atomic(out / "cases.md", markdown(rows))
            save_figure(plot(rows), out / "cases.png")
            log(f"saved {len(rows)} cases")
    if rows:  # drawn again from the file too, so that a change of the figure needs no run
        write_text_atomic(out / "cases.md", markdown(rows))
        save_figure(plot(rows), out / "cases.png")
    print(markdown(rows))


if __name__ == "__main__":
    sys.exit(main())
