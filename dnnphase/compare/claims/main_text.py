"""The spring–block paper's main text: the four network diagrams (Fig. 1), the chain's
diagram (Fig. 3) and the noiseless state (Eq. 7), from the committed paper preset; and the
CNN's diagram ("the same behavior for ... CNNs").

Rules (a phase is the seed-mean scale-free curvature's label, band ±0.05):

* **Fig. 1a–d, corners**: the lazy corner (the most nonlinear row, the least noise) concave
  and the noisy corner (the linear row, the most noise) convex: **holds** both, **partly**
  one, **differs** neither.
* **Fig. 1a–d, shading**: the rule of :mod:`dnnphase.compare.claims.rules`.
* **CNN α × dropout** (``scripts/cnn_phase.py``, the supplement's CNN on Fig. 1c's
  training and dropout range; written before its file was computed): Fig. 1's two rules
  above, unchanged, on its file. The row is absent until the file is committed.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import xarray as xr

from dnnphase.compare.claims.ledger import Claim
from dnnphase.compare.claims.rules import linear_best_of_sweep, sweep_cells
from phasecore.loadcurve import PHASE_TOLERANCE

__all__ = ["ORDER", "SOURCE", "TITLE", "claims"]

TITLE = "Spring–block paper, main text"
ORDER = 10
SOURCE = "spring-block"

PAPER = "dnnphase reproduce --preset paper -o figures/paper/"
CHAIN = ("springblock phase --rows mu_right=0:0.03:6 --cols noise=0:0.028:8 "
         "--mu-left-ratio 2 --seeds 10 -o figures/spring_phase.nc")
#: The paper's panel of each knob's diagram.
PANELS = {"label_noise": "Fig. 1a", "lr": "Fig. 1b", "dropout": "Fig. 1c",
          "batch_size": "Fig. 1d"}


def _seed_interval(values: np.ndarray, n_boot: int = 400, seed: int = 0) -> tuple[float, float]:
    """95 % interval of the seed mean of ``values`` (S,) by resampling seeds."""
    values = values[np.isfinite(values)]
    if values.size < 2:
        return np.nan, np.nan
    rng = np.random.default_rng(seed)
    means = rng.choice(values, (n_boot, values.size)).mean(1)
    return tuple(float(q) for q in np.quantile(means, [0.025, 0.975]))


def _corner(value: float, low: float, high: float) -> str:
    return f"{value:+.2f} [{low:+.2f}, {high:+.2f}]"


def _corners(lazy: np.ndarray, noisy: np.ndarray) -> tuple[str, str, str]:
    """Ours, verdict and why for the lazy corner (most nonlinear, least noise) and the
    noisy one (least nonlinear, most noise), each its seeds' curvatures (S,)."""
    m_lazy, m_noisy = np.nanmean(lazy), np.nanmean(noisy)
    ours = (f"lazy corner {_corner(m_lazy, *_seed_interval(lazy))}, "
            f"noisy corner {_corner(m_noisy, *_seed_interval(noisy))}")
    concave, convex = m_lazy < -PHASE_TOLERANCE, m_noisy > PHASE_TOLERANCE
    verdict = "holds" if concave and convex else "partly" if concave or convex else "differs"
    why = "" if verdict == "holds" else (
        f"the lazy corner is {'concave' if concave else 'not concave'}, the noisy corner "
        f"{'convex' if convex else 'not convex'} (band ±{PHASE_TOLERANCE:g})")
    return ours, verdict, why


def _network_rows(root: Path) -> list[Claim]:
    rows = []
    for knob, panel in PANELS.items():
        name = f"figures/paper/dnn_{knob}.nc"
        with xr.open_dataset(root / name) as net:
            net = net.load()
        curvature, _, _ = sweep_cells(net)  # (R, C, S), alpha decreasing: linear row first
        ours, verdict, why = _corners(curvature[-1, 0], curvature[0, -1])
        words = knob.replace("_", " ")
        rows.append(Claim(
            panel, f"{words}: high nonlinearity + low noise is concave (lazy); low "
            f"nonlinearity + high noise is convex", PAPER,
            "concave top right, convex bottom left", ours, verdict, why, (name,)))
        best = linear_best_of_sweep(net)
        rows.append(Claim(
            f"{panel} (shading)", f"{words}: linear load curves correspond to the highest "
            f"test accuracy", PAPER, "—", best.ours(), best["verdict"],
            "" if best["verdict"] == "holds" else best.why(), (name,)))
    return rows


def _chain_rows(root: Path) -> list[Claim]:
    from springblock import theory

    name = "figures/spring_phase.nc"
    with xr.open_dataset(root / name) as chain:
        chain = chain.load()
    cells = chain["curvature_scaled"].sortby("mu_right", ascending=False).transpose(
        "mu_right", "noise", "seed").values  # (R, C, S), the highest friction first
    ours, verdict, why = _corners(cells[0, 0], cells[-1, -1])
    if why and float(chain["mu_right"].min()) == 0.0:
        why += ("; the least-friction row is μ→ = 0, where no friction leaves the chain "
                "linear at any noise (Eq. 8: F* = 0)")
    rows = [Claim("Fig. 3", "the chain's diagram: high friction + low noise is concave, low "
                  "friction + high noise convex (friction in the role of nonlinearity)", CHAIN,
                  "concave top right, convex bottom left", ours, verdict, why, (name,))]
    # Eq. 7: without noise every chain ends in the noiseless state, whatever its seed.
    quiet = chain.sel(noise=0.0)
    blocks = quiet.sizes["layer"] - 1
    worst = 0.0
    for mu in quiet["mu_right"].values:
        x = theory.noiseless_state(blocks, float(mu))
        expected = 1.0 - np.concatenate([[0.0], x])  # d_l = y - x_l, l = 0..L
        got = quiet["load_curve"].sel(mu_right=mu).values  # (seed, layer)
        worst = max(worst, float(np.max(np.abs(got - expected))))
    rows.append(Claim(
        "Eq. 7", "without noise every block stops where its force equals μ→: a concave load "
        "curve e_{ℓ+1} − e_ℓ = μ→/k", CHAIN, "exact", f"largest deviation {worst:.1e} over "
        f"{quiet.sizes['mu_right']} frictions × {quiet.sizes['seed']} seeds",
        "holds" if worst < 1e-2 else "differs",
        "" if worst < 1e-2 else "the noiseless chains end away from Eq. 7 (at T = 1000 a "
        "chain may still be moving)", (name,)))
    return rows


CNN = "figures/supplement/cnn_phase/cnn_phase.nc"
CNN_COMMAND = "python scripts/cnn_phase.py"


def _cnn_rows(root: Path) -> list[Claim]:
    """Fig. 1's rules on the CNN's α × dropout diagram, once its file exists."""
    if not (root / CNN).is_file():
        return []
    with xr.open_dataset(root / CNN) as net:
        net = net.load()
    curvature, _, _ = sweep_cells(net)
    ours, verdict, why = _corners(curvature[-1, 0], curvature[0, -1])
    scale = (f" ({net.sizes['alpha']} α × {net.sizes['dropout']} dropout × "
             f"{net.sizes['seed']} seeds)")
    rows = [Claim("Main text (CNNs)", "the supplement's CNN, α × dropout: high nonlinearity + "
                  "low noise is concave, low nonlinearity + high noise convex (the same "
                  "behaviour as the MLP's Fig. 1c)", CNN_COMMAND, "— (SM; no number)",
                  ours + scale, verdict, why, (CNN,))]
    best = linear_best_of_sweep(net)
    rows.append(Claim("Main text (CNNs, shading)", "the CNN's linear load curves correspond "
                      "to the highest test accuracy", CNN_COMMAND, "—", best.ours(),
                      best["verdict"], "" if best["verdict"] == "holds" else best.why(),
                      (CNN,)))
    return rows


def claims(root: Path) -> list[Claim]:
    return _network_rows(root) + _chain_rows(root) + _cnn_rows(root)
