"""A sweep job to interrupt from the tests: ``python -m tests.interrupt_job OUT CHUNKS SECONDS``.

Each chunk records its worker's pid, sleeps, and returns values that depend
only on its payload, so an interrupted-and-resumed run must equal a clean one.
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


def slow_chunk(payload: dict) -> xr.Dataset:
    die = payload.get("die_marker")
    if die and payload["index"] == payload["die_at"] and not os.path.exists(die):
        Path(die).touch()
        os.kill(os.getpid(), signal.SIGKILL)  # a deterministic crash point: a power cut
    pids = Path(payload["pids"])
    (pids / f"{payload['index']}-{os.getpid()}").touch()
    time.sleep(payload["seconds"])
    values = np.random.default_rng(payload["index"]).standard_normal(3)
    return xr.Dataset({"value": (("cell", "k"), values[None])}, coords={"cell": [payload["index"]]})


def _job(args) -> None:
    out = Path(args.output)
    pids = out.with_name(out.name + ".pids")
    pids.mkdir(exist_ok=True)
    payloads = [{"index": i, "seconds": args.seconds, "pids": str(pids), "die_at": args.die_at,
                 "die_marker": str(out) + ".died" if args.die_at is not None else None}
                for i in range(args.chunks)]
    config = {"chunks": args.chunks}
    chunks, store = run_chunked(slow_chunk, payloads, config=config, output=out,
                                scheduler=args.scheduler, quiet=False, label="toy",
                                workers=2 if args.scheduler == "processes" else None)
    finish(xr.concat(chunks, "cell"), "tests.toy", config, store)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="toy")
    parser.add_argument("output")
    parser.add_argument("chunks", type=int)
    parser.add_argument("seconds", type=float)
    parser.add_argument("--scheduler", default="processes")
    parser.add_argument("--die-at", type=int, default=None,
                        help="SIGKILL the computing process at this chunk, once")
    parser.set_defaults(func=_job)
    return run(parser, argv)


if __name__ == "__main__":
    sys.exit(main())
