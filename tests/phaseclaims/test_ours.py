"""The ledger's rows on this project's own claims (phaseclaims.ours): each rule
reaches the verdict it states."""

import numpy as np
import xarray as xr

from phaseclaims import ours

VARIANTS = ["paper chain", "time map", "decaying noise", "friction profile"]


def _trajectories(diagram, cell, pooled=(3, 2, 4, 3), own=(3, 2, 4, 3)):
    return xr.Dataset({"delta_aic_diagram_scale": ("variant", [0.0, *diagram]),
                       "delta_aic_cell_scale": ("variant", [0.0, *cell]),
                       "explained_pooled": ("variant", list(pooled)),
                       "explained_own": ("variant", list(own)),
                       "trajectory_cells": ("variant", [66] * 4),
                       "own_to_pooled": (("a", "b"), np.full((2, 2), 0.5))},
                      coords={"variant": VARIANTS})


def test_the_aic_rule():
    lower = {k: _trajectories([-1, -2, -3], [-1, -2, -3]) for k in ours.KNOBS}
    assert ours._aic_row(lower).verdict == "holds"
    one_raised = dict(lower, lr=_trajectories([-1, -2, -3], [+33, -2, -3]))
    row = ours._aic_row(one_raised)
    assert row.verdict == "partly" and "time map on lr +33" in row.ours
    none_left = dict(lower, lr=_trajectories([-1, -2, -3], [+1, +1, +1]))
    assert ours._aic_row(none_left).verdict == "differs"


def test_the_seed_noise_rule():
    same = {k: _trajectories([-1] * 3, [-1] * 3) for k in ours.KNOBS}
    assert ours._seed_noise_row(same).verdict == "holds"
    fewer = dict(same, lr=_trajectories([-1] * 3, [-1] * 3, own=(1, 0, 1, 0)))
    assert ours._seed_noise_row(fewer).verdict == "partly"
    many = dict(same, lr=_trajectories([-1] * 3, [-1] * 3, own=(60, 3, 5, 2)))
    assert ours._seed_noise_row(many).verdict == "differs"


def test_the_share_rule():
    assert ours._share_verdict(7, 7) == "holds"
    assert ours._share_verdict(4, 7) == "partly"
    assert ours._share_verdict(3, 7) == "differs"
    assert ours._share_verdict(0, 0) == "differs"
