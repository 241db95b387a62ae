"""A sweep's estimated cost (dnnphase.sweeps.cost) and the scheduler "auto" picks with it: a
tiny sweep runs in this process (a pool's start-up made it ~4x slower), a large one on the
pool, and the results are the same either way."""

from types import SimpleNamespace

import pytest
import xarray as xr

from dnnphase.cli import main
from dnnphase.sweeps import cost
from dnnphase.sweeps.sweep import SweepConfig, chunk_plan, sweep
from phasecore import executors

TINY = dict(dataset="gmm", n_train=40, depth=2, width=8, epochs=2, seeds=[0, 1], alphas=[0.0],
            values=[0.0, 0.3], measures=["trace_ratio"], models_per_chunk=1)
DIGITS = SimpleNamespace(n_train=1000, n_features=64, n_classes=10, image_shape=(1, 8, 8))


def test_the_estimate_is_the_documented_sum():
    cfg = SweepConfig(dataset="digits", n_train=1000, epochs=30, seeds=2, alphas=(0.0, 0.5),
                      values=(0.0, 0.1, 0.2), width=100, depth=7)  # 12 models
    madds = 64 * 100 + 6 * 100 * 100 + 100 * 10
    assert cost.multiply_adds(cfg.architecture(), 64, 10, None) == madds
    expected = 5 * cost.CHUNK_SECONDS + 12 * 30 * (
        1 * 8 * cost.STEP_SECONDS + 1000 * 3 * madds * cost.MULTIPLY_ADD_SECONDS)
    assert cost.core_seconds([cfg], DIGITS, 5) == pytest.approx(expected)
    # batches of 50: 20 steps an epoch; twice the epochs: twice the training
    batches = cfg.replace(batch_size=50)
    assert cost.core_seconds([batches], DIGITS, 5) - cost.core_seconds([cfg], DIGITS, 5) == \
        pytest.approx(12 * 30 * 19 * 8 * cost.STEP_SECONDS)
    longer = cost.core_seconds([cfg.replace(epochs=60)], DIGITS, 0)
    assert longer == pytest.approx(2 * cost.core_seconds([cfg], DIGITS, 0))
    # a CNN's convolutions keep the image's side: channels^2 k^2 per pixel and layer
    cnn = cfg.replace(arch="cnn", channels=16, depth=3)
    assert cost.multiply_adds(cnn.architecture(), 64, 10, (1, 8, 8)) == \
        (16 * 9 + 2 * 16 * 16 * 9) * 64 + 16 * 64 * 10


def test_auto_runs_a_tiny_sweep_here_and_a_paper_sweep_on_the_pool(monkeypatch):
    monkeypatch.setattr(executors, "busy_load", lambda: 0.0)  # an idle machine
    monkeypatch.setattr(executors.os, "cpu_count", lambda: 2)
    tiny = SweepConfig(**TINY)
    data = SimpleNamespace(n_train=40, n_features=2, n_classes=2, image_shape=None)
    assert cost.choose_scheduler(tiny, data, "auto", None, 2, quiet=True) == ("serial", None)
    assert cost.choose_scheduler(tiny, data, "auto", 2, 2, quiet=True) == ("serial", None)
    assert cost.choose_scheduler(tiny, data, "processes", 2, 2, quiet=True) == ("processes", 2)
    assert cost.choose_scheduler(tiny, data, "auto", 2, 1, quiet=True) == ("serial", None)
    paper = SweepConfig(knob="dropout", epochs=100)  # 36 MLPs of the paper on mnist5k
    mnist5k = SimpleNamespace(n_train=2560, n_features=100, n_classes=10, image_shape=None)
    n_chunks = len(chunk_plan(paper))
    assert cost.core_seconds([paper], mnist5k, n_chunks) > 10 * cost.POOL_START_SECONDS
    assert cost.choose_scheduler(paper, mnist5k, "auto", None, n_chunks, quiet=True) == \
        ("processes", None)


def test_auto_running_here_names_the_workers_that_were_asked_for(monkeypatch, capsys):
    monkeypatch.setattr(executors, "busy_load", lambda: 0.0)
    monkeypatch.setattr(executors.os, "cpu_count", lambda: 2)
    data = SimpleNamespace(n_train=40, n_features=2, n_classes=2, image_shape=None)
    assert cost.choose_scheduler(SweepConfig(**TINY), data, "auto", 3, 2, quiet=False) == \
        ("serial", None)
    assert "serial, not the 3 workers asked for: " in capsys.readouterr().err


def test_a_tiny_sweep_by_default_runs_here_says_so_and_equals_the_pools(monkeypatch, tmp_path,
                                                                         capsys):
    def no_pool(*args):
        raise AssertionError("a pool was started")

    pooled = sweep(**TINY, scheduler="processes", workers=2)  # a real pool, as asked
    monkeypatch.setitem(executors._EXECUTORS, "processes", no_pool)
    out = tmp_path / "tiny.nc"
    assert main(["sweep", "--dataset", "gmm", "--n-train", "40", "--depth", "2", "--width", "8",
                 "--epochs", "2", "--seeds", "2", "--alpha", "0", "--values", "0,0.3",
                 "--measures", "trace_ratio", "--models-per-chunk", "1", "-o", str(out)]) == 0
    err = capsys.readouterr().err
    assert "dropout sweep: serial: a pool of " in err and "--scheduler processes keeps a pool" \
        in err
    here = sweep(**TINY, scheduler="auto", workers=2)
    xr.testing.assert_identical(here.drop_attrs(), pooled.drop_attrs())
    from phasecore import results

    xr.testing.assert_identical(results.load(out).drop_attrs(), pooled.drop_attrs())
