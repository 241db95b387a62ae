"""The family of chains against a network diagram (dnnphase.compare.comparator.family,
docs/fit.md)."""

import numpy as np
import pytest

from dnnphase.compare.comparator import family as fa
from dnnphase.compare.comparator import prediction as pr
from dnnphase.compare.comparator.fitting import fit_sweep_trajectory
from phasecore import results
from phasecore.checks import ConfigError
from springblock.fit.variants import FAMILY, variant_of


@pytest.fixture(scope="module")
def sweep():
    """The committed quick dropout sweep: 3 alpha x 4 dropout x 2 seeds, 11 frames."""
    return results.load("figures/dnn_dropout.nc")


def test_best_value_is_the_lowest_cost_ties_to_the_paper_chain():
    name = "friction profile"
    values = FAMILY[name][1]
    neutral = values.index(0.0)
    costs = np.linspace(2.0, 1.0, len(values))
    assert fa.best_value(name, costs) == values[-1]
    # equal to 9 significant digits: the value nearest the paper's chain, whatever the order
    costs = np.full(len(values), 1.0)
    costs[0] = costs[-1] = 1.0 - 1e-12
    costs[neutral] = 1.0 + 1e-12
    assert fa.best_value(name, costs) == 0.0
    costs[neutral] = 5.0
    assert fa.best_value(name, costs) in (-0.5, 0.5)
    assert fa.best_value(name, costs[::-1]) in (-0.5, 0.5)
    costs = np.full(len(values), np.nan)  # a failed candidate is never chosen
    costs[2] = 3.0
    assert fa.best_value(name, costs) == values[2]
    # a tolerance, not rounding: costs 2e-15 apart on either side of a rounding boundary tie
    costs = np.full(len(values), 2.0)
    costs[neutral], costs[neutral + 1] = 1.000000005000001, 1.000000004999999
    assert fa.best_value(name, costs) == 0.0
    costs[neutral], costs[neutral + 1] = costs[neutral + 1], costs[neutral]
    assert fa.best_value(name, costs) == 0.0
    costs[neutral] = 1.1  # a real difference wins
    assert fa.best_value(name, costs) == values[neutral + 1]
    with pytest.raises(ConfigError, match="^costs must be"):
        fa.best_value(name, [1.0, 2.0])
    with pytest.raises(ConfigError, match="^costs must be at least one finite"):
        fa.best_value(name, np.full(len(values), np.nan))
    with pytest.raises(ConfigError, match="^variant must be one of"):
        fa.best_value("nope", costs)


def test_trajectory_family_keeps_the_paper_chain_and_the_best_candidate(sweep):
    """The paper chain's row is fit_sweep_trajectory's; each variant's neutral candidate
    reproduces it exactly; the kept value has the lowest total chi2; a variant has one
    parameter more; the information criteria follow from their formula."""
    out = fa.trajectory_family(sweep, names=("friction profile",))
    assert list(out["variant"].values) == ["paper chain", "friction profile"]
    paper = fit_sweep_trajectory(sweep, profile_values=0)
    chi2, _, _ = fa._chi2_and_dof(paper)
    assert out["chi2"].sel(variant="paper chain") == pytest.approx(float(np.nansum(chi2)))
    row = out.sel(variant="friction profile")
    values = list(row["value"].values)
    totals = row["total_chi2"].values
    assert totals[values.index(0.0)] == float(out["chi2"].sel(variant="paper chain"))
    assert float(row["best_value"]) == values[int(np.argmin(totals))]
    assert float(row["chi2"]) == pytest.approx(np.min(totals))
    assert int(row["parameters"]) == int(out["parameters"].sel(variant="paper chain")) + 1
    n, total, k = float(row["points"]), float(row["chi2"]), float(row["parameters"])
    assert float(row["aic"]) == pytest.approx(n * np.log(total / n) + 2 * k)
    assert float(row["bic"]) == pytest.approx(n * np.log(total / n) + k * np.log(n))
    assert out.attrs["knob"] == "dropout" and "config" in out.attrs
    best = fit_sweep_trajectory(sweep, profile_values=0,
                                variant=variant_of("friction profile", float(row["best_value"])))
    np.testing.assert_array_equal(out["chi2_per_dof"].sel(variant="friction profile").values,
                                  best["chi2_per_dof"].values)


def test_held_out_family_against_the_prediction_module(sweep, monkeypatch):
    """The local mean's RMSE is held_out_prediction's (the same cells and folds); every chosen
    value is a candidate; the fold's choice sees only its training cells. (Three candidates,
    to keep it short.)"""
    monkeypatch.setitem(FAMILY, "friction profile", ("friction_gradient", (-1.0, 0.0, 1.0)))
    out = fa.held_out_family(sweep, names=("friction profile",), starts=2, points=13)
    reference = pr.held_out_prediction(sweep, starts=2, points=13)
    for split in pr.SPLITS:
        assert float(out["local_rmse"].sel(split=split)) == pytest.approx(
            reference.attrs[f"{split}_local_rmse"], rel=1e-12)
        assert np.isfinite(float(out["rmse"].sel(variant="friction profile", split=split)))
    assert set(np.unique(out["chosen"].values)) <= set(FAMILY["friction profile"][1])
    assert out.attrs["parameters"] == 3 + 4 + 1

    cells = pr.diagram_cells(sweep)
    curv, usable = cells["curvature"].values, cells["usable"].values
    train, held = pr.split_folds(usable, "checkerboard")[0]
    changed = np.where(held, curv + 10.0, curv)  # the held-out cells are not looked at
    a = fa._choose_and_fit("friction profile", curv, train, 2, 13)
    b = fa._choose_and_fit("friction profile", changed, train, 2, 13)
    assert a[0] == b[0]
    np.testing.assert_array_equal(a[1]["fitted"], b[1]["fitted"])
    np.testing.assert_array_equal(a[2], b[2])
    assert a[0] == fa.best_value("friction profile", a[2])


def test_the_choice_does_not_move_with_the_last_bits(sweep):
    """Another CPU changes the data in their last bits: the kept value of every variant, the
    explained cells and the total chi2 (to 1e-6) stay (the candidates' totals differ by far
    more than the fits' tolerance, 1e-8 of the cost)."""
    curves = sweep["load_curve_epochs"]
    steps = np.random.default_rng(3).integers(-3, 4, size=curves.shape)
    nudged = sweep.copy()
    nudged["load_curve_epochs"] = curves + steps * np.spacing(np.abs(curves.fillna(0.0)))
    a = fa.trajectory_family(sweep, names=("decaying noise",))
    b = fa.trajectory_family(nudged, names=("decaying noise",))
    np.testing.assert_array_equal(a["best_value"].values, b["best_value"].values)
    np.testing.assert_array_equal(a["explained"].values, b["explained"].values)
    np.testing.assert_allclose(a["total_chi2"].values, b["total_chi2"].values, rtol=1e-6)


def test_bad_names_are_named(sweep):
    for names in [("inertia",), ("time map", "time map"), "time map", (), None]:
        with pytest.raises(ConfigError, match="^names must be"):
            fa.trajectory_family(sweep, names=names)
    for names in [("friction profile", "friction profile"), (), "decaying noise"]:
        with pytest.raises(ConfigError, match="^names must be"):
            fa.held_out_family(sweep, names=names)
    with pytest.raises(ConfigError, match="^starts must be"):
        fa.held_out_family(sweep, starts=0)
    with pytest.raises(ConfigError, match="^points must be"):
        fa.held_out_family(sweep, points=3)
    with pytest.raises(ConfigError, match="^network must be a sweep with at least 2 seeds"):
        fa.trajectory_family(sweep.isel(seed=[0]), names=("friction profile",))
    with pytest.raises(ConfigError, match="^names must be"):
        fa.trajectory_family(sweep, names=("inertia",))
    with pytest.raises(ConfigError, match="^names must be"):
        fa.trajectory_family(sweep, names=("time map", "time map"))
    with pytest.raises(ConfigError, match="^names must be"):
        fa.held_out_family(sweep, names=("time map",))
    with pytest.raises(ConfigError, match="^network must be"):
        fa.trajectory_family(None)
