"""The papers' training from a sweep and the command line: SGD with momentum and weight
decay, learning-rate drops relative to the run, batch 128 and fixed random labels (a knob of
its own); bad values end in one line, exit 2, nothing written."""

import json

import numpy as np
import pytest
import torch

from dnnphase import separation
from dnnphase.cli import main
from dnnphase.sweeps import sweep as phase
from dnnphase.sweeps.sweep import SweepConfig
from dnnphase.training.train import train_models
from phasecore import results

pytestmark = pytest.mark.usefixtures("one_torch_thread")

SMALL = dict(dataset="digits", n_train=300, depth=3, width=16, epochs=6, dtype="float64",
             measures=["trace_ratio", "fuzziness", "ncc"], optimizer="sgd", momentum=0.9,
             weight_decay=5e-4, lr=0.05, lr_drops=(1 / 3, 2 / 3), batch_size=128,
             loss_threshold=0.0)
ARGS = ["--dataset", "digits", "--n-train", "300", "--depth", "3", "--width", "16",
        "--epochs", "6", "--seeds", "1", "--alpha", "0", "--measures", "fuzziness,ncc",
        "--scheduler", "serial", "--quiet"]


def test_a_random_labels_sweep_measures_each_model_with_its_own_labels():
    cfg = SweepConfig(**SMALL, knob="random_labels", values=[0.0, 0.5], alphas=[0.0],
                      seeds=[0, 1], models_per_chunk=4)
    models = phase.chunk_plan(cfg)[0]
    chunk = phase._train_and_measure(cfg, models)
    data = phase.load_data(cfg)
    result = train_models(torch.as_tensor(data.x_train), torch.as_tensor(data.y_train),
                          knobs=cfg.model_knobs(models), config=cfg.train_config(),
                          network=cfg.architecture())
    features = result.features()
    for j, (_, iv, _) in enumerate(models):
        own = result.train_labels[j]
        assert (own != torch.as_tensor(data.y_train)).any() == (cfg.values[iv] > 0)
        ref = separation.measure_layers([f[j:j + 1] for f in features], own, cfg.measures)
        np.testing.assert_array_equal(chunk["load_curve"].values[j], ref[0].numpy())
    ds = phase._assemble([chunk], cfg)
    assert ds["random_labels"].attrs["noisier"] == "larger"
    assert ds["load_curve"].dims[:3] == ("alpha", "random_labels", "seed")


def test_the_cli_trains_the_papers_way_and_writes_the_statistics(tmp_path):
    out = tmp_path / "r.nc"
    assert main(["sweep", *ARGS, "--knob", "random_labels", "--values", "0,0.5",
                 "--optimizer", "sgd", "--momentum", "0.9", "--weight-decay", "5e-4",
                 "--lr", "0.05", "--lr-drops", "1/3,2/3", "--batch-size", "128",
                 "-o", str(out)]) == 0
    ds = results.load(out, kind="dnnphase.sweep")
    stored = SweepConfig(**json.loads(ds.attrs["config"]))
    assert (stored.momentum, stored.weight_decay, stored.lr_drops, stored.batch_size) == (
        0.9, 5e-4, (1 / 3, 2 / 3), 128)
    for name in ("pearson_r", "decay_ratio", "half_life", "effective_depth",
                 "ncc_train_centres_test"):
        assert name in ds, name
    assert np.isfinite(ds["pearson_r"]).all()


@pytest.mark.parametrize("args,message", [
    (["--momentum", "0.9"], "momentum must be 0 unless optimizer is sgd"),
    (["--optimizer", "sgd", "--momentum", "1.5"], "momentum must be in [0, 1)"),
    (["--weight-decay", "-1"], "weight_decay must be in [0, 1)"),
    (["--random-labels", "1.1"], "random_labels must be in [0, 1]"),
    (["--knob", "random_labels", "--values", "0,1.5"], "values of random_labels must be"),
    (["--lr-drops", "2/3,1/3"], "lr_drops must be fractions of the run in (0, 1), increasing"),
    (["--lr-drops", "0,0.5"], "lr_drops must be fractions"),
    (["--lr-drops", "1/0"], "--lr-drops must be fractions"),
    (["--epochs", "2", "--lr-drops", "1/3,2/3"], "distinct epochs 2..epochs (2)"),
])
def test_bad_training_options_exit_2_with_one_line_and_write_nothing(args, message, tmp_path,
                                                                     capsys):
    out = tmp_path / "x.nc"
    assert main(["sweep", *ARGS, *args, "-o", str(out)]) == 2  # a later --epochs wins
    err = capsys.readouterr().err.strip()
    assert err.startswith("dnnphase: error:") and "\n" not in err and message in err, err
    assert list(tmp_path.iterdir()) == []


def test_random_labels_do_not_depend_on_the_chunking():
    """A model's labels come from its seed alone: one chunk of four models or four chunks
    of one give the same float64 results, bit for bit."""
    kw = dict(SMALL, knob="random_labels", values=[0.25, 0.75], alphas=[0.0], seeds=[0, 1],
              epochs=2, lr_drops=(0.5,))
    one, four = (phase.sweep(**kw, models_per_chunk=n) for n in (4, 1))
    for name in ("load_curve", "train_accuracy", "ncc_train_centres_test", "pearson_r"):
        assert one[name].values.tobytes() == four[name].values.tobytes(), name


def test_curves_recorded_during_training_use_each_models_own_labels():
    """The last recorded curve of a model that trained to the end is its final curve of the
    first measure, measured with its own labels (and the test set's with the clean ones)."""
    kw = dict(SMALL, knob="random_labels", values=[0.0, 0.5], alphas=[0.0], seeds=[0, 1],
              record_every=3, models_per_chunk=4)
    ds = phase.sweep(**kw)
    assert (ds["epochs_run"] == kw["epochs"]).all()
    np.testing.assert_allclose(ds["load_curve_epochs"].isel(epoch=-1),
                               ds["load_curve"].sel(measure="trace_ratio"), rtol=0, atol=1e-12)
    np.testing.assert_allclose(ds["load_curve_epochs_test"].isel(epoch=-1),
                               ds["load_curve_test"].sel(measure="trace_ratio"), rtol=0,
                               atol=1e-12)
    clean = phase.sweep(**dict(kw, knob="dropout", values=[0.0]))  # the same models, 0 %
    np.testing.assert_array_equal(ds["load_curve_epochs"].sel(random_labels=0.0),
                                  clean["load_curve_epochs"].sel(dropout=0.0))
