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


SHARED_AND_NETWORK = ["phasecore", "phasecore.loadcurve", "phasecore.sweeps",
                      "phasecore.commandline", "phasecore.panels", "dnnphase",
                      "dnnphase.sweeps.sweep", "dnnphase.measures.separation_numpy",
                      "dnnphase.cli", "dnnphase.sweeps.plotting"]

#: Imports each module of argv[1] (JSON) in a fresh fork of a process that has imported only
#: torch and xarray (the slow imports, paid once; this process checks that they bring neither
#: numba nor the chain), and prints {module: the chain's modules then in sys.modules}.
IMPORTS = """
import importlib, json, os, sys
import torch, xarray
CHAIN = ("numba", "springblock")
found = {"torch, xarray": sorted(m for m in CHAIN if m in sys.modules)}
for module in json.loads(sys.argv[1]):
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read)
        code = 1
        try:
            importlib.import_module(module)
            os.write(write, json.dumps(sorted(m for m in CHAIN if m in sys.modules)).encode())
            code = 0
        finally:
            os._exit(code)
    os.close(write)
    with os.fdopen(read) as pipe:
        answer = pipe.read()
    _, status = os.waitpid(pid, 0)
    assert status == 0, f"importing {module} failed"
    found[module] = json.loads(answer)
print(json.dumps(found))
"""


@pytest.fixture(scope="module")
def chain_modules():
    """Module -> the chain's modules (numba, springblock) that importing it brings: one
    process for all of them, each import in a fork that has not imported it yet."""
    import json
    import subprocess

    out = subprocess.run([sys.executable, "-c", IMPORTS, json.dumps(SHARED_AND_NETWORK)],
                         capture_output=True, text=True, check=True)
    found = json.loads(out.stdout.splitlines()[-1])
    assert found.pop("torch, xarray") == []  # the preloaded modules bring none of them
    return found


@pytest.mark.parametrize("module", SHARED_AND_NETWORK)
def test_the_shared_layer_and_the_network_side_never_import_the_chain(chain_modules, module):
    assert chain_modules[module] == []


def test_a_curve_separates_when_it_drops_a_tenth_of_the_median_drop():
    drops = np.array([[3.0, 2.8, 0.2], [2.5, -0.5, np.nan]])  # median of finite: 2.5
    np.testing.assert_array_equal(loadcurve.separates(drops),
                                  [[True, True, False], [True, False, False]])
    assert loadcurve.separates(drops, share=0.05)[0, 2]  # 0.2 >= 0.125
    assert not loadcurve.separates(np.full(3, np.nan)).any()


def test_phase_panels_scale_every_cell_and_hatch_cells_that_do_not_separate():
    """Each small plot spans its own curve (an outlier cell no longer squashes the rest
    into a sliver); a cell that does not separate is hatched, its curve grey, and no
    phase boundary is drawn along it."""
    from phasecore.panels import PhasePanel, plot_phase_grid

    layers = np.arange(5.0)
    gentle = 1 - layers / 4 - 0.02 * layers * (4 - layers)  # (5,), drops 1 -> 0
    wild = np.array([1.0, -20.0, 30.0, -10.0, 0.0])
    curves = np.stack([np.stack([gentle, wild])])  # (1, 2, 5)
    panel = PhasePanel(curves, np.array([[-0.5, 0.5]]), np.array([0.0]), np.array([0, 1]),
                       "row", "col", "shade", boundary=np.array([[-1.0, 1.0]]),
                       separates=np.array([[True, False]]))
    fig = plot_phase_grid(panel)
    cells = fig.axes[:2]
    low, high = cells[0].get_ylim()
    assert high - low < 1.5  # the gentle curve's own range (1), padded
    assert cells[1].get_ylim()[1] - cells[1].get_ylim()[0] > 50
    assert [len(ax.patches) for ax in cells] == [0, 1] and cells[1].patches[0].get_hatch()
    assert cells[1].get_lines()[-1].get_color() == "0.45"
    boundaries = [ax for ax in fig.axes[2:] if not ax.axison and ax.get_lines()]
    assert boundaries == []  # the only label change is next to the hatched cell
    assert any("hatched cells" in t.get_text() for t in fig.texts)
    shared = plot_phase_grid(PhasePanel(curves, np.array([[-0.5, 0.5]]), np.array([0.0]),
                                        np.array([0, 1]), "row", "col", "shade",
                                        shared_scale=True))
    assert shared.axes[0].get_ylim() == shared.axes[1].get_ylim()
