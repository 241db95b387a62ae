"""The He & Su and Galanti et al. ledger rows on hand-made sweep files: each rule's verdicts
at and across its thresholds, and the learning-rate choices of He & Su's Fig. 1."""

import json

import numpy as np
import xarray as xr

from phaseclaims import galanti, he_su, protocols

CONFIG = json.dumps({"epochs": 200, "width": 100})


def _write(root, stem, ds, protocol="ours", measurement=None, kernels=None, epochs=200):
    """``ds`` as ``stem``'s file in ``protocol``'s folder, its configuration stored with
    ``measurement`` (None: none stored, as the files from before the option), ``epochs``
    and its ``kernels`` (None: none stored)."""
    folder = root / protocols.FOLDERS[protocol]
    folder.mkdir(parents=True, exist_ok=True)
    config = {**json.loads(CONFIG), "epochs": epochs}
    if measurement is not None:
        config["protocol"] = measurement
    ds.attrs.update(config=json.dumps(config), data=json.dumps({"source": "hand-made"}))
    if kernels is not None:
        ds.attrs["kernels"] = json.dumps(kernels)
    ds.to_netcdf(folder / f"{stem}.nc")


def _fig1_file(r, loss, rho=None, final=None):
    """r, loss: (lr, seed, depth) for depths 3, 7, 19 at three lrs; ``final`` (lr, seed,
    depth) each network's log fuzziness at its last layer (default 0)."""
    dims = ("alpha", "lr", "seed", "depth")
    rho = np.full_like(r, 0.8) if rho is None else rho
    curves = np.full((1, 3, 3, 3, 1, 20), np.nan)  # (..., depth, measure, layer)
    for k, d in enumerate((3, 7, 19)):
        curves[0, :, :, k, 0, : d + 1] = 1.0
        curves[0, :, :, k, 0, d] = 0.0 if final is None else final[:, :, k]
    return xr.Dataset({"pearson_r": (dims, r[None]), "decay_ratio": (dims, rho[None]),
                       "train_loss": (dims, loss[None]),
                       "load_curve": (dims + ("measure", "layer"), curves)},
                      coords={"alpha": [0.0], "lr": [0.01, 0.1, 1.0], "seed": [0, 1, 2],
                              "depth": [3, 7, 19], "measure": ["fuzziness"],
                              "layer": np.arange(20)})


def test_fig1_keeps_their_lr_by_seed_and_reads_r_at_the_lowest_loss_lr_too(tmp_path):
    r = np.full((3, 3, 3), -0.9)
    r[1, :, :] = -0.999  # lr 0.1: the law, at every seed and depth
    r[2, 0, :] = -0.9995  # seed 0 is straightest at lr 1.0
    loss = np.ones((3, 3, 3))
    loss[0] = 0.1  # lr 0.01 trains best, and its r is -0.9
    chosen = he_su.paper_rule(_fig1_file(r, loss), 3)
    np.testing.assert_array_equal(chosen["lr_paper"], [1.0, 0.1, 0.1])
    np.testing.assert_allclose(chosen["r_paper"], [-0.9995, -0.999, -0.999])
    assert chosen["lr_loss"] == 0.01 and np.allclose(chosen["r_loss"], -0.9)
    rho = np.full((3, 3, 3), 0.95)
    rho[1, :, 2] = 0.82  # Adam, 20 layers, their lr: 0.82 (the paper's 0.818)
    for opt in he_su.OPTIMIZER_WORDS:
        _write(tmp_path, f"hesu_fig1_{opt}", _fig1_file(r, loss, rho))
    rows = {row.id: row for row in he_su.claims(tmp_path)}
    assert rows["He–Su Fig. 1 (SGD, 4 layers)"].verdict == "holds"
    assert rows["He–Su Fig. 1 (learning rate not chosen by r)"].verdict == "differs"
    rho_row = rows["He–Su Fig. 1 (Adam, 20 layers, ρ)"]
    # seed 0 keeps lr 1.0 (ρ 0.95): mean 0.863 is partly, but the interval reaches 0.82
    assert rho_row.verdict == "undecided" and "crossing 0.03 or 0.1" in rho_row.why
    rho[:, :, 2] = 0.9  # every seed 0.9: partly, nothing to straddle
    _write(tmp_path, "hesu_fig1_adam", _fig1_file(r, loss, rho))
    rows = {row.id: row for row in he_su.claims(tmp_path)}
    assert rows["He–Su Fig. 1 (Adam, 20 layers, ρ)"].verdict == "partly"
    rho[:, :, 2] = 0.95
    rho[1, :, 2] = 0.82
    rho[2, 0, 2] = 0.82
    _write(tmp_path, "hesu_fig1_adam", _fig1_file(r, loss, rho))
    rows = {row.id: row for row in he_su.claims(tmp_path)}
    assert rows["He–Su Fig. 1 (Adam, 20 layers, ρ)"].verdict == "holds"


def test_twenty_layers_against_eight_by_the_seed_interval(tmp_path):
    """Fig. 1's text: 20 layers end fuzzier. Per optimizer the interval of the difference of
    final log D (their rule's lr per seed) above 0 holds, below differs, across undecided;
    the variant reads each network at its lowest-loss lr."""
    r = np.full((3, 3, 3), -0.999)
    r[0] = -0.9999  # their rule keeps lr 0.01 everywhere
    loss = np.ones((3, 3, 3))
    loss[2] = 0.1  # the lowest loss at lr 1.0
    final = np.zeros((3, 3, 3))
    final[0, :, 2] = [0.5, 0.6, 0.7]  # at lr 0.01, 20 layers fuzzier than 8 (0)
    final[2, :, 2] = [-0.5, -0.6, -0.7]  # at lr 1.0, less fuzzy

    def row():
        return {c.id: c for c in he_su.claims(tmp_path)}["He–Su Fig. 1 (20 against 8 layers)"]

    for opt in he_su.OPTIMIZER_WORDS:
        _write(tmp_path, f"hesu_fig1_{opt}", _fig1_file(r, loss, final=final))
    got = row()
    assert (got.verdict, got.variants) == ("holds", {"lowest-loss lr": "differs"})
    mixed = final.copy()
    mixed[0, :, 2] = [-0.3, 0.0, 0.3]  # within the seeds
    _write(tmp_path, "hesu_fig1_sgd", _fig1_file(r, loss, final=mixed))
    assert row().verdict == "undecided"
    mixed[0, :, 2] = [-0.5, -0.6, -0.7]  # SGD's 20 layers less fuzzy, the others' more
    _write(tmp_path, "hesu_fig1_sgd", _fig1_file(r, loss, final=mixed))
    assert row().verdict == "partly"
    for opt in he_su.OPTIMIZER_WORDS:
        _write(tmp_path, f"hesu_fig1_{opt}", _fig1_file(r, loss, final=mixed))
    assert row().verdict == "differs"


def test_the_law_verdict_thresholds():
    assert he_su.law_verdict(-0.995) == "holds"
    assert he_su.law_verdict(he_su.LAW_R) == "holds"
    assert he_su.law_verdict(-0.97) == "partly"
    assert he_su.law_verdict(-0.5) == "differs"
    assert he_su.law_verdict(np.nan) == "differs"


def _galanti_fig1(accuracy, effective, below=0.5):
    """Each depth's training accuracy and effective depth (the same at every seed), as NCC
    curves: ``below`` under the effective depth, 1 from it to the network's top layer."""
    dims = ("alpha", "lr", "seed", "depth")
    depths = [2, 3, 4, 8, 16]
    acc = np.broadcast_to(np.asarray(accuracy, float), (3, 5))
    eff = np.broadcast_to(np.asarray(effective, float), (3, 5))
    ncc = np.full((1, 1, 3, 5, 1, 17), np.nan)
    for k, (d, e) in enumerate(zip(depths, effective, strict=True)):
        ncc[..., k, 0, : d + 1] = below
        if np.isfinite(e):
            ncc[..., k, 0, int(e): d + 1] = 1.0
    return xr.Dataset({"train_accuracy": (dims, acc[None, None]),
                       "train_loss": (dims, np.full((1, 1, 3, 5), 0.01)),
                       "effective_depth": (dims, eff[None, None]),
                       "load_curve": (dims + ("measure", "layer"), ncc)},
                      coords={"alpha": [0.0], "lr": [0.01], "seed": [0, 1, 2], "depth": depths,
                              "measure": ["ncc"], "layer": np.arange(17)})


def test_galanti_fig1_minimal_depth_rule(tmp_path):
    fits_at_4 = [0.9, 0.95, 0.995, 1.0, 1.0]
    ds = _galanti_fig1(fits_at_4, [np.nan, np.nan, 4, 4, 4])
    assert galanti.minimal_fitting_depth(ds) == (4, 3)
    _write(tmp_path, "galanti_fig1", ds)
    literal, minimal = galanti.claims(tmp_path)[:2]
    assert literal.verdict == "holds" and minimal.verdict == "holds"
    _write(tmp_path, "galanti_fig1", _galanti_fig1(fits_at_4, [np.nan, np.nan, 4, 7, 12]))
    literal, minimal = galanti.claims(tmp_path)[:2]
    assert literal.verdict == "differs" and minimal.verdict == "partly"
    _write(tmp_path, "galanti_fig1", _galanti_fig1(fits_at_4, [np.nan] * 5))
    assert galanti.claims(tmp_path)[1].verdict == "differs"  # no layer collapses
    assert galanti.minimal_fitting_depth(_galanti_fig1([0.5] * 5, [np.nan] * 5)) == (None, 0)


def test_galanti_fig1_at_other_thresholds_are_variants(tmp_path):
    """Layers below the collapse at 0.985: at 0.98 they collapse too (effective depth 1),
    at 0.99 and 0.995 they do not (4)."""
    fits_at_4 = [0.9, 0.95, 0.996, 1.0, 1.0]
    _write(tmp_path, "galanti_fig1", _galanti_fig1(fits_at_4, [np.nan, np.nan, 4, 4, 4],
                                                   below=0.985))
    literal, minimal = galanti.claims(tmp_path)[:2]
    assert literal.verdict == "holds" and minimal.verdict == "holds"
    assert literal.variants == {"threshold 0.98": "differs", "threshold 0.995": "holds",
                                "all networks": "holds"}
    assert minimal.variants == {"threshold 0.98": "partly", "threshold 0.995": "holds",
                                "all networks": "holds"}
    assert "at 0.98: 8 layers 1, 1, 1" in literal.ours


def _galanti_fig3(cdnv4, effective, ncc4, fit=1.0):
    layers, noise = 11, [0.0, 0.25, 0.5, 0.75]
    curves = np.ones((1, 4, 3, 3, layers))  # (alpha, noise, seed, measure, layer)
    curves[..., 0, 4] = np.asarray(cdnv4, float)[None, :, None]
    curves[..., 1, 4] = np.asarray(ncc4, float)[None, :, None]
    dims = ("alpha", "random_labels", "seed")
    return xr.Dataset(
        {"load_curve": (dims + ("measure", "layer"), curves),
         "effective_depth": (dims, np.broadcast_to(np.asarray(effective, float)[:, None],
                                                   (4, 3))[None]),
         "train_accuracy": (dims, np.full((1, 4, 3), fit))},
        coords={"alpha": [0.0], "random_labels": noise, "seed": [0, 1, 2],
                "measure": ["cdnv", "ncc", "fuzziness"], "layer": np.arange(layers)})


def test_galanti_fig3_rules(tmp_path):
    _write(tmp_path, "galanti_fig3", _galanti_fig3([0.3, 0.55, 1.4, 3.0], [4, 5, 6, np.nan],
                                                   [1.0, 0.9, 0.8, 0.7]))
    cdnv, depth, ncc = galanti.claims(tmp_path)[2:]
    assert (cdnv.verdict, depth.verdict, ncc.verdict) == ("holds", "holds", "holds")
    _write(tmp_path, "galanti_fig3", _galanti_fig3([0.8, 2.8, 7.0, 25.0], [9, np.nan, 4, 10],
                                                   [1.0, 0.9, 0.8, 0.7], fit=0.95))
    cdnv, depth, ncc = galanti.claims(tmp_path)[2:]
    assert (cdnv.verdict, depth.verdict, ncc.verdict) == ("partly", "cannot", "cannot")
    assert depth.variants == {"all networks": "partly"}  # every network, none fitting
    assert ncc.variants == {"all networks": "partly"} and "judged levels" in ncc.ours
    # only the fitting networks count: at 25 % none fits, the rest rise
    fit = np.array([1.0, 0.95, 1.0, 1.0])[None, :, None].repeat(3, axis=2)
    ds = _galanti_fig3([0.8, 2.8, 7.0, 25.0], [4, 2, 5, 6], [1.0, 0.9, 0.8, 0.7])
    ds["train_accuracy"][:] = fit
    _write(tmp_path, "galanti_fig3", ds)
    depth, ncc = galanti.claims(tmp_path)[3:]
    assert (depth.verdict, depth.variants) == ("holds", {"all networks": "partly"})
    assert (ncc.verdict, ncc.variants) == ("holds", {"all networks": "partly"})
    assert "0%: 1.000, 50%: 0.800, 75%: 0.700" in ncc.ours  # 25 % not judged
    _write(tmp_path, "galanti_fig3", _galanti_fig3([0.8, 0.7, 0.6, 0.5], [9, 8, 7, 6],
                                                   [0.7, 0.8, 0.9, 1.0]))
    assert {row.verdict for row in galanti.claims(tmp_path)[2:]} == {"differs"}


def test_galanti_fig3_cdnv_is_undecided_where_a_levels_interval_crosses_the_band(tmp_path):
    ds = _galanti_fig3([0.3, 0.55, 1.4, 3.0], [4, 5, 6, 7], [1.0, 0.9, 0.8, 0.7])
    _write(tmp_path, "galanti_fig3", ds)
    assert galanti.claims(tmp_path)[2].verdict == "holds"
    ds = ds.copy(deep=True)  # at 25 %: seeds 0.5, 0.6, 0.95, mean 0.68 (0.6 ± a factor 1.5)
    ds["load_curve"].loc[dict(random_labels=0.25, measure="cdnv", layer=4)] = [
        [0.5, 0.6, 0.95]]
    _write(tmp_path, "galanti_fig3", ds)
    row = galanti.claims(tmp_path)[2]
    assert row.verdict == "undecided" and "reach holds and partly" in row.why


def test_missing_files_are_cannot_rows(tmp_path):
    rows = he_su.claims(tmp_path) + galanti.claims(tmp_path)
    assert rows and {row.verdict for row in rows} == {"cannot"}


def _fig4_file(final):
    """A Fig. 4 sweep whose seeds end at log fuzziness ``final`` (3,), 8 layers."""
    curves = np.linspace(3.0, 0.0, 8)[None, None, None, None, :].repeat(3, axis=2)
    curves[0, 0, :, 0, -1] = final
    dims = ("alpha", "lr", "seed")
    return xr.Dataset({"load_curve": (dims + ("measure", "layer"), curves),
                       "pearson_r": (dims, np.full((1, 1, 3), -0.999))},
                      coords={"alpha": [0.0], "lr": [1e-3], "seed": [0, 1, 2],
                              "measure": ["fuzziness"], "layer": np.arange(8)})


def test_fig4_rules(tmp_path):
    finals = {"width20": [1.0, 1.1, 0.9], "width100": [-1.0, -1.1, -0.9],
              "width1000": [-1.2, -1.3, -1.1], "narrow_wide": [-0.5, -0.6, -0.4],
              "wide_narrow": [-1.5, -1.6, -1.4]}
    for name, final in finals.items():
        _write(tmp_path, f"hesu_fig4_{name}", _fig4_file(final))
    rows = {r.id: r for r in he_su.claims(tmp_path) if "Fig. 4" in r.id}
    assert [r.verdict for r in rows.values()] == ["holds", "holds", "holds"]
    # 1 000 ends 0.8 below 100: 0.4 of the 20-to-100 gap (2.0): partly
    _write(tmp_path, "hesu_fig4_width1000", _fig4_file([-1.8, -1.9, -1.7]))
    _write(tmp_path, "hesu_fig4_wide_narrow", _fig4_file([-0.4, -0.5, -0.3]))
    rows = {r.id: r for r in he_su.claims(tmp_path) if "Fig. 4" in r.id}
    assert rows["He–Su Fig. 4 (width 100 vs 1 000)"].verdict == "partly"
    assert rows["He–Su Fig. 4 (shape)"].verdict == "differs"
    mean, low, high = he_su.difference_interval([1.0, 1.0], [0.0, 0.0])
    assert (mean, low, high) == (1.0, 1.0, 1.0)


def _fig7_file(r, half):
    """A Fig. 7 sweep whose three seeds have Pearson r ``r`` (one value or three) and
    half-life ``half``."""
    dims = ("alpha", "lr", "seed")
    return xr.Dataset({"pearson_r": (dims, np.broadcast_to(r, (1, 1, 3)).copy()),
                       "half_life": (dims, np.full((1, 1, 3), half))},
                      coords={"alpha": [0.0], "lr": [1e-3], "seed": [0, 1, 2]})


def _fig7_rows(root):
    return {r.id: r for r in he_su.claims(root) if r.id.startswith("He–Su Fig. 7")}


def test_the_authors_files_are_the_reference_and_ours_a_variant(tmp_path):
    for k, n in enumerate((1000, 2000, 5000)):
        _write(tmp_path, f"hesu_fig7_n{n}", _fig7_file(-0.98, 1.0 + k))  # ours: partly
    rows = _fig7_rows(tmp_path)
    law = rows["He–Su Fig. 7"]
    assert (law.verdict, law.variants) == ("partly", {})  # the authors' not there: ours
    assert "--protocol ours" in law.command and "not computed" in law.why
    assert law.files[0].startswith(protocols.FOLDERS["ours"])
    # the authors' files, all three: the reference
    for k, n in enumerate((1000, 2000, 5000)):
        _write(tmp_path, f"hesu_fig7_n{n}", _fig7_file(-0.995, 3.0 - k), "authors", "he_su")
    rows = _fig7_rows(tmp_path)
    law, half = rows["He–Su Fig. 7"], rows["He–Su Fig. 7 (half-life)"]
    assert (law.verdict, law.variants) == ("holds", {"our protocol": "partly"})
    assert not law.robust and "--protocol" not in law.command
    assert law.files[0].startswith(protocols.FOLDERS["authors"])
    assert "our protocol: n 1000: r -0.9800" in law.ours
    assert "200 of their 600 epochs" in law.why and "authors' protocol not computed" not in law.why
    # the half-life falls under theirs, rises under ours
    assert (half.verdict, half.variants) == ("differs", {"our protocol": "holds"})
    # a file of the authors' folder measured otherwise is not theirs: ours again
    _write(tmp_path, "hesu_fig7_n2000", _fig7_file(-0.995, 2.0), "authors", "ours")
    assert _fig7_rows(tmp_path)["He–Su Fig. 7"].variants == {}
    # and one missing is not the reference either
    _write(tmp_path, "hesu_fig7_n2000", _fig7_file(-0.995, 2.0), "authors", "he_su")
    assert protocols.reference(tmp_path, "hesu_fig7") == "authors"
    (tmp_path / protocols.FOLDERS["authors"] / "hesu_fig7_n5000.nc").unlink()
    assert protocols.reference(tmp_path, "hesu_fig7") == "ours"


def test_the_rerun_under_other_kernels_is_a_variant_and_a_flip_makes_a_row_fragile(tmp_path):
    for k, n in enumerate((1000, 2000, 5000)):
        _write(tmp_path, f"hesu_fig7_n{n}", _fig7_file(-0.98, 1.0 + k))
        _write(tmp_path, f"hesu_fig7_n{n}", _fig7_file(-0.995, 1.0 + k), "authors", "he_su")
    law = _fig7_rows(tmp_path)["He–Su Fig. 7"]
    assert set(law.variants) == {"our protocol"}
    assert "other CPU kernels: not computed (env ATEN_CPU_CAPABILITY=default" in law.why
    other = {**protocols.KERNELS, "torch_cpu_capability": "DEFAULT"}
    for k, n in enumerate((1000, 2000, 5000)):  # the rerun: the law only partly
        _write(tmp_path, f"hesu_fig7_n{n}", _fig7_file(-0.97, 1.0 + k), "kernels", "he_su",
               other)
    law = _fig7_rows(tmp_path)["He–Su Fig. 7"]
    assert law.verdict == "holds" and law.variants["other CPU kernels"] == "partly"
    assert not law.robust and "other CPU kernels: n 1000: r -0.9700" in law.ours
    assert "other CPU kernels: not computed" not in law.why
    # a rerun file computed on this machine's own kernels does not count
    _write(tmp_path, "hesu_fig7_n2000", _fig7_file(-0.97, 2.0), "kernels", "he_su",
           {"torch_cpu_capability": "AVX512"})
    assert not protocols.kernels_rerun(tmp_path, "hesu_fig7")
    assert "other CPU kernels" not in _fig7_rows(tmp_path)["He–Su Fig. 7"].variants


def test_a_seed_interval_across_the_laws_threshold_is_undecided(tmp_path):
    """The point estimate's side is not a verdict: seeds -0.999, -0.985, -0.995 have mean
    -0.993 (holds), but their interval reaches above -0.99."""
    for k, n in enumerate((1000, 2000, 5000)):
        _write(tmp_path, f"hesu_fig7_n{n}", _fig7_file(-0.995, 1.0 + k))
    assert _fig7_rows(tmp_path)["He–Su Fig. 7"].verdict == "holds"
    _write(tmp_path, "hesu_fig7_n2000", _fig7_file([-0.999, -0.985, -0.995], 2.0))
    law = _fig7_rows(tmp_path)["He–Su Fig. 7"]
    assert law.verdict == "undecided" and "crosses a threshold at n = 2000;" in law.why
    assert he_su.law_verdict_of([-0.999, -0.985, -0.995]) == ("undecided", -0.993)
    assert he_su.law_verdict_of([-0.996, -0.995, -0.997])[0] == "holds"
    assert he_su.law_verdict_of([-0.96, -0.97, -0.965])[0] == "partly"


def _fig9_file(bend_at_end):
    """A Fig. 9 sweep, 8 layers, 3 seeds, epochs 0, 10, 20: rising at epoch 0 (r +1), straight
    at 10 (r -1), and at 20 each seed's line bent by ``bend_at_end[s]`` (0.05: r -0.995)."""
    layer = np.arange(8.0)
    curves = np.empty((1, 1, 3, 3, 8))  # (alpha, lr, seed, epoch, layer)
    curves[..., 0, :], curves[..., 1, :] = layer, -layer
    for s, bend in enumerate(bend_at_end):
        curves[0, 0, s, 2] = -layer + bend * (layer - 3.5) ** 2
    return xr.Dataset({"load_curve_epochs": (("alpha", "lr", "seed", "epoch", "layer"),
                                             curves)},
                      coords={"alpha": [0.0], "lr": [1e-3], "seed": [0, 1, 2],
                              "epoch": [0, 10, 20], "layer": np.arange(8)})


def test_fig9_is_undecided_where_the_final_rs_interval_straddles_the_law(tmp_path):
    _write(tmp_path, "hesu_fig9", _fig9_file([0.05, 0.05, 0.05]))
    row = next(r for r in he_su.claims(tmp_path) if r.id == "He–Su Fig. 9")
    assert row.verdict == "holds" and "first at epoch 10" in row.ours
    _write(tmp_path, "hesu_fig9", _fig9_file([0.0, 0.05, 0.1]))  # r -1, -0.995, -0.981
    row = next(r for r in he_su.claims(tmp_path) if r.id == "He–Su Fig. 9")
    assert row.verdict == "undecided" and row.why.startswith("r at the end: the seeds'")
    assert "at epoch 0" not in row.why.split(";")[0]  # epoch 0 is far from any threshold


def test_the_papers_scale_is_a_variant_counted_only_at_the_papers_epochs(tmp_path):
    for k, n in enumerate((1000, 2000, 5000)):
        _write(tmp_path, f"hesu_fig7_n{n}", _fig7_file(-0.98, 1.0 + k))
        _write(tmp_path, f"hesu_fig7_n{n}", _fig7_file(-0.995, 1.0 + k), "authors", "he_su")
    law = _fig7_rows(tmp_path)["He–Su Fig. 7"]
    assert "papers' scale: not computed (python scripts/separation_laws.py --full" in law.why
    for k, n in enumerate((1000, 2000, 5000)):  # at 600 epochs the law holds again
        _write(tmp_path, f"hesu_fig7_n{n}", _fig7_file(-0.996, 1.0 + k), "full", "he_su",
               epochs=600)
    law = _fig7_rows(tmp_path)["He–Su Fig. 7"]
    assert law.variants["papers' scale"] == "holds" and "papers' scale: n 1000" in law.ours
    assert law.verdict == "holds" and "papers' scale: not computed" not in law.why
    assert law.files[0].startswith(protocols.FOLDERS["authors"] + "/hesu")  # the reference
    # a file there at another scale's epochs, or under our measurement, does not count
    _write(tmp_path, "hesu_fig7_n2000", _fig7_file(-0.97, 2.0), "full", "he_su", epochs=200)
    assert not protocols.papers_scale(tmp_path, "hesu_fig7")
    assert "papers' scale" not in _fig7_rows(tmp_path)["He–Su Fig. 7"].variants
    _write(tmp_path, "hesu_fig7_n2000", _fig7_file(-0.97, 2.0), "full", "ours", epochs=600)
    assert not protocols.papers_scale(tmp_path, "hesu_fig7")
    # the law only partly at the papers' scale: the row is fragile
    _write(tmp_path, "hesu_fig7_n2000", _fig7_file(-0.97, 2.0), "full", "he_su", epochs=600)
    law = _fig7_rows(tmp_path)["He–Su Fig. 7"]
    assert law.variants["papers' scale"] == "partly" and not law.robust


def test_the_papers_scale_folder_is_where_full_writes():
    import runpy
    from pathlib import Path

    script = Path(__file__).resolve().parents[2] / "scripts" / "separation_laws.py"
    parse = runpy.run_path(str(script), run_name="script")["parse"]
    args = parse(["--full", "--only", "hesu_fig12"])[0]
    assert args.folder == protocols.FOLDERS["full"]
    assert protocols.command("full", "hesu_fig12").split()[2:] == ["--full", "--workers",
                                                                    "1", "--only", "hesu_fig12"]


def test_the_rerun_kernels_are_the_portability_baseline():
    from tests.portability import SETTINGS

    assert protocols.KERNELS == SETTINGS["baseline"]
    for name, value in protocols.KERNELS.items():
        assert f"{name}={value}" in protocols.command("kernels", "hesu_fig7")


def test_galanti_fig1_is_judged_only_in_the_terminal_phase(tmp_path):
    """The 8- and 16-layer networks must fit their labels (training accuracy >= 0.999), at
    least half of each depth's: else "cannot", the former reading the variant."""
    ds = _galanti_fig1([0.9, 0.95, 0.995, 0.995, 0.998], [np.nan, np.nan, 4, 4, 4])
    _write(tmp_path, "galanti_fig1", ds)
    literal, minimal = galanti.claims(tmp_path)[:2]
    assert literal.verdict == minimal.verdict == "cannot"
    assert literal.variants["all networks"] == "holds"
    assert minimal.variants["all networks"] == "holds"
    assert "0 of 15 networks fit their training labels" in literal.ours
    assert "8 layers 0 of 3, 16 layers 0 of 3" in literal.why
    # two of three 16-layer networks fit, and only they are judged: their depth is 4
    ds = _galanti_fig1([0.9, 0.95, 0.995, 1.0, 1.0], [np.nan, np.nan, 4, 4, 4]).copy(deep=True)
    ds["train_accuracy"].loc[dict(depth=16, seed=0)] = 0.99
    ncc = ds["load_curve"].sel(measure="ncc", depth=16).values
    ncc[..., 0, :] = 0.5  # seed 0 never collapses: effective depth "none" when counted
    ds["load_curve"].loc[dict(measure="ncc", depth=16)] = ncc
    _write(tmp_path, "galanti_fig1", ds)
    literal = galanti.claims(tmp_path)[0]
    assert "16 layers: effective depth by seed none, 4, 4" in literal.ours
    assert literal.verdict == "holds"
    # one of three fits: not judged
    ds["train_accuracy"].loc[dict(depth=16, seed=1)] = 0.99
    _write(tmp_path, "galanti_fig1", ds)
    assert galanti.claims(tmp_path)[0].verdict == "cannot"


def test_galanti_fig3_needs_half_of_a_noise_level_to_fit(tmp_path):
    ds = _galanti_fig3([0.8, 2.8, 7.0, 25.0], [4, 5, 6, 7], [1.0, 0.9, 0.8, 0.7]).copy(deep=True)
    ds["train_accuracy"].loc[dict(random_labels=[0.25, 0.5, 0.75], seed=[0, 1])] = 0.998
    _write(tmp_path, "galanti_fig3", ds)  # one network of three fits at each noisy level
    depth, ncc = galanti.claims(tmp_path)[3:]
    assert depth.verdict == "cannot" and "6 of 12 networks fit" in depth.ours
    assert ncc.verdict == "cannot" and "at no level of random labels" in ncc.why
    ds["train_accuracy"].loc[dict(random_labels=[0.25, 0.5, 0.75], seed=[0])] = 1.0
    _write(tmp_path, "galanti_fig3", ds)  # two of three
    assert galanti.claims(tmp_path)[3].verdict == "holds"
