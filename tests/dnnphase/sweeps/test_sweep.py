"""The network sweep: the Dataset it writes, divergence, chunking, the CLI."""

import json
import re

import numpy as np
import pytest
import torch
import xarray as xr

from dnnphase.cli import main
from dnnphase.sweeps.sweep import SweepConfig, sweep
from dnnphase.training.train import TrainConfig
from phasecore import results
from phasecore.checks import ConfigError
from tests.images import assert_picture

SMALL = dict(dataset="digits", n_train=300, depth=3, width=16, epochs=4, seeds=[0, 1])


@pytest.fixture(scope="module")
def small_sweep():
    return sweep(knob="dropout", values=[0.0, 0.2], alphas=[0.0, 1.0], record_every=2,
                 scheduler="serial",
                 measures=["trace_ratio", "fuzziness", "cdnv", "ncc", "regression"], **SMALL)


def test_small_sweep_has_every_variable_dimension_and_attribute(small_sweep):
    ds = small_sweep
    assert ds["load_curve"].dims == ("alpha", "dropout", "seed", "measure", "layer")
    assert ds["load_curve"].shape == (2, 2, 2, 5, 4)
    for name in ("curvature", "curvature_scaled"):
        assert ds[name].dims == ("alpha", "dropout", "seed", "measure")
    for name in ("test_accuracy", "train_accuracy", "train_loss", "epochs_run", "steps_run",
                 "diverged"):
        assert ds[name].dims == ("alpha", "dropout", "seed")
    assert ds["load_curve_epochs"].dims == ("alpha", "dropout", "seed", "epoch", "layer")
    np.testing.assert_array_equal(ds["epoch"], [0, 2, 4])
    assert ds.attrs["kind"] == "dnnphase.sweep" and ds.attrs["knob"] == "dropout"
    cfg = json.loads(ds.attrs["config"])
    assert cfg["dataset"] == "digits" and cfg["data_seed"] == 0
    assert "torch" in json.loads(ds.attrs["versions"])
    assert np.isfinite(ds["load_curve"]).all() and not ds["diverged"].any()
    assert (ds["steps_run"] == 4).all()  # full batch: one step per epoch
    # the last recorded epoch is the final model, measured the same way
    np.testing.assert_allclose(ds["load_curve_epochs"].isel(epoch=-1),
                               ds["load_curve"].sel(measure="trace_ratio"), rtol=1e-6)


def test_sweep_result_does_not_depend_on_scheduler_or_storage(small_sweep, tmp_path):
    """In memory and serial vs stored in a process pool, same chunks: identical."""
    again = sweep(knob="dropout", values=[0.0, 0.2], alphas=[0.0, 1.0], record_every=2,
                  measures=["trace_ratio", "fuzziness", "cdnv", "ncc", "regression"],
                  output=tmp_path / "s.nc", **SMALL)
    xr.testing.assert_identical(again.drop_attrs(), small_sweep.drop_attrs())
    xr.testing.assert_identical(results.load(tmp_path / "s.nc").drop_attrs(), again.drop_attrs())


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_other_chunk_sizes_give_the_same_results_bit_for_bit_on_a_cpu(dtype):
    """Stack invariance (docs/performance.md): on a CPU a model computes as it does alone,
    whatever shares its stack, so a sweep in chunks of 12 or of 5 is the same bit for bit,
    in float32 too (it once differed at the rounding level: up to 6e-3 in load curves of
    the quick preset after 100 epochs). On CUDA it still does, so the chunk size stays part
    of the configuration."""
    kw = dict(knob="dropout", values=[0.0, 0.2], alphas=[0.0, 1.0], measures=["trace_ratio"],
              scheduler="serial", **{**SMALL, "width": 15, "epochs": 12, "seeds": [0, 1, 2],
                                     "dtype": dtype, "device": "cpu"})
    whole, parts = sweep(models_per_chunk=12, **kw), sweep(models_per_chunk=5, **kw)
    xr.testing.assert_identical(parts.drop_attrs(), whole.drop_attrs())


def test_diverging_learning_rate_is_recorded_not_fatal():
    ds = sweep(knob="lr", values=[1e-3, 1e6], alphas=[1.0], optimizer="sgd", norm="none",
               scheduler="serial",
               measures=["trace_ratio"], **SMALL)
    assert not ds["diverged"].sel(lr=1e-3).any()
    assert ds["diverged"].sel(lr=1e6).all()
    assert set(ds["diverged_reason"].sel(lr=1e6).values.ravel()) <= {"nan", "inf", "exploded"}
    assert (ds["diverged_reason"].sel(lr=1e-3) == "").all()
    assert np.isnan(ds["load_curve"].sel(lr=1e6)).all()
    assert np.isnan(ds["test_accuracy"].sel(lr=1e6)).all()
    assert np.isfinite(ds["load_curve"].sel(lr=1e-3)).all()


def test_exploding_adam_is_diverged_not_a_curvature():
    """Adam at lr 1e6 does not give NaN, it gives a huge loss and chance accuracy."""
    ds = sweep(knob="lr", values=[1e6], alphas=[0.0], measures=["trace_ratio"],
               scheduler="serial", **SMALL)
    assert ds["diverged"].all() and (ds["diverged_reason"] == "exploded").all()
    assert np.isnan(ds["curvature_scaled"]).all()


def test_batch_size_knob_records_steps():
    ds = sweep(knob="batch_size", values=[50, 300], alphas=[0.0], measures=["trace_ratio"],
               scheduler="serial",
               **SMALL)
    np.testing.assert_array_equal(ds["steps_run"].sel(batch_size=50), 4 * 6)
    np.testing.assert_array_equal(ds["steps_run"].sel(batch_size=300), 4)


@pytest.mark.parametrize("changes,fragment", [
    (dict(knob="momentum"), "knob must be one of"),
    (dict(dataset="imagenet"), "dataset must be one of"),
    (dict(measures=["entropy"]), "measures must be one or more of trace_ratio"),
    (dict(alphas=[1.5]), "alpha must be"),
    (dict(knob="dropout", values=[1.0]), "values of dropout must be in [0, 1)"),
    (dict(knob="lr", values=[0.0]), "values of lr must be > 0"),
    (dict(epochs=0), "epochs must be an integer >= 1"),
    (dict(width=0), "width must be"),
    (dict(depth=0), "depth must be"),
    (dict(batch_size=0), "batch_size must be"),
    (dict(norm="layernorm"), "norm must be one of batchnorm, scale, none (got 'layernorm')"),
    (dict(norm=False), "norm must be one of batchnorm, scale, none (got False)"),
    (dict(weight_init="xavier"), "weight_init must be one of default, orthogonal"),
])
def test_bad_configuration_is_refused(changes, fragment):
    with pytest.raises(ConfigError, match=re.escape(fragment)):
        SweepConfig(**{**SMALL, **changes})


def test_batch_size_larger_than_training_set_is_refused_before_training():
    with pytest.raises(ConfigError, match="at most the training-set size 300"):
        sweep(knob="batch_size", values=[20, 500], alphas=[0.0], **SMALL)


def test_cli_sweep_and_plot(tmp_path, capsys):
    out = tmp_path / "dnn.nc"
    args = ["sweep", "--knob", "label_noise", "--values", "0,0.5", "--alpha", "0", "--seeds", "1",
            "--dataset", "digits", "--n-train", "200", "--depth", "2", "--width", "8",
            "--epochs", "2", "--measures", "trace_ratio", "--scheduler", "serial", "--quiet",
            "-o", str(out)]
    assert main(args) == 0
    ds = results.load(out, kind="dnnphase.sweep")
    assert ds["load_curve"].dims == ("alpha", "label_noise", "seed", "measure", "layer")
    assert main(args) == 2 and "exists" in capsys.readouterr().err
    image = tmp_path / "dnn.png"
    assert main(["plot", str(out), "-o", str(image)]) == 0
    assert_picture(image)
    assert main(["plot", str(out), "-o", str(tmp_path / "x.png"), "--measure", "cdnv"]) == 2


@pytest.mark.parametrize("args,fragment", [
    (["--knob", "momentum"], "knob must be one of"),
    (["--dataset", "imagenet"], "dataset must be one of"),
    (["--alpha", "2"], "alpha must be"),
    (["--values", "0:x:3"], "start:stop:count"),
    (["--dataset", "mnist", "--root", "/nonexistent"], "root"),
    (["--lr", "-1"], "lr must be > 0"),
    (["--lr", "inf"], "lr must be > 0 and finite (got inf)"),
    (["--patience", "0", "--rel-tol", "0.5"], "rel_tol changes nothing with patience 0"),
    (["--knob", "dropout", "--dropout", "0.2"], "dropout must be left at its default 0.0"),
    (["--knob", "lr", "--lr", "0.01"], "lr must be left at its default"),
    (["--scheduler", "threads"], "scheduler must be one of auto, serial, processes"),
    (["--workers", "0"], "workers must be an integer >= 1"),
    (["--models-per-chunk", "0"], "models_per_chunk must be an integer >= 1"),
    (["--measures", "trace_ratio,trace_ratio"], "measures must be distinct"),
    (["--values", "0.1:0.1:3"], "values must be distinct"),
    (["--alpha", "0,0"], "alphas must be distinct"),
    (["--record-every", "5"], "record_every must be an integer in 0..epochs (1)"),
    (["--scheduler", "serial", "--workers", "2"], "workers must be left unset"),
    (["--epochs", "x"], "argument --epochs: invalid int value"),
    (["--norm", "bn"], "norm must be one of batchnorm, scale, none (got 'bn')"),
    (["--weight-init", "xavier"], "weight_init must be one of default, orthogonal"),
    (["--no-batchnorm"], "unrecognized arguments: --no-batchnorm"),
    (["--depth", "1"], "depth must be an integer >= 2 (a load curve's curvature needs"),
    # seeds are labelled in int64: 2**63 - 1 and 2**63 would both read as 9.22e18
    (["--seeds", "2", "--first-seed", str(2**63 - 1)],
     f"first-seed must be at most 2**63 - seeds = {2**63 - 2}"),
])
def test_cli_bad_input_exits_2_before_training(tmp_path, capsys, args, fragment):
    out = tmp_path / "x.nc"
    epochs = [] if "--epochs" in args else ["--epochs", "1"]
    try:
        assert main(["sweep", *args, *epochs, "-o", str(out)]) == 2
    except SystemExit as exit_:  # argparse's own checks (types) exit from the parser
        assert exit_.code == 2
    err = capsys.readouterr().err.strip()
    assert fragment in err and err.startswith("dnnphase: error:") and "\n" not in err
    assert not out.exists()


def test_norm_and_weight_init_reach_the_trainer(tmp_path, monkeypatch):
    """--norm / --weight-init (and Fig. 5(a)'s data set) travel from the command line
    through SweepConfig to the trainer and into the stored configuration."""
    from dnnphase.sweeps import sweep as phase

    seen, train = [], phase.train_models

    def spy(*args, **kwargs):
        seen.append((kwargs["network"].norm, kwargs["network"].weight_init))
        return train(*args, **kwargs)

    monkeypatch.setattr(phase, "train_models", spy)
    out = tmp_path / "lin.nc"
    assert main(["sweep", "--knob", "lr", "--values", "0.001", "--alpha", "1", "--seeds", "1",
                 "--dataset", "orthogonal", "--depth", "2", "--width", "8", "--epochs", "2",
                 "--optimizer", "sgd", "--norm", "scale", "--weight-init", "orthogonal",
                 "--measures", "trace_ratio", "--scheduler", "serial", "--quiet",
                 "-o", str(out)]) == 0
    assert seen == [("scale", "orthogonal")]
    cfg = json.loads(results.load(out, kind="dnnphase.sweep").attrs["config"])
    assert (cfg["norm"], cfg["weight_init"], cfg["dataset"]) == ("scale", "orthogonal",
                                                                 "orthogonal")
    assert "batchnorm" not in cfg
    assert SweepConfig(**SMALL).norm == "batchnorm"  # the paper's experiments
    assert SweepConfig(**SMALL).weight_init == "default"


def test_every_training_setting_reaches_the_trainer():
    """A setting given to the sweep is the one its models train with (none is dropped on
    the way), and the sweep and the trainer refuse a bad one with the same message."""
    import dataclasses

    from dnnphase.training.train import TrainingSettings

    given = dict(epochs=7, batch_size=64, optimizer="sgd", lr=0.02, loss_threshold=0.5,
                 patience=3, rel_tol=0.01, dtype="float64", device="cpu",
                 schedule=((2, "dropout", 0.1), (4, "dropout", 0.0)), momentum=0.9,
                 weight_decay=5e-4, lr_drops=(0.5,), keep_last_batch=True, warmup_epochs=1)
    assert set(given) == {f.name for f in dataclasses.fields(TrainingSettings)}
    cfg = SweepConfig(**{**SMALL, **given, "record_every": 7}).train_config()
    assert {name: getattr(cfg, name) for name in given} == {**given, "dtype": torch.float64}
    assert cfg.record_every == 7 and SweepConfig(**SMALL).train_config().record_every is None
    for bad in (dict(patience=-1), dict(lr=0.0), dict(batch_size=0), dict(dtype="float16"),
                dict(optimizer="rmsprop"), dict(device="tpu"), dict(epochs=1.5),
                dict(schedule=((2, "lr", 0.0),)), dict(schedule=((2, "momentum", 0.1),)),
                dict(momentum=0.9), dict(weight_decay=-1.0), dict(lr_drops=(0.7, 0.2))):
        with pytest.raises(ConfigError) as from_sweep:
            SweepConfig(**{**SMALL, **bad})
        with pytest.raises(ConfigError) as from_trainer:
            TrainConfig(**bad)
        assert str(from_sweep.value) == str(from_trainer.value), bad


@pytest.mark.parametrize("knob,bad,cli_bad", [("dropout", 1.0, "1.0"),
                                              ("label_noise", 1.5, "1.5"),
                                              ("lr", -1.0, "-1"), ("batch_size", 2.5, "0")])
def test_a_knob_value_is_refused_with_one_message_wherever_it_enters(knob, bad, cli_bad,
                                                                    capsys):
    """The command line, SweepConfig (swept or fixed), train_ensemble and the model all
    check a knob against dnnphase.knobs: one range, one wording."""
    from dnnphase import knobs
    from dnnphase.networks.mlp import MLP
    from dnnphase.training.train import train_ensemble

    allowed = knobs.KNOBS[knob].allowed
    other = "lr" if knob != "lr" else "dropout"
    with pytest.raises(ConfigError, match=re.escape(f"{knob} must be {allowed}")):
        SweepConfig(**{**SMALL, "knob": other, knob: bad})
    with pytest.raises(ConfigError, match=re.escape(f"values of {knob} must be ")):
        SweepConfig(**{**SMALL, "knob": knob, "values": [bad]})
    x, y = torch.randn(8, 3), torch.arange(8) % 2
    with pytest.raises(ConfigError, match=re.escape(f"{knob} must be ")):
        train_ensemble(x, y, seeds=[0], config=TrainConfig(device="cpu"), **{knob: [bad]})
    if knob == "dropout":
        with pytest.raises(ConfigError, match=re.escape(f"dropout must be {allowed} (got 1.0)")):
            MLP(3, 2, dropout=bad)
    flag = f"--{knob.replace('_', '-')}"
    assert main(["sweep", "--knob", other, flag, cli_bad, "--epochs", "1",
                 "-o", "/nonexistent/x.nc"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"dnnphase: error: {knob} must be {allowed}") and "\n" not in err


def test_sweep_help_reads_defaults_and_ranges_from_their_homes(capsys):
    """The --help shows SweepConfig's defaults and the registries' ranges and names."""
    from dnnphase import defaults
    from dnnphase.measures.separation_numpy import MEASURE_NAMES

    with pytest.raises(SystemExit):
        main(["sweep", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    for fragment in ("dropout probability p, in [0, 1)", "batch size, an integer >= 1",
                     "batch_size (smaller is noisier)", f"(default {defaults.DATASET})",
                     f"(default {','.join(defaults.SWEEP_MEASURES)})", "(default 0,0.5,1)",
                     f"(default {defaults.LR})", ", ".join(MEASURE_NAMES), "(default 3)",
                     "one of batchnorm, scale, none", "(default batchnorm)",
                     "one of default, orthogonal"):
        assert fragment in text, fragment


def test_cuda_without_a_gpu_is_refused_before_any_work(tmp_path, capsys):
    import torch

    if torch.cuda.is_available():
        pytest.skip("this machine has CUDA")
    out = tmp_path / "x.nc"
    assert main(["sweep", "--device", "cuda", "--epochs", "1", "-o", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert "device must be auto or cpu on this machine" in err and "\n" not in err
    assert not out.exists() and not (tmp_path / "x.nc.parts").exists()


def test_a_gpu_this_machine_lacks_is_refused_before_any_work(tmp_path, capsys, monkeypatch):
    import torch

    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 2)
    out = tmp_path / "x.nc"
    assert main(["sweep", "--device", "cuda:2", "--epochs", "1", "-o", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert "device must be cuda, cuda:0 … cuda:1, auto or cpu on this machine (2 CUDA " \
           "devices)" in err and "\n" not in err
    assert not out.exists() and not (tmp_path / "x.nc.parts").exists()


def test_dask_address_without_dask_is_refused_before_any_work(tmp_path, capsys, monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "dask.distributed", None)  # as if not installed
    out = tmp_path / "x.nc"
    assert main(["sweep", "--scheduler", "tcp://127.0.0.1:8786", "--epochs", "1",
                 "-o", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert "needs Dask" in err and "\n" not in err
    assert not out.exists() and not (tmp_path / "x.nc.parts").exists()


def test_default_chunk_fills_the_cpu_pool_or_the_gpu(monkeypatch):
    import torch

    from dnnphase import defaults

    paper = dict(knob="dropout", values=tuple(np.linspace(0, 0.3, 16)), alphas=(0, 0.2, 0.4, 0.6,
                 0.8, 1.0), seeds=tuple(range(10)))  # Fig. 1c: 960 models
    assert SweepConfig(**paper, device="cpu").models_per_chunk == defaults.MODELS_PER_CHUNK
    small = dict(knob="dropout", values=(0.0, 0.1), alphas=(0.0,), seeds=(0, 1))
    assert SweepConfig(**small, device="cpu").models_per_chunk == 1  # 4 models: one per chunk
    assert SweepConfig(**paper, device="cuda").models_per_chunk == defaults.MODELS_PER_CHUNK_CUDA
    assert SweepConfig(**small, device="cuda:0").models_per_chunk == 4
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    assert SweepConfig(**paper).models_per_chunk == defaults.MODELS_PER_CHUNK_CUDA
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert SweepConfig(**paper).models_per_chunk == defaults.MODELS_PER_CHUNK
    assert SweepConfig(**paper, models_per_chunk=7).models_per_chunk == 7


def test_chunks_never_mix_batch_sizes_and_keep_the_plain_cut_otherwise():
    """Every model in exactly one chunk of at most models_per_chunk; a batch-size sweep's
    chunks hold one batch size each (alpha-major within it); any other sweep is cut into
    consecutive slices of the (alpha, value, seed) order, as before."""
    from dnnphase.sweeps.sweep import chunk_plan

    grid = dict(alphas=[0.0, 0.5, 1.0], seeds=list(range(10)), models_per_chunk=16)
    everything = [(ia, iv, s) for ia in range(3) for iv in range(3) for s in range(10)]
    plan = chunk_plan(SweepConfig(knob="batch_size", values=[5, 20, 80], **grid))
    assert sorted(m for chunk in plan for m in chunk) == sorted(everything)
    assert all(len(chunk) <= 16 for chunk in plan)
    assert all(len({iv for _, iv, _ in chunk}) == 1 for chunk in plan)
    assert [len(chunk) for chunk in plan] == [16, 14] * 3  # 30 models per batch size
    plain = chunk_plan(SweepConfig(knob="dropout", values=[0.0, 0.1, 0.2], **grid))
    assert plain == [everything[k:k + 16] for k in range(0, 90, 16)]


def test_the_command_line_trains_on_one_gpu_in_this_process(monkeypatch):
    """Without --scheduler: "auto" on the CPU (a process pool, or this process where the
    work would not pay for its start-up), this process on CUDA (one GPU is one worker), for
    sweep, tune and reproduce alike."""
    import torch

    from dnnphase import cli
    from dnnphase.sweeps.sweep import default_scheduler

    assert default_scheduler("cpu") == "auto" and default_scheduler("cpu", workers=2) == "auto"
    assert default_scheduler("cuda:1") == "serial"
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    assert default_scheduler("auto") == "serial" and default_scheduler("cpu") == "auto"
    assert default_scheduler("auto", workers=2) == "processes"  # --workers asks for a pool
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert default_scheduler("auto") == "auto"
    for command in ("sweep", "tune", "reproduce"):
        args = cli.build_parser().parse_args([command, "-o", "x"])
        assert args.scheduler is None  # resolved from the device when the command runs


def test_image_size_and_momentum_reach_the_data_and_the_trainer():
    """``size`` resizes the sweep's images (a data set without the option refuses it before
    any work); ``momentum`` is SGD's; both stay out of a stored configuration at their
    defaults, so sweeps stored before they existed are reused as they were."""
    from dnnphase.sweeps.sweep import load_data

    cfg = SweepConfig(**{**SMALL, "size": 4, "optimizer": "sgd", "momentum": 0.9})
    assert load_data(cfg).n_features == 16 and cfg.train_config().momentum == 0.9
    assert {"size", "momentum"} <= set(cfg.to_dict())
    assert not {"size", "momentum"} & set(SweepConfig(**SMALL).to_dict())
    assert SweepConfig(**cfg.to_dict()) == cfg
    for bad, fragment in ((dict(size=0), "size"), (dict(momentum=0.5), "momentum")):
        with pytest.raises(ConfigError, match=fragment):
            SweepConfig(**{**SMALL, **bad})
    with pytest.raises(ConfigError, match="option size"):
        SweepConfig(**{**SMALL, "dataset": "gmm", "size": 4}).preflight("serial")
