"""Curvature and linearity of load curves (shared with the network side)."""

import sys

import numpy as np
import pytest

from phasecore import loadcurve


def test_paper_curvature_telescopes_to_first_minus_last_gain():
    rng = np.random.default_rng(0)
    d = np.cumsum(-rng.random((5, 9)), axis=1)
    g = d[:, :-1] - d[:, 1:]
    explicit = sum(g[:, i] - g[:, i + 1] for i in range(g.shape[1] - 1))
    np.testing.assert_allclose(loadcurve.curvature(d), explicit)


def test_signs_concave_linear_convex():
    u = np.linspace(0, 1, 8)
    concave, linear, convex = 1 - u**2, 1 - u, (1 - u) ** 2
    assert loadcurve.curvature(concave) < 0 and loadcurve.curvature_scaled(concave) < 0
    assert loadcurve.curvature(linear) == pytest.approx(0, abs=1e-15)
    assert loadcurve.curvature_scaled(linear) == pytest.approx(0, abs=1e-12)
    assert loadcurve.curvature(convex) > 0 and loadcurve.curvature_scaled(convex) > 0
    # an exact parabola through (0, 1) and (1, 0): a2 / drop = -1 and +1
    assert loadcurve.curvature_scaled(concave) == pytest.approx(-1)
    assert loadcurve.curvature_scaled(convex) == pytest.approx(1)


def test_scaled_curvature_is_scale_shift_and_depth_free():
    u5, u11 = np.linspace(0, 1, 5), np.linspace(0, 1, 11)
    c5 = loadcurve.curvature_scaled(1 - u5**2)
    assert loadcurve.curvature_scaled(3.0 * (1 - u11**2) + 7.0) == pytest.approx(c5)


def test_scaled_curvature_guards_a_vanishing_drop():
    flat = np.array([1.0, 1.2, 0.9, 1.1, 1.0 + 1e-6])
    assert np.isnan(loadcurve.curvature_scaled(flat))
    assert np.isfinite(loadcurve.curvature_scaled(np.array([1.0, 0.6, 0.3, 0.1])))


def test_linearity_measures():
    d = np.log(2.0) * (5 - np.arange(6))  # log-fuzziness halving every layer
    lin = loadcurve.linearity(d)
    assert lin["pearson_r"] == pytest.approx(-1)
    assert lin["decay_ratio"] == pytest.approx(0.5)
    assert lin["half_life"] == pytest.approx(1.0)
    assert loadcurve.linearity(np.arange(4.0))["half_life"] == np.inf


def test_phase_labels_with_tolerance_band_and_nan():
    labels = loadcurve.phase_label([-0.3, -0.01, 0.0, 0.04, 0.2, np.nan], tolerance=0.05)
    np.testing.assert_array_equal(labels[:5], [-1, 0, 0, 0, 1])
    assert np.isnan(labels[5])


def test_too_short_curve_is_an_error():
    with pytest.raises(ValueError, match="load_curve"):
        loadcurve.curvature([1.0, 0.0])


@pytest.mark.parametrize("module", ["phasecore", "phasecore.loadcurve", "phasecore.sweeps",
                                    "phasecore.commandline", "phasecore.panels", "dnnphase",
                                    "dnnphase.phase", "dnnphase.metrics", "dnnphase.cli",
                                    "dnnphase.plotting"])
def test_the_shared_layer_and_the_network_side_never_import_the_chain(module):
    import subprocess

    code = (f"import {module}, sys; "
            "print(sorted(m for m in ('numba', 'springblock') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    assert out.stdout.strip() == "[]"
