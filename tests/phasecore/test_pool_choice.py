"""Whether a process pool pays for its start-up (phasecore.executors.pool_pays) and what
"auto" becomes (resolve_scheduler): arithmetic checked by hand, the machine's load measured
only where it could change the answer."""

import pytest

from phasecore import executors
from phasecore.checks import ConfigError
from phasecore.executors import pool_pays, resolve_scheduler, validate_scheduler, validate_workers


@pytest.fixture
def no_load_measured(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("the load was measured where it cannot change the answer")
    monkeypatch.setattr(executors, "busy_load", refuse)


def test_on_an_idle_machine_the_pool_pays_beyond_twice_its_start_up_for_two_workers():
    # two workers on two idle cores: start + work / 2 against work, even at work = 2 start
    faster, alone, shared = pool_pays(9.9, 5.0, 2, cores=2, load=0.0)
    assert not faster and (alone, shared) == (9.9, pytest.approx(9.95))
    faster, alone, shared = pool_pays(10.1, 5.0, 2, cores=2, load=0.0)
    assert faster and shared == pytest.approx(10.05)
    # four workers on four cores: start * 4 / 3
    assert not pool_pays(6.6, 5.0, 4, cores=4, load=0.0)[0]
    assert pool_pays(6.7, 5.0, 4, cores=4, load=0.0)[0]


def test_other_work_raises_the_bar():
    # 4 threads of other work on 2 cores: the pool's 2 workers get 1/3 of a core each, this
    # process alone 2/5: the pool pays from work = 3 start on (3 (5 + w / 2) < 2.5 w)
    assert not pool_pays(14.9, 5.0, 2, cores=2, load=4.0)[0]
    faster, alone, shared = pool_pays(15.1, 5.0, 2, cores=2, load=4.0)
    assert faster and alone == pytest.approx(15.1 * 2.5) and shared == pytest.approx(
        3 * (5.0 + 15.1 / 2))
    assert pool_pays(12.0, 5.0, 2, cores=2, load=0.0)[0]  # idle: it would pay


def test_the_load_is_measured_only_where_the_pool_could_win(no_load_measured):
    assert pool_pays(1.0, 5.0, 2, cores=2) == (False, 1.0, 5.5)  # serial idle: serial always
    assert pool_pays(100.0, 5.0, 1, cores=2) == (False, 100.0, 105.0)  # one worker
    with pytest.raises(AssertionError, match="the load was measured"):
        pool_pays(100.0, 5.0, 2, cores=2)  # the pool wins idle: how busy is the machine?


def test_auto_runs_tiny_work_here_and_large_work_on_a_pool(monkeypatch):
    monkeypatch.setattr(executors, "busy_load", lambda: 0.0)
    monkeypatch.setattr(executors.os, "cpu_count", lambda: 2)
    chosen, workers, why = resolve_scheduler("auto", None, 8, 0.4, 5.0)
    assert (chosen, workers) == ("serial", None)
    assert why == ("a pool of 2 would take about 5.2 s against 0.4 s here (each worker starts "
                   "in about 5 core-seconds; the work is about 0.4)")
    assert resolve_scheduler("auto", 2, 8, 0.4, 5.0)[:2] == ("serial", None)  # workers dropped
    assert resolve_scheduler("auto", 2, 8, 100.0, 5.0) == ("processes", 2, "")
    assert resolve_scheduler("auto", None, 8, None, 5.0) == ("processes", None, "")  # unknown
    # a pool asked for is kept, with the reason it is slower
    chosen, workers, why = resolve_scheduler("processes", 2, 8, 0.4, 5.0)
    assert (chosen, workers) == ("processes", 2) and why.startswith("a pool of 2 would take")
    # one task always runs here; serial and Dask are left alone
    assert resolve_scheduler("processes", 2, 1, None, 5.0) == ("serial", None, "")
    assert resolve_scheduler("serial", None, 8, 100.0, 5.0) == ("serial", None, "")
    assert resolve_scheduler("tcp://h:1", None, 8, 0.1, 5.0) == ("tcp://h:1", None, "")


def test_auto_is_a_name_only_where_the_caller_allows_it():
    assert validate_scheduler("auto", auto=True) == "auto"
    with pytest.raises(ConfigError, match=r"^scheduler must be one of serial, processes or a "):
        validate_scheduler("auto")
    assert validate_workers(2, "auto") == 2
    with pytest.raises(ConfigError, match="workers must be left unset"):
        validate_workers(2, "serial")


@pytest.mark.parametrize("address", ["tcp://", "tcp://host", "tcp://:8786", "tls://h:port"])
def test_a_dask_address_without_host_and_port_names_the_scheduler(address):
    """``tcp://`` reached Dask's "missing port number in address ''", naming nothing."""
    with pytest.raises(ConfigError, match=r"^scheduler must be a Dask address with a host"):
        validate_scheduler(address)


def test_a_pool_of_one_says_what_it_costs_in_readable_seconds(monkeypatch):
    """`--workers 1` said "a pool of 1 would take about 1e+03 s against 1e+03 s here"."""
    monkeypatch.setattr(executors, "busy_load", lambda: 0.0)
    chosen, workers, why = resolve_scheduler("processes", 1, 50, 1004.6, 5.0)
    assert (chosen, workers) == ("processes", 1)
    assert why == ("one worker adds its start-up (about 5 core-seconds) to the work (about "
                   "1005 core-seconds)")
    monkeypatch.setattr(executors.os, "cpu_count", lambda: 2)
    why = resolve_scheduler("processes", 2, 8, 9.0, 5.0)[2]
    assert why == ("a pool of 2 would take about 9.5 s against 9 s here (each worker starts in "
                   "about 5 core-seconds; the work is about 9)")
