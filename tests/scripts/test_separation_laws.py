"""scripts/separation_laws.py (He & Su's and Galanti et al.'s experiments) end to end at its
quick scale, its refusals, and the ledger reading what it writes."""

from pathlib import Path

import pytest

from dnnphase.sweeps import separation_laws
from phaseclaims import galanti, he_su
from phaseclaims.ledger import VERDICTS
from tests.scripts.refusals import refused, script_main

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "separation_laws.py"


def _main():
    return script_main("separation_laws")


def _refused(argv, capsys) -> str:
    return refused(_main(), argv, capsys)


def test_quick_experiments_end_to_end_then_reused_and_read_by_the_ledger(tmp_path, capsys):
    folder = tmp_path / "figures" / "separation_laws"
    assert _main()([str(folder), "--quick"]) == 0
    for experiment, sweeps in separation_laws.EXPERIMENTS.items():
        assert (folder / f"{experiment}.png").stat().st_size > 0
        for name in sweeps:
            assert (folder / f"{name}.nc").is_file()
    out = capsys.readouterr().out
    assert "hesu_fig12: the configuration of hesu_fig7_n1000.nc, copied" in out
    before = (folder / "galanti_fig3.nc").stat().st_mtime_ns
    assert _main()([str(folder), "--quick", "--only", "galanti_fig3"]) == 0
    assert "reusing" in capsys.readouterr().out
    assert (folder / "galanti_fig3.nc").stat().st_mtime_ns == before
    rows = he_su.claims(tmp_path) + galanti.claims(tmp_path)
    # He & Su: Fig. 1's nine networks, ρ and 20 against 8 layers, Figs. 3 (2), 4 (3), 7 (2),
    # 9 (2), 12; Galanti 5 (the rows that compare two depths or data sets need the papers'
    # depths: absent here)
    assert len(rows) == 11 + 2 + 3 + 2 + 2 + 1 + 5
    assert all(row.verdict in VERDICTS for row in rows)
    # The quick scale lacks the papers' depths: those rows say so rather than guess.
    assert {r.verdict for r in rows if "20 layers" in r.id} == {"cannot"}
    assert any(r.verdict != "cannot" for r in rows if r.id.startswith("He–Su Fig. 7"))


def test_fig1_without_the_ledgers_lr_rule_is_refused_before_any_drawing():
    """The figure draws the choices of the ledger's rule, which the caller passes in (the
    networks' package never imports the ledger)."""
    from dnnphase.compare.figures.separation_laws import plot_experiment
    from phasecore.checks import ConfigError

    with pytest.raises(ConfigError, match="^lr_rule must be He & Su's choice"):
        plot_experiment("hesu_fig1", {}, "quick")
    with pytest.raises(ConfigError, match="^lr_rule must be"):
        plot_experiment("hesu_fig1", {}, "quick", lr_rule="paper_rule")


def test_on_cuda_the_figure_scripts_run_in_this_process_unless_a_pool_is_asked():
    """One GPU is one worker: a pool's workers would each hold a CUDA context."""
    from types import SimpleNamespace

    from dnnphase.sweeps.named_sweeps import figure_scheduler

    cpu, gpu = SimpleNamespace(device="cpu"), SimpleNamespace(device="cuda:0")
    assert figure_scheduler({"a": cpu}, None) == "processes"
    assert figure_scheduler({"a": cpu, "b": gpu}, None) == "serial"
    assert figure_scheduler({"a": gpu}, 2) == "processes"
    # --workers 1: this process on either device (a pool of one only adds its start-up)
    assert figure_scheduler({"a": cpu}, 1) == figure_scheduler({"a": gpu}, 1) == "serial"


def test_one_worker_runs_here_rather_than_in_a_pool_of_one(tmp_path):
    """--workers 1 (the documented command of the papers' scale) trains in this process: a
    pool of one would only add a worker's start-up, and --workers is then left unset."""
    parse = _main().__globals__["parse"]
    args, _, scheduler = parse([str(tmp_path / "f"), "--full", "--only", "hesu_fig12",
                                "--workers", "1"])
    assert (scheduler, args.workers) == ("serial", None)
    args, _, scheduler = parse([str(tmp_path / "f"), "--full", "--only", "hesu_fig12",
                                "--workers", "2"])
    assert (scheduler, args.workers) == ("processes", 2)


def test_a_title_is_never_wrapped_inside_a_number():
    from dnnphase.compare.figures.separation_laws import _wrapped_title

    title = "He & Su Fig. 7: n = 1 000, 2 000 and 5 000 samples\nsecond line, 20 layers 100 wide"
    for width in range(8, 60):
        lines = _wrapped_title(title, width).split("\n")
        assert not any(line.endswith((" 1", " 2", " 5")) for line in lines), (width, lines)
        assert " ".join(lines).replace("\u00a0", " ").split() == title.split()
    assert _wrapped_title("a 100 b", 80) == "a 100 b"  # no group space: left alone


def test_a_title_names_the_training_set_size_or_says_it_is_the_whole_split():
    import json

    import xarray as xr

    from dnnphase.compare.figures.separation_laws import _title

    def title(n_train):
        config = {"dataset": "fashion-mnist", "n_train": n_train, "protocol": "authors"}
        return _title(xr.Dataset(attrs={"config": json.dumps(config)}), "full",
                      paper="galanti").split("\n")[0]

    assert title(1000) == "data: fashion-mnist, 1000 training samples"
    assert title(None) == "data: fashion-mnist, all its training samples"


def test_bad_options_are_refused_in_one_line_before_any_file(tmp_path, capsys):
    folder = tmp_path / "out"
    assert "only must be one or more of hesu_fig1" in _refused(
        [str(folder), "--only", "hesu_fig2"], capsys)
    assert "only must be distinct" in _refused(
        [str(folder), "--only", "hesu_fig1,hesu_fig1"], capsys)
    assert "workers" in _refused([str(folder), "--workers", "0"], capsys)
    assert "not allowed with argument" in _refused([str(folder), "--full", "--quick"], capsys)
    afile = tmp_path / "afile"
    afile.write_text("x")
    assert "folder must be a folder" in _refused([str(afile), "--quick"], capsys)
    assert not folder.exists()


def test_odd_folders_and_a_silent_scheduler_are_refused_before_any_work(tmp_path, capsys,
                                                                         monkeypatch):
    from functools import partial

    from phasecore import executors

    afile = tmp_path / "afile"
    afile.write_text("x")
    quick = ["--quick", "--only", "hesu_fig12"]
    assert "is a file, not a folder" in _refused([str(afile / "sub"), *quick], capsys)
    monkeypatch.chdir(tmp_path)  # an empty name was the current folder, written in
    assert "folder must be a folder name" in _refused(["", *quick], capsys)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["afile"]
    (tmp_path / "taken" / "hesu_fig12.png").mkdir(parents=True)
    assert "is a folder where the figure goes" in _refused([str(tmp_path / "taken"), *quick],
                                                           capsys)
    assert [p.name for p in (tmp_path / "taken").iterdir()] == ["hesu_fig12.png"]
    monkeypatch.setattr(executors, "check_reachable",
                        partial(executors.check_reachable, timeout=0.5))
    folder = tmp_path / "out"
    assert "does not answer" in _refused(
        [str(folder), *quick, "--scheduler", "tcp://127.0.0.1:1"], capsys)
    assert not folder.exists()


def test_an_interrupted_sweep_of_another_configuration_is_refused_before_any_work(
        tmp_path, capsys):
    folder = tmp_path / "out"
    parts = folder / "hesu_fig9.nc.parts"
    parts.mkdir(parents=True)
    (parts / "sweep.json").write_text('{"hash": "0", "n_chunks": 1, "config": {"depth": 3}}')
    err = _refused([str(folder), "--quick", "--only", "hesu_fig3,hesu_fig9"], capsys)
    assert "hesu_fig9.nc.parts' holds an interrupted sweep with a different configuration" in err
    assert err.split(" (see")[0].endswith("move it or choose another folder")
    assert [p.name for p in folder.iterdir()] == ["hesu_fig9.nc.parts"]  # hesu_fig3 not run


def test_a_folder_of_another_scale_is_refused(tmp_path, capsys):
    folder = tmp_path / "out"
    assert _main()([str(folder), "--quick", "--only", "hesu_fig9"]) == 0
    capsys.readouterr()
    assert "holds another configuration" in _refused([str(folder), "--only", "hesu_fig9"],
                                                      capsys)


def test_missing_fashion_mnist_is_one_line_naming_the_package(tmp_path, capsys, monkeypatch):
    from dnnphase import data
    from dnnphase.sweeps import sweep

    sweep._data.cache_clear()  # a load earlier in this process would hide the missing files
    monkeypatch.setitem(data.DEFAULT_ROOTS, "fashion-mnist",
                        (str(tmp_path / "none"), "dataset-fashion-mnist"))
    err = _refused([str(tmp_path / "out"), "--only", "galanti_fig3"], capsys)
    assert "install the Debian package dataset-fashion-mnist" in err
    assert not (tmp_path / "out").exists()
    sweep._data.cache_clear()


def test_every_scale_builds_and_the_depth_axes_follow_their_papers():
    full, reduced = separation_laws.configs("full"), separation_laws.configs("reduced")
    assert full["hesu_fig1_adam"].depths == (3, 7, 19)  # their 4, 8, 20 layers
    assert full["hesu_fig1_sgd"].values == separation_laws.SGD_LRS
    assert full["galanti_fig1"].depths == (2, 3, 4, 8, 16)
    assert full["galanti_fig3"].width == 500 and reduced["galanti_fig3"].width == 100
    assert full["hesu_fig9"].epochs == 600 and reduced["hesu_fig9"].record_every == 10
    assert reduced["hesu_fig7_n5000"].n_train == 5000
    for cfg in reduced.values():
        assert cfg.weight_decay == 5e-4 and cfg.batch_size == 128 and cfg.alphas == (0.0,)


def test_the_authors_protocol_is_the_reference_and_ours_reruns_the_committed_files():
    """Under "ours" every configuration is the one its committed file holds (so the ledger's
    commands rerun them); the reference is each paper's own protocol, read from its code."""
    from dnnphase.sweeps.named_sweeps import stored_matches

    ours = separation_laws.configs("reduced", protocol="ours")
    for name, cfg in ours.items():
        assert stored_matches(ROOT / "figures" / "separation_laws" / f"{name}.nc", cfg), name
    assert "hesu_fig4_mixed" not in ours and ours["hesu_fig7_n1000"].protocol == "ours"
    authors = separation_laws.configs("reduced")
    assert authors["hesu_fig4_wide_narrow"].width == (1000,) * 4 + (100,) * 3
    assert authors["hesu_fig4_mixed"].width == (100, 500, 500, 2500, 2500, 500, 500)
    for name, cfg in authors.items():
        if name.startswith("hesu"):
            assert (cfg.protocol, cfg.keep_last_batch, cfg.warmup_epochs) == ("he_su", True, 0)
        else:
            assert (cfg.protocol, cfg.warmup_epochs, cfg.keep_last_batch) == ("galanti", 1, False)
            assert cfg.schedule == separation_laws.GALANTI_SCHEDULE
            assert (cfg.values if cfg.knob == "lr" else (cfg.lr,)) == (0.1,)
    assert separation_laws.configs("quick", only="galanti_fig1")["galanti_fig1"].schedule == ()


def test_a_bad_scheduler_is_refused_before_any_file(tmp_path, capsys):
    assert "scheduler must be one of" in _refused(
        [str(tmp_path / "out"), "--scheduler", "banana"], capsys)
    assert not (tmp_path / "out").exists()


def test_a_committed_network_comes_out_again():
    """Seed 0 of the committed Fig. 7 sweep (1 000 samples, 8 layers, 200 epochs) retrained
    from its stored configuration. Under the kernels it was computed with the curve is the
    same bit for bit; under other CPU kernels (``python -m tests.portability``: the baseline
    vector width, AVX2 with one thread) 1 600 float32 SGD steps move it by up to 0.10 in log
    D and the test accuracy by 0.002, measured; the bounds below are 2.5 times that."""
    import json

    import numpy as np

    from dnnphase.measures import laws
    from dnnphase.sweeps.sweep import SweepConfig, train_chunk
    from phasecore import results

    ds = results.load(ROOT / "figures" / "separation_laws" / "hesu_fig7_n1000.nc")
    cfg = SweepConfig(**json.loads(ds.attrs["config"]))
    chunk = train_chunk({"config": cfg, "models": [(0, 0, 0)]})
    committed = ds.isel(alpha=0, lr=0, seed=0)
    np.testing.assert_allclose(chunk["load_curve"].values[0], committed["load_curve"].values,
                               atol=0.25, rtol=0)
    assert abs(float(chunk["test_accuracy"][0]) - float(committed["test_accuracy"])) <= 0.005
    fuzziness = chunk["load_curve"].values[0, cfg.measures.index("fuzziness")]  # (L+1,)
    r = laws.equi_separation(fuzziness)["pearson_r"]
    assert abs(r - float(committed["pearson_r"])) <= 0.005


def test_help_and_the_line_before_each_experiment_give_its_measured_time(capsys):
    import runpy

    script = runpy.run_path(str(SCRIPT), run_name="script")
    assert set(script["MEASURED_S"]) == set(separation_laws.PROTOCOLS)
    for times in script["MEASURED_S"].values():
        assert set(times) == set(separation_laws.EXPERIMENTS)
    line = script["estimate"]("hesu_fig1", "ours", "reduced")
    assert f"measured {script['MEASURED_S']['ours']['hesu_fig1']} s" in line
    assert "no time measured at this scale" in script["estimate"]("hesu_fig1", "ours", "full")
    projected = script["estimate"]("galanti_fig3", "authors", "full")
    assert script["PROJECTED_FULL"]["galanti_fig3"] in projected and "measured" not in projected
    assert "measured 698 s at this scale" in script["estimate"]("hesu_fig9", "authors", "full")
    part = script["estimate"]("hesu_fig4", "authors", "full")
    assert script["MEASURED_FULL_PART"]["hesu_fig4"] in part and "measured" not in part
    try:
        _main()(["--help"])
    except SystemExit:
        pass
    out = " ".join(capsys.readouterr().out.split())
    assert f"hesu_fig1 {script['MEASURED_S']['ours']['hesu_fig1']} s" in out
    full = out.split("at the papers' scale (--full), ")[1]
    for experiment, seconds in script["MEASURED_FULL_S"].items():
        assert f"{experiment} {seconds} s" in full
    for experiment, note in {**script["MEASURED_FULL_PART"], **script["PROJECTED_FULL"]}.items():
        assert f"{experiment}: {note}" in full


def test_each_scale_and_protocol_has_its_own_default_folder():
    """The committed folders hold the reduced scale: --quick and --full default to a
    subfolder, so neither is refused for the committed files' configuration nor mixed in."""
    parse = _main().__globals__["parse"]
    folders = {tuple(argv): parse(argv)[0].folder for argv in
               ([], ["--quick"], ["--protocol", "ours"], ["--protocol", "ours", "--quick"])}
    assert folders == {(): "figures/separation_laws_authors",
                       ("--quick",): "figures/separation_laws_authors/quick",
                       ("--protocol", "ours"): "figures/separation_laws",
                       ("--protocol", "ours", "--quick"): "figures/separation_laws/quick"}
