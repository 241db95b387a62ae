"""The chain simulator against closed-form theory, an oracle, and the paper's numbers."""

import numba
import numpy as np
import pytest

import springblock as sb
from phasecore import loadcurve
from springblock import simulate, theory
from springblock.config import ChainConfig
from springblock.ensemble import run_ensemble
from tests import chain_oracle

CASES = [  # (blocks, modulus, mu_right, mu_left)
    (7, 1.0, 0.01, 0.02),
    (5, 2.0, 0.05, 0.0),
    (7, 1.0, 0.1, 0.2),  # only a tail of 3 blocks moves
    (3, 0.5, 0.02, 0.01),
    (10, 1.0, 0.002, 0.004),
]


def positions(ds):
    """x_1..x_L from a simulate() Dataset (M, L)."""
    return ChainConfig.from_json(ds.attrs["config"]).target - ds["load_curve"].values[:, 1:]


@pytest.mark.parametrize("blocks,modulus,mu_right,mu_left", CASES)
@pytest.mark.parametrize("dynamics", ["overdamped", "second_order"])
def test_noiseless_chain_reaches_eq7(blocks, modulus, mu_right, mu_left, dynamics):
    ds = simulate(blocks=blocks, modulus=modulus, mu_right=mu_right, mu_left=mu_left,
                  steps=200_000, dynamics=dynamics, theory_prediction=False)
    expected = theory.noiseless_state(blocks, mu_right, modulus)
    np.testing.assert_allclose(positions(ds)[0], expected, atol=1e-6, rtol=0)


def test_eq7_tail_case_is_really_a_tail():
    x = theory.noiseless_state(7, 0.1)
    assert theory.moved_blocks(7, 0.1) == 3
    assert np.all(x[:4] == 0) and np.all(x[4:] > 0)
    # the resting block next to the tail feels at most mu->
    padded = np.concatenate([[0.0], x, [1.0]])
    force = padded[2:] - 2 * padded[1:-1] + padded[:-2]
    assert force[3] <= 0.1 + 1e-12
    np.testing.assert_allclose(force[4:], 0.1, atol=1e-12)


def test_gaussian_stationary_state_is_F_star():
    """576 chains x 2e5 steps: the mean sits at F* = (mu-> - mu<-)/2 within its error."""
    mu_r, mu_l, s = 0.01, 0.03, 0.05
    ds = simulate(blocks=7, mu_right=mu_r, mu_left=mu_l, noise=s, steps=200_000, seeds=576,
                  theory_prediction=False)
    x = positions(ds)
    target = theory.stationary_state(7, mu_r, mu_l, s)
    stderr = x.std(0, ddof=1) / np.sqrt(len(x))
    assert np.all(np.abs(x.mean(0) - target) < 3.5 * stderr)
    assert theory.stationary_force(mu_r, mu_l, s) == pytest.approx(-0.01)
    assert ds["curvature"].mean() > 0  # mu<- > mu->: convex


def test_truncated_noise_large_bound_fluctuates_around_symmetric_force():
    # b = 3 * 0.05 = 0.15 > a = 0.03: F_T = (mu-> - mu<-)/2
    ds = simulate(blocks=7, mu_right=0.02, mu_left=0.04, noise=0.05, noise_dist="truncated",
                  truncation=3.0, steps=200_000, seeds=200, theory_prediction=False)
    x = positions(ds)
    target = theory.stationary_state(7, 0.02, 0.04, 0.05, truncation=3.0)
    assert theory.stationary_force(0.02, 0.04, 0.05, 3.0) == pytest.approx(-0.01)
    stderr = x.std(0, ddof=1) / np.sqrt(len(x))
    assert np.all(np.abs(x.mean(0) - target) < 4 * stderr + 1e-4)


def test_truncated_noise_small_bound_converges_to_mu_right_minus_b():
    """b = 0.01 < a: an absorbing state at F_T = mu-> - b, approached like 1/T."""
    common = dict(blocks=7, mu_right=0.02, mu_left=0.04, noise=0.02, noise_dist="truncated",
                  truncation=0.5, seeds=8, theory_prediction=False)
    target = theory.stationary_state(7, 0.02, 0.04, 0.02, truncation=0.5)
    assert theory.stationary_force(0.02, 0.04, 0.02, 0.5) == pytest.approx(0.01)
    gaps = []
    for steps in (100_000, 1_000_000):
        gap = target - positions(simulate(steps=steps, **common)).mean(0)
        assert np.all(gap >= 0)  # blocks approach from the wall side and never overshoot
        gaps.append(gap.max())
    assert gaps[1] < 3e-4
    assert 5 < gaps[0] / gaps[1] < 20  # ~1/T: the drift vanishes quadratically at F_T


@pytest.mark.parametrize("noise,horizon", [(0.01, 100), (0.005, 1000), (0.02, 1000), (0.05, 200)])
def test_mean_drift_prediction_matches_simulation(noise, horizon):
    """Tolerance 1e-3 (0.1 % of y): the mean-field step E[h(F)] ~ h(E[F]) neglects
    the spread of F; measured deviations are <= 5e-4 at these (s, T), with
    standard errors <= 3e-4 from 200 seeds."""
    ds = simulate(blocks=7, mu_right=0.02, mu_left=0.04, noise=noise,
                  steps=int(round(horizon / 0.01)), seeds=200)
    mean = ds["load_curve"].mean("seed").values
    np.testing.assert_allclose(mean, ds["theory_load_curve"].values, atol=1e-3, rtol=0)


def test_zero_right_friction_linear_without_noise_convex_with_noise():
    quiet = simulate(blocks=7, mu_right=0.0, mu_left=0.02, steps=100_000, seeds=1)
    assert abs(quiet["curvature"].item()) < 1e-8
    assert abs(quiet["curvature_scaled"].item()) < 1e-6
    noisy = simulate(blocks=7, mu_right=0.0, mu_left=0.02, noise=0.02, steps=100_000, seeds=32)
    assert noisy["curvature"].mean() > 0.02
    assert (noisy["curvature_scaled"] > 0).all()


def _oracle_vs_kernel(kernel_config, oracle, oracle_kwargs, n_chains):
    rng = np.random.default_rng(12345)
    ref = np.array([oracle(normal=rng.standard_normal, **oracle_kwargs) for _ in range(n_chains)])
    ds = simulate(kernel_config, seeds=n_chains, theory_prediction=False)
    got = positions(ds)
    se = np.sqrt(ref.var(0, ddof=1) / n_chains + got.var(0, ddof=1) / n_chains)
    z = np.abs(ref.mean(0) - got.mean(0)) / se
    assert np.all(z < 4.0), z
    ratio = got.std(0, ddof=1) / ref.std(0, ddof=1)
    assert np.all((ratio > 0.75) & (ratio < 1.33)), ratio


def test_kernel_statistically_equals_oracle_overdamped():
    cfg = ChainConfig(blocks=5, mu_right=0.05, mu_left=0.1, noise=0.1, steps=800)
    _oracle_vs_kernel(cfg, chain_oracle.overdamped,
                      dict(n_blocks=5, mu_right=0.05, mu_left=0.1, noise=0.1, steps=800), 300)


def test_kernel_statistically_equals_oracle_synchronous():
    cfg = ChainConfig(blocks=5, mu_right=0.05, mu_left=0.1, noise=0.1, steps=800,
                      noise_sharing="synchronous")
    _oracle_vs_kernel(cfg, chain_oracle.overdamped,
                      dict(n_blocks=5, mu_right=0.05, mu_left=0.1, noise=0.1, steps=800,
                           synchronous=True), 300)


def test_kernel_statistically_equals_oracle_second_order():
    cfg = ChainConfig(blocks=4, mu_right=0.05, mu_left=0.1, noise=0.2, steps=600,
                      dynamics="second_order", damping=4.0)
    _oracle_vs_kernel(cfg, chain_oracle.second_order,
                      dict(n_blocks=4, mu_right=0.05, mu_left=0.1, noise=0.2, steps=600,
                           gamma=4.0), 300)


def test_kernel_statistically_equals_oracle_langevin():
    cfg = ChainConfig(blocks=4, mu_right=0.01, mu_left=0.02, noise=0.02, steps=400,
                      dynamics="langevin", damping=1.0, step=0.05, modulus=0.5)
    _oracle_vs_kernel(cfg, chain_oracle.langevin,
                      dict(n_blocks=4, mu_right=0.01, mu_left=0.02, noise=0.02, steps=400,
                           gamma=1.0, dt=0.05, k=0.5), 300)


@pytest.mark.parametrize("synchronous", [False, True])
def test_legacy_rng_reproduces_plain_numpy_loop_exactly(synchronous):
    """rng='legacy' equals np.random.seed(seed); np.random.randn(...) bit for bit."""
    params = dict(n_blocks=7, mu_right=0.1, mu_left=0.2, noise=0.1, steps=2000,
                  synchronous=synchronous)
    expected = []
    for seed in (0, 7):
        np.random.seed(seed)  # noqa: NPY002 (the notebook's generator is the point)
        expected.append(chain_oracle.overdamped(normal=np.random.randn, **params))  # noqa: NPY002
    cfg = ChainConfig(blocks=7, mu_right=0.1, mu_left=0.2, noise=0.1, steps=2000, rng="legacy",
                      noise_sharing="synchronous" if synchronous else "independent")
    assert np.array_equal(run_ensemble([cfg, cfg], [0, 7]).positions, np.array(expected))


def test_langevin_with_paper_parameters_matches_reference():
    """The paper's Langevin parameters (SM Eqs. 12–13), 2000 paths, same noise for all
    blocks."""
    ds = simulate(blocks=7, dynamics="langevin", damping=1.0, modulus=0.1, noise=0.003,
                  noise_decay=0.001, step=0.05, steps=14_000, mu_right=0.003, mu_left=0.004,
                  noise_sharing="synchronous", seeds=2000, theory_prediction=False)
    reference = [0.8585, 0.7217, 0.5897, 0.4623, 0.3397, 0.2217, 0.1085]
    np.testing.assert_allclose(ds["load_curve"].mean("seed").values[1:], reference, atol=0.005)


def test_results_do_not_depend_on_thread_count():
    most = numba.config.NUMBA_NUM_THREADS  # NUMBA_NUM_THREADS caps set_num_threads
    if most < 2:
        pytest.skip(f"numba is limited to {most} thread here (NUMBA_NUM_THREADS)")
    cfg = ChainConfig(blocks=7, mu_right=0.01, mu_left=0.02, noise=0.05, steps=5000)
    before = numba.get_num_threads()
    try:
        numba.set_num_threads(1)
        one = run_ensemble([cfg] * 16, np.arange(16)).positions
        numba.set_num_threads(most)
        two = run_ensemble([cfg] * 16, np.arange(16)).positions
    finally:
        numba.set_num_threads(before)
    assert np.array_equal(one, two)


def test_chain_result_independent_of_ensemble_composition():
    """A chain's result depends only on its config and seed, not its neighbours."""
    a = ChainConfig(blocks=5, mu_right=0.01, noise=0.05, steps=3000)
    b = a.replace(mu_right=0.03, noise=0.01)
    alone = run_ensemble([a], [5]).positions[0]
    mixed = run_ensemble([b, a, b], [1, 5, 9]).positions[1]
    assert np.array_equal(alone, mixed)


def test_same_seed_same_result_different_seed_different():
    cfg = ChainConfig(blocks=5, mu_right=0.01, noise=0.05, steps=2000)
    x = run_ensemble([cfg] * 3, [1, 1, 2]).positions
    assert np.array_equal(x[0], x[1]) and not np.array_equal(x[0], x[2])


def test_explicit_scheme_diverges_beyond_stability_bound():
    """The bound the validation enforces is the real one: just past it the chain blows up."""
    limit = theory.max_stable_step(7, 1.0)
    for factor, finite in ((0.97, True), (1.03, False)):
        cfg = ChainConfig(blocks=7, noise=0.01, steps=10)
        params = np.tile(cfg.param_row(), (1, 1))
        from springblock import dynamics

        params[0, dynamics.P_STEP] = factor * limit
        x = np.zeros((1, 7))
        states = np.array([[1, 2, 3, 4]], dtype=np.uint64)
        dynamics.overdamped(x, states, params, 20_000, 0, False, 0, np.zeros((1, 0, 7)))
        assert np.all(np.abs(x) < 10) == finite


def test_stopping_rule_stops_and_reports_horizon():
    ds = simulate(blocks=7, mu_right=0.02, mu_left=0.04, noise=0.005, steps=400_000,
                  stop_tol=1e-3, stop_window=10_000, seeds=8, theory_prediction=False)
    assert (ds["steps_run"] < 400_000).all()
    assert (ds["steps_run"] % 10_000 == 0).all()
    np.testing.assert_allclose(ds["horizon"], ds["steps_run"] * 0.01)


def test_trajectory_records_initial_and_final_state():
    ds = simulate(blocks=5, mu_right=0.01, noise=0.02, steps=1000, record_every=100, seeds=3)
    assert ds["trajectory"].shape == (3, 11, 6)
    np.testing.assert_array_equal(ds["trajectory"].isel(time=0).values[:, 1:], 1.0)
    np.testing.assert_array_equal(ds["trajectory"].isel(time=-1).values, ds["load_curve"].values)
    np.testing.assert_allclose(ds["time"].values, np.arange(11) * 1.0)


def test_noise_decay_reduces_fluctuations():
    kwargs = dict(blocks=5, mu_right=0.01, mu_left=0.02, noise=0.1, steps=20_000, seeds=64,
                  theory_prediction=False)
    steady = simulate(**kwargs)["load_curve"].std("seed").mean()
    decayed = simulate(noise_decay=0.05, **kwargs)["load_curve"].std("seed").mean()
    assert decayed < 0.5 * steady


def test_equiseparated_chain_has_lowest_elastic_energy():
    rng = np.random.default_rng(0)
    linear = theory.equal_force_state(0.0, 7)
    e_lin = theory.elastic_energy(linear)
    for force in (-0.02, 0.01, 0.05):
        assert theory.elastic_energy(theory.equal_force_state(force, 7)) > e_lin
    for _ in range(20):
        assert theory.elastic_energy(linear + 0.01 * rng.standard_normal(7)) > e_lin


def test_noiseless_curvature_range_matches_design():
    """Curvature runs from -(L-1) mu->/k (noiseless) to (L-1)(mu<- - mu->)/(2k) (F*)."""
    mu = 0.02
    d0 = theory.load_curve(theory.noiseless_state(7, mu))
    assert loadcurve.curvature(d0) == pytest.approx(-6 * mu)
    d_inf = theory.load_curve(theory.stationary_state(7, mu, 2 * mu, noise=0.01))
    assert loadcurve.curvature(d_inf) == pytest.approx(3 * mu)


def test_overflowing_chains_are_recorded_as_diverged_with_a_warning():
    with pytest.warns(UserWarning, match="3 of 3 chain.s. diverged"):
        ds = sb.simulate(mu_right=0.1, mu_left=0.2, noise=1e308, steps=100, seeds=3)
    assert ds["diverged"].values.all()
    with pytest.warns(UserWarning, match="4 of 8 chain.s. diverged") as caught:
        pd = sb.phase_diagram(("mu_right", [0.0, 0.01]), ("noise", [0.0, 1e308]), seeds=2,
                              steps=100)
    assert caught[0].filename == __file__
    assert pd["diverged"].sel(noise=1e308).values.all()
    assert not pd["diverged"].sel(noise=0.0).values.any()
    assert np.isfinite(pd["load_curve"].sel(noise=0.0)).all()


def test_overflow_reads_the_same_from_both_kernels():
    for algorithm in ("steps", "events"):
        with pytest.warns(UserWarning, match="2 of 2 chain.s. diverged"):
            ds = sb.simulate(mu_right=0.1, mu_left=0.2, noise=1e308, steps=10**4, seeds=2,
                             algorithm=algorithm)
        assert np.isnan(ds["load_curve"].isel(layer=slice(1, None))).all(), algorithm
        assert not ds["frozen"].any() and ds["diverged"].all(), algorithm


def test_repeated_seeds_and_axis_values_are_refused():
    from phasecore.checks import ConfigError

    with pytest.raises(ConfigError, match=r"seeds must be distinct \(got \[1, 1\]\)"):
        sb.simulate(seeds=[1, 1])
    with pytest.raises(ConfigError, match="the noise axis values must be distinct"):
        sb.phase_diagram(("mu_right", [0.0]), ("noise", [0.01, 0.01]))
