"""The last bad inputs (issue 39 §4): a silent wrong answer, the training entry points, the
chain's Python entry points, FIFOs, full disks and options that do nothing. Each a one-line
error naming the parameter (or a correct result with a warning), and nothing left behind."""

import re

import numpy as np
import pytest

import dnnphase
from dnnphase.cli import main as dnnphase_main
from phasecore import results

SWEEP = dict(dataset="gmm", n_train=40, depth=2, width=8, epochs=4, record_every=1,
             knob="dropout", values=[0.0, 0.2], alphas=[0.0, 1.0], measures=["trace_ratio"],
             scheduler="serial", quiet=True)


def one_line_error(capsys, prog: str) -> str:
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"{prog}: error:") and "\n" not in err, err
    return err


def listing(folder):
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*"))


@pytest.fixture(scope="module")
def one_seed(tmp_path_factory):
    """A sweep with one seed and its curves recorded over training."""
    path = tmp_path_factory.mktemp("one_seed") / "one.nc"
    dnnphase.sweep(seeds=1, output=path, **SWEEP)
    return path


# --- 1. a silent wrong answer -------------------------------------------------------------


def test_a_trajectory_fit_of_one_seed_has_no_seed_noise_to_judge_by(one_seed, tmp_path,
                                                                     capsys):
    """One seed reported "4 of 4 cells explained to within their seed noise" (the same sweep
    with two seeds: none): unweighted chi2 is in the curves' own units."""
    out = tmp_path / "fit.nc"
    assert dnnphase_main(["fit", str(one_seed), "--trajectory", "-o", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "seed noise: n/a (one seed" in printed and "cells explained to within" in printed
    assert " of 4 cells" not in printed
    fit = results.load(out)
    assert fit.attrs["weighted_by_seed_variance"] == 0
    assert fit["acceptable"].attrs["long_name"].startswith("n/a: no seed noise")


def test_a_trajectory_fit_of_flat_curves_is_nan_not_acceptable():
    """Curves with no drop were "acceptable" (chi2 0) with made-up parameters."""
    from springblock import fit, theory

    epochs = np.arange(0, 51, 10.0)
    chain = theory.load_curve(theory.predict_positions(7, 0.01, 0.02, 0.005, 50.0,
                                                       times=epochs, time_scale=2.0))
    curves = np.stack([chain, np.ones_like(chain), np.zeros_like(chain)])
    weights = np.full(curves.shape, 1e4)  # seed noise 1e-2
    with pytest.warns(UserWarning, match="2 of 3 cells are not fitted .* no drop"):
        res = fit.fit_trajectory(curves, epochs, weights=weights, max_iter=20)
    assert res.acceptable.tolist() == [True, False, False]
    assert np.isnan(res.estimate[1:]).all() and np.isfinite(res.estimate[0]).all()


@pytest.mark.parametrize("trajectory", [False, True])
def test_infinite_load_curves_are_left_out_of_a_fit_or_refused(one_seed, tmp_path, capsys,
                                                                trajectory):
    """Curves at inf were fitted to all-NaN parameters (and drawn) without a word."""
    ds = results.load(one_seed).load()
    one = ds.copy(deep=True)
    one["load_curve"][0, 0, 0, 0, 2] = np.inf
    one["load_curve_epochs"][0, 0, 0, :, 1] = -np.inf
    results.save(one, tmp_path / "one_inf.nc")
    every = ds.copy(deep=True)
    every["load_curve"][...] = np.inf
    every["load_curve_epochs"][...] = np.inf
    results.save(every, tmp_path / "inf.nc")
    flag = ["--trajectory"] if trajectory else []
    assert dnnphase_main(["fit", str(tmp_path / "one_inf.nc"), *flag, "-o",
                          str(tmp_path / "f.nc")]) == 0
    assert re.search(r"warning: \d+ .*load curves are -inf or \+inf.*1 of 4 cells",
                     capsys.readouterr().err)
    fit = results.load(tmp_path / "f.nc")
    assert np.isnan(fit["mu_right"].values[0, 0]) and np.isfinite(fit["mu_right"].values[1])\
        .all()
    capsys.readouterr()
    assert dnnphase_main(["fit", str(tmp_path / "inf.nc"), *flag, "-o",
                          str(tmp_path / "g.nc"), "--figure", str(tmp_path / "g.png")]) == 2
    assert "a finite" in one_line_error(capsys, "dnnphase")
    assert not (tmp_path / "g.nc").exists() and not (tmp_path / "g.png").exists()
