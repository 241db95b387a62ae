"""The new rows' rules on hand-made files shaped as the committed ones: each reaches the
verdicts it states (main text: the linear network, the chain against the networks; SM S3
without BatchNorm; SM VI.2; §3's least energy)."""

import json

import numpy as np
import pytest
import xarray as xr

from phaseclaims import chain_claims, main_text, supplement


def _dropout_sweep(path, curvature, accuracy=None, norm="batchnorm", seeds=3, spread=0.01):
    """A dropout diagram (alpha, dropout, seed, measure): curvature (A, D) + a small seed
    spread, alpha 0 ... 1 and dropout 0 ... 0.3."""
    curvature = np.asarray(curvature, dtype=float)
    a, d = curvature.shape
    cells = curvature[..., None] + spread * np.linspace(-1, 1, seeds)  # seed mean exact
    if accuracy is None:
        accuracy = 0.9 - 0.1 * np.abs(curvature)
    rng = np.random.default_rng(0)
    acc = np.asarray(accuracy)[..., None] + 0.001 * rng.standard_normal((a, d, seeds))
    ds = xr.Dataset(
        {"curvature_scaled": (("alpha", "dropout", "seed", "measure"), cells[..., None]),
         "test_accuracy": (("alpha", "dropout", "seed"), acc),
         "epochs_run": (("alpha", "dropout", "seed"), np.full(acc.shape, 100))},
        coords={"alpha": np.linspace(0, 1, a), "dropout": np.linspace(0, 0.3, d),
                "seed": np.arange(seeds), "measure": ["trace_ratio"]},
        attrs={"knob": "dropout", "config": json.dumps({"epochs": 100, "norm": norm})})
    path.parent.mkdir(parents=True, exist_ok=True)
    ds.to_netcdf(path)


@pytest.mark.parametrize(("linear_cell", "spread", "verdict"), [
    (0.0, 0.01, "holds"), (0.98, 0.01, "differs"), (0.05, 0.1, "undecided")])
def test_the_linear_network_row(tmp_path, linear_cell, spread, verdict):
    curvature = np.array([[-0.9, 0.5], [-0.4, 0.8], [linear_cell, 1.0]])  # alpha 0, 0.5, 1
    _dropout_sweep(tmp_path / "figures/paper/dnn_dropout.nc", curvature, seeds=10,
                   spread=spread)
    assert main_text._linear_network_row(tmp_path).verdict == verdict


def _reports(root, agreement, kappa, chain_rho, explained):
    for knob in ("label_noise", "lr", "dropout", "batch_size"):
        folder = root / "figures/paper"
        folder.mkdir(parents=True, exist_ok=True)
        xr.Dataset(attrs={"label_agreement": agreement, "label_kappa": kappa,
                          "spring_mean_rho_along_noise": chain_rho[0],
                          "spring_mean_rho_along_nonlinearity": chain_rho[1],
                          "network_mean_rho_along_noise": 0.9,
                          "network_mean_rho_along_nonlinearity": -0.9}).to_netcdf(
            folder / f"report_{knob}.nc")
        xr.Dataset({"explained_pooled": ("variant", [explained]),
                    "trajectory_cells": ("variant", [60])}).to_netcdf(
            folder / f"scrutiny_{knob}.nc")


@pytest.mark.parametrize(("agreement", "kappa", "rho", "explained", "verdict"), [
    (0.9, 0.7, (0.8, -0.8), 40, "holds"),
    (0.9, 0.7, (0.5, 0.2), 3, "partly"),
    (0.7, 0.45, (0.5, 0.16), 3, "differs")])
def test_the_chain_against_the_networks(tmp_path, agreement, kappa, rho, explained, verdict):
    _reports(tmp_path, agreement, kappa, rho, explained)
    assert main_text._reproduces_row(tmp_path).verdict == verdict


@pytest.mark.parametrize(("scale", "verdicts"), [
    ("same", ("holds", "undecided")),        # the same diagram, the same spread
    ("shifted", ("differs", "undecided")),   # every cell convex: no concave corner
    ("half", ("partly", "undecided"))])      # corners right, labels apart in half the cells
def test_s3_without_batchnorm(tmp_path, scale, verdicts):
    base = np.array([[-0.9, -0.3, 0.3, 0.9], [-0.6, 0.0, 0.4, 1.0], [-0.3, 0.2, 0.6, 1.2]])
    _dropout_sweep(tmp_path / supplement.BATCHNORM, base)
    other = {"same": base, "shifted": base + 1.5,
             "half": np.where(np.abs(base) < 0.5, base + 0.7, base)}[scale]
    _dropout_sweep(tmp_path / supplement.NORM_SCALE, other, norm="scale")
    rows = supplement._s3_rows(tmp_path)
    assert tuple(r.verdict for r in rows) == verdicts


@pytest.mark.parametrize(("factor", "verdict"), [(10.0, "holds"), (0.1, "differs")])
def test_s3_seed_spread(tmp_path, factor, verdict):
    base = np.array([[-0.9, -0.3, 0.3, 0.9], [-0.6, 0.0, 0.4, 1.0], [-0.3, 0.2, 0.6, 1.2]])
    _dropout_sweep(tmp_path / supplement.BATCHNORM, base, seeds=10, spread=0.02)
    _dropout_sweep(tmp_path / supplement.NORM_SCALE, base, seeds=10, spread=0.02 * factor,
                   norm="scale")
    assert supplement._s3_rows(tmp_path)[1].verdict == verdict


def _horizons(root, spreads):
    """figures/horizons: per horizon the noisy cells' curvature = limit + spread * noise."""
    folder = root / "figures/horizons"
    folder.mkdir(parents=True, exist_ok=True)
    mu, noise = np.array([0.0, 0.01, 0.02]), np.array([0.0, 0.01, 0.02])
    for h, s in zip(chain_claims.HORIZONS, spreads, strict=True):
        c = 0.1 + s * (1 - noise / noise.max())[None, :, None] * np.ones((3, 3, 2))
        xr.Dataset({"curvature_scaled": (("mu_right", "noise", "seed"), c)},
                   coords={"mu_right": mu, "noise": noise, "seed": [0, 1]}).to_netcdf(
            folder / f"{h}.nc")


@pytest.mark.parametrize(("spreads", "verdict"), [
    ((-0.5, -0.3, -0.1, 0.0), "holds"),     # noise-dependent, slow, noise-independent limit
    ((-0.5, -0.3, -0.1, -0.2), "differs"),  # the limit depends on the noise
    ((0.0, 0.0, 0.0, 0.0), "differs")])     # no creep at all
def test_the_creep_row(tmp_path, spreads, verdict):
    _horizons(tmp_path, spreads)
    assert chain_claims._creep_row(tmp_path).verdict == verdict


def _chains(root, curves):
    path = root / chain_claims.CHAIN
    path.parent.mkdir(parents=True, exist_ok=True)
    curves = np.asarray(curves, dtype=float)  # (cells, L + 1)
    from phasecore.loadcurve import curvature_scaled

    xr.Dataset({"load_curve": (("mu_right", "noise", "seed", "layer"),
                               curves[:, None, None, :].repeat(2, axis=2)),
                "curvature_scaled": (("mu_right", "noise", "seed"),
                                     curvature_scaled(curves)[:, None, None].repeat(2, 2))},
               coords={"mu_right": np.arange(len(curves)), "noise": [0.0]}).to_netcdf(path)


def test_the_least_energy_row(tmp_path):
    u = np.linspace(0, 1, 8)
    shapes = [1 - u + a * (u**2 - u) for a in (0.0, 0.2, -0.4, 0.6)]
    _chains(tmp_path, shapes)
    assert chain_claims._energy_row(tmp_path).verdict == "holds"
    # a zigzag: curvature 0, yet the largest energy excess
    zigzag = 1 - u + 0.08 * (-1.0) ** np.arange(8) * (np.arange(8) % 7 != 0)
    odd = [1 - u + 0.1 * (u**2 - u), zigzag, 1 - u + 0.5 * (u**2 - u)]
    _chains(tmp_path, odd)
    assert chain_claims._energy_row(tmp_path).verdict == "partly"


def _knob_sweep(path, knob, curvature, epochs_run=100, seeds=3):
    """A Fig. 1 diagram (alpha, knob, seed, measure): ``curvature`` (A, K) as both
    definitions, a seed spread of 0.01, accuracy best where the curve is linear."""
    curvature = np.asarray(curvature, dtype=float)
    a, k = curvature.shape
    cells = curvature[..., None] + 0.01 * np.linspace(-1, 1, seeds)
    acc = 0.9 - 0.1 * np.abs(cells)
    values = {"lr": np.geomspace(1e-4, 1e-1, k), "batch_size": 2.0 ** np.arange(k, 0, -1)}.get(
        knob, np.linspace(0, 0.3, k))
    dims = ("alpha", knob, "seed")
    ds = xr.Dataset(
        {"curvature_scaled": (dims + ("measure",), cells[..., None]),
         "curvature": (dims + ("measure",), cells[..., None]),
         "test_accuracy": (dims, acc),
         "epochs_run": (dims, np.full(acc.shape, epochs_run))},
        coords={"alpha": np.linspace(0, 1, a), knob: values, "seed": np.arange(seeds),
                "measure": ["trace_ratio"]},
        attrs={"knob": knob, "config": json.dumps({"epochs": 100})})
    path.parent.mkdir(parents=True, exist_ok=True)
    ds.to_netcdf(path)


#: Fig. 1's shape, alpha 0 (most nonlinear) first, noise across: concave lazy corner
#: (alpha 0, no noise), convex noisy one, every row through 0.
FIG1 = np.array([[-0.9, -0.3, 0.0, 0.4], [-0.6, -0.1, 0.2, 0.7], [-0.3, 0.0, 0.5, 1.2]])


def test_the_authors_stopping_rule_is_fig_1as_variant(tmp_path):
    for knob in main_text.PANELS:  # label noise: most networks stopped early
        _knob_sweep(tmp_path / f"figures/paper/dnn_{knob}.nc", knob, FIG1,
                    epochs_run=60 if knob == "label_noise" else 100)
    rows = {r.id: r for r in main_text._network_rows(tmp_path)}
    label = [rows[i] for i in ("Fig. 1a", "Fig. 1a (shading)", "Fig. 1a (trends)",
                               "Fig. 1 (shading, pooled)")]
    assert [r.variants[main_text.STOPPING] for r in label] == ["cannot"] * 4
    assert all(not r.robust and main_text.AUTHORS_STOP not in r.files for r in label)
    assert "not yet committed" in rows["Fig. 1a"].why
    assert all(main_text.STOPPING not in rows[i].variants for i in ("Fig. 1b", "Fig. 1c (trends)"))

    # Retrained, every network its 100 epochs: the same diagram reaches the same verdicts ...
    _knob_sweep(tmp_path / main_text.AUTHORS_STOP, "label_noise", FIG1)
    rows = {r.id: r for r in main_text._network_rows(tmp_path)}
    label = [rows[i] for i in ("Fig. 1a", "Fig. 1a (shading)", "Fig. 1a (trends)",
                               "Fig. 1 (shading, pooled)")]
    assert [r.variants[main_text.STOPPING] for r in label] == [r.verdict for r in label]
    assert all(main_text.AUTHORS_STOP in r.files for r in label)
    # ... and one convex throughout (no concave corner, no linear cell, no trend along
    # nonlinearity) reaches its own.
    _knob_sweep(tmp_path / main_text.AUTHORS_STOP, "label_noise", np.full((3, 4), 1.0)
                + np.linspace(0, 0.3, 4))
    rows = {r.id: r for r in main_text._network_rows(tmp_path)}
    assert rows["Fig. 1a"].verdict == "holds"
    assert rows["Fig. 1a"].variants[main_text.STOPPING] == "partly"
    assert rows["Fig. 1a (shading)"].variants[main_text.STOPPING] == "cannot"
    assert rows["Fig. 1a (trends)"].variants[main_text.STOPPING] == "undecided"  # no trend down
