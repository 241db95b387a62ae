"""springblock.fit.variants and integrator.variant_positions: the family of chains.

The variants' integrator is checked where it must agree with the paper chain's (bit for bit),
against an independent adaptive solver (LSODA) of the mean-drift equations with a friction
profile and decaying noise, and through what the variants mean physically; the fit with a
variant must tell the variant that made the data from its neighbours.
"""

import numpy as np
import pytest
from scipy.integrate import solve_ivp

from phasecore.checks import ConfigError
from springblock import fit, theory
from springblock.fit.integrator import chain_positions, variant_positions
from springblock.fit.variants import FAMILY, ChainVariant, variant_of

BLOCKS = 7
EPOCHS = np.arange(10, 101, 10.0)


def _random_sets(n, seed):
    """(mu->, mu<-, s, c) (n,) each, spread over the trajectory fit's range (log-uniform)."""
    rng = np.random.default_rng(seed)
    mu = np.exp(rng.uniform(np.log(0.005), np.log(0.03), n))
    mu_left = mu * rng.uniform(1.5, 3.0, n)
    noise = np.exp(rng.uniform(np.log(0.003), np.log(0.03), n))
    scale = np.exp(rng.uniform(np.log(2.0), np.log(20.0), n))
    return mu, mu_left, noise, scale


# --------------------------------------------------------------------------
# the neutral chain is the paper's
# --------------------------------------------------------------------------


def test_neutral_variant_is_the_paper_chain_bit_for_bit():
    """The paper chain's fits must not move when the family is added: the neutral variant
    calls chain_positions itself, and the variant kernel with a flat profile and no decay
    does the very same arithmetic (s exp(-0 t) = s, mu * 1 = mu), so both are exact."""
    args = (BLOCKS, *_random_sets(5, seed=0))
    paper = chain_positions(*args[:4], EPOCHS, args[4])
    assert ChainVariant().neutral
    assert np.array_equal(ChainVariant().positions(*args[:4], EPOCHS, args[4]), paper)
    flat = variant_positions(*args[:4], EPOCHS, args[4], friction_profile=np.ones(BLOCKS),
                             noise_decay=0.0)
    assert np.array_equal(flat, paper)
    assert np.array_equal(variant_positions(*args[:4], EPOCHS, args[4]), paper)  # defaults
    # the neutral value of every variant is the paper chain (so a scan includes it)
    for name, (field, values) in FAMILY.items():
        assert getattr(ChainVariant(), field) in values, name
        assert variant_of(name, getattr(ChainVariant(), field)).neutral


# --------------------------------------------------------------------------
# accuracy against an independent solver
# --------------------------------------------------------------------------

ACCURACY_EPOCHS = np.array([5.0, 10.0, 20.0, 30.0, 40.0, 60.0, 80.0, 100.0])


def _lsoda_positions(mu_right, mu_left, noise, scale, decay, profile):
    """dx_l/dt = h(F_l; mu-> p_l, mu<- p_l, s exp(-decay t)) by LSODA, at t = c e (E, L)."""
    def drift(t, x):
        padded = np.r_[0.0, x, 1.0]
        force = padded[2:] - 2.0 * padded[1:-1] + padded[:-2]
        return theory.mean_drift(force, mu_right * profile, mu_left * profile,
                                 noise * np.exp(-decay * t))

    times = scale * ACCURACY_EPOCHS
    sol = solve_ivp(drift, (0.0, times[-1]), np.zeros(profile.size), method="LSODA",
                    t_eval=times, rtol=1e-10, atol=1e-12)
    assert sol.success, sol.message
    return sol.y.T


def test_variant_chain_matches_an_adaptive_solver():
    """Six chains with a friction profile exp(1.2 linspace(-1, 1, L) - 1.2) and noise decaying
    4 e-folds over the horizon T = c e_E: RMS error <= 2.5e-3 of the largest position at the
    fits' 8 steps per doubling (the paper chain's own bound is 2e-3), second
    order (~4x less per doubling of the steps). The tolerance is sharp: leaving out either
    the profile or the decay is off by >= 3.5e-3 on every chain here."""
    rng = np.random.default_rng(0)
    n = 6
    mu = np.exp(rng.uniform(np.log(0.01), np.log(0.1), n))
    mu_left = mu * rng.uniform(1.0, 4.0, n)
    noise = np.exp(rng.uniform(np.log(0.002), np.log(0.05), n))
    scale = np.exp(rng.uniform(0.0, np.log(30.0), n))
    profile = np.exp(1.2 * np.linspace(-1.0, 1.0, BLOCKS) - 1.2)  # ChainVariant's, g = 1.2
    decay = 4.0 / (scale * ACCURACY_EPOCHS[-1])
    ref = np.stack([_lsoda_positions(*p, profile)
                    for p in zip(mu, mu_left, noise, scale, decay, strict=True)])

    def error(x):
        return np.sqrt(((x - ref) ** 2).mean(axis=(1, 2))) / np.abs(ref).max(axis=(1, 2))

    args = (BLOCKS, mu, mu_left, noise, ACCURACY_EPOCHS, scale)
    errors = [error(variant_positions(*args, friction_profile=profile, noise_decay=decay,
                                      steps_per_doubling=m)) for m in (8, 16, 32)]
    assert errors[0].max() <= 2.5e-3, errors[0]
    for coarse, fine in zip(errors, errors[1:], strict=False):
        assert np.median(coarse / fine) > 3.0
    # the same chain through the variant (lambda = 4 e-folds per horizon, g = 1.2)
    variant = ChainVariant(noise_decay=4.0, friction_gradient=1.2)
    np.testing.assert_array_equal(variant.positions(*args),
                                  variant_positions(*args, friction_profile=profile,
                                                    noise_decay=decay))
    # each ingredient matters at this tolerance: the test can tell them apart
    assert error(variant_positions(*args, friction_profile=profile)).min() > 2.5e-3
    assert error(variant_positions(*args, noise_decay=decay)).min() > 2.5e-3


# --------------------------------------------------------------------------
# the time map
# --------------------------------------------------------------------------


@pytest.mark.parametrize("power", [0.5, 2.0, 2.8])
def test_time_map_is_the_paper_chain_read_at_other_epochs(power):
    """time_power p reads the paper chain at epochs e_E (e / e_E)^p: exactly (the same
    kernel, the same grid), with the default first stretch and with a bound on it (which
    the variant rescales by e'_1 / e_1, so that it still means c_max times the first output
    time). The last frame's chain time is the paper chain's: the chain is autonomous, so
    its last frame agrees with the paper chain's to integrator accuracy, while earlier
    frames lag (p > 1) or lead (p < 1) the paper chain's (a chain from rest only moves on)."""
    mu, mu_left, noise, scale = _random_sets(4, seed=1)
    variant = ChainVariant(time_power=power)
    clock = EPOCHS[-1] * (EPOCHS / EPOCHS[-1]) ** power
    np.testing.assert_array_equal(variant.chain_epochs(EPOCHS), clock)
    assert variant.chain_epochs(EPOCHS)[-1] == EPOCHS[-1]
    args = (BLOCKS, mu, mu_left, noise)
    mapped = variant.positions(*args, EPOCHS, scale, first_span=None)
    assert np.array_equal(mapped, chain_positions(*args, clock, scale, first_span=None))
    bound = 3000.0 * EPOCHS[0] / EPOCHS[-1]  # c_max e_1 for a horizon bound T <= 3000
    assert np.array_equal(variant.positions(*args, EPOCHS, scale, first_span=bound),
                          chain_positions(*args, clock, scale,
                                          first_span=bound * clock[0] / EPOCHS[0]))

    paper = chain_positions(*args, EPOCHS, scale)
    drop = paper[:, -1, -1:]
    assert np.max(np.abs(mapped[:, -1] - paper[:, -1]) / drop) < 1e-3
    ahead = mapped[:, :-1] - paper[:, :-1]
    if power > 1:
        assert ahead.max() < 1e-9 and ahead[..., -1].min() < -0.01
    else:
        assert ahead.min() > -1e-9 and ahead[..., -1].max() > 0.01


# --------------------------------------------------------------------------
# physics of the variants
# --------------------------------------------------------------------------


def test_decaying_noise_brings_the_chain_towards_the_noiseless_one():
    """Noise that dies out leaves the chain where a noiseless chain would stop: the final
    curve's distance to the noiseless chain's (same horizon) does not grow with the decay
    over the family's values, and at lambda = 16 it is well below the constant-noise one's
    (measured 0.004-0.6 of it; a decay of the wrong sign would push it away)."""
    mu = np.array([0.005, 0.01, 0.02, 0.03])
    noise = np.array([0.02, 0.01, 0.005, 0.03])
    scale = np.array([3.0, 10.0, 2.0, 20.0])
    args = (BLOCKS, mu, 2 * mu)
    quiet = chain_positions(*args, 0.0, EPOCHS, scale)[:, -1]
    distance = np.array([
        np.abs(ChainVariant(noise_decay=lam).positions(*args, noise, EPOCHS, scale)[:, -1]
               - quiet).max(axis=1)
        for lam in FAMILY["decaying noise"][1]])
    constant = np.abs(chain_positions(*args, noise, EPOCHS, scale)[:, -1] - quiet).max(axis=1)
    assert FAMILY["decaying noise"][1][0] == 0.0
    np.testing.assert_array_equal(distance[0], constant)
    assert np.all(np.diff(distance, axis=0) <= 1e-12)
    assert np.all(distance[-1] < 0.7 * constant)


@pytest.mark.parametrize("gradient", [-1.0, 0.5, 1.5])
def test_friction_profile_rises_towards_the_target_and_acts_on_its_own_block(gradient):
    """friction_profile: largest 1 (mu is the chain's largest friction, so a chain every
    block of which moves stays so), ratio last / first block exp(2 g), increasing for g > 0
    (more friction near the target, high l). And it is block l's friction: a noiseless chain
    comes to rest with each block at its own threshold, F_l = mu-> profile_l (paper Eq. 7,
    block by block)."""
    variant = ChainVariant(friction_gradient=gradient)
    profile = variant.friction_profile(BLOCKS)
    assert profile.shape == (BLOCKS,)
    assert profile.max() == pytest.approx(1.0, abs=1e-15)
    assert profile[-1] / profile[0] == pytest.approx(np.exp(2 * gradient), rel=1e-12)
    assert np.all(np.sign(np.diff(profile)) == np.sign(gradient))
    np.testing.assert_array_equal(variant.friction_profile(1), [1.0])

    x = variant.positions(BLOCKS, 0.01, 0.02, 0.0, [1000.0], 10.0)[0, -1]
    padded = np.r_[0.0, x, 1.0]
    force = padded[2:] - 2 * padded[1:-1] + padded[:-2]
    np.testing.assert_allclose(force, 0.01 * profile, rtol=1e-6)


def test_describe_and_variant_of():
    assert ChainVariant().describe() == "paper chain"
    assert ChainVariant(friction_gradient=1.0).describe() == "friction_gradient = 1"
    assert variant_of("time map", 2) == ChainVariant(time_power=2.0)
    assert variant_of("decaying noise", 4.0) == ChainVariant(noise_decay=4.0)
    assert not variant_of("friction profile", -0.5).neutral
    with pytest.raises(AttributeError):  # frozen: a fit's variant cannot change under it
        ChainVariant().time_power = 2.0


# --------------------------------------------------------------------------
# bad input
# --------------------------------------------------------------------------


@pytest.mark.parametrize("kwargs,name", [
    ({"time_power": 0.0}, "time_power"),
    ({"time_power": 20.0}, "time_power"),
    ({"time_power": "2"}, "time_power"),
    ({"noise_decay": -1.0}, "noise_decay"),
    ({"noise_decay": float("inf")}, "noise_decay"),
    ({"friction_gradient": float("nan")}, "friction_gradient"),
    ({"friction_gradient": 6.0}, "friction_gradient"),
])
def test_bad_variants_raise_config_error_naming_the_parameter(kwargs, name):
    with pytest.raises(ConfigError, match=name):
        ChainVariant(**kwargs)


def test_bad_variant_arguments_elsewhere_name_the_parameter():
    with pytest.raises(ConfigError, match="variant"):
        variant_of("nope", 1)
    with pytest.raises(ConfigError, match="friction_profile"):
        variant_positions(BLOCKS, 0.01, 0.02, 0.01, EPOCHS, friction_profile=np.ones(BLOCKS - 1))
    with pytest.raises(ConfigError, match="epochs"):
        variant_positions(BLOCKS, 0.01, 0.02, 0.01, [0.0, 1.0])
    curves = np.ones((3, 8)) * np.linspace(1, 0, 8)
    with pytest.raises(ConfigError, match="variant"):
        fit.fit_trajectory(curves, [1.0, 2.0, 3.0], variant="x")
    # the values too, not only the shapes: a growing noise, a NaN, a negative friction
    for kwargs, name in [({"noise_decay": -1.0}, "noise_decay"), ({"noise_decay": np.nan},
                         "noise_decay"), ({"friction_profile": -np.ones(BLOCKS)},
                                          "friction_profile")]:
        with pytest.raises(ConfigError, match=f"^{name} must be"):
            variant_positions(BLOCKS, 0.01, 0.02, 0.01, EPOCHS, **kwargs)
    with pytest.raises(ConfigError, match="^time_scale must be"):
        variant_positions(BLOCKS, 0.01, 0.02, 0.01, EPOCHS, -1.0)
    with pytest.raises(ConfigError, match="^blocks must be"):
        variant_positions(0, 0.01, 0.02, 0.01, EPOCHS, friction_profile=np.ones(0))
    # the user's epochs are named, not the time map's image of them
    with pytest.raises(ConfigError, match=r"^epochs must be .* \(got \[0, 1, 2\]\)"):
        ChainVariant(time_power=2.0).positions(BLOCKS, 0.01, 0.02, 0.01, [0, 1, 2])


def test_a_variant_is_hashable_floats_whatever_came_in():
    """numpy scalars become floats (the fits cache their starting grid by the variant);
    booleans, 0-d arrays and text are refused."""
    v = ChainVariant(time_power=np.float32(2.0), noise_decay=np.int64(3))
    assert type(v.time_power) is float and type(v.noise_decay) is float
    assert hash(v) == hash(ChainVariant(time_power=2.0, noise_decay=3.0))
    for bad in (np.True_, np.array(2.0), "2"):
        with pytest.raises(ConfigError, match="^time_power must be a finite real number"):
            ChainVariant(time_power=bad)


# --------------------------------------------------------------------------
# the fit tells the variant
# --------------------------------------------------------------------------


def test_fit_with_the_variant_that_made_the_data_explains_it_and_others_do_not():
    """Six chains of the g = 1 variant (trajectory fit's default bounds, mu<- = 2 mu->,
    integrated at 32 steps per doubling, not the fit's 8), in network units D_l = 1 - x_l,
    seen with noise 1e-3 per point and weighted by it. Fitted with g = 1 every cell has
    chi2/dof ~ 1 (measured 0.6-1.0) and is acceptable; scanning the family's g the summed
    misfit is smallest at the truth, and g = -1 and the paper chain (g = 0) miss every cell
    (chi2/dof > 2; measured >= 3.4) and the summed misfit by > 20x (measured ~90x): the
    shared parameter is identifiable from the trajectories. The result and its dataset
    record the chain."""
    rng = np.random.default_rng(1)
    n = 6
    mu = np.exp(rng.uniform(np.log(0.01), np.log(0.06), n))
    noise = np.exp(rng.uniform(np.log(0.003), np.log(0.03), n))
    scale = np.exp(rng.uniform(np.log(2.0), np.log(20.0), n))
    truth = ChainVariant(friction_gradient=1.0)
    x = truth.positions(BLOCKS, mu, 2 * mu, noise, EPOCHS, scale, steps_per_doubling=32)
    curves = 1.0 - np.concatenate([np.zeros(x.shape[:2] + (1,)), x], axis=-1)  # (K, E, L+1)
    sd = 1e-3
    data = curves + sd * rng.standard_normal(curves.shape)
    weights = np.full(data.shape, sd ** -2)

    def fitted(variant):
        return fit.fit_trajectory(data, EPOCHS, weights=weights, variant=variant,
                                  profile_values=0)

    gradients = FAMILY["friction profile"][1]
    scan = {g: fitted(variant_of("friction profile", g)) for g in gradients}
    misfit = {g: float((r.residual ** 2).sum()) for g, r in scan.items()}
    assert min(misfit, key=misfit.get) == 1.0, misfit

    res, wrong, paper = scan[1.0], scan[-1.0], fitted(None)
    assert np.all(res.chi2_per_dof < 2.0) and res.acceptable.all()
    assert np.all(res.residual < 2e-3)
    for other in (wrong, paper):
        assert np.all(other.chi2_per_dof > 2.0) and not other.acceptable.any()
        assert (other.residual ** 2).sum() > 20 * misfit[1.0]
        assert other.chi2_per_dof.sum() > 20 * res.chi2_per_dof.sum()
    np.testing.assert_array_equal(paper.residual, scan[0.0].residual)  # g = 0 is the paper's

    assert res.variant == truth and paper.variant.neutral
    ds = res.to_dataset(dims=["cell"])
    assert ds.attrs["variant_friction_gradient"] == 1.0
    assert ds.attrs["variant_time_power"] == 1.0 and ds.attrs["variant_noise_decay"] == 0.0
    assert "friction_gradient = 1" in ds.attrs["model"]
    assert not any(k.startswith("variant_") for k in paper.to_dataset(dims=["cell"]).attrs)
