"""A chunk's kernel launches read many at a time, from windows of the file (the hot path of a big report).

Enters: a chunk's launches in file order, the file's descriptor, the chunk's :class:`~.launch.Wanted`.
Leaves: each launch's row of the raw launch frame, as :func:`~.launch.decode_launch` gives it, and its
rule results, in launch order.

Launches of one kernel share a layout (:class:`~.launch._Layout`): the same metrics, in the same
order, each encoded alike. Where a launch's ``MetricResults`` are laid out byte for byte as its
layout's first launch's were (every element's tag and length where that launch had them: the
elements then lie at the same places), its wanted metrics are read from the file's bytes without
decoding the 600-odd elements: the heads (``NameId`` and encoding) of the wanted ones and their
values are gathered for many launches at once by numpy (one gather per window), and the rest of the
launch is decoded without the metrics: the few bytes before them (IDs, names) each time, the bytes
after them (NVTX, rule results: 31 KB of a full-set launch) once for launches that end alike byte for
byte, as launches of one kernel often do (compared in the window, not copied out). A launch laid
out otherwise, or whose wanted metrics are encoded otherwise, is decoded alone as before. The file is
read a window of launches at a time into one buffer (``os.preadv``), not a launch at a time.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from itertools import islice
from typing import Any

import numpy as np

from ncu_roof.read import metrics
from ncu_roof.read.native.launch import (
    RuleColumns,
    Wanted,
    _Layout,
    _nvtx_path,
    cc_text,
    decode_launch,
    dims_text,
    kernel_names,
)
from ncu_roof.read.native.wire import metric_value, named_instances, schema, skip_field, varint

WINDOW = 4 << 20  # bytes of the file read at once, into one buffer kept for the next window
BATCH = 64  # launches gathered at once
_HEAD = 12  # bytes of a multi-byte integer's encoding looked at: 12 LL 28 and a varint of up to 9 bytes
_METRIC_TAG = 0x6A  # ProfileResult field 13 (MetricResults), length-delimited


def region_start(data: Any, size: int) -> int:
    """Where a ``ProfileResult``'s first ``MetricResults`` element starts (-1: none, or damaged)."""
    pos = 0
    try:
        while pos < size:
            key, after = varint(data, pos)
            if key == _METRIC_TAG:
                return pos
            pos = skip_field(data, after, key & 7)
    except (IndexError, ValueError):
        return -1
    return -1


_OPCODE_NAMES = tuple(metrics.OPCODES.values())
_OPCODE_COLUMNS = tuple(f"{metrics.OPCODE_METRIC}[{op}]" for op in _OPCODE_NAMES)
_MEMO_MAX = 256
_IDENTITY_METRICS = (metrics.CC_MAJOR, metrics.CC_MINOR, "launch__stream_id", *metrics.GRID_DIMS, *metrics.BLOCK_DIMS)


@dataclass
class _Plan:
    """A layout's metrics as one launch laid them out, relative to its first element: where every
    element's tag and length are (``frame``), where the wanted metrics' heads and values are."""

    length: int  # bytes of all the elements
    start: int  # where they start in the launch the plan was made from (where the next are looked for first)
    frame_at: np.ndarray
    frame: np.ndarray
    head_at: np.ndarray  # every wanted metric's NameId (and, for doubles and small integers, encoding)
    heads: np.ndarray
    doubles_at: np.ndarray  # (doubles, 8)
    bytes_at: np.ndarray
    rest_at: np.ndarray  # (rest, _HEAD): the bytes after each other value's NameId
    rest_room: np.ndarray  # bytes each other value's element has after its NameId
    rest_k: list[int]
    rest_scale: np.ndarray
    strings: list[tuple[int, int, int]]  # (payload start, payload length, NameId length)
    opcodes: tuple[int, int, int] | None
    order: np.ndarray
    scale: np.ndarray
    present: list[str]
    hits: int = 0
    misses: int = 0
    opcode_memo: dict[bytes, dict[str, float] | None] = field(default_factory=dict)
    opcode_last: tuple[bytes | None, dict[str, float]] = (None, {})  # the last encoding read, and its counts
    shapes: dict[tuple[float, ...], tuple[Any, ...]] = field(default_factory=dict)  # identity values -> columns

    def __post_init__(self) -> None:
        where = {name: i for i, name in enumerate(self.present)}
        self.keys = (tuple(self.present), (*self.present, *_OPCODE_COLUMNS))  # a row's metrics: without, with counts
        # the values identity columns read (-1: absent): CC major, minor, stream, grid and block dims
        self.ident_at = [where.get(name, -1) for name in _IDENTITY_METRICS]
        # every byte a launch is read at, gathered at once: those checked (frame, heads), then the values
        self.gather_at = np.concatenate([self.frame_at, self.head_at, self.doubles_at.reshape(-1), self.bytes_at,
                                         self.rest_at.reshape(-1)])
        self.expected = np.concatenate([self.frame, self.heads])


def plan(layout: _Layout, want: Wanted, data: bytes, start: int) -> _Plan | None:
    """The plan of ``layout`` from a launch (``data``, its first element at ``start``) just decoded
    with it; None where the launch's elements are not one run or the layout lacks a wanted metric."""
    if layout.others is None:
        return None
    frame_at: list[int] = []
    frame: list[int] = []
    payloads: list[tuple[int, int]] = []
    pos = start
    for _ in range(layout.count):
        if pos >= len(data) or data[pos] != _METRIC_TAG:
            return None
        n, body = varint(data, pos + 1)
        frame_at += range(pos - start, body - start)
        frame += data[pos:body]
        payloads.append((body - start, n))
        pos = body + n
    if region_start(data[:start] + data[pos:], len(data) - (pos - start)) >= 0:
        return None  # another MetricResults element after the run
    return _make(layout, want, start, pos - start, frame_at, frame, payloads)


def _make(layout: _Layout, want: Wanted, start: int, length: int, frame_at: list[int], frame: list[int],
          payloads: list[tuple[int, int]]) -> _Plan:
    prefixes = want.prefixes + ([want.opcode_prefix] if want.opcode_prefix is not None else [])
    index = {prefix: i for i, prefix in enumerate(prefixes)}
    body = [payloads[pos] if pos >= 0 else (-1, 0) for pos in layout.positions]  # per prefix: (start, length)
    heads_at: list[int] = []
    heads = b""
    fixed: dict[int, int] = {}  # Wanted index -> where its value's bytes start
    for _, group_heads, group_at in (layout.doubles, layout.bytes1):
        for head, value_at in zip(group_heads, group_at, strict=True):
            i = index[head[:-3]]  # each head is the NameId's prefix and a 3-byte encoding
            heads_at += range(body[i][0], body[i][0] + len(head))
            heads += head
            fixed[i] = body[i][0] + value_at
    for i, prefix in enumerate(prefixes):  # the others: their NameId where the layout has them
        if body[i][0] >= 0 and i not in fixed:
            heads_at += range(body[i][0], body[i][0] + len(prefix))
            heads += prefix
    doubles = [fixed[index[head[:-3]]] for head in layout.doubles[1]]
    small = [fixed[index[head[:-3]]] for head in layout.bytes1[1]]
    rest = [(payloads[pos], k, scale) for pos, k, scale in layout.rest]
    total = len(doubles) + len(small) + len(rest)
    scale = np.ones(len(layout.present))
    where = {name: i for i, name in enumerate(layout.present)}
    for name, factor in layout.scaled:
        scale[where[name]] = factor
    n = len(want.names)
    strings = [(body[i][0], body[i][1], len(prefixes[i])) for i in range(n, len(want.prefixes)) if body[i][0] >= 0]
    opcodes = None
    if want.opcode_prefix is not None and body[-1][0] >= 0:
        opcodes = (body[-1][0], body[-1][1], len(want.opcode_prefix))
    return _Plan(
        length, start, np.asarray(frame_at, dtype=np.int64), np.asarray(frame, dtype=np.uint8),
        np.asarray(heads_at, dtype=np.int64), np.frombuffer(heads, dtype=np.uint8),
        (np.asarray(doubles, dtype=np.int64)[:, None] + np.arange(8)).reshape(-1, 8),
        np.asarray(small, dtype=np.int64),
        (np.asarray([b + k for (b, _), k, _ in rest], dtype=np.int64)[:, None] + np.arange(_HEAD)).reshape(-1, _HEAD),
        np.asarray([size - k for (_, size), k, _ in rest], dtype=np.int64), [k for _, k, _ in rest],
        np.asarray([s for _, _, s in rest]), strings, opcodes,
        np.asarray(layout.order(list(range(total))), dtype=np.int64).reshape(-1), scale, list(layout.present))




@dataclass(slots=True)
class _Pending:
    index: int  # its row
    launch_id: int
    at: int  # where it lies in the window
    size: int
    start: int  # its first metric, from its start
    want: Wanted
    plan: _Plan


class LaunchError(Exception):
    """A launch that could not be read: its ID, and the error decoding it raised."""

    def __init__(self, launch_id: int, cause: Exception) -> None:
        super().__init__(str(cause))
        self.launch_id, self.cause = launch_id, cause


@dataclass(slots=True)
class Gathered:
    """A launch read with others of its plan, in place of its row dict: its metrics are row ``j`` of
    ``values`` (named by ``keys``, the opcode counts ``counts`` after them), its identity columns are
    ``ident`` (in :data:`~ncu_roof.read.frame.IDENTITY_COLUMNS`' order). :func:`~ncu_roof.read.native.part_of`
    puts it in the columns as it would the row dict."""

    keys: tuple[str, ...]
    values: np.ndarray
    present: int  # how many of ``keys`` are ``values``' columns
    j: int
    counts: dict[str, float]
    ident: tuple[Any, ...]


class Reader:
    """A chunk's launches read in file order into ``rows`` (their rule results into ``rules``): a
    row dict per launch decoded alone, a :class:`Gathered` per launch read with others."""

    def __init__(self, fd: int, report: str, modules: dict[int, list[str]], rules: RuleColumns) -> None:
        self.fd, self.report, self.modules, self.rules = fd, report, modules, rules
        self.rows: list[Any] = []
        self.buffer = bytearray()  # the window's bytes, reused window after window
        self.view = memoryview(b"")
        self.bytes = np.empty(0, dtype=np.uint8)
        self.at = self.filled = 0
        self.pending: list[_Pending] = []
        self.parse = schema().ProfileResult.FromString
        self.memo: dict[Any, Any] = {}  # identity pieces already made (names, NVTX, device)
        self._tail: tuple[bytes | None, Any] = (None, None)  # the last launch's bytes after its metrics, decoded

    def read(self, launches: list[Any], i: int, want: Wanted, launch_id: int) -> None:
        """Launch ``i`` of ``launches`` (in order): gathered with the next ones where its layout has a
        plan, else decoded now; a launch that cannot be decoded raises :class:`LaunchError`."""
        launch = launches[i]
        offset, size = launch.offset, launch.size
        if not (self.at <= offset and offset + size <= self.at + self.filled):
            self.flush()
            self._map(launches, i)
        at = offset - self.at
        held = 0 <= at and at + size <= self.filled
        plan_ = want.plans.get(size) if held and launch.kind == "kernel" else None
        if plan_ is not None:
            start = plan_.start  # where the plan's launch had them: checked with the rest of the layout
            if not (start + plan_.length <= size and self.view[at + start] == _METRIC_TAG):
                start = region_start(self.view[at : at + size], size)
            if start >= 0 and start + plan_.length <= size:
                self.pending.append(_Pending(len(self.rows), launch_id, at, size, start, want, plan_))
                self.rows.append(None)
                if len(self.pending) >= BATCH:
                    self.flush()
                return
        self.flush()
        data = bytes(self.view[at : at + size]) if held else os.pread(self.fd, size, offset)
        self.rows.append(self._alone(data, want, launch_id, launch.kind, size))

    def _map(self, launches: list[Any], i: int) -> None:
        """Read the window from launch ``i``: as many of the next launches as fit whole, into the
        buffer (``os.preadv``: copying the bytes costs less than mapping and unmapping their pages)."""
        self.close()
        start = launches[i].offset
        end = start + launches[i].size
        size = os.fstat(self.fd).st_size
        if end - start > WINDOW or end > size:
            return
        for launch in islice(launches, i + 1, None):  # not a copy of the rest of the chunk's list
            if launch.offset + launch.size - start > WINDOW or launch.offset + launch.size > size:
                break
            end = max(end, launch.offset + launch.size)
        if len(self.buffer) < end - start:
            self.buffer = bytearray(WINDOW)
        window = memoryview(self.buffer)[: end - start]
        if os.preadv(self.fd, [window], start) != end - start:
            return  # the file shrank meanwhile: each launch is read (and refused) alone
        self.view, self.bytes = window, np.frombuffer(self.buffer, dtype=np.uint8, count=end - start)
        self.at, self.filled = start, end - start

    def close(self) -> None:
        """Let go of the window (after the launches gathered from it are read)."""
        self.view.release()
        self.view, self.bytes, self.at, self.filled = memoryview(b""), np.empty(0, dtype=np.uint8), 0, 0

    def _alone(self, data: bytes, want: Wanted, launch_id: int, kind: str, size: int) -> dict[str, Any]:
        """A launch decoded alone (as before). The second kernel launch of a size decoded alone gives
        its layout a plan for the launches of that size after it (one missing it often: anew)."""
        try:
            if len(data) != size:
                raise ValueError("the file ends inside the launch")
            row = decode_launch(data, want, launch_id, self.report, self.rules, kind, self.modules)
        except Exception as exc:  # noqa: BLE001 - said with the launch it came from
            raise LaunchError(launch_id, exc) from exc
        if kind == "kernel" and want.layout is not None:
            known = want.plans.get(size, False)
            if known is False:
                want.plans[size] = None  # seen once: a plan costs more than it saves a kernel launched once
            elif known is None or known.misses > known.hits + 8:
                start = region_start(data, len(data))
                want.plans[size] = plan(want.layout, want, data, start) if start >= 0 else None
        return row

    def flush(self) -> None:
        """Read the gathered launches into their rows, in order."""
        pending, self.pending = self.pending, []
        if not pending:
            return
        groups: dict[int, list[_Pending]] = {}
        for p in pending:
            groups.setdefault(id(p.plan), []).append(p)
        read: dict[int, tuple[bool, np.ndarray, int, list[float]]] = {}
        for group in groups.values():
            ok, values = self._gather(group)
            idents = values[:, group[0].plan.ident_at].tolist()
            if len(groups) == 1:  # one plan (the usual): each launch read now, in order
                for j, (p, fine, ident) in enumerate(zip(group, ok.tolist(), idents, strict=True)):
                    self._finish(p, fine, values, j, ident)
                return
            read.update((p.index, (fine, values, j, ident))
                        for j, (p, fine, ident) in enumerate(zip(group, ok.tolist(), idents, strict=True)))
        for p in pending:
            self._finish(p, *read[p.index])

    def _finish(self, p: _Pending, fine: bool, values: np.ndarray, j: int, ident: list[float]) -> None:
        """A gathered launch's row: read with its plan where it is laid out as the plan says, else alone."""
        row: Gathered | dict[str, Any] | None = self._row(p, values, j, ident) if fine else None
        p.plan.hits += row is not None
        if row is None:
            p.plan.misses += 1
            row = self._alone(bytes(self.view[p.at : p.at + p.size]), p.want, p.launch_id, "kernel", p.size)
        self.rows[p.index] = row

    def _gather(self, group: list[_Pending]) -> tuple[np.ndarray, np.ndarray]:
        """Whether each launch of one plan is laid out as the plan says, and its values in the order of
        :attr:`_Layout.present` (read for all the group's launches at once), a launch a row."""
        plan_ = group[0].plan
        base = np.asarray([p.at + p.start for p in group], dtype=np.int64)
        got = self.bytes[base[:, None] + plan_.gather_at]
        checked, doubles, small = len(plan_.expected), plan_.doubles_at.size, len(plan_.bytes_at)
        ok = (got[:, :checked] == plan_.expected).all(axis=1)
        values = np.ascontiguousarray(got[:, checked : checked + doubles]).view("<f8")
        got = got[:, checked + doubles :]
        ok &= (got[:, :small] < 0x80).all(axis=1)
        rest, rest_ok = _integers(got[:, small:].reshape(len(group), -1, _HEAD).astype(np.int64), plan_.rest_room)
        ok &= rest_ok
        values = np.concatenate([values, got[:, :small], rest * plan_.rest_scale], axis=1)
        return ok, values[:, plan_.order] * plan_.scale

    def _row(self, p: _Pending, values: np.ndarray, j: int, ident: list[float]) -> Gathered | None:
        """A gathered launch's row (None where the rest of it does not decode, or holds metrics too):
        its identity as :func:`~.launch.identify` and :func:`~.launch.name_kernel` make it."""
        v, plan_ = self.view, p.plan
        body = p.at + p.start
        tail = self._held(self._tail[0], body + plan_.length, p.at + p.size)  # the last tail's bytes, if alike
        rest = self._rest(bytes(v[p.at : body]), tail)
        if rest is None:
            return None
        thread, names, nvtx_data, rules = rest
        counts = self._opcodes(plan_, body) if p.want.opcode_prefix is not None else {}
        device = None
        for start, size, k in plan_.strings:
            value = self._memo(metric_value, bytes(v[body + start : body + start + size]), k)
            device = value if isinstance(value, str) else None
        nvtx = None if nvtx_data is None else self._memo(_nvtx_path, nvtx_data, thread)
        kernel, demangled = self._memo(kernel_names, *names)
        if rules:
            self.rules.add(p.launch_id, rules)
        key = tuple(ident)
        shape = plan_.shapes.get(key)
        if shape is None:
            if len(plan_.shapes) >= _MEMO_MAX:
                plan_.shapes.clear()
            shape = plan_.shapes[key] = _shape(ident, plan_.ident_at)
        cc, grid, block = shape
        stream = ident[2] if plan_.ident_at[2] >= 0 else None  # the value itself, as a row dict holds it
        return Gathered(plan_.keys[bool(counts)], values, len(plan_.present), j, counts,
                        (self.report, p.launch_id, kernel, demangled, device, cc, None, stream, grid, block, nvtx))

    def _rest(self, head: bytes, tail: bytes) -> tuple[int, tuple[Any, Any, Any], bytes | None, list[bytes]] | None:
        """What a gathered launch's bytes around its metrics say (its thread, names, NVTX state and rule
        results), as the ``ProfileResult`` of ``head + tail`` gives them; None where that does not decode
        or holds metrics. Launches of one kernel often end alike byte for byte (NVTX, rule results): the
        tail is decoded once for them, the few bytes before the metrics (IDs, names) each time."""
        held, said = self._tail
        if tail is not held:
            said = _tail_fields(self.parse, tail)
            self._tail = (tail, said)
        if said is not None:
            try:
                result = self.parse(head)
            except Exception:  # noqa: BLE001 - decoded alone, where its error is said
                return None
            if not (len(result.MetricResults) or len(result.RuleResults) or result.HasField("Nvtx")):
                return (result.ThreadID, (result.KernelFunctionName, result.KernelMangledName,
                                          result.KernelDemangledName), *said)
        try:  # a field on both sides: decoded together, as the launch is
            result = self.parse(head + tail)
        except Exception:  # noqa: BLE001 - decoded alone, where its error is said
            return None
        if len(result.MetricResults):
            return None
        return (result.ThreadID, (result.KernelFunctionName, result.KernelMangledName, result.KernelDemangledName),
                result.Nvtx if result.HasField("Nvtx") else None, list(result.RuleResults))

    def _memo(self, fn: Any, *args: Any) -> Any:
        """``fn(*args)``, made once per distinct arguments (launches of one kernel repeat them)."""
        key = (fn, *args)
        held = self.memo.get(key, self)
        if held is self:
            if len(self.memo) >= _MEMO_MAX:
                self.memo.clear()
            held = self.memo[key] = fn(*args)
        return held

    def _held(self, held: bytes | None, start: int, end: int) -> bytes:
        """The window's bytes from ``start`` to ``end``: ``held`` itself where they are its bytes (compared
        in place, not copied out), else a copy."""
        if held is not None and len(held) == end - start and self.buffer.startswith(held, start):
            return held
        return bytes(self.view[start:end])

    def _opcodes(self, plan_: _Plan, body: int) -> dict[str, float]:
        """The per-opcode counts (as ``launch._opcode_counts``), each distinct encoding read once."""
        if plan_.opcodes is None:
            return {}
        start, size, k = plan_.opcodes
        elem = self._held(plan_.opcode_last[0], body + start, body + start + size)
        if elem is plan_.opcode_last[0]:  # launches of one kernel often repeat their counts
            return plan_.opcode_last[1]
        counts = plan_.opcode_memo.get(elem)
        if counts is None and elem not in plan_.opcode_memo:
            if len(plan_.opcode_memo) >= _MEMO_MAX:
                plan_.opcode_memo.clear()
            named = named_instances(elem, k, _OPCODE_NAMES)
            counts = plan_.opcode_memo[elem] = None if named is None else dict(
                zip(_OPCODE_COLUMNS, map(named.__getitem__, _OPCODE_NAMES), strict=True))
        plan_.opcode_last = (elem, counts or {})
        return counts or {}


def _tail_fields(parse: Callable[[bytes], Any], tail: bytes) -> tuple[bytes | None, list[bytes]] | None:
    """The NVTX state and rule results of the bytes after a launch's metrics, where they hold neither
    metrics nor a field the bytes before them are read for (thread, names); else None."""
    try:
        result = parse(tail)
    except Exception:  # noqa: BLE001 - decoded with the bytes before it, where the error shows
        return None
    if len(result.MetricResults) or any(map(result.HasField, _HEAD_FIELDS)):
        return None
    return result.Nvtx if result.HasField("Nvtx") else None, list(result.RuleResults)


_HEAD_FIELDS = ("ThreadID", "KernelMangledName", "KernelFunctionName", "KernelDemangledName")


def _shape(ident: list[float], ident_at: list[int]) -> tuple[Any, ...]:
    """The ``cc``, ``grid_dim`` and ``block_dim`` columns of a launch's identity values."""
    major, minor, _, *dims = (x if at >= 0 else None for x, at in zip(ident, ident_at, strict=True))
    return cc_text(major, minor), dims_text(*dims[:3]), dims_text(*dims[3:])


def _integers(heads: np.ndarray, room: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per launch and value, the integer a ``MetricValue`` of its own holds (``12 LL 28|20`` and a
    varint of LL - 1 bytes, up to 9, inside its element: what ``launch._value`` reads without
    decoding), and whether every value of the launch was one."""
    size = heads[:, :, 1]
    last = heads[:, :, 3:] < 0x80
    stop = np.argmax(last, axis=2) + 1  # the varint's length
    places = np.arange(_HEAD - 3)
    fine = (heads[:, :, 0] == 0x12) & ((heads[:, :, 2] == 0x28) | (heads[:, :, 2] == 0x20)) & last.any(axis=2) & \
        (stop == size - 1) & (room >= 2 + size)
    number = np.where(places < stop[:, :, None], (heads[:, :, 3:] & 0x7F) << (7 * places), 0).sum(axis=2)
    return number.astype(np.float64), fine.all(axis=1)
