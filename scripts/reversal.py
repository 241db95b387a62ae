"""Does a parameter choice remove the chain's high-noise reversal? (docs/reversal.md)

    python scripts/reversal.py figures/     # ~70 s on 2 cores; reuses files already there

On the committed chain diagram (``figures/spring_phase.nc``: mu<- = 2 mu->, T = 1000,
Gaussian noise) more friction makes the chain *more convex* at noise s >= 0.016, the
opposite of the networks, where more nonlinearity always makes the curve more concave
(:func:`dnnphase.compare.comparator.report.disagreement`). With Gaussian noise the chain relaxes
towards the equal-force state F* = (mu-> - mu<-)/2 (:func:`springblock.theory.
stationary_force`); with mu<- = r mu-> that is -(r - 1) mu->/2, more convex as friction
grows whenever r > 1 — the reversal. Candidates, each on the default grid (6 friction
values x 8 noise levels in [0, 0.028], 10 seeds, L = 7, k = 1, step 0.01):

* the ratio r = mu<- / mu-> at 2 (committed), 1.5 and 1;
* mu<- fixed and mu-> the friction axis (a free ratio, from infinity down to 2 or 1);
* mu<- the friction axis at fixed mu-> (the other way round);
* noise bounded at c = 1 and 0.5 standard deviations (``truncation``), r = 2;
* shorter horizons T = 100 and 30, r = 2.

For each, the mean-field prediction (:func:`springblock.theory.predict_positions`, fast)
and the simulated diagram (:func:`springblock.phase_diagram`, written to
``<folder>/reversal/<stem>.nc``), and the comparison with the four paper network
diagrams (``<folder>/paper/dnn_<knob>.nc``): Cohen's kappa, label agreement and the
network columns whose sign of curvature's change along nonlinearity is opposite to the
chain's (:func:`dnnphase.compare.compare`). Prints a markdown table and draws
``<folder>/reversal/reversal.png`` (every candidate's curvature map, its reversed
columns outlined) and ``<folder>/reversal/phase_dropout_<best>.png`` (the fix beside
the dropout networks). Then the leave-one-knob-out table: for each knob, the candidate
chosen on the other three diagrams (:func:`choose`), judged on the held-out one.
"""

from __future__ import annotations

import math
import sys
import warnings
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

import springblock as sb
from dnnphase.compare import compare
from dnnphase.compare.comparator.report import line_signs
from phasecore.commandline import Parser, overwrite_option
from phasecore.commandline import run as run_command
from phasecore.loadcurve import PHASE_TOLERANCE, curvature_scaled, phase_label
from phasecore.results import load
from springblock.theory import load_curve, predict_positions

MU_RIGHT = np.linspace(0.0, 0.03, 6)
NOISE = np.linspace(0.0, 0.028, 8)
SEEDS = 10
KNOBS = ("dropout", "lr", "batch_size", "label_noise")
#: The candidate drawn beside the dropout networks (the fix, if the table bears it out).
BEST = "mu_left_0.06"


@dataclass(frozen=True)
class Candidate:
    """One chain diagram: its file stem, words, and what differs from the default.

    ``ratio``: mu<- = ratio * mu-> (None: ``mu_left`` fixed); ``friction``: the row axis
    (``mu_right``, or ``mu_left`` at ``mu_right`` fixed); ``params``: other chain
    parameters (``steps``, ``noise_dist``, ``truncation``).
    """

    stem: str
    words: str
    ratio: float | None = 2.0
    mu_left: float | None = None
    mu_right: float | None = None
    friction: str = "mu_right"
    params: dict = field(default_factory=dict)

    @property
    def rows(self) -> np.ndarray:
        """Friction values (R,): mu-> on the default grid, or mu<- over twice its range."""
        return MU_RIGHT if self.friction == "mu_right" else 2 * MU_RIGHT

    @property
    def horizon(self) -> float:
        return self.params.get("steps", 100_000) * 0.01

    @property
    def truncation(self) -> float:
        return self.params.get("truncation", math.inf)


CANDIDATES = (
    Candidate("ratio_2", "mu<- = 2 mu-> (committed)"),
    Candidate("ratio_1.5", "mu<- = 1.5 mu->", ratio=1.5),
    Candidate("ratio_1", "mu<- = mu->", ratio=1.0),
    Candidate("mu_left_0.06", "mu<- = 0.06 fixed, friction mu->", ratio=None, mu_left=0.06),
    Candidate("mu_left_0.03", "mu<- = 0.03 fixed, friction mu->", ratio=None, mu_left=0.03),
    Candidate("friction_mu_left", "friction mu<- 0 .. 0.06, mu-> = 0.015 fixed", ratio=None,
              mu_right=0.015, friction="mu_left"),
    Candidate("bounded_1", "noise bounded at 1 SD, mu<- = 2 mu->",
              params={"noise_dist": "truncated", "truncation": 1.0}),
    Candidate("bounded_0.5", "noise bounded at 0.5 SD, mu<- = 2 mu->",
              params={"noise_dist": "truncated", "truncation": 0.5}),
    Candidate("T_100", "T = 100, mu<- = 2 mu->", params={"steps": 10_000}),
    Candidate("T_30", "T = 30, mu<- = 2 mu->", params={"steps": 3_000}),
)


# --- the two chain diagrams of a candidate --------------------------------------------


def frictions(c: Candidate) -> tuple[np.ndarray, np.ndarray]:
    """(mu->, mu<-) per cell, each (R, C) on the candidate's grid (friction rows, noise
    columns)."""
    rows = np.broadcast_to(c.rows[:, None], (c.rows.size, NOISE.size))
    if c.friction == "mu_left":
        return np.full(rows.shape, c.mu_right), rows
    return rows, (c.ratio * rows if c.ratio is not None else np.full(rows.shape, c.mu_left))


def theory_curvature(c: Candidate) -> np.ndarray:
    """Mean-field scale-free curvature (R, C) of the candidate at its horizon."""
    mu_right, mu_left = frictions(c)
    noise = np.broadcast_to(NOISE[None, :], mu_right.shape)
    x = predict_positions(7, mu_right, mu_left, noise, c.horizon, truncation=c.truncation)
    return curvature_scaled(load_curve(x))


def simulate(c: Candidate, path: Path):
    """The simulated diagram (friction, noise, seed, layer), read back if ``path`` exists."""
    if path.exists():
        return load(path)
    kwargs = dict(c.params, seeds=SEEDS, scheduler="serial", output=path)
    if c.ratio is not None:
        kwargs["mu_left_ratio"] = c.ratio
    elif c.friction == "mu_left":
        kwargs["mu_right"] = c.mu_right
    else:
        kwargs["mu_left"] = c.mu_left
    return sb.phase_diagram((c.friction, c.rows), ("noise", NOISE), **kwargs)


# --- what the table says ----------------------------------------------------------------


def columns_by_sign(curvature: np.ndarray) -> dict[int, int]:
    """How many noise columns (of a (R, C) map, no seed noise) rise (+1), fall (-1) or
    neither (0) with friction (:func:`line_signs`)."""
    signs = line_signs(curvature, np.zeros(curvature.shape), axis=0)
    return {s: int(np.sum(signs == s)) for s in (1, -1, 0)}


def cells_by_label(curvature: np.ndarray) -> dict[int, int]:
    """Concave (-1), linear (0) and convex (+1) cells of a (R, C) map."""
    labels = phase_label(curvature, PHASE_TOLERANCE)
    return {s: int(np.sum(labels == s)) for s in (-1, 0, 1)}


def rising_noise(report) -> str:
    """The chain's noise levels whose column rises with friction: "0.016 .. 0.028"."""
    signs = report["spring_sign_along_nonlinearity"].values
    noise = report["chain_noise"].values[signs > 0]
    if not noise.size:
        return "none"
    return f"{noise[0]:g}" if noise.size == 1 else f"{noise[0]:g} .. {noise[-1]:g}"


def table_row(c: Candidate, chain, reports: dict) -> str:
    """One markdown row: reversed columns (theory / simulated), cells, and per knob
    kappa / agreement / network columns opposite the chain's."""
    mean = chain["curvature_scaled"].mean("seed").transpose(c.friction, "noise").values
    first = next(iter(reports.values()))
    signs = first["spring_sign_along_nonlinearity"].values  # with the seeds' noise
    sim = {s: int(np.sum(signs == s)) for s in (1, -1, 0)}
    theory = columns_by_sign(theory_curvature(c))
    cells = cells_by_label(mean)
    knobs = " | ".join(
        f"{r.attrs['label_kappa']:+.2f} / {r.attrs['label_agreement']:.2f} / "
        f"{r.attrs['columns_disagreeing']} of {r.sizes['noisiness']}" for r in reports.values())
    return (f"| {c.words} | {sim[1]} ({theory[1]}) | {rising_noise(first)} | {sim[-1]} "
            f"({theory[-1]}) | {cells[1]} / {cells[0]} / {cells[-1]} | {knobs} |")


TABLE_HEAD = (
    "| chain | columns rising with friction: simulated (theory) | at noise | columns falling "
    "(theory) | cells convex / linear / concave | "
    + " | ".join(f"{k}: kappa / agreement / network columns opposite" for k in KNOBS)
    + " |\n|" + "---|" * (5 + len(KNOBS)))


# --- a setting chosen without looking at the diagram it is judged on --------------------

#: Mean kappa values closer than this count as tied (the precision the tables print).
KAPPA_TIE = 0.01


def choose(kappa: dict[str, dict[str, float]], opposite: dict[str, dict[str, int]],
           knobs: list[str]) -> str:
    """The candidate chosen on ``knobs``' diagrams by the rule fixed before any held-out
    result was read: the highest mean kappa over them; candidates within KAPPA_TIE of the
    highest are tied, and a tie goes to the fewest network columns opposite the chain's,
    summed over the same diagrams, then to the candidate listed first."""
    stems = list(kappa)
    means = {c: float(np.mean([kappa[c][k] for k in knobs])) for c in stems}
    top = max(means.values())
    tied = [c for c in stems if means[c] >= top - KAPPA_TIE]
    return min(tied, key=lambda c: (sum(opposite[c][k] for k in knobs), stems.index(c)))


def leave_one_knob_out(kappa: dict[str, dict[str, float]],
                       opposite: dict[str, dict[str, int]]) -> list[dict]:
    """For each knob held out: the candidate :func:`choose` picks on the other diagrams,
    its mean kappa there, the next best there (by mean kappa), and its rank (1 = best
    kappa) among all candidates on the held-out diagram."""
    knobs = list(next(iter(kappa.values())))
    rows = []
    for held in knobs:
        rest = [k for k in knobs if k != held]
        chosen = choose(kappa, opposite, rest)
        on_held = sorted(kappa, key=lambda c: -kappa[c][held])
        others = {c: float(np.mean([kappa[c][k] for k in rest])) for c in kappa if c != chosen}
        runner = max(others, key=others.get)
        rows.append({"held_out": held, "chosen": chosen,
                     "train_kappa": float(np.mean([kappa[chosen][k] for k in rest])),
                     "runner_up": runner, "runner_up_kappa": others[runner],
                     "rank": 1 + sum(kappa[c][held] > kappa[chosen][held] for c in kappa),
                     "oracle": on_held[0]})
    return rows


def loo_table(kappa, opposite, sizes: dict[str, int]) -> str:
    """The leave-one-knob-out table: the chosen candidate on the held-out diagram, beside
    the post-hoc choice (BEST) and the committed default (ratio_2)."""
    words = {c.stem: c.words for c in CANDIDATES}

    def cell(stem, knob):
        return f"{kappa[stem][knob]:+.2f} / {opposite[stem][knob]} of {sizes[knob]}"

    lines = ["| held-out knob | chosen on the other three (their mean κ) | next best there | "
             "chosen: κ / network columns opposite, held out | its κ rank of 10 held out | "
             "post-hoc μ← = 0.06 | default μ← = 2 μ→ |", "|---|---|---|---|---|---|---|"]
    for r in leave_one_knob_out(kappa, opposite):
        k = r["held_out"]
        lines.append(f"| {k} | {words[r['chosen']]} ({r['train_kappa']:+.2f}) | "
                     f"{words[r['runner_up']]} ({r['runner_up_kappa']:+.2f}) | "
                     f"{cell(r['chosen'], k)} | {r['rank']} | {cell(BEST, k)} | "
                     f"{cell('ratio_2', k)} |")
    return "\n".join(lines)


# --- the figure -------------------------------------------------------------------------


def plot_overview(maps: list[tuple[Candidate, np.ndarray]]):
    """Every candidate's seed-mean curvature (friction up, noise right) on one colour
    scale, the cell values written in, the columns rising with friction outlined."""
    from matplotlib.colors import TwoSlopeNorm

    from phasecore.panels import MARK_COLOUR, plt

    n_cols = 5
    n_rows = -(-len(maps) // n_cols)
    fig, axes = plt.subplots(n_rows, n_cols, figsize=(3.6 * n_cols, 3.4 * n_rows + 0.6),
                             squeeze=False, layout="constrained")
    limit = max(float(np.nanmax(np.abs(m))) for _, m in maps)
    norm = TwoSlopeNorm(0.0, -limit, limit)
    for ax, (c, curv) in zip(axes.ravel(), maps, strict=False):
        image = ax.imshow(curv, origin="lower", cmap="RdBu_r", norm=norm, aspect="auto")
        for (i, j), v in np.ndenumerate(curv):
            ax.text(j, i, f"{v:+.2f}"[:5], ha="center", va="center", fontsize=5,
                    color="0.95" if abs(v) > 0.6 * limit else "0.1")
        signs = line_signs(curv, np.zeros(curv.shape), axis=0)
        for j in np.flatnonzero(signs > 0):
            ax.add_patch(plt.Rectangle((j - 0.45, -0.45), 0.9, curv.shape[0] - 0.1, fill=False,
                                       ec=MARK_COLOUR, lw=1.6, ls=(0, (3, 2))))
        ax.set_xticks(range(NOISE.size), [f"{v:g}" for v in NOISE], rotation=60, fontsize=6)
        ax.set_yticks(range(c.rows.size), [f"{v:g}" for v in c.rows], fontsize=6)
        ax.set_xlabel("noise s", fontsize=7)
        ax.set_ylabel(f"friction {'mu<-' if c.friction == 'mu_left' else 'mu->'}", fontsize=7)
        ax.set_title(c.words, fontsize=7)
    for ax in axes.ravel()[len(maps):]:
        ax.axis("off")
    fig.colorbar(image, ax=axes, fraction=0.02, label="mean scale-free curvature (10 seeds)")
    fig.get_layout_engine().set(w_pad=0.08, h_pad=0.1)
    fig.suptitle("Chain diagrams that might not reverse: seed-mean scale-free curvature; "
                 "dashed outline: the column gets more convex with friction (the reversal)",
                 fontsize=9)
    return fig


# --- the run ----------------------------------------------------------------------------


def run(folder: Path, overwrite: bool = False) -> str:
    """Compute (or read back) every candidate, compare, draw; returns the table. Figures
    there already are replaced only with ``overwrite`` (checked before any work)."""
    from dnnphase.compare.figures.comparison import plot_side_by_side
    from phasecore.panels import save_figure
    from phasecore.results import check_new_outputs

    out = folder / "reversal"
    check_new_outputs([out / "reversal.png", out / f"phase_dropout_{BEST}.png"], overwrite)
    networks = {k: load(folder / "paper" / f"dnn_{k}.nc") for k in KNOBS}  # (before out exists)
    out.mkdir(parents=True, exist_ok=True)
    rows, maps, kappa, opposite = [], [], {}, {}
    for c in CANDIDATES:
        chain = simulate(c, out / f"{c.stem}.nc")
        with warnings.catch_warnings():  # far-out network cells: expected, said elsewhere
            warnings.simplefilter("ignore")
            reports = {k: compare(chain, net) for k, net in networks.items()}
        rows.append(table_row(c, chain, reports))
        kappa[c.stem] = {k: float(r.attrs["label_kappa"]) for k, r in reports.items()}
        opposite[c.stem] = {k: int(r.attrs["columns_disagreeing"]) for k, r in reports.items()}
        sizes = {k: int(r.sizes["noisiness"]) for k, r in reports.items()}
        maps.append((c, chain["curvature_scaled"].mean("seed").transpose(c.friction,
                                                                         "noise").values))
        print(f"  {c.stem}: done", file=sys.stderr)
    save_figure(plot_overview(maps), out / "reversal.png")
    best = next(c for c in CANDIDATES if c.stem == BEST)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        save_figure(plot_side_by_side(load(out / f"{best.stem}.nc"), networks["dropout"]),
                    out / f"phase_dropout_{best.stem}.png")
    return "\n".join([TABLE_HEAD, *rows, "", loo_table(kappa, opposite, sizes)])


def main(argv=None) -> None:
    """The command line: bad input is one line and exit code 2, as every command's."""
    parser = Parser(description=__doc__.split("\n\n")[0])
    parser.add_argument("folder", type=Path, help="the figures folder (holds paper/dnn_*.nc)")
    overwrite_option(parser, "figures in FOLDER/reversal (its .nc diagrams are reused)")
    parser.set_defaults(func=lambda args: print(run(args.folder, args.overwrite)))
    sys.exit(run_command(parser, argv))


if __name__ == "__main__":
    main()
