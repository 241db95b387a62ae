"""scripts/reversal.py's leave-one-knob-out choice (pure; no chain is simulated)."""

import runpy
from pathlib import Path
from types import SimpleNamespace

import pytest

_PATH = Path(__file__).resolve().parents[2] / "scripts" / "reversal.py"
rev = SimpleNamespace(**runpy.run_path(str(_PATH), run_name="reversal"))

KNOBS = ["a", "b", "c", "d"]


def table(**rows):
    return {stem: dict(zip(KNOBS, values, strict=True)) for stem, values in rows.items()}


def test_the_highest_mean_kappa_on_the_diagrams_given_wins():
    kappa = table(x=[0.5, 0.5, 0.5, 0.0], y=[0.4, 0.4, 0.4, 0.9])
    opposite = table(x=[0, 0, 0, 0], y=[0, 0, 0, 0])
    assert rev.choose(kappa, opposite, ["a", "b", "c"]) == "x"
    assert rev.choose(kappa, opposite, ["b", "c", "d"]) == "y"  # 0.567 against 0.333


def test_a_tie_within_the_printed_precision_goes_to_fewer_opposite_columns():
    kappa = table(x=[0.50, 0.50, 0.50, 0.0], y=[0.495, 0.495, 0.495, 0.0])
    assert rev.choose(kappa, table(x=[1, 0, 0, 0], y=[0, 0, 0, 0]), KNOBS[:3]) == "y"
    assert rev.choose(kappa, table(x=[0, 0, 0, 0], y=[0, 0, 0, 0]), KNOBS[:3]) == "x"
    # beyond the tie, opposite columns do not count
    kappa = table(x=[0.50, 0.50, 0.50, 0.0], y=[0.48, 0.48, 0.48, 0.0])
    assert rev.choose(kappa, table(x=[9, 9, 9, 0], y=[0, 0, 0, 0]), KNOBS[:3]) == "x"


def test_each_knob_is_judged_by_a_choice_made_without_it():
    # y is best on d only: held out d, x (best elsewhere) is chosen and ranks 2nd on d
    kappa = table(x=[0.6, 0.6, 0.6, 0.3], y=[0.1, 0.1, 0.1, 0.8], z=[0.0, 0.0, 0.0, 0.0])
    opposite = {s: dict.fromkeys(KNOBS, 0) for s in kappa}
    rows = {r["held_out"]: r for r in rev.leave_one_knob_out(kappa, opposite)}
    assert [r["chosen"] for r in rows.values()] == ["x"] * 4
    assert rows["d"]["rank"] == 2 and rows["d"]["oracle"] == "y"
    assert rows["a"]["rank"] == 1 and rows["a"]["runner_up"] == "y"
    assert rows["a"]["train_kappa"] == pytest.approx(0.5)  # (0.6 + 0.6 + 0.3) / 3
