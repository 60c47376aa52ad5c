"""The container of a ``.ncu-rep``: the file in; out, an :class:`Index` of where each result lies
(a launch's ``ProfileResult``; under range, application-range or graph profiling a
``RangeResult``, ``CmdlistResult`` or ``GraphResult``) and which string table names its metrics,
found by walking the block headers and message lengths only (no result decoded).

A block holds results of one kind. Where one holds several, Nsight Compute (2024.1) shows only the
first kind in payload order (launches, ranges, command lists, graphs); so does this index, and it
counts what it left out (:attr:`Index.left_out`).

A block header of counts, sizes and a process only (every block after the first few) is read by
hand, one ``pread`` a block, and one that repeats the last block's byte for byte (blocks of one
launch each, of one size) is not read again: 10,000 blocks walk in 0.06 s of CPU, not 0.10 s.

The file is read through :class:`FileBytes` (``os.pread``), not mapped. A file that is empty,
foreign, cut short or damaged is refused here with one line saying what to do; :func:`undecodable`
is the error for a report this reader cannot read (use ``ncu_report``).
"""

from __future__ import annotations

import os
import re
import struct
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ncu_roof.errors import ReportLoadError
from ncu_roof.read.native.wire import schema, text, varint

MAGIC = b"NVR\x00"
# FileHeader.Version of every report tested (ncu 2021.2 to 2025.1 write 7); newer ones are read
# with a note.
TESTED_VERSIONS = (7,)
FALLBACK = "--reader ncu_report"
_U32 = struct.Struct("<I")


RESULT_KINDS = (("NumResults", "kernel"), ("NumRangeResults", "range"), ("NumCmdlistResults", "cmdlist"),
                ("NumGraphResults", "graph"))  # the payload's order after the SourceData


class FileBytes:
    """An open file read as ``bytes`` slices (``os.pread``): what the walk and the launch reads
    need of the file, without mapping it. Touching a mapped file costs resident memory the walk
    does not use: each page fault maps the pages around it too (64 KiB), so reading one length
    prefix per 210 KB launch of a 2 GB report left 640 MB of the file resident."""

    AHEAD = 512  # bytes read at once for a short read: a block's header and its first result's length

    def __init__(self, fd: int, size: int) -> None:
        self.fd, self.size = fd, size
        self.held_at, self.held = 0, b""  # the last short read's bytes, and where they start

    def __len__(self) -> int:
        return self.size

    def __getitem__(self, where: slice) -> bytes:
        start, stop, _ = where.indices(self.size)
        at = start - self.held_at
        if 0 <= at and stop - self.held_at <= len(self.held):
            return self.held[at : at + max(stop - start, 0)]
        if stop - start >= self.AHEAD:
            return os.pread(self.fd, max(stop - start, 0), start)
        self.held_at, self.held = start, os.pread(self.fd, self.AHEAD, start)  # one read for the next few
        return self.held[: max(stop - start, 0)]


def _u32(buf: Any, pos: int) -> int:
    """The little-endian uint32 at ``pos`` (a message's length prefix)."""
    return int(_U32.unpack(buf[pos : pos + 4])[0])


@dataclass
class Launch:
    """Where one result lies in the file, which string table names its metrics, and its kind
    (``kernel``: a ``ProfileResult``; ``range``, ``cmdlist``, ``graph``)."""

    offset: int
    size: int
    table: int
    kind: str = "kernel"


@dataclass
class Index:
    """What a walk over the block headers found (no launch decoded yet)."""

    version: int
    launches: list[Launch] = field(default_factory=list)
    tables: list[list[str]] = field(default_factory=list)
    left_out: dict[str, int] = field(default_factory=dict)  # results beside another kind in a block
    sources: list[tuple[int, int]] = field(default_factory=list)  # each SourceData's offset and size
    declared: int = 0
    session: Any = None  # the SessionDetails of every block, merged (ncu spreads them over blocks)


def _cmdline_option(cmdline: str | None, name: str, default: str) -> str | None:
    """An ncu option's value on its command line (``--cache-control none``), ncu's default where the
    line does not give it, None without a line."""
    if not cmdline:
        return None
    m = re.search(rf"--{name}[= ]+\"?([\w-]+)", cmdline)
    return m.group(1).lower() if m else default


def run_conditions(session: Any) -> dict[str, Any]:
    """How the report was captured, from its merged SessionDetails: the ncu, CUDA and driver
    versions, replay mode, clock control, whether profiling ran from the start, cache control and
    the command line. The settings the report stores win; else the command line's options (ncu's
    defaults where it gives none); None where the report says neither (before ncu 2022 it stores
    little of it)."""
    versions = {v.Provider: v.Version for v in session.VersionInfo}
    ncu = next((v for k, v in versions.items() if k.startswith("Nsight Compute")), None)
    settings = session.ProfilerSettings if session.HasField("ProfilerSettings") else None
    cmdline = session.ProfilerCmdline or None
    from_start = _cmdline_option(cmdline, "profile-from-start", "on")
    return {
        "ncu_version": ncu.split(" ")[0] if ncu else None,
        "cuda_version": versions.get("CUDA Version"),
        "driver_version": versions.get("Display Driver Version"),
        "replay_mode": (settings.ReplayMode.lower() if settings and settings.ReplayMode else None)
        or _cmdline_option(cmdline, "replay-mode", "kernel"),
        "clock_control": (settings.ClockControlMode.lower() if settings and settings.ClockControlMode else None)
        or _cmdline_option(cmdline, "clock-control", "base"),
        "profile_from_start": (settings.EnableProfilingFromStart
                               if settings and settings.HasField("EnableProfilingFromStart")
                               else None if from_start is None else from_start in ("on", "yes", "true", "1")),
        "cache_control": _cmdline_option(cmdline, "cache-control", "all"),
        "command_line": cmdline,
    }


def _damaged(path: Path, why: str) -> ReportLoadError:
    return ReportLoadError(f"{path} is truncated or damaged ({why}): copy the complete file again or re-run ncu")


def undecodable(path: Path, why: str) -> ReportLoadError:
    """The one-line error for a report this reader cannot read: it names ``--reader ncu_report``."""
    return ReportLoadError(f"{path}: ncu-roof's reader cannot decode this report ({why}); "
                           f"read it with {FALLBACK} (pip install ncu-report)")


def _message(buf: Any, pos: int, size: int, cls: Any, path: Path, what: str) -> tuple[Any, int]:
    """The length-prefixed message at ``pos``; its end."""
    if pos + 4 > size:
        raise _damaged(path, f"{what} cut short")
    n = _u32(buf, pos)
    end = pos + 4 + n
    if end > size:
        raise _damaged(path, f"{what} cut short")
    try:
        return cls.FromString(buf[pos + 4 : end]), end
    except Exception as exc:  # noqa: BLE001 - protobuf's DecodeError and friends
        raise ReportLoadError(f"{path} is truncated or damaged ({what} at byte {pos} does not decode: {exc}): copy "
                              f"the complete file again, or if ncu opens it, read it with {FALLBACK}") from None


_Header = tuple[int, int, Any, tuple[int, ...], Any, list[str] | None]
_PLAIN_KEYS = {0x08: 0, 0x10: 1, 0x28: 2, 0x38: 3, 0x40: 4, 0x48: 5}  # NumSources, NumResults, PayloadSize, the rest
# of RESULT_KINDS' counts: the varint fields of a BlockHeader (tag bytes)


def _block_header(buf: Any, pos: int, size: int, path: Path, processes: dict[bytes, Any]) -> tuple[_Header, int]:
    """The block header at ``pos`` as (NumSources, PayloadSize, its process, the counts of
    :data:`RESULT_KINDS`, its SessionDetails or None, its string table or None); its end. A header of
    counts, sizes and a process only (every block but the first few) is read by hand, each distinct
    process decoded once; any other with the protobuf package."""
    if pos + 4 > size:
        raise _damaged(path, "block header cut short")
    end = pos + 4 + _u32(buf, pos)
    if end > size:
        raise _damaged(path, "block header cut short")
    plain = _plain_header(buf[pos + 4 : end], processes)
    if plain is not None:
        return plain, end
    block, _ = _message(buf, pos, size, schema().BlockHeader, path, "block header")
    process = ((block.Process.ProcessID, block.Process.Hostname, block.Process.ProcessName)
               if block.HasField("Process") else None)
    strings = [text(n) for n in block.StringTable.Strings] if block.HasField("StringTable") else None
    return (block.NumSources, block.PayloadSize, process, tuple(getattr(block, name) for name, _ in RESULT_KINDS),
            block.SessionDetails if block.HasField("SessionDetails") else None, strings), end


def _plain_header(data: bytes, processes: dict[bytes, Any]) -> _Header | None:
    """A header holding only its counts, sizes (each once, a varint of at most 5 bytes) and one
    process, read as :func:`_block_header` gives it; None for any other (read with the protobuf package)."""
    values = [0] * 6
    seen = 0
    process = None
    pos, end = 0, len(data)
    try:
        while pos < end:
            slot = _PLAIN_KEYS.get(data[pos], -1)
            if slot >= 0 and not seen >> slot & 1:
                seen |= 1 << slot
                values[slot], after = varint(data, pos + 1)
                if after - pos > 6 or values[slot] >> 32:
                    return None
                pos = after
            elif data[pos] == 0x32 and process is None:  # Process
                n, pos = varint(data, pos + 1)
                process, pos = data[pos : pos + n], pos + n
            else:
                return None
    except IndexError:
        return None
    if pos != end:
        return None
    who = None
    if process is not None:
        who = processes.get(process)
        if who is None:
            try:
                info = schema().ProcessInfo.FromString(process)
            except Exception:  # noqa: BLE001 - read with the protobuf package, where the error is said
                return None
            who = processes[process] = (info.ProcessID, info.Hostname, info.ProcessName)
    return values[0], values[2], who, (values[1], *values[3:]), None, None


def _walk(buf: Any, pos: int, count: int, end: int, path: Path, what: str, spans: list[tuple[int, int]],
          held: tuple[bytes, int] = (b"", 0)) -> int:
    """Record the offset and size of ``count`` length-prefixed messages from ``pos``; their end. A
    length among ``held`` bytes (bytes already read, and where they start) is taken from them."""
    head, head_at = held
    for _ in range(count):
        if pos + 4 > end:
            raise _damaged(path, f"{what} cut short")
        at = pos - head_at
        n = _U32.unpack_from(head, at)[0] if 0 <= at <= len(head) - 4 else _u32(buf, pos)
        spans.append((pos + 4, n))
        pos += 4 + n
    if pos > end:
        raise _damaged(path, f"{what} cut short")
    return pos


class _Tables:
    """String tables by process: a block's table extends (or, when it repeats it, replaces) the
    table of its process; each distinct table gets a number launches refer to."""

    def __init__(self) -> None:
        self.by_process: dict[Any, int] = {}
        self.tables: list[list[str]] = []

    def update(self, process: Any, strings: list[str]) -> None:
        current = self.by_process.get(process)
        old = self.tables[current] if current is not None else []
        new = strings if strings[: len(old)] == old else old + strings
        self.by_process[process] = len(self.tables)
        self.tables.append(new)

    def current(self, process: Any) -> int:
        if process not in self.by_process:
            self.by_process[process] = len(self.tables)
            self.tables.append([])
        return self.by_process[process]


def index(buf: Any, size: int, path: Path) -> Index:
    """Walk the blocks (headers and message lengths only) of a report held in ``buf``."""
    pb = schema()
    if size == 0:
        raise ReportLoadError(f"{path} is empty: re-export the report (ncu --export {path.stem} ...)")
    if buf[:4] != MAGIC:
        raise ReportLoadError(f"{path} is not an Nsight Compute report (no NVR header): pass a .ncu-rep "
                              "written by ncu --export, or a CSV export")
    header, pos = _message(buf, 4, size, pb.FileHeader, path, "file header")
    found = Index(version=header.Version, session=pb.SessionDetails())
    tables = _Tables()
    processes: dict[bytes, Any] = {}
    last: tuple[bytes | None, Any] = (None, None)  # the last header read by hand: its bytes, what they say
    while pos < size:
        # one read: the header and the first result's length, mostly (a FileBytes read straight from its file)
        head = os.pread(buf.fd, FileBytes.AHEAD, pos) if type(buf) is FileBytes else buf[pos : pos + FileBytes.AHEAD]
        n = _U32.unpack_from(head)[0] if len(head) >= 4 else -1
        data = head[4 : 4 + n] if 0 <= n <= len(head) - 4 else None
        repeated = data is not None and data == last[0]  # blocks of one launch each repeat their header
        launch = _one_launch(head, pos, pos + 4 + n, last[1], size) if repeated else None
        if launch is not None:  # the block is that one launch: what the steps below find, found at once
            found.declared += 1
            found.launches.append(Launch(launch[0], launch[1], tables.current(last[1][2])))
            pos = launch[2]
            continue
        said, start = (last[1], pos + 4 + n) if repeated else _block_header(buf, pos, size, path, processes)
        if not repeated and said[4] is None and said[5] is None:
            last = (data, said)
        sources, payload, process, counts, session, strings = said
        end = start + payload
        if end > size:
            raise _damaged(path, "block payload cut short")
        if session is not None:
            found.session.MergeFrom(session)
        if strings:
            tables.update(process, strings)
        found.declared += counts[0]
        p = _walk(buf, start, sources, end, path, "source data", found.sources, (head, pos))
        shown = next((kind for n, (_, kind) in zip(counts, RESULT_KINDS, strict=True) if n), None)
        for n, (_, kind) in zip(counts, RESULT_KINDS, strict=True):
            if not n:
                continue
            if kind != shown:
                found.left_out[kind] = found.left_out.get(kind, 0) + n
                continue
            table = tables.current(process)
            spans: list[tuple[int, int]] = []
            p = _walk(buf, p, n, end, path, "launch" if kind == "kernel" else f"{kind} result", spans, (head, pos))
            found.launches += [Launch(offset, size, table, kind) for offset, size in spans]
        pos = end
    found.tables = tables.tables
    return found


def _one_launch(head: bytes, pos: int, start: int, said: _Header, size: int) -> tuple[int, int, int] | None:
    """Where the one launch of a block lies (offset, size) and where the block ends, for a header
    (``said``) of one kernel result, no source data, session or strings, whose payload (from
    ``start``) holds that result whole and ends within the file, its length among the ``head`` bytes
    read at ``pos``; None for any other block (:func:`index` walks it)."""
    sources, payload, _, counts, session, strings = said
    end = start + payload
    at = start - pos
    if sources or counts != _ONE_KERNEL or session is not None or strings or end > size or at + 4 > len(head):
        return None
    n = _U32.unpack_from(head, at)[0]
    return (start + 4, n, end) if start + 4 + n <= end else None


_ONE_KERNEL = (1, 0, 0, 0)  # the counts of RESULT_KINDS of a block holding one kernel launch


def source_kernels(buf: Any, found: Index) -> dict[int, list[str]]:
    """Each SourceData's ``Reference`` -> the short names of the kernels its cubin holds (read
    only for reports with range, command-list or graph results, which name modules, not kernels)."""
    from ncu_roof.read.cubin import entry_functions, short_name

    pb = schema()
    out: dict[int, list[str]] = {}
    for offset, size in found.sources:
        try:
            source = pb.SourceData.FromString(buf[offset : offset + size])
        except Exception:  # noqa: BLE001 - a damaged module costs its kernel list, not the report
            continue
        names = [short_name(m) for m in entry_functions(source.Binary)]
        out.setdefault(source.Reference, []).extend(dict.fromkeys(names))
    return out


def format_version(path: Path) -> int | None:
    """The report format version in a report's file header (None for a compressed report, whose
    header is only read by unpacking it, or a file without the NVR header)."""
    with Path(path).open("rb") as fh:
        head = fh.read(1 << 16)
    if head[:4] != MAGIC:
        return None
    try:
        header, _ = _message(head, 4, len(head), schema().FileHeader, Path(path), "file header")
    except ReportLoadError:
        return None
    return int(header.Version)
