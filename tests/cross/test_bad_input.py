"""Bad input, one class at a time: a one-line error naming the parameter and its range,
exit code 2 from either command line (ConfigError from Python), before any work starts,
and nothing written, corrupted or left behind."""

import io
import os
import subprocess
import sys
import textwrap
import warnings
from pathlib import Path

import numpy as np
import pytest
import torch

import dnnphase
from dnnphase import compare
from dnnphase.cli import main as dnnphase_main
from dnnphase.compare import presets
from dnnphase.data.registry import make_data
from dnnphase.networks.architecture import Architecture
from dnnphase.sweeps import memory
from dnnphase.sweeps.memory import check_sweep_memory, chunk_bytes, parameters_per_model
from dnnphase.sweeps.sweep import SweepConfig, load_data
from phasecore import results
from phasecore.checks import ConfigError, check_grid, check_pool_can_start, seed_list
from phasecore.progress import Progress, weighted
from springblock.cli import main as springblock_main

TINY = dict(dataset="gmm", n_train=40, depth=2, width=8, epochs=2, measures=["trace_ratio"])
TINY_ARGS = ["--dataset", "gmm", "--n-train", "40", "--depth", "2", "--width", "8",
             "--epochs", "1", "--seeds", "1", "--measures", "trace_ratio", "--scheduler",
             "serial", "--quiet"]
ON_LINUX = pytest.mark.skipif(not Path("/proc/self").exists(), reason="needs Linux's /proc")


def one_line_error(capsys, prog: str) -> str:
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"{prog}: error:") and "\n" not in err, err
    return err


def listing(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*"))


@pytest.fixture(scope="module")
def tiny_sweep_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("sweep") / "dnn.nc"
    dnnphase.sweep(knob="dropout", values=[0.0, 0.2], alphas=[0.0, 1.0], seeds=2, output=path,
                   **TINY)
    return path


# --- output paths: one shared check (phasecore.results.check_output) ---------------------


@pytest.mark.parametrize("name,fragment", [
    ("x.txt", "output must be a NetCDF file name ending in .nc"),
    ("x", "output must be a NetCDF file name ending in .nc"),
    ("a_file.nc/x.nc", "'a_file.nc' is a file, not a folder"),
    ("a_file.nc/sub/x.nc", "'a_file.nc' is a file, not a folder"),
    ("missing/x.nc", "output directory"),
])
def test_bad_output_path_is_refused_by_both_command_lines_and_python(tmp_path, capsys,
                                                                     monkeypatch, name,
                                                                     fragment):
    monkeypatch.chdir(tmp_path)
    Path("a_file.nc").write_text("not a folder")
    before = listing(tmp_path)
    assert springblock_main(["simulate", "--steps", "10", "-o", name]) == 2
    assert fragment in one_line_error(capsys, "springblock")
    assert dnnphase_main(["sweep", *TINY_ARGS, "-o", name]) == 2
    assert fragment in one_line_error(capsys, "dnnphase")
    with pytest.raises((ConfigError, FileNotFoundError), match=fragment):
        dnnphase.sweep(output=name, **TINY)
    with pytest.raises((ConfigError, FileNotFoundError), match=fragment):
        results.check_output(name)
    assert listing(tmp_path) == before and Path("a_file.nc").read_text() == "not a folder"


@ON_LINUX
def test_a_folder_that_refuses_new_files_is_named_before_any_work(tmp_path, capsys):
    assert springblock_main(["simulate", "--steps", "10", "-o", "/proc/x.nc"]) == 2
    err = one_line_error(capsys, "springblock")
    assert "the folder '/proc' does not accept new files" in err
    assert dnnphase_main(["sweep", *TINY_ARGS, "-o", "/proc/x.nc"]) == 2
    assert "'/proc' does not accept new files" in one_line_error(capsys, "dnnphase")
    assert dnnphase_main(["reproduce", "--preset", "test", "-o", "/proc/xyz"]) == 2
    assert "output folder '/proc/xyz' cannot be written" in one_line_error(capsys, "dnnphase")
    with pytest.raises(ConfigError, match="does not accept new files"):
        dnnphase.sweep(output="/proc/x.nc", **TINY)


def test_output_folder_check_refuses_files_and_creates_nothing(tmp_path):
    (tmp_path / "f").write_text("")
    with pytest.raises(ConfigError, match="output must be a folder"):
        results.check_output_folder(tmp_path / "f")
    with pytest.raises(ConfigError, match="'.*f' is a file, not a folder"):
        results.check_output_folder(tmp_path / "f" / "sub")
    with pytest.raises(ConfigError, match="output must be a folder name"):
        results.check_output_folder("")
    assert results.check_output_folder(tmp_path / "new" / "deeper") == tmp_path / "new" / "deeper"
    assert listing(tmp_path) == ["f"]  # checked, not created; the probe file is gone


def test_a_file_where_the_chunk_store_goes_is_refused(tmp_path, capsys):
    from phasecore.store import ChunkStore

    (tmp_path / "y.nc.parts").write_text("mine")
    assert dnnphase_main(["sweep", *TINY_ARGS, "-o", str(tmp_path / "y.nc")]) == 2
    assert "is a file where the sweep keeps its chunks" in one_line_error(capsys, "dnnphase")
    with pytest.raises(results.OutputExistsError, match="y.nc.parts' is a file"):
        ChunkStore(tmp_path / "y.nc").open({"a": 1}, 2, overwrite=True)
    assert listing(tmp_path) == ["y.nc.parts"] and (tmp_path / "y.nc.parts").read_text() == "mine"


# --- memory: estimated before any work ---------------------------------------------------


@pytest.mark.parametrize("arch", [Architecture("mlp", depth=3, width=20),
                                  Architecture("mlp", depth=2, width=7, norm="none", bias=False),
                                  Architecture("cnn", depth=2, channels=3)])
def test_parameter_count_is_the_networks_own(arch):
    single = arch.single(64, 10, image_shape=(1, 8, 8))
    trainable = sum(p.numel() for p in single.parameters())
    assert parameters_per_model(arch, 64, 10, (1, 8, 8)) == trainable


def test_chunk_estimate_scales_with_every_factor():
    kw = dict(models=2, n_train=100, batch=50, n_features=10, n_classes=3, image_shape=None,
              optimizer="adam", dtype_bytes=4)
    arch = Architecture("mlp", depth=2, width=10)
    base = chunk_bytes(arch, **kw)
    assert chunk_bytes(arch, **{**kw, "models": 4})["peak"] > 1.9 * base["peak"]
    assert chunk_bytes(arch, **{**kw, "dtype_bytes": 8})["state"] == 2 * base["state"]
    assert chunk_bytes(arch, **{**kw, "optimizer": "sgd"})["state"] == base["state"] / 2
    wide = chunk_bytes(Architecture("mlp", depth=2, width=1000), **kw)
    assert wide["state"] > 1000 * base["state"]


def test_a_sweep_beyond_the_memory_is_refused_naming_the_parameter(tmp_path, capsys,
                                                                   monkeypatch):
    out = tmp_path / "w.nc"
    assert dnnphase_main(["sweep", *TINY_ARGS, "--width", "100000000", "-o", str(out)]) == 2
    err = one_line_error(capsys, "dnnphase")
    assert err.startswith("dnnphase: error: width is too large for this machine") and \
        "GiB of memory" in err
    assert listing(tmp_path) == []  # no result, no chunk store
    # On the CPU's chunking (with CUDA present a chunk would hold every model).
    cnn = SweepConfig(**{**TINY, "dataset": "digits", "arch": "cnn", "channels": 5000,
                         "width": 100, "device": "cpu"})  # width: the MLP's, at its default
    data = load_data(cnn)
    with pytest.raises(ConfigError, match="^channels is too large"):
        check_sweep_memory(cnn, data, scheduler="serial", workers=None, on_cuda=False,
                           available=2**30)
    many = SweepConfig(**TINY, models_per_chunk=4000, seeds=4000, device="cpu")
    with pytest.raises(ConfigError, match="^models_per_chunk is too large.*a chunk of 4000"):
        check_sweep_memory(many, load_data(many), scheduler="serial", workers=None,
                           on_cuda=False, available=2**20)
    # Unknown memory (a platform that does not say): not refused. (available=None would
    # read this machine's, which another job may have taken.)
    monkeypatch.setattr(memory, "host_available_memory", lambda: None)
    fits = check_sweep_memory(cnn, data, scheduler="serial", workers=None, on_cuda=False)
    assert fits["peak"] > 0


def test_a_grid_too_large_for_one_result_is_refused_before_any_plan():
    """10⁹ networks used to build their chunk plan silently until the memory ran out."""
    with pytest.raises(ConfigError, match=r"^100 alphas x 100 values x 100000 seeds = "
                                          r"1000000000 networks would make a result of"):
        SweepConfig(**{**TINY, "epochs": 2}, values=np.linspace(0, 0.3, 100),
                    alphas=np.linspace(0, 1, 100), seeds=100_000)
    # Recording every epoch multiplies it: 18 000 networks pass, with snapshots they do not.
    grid = dict(values=[0.0, 0.1, 0.2], alphas=[0.0, 0.5, 1.0], seeds=2000)
    SweepConfig(**{**TINY, "epochs": 10_000}, **grid)
    with pytest.raises(ConfigError, match="coarser record_every"):
        SweepConfig(**{**TINY, "epochs": 10_000, "record_every": 1}, **grid)


def test_a_generated_data_set_beyond_the_memory_is_refused_before_it_is_drawn(monkeypatch):
    """``--dataset gmm --n-train 10**8`` used to fail inside numpy (74.5 GiB) with a
    traceback; it is refused naming n_train (or n_test) before anything is drawn."""
    from dnnphase import data as data_module
    from dnnphase.data import synthetic

    monkeypatch.setattr(synthetic, "host_available_memory", lambda: 8 * 2**30)
    with pytest.raises(ConfigError, match=r"^n_train is too large for this machine: dataset "
                                          r"'gmm' with n_train 100000000 and dim 100"):
        data_module.load_dataset("gmm", n_train=10**8)
    with pytest.raises(ConfigError, match="^n_test is too large"):
        data_module.load_dataset("gmm", n_train=100, n_test=10**8)
    assert data_module.load_dataset("gmm", n_train=1000).n_train == 1000


def test_a_pool_beyond_the_memory_is_refused_naming_workers(monkeypatch):
    """Every pool worker is a process of its own (Python, torch, numba): a pool of 1000
    workers over 1000 one-model chunks is refused naming ``workers`` and how many fit,
    while the same sweep on 2 workers, or serial, passes."""
    many = SweepConfig(**TINY, models_per_chunk=1, seeds=1000, device="cpu")
    data = load_data(many)
    available = 8 * 2**30
    with pytest.raises(ConfigError, match=r"^workers is too large.*1000 chunks at once.*"
                                          r"use at most (3[01]) workers\)$"):
        check_sweep_memory(many, data, scheduler="processes", workers=1000, on_cuda=False,
                           available=available)
    for scheduler, workers in (("processes", 2), ("processes", 30), ("serial", None)):
        check_sweep_memory(many, data, scheduler=scheduler, workers=workers, on_cuda=False,
                           available=available)
    # The worker's own memory counts with the default pool size too (one per core), and a
    # default pool that does not fit where one worker would is named as workers.
    with pytest.raises(ConfigError, match="a pool's worker 0.25 GiB of its own"):
        check_sweep_memory(many, data, scheduler="processes", workers=None, on_cuda=False,
                           available=2**20)
    monkeypatch.setattr(memory.os, "cpu_count", lambda: 64)
    with pytest.raises(ConfigError, match=r"^workers is too large.*64 chunks at once.*"
                                          r"use at most 31 workers\)$"):
        check_sweep_memory(many, data, scheduler="processes", workers=None, on_cuda=False,
                           available=available)


def test_refused_overwrite_leaves_the_existing_result_intact(tiny_sweep_file, capsys):
    before = tiny_sweep_file.read_bytes()
    assert dnnphase_main(["sweep", *TINY_ARGS, "--width", "100000000", "--overwrite",
                          "-o", str(tiny_sweep_file)]) == 2
    one_line_error(capsys, "dnnphase")
    assert tiny_sweep_file.read_bytes() == before
    assert not tiny_sweep_file.with_name(tiny_sweep_file.name + ".parts").exists()


# --- degenerate data ---------------------------------------------------------------------


def test_too_few_samples_per_class_is_refused_naming_n_train(tmp_path, capsys):
    out = tmp_path / "g.nc"
    assert dnnphase_main(["sweep", *TINY_ARGS[4:], "--dataset", "gmm", "--n-train", "10",
                          "-o", str(out)]) == 2
    err = one_line_error(capsys, "dnnphase")
    assert "n_train must be at least 20 for dataset 'gmm'" in err and "got 10" in err
    with pytest.raises(ConfigError, match="^n_train must be at least 20 for dataset 'gmm'"):
        dnnphase.sweep(**{**TINY, "n_train": 19}, output=out)
    uneven = _twins(n_train=None, data_seed=0, n_classes=3, per_class=(3, 2, 1))
    with pytest.raises(ConfigError, match=r"^n_train must be at least 6 .*got 6, class 2 has 1"):
        SweepConfig(**TINY).check_data(uneven)
    assert listing(tmp_path) == []


def _twins(*, n_train, data_seed, n_classes=2, per_class=(2, 2)):
    """Every sample of a class at its class mean: no within-class spread at any layer."""
    rng = np.random.default_rng(data_seed)
    means = rng.normal(size=(n_classes, 5))
    y = np.repeat(np.arange(n_classes), per_class)
    return make_data("twins", means[y], y, means[y], y, n_classes, {"source": "test"})


def test_non_finite_load_curves_are_recorded_with_one_clear_warning(monkeypatch):
    from dnnphase import data

    monkeypatch.setitem(data.DATASETS, "twins", _twins)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        ds = dnnphase.sweep(dataset="twins", seeds=1, alphas=[0.0], values=[0.0], depth=2,
                            width=4, epochs=1, measures=["trace_ratio", "ncc"])
    messages = [str(w.message) for w in caught]
    assert not [w for w in caught if issubclass(w.category, RuntimeWarning)], messages
    assert len(messages) == 1 and "1 of 1 trained models have a trace_ratio load curve that " \
        "is not finite" in messages[0] and "curvatures are NaN" in messages[0]
    curve = ds["load_curve"].sel(measure="trace_ratio").values
    assert np.isneginf(curve).all()  # recorded as it is
    assert np.isnan(ds["curvature"].sel(measure="trace_ratio")).all()
    assert np.isnan(ds["curvature_scaled"].sel(measure="trace_ratio")).all()
    assert np.isfinite(ds["load_curve"].sel(measure="ncc")).all()


# --- repeated or ill-typed values --------------------------------------------------------


def test_repeated_knobs_are_refused_before_any_work(tmp_path, capsys):
    out = tmp_path / "r"
    assert dnnphase_main(["reproduce", "--preset", "test", "--knobs", "dropout,dropout",
                          "-o", str(out)]) == 2
    assert "knobs must be distinct (got 'dropout' more than once" in \
        one_line_error(capsys, "dnnphase")
    assert not out.exists()


def test_seeds_are_a_count_or_a_list_as_on_the_command_line():
    assert SweepConfig(**TINY, seeds=3).seeds == (0, 1, 2)
    assert SweepConfig(**TINY, seeds=[4, 7]).seeds == (4, 7)
    for bad in (0, -1, [], "0,1", [1, 1], [0.5], True, [2**63]):
        with pytest.raises(ConfigError, match="^seeds must be"):
            SweepConfig(**TINY, seeds=bad)
    assert SweepConfig(**TINY, seeds=[2**63 - 1]).seeds == (2**63 - 1,)  # int64's largest
    with pytest.raises(ConfigError, match="^seeds must be"):
        dnnphase.sweep(**TINY, seeds=0)
    assert seed_list(np.arange(2)) == (0, 1)
    limit = dnnphase.defaults.MAX_SEEDS
    assert len(SweepConfig(**TINY, seeds=limit).seeds) == limit
    with pytest.raises(ConfigError, match=f"^seeds must be at most {limit} seeds"):
        SweepConfig(**TINY, seeds=limit + 1)
    # From Python too, before the seeds are made (10¹² of them would fill the memory).
    with pytest.raises(ConfigError, match=f"^seeds must be at most {limit} seeds"):
        SweepConfig(**TINY, seeds=10**12)


@pytest.mark.parametrize("command", ["sweep", "tune"])
def test_a_huge_seed_count_is_refused_before_the_seeds_are_made(command, tmp_path, capsys):
    """``--seeds 10⁸`` used to build 10⁸ seeds (GiB of memory) before any check."""
    out = tmp_path / "s.nc"
    args = [a if a != "1" or TINY_ARGS[i - 1] != "--seeds" else "100000000"
            for i, a in enumerate(TINY_ARGS)]  # TINY_ARGS with --seeds 100000000
    assert dnnphase_main([command, *args, "-o", str(out)]) == 2
    err = one_line_error(capsys, "dnnphase")
    assert f"seeds must be 1 to {dnnphase.defaults.MAX_SEEDS}" in err and "100000000" in err
    assert listing(tmp_path) == []


@pytest.mark.parametrize("field,value", [("values", "0.1,0.2"), ("values", ["a"]),
                                         ("values", [[0.1], [0.2, 0.3]]), ("alphas", "0,1"),
                                         ("alphas", [None]), ("values", [])])
def test_grids_must_be_numbers_named_by_their_field(field, value):
    with pytest.raises(ConfigError, match=f"^{field} must be"):
        dnnphase.sweep(**TINY, seeds=1, **{field: value})


def test_check_grid_keeps_numbers_and_refuses_text():
    assert check_grid("v", [1, 2.5]) == [1, 2.5] and check_grid("v", 3) == [3]
    assert check_grid("v", np.array([0.1, 0.2])) == [0.1, 0.2]
    with pytest.raises(ConfigError, match="parse_values"):
        check_grid("rows", "0.1,0.2")
    for bad in (["a"], [np.nan], [True], object(), [[1, 2], [3]]):
        with pytest.raises(ConfigError, match="^rows must be one or more finite numbers"):
            check_grid("rows", bad)


# --- the Python API as strict as the command line ----------------------------------------


def test_fit_and_compare_accept_a_path_and_refuse_other_types(tiny_sweep_file):
    from_ds = compare.fit(results.load(tiny_sweep_file))
    for given in (str(tiny_sweep_file), Path(tiny_sweep_file)):
        fit = compare.fit(given)
        np.testing.assert_array_equal(fit["mu_right"].values, from_ds["mu_right"].values)
        assert str(tiny_sweep_file) in fit.attrs["config"]  # the file is the source
    for bad in (None, 3, ["dnn.nc"]):
        with pytest.raises(ConfigError, match="^network must be an xarray Dataset or the path"):
            compare.fit(bad)
    with pytest.raises(ConfigError, match="^spring must be an xarray Dataset"):
        compare.compare(None, tiny_sweep_file)
    with pytest.raises(FileNotFoundError, match="no such result file"):
        compare.fit(str(tiny_sweep_file) + ".missing")


RECORDED_SWEEP = Path(__file__).parents[2] / "figures" / "dnn_dropout.nc"  # record_every


def test_fit_options_of_the_other_fit_and_an_unrecorded_measure_are_refused():
    sweep = results.load(RECORDED_SWEEP)
    with pytest.raises(ConfigError, match="^start applies to the trajectory fit only"):
        compare.fit(sweep, start="network")
    with pytest.raises(ConfigError, match="^horizon applies to the final-curve fit only"):
        compare.fit(sweep, trajectory=True, horizon=10.0)
    # load_curve_epochs holds the first measure only: another one is not fitted silently
    with pytest.raises(ConfigError, match="^measure must be 'trace_ratio' for a trajectory fit"):
        compare.fit(sweep, trajectory=True, measure="fuzziness")


def test_fit_keeps_its_input_and_an_existing_worst_figure(tmp_path, capsys):
    network = tmp_path / "dnn.nc"
    network.write_bytes(RECORDED_SWEEP.read_bytes())
    before = network.read_bytes()
    assert dnnphase_main(["fit", str(network), "--overwrite", "-o", str(network)]) == 2
    assert "output must not be the network sweep it fits" in one_line_error(capsys, "dnnphase")
    assert network.read_bytes() == before
    worst = tmp_path / "f_worst.png"
    worst.write_text("an earlier figure")
    assert dnnphase_main(["fit", str(network), "--trajectory", "-o", str(tmp_path / "f.nc"),
                          "--figure", str(tmp_path / "f.png")]) == 2
    assert "f_worst.png' exists" in one_line_error(capsys, "dnnphase")
    assert worst.read_text() == "an earlier figure"
    assert listing(tmp_path) == ["dnn.nc", "f_worst.png"]
    # An empty figure name was taken for "no figure": the run ended at 0 without one.
    assert dnnphase_main(["fit", str(network), "-o", str(tmp_path / "g.nc"),
                          "--figure", ""]) == 2
    assert "figure must be a file name (got '')" in one_line_error(capsys, "dnnphase")
    assert listing(tmp_path) == ["dnn.nc", "f_worst.png"]


def test_a_process_pool_from_a_script_on_stdin_is_refused_before_it_starts(tmp_path):
    script = textwrap.dedent(f"""
        import dnnphase
        dnnphase.sweep(dataset="gmm", n_train=40, depth=2, width=8, epochs=1, seeds=[0, 1],
                       alphas=[0.0], values=[0.0], models_per_chunk=1, scheduler="processes",
                       workers=2, output={str(tmp_path / 'x.nc')!r})
    """)
    run = subprocess.run([sys.executable, "-"], input=script, capture_output=True, text=True,
                         cwd=Path(__file__).parents[2], timeout=300)
    assert run.returncode == 1
    last = run.stderr.strip().splitlines()[-1]
    assert last.startswith("phasecore.checks.ConfigError: scheduler 'processes' cannot start "
                           "its workers") and "scheduler='serial'" in last
    assert "BrokenProcessPool" not in run.stderr and listing(tmp_path) == []


def test_pool_check_passes_for_a_script_file_and_other_schedulers(monkeypatch):
    main = sys.modules["__main__"]
    monkeypatch.setattr(main, "__file__", "<stdin>", raising=False)
    check_pool_can_start("serial")  # no pool: nothing to re-import
    with pytest.raises(ConfigError, match="save the script to a file"):
        check_pool_can_start("processes")
    monkeypatch.setattr(main, "__file__", os.path.abspath(__file__))
    check_pool_can_start("processes")


# --- messages ----------------------------------------------------------------------------


def test_messages_read_well_to_a_command_line_user(tiny_sweep_file, tmp_path, capsys):
    assert dnnphase_main(["fit", str(tiny_sweep_file), "--trajectory", "--horizon", "5",
                          "-o", str(tmp_path / "f.nc")]) == 2
    assert "--horizon applies to the final-curve fit only" in one_line_error(capsys, "dnnphase")
    assert dnnphase_main(["fit", str(tiny_sweep_file), "--start", "network",
                          "-o", str(tmp_path / "f.nc")]) == 2
    assert "--start applies to the trajectory fit only" in one_line_error(capsys, "dnnphase")
    assert dnnphase_main(["sweep", *TINY_ARGS, "--knob", "batch_size", "--batch-size", "10",
                          "-o", str(tmp_path / "b.nc")]) == 2
    err = one_line_error(capsys, "dnnphase")
    assert "batch_size must be left unset (full batch) when it is the swept knob" in err
    assert "None" not in err
    assert listing(tmp_path) == []


# --- estimates ---------------------------------------------------------------------------


def test_estimate_counts_startup_pool_and_the_machines_load(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)  # the CPU's chunks
    quick = presets.PRESETS["quick"]
    idle = presets.stage_seconds(quick, cores=2, load=0.0)
    busy = presets.stage_seconds(quick, cores=2, load=2.0)
    assert len(idle) == 3 and busy[1] > 1.9 * (idle[1] - presets.POOL_START_SECONDS)
    assert presets.expected_seconds(quick, cores=2, load=0.0) == pytest.approx(
        presets.STARTUP_SECONDS + sum(idle))
    # 24 models in chunks of 3 on 2 workers: 4 rounds of 3 models, plus the pool's start
    assert idle[1] == pytest.approx(4 * (3 * quick["seconds_per_model"] + presets.CHUNK_SECONDS)
                                    + presets.POOL_START_SECONDS)
    serial = presets.stage_seconds(quick, cores=2, load=0.0, serial=True)
    assert serial[1] == pytest.approx(8 * (3 * quick["seconds_per_model"]
                                           + presets.CHUNK_SECONDS))
    # On CUDA: the networks at the GPU's measured speed, in the GPU's chunks (Fig. 1c: 960
    # models in 3 chunks of 320), whatever the CPU's load; the analysis stays the CPU's.
    paper = presets.PRESETS["paper"]
    gpu = presets.stage_seconds(paper, cores=2, load=2.0, serial=True, on_cuda=True)
    assert gpu[1] == pytest.approx(3 * presets.GPU_CHUNK_SECONDS
                                   + 960 * presets.GPU_SECONDS_PER_MODEL)
    assert gpu[2] == presets.stage_seconds(paper, cores=2, load=2.0)[2]


def test_progress_of_unequal_stages_is_weighted_by_their_estimated_work():
    stages = presets.stage_seconds(presets.PRESETS["paper"], cores=2, load=0.0)
    weights = [len(stages) * t / sum(stages) for t in stages]
    assert weights[0] < 0.01 * len(stages)  # the chain is a sliver of the paper preset
    stream = io.StringIO()
    progress = Progress(len(stages), label="reproduce paper", stream=stream, unit="stage")
    progress.line_interval = 0.0  # every line, to see the first stage's
    with weighted(progress, weights[0]):
        progress.advance()
    with weighted(progress, weights[1]):
        for _ in range(4):  # a sweep of four chunks
            progress.advance(0.25)
    assert progress.done == pytest.approx(weights[0] + weights[1])
    first = stream.getvalue().splitlines()[1]
    assert "(0.0%)" in first or "(0.1%)" in first, first
    progress.advance()  # outside a stage: one plain stage again
    assert progress.done == pytest.approx(weights[0] + weights[1] + 1)
    with weighted(progress, 100.0):  # never past the total
        progress.advance()
    assert progress.done == progress.total


def test_another_configurations_chunks_are_refused_before_the_scheduler_is_chosen(tmp_path,
                                                                                 capsys):
    """Resuming into another configuration's chunks printed the scheduler's choice first
    ("dropout sweep: serial: a pool of 2 would take ..."), then the refusal: two lines."""
    from phasecore.store import ChunkStore

    out = tmp_path / "s.nc"
    ChunkStore(out).open({"another": "configuration"}, 2)
    before = listing(tmp_path)
    assert dnnphase_main(["sweep", "--dataset", "digits", "--n-train", "300", "--epochs", "1",
                          "--seeds", "1", "--alpha", "0", "--values", "0,0.1", "-o",
                          str(out)]) == 2
    assert "different configuration" in one_line_error(capsys, "dnnphase")
    assert listing(tmp_path) == before
