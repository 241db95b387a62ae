"""Sweep execution: serial vs local process pool vs Dask LocalCluster, and store overhead.

    python benchmarks/bench_sweep.py [--quick] [--networks]

For the springblock phase diagram (and, with ``--networks``, a small network
sweep) prints the total time of each way of running the same chunks, as
ratios against the serial run measured in the same process, and the cost of
writing every chunk to disk as it completes (% of the run), measured as the
difference between a run with a chunk store and the same computation kept
in memory. All runs produce identical results (checked here too).
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import numpy as np
import xarray as xr


def _timed(fn):
    t0 = time.perf_counter()
    out = fn()
    return time.perf_counter() - t0, out


def spring_sweeps(quick: bool, workdir: Path) -> None:
    from springblock import phase_diagram

    kwargs = dict(rows=("mu_right", np.linspace(0, 0.03, 6)),
                  cols=("noise", np.linspace(0, 0.028, 8)), seeds=10, mu_left_ratio=2,
                  steps=20_000 if quick else 100_000, chains_per_chunk=80,
                  theory_prediction=False)
    phase_diagram(**{**kwargs, "steps": 10, "seeds": 1})  # compile the kernel once
    from springblock.io import save

    def in_memory():
        ds = phase_diagram(**kwargs)
        save(ds, workdir / "m.nc")  # the final file is written either way
        return ds

    t_mem, ref = _timed(in_memory)
    t_serial, serial = _timed(lambda: phase_diagram(**kwargs, output=workdir / "s.nc"))
    t_proc, proc = _timed(lambda: phase_diagram(**kwargs, output=workdir / "p.nc",
                                                scheduler="processes", workers=2))
    from dask.distributed import LocalCluster

    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
                      dashboard_address=None) as cluster:
        t_dask, dask = _timed(lambda: phase_diagram(**kwargs, output=workdir / "d.nc",
                                                    scheduler=cluster.scheduler_address))
    for other in (serial, proc, dask):
        xr.testing.assert_identical(ref.drop_attrs(), other.drop_attrs())
    n_chunks = int(np.ceil(48 / (80 // 10)))
    print(f"springblock phase diagram: 6 x 8 cells x 10 seeds, {kwargs['steps']} steps, "
          f"{n_chunks} chunks")
    print(f"  serial, in memory + 1 save : {t_mem:7.2f} s")
    print(f"  serial, chunk store        : {t_serial:7.2f} s   store overhead "
          f"{100 * (t_serial - t_mem) / t_mem:+5.1f} %")
    print(f"  process pool, 2 workers    : {t_proc:7.2f} s   {t_serial / t_proc:5.2f}x serial")
    print(f"  Dask LocalCluster, 2 wkrs  : {t_dask:7.2f} s   {t_serial / t_dask:5.2f}x serial")
    print("  (serial already uses both cores through numba's threads; the pools run one "
          "thread per worker and pay start-up and kernel compilation per worker)")


def network_sweeps(quick: bool, workdir: Path) -> None:
    from dask.distributed import LocalCluster

    from dnnphase.sweep import sweep
    from springblock.io import save

    kwargs = dict(knob="dropout", values=[0.0, 0.3], alphas=[0.0, 1.0], seeds=[0, 1],
                  dataset="mnist5k", epochs=5 if quick else 100, models_per_chunk=2,
                  measures=["trace_ratio"])

    def in_memory():
        ds = sweep(**kwargs)
        save(ds, workdir / "nm.nc", overwrite=True)
        return ds

    in_memory()  # warm caches (data set, imports) so the serial run is not charged for them
    t_mem, ref = _timed(in_memory)
    t_serial, serial = _timed(lambda: sweep(**kwargs, output=workdir / "ns.nc"))
    t_proc, proc = _timed(lambda: sweep(**kwargs, output=workdir / "np.nc",
                                        scheduler="processes", workers=2))
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
                      dashboard_address=None) as cluster:
        t_dask, dask = _timed(lambda: sweep(**kwargs, output=workdir / "nd.nc",
                                            scheduler=cluster.scheduler_address))
    for other in (serial, proc, dask):
        np.testing.assert_allclose(other["load_curve"], ref["load_curve"], rtol=1e-4)
    print(f"network sweep: 8 models (paper network, mnist5k), {kwargs['epochs']} epochs, "
          "4 chunks")
    print(f"  serial, in memory + 1 save : {t_mem:7.2f} s")
    print(f"  serial, chunk store        : {t_serial:7.2f} s   store overhead "
          f"{100 * (t_serial - t_mem) / t_mem:+5.1f} %")
    print(f"  process pool, 2 workers    : {t_proc:7.2f} s   {t_serial / t_proc:5.2f}x serial")
    print(f"  Dask LocalCluster, 2 wkrs  : {t_dask:7.2f} s   {t_serial / t_dask:5.2f}x serial")


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
