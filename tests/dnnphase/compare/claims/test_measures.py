"""dnnphase.compare.claims.measures: the verdict rules reach the verdicts their docstring states,
and the rows read the committed statistics."""

from pathlib import Path

import numpy as np
import pytest

from dnnphase.compare.claims import measures

ROOT = Path(__file__).resolve().parents[4]


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


@pytest.mark.parametrize(("delta", "low", "high", "verdict"), [
    (3, 1, 5, "holds"), (3, 0, 5, "partly"), (0, -2, 2, "partly"), (-3, -5, -1, "differs"),
    (-3, -5, 0, "partly"), (2, np.nan, np.nan, "partly")])
def test_the_generalisation_rule(delta, low, high, verdict):
    assert measures.generalises_verdict(delta, low, high) == verdict


def test_the_rows_name_their_files_and_follow_the_rules():
    rows = measures.claims(ROOT)
    ids = [r.id for r in rows]
    assert ids[-2:] == ["Fig. S11 (c, d)", "Main text (He & Su)"]
    assert all(i.startswith("S10 (") for i in ids[:-2])
    for row in rows:
        assert all((ROOT / f).is_file() for f in row.files), row.id
