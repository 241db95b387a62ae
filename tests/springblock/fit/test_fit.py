"""springblock.fit: spring-chain parameters from load-curve shapes.

Most fits here use the default horizon T = 1000 and bounds, so the starting
grid is integrated once per test session (functools cache) and shared.
"""

import json
import math

import numpy as np
import pytest

from springblock import fit, simulate, theory
from springblock.fit.refine import simulated_shapes

# --------------------------------------------------------------------------
# normalisation and the effective force
# --------------------------------------------------------------------------


def test_normalise_scales_to_one_and_zero_and_masks_flat_or_nan_curves():
    d = np.array([[5.0, 4.0, 2.0, -1.0], [3.0, 3.0, 3.0, 3.0], [1.0, np.nan, 0.5, 0.0]])
    n = fit.normalise(d)
    np.testing.assert_allclose(n[0], [1.0, 5 / 6, 0.5, 0.0])
    assert np.isnan(n[1]).all() and np.isnan(n[2]).all()


@pytest.mark.parametrize("blocks", [3, 7, 12])
@pytest.mark.parametrize("force", [-0.2, -0.02, 0.0, 0.004, 0.03])
def test_effective_force_is_exact_on_equal_force_chains(blocks, force):
    modulus = 2.0
    x = theory.equal_force_state(force, blocks, modulus=modulus, target=1.0)
    curve = theory.load_curve(x, 1.0)
    # any affine rescaling of the curve (a network's units) has the same shape
    for scaled in (curve, 3.7 * curve - 12.0):
        eff = fit.effective_force(scaled, modulus=modulus)
        assert eff.force == pytest.approx(force, abs=1e-10)
        assert eff.residual < 1e-12
        np.testing.assert_allclose(eff.curve, fit.normalise(curve), atol=1e-12)


def test_effective_force_sign_convention_and_limits():
    ell = np.arange(8.0)
    line = 1 - ell / 7
    concave = line + 0.01 * ell * (7 - ell)  # above the line: deep layers separate more
    convex = line - 0.01 * ell * (7 - ell)
    too_convex = line - 0.2 * ell * (7 - ell)  # beta L < -1: dips far below 0
    eff = fit.effective_force(np.stack([concave, convex, too_convex, np.full(8, 2.0)]))
    assert eff.force[0] > 0 > eff.force[1]
    assert eff.force[2] == -np.inf and np.isfinite(eff.residual[2])
    assert np.isnan(eff.force[3]) and np.isnan(eff.residual[3])
    # F_eff of a noiseless chain is its right friction (paper Eq. 7)
    quiet = theory.load_curve(theory.noiseless_state(7, 0.013))
    assert fit.effective_force(quiet).force == pytest.approx(0.013, abs=1e-12)


# --------------------------------------------------------------------------
# recovery
# --------------------------------------------------------------------------


def test_recovers_theory_curves_near_exactly_and_nan_gives_nan():
    """Curves from the fit's own model are recovered to 1e-6 relative.

    Rows: transition region, nearly relaxed, only a tail of blocks moving,
    noiseless; then a fully relaxed chain (s only bounded below), and a NaN
    curve. Leading shape (2, 3) to check that it is kept.
    """
    mus = np.array([0.02, 0.03, 0.05, 0.015, 0.01])
    noises = np.array([0.005, 0.02, 0.01, 0.0, 0.06])
    curves = fit.chain_shapes(7, mus, noises)
    batch = np.concatenate([curves, np.full((1, 8), np.nan)]).reshape(2, 3, 8)
    res = fit.fit_spring(batch)
    assert res.mu_right.shape == (2, 3) and res.curve.shape == (2, 3, 8)

    mu_fit, s_fit = res.mu_right.ravel(), res.noise.ravel()
    np.testing.assert_allclose(mu_fit[:4], mus[:4], rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(s_fit[:4], noises[:4], rtol=1e-6, atol=1e-9)
    assert np.all(res.residual.ravel()[:4] < 1e-9)
    np.testing.assert_allclose(res.mu_left.ravel()[:5], 2 * mu_fit[:5])

    # Fully relaxed (F* = -mu/2 reached): mu-> is exact, s is the smallest
    # noise whose curve is within TIE_TOLERANCE of the data.
    assert mu_fit[4] == pytest.approx(0.01, rel=1e-6)
    assert 0 < s_fit[4] < 0.06
    assert res.residual.ravel()[4] <= fit.TIE_TOLERANCE * 1.01
    lower = fit.chain_shapes(7, 0.01, 0.97 * s_fit[4])
    assert np.sqrt(np.mean((lower - res.data.ravel()[32:40]) ** 2)) > fit.TIE_TOLERANCE
    assert res.noise_se.ravel()[4] > 0.1 * s_fit[4]  # only loosely determined there

    nan_row = (1, 2)
    for name in ("mu_right", "mu_left", "noise", "residual", "effective_force",
                 "mu_right_se", "noise_se"):
        assert np.isnan(getattr(res, name)[nan_row]), name
        assert np.isfinite(getattr(res, name)[0, 0]), name
    assert np.isnan(res.curve[nan_row]).all()


def test_recovers_parameters_from_simulated_chains():
    """Tolerance 3 % relative on mu-> and s, residual < 2e-4.

    The data are 64-seed means of the simulated chain itself (noise
    included, T = 1000, mu<- = 2 mu->). Their misfit to the mean-field model
    is 3e-5..1.3e-4 RMS (mean-field bias plus a sampling error of ~1e-4),
    and what of it lies along the fit's weak direction (a singular value
    250-400 times smaller than F_eff's) moves the parameters: measured
    errors <= 1.6 %. F_eff, the strong direction, is recovered to 1 % of
    mu->.
    """
    truth = [(0.02, 0.005), (0.01, 0.005), (0.03, 0.01), (0.02, 0.01)]
    curves = np.stack([
        simulate(blocks=7, mu_right=mu, mu_left=2 * mu, noise=s, steps=100_000, seeds=64,
                 theory_prediction=False)["load_curve"].mean("seed").values
        for mu, s in truth
    ])
    res = fit.fit_spring(curves)
    mu_true, s_true = np.array(truth).T
    np.testing.assert_allclose(res.mu_right, mu_true, rtol=0.03)
    np.testing.assert_allclose(res.noise, s_true, rtol=0.03)
    assert np.all(res.residual < 2e-4)
    model_force = fit.effective_force(fit.chain_shapes(7, mu_true, s_true)).force
    assert np.all(np.abs(res.effective_force - model_force) < 0.01 * mu_true)
    # the standard errors are small where the split is resolved
    assert np.all(res.mu_right_se < 0.1 * mu_true) and np.all(res.noise_se < 0.1 * s_true)


def test_fixed_right_friction_fits_noise_alone_and_labels_a_dataset():
    horizon = 100.0  # a short horizon keeps this test cheap (cost ~ T)
    noises = np.array([0.003, 0.01])
    curves = fit.chain_shapes(7, 0.02, noises, horizon=horizon)
    res = fit.fit_spring(curves, mu_right=0.02, horizon=horizon, grid=(2, 16))
    np.testing.assert_allclose(res.noise, noises, rtol=1e-6)
    assert np.all(res.mu_right == 0.02) and np.all(np.isnan(res.mu_right_se))
    ds = res.to_dataset(dims=["dropout"], coords={"dropout": [0.1, 0.2]})
    assert ds["noise"].dims == ("dropout",)
    assert ds["fit_curve"].dims == ("dropout", "layer") and ds.sizes["layer"] == 8
    assert ds.attrs["horizon"] == horizon and ds.attrs["mu_left_ratio"] == 2.0
    with pytest.raises(ValueError, match="dims"):
        res.to_dataset(dims=["a", "b"])


def test_simulation_refinement_runs_and_never_worsens_the_simulated_misfit():
    horizon, step = 50.0, 0.01
    data = simulate(blocks=7, mu_right=0.02, mu_left=0.04, noise=0.02, steps=5000, seeds=32,
                    theory_prediction=False)["load_curve"].mean("seed").values
    theory_fit = fit.fit_spring(data, horizon=horizon, grid=(8, 8))
    sim_fit = fit.fit_spring(data, horizon=horizon, grid=(8, 8), refine="simulation",
                             refine_threshold=0.0, sim_seeds=8, sim_iterations=1, step=step)
    # the refinement's residual is measured against simulated curves; the
    # starting point's simulated residual is an upper bound for it
    start = simulated_shapes(np.array([[theory_fit.mu_right, theory_fit.noise]]), 7, 1.0,
                                  horizon, 2.0, step, 8)
    start_res = np.sqrt(np.mean((start[0] - sim_fit.data) ** 2))
    assert sim_fit.residual <= start_res + 1e-15
    assert sim_fit.mu_right == pytest.approx(0.02, rel=0.1)
    assert sim_fit.noise == pytest.approx(0.02, rel=0.1)


# --------------------------------------------------------------------------
# bad input
# --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "kwargs,name",
    [
        ({"modulus": 0.0}, "modulus"),
        ({"horizon": -1.0}, "horizon"),
        ({"horizon": math.inf}, "horizon"),
        ({"mu_left_ratio": -1.0}, "mu_left_ratio"),
        ({"mu_right": -0.1}, "mu_right"),
        ({"bounds": ((0.1, 0.0), (0.0, 0.1))}, "bounds"),
        ({"bounds": (0.0, 0.1)}, "bounds"),
        ({"grid": (1, 5)}, "grid"),
        ({"grid": "big"}, "grid"),
        ({"refine": "magic"}, "refine"),
        ({"sim_seeds": 0}, "sim_seeds"),
        ({"refine": "simulation", "horizon": 1.005, "step": 0.01}, "horizon"),
        ({"max_iter": 0}, "max_iter"),
    ],
)
def test_bad_arguments_raise_value_error_naming_the_parameter(kwargs, name):
    with pytest.raises(ValueError, match=name):
        fit.fit_spring(np.linspace(1.0, 0.0, 8), **kwargs)


@pytest.mark.parametrize("curves", [np.ones(2), 3.0, [[1.0, 0.0]], "abc"])
def test_bad_curves_raise_value_error(curves):
    with pytest.raises(ValueError, match="load_curve"):
        fit.fit_spring(curves)


def test_bad_effective_force_arguments():
    with pytest.raises(ValueError, match="modulus"):
        fit.effective_force(np.linspace(1, 0, 5), modulus=-1.0)


# --------------------------------------------------------------------------
# the trajectory fit: free asymmetry, a fitted time scale, intervals
# --------------------------------------------------------------------------


def _chain_trajectories(mu_right, mu_left, noise, time_scale, epochs, blocks=7):
    """Mean-field load curves (n, E, L+1) at t = c * epoch, from rest."""
    x = theory.predict_positions(blocks, mu_right, mu_left, noise, epochs[-1], times=epochs,
                                 time_scale=time_scale)
    return theory.load_curve(x)


def test_trajectory_fit_recovers_synthetic_chains_within_their_intervals():
    """20 chains at known (mu->, mu<-, s, c), each seen through 10 noisy seeds.

    Per-seed noise: 0.015 of the final drop on every point of every frame
    (the two seeds of figures/dnn_dropout.nc differ by ~0.01-0.03 of the
    drop per point), weights from the seed spread (as for networks). Each
    parameter must lie in its reported 95 % interval in >= 18 of 20 cases;
    what the data do not pin is reported unbounded (interval = bound range),
    and the bounded intervals must be informative: median width < 3 times
    the value (measured 0.6-1.2).
    """
    rng = np.random.default_rng(2)
    n = 20
    mu = np.exp(rng.uniform(np.log(0.005), np.log(0.03), n))
    mu_left = mu * rng.uniform(1.5, 3.0, n)
    s = np.exp(rng.uniform(np.log(0.003), np.log(0.03), n))
    c = np.exp(rng.uniform(np.log(100), np.log(500), n)) / 100.0
    epochs = np.arange(0, 101, 10.0)
    curves = _chain_trajectories(mu, mu_left, s, c, epochs)  # (n, E, L+1)
    drop = curves[:, None, -1:, :1] - curves[:, None, -1:, -1:]
    seeds = curves[:, None] + 0.015 * drop * rng.standard_normal((n, 10) + curves.shape[1:])
    weights = fit.seed_weights(seeds, seed_axis=1)
    res = fit.fit_trajectory(seeds.mean(axis=1), epochs, weights=weights,
                             bounds={"horizon": (20.0, 1000.0)}, n_starts=3, max_iter=25)
    truth = np.stack([mu, mu_left, s, c], axis=1)
    covered = (res.low <= truth) & (truth <= res.high)
    assert np.all(covered.sum(axis=0) >= 18), covered.sum(axis=0)
    assert np.median(res.chi2_per_dof) == pytest.approx(1.0, abs=0.3)  # weights calibrated
    width = (res.high - res.low) / truth
    for j in range(4):
        bounded = ~res.unbounded[:, j]
        assert bounded.sum() >= 3
        assert np.median(width[bounded, j]) < 3.0


def test_trajectory_fit_from_the_network_start_recovers_synthetic_chains():
    """Chains that start part-way (x_l(0) a tilted line at 10-40 % of the target, the
    first frame), seen through 10 seeds at 0.015 of the drop, in network units
    a - b x with b unknown: start="network" fits (mu->, mu<-, s, c, b) from the noisy
    first frame. Each parameter, b included, lies in its interval in >= 17 of 20 cases
    (measured 17-19 over RNG seeds 1-5; the noise of the first frame, taken as exact,
    is not in the intervals), chi2/dof ~ 1, and the chain is judged acceptable."""
    from springblock.fit.integrator import chain_positions

    rng = np.random.default_rng(2)
    n, blocks = 20, 7
    mu = np.exp(rng.uniform(np.log(0.005), np.log(0.03), n))
    mu_left = mu * rng.uniform(1.5, 3.0, n)
    s = np.exp(rng.uniform(np.log(0.003), np.log(0.03), n))
    c = np.exp(rng.uniform(np.log(100), np.log(500), n)) / 100.0
    layer = np.arange(1, blocks + 1)
    x0 = rng.uniform(0.1, 0.4, n)[:, None] * layer / (blocks + 1) * (1 + 0.15 * np.sin(layer))
    epochs = np.arange(0, 101, 10.0)
    x = chain_positions(blocks, mu, mu_left, s, epochs[1:], c, start=x0, steps_per_doubling=64)
    scale = rng.uniform(1.0, 3.0, n)  # network units per chain unit
    curves = 0.5 + scale[:, None, None] * theory.load_curve(np.concatenate(
        [x0[:, None], x], axis=1))
    drop = curves[:, None, -1:, :1] - curves[:, None, -1:, -1:]
    seeds = curves[:, None] + 0.015 * drop * rng.standard_normal((n, 10) + curves.shape[1:])
    mean = seeds.mean(axis=1)
    res = fit.fit_trajectory(mean, epochs, weights=fit.seed_weights(seeds, seed_axis=1),
                             start="network", bounds={"horizon": (20.0, 1000.0)}, max_iter=25)
    assert res.params == fit.trajectory.NETWORK_PARAMS and res.estimate.shape == (n, 5)
    total_drop = scale / np.abs(mean[:, -1, 0] - mean[:, -1, -1])  # in final drops
    truth = np.stack([mu, mu_left, s, c, total_drop], axis=1)
    covered = (res.low <= truth) & (truth <= res.high)
    assert np.all(covered.sum(axis=0) >= 17), covered.sum(axis=0)
    assert np.median(res.chi2_per_dof) == pytest.approx(1.0, abs=0.3)
    assert res.acceptable.sum() >= 17
    ds = res.to_dataset(dims=["cell"])
    assert "total_drop_low" in ds and ds.attrs["kind"] == "springblock.fit.fit_trajectory"
    assert json.loads(ds.attrs["config"])["start"] == "network"


def test_trajectory_fit_gives_intervals_only_where_the_chain_explains_the_cell():
    """A curve the chain cannot make (half the drop in the first layer, then flat, over
    every frame) is a misfit at chi2/dof >> 2: its best chain is kept, its intervals are
    NaN; ``acceptable_chi2=inf`` profiles it anyway."""
    epochs = np.arange(0, 51, 10.0)
    rng = np.random.default_rng(4)
    chain = theory.load_curve(theory.predict_positions(7, 0.01, 0.02, 0.005, 50.0,
                                                       times=epochs, time_scale=2.0))
    odd = np.array([1.0, 0.5, 0.45, 0.42, 0.4, 0.39, 0.38, 0.37]) * (
        np.arange(6)[:, None] / 5.0 + 0.1)
    curves = np.stack([chain, odd]) + 1e-3 * rng.standard_normal((2,) + chain.shape)
    weights = np.full(curves.shape, 1e6)  # seed noise 1e-3
    res = fit.fit_trajectory(curves, epochs, weights=weights, max_iter=20)
    assert res.acceptable.tolist() == [True, False]
    assert res.chi2_per_dof[1] > 100
    assert np.all(np.isfinite(res.low[0])) and np.all(np.isnan(res.low[1]))
    assert np.all(np.isfinite(res.estimate[1]))
    every = fit.fit_trajectory(curves, epochs, weights=weights, max_iter=20,
                               acceptable_chi2=np.inf)
    assert np.all(np.isfinite(every.low[1]))


def test_trajectory_fit_flags_non_identifiable_and_bound_parameters():
    """Known non-identifiable cases come back unbounded, not as point estimates.

    A trajectory with noise far below friction: no block is ever pushed
    left, so mu<- has no effect. One final curve (6 numbers) cannot pin 4
    parameters. A noiseless chain with mu-> = 0.02 fitted with mu-> <= 0.005:
    nothing else can make its curve as concave, so mu-> sits at its bound.
    """
    epochs = np.arange(0, 101, 10.0)
    rng = np.random.default_rng(5)
    quiet = _chain_trajectories(0.02, 0.04, 2e-4, 3.0, epochs)
    quiet = quiet + 1e-3 * rng.standard_normal(quiet.shape)
    res = fit.fit_trajectory(quiet, epochs, bounds={"horizon": (20.0, 1000.0)}, max_iter=20)
    assert res.unbounded[1]  # mu<-
    assert not res.at_bound[0] and res.estimate[0] == pytest.approx(0.02, rel=0.05)

    finals = _chain_trajectories([0.01, 0.02], [0.03, 0.04], [0.01, 2e-4], [300.0, 300.0],
                                 np.array([1.0]))
    finals = finals + 1e-3 * rng.standard_normal(finals.shape)
    res = fit.fit_trajectory(finals, [1.0], bounds={"horizon": (20.0, 1000.0),
                                                    "mu_right": (1e-4, 0.005)}, max_iter=20)
    assert res.unbounded[0].sum() >= 2
    assert res.at_bound[1, 0] and res.estimate[1, 0] == pytest.approx(0.005)
    ds = res.to_dataset(dims=["cell"])
    # (cell 0's final curve is met as well with mu-> on its bound: a flat valley)
    np.testing.assert_array_equal(ds["mu_right_at_bound"], res.at_bound[:, 0])
    assert bool(ds["mu_right_at_bound"][1]) and bool(ds["acceptable"].all())
    assert ds.attrs["kind"] == "springblock.fit.fit_trajectory"


def test_seed_weights_estimate_the_variance_of_seed_means():
    """Per-seed noise of sd 0.01 in frames 1, 2 and 0.03 in the rest: the
    weights of the seed means are n_seeds / var, per frame."""
    epochs = np.arange(0, 51, 10.0)
    clean = _chain_trajectories(0.01, 0.02, 0.01, 4.0, epochs)  # (E, L+1)
    rng = np.random.default_rng(2)
    sd = np.array([0.01, 0.01, 0.03, 0.03, 0.03, 0.03])[:, None]
    seeds = clean + sd * rng.standard_normal((3, 4, 6) + clean.shape)  # (3, 4 cells, 6 seeds)
    w = fit.seed_weights(seeds, seed_axis=-3)
    assert w.shape == (3, 4) + clean.shape
    np.testing.assert_allclose(w[0, 0, :, 0], 6 / sd[:, 0] ** 2, rtol=0.2)
    assert np.all(w[..., 0, :] == w[0, 0, 0, 0])  # one value per frame
    with pytest.raises(ValueError, match="seeds"):
        fit.seed_weights(seeds[..., :1, :, :])


def test_bad_trajectory_arguments():
    curves = np.ones((3, 8)) * np.linspace(1, 0, 8)
    with pytest.raises(ValueError, match="epochs"):
        fit.fit_trajectory(curves, [0.0, 2.0, 1.0])
    with pytest.raises(ValueError, match="epochs"):
        fit.fit_trajectory(curves, [1.0, 2.0])
    with pytest.raises(ValueError, match="bounds"):
        fit.fit_trajectory(curves, [1.0, 2.0, 3.0], bounds={"noise": (0.1, 0.01)})
    with pytest.raises(ValueError, match="bounds"):
        fit.fit_trajectory(curves, [1.0, 2.0, 3.0], bounds={"friction": (0.1, 0.2)})
    with pytest.raises(ValueError, match="start"):
        fit.fit_trajectory(curves, [1.0, 2.0, 3.0], start="middle")
    with pytest.raises(ValueError, match="epochs"):  # the first frame is where it starts
        fit.fit_trajectory(curves[:1], [0.0], start="network")
    with pytest.raises(ValueError, match="acceptable_chi2"):
        fit.fit_trajectory(curves, [1.0, 2.0, 3.0], acceptable_chi2=0)


def test_importing_the_chain_compiles_no_kernel():
    """numba compiles on first use: importing springblock (fit included) leaves every kernel
    without a compiled signature, so a user who only fits curves never waits for a compile."""
    import subprocess
    import sys

    code = ("import sys, numba, springblock, springblock.fit, springblock.events, "
            "springblock.dynamics as d, springblock.fit.integrator as i\n"
            "kernels = [v for m in (d, springblock.events, i) for v in vars(m).values()\n"
            "           if isinstance(v, numba.core.registry.CPUDispatcher)]\n"
            "assert len(kernels) >= 5, kernels\n"
            "assert not any(k.signatures for k in kernels), [k for k in kernels if k.signatures]\n"
            "assert 'torch' not in sys.modules")
    subprocess.run([sys.executable, "-c", code], check=True)


def test_a_trajectory_too_short_to_fit_is_nan_with_a_warning_that_says_why():
    """Two frames of a 2-block chain are 6 points: too few for 4 parameters and one
    offset per frame. The cell is NaN and the warning names the count it needs."""
    epochs = np.array([0.0, 1.0, 2.0])
    curves = theory.load_curve(theory.predict_positions(2, 0.01, 0.02, 0.005, 50.0,
                                                        times=epochs, time_scale=2.0))
    with pytest.warns(UserWarning, match=r"1 of 1 cells are not fitted .* at least 8 "
                                         r"weighted points"):
        res = fit.fit_trajectory(curves, epochs, max_iter=5)
    assert np.all(np.isnan(res.estimate)) and np.isnan(res.chi2_per_dof).all()
    assert not np.any(res.acceptable)


# four seed-mean final curves of figures/paper (label noise cells 47 and 49, dropout cells 35
# and 51, in the order of fit_sweep_final): curves whose (mu->, s) moved by 0.1-2.7 % when their
# last bits did, while F_eff did not
LAST_BITS_CURVES = np.array([
    [1.0507688869568017, 0.7937498555107558, 0.4389079736929819, 0.16992276349603289,
     -0.022944339139319862, -0.13678878325736044, -0.20854442041265706, -0.2619813175236067],
    [0.9655978311165854, 0.7147148995758894, 0.39625744575184946, 0.16765171961985875,
     -0.002729083819240044, -0.10537302088616271, -0.18319378290426327, -0.24812196175986417],
    [1.257682125783644, 0.8571449525393964, 0.32041446082308617, -0.20304587435274385,
     -0.7451154584706526, -1.2917349655450558, -1.7810692810172906, -2.115533783085327],
    [1.2555982601798923, 0.8409746521206465, 0.3219080466911492, -0.11494048845075192,
     -0.5075213108287497, -0.8820216559785076, -1.1747709009862848, -1.3417263206553296]])


@pytest.mark.parametrize("seed", [1, 2])
def test_fit_spring_lands_on_the_same_chain_when_the_last_bits_change(seed):
    # a few-ulp nudge (another CPU) must not move the fit along the valley of constant F_eff:
    # the local fit converges (cost to 1e-12) and does not step along a parameter the curve
    # ignores (a fully relaxed chain's s), so mu-> and s agree to 1e-4 (s: the resolution of
    # the smallest-equivalent-noise search), not 0.1-3 %
    steps = np.random.default_rng(seed).integers(-3, 4, size=LAST_BITS_CURVES.shape)
    nudged = LAST_BITS_CURVES + steps * np.spacing(np.abs(LAST_BITS_CURVES))
    a, b = fit.fit_spring(LAST_BITS_CURVES), fit.fit_spring(nudged)
    np.testing.assert_allclose(b.effective_force, a.effective_force, rtol=1e-12)
    np.testing.assert_allclose(b.mu_right, a.mu_right, rtol=1e-4)
    np.testing.assert_allclose(b.noise, a.noise, rtol=1e-4)
    np.testing.assert_allclose(b.residual, a.residual, rtol=1e-6)
