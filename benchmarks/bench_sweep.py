"""Sweep execution: serial vs local process pool vs Dask LocalCluster, and store overhead.

    python benchmarks/bench_sweep.py [--quick] [--networks]

For the springblock phase diagram (and, with ``--networks``, a small network
sweep) prints the total time of each way of running the same chunks, as
ratios against the serial run measured in the same process, and the cost of
writing every chunk to disk as it completes (% of the run), measured as the
difference between a run with a chunk store and the same computation kept
in memory plus one final save. All runs must give the same result (checked).
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import numpy as np


def _timed(fn):
    t0 = time.perf_counter()
    out = fn()
    return time.perf_counter() - t0, out


def compare_schedulers(run, workdir: Path, tag: str, same) -> dict[str, float]:
    """Time ``run(output=..., scheduler=..., workers=...)`` four ways; check results agree.

    ``same(a, b)`` asserts two results agree. Returns seconds per way.
    """
    from dask.distributed import LocalCluster

    from phasecore.results import save

    def in_memory():
        ds = run()
        save(ds, workdir / f"{tag}-m.nc", overwrite=True)  # the final file is written either way
        return ds

    times, results = {}, {}
    times["memory"], results["memory"] = _timed(in_memory)
    times["serial"], results["serial"] = _timed(lambda: run(output=workdir / f"{tag}-s.nc"))
    times["processes"], results["processes"] = _timed(
        lambda: run(output=workdir / f"{tag}-p.nc", scheduler="processes", workers=2))
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
                      dashboard_address=None) as cluster:
        times["dask"], results["dask"] = _timed(
            lambda: run(output=workdir / f"{tag}-d.nc", scheduler=cluster.scheduler_address))
    for way in ("serial", "processes", "dask"):
        same(results["memory"], results[way])
    return times


def print_times(title: str, t: dict[str, float]) -> None:
    print(title)
    print(f"  serial, in memory + 1 save : {t['memory']:7.2f} s")
    print(f"  serial, chunk store        : {t['serial']:7.2f} s   store overhead "
          f"{100 * (t['serial'] - t['memory']) / t['memory']:+5.1f} %")
    for way, label in (("processes", "process pool, 2 workers    "),
                       ("dask", "Dask LocalCluster, 2 wkrs  ")):
        print(f"  {label}: {t[way]:7.2f} s   {t['serial'] / t[way]:5.2f}x serial")


def spring_sweeps(quick: bool, workdir: Path) -> None:
    import xarray as xr

    from springblock import phase_diagram

    kwargs = dict(rows=("mu_right", np.linspace(0, 0.03, 6)),
                  cols=("noise", np.linspace(0, 0.028, 8)), seeds=10, mu_left_ratio=2,
                  steps=20_000 if quick else 100_000, chains_per_chunk=80,
                  theory_prediction=False)
    phase_diagram(**{**kwargs, "steps": 10, "seeds": 1})  # compile the kernel once

    def same(a, b):
        xr.testing.assert_identical(a.drop_attrs(), b.drop_attrs())

    times = compare_schedulers(lambda **kw: phase_diagram(**kwargs, **kw), workdir, "chain",
                               same)
    print_times(f"springblock phase diagram: 6 x 8 cells x 10 seeds, {kwargs['steps']} steps, "
                "6 chunks", times)
    print("  (serial already uses both cores through numba's threads; the pools run one "
          "thread per worker and pay start-up and kernel loading per worker)")


def network_sweeps(quick: bool, workdir: Path) -> None:
    from dnnphase.sweeps.sweep import sweep

    kwargs = dict(knob="dropout", values=[0.0, 0.3], alphas=[0.0, 1.0], seeds=[0, 1],
                  dataset="mnist5k", epochs=5 if quick else 100, models_per_chunk=2,
                  measures=["trace_ratio"])
    sweep(**{**kwargs, "epochs": 1})  # warm caches (data set, imports)

    def same(a, b):
        np.testing.assert_allclose(b["load_curve"], a["load_curve"], rtol=1e-4)

    times = compare_schedulers(lambda **kw: sweep(**kwargs, **kw), workdir, "net", same)
    print_times(f"network sweep: 8 models (paper network, mnist5k), {kwargs['epochs']} epochs, "
                "4 chunks", times)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--networks", action="store_true", help="also a small network sweep")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        spring_sweeps(args.quick, Path(tmp))
        if args.networks:
            network_sweeps(args.quick, Path(tmp))


if __name__ == "__main__":
    main()
