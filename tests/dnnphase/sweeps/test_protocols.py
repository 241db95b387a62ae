"""A sweep under the papers' protocols: He & Su's measurement (BatchNorm statistics of each
batch of 100, raw D_0) and training (the last partial batch), Galanti et al.'s Linear outputs
and warm-up; a configuration that does not use them is stored (and hashed) as before."""

import numpy as np
import pytest
import torch

from dnnphase import separation
from dnnphase.measures.separation_numpy import fuzziness
from dnnphase.networks.protocol import stack_features
from dnnphase.sweeps import sweep as phase
from dnnphase.sweeps.sweep import SweepConfig
from dnnphase.training.train import train_models
from phasecore.checks import ConfigError

pytestmark = pytest.mark.usefixtures("one_torch_thread")

SMALL = dict(dataset="digits", n_train=300, depth=3, width=16, epochs=4, dtype="float64",
             measures=["fuzziness", "ncc"], optimizer="adam", batch_size=128, alphas=[0.0],
             knob="lr", values=[1e-3], seeds=[0, 1], loss_threshold=0.0, models_per_chunk=2)


@pytest.mark.parametrize("protocol", ["he_su", "galanti"])
def test_a_sweep_measures_its_networks_under_the_protocol(protocol):
    extra = dict(keep_last_batch=True) if protocol == "he_su" else \
        dict(warmup_epochs=1, optimizer="sgd", momentum=0.9)
    cfg = SweepConfig(**{**SMALL, **extra}, protocol=protocol, record_every=2)
    models = phase.chunk_plan(cfg)[0]
    chunk = phase._train_and_measure(cfg, models)
    data = phase.load_data(cfg)
    x, y = torch.as_tensor(data.x_train), torch.as_tensor(data.y_train)
    result = train_models(x, y, knobs=cfg.model_knobs(models), config=cfg.train_config(),
                          network=cfg.architecture())
    if protocol == "he_su":  # 300 = 2 x 128 + 44: three steps an epoch
        assert result.steps_run.tolist() == [3 * cfg.epochs] * 2
    feats = stack_features(result.model, x.double(), protocol)
    want = separation.measure_layers(feats, y, cfg.measures).numpy()
    np.testing.assert_allclose(chunk["load_curve"].values, want, rtol=1e-12)
    # D_0 is the raw input's fuzziness, whatever the network
    raw = fuzziness(data.x_train, data.y_train)
    np.testing.assert_allclose(chunk["load_curve"].values[:, 0, 0], raw, rtol=1e-9)
    # the records during training follow the protocol: the last is the final curve
    np.testing.assert_allclose(chunk["load_curve_epochs"].values[:, -1],
                               chunk["load_curve"].values[:, 0], rtol=1e-12)
    ours = phase._train_and_measure(cfg.replace(protocol="ours"), models)
    assert not np.allclose(ours["load_curve"].values[:, 0, 1:],
                           chunk["load_curve"].values[:, 0, 1:])


def test_the_new_fields_at_their_defaults_leave_a_stored_configuration_as_it_was():
    stored = SweepConfig(**SMALL).to_dict()
    assert not {"protocol", "keep_last_batch", "warmup_epochs"} & set(stored)
    assert SweepConfig(**SMALL, protocol="he_su").to_dict()["protocol"] == "he_su"


def test_a_protocol_is_refused_by_name_before_any_work():
    with pytest.raises(ConfigError, match="protocol must be one of ours, he_su, galanti"):
        SweepConfig(**SMALL, protocol="authors")
    with pytest.raises(ConfigError, match="protocol must be ours for a CNN"):
        SweepConfig(**{**SMALL, "width": 100}, arch="cnn", protocol="he_su")


def test_the_command_line_takes_the_papers_options(tmp_path):
    import json

    from dnnphase.cli import main
    from phasecore import results

    out = tmp_path / "r.nc"
    assert main(["sweep", "--dataset", "digits", "--n-train", "300", "--depth", "3", "--width",
                 "16", "--epochs", "2", "--seeds", "1", "--alpha", "0", "--knob", "lr",
                 "--values", "0.01", "--measures", "fuzziness", "--protocol", "he_su",
                 "--keep-last-batch", "--warmup-epochs", "1", "--batch-size", "64",
                 "--scheduler", "serial", "--quiet", "-o", str(out)]) == 0
    ds = results.load(out, kind="dnnphase.sweep")
    stored = json.loads(ds.attrs["config"])
    assert (stored["protocol"], stored["keep_last_batch"], stored["warmup_epochs"]) == (
        "he_su", True, 1)
    assert ds["steps_run"].values.ravel().tolist() == [2 * 5]  # 300 = 4 x 64 + 44
