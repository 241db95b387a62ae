"""Sweep jobs to interrupt from the tests, with chunks that wait for the test.

``python -m tests.interrupt_job toy OUT CHUNKS [--hold DIR --hold-from N] [--die-at N] ...``
    a toy sweep whose chunk values depend only on their index, so an
    interrupted-and-resumed run must equal a clean one;
``python -m tests.interrupt_job dnnphase DIR FROM sweep ...``
    the real ``dnnphase`` command line, whose chunks of alpha index >= FROM are held.

A held chunk announces itself in DIR (``started-<chunk>-<pid>``) and then waits until
``DIR/release`` exists, so a test that has seen the announcements knows the sweep cannot
finish before it is signalled. With ``--linger`` a held chunk also ignores SIGTERM
(announcing ``terminated-<pid>``), so its parent must kill it to stop.
"""

import argparse
import os
import signal
import sys
import time
from pathlib import Path

import numpy as np
import xarray as xr

from phasecore.commandline import run
from phasecore.sweeps import finish, run_chunked

HOLD_ENV = "INTERRUPT_JOB_HOLD"


def hold(directory, chunk, linger: bool = False) -> None:
    """Announce ``chunk`` in ``directory``, then wait until the test releases it."""
    directory = Path(directory)
    if linger:
        def ignore(signum, frame):
            (directory / f"terminated-{os.getpid()}").touch()
        signal.signal(signal.SIGTERM, ignore)
    (directory / f"started-{chunk}-{os.getpid()}").touch()
    while not (directory / "release").exists():
        time.sleep(0.02)


def toy_chunk(payload: dict) -> xr.Dataset:
    index = payload["index"]
    die = payload["die_marker"]
    if die and index == payload["die_at"] and not os.path.exists(die):
        Path(die).touch()
        os.kill(os.getpid(), signal.SIGKILL)  # a deterministic crash point: a power cut
    if payload["hold"] and index >= payload["hold_from"]:
        hold(payload["hold"], index, payload["linger"])
    values = np.random.default_rng(index).standard_normal(3)
    return xr.Dataset({"value": (("cell", "k"), values[None])}, coords={"cell": [index]})


def held_train_chunk(payload: dict) -> xr.Dataset:
    """``dnnphase.sweeps.sweep.train_chunk``, held first where its models' alpha index is large."""
    from dnnphase.sweeps import sweep as phase

    directory, first = os.environ[HOLD_ENV].rsplit(os.pathsep, 1)
    alpha_index = payload["models"][0][0]
    if alpha_index >= int(first):
        hold(directory, "-".join(map(str, payload["models"][0])))
    return getattr(phase, "unheld_train_chunk", phase.train_chunk)(payload)


def _toy(args) -> None:
    out = Path(args.output)
    payloads = [{"index": i, "die_at": args.die_at, "hold": args.hold,
                 "hold_from": args.hold_from, "linger": args.linger,
                 "die_marker": str(out) + ".died" if args.die_at is not None else None}
                for i in range(args.chunks)]
    config = {"chunks": args.chunks}  # holding and dying are not part of the result
    chunks, store = run_chunked(toy_chunk, payloads, config=config, output=out,
                                scheduler=args.scheduler, quiet=False, label="toy",
                                workers=2 if args.scheduler == "processes" else None)
    finish(xr.concat(chunks, "cell"), "tests.toy", config, store)


def toy_main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="toy")
    parser.add_argument("output")
    parser.add_argument("chunks", type=int)
    parser.add_argument("--scheduler", default="processes")
    parser.add_argument("--hold", default=None, help="folder of the hold protocol")
    parser.add_argument("--hold-from", type=int, default=0, help="first chunk that is held")
    parser.add_argument("--linger", action="store_true", help="held chunks ignore SIGTERM")
    parser.add_argument("--die-at", type=int, default=None,
                        help="SIGKILL the computing process at this chunk, once")
    parser.set_defaults(func=_toy)
    return run(parser, argv)


def dnnphase_main(directory: str, first: str, argv: list[str]) -> int:
    """The real command line (as a program: ``argv`` from sys.argv) with held chunks."""
    from dnnphase import cli
    from dnnphase.sweeps import sweep as phase

    os.environ[HOLD_ENV] = f"{directory}{os.pathsep}{first}"  # inherited by pool workers
    phase.unheld_train_chunk = phase.train_chunk
    phase.train_chunk = held_train_chunk
    sys.argv = ["dnnphase", *argv]
    return cli.main()


if __name__ == "__main__":
    mode, *rest = sys.argv[1:]
    if mode == "toy":
        sys.argv = ["toy", *rest]
        sys.exit(toy_main())  # as a program: argv from sys.argv, like both command lines
    sys.exit(dnnphase_main(*rest[:2], rest[2:]))
