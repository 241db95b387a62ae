"""Nothing overwritten and every case answered cleanly (issue 45 §2-3): a script replaces an
existing result only with --overwrite (checked before any work), writes its files all or none
on a full disk, answers Ctrl-C with exit code 130 and the hint to rerun, and resumes."""

import errno
import shutil
from pathlib import Path

import matplotlib.pyplot as plt
import pytest
import xarray as xr

from tests.scripts.refusals import refused, script_main

ROOT = Path(__file__).resolve().parents[2]


def listing(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*"))


def _no_space(*args, **kwargs):
    raise OSError(errno.ENOSPC, "No space left on device")


def _script(name: str) -> dict:
    """The namespace the script's functions read (patch names there)."""
    return script_main(name).__globals__


# --- committed results are not replaced without --overwrite ------------------------------


@pytest.mark.parametrize("name,argv,files", [
    ("cnn_dropout", ["--quick"], ["cnn_dropout.nc"]),
    ("linear_network", ["--quick"], ["linear_network.png"]),
    ("train_test", ["--quick"], ["train_test.nc"]),
    ("fig4_dynamics", ["--quick"], ["fig4.png"]),
    ("scrutiny", [], ["scrutiny_lr.nc"]),
    ("chain_family", [], ["family_held_out_lr.nc"]),
    ("prediction", [], ["prediction_transfer.nc"]),
    ("reanalyse", [], ["phase_lr.png"]),
])
def test_an_existing_result_is_refused_before_any_work(name, argv, files, tmp_path, capsys,
                                                       monkeypatch):
    """`cnn_dropout.py --quick` without a folder replaced the committed cnn_dropout.nc and
    .png with a quick-scale result; every script writing into a folder refuses now, naming
    the file and --overwrite, and leaves it as it was."""
    for knob in ("lr", "dropout"):  # what the sweep-reading scripts look for
        shutil.copyfile(ROOT / "figures" / "paper" / f"dnn_{knob}.nc", tmp_path / f"dnn_{knob}.nc")
        for stem in ("family", "family_held_out", "prediction"):
            shutil.copyfile(ROOT / "figures" / "paper" / f"{stem}_{knob}.nc",
                            tmp_path / f"{stem}_{knob}.nc")
    for file in files:
        (tmp_path / file).write_text("a committed result")
    before = listing(tmp_path)
    main = _script(name).get("cli", script_main(name))
    err = refused(main, [str(tmp_path), *argv], capsys)
    assert f"{files[0]}' exist" in err and "--overwrite" in err, err
    assert listing(tmp_path) == before
    assert all((tmp_path / f).read_text() == "a committed result" for f in files)


def test_the_defaults_are_in_every_help(capsys):
    """Two --help texts did not show their default folder."""
    for name in ("cnn_dropout", "scrutiny", "chain_family", "linear_network"):
        main = _script(name).get("cli", script_main(name))
        with pytest.raises(SystemExit):
            main(["--help"])
        out = capsys.readouterr().out
        assert "default" in out.split("positional arguments:")[1].split("options:")[0], name
        assert "--overwrite" in out, name


# --- a full disk: all or none -------------------------------------------------------------


def test_cnn_dropout_on_a_full_disk_leaves_nothing(tmp_path, monkeypatch, capsys):
    """Its .nc stayed behind when the figure could not be written; a rerun then refused."""
    committed = xr.load_dataset(ROOT / "figures" / "supplement" / "cnn_dropout.nc")
    namespace = _script("cnn_dropout")
    monkeypatch.setitem(namespace, "cnn_dropout", lambda *a, **k: committed.copy())
    monkeypatch.setattr(plt.Figure, "savefig", _no_space)
    folder = tmp_path / "out"
    err = refused(namespace["cli"], [str(folder), "--quick"], capsys)
    assert "cnn_dropout.png' could not be written: no space left on device" in err
    assert listing(tmp_path) == []


@pytest.mark.parametrize("name,plot", [("separation_laws", "law_figures.plot_experiment"),
                                       ("universality", "universality.plot_diagram")])
def test_a_figure_script_on_a_full_disk_is_one_line(name, plot, tmp_path, monkeypatch, capsys):
    """separation_laws.py and universality.py ended in a traceback on a full disk."""
    from dnnphase.compare.figures import separation_laws as law_figures
    from dnnphase.sweeps import named_sweeps, universality

    module = {"law_figures": law_figures, "universality": universality}[plot.split(".")[0]]
    monkeypatch.setattr(named_sweeps, "run_named", lambda *a, **k: None)
    monkeypatch.setattr(module, plot.split(".")[1], lambda *a, **k: plt.figure())
    monkeypatch.setattr(plt.Figure, "savefig", _no_space)
    err = refused(script_main(name), [str(tmp_path / "out"), "--quick"], capsys)
    assert "could not be written: no space left on device" in err


# --- Ctrl-C: exit 130 and the hint ---------------------------------------------------------


def _interrupt(*args, **kwargs):
    raise KeyboardInterrupt


@pytest.mark.parametrize("name", ["separation_laws", "universality"])
def test_ctrl_c_in_a_figure_script_is_130_with_the_hint(name, tmp_path, monkeypatch, capsys):
    from dnnphase.sweeps import named_sweeps

    monkeypatch.setattr(named_sweeps, "run_named", _interrupt)
    assert script_main(name)([str(tmp_path / "out"), "--quick"]) == 130
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "rerun the same command" in err, err


def _two_knobs(folder: Path) -> None:
    for knob in ("lr", "dropout"):
        for stem in ("dnn", "family", "family_held_out"):
            shutil.copyfile(ROOT / "figures" / "paper" / f"{stem}_{knob}.nc",
                            folder / f"{stem}_{knob}.nc")


def test_scrutiny_interrupted_keeps_its_finished_knobs_and_resumes(tmp_path, monkeypatch,
                                                                   capsys):
    """Ctrl-C was a traceback (exit 1) and lost every finished knob; now 130, the finished
    knobs kept, and the same command computes only the rest."""
    from dnnphase.compare.scrutiny import own_claims as module

    _two_knobs(tmp_path)
    calls = []

    def first_then_stop(sweep, family, held, draws):
        calls.append(sweep.attrs["knob"])
        if len(calls) == 2:
            raise KeyboardInterrupt
        return xr.Dataset({"x": ("i", [1.0, 2.0])}, attrs={"kind": "dnnphase.compare.scrutiny"})

    monkeypatch.setattr(module, "scrutiny", first_then_stop)
    main = script_main("scrutiny")
    argv = [str(tmp_path), "--workers", "1", "--draws", "0"]
    assert main(argv) == 130
    err = capsys.readouterr().err
    assert "under a minute" in err  # the estimate, before any work
    last = err.strip().splitlines()[-1]
    assert "1/2 chunks are kept" in last and "rerun the same command to resume" in last
    assert not list(tmp_path.glob("scrutiny_*.nc"))  # written together, at the end
    printed = []
    monkeypatch.setitem(script_main("scrutiny").__globals__, "print_tables", printed.append)
    calls.clear()
    monkeypatch.setattr(module, "scrutiny", lambda s, f, h, draws: (
        calls.append(s.attrs["knob"]), xr.Dataset({"x": ("i", [3.0])}))[1])
    main = script_main("scrutiny")
    monkeypatch.setitem(main.__globals__, "print_tables", printed.append)
    assert main(argv) == 0
    assert calls == ["lr"]  # dropout's was kept
    assert sorted(p.name for p in tmp_path.glob("scrutiny_*")) == ["scrutiny_dropout.nc",
                                                                  "scrutiny_lr.nc"]
    assert not (tmp_path / "scrutiny.nc.parts").exists()


def test_scrutiny_names_a_corrupt_family_file_before_any_work(tmp_path, monkeypatch, capsys):
    from dnnphase.compare.scrutiny import own_claims as module

    _two_knobs(tmp_path)
    (tmp_path / "family_lr.nc").write_bytes(
        (ROOT / "figures" / "paper" / "family_lr.nc").read_bytes()[:3000])
    monkeypatch.setattr(module, "scrutiny", _interrupt)  # (must not be reached)
    err = refused(script_main("scrutiny"), [str(tmp_path), "--workers", "1"], capsys)
    assert "family_lr.nc' is not a NetCDF result file" in err
    (tmp_path / "family_lr.nc").unlink()
    shutil.copyfile(ROOT / "figures" / "paper" / "dnn_lr.nc", tmp_path / "family_lr.nc")
    err = refused(script_main("scrutiny"), [str(tmp_path), "--workers", "1"], capsys)
    assert "family_lr.nc' holds 'dnnphase.sweep'" in err
    assert not list(tmp_path.glob("scrutiny*"))


def test_quick_runs_serially_even_with_workers_and_says_why(tmp_path, monkeypatch, capsys):
    """separation_laws.py --quick: 14.7 s serially, 121 s with --workers 2 (a pool started
    for each sweep of seconds)."""
    from dnnphase.sweeps import named_sweeps

    schedulers = []

    def record(name, cfg, folder, names, *, scheduler, workers, quiet):
        schedulers.append((scheduler, workers))
        raise KeyboardInterrupt

    monkeypatch.setattr(named_sweeps, "run_named", record)
    for name in ("separation_laws", "universality"):
        assert script_main(name)([str(tmp_path / name), "--quick", "--workers", "2"]) == 130
        err = capsys.readouterr().err
        assert "--quick runs its sweeps here" in err and "a pool's workers take to start" in err
    assert schedulers == [("serial", None)] * 2


def test_two_measures_into_a_read_only_folder_is_one_line(tmp_path, monkeypatch, capsys):
    """A read-only folder ended in a traceback after the linear network had trained: the
    folder is probed before any work (a file made and removed; the system refuses it on a
    read-only mount, as here, where the probe is made to fail: root ignores mode bits)."""
    from phasecore import results

    monkeypatch.setattr(results, "_write_probe", lambda folder: "Read-only file system")
    folder = tmp_path / "ro"
    folder.mkdir()
    err = refused(script_main("two_measures"), [str(folder)], capsys)
    assert "does not accept new files" in err and "Read-only file system" in err
    assert listing(tmp_path) == ["ro"]


@pytest.mark.parametrize("name", ["separation_laws", "universality"])
def test_quick_still_refuses_a_bad_workers(name, tmp_path, capsys):
    """--quick runs serially, but --workers 0 is still a mistake, said before any work."""
    err = refused(script_main(name), [str(tmp_path / "out"), "--quick", "--workers", "0"],
                  capsys)
    assert "workers must be an integer >= 1" in err
    assert listing(tmp_path) == []


def test_scrutiny_kept_knobs_of_other_settings_are_refused_then_discarded(tmp_path, monkeypatch,
                                                                          capsys):
    """Finished knobs kept from a run with other --draws are not mixed in: refused naming
    --overwrite, which discards them."""
    from dnnphase.compare.scrutiny import own_claims as module

    _two_knobs(tmp_path)
    calls = []

    def first_then_stop(sweep, family, held, draws):
        calls.append(1)
        if len(calls) == 2:
            raise KeyboardInterrupt
        return xr.Dataset({"x": ("i", [float(draws)])})

    monkeypatch.setattr(module, "scrutiny", first_then_stop)
    main = script_main("scrutiny")
    assert main([str(tmp_path), "--workers", "1", "--draws", "0"]) == 130
    assert (tmp_path / "scrutiny.nc.parts").is_dir()
    capsys.readouterr()
    err = refused(script_main("scrutiny"), [str(tmp_path), "--workers", "1", "--draws", "1"],
                  capsys)
    assert "different configuration" in err and "--overwrite" in err
    monkeypatch.setattr(module, "scrutiny", lambda s, f, h, draws: xr.Dataset(
        {"x": ("i", [float(draws)])}))
    main = script_main("scrutiny")
    monkeypatch.setitem(main.__globals__, "print_tables", lambda sets: None)
    assert main([str(tmp_path), "--workers", "1", "--draws", "1", "--overwrite"]) == 0
    assert xr.load_dataset(tmp_path / "scrutiny_lr.nc")["x"].item() == 1.0
    assert not (tmp_path / "scrutiny.nc.parts").exists()
