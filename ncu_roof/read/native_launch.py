"""One launch of a ``.ncu-rep``: its encoded ``ProfileResult`` and the metrics wanted from its string
table in; out, its row of the raw launch frame (identity columns and the catalogue's metrics in
base units) and its rule results.

A launch's metrics are taken as undecoded byte strings and only those the catalogue wants
(``metrics.is_needed``) are looked at, by the encoded ``NameId`` that starts each of them. On a
210 KB full-set launch (676 metrics) that takes 0.3 ms, against 0.8 ms looping over decoded
metric messages and 2-3 ms decoding the launch with NVIDIA's full schema (upb in all three; a
pure-Python walk of the launch is slower still).

Values are what NVIDIA's ``ncu_report`` gives: ``as_double()`` of the stored value (double,
float, uint32 or uint64; a string or an absent value reads 0.0, an instanced metric its
aggregate value), scaled to base units; the display name of the device with ``as_string()``.
"""

from __future__ import annotations

from dataclasses import dataclass
from operator import itemgetter
from typing import Any

from ncu_roof.read import metrics
from ncu_roof.read.frame import as_workload_row
from ncu_roof.read.native_wire import F64, encode_varint, instances, metric_value, schema, varint
from ncu_roof.read.ncu_rules import rule_record
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


def _read_values(elems: list[bytes], want: Wanted, row: dict[str, Any]) -> str | None:
    """Put ``as_double()`` x scale of each wanted metric the launch has into ``row``; return the
    device's display name (``as_string()``). Launches of one kernel share a layout (the same
    metrics in the same order), so positions are computed once per layout."""
    keys = list(map(_KEY3, elems))
    layout = want.layout
    if layout is None or layout[0] != keys or len(keys[0] if keys else b"") > 3:
        layout = want.layout = (keys, _positions(keys, elems, want.prefixes))
    f64 = F64.unpack_from
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
            value = metric_value(elem, k)
            row[name] = (value if isinstance(value, float) else 0.0) * scale
    device = None
    for prefix, pos in zip(want.prefixes[len(want.names) :], positions[len(want.names) :], strict=True):
        if pos >= 0:
            value = metric_value(elems[pos], len(prefix))
            device = value if isinstance(value, str) else None
    return device


def _opcode_counts(elems: list[bytes], prefix: bytes) -> dict[str, float]:
    """The per-opcode counts the catalogue names, as :func:`ncu_rep._opcode_counts` reads them:
    0 for an opcode the kernel never ran, nothing when the launch has no per-opcode metric."""
    elem = next((e for e in elems if e.startswith(prefix)), None)  # varints are prefix-free
    counts = instances(elem, len(prefix)) if elem is not None else None
    if counts is None:
        return {}
    return {f"{metrics.OPCODE_METRIC}[{op}]": float(counts.get(op, 0.0)) for op in metrics.OPCODES.values()}


def _nvtx_path(data: bytes, thread_id: int) -> str | None:
    """NVTX state as the ``nvtx`` column spells it (see :func:`ncu_rep._nvtx_path`)."""
    state = schema().NvtxState.FromString(data)
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


_WORKLOAD_MESSAGES = {"range": "RangeResult", "cmdlist": "CmdlistResult", "graph": "GraphResult"}


def _fill(row: dict[str, Any], elems: list[bytes], want: Wanted, nvtx: str | None) -> str | None:
    """The wanted metrics and the identity every result kind has (device, CC, stream, NVTX)."""
    device = _read_values(elems, want, row)
    if want.opcode_prefix is not None:
        row.update(_opcode_counts(elems, want.opcode_prefix))
    major: float | None = row.get(metrics.CC_MAJOR)
    minor: float | None = row.get(metrics.CC_MINOR)
    row.update(device=device, cc=f"{int(major)}.{int(minor)}" if major is not None and minor is not None else None,
               stream=row.get("launch__stream_id"), nvtx=nvtx)
    return device


def decode_launch(data: bytes, want: Wanted, launch_id: int, report: str,
                  rules: list[dict[str, Any]] | None = None, kind: str = "kernel",
                  modules: dict[int, list[str]] | None = None) -> dict[str, Any]:
    """One result's row of the raw launch frame (identity + catalogue metrics in base units).

    A ``range``, ``cmdlist`` or ``graph`` result is named as :func:`kernel_names.workload_name`
    says, without a launch shape; its row carries ``_kind`` and ``_kernels_in`` (the kernels of
    the modules it references, from ``modules``) for the report's notes."""
    if kind != "kernel":
        return _decode_workload(data, kind, want, launch_id, report, rules, modules or {})
    result = schema().ProfileResult.FromString(data)
    row: dict[str, Any] = {}
    _fill(row, list(result.MetricResults), want,
          _nvtx_path(result.Nvtx, result.ThreadID) if result.HasField("Nvtx") else None)
    kernel = result.KernelFunctionName or result.KernelMangledName
    row.update(
        kernel=kernel,
        kernel_demangled=result.KernelDemangledName or result.KernelMangledName or kernel,
        grid_dim=_dims(row, metrics.GRID_DIMS),
        block_dim=_dims(row, metrics.BLOCK_DIMS),
        report=report,
        id=launch_id,
    )
    if rules is not None and len(result.RuleResults):
        rules.extend(_rule_results(result.RuleResults, launch_id))
    return row


def _decode_workload(data: bytes, kind: str, want: Wanted, launch_id: int, report: str,
                     rules: list[dict[str, Any]] | None, modules: dict[int, list[str]]) -> dict[str, Any]:
    result = getattr(schema(), _WORKLOAD_MESSAGES[kind]).FromString(data)
    row: dict[str, Any] = {}
    nvtx = _nvtx_path(result.Nvtx, result.ThreadID) if result.HasField("Nvtx") else None
    _fill(row, list(result.MetricResults), want, nvtx)
    as_workload_row(row, (result.DisplayName if kind == "cmdlist" else "") or kind, kind)
    row.update(report=report, id=launch_id,
               _kernels_in=tuple(dict.fromkeys(k for ref in result.References for k in modules.get(ref, ()))))
    if rules is not None and kind == "cmdlist" and len(result.RuleResults):
        rules.extend(_rule_results(result.RuleResults, launch_id))
    return row
