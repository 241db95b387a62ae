"""Chain runs to interrupt from the tests: the real ``springblock`` command line, held
where the test wants the signal to land.

``python -m tests.chain_interrupt_job simulate DIR AT [--block] simulate args...``
    ``springblock simulate ...`` announcing ``DIR/started-<pid>`` after its AT-th kernel
    slice. With ``--block`` it then waits (between two slices, where a signal lands in any
    case) until the run has noted a signal, and keeps a checkpoint after every slice, so a
    ``kill -9`` there resumes from slice AT. Without it the run goes on, slice after slice.
``python -m tests.chain_interrupt_job phase DIR FROM:ALGORITHM phase args...``
    ``springblock phase ...`` whose chunks of index >= FROM announce
    ``DIR/started-<chunk>-<pid>`` and then run noisy chains of 1e13 steps that never end,
    with ALGORITHM (steps or events): the signal lands in a kernel (serial) or in a pool
    worker's kernel (processes).

Which slice or chunk is held is not part of the run's configuration: the same command
without this wrapper resumes the run.
"""

import os
import signal
import sys
import time
from pathlib import Path

HOLD_ENV = "CHAIN_INTERRUPT_JOB_HOLD"


def _announce(directory, name: str) -> None:
    (Path(directory) / f"started-{name}{os.getpid()}").touch()


def hold_simulate(directory: str, at: int, block: bool) -> None:
    """Wrap ``springblock.runner.advance``: announce after slice ``at``, maybe wait there."""
    from springblock import runner

    real_advance, calls = runner.advance, [0]
    if block:
        runner.CHECKPOINT_SECONDS = 0.0  # a checkpoint after every slice

    def held_advance(*args, **kwargs):
        work = real_advance(*args, **kwargs)
        calls[0] += 1
        if calls[0] == at:
            _announce(directory, "")
            # the run's Interrupts notes signals: wait until one is noted (not a kill -9)
            interrupts = signal.getsignal(signal.SIGINT).__self__
            while block and interrupts.signum is None:
                time.sleep(0.01)
        return work

    runner.advance = held_advance


def held_compute_cells(payload: dict):
    """``springblock.phase.compute_cells``, replaced by an endless run from chunk FROM on."""
    from springblock import phase

    directory, first, algorithm = os.environ[HOLD_ENV].rsplit(os.pathsep, 2)
    if payload["index"] >= int(first):
        _announce(directory, f"{payload['index']}-")
        endless = [(i, j, {**cfg, "steps": 10**13, "noise": 0.01, "algorithm": algorithm})
                   for i, j, cfg in payload["cells"]]
        payload = {**payload, "cells": endless}
    # a pool worker imported springblock afresh: its compute_cells is the real one
    return getattr(phase, "unheld_compute_cells", phase.compute_cells)(payload)


def hold_phase(directory: str, first: str) -> None:
    """Number the payloads and hold chunks ``first`` (``FROM:ALGORITHM``) on (pool workers
    inherit the environment)."""
    from springblock import phase

    os.environ[HOLD_ENV] = f"{directory}{os.pathsep}{first}"
    real_run_chunked = phase.run_chunked

    def numbered(compute, payloads, **kwargs):
        payloads = [{**p, "index": k} for k, p in enumerate(payloads)]
        return real_run_chunked(held_compute_cells, payloads, **kwargs)

    phase.unheld_compute_cells = phase.compute_cells
    phase.run_chunked = numbered


def main() -> int:
    from springblock import cli

    mode, directory, where, *argv = sys.argv[1:]
    block = "--block" in argv
    argv = [a for a in argv if a != "--block"]
    if mode == "simulate":
        hold_simulate(directory, int(where), block)
    else:
        hold_phase(directory, where)
    sys.argv = ["springblock", *argv]  # argv starts with the command: simulate or phase
    return cli.main()  # as a program: argv from sys.argv


if __name__ == "__main__":
    sys.exit(main())
