"""scripts/fig4_dynamics.py: the paper's three settings, a tiny network end to end, the
chain's misfit measure, and bad options refused before any work."""

import runpy
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from phasecore import results
from tests.scripts.refusals import refused

_PATH = Path(__file__).resolve().parents[2] / "scripts" / "fig4_dynamics.py"
fig4 = SimpleNamespace(**runpy.run_path(str(_PATH), run_name="fig4_dynamics"))


def test_the_settings_are_the_papers():
    assert fig4.SETTINGS == {"b": (1e-4, 200, 0.0), "c": (1e-3, 100, 0.1),
                             "d": (3e-3, 50, 0.2)}
    assert fig4.ALPHA == 0.0  # ReLU, SM S3


def test_the_misfit_is_zero_for_an_affine_image_and_grows_with_a_bend():
    x = np.linspace(0, 1, 8)[None, :] * np.linspace(0.2, 1.0, 5)[:, None]  # (E, L+1)
    data = 3.0 + np.arange(5.0)[:, None] - 2.5 * x  # a_e - b x
    assert fig4.project_rms(data, x) == pytest.approx(0.0, abs=1e-12)
    bent = data + 0.1 * np.sin(np.pi * np.linspace(0, 1, 8))[None, :]
    assert fig4.project_rms(bent, x) > 0.01


def test_quick_run_writes_network_chain_and_figure(tmp_path, capsys):
    argv = [str(tmp_path), "--quick", "--seeds", "2", "--chain-seeds", "2", "--epochs", "4"]
    assert fig4.cli(argv) == 0
    net = results.load(tmp_path / "fig4_network.nc", kind="fig4.network")
    assert net["epoch"].values[-1] == 4  # --epochs is honoured with --quick too
    assert list(net["setting"].values) == ["b", "c", "d"]
    assert list(net["batch_size"].values) == [200, 100, 50]
    assert net.sizes["seed"] == 2 and net["load_curve_epochs"].ndim == 4
    chain = results.load(tmp_path / "fig4_chain.nc", kind="fig4.chain")
    assert chain.attrs["noise_sharing"] == "synchronous"
    assert np.isfinite(chain["chain_residual"].values).all()
    assert chain["chain_positions"].shape == net["load_curve_epochs"].isel(seed=0).shape
    assert (tmp_path / "fig4.png").stat().st_size > 10_000
    assert "| b |" in capsys.readouterr().out
    # --refit reuses the networks: the same fit (replacing the chain and the figure: asked)
    assert fig4.cli([str(tmp_path), "--chain-seeds", "2", "--refit"]) == 2
    assert "pass --overwrite" in capsys.readouterr().err
    assert fig4.cli([str(tmp_path), "--chain-seeds", "2", "--refit", "--overwrite"]) == 0
    again = results.load(tmp_path / "fig4_chain.nc", kind="fig4.chain")
    np.testing.assert_allclose(again["mu_right"].values, chain["mu_right"].values)


@pytest.mark.parametrize("argv, word", [
    (["--seeds", "0"], "--seeds"), (["--record-every", "0"], "--record-every"),
    (["--epochs", "5", "--record-every", "10"], "--record-every"),
    (["--refit"], "--refit"), (["--bogus"], "unrecognized"),
    (["--quick", "--record-every", "7"], "--record-every"),
    (["--refit", "--seeds", "2"], "--seeds"), (["--refit", "--quick"], "--quick")])
def test_bad_options_are_one_line_before_any_work(tmp_path, capsys, argv, word):
    folder = tmp_path / "out"
    assert word in refused(fig4.cli, [str(folder), *argv], capsys)
    assert not folder.exists()


def test_a_file_where_the_folder_goes_is_one_line(tmp_path, capsys):
    folder = tmp_path / "out"
    folder.write_text("")
    assert "is a file" in refused(fig4.cli, [str(folder), "--quick"], capsys)


@pytest.mark.parametrize("content", ["not_netcdf", "other_kind"])
def test_refit_of_a_wrong_network_file_is_one_line(tmp_path, capsys, content):
    target = tmp_path / "fig4_network.nc"
    if content == "not_netcdf":
        target.write_text("hello")
    else:
        target.write_bytes((_PATH.parents[1] / "figures" / "supplement" / "cnn_dropout.nc")
                           .read_bytes())
    assert fig4.cli([str(tmp_path), "--refit"]) == 2
    err = capsys.readouterr().err
    assert "--refit" in err and len(err.strip().splitlines()) == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == ["fig4_network.nc"]
