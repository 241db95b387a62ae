"""More bad input (issue 31 §3): each a one-line error naming the parameter, or a correct
result with a warning, and nothing left behind — no half-written output, no ``.parts``."""

import errno

import pytest

import dnnphase
import springblock as sb
from dnnphase.cli import main as dnnphase_main
from phasecore import results
from phasecore.checks import ConfigError
from springblock.cli import main as springblock_main

TINY = dict(dataset="gmm", n_train=40, depth=2, width=8, epochs=2, measures=["trace_ratio"])
TINY_ARGS = ["--dataset", "gmm", "--n-train", "40", "--depth", "2", "--width", "8",
             "--epochs", "1", "--seeds", "1", "--measures", "trace_ratio", "--scheduler",
             "serial", "--quiet"]
CHAIN = ["--blocks", "3", "--steps", "200", "--seeds", "2", "--quiet"]


def one_line_error(capsys, prog: str) -> str:
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"{prog}: error:") and "\n" not in err, err
    return err


def listing(folder):
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*"))


@pytest.fixture(scope="module")
def diagrams(tmp_path_factory):
    """A chain diagram made without --mu-left-ratio (mu<- follows mu->) and a sweep."""
    folder = tmp_path_factory.mktemp("diagrams")
    spring, network = folder / "sp.nc", folder / "net.nc"
    assert springblock_main(["phase", "--rows", "mu_right=0:0.03:2", "--cols",
                             "noise=0:0.02:2", *CHAIN, "-o", str(spring)]) == 0
    dnnphase.sweep(knob="dropout", values=[0.0, 0.2], alphas=[0.0, 1.0], seeds=2,
                   output=network, **TINY)
    return spring, network


# --- compare: every file or none ----------------------------------------------------------


def test_compare_draws_a_chain_made_without_mu_left_ratio(diagrams, tmp_path, capsys):
    """figures.chain_setting failed on mu_left None (a TypeError after report.nc was
    written, and the rerun was then refused)."""
    spring, network = diagrams
    assert dnnphase_main(["compare", str(spring), str(network), "-o", str(tmp_path / "c")]) == 0
    assert {"report.nc", "phase.png"} <= set(listing(tmp_path / "c"))
    from dnnphase.compare.figures.comparison import chain_setting

    assert chain_setting(sb.load(spring)).startswith(", mu<- = mu->")


def test_compare_whose_figure_fails_leaves_no_report(diagrams, tmp_path, monkeypatch, capsys):
    from phasecore import panels

    def full(fig, path, **kw):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(panels.plt.Figure, "savefig", full)
    spring, network = diagrams
    assert dnnphase_main(["compare", str(spring), str(network), "-o",
                          str(tmp_path / "c")]) == 2
    assert "phase.png' could not be written" in one_line_error(capsys, "dnnphase")
    assert listing(tmp_path) == []  # no report, no figure, no folder made for them


# --- a full disk: the output named, nothing left under its name --------------------------


def _full_disk(monkeypatch, exc):
    import xarray as xr

    def write(self, *args, **kwargs):
        raise exc

    monkeypatch.setattr(xr.Dataset, "to_netcdf", write)


@pytest.mark.parametrize("exc", [RuntimeError("NetCDF: HDF error"),
                                 OSError(errno.ENOSPC, "No space left on device")])
def test_a_full_disk_is_one_line_and_leaves_nothing(tmp_path, capsys, monkeypatch, exc):
    ds = sb.simulate(blocks=3, steps=10)
    _full_disk(monkeypatch, exc)
    with pytest.raises(results.OutputWriteError, match="x.nc' could not be written"):
        sb.save(ds, tmp_path / "x.nc")
    assert springblock_main(["simulate", *CHAIN, "-o", str(tmp_path / "s.nc")]) == 2
    assert "s.nc' could not be written" in one_line_error(capsys, "springblock")
    assert dnnphase_main(["sweep", *TINY_ARGS, "-o", str(tmp_path / "w.nc")]) == 2
    assert "could not be written" in one_line_error(capsys, "dnnphase")
    assert listing(tmp_path) == []  # no result, no temporary file, no .parts


def test_a_full_disk_keeps_finished_chunks_to_resume(tmp_path, monkeypatch):
    """Only the final write fails: the chunks (the work) are kept and named."""
    from phasecore import sweeps

    def full(ds, path, overwrite=False):
        raise results.OutputWriteError(f"output {str(path)!r} could not be written (full)")

    monkeypatch.setattr(sweeps, "save", full)
    with pytest.raises(ConfigError, match=r"the finished work is kept in '.*w.nc.parts'"):
        dnnphase.sweep(output=tmp_path / "w.nc", **TINY)
    monkeypatch.undo()
    dnnphase.sweep(output=tmp_path / "w.nc", **TINY)  # resumes
    assert listing(tmp_path) == ["w.nc"]


# --- the Python API: a path or a configuration of the wrong type ------------------------


@pytest.mark.parametrize("call,fragment", [
    (lambda: dnnphase.sweep(output=123, **TINY), "^output must be a file name"),
    (lambda: sb.load(5), "^path must be a file name"),
    (lambda: sb.simulate(blocks=3, steps=10, output=["x.nc"]), "^output must be a file name"),
    (lambda: dnnphase.sweep({"knob": "dropout"}), "^config must be a SweepConfig"),
    (lambda: sb.simulate({"blocks": 3}), "^config must be a ChainConfig"),
    (lambda: sb.phase_diagram(("noise", [0, 0.1]), ("mu_right", [0, 0.1]), config="c.nc"),
     "^config must be a ChainConfig"),
    (lambda: sb.save({"a": 1}, "x.nc"), "^ds must be an xarray Dataset"),
])
def test_python_api_names_a_wrong_type(tmp_path, monkeypatch, call, fragment):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ConfigError, match=fragment):
        call()
    assert listing(tmp_path) == []


# --- runs that would never end: refused before any work ------------------------------------


def test_a_chain_run_beyond_a_year_is_refused_naming_steps(tmp_path, capsys):
    """``--steps 1e30 --algorithm events`` printed ~1e17 days and ran (silently with
    --quiet or from Python)."""
    for command, fast in (("simulate", ["--noise", "0.1", "--mu-right", "0.1"]),
                          ("phase", ["--rows", "mu_right=0.1:0.2:2", "--cols",
                                     "noise=0.1:0.2:2"])):
        assert springblock_main([command, "--steps", "1e30", *fast, "--algorithm", "events",
                                 "--quiet", "-o", str(tmp_path / "x.nc")]) == 2
        err = one_line_error(capsys, "springblock")
        assert err.startswith("springblock: error: steps is too large:") and \
            "more than the 365 days allowed" in err, err
    with pytest.raises(ConfigError, match="^steps is too large"):
        sb.simulate(steps=10**30, noise=0.1, mu_right=0.1, algorithm="events")
    assert listing(tmp_path) == []


def test_a_sweep_whose_loss_history_cannot_fit_is_refused_naming_epochs(tmp_path, capsys):
    """--epochs 1e12 failed allocating 7-22 TiB for the loss per epoch, leaving .parts."""
    assert dnnphase_main(["sweep", *TINY_ARGS, "--epochs", str(10**12), "-o",
                          str(tmp_path / "w.nc")]) == 2
    assert one_line_error(capsys, "dnnphase").startswith(
        "dnnphase: error: epochs = 1000000000000 (a loss per epoch")
    assert dnnphase_main(["tune", "--knob", "dropout", "--dataset", "gmm", "--epochs",
                          str(10**12), "--quiet", "-o", str(tmp_path / "t.nc")]) == 2
    assert "error: epochs = 1000000000000" in one_line_error(capsys, "dnnphase")
    assert listing(tmp_path) == []


# --- network options that do not apply, or cannot work ------------------------------------


@pytest.mark.parametrize("options,fragment", [
    (["--arch", "mlp", "--channels", "4"], "channels must be left at its default 16 with "
                                           "arch 'mlp'"),
    (["--arch", "linear", "--kernel-size", "5"], "kernel_size must be left at its default 3"),
    (["--arch", "cnn", "--width", "5"], "width must be left at its default 100 with arch 'cnn'"),
    (["--arch", "cnn", "--kernel-size", "99"], "kernel_size must be an odd integer <= 7 (the "
                                               "digits images' shorter side is 8)"),
])
def test_network_options_that_do_not_apply_are_refused(tmp_path, capsys, options, fragment):
    args = ["--dataset", "digits", "--n-train", "40", "--depth", "2", "--epochs", "1",
            "--seeds", "1", "--scheduler", "serial", "--quiet", *options]
    assert dnnphase_main(["sweep", *args, "-o", str(tmp_path / "w.nc")]) == 2
    assert fragment in one_line_error(capsys, "dnnphase")
    assert listing(tmp_path) == []


# --- damaged or edited input files ---------------------------------------------------------


@pytest.mark.parametrize("damage,fragment", [
    (lambda raw: raw[: len(raw) // 2], "is a damaged gzip file"),  # a download cut short
    (lambda raw: b"\x1f\x8b" + bytes(20), "is a damaged gzip file"),
    (lambda raw: __import__("gzip").compress(b"\x00\x00\x08\x03\x00"), "IDX header cut short"),
])
def test_a_damaged_idx_file_is_named(tmp_path, capsys, damage, fragment):
    """A truncated gzipped IDX file was an EOFError traceback."""
    import gzip

    import numpy as np

    arrays = {"train-images-idx3-ubyte": np.zeros((20, 28, 28), np.uint8),
              "train-labels-idx1-ubyte": np.arange(20, dtype=np.uint8) % 10,
              "t10k-images-idx3-ubyte": np.zeros((4, 28, 28), np.uint8),
              "t10k-labels-idx1-ubyte": np.arange(4, dtype=np.uint8)}
    import struct

    for name, a in arrays.items():
        raw = bytes([0, 0, 8, a.ndim]) + struct.pack(f">{a.ndim}I", *a.shape) + a.tobytes()
        (tmp_path / (name + ".gz")).write_bytes(gzip.compress(raw))
    bad = tmp_path / "train-images-idx3-ubyte.gz"
    bad.write_bytes(damage(bad.read_bytes()))
    out = tmp_path / "out"
    out.mkdir()
    assert dnnphase_main(["sweep", "--dataset", "mnist", "--root", str(tmp_path),
                          "--n-train", "20", "--depth", "2", "--epochs", "1", "--seeds", "1",
                          "--quiet", "-o", str(out / "w.nc")]) == 2
    err = one_line_error(capsys, "dnnphase")
    assert "train-images-idx3-ubyte.gz" in err and fragment in err, err
    assert listing(out) == []


def _edited(src, path, drop=(), kind=None):
    import xarray as xr

    ds = xr.load_dataset(src).drop_vars(list(drop))
    if kind is not None:
        ds.attrs["kind"] = kind
    ds.to_netcdf(path)
    return path


@pytest.mark.parametrize("which,drop,kind,fragment", [
    ("spring", ["curvature_scaled"], None, "lacks the variable(s) curvature_scaled"),
    ("spring", ["horizon"], None, "lacks the variable(s) horizon"),
    ("spring", [], "springblock.something", "input must be a result of springblock simulate"),
    ("simulate", [], "springblock.phase_diagram", "not a grid's rows, cols, seed, layer"),
    ("simulate", ["time"], None, "lacks the variable(s) time"),
])
def test_springblock_plot_names_what_an_edited_file_lacks(diagrams, tmp_path, capsys, which,
                                                          drop, kind, fragment):
    src = diagrams[0]
    if which == "simulate":
        src = tmp_path / "sim.nc"
        sb.save(sb.simulate(blocks=3, steps=100, seeds=2, record_every=50), src)
    edited = _edited(src, tmp_path / "e.nc", drop, kind)
    assert springblock_main(["plot", str(edited), "-o", str(tmp_path / "e.png")]) == 2
    assert fragment in one_line_error(capsys, "springblock")
    assert not (tmp_path / "e.png").exists()


@pytest.mark.parametrize("drop,fragment", [
    (["test_accuracy"], "network sweep lacks variables: test_accuracy"),
    (["curvature_scaled"], "network sweep lacks variables: curvature_scaled"),
])
def test_dnnphase_plot_names_what_an_edited_file_lacks(diagrams, tmp_path, capsys, drop,
                                                       fragment):
    edited = _edited(diagrams[1], tmp_path / "e.nc", drop)
    assert dnnphase_main(["plot", str(edited), "-o", str(tmp_path / "e.png")]) == 2
    assert fragment in one_line_error(capsys, "dnnphase")
    assert not (tmp_path / "e.png").exists()


@pytest.mark.parametrize("tolerance", ["1e9", "1", "-0.1", "nan"])
def test_a_linear_band_wider_than_a_parabola_is_refused(diagrams, tmp_path, capsys,
                                                        tolerance):
    spring, network = diagrams
    assert dnnphase_main(["plot", str(network), "--tolerance", tolerance, "-o",
                          str(tmp_path / "p.png")]) == 2
    assert "tolerance must be a number in [0, 1)" in one_line_error(capsys, "dnnphase")
    assert dnnphase_main(["compare", str(spring), str(network), "--tolerance", tolerance,
                          "-o", str(tmp_path / "c")]) == 2
    assert "tolerance must be a number in [0, 1)" in one_line_error(capsys, "dnnphase")
    assert listing(tmp_path) == []


# --- measure_model: inputs and labels that would give a silent NaN or a wrong curve -------


def _small_model():
    import torch

    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 8),
                               torch.nn.ReLU(), torch.nn.Linear(8, 3))


@pytest.mark.parametrize("edit,fragment", [
    (lambda x, y: x.__setitem__((3, 1), float("nan")), r"data must be finite inputs \(got '1 NaN"),
    (lambda x, y: x.__setitem__((0, 0), float("inf")), "data must be finite inputs"),
    (lambda x, y: y.__setitem__(0, 99), "labels must be at least 2 samples of every class .*"
                                        "'class 99 has 1'"),
    (lambda x, y: y.__setitem__(0, -1), r"labels must be class labels >= 0 \(got -1\)"),
    (lambda x, y: y.__setitem__(slice(0, 2), [5, 1]), "class 5 has 1"),
])
def test_measure_model_refuses_what_would_be_a_silent_nan_or_a_wrong_class(edit, fragment):
    import numpy as np

    from dnnphase.measures.load_curve import measure_model

    x = np.random.default_rng(0).normal(size=(30, 4)).astype(np.float32)
    y = np.arange(30) % 3
    edit(x, y)
    with pytest.raises(ConfigError, match=fragment):
        measure_model(_small_model(), (x, y), measures=["trace_ratio"])


def test_measure_model_names_a_meta_device_model():
    import numpy as np

    from dnnphase.measures.load_curve import measure_model

    x, y = np.zeros((6, 4), np.float32), np.arange(6) % 3
    with pytest.raises(ConfigError, match="^model must be a model whose weights are on a real "
                                          "device"):
        measure_model(_small_model().to("meta"), (x, y), measures=["trace_ratio"])


# --- tune ------------------------------------------------------------------------------------


def test_tune_names_values_that_diverged_instead_of_calling_every_value_convex(tmp_path):
    """``tune --high 1e300`` said "convex at every value" when 2 of 3 values diverged."""
    from dnnphase.sweeps.tune import tune

    with pytest.warns(UserWarning, match="2 of 3 values tried gave no finite curvature"):
        ds = tune(knob="lr", low=1e-3, high=1e300, rounds=1, seeds=2, dataset="gmm",
                  n_train=40, depth=2, width=8, epochs=3, scheduler="serial")
    assert "at every value with a finite curvature (2 of 3 values tried" in ds.attrs["note"]


def test_tune_names_a_dict_given_as_its_config():
    from dnnphase.sweeps.tune import tune

    with pytest.raises(ConfigError, match="^config must be a SweepConfig"):
        tune({"knob": "lr"}, knob="lr")


def test_fit_says_where_the_effective_force_is_minus_infinity(diagrams):
    """Chance-level networks wrote effective_force = -inf without a word."""
    import numpy as np
    import xarray as xr

    from dnnphase.compare import fit_chain

    network = xr.load_dataset(diagrams[1])
    curve = network["load_curve"].values
    curve[..., 1:] = 0.0  # all the separation at once: more convex than any equal-force chain
    network["load_curve"].values = curve
    with pytest.warns(UserWarning, match=r"of \d+ cells are more convex than any equal-force"):
        fit = fit_chain(network)
    assert np.isneginf(fit["effective_force"].values).any()


# --- found by trying more bad input ----------------------------------------------------------


@pytest.mark.parametrize("call,fragment", [
    (lambda: sb.simulate(blockz=7), r"^keyword must be a field of ChainConfig \(.*blocks.*\) "
                                    r"\(got 'blockz'\)"),
    (lambda: sb.phase_diagram(("noise", [0]), ("mu_right", [0]), stepz=4),
     "^keyword must be a field of ChainConfig"),
    (lambda: dnnphase.sweep(depthh=3), "^keyword must be a field of SweepConfig"),
    (lambda: dnnphase.sweep(output="o.nc", overwrite="no", **TINY),
     r"^overwrite must be True or False \(got 'no'\)"),
    (lambda: sb.simulate(blocks=3, steps=10, output="o.nc", overwrite=0.0),
     "^overwrite must be True or False"),
])
def test_a_misspelt_keyword_or_a_yes_no_that_is_not_a_bool_is_named(tmp_path, monkeypatch,
                                                                      call, fragment):
    """A misspelt field was a TypeError traceback; overwrite='no' overwrote."""
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ConfigError, match=fragment):
        call()
    assert listing(tmp_path) == []


def test_a_stopping_window_as_long_as_the_run_is_refused(tmp_path, capsys):
    """--stop-window 1000 with --steps 100 ran, and its stopping rule could never act."""
    assert springblock_main(["simulate", "--noise", "0.1", "--steps", "100", "--stop-tol",
                             "0.1", "--stop-window", "1000", "-o", str(tmp_path / "a.nc")]) == 2
    assert "stop_window must be below steps (100) with stop_tol" in one_line_error(
        capsys, "springblock")
    sb.simulate(blocks=3, steps=100, stop_tol=0.1, stop_window=50)  # a shorter one runs
    assert listing(tmp_path) == []


def test_a_tune_interrupted_in_its_first_round_leaves_nothing(tmp_path, monkeypatch):
    """It said both "nothing is kept" and "the finished rounds are kept", and left .parts."""
    from dnnphase.sweeps import tune as tune_module
    from phasecore.sweeps import SweepInterrupted

    def interrupted(*args, **kwargs):
        raise SweepInterrupted("interrupted: no chunk had finished (0/1), so nothing is kept")

    monkeypatch.setattr(tune_module, "sweep", interrupted)
    with pytest.raises(KeyboardInterrupt, match=r"no round had finished either\)$"):
        tune_module.tune(knob="lr", low=1e-3, high=1e-1, rounds=1, seeds=2, dataset="gmm",
                         n_train=40, depth=2, width=8, epochs=2, output=tmp_path / "t.nc")
    assert listing(tmp_path) == []


def test_a_file_where_a_chain_run_keeps_its_state_is_refused(tmp_path, capsys):
    """simulate -o a.nc with a file a.nc.parts ran, wrote a.nc, then failed with a
    NotADirectoryError traceback."""
    (tmp_path / "a.nc.parts").write_text("mine")
    assert springblock_main(["simulate", *CHAIN, "-o", str(tmp_path / "a.nc")]) == 2
    assert "a.nc.parts' is a file where the run keeps its state" in one_line_error(
        capsys, "springblock")
    assert listing(tmp_path) == ["a.nc.parts"] and (tmp_path / "a.nc.parts").read_text() == "mine"
