"""dnnphase tune: the pure search on known functions, a real network with a known answer,
bad input (nothing trained, nothing written), resuming an interrupted tune, the CLI."""

import json
import math

import numpy as np
import pytest
import xarray as xr

import dnnphase.sweeps.tune as tune_module
from dnnphase.cli import main
from dnnphase.sweeps.sweep import sweep
from dnnphase.sweeps.tune import search, tune
from phasecore import results
from phasecore.checks import ConfigError

# ----------------------------------------------------------------- the search, synthetic


def recorder(f, se=0.01):
    """A curvature_of from f, logging every call."""
    calls = []

    def curvature_of(values):
        calls.append(np.array(values))
        return f(np.asarray(values, dtype=float)), np.full(len(values), se)

    return curvature_of, calls


def test_search_finds_a_known_root_within_tolerance_and_is_deterministic():
    root = 0.137
    f = lambda v: np.tanh(5 * (v - root))  # noqa: E731 (monotone, not linear)
    first, calls = recorder(f)
    found = search(first, 0.0, 1.0, values_per_round=3, rounds=10, tolerance=0.01)
    assert found.bracketed and found.stop_reason == "tolerance"
    lo, hi = found.bracket
    assert lo <= root <= hi and hi - lo <= 0.01
    assert lo <= found.value <= hi and abs(found.value - root) <= 0.01
    assert found.sign_changes == 1
    np.testing.assert_array_equal(calls[0], [0.0, 0.5, 1.0])  # round 1: both ends
    for a, b in zip(calls[1:], found.rounds[:-1], strict=False):  # later: inside the bracket
        assert np.all((a > b.bracket[0]) & (a < b.bracket[1]))
    again, calls_again = recorder(f)
    second = search(again, 0.0, 1.0, values_per_round=3, rounds=10, tolerance=0.01)
    assert second.value == found.value and second.bracket == found.bracket
    assert len(calls_again) == len(calls)
    for a, b in zip(calls, calls_again, strict=True):
        np.testing.assert_array_equal(a, b)


def test_search_on_a_log_axis():
    root = 3e-3
    f = lambda v: np.log10(v / root) ** 3 + 0.5 * np.log10(v / root)  # noqa: E731
    curvature_of, calls = recorder(f)
    found = search(curvature_of, 1e-4, 1e-1, scale="log", rounds=10, tolerance=0.01)
    assert found.bracketed and found.stop_reason == "tolerance"
    assert abs(math.log(found.value / root)) <= 0.01 * math.log(1e3)
    np.testing.assert_allclose(calls[0], [1e-4, 1e-4 ** 0.5 * 1e-1 ** 0.5, 1e-1])
    assert calls[0][0] == 1e-4 and calls[0][-1] == 1e-1  # the ends exactly
    lo, hi = found.rounds[0].bracket  # log-spaced inside the bracket, not linearly
    np.testing.assert_allclose(np.diff(np.log(calls[1])), np.log(hi / lo) / 4)


def test_search_on_integers_counts_down_to_adjacent_values():
    """batch_size: integers, log axis, smaller is noisier (curvature falls with the size)."""
    f = lambda v: np.log(100.4 / v)  # noqa: E731 (zero between 100 and 101)
    curvature_of, calls = recorder(f)
    found = search(curvature_of, 1, 2560, scale="log", integer=True, rounds=20,
                   tolerance=1e-6, within_se=0)
    assert found.stop_reason == "resolution" and found.bracket == (100.0, 101.0)
    assert found.value == 100.0  # the crossing 100.4, rounded
    tried = np.concatenate(calls)
    assert np.all(tried == np.round(tried)) and len(np.unique(tried)) == len(tried)
    exact, _ = recorder(lambda v: np.log(320 / v))  # 320 is tried: its mean is exactly 0
    hit = search(exact, 1, 2560, scale="log", integer=True, rounds=10, tolerance=1e-3)
    assert hit.value == 320 and hit.bracket == (320.0, 320.0) and hit.rising is None
    assert hit.stop_reason == "tolerance"


def test_no_sign_change_is_flagged_not_fatal():
    curvature_of, calls = recorder(lambda v: 0.2 + v)  # convex everywhere
    found = search(curvature_of, 0.0, 0.3, rounds=5)
    assert not found.bracketed and found.stop_reason == "no_sign_change"
    assert found.value == 0.0 and len(calls) == 1  # the end closest to linear
    assert all(math.isnan(b) for b in found.bracket) and math.isnan(found.rounds[0].estimate)
    concave, _ = recorder(lambda v: v - 1)  # concave everywhere, least at the top
    assert search(concave, 0.0, 0.3).value == 0.3


def test_search_stops_on_noise_and_on_the_budget():
    flat, _ = recorder(lambda v: 0.01 * (v - 0.37), se=1.0)  # a sign change lost in noise
    assert search(flat, 0.0, 1.0, rounds=5).stop_reason == "noise"
    assert search(flat, 0.0, 1.0, rounds=2, within_se=0).stop_reason == "rounds"
    capped, calls = recorder(lambda v: v - 0.3)
    found = search(capped, 0.0, 1.0, values_per_round=3, rounds=10, max_values=7,
                   tolerance=1e-9)
    assert found.stop_reason == "models" and found.evaluations == 7
    assert [len(c) for c in calls] == [3, 3, 1]


def test_search_skips_nan_and_prefers_the_best_supported_crossing():
    def f(v):  # diverged above 0.8; a noisy flip near 0.25 and a clear crossing at 0.6
        out = np.where(v < 0.6, -0.5, 0.5)
        out = np.where(np.isclose(v, 0.25), 0.01, out)
        return np.where(v > 0.8, np.nan, out)

    curvature_of, _ = recorder(f, se=0.05)
    found = search(curvature_of, 0.0, 1.0, values_per_round=5, rounds=2, within_se=0)
    assert found.bracketed and 0.5 <= found.value <= 0.75
    assert found.sign_changes == 3
    nothing, _ = recorder(lambda v: np.full(v.shape, np.nan))
    empty = search(nothing, 0.0, 1.0)
    assert empty.stop_reason == "no_finite_curvature" and math.isnan(empty.value)


def test_search_prefers_a_crossing_in_the_expected_direction():
    """Two crossings, down near 0.3 (the better supported) and up near 0.9: the first by
    default, the rising one when the function is expected to rise (curvature with
    noise, as the theory says)."""
    f = lambda v: 0.5 * np.cos(2 * np.pi * (v - 0.05)) - 0.2 * v  # noqa: E731
    either, _ = recorder(f)
    down = search(either, 0.0, 1.0, values_per_round=5, rounds=3)
    assert down.rising is False and 0.25 < down.value < 0.5 and down.sign_changes == 2
    up_only, _ = recorder(f)
    up = search(up_only, 0.0, 1.0, values_per_round=5, rounds=3, rising=True)
    assert up.rising is True and 0.75 < up.value < 1.0


# ------------------------------------------------------------ a real case, known answer

#: digits, a small ReLU MLP: the curvature crosses zero near dropout 0.05 (measured in
#: the test below against a grid; docs/tune.md).
REAL = dict(dataset="digits", n_train=500, depth=4, width=32, epochs=100, lr=3e-3)
SEARCH = dict(knob="dropout", low=0.0, high=0.12, alpha=0.0, seeds=4, values_per_round=3,
              rounds=3, scheduler="serial")


@pytest.fixture(scope="module")
def tuned(tmp_path_factory, one_torch_thread):
    out = tmp_path_factory.mktemp("tune") / "tuned.nc"
    return tune(output=out, **SEARCH, **REAL), out


def test_tune_lies_where_a_grid_changes_sign(tuned):
    ds, out = tuned
    grid = sweep(knob="dropout", values=list(np.linspace(0, 0.12, 7)), alphas=[0.0],
                 seeds=4, measures=["trace_ratio"], models_per_chunk=28,
                 scheduler="serial", **REAL)
    mean = grid["curvature_scaled"].sel(measure="trace_ratio").isel(alpha=0).mean("seed")
    signs = np.sign(mean.values)
    flips = np.flatnonzero(signs[:-1] * signs[1:] < 0)
    assert flips.size == 1, mean.values  # the known answer: one sign change
    lo, hi = grid["dropout"].values[[flips[0], flips[0] + 1]]
    assert bool(ds["bracketed"]) and lo <= float(ds["value"]) <= hi
    # the path: round 1 spans the range, every later value inside the previous bracket
    np.testing.assert_allclose(ds["path_value"].sel(round=1), [0.0, 0.06, 0.12])
    for k in ds["round"].values[1:]:
        tried = ds["path_value"].sel(round=k).values
        assert np.all((tried > float(ds["bracket_low"].sel(round=k - 1)))
                      & (tried < float(ds["bracket_high"].sel(round=k - 1))))
    tried = np.isfinite(ds["path_value"]).sum().item()
    assert int(ds["models_trained"]) == 4 * (tried + 1)  # the rounds and the final models
    assert np.isfinite(ds["path_test_accuracy"].where(np.isfinite(ds["path_value"]))).sum() \
        == tried
    assert ds["final_test_accuracy"].dims == ("seed",) and 0.8 < float(ds["test_accuracy"])
    np.testing.assert_allclose(float(ds["curvature"]), ds["final_curvature"].mean().item())
    cfg = json.loads(ds.attrs["config"])
    assert ds.attrs["kind"] == "dnnphase.tune" and cfg["tune"]["high"] == 0.12
    assert cfg["sweep"]["depth"] == 4 and "torch" in json.loads(ds.attrs["versions"])
    xr.testing.assert_identical(results.load(out), ds)
    assert not out.with_name(out.name + ".parts").exists()  # cleared once saved


def test_an_interrupted_tune_resumes_without_retraining(tuned, tmp_path, monkeypatch):
    ds, _ = tuned
    out = tmp_path / "resumed.nc"
    calls = []

    def interrupted(*args, **kwargs):
        calls.append(kwargs["output"])
        if len(calls) == 2:  # Ctrl-C as round 2 starts: round 1 is on disk
            raise tune_module.SweepInterrupted("interrupted")
        return sweep(*args, **kwargs)

    monkeypatch.setattr(tune_module, "sweep", interrupted)
    with pytest.raises(KeyboardInterrupt, match="finished rounds are kept"):
        tune(output=out, **SEARCH, **REAL)
    store = out.with_name(out.name + ".parts")
    assert not out.exists() and (store / "chunk-000000.nc").exists()
    calls.clear()
    monkeypatch.setattr(tune_module, "sweep", lambda *a, **k: calls.append(1) or sweep(*a, **k))
    again = tune(output=out, **SEARCH, **REAL)
    rounds = int(ds["rounds_run"])
    assert len(calls) == rounds  # rounds 2.. and the final models; round 1 was reused
    xr.testing.assert_identical(again, ds)
    xr.testing.assert_identical(results.load(out), ds)
    assert not store.exists()


# ------------------------------------------------------------------------- bad input

TINY = dict(dataset="digits", n_train=200, depth=3, width=8, epochs=3, seeds=2,
            scheduler="serial")


@pytest.mark.parametrize(("change", "named"), [
    (dict(knob="momentum"), "knob must be one of"),
    (dict(low=-0.1), "low must be in [0, 1)"),
    (dict(high=1.0), "high must be in [0, 1)"),
    (dict(low=0.2, high=0.1), "high must be greater than low"),
    (dict(knob="lr", low=0.0, high=0.1), "low must be > 0"),
    (dict(alpha=1.5), "alpha must be in [0, 1]"),
    (dict(alpha=[0.0, 1.0]), "alpha must be one number"),
    (dict(values_per_round=1), "values_per_round must be an integer in 2..100"),
    (dict(rounds=0), "rounds must be an integer >= 1"),
    (dict(tolerance=0.0), "tolerance must be in (0, 1)"),
    (dict(within_se=-1.0), "within_se must be a number >= 0"),
    (dict(max_models=7), "max_models must be an integer >= 8"),
    (dict(seeds=0), "seeds must be"),
    (dict(seeds=1), "seeds must be at least 2 while within_se > 0"),
    (dict(values=[0.1]), "values is set by tune itself"),
    (dict(nesterov=True), "keyword must be a tune parameter or a SweepConfig field"),
    (dict(momentum=0.9), "momentum must be 0 unless optimizer is sgd"),
    (dict(dropout=0.1), "dropout must be left at its default"),
    (dict(measure="nope"), "measure must be one of"),
    (dict(knob="batch_size", low=10, high=400), "batch_size must be at most"),
    (dict(scheduler="threads"), "scheduler"),
])
def test_bad_input_is_one_line_before_any_work(change, named, tmp_path, monkeypatch):
    monkeypatch.setattr(tune_module, "sweep", lambda *a, **k: pytest.fail("trained"))
    kw = {**TINY, "knob": "dropout", "low": 0.0, "high": 0.3, **change}
    with pytest.raises(ConfigError) as err:
        tune(output=tmp_path / "t.nc", **kw)
    assert named in str(err.value) and "\n" not in str(err.value)
    assert list(tmp_path.iterdir()) == []


def test_one_seed_is_refused_only_while_the_stop_on_noise_is_on():
    """`--seeds 1` ran with a standard error of NaN, so the stop on noise never acted."""
    from dnnphase.sweeps.tune import TuneSettings

    TuneSettings("dropout", 0.0, 0.3, 0.0, within_se=0.0).check(1)  # no error
    with pytest.raises(ConfigError, match="seeds must be at least 2"):
        TuneSettings("dropout", 0.0, 0.3, 0.0).check(1)


# ------------------------------------------------------------------------ command line

CLI_NET = ["--dataset", "digits", "--n-train", "200", "--depth", "3", "--width", "8",
           "--epochs", "3", "--seeds", "2", "--scheduler", "serial"]


@pytest.mark.parametrize(("args", "named"), [
    (["--low", "0.3", "--high", "0.1"], "high must be greater than low"),
    (["--knob", "momentum"], "knob must be one of"),
    (["--alpha", "0,1"], "argument --alpha: invalid float value"),
    (["--values-per-round", "1"], "values_per_round must be"),
    (["--rounds", "0"], "rounds must be"),
    (["--high", "1"], "high must be in [0, 1)"),
    (["--values", "5"], "unrecognized arguments: --values 5"),  # not --values-per-round
])
def test_cli_bad_input_exits_2_with_one_line_and_writes_nothing(args, named, tmp_path, capsys,
                                                                 monkeypatch):
    monkeypatch.setattr(tune_module, "sweep", lambda *a, **k: pytest.fail("trained"))
    try:
        assert main(["tune", *CLI_NET, *args, "-o", str(tmp_path / "t.nc")]) == 2
    except SystemExit as exit_:  # argparse's own checks (types) exit from the parser
        assert exit_.code == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("dnnphase: error:") and "\n" not in err
    assert named in err
    assert list(tmp_path.iterdir()) == []


def test_cli_writes_a_tune_result_and_refuses_to_overwrite_it(tmp_path, capsys):
    out = tmp_path / "t.nc"
    line = ["tune", *CLI_NET, "--knob", "dropout", "--low", "0", "--high", "0.3", "--alpha",
            "0", "--values-per-round", "2", "--rounds", "1", "-o", str(out), "--quiet"]
    assert main(line) == 0
    ds = results.load(out, kind="dnnphase.tune")
    assert ds.attrs["knob"] == "dropout" and int(ds["rounds_run"]) == 1
    assert ds["path_value"].sel(round=1).values.tolist() == [0.0, 0.3]
    assert ds.sizes["seed"] == 2 and str(ds["stop_reason"].values) in tune_module.STOP_REASONS
    before = out.read_bytes()
    assert main(line) == 2 and "exists" in capsys.readouterr().err
    assert out.read_bytes() == before
