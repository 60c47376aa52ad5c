"""What the user named, as input files: files, glob patterns and folders (walked to any depth).

Enters: paths as given. Leaves: the existing files to read, in order, and notes on what a folder
held besides them (other files, CSVs that are not Nsight Compute exports).
"""

from __future__ import annotations

import atexit
import glob
import io
import os
import shutil
import stat
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from ncu_roof.errors import InputError
from ncu_roof.read.compressed import compression_of
from ncu_roof.read.frame import REPORT_SUFFIXES
from ncu_roof.stream_names import remember

CSV_SNIFF_BYTES = 1 << 20  # an export's header lies within its first MiB (after the program's output)


def is_csv_export(path: Path) -> bool:
    """Whether a ``.csv`` holds an Nsight Compute export: a line naming both ``ID`` and ``Kernel
    Name`` columns in its first MiB."""
    from ncu_roof.read.csv.file import _is_header

    with path.open("rb") as fh:
        head = fh.read(CSV_SNIFF_BYTES)
    return any(b"Kernel Name" in line and _is_header(line) for line in head.splitlines())


def _walk(folder: Path) -> list[Path]:
    """Every regular file under ``folder`` (hidden folders left out, links to folders not followed;
    a FIFO or device inside is no file to wait on), sorted."""
    found = []
    for root, dirs, files in os.walk(folder):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        found += [Path(root) / f for f in sorted(files) if not f.startswith(".") and Path(root, f).is_file()]
    return found


def folder_inputs(folder: Path) -> tuple[list[Path], list[str]]:
    """The reports and CSV exports anywhere under ``folder``, and a note on what it held."""
    reports: list[Path] = []
    exports: list[Path] = []
    foreign: list[Path] = []
    traces: list[Path] = []
    others: Counter[str] = Counter()
    for p in _walk(folder):
        if p.name.endswith(REPORT_SUFFIXES):
            reports.append(p)
        elif is_trace_name(p):
            traces.append(p)
        elif p.suffix.lower() == ".csv":
            (exports if is_csv_export(p) else foreign).append(p)
        else:
            others[p.suffix.lower() or "(no suffix)"] += 1
    if not reports and not exports:
        hint = (f"; it holds {len(traces)} JSON file{'s' if len(traces) != 1 else ''}: PyTorch profiler traces are "
                f"read by ncu-roof timeline {folder}") if traces else ""
        raise InputError(f"{folder} is a folder with no .ncu-rep or Nsight Compute CSV files under it: pass "
                         f"report files{hint}")
    skipped = [f"{n} {kind}" for kind, n in sorted(others.items())]
    skipped += [f"{len(traces)} JSON file{'s' if len(traces) != 1 else ''} (PyTorch profiler traces: ncu-roof "
                "timeline reads them)"] if traces else []
    skipped += [f"{len(foreign)} CSV file{'s' if len(foreign) != 1 else ''} that "
                f"{'are' if len(foreign) != 1 else 'is'} not an Nsight Compute export "
                f"({', '.join(str(p.relative_to(folder)) for p in foreign[:3])}{', ...' if len(foreign) > 3 else ''})"
                ] if foreign else []
    note = (f"{folder}: {len(reports)} report{'s' if len(reports) != 1 else ''} and {len(exports)} CSV "
            f"export{'s' if len(exports) != 1 else ''} read"
            + (f"; skipped {', '.join(skipped)}" if skipped else ""))
    return sorted(reports + exports), [note]


def _matches(text: str) -> list[Path]:
    """An input as paths: a glob pattern's matches (sorted; none is an error), else the path itself."""
    if any(ch in text for ch in "*?[") and not Path(text).exists():
        # a user's pattern may be absolute or climb with '..': Path.glob takes only relative ones
        matches = sorted(Path(m) for m in glob.glob(text))  # noqa: PTH207
        if not matches:
            raise InputError(f"no file matches {text}")
        return matches
    return [Path(text)]


def expand_inputs(paths: str | Path | Iterable[str | Path]) -> tuple[list[Path], list[str]]:
    """Files, folders (the reports and CSV exports anywhere under them) and glob patterns ->
    existing file paths, and the notes on the folders."""
    items = [paths] if isinstance(paths, (str, Path)) else list(paths)
    if not items:
        raise InputError("no input given: pass one or more .ncu-rep or CSV files")
    result: list[Path] = []
    notes: list[str] = []
    for item in items:
        text = str(item)
        if text == "-" or _is_stream(Path(text)):
            result.append(_stream_copy(text))
            continue
        for path in _matches(text):
            if path.is_dir():
                files, said = folder_inputs(path)
                result += files
                notes += said
            elif not path.exists():
                raise InputError(f"no such file: {path}")
            elif is_trace_name(path):
                raise InputError(f"{path} is a JSON file, not an Nsight Compute report or export: a PyTorch "
                                 f"profiler trace is read by ncu-roof timeline {path}")
            else:
                result.append(path)
    return result, notes


def _is_stream(path: Path) -> bool:
    """A pipe or terminal given as a path (``/dev/stdin``, ``<(...)``): neither a file nor a folder."""
    try:
        mode = path.stat().st_mode
    except OSError:
        return False
    return stat.S_ISFIFO(mode) or stat.S_ISCHR(mode) or stat.S_ISSOCK(mode)


def _stream_copy(text: str) -> Path:
    """``-`` (standard input) or a pipe, read once into a temporary file (removed at exit) so that
    every reader, in any process, can open and re-read it; a report or a CSV export by its bytes.
    Outputs and messages name it as given (:mod:`ncu_roof.stream_names`), never by the copy."""
    name = "standard input" if text == "-" else text
    if text == "-":
        data = _read_stdin()
    else:
        with open_input(Path(text)) as fh:
            data = fh.read()
    if not data:
        raise InputError(f"{name} is empty: pipe in a .ncu-rep report or an ncu CSV export")
    report = data[:4] == b"NVR\x00" or compression_of(data[:4]) is not None  # a report, or one compressed
    stem = "stdin" if text == "-" else Path(text).name
    suffixes = REPORT_SUFFIXES if report else (".csv",)
    return copy_stream(data, text, stem if stem.lower().endswith(suffixes) else stem + suffixes[0])


def _read_stdin() -> bytes:
    """Standard input's bytes; refused when closed, or a terminal (nobody types a report in)."""
    stdin = getattr(sys.stdin, "buffer", None)
    if stdin is None or sys.stdin.closed:
        raise InputError("standard input is closed: pipe in a .ncu-rep report or an ncu CSV export, or name a file")
    try:
        terminal = sys.stdin.isatty()
    except (OSError, ValueError):
        terminal = False
    if terminal:
        raise InputError("standard input is a terminal: pipe in a .ncu-rep report or an ncu CSV export "
                         "(ncu-roof table - < R.ncu-rep), or name a file")
    return bytes(stdin.read())


def copy_stream(data: bytes, given: str, name: str) -> Path:
    """``data`` read from ``given`` (``-`` or a pipe's path) as a temporary file named ``name``
    (removed at exit), remembered as standing for ``given``."""
    folder = Path(tempfile.mkdtemp(prefix="ncu-roof-stdin-"))
    atexit.register(shutil.rmtree, folder, True)
    path = folder / name
    path.write_bytes(data)
    remember(str(path), given)
    return path


FIFO_WAIT_S = 60.0  # how long a named pipe may wait for a program to open it for writing


def open_input(path: Path) -> io.RawIOBase:
    """``path`` opened once for reading, unbuffered. A named pipe (FIFO) waits at most FIFO_WAIT_S
    for a program to open it for writing (saying so on stderr after a second), then is read as the
    stream it is, to its end; a pipe whose writer is gone reads as empty."""
    if not _is_fifo(path):
        return path.open("rb", buffering=0)
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)  # never blocks: a writer is waited for below
    try:
        head = _await_writer(fd, path)
        os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return _PipeReader(fd, head)


def _is_fifo(path: Path) -> bool:
    try:
        return stat.S_ISFIFO(path.stat().st_mode)
    except OSError:
        return False


def _await_writer(fd: int, path: Path) -> bytes:
    """The first bytes of a pipe opened without blocking, once a writer holds it (b"" while the
    writer has not written yet, or when an unnamed pipe's writer is gone: its end)."""
    unnamed = "pipe:[" in os.path.realpath(path)  # noqa: PTH111 - <(cmd), /dev/stdin: no writer can come later
    start = time.monotonic()
    told = False
    while True:
        try:
            head = os.read(fd, 1 << 16)
        except BlockingIOError:  # a writer holds it open and has not written yet
            return b""
        if head or unnamed:
            return head
        waited = time.monotonic() - start
        if waited >= FIFO_WAIT_S:
            raise InputError(f"{path} is a named pipe (FIFO) that no program wrote to in {FIFO_WAIT_S:.0f} s: "
                             f"start the program that writes it (ncu ... > {path}), or name a file")
        if waited >= 1 and not told:
            print(f"ncu-roof: waiting for a program to write to {path} (a named pipe; at most "
                  f"{FIFO_WAIT_S:.0f} s)", file=sys.stderr)
            told = True
        time.sleep(0.02)


class _PipeReader(io.RawIOBase):
    """A pipe's descriptor as a binary file, with the bytes read while waiting for its writer first."""

    def __init__(self, fd: int, head: bytes) -> None:
        super().__init__()
        self._fd, self._head = fd, head

    def readable(self) -> bool:
        return True

    def fileno(self) -> int:
        return self._fd

    def readinto(self, buffer: Any) -> int:
        if self._head:
            n = min(len(buffer), len(self._head))
            buffer[:n] = self._head[:n]
            self._head = self._head[n:]
            return n
        return os.readv(self._fd, [buffer])

    def close(self) -> None:
        if not self.closed:
            os.close(self._fd)
        super().close()


def expand_paths(paths: str | Path | Iterable[str | Path]) -> list[Path]:
    """:func:`expand_inputs` without the notes."""
    return expand_inputs(paths)[0]


TRACE_SUFFIXES = (".json", ".json.gz", ".sqlite")  # PyTorch profiler (Kineto) traces; Nsight Systems exports


def is_trace_name(path: Path) -> bool:
    """Whether ``path`` is named like a timeline: a PyTorch profiler trace (``.json``, ``.json.gz``) or
    an Nsight Systems SQLite export (``.sqlite``)."""
    return path.name.lower().endswith(TRACE_SUFFIXES)


def trace_inputs(paths: str | Path | Iterable[str | Path]) -> tuple[list[Path], list[str]]:
    """Trace files, folders (a folder of ranks: every ``.json``/``.json.gz`` under it) and glob
    patterns -> existing trace paths, and notes on what folders held besides."""
    items = [paths] if isinstance(paths, (str, Path)) else list(paths)
    if not items:
        raise InputError("no input given: pass one or more PyTorch profiler traces (.json or .json.gz) or Nsight "
                         "Systems SQLite exports (.sqlite)")
    found: list[Path] = []
    notes: list[str] = []
    for item in items:
        text = str(item)
        if text == "-":  # a trace or an SQLite export piped in
            data = _read_stdin()
            if not data:
                raise InputError("standard input is empty: pipe in a PyTorch profiler trace or an Nsight Systems "
                                 "SQLite export")
            found.append(copy_stream(data, "-", "stdin.sqlite" if data.startswith(b"SQLite format 3\x00")
                                     else "stdin.json"))
            continue
        for path in _matches(text):
            if path.is_dir():
                inside = _walk(path)
                traces = [p for p in inside if is_trace_name(p)]
                if not traces:
                    raise InputError(f"{path} is a folder with no .json, .json.gz or .sqlite trace under it")
                others = len(inside) - len(traces)
                if others:
                    notes.append(f"{path}: {len(traces)} trace{'s' if len(traces) != 1 else ''} read; skipped "
                                 f"{others} other file{'s' if others != 1 else ''}")
                found += traces
            elif not path.exists():
                raise InputError(f"no such file: {path}")
            else:
                found.append(path)
    return found, notes
