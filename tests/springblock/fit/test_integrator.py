"""springblock.fit.integrator: the fits' implicit mean-field integrator against the reference.

The reference is springblock.theory.predict_positions (explicit RK4, itself checked against
LSODA to ~3e-8 in tests/springblock/test_theory.py).
"""

import numpy as np
import pytest

from springblock import theory
from springblock.fit.integrator import chain_positions, step_counts

EPOCHS = np.arange(10, 101, 10.0)


def _random_sets(n, seed=0):
    """Parameter sets spread over the trajectory fit's default bounds (log-uniform)."""
    rng = np.random.default_rng(seed)
    mu = np.exp(rng.uniform(np.log(1e-4), np.log(0.3), n))
    mu_left = np.minimum(mu * np.exp(rng.uniform(0, np.log(8), n)), 0.6)
    noise = np.exp(rng.uniform(np.log(1e-4), np.log(0.3), n))
    scale = np.exp(rng.uniform(np.log(0.1), np.log(30), n))
    return mu, mu_left, noise, scale


def _error(x, ref):
    """RMS difference over frames and blocks (K,), in units of the final drop x_L."""
    return np.sqrt(((x - ref) ** 2).mean(axis=(1, 2))) / np.abs(ref[:, -1, -1])


def test_matches_the_reference_and_converges_at_second_order():
    """Trajectories from rest over the fit's bounds: RMS error <= 2e-3 of the final drop at
    the fits' 8 steps per doubling (measured 1.4e-3, median 3e-4), falling ~4x per
    doubling of the steps (a second-order scheme)."""
    mu, mu_left, noise, scale = _random_sets(60)
    ref = theory.predict_positions(7, mu, mu_left, noise, EPOCHS[-1], times=EPOCHS,
                                   time_scale=scale)
    errors = [_error(chain_positions(7, mu, mu_left, noise, EPOCHS, scale,
                                     steps_per_doubling=n), ref) for n in (8, 16, 32)]
    assert errors[0].max() < 2e-3
    assert np.median(errors[0]) < 6e-4
    for coarse, fine in zip(errors, errors[1:], strict=False):
        assert np.median(coarse / fine) > 3.0


def test_final_curves_match_the_reference_noiseless_included():
    """The final-curve fit's grid (mu-> x s, s = 0 included) at T = 1000, 16 steps per
    doubling: shapes within 4e-4 RMS of the reference (measured 2e-4, median 3e-6)."""
    from springblock.fit.shapes import chain_shapes, shape_of_positions

    mu, s = np.meshgrid(np.linspace(0, 0.1, 9), np.r_[0.0, np.geomspace(1e-4, 0.1, 8)],
                        indexing="ij")
    ref = shape_of_positions(theory.predict_positions(7, mu, 2 * mu, s, 1000.0))
    fast = chain_shapes(7, mu, s)
    assert fast.shape == ref.shape
    err = np.sqrt(np.nanmean((fast - ref) ** 2, axis=-1))
    assert np.nanmax(err) < 4e-4
    moving = mu > 0  # mu-> = 0 and s = 0: no friction, the exact same straight line
    assert np.all(np.isfinite(err[moving]))


def test_a_chain_restarted_from_its_own_state_goes_on_as_before():
    """x(0 -> t2) equals x(0 -> t1) then x(t1 -> t2) started there (to integrator accuracy),
    and a chain started beyond its target is pulled back."""
    mu, mu_left, noise, scale = _random_sets(20, seed=3)
    whole = chain_positions(7, mu, mu_left, noise, [40.0, 100.0], scale,
                            steps_per_doubling=32)
    middle = whole[:, 0]
    rest = chain_positions(7, mu, mu_left, noise, [60.0], scale, start=middle,
                           steps_per_doubling=32)[:, 0]
    assert np.max(np.abs(rest - whole[:, 1]) / np.abs(whole[:, 1, -1:])) < 2e-3
    beyond = chain_positions(7, 0.01, 0.02, 0.01, [100.0], 1.0, start=np.full(7, 1.5))
    assert np.all(beyond[0, 0] < 1.5)


def test_smooth_in_the_time_scale():
    """The step grid moves smoothly with c: the finite-difference derivative of x(c e) in c
    equals e h(F(x)) of the mean drift (the fits' Jacobians rely on it)."""
    e = np.array([50.0])
    c, dc = 2.0, 1e-6
    args = (7, 0.02, 0.04, 0.01)
    kw = dict(first_span=3000.0, steps_per_doubling=16)
    x0 = chain_positions(*args, e, c, **kw)[0, 0]
    x1 = chain_positions(*args, e, c + dc, **kw)[0, 0]
    padded = np.r_[0.0, x0, 1.0]
    force = padded[2:] - 2 * padded[1:-1] + padded[:-2]
    analytic = e[0] * theory.mean_drift(force, 0.02, 0.04, 0.01)
    np.testing.assert_allclose((x1 - x0) / dc, analytic, rtol=0.02, atol=1e-4)


def test_step_counts_depend_on_epochs_and_bounds_only():
    counts = step_counts([10.0, 20.0, 40.0, 50.0], 8, first_span=1000.0)
    assert counts.tolist() == [80, 8, 8, 3]
    with pytest.raises(ValueError, match="epochs"):
        chain_positions(7, 0.01, 0.02, 0.01, [0.0, 1.0])
