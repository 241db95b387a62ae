"""Where a sweep's chunks run, and how they stop.

Schedulers: ``"serial"`` (this process; the chain kernels are already
multithreaded), ``"processes"`` (a local process pool, one thread per worker;
right for the network trainer), ``"auto"`` where a caller allows it (a pool, or this
process where the work is too small to pay for the pool's start-up:
:func:`pool_pays`, :func:`resolve_scheduler`), or a Dask distributed address such as
``"tcp://host:8786"`` (``pip install .[distributed]``). With Dask every worker
writes its own chunks, so the store must be on a filesystem the workers
share; a worker that dies loses only its unfinished chunk, which Dask
reschedules.

Interruption: Ctrl-C or SIGTERM stops a sweep within about a second: queued
chunks are cancelled, pool workers are terminated (a half-computed chunk is
simply lost, never half-written). Pool workers ignore Ctrl-C (the parent
decides) and exit by themselves if the parent dies, even by ``kill -9``.

Every executor takes ``tasks`` ({chunk index: (function, args)}) and a
progress object, and returns {chunk index: result}.
"""

from __future__ import annotations

import concurrent.futures as cf
import contextlib
import hashlib
import multiprocessing
import os
import signal
import sys
import threading
import time

from phasecore.checks import ConfigError, is_int

__all__ = ["AUTO", "busy_load", "check_reachable", "core_share", "interrupt_once", "pool_pays",
           "resolve_scheduler", "run_tasks", "validate_scheduler", "validate_workers"]

SCHEDULERS = ("serial", "processes")
#: A process pool where the work pays for its start-up, else this process
#: (:func:`resolve_scheduler`); accepted where a caller estimates its work.
AUTO = "auto"
DASK_PREFIXES = ("tcp://", "tls://", "inproc://", "ucx://")


def busy_load(seconds: float = 0.2) -> float:
    """Threads' worth of other work running on this machine's cores now, as new work meets
    it: one thread per core hashes for ``seconds`` (hashlib lets go of the GIL) and each gets
    a share s of a core; C threads beside N others on C cores get C / (C + N) each, so
    N = C (1/s - 1) (0 on an idle machine). Measured, not the load average, which counts
    niced and waiting tasks alike: at a load average of 13 on 2 cores a thread got a third
    of a core here, where the load average would say an eighth."""
    cores = os.cpu_count() or 1
    shares = [0.0] * cores
    buffer = bytes(1 << 16)

    def spin(k: int) -> None:
        start, cpu = time.perf_counter(), time.thread_time()
        while time.perf_counter() - start < seconds:
            hashlib.sha256(buffer).digest()
        shares[k] = (time.thread_time() - cpu) / max(time.perf_counter() - start, 1e-9)

    threads = [threading.Thread(target=spin, args=(k,)) for k in range(cores)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    share = min(1.0, max(sum(shares) / cores, 0.01))
    return cores * (1.0 / share - 1.0)


def core_share(busy: int, cores: int, load: float) -> float:
    """The fraction of a core each of ``busy`` threads gets on ``cores`` cores with ``load``
    threads of other work (:func:`busy_load`) beside them: what a time estimated for an
    idle machine is divided by."""
    return min(1.0, cores / max(busy + max(load, 0.0), 1.0))


def validate_scheduler(scheduler: str, auto: bool = False) -> str:
    """Check the scheduler name (``auto``: :data:`AUTO` allowed too), and that Dask is
    installed for an address."""
    names = (AUTO, *SCHEDULERS) if auto else SCHEDULERS
    if scheduler in names:
        return scheduler
    if str(scheduler).startswith(DASK_PREFIXES):
        host, _, port = str(scheduler).split("://", 1)[1].rpartition(":")
        if not str(scheduler).startswith("inproc://") and not (host and port.isdigit()):
            raise ConfigError(f"scheduler must be a Dask address with a host and a port, like "
                              f"tcp://host:8786 (got {scheduler!r})")
        try:
            import dask.distributed  # noqa: F401
        except ImportError:
            raise ConfigError(
                f"scheduler {scheduler!r} needs Dask: pip install 'springblock-dnnphase"
                "[distributed]' (or choose serial or processes)") from None
        return scheduler
    raise ConfigError(
        f"scheduler must be one of {', '.join(names)} or a Dask address like "
        f"tcp://host:8786 (got {scheduler!r})"
    )


def check_reachable(scheduler: str, timeout: float = 10.0) -> None:
    """A Dask scheduler address must answer (within ``timeout`` s) before any work starts."""
    if not str(scheduler).startswith(DASK_PREFIXES):
        return
    from dask.distributed import Client

    try:
        Client(scheduler, timeout=f"{timeout}s").close()
    except (OSError, TimeoutError) as err:
        raise ConfigError(f"scheduler {scheduler!r} does not answer ({type(err).__name__} after "
                          f"{timeout:g} s); start the Dask scheduler or choose serial or "
                          "processes") from None


def validate_workers(workers: int | None, scheduler: str = "processes") -> int | None:
    if workers is not None and not (is_int(workers) and workers >= 1):
        raise ConfigError(f"workers must be an integer >= 1, or unset (got {workers!r})")
    if workers is not None and scheduler not in ("processes", AUTO):
        raise ConfigError(f"workers must be left unset with the {scheduler!r} scheduler (it "
                          f"sizes the process pool only; got {workers})")
    return workers


@contextlib.contextmanager
def interrupt_once():
    """Ctrl-C and SIGTERM raise one KeyboardInterrupt; repeats are ignored until the end.

    A second Ctrl-C must not interrupt the clean-up that the first one started
    (that is what left workers running and the parent hanging). Nested uses
    share the outer one, so a command line can wrap its whole run in it.

    Yields the list of the signals that raised (at most one: ``[signal.SIGTERM]`` after a
    SIGTERM), shared by nested uses, so that a command can exit with 128 + its number;
    an empty list outside the main thread.
    """
    current = signal.getsignal(signal.SIGINT)
    if threading.current_thread() is not threading.main_thread():
        yield []
        return
    if getattr(current, "interrupt_once", False):
        yield current.raised
        return
    raised = []

    def handler(signum, frame):
        if not raised:
            raised.append(signum)
            raise KeyboardInterrupt

    handler.interrupt_once, handler.raised = True, raised
    previous = {sig: signal.signal(sig, handler) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield raised
    finally:
        for sig, old in previous.items():
            if signal.getsignal(sig) is handler:  # not replaced meanwhile (see commandline.run)
                signal.signal(sig, old)


def pool_pays(work: float, start: float, pool: int, cores: int | None = None,
              load: float | None = None) -> tuple[bool, float, float]:
    """Whether a process pool of ``pool`` workers finishes ``work`` sooner than this
    process alone, and the two estimates.

    Each worker first pays ``start`` core-seconds of its own (spawning, imports, its
    first task's one-off costs), all at once, then the pool shares ``work`` (core-seconds
    of tasks in this process); so the pool takes ``(start + work / pool) / s_pool`` and
    this process ``work / s_1``, where ``s_k`` is the share of a core each of k busy
    threads gets beside the machine's other work (:func:`core_share`). On an idle machine
    with ``pool`` <= ``cores`` the pool pays once ``work > start · pool / (pool - 1)``
    (twice the start-up for two workers); other work running only raises that bar, so
    the machine's load (:func:`busy_load`, 0.2 s of spinning) is measured only where the
    pool would win on an idle machine, or holds more workers than cores.

    Parameters
    ----------
    work : float
        The tasks' cost in this process (core-seconds).
    start : float
        A worker's start-up (core-seconds).
    pool : int
        Workers (at most the number of tasks).
    cores : int, optional
        This machine's cores (default ``os.cpu_count()``).
    load : float, optional
        Threads of other work (default measured when needed, :func:`busy_load`).

    Returns
    -------
    tuple of (bool, float, float)
        Whether the pool is faster, and the wall seconds estimated for this process and
        for the pool.
    """
    cores = cores or os.cpu_count() or 1
    if pool <= 1:
        return False, work, start + work
    idle = (start + work / pool) / core_share(pool, cores, 0.0) < work
    if load is None and not idle and pool <= cores:
        load = 0.0  # serial at no load is serial at every load: no need to measure
    load = busy_load() if load is None else load
    alone = work / core_share(1, cores, load)
    shared = (start + work / pool) / core_share(pool, cores, load)
    return shared < alone, alone, shared


def resolve_scheduler(scheduler: str, workers: int | None, n_tasks: int,
                      work: float | None, start: float) -> tuple[str, int | None, str]:
    """The scheduler that runs ``n_tasks`` tasks: :data:`AUTO` becomes ``"processes"`` or,
    where the pool would not pay for its start-up (:func:`pool_pays`), ``"serial"``; one
    task always runs here. Results do not depend on it: a task depends on its payload.

    Parameters
    ----------
    scheduler : str
        A name of :data:`SCHEDULERS`, :data:`AUTO` or a Dask address (left as it is).
    workers : int, optional
        The pool's size (None: one per core).
    n_tasks : int
        Tasks to run.
    work : float, optional
        The tasks' estimated cost in this process (core-seconds); None: unknown (a pool).
    start : float
        A pool worker's start-up (core-seconds).

    Returns
    -------
    tuple of (str, int or None, str)
        The scheduler, the workers (None for serial) and, where the pool's start-up
        outweighs the work, why ("" otherwise).
    """
    if scheduler not in (AUTO, "processes"):
        return scheduler, workers, ""
    if n_tasks <= 1:
        return "serial", None, ""  # a pool would only add its start-up
    if work is None:
        return "processes", workers, ""
    pool = min(workers or os.cpu_count() or 1, n_tasks)
    faster, alone, shared = pool_pays(work, start, pool)
    if faster:
        return "processes", workers, ""
    if pool == 1:  # a pool of one is this process's work plus a worker's start-up, always
        why = (f"one worker adds its start-up (about {start:g} core-seconds) to the work "
               f"(about {_seconds(work)} core-seconds)")
    else:
        why = (f"a pool of {pool} would take about {_seconds(shared)} s against "
               f"{_seconds(alone)} s here (each worker starts in about {start:g} "
               f"core-seconds; the work is about {_seconds(work)})")
    return ("processes", workers, why) if scheduler == "processes" else ("serial", None, why)


def _seconds(value: float) -> str:
    """Seconds as a reader counts them: ``1005`` rather than ``1e+03``, ``0.52`` below 10."""
    return f"{value:.0f}" if value >= 10 else f"{value:.2g}"


def _run_serial(tasks: dict, scheduler, workers, progress) -> dict:
    results = {}
    for i, (fn, args) in tasks.items():
        results[i] = fn(*args)
        progress.advance()
    return results


def _run_pool(tasks: dict, scheduler, workers, progress) -> dict:
    """A local process pool that stops at once when interrupted."""
    if not tasks:
        return {}
    ctx = multiprocessing.get_context("spawn")  # fork is unsafe with numba/torch threads
    n = min(workers or os.cpu_count() or 1, len(tasks))
    pool = cf.ProcessPoolExecutor(max_workers=n, mp_context=ctx, initializer=_pool_worker_init,
                                  initargs=(os.getpid(),))
    try:
        futures = {pool.submit(fn, *args): i for i, (fn, args) in tasks.items()}
        results = {}
        for fut in cf.as_completed(futures):
            results[futures[fut]] = fut.result()
            progress.advance()
    except BaseException:
        _stop_pool(pool)
        raise
    pool.shutdown(wait=True)
    return results


def _stop_pool(pool: cf.ProcessPoolExecutor) -> None:
    """Cancel queued chunks and terminate the workers (a running chunk is lost, not torn)."""
    processes = list((getattr(pool, "_processes", None) or {}).values())
    pool.shutdown(wait=False, cancel_futures=True)
    for proc in processes:
        proc.terminate()
    deadline = time.monotonic() + 3.0
    for proc in processes:
        proc.join(max(0.0, deadline - time.monotonic()))
        if proc.is_alive():
            proc.kill()
            proc.join(1.0)
    # Let the pool's manager thread see its dead workers and finish now; left running it
    # writes to a closed pipe at interpreter exit and prints a traceback.
    pool.shutdown(wait=True)


def _pool_worker_init(parent_pid: int) -> None:
    """Set up a pool worker: one thread, no Ctrl-C of its own, dies with its parent."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent stops the pool
    limit_threads(1)
    threading.Thread(target=_exit_with_parent, args=(parent_pid,), daemon=True,
                     name="exit-with-parent").start()


def _exit_with_parent(parent_pid: int, period: float = 0.5) -> None:
    # A worker whose parent was killed (even by SIGKILL) is re-parented: exit then.
    while os.getppid() == parent_pid:
        time.sleep(period)
    os._exit(1)


def limit_threads(n: int) -> None:
    """Cap every thread pool of this process (BLAS, OpenMP, numba, torch) at ``n``.

    numpy may already be imported when this runs, so its BLAS pool is capped
    through threadpoolctl rather than the environment.
    """
    os.environ["OMP_NUM_THREADS"] = str(n)
    os.environ["NUMBA_NUM_THREADS"] = str(n)
    try:
        from threadpoolctl import threadpool_limits

        threadpool_limits(n)
    except ImportError:
        pass
    if "torch" in sys.modules:  # a later import of torch reads OMP_NUM_THREADS
        import torch

        torch.set_num_threads(n)


def _run_dask(tasks: dict, address: str, workers, progress) -> dict:
    from dask.distributed import Client, as_completed

    with Client(address) as client:
        stamp = time.time_ns()
        futures = {client.submit(fn, *args, key=f"sweep-{stamp}-chunk-{i}", pure=False,
                                 retries=3): i
                   for i, (fn, args) in tasks.items()}
        results = {}
        try:
            for fut in as_completed(list(futures)):
                results[futures[fut]] = fut.result()
                progress.advance()
        except BaseException:
            client.cancel(list(futures))
            raise
    return results


_EXECUTORS = {"serial": _run_serial, "processes": _run_pool}


def run_tasks(tasks: dict, scheduler: str, workers, progress) -> dict:
    """Run ``tasks`` on ``scheduler`` (a name in SCHEDULERS or a Dask address)."""
    return _EXECUTORS.get(scheduler, _run_dask)(tasks, scheduler, workers, progress)
