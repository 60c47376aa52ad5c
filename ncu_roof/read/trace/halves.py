"""A big trace read on two cores: a child process (forked) reads the events after a point, about half
way, into columns of its own while this process reads those before; its columns, codes and counts
are then joined to this process's as if one process had read them all.

Enters: a trace file (a regular file, plain or gzip, of at least ``MIN_CHARS`` characters, where
the process may run on two CPUs or more, not all busy, and can fork) and a function that reads a part's batches
into a collector (:func:`ncu_roof.read.trace.read_trace`'s). Leaves: the
:class:`~ncu_roof.read.trace.kineto.Handover` the stream reader hands its second part to, and
:meth:`Halves.join`, the child's part added to this process's collector.

The child skips to ``at`` (inflating, not decoding), finds the next ``}``, comma and ``{`` and says
where that ``{`` is; this process reads no further than it, and uses the child's part only where its
own reading reaches an event's start exactly there (a ``}, {`` inside a string is no event's start),
with the trace's base time it found first (sent to the child, which waits for it). Where anything
fails (no such place, a base not found before it, the child's part unreadable, the child gone), this
process reads on alone, as it would have without a child: the same frames, notes and errors.

The two processes together spend about 0.5 s more CPU on a million events than one (the child
inflates the first part to skip it; the pages both touch after the fork are copied; the part is
pickled across): a gain in wall time where the second core is free, a loss where it is not, so no
child is forked where the load average is ``BUSY`` processes a CPU or more.
"""

from __future__ import annotations

import gc
import os
import pickle
import signal
import stat
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np

from ncu_roof.read.trace.kineto import read_rest
from ncu_roof.read.trace.store import map_large_blocks

MIN_CHARS = 48 << 20  # a smaller trace is read by one process (forking and joining cost more than they win)
SHARE = 0.57  # of the trace read by this process: the child also inflates the part it skips (at 0.53 on a million
# events the child took 1.5 s of CPU, this process 1.6-1.7 s with the frames and links, about 0.4 s, after it)
BUSY = 2.0  # no child where the load average is this many processes a CPU: on two CPUs at load 3 to 3.7 the split
# read a million events in 2.32-2.49 s against 3.16-3.42 s, at load 5.5 to 7 in 3.87-4.15 s against 3.14-3.57 s
Work = Callable[[Iterator[list[Any]], int], Any]  # (a part's batches, the base time) -> its collector


def size_of(path: Path) -> int | None:
    """The trace's length in bytes where the file says it: a plain file's size, a gzip file's last
    four bytes (its length modulo 4 GiB); None for what is no regular file."""
    try:
        info = path.stat()
        if not stat.S_ISREG(info.st_mode) or info.st_size < 18:
            return None
        with path.open("rb") as fh:
            if fh.read(2) != b"\x1f\x8b":
                return info.st_size
            fh.seek(-4, os.SEEK_END)
            return int.from_bytes(fh.read(4), "little")
    except OSError:
        return None


def cores() -> int:
    """The CPUs this process may run on (one: a child would only take turns with it)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def load() -> float:
    """The system's load average over the last minute (processes running or waiting to, this one among
    them) per CPU this process may run on."""
    try:
        return os.getloadavg()[0] / cores()
    except (AttributeError, OSError):  # no load average here
        return 0.0


class Halves:
    """The child reading a trace's second part, where one was started (:meth:`start`)."""

    def __init__(self, work: Work) -> None:
        self.work = work
        self.pid = 0
        self.at = -1
        self.sent = False  # the base time sent (or that there is none)
        self.to_child: BinaryIO | None = None
        self.from_child: BinaryIO | None = None
        self.part: dict[str, Any] | None = None  # the child's part, once accepted

    def start(self, path: Path, bare: bool, fast: bool) -> Halves | None:
        """A child forked to read the events from about ``SHARE`` of the trace on; None where the trace
        is small, no regular file, or no process can be forked here."""
        size = size_of(path)
        if not hasattr(os, "fork") or size is None or size < MIN_CHARS or cores() < 2 or load() >= BUSY:
            return None
        at = int(size * SHARE)
        r1, w1 = os.pipe()
        r2, w2 = os.pipe()
        try:
            pid = os.fork()
        except OSError:
            for fd in (r1, w1, r2, w2):
                os.close(fd)
            return None
        if pid == 0:  # the child: never returns
            os.close(r1)
            os.close(w2)
            _child(path, at, bare, fast, self.work, os.fdopen(w1, "wb"), os.fdopen(r2, "rb"))
        os.close(w1)
        os.close(r2)
        self.pid, self.at = pid, at
        self.from_child, self.to_child = os.fdopen(r1, "rb"), os.fdopen(w2, "wb")
        return self

    def base(self, base: int | None) -> None:
        """The trace's base time, sent to the child once known (it waits for it)."""
        if self.pid and not self.sent and base is not None:
            self._send(base)

    def _send(self, base: int | None) -> None:
        self.sent = True
        try:
            assert self.to_child is not None
            pickle.dump(base, self.to_child)
            self.to_child.flush()
        except OSError:  # the child is gone: accept() finds no part
            pass

    def boundary(self) -> int | None:
        """Where the child's part begins (the ``{`` of an event, it says); None where it found none."""
        at = self._receive()
        return at if type(at) is int and at >= 0 else None

    def accept(self) -> dict[str, Any] | None:
        """The child's part (kept for :meth:`join`) once it is read; its fields after the events. None
        where no base was sent (this process found none before the part) or the child failed."""
        if not self.sent:
            self._send(None)
        map_large_blocks()  # the part's arrays and the columns grown for it: not left as holes in the heap
        part = self._receive()
        if not isinstance(part, dict):
            return None
        self.part = part
        fields: dict[str, Any] = part["fields"]
        return fields

    def _receive(self) -> Any:
        try:
            assert self.from_child is not None
            return pickle.load(self.from_child)
        except (OSError, EOFError, pickle.UnpicklingError):
            return None

    def cancel(self) -> None:
        """The child stopped (its part not used) and waited for."""
        if self.pid:
            try:
                os.kill(self.pid, signal.SIGKILL)
            except OSError:
                pass
        self.close()

    def close(self) -> None:
        """The pipes closed and the child waited for (it has written its part, or it is killed)."""
        for fh in (self.to_child, self.from_child):
            if fh is not None:
                try:
                    fh.close()
                except OSError:
                    pass
        self.to_child = self.from_child = None
        if self.pid:
            if self.part is None:
                try:
                    os.kill(self.pid, signal.SIGKILL)
                except OSError:
                    pass
            try:
                os.waitpid(self.pid, 0)
            except OSError:
                pass
            self.pid = 0

    def join(self, col: Any) -> None:
        """The child's part, where it was accepted, added to ``col`` after this process's rows."""
        if self.part is not None:
            join(col, self.part)
            self.part = None


def _child(path: Path, at: int, bare: bool, fast: bool, work: Work, out: BinaryIO, inp: BinaryIO) -> None:
    """The child's whole life: the part's start said, the base time awaited, the part read and sent."""
    code = 1
    try:
        gc.disable()  # thousands of small containers a batch, none in a cycle; the process ends after
        found = read_rest(path, at, bare, fast)
        pickle.dump(found[0] if found else -1, out)
        out.flush()
        if found:
            base = pickle.load(inp)
            if type(base) is int:
                col = work(found[1], base)
                pickle.dump(pack(col, found[2]), out, protocol=pickle.HIGHEST_PROTOCOL)
                out.flush()
                code = 0
    except BaseException:  # noqa: BLE001, S110 - any failure: the parent reads the part itself
        pass
    finally:
        os._exit(code)


STRINGS = ("names", "threads", "dims", "types")  # the collector's string codes
TABLES = ("g", "c", "p")  # its columns: GPU activities, calls, CPU events
CODED = {"name": "names", "thread": "threads", "dims": "dims", "types": "types"}  # column -> its codes


def pack(col: Any, fields: dict[str, Any]) -> dict[str, Any]:
    """What a collector read, for another process: its columns, the text of each code (in code order),
    its counts, and the fields after the events."""
    col.flows.pack()
    out = {"fields": fields, "g_flow": col.g_flow, "flows": col.flows.packed, "other": dict(col.other),
           "dropped": dict(col.dropped), "bad_args": dict(col.bad_args)}
    for table in TABLES:
        columns = getattr(col, table)
        out[table] = {key: columns.take(key) for key in list(columns.one)}
    for key in STRINGS:
        codes = getattr(col, key).codes
        out[key] = sorted((k for k in codes if type(k) is str), key=codes.__getitem__)
    return out


def join(col: Any, part: dict[str, Any]) -> None:
    """A part read by another collector (:func:`pack`) added after ``col``'s rows: its codes given
    ``col``'s (new texts coded in the order the part met them, as one reader would have), its
    activities without a correlation moved by the rows before them, its flows and counts added."""
    codes = {}
    for key in STRINGS:
        strings = getattr(col, key)
        codes[key] = np.array([*(strings(text) for text in part[key]), -1], dtype=np.int32)  # [-1]: none
    first = len(col.g)
    for table in TABLES:
        values = part[table]
        for column, key in CODED.items():
            if column in values:
                values[column] = codes[key][values[column]]
        getattr(col, table).extend(values)
    col.g_flow.update({first + row: key for row, key in part["g_flow"].items()})
    col.flows.join(part["flows"])
    for key in ("other", "dropped", "bad_args"):
        getattr(col, key).update(part[key])
