"""Reading many inputs, and the launches of one big report, with a pool of processes.

Every input becomes *tasks*: a CSV export, or a report read with NVIDIA's ``ncu_report``, is one
task; a report read by ncu-roof's own reader (:mod:`ncu_roof.read.native`) is split into
chunks of consecutive launches. Tasks run in a pool of ``jobs`` processes (default: the cores
this process may use) and their results are put back in input and launch order, so the table is
the same whatever ``jobs``. Work smaller than :data:`POOL_MIN_BYTES` in all is read here: a
pool costs more than it saves on small files.

A progress bar (bytes read of the inputs' size) is drawn on stderr when reading takes more than
:data:`Progress.DELAY` seconds, only on a terminal and not with ``--quiet``.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import ExitStack
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, TextIO

from ncu_roof.errors import InputError
from ncu_roof.read.frame import is_report

READERS = ("native", "ncu_report")
POOL_MIN_BYTES = 48 << 20  # below this much work in all, no pool
CHUNK_MIN_BYTES = 16 << 20  # a report's launches go to workers in chunks at least this big


@dataclass(frozen=True)
class ReadOptions:
    """How inputs are read: ``reader`` for ``.ncu-rep`` files, ``jobs`` processes (None: the cores
    available), ``quiet`` (no progress bar), ``scheduler`` (a Dask scheduler's address: each input
    is then a task on that cluster, see :mod:`ncu_roof.read.cluster`)."""

    reader: str = "native"
    jobs: int | None = None
    quiet: bool = False
    scheduler: str | None = None


_options = ReadOptions()


def options() -> ReadOptions:
    """The options reads use unless given others (the CLI sets them from its flags)."""
    return _options


def set_options(**changes: Any) -> ReadOptions:
    """Change the default read options (``reader``, ``jobs``, ``quiet``, ``scheduler``); return the old ones."""
    global _options
    old = _options
    new = replace(_options, **changes)
    if new.reader not in READERS:
        raise InputError(f"unknown reader {new.reader!r}: choose {' or '.join(READERS)}")
    if new.jobs is not None and new.jobs < 1:
        raise InputError(f"--jobs must be at least 1, not {new.jobs}")
    _options = new
    return old


def available_cores() -> int:
    """Cores this process may run on."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


# --------------------------------------------------------------------------- progress


class Progress:
    """``reading 3 files: 120/420 MB (28%)`` on stderr, redrawn in place; drawn only once reading
    has taken :data:`DELAY` seconds, only on a terminal, and erased when done."""

    DELAY = 1.5
    EVERY = 0.1

    def __init__(self, total: int, label: str, stream: TextIO | None = None, enabled: bool = True) -> None:
        self.stream = stream if stream is not None else sys.stderr
        self.enabled = enabled and total > 0 and self.stream.isatty()
        self.total, self.label = total, label
        self.done = 0
        self.start = time.monotonic()
        self.last = 0.0
        self.drawn = False

    def advance(self, nbytes: int) -> None:
        self.done = min(self.total, self.done + nbytes)
        if not self.enabled:
            return
        now = time.monotonic()
        if now - self.start < self.DELAY or now - self.last < self.EVERY:
            return
        self.last = now
        pct = 100 * self.done / self.total
        width = 24
        filled = int(width * self.done / self.total)
        bar = "#" * filled + "-" * (width - filled)
        self.stream.write(f"\r{self.label} [{bar}] {self.done / 1e6:,.0f}/{self.total / 1e6:,.0f} MB ({pct:.0f}%)")
        self.stream.flush()
        self.drawn = True

    def close(self) -> None:
        if self.drawn:
            self.stream.write("\r\033[K")
            self.stream.flush()
            self.drawn = False


# --------------------------------------------------------------------------- tasks


def _whole_file(path: str, reader: str, post: Callable[[Any], Any] | None) -> Any:
    """Task: one input read whole (CSV, or a report with either reader), then ``post`` of it."""
    p = Path(path)
    if p.stat().st_size == 0:
        raise InputError(f"{p} is empty: pass a .ncu-rep report or an ncu CSV export")
    if is_report(p):
        if reader == "native":
            from ncu_roof.read.native import load_native

            raw = load_native(p)
        else:
            from ncu_roof.read.ncu_rep import load_ncu_rep

            raw = load_ncu_rep(p)
    else:
        from ncu_roof.read.csv import load_csv

        raw = load_csv(p)
    return raw if post is None else post(raw)


def _chunk(chunk: Any) -> Any:
    """Task: a chunk of a report's launches, read by ncu-roof's reader."""
    from ncu_roof.read.native import read_chunk

    return read_chunk(chunk)


@dataclass
class _Input:
    path: Path
    size: int
    chunks: list[Any] | None = None  # native reader, a report read in chunks
    notes: list[str] | None = None
    run: dict[str, Any] | None = None


def _plan(inputs: list[Path], opts: ReadOptions, jobs: int, stack: ExitStack) -> list[_Input]:
    """Inputs, and the chunks of the reports whose launches are shared out: with fewer inputs
    than twice the jobs, a report bigger than a chunk (with more, each input is one task)."""
    planned = []
    split = jobs > 1 and len(inputs) < 2 * jobs
    for path in inputs:
        size = path.stat().st_size
        item = _Input(path, size)
        if split and size > CHUNK_MIN_BYTES and opts.reader == "native" and is_report(path):
            from ncu_roof.read import native  # imported for reports only: a CSV read needs none of it
            from ncu_roof.read.compressed import uncompressed

            plain = stack.enter_context(uncompressed(path))
            chunk_bytes = max(CHUNK_MIN_BYTES, plain.stat().st_size // (jobs * 4))
            item.chunks, item.notes, item.run = native.plan(plain, path, chunk_bytes)
        planned.append(item)
    return planned


def _tasks(planned: list[_Input], reader: str, post: Callable[[Any], Any] | None
           ) -> Iterator[tuple[int, Callable[..., Any], Any, int]]:
    """(input number, function, arguments, bytes) of every task, in input and launch order."""
    for i, item in enumerate(planned):
        if item.chunks is None:
            yield i, _whole_file, (str(item.path), reader, post), item.size
        else:
            total = sum(c.nbytes for c in item.chunks) or 1
            for c in item.chunks:
                yield i, _chunk, (c,), item.size * c.nbytes // total


def read_raw_frames(paths: list[Path], opts: ReadOptions | None = None) -> list[Any]:
    """The raw launch frame of each input, in order (see :mod:`ncu_roof.read.frame`)."""
    return read_inputs(paths, opts)


def read_inputs(paths: list[Path], opts: ReadOptions | None = None, post: Callable[[Any], Any] | None = None
                ) -> list[Any]:
    """``post`` of the raw launch frame of each input, in order (the raw frame if ``post`` is
    None). ``post`` runs in the worker that read the input where one did, so per-input work
    (normalizing) is shared out too; it must be a module-level function. A read of the same inputs
    begun by :func:`start_reading` is taken over."""
    opts = opts or options()
    if opts.scheduler:  # one task per input on the Dask cluster, the same function as the pool's
        from ncu_roof.read.cluster import map_ordered

        inputs = [(str(p), (str(p), opts.reader, post)) for p in paths]
        return list(map_ordered(_whole_file, inputs, scheduler=opts.scheduler))
    started = _take_started(paths, opts)
    jobs = opts.jobs or available_cores()
    with ExitStack() as stack:
        if started is not None:
            stack.enter_context(started.stack)
            planned, tasks = started.planned, started.tasks
        else:
            planned = _plan(paths, opts, jobs, stack)
            tasks = list(_tasks(planned, opts.reader, post))
        label = f"reading {paths[0].name}" if len(paths) == 1 else f"reading {len(paths)} files"
        progress = Progress(sum(t[3] for t in tasks), label, enabled=not opts.quiet)
        try:
            results = _results(tasks, opts, jobs, progress, started, post)
        finally:
            progress.close()
    return _per_input(planned, tasks, results, post)


def _results(tasks: list[tuple[int, Callable[..., Any], Any, int]], opts: ReadOptions, jobs: int, progress: Progress,
             started: _Started | None, post: Callable[[Any], Any] | None) -> list[Any]:
    """Each task's result, in task order: from the pool :func:`start_reading` began, from a pool, or here."""
    results: list[Any] = [None] * len(tasks)
    if started is not None:
        _collect(started.pending, tasks, results, progress)
    elif not _pooled(tasks, jobs):
        for n, (_, fn, arg, nbytes) in enumerate(tasks):
            if fn is _chunk:
                from ncu_roof.read import native

                results[n] = native.read_chunk(arg[0], progress.advance)
            elif fn is _whole_file and _is_native_report(arg, opts):
                results[n] = _read_native_here(Path(arg[0]), post, progress)
            else:
                results[n] = fn(*arg)
                progress.advance(nbytes)
    else:
        if any(fn is _chunk or (fn is _whole_file and _is_native_report(arg, opts)) for _, fn, arg, _ in tasks):
            from ncu_roof.read.native.wire import schema

            schema()  # built once here, not in every forked worker
        _run_pool(tasks, results, min(jobs, len(tasks)), progress)
    return results


def _pooled(tasks: list[tuple[int, Callable[..., Any], Any, int]], jobs: int) -> bool:
    """Whether the tasks go to a pool of ``jobs`` processes (else they are run here)."""
    return jobs > 1 and len(tasks) > 1 and sum(t[3] for t in tasks) >= POOL_MIN_BYTES


def _per_input(planned: list[_Input], tasks: list[tuple[int, Callable[..., Any], Any, int]], results: list[Any],
               post: Callable[[Any], Any] | None) -> list[Any]:
    """``post`` of each input's raw frame, from its tasks' results (a report's chunks made one frame)."""
    out = []
    by_input: dict[int, list[Any]] = {}
    for (i, _, _, _), result in zip(tasks, results, strict=True):
        by_input.setdefault(i, []).append(result)
    for i, item in enumerate(planned):
        parts = by_input[i]
        if item.chunks is None:
            out.append(parts[0])
            continue
        from ncu_roof.read import native

        raw = native.frame(parts, item.notes or [], item.run)
        out.append(raw if post is None else post(raw))
    return out


# --------------------------------------------------------------------------- a read begun early


@dataclass
class _Started:
    """A read :func:`start_reading` began: its inputs and options, their plan and tasks, what holds
    the pool (and any uncompressed copy) open, and the pool's futures (task number by future)."""

    paths: list[str]
    opts: ReadOptions
    planned: list[_Input]
    tasks: list[tuple[int, Callable[..., Any], Any, int]]
    stack: ExitStack
    pending: dict[Any, int]


_started: _Started | None = None


def start_reading(inputs: str | Path | Iterable[str | Path], opts: ReadOptions | None = None) -> None:
    """Begin reading ``inputs`` now (with ``opts``, default the read options), in a pool of processes,
    where the read would share their launches out anyway: every input a ``.ncu-rep`` named as a file,
    read by ncu-roof's reader and split into chunks, enough work for a pool (:data:`POOL_MIN_BYTES`).
    The caller then imports what it needs for the rest (pandas, the model) while the workers read,
    and :func:`read_inputs` of the same inputs and options takes the reading over. For anything else
    nothing is begun; nor where planning fails: the read proper says why. The same read begun
    already goes on; any other is stopped."""
    global _started
    opts = opts or options()
    files = _named_reports([inputs] if isinstance(inputs, (str, Path)) else list(inputs))
    if _started is not None and _started.paths == [str(p) for p in files] and _started.opts == opts:
        return
    stop_reading()
    if opts.scheduler or opts.reader != "native" or not files:
        return
    jobs = opts.jobs or available_cores()
    stack = ExitStack()
    try:
        planned = _plan(files, opts, jobs, stack)
        tasks = list(_tasks(planned, opts.reader, None))
        if any(item.chunks is None for item in planned) or not _pooled(tasks, jobs):
            stack.close()
            return
        _started = _Started([str(p) for p in files], opts, planned, tasks, stack, _submitted(tasks, jobs, stack))
    except Exception:  # noqa: BLE001 - nothing begun: the read proper meets the error and says it
        stack.close()


def _named_reports(items: list[str | Path]) -> list[Path]:
    """``items`` as the files a read would take (each once), where every one is a report named as a
    file (not ``-``, a folder, a pattern or a stream); else no file."""
    files: list[Path] = []
    seen: set[Path] = set()
    for item in items:
        path = Path(str(item))
        if str(item) == "-" or not path.is_file() or not is_report(path):
            return []
        if path.resolve() not in seen:
            seen.add(path.resolve())
            files.append(path)
    return files


def _submitted(tasks: list[tuple[int, Callable[..., Any], Any, int]], jobs: int, stack: ExitStack) -> dict[Any, int]:
    """The tasks given to a pool that ``stack`` holds open: their futures, by task number."""
    from ncu_roof.read.cluster import process_pool
    from ncu_roof.read.native.wire import schema

    schema()  # built once here, not in every forked worker
    pool = stack.enter_context(process_pool(min(jobs, len(tasks))))
    stack.callback(_cancel, pool)
    return {pool.submit(fn, *arg): n for n, (_, fn, arg, _) in enumerate(tasks)}


def _cancel(pool: Any) -> None:
    """Drop the tasks not yet begun (the pool then waits only for those running)."""
    pool.shutdown(wait=False, cancel_futures=True)


def _take_started(paths: list[Path], opts: ReadOptions) -> _Started | None:
    """The read begun early, if it is of these inputs and options (any other is stopped)."""
    global _started
    started, _started = _started, None
    if started is not None and (started.paths != [str(p) for p in paths] or started.opts != opts):
        started.stack.close()
        return None
    return started


def stop_reading() -> None:
    """Stop a read :func:`start_reading` began and no read took over (its pool shut down)."""
    global _started
    started, _started = _started, None
    if started is not None:
        started.stack.close()


def _is_native_report(arg: tuple[Any, ...], opts: ReadOptions) -> bool:
    path = Path(arg[0])
    return opts.reader == "native" and path.stat().st_size > 0 and is_report(path)


def _read_native_here(path: Path, post: Callable[[Any], Any] | None, progress: Progress) -> Any:
    """One report read in this process, with the progress bar following its launches."""
    from ncu_roof.read import native
    from ncu_roof.read.compressed import uncompressed

    with uncompressed(path) as plain:
        chunks, notes, run = native.plan(plain, path, 1 << 62)
        parts = [native.read_chunk(chunk, progress.advance) for chunk in chunks]
    raw = native.frame(parts, notes, run)
    return raw if post is None else post(raw)


def _run_pool(tasks: list[tuple[int, Callable[..., Any], Any, int]], results: list[Any], workers: int,
              progress: Progress) -> None:
    from ncu_roof.read.cluster import process_pool

    with process_pool(workers) as pool:
        _collect({pool.submit(fn, *arg): n for n, (_, fn, arg, _) in enumerate(tasks)}, tasks, results, progress)


def _collect(pending: dict[Any, int], tasks: list[tuple[int, Callable[..., Any], Any, int]], results: list[Any],
             progress: Progress) -> None:
    """Each future's result into ``results`` (at its task number) as it comes."""
    from concurrent.futures import FIRST_COMPLETED, wait

    pending = dict(pending)
    while pending:
        done, _ = wait(pending, timeout=0.2, return_when=FIRST_COMPLETED)
        for fut in done:
            n = pending.pop(fut)
            results[n] = fut.result()  # a worker's error is raised here, first in completion order
            progress.advance(tasks[n][3])
        if not done:
            progress.advance(0)
