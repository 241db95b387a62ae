"""The springblock command line: end to end, and every bad input -> exit code 2."""

from pathlib import Path

import numpy as np
import pytest

from phasecore import results
from phasecore.checks import ConfigError
from springblock import phase_diagram
from springblock.cli import main
from springblock.config import ChainConfig
from tests.images import assert_picture


def test_simulate_phase_plot_end_to_end(tmp_path, capsys):
    chain = tmp_path / "chain.nc"
    assert main(["simulate", "--blocks", "5", "--mu-right", "0.1", "--mu-left", "0.2",
                 "--noise", "0.1", "--steps", "2000", "--seeds", "4", "--record-every", "100",
                 "-o", str(chain)]) == 0
    ds = results.load(chain, kind="springblock.simulate")
    assert ds["load_curve"].dims == ("seed", "layer") and ds.sizes["seed"] == 4
    assert results.config_of(ds)["mu_left"] == 0.2 and "numba" in ds.attrs["versions"]
    phase = tmp_path / "phase.nc"
    assert main(["phase", "--rows", "mu_right=0:0.03:3", "--cols", "noise=0,0.02",
                 "--mu-left-ratio", "2", "--seeds", "3", "--steps", "3000", "--quiet",
                 "-o", str(phase)]) == 0
    pd = results.load(phase, kind="springblock.phase_diagram")
    assert pd["load_curve"].dims == ("mu_right", "noise", "seed", "layer")
    assert pd["load_curve"].shape == (3, 2, 3, 8)
    np.testing.assert_allclose(pd["mu_left_cell"].values[:, 0], [0, 0.03, 0.06])
    for source, image in ((phase, "phase.png"), (chain, "traj.png")):
        assert main(["plot", str(source), "-o", str(tmp_path / image)]) == 0
        assert_picture(tmp_path / image)
    capsys.readouterr()
    # --shade would change nothing on a trajectory: refused, not ignored
    assert main(["plot", str(chain), "--shade", "curvature", "-o",
                 str(tmp_path / "t2.png")]) == 2
    assert "shade applies to phase diagrams only" in capsys.readouterr().err
    assert not (tmp_path / "t2.png").exists()
    assert not (tmp_path / "phase.nc.parts").exists()


def test_phase_diagram_python_api_matches_cli_layout():
    ds = phase_diagram(("noise", [0.0, 0.02]), ("mu_left", [0.0, 0.04]), seeds=2, steps=2000,
                       mu_right=0.01)
    assert ds["curvature"].dims == ("noise", "mu_left", "seed")
    assert {"theory_load_curve", "stationary_force", "relaxation_time", "horizon"} <= set(ds)
    assert ds["stationary_force"].sel(noise=0.02, mu_left=0.04) == pytest.approx(-0.015)


@pytest.mark.parametrize("args,fragment", [
    (["simulate", "--mu-right", "-0.1"], "mu_right must be a finite number >= 0"),
    (["simulate", "--noise", "-1"], "noise must be"),
    (["simulate", "--modulus", "0"], "modulus must be > 0"),
    (["simulate", "--blocks", "0"], "blocks must be an integer >= 2 to simulate a chain"),
    (["simulate", "--step", "0.6"], "step must be in (0, 0.5197"),
    (["simulate", "--dynamics", "ballistic"], "dynamics must be one of"),
    (["simulate", "--noise-dist", "cauchy"], "noise_dist must be one of"),
    (["simulate", "--rng", "legacy", "--dynamics", "langevin"], "rng must be"),
    (["simulate", "--seeds", "0"], "seeds must be >= 1"),
    (["phase", "--rows", "mu_right=0:a:3"], "start:stop:count"),
    (["phase", "--rows", "friction=0:1:3"], "axis must be one of"),
    (["phase", "--rows", "noise=0:1:3", "--cols", "noise=0:1:2"], "different parameters"),
    (["phase", "--scheduler", "mpi"], "scheduler must be one of"),
    (["phase", "--mu-left-ratio", "-1"], "mu_left_ratio must be"),
    (["phase", "--mu-left", "0.1", "--mu-left-ratio", "2"], "mu_left must be left unset"),
    (["simulate", "--target", "0"], "target must be a finite number other than 0"),
    (["phase", "--workers", "0", "--scheduler", "processes"], "workers must be an integer >= 1"),
    (["phase", "--workers", "2"], "workers must be left unset with the 'serial' scheduler"),
    (["simulate", "--truncation", "3"], "truncation must be left at its default 2 unless "
                                        "noise_dist is 'truncated'"),
    (["simulate", "--damping", "5"], "damping must be None unless dynamics is 'second_order' "
                                     "or 'langevin'"),
    (["phase", "--rows", "mu_right=0,0.1", "--mu-right", "0.3"], "mu_right is an axis"),
    (["phase", "--rows", "mu_right=0:0.3:1"], "count >= 2, or 1 with start = stop"),
    (["simulate", "--blocks", "2.5"], "argument --blocks: invalid int value"),
    (["simulate", "--record-every", "2000", "--steps", "1000"],
     "record_every must be an integer in 0..steps (1000)"),
    (["simulate", "--steps", "0"], "steps must be an integer >= 1 (1e10 allowed) or inf (got '0')"),
    (["phase", "--rows", "truncation=1,2"], "a truncation axis needs noise_dist truncated"),
    (["phase", "--cols", "damping=0.5,1"], "a damping axis needs the second_order or langevin"),
    (["phase", "--rows", "mu_right=0,0"], "the mu_right axis values must be distinct"),
    (["simulate", "--seeds", "100000000"], "seeds would make a result of 5.96 GiB"),
    (["simulate", "--algorithm", "events", "--steps", "1e9", "--record-every", "10"],
     "one seed x recorded times with blocks = 7, record_every = 10 would make a result"),
    (["phase", "--rows", "mu_right=0:1:3000", "--cols", "noise=0:1:3000"],
     "rows x cols x seeds would make a result"),
])
def test_bad_input_exits_2_with_one_line(tmp_path, capsys, args, fragment):
    out = tmp_path / "x.nc"
    try:
        assert main(args + ["-o", str(out)]) == 2
    except SystemExit as exit_:  # argparse's own checks (types) exit from the parser
        assert exit_.code == 2
    err = capsys.readouterr().err.strip()
    assert fragment in err and err.startswith("springblock: error:") and "\n" not in err
    assert not out.exists()


def test_existing_output_refused_unless_overwrite(tmp_path, capsys):
    out = tmp_path / "chain.nc"
    out.write_bytes(b"precious")
    assert main(["simulate", "--steps", "100", "-o", str(out)]) == 2
    assert "exists" in capsys.readouterr().err and out.read_bytes() == b"precious"
    assert main(["simulate", "--steps", "100", "-o", str(out), "--overwrite"]) == 0
    assert results.load(out)["load_curve"].shape == (1, 8)


def test_plot_rejects_files_that_are_not_results(tmp_path, capsys):
    bogus = tmp_path / "bogus.nc"
    bogus.write_text("not netcdf")
    assert main(["plot", str(bogus), "-o", str(tmp_path / "x.png")]) == 2
    assert "not a NetCDF result" in capsys.readouterr().err
    phase = Path(__file__).parents[2] / "figures" / "spring_phase.nc"
    for shade in ("algorithm", "load_curve"):  # text, and more than one value per cell
        assert main(["plot", str(phase), "--shade", shade, "-o", str(tmp_path / "s.png")]) == 2
        err = capsys.readouterr().err.strip()
        assert "shade must be a numeric per-cell variable of the file: curvature," in err
        assert f"(got '{shade}')" in err and "\n" not in err
    assert not (tmp_path / "s.png").exists()


def test_config_round_trips_through_json():
    cfg = ChainConfig(blocks=4, mu_right=0.1, noise=0.2, dynamics="second_order")
    assert ChainConfig.from_json(cfg.to_json()) == cfg
    assert cfg.mu_left_value == 0.1 and cfg.gamma > 0
    with pytest.raises(ConfigError, match="stop_tol"):
        ChainConfig(stop_tol=-1.0)


def test_output_folder_and_figure_suffix_are_refused(tmp_path, capsys):
    folder = tmp_path / "adir"
    folder.mkdir()
    assert main(["simulate", "--steps", "10", "-o", str(folder), "--overwrite"]) == 2
    assert "is a folder; give a file name" in capsys.readouterr().err
    result = tmp_path / "c.nc"
    assert main(["simulate", "--steps", "10", "-o", str(result), "--quiet"]) == 0
    assert main(["plot", str(result), "-o", str(tmp_path / "c.xyz")]) == 2
    err = capsys.readouterr().err.strip()
    assert "figure file must be a .png, .pdf or .svg file" in err and "\n" not in err


def test_warnings_reach_the_user_as_one_line(tmp_path, capsys):
    out = tmp_path / "x.nc"
    assert main(["simulate", "--noise", "1e308", "--steps", "100", "--seeds", "2",
                 "-o", str(out)]) == 0
    err = capsys.readouterr().err.strip()
    assert err == ("springblock: warning: 2 of 2 chain(s) diverged (positions overflowed: noise "
                   "or step too large); they are marked in 'diverged'")
    assert results.load(out)["diverged"].all()


def test_a_result_under_a_picture_name_is_refused(tmp_path, capsys):
    assert main(["simulate", "--steps", "10", "-o", str(tmp_path / "chain.png")]) == 2
    assert "names a picture, but results are NetCDF: give a .nc file" in capsys.readouterr().err
    assert not (tmp_path / "chain.png").exists()


def test_an_unknown_option_points_to_its_command_help(capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["phase", "--xyz", "3", "-o", "p.nc"])
    assert exit_.value.code == 2
    assert capsys.readouterr().err.strip() == (
        "springblock: error: unrecognized arguments: --xyz 3 (see springblock phase --help)")


def test_the_diagram_and_the_fit_observe_the_chain_at_one_horizon():
    """springblock.defaults.HORIZON is where the default phase diagram ends (its steps at
    the chain's default step) and where `dnnphase fit` observes fitted chains: the network
    command line writes the numbers out (it never imports the chain), so they are held
    equal here."""
    import inspect

    from dnnphase.cli import FINAL_FIT_OPTIONS
    from springblock import defaults
    from springblock.fit import fit_spring

    assert ChainConfig(steps=defaults.STEPS).horizon == pytest.approx(defaults.HORIZON,
                                                                      rel=1e-12)
    shown = {flag: default for flag, _, default, _ in FINAL_FIT_OPTIONS}
    assert shown["--horizon"] == defaults.HORIZON
    assert shown["--mu-left-ratio"] == defaults.MU_LEFT_RATIO
    params = inspect.signature(fit_spring).parameters
    assert params["horizon"].default == defaults.HORIZON
    assert params["mu_left_ratio"].default == defaults.MU_LEFT_RATIO
    assert shown["--refine"] == params["refine"].default


# --- memory, absurd values, estimates ---------------------------------------------------------


@pytest.mark.parametrize("args,name", [
    (["simulate", "--blocks", "10000000"], "blocks"),
    (["simulate", "--seeds", "2000000"], "seeds"),
    (["simulate", "--steps", "1000000", "--record-every", "1", "--seeds", "20"], "record_every"),
    (["phase", "--blocks", "100000", "--chains-per-chunk", "4096", "--scheduler", "processes",
      "--workers", "2"], "chains_per_chunk"),
])
def test_memory_beyond_what_is_available_is_refused_before_any_work(monkeypatch, tmp_path,
                                                                    capsys, args, name):
    from springblock import memory as budget

    monkeypatch.setattr(budget, "available_memory", lambda: 2.0**30)  # a 1 GiB machine
    out = tmp_path / "x.nc"
    assert main(args + ["-o", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"springblock: error: {name} is too large for this machine: ")
    assert "more than the 1 GiB available" in err and "\n" not in err
    assert list(tmp_path.iterdir()) == []  # nothing written, not even a checkpoint folder


def test_the_python_api_refuses_what_the_command_line_refuses(monkeypatch):
    from springblock import memory as budget
    from springblock import simulate, theory

    monkeypatch.setattr(budget, "available_memory", lambda: 2.0**30)
    with pytest.raises(ConfigError, match="blocks is too large for this machine"):
        simulate(blocks=10_000_000)
    for args, config in (((7, -1), {"mu_right": -1}), ((7, 0.02, 0.0), {"modulus": 0.0}),
                         ((7, 0.02, 1.0, 0.0), {"target": 0.0})):
        with pytest.raises(ConfigError) as api:
            theory.noiseless_state(*args)
        with pytest.raises(ConfigError) as cli:
            ChainConfig(**config)
        assert str(api.value) == str(cli.value)
    # Blocks: the theory takes one, a simulated chain needs two (its load curve's curvature).
    with pytest.raises(ConfigError, match=r"^blocks must be an integer >= 1 \(got 0\)"):
        theory.noiseless_state(0, 0.02)
    with pytest.raises(ConfigError, match="^blocks must be an integer >= 2 to simulate"):
        ChainConfig(blocks=0)
    assert budget.available_memory() > 0  # this machine's, read from /proc


@pytest.mark.parametrize(("args", "params"), [
    (["--truncation", "3"], {"truncation": 3.0}),
    (["--truncation", "0.5", "--noise", "0.1"], {"truncation": 0.5, "noise": 0.1}),
    (["--damping", "0.5"], {"damping": 0.5}),
    (["--damping", "0", "--dynamics", "overdamped"], {"damping": 0.0, "dynamics": "overdamped"}),
])
def test_options_that_mean_nothing_together_are_the_configs_to_refuse(tmp_path, capsys, args,
                                                                      params):
    """The command line only translates: its error is the config's own, word for word."""
    with pytest.raises(ConfigError) as api:
        ChainConfig(**params)
    assert str(api.value).startswith(("truncation must be left at its default 2 unless",
                                      "damping must be None unless dynamics is"))
    assert main(["simulate", *args, "--steps", "10", "-o", str(tmp_path / "x.nc")]) == 2
    assert capsys.readouterr().err.strip() == f"springblock: error: {api.value}"
    with pytest.raises(ConfigError, match="^(truncation|damping) must be"):
        ChainConfig().replace(**params)


def test_a_parameter_on_an_axis_given_too_is_refused_by_the_api_and_the_cli(tmp_path, capsys):
    with pytest.raises(ConfigError) as api:
        phase_diagram("mu_right=0,0.1", "noise=0,0.01", seeds=1, steps=10, mu_right=0.3)
    assert str(api.value) == ("mu_right is an axis of the diagram (rows / cols); leave "
                              "mu_right unset (got 0.3)")
    with pytest.raises(ConfigError, match="^noise is an axis of the diagram"):
        phase_diagram("mu_right=0,0.1", "noise=0,0.01", config=ChainConfig(), noise=0.2)
    assert main(["phase", "--rows", "mu_right=0,0.1", "--mu-right", "0.3", "--steps", "10",
                 "-o", str(tmp_path / "x.nc")]) == 2
    assert capsys.readouterr().err.strip() == f"springblock: error: {api.value}"


def test_options_that_go_together_are_accepted():
    assert ChainConfig(noise_dist="truncated", truncation=3.0).effective_truncation == 3.0
    assert ChainConfig(dynamics="second_order", damping=0.5).gamma == 0.5
    assert ChainConfig(dynamics="langevin", damping=0.5).gamma == 0.5
    assert ChainConfig(truncation=2.0).effective_truncation == np.inf  # the default: unchanged


def test_a_step_too_short_to_move_a_block_is_refused(tmp_path, capsys):
    assert main(["simulate", "--step", "1e-300", "-o", str(tmp_path / "x.nc")]) == 2
    err = capsys.readouterr().err.strip()
    assert err == ("springblock: error: step must be >= 1e-10 (= 1e-10/modulus): a shorter step "
                   "moves a block by less than the rounding error of its position (got 1e-300)")
    ChainConfig(step=1e-9, modulus=0.1)  # the bound is on step x modulus


@pytest.mark.parametrize("noise", ["1e10", "1e200"])
def test_absurd_noise_is_flagged_like_overflow(tmp_path, capsys, noise):
    out = tmp_path / "x.nc"
    assert main(["simulate", "--noise", noise, "--steps", "100", "--seeds", "2",
                 "-o", str(out)]) == 0
    err = capsys.readouterr().err
    assert ("springblock: warning: 2 of 2 chain(s) ran with noise or friction above 1e+06 x "
            "modulus x |target|") in err and "marked in 'out_of_scale'" in err
    ds = results.load(out)
    assert ds["out_of_scale"].all() and not ds["diverged"].any()
    assert not ChainConfig(noise=1e6).noise > 1e6  # the bound itself is in scale
    from springblock import simulate

    assert not simulate(noise=0.5, steps=10)["out_of_scale"].any()
    with pytest.warns(UserWarning, match="2 of 4 chain.s. ran with noise or friction above"):
        pd = phase_diagram(("mu_right", [0.01]), ("noise", [0.0, float(noise)]), seeds=2,
                           steps=100)
    assert pd["out_of_scale"].sel(noise=float(noise)).all()
    assert not pd["out_of_scale"].sel(noise=0.0).any()


def test_an_undefined_curvature_is_never_silent(tmp_path, capsys):
    """Friction above the spring force holds every block: no drop, no curvature, a warning."""
    out = tmp_path / "x.nc"
    assert main(["simulate", "--mu-right", "2", "--steps", "100", "-o", str(out)]) == 0
    said = capsys.readouterr()
    assert "1 of 1 chain(s) have an undefined scale-free curvature (NaN)" in said.err
    assert "no scale-free curvature (see the warnings)" in said.out


def test_a_long_run_says_how_long_before_it_starts(monkeypatch, tmp_path, capsys):
    """Days of step kernel: the estimate comes first, compilation on first use included."""
    from springblock import ensemble
    from springblock import memory as budget

    def stop(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(ensemble, "run_ensemble", stop)
    monkeypatch.setattr(budget, "_is_cached", lambda kernel: False)
    assert main(["simulate", "--steps", "1e13", "--noise", "0.01", "--mu-right", "0.02",
                 "--seeds", "2", "-o", str(tmp_path / "x.nc")]) == 130
    first = capsys.readouterr().err.splitlines()[0]
    assert first.startswith("springblock simulate: expected run time ~") and "days" in first
    est = budget.phase_seconds([ChainConfig(steps=float("inf"), algorithm="auto", noise=0.01,
                                            mu_right=0.02, mu_left=0.04)] * 48, 10,
                               "processes", 2, True)
    assert est.compile >= budget.COMPILE_SECONDS["independent_slice"]  # fresh workers compile
    assert "numba compilation on first use" in budget.describe("phase", est)
