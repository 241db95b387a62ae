"""Do the committed fits come out again when the arithmetic's last bits change?

    python scripts/last_bits.py [figures/paper]

Another CPU (vector width, libm, BLAS kernel) changes results in their last bits; a fit that
answers the same question on another machine must not amplify that. For every committed sweep
``dnn_<knob>.nc`` of the folder, every seed's load curve and curvature is nudged by up to
ULPS units in the last place (a fixed random pattern, NUDGES of them) and

* the held-out prediction (:func:`dnnphase.compare.held_out_prediction`) is recomputed and its
  scores compared with the committed ``prediction_<knob>.nc``;
* the final-curve fit (:func:`dnnphase.compare.fit_sweep_final`) and the trajectory fit from
  rest (:func:`dnnphase.compare.fit_sweep_trajectory`) are recomputed and compared with the
  same fits of the un-nudged sweep.

Prints, per knob, the largest relative change of each quantity (over cells, or over the
scores of a Dataset) and the number of cells that move by more than 1e-3. About 2 min of CPU.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

from dnnphase.compare.comparator.fitting import fit_sweep_final, fit_sweep_trajectory
from dnnphase.compare.comparator.prediction import held_out_prediction
from phasecore import results
from phasecore.checks import ConfigError
from phasecore.commandline import folder_command

KNOB_ORDER = ("dropout", "lr", "batch_size", "label_noise")
#: Units in the last place of each nudge, and how many nudges (RNG seeds 1..NUDGES).
ULPS = 3
NUDGES = 2
#: A relative change beyond this counts as a moved cell (3 significant digits).
MOVED = 1e-3


def nudge(values: np.ndarray, seed: int, ulps: int = ULPS) -> np.ndarray:
    """``values`` with every finite entry moved by a random whole number of units in the last
    place in [-ulps, ulps] (same shape)."""
    steps = np.random.default_rng(seed).integers(-ulps, ulps + 1, size=values.shape)
    return values + steps * np.spacing(np.abs(np.nan_to_num(values)))


def nudged_sweep(sweep, seed: int):
    """A copy of ``sweep`` with its curvatures and load curves nudged (:func:`nudge`)."""
    out = sweep.copy(deep=True)
    for name in ("curvature_scaled", "load_curve", "load_curve_epochs"):
        if name in out:
            out[name].values[...] = nudge(out[name].values, seed)
    return out


def relative_change(a, b) -> tuple[float, int]:
    """(largest |a - b| / max(|a|, 1e-3), count above MOVED) over the finite entries."""
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    with np.errstate(invalid="ignore"):
        rel = np.abs(a - b) / np.maximum(np.abs(a), 1e-3)
    rel = rel[np.isfinite(rel)]
    return (float(rel.max()) if rel.size else 0.0), int((rel > MOVED).sum())


def score_change(committed, again) -> tuple[float, str]:
    """The largest relative change of a float attribute (a score) and its name."""
    worst, name = 0.0, ""
    for key, value in committed.attrs.items():
        if isinstance(value, float) and np.isfinite(value):
            change = relative_change(value, again.attrs[key])[0]
            if change > worst:
                worst, name = change, key
    return worst, name


def main(folder: str = "figures/paper") -> None:
    paths = {k: p for k in KNOB_ORDER if (p := Path(folder) / f"dnn_{k}.nc").exists()}
    if not paths:
        raise ConfigError(f"no dnn_<knob>.nc in {folder}")
    print(f"nudges of up to {ULPS} ulp (seeds 1..{NUDGES}); largest relative change "
          f"(cells moved by more than {MOVED:g})")
    for knob, path in paths.items():
        sweep = results.load(path, kind="dnnphase.sweep")
        committed = Path(folder) / f"prediction_{knob}.nc"
        base_final = fit_sweep_final(sweep)
        base_traj = fit_sweep_trajectory(sweep) if "load_curve_epochs" in sweep else None
        for seed in range(1, NUDGES + 1):
            nudged = nudged_sweep(sweep, seed)
            line = [f"{knob} nudge {seed}:"]
            if committed.exists():
                worst, name = score_change(results.load(committed), held_out_prediction(nudged))
                line.append(f"prediction scores {worst:.1e} ({name or '-'})")
            final = fit_sweep_final(nudged)
            line.append("final fit " + ", ".join(
                f"{v} {r:.1e} ({n})" for v in ("effective_force", "mu_right", "noise")
                for r, n in [relative_change(base_final[v].values, final[v].values)]))
            if base_traj is not None:
                traj = fit_sweep_trajectory(nudged)
                line.append("trajectory fit " + ", ".join(
                    f"{v} {r:.1e} ({n})" for v in ("chi2_per_dof", "mu_right", "noise")
                    for r, n in [relative_change(base_traj[v].values, traj[v].values)]))
                line.append("explained cells {} -> {}, median chi2/dof {:.4g} -> {:.4g}".format(
                    *(int(f["acceptable"].values.sum()) for f in (base_traj, traj)),
                    *(float(np.nanmedian(f["chi2_per_dof"].values)) for f in (base_traj, traj))))
            print(line[0], "; ".join(line[1:]), flush=True)


def cli(argv=None) -> None:
    """The command line: bad input is one line and exit code 2, as every command's."""
    sys.exit(folder_command(__doc__.split("\n\n")[0], main, argv))


if __name__ == "__main__":
    cli()
