"""The protobuf side of a ``.ncu-rep``: the message classes this reader decodes with the
``protobuf`` package (its C ``upb`` backend), and hand-written decoding of the wire format where
that is faster than building messages.

Enters: encoded bytes (a message, a metric's encoding, a varint). Leaves: message classes
(:func:`schema`: only the messages and fields the reader uses, field numbers as the format has
them), integers, and a metric's value as a float, a string or None.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from functools import lru_cache
from types import SimpleNamespace

_F32 = struct.Struct("<f")
F64 = struct.Struct("<d")  # a DoubleValue's 8 bytes


# The messages this reader decodes, with only the fields it uses: (field, number, kind), numbered as
# the format numbers them (everything else in a message is skipped by the parser). A kind is a
# scalar (u32, u64, i32, str, bytes, f64, bool) or a message named here; "*": repeated.
MESSAGES: dict[str, list[tuple[str, int, str]]] = {
    "FileHeader": [("Version", 1, "u32")],
    "StringTable": [("Strings", 1, "*str")],
    "ProcessInfo": [("ProcessID", 1, "u32"), ("Hostname", 2, "str"), ("ProcessName", 3, "str")],
    # the session: who profiled, how (ReportSessionDetails: versions, settings, the command line)
    "VersionInfo": [("Provider", 1, "str"), ("Version", 2, "str")],
    "ProfilerSettings": [("EnableProfilingFromStart", 3, "bool"), ("ClockControlMode", 8, "str"),
        ("ReplayMode", 11, "str")],
    "SessionDetails": [("VersionInfo", 8, "*VersionInfo"), ("ProfilerSettings", 10, "ProfilerSettings"),
        ("ProfilerCmdline", 11, "str")],
    "BlockHeader": [("NumSources", 1, "u32"), ("NumResults", 2, "u32"), ("SessionDetails", 3, "SessionDetails"),
        ("StringTable", 4, "StringTable"), ("PayloadSize", 5, "u32"), ("Process", 6, "ProcessInfo"),
        ("NumRangeResults", 7, "u32"), ("NumCmdlistResults", 8, "u32"), ("NumGraphResults", 9, "u32")],
    "ProfileResult": [("ThreadID", 1, "u32"), ("KernelMangledName", 5, "str"),
        ("KernelFunctionName", 6, "str"), ("KernelDemangledName", 7, "str"),
        ("MetricResults", 13, "*bytes"), ("RuleResults", 19, "*bytes"), ("Nvtx", 21, "bytes")],
    # results of range replay, application-range replay, command lists and CUDA graphs: no kernel
    # name or launch shape; References name the SourceData (modules) the work ran
    "RangeResult": [("ThreadID", 1, "u32"), ("MetricResults", 4, "*bytes"), ("Nvtx", 10, "bytes"),
        ("References", 15, "*u64")],
    "CmdlistResult": [("ThreadID", 1, "u32"), ("MetricResults", 4, "*bytes"), ("Nvtx", 10, "bytes"),
        ("References", 17, "*u64"), ("DisplayName", 18, "str"), ("RuleResults", 21, "*bytes")],
    "GraphResult": [("ThreadID", 1, "u32"), ("MetricResults", 4, "*bytes"), ("Nvtx", 10, "bytes"),
        ("References", 17, "*u64")],
    # a module: its cubin, the source files imported with it, where its functions were loaded
    "SourceFile": [("FileName", 1, "str"), ("Content", 2, "str")],
    "SourceFiles": [("Files", 1, "*SourceFile")],
    "RelocationSymbolEntry": [("SymbolName", 1, "str"), ("Address", 2, "u64")],
    "RelocationData": [("Functions", 1, "*RelocationSymbolEntry")],
    "SourceData": [("Reference", 1, "u64"), ("Binary", 4, "bytes"), ("SourceFiles", 8, "SourceFiles"),
        ("RelocationData", 9, "RelocationData")],
    # a launch as the per-instruction reader needs it: its name, metrics and module
    "SourceResult": [("KernelMangledName", 5, "str"), ("KernelFunctionName", 6, "str"),
        ("MetricResults", 13, "*bytes"), ("Source", 15, "SourceData")],
    # rule results (RuleSystem): a rule, its body items, each item's message and speedup estimate;
    # a result's RuleResults are kept encoded (bytes), decoded once per distinct encoding
    "RuleResultMessage": [("Message", 1, "str"), ("Type", 2, "i32"), ("Id", 3, "i32"), ("Name", 4, "str")],
    "RuleResultSpeedup": [("SpeedupType", 1, "i32"), ("Value", 2, "f64")],
    "RuleResultBodyItem": [("Message", 1, "RuleResultMessage"), ("Speedup", 10, "RuleResultSpeedup")],
    "RuleResultBody": [("Items", 1, "*RuleResultBodyItem")],
    "RuleResult": [("Identifier", 1, "str"), ("DisplayName", 2, "str"), ("Body", 3, "RuleResultBody"),
        ("SectionIdentifier", 4, "str")],
    # NVTX state at the launch: domains, each thread's push/pop stacks, start/end ranges
    "NvtxPushPopRange": [("Name", 1, "str")],
    "NvtxStartEndRange": [("Id", 1, "u64"), ("Name", 2, "str")],
    "NvtxPushPopDomain": [("Id", 1, "u64"), ("Stack", 3, "*NvtxPushPopRange")],
    "NvtxStartEndDomain": [("Id", 1, "u64"), ("Ranges", 3, "*NvtxStartEndRange")],
    "NvtxDomainInfo": [("Id", 1, "u64"), ("Name", 2, "str")],
    "NvtxThread": [("TID", 1, "u32"), ("PushPopDomains", 2, "*NvtxPushPopDomain")],
    "NvtxState": [("Domains", 1, "*NvtxDomainInfo"), ("Threads", 2, "*NvtxThread"),
        ("StartEndDomains", 3, "*NvtxStartEndDomain"), ("DefaultDomain", 4, "u64")],
}


@lru_cache(maxsize=1)
def schema() -> SimpleNamespace:
    """The message classes of :data:`MESSAGES` (one attribute each, by its name)."""
    from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

    fdp = descriptor_pb2.FileDescriptorProto(name="ncu_roof_ncu_rep.proto", package="ncu_roof_ncu_rep",
                                             syntax="proto2")
    fd = descriptor_pb2.FieldDescriptorProto
    types = {"u32": fd.TYPE_UINT32, "u64": fd.TYPE_UINT64, "i32": fd.TYPE_INT32, "str": fd.TYPE_STRING,
             "bytes": fd.TYPE_BYTES, "f64": fd.TYPE_DOUBLE, "bool": fd.TYPE_BOOL}
    for name, fields in MESSAGES.items():
        msg = fdp.message_type.add(name=name)
        for fname, number, kind in fields:
            label = fd.LABEL_REPEATED if kind.startswith("*") else fd.LABEL_OPTIONAL
            kind = kind.lstrip("*")
            if kind in types:
                msg.field.add(name=fname, number=number, label=label, type=types[kind])
            else:
                msg.field.add(name=fname, number=number, label=label, type=fd.TYPE_MESSAGE,
                              type_name=f".ncu_roof_ncu_rep.{kind}")

    pool = descriptor_pool.DescriptorPool()
    pool.Add(fdp)
    ns = SimpleNamespace()
    for msg in fdp.message_type:
        desc = pool.FindMessageTypeByName(f"ncu_roof_ncu_rep.{msg.name}")
        setattr(ns, msg.name, message_factory.GetMessageClass(desc))
    return ns



def text(value: str | bytes) -> str:
    """A string field as text: protobuf gives a damaged one (not UTF-8) as bytes, decoded here with
    U+FFFD where it is damaged, so that names stay text and the damage shows in them."""
    return value if isinstance(value, str) else value.decode("utf-8", "replace")


def varint(buf: bytes, pos: int) -> tuple[int, int]:
    """The varint at ``pos``; where it ends."""
    value = shift = 0
    while True:
        b = buf[pos]
        pos += 1
        value |= (b & 0x7F) << shift
        if b < 0x80:
            return value, pos
        shift += 7


def encode_varint(value: int) -> bytes:
    """``value`` as a protobuf varint."""
    out = bytearray()
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def skip_field(buf: bytes, pos: int, wire: int) -> int:
    """Where the field of wire type ``wire`` whose value starts at ``pos`` ends."""
    if wire == 0:
        return varint(buf, pos)[1]
    if wire == 1:
        return pos + 8
    if wire == 2:
        n, pos = varint(buf, pos)
        return pos + n
    if wire == 5:
        return pos + 4
    raise ValueError(f"unexpected wire type {wire}")


def _scalar(buf: bytes, pos: int, end: int) -> float | str | None:
    """A ``ProfileMetricValue``: its number, its string, or None when it holds neither."""
    value: float | str | None = None
    while pos < end:
        key, pos = varint(buf, pos)
        number, wire = key >> 3, key & 7
        if number == 3 and wire == 1:  # DoubleValue
            value = F64.unpack_from(buf, pos)[0]
            pos += 8
        elif number == 2 and wire == 5:  # FloatValue
            value = _F32.unpack_from(buf, pos)[0]
            pos += 4
        elif number in (4, 5) and wire == 0:  # Uint32Value, Uint64Value
            raw, pos = varint(buf, pos)
            value = float(raw)
        elif number == 1 and wire == 2:  # StringValue
            n, pos = varint(buf, pos)
            value = buf[pos : pos + n].decode("utf-8", "replace")
            pos += n
        else:
            pos = skip_field(buf, pos, wire)
    return value


def metric_value(elem: bytes, start: int) -> float | str | None:
    """The value of an encoded ``ProfileMetricResult`` (fields after its ``NameId``)."""
    pos, end = start, len(elem)
    while pos < end:
        key, pos = varint(elem, pos)
        if key == 0x12:  # MetricValue
            n, pos = varint(elem, pos)
            return _scalar(elem, pos, pos + n)
        pos = skip_field(elem, pos, key & 7)
    return None



def named_instances(elem: bytes, start: int, names: tuple[str, ...]) -> dict[str, float] | None:
    """:func:`instances` for a few correlation IDs only: ``{name: value}`` for each of ``names``
    (0.0 where the list lacks it), None where :func:`instances` is None. Each name is found by
    searching for its encoded item head (``1a L 0a L+2 0a L name 12``), so a list of many
    instances costs one search per name, not one decode per instance (0.09 ms -> 5 us on a
    full-set launch's 45 opcodes)."""
    first = _first_instance_id(elem, start)
    if first is None or not isinstance(first, str):
        out = instances(elem, start)
        return None if out is None else {name: out.get(name, 0.0) for name in names}
    found: dict[str, float] = {}
    for name in names:
        encoded = name.encode()
        n = len(encoded)
        hit = -1
        if n + 2 < 0x80:
            head = bytes((0x0A, n + 2, 0x0A, n)) + encoded + b"\x12"
            hit = elem.rfind(head, start)  # the last wins, as in instances()
            while hit >= 0 and not _is_item_start(elem, hit):
                hit = elem.rfind(head, start, hit + len(head) - 1)
        if hit < 0:
            if n + 2 >= 0x80:  # a name this long is not searched for: decode the whole list
                out = instances(elem, start) or {}
                return {name: out.get(name, 0.0) for name in names}
            found[name] = 0.0
            continue
        length, pos = varint(elem, hit + len(head))
        value = _scalar(elem, pos, pos + length)
        found[name] = value if isinstance(value, float) else 0.0
    return found


def _is_item_start(elem: bytes, at: int) -> bool:
    """Whether a ``MetricValueList`` item (``1a`` and a one- or two-byte length) ends just before ``at``."""
    return (at >= 2 and elem[at - 2] == 0x1A and elem[at - 1] < 0x80) or (
        at >= 3 and elem[at - 3] == 0x1A and elem[at - 2] >= 0x80 and elem[at - 1] < 0x80)


def list_items(elem: bytes, start: int) -> Iterator[tuple[int, int, int, int]]:
    """Each item of an instanced ``ProfileMetricResult``'s ``MetricValueList`` (from ``start``, past
    its ``NameId``): where its ``CorrelationId`` and its ``ElementValue`` lie, as (start, end) twice
    (-1, -1 for a field the item lacks; the last of a repeated one)."""
    pos, end = start, len(elem)
    while pos < end:
        key, pos = varint(elem, pos)
        if key != 0x1A:  # MetricValueList element
            pos = skip_field(elem, pos, key & 7)
            continue
        n, pos = varint(elem, pos)
        item_end, ident, value = pos + n, (-1, -1), (-1, -1)
        while pos < item_end:
            sub, pos = varint(elem, pos)
            if sub & 7 != 2:
                pos = skip_field(elem, pos, sub & 7)
                continue
            length, pos = varint(elem, pos)
            if sub == 0x0A:  # CorrelationId
                ident = (pos, pos + length)
            elif sub == 0x12:  # ElementValue
                value = (pos, pos + length)
            pos += length
        yield (*ident, *value)


def _scalar_at(elem: bytes, start: int, end: int) -> float | str | None:
    return None if start < 0 else _scalar(elem, start, end)


def _first_instance_id(elem: bytes, start: int) -> float | str | None:
    """The correlation ID of the first item of an instanced metric's list (None: no list)."""
    for id_start, id_end, _, _ in list_items(elem, start):
        return _scalar_at(elem, id_start, id_end)
    return None


def instances(elem: bytes, start: int) -> dict[str, float] | None:
    """An instanced ``ProfileMetricResult``'s ``MetricValueList`` as {correlation ID: value};
    None when its instances carry no string correlation IDs."""
    out: dict[str, float] = {}
    for id_start, id_end, value_start, value_end in list_items(elem, start):
        ident = _scalar_at(elem, id_start, id_end)
        if isinstance(ident, str):
            value = _scalar_at(elem, value_start, value_end)
            out[ident] = value if isinstance(value, float) else 0.0
    return out or None
