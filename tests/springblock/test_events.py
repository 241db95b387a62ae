"""The event-driven overdamped chain (springblock.events) against the step kernel and theory."""

import math

import numpy as np
import pytest
from scipy import stats

import springblock as sb
from phasecore.checks import ConfigError
from springblock import theory
from springblock.algorithm import choose_algorithm, infinite_horizon_steps
from springblock.cli import main
from springblock.config import ChainConfig
from springblock.ensemble import run_ensemble

CHAIN = dict(blocks=7, mu_right=0.02, mu_left=0.04, theory_prediction=False)


def positions(ds):
    """x_1..x_L of every seed, (M, L)."""
    return 1.0 - ds["load_curve"].values[:, 1:]


def forces(x, k=1.0, y=1.0):
    """Spring force on every block, (M, L)."""
    padded = np.concatenate([np.zeros((len(x), 1)), x, np.full((len(x), 1), y)], axis=1)
    return k * (padded[:, 2:] - 2.0 * padded[:, 1:-1] + padded[:, :-2])


# --- equivalence in distribution with the step kernel ---------------------------------


def _assert_same_distribution(a, b):
    """Mean load curve within 4 standard errors; each block's spread: two-sample KS."""
    se = np.sqrt(a.var(0, ddof=1) / len(a) + b.var(0, ddof=1) / len(b))
    assert np.all(np.abs(a.mean(0) - b.mean(0)) <= 4 * se + 1e-12)
    for j in range(a.shape[1]):
        assert stats.ks_2samp(a[:, j], b[:, j]).pvalue > 1e-3, f"block {j + 1}"


@pytest.mark.parametrize("sharing", ["independent", "synchronous"])
@pytest.mark.parametrize("dist", ["gaussian", "truncated"])
@pytest.mark.parametrize("noise", [0.005, 0.01, pytest.param(0.03, marks=pytest.mark.slow)])
def test_events_match_steps_in_distribution(sharing, dist, noise):
    """L = 7, T = 1000, 160 seeds per kernel (different seeds: independent samples)."""
    kw = dict(CHAIN, noise=noise, noise_dist=dist, noise_sharing=sharing, steps=100_000,
              **({"truncation": 1.5} if dist == "truncated" else {}))
    steps = sb.simulate(seeds=range(160), algorithm="steps", **kw)
    fast = sb.simulate(seeds=range(1000, 1160), algorithm="events", **kw)
    assert set(fast["algorithm"].values) == {"events"} and (fast["events"] > 0).all()
    _assert_same_distribution(positions(steps), positions(fast))


def test_the_equivalence_test_has_power():
    """The same check tells T = 1000 from T = 700 (the chain is still creeping)."""
    kw = dict(CHAIN, noise=0.01, seeds=range(160))
    a = positions(sb.simulate(steps=100_000, algorithm="steps", **kw))
    b = positions(sb.simulate(steps=70_000, algorithm="events", **kw))
    with pytest.raises(AssertionError):
        _assert_same_distribution(a, b)


def test_trajectory_reads_the_piecewise_constant_state():
    kw = dict(CHAIN, noise=0.01, steps=20_000, record_every=2_000, seeds=range(64))
    fast = sb.simulate(algorithm="events", **kw)
    steps = sb.simulate(algorithm="steps", **kw)
    np.testing.assert_array_equal(fast["trajectory"].isel(time=-1), fast["load_curve"])
    np.testing.assert_array_equal(fast["trajectory"].isel(time=0).values[:, 1:], 1.0)
    d = fast["trajectory"].mean("seed") - steps["trajectory"].mean("seed")
    se = np.sqrt((fast["trajectory"].var("seed") + steps["trajectory"].var("seed")) / 64)
    assert (np.abs(d) <= 4 * se + 1e-12).all()


def test_result_depends_only_on_config_and_seed():
    a = ChainConfig(blocks=7, mu_right=0.02, mu_left=0.04, noise=0.01, steps=50_000,
                    algorithm="events")
    b = a.replace(noise=0.02)
    alone = run_ensemble([a], [5]).positions[0]
    mixed = run_ensemble([b, a, b], [1, 5, 9]).positions[1]
    assert np.array_equal(alone, mixed)


# --- long horizons -------------------------------------------------------------------


def test_gaussian_chain_reaches_F_star_at_T_1e7():
    """s = 0.01, T = 1e7 (1e9 steps, ~8 relaxation times at mu-> = 0.03, mu<- = 0.06)."""
    mu_r, mu_l, s = 0.03, 0.06, 0.01
    ds = sb.simulate(blocks=7, mu_right=mu_r, mu_left=mu_l, noise=s, steps=10**9, seeds=64,
                     algorithm="events", theory_prediction=False)
    assert (ds["steps_run"] == 1e9).all() and (ds["horizon"] == 1e7).all()
    x = positions(ds)
    stationary = theory.stationary_state(7, mu_r, mu_l, s)  # F* = -0.015: convex
    se = x.std(0, ddof=1) / np.sqrt(len(x))
    assert np.all(np.abs(x.mean(0) - stationary) < 4 * se)
    # the step kernel's default horizon T = 1000 is still concave here
    assert ds["curvature"].mean() > 0
    assert sb.simulate(blocks=7, mu_right=mu_r, mu_left=mu_l, noise=s, steps=100_000, seeds=8,
                       theory_prediction=False)["curvature"].mean() < 0


@pytest.mark.parametrize("sharing", ["independent", "synchronous"])
def test_truncated_noise_below_threshold_freezes_exactly_at_F_T(sharing):
    """b = c s = 0.01 < a = 0.03: every chain ends frozen, every force at F_T = mu-> - b."""
    ds = sb.simulate(**CHAIN, noise=0.01, noise_dist="truncated", truncation=1.0,
                     steps=math.inf, seeds=16, algorithm="events", noise_sharing=sharing)
    assert ds["frozen"].all()
    assert np.isfinite(ds["steps_run"]).all()
    f = forces(positions(ds))
    np.testing.assert_allclose(f, 0.02 - 0.01, atol=1e-12, rtol=0)
    assert (f <= 0.01 + 1e-13).all()  # nothing left to move
    np.testing.assert_allclose(ds["load_curve"].mean("seed"), ds["stationary_load_curve"],
                               atol=1e-12)


def test_noiseless_chain_freezes_at_eq7():
    ds = sb.simulate(**CHAIN, noise=0.0, steps=math.inf, seeds=1, algorithm="auto")
    assert ds["frozen"].all() and ds["algorithm"].item() == "events"
    np.testing.assert_allclose(positions(ds)[0], theory.noiseless_state(7, 0.02), atol=1e-12)


def test_relaxation_time_matches_theory_within_25_percent():
    """Decay of the slowest mode of the mean deviation from F*, fitted over 1..4 tau."""
    tau = theory.relaxation_time(0.02, 0.04, 0.01, 7)
    n = int(5 * tau / 0.01)
    ds = sb.simulate(**CHAIN, noise=0.01, steps=n, record_every=n // 100, seeds=64,
                     algorithm="events")
    x = 1.0 - ds["trajectory"].mean("seed").values[:, 1:]  # (time, L)
    mode = np.sin(np.pi * np.arange(1, 8) / 8)
    amplitude = (theory.stationary_state(7, 0.02, 0.04, 0.01) - x) @ mode
    t = ds["time"].values
    late = (t > tau) & (t < 4 * tau)
    rate = -np.polyfit(t[late], np.log(amplitude[late]), 1)[0]
    assert 1 / 1.25 < 1 / (rate * tau) < 1.25


def test_infinite_horizon_is_twenty_relaxation_times_for_gaussian_noise():
    cfg = ChainConfig(blocks=7, mu_right=0.02, mu_left=0.04, noise=0.01, steps=math.inf,
                      algorithm="events")
    tau_steps = theory.relaxation_time(0.02, 0.04, 0.01, 7) / 0.01
    assert infinite_horizon_steps(cfg) == math.ceil(20 * tau_steps)
    assert infinite_horizon_steps(cfg.replace(noise_dist="truncated", truncation=1.0)) \
        == math.inf  # b < a: until frozen


def test_auto_picks_steps_for_short_and_events_for_long_horizons():
    cfg = ChainConfig(blocks=7, mu_right=0.02, mu_left=0.04, noise=0.006, algorithm="auto")
    assert choose_algorithm(cfg.replace(steps=10_000)) == "steps"
    assert choose_algorithm(cfg.replace(steps=10**8)) == "events"
    assert choose_algorithm(cfg.replace(steps=10**8, noise=0.03)) == "steps"  # s = a
    assert choose_algorithm(cfg.replace(steps=10**8, dynamics="second_order")) == "steps"
    assert choose_algorithm(cfg.replace(steps=10**20)) == "events"  # beyond int64


def test_phase_diagram_accepts_the_algorithm_and_infinite_horizon():
    pd = sb.phase_diagram(("mu_right", [0.02]), ("noise", [0.0, 0.005]), mu_left_ratio=2,
                          seeds=4, steps=math.inf, algorithm="auto")
    assert (pd["algorithm"] == "events").all()
    assert pd["frozen"].sel(noise=0.0).all() and not pd["frozen"].sel(noise=0.005).any()
    np.testing.assert_allclose(pd["curvature_scaled"].mean("seed"),
                               pd["theory_curvature_scaled"], atol=0.01)


# --- bad input -----------------------------------------------------------------------


@pytest.mark.parametrize("changes", [
    dict(algorithm="events", dynamics="second_order"),
    dict(algorithm="events", dynamics="langevin", damping=1.0),
    dict(algorithm="events", rng="legacy"),
    dict(algorithm="events", stop_tol=1e-3, stop_window=1000),
    dict(algorithm="events", noise_decay=0.1),
    dict(algorithm="fast"),
    dict(steps=math.inf),  # algorithm="steps" cannot reach it
    dict(steps=2**63),
])
def test_what_events_cannot_honour_is_an_error_naming_algorithm(changes):
    with pytest.raises(ConfigError, match="algorithm"):
        ChainConfig(noise=0.01, **changes)


@pytest.mark.parametrize("changes,name", [
    (dict(steps=math.inf, algorithm="events", record_every=10), "record_every"),
    (dict(steps=math.inf, algorithm="auto", noise_decay=0.1), "steps"),
    (dict(steps=1.5), "steps"),
    (dict(steps=-math.inf, algorithm="events"), "steps"),
])
def test_bad_horizons(changes, name):
    with pytest.raises(ConfigError, match=name):
        ChainConfig(noise=0.01, **changes)


def test_huge_step_counts_are_exact_integers():
    assert ChainConfig(steps=1e10, algorithm="events").steps == 10**10


def test_cli_algorithm_and_infinite_steps(tmp_path, capsys):
    out = tmp_path / "chain.nc"
    assert main(["simulate", "--noise", "0.006", "--mu-right", "0.02", "--mu-left", "0.04",
                 "--steps", "1e9", "--algorithm", "auto", "--seeds", "2", "-o", str(out)]) == 0
    ds = sb.load(out)
    assert (ds["algorithm"] == "events").all() and (ds["steps_run"] == 1e9).all()
    assert ds.attrs["horizon"] == 1e7
    assert main(["simulate", "--steps", "inf", "-o", str(tmp_path / "x.nc")]) == 2
    assert "algorithm" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["simulate", "--steps", "1.5", "-o", str(tmp_path / "y.nc")])
