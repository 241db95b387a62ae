"""phaseclaims.measures: the verdict rules reach the verdicts their docstring states,
and the rows read the committed statistics."""

from pathlib import Path

import numpy as np
import pytest

from phaseclaims import measures

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(("agreement", "kappa", "verdict"), [
    (0.8, 0.6, "holds"), (0.95, 0.9, "holds"), (0.79, 0.9, "partly"), (0.9, 0.59, "partly"),
    (0.6, 0.4, "partly"), (0.59, 0.9, "differs"), (0.9, 0.39, "differs"),
    (1.0, np.nan, "holds"), (0.7, np.nan, "partly"), (0.5, np.nan, "differs")])
def test_the_s10_rule(agreement, kappa, verdict):
    assert measures.s10_verdict(agreement, kappa) == verdict


@pytest.mark.parametrize(("diverging", "verdict"), [(3, "holds"), (2, "partly"),
                                                    (1, "partly"), (0, "differs")])
def test_the_s11_rule(diverging, verdict):
    assert measures.s11_verdict(diverging, 3) == verdict


@pytest.mark.parametrize(("rule_holds", "high", "verdict"), [
    (True, 2, "holds"), (True, 0, "holds"), (True, -1, "partly"), (False, 2, "partly"),
    (False, -1, "differs"), (True, np.nan, "partly")])
def test_the_generalisation_rule(rule_holds, high, verdict):
    assert measures.generalises_verdict(rule_holds, high) == verdict


@pytest.mark.parametrize(("agreement", "kappa", "constant", "verdict"), [
    ((0.9, 0.85, 0.95), (0.7, 0.65, 0.8), False, "holds"),
    ((0.79, 0.75, 0.83), (0.0, 0.0, 0.0), True, "undecided"),
    ((0.79, 0.75, 0.83), (0.0, 0.0, 0.0), False, "differs"),
    ((0.5, 0.45, 0.55), (0.2, 0.1, 0.3), False, "differs"),
    ((0.7, 0.65, 0.75), (0.5, 0.45, 0.55), False, "partly")])
def test_the_s10_rule_at_the_ends_of_its_intervals(agreement, kappa, constant, verdict):
    assert measures.s10_verdict_interval(agreement, kappa, constant) == verdict


def test_a_constant_measure_leaves_agreement_alone():
    assert measures.s10_verdict(0.79, 0.0) == "differs"
    assert measures.s10_verdict(0.79, 0.0, constant=True) == "partly"
    assert measures.s10_verdict(0.85, 0.0, constant=True) == "holds"


def test_a_rising_curve_has_no_phase():
    assert measures.curve_phase(np.array([-35.0, -7.5, -7.2]), 2.2) == "rising"
    assert measures.curve_phase(np.array([4.0, 1.0, -2.0]), 0.0) == "linear"
    assert measures.curve_phase(np.array([4.0, 1.0, -2.0]), 0.3) == "convex"


def test_the_rows_name_their_files_and_follow_the_rules():
    rows = measures.claims(ROOT)
    ids = [r.id for r in rows]
    assert ids[-2:] == ["Fig. S11 (c, d)", "Main text (He & Su)"]
    assert all(i.startswith("S10 (") for i in ids[:-2])
    for row in rows:
        assert all((ROOT / f).is_file() for f in row.files), row.id
