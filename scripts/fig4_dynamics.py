"""Fig. 4: the paper's three training settings over epochs (left) and the chain fitted to
them, with synchronous noise (right).

    python scripts/fig4_dynamics.py [FOLDER] [--seeds N] [--chain-seeds N] [--refit] [--quick]
                                    [--overwrite]

The left column exactly as the paper's SM S3 gives it: its MLP (7 hidden layers of 100,
BatchNorm, ReLU: alpha = 0), Adam on its 2 560 MNIST digits (10 x 10), 100 epochs, the
trace-ratio load curve (Eq. 3) recorded every ``--record-every`` epochs on the training set:

* (b) lr 1e-4, batch 200;
* (c) lr 1e-3, dropout 0.1, batch 100;
* (d) lr 3e-3, batch 50, dropout 0.2.

The right column: the paper does not give its chain's parameters in the text (its copy
lost them, and S3 says only that they were "chosen to produce qualitatively similar
curves"). Here they are *fitted*: (mu->, mu<-, s, c) of the mean-field chain to each
setting's seed-mean curves over epochs (:func:`springblock.fit.fit_trajectory`, from
rest, weighted by the seed variance), then the chain is simulated at those parameters
with the paper's synchronous noise (one draw shared by all blocks each step), L = 7,
k = 1, step 0.01, to the chain time c x 100 epochs, and compared frame by frame with the
network (a per-frame offset and one scale projected out, as in the fit).

Writes ``FOLDER/fig4_network.nc`` (the three settings' recorded curves), ``FOLDER/
fig4_chain.nc`` (the fit and the synchronous chain at the network's epochs) and
``FOLDER/fig4.png``; prints the numbers. ``--refit`` reuses ``fig4_network.nc``. Existing
files are replaced only with ``--overwrite`` (checked before any work).
About 10 minutes on 2 cores at 10 seeds (``--quick``: a tiny network on 8 x 8 digits,
seconds, for the tests).
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import numpy as np
import xarray as xr

from phasecore.checks import ConfigError
from phasecore.commandline import Parser, integer, overwrite_option
from phasecore.commandline import run as run_command
from phasecore.loadcurve import PHASE_TOLERANCE, curvature_scaled, phase_label

#: The paper's three settings (SM S3): lr, batch size, dropout; alpha = 0 (ReLU).
SETTINGS = {"b": (1e-4, 200, 0.0), "c": (1e-3, 100, 0.1), "d": (3e-3, 50, 0.2)}
#: The shape each panel shows at the end of training, lazy to noisy (the paper's Fig. 4
#: reading of its three "characteristic training dynamics"; its caption is not in the text).
EXPECTED = {"b": "concave", "c": "linear", "d": "convex"}
ALPHA = 0.0
STEP = 0.01  # the chain's time step
#: The quick form (tests): a tiny network on sklearn's 8 x 8 digits.
QUICK = {"dataset": "digits", "n_train": 300, "depth": 3, "width": 16, "epochs": 6}
LABELS = {-1: "concave", 0: "linear", 1: "convex"}


def label(curvature: float) -> str:
    """'concave', 'linear' or 'convex' (band +-PHASE_TOLERANCE), or 'nan'."""
    value = phase_label(np.array(curvature))
    return "nan" if not np.isfinite(value) else LABELS[int(value)]


def train(seeds: int, epochs: int, record_every: int, quick: bool) -> xr.Dataset:
    """The three settings' networks -> Dataset (setting, seed, epoch, layer)."""
    from dnnphase.sweeps.sweep import sweep

    extra = QUICK if quick else {}
    parts = []
    for name, (lr, batch, dropout) in SETTINGS.items():
        ds = sweep(knob="lr", values=(lr,), alphas=(ALPHA,), seeds=tuple(range(seeds)),
                   batch_size=batch, dropout=dropout, record_every=record_every,
                   measures=("trace_ratio",), **(extra | {"epochs": epochs}))
        cell = ds.isel(alpha=0, lr=0).sel(measure="trace_ratio")
        parts.append(xr.Dataset({
            "load_curve_epochs": cell["load_curve_epochs"].transpose("seed", "epoch", "layer"),
            "load_curve_epochs_test": cell["load_curve_epochs_test"].transpose(
                "seed", "epoch", "layer"),
            "test_accuracy": cell["test_accuracy"], "epochs_run": cell["epochs_run"],
        }).expand_dims(setting=[name]).drop_vars(["alpha", "lr", "measure"], errors="ignore"))
    out = xr.concat(parts, "setting")
    out = out.assign_coords(lr=("setting", [s[0] for s in SETTINGS.values()]),
                            batch_size=("setting", [s[1] for s in SETTINGS.values()]),
                            dropout=("setting", [s[2] for s in SETTINGS.values()]))
    out.attrs.update(kind="fig4.network", alpha=ALPHA, measure="trace_ratio",
                     config=json.dumps({"seeds": seeds, "epochs": int(out["epoch"].values[-1]),
                                        "record_every": record_every, "quick": quick,
                                        "settings": SETTINGS}))
    return out


def project_rms(data: np.ndarray, chain: np.ndarray) -> float:
    """RMS of data - (a_e - b chain) over frames, with per-frame offsets a_e and one scale b
    fitted by least squares, in units of the last frame's drop D_0 - D_L.

    data, chain : (E, L+1) network curves and chain positions x_l (x_0 = 0).
    """
    d = data - data.mean(axis=1, keepdims=True)
    x = chain - chain.mean(axis=1, keepdims=True)
    b = -float(np.sum(d * x) / np.sum(x * x)) if np.sum(x * x) > 0 else 0.0
    resid = d + b * x
    drop = float(data[-1, 0] - data[-1, -1])
    return float(np.sqrt(np.mean(resid**2)) / abs(drop))


def chain_at(params: dict, epochs: np.ndarray, blocks: int, seeds: int) -> np.ndarray:
    """The synchronous-noise chain's seed-mean positions (E, L+1) at chain times c * epochs."""
    import springblock as sb

    c = params["time_scale"]
    every_epochs = float(epochs[1] - epochs[0])
    record = max(1, int(round(c * every_epochs / STEP)))
    steps = record * (len(epochs) - 1)
    run = sb.simulate(blocks=blocks, mu_right=params["mu_right"], mu_left=params["mu_left"],
                      noise=params["noise"], noise_sharing="synchronous", step=STEP,
                      steps=steps, record_every=record, seeds=seeds, theory_prediction=False)
    d = run["trajectory"].mean("seed").values  # (E, L+1) load d = y - x
    return 1.0 - d, run["time"].values


def fit_and_simulate(net: xr.Dataset, chain_seeds: int) -> xr.Dataset:
    """The mean-field fit to each setting and the synchronous chain at its parameters."""
    from springblock.fit import fit_trajectory, seed_weights

    per_seed = net["load_curve_epochs"].transpose("setting", "seed", "epoch", "layer").values
    epochs = net["epoch"].values.astype(float)
    mean = np.nanmean(per_seed, axis=1)
    weights = seed_weights(per_seed) if net.sizes["seed"] >= 2 else None
    fit = fit_trajectory(mean, epochs, weights=weights, start="rest").to_dataset(
        dims=["setting"], coords={"setting": net["setting"].values}).rename(
        epoch="fit_epoch")  # from rest: the epoch-0 frame is not fitted
    blocks = net.sizes["layer"] - 1
    sim, times, rms, curv = [], [], [], []
    for s in net["setting"].values:
        params = {p: float(fit[p].sel(setting=s)) for p in
                  ("mu_right", "mu_left", "noise", "time_scale")}
        x, t = chain_at(params, epochs, blocks, chain_seeds)
        sim.append(x)
        times.append(t)
        data = mean[list(net["setting"].values).index(s)]
        rms.append(project_rms(data[1:], x[1:]))  # epoch 0 left out, as in the fit
        curv.append(float(curvature_scaled(1.0 - x[-1])))
    out = fit.drop_vars(["fit_curve", "data_curve"]).assign(
        chain_positions=(("setting", "epoch", "layer"), np.array(sim), {
            "long_name": "synchronous-noise chain at the fitted parameters, seed mean x_l "
                         "at chain time c * epoch"}),
        chain_time=(("setting", "epoch"), np.array(times)),
        chain_residual=("setting", np.array(rms), {
            "long_name": "RMS of network - (a_e - b x) over epochs > 0 / final drop"}),
        chain_curvature=("setting", np.array(curv), {
            "long_name": "scale-free curvature of the chain's last load curve"}),
        meanfield_curve=fit["fit_curve"], network_curve=fit["data_curve"])
    out.attrs.update(kind="fig4.chain", chain_seeds=chain_seeds, step=STEP,
                     noise_sharing="synchronous",
                     note="parameters fitted (the paper's are not in its text)")
    return out


def curvatures(net: xr.Dataset) -> xr.DataArray:
    """Scale-free curvature of each seed's curve at each epoch (setting, seed, epoch)."""
    values = curvature_scaled(net["load_curve_epochs"].values)
    return xr.DataArray(values, dims=net["load_curve_epochs"].dims[:-1],
                        coords={d: net[d] for d in net["load_curve_epochs"].dims[:-1]})


def _normalised(curves: np.ndarray) -> np.ndarray:
    final = curves[-1]
    drop = final[0] - final[-1]
    return (curves - final[-1]) / drop if abs(drop) > 1e-12 else curves


def plot(net: xr.Dataset, chain: xr.Dataset):
    """Rows (b), (c), (d); left the network over epochs, right the chain over time."""
    import matplotlib.pyplot as plt
    from matplotlib.ticker import MaxNLocator

    fig, axes = plt.subplots(3, 2, figsize=(9.2, 9.4), squeeze=False)
    epochs = net["epoch"].values
    colours = plt.cm.viridis(np.linspace(0.9, 0.0, len(epochs)))
    for i, s in enumerate(net["setting"].values):
        lr, batch, p = (float(net[k].sel(setting=s)) for k in ("lr", "batch_size", "dropout"))
        curves = net["load_curve_epochs"].sel(setting=s).mean("seed").values
        c_net = float(curvature_scaled(curves[-1]))
        x = chain["chain_positions"].sel(setting=s).values
        c_chain = float(chain["chain_curvature"].sel(setting=s))
        for j, (shown, times) in enumerate(
                ((curves, epochs), (1.0 - x, chain["chain_time"].sel(setting=s).values))):
            ax = axes[i, j]
            for c, col in zip(_normalised(shown), colours, strict=True):
                ax.plot(np.arange(c.size), c, color=col, lw=1.0)
            ax.grid(alpha=0.3)
            ax.xaxis.set_major_locator(MaxNLocator(integer=True))
            ax.set_xlabel("layer" if j == 0 else "block", fontsize=8)
            ax.set_ylabel("load / final drop", fontsize=8)
            ax.tick_params(labelsize=7)
            if j == 0:
                ax.set_title(f"({s}) lr {lr:g}, batch {batch:g}, dropout {p:g}\nnetwork, "
                             f"epochs {times[0]:g}..{times[-1]:g}; end {c_net:+.2f} "
                             f"({label(c_net)})", fontsize=8)
            else:
                fit = chain.sel(setting=s)
                ax.set_title(f"chain (synchronous noise): mu> {float(fit['mu_right']):.3g}, "
                             f"mu< {float(fit['mu_left']):.3g}, s {float(fit['noise']):.3g}\n"
                             f"T {times[-1]:.3g}; end {c_chain:+.2f} ({label(c_chain)}); "
                             f"misfit {float(fit['chain_residual']):.3f}", fontsize=8)
    fig.suptitle("Fig. 4: load curves over training (yellow early, purple late); chain "
                 "parameters fitted, not the paper's", fontsize=9)
    fig.tight_layout()
    return fig


def report(net: xr.Dataset, chain: xr.Dataset) -> None:
    curv = curvatures(net).mean("seed")
    print("| setting | network end (seed mean) | over epochs | test acc | mu> | mu< | s | "
          "T | mean-field misfit | synchronous misfit | chain end |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for s in net["setting"].values:
        path = [label(v) for v in curv.sel(setting=s).values[1:]]
        steps = [p for k, p in enumerate(path) if k == 0 or p != path[k - 1]]
        f = chain.sel(setting=s)
        c_end = float(curv.sel(setting=s)[-1])
        print(f"| {s} | {c_end:+.3f} ({label(c_end)}) | {' -> '.join(steps)} | "
              f"{float(net['test_accuracy'].sel(setting=s).mean()):.3f} | "
              f"{float(f['mu_right']):.4f} | {float(f['mu_left']):.4f} | "
              f"{float(f['noise']):.4f} | {float(f['horizon']):.3g} | "
              f"{float(f['residual']):.3f} | {float(f['chain_residual']):.3f} | "
              f"{float(f['chain_curvature']):+.3f} ({label(float(f['chain_curvature']))}) |")
    print(f"(linear band: |curvature| <= {PHASE_TOLERANCE:g})")


def main(args) -> None:
    from phasecore import results
    from phasecore.panels import save_figure
    from phasecore.results import all_or_nothing, check_new_outputs

    folder = Path(args.folder)
    network_file = folder / "fig4_network.nc"
    if args.refit and not network_file.is_file():
        raise FileNotFoundError(f"--refit needs {network_file} (run without --refit first)")
    outputs = [folder / "fig4_chain.nc", folder / "fig4.png"]
    outputs = outputs if args.refit else [network_file, *outputs]
    check_new_outputs(outputs, args.overwrite)  # the default folder holds the committed ones
    folder.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    if args.refit:
        try:
            net = results.load(network_file, kind="fig4.network")
        except ValueError as err:
            raise ConfigError(f"--refit: {err}") from None
    else:
        net = train(args.seeds, args.epochs, args.record_every, args.quick)
        results.save(net, network_file, overwrite=True)  # kept for --refit if the fit fails
    trained = time.perf_counter()
    chain = fit_and_simulate(net, args.chain_seeds)
    with all_or_nothing(outputs[-2:], folder):  # both files or neither (a full disk)
        results.save(chain, outputs[-2], overwrite=True)
        save_figure(plot(net, chain), outputs[-1])
    report(net, chain)
    print(f"networks {trained - start:.0f} s, fit and chains {time.perf_counter() - trained:.0f}"
          " s")




def build_parser() -> Parser:
    parser = Parser(description=__doc__.split("\n\n")[0])
    parser.add_argument("folder", nargs="?", default="figures/paper/fig4",
                        help="where the files go (created if missing; default figures/paper/fig4)")
    parser.add_argument("--seeds", type=integer(1), default=None,
                        help="networks per setting (default 10, the paper's count)")
    parser.add_argument("--chain-seeds", type=integer(1), default=32,
                        help="chains averaged per setting (default 32)")
    parser.add_argument("--epochs", type=integer(1), default=None,
                        help=f"training epochs of each network (default 100; --quick "
                             f"{QUICK['epochs']})")
    parser.add_argument("--record-every", type=integer(1), default=None,
                        help="epochs between recorded load curves (default 2)")
    parser.add_argument("--refit", action="store_true",
                        help="reuse FOLDER/fig4_network.nc; only fit, simulate and draw")
    parser.add_argument("--quick", action="store_true",
                        help="a tiny network on 8 x 8 digits (seconds; for tests)")
    overwrite_option(parser, "files (fig4_network.nc, fig4_chain.nc, fig4.png)")
    parser.set_defaults(func=main)
    return parser


def cli(argv=None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.refit:
        given = [f"--{name.replace('_', '-')}" for name in ("seeds", "epochs", "record_every",
                                                          "quick") if getattr(args, name)]
        if given:
            parser.error(f"--refit reuses FOLDER/fig4_network.nc: {', '.join(given)} would do "
                         "nothing (give --refit without them)")
    if Path(args.folder).exists() and not Path(args.folder).is_dir():
        parser.error(f"folder {args.folder!r} is a file, not a folder")
    defaults = {"seeds": 10, "epochs": QUICK["epochs"] if args.quick else 100, "record_every": 2}
    for name, value in defaults.items():
        if getattr(args, name) is None:
            parser.set_defaults(**{name: value})
            setattr(args, name, value)
    if args.record_every > args.epochs:
        parser.error(f"--record-every must be in 1..--epochs ({args.epochs}) "
                     f"(got {args.record_every})")
    return run_command(parser, argv)


if __name__ == "__main__":
    sys.exit(cli())
