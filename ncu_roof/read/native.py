"""ncu-roof's own ``.ncu-rep`` reader: the file walked with ``mmap``, one launch decoded at a time.

The report is a container of length-prefixed protobuf messages (``NCU-REP-FORMAT.md``): the magic
``NVR\\0``, a ``FileHeader``, then blocks, each a ``BlockHeader`` followed by ``PayloadSize`` bytes
of ``SourceData``, ``ProfileResult`` (one per launch), ``RangeResult``, ``CmdlistResult`` and
``GraphResult`` messages. Metric names live in the string table a block header carries for its
process; a launch's ``MetricResults`` refer to them by ``NameId``.

This module writes down the few messages and fields it reads (:func:`_schema`: facts of the
format, no NVIDIA file) and decodes them with the ``protobuf`` package (its C ``upb`` backend).
A launch's metrics are taken as undecoded byte strings and only those the catalogue wants
(``metrics.is_needed``) are looked at, by the encoded ``NameId`` that starts each of them. On a
210 KB full-set launch (676 metrics) that takes 0.3 ms, against 0.8 ms looping over decoded
metric messages and 2-3 ms decoding the launch with NVIDIA's full schema (upb in all three; a
pure-Python walk of the launch is slower still), and keeps memory at one launch: launches are read in file order, a
chunk at a time, and the chunks of a big file can go to several processes (:func:`read_chunk`).

Values are what NVIDIA's ``ncu_report`` gives: ``as_double()`` of the stored value (double,
float, uint32 or uint64; a string or an absent value reads 0.0, an instanced metric its
aggregate value), scaled to base units; the display name of the device with ``as_string()``.
"""

from __future__ import annotations

import math
import mmap
import struct
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from functools import lru_cache
from operator import itemgetter
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from ncu_roof.errors import ReportLoadError
from ncu_roof.read import metrics
from ncu_roof.read.ncu_rules import RuleResults, rule_record
from ncu_roof.read.units import factor

MAGIC = b"NVR\x00"
# FileHeader.Version of every report tested (ncu 2021.2 to 2025.1 write 7); newer ones are read
# with a note.
TESTED_VERSIONS = (7,)
FALLBACK = "--reader ncu_report"
_U32 = struct.Struct("<I")
_F32 = struct.Struct("<f")
_F64 = struct.Struct("<d")
_KEY2 = itemgetter(slice(0, 2))
_KEY3 = itemgetter(slice(0, 3))

# --------------------------------------------------------------------------- the schema


@lru_cache(maxsize=1)
def _schema() -> SimpleNamespace:
    """The messages this reader decodes, with only the fields it uses (field numbers are the
    format's; everything else in a message is skipped by the parser)."""
    from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

    fdp = descriptor_pb2.FileDescriptorProto(name="ncu_roof_ncu_rep.proto", package="ncu_roof_ncu_rep",
                                             syntax="proto2")
    fd = descriptor_pb2.FieldDescriptorProto
    types = {"u32": fd.TYPE_UINT32, "u64": fd.TYPE_UINT64, "i32": fd.TYPE_INT32, "str": fd.TYPE_STRING,
             "bytes": fd.TYPE_BYTES, "f64": fd.TYPE_DOUBLE}

    def message(name: str, *fields: tuple[str, int, str]) -> None:
        msg = fdp.message_type.add(name=name)
        for fname, number, kind in fields:
            repeated = kind.startswith("*")
            kind = kind.lstrip("*")
            label = fd.LABEL_REPEATED if repeated else fd.LABEL_OPTIONAL
            if kind in types:
                msg.field.add(name=fname, number=number, label=label, type=types[kind])
            else:
                msg.field.add(name=fname, number=number, label=label, type=fd.TYPE_MESSAGE,
                              type_name=f".ncu_roof_ncu_rep.{kind}")

    message("FileHeader", ("Version", 1, "u32"))
    message("StringTable", ("Strings", 1, "*str"))
    message("ProcessInfo", ("ProcessID", 1, "u32"), ("Hostname", 2, "str"), ("ProcessName", 3, "str"))
    message("BlockHeader", ("NumSources", 1, "u32"), ("NumResults", 2, "u32"), ("StringTable", 4, "StringTable"),
            ("PayloadSize", 5, "u32"), ("Process", 6, "ProcessInfo"), ("NumRangeResults", 7, "u32"),
            ("NumCmdlistResults", 8, "u32"), ("NumGraphResults", 9, "u32"))
    message("ProfileResult", ("ThreadID", 1, "u32"), ("KernelMangledName", 5, "str"),
            ("KernelFunctionName", 6, "str"), ("KernelDemangledName", 7, "str"),
            ("MetricResults", 13, "*bytes"), ("RuleResults", 19, "*RuleResult"), ("Nvtx", 21, "bytes"))
    # rule results (RuleSystem): a rule, its body items, each item's message and speedup estimate
    message("RuleResultMessage", ("Message", 1, "str"), ("Type", 2, "i32"), ("Id", 3, "i32"), ("Name", 4, "str"))
    message("RuleResultSpeedup", ("SpeedupType", 1, "i32"), ("Value", 2, "f64"))
    message("RuleResultBodyItem", ("Message", 1, "RuleResultMessage"), ("Speedup", 10, "RuleResultSpeedup"))
    message("RuleResultBody", ("Items", 1, "*RuleResultBodyItem"))
    message("RuleResult", ("Identifier", 1, "str"), ("DisplayName", 2, "str"), ("Body", 3, "RuleResultBody"),
            ("SectionIdentifier", 4, "str"))
    # NVTX state at the launch: domains, each thread's push/pop stacks, start/end ranges
    message("NvtxPushPopRange", ("Name", 1, "str"))
    message("NvtxStartEndRange", ("Id", 1, "u64"), ("Name", 2, "str"))
    message("NvtxPushPopDomain", ("Id", 1, "u64"), ("Stack", 3, "*NvtxPushPopRange"))
    message("NvtxStartEndDomain", ("Id", 1, "u64"), ("Ranges", 3, "*NvtxStartEndRange"))
    message("NvtxDomainInfo", ("Id", 1, "u64"), ("Name", 2, "str"))
    message("NvtxThread", ("TID", 1, "u32"), ("PushPopDomains", 2, "*NvtxPushPopDomain"))
    message("NvtxState", ("Domains", 1, "*NvtxDomainInfo"), ("Threads", 2, "*NvtxThread"),
            ("StartEndDomains", 3, "*NvtxStartEndDomain"), ("DefaultDomain", 4, "u64"))

    pool = descriptor_pool.DescriptorPool()
    pool.Add(fdp)
    ns = SimpleNamespace()
    for msg in fdp.message_type:
        desc = pool.FindMessageTypeByName(f"ncu_roof_ncu_rep.{msg.name}")
        setattr(ns, msg.name, message_factory.GetMessageClass(desc))
    return ns


# --------------------------------------------------------------------------- the container


@dataclass
class Launch:
    """Where one ``ProfileResult`` lies in the file, and which string table names its metrics."""

    offset: int
    size: int
    table: int


@dataclass
class Index:
    """What a walk over the block headers found (no launch decoded yet)."""

    version: int
    launches: list[Launch] = field(default_factory=list)
    tables: list[list[str]] = field(default_factory=list)
    other_results: int = 0  # range, command-list and graph results (not read here)
    declared: int = 0


def _damaged(path: Path, why: str) -> ReportLoadError:
    return ReportLoadError(f"{path} is truncated or damaged ({why}): copy the complete file again or re-run ncu")


def _undecodable(path: Path, why: str) -> ReportLoadError:
    return ReportLoadError(f"{path}: ncu-roof's reader cannot decode this report ({why}); "
                           f"read it with {FALLBACK} (pip install ncu-report)")


def _message(buf: Any, pos: int, size: int, cls: Any, path: Path, what: str) -> tuple[Any, int]:
    """The length-prefixed message at ``pos``; its end."""
    if pos + 4 > size:
        raise _damaged(path, f"{what} cut short")
    (n,) = _U32.unpack_from(buf, pos)
    end = pos + 4 + n
    if end > size:
        raise _damaged(path, f"{what} cut short")
    try:
        return cls.FromString(buf[pos + 4 : end]), end
    except Exception as exc:  # noqa: BLE001 - protobuf's DecodeError and friends
        raise ReportLoadError(f"{path} is truncated or damaged ({what} at byte {pos} does not decode: {exc}): copy "
                              f"the complete file again, or if ncu opens it, read it with {FALLBACK}") from None


def _skip(buf: Any, pos: int, count: int, end: int, path: Path, what: str) -> int:
    for _ in range(count):
        if pos + 4 > end:
            raise _damaged(path, f"{what} cut short")
        (n,) = _U32.unpack_from(buf, pos)
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
    pb = _schema()
    if size == 0:
        raise ReportLoadError(f"{path} is empty: re-export the report (ncu --export {path.stem} ...)")
    if buf[:4] != MAGIC:
        raise ReportLoadError(f"{path} is not an Nsight Compute report (no NVR header): pass a .ncu-rep "
                              "written by ncu --export, or a CSV export")
    header, pos = _message(buf, 4, size, pb.FileHeader, path, "file header")
    found = Index(version=header.Version)
    tables = _Tables()
    while pos < size:
        block, start = _message(buf, pos, size, pb.BlockHeader, path, "block header")
        end = start + block.PayloadSize
        if end > size:
            raise _damaged(path, "block payload cut short")
        process = ((block.Process.ProcessID, block.Process.Hostname, block.Process.ProcessName)
                   if block.HasField("Process") else None)
        if block.HasField("StringTable") and len(block.StringTable.Strings):
            tables.update(process, list(block.StringTable.Strings))
        found.declared += block.NumResults
        p = _skip(buf, start, block.NumSources, end, path, "source data")
        if block.NumResults:
            table = tables.current(process)
            for _ in range(block.NumResults):
                if p + 4 > end:
                    raise _damaged(path, "launch cut short")
                (n,) = _U32.unpack_from(buf, p)
                found.launches.append(Launch(p + 4, n, table))
                p += 4 + n
            if p > end:
                raise _damaged(path, "launch cut short")
        found.other_results += block.NumRangeResults + block.NumCmdlistResults + block.NumGraphResults
        pos = end
    found.tables = tables.tables
    return found


# --------------------------------------------------------------------------- one launch


def _varint(buf: bytes, pos: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        b = buf[pos]
        pos += 1
        value |= (b & 0x7F) << shift
        if b < 0x80:
            return value, pos
        shift += 7


def _encode_varint(value: int) -> bytes:
    out = bytearray()
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def _skip_field(buf: bytes, pos: int, wire: int) -> int:
    if wire == 0:
        return _varint(buf, pos)[1]
    if wire == 1:
        return pos + 8
    if wire == 2:
        n, pos = _varint(buf, pos)
        return pos + n
    if wire == 5:
        return pos + 4
    raise ValueError(f"wire type {wire}")


def _scalar(buf: bytes, pos: int, end: int) -> float | str | None:
    """A ``ProfileMetricValue``: its number, its string, or None when it holds neither."""
    value: float | str | None = None
    while pos < end:
        key, pos = _varint(buf, pos)
        number, wire = key >> 3, key & 7
        if number == 3 and wire == 1:  # DoubleValue
            value = _F64.unpack_from(buf, pos)[0]
            pos += 8
        elif number == 2 and wire == 5:  # FloatValue
            value = _F32.unpack_from(buf, pos)[0]
            pos += 4
        elif number in (4, 5) and wire == 0:  # Uint32Value, Uint64Value
            raw, pos = _varint(buf, pos)
            value = float(raw)
        elif number == 1 and wire == 2:  # StringValue
            n, pos = _varint(buf, pos)
            value = buf[pos : pos + n].decode("utf-8", "replace")
            pos += n
        else:
            pos = _skip_field(buf, pos, wire)
    return value


def _metric_value(elem: bytes, start: int) -> float | str | None:
    """The value of an encoded ``ProfileMetricResult`` (fields after its ``NameId``)."""
    pos, end = start, len(elem)
    while pos < end:
        key, pos = _varint(elem, pos)
        if key == 0x12:  # MetricValue
            n, pos = _varint(elem, pos)
            return _scalar(elem, pos, pos + n)
        pos = _skip_field(elem, pos, key & 7)
    return None


@dataclass
class Wanted:
    """The catalogue's metrics in one string table, by name (``ncu_report``'s order), with the
    bytes an encoded ``ProfileMetricResult`` of each starts with (field 1, ``NameId``)."""

    names: list[str]
    prefixes: list[bytes]  # values first, then the string metrics (the device's display name)
    scales: list[float]
    strings: list[str]
    layout: tuple[list[bytes], list[int]] | None = None  # see _positions
    opcode_prefix: bytes | None = None  # the per-opcode instanced metric (metrics.OPCODE_METRIC)


def _unit(name: str) -> str | None:
    """The unit ``ncu_report`` gives a metric, where it is not a base unit: ncu stores no units,
    ``ncu_report`` infers them from the metric's name (durations, ``*__time_*``, in ns)."""
    unit = metrics.ncu_base_unit(name)
    if unit is None and "__time_" in name.split(".", 1)[0]:
        unit = "nsecond"
    return unit


def wanted(table: list[str]) -> Wanted:
    """The metrics of ``table`` the catalogue needs (``metrics.is_needed``)."""
    want = Wanted([], [], [], [])
    string_prefixes = []
    for i, name in sorted(enumerate(table), key=itemgetter(1)):  # ncu_report's order: by name
        prefix = b"\x08" + _encode_varint(i)
        if name == metrics.OPCODE_METRIC:
            want.opcode_prefix = prefix
        elif name in metrics.STRING_METRICS:
            want.strings.append(name)
            string_prefixes.append(prefix)
        elif metrics.is_needed(name):
            want.names.append(name)
            want.prefixes.append(prefix)
            want.scales.append(factor(_unit(name)))
    want.prefixes += string_prefixes
    return want


def _positions(keys: list[bytes], elems: list[bytes], prefixes: list[bytes]) -> list[int]:
    """Where each prefix's metric is among ``elems`` (-1: absent). Varints are prefix-free, so
    ``08 id`` starts exactly one metric's encoding; the first three bytes of each encoding (an
    ID below 128 plus the tag that follows it, or an ID below 16384) find it by dict lookup."""
    by_key = dict(zip(keys, range(len(keys)), strict=True))
    by_prefix: dict[bytes, int] | None = None
    out = []
    for prefix in prefixes:
        if len(prefix) == 2:  # followed by MetricValue (12), a list (1a), a category (20) or nothing
            hit = next((by_key[k] for k in (prefix + b"\x12", prefix + b"\x1a", prefix + b"\x20", prefix)
                        if k in by_key), -1)
        elif len(prefix) == 3:
            hit = by_key.get(prefix, -1)
        else:
            if by_prefix is None:
                by_prefix = {e[: _varint(e, 1)[1]]: n for n, e in enumerate(elems) if e[:1] == b"\x08"}
            hit = by_prefix.get(prefix, -1)
        out.append(hit)
    return out


def _read_values(elems: list[bytes], want: Wanted, row: dict[str, Any]) -> str | None:
    """Put ``as_double()`` x scale of each wanted metric the launch has into ``row``; return the
    device's display name (``as_string()``). Launches of one kernel share a layout (the same
    metrics in the same order), so positions are computed once per layout."""
    keys = list(map(_KEY3, elems))
    layout = want.layout
    if layout is None or layout[0] != keys or len(keys[0] if keys else b"") > 3:
        layout = want.layout = (keys, _positions(keys, elems, want.prefixes))
    f64 = _F64.unpack_from
    positions = layout[1]
    for name, prefix, scale, pos in zip(want.names, want.prefixes, want.scales, positions, strict=False):
        if pos < 0:
            continue
        elem = elems[pos]
        k = len(prefix)
        # the usual encodings: 12 09 19 <double> and 12 02 28 <1-byte uint64>
        if elem.startswith(b"\x12\x09\x19", k):
            row[name] = f64(elem, k + 3)[0] * scale
        elif elem.startswith(b"\x12\x02\x28", k) and elem[k + 3] < 0x80:
            row[name] = float(elem[k + 3]) * scale
        else:
            value = _metric_value(elem, k)
            row[name] = (value if isinstance(value, float) else 0.0) * scale
    device = None
    for prefix, pos in zip(want.prefixes[len(want.names) :], positions[len(want.names) :], strict=True):
        if pos >= 0:
            value = _metric_value(elems[pos], len(prefix))
            device = value if isinstance(value, str) else None
    return device


def _instances(elem: bytes, start: int) -> dict[str, float] | None:
    """An instanced ``ProfileMetricResult``'s ``MetricValueList`` as {correlation ID: value};
    None when its instances carry no string correlation IDs."""
    out: dict[str, float] = {}
    pos, end = start, len(elem)
    while pos < end:
        key, pos = _varint(elem, pos)
        if key != 0x1A:  # MetricValueList element
            pos = _skip_field(elem, pos, key & 7)
            continue
        n, pos = _varint(elem, pos)
        item_end, ident, value = pos + n, None, None
        while pos < item_end:
            sub, pos = _varint(elem, pos)
            length, pos = _varint(elem, pos) if sub & 7 == 2 else (0, pos)
            if sub == 0x0A:  # CorrelationId
                ident = _scalar(elem, pos, pos + length)
            elif sub == 0x12:  # ElementValue
                value = _scalar(elem, pos, pos + length)
            pos = pos + length if sub & 7 == 2 else _skip_field(elem, pos, sub & 7)
        if isinstance(ident, str):
            out[ident] = value if isinstance(value, float) else 0.0
    return out or None


def _opcode_counts(elems: list[bytes], prefix: bytes) -> dict[str, float]:
    """The per-opcode counts the catalogue names, as :func:`ncu_rep._opcode_counts` reads them:
    0 for an opcode the kernel never ran, nothing when the launch has no per-opcode metric."""
    elem = next((e for e in elems if e.startswith(prefix)), None)  # varints are prefix-free
    counts = _instances(elem, len(prefix)) if elem is not None else None
    if counts is None:
        return {}
    return {f"{metrics.OPCODE_METRIC}[{op}]": float(counts.get(op, 0.0)) for op in metrics.OPCODES.values()}


def _nvtx_path(data: bytes, thread_id: int) -> str | None:
    """NVTX state as the ``nvtx`` column spells it (see :func:`ncu_rep._nvtx_path`)."""
    state = _schema().NvtxState.FromString(data)
    stacks: dict[int, list[str]] = {}
    for thread in state.Threads:
        if thread.TID == thread_id:
            for dom in thread.PushPopDomains:
                stacks.setdefault(dom.Id, []).extend(r.Name for r in dom.Stack)
    start_end: dict[int, list[str]] = {}
    for sed in state.StartEndDomains:
        start_end.setdefault(sed.Id, []).extend(r.Name for r in sed.Ranges)
    parts = []
    for dom in state.Domains:
        name = dom.Name
        prefix = "" if not name or name == "<default domain>" else f"{name}@"
        stack = stacks.get(dom.Id)
        if stack:
            parts.append(prefix + "/".join(stack))
        parts.extend(prefix + r for r in start_end.get(dom.Id, ()))
    return " | ".join(parts) if parts else None


# ncu's message types as the file stores them (RuleSystem's enum, not ncu_report's MsgType)
_RULE_TYPES = {0: "0", 1: "INF", 2: "WRN", 3: "ERR", 4: "OPT"}


def _rule_results(encoded: Any, launch_id: int) -> list[dict[str, Any]]:
    """One record per rule-result body item, in the shared shape (:func:`ncu_rules.rule_record`)."""
    out = []
    for rule in encoded:
        section = rule.SectionIdentifier or None
        for item in rule.Body.Items:
            msg = item.Message
            speedup = item.Speedup if item.HasField("Speedup") else None
            pct = speedup.Value if speedup is not None and speedup.HasField("Value") else None
            record = rule_record(launch_id, rule.Identifier, section, _RULE_TYPES.get(msg.Type, str(msg.Type)),
                                 msg.Name or None, msg.Message, pct,
                                 speedup.SpeedupType if speedup is not None else None)
            if record is not None:
                out.append(record)
    return out


def _dims(row: dict[str, Any], names: tuple[str, ...]) -> str | None:
    dims: list[float] = [row[m] for m in names if m in row]
    return "(" + ", ".join(str(int(x)) for x in dims) + ")" if len(dims) == len(names) else None


def decode_launch(data: bytes, want: Wanted, launch_id: int, report: str,
                  rules: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """One launch's row of the raw launch frame (identity + catalogue metrics in base units)."""
    result = _schema().ProfileResult.FromString(data)
    row: dict[str, Any] = {}
    elems = list(result.MetricResults)
    device = _read_values(elems, want, row)
    if want.opcode_prefix is not None:
        row.update(_opcode_counts(elems, want.opcode_prefix))
    kernel = result.KernelFunctionName or result.KernelMangledName
    major: float | None = row.get(metrics.CC_MAJOR)
    minor: float | None = row.get(metrics.CC_MINOR)
    row.update(
        kernel=kernel,
        kernel_demangled=result.KernelDemangledName or result.KernelMangledName or kernel,
        device=device,
        cc=f"{int(major)}.{int(minor)}" if major is not None and minor is not None else None,
        stream=row.get("launch__stream_id"),
        grid_dim=_dims(row, metrics.GRID_DIMS),
        block_dim=_dims(row, metrics.BLOCK_DIMS),
        nvtx=_nvtx_path(result.Nvtx, result.ThreadID) if result.HasField("Nvtx") else None,
        report=report,
        id=launch_id,
    )
    if rules is not None and len(result.RuleResults):
        rules.extend(_rule_results(result.RuleResults, launch_id))
    return row


# --------------------------------------------------------------------------- reading


@dataclass
class Chunk:
    """Consecutive launches of one report, for one worker: where to read, how to name things."""

    plain: str  # the uncompressed file to map
    report: str  # the ``report`` column: the path as given
    first_id: int
    launches: list[Launch]
    wants: dict[int, Wanted]

    @property
    def nbytes(self) -> int:
        return sum(launch.size + 4 for launch in self.launches)


RELEASE_BYTES = 64 << 20  # mapped pages handed back to the OS after this many bytes read
_UNDECODABLE = (ValueError, IndexError, struct.error, UnicodeDecodeError)


def read_chunk(chunk: Chunk, progress: Callable[[int], None] | None = None
               ) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Rows and rule results of a chunk's launches, read through ``mmap`` in file order.

    Pages already decoded are released (``MADV_DONTNEED``) as the walk goes, so the process's
    resident memory stays at about one window of the file plus the rows.
    """
    from google.protobuf.message import DecodeError

    rows: list[dict[str, Any]] = []
    rules: list[dict[str, Any]] = []
    path = Path(chunk.plain)
    page = mmap.PAGESIZE
    with path.open("rb") as fh, mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as mm:
        released = chunk.launches[0].offset // page * page if chunk.launches else 0
        done = 0
        for i, launch in enumerate(chunk.launches):
            data = mm[launch.offset : launch.offset + launch.size]
            try:
                rows.append(decode_launch(data, chunk.wants[launch.table], chunk.first_id + i, chunk.report, rules))
            except (DecodeError, *_UNDECODABLE) as exc:
                raise _undecodable(Path(chunk.report), f"launch {chunk.first_id + i}: {exc}") from None
            done += launch.size + 4
            if launch.offset - released >= RELEASE_BYTES:
                upto = launch.offset // page * page
                if hasattr(mm, "madvise"):
                    mm.madvise(mmap.MADV_DONTNEED, released, upto - released)
                released = upto
            if progress is not None and (i & 15 == 15 or i == len(chunk.launches) - 1):
                progress(done)
                done = 0
    return rows, rules


def plan(plain: Path, report: Path, chunk_bytes: int) -> tuple[list[Chunk], list[str]]:
    """The chunks (at least ``chunk_bytes`` of launches each, in file order) a report is read in,
    and the notes about it (a format version newer than those tested)."""
    size = plain.stat().st_size
    if size == 0:
        raise ReportLoadError(f"{report} is empty: re-export the report (ncu --export {report.stem} ...)")
    with plain.open("rb") as fh, mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as mm:
        found = index(mm, size, report)
    notes = []
    if found.version not in TESTED_VERSIONS:
        if found.version > max(TESTED_VERSIONS):
            notes.append(f"report format version {found.version} is newer than the versions ncu-roof's reader "
                         f"was tested with ({', '.join(map(str, TESTED_VERSIONS))}); if numbers look wrong, "
                         f"read it with {FALLBACK}")
    if found.other_results:
        raise _undecodable(report, f"it holds {found.other_results} range, command-list or graph results "
                                   "(range or graph replay), which this reader does not read")
    if not found.launches:
        raise ReportLoadError(f"{report} holds no kernel launches: check the ncu filters used for the capture")
    wants = {t: wanted(found.tables[t]) for t in {launch.table for launch in found.launches}}
    chunks: list[Chunk] = []
    start = nbytes = 0
    for i, launch in enumerate(found.launches):
        nbytes += launch.size + 4
        if nbytes >= chunk_bytes or i == len(found.launches) - 1:
            part = found.launches[start : i + 1]
            used = {launch.table for launch in part}
            chunks.append(Chunk(str(plain), str(report), start, part, {t: wants[t] for t in used}))
            start, nbytes = i + 1, 0
    return chunks, notes


def frame(rows: list[dict[str, Any]], notes: list[str], rules: list[dict[str, Any]]) -> Any:
    """The raw launch frame (see :mod:`ncu_roof.read.frame`) of a report's rows: identity columns,
    then the metrics in the order rows first name them, as float64 (NaN where a launch lacks one)."""
    import numpy as np
    import pandas as pd

    from ncu_roof.read.frame import IDENTITY_COLUMNS

    identity = set(IDENTITY_COLUMNS)
    metric_cols = [c for c in dict.fromkeys(k for row in rows for k in row) if c not in identity]
    data: dict[str, Any] = {c: [row.get(c) for row in rows] for c in IDENTITY_COLUMNS}
    nan = math.nan
    for c in metric_cols:
        data[c] = np.array([row.get(c, nan) for row in rows], dtype="float64")
    out = pd.DataFrame(data)
    out.attrs["notes"] = list(notes)
    out.attrs["kind"] = "ncu-rep"
    out.attrs["ncu_rule_results"] = RuleResults(rules)
    return out


def load_native(path: str | Path, chunk_bytes: int = 1 << 62) -> Any:
    """The raw launch frame of one report, read in this process (``.ncu-repz``: through a
    temporary uncompressed copy)."""
    from ncu_roof.read.ncu_rep import _uncompressed

    path = Path(path)
    with _uncompressed(path) as plain:
        chunks, notes = plan(plain, path, chunk_bytes)
        rows: list[dict[str, Any]] = []
        rules: list[dict[str, Any]] = []
        for chunk in chunks:
            r, q = read_chunk(chunk)
            rows += r
            rules += q
    return frame(rows, notes, rules)


def iter_launches(path: Path) -> Iterator[bytes]:
    """Every ``ProfileResult`` of an uncompressed report, encoded (for tools and tests)."""
    size = path.stat().st_size
    with path.open("rb") as fh, mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as mm:
        for launch in index(mm, size, path).launches:
            yield mm[launch.offset : launch.offset + launch.size]
