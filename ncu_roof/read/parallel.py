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
from collections.abc import Callable, Iterator
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
    from ncu_roof.read import native
    from ncu_roof.read.compressed import uncompressed

    planned = []
    split = jobs > 1 and len(inputs) < 2 * jobs
    for path in inputs:
        size = path.stat().st_size
        item = _Input(path, size)
        if split and size > CHUNK_MIN_BYTES and opts.reader == "native" and is_report(path):
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
    (normalizing) is shared out too; it must be a module-level function."""
    from ncu_roof.read import native
    from ncu_roof.read.native.wire import schema

    opts = opts or options()
    if opts.scheduler:  # one task per input on the Dask cluster, the same function as the pool's
        from ncu_roof.read.cluster import map_ordered

        inputs = [(str(p), (str(p), opts.reader, post)) for p in paths]
        return list(map_ordered(_whole_file, inputs, scheduler=opts.scheduler))
    jobs = opts.jobs or available_cores()
    with ExitStack() as stack:
        planned = _plan(paths, opts, jobs, stack)
        tasks = list(_tasks(planned, opts.reader, post))
        work = sum(t[3] for t in tasks)
        label = f"reading {paths[0].name}" if len(paths) == 1 else f"reading {len(paths)} files"
        progress = Progress(work, label, enabled=not opts.quiet)
        results: list[Any] = [None] * len(tasks)
        try:
            if jobs == 1 or len(tasks) == 1 or work < POOL_MIN_BYTES:
                for n, (_, fn, arg, nbytes) in enumerate(tasks):
                    if fn is _chunk:
                        results[n] = native.read_chunk(arg[0], progress.advance)
                    elif fn is _whole_file and _is_native_report(arg, opts):
                        results[n] = _read_native_here(Path(arg[0]), post, progress)
                    else:
                        results[n] = fn(*arg)
                        progress.advance(nbytes)
            else:
                if opts.reader == "native":
                    schema()  # built once here, not in every forked worker
                _run_pool(tasks, results, min(jobs, len(tasks)), progress)
        finally:
            progress.close()
    out = []
    by_input: dict[int, list[Any]] = {}
    for (i, _, _, _), result in zip(tasks, results, strict=True):
        by_input.setdefault(i, []).append(result)
    for i, item in enumerate(planned):
        parts = by_input[i]
        if item.chunks is None:
            out.append(parts[0])
            continue
        raw = native.frame(parts, item.notes or [], item.run)
        out.append(raw if post is None else post(raw))
    return out


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
    from concurrent.futures import FIRST_COMPLETED, wait

    from ncu_roof.read.cluster import process_pool

    with process_pool(workers) as pool:
        pending = {pool.submit(fn, *arg): n for n, (_, fn, arg, _) in enumerate(tasks)}
        while pending:
            done, _ = wait(pending, timeout=0.2, return_when=FIRST_COMPLETED)
            for fut in done:
                n = pending.pop(fut)
                results[n] = fut.result()  # a worker's error is raised here, first in completion order
                progress.advance(tasks[n][3])
            if not done:
                progress.advance(0)
