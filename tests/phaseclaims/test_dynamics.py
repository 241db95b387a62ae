"""phaseclaims.dynamics: its rules reach the verdicts they state, on hand-made
files shaped as the scripts write them."""

import numpy as np
import pytest
import xarray as xr

from phaseclaims import dynamics


def _diagram(path, row, rows, noise, curvature, theory=None):
    """A phase diagram file: curvature_scaled (row, noise, seed) of two identical seeds."""
    cells = np.repeat(np.asarray(curvature, dtype=float)[..., None], 2, axis=2)
    ds = xr.Dataset({"curvature_scaled": ((row, "noise", "seed"), cells),
                     "horizon": ((row, "noise", "seed"), np.full(cells.shape, 1000.0))},
                    coords={row: rows, "noise": noise, "seed": [0, 1]})
    if theory is not None:
        ds["theory_curvature_scaled"] = ((row, "noise"), np.asarray(theory, dtype=float))
    path.parent.mkdir(parents=True, exist_ok=True)
    ds.to_netcdf(path)


@pytest.mark.parametrize("curvature, verdict", [
    ([[-0.5, 0.2], [-0.6, 0.3]], "holds"),
    ([[-0.5, 0.2], [-0.6, -0.1]], "partly"),   # the second row stays concave
    ([[-0.5, 0.0], [0.0, 0.3]], "differs"),    # neither goes concave -> convex
])
def test_a_variant_holds_when_every_row_with_friction_goes_concave_to_convex(
        tmp_path, curvature, verdict):
    frictionless = [[0.0, 0.0]]  # the mu-> = 0 row is not judged
    _diagram(tmp_path / "figures/supplement/chains/s13.nc", "mu_right", [0.0, 0.01, 0.02],
             [0.0, 0.02], frictionless + curvature)
    row = dynamics._variant_row(tmp_path, "s13", "Fig. S13", "second-order chain")
    assert row.verdict == verdict
    assert row.ours.startswith(f"{ {'holds': 2, 'partly': 1, 'differs': 0}[verdict]} of 2")


def test_fig5b_wants_linear_without_noise_or_friction_and_convex_with_both(tmp_path):
    good = [[0.0, 0.01, -0.02], [0.0, 0.2, 0.3], [0.01, 0.3, 0.4]]  # mu<- 0, .01, .02
    name = tmp_path / "figures/supplement/chains/fig5b.nc"
    _diagram(name, "mu_left", [0.0, 0.01, 0.02], [0.0, 0.01, 0.02], good, theory=good)
    assert dynamics._fig5b_row(tmp_path).verdict == "holds"
    bad = np.array(good)
    bad[1, 1] = 0.01  # one noisy cell with friction is linear: 8 of 9
    _diagram(name, "mu_left", [0.0, 0.01, 0.02], [0.0, 0.01, 0.02], bad, theory=good)
    row = dynamics._fig5b_row(tmp_path)
    assert row.verdict == "partly" and "8 of 9" in row.ours
    _diagram(name, "mu_left", [0.0, 0.01, 0.02], [0.0, 0.01, 0.02], -np.abs(bad) - 0.1,
             theory=good)
    assert dynamics._fig5b_row(tmp_path).verdict == "differs"


def test_the_regression_row_reads_the_lazy_and_the_noisy_corner(tmp_path):
    def write(lazy, noisy):
        cells = np.zeros((2, 2, 2))
        cells[0, 0], cells[1, 1] = lazy, noisy  # alpha 0 no dropout; alpha 1 most dropout
        ds = xr.Dataset({"curvature_scaled": (("alpha", "dropout", "seed"), cells),
                         "load_curve": (("alpha", "dropout", "seed", "layer"),
                                        np.broadcast_to([1.0, 0.5, 0.2], (2, 2, 2, 3)))},
                        coords={"alpha": [0.0, 1.0], "dropout": [0.0, 0.3]})
        (tmp_path / "figures/supplement").mkdir(parents=True, exist_ok=True)
        ds.to_netcdf(tmp_path / "figures/supplement/regression.nc")
        return dynamics._regression_row(tmp_path).verdict

    assert write(-0.5, 0.4) == "holds"
    assert write(-0.5, 0.0) == "partly"
    assert write(0.5, -0.4) == "differs"
    assert "flat" not in dynamics._regression_row(tmp_path).why


def _fig4_files(root, ends, chi2, chain_ends):
    """Fig. 4's two files: each setting's curves d(u) = 1 - u + a (u^2 - u) (scale-free
    curvature a) at its last epoch, a linear curve before; the chain's χ²/dof (the fit's
    acceptable value 2) and end."""
    u = np.linspace(0, 1, 8)
    curves = np.empty((3, 2, 3, 8))
    for i, a in enumerate(ends):
        curves[i, :, :-1] = 1 - u
        curves[i, :, -1] = 1 - u + a * (u**2 - u)
    folder = root / "figures/paper/fig4"
    folder.mkdir(parents=True, exist_ok=True)
    setting = ["b", "c", "d"]
    xr.Dataset({"load_curve_epochs": (("setting", "seed", "epoch", "layer"), curves),
                "test_accuracy": (("setting", "seed"), np.full((3, 2), 0.9))},
               coords={"setting": setting, "epoch": [0, 50, 100]}).to_netcdf(
        folder / "fig4_network.nc")
    one = ("setting", [0.01, 0.02, 0.01])
    xr.Dataset({"chain_positions": (("setting", "epoch", "layer"), 1 - curves.mean(1)),
                "chain_residual": ("setting", [0.05] * 3), "chi2_per_dof": ("setting", chi2),
                "chain_curvature": ("setting", chain_ends), "mu_right": one, "mu_left": one,
                "noise": one, "horizon": ("setting", [100.0] * 3)},
               coords={"setting": setting},
               attrs={"config": '{"acceptable_chi2": 2.0}'}).to_netcdf(folder / "fig4_chain.nc")


def test_fig4_rows_judge_each_panel_and_the_chain(tmp_path):
    _fig4_files(tmp_path, [-0.3, 0.0, 0.3], [1.0, 2.0, 1.5], [-0.3, 0.0, 0.3])
    rows = {r.id: r for r in dynamics._fig4_rows(tmp_path)}
    assert [rows[f"Fig. 4{s}"].verdict for s in "bcd"] == ["holds"] * 3
    assert rows["Fig. 4 (right)"].verdict == "holds"
    assert "linear → concave" in rows["Fig. 4b"].ours  # the path over epochs
    assert "over time linear → concave" in rows["Fig. 4 (right)"].ours
    # (c) ends convex, one phase off but in order; the chain's χ²/dof on (c) is too large
    _fig4_files(tmp_path, [-0.3, 0.2, 0.3], [1.0, 31.0, 1.0], [-0.3, 0.2, 0.3])
    rows = {r.id: r for r in dynamics._fig4_rows(tmp_path)}
    assert rows["Fig. 4c"].verdict == "partly"
    assert rows["Fig. 4 (right)"].verdict == "partly" and "for c" in rows["Fig. 4 (right)"].why
    # (b) ends convex: two phases off
    _fig4_files(tmp_path, [0.4, 0.0, 0.3], [142.0, 31.0, 57.0], [0.0] * 3)
    rows = {r.id: r for r in dynamics._fig4_rows(tmp_path)}
    assert rows["Fig. 4b"].verdict == "differs" and rows["Fig. 4 (right)"].verdict == "differs"
