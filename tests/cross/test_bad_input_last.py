"""The last bad inputs (issue 39 §4): a silent wrong answer, the training entry points, the
chain's Python entry points, FIFOs, full disks and options that do nothing. Each a one-line
error naming the parameter (or a correct result with a warning), and nothing left behind."""

import re

import numpy as np
import pytest
import torch

import dnnphase
from dnnphase.cli import main as dnnphase_main
from phasecore import results
from phasecore.checks import ConfigError

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


# --- 2. the training entry points ---------------------------------------------------------


def _data(n=40, d=4):
    rng = np.random.default_rng(0)
    return rng.standard_normal((n, d)).astype(np.float32), np.arange(n) % 2


def _knobs(**change):
    from dnnphase.training.train import ModelKnobs

    fields = dict(seeds=(0,), alpha=(0.0,), dropout=(0.0,), lr=(0.01,), label_noise=(0.0,),
                  batch_size=(None,))
    return ModelKnobs(**{**fields, **change})


def _nan(x):
    x = x.copy()
    x[3, 1] = np.nan
    return x


@pytest.mark.parametrize("inputs,fragment", [
    (lambda x, y: (_nan(x), y), "^x_train must be finite numbers"),
    (lambda x, y: (x, np.zeros_like(y)), "^y_train must be labels of at least 2 classes"),
    (lambda x, y: (x, y.astype(float)), "^y_train must be integer class labels"),
    (lambda x, y: (x, y + 0.5), "^y_train must be integer class labels"),
    (lambda x, y: (x, y * 10**9), "^y_train must be class labels 0..C-1 with C <= N"),
    (lambda x, y: (x, y, x, y + 1), r"^y_test must be labels of the training classes, in \[0, "
                                    r"2\)"),
    (lambda x, y: (x, y, _nan(x), y), "^x_test must be finite numbers"),
    (lambda x, y: (x, y, x[:, :3], y), r"^x_test must be an \(N', 4\) array"),
    (lambda x, y: (x, y, x, None), "^y_test must be given with x_test"),
    (lambda x, y: (torch.empty(40, 4, device="meta"), y), "^x_train must be a tensor with data"),
    (lambda x, y: (x, torch.empty(40, dtype=torch.long, device="meta")),
     "^y_train must be a tensor with data"),
    (lambda x, y: (x[:0], y[:0]), r"^x_train must be an \(N, d\) array with N >= 2"),
    (lambda x, y: ("data.npy", y), "^x_train must be an array or tensor of numbers"),
    (lambda x, y: (x.astype(np.complex64), y), "^x_train must be an array or tensor of real"),
])
@pytest.mark.parametrize("entry", ["train_ensemble", "train_models"])
def test_training_refuses_data_measure_model_refuses(inputs, fragment, entry):
    """A NaN feature, one class, float or fractional labels and test labels beyond the
    training classes trained without a word (or stopped with torch's message)."""
    from dnnphase.training import train

    args = inputs(*_data())
    args = args + (None,) * (4 - len(args))
    kw = dict(seeds=[0]) if entry == "train_ensemble" else dict(knobs=_knobs())
    with pytest.raises(ConfigError, match=fragment):
        getattr(train, entry)(*args, config=train.TrainConfig(epochs=1), **kw)


@pytest.mark.parametrize("call,fragment", [
    (lambda t, x, y: t.train_ensemble(x, y, seeds=[0], config={"epochs": 1}),
     "^config must be a TrainConfig"),
    (lambda t, x, y: t.train_models(x, y, knobs=_knobs(), config={"epochs": 1}),
     "^config must be a TrainConfig"),
    (lambda t, x, y: t.train_models(x, y, knobs="dropout"), "^knobs must be a ModelKnobs"),
    (lambda t, x, y: t.train_models(x, y, knobs={"seeds": [0]}), "^knobs must be a ModelKnobs"),
    (lambda t, x, y: t.train_ensemble(x, y, seeds=[0.5]), "^seeds must be one integer"),
    (lambda t, x, y: t.train_ensemble(x, y, seeds=3), "^seeds must be one integer"),
    (lambda t, x, y: t.train_ensemble(x, y, seeds="01"), "^seeds must be one integer"),
    (lambda t, x, y: t.train_ensemble(x, y, seeds=[True]), "^seeds must be one integer"),
    (lambda t, x, y: _knobs(seeds=(0.5,)), "^knobs.seeds must be one integer"),
    (lambda t, x, y: _knobs(seeds=(0, 1)), r"^knobs must be one value per model \(2\)"),
    (lambda t, x, y: t.train_ensemble(x, y, seeds=[0], record_fn=3),
     "^record_fn must be None or a function"),
])
def test_training_names_a_wrong_type(call, fragment):
    """A dict where a configuration goes, a string for knobs and non-integer seeds reached
    AttributeError (or trained with int(0.5) = 0)."""
    from dnnphase.training import train

    with pytest.raises(ConfigError, match=fragment):
        call(train, *_data())


# --- 3. the chain's Python entry points ---------------------------------------------------


@pytest.mark.parametrize("axis", [{"mu_right": [0, 0.1]}, ("mu_right",),
                                  ("mu_right", [0, 0.1], 3), None])
def test_phase_diagram_names_a_malformed_axis(axis):
    """A dict, a 1- or 3-tuple or None was unpacked (ValueError / TypeError)."""
    import springblock as sb

    with pytest.raises(ConfigError, match=r"^rows must be a \(name, values\) pair"):
        sb.phase_diagram(axis, ("noise", [0, 0.1]), blocks=3, steps=10)
    with pytest.raises(ConfigError, match=r"^cols must be a \(name, values\) pair"):
        sb.phase_diagram(("noise", [0, 0.1]), axis, blocks=3, steps=10)


def test_numpy_integers_are_plain_numbers_in_a_configuration():
    """np.int8(100) blocks overflowed the memory estimate (100 * 100 in int8)."""
    import springblock as sb
    from dnnphase.sweeps.sweep import SweepConfig

    ds = sb.simulate(blocks=np.int8(100), steps=np.int16(20), seeds=np.uint8(2))
    plain = sb.simulate(blocks=100, steps=20, seeds=2)
    assert ds.attrs["config"] == plain.attrs["config"]
    np.testing.assert_array_equal(ds["load_curve"], plain["load_curve"])
    config = SweepConfig(epochs=np.int16(3), n_train=np.int64(40))
    assert type(config.epochs) is int and type(config.n_train) is int


@pytest.mark.parametrize("call,name", [
    (lambda sb, dp: sb.simulate(blocks=3, steps=10, quiet="no"), "quiet"),
    (lambda sb, dp: sb.simulate(blocks=3, steps=10, quiet=1), "quiet"),
    (lambda sb, dp: sb.simulate(blocks=3, steps=10, theory_prediction="no"),
     "theory_prediction"),
    (lambda sb, dp: sb.simulate(blocks=3, steps=10, overwrite="no"), "overwrite"),
    (lambda sb, dp: sb.phase_diagram(("noise", [0, 0.1]), ("mu_right", [0, 0.1]), blocks=3,
                                     steps=10, quiet="no"), "quiet"),
    (lambda sb, dp: dp.sweep(**{**SWEEP, "quiet": "no"}), "quiet"),
    (lambda sb, dp: dp.sweeps.tune.tune(quiet="no"), "quiet"),
    (lambda sb, dp: dp.compare.reproduce("quick", "out", quiet="yes"), "quiet"),
    (lambda sb, dp: dp.compare.fit_chain("x.nc", trajectory="no"), "trajectory"),
])
def test_a_yes_no_option_is_a_bool(tmp_path, monkeypatch, call, name):
    """quiet="no" meant quiet (a non-empty string is true)."""
    import dnnphase.compare
    import dnnphase.sweeps.tune
    import springblock as sb

    monkeypatch.chdir(tmp_path)
    with pytest.raises(ConfigError, match=f"^{name} must be True or False"):
        call(sb, dnnphase)
    assert listing(tmp_path) == []


# --- 5. an input that is not a regular file -----------------------------------------------


def test_a_fifo_given_as_an_input_is_refused_not_waited_on(tmp_path):
    """A named pipe as the input of plot, fit and compare hung (deaf to SIGTERM)."""
    import json
    import os
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    pipe = tmp_path / "pipe.nc"
    os.mkfifo(pipe)
    spring = root / "figures" / "spring_phase.nc"
    commands = [("springblock.cli", ["plot", str(pipe), "-o", str(tmp_path / "a.png")]),
                ("dnnphase.cli", ["plot", str(pipe), "-o", str(tmp_path / "b.png")]),
                ("dnnphase.cli", ["fit", str(pipe), "-o", str(tmp_path / "c.nc")]),
                ("dnnphase.cli", ["compare", str(spring), str(pipe), "-o",
                                  str(tmp_path / "d")])]
    # One process calls each command's main in turn (its imports paid once), each one's exit
    # code and stderr a JSON line; a command that waits on the pipe stops it at the timeout.
    driver = """
import contextlib, importlib, io, json, sys
for module, args in json.loads(sys.argv[1]):
    err, code = io.StringIO(), None
    with contextlib.redirect_stderr(err):
        try:
            code = importlib.import_module(module).main(args)
        except SystemExit as stop:
            code = stop.code
    print(json.dumps([code, err.getvalue()]), flush=True)
"""
    env = {**os.environ, "PYTHONPATH": str(root)}
    done = subprocess.run([sys.executable, "-c", driver, json.dumps(commands)], env=env,
                          cwd=tmp_path, capture_output=True, text=True, timeout=240,
                          check=False)
    assert done.returncode == 0, done.stderr  # a traceback: no command may raise
    answers = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("[")]
    assert len(answers) == len(commands), done.stdout + done.stderr
    for code, err in answers:
        assert code == 2 and "\n" not in err.strip(), err
        assert "must be a regular file" in err and "named pipe (FIFO)" in err, err
    assert listing(tmp_path) == ["pipe.nc"]


# --- 6. a full disk -------------------------------------------------------------------------


def _full(monkeypatch, exc):
    """Every NetCDF write fails with ``exc``, and the file system has 0 bytes free."""
    import os

    import xarray as xr

    def write(self, *args, **kwargs):
        raise exc

    class Full:
        f_bavail, f_frsize, f_blocks = 0, 4096, 1000

    monkeypatch.setattr(xr.Dataset, "to_netcdf", write)
    return monkeypatch.setattr(os, "statvfs", lambda path: Full())


def test_a_full_disk_is_named_before_any_work(tmp_path, capsys, monkeypatch):
    """A full disk was reported as "Permission denied" by simulate and save."""
    import springblock as sb
    from springblock.cli import main as springblock_main

    ds = sb.simulate(blocks=3, steps=10)
    _full(monkeypatch, OSError(28, "No space left on device"))
    with pytest.raises(ConfigError, match="cannot be written: no space left on device"):
        sb.save(ds, tmp_path / "x.nc")
    assert springblock_main(["simulate", "--blocks", "3", "--steps", "10", "-o",
                             str(tmp_path / "s.nc")]) == 2
    assert "no space left on device" in one_line_error(capsys, "springblock")
    assert listing(tmp_path) == []


@pytest.mark.parametrize("exc", [RuntimeError("NetCDF: HDF error"),
                                 OSError(28, "No space left on device")])
def test_a_write_that_runs_out_of_space_says_so(tmp_path, monkeypatch, exc):
    """A partial write on a full disk said only "NetCDF: HDF error"."""
    import springblock as sb
    from phasecore.results import OutputWriteError, write_atomic

    ds = sb.simulate(blocks=3, steps=10)
    _full(monkeypatch, exc)
    with pytest.raises(OutputWriteError, match=r"x.nc' could not be written: no space left on "
                                               r"device \(.*\); nothing was left"):
        write_atomic(ds, tmp_path / "x.nc")
    assert listing(tmp_path) == []


def test_a_chain_too_large_for_one_seed_names_blocks(capsys):
    """--blocks 1000000000 blamed --seeds (one seed alone is the chain's size)."""
    from springblock.cli import main as springblock_main

    for command in (["simulate"], ["phase", "--seeds", "1"]):
        assert springblock_main([*command, "--blocks", "1000000000", "-o", "x.nc"]) == 2
        err = one_line_error(capsys, "springblock")
        assert "one seed with blocks = 1000000000" in err and "(fewer blocks" in err


def test_fit_with_a_figure_writes_all_or_none(one_seed, tmp_path, monkeypatch, capsys):
    """fit --figure on a full disk kept the .nc it wrote, so the rerun refused to
    overwrite it."""
    import errno

    from phasecore import panels

    def full(fig, path, **kw):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(panels.plt.Figure, "savefig", full)
    args = ["fit", str(one_seed), "-o", str(tmp_path / "f.nc"), "--figure",
            str(tmp_path / "f.png")]
    assert dnnphase_main(args) == 2
    assert "f.png' could not be written" in one_line_error(capsys, "dnnphase")
    assert listing(tmp_path) == []
    monkeypatch.undo()
    assert dnnphase_main(args) == 0  # the rerun, once there is space
    assert listing(tmp_path) == ["f.nc", "f.png"]


# --- 7. options that do nothing, and a search too wide -------------------------------------


@pytest.mark.parametrize("prog,args,fragment", [
    ("springblock", ["simulate", "--stop-window", "5"], "--stop-window applies with --stop-tol"),
    ("springblock", ["simulate", "--noise-decay", "0.1"], "noise_decay must be 0 for a chain "
                                                           "without noise"),
    ("springblock", ["phase", "--noise-decay", "0.1", "--rows", "mu_right=0:0.1:2", "--cols",
                     "mu_left=0.2:0.3:2"], "noise_decay applies to a chain with noise"),
    ("springblock", ["phase", "--rows", "mu_right=0,,0.1", "--cols", "noise=0:0.1:2"],
     "mu_right must be a comma-separated list of numbers without empty entries"),
    ("dnnphase", ["sweep", "--values", "0.1,,0.2"], "values must be a comma-separated list of "
                                                    "numbers without empty entries"),
    ("dnnphase", ["sweep", "--alpha", "0,"], "without empty entries"),
    ("dnnphase", ["tune", "--knob", "dropout", "--low", "0", "--high", "0.2",
                  "--values-per-round", "1000000"], "values_per_round must be an integer in "
                                                    "2..100"),
])
def test_an_option_that_would_do_nothing_is_refused(tmp_path, capsys, prog, args, fragment):
    """--stop-window without --stop-tol, --noise-decay with zero noise and --values 0.1,,0.2
    passed silently; tune --values-per-round 1000000 started 125 000 chunks."""
    from springblock.cli import main as springblock_main

    main = springblock_main if prog == "springblock" else dnnphase_main
    assert main([*args, "-o", str(tmp_path / "x.nc")]) == 2
    assert fragment in one_line_error(capsys, prog)
    assert listing(tmp_path) == []


def test_noise_decay_without_noise_is_refused_from_python_too():
    import springblock as sb

    with pytest.raises(ConfigError, match="^noise_decay must be 0 for a chain without noise"):
        sb.simulate(blocks=3, steps=10, noise_decay=0.1)
    assert sb.simulate(blocks=3, steps=10, noise=0.01, noise_decay=0.1)["load_curve"].size
    ok = sb.phase_diagram(("noise", [0.0, 0.01]), ("mu_right", [0.0, 0.1]), blocks=3, steps=10,
                          seeds=1, noise_decay=0.1)  # noise is an axis: it decays where > 0
    assert ok["load_curve"].size


# --- 8. what a newcomer sees on a terminal --------------------------------------------------


def test_progress_on_a_terminal_counts_whole_units_and_ends_full(monkeypatch):
    """Stage messages were printed onto the end of the bar, counts showed as '0.2/3 stages'
    and '100000.0/100000 steps', and a stale 89 % bar stayed above the final report."""
    import io
    import sys

    from phasecore.progress import Progress, overall_progress, say, weighted

    class Terminal(io.StringIO):
        def isatty(self):
            return True

    err, out = Terminal(), Terminal()
    monkeypatch.setattr(sys, "stderr", err)
    monkeypatch.setattr(sys, "stdout", out)
    with overall_progress(3, "job") as progress:
        with weighted(progress, 0.9):  # estimated weights that sum short of the stages
            progress.advance()
        say("a stage message")
        with weighted(progress, 1.2):
            progress.advance()
    steps = Progress(100000, 0, "chain", unit="step")
    steps.advance(100000)
    steps.close()
    assert out.getvalue() == "a stage message\n"  # above the bar (tqdm.write), not on it
    bars = err.getvalue()
    assert "job: 100%" in bars and "/3" not in bars and "stages" not in bars
    assert "100000/100000 steps" in bars and "100000.0" not in bars


# --- more found by trying --------------------------------------------------------------------


@pytest.mark.parametrize("options,fragment", [
    (dict(trajectory=True, banana=1), "^fit option must be one of acceptable_chi2, .*banana"),
    (dict(banana=1), "^fit option must be one of bounds, grid, horizon, .*banana"),
    (dict(trajectory=True, weighted="no"), "^weighted must be True or False"),
])
def test_fit_chain_names_an_option_its_fit_does_not_take(one_seed, options, fragment):
    """A misspelt option reached the fitter's TypeError; weighted="no" meant weighted."""
    from dnnphase.compare import fit_chain

    with pytest.raises(ConfigError, match=fragment):
        fit_chain(one_seed, **options)


def test_trajectory_weights_of_another_shape_are_named():
    """numpy's broadcast error before."""
    from springblock import fit

    with pytest.raises(ConfigError, match=r"^weights must be shaped like the curves \(3, 8\)"):
        fit.fit_trajectory(np.random.default_rng(0).random((3, 8)), [1.0, 2.0, 3.0],
                           weights=np.ones((2, 8)))


def test_measure_model_names_a_layer_given_as_text():
    """layers="blocks" was read as six one-letter names (and "0" as the module 0)."""
    from dnnphase.measures.load_curve import measure_model

    model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 3))
    data = (torch.randn(20, 4), torch.arange(20) % 2)
    with pytest.raises(ConfigError, match=r"^layers must be a list of module names \(one "
                                          r"name as a list: \['name'\]\) \(got '0'\)"):
        measure_model(model, data, layers="0")
    assert measure_model(model, data, layers=["0"])["load_curve"].sizes["layer"] == 1


@pytest.mark.parametrize("measures", ["trace_ratio,,ncc", "trace_ratio,", ","])
def test_an_empty_measure_name_is_refused_as_every_list_option_refuses_one(measures, tmp_path,
                                                                           capsys):
    """`--measures trace_ratio,,ncc` ran with the empty name dropped; `--values 1,,2` and
    every other list option refuse it."""
    out = tmp_path / "s.nc"
    assert dnnphase_main(["sweep", "--dataset", "gmm", "--epochs", "1", "--seeds", "1",
                          "--measures", measures, "-o", str(out)]) == 2
    assert "measures" in one_line_error(capsys, "dnnphase")
    assert not out.exists()


@pytest.mark.parametrize("depth", ["0", "1"])
def test_a_depth_below_two_gets_the_sweeps_range_whatever_it_is(depth, tmp_path, capsys):
    """`--depth 0` said ">= 1" (the network's range), `--depth 1` then ">= 2" (the sweep's)."""
    assert dnnphase_main(["sweep", "--dataset", "gmm", "--epochs", "1", "--seeds", "1",
                          "--depth", depth, "-o", str(tmp_path / "s.nc")]) == 2
    assert "depth must be an integer >= 2" in one_line_error(capsys, "dnnphase")


def test_compare_refuses_a_files_name_as_its_output_folder(tmp_path, capsys):
    """``-o rep.txt`` made a folder named rep.txt: compare's output is a folder."""
    code = dnnphase_main(["compare", str(tmp_path / "spring.nc"), str(tmp_path / "net.nc"),
                          "-o", str(tmp_path / "rep.txt")])
    assert code == 2
    err = one_line_error(capsys, "dnnphase")
    assert "output must be a folder" in err and "rep.txt" in err
    assert listing(tmp_path) == []
