"""One launch of a ``.ncu-rep``: its encoded ``ProfileResult`` and the metrics wanted from its string
table in; out, its row of the raw launch frame (identity columns and the catalogue's metrics in
base units) and its rule results.

A launch's metrics are taken as undecoded byte strings and only those the catalogue wants
(``metrics.is_needed``) are looked at, by the encoded ``NameId`` that starts each of them; where
they lie and how they are encoded is learnt once per layout, and the doubles and small integers
of a launch in that layout are then read by a few C-level maps. Where the layout holds every
wanted metric, a launch is checked only at those positions, so the other metrics are never
copied out of the message. Rule results are decoded once per distinct encoding. On a 210 KB
full-set launch (676 metrics) that takes 0.08 ms, against 0.12 ms copying out every metric to
check the layout, 0.8 ms looping over decoded metric messages and 2-3 ms decoding the launch
with NVIDIA's full schema (upb in all; a pure-Python walk of the launch is slower still).

Values are what NVIDIA's ``ncu_report`` gives: ``as_double()`` of the stored value (double,
float, uint32 or uint64; a string or an absent value reads 0.0, an instanced metric its
aggregate value), scaled to base units; the display name of the device with ``as_string()``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from operator import itemgetter
from typing import Any

from ncu_roof.read import metrics
from ncu_roof.read.frame import as_workload_row
from ncu_roof.read.native.wire import F64, encode_varint, metric_value, named_instances, schema, text, varint
from ncu_roof.read.ncu_rules import RuleResults, rule_record
from ncu_roof.read.units import factor

_KEY3 = itemgetter(slice(0, 3))


@dataclass
class Wanted:
    """The catalogue's metrics in one string table, by name (``ncu_report``'s order), with the
    bytes an encoded ``ProfileMetricResult`` of each starts with (field 1, ``NameId``)."""

    names: list[str]
    prefixes: list[bytes]  # values first, then the string metrics (the device's display name)
    scales: list[float]
    strings: list[str]
    layout: _Layout | None = None  # where the last launch's metrics lay (see _read_values)
    opcode_prefix: bytes | None = None  # the per-opcode instanced metric (metrics.OPCODE_METRIC)
    plans: dict[int, Any] = field(default_factory=dict)  # launch size -> how launches of it are read many at
    # a time (ncu_roof.read.native.values), None where one launch of that size was decoded alone


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
        prefix = b"\x08" + encode_varint(i)
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
                by_prefix = {e[: varint(e, 1)[1]]: n for n, e in enumerate(elems) if e[:1] == b"\x08"}
            hit = by_prefix.get(prefix, -1)
        out.append(hit)
    return out


_DOUBLE = b"\x12\x09\x19"  # MetricValue { DoubleValue }: the usual encoding
_BYTE_UINT = b"\x12\x02\x28"  # MetricValue { Uint64Value } of one byte (below 128)
_UINT_TAGS = (0x28, 0x20)  # Uint64Value, Uint32Value: the first field of a MetricValue holding an integer


@dataclass
class _Layout:
    """Where a layout's wanted metrics lie and how they were encoded when it was first seen: the
    doubles and one-byte integers are then read for a whole launch by a few C-level maps, the
    rest one by one (:func:`_value`). Each group's ``heads`` are what its elements start with
    (``NameId``, and for doubles and small integers the encoding)."""

    keys: list[bytes]
    count: int  # metrics in the launch
    positions: list[int]  # per prefix of Wanted (values, strings, then the opcode metric); -1 absent
    present: list[str]  # the names found, in Wanted's order
    doubles: tuple[Callable[[Sequence[Any]], tuple[Any, ...]], tuple[bytes, ...], tuple[int, ...]]
    bytes1: tuple[Callable[[Sequence[Any]], tuple[Any, ...]], tuple[bytes, ...], tuple[int, ...]]
    rest: list[tuple[int, int, float]]  # (position, prefix length, scale)
    order: Callable[[Sequence[Any]], tuple[Any, ...]]  # doubles + bytes1 + rest -> the names' order
    scaled: list[tuple[str, float]]  # names whose doubles/bytes1 value is scaled
    others: tuple[Callable[[Sequence[Any]], tuple[Any, ...]], tuple[bytes, ...]] | None  # rest, strings,
    # opcodes by their heads; None when a wanted metric is absent (a launch must then match ``keys``)


def _getter(positions: list[int]) -> Callable[[Sequence[Any]], tuple[Any, ...]]:
    """``elems`` -> the elements at ``positions``, as a tuple (of one, or none, too)."""
    if not positions:
        return lambda elems: ()
    if len(positions) == 1:
        one = positions[0]
        return lambda elems: (elems[one],)
    return itemgetter(*positions)


def _layout(keys: list[bytes], elems: list[bytes], want: Wanted) -> _Layout:
    opcodes = [want.opcode_prefix] if want.opcode_prefix is not None else []
    prefixes = want.prefixes + opcodes
    positions = _positions(keys, elems, prefixes)
    groups: dict[str, list[tuple[int, str, int, float]]] = {"d": [], "b": [], "r": []}
    for i, (name, prefix, scale, pos) in enumerate(zip(want.names, want.prefixes, want.scales, positions,
                                                       strict=False)):
        if pos < 0:
            continue
        elem, k = elems[pos], len(prefix)
        kind = "d" if elem.startswith(_DOUBLE, k) else "b" if elem.startswith(_BYTE_UINT, k) else "r"
        groups[kind].append((i, name, pos, scale))
    in_order = sorted((i, n) for kind in "dbr" for n, (i, *_) in enumerate(groups[kind]))
    offset = {"d": 0, "b": len(groups["d"]), "r": len(groups["d"]) + len(groups["b"])}
    where = {i: offset[kind] + n for kind in "dbr" for n, (i, *_) in enumerate(groups[kind])}
    lengths = [len(want.prefixes[i]) for i in range(len(want.names))]

    def fast(kind: str, encoding: bytes) -> Any:
        items = groups[kind]
        return (_getter([pos for _, _, pos, _ in items]), tuple(want.prefixes[i] + encoding for i, *_ in items),
                tuple(lengths[i] + len(encoding) for i, *_ in items))

    other = [n for n in range(len(prefixes)) if n >= len(want.names) or n in {i for i, *_ in groups["r"]}]
    others = None if min(positions, default=0) < 0 else (
        _getter([positions[n] for n in other]), tuple(prefixes[n] for n in other))
    return _Layout(
        keys, len(elems), positions, [want.names[i] for i, _ in in_order], fast("d", _DOUBLE), fast("b", _BYTE_UINT),
        [(pos, lengths[i], scale) for i, _, pos, scale in groups["r"]],
        _getter([where[i] for i, _ in in_order]),
        [(name, scale) for kind in "db" for _, name, _, scale in groups[kind] if scale != 1.0], others)


def _value(elem: bytes, k: int) -> float:
    """``as_double()`` of one encoded metric whose ``NameId`` takes ``k`` bytes."""
    if elem.startswith(_DOUBLE, k):
        return float(F64.unpack_from(elem, k + 3)[0])
    if len(elem) > k + 3 and elem[k] == 0x12 and elem[k + 2] in _UINT_TAGS:  # MetricValue { a uint } alone
        number, end = varint(elem, k + 3)
        if end == k + 2 + elem[k + 1]:
            return float(number)
    value = metric_value(elem, k)
    return value if isinstance(value, float) else 0.0


def _read_values(results: Sequence[bytes], want: Wanted, row: dict[str, Any]) -> str | None:
    """Put ``as_double()`` x scale of each wanted metric the launch has (``results``: its encoded
    metrics) into ``row``; return the device's display name (``as_string()``). Launches of one
    kernel share a layout (the same metrics in the same order), so positions and encodings are
    found once per layout. A launch is taken to share the last one's when every wanted metric
    starts where it lay with its ``NameId`` and encoding (when the layout holds every wanted
    metric), else when all its metrics' ``NameId`` match; one whose doubles or small integers are
    encoded otherwise is read one metric at a time."""
    layout = want.layout
    if layout is not None and layout.others is not None and len(results) == layout.count:
        get_other, heads = layout.others
        if all(map(bytes.startswith, get_other(results), heads)) and _read_fast(results, layout, row):
            return _device(results, want, layout)
    elems = list(results)
    keys = list(map(_KEY3, elems))
    if layout is None or layout.keys != keys:
        layout = want.layout = _layout(keys, elems, want)
    if _read_fast(elems, layout, row):
        return _device(elems, want, layout)
    for name, prefix, scale, pos in zip(want.names, want.prefixes, want.scales, layout.positions, strict=False):
        if pos >= 0:
            row[name] = _value(elems[pos], len(prefix)) * scale
    return _device(elems, want, layout)


def _read_fast(elems: Sequence[bytes], layout: _Layout, row: dict[str, Any]) -> bool:
    """Read the launch by the layout's C-level maps into ``row``, if its doubles and small integers
    start with the layout's heads (each metric's ``NameId`` and encoding); whether it did."""
    get_d, heads_d, at_d = layout.doubles
    get_b, heads_b, at_b = layout.bytes1
    doubles, bytes1 = get_d(elems), get_b(elems)
    if not (all(map(bytes.startswith, doubles, heads_d)) and all(map(bytes.startswith, bytes1, heads_b))):
        return False
    small = list(map(bytes.__getitem__, bytes1, at_b))
    if small and max(small) >= 0x80:
        return False
    values = [t[0] for t in map(F64.unpack_from, doubles, at_d)]
    values += map(float, small)
    values += [_value(elems[pos], k) * scale for pos, k, scale in layout.rest]
    row.update(zip(layout.present, layout.order(values), strict=True))
    for name, scale in layout.scaled:
        row[name] *= scale
    return True


def _device(elems: Sequence[bytes], want: Wanted, layout: _Layout) -> str | None:
    """The device's display name: the last string metric the launch has (None if not a string)."""
    device = None
    n = len(want.names)
    for prefix, pos in zip(want.prefixes[n:], layout.positions[n : len(want.prefixes)], strict=True):
        if pos >= 0:
            value = metric_value(elems[pos], len(prefix))
            device = value if isinstance(value, str) else None
    return device


_OPCODE_NAMES = tuple(metrics.OPCODES.values())
_OPCODE_COLUMNS = tuple(f"{metrics.OPCODE_METRIC}[{op}]" for op in _OPCODE_NAMES)


def _opcode_counts(elems: Sequence[bytes], want: Wanted) -> dict[str, float]:
    """The per-opcode counts the catalogue names, as :func:`ncu_rep._opcode_counts` reads them:
    0 for an opcode the kernel never ran, nothing when the launch has no per-opcode metric
    (found where :func:`_read_values` placed it in this launch's layout)."""
    prefix, layout = want.opcode_prefix, want.layout
    pos = layout.positions[-1] if prefix is not None and layout is not None else -1
    if pos < 0 or prefix is None:
        return {}
    counts = named_instances(elems[pos], len(prefix), _OPCODE_NAMES)
    if counts is None:
        return {}
    return dict(zip(_OPCODE_COLUMNS, map(counts.__getitem__, _OPCODE_NAMES), strict=True))


def _nvtx_path(data: bytes, thread_id: int) -> str | None:
    """NVTX state as the ``nvtx`` column spells it (see :func:`ncu_rep._nvtx_path`)."""
    state = schema().NvtxState.FromString(data)
    stacks: dict[int, list[str]] = {}
    for thread in state.Threads:
        if thread.TID == thread_id:
            for dom in thread.PushPopDomains:
                stacks.setdefault(dom.Id, []).extend(text(r.Name) for r in dom.Stack)
    start_end: dict[int, list[str]] = {}
    for sed in state.StartEndDomains:
        start_end.setdefault(sed.Id, []).extend(text(r.Name) for r in sed.Ranges)
    parts = []
    for dom in state.Domains:
        name = text(dom.Name)
        prefix = "" if not name or name == "<default domain>" else f"{name}@"
        stack = stacks.get(dom.Id)
        if stack:
            parts.append(prefix + "/".join(stack))
        parts.extend(prefix + r for r in start_end.get(dom.Id, ()))
    return " | ".join(parts) if parts else None


# ncu's message types as the file stores them (RuleSystem's enum, not ncu_report's MsgType)
_RULE_TYPES = {0: "0", 1: "INF", 2: "WRN", 3: "ERR", 4: "OPT"}


class RuleColumns:
    """A chunk's rule results as they are read, for :class:`~ncu_roof.read.ncu_rules.RuleResults`:
    the distinct records (each distinct encoding decoded once, :func:`_rule_records`) and per
    result its launch ID and record."""

    def __init__(self) -> None:
        self.distinct: list[dict[str, Any]] = []
        self.ids: list[int] = []
        self.which: list[int] = []
        self._at: dict[bytes, tuple[int, ...]] = {}  # an encoding -> its records in ``distinct``
        self._last: tuple[list[bytes], list[int]] = ([], [])  # the last launch's encodings and their records

    def add(self, launch_id: int, encoded: Iterable[bytes]) -> None:
        """The results of one launch, one encoded ``RuleResult`` each (launches of one kernel often
        repeat the last one's byte for byte: they are compared, not looked up one by one)."""
        rules = encoded if isinstance(encoded, list) else list(encoded)
        last, at = self._last
        if rules is not last and rules != last:
            at = []
            for rule in rules:
                records = self._at.get(rule)
                if records is None:
                    made = _rule_records(rule)
                    records = self._at[rule] = tuple(range(len(self.distinct), len(self.distinct) + len(made)))
                    self.distinct += made
                at += records
            self._last = (rules, at)
        self.which += at
        self.ids += [launch_id] * len(at)

    def results(self) -> RuleResults:
        return RuleResults.of_columns(self.distinct, self.ids, self.which)


_RULE_MEMO: dict[bytes, tuple[dict[str, Any], ...]] = {}  # shared by every chunk a process reads
_RULE_MEMO_MAX = 1 << 14


def _rule_records(encoded: bytes) -> tuple[dict[str, Any], ...]:
    """The records of one encoded rule result, without the launch ID. Launches of one kernel often
    repeat a rule's result byte for byte: each distinct encoding is decoded once per process."""
    held = _RULE_MEMO.get(encoded)
    if held is not None:
        return held
    rule = schema().RuleResult.FromString(encoded)
    section = text(rule.SectionIdentifier) or None
    records = []
    for item in rule.Body.Items:
        msg = item.Message
        speedup = item.Speedup if item.HasField("Speedup") else None
        pct = speedup.Value if speedup is not None and speedup.HasField("Value") else None
        record = rule_record(0, text(rule.Identifier), section, _RULE_TYPES.get(msg.Type, str(msg.Type)),
                             text(msg.Name) or None, text(msg.Message), pct,
                             speedup.SpeedupType if speedup is not None else None)
        if record is not None:
            del record["id"]
            records.append(record)
    if len(_RULE_MEMO) >= _RULE_MEMO_MAX:
        _RULE_MEMO.clear()
    _RULE_MEMO[encoded] = held = tuple(records)
    return held


def _dims(row: dict[str, Any], names: tuple[str, ...]) -> str | None:
    return dims_text(*(row.get(m) for m in names))


def dims_text(*dims: float | None) -> str | None:
    """A launch shape as the ``grid_dim`` and ``block_dim`` columns spell it: ``(x, y, z)``, None
    where a dimension is not measured."""
    return None if None in dims else "(" + ", ".join(str(int(x)) for x in dims) + ")"  # type: ignore[arg-type]


_WORKLOAD_MESSAGES = {"range": "RangeResult", "cmdlist": "CmdlistResult", "graph": "GraphResult"}


def _fill(row: dict[str, Any], elems: Sequence[bytes], want: Wanted, nvtx: str | None) -> str | None:
    """The wanted metrics and the identity every result kind has (device, CC, stream, NVTX)."""
    device = _read_values(elems, want, row)
    if want.opcode_prefix is not None:
        row.update(_opcode_counts(elems, want))
    return identify(row, device, nvtx)


def identify(row: dict[str, Any], device: str | None, nvtx: str | None) -> str | None:
    """The identity columns every result kind has (device, CC, stream, NVTX), after its metrics."""
    row.update(device=device, cc=cc_text(row.get(metrics.CC_MAJOR), row.get(metrics.CC_MINOR)),
               stream=row.get("launch__stream_id"), nvtx=nvtx)
    return device


def cc_text(major: float | None, minor: float | None) -> str | None:
    """The compute capability as the ``cc`` column spells it (``8.6``), None where half is not measured."""
    return f"{int(major)}.{int(minor)}" if major is not None and minor is not None else None


def nvtx_of(result: Any) -> str | None:
    """A result's NVTX state as the ``nvtx`` column spells it (None without one)."""
    return _nvtx_path(result.Nvtx, result.ThreadID) if result.HasField("Nvtx") else None


def name_kernel(row: dict[str, Any], result: Any, launch_id: int, report: str) -> dict[str, Any]:
    """A kernel launch's names, launch shape, report and ID, after its metrics and identity."""
    kernel, demangled = kernel_names(result.KernelFunctionName, result.KernelMangledName, result.KernelDemangledName)
    row.update(
        kernel=kernel,
        kernel_demangled=demangled,
        grid_dim=_dims(row, metrics.GRID_DIMS),
        block_dim=_dims(row, metrics.BLOCK_DIMS),
        report=report,
        id=launch_id,
    )
    return row


def kernel_names(function: str | bytes, mangled: str | bytes, demangled: str | bytes) -> tuple[str, str]:
    """A launch's ``kernel`` and ``kernel_demangled`` from its function, mangled and demangled names."""
    kernel = text(function or mangled)
    return kernel, text(demangled or mangled) or kernel


def decode_launch(data: bytes, want: Wanted, launch_id: int, report: str,
                  rules: RuleColumns | None = None, kind: str = "kernel",
                  modules: dict[int, list[str]] | None = None) -> dict[str, Any]:
    """One result's row of the raw launch frame (identity + catalogue metrics in base units).

    A ``range``, ``cmdlist`` or ``graph`` result is named as :func:`kernel_names.workload_name`
    says, without a launch shape; its row carries ``_kind`` and ``_kernels_in`` (the kernels of
    the modules it references, from ``modules``) for the report's notes."""
    if kind != "kernel":
        return _decode_workload(data, kind, want, launch_id, report, rules, modules or {})
    result = schema().ProfileResult.FromString(data)
    row: dict[str, Any] = {}
    _fill(row, result.MetricResults, want, nvtx_of(result))
    name_kernel(row, result, launch_id, report)
    if rules is not None and len(result.RuleResults):
        rules.add(launch_id, result.RuleResults)
    return row


def _decode_workload(data: bytes, kind: str, want: Wanted, launch_id: int, report: str,
                     rules: RuleColumns | None, modules: dict[int, list[str]]) -> dict[str, Any]:
    result = getattr(schema(), _WORKLOAD_MESSAGES[kind]).FromString(data)
    row: dict[str, Any] = {}
    _fill(row, result.MetricResults, want, nvtx_of(result))
    as_workload_row(row, (text(result.DisplayName) if kind == "cmdlist" else "") or kind, kind)
    row.update(report=report, id=launch_id,
               _kernels_in=tuple(dict.fromkeys(k for ref in result.References for k in modules.get(ref, ()))))
    if rules is not None and kind == "cmdlist" and len(result.RuleResults):
        rules.add(launch_id, result.RuleResults)
    return row
