"""The ledger's infrastructure: only testable rows count, an interval that reaches two
verdicts is undecided, pooled rows, and the rules' history read from git (every row the
committed ledger marks "rule before data" checked against git by another route)."""

import json
import subprocess
from pathlib import Path

import numpy as np
import pytest
import xarray as xr

from phaseclaims import Claim
from phaseclaims.history import BEFORE, HOMES, History, _logic_of, definitions_of
from phaseclaims.rules import (
    has_linear_cell,
    interval_verdict,
    linear_best,
    linear_best_of_sweep,
    pooled,
    verdict_of,
)

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = HOMES[-1]


def _cells(curvature, accuracy, seeds=3):
    """(R, C) seed means -> (R, C, S) with a small, fixed spread between seeds."""
    spread = np.array([-1e-3, 0.0, 1e-3])[:seeds]
    return (np.repeat(np.asarray(curvature, float)[..., None], seeds, 2),
            np.asarray(accuracy, float)[..., None] + spread)


def test_a_row_without_a_linear_cell_is_left_out():
    """Row 0 convex throughout (its edge is its best cell: a hit that says nothing), row 1
    crosses 0 at its best cell, row 2 touches the band at its best cell."""
    curv, acc = _cells([[0.4, 0.6, 0.9, 1.2], [-0.5, 0.01, 0.5, 0.9], [-0.9, -0.6, -0.04, -0.3]],
                       [[0.95, 0.9, 0.8, 0.7], [0.8, 0.95, 0.85, 0.7], [0.7, 0.8, 0.95, 0.9]])
    np.testing.assert_array_equal(has_linear_cell(curv), [False, True, True])
    out = linear_best(curv, acc, np.arange(4.0), band=0.05, n_boot=0)
    assert (out["rows"], out["no_linear"], out["hits"]) == (2, 1, 2)
    assert np.isnan(out["per_row"][0])
    everything = linear_best(curv, acc, np.arange(4.0), n_boot=0)  # band None: every row
    assert (everything["rows"], everything["hits"]) == (3, 3)


def test_a_verdict_on_one_testable_row_says_so():
    """Width 25 at the reduced scale: five rows convex throughout, one within the band."""
    curv, acc = _cells([[0.4, 0.6, 0.9, 1.2]] * 5 + [[0.03, 0.2, 0.5, 0.9]],
                       [[0.95, 0.9, 0.8, 0.7]] * 6)
    out = linear_best(curv, acc, np.arange(4.0), band=0.05, n_boot=0)
    assert (out["rows"], out["no_linear"], out["hits"], out["verdict"]) == (1, 5, 1, "holds")
    assert "1 of 1 testable row (the verdict rests on this one row)" in out.ours()
    assert "the one the verdict rests on" in out.why()
    many = linear_best(curv, acc, np.arange(4.0), n_boot=0)  # six rows: no such words
    assert "rests on" not in many.ours() + many.why()


def test_no_testable_row_cannot_decide():
    curv, acc = _cells([[0.4, 0.6, 0.9, 1.2]], [[0.95, 0.9, 0.8, 0.7]])
    out = linear_best(curv, acc, np.arange(4.0), band=0.05, n_boot=0)
    assert out["rows"] == 0 and out["verdict"] == "cannot"
    assert "no linear cell" in out.why()


def test_an_interval_across_a_threshold_is_undecided():
    at = lambda k: verdict_of(k, 6, 1.0)  # noqa: E731
    assert interval_verdict(at, 5, 4, 6) == ("holds", "holds")
    assert interval_verdict(at, 5, 3, 6) == ("undecided", "holds")
    assert interval_verdict(at, 3, 1, 3) == ("undecided", "partly")
    assert interval_verdict(at, 5, np.nan, np.nan) == ("holds", "holds")


def test_pooled_sums_rows_hits_chance_and_resamples():
    curv, acc = _cells([[-0.5, 0.01, 0.5, 0.9]], [[0.8, 0.95, 0.85, 0.7]])
    one = linear_best(curv, acc, np.arange(4.0), band=0.05, n_boot=20)
    both = pooled([one, one])
    assert (both["rows"], both["hits"]) == (2, 2)
    assert both["chance"] == pytest.approx(2 * one["chance"])
    np.testing.assert_array_equal(both["boot"], 2 * one["boot"])


def test_fig1d_counts_two_of_its_four_has_linear_cell():
    """The issue's recomputation: Fig. 1d has four rows with a linear cell, two of them hits
    (its other two hits came from rows convex or concave throughout)."""
    with xr.open_dataset(ROOT / "figures/paper/dnn_batch_size.nc") as net:
        out = linear_best_of_sweep(net.load(), n_boot=0)
    assert (out["rows"], out["no_linear"], out["hits"]) == (4, 2, 2)
    assert out["by_definition"]["curvature"]["definition"] == "curvature"


def test_the_logic_of_a_rule_ignores_words_and_renames_not_thresholds():
    base = ("BAND = 0.05\n\ndef _helper(x):\n    return x\n\n"
            "def rule(x):\n    '''Doc.'''\n"
            "    return 'holds' if _helper(x) < BAND else f'no {x}'\n")
    reworded = base.replace("'''Doc.'''", "'''Other words.'''").replace("no {x}", "not {x}!")
    renamed = base.replace("_helper", "_kept")
    moved = base.replace("0.05", "0.1")
    branch = base.replace("<", "<=")
    logic = _logic_of(base)["rule"]
    assert _logic_of(reworded)["rule"] == logic and _logic_of(renamed)["rule"] == logic
    assert _logic_of(moved)["rule"] != logic and _logic_of(branch)["rule"] != logic


def test_a_definition_keeps_its_logic_when_the_package_moves_home():
    """A past version imports its helpers from the package's past home (at the top or inside
    a function): its logic is the one the same code has in the present home, so a rule is
    not dated by the move; an import from elsewhere still counts."""
    old, new = (f"from {home}.rules import verdict_of\n"
                f"from {home} import rules as r\n\n"
                "def rule(x):\n"
                f"    from {home}.monotone import trend\n"
                "    return verdict_of(trend(x), 6, r.BAND)\n"
                for home in (h.replace("/", ".") for h in HOMES))
    assert old != new and HOMES == ("dnnphase/compare/claims", "phaseclaims")
    assert _logic_of(old)["rule"] == _logic_of(new)["rule"]
    elsewhere = new.replace("phaseclaims.monotone", "phasecore.monotone")
    assert _logic_of(elsewhere)["rule"] != _logic_of(new)["rule"]
    assert HOMES[-1].replace("/", ".") == History.__module__.rpartition(".")[0]


def test_the_move_to_the_present_home_changed_no_logic():
    """Read from git: the commit that moved the package left every module's logic (its
    machinery, history itself, aside) as it was in the past home."""
    if not History(ROOT).available:
        pytest.skip("no full git history in this checkout")
    added = _git("log", "--diff-filter=A", "--format=%H", "--", f"{HOMES[-1]}/ledger.py").split()
    if not added:
        pytest.skip("the package has not moved in this checkout's history")
    moved = added[-1]
    before = _git("ls-tree", "--name-only", f"{moved}^:{HOMES[-2]}").split()
    assert "ledger.py" in before and "rules.py" in before
    for name in before:
        if name.endswith(".py") and name != "history.py":
            past = _logic_of(_git("show", f"{moved}^:{HOMES[-2]}/{name}"))
            assert past and past == _logic_of(_git("show", f"{moved}:{HOMES[-1]}/{name}")), name


def test_a_rule_is_its_builder_and_the_package_code_it_uses():
    uses = definitions_of("universality._diagram_row")
    assert uses[0] == "universality._diagram_row"
    assert {"rules._judge", "rules.verdict_of", "rules.has_linear_cell"} <= set(uses)
    assert not any(u.startswith(("ledger.", "history.")) for u in uses)


def test_a_row_names_the_function_that_built_it():
    assert Claim("x", "c", "cmd", "—", "o", "holds").rule == ""  # built outside the package
    assert Claim("x", "c", "cmd", "—", "o", "holds", rule="main_text.claims").rule == \
        "main_text.claims"


def test_without_git_the_history_says_it_cannot_be_read(tmp_path):
    history = History(tmp_path)
    assert not history.available and history.reason
    assert history.dating("main_text.claims", ("f.nc",)).state == "history unavailable"


def _git(*args: str) -> str:
    return subprocess.run(["git", "-C", str(ROOT), *args], capture_output=True, text=True,
                          check=True).stdout


def _package_logic_at(commit: str) -> set[str]:
    """Every definition's logic in the package's modules at ``commit``, in whichever of its
    homes it had then (read afresh)."""
    found = set()
    for home in HOMES:
        try:
            names = _git("ls-tree", "--name-only", f"{commit}:{home}").split()
        except subprocess.CalledProcessError:
            continue  # not its home at that commit
        for name in names:
            if name.endswith(".py"):
                found |= set(_logic_of(_git("show", f"{commit}:{home}/{name}")).values())
    return found


def test_every_row_marked_before_its_data_is_so():
    """By ancestry rather than time: the commit that added each file a "before" row reads
    was made on a tree that already held the logic of every definition of the row's rule
    (anywhere in the package) as it is now."""
    if not History(ROOT).available:
        pytest.skip("no full git history in this checkout: the record cannot be checked")
    rows = json.loads((ROOT / "docs" / "claims.json").read_text())
    marked = [r for r in rows if r["rule_before_data"] and r["files"]]
    current = {}
    for module in {d.split(".")[0] for r in marked for d in definitions_of(r["rule"])}:
        logic = _logic_of((ROOT / PACKAGE / f"{module}.py").read_text())
        current.update({f"{module}.{k}": v for k, v in logic.items()})
    cache = {}
    for row in marked:
        for file in row["files"]:
            added = _git("log", "--diff-filter=A", "--format=%H", "--", file).split()
            assert added, f"{row['id']}: {file} was never committed"
            parent = added[-1] + "^"
            if parent not in cache:
                cache[parent] = _package_logic_at(parent)
            missing = [d for d in definitions_of(row["rule"]) if current[d] not in cache[parent]]
            assert not missing, (f"{row['id']} is marked {BEFORE!r} but {file} was added on "
                                 f"a tree without the current {missing}")


def test_every_row_of_the_committed_ledger_has_an_id_of_its_own():
    """docs/claims.json is read by id: no two rows share one (``--check`` holds the file to
    what the rules write)."""
    ids = [row["id"] for row in json.loads((ROOT / "docs" / "claims.json").read_text())]
    assert sorted({i for i in ids if ids.count(i) > 1}) == []
