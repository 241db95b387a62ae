"""springblock.theory against direct computation and Monte Carlo."""

import math

import numpy as np
import pytest

from springblock import theory


def test_equal_force_state_balances_forces_and_load():
    x = theory.equal_force_state(0.013, 6, modulus=2.0, target=1.5)
    e = theory.elongations(x, 1.5)
    assert e.sum() == pytest.approx(1.5)
    np.testing.assert_allclose(2.0 * np.diff(e), 0.013, atol=1e-14)


def test_load_curve_starts_at_target_and_drops_by_positions():
    d = theory.load_curve(np.array([[0.1, 0.3]]), target=2.0)
    np.testing.assert_allclose(d, [[2.0, 1.9, 1.7]])


@pytest.mark.parametrize("truncation", [math.inf, 0.8, 2.0])
@pytest.mark.parametrize("force", [-0.2, -0.03, 0.0, 0.01, 0.05, 0.3])
def test_mean_drift_equals_monte_carlo(force, truncation):
    mu_r, mu_l, s = 0.04, 0.07, 0.1
    rng = np.random.default_rng(1)
    xi = rng.standard_normal(4_000_000)
    xi = xi[np.abs(xi) <= truncation]
    z = force + s * xi
    f = np.where(z > mu_r, z - mu_r, np.where(z < -mu_l, z + mu_l, 0.0))
    h = theory.mean_drift(force, mu_r, mu_l, s, truncation)
    assert h == pytest.approx(f.mean(), abs=5 * f.std() / math.sqrt(f.size) + 1e-12)


def test_mean_drift_without_noise_is_dead_zone():
    forces = np.array([-0.5, -0.07, -0.01, 0.0, 0.04, 0.2])
    np.testing.assert_allclose(theory.mean_drift(forces, 0.04, 0.07, 0.0),
                               [-0.43, 0.0, 0.0, 0.0, 0.0, 0.16])


@pytest.mark.parametrize("noise", [0.01, 0.1, 1.0])
def test_gaussian_stationary_force_has_zero_drift_for_every_noise(noise):
    f_star = theory.stationary_force(0.02, 0.05, noise)
    assert f_star == pytest.approx(-0.015)
    assert theory.mean_drift(f_star, 0.02, 0.05, noise) == pytest.approx(0.0, abs=1e-15)


def test_truncated_stationary_force_has_zero_drift():
    for bound in (0.2, 0.5, 3.0):
        f_t = theory.stationary_force(0.02, 0.05, 0.05, bound)
        assert f_t == pytest.approx(max(0.02 - bound * 0.05, -0.015))
        assert theory.mean_drift(f_t, 0.02, 0.05, 0.05, bound) == pytest.approx(0, abs=1e-15)
        # just above F_T blocks still move right, so they stop exactly there
        assert theory.mean_drift(f_t + 1e-3, 0.02, 0.05, 0.05, bound) > 0


def test_noiseless_prediction_is_eq7():
    x = theory.predict_positions(7, 0.01, 0.02, 0.0, horizon=3000.0)
    np.testing.assert_allclose(x, theory.noiseless_state(7, 0.01), atol=1e-7)


def test_relaxation_time_matches_linearised_decay():
    """Integrate the mean-drift ODE near F* and compare the slowest decay rate."""
    mu_r, mu_l, s = 0.02, 0.04, 0.03
    tau = theory.relaxation_time(mu_r, mu_l, s, blocks=5)
    times = np.array([2 * tau, 4 * tau])
    x = theory.predict_positions(5, mu_r, mu_l, s, horizon=times[-1], times=times)
    gap = np.abs(x - theory.stationary_state(5, mu_r, mu_l, s)).max(axis=1)
    rate = math.log(gap[0] / gap[1]) / (times[1] - times[0])
    assert rate * tau == pytest.approx(1.0, rel=0.1)


def test_stability_bounds():
    lam_max = theory.laplacian_eigenvalues(7)[-1]
    assert lam_max < 4
    assert theory.max_stable_step(7, 1.0) == pytest.approx(2 / lam_max)
    assert theory.max_stable_step(7, 0.1, "langevin", damping=1.0) == pytest.approx(
        1.0 / (0.1 * lam_max))
    h = theory.max_stable_step(7, 1.0, "second_order", damping=4.0)
    assert h * h * lam_max == pytest.approx(4 - 2 * h * 4.0)
    with pytest.raises(ValueError, match="dynamics"):
        theory.max_stable_step(7, 1.0, "ballistic")


def _lsoda_positions(blocks, mu_r, mu_l, s, horizon, truncation=math.inf, decay=0.0,
                     modulus=1.0, target=1.0, times=None):
    """Independent oracle: the same mean-drift ODE through scipy's adaptive LSODA."""
    from scipy.integrate import solve_ivp

    def rhs(t, x):
        padded = np.concatenate([[0.0], x, [target]])
        force = modulus * (padded[2:] - 2.0 * padded[1:-1] + padded[:-2])
        return theory.mean_drift(force, mu_r, mu_l, s * math.exp(-decay * t), truncation)

    t_eval = [horizon] if times is None else times
    sol = solve_ivp(rhs, (0.0, horizon), np.zeros(blocks), method="LSODA", rtol=1e-9,
                    atol=1e-11, t_eval=t_eval)
    return sol.y[:, -1] if times is None else sol.y.T


@pytest.mark.parametrize(
    "blocks,mu_r,mu_l,s,horizon,kwargs",
    [
        (7, 0.01, 0.02, 0.005, 1000.0, {}),  # transition region
        (7, 0.02, 0.04, 0.0, 1000.0, {}),  # noiseless: Eq. 7, dead-zone kinks
        (7, 0.05, 0.10, 0.0, 1000.0, {}),  # noiseless, only a tail of blocks moves
        (7, 0.08, 0.16, 0.1, 300.0, {}),  # strong noise
        (5, 0.02, 0.03, 0.01, 300.0, {"modulus": 2.0, "target": 1.5}),
        (6, 0.02, 0.04, 0.05, 400.0, {"truncation": 0.8}),
        (6, 0.02, 0.04, 0.05, 400.0, {"decay": 0.003}),
    ],
)
def test_mean_field_integrator_matches_an_adaptive_solver(blocks, mu_r, mu_l, s, horizon,
                                                          kwargs):
    ref = _lsoda_positions(blocks, mu_r, mu_l, s, horizon, **kwargs)
    names = {"decay": "noise_decay"}
    got = theory.predict_positions(blocks, mu_r, mu_l, s, horizon,
                                   **{names.get(k, k): v for k, v in kwargs.items()})
    assert got.shape == (blocks,)
    np.testing.assert_allclose(got, ref, atol=1e-6, rtol=0)


def test_mean_field_integrator_batches_records_times_and_scales_time():
    mu = np.array([[0.01], [0.03]])  # (2, 1) against (3,) noise -> (2, 3, L)
    s = np.array([0.0, 0.005, 0.02])
    both = theory.predict_positions(6, mu, 2 * mu, s, 200.0)
    assert both.shape == (2, 3, 6)
    alone = theory.predict_positions(6, 0.03, 0.06, 0.005, 200.0)
    np.testing.assert_array_equal(both[1, 1], alone)  # parameter sets do not interact
    times = np.array([0.0, 20.0, 200.0])
    frames = theory.predict_positions(6, 0.03, 0.06, 0.005, 200.0, times=times)
    assert frames.shape == (3, 6)
    np.testing.assert_array_equal(frames[0], 0.0)  # at rest at t = 0
    np.testing.assert_allclose(frames, _lsoda_positions(6, 0.03, 0.06, 0.005, 200.0,
                                                        times=times), atol=1e-6)
    # time scale c: the state at c * t
    scaled = theory.predict_positions(6, [0.03, 0.03], 0.06, 0.005, 100.0, times=[10.0, 100.0],
                                      time_scale=[1.0, 2.0])
    np.testing.assert_allclose(scaled[1], frames[1:], atol=1e-6)


@pytest.mark.parametrize("kwargs,name", [({"blocks": 0}, "blocks"), ({"horizon": 0.0}, "horizon"),
                                         ({"times": [3.0, 1.0]}, "times"),
                                         ({"time_scale": -1.0}, "time_scale")])
def test_mean_field_integrator_rejects_bad_arguments(kwargs, name):
    args = {"blocks": 5, "mu_right": 0.01, "mu_left": 0.02, "noise": 0.01, "horizon": 10.0}
    args.update(kwargs)
    with pytest.raises(ValueError, match=name):
        theory.predict_positions(**args)


def test_laplacian_extremes_are_the_spectrums_ends_without_the_spectrum():
    for blocks in (*range(1, 40), 1000, 10**6):
        lam = theory.laplacian_eigenvalues(blocks)
        assert theory.laplacian_extremes(blocks) == (lam[0], lam[-1])


@pytest.mark.parametrize("call,name", [
    (lambda: theory.noiseless_state(7, -1), "mu_right"),
    (lambda: theory.noiseless_state(0, 0.02), "blocks"),
    (lambda: theory.noiseless_state(7, float("nan")), "mu_right"),
    (lambda: theory.moved_blocks(7.5, 0.02), "blocks"),
    (lambda: theory.stationary_state(7, 0.02, -0.04, 0.01), "mu_left"),
    (lambda: theory.stationary_force(0.02, 0.04, -0.01), "noise"),
    (lambda: theory.equal_force_state(0.01, 7, modulus=0.0), "modulus"),
    (lambda: theory.equal_force_state(0.01, 7, target=0.0), "target"),
    (lambda: theory.relaxation_time(0.02, 0.04, 0.01, 7, modulus=-1.0), "modulus"),
    (lambda: theory.max_stable_step(7, 1.0, "langevin", -2.0), "damping"),
])
def test_the_theory_checks_its_arguments_as_the_chain_does(call, name):
    from phasecore.checks import ConfigError

    with pytest.raises(ConfigError, match=f"^{name} must be"):
        call()


def test_a_phase_diagrams_cells_integrated_side_by_side_are_each_cells_own_bit_for_bit():
    """predict_many integrates the cells that share a horizon in one call: the same steps
    and, set by set, the same elementwise arithmetic as one call a cell, so the phase
    diagram's prediction is unchanged to the last bit (and some twenty times faster)."""
    from springblock.algorithm import LONG_HORIZON
    from springblock.config import ChainConfig
    from springblock.ensemble import predict, predict_many

    cells = [ChainConfig(blocks=5, mu_right=mr, mu_left=2 * mr, noise=s, steps=20000,
                         **extra)
             for extra in ({}, {"noise_dist": "truncated", "truncation": 1.5},
                           {"noise_decay": 1e-3})
             for mr in (0.0, 0.01, 0.03) for s in (0.0, 0.02, 0.05)]
    horizons = [c.horizon for c in cells]
    horizons[4] *= 0.5  # a cell whose chains stopped early: its own horizon, its own call
    horizons[7] = LONG_HORIZON * 2  # in log time
    horizons[8] = np.inf  # the stationary state
    together = predict_many(cells, horizons)  # (cells, L)
    one_by_one = np.stack([predict(c, h) for c, h in zip(cells, horizons, strict=True)])
    assert together.shape == (len(cells), 5)
    assert np.array_equal(together, one_by_one)


def test_the_prediction_is_estimated_as_it_runs_side_by_side():
    """A chunk of cells costs its integrator steps once, plus each cell's arithmetic."""
    from springblock import memory as budget
    from springblock.config import ChainConfig

    cells = [ChainConfig(mu_right=0.01 * k, noise=0.02) for k in range(36)]
    one = budget.theory_seconds(cells[0], True)
    together = budget.phase_seconds(cells, 4, "serial", None, True).theory
    in_six = budget.phase_seconds(cells, 4, "serial", None, True, per_chunk=6).theory
    assert one < together < in_six < 36 * one
    assert budget.phase_seconds(cells, 4, "serial", None, True, per_chunk=1).theory == (
        pytest.approx(36 * one))
    assert budget.phase_seconds(cells, 4, "serial", None, False).theory == 0.0
