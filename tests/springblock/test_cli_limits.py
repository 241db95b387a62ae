"""The springblock command line's limits: seed counts, first seeds, pool workers, blocks.

Each was a crash or a late, vague error before: now one line naming the parameter and its
range, exit code 2, before any work (and before any large array is built).
"""

import re

import numpy as np
import pytest

from phasecore import results
from phasecore.checks import ConfigError
from springblock import memory as budget
from springblock import simulate, theory
from springblock.cli import main
from springblock.config import ChainConfig


def refused(capsys, args, out):
    """Run the command line; return its one error line (it must exit 2 and write nothing)."""
    assert main(args + ["-o", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("springblock: error: ") and "\n" not in err
    assert not out.exists()
    return err.removeprefix("springblock: error: ")


# --- seed counts ----------------------------------------------------------------------------


@pytest.mark.parametrize("command,what", [("simulate", "seeds"),
                                          ("phase", "rows x cols x seeds")])
def test_a_huge_seed_count_is_refused_before_its_seeds_are_built(tmp_path, capsys, command,
                                                                 what):
    # 10**12 int64 seeds alone are 8 TB: building them first ended in a MemoryError traceback
    err = refused(capsys, [command, "--steps", "100", "--seeds", "1000000000000"],
                  tmp_path / "x.nc")
    assert err.startswith(f"{what} would make a result of ")
    assert "GiB; at most 4 GiB are allowed in one call" in err


def test_the_python_api_refuses_a_huge_seed_count_as_the_command_line_does():
    with pytest.raises(ConfigError, match=r"^seeds would make a result of 5\.96e\+04 GiB"):
        simulate(steps=100, seeds=10**12)
    with pytest.raises(ConfigError, match="^seeds would make a result of"):
        simulate(steps=100, seeds=range(5, 5 + 10**30))  # beyond what len() can count


# --- first seeds ----------------------------------------------------------------------------


@pytest.mark.parametrize("extra,first,allowed", [
    ([], "18446744073709551615",
     "an integer in 0..9223372036854775807 for 1 seed(s), so that the seed is at most "
     "2**63 - 1 (seeds are stored as int64)"),
    (["--seeds", "2"], "9223372036854775807",
     "an integer in 0..9223372036854775806 for 2 seed(s), so that the last seed "
     "(first_seed + 1) is at most 2**63 - 1 (seeds are stored as int64)"),
    (["--seeds", "3"], "-1",
     "an integer in 0..9223372036854775805 for 3 seed(s), so that the last seed "
     "(first_seed + 2) is at most 2**63 - 1 (seeds are stored as int64)"),
    (["--seeds", "2", "--rng", "legacy"], "4294967295",
     "an integer in 0..4294967294 for 2 seed(s), so that the last seed (first_seed + 1) is "
     "at most 2**32 - 1 (rng 'legacy' takes 32-bit seeds)"),
])
def test_a_first_seed_whose_seeds_do_not_fit_is_refused(tmp_path, capsys, extra, first,
                                                         allowed):
    err = refused(capsys, ["simulate", "--steps", "10", "--first-seed", first] + extra,
                  tmp_path / "x.nc")
    assert err == f"first_seed must be {allowed} (got {first})"


def test_the_largest_seeds_run_and_are_stored_exactly(tmp_path, capsys):
    out = tmp_path / "x.nc"
    assert main(["simulate", "--steps", "10", "--seeds", "2", "--first-seed",
                 str(2**63 - 2), "--quiet", "-o", str(out)]) == 0
    assert results.load(out)["seed"].values.tolist() == [2**63 - 2, 2**63 - 1]


@pytest.mark.parametrize("seeds,config,allowed", [
    ([2**63], {}, "0..9223372036854775807 (2**63 - 1: seeds are stored as int64)"),
    ([3, 2**32], {"rng": "legacy"}, "0..4294967295 (2**32 - 1: rng='legacy' takes 32-bit "
                                     "seeds)"),
])
def test_the_python_api_refuses_seeds_that_would_not_be_the_seeds_asked_for(seeds, config,
                                                                            allowed):
    # np.asarray([2**63]) is uint64: as int64 it would silently become a negative seed
    with pytest.raises(ConfigError) as error:
        simulate(steps=10, seeds=seeds, **config)
    assert str(error.value) == (f"seeds must be a count >= 1 or a list of integers in "
                                f"{allowed} (got {seeds!r})")


# --- pool workers ---------------------------------------------------------------------------


def _no_work(*args, **kwargs):
    raise AssertionError("the sweep started")


def test_a_pool_too_large_for_memory_names_workers_and_how_many_fit(monkeypatch, tmp_path,
                                                                    capsys):
    from springblock import phase

    monkeypatch.setattr(phase, "run_chunked", _no_work)  # never start 1000 processes
    monkeypatch.setattr(budget, "available_memory", lambda: 8.0 * 2**30)
    args = ["phase", "--rows", "mu_right=0:0.03:40", "--cols", "noise=0:0.02:25",
            "--seeds", "1", "--chains-per-chunk", "1", "--steps", "10",
            "--scheduler", "processes", "--workers", "1000"]  # 1000 chunks, so 1000 workers
    err = refused(capsys, args, tmp_path / "x.nc")
    assert err.startswith("workers is too large for this machine: 1000 workers, each with a "
                          "chunk of 1 chains of 7 blocks and 0.16 GiB of its own, would need "
                          "about 156 GiB of memory, more than the 8 GiB available (use at "
                          "most ")
    fit = int(re.fullmatch(r".*use at most (\d+) workers: --workers (\d+)\)", err)[1])
    assert 8 * 2**30 / (budget.WORKER_BYTES * 1.01) < fit <= 8 * 2**30 / budget.WORKER_BYTES
    cfg = ChainConfig(steps=10)
    budget.check_phase_memory(cfg, 1000, 1, 1, fit, True, True, available=8.0 * 2**30)
    with pytest.raises(ConfigError, match="^workers is too large"):
        budget.check_phase_memory(cfg, 1000, 1, 1, fit + 1, True, True,
                                  available=8.0 * 2**30)


def test_the_pool_check_names_the_chunk_when_one_worker_does_not_fit():
    cfg = ChainConfig(blocks=100_000, steps=10)
    chunk = budget.phase_memory(cfg, 48, 10, 4096, 1, True)[1].bytes  # one serial chunk
    with pytest.raises(ConfigError, match="^chains_per_chunk is too large"):
        budget.check_phase_memory(cfg, 48, 10, 4096, 4, True, True, available=chunk / 2)
    # here (serial) no worker's own memory is counted: one chunk needs what it needs
    needs = budget.phase_memory(cfg, 48, 10, 4096, 1, True, processes=False)
    budget.check_phase_memory(cfg, 48, 10, 4096, 1, True, False,
                              available=sum(n.bytes for n in needs))
    with pytest.raises(ConfigError, match="^chains_per_chunk is too large"):
        budget.check_phase_memory(cfg, 48, 10, 4096, 1, True, True,
                                  available=sum(n.bytes for n in needs))


# --- blocks ---------------------------------------------------------------------------------


@pytest.mark.parametrize("command", ["simulate", "phase"])
def test_one_block_is_refused_up_front_with_the_true_range(tmp_path, capsys, command):
    err = refused(capsys, [command, "--blocks", "1", "--steps", "10"], tmp_path / "x.nc")
    assert err == ("blocks must be an integer >= 2 to simulate a chain: the curvature of its "
                   "load curve needs the layers 0..L with L >= 2 (got 1)")


def test_two_blocks_run_and_the_theory_still_takes_one():
    with pytest.raises(ConfigError, match=r"^blocks must be an integer >= 2 .*\(got 1\)$"):
        simulate(blocks=1, steps=10)
    ds = simulate(blocks=2, steps=10, seeds=2)
    assert ds["load_curve"].shape == (2, 3) and np.isfinite(ds["curvature"]).all()
    assert theory.noiseless_state(1, 0.0).shape == (1,)
    assert theory.laplacian_extremes(1) == pytest.approx((2.0, 2.0))


def test_an_empty_output_name_is_refused_naming_output(tmp_path, capsys, monkeypatch):
    """``springblock phase -o ""`` used to fail in the chunk store's path arithmetic."""
    monkeypatch.chdir(tmp_path)
    for command in ("simulate", "phase"):
        assert main([command, "--steps", "10", "-o", ""]) == 2
        err = capsys.readouterr().err.strip()
        assert err == "springblock: error: output must be a file name (got '')", err
    assert list(tmp_path.iterdir()) == []
