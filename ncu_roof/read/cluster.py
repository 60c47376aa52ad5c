"""Per-file work, one task per input, in input order: here, in a pool of processes (``--jobs``), or
as Dask tasks on an existing cluster (``--scheduler ADDRESS``, ``pip install 'ncu-roof[dask]'``).

Results are yielded in input order while at most ``window`` tasks are in flight, so the caller
holds a few inputs' results at a time, not all of them. On a cluster the workers open the paths
themselves: the inputs must be on storage every worker sees, at the same path; a worker that
cannot open one fails the run with one line naming the worker.
"""

from __future__ import annotations

import gc
import os
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from ncu_roof.errors import InputError

SCHEDULER_ENV = "DASK_SCHEDULER_ADDRESS"
CONNECT_TIMEOUT = "5s"


def _checked(fn: Callable[..., Any], path: str, args: tuple[Any, ...]) -> Any:
    """Task on a Dask worker: ``fn(*args)`` once this worker has been seen to open ``path``."""
    try:
        with Path(path).open("rb"):
            pass
    except OSError as exc:
        from distributed import get_worker

        raise InputError(f"{path}: Dask worker {get_worker().address} cannot open it ({exc.strerror or exc}): "
                         "the reports must be on storage every worker sees, at the same path") from None
    return fn(*args)


@contextmanager
def dask_client(address: str) -> Iterator[Any]:
    """A client of the Dask scheduler at ``address`` (one line when it cannot be reached)."""
    try:
        from distributed import Client
    except ModuleNotFoundError:
        raise InputError("--scheduler runs on Dask: pip install 'ncu-roof[dask]'") from None
    local = _local_workers(address)
    cluster = None
    try:
        if local is not None:  # local:N: a cluster of N worker processes on this machine, for this run
            from distributed import LocalCluster

            cluster = LocalCluster(n_workers=local, threads_per_worker=1, processes=True, dashboard_address=None)
            client = Client(cluster, set_as_default=False)
        else:
            client = Client(address, timeout=CONNECT_TIMEOUT, set_as_default=False)
    except (OSError, TimeoutError, ValueError) as exc:
        raise InputError(f"cannot reach the Dask scheduler at {address} ({exc}): start it, or drop --scheduler "
                         f"(and unset {SCHEDULER_ENV}) to read here") from None
    try:
        yield client
    finally:
        client.close()
        if cluster is not None:
            cluster.close()


def _local_workers(address: str) -> int | None:
    """N of ``local:N`` (a local cluster of N workers), None for a scheduler's address; one line for a
    ``local:`` without a whole number of at least 1."""
    if not address.startswith("local:"):
        return None
    count = address.removeprefix("local:")
    if not count.isdigit() or int(count) < 1:
        raise InputError(f"--scheduler {address}: give local:N with N the worker processes (local:4), or a "
                         "scheduler's address (tcp://host:8786)")
    return int(count)


@contextmanager
def process_pool(workers: int) -> Iterator[Any]:
    """A pool of ``workers`` processes, forked where the platform can."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    method = "fork" if "fork" in multiprocessing.get_all_start_methods() else None
    ctx = multiprocessing.get_context(method)
    gc.freeze()  # forked workers share this process's objects: their collector leaves those pages unwritten
    try:
        with ProcessPoolExecutor(max_workers=workers, mp_context=ctx, initializer=die_with_parent,
                                 initargs=(os.getpid(),)) as pool:
            yield pool
    finally:
        gc.unfreeze()


def die_with_parent(parent: int) -> None:
    """In a worker: have the kernel end it when the process that started it ends (Linux's
    PR_SET_PDEATHSIG), so a killed run leaves no worker behind; elsewhere nothing is asked."""
    import ctypes
    import signal

    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGTERM, 0, 0, 0)  # 1: PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        return
    if os.getppid() != parent:  # the parent ended before the request was made
        os._exit(1)


def _workers(client: Any) -> int:
    return max(1, len(client.scheduler_info().get("workers", {})))


def map_ordered(fn: Callable[..., Any], tasks: Sequence[tuple[str, tuple[Any, ...]]], jobs: int = 1,
                scheduler: str | None = None, window: int | None = None) -> Iterator[Any]:
    """``fn(*args)`` for each ``(path, args)`` of ``tasks``, yielded in order: on the Dask cluster at
    ``scheduler``, else in ``jobs`` processes (here when 1). ``fn`` must be a module-level function;
    at most ``window`` (default: twice the workers) tasks are in flight."""
    if scheduler:
        with dask_client(scheduler) as client:
            yield from _bounded(lambda t: client.submit(_checked, fn, t[0], t[1], pure=False), tasks,
                                window or 2 * _workers(client))
        return
    if jobs <= 1 or len(tasks) <= 1:
        for _, args in tasks:
            yield fn(*args)
        return
    with process_pool(min(jobs, len(tasks))) as pool:
        yield from _bounded(lambda t: pool.submit(fn, *t[1]), tasks, window or 2 * jobs)


def _bounded(submit: Callable[[tuple[str, tuple[Any, ...]]], Any], tasks: Sequence[tuple[str, tuple[Any, ...]]],
             window: int) -> Iterator[Any]:
    pending: deque[Any] = deque()
    todo = iter(tasks)
    for task in todo:
        pending.append(submit(task))
        if len(pending) >= window:
            break
    while pending:
        result = pending.popleft().result()  # a task's error is raised here, in input order
        for task in todo:
            pending.append(submit(task))
            break
        yield result
