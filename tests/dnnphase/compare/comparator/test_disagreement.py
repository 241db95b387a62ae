"""Where the chain's curvature changes the other way from the networks': the signs per row
and column, the disagreement maps and counts of the report, the summary's words, the
outlined cells of the phase figure, and the physics behind the committed reversal."""

from pathlib import Path

import numpy as np
import pytest

from dnnphase import compare as cmp
from dnnphase.compare.comparator.report import disagreement, line_signs
from springblock import theory
from tests.dnnphase.compare.comparator.test_compare import SPRING_CURV, fake_network, fake_spring

FRICTION = [0.0, 0.01, 0.02]
NOISE = [0.0, 0.01, 0.02, 0.03]
#: The chain of SPRING_CURV with its noisiest column reversed: more friction, more convex.
REVERSED = SPRING_CURV.copy()
REVERSED[:, 3] = [0.0, 0.2, 0.4]
ROOT = Path(__file__).resolve().parents[4]


def _report(chain_curv, net_curv=SPRING_CURV[::-1], values=None):
    network = fake_network(net_curv, alphas=[0.0, 0.5, 1.0], values=values)
    return cmp.compare(fake_spring(chain_curv, FRICTION, NOISE), network)


def test_line_signs_read_rising_falling_flat_and_non_monotone_lines():
    curv = np.array([[0.0, 0.1, 0.2, 0.3],        # rises
                     [0.3, 0.2, 0.1, 0.0],        # falls
                     [0.0, 0.001, 0.0, 0.002],    # flat: within the resolution
                     [0.0, 0.4, 0.4, 0.05],       # rises, then falls back: not monotone
                     [0.0, np.nan, np.nan, 0.2]])  # two finite cells: unknown
    signs = line_signs(curv, np.zeros(curv.shape), axis=1)
    np.testing.assert_array_equal(signs[:4], [1, -1, 0, 0])
    assert np.isnan(signs[4])
    # a change within two standard errors of the seed means is no change
    noisy = line_signs(curv[:1], np.full((1, 4), 0.2), axis=1)
    np.testing.assert_array_equal(noisy, [0])
    # along columns: the same lines, transposed
    np.testing.assert_array_equal(line_signs(curv[:2].T, np.zeros((4, 2)), axis=0), [1, -1])


def test_sign_words_name_every_line_when_none_can_be_read():
    from dnnphase.compare.comparator.words import sign_words

    assert sign_words([np.nan] * 3, [0.0, 0.1, 0.2], "dropout", "column") == \
        "n/a in every column"  # not "n/a at dropout >= 0"
    assert sign_words([1.0, np.nan, np.nan], [0.0, 0.1, 0.2], "noise", "row") == \
        "rises (more convex) at noise 0; n/a at noise >= 0.1"


def test_a_reversed_chain_column_is_reported_exactly_there():
    report = _report(REVERSED)
    np.testing.assert_array_equal(report["spring_sign_along_nonlinearity"], [-1, -1, -1, 1])
    np.testing.assert_array_equal(report["network_sign_along_nonlinearity"], [-1] * 4)
    np.testing.assert_array_equal(report["network_sign_along_noise"], [1] * 3)
    np.testing.assert_array_equal(report["spring_sign_along_noise"], [1] * 3)
    expected = np.zeros((3, 4), dtype=int)
    expected[:, 3] = 1  # code 1: opposite along nonlinearity, in the column
    np.testing.assert_array_equal(report["disagreement"], expected)
    np.testing.assert_array_equal(report["spring_disagreement"], expected)
    a = report.attrs
    assert (a["columns_disagreeing"], a["spring_columns_disagreeing"]) == (1, 1)
    assert (a["rows_disagreeing"], a["spring_rows_disagreeing"]) == (0, 0)
    assert (a["cells_disagreeing"], a["spring_cells_disagreeing"]) == (3, 3)
    assert a["spring_columns_against_theory"] == 1 and a["network_columns_against_theory"] == 0
    # every earlier variable and attribute is still there
    for name in ("label_agreement", "network_rho_along_noise", "spring_rho_along_nonlinearity",
                 "row_peak_value", "network_label"):
        assert name in report
    assert "label_kappa" in a and "accuracy_peak_curvature" in a


def test_lines_are_matched_at_equal_rank_position_on_different_grids():
    # 9 network columns against 4 chain columns: network column j reads the chain column
    # nearest rank j / 8, i.e. rint(3 j / 8); the chain's last column is read by j = 7, 8
    net = np.array([-0.6, -0.4, -0.2])[:, None] + np.linspace(0, 0.6, 9)  # alpha 0, 0.5, 1
    report = _report(REVERSED, net, values=np.linspace(0, 0.3, 9))
    np.testing.assert_array_equal(report["disagreement"].values[0], [0] * 7 + [1, 1])
    np.testing.assert_array_equal(report["spring_disagreement"].values[0], [0, 0, 0, 1])
    assert report.attrs["columns_disagreeing"] == 2


def test_agreeing_diagrams_report_no_disagreement():
    report = _report(SPRING_CURV)
    assert not report["disagreement"].values.any()
    assert not report["spring_disagreement"].values.any()
    for key in ("rows_disagreeing", "columns_disagreeing", "cells_disagreeing",
                "spring_rows_disagreeing", "spring_columns_disagreeing"):
        assert report.attrs[key] == 0, key
    text = cmp.summary(report)
    assert "no column has opposite signs" in text and "no row has opposite signs" in text


def test_the_summary_says_where_the_chain_reverses():
    text = cmp.summary(_report(REVERSED))
    assert "along nonlinearity (per column): opposite in 1 of 4 network columns (dropout 0.3)" \
        ", 1 of 4 chain columns (noise 0.03)" in text
    assert "chain, more friction: curvature rises (more convex) at noise 0.03; falls (more " \
        "concave) at noise <= 0.02" in text
    assert "networks, smaller alpha (more nonlinear): curvature falls (more concave) in every " \
        "column (the theory: falls)" in text


def test_the_phase_figure_outlines_the_reversed_cells(tmp_path):
    from dnnphase.compare.figures import comparison as figures
    from phasecore.panels import MARK_COLOUR, plt, save_figure
    from tests.images import assert_picture

    def marks(fig):
        return [line for ax in fig.axes for line in ax.get_lines()
                if line.get_color() == MARK_COLOUR and line.get_marker() == "x"]

    def legend(fig):
        return [t.get_text() for lg in fig.legends for t in lg.get_texts()]

    network = fake_network(SPRING_CURV[::-1], alphas=[0.0, 0.5, 1.0])
    fig = figures.plot_side_by_side(fake_spring(REVERSED, FRICTION, NOISE), network)
    assert len(marks(fig)) == 6  # one column of 3 cells in each panel
    assert any("columns: the chain's curvature rises with friction at noise 0.03" in t
               for t in legend(fig))
    save_figure(fig, tmp_path / "phase.png")
    assert_picture(tmp_path / "phase.png")
    fig = figures.plot_side_by_side(fake_spring(SPRING_CURV, FRICTION, NOISE), network)
    assert marks(fig) == [] and legend(fig) == []
    plt.close("all")


def test_disagreement_takes_paths_and_refuses_bad_thresholds(tmp_path):
    from phasecore.checks import ConfigError
    from phasecore.results import save

    spring, network = fake_spring(REVERSED, FRICTION, NOISE), fake_network(
        SPRING_CURV[::-1], alphas=[0.0, 0.5, 1.0])
    save(spring, tmp_path / "chain.nc")
    save(network, tmp_path / "net.nc")
    maps = disagreement(tmp_path / "chain.nc", tmp_path / "net.nc", "trace_ratio")
    assert maps.attrs["spring_columns_disagreeing"] == 1
    with pytest.raises(ConfigError, match="rho_min"):
        disagreement(spring, network, rho_min=0.0)
    with pytest.raises(ConfigError, match="resolution"):
        disagreement(spring, network, resolution=-1.0)


def test_the_mean_field_reverses_with_a_fixed_ratio_and_not_with_mu_left_fixed():
    # at high noise the chain relaxes to F* = (mu-> - mu<-)/2: with mu<- = 2 mu-> more
    # friction is more convex (the committed reversal), with mu<- fixed more concave
    mu_right = np.array([0.01, 0.02, 0.03])
    assert np.all(np.diff(theory.stationary_force(mu_right, 2 * mu_right, 0.028)) < 0)

    def curvature(mu_left):
        from phasecore.loadcurve import curvature_scaled

        x = theory.predict_positions(7, mu_right, mu_left, 0.028, 1000.0)
        return curvature_scaled(theory.load_curve(x))

    assert np.all(np.diff(curvature(2 * mu_right)) > 0.05)  # rises: the reversal
    fixed = curvature(np.full(3, 0.06))
    assert np.all(np.diff(fixed) < -0.05) and np.all(fixed > 0.05)  # falls, still convex


@pytest.mark.skipif(not (ROOT / "figures/paper/dnn_dropout.nc").exists(),
                    reason="the committed paper diagrams are not here")
def test_the_committed_chain_reverses_at_high_noise_against_the_dropout_networks():
    import json

    from phasecore.results import load

    chain = load(ROOT / "figures/spring_phase.nc")
    if json.loads(chain.attrs["config"]).get("mu_left_ratio") != 2:
        pytest.skip("the committed chain is no longer the mu<- = 2 mu-> diagram")
    report = cmp.compare(chain, ROOT / "figures/paper/dnn_dropout.nc")
    signs = report["spring_sign_along_nonlinearity"]
    np.testing.assert_array_equal(report["chain_noise"].values[signs.values > 0],
                                  [0.016, 0.02, 0.024, 0.028])
    assert report.attrs["columns_disagreeing"] == 8 and report.attrs["rows_disagreeing"] == 0
